"""Pinned blocks: the messages a user marked to be carried verbatim through every compaction
(no I/O, no clock, no environment).

MEMORY.md holds no mark (it stays byte for byte the reference's format): a pin is a line of the
agent's ``pins.jsonl`` (the store's :meth:`~memorylab.memory._store.MemoryStore.append_pin`)
naming the block by its identity, :class:`PinKey`: its role and timestamp as the heading holds
them and the SHA-256 of its content as written (redacted), never the content itself. A block
kept by a compaction is written again with the same role, timestamp and content, so its identity
survives every compaction and restart. A block is pinned while the latest line naming it says
``"pin"`` (:func:`pinned_keys`).

>>> key = pin_key("User", "2026-05-01T10:00:00.000000+00:00", "Always answer in French.")
>>> lines = [pin_line("pin", key, "2026-05-01T10:00:00+00:00")]
>>> pinned_keys(lines) == {key}, pinned_keys([*lines, pin_line("unpin", key, lines[0]["time"])])
(True, frozenset())
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple

from memorylab.memory import _format as fmt
from memorylab.memory._records import PRELOAD_PREFIX

PinAction = Literal["pin", "unpin"]


class PinKey(NamedTuple):
    """What identifies a block of MEMORY.md across compactions: its heading's role and
    timestamp (in UTC, as :func:`~memorylab.memory._format.format_timestamp` writes it: one
    instant, one text) and the SHA-256 (hex) of its content as written."""

    role: str
    timestamp: str
    sha256: str


def pin_key(role: str, timestamp: str | datetime, text: str) -> PinKey:
    """The identity of the block ``role`` wrote at ``timestamp`` with ``text`` (its content as
    written to the file: redacted, unescaped). A timestamp is read and written again, so the
    text a heading holds and the datetime a parser returns give one key."""
    when = timestamp if isinstance(timestamp, datetime) else _read_time(timestamp)
    stamp = _stamp(when) if when is not None else str(timestamp)
    return PinKey(role, stamp, hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest())


def pin_line(action: PinAction, key: PinKey, time: str | datetime) -> dict[str, Any]:
    """One line of ``pins.jsonl``: ``{"time", "action", "role", "timestamp", "sha256"}``."""
    stamp = fmt.format_timestamp(time) if isinstance(time, datetime) else str(time)
    return {"time": stamp, "action": action, **key._asdict()}


def pinned_keys(
    lines: Iterable[Mapping[str, Any]], *, until: datetime | None = None
) -> frozenset[PinKey]:
    """The blocks pinned after ``lines`` (``pins.jsonl``'s, in file order): those whose latest
    line says ``"pin"``. ``until``: only the lines of that time or earlier (what a replay knew
    at a check). A line that names no block (a hand edit) is passed over."""
    state: dict[PinKey, bool] = {}
    for line in lines:
        key = key_of_line(line)
        action = line.get("action")
        if key is None or action not in ("pin", "unpin"):
            continue
        if until is not None:
            when = _read_time(line.get("time"))
            if when is None or _later(when, until):
                continue
        state[key] = action == "pin"
    return frozenset(key for key, pinned in state.items() if pinned)


def key_of_line(line: Mapping[str, Any]) -> PinKey | None:
    """The block a line of ``pins.jsonl`` names (``None``: it names none)."""
    role, stamp, digest = line.get("role"), line.get("timestamp"), line.get("sha256")
    if not (isinstance(role, str) and isinstance(stamp, str) and isinstance(digest, str)):
        return None
    when = _read_time(stamp)
    return PinKey(role, stamp if when is None else _stamp(when), digest)


def preload_pins(text: str, keys: Iterable[PinKey]) -> frozenset[PinKey]:
    """The keys among ``keys`` of the blocks ``text`` (a preload entry's content, or a
    MEMORY.md) holds."""
    wanted = frozenset(keys)
    if not wanted:
        return wanted
    text = text.removeprefix(PRELOAD_PREFIX).removeprefix("\n")
    blocks = fmt.parse_file(text, strict=False).blocks
    columns = zip(blocks.roles, blocks.timestamps, blocks.contents, strict=True)
    return wanted & {pin_key(role, when, content) for role, when, content in columns}


def _stamp(when: datetime) -> str:
    """A key's timestamp: in UTC when it has a zone (a naive one, the reference's, as it is)."""
    return fmt.format_timestamp(when if when.tzinfo is None else when.astimezone(UTC))


def _read_time(value: object) -> datetime | None:
    try:
        return fmt.parse_timestamp(value) if isinstance(value, str) else None
    except ValueError:
        return None


def _later(when: datetime, until: datetime) -> bool:
    """Whether ``when`` is after ``until`` (a naive one of either read as the other's zone)."""
    if (when.tzinfo is None) != (until.tzinfo is None):
        when, until = when.replace(tzinfo=None), until.replace(tzinfo=None)
    return when > until
