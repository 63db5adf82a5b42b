"""Recall as a memory condition: a memory read with the ``k`` messages of the history that best
match each question among those that left it (internal).

:func:`recall_conditions` expands a comparison's memories ``{label: summarizer}`` into one
condition per recall depth: depth 0 keeps the label, depth ``k`` is ``f"{label} + recall {k}"``.
The depths of one memory are :class:`RecallCondition` s over the same summarizer that share the
summaries made, so each case's memory is made once and every depth reads the same memory (a
model summarizer's calls are the same requests too: the same cache keys). The summary of a depth
``k > 0`` is a :class:`RecalledSummary`; its ``recall_k`` tells the probe reader
(:class:`~memorylab.evaluate.ProbeQAScorer`) how many messages to recall, and the plan how many
it will read.

The bounds keep their meaning: the full history with recall is still the full history (nothing
left it, so nothing is recalled: the same requests as the ceiling's), so its conditions keep
the ``"ceiling"`` bound; the floor with recall is no longer nothing ("recall alone"), so only
its depth 0 is the floor.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memorylab._validation import check_int, check_list
from memorylab.compress._base import BaseSummarizer, Summarizer, Summary
from memorylab.errors import InvalidSetting

if TYPE_CHECKING:
    from memorylab.llm import Caller


@dataclasses.dataclass(frozen=True, slots=True)
class RecalledSummary(Summary):
    """The summary of a memory condition with recall: its reader of each question also gets the
    ``recall_k`` messages of the history that best match it among those that left the memory."""

    recall_k: int = 0


_Made = dict[tuple[str, int | None], "asyncio.Task[Summary]"]


def _history_key(messages: Sequence[Mapping[str, Any]]) -> str:
    return hashlib.sha256(repr([dict(m) for m in messages]).encode("utf-8")).hexdigest()


class RecallCondition(BaseSummarizer):
    """The memory ``inner`` makes, read with ``recall_k`` recalled messages per question
    (module docstring). ``made``: the summaries of ``inner`` the depths of one comparison share
    (an event loop's tasks: a summary asked for by several depths at once is made once)."""

    def __init__(self, inner: Summarizer, recall_k: int, made: _Made | None = None) -> None:
        self.inner, self.recall_k = inner, recall_k
        self.name = inner.name
        self.model, self.local = inner.model, inner.local
        self.max_tokens, self.min_tokens = inner.max_tokens, inner.min_tokens
        self.bound = inner.bound if recall_k == 0 or inner.bound == "ceiling" else None
        self._made: _Made = {} if made is None else made

    def __repr__(self) -> str:
        return f"RecallCondition({self.inner!r}, recall_k={self.recall_k})"

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_made": {}}  # an executor's job: tasks stay in their loop

    def _marked(self, summary: Summary) -> Summary:
        if not self.recall_k:
            return summary
        made = {f.name: getattr(summary, f.name) for f in dataclasses.fields(Summary)}
        return RecalledSummary(**made, recall_k=self.recall_k)

    def summarize(
        self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None
    ) -> Summary:
        return self._marked(self.inner.summarize(messages, max_tokens=max_tokens))

    async def asummarize(
        self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None
    ) -> Summary:
        loop = asyncio.get_running_loop()
        key = (_history_key(messages), max_tokens)
        made = self._made.get(key)
        if made is None or made.get_loop() is not loop:  # none yet, or an earlier run's
            made = loop.create_task(self.inner.asummarize(messages, max_tokens=max_tokens))
            self._made[key] = made
        return self._marked(await asyncio.shield(made))  # one depth cancelled: not the others'

    def estimate(
        self, messages: Sequence[Mapping[str, Any]], max_tokens: int | None = None
    ) -> list[tuple[str, int, int]]:
        return self.inner.estimate(messages, max_tokens)

    def with_caller(self, wrap: Callable[[Caller], Caller]) -> RecallCondition:
        return RecallCondition(self.inner.with_caller(wrap), self.recall_k, self._made)

    def summary_of_case(self, case: Any) -> Summary | None:
        summary = self.inner.summary_of_case(case)
        return None if summary is None else self._marked(summary)


def recall_depths(recall: Any) -> tuple[int, ...]:
    """``recall`` checked: recall depths, ints >= 0, at least one, none repeated."""
    given = check_list("recall", recall, of="recall depths (0: none)")
    depths = tuple(check_int(f"recall[{i}]", k, 0) for i, k in enumerate(given))
    if not depths:
        raise InvalidSetting("recall needs at least one depth: recall=(0,) (no recall) or (0, 5)")
    repeated = sorted({k for k in depths if depths.count(k) > 1})
    if repeated:
        raise InvalidSetting(f"recall repeats the depth {repeated[0]}: name each depth once")
    return depths


def condition_label(label: str, recall_k: int) -> str:
    """The label of memory ``label`` read with ``recall_k`` recalled messages."""
    return f"{label} + recall {recall_k}" if recall_k else label


def recall_conditions(
    memories: Mapping[str, Summarizer], recall: Sequence[int]
) -> dict[str, Summarizer]:
    """``memories`` (``{label: summarizer}``) once per depth of ``recall``, depth by depth
    (module docstring); ``memories`` itself for ``recall=(0,)``."""
    depths = recall_depths(recall)
    if depths == (0,):
        return dict(memories)
    shared: dict[str, _Made] = {label: {} for label in memories}
    out: dict[str, Summarizer] = {}
    for k in depths:
        for label, summarizer in memories.items():
            name = condition_label(label, k)
            if name in out:
                raise InvalidSetting(
                    f"the condition {name!r} is named twice (a memory is labelled like another's "
                    "recall condition): rename it in a dict {label: summarizer}"
                )
            out[name] = RecallCondition(summarizer, k, shared[label])
    return out
