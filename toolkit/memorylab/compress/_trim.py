"""The trim strategy: drop the oldest messages, keep the newest that fit; no summary (PURE).

inspect_ai's ``CompactionTrim`` and LangChain's ``trim_messages`` compact this way. No model is
called. MEMORY.md is re-seeded with the kept messages alone, as they were written; the whole
old file is in the archive, so nothing dropped is destroyed. A tool call and its results are
never split (:class:`~memorylab.compress._strategy.KeepWindow`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from memorylab.compress._strategy import CompactionPlan, KeepWindow


@dataclass(frozen=True, slots=True)
class Trim(KeepWindow):
    """Drop the oldest entries; keep the newest that fit ``keep_fraction`` of the window
    (default 0.5), or ``keep_tokens``, or the newest ``keep_messages`` (one of the three). When
    not even the newest message fits, nothing is kept.

    >>> entries = [{"role": "User", "content": f"m{i}"} for i in range(5)]
    >>> plan = Trim(keep_messages=2).plan(entries)
    >>> plan.dropped, plan.keep, plan.summarize
    ((0, 1, 2), (3, 4), ())
    """

    name = "trim"
    summarizes = False
    verbatim = True
    DEFAULT_KEEP: ClassVar[tuple[str, int | float]] = ("keep_fraction", 0.5)

    def plan(
        self,
        entries: Sequence[Mapping[str, Any]],
        *,
        tokens: Sequence[int] | None = None,
        context_length: int | None = None,
        counter: Callable[[str], int] | None = None,
    ) -> CompactionPlan:
        return self.window_plan(
            entries, tokens, context_length, summarize_the_rest=False,
            nothing="nothing to drop; keep fewer (a smaller keep_fraction, keep_tokens or "
            "keep_messages)",
        )  # fmt: skip
