"""The fast sweep: compaction simulated on prefix sums, and prices (internal).

Per message ``i`` the context the model reads is ``base + P[i+1] - P[k]``, where ``P`` is the
prefix sum of (message tokens + separator), ``k`` the first message since the last compaction
and ``base`` the summary entry's tokens (``-separator`` before the first compaction: no entry
precedes the first message). The next compaction is the first ``i >= k`` whose context reaches
the trigger: one binary search in ``P``. The context sent over a segment ``[k, e]`` is
``(e - k + 1) * (base - P[k]) + R[e+2] - R[k+1]`` with ``R`` the prefix sum of ``P``. So a
setting costs one search per compaction, not a loop over messages.

The summary is modelled, not written: ``min(max_summary_tokens, ratio * summarized tokens)``
tokens (at least 1), where the summarized tokens are the context at the compaction (the previous
summary and the messages since), plus the entry's fixed overhead
(``[<ts>] System: [Compressed Memory Summary]``).
"""

from __future__ import annotations

import functools
import math
from bisect import bisect_left
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True, slots=True)
class Prefix:
    """Prefix sums of one transcript's message costs (see the module docstring)."""

    p: list[int]
    r: list[int]
    count: int
    separator: int

    @classmethod
    def of(cls, tokens: np.ndarray[Any, np.dtype[np.int64]], separator: int) -> Prefix:
        weights = tokens.astype(np.int64) + separator
        p = np.concatenate([[0], np.cumsum(weights)])
        r = np.concatenate([[0], np.cumsum(p)])
        return cls(p.tolist(), r.tolist(), len(tokens), separator)


@dataclass(frozen=True, slots=True)
class Outcome:
    compactions: int
    peak_context_tokens: int
    total_input_tokens: int
    summarizer_input_tokens: int
    summary_tokens: int
    final_start: int
    points: tuple[int, ...]


def simulate(
    prefix: Prefix,
    trigger: int,
    *,
    overhead: int,
    ratio: float,
    cap: int,
    static_tokens: int = 0,
    keep_points: bool = False,
) -> Outcome:
    """One setting of the fast sweep (see the module docstring)."""
    p, r, n = prefix.p, prefix.r, prefix.count
    base = static_tokens if static_tokens else -prefix.separator
    static = static_tokens + prefix.separator if static_tokens else 0  # static entry + its "\n\n"
    k = 0
    compactions = peak = total = summarized = written = 0
    points: list[int] = []
    while k < n:
        # smallest index with p[index] >= target: the message i = index - 1 reaches the trigger
        index = bisect_left(p, trigger - base + p[k], lo=k + 1)
        end = n - 1 if index > n else index - 1
        context = base + p[end + 1] - p[k]
        span = (end - k + 1) * (base - p[k]) + r[end + 2] - r[k + 1]
        peak = max(peak, context)
        if index > n:  # no more compactions: the last segment runs to the end
            total += span
            break
        summary = min(cap, max(1, int(ratio * (context - static))))
        new_base = summary + overhead + static
        total += span - context + new_base
        compactions += 1
        summarized += context - static
        written += summary
        if keep_points:
            points.append(end)
        base, k = new_base, end + 1
    return Outcome(compactions, peak, total, summarized, written, k, tuple(points))


# --------------------------------------------------------------------------- prices


@functools.lru_cache(maxsize=256)
def unit_prices(model: str | None) -> tuple[float, float]:
    """USD per input token and per output token from litellm's price map
    (:func:`memorylab.llm.token_prices`: the bundled map, nothing is fetched); NaN when unknown."""
    if model is None or not isinstance(model, str) or not model.strip():
        return math.nan, math.nan
    if model.startswith("memorylab/"):
        return 0.0, 0.0  # the offline summarizers cost nothing
    from memorylab.llm import token_prices

    prices = token_prices(model)
    return prices if prices is not None else (math.nan, math.nan)


def price(model: str | None, prompt_tokens: float, completion_tokens: float = 0) -> float:
    """The estimated USD cost of ``prompt_tokens`` in and ``completion_tokens`` out (NaN when
    litellm has no price for ``model``)."""
    per_in, per_out = unit_prices(model)
    if math.isnan(per_in) or math.isnan(per_out):
        return math.nan
    return per_in * prompt_tokens + per_out * completion_tokens
