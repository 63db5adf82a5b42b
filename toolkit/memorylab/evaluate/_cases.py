"""Evaluation cases: a history that was (or will be) summarized, with what a summary must keep.

A :class:`Case` is the history (messages with ``role``/``content``/``timestamp``), optional
reference :class:`Fact` records (each with a category from :data:`FACT_CATEGORIES`) and
:class:`Probe` questions with answers, and — for cases read from a real workspace — the summary
that a compaction actually wrote (``summary``), so it can be scored without calling any model.

* :func:`cases_from_transcripts` cuts bundled (or given) transcripts with planted facts and probes
  into cases: one per transcript (``split="whole"``), per session (``"session"``) or per window
  of ``window`` messages (``"window"``). A fact belongs to the case whose messages contain its
  ``message_index`` (re-based to the case), a probe to the case of its fact.
* :func:`cases_from_workspace` turns every compaction of a workspace, agent folder or MEMORY.md
  into a case: the archive it wrote (the history that was summarized) and the summary that
  replaced it, found in the file that continues the archive (memorylab's ``**Continues:**``
  lineage) or, for the reference framework's files (no lineage), in the next file in time order.
  The first summary block of that file that does not already occur in the archive is the one
  the compaction wrote. Its ``compactions.jsonl`` record, when there is one, gives the model,
  latency and cost (``Case.metadata``).
* :func:`cases_from_locomo` and :func:`cases_from_longmemeval` read two public long-memory
  benchmarks' files (the user brings them; they are not shipped): one case per session or per
  conversation, every message stamped with its session's date and time, probes from the
  benchmark's questions with their reference answers and categories.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import random
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from memorylab._validation import check_int
from memorylab.errors import InvalidSetting, MemoryFormatError, StoreError
from memorylab.memory import _format as fmt
from memorylab.memory._records import SUMMARY_PREFIX
from memorylab.transcripts import Fact, Probe, Transcript, load_transcript

if TYPE_CHECKING:
    from memorylab.analysis import AgentRecord

Split = Literal["whole", "session", "window"]


@dataclass(frozen=True, slots=True)
class Case:
    """One history to summarize, with optional reference facts, probes and an existing summary.

    ``messages`` are ``{"role", "content"[, "timestamp"]}`` dicts. ``facts`` empty means the
    fact-recall scorer extracts facts from the history by its documented rules. ``summary`` is
    the text of a summary that already exists (without the ``[Compressed Memory Summary]``
    prefix), scored by the ``"memorylab/existing"`` summarizer.
    """

    id: str
    messages: tuple[Mapping[str, Any], ...]
    facts: tuple[Fact, ...] = ()
    probes: tuple[Probe, ...] = ()
    summary: str | None = None
    source: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise InvalidSetting("a case needs a non-empty string id")
        object.__setattr__(self, "messages", tuple(_message(m) for m in self.messages))
        object.__setattr__(self, "facts", tuple(self.facts))
        object.__setattr__(self, "probes", tuple(self.probes))

    def __repr__(self) -> str:
        return (
            f"Case({self.id!r}, {len(self.messages)} messages, {len(self.facts)} facts, "
            f"{len(self.probes)} probes{', with summary' if self.summary else ''})"
        )

    @property
    def history_text(self) -> str:
        """The history as one transcript (what a summarizer sees, rendered)."""
        return fmt.history_text(self.messages)


def _message(message: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(message, Mapping) or "content" not in message:
        raise InvalidSetting(f"a case message must be a mapping with 'content', not {message!r}")
    out: dict[str, Any] = {
        "role": str(message.get("role") or "unknown"),
        "content": fmt.content_to_text(message.get("content")),
    }
    if message.get("timestamp") not in (None, ""):
        out["timestamp"] = message["timestamp"]
    return out


def cases_from_messages(
    messages: Sequence[Mapping[str, Any]],
    *,
    id: str = "case",
    facts: Iterable[Fact] = (),
    probes: Iterable[Probe] = (),
    summary: str | None = None,
) -> list[Case]:
    """One case from a plain message list (a convenience for notebooks and tests)."""
    return [Case(id, tuple(messages), tuple(facts), tuple(probes), summary, source="messages")]


# --------------------------------------------------------------------------- transcripts


def _windows(transcript: Transcript, split: Split, window: int) -> list[tuple[str, int, int]]:
    """``(suffix, start, end)`` message ranges of one transcript."""
    count = len(transcript.messages)
    if split == "whole" or count == 0:
        return [("", 0, count)]
    if split == "window":
        return [
            (f"#w{n}", start, min(start + window, count))
            for n, start in enumerate(range(0, count, window))
        ]
    ranges: list[tuple[str, int, int]] = []
    start = 0
    messages = transcript.messages
    for index in range(1, count + 1):
        if index == count or messages[index].session != messages[start].session:
            ranges.append((f"#s{messages[start].session}", start, index))
            start = index
    return ranges


def _transcript_cases(path: Path, split: Split, window: int) -> list[Case]:
    transcript = load_transcript(path)
    stem = path.name.removesuffix(".jsonl")
    cases = []
    for suffix, start, end in _windows(transcript, split, window):
        messages = tuple(
            {"role": m.role, "content": m.content, "timestamp": m.timestamp}
            for m in transcript.messages[start:end]
        )
        facts = tuple(
            dataclasses.replace(f, message_index=f.message_index - start)
            for f in transcript.facts
            if f.message_index is not None and start <= f.message_index < end
        )
        kept = {f.id for f in facts}
        probes = tuple(
            p
            for p in transcript.probes
            if p.fact_id in kept or (p.fact_id is None and split == "whole")
        )
        if not any(str(m["content"]).strip() for m in messages):
            continue
        cases.append(
            Case(
                f"{stem}{suffix}",
                messages,
                facts,
                probes,
                source=str(path),
                metadata={"transcript": stem, "start": start, "end": end},
            )
        )
    return cases


def cases_from_transcripts(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
    *,
    split: Split = "whole",
    window: int = 40,
) -> list[Case]:
    """Cases from transcripts with planted facts and probes (``None``: the bundled ones).

    ``split``: ``"whole"`` (one case per transcript), ``"session"`` (one per run of messages
    of the same session) or ``"window"`` (consecutive windows of ``window`` messages).
    """
    if split not in ("whole", "session", "window"):
        raise InvalidSetting(f"split must be 'whole', 'session' or 'window', not {split!r}")
    window = check_int("window", window, 1)
    if paths is None:
        from memorylab.transcripts import bundled_transcripts

        items: list[Path] = [Path(p) for p in bundled_transcripts()]
        if not items:
            raise StoreError("no bundled transcripts were found (data/transcripts/*.jsonl)")
    elif isinstance(paths, str | os.PathLike):
        items = [Path(paths)]
    else:
        items = [Path(p) for p in paths]
    out: list[Case] = []
    for item in items:
        if item.is_dir():
            for child in sorted(item.glob("*.jsonl")):
                out.extend(_transcript_cases(child, split, window))
        elif item.is_file():
            out.extend(_transcript_cases(item, split, window))
        else:
            raise StoreError(f"{item} does not exist; give a transcript .jsonl file or a folder")
    return out


# --------------------------------------------------------------------------- workspaces


def _agent_folders(path: Path) -> list[tuple[AgentRecord, Path | None]]:
    """The agents of a workspace, agents/, an agent folder or a file, each read once as the
    loaders read it (nested ones too), with the one file given or None for the whole folder."""
    from memorylab.analysis import load_records
    from memorylab.analysis._sources import resolve

    found: list[tuple[AgentRecord, Path | None]] = []
    for files in resolve(path)[0]:  # one file: its compaction needs the folder's timeline
        only = None if files.whole_folder else files.memory or files.archives[0]
        found += [(record, only) for record in load_records(files.folder)]
    return found


def _agent_cases(agent: AgentRecord, only: Path | None) -> list[Case]:
    """One case per compaction of the agent: an archive of its timeline (read as the loaders
    read it: lineage order, uncommitted and edits' archives aside) and the summary that the
    next file starts with, marked or the reference's plain one (``summary_flags``)."""
    segments, flags = agent.segments, agent.summary_flags
    records = {str(r.get("archive")): r for r in agent.compactions}
    cases = []
    for index, (segment, after) in enumerate(itertools.pairwise(segments)):
        doc, archive = segment.document, segment.path
        if segment.kind != "archive" or not doc.messages:
            continue
        if only is not None and only not in (archive, after.path):
            continue
        already = {m.content for m in doc.messages if m.is_summary}
        summary = next(
            (
                m.content.removeprefix(SUMMARY_PREFIX).strip()
                for m, flagged in zip(after.messages(), flags[index + 1], strict=True)
                if flagged and m.content not in already
            ),
            None,
        )
        if not summary:
            continue
        record = records.get(archive.name, {})
        cases.append(
            Case(
                f"{agent.agent}/{archive.name}",
                tuple(
                    {"role": m.role, "content": m.content, "timestamp": m.timestamp}
                    for m in doc.messages
                ),
                summary=summary,
                source=str(archive),
                metadata={
                    "agent": agent.agent,
                    "archive": archive.name,
                    "summary_file": str(after.path),
                    "summarizer_model": record.get("summarizer_model"),
                    "latency_s": record.get("latency_s"),
                    "cost_usd": record.get("cost_usd"),
                    "summary_tokens": record.get("summary_tokens"),
                    "reference_format": doc.format_version is None,
                },
            )
        )
    return cases


def cases_from_workspace(
    source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
) -> list[Case]:
    """One case per compaction found in ``source`` (see the module docstring).

    ``source``: a workspace (the folder holding ``agents/``), ``agents/`` itself, an agent
    folder, a MEMORY.md or archive file (only the compaction it takes part in), or a list of
    these; ``None`` is the current workspace (:func:`memorylab.config.resolve_workspace`).
    Nothing is written; an archive of an interrupted compaction is skipped.
    """
    if source is None:
        from memorylab.config import resolve_workspace

        items: list[Path] = [resolve_workspace(None)]
    elif isinstance(source, str | os.PathLike):
        items = [Path(source)]
    else:
        items = [Path(s) for s in source]
    out: list[Case] = []
    sources: set[Path] = set()
    ids: set[str] = set()
    for item in items:
        for agent, only in _agent_folders(item.expanduser()):
            for case in _agent_cases(agent, only):
                source = Path(case.source).resolve()
                if source in sources:
                    continue
                sources.add(source)
                if case.id in ids:  # the same agent name in two workspaces
                    base = f"{Path(str(agent.workspace)).resolve().name}/{case.id}"
                    new_id, n = base, 2
                    while new_id in ids:
                        new_id, n = f"{base}#{n}", n + 1
                    case = dataclasses.replace(case, id=new_id)
                ids.add(case.id)
                out.append(case)
    return out


# --------------------------------------------------------------------------- public benchmarks

LOCOMO_CATEGORIES = {
    "1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop", "5": "adversarial",
}  # fmt: skip
"""LoCoMo's question categories by number, as its evaluations name them (``Probe.category`` keeps
the number as written in the file)."""

_MONTH_NAMES = (
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december",
)  # fmt: skip
_LOCOMO_STAMP = re.compile(
    r"(\d{1,2}):(\d{2})\s*([ap]\.?m\.?)\s+on\s+(\d{1,2})\s+([a-z]+),?\s+(\d{4})", re.IGNORECASE
)
_LONGMEM_STAMP = re.compile(r"(\d{4})/(\d{1,2})/(\d{1,2})(?:\s*\([^)]*\))?\s*(\d{1,2}):(\d{2})")
_DIA = re.compile(r"D(\d+):(\d+)")


def _benchmark_file(path: str | os.PathLike[str], what: str) -> list[Any]:
    file = Path(path).expanduser()
    if not file.is_file():
        raise StoreError(f"{file} does not exist; give the path of a {what} JSON file")
    try:
        data = json.loads(file.read_bytes())
    except (OSError, ValueError) as exc:
        raise MemoryFormatError(f"not a JSON file ({exc})", path=file) from None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list) or not all(isinstance(x, dict) for x in data):
        raise MemoryFormatError(f"a {what} file holds a JSON list of objects", path=file)
    return data


def _bad(file: str | os.PathLike[str], what: str, why: str) -> MemoryFormatError:
    return MemoryFormatError(f"not the {what} format: {why}", path=Path(file))


def _locomo_stamp(text: str) -> str | None:
    """``"1:56 pm on 8 May, 2023"`` as ``"2023-05-08T13:56:00"`` (None when it is not that)."""
    match = _LOCOMO_STAMP.search(text)
    if match is None:
        return None
    hour, minute, half, day, month, year = match.groups()
    names = [m for m in _MONTH_NAMES if m.startswith(month.lower()[:3])]
    if not names:
        return None
    hour_24 = int(hour) % 12 + (12 if half.lower().startswith("p") else 0)
    number = _MONTH_NAMES.index(names[0]) + 1
    return f"{int(year):04d}-{number:02d}-{int(day):02d}T{hour_24:02d}:{int(minute):02d}:00"


def _answer(value: Any) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    text = str(value).strip()
    return text or None


def cases_from_locomo(
    path: str | os.PathLike[str], *, split: Literal["session", "conversation"] = "session"
) -> list[Case]:
    """Cases from a LoCoMo file: one per session (``split="session"``) or per conversation.

    The format: a JSON list of samples, each with ``sample_id``, a ``conversation`` (``speaker_a``,
    ``speaker_b``, ``session_<n>``: a list of turns ``{speaker, dia_id, text}``, and
    ``session_<n>_date_time``, e.g. ``"1:56 pm on 8 May, 2023"``) and ``qa`` items ``{question,
    answer, evidence: [dia_id ...], category}``. Every turn is a message whose role is its
    speaker, stamped with its session's date and time (ISO-8601); a shared image's caption
    (``blip_caption``) is kept in its turn's text, as ``[shares an image: ...]`` (answers
    sometimes exist only there). A question is a probe of the case that holds all of its
    evidence (a session case gets the questions whose evidence lies in it; a conversation case
    all of them), with its category (:data:`LOCOMO_CATEGORIES`); questions without an answer
    (the adversarial ones have ``adversarial_answer`` instead) are left out and counted in
    ``metadata["unanswered"]``.

    Every question left out is named, by reason and category, in the ``metadata["dropped"]``
    of each case it was dropped from (``{reason: {category: [question id ...]}}``: a session
    case names the questions whose evidence touches it, and those whose evidence lies in no
    session; count them over cases with :func:`dropped_questions`): ``"no answer"``; with
    ``split="session"`` also ``"spans sessions"`` (its evidence lies in more than one session:
    270 of LoCoMo's 282 multi-hop questions; the conversation split keeps them) and ``"no
    evidence"``.
    """
    if split not in ("session", "conversation"):
        raise InvalidSetting(f"split must be 'session' or 'conversation', not {split!r}")
    cases: list[Case] = []
    for number, sample in enumerate(_benchmark_file(path, "LoCoMo")):
        conversation = sample.get("conversation")
        if not isinstance(conversation, Mapping):
            raise _bad(path, "LoCoMo", f"sample {number} has no 'conversation' object")
        sample_id = str(sample.get("sample_id") or f"conv-{number}")
        sessions: list[tuple[int, list[dict[str, Any]]]] = []
        for key, turns in conversation.items():
            found = re.fullmatch(r"session_(\d+)", str(key))
            if found is None or not isinstance(turns, list):
                continue
            index = int(found.group(1))
            raw_stamp = str(conversation.get(f"session_{index}_date_time") or "")
            stamp = _locomo_stamp(raw_stamp) or raw_stamp or None
            messages = []
            for turn in turns:
                if not isinstance(turn, Mapping) or "text" not in turn:
                    raise _bad(path, "LoCoMo", f"{sample_id} session_{index}: a turn without text")
                text = str(turn.get("text") or "")
                caption = turn.get("blip_caption")
                if caption:
                    text = f"{text} [shares an image: {caption}]".strip()
                message: dict[str, Any] = {
                    "role": str(turn.get("speaker") or "unknown"),
                    "content": text,
                    "dia_id": str(turn.get("dia_id") or ""),
                }
                if stamp:
                    message["timestamp"] = stamp
                messages.append(message)
            sessions.append((index, messages))
        if not sessions:
            raise _bad(path, "LoCoMo", f"{sample_id} has no session_<n> lists of turns")
        sessions.sort()
        questions = sample.get("qa") or []
        if not isinstance(questions, list):
            raise _bad(path, "LoCoMo", f"{sample_id}: 'qa' must be a list")
        probes: list[tuple[set[int], Probe]] = []
        unanswered = 0
        left_out: list[tuple[set[int], str, str, str]] = []  # (sessions, reason, category, id)
        for q_index, item in enumerate(questions):
            question_id = f"{sample_id}-q{q_index + 1}"
            item = item if isinstance(item, Mapping) else {}
            evidence = " ".join(map(str, item.get("evidence") or ()))
            where = {int(m.group(1)) for m in _DIA.finditer(evidence)}
            answer = _answer(item.get("answer"))
            if answer is None or not str(item.get("question") or "").strip():
                unanswered += 1
                category_name = _category_name(item.get("category"))
                left_out.append((where, "no answer", category_name, question_id))
                continue
            category = item.get("category")
            probes.append((where, Probe(
                question_id, None, str(item["question"]).strip(), answer,
                category=None if category is None else str(category),
            )))  # fmt: skip
        if split == "session":
            for where, probe in probes:
                if len(where) != 1:
                    reason = "spans sessions" if where else "no evidence"
                    left_out.append((where, reason, _category_name(probe.category), probe.id))
        numbers = {i for i, _ in sessions}
        groups = (
            [(f"#s{i}", [i], m) for i, m in sessions]
            if split == "session"
            else [("", [i for i, _ in sessions], [x for _, m in sessions for x in m])]
        )
        for suffix, indices, messages in groups:
            if not any(str(m["content"]).strip() for m in messages):
                continue
            mine = tuple(
                p for where, p in probes
                if (where and where <= set(indices)) or (not where and split == "conversation")
            )  # fmt: skip
            # A question is dropped from each session its evidence lies in; one whose evidence
            # lies in none of them, from every case of its conversation.
            dropped: dict[str, dict[str, list[str]]] = {}
            for where, reason, category, question_id in left_out:
                if where & set(indices) or not where & numbers:
                    dropped.setdefault(reason, {}).setdefault(category, []).append(question_id)
            cases.append(Case(
                f"{sample_id}{suffix}",
                tuple({k: v for k, v in m.items() if k != "dia_id"} for m in messages),
                probes=mine,
                source=str(path),
                metadata={"benchmark": "locomo", "sample_id": sample_id, "sessions": indices,
                          "unanswered": unanswered,
                          "dropped": dropped,
                          "speakers": [conversation.get("speaker_a"),
                                       conversation.get("speaker_b")]},
            ))  # fmt: skip
    return cases


def _category_name(category: Any) -> str:
    """A LoCoMo category number as its name (:data:`LOCOMO_CATEGORIES`), else as written."""
    if category is None:
        return "unknown"
    return LOCOMO_CATEGORIES.get(str(category), str(category))


def probe_category(case: Case, probe: Probe) -> str | None:
    """``probe``'s category as tables name it: a LoCoMo number by its name
    (:data:`LOCOMO_CATEGORIES`), a planted fact's probe by its fact's category (``number``,
    ``path`` ...), else as written (None: none)."""
    if probe.category is not None:
        locomo = case.metadata.get("benchmark") == "locomo"
        return _category_name(probe.category) if locomo else probe.category
    facts = {fact.id: fact.category for fact in case.facts}
    return facts.get(probe.fact_id) if probe.fact_id is not None else None


def dropped_questions(cases: Sequence[Case]) -> dict[str, dict[str, int]]:
    """The questions the benchmark's loader left out of ``cases`` themselves, ``{reason:
    {category: count}}``: those each case names in ``metadata["dropped"]``, each question
    counted once however many of the cases dropped it (a question spanning two sessions drawn).
    A sample of a conversation's sessions (:func:`sample_cases`) reports what its sessions
    dropped, not the whole conversation's."""
    found: dict[tuple[str, str], tuple[str, str]] = {}
    for case in cases:
        dropped = case.metadata.get("dropped")
        for reason, by_category in dropped.items() if isinstance(dropped, Mapping) else ():
            for category, question_ids in by_category.items():
                for question_id in question_ids:
                    found.setdefault((case.source, question_id), (str(reason), str(category)))
    total: dict[str, Counter[str]] = {}
    for reason, category in found.values():
        total.setdefault(reason, Counter())[category] += 1
    return {reason: dict(counts.most_common()) for reason, counts in total.items()}


def sample_cases(cases: Sequence[Case], probes: int, *, seed: int = 0) -> list[Case]:
    """A sample of ``cases`` drawn to a budget of ``probes``: the cases that have probes, in an
    order shuffled with ``seed``, until they hold at least ``probes`` probes (all of them when
    they hold fewer). The order depends on the seed and the cases alone, so a larger budget
    draws the smaller one's cases first (its run reuses the smaller run's cached calls).
    Report :func:`dropped_questions` of the sample, not of the cases it was drawn from.

    >>> from memorylab.transcripts import Probe
    >>> pool = [Case(f"s{n}", ({"content": "..."},), probes=(Probe(f"q{n}", None, "?", "!"),) * 2)
    ...         for n in range(10)]
    >>> [case.id for case in sample_cases(pool, 5, seed=1)]
    ['s6', 's8', 's9']
    """
    budget = check_int("probes", probes, 1)
    order = random.Random(check_int("seed", seed, 0))
    pool = list(cases)
    strays = [c for c in pool if not isinstance(c, Case)]
    if strays:
        raise InvalidSetting(
            f"cases must be Case objects (from cases_from_locomo, cases_from_transcripts ...), "
            f"not {type(strays[0]).__name__}"
        )
    pool = [case for case in pool if case.probes]  # a case without probes adds none
    order.shuffle(pool)
    drawn: list[Case] = []
    count = 0
    for case in pool:
        if count >= budget:
            break
        drawn.append(case)
        count += len(case.probes)
    return drawn


def _longmem_stamp(text: Any) -> str | None:
    """``"2023/05/20 (Sat) 02:21"`` as ``"2023-05-20T02:21:00"`` (None when it is not that)."""
    match = _LONGMEM_STAMP.search(str(text or ""))
    if match is None:
        return None
    year, month, day, hour, minute = (int(g) for g in match.groups())
    return f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:00"


def cases_from_longmemeval(
    path: str | os.PathLike[str], *, sessions: Literal["all", "evidence"] = "all"
) -> list[Case]:
    """Cases from a LongMemEval file: one per question, its haystack as the history.

    The format: a JSON list of instances ``{question_id, question_type, question, answer,
    question_date, haystack_session_ids, haystack_dates, haystack_sessions: [[{role, content},
    ...], ...], answer_session_ids}``. The case's messages are the haystack sessions in order
    (``sessions="evidence"``: only those in ``answer_session_ids``, the benchmark's oracle
    setting), each message stamped with its session's date; the one probe is the question, with
    its answer, ``question_type`` as category and ``question_date`` as ``asked_at``.
    """
    if sessions not in ("all", "evidence"):
        raise InvalidSetting(f"sessions must be 'all' or 'evidence', not {sessions!r}")
    cases: list[Case] = []
    for number, item in enumerate(_benchmark_file(path, "LongMemEval")):
        haystack = item.get("haystack_sessions")
        if not isinstance(haystack, list) or "question" not in item:
            raise _bad(path, "LongMemEval", f"instance {number} has no haystack_sessions/question")
        qid = str(item.get("question_id") or f"q{number}")
        ids = list(item.get("haystack_session_ids") or [None] * len(haystack))
        dates = list(item.get("haystack_dates") or [None] * len(haystack))
        wanted = {str(x) for x in item.get("answer_session_ids") or ()}
        messages: list[dict[str, Any]] = []
        for session_id, date, turns in zip(ids, dates, haystack, strict=False):
            if sessions == "evidence" and str(session_id) not in wanted:
                continue
            stamp = _longmem_stamp(date)
            for turn in turns if isinstance(turns, list) else ():
                if not isinstance(turn, Mapping) or "content" not in turn:
                    raise _bad(path, "LongMemEval", f"{qid}: a turn without content")
                message: dict[str, Any] = {
                    "role": str(turn.get("role") or "unknown"),
                    "content": str(turn.get("content") or ""),
                }
                if stamp:
                    message["timestamp"] = stamp
                messages.append(message)
        answer = _answer(item.get("answer"))
        if not messages or answer is None:
            continue
        asked = _longmem_stamp(item.get("question_date")) or _answer(item.get("question_date"))
        probe = Probe(f"{qid}-q", None, str(item["question"]).strip(), answer,
                      category=_answer(item.get("question_type")), asked_at=asked)  # fmt: skip
        cases.append(Case(
            qid, tuple(messages), probes=(probe,), source=str(path),
            metadata={"benchmark": "longmemeval", "question_type": probe.category,
                      "sessions": sessions},
        ))  # fmt: skip
    return cases
