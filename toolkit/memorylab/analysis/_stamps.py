"""Heading timestamps to UTC microseconds, many at once (internal to :mod:`memorylab.analysis`).

Stamps come as a grid: one row of :data:`WIDTH` bytes per stamp (the stamp, then whatever
followed it) and each stamp's length, so that a file's stamps are gathered with one numpy
``take`` instead of one ``bytes`` object each. Stamps of the usual fixed-width shapes are checked
against a template and converted by numpy; any other shape goes through the grammar of
:mod:`memorylab.memory.format` one by one.

Naive timestamps (the reference framework's) are read as wall-clock time in ``naive_tz``
(``None``: this machine's local time zone) and converted to UTC, one zone lookup per distinct
minute, so that daylight-saving changes are honoured.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

import numpy as np

# The timestamp grammar of memorylab.memory.format (ISO-8601 as Python writes it); its longest
# match is 42 characters (a fraction and an offset with seconds and a fraction).
_TS_RE = re.compile(
    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?"
    r"(?:Z|[+-]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?)?\Z"
)
WIDTH = 42
_EPOCH = np.datetime64(0, "us")
_EPOCH_NAIVE = datetime(1970, 1, 1)
_MINUTE_US = 60_000_000

Converted = tuple[np.ndarray[Any, np.dtype[np.int64]], np.ndarray[Any, np.dtype[np.bool_]]]

# Fixed-width shapes: length -> (wall-clock width, offset start or None).
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


def _convert_shape(grid: np.ndarray, length: int) -> Converted | None:
    """(UTC-or-wall microseconds, naive) for rows holding stamps of one fixed shape; None if
    one is off."""
    digits, fixed, offset = _TEMPLATES[length]
    wall = _SHAPES[length][0]
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
        return micros, np.ones(len(grid), dtype=bool)
    sign = grid[:, offset]
    if not bool(((sign == ord("+")) | (sign == ord("-"))).all()):
        return None
    num = grid[:, offset + 1 : offset + 6].astype(np.int64) - 48
    minutes = (num[:, 0] * 10 + num[:, 1]) * 60 + num[:, 3] * 10 + num[:, 4]
    minutes = np.where(sign == ord("-"), -minutes, minutes)
    return micros - minutes * _MINUTE_US, np.zeros(len(grid), dtype=bool)


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


def convert_grid(
    grid: np.ndarray, lengths: np.ndarray, naive_tz: tzinfo | None = None
) -> Converted | None:
    """UTC microseconds and naive flags of the stamps in ``grid`` (see the module docstring),
    or None if one is not an ISO-8601 timestamp."""
    count = len(lengths)
    utc = np.empty(count, dtype=np.int64)
    naive = np.empty(count, dtype=bool)
    if count == 0:
        return utc, naive
    if int(lengths.max()) > WIDTH:
        return None  # longer than any timestamp
    for length in np.flatnonzero(np.bincount(lengths)).tolist():
        where = np.flatnonzero(lengths == length)
        rows = grid if len(where) == count else grid[where]
        converted = _convert_shape(rows, length) if length in _SHAPES else None
        if converted is None:
            singles = [_convert_one(row[:length].tobytes()) for row in rows]
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


def grid_of(stamps: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """The grid and lengths of stamps given one by one (longer ones are cut: no timestamp is)."""
    lengths = np.fromiter(map(len, stamps), dtype=np.int64, count=len(stamps))
    padded = b"".join(stamp[:WIDTH].ljust(WIDTH, b"\0") for stamp in stamps)
    return np.frombuffer(padded, dtype=np.uint8).reshape(len(stamps), WIDTH), lengths


def convert_stamps(stamps: list[bytes], naive_tz: tzinfo | None = None) -> Converted | None:
    """:func:`convert_grid` for stamps given one by one."""
    return convert_grid(*grid_of(stamps), naive_tz)
