"""The keep-recent strategy: summarize the old part, keep the newest messages verbatim (PURE).

LangChain's ``SummarizationMiddleware`` (``keep``, default 20 messages) and Letta (the newest
~30 % of the window) compact this way. MEMORY.md is re-seeded with the summary as its first
block, then the kept messages as they were written (same role, timestamp and content), so a
restart preloads both. A tool call and its results are never split
(:class:`~memorylab.compress._strategy.KeepWindow`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memorylab.compress._strategy import CompactionPlan, KeepWindow


@dataclass(frozen=True, slots=True)
class KeepRecent(KeepWindow):
    """Summarize everything before the newest messages and keep those verbatim after the
    summary: ``keep_messages`` of them (default 20), or the newest that fit ``keep_tokens``, or
    ``keep_fraction`` of the window (one of the three).

    >>> entries = [{"role": "User", "content": f"m{i}"} for i in range(5)]
    >>> plan = KeepRecent(keep_messages=2).plan(entries)
    >>> plan.summarize, plan.keep
    ((0, 1, 2), (3, 4))
    """

    name = "keep_recent"
    verbatim = True

    def plan(
        self,
        entries: Sequence[Mapping[str, Any]],
        *,
        tokens: Sequence[int] | None = None,
        context_length: int | None = None,
        counter: Callable[[str], int] | None = None,
    ) -> CompactionPlan:
        return self.window_plan(
            entries, tokens, context_length, summarize_the_rest=True,
            nothing="nothing to summarize; keep fewer (a smaller keep_messages or keep_tokens)",
        )  # fmt: skip
