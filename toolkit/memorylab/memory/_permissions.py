"""Memory that group or others can access: found, described, and logged once (reads metadata only).

memorylab creates folders 0o700 and files 0o600 (:mod:`memorylab.memory._store`); files copied,
unpacked or written by the reference framework are often 0o644/0o755. This module only
``lstat``\\ s (it never changes a mode, never follows a symlink), so loaders on any floor may call
it: :func:`memorylab.analysis.memory_df` on what it reads, the ``Conversation`` preload on the
MEMORY.md it loads (a file: one ``lstat``), :func:`memorylab.privacy.load_export` on an export.

Warnings are logged on the logger ``memorylab.privacy`` (the name they had before this module
moved to the memory floor), not raised with ``warnings.warn``: a notebook reading a copied
workspace should be told, not stopped.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

from memorylab.errors import StoreError

logger = logging.getLogger("memorylab.privacy")

_Shared = tuple[tuple[Path, int], ...]


def _not_private(path: str | os.PathLike[str]) -> list[tuple[Path, int]]:
    """``(entry, mode)`` of each file or folder under ``path`` that group or others can access.

    A file costs one ``lstat``; a folder is walked (``lstat`` of every entry, symlinks not
    followed).
    """
    root = Path(path)
    try:
        root_mode = os.lstat(root).st_mode
    except FileNotFoundError:
        raise StoreError(f"{root} does not exist") from None
    shared = [(root, root_mode)] if _shared(root_mode) else []
    if stat.S_ISDIR(root_mode):
        for top, dirs, files in os.walk(root):
            for name in sorted(dirs) + sorted(files):
                entry = Path(top, name)
                try:
                    mode = os.lstat(entry).st_mode
                except FileNotFoundError:
                    continue
                if _shared(mode):
                    shared.append((entry, mode))
    return shared


def _shared(mode: int) -> bool:
    return not stat.S_ISLNK(mode) and bool(mode & 0o077)


def _content_readable(mode: int) -> bool:
    """Whether group or others can read what a file holds: a regular file with a read bit
    for them. A folder's mode alone never is: others who can list or enter a folder see file
    names, not conversations (a folder made with a normal umask, 0o755, holding memorylab's
    0o600 files, exposes nothing of them)."""
    return stat.S_ISREG(mode) and bool(mode & 0o044)


def _describe(shared: list[tuple[Path, int]]) -> list[str]:
    warnings = []
    for entry, mode in shared:
        who = " and ".join(w for w, bits in (("group", 0o70), ("others", 0o7)) if mode & bits)
        can = "read" if mode & 0o044 else "access"
        private = "700" if stat.S_ISDIR(mode) else "600"
        warnings.append(
            f"{entry}: {who} can {can} it (mode {stat.filemode(mode)}); memory may hold "
            f"private conversations: chmod {private} '{entry}'"
        )
    return warnings


def check_permissions(path: str | os.PathLike[str]) -> list[str]:
    """Memory files and folders under ``path`` (a file, an agent folder or a workspace) that
    group or others can access, one warning each; ``[]`` when all are private (symlinks are not
    followed). Raises :class:`~memorylab.errors.StoreError` when ``path`` does not exist."""
    return _describe(_not_private(path))


_WARNED: set[object] = set()
_SHOWN = 3


def _workspace_of(path: str | os.PathLike[str]) -> str:
    """The workspace ``path`` belongs to (the folder above its ``agents/``), else ``path``:
    a file, an agent folder and the workspace read one after another are one place to warn
    about."""
    absolute = Path(os.path.abspath(path))
    for folder in (absolute, *absolute.parents):
        if folder.name == "agents" and folder != absolute:
            return str(folder.parent)
    return str(absolute)


def warn_permissions(path: str | os.PathLike[str], *, own: bool = False) -> list[str]:
    """Log one warning (logger ``memorylab.privacy``) when memory under ``path`` (a file, an
    agent folder or a workspace) can be read by group or others, and return
    :func:`check_permissions`'s list (``[]``: all private, or ``path`` does not exist).

    Only a file whose content group or others can read is worth a warning: a folder with the
    mode a normal umask gives (0o755) around private files shows others names, not memory, and
    is listed by :func:`check_permissions` but not warned about (every command warned about
    such folders, issue 41).

    Loaders (``own=False``) read files someone else may own (a copied workspace, the reference
    framework's 0o644 files): they say it once per workspace and process, whichever part of it
    they read, and suggest no change to files the user only analyses. A memory the user's own
    agent loads (``own=True``: the ``Conversation`` preload) is said once per process for the
    same files and modes, with the ``chmod`` that makes it private.
    """
    try:
        shared = _not_private(path)
    except StoreError:
        return []
    if not any(_content_readable(mode) for _, mode in shared):
        return _describe(shared)  # nothing others can read: nothing to say
    key: object = (os.path.abspath(path), tuple(shared)) if own else _workspace_of(path)
    if key not in _WARNED:
        _WARNED.add(key)
        names = ", ".join(str(entry) for entry, _ in shared[:_SHOWN])
        more = f" and {len(shared) - _SHOWN} more" if len(shared) > _SHOWN else ""
        advice = (
            f"Make them private with: chmod -R go-rwx '{path}'"
            if own
            else f"memorylab.privacy.check_permissions('{path}') lists them"
        )
        logger.warning(
            "memorylab: %d memory file(s) or folder(s) under %s can be read by other users "
            "(%s%s); memory may hold private conversations. %s",
            len(shared),
            path,
            names,
            more,
            advice,
        )
    return _describe(shared)
