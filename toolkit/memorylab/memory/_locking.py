"""The agent lock of one memory file, per process, and the append state it guards.

``AgentLock`` is a ``threading.RLock`` plus ``flock`` on a sidecar lock file, one object per
memory file per process, shared by every store on that file. The sidecar (not MEMORY.md itself)
is locked because compaction replaces MEMORY.md, and a lock on a replaced file no longer excludes
anyone. Under the lock, the store keeps here the descriptor it appends through, which file that
descriptor is (device and inode, checked against the path before every append: another process,
an editor or the reference framework may have replaced the file), the blocks this process
appended to it (so that blocks a lock-less replacer dropped can be found and carried over), and
where ``compactions.jsonl`` ended when it began appending there (a memorylab rewrite records the
file it replaced, and the records after that mark are the ones that can name it).

The cache of locks holds them weakly: a lock lives as long as a store holds it, and when the
last one goes its descriptors close (the lock file's, the append descriptor, a replaced file's),
so a process that opens thousands of agents keeps open only the ones it still uses. What the
cache shares is shared by the stores alive together (one flock, one re-entrant thread lock, the
append and late-write state); with none left, this process is to that memory what a process
that exited is: whatever a lock-less writer writes late to a replaced file is carried over by
the next holder of the lock (the file is kept by name beside MEMORY.md), this process's next
store included, as recovery on opening does.
Private to :mod:`memorylab.memory._store`.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memorylab.errors import LockTimeout, StoreError
from memorylab.memory._fsutil import open_regular, store_error

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: fall back to filelock
    fcntl = None  # type: ignore[assignment]


@dataclass(frozen=True, slots=True)
class Mark:
    """When this process began appending to a MEMORY.md: ``records`` is ``compactions.jsonl``'s
    ``(st_dev, st_ino)`` (None: there was none) and ``offset`` its size then; ``since_ns`` the
    wall-clock time."""

    records: tuple[int, int] | None
    offset: int
    since_ns: int


class Descriptors:
    """The descriptors an ``AgentLock`` owns, kept apart from it so that they can be closed once
    it is gone: the finalizer that closes them must not hold the lock itself."""

    __slots__ = ("append_fd", "fd", "late")

    def __init__(self) -> None:
        self.fd: int | None = None  # the lock file's
        self.append_fd: int | None = None
        self.late: tuple[float, int | None, int] | None = None

    def close(self) -> None:
        for fd in (self.fd, self.append_fd, self.late[1] if self.late else None):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.fd = self.append_fd = self.late = None


class AgentLock:
    __slots__ = (
        "__weakref__", "append_id", "append_mark", "appended", "depth", "descriptors",
        "fallback", "path", "thread_lock",
    )  # fmt: skip

    def __init__(self, path: Path) -> None:
        self.path = path
        self.thread_lock = threading.RLock()
        self.depth = 0
        self.descriptors = Descriptors()
        # The cache holds locks weakly: once no store holds this one, it is dropped and its
        # descriptors close (the flock with them). A finalizer, not __del__: it runs after the
        # cache's reference is cleared, so no other thread can find this lock half closed. Not
        # at exit: a daemon thread may still be appending, and the system closes them anyway.
        weakref.finalize(self, self.descriptors.close).atexit = False
        self.fallback: Any = None
        self.append_id: tuple[int, int] | None = None  # (st_dev, st_ino) of append_fd's file
        self.appended: list[bytes] = []  # the blocks this process appended there
        # Where append_fd's file began for this process: compactions.jsonl's identity and size
        # (the records written later are the ones that can name its replacement) and the time
        # (archives written later are the ones that can hold its blocks).
        self.append_mark: Mark | None = None

    @property
    def fd(self) -> int | None:
        """The lock file's descriptor (None: not opened yet)."""
        return self.descriptors.fd

    @fd.setter
    def fd(self, fd: int | None) -> None:
        self.descriptors.fd = fd

    @property
    def append_fd(self) -> int | None:
        """The descriptor this process appends to MEMORY.md through (None: not opened yet)."""
        return self.descriptors.append_fd

    @append_fd.setter
    def append_fd(self, fd: int | None) -> None:
        self.descriptors.append_fd = fd

    @property
    def late(self) -> tuple[float, int | None, int] | None:
        """After a compaction: until when (``time.monotonic()``) appends look for late writes
        to the file it replaced (kept by name beside MEMORY.md, so recovery finds it too), and,
        where it could not be named (no hard links), a descriptor of it and the bytes carried."""
        return self.descriptors.late

    @late.setter
    def late(self, late: tuple[float, int | None, int] | None) -> None:
        self.descriptors.late = late

    def _open(self) -> int:
        if self.fd is None:
            try:
                self.fd = open_regular(self.path, os.O_RDWR | os.O_CREAT)
            except OSError as exc:
                raise store_error(exc, self.path, "open the lock file") from exc
        return self.fd

    # -- locking ----------------------------------------------------------------------------------

    def acquire(self, timeout: float) -> None:
        if not self.thread_lock.acquire(True, timeout):
            raise LockTimeout(f"another thread held {self.path} for more than {timeout:g}s")
        if self.depth:
            self.depth += 1
            return
        try:
            self._lock_os(timeout)
        except BaseException:
            self.thread_lock.release()
            raise
        self.depth = 1

    def release(self) -> None:
        self.depth -= 1
        if self.depth == 0:
            self._unlock_os()
        self.thread_lock.release()

    def _lock_os(self, timeout: float) -> None:
        if fcntl is None:  # pragma: no cover - Windows
            import filelock

            self._open()
            self.fallback = self.fallback or filelock.FileLock(str(self.path) + ".win")
            try:
                self.fallback.acquire(timeout=timeout)
            except filelock.Timeout as exc:
                raise LockTimeout(f"{self.path} stayed locked for {timeout:g}s") from exc
            return
        fd = self.fd if self.fd is not None else self._open()
        # Contended: poll with a short, growing sleep (from 0.1 ms): filelock's fixed 50 ms is
        # far too coarse when several writers take turns per message.
        deadline = None
        pause = 0.0001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                deadline = deadline or time.monotonic() + timeout
                if time.monotonic() >= deadline:
                    raise LockTimeout(
                        f"another process held {self.path} for more than {timeout:g}s; if no "
                        "memorylab process is running on this agent, the lock is stale only if "
                        "the filesystem does not release flock locks (e.g. some NFS setups)"
                    ) from None
                time.sleep(pause)
                pause = min(pause * 2, 0.005)

    def _unlock_os(self) -> None:
        if fcntl is None:  # pragma: no cover - Windows
            self.fallback.release()
        else:
            fcntl.flock(self.fd, fcntl.LOCK_UN)  # type: ignore[arg-type]

    # -- housekeeping -----------------------------------------------------------------------------

    def is_stale(self) -> bool:
        """Whether the lock file was deleted or replaced since this object opened it: a lock on
        a deleted file excludes nobody who opens the new one, and whoever deleted it (forget,
        purge) deleted the memory it guarded."""
        fd = self.fd
        if fd is None:
            return False  # not opened yet: it opens whatever is there
        try:
            now, mine = os.stat(self.path, follow_symlinks=False), os.fstat(fd)
        except OSError:
            return True
        return (now.st_ino, now.st_dev) != (mine.st_ino, mine.st_dev)

    def check(self) -> None:
        """Raise ``StoreError`` if the memory this lock guards was deleted (call with the lock
        held, before writing to a file that is not the one written last). Without it a writer
        whose agent was forgotten would reopen MEMORY.md by path and write into a re-created
        agent's fresh file without holding that file's lock: resurrecting what was forgotten."""
        if self.is_stale():
            raise StoreError(
                f"the memory guarded by {self.path} was deleted (memorylab forget or purge) or "
                "its lock file replaced since this process opened it; nothing was written. "
                "Create a new Conversation (or MemoryStore) to start a fresh memory"
            )

    def close_append(self) -> None:
        if self.append_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.append_fd)
        self.append_fd, self.append_id, self.appended, self.append_mark = None, None, [], None

    def close_late(self) -> None:
        if self.late is not None and self.late[1] is not None:
            with contextlib.suppress(OSError):
                os.close(self.late[1])
        self.late = None


# Weak: the stores hold their lock (a store keeps it from its first use to its end), the cache
# only finds the one they share; a lock no store holds is dropped and its descriptors closed.
_LOCKS: weakref.WeakValueDictionary[str, AgentLock] = weakref.WeakValueDictionary()
_LOCKS_GUARD = threading.Lock()


def lock_for(path: Path) -> AgentLock:
    """This process's lock for ``path``, shared by every store that holds it now; a new one
    when none does, or when the cached one's file was deleted (the stores that still hold the
    old object stay stale and get ``StoreError``). The caller keeps it alive by holding it."""
    key = os.path.abspath(path)
    with _LOCKS_GUARD:
        lock = _LOCKS.get(key)
        if lock is None or lock.is_stale():
            lock = _LOCKS[key] = AgentLock(Path(key))
        return lock


def drop_lock(lock: AgentLock) -> None:
    """Forget ``lock`` (its memory was deleted): this process's next store opens a fresh one."""
    with _LOCKS_GUARD:
        if _LOCKS.get(str(lock.path)) is lock:
            del _LOCKS[str(lock.path)]


def _forget_inherited_locks() -> None:
    # A forked child shares its parent's open file descriptions, and flock locks belong to those:
    # it must open its own lock files, or parent and child would not exclude each other.
    global _LOCKS_GUARD
    _LOCKS_GUARD = threading.Lock()
    for lock in list(_LOCKS.values()):  # the locks the stores inherited from the parent hold
        lock.fd = None  # not closed: the parent may be inside the lock right now
        lock.append_fd, lock.append_id, lock.appended, lock.late = None, None, [], None
        lock.append_mark = None
        lock.thread_lock = threading.RLock()
        lock.depth = 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_inherited_locks)
