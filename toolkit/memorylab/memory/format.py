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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar, Literal, overload

from memorylab.errors import MemoryFormatError
from memorylab.memory.records import MemoryDocument, Message
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


# ---------------------------------------------------------------------------------------------
# Escaping


# What a content line may not start with unescaped: any backslashes, then a "---" or "###"
# line, a "### " heading, or the header's title or log line ("\r"s before a line end count
# as the end: CRLF files are read with "\n"). Matched after the "\n" that starts the line.
_STRUCTURE = r"\\*(?:---\r*(?:\n|\Z)|###(?: |\r*(?:\n|\Z))|# Agent Memory|## Interaction Log)"
_NEEDS_ESCAPE = re.compile(r"\n(?=" + _STRUCTURE + ")")
_ESCAPED = re.compile(r"\n\\(?=" + _STRUCTURE + ")")


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
    return _ESCAPED.sub("\n", "\n" + text)[1:]


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


def _parse_header(
    head: str, problems: _Problems
) -> tuple[str | None, datetime | None, int | None, str | None, tuple[tuple[str, str], ...]]:
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
# that keeps most "---" lines in content intact. Blocks are found with ``str.find`` of a
# separator and the start of a heading (a C search that skips ahead, far faster than a regex
# scan) and each candidate heading line is checked where it stands: the work is linear in the
# text, and each content is copied once.
_NEXT_BLOCK = "\n\n---\n\n### "
# Inside a block memorylab wrote (content escaped) a heading at a line start followed by a
# blank line means the block was torn and the next one written after it. Matched from
# the "\n" before it; the blank line's "\n" is not consumed, so the next heading is found too.
_TORN_AT_RE = re.compile(r"\n### [^\n]* \u2014 " + _TS + r"\n(?=\n)")
_NOT_SPACE = re.compile(r"\S")
# What a write interrupted inside the closing "\n\n---\n\n" leaves at the end of a torn block.
_TORN_TAILS = ("\n\n---\n", "\n\n---", "\n\n--", "\n\n-", "\n\n", "\n")
_Heading = tuple[str, str, int]  # role, timestamp, where the heading line ends (after its "\n")


def _heading_at(text: str, start: int, stop: int) -> _Heading | None:
    """The heading ``### {role} — {timestamp}\n`` that starts at ``start`` and ends by
    ``stop``, or None. The role is everything before the line's last `` — ``."""
    if not text.startswith("### ", start, stop):
        return None
    line_end = text.find("\n", start, stop)
    if line_end < 0:
        return None
    role, dash, stamp = text[start + 4 : line_end].rpartition(" \u2014 ")
    if not dash or _TS_RE.match(stamp) is None:
        return None
    return role, stamp, line_end + 1


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
                or (
                    text.startswith("\n\n", found.end())
                    and _loose_heading(text, found.end() + 2)
                )
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


def _parse_blocks(text: str, start: int, problems: _Problems) -> list[Message]:
    """The message blocks of ``text[start:]``: cut at the separators that a heading follows,
    and also before a heading that a torn block memorylab wrote runs into (or that text without
    a heading, a problem already, runs into: what follows it is salvaged)."""
    messages: list[Message] = []
    closing = _closing_separator(text, start)
    end = len(text) if closing < 0 else closing
    first = start
    heading = _heading_at(text, start, len(text))
    find = text.find
    at = find(_NEXT_BLOCK, start)
    while True:
        while at >= 0 and (following := _heading_at(text, at + 7, len(text))) is None:
            at = find(_NEXT_BLOCK, at + 1)  # "---" and "### " in a reference file's content
        stop = end if at < 0 else at
        if heading is not None and heading[2] > stop:
            heading = None  # the block ends on its heading's line end: no heading in it
        torn = at < 0 and closing < 0  # the text after the last separator: not closed
        if heading is None and _NOT_SPACE.search(text, first, stop) is None:
            if stop > first and not torn:
                problems.add(first, "structure", "empty block between separators")
        elif (heading is None or written_by_memorylab(heading[1])) and find(
            "\n### ", first, stop
        ) >= 0:
            pieces = [first, *(m.start() + 1 for m in _TORN_AT_RE.finditer(text, first, stop))]
            pieces.append(stop + 1)
            for a, b in itertools.pairwise(pieces):
                closed = b > stop and not torn
                _read_block(text, a, b - 1, _heading_at(text, a, b - 1), closed, problems, messages)
        else:
            _read_block(text, first, stop, heading, not torn, problems, messages)
        if at < 0:
            return messages
        first, heading = at + 7, following
        at = find(_NEXT_BLOCK, at + 7)


def _read_block(
    text: str,
    start: int,
    stop: int,
    heading: _Heading | None,
    closed: bool,
    problems: _Problems,
    messages: list[Message],
) -> None:
    """Append the message of the block ``text[start:stop]`` (or record why there is none)."""
    if heading is None:
        line_end = text.find("\n", start, stop)
        found = text[start : stop if line_end < 0 else line_end][:80]
        problems.add(
            start,
            "structure",
            f"expected a block heading '### {{role}} — {{timestamp}}', found {found!r}",
        )
        return
    role, stamp, content_start = heading
    if text.startswith("\n", content_start, stop):
        content_start += 1
    else:
        problems.add(start, "structure", "missing blank line after the heading")
    content_end = stop
    if not closed:
        problems.add(
            start,
            "torn",
            "block is not closed by '---' (an interrupted write?); its content may be cut",
        )
        for tail in _TORN_TAILS:
            if text.endswith(tail, content_start, stop):
                content_end = stop - len(tail)
                break
    try:
        timestamp = datetime.fromisoformat(stamp)
    except ValueError as exc:  # shaped like a timestamp, not a date (month 13)
        problems.add(
            start,
            "structure",
            f"the heading's timestamp {stamp!r} is not a valid date ({exc}); the block was "
            "skipped: correct the timestamp to read it",
        )
        return
    content = text[content_start:content_end]
    if written_by_memorylab(stamp):
        content = unescape_content(content)
    messages.append(Message(role, content, timestamp))


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
def parse(
    text: str, *, strict: Literal[False], path: str | None = None
) -> ParseResult: ...


@overload
def parse(
    text: str, *, strict: bool, path: str | None = None
) -> MemoryDocument | ParseResult: ...


def parse(
    text: str, *, strict: bool = True, path: str | None = None
) -> MemoryDocument | ParseResult:
    """Parse the text of a MEMORY.md or archive file.

    With ``strict=True`` any problem raises :class:`~memorylab.errors.MemoryFormatError` naming
    ``path`` (when given) and the line. With ``strict=False`` the result is a
    :class:`ParseResult`: ``document``, everything that could be read, and ``problems``.
    Reference files (no ``**Format:**`` line, naive timestamps) parse strictly; a BOM, Windows
    line ends, a missing header, a torn last block and a heading whose timestamp is not a date
    are problems.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse() takes the file's text (str), got {type(text).__name__}")
    problems = _Problems()
    if text.startswith("\ufeff"):
        problems.add(0, "bom", "the file starts with a byte-order mark (BOM)")
        text = text[1:]
    first_line_end = text.find("\n")
    if first_line_end > 0 and text[first_line_end - 1] == "\r":
        problems.add(0, "crlf", "Windows line ends (CRLF); they were read as '\\n'")
        text = text.replace("\r\n", "\n")

    name = created = version = continues = None
    extra: tuple[tuple[str, str], ...] = ()
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
        name, created, version, continues, extra = _parse_header(head, problems)
    else:
        problems.add(0, "header", "missing header (the file should start with '# Agent Memory')")
        first = _HEADING_RE.search(text)
        body_start = first.start() if first else len(text)
        if _NOT_SPACE.search(text, 0, body_start):
            problems.add(0, "structure", "text before the first block was skipped")

    if "---" in text or "### " in text:
        text = _tighten(text, body_start, problems)
    messages = _parse_blocks(text, body_start, problems)
    doc = MemoryDocument(
        conversation_name=name,
        created=created,
        messages=tuple(messages),
        format_version=version,
        continues=continues,
        extra_header=extra,
    )
    found = problems.numbered(text)
    if strict:
        if found:
            more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
            raise MemoryFormatError(
                f"{found[0].message}{more}; use strict=False to read what can be salvaged",
                path=path,
                line=found[0].line,
                problems=found,
            )
        return doc
    return ParseResult(doc, found)


# ---------------------------------------------------------------------------------------------
# Archive names: archive/history_<YYYY-MM-DD_HH-MM-SS>[_<n>].md

_ARCHIVE_RE = re.compile(r"history_(\d{4}-\d{2}-\d{2}_\d{2}-\d{2}-\d{2})(Z?)(?:_(\d+))?\.md\Z")
ARCHIVE_TIME_FORMAT = "%Y-%m-%d_%H-%M-%S"


def archive_name(when: datetime, attempt: int = 1) -> str:
    """memorylab's archive file name for a compaction at ``when``:
    ``history_<YYYY-MM-DD_HH-MM-SS>Z[_<n>].md``, in UTC (a naive ``when`` is taken as UTC).

    The ``Z`` keeps it apart from the reference framework's names (local time, no ``Z``), which
    that framework opens for writing without checking: a name it can never choose is a name it
    can never overwrite. ``attempt`` > 1 adds a suffix so a taken name is never reused.
    """
    utc = when if when.tzinfo is None else when.astimezone(UTC).replace(tzinfo=None)
    base = f"history_{utc.strftime(ARCHIVE_TIME_FORMAT)}Z"
    return f"{base}.md" if attempt <= 1 else f"{base}_{attempt}.md"


def parse_archive_name(name: str) -> tuple[datetime, int] | None:
    """``(time, attempt)`` of an archive file name (memorylab's or the reference's), or
    ``None`` if it is not one. The time is as written: UTC in memorylab's names, the writer's
    local time in the reference's."""
    match = _ARCHIVE_RE.match(name)
    if match is None:
        return None
    try:
        when = datetime.strptime(match[1], ARCHIVE_TIME_FORMAT)
    except ValueError:  # shaped like one, not a date (February 30): not an archive of ours
        return None
    return when, int(match[3] or 1)


__all__ = [
    "ARCHIVE_TIME_FORMAT",
    "AppendPoint",
    "EM_DASH",
    "FORMAT_VERSION",
    "FormatProblem",
    "LOG_LINE",
    "ParseResult",
    "SEPARATOR_LINE",
    "TITLE_LINE",
    "append_point",
    "archive_name",
    "block_text",
    "content_to_text",
    "escape_content",
    "format_timestamp",
    "history_line",
    "history_lines",
    "history_text",
    "parse",
    "parse_archive_name",
    "parse_timestamp",
    "render_block",
    "render_header",
    "render_memory",
    "unescape_content",
    "validate_role",
    "written_by_memorylab",
]
