"""The recall index: a search index of one agent's archives, kept beside them (private; the
public face is :mod:`memorylab.memory._recall`, see docs/recall.md).

The index is one SQLite file, ``archive/.recall.sqlite`` (0o600; a dot name, so readers of
``archive/`` skip it as they skip temp files), holding an FTS5 table of every archived message
(content, role, timestamp) and a table of the archives it covers, each with the identity of the
file it read: size, inode and modification time (``stat``). Bringing the index up to date
(:func:`update`) is decided from that record, never guessed: an archive on disk that is not
recorded is read (parsed by the one parser, :func:`memorylab.memory._format.parse`, leniently)
and its messages added; a recorded archive that is gone (retention, purge, forget, a user's
``rm``) or whose identity changed has its rows deleted (and a changed one is read again). An
archive that was read is never read again while its identity stays. Compaction summaries and
the archives an edit of the history made are not indexed (:func:`_edit_archives_of`).

Comparing every archive costs a ``stat`` each, so the index also records the state of what
decides it (:func:`_folder_state`: the ``archive/`` folder's identity, modification and change
times, ``compactions.jsonl``'s identity and size, the archives skipped), and a query whose
state is the recorded one compares nothing more: O(1) however many archives there are. The
state is recorded only when it was taken :data:`SETTLED_NS` after the last change it shows
(git's rule for "racily clean" index entries: a timestamp is as coarse as its filesystem, and
a second change within the same tick would keep it), and only from a comparison of every
archive made under SQLite's write lock. What the state cannot show is an archive changed in
place (written into, not replaced: the folder does not change); the next change of the
folder or of ``compactions.jsonl`` compares every archive again, and so does
``update(check_all=True)`` (``update_recall_index``).

The index is a cache of the archives, so a damaged one is never an error: a file that is not
the index this version makes (a page damaged, a table dropped or altered, another schema, a
rolled-back journal of another file, no SQLite file at all) is removed with its journal and
built again from the archives, with one logged warning (:func:`_using`). Before SQLite opens
anything, every name it may open (the index, ``-journal``, ``-wal``, ``-shm``) is looked at
with ``lstat`` (:func:`_clear_the_way`): SQLite follows symlinks and blocks on a FIFO, so a
symlink, FIFO, socket or device there is damage (unlinked: an unlink neither follows nor
blocks), as is a write-ahead log (the index never keeps one); a folder there is an
``UnsafePath`` (not the index's to remove).

SQLite does the rest: its own locking makes the index safe across processes (a writer takes the
write lock, ``BEGIN IMMEDIATE``, before it lists the archives; the others wait for it, up to a
busy timeout), its rollback journal makes an update all or nothing (a process killed inside one
leaves a hot journal that the next connection rolls back), and its FTS5 extension ranks with
BM25 (``bm25()``).

Deletions are private: every connection sets ``PRAGMA secure_delete=ON`` (deleted content is
overwritten with zeros, in the table's pages and in freed pages), and a deletion of rows is
followed by the FTS5 ``optimize`` command, which merges the full-text index into one segment, so
no term of a deleted message is left in an older one (FTS5 otherwise keeps a deleted row's terms
with a delete marker until its segments merge). The journal is a rollback journal in
SQLite's ``TRUNCATE`` mode: cut to nothing at each commit (its old pages go as they would with
the file), and left in place empty, so that an update does not create and delete a file in
``archive/`` (which would change the folder state the index records: below); never a
write-ahead log that would keep old pages after a commit.

The tokenizer is FTS5's ``porter unicode61 remove_diacritics 2``: words split at anything that
is not a letter or a digit (``nginx.conf`` is ``nginx`` and ``conf``), folded to lower case
without diacritics (``Müller`` finds ``muller``), and reduced to their Porter stem (``workers``
finds ``worker``), so a question asked in other words than the message's still meets it.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from memorylab.errors import StoreError, UnsafePath
from memorylab.memory import _format as fmt
from memorylab.memory._fsutil import FILE_MODE, open_regular, read_bytes, read_fd
from memorylab.memory._paths import MemoryPaths
from memorylab.memory._records import edit_archives, read_record_line

logger = logging.getLogger("memorylab")

INDEX_NAME = ".recall.sqlite"
"""The index file's name in an agent's ``archive/`` folder (SQLite's journal is this name with
``-journal`` appended: empty but during an update)."""

SCHEMA = "memorylab-recall/1"
TOKENIZER = "porter unicode61 remove_diacritics 2"

# fmt: off
STOP_WORDS = frozenset({
    "i", "me", "my", "myself", "we", "our", "ours", "ourselves", "you", "your", "yours",
    "yourself", "yourselves", "he", "him", "his", "himself", "she", "her", "hers", "herself",
    "it", "its", "itself", "they", "them", "their", "theirs", "themselves", "what", "which",
    "who", "whom", "this", "that", "these", "those", "am", "is", "are", "was", "were", "be",
    "been", "being", "have", "has", "had", "having", "do", "does", "did", "doing", "would",
    "should", "could", "ought", "cannot", "a", "an", "the", "and", "but", "if", "or", "because",
    "as", "until", "while", "of", "at", "by", "for", "with", "about", "against", "between",
    "into", "through", "during", "before", "after", "above", "below", "to", "from", "up", "down",
    "in", "out", "on", "off", "over", "under", "again", "further", "then", "once", "here",
    "there", "when", "where", "why", "how", "all", "any", "both", "each", "few", "more", "most",
    "other", "some", "such", "no", "nor", "not", "only", "own", "same", "so", "than", "too",
    "very",
    "s", "t", "d", "ll", "m", "re", "ve",  # what the tokenizer leaves of "it's", "don't" ...
})
# fmt: on
"""Words a query is searched without (unless it has no others): the Snowball project's English
stop list (snowballstem.org, ``algorithms/english/stop.txt``, BSD licence: the list made to go
with the Porter stemmer), its contractions as the tokenizer splits them. They weigh next to
nothing in BM25, and they are in so many messages that scoring them was most of a query's cost;
without them the planted facts of the bundled transcripts are found more often too (docs/recall.md).
The index keeps them (a message's length counts every word)."""

HOOK_TIMEOUT_S = 1.0
"""How long the update after a compaction waits for another process's update of the same index
(it runs under the agent's lock: appends wait for it); past it, the next recall catches up."""

MAX_QUERY_TERMS = 64
"""The most words a query is searched for: its rarest in the index (fewest messages holding
them; the question's order among equals). BM25 sums a weight per word that falls as more
messages hold it, so these are the words that weigh most, and a long question (a pasted log, a
tool's output) costs what its words cost to look up, not what every message holding one of
them costs to score. A question of up to this many distinct words, stop words aside, is
searched whole."""

SETTLED_NS = 2_000_000_000
"""How long after the last change of ``archive/`` (and of ``compactions.jsonl``) their state
must have been taken to be recorded as the index's: 2 s, FAT's timestamp granularity, the
coarsest of the common filesystems (module docstring)."""

_SIDE_FILES = ("-journal", "-wal", "-shm")

_TABLES = frozenset({
    "recall_meta", "recall_archives", "recall_archives_rows", "recall_messages",
    *(f"recall_messages_{shadow}" for shadow in ("data", "idx", "content", "docsize", "config")),
})  # fmt: skip
"""What the index's schema made (FTS5 keeps its table in the shadow tables ``_data`` ...)."""

# SQLite's primary result codes that say the file is not the index this version made (a page
# damaged, a table missing or altered, rows that contradict each other): SQLITE_ERROR (the
# index's own statements fail only on a schema that is not theirs), CORRUPT, CONSTRAINT,
# MISMATCH, FORMAT, NOTADB. The others (busy, locked, read-only, I/O, full, cannot open) say
# something of the disk or the moment, and are reported as they are.
_DAMAGE_CODES = frozenset({
    sqlite3.SQLITE_ERROR, sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_CONSTRAINT,
    sqlite3.SQLITE_MISMATCH, sqlite3.SQLITE_FORMAT, sqlite3.SQLITE_NOTADB,
})  # fmt: skip

# Why a write made in passing (:func:`_record_in_passing`) is not made: another process
# writes, or the file is read-only.
_IN_PASSING = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_READONLY})

_T = TypeVar("_T")

_clock = time.time_ns  # the time a folder state is compared with (tests move it)


def index_path(paths: MemoryPaths) -> Path:
    """Where the recall index of ``paths``' archives is (it may not exist)."""
    return paths.archive_dir / INDEX_NAME


def is_index_file(name: str) -> bool:
    """Whether a file name in ``archive/`` is the recall index or its SQLite journal."""
    return name == INDEX_NAME or any(name == INDEX_NAME + side for side in _SIDE_FILES)


@dataclass(frozen=True, slots=True)
class Update:
    """What one :func:`update` did: the archives read (added or read again) and the archives
    whose rows were deleted (gone or changed), by name; ``messages`` added."""

    read: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    messages: int = 0


@dataclass(frozen=True, slots=True)
class Hit:
    """One archived message a search found; ``score`` is BM25 (higher is better)."""

    archive: str
    position: int
    role: str
    timestamp: str
    content: str
    score: float


# ---------------------------------------------------------------------------------------------
# The archives on disk


def _archives_on_disk(paths: MemoryPaths, skip: Collection[str]) -> dict[str, tuple[int, int, int]]:
    """Each archive in ``archive/`` (a regular file with an archive's name, not in ``skip``)
    and its identity; no folder, no archives."""
    found: dict[str, tuple[int, int, int]] = {}
    try:
        entries = list(os.scandir(paths.archive_dir))
    except (FileNotFoundError, NotADirectoryError):
        return found
    for entry in entries:
        if entry.name in skip or not _is_archive_name(entry.name):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue
        if stat.S_ISREG(info.st_mode):
            found[entry.name] = _identity(info)
    return found


def _edit_archives_of(paths: MemoryPaths) -> set[str]:
    """The archives an edit made (:func:`memorylab.memory._records.edit_archives`, the loaders'
    rule): recall leaves them out. Each archive's own word first (an edit's name ends
    ``_edit.md``), so a ``compactions.jsonl`` lost or cut makes none of them recalled; then,
    for the archives edits wrote before their names said so, the records of kind ``"edit"``
    (one recorded as an edit's later, after a crash, leaves the index at the next update).
    A line that does not read (cut off, a hand edit nested past reading) names none."""
    try:
        names = os.listdir(paths.archive_dir)
    except (FileNotFoundError, NotADirectoryError):
        names = []
    try:
        data = read_bytes(paths.compactions)
    except (FileNotFoundError, NotADirectoryError, UnsafePath):
        data = b""
    records = []
    for line in data.split(b"\n"):  # the JSON Lines rule: a line ends at b"\n" only
        if b'"edit"' not in line:  # most lines are compactions: parsed only when they may not be
            continue
        record = read_record_line(line.decode("utf-8", errors="replace")).record
        if record is not None:
            records.append(record)
    return edit_archives(records, names)


@functools.lru_cache(maxsize=1 << 16)
def _is_archive_name(name: str) -> bool:
    """:func:`memorylab.memory._format.parse_archive_name` says it is one (remembered: every
    update lists every archive, and parsing a name's date is most of that listing's cost)."""
    return fmt.parse_archive_name(name) is not None


def _identity(info: os.stat_result) -> tuple[int, int, int]:
    return (info.st_size, info.st_mtime_ns, info.st_ino)


# ---------------------------------------------------------------------------------------------
# The file


def _require_folder(folder: Path) -> None:
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafePath(f"{folder} should be a folder (a symlink?); recall does not follow it")


def _index_files(paths: MemoryPaths) -> list[Path]:
    """Every name SQLite may open for the index: the file, its journal, a write-ahead log's."""
    base = index_path(paths)
    return [base, *(base.with_name(base.name + side) for side in _SIDE_FILES)]


class _Damaged(sqlite3.DatabaseError):
    """The index, or a file at one of its names, is not what this version makes (the reason);
    :func:`_using` removes it and builds it again. A ``sqlite3.DatabaseError``, so a caller
    that sees it (a second damage at once) reports it as SQLite's own."""


def _is_damage(error: BaseException) -> bool:
    if isinstance(error, _Damaged):
        return True
    code = getattr(error, "sqlite_errorcode", None)
    damaged = code is not None and (code & 0xFF) in _DAMAGE_CODES
    return isinstance(error, sqlite3.DatabaseError) and damaged


def _clear_the_way(paths: MemoryPaths) -> None:
    """Look at every name SQLite may open for the index before it opens any (``lstat`` only:
    nothing is opened, so nothing blocks). SQLite follows a symlink and blocks on a FIFO, and
    the index keeps no write-ahead log, so a non-regular file at any name, or a ``-wal`` or
    ``-shm`` at all, is damage (:class:`_Damaged`); a folder is an ``UnsafePath`` (not the
    index's to remove). A file put there after this look is not seen (SQLite opens by name)."""
    for path in _index_files(paths):
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            continue
        if stat.S_ISDIR(mode):
            raise UnsafePath(
                f"{path} is a folder where the recall index keeps a file; move it aside (the "
                "index is built again from the archives)"
            )
        if not stat.S_ISREG(mode):
            raise _Damaged(f"{path.name} is not a regular file (a symlink, FIFO, socket?)")
        if path != index_path(paths) and not path.name.endswith("-journal"):
            raise _Damaged(f"{path.name} is a write-ahead log, which the index never keeps")


def _open_file(path: Path) -> None:
    """Create the index file 0o600 unless it exists (:func:`open_regular`: never through a
    symlink, never blocking on a FIFO), so SQLite opens a private file (its journal takes the
    same mode); a file whose header says write-ahead log is damage (SQLite would open a
    ``-wal`` and ``-shm`` beside it)."""
    fd = open_regular(path, os.O_RDWR | os.O_CREAT)
    try:
        with contextlib.suppress(OSError):  # a filesystem without modes: created at most 0o600
            if stat.S_IMODE(os.fstat(fd).st_mode) != FILE_MODE:
                os.fchmod(fd, FILE_MODE)
        header = os.pread(fd, 20, 0)
    finally:
        os.close(fd)
    if header.startswith(b"SQLite format 3\x00") and header[18:20] != b"\x01\x01":
        raise _Damaged("its header says write-ahead log (the index keeps a rollback journal)")


def remove_files(paths: MemoryPaths) -> None:
    """Delete the index and its journal (it is derived: the next recall builds it again), and
    whatever else is at their names (a symlink itself, never its target) but a folder, which
    is not the index's (:func:`_clear_the_way` reports it)."""
    for path in _index_files(paths):
        try:
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                os.unlink(path)
        except FileNotFoundError:
            continue


def _discard(paths: MemoryPaths, error: BaseException, *, rebuilt: bool) -> None:
    """Remove a damaged index with its journal, and say so (once: the rebuild is quiet)."""
    remove_files(paths)
    logger.warning(
        "memorylab: %s is not a recall index memorylab can use (%s); it was removed, and %s "
        "built again from the archives",
        index_path(paths),
        error,
        "is" if rebuilt else "the next recall has it",
    )


@contextlib.contextmanager
def _connection(paths: MemoryPaths, timeout: float) -> Iterator[sqlite3.Connection]:
    """A connection to the index (created with its tables if missing), closed afterwards.
    Raises :class:`_Damaged` (or SQLite's own error) when what is there is not a whole index
    of this version, ``UnsafePath`` for a folder in the way."""
    path = index_path(paths)
    _require_folder(paths.archive_dir)
    _clear_the_way(paths)
    _open_file(path)
    con = sqlite3.connect(path, timeout=timeout, isolation_level=None)
    try:
        con.execute("PRAGMA secure_delete = ON")
        con.execute("PRAGMA journal_mode = TRUNCATE")
        con.execute("PRAGMA temp_store = MEMORY")
        _ensure_schema(con)
        yield con
    finally:
        con.close()


def _using(
    paths: MemoryPaths,
    timeout: float,
    work: Callable[[sqlite3.Connection], _T],
    *,
    rebuild: bool,
) -> _T | None:
    """``work`` done on the index. A damaged index (:func:`_is_damage`) is removed with a
    logged warning (:func:`_discard`), then, with ``rebuild``, made again and ``work`` done on
    it (the index is a cache: ``work`` brings it up to date); without, ``None`` (the next
    recall builds it). Damage found again at once is raised."""
    try:
        with _connection(paths, timeout) as con:
            return work(con)
    except sqlite3.DatabaseError as error:
        if not _is_damage(error):
            raise
        _discard(paths, error, rebuilt=rebuild)
    if not rebuild:
        return None
    with _connection(paths, timeout) as con:
        return work(con)


def _ensure_schema(con: sqlite3.Connection) -> None:
    """Create the tables in a new file; a file of another schema, or with a table of the
    schema missing, is :class:`_Damaged`."""
    if _schema_of(con) != SCHEMA:
        with _write(con):
            if _schema_of(con) != SCHEMA:  # still: no other process made them meanwhile
                if con.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                    raise _Damaged(f"it holds tables, but not of the schema {SCHEMA}")
                con.execute("CREATE TABLE recall_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                con.executemany(
                    "INSERT INTO recall_meta VALUES (?, ?)",
                    [("schema", SCHEMA), ("tokenizer", TOKENIZER)],
                )
                con.execute(
                    "CREATE TABLE recall_archives (name TEXT PRIMARY KEY, size INTEGER NOT NULL, "
                    "mtime_ns INTEGER NOT NULL, inode INTEGER NOT NULL, "
                    "first_row INTEGER NOT NULL, messages INTEGER NOT NULL)"
                )
                con.execute("CREATE INDEX recall_archives_rows ON recall_archives (first_row)")
                con.execute(
                    "CREATE VIRTUAL TABLE recall_messages USING fts5(content, role UNINDEXED, "
                    f"timestamp UNINDEXED, tokenize = '{TOKENIZER}')"
                )
    missing = _TABLES.difference(name for (name,) in con.execute("SELECT name FROM sqlite_master"))
    if missing:
        raise _Damaged(f"its table {min(missing)} is missing")
    _vocabulary(con)


def _schema_of(con: sqlite3.Connection) -> str | None:
    """The schema the file's tables are of (``None``: a new file, or not an index's)."""
    try:
        row = con.execute("SELECT value FROM recall_meta WHERE key = 'schema'").fetchone()
    except sqlite3.OperationalError as error:
        if "no such table" not in str(error):
            raise
        return None
    return None if row is None else str(row[0])


def _vocabulary(con: sqlite3.Connection) -> None:
    """The FTS5 vocabulary of the index (how many messages hold a term), per connection."""
    con.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.recall_vocabulary "
        "USING fts5vocab(main, recall_messages, 'row')"
    )


@contextlib.contextmanager
def _write(con: sqlite3.Connection) -> Iterator[None]:
    """One write transaction: the write lock first (``BEGIN IMMEDIATE``), all or nothing."""
    con.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


# ---------------------------------------------------------------------------------------------
# Bringing it up to date


def _recorded(con: sqlite3.Connection) -> dict[str, tuple[int, int, int]]:
    return {
        str(name): (int(size), int(mtime), int(inode))
        for name, size, mtime, inode in con.execute(
            "SELECT name, size, mtime_ns, inode FROM recall_archives"
        )
    }


def _folder_state(paths: MemoryPaths, skip: Collection[str]) -> tuple[str, bool]:
    """What decides the index's content besides the archives' own bytes, as a key: the
    ``archive/`` folder's identity, modification and change times (an archive added, removed
    or renamed changes them; so does setting them back by hand, which changes the change
    time), ``compactions.jsonl``'s identity and size (the edits' archives) and the ``skip``
    names; and whether it is settled: taken :data:`SETTLED_NS` after the last of those times
    (module docstring)."""
    now = _clock()
    folder = os.lstat(paths.archive_dir)
    times = [folder.st_mtime_ns, folder.st_ctime_ns]
    log: list[int] | None = None
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        info = os.lstat(paths.compactions)
        log = [info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]
        times += log[3:]
    key = json.dumps([[folder.st_dev, folder.st_ino, *times[:2]], log, sorted(skip)])
    return key, max(times) < now - SETTLED_NS


def _recorded_state(con: sqlite3.Connection) -> str | None:
    row = con.execute("SELECT value FROM recall_meta WHERE key = 'state'").fetchone()
    return None if row is None else str(row[0])


def _record_state(con: sqlite3.Connection, state: str | None) -> None:
    """Record the folder state the rows were compared with (the caller holds the write lock);
    ``None``: none (the next update compares every archive)."""
    if state is None:
        con.execute("DELETE FROM recall_meta WHERE key = 'state'")
    else:
        con.execute("INSERT OR REPLACE INTO recall_meta VALUES ('state', ?)", (state,))


def _record_in_passing(con: sqlite3.Connection, paths: MemoryPaths, skip: Collection[str]) -> None:
    """Record the folder state of an index whose rows are current: a write worth making only
    when it costs no wait, so another process's write (or a read-only file) leaves it to a
    later query. Taken and compared again under the write lock, as :func:`update` does."""
    (busy_ms,) = con.execute("PRAGMA busy_timeout").fetchone()
    con.execute("PRAGMA busy_timeout = 0")
    try:
        with _write(con):
            state, settled = _folder_state(paths, skip)
            on_disk = _archives_on_disk(paths, {*skip, *_edit_archives_of(paths)})
            if settled and _recorded(con) == on_disk:
                _record_state(con, state)
    except sqlite3.OperationalError as error:
        if (getattr(error, "sqlite_errorcode", 0) & 0xFF) not in _IN_PASSING:
            raise
    finally:
        con.execute(f"PRAGMA busy_timeout = {int(busy_ms)}")


def update(
    paths: MemoryPaths,
    *,
    skip: Collection[str] = (),
    create: bool = True,
    timeout: float = 30.0,
    check_all: bool = False,
) -> Update:
    """Bring the index of ``paths``' archives up to date (module docstring) and say what was
    done. ``skip``: archive names not to index (an uncommitted compaction's); the archives an
    edit made are never indexed (:func:`_edit_archives_of`). ``create=False`` updates an index that
    exists and creates none (the compaction's hook: an agent whose archives were never recalled
    gets no index), and a damaged one is only removed. No archives and no index: nothing is
    made. ``check_all``: compare every archive even when the folder's state is the recorded
    one (an archive written into in place is then seen too)."""
    if not os.path.lexists(index_path(paths)):
        if not create:
            return Update()  # the common case of a compaction: costs one lstat
        if not _archives_on_disk(paths, {*skip, *_edit_archives_of(paths)}):
            return Update()

    def work(con: sqlite3.Connection) -> Update:
        return _bring_up_to_date(con, paths, skip, check_all=check_all)

    return _using(paths, timeout, work, rebuild=create) or Update()


def _bring_up_to_date(
    con: sqlite3.Connection, paths: MemoryPaths, skip: Collection[str], *, check_all: bool
) -> Update:
    """:func:`update` on an open index."""
    state, settled = _folder_state(paths, skip)
    recorded_state = _recorded_state(con)
    if settled and state == recorded_state and not check_all:
        return Update()  # nothing changed: the common case, O(1)
    on_disk = _archives_on_disk(paths, {*skip, *_edit_archives_of(paths)})
    if _recorded(con) == on_disk:  # nothing changed
        if settled and state != recorded_state:
            _record_in_passing(con, paths, skip)
        return Update()
    with _write(con):
        # Taken and listed again under the write lock: a deletion unlinks its archives before
        # it takes this lock to delete their rows, so rows written here are either of files
        # still there, or deleted by it right after. The state is taken before the listing:
        # a change after it shows in the next state.
        state, settled = _folder_state(paths, skip)
        on_disk = _archives_on_disk(paths, {*skip, *_edit_archives_of(paths)})
        recorded = _recorded(con)
        dropped = sorted(name for name in recorded if on_disk.get(name) != recorded[name])
        _delete_rows(con, dropped)
        read: list[str] = []
        added = 0
        for name in sorted(set(on_disk) - (set(recorded) - set(dropped))):
            count = _add_archive(con, paths, name)
            if count is None:
                settled = False  # changed while read: the next update reads it
            else:
                read.append(name)
                added += count
        if dropped:
            _optimize(con)
        _record_state(con, state if settled else None)
    return Update(tuple(read), tuple(dropped), added)


def _add_archive(con: sqlite3.Connection, paths: MemoryPaths, name: str) -> int | None:
    """Index one archive's messages under the identity of the file read (the number indexed);
    ``None`` when it is gone or changed while it was read (the next update reads it).

    A compaction summary (``[Compressed Memory Summary] ...``, the first block of a file a
    compaction re-seeded) is not indexed: it is the compaction's paraphrase, not a message that
    left the context, and the messages it summarized are indexed word for word. Its position
    still counts: a message's position is its index among the archive's blocks."""
    try:
        fd = open_regular(paths.archive_dir / name, os.O_RDONLY)
    except (FileNotFoundError, UnsafePath):
        return None
    try:
        before = os.fstat(fd)
        data = read_fd(fd)
        if _identity(os.fstat(fd)) != _identity(before):
            return None
    finally:
        os.close(fd)
    messages = fmt.parse(data.decode("utf-8", errors="replace"), strict=False).document.messages
    (first,) = con.execute(
        "SELECT coalesce(max(first_row + messages), 1) FROM recall_archives"
    ).fetchone()
    rows = [(first + i, m.content, m.role, m.timestamp.isoformat())
            for i, m in enumerate(messages) if not m.is_summary]  # fmt: skip
    con.executemany(
        "INSERT INTO recall_messages (rowid, content, role, timestamp) VALUES (?, ?, ?, ?)", rows
    )
    size, mtime, inode = _identity(before)
    con.execute(
        "INSERT OR REPLACE INTO recall_archives VALUES (?, ?, ?, ?, ?, ?)",
        (name, size, mtime, inode, first, len(messages)),
    )
    return len(rows)


def _delete_rows(con: sqlite3.Connection, names: Iterable[str]) -> list[str]:
    """Delete the rows (and the record) of each recorded archive in ``names``; the names that
    were recorded. The caller holds the write lock, and optimizes afterwards."""
    done = []
    for name in names:
        row = con.execute(
            "SELECT first_row, messages FROM recall_archives WHERE name = ?", (name,)
        ).fetchone()
        if row is None:
            continue
        first, count = row
        con.execute(
            "DELETE FROM recall_messages WHERE rowid BETWEEN ? AND ?", (first, first + count - 1)
        )
        con.execute("DELETE FROM recall_archives WHERE name = ?", (name,))
        done.append(name)
    return done


def _optimize(con: sqlite3.Connection) -> None:
    """Merge the full-text index into one segment: the terms of deleted rows go with their
    delete markers (and, with ``secure_delete``, the old segments' pages are zeroed)."""
    con.execute("INSERT INTO recall_messages (recall_messages) VALUES ('optimize')")


# ---------------------------------------------------------------------------------------------
# What deletions and compactions call


def drop_archives(paths: MemoryPaths, names: Sequence[str], *, timeout: float = 30.0) -> None:
    """Delete from the index (if there is one) the rows of the archives ``names`` — deleted
    from disk already, by the store, under the agent's lock — and of any other recorded
    archive that is gone, securely (module docstring). Should that fail, the index file is
    deleted instead (it holds nothing the archives do not); a ``StoreError`` only when neither
    could be done, as the index may then still hold the deleted text."""
    path = index_path(paths)
    if not names or not os.path.lexists(path):
        return

    def work(con: sqlite3.Connection) -> None:
        with _write(con):
            on_disk = _archives_on_disk(paths, ())
            gone = [*names, *(name for name in _recorded(con) if name not in on_disk)]
            if _delete_rows(con, dict.fromkeys(gone)):
                _optimize(con)
            _record_state(con, None)  # the next update compares every archive

    try:  # a damaged index is removed, not built again: this runs under the agent's lock
        _using(paths, timeout, work, rebuild=False)
    except (OSError, sqlite3.Error) as error:
        try:
            remove_files(paths)
        except OSError as removal:
            raise StoreError(
                f"the archives {', '.join(names)} were deleted, but the recall index {path} "
                f"may still hold their text: it could be neither updated ({error}) nor deleted "
                f"({removal.strerror or removal}); delete it by hand"
            ) from error
        logger.warning(
            "memorylab: the recall index %s could not be updated after a deletion (%s); its "
            "files were deleted (the next recall builds it again)",
            path,
            error,
        )


def after_compaction(paths: MemoryPaths) -> None:
    """Add the archive a compaction just wrote to the index, if the agent has one (called by
    the store under the agent's lock, after the commit). Never raises: the compaction is done,
    and the next recall catches up with whatever this could not do. Never blocks without a
    bound: SQLite's lock is waited for :data:`HOOK_TIMEOUT_S` at most, a FIFO or symlink at
    the index's names is removed unopened, and a damaged index is removed, not built again
    (the next recall builds it)."""
    try:
        update(paths, create=False, timeout=HOOK_TIMEOUT_S)
    except Exception as error:  # a compaction never fails because of the index
        logger.warning(
            "memorylab: the recall index %s was not updated after a compaction (%s: %s); the "
            "next recall brings it up to date",
            index_path(paths),
            type(error).__name__,
            error,
        )


# ---------------------------------------------------------------------------------------------
# Searching


_QUERY_DB = threading.local()


def _tokenizer() -> sqlite3.Connection:
    """A per-thread in-memory database that splits text as the index does."""
    db: sqlite3.Connection | None = getattr(_QUERY_DB, "db", None)
    if db is None:
        db = sqlite3.connect(":memory:", isolation_level=None)
        db.execute(f"CREATE VIRTUAL TABLE stemmed USING fts5(text, tokenize = '{TOKENIZER}')")
        db.execute(
            "CREATE VIRTUAL TABLE plain USING fts5(text, tokenize = "
            f"'{TOKENIZER.removeprefix('porter ')}')"
        )
        db.execute("CREATE VIRTUAL TABLE stemmed_at USING fts5vocab(stemmed, 'instance')")
        db.execute("CREATE VIRTUAL TABLE plain_at USING fts5vocab(plain, 'instance')")
        _QUERY_DB.db = db
    return db


def storable(text: str) -> str:
    """``text`` as SQLite can take it: UTF-8, so a lone surrogate (which no UTF-8 text holds,
    and no file memorylab writes) becomes U+FFFD, not a letter; a pair of surrogates becomes
    the character they encode."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def query_terms(text: str) -> list[tuple[str, str]]:
    """The words of ``text`` as the index sees them, each once, in order: ``(term, word)``, the
    term as the index holds it (stemmed) and the word to search for (folded, not stemmed: the
    index stems what it is asked). Only FTS5's own tokenizer reads the text, so no character of
    it is ever read as query syntax. Linear in the text: each tokenizer's words are read once
    and paired by their position in Python (SQLite joined the two lists on the position
    without an index: quadratic, 13 s for a 100 KB text)."""
    db = _tokenizer()
    text = storable(text)
    try:
        db.execute("INSERT INTO stemmed (rowid, text) VALUES (1, ?)", (text,))
        db.execute("INSERT INTO plain (rowid, text) VALUES (1, ?)", (text,))
        words = dict(db.execute("SELECT offset, term FROM plain_at").fetchall())
        stems = sorted(db.execute("SELECT offset, term FROM stemmed_at").fetchall())
    finally:
        db.execute("DELETE FROM stemmed")
        db.execute("DELETE FROM plain")
    found: dict[str, str] = {}
    for offset, term in stems:
        found.setdefault(str(term), str(words[offset]))
    return list(found.items())


def search(
    paths: MemoryPaths,
    terms: Sequence[tuple[str, str]],
    k: int,
    *,
    skip: Collection[str] = (),
    timeout: float = 30.0,
) -> list[Hit]:
    """The ``k`` archived messages that match any of ``terms`` (:func:`query_terms`) best, by
    FTS5's BM25, best first, from the index brought up to date first (:func:`update`, with
    ``skip``; built if missing, built again if damaged). Searched for (:func:`ranked`): the
    :data:`MAX_QUERY_TERMS` rarest of ``terms`` in the index, but the :data:`STOP_WORDS` and
    the terms that half of the messages or more hold (BM25 gives them no weight: their IDF is
    at most 0, which FTS5 raises to 1e-6), unless nothing else is left. Both spare scoring
    the many messages that hold only such words, and change the scores by next to nothing."""
    if not terms:
        return []
    if not os.path.lexists(index_path(paths)) and not _archives_on_disk(paths, skip):
        return []  # no archives, no index: nothing is made

    def work(con: sqlite3.Connection) -> list[Hit]:
        _bring_up_to_date(con, paths, skip, check_all=False)
        return ranked(con, terms, k)

    return _using(paths, timeout, work, rebuild=True) or []


def in_memory(messages: Iterable[tuple[str, str, str]], name: str) -> sqlite3.Connection:
    """An index of ``messages`` (``(role, content, timestamp)``, as one archive named ``name``)
    in memory: what :func:`ranked` searches for a history that is not on disk (an
    evaluation's), by the same rule as an agent's index."""
    con = sqlite3.connect(":memory:", isolation_level=None)
    _ensure_schema(con)
    rows = [(1 + i, storable(content), storable(role), stamp)
            for i, (role, content, stamp) in enumerate(messages)]  # fmt: skip
    with _write(con):
        con.executemany(
            "INSERT INTO recall_messages (rowid, content, role, timestamp) VALUES (?, ?, ?, ?)",
            rows,
        )
        con.execute("INSERT INTO recall_archives VALUES (?, 0, 0, 0, 1, ?)", (name, len(rows)))
    return con


def ranked(con: sqlite3.Connection, terms: Sequence[tuple[str, str]], k: int) -> list[Hit]:
    """:func:`search` on an open index."""
    if not terms:
        return []
    terms = [(term, word) for term, word in terms if word not in STOP_WORDS] or list(terms)
    (total,) = con.execute("SELECT coalesce(sum(messages), 0) FROM recall_archives").fetchone()
    weighted: list[tuple[int, str]] = []  # (messages holding the term, the word to search)
    weightless: list[tuple[int, str]] = []
    lookup = con.cursor()
    for term, word in terms:
        row = lookup.execute(
            "SELECT doc FROM temp.recall_vocabulary WHERE term = ?", (term,)
        ).fetchone()
        if row is not None and row[0]:
            holders = int(row[0])
            (weighted if _has_weight(holders, int(total)) else weightless).append((holders, word))
    # The rarest first (a stable sort: the question's order among equals), MAX_QUERY_TERMS.
    rarest = sorted(weighted or weightless, key=lambda found: found[0])[:MAX_QUERY_TERMS]
    words = [word for _, word in rarest]
    if not words:
        return []
    expression = " OR ".join('"' + word.replace('"', '""') + '"' for word in words)
    # ORDER BY the bm25() expression, not FTS5's rank column: SQLite then keeps only the
    # best k rows while it scores them (rank sorts every match first: 1.5x slower here).
    best = con.execute(
        "SELECT rowid, bm25(recall_messages) AS score FROM recall_messages "
        "WHERE recall_messages MATCH ? ORDER BY score, rowid LIMIT ?",
        (expression, k),
    ).fetchall()
    hits = []
    for rowid, score in best:
        message = con.execute(
            "SELECT role, timestamp, content FROM recall_messages WHERE rowid = ?", (rowid,)
        ).fetchone()
        archive = con.execute(
            "SELECT name, first_row FROM recall_archives WHERE first_row <= ? "
            "AND ? < first_row + messages ORDER BY first_row DESC LIMIT 1",
            (rowid, rowid),
        ).fetchone()
        if message is None or archive is None:
            raise _Damaged(f"its message {rowid} has no content or no archive")
        role, timestamp, content = message
        name, first = archive
        where = (str(name), int(rowid - first))
        hits.append(Hit(*where, str(role), str(timestamp), str(content), -float(score)))
    return hits


def _has_weight(holders: int, total: int) -> bool:
    """Whether BM25 as FTS5 computes it gives a term held by ``holders`` of ``total`` messages
    a weight: its IDF, ``log((N - n + 0.5) / (n + 0.5))``, is above 0, that is ``2n < N``."""
    return 2 * holders < total
