"""The compaction hooks: what a ``before_compaction`` callback is shown, and how what it keeps
is checked, recorded and replayed.

``ContextCompressor(before_compaction=..., after_compaction=...)`` (and the same on the
:class:`~memorylab.Agent`): before a compaction is carried out, ``before_compaction`` receives
a :class:`CompactionPreview` (the plan, the entries, the facts that will leave the context) and
may return the positions of entries to keep as well; after a successful one,
``after_compaction`` receives its :class:`~memorylab.memory._records.CompactionEvent`. Both are
recorded in the compaction's ``extra`` (``hooks``: their names and the entries the first one
kept, by role and timestamp: :func:`kept_marks`), so a replay keeps the same entries without
the callback (:func:`keep_recorded`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from memorylab.compress._strategy import CompactionPlan, Strategy
from memorylab.errors import InvalidSetting
from memorylab.memory import _format as fmt

if TYPE_CHECKING:
    from memorylab.transcripts import Fact


@dataclass(frozen=True, slots=True)
class CompactionPreview:
    """What a ``before_compaction`` hook is shown of the compaction about to happen.

    ``plan``: what will be done, by position among ``entries`` (the turn in progress and
    pinned entries already kept); ``entries``: read-only copies of the entries the compaction
    works on (the history without the static context); ``leaving``: the facts
    (:func:`memorylab.evaluate.extract_facts`) of the entries that will leave the context,
    summarized, dropped or cleared, each fact's ``message_index`` its entry's position;
    ``tokens_before``: the history's tokens; ``context_length``: the window; ``strategy``: the
    compressor's strategy. The hook may return positions of ``entries`` to keep verbatim too.
    """

    plan: CompactionPlan
    entries: tuple[Mapping[str, Any], ...]
    leaving: tuple[Fact, ...]
    tokens_before: int
    context_length: int
    strategy: Strategy

    @classmethod
    def of(
        cls,
        plan: CompactionPlan,
        entries: Sequence[Mapping[str, Any]],
        *,
        tokens_before: int,
        context_length: int,
        strategy: Strategy,
    ) -> CompactionPreview:
        """The preview of ``plan`` over ``entries``: copies the hook cannot change, and the
        facts of what leaves (the removed entries and the cleared ones, in order)."""
        from dataclasses import replace

        from memorylab._facts import extract_facts  # the lab's one fact rule, loaded on use

        leaving = sorted(set(plan.removed) | set(plan.cleared))
        facts = extract_facts([entries[i] for i in leaving])
        return cls(
            plan=plan,
            entries=tuple(MappingProxyType(copy.deepcopy(dict(e))) for e in entries),
            leaving=tuple(replace(f, message_index=leaving[f.message_index or 0]) for f in facts),
            tokens_before=tokens_before,
            context_length=context_length,
            strategy=strategy,
        )


def hook_name(hook: Callable[..., Any]) -> str:
    """What a record names a hook by: its qualified name (a callable object: its class's)."""
    name = getattr(hook, "__qualname__", None)
    return name if isinstance(name, str) else type(hook).__qualname__


def kept_positions(returned: object, size: int) -> tuple[int, ...]:
    """The positions a ``before_compaction`` hook returned (``None``: none), checked: ints in
    ``0..size-1``; anything else is an :class:`InvalidSetting` saying what to return."""
    if returned is None:
        return ()
    wanted = (
        "before_compaction must return None or an iterable of positions (ints) of "
        f"preview.entries to keep, each in 0..{size - 1}"
    )
    if isinstance(returned, str | bytes | Mapping) or not isinstance(returned, Iterable):
        raise InvalidSetting(f"{wanted}; it returned {returned!r}")
    positions = list(returned)
    bad = [p for p in positions if isinstance(p, bool) or not isinstance(p, int)
           or not 0 <= p < size]  # fmt: skip
    if bad:
        raise InvalidSetting(f"{wanted}; it returned {bad[:5]!r} among them")
    return tuple(sorted(set(positions)))


def kept_marks(entries: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """How a record names the entries a hook kept: their role and timestamp."""
    return [{"role": e.get("role"), "timestamp": e.get("timestamp")} for e in entries]


def _instant(value: object) -> datetime | None:
    try:
        return fmt.parse_timestamp(str(value))
    except ValueError:
        return None


def keep_recorded(
    marks: Iterable[Mapping[str, Any]],
) -> Callable[[CompactionPreview], list[int]]:
    """A ``before_compaction`` hook keeping the entries of the recorded ``marks``
    (:func:`kept_marks`: a role and a timestamp, compared as instants): what a replay runs in
    place of the hooks of the run it replays. It keeps them at every compaction, the marks of
    all the run's compactions together: a live hook that kept an entry once and let it go at a
    later compaction replays differently (marks per compaction would mean nothing to a replay at
    another threshold, whose compactions are others)."""
    wanted = {(str(m.get("role")), _instant(m.get("timestamp"))) for m in marks}

    def keep_recorded_entries(preview: CompactionPreview) -> list[int]:
        return [
            i
            for i, entry in enumerate(preview.entries)
            if (str(entry.get("role")), _instant(entry.get("timestamp"))) in wanted
        ]

    return keep_recorded_entries
