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


def _process_umask() -> int:
    """This process's umask: read from ``/proc/self/status`` where Linux gives it (it never
    changes it), else set to 0o077 for an instant and put back (a file another thread creates in
    that instant is made more private, never less)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def warn_permissions(path: str | os.PathLike[str], *, own: bool = False) -> list[str]:
    """Log one warning (logger ``memorylab.privacy``) when memory under ``path`` (a file, an
    agent folder or a workspace) can be read by group or others in a way that matters, and
    return :func:`check_permissions`'s list (``[]``: all private, or ``path`` does not exist),
    warned about or not.

    What matters is decided from the mode bits (issue 41: every command warned about folders
    made with a normal umask, for files the user only reads):

    - only a file whose content group or others can read: a folder's mode alone never (0o755
      around private files shows others names, not memory);
    - memory the user's own agent loads and memorylab writes (``own=True``: the
      ``Conversation`` preload; memorylab creates it 0o600 whatever the umask, so a read bit
      was added since): said once per process for the same files and modes, with the ``chmod``
      that makes it private;
    - memory a loader only reads (``own=False``: a copied workspace, the reference framework's
      files): only where it is more open than this process's umask makes files
      (:func:`_process_umask`: 0o644 files are the user's normal under umask 022, not under
      077), once per workspace and process, whichever part of it is read, suggesting no change
      to files the user only analyses.
    """
    try:
        shared = _not_private(path)
    except StoreError:
        return []
    readable = [(entry, mode) for entry, mode in shared if _content_readable(mode)]
    umask = 0 if own else _process_umask()
    if not own:
        readable = [(entry, mode) for entry, mode in readable if mode & umask & 0o044]
    if not readable:
        return _describe(shared)  # nothing others can read that the user did not choose
    key: object = (os.path.abspath(path), tuple(shared)) if own else _workspace_of(path)
    if key not in _WARNED:
        _WARNED.add(key)
        names = ", ".join(str(entry) for entry, _ in shared[:_SHOWN])
        more = f" and {len(shared) - _SHOWN} more" if len(shared) > _SHOWN else ""
        why = "" if own else f" ({len(readable)} file(s) more open than umask {umask:03o} makes)"
        advice = (
            f"Make them private with: chmod -R go-rwx '{path}'"
            if own
            else f"memorylab.privacy.check_permissions('{path}') lists them"
        )
        logger.warning(
            "memorylab: %d memory file(s) or folder(s) under %s can be read by other users "
            "(%s%s)%s; memory may hold private conversations. %s",
            len(shared),
            path,
            names,
            more,
            why,
            advice,
        )
    return _describe(shared)
