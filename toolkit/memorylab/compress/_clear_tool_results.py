"""The tool-result clearing strategy: old tool results replaced by a placeholder; no model call
(PURE).

Anthropic's context editing (``clear_tool_uses``), LangChain's ``ClearToolUsesEdit`` and
inspect_ai's ``CompactionEdit`` compact this way: one tool output can fill a window, and the
model rarely needs an old one again. Every message is kept, in order; each tool result but the
newest ``keep_tool_results`` becomes a placeholder naming the archive that holds the original
(the archive this compaction writes: the whole old MEMORY.md). A result cleared already is left
as it is (its original is in an older archive), and so is one shorter than its placeholder.
Once retention or purge deletes that archive, the placeholder reaches the model saying the
original is gone (:data:`~memorylab.compress._strategy.PLACEHOLDER`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memorylab._validation import check_int
from memorylab.compress._strategy import (
    PLACEHOLDER,
    CompactionPlan,
    Strategy,
    check_placeholder,
    is_keepable,
    worth_clearing,
)
from memorylab.errors import InvalidSetting
from memorylab.memory._records import is_tool_result


@dataclass(frozen=True, slots=True)
class ClearToolResults(Strategy):
    """Replace every tool result but the newest ``keep_tool_results`` (default 3) by
    ``placeholder`` (``{archive}``: the archive's file name; ``{chars}``, ``{role}``).

    A tool result is an entry answering a ``tool_call_id`` (what the :class:`~memorylab.Agent`
    records) or one with a tool's role (``Tool Executor``, ``tool`` ...: what a file keeps).

    >>> entries = [{"role": "Tool Executor", "content": "row " * 50} for _ in range(3)]
    >>> ClearToolResults(keep_tool_results=1).plan(entries).cleared
    (0, 1)
    """

    keep_tool_results: int = 3
    placeholder: str = PLACEHOLDER

    name = "clear_tool_results"
    summarizes = False
    verbatim = True

    def __post_init__(self) -> None:
        try:
            keep = check_int("ClearToolResults.keep_tool_results", self.keep_tool_results, 0)
        except InvalidSetting as error:
            raise InvalidSetting(f"{error} (the newest tool results kept; 0 keeps none)") from None
        object.__setattr__(self, "keep_tool_results", keep)
        check_placeholder("ClearToolResults", self.placeholder)

    def plan(
        self,
        entries: Sequence[Mapping[str, Any]],
        *,
        tokens: Sequence[int] | None = None,
        context_length: int | None = None,
        counter: Callable[[str], int] | None = None,
    ) -> CompactionPlan:
        keep = tuple(i for i, entry in enumerate(entries) if is_keepable(entry))
        results = [i for i in keep if is_tool_result(entries[i])]
        old = results[: max(len(results) - self.keep_tool_results, 0)]
        cleared = tuple(i for i in old if worth_clearing(self.placeholder, entries[i]))
        plan = CompactionPlan(
            len(entries), keep=keep, cleared=cleared, placeholder=self.placeholder
        )
        if plan.empty:
            return CompactionPlan(
                len(entries),
                keep=keep,
                placeholder=self.placeholder,
                note=(
                    f"clear_tool_results found no tool result to clear among {len(entries)} "
                    f"entries ({len(results)} tool results, the newest {self.keep_tool_results} "
                    "kept, cleared ones and ones shorter than the placeholder left as they are); "
                    "keep fewer (keep_tool_results) or use another strategy"
                ),
            )
        return plan
