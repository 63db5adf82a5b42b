"""The implementation of replays and sweeps (:mod:`memorylab.analysis.growth`), imported on use."""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from memorylab.analysis import _fast
from memorylab.analysis._transcript import (
    Transcript,
    as_transcript,
    memo_counter,
    separator_tokens,
    summary_overhead,
)
from memorylab.compress.policy import Threshold, trigger_tokens
from memorylab.compress.summarizers import Summarizer, Summary, get_summarizer
from memorylab.errors import InvalidSetting
from memorylab.memory import format as fmt

if TYPE_CHECKING:
    import pandas as pd

    from memorylab.analysis.growth import ReplayResult

MAX_SUMMARY_TOKENS = 2000
_CACHE_LIMIT = 4096
SUMMARY_CACHE: OrderedDict[str, Summary] = OrderedDict()
"""Summaries made by replays, most recently used last (at most 4096)."""


def default_summary_tokens(context_length: int) -> int:
    """The summary budget when none is given: a tenth of the window, within [32, 2000]."""
    return min(MAX_SUMMARY_TOKENS, max(32, context_length // 10))


def summary_budget(
    threshold: Threshold, context_length: int, max_summary_tokens: int | None
) -> int:
    """The summary size a :class:`ContextCompressor` asks for in this setting (its own rule:
    ``summarizer_max_tokens``, at most half the trigger, at least its minimum)."""
    from memorylab.compress.compressor import ContextCompressor

    maximum = max_summary_tokens or default_summary_tokens(context_length)
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
    if spec is None or spec == "memorylab/extractive":
        from memorylab.compress.extractive import ExtractiveSummarizer

        return ExtractiveSummarizer(max_tokens=budget, model=model)
    if isinstance(spec, str) and spec.strip() == "memorylab/scripted":
        return get_summarizer(spec)
    if isinstance(spec, str):
        return get_summarizer(spec, max_tokens=budget)
    return get_summarizer(spec)


def run_replay(
    transcript: Transcript,
    *,
    threshold: Threshold,
    context_length: int,
    summarizer: str | Summarizer | None,
    model: str | None,
    max_summary_tokens: int | None,
    cache: bool | MutableMapping[str, Summary],
    system_prompt: str | None,
) -> ReplayResult:
    import pandas as pd

    from memorylab.analysis.growth import ReplayResult
    from memorylab.compress.compressor import ContextCompressor
    from memorylab.memory.conversation import Conversation

    trigger = trigger_tokens(context_length, threshold)
    budget = max_summary_tokens or default_summary_tokens(context_length)
    counter = memo_counter(model)
    store: MutableMapping[str, Summary] | None
    store = SUMMARY_CACHE if cache is True else (None if cache is False else cache)
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


def _last_mentions(transcript: Transcript, facts: Sequence[str]) -> np.ndarray:
    """Per fact, the index of the last message that contains it (-1: none)."""
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


def run_sweep(
    transcript: Any,
    thresholds: Iterable[Threshold],
    context_lengths: Iterable[int],
    *,
    summarizer: str | Summarizer | None,
    model: str | None,
    fast: bool,
    summary_ratio: float,
    max_summary_tokens: int | None,
    facts: Sequence[str] | None,
    system_prompt: str | None,
    cache: bool | MutableMapping[str, Summary],
) -> pd.DataFrame:
    import pandas as pd

    data = as_transcript(transcript)
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
            cap = summary_budget(threshold, length, max_summary_tokens)
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
            result = run_replay(
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
