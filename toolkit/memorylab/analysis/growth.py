"""Token growth across compactions, replays of a transcript under other settings, and sweeps.

* :func:`token_growth` — from the files: per message, the context the agent held (the static
  context, then the summary or, after a restart, the bounded preload of MEMORY.md, then the
  messages since), the trigger and the compaction points. Where ``compactions.jsonl`` recorded
  ``tokens_before``, the peaks are the recorded figures.
* :func:`replay` — run a real :class:`~memorylab.compress.compressor.ContextCompressor` over a
  transcript in fresh in-memory :class:`~memorylab.Conversation` objects (no file is read after
  the transcript is loaded, none is written).
* :func:`sweep` — one row per (context length, threshold): compactions, peak context, the input
  tokens the model read, summarizer calls and tokens, the estimated cost and, given facts, how
  many survive. Exact replays by default when they fit in a few seconds; ``fast=True`` models
  the summaries' sizes (:mod:`memorylab.analysis._fast`), calibrated against exact replays.

One engine (docs/analysis.md, "How the replay decides"): every run takes its settings from the
record (:func:`memorylab.analysis.runs.run_settings`; arguments override), checks where the
:class:`~memorylab.Agent` checks (:func:`memorylab.agent.check_points`: before every model call),
decides with the compressor's own ``compress`` / ``summary_budget``, counts the static context's
recorded tokens, and starts every new process with the bounded preload of the MEMORY.md it would
have found (:func:`memorylab.memory.preload.plan_preload`). Tokens are counted as
:meth:`memorylab.Conversation.token_count` counts them (``[<ts>] Role: content`` per message,
``"\\n\\n"`` between messages). Summaries made during replays are cached (keyed by the
summarizer's name, model and budget and a hash of the messages it summarized); pass
``cache=False`` for a summarizer that is not deterministic.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from numbers import Integral
from typing import TYPE_CHECKING, Any

from memorylab.analysis.runs import DEFAULT_RESTART_GAP, RunSettings, SummarySize
from memorylab.compress.base import Summarizer, Summary
from memorylab.compress.policy import Threshold, trigger_tokens
from memorylab.errors import InvalidSetting
from memorylab.memory import format as fmt
from memorylab.memory.records import SUMMARY_PREFIX, CompactionEvent, Message

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from memorylab.analysis import _fast
    from memorylab.analysis._transcript import MemoCounter, Transcript

__all__ = [
    "DEFAULT_THRESHOLDS",
    "EXACT_SECONDS",
    "ReplayResult",
    "SWEEP_HEADINGS",
    "replay",
    "sweep",
    "sweep_note",
    "sweep_table",
    "token_growth",
]

DEFAULT_THRESHOLDS: tuple[float, ...] = (0.5, 0.6, 0.7, 0.8, 0.9)
"""The thresholds :func:`sweep` tries when none are given (with the recorded one)."""

EXACT_SECONDS = 3.0
""":func:`sweep` replays every setting exactly when that is estimated to take at most this long
(and the summarizer runs locally); else it sweeps fast, calibrated against exact replays."""

CALIBRATION_SECONDS = 0.6
"""What a fast sweep's calibration may spend (estimated) on its exact replays, by default: the
whole transcript when that fits, else its start (at least :data:`CALIBRATION_COMPACTIONS`
compactions of each calibration setting)."""

CALIBRATION_COMPACTIONS = 2

# The estimate behind EXACT_SECONDS (an extractive replay on a laptop: about 20 µs a message and
# 4 µs a summarized token); it only chooses a mode, nothing is asserted about it.
_SECONDS_PER_MESSAGE = 2e-5
_SECONDS_PER_SUMMARIZED_TOKEN = 4e-6


class _Unset:
    def __repr__(self) -> str:
        return "<recorded>"


_RECORDED: Any = _Unset()


# --------------------------------------------------------------------------- preparing a run


@dataclass
class _Run:
    """A transcript with its settings, where its checks fall and where its processes start."""

    transcript: Transcript
    settings: RunSettings
    checks: np.ndarray[Any, np.dtype[np.bool_]]
    restarts: list[int]
    counter: MemoCounter
    model: str | None
    system_prompt: str | None
    name: str
    compactions: dict[int, tuple[datetime, str]] = field(default_factory=dict)
    """The recorded time and archive of the compaction at the check after message ``i`` (a
    replay that compacts where the run did stamps its summary and names its archive as the run
    did, so the next process's preload is the same text)."""
    created: datetime | None = None
    """When the first MEMORY.md was created (its header), if the files say."""

    def head(self, count: int) -> _Run:
        """The run of the first ``count`` messages (a calibration prefix)."""
        from memorylab.analysis._transcript import Transcript

        part = self.transcript
        sliced = Transcript(part.roles[:count], part.contents[:count], part.utc_us[:count])
        return _Run(
            sliced,
            self.settings,
            self.checks[:count],
            [r for r in self.restarts if r < count],
            self.counter,
            self.model,
            self.system_prompt,
            self.name,
            {i: t for i, t in self.compactions.items() if i < count},
            self.created,
        )


def _prepare(
    transcript: Any,
    settings: RunSettings | None,
    *,
    threshold: Threshold | None = None,
    context_length: int | None = None,
    model: str | None = None,
    max_summary_tokens: int | None = None,
    static_tokens: int | None = None,
    system_prompt: str | None = None,
    restarts: Iterable[datetime | str] | bool | None = None,
    checks: str | None = None,
    preload_max_tokens: Any = _RECORDED,
    restart_gap: timedelta | None = DEFAULT_RESTART_GAP,
) -> _Run:
    import numpy as np

    from memorylab.agent import check_points
    from memorylab.analysis._transcript import as_transcript, memo_counter, positions
    from memorylab.analysis.runs import _from_records, run_settings

    frame = transcript
    if isinstance(transcript, str | os.PathLike):
        from memorylab.analysis.frames import memory_df

        frame = memory_df(transcript)
    data = as_transcript(frame)
    if settings is None:
        if hasattr(frame, "columns"):
            settings = run_settings(frame, restart_gap=restart_gap, model=model)
        else:
            settings = _from_records([], data, agent=None, restart_gap=restart_gap, model=model)
    if static_tokens is not None and system_prompt is not None:
        raise InvalidSetting(
            "give static_tokens (what the static context counted) or system_prompt (its text), "
            "not both"
        )
    if static_tokens is not None and (isinstance(static_tokens, bool) or static_tokens < 0):
        raise InvalidSetting(f"static_tokens must be an int >= 0, not {static_tokens!r}")
    changes: dict[str, Any] = {
        "threshold": threshold,
        "context_length": context_length,
        "summarizer_max_tokens": max_summary_tokens,
        "static_tokens": static_tokens,
        "checks": checks,
        "token_model": model,
    }
    if restarts is False:
        changes["restarts"] = ()
    elif restarts is not None and restarts is not True:
        changes["restarts"] = _restart_times(restarts)
    if preload_max_tokens is not _RECORDED and preload_max_tokens is not None:
        if isinstance(preload_max_tokens, bool) or not isinstance(preload_max_tokens, int):
            raise InvalidSetting(
                f"preload_max_tokens must be an int >= 1 or None (no bound), not "
                f"{preload_max_tokens!r}"
            )
        if preload_max_tokens < 1:
            raise InvalidSetting(f"preload_max_tokens must be >= 1, not {preload_max_tokens}")
    settings = settings.given(**changes)
    if preload_max_tokens is not _RECORDED:
        settings = _with(settings, preload_max_tokens=preload_max_tokens)
    elif settings.source_of("preload_max_tokens") == "default":
        settings = _default_preload(settings)
    if checks == "model_call" and not settings.reply_roles:
        raise InvalidSetting(
            "checks='model_call' needs the role of the model's replies, and no message has the "
            "agent's name or 'assistant' as its role; use checks='message'"
        )
    trigger_tokens(settings.context_length, settings.threshold)  # validates the pair
    counter = memo_counter(settings.token_model)
    if system_prompt:
        stamp = data.stamps[0] if len(data) else "2000-01-01T00:00:00.000000+00:00"
        prompt_tokens = counter(fmt.history_line("System", system_prompt, stamp))
        settings = settings.given(static_tokens=prompt_tokens + counter("\n\n"))
    if settings.checks == "model_call":
        marks = check_points(data.roles, set(settings.reply_roles))
    else:
        marks = [True] * len(data)
    name = f"{settings.agent}_conversation" if settings.agent else "replay"
    return _Run(
        data,
        settings,
        np.array(marks, dtype=bool),
        positions(data, settings.restarts),
        counter,
        settings.token_model,
        system_prompt or None,
        name,
        *_recorded_compactions(frame, settings),
    )


def _recorded_compactions(
    frame: Any, settings: RunSettings
) -> tuple[dict[int, tuple[datetime, str]], datetime | None]:
    """Per recorded compaction, the transcript index (summaries left out) of the last message
    it archived, with its recorded time and archive; and the first file's creation time."""
    import numpy as np

    from memorylab.memory.store import read_memory

    if not (hasattr(frame, "columns") and "file" in frame.columns and len(frame)):
        return {}, None
    if "timeline" in frame.columns:
        frame = frame.sort_values("timeline", kind="stable")
    created = None
    try:
        created = read_memory(str(frame["file"].iloc[0]), strict=False).document.created
    except (OSError, ValueError):
        created = None
    if not settings.recorded_times:
        return {}, created
    if "timeline" in frame.columns:
        frame = frame.sort_values("timeline", kind="stable")
    summary = (
        frame["is_summary"].to_numpy(dtype=bool)
        if "is_summary" in frame.columns
        else frame["content"].astype(str).str.startswith(SUMMARY_PREFIX).to_numpy(dtype=bool)
    )
    names = np.array([os.path.basename(str(f)) for f in frame["file"].tolist()], dtype=object)
    index = np.cumsum(~summary) - 1  # each row's place in the transcript without summaries
    out: dict[int, tuple[datetime, str]] = {}
    for archive, when in zip(settings.recorded_archives, settings.recorded_times, strict=True):
        rows = np.flatnonzero((names == archive) & ~summary)
        if archive is not None and when is not None and len(rows):
            out[int(index[rows[-1]])] = (when, archive)
    return out, created


def _restart_times(restarts: Iterable[datetime | str]) -> tuple[datetime, ...]:
    """Restart times given as datetimes or ISO-8601 strings (a naive one is local time)."""
    from memorylab.analysis._transcript import to_micros

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


def _default_preload(settings: RunSettings) -> RunSettings:
    """The Agent's preload bound for the settings' window and threshold (nothing recorded)."""
    from dataclasses import replace

    from memorylab.agent import default_preload_max_tokens

    bound = default_preload_max_tokens(settings.context_length, settings.threshold)
    return replace(settings, preload_max_tokens=bound)


def _with(settings: RunSettings, **values: Any) -> RunSettings:
    """``values`` set as given (``None`` included: :meth:`RunSettings.given` skips it)."""
    from dataclasses import replace

    origin = {**settings.origin, **dict.fromkeys(values, "given")}
    return replace(settings, **values, origin=origin)


# --------------------------------------------------------------------------- token growth


def token_growth(
    df: pd.DataFrame,
    *,
    context_length: int | None = None,
    threshold: Threshold | None = None,
    model: str | None = None,
    static_tokens: int | None = None,
    restarts: Iterable[datetime | str] | bool | None = None,
    preload_max_tokens: Any = _RECORDED,
    restart_gap: timedelta | None = DEFAULT_RESTART_GAP,
) -> pd.DataFrame:
    """Per message of ``df`` (from :func:`memory_df`), the context the agent held.

    Every setting comes from the agent's record (:func:`~memorylab.analysis.runs.run_settings`;
    the arguments override it): the window and threshold, the tokenizer, the static context's
    tokens, the restarts and the preload bound. A segment (one file) starts with the static
    context and the summary row; a restart (a new process) with the static context and the
    bounded preload of MEMORY.md as it stood (the rule :class:`~memorylab.Conversation` follows).

    Columns: ``workspace``, ``agent`` (when ``df`` has them), ``timeline``, ``segment``,
    ``session`` (the process: 0, 1 ... after each restart), ``role``, ``is_summary``, ``tokens``
    (of the message as read), ``context_tokens``, ``trigger``, ``context_length``,
    ``compaction`` (True on the last message before each compaction: the peaks), ``restart``
    (the first message of a new process) and ``recorded_tokens`` (the ``tokens_before`` the
    record holds, on the compaction rows). Where a compaction's ``tokens_before`` was recorded,
    ``context_tokens`` of its row is that figure.
    """
    import numpy as np
    import pandas as pd

    keys = [c for c in ("workspace", "agent") if c in df.columns]
    frame = df.sort_values([*keys, "timeline"], kind="stable") if "timeline" in df else df
    frame = frame.reset_index(drop=True)
    parts = (
        [part for _, part in frame.groupby(keys, sort=False, observed=True)]
        if keys and len(frame)
        else [frame]
    )
    pieces = [
        _growth_of(
            part,
            keys,
            context_length=context_length,
            threshold=threshold,
            model=model,
            static_tokens=static_tokens,
            restarts=restarts,
            preload_max_tokens=preload_max_tokens,
            restart_gap=restart_gap,
        )
        for part in parts
    ]
    out = pd.concat(pieces, ignore_index=True) if pieces else pd.DataFrame()
    out["recorded_tokens"] = out["recorded_tokens"].astype("Int64")
    for column in ("compaction", "restart", "is_summary"):
        out[column] = out[column].astype(bool)
    out["context_tokens"] = out["context_tokens"].astype(np.int64)
    return out


def _growth_of(part: pd.DataFrame, keys: list[str], **options: Any) -> pd.DataFrame:
    import numpy as np
    import pandas as pd

    from memorylab.analysis._transcript import entry_tokens, from_frame, positions

    count = len(part)
    run = _prepare(
        part,
        None,
        threshold=options["threshold"],
        context_length=options["context_length"],
        model=options["model"],
        static_tokens=options["static_tokens"],
        restarts=options["restarts"],
        preload_max_tokens=options["preload_max_tokens"],
        restart_gap=options["restart_gap"],
    )
    settings = run.settings
    trigger = trigger_tokens(settings.context_length, settings.threshold)
    counted = entry_tokens(part, settings.token_model)
    tokens, separator = counted.tokens, counted.separator
    segment = (
        part["segment"].to_numpy(dtype=np.int64) if "segment" in part else np.zeros(count, np.int64)
    )
    everything = from_frame(part.assign(timeline=np.arange(count)), drop_summaries=False)
    restart = np.zeros(count, dtype=bool)
    restart[positions(everything, settings.restarts)] = True
    new_segment = np.ones(count, dtype=bool)
    if count:
        new_segment[1:] = segment[1:] != segment[:-1]
    restart &= ~new_segment
    static = settings.static_tokens
    base = np.full(count, static - separator, dtype=np.int64)
    for at in np.flatnonzero(restart):
        entry = _file_preload(part, int(at), everything, run)
        if entry:
            base[at] = static + entry
    starts = new_segment | restart
    first = np.maximum.accumulate(np.where(starts, np.arange(count), 0)) if count else segment
    cumulative = np.cumsum(tokens + separator)
    before = (cumulative - tokens - separator)[first] if count else cumulative
    context = base[first] + cumulative - before if count else cumulative
    compaction = np.zeros(count, dtype=bool)
    if count:
        compaction[:-1] = new_segment[1:]
    recorded = pd.array([pd.NA] * count, dtype="Int64")
    if count and "file" in part.columns and settings.recorded_archives:
        names = [os.path.basename(str(f)) for f in part["file"].tolist()]
        by_archive = dict(zip(settings.recorded_archives, settings.recorded_tokens, strict=True))
        for row in np.flatnonzero(compaction):
            value = by_archive.get(names[row])
            if value is not None:
                recorded[row] = value
                context[row] = value
    out: dict[str, Any] = {key: part[key].to_numpy() for key in keys}
    out.update(
        timeline=part["timeline"].to_numpy() if "timeline" in part else np.arange(count),
        segment=segment,
        session=np.cumsum(restart),
        role=part["role"].to_numpy() if "role" in part else None,
        is_summary=part["is_summary"].to_numpy(dtype=bool)
        if "is_summary" in part
        else np.zeros(count, dtype=bool),
        tokens=tokens,
        context_tokens=context.astype(np.int64),
        trigger=np.full(count, trigger, dtype=np.int64),
        context_length=np.full(count, settings.context_length, dtype=np.int64),
        compaction=compaction,
        restart=restart,
        recorded_tokens=recorded,
    )
    return pd.DataFrame(out)


def _file_preload(part: pd.DataFrame, at: int, everything: Transcript, run: _Run) -> int:
    """Tokens of the preload entry a process starting at row ``at`` read: MEMORY.md as it stood
    (the row's file up to that row, read again from disk when it can be, else rendered from the
    rows), planned as :class:`~memorylab.Conversation` plans it."""
    from dataclasses import replace

    from memorylab.analysis._transcript import memory_text, preload_content
    from memorylab.memory.store import read_memory

    text: str | None = None
    if "file" in part.columns and "position" in part.columns:
        try:
            doc = read_memory(str(part["file"].iloc[at]), strict=False).document
            position = int(part["position"].iloc[at])
            text = fmt.render_memory(replace(doc, messages=doc.messages[:position]))
        except (OSError, ValueError):
            text = None
    if text is None:
        segment = part["segment"].to_numpy() if "segment" in part else None
        start = at
        while start > 0 and (segment is None or segment[start - 1] == segment[at]):
            start -= 1
        whens = everything.datetimes()
        messages = [
            Message(everything.roles[i], everything.contents[i], whens[i]) for i in range(start, at)
        ]
        text = memory_text(messages, name=run.name, created=whens[start], continues=None)
    content = preload_content(text, max_tokens=run.settings.preload_max_tokens, counter=run.counter)
    if content is None:
        return 0
    return run.counter(fmt.history_line("System", content, everything.stamps[at]))


# --------------------------------------------------------------------------- replay


@dataclass
class ReplayResult:
    """What a replay did: the per-message ``timeline``, the compaction ``events`` (failed
    attempts included, ``event.ok`` False), the context at the end and the settings it ran at.

    ``total_input_tokens`` is the context the model read at every check (every model call, as
    the Agent checks; every message with ``checks="message"``); ``peak_context_tokens`` the
    largest context reached, before a check.
    """

    timeline: pd.DataFrame
    events: list[CompactionEvent]
    final_context: str
    threshold: Threshold
    context_length: int
    trigger: int
    model: str | None
    summarizer: str
    summaries: list[Summary] = field(default_factory=list)
    summarizer_calls: int = 0
    summarizer_input_tokens: int = 0
    summarizer_cost_usd: float = 0.0
    settings: RunSettings | None = None

    @property
    def compactions(self) -> int:
        return sum(1 for event in self.events if event.ok)

    @property
    def peak_context_tokens(self) -> int:
        return int(self.timeline["context_tokens"].max()) if len(self.timeline) else 0

    @property
    def total_input_tokens(self) -> int:
        timeline = self.timeline
        return int(timeline["context_after"][timeline["check"]].sum())

    @property
    def summary_tokens(self) -> int:
        return sum(event.summary_tokens or 0 for event in self.events if event.ok)

    @property
    def restarts(self) -> int:
        return int(self.timeline["restart"].sum())

    def fact_survival(self, facts: Iterable[str]) -> float:
        """The fraction of ``facts`` (strings) found in the final context."""
        wanted = list(facts)
        if not wanted:
            return math.nan
        return sum(1 for fact in wanted if fact in self.final_context) / len(wanted)

    def __repr__(self) -> str:
        return (
            f"ReplayResult(messages={len(self.timeline)}, compactions={self.compactions}, "
            f"peak_context_tokens={self.peak_context_tokens}, trigger={self.trigger}, "
            f"context_length={self.context_length})"
        )


def replay(
    transcript: Any,
    *,
    threshold: Threshold | None = None,
    context_length: int | None = None,
    summarizer: str | Summarizer | None = None,
    model: str | None = None,
    max_summary_tokens: int | None = None,
    system_prompt: str | None = None,
    static_tokens: int | None = None,
    restarts: Iterable[datetime | str] | bool | None = None,
    checks: str | None = None,
    preload_max_tokens: Any = _RECORDED,
    summary_size: SummarySize | None = None,
    settings: RunSettings | None = None,
    restart_gap: timedelta | None = DEFAULT_RESTART_GAP,
    cache: bool | MutableMapping[str, Summary] = True,
    progress: bool | None = None,
) -> ReplayResult:
    """Replay ``transcript`` through a :class:`ContextCompressor` (see the module docstring).

    ``transcript``: a :func:`memory_df` frame of one agent, a list of ``{"role", "content"}``
    dicts (``"timestamp"`` optional), or the path of an agent folder or memory file; summary
    rows are left out (the replay writes its own). Every setting defaults to the record
    (:func:`~memorylab.analysis.runs.run_settings`, or ``settings``); the arguments override
    it: ``threshold`` and ``context_length``; ``summarizer`` (default: the recorded one when it
    runs offline, else the extractive one); ``max_summary_tokens`` (the compressor's
    ``summarizer_max_tokens``: it asks for at most half the trigger); ``static_tokens`` or
    ``system_prompt`` (the static context); ``restarts`` (``False``: one process; or the first
    message time of each new one); ``checks`` (``"model_call"`` or ``"message"``);
    ``preload_max_tokens`` (``None``: preload all of MEMORY.md); ``summary_size`` (ask the
    summarizer for summaries of this modelled size instead of the budget; default: the
    recorded sizes when the replay's summarizer is not the recorded one); ``model`` picks the
    tokenizer. Nothing is read or written on disk.
    """
    run = _prepare(
        transcript,
        settings,
        threshold=threshold,
        context_length=context_length,
        model=model,
        max_summary_tokens=max_summary_tokens,
        static_tokens=static_tokens,
        system_prompt=system_prompt,
        restarts=restarts,
        checks=checks,
        preload_max_tokens=preload_max_tokens,
        restart_gap=restart_gap,
    )
    chosen = _summarizer(summarizer, run, summary_size)
    return _exact(run, chosen, cache=cache, progress=progress)


class _StaticCounter:
    """The run's counter, with the static context's placeholder entry counted at the recorded
    tokens (the system prompt and rules are not in the files: only their count is)."""

    def __init__(self, counter: MemoCounter, placeholder: str, tokens: int) -> None:
        self.counter, self.placeholder, self.tokens = counter, placeholder, tokens
        self.model = counter.model

    def __call__(self, text: str) -> int:
        return self.tokens if text.endswith(self.placeholder) else self.counter(text)

    count = __call__

    def count_batch(self, texts: Sequence[str], num_threads: int | None = None) -> list[int]:
        counts = self.counter.count_batch([t for t in texts if not t.endswith(self.placeholder)])
        found = iter(counts)
        return [self.tokens if t.endswith(self.placeholder) else next(found) for t in texts]


def _exact(
    run: _Run,
    summarizer: _CachedSummarizer | Summarizer,
    *,
    cache: bool | MutableMapping[str, Summary] = True,
    progress: bool | None = None,
) -> ReplayResult:
    """The replay: each process a fresh :class:`Conversation` with its static context and
    preload, a :class:`ContextCompressor` checking where the run checked."""
    import numpy as np
    import pandas as pd

    from memorylab.analysis import _fast, _progress
    from memorylab.analysis._transcript import memory_text, preload_content
    from memorylab.compress.compressor import ContextCompressor
    from memorylab.memory.conversation import Conversation

    data, settings = run.transcript, run.settings
    length, threshold = settings.context_length, settings.threshold
    trigger = trigger_tokens(length, threshold)
    store: MutableMapping[str, Summary] | None
    store = _SUMMARY_CACHE if cache is True else (None if cache is False else cache)
    cached = _CachedSummarizer(summarizer, store)
    whens = data.datetimes()
    stamps = data.stamps
    now: list[datetime] = [whens[0] if whens else datetime.now().astimezone()]
    counter: Any = run.counter
    static_text = run.system_prompt
    separator = run.counter("\n\n")
    if static_text is None and settings.static_tokens > 0:
        static_text = (
            f"[memorylab: the static context (system prompt, rules), {settings.static_tokens:,} "
            "tokens; its text is not in the files]"
        )
        counter = _StaticCounter(run.counter, static_text, settings.static_tokens - separator)
    compressors: list[ContextCompressor] = []

    def start(preload: str | None, stamp: str) -> Conversation:
        conversation = Conversation(
            name=run.name,
            system_prompt=static_text,
            memory_md_path=None,
            preload=False,
            token_counter=counter,
            clock=lambda: now[0],
            redact=None,
        )
        if preload is not None:  # as Conversation preloads a file: one System entry
            conversation.conversation_history.append(
                {"role": "System", "content": preload, "timestamp": stamp, "kind": "preload"}
            )
        compressors.append(
            ContextCompressor(
                threshold, summarizer=cached, summarizer_max_tokens=settings.summarizer_max_tokens
            )
        )
        return conversation

    count = len(data)
    context = np.zeros(count, dtype=np.int64)
    after = np.zeros(count, dtype=np.int64)
    compaction = np.zeros(count, dtype=bool)
    segment = np.zeros(count, dtype=np.int64)
    session = np.zeros(count, dtype=np.int64)
    restart = np.zeros(count, dtype=bool)
    restart[run.restarts] = True
    checks = run.checks
    conversation = start(None, stamps[0] if count else "")
    memory: list[Message] = []  # the replay's MEMORY.md since its last compaction
    created = run.created or (whens[0] if count else now[0])
    continues: str | None = None
    done = processes = 0
    bar = _progress.bar(count, "replay", "msg", progress)
    for index in range(count):
        now[0] = whens[index]
        if restart[index]:
            text = memory_text(memory, name=run.name, created=created, continues=continues)
            preload = preload_content(
                text, max_tokens=settings.preload_max_tokens, counter=run.counter
            )
            conversation = start(preload, stamps[index])
            processes += 1
        role, content = data.roles[index], data.contents[index]
        conversation.add(role, content)
        memory.append(Message(role, content, whens[index]))
        context[index] = after[index] = conversation.token_count()
        segment[index], session[index] = done, processes
        if checks[index]:
            when, archive = run.compactions.get(index, (whens[index], None))
            now[0] = when
            event = compressors[-1].compress(conversation, length)
            if event is not None and event.ok:
                compaction[index] = True
                done += 1
                after[index] = conversation.token_count()
                entry = next(
                    e for e in conversation.conversation_history if e.get("kind") == "summary"
                )
                memory = [Message(str(entry["role"]), str(entry["content"]), when)]
                created, continues = when, archive or fmt.archive_name(when)
        bar.update(1)
    bar.close()
    timeline = pd.DataFrame(
        {
            "timeline": np.arange(count, dtype=np.int64),
            "segment": segment,
            "session": session,
            "role": pd.Categorical(data.roles),
            "tokens": data.tokens(run.counter),
            "context_tokens": context,
            "compaction": compaction,
            "context_after": after,
            "check": checks.copy(),
            "restart": restart,
            "trigger": np.full(count, trigger, np.int64),
            "context_length": np.full(count, length, np.int64),
        }
    )
    made = cached.made
    summaries = [summary for summary, _ in made]
    input_tokens = sum(
        s.input_tokens if s.input_tokens is not None else run.counter(text) for s, text in made
    )
    cost = 0.0
    for summary, text in made:
        if summary.cost_usd is not None:
            cost += summary.cost_usd
        else:
            out = summary.output_tokens
            if out is None:
                out = run.counter(summary.text)
            cost += _fast.price(summary.model, summary.input_tokens or run.counter(text), out)
    final = conversation.return_history_as_string()
    return ReplayResult(
        timeline=timeline,
        events=[event for compressor in compressors for event in compressor.events],
        final_context=final,
        threshold=threshold,
        context_length=length,
        trigger=trigger,
        model=run.model,
        summarizer=cached.name,
        summaries=summaries,
        summarizer_calls=sum(s.chunks for s in summaries),
        summarizer_input_tokens=int(input_tokens),
        summarizer_cost_usd=cost,
        settings=settings,
    )


# --------------------------------------------------------------------------- sweep


def sweep(
    transcript: Any,
    thresholds: Iterable[Threshold] | None = None,
    context_lengths: Iterable[int] | None = None,
    *,
    summarizer: str | Summarizer | None = None,
    model: str | None = None,
    fast: bool | None = None,
    summary_size: SummarySize | None = None,
    summary_ratio: float | None = None,
    max_summary_tokens: int | None = None,
    facts: Sequence[str] | None = None,
    system_prompt: str | None = None,
    static_tokens: int | None = None,
    restarts: Iterable[datetime | str] | bool | None = None,
    checks: str | None = None,
    preload_max_tokens: Any = _RECORDED,
    settings: RunSettings | None = None,
    restart_gap: timedelta | None = DEFAULT_RESTART_GAP,
    calibrate: bool | float | None = None,
    replay_at: Iterable[Threshold] = (),
    cache: bool | MutableMapping[str, Summary] = True,
    progress: bool | None = None,
) -> pd.DataFrame:
    """One row per (context length, threshold) setting (see docs/analysis.md).

    The recorded setting is added to the grid when its window is swept, and marked (``recorded``
    True); ``thresholds`` default to :data:`DEFAULT_THRESHOLDS`, ``context_lengths`` to the
    recorded window. Every
    other setting is :func:`replay`'s (the same arguments, the same defaults from the record).

    Columns: ``context_length``, ``threshold``, ``trigger``, ``mode`` (``"replay"`` or
    ``"fast"``), ``recorded``, ``messages``, ``compactions``, ``peak_context_tokens`` (the
    largest context reached, before a check), ``total_input_tokens`` (the context the model read
    at every check), ``summarizer_calls``, ``summarizer_input_tokens``, ``summary_tokens`` (of
    the summary entries), ``estimated_cost_usd`` (input tokens at ``model``'s price plus the
    summarizer's tokens at its price, from litellm's map; NaN when unknown) and
    ``fact_survival`` when ``facts`` are given.

    ``fast``: ``None`` replays every setting exactly when that fits in :data:`EXACT_SECONDS`
    (and the summarizer runs locally), else sweeps fast; ``True`` makes no summaries: each is
    ``summary_size`` tokens (a :class:`~memorylab.analysis.runs.SummarySize`; ``summary_ratio``
    is the shorthand ``SummarySize(ratio=summary_ratio)``; default: fitted on the calibration
    replays, else the recorded sizes), and a fact survives when a message after the last
    compaction still quotes it. ``calibrate`` (default: when the summarizer runs locally; a
    number: the seconds it may spend, default :data:`CALIBRATION_SECONDS`) replays up to three
    settings exactly (the whole transcript when that fits, else its start) and measures the
    fast mode against them: ``frame.attrs["calibration"]`` holds the rows,
    ``frame.attrs["error"]`` the largest differences, and :func:`sweep_note` says it in a line.
    ``replay_at``: thresholds replayed exactly even in a fast sweep (their rows' ``mode`` is
    ``"replay"``: a view that shows one setting's replay beside the table).
    """
    import pandas as pd

    from memorylab.analysis import _progress

    run = _prepare(
        transcript,
        settings,
        model=model,
        max_summary_tokens=max_summary_tokens,
        static_tokens=static_tokens,
        system_prompt=system_prompt,
        restarts=restarts,
        checks=checks,
        preload_max_tokens=preload_max_tokens,
        restart_gap=restart_gap,
    )
    recorded = _recorded_setting(run.settings)
    lengths = (
        list(context_lengths) if context_lengths is not None else [run.settings.context_length]
    )
    grid = _settings(list(thresholds or DEFAULT_THRESHOLDS), lengths, recorded)
    wanted = list(facts) if facts is not None else None
    if summary_ratio is not None:
        if summary_size is not None:
            raise InvalidSetting("give summary_size or summary_ratio, not both")
        if not (isinstance(summary_ratio, int | float) and 0 < summary_ratio <= 1):
            raise InvalidSetting(f"summary_ratio must be within (0, 1], not {summary_ratio!r}")
        summary_size = SummarySize(ratio=float(summary_ratio))
    chosen = _summarizer(summarizer, run, None)
    local = _is_local(chosen)
    size = summary_size or _default_size(run, chosen) or SummarySize()
    fast_engine = _FastEngine(run, size)
    mode = "fast" if fast else "replay"
    if fast is None:
        estimate = sum(
            fast_engine.cost_estimate(length, threshold) for length, threshold, _ in grid
        )
        mode = "replay" if local and estimate <= EXACT_SECONDS else "fast"
    rows: list[dict[str, Any]] = []
    calibration: list[dict[str, Any]] = []
    if mode == "replay":
        bar = _progress.bar(len(grid), "sweep", "setting", progress)
        for length, threshold, trigger in grid:
            rows.append(_exact_row(run, length, threshold, trigger, chosen, cache, wanted))
            bar.update(1)
        bar.close()
    else:
        if calibrate is None:
            calibrate = local
        if calibrate:
            seconds = CALIBRATION_SECONDS if calibrate is True else float(calibrate)
            calibration, fitted = _calibrate(
                run, grid, recorded, chosen, fast_engine, seconds, cache
            )
            if summary_size is None and fitted is not None:
                fast_engine = _FastEngine(run, fitted)
                calibration = _measure(run, calibration, fast_engine)
        rows = fast_engine.rows(grid, wanted, _summarizer_model(summarizer, chosen))
        exactly = list(replay_at)
        for place, (length, threshold, trigger) in enumerate(grid):
            if any(_same(threshold, t) for t in exactly):
                rows[place] = _exact_row(run, length, threshold, trigger, chosen, cache, wanted)
    for row in rows:
        row["recorded"] = recorded is not None and (row["context_length"], row["threshold"]) == (
            recorded[0],
            recorded[1],
        )
    frame = pd.DataFrame(rows)
    order = ["context_length", "threshold", "trigger", "mode", "recorded"]
    frame = frame[order + [c for c in frame.columns if c not in order]]
    if not all(isinstance(row["threshold"], float) for row in rows):  # keep 3000 an int (tokens)
        frame["threshold"] = pd.Series([row["threshold"] for row in rows], dtype=object)
    frame.attrs["settings"] = run.settings.describe()
    frame.attrs["summarizer"] = _name_of(chosen)
    if mode == "fast":
        frame.attrs["summary_size"] = str(fast_engine.size)
        frame.attrs["calibration"] = calibration
        frame.attrs["error"] = _errors(calibration, len(run.transcript))
    return frame


def sweep_note(frame: pd.DataFrame) -> str:
    """One line on how a :func:`sweep` table was made and, for a fast one, its measured error."""
    summarizer = frame.attrs.get("summarizer", "the summarizer")
    if "mode" not in frame.columns or not len(frame) or (frame["mode"] == "replay").all():
        return f"Every setting replayed exactly (summaries by {summarizer})."
    size = frame.attrs.get("summary_size", "modelled")
    error = frame.attrs.get("error") or {}
    if not error:
        return (
            f"Fast sweep: summaries modelled as {size}; its error was not measured "
            "(calibrate=True replays a few settings exactly to measure it)."
        )
    return (
        f"Fast sweep: summaries modelled as {size}. Against exact replays ({summarizer}) of "
        f"{_extent(error)} at {error['settings']} setting(s): compactions within "
        f"±{error['compactions']} ({error['compactions_pct']:.0f} %), peak context within "
        f"{error['peak_pct']:.1f} %."
    )


def _threshold_text(value: Any) -> str:
    """A threshold as people read it: a fraction of the window with two decimals (``0.50``,
    ``0.85``), a token count with separators (``3,000 tokens``)."""
    if isinstance(value, bool) or value is None:
        return ""
    if isinstance(value, Integral):
        return f"{int(value):,} tokens"
    number = float(value)
    return "" if math.isnan(number) else f"{number:.2f}"


def _count_text(value: Any) -> str:
    return "" if value is None or _missing(value) else f"{int(value):,}"


def _usd_text(value: Any) -> str:
    """Dollars with four decimals (a sweep's costs are cents: ``$0.0149``), ``–`` when unknown."""
    return "–" if value is None or _missing(value) else f"${float(value):,.4f}"


def _share_text(value: Any) -> str:
    return "" if value is None or _missing(value) else f"{float(value):.0%}"


def _missing(value: Any) -> bool:
    import pandas as pd

    return bool(pd.isna(value))


SWEEP_HEADINGS: Mapping[str, tuple[str, Callable[[Any], str]]] = {
    "context_length": ("window (tokens)", _count_text),
    "threshold": ("threshold", _threshold_text),
    "trigger": ("compacts at (tokens)", _count_text),
    "mode": ("mode", str),
    "messages": ("messages", _count_text),
    "compactions": ("compactions", _count_text),
    "peak_context_tokens": ("peak context (tokens)", _count_text),
    "total_input_tokens": ("input tokens read", _count_text),
    "summarizer_calls": ("summarizer calls", _count_text),
    "summarizer_input_tokens": ("summarizer input tokens", _count_text),
    "summary_tokens": ("summary tokens", _count_text),
    "estimated_cost_usd": ("est. cost (USD)", _usd_text),
    "fact_survival": ("facts kept", _share_text),
}
"""Each :func:`sweep` column shown by :func:`sweep_table`: its heading and its one format."""


def sweep_table(frame: pd.DataFrame, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """A :func:`sweep` frame to read: human headings, one number format per column (thresholds
    ``0.85``, counts ``12,345``, costs ``$0.0149``), and a first column naming the agent's own
    setting. The values are text; ``frame`` keeps its columns for computing (this is the table
    the report shows, and what a notebook displays)."""
    import pandas as pd

    chosen = [c for c in (columns or SWEEP_HEADINGS) if c in frame.columns and c in SWEEP_HEADINGS]
    shown = pd.DataFrame(
        {SWEEP_HEADINGS[c][0]: [SWEEP_HEADINGS[c][1](v) for v in frame[c]] for c in chosen},
        index=frame.index,
    )
    if "recorded" in frame.columns:
        marks = ["the agent's setting" if bool(r) else "" for r in frame["recorded"]]
        shown.insert(0, "", marks)
    return shown.reset_index(drop=True)


def _extent(error: Mapping[str, Any]) -> str:
    if error.get("whole"):
        return "the whole transcript"
    return f"the first {error['messages']:,} messages"


def _recorded_setting(settings: RunSettings) -> tuple[int, Threshold] | None:
    if settings.source_of("threshold") == "recorded":
        return settings.context_length, settings.threshold
    return None


def _at(run: _Run, length: int, threshold: Threshold) -> _Run:
    from dataclasses import replace

    settings = run.settings.given(context_length=length, threshold=threshold)
    if run.settings.source_of("preload_max_tokens") == "default":
        settings = _default_preload(settings)
    return replace(run, settings=settings)


def _same(one: Threshold, other: Threshold) -> bool:
    return type(one) is type(other) and abs(float(one) - float(other)) < 1e-9


def _exact_row(
    run: _Run,
    length: int,
    threshold: Threshold,
    trigger: int,
    summarizer: Summarizer,
    cache: bool | MutableMapping[str, Summary],
    facts: list[str] | None,
) -> dict[str, Any]:
    """A sweep row from an exact replay of the setting."""
    result = _exact(_at(run, length, threshold), summarizer, cache=cache, progress=False)
    row = _row(length, threshold, trigger, "replay", len(run.transcript), result=result)
    row["estimated_cost_usd"] = (
        _price(run.model, result.total_input_tokens) + result.summarizer_cost_usd
    )
    if facts is not None:
        row["fact_survival"] = result.fact_survival(facts)
    return row


def _row(
    length: int,
    threshold: Threshold,
    trigger: int,
    mode: str,
    messages: int,
    *,
    result: ReplayResult,
) -> dict[str, Any]:
    return {
        "context_length": length,
        "threshold": threshold,
        "trigger": trigger,
        "mode": mode,
        "messages": messages,
        "compactions": result.compactions,
        "peak_context_tokens": result.peak_context_tokens,
        "total_input_tokens": result.total_input_tokens,
        "summarizer_calls": result.summarizer_calls,
        "summarizer_input_tokens": result.summarizer_input_tokens,
        "summary_tokens": result.summary_tokens,
    }


class _FastEngine:
    """The fast sweep of one run: the replay's rules on token counts, summaries of ``size``."""

    def __init__(self, run: _Run, size: SummarySize) -> None:
        from memorylab.analysis import _fast
        from memorylab.analysis._transcript import separator_tokens, summary_overhead

        self.run, self.size = run, size
        data = run.transcript
        counter = run.counter
        self.tokens = data.tokens(counter)
        self.prefix = _fast.Prefix.of(self.tokens, separator_tokens(counter), run.checks)
        stamp = data.stamps[0] if len(data) else "2000-01-01T00:00:00.000000+00:00"
        self.overhead = summary_overhead(counter, stamp)
        self.whens = data.datetimes()
        self._preloads: dict[tuple[Any, ...], int] = {}

    def simulate(
        self, run: _Run, length: int, threshold: Threshold, stop_after: int | None = None
    ) -> _fast.Outcome:
        from memorylab.analysis import _fast
        from memorylab.compress.compressor import ContextCompressor

        settings = _at(run, length, threshold).settings
        compressor = ContextCompressor(
            threshold, summarizer_max_tokens=settings.summarizer_max_tokens
        )
        prefix = self.prefix
        if len(run.transcript) != prefix.count:
            prefix = _fast.Prefix.of(
                self.tokens[: len(run.transcript)], prefix.separator, run.checks
            )
        return _fast.simulate(
            prefix,
            compressor.trigger_tokens(length),
            overhead=self.overhead,
            size=self.size,
            budget=compressor.summary_budget(length),
            static_tokens=settings.static_tokens,
            restarts=run.restarts,
            preload=lambda *at: self._preload(settings.preload_max_tokens, *at),
            stop_after=stop_after,
            keep_points=True,
        )

    def _preload(
        self, bound: int | None, summary: int | None, at: int, start: int, end: int
    ) -> int:
        """The preload entry's tokens: the real bounded preload of the MEMORY.md the fast run
        would have (a summary of ``summary`` tokens, then the messages since)."""
        from memorylab.analysis._transcript import memory_text, preload_content

        key = (bound, summary, at, start, end)
        found = self._preloads.get(key)
        if found is not None:
            return found
        data, counter, whens = self.run.transcript, self.run.counter, self.whens
        messages = []
        if summary is not None:
            text = f"{SUMMARY_PREFIX} " + " ".join(["x"] * summary)
            messages.append(Message("System", text, whens[at]))
        messages += [Message(data.roles[i], data.contents[i], whens[i]) for i in range(start, end)]
        created = whens[at] if summary is not None else whens[0]
        continues = fmt.archive_name(whens[at]) if summary is not None else None
        text = memory_text(messages, name=self.run.name, created=created, continues=continues)
        content = preload_content(text, max_tokens=bound, counter=counter)
        tokens = (
            0 if content is None else counter(fmt.history_line("System", content, data.stamps[end]))
        )
        self._preloads[key] = tokens
        return tokens

    def cost_estimate(self, length: int, threshold: Threshold) -> float:
        """Seconds an exact replay of this setting is estimated to take (chooses the mode)."""
        outcome = self.simulate(self.run, length, threshold)
        return (
            self.prefix.count * _SECONDS_PER_MESSAGE
            + outcome.summarizer_input_tokens * _SECONDS_PER_SUMMARIZED_TOKEN
        )

    def rows(
        self,
        grid: list[tuple[int, Threshold, int]],
        facts: list[str] | None,
        priced: str | None,
    ) -> list[dict[str, Any]]:
        import numpy as np

        run = self.run
        last = _last_mentions(run.transcript, facts) if facts else None
        rows = []
        for length, threshold, trigger in grid:
            outcome = self.simulate(run, length, threshold)
            row = {
                "context_length": length,
                "threshold": threshold,
                "trigger": trigger,
                "mode": "fast",
                "messages": len(run.transcript),
                "compactions": outcome.compactions,
                "peak_context_tokens": outcome.peak_context_tokens,
                "total_input_tokens": outcome.total_input_tokens,
                "summarizer_calls": outcome.compactions,
                "summarizer_input_tokens": outcome.summarizer_input_tokens,
                "summary_tokens": outcome.summary_tokens + outcome.compactions * self.overhead,
                "estimated_cost_usd": _price(run.model, outcome.total_input_tokens)
                + _price(priced, outcome.summarizer_input_tokens, outcome.summary_tokens),
            }
            if facts is not None:
                row["fact_survival"] = (
                    float(np.mean(last >= outcome.final_start))
                    if last is not None and len(last)
                    else math.nan
                )
            rows.append(row)
        return rows


def _calibrate(
    run: _Run,
    grid: list[tuple[int, Threshold, int]],
    recorded: tuple[int, Threshold] | None,
    summarizer: Summarizer,
    engine: _FastEngine,
    seconds: float,
    cache: bool | MutableMapping[str, Summary],
) -> tuple[list[dict[str, Any]], SummarySize | None]:
    """Exact replays of up to three settings (the recorded one, the lowest and the highest
    threshold at the first window), within ``seconds`` (estimated) together: each of the whole
    transcript when that fits, else of its start; the summary sizes they made, fitted."""
    from memorylab.analysis._transcript import summary_overhead
    from memorylab.compress.compressor import ContextCompressor

    first = grid[0][0]
    at_first = sorted(
        (t for length, t, _ in grid if length == first), key=lambda t: trigger_tokens(first, t)
    )
    chosen: list[tuple[int, Threshold]] = []
    for pick in (recorded, (first, at_first[0]), (first, at_first[-1])):
        if pick is not None and pick not in chosen and any((w, t) == pick for w, t, _ in grid):
            chosen.append(pick)
    rows: list[dict[str, Any]] = []
    samples: list[tuple[int, int, int]] = []
    overhead = summary_overhead(run.counter, run.transcript.stamps[0]) if len(run.transcript) else 0
    for length, threshold in chosen:
        end = _calibration_end(engine.simulate(run, length, threshold), seconds / len(chosen))
        head = run.head(min(len(run.transcript), end))
        result = _exact(_at(head, length, threshold), summarizer, cache=cache, progress=False)
        budget = ContextCompressor(
            threshold, summarizer_max_tokens=head.settings.summarizer_max_tokens
        ).summary_budget(length)
        static = _at(head, length, threshold).settings.static_tokens
        for event in result.events:
            if event.ok and event.tokens_before is not None and event.summary_tokens is not None:
                samples.append(
                    (event.tokens_before - static, event.summary_tokens - overhead, budget)
                )
        rows.append(
            {
                "context_length": length,
                "threshold": threshold,
                "messages": len(head.transcript),
                "exact_compactions": result.compactions,
                "exact_peak_context_tokens": result.peak_context_tokens,
            }
        )
    calibration = _measure(run, rows, engine)
    return calibration, SummarySize.fit(samples)


def _calibration_end(outcome: _fast.Outcome, seconds: float) -> int:
    """How many messages a calibration replay runs: all when its estimated cost fits in
    ``seconds``, else up to the last compaction that fits (at least the first few)."""
    ends: list[tuple[float, int]] = []
    summarized = 0
    for point, tokens in zip(outcome.points, outcome.summarized, strict=True):
        summarized += tokens
        cost = (point + 1) * _SECONDS_PER_MESSAGE + summarized * _SECONDS_PER_SUMMARIZED_TOKEN
        ends.append((cost, point + 2))
    total = outcome.messages * _SECONDS_PER_MESSAGE
    total += outcome.summarizer_input_tokens * _SECONDS_PER_SUMMARIZED_TOKEN
    if total <= seconds or not ends:
        return outcome.messages
    fitting = [end for cost, end in ends if cost <= seconds]
    least = ends[min(CALIBRATION_COMPACTIONS, len(ends)) - 1][1]
    return max([least, *fitting])


def _measure(run: _Run, rows: list[dict[str, Any]], engine: _FastEngine) -> list[dict[str, Any]]:
    """The fast mode's figures next to the exact ones, on the same messages and settings."""
    out = []
    for row in rows:
        head = run.head(int(row["messages"]))
        outcome = engine.simulate(head, int(row["context_length"]), row["threshold"])
        out.append(
            {
                **row,
                "fast_compactions": outcome.compactions,
                "fast_peak_context_tokens": outcome.peak_context_tokens,
            }
        )
    return out


def _errors(calibration: list[dict[str, Any]], messages: int) -> dict[str, Any]:
    if not calibration:
        return {}
    return {
        "compactions": max(
            abs(r["fast_compactions"] - r["exact_compactions"]) for r in calibration
        ),
        "compactions_pct": max(
            100
            * abs(r["fast_compactions"] - r["exact_compactions"])
            / max(1, r["exact_compactions"])
            for r in calibration
        ),
        "exact_compactions": max(r["exact_compactions"] for r in calibration),
        "peak_pct": max(
            100
            * abs(r["fast_peak_context_tokens"] - r["exact_peak_context_tokens"])
            / max(1, r["exact_peak_context_tokens"])
            for r in calibration
        ),
        "messages": max(r["messages"] for r in calibration),
        "whole": all(r["messages"] >= messages for r in calibration),
        "settings": len(calibration),
    }


# --------------------------------------------------------------------------- summarizers


def _price(model: str | None, prompt: float, completion: float = 0) -> float:
    from memorylab.analysis._fast import price

    return price(model, prompt, completion)


_CACHE_LIMIT = 4096
_SUMMARY_CACHE: OrderedDict[str, Summary] = OrderedDict()
"""Summaries made by replays, most recently used last (at most 4096)."""


def _summary_key(summarizer: Summarizer, messages: Sequence[Mapping[str, Any]], budget: Any) -> str:
    digest = hashlib.blake2b(digest_size=20)
    head = f"{summarizer.name}\x1f{getattr(summarizer, 'model', None)}\x1f{budget}\x1e"
    digest.update(head.encode("utf-8", "surrogatepass"))
    for message in messages:
        text = fmt.content_to_text(message.get("content"))
        part = f"{message.get('role')}\x1f{message.get('timestamp')}\x1f{text}\x1e"
        digest.update(part.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


class _CachedSummarizer:
    """Wraps a summarizer: answers a history it has summarized before from the cache."""

    def __init__(self, inner: Summarizer, cache: MutableMapping[str, Summary] | None) -> None:
        self.inner = inner
        self.name = inner.name
        self.cache = cache
        self.calls = 0
        self.made: list[tuple[Summary, str]] = []  # (summary, rendered input) per compaction

    def summarize(
        self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None
    ) -> Summary:
        key = _summary_key(self.inner, messages, max_tokens) if self.cache is not None else ""
        summary = self.cache.get(key) if self.cache is not None else None
        if summary is None:
            summary = self.inner.summarize(messages, max_tokens=max_tokens)
            self.calls += 1
            if self.cache is not None:
                self.cache[key] = summary
                if isinstance(self.cache, OrderedDict) and len(self.cache) > _CACHE_LIMIT:
                    self.cache.popitem(last=False)
        elif isinstance(self.cache, OrderedDict):
            self.cache.move_to_end(key)
        rendered = fmt.history_text(messages) if summary.input_tokens is None else ""
        self.made.append((summary, rendered))
        return summary


class _SizedRequest:
    """Asks ``inner`` for summaries of a modelled size (:class:`SummarySize`) instead of the
    compressor's whole budget."""

    def __init__(self, inner: Summarizer, size: SummarySize, counter: MemoCounter) -> None:
        self.inner, self.size, self.counter = inner, size, counter
        self.name = inner.name
        self.model = getattr(inner, "model", None)
        self.local = getattr(inner, "local", False)

    def summarize(
        self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None
    ) -> Summary:
        lines = fmt.history_lines(messages)
        summarized = sum(self.counter(line) for line in lines)
        summarized += max(0, len(lines) - 1) * self.counter("\n\n")
        budget = max_tokens if max_tokens is not None else summarized
        asked = max(int(getattr(self.inner, "min_tokens", 1)), self.size.tokens(summarized, budget))
        return self.inner.summarize(messages, max_tokens=asked)


def _summarizer(spec: str | Summarizer | None, run: _Run, size: SummarySize | None) -> Summarizer:
    """The replay's summarizer: ``spec``, else the recorded one when it runs offline, else the
    extractive one; asked for summaries of ``size`` (default: the recorded sizes, when the
    summarizer is not the one that made them)."""
    from memorylab.compress.compressor import ContextCompressor
    from memorylab.compress.summarizers import get_summarizer

    recorded = run.settings.summarizer
    if spec is None:
        spec = recorded if _runs_offline(recorded) else "memorylab/extractive"
    chosen: Summarizer
    if isinstance(spec, str):  # built as the live compressor builds it from a name
        compressor = ContextCompressor(
            summarizer_model=spec, summarizer_max_tokens=run.settings.summarizer_max_tokens
        )
        chosen = compressor.summarizer_for()
    else:
        chosen = get_summarizer(spec)
    if size is None and recorded is not None and chosen.name != recorded:
        size = run.settings.summary_size
    return _SizedRequest(chosen, size, run.counter) if size is not None else chosen


def _runs_offline(name: str | None) -> bool:
    """Whether a recorded summarizer name is a registered one that calls no model."""
    from memorylab.compress.summarizers import get_summarizer, summarizer_names

    if name is None or name not in summarizer_names():
        return False
    try:
        return bool(getattr(get_summarizer(name), "local", False))
    except Exception:  # a user's factory that needs arguments: not rebuilt by name
        return False


def _default_size(run: _Run, summarizer: Summarizer) -> SummarySize | None:
    """The fast mode's summary sizes before any calibration: the recorded ones."""
    return run.settings.summary_size


def _is_local(summarizer: Summarizer) -> bool:
    return bool(getattr(summarizer, "local", False))


def _name_of(summarizer: Summarizer) -> str:
    return str(getattr(summarizer, "name", "summarizer"))


def _settings(
    thresholds: list[Threshold], context_lengths: list[int], recorded: tuple[int, Threshold] | None
) -> list[tuple[int, Threshold, int]]:
    out: list[tuple[int, Threshold, int]] = []
    for length in context_lengths:
        for threshold in thresholds:
            if (
                isinstance(threshold, int)
                and not isinstance(threshold, bool)
                and threshold > length
            ):
                continue  # an absolute threshold above the window can never fire: left out
            out.append((int(length), threshold, trigger_tokens(length, threshold)))
    swept = {int(length) for length in context_lengths}
    if recorded is not None and recorded[0] in swept and all((w, t) != recorded for w, t, _ in out):
        length, threshold = recorded
        trigger = trigger_tokens(length, threshold)
        place = len(out)
        for index, (window, _, t) in enumerate(out):  # after the window's smaller triggers
            if window == length and t > trigger:
                place = index
                break
            if window > length:
                place = index
                break
        out.insert(place, (length, threshold, trigger))
    if not out:
        raise InvalidSetting("no valid (context_length, threshold) combination to sweep")
    return out


def _last_mentions(transcript: Transcript, facts: Sequence[str]) -> Any:
    """Per fact, the index of the last message that contains it (-1: none)."""
    import numpy as np

    last = np.full(len(facts), -1, dtype=np.int64)
    for f, fact in enumerate(facts):
        for index in range(len(transcript) - 1, -1, -1):
            if fact in transcript.contents[index]:
                last[f] = index
                break
    return last


def _summarizer_model(spec: str | Summarizer | None, chosen: Summarizer) -> str | None:
    if spec is None:
        return _name_of(chosen)
    if isinstance(spec, str):
        return spec
    return getattr(spec, "model", None) or spec.name
