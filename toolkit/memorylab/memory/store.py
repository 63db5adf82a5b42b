"""The only module that writes memory files.

Layout of one agent (``<workspace>/agents/<agent_name>/``)::

    MEMORY.md                 active log: header + blocks, appended one write per message
    archive/history_<ts>.md   what a compaction summarized, written once, never overwritten
    compactions.jsonl         one JSON line per compaction (and per retention deletion)
    .MEMORY.md.lock           cross-process lock (a sidecar: it survives MEMORY.md being
                              replaced) whose first 8 bytes, memory-mapped, count generations
    .MEMORY.md.intent.json    present only while a compaction is in flight (its journal)

Appends: under the agent lock (a per-process ``threading.RLock`` plus ``flock`` on the sidecar),
one ``os.write`` of the whole block to an ``O_APPEND`` descriptor kept open; ``durable=True`` adds
an ``fsync``. Whoever replaces or re-creates MEMORY.md bumps the generation first, so appenders
reopen it. A kill can never leave half a block (the write is one system call); a power loss can,
and the parser reports such a block as torn. Deleting MEMORY.md by hand while a process still
writes to it loses that process's later messages (they go to the deleted file): stop the agent
first, or use memorylab's own deletion, which bumps the generation.

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
   a crash after it: recovery keeps the archive and finishes steps 5-6;
5. append the compaction record to ``compactions.jsonl`` (fsync);
6. remove the journal.

Recovery runs under the lock in :meth:`MemoryStore.ensure` and before every compaction.
Folders are created 0o700 and files 0o600. Agent names must be one safe path component, and
nothing is created through a symlink.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, overload

from memorylab.errors import (
    CompactionConflict,
    InvalidSetting,
    MemoryFormatError,
    StoreError,
    UnsafePath,
)
from memorylab.memory import format as fmt
from memorylab.memory._fsutil import (
    CLOEXEC,
    DIR_MODE,
    FILE_MODE,
    NOFOLLOW,
    atomic_replace,
    encode_utf8,
    fsync_dir,
    read_bytes,
    safe_mkdir,
    temp_name,
    write_all,
    write_new_file,
)
from memorylab.memory._locking import AgentLock, drop_lock, lock_for
from memorylab.memory.paths import MemoryPaths, agent_paths, validate_agent_name
from memorylab.memory.records import MemoryDocument, Message
from memorylab.memory.retention import RetentionPolicy

__all__ = [
    "CompactionResult",
    "MemoryPaths",
    "MemoryStore",
    "Snapshot",
    "agent_paths",
    "apply_retention",
    "delete_archives",
    "read_memory",
    "remove_memory",
    "validate_agent_name",
]


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
    archive: str
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

    @classmethod
    def for_agent(
        cls,
        agent_name: str,
        workspace_dir: str | os.PathLike[str] | None = None,
        **options: Any,
    ) -> MemoryStore:
        paths = agent_paths(agent_name, workspace_dir)
        return cls(paths.memory_md, agent_root=paths.folder.parent, **options)

    @property
    def path(self) -> Path:
        return self.paths.memory_md

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
            if exc.errno == errno.ELOOP:
                raise UnsafePath(f"{self.path} is a symlink; refusing to read through it") from exc
            raise StoreError(f"cannot read {self.path}: {exc.strerror}") from exc

    def read_text(self) -> str:
        return self.read_bytes().decode("utf-8", errors="replace")

    def snapshot(self) -> Snapshot:
        with self.locked():
            return Snapshot(self.read_bytes())

    # -- writing ------------------------------------------------------------------------------

    def ensure(self, conversation_name: str, created: datetime) -> bool:
        """Create MEMORY.md with a fresh header if it does not exist; finish or roll back a
        compaction a crash interrupted. Returns True if the file was created now."""
        self._prepare_folders()  # the folder may have been removed since the last call
        if self._lock is not None and self._lock.is_stale():
            self._lock = None  # deleted (forget): the re-created memory gets a new lock
        with self.locked():
            self._recover()
            try:
                info = os.lstat(self.path)
            except FileNotFoundError:
                header = fmt.render_header(conversation_name, created)
                # Descriptors to a deleted MEMORY.md are stale. Bumped before the file appears:
                # a crash in between only makes appenders reopen the same file.
                self._held_lock().bump_generation()
                atomic_replace(self.path, encode_utf8(header))
                return True
            if not stat.S_ISREG(info.st_mode):
                raise UnsafePath(f"{self.path} is not a regular file (a symlink?)")
            self._close_torn_tail(info.st_size)
            return False

    def _close_torn_tail(self, size: int) -> None:
        # After a power loss the file may end mid-line; start the next block on a new line so
        # the parser can tell the torn block from the next one.
        if size == 0:
            return
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | NOFOLLOW | CLOEXEC)
        try:
            if os.pread(fd, 1, size - 1) != b"\n":
                write_all(fd, b"\n")
                os.fsync(fd)
        finally:
            os.close(fd)

    def _agent_lock(self) -> AgentLock:
        lock = self._lock
        if lock is None:  # first use: make (and check) the folders once, not per append
            self._prepare_folders()
            lock = self._lock = lock_for(self.paths.lock)
        return lock

    def append(self, text: str) -> None:
        """Append rendered blocks with one write, under the lock."""
        data = encode_utf8(text)
        self._agent_lock().append(self.paths.memory_md, data, self.durable, self.lock_timeout)

    def append_record(self, record: dict[str, Any]) -> None:
        """Append one JSON line to ``compactions.jsonl`` (fsync'd)."""
        line = json.dumps(record, ensure_ascii=False, sort_keys=True, default=str) + "\n"
        with self.locked():
            fd = os.open(
                self.paths.compactions,
                os.O_WRONLY | os.O_APPEND | os.O_CREAT | NOFOLLOW | CLOEXEC,
                FILE_MODE,
            )
            try:
                write_all(fd, line.encode("utf-8"))
                os.fsync(fd)
            finally:
                os.close(fd)

    def records(self) -> list[dict[str, Any]]:
        """The lines of ``compactions.jsonl`` (a torn last line is skipped)."""
        try:
            raw = read_bytes(self.paths.compactions).decode("utf-8", errors="replace")
        except FileNotFoundError:
            return []
        out = []
        for line in raw.splitlines():
            with contextlib.suppress(json.JSONDecodeError):
                out.append(json.loads(line))
        return out

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
        appended after the snapshot (the steps and their crash behaviour: module docstring)."""
        summary_block = fmt.render_block(summary)
        with self.locked():
            self._recover()
            current = self.read_bytes()
            if not current.startswith(snapshot.data) or not snapshot.data:
                raise CompactionConflict(
                    f"{self.path} changed since the snapshot (compacted or rewritten by another "
                    "process); nothing was written — take a new snapshot and summarize again"
                )
            tail = current[len(snapshot.data) :].decode("utf-8", errors="strict")
            archived_doc, _ = fmt.parse(snapshot.text, strict=False)
            carried_doc, _ = fmt.parse(
                "# Agent Memory\n\n## Interaction Log\n\n" + tail, strict=False
            )
            self.paths.archive_dir.mkdir(exist_ok=True, mode=DIR_MODE)
            safe_mkdir(self.paths.archive_dir, parents_ok=False)
            name = self._free_archive_name(now)
            result = CompactionResult(
                archive=name,
                messages_archived=len(archived_doc.messages),
                carried_over=len(carried_doc.messages),
                carried_text=tail,
            )
            line = record(result) if record is not None else {"archive": name}
            intent = {"archive": name, "record": line}
            atomic_replace(self.paths.intent, json.dumps(intent, default=str).encode("utf-8"))
            name = self._write_archive(snapshot.data, now, name)
            if name != result.archive:  # lost a race for the name with a foreign writer
                result = CompactionResult(name, result.messages_archived, result.carried_over, tail)
                line = record(result) if record is not None else {"archive": name}
                atomic_replace(
                    self.paths.intent,
                    json.dumps({"archive": name, "record": line}, default=str).encode("utf-8"),
                )
            header = fmt.render_header(conversation_name, now, continues=name)
            # Every appender must reopen MEMORY.md; bumped first so that a crash right after the
            # replace cannot leave a live process writing to the unlinked old file.
            self._held_lock().bump_generation()
            atomic_replace(self.path, encode_utf8(header + summary_block) + tail.encode("utf-8"))
            self.append_record(line)
            os.unlink(self.paths.intent)
            fsync_dir(self.paths.folder)
            return result

    def _free_archive_name(self, now: datetime) -> str:
        taken = {p.name for p in self.paths.archive_dir.iterdir()}
        attempt = 1
        while fmt.archive_name(now, attempt) in taken:
            attempt += 1
        return fmt.archive_name(now, attempt)

    def _write_archive(self, data: bytes, now: datetime, name: str) -> str:
        archive_dir = self.paths.archive_dir
        tmp = temp_name(archive_dir / name)
        write_new_file(tmp, data)
        try:
            attempt = fmt.parse_archive_name(name)[1]  # type: ignore[index]
            while True:
                try:
                    os.link(tmp, archive_dir / name)  # never replaces an existing file
                    break
                except FileExistsError:
                    attempt += 1
                    name = fmt.archive_name(now, attempt)
        finally:
            os.unlink(tmp)
        fsync_dir(archive_dir)
        return name

    # -- recovery -----------------------------------------------------------------------------

    def _recover(self) -> None:
        """Finish or roll back a compaction that a crash interrupted (caller holds the lock)."""
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
            intent = json.loads(read_bytes(self.paths.intent))
        except FileNotFoundError:
            return
        except (OSError, ValueError):
            intent = {}
        name = str(intent.get("archive", ""))
        archive = self.paths.archive_dir / name
        current = self.read_bytes()
        continues = _continues_of(current)
        if name and continues == name:
            if not any(r.get("archive") == name for r in self.records()[-50:]):
                self.append_record(dict(intent.get("record") or {"archive": name}))
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
            intent = json.loads(read_bytes(self.paths.intent))
        except (OSError, ValueError):
            return None
        name = intent.get("archive")
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

    def close(self) -> None:
        """Close this process's descriptors for this memory file (they reopen on next use)."""
        if self._lock is not None:
            with self._lock.thread_lock:
                if not self._lock.depth:
                    self._lock.close_append()


def _continues_of(data: bytes) -> str | None:
    head = data[:4096].decode("utf-8", errors="replace")
    for line in head.split("\n"):
        if line.startswith("**Continues:** "):
            return line[len("**Continues:** ") :].rstrip("\r")
        if line.startswith("### "):
            break
    return None


# ---------------------------------------------------------------------------------------------
# Deletion: retention, purge and forget, under the agent lock (the privacy operations)


def delete_archives(
    store: MemoryStore,
    names: Iterable[str],
    *,
    reason: str,
    kind: str = "retention",
    now: datetime | None = None,
    agent: str | None = None,
) -> list[str]:
    """Delete the named archives for good and record each deletion in ``compactions.jsonl``
    (``kind``, ``archive``, ``time``, ``reason``, ``agent``: never content), under the lock.

    Only archive names (``history_<ts>[_n].md``) are accepted; archives already gone are
    skipped. Returns the names deleted. The record is written after the unlink, so it
    states a fact (a crash in between leaves a deletion without its record).
    """
    wanted = list(dict.fromkeys(names))
    for name in wanted:
        if fmt.parse_archive_name(name) is None:
            raise InvalidSetting(f"{name!r} is not an archive name (history_<time>.md)")
    when = (now or datetime.now(UTC)).isoformat(timespec="microseconds")
    deleted: list[str] = []
    with store.locked():
        store._recover()  # an interrupted compaction is settled before anything goes
        for name in wanted:
            try:
                os.unlink(store.paths.archive_dir / name)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise StoreError(f"cannot delete archive {name}: {exc.strerror}") from exc
            deleted.append(name)
        if deleted:
            fsync_dir(store.paths.archive_dir)
        for name in deleted:
            record = {"kind": kind, "time": when, "archive": name, "reason": reason}
            store.append_record({**record, "agent": agent})
    return deleted


def apply_retention(
    store: MemoryStore,
    policy: RetentionPolicy,
    *,
    now: datetime | None = None,
    agent: str | None = None,
) -> list[str]:
    """Delete (and record) the archives ``policy`` does not keep at ``now``; their names."""
    when = now or datetime.now(UTC)
    deleted: list[str] = []
    with store.locked():
        store._recover()
        for doomed in policy.select([p.name for p in store.archives_oldest_first()], when):
            deleted += delete_archives(
                store, [doomed.name], reason=doomed.reason, now=when, agent=agent
            )
    return deleted


def remove_memory(store: MemoryStore, *, whole_folder: bool | None = None) -> list[tuple[str, int]]:
    """Delete this memory for good, under the lock; return ``(path, bytes)`` of each file
    removed (paths relative to the folder).

    ``whole_folder`` (default: True for a store made by :meth:`for_agent`) removes every
    entry of the agent folder (caches included) and the folder itself; otherwise only this
    memory file's own files go: MEMORY.md, ``archive/``'s archives, ``compactions.jsonl``,
    the journal, temp files and the lock file. The generation is bumped first, so a process
    that still appends reopens MEMORY.md, finds it gone and gets ``StoreError`` instead of
    writing into a deleted file. Raises ``StoreError`` if anything is left afterwards.
    """
    whole = store.agent_root is not None if whole_folder is None else whole_folder
    folder, paths = store.paths.folder, store.paths
    if store._lock is not None and store._lock.is_stale():
        store._lock = None
    with store.locked():
        held = store._held_lock()
        held.bump_generation()
        held.close_append()
        before = _forget_inventory(paths, whole)
        problems: list[str] = []
        targets = [paths.memory_md]
        targets += _forget_archive_targets(paths, whole)
        targets += [paths.compactions, paths.intent]
        targets += [*folder.glob(f".{paths.memory_md.name}.tmp-*")]
        targets += [*folder.glob(f"..{paths.memory_md.name}.intent.json.tmp-*")]
        if whole:
            targets += sorted(p for p in folder.iterdir() if p != paths.lock)
        for target in [*targets, paths.lock]:
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


def _forget_archive_targets(paths: MemoryPaths, whole: bool) -> list[Path]:
    archive_dir = paths.archive_dir
    if not archive_dir.is_dir() or archive_dir.is_symlink():
        return [archive_dir] if archive_dir.is_symlink() else []
    if whole:
        return [archive_dir]
    return [
        entry
        for entry in sorted(archive_dir.iterdir())
        if fmt.parse_archive_name(entry.name) or entry.name.startswith(".history_")
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
    own = [paths.memory_md, paths.compactions, paths.intent, paths.lock]
    own += [*folder.glob(f".{paths.memory_md.name}.tmp-*")]
    own += [*folder.glob(f"..{paths.memory_md.name}.intent.json.tmp-*")]
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
def read_memory(
    path: str | os.PathLike[str], *, strict: Literal[False]
) -> tuple[MemoryDocument, list[fmt.FormatProblem]]: ...


@overload
def read_memory(
    path: str | os.PathLike[str], *, strict: bool
) -> MemoryDocument | tuple[MemoryDocument, list[fmt.FormatProblem]]: ...


def read_memory(
    path: str | os.PathLike[str], *, strict: bool = True
) -> MemoryDocument | tuple[MemoryDocument, list[fmt.FormatProblem]]:
    """Read and parse a MEMORY.md or archive file (``strict`` as in :func:`parse_memory`)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise StoreError(f"{path} does not exist") from None
    except IsADirectoryError:
        raise StoreError(f"{path} is a folder; give the MEMORY.md or archive file in it") from None
    try:
        text = data.decode("utf-8")
        decode_problem = None
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        decode_problem = fmt.FormatProblem(line, "encoding", f"not UTF-8 at byte {exc.start}")
        if strict:
            raise MemoryFormatError(
                f"not UTF-8 text (byte {exc.start}); is it a binary file? Use strict=False to "
                "salvage the readable parts",
                path=path,
                line=line,
                problems=[decode_problem],
            ) from None
        text = data.decode("utf-8", errors="replace")
    if strict:
        return fmt.parse(text, strict=True, path=str(path))
    doc, problems = fmt.parse(text, strict=False, path=str(path))
    if decode_problem is not None:
        problems.insert(0, decode_problem)
    return doc, problems
