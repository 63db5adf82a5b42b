"""Reading one memory file into column lists, fast (internal to :mod:`memorylab.analysis`).

:func:`read_rows` returns a file's messages as parallel lists (roles, contents) and numpy arrays
(UTC microseconds, naive flags), the shape :func:`memorylab.analysis.memory_df` builds its
columns from. It gives exactly what :func:`memorylab.memory.format.parse` gives, by two routes:

* the fast route, for well-formed files: the file's bytes are cut at every
  ``\\n\\n---\\n\\n### {heading}\\n\\n`` with one ``re.split`` (C), headings are split with
  ``bytes.rpartition`` mapped over the list (no Python loop per message), contents are decoded
  one by one (ASCII contents stay one byte per character, although the em dash of the headings
  would make a whole-file ``str`` two bytes per character), and timestamps are checked against
  fixed-width templates and converted with numpy;
* the parser itself (:func:`memorylab.memory.format.parse`) for anything the fast route does not
  recognise as certainly well formed: a BOM, ``\\r``, no header, a torn or unclosed block, a
  ``---`` line or heading-like line in unescaped content, an unusual timestamp shape, invalid
  UTF-8. The guards are conservative: when in doubt, the parser decides.

Naive timestamps (the reference framework's) are read as wall-clock time in ``naive_tz``
(``None``: this machine's local time zone) and converted to UTC, one zone lookup per distinct
minute, so that daylight-saving changes are honoured.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from itertools import repeat
from operator import methodcaller
from pathlib import Path
from typing import Any

import numpy as np

from memorylab.errors import MemoryFormatError, StoreError
from memorylab.memory import format as fmt
from memorylab.memory.records import MemoryDocument

_TITLE = b"# Agent Memory\n"
_LOG = b"\n## Interaction Log\n"
_SEP = b"\n\n---\n\n"
# memorylab's files escape content, so every "\n### " line is a heading: split at each one and
# capture what precedes it (the separator, for all but the first) and whether a blank line follows.
_SPLIT_OWN = re.compile(rb"\n(\n---\n\n|\n|)### ([^\n]*)\n(\n?)")
_AFTER_SEPARATOR = b"\n---\n\n"
_OVERLAP = (b"---", b"\n---")
# The reference's files do not escape: split where a separator is followed by "### " (where the
# parser looks for the next heading) and capture whether a blank line follows the heading.
_SPLIT_REFERENCE = re.compile(rb"\n\n---\n\n### ([^\n]*)\n(\n?)")
_DASH = " \u2014 ".encode()
_RPARTITION = methodcaller("rpartition", _DASH)
# The timestamp grammar of memorylab.memory.format (ISO-8601 as Python writes it).
_TS_RE = re.compile(
    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?"
    r"(?:Z|[+-]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?)?\Z"
)
_EPOCH = np.datetime64(0, "us")
_EPOCH_NAIVE = datetime(1970, 1, 1)
_MINUTE_US = 60_000_000
_NO_INTS: np.ndarray[Any, np.dtype[np.int64]] = np.empty(0, dtype=np.int64)
_NO_BOOLS: np.ndarray[Any, np.dtype[np.bool_]] = np.empty(0, dtype=bool)


@dataclass(slots=True)
class FileRows:
    """The messages of one file as columns, and what its header says."""

    roles: list[str]
    contents: list[str]
    stamps: list[bytes]  # as written in the headings, until converted
    continues: str | None
    format_version: int | None
    problems: list[fmt.FormatProblem]
    size: int
    utc_us: np.ndarray[Any, np.dtype[np.int64]] = field(default_factory=lambda: _NO_INTS)
    naive: np.ndarray[Any, np.dtype[np.bool_]] = field(default_factory=lambda: _NO_BOOLS)

    def convert(self, naive_tz: tzinfo | None) -> bool:
        """Fill ``utc_us`` and ``naive`` from ``stamps``; False if one is not a timestamp."""
        converted = convert_stamps(self.stamps, naive_tz)
        if converted is None:
            return False
        self.utc_us, self.naive = converted
        self.stamps = []
        return True

    def __len__(self) -> int:
        return len(self.contents)


# --------------------------------------------------------------------------- timestamps

# Fixed-width shapes: (length, wall-clock width, offset start or None).
_SHAPES: dict[int, tuple[int, int | None]] = {
    19: (19, None),
    26: (26, None),
    25: (19, 19),
    32: (26, 26),
}


def _template(length: int) -> tuple[list[int], list[tuple[int, int]], int | None]:
    """Digit positions, fixed characters and the sign position of one shape."""
    wall, offset = _SHAPES[length]
    fixed = [(4, ord("-")), (7, ord("-")), (10, ord("T")), (13, ord(":")), (16, ord(":"))]
    digits = [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18]
    if wall == 26:
        fixed.append((19, ord(".")))
        digits += list(range(20, 26))
    if offset is not None:
        fixed.append((offset + 3, ord(":")))
        digits += [offset + 1, offset + 2, offset + 4, offset + 5]
    return digits, fixed, offset


_TEMPLATES = {length: _template(length) for length in _SHAPES}


def _convert_shape(stamps: list[bytes], length: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(UTC-or-wall microseconds, naive) for stamps of one fixed shape; None if one is off."""
    digits, fixed, offset = _TEMPLATES[length]
    wall = _SHAPES[length][0]
    grid = np.frombuffer(b"".join(stamps), dtype=np.uint8).reshape(-1, length)
    if not bool(((grid[:, digits] - 48) <= 9).all()):  # uint8 wraps below '0'
        return None
    if not bool((grid[:, :4] != ord("0")).any(axis=1).all()):  # year 0000 (numpy takes it)
        return None
    for position, char in fixed:
        if not bool((grid[:, position] == char).all()):
            return None
    text = np.ascontiguousarray(grid[:, :wall]).view(f"S{wall}").ravel()
    try:
        micros = (text.astype("datetime64[us]") - _EPOCH).astype(np.int64)
    except ValueError:  # e.g. month 13: not a timestamp
        return None
    if offset is None:
        return micros, np.ones(len(stamps), dtype=bool)
    sign = grid[:, offset]
    if not bool(((sign == ord("+")) | (sign == ord("-"))).all()):
        return None
    num = grid.astype(np.int64) - 48
    minutes = (num[:, offset + 1] * 10 + num[:, offset + 2]) * 60
    minutes += num[:, offset + 4] * 10 + num[:, offset + 5]
    minutes = np.where(sign == ord("-"), -minutes, minutes)
    return micros - minutes * _MINUTE_US, np.zeros(len(stamps), dtype=bool)


def _convert_one(stamp: bytes) -> tuple[int, bool] | None:
    try:
        text = stamp.decode("ascii")
    except UnicodeDecodeError:
        return None
    if not _TS_RE.match(text):
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:  # shaped like a timestamp, out of range (month 13)
        return None
    if value.tzinfo is None:
        return (value - _EPOCH_NAIVE) // timedelta(microseconds=1), True
    return (value.astimezone(UTC).replace(tzinfo=None) - _EPOCH_NAIVE) // timedelta(
        microseconds=1
    ), False


def _local_offsets_us(wall_us: np.ndarray, naive_tz: tzinfo | None) -> np.ndarray:
    """UTC offset (µs) of each naive wall-clock time in ``naive_tz`` (None: local time)."""
    minutes = wall_us // _MINUTE_US
    unique, inverse = np.unique(minutes, return_inverse=True)
    offsets = np.empty(len(unique), dtype=np.int64)
    for i, minute in enumerate(unique.tolist()):
        when = _EPOCH_NAIVE + timedelta(minutes=minute)
        aware = when.astimezone() if naive_tz is None else when.replace(tzinfo=naive_tz)
        delta = aware.utcoffset() or timedelta(0)
        offsets[i] = delta // timedelta(microseconds=1)
    return offsets[inverse]


def convert_stamps(
    stamps: list[bytes], naive_tz: tzinfo | None = None
) -> tuple[np.ndarray, np.ndarray] | None:
    """UTC microseconds since the epoch and naive flags, or None if a stamp is not ISO-8601."""
    count = len(stamps)
    utc = np.empty(count, dtype=np.int64)
    naive = np.empty(count, dtype=bool)
    if count == 0:
        return utc, naive
    lengths = np.fromiter(map(len, stamps), dtype=np.int64, count=count)
    for length in np.unique(lengths).tolist():
        where = np.flatnonzero(lengths == length)
        group = stamps if len(where) == count else [stamps[i] for i in where.tolist()]
        converted = _convert_shape(group, length) if length in _SHAPES else None
        if converted is None:
            singles = [_convert_one(stamp) for stamp in group]
            if any(single is None for single in singles):
                return None
            converted = (
                np.array([s[0] for s in singles if s is not None], dtype=np.int64),
                np.array([s[1] for s in singles if s is not None], dtype=bool),
            )
        utc[where], naive[where] = converted
    if naive.any():
        utc[naive] -= _local_offsets_us(utc[naive], naive_tz)
    return utc, naive


# --------------------------------------------------------------------------- unescaping


def _structural(line: str) -> bool:
    """:func:`memorylab.memory.format.unescape_content`'s test of a line (backslash removed)."""
    core = line.lstrip("\\").rstrip("\r")
    return (
        core == fmt.SEPARATOR_LINE
        or core.startswith("### ")
        or core == "###"
        or core.startswith(fmt.TITLE_LINE)
        or core.startswith(fmt.LOG_LINE)
    )


# A line that starts with a backslash and, without its leading backslashes (and trailing "\r"),
# is structure: the parser drops its first backslash.
_ESCAPED_LINE = re.compile(
    r"\n\\(?=\\*(?:(?:---|###)\r*(?:\n|\Z)|### |# Agent Memory|## Interaction Log))"
)


def unescape(text: str) -> str:
    """Exactly :func:`memorylab.memory.format.unescape_content`, with one regex pass over the
    lines that start with a backslash (the parser's version visits every line)."""
    if "\\" not in text:
        return text
    if text.startswith("\\") and _structural(text[1:].partition("\n")[0]):
        text = text[1:]  # the first line has no "\n" before it: the pattern leaves it alone
    return _ESCAPED_LINE.sub("\n", text)


# --------------------------------------------------------------------------- files


def _header(head: str, strict: bool, path: Path) -> tuple[MemoryDocument, list[Any]]:
    """Header fields and header problems (the header alone parses as a file without blocks)."""
    if strict:
        return fmt.parse(head, strict=True, path=str(path)), []
    return fmt.parse(head, strict=False, path=str(path))


def _fast(
    box: list[bytes], path: Path, strict: bool, roles_seen: dict[bytes, str]
) -> FileRows | None:
    """The fast route (module docstring), or None when the parser has to decide.

    ``box`` holds the file's bytes; they are dropped from it once they have been split, so that
    the bytes, the split pieces and the decoded text are not all alive at once (the caller reads
    the file again in the rare case that the parser has to decide after that point).
    """
    data = box[0]
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
    own = doc.format_version is not None
    if start == len(data):
        return FileRows([], [], [], doc.continues, doc.format_version, problems, len(data))
    if not data.startswith(b"### ", start) or not data.endswith(_SEP):
        return None
    # The parser would split exactly where the pattern does, and see a heading and a blank line
    # each time (else it decides): see the two patterns above.
    if own:
        parts = _SPLIT_OWN.split(data)
        befores, heads, blanks, bodies = parts[1::4], parts[2::4], parts[3::4], parts[4::4]
        if len(parts[0]) != start - 2 or befores[0] != b"\n":
            return None
        if befores.count(_AFTER_SEPARATOR) != len(befores) - 1:
            return None
    else:
        parts = _SPLIT_REFERENCE.split(data)
        first = parts[0]
        line_end = first.find(b"\n", start)
        if line_end < 0 or not first.startswith(b"\n\n", line_end):
            return None
        heads = [first[start + 4 : line_end], *parts[1::3]]
        blanks = parts[2::3]
        bodies = [first[line_end + 2 :], *parts[3::3]]
        del first
    del parts
    if blanks.count(b"\n") != len(blanks):
        return None
    # A body starting with a "---" line would make the parser see a separator that overlaps the
    # heading's blank line (the split above consumed it): let the parser decide.
    if any(map(bytes.startswith, bodies, repeat(_OVERLAP))):
        return None
    if not bodies[-1].endswith(_SEP):
        return None
    bodies[-1] = bodies[-1][: -len(_SEP)]
    role_bytes, dashes, stamps = zip(*map(_RPARTITION, heads), strict=True)
    del heads
    if b"" in dashes:
        return None
    try:
        for raw in set(role_bytes).difference(roles_seen):
            roles_seen[raw] = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    backslash = b"\\" in data
    size = len(data)
    box.clear()
    del data
    try:
        contents = list(map(bytes.decode, bodies))
    except UnicodeDecodeError:
        return None  # the caller reads the file again for the parser
    del bodies
    if backslash:
        contents = [unescape(text) if "\\" in text else text for text in contents]
    roles = list(map(roles_seen.__getitem__, role_bytes))
    return FileRows(
        roles, contents, list(stamps), doc.continues, doc.format_version, problems, size
    )


def parsed(data: bytes, path: Path, strict: bool, naive_tz: tzinfo | None) -> FileRows:
    """The parser's route: exactly :func:`memorylab.read_memory`, as columns."""
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
        return FileRows([], [], [], None, None, [*problems, problem], len(data))
    messages = doc.messages
    rows = FileRows(
        [m.role for m in messages],
        [m.content for m in messages],
        [m.timestamp.isoformat().encode("ascii") for m in messages],
        doc.continues,
        doc.format_version,
        problems,
        len(data),
    )
    converted = rows.convert(naive_tz)
    assert converted  # the parser only accepts valid timestamps
    return rows


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
    roles_seen: dict[bytes, str] | None = None,
    naive_tz: tzinfo | None = None,
    box: list[bytes] | None = None,
    reader: Callable[[Path], bytes] = read_bytes,
) -> FileRows:
    """One file's messages as columns (see the module docstring).

    Timestamps are converted by the parser's route only; the fast route leaves them in
    ``stamps`` so that a caller converts many files at once (:meth:`FileRows.convert`, and
    :func:`parsed` for a file whose stamps turn out not to convert).

    ``box``, when given, holds the file's bytes already read; it is emptied (the bytes are
    released as soon as they are no longer needed).
    """
    if box is None:
        box = [reader(path)]
    rows = _fast(box, path, strict, {} if roles_seen is None else roles_seen)
    if rows is not None:
        return rows
    return parsed(box[0] if box else reader(path), path, strict, naive_tz)


def convert_or_parse(
    rows: FileRows,
    path: Path,
    *,
    strict: bool,
    naive_tz: tzinfo | None = None,
    reader: Callable[[Path], bytes] = read_bytes,
) -> FileRows:
    """``rows`` with its timestamps converted, or the parser's rows when one does not convert."""
    if not rows.stamps or rows.convert(naive_tz):
        return rows
    return parsed(reader(path), path, strict, naive_tz)
