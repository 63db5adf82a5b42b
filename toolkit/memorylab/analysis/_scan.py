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
* the parser itself for small files (:data:`SMALL_FILE`: there it costs less than the fast
  route's numpy calls) and for anything the fast route does not recognise as certainly well formed:
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

from memorylab.analysis._layout import (
    EM_DASH,
    SEP,
    Buffer,
    Ints,
    escaping_backslashes,
    find_blocks,
    in_ranges,
    line_starts,
)
from memorylab.analysis._stamps import WIDTH, convert_grid, convert_stamps, grid_of
from memorylab.errors import MemoryFormatError, StoreError
from memorylab.memory import format as fmt
from memorylab.memory.records import SUMMARY_PREFIX, MemoryDocument

__all__ = ["FileRows", "Roles", "convert_or_parse", "convert_stamps", "read_bytes", "read_rows"]

_TITLE = b"# Agent Memory\n"
_LOG = b"\n## Interaction Log\n"
_SUMMARY = SUMMARY_PREFIX.encode()
_COLUMNS = np.arange(WIDTH)


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
        if not self.pending:
            return True
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


# --------------------------------------------------------------------------- files


def _header(head: str, strict: bool, path: Path) -> tuple[MemoryDocument, list[Any]]:
    """Header fields and header problems (the header alone parses as a file without blocks)."""
    if strict:
        return fmt.parse(head, strict=True, path=str(path)), []
    return fmt.parse(head, strict=False, path=str(path))


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
    if not data.startswith(b"### ", start) or not data.endswith(SEP):
        return None
    b = Buffer(data)
    a = b.a
    blocks = find_blocks(b, start, doc.format_version is not None)
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
    known = int(np.count_nonzero(a[:start] >= 0x80)) + len(EM_DASH) * len(codes)
    known += int(np.asarray(roles.high, dtype=np.int64)[codes].sum())
    if int(np.count_nonzero(a >= 0x80)) != known:
        high = np.flatnonzero(a >= 0x80)
        has_high = np.flatnonzero(in_ranges(high, body_start, body_end))
        pieces = map(slice, body_start[has_high].tolist(), body_end[has_high].tolist())
        try:
            b"\n".join(map(view.__getitem__, pieces)).decode("utf-8")
        except UnicodeDecodeError:
            return None
        continuation = high[(a[high] & 0xC0) == 0x80]
        chars = lengths - in_ranges(continuation, body_start, body_end)
    slashes = (a[start:] == 92).nonzero()[0] + start
    escapes = escaping_backslashes(b, line_starts(a, slashes))
    starts, ends = body_start, body_end
    if len(escapes):
        removed = in_ranges(escapes, body_start, body_end)
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
    starts = offsets[:-1]
    candidates = (np.diff(offsets) >= len(_SUMMARY)).nonzero()[0]
    a = np.frombuffer(text, np.uint8)
    candidates = candidates[a[starts[candidates]] == _SUMMARY[0]]  # few: JSON starts so too
    summary = np.zeros(len(starts), dtype=bool)
    summary[candidates] = [text.startswith(_SUMMARY, p) for p in starts[candidates].tolist()]
    return summary


def _from_messages(
    doc: MemoryDocument, problems: list[fmt.FormatProblem], size: int, roles: Roles
) -> FileRows:
    """The columns of a parsed document (the stamps, which the parser checked, pending)."""
    messages = doc.messages
    encoded = [m.content.encode("utf-8") for m in messages]
    lengths = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    text = b"".join(encoded)
    codes = roles.codes([m.role.encode("utf-8") for m in messages])
    assert codes is not None  # encoded from str
    return FileRows(
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
        *grid_of([m.timestamp.isoformat().encode("ascii") for m in messages]),
    )


def parsed(data: bytes, path: Path, strict: bool, roles: Roles | None = None) -> FileRows:
    """The parser's route: exactly :func:`memorylab.read_memory`, as columns (the stamps
    pending, see :func:`read_rows`)."""
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
    return _from_messages(doc, problems, len(data), roles)


def read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise StoreError(f"{path} does not exist (was it removed while reading?)") from None
    except IsADirectoryError:
        raise StoreError(f"{path} is a folder, not a memory file") from None
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from exc


# Below this size the parser costs less than the fast route's numpy calls (about the same at
# 16 KB of typical agent text; the parser's cost grows with the messages, the fast route's hardly).
SMALL_FILE = 16_000


def read_rows(
    path: Path,
    *,
    strict: bool,
    roles: Roles | None = None,
    box: list[bytes] | None = None,
    reader: Callable[[Path], bytes] = read_bytes,
) -> FileRows:
    """One file's messages as columns (see the module docstring).

    The timestamps are left ``pending``, so that a caller converts many files at once
    (:meth:`FileRows.convert`; :func:`convert_or_parse` for a file whose stamps turn out not
    to convert). ``box``, when given, holds the file's bytes already read; it is emptied.
    """
    data = box.pop() if box else reader(path)
    roles = Roles() if roles is None else roles
    rows = _fast(data, path, strict, roles) if len(data) >= SMALL_FILE else None
    return rows if rows is not None else parsed(data, path, strict, roles)


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
    if rows.convert(naive_tz):
        return rows
    rows = parsed(reader(path), path, strict, roles)
    converted = rows.convert(naive_tz)
    assert converted  # the parser only accepts valid timestamps
    return rows


def decoded(rows: list[FileRows]) -> list[str]:
    """The contents of many files as one list of ``str``."""
    return [content for one in rows for content in one.contents]
