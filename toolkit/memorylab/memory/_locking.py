"""The agent lock and the append descriptor of one memory file, per process.

``AgentLock`` is a ``threading.RLock`` plus ``flock`` on a sidecar lock file, one object per
memory file per process, shared by every store on that file. The sidecar (not MEMORY.md itself)
is locked because compaction replaces MEMORY.md, and a lock on a replaced file no longer excludes
anyone. The sidecar's first 8 bytes, memory-mapped, count generations of MEMORY.md: whoever
replaces or re-creates it bumps the count while holding the lock, so an appender learns that its
open descriptor is stale from one memory read instead of an ``fstat`` per message (on this kind of
machine an ``fstat`` costs more than the write it guards). Private to
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
_EXCLUSIVE_NOWAIT = 0 if fcntl is None else fcntl.LOCK_EX | fcntl.LOCK_NB
_UNLOCK = 0 if fcntl is None else fcntl.LOCK_UN
_flock = None if fcntl is None else fcntl.flock
_write = os.write


class AgentLock:
    __slots__ = (  # slots: the append path reads a dozen attributes per message
        "append_fd", "append_generation", "counter", "depth", "fallback", "fd", "map", "path",
        "thread_lock",
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

    def _lock_os(self, timeout: float) -> None:
        fd = self.fd
        if fd is not None and fcntl is not None:
            try:
                fcntl.flock(fd, _EXCLUSIVE_NOWAIT)
                return
            except BlockingIOError:
                pass
        self._acquire_os(timeout)

    def _unlock_os(self) -> None:
        if fcntl is None:  # pragma: no cover
            self.fallback.release()
        else:
            assert self.fd is not None
            fcntl.flock(self.fd, _UNLOCK)

    def acquire(self, timeout: float) -> None:
        if not self.thread_lock.acquire(True, timeout):
            raise LockTimeout(f"another thread held {self.path} for more than {timeout:g}s")
        if self.depth:
            self.depth += 1
            return
        try:
            self._lock_os(timeout)
            try:
                self._check_lock_file()
            except BaseException:
                self._unlock_os()
                raise
        except BaseException:
            self.thread_lock.release()
            raise
        self.depth = 1

    def release(self) -> None:
        self.depth -= 1
        if self.depth == 0:
            self._unlock_os()
        self.thread_lock.release()

    def _acquire_os(self, timeout: float) -> None:
        if fcntl is None:  # pragma: no cover
            import filelock

            self.fallback = self.fallback or filelock.FileLock(str(self.path) + ".win")
            try:
                self.fallback.acquire(timeout=timeout)
            except filelock.Timeout as exc:
                raise LockTimeout(f"{self.path} stayed locked for {timeout:g}s") from exc
            return
        fd = self._open()
        # Contended: poll with a short, growing sleep. filelock polls every 50 ms, far too
        # coarse when several writers take turns per message; this hands over in ~0.1 ms.
        deadline = time.monotonic() + timeout
        pause = 0.0001
        while True:
            try:
                fcntl.flock(fd, _EXCLUSIVE_NOWAIT)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise LockTimeout(
                        f"another process held {self.path} for more than {timeout:g}s; if no "
                        "memorylab process is running on this agent, the lock is stale only if "
                        "the filesystem does not release flock locks (e.g. some NFS setups)"
                    ) from None
                time.sleep(pause)
                pause = min(pause * 2, 0.005)

    # -- appending --------------------------------------------------------------------------------

    def append(self, target: Path, data: bytes, durable: bool, timeout: float) -> None:
        """Write ``data`` to the end of ``target`` with one ``write``, holding the lock."""
        thread_lock = self.thread_lock
        if not thread_lock.acquire(True, timeout):
            raise LockTimeout(f"another thread held {self.path} for more than {timeout:g}s")
        try:
            self.append_holding_thread_lock(target, data, durable, timeout)
        finally:
            thread_lock.release()

    def append_holding_thread_lock(
        self, target: Path, data: bytes, durable: bool, timeout: float
    ) -> None:
        """:meth:`append` for a caller that already holds :attr:`thread_lock`.

        The per-message hot path (``Conversation.add`` holds the thread lock as its own guard,
        so a message takes one ``RLock``, not two). The steps of :meth:`acquire` and
        :meth:`release` are written out, module functions bound to names, because each call
        saved is measurable next to the one ``write`` it guards.
        """
        if self.depth or _flock is None:  # nested in a compaction (or no flock): rare
            self.acquire(timeout)
            try:
                self._write(target, data, durable)
            finally:
                self.release()
            return
        lock_fd = self.fd
        if lock_fd is None:
            self._acquire_os(timeout)
        else:
            try:
                _flock(lock_fd, _EXCLUSIVE_NOWAIT)
            except BlockingIOError:
                self._acquire_os(timeout)
        self.depth = 1
        try:
            fd = self.append_fd
            if fd is None or self.counter[0] != self.append_generation:  # type: ignore[index]
                fd = self._reopen_append(target)
            if _write(fd, data) != len(data):
                raise StoreError(f"short write to {target} (disk full?)")
            if durable:
                os.fsync(fd)
        finally:
            self.depth = 0
            _flock(self.fd, _UNLOCK)  # type: ignore[arg-type]

    def _write(self, target: Path, data: bytes, durable: bool) -> None:
        fd = self.append_fd
        if fd is None or self.counter is None or self.counter[0] != self.append_generation:
            fd = self._reopen_append(target)
        if os.write(fd, data) != len(data):
            raise StoreError(f"short write to {target} (disk full?)")
        if durable:
            os.fsync(fd)

    def _reopen_append(self, target: Path) -> int:
        self.close_append()
        self._check_lock_file()  # only here: MEMORY.md changed, perhaps forgotten
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
        # Called with the flock held. Without it a writer whose agent was forgotten (its lock
        # file deleted) would reopen MEMORY.md by path and write into a re-created agent's
        # fresh file without holding that file's lock: resurrecting what was forgotten.
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
