"""Reading one memory file into columns, fast (internal to :mod:`memorylab.analysis`).

:func:`read_rows` returns a file's messages as columns (:class:`FileRows`): role codes, the
contents as one UTF-8 buffer with offsets (what a pyarrow string column is made of, so
:func:`memorylab.analysis.memory_df` wraps it without a copy), their lengths in characters,
summary flags and UTC timestamps. It gives exactly what :func:`memorylab.memory.format.parse`
gives, by two routes:

* the fast route, for well-formed files: numpy finds the structure in the file's bytes with a
  few vectorised passes (the ``### `` lines among the ``#`` at line starts and the separators
  before them, each heading's line end and last `` — ``, the escaped lines among the
  backslashes at line starts, a count of non-ASCII bytes); Python only slices the roles. The
  contents are copied once, from the file's bytes into the buffer, without the headings,
  separators and escaping backslashes; only contents holding non-ASCII bytes are decoded (to
  check they are UTF-8); the stamps are gathered into a grid for
  :mod:`memorylab.analysis._stamps`;
* the parser itself for anything the fast route does not recognise as certainly well formed:
  a BOM, ``\\r``, no header, a torn or unclosed block, a ``---`` line or heading-like line in
  unescaped content, an unusual timestamp shape, invalid UTF-8. The guards are conservative:
  when in doubt, the parser decides.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import tzinfo
from pathlib import Path
from typing import Any

import numpy as np

from memorylab.analysis._stamps import WIDTH, convert_grid, convert_stamps
from memorylab.errors import MemoryFormatError, StoreError
from memorylab.memory import format as fmt
from memorylab.memory.records import SUMMARY_PREFIX, MemoryDocument

__all__ = ["FileRows", "Roles", "convert_or_parse", "convert_stamps", "read_bytes", "read_rows"]

_TITLE = b"# Agent Memory\n"
_LOG = b"\n## Interaction Log\n"
_SEP = b"\n\n---\n\n"
_LINE_HEADING = b"\n### "
_EM_DASH = "\u2014".encode()
_SUMMARY = SUMMARY_PREFIX.encode()
# What follows the backslashes of an escaped line (fmt._is_structural); "---" and "###" are
# then followed by "\r"s and a line end, which a content's end is too (a "\n" follows it).
_STRUCTURE = (b"### ", b"# Agent Memory", b"## Interaction Log")
_WHOLE_LINE = (b"---", b"###")
_COLUMNS = np.arange(WIDTH)
Ints = np.ndarray[Any, np.dtype[np.int64]]


class Roles:
    """The distinct roles of one load, numbered in order of first appearance."""

    def __init__(self) -> None:
        self.code: dict[bytes, int] = {}
        self.names: list[str] = []
        self.high: list[int] = []  # non-ASCII bytes of each

    def codes(self, raw: list[bytes]) -> np.ndarray | None:
        """The code of each role (UTF-8), or None if one is not UTF-8."""
        for role in set(raw).difference(self.code):
            try:
                name = role.decode("utf-8")
            except UnicodeDecodeError:
                return None
            self.code[role] = len(self.names)
            self.names.append(name)
            self.high.append(sum(byte >= 0x80 for byte in role))
        return np.fromiter(map(self.code.__getitem__, raw), dtype=np.int32, count=len(raw))


@dataclass(slots=True)
class FileRows:
    """The messages of one file as columns, and what its header says."""

    names: list[str]  # role names (shared by the files of one load)
    role_codes: np.ndarray
    text: bytes  # the contents, UTF-8, one after another
    offsets: Ints  # content i is text[offsets[i]:offsets[i + 1]]
    chars: Ints
    summary: np.ndarray
    continues: str | None
    format_version: int | None
    problems: list[fmt.FormatProblem]
    size: int
    # Stamps as written in the headings (a grid, see _stamps), until converted.
    stamp_grid: np.ndarray = field(default_factory=lambda: np.empty((0, WIDTH), np.uint8))
    stamp_lengths: Ints = field(default_factory=lambda: np.empty(0, np.int64))
    utc_us: Ints = field(default_factory=lambda: np.empty(0, np.int64))
    naive: np.ndarray = field(default_factory=lambda: np.empty(0, bool))

    @classmethod
    def empty(
        cls,
        continues: str | None,
        format_version: int | None,
        problems: list[fmt.FormatProblem],
        size: int,
    ) -> FileRows:
        """No messages (a header alone, or a file the parser could not read)."""
        return cls(
            [],
            np.empty(0, np.int32),
            b"",
            np.zeros(1, np.int64),
            np.empty(0, np.int64),
            np.empty(0, bool),
            continues,
            format_version,
            problems,
            size,
        )

    @property
    def pending(self) -> bool:
        """Whether the stamps still have to be converted."""
        return len(self.stamp_lengths) > 0

    def convert(self, naive_tz: tzinfo | None) -> bool:
        """Fill ``utc_us`` and ``naive`` from the stamps; False if one is not a timestamp."""
        converted = convert_grid(self.stamp_grid, self.stamp_lengths, naive_tz)
        if converted is None:
            return False
        self.utc_us, self.naive = converted
        self.stamp_grid, self.stamp_lengths = self.stamp_grid[:0], self.stamp_lengths[:0]
        return True

    @property
    def roles(self) -> list[str]:
        return [self.names[code] for code in self.role_codes.tolist()]

    @property
    def contents(self) -> list[str]:
        """The contents as ``str`` (decoded from ``text``)."""
        text = self.text.decode("utf-8")
        if len(text) == len(self.text):  # ASCII: byte offsets are character offsets
            bounds = self.offsets.tolist()
        else:
            bounds = [0, *np.cumsum(self.chars).tolist()]
        return list(map(text.__getitem__, map(slice, bounds[:-1], bounds[1:])))

    def __len__(self) -> int:
        return len(self.chars)


def _matching(a: np.ndarray, at: Ints, pattern: bytes) -> Ints:
    """Indices ``i`` with ``pattern`` at ``a[at[i]:]`` (positions that leave no room: none)."""
    keep = np.flatnonzero(at <= len(a) - len(pattern))
    for k, byte in enumerate(pattern):
        if not len(keep):
            break
        keep = keep[a[at[keep] + k] == byte]
    return keep


def _where(a: np.ndarray, at: Ints, pattern: bytes) -> Ints:
    return at[_matching(a, at, pattern)]


def _escapes(a: np.ndarray, first: Ints) -> Ints:
    """The backslashes that escape a line (fmt.unescape_content drops them), among the
    backslashes ``first`` that start a line; every line must end with a "\\n"."""
    after = first + 1
    more = a[after] == 92  # further backslashes belong to the content
    while more.any():
        after = after + more
        more = a[after] == 92
    hits = [_where(a, after, pattern) for pattern in _STRUCTURE]
    for pattern in _WHOLE_LINE:
        found = _where(a, after, pattern)
        end = found + len(pattern)
        more = a[end] == 13
        while more.any():
            end = end + more
            more = a[end] == 13
        hits.append(found[a[end] == 10])
    structural = np.sort(np.concatenate(hits))
    return first[np.searchsorted(after, structural)]


def _line_starts(a: np.ndarray, at: Ints) -> Ints:
    """The positions of ``at`` (none of them 0) that start a line."""
    starts: Ints = at[a[at - 1] == 10]
    return starts


def unescape(text: str) -> str:
    """:func:`memorylab.memory.format.unescape_content`, by the fast route's own code."""
    data = ("\n" + text + "\n").encode("utf-8", "surrogatepass")
    a = np.frombuffer(data, dtype=np.uint8)
    escapes = _escapes(a, _line_starts(a, np.flatnonzero(a[1:] == 92) + 1))
    keep = np.ones(len(a), dtype=bool)
    keep[escapes] = False
    return a[keep][1:-1].tobytes().decode("utf-8", "surrogatepass")


# --------------------------------------------------------------------------- files


def _header(head: str, strict: bool, path: Path) -> tuple[MemoryDocument, list[Any]]:
    """Header fields and header problems (the header alone parses as a file without blocks)."""
    if strict:
        return fmt.parse(head, strict=True, path=str(path)), []
    return fmt.parse(head, strict=False, path=str(path))


@dataclass(slots=True)
class _Blocks:
    role_at: Ints  # where each heading's role starts
    dash_at: Ints  # where the em dash of its last " — " is
    line_end: Ints  # the "\n" that ends the heading
    body_start: Ints
    body_end: Ints


_DASH_SEP = b" " + _EM_DASH + b" "
_STAMP_LENGTHS = (32, 26, 25, 19)  # what isoformat() writes; longest first (see _last_dash)
_LINE_WINDOWS = (np.arange(48), np.arange(48, 256))  # most headings fit in the first


def _line_ends(data: bytes, a: np.ndarray, at: Ints) -> Ints:
    """The first "\\n" at or after each position (there is one after each)."""
    ends = np.full(len(at), -1, dtype=np.int64)
    todo = np.arange(len(at))
    for columns in _LINE_WINDOWS:
        # clipped past the end: the last byte, a "\n" after the one looked for
        window = a.take(at[todo, None] + columns, mode="clip") == 10
        first = window.argmax(axis=1)
        found = window[np.arange(len(todo)), first]
        ends[todo[found]] = at[todo[found]] + columns[first[found]]
        todo = todo[~found]
    for i in todo.tolist():  # a long line
        ends[i] = data.find(b"\n", int(at[i]))
    return ends


def _last_dash(data: bytes, a: np.ndarray, role_at: Ints, line_end: Ints) -> Ints | None:
    """The em dash of the last " — " of each heading (``bytes.rpartition``), or None if one
    has none. Stamps have a few lengths: where " — " ends one of them before the line end is
    checked with numpy; a heading whose last " — " is elsewhere is searched in Python. (A
    later " — " than the one found would sit in the stamp, which then is no timestamp.)"""
    dash_at = np.full(len(role_at), -1, dtype=np.int64)
    for length in _STAMP_LENGTHS:  # the shortest last: the last " — " wins
        space = line_end - length - len(_DASH_SEP)
        room = np.flatnonzero(space >= role_at)
        found = room[_matching(a, space[room], _DASH_SEP)]
        dash_at[found] = space[found] + 1
    for i in np.flatnonzero(dash_at < 0).tolist():
        found_at = data.rfind(_DASH_SEP, int(role_at[i]), int(line_end[i]))
        if found_at < 0:
            return None
        dash_at[i] = found_at + 1
    return dash_at


def _blocks(data: bytes, a: np.ndarray, start: int, own: bool) -> _Blocks | None:
    """Where the blocks are, as the parser would cut them, or None when it has to decide.

    ``a`` (the bytes of ``data``) starts a heading at ``start`` and ends with a separator.
    """
    if _LINE_HEADING in data[:start]:
        return None
    hashes = np.flatnonzero(a[start:] == 35) + start
    headings = _where(a, _line_starts(a, hashes), b"### ")  # headings[0] is start
    # Where the parser cuts: a separator, then a heading.
    cuts = _matching(a, headings - len(_SEP), _SEP)
    # memorylab's files escape content: there every "\n### " line is a heading, and the parser
    # cuts blocks at one that a separator does not precede (a torn block).
    if own and len(cuts) != len(headings) - 1:
        return None
    role_at = np.concatenate(([start + 4], headings[cuts] + 4))
    line_end = _line_ends(data, a, role_at)
    body_start = line_end + 2
    body_end = np.append(headings[cuts] - len(_SEP), len(a) - len(_SEP))
    if not bool((a[line_end + 1] == 10).all()) or bool((body_start > body_end).any()):
        return None  # no blank line after a heading, or a separator overlaps it
    # A body starting with a "---" line: the parser would see a separator that overlaps the
    # heading's blank line.
    if len(_matching(a, body_start, b"---")) or len(_matching(a, body_start, b"\n---")):
        return None
    dash_at = _last_dash(data, a, role_at, line_end)
    if dash_at is None:
        return None
    return _Blocks(role_at, dash_at, line_end, body_start, body_end)


def _in_ranges(points: Ints, starts: Ints, ends: Ints) -> Ints:
    """How many of the sorted ``points`` fall in each range [start, end)."""
    return np.searchsorted(points, ends) - np.searchsorted(points, starts)


def _fast(data: bytes, path: Path, strict: bool, roles: Roles) -> FileRows | None:
    """The fast route (module docstring), or None when the parser has to decide."""
    if not data.startswith(_TITLE) or b"\r" in data:
        return None
    marker = data.find(_LOG)
    if marker < 0:
        return None
    start = marker + len(_LOG)
    if data.startswith(b"\n", start):
        start += 1
    try:
        head = data[:start].decode("utf-8")
    except UnicodeDecodeError:
        return None
    doc, problems = _header(head, strict, path)
    if start == len(data):
        return FileRows.empty(doc.continues, doc.format_version, problems, len(data))
    if not data.startswith(b"### ", start) or not data.endswith(_SEP):
        return None
    a = np.frombuffer(data, dtype=np.uint8)
    blocks = _blocks(data, a, start, doc.format_version is not None)
    if blocks is None:
        return None
    body_start, body_end = blocks.body_start, blocks.body_end
    role_bytes = list(map(data.__getitem__, map(slice, blocks.role_at.tolist(),
                                                (blocks.dash_at - 1).tolist())))  # fmt: skip
    codes = roles.codes(role_bytes)
    if codes is None:
        return None
    view = memoryview(data)
    lengths = body_end - body_start
    chars = lengths
    # Non-ASCII bytes outside the header, roles and dashes are in contents (or stamps, which
    # then do not convert): only contents holding some are decoded, to check they are UTF-8.
    known = int(np.count_nonzero(a[:start] >= 0x80)) + len(_EM_DASH) * len(codes)
    known += int(np.asarray(roles.high, dtype=np.int64)[codes].sum())
    if int(np.count_nonzero(a >= 0x80)) != known:
        high = np.flatnonzero(a >= 0x80)
        has_high = np.flatnonzero(_in_ranges(high, body_start, body_end))
        pieces = map(slice, body_start[has_high].tolist(), body_end[has_high].tolist())
        try:
            b"\n".join(map(view.__getitem__, pieces)).decode("utf-8")
        except UnicodeDecodeError:
            return None
        continuation = high[(a[high] & 0xC0) == 0x80]
        chars = lengths - _in_ranges(continuation, body_start, body_end)
    slashes = np.flatnonzero(a[start:] == 92) + start
    escapes = _escapes(a, _line_starts(a, slashes))
    starts, ends = body_start, body_end
    if len(escapes):
        removed = _in_ranges(escapes, body_start, body_end)
        lengths, chars = lengths - removed, chars - removed
        starts = np.sort(np.concatenate((body_start, escapes + 1)))
        ends = np.sort(np.concatenate((escapes, body_end)))
    text = b"".join(map(view.__getitem__, map(slice, starts.tolist(), ends.tolist())))
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    stamp_at = blocks.dash_at + 4
    return FileRows(
        roles.names,
        codes,
        text,
        offsets,
        chars,
        _summaries(text, offsets),
        doc.continues,
        doc.format_version,
        problems,
        len(data),
        a.take(stamp_at[:, None] + _COLUMNS, mode="clip"),
        blocks.line_end - stamp_at,
    )


def _summaries(text: bytes, offsets: Ints) -> np.ndarray:
    """Whether each content starts with the compaction summary's prefix."""
    lengths = np.diff(offsets)
    candidates = np.flatnonzero(lengths >= len(_SUMMARY))
    hits = candidates[_matching(np.frombuffer(text, np.uint8), offsets[candidates], _SUMMARY)]
    summary = np.zeros(len(lengths), dtype=bool)
    summary[hits] = True
    return summary


def _from_messages(
    doc: MemoryDocument,
    problems: list[fmt.FormatProblem],
    size: int,
    roles: Roles,
    naive_tz: tzinfo | None,
) -> FileRows:
    """The columns of a parsed document."""
    messages = doc.messages
    encoded = [m.content.encode("utf-8") for m in messages]
    lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    text = b"".join(encoded)
    codes = roles.codes([m.role.encode("utf-8") for m in messages])
    assert codes is not None  # encoded from str
    converted = convert_stamps(
        [m.timestamp.isoformat().encode("ascii") for m in messages], naive_tz
    )
    assert converted is not None  # the parser only accepts valid timestamps
    rows = FileRows(
        roles.names,
        codes,
        text,
        offsets,
        np.fromiter((len(m.content) for m in messages), dtype=np.int64, count=len(messages)),
        _summaries(text, offsets),
        doc.continues,
        doc.format_version,
        problems,
        size,
    )
    rows.utc_us, rows.naive = converted
    return rows


def parsed(
    data: bytes, path: Path, strict: bool, naive_tz: tzinfo | None, roles: Roles | None = None
) -> FileRows:
    """The parser's route: exactly :func:`memorylab.read_memory`, as columns."""
    roles = Roles() if roles is None else roles
    problems: list[fmt.FormatProblem] = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        problem = fmt.FormatProblem(line, "encoding", f"not UTF-8 at byte {exc.start}")
        if strict:
            raise MemoryFormatError(
                f"not UTF-8 text (byte {exc.start}); is it a binary file? Use strict=False to "
                "salvage the readable parts",
                path=path,
                line=line,
                problems=[problem],
            ) from None
        problems.append(problem)
        text = data.decode("utf-8", errors="replace")
    try:
        if strict:
            doc = fmt.parse(text, strict=True, path=str(path))
        else:
            doc, found = fmt.parse(text, strict=False, path=str(path))
            problems += found
    except MemoryFormatError:
        raise
    except ValueError as exc:  # a heading timestamp out of range ("month must be in 1..12")
        problem = fmt.FormatProblem(1, "structure", f"unreadable timestamp in a heading: {exc}")
        if strict:
            raise MemoryFormatError(problem.message, path=path, problems=[problem]) from None
        return FileRows.empty(None, None, [*problems, problem], len(data))
    return _from_messages(doc, problems, len(data), roles, naive_tz)


def read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise StoreError(f"{path} does not exist (was it removed while reading?)") from None
    except IsADirectoryError:
        raise StoreError(f"{path} is a folder, not a memory file") from None
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from exc


def read_rows(
    path: Path,
    *,
    strict: bool,
    roles: Roles | None = None,
    naive_tz: tzinfo | None = None,
    box: list[bytes] | None = None,
    reader: Callable[[Path], bytes] = read_bytes,
) -> FileRows:
    """One file's messages as columns (see the module docstring).

    Timestamps are converted by the parser's route only; the fast route leaves them
    ``pending`` so that a caller converts many files at once (:meth:`FileRows.convert`, and
    :func:`convert_or_parse` for a file whose stamps turn out not to convert).

    ``box``, when given, holds the file's bytes already read; it is emptied.
    """
    data = box.pop() if box else reader(path)
    roles = Roles() if roles is None else roles
    rows = _fast(data, path, strict, roles)
    if rows is not None:
        return rows
    return parsed(data, path, strict, naive_tz, roles)


def convert_or_parse(
    rows: FileRows,
    path: Path,
    *,
    strict: bool,
    naive_tz: tzinfo | None = None,
    reader: Callable[[Path], bytes] = read_bytes,
    roles: Roles | None = None,
) -> FileRows:
    """``rows`` with its timestamps converted, or the parser's rows when one does not convert."""
    if not rows.pending or rows.convert(naive_tz):
        return rows
    return parsed(reader(path), path, strict, naive_tz, roles)


def decoded(rows: list[FileRows]) -> list[str]:
    """The contents of many files as one list of ``str``."""
    return [content for one in rows for content in one.contents]
