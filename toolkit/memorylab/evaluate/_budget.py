"""The cost guard's estimate: what a comparison would spend before it runs (internal).

Calls already in the cache cost nothing: a summary is cached when replaying it from the cache
alone succeeds (a cache-only :class:`~memorylab.evaluate._cache.CachingCaller` raises
``CacheMiss`` on the first call it would have to send), and so is a model scorer whose calls on
that summary replay the same way. Everything else is estimated from token counts (the model's
tokenizer, the prompt included) and output tokens at their bound, priced with litellm's map.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from memorylab import llm
from memorylab.compress._base import Summarizer
from memorylab.evaluate._base import Sample, Scorer, run_sync
from memorylab.evaluate._cache import LLMCache, RunStats
from memorylab.evaluate._cases import Case
from memorylab.evaluate._engine import Context, summarize

if TYPE_CHECKING:
    import pandas as pd

Call = tuple[str, int, int]  # (model, input tokens, output tokens)


def _replay(
    units: list[tuple[Case, Summarizer, list[Call]]],
    scorers: list[Scorer],
    cache: LLMCache | None,
    max_tokens: int | None,
) -> list[tuple[Any, set[str]]]:
    """For each (case, summarizer, its estimated calls): the summary when it can be made from
    the cache alone (or locally), and the names of the model scorers whose calls on it are all
    cached. A unit with no model call to find, the summarizer's or a scorer's, is not run."""
    needs_model = [s for s in scorers if not s.offline]
    nothing: tuple[Any, set[str]] = (None, set())
    if cache is None or next(cache.entries(), None) is None:  # nothing to find (nor litellm
        return [nothing] * len(units)  # to import to read it)
    ctx = Context(cache, RunStats(), 8, max_tokens, cache_only=True)

    async def replay(case: Case, summarizer: Summarizer, calls: list[Call]) -> tuple[Any, set[str]]:
        if not calls and not needs_model:
            return nothing
        try:
            summary, _ = await summarize(summarizer, case, ctx)
        except Exception:  # CacheMiss, or a summarizer that fails: estimated in full
            return nothing
        cached: set[str] = set()
        for scorer in needs_model:
            try:
                await scorer.ascore(Sample(case, summary, "replay"), ctx.llm())
            except Exception:  # CacheMiss: this scorer has calls to make
                continue
            cached.add(scorer.name)
        return summary, cached

    async def replay_all() -> list[tuple[Any, set[str]]]:
        ctx.semaphore = asyncio.Semaphore(8)
        return list(await asyncio.gather(*(replay(*unit) for unit in units)))

    return run_sync(replay_all)


def estimate_units(
    items: list[Case],
    resolved: Mapping[str, Summarizer],
    scorer_list: list[Scorer],
    cache: LLMCache | None,
    max_tokens: int | None,
) -> pd.DataFrame:
    """The cost estimate of resolved cases, summarizers and scorers (see
    :func:`memorylab.evaluate._compare.estimate_cost`)."""
    import pandas as pd

    totals: dict[str, list[float]] = {}

    def add(model: str, calls: list[tuple[int, int]], cached: bool) -> None:
        entry = totals.setdefault(model, [0, 0, 0, 0])
        if cached:
            entry[1] += len(calls)
            return
        entry[0] += len(calls)
        entry[2] += sum(c[0] for c in calls)
        entry[3] += sum(c[1] for c in calls)

    def add_calls(calls: list[tuple[str, int, int]], cached: bool) -> None:
        for model in dict.fromkeys(m for m, _, _ in calls):
            add(model, [(i, o) for m, i, o in calls if m == model], cached)

    units = [(case, summarizer, summarizer.estimate(case.messages, max_tokens))
             for case in items for summarizer in resolved.values()]  # fmt: skip
    replayed = _replay(units, scorer_list, cache, max_tokens)
    for (case, summarizer, made), (summary, cached) in zip(units, replayed, strict=True):
        summary_tokens = max_tokens or summarizer.max_tokens or 1024
        add_calls(made, summary is not None)
        for scorer in scorer_list:
            add_calls(scorer.estimate(case, summary_tokens), scorer.name in cached)
    rows = []
    for model, (calls, cached_calls, tokens_in, tokens_out) in sorted(totals.items()):
        price = llm.token_prices(model)
        usd = 0.0 if price is None else tokens_in * price[0] + tokens_out * price[1]
        rows.append((model, int(calls), int(cached_calls), int(tokens_in), int(tokens_out), usd,
                     price is not None))  # fmt: skip
    columns = ["model", "calls", "cached_calls", "input_tokens", "output_tokens", "usd", "priced"]
    return pd.DataFrame(rows, columns=columns)
