"""What an agent's run recorded, and what is inferred where it recorded nothing.

:func:`run_settings` reads an agent's ``compactions.jsonl`` and its messages and returns the
:class:`RunSettings` it ran with: the threshold and window, the summarizer and the budget the
compressor gave it, the static context's tokens, the bound of the preload, where the checks fell
and when the process restarted, and a model of the summaries' sizes (:class:`SummarySize`). Every
field says where it came from (:attr:`RunSettings.origin`):

* ``"recorded"``: written with the compactions (``ContextCompressor`` records ``summary_budget``,
  ``summarizer_max_tokens``, ``static_tokens`` and ``token_model``; the ``Agent`` records
  ``checks``, ``session_start``, ``preload_tokens`` and ``preload_max_tokens``);
* ``"inferred"``: read off the files (the static context is ``tokens_after - summary_tokens``; a
  restart is a new process's first message after a gap of ``restart_gap`` or more; the checks
  fell before the model's replies — the messages whose role is the agent's name, or
  ``assistant`` — unless a compressor of this version recorded its compactions without an
  Agent: then after every message);
* ``"default"``: what an :class:`~memorylab.Agent` would use (threshold 0.9, 8,192 tokens, the
  compressor's ``summarizer_max_tokens``, the Agent's preload bound; a recorded bound equal to
  the Agent's rule is read as the rule, so a what-if at another window follows it too);
* ``"given"``: an argument (:meth:`RunSettings.given`).

:func:`~memorylab.analysis.token_growth`, :func:`~memorylab.analysis.replay` and
:func:`~memorylab.analysis.sweep` take their defaults from here, so a replay runs at the settings
of the run it replays unless told otherwise.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memorylab.compress.policy import DEFAULT_THRESHOLD, Threshold, validate_threshold
from memorylab.errors import InvalidSetting

if TYPE_CHECKING:
    from memorylab.analysis._transcript import Transcript

__all__ = ["DEFAULT_RESTART_GAP", "RunSettings", "SummarySize", "run_settings"]

DEFAULT_RESTART_GAP = timedelta(hours=1)
"""A gap between two messages at least this long is read as a restart when nothing was
recorded about the process that wrote the second one."""

DEFAULT_CONTEXT_LENGTH = 8192
_REPLY_ROLES = ("assistant", "Assistant", "AI")


@dataclass(frozen=True)
class SummarySize:
    """How many tokens a summary's text takes: ``min(fill * budget, ratio * summarized)`` (at
    least 1), where ``budget`` is what the compressor asked for
    (:meth:`~memorylab.compress.compressor.ContextCompressor.summary_budget`) and ``summarized``
    the tokens of the history it summarized (the context at the check, less the static context).

    >>> SummarySize(ratio=0.25, fill=0.95).tokens(4000, 500)
    475
    >>> SummarySize(ratio=0.25, fill=0.95).tokens(1000, 500)
    250
    """

    ratio: float = 1.0
    fill: float = 1.0

    def __post_init__(self) -> None:
        for name in ("ratio", "fill"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and 0 < value <= 1):
                raise InvalidSetting(
                    f"SummarySize.{name} must be a number in (0, 1], not {value!r}"
                )

    def tokens(self, summarized: int, budget: int) -> int:
        return max(1, min(int(self.fill * budget), int(self.ratio * summarized)))

    @classmethod
    def fit(cls, samples: Iterable[tuple[int, int, int]]) -> SummarySize | None:
        """The model of ``(summarized, summary, budget)`` token triples (``None`` without any):
        ``fill`` is the largest share of its budget a summary took; ``ratio`` the share of the
        summarized tokens that, with that cap, misses the sizes by the least in all, when it
        misses by clearly less (10 %) than the budget alone does (else 1.0: the budget decides).
        """
        usable = [(x, s, b) for x, s, b in samples if x > 0 and s > 0 and b > 0]
        if not usable:
            return None
        fill = min(1.0, max(s / b for _, s, b in usable))

        def miss(ratio: float) -> float:
            return sum(abs(max(1, min(int(fill * b), int(ratio * x))) - s) for x, s, b in usable)

        candidates = sorted({min(1.0, s / x) for x, s, _ in usable})
        best = min(candidates, key=miss)
        # the budget alone (ratio 1.0) unless a ratio explains the sizes clearly better
        ratio = best if miss(best) < 0.9 * miss(1.0) else 1.0
        return cls(ratio=round(ratio, 4), fill=round(fill, 4))

    def __str__(self) -> str:
        return f"min({self.fill:.0%} of the budget, {self.ratio:.0%} of the summarized tokens)"


@dataclass(frozen=True)
class RunSettings:
    """The settings of a run (the module docstring): each field's source is in ``origin``.

    ``restarts`` are the first messages (their UTC times) of each process after the first;
    ``checks`` is ``"model_call"`` (a check before every model call: after message ``i`` when
    message ``i + 1`` is a reply, a role in ``reply_roles``) or ``"message"`` (after every
    message). ``static_tokens`` is the static context's share of the context: its entries and one
    ``"\\n\\n"`` after each. ``preload_max_tokens`` ``None`` preloads all of MEMORY.md.
    ``recorded_archives``, ``recorded_tokens`` and ``recorded_times`` are each recorded
    compaction's archive, ``tokens_before`` and time (``None``: not recorded), in order.
    """

    threshold: Threshold = DEFAULT_THRESHOLD
    context_length: int = DEFAULT_CONTEXT_LENGTH
    summarizer: str | None = None
    summarizer_max_tokens: int = 2000
    static_tokens: int = 0
    preload_max_tokens: int | None = None
    checks: str = "message"
    reply_roles: tuple[str, ...] = ()
    restarts: tuple[datetime, ...] = ()
    summary_size: SummarySize | None = None
    token_model: str | None = None
    agent: str | None = None
    recorded_archives: tuple[str | None, ...] = ()
    recorded_tokens: tuple[int | None, ...] = ()
    recorded_times: tuple[datetime | None, ...] = ()
    origin: Mapping[str, str] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if self.checks not in ("model_call", "message"):
            raise InvalidSetting(
                f"checks must be 'model_call' (before every model call, as the Agent checks) or "
                f"'message' (after every message), not {self.checks!r}"
            )

    @property
    def compactions(self) -> int | None:
        """How many compactions the record holds (``None``: nothing was recorded)."""
        return len(self.recorded_archives) if self.recorded_archives else None

    def source_of(self, name: str) -> str:
        return self.origin.get(name, "default")

    def given(self, **changes: Any) -> RunSettings:
        """A copy with ``changes`` (``None`` values are ignored), marked ``"given"``."""
        wanted = {k: v for k, v in changes.items() if v is not None}
        known = {f.name for f in fields(self)}
        unknown = sorted(set(wanted) - known)
        if unknown:
            raise InvalidSetting(f"RunSettings has no field(s) {unknown}; known: {sorted(known)}")
        if "threshold" in wanted:
            wanted["threshold"] = validate_threshold(wanted["threshold"])
        if "restarts" in wanted:
            wanted["restarts"] = tuple(wanted["restarts"])
        if "reply_roles" in wanted:
            wanted["reply_roles"] = tuple(wanted["reply_roles"])
        origin = {**self.origin, **dict.fromkeys(wanted, "given")}
        return replace(self, **wanted, origin=origin)

    def describe(self) -> str:
        """One line: the settings and where they came from."""
        threshold = self.threshold
        parts = [
            f"threshold {threshold:g}" if isinstance(threshold, float) else f"{threshold:,} tokens",
            f"of {self.context_length:,} ({self.source_of('context_length')})",
            f"summaries by {self.summarizer or 'memorylab/extractive'} within "
            f"{self.summarizer_max_tokens:,} tokens ({self.source_of('summarizer_max_tokens')})",
            f"static context {self.static_tokens:,} tokens ({self.source_of('static_tokens')})",
            f"checks: {self.checks} ({self.source_of('checks')})",
            f"{len(self.restarts)} restart(s) ({self.source_of('restarts')})",
        ]
        return "; ".join(parts)


# --------------------------------------------------------------------------- reading a run


def run_settings(
    transcript: Any,
    *,
    restart_gap: timedelta | None = DEFAULT_RESTART_GAP,
    model: str | None = None,
) -> RunSettings:
    """The :class:`RunSettings` of one agent's run (see the module docstring).

    ``transcript``: an agent folder or memory file, a :func:`~memorylab.analysis.memory_df`
    frame of one agent (its ``file`` column leads to the agent's ``compactions.jsonl``), or a
    list of ``{"role", "content"[, "timestamp"]}`` messages (nothing recorded: only inferred).
    ``restart_gap`` ``None`` infers no restart from gaps. ``model`` counts the summary entries'
    fixed overhead (default: the recorded tokenizer).
    """
    import os

    from memorylab.analysis._transcript import as_transcript

    frame = transcript
    if isinstance(transcript, str | os.PathLike):
        from memorylab.analysis.frames import memory_df

        frame = memory_df(transcript)
    data = as_transcript(frame)  # checks the frame first (one agent, the columns)
    records = _records_of(frame)
    agent = _agent_of(frame, records)
    return _from_records(records, data, agent=agent, restart_gap=restart_gap, model=model)


def _from_records(
    records: Sequence[Mapping[str, Any]],
    transcript: Transcript,
    *,
    agent: str | None,
    restart_gap: timedelta | None = DEFAULT_RESTART_GAP,
    model: str | None = None,
) -> RunSettings:
    """:func:`run_settings` from the successful compaction records and the transcript."""
    from memorylab.agent import default_preload_max_tokens
    from memorylab.compress.compressor import ContextCompressor

    origin: dict[str, str] = {}
    values: dict[str, Any] = {"agent": agent}
    extras: list[Mapping[str, Any]] = [
        extra if isinstance(extra := r.get("extra"), Mapping) else {} for r in records
    ]

    def recorded(name: str, rows: Iterable[Any]) -> Any:
        found = [v for v in rows if v is not None and not isinstance(v, bool)]
        if not found:
            return None
        origin[name] = "recorded"
        return statistics.mode(found)

    threshold = recorded("threshold", (_threshold(r.get("threshold")) for r in records))
    values["threshold"] = threshold if threshold is not None else DEFAULT_THRESHOLD
    length = recorded("context_length", (_int(r.get("context_length")) for r in records))
    values["context_length"] = length or DEFAULT_CONTEXT_LENGTH
    values["summarizer"] = recorded("summarizer", (r.get("summarizer_model") for r in records))
    values["token_model"] = recorded("token_model", (e.get("token_model") for e in extras))

    maximum = recorded(
        "summarizer_max_tokens", (_int(e.get("summarizer_max_tokens")) for e in extras)
    )
    if maximum is None:
        outputs = [_int(e.get("summary_output_tokens")) for e in extras]
        capped = [o for o in outputs if o]
        if len(capped) >= 2 and max(capped) <= 1.15 * min(capped):  # summaries at a cap
            maximum, origin["summarizer_max_tokens"] = max(capped), "inferred"
    values["summarizer_max_tokens"] = maximum or ContextCompressor().summarizer_max_tokens

    static = recorded("static_tokens", (_int(e.get("static_tokens")) for e in extras))
    if static is None:
        gaps = [
            after - summary
            for r in records
            if (after := _int(r.get("tokens_after"))) is not None
            and (summary := _int(r.get("summary_tokens"))) is not None
            and not _int(r.get("carried_over"))
        ]
        if gaps:
            static, origin["static_tokens"] = max(0, int(statistics.median(gaps))), "inferred"
    values["static_tokens"] = static or 0

    checks = recorded("checks", (e.get("checks") for e in extras))
    roles = set(transcript.roles)
    replies = tuple(r for r in (agent, *_REPLY_ROLES) if r is not None and r in roles)
    if checks is None and any("summary_budget" in e for e in extras):
        # a compressor of this version that no Agent drove (it records its checks): a loop of
        # one's own, taken to check after every message
        checks, origin["checks"] = "message", "inferred"
    if checks is None and replies:
        checks, origin["checks"] = "model_call", "inferred"
    values["checks"] = checks or "message"
    values["reply_roles"] = replies[:1] if agent in roles else replies
    if values["reply_roles"]:
        origin["reply_roles"] = "inferred"

    preloads = [e["preload_max_tokens"] for e in extras if "preload_max_tokens" in e]
    rule = default_preload_max_tokens(values["context_length"], values["threshold"])
    values["preload_max_tokens"] = rule
    if preloads:
        values["preload_max_tokens"] = _int(preloads[-1])
        if values["preload_max_tokens"] != rule:  # else: the Agent's rule, which follows the
            origin["preload_max_tokens"] = "recorded"  # window and threshold of a what-if

    values["restarts"], origin["restarts"] = _restarts(records, extras, transcript, restart_gap)
    values["recorded_archives"] = tuple(
        None if r.get("archive") is None else str(r["archive"]) for r in records
    )
    values["recorded_tokens"] = tuple(_int(r.get("tokens_before")) for r in records)
    values["recorded_times"] = tuple(_time(r.get("time")) for r in records)
    budget = ContextCompressor(
        values["threshold"], summarizer_max_tokens=values["summarizer_max_tokens"]
    ).summary_budget(values["context_length"])
    values["summary_size"] = _recorded_sizes(
        records, extras, values["static_tokens"], budget, model or values["token_model"]
    )
    if values["summary_size"] is not None:
        origin["summary_size"] = "recorded"
    return RunSettings(**values, origin=origin)


def _records_of(frame: Any) -> list[dict[str, Any]]:
    """The successful compaction records of the agent whose files ``frame`` holds."""
    from memorylab.memory.paths import MemoryPaths
    from memorylab.memory.store import MemoryStore

    if not (hasattr(frame, "columns") and "file" in frame.columns and len(frame)):
        return []
    folders = {
        (path.parent.parent if path.parent.name == "archive" else path.parent)
        for path in (Path(str(f)) for f in frame["file"].unique())
    }
    if len(folders) != 1:
        raise InvalidSetting(
            "the frame holds the files of several agent folders; give one agent's rows, e.g. "
            "df[df.agent == 'name']"
        )
    memory_md = next(iter(folders)) / "MEMORY.md"
    if not MemoryPaths(memory_md).compactions.is_file():
        return []
    return [
        record
        for record in MemoryStore(memory_md).records()
        if isinstance(record, dict)
        and record.get("kind", "compaction") == "compaction"
        and not record.get("error")
    ]


def _agent_of(frame: Any, records: Sequence[Mapping[str, Any]]) -> str | None:
    if hasattr(frame, "columns") and "agent" in frame.columns and len(frame):
        return str(frame["agent"].iloc[0])
    names = [r.get("agent") for r in records if r.get("agent")]
    return str(names[0]) if names else None


def _int(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(number) if math.isfinite(number) else None


def _time(value: Any) -> datetime | None:
    try:
        when = datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.astimezone()


def _threshold(value: Any) -> Threshold | None:
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return validate_threshold(value)
    except InvalidSetting:
        return None


def _restarts(
    records: Sequence[Mapping[str, Any]],
    extras: Sequence[Mapping[str, Any]],
    transcript: Transcript,
    gap: timedelta | None,
) -> tuple[tuple[datetime, ...], str]:
    """The first message of each process after the first: recorded ``session_start`` s, and
    (outside the recorded processes' spans) the messages after a gap of ``gap`` or more."""
    import numpy as np

    from memorylab.analysis._transcript import positions, to_micros

    micros = transcript.utc_us
    spans: dict[int, int] = {}  # a recorded process: its first message -> its last compaction
    for record, extra in zip(records, extras, strict=True):
        start = extra.get("session_start")
        try:
            first = to_micros(str(start)) if start else None
            last = to_micros(str(record.get("time")))
        except ValueError:
            continue
        if first is not None:
            spans[first] = max(spans.get(first, first), last)
    stamps = transcript.datetimes()
    found = set(positions(transcript, [_from_micros(first) for first in spans]))
    kind = "recorded" if spans else "default"
    if gap is not None and len(micros) > 1:
        kind = "recorded+inferred" if spans else "inferred"
        limit = gap // timedelta(microseconds=1)
        for position in np.flatnonzero(np.diff(micros) >= limit) + 1:
            when = int(micros[position])
            if not any(first < when <= last for first, last in spans.items()):
                found.add(int(position))
    return tuple(stamps[p] for p in sorted(found)), kind


def _from_micros(micros: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=micros)


def _recorded_sizes(
    records: Sequence[Mapping[str, Any]],
    extras: Sequence[Mapping[str, Any]],
    static: int,
    budget: int,
    model: str | None,
) -> SummarySize | None:
    from memorylab.analysis._transcript import memo_counter, summary_overhead

    overhead = summary_overhead(memo_counter(model), "2000-01-01T00:00:00.000000+00:00")
    samples = []
    for record, extra in zip(records, extras, strict=True):
        before, entry = _int(record.get("tokens_before")), _int(record.get("summary_tokens"))
        asked = _int(extra.get("summary_budget")) or budget
        if before is None or entry is None:
            continue
        samples.append((before - static, entry - overhead, asked))
    return SummarySize.fit(samples)
