"""Which archives a retention policy removes (PURE: no I/O, no clock; ``now`` is passed in).

Archives are immutable and kept forever unless a policy (or an explicit ``purge``/``forget``)
removes them. :class:`RetentionPolicy` is opt-in: ``Conversation(retention=...)`` applies it
after every compaction through :meth:`memorylab.memory._store.MemoryStore.apply_retention`, which
deletes what :meth:`RetentionPolicy.select` names and records each deletion.

An archive's time is the one in its name (``history_<YYYY-MM-DD_HH-MM-SS>[_n].md``), read as
UTC: memorylab names archives in UTC; the reference framework used local time, so its archives
are off by the UTC offset of the machine that wrote them.

>>> policy = RetentionPolicy(max_archives=1, max_age="30d")
>>> policy
RetentionPolicy(max_archives=1, max_age='30d')
>>> names = ["history_2026-01-01_00-00-00.md", "history_2026-04-19_00-00-00.md"]
>>> [(d.name, d.rule) for d in policy.select(names, datetime(2026, 4, 20, tzinfo=UTC))]
[('history_2026-01-01_00-00-00.md', 'max_archives')]
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from memorylab.errors import InvalidSetting
from memorylab.memory._format import parse_archive_name

_UNITS = {"w": 604_800, "d": 86_400, "h": 3_600, "m": 60, "s": 1}
_PART_RE = re.compile(r"(\d+)\s*([wdhms])", re.I)
_WHOLE_RE = re.compile(r"\s*(?:\d+\s*[wdhms]\s*)+", re.I)


def parse_duration(value: timedelta | str) -> timedelta:
    """``"30d"``, ``"12h"``, ``"90m"``, ``"2w"``, ``"45s"`` or combinations (``"1d12h"``) -> a
    positive ``timedelta``; a ``timedelta`` is checked and returned.

    >>> parse_duration("1d12h")
    datetime.timedelta(days=1, seconds=43200)
    """
    if isinstance(value, timedelta):
        duration = value
    elif isinstance(value, str) and _WHOLE_RE.fullmatch(value):
        seconds = sum(int(n) * _UNITS[unit.lower()] for n, unit in _PART_RE.findall(value))
        duration = timedelta(seconds=seconds)
    else:
        raise InvalidSetting(
            f"cannot read {value!r} as a duration: use a timedelta or a string such as '30d', "
            "'12h', '90m', '2w' or '1d12h' (w=weeks, d=days, h=hours, m=minutes, s=seconds)"
        )
    if duration <= timedelta(0):
        raise InvalidSetting(f"a duration must be positive, got {value!r}")
    return duration


def format_duration(duration: timedelta) -> str:
    """The shortest ``parse_duration`` string for ``duration`` (``timedelta(days=30)`` ->
    ``'30d'``)."""
    seconds = int(duration.total_seconds())
    if seconds != duration.total_seconds():
        return str(duration)
    for unit in ("d", "h", "m"):
        if seconds % _UNITS[unit] == 0:
            return f"{seconds // _UNITS[unit]}{unit}"
    return f"{seconds}s"


def archive_time(name: str) -> datetime | None:
    """The UTC time in an archive file name, or ``None`` if ``name`` is not an archive name."""
    parsed = parse_archive_name(name)
    return None if parsed is None else parsed[0].replace(tzinfo=UTC)


def _utc(now: datetime) -> datetime:
    return now.replace(tzinfo=UTC) if now.tzinfo is None else now.astimezone(UTC)


@dataclass(frozen=True, slots=True)
class Deletion:
    """One archive to delete, and why (``rule`` is ``"max_archives"``, ``"max_age"`` or a caller's
    label such as ``"purge"``; ``reason`` is a sentence for the record, never content)."""

    name: str
    created: datetime
    rule: str
    reason: str


def _sorted_archives(names: Iterable[str]) -> list[tuple[datetime, str]]:
    """Archive names by name time; the same time keeps the order given (see ``select``)."""
    found = []
    for name in dict.fromkeys(names):
        created = archive_time(name)
        if created is not None:
            found.append((created, name))
    return sorted(found, key=lambda item: item[0])


def older_than(
    names: Iterable[str], cutoff: datetime, *, rule: str = "max_age", label: str = ""
) -> list[Deletion]:
    """The archives among ``names`` whose name time is before ``cutoff``, oldest first."""
    cutoff = _utc(cutoff)
    label = label or rule
    return [
        Deletion(
            name,
            created,
            rule,
            f"{label}: archived {created.isoformat()}, before {cutoff.isoformat()}",
        )
        for created, name in _sorted_archives(names)
        if created < cutoff
    ]


@dataclass(frozen=True, slots=True, init=False)
class RetentionPolicy:
    """Keep at most ``max_archives`` archives (the newest) and none older than ``max_age``
    (a ``timedelta`` or a string such as ``"30d"`` / ``"12h"``). ``None`` means no limit; both
    ``None`` (the default) keeps everything. ``max_archives=0`` keeps no archive at all: the
    fresh MEMORY.md then names an archive that no longer exists (its deletion is recorded)."""

    max_archives: int | None
    max_age: timedelta | None

    def __init__(
        self, max_archives: int | None = None, max_age: timedelta | str | None = None
    ) -> None:
        if max_archives is not None and (
            isinstance(max_archives, bool) or not isinstance(max_archives, int) or max_archives < 0
        ):
            raise InvalidSetting(
                f"max_archives must be None or a whole number >= 0, got {max_archives!r}"
            )
        object.__setattr__(self, "max_archives", max_archives)
        object.__setattr__(self, "max_age", None if max_age is None else parse_duration(max_age))

    @property
    def keeps_everything(self) -> bool:
        return self.max_archives is None and self.max_age is None

    def select(self, names: Iterable[str], now: datetime) -> list[Deletion]:
        """The archives among ``names`` this policy deletes at ``now`` (naive = UTC), oldest
        first. Names that are not archive names are ignored (never deleted).

        Archives are ordered by their name time; archives of the same second keep the order in
        which ``names`` lists them, so give them oldest first. (A ``_2`` suffix does not mean
        newer once archives were deleted: a later compaction in the same second may reuse the
        free plain name. :meth:`~memorylab.memory._store.MemoryStore.archives_oldest_first`
        orders by name time, then modification time.)"""
        archives = _sorted_archives(names)
        doomed: dict[str, Deletion] = {}
        if self.max_archives is not None and len(archives) > self.max_archives:
            excess = archives[: len(archives) - self.max_archives]
            for created, name in excess:
                doomed[name] = Deletion(
                    name,
                    created,
                    "max_archives",
                    f"retention max_archives={self.max_archives}: {len(archives)} archives, "
                    f"only the newest {self.max_archives} are kept",
                )
        if self.max_age is not None:
            cutoff = _utc(now) - self.max_age
            label = f"retention max_age={format_duration(self.max_age)}"
            for deletion in older_than([n for _, n in archives], cutoff, label=label):
                doomed.setdefault(deletion.name, deletion)
        order = {name: i for i, (_, name) in enumerate(archives)}
        return sorted(doomed.values(), key=lambda d: order[d.name])

    def __repr__(self) -> str:
        age = None if self.max_age is None else format_duration(self.max_age)
        return f"RetentionPolicy(max_archives={self.max_archives!r}, max_age={age!r})"

    def __str__(self) -> str:
        parts = []
        if self.max_archives is not None:
            parts.append(f"max_archives={self.max_archives}")
        if self.max_age is not None:
            parts.append(f"max_age={format_duration(self.max_age)}")
        return ", ".join(parts) or "keep everything"
