"""Forget an agent, purge old memory (internal; the public names are in :mod:`memorylab.privacy`).

Everything that deletes goes through :class:`~memorylab.memory._store.MemoryStore` (the only
module that writes or deletes memory files), under the agent's lock.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

from memorylab.config import resolve_workspace
from memorylab.errors import AgentNotFound, MemorylabError, UnsafePath
from memorylab.memory import _format as fmt
from memorylab.memory._holders import TextHolder, holders_in
from memorylab.memory._paths import MemoryPaths, agent_folders, agent_paths, validate_agent_name
from memorylab.memory._recall_index import is_index_file
from memorylab.memory._retention import format_duration, parse_duration
from memorylab.memory._retention import older_than as archives_older_than
from memorylab.memory._store import MemoryStore, deletion_journal, read_memory, require_kind

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
    """The files of an existing agent, named as the loaders and ``memorylab ls`` name it
    (``team/alpha`` for the reference's nested ``agents/team/alpha/``), checked before anything
    is read or removed: every folder from ``agents/`` down to the agent's is a real folder (no
    symlink leads out of the workspace), and its memory files are regular files
    (:func:`require_regular_files`)."""
    paths = agent_paths(agent_name, workspace_dir, nested=True)
    agents_dir = resolve_workspace(workspace_dir) / "agents"
    folder = agents_dir
    for part in paths.folder.relative_to(agents_dir).parts:
        folder = folder / part
        try:
            info = os.lstat(folder)
        except (FileNotFoundError, NotADirectoryError):
            known = agent_names(agents_dir)
            hint = f"agents there: {', '.join(known[:10])}" if known else "it has no agents"
            raise AgentNotFound(
                f"no memory for agent {agent_name!r}: {paths.folder} does not exist ({hint}); "
                "check the name and the workspace (workspace_dir, else $WORKSPACE_DIR)"
            ) from None
        if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
            raise UnsafePath(f"{folder} is not a folder (a symlink?); refusing to touch it")
    require_regular_files(paths, f"agent {agent_name!r}")
    return paths


def require_regular_files(paths: MemoryPaths, what: str) -> None:
    """Refuse at once (``UnsafePath``, nothing read, nothing removed) an agent whose MEMORY.md,
    archives, ``compactions.jsonl``, ``usage.jsonl``, ``pins.jsonl``, journals or lock is there
    but not a regular file (a FIFO would block a read forever; a symlink may point anywhere),
    or whose ``archive/`` is not a folder: the store's own check
    (``memory._store.require_kind``)."""
    checks = [(paths.memory_md, "file"), (paths.compactions, "file"), (paths.usage, "file"),
              (paths.pins, "file"), (paths.intent, "file"), (deletion_journal(paths), "file"),
              (paths.lock, "file"), (paths.archive_dir, "folder")]  # fmt: skip
    if paths.archive_dir.is_dir() and not paths.archive_dir.is_symlink():
        checks += [
            (entry, "file")
            for entry in sorted(paths.archive_dir.iterdir())
            if fmt.parse_archive_name(entry.name) is not None
        ]
    for path, kind in checks:
        try:
            require_kind(path, kind)
        except UnsafePath as error:
            raise UnsafePath(f"{what}: {error}") from None


def agent_names(agents_dir: Path) -> list[str]:
    """The names of the agents below ``agents_dir`` as the loaders print them (nested ones
    ``team/alpha``), in name order."""
    return [folder.relative_to(agents_dir).as_posix() for folder in agent_folders(agents_dir)]


def _agent_names(agents_dir: Path) -> list[str]:
    """The top-level folders of ``agents_dir`` (with or without memory files)."""
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

    ``agent_name`` is the name the loaders and ``memorylab ls`` print: a nested agent the
    reference framework wrote to ``agents/team/alpha/`` is ``"team/alpha"`` (its folder goes,
    and ``agents/team/`` too if it is then empty). MEMORY.md, every archive,
    ``compactions.jsonl``, ``usage.jsonl``, ``pins.jsonl``, the lock, journal and temp files,
    and any other file in the agent's folder (caches) are deleted under the agent's lock, so a
    running writer cannot resurrect them: its next ``add()`` raises ``StoreError``. Then the
    entries of the evaluation caches (the workspace's ``.cache/llm`` and
    ``$MEMORYLAB_CACHE_DIR``) that quote the agent's messages, or the replies to such requests,
    are deleted too (the report lists them and says which caches were searched). A new
    ``Conversation`` made afterwards starts a fresh, empty folder. Works on folders written by
    the reference framework too. Raises ``InvalidAgentName`` for a name that is not one,
    ``AgentNotFound`` for an unknown agent, ``UnsafePath`` at once (nothing removed) when a
    memory file is not a regular file (a FIFO, a symlink) and ``StoreError`` if anything is left
    afterwards.
    """
    paths = existing_agent(agent_name, workspace_dir)
    store = MemoryStore(paths.memory_md, agent_root=paths.folder.parent, lock_timeout=lock_timeout)
    texts = agent_texts(paths)  # read before deleting: what cache entries may quote
    removed = store.remove(whole_folder=True)
    _remove_empty_parents(paths.folder, resolve_workspace(workspace_dir) / "agents")
    holders = holders_in(workspace_dir)
    return ForgetReport(
        agent=agent_name,
        folder=paths.folder,
        files=tuple(name for name, _ in removed),
        bytes_removed=sum(size for _, size in removed),
        cache_entries=forget_cached_quotes(texts, holders),
        cache_dirs=tuple(folder for _, folder in holders),
    )


def _remove_empty_parents(folder: Path, agents_dir: Path) -> None:
    """The folders a nested agent was in (``agents/team/`` of ``team/alpha``) when it was all
    they held: empty, so nothing but the folder goes (``rmdir`` refuses a folder with anything
    in it)."""
    for parent in folder.parents:
        if parent == agents_dir or not parent.is_relative_to(agents_dir):
            return
        try:
            os.rmdir(parent)
        except OSError:
            return


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


def forget_cached_quotes(
    texts: list[str], holders: list[tuple[TextHolder, Path]]
) -> tuple[Path, ...]:
    """Delete the copies that quote ``texts`` (and those quoting their replies) in the folders
    of the holders of memory text (:func:`memorylab.memory._holders.holders_in`)."""
    return tuple(path for holder, at in holders for path in holder.forget_quoting(at, texts))


# ---------------------------------------------------------------------------------------------
# Purge


@dataclass(frozen=True, slots=True)
class PurgeItem:
    """One thing :func:`purge` removed (or, with ``dry_run``, would remove).

    ``kind`` is ``"archive"`` (one archive file) or ``"agent"`` (the whole agent, forgotten);
    ``time`` is what made it old: the archive's name time, or the last change of the agent.
    ``kept`` names the nested agents (``team/alpha``) an ``"agent"`` item's folder still holds:
    then only the agent's own memory files went, and the folder stays with theirs.
    """

    agent: str
    kind: Literal["archive", "agent"]
    path: Path
    time: datetime
    reason: str
    kept: tuple[str, ...] = ()

    def __str__(self) -> str:
        what = "archive"
        if self.kind == "agent":
            what = "its own memory files in" if self.kept else "the whole agent"
        return f"{self.agent}: {what} {self.path} ({self.reason})"


def _last_change(folder: Path, lock: Path, nested: Iterable[Path] = ()) -> datetime | None:
    """The newest modification time of the memory files in ``folder`` (the lock file and the
    recall index aside, and the folders of the ``nested`` agents below it: theirs are their
    own)."""
    skip = set(nested)
    newest: float | None = None
    for top, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if Path(top, d) not in skip]
        for name in files:
            path = Path(top, name)
            if path == lock or is_index_file(name):  # recall's index changes when it is read
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
    """Remove memory older than ``older_than`` from every agent of a workspace, nested agents
    (the reference's ``team/alpha`` in ``agents/team/alpha/``) included:

    * an agent none of whose files changed since the cutoff (MEMORY.md not written to, no
      compaction) is forgotten whole, as by :func:`forget`. When its folder holds nested
      agents that changed since the cutoff, only its own memory files go (MEMORY.md, its
      archives, ``compactions.jsonl``, ``usage.jsonl``, ``pins.jsonl``) and the folder stays with
      theirs: the item's ``reason`` names them;
    * otherwise its archives whose name time is before the cutoff are deleted, and each
      deletion is recorded in ``compactions.jsonl`` (kind ``"purge"``).

    MEMORY.md of an agent that changed since the cutoff is never trimmed: it holds the messages
    since the last compaction (use compaction and a ``RetentionPolicy`` to bound it). Before
    anything goes, every agent's memory files are checked to be regular files: a FIFO or a
    symlink where one belongs is ``UnsafePath`` and nothing is removed. ``dry_run=True`` only
    lists what would go. ``now`` (default: the current time) is for tests and reports. Returns
    the items, agents in name order (as ``memorylab ls`` names them), archives oldest first; a
    missing workspace has nothing to purge.
    """
    when = now or datetime.now(UTC)
    when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    cutoff = when - parse_duration(older_than)
    label = f"purge older_than={format_duration(parse_duration(older_than))}"
    workspace = resolve_workspace(workspace_dir)
    agents_dir = workspace / "agents"
    folders = {agents_dir / name for name in _agent_names(agents_dir)}
    folders.update(agent_folders(agents_dir))
    names = {folder: folder.relative_to(agents_dir).as_posix() for folder in folders}
    for folder in sorted(folders):
        require_regular_files(MemoryPaths(folder / "MEMORY.md"), f"cannot purge {names[folder]!r}")
    below = {folder: agent_folders(folder, nested=True) for folder in folders}
    idle: dict[Path, datetime | None] = {}
    for folder in folders:
        last = _last_change(folder, MemoryPaths(folder / "MEMORY.md").lock, below[folder])
        if last is None or last < cutoff:
            idle[folder] = last
    items: list[PurgeItem] = []
    # The deepest first: a folder's nested agents are settled before the folder itself.
    for folder in sorted(folders, key=lambda f: (-len(f.parts), f)):
        agent, paths = names[folder], MemoryPaths(folder / "MEMORY.md")
        if folder in idle:
            last = idle[folder]
            since = "no memory files" if last is None else f"last change {last.isoformat()}"
            kept = [f for f in below[folder] if f not in idle]
            if last is None and kept:
                continue  # a folder of nested agents, with no memory of its own: nothing goes
            if not dry_run:
                done = _purge_agent(paths, cutoff, lock_timeout, workspace)
                if done is None:
                    continue  # it changed meanwhile
                kept = done
            if last is None and below[folder] and not kept:
                continue  # the folder of nested agents that all went (items of their own)
            reason = f"{label}: {since}"
            held = tuple(names.get(f, f.relative_to(agents_dir).as_posix()) for f in kept)
            if held:
                reason += (
                    f"; its own memory files only: the folder stays, it holds the memory of "
                    f"{', '.join(held)} (changed since the cutoff)"
                )
            items.append(PurgeItem(agent, "agent", paths.folder, last or cutoff, reason, held))
            continue
        doomed = archives_older_than(
            [p.name for p in paths.archives()], cutoff, rule="purge", label=label
        )
        if not doomed:
            continue
        if not dry_run:
            store = MemoryStore(
                paths.memory_md, agent_root=paths.folder.parent, lock_timeout=lock_timeout
            )
            # One deletion of them all: a crash in the middle is finished at the next opening.
            gone = set(
                store.delete_archives(
                    [d.name for d in doomed],
                    reason={d.name: d.reason for d in doomed},
                    kind="purge",
                    agent=agent,
                )
            )
            doomed = [d for d in doomed if d.name in gone]
        items += [
            PurgeItem(agent, "archive", paths.archive_dir / d.name, d.created, d.reason)
            for d in doomed
        ]
    items.sort(key=lambda item: item.agent)  # stable: an agent's archives stay oldest first
    return items


def _purge_agent(
    paths: MemoryPaths, cutoff: datetime, lock_timeout: float, workspace: Path
) -> list[Path] | None:
    """Forget an idle agent, unless it changed meanwhile (checked again under its lock): None.
    A folder that still holds nested agents loses only its own memory files; returns the
    folders of the nested agents it kept."""
    store = MemoryStore(paths.memory_md, agent_root=paths.folder.parent, lock_timeout=lock_timeout)
    with store.locked():
        nested = agent_folders(paths.folder, nested=True)
        last = _last_change(paths.folder, paths.lock, nested)
        if last is not None and last >= cutoff:
            return None
        texts = agent_texts(paths)
        store.remove(whole_folder=not nested)
    forget_cached_quotes(texts, holders_in(workspace))
    return nested
