"""The prompt-cache model: what a model call reads from the provider's cache, and its prices.

The one statement of the rules that price every model call of the lab's replays, sweeps and
cost audits (:mod:`memorylab.analysis`) and that a cache-aware trigger
(:class:`~memorylab.compress.CacheTiming`) decides by. It sits below both: the compressor
defers a compaction by these rules, the analysis floor measures with them.

**The cache rules** (one model call = one check, where the Agent checks: before every call):

1. A call reads the context memorylab counts (the static context, preload or summary, the
   messages). Within one process every call is assumed to come within the cache's lifetime
   (OpenAI keeps a prefix 5 to 10 minutes idle, Anthropic 5 minutes, each hit renewing it): no
   prefix expires between two calls of a process. A new process (a restart) starts cold: its
   first call reads nothing from the cache. (A cache-aware trigger does not assume it: it reads
   the lifetime off the checks' times, :class:`~memorylab.compress.CacheTiming`.)
2. A call reads from the cache the prefix it shares with the previous call: the whole previous
   context when no compaction came between (the history only grows). After a compaction, only
   what the compaction left as it was: the static context before the summary (the exact replay
   credits the leading entries a strategy leaves unchanged, which for a summary is the static
   context). This is OpenAI's automatic prefix caching; with Anthropic it takes a cache
   breakpoint after the static context and one at the end of each prompt.
3. Minimum: the provider caches no prefix shorter than its minimum, litellm's
   ``prompt_cache_min_tokens`` for the model where its map lists one, else 1,024 tokens
   (OpenAI's, and most Anthropic models'). A read shorter than the minimum reads nothing; a call
   whose context is shorter writes nothing.
4. A call whose context reaches the minimum writes to the cache what it did not read.
5. Prices, from litellm's model map (:func:`memorylab.llm.cache_prices`): tokens read from the
   cache at ``cache_read_input_token_cost``; tokens written at
   ``cache_creation_input_token_cost`` where the map lists a positive one (Anthropic: 1.25 times
   the input price), else at the input price (OpenAI and DeepSeek bill no writes apart); the
   rest at ``input_cost_per_token``. A model whose map entry lists no cache-read price has no
   cached cost (NaN): no discount is assumed.
6. Not modelled: OpenAI's 128-token steps (a cached read is up to 127 tokens shorter), the tool
   calls' arguments and a tool result's call id (the counts are memorylab's, which leave them
   out: :mod:`memorylab.memory._request`), the one-hour cache's and the context-size tiers'
   prices (the base prices are used), and the summarizer's own calls (priced without a
   cache).

What a compaction costs and saves by these rules (:func:`rebuild_usd`, :func:`carried_usd`,
:func:`compaction_rebuild_usd`) is
stated here once: :func:`memorylab.analysis.compaction_costs_df` adds them up per compaction,
the cache-aware trigger weighs them before it compacts.

No I/O of its own: the prices are litellm's bundled model map, read by :mod:`memorylab.llm`
(imported when a price is first asked for).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

DEFAULT_CACHE_MIN_TOKENS = 1024
"""The shortest prefix a provider caches where litellm's map does not say
(``prompt_cache_min_tokens``): OpenAI's and most Anthropic models' 1,024 tokens."""


def cache_calls(
    contexts: Sequence[int],
    first: Sequence[bool],
    kept: Sequence[int | None],
    min_tokens: int,
) -> tuple[list[int], list[int]]:
    """Per model call, the input tokens read from the prompt cache and those written to it (the
    rules 1 to 4, the module docstring).

    ``contexts``: the tokens each call reads, in order; ``first``: whether it is a process's
    first call (nothing cached); ``kept``: for the call after a compaction, the tokens of the
    prefix the compaction left as it was (the static context), else ``None``. A call reads from
    the cache the previous call's context (after a compaction: the kept prefix), when that is
    at least ``min_tokens``; it writes what it read beyond that, when its context is at least
    ``min_tokens``."""
    reads: list[int] = []
    written: list[int] = []
    previous = 0
    for context, starts, prefix in zip(contexts, first, kept, strict=True):
        read = 0 if starts else min(previous, context, previous if prefix is None else prefix)
        read = read if read >= min_tokens else 0
        reads.append(read)
        written.append(context - read if context >= min_tokens else 0)
        previous = context
    return reads, written


@functools.lru_cache(maxsize=256)
def unit_prices(model: str | None) -> tuple[float, float]:
    """USD per input token and per output token from litellm's price map; NaN when unknown
    (:func:`memorylab.llm.token_prices`: the map read as a file where it settles the name,
    litellm's rules for the others; nothing is fetched)."""
    if model is None or not isinstance(model, str) or not model.strip():
        return math.nan, math.nan
    if model.startswith("memorylab/"):
        return 0.0, 0.0  # the offline summarizers cost nothing
    from memorylab.llm import token_prices

    prices = token_prices(model)
    return prices if prices is not None else (math.nan, math.nan)


@functools.lru_cache(maxsize=256)
def cache_terms(model: str | None) -> tuple[float, float, int]:
    """USD per input token read from the prompt cache and per token written to it (the input
    price where the map lists no positive write price: the provider bills no writes apart), NaN
    where the map lists no cache prices (:func:`memorylab.llm.cache_prices`: no discount is
    assumed); and the shortest prefix cached (:data:`DEFAULT_CACHE_MIN_TOKENS` where the map
    does not say)."""
    if model is None or not isinstance(model, str) or not model.strip():
        return math.nan, math.nan, DEFAULT_CACHE_MIN_TOKENS
    if model.startswith("memorylab/"):
        return 0.0, 0.0, DEFAULT_CACHE_MIN_TOKENS  # the offline summarizers cost nothing
    from memorylab.llm import cache_prices

    prices = cache_prices(model)
    least = (prices.min_tokens if prices else None) or DEFAULT_CACHE_MIN_TOKENS
    per_in, _ = unit_prices(model)
    if prices is None or math.isnan(per_in):
        return math.nan, math.nan, least
    write = prices.write if prices.write else per_in
    return prices.read, write, least


def cached_price(
    model: str | None, input_tokens: float, cached_tokens: float, write_tokens: float
) -> float:
    """The USD cost of ``input_tokens`` read by the model, ``cached_tokens`` of them read from the
    prompt cache and ``write_tokens`` written to it (:func:`cache_terms`); the rest at the input
    price. NaN where the map lists no cache prices (or no price) for ``model``."""
    per_in, _ = unit_prices(model)
    read, write, _ = cache_terms(model)
    if math.isnan(per_in) or math.isnan(read):
        return math.nan
    plain = input_tokens - cached_tokens - write_tokens
    return per_in * plain + read * cached_tokens + write * write_tokens


def price(model: str | None, prompt_tokens: float, completion_tokens: float = 0) -> float:
    """The estimated USD cost of ``prompt_tokens`` in and ``completion_tokens`` out (NaN when
    litellm has no price for ``model``)."""
    per_in, per_out = unit_prices(model)
    if math.isnan(per_in) or math.isnan(per_out):
        return math.nan
    return per_in * prompt_tokens + per_out * completion_tokens


def rebuild_usd(model: str | None, missed: float, *, written: bool) -> float:
    """What a call pays above the cache-read price for ``missed`` tokens a warm cache would have
    served (a compaction's cache rebuild): at the write price where the call writes to the
    cache (``written``), else at the input price, minus the read price. NaN without cache
    prices."""
    per_in, _ = unit_prices(model)
    read, write, _ = cache_terms(model)
    return missed * ((write if written else per_in) - read)


def carried_usd(model: str | None, tokens: float, calls: int = 1) -> float:
    """What ``tokens`` more of cached prefix cost over ``calls`` calls: the cache-read price
    (what a compaction that removed them saves at each call until the next one). NaN without
    cache prices or an input price."""
    per_in, _ = unit_prices(model)
    read = cache_terms(model)[0]
    return math.nan if math.isnan(per_in) else tokens * read * calls


def compaction_rebuild_usd(model: str | None, *, after: int, static: int, growth: int) -> float:
    """The cache rebuild of a compaction ahead of it (``compaction_costs_df``'s
    ``rebuild_cost_usd``, modelled): the compaction leaves ``after`` tokens, ``static`` of them
    as they were, and the history then grows ``growth`` tokens a call. At the compaction's call
    every token but the static prefix (read from the cache when it reaches the minimum); then,
    at each call while the new history is under the cache's minimum, the previous call's
    context, which it cannot read (rules 2 to 4). NaN without cache prices."""
    least = cache_terms(model)[2]
    kept = static if static >= least else 0
    cost = rebuild_usd(model, max(0, after - kept), written=after >= least)
    context = after
    while growth > 0 and context < least:
        cost += rebuild_usd(model, context, written=context + growth >= least)
        context += growth
    return cost
