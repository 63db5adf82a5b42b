"""Replays: a real :class:`~memorylab.compress._compressor.ContextCompressor` over a transcript,
in fresh in-memory :class:`~memorylab.Conversation` objects (nothing read after the transcript is
loaded, nothing written), at the run's settings unless told otherwise (:mod:`.runs`). One engine
(docs/analysis.md, "How the replay decides"): checks where the Agent checks
(:func:`~memorylab.compress._policy.check_points`), the compressor's own decisions, the static
context at its recorded tokens, every new process with the bounded preload of the MEMORY.md it
would have found; tokens counted as :meth:`memorylab.Conversation.token_count` counts them.
Summaries are cached (:mod:`._summarizers`; ``cache=False`` for one that is not deterministic).
A run whose trigger counted the provider's reported usage (``Trigger(count="reported")``) is
replayed with its recorded drift applied to the estimate at each check (the billed / estimated
input of the last call it recorded before the check, ``usage.jsonl``), and says so in
:meth:`ReplayResult.notes`.
"""

from __future__ import annotations

import math
import statistics
import warnings
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Unpack

from memorylab.analysis._runs import RunOverrides, RunSettings, SummarySize, TranscriptSource
from memorylab.compress import _cache_model as cache_model
from memorylab.compress._base import Summarizer, Summary
from memorylab.compress._policy import ReportedUsage, Threshold, trigger_tokens
from memorylab.memory import _format as fmt
from memorylab.memory._pins import PinKey, pin_key, pinned_keys, preload_pins
from memorylab.memory._records import CompactionEvent, EntryKind, Message, entry_kind
from memorylab.memory._request import REPLY_TOKENS
from memorylab.results import TableResult

if TYPE_CHECKING:
    import pandas as pd

    from memorylab.analysis._runs import PreparedRun
    from memorylab.analysis._transcript import MemoCounter

@dataclass(frozen=True, slots=True, repr=False)
class ReplayResult(TableResult):
    """What a replay did: ``frame``, one row per message (the context before and after its
    check, compactions, restarts), the compaction ``events`` (failed attempts included,
    ``event.ok`` False), the context at the end and the settings it ran at.

    ``total_input_tokens`` is the context the model read at every check (every model call, as
    the Agent checks; every message with ``checks="message"``); ``peak_context_tokens`` the
    largest context reached, before a check. ``timeline`` is the former name of ``frame``.

    With prompt caching (the rules: :mod:`memorylab.compress._cache_model`; the frame's
    ``cached_tokens`` and ``cache_write_tokens`` per check): ``cached_input_tokens`` of the input
    were read from the cache and ``cache_write_tokens`` written to it; ``cached_cost_usd`` is
    the input at ``model``'s cache-aware prices plus the summarizer's cost (NaN where litellm's
    map lists no cache prices for ``model``), ``uncached_cost_usd`` every input token at the
    input price plus the summarizer's cost, and ``estimated_cost_usd`` the bill: the cached cost
    where the model has cache prices, else the uncached one (a sweep's columns of those names).
    """

    frame: pd.DataFrame
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
    drift_applied: tuple[float, ...] | None = None
    """For a run whose trigger counted the provider's reported usage: the recorded drift
    (billed / estimated input of the last recorded call before the check) the replay applied
    to its estimate, at each check where one was recorded; ``None`` for a trigger of the
    estimate."""

    @property
    def timeline(self) -> pd.DataFrame:
        """Deprecated: the per-message table is ``frame``."""
        message = "ReplayResult.timeline is now ReplayResult.frame (the per-message table)"
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        return self.frame

    @property
    def strategy(self) -> str:
        """What each compaction did (``Strategy.describe()``: ``summary()``,
        ``keep_recent(keep_messages=20)`` ...)."""
        from memorylab.compress._strategies import get_strategy

        chosen = self.settings.strategy if self.settings is not None else get_strategy()
        return chosen.describe()

    @property
    def compactions(self) -> int:
        return sum(1 for event in self.events if event.ok)

    @property
    def peak_context_tokens(self) -> int:
        return int(self.frame["context_tokens"].max()) if len(self.frame) else 0

    @property
    def total_input_tokens(self) -> int:
        return int(self.frame["context_after"][self.frame["check"]].sum())

    @property
    def summary_tokens(self) -> int:
        return sum(event.summary_tokens or 0 for event in self.events if event.ok)

    @property
    def restarts(self) -> int:
        return int(self.frame["restart"].sum())

    @property
    def cached_input_tokens(self) -> int:
        return int(self.frame["cached_tokens"].sum())

    @property
    def cache_write_tokens(self) -> int:
        return int(self.frame["cache_write_tokens"].sum())

    @property
    def uncached_cost_usd(self) -> float:
        return cache_model.price(self.model, self.total_input_tokens) + self.summarizer_cost_usd

    @property
    def cached_cost_usd(self) -> float:
        cost = cache_model.cached_price(
            self.model, self.total_input_tokens, self.cached_input_tokens, self.cache_write_tokens
        )
        return cost + self.summarizer_cost_usd

    @property
    def estimated_cost_usd(self) -> float:
        cached = self.cached_cost_usd
        return self.uncached_cost_usd if math.isnan(cached) else cached

    def notes(self) -> list[str]:
        """What the table does not show: for a run whose trigger counted the provider's
        reported usage, that the replay applied the run's recorded drift to its estimate."""
        if self.drift_applied is None:
            return []
        checks = int(self.frame["check"].sum())
        applied = len(self.drift_applied)
        if not applied:
            return [
                "The run's trigger counted the provider's reported usage, and no call of it was "
                "recorded (usage.jsonl) before any check: this replay counted memorylab's "
                "estimate at every check, so it may compact later than the run did."
            ]
        median = statistics.median(self.drift_applied) - 1.0
        return [
            "The run's trigger counted the provider's reported usage: this replay multiplied "
            f"its estimate by the run's recorded drift (billed / estimated input of the last "
            f"call recorded before the check, in usage.jsonl; median {median:+.1%}) at "
            f"{applied:,} of {checks:,} checks; at the others (no call recorded before them in "
            "their process) it counted the estimate, as the run did before its first reply."
        ]

    def fact_survival(self, facts: Iterable[str]) -> float:
        """The fraction of ``facts`` (strings) found in the final context."""
        wanted = list(facts)
        if not wanted:
            return math.nan
        return sum(1 for fact in wanted if fact in self.final_context) / len(wanted)

    def __repr__(self) -> str:
        return (
            f"ReplayResult(messages={len(self.frame)}, compactions={self.compactions}, "
            f"peak_context_tokens={self.peak_context_tokens}, trigger={self.trigger}, "
            f"context_length={self.context_length})"
        )


def replay(
    transcript: TranscriptSource,
    *,
    summarizer: str | Summarizer | None = None,
    summary_size: SummarySize | None = None,
    settings: RunSettings | None = None,
    cache: bool | MutableMapping[str, Summary] = True,
    progress: bool | None = None,
    **overrides: Unpack[RunOverrides],
) -> ReplayResult:
    """Replay ``transcript`` through a :class:`ContextCompressor` (see the module docstring).

    ``transcript``: a :data:`~memorylab.analysis._runs.TranscriptSource`; summary rows are left
    out (the replay writes its own). Every setting defaults to the record
    (:func:`~memorylab.analysis._runs.run_settings`, or ``settings``); the ``overrides``
    (:class:`~memorylab.analysis._runs.RunOverrides`) override it. ``summarizer`` (default: the
    recorded one when it runs offline, else the extractive one); ``summary_size`` (ask the
    summarizer for summaries of this modelled size instead of the budget; default: the recorded
    sizes when the replay's summarizer is not the recorded one). Nothing is read or written.
    """
    from memorylab.analysis._runs import prepare_run
    from memorylab.analysis._summarizers import choose

    run = prepare_run(transcript, settings, overrides)
    return replay_run(run, choose(summarizer, run, summary_size), cache=cache, progress=progress)


def _kept_prefix(conversation: Any, held: Sequence[Any], counter: Any) -> int:
    """Tokens of the history's first entries that a compaction left as they were, each as the
    request carries it, and the reply's priming: the static context for a summary, counted as
    ``static_tokens`` counts it (as the fast engine, the cost audit and a cache-aware trigger
    take it); the prompt cache still holds them."""
    history = conversation.conversation_history
    same = 0
    for old, new in zip(held, history, strict=False):
        if old is not new and old != new:  # a kept entry is an equal copy; a cleared one is not
            break
        same += 1
    return int(sum(conversation.request_tokens(e, counter) for e in history[:same])) + REPLY_TOKENS


class _RecordedPins:
    """The run's pins (``pins.jsonl``, or a transcript's pinned messages) as the replay applies
    them: at each check, the entries pinned by then are flagged as the live conversation flags
    them (a message ``"pinned"``, a preload's blocks in its ``"pins"``), so the compressor keeps
    them as the run's did. A run without pins costs nothing."""

    def __init__(self, lines: Sequence[Mapping[str, Any]]) -> None:
        self.lines = tuple(lines)
        self.keys: dict[tuple[str, str, int], tuple[str, PinKey]] = {}

    def at(self, when: datetime) -> frozenset[PinKey]:
        """The blocks pinned at ``when``."""
        return pinned_keys(self.lines, until=when) if self.lines else frozenset()

    def mark(self, conversation: Any, when: datetime) -> None:
        """Flag the history's entries pinned at ``when`` (and clear the others' flags)."""
        if not self.lines:
            return
        pinned = self.at(when)
        for entry in conversation.conversation_history:
            kind = entry_kind(entry)
            if kind is EntryKind.PRELOAD:
                entry["pins"] = sorted(preload_pins(str(entry["content"]), pinned))
            elif kind in (EntryKind.MESSAGE, EntryKind.SUMMARY):
                # a block a compaction carries has its time once it is on disk (a ledger):
                # until then it is no block a pin names
                if isinstance(entry.get("timestamp"), str) and self._key(entry) in pinned:
                    entry["pinned"] = True
                else:
                    entry.pop("pinned", None)

    def _key(self, entry: Mapping[str, Any]) -> PinKey:
        """The entry's block identity, each text hashed once (a kept entry shares its text)."""
        role, stamp = str(entry["role"]), str(entry["timestamp"])
        content = fmt.content_to_text(entry["content"])
        known = self.keys.get((role, stamp, id(content)))
        if known is None or known[0] is not content:
            known = self.keys[role, stamp, id(content)] = (content, pin_key(role, stamp, content))
        return known[1]


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


def replay_run(
    run: PreparedRun,
    summarizer: Summarizer,
    *,
    cache: bool | MutableMapping[str, Summary] = True,
    progress: bool | Any | None = None,
) -> ReplayResult:
    """The replay: each process a fresh :class:`Conversation` with its static context and
    preload, a :class:`ContextCompressor` checking where the run checked. ``progress``: shown
    or not (``None``: when someone watches), or a sweep's bar to advance."""
    import numpy as np
    import pandas as pd

    from memorylab.analysis import _progress
    from memorylab.analysis._summarizers import SUMMARY_CACHE, CachedSummarizer
    from memorylab.analysis._transcript import memory_text, preload_content, system_tokens
    from memorylab.compress._compressor import ContextCompressor
    from memorylab.compress._hooks import keep_recorded
    from memorylab.memory._conversation import Conversation

    data, settings = run.transcript, run.settings
    length, threshold = settings.context_length, settings.threshold
    trigger = trigger_tokens(length, threshold)
    store: MutableMapping[str, Summary] | None
    store = SUMMARY_CACHE if cache is True else (None if cache is False else cache)
    cached = CachedSummarizer(summarizer, store)
    whens = data.datetimes()
    stamps = data.stamps
    now: list[datetime] = [whens[0] if whens else datetime.now().astimezone()]
    counter: Any = run.counter
    static_text = run.system_prompt
    # The placeholder's content counts what the recorded static context leaves after its
    # message and the reply's priming (static_tokens counts both).
    fixed = system_tokens(run.counter, "") + REPLY_TOKENS
    if static_text is None and settings.static_tokens > fixed:
        static_text = (
            f"[memorylab: the static context (system prompt, rules), {settings.static_tokens:,} "
            "tokens; its text is not in the files]"
        )
        counter = _StaticCounter(run.counter, static_text, settings.static_tokens - fixed)
    compressors: list[ContextCompressor] = []
    naming: list[str | None] = [None]  # the archive a compaction at this check is named after

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
                {
                    "role": "System",
                    "content": preload,
                    "timestamp": stamp,
                    "kind": EntryKind.PRELOAD,
                }
            )
        conversation.archive_namer = lambda when: naming[0]  # the archive the run wrote
        compressors.append(
            ContextCompressor(
                threshold if settings.trigger is None else settings.trigger,
                summarizer=cached,
                summarizer_max_tokens=settings.summarizer_max_tokens,
                strategy=settings.strategy,
                keep_turn=settings.keep_turn,
                before_compaction=keep_recorded(settings.hook_kept) if settings.hook_kept else None,
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
    kept: dict[int, int] = {}  # per compaction, the tokens of the prefix it left as it was
    pins = _RecordedPins(() if run.record is None else run.record.pins)
    conversation = start(None, stamps[0] if count else "")
    applied: list[float] = []  # the recorded drift applied at each check (a reported trigger)
    memory: list[Message] = []  # the replay's MEMORY.md since its last compaction
    created = run.created or (whens[0] if count else now[0])
    continues: str | None = None
    done = processes = 0
    # A sweep passes its own bar (one over all its replays): updated here, closed there.
    own_bar = progress is None or isinstance(progress, bool)
    bar: Any = _progress.bar(count, "replay", "msg", progress) if own_bar else progress
    for index in range(count):
        now[0] = whens[index]
        if restart[index]:
            text = memory_text(
                memory, name=run.name_at(index), created=created, continues=continues
            )
            preload = preload_content(
                text,
                max_tokens=settings.preload_max_tokens,
                counter=run.counter,
                pins=pins.at(whens[index]),
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
            naming[0] = archive or fmt.archive_name(when)
            pins.mark(conversation, when)  # what the run had pinned by then: kept verbatim
            held = conversation.conversation_history  # a compaction replaces the list
            reported = None
            ratio = None if run.drift is None else run.drift.get(index)
            if ratio is not None:  # the run counted the provider's usage: its recorded drift
                estimate = conversation.token_count()
                reported = ReportedUsage(tokens=round(estimate * ratio), estimate=estimate)
                applied.append(ratio)
            event = compressors[-1].compress(conversation, length, reported=reported)
            if event is not None and event.ok:
                compaction[index] = True
                done += 1
                after[index] = conversation.token_count()
                kept[index] = _kept_prefix(conversation, held, counter)
                # MEMORY.md re-seeded as the store does: the summary (stamped now), then what
                # the strategy kept, as written.
                memory = [
                    Message(
                        str(entry["role"]),
                        str(entry["content"]),
                        when if entry_kind(entry) is EntryKind.SUMMARY
                        else fmt.parse_timestamp(str(entry["timestamp"])),
                    )
                    for entry in conversation.entries(EntryKind.SUMMARY, EntryKind.MESSAGE)
                ]  # fmt: skip
                created, continues = when, archive or fmt.archive_name(when)
        bar.update(1)
    if own_bar:
        bar.close()
    calls = np.flatnonzero(checks)
    least = cache_model.cache_terms(run.model)[2]
    firsts = np.ones(len(calls), dtype=bool)
    firsts[1:] = session[calls][1:] != session[calls][:-1]
    reads, writes = cache_model.cache_calls(
        after[calls].tolist(), firsts.tolist(), [kept.get(int(i)) for i in calls], least
    )
    read_tokens, write_tokens = np.zeros(count, np.int64), np.zeros(count, np.int64)
    read_tokens[calls], write_tokens[calls] = reads, writes
    frame = pd.DataFrame(
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
            "cached_tokens": read_tokens,
            "cache_write_tokens": write_tokens,
        }
    )
    made = cached.made
    summaries = [summary for summary, _ in made]
    input_tokens, cost = 0, 0.0
    for summary, text in made:  # text: the input, rendered when the summary did not count it
        tokens = summary.input_tokens if summary.input_tokens is not None else run.counter(text)
        input_tokens += tokens
        if summary.cost_usd is not None:
            cost += summary.cost_usd
        else:
            out = summary.output_tokens
            cost += cache_model.price(
                summary.model, tokens, run.counter(summary.text) if out is None else out
            )
    final = conversation.return_history_as_string()
    return ReplayResult(
        frame=frame,
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
        drift_applied=None if run.drift is None else tuple(applied),
    )
