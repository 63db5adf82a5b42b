"""Low-level file operations of the store (private: only :mod:`memorylab.memory.store` and its
lock use them). Writes are exclusive-create, fsync'd, and never follow symlinks."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

from memorylab.errors import UnsafePath

DIR_MODE = 0o700
FILE_MODE = 0o600
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def safe_mkdir(path: Path, *, parents_ok: bool) -> None:
    """Create ``path`` (0o700) unless it exists; refuse a symlink or a non-folder there."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        if parents_ok:
            path.parent.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
        try:
            os.mkdir(path, DIR_MODE)
            os.chmod(path, DIR_MODE)  # mkdir's mode is filtered by the umask
        except FileExistsError:
            pass
        info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        raise UnsafePath(f"{path} is a symlink; memorylab does not write through symlinks")
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafePath(f"{path} exists and is not a folder")


def fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):  # some filesystems cannot fsync a folder
        fd = os.open(path, os.O_RDONLY | CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_new_file(path: Path, data: bytes) -> None:
    """Create ``path`` exclusively (0o600), write ``data`` and fsync it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def temp_name(target: Path) -> Path:
    return target.with_name(f".{target.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")


def atomic_replace(target: Path, data: bytes) -> None:
    """temp file in the same folder -> fsync -> os.replace -> fsync folder."""
    tmp = temp_name(target)
    try:
        write_new_file(tmp, data)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    fsync_dir(target.parent)


def read_bytes(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | NOFOLLOW | CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def encode_utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"text contains a character that cannot be stored as UTF-8 ({exc.reason}); "
            "remove lone surrogates, e.g. text.encode('utf-8', 'replace').decode()"
        ) from exc
