"""What of MEMORY.md is preloaded into a new conversation (PURE: no I/O, no clock).

The reference injects the whole file on every start, so a big file makes compression fire on the
very first loop. With a token budget, :func:`plan_preload` keeps the header, the latest
compaction summary and the newest messages that fit, and says in the preload what it left out
(the file itself is not changed).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from memorylab.memory import _format as fmt
from memorylab.memory._pins import PinKey, pin_key

OMITTED_NOTE = (
    "[memorylab: {omitted} older message(s) ({chars} characters) of MEMORY.md are not in this "
    "preload to stay within {budget} tokens; they are still in the file and its archives]"
)


@dataclass(frozen=True, slots=True)
class PreloadPlan:
    """The text to preload and what was left out of it."""

    text: str
    kept_messages: int
    omitted_messages: int = 0
    omitted_chars: int = 0

    @property
    def complete(self) -> bool:
        return self.omitted_messages == 0


def plan_preload(
    text: str,
    *,
    max_tokens: int | None = None,
    count: Callable[[str], int] | None = None,
    last_archive: Callable[[], str | None] = lambda: None,
    pins: Collection[PinKey] = frozenset(),
) -> PreloadPlan:
    """Choose what of ``text`` (a MEMORY.md) to preload within ``max_tokens``.

    Without a budget the whole text is kept. A text with no more UTF-8 bytes than the budget is
    kept without counting (a byte-level BPE token is at least one byte). Otherwise ``count``
    is needed; messages are counted newest first, so the cost follows the budget, not the file.
    The latest summary is kept first (with the summary blocks right before it: a summary and
    its fact ledger are written together): a marked one, or the unmarked one the reference's plain
    ``compact()`` opens the file with (``last_archive()``: the name of the agent's newest
    archive, asked for only when the file exceeds the budget and holds no marked summary;
    :func:`~memorylab.memory._format.opens_with_plain_summary`). The pinned blocks (``pins``:
    :mod:`memorylab.memory._pins`) are kept next, whatever they cost: they are carried
    verbatim through every compaction, so they must reach the model.

    >>> plan = plan_preload("# Agent Memory\\n", max_tokens=100)
    >>> plan.complete, plan.text
    (True, '# Agent Memory\\n')
    """
    if max_tokens is None or len(text.encode("utf-8")) <= max_tokens:
        return PreloadPlan(text, kept_messages=_count_blocks(text))
    if count is None:
        raise ValueError("a preload budget needs a token counter (count=...)")
    parsed = fmt.parse_file(text, strict=False)
    marker = text.find("\n## Interaction Log\n")
    header = text[: marker + len("\n## Interaction Log\n")] + "\n" if marker >= 0 else ""
    messages = list(parsed.blocks.messages())
    summary_index = max((i for i, m in enumerate(messages) if m.is_summary), default=None)
    if summary_index is None and fmt.opens_with_plain_summary(parsed, last_archive()):
        summary_index = 0  # the archive folder is listed only for a file with no marked one
    budget = max_tokens - count(header) - count(OMITTED_NOTE.format(omitted=0, chars=0, budget=0))
    kept: list[tuple[int, str]] = []
    first: list[int] = []  # the latest summary stands for what came before: every block the
    if summary_index is not None:  # compaction wrote together (a summary and its fact ledger)
        start = summary_index
        while start > 0 and messages[start - 1].is_summary:
            start -= 1
        first = list(range(start, summary_index + 1))
    if pins:
        pinned = (
            i for i, m in enumerate(messages) if pin_key(m.role, m.timestamp, m.content) in pins
        )
        first += [i for i in pinned if i != summary_index]
    for index in first:
        block = fmt.render_block(messages[index])
        kept.append((index, block))
        budget -= count(block)
    taken = set(first)
    for index in range(len(messages) - 1, -1, -1):
        if index in taken:
            continue
        block = fmt.render_block(messages[index])
        cost = count(block)
        if cost > budget:
            break
        kept.append((index, block))
        budget -= cost
    kept.sort()
    kept_indexes = {i for i, _ in kept}
    omitted = [m for i, m in enumerate(messages) if i not in kept_indexes]
    if not omitted:
        return PreloadPlan(text, kept_messages=len(messages))
    chars = sum(len(m.content) for m in omitted)
    note = OMITTED_NOTE.format(omitted=len(omitted), chars=chars, budget=max_tokens)
    body = "".join(block for _, block in kept)
    return PreloadPlan(
        header + note + "\n\n" + body,
        kept_messages=len(kept),
        omitted_messages=len(omitted),
        omitted_chars=chars,
    )


def _count_blocks(text: str) -> int:
    return text.count("\n### ") + (1 if text.startswith("### ") else 0)


def has_messages(text: str) -> bool:
    """Whether a memory file's text holds at least one message block."""
    return _count_blocks(text) > 0
