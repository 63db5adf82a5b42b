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

A compressor that keeps the turn in progress (``keep_turn``, :class:`Turns`) keeps the messages
from the user's last one to the check verbatim: they stay in ``base`` (``P[e+1] - P[u]`` more),
are not summarized, and take their tokens off the summary's budget, as the compressor does. Where
the turn is all the history holds (a process's first compaction, no preload), the compressor
keeps the user's message and the newest step; where that is all there is too, it refuses to
compact, which this engine does not model (:attr:`Outcome.refused`: the sweep replays such a
setting exactly).

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

Preload = Callable[[int | None, int, int, int, int], int]
"""``preload(summary_tokens, summary_at, file_start, restart, lone) -> tokens`` of the preload
entry a process starting at message ``restart`` reads: MEMORY.md holds the summary made at the
check after message ``summary_at`` (``summary_tokens`` ``None``: no compaction yet), the message
``lone`` when a compaction kept it alone (the request of a turn it kept a step of; -1: none) and
the messages ``file_start .. restart - 1``; 0 when nothing is preloaded."""


@dataclass(frozen=True, slots=True)
class Turns:
    """Where the turn in progress starts, for a compressor that keeps it (``keep_turn``; the
    rules: :class:`~memorylab.compress._compressor.ContextCompressor`)."""

    user: list[int]
    """``user[i]``: the user's last message at or before message ``i`` (-1: none)."""
    step: list[int]
    """``step[i]``: the last message at or before ``i`` that is not a tool result (the newest
    step: a result is kept with the call it answers)."""

    @classmethod
    def of(cls, roles: Sequence[str], user_role: str) -> Turns:
        """The turns of messages of ``roles``, the user's role ``user_role`` (the rules
        :func:`~memorylab.memory._records.is_user_message` and ``is_tool_result``)."""
        from memorylab.memory._records import is_tool_result, is_user_message

        user: list[int] = []
        step: list[int] = []
        last_user = last_step = -1
        for index, role in enumerate(roles):
            entry = {"role": role}
            if is_user_message(entry, user_role):
                last_user = index
            if not is_tool_result(entry):
                last_step = index
            user.append(last_user)
            step.append(last_step)
        return cls(user, step)


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
    refused: int = 0
    """Checks where a compressor keeping the turn would have refused to compact (the turn is
    all the history holds): its failed attempts and back-off are not modelled."""


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
    turns: Turns | None = None,
    least_summary: int = 1,
) -> Outcome:
    """One setting of the fast sweep (the module docstring). ``stop_after``: end after that many
    compactions (a calibration prefix); ``Outcome.messages`` is how many messages were run.
    ``cache_min_tokens``: the shortest prefix the prompt cache holds (the cache model's
    ``cache_calls``). ``turns``: each compaction keeps the turn in progress (``None``: it does
    not), its tokens taken off ``budget`` down to ``least_summary``."""
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
    compactions = peak = total = summarized = written = refused = 0
    points: list[int] = []
    inputs: list[int] = []
    pending = sorted(r for r in set(restarts) if 0 < r < n)
    upcoming = 0
    end = n
    # The process's first message; whether its history holds a summary or a preload entry; the
    # turn a compaction kept (messages `origin .. k - 1`, and `lone` kept alone before them, -1:
    # none); `past`: the first message whose check may compact (after a refused one).
    start, entry, origin, lone, past = 0, False, 0, -1, 0
    file_lone = -1  # MEMORY.md's message kept alone (file_start: its messages' first)

    def turn(check: int) -> tuple[int, int, int] | None:
        """The tokens a compaction at the check after message ``check`` keeps as the turn, and
        the turn kept (``origin``, ``lone``) after it; ``None``: it refuses (all is the turn)."""
        if turns is None:
            return 0, check + 1, -1
        user = turns.user[check]
        if user < start or (user < origin and user != lone):
            return 0, check + 1, -1  # no message of the user in the history
        if user == lone:  # the turn a compaction kept a step of, and what came since
            return p[lone + 1] - p[lone] + p[check + 1] - p[origin], origin, lone
        if entry or user > origin:
            return p[check + 1] - p[user], user, -1
        # the turn is all the history holds: its request and newest step, if that leaves any
        newest = max(turns.step[check], user + 1)
        if newest > check:
            return None
        return p[user + 1] - p[user] + p[check + 1] - p[newest], newest, user

    while k < n:
        while upcoming < len(pending) and pending[upcoming] <= k:
            upcoming += 1
        restart = pending[upcoming] if upcoming < len(pending) else n
        # the first message whose context reaches the trigger, then the first check from there
        first = bisect_left(p, trigger - base + p[k], lo=k + 1) - 1
        check = next_check[min(max(first, past), n)]
        kept_turn = turn(check) if check < restart else None
        if check < restart and kept_turn is None:  # refused: no compaction at this check
            refused += 1
            peak = max(peak, base + p[check + 1] - p[k])
            past = check + 1
            continue
        if kept_turn is not None:  # a compaction at the check after message `check`
            kept_tokens, kept_origin, kept_lone = kept_turn
            context = base + p[check + 1] - p[k]
            peak = max(peak, context)
            total += (count[check] - count[k]) * (base - p[k]) + sums[check] - sums[k]
            calls(check)
            asked = max(least_summary, budget - kept_tokens)
            summary = size.tokens(context - static - kept_tokens, asked)
            base = static + summary + overhead + kept_tokens
            total += base  # the call after the compaction reads the static context and summary
            # ... of which the static context stays cached; the rest is written anew
            kept = static if previous is not None and static >= least else 0
            hits += kept
            writes += base - kept if base >= least else 0
            previous = base
            compactions += 1
            summarized += context - static - kept_tokens
            written += summary
            if keep_points:
                points.append(check)
                inputs.append(context - static - kept_tokens)
            last_summary, last_at, k = summary, check, check + 1
            entry, origin, lone = True, kept_origin, kept_lone
            file_start, file_lone = kept_origin, kept_lone
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
        loaded = preload(last_summary, last_at, file_start, restart, file_lone) if preload else 0
        base = static + loaded if loaded else empty
        k = start = origin = restart
        entry, lone = bool(loaded), -1
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
        refused,
    )
