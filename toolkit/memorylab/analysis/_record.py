"""One agent's run as recorded, read once: the record every frame, audit, replay and the report
take (:class:`AgentRecord`).

:func:`read_agent_records` reads each agent a source names in one consistent read
(:func:`~memorylab.analysis._sources.read_consistent`): its files in timeline order and its
``compactions.jsonl``, through the store's readers, all of one generation. Its ``usage.jsonl`` (by
the store's reader too) is read when a reader first asks for the calls: the generation does not
cover it (the Agent appends a line per call), so reading it in the same read would make it no more
consistent, and the frames, which never use it, would pay for parsing a line per model call (twice
the time of ``memory_df`` on the bundled workspace). The record holds what every reader needs, so no
reader opens a file again, and the rules about it are decided here once: who the agent is
(:attr:`AgentRecord.agent`, its name below ``<workspace>/agents/``), which records are successful
compactions (:attr:`AgentRecord.compactions`), which usage lines are model calls
(:attr:`AgentRecord.calls`, each made by :meth:`UsageRecord.from_dict
<memorylab.memory._records.UsageRecord.from_dict>`), the order of its processes
(:attr:`AgentRecord.processes`) and a call's drift (:attr:`UsageRecord.drift
<memorylab.memory._records.UsageRecord.drift>`).

A frame finds its record without reading (``record_of_frame``, through :func:`kept_record`): each
record read is kept by its agent folder, weakly (a caller holding its records, as the report does,
always finds them) and, for the last :data:`_KEPT` agents read, strongly
(``token_growth(memory_df(folder))`` in a notebook). A kept record is used only while what
identified the files when they were read is unchanged:
:func:`~memorylab.memory._store.read_generation` (a compaction, an edit, a deletion, a record
appended) and the identity, size and modification time of MEMORY.md and ``usage.jsonl`` (an append
to either, which the generation leaves out). These are ``lstat`` calls and one listing: a frame of
an unchanged agent is never read again, one of a changed agent is. A frame of files the record did
not read, or of files no longer there, is read from its ``file`` column by their loader. Never
``DataFrame.attrs`` (pandas drops it).
"""

from __future__ import annotations

import contextlib
import functools
import os
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

from memorylab.analysis._sources import (
    AgentFiles,
    Note,
    Segment,
    Source,
    locate,
    read_consistent,
    read_segments,
    resolve,
    summary_flags,
    timeline,
)
from memorylab.errors import InvalidSetting, StoreError
from memorylab.memory._paths import MemoryPaths
from memorylab.memory._pins import PinKey, pinned_keys
from memorylab.memory._records import UsageRecord, is_compaction, is_model_call
from memorylab.memory._store import MemoryStore, committed_record, read_generation

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def to_micros(value: datetime | str) -> int:
    """Microseconds since the epoch of a timestamp (a naive one is this machine's local time):
    how every reader orders recorded times."""
    when = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    if when.tzinfo is None:
        when = when.astimezone()
    return (when - _EPOCH) // timedelta(microseconds=1)


@dataclass(frozen=True, eq=False)
class AgentRecord:
    """One agent's run as recorded, whatever wrote it (``format``: the loader's name).

    ``agent`` is who the agent is: its folder's path below ``<workspace>/agents/`` (``team/alpha``),
    else the folder's name (``workspace`` and ``folder``: ``None`` for an agent known only in
    memory, an :class:`~memorylab.Agent`'s own records). ``segments``: its files in timeline order
    (:class:`~memorylab.analysis._sources.Segment`; none for a format without files); ``records``:
    every ``compactions.jsonl`` record in file order (edits and failed attempts too, and the record
    of a rewrite that committed but has not written it yet); ``calls``: its model calls
    (``usage.jsonl``, read when first used), in file order; ``notes``: what reading it found
    (damaged files, files left out, lines that are no record). ``whole_folder``: the source named
    the folder (not single files). ``stamp``: what identified its files when they were read
    (``None``: not read from disk). ``pins``: every line of ``pins.jsonl`` in file order (each
    pin and unpin of a block: ``memorylab.memory._pins``; none for a memory never pinned, or
    written by the reference framework), read with the files; :attr:`pinned` the blocks pinned.
    """

    agent: str
    workspace: Path | None = None
    folder: Path | None = None
    segments: tuple[Segment, ...] = ()
    records: tuple[Mapping[str, Any], ...] = ()
    calls: Sequence[UsageRecord] = ()
    notes: tuple[Note, ...] = ()
    format: str = "memorylab"
    whole_folder: bool = True
    stamp: tuple[object, ...] | None = None
    pins: tuple[Mapping[str, Any], ...] = ()

    @functools.cached_property
    def pinned(self) -> frozenset[PinKey]:
        """The blocks pinned when the files were read (:func:`~memorylab.memory._pins.pinned_keys`
        of :attr:`pins`): a replay keeps them verbatim, as the run's compactions did."""
        return pinned_keys(self.pins)

    @functools.cached_property
    def compactions(self) -> tuple[Mapping[str, Any], ...]:
        """The successful compactions among :attr:`records`, in file order
        (:func:`~memorylab.memory._records.is_compaction`)."""
        return tuple(record for record in self.records if is_compaction(record))

    @functools.cached_property
    def summary_flags(self) -> list[list[bool]]:
        """Per segment, which of its messages read are compaction summaries
        (:func:`~memorylab.analysis._sources.summary_flags`)."""
        return summary_flags(self.segments)

    @functools.cached_property
    def processes(self) -> tuple[tuple[UsageRecord, ...], ...]:
        """The model calls of each process (one ``session_start``), in one order for every
        reader: a process's calls by their number (``call``), then as written; the processes
        by the time of their first call (:func:`to_micros`: a naive time is local time), then
        as written."""
        by_process: dict[str | None, list[UsageRecord]] = {}
        for call in self.calls:
            by_process.setdefault(call.session_start, []).append(call)
        ordered = [sorted(calls, key=lambda c: c.call or 0) for calls in by_process.values()]
        ordered.sort(key=lambda calls: to_micros(calls[0].time))
        return tuple(tuple(calls) for calls in ordered)

    def segment(self, path: str | os.PathLike[str]) -> Segment | None:
        """The segment read from ``path`` (``None``: none was)."""
        return self._by_path.get(os.fspath(path))

    @functools.cached_property
    def _by_path(self) -> dict[str, Segment]:
        return {str(segment.path): segment for segment in self.segments}


Records = AgentRecord | Sequence[AgentRecord]
"""Records read already, which every reader of a source takes instead of paths."""


def read_agent_records(
    source: Source | Records,
    notes: list[Note] | None = None,
    *,
    strict: bool = False,
) -> list[AgentRecord]:
    """Each agent ``source`` names, read once (the module docstring), in order of appearance.

    ``source``: what :func:`~memorylab.analysis.memory_df` takes (a workspace, an agent folder,
    a memory file, a list of them), or records already read (returned as they are). ``notes``:
    when a list is given, what listing the source found beside the agents (files not read,
    folders that hold no memory) is appended to it; each agent's own are its record's
    ``notes``. ``strict``: a file that does not parse raises
    :class:`~memorylab.errors.MemoryFormatError` instead of a note.
    """
    given = _given_records(source)
    if given is not None:
        return given
    agent_files, found = resolve(cast(Source, source))
    if notes is not None:
        notes += found
    return [_read_agent(files, strict) for files in agent_files]


def _given_records(source: object) -> list[AgentRecord] | None:
    """``source`` as records when it is records (``None``: it is paths)."""
    if isinstance(source, AgentRecord):
        return [source]
    if (
        isinstance(source, Sequence)
        and source
        and all(isinstance(item, AgentRecord) for item in source)
    ):
        return list(source)
    return None


def _read_agent(files: AgentFiles, strict: bool) -> AgentRecord:
    """One agent, its files, compactions and model calls of one generation."""
    appended = _appends(files.memory_md)  # before the read: a later append makes it differ
    notes: list[Note] = []

    def read(
        files: AgentFiles, notes: list[Note], parsed: dict[Path, Any]
    ) -> tuple[AgentFiles, list[Segment], tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
        paths = MemoryPaths(files.memory_md)
        store = MemoryStore(files.memory_md)
        pins = _lines(store.pin_records, paths.pins, notes)  # before MEMORY.md: blocks come first
        records = _lines(store.records, paths.compactions, notes)
        if paths.intent.exists():  # a rewrite that has committed but not yet written its record
            pending = committed_record(paths)
            if pending is not None and all(r.get("archive") != pending.get("archive")
                                           for r in records):  # fmt: skip
                records.append(pending)
        files = replace(files, records=tuple(records))
        segments = read_segments(files, notes, strict, parsed)
        return files, timeline(segments, notes, whole_folder=files.whole_folder), (records, pins)

    files, segments, (records, pins) = read_consistent(files, notes, read)
    record = AgentRecord(
        agent=files.agent,
        workspace=files.workspace,
        folder=files.folder,
        segments=tuple(segments),
        records=tuple(records),
        calls=_UsageFile(MemoryStore(files.memory_md)),
        notes=tuple(notes),
        whole_folder=files.whole_folder,
        stamp=(files.generation, *appended),  # the generation the read was checked against
        pins=tuple(pins),
    )
    _keep(record, files.folder)
    return record


def _lines(
    read: Callable[[list[str]], list[dict[str, Any]]], path: Path, notes: list[Note]
) -> list[dict[str, Any]]:
    """The records of one of the store's JSON Lines files (none when it does not exist); each
    line that is no record, or has fields of the wrong shape, is a ``records`` note."""
    bad: list[str] = []
    try:
        found: list[dict[str, Any]] = read(bad)
    except StoreError as exc:  # not a regular file: refused by the store, never waited on
        notes.append(Note(str(path), 0, "io", str(exc)))
        return []
    notes += [Note(str(path), 0, "records", line) for line in bad]
    return found


class _UsageFile(Sequence[UsageRecord]):
    """An agent's model calls: the records of its ``usage.jsonl`` that are model calls
    (:func:`~memorylab.memory._records.is_model_call`), each a :class:`UsageRecord`
    (:meth:`~memorylab.memory._records.UsageRecord.from_dict`), read when first used (the module
    docstring says why); a line without a time is no call (the store's reader logs it)."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    @functools.cached_property
    def calls(self) -> tuple[UsageRecord, ...]:
        lines = _lines(self.store.usage_records, self.store.paths.usage, [])
        calls = []
        for line in filter(is_model_call, lines):
            with contextlib.suppress(TypeError, ValueError):
                calls.append(UsageRecord.from_dict(line))
        return tuple(calls)

    def __getitem__(self, index: Any) -> Any:  # an int gives a call, a slice a tuple of them
        return self.calls[index]

    def __len__(self) -> int:
        return len(self.calls)


def _appends(memory_md: Path) -> tuple[tuple[int, ...] | None, ...]:
    """What an append changes and the generation leaves out: the identity, size and
    modification time of MEMORY.md, ``usage.jsonl`` and ``pins.jsonl`` (``lstat`` only)."""
    paths = MemoryPaths(memory_md)

    def identity(path: Path) -> tuple[int, ...] | None:
        try:
            info = os.lstat(path)
        except OSError:
            return None
        return (info.st_ino, info.st_size, info.st_mtime_ns)

    return identity(paths.memory_md), identity(paths.usage), identity(paths.pins)


def _stamp(memory_md: Path) -> tuple[object, ...]:
    """What identifies the agent's files now (the module docstring): metadata only."""
    return (read_generation(MemoryPaths(memory_md)), *_appends(memory_md))


# --------------------------------------------------------------------------- a frame's record

_KEPT = 8
"""How many of the agents read last are kept strongly (the rest while someone holds them)."""
_HELD: weakref.WeakValueDictionary[Path, AgentRecord] = weakref.WeakValueDictionary()
_RECENT: OrderedDict[Path, AgentRecord] = OrderedDict()


def _keep(record: AgentRecord, folder: Path) -> None:
    key = folder.absolute()
    _HELD[key] = record
    _RECENT[key] = record
    _RECENT.move_to_end(key)
    while len(_RECENT) > _KEPT:
        _RECENT.popitem(last=False)


def kept_record(files: Sequence[str]) -> AgentRecord | None:
    """The record read last of the one agent folder that holds ``files`` (a frame's ``file``
    column), while its files are unchanged (the module docstring); ``None`` when there is none
    to reuse."""
    folders = {locate(Path(f))[1] for f in files}
    if len(folders) != 1:
        raise InvalidSetting(
            "the frame holds the files of several agent folders; give one agent's rows, e.g. "
            "df[df.agent == 'name']"
        )
    folder = next(iter(folders))
    kept = _HELD.get(folder.absolute())
    if (
        kept is not None
        and all(kept.segment(f) is not None for f in files)
        and kept.stamp == _stamp(folder / "MEMORY.md")
    ):
        return kept
    return None
