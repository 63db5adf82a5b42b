"""The agent lock and the append descriptor of one memory file, per process.

``AgentLock`` is a ``threading.RLock`` plus ``flock`` on a sidecar lock file, one object per
memory file per process, shared by every store on that file. The sidecar (not MEMORY.md itself)
is locked because compaction replaces MEMORY.md, and a lock on a replaced file no longer excludes
anyone. The sidecar's first 8 bytes, memory-mapped, count generations of MEMORY.md: whoever
replaces, re-creates or deletes it bumps the count while holding the lock, so an appender learns
that its open descriptor is stale from one memory read instead of a ``stat`` per message, and the
lock file itself is re-checked only when the count moved. Private to
:mod:`memorylab.memory.store`.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import threading
import time
from pathlib import Path
from typing import Any

from memorylab.errors import LockTimeout, StoreError, UnsafePath
from memorylab.memory._fsutil import CLOEXEC, FILE_MODE, NOFOLLOW

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: fall back to filelock
    fcntl = None  # type: ignore[assignment]

_GENERATION_BYTES = 8


class AgentLock:
    __slots__ = (
        "append_fd", "append_generation", "checked_generation", "counter", "depth", "fallback",
        "fd", "map", "path", "thread_lock",
    )  # fmt: skip

    def __init__(self, path: Path) -> None:
        self.path = path
        self.thread_lock = threading.RLock()
        self.depth = 0
        self.fd: int | None = None
        self.map: mmap.mmap | None = None
        # The counter as one native 64-bit integer: reading it costs no bytes object.
        self.counter: memoryview | None = None
        self.fallback: Any = None
        self.append_fd: int | None = None
        self.append_generation = -1
        self.checked_generation = -1

    def _open(self) -> int:
        if self.fd is None:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | NOFOLLOW | CLOEXEC, FILE_MODE)
            if os.fstat(fd).st_size < _GENERATION_BYTES:
                os.ftruncate(fd, _GENERATION_BYTES)  # only zero-fills; never clears a counter
            self.map = mmap.mmap(fd, _GENERATION_BYTES)
            self.counter = memoryview(self.map).cast("Q")
            self.fd = fd
        return self.fd

    def generation(self) -> int:
        if self.counter is None:
            self._open()
        assert self.counter is not None
        return int(self.counter[0])

    def bump_generation(self) -> None:
        """Mark MEMORY.md as replaced or removed (call with the lock held)."""
        current = self.generation()
        assert self.counter is not None
        self.counter[0] = (current + 1) % (1 << 64)

    # -- locking ----------------------------------------------------------------------------------

    def acquire(self, timeout: float) -> None:
        if not self.thread_lock.acquire(True, timeout):
            raise LockTimeout(f"another thread held {self.path} for more than {timeout:g}s")
        if self.depth:
            self.depth += 1
            return
        try:
            self._lock_os(timeout)
            # Whoever deletes the memory (forget, purge) bumps the generation first, so the
            # lock file needs checking only when the generation moved, not on every message.
            if self.counter[0] != self.checked_generation:  # type: ignore[index]
                self._check_lock_file()
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

    # -- appending --------------------------------------------------------------------------------

    def append(self, target: Path, data: bytes, durable: bool, timeout: float) -> None:
        """Write ``data`` to the end of ``target`` with one ``write``, holding the lock."""
        self.acquire(timeout)
        try:
            fd = self.append_fd
            if fd is None or self.counter[0] != self.append_generation:  # type: ignore[index]
                fd = self._reopen_append(target)
            if os.write(fd, data) != len(data):
                raise StoreError(f"short write to {target} (disk full?)")
            if durable:
                os.fsync(fd)
        finally:
            self.release()

    def _reopen_append(self, target: Path) -> int:
        self.close_append()
        generation = self.generation()
        try:
            fd = os.open(target, os.O_WRONLY | os.O_APPEND | NOFOLLOW | CLOEXEC)
        except FileNotFoundError:
            raise StoreError(
                f"{target} does not exist (deleted while in use?); create it again with "
                "ensure() or a new Conversation"
            ) from None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UnsafePath(f"{target} is a symlink; refusing to write through it") from exc
            raise
        self.append_fd, self.append_generation = fd, generation
        return fd

    # -- housekeeping -----------------------------------------------------------------------------

    def is_stale(self) -> bool:
        """Whether the lock file was deleted or replaced since this object opened it: a lock on
        a deleted file excludes nobody who opens the new one, and whoever deleted it (forget,
        purge) deleted the memory it guarded."""
        fd = self.fd
        if fd is None:
            return False  # not opened yet: it opens whatever is there
        try:
            now, mine = os.stat(self.path), os.fstat(fd)
        except OSError:
            return True
        return (now.st_ino, now.st_dev) != (mine.st_ino, mine.st_dev)

    def _check_lock_file(self) -> None:
        # Called with the flock held (released here if the check fails). Without it a writer
        # whose agent was forgotten (its lock file deleted) would reopen MEMORY.md by path and
        # write into a re-created agent's fresh file without holding that file's lock:
        # resurrecting what was forgotten.
        if not self.is_stale():
            self.checked_generation = self.generation()
            return
        self._unlock_os()
        raise StoreError(
                f"the memory guarded by {self.path} was deleted (memorylab forget or purge) or "
                "its lock file replaced since this process opened it; nothing was written. "
                "Create a new Conversation (or MemoryStore) to start a fresh memory"
            )

    def close_append(self) -> None:
        if self.append_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.append_fd)
            self.append_fd = None

    def close(self) -> None:
        self.close_append()
        if self.counter is not None:
            self.counter.release()
            self.counter = None
        if self.map is not None:
            with contextlib.suppress(BufferError, ValueError):
                self.map.close()
            self.map = None
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None


_LOCKS: dict[str, AgentLock] = {}
_LOCKS_GUARD = threading.Lock()


def lock_for(path: Path) -> AgentLock:
    """This process's lock for ``path``; a new one if the cached one's file was deleted (the
    stores that still hold the old object stay stale and get ``StoreError``)."""
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
    for lock in _LOCKS.values():
        lock.fd = None  # not closed: the parent may be inside the lock right now
        lock.map = None
        lock.counter = None
        lock.append_fd = None
        lock.thread_lock = threading.RLock()
        lock.depth = 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_inherited_locks)
