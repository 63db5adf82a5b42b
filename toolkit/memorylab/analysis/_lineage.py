"""Lineage: an agent's compactions in order, and which facts survive the 2nd, 3rd, 5th summary.

Every compaction of an agent archives the file it replaces and opens the next file with its
summary; the next compaction reads that summary with the new messages and writes the next one.
Summaries of summaries lose what no summary re-states. This module follows that chain:

* :func:`lineage_df`: one row per compaction, in order: its generation (1 … n per agent), the
  summary it wrote (the summary entry that opens the next file, marked or the reference's plain
  one: the loaders' ``is_summary`` decides) and its length, the messages it archived, its
  strategy. Summary length by generation is ``lineage_df(source)[["generation", "chars"]]``.
* :func:`fact_survival_df`: each fact followed through every later summary, from the
  generation it *entered* (the first compaction whose archived messages hold it);
  :func:`survival_by_generation` the survival rate by summaries since entry and by category.
* :func:`summary_provenance`: each sentence of one summary linked to the input it most likely
  came from (an archived message, or the previous summary: *carried*), with the alignment score;
  :func:`dropped_by`: the facts of a compaction's inputs its summary no longer holds.

Facts are matched by the rules the evaluation matches them by (``memorylab._facts``, below both
packages): a :class:`~memorylab.transcripts.Fact` of one of the five categories by
:func:`~memorylab.evaluate.fact_kept`'s rules (normalized text, whole tokens, numbers by value); a
plain string or a benchmark's answer by ``contains_answer`` (normalized as
:func:`~memorylab.evaluate.normalize_answer` writes it, a word-bounded substring), as
``fact_recall`` grades answers. Each summary and each fact is prepared for matching once. Without
facts, they are extracted from the archived messages by :func:`~memorylab.evaluate.extract_facts`
(``source`` ``"extracted"``); extracted facts follow rules like the extractive summarizer's, so a
generation that summarizer wrote is flagged ``biased``, as the evaluation flags it.

Every function takes a source as :func:`~memorylab.analysis.memory_df` does (a workspace, an
agent folder, a file, a list), or :func:`~memorylab.analysis.memory_df`'s frame already read (an
agent's rows, as the MemoryExplorer holds them; the compaction records are then read from the
agent's folder when it exists, else inferred from the rows). Nothing is written.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memorylab._facts import (
    SHARES_EXTRACTION_RULES,
    FactMatch,
    PreparedFact,
    PreparedText,
    contains_answer,
    extract_facts,
    normalize,
    sentences,
)
from memorylab._validation import check_columns, check_int
from memorylab.analysis._frames import build_frame, columns, compactions_df, memory_df
from memorylab.analysis._loaders import load_records, record_of_frame
from memorylab.analysis._record import Records
from memorylab.analysis._sources import source_paths
from memorylab.errors import InvalidSetting
from memorylab.memory._records import SUMMARY_PREFIX
from memorylab.transcripts import FACT_CATEGORIES, Fact, Probe

if TYPE_CHECKING:
    import pandas as pd

    from memorylab.analysis._sources import Source

_NEW_DTYPES: Mapping[str, str] = {
    "generation": "Int64",
    "summary_file": "str",
    "summary": "str",
    "fact_id": "str",
    "fact": "str",
    "category": "category",
    "entered": "Int64",
    "since": "Int64",
    "kept": "bool",
    "survived": "bool",
    "score": "float64",
    "evidence": "str",
    "biased": "bool",
    "sentence_index": "Int64",
    "sentence": "str",
    "rank": "Int64",
    "ties": "Int64",
    "carried": "bool",
    "snippet": "str",
    "in_previous": "bool",
    "in_messages": "bool",
}
"""The dtypes of this module's own column names; a name :data:`~memorylab.analysis._frames.DTYPES`
declares keeps its dtype there (:func:`~memorylab.analysis._frames.columns`)."""


def _columns(*names: str) -> tuple[tuple[str, str], ...]:
    return columns(*names, own=_NEW_DTYPES)


LINEAGE_COLUMNS = _columns(
    "workspace",
    "agent",
    "generation",
    "time",
    "archive",
    "messages_archived",
    "strategy",
    "summarizer_model",
    "summary_file",
    "summary",
    "chars",
    "summary_tokens",
    "source",
)
"""The columns of :func:`lineage_df`, in order (``tokens`` is added when a model is given)."""

FACT_SURVIVAL_COLUMNS = _columns(
    "workspace",
    "agent",
    "fact_id",
    "fact",
    "category",
    "source",
    "entered",
    "generation",
    "since",
    "kept",
    "survived",
    "score",
    "evidence",
    "biased",
)
"""The columns of :func:`fact_survival_df`, in order."""

SURVIVAL_COLUMNS = ("since", "summaries", "facts", "kept", "kept_rate", "survived", "survival")
"""The columns of :func:`survival_by_generation` after its ``by`` column(s)."""

PROVENANCE_COLUMNS = _columns(
    "workspace",
    "agent",
    "generation",
    "sentence_index",
    "sentence",
    "rank",
    "score",
    "ties",
    "carried",
    "file",
    "position",
    "role",
    "timestamp",
    "snippet",
)
"""The columns of :func:`summary_provenance`, in order."""

DROPPED_COLUMNS = _columns(
    "workspace",
    "agent",
    "generation",
    "fact_id",
    "fact",
    "category",
    "source",
    "in_previous",
    "in_messages",
    "file",
    "position",
    "role",
    "timestamp",
)
"""The columns of :func:`dropped_by`, in order."""

OTHER = "other"
"""The category of a fact given as a plain string."""
_SNIPPET = 60  # characters of context each side of an aligned span
_BULLET = re.compile(r"^(?:[-*+\u2022]|\d{1,3}[.)])\s+")  # a list item's marker


# --------------------------------------------------------------------------- the lineage


@dataclass(frozen=True, slots=True)
class _Generation:
    """One compaction of an agent: its record and where its inputs and summary are in the
    agent's rows (positions in :attr:`_Lineage.frame`)."""

    generation: int
    record: Mapping[str, Any]
    archived: tuple[int, ...]  # the archived messages, summaries left out
    previous: int | None  # the summary it read (the previous generation's)
    summary: int | None  # the summary it wrote


@dataclass(frozen=True, slots=True)
class _Lineage:
    workspace: str
    agent: str
    frame: pd.DataFrame  # the agent's memory_df rows, index 0 … n-1
    generations: tuple[_Generation, ...] = field(default=())

    def text(self, row: int | None) -> str:
        return "" if row is None else str(self.frame["content"].iat[row])

    def generation(self, number: int) -> _Generation:
        for gen in self.generations:
            if gen.generation == number:
                return gen
        known = f"1 … {len(self.generations)}" if self.generations else "none"
        raise InvalidSetting(
            f"agent {self.agent!r} has no generation {number!r} (its compactions: {known})"
        )


_FRAME_COLUMNS = (
    "workspace", "agent", "file", "kind", "segment", "position", "role", "timestamp", "content",
    "is_summary",
)  # fmt: skip
"""The columns of :func:`~memorylab.analysis.memory_df` a frame given as the source must hold."""


def _read(source: Source | Records | pd.DataFrame) -> list[_Lineage]:
    """Each agent's rows and compactions, in order."""
    import pandas as pd

    if isinstance(source, pd.DataFrame):  # memory_df's rows, read already
        messages = check_columns("source", source, _FRAME_COLUMNS, made_by="memory_df")
        groups = messages.groupby(["workspace", "agent"], sort=False, observed=True)
        found = [record_of_frame(part) for _, part in groups]  # by the files the rows came from
        agents = [record for record in found if record is not None]
        compactions = compactions_df(agents) if agents else None
    else:
        try:
            agents = load_records(source)
        except InvalidSetting:
            source_paths(source, also="memory_df's frame")  # what to pass, in this caller's words
            raise
        messages = memory_df(agents)
        compactions = compactions_df(agents)
    lineages = []
    for (workspace, agent), part in messages.groupby(
        ["workspace", "agent"], sort=False, observed=True
    ):
        records: list[dict[str, Any]] = []
        if compactions is not None and len(compactions):
            mine = compactions[
                (compactions["workspace"].astype(str) == str(workspace))
                & (compactions["agent"].astype(str) == str(agent))
            ]
            records = mine.to_dict("records")
        lineages.append(_lineage(str(workspace), str(agent), part.reset_index(drop=True), records))
    return lineages


def _lineage(
    workspace: str, agent: str, frame: pd.DataFrame, records: list[dict[str, Any]]
) -> _Lineage:
    """The agent's compactions matched to its files: compaction ``g`` archived the file its
    record names; its summary opens the file compaction ``g + 1`` archived (the live MEMORY.md
    after the last one)."""
    summary_flags = frame["is_summary"].to_numpy(dtype=bool)
    files: dict[str, tuple[str, list[int]]] = {}  # name -> (kind, rows), in timeline order
    live: list[int] | None = None
    segments = frame["segment"].to_numpy()
    for segment in dict.fromkeys(segments.tolist()):  # in timeline order
        rows = [int(r) for r in (segments == segment).nonzero()[0]]
        kind = str(frame["kind"].iat[rows[0]])
        if kind == "memory":
            live = rows
        else:
            files.setdefault(Path(str(frame["file"].iat[rows[0]])).name, (kind, rows))
    if not records:  # rows without records (an export read back): each archive is a compaction
        records = [
            {"archive": name, "messages_archived": len(rows), "source": "inferred"}
            for name, (kind, rows) in files.items()
            if kind == "archive"
        ]

    def first_summary(rows: Sequence[int] | None) -> int | None:
        return next((int(r) for r in rows or () if summary_flags[r]), None)

    generations: list[_Generation] = []
    for index, record in enumerate(records):
        archive = files.get(str(record.get("archive")), ("", []))[1]
        following = (
            files.get(str(records[index + 1].get("archive")), ("", []))[1]
            if index + 1 < len(records)
            else live
        )
        previous = first_summary(archive)
        if previous is None and generations:
            previous = generations[-1].summary
        generations.append(
            _Generation(
                generation=index + 1,
                record=record,
                archived=tuple(int(r) for r in archive if not summary_flags[r]),
                previous=previous,
                summary=first_summary(following),
            )
        )
    return _Lineage(workspace, agent, frame, tuple(generations))


def _one(source: Source | pd.DataFrame, agent: str | None) -> _Lineage:
    lineages = _read(source)
    names = [lineage.agent for lineage in lineages]
    if agent is None:
        if len(lineages) == 1:
            return lineages[0]
        raise InvalidSetting(
            f"the source holds {len(names)} agents ({', '.join(names) or 'none'}): name one"
        )
    for lineage in lineages:
        if lineage.agent == agent:
            return lineage
    raise InvalidSetting(f"no agent {agent!r} in the source (its agents: {', '.join(names)})")


def _na(value: Any) -> Any:
    """A record's value, None where pandas wrote a missing one."""
    if value is None:
        return None
    try:
        import pandas as pd

        return None if pd.isna(value) else value
    except (TypeError, ValueError):  # a list or another non-scalar
        return value


def lineage_df(source: Source | pd.DataFrame, *, model: str | None = None) -> pd.DataFrame:
    """One row per compaction of each agent in ``source``, in order (see docs/analysis.md).

    Columns (:data:`LINEAGE_COLUMNS`): ``workspace``, ``agent``, ``generation`` (1 … n per
    agent), ``time``, ``archive`` (the archive's name), ``messages_archived`` (the previous
    summary included), ``strategy``, ``summarizer_model``, ``source`` (``"jsonl"`` or
    ``"inferred"``) as :func:`~memorylab.analysis.compactions_df` gives them;
    ``summary_file`` (the file the summary opens), ``summary`` (its entry's content, with the
    ``[Compressed Memory Summary]`` marker a marked one has) and ``chars`` (its length); missing
    (``<NA>``) where the compaction wrote no summary (a ``keep_recent`` or ``trim`` strategy) or
    the file that held it is gone; ``summary_tokens`` the record's count, and ``tokens`` (the
    summary counted with ``model``'s tokenizer) when ``model`` names one.
    """
    rows: list[dict[str, Any]] = []
    for lineage in _read(source):
        for gen in lineage.generations:
            record = gen.record
            summary = None if gen.summary is None else lineage.text(gen.summary)
            rows.append(
                {
                    "workspace": lineage.workspace,
                    "agent": lineage.agent,
                    "generation": gen.generation,
                    "time": _na(record.get("time")),
                    "archive": _na(record.get("archive")),
                    "messages_archived": _na(record.get("messages_archived")),
                    "strategy": _na(record.get("strategy")),
                    "summarizer_model": _na(record.get("summarizer_model")),
                    "summary_file": None
                    if gen.summary is None
                    else str(lineage.frame["file"].iat[gen.summary]),
                    "summary": summary,
                    "chars": None if summary is None else len(summary),
                    "summary_tokens": _na(record.get("summary_tokens")),
                    "source": _na(record.get("source")) or "inferred",
                }
            )
    declared = LINEAGE_COLUMNS
    data: dict[str, Any] = {name: [row[name] for row in rows] for name, _ in declared}
    if model is not None:
        from memorylab.compress._tokens import get_token_counter

        texts = [row["summary"] for row in rows]
        counted = iter(get_token_counter(model).count_batch([t for t in texts if t is not None]))
        data["tokens"] = [None if t is None else next(counted) for t in texts]
        declared += _columns("tokens")
    return build_frame(declared, data)


# --------------------------------------------------------------------------- facts


@dataclass(frozen=True, slots=True)
class _Tracked:
    """A fact followed through summaries, and the rule that finds it."""

    id: str
    text: str
    category: str
    source: str  # planted, given, answers, extracted
    fact: PreparedFact | None = None  # matched by fact_kept's rules; None: by contains_answer
    message: int | None = None  # extracted: the row it was extracted from

    def match(self, text: PreparedText) -> FactMatch:
        if self.fact is not None:
            return self.fact.match(text)
        found = contains_answer(text.answers, self.text, normalized=True)
        return FactMatch(found, 100.0 if found else 0.0)


_FactSpec = Any
"""What ``facts=`` takes: see :func:`fact_survival_df`."""


def _given(facts: _FactSpec) -> list[_Tracked] | None:
    """The facts to follow (None: extract them), each with its id, category and source."""
    if facts is None:
        return None
    if hasattr(facts, "facts") and hasattr(facts, "probes"):  # a Transcript or a Case
        if facts.facts:
            return [_of_fact(fact, "planted") for fact in facts.facts]
        answered = [probe for probe in facts.probes if str(probe.answer).strip()]
        return [_of_probe(probe) for probe in answered] or None
    if isinstance(facts, str | Fact | Probe):
        facts = [facts]
    if not isinstance(facts, Iterable) or isinstance(facts, bytes | Mapping):
        raise InvalidSetting(
            "facts= takes strings, (fact, category) pairs, Fact or Probe records (one or a list), "
            f"a Transcript or a Case, or None to extract them; got {type(facts).__name__}"
        )
    tracked: list[_Tracked] = []
    for number, item in enumerate(facts, 1):
        if isinstance(item, Fact):
            tracked.append(_of_fact(item, "given"))
        elif isinstance(item, Probe):
            tracked.append(_of_probe(item))
        elif isinstance(item, str):
            tracked.append(_Tracked(f"f{number}", _text(item), OTHER, "given"))
        elif isinstance(item, tuple) and len(item) == 2 and all(isinstance(x, str) for x in item):
            text, category = _text(item[0]), item[1]
            if category in FACT_CATEGORIES:
                tracked.append(_of_fact(Fact(f"f{number}", category, text), "given"))
            else:
                tracked.append(_Tracked(f"f{number}", text, category, "given"))
        else:
            raise InvalidSetting(
                "facts= takes strings, (fact, category) pairs, Fact or Probe records, a "
                f"Transcript or a Case; got {item!r}"
            )
    return tracked


def _text(value: str) -> str:
    if not value.strip():
        raise InvalidSetting("a fact to follow must not be empty")
    return value


def _of_fact(fact: Fact, source: str) -> _Tracked:
    return _Tracked(fact.id, fact.text, fact.category, source, PreparedFact(fact))


def _of_probe(probe: Probe) -> _Tracked:
    return _Tracked(probe.id, probe.answer, probe.category or "answer", "answers")


def _extracted(lineage: _Lineage, rows: Sequence[int]) -> list[_Tracked]:
    """The facts :func:`extract_facts` finds in ``rows`` (in order), each with its row."""
    roles, contents = lineage.frame["role"].tolist(), lineage.frame["content"].tolist()
    messages = [{"role": str(roles[r]), "content": _body(str(contents[r]))} for r in rows]
    return [
        _Tracked(f.id, f.text, f.category, "extracted", PreparedFact(f), rows[f.message_index or 0])
        for f in extract_facts(messages)
    ]


def _body(text: str) -> str:
    """A summary's text without its marker (another entry's as it is)."""
    return text.removeprefix(SUMMARY_PREFIX).lstrip() if text.startswith(SUMMARY_PREFIX) else text


def _joined(lineage: _Lineage, rows: Iterable[int]) -> PreparedText:
    return PreparedText("\n\n".join(lineage.text(r) for r in rows))


def fact_survival_df(
    source: Source | pd.DataFrame, facts: _FactSpec = None, *, max_summaries: int | None = None
) -> pd.DataFrame:
    """Each fact followed through every summary after it entered (see docs/analysis.md).

    ``max_summaries``: follow each fact through at most this many summaries (``None``: to the
    agent's last). Every fact is matched against every later summary, so the work grows with
    facts times compactions; a bound makes it grow with the facts only (the report follows 10).

    ``facts``: strings (category ``"other"``), ``(text, category)`` pairs, :class:`Fact` or
    :class:`Probe` records (a probe's ``answer`` is followed), a
    :class:`~memorylab.transcripts.Transcript` or an evaluation ``Case`` (its planted facts,
    else its probes' answers: a benchmark's); ``None``: the facts
    :func:`~memorylab.evaluate.extract_facts` finds in each agent's archived messages.
    A fact of the five categories is matched by the rules of
    :func:`~memorylab.evaluate.fact_kept`, any other by ``contains_answer`` (the module
    docstring).

    One row per agent, fact and generation from the one it ``entered`` (the first compaction
    whose archived messages hold it) to the agent's last; a fact no compaction archived has one
    row, with ``entered``, ``generation`` and ``since`` missing. Columns
    (:data:`FACT_SURVIVAL_COLUMNS`): ``workspace``, ``agent``, ``fact_id``, ``fact``,
    ``category``, ``source`` (``planted``, ``given``, ``answers``, ``extracted``), ``entered``,
    ``generation``, ``since`` (``generation - entered``: 0 is the first summary written after it
    entered), ``kept`` (that generation's summary holds it), ``survived`` (every summary from
    ``entered`` to this one holds it), ``score`` (the match's, 0-100), ``evidence`` (where the
    summary holds it), ``biased`` (an extracted fact in a summary written by a summarizer with
    the extraction's rules). A compaction that wrote no summary holds no fact.
    """
    if max_summaries is not None:
        check_int("max_summaries", max_summaries, 1)
    given = _given(facts)
    rows: list[dict[str, Any]] = []
    for lineage in _read(source):
        rows += _followed(lineage, given, max_summaries)
    data = {name: [row[name] for row in rows] for name, _ in FACT_SURVIVAL_COLUMNS}
    return build_frame(FACT_SURVIVAL_COLUMNS, data)


def _followed(
    lineage: _Lineage, given: list[_Tracked] | None, max_summaries: int | None = None
) -> list[dict[str, Any]]:
    gens = lineage.generations
    generation_of = {row: gen.generation for gen in gens for row in gen.archived}
    if given is None:
        tracked = _extracted(lineage, [row for gen in gens for row in gen.archived])
        entered: list[int | None] = [generation_of[t.message or 0] for t in tracked]
    else:
        tracked = given
        archives = [_joined(lineage, gen.archived) for gen in gens]
        entered = [
            next((g.generation for g, text in zip(gens, archives, strict=True)
                  if text.text and fact.match(text).kept), None)
            for fact in tracked
        ]  # fmt: skip
    summaries = [PreparedText(_body(lineage.text(gen.summary))) for gen in gens]
    rows: list[dict[str, Any]] = []
    for fact, first in zip(tracked, entered, strict=True):
        base = {
            "workspace": lineage.workspace,
            "agent": lineage.agent,
            "fact_id": fact.id,
            "fact": fact.text,
            "category": fact.category,
            "source": fact.source,
            "entered": first,
        }
        if first is None:
            rows.append(
                base
                | {"generation": None, "since": None, "kept": False, "survived": False}
                | {"score": math.nan, "evidence": None, "biased": False}
            )
            continue
        survived = True
        end = None if max_summaries is None else first - 1 + max_summaries
        for gen, summary in zip(gens[first - 1 : end], summaries[first - 1 : end], strict=True):
            found = fact.match(summary) if summary.text else None
            kept = found is not None and found.kept
            survived = survived and kept
            model = _na(gen.record.get("summarizer_model"))
            rows.append(
                base
                | {"generation": gen.generation, "since": gen.generation - first}
                | {"kept": kept, "survived": survived}
                | {"score": found.score if found is not None else 0.0}
                | {"evidence": (found.evidence or None) if found is not None and kept else None}
                | {"biased": fact.source == "extracted" and model in SHARES_EXTRACTION_RULES}
            )
    return rows


def survival_by_generation(
    frame: pd.DataFrame, *, by: str | Sequence[str] = "category"
) -> pd.DataFrame:
    """The survival rate by summaries since a fact entered, per ``by`` (default: the category),
    from :func:`fact_survival_df`'s frame, with an ``"all"`` row for each step.

    Columns: the ``by`` column(s), then :data:`SURVIVAL_COLUMNS`: ``since`` (0 = the first
    summary written after the fact entered), ``summaries`` (``since + 1``: "survives 3
    summaries" is the row ``summaries == 3``), ``facts`` (facts followed that far: a fact that
    entered late is not followed past the last generation), ``kept`` and ``kept_rate`` (that
    summary holds it), ``survived`` and ``survival`` (every summary since it entered holds it).
    A fact of several agents counts once per agent.
    """
    import pandas as pd

    if isinstance(by, str):
        keys = [by]
    elif isinstance(by, Sequence) and by and all(isinstance(key, str) for key in by):
        keys = list(by)
    else:
        raise InvalidSetting(f"by must be a column name or a list of them, not {by!r}")
    needed = [*keys, "since", "kept", "survived"]
    check_columns("frame", frame, needed, made_by="fact_survival_df")
    followed = frame[frame["since"].notna()].copy()
    for key in keys:
        followed[key] = followed[key].astype(str)
    everything = followed.assign(**dict.fromkeys(keys, "all"))
    parts = []
    for part in (followed, everything):
        if not len(part):
            continue
        grouped = part.groupby([*keys, "since"], sort=False, observed=True)
        parts.append(
            grouped.agg(
                facts=("kept", "size"), kept=("kept", "sum"), survived=("survived", "sum")
            ).reset_index()
        )
    table = (
        pd.concat(parts, ignore_index=True)
        if parts
        else pd.DataFrame(columns=[*keys, "since", "facts", "kept", "survived"])
    )
    order = {name: i for i, name in enumerate((*FACT_CATEGORIES, OTHER))}

    def rank(row: int) -> tuple[Any, ...]:  # the categories' order, others, then "all"
        values = [str(table[key].iat[row]) for key in keys]
        return (
            *((v == "all", order.get(v, len(order)), v) for v in values),
            table["since"].iat[row],
        )

    table = table.iloc[sorted(range(len(table)), key=rank)]
    for name in ("since", "facts", "kept", "survived"):
        table[name] = table[name].astype("Int64")
    table["summaries"] = table["since"] + 1
    table["kept_rate"] = (table["kept"] / table["facts"]).astype("float64")
    table["survival"] = (table["survived"] / table["facts"]).astype("float64")
    return table[[*keys, *SURVIVAL_COLUMNS]].reset_index(drop=True)


# --------------------------------------------------------------------------- provenance


@dataclass(frozen=True, slots=True)
class _Candidate:
    """An input of a compaction a summary sentence may come from."""

    text: str
    row: int
    carried: bool  # a sentence of the previous summary


def _summary_sentences(text: str) -> list[str]:
    """The sentences of a summary, without list markers; headings and bare markup left out."""
    found = (_BULLET.sub("", sentence) for sentence in sentences(_body(text)))
    return [s for s in found if not s.startswith("#") and any(ch.isalnum() for ch in s)]


def _inputs(lineage: _Lineage, gen: _Generation) -> list[_Candidate]:
    """What the compaction read, in its order: the previous summary's sentences, then the
    archived messages."""
    previous = (
        [_Candidate(s, gen.previous, True) for s in _summary_sentences(lineage.text(gen.previous))]
        if gen.previous is not None
        else []
    )
    return previous + [_Candidate(lineage.text(row), row, False) for row in gen.archived]


def _alignment(sentences: Sequence[str], candidates: Sequence[str]) -> tuple[Any, Any]:
    """``(score, closeness)`` matrices, sentences × candidates, 0-100: ``score`` is rapidfuzz's
    ``partial_ratio`` (the best-matching stretch of the candidate) where the sentence is the
    shorter text, its ``ratio`` (the whole texts) where it is the longer (a short message does
    not explain a long sentence); ``closeness`` is ``ratio``, the tie-breaker."""
    import numpy as np
    from rapidfuzz import fuzz, process

    left = [normalize(s) for s in sentences]
    right = [normalize(c) for c in candidates]
    partial = process.cdist(left, right, scorer=fuzz.partial_ratio, workers=1)
    whole = process.cdist(left, right, scorer=fuzz.ratio, workers=1)
    longer = np.array([len(s) for s in left])[:, None] > np.array([len(c) for c in right])[None, :]
    return np.where(longer, whole, partial), whole


def _snippet(sentence: str, text: str) -> str:
    """The stretch of ``text`` that ``sentence`` aligns with, with some context."""
    from rapidfuzz import fuzz

    flat = " ".join(text.split())
    if len(flat) <= len(sentence) + 2 * _SNIPPET:
        return flat
    lowered = flat.lower()
    if len(lowered) != len(flat):
        lowered = flat
    found = fuzz.partial_ratio_alignment(" ".join(sentence.lower().split()), lowered)
    if found is None:
        return flat[: len(sentence) + 2 * _SNIPPET] + "…"
    start, end = max(0, found.dest_start - _SNIPPET), min(len(flat), found.dest_end + _SNIPPET)
    return ("…" if start else "") + flat[start:end] + ("…" if end < len(flat) else "")


def summary_provenance(
    source: Source | pd.DataFrame, agent: str | None, generation: int, *, top: int = 1
) -> pd.DataFrame:
    """Where each sentence of ``agent``'s summary of ``generation`` most likely came from.

    ``source`` as :func:`lineage_df` (``agent`` may be ``None`` when it holds one agent). The
    summary is cut into sentences (headings left out); each is aligned with what the compaction
    read: the previous summary's sentences and the archived messages. The alignment is lexical,
    rapidfuzz on the texts as the evaluation normalizes them: ``partial_ratio`` (the best
    stretch of the input, 0-100: 100 when the sentence is copied from it) where the sentence is
    the shorter, ``ratio`` where it is the longer; ties go to the input closest as a whole
    (``ratio``), then to the one read first (the previous summary comes first).

    One row per sentence and rank (``top`` best inputs each). Columns
    (:data:`PROVENANCE_COLUMNS`): ``workspace``, ``agent``, ``generation``,
    ``sentence_index``, ``sentence``, ``rank`` (1 = the most likely), ``score``, ``ties``
    (inputs with the best score: more than one, the sentence is in several), ``carried`` (the
    input is the previous summary: the sentence was carried over, not written from new
    messages), and the input's ``file``, ``position``, ``role``, ``timestamp`` (the previous
    summary's for a carried one) and ``snippet`` (the aligned stretch, with context).
    Empty when the compaction wrote no summary.
    """
    import numpy as np

    top = check_int("top", top, minimum=1)
    generation = check_int("generation", generation, minimum=1)
    lineage = _one(source, agent)
    gen = lineage.generation(generation)
    sentences = _summary_sentences(lineage.text(gen.summary)) if gen.summary is not None else []
    inputs = _inputs(lineage, gen)
    rows: list[dict[str, Any]] = []
    if sentences and inputs:
        score, closeness = _alignment(sentences, [c.text for c in inputs])
        frame = lineage.frame
        for index, sentence in enumerate(sentences):
            best = float(score[index].max())
            order = np.lexsort((np.arange(len(inputs)), -closeness[index], -score[index]))
            for rank, chosen in enumerate(order[:top], 1):
                candidate = inputs[int(chosen)]
                rows.append(
                    {
                        "workspace": lineage.workspace,
                        "agent": lineage.agent,
                        "generation": gen.generation,
                        "sentence_index": index,
                        "sentence": sentence,
                        "rank": rank,
                        "score": float(score[index, chosen]),
                        "ties": int(np.isclose(score[index], best).sum()),
                        "carried": candidate.carried,
                        "file": str(frame["file"].iat[candidate.row]),
                        "position": int(frame["position"].iat[candidate.row]),
                        "role": str(frame["role"].iat[candidate.row]),
                        "timestamp": frame["timestamp"].iat[candidate.row],
                        "snippet": _snippet(sentence, candidate.text),
                    }
                )
    data = {name: [row[name] for row in rows] for name, _ in PROVENANCE_COLUMNS}
    return build_frame(PROVENANCE_COLUMNS, data)


def dropped_by(
    source: Source | pd.DataFrame,
    agent: str | None,
    generation: int,
    facts: _FactSpec = None,
) -> pd.DataFrame:
    """The facts ``agent``'s compaction ``generation`` read and its summary no longer holds.

    What the compaction read: the previous summary and the archived messages. ``facts`` as in
    :func:`fact_survival_df`; ``None``: the facts
    :func:`~memorylab.evaluate.extract_facts` finds in what it read. One row per fact
    that the previous summary or an archived message holds and the new summary does not.
    Columns (:data:`DROPPED_COLUMNS`): ``workspace``, ``agent``, ``generation``, ``fact_id``,
    ``fact``, ``category``, ``source``, ``in_previous`` (the previous summary held it: lost
    from memory now), ``in_messages`` (an archived message holds it), and where it was:
    ``file``, ``position``, ``role``, ``timestamp`` of the first archived message holding it, or
    of the previous summary when no message does.
    """
    generation = check_int("generation", generation, minimum=1)
    lineage = _one(source, agent)
    gen = lineage.generation(generation)
    summary = PreparedText(_body(lineage.text(gen.summary)))
    previous = PreparedText(_body(lineage.text(gen.previous)))
    given = _given(facts)
    if given is None:
        read = ([gen.previous] if gen.previous is not None else []) + list(gen.archived)
        tracked = _extracted(lineage, read)
    else:
        tracked = given
    everything = _joined(lineage, gen.archived)
    archived = {r: PreparedText(lineage.text(r)) for r in gen.archived}
    frame = lineage.frame
    rows: list[dict[str, Any]] = []
    for fact in tracked:
        in_previous = bool(previous.text) and fact.match(previous).kept
        if fact.message is not None and fact.message != gen.previous:
            holder: int | None = fact.message
        elif everything.text and fact.match(everything).kept:
            holder = next((r for r in gen.archived if fact.match(archived[r]).kept), None)
            if holder is None:  # only the messages together (a number's context across two)
                holder = gen.archived[0]
        else:
            holder = None
        if not (in_previous or holder is not None) or (
            summary.text and fact.match(summary).kept
        ):
            continue
        in_messages = holder is not None
        holder = gen.previous if holder is None else holder
        rows.append(
            {
                "workspace": lineage.workspace,
                "agent": lineage.agent,
                "generation": gen.generation,
                "fact_id": fact.id,
                "fact": fact.text,
                "category": fact.category,
                "source": fact.source,
                "in_previous": in_previous,
                "in_messages": in_messages,
                "file": None if holder is None else str(frame["file"].iat[holder]),
                "position": None if holder is None else int(frame["position"].iat[holder]),
                "role": None if holder is None else str(frame["role"].iat[holder]),
                "timestamp": None if holder is None else frame["timestamp"].iat[holder],
            }
        )
    data = {name: [row[name] for row in rows] for name, _ in DROPPED_COLUMNS}
    return build_frame(DROPPED_COLUMNS, data)
