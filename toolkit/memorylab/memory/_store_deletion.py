"""Deletion in a memory folder: retention, purge and forget (the privacy operations).

A mixin of :class:`memorylab.memory.store.MemoryStore`, kept apart so the store module stays
readable; it uses only the store's lock, recovery and record writer, and, like the store, is
the only code that removes memory files.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memorylab.errors import InvalidSetting, StoreError
from memorylab.memory import _locking
from memorylab.memory import format as fmt
from memorylab.memory._fsutil import fsync_dir
from memorylab.memory.retention import RetentionPolicy

if TYPE_CHECKING:
    from memorylab.memory._locking import AgentLock
    from memorylab.memory.paths import MemoryPaths


class StoreDeletion:
    """Deleting archives (retention) and whole memories (forget), under the agent lock."""

    if TYPE_CHECKING:  # provided by MemoryStore
        paths: MemoryPaths
        agent_root: Path | None
        _lock: AgentLock | None

        def locked(self) -> contextlib.AbstractContextManager[None]: ...
        def _held_lock(self) -> AgentLock: ...
        def _recover(self) -> None: ...
        def append_record(self, record: dict[str, Any]) -> None: ...

    def delete_archives(
        self,
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
        with self.locked():
            self._recover()  # an interrupted compaction is settled before anything goes
            for name in wanted:
                try:
                    os.unlink(self.paths.archive_dir / name)
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    raise StoreError(f"cannot delete archive {name}: {exc.strerror}") from exc
                deleted.append(name)
            if deleted:
                fsync_dir(self.paths.archive_dir)
            for name in deleted:
                record = {"kind": kind, "time": when, "archive": name, "reason": reason}
                self.append_record({**record, "agent": agent})
        return deleted

    def apply_retention(
        self, policy: RetentionPolicy, *, now: datetime | None = None, agent: str | None = None
    ) -> list[str]:
        """Delete (and record) the archives ``policy`` does not keep at ``now``; their names."""
        when = now or datetime.now(UTC)
        deleted: list[str] = []
        with self.locked():
            self._recover()
            for doomed in policy.select([p.name for p in self.archives_oldest_first()], when):
                deleted += self.delete_archives(
                    [doomed.name], reason=doomed.reason, now=when, agent=agent
                )
        return deleted

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

    def forget(self, *, whole_folder: bool | None = None) -> list[tuple[str, int]]:
        """Delete this memory for good, under the lock; return ``(path, bytes)`` of each file
        removed (paths relative to the folder).

        ``whole_folder`` (default: True for a store made by :meth:`for_agent`) removes every
        entry of the agent folder (caches included) and the folder itself; otherwise only this
        memory file's own files go: MEMORY.md, ``archive/``'s archives, ``compactions.jsonl``,
        the journal, temp files and the lock file. The generation is bumped first, so a process
        that still appends reopens MEMORY.md, finds it gone and gets ``StoreError`` instead of
        writing into a deleted file. Raises ``StoreError`` if anything is left afterwards.
        """
        whole = self.agent_root is not None if whole_folder is None else whole_folder
        folder, paths = self.paths.folder, self.paths
        if self._lock is not None and self._lock.is_stale():
            self._lock = None
        with self.locked():
            held = self._held_lock()
            held.bump_generation()
            held.close_append()
            before = self._forget_inventory(whole)
            problems: list[str] = []
            targets = [paths.memory_md]
            targets += self._forget_archive_targets(whole)
            targets += [paths.compactions, paths.intent]
            targets += [*folder.glob(f".{paths.memory_md.name}.tmp-*")]
            targets += [*folder.glob(f"..{paths.memory_md.name}.intent.json.tmp-*")]
            if whole:
                targets += sorted(p for p in folder.iterdir() if p != paths.lock)
            for target in [*targets, paths.lock]:
                self._forget_remove(target, problems)
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
            # This process's later stores must not share the lock of the deleted file.
            with _locking._LOCKS_GUARD:
                if _locking._LOCKS.get(os.path.abspath(paths.lock)) is held:
                    del _locking._LOCKS[os.path.abspath(paths.lock)]
            left = self._forget_inventory(whole) if folder.is_dir() else []
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

    def _forget_archive_targets(self, whole: bool) -> list[Path]:
        archive_dir = self.paths.archive_dir
        if not archive_dir.is_dir() or archive_dir.is_symlink():
            return [archive_dir] if archive_dir.is_symlink() else []
        if whole:
            return [archive_dir]
        return [
            entry
            for entry in sorted(archive_dir.iterdir())
            if fmt.parse_archive_name(entry.name) or entry.name.startswith(".history_")
        ]

    def _forget_inventory(self, whole: bool) -> list[tuple[str, int]]:
        """``(relative path, size)`` of the files forget removes (or left behind)."""
        folder, paths = self.paths.folder, self.paths
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
        own += [p for p in self._forget_archive_targets(False) if p != paths.archive_dir]
        for path in own:
            with contextlib.suppress(FileNotFoundError):
                found.append((path.relative_to(folder).as_posix(), os.lstat(path).st_size))
        return found

    @staticmethod
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
