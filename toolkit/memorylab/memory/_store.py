"""The only module that writes memory files.

Layout of one agent (``<workspace>/agents/<agent_name>/``)::

    MEMORY.md                 active log: header + blocks, appended one write per message
    archive/history_<ts>.md   what a compaction summarized, written once, never overwritten
    compactions.jsonl         one JSON line per compaction (and per retention deletion)
    usage.jsonl               one JSON line per model call of the Agent (counts only)
    pins.jsonl                one JSON line per pin or unpin of a block (its identity, no text)
    .MEMORY.md.lock           cross-process lock (a sidecar: it survives MEMORY.md being replaced)
    .MEMORY.md.intent.json    present only while a compaction is in flight (its journal)
    .MEMORY.md.deletion.json  present only while a deletion is in flight (its journal)
    .MEMORY.md.replaced-<ns>.<n>  the file a compaction replaced, for a second after it (or
                              until the next open, if its process was killed): late writes

Appends: under the agent lock (a per-process ``threading.RLock`` plus ``flock`` on the sidecar),
one ``os.write`` of the whole block to an ``O_APPEND`` descriptor kept open; ``durable=True`` adds
an ``fsync``. Before every append the path is checked to still be the file the descriptor writes
to: whoever replaced it (another memorylab process compacting, the reference framework, an
editor saving by rename, ``mv``) or deleted it by hand, the next append reopens MEMORY.md by path
(re-creating it with a header if it is gone, by a hard link: never over a file another writer
created meanwhile) and first carries over what the replacer dropped (``_carry_dropped``):
nothing when a memorylab rewrite replaced it (its record names the file it replaced; what it
archived, kept or removed stays so), else each block this process had appended to the replaced
file that is in neither the new file nor an archive written since. A kill can stop a
large write at a page boundary, and a power loss anywhere: recovery (on open, before a snapshot
and before every append, under the lock) cuts such a torn last block off and keeps it in
``MEMORY.md.torn-<time>Z`` beside the file (:func:`_settle_tail`). A short
write (disk full) is cut back before the error is raised, so the file never keeps half a block.
``memorylab forget`` / ``purge`` delete the lock file too: a process that still writes then
gets ``StoreError`` instead of re-creating forgotten memory.

Writers that do not take the lock (the reference framework opens MEMORY.md by path for every
message) append to the replaced file when they opened it before a rewrite's rename: between the
rewrite's read and its rename (several fsyncs), or just after. The rewrite gives that file a
second name before its rename (``_keep_replaced``: when, and how many bytes it read), and
whoever holds the lock next carries over the whole blocks written there since (``_carry_late``:
this process's appends for a second after its compaction, and recovery, should it have been
killed first), then moves the name past them; the name goes once nothing has changed the file
for ``LATE_WRITE_WINDOW_S`` (or at once, when a deletion runs: it holds archived text). The new
file's blocks (the summary, what was carried over) count as this process's appends: the
descriptor appends go to is opened before the rename, so a writer that read the old file before
the rename and removes the new one after it (the reference's ``compact()``) is noticed at the
next append, which carries them over. See docs/memory-format.md for what is and is not
guaranteed.

Compaction, under the same lock, in this order — and what a crash after each step leaves:

1. check that MEMORY.md still starts with the snapshot that was summarized (else
   ``CompactionConflict``, nothing written);
2. write the intent journal (temp file, fsync, rename, fsync folder) — a crash: the old
   MEMORY.md is intact, recovery deletes the journal;
3. write the archive: temp file, fsync, hard-link to a free ``history_<ts>[_n].md`` (a link
   never overwrites), fsync ``archive/`` — a crash: the archive duplicates the start of the old,
   intact MEMORY.md; recovery (the next open or compaction) removes that uncommitted archive;
4. write the new MEMORY.md (header naming the archive, the summary, every block appended since
   the snapshot): temp file, fsync, ``os.replace``, fsync folder. This is the commit point —
   a crash after it: recovery keeps the archive and finishes steps 5-6, and carries over what
   writers that take no lock wrote to the replaced file (its second name, made before step 2:
   ``_keep_replaced``; a crash before the commit leaves a second name of MEMORY.md itself,
   which recovery removes);
5. append the compaction record to ``compactions.jsonl`` (fsync);
6. remove the journal.

An edit of the history (a ``Conversation``'s ``update``, ``delete`` or ``clear``:
:meth:`MemoryStore.edit`) takes the same path, steps 1-6, through the same code
(:meth:`MemoryStore.rewrite`): the whole old file is the archive and the new MEMORY.md holds the
edited blocks instead of a summary, so what an edit removes is archived, never destroyed.

Deletion (retention, purge, :meth:`MemoryStore.delete_archives`; forget and purge of a whole
agent, :meth:`MemoryStore.remove`), under the lock, is journalled the same way: its journal
(``.MEMORY.md.deletion.json``: which archives and what to record of each, or "remove this
memory"; temp file, fsync, rename) is written before its first unlink and removed after its
last step: the archives unlinked, each deletion recorded, their rows deleted from the recall
index (securely: ``archive/.recall.sqlite``), or every file of the memory removed, the lock
file last. A crash before the journal deletes nothing; a crash after it is finished by
recovery when the memory is next opened (:meth:`MemoryStore._recover_deletion`): no archive
meant to go, and none of its text in the index or in SQLite's journal of a killed
transaction, is left.

Everything a compaction will write is checked before its first write (the summary encodes as
UTF-8, ``compactions.jsonl`` and ``archive/`` are of the right kind); after the commit point
nothing fails the call: a record that cannot be written is logged and written by recovery.

The JSON Lines files (``compactions.jsonl``, ``usage.jsonl``, ``pins.jsonl``) follow one rule
(:meth:`MemoryStore._append_line`, :func:`_read_lines`): a record is appended under the agent
lock as one write of one line to an ``O_APPEND`` descriptor, on a line of its own even after a
torn last line (a crash while it was written), then fsync'd; a new file is created 0o600; every
text in the record is redacted first (:func:`_recordable`). A line ends at ``b"\\n"`` only. A
reader never raises for a line: one that is no record (a torn one, a hand edit) is skipped, a
field of the wrong shape is left out (:func:`~memorylab.memory._records.read_record_line`), and
either is noted (logged once per process, and in ``problems`` when asked).
Recovery runs under the lock in :meth:`MemoryStore.ensure`, in :meth:`MemoryStore.for_agent`
when a journal is there, and before every compaction and deletion.
Folders are created 0o700 and files 0o600. Agent names must be one safe path component; every
file is opened without following symlinks and refused unless it is a regular file, and the
agent folder is checked to be a real folder inside the workspace at every compound operation
(ensure, compaction, deletion) and whenever an append finds MEMORY.md replaced.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import re
import shutil
import stat
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, overload

from memorylab.errors import (
    CompactionConflict,
    InvalidSetting,
    StoreError,
    UnsafePath,
)
from memorylab.memory import _format as fmt
from memorylab.memory import _recall_index
from memorylab.memory._fsutil import (
    DIR_MODE,
    NO_HARD_LINKS,
    Displaced,
    atomic_replace,
    create_new_file,
    encode_utf8,
    file_key,
    fsync_dir,
    open_private_append,
    open_regular,
    read_bytes,
    read_fd,
    replace_and_open,
    safe_mkdir,
    store_error,
    write_all,
    write_new_file,
)
from memorylab.memory._locking import AgentLock, Mark, drop_lock, lock_for
from memorylab.memory._paths import MemoryPaths, agent_folders, agent_paths
from memorylab.memory._records import (
    IDENTIFYING_FIELDS,
    MemoryDocument,
    Message,
    check_record,
    is_edit_archive,
    read_record_line,
)
from memorylab.memory._redact import SECRETS, redact_values
from memorylab.memory._retention import RetentionPolicy

logger = logging.getLogger("memorylab")

_REPORTED: set[tuple[Path, int, bytes]] = set()  # bad JSON Lines lines logged (their hash)

LATE_WRITE_WINDOW_S = 1.0
"""For how long after a compaction appends look for late writes to the replaced file."""

_RESEED_WAIT_S = 0.25
"""How long an append that finds MEMORY.md missing or empty waits for another writer to
re-create it before creating it itself (:meth:`MemoryStore._await_reseed`)."""

_ARCHIVE_SLACK_NS = 5_000_000_000
"""How much older than the file a block was appended to an archive may look and still be
searched for the block (clocks and coarse modification times: FAT keeps 2 s)."""

_SEPARATOR = b"\n" + fmt.SEPARATOR_LINE.encode() + b"\n\n"

# ---------------------------------------------------------------------------------------------
# The store


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The exact bytes of MEMORY.md at one instant (taken under the lock)."""

    data: bytes

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


@dataclass(frozen=True, slots=True)
class CompactionResult:
    archive: str | None  # None: nothing was archived (the file held only its header)
    messages_archived: int
    carried_over: int
    carried_text: str


class MemoryStore:
    """Reads and writes one memory file and everything beside it (see the module docstring).

    ``agent_root`` (the workspace's ``agents/`` folder) makes the store refuse to create
    anything outside it, also through symlinks.
    """

    def __init__(
        self,
        memory_md: str | os.PathLike[str],
        *,
        durable: bool = False,
        lock_timeout: float = 30.0,
        agent_root: Path | None = None,
    ) -> None:
        self.paths = MemoryPaths(Path(memory_md).expanduser().absolute())
        self.durable = durable
        self.lock_timeout = lock_timeout
        self.agent_root = agent_root
        self._lock: AgentLock | None = None
        self._conversation_name: str | None = None  # for a header, should MEMORY.md vanish

    @classmethod
    def for_agent(
        cls,
        agent_name: str,
        workspace_dir: str | os.PathLike[str] | None = None,
        **options: Any,
    ) -> MemoryStore:
        paths = agent_paths(agent_name, workspace_dir)
        store = cls(paths.memory_md, agent_root=paths.folder.parent, **options)
        store.recover_if_interrupted()
        return store

    @property
    def path(self) -> Path:
        return self.paths.memory_md

    def recover_if_interrupted(self) -> None:
        """Finish (or roll back) a compaction or a deletion that a crash interrupted, under the
        lock, when one did: decided from their journals (``.MEMORY.md.intent.json``,
        :func:`deletion_journal`), two ``lstat`` calls when there is none. Opening an agent
        runs it (:meth:`for_agent`; a ``Conversation`` through :meth:`ensure`), so a deletion
        killed half way is finished before anything reads the memory: no archive meant to go,
        and none of its text in the recall index, is left."""
        if not any(os.path.lexists(p) for p in (self.paths.intent, deletion_journal(self.paths))):
            return
        try:
            with self.locked():
                self._recover()
        except OSError as exc:
            raise store_error(exc, self.path, "recover") from exc
        if self._lock is not None and self._lock.is_stale():
            self._lock = None  # a removal was finished: the next use makes a new lock

    def __repr__(self) -> str:
        return f"MemoryStore({str(self.path)!r}, durable={self.durable})"

    # -- locking ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the agent's lock (re-entrant within a thread; excludes other threads/processes)."""
        lock = self._agent_lock()
        lock.acquire(self.lock_timeout)
        try:
            yield
        finally:
            lock.release()

    def _held_lock(self) -> AgentLock:
        assert self._lock is not None and self._lock.depth > 0, "call with the lock held"
        return self._lock

    def _prepare_folders(self) -> None:
        folder = self.paths.folder
        if self.agent_root is not None:
            workspace = self.agent_root.parent
            workspace.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
            safe_mkdir(self.agent_root, parents_ok=False)
            safe_mkdir(folder, parents_ok=False)
            real_root = os.path.realpath(self.agent_root)
            if os.path.dirname(os.path.realpath(folder)) != real_root:
                raise UnsafePath(f"{folder} resolves outside {self.agent_root}")
        else:
            safe_mkdir(folder, parents_ok=True)

    # -- reading ------------------------------------------------------------------------------

    def exists(self) -> bool:
        return self.path.is_file()

    def read_bytes(self) -> bytes:
        try:
            return read_bytes(self.path)
        except FileNotFoundError:
            return b""
        except OSError as exc:
            raise store_error(exc, self.path, "read") from exc

    def read_text(self) -> str:
        return self.read_bytes().decode("utf-8", errors="replace")

    def snapshot(self) -> Snapshot:
        with self.locked():
            self._close_torn_tail()  # a torn block is never summarized nor archived
            return Snapshot(self.read_bytes())

    # -- writing ------------------------------------------------------------------------------

    def ensure(self, conversation_name: str, created: datetime) -> bool:
        """Create MEMORY.md with a fresh header if it does not exist (or is empty); finish or
        roll back a compaction or a deletion a crash interrupted (:meth:`_recover`). Returns
        True if the header was written now."""
        self._conversation_name = conversation_name
        try:
            for _ in range(3):
                written = self._ensure_once(conversation_name, created)
                if written is not None:
                    return written
        except OSError as exc:
            raise store_error(exc, self.path, "prepare") from exc
        raise StoreError(
            f"{self.path} was removed again and again while it was being opened (memorylab "
            "forget or purge in another process?); open it again once they are done"
        )

    def _ensure_once(self, conversation_name: str, created: datetime) -> bool | None:
        """:meth:`ensure` once; ``None`` when its recovery finished a removal that a crash had
        interrupted (forget, purge): the memory and its lock file are gone, so it starts again
        with a new lock, the folder made again and a fresh MEMORY.md."""
        self._prepare_folders()  # the folder may have been removed since the last call
        if self._lock is not None and self._lock.is_stale():
            self._lock = None  # deleted (forget): the re-created memory gets a new lock
        with self.locked():
            self._held_lock().check()
            self._recover()
            if self._held_lock().is_stale():
                return None
            try:
                info = os.lstat(self.path)
            except FileNotFoundError:
                info = None
            if info is not None and not stat.S_ISREG(info.st_mode):
                raise UnsafePath(
                    f"{self.path} is not a regular file (a symlink, folder or FIFO?): move "
                    "it aside; memorylab never writes through one"
                )
            if info is None or info.st_size == 0:
                return self._write_header(info, conversation_name, created)
            return False

    def _write_header(
        self, info: os.stat_result | None, conversation_name: str, created: datetime
    ) -> bool:
        """Give MEMORY.md (``info``: missing, or 0 bytes) a header; False when another writer
        created it meanwhile. A missing file is created without replacing one made in the
        meantime: the reference's compact() re-creates it right after removing it, and its
        summary would be lost."""
        header = encode_utf8(fmt.render_header(conversation_name, created))
        if info is None:
            if create_new_file(self.path, header):
                return True
            if os.lstat(self.path).st_size:
                return False
        atomic_replace(self.path, header)  # 0 bytes: nothing in it to keep
        return True

    def _close_torn_tail(self) -> None:
        """Cut a torn block off the end of MEMORY.md (a write a kill or a power loss cut short:
        never acknowledged), keeping it aside (:func:`_settle_tail`); the lock is held."""
        try:
            info = os.lstat(self.path)
        except FileNotFoundError:
            return
        if not stat.S_ISREG(info.st_mode) or info.st_size == 0:
            return  # ensure() refuses what is not a regular file
        try:
            fd = open_regular(self.path, os.O_RDONLY)  # a read-only file that is whole is fine
        except FileNotFoundError:
            return  # removed since (the reference's compact()): nothing torn to cut
        try:
            size = os.fstat(fd).st_size
            if size >= len(_WHOLE_END) and os.pread(fd, 7, size - 7) == _WHOLE_END:
                return
            text = read_fd(fd).decode("utf-8", errors="surrogateescape")
            if fmt.append_point(text).torn == len(text):
                return  # a header only, or a hand edit: nothing torn
        finally:
            os.close(fd)
        fd = open_regular(self.path, os.O_RDWR)
        try:
            _settle_tail(fd, self.path, cut_only=True)
        finally:
            os.close(fd)

    def _agent_lock(self) -> AgentLock:
        lock = self._lock
        if lock is None:  # first use: make (and check) the folders once, not per append
            self._prepare_folders()
            lock = self._lock = lock_for(self.paths.lock)
        return lock

    def append(self, text: str) -> None:
        """Append rendered blocks with one write, under the lock (see the module docstring)."""
        data = encode_utf8(text)
        lock = self._agent_lock()
        lock.acquire(self.lock_timeout)
        try:
            fd = self._append_held(lock, data)
            if self.durable:
                os.fsync(fd)
        except OSError as exc:
            raise store_error(exc, self.path, "append to") from exc
        finally:
            lock.release()

    def _append_held(self, lock: AgentLock, data: bytes) -> int:
        """Append ``data`` (whole blocks) as this process's, the lock held; returns the fd."""
        fd = self._append_fd(lock)
        self._write_ours(lock, fd, data)
        return fd

    def _write_ours(self, lock: AgentLock, fd: int, data: bytes) -> None:
        """Write ``data`` (whole blocks) to ``fd`` and count it among this process's blocks:
        a replacer that drops them has them carried over (:meth:`_carry_dropped`)."""
        _write_block(fd, data, self.path)
        lock.appended.append(data)

    def _append_fd(self, lock: AgentLock) -> int:
        """The descriptor to append to, checked before every write (the lock is held): a
        MEMORY.md replaced or deleted since the last append is reopened
        (:meth:`_reopen_append`), then late writes to the file the last compaction replaced
        are carried over (:meth:`_check_late`)."""
        fd = lock.append_fd
        try:
            now = os.lstat(self.path)
        except FileNotFoundError:
            now = None
        if fd is None or now is None or (now.st_dev, now.st_ino) != lock.append_id:
            fd = self._reopen_append(lock, now)
        if lock.late is not None:
            self._check_late(lock, fd)
        return fd

    def _reopen_append(self, lock: AgentLock, now: os.stat_result | None) -> int:
        """Open MEMORY.md for appending (first use, or the file was replaced or deleted), and
        carry over what this process appended to the file it wrote to before and nobody kept."""
        lock.check()  # forgotten: never resurrect the memory
        self._prepare_folders()  # e.g. the agent folder swapped for a symlink
        missing = now is None or now.st_size == 0
        # Someone re-creating it archived first: a plain rm (or an editor) archives nothing.
        if missing and lock.append_fd is not None and self._archives_since(lock.append_mark):
            now = self._await_reseed()
        if now is None or now.st_size == 0:
            if self._conversation_name is None:
                raise StoreError(
                    f"{self.path} does not exist (deleted while in use?); create it again with "
                    "ensure() or a new Conversation"
                )
            self._write_header(now, self._conversation_name, datetime.now(UTC))
        fd = open_regular(self.path, os.O_RDWR | os.O_APPEND)
        info = os.fstat(fd)
        old_fd, old_blocks, old_mark = lock.append_fd, lock.appended, lock.append_mark
        lock.append_fd, lock.append_id, lock.appended = fd, (info.st_dev, info.st_ino), []
        lock.append_mark = self._mark()
        if old_fd is not None:
            try:
                self._carry_dropped(old_fd, old_blocks, old_mark, fd, lock)
            finally:
                os.close(old_fd)
        return fd

    def _await_reseed(self) -> os.stat_result | None:
        """MEMORY.md missing or empty while this process appends to it, and an archive written
        since it began (a plain ``rm`` or an editor writes none): most likely a writer
        that takes no lock re-creating it (the reference's ``compact()``: remove, a test for
        the name, ``open(path, "w")``, its header, then its summary). Give it up to
        ``_RESEED_WAIT_S`` to finish before writing a header of our own: a file created
        between its test and its open is truncated by the open (this process's blocks in it
        lost: a run lost ``ml-374``), and a header renamed over its empty file takes its
        summary and its next appends away with it (runs lost it and 1 or 2 of its messages)."""
        deadline = time.monotonic() + _RESEED_WAIT_S
        while True:
            time.sleep(0.002)
            try:
                now = os.lstat(self.path)
            except FileNotFoundError:
                now = None
            if (now is not None and now.st_size) or time.monotonic() >= deadline:
                return now

    def _mark(self) -> Mark:
        """Where this process begins appending to a MEMORY.md (the lock is held): what
        :meth:`_replaced_by_rewrite` and :meth:`_carry_dropped` look at later."""
        try:
            info = os.lstat(self.paths.compactions)
        except OSError:
            return Mark(None, 0, time.time_ns())
        return Mark((info.st_dev, info.st_ino), info.st_size, time.time_ns())

    def _carry_dropped(
        self, old_fd: int, blocks: list[bytes], mark: Mark | None, fd: int, lock: AgentLock
    ) -> None:
        """Append to ``fd`` the ``blocks`` this process wrote to the replaced file ``old_fd``
        that its replacer dropped: nothing when a memorylab rewrite replaced it (it recorded
        so; holding the lock it read every block, and archived, kept or removed each on
        purpose: no other memorylab process may undo that); after a writer that keeps no
        lock and no record (the reference's ``compact()``, an editor, ``rm``), what is in
        neither the current MEMORY.md nor an archive written since this process began
        appending to ``old_fd``. Linear: a set of the blocks kept, each file read once."""
        if not blocks:
            return
        if os.path.lexists(self.paths.intent):
            self._recover()  # a rewrite that stopped after its rename: its record is written
        if self._replaced_by_rewrite(os.fstat(old_fd), mark):
            return
        old, current = read_fd(old_fd), read_fd(fd)
        first = old.find(blocks[0])
        if first >= 0:  # the old file from this process's first block on, unchanged in the new
            at = current.find(blocks[0])  # one (an editor's save): one comparison of bytes
            if at >= 0 and current.startswith(memoryview(old)[first:], at):
                return
        kept = _block_set(current)
        for archive in self._archives_since(mark):
            with contextlib.suppress(OSError):
                kept |= _block_set(read_bytes(archive))
        # One split of all of them (a separator between two of them cuts nothing apart).
        ours = [key for key in _SEPARATOR.join(blocks).split(_SEPARATOR) if key]
        missing = set(ours) - kept
        if not missing:
            return
        # Never a block removed from the old file in place (a few are looked up directly).
        missing = (
            {k for k in missing if k in old} if len(missing) <= 64 else missing & _block_set(old)
        )
        carried = []
        for key in ours:  # in the order written, each once, in one write
            if key in missing:
                carried.append(key + _SEPARATOR)
                missing.discard(key)
        if carried:
            self._write_ours(lock, fd, b"".join(carried))

    def _archives_since(self, mark: Mark | None) -> list[Path]:
        """The archives written since this process began appending to a file (``mark``),
        less ``_ARCHIVE_SLACK_NS``: where a writer that keeps no record may have put blocks it
        dropped from that file (the reference's ``compact()`` archives, then re-creates)."""
        since = (mark.since_ns if mark is not None else 0) - _ARCHIVE_SLACK_NS
        found = []
        for archive in self.paths.archives():
            with contextlib.suppress(OSError):
                if os.lstat(archive).st_mtime_ns >= since:
                    found.append(archive)
        return found

    def _replaced_by_rewrite(self, old: os.stat_result, mark: Mark | None) -> bool:
        """Whether a memorylab rewrite (compaction or edit) replaced the file ``old``: its
        record in ``compactions.jsonl`` names the file it replaced (``replaced``). Only the
        records appended since ``mark`` are read: a file's number is unique while it is open,
        and ``old`` has been open since then."""
        wanted = _file_id(old)
        try:
            info = os.lstat(self.paths.compactions)
        except FileNotFoundError:
            return False
        offset = 0
        if mark is not None and mark.records == (info.st_dev, info.st_ino):
            offset = mark.offset if info.st_size >= mark.offset else 0
        try:
            records_fd = open_regular(self.paths.compactions, os.O_RDONLY)
        except OSError:
            return False  # unreadable: treated as a replacement nobody recorded
        try:
            data = read_fd(records_fd, offset)
        finally:
            os.close(records_fd)
        needle = json.dumps(wanted).encode()
        for line in data.split(b"\n"):
            if needle in line:
                record = read_record_line(line.decode("utf-8", errors="replace")).record
                if record is not None and record.get("replaced") == wanted:
                    return True
        return False

    def append_record(self, record: Mapping[str, Any]) -> None:
        """Append one JSON line to ``compactions.jsonl`` (:meth:`_append_line`)."""
        self._append_line(self.paths.compactions, record)

    def append_usage(self, record: Mapping[str, Any]) -> None:
        """Append one model call's record (``UsageRecord.to_dict()``) to ``usage.jsonl``, by
        the rule of ``compactions.jsonl`` (:meth:`_append_line`)."""
        self._append_line(self.paths.usage, record)

    def append_pin(self, record: Mapping[str, Any]) -> None:
        """Append one pin or unpin of a block (``memory._pins.pin_line``: its identity, never
        its text) to ``pins.jsonl``, by the rule of ``compactions.jsonl``
        (:meth:`_append_line`)."""
        self._append_line(self.paths.pins, record)

    def _append_line(self, path: Path, record: Mapping[str, Any]) -> None:
        """Append ``record`` as one JSON line to ``path``, one of this memory's JSON Lines
        files (the module docstring): under the agent lock, one write, on a line of its own
        even when the last line was cut off (a crash while it was written), fsync'd; a new
        file is private (0o600). Every text in it is redacted first (:func:`_recordable`)."""
        line = _json_line(_recordable(record))
        with self.locked():
            try:
                fd = open_private_append(path)
            except OSError as exc:
                raise store_error(exc, path, "append to") from exc
            try:
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    line = b"\n" + line
                write_all(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)

    def records(self, problems: list[str] | None = None) -> list[dict[str, Any]]:
        """The records of ``compactions.jsonl``, one JSON object per line. A line that is not
        one (cut off by a crash, or edited into a JSON array, a number ...) is skipped and
        reported: logged once per process, and described in ``problems`` when a list is
        given (``"compactions.jsonl line <n>: ..."``): :func:`_read_lines`."""
        return _read_lines(self.paths.compactions, problems)

    def usage_records(self, problems: list[str] | None = None) -> list[dict[str, Any]]:
        """The records of ``usage.jsonl`` (``UsageRecord.to_dict()``, one per model call of
        the Agent), read as :meth:`records` reads ``compactions.jsonl``: a torn or foreign line
        is skipped and noted (``"usage.jsonl line <n>: ..."``)."""
        return _read_lines(self.paths.usage, problems)

    def pin_records(self, problems: list[str] | None = None) -> list[dict[str, Any]]:
        """The lines of ``pins.jsonl`` in file order (none when there is none: a memory that
        was never pinned, or one the reference framework wrote), read as :meth:`records`
        reads ``compactions.jsonl``; ``memory._pins.pinned_keys`` says which blocks they pin."""
        return _read_lines(self.paths.pins, problems)

    def compact(
        self,
        snapshot: Snapshot,
        summary: Message,
        *,
        conversation_name: str,
        now: datetime,
        record: Callable[[CompactionResult], dict[str, Any]] | None = None,
    ) -> CompactionResult:
        """Archive ``snapshot``, re-seed MEMORY.md with ``summary`` and carry over every block
        appended after the snapshot (the steps and their crash behaviour: module docstring).
        A snapshot without messages (a header only) is not archived, as the reference does."""
        summary_bytes = encode_utf8(fmt.render_block(summary))  # refused before any write
        return self.rewrite(
            snapshot, summary_bytes, conversation_name=conversation_name, now=now, record=record
        )

    def edit(
        self,
        change: Callable[[bytes], bytes | None],
        *,
        conversation_name: str,
        now: datetime,
        record: Callable[[CompactionResult], dict[str, Any]] | None = None,
    ) -> CompactionResult | None:
        """Rewrite the blocks of MEMORY.md (everything after its header) under the lock: the
        ``Conversation``'s ``update``, ``delete`` and ``clear``.

        ``change`` gets the blocks as they are on disk and returns them edited (whole blocks),
        or ``None`` to leave the file alone. An edit is written as a compaction is (the steps
        of the module docstring, through :meth:`rewrite`): the old file is archived, then
        replaced atomically by a fresh header naming that archive and the edited blocks, so
        nothing an edit removes is destroyed, and blocks other writers append meanwhile are
        carried over. Returns what was archived, or ``None`` when nothing changed.
        """
        try:
            with self.locked():
                lock = self._held_lock()
                if lock.append_fd is not None:
                    self._append_fd(lock)  # first carry over what a replacer dropped
                self._close_torn_tail()  # an edit never keeps a torn block
                snapshot = Snapshot(self.read_bytes())
                start = _blocks_start(snapshot.data)
                blocks = snapshot.data[start:]
                edited = change(blocks)
                if edited is None or edited == blocks:
                    return None
                return self.rewrite(
                    snapshot, edited, conversation_name=conversation_name, now=now,
                    record=record, action="edit",
                )  # fmt: skip
        except OSError as exc:
            raise store_error(exc, self.path, "edit") from exc

    def rewrite(
        self,
        snapshot: Snapshot,
        body: bytes | Callable[[str | None], bytes],
        *,
        conversation_name: str,
        now: datetime,
        record: Callable[[CompactionResult], dict[str, Any]] | None = None,
        action: str = "compact",
    ) -> CompactionResult:
        """Archive ``snapshot`` and replace MEMORY.md with a fresh header naming the archive,
        then ``body`` (whole blocks), then every block appended after the snapshot: the one
        crash-ordered path of compactions (``body`` is the summary's block, or what a strategy
        keeps) and edits (:meth:`edit`). Raises ``CompactionConflict`` when MEMORY.md no longer
        starts with ``snapshot``.

        ``body`` may be a function of the archive's name (``None``: nothing archived), for
        blocks that name the archive holding their original (a strategy's cleared tool
        results): it is called once the name is chosen, before the first write (so what it
        cannot encode changes nothing), and again if another writer took that name."""
        try:
            with self.locked():
                lock = self._held_lock()
                lock.check()
                self._prepare_folders()
                self._recover()
                for path, kind in ((self.paths.compactions, "file"), (self.paths.intent, "file"),
                                   (self.paths.archive_dir, "folder")):  # fmt: skip
                    require_kind(path, kind)
                if lock.append_fd is not None:
                    # Blocks a replacer dropped are carried over now: the rewrite closes the
                    # descriptor they were written through.
                    self._append_fd(lock)
                try:
                    current_fd = open_regular(self.path, os.O_RDONLY)
                except FileNotFoundError:  # the reference's compact() between remove and open
                    raise CompactionConflict(
                        f"{self.path} was removed by another writer; nothing was changed — "
                        "take a new snapshot and summarize again"
                    ) from None
                try:
                    return self._compact_locked(
                        snapshot, body, conversation_name, now, record, current_fd,
                        edit=action == "edit",
                    )  # fmt: skip
                finally:
                    os.close(current_fd)
        except OSError as exc:
            raise store_error(exc, self.path, action) from exc

    def _compact_locked(
        self,
        snapshot: Snapshot,
        render: bytes | Callable[[str | None], bytes],
        conversation_name: str,
        now: datetime,
        record: Callable[[CompactionResult], dict[str, Any]] | None,
        current_fd: int,
        *,
        edit: bool = False,
    ) -> CompactionResult:
        current = read_fd(current_fd)
        if not current.startswith(snapshot.data) or not snapshot.data:
            raise CompactionConflict(
                f"{self.path} changed since the snapshot (compacted or rewritten by another "
                "process); nothing was written — take a new snapshot and summarize again"
            )
        tail = current[len(snapshot.data) :]
        tail.decode("utf-8", errors="strict")  # a torn multi-byte character: not ours to cut
        archived_doc = fmt.parse(snapshot.text, strict=False).document
        carried_doc = fmt.parse(
            "# Agent Memory\n\n## Interaction Log\n\n" + tail.decode(), strict=False
        ).document
        name: str | None = None
        if archived_doc.messages:
            safe_mkdir(self.paths.archive_dir, parents_ok=False)
            name = self._free_archive_name(now, edit=edit)  # an edit's says so in its name
        result = CompactionResult(name, len(archived_doc.messages), len(carried_doc.messages),
                                  tail.decode())  # fmt: skip
        body = render(name) if callable(render) else render
        # Named before anything is written (a failure changes nothing): after the commit, what
        # a lock-less writer appends to the replaced file is found there (_carry_late).
        kept = self._keep_replaced(current_fd, len(current))
        # The record names the file it replaces: a process that appended to it carries none of
        # its blocks over (this rewrite read them all, under the lock; see _carry_dropped).
        replaced = _file_id(os.fstat(current_fd))
        line = {**(record(result) if record is not None else {"archive": name}),
                "replaced": replaced}  # fmt: skip
        atomic_replace(self.paths.intent, _intent_bytes(name, line))
        if name is not None:
            written = self._write_archive(snapshot.data, now, name)
            if written != name:  # lost a race for the name with a foreign writer
                name = written
                result = dataclasses.replace(result, archive=name)
                body = render(name) if callable(render) else render
                line = {**(record(result) if record is not None else {"archive": name}),
                        "replaced": replaced}  # fmt: skip
                atomic_replace(self.paths.intent, _intent_bytes(name, line))
        continues = name if name is not None else archived_doc.continues
        header = encode_utf8(fmt.render_header(conversation_name, now, continues=continues))
        current_info = os.fstat(current_fd)
        try:  # the commit point, unless a lock-less writer replaced the file meanwhile
            new_fd = replace_and_open(self.path, header + body + tail,
                                      (current_info.st_dev, current_info.st_ino))  # fmt: skip
        except Displaced as displaced:
            self._undo_archive(name)
            if kept is not None:  # the file another writer replaced: its own business
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(kept)
            if displaced.late:  # written to the new file in its instant in place: kept
                self._append_held(self._held_lock(), displaced.late)
            raise CompactionConflict(
                f"{self.path} was replaced by another writer while it was being compacted; "
                "nothing was changed — take a new snapshot and summarize again"
            ) from None
        # Where no second name could be made (no hard links), this process holds the replaced
        # file open for its window instead: a kill before it looks loses what is written there.
        unnamed = (current_fd, len(current)) if kept is None else None
        self._finish_compaction(line, new_fd, body, tail, unnamed)
        if name is not None:  # an agent's recall index learns of the archive (never fails)
            _recall_index.after_compaction(self.paths)
        return result

    def _undo_archive(self, name: str | None) -> None:
        """Remove the archive and the journal of a compaction abandoned before its commit."""
        if name is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.paths.archive_dir / name)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.paths.intent)

    def _finish_compaction(
        self, line: dict[str, Any], new_fd: int, body: bytes, tail: bytes,
        unnamed: tuple[int, int] | None,
    ) -> None:  # fmt: skip
        """After the commit point: appends go to the new MEMORY.md (``new_fd``: a header,
        ``body``, then the ``tail`` carried over); record the compaction, drop the journal,
        carry over what a lock-less writer appended to the replaced file since it was read
        (kept by name: :meth:`_carry_late`, which recovery runs too, should this process die
        first; ``unnamed``: the replaced file's descriptor and the bytes read of it, where it
        could not be named). Nothing here may fail the compaction (it happened): a failure is
        logged, and recovery records it later."""
        lock = self._held_lock()
        # The new file's blocks count as this process's appends: a lock-less writer that
        # removes or replaces it next (the reference's compact(), having read the old file
        # before the rename) drops them, and the next append carries them over.
        in_tail = _block_set(tail)
        ours = [body, *(b for b in lock.appended if _block_set(b) <= in_tail)]
        lock.close_append()  # what this process wrote there is archived or carried over
        lock.append_fd, lock.appended, lock.append_mark = new_fd, ours, self._mark()
        try:
            info = os.fstat(new_fd)
            lock.append_id = (info.st_dev, info.st_ino)
            # A writer that opened the old file just before the rename may write to it a little
            # later still: every append of this process looks again, for a second.
            lock.close_late()  # an earlier compaction's unnamed file: looked at before this read
            until = time.monotonic() + LATE_WRITE_WINDOW_S
            if unnamed is None:
                lock.late = (until, None, 0)
            else:
                lock.late = (until, os.dup(unnamed[0]), unnamed[1])
            # Recorded before anything else: the record is what tells other memorylab
            # processes that this rewrite replaced the file they appended to.
            self.append_record(line)
            os.unlink(self.paths.intent)
            fsync_dir(self.paths.folder)
            self._append_fd(lock)  # carries over what arrived meanwhile
        except OSError as exc:
            logger.warning(
                "memorylab: %s was compacted, but finishing it failed (%s); the compaction "
                "record is written when this memory is next opened or compacted",
                self.path,
                exc,
            )

    def _check_late(self, lock: AgentLock, fd: int) -> None:
        """Append to ``fd`` (MEMORY.md, checked) what a writer that does not take the lock
        wrote to the file a compaction replaced since it was read (:meth:`_carry_late`), as
        this process's own blocks; stop looking once the window has passed or nothing is
        kept to look at."""
        assert lock.late is not None
        until, unnamed_fd, read = lock.late
        kept = self._carry_late(fd)
        if unnamed_fd is not None:  # no hard links: the file this process holds open
            late = read_fd(unnamed_fd, read)
            if late:
                self._write_ours(lock, fd, late)
            lock.late = (until, unnamed_fd, read + len(late))
        if time.monotonic() >= until or not (kept or unnamed_fd is not None):
            lock.close_late()

    def _keep_replaced(self, current_fd: int, read: int) -> Path | None:
        """Give MEMORY.md (``current_fd``, of which a rewrite read ``read`` bytes) a second
        name before the rewrite renames a new file over it, ``.MEMORY.md.replaced-<time>.<read>``
        (:func:`_replaced_name`): a writer that takes no lock and opened the path before the
        rename writes there after it, and until nothing has for ``LATE_WRITE_WINDOW_S`` the
        file stays findable by whoever holds the lock next (:meth:`_carry_late`), even when
        this process is killed before it carries those writes over itself. None when the path
        no longer names ``current_fd``'s file (replaced meanwhile: the rename will not happen),
        or where the filesystem has no hard links."""
        kept = self.paths.folder / _replaced_name(self.path.name, time.time_ns(), read)
        try:
            os.link(self.path, kept, follow_symlinks=False)
        except OSError as exc:
            if exc.errno in NO_HARD_LINKS:
                return None  # FAT, some network mounts: _finish_compaction holds it open
            raise
        info = os.fstat(current_fd)
        if file_key(kept) != (info.st_dev, info.st_ino):
            os.unlink(kept)
            return None
        return kept

    def _carry_late(self, fd: int | None = None, *, final: bool = False) -> bool:
        """Carry over what writers that take no lock appended to the files that rewrites
        replaced after reading them (kept by :meth:`_keep_replaced`), the lock held: to ``fd``
        as this process's blocks (MEMORY.md, checked: a compactor's appends), else (recovery)
        to MEMORY.md as it is now. A kept file's name says how much of it is accounted for; the
        whole blocks past that go to MEMORY.md in the order written, less any already in it or
        in an archive written since the rewrite (a carry that a kill stopped before the name
        moved on), and the name moves past them. A kept file is removed once nothing has
        changed it for ``LATE_WRITE_WINDOW_S`` (nor replaced it), or at once when ``final``
        (a deletion: it holds the text archived from it); one that is still MEMORY.md (a
        rewrite killed before its rename) is removed unread. Returns whether any is kept."""
        lock = self._held_lock()
        folder, own = self.paths.folder, self.path.name
        try:
            with os.scandir(folder) as entries:
                found = [(at, e.name) for e in entries if (at := _parse_replaced(own, e.name))]
        except FileNotFoundError:
            return False
        if fd is None and lock.append_fd is not None and lock.append_id == file_key(self.path):
            fd = lock.append_fd  # what recovery carries counts as this process's, as above
        waiting = removed = False
        for (since_ns, read), name in sorted(found):  # in the order they were replaced
            kept = folder / name
            try:
                kept_fd = open_regular(kept, os.O_RDONLY)
            except (OSError, UnsafePath):
                continue  # gone, or not one of ours (a symlink, a FIFO): never read nor removed
            try:
                info = os.fstat(kept_fd)
                if file_key(self.path) == (info.st_dev, info.st_ino):
                    os.unlink(kept)  # never replaced: nothing was written anywhere else
                    continue
                late = read_fd(kept_fd, read)
            finally:
                os.close(kept_fd)
            whole = late[: late.rfind(_SEPARATOR) + len(_SEPARATOR)] if _SEPARATOR in late else b""
            if whole and not self._write_late(lock, fd, whole, since_ns):
                waiting = True  # MEMORY.md missing (being re-created?): the next look carries
                continue
            # Its last change: a write (mtime), the rename that replaced it (ctime, POSIX), or
            # else the moment it was kept (in its name).
            changed = max(since_ns, info.st_mtime_ns, info.st_ctime_ns)
            if final or time.time_ns() - changed >= LATE_WRITE_WINDOW_S * 1e9:
                os.unlink(kept)  # a torn block left past ``whole`` was never acknowledged
                removed = True
                continue
            if whole:
                os.rename(kept, folder / _replaced_name(own, since_ns, read + len(whole)))
            waiting = True
        if final and removed:
            fsync_dir(folder)  # a deletion's: the archived text does not come back
        return waiting

    def _write_late(self, lock: AgentLock, fd: int | None, late: bytes, since_ns: int) -> bool:
        """Append the blocks of ``late`` (whole blocks a lock-less writer appended to a
        replaced file) that are in neither MEMORY.md nor an archive written since ``since_ns``,
        in order, each once, with one write: to ``fd`` as this process's, else through a
        descriptor of its own (:meth:`_carry_late`). False when MEMORY.md is missing or empty
        (a writer that takes no lock re-creating it): nothing written."""
        given = fd is not None
        if fd is None:
            try:
                fd = open_regular(self.path, os.O_RDWR | os.O_APPEND)
            except FileNotFoundError:
                return False
        try:
            current = read_fd(fd)
            if not current:
                return False
            kept = _block_set(current)
            for archive in self._archives_since(Mark(None, 0, since_ns)):
                with contextlib.suppress(OSError):
                    kept |= _block_set(read_bytes(archive))
            carried = []
            for key in late.split(_SEPARATOR):
                if key and key not in kept:
                    carried.append(key + _SEPARATOR)
                    kept.add(key)
            if carried and given:
                self._write_ours(lock, fd, b"".join(carried))
            elif carried:
                _write_block(fd, b"".join(carried), self.path)
            return True
        finally:
            if not given:
                os.close(fd)

    def _free_archive_name(self, now: datetime, *, edit: bool = False) -> str:
        """The archive's name (:func:`memorylab.memory._format.archive_name`; an edit's ends
        ``_edit.md``). Never a name in use, nor one an earlier, since deleted archive had:
        lineage lines and records keep naming that one; an edit's and a compaction's name never
        share their time and number (one archive each)."""
        taken = {p.name for p in self.paths.archive_dir.iterdir()}
        taken |= {str(r["archive"]) for r in self.records() if r.get("archive")}
        keys = {fmt.parse_archive_name(name) for name in taken}
        attempt = 1
        while fmt.parse_archive_name(fmt.archive_name(now, attempt)) in keys:
            attempt += 1
        return fmt.archive_name(now, attempt, edit=edit)

    def _write_archive(self, data: bytes, now: datetime, name: str) -> str:
        """Write ``data`` as ``archive/name``, or under the next free name when another writer
        took it meanwhile (an edit's still marked so); returns the name used."""
        attempt = fmt.parse_archive_name(name)[1]  # type: ignore[index]
        edit = is_edit_archive(name)
        while not create_new_file(self.paths.archive_dir / name, data):
            attempt += 1
            name = fmt.archive_name(now, attempt, edit=edit)
        return name

    # -- recovery -----------------------------------------------------------------------------

    def _recover(self) -> None:
        """Finish or roll back a compaction that a crash interrupted, and cut a torn block off
        the end of MEMORY.md (:meth:`_close_torn_tail`); the caller holds the lock. Then carry
        over late writes to a file a rewrite replaced (:meth:`_carry_late`): its process may
        have been killed before it did."""
        self._recover_deletion()
        self._recover_compaction()
        self._close_torn_tail()
        self._carry_late()

    def _recover_deletion(self) -> None:
        """Finish a deletion that a crash interrupted, from its journal
        (:func:`deletion_journal`, written before the deletion's first unlink), the lock held:
        an archive deletion (:meth:`delete_archives`, retention, purge) is carried out again
        for the archives it names (:meth:`_finish_deletion`: what is left unlinked, each
        deletion recorded once, their rows deleted from the recall index, securely, after
        SQLite rolls back the hot journal a killed transaction left), a removal
        (:meth:`remove`: forget, purge) is done again (the lock file goes with it: this
        process's lock and every other process's that still holds it are stale, so none of
        them writes into the removed memory). Decided from the journal alone: no journal,
        nothing is read. A journal that is not one memorylab writes (a hand edit) is logged
        and removed."""
        journal_path = deletion_journal(self.paths)
        if self.paths.folder.is_dir():  # a journal's temp file: the deletion never began
            for leftover in self.paths.folder.glob(f".{journal_path.name}.tmp-*"):
                with contextlib.suppress(FileNotFoundError):
                    leftover.unlink()
        try:
            journal = json.loads(read_bytes(journal_path))
        except FileNotFoundError:
            return
        except ValueError:
            journal = None
        if isinstance(journal, dict) and journal.get("remove") is True:
            logger.warning("memorylab: %s: finishing a removal (forget, purge) that a crash "
                           "interrupted", self.paths.folder)  # fmt: skip
            self.remove(whole_folder=bool(journal.get("whole_folder")))
            return
        if not isinstance(journal, dict) or not isinstance(journal.get("archives"), list):
            logger.warning("memorylab: %s is not a deletion journal memorylab writes; removed",
                           journal_path)  # fmt: skip
            os.unlink(journal_path)
            return
        _, failed = self._finish_deletion(journal, recovering=True)
        for problem in failed:
            logger.warning("memorylab: %s: an interrupted deletion could not delete %s",
                           self.paths.folder, problem)  # fmt: skip

    def _recover_compaction(self) -> None:
        # Temp files only exist while someone holds the lock, so any found now are leftovers.
        own = self.path.name
        for folder, pattern in (
            (self.paths.folder, f".{own}.tmp-*"),
            (self.paths.folder, f"..{own}.intent.json.tmp-*"),
            (self.paths.archive_dir, ".history_*.tmp-*"),
        ):
            if folder.is_dir():
                for leftover in folder.glob(pattern):
                    with contextlib.suppress(FileNotFoundError):
                        leftover.unlink()
        try:
            intent = _read_intent(self.paths.intent)
        except FileNotFoundError:
            return
        name = str(intent.get("archive") or "")
        archive = self.paths.archive_dir / name
        current = self.read_bytes()
        continues = _continues_of(current)
        if name and continues == name:
            if not any(r.get("archive") == name for r in self.records()[-50:]):
                self.append_record(check_record(intent.get("record")).record or {"archive": name})
        elif (
            name
            and fmt.parse_archive_name(name)
            and archive.is_file()
            and current.startswith(read_bytes(archive))
        ):
            archive.unlink()  # uncommitted: its content is still all in MEMORY.md
            fsync_dir(self.paths.archive_dir)
        self.paths.intent.unlink()
        fsync_dir(self.paths.folder)

    def pending_archive(self) -> str | None:
        """The archive of an interrupted, uncommitted compaction (readers should skip it)."""
        try:
            name = _read_intent(self.paths.intent).get("archive")
        except FileNotFoundError:
            return None
        return None if not name or _continues_of(self.read_bytes()) == name else str(name)

    def archives_oldest_first(self) -> list[Path]:
        """Committed archives by name time, then modification time, then suffix.

        Unlike :meth:`MemoryPaths.archives` this stays right after deletions: a compaction in
        the same second as a deleted archive may reuse its plain name, newer than ``_2``.
        """
        keyed = []
        for path in self.paths.archives():
            parsed = fmt.parse_archive_name(path.name)
            assert parsed is not None
            with contextlib.suppress(FileNotFoundError):
                keyed.append((parsed[0], os.lstat(path).st_mtime_ns, parsed[1], path))
        return [path for *_, path in sorted(keyed)]

    # -- deletion: retention, purge and forget, under the agent lock (the privacy operations) ---

    def delete_archives(
        self,
        names: Iterable[str],
        *,
        reason: str | Mapping[str, str],
        kind: str = "retention",
        now: datetime | None = None,
        agent: str | None = None,
    ) -> list[str]:
        """Delete the named archives for good and record each deletion in ``compactions.jsonl``
        (``kind``, ``archive``, ``time``, ``reason``, ``agent``: never content), under the lock.
        ``reason``: why, one text for all, or each archive's own (a mapping by name).

        Only archive names (``history_<ts>[_n].md``) are accepted; archives already gone are
        skipped. Returns the names deleted. In this order, journalled as a compaction is
        (:meth:`_finish_deletion`): the deletion's journal (``.MEMORY.md.deletion.json``: the
        archives and what to record of each; private, fsync'd) is written before the first
        unlink; the archives are unlinked, their deletions recorded, their rows deleted from
        the recall index (securely), and the journal removed last. A crash after the journal is
        written is finished when the memory is next opened (:meth:`_recover_deletion`): no
        archive meant to go stays, nor its text in the index or its journal; a crash before
        it deletes nothing. An archive that cannot be unlinked (permissions) is
        ``StoreError``, after the others are deleted.
        """
        wanted = list(dict.fromkeys(names))
        for name in wanted:
            if fmt.parse_archive_name(name) is None:
                raise InvalidSetting(f"{name!r} is not an archive name (history_<time>.md)")
        if not isinstance(reason, str | Mapping):
            raise InvalidSetting(
                f"reason must be a text, or a mapping from each archive's name to its reason, "
                f"not {type(reason).__name__}"
            )
        why = {name: reason if isinstance(reason, str) else reason.get(name) for name in wanted}
        missing = [name for name, text in why.items() if not isinstance(text, str)]
        if missing:
            raise InvalidSetting(
                f"reason names no reason for {', '.join(missing[:3])}: give one text for all "
                "the archives, or a mapping from each archive's name to its reason"
            )
        when = (now or datetime.now(UTC)).isoformat(timespec="microseconds")
        with self.locked():
            self._recover()  # an interrupted compaction is settled before anything goes
            self._carry_late(final=True)  # a replaced file kept for late writes holds archived text
            present = [name for name in wanted if os.path.lexists(self.paths.archive_dir / name)]
            if not present:
                return []
            journal = {
                "kind": kind,
                "time": when,
                "agent": agent,
                "archives": [{"archive": name, "reason": why[name]} for name in present],
            }
            atomic_replace(deletion_journal(self.paths), json.dumps(journal).encode())
            deleted, failed = self._finish_deletion(journal, recovering=False)
        if failed:
            raise StoreError(
                f"cannot delete archive {'; '.join(failed[:3])} (the others were deleted): "
                "check who owns it and its mode, then delete it again"
            )
        return deleted

    def _finish_deletion(
        self, journal: Mapping[str, Any], *, recovering: bool
    ) -> tuple[list[str], list[str]]:
        """Carry out the deletion of archives ``journal`` describes (written by
        :meth:`delete_archives`), the lock held: unlink each archive still there, record each
        one gone (those recorded already aside, when ``recovering``), delete their rows from
        the recall index (:func:`memorylab.memory._recall_index.drop_archives`: securely, a
        hot journal SQLite left rolled back first, or the index file deleted), then remove the
        journal. Returns the names unlinked now and ``"<name>: <why>"`` of each that could not
        be (it stays, and so does its row: the index follows the archives).

        A ``StoreError`` from the index (neither updated nor deleted) leaves the journal: the
        next opening tries again."""
        entries = [
            entry
            for entry in journal.get("archives") or ()
            if isinstance(entry, Mapping)
            and isinstance(entry.get("archive"), str)
            and fmt.parse_archive_name(entry["archive"]) is not None  # never another file
        ]
        deleted: list[str] = []
        failed: list[str] = []
        for entry in entries:
            try:
                os.unlink(self.paths.archive_dir / entry["archive"])
            except FileNotFoundError:
                continue  # unlinked before a crash (or by hand)
            except OSError as exc:
                failed.append(f"{entry['archive']}: {exc.strerror or exc}")
                continue
            deleted.append(entry["archive"])
        if deleted:
            fsync_dir(self.paths.archive_dir)
        gone = [
            entry
            for entry in entries
            if not os.path.lexists(self.paths.archive_dir / entry["archive"])
        ]
        kind, when = str(journal.get("kind") or "retention"), journal.get("time")
        recorded: set[str] = set()
        if recovering:  # a crash may have come after some of the records
            recorded = {
                str(r.get("archive"))
                for r in self.records()
                if r.get("kind") == kind and r.get("time") == when
            }
        for entry in gone:
            if entry["archive"] not in recorded:
                record = {"kind": kind, "time": when, "archive": entry["archive"]}
                self.append_record(
                    {**record, "reason": entry.get("reason"), "agent": journal.get("agent")}
                )
        # Their messages leave the recall index too, securely (or the index goes).
        _recall_index.drop_archives(
            self.paths, [entry["archive"] for entry in gone], timeout=self.lock_timeout
        )
        os.unlink(deletion_journal(self.paths))
        fsync_dir(self.paths.folder)
        return deleted, failed

    def apply_retention(
        self,
        policy: RetentionPolicy,
        *,
        now: datetime | None = None,
        agent: str | None = None,
    ) -> list[str]:
        """Delete (and record) the archives ``policy`` does not keep at ``now``; their names.
        One deletion (:meth:`delete_archives`): a crash in the middle of it is finished at the
        next opening, every archive the policy named gone."""
        when = now or datetime.now(UTC)
        with self.locked():
            self._recover()
            doomed = policy.select([p.name for p in self.archives_oldest_first()], when)
            if not doomed:
                return []
            return self.delete_archives(
                [d.name for d in doomed],
                reason={d.name: d.reason for d in doomed},
                now=when,
                agent=agent,
            )

    def forget(self, *, whole_folder: bool | None = None) -> list[tuple[str, int]]:
        """Deprecated (0.1's name): :meth:`remove`."""
        warnings.warn("MemoryStore.forget() is MemoryStore.remove() now", DeprecationWarning,
                      stacklevel=2)  # fmt: skip
        return self.remove(whole_folder=whole_folder)

    def remove(self, *, whole_folder: bool | None = None) -> list[tuple[str, int]]:
        """Delete this memory for good, under the lock; return ``(path, bytes)`` of each file
        removed (paths relative to the folder).

        ``whole_folder`` (default: True for a store made by :meth:`for_agent`) removes every
        entry of the agent folder (caches included) and the folder itself; otherwise only this
        memory file's own files go: MEMORY.md, ``archive/``'s archives, ``compactions.jsonl``,
        ``usage.jsonl``, ``pins.jsonl``, the journal, temp files and the lock file. The
        generation is bumped first, so a process that still appends reopens MEMORY.md, finds it
        gone and gets ``StoreError`` instead of writing into a deleted file. Journalled
        (:func:`deletion_journal`, written first, removed last): a removal a crash interrupts
        is done again when the memory is next opened. Raises ``StoreError`` if anything is
        left afterwards.
        """
        whole = self.agent_root is not None if whole_folder is None else whole_folder
        folder, paths = self.paths.folder, self.paths
        nested = agent_folders(folder, nested=True) if whole else []  # its archive/ is no agent
        if nested:  # the reference framework's 'team/alpha' lives in agents/team/alpha/
            names = ", ".join(str(p.relative_to(folder)) for p in nested[:5])
            raise StoreError(
                f"{folder} holds the memory of other agents too ({names}); removing the folder "
                "would delete theirs: move their folders out first, or delete it by hand"
            )
        if self._lock is not None and self._lock.is_stale():
            self._lock = None
        with self.locked():
            held = self._held_lock()
            held.close_append()
            before = _forget_inventory(paths, whole)
            journal = deletion_journal(paths)
            # Journalled first: a crash from here on is finished at the next opening (the
            # removal done again, :meth:`_recover_deletion`), the journal removed last.
            atomic_replace(journal, json.dumps({"remove": True, "whole_folder": whole}).encode())
            problems: list[str] = []
            targets = [paths.memory_md]
            targets += _forget_archive_targets(paths, whole)
            targets += [paths.compactions, paths.usage, paths.pins, paths.intent]
            targets += _side_files(paths)
            if whole:
                targets += sorted(p for p in folder.iterdir() if p not in (paths.lock, journal))
            for target in [*targets, paths.lock, journal]:
                _forget_remove(target, problems)
            if not whole:
                with contextlib.suppress(OSError):  # only if empty: it may hold other files
                    os.rmdir(paths.archive_dir)
            if whole:
                try:
                    os.rmdir(folder)
                except FileNotFoundError:
                    pass
                except OSError as exc:
                    problems.append(f"{folder}: {exc.strerror}")
                fsync_dir(folder.parent)
            else:
                fsync_dir(folder)
            drop_lock(held)  # this process's later stores must not share the deleted file's lock
            left = _forget_inventory(paths, whole) if folder.is_dir() else []
            if whole and os.path.lexists(folder):
                left = left or [(".", 0)]
            if problems or left:
                raise StoreError(
                    f"forgetting {folder} left {len(left)} file(s) behind "
                    f"({', '.join(name for name, _ in left[:5]) or 'none'}); "
                    f"{'; '.join(problems[:5]) or 'something recreated them'} - stop every "
                    "process that uses this agent and run forget again"
                )
            return [(name, size) for name, size in before]

    def close(self) -> None:
        """Close this process's descriptors for this memory file (they reopen on next use)."""
        if self._lock is not None:
            with self._lock.thread_lock:
                if not self._lock.depth:
                    self._lock.close_append()


def _read_lines(path: Path, problems: list[str] | None = None) -> list[dict[str, Any]]:
    """The JSON objects of a JSON Lines file of the store (none when it does not exist), one
    per line: a line ends at ``b"\\n"`` only (a record's text may hold U+2028, U+0085 ... which
    ``str.splitlines`` would split at). Each line is read by
    :func:`~memorylab.memory._records.read_record_line`, which never raises: a line that is no
    record (cut off by a crash, edited into a JSON array, a number, nested past reading ...) is
    skipped, and a field of the wrong shape (a text where a count is expected, NaN, an integer
    of thousands of digits ...) is left out of its record. Either is reported: logged once per
    process, and described in ``problems`` when a list is given (``"<file> line <n>: ..."``)."""
    try:
        raw = read_bytes(path)
    except FileNotFoundError:
        return []
    out = []
    for number, line in enumerate(raw.split(b"\n"), 1):
        if not line.strip():
            continue
        read = read_record_line(line.decode("utf-8", errors="replace"))
        if read.record is not None:
            out.append(read.record)
        if not read.problems:
            continue
        outcome = "skipped" if read.record is None else "the rest read"
        problem = f"{path.name} line {number}: {', '.join(read.problems)}; {outcome}"
        if problems is not None:
            problems.append(problem)
        reported = (path, number, hashlib.sha256(line).digest())
        if reported not in _REPORTED:
            _REPORTED.add(reported)
            logger.warning("memorylab: %s: %s", path.parent, problem)
    return out


def _read_intent(path: Path) -> dict[str, Any]:
    """The compaction journal (``{"archive": ..., "record": {...}}``), read as a line of the
    JSON Lines files is (:func:`~memorylab.memory._records.read_record_line`: whatever a crash or
    a hand edit left there, never an exception but ``FileNotFoundError`` when there is none);
    ``{}`` when it is unreadable or no object."""
    try:
        data = read_bytes(path)
    except FileNotFoundError:
        raise
    except OSError:
        return {}
    return read_record_line(data.decode("utf-8", errors="replace")).record or {}


def _intent_bytes(archive: str | None, record: Mapping[str, Any]) -> bytes:
    """The compaction journal: the archive and the record to append, redacted as the record
    will be in ``compactions.jsonl`` (:func:`_recordable`), for the journal is on disk too."""
    return json.dumps({"archive": archive, "record": _recordable(record)}, default=str).encode()


_ESCAPED = re.compile("[\x85\u2028\u2029\ud800-\udfff]")
"""What a JSON line keeps escaped though JSON need not: the line ends other readers split text
at (``str.splitlines``, editors) and lone surrogates (no UTF-8 for them); the rest is UTF-8."""


def _recordable(record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` as it may reach disk: every text in it, inside objects and lists too, through
    the redaction rules a ``Conversation`` redacts with by default (:data:`memory.redact.SECRETS
    <memorylab.memory._redact.SECRETS>`, :func:`~memorylab.memory._redact.redact_values`: a value
    with its key as context), so that no key reaches the file through a model string, a
    strategy's settings or an error text; numbers and the identifying fields
    (:data:`~memorylab.memory._records.IDENTIFYING_FIELDS`) stay as they are."""
    return {
        str(key): value if key in IDENTIFYING_FIELDS else redact_values(value, SECRETS, str(key))
        for key, value in record.items()
    }


def _json_line(record: Mapping[str, Any]) -> bytes:
    """``record`` as one line of a JSON Lines file (:data:`_ESCAPED`), ``b"\\n"`` included;
    a value JSON has no type for is written as its text, redacted."""
    text = json.dumps(record, ensure_ascii=False, sort_keys=True,
                      default=lambda value: SECRETS(str(value)))  # fmt: skip
    return (_ESCAPED.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n").encode("utf-8")


def _write_block(fd: int, data: bytes, path: Path) -> None:
    """One ``write`` of ``data`` (whole blocks) to the end of ``fd``, the lock held; a short
    write (disk full) is cut back first, so the file never keeps part of a block.

    The blocks start a block of their own whatever the file ends with (:func:`_settle_tail`):
    a torn block is cut off first and kept aside, a separator an editor trimmed or padded is
    written again."""
    data = _settle_tail(fd, path) + data
    written = os.write(fd, data)
    if written != len(data):
        with contextlib.suppress(OSError):
            os.ftruncate(fd, os.fstat(fd).st_size - written)
        raise StoreError(
            f"cannot append to {path}: only {written} of {len(data)} bytes could be written "
            "(disk or quota full?); nothing was kept: free space and try again"
        )


def _file_id(info: os.stat_result) -> str:
    """A file's identity as a record names it (``"<st_dev>:<st_ino>"``)."""
    return f"{info.st_dev}:{info.st_ino}"


def _replaced_name(memory_name: str, since_ns: int, read: int) -> str:
    """The name a replaced MEMORY.md is kept under for late writes (:meth:`MemoryStore.
    _keep_replaced`): when it was replaced and how much of it is accounted for (the rewrite
    read it, or carried it over since)."""
    return f".{memory_name}.replaced-{since_ns}.{read}"


def _parse_replaced(memory_name: str, name: str) -> tuple[int, int] | None:
    """``(since_ns, read)`` of a name :func:`_replaced_name` made; None for any other name."""
    prefix = f".{memory_name}.replaced-"
    if not name.startswith(prefix):
        return None
    since, _, read = name[len(prefix) :].partition(".")
    if not (since.isascii() and since.isdigit() and read.isascii() and read.isdigit()):
        return None
    return int(since), int(read)


def _block_set(data: bytes) -> set[bytes]:
    """The blocks of a memory file (after its header) or of a run of blocks, each without its
    separator: the same cut of a file and of what was appended to it gives the same keys, so
    the set answers "is this block in that file" at once (linear, where a search of the file
    for each block was blocks x file size)."""
    return {key for key in data[_blocks_start(data) :].split(_SEPARATOR) if key}


_WHOLE_END = b"\n\n---\n\n"
_TORN_SETTLE_S = 0.05
"""How long a torn end must stay as it is before it is cut: a writer that takes no lock (the
reference framework) may be in the middle of its write."""


def _settle_tail(fd: int, path: Path, *, cut_only: bool = False) -> bytes:
    """Make the file ``fd`` (MEMORY.md at ``path``, the lock held) end on a whole block, and
    return what to write before the next block (:func:`memorylab.memory._format.append_point`
    decides both, as the parser reads the file).

    A torn block at the end (a write that a SIGKILL stopped at a page boundary, or a power
    loss cut: never acknowledged) is copied to ``<name>.torn-<UTC time>Z`` beside the file
    (0o600, fsync'd; kept for the user to read or delete), then cut off, and a warning is
    logged; loaders report the file. Blank space after the last separator (an editor's) is
    cut only when a block follows (``cut_only=False``). Costs one ``pread`` of 7 bytes when
    the file ends as memorylab writes it."""
    for _ in range(20):
        size = os.fstat(fd).st_size
        if size == 0 or (size >= len(_WHOLE_END) and os.pread(fd, 7, size - 7) == _WHOLE_END):
            return b""
        data = read_fd(fd)
        text = data.decode("utf-8", errors="surrogateescape")
        point = fmt.append_point(text)
        if point.torn == len(text):
            break
        time.sleep(_TORN_SETTLE_S)  # a lock-less writer may still be writing: look again
        if os.fstat(fd).st_size != len(data):
            continue
        torn = text[point.torn :].encode("utf-8", errors="surrogateescape")
        kept_at = _keep_torn(path, torn)
        os.ftruncate(fd, len(data) - len(torn))
        os.fsync(fd)
        logger.warning(
            "memorylab: %s ended in a torn block (%d bytes of a write that was cut short, "
            "never acknowledged: a killed process or a power loss); it was cut off and kept "
            "in %s",
            path,
            len(torn),
            kept_at.name,
        )
        data = data[: len(data) - len(torn)]
        text = text[: point.torn]
        break
    if cut_only:
        return b""
    if point.keep < point.torn:  # blank space after the last separator: written again
        os.ftruncate(fd, len(data) - len(text[point.keep :].encode("utf-8", "surrogateescape")))
    return point.pad.encode()


def _keep_torn(path: Path, torn: bytes) -> Path:
    """Keep the torn end of ``path`` in a private ``<name>.torn-<UTC time>Z[_<n>]`` file beside
    it (the same bytes kept already: that file)."""
    folder, prefix = path.parent, f"{path.name}.torn-"
    for earlier in sorted(folder / name for name in os.listdir(folder) if name.startswith(prefix)):
        with contextlib.suppress(OSError):
            if os.lstat(earlier).st_size == len(torn) and read_bytes(earlier) == torn:
                return earlier  # a crash between keeping it and the cut: kept already
    stamp = datetime.now(UTC).strftime(fmt.ARCHIVE_TIME_FORMAT)
    attempt = 1
    while True:
        target = folder / f"{prefix}{stamp}Z{'' if attempt == 1 else f'_{attempt}'}"
        try:
            write_new_file(target, torn)
        except FileExistsError:
            attempt += 1
            continue
        fsync_dir(folder)
        return target


def require_kind(path: Path, kind: str) -> None:
    """Refuse (before anything is written) a ``path`` that exists and is not a regular file
    (``kind="file"``) or a real folder (``"folder"``)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not (stat.S_ISREG(mode) if kind == "file" else stat.S_ISDIR(mode)):
        raise UnsafePath(
            f"{path} should be a {'regular file' if kind == 'file' else 'folder'} but is a "
            f"{_kind_of(mode)}; nothing was written: move it aside and try again"
        )


def _kind_of(mode: int) -> str:
    for test, name in (
        (stat.S_ISLNK, "symlink"),
        (stat.S_ISDIR, "folder"),
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISREG, "file"),
    ):
        if test(mode):
            return name
    return "device"  # fmt: skip


def _blocks_start(data: bytes) -> int:
    """Where the blocks of a memory file start: after its header (``# Agent Memory`` ... up to
    the blank line after ``## Interaction Log``), or at 0 in a file without one."""
    if not data.startswith(fmt.TITLE_LINE.encode()):
        return 0
    marker = b"\n" + fmt.LOG_LINE.encode() + b"\n"
    end = data.find(marker)
    if end < 0:
        return len(data)  # a header without its log line: nothing after it is a block
    end += len(marker)
    return end + 1 if data[end : end + 1] == b"\n" else end


def _continues_of(data: bytes) -> str | None:
    head = data[:4096].decode("utf-8", errors="replace")
    for line in head.split("\n"):
        if line.startswith("**Continues:** "):
            return line[len("**Continues:** ") :].rstrip("\r")
        if line.startswith("### "):
            break
    return None


def deletion_journal(paths: MemoryPaths) -> Path:
    """The journal of a deletion in flight (``.MEMORY.md.deletion.json`` beside MEMORY.md):
    written before its first unlink, removed after its last step, read by recovery
    (:meth:`MemoryStore._recover_deletion`)."""
    return paths.folder / f".{paths.memory_md.name}.deletion.json"


def _forget_archive_targets(paths: MemoryPaths, whole: bool) -> list[Path]:
    archive_dir = paths.archive_dir
    if not archive_dir.is_dir() or archive_dir.is_symlink():
        return [archive_dir] if archive_dir.is_symlink() else []
    if whole:
        return [archive_dir]
    return [
        entry
        for entry in sorted(archive_dir.iterdir())
        if fmt.parse_archive_name(entry.name)
        or entry.name.startswith(".history_")
        or _recall_index.is_index_file(entry.name)  # the index of these archives' messages
    ]


def _side_files(paths: MemoryPaths) -> list[Path]:
    """The store's own files beside MEMORY.md that carry a variable part in their names: the
    temp files of its atomic writes (MEMORY.md, the compaction and deletion journals),
    recovery's torn tails, and the files compactions replaced, kept for late writes
    (:meth:`MemoryStore._keep_replaced`). What forget removes and lists, from one list."""
    folder, name = paths.folder, paths.memory_md.name
    journal = deletion_journal(paths).name
    return [
        *folder.glob(f".{name}.tmp-*"),
        *folder.glob(f"..{name}.intent.json.tmp-*"),
        *folder.glob(f".{journal}.tmp-*"),
        *folder.glob(f"{name}.torn-*"),
        *folder.glob(f".{name}.replaced-*"),
    ]


def _forget_inventory(paths: MemoryPaths, whole: bool) -> list[tuple[str, int]]:
    """``(relative path, size)`` of the files forget removes (or left behind)."""
    folder = paths.folder
    found: list[tuple[str, int]] = []
    if whole:
        for top, dirs, files in os.walk(folder):  # does not follow symlinked folders
            for name in sorted(files) + sorted(d for d in dirs if os.path.islink(Path(top, d))):
                path = Path(top, name)
                with contextlib.suppress(FileNotFoundError):
                    found.append((path.relative_to(folder).as_posix(), os.lstat(path).st_size))
        return found
    own = [paths.memory_md, paths.compactions, paths.usage, paths.pins, paths.intent, paths.lock]
    own += [deletion_journal(paths), *_side_files(paths)]
    own += [p for p in _forget_archive_targets(paths, False) if p != paths.archive_dir]
    for path in own:
        with contextlib.suppress(FileNotFoundError):
            found.append((path.relative_to(folder).as_posix(), os.lstat(path).st_size))
    return found


def _forget_remove(path: Path, problems: list[str]) -> None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    try:
        if stat.S_ISDIR(info.st_mode):
            shutil.rmtree(path)  # never follows symlinks
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        problems.append(f"{path}: {exc.strerror or exc}")


@overload
def read_memory(
    path: str | os.PathLike[str], *, strict: Literal[True] = True
) -> MemoryDocument: ...


@overload
def read_memory(path: str | os.PathLike[str], *, strict: Literal[False]) -> fmt.ParseResult: ...


@overload
def read_memory(
    path: str | os.PathLike[str], *, strict: bool
) -> MemoryDocument | fmt.ParseResult: ...


def read_memory(
    path: str | os.PathLike[str], *, strict: bool = True
) -> MemoryDocument | fmt.ParseResult:
    """Read and parse a MEMORY.md or archive file (``strict`` as in :func:`parse_memory`)."""
    parsed = read_parsed(path, strict=strict)
    return parsed.document() if strict else fmt.ParseResult(parsed.document(), parsed.problems)


def read_parsed(path: str | os.PathLike[str], *, strict: bool = True) -> fmt.ParsedFile:
    """:func:`read_memory` with the blocks as columns (:func:`memorylab.memory._format.parse_file`:
    no :class:`Message` made, what the loaders read); the problems are in ``.problems``."""
    path = Path(path)
    try:
        handed = [path.read_bytes()]
    except FileNotFoundError:
        raise StoreError(f"{path} does not exist") from None
    except IsADirectoryError:
        raise StoreError(f"{path} is a folder; give the MEMORY.md or archive file in it") from None
    # The bytes are handed over, not kept here: the parser lets them go once it has cut the
    # blocks out of them, so the file, its text and all the columns are never held at once.
    return fmt.parse_file(handed.pop(), strict=strict, path=str(path))


# ---------------------------------------------------------------------------------------------
# Readers that take no lock


def read_generation(paths: MemoryPaths) -> tuple[object, ...]:
    """What identifies the generation of one memory file's files, for a reader that takes no
    lock (the loaders, :mod:`memorylab.analysis._sources`): equal values read before and after
    reading the files mean that no writer's step came in between, so the files read belong to
    one generation.

    Every step of a rewrite (compaction or edit: the module docstring's steps 2-6), every
    deletion (retention, purge, forget) and the creation of MEMORY.md changes it: the journal
    written or removed (its identity), an archive linked or deleted (``archive/``'s names),
    MEMORY.md renamed into place or created (its identity), a record appended
    (``compactions.jsonl``'s size). An append to MEMORY.md does not: a reader that reads
    MEMORY.md last sees every block appended before it began. Metadata only (``lstat`` and one
    listing), never the lock, so a reader never stalls a writer and needs no write permission.
    """

    def identity(path: Path, *more: str) -> tuple[int, ...] | None:
        try:
            info = os.lstat(path)
        except OSError:
            return None
        return (info.st_dev, info.st_ino, *(getattr(info, name) for name in more))

    try:
        archives: frozenset[str] | None = frozenset(
            name for name in os.listdir(paths.archive_dir) if not name.startswith(".")
        )  # temp files (dot names) come and go inside one step: the link is the step
    except OSError:
        archives = None
    return (
        identity(paths.memory_md),
        identity(paths.intent, "st_size", "st_mtime_ns"),
        identity(paths.compactions, "st_size"),
        archives,
    )


def committed_record(paths: MemoryPaths) -> dict[str, Any] | None:
    """The record of a rewrite that has committed (MEMORY.md names its archive) while its
    journal is still there: ``compactions.jsonl`` may not hold it yet (steps 5-6 of the module
    docstring, or a crash after the rename: recovery appends this record). ``None`` without a
    journal, or while its rewrite has not committed (:meth:`MemoryStore.pending_archive`).
    Reads only, without the lock."""
    try:
        intent = _read_intent(paths.intent)
        name = intent.get("archive")
        if not name or _continues_of(read_bytes(paths.memory_md)) != name:
            return None
    except OSError:
        return None
    return check_record(intent.get("record")).record or {"archive": str(name)}
