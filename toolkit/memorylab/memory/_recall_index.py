"""The recall index: a search index of one agent's archives, kept beside them (private; the
public face is :mod:`memorylab.memory.recall`, see docs/recall.md).

The index is one SQLite file, ``archive/.recall.sqlite`` (0o600; a dot name, so readers of
``archive/`` skip it as they skip temp files), holding an FTS5 table of every archived message
(content, role, timestamp) and a table of the archives it covers, each with the identity of the
file it read: size, inode and modification time (``stat``). Bringing the index up to date
(:func:`update`) is decided from that record, never guessed: an archive on disk that is not
recorded is read (parsed by the one parser, :func:`memorylab.memory.format.parse`, leniently)
and its messages added; a recorded archive that is gone (retention, purge, forget, a user's
``rm``) or whose identity changed has its rows deleted (and a changed one is read again). An
archive that was read is never read again while its identity stays. Compaction summaries and
the archives an edit of the history made are not indexed (:func:`_edit_archives_of`).

SQLite does the rest: its own locking makes the index safe across processes (a writer takes the
write lock, ``BEGIN IMMEDIATE``, before it lists the archives; the others wait for it, up to a
busy timeout), its rollback journal makes an update all or nothing (a process killed inside one
leaves a hot journal that the next connection rolls back), and its FTS5 extension ranks with
BM25 (``bm25()``).

Deletions are private: every connection sets ``PRAGMA secure_delete=ON`` (deleted content is
overwritten with zeros, in the table's pages and in freed pages), and a deletion of rows is
followed by the FTS5 ``optimize`` command, which merges the full-text index into one segment, so
no term of a deleted message is left in an older one (FTS5 otherwise keeps a deleted row's terms
with a delete marker until its segments merge). The journal is SQLite's default rollback
journal (``DELETE`` mode: removed at each commit), never a write-ahead log that would keep old
pages after a commit.

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
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from memorylab.errors import StoreError, UnsafePath
from memorylab.memory import format as fmt
from memorylab.memory._fsutil import (
    CLOEXEC,
    FILE_MODE,
    NOFOLLOW,
    open_regular,
    read_bytes,
    read_fd,
)
from memorylab.memory.paths import MemoryPaths
from memorylab.memory.records import edit_archives

logger = logging.getLogger("memorylab")

INDEX_NAME = ".recall.sqlite"
"""The index file's name in an agent's ``archive/`` folder (SQLite's journal is this name with
``-journal`` appended, present only during an update)."""

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

_SIDE_FILES = ("-journal", "-wal", "-shm")


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
    """The archives an edit made (:func:`memorylab.memory.records.edit_archives`, the loaders'
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
    for line in data.splitlines():
        if b'"edit"' not in line:  # most lines are compactions: parsed only when they may not be
            continue
        with contextlib.suppress(ValueError, RecursionError):
            records.append(json.loads(line))
    return edit_archives(records, names)


@functools.lru_cache(maxsize=1 << 16)
def _is_archive_name(name: str) -> bool:
    """:func:`memorylab.memory.format.parse_archive_name` says it is one (remembered: every
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


def _create_file(path: Path) -> None:
    """Create the index file 0o600 unless it exists (never through a symlink), so SQLite opens
    a private file (its journal takes the same mode)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | NOFOLLOW | CLOEXEC, FILE_MODE)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafePath(f"{path} is not a regular file; move it aside")
        with contextlib.suppress(OSError):  # a filesystem without modes: created at most 0o600
            if stat.S_IMODE(os.fstat(fd).st_mode) != FILE_MODE:
                os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)


def remove_files(paths: MemoryPaths) -> None:
    """Delete the index and its journal (it is derived: the next recall builds it again)."""
    base = index_path(paths)
    for name in (base, *(base.with_name(base.name + side) for side in _SIDE_FILES)):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)


@contextlib.contextmanager
def _connection(paths: MemoryPaths, timeout: float) -> Iterator[sqlite3.Connection]:
    """A connection to the index (created with its tables if missing), closed afterwards.
    A file that is not a SQLite database (damaged, or something else under the name) is
    replaced by a new index: it holds nothing that the archives do not."""
    path = index_path(paths)
    _require_folder(paths.archive_dir)
    for attempt in (1, 2):
        _create_file(path)
        con = sqlite3.connect(path, timeout=timeout, isolation_level=None)
        try:
            con.execute("PRAGMA secure_delete = ON")
            con.execute("PRAGMA temp_store = MEMORY")
            _ensure_schema(con)
        except sqlite3.DatabaseError as error:
            con.close()
            if attempt == 2 or "not a database" not in str(error):
                raise
            logger.warning(
                "memorylab: %s is not a recall index (%s); building it again", path, error
            )
            remove_files(paths)
            continue
        try:
            yield con
        finally:
            con.close()
        return


def _ensure_schema(con: sqlite3.Connection) -> None:
    """Create the tables, or make them again when the file is of another schema."""
    if _schema_of(con) != SCHEMA:
        with _write(con):
            if _schema_of(con) != SCHEMA:  # still: no other process made them meanwhile
                for table in ("recall_messages", "recall_archives", "recall_meta"):
                    con.execute(f"DROP TABLE IF EXISTS {table}")
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
    _vocabulary(con)


def _schema_of(con: sqlite3.Connection) -> str | None:
    """The schema the file's tables are of (``None``: a new file, or not an index's)."""
    try:
        row = con.execute("SELECT value FROM recall_meta WHERE key = 'schema'").fetchone()
    except sqlite3.OperationalError:
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


def update(
    paths: MemoryPaths,
    *,
    skip: Collection[str] = (),
    create: bool = True,
    timeout: float = 30.0,
) -> Update:
    """Bring the index of ``paths``' archives up to date (module docstring) and say what was
    done. ``skip``: archive names not to index (an uncommitted compaction's); the archives an
    edit made are never indexed (:func:`_edit_archives_of`). ``create=False`` updates an index that
    exists and creates none (the compaction's hook: an agent whose archives were never recalled
    gets no index). No archives and no index: nothing is made."""
    if not create and not os.path.lexists(index_path(paths)):
        return Update()  # the common case of a compaction: costs one lstat
    skip = {*skip, *_edit_archives_of(paths)}
    on_disk = _archives_on_disk(paths, skip)
    if not on_disk and not os.path.lexists(index_path(paths)):
        return Update()
    with _connection(paths, timeout) as con:
        if _recorded(con) == on_disk:  # the common case: one read, no write lock
            return Update()
        with _write(con):
            # Listed again under the write lock: a deletion unlinks its archives before it
            # takes this lock to delete their rows, so rows written here are either of files
            # still there, or deleted by it right after.
            on_disk = _archives_on_disk(paths, skip)
            recorded = _recorded(con)
            dropped = sorted(name for name in recorded if on_disk.get(name) != recorded[name])
            _delete_rows(con, dropped)
            read: list[str] = []
            added = 0
            for name in sorted(set(on_disk) - (set(recorded) - set(dropped))):
                count = _add_archive(con, paths, name)
                if count is not None:
                    read.append(name)
                    added += count
            if dropped:
                _optimize(con)
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
    try:
        with _connection(paths, timeout) as con, _write(con):
            on_disk = _archives_on_disk(paths, ())
            gone = [*names, *(name for name in _recorded(con) if name not in on_disk)]
            if _delete_rows(con, dict.fromkeys(gone)):
                _optimize(con)
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
            "memorylab: the recall index %s could not be updated after a deletion (%s); it was "
            "deleted (the next recall builds it again)",
            path,
            error,
        )


def after_compaction(paths: MemoryPaths) -> None:
    """Add the archive a compaction just wrote to the index, if the agent has one (called by
    the store under the agent's lock, after the commit). Never raises: the compaction is done,
    and the next recall catches up with whatever this could not do."""
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


def query_terms(text: str) -> list[tuple[str, str]]:
    """The words of ``text`` as the index sees them, each once, in order: ``(term, word)``, the
    term as the index holds it (stemmed) and the word to search for (folded, not stemmed: the
    index stems what it is asked). Only FTS5's own tokenizer reads the text, so no character of
    it is ever read as query syntax."""
    db = _tokenizer()
    db.execute("DELETE FROM stemmed")
    db.execute("DELETE FROM plain")
    db.execute("INSERT INTO stemmed (rowid, text) VALUES (1, ?)", (text,))
    db.execute("INSERT INTO plain (rowid, text) VALUES (1, ?)", (text,))
    pairs = db.execute(
        "SELECT s.term, p.term FROM stemmed_at AS s JOIN plain_at AS p ON s.offset = p.offset "
        "ORDER BY s.offset"
    ).fetchall()
    found: dict[str, str] = {}
    for term, word in pairs:
        found.setdefault(str(term), str(word))
    return list(found.items())


def search(
    paths: MemoryPaths, terms: Sequence[tuple[str, str]], k: int, *, timeout: float = 30.0
) -> list[Hit]:
    """The ``k`` archived messages that match any of ``terms`` (:func:`query_terms`) best, by
    FTS5's BM25, best first. Left out of the search, unless nothing else is left: the
    :data:`STOP_WORDS`, then the terms that half of the messages or more hold (BM25 gives them
    no weight: their IDF is at most 0, which FTS5 raises to 1e-6). Both spare scoring the
    many messages that hold only such words, and change the scores by next to nothing."""
    if not terms or not os.path.lexists(index_path(paths)):
        return []
    with _connection(paths, timeout) as con:
        return ranked(con, terms, k)


def in_memory(messages: Iterable[tuple[str, str, str]], name: str) -> sqlite3.Connection:
    """An index of ``messages`` (``(role, content, timestamp)``, as one archive named ``name``)
    in memory: what :func:`ranked` searches for a history that is not on disk (an
    evaluation's), by the same rule as an agent's index."""
    con = sqlite3.connect(":memory:", isolation_level=None)
    _ensure_schema(con)
    rows = [(1 + i, content, role, stamp) for i, (role, content, stamp) in enumerate(messages)]
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
    weighted: list[str] = []
    weightless: list[str] = []
    for term, word in terms:
        row = con.execute(
            "SELECT doc FROM temp.recall_vocabulary WHERE term = ?", (term,)
        ).fetchone()
        if row is not None and row[0]:
            (weighted if _has_weight(int(row[0]), int(total)) else weightless).append(word)
    words = weighted or weightless
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
        role, timestamp, content = con.execute(
            "SELECT role, timestamp, content FROM recall_messages WHERE rowid = ?", (rowid,)
        ).fetchone()
        name, first = con.execute(
            "SELECT name, first_row FROM recall_archives WHERE first_row <= ? "
            "AND ? < first_row + messages ORDER BY first_row DESC LIMIT 1",
            (rowid, rowid),
        ).fetchone()
        where = (str(name), int(rowid - first))
        hits.append(Hit(*where, str(role), str(timestamp), str(content), -float(score)))
    return hits


def _has_weight(holders: int, total: int) -> bool:
    """Whether BM25 as FTS5 computes it gives a term held by ``holders`` of ``total`` messages
    a weight: its IDF, ``log((N - n + 0.5) / (n + 0.5))``, is above 0, that is ``2n < N``."""
    return 2 * holders < total
