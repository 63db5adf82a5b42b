"""Another framework's run written as a memorylab workspace (:func:`to_workspace`), so that the
widgets, the notebooks and every command that reads a workspace (``memorylab report``, ``stats``,
``show``) take it as they take the seed's own.

A run is read by its loader (:func:`~memorylab.analysis.loader_for`) into the record every reader
takes: segments laid out as memorylab's files would be (:mod:`memorylab.analysis._foreign`). Each
record is written through the store (:class:`~memorylab.memory.MemoryStore`, the one writer of
memory files), segment by segment: the first segment's messages appended to a fresh MEMORY.md;
then, at each recorded compaction, the store's own compaction (:meth:`MemoryStore.rewrite
<memorylab.memory.MemoryStore.rewrite>`) archives the file as ``archive/history_<time>.md`` (the
compaction's recorded time), re-seeds MEMORY.md with the summary and the messages the compaction
kept, and appends a ``compactions.jsonl`` record holding what the format recorded
(``extra["recorded"]``) and where it came from (``extra["converted_from"]``); the next segment's
own messages follow. Every message keeps its role, content and timestamp; the provider-reported
usage of the run's model calls goes to ``usage.jsonl``. What the format does not record stays
unrecorded (the notes say so), never guessed.

Contents are written as the run recorded them: a conversion does not redact (a ``Conversation``
would, as it writes a new message); ``memorylab forget`` and the redaction of docs/privacy.md work
on the workspace as on any other.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from memorylab.analysis._foreign import NOT_RECORDED
from memorylab.analysis._loaders import loader_for
from memorylab.analysis._record import AgentRecord
from memorylab.analysis._sources import Segment
from memorylab.config import resolve_workspace
from memorylab.errors import InvalidSetting
from memorylab.memory import _format as fmt
from memorylab.memory._fsutil import encode_utf8
from memorylab.memory._paths import agent_paths
from memorylab.memory._records import SUMMARY_PREFIX
from memorylab.memory._store import CompactionResult, MemoryStore
from memorylab.results import Result


@dataclass(frozen=True)
class ConvertedAgent(Result):
    """One run written as an agent: its ``agent`` name, its ``memory_md``, the ``archives``
    written (one per recorded compaction, oldest first), how many ``messages`` and model
    ``calls`` it holds, and the ``source`` it was read from (the loader's name for it)."""

    agent: str
    memory_md: Path
    archives: tuple[str, ...]
    messages: int
    calls: int
    source: str


@dataclass(frozen=True)
class WorkspaceConversion(Result):
    """What :func:`to_workspace` wrote: the ``workspace``, the ``format`` read and the
    ``agents`` written; ``notes``: what the format does not record (left out, never guessed)."""

    workspace: Path
    format: str
    agents: tuple[ConvertedAgent, ...]
    notes: tuple[str, ...] = ()


def to_workspace(
    source: str | os.PathLike[str],
    workspace: str | os.PathLike[str] | None = None,
    *,
    agent: str | None = None,
) -> WorkspaceConversion:
    """Write the run(s) at ``source`` (any path a loader reads: a Claude Code session, a
    deepagents thread folder, an OpenAI Agents SQLite file, an inspect_ai log) as agents of
    ``workspace`` (default: the configured one, ``WORKSPACE_DIR``), one agent per run, named
    as the loader names it (``agent`` renames a source that holds one run).

    ``memory_df(workspace)`` then reads the run's roles, contents, timestamps and segments as
    ``memory_df(source)`` does. An agent that exists already is never written over (an
    :class:`~memorylab.errors.InvalidSetting` naming it, before anything is written); neither is
    a source that already is memorylab's files (copy the folder instead).
    """
    path = Path(source).expanduser()
    loader = loader_for(path)
    records = loader.load(path)
    if not records:
        raise InvalidSetting(f"{path} holds no run the {loader.name} loader could read")
    if any(record.format == "memorylab" for record in records):
        raise InvalidSetting(
            f"{path} is memorylab's own files already: copy the agent folder into the workspace "
            "instead of converting it"
        )
    if agent is not None and len(records) != 1:
        runs = ", ".join(record.agent for record in records)
        raise InvalidSetting(
            f"{path} holds {len(records)} runs ({runs}); a new name (agent=, --agent) is for "
            "a source of one run: leave it out to name each agent after its run"
        )
    root = resolve_workspace(workspace)
    names = [agent if agent is not None else record.agent for record in records]
    targets = [agent_paths(name, root, nested=True) for name in names]
    for name, paths in zip(names, targets, strict=True):
        if os.path.lexists(paths.folder):
            raise InvalidSetting(
                f"{paths.folder} exists already (an agent, or a folder of agents): "
                f"memorylab never writes over one; convert into another workspace, give "
                f"{name!r} another name (agent=, --agent), or remove it first (memorylab forget)"
            )
    if len(set(targets)) != len(targets):
        raise InvalidSetting(f"{path} holds two runs named alike; convert them one at a time")
    done: list[ConvertedAgent] = []
    try:
        for record, name, paths in zip(records, names, targets, strict=True):
            done.append(_write_agent(record, name, paths.memory_md, path))
    except BaseException:
        for converted in done:  # all of the source's runs, or none (as _write_agent)
            memory_md = converted.memory_md
            _remove_quietly(MemoryStore(memory_md, agent_root=memory_md.parent.parent))
        raise
    written = tuple(done)
    notes = tuple(
        dict.fromkeys(
            f"{record.agent}: {note.message}"
            for record in records
            for note in record.notes
            if note.kind == NOT_RECORDED
        )
    )
    return WorkspaceConversion(root, records[0].format, written, notes)


def _write_agent(record: AgentRecord, name: str, memory_md: Path, source: Path) -> ConvertedAgent:
    """One run as an agent's files (the module docstring), through the store."""
    if len(record.records) != len(record.segments) - 1:
        raise InvalidSetting(
            f"{source}: the {record.format} loader gave {len(record.segments)} segments and "
            f"{len(record.records)} compaction records for {record.agent}; a conversion needs "
            "one compaction between two segments"
        )
    store = MemoryStore(memory_md, agent_root=memory_md.parent.parent)
    first = _first_time(record)
    try:
        written = _write_segments(store, record, name, first, source)
    except BaseException:
        _remove_quietly(store)
        raise
    finally:
        store.close()
    archives, messages, calls = written
    return ConvertedAgent(name, memory_md, archives, messages, calls,
                          str(record.segments[-1].path))  # fmt: skip


def _remove_quietly(store: MemoryStore) -> None:
    """Remove an agent a failed conversion wrote (its folder was new: checked before): half a
    run is no run, and the same conversion can be run again once the cause is fixed. A failure
    to remove it leaves it for the error being raised to explain."""
    with contextlib.suppress(Exception):
        store.remove(whole_folder=True)


def _write_segments(
    store: MemoryStore, record: AgentRecord, name: str, first: datetime, source: Path
) -> tuple[tuple[str, ...], int, int]:
    """The run's segments, compactions and calls written (the module docstring); returns the
    archives written, how many messages and calls."""
    store.ensure(name, first)
    archives: list[str] = []
    messages = 0
    for number, segment in enumerate(record.segments):
        blocks = _blocks(segment)
        head = 0 if number == 0 else _head_length(segment)
        if number:
            compaction = record.records[number - 1]
            archive = _compact(store, name, compaction, blocks[:head], source)
            if archive is not None:
                archives.append(archive)
        if len(blocks) > head:
            store.append("".join(blocks[head:]))
        messages += len(segment.positions())
    calls = 0
    for call in record.calls:
        store.append_usage(dataclasses.replace(call, agent=name).to_dict())
        calls += 1
    return tuple(archives), messages, calls


def _first_time(record: AgentRecord) -> datetime:
    """When the run started: its first message's time, else its first compaction's."""
    for segment in record.segments:
        if segment.parsed.blocks.timestamps:
            return _aware(segment.parsed.blocks.timestamps[0])
    times = [str(r["time"]) for r in record.records if r.get("time")]
    if times:
        return _aware(fmt.parse_timestamp(times[0]))
    raise InvalidSetting(f"{record.agent} holds no message and no compaction: nothing to write")


def _aware(when: datetime) -> datetime:
    """A timestamp with its offset (a naive one is this machine's local time, as every reader
    takes it): memorylab's own blocks carry one, so their content is escaped."""
    return when if when.tzinfo is not None else when.astimezone()


def _blocks(segment: Segment) -> list[str]:
    """Each message of the segment's file as memorylab's block (role, timestamp, content)."""
    columns = segment.parsed.blocks
    return [
        fmt.block_text(role, fmt.format_timestamp(_aware(when)), content)
        for role, content, when in zip(
            columns.roles, columns.contents, columns.timestamps, strict=True
        )
    ]


def _head_length(segment: Segment) -> int:
    """How many of a segment's first blocks a compaction wrote: its summary, then the messages
    it kept verbatim (the copies, read from the segment before)."""
    contents = segment.parsed.blocks.contents
    head = 1 if contents and contents[0].startswith(SUMMARY_PREFIX) else 0
    while head in segment.repeated:
        head += 1
    return head


def _compact(
    store: MemoryStore,
    name: str,
    compaction: Mapping[str, Any],
    head: Sequence[str],
    source: Path,
) -> str | None:
    """The store's compaction at the recorded time: archive MEMORY.md, re-seed it with ``head``
    (the summary and the kept messages), record what the format recorded. Returns the archive's
    name (``None``: the file held no message, so nothing was archived, as memorylab does)."""
    when = _aware(fmt.parse_timestamp(str(compaction["time"])))

    def record(result: CompactionResult) -> dict[str, Any]:
        line = {key: value for key, value in compaction.items() if key != "replaced"}
        extra = dict(line.get("extra") or {})
        extra["converted_from"] = str(source)
        extra["segment"] = str(compaction.get("archive"))  # the loader's name for it
        line.update(
            agent=name,
            archive=result.archive,
            messages_archived=result.messages_archived,
            carried_over=result.carried_over,
            extra=extra,
        )
        return line

    result = store.rewrite(
        store.snapshot(), encode_utf8("".join(head)), conversation_name=name, now=when,
        record=record,
    )  # fmt: skip
    return result.archive
