"""Which files a source names, and in which order an agent's files make one timeline.

The loaders (:mod:`memorylab.analysis._frames`), the cases of a workspace, the export, the report
and the command line read an agent's files through it.

A source is a MEMORY.md, an archive file, an agent folder, a workspace (the folder holding
``agents/``, or ``agents/`` itself), or a list of these; sources naming the same agent folder are
merged. An agent's segments are its archives, oldest first, then the live MEMORY.md.

An agent's files are read as one generation (:func:`read_consistent`): what identifies it
(:func:`memorylab.memory._store.read_generation`: MEMORY.md's identity, the journal, ``archive/``'s
names, ``compactions.jsonl``'s size) is read before the files are listed and again after they
were read, and the agent is read again while it changed (another process compacted, edited or
deleted meanwhile), without taking the writers' lock. The order:

1. An uncommitted archive (the one named by ``.MEMORY.md.intent.json`` while a compaction is in
   flight or after a crash, :meth:`memorylab.MemoryStore.pending_archive`) is skipped.
2. Lineage first: memorylab's MEMORY.md names the archive it replaced (``**Continues:**``), and
   so does every archive of memorylab (an archive is a copy of an earlier MEMORY.md). The chain
   is followed backwards from the live file (or, without one, from the newest archive no other
   file continues).
3. Archives off the chain (the reference framework writes no lineage; a chain broken by a deleted
   archive) come before it, ordered by the time and attempt in their names
   (``history_<time>[_<n>].md``, :func:`memorylab.memory._format.parse_archive_name`).
4. A file that the next one starts with (the same header, then all of its messages: the same
   file archived twice, or the reference's leftover when it crashed between archiving and
   re-seeding) is read once, from the later file.
5. An archive an edit made (``Conversation.update``, ``delete``, ``clear``: ``compactions.jsonl``
   records it with kind ``"edit"``) is the file as it was before the edit. It stays on the
   lineage, but its messages are not read: the edited file holds them, changed or removed on
   purpose (the archive keeps the old text for recovery, not for the timeline).
6. A message that an earlier file of the timeline holds already (the same role, timestamp and
   content) is read once, from the earlier file. Such copies are made by a writer without
   memorylab's lock: the reference framework's ``compact()`` archiving the file that memorylab
   archived at the same moment, or its archive of a file into which memorylab had carried
   blocks. Messages are counted, not only compared: a file holding a message twice where the
   earlier files hold it once (a user who sent the same words twice in one second) has one copy
   and one message of its own. A file keeps its own order; only the repeated messages are left
   out.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal, TypeVar

from memorylab.errors import InvalidSetting, MemoryFormatError, PrerequisiteError, StoreError
from memorylab.memory import _format as fmt
from memorylab.memory._paths import MemoryPaths, agent_folders
from memorylab.memory._permissions import warn_permissions
from memorylab.memory._records import SUMMARY_PREFIX, MemoryDocument, Message, edit_archives
from memorylab.memory._store import (
    MemoryStore,
    read_generation,
    read_parsed,
)

SourceLike = str | os.PathLike[str]
Source = SourceLike | Sequence[SourceLike]

MEMORY_FILE = "MEMORY.md"
_T = TypeVar("_T")
logger = logging.getLogger("memorylab")

READ_ATTEMPTS = 20
"""How many times :func:`read_consistent` reads an agent whose generation keeps changing."""
_RETRY_PAUSE_S = 0.001
"""The pause before the second attempt; it doubles at each attempt, up to 50 ms (about 0.7 s
in all before a read gives up)."""


@dataclass
class Note:
    """A problem or remark about a file (``line`` 0: the file as a whole). ``damaged``: the file
    did not read whole (a parse problem or an I/O error), what a strict read raises for and the
    loaders' ``on_bad`` governs; the other notes say what was skipped or looks missing."""

    file: str
    line: int
    kind: str
    message: str
    damaged: bool = False


def _note(notes: list[Note], path: Path, kind: str, message: str, *, damaged: bool = False) -> None:
    """Note a problem or remark about the file ``path`` as a whole (line 0)."""
    notes.append(Note(str(path), 0, kind, message, damaged))


HEAD_BYTES = 4096
"""How much of a file a loader looks at to say whether it handles it."""


def file_head(path: Path, size: int = HEAD_BYTES) -> bytes:
    """The first ``size`` bytes of a regular file (``b""``: not one, or unreadable): what a
    loader's ``handles`` looks at, never a whole read."""
    try:
        if not path.is_file():
            return b""
        with path.open("rb") as file:
            return file.read(size)
    except OSError:
        return b""


# The kinds of notes that say how files were read (an edit's archive, copies read once; what
# another framework's format does not record, the branches of its run left out, messages read in
# file order), not that anything is damaged or missing: the report lists them apart from its
# problems.
REMARK_KINDS = frozenset({"edit", "duplicate", "not-recorded", "branches", "order"})


@dataclass
class AgentFiles:
    """The files of one agent folder that a source selected."""

    workspace: Path
    folder: Path
    memory: Path | None = None
    archives: list[Path] = field(default_factory=list)
    whole_folder: bool = False
    generation: tuple[object, ...] | None = None
    """:func:`~memorylab.memory._store.read_generation` of the folder, read before its files
    were listed (``None``: not read)."""
    records: tuple[Mapping[str, Any], ...] = ()
    """Its ``compactions.jsonl`` records, read in the same attempt (the edits' archives)."""

    @property
    def agent(self) -> str:
        return agent_name(self.workspace, self.folder)

    @property
    def memory_md(self) -> Path:
        return self.memory if self.memory is not None else self.folder / MEMORY_FILE


@dataclass(frozen=True, eq=False)
class Segment:
    """One parsed file of an agent: ``kind`` is ``"archive"``, ``"edit"`` (an archive an edit
    made, rule 5) or ``"memory"``. ``parsed`` holds its blocks as columns; :attr:`document`
    makes them :class:`Message` records when it is first read (the loaders read the columns)."""

    path: Path
    kind: str
    parsed: fmt.ParsedFile
    repeated: frozenset[int] = frozenset()
    """Positions of the messages an earlier file of the timeline holds already (rule 6)."""

    @functools.cached_property
    def document(self) -> MemoryDocument:
        """The file as a :class:`MemoryDocument`."""
        return self.parsed.document()

    @property
    def problems(self) -> Sequence[fmt.FormatProblem]:
        """What was wrong with the file (a lenient read)."""
        return self.parsed.problems

    def positions(self) -> Sequence[int]:
        """The positions in the file of the messages read: all but the ``repeated``."""
        count = len(self.parsed.blocks)
        if not self.repeated:
            return range(count)
        return [p for p in range(count) if p not in self.repeated]

    def blocks(self) -> fmt.Blocks:
        """The columns of the messages read from the file, in its order: all but the
        ``repeated``."""
        blocks = self.parsed.blocks
        if not self.repeated:
            return blocks
        kept = self.positions()
        return fmt.Blocks(
            [blocks.roles[p] for p in kept],
            [blocks.contents[p] for p in kept],
            [blocks.timestamps[p] for p in kept],
        )

    def messages(self) -> Sequence[Message]:
        """The messages read from the file, in its order: all but the ``repeated``."""
        if not self.repeated:
            return self.document.messages
        return [m for p, m in enumerate(self.document.messages) if p not in self.repeated]


def locate(path: Path) -> tuple[Path, Path, str]:
    """``(workspace, agent folder, kind)`` of a memory file, from where it is: the workspace
    holds the nearest ``agents/`` above the agent folder (the reference framework writes an
    agent named ``team/alpha`` to ``agents/team/alpha/``), else it is the folder's parent."""
    if path.parent.name == "archive":
        folder, kind = path.parent.parent, "archive"
    else:
        folder, kind = path.parent, "memory"
    agents = next((p for p in folder.parents if p.name == "agents"), None)
    return (agents.parent if agents is not None else folder.parent), folder, kind


def agent_name(workspace: Path, folder: Path) -> str:
    """The agent an agent folder holds: its path below ``<workspace>/agents/`` (``team/alpha``
    for a nested one), else the folder's name."""
    agents = workspace / "agents"
    if folder.is_relative_to(agents) and folder != agents:
        return folder.relative_to(agents).as_posix()
    return folder.name


_Parsed = dict[Path, tuple[tuple[int, int, int], Segment]]


def read_segments(
    files: AgentFiles, notes: list[Note], strict: bool, parsed: _Parsed | None = None
) -> list[Segment]:
    """The agent's files (:func:`files_of`), parsed; a file that cannot be read is a note when
    not ``strict``. ``parsed`` keeps the archives read, by path and identity (inode, size,
    modification time), for the next attempt of :func:`read_consistent` (archives are written
    once: only what a writer added since is read again)."""
    segments = []
    for path, kind in files_of(files, notes):
        try:
            key = None
            if parsed is not None and kind != "memory":
                info = os.stat(path)
                key = (info.st_ino, info.st_size, info.st_mtime_ns)
                known = parsed.get(path)
                if known is not None and known[0] == key:
                    segments.append(replace(known[1], kind=kind))
                    continue
            segment = Segment(path, kind, read_parsed(path, strict=strict))
            segments.append(segment)
            if key is not None and parsed is not None:
                parsed[path] = (key, segment)
        except FileNotFoundError as exc:  # the stat: read_parsed raises StoreError
            if strict:
                raise StoreError(f"{path} does not exist") from exc
            _note(notes, path, "io", f"{path} does not exist", damaged=True)
        except StoreError as exc:
            if strict:
                raise
            _note(notes, path, "io", str(exc), damaged=True)
    return segments


def read_consistent(
    files: AgentFiles,
    notes: list[Note],
    read: Callable[[AgentFiles, list[Note], _Parsed], _T],
) -> _T:
    """``read(files, notes, parsed)`` of one generation of the agent's files, as a database
    reader would: what identifies the generation
    (:func:`~memorylab.memory._store.read_generation`) is read before the files are listed and
    again after ``read``; while it changed (a compaction, an edit or a deletion by another
    process came in between: the listing, MEMORY.md and the records may belong to different
    generations), the folder is listed and read again, up to :data:`READ_ATTEMPTS` times, with a
    short pause that doubles. ``read`` may raise (a file listed was deleted meanwhile, strict
    reading): it is retried when the generation changed, and raised otherwise. A read that never
    settles returns the last attempt, with an ``unsettled`` note (logged as a warning too).

    The writers' lock is never taken: a reader never stalls a writer and needs no write
    permission. ``parsed`` (see :func:`read_segments`) carries the archives read from one attempt
    to the next, so a retry reads only what changed. Notes of a retried attempt are dropped.
    """
    paths = MemoryPaths(files.memory_md)
    parsed: _Parsed = {}
    pause = _RETRY_PAUSE_S
    attempt_notes: list[Note] = []
    for attempt in range(READ_ATTEMPTS):
        if attempt or files.generation is None:
            if attempt:
                time.sleep(pause)
                pause = min(pause * 2, 0.05)
            files = _listed_again(files, read_generation(paths))
        attempt_notes = []
        try:
            result = read(files, attempt_notes, parsed)
        except (StoreError, MemoryFormatError):
            if read_generation(paths) == files.generation or attempt == READ_ATTEMPTS - 1:
                raise
            continue
        if read_generation(paths) == files.generation:
            notes += attempt_notes
            return result
    message = (
        f"changed at each of {READ_ATTEMPTS} reads (another process compacts, edits or deletes "
        "its memory continuously); read as it was last: archives and MEMORY.md may not match"
    )
    logger.warning("memorylab: %s %s", files.folder, message)
    notes += [*attempt_notes, Note(str(files.folder), 0, "unsettled", message)]
    return result


def _listed_again(files: AgentFiles, generation: tuple[object, ...]) -> AgentFiles:
    """``files`` as the folder holds them now (a source that named the folder: its MEMORY.md
    and archives; files named one by one stay as named), with the ``generation`` read before."""
    if not files.whole_folder:
        return replace(files, generation=generation)
    memory = files.folder / MEMORY_FILE
    return replace(
        files,
        memory=memory if memory.is_file() else None,
        archives=_archive_files(files.folder, []),  # its notes were made by the first listing
        generation=generation,
    )


def summary_flags(segments: Sequence[Segment]) -> list[list[bool]]:
    """Per segment, which of its messages read (:meth:`Segment.blocks`) are compaction
    summaries: those marked ``[Compressed Memory Summary]``, and the first block of a file the
    reference framework's plain ``compact(summary)`` re-seeded with its summary, unmarked
    (:func:`~memorylab.memory._format.opens_with_plain_summary`, decided from the times the
    files record)."""
    flags = []
    previous: Segment | None = None
    for segment in segments:
        # Message.is_summary, over the contents at once (a C method mapped, no call per row)
        contents = segment.blocks().contents
        marked = list(map(str.startswith, contents, itertools.repeat(SUMMARY_PREFIX)))
        if (
            marked
            and 0 not in segment.repeated
            and fmt.opens_with_plain_summary(
                segment.parsed,
                previous.path.name if previous is not None and previous.kind == "archive" else None,
            )
        ):
            marked[0] = True
        flags.append(marked)
        previous = segment
    return flags


def _archive_files(folder: Path, notes: list[Note]) -> list[Path]:
    archive_dir = folder / "archive"
    if not archive_dir.is_dir():
        return []
    found = []
    for entry in sorted(archive_dir.iterdir()):
        if entry.name.startswith(".") or not entry.is_file():
            continue  # temp files of an interrupted write, editor files
        if fmt.parse_archive_name(entry.name) is None:
            if entry.suffix == ".md":
                message = "not an archive name (history_<YYYY-MM-DD_HH-MM-SS>[_<n>].md); not read"
                _note(notes, entry, "skipped", message)
            continue
        found.append(entry)
    return found


def _agent_folder(folder: Path, notes: list[Note]) -> AgentFiles:
    memory = folder / MEMORY_FILE
    generation = read_generation(MemoryPaths(memory))  # before the listing (read_consistent)
    return AgentFiles(
        workspace=locate(memory)[0],
        folder=folder,
        memory=memory if memory.is_file() else None,
        archives=_archive_files(folder, notes),
        whole_folder=True,
        generation=generation,
    )


def _is_agent_folder(path: Path) -> bool:
    return (path / MEMORY_FILE).is_file() or (path / "archive").is_dir()


def _one(path: Path, notes: list[Note]) -> list[AgentFiles]:
    try:
        exists = path.exists()
    except OSError as exc:  # a name too long, a path the system refuses to look up
        shown = str(path) if len(str(path)) <= 200 else f"{str(path)[:200]}…"
        raise StoreError(
            f"{shown} cannot be looked up ({exc.strerror or exc}); give a MEMORY.md, an archive "
            "file, an agent folder or a workspace (the folder that holds agents/)"
        ) from exc
    if not exists:
        raise StoreError(
            f"{path} does not exist; give a MEMORY.md, an archive file, an agent folder or a "
            "workspace (the folder that holds agents/)"
        )
    if path.is_file():
        workspace, folder, kind = locate(path)
        generation = read_generation(
            MemoryPaths(path if kind == "memory" else folder / MEMORY_FILE)
        )
        if kind == "archive":
            return [AgentFiles(workspace, folder, archives=[path], generation=generation)]
        return [AgentFiles(workspace, folder, memory=path, generation=generation)]
    if path.name == "agents" and not _is_agent_folder(path):
        agents_dir = path
    elif (path / "agents").is_dir():
        agents_dir = path / "agents"
    elif _is_agent_folder(path):
        return [_agent_folder(path, notes)]
    else:
        raise StoreError(
            f"{path} is not a workspace (it has no agents/ folder) nor an agent folder (no "
            "MEMORY.md, no archive/)"
        )
    return _agent_folders(agents_dir, notes)


def _agent_folders(agents_dir: Path, notes: list[Note]) -> list[AgentFiles]:
    """The agents below ``agents_dir``, nested ones too (``memory.paths.agent_folders``)."""
    found = []
    for folder in agent_folders(agents_dir):
        if _is_agent_folder(folder):
            found.append(_agent_folder(folder, notes))
        else:  # a folder or a device where the file should be
            _note(
                notes,
                folder / MEMORY_FILE,
                "io",
                "not a regular file; not read (move it away and let the agent write again)",
            )
    return found


def resolve(source: Source) -> tuple[list[AgentFiles], list[Note]]:
    """The agents a source names (merged by folder, in order of appearance) and notes.

    Each path given is checked for memory that group or others can read
    (:func:`~memorylab.memory._permissions.warn_permissions`: one logged warning per path, once
    per process for the same files and modes).
    """
    items = source_paths(source)
    notes: list[Note] = []
    merged: dict[Path, AgentFiles] = {}
    roots: dict[Path, None] = {}
    for item in items:
        root = Path(item).expanduser()
        roots[root] = None
        for found in _one(root, notes):
            key = found.folder.absolute()
            known = merged.get(key)
            if known is None:
                merged[key] = found
                continue
            if known.generation != found.generation:  # changed between the two listings
                known.generation = None  # read_consistent lists the folder again
            known.whole_folder |= found.whole_folder
            known.memory = known.memory or found.memory
            known.archives += [a for a in found.archives if a not in known.archives]
    for root in roots:
        if not _is_bundled_sample(root):
            warn_permissions(root)
    return list(merged.values()), notes


_WHAT_A_SOURCE_IS = (
    "a path (a str or os.PathLike: a workspace, an agent folder, a MEMORY.md or an archive "
    "file) or a list of paths"
)


def source_paths(source: object, label: str = "source", *, also: str = "") -> list[SourceLike]:
    """The paths a source names, in order: the one rule of what a source is (a path, or a list
    or tuple of paths), else :class:`~memorylab.errors.InvalidSetting` naming ``label`` (the
    caller's parameter) and what to pass instead (``also``: what else the caller takes, such as
    ``"memory_df's frame"``)."""
    if isinstance(source, str | os.PathLike):
        return [source]
    what = f"{_WHAT_A_SOURCE_IS}{f', or {also}' if also else ''}"
    if isinstance(source, bytes):  # a Sequence of ints
        raise InvalidSetting(f"{label} must be {what}, not bytes: decode it (os.fsdecode({label}))")
    if not isinstance(source, Sequence):
        listable = isinstance(source, Iterable) and not isinstance(source, Mapping)
        hint = f" (pass list({label}))" if listable else ""
        raise InvalidSetting(f"{label} must be {what}, not {type(source).__name__}{hint}")
    for index, item in enumerate(source):
        if not isinstance(item, str | os.PathLike):
            raise InvalidSetting(
                f"{label}[{index}] must be a path (a str or os.PathLike), not {type(item).__name__}"
            )
    return list(source)


def _is_bundled_sample(root: Path) -> bool:
    """Whether ``root`` is in memorylab's bundled data: synthetic conversations that git checks
    out readable by all, so a warning about them (on every `memorylab report`) would be noise."""
    from memorylab.transcripts import bundled_data_dir

    try:
        data = bundled_data_dir().resolve()
    except PrerequisiteError:
        return False
    return root.resolve().is_relative_to(data)


def files_of(files: AgentFiles, notes: list[Note]) -> list[tuple[Path, str]]:
    """``(path, kind)`` of the agent's files to read: its archives but the uncommitted one of an
    interrupted compaction (rule 1), those an edit made as ``"edit"`` (rule 5), then the live
    file."""
    pending = None
    paths = MemoryPaths(files.memory_md)
    # an edit's archive says so in its name; older ones are named by their records (rule 5)
    edits = edit_archives((), [path.name for path in files.archives])
    if paths.intent.exists():
        with contextlib.suppress(OSError):
            pending = MemoryStore(files.memory_md).pending_archive()  # reads, never writes
    edits |= edit_archives(files.records)  # with an edit committed but not yet recorded
    found = []
    for path in files.archives:
        if path.name == pending:
            _note(
                notes,
                path,
                "pending",
                "an uncommitted archive of a compaction in progress or interrupted "
                "(its messages are still in MEMORY.md); skipped",
            )
        else:
            found.append((path, "edit" if path.name in edits else "archive"))
    if files.memory is not None:
        found.append((files.memory, "memory"))
        for torn in sorted(files.memory.parent.glob(f"{files.memory.name}.torn-*")):
            _note(notes, torn, "torn", _TORN_KEPT)
    return found


_TORN_KEPT = (
    "the torn end of a write that a kill or a power loss cut short (never acknowledged), cut "
    "off MEMORY.md by recovery and kept here: read it, then delete it"
)


def _name_key(name: str) -> tuple[datetime, int, str]:
    parsed = fmt.parse_archive_name(name)
    when, attempt = parsed if parsed is not None else (datetime.min, 0)
    return when, attempt, name


def _starts(earlier: fmt.ParsedFile, later: fmt.ParsedFile) -> bool:
    """Whether ``later`` starts with all of ``earlier`` (rule 4; an empty file starts nothing):
    the same header, then the same messages (role, content and timestamp)."""
    if not earlier.blocks and earlier.conversation_name is None:
        return False
    before, after = earlier.blocks, later.blocks
    count = len(before)
    return (
        earlier.header() == later.header()
        and len(after) >= count
        and after.timestamps[:count] == before.timestamps
        and after.roles[:count] == before.roles
        and after.contents[:count] == before.contents
    )


def timeline(
    segments: Sequence[Segment], notes: list[Note], *, whole_folder: bool
) -> list[Segment]:
    """One agent's parsed files in timeline order (rules 2-4), noting each file's problems,
    what was left out and what looks missing (``whole_folder``: the source named the folder,
    so an archive the lineage names should be there)."""
    by_name = {s.path.name: s for s in segments if s.kind in ("archive", "edit")}
    memory = next((s for s in segments if s.kind == "memory"), None)
    live = memory.parsed.continues if memory is not None else None
    if memory is not None and live is not None and live not in by_name and whole_folder:
        _note(
            notes,
            memory.path,
            "lineage",
            f"continues {live}, which is not in archive/ "
            "(deleted?); older archives are ordered by name",
        )
    start = live if live in by_name else None
    if start is None:
        referenced = {s.parsed.continues for s in by_name.values()} | {live}
        heads = [name for name in by_name if name not in referenced]
        start = max(heads, key=_name_key) if heads else None
    chain: list[Segment] = []
    seen: set[str] = set()
    while start is not None and start in by_name and start not in seen:
        seen.add(start)
        chain.append(by_name[start])
        start = by_name[start].parsed.continues
    rest = [by_name[name] for name in sorted(by_name.keys() - seen, key=_name_key)]
    kept: list[Segment] = []
    for segment in [*rest, *reversed(chain), *([memory] if memory is not None else [])]:
        if segment.kind == "edit":
            _note(
                notes,
                segment.path,
                "edit",
                "the file as it was before an edit (update, "
                "delete or clear); its messages are read from the edited file, not twice",
            )
            continue
        if kept and _starts(kept[-1].parsed, segment.parsed):
            dropped = kept.pop()
            same = len(dropped.parsed.blocks) == len(segment.parsed.blocks)
            what = (
                f"the same messages as {segment.path.name}"
                if same
                else f"{segment.path.name} starts with all of it (a compaction that did not finish)"
            )
            _note(
                notes,
                dropped.path,
                "duplicate",
                f"{what}; skipped, its messages are read once from the later file",
            )
        notes += [
            Note(str(segment.path), p.line, p.kind, p.message, damaged=True)
            for p in segment.problems
        ]
        kept.append(segment)
    kept = _without_repeats(kept, notes)
    for segment in kept:
        _note_backwards(segment, notes)
    first = kept[0].parsed.blocks.contents[:1] if kept else []
    if first and first[0].startswith(SUMMARY_PREFIX):  # Message.is_summary
        _note(
            notes,
            kept[0].path,
            "gap",
            "the oldest file starts with a compaction summary: "
            "older archives are missing (deleted, or overwritten by the reference framework, "
            "whose archive names collide within one second)",
        )
    return kept


# Writers stamp a message before they take the lock, so blocks of several processes may be a
# little out of order: only a step back of more than this is noted.
_CLOCK_SLACK = timedelta(minutes=1)


def _note_backwards(segment: Segment, notes: list[Note]) -> None:
    """Note a file whose timestamps go backwards: a heading forged inside a message (the
    reference writes content verbatim), or a clock set back. The file's order is kept; the
    note says where the times stop making sense. The ``repeated`` messages are left out: a
    compaction keeps them (the turn in progress, pins) after a summary dated later, and their
    order was checked in the earlier file they are read from."""
    times = segment.parsed.blocks.timestamps
    for before, index in itertools.pairwise(segment.positions()):
        try:
            earlier = times[index] < times[before] - _CLOCK_SLACK
        except TypeError:  # naive and aware: they do not compare
            continue
        if earlier:
            _note(
                notes,
                segment.path,
                "order",
                f"message {index} ({times[index]:%Y-%m-%d %H:%M:%S}) is dated before the one "
                f"before it ({times[before]:%Y-%m-%d %H:%M:%S}): a heading written inside a "
                "message, or a clock set back; the file's order is kept, its times are not to "
                "be trusted from there",
            )
            return


def _without_repeats(segments: list[Segment], notes: list[Note]) -> list[Segment]:
    """Rule 6: each message once, from the first file in timeline order that holds it. A
    message is its (role, content, timestamp), compared as :class:`Message` compares them; a
    tool result a compaction cleared is the block with the original's role and timestamp whose
    content names the file that holds the original (a strategy's placeholder must name it:
    :func:`memorylab.compress._strategy.check_placeholder`)."""
    earlier: list[tuple[str, fmt.Blocks]] = []
    span: _Span = None  # the earliest and latest timestamps of the earlier files: a quick first
    stamps: set[datetime] | None = None  # test; their timestamps where the span does not tell
    seen: Counter[tuple[str, str, datetime]] | None = None  # made when a file may share a message
    holders: dict[tuple[str, datetime], set[str]] = {}  # (role, time) -> the files holding it
    result = []
    for index, segment in enumerate(segments):
        blocks = segment.parsed.blocks
        times = blocks.timestamps
        if seen is None and earlier:
            shared = _overlaps(span, times)
            if shared is None:  # naive and aware timestamps do not compare: look them up
                if stamps is None:
                    stamps = {time for _, b in earlier for time in b.timestamps}
                shared = not stamps.isdisjoint(times)
            if shared:
                seen = Counter()
                for name, held in earlier:
                    _hold(seen, holders, name, held, frozenset())
        if seen is None:
            if index < len(segments) - 1:  # the last file's are compared with nothing
                earlier.append((segment.path.name, blocks))
                span = _widened(span, times)
                if stamps is not None:
                    stamps.update(times)
            result.append(segment)
            continue
        messages = list(zip(blocks.roles, blocks.contents, times, strict=True))
        # The first occurrences are the copies (a compaction's kept messages open its file), as
        # many as the earlier files hold; any more are this file's own.
        occurrences: Counter[tuple[str, str, datetime]] = Counter()
        copied = set()
        for p, message in enumerate(messages):
            occurrences[message] += 1
            if occurrences[message] <= seen[message]:
                copied.add(p)
        cleared = {
            p
            for p, (role, content, time) in enumerate(messages)
            if p not in copied and any(name in content for name in holders.get((role, time), ()))
        }
        _hold(seen, holders, segment.path.name, blocks, frozenset(copied))
        if copied or cleared:
            # Which writer made a copy is not recorded with it: both are said.
            placeholders = (
                f"; {len(cleared)} of them tool results it cleared to a placeholder naming that "
                "file"
                if cleared
                else ""
            )
            _note(
                notes,
                segment.path,
                "duplicate",
                f"{len(copied | cleared)} of its {len(messages)} messages are in an earlier file "
                "too: kept by the compaction that wrote this file (the turn in progress, pinned "
                f"messages, the messages a strategy keeps{placeholders}), or copies made by a "
                "writer without memorylab's lock, such as the reference framework compacting at "
                "the same moment; read once, from the earlier file",
            )
            segment = replace(segment, repeated=frozenset(copied | cleared))
        result.append(segment)
    return result


def _hold(
    seen: Counter[tuple[str, str, datetime]],
    holders: dict[tuple[str, datetime], set[str]],
    name: str,
    blocks: fmt.Blocks,
    copied: frozenset[int],
) -> None:
    """Count the messages of the file ``name`` that are its own, not ``copied`` (rule 6)."""
    messages = zip(blocks.roles, blocks.contents, blocks.timestamps, strict=True)
    for position, (role, content, when) in enumerate(messages):
        if position not in copied:
            seen[(role, content, when)] += 1
        holders.setdefault((role, when), set()).add(name)


# The earliest and latest of some timestamps; None: none yet; False: they do not compare
# (naive and aware together).
_Span = tuple[datetime, datetime] | Literal[False] | None


def _widened(span: _Span, times: Sequence[datetime]) -> _Span:
    """``span`` widened to ``times``."""
    if span is False or not times:
        return span
    try:
        low, high = min(times), max(times)
        return (low, high) if span is None else (min(span[0], low), max(span[1], high))
    except TypeError:
        return False


def _overlaps(span: _Span, times: Sequence[datetime]) -> bool | None:
    """Whether ``times`` may share a timestamp with those of ``span`` (None: they do not
    compare): times outside the span share none, and comparing is cheaper than hashing."""
    if span is None or not times:
        return False
    if span is False:
        return None
    try:
        return not (max(times) < span[0] or min(times) > span[1])
    except TypeError:
        return None
