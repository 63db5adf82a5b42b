"""Offline baselines: summaries any real summarizer should beat, and the two bounds.

Both render the history as a transcript (:func:`memorylab.memory._format.history_line`
blocks separated by blank lines), count tokens with
:func:`memorylab.compress._tokens.get_token_counter` (``model=None``: the cl100k_base
approximation) and keep whole messages while they fit; the message at the edge is cut at a token
boundary. Deterministic, no model, no network, ``cost_usd=0.0``.

* :class:`TruncateSummarizer` (``"memorylab/truncate"``) — the last ``max_tokens`` tokens of the
  transcript: what an agent keeps when it simply drops its oldest messages (``keep="head"``:
  the first tokens instead, the classic "lead" baseline).
* :class:`HeadTailSummarizer` (``"memorylab/head-tail"``) — the first ``head_share`` of the
  budget from the start (the original task) and the rest from the end (the latest state), with
  an omission marker between them.

The reference summarizers are the bounds of every comparison, not compactors (they ignore
``max_tokens``; never give them to a ``ContextCompressor``):

* :class:`FullHistory` (``"memorylab/full"``, the ceiling) — the whole transcript unchanged, as
  the model would read it (timestamps included): what any summary loses is measured against it;
* :class:`NoSummary` (``"memorylab/none"``, the floor) — nothing: an empty summary, what a
  reader answers from world knowledge and guessing alone.

A scorer that does not rank the ceiling clearly above the floor on a set of cases measures
nothing there (:func:`memorylab.evaluate.summary_table` says so).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from memorylab.compress._base import (
    BaseSummarizer,
    BudgetedSummarizer,
    Summary,
    check_history,
    local_summary,
)
from memorylab.compress._tokens import TokenCounter, get_token_counter
from memorylab.errors import InvalidSetting
from memorylab.llm import check_int
from memorylab.memory import _format as fmt

OMISSION_MARKER = "[… {count} messages omitted …]"
"""Put between the head and the tail by :class:`HeadTailSummarizer`."""

_SEPARATOR = "\n\n"


def _longest(text: str, limit: int, counter: TokenCounter, *, from_end: bool) -> str:
    """The longest prefix (or suffix) of ``text`` within ``limit`` tokens (binary search)."""
    if limit <= 0:
        return ""
    if counter.count(text) <= limit:
        return text
    low, high = 0, len(text)
    while low < high:
        mid = (low + high + 1) // 2
        piece = text[len(text) - mid :] if from_end else text[:mid]
        if counter.count(piece) <= limit:
            low = mid
        else:
            high = mid - 1
    return text[len(text) - low :] if from_end else text[:low]


def _take(
    blocks: Sequence[str], limit: int, counter: TokenCounter, *, from_end: bool
) -> tuple[list[str], int]:
    """Whole blocks from one end while they fit, then part of the next; and how many were used
    (a partly kept block counts as used)."""
    order = list(reversed(blocks)) if from_end else list(blocks)
    kept: list[str] = []
    used = 0
    for block in order:
        cost = counter.count(block) + (1 if kept else 0)
        if used + cost <= limit:
            kept.append(block)
            used += cost
            continue
        room = limit - used - (1 if kept else 0)
        part = _longest(block, room, counter, from_end=from_end).strip()
        if part and room >= 4:
            kept.append(("… " + part) if from_end else (part + " …"))
        break
    taken = len(kept)
    if from_end:
        kept.reverse()
    return kept, taken


class TruncateSummarizer(BudgetedSummarizer):
    """The transcript cut to ``max_tokens`` tokens: its end (``keep="tail"``) or its start."""

    name = "memorylab/truncate"

    def __init__(
        self,
        max_tokens: int = 1024,
        *,
        keep: Literal["tail", "head"] = "tail",
        model: str | None = None,
    ) -> None:
        self.max_tokens = check_int("max_tokens", max_tokens, self.min_tokens)
        if keep not in ("tail", "head"):
            raise InvalidSetting(f"keep must be 'tail' or 'head', not {keep!r}")
        self.keep = keep
        self.model = model

    def __repr__(self) -> str:
        return f"TruncateSummarizer(max_tokens={self.max_tokens}, keep={self.keep!r})"

    def text(
        self, messages: Sequence[Mapping[str, Any]], budget: int, counter: TokenCounter
    ) -> str:
        kept, _ = _take(fmt.history_lines(messages), budget, counter, from_end=self.keep == "tail")
        return _SEPARATOR.join(kept)


class HeadTailSummarizer(BudgetedSummarizer):
    """The start and the end of the transcript within ``max_tokens`` tokens."""

    name = "memorylab/head-tail"

    def __init__(
        self, max_tokens: int = 1024, *, head_share: float = 0.3, model: str | None = None
    ) -> None:
        self.max_tokens = check_int("max_tokens", max_tokens, self.min_tokens)
        if (
            isinstance(head_share, bool)
            or not isinstance(head_share, int | float)
            or not (0 < head_share < 1)
        ):
            raise InvalidSetting(f"head_share must be a number in (0, 1), not {head_share!r}")
        self.head_share = float(head_share)
        self.model = model

    def __repr__(self) -> str:
        return f"HeadTailSummarizer(max_tokens={self.max_tokens}, head_share={self.head_share})"

    def text(
        self, messages: Sequence[Mapping[str, Any]], budget: int, counter: TokenCounter
    ) -> str:
        blocks = fmt.history_lines(messages)
        whole = _SEPARATOR.join(blocks)
        if counter.count(whole) <= budget:
            return whole
        marker_cost = counter.count(OMISSION_MARKER.format(count=len(blocks))) + 2
        room = budget - marker_cost
        head, head_used = _take(blocks, int(room * self.head_share), counter, from_end=False)
        head_cost = counter.count(_SEPARATOR.join(head)) + (1 if head else 0)
        rest = blocks[head_used:]
        tail, tail_used = _take(rest, room - head_cost, counter, from_end=True)
        omitted = len(blocks) - head_used - tail_used
        marker = OMISSION_MARKER.format(count=max(omitted, 0))
        return _SEPARATOR.join([*head, marker, *tail])


class _Bound(BaseSummarizer):
    """A reference summarizer: local, free, deterministic; ``max_tokens`` is ignored."""

    bound: str

    def __init__(self, model: str | None = None) -> None:
        self.model = model

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def text(self, messages: Sequence[Mapping[str, Any]]) -> str:
        raise NotImplementedError

    def summarize(
        self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None
    ) -> Summary:
        started = time.perf_counter()
        check_history(messages)
        counter = get_token_counter(self.model)
        return local_summary(self.name, messages, self.text(messages), counter, started)


class FullHistory(_Bound):
    """The ceiling: the whole history as a transcript (``memorylab/full``)."""

    name = "memorylab/full"
    bound = "ceiling"

    def text(self, messages: Sequence[Mapping[str, Any]]) -> str:
        return fmt.history_text(messages)


class NoSummary(_Bound):
    """The floor: an empty summary (``memorylab/none``)."""

    name = "memorylab/none"
    bound = "floor"

    def text(self, messages: Sequence[Mapping[str, Any]]) -> str:
        return ""


CEILING = FullHistory.name
FLOOR = NoSummary.name
BOUNDS = (CEILING, FLOOR)
"""The reference summarizers' names: the ceiling and the floor of a comparison."""
