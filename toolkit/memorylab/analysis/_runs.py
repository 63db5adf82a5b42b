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

:func:`~memorylab.analysis.token_growth`, :func:`~memorylab.analysis._replay` and
:func:`~memorylab.analysis._sweep` take their defaults from here, so a replay runs at the settings
of the run it replays unless told otherwise: their overrides are one declaration
(:class:`RunOverrides`), made settings in one place (:func:`prepare_run`,
:meth:`RunSettings.given`). :class:`PreparedRun` is the run they run over.
"""

from __future__ import annotations

import enum
import logging
import math
import os
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, TypeAlias, TypedDict, TypeVar

from memorylab._validation import check_int
from memorylab.analysis._frames import memory_df, record_time
from memorylab.analysis._loaders import load_records, record_of_frame
from memorylab.analysis._record import AgentRecord, to_micros
from memorylab.compress._policy import (
    DEFAULT_THRESHOLD,
    CacheTiming,
    Threshold,
    Trigger,
    check_points,
    default_preload_max_tokens,
    threshold_text,
    trigger_tokens,
    validate_threshold,
)
from memorylab.compress._strategies import get_strategy, strategy_from_record
from memorylab.compress._strategy import Strategy
from memorylab.errors import InvalidSetting
from memorylab.memory import _format as fmt
from memorylab.memory._records import UsageRecord, recorded_count
from memorylab.memory._request import REPLY_TOKENS

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from memorylab.analysis._transcript import MemoCounter, Transcript

DEFAULT_RESTART_GAP = timedelta(hours=1)
"""A gap between two messages at least this long is read as a restart when nothing was
recorded about the process that wrote the second one."""

DEFAULT_CONTEXT_LENGTH = 8192

logger = logging.getLogger("memorylab")

_REPLY_ROLES = ("assistant", "Assistant", "AI")
_COUNTS = {"context_length": 1, "summarizer_max_tokens": 1, "static_tokens": 0}  # their minimum
_PASSED_OVER: set[tuple[str, str]] = set()  # recorded settings refused, logged already
_Setting = TypeVar("_Setting")

TranscriptSource: TypeAlias = (
    "pd.DataFrame | Sequence[Mapping[str, Any]] | str | os.PathLike[str] | AgentRecord"
)
"""What a replay, a sweep or :func:`run_settings` runs over: a :func:`~memorylab.analysis.memory_df`
frame of one agent, a list of ``{"role", "content"[, "timestamp"]}`` messages, the path of an
agent folder or memory file, or an agent's record (:class:`~memorylab.analysis.AgentRecord`)."""


class Recorded(enum.Enum):
    """The type of :data:`RECORDED`: "what the record says", where ``None`` is a setting of its
    own (``preload_max_tokens=None`` preloads all of MEMORY.md)."""

    RECORDED = "recorded"

    def __repr__(self) -> str:
        return "<recorded>"


RECORDED: Final = Recorded.RECORDED
"""The default of ``preload_max_tokens``: the record's bound (or the Agent's rule)."""


class RunOverrides(TypedDict, total=False):
    """What replays, sweeps and token growth take from the record unless given (``None``: the
    record's; ``preload_max_tokens=None``: no bound). ``model`` picks the tokenizer,
    ``max_summary_tokens`` is the compressor's ``summarizer_max_tokens``, ``static_tokens`` or
    ``system_prompt`` the static context, ``restarts`` ``False`` one process (or each new one's
    first message time), ``checks`` ``"model_call"`` or ``"message"``, ``restart_gap`` the gap read
    as a restart where nothing was recorded (``None``: none), ``strategy`` what each compaction
    does with the history (a :class:`~memorylab.compress._strategy.Strategy` or a registered
    name: :func:`~memorylab.compress.get_strategy`), ``keep_turn`` whether each compaction keeps
    the turn in progress (``ContextCompressor(keep_turn=...)``; the record's, else off)."""

    threshold: Threshold | None
    context_length: int | None
    model: str | None
    max_summary_tokens: int | None
    static_tokens: int | None
    system_prompt: str | None
    restarts: Iterable[datetime | str] | bool | None
    checks: str | None
    preload_max_tokens: int | Recorded | None
    restart_gap: timedelta | None
    strategy: Strategy | str | None
    keep_turn: bool | None
    cache_timing: CacheTiming | None
    """Defer each compaction while the prompt cache is warm (``Trigger(cache=...)``, whatever
    the threshold: a sweep's every setting); ``None``: the record's."""


@dataclass(frozen=True)
class SummarySize:
    """How many tokens a summary's text takes: ``min(fill * budget, ratio * summarized)`` (at
    least 1), where ``budget`` is what the compressor asked for
    (:meth:`~memorylab.compress._compressor.ContextCompressor.summary_budget`) and ``summarized``
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
        import numpy as np

        usable = [(x, s, b) for x, s, b in samples if x > 0 and s > 0 and b > 0]
        if not usable:
            return None
        fill = min(1.0, max(s / b for _, s, b in usable))
        # One sample's miss per candidate ratio, over all samples at once: every candidate is
        # tried against every sample (a run of 2,000 compactions: 4M misses), so not in Python.
        summarized, sizes, budgets = np.array(usable, dtype=np.float64).T
        caps = np.floor(fill * budgets)

        def miss(ratio: float) -> float:
            modelled = np.maximum(1.0, np.minimum(caps, np.floor(ratio * summarized)))
            return float(np.abs(modelled - sizes).sum())

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
    message). ``static_tokens`` is what every request carries whatever the history: the static
    context's messages and the reply's priming. ``preload_max_tokens`` ``None`` preloads all of
    MEMORY.md.
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
    strategy: Strategy = field(default_factory=get_strategy)
    trigger: Trigger | None = None
    """The run's trigger when it was more than the threshold (a message count beside it, or
    several conditions: ``extra["trigger"]``); a given threshold replaces it."""
    keep_turn: bool = False
    """Whether each compaction kept the turn in progress (``extra["keep_turn"]`` of the latest
    record; a record without it did not: the seed's compaction, as a run without records is
    replayed, and as the fast engine models it)."""
    hook_kept: tuple[Mapping[str, Any], ...] = ()
    """The entries the run's ``before_compaction`` hooks kept (``extra["hooks"]["kept"]``: role
    and timestamp), which the replay keeps where it meets them, without the callback."""
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
        """A copy with ``changes``, validated and marked ``"given"``: the one way to change a
        setting. A change of ``None`` (or :data:`RECORDED`) keeps the current value, except
        ``preload_max_tokens=None``, which removes the bound (as the keyword means everywhere).
        A bound that is the Agent's rule follows the new window and threshold."""
        wanted = {
            k: v
            for k, v in changes.items()
            if v is not RECORDED and (v is not None or k == "preload_max_tokens")
        }
        known = {f.name for f in fields(self)}
        unknown = sorted(set(wanted) - known)
        if unknown:
            raise InvalidSetting(f"RunSettings has no field(s) {unknown}; known: {sorted(known)}")
        if "threshold" in wanted:
            wanted["threshold"] = validate_threshold(wanted["threshold"])
        for name, least in _COUNTS.items():
            if name in wanted:
                wanted[name] = check_int(name, wanted[name], least)
        bound = wanted.get("preload_max_tokens")
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int)):
            raise InvalidSetting(
                f"preload_max_tokens must be an int >= 1 or None (no bound), not {bound!r}"
            )
        if bound is not None and bound < 1:
            raise InvalidSetting(f"preload_max_tokens must be >= 1, not {bound}")
        if "restarts" in wanted:
            wanted["restarts"] = _restart_times(wanted["restarts"])
        if "reply_roles" in wanted:
            wanted["reply_roles"] = tuple(wanted["reply_roles"])
        if "strategy" in wanted:
            wanted["strategy"] = get_strategy(wanted["strategy"])
        if "keep_turn" in wanted and not isinstance(wanted["keep_turn"], bool):
            raise InvalidSetting(
                f"keep_turn must be True, False or None (the record's), not {wanted['keep_turn']!r}"
            )
        if "threshold" in wanted and "trigger" not in wanted:
            # the threshold given is the whole trigger now, deferred as the run's was
            timing = None if self.trigger is None else self.trigger.cache
            wanted["trigger"] = (
                None if timing is None else replace(Trigger.of(wanted["threshold"]), cache=timing)
            )
        origin = {**self.origin, **dict.fromkeys(wanted, "given")}
        out = replace(self, **wanted, origin=origin)
        if out.source_of("preload_max_tokens") == "default":
            rule = default_preload_max_tokens(out.context_length, out.threshold)
            out = replace(out, preload_max_tokens=rule)
        return out

    def describe(self) -> str:
        """One line: the settings and where they came from."""
        threshold = threshold_text(self.threshold)
        parts = [
            (f"threshold {threshold}" if isinstance(self.threshold, float) else threshold)
            + f" ({self.source_of('threshold')})",
            f"window {self.context_length:,} tokens ({self.source_of('context_length')})",
            f"summaries by {self.summarizer or 'memorylab/extractive'} within "
            f"{self.summarizer_max_tokens:,} tokens ({self.source_of('summarizer_max_tokens')})",
            f"static context {self.static_tokens:,} tokens ({self.source_of('static_tokens')})",
            f"checks: {self.checks} ({self.source_of('checks')})",
            f"{len(self.restarts)} restart(s) ({self.source_of('restarts')})",
            # which tokenizer counts and whose prices the costs are: a report that counts the
            # files as another model says so elsewhere, and the two must not be confused
            (
                f"tokens and prices as {self.token_model} ({self.source_of('token_model')})"
                if self.token_model
                else "tokens as cl100k_base, no prices (no model recorded)"
            ),
        ]
        if self.trigger is not None:
            parts[0] = f"trigger {self.trigger.text()} ({self.source_of('trigger')})"
        if self.strategy.record() is not None:  # the summary strategy goes without saying
            parts.insert(2, f"strategy {self.strategy.describe()} ({self.source_of('strategy')})")
        if self.keep_turn:
            parts.insert(2, f"turn in progress kept ({self.source_of('keep_turn')})")
        return "; ".join(parts)


# --------------------------------------------------------------------------- reading a run


def run_settings(
    transcript: TranscriptSource,
    *,
    restart_gap: timedelta | None = DEFAULT_RESTART_GAP,
    model: str | None = None,
) -> RunSettings:
    """The :class:`RunSettings` of one agent's run (see the module docstring).

    ``transcript``: an agent folder or memory file, an agent's record, a
    :func:`~memorylab.analysis.memory_df` frame of one agent (its record found by its ``file``
    column, :func:`~memorylab.analysis.AgentRecord`), or a list of ``{"role", "content"[,
    "timestamp"]}`` messages (nothing recorded: only inferred). ``restart_gap`` ``None`` infers
    no restart from gaps. ``model`` counts the summary entries' fixed overhead (default: the
    recorded tokenizer).
    """
    frame, data, record = _read_run(transcript)
    return _settings_of(frame, data, record, restart_gap, model)


def _read_run(transcript: TranscriptSource) -> tuple[Any, Transcript, AgentRecord | None]:
    """The frame of a transcript source, its transcript (checked: one agent, the columns) and
    the agent's record (``None``: messages, or a frame of files no longer there)."""
    from memorylab.analysis._transcript import as_transcript

    record = None
    if isinstance(transcript, str | os.PathLike | AgentRecord):
        records = load_records(transcript)
        record = records[0] if len(records) == 1 else None
        transcript = memory_df(records)  # several agents: as_transcript says so
    data = as_transcript(transcript)
    if record is None and hasattr(transcript, "columns"):
        record = record_of_frame(transcript)
    return transcript, data, record


def _settings_of(
    frame: Any,
    data: Transcript,
    record: AgentRecord | None,
    restart_gap: timedelta | None,
    model: str | None,
) -> RunSettings:
    """:func:`run_settings` of a run read (:func:`_read_run`)."""
    records = [] if record is None else list(record.compactions)
    agent = record.agent if record is not None else _agent_of(frame)
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
    from memorylab.compress._compressor import ContextCompressor

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
    length = recorded("context_length", (recorded_count(r.get("context_length")) for r in records))
    values["context_length"] = length or DEFAULT_CONTEXT_LENGTH
    values["summarizer"] = recorded("summarizer", (r.get("summarizer_model") for r in records))
    values["token_model"] = recorded("token_model", (e.get("token_model") for e in extras))

    maximum = recorded(
        "summarizer_max_tokens", (recorded_count(e.get("summarizer_max_tokens")) for e in extras)
    )
    if maximum is None:
        outputs = [recorded_count(e.get("summary_output_tokens")) for e in extras]
        capped = [o for o in outputs if o]
        if len(capped) >= 2 and max(capped) <= 1.15 * min(capped):  # summaries at a cap
            maximum, origin["summarizer_max_tokens"] = max(capped), "inferred"
    values["summarizer_max_tokens"] = maximum or ContextCompressor().summarizer_max_tokens

    static = recorded("static_tokens", (recorded_count(e.get("static_tokens")) for e in extras))
    if static is None:
        gaps = [
            after - summary
            for r in records
            if (after := recorded_count(r.get("tokens_after"))) is not None
            and (summary := recorded_count(r.get("summary_tokens"))) is not None
            and not recorded_count(r.get("carried_over"))
        ]
        if gaps:
            static, origin["static_tokens"] = max(0, int(statistics.median(gaps))), "inferred"
    values["static_tokens"] = REPLY_TOKENS if static is None else static  # a request's least

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
        values["preload_max_tokens"] = recorded_count(preloads[-1])
        if values["preload_max_tokens"] != rule:  # else: the Agent's rule, which follows the
            origin["preload_max_tokens"] = "recorded"  # window and threshold of a what-if

    values["restarts"], origin["restarts"] = _restarts(records, extras, transcript, restart_gap)
    triggers = [dict(e["trigger"]) for e in extras if isinstance(e.get("trigger"), Mapping)]
    trigger = _latest_rebuilt("trigger", Trigger.from_dict, triggers)
    if trigger is not None:  # the latest, as the strategy: one setting of the run
        values["trigger"], origin["trigger"] = trigger, "recorded"
    strategies = [r["strategy"] for r in records if r.get("strategy") is not None]
    strategy = _latest_rebuilt("strategy", strategy_from_record, strategies)
    if strategy is not None:  # the latest: a run's strategy is one setting, as its threshold is
        values["strategy"], origin["strategy"] = strategy, "recorded"
    if extras:  # the latest, as the strategy; a record without it kept no turn (older files)
        values["keep_turn"], origin["keep_turn"] = extras[-1].get("keep_turn") is True, "recorded"
    values["hook_kept"] = tuple(
        mark
        for e in extras
        if isinstance(hooks := e.get("hooks"), Mapping) and isinstance(hooks.get("kept"), list)
        for mark in hooks["kept"]
        if isinstance(mark, Mapping)
    )
    values["recorded_archives"] = tuple(
        None if r.get("archive") is None else str(r["archive"]) for r in records
    )
    values["recorded_tokens"] = tuple(recorded_count(r.get("tokens_before")) for r in records)
    values["recorded_times"] = tuple(record_time(r.get("time")) for r in records)
    budget = ContextCompressor(
        values["threshold"], summarizer_max_tokens=values["summarizer_max_tokens"]
    ).summary_budget(values["context_length"])
    values["summary_size"] = _recorded_sizes(
        records, extras, values["static_tokens"], budget, model or values["token_model"]
    )
    if values["summary_size"] is not None:
        origin["summary_size"] = "recorded"
    return RunSettings(**values, origin=origin)


def _latest_rebuilt(name: str, rebuild: Callable[[Any], _Setting], recorded: Sequence[Any]) -> (
    _Setting | None
):  # fmt: skip
    """The latest of the ``recorded`` settings (of one field of ``compactions.jsonl``) that
    ``rebuild`` accepts; one it refuses (edited by hand, or naming a strategy this process has
    not registered) is passed over, and logged once: a record never fails a reader."""
    for value in reversed(recorded):
        try:
            return rebuild(value)
        except InvalidSetting as error:
            if (name, str(error)) not in _PASSED_OVER:
                _PASSED_OVER.add((name, str(error)))
                logger.warning("memorylab: a recorded %s passed over: %s", name, error)
    return None


def _agent_of(frame: Any) -> str | None:
    """The agent of a frame whose record was not found (an export read back): its column."""
    if hasattr(frame, "columns") and "agent" in frame.columns and len(frame):
        return str(frame["agent"].iloc[0])
    return None


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

    from memorylab.analysis._transcript import positions

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
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    found = set(positions(transcript, [epoch + timedelta(microseconds=m) for m in spans]))
    kind = "recorded" if spans else "default"
    if gap is not None and len(micros) > 1:
        kind = "recorded+inferred" if spans else "inferred"
        limit = gap // timedelta(microseconds=1)
        for position in np.flatnonzero(np.diff(micros) >= limit) + 1:
            when = int(micros[position])
            if not any(first < when <= last for first, last in spans.items()):
                found.add(int(position))
    return tuple(stamps[p] for p in sorted(found)), kind


def _recorded_sizes(
    records: Sequence[Mapping[str, Any]],
    extras: Sequence[Mapping[str, Any]],
    static: int,
    budget: int,
    model: str | None,
) -> SummarySize | None:
    from memorylab.analysis._transcript import memo_counter, summary_overhead

    overhead = summary_overhead(memo_counter(model))
    samples = [
        summary_sample(
            recorded_count(record.get("tokens_before")),
            recorded_count(record.get("tokens_after")),
            recorded_count(record.get("summary_tokens")),
            recorded_count(extra.get("summary_budget")),
            static=static,
            overhead=overhead,
            budget=budget,
        )
        for record, extra in zip(records, extras, strict=True)
    ]
    return SummarySize.fit(sample for sample in samples if sample is not None)


def summary_sample(
    before: int | None,
    after: int | None,
    entry: int | None,
    asked: int | None,
    *,
    static: int,
    overhead: int,
    budget: int,
) -> tuple[int, int, int] | None:
    """One compaction as :meth:`SummarySize.fit` takes it, ``(summarized, summary, budget)``
    (``None``: its tokens were not recorded): the context before it less the static context and
    what it kept beside the summary (``after`` less the static context and the summary entry:
    the turn in progress, pinned entries), the summary entry's text (``entry`` less its
    ``overhead``) and the budget it was asked for (``asked``, the recorded ``summary_budget``,
    which the kept entries' tokens lowered; else ``budget``)."""
    if before is None or entry is None:
        return None
    kept = 0 if after is None else max(0, after - static - entry)
    return before - static - kept, entry - overhead, asked or budget


# --------------------------------------------------------------------------- preparing a run

_NOT_TAKEN = {
    "token_growth": (
        "max_summary_tokens", "system_prompt", "checks", "strategy", "keep_turn", "cache_timing"
    ),
    "sweep": ("threshold", "context_length", "strategy", "keep_turn"),  # sweep(strategies=[...])
}


@dataclass
class PreparedRun:
    """A transcript with its settings, where its checks fall and where its processes start."""

    transcript: Transcript
    settings: RunSettings
    checks: np.ndarray[Any, np.dtype[np.bool_]]
    restarts: list[int]
    counter: MemoCounter
    system_prompt: str | None
    name: str
    compactions: dict[int, tuple[datetime, str]] = field(default_factory=dict)
    """The recorded time and archive of the compaction at the check after message ``i`` (a
    replay that compacts where the run did stamps its summary and names its archive as the run
    did, so the next process's preload is the same text)."""
    created: datetime | None = None
    """When the first MEMORY.md was created (its header), if the files say."""
    conversation_names: Sequence[str | None] = ()
    """Per message, the ``**Conversation:**`` of the file that holds it (each process of the
    reference's Agent names the files it creates after its own id), if the files say."""
    drift: dict[int, float] | None = None
    """For a run whose trigger counted the provider's reported usage (``count="reported"``),
    per check (after message ``i``) the ratio billed / estimated input of the last call the run
    recorded before it in the same process (``usage.jsonl``): what the replay multiplies its
    estimate by there (:func:`_recorded_drift`). ``None`` for a trigger of the estimate."""
    record: AgentRecord | None = None
    """The agent's record, where the run was read from one (its files, compactions, calls)."""

    @property
    def model(self) -> str | None:
        return self.settings.token_model

    def name_at(self, index: int) -> str:
        """The conversation name in the header of the MEMORY.md a process starting at message
        ``index`` preloads: the recorded file's that holds the message, else ``name``."""
        names = self.conversation_names
        recorded = names[index] if 0 <= index < len(names) else None
        return recorded or self.name

    def head(self, count: int) -> PreparedRun:
        """The run of the first ``count`` messages (a calibration prefix)."""
        from memorylab.analysis._transcript import Transcript

        part = self.transcript
        sliced = Transcript(part.roles[:count], part.contents[:count], part.utc_us[:count])
        return replace(
            self,
            transcript=sliced,
            checks=self.checks[:count],
            restarts=[r for r in self.restarts if r < count],
            conversation_names=self.conversation_names[:count],
            compactions={i: t for i, t in self.compactions.items() if i < count},
            drift=None
            if self.drift is None
            else {i: r for i, r in self.drift.items() if i < count},
        )

    def at(self, context_length: int, threshold: Threshold) -> PreparedRun:
        """The run at another window and threshold."""
        given = self.settings.given(context_length=context_length, threshold=threshold)
        return replace(self, settings=given)


def prepare_run(
    transcript: TranscriptSource,
    settings: RunSettings | None,
    overrides: RunOverrides,
    function: str = "replay",
) -> PreparedRun:
    """The run a public function runs over: ``settings`` (default: the record's) with the
    ``overrides`` of ``function``."""
    import numpy as np

    from memorylab.analysis._transcript import memo_counter, positions, system_tokens

    taken = set(RunOverrides.__annotations__) - set(_NOT_TAKEN.get(function, ()))
    for name in overrides:
        if name not in taken:
            raise TypeError(f"{function}() got an unexpected keyword argument {name!r}")
    frame, data, record = _read_run(transcript)
    model, gap = overrides.get("model"), overrides.get("restart_gap", DEFAULT_RESTART_GAP)
    if settings is None:
        settings = _settings_of(frame, data, record, gap, model)
    system_prompt, restarts = overrides.get("system_prompt"), overrides.get("restarts")
    if overrides.get("static_tokens") is not None and system_prompt is not None:
        raise InvalidSetting(
            "give static_tokens (what the static context counted) or system_prompt (its text), "
            "not both"
        )
    settings = settings.given(
        threshold=overrides.get("threshold"),
        context_length=overrides.get("context_length"),
        summarizer_max_tokens=overrides.get("max_summary_tokens"),
        static_tokens=overrides.get("static_tokens"),
        checks=overrides.get("checks"),
        token_model=model,
        restarts=None if restarts is None or restarts is True else restarts or (),
        preload_max_tokens=overrides.get("preload_max_tokens", RECORDED),
        strategy=overrides.get("strategy"),
        keep_turn=overrides.get("keep_turn"),
    )
    timing = overrides.get("cache_timing")
    if timing is not None:
        base = Trigger.of(settings.threshold if settings.trigger is None else settings.trigger)
        settings = settings.given(trigger=replace(base, cache=timing))
    if overrides.get("checks") == "model_call" and not settings.reply_roles:
        raise InvalidSetting(
            "checks='model_call' needs the role of the model's replies, and no message has the "
            "agent's name or 'assistant' as its role; use checks='message'"
        )
    trigger_tokens(settings.context_length, settings.threshold)  # validates the pair
    counter = memo_counter(settings.token_model)
    if system_prompt:  # what every request carries: the prompt's message, the reply's priming
        prompt_tokens = system_tokens(counter, system_prompt)
        settings = settings.given(static_tokens=prompt_tokens + REPLY_TOKENS)
    if settings.checks == "model_call":
        marks = check_points(data.roles, set(settings.reply_roles))
    else:
        marks = [True] * len(data)
    starts = positions(data, settings.restarts)
    run = PreparedRun(
        data,
        settings,
        np.array(marks, dtype=bool),
        starts,
        counter,
        system_prompt or None,
        f"{settings.agent}_conversation" if settings.agent else "replay",
        *_recorded_compactions(frame, record, settings),
        record=record,
    )
    if settings.trigger is not None and settings.trigger.reported:
        calls = () if record is None else record.calls
        run.drift = _recorded_drift(calls, data, starts, run.checks)
    return run


def _recorded_drift(
    usage: Sequence[UsageRecord],
    transcript: Transcript,
    restarts: Sequence[int],
    checks: np.ndarray[Any, np.dtype[np.bool_]],
) -> dict[int, float]:
    """Per check (after message ``i``), billed / estimated input of the last recorded call
    before it in the same process: a call's record is stamped with its reply's time, so the
    calls before the check are those stamped at or before message ``i``, and those of its
    process at or after the process's first message. Checks with no such call are left out
    (the run counted its estimate there too: nothing was reported yet)."""
    import bisect

    calls = sorted(
        (to_micros(call.time), 1.0 + call.drift) for call in usage if call.drift is not None
    )
    times = [when for when, _ in calls]
    micros = transcript.utc_us
    starts = sorted(set(restarts))
    out: dict[int, float] = {}
    for index in (int(i) for i in checks.nonzero()[0]):
        before = bisect.bisect_right(starts, index) - 1
        begun = int(micros[starts[before]]) if before >= 0 else None
        last = bisect.bisect_right(times, int(micros[index])) - 1
        if last >= 0 and (begun is None or times[last] >= begun):
            out[index] = calls[last][1]
    return out


def _recorded_compactions(
    frame: Any, record: AgentRecord | None, settings: RunSettings
) -> tuple[dict[int, tuple[datetime, str]], datetime | None, Sequence[str | None]]:
    """Per recorded compaction, the transcript index (summaries left out) of the last message
    it archived, with its recorded time and archive; the first file's creation time; and per
    message (summaries left out) the conversation name of its file's header (the record's
    files as parsed)."""
    import numpy as np

    from memorylab.analysis._transcript import summary_rows

    if not (hasattr(frame, "columns") and "file" in frame.columns and len(frame)):
        return {}, None, ()
    if "timeline" in frame.columns:
        frame = frame.sort_values("timeline", kind="stable")
    files = frame["file"].astype(str).to_numpy(dtype=object)
    headers: dict[str, fmt.ParsedFile | None] = {}
    for path in dict.fromkeys(files.tolist()):  # each file once, in timeline order
        segment = None if record is None else record.segment(path)
        headers[path] = None if segment is None else segment.parsed
    first = headers[files[0]]
    created = None if first is None else first.created
    summary = summary_rows(frame)
    named = {p: None if h is None else h.conversation_name for p, h in headers.items()}
    names = [named[p] for p in files[~summary].tolist()]
    if not settings.recorded_times:
        return {}, created, names
    index = np.cumsum(~summary) - 1  # each row's place in the transcript without summaries
    last: dict[str, int] = {}  # per file name, the transcript index of its last message
    rows = zip(files.tolist(), index.tolist(), summary.tolist(), strict=True)
    for path, place, is_summary in rows:
        if not is_summary:
            last[os.path.basename(path)] = place
    out: dict[int, tuple[datetime, str]] = {}
    for archive, when in zip(settings.recorded_archives, settings.recorded_times, strict=True):
        if archive is not None and when is not None and archive in last:
            out[last[archive]] = (when, archive)
    return out, created, names


def _restart_times(restarts: Iterable[datetime | str]) -> tuple[datetime, ...]:
    """Restart times given as datetimes or ISO-8601 strings (a naive one is local time)."""
    out = []
    for value in restarts:
        try:
            micros = to_micros(value)
        except (TypeError, ValueError):
            raise InvalidSetting(
                f"restarts holds {value!r}: give the first message time of each new process as "
                "a datetime or an ISO-8601 string, restarts=False for one process, or None for "
                "the recorded ones"
            ) from None
        out.append(datetime.fromtimestamp(micros / 1e6, UTC))
    return tuple(out)
