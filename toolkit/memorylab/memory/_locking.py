"""The agent lock: a per-process ``threading.RLock`` plus ``flock`` on a sidecar lock file.

One ``_Lock`` per lock file per process, shared by every store on that file. The sidecar (not
MEMORY.md itself) is locked because compaction replaces MEMORY.md, and a lock on a replaced file
no longer excludes anyone. Private to :mod:`memorylab.memory.store`.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import threading
import time
from pathlib import Path
from typing import Any

from memorylab.errors import LockTimeout
from memorylab.memory._fsutil import CLOEXEC, FILE_MODE, NOFOLLOW

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: fall back to filelock
    fcntl = None  # type: ignore[assignment]

_GENERATION_BYTES = 8
_EXCLUSIVE_NOWAIT = 0 if fcntl is None else fcntl.LOCK_EX | fcntl.LOCK_NB


class AgentLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.thread_lock = threading.RLock()
        self.depth = 0
        self.fd: int | None = None
        self.map: mmap.mmap | None = None
        self.fallback: Any = None

    def _open(self) -> int:
        if self.fd is None:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | NOFOLLOW | CLOEXEC, FILE_MODE)
            if os.fstat(fd).st_size < _GENERATION_BYTES:
                os.ftruncate(fd, _GENERATION_BYTES)  # only zero-fills; never clears a counter
            self.map = mmap.mmap(fd, _GENERATION_BYTES)
            self.fd = fd
        return self.fd

    def generation(self) -> bytes:
        """The memory file's generation counter, shared by every process through the mapped
        lock file. Whoever replaces or removes MEMORY.md bumps it (holding the lock), so an
        appender learns that its descriptor is stale from one memory read instead of an fstat
        per message (fstat costs more than the write it protects)."""
        if self.map is None:
            self._open()
        assert self.map is not None
        return self.map[:_GENERATION_BYTES]

    def bump_generation(self) -> None:
        """Mark MEMORY.md as replaced (call with the lock held)."""
        current = int.from_bytes(self.generation(), "little")
        assert self.map is not None
        self.map[:_GENERATION_BYTES] = ((current + 1) % (1 << 64)).to_bytes(8, "little")

    def acquire(self, timeout: float) -> None:
        # Kept lean: it runs twice per appended message.
        if not self.thread_lock.acquire(True, timeout):
            raise LockTimeout(f"another thread held {self.path} for more than {timeout:g}s")
        if self.depth:
            self.depth += 1
            return
        try:
            fd = self.fd
            if fd is None or fcntl is None:
                self._acquire_os(timeout)
            else:
                try:
                    fcntl.flock(fd, _EXCLUSIVE_NOWAIT)
                except BlockingIOError:
                    self._acquire_os(timeout)
        except BaseException:
            self.thread_lock.release()
            raise
        self.depth = 1

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
        try:
            fcntl.flock(fd, _EXCLUSIVE_NOWAIT)
            return
        except BlockingIOError:
            pass
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

    def release(self) -> None:
        self.depth -= 1
        if self.depth == 0:
            if fcntl is None:  # pragma: no cover
                self.fallback.release()
            else:
                assert self.fd is not None
                fcntl.flock(self.fd, fcntl.LOCK_UN)
        self.thread_lock.release()

    def revalidate(self) -> None:
        """Reopen the lock file if it was deleted or replaced since it was opened (a lock on a
        deleted file excludes nobody who opens the new one)."""
        with self.thread_lock:
            if self.fd is None or self.depth:
                return
            try:
                same = os.stat(self.path).st_ino == os.fstat(self.fd).st_ino
            except OSError:
                same = False
            if not same:
                self.close()

    def close(self) -> None:
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
    key = os.path.abspath(path)
    with _LOCKS_GUARD:
        lock = _LOCKS.get(key)
        if lock is None:
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
        lock.thread_lock = threading.RLock()
        lock.depth = 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_inherited_locks)
