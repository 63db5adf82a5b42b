"""Token growth across compactions, replays of a transcript under other settings, and sweeps.

* :func:`token_growth` — from the files: per message, the context the model read (static
  context + the summary + the messages since the last compaction), the threshold line and the
  compaction points (the sawtooth).
* :func:`replay` — run a real :class:`~memorylab.compress.compressor.ContextCompressor` over a
  transcript in a fresh in-memory :class:`~memorylab.Conversation` (no file is read after the
  transcript is loaded, none is written).
* :func:`sweep` — one row per (context length, threshold): compactions, peak context, the total
  input tokens sent (the cost of carrying context), summarizer calls and tokens, the estimated
  cost (litellm's price map) and, given facts, how many survive to the final context. ``fast=True``
  models the summary size instead of summarizing (:mod:`memorylab.analysis._fast`).

Tokens are counted as :meth:`memorylab.Conversation.token_count` counts them (``[<ts>] Role:
content`` per message, ``"\\n\\n"`` between messages), see :mod:`memorylab.analysis._transcript`.
Summaries made during replays are cached (keyed by the summarizer's name, model and budget and a
hash of the messages it summarized), so sweeps and repeated replays do not pay twice for the same
history; pass ``cache=False`` for a summarizer that is not deterministic.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections import OrderedDict
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memorylab.compress.base import Summarizer, Summary
from memorylab.compress.policy import DEFAULT_THRESHOLD, Threshold, trigger_tokens
from memorylab.errors import InvalidSetting
from memorylab.memory import format as fmt
from memorylab.memory.records import CompactionEvent

if TYPE_CHECKING:
    import pandas as pd

    from memorylab.analysis._transcript import Transcript

__all__ = [
    "DEFAULT_SUMMARY_RATIO",
    "DEFAULT_THRESHOLDS",
    "ReplayResult",
    "replay",
    "sweep",
    "token_growth",
]

DEFAULT_THRESHOLDS: tuple[float, ...] = (0.5, 0.6, 0.7, 0.8, 0.9)
"""The thresholds :func:`sweep` tries when none are given."""

DEFAULT_SUMMARY_RATIO = 0.1
"""The fast sweep's summary size, as a fraction of the tokens summarized."""


# --------------------------------------------------------------------------- token growth


def token_growth(
    df: pd.DataFrame,
    *,
    context_length: int,
    threshold: Threshold = DEFAULT_THRESHOLD,
    model: str | None = None,
    static_tokens: int = 0,
) -> pd.DataFrame:
    """Per message of ``df`` (from :func:`memory_df`), the context the model read.

    Columns: ``workspace``, ``agent`` (when ``df`` has them), ``timeline``, ``segment``,
    ``role``, ``is_summary``, ``tokens`` (of the message as read), ``context_tokens``
    (``static_tokens`` — the system prompt and rules, which are not in the files — plus the
    summary and the messages of the segment so far), ``trigger``
    (:func:`~memorylab.compress.policy.trigger_tokens`), ``context_length`` and ``compaction``
    (True on the last message before each compaction: the peaks of the sawtooth).
    """
    import numpy as np
    import pandas as pd

    from memorylab.analysis._transcript import entry_tokens
    from memorylab.compress.policy import trigger_tokens

    trigger = trigger_tokens(context_length, threshold)
    keys = [c for c in ("workspace", "agent") if c in df.columns]
    frame = df.sort_values([*keys, "timeline"], kind="stable") if "timeline" in df else df
    frame = frame.reset_index(drop=True)
    counted = entry_tokens(frame, model)
    tokens, separator = counted.tokens, counted.separator
    count = len(frame)
    segment = (
        frame["segment"].to_numpy(dtype=np.int64)
        if "segment" in frame
        else np.zeros(count, np.int64)
    )
    agent_key = (
        frame.groupby(keys, sort=False, observed=True).ngroup().to_numpy(dtype=np.int64)
        if keys and count
        else np.zeros(count, np.int64)
    )
    starts = np.ones(count, dtype=bool)
    if count:
        starts[1:] = (segment[1:] != segment[:-1]) | (agent_key[1:] != agent_key[:-1])
    first = (
        np.maximum.accumulate(np.where(starts, np.arange(count), 0))
        if count
        else starts.astype(np.int64)
    )
    cumulative = np.cumsum(tokens)
    before = (cumulative - tokens)[first] if count else cumulative
    within = np.arange(count) - first
    static = int(static_tokens)
    if static < 0:
        raise InvalidSetting(f"static_tokens must be >= 0, not {static_tokens!r}")
    context = static + cumulative - before + (within + (1 if static else 0)) * separator
    compaction = np.zeros(count, dtype=bool)
    if count:
        compaction[:-1] = starts[1:] & (agent_key[1:] == agent_key[:-1])
    out: dict[str, Any] = {key: frame[key].to_numpy() for key in keys}
    out.update(
        timeline=frame["timeline"].to_numpy() if "timeline" in frame else np.arange(count),
        segment=segment,
        role=frame["role"].to_numpy() if "role" in frame else None,
        is_summary=frame["is_summary"].to_numpy(dtype=bool)
        if "is_summary" in frame
        else np.zeros(count, dtype=bool),
        tokens=tokens,
        context_tokens=context.astype(np.int64),
        trigger=np.full(count, trigger, dtype=np.int64),
        context_length=np.full(count, context_length, dtype=np.int64),
        compaction=compaction,
    )
    return pd.DataFrame(out)


# --------------------------------------------------------------------------- replay


@dataclass
class ReplayResult:
    """What a replay did: the per-message ``timeline``, the compaction ``events`` (failed
    attempts included, ``event.ok`` False) and the context at the end."""

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

    @property
    def compactions(self) -> int:
        return sum(1 for event in self.events if event.ok)

    @property
    def peak_context_tokens(self) -> int:
        return int(self.timeline["context_tokens"].max()) if len(self.timeline) else 0

    @property
    def total_input_tokens(self) -> int:
        return int(self.timeline["context_after"].sum())

    @property
    def summary_tokens(self) -> int:
        return sum(event.summary_tokens or 0 for event in self.events if event.ok)

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
    threshold: Threshold = DEFAULT_THRESHOLD,
    context_length: int,
    summarizer: str | Summarizer | None = None,
    model: str | None = None,
    max_summary_tokens: int | None = None,
    system_prompt: str | None = None,
    cache: bool | MutableMapping[str, Summary] = True,
) -> ReplayResult:
    """Replay ``transcript`` through a :class:`ContextCompressor` (see the module docstring).

    ``transcript``: a :func:`memory_df` frame of one agent, a list of ``{"role", "content"}``
    dicts (``"timestamp"`` optional), or the path of an agent folder or memory file; summary
    rows are left out (the replay writes its own). ``summarizer``: a summarizer object or spec
    (default: the offline extractive one; a litellm model name calls that model).
    ``max_summary_tokens``: the summarizer's budget (default a tenth of the window, within
    [32, 2000]). ``model`` picks the tokenizer. Nothing is read or written on disk.
    """
    import numpy as np
    import pandas as pd

    from memorylab.analysis import _fast
    from memorylab.analysis._transcript import memo_counter
    from memorylab.compress.compressor import ContextCompressor
    from memorylab.memory.conversation import Conversation

    transcript = _load_transcript(transcript)
    trigger = trigger_tokens(context_length, threshold)
    budget = max_summary_tokens or _default_summary_tokens(context_length)
    counter = memo_counter(model)
    store: MutableMapping[str, Summary] | None
    store = _SUMMARY_CACHE if cache is True else (None if cache is False else cache)
    cached = _CachedSummarizer(_summarizer(summarizer, budget, model), store)
    whens = transcript.datetimes()
    now: list[datetime] = [whens[0] if whens else datetime.now().astimezone()]
    conversation = Conversation(
        name="replay",
        system_prompt=system_prompt,
        memory_md_path=None,
        preload=False,
        token_counter=counter,
        clock=lambda: now[0],
    )
    compressor = ContextCompressor(threshold, summarizer=cached, summarizer_max_tokens=budget)
    count = len(transcript)
    context = np.zeros(count, dtype=np.int64)
    after = np.zeros(count, dtype=np.int64)
    compaction = np.zeros(count, dtype=bool)
    segment = np.zeros(count, dtype=np.int64)
    done = 0
    for index, (role, content) in enumerate(
        zip(transcript.roles, transcript.contents, strict=True)
    ):
        now[0] = whens[index]
        conversation.add(role, content)
        context[index] = conversation.token_count()
        segment[index] = done
        event = compressor.compress(conversation, context_length)
        if event is not None and event.ok:
            compaction[index] = True
            done += 1
            after[index] = conversation.token_count()
        else:
            after[index] = context[index]
    tokens = transcript.tokens(counter)
    timeline = pd.DataFrame(
        {
            "timeline": np.arange(count, dtype=np.int64),
            "segment": segment,
            "role": pd.Categorical(transcript.roles),
            "tokens": tokens,
            "context_tokens": context,
            "compaction": compaction,
            "context_after": after,
            "trigger": np.full(count, trigger, np.int64),
            "context_length": np.full(count, context_length, np.int64),
        }
    )
    summaries = [summary for summary, _ in cached.made]
    input_tokens = sum(
        s.input_tokens if s.input_tokens is not None else counter(text) for s, text in cached.made
    )
    cost = 0.0
    for summary, text in cached.made:
        if summary.cost_usd is not None:
            cost += summary.cost_usd
        else:
            out = (
                summary.output_tokens
                if summary.output_tokens is not None
                else counter(summary.text)
            )
            cost += _fast.price(summary.model, summary.input_tokens or counter(text), out)
    return ReplayResult(
        timeline=timeline,
        events=list(compressor.events),
        final_context=conversation.return_history_as_string(),
        threshold=threshold,
        context_length=context_length,
        trigger=trigger,
        model=model,
        summarizer=cached.name,
        summaries=summaries,
        summarizer_calls=sum(s.chunks for s in summaries),
        summarizer_input_tokens=int(input_tokens),
        summarizer_cost_usd=cost,
    )


# --------------------------------------------------------------------------- sweep


def sweep(
    transcript: Any,
    thresholds: Iterable[Threshold] = DEFAULT_THRESHOLDS,
    context_lengths: Iterable[int] = (8192,),
    *,
    summarizer: str | Summarizer | None = None,
    model: str | None = None,
    fast: bool = False,
    summary_ratio: float = DEFAULT_SUMMARY_RATIO,
    max_summary_tokens: int | None = None,
    facts: Sequence[str] | None = None,
    system_prompt: str | None = None,
    cache: bool | MutableMapping[str, Summary] = True,
) -> pd.DataFrame:
    """One row per (context length, threshold) setting (see docs/analysis.md).

    Columns: ``context_length``, ``threshold``, ``trigger``, ``mode`` (``"fast"`` or
    ``"replay"``), ``messages``, ``compactions``, ``peak_context_tokens`` (the largest context
    reached, before a check), ``total_input_tokens`` (the context after each message, summed:
    what carrying the context costs if every message is followed by a model call),
    ``summarizer_calls``, ``summarizer_input_tokens``, ``summary_tokens`` (of the summary
    entries), ``estimated_cost_usd`` (input tokens at ``model``'s price plus the summarizer's
    tokens at its price, from litellm's map; NaN when unknown) and ``fact_survival`` when
    ``facts`` are given.

    ``fast=True`` makes no summaries: a summary is ``min(max_summary_tokens, summary_ratio *
    summarized tokens)`` tokens, and a fact survives when a message after the last compaction
    still quotes it (summaries are not text in this mode). ``summarizer`` then only names the
    model whose price is used (default: the free offline summarizer).
    """
    import numpy as np
    import pandas as pd

    from memorylab.analysis import _fast
    from memorylab.analysis._transcript import memo_counter, separator_tokens, summary_overhead

    data = _load_transcript(transcript)
    settings = _settings(thresholds, context_lengths)
    wanted = list(facts) if facts is not None else None
    if not 0 <= summary_ratio <= 1:
        raise InvalidSetting(f"summary_ratio must be within [0, 1], not {summary_ratio!r}")
    rows: list[dict[str, Any]] = []
    if fast:
        counter = memo_counter(model)
        stamps = data.stamps[:1] or ["2000-01-01T00:00:00.000000+00:00"]
        prefix = _fast.Prefix.of(data.tokens(counter), separator_tokens(counter))
        overhead = summary_overhead(counter, stamps[0])
        static = 0
        if system_prompt:
            static = counter(fmt.history_line("System", system_prompt, stamps[0]))
        last = _last_mentions(data, wanted) if wanted else None
        priced = _summarizer_model(summarizer)
        for length, threshold, trigger in settings:
            cap = _summary_budget(threshold, length, max_summary_tokens)
            outcome = _fast.simulate(
                prefix,
                trigger,
                overhead=overhead,
                ratio=summary_ratio,
                cap=cap,
                static_tokens=static,
            )
            row = {
                "context_length": length,
                "threshold": threshold,
                "trigger": trigger,
                "mode": "fast",
                "messages": len(data),
                "compactions": outcome.compactions,
                "peak_context_tokens": outcome.peak_context_tokens,
                "total_input_tokens": outcome.total_input_tokens,
                "summarizer_calls": outcome.compactions,
                "summarizer_input_tokens": outcome.summarizer_input_tokens,
                "summary_tokens": outcome.summary_tokens + outcome.compactions * overhead,
                "estimated_cost_usd": _fast.price(model, outcome.total_input_tokens)
                + _fast.price(priced, outcome.summarizer_input_tokens, outcome.summary_tokens),
            }
            if last is not None:
                row["fact_survival"] = (
                    float(np.mean(last >= outcome.final_start)) if len(last) else math.nan
                )
            rows.append(row)
    else:
        for length, threshold, trigger in settings:
            result = replay(
                data,
                threshold=threshold,
                context_length=length,
                summarizer=summarizer,
                model=model,
                max_summary_tokens=max_summary_tokens,
                cache=cache,
                system_prompt=system_prompt,
            )
            row = {
                "context_length": length,
                "threshold": threshold,
                "trigger": trigger,
                "mode": "replay",
                "messages": len(data),
                "compactions": result.compactions,
                "peak_context_tokens": result.peak_context_tokens,
                "total_input_tokens": result.total_input_tokens,
                "summarizer_calls": result.summarizer_calls,
                "summarizer_input_tokens": result.summarizer_input_tokens,
                "summary_tokens": result.summary_tokens,
                "estimated_cost_usd": _fast.price(model, result.total_input_tokens)
                + result.summarizer_cost_usd,
            }
            if wanted is not None:
                row["fact_survival"] = result.fact_survival(wanted)
            rows.append(row)
    frame = pd.DataFrame(rows)
    if not all(isinstance(t, float) for t in frame["threshold"]):
        frame["threshold"] = frame["threshold"].astype(object)  # keep 3000 an int (tokens)
    return frame


# --------------------------------------------------------------------------- the replay engine


def _load_transcript(transcript: Any) -> Transcript:
    """A transcript from a frame, a list of messages or the path of memory (summaries dropped)."""
    from memorylab.analysis._transcript import as_transcript

    if isinstance(transcript, str | os.PathLike):
        from memorylab.analysis.frames import memory_df

        transcript = memory_df(transcript)
    return as_transcript(transcript)


_MAX_SUMMARY_TOKENS = 2000
_CACHE_LIMIT = 4096
_SUMMARY_CACHE: OrderedDict[str, Summary] = OrderedDict()
"""Summaries made by replays, most recently used last (at most 4096)."""


def _default_summary_tokens(context_length: int) -> int:
    """The summary budget when none is given: a tenth of the window, within [32, 2000]."""
    return min(_MAX_SUMMARY_TOKENS, max(32, context_length // 10))


def _summary_budget(
    threshold: Threshold, context_length: int, max_summary_tokens: int | None
) -> int:
    """The summary size a :class:`ContextCompressor` asks for in this setting (its own rule:
    ``summarizer_max_tokens``, at most half the trigger, at least its minimum)."""
    from memorylab.compress.compressor import ContextCompressor

    maximum = max_summary_tokens or _default_summary_tokens(context_length)
    compressor = ContextCompressor(threshold, summarizer_max_tokens=maximum)
    budget = getattr(compressor, "summary_budget", None)
    return int(budget(context_length)) if budget is not None else maximum


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


def _summarizer(spec: str | Summarizer | None, budget: int, model: str | None) -> Summarizer:
    from memorylab.compress.summarizers import get_summarizer

    if spec is None or spec == "memorylab/extractive":
        from memorylab.compress.extractive import ExtractiveSummarizer

        return ExtractiveSummarizer(max_tokens=budget, model=model)
    if isinstance(spec, str) and spec.strip() == "memorylab/scripted":
        return get_summarizer(spec)
    if isinstance(spec, str):
        return get_summarizer(spec, max_tokens=budget)
    return get_summarizer(spec)


def _settings(
    thresholds: Iterable[Threshold], context_lengths: Iterable[int]
) -> list[tuple[int, Threshold, int]]:
    out = []
    for length in context_lengths:
        for threshold in thresholds:
            if (
                isinstance(threshold, int)
                and not isinstance(threshold, bool)
                and threshold > length
            ):
                continue  # an absolute threshold above the window can never fire: left out
            out.append((int(length), threshold, trigger_tokens(length, threshold)))
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


def _summarizer_model(summarizer: str | Summarizer | None) -> str | None:
    if summarizer is None:
        return "memorylab/extractive"
    if isinstance(summarizer, str):
        return summarizer
    return getattr(summarizer, "model", None) or summarizer.name
