"""The fast sweep: compaction simulated on prefix sums, and prices (internal).

The fast sweep runs the replay's rules (:mod:`memorylab.analysis._growth`) on token counts
instead of a :class:`~memorylab.Conversation`: the trigger and the summary budget come from
:class:`~memorylab.compress._compressor.ContextCompressor`, the checks fall where the Agent's do
(:attr:`Prefix.checks`), a restart reloads MEMORY.md through the real bounded preload (a
``preload`` callback of the caller, which renders the file and plans the preload), and the only
thing modelled is the size of each summary
(:class:`~memorylab.analysis._runs.SummarySize`).

Per message ``i`` the context is ``base + P[i+1] - P[k]``, where ``P`` is the prefix sum of the
messages' tokens (each in the request: :mod:`memorylab.analysis._transcript`), ``k`` the first
message of the current stretch (since the last compaction or restart) and ``base`` what precedes
it: the static context (``S``, the reply's priming included) and the summary or the preload
entry (``S + entry``), or the static context alone (``S``: no entry). The
next compaction is the first check at or after the first message whose context reaches the
trigger: one binary search in ``P`` and a look-up of the next check. The context the model reads
at the checks of a stretch ``[k, e]`` is ``c * (base - P[k]) + Q[e+1] - Q[k]`` (``c`` checks;
``Q`` sums ``P[i+1]`` over the checks). So a setting costs one search per compaction and per
restart, not a loop over the messages.

The prompt cache (the rules: :mod:`memorylab.compress._cache_model`; its ``cache_calls`` applies
them call by call, for the exact replay and the recorded runs) takes the same sums: within a
stretch the contexts only grow, so the calls whose context reaches the cache's minimum prefix
``m`` are the checks from one binary search on, and what each reads from the cache is the
previous call's context; a compaction's call reads the static context from the cache (when it
is at least ``m``), a restart's first call nothing.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from memorylab.analysis._runs import SummarySize

Preload = Callable[[int | None, int, int, int], int]
"""``preload(summary_tokens, summary_at, file_start, restart) -> tokens`` of the preload entry
a process starting at message ``restart`` reads: MEMORY.md holds the summary made at the check
after message ``summary_at`` (``summary_tokens`` ``None``: no compaction yet) and the messages
``file_start .. restart - 1``; 0 when nothing is preloaded."""


@dataclass(frozen=True, slots=True)
class Prefix:
    """Prefix sums of one transcript's message costs and checks (the module docstring)."""

    p: list[int]
    count: int
    next_check: list[int]
    """``next_check[i]``: the first message at or after ``i`` that a check follows (``count``:
    none)."""
    check_count: list[int]
    """``check_count[i]``: the checks after messages ``0 .. i-1``."""
    check_sum: list[int]
    """``check_sum[i]``: ``P[j+1]`` summed over the checks after messages ``j < i``."""
    last_check: list[int]
    """``last_check[i]``: the last message before ``i`` that a check follows (-1: none)."""

    @classmethod
    def of(
        cls,
        tokens: np.ndarray[Any, np.dtype[np.int64]],
        checks: np.ndarray[Any, np.dtype[np.bool_]] | None = None,
    ) -> Prefix:
        count = len(tokens)
        p = np.concatenate([[0], np.cumsum(tokens.astype(np.int64))])
        checked = np.ones(count, dtype=bool) if checks is None else np.asarray(checks, bool)
        index = np.where(checked, np.arange(count), count)
        following = np.minimum.accumulate(index[::-1])[::-1] if count else index
        next_check = np.concatenate([following, [count]])
        check_count = np.concatenate([[0], np.cumsum(checked)])
        check_sum = np.concatenate([[0], np.cumsum(np.where(checked, p[1:], 0))])
        before = np.maximum.accumulate(np.where(checked, np.arange(count), -1)) if count else index
        last_check = np.concatenate([[-1], before])
        return cls(
            p.tolist(),
            count,
            next_check.tolist(),
            check_count.tolist(),
            check_sum.tolist(),
            last_check.tolist(),
        )


@dataclass(frozen=True, slots=True)
class Outcome:
    compactions: int
    peak_context_tokens: int
    total_input_tokens: int
    summarizer_input_tokens: int
    summary_tokens: int
    final_start: int
    points: tuple[int, ...]
    messages: int
    summarized: tuple[int, ...] = ()
    """With ``keep_points``: the tokens each compaction summarized."""
    cached_tokens: int = 0
    """Of ``total_input_tokens``, those read from the prompt cache (the cache model's
    ``cache_calls``)."""
    cache_write_tokens: int = 0
    """Of ``total_input_tokens``, those written to the prompt cache."""


def simulate(
    prefix: Prefix,
    trigger: int,
    *,
    overhead: int,
    size: SummarySize,
    budget: int,
    static_tokens: int = 0,
    restarts: Sequence[int] = (),
    preload: Preload | None = None,
    keep_points: bool = False,
    stop_after: int | None = None,
    cache_min_tokens: int = 1024,
) -> Outcome:
    """One setting of the fast sweep (the module docstring). ``stop_after``: end after that many
    compactions (a calibration prefix); ``Outcome.messages`` is how many messages were run.
    ``cache_min_tokens``: the shortest prefix the prompt cache holds (the cache model's
    ``cache_calls``)."""
    p, n = prefix.p, prefix.count
    next_check, count, sums = prefix.next_check, prefix.check_count, prefix.check_sum
    least = cache_min_tokens
    previous: int | None = None  # the context the process's previous call read
    hits = writes = 0  # tokens read from and written to the prompt cache

    def calls(end: int) -> None:
        """The prompt cache at the calls of the checks after messages ``k .. end - 1`` (no
        compaction among them): the contexts grow, so those reaching ``least`` are the checks
        from ``reach`` on; each call reads the previous one's context from the cache."""
        nonlocal previous, hits, writes
        if count[end] == count[k]:
            return
        reach = min(bisect_left(p, least - base + p[k], lo=k + 1) - 1, end)
        reaching = (count[end] - count[reach]) * (base - p[k]) + sums[end] - sums[reach]
        last = base + p[prefix.last_check[end] + 1] - p[k]
        carried = previous if previous is not None and previous >= least else 0
        read = carried + reaching - (last if last >= least else 0)
        hits += read
        writes += reaching - read
        previous = last

    static = empty = static_tokens  # the base with no entry after the static context
    base, k, file_start = empty, 0, 0
    last_summary: int | None = None
    last_at = -1
    compactions = peak = total = summarized = written = 0
    points: list[int] = []
    inputs: list[int] = []
    pending = sorted(r for r in set(restarts) if 0 < r < n)
    upcoming = 0
    end = n
    while k < n:
        while upcoming < len(pending) and pending[upcoming] <= k:
            upcoming += 1
        restart = pending[upcoming] if upcoming < len(pending) else n
        # the first message whose context reaches the trigger, then the first check from there
        first = bisect_left(p, trigger - base + p[k], lo=k + 1) - 1
        check = next_check[min(first, n)]
        if check < restart:  # a compaction at the check after message `check`
            context = base + p[check + 1] - p[k]
            peak = max(peak, context)
            total += (count[check] - count[k]) * (base - p[k]) + sums[check] - sums[k]
            calls(check)
            summary = size.tokens(context - static, budget)
            base = static + summary + overhead
            total += base  # the call after the compaction reads the static context and summary
            # ... of which the static context stays cached; the rest is written anew
            kept = static if previous is not None and static >= least else 0
            hits += kept
            writes += base - kept if base >= least else 0
            previous = base
            compactions += 1
            summarized += context - static
            written += summary
            if keep_points:
                points.append(check)
                inputs.append(context - static)
            last_summary, last_at, file_start, k = summary, check, check + 1, check + 1
            if stop_after is not None and compactions >= stop_after:
                end = k
                break
            continue
        last = restart - 1
        peak = max(peak, base + p[last + 1] - p[k])
        total += (count[restart] - count[k]) * (base - p[k]) + sums[restart] - sums[k]
        calls(restart)
        if restart >= n:
            break
        previous = None  # a new process: nothing cached
        entry = preload(last_summary, last_at, file_start, restart) if preload else 0
        base = static + entry if entry else empty
        k = restart
    return Outcome(
        compactions,
        peak,
        total,
        summarized,
        written,
        file_start,
        tuple(points),
        min(end, n),
        tuple(inputs),
        hits,
        writes,
    )
