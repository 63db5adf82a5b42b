"""Where the blocks of a memory file are, found with numpy (internal to
:mod:`memorylab.analysis`; :mod:`memorylab.analysis._scan` explains the fast route).

The functions take the file's bytes as a :class:`Buffer` and return positions in it;
:func:`find_blocks` returns None for any file the parser might read otherwise than it would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

SEP = b"\n\n---\n\n"
_LINE_HEADING = b"\n### "
EM_DASH = "\u2014".encode()
# What follows the backslashes of an escaped line (fmt._is_structural); "---" and "###" are
# then followed by "\r"s and a line end, which a content's end is too (a "\n" follows it).
_STRUCTURE = (b"### ", b"# Agent Memory", b"## Interaction Log")
_WHOLE_LINE = (b"---", b"###")
Ints = np.ndarray[Any, np.dtype[np.int64]]


class Buffer:
    """A buffer, its bytes as numpy, and the 8 bytes that start at each position (overlapping
    little-endian words: a pattern is checked 8 bytes at a time, so a file costs a few numpy
    calls whatever its size)."""

    __slots__ = ("a", "data", "words")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.a = np.frombuffer(data, dtype=np.uint8)
        self.words = np.ndarray((max(len(data) - 7, 0),), "<u8", data, 0, (1,))

    def _equal(self, where: Ints, chunk: bytes) -> np.ndarray:
        """Whether the bytes at each position (>= 0) start with ``chunk`` (up to 8 bytes)."""
        if not len(where) or int(where.max()) >= len(self.words):  # near the end: no word
            return np.array([self.data.startswith(chunk, p) for p in where.tolist()], bool)
        words = self.words[where]
        if len(chunk) < 8:
            words &= np.uint64((1 << 8 * len(chunk)) - 1)
        equal: np.ndarray = words == np.uint64(int.from_bytes(chunk, "little"))
        return equal

    def matching(self, at: Ints, pattern: bytes) -> Ints:
        """Indices ``i`` with ``pattern`` at ``at[i]`` (>= 0; where it would not fit: none)."""
        keep: Ints = self._equal(at, pattern[:8]).nonzero()[0]
        for offset in range(8, len(pattern), 8):
            if not len(keep):
                break
            keep = keep[self._equal(at[keep] + offset, pattern[offset : offset + 8])]
        return keep

    def where(self, at: Ints, pattern: bytes) -> Ints:
        found: Ints = at[self.matching(at, pattern)]
        return found


def escaping_backslashes(b: Buffer, first: Ints) -> Ints:
    """The backslashes that escape a line (fmt.unescape_content drops them), among the
    backslashes ``first`` that start a line; every line must end with a "\\n"."""
    if not len(first):
        return first
    a = b.a
    after = first + 1
    more = a[after] == 92  # further backslashes belong to the content
    while more.any():
        after = after + more
        more = a[after] == 92
    hits = [b.where(after, pattern) for pattern in _STRUCTURE]
    for pattern in _WHOLE_LINE:
        found = b.where(after, pattern)
        end = found + len(pattern)
        more = a[end] == 13
        while more.any():
            end = end + more
            more = a[end] == 13
        hits.append(found[a[end] == 10])
    structural = np.sort(np.concatenate(hits))
    return first[np.searchsorted(after, structural)]


def line_starts(a: np.ndarray, at: Ints) -> Ints:
    """The positions of ``at`` (none of them 0) that start a line."""
    starts: Ints = at[a[at - 1] == 10]
    return starts


def unescape(text: str) -> str:
    """:func:`memorylab.memory.format.unescape_content`, by the fast route's own code."""
    b = Buffer(("\n" + text + "\n").encode("utf-8", "surrogatepass"))
    a = b.a
    escapes = escaping_backslashes(b, line_starts(a, np.flatnonzero(a[1:] == 92) + 1))
    keep = np.ones(len(a), dtype=bool)
    keep[escapes] = False
    return a[keep][1:-1].tobytes().decode("utf-8", "surrogatepass")


@dataclass(slots=True)
class Blocks:
    """The positions of a file's blocks, one entry per block."""

    role_at: Ints  # where each heading's role starts
    dash_at: Ints  # where the em dash of its last " — " is
    line_end: Ints  # the "\n" that ends the heading
    body_start: Ints
    body_end: Ints


_DASH_SEP = b" " + EM_DASH + b" "
_STAMP_LENGTHS = np.array([32, 26, 25, 19])  # what isoformat() writes, longest first
_LINE_WINDOWS = (np.arange(48), np.arange(48, 256))  # most headings fit in the first


def line_ends(b: Buffer, at: Ints) -> Ints:
    """The first "\\n" at or after each position (there is one after each)."""
    ends = np.full(len(at), -1, dtype=np.int64)
    todo = np.arange(len(at))
    for columns in _LINE_WINDOWS:
        # clipped past the end: the last byte, a "\n" after the one looked for
        window = b.a.take(at[todo, None] + columns, mode="clip") == 10
        first = window.argmax(axis=1)
        found = window[np.arange(len(todo)), first]
        ends[todo[found]] = at[todo[found]] + columns[first[found]]
        todo = todo[~found]
        if not len(todo):
            return ends
    for i in todo.tolist():  # a long line
        ends[i] = b.data.find(b"\n", int(at[i]))
    return ends


def last_dash(b: Buffer, role_at: Ints, line_end: Ints) -> Ints | None:
    """The em dash of the last " — " of each heading (``bytes.rpartition``), or None if one
    has none. Stamps have a few lengths: where " — " ends one of them before the line end is
    checked with numpy; a heading whose last " — " is elsewhere is searched in Python. (A
    later " — " than the one found would sit in the stamp, which then is no timestamp.)"""
    space = line_end[:, None] - _STAMP_LENGTHS - len(_DASH_SEP)  # one column per length
    found = np.zeros(space.size, dtype=bool)
    found[b.matching(space.ravel(), _DASH_SEP)] = True
    found = found.reshape(space.shape) & (space >= role_at[:, None])
    shortest = len(_STAMP_LENGTHS) - 1 - found[:, ::-1].argmax(axis=1)  # the last " — "
    rows = np.arange(len(role_at))
    dash_at = np.where(found[rows, shortest], space[rows, shortest] + 1, -1)
    for i in np.flatnonzero(dash_at < 0).tolist():
        found_at = b.data.rfind(_DASH_SEP, int(role_at[i]), int(line_end[i]))
        if found_at < 0:
            return None
        dash_at[i] = found_at + 1
    return dash_at


def find_blocks(b: Buffer, start: int, own: bool) -> Blocks | None:
    """Where the blocks are, as the parser would cut them, or None when it has to decide.

    The buffer starts a heading at ``start`` and ends with a separator.
    """
    a = b.a
    if _LINE_HEADING in b.data[:start]:
        return None
    hashes = (a[start:] == 35).nonzero()[0] + start
    headings = b.where(line_starts(a, hashes), b"### ")  # headings[0] is start
    # Where the parser cuts: a separator, then a heading.
    cuts = b.matching(headings - len(SEP), SEP)
    # memorylab's files escape content: there every "\n### " line is a heading, and the parser
    # cuts blocks at one that a separator does not precede (a torn block).
    if own and len(cuts) != len(headings) - 1:
        return None
    role_at = np.concatenate(([start + 4], headings[cuts] + 4))
    line_end = line_ends(b, role_at)
    body_start = line_end + 2
    body_end = np.append(headings[cuts] - len(SEP), len(a) - len(SEP))
    if not bool((a[line_end + 1] == 10).all()) or bool((body_start > body_end).any()):
        return None  # no blank line after a heading, or a separator overlaps it
    # A body starting with a "---" line: the parser would see a separator that overlaps the
    # heading's blank line.
    if len(b.matching(body_start, b"---")) or len(b.matching(body_start, b"\n---")):
        return None
    dash_at = last_dash(b, role_at, line_end)
    if dash_at is None:
        return None
    return Blocks(role_at, dash_at, line_end, body_start, body_end)


def in_ranges(points: Ints, starts: Ints, ends: Ints) -> Ints:
    """How many of the sorted ``points`` fall in each range [start, end)."""
    return np.searchsorted(points, ends) - np.searchsorted(points, starts)
