"""What a compaction does with the history: the shared types of the strategies (PURE: no I/O,
no clock, no environment).

A strategy is a frozen dataclass that *decides*: given the entries a compaction works on (the
history before the compaction's ticket, without the static context: what
:meth:`~memorylab.Conversation.compaction_entries` returns, or a recorded transcript's
messages) and, when it needs them, each entry's tokens, its :meth:`Strategy.plan` returns a
:class:`CompactionPlan`: which entries go to the summarizer, which are kept verbatim, which of
the kept ones are rewritten (a cleared tool result), and which are dropped. It never calls a
summarizer or writes a file: the :class:`~memorylab.compress.ContextCompressor` carries a plan
out live, and a replay can apply the same object to a recorded transcript.

Each strategy has its own module (:mod:`.summary`, :mod:`.keep_recent`,
:mod:`.clear_tool_results`, :mod:`.trim`); the registry by name is
:mod:`~memorylab.compress._strategies`. The rules they share are here, once: the window of the
most recent entries (:meth:`KeepWindow.window_start`: never between a tool call and its
results) and the placeholder of a cleared tool result (:func:`render_placeholder`).

>>> plan = CompactionPlan(4, summarize=(0,), keep=(1, 2, 3))
>>> plan.removed, plan.dropped, plan.empty
((0,), (), False)
"""

from __future__ import annotations

import functools
import math
import re
import string
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any, ClassVar

from memorylab._validation import check_int, check_number
from memorylab.errors import InvalidSetting
from memorylab.memory._format import content_to_text
from memorylab.memory._records import EntryKind, entry_kind, is_tool_result

PLACEHOLDER = (
    "[memorylab: tool result cleared ({chars:,} characters); the original is in archive/{archive}]"
)
"""The default text of a cleared tool result: ``{archive}`` is the archive's file name (the one
the store chose), ``{chars}`` the original's length and ``{role}`` its role. Once that archive
is deleted (retention, purge), what reaches the model says so: a conversation that preloads
MEMORY.md, and the live history when retention deletes it right after the compaction, read
``archive/<name> (deleted since: the original is gone)`` (the memory core's rule,
``memory.conversation._note_gone_archives``, which also says why the file itself keeps the text
as written); the note sits in the ``{archive}`` field, so :func:`is_placeholder` still holds."""

NOT_ARCHIVED = "(none: this memory is not on disk)"
"""What ``{archive}`` reads when the compaction archived nothing (a memory-only conversation)."""

_FIELDS = frozenset({"archive", "chars", "role"})
_SAMPLE_ARCHIVE = "history_2026-01-01_00-00-00Z.md"  # as long as the names the store chooses
_KEEPABLE = (EntryKind.MESSAGE, EntryKind.SUMMARY)


def is_keepable(entry: Mapping[str, Any]) -> bool:
    """Whether an entry can be kept verbatim: a message or a summary (a block of MEMORY.md);
    never the static context, a preload (the compressor reads it as its messages for the
    strategies that keep entries) or an entry of a kind memorylab does not set."""
    return entry_kind(entry) in _KEEPABLE


def _text(entry: Mapping[str, Any]) -> str:
    return content_to_text(entry.get("content"))


def render_placeholder(
    template: str, archive: str | None, entry: Mapping[str, Any] | None = None
) -> str:
    """The text of a cleared tool result: ``template`` with ``{archive}`` (the archive's file
    name, or :data:`NOT_ARCHIVED`), ``{chars}`` (the original's length) and ``{role}``.

    >>> name = "history_2026-05-01_10-00-00Z.md"
    >>> render_placeholder(PLACEHOLDER, name, {"role": "Tool", "content": "x" * 1200})[:54]
    '[memorylab: tool result cleared (1,200 characters); th'
    >>> render_placeholder(PLACEHOLDER, name).endswith("archive/history_2026-05-01_10-00-00Z.md]")
    True
    """
    entry = entry or {}
    return template.format(
        archive=archive if archive is not None else NOT_ARCHIVED,
        chars=len(_text(entry)),
        role=str(entry.get("role", "")),
    )


@functools.lru_cache(maxsize=32)
def _placeholder_pattern(template: str) -> re.Pattern[str]:
    """What a text ``template`` rendered looks like (each field: any text)."""
    parts = []
    for literal, field, _, _ in string.Formatter().parse(template):
        parts.append(re.escape(literal))
        if field is not None:
            parts.append(".*?")
    return re.compile("".join(parts), re.DOTALL)


def check_placeholder(owner: str, template: object) -> str:
    """``template`` if it renders and names the archive, else :class:`InvalidSetting`."""
    if not isinstance(template, str) or not template.strip():
        raise InvalidSetting(f"{owner}.placeholder must be a non-blank str, not {template!r}")
    try:
        names = {field for _, field, _, _ in string.Formatter().parse(template) if field}
        if "archive" in names and not names - _FIELDS:
            render_placeholder(template, _SAMPLE_ARCHIVE, {"role": "Tool", "content": "x"})
    except (ValueError, KeyError, IndexError) as error:
        raise InvalidSetting(
            f"{owner}.placeholder={template!r} does not render ({error}); its fields are "
            "{archive}, {chars} and {role}"
        ) from None
    if "archive" not in names or names - _FIELDS:
        raise InvalidSetting(
            f"{owner}.placeholder={template!r} must name the archive that holds the original "
            "({archive}) and may use {chars} and {role}, no other field"
        )
    return template


def is_placeholder(template: str, text: str) -> bool:
    """Whether ``text`` is ``template`` rendered: a tool result cleared already (its original
    is in an older archive; clearing it again would point at an archive holding the
    placeholder)."""
    return _placeholder_pattern(template).fullmatch(text) is not None


def worth_clearing(template: str, entry: Mapping[str, Any]) -> bool:
    """Whether clearing ``entry`` (a tool result) with ``template`` saves anything: it is not
    cleared already (:func:`is_placeholder`) and is longer than its placeholder."""
    text = _text(entry)
    if is_placeholder(template, text):
        return False
    return len(text) > len(render_placeholder(template, _SAMPLE_ARCHIVE, entry))


@dataclass(frozen=True, slots=True)
class CompactionPlan:
    """What a strategy decided for ``size`` entries, by position among them.

    ``summarize``: the entries given to the summarizer, in order (none for strategies that call
    no model); ``keep``: the entries kept verbatim after the summary, in order; ``cleared``: the
    kept entries whose content becomes ``placeholder`` rendered with the archive's name
    (:meth:`kept_entries`); every other entry is dropped (its original stays in the archive).
    ``carry``: new entries the strategy writes right after the summary, before the kept ones
    (a fact ledger: :mod:`.ledger`). ``note`` says why a plan that changes nothing
    (:attr:`empty`) does so.
    """

    size: int
    summarize: tuple[int, ...] = ()
    keep: tuple[int, ...] = ()
    cleared: tuple[int, ...] = ()
    placeholder: str = PLACEHOLDER
    note: str = ""
    carry: tuple[Mapping[str, Any], ...] = ()

    def __post_init__(self) -> None:
        check_int("CompactionPlan.size", self.size, 0)
        if any(not isinstance(e, Mapping) or "role" not in e or "content" not in e
               for e in self.carry):  # fmt: skip
            raise InvalidSetting("CompactionPlan.carry must be entries with a role and content")
        for label, chosen in (("summarize", self.summarize), ("keep", self.keep)):
            if list(chosen) != sorted(set(chosen)) or any(not 0 <= i < self.size for i in chosen):
                raise InvalidSetting(
                    f"CompactionPlan.{label} must be increasing positions in 0..{self.size - 1}"
                )
        if set(self.summarize) & set(self.keep) or not set(self.cleared) <= set(self.keep):
            raise InvalidSetting(
                "CompactionPlan: an entry is either summarized or kept, and only kept entries "
                "are cleared"
            )

    @property
    def removed(self) -> tuple[int, ...]:
        """The entries that leave the history (summarized or dropped)."""
        kept = set(self.keep)
        return tuple(i for i in range(self.size) if i not in kept)

    @property
    def dropped(self) -> tuple[int, ...]:
        """The entries that leave the history without reaching a summary."""
        taken = set(self.keep) | set(self.summarize)
        return tuple(i for i in range(self.size) if i not in taken)

    @property
    def empty(self) -> bool:
        """Whether the plan changes nothing (no entry removed, none cleared, none carried)."""
        return len(self.keep) == self.size and not self.cleared and not self.carry

    def keeping(self, positions: Iterable[int]) -> CompactionPlan:
        """This plan with the entries at ``positions`` kept verbatim as they are (neither
        summarized, cleared nor dropped): what the compressor does with the turn in progress,
        pinned entries and those a hook keeps, whatever the strategy decided.

        >>> CompactionPlan(3, summarize=(0, 1, 2)).keeping([2]).keep
        (2,)
        """
        chosen = {i for i in positions if 0 <= i < self.size}
        if not chosen or (chosen <= set(self.keep) and not chosen & set(self.cleared)):
            return self
        return replace(
            self,
            summarize=tuple(i for i in self.summarize if i not in chosen),
            keep=tuple(sorted(set(self.keep) | chosen)),
            cleared=tuple(i for i in self.cleared if i not in chosen),
        )

    def kept_entries(
        self, entries: Sequence[Mapping[str, Any]], archive: str | None
    ) -> list[dict[str, Any]]:
        """The carried entries, then the kept ones in order, as they are after the compaction:
        copies, each cleared
        one with its content replaced by the placeholder naming ``archive`` (the archive the
        compaction wrote; ``None``: nothing archived). What a live compaction re-seeds
        MEMORY.md and the history with after the summary, and what a replay keeps."""
        if len(entries) != self.size:
            raise InvalidSetting(
                f"this plan is for {self.size} entries, not {len(entries)}: plan them again"
            )
        cleared = set(self.cleared)
        out = [dict(e) for e in self.carry]
        for index in self.keep:
            entry = dict(entries[index])
            if index in cleared:
                entry["content"] = render_placeholder(self.placeholder, archive, entries[index])
            out.append(entry)
        return out

    def counts(self) -> dict[str, int]:
        """How many entries were summarized, kept, cleared and dropped (a record's ``extra``)."""
        return {
            "summarized_messages": len(self.summarize),
            "kept_messages": len(self.keep),
            "cleared_messages": len(self.cleared),
            "dropped_messages": len(self.dropped),
            **({"carried_entries": len(self.carry)} if self.carry else {}),
        }


class Strategy:
    """The base of the strategies: a frozen dataclass (its fields are its settings) with a
    ``name`` (the registry's: :func:`~memorylab.compress.get_strategy`) and a :meth:`plan`.

    ``summarizes``: whether its plans give entries to the summarizer (the compressor builds one
    only then); ``verbatim``: whether it keeps entries verbatim (the compressor then reads a
    preload as the messages it holds, so they can be kept one by one).
    """

    __slots__ = ()

    name: ClassVar[str] = ""
    summarizes: ClassVar[bool] = True
    verbatim: ClassVar[bool] = False

    def plan(
        self,
        entries: Sequence[Mapping[str, Any]],
        *,
        tokens: Sequence[int] | None = None,
        context_length: int | None = None,
        counter: Callable[[str], int] | None = None,
    ) -> CompactionPlan:
        """Decide for ``entries`` (oldest first); ``tokens[i]``: the tokens of entry ``i`` as
        the model reads it, needed when :attr:`needs_tokens`; ``context_length``: the window
        (for a fraction of it); ``counter``: the conversation's token counter (for a strategy
        that sizes what it writes, such as a ledger)."""
        raise NotImplementedError

    @property
    def needs_tokens(self) -> bool:
        """Whether :meth:`plan` needs each entry's tokens."""
        return False

    def settings(self) -> dict[str, Any]:
        """The settings that are set (tuples as lists): what rebuilds it with its name."""
        out: dict[str, Any] = {}
        for item in fields(self):  # type: ignore[arg-type]
            value = getattr(self, item.name)
            if value is not None:
                out[item.name] = list(value) if isinstance(value, tuple) else value
        return out

    def record(self) -> dict[str, Any] | None:
        """What ``compactions.jsonl`` records of it (the ``strategy`` field): its name and
        settings; :func:`~memorylab.compress.strategy_from_record` rebuilds it from that."""
        return {"name": self.name, **self.settings()}

    def describe(self) -> str:
        """``name(setting=value, ...)``, as a table or a plot names it: the settings that
        decide, a text left at its default (a placeholder) left out, so a label fits a column."""
        defaults = {f.name: f.default for f in fields(self)}  # type: ignore[arg-type]
        settings = ", ".join(
            f"{k}={v!r}"
            for k, v in self.settings().items()
            if not (isinstance(v, str) and v == defaults.get(k))
        )
        return f"{self.name}({settings})"


@dataclass(frozen=True, slots=True)
class KeepWindow(Strategy):
    """A strategy that keeps the most recent entries: at most ``keep_messages`` of them, or
    the newest whose tokens fit ``keep_tokens``, or ``keep_fraction`` of the window (one of
    the three; the others ``None``). The window holds messages and summaries only (it ends at
    an entry of another kind), and never starts between a tool call and its results: it starts
    at the call then (as LangChain's ``SummarizationMiddleware`` moves its cut), so it may hold
    a little more than asked.
    """

    keep_messages: int | None = None
    keep_tokens: int | None = None
    keep_fraction: float | None = None

    DEFAULT_KEEP: ClassVar[tuple[str, int | float]] = ("keep_messages", 20)

    def __post_init__(self) -> None:
        owner = type(self).__name__
        given = [
            name
            for name in ("keep_messages", "keep_tokens", "keep_fraction")
            if getattr(self, name) is not None
        ]
        if len(given) > 1:
            raise InvalidSetting(
                f"{owner}: give one of keep_messages=, keep_tokens= or keep_fraction=, not "
                f"{' and '.join(given)}"
            )
        if not given:
            object.__setattr__(self, self.DEFAULT_KEEP[0], self.DEFAULT_KEEP[1])
        for name, what in (
            ("keep_messages", "the number of newest messages kept; 0 keeps none"),
            ("keep_tokens", "the tokens of the newest messages kept; 0 keeps none"),
        ):
            value = getattr(self, name)
            if value is not None:
                try:
                    object.__setattr__(self, name, check_int(f"{owner}.{name}", value, 0))
                except InvalidSetting as error:
                    raise InvalidSetting(f"{error} ({what})") from None
        if self.keep_fraction is not None:
            fraction = check_number(f"{owner}.keep_fraction", self.keep_fraction, 0.0, strict=False)
            if fraction > 1.0:
                raise InvalidSetting(
                    f"{owner}.keep_fraction must be in [0, 1] (a fraction of the window), not "
                    f"{self.keep_fraction!r}; for a token count use keep_tokens="
                )
            object.__setattr__(self, "keep_fraction", fraction)

    @property
    def needs_tokens(self) -> bool:
        return self.keep_messages is None

    def window_start(
        self,
        entries: Sequence[Mapping[str, Any]],
        tokens: Sequence[int] | None,
        context_length: int | None,
    ) -> int:
        """Where the window of the most recent entries starts (``len(entries)``: empty)."""
        size = len(entries)
        oldest = size
        while oldest > 0 and is_keepable(entries[oldest - 1]):
            oldest -= 1
        if self.keep_messages is not None:
            start = max(size - self.keep_messages, oldest)
        else:
            budget = self._budget(context_length)
            if tokens is None or len(tokens) != size:
                raise InvalidSetting(
                    f"{type(self).__name__} keeps by tokens: plan(entries, tokens=[...]) needs "
                    "each entry's token count"
                )
            start, used = size, 0
            while start > oldest and used + tokens[start - 1] <= budget:
                start -= 1
                used += tokens[start]
        if start < size:
            while start > oldest and is_tool_result(entries[start]):
                start -= 1  # a tool result is kept with the call it answers
            while start < size and is_tool_result(entries[start]):
                start += 1  # its call cannot be kept (not a message): nor can the result
        return start

    def _budget(self, context_length: int | None) -> int:
        if self.keep_tokens is not None:
            return self.keep_tokens
        assert self.keep_fraction is not None
        if context_length is None:
            raise InvalidSetting(
                f"{type(self).__name__}(keep_fraction={self.keep_fraction}) keeps a fraction of "
                "the window: plan(entries, tokens=..., context_length=...) needs the window"
            )
        return math.floor(self.keep_fraction * check_int("context_length", context_length, 1))

    def window_plan(
        self,
        entries: Sequence[Mapping[str, Any]],
        tokens: Sequence[int] | None,
        context_length: int | None,
        *,
        summarize_the_rest: bool,
        nothing: str,
    ) -> CompactionPlan:
        """Keep the window (:meth:`window_start`); the entries before it are summarized
        (``summarize_the_rest``) or dropped. A window holding every entry changes nothing,
        and its note says so, then ``nothing`` (what to do about it)."""
        size = len(entries)
        start = self.window_start(entries, tokens, context_length)
        note = f"{self.name} keeps all {size} entries ({self.keep_text()}): {nothing}"
        return CompactionPlan(
            size,
            summarize=tuple(range(start)) if summarize_the_rest else (),
            keep=tuple(range(start, size)),
            note="" if start else note,
        )

    def keep_text(self) -> str:
        """The setting in words, for a note."""
        if self.keep_messages is not None:
            return f"keep_messages={self.keep_messages}"
        if self.keep_tokens is not None:
            return f"keep_tokens={self.keep_tokens}"
        return f"keep_fraction={self.keep_fraction}"
