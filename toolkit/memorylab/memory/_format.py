"""The MEMORY.md byte format: a PURE renderer and parser (no I/O, no clock, no environment).

The spec is ``docs/memory-format.md``. In short, a file is a header followed by message blocks::

    # Agent Memory
    <blank>
    **Conversation:** {name}
    **Created:** {ISO-8601}
    **Format:** memorylab/1            <- memorylab only
    **Continues:** history_....md      <- memorylab only, after a compaction (lineage)
    <blank>
    ---
    <blank>
    ## Interaction Log
    <blank>
    ### {role} — {ISO-8601}           <- one block per message (U+2014 EM DASH)
    <blank>
    {content, escaped}
    <blank>
    ---
    <blank>

The header and blocks are byte-identical to what the reference framework (swarms) writes, so it
can keep preloading files memorylab wrote. Unlike the reference, content lines that could be read
as structure are escaped with one leading backslash, which markdown renders as the same text; the
parser removes it again, so ``parse(render_memory(doc)) == doc`` for any role and content.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal, overload

from memorylab.errors import MemoryFormatError
from memorylab.memory._records import EDIT_ARCHIVE_SUFFIX, SUMMARY_PREFIX, MemoryDocument, Message
from memorylab.results import FormerPair, Result

FORMAT_VERSION = 1
"""The newest format version this memorylab writes and reads (``**Format:** memorylab/1``)."""

EM_DASH = "\u2014"
TITLE_LINE = "# Agent Memory"
LOG_LINE = "## Interaction Log"
SEPARATOR_LINE = "---"
_HEADING_SEP = f" {EM_DASH} "
_LOG_MARKER = f"\n{LOG_LINE}\n"

# ISO-8601 as Python writes it: naive or aware, with or without a fraction.
_TS = (
    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?"
    r"(?:Z|[+-]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?)?"
)
_TS_RE = re.compile(_TS + r"\Z")
_HEADING_RE = re.compile(r"### (?P<role>[^\n]*) \u2014 (?P<ts>" + _TS + r")[ \t]*\n")
_HEADER_FIELD_RE = re.compile(r"\*\*(?P<key>[^*\n]+):\*\*(?: (?P<value>.*))?\Z")
_FORMAT_VALUE_RE = re.compile(r"memorylab/(\d+)\Z")
_KNOWN_FIELDS = ("Conversation", "Created", "Format", "Continues")


@dataclass(frozen=True, slots=True)
class FormatProblem:
    """One thing wrong with a file, found by a lenient parse (``line`` is 1-based)."""

    line: int
    kind: str
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


@dataclass(frozen=True, slots=True)
class ParseResult(FormerPair, Result):
    """What a lenient read found (``parse_memory`` / ``read_memory`` with ``strict=False``):
    ``document``, everything that could be read, and ``problems``, what was wrong (in order).

    It replaces the ``(document, problems)`` tuple of earlier versions: unpacking or indexing it
    that way still works for now and warns (``DeprecationWarning``).
    """

    document: MemoryDocument
    problems: list[FormatProblem]

    _former: ClassVar[tuple[str, str, str]] = (
        "parse_memory/read_memory(..., strict=False)",
        "document",
        "problems",
    )


@dataclass(frozen=True, slots=True)
class Blocks:
    """A file's message blocks as columns, the parser's own output: ``roles``, ``contents``
    (unescaped) and ``timestamps``, an item per message in the file's order.

    :meth:`messages` makes :class:`Message` records of them when they are asked for
    (:func:`parse`); the loaders (``memory_df``) read the columns, so a file of a million
    messages makes no million records.
    """

    roles: list[str]
    contents: list[str]
    timestamps: list[datetime]

    def __len__(self) -> int:
        return len(self.roles)

    def messages(self) -> tuple[Message, ...]:
        """The blocks as :class:`Message` records, in order."""
        return tuple(map(Message, self.roles, self.contents, self.timestamps))

    @classmethod
    def of(cls, messages: Iterable[Message]) -> Blocks:
        """The columns of ``messages`` (a document read already)."""
        listed = list(messages)
        return cls(
            [m.role for m in listed], [m.content for m in listed], [m.timestamp for m in listed]
        )


@dataclass(frozen=True, slots=True)
class ParsedFile(Result):
    """A memory file as :func:`parse_file` reads it: the header's fields, the message
    ``blocks`` as columns (no :class:`Message` made yet) and the ``problems`` found, in order
    (none when it parsed cleanly). :meth:`document` is the :class:`MemoryDocument` that
    :func:`parse` returns."""

    conversation_name: str | None
    created: datetime | None
    blocks: Blocks
    format_version: int | None = None
    continues: str | None = None
    extra_header: tuple[tuple[str, str], ...] = ()
    problems: list[FormatProblem] = field(default_factory=list)

    def document(self) -> MemoryDocument:
        """The file as a :class:`MemoryDocument` (its blocks made :class:`Message` records)."""
        return MemoryDocument(
            conversation_name=self.conversation_name,
            created=self.created,
            messages=self.blocks.messages(),
            format_version=self.format_version,
            continues=self.continues,
            extra_header=self.extra_header,
        )

    def header(self) -> tuple[object, ...]:
        """The header's fields: name, created, format version, continues, extra lines."""
        return (
            self.conversation_name,
            self.created,
            self.format_version,
            self.continues,
            self.extra_header,
        )

    @classmethod
    def of(cls, document: MemoryDocument, problems: Iterable[FormatProblem] = ()) -> ParsedFile:
        """The columns of a document read already (an export read back)."""
        return cls(
            document.conversation_name,
            document.created,
            Blocks.of(document.messages),
            document.format_version,
            document.continues,
            document.extra_header,
            list(problems),
        )


# ---------------------------------------------------------------------------------------------
# Escaping


# What a content line may not start with unescaped: any backslashes, then a "---" or "###"
# line, a "### " heading, or the header's title or log line ("\r"s before a line end count
# as the end: CRLF files are read with "\n"). Matched after the "\n" that starts the line.
_STRUCTURE = r"\\*(?:---\r*(?:\n|\Z)|###(?: |\r*(?:\n|\Z))|# Agent Memory|## Interaction Log)"
_NEEDS_ESCAPE = re.compile(r"\n(?=" + _STRUCTURE + ")")
_ESCAPED = re.compile(r"\n\\(?=" + _STRUCTURE + ")")
_ESCAPED_FIRST = re.compile(r"\\(?=" + _STRUCTURE + ")")


def written_by_memorylab(stamp: str) -> bool:
    """Whether a block with this heading timestamp was written by memorylab, so its content is
    escaped: memorylab's timestamps always carry a UTC offset, the reference framework's never
    do (naive local time). Escaping is a property of each block, not of the file: one file
    may hold blocks of both writers."""
    return len(stamp) > 19 and (stamp[-1] == "Z" or "+" in stamp[19:] or "-" in stamp[19:])


def escape_content(text: str) -> str:
    """Prefix every line that could pass for structure with one backslash (markdown shows the
    same text); lines that already start with backslashes get one more, so unescaping is exact.
    """
    marked = "\n" + text  # so the first line starts after a "\n" too
    if _NEEDS_ESCAPE.search(marked) is None:  # most text: one search, no copy returned
        return text
    return _NEEDS_ESCAPE.sub("\n\\\\", marked)[1:]


def unescape_content(text: str) -> str:
    """Undo :func:`escape_content` exactly."""
    if "\\" not in text:
        return text
    if text.startswith("\\") and _ESCAPED_FIRST.match(text):  # escaped as after a "\n"
        text = text[1:]
    return _ESCAPED.sub("\n", text)


# ---------------------------------------------------------------------------------------------
# Rendering


def content_to_text(content: Any) -> str:
    """The text stored for a message's content.

    Strings are kept exactly (no stripping, unlike the reference); dicts and lists become JSON
    (UTF-8, not ASCII-escaped; unknown objects inside via ``str()``); ``None`` becomes ``""``;
    anything else is written with ``str()``.
    """
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, dict | list | tuple):
        return json.dumps(content, ensure_ascii=False, default=str)
    return str(content)


def format_timestamp(value: datetime) -> str:
    """ISO-8601 with microseconds, as memorylab writes it (timezone-aware when ``value`` is)."""
    return value.isoformat(timespec="microseconds")


def parse_timestamp(text: str) -> datetime:
    """Parse an ISO-8601 timestamp as found in memory files (naive or aware, any fraction)."""
    if not _TS_RE.match(text):
        raise ValueError(f"not an ISO-8601 timestamp: {text!r}")
    return datetime.fromisoformat(text)


def validate_role(role: str) -> str:
    """Return ``role`` if it can be a block heading: a non-blank single line."""
    if not isinstance(role, str):
        raise ValueError(f"a role must be a string, got {type(role).__name__}")
    return _checked_role(role)


@functools.lru_cache(maxsize=4096)  # roles repeat: each distinct one is checked once
def _checked_role(role: str) -> str:
    if not role.strip():
        raise ValueError("a role must not be empty or blank; use e.g. 'User', 'System' or a name")
    if role.splitlines() != [role]:
        raise ValueError(f"a role must be a single line without line breaks, got {role!r}")
    return role


def _single_line(name: str, value: str) -> str:
    if value.splitlines() != [value] and value != "":
        raise ValueError(f"the header field {name} must be a single line, got {value!r}")
    return value


def render_header(
    conversation_name: str,
    created: datetime,
    *,
    format_version: int | None = FORMAT_VERSION,
    continues: str | None = None,
    extra_header: Iterable[tuple[str, str]] = (),
) -> str:
    """The header block; with ``format_version=None`` and no lineage it is the reference's bytes."""
    lines = [
        TITLE_LINE,
        "",
        f"**Conversation:** {_single_line('Conversation', conversation_name)}",
        f"**Created:** {format_timestamp(created)}",
    ]
    if format_version is not None:
        lines.append(f"**Format:** memorylab/{int(format_version)}")
    if continues is not None:
        lines.append(f"**Continues:** {_single_line('Continues', continues)}")
    for key, value in extra_header:
        if key in _KNOWN_FIELDS or not _HEADER_FIELD_RE.match(f"**{key}:** x"):
            raise ValueError(f"cannot write the extra header field {key!r}")
        lines.append(f"**{key}:** {_single_line(key, value)}")
    lines += ["", SEPARATOR_LINE, "", LOG_LINE, "", ""]
    return "\n".join(lines)


def render_block(message: Message) -> str:
    """One message block, ending with the separator and a blank line."""
    return block_text(message.role, format_timestamp(message.timestamp), message.content)


def block_text(role: str, timestamp: str, content: str) -> str:
    """The block of ``content`` under a heading of ``role`` and the already formatted
    ``timestamp`` (what an append writes; ``role`` is validated).

    A timestamp with a UTC offset (memorylab writes no other) marks the block as memorylab's:
    its content is escaped. A naive one is the reference framework's form, written as it
    writes it: verbatim.
    """
    role = validate_role(role)
    if written_by_memorylab(timestamp):
        content = escape_content(content)
    return f"### {role}{_HEADING_SEP}{timestamp}\n\n{content}\n\n---\n\n"


def render_memory(doc: MemoryDocument) -> str:
    """The whole file for ``doc`` (it needs a header: ``conversation_name`` and ``created``)."""
    if doc.conversation_name is None or doc.created is None:
        raise ValueError(
            "cannot render a document without a header: set conversation_name and created "
            "(dataclasses.replace(doc, conversation_name=..., created=...))"
        )
    head = render_header(
        doc.conversation_name,
        doc.created,
        format_version=doc.format_version,
        continues=doc.continues,
        extra_header=doc.extra_header,
    )
    return head + "".join(render_block(m) for m in doc.messages)


# ---------------------------------------------------------------------------------------------
# History lines: the text the model reads (not the file format)


def history_line(role: str, content: Any, timestamp: datetime | str | None = None) -> str:
    """``[<timestamp>] <role>: <content>``, one entry of the history as the model reads it
    (:meth:`memorylab.Conversation.return_history_as_string`); without a timestamp,
    ``<role>: <content>``.

    A ``datetime`` is written as memorylab stamps messages (:func:`format_timestamp`), a string
    as it is; content goes through :func:`content_to_text`. Summarizers, token counts and
    replays all read the history through this one function, so they count the same text.

    >>> history_line("User", "hi", "2026-04-20T09:00:00.000000+00:00")
    '[2026-04-20T09:00:00.000000+00:00] User: hi'
    >>> history_line("Tool", {"rows": 3})
    'Tool: {"rows": 3}'
    """
    text = content_to_text(content)
    if timestamp is None or timestamp == "":
        return f"{role}: {text}"
    stamp = format_timestamp(timestamp) if isinstance(timestamp, datetime) else timestamp
    return f"[{stamp}] {role}: {text}"


def history_lines(entries: Iterable[Mapping[str, Any]]) -> list[str]:
    """:func:`history_line` of each ``{"role", "content"[, "timestamp"]}`` entry."""
    return [
        history_line(str(e.get("role") or "unknown"), e.get("content"), e.get("timestamp"))
        for e in entries
    ]


def history_text(entries: Iterable[Mapping[str, Any]]) -> str:
    """The entries' :func:`history_lines`, separated by blank lines (a transcript)."""
    return "\n\n".join(history_lines(entries))


# ---------------------------------------------------------------------------------------------
# Parsing


class _Problems:
    """Problems by offset in the text; their line numbers are counted once, in one pass, when
    the parse ends (so a file with many problems still parses in linear time)."""

    def __init__(self) -> None:
        self.found: list[tuple[int, str, str]] = []

    def add(self, offset: int, kind: str, message: str) -> None:
        self.found.append((max(offset, 0), kind, message))

    def numbered(self, text: str) -> list[FormatProblem]:
        """The problems in the order found, with 1-based line numbers in ``text``."""
        lines: dict[int, int] = {}
        line = 1
        at = 0
        for offset in sorted({offset for offset, _, _ in self.found}):
            line += text.count("\n", at, offset)
            lines[offset] = line
            at = offset
        return [FormatProblem(lines[offset], kind, message) for offset, kind, message in self.found]


def _parse_header(head: str, problems: _Problems) -> _Header:
    name: str | None = None
    created: datetime | None = None
    version: int | None = None
    continues: str | None = None
    extra: list[tuple[str, str]] = []
    offset = 0
    for line in head.split("\n"):
        here = offset
        offset += len(line) + 1
        if line in ("", TITLE_LINE, SEPARATOR_LINE, LOG_LINE):
            continue
        match = _HEADER_FIELD_RE.match(line)
        if match is None:
            problems.add(here, "header", f"unexpected header line {line!r}")
            continue
        key, value = match["key"], match["value"] or ""
        if key == "Conversation":
            name = value
        elif key == "Created":
            try:
                created = parse_timestamp(value)
            except ValueError:
                problems.add(here, "header", f"the Created field is not a timestamp: {value!r}")
        elif key == "Format":
            found = _FORMAT_VALUE_RE.match(value)
            if found is None:
                problems.add(here, "header", f"unknown format {value!r}")
                continue
            version = int(found[1])
            if version > FORMAT_VERSION:
                problems.add(
                    here,
                    "version",
                    f"written by a newer memorylab (format {found[1]}, this one reads up to "
                    f"{FORMAT_VERSION}): upgrade memorylab to read it",
                )
        elif key == "Continues":
            continues = value
        else:
            extra.append((key, value))
    if name is None:
        problems.add(0, "header", "the header has no **Conversation:** line")
    if created is None and "**Created:**" not in head:
        problems.add(0, "header", "the header has no **Created:** line")
    return name, created, version, continues, tuple(extra)


# A block ends with "\n\n---\n\n". Reference files are not escaped, so a separator also has to
# be followed by the next heading (or by nothing but blank space, :func:`_closing_separator`):
# that keeps most "---" lines in content intact. The parser reads a file in columns, each
# step one C call or one list comprehension over all of its blocks, never a Python call per
# block: one ``re.split`` (:data:`_CUT_RE`) cuts the whole text at the separators that a
# heading line follows and returns, with the heading lines, the blocks' contents (each copied
# once); the headings are then checked together (:func:`_read_heads`). Blocks that need more
# (torn, forged, hand-edited) are found in the same pass and read by position.
#
# The split: a separator line after a blank line, then a heading line (a candidate, checked
# after) and the blank line under it, unless a separator line may follow (the split goes on
# from there, where it finds one after the blank line; one that starts at the heading's line
# end is looked for by position, :func:`_spans_of`); or a separator line that ends in a space
# or a tab (a hand edit, :func:`_tighten`). The groups: the heading line after "### ", the
# blank line, the space or tab.
_CUT_RE = re.compile(r"\n\n---(?:\n\n### ([^\n]*)\n(?:(\n)(?!\n?---))?|([ \t]))")
_NEXT_BLOCK = "\n\n---\n\n### "
# The same search over a file's UTF-8 bytes (its pattern is ASCII, and no byte of a character
# beyond ASCII is one of them): the parts, decoded, are those of the text.
_CUT_BYTES = re.compile(_CUT_RE.pattern.encode())
_BOM_BYTES = "\ufeff".encode()
# Inside a block memorylab wrote (content escaped) a heading at a line start followed by a
# blank line means the block was torn and the next one written after it. Matched from
# the "\n" before it; the blank line's "\n" is not consumed, so the next heading is found too.
_TORN_AT_RE = re.compile(r"\n### [^\n]* \u2014 " + _TS + r"\n(?=\n)")
_NOT_SPACE = re.compile(r"\S")
# What a write interrupted inside the closing "\n\n---\n\n" leaves at the end of a torn block.
_TORN_TAILS = ("\n\n---\n", "\n\n---", "\n\n--", "\n\n-", "\n\n", "\n")
_Heading = tuple[str, str, bool]  # role, timestamp, written by memorylab (content escaped)
# the header's name, created, format version, continues and other lines
_Header = tuple[str | None, datetime | None, int | None, str | None, tuple[tuple[str, str], ...]]
_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")


def _stamp_kind(stamp: str) -> int:
    """0: not a heading's timestamp (:data:`_TS`); 1: naive (the reference framework's); 2: with
    a UTC offset (memorylab's, :func:`written_by_memorylab`)."""
    if _TS_RE.match(stamp) is None:
        return 0
    return 2 if written_by_memorylab(stamp) else 1


def _stamp_kinds(stamps: list[str]) -> list[int]:
    """:func:`_stamp_kind` of each stamp, decided once per shape.

    Both rules read a stamp's shape only (``_TS`` holds no literal digit; the writer is told by
    the length and the signs), so a stamp is of the kind of its shape, every ASCII digit made
    "0"; a file's stamps have a handful of shapes, most often one (a regex per block was the
    parser's largest cost)."""
    if not stamps:
        return []
    # a stamp holds no line break
    shapes = ("\n".join(stamps) + "\n").encode("utf-8", "surrogatepass").translate(_DIGITS_TO_ZERO)
    first = shapes[: shapes.index(b"\n") + 1]
    # n occurrences of the first shape fill the n shapes only where all are that one
    if len(shapes) == len(first) * len(stamps) and shapes.count(first) == len(stamps):
        return [_stamp_kind(first[:-1].decode("utf-8", "surrogatepass"))] * len(stamps)
    each = shapes.split(b"\n")[:-1]
    kinds = {s: _stamp_kind(s.decode("utf-8", "surrogatepass")) for s in set(each)}
    return list(map(kinds.__getitem__, each))


@dataclass(frozen=True, slots=True)
class _Heads:
    """Block headings as columns: ``kinds[i]`` is 0 where there is no heading (its role and
    stamp mean nothing), 1 for a naive timestamp (the reference framework's), 2 for one with a
    UTC offset (memorylab's: the content is escaped)."""

    roles: list[str]
    stamps: list[str]
    kinds: list[int]

    def __len__(self) -> int:
        return len(self.kinds)

    def taken(self, kept: list[int]) -> _Heads:
        """The headings at the ``kept`` indexes."""
        return _Heads(
            [self.roles[i] for i in kept],
            [self.stamps[i] for i in kept],
            [self.kinds[i] for i in kept],
        )


def _read_heads(lines: list[str | None]) -> _Heads:
    """The heading of each heading line (its text after ``"### "``; ``None``: no line). The
    role is everything before the line's last `` — ``, the rest has to be a timestamp
    (:data:`_TS`)."""
    parts = [("", "", "") if line is None else line.rpartition(_HEADING_SEP) for line in lines]
    stamps = [stamp for _, _, stamp in parts]
    kinds = _stamp_kinds(stamps)
    dashes = [dash for _, dash, _ in parts]
    if "" in dashes:  # no " — " in the line: no heading, whatever follows
        kinds = [kind if dash else 0 for kind, dash in zip(kinds, dashes, strict=True)]
    return _Heads([role for role, _, _ in parts], stamps, kinds)


def _headings(text: str, starts: list[int], stop: int) -> list[tuple[_Heading, int] | None]:
    """The heading ``### {role} — {timestamp}\n`` that starts at each of ``starts`` and ends by
    ``stop``, with where its line ends (after its line break), or None where there is none."""
    find = text.find
    ends = [find("\n", at, stop) if text.startswith("### ", at, stop) else -1 for at in starts]
    heads = _read_heads(
        [text[at + 4 : end] if end >= 0 else None for at, end in zip(starts, ends, strict=True)]
    )
    return [
        ((role, stamp, kind == 2), end + 1) if kind else None
        for role, stamp, kind, end in zip(heads.roles, heads.stamps, heads.kinds, ends, strict=True)
    ]


def _heading_at(text: str, start: int, stop: int) -> tuple[_Heading, int] | None:
    """The heading that starts at ``start`` and ends by ``stop`` (:func:`_headings`)."""
    return _headings(text, [start], stop)[0]


def _closing_separator(text: str, start: int) -> int:
    """Where the separator that closes the last block starts (a ``---`` line after a blank
    line, followed by nothing but blank space, its own final line end included), or -1 when
    the last block is not closed."""
    at = text.rfind("\n\n---", start)
    if at < 0:
        return -1
    return at if _NOT_SPACE.search(text, at + 5) is None else -1


# Hand edits: spaces or tabs after a heading's timestamp or after a separator's "---". They
# are read as if they were not there where the line stands as structure (a separator after a
# blank line and before a blank line and a heading, or closing the file; a heading after a
# separator or where the blocks start), and reported (kind "whitespace"): escaped content
# (memorylab's) can hold no such heading, so no block can be forged with them.
_LOOSE_LINE = re.compile(r"\n(?:---[ \t]++|### [^\n]*+(?<=[ \t]))(?=\n|\Z)")
_LOOSE_SEPARATOR_END = re.compile(r"---[ \t]*\n\n")


def _loose_heading(text: str, start: int) -> bool:
    """Whether a heading, maybe with trailing spaces or tabs, starts at ``start``."""
    if not text.startswith("### ", start):
        return False
    line_end = text.find("\n", start)
    line = text[start + 4 : len(text) if line_end < 0 else line_end].rstrip(" \t")
    if line_end < 0:
        return False
    _role, dash, stamp = line.rpartition(" \u2014 ")
    return bool(dash) and _TS_RE.match(stamp) is not None


def _after_separator(text: str, at: int) -> int:
    """Where the next block starts after the separator line whose blank line before it starts
    at ``at`` (``"\\n\\n---"``, maybe with trailing spaces or tabs, then a blank line), or -1."""
    found = _LOOSE_SEPARATOR_END.match(text, at + 2)
    return -1 if found is None else found.end()


def _separator_before(text: str, line: int) -> bool:
    """Whether the line at ``line`` follows a separator line and a blank line."""
    if not text.startswith("\n\n", line - 2):
        return False
    at = line - 2
    while at > 0 and text[at - 1] in " \t":
        at -= 1
    return text.startswith("\n\n---", at - 5)


def _tighten(text: str, start: int, problems: _Problems) -> str:
    """``text`` without the trailing spaces and tabs of the structural lines from ``start`` on
    (each reported); the line breaks stay, so line numbers do not change."""
    pieces: list[str] = []
    kept = length = 0
    for found in _LOOSE_LINE.finditer(text, max(start - 1, 0)):
        line = found.start() + 1
        if line < start:
            continue
        if text.startswith("---", line):
            structural = text.startswith("\n", line - 2) and (
                _NOT_SPACE.search(text, line + 3) is None
                or (text.startswith("\n\n", found.end()) and _loose_heading(text, found.end() + 2))
            )
            what = "the separator '---' is followed by spaces or tabs"
        else:
            structural = _loose_heading(text, line) and (
                line == start or _separator_before(text, line)
            )
            what = "the heading's timestamp is followed by spaces or tabs"
        if not structural:
            continue
        spaces = found.start() + len(found[0].rstrip(" \t"))
        pieces.append(text[kept:spaces])
        length += spaces - kept
        problems.add(
            length - (spaces - line),
            "whitespace",
            f"{what} (a hand edit?); read as if they were not there: remove them",
        )
        kept = found.end()
    if not pieces:
        return text
    pieces.append(text[kept:])
    return "".join(pieces)


@dataclass(frozen=True, slots=True)
class _Split:
    """A text cut by :data:`_CUT_RE`, held without the text: ``head``, the text before the
    first match, then per match its heading line (None: a separator line ending in a space or
    a tab), its blank line (None: none taken), its space or tab, and the text after it
    (``pieces``: the blocks' contents). ``first``: the heading where the blocks start, with its
    line end; ``tail``: how far from the text's end the separator that closes the last block
    starts (-1: none); ``loose``: whether a structural line may end in spaces or tabs."""

    head: str
    lines: list[str | None]
    blanks: list[str | None]
    looses: list[str | None]
    pieces: list[str]
    first: tuple[_Heading, int] | None
    tail: int
    loose: bool


def _split(text: str, start: int) -> _Split:
    """``text`` cut by :data:`_CUT_RE`, with what is read of the text itself, and whether it
    may hold hand-edited structural lines (then :func:`_tighten`'s scan of the whole text
    runs): a separator line ending in a space or a tab is a match of its own (a heading line
    ending so is seen when the headings are read, :func:`parse_file`)."""
    parts = _CUT_RE.split(text)
    lines, blanks, looses = parts[1::4], parts[2::4], parts[3::4]
    pieces: list[str] = parts[4::4]
    first = _heading_at(text, start, len(text))
    closing = _closing_separator(text, start)
    loose = (
        (first is None and _loose_heading(text, start))
        or looses.count(None) < len(looses)
        or (
            None in blanks
            and any(map(_loose_at(text), _hidden(parts[0] or "", lines, blanks, pieces)))
        )
    )
    tail = len(text) - closing if closing >= 0 else -1
    return _Split(parts[0] or "", lines, blanks, looses, pieces, first, tail, loose)


def _from_cut(cut: list[bytes | None]) -> tuple[_Split, int, _Header, _Problems] | None:
    """The split, where the blocks start, the header and its problems, of the UTF-8 bytes of
    a file cut by :data:`_CUT_BYTES`, its parts decoded; None where the parts alone do not
    tell them as :func:`_split` and :func:`_head` read the text (a separator ending in a space
    or a tab, a heading whose blank line the split did not take, a file that is not UTF-8, has
    no header or Windows line ends, a match before the blocks start): the file is then read as
    text."""
    lines_b, blanks_b = cut[1::4], cut[2::4]
    if None in lines_b or None in blanks_b:
        return None
    try:
        head = (cut[0] or b"").decode()
        lines: list[str | None] = list(map(bytes.decode, lines_b))  # type: ignore[arg-type]
        pieces = list(map(bytes.decode, cut[4::4]))  # type: ignore[arg-type]
    except UnicodeDecodeError:
        return None
    line_end = head.find("\n")
    if line_end < 0 and lines:
        line_end = len(head)  # a match starts with a line break
    marker = head.find(_LOG_MARKER)
    start = marker + len(_LOG_MARKER)
    if (
        (line_end > 0 and head[line_end - 1] == "\r")
        or not head.startswith(TITLE_LINE + "\n")
        or marker < 0
        or (start == len(head) and lines)
    ):
        return None
    if head.startswith("\n", start):
        start += 1
    problems = _Problems()
    header = _parse_header(head[: marker + 1], problems)
    first = _heading_at(head, start, len(head))
    loose = first is None and _loose_heading(head + "\n" if lines else head, start)
    last = pieces[-1] if lines else head
    closing = _closing_separator(last, 0 if lines else start)
    tail = len(last) - closing if closing >= 0 else -1
    count = len(lines)
    split = _Split(head, lines, ["\n"] * count, [None] * count, pieces, first, tail, loose)
    return split, start, header, problems


def _rejoined(cut: list[bytes | None]) -> bytes:
    """The bytes that a :data:`_CUT_BYTES` split cut."""
    joined = [cut[0] or b""]
    for line, blank, loose, piece in zip(cut[1::4], cut[2::4], cut[3::4], cut[4::4], strict=True):
        if line is None:
            joined.append(b"\n\n---" + (loose or b""))
        else:
            joined.append(b"\n\n---\n\n### " + line + b"\n" + (blank or b""))
        joined.append(piece or b"")
    return b"".join(joined)


def _hidden(
    head: str, lines: list[str | None], blanks: list[str | None], pieces: list[str]
) -> list[int]:
    """Where a separator starts at a heading's line end (no blank line under the heading):
    the split, which took that line end, went past it."""
    return [
        at + 11 + len(line)
        for at, line, blank, piece in zip(
            _match_starts(head, lines, blanks, pieces), lines, blanks, pieces, strict=True
        )
        if line is not None and blank is None and piece.startswith("\n---")
    ]


def _loose_at(text: str) -> Callable[[int], bool]:
    """Whether the separator at an offset of ``text`` ends in a space or a tab, or is followed
    by a heading that does."""
    return lambda at: (
        text.startswith(("\n\n--- ", "\n\n---\t"), at)
        or (text.startswith(_NEXT_BLOCK, at) and _loose_heading(text, at + 7))
    )


def _joined(split: _Split) -> str:
    """The text that a :data:`_CUT_RE` split cut (read again by position where it must be)."""
    joined = [split.head]
    for line, blank, loose, piece in zip(
        split.lines, split.blanks, split.looses, split.pieces, strict=True
    ):
        if line is None:
            joined.append(f"\n\n---{loose}")
        else:
            joined.append(f"\n\n---\n\n### {line}\n{blank or ''}")
        joined.append(piece)
    return "".join(joined)


def _match_starts(
    head: str, lines: list[str | None], blanks: list[str | None], pieces: list[str]
) -> list[int]:
    """Where each match of a split text starts."""
    starts = []
    at = len(head)
    for line, blank, piece in zip(lines, blanks, pieces, strict=True):
        starts.append(at)
        # "\n\n---" and a space or tab, or "\n\n---\n\n### " + line + "\n" + the blank line
        at += (6 if line is None else 12 + len(line) + (blank is not None)) + len(piece)
    return starts


# A block's problems: (offset, step, kind, message). They are reported in the order of the
# text, and within a block in the order of its steps (heading, blank line, end, date), as a
# reader going block by block finds them.
_Found = list[tuple[int, int, str, str]]


def _parse_blocks(
    start: int, split: _Split, heads: _Heads, found: _Found
) -> tuple[Blocks, str | None]:
    """The message blocks of a text from ``start`` on, from its split and the headings of its
    matches: cut at the separators that a heading follows, and also before a heading that a
    torn block memorylab wrote runs into (or that text without a heading, a problem already,
    runs into: what follows it is salvaged). Returns the text too where it was joined again to
    be read by position (None: it was not)."""
    if (
        len(split.head) >= start
        and 0 not in heads.kinds
        and None not in split.blanks
        and not _torn_inside(heads, split.pieces)
    ):
        return _read_split(start, split, heads, found), None
    text = _joined(split)
    end = len(text) - split.tail if split.tail >= 0 else len(text)
    return _read_spans(text, *_spans_of(text, start, end, split, heads), found), text


def _torn_inside(heads: _Heads, contents: list[str]) -> bool:
    """Whether a block memorylab wrote may hold a heading line (torn, :data:`_TORN_AT_RE`):
    its escaped content holds none at a line start. A heading's `` — `` is looked for first,
    in every content at once (``map`` of a C method, no Python call per block)."""
    dashed = map(str.__contains__, contents, itertools.repeat(EM_DASH))
    return any(
        kind == 2 and ("\n### " in content or content.startswith("### "))
        for kind, content in itertools.compress(zip(heads.kinds, contents, strict=True), dashed)
    )


def _read_split(start: int, split: _Split, heads: _Heads, found: _Found) -> Blocks:
    """The blocks of a text whose every match is a cut under a heading and a blank line, none
    torn inside: the split's pieces are the contents (the last ends where the blocks end), read
    at once; the first block, before the first match, by position (in ``head``, a prefix of the
    text)."""
    head, count = split.head, len(heads)
    closed = split.tail >= 0
    first = _read_spans(
        head,
        [start],
        [len(head) - split.tail if closed and not count else len(head)],
        [split.first],
        [count > 0 or closed],
        found,
    )
    if not count:
        return first
    contents = list(split.pieces)
    if closed:
        contents[-1] = contents[-1][: len(contents[-1]) - split.tail]
    whole = [True] * count
    whole[-1] = closed

    @functools.cache
    def firsts() -> list[int]:  # where each block starts, counted only for a problem
        return [at + 7 for at in _match_starts(head, split.lines, split.blanks, split.pieces)]

    rest = _read_blocks(heads, [True] * count, contents, whole, firsts, found)
    return Blocks(
        first.roles + rest.roles,
        first.contents + rest.contents,
        first.timestamps + rest.timestamps,
    )


def _spans_of(
    text: str, start: int, end: int, split: _Split, heads: _Heads
) -> tuple[list[int], list[int], list[tuple[_Heading, int] | None], list[bool]]:
    """The blocks of any text by position: ``firsts``, ``stops``, headings (with their line
    ends) and whether each is closed. The candidates are the split's heading lines from
    ``start`` on, and a separator that starts at a heading's line end (a heading with no blank
    line under it, whose line end the split took: the candidate it runs into)."""
    cuts: list[tuple[int, tuple[_Heading, int]]] = []
    for at, line, blank, piece, role, stamp, kind in zip(
        _match_starts(split.head, split.lines, split.blanks, split.pieces),
        split.lines,
        split.blanks,
        split.pieces,
        heads.roles,
        heads.stamps,
        heads.kinds,
        strict=True,
    ):
        if line is None:
            continue  # a separator ending in a space or a tab, not structure (_tighten)
        line_end = at + 12 + len(line)
        if at >= start and kind:
            cuts.append((at, ((role, stamp, kind == 2), line_end)))
        if blank is None and piece.startswith(_NEXT_BLOCK[1:]) and line_end > start:
            heading = _heading_at(text, line_end + 6, len(text))
            if heading is not None:
                cuts.append((line_end - 1, heading))
    firsts = [start, *(at + 7 for at, _ in cuts)]
    stops = [*(at for at, _ in cuts), end]
    closed = [True] * len(firsts)
    closed[-1] = split.tail >= 0  # the text after the last separator is torn: not closed
    first = _heading_at(text, start, len(text))  # its line may end past the split's head
    return firsts, stops, [first, *(heading for _, heading in cuts)], closed


def _read_spans(
    text: str,
    firsts: list[int],
    stops: list[int],
    headings: list[tuple[_Heading, int] | None],
    closed: list[bool],
    found: _Found,
) -> Blocks:
    """The messages of the blocks ``text[first:stop]`` under their headings (with their line
    ends); ``closed``: whether a block ends with its separator."""
    # A heading whose line does not end inside its block is none of it.
    headings = [
        heading if heading is not None and heading[1] <= stop else None
        for heading, stop in zip(headings, stops, strict=True)
    ]
    # A block memorylab wrote (or one without a heading) that holds a heading line followed by
    # a blank line is torn: the heading's " — " is looked for first (a C search), the regex
    # only where it is found.
    find = text.find
    torn_at = {
        index
        for index, (heading, first, stop) in enumerate(zip(headings, firsts, stops, strict=True))
        if (heading is None or heading[0][2])
        and find(EM_DASH, first if heading is None else heading[1], stop) >= 0
        and _TORN_AT_RE.search(text, first, stop) is not None
    }
    if torn_at or None in headings:
        firsts, stops, headings, closed = _pieces(
            text, firsts, stops, headings, closed, torn_at, found
        )
    blanks = [
        heading is not None and text.startswith("\n", heading[1], stop)
        for heading, stop in zip(headings, stops, strict=True)
    ]
    contents = [
        text[first:stop] if heading is None else text[heading[1] + blank : stop]
        for first, stop, heading, blank in zip(firsts, stops, headings, blanks, strict=True)
    ]
    heads = _Heads(
        ["" if heading is None else heading[0][0] for heading in headings],
        ["" if heading is None else heading[0][1] for heading in headings],
        [0 if heading is None else 2 if heading[0][2] else 1 for heading in headings],
    )
    return _read_blocks(heads, blanks, contents, closed, lambda: firsts, found)


def _pieces(
    text: str,
    firsts: list[int],
    stops: list[int],
    headings: list[tuple[_Heading, int] | None],
    closed: list[bool],
    torn_at: set[int],
    found: _Found,
) -> tuple[list[int], list[int], list[tuple[_Heading, int] | None], list[bool]]:
    """The blocks to read where some have no heading or are torn: a block without a heading
    that is blank is an empty block (a problem when it is closed), and a torn block is cut
    before each heading it runs into."""
    spans: list[tuple[int, int, tuple[_Heading, int] | None, bool]] = []
    for index, (first, stop, heading, whole) in enumerate(
        zip(firsts, stops, headings, closed, strict=True)
    ):
        if heading is None and _NOT_SPACE.search(text, first, stop) is None:
            if stop > first and whole:
                found.append((first, 0, "structure", "empty block between separators"))
        elif index in torn_at:
            pieces = [first, *(m.start() + 1 for m in _TORN_AT_RE.finditer(text, first, stop))]
            pieces.append(stop + 1)
            for a, b in itertools.pairwise(pieces):
                spans.append((a, b - 1, _heading_at(text, a, b - 1), b > stop and whole))
        else:
            spans.append((first, stop, heading, whole))
    return (
        [span[0] for span in spans],
        [span[1] for span in spans],
        [span[2] for span in spans],
        [span[3] for span in spans],
    )


def _read_blocks(
    heads: _Heads,
    blanks: list[bool],
    contents: list[str],
    closed: list[bool],
    firsts: Callable[[], list[int]],
    found: _Found,
) -> Blocks:
    """The messages of blocks, each step over all of them at once: ``heads``, their headings;
    ``blanks``, whether a blank line is under the heading; ``contents``, what follows it to the
    block's end (a block without a heading: all of it); ``closed``, whether the block ends with
    its separator; ``firsts()``, where each starts (for a problem). A block without a heading,
    or whose heading's timestamp is not a date, is a problem and is not read."""
    if 0 in heads.kinds:
        for index, (kind, content) in enumerate(zip(heads.kinds, contents, strict=True)):
            if not kind:
                excerpt = content.partition("\n")[0][:80]
                found.append(
                    (
                        firsts()[index],
                        0,
                        "structure",
                        f"expected a block heading '### {{role}} — {{timestamp}}', found "
                        f"{excerpt!r}",
                    )
                )
        kept = [index for index, kind in enumerate(heads.kinds) if kind]
        offsets = firsts()
        heads, blanks, contents, closed = (
            heads.taken(kept),
            [blanks[i] for i in kept],
            [contents[i] for i in kept],
            [closed[i] for i in kept],
        )
        firsts = functools.partial(lambda kept: [offsets[i] for i in kept], kept)
    if not all(blanks):
        for index, blank in enumerate(blanks):
            if not blank:
                found.append(
                    (firsts()[index], 0, "structure", "missing blank line after the heading")
                )
    if not all(closed):
        for index, whole in enumerate(closed):
            if not whole:
                found.append(
                    (
                        firsts()[index],
                        1,
                        "torn",
                        "block is not closed by '---' (an interrupted write?); its content "
                        "may be cut",
                    )
                )
                content = contents[index]
                for tail in _TORN_TAILS:
                    if content.endswith(tail):
                        contents[index] = content[: len(content) - len(tail)]
                        break
    try:
        timestamps = list(map(datetime.fromisoformat, heads.stamps))
    except ValueError:  # shaped like a timestamp, not a date (month 13): that block is skipped
        timestamps, valid = _dates(heads.stamps, firsts(), found)
        heads, contents = heads.taken(valid), [contents[i] for i in valid]
    # Escaped contents (memorylab's) are unescaped; most hold no backslash, which is looked
    # for in every content at once.
    marked = map(str.__contains__, contents, itertools.repeat("\\"))
    return Blocks(
        heads.roles,
        [
            unescape_content(content) if slash and kind == 2 else content
            for content, kind, slash in zip(contents, heads.kinds, marked, strict=True)
        ],
        timestamps,
    )


def _dates(stamps: list[str], firsts: list[int], found: _Found) -> tuple[list[datetime], list[int]]:
    """The timestamps that are dates, and their indexes; each other is a problem."""
    timestamps, valid = [], []
    for index, (stamp, first) in enumerate(zip(stamps, firsts, strict=True)):
        try:
            timestamps.append(datetime.fromisoformat(stamp))
        except ValueError as exc:
            found.append(
                (
                    first,
                    2,
                    "structure",
                    f"the heading's timestamp {stamp!r} is not a valid date ({exc}); the "
                    "block was skipped: correct the timestamp to read it",
                )
            )
            continue
        valid.append(index)
    return timestamps, valid


@dataclass(frozen=True, slots=True)
class AppendPoint:
    """Where a writer appends the next block to a memory file's ``text``
    (:func:`append_point`): keep ``text[:keep]``, then write ``pad`` and the block. ``torn`` is
    where a torn last block starts (a write cut short: ``len(text)`` when there is none); the
    text from ``torn`` on is not part of the file's whole blocks, and what lies between ``keep``
    and ``torn`` is blank space after the last separator (a hand edit)."""

    keep: int
    pad: str
    torn: int


_WHOLE_END = "\n\n---\n\n"


def _blocks_begin(text: str) -> int:
    """Where the blocks start, as :func:`parse` finds it."""
    if text.startswith(TITLE_LINE + "\n") or text == TITLE_LINE:
        marker = text.find(_LOG_MARKER)
        if marker < 0:
            return len(text)
        body = marker + len(_LOG_MARKER)
        return body + 1 if text.startswith("\n", body) else body
    first = _HEADING_RE.search(text)
    return first.start() if first else len(text)


def _crlf_at(text: str) -> list[int]:
    """Where each ``"\\r\\n"`` of ``text`` starts."""
    found, at = [], text.find("\r\n")
    while at >= 0:
        found.append(at)
        at = text.find("\r\n", at + 2)
    return found


def append_point(text: str) -> AppendPoint:
    """Where the next block goes in a memory file's ``text``, so that the parser reads it as
    one whole block whatever the previous bytes are, and what of the end is a torn block.

    Decided as :func:`parse` reads the file: the last block is whole when its closing
    separator is there (``---`` after a blank line, then only blank space: an editor may
    have trimmed the final blank line, or added spaces); it is torn when it is not, and it
    starts with a heading, or is a single unfinished line that could begin one (a write cut
    short inside the heading). Blank space after the last separator is dropped and the
    separator's line end and blank line are written again (``pad``). Text after the last
    separator that is not a heading (a hand edit: notes typed at the end) is kept and closed
    with a separator, so the next block still starts a block of its own.
    """
    size = len(text)
    if text.endswith(_WHOLE_END):
        return AppendPoint(size, "", size)
    if text.startswith("\ufeff"):  # read as parse() reads it: without the BOM ...
        point = append_point(text[1:])
        return AppendPoint(point.keep + 1, point.pad, point.torn + 1)
    first_line_end = text.find("\n")
    if first_line_end > 0 and text[first_line_end - 1] == "\r":  # ... and with "\n" line ends
        point = append_point(text.replace("\r\n", "\n"))
        removed = [at - number for number, at in enumerate(_crlf_at(text))]
        return AppendPoint(
            point.keep + bisect.bisect_left(removed, point.keep),
            point.pad,
            point.torn + bisect.bisect_left(removed, point.torn),
        )
    body = _blocks_begin(text)
    if _NOT_SPACE.search(text, body) is None:  # a header only (or nothing)
        keep = body if body < size else size
        trailing = len(text[:keep]) - len(text[:keep].rstrip("\n"))
        return AppendPoint(keep, "" if keep == 0 else "\n" * max(0, 2 - trailing), size)
    closing = _closing_separator(text, body)
    if closing >= 0:
        return AppendPoint(closing + 5, "\n\n", size)
    at = text.rfind("\n\n---", body)
    while at >= 0 and _after_separator(text, at) < 0:
        at = text.rfind("\n\n---", body, at + 4)
    last = body if at < 0 else _after_separator(text, at)
    piece = text[last:]
    unfinished = "\n" not in piece and (piece.startswith("### ") or "### ".startswith(piece))
    if _loose_heading(text, last) or unfinished:
        whole = append_point(text[:last])
        return AppendPoint(whole.keep, whole.pad, last)
    keep = len(text.rstrip())
    return AppendPoint(keep, "\n\n---\n\n", size)


@overload
def parse(
    text: str, *, strict: Literal[True] = True, path: str | None = None
) -> MemoryDocument: ...


@overload
def parse(text: str, *, strict: Literal[False], path: str | None = None) -> ParseResult: ...


@overload
def parse(text: str, *, strict: bool, path: str | None = None) -> MemoryDocument | ParseResult: ...


def parse(
    text: str, *, strict: bool = True, path: str | None = None
) -> MemoryDocument | ParseResult:
    """Parse the text of a MEMORY.md or archive file.

    With ``strict=True`` any problem raises :class:`~memorylab.errors.MemoryFormatError` naming
    ``path`` (when given) and the line. With ``strict=False`` the result is a
    :class:`ParseResult`: ``document``, everything that could be read, and ``problems``.
    Reference files (no ``**Format:**`` line, naive timestamps) parse strictly; a BOM, Windows
    line ends, a missing header, a torn last block and a heading whose timestamp is not a date
    are problems. It is :func:`parse_file` with the blocks made :class:`Message` records.
    """
    parsed = parse_file(text, strict=strict, path=path)
    return parsed.document() if strict else ParseResult(parsed.document(), parsed.problems)


def parse_file(text: str | bytes, *, strict: bool = True, path: str | None = None) -> ParsedFile:
    """The one parser of the format: a MEMORY.md or archive file read into a
    :class:`ParsedFile`, its blocks as columns (:func:`parse` makes them :class:`Message`
    records; the loaders read the columns). ``text``: the file's text, or its bytes (UTF-8; a
    file that is not is a problem, its bad bytes read as U+FFFD). ``strict`` and ``path`` as in
    :func:`parse`; with ``strict=False`` the problems are in ``.problems``.

    Bytes are cut before they are decoded, each part then (one search over a byte a character,
    where the em dash of every heading makes the text two bytes a character), and the text is
    let go once it is cut: the split holds every content, copied once, and the text is joined
    again only where blocks must be read by position (a torn, forged or hand-edited file). A
    caller that hands the file over as a temporary (``parse_file(path.read_bytes())``,
    :func:`memorylab.memory._store.read_parsed`) so never holds the file, its text and all the
    columns at once.
    """
    if not isinstance(text, str | bytes):
        raise TypeError(f"parse() takes the file's text (str), got {type(text).__name__}")
    leading: list[FormatProblem] = []  # a decoding problem comes before all others
    read: tuple[_Split, int, _Header, _Problems] | None = None
    if isinstance(text, bytes):
        data = text
        del text
        if not data.startswith(_BOM_BYTES):  # (a BOM: read as text, its problem)
            cut = _CUT_BYTES.split(data)
            del data
            read = _from_cut(cut)
            if read is None:
                data = _rejoined(cut)
            del cut
        if read is None:
            decoded, leading = _decoded(data, strict=strict, path=path)
            del data
            read = _head(decoded)
            del decoded
    else:
        read = _head(text)
        del text
    split, start, header, problems = read
    del read
    heads = _read_heads(split.lines)
    if split.loose or (  # a hand edit may have left spaces after a separator or a heading
        0 in heads.kinds
        and any(
            not kind and line is not None and _loose_heading(f"### {line}\n", 0)
            for kind, line in zip(heads.kinds, split.lines, strict=True)
        )
    ):
        tight = _tighten(_joined(split), start, problems)
        split = _split(tight, start)
        del tight
        heads = _read_heads(split.lines)
    blocks_found: _Found = []
    blocks, joined = _parse_blocks(start, split, heads, blocks_found)
    for offset, _, kind, message in sorted(blocks_found, key=lambda problem: problem[:2]):
        problems.add(offset, kind, message)
    found = leading
    if problems.found:  # lines are counted in the text up to the last problem
        last = max(offset for offset, _, _ in problems.found)
        lines_of = split.head if last <= len(split.head) else joined or _joined(split)
        found = leading + problems.numbered(lines_of)
    if strict and found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise MemoryFormatError(
            f"{found[0].message}{more}; use strict=False to read what can be salvaged",
            path=path,
            line=found[0].line,
            problems=found,
        )
    name, created, version, continues, extra = header
    return ParsedFile(name, created, blocks, version, continues, extra, found)


def _decoded(data: bytes, *, strict: bool, path: str | None) -> tuple[str, list[FormatProblem]]:
    """The text of a file's bytes, and the problem when they are not UTF-8 (then read with
    U+FFFD for the bad bytes; ``strict``: raised)."""
    try:
        return data.decode("utf-8"), []
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        problem = FormatProblem(line, "encoding", f"not UTF-8 at byte {exc.start}")
        if strict:
            raise MemoryFormatError(
                f"not UTF-8 text (byte {exc.start}); is it a binary file? Use strict=False to "
                "salvage the readable parts",
                path=path,
                line=line,
                problems=[problem],
            ) from None
        return data.decode("utf-8", errors="replace"), [problem]


def _head(text: str) -> tuple[_Split, int, _Header, _Problems]:
    """The split of a file's text (:func:`_split`), where its blocks start, its header and
    the problems found so far (a BOM, Windows line ends, the header's)."""
    problems = _Problems()
    if text.startswith("\ufeff"):
        problems.add(0, "bom", "the file starts with a byte-order mark (BOM)")
        text = text[1:]
    first_line_end = text.find("\n")
    if first_line_end > 0 and text[first_line_end - 1] == "\r":
        problems.add(0, "crlf", "Windows line ends (CRLF); they were read as '\\n'")
        text = text.replace("\r\n", "\n")
    header: _Header = (None, None, None, None, ())
    if text.startswith(TITLE_LINE + "\n") or text == TITLE_LINE:
        marker = text.find(_LOG_MARKER)
        if marker < 0:
            problems.add(len(text), "header", "the header is incomplete (no '## Interaction Log')")
            head, body_start = text, len(text)
        else:
            head = text[: marker + 1]
            body_start = marker + len(_LOG_MARKER)
            if text.startswith("\n", body_start):
                body_start += 1
        header = _parse_header(head, problems)
    else:
        problems.add(0, "header", "missing header (the file should start with '# Agent Memory')")
        first = _HEADING_RE.search(text)
        body_start = first.start() if first else len(text)
        if _NOT_SPACE.search(text, 0, body_start):
            problems.add(0, "structure", "text before the first block was skipped")
    return _split(text, body_start), body_start, header, problems


# ---------------------------------------------------------------------------------------------
# Archive names: archive/history_<YYYY-MM-DD_HH-MM-SS>[Z][_<n>][_edit].md

_ARCHIVE_RE = re.compile(
    r"history_(\d{4}-\d{2}-\d{2}_\d{2}-\d{2}-\d{2})(Z?)(?:_(\d+))?(?:_edit)?\.md\Z"
)
ARCHIVE_TIME_FORMAT = "%Y-%m-%d_%H-%M-%S"


def archive_name(when: datetime, attempt: int = 1, *, edit: bool = False) -> str:
    """memorylab's archive file name for a compaction at ``when``:
    ``history_<YYYY-MM-DD_HH-MM-SS>Z[_<n>].md``, in UTC (a naive ``when`` is taken as UTC);
    for an edit of the history (``edit=True``) it ends ``_edit.md``
    (:data:`~memorylab.memory._records.EDIT_ARCHIVE_SUFFIX`): the archive says itself that its
    messages were edited away (:func:`~memorylab.memory._records.edit_archives`).

    The ``Z`` keeps it apart from the reference framework's names (local time, no ``Z``), which
    that framework opens for writing without checking: a name it can never choose is a name it
    can never overwrite. ``attempt`` > 1 adds a suffix so a taken name is never reused.

    >>> archive_name(datetime(2026, 5, 1, 10, tzinfo=UTC), 2, edit=True)
    'history_2026-05-01_10-00-00Z_2_edit.md'
    """
    utc = when if when.tzinfo is None else when.astimezone(UTC).replace(tzinfo=None)
    base = f"history_{utc.strftime(ARCHIVE_TIME_FORMAT)}Z"
    if attempt > 1:
        base = f"{base}_{attempt}"
    return base + (EDIT_ARCHIVE_SUFFIX if edit else ".md")


def parse_archive_name(name: str) -> tuple[datetime, int] | None:
    """``(time, attempt)`` of an archive file name (memorylab's, an edit's among them, or the
    reference's), or ``None`` if it is not one. The time is as written: UTC in memorylab's
    names, the writer's local time in the reference's."""
    match = _ARCHIVE_RE.match(name)
    if match is None:
        return None
    try:
        when = datetime.strptime(match[1], ARCHIVE_TIME_FORMAT)
    except ValueError:  # shaped like one, not a date (February 30): not an archive of ours
        return None
    return when, int(match[3] or 1)


RESEED_SECONDS = 2.0
"""How close, in seconds, the reference's plain ``compact()`` writes what it records: the
archive's name time, the new MEMORY.md's ``**Created:**`` and the summary's timestamp are three
``datetime.now()`` calls of one call (a name keeps whole seconds: one more second is allowed)."""


def opens_with_plain_summary(parsed: ParsedFile, after_archive: str | None) -> bool:
    """Whether the first block of ``parsed`` is an unmarked compaction summary: the one the
    reference framework's plain ``compact(summary, summary_role=...)`` re-seeds MEMORY.md with
    (no ``[Compressed Memory Summary]`` prefix, role ``System`` by default or any it is given).
    ``after_archive``: the name of the compaction archive just before this file in the agent's
    timeline (``None``: the file is the agent's first, or follows an edit).

    Decided from what the files record. That ``compact()`` archives MEMORY.md as
    ``history_<now>.md``, creates the file again with ``**Created:** <now>`` and adds the
    summary at once. So after an archive, a ``System`` first block is the summary (the reference
    writes ``System`` blocks no other way), and a first block of another role is when it was
    written within :data:`RESEED_SECONDS` of the file's creation and the archive is named with
    that time too. (A ``compact()`` of a log with no block writes no archive: its summary is
    not recognised.) A marked first block is not this function's question.
    """
    blocks = parsed.blocks
    if after_archive is None or not blocks.roles or blocks.contents[0].startswith(SUMMARY_PREFIX):
        return False
    if blocks.roles[0].casefold() == "system":
        return True
    created, stamp = parsed.created, blocks.timestamps[0]
    match, named = _ARCHIVE_RE.match(after_archive), parse_archive_name(after_archive)
    if created is None or match is None or named is None:
        return False
    when = named[0].replace(tzinfo=UTC) if match[2] else named[0]  # a Z name is UTC
    if not (created.tzinfo is None) == (stamp.tzinfo is None) == (when.tzinfo is None):
        return False  # times that cannot be compared
    return abs((stamp - created).total_seconds()) <= RESEED_SECONDS and (
        -RESEED_SECONDS <= (created - when).total_seconds() <= RESEED_SECONDS + 1
    )
