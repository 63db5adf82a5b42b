"""The summary strategy: today's compaction, the default (PURE: no I/O).

Everything but the static context goes to the summarizer; MEMORY.md is archived and re-seeded
with the summary alone (the reference framework's ``compact()``, byte for byte as before
strategies). Its records carry no ``strategy`` field: a record without one is a summary.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memorylab.compress._strategy import CompactionPlan, Strategy


@dataclass(frozen=True, slots=True)
class SummaryStrategy(Strategy):
    """Summarize the whole history (the static context stays); keep nothing verbatim.

    >>> SummaryStrategy().plan([{"role": "User", "content": "a"}, {"role": "Bot", "content": "b"}])
    CompactionPlan(size=2, summarize=(0, 1), keep=(), cleared=(), placeholder=..., note='', ...)
    """

    name = "summary"

    def plan(
        self,
        entries: Sequence[Mapping[str, Any]],
        *,
        tokens: Sequence[int] | None = None,
        context_length: int | None = None,
        counter: Callable[[str], int] | None = None,
    ) -> CompactionPlan:
        if not entries:
            return CompactionPlan(0, note="there is nothing to summarize beyond the static context")
        return CompactionPlan(len(entries), summarize=tuple(range(len(entries))))

    def record(self) -> dict[str, Any] | None:
        """``None``: a record without a strategy is a summary (records read as before)."""
        return None
