"""The replay's summarizer (internal): which one (:func:`choose`), asked for summaries of what
size (:class:`SizedRequest`), and the cache of the summaries replays made
(:class:`CachedSummarizer`: keyed by the summarizer's name, model and budget and a hash of the
messages; it keeps what each compaction made for the replay's figures)."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any

from memorylab.compress._base import BaseSummarizer, Summarizer, Summary
from memorylab.memory import _format as fmt
from memorylab.memory._request import message_tokens, request_message

if TYPE_CHECKING:
    from memorylab.analysis._runs import PreparedRun, SummarySize
    from memorylab.analysis._transcript import MemoCounter

EXTRACTIVE = "memorylab/extractive"
CACHE_LIMIT = 4096
SUMMARY_CACHE: OrderedDict[str, Summary] = OrderedDict()
"""Summaries made by replays, most recently used last (at most 4096)."""


def summary_key(summarizer: Summarizer, messages: Sequence[Mapping[str, Any]], budget: Any) -> str:
    digest = hashlib.blake2b(digest_size=20)
    head = f"{summarizer.name}\x1f{summarizer.model}\x1f{budget}\x1e"
    digest.update(head.encode("utf-8", "surrogatepass"))
    for message in messages:
        text = fmt.content_to_text(message.get("content"))
        part = f"{message.get('role')}\x1f{message.get('timestamp')}\x1f{text}\x1e"
        digest.update(part.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


class CachedSummarizer(BaseSummarizer):
    """Wraps a summarizer: answers a history it has summarized before from the cache."""

    def __init__(self, inner: Summarizer, cache: MutableMapping[str, Summary] | None) -> None:
        self.inner = inner
        self.name, self.model, self.local = inner.name, inner.model, inner.local
        self.cache = cache
        self.calls = 0
        self.made: list[tuple[Summary, str]] = []  # (summary, rendered input) per compaction

    def summarize(
        self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None
    ) -> Summary:
        key = summary_key(self.inner, messages, max_tokens) if self.cache is not None else ""
        summary = self.cache.get(key) if self.cache is not None else None
        if summary is None:
            summary = self.inner.summarize(messages, max_tokens=max_tokens)
            self.calls += 1
            if self.cache is not None:
                self.cache[key] = summary
                if isinstance(self.cache, OrderedDict) and len(self.cache) > CACHE_LIMIT:
                    self.cache.popitem(last=False)
        elif isinstance(self.cache, OrderedDict):
            self.cache.move_to_end(key)
        rendered = fmt.history_text(messages) if summary.input_tokens is None else ""
        self.made.append((summary, rendered))
        return summary


class SizedRequest(BaseSummarizer):
    """Asks ``inner`` for summaries of a modelled size (:class:`SummarySize`) instead of the
    compressor's whole budget."""

    def __init__(self, inner: Summarizer, size: SummarySize, counter: MemoCounter) -> None:
        self.inner, self.size, self.counter = inner, size, counter
        self.name, self.model, self.local = inner.name, inner.model, inner.local

    def summarize(
        self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None
    ) -> Summary:
        # as the size was modelled: the tokens the summarized messages cost in the request
        summarized = sum(
            message_tokens(request_message(m, counted=True), self.counter) for m in messages
        )
        budget = max_tokens if max_tokens is not None else summarized
        asked = max(self.inner.min_tokens, self.size.tokens(summarized, budget))
        return self.inner.summarize(messages, max_tokens=asked)


def choose(spec: str | Summarizer | None, run: PreparedRun, size: SummarySize | None) -> Summarizer:
    """The replay's summarizer: ``spec``, else the recorded one when it runs offline, else the
    extractive one; asked for summaries of ``size`` (default: the recorded sizes, when the
    summarizer is not the one that made them)."""
    from memorylab.compress._compressor import ContextCompressor
    from memorylab.compress._summarizers import get_summarizer, summarizer_names

    recorded = run.settings.summarizer
    if spec is None:  # the recorded one when it is registered and calls no model
        spec = recorded if recorded in summarizer_names() and _local(recorded) else EXTRACTIVE
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
    return SizedRequest(chosen, size, run.counter) if size is not None else chosen


def _local(name: str) -> bool:
    from memorylab.compress._summarizers import get_summarizer

    try:
        return get_summarizer(name).local
    except Exception:  # a user's factory that needs arguments: not rebuilt by name
        return False
