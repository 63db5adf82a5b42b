"""Forget an agent, purge old memory (internal; the public names are in :mod:`memorylab.privacy`).

Everything that deletes goes through :class:`~memorylab.memory.store.MemoryStore` (the only
module that writes or deletes memory files), under the agent's lock.
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

from memorylab.config import resolve_workspace
from memorylab.errors import AgentNotFound, MemorylabError, UnsafePath
from memorylab.memory.paths import MemoryPaths, agent_folders, agent_paths, validate_agent_name
from memorylab.memory.retention import format_duration, parse_duration
from memorylab.memory.retention import older_than as archives_older_than
from memorylab.memory.store import MemoryStore, read_memory

CACHE_ENV = "MEMORYLAB_CACHE_DIR"
"""Where ``compare_summarizers`` caches model calls when set (else ``<workspace>/.cache/llm``)."""

# ---------------------------------------------------------------------------------------------
# Forget


@dataclass(frozen=True, slots=True)
class ForgetReport:
    """What :func:`forget` removed: the agent folder and every file that was in it, and the
    evaluation cache entries that quoted the agent's messages (``cache_entries``, in
    ``cache_dirs``)."""

    agent: str
    folder: Path
    files: tuple[str, ...]
    bytes_removed: int
    cache_entries: tuple[Path, ...] = ()
    cache_dirs: tuple[Path, ...] = ()

    def __str__(self) -> str:
        searched = ", ".join(str(d) for d in self.cache_dirs) or "none found"
        return (
            f"forgot {self.agent!r}: removed {len(self.files)} file(s), {self.bytes_removed} "
            f"bytes, and the folder {self.folder}; removed {len(self.cache_entries)} evaluation "
            f"cache entr{'y' if len(self.cache_entries) == 1 else 'ies'} quoting it "
            f"(caches searched: {searched})"
        )


def existing_agent(agent_name: str, workspace_dir: str | os.PathLike[str] | None) -> MemoryPaths:
    paths = agent_paths(agent_name, workspace_dir)
    try:
        info = os.lstat(paths.folder)
    except FileNotFoundError:
        known = _agent_names(paths.folder.parent)
        hint = f"agents there: {', '.join(known[:10])}" if known else "it has no agents"
        raise AgentNotFound(
            f"no memory for agent {agent_name!r}: {paths.folder} does not exist ({hint}); "
            "check the name and the workspace (workspace_dir, else $WORKSPACE_DIR)"
        ) from None
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise UnsafePath(f"{paths.folder} is not a folder (a symlink?); refusing to touch it")
    return paths


def _agent_names(agents_dir: Path) -> list[str]:
    try:
        entries = sorted(os.scandir(agents_dir), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    names = []
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            with contextlib.suppress(ValueError):
                validate_agent_name(entry.name)
                names.append(entry.name)
    return names


def forget(
    agent_name: str,
    workspace_dir: str | os.PathLike[str] | None = None,
    *,
    lock_timeout: float = 30.0,
) -> ForgetReport:
    """Remove everything memorylab keeps for ``agent_name``, for good, and verify it is gone.

    MEMORY.md, every archive, ``compactions.jsonl``, the lock, journal and temp files, and any
    other file in the agent's folder (caches) are deleted under the agent's lock, so a running
    writer cannot resurrect them: its next ``add()`` raises ``StoreError``. Then the entries of
    the evaluation caches (the workspace's ``.cache/llm`` and ``$MEMORYLAB_CACHE_DIR``) that quote
    the agent's messages, or the replies to such requests, are deleted too (the report lists
    them and says which caches were searched). A new
    ``Conversation`` made afterwards starts a fresh, empty folder. Works on folders written by
    the reference framework too. Raises ``AgentNotFound`` for an unknown agent and
    ``StoreError`` if anything is left afterwards.
    """
    paths = existing_agent(agent_name, workspace_dir)
    store = MemoryStore.for_agent(agent_name, workspace_dir, lock_timeout=lock_timeout)
    texts = agent_texts(paths)  # read before deleting: what cache entries may quote
    removed = store.remove(whole_folder=True)
    caches = evaluation_caches(workspace_dir)
    return ForgetReport(
        agent=agent_name,
        folder=paths.folder,
        files=tuple(name for name, _ in removed),
        bytes_removed=sum(size for _, size in removed),
        cache_entries=forget_cached_quotes(texts, caches),
        cache_dirs=tuple(caches),
    )


def agent_texts(paths: MemoryPaths) -> list[str]:
    """Every message of the agent's MEMORY.md and archives (summaries included); a file that
    does not parse gives its raw text, so nothing of it escapes the cache clean-up."""
    texts: list[str] = []
    for file in [*paths.archives(), paths.memory_md]:
        try:
            document = read_memory(file, strict=False).document
        except MemorylabError:
            with contextlib.suppress(OSError):
                texts.append(file.read_bytes().decode("utf-8", errors="replace"))
            continue
        texts += [message.content for message in document.messages]
    return texts


def evaluation_caches(workspace_dir: str | os.PathLike[str] | None) -> list[Path]:
    """The model-call caches comparisons write that exist: the workspace's ``.cache/llm`` and
    ``$MEMORYLAB_CACHE_DIR`` (see :func:`memorylab.evaluate.compare.default_cache_dir`)."""
    folders = [resolve_workspace(workspace_dir) / ".cache" / "llm"]
    configured = os.environ.get(CACHE_ENV)
    if configured:
        folders.append(Path(configured).expanduser())
    unique = dict.fromkeys(folder.resolve() for folder in folders if folder.is_dir())
    return list(unique)


def forget_cached_quotes(texts: list[str], caches: list[Path]) -> tuple[Path, ...]:
    """Delete the entries of ``caches`` that quote ``texts`` (and the entries quoting their
    replies); the evaluation package is imported only when there is a cache to clean."""
    if not texts or not caches:
        return ()
    from memorylab.evaluate._cache import LLMCache

    removed: list[Path] = []
    for folder in caches:
        removed += LLMCache(folder).forget_quoting(texts)
    return tuple(removed)


# ---------------------------------------------------------------------------------------------
# Purge


@dataclass(frozen=True, slots=True)
class PurgeItem:
    """One thing :func:`purge` removed (or, with ``dry_run``, would remove).

    ``kind`` is ``"archive"`` (one archive file) or ``"agent"`` (the whole agent, forgotten);
    ``time`` is what made it old: the archive's name time, or the last change of the agent.
    """

    agent: str
    kind: Literal["archive", "agent"]
    path: Path
    time: datetime
    reason: str

    def __str__(self) -> str:
        what = "the whole agent" if self.kind == "agent" else "archive"
        return f"{self.agent}: {what} {self.path} ({self.reason})"


def _last_change(folder: Path, lock: Path) -> datetime | None:
    """The newest modification time of the memory files in ``folder`` (the lock file aside)."""
    newest: float | None = None
    for top, _, files in os.walk(folder):
        for name in files:
            path = Path(top, name)
            if path == lock:
                continue
            with contextlib.suppress(FileNotFoundError):
                mtime = os.lstat(path).st_mtime
                newest = mtime if newest is None else max(newest, mtime)
    return None if newest is None else datetime.fromtimestamp(newest, UTC)


def purge(
    workspace_dir: str | os.PathLike[str] | None = None,
    older_than: timedelta | str = "30d",
    dry_run: bool = False,
    *,
    now: datetime | None = None,
    lock_timeout: float = 30.0,
) -> list[PurgeItem]:
    """Remove memory older than ``older_than`` from every agent of a workspace.

    * an agent none of whose files changed since the cutoff (MEMORY.md not written to, no
      compaction) is forgotten whole, as by :func:`forget`;
    * otherwise its archives whose name time is before the cutoff are deleted, and each
      deletion is recorded in ``compactions.jsonl`` (kind ``"purge"``).

    MEMORY.md itself is never trimmed: it holds the messages since the last compaction (use
    compaction and a ``RetentionPolicy`` to bound it). ``dry_run=True`` only lists what would
    go. ``now`` (default: the current time) is for tests and reports. Returns the items, agents
    in name order, archives oldest first; a missing workspace has nothing to purge.
    """
    when = now or datetime.now(UTC)
    when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    cutoff = when - parse_duration(older_than)
    label = f"purge older_than={format_duration(parse_duration(older_than))}"
    agents_dir = resolve_workspace(workspace_dir) / "agents"
    items: list[PurgeItem] = []
    for agent in _agent_names(agents_dir):
        paths = MemoryPaths(agents_dir / agent / "MEMORY.md")
        if agent_folders(paths.folder, nested=True):
            continue  # holds nested agents ('team/alpha'), which purge does not remove yet
        last = _last_change(paths.folder, paths.lock)
        if last is None or last < cutoff:
            since = "no memory files" if last is None else f"last change {last.isoformat()}"
            item = PurgeItem(agent, "agent", paths.folder, last or cutoff, f"{label}: {since}")
            if dry_run or _purge_agent(paths, agent, cutoff, lock_timeout):
                items.append(item)
            continue
        names = [p.name for p in paths.archives()]
        doomed = archives_older_than(names, cutoff, rule="purge", label=label)
        if not doomed:
            continue
        if not dry_run:
            store = MemoryStore(paths.memory_md, agent_root=agents_dir, lock_timeout=lock_timeout)
            gone = set()
            for deletion in doomed:
                gone.update(
                    store.delete_archives(
                        [deletion.name], reason=deletion.reason, kind="purge", agent=agent
                    )
                )
            doomed = [d for d in doomed if d.name in gone]
        items += [
            PurgeItem(agent, "archive", paths.archive_dir / d.name, d.created, d.reason)
            for d in doomed
        ]
    return items


def _purge_agent(paths: MemoryPaths, agent: str, cutoff: datetime, lock_timeout: float) -> bool:
    """Forget an idle agent, unless it changed meanwhile (checked again under its lock)."""
    store = MemoryStore(paths.memory_md, agent_root=paths.folder.parent, lock_timeout=lock_timeout)
    with store.locked():
        last = _last_change(paths.folder, paths.lock)
        if last is not None and last >= cutoff:
            return False
        texts = agent_texts(paths)
        store.remove(whole_folder=True)
    forget_cached_quotes(texts, evaluation_caches(paths.folder.parent.parent))
    return True
