"""Low-level file operations (private). The store and its lock write memory with them; every other
file memorylab writes for a user (reports, plots, exports, save files, caches) goes through
:func:`write_private_file`, so it is private (0o600) too. Writes are exclusive-create, fsync'd,
and never follow symlinks."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import secrets
import stat
import sys
from collections.abc import Callable
from pathlib import Path

from memorylab.errors import StoreError, UnsafePath

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
        _private(fd)
        write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _private(fd: int) -> None:
    """Make the new file ``fd`` 0o600 whatever the umask; where the filesystem keeps no modes
    (FAT: its mount options decide, and chmod is refused) it was created with at most 0o600."""
    try:
        os.fchmod(fd, FILE_MODE)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def read_fd(fd: int, offset: int = 0) -> bytes:
    """Everything in the file ``fd`` from ``offset`` on (``pread``: the descriptor's position
    is left alone)."""
    chunks = []
    want = max(os.fstat(fd).st_size - offset, 1 << 20)  # one read, unless the file grows
    while chunk := os.pread(fd, want, offset):
        chunks.append(chunk)
        offset += len(chunk)
        want = 1 << 20
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def temp_name(target: Path) -> Path:
    """A unique hidden name beside ``target``; a long name is cut, so the temp file of a
    target near the filesystem's 255-byte limit still fits."""
    return target.with_name(f".{target.name[:150]}.tmp-{os.getpid()}-{secrets.token_hex(4)}")


def atomic_replace(target: Path, data: bytes) -> None:
    """temp file in the same folder -> fsync -> os.replace -> fsync folder."""
    os.close(replace_and_open(target, data))


def replace_and_open(
    target: Path, data: bytes, expected: tuple[int, int] | None = None
) -> int:
    """:func:`atomic_replace`, returning a descriptor of the new file (read-write, appending).
    It is opened before the rename, so it names the file written even when another process
    replaces ``target`` right after.

    With ``expected`` (the ``(st_dev, st_ino)`` of the file to replace) nothing is replaced
    unless ``target`` still names that file: :class:`Displaced` is raised instead. Where the
    system can swap two names in one step (Linux ``renameat2(RENAME_EXCHANGE)``) the test and
    the replacement are one: the new file is swapped in, the displaced one looked at, and a
    file that is not ``expected`` is swapped back at once. Elsewhere the test comes just
    before the rename, and a writer that keeps no lock can still replace ``target`` between
    the two."""
    tmp = temp_name(target)
    try:
        write_new_file(tmp, data)
        fd = open_regular(tmp, os.O_RDWR | os.O_APPEND)
        try:
            if expected is None:
                os.replace(tmp, target)
            else:
                _replace_if_same(tmp, target, expected, fd, len(data))
        except BaseException:
            os.close(fd)
            raise
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    try:
        fsync_dir(target.parent)
    except BaseException:
        os.close(fd)
        raise
    return fd


class Displaced(Exception):
    """:func:`replace_and_open` found ``target`` replaced or removed by another writer and
    changed nothing. ``late`` is what writers that opened ``target`` by name appended to the
    new file during the instant it was in place (whole blocks, to be kept)."""

    def __init__(self, late: bytes = b"") -> None:
        super().__init__("the file was replaced by another writer")
        self.late = late


def _replace_if_same(
    tmp: Path, target: Path, expected: tuple[int, int], fd: int, size: int
) -> None:
    try:
        exchanged = _exchange(tmp, target)
    except FileNotFoundError:  # target removed: the other writer is re-creating it
        raise Displaced() from None
    if not exchanged:
        if file_key(target) != expected:
            raise Displaced()
        os.replace(tmp, target)
        return
    if file_key(tmp) == expected:
        os.unlink(tmp)  # the replaced file; a descriptor open on it still reads it
        return
    with contextlib.suppress(FileNotFoundError):  # target removed again: nothing to give back
        _exchange(tmp, target)
    raise Displaced(read_fd(fd, size))  # the caller's cleanup removes tmp, now the new file


def file_key(path: Path) -> tuple[int, int] | None:
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    return (info.st_dev, info.st_ino)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _load_renameat2() -> Callable[..., int] | None:
    # No Python API swaps two names; glibc and musl export renameat2 (Linux 3.15+).
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return None


_renameat2 = _load_renameat2()


def _exchange(first: Path, second: Path) -> bool:
    """Swap the files that ``first`` and ``second`` name, atomically; False (nothing done)
    where the system or the filesystem cannot."""
    if _renameat2 is None:
        return False
    if _renameat2(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second),
                  _RENAME_EXCHANGE) == 0:  # fmt: skip
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(code, os.strerror(code), str(first), None, str(second))


# What link() fails with where the filesystem has no hard links (FAT/exFAT: EPERM; some
# network and FUSE mounts: ENOTSUP, ENOSYS); a real permission problem fails the exclusive
# create that replaces it too, and is reported then.
NO_HARD_LINKS = frozenset(
    code
    for code in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK)
    if code is not None
)


def create_new_file(target: Path, data: bytes) -> bool:
    """Create ``target`` holding ``data``, unless a file of that name exists: then return
    False, having written nothing. The data is written and fsync'd under a temp name, then
    hard-linked into place: a link never replaces a file, where a rename would replace one that
    another process created meanwhile.

    On a filesystem without hard links (FAT, some network and FUSE mounts) the file is created
    exclusively under its own name (``O_CREAT | O_EXCL``: it never replaces one either), then
    written and fsync'd (:func:`create_exclusive`)."""
    tmp = temp_name(target)
    write_new_file(tmp, data)
    try:
        os.link(tmp, target)
    except FileExistsError:
        return False
    except OSError as exc:
        if exc.errno not in NO_HARD_LINKS:
            raise
        return create_exclusive(target, data)
    finally:
        os.unlink(tmp)
    fsync_dir(target.parent)
    return True


def create_exclusive(target: Path, data: bytes) -> bool:
    """Create ``target`` (0o600) only if no file has that name, write ``data`` and fsync it;
    False (nothing written) when it exists. What a filesystem without hard links gets instead
    of a link: it never replaces another process's file, and a failed write removes the file
    again; unlike a link, a reader may see the file while it is written, and a power loss may
    leave it short (the store's recovery cuts a torn MEMORY.md back to its whole blocks and
    rolls back an uncommitted archive)."""
    try:
        fd = os.open(
            target, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | NOFOLLOW | CLOEXEC,
            FILE_MODE,
        )  # fmt: skip
    except FileExistsError:
        return False
    try:
        _private(fd)
        write_all(fd, data)
        os.fsync(fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(target)
        raise
    finally:
        os.close(fd)
    fsync_dir(target.parent)
    return True


def make_private_folders(folder: Path) -> None:
    """Create ``folder`` and each missing parent 0o700 (``mkdir(parents=True)`` gives the
    parents the default mode, 0o755 under the usual umask: readable by everyone)."""
    missing = []
    current = folder
    while not current.is_dir():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for path in reversed(missing):
        with contextlib.suppress(FileExistsError):
            path.mkdir(mode=DIR_MODE)


def write_private_file(target: Path, data: bytes, *, overwrite: bool = True) -> None:
    """Write ``data`` to ``target`` as a private file (0o600; missing folders are made 0o700):
    a temp file beside it, fsync, then a rename, so a reader never sees half a file. With
    ``overwrite=False`` an existing ``target`` is refused (:func:`create_new_file`: the temp
    file is linked into place, which fails rather than replaces). Failures are a
    :class:`StoreError` naming the path."""
    target = Path(target)
    tmp = temp_name(target)
    try:
        make_private_folders(target.parent)
        if not overwrite:
            if not create_new_file(target, data):  # atomic "create unless it exists"
                raise FileExistsError(errno.EEXIST, "exists", str(target))
            return
        write_new_file(tmp, data)
        os.replace(tmp, target)
    except FileExistsError:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise StoreError(
            f"{target} exists; choose another path, or overwrite it (--overwrite, overwrite=True)"
        ) from None
    except OSError as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise store_error(exc, target, "write") from exc


def open_regular(path: Path, flags: int, mode: int = FILE_MODE) -> int:
    """``os.open`` that never follows a symlink, never blocks on a FIFO, and refuses anything
    that is not a regular file (a FIFO would hang a reader, a device is not memory)."""
    fd = os.open(path, flags | os.O_NONBLOCK | NOFOLLOW | CLOEXEC, mode)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UnsafePath(
            f"{path} is not a regular file (a FIFO, device or socket?); memorylab only reads and "
            "writes regular files: move it aside"
        )
    return fd


def open_private_append(path: Path) -> int:
    """Open ``path`` to append to it (``O_APPEND``; readable, to check its last byte), created
    private (0o600 whatever the umask, :func:`_private`) when it is new or empty; through
    :func:`open_regular`: never a symlink, only a regular file."""
    fd = open_regular(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
    try:
        if os.fstat(fd).st_size == 0:
            _private(fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bytes(path: Path) -> bytes:
    fd = open_regular(path, os.O_RDONLY)
    try:
        return read_fd(fd)
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


def store_error(exc: OSError, path: Path, action: str) -> StoreError:
    """``exc`` as the :class:`StoreError` (or :class:`UnsafePath`) that names ``path`` and what
    to do; a ``StoreError`` already is returned as it is."""
    if isinstance(exc, StoreError):
        return exc
    code = exc.errno
    reason = exc.strerror or str(exc)
    if code == errno.ELOOP:
        return UnsafePath(f"cannot {action}: {path} is a symlink; memorylab never follows one")
    if code in (errno.EACCES, errno.EPERM):
        fix = (
            "check who owns it and its mode (memorylab writes 0o700 folders and 0o600 files), "
            "or use a workspace you can write (WORKSPACE_DIR)"
        )
    elif code == errno.EROFS:
        fix = "the filesystem is read-only: point WORKSPACE_DIR at a writable folder"
    elif code in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        fix = "the disk (or quota) is full: free space and try again; nothing was half-written"
    elif code in (errno.ENOTDIR, errno.EISDIR, errno.EEXIST):
        fix = "something of the wrong kind is in the way (a file where a folder belongs, or the "
        fix += "reverse): move it aside"
    elif code == errno.ENAMETOOLONG:
        fix = "the path is too long for the filesystem: use a shorter agent name or workspace"
    else:
        fix = "check the path and try again"
    error = StoreError(f"cannot {action} {path}: {reason}; {fix}")
    error.errno = code  # callers may test it; the message stays ours
    return error
