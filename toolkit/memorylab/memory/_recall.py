"""Recall: search an agent's archives, the messages compactions took out of the context.

Every compaction keeps what it summarized in ``archive/history_<time>.md``; :func:`recall`
finds the archived messages that best match a query (BM25, SQLite's FTS5) and returns them with
their archive, position, role and timestamp. The index it searches is a private SQLite file
beside the archives (``archive/.recall.sqlite``, :mod:`memorylab.memory._recall_index`): built
by the first recall, brought up to date by every recall from what it recorded of each archive
(new archives read, gone or changed ones dropped), and by each compaction of an agent that has
one. MEMORY.md itself is not searched (it is in the context already), nor are compaction
summaries (the messages they summarized are, word for word), nor the archives an edit of the
history made (what it changed or removed was changed or removed on purpose).

Three ways in: :func:`recall` (and :func:`recall_df`, a DataFrame, for notebooks); the
``recall(query)`` tool an ``Agent`` can call (:func:`memorylab.tools.recall_tool`); and
:func:`recall_context`, the text a reader is given beside the memory in an evaluation. See
docs/recall.md.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, overload, runtime_checkable

from memorylab._validation import check_int
from memorylab.config import resolve_workspace
from memorylab.errors import AgentNotFound, InvalidSetting, StoreError
from memorylab.memory import _format as fmt
from memorylab.memory import _recall_index as index
from memorylab.memory._fsutil import store_error
from memorylab.memory._paths import MemoryPaths, agent_folders, agent_paths
from memorylab.memory._store import MemoryStore

if TYPE_CHECKING:
    import pandas as pd

RECALL_HEADING = "[Recalled from archives]"
"""The first line of :func:`format_recalled`'s text (a reader can tell recalled messages from
the memory they are given with)."""


@runtime_checkable
class HasMemoryFile(Protocol):
    """What recall reads of a ``Conversation``: where its MEMORY.md is (``None``: in memory
    only), and its agent's name (``None``: the name of the file's folder)."""

    @property
    def memory_md_path(self) -> Path | None: ...

    @property
    def agent_name(self) -> str | None: ...


Source = str | os.PathLike[str] | HasMemoryFile | None
"""A workspace (the folder holding ``agents/``, or ``agents/`` itself; ``None``: the default
workspace), an agent folder, a MEMORY.md or an archive file, or a ``Conversation``."""


@dataclass(frozen=True, slots=True)
class RecalledMessage:
    """One archived message that :func:`recall` found.

    ``archive`` is the file that holds it (``history_<time>.md`` in the agent's ``archive/``),
    ``position`` its index among that archive's messages (from 0), ``score`` its BM25 score
    (higher is better; scores of one query compare, scores of different queries do not).
    """

    agent: str
    archive: str
    position: int
    role: str
    timestamp: datetime
    content: str
    score: float

    @classmethod
    def of(cls, agent: str, hit: index.Hit) -> RecalledMessage:
        """The message an index search found (``agent``: whose index; ``""`` in memory)."""
        return cls(agent, hit.archive, hit.position, hit.role,
                   datetime.fromisoformat(hit.timestamp), hit.content, hit.score)  # fmt: skip

    def text(self) -> str:
        """The message as the model reads history: ``[<timestamp>] <role>: <content>``."""
        return fmt.history_line(self.role, self.content, self.timestamp)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class IndexUpdate:
    """What :func:`update_recall_index` did for one agent: the archives it read (new or
    changed), the archives whose rows it deleted (gone or changed), the messages it added."""

    agent: str
    index: Path
    read: tuple[str, ...]
    dropped: tuple[str, ...]
    messages: int


# ---------------------------------------------------------------------------------------------
# Which agents a source names


def _agents(source: Source, agent: str | None) -> list[tuple[str, MemoryPaths]]:
    """``(name, paths)`` of each agent ``source`` (and ``agent``) names, checked."""
    if agent is not None and not isinstance(agent, str):
        raise InvalidSetting(f"agent must be an agent's name (str), not {type(agent).__name__}")
    if source is not None and not isinstance(source, str | os.PathLike):
        if not isinstance(source, HasMemoryFile):
            raise InvalidSetting(
                "source must be a workspace, an agent folder, a MEMORY.md (a path) or a "
                f"Conversation, not {type(source).__name__}"
            )
        memory = source.memory_md_path
        if memory is None:
            raise InvalidSetting(
                "this Conversation keeps no memory on disk (memory_md_path is None): it has no "
                "archives to recall from"
            )
        if agent is not None:
            raise InvalidSetting("agent= names an agent of a workspace; a Conversation is one")
        name = source.agent_name or Path(memory).parent.name
        return [(str(name), MemoryPaths(Path(memory)))]
    root = resolve_workspace(None) if source is None else Path(source).expanduser()
    if not root.exists():
        raise StoreError(
            f"{root} does not exist; give a workspace (the folder holding agents/), an agent "
            "folder or a MEMORY.md"
        )
    if root.is_file():
        folder = _folder_of_file(root)
        if agent is not None:
            raise InvalidSetting(
                f"agent= names an agent of a workspace; {root} is one agent's file"
            )
        return [(folder.name, MemoryPaths(folder / "MEMORY.md"))]
    agents_dir = root / "agents" if (root / "agents").is_dir() else None
    if agents_dir is None and root.name == "agents":
        agents_dir = root
    if agents_dir is None:
        if (root / "MEMORY.md").exists() or (root / "archive").is_dir():
            if agent is not None:
                raise InvalidSetting(f"agent= names an agent of a workspace; {root} is one agent")
            return [(root.name, MemoryPaths(root / "MEMORY.md"))]
        raise StoreError(
            f"{root} is not a workspace (it has no agents/ folder) nor an agent folder (no "
            "MEMORY.md, no archive/)"
        )
    if agent is None:
        return [
            (folder.relative_to(agents_dir).as_posix(), MemoryPaths(folder / "MEMORY.md"))
            for folder in agent_folders(agents_dir)
        ]
    paths = agent_paths(agent, agents_dir.parent, nested=True)
    if not paths.folder.is_dir():
        known = [f.relative_to(agents_dir).as_posix() for f in agent_folders(agents_dir)]
        listed = f"agents there: {', '.join(known[:10])}" if known else "it has no agents"
        raise AgentNotFound(
            f"no memory for agent {agent!r} in {agents_dir.parent} ({listed}); check the name "
            "and the workspace"
        )
    return [(agent, paths)]


def _folder_of_file(path: Path) -> Path:
    if path.name == "MEMORY.md":
        return path.parent
    if path.parent.name == "archive" and fmt.parse_archive_name(path.name) is not None:
        return path.parent.parent
    raise StoreError(
        f"{path} is a file, not a workspace; give a workspace (the folder holding agents/), an "
        "agent folder or a MEMORY.md"
    )


# ---------------------------------------------------------------------------------------------
# Keeping the index up to date


def _pending(paths: MemoryPaths) -> tuple[str, ...]:
    """The archive of an uncommitted compaction, which the index leaves out until it commits."""
    pending = MemoryStore(paths.memory_md).pending_archive()
    return () if pending is None else (pending,)


def _index_error(name: str, paths: MemoryPaths, error: Exception) -> StoreError:
    """An index that could be neither used nor built again (a damaged one is built again by
    the index itself), as the caller's error."""
    if isinstance(error, StoreError):  # an UnsafePath: a folder in the index's way
        return error
    if isinstance(error, OSError):
        return store_error(error, index.index_path(paths), "update the recall index")
    return StoreError(
        f"cannot use the recall index of {name!r} ({index.index_path(paths)}): {error}; recall "
        "writes it beside the archives, so it needs write access there"
    )


def _update(name: str, paths: MemoryPaths, *, timeout: float) -> index.Update:
    """Bring ``paths``' index up to date, comparing every archive."""
    try:
        return index.update(paths, skip=_pending(paths), timeout=timeout, check_all=True)
    except (OSError, sqlite3.Error) as error:
        raise _index_error(name, paths, error) from error


def update_recall_index(
    source: Source, *, agent: str | None = None, lock_timeout: float = 30.0
) -> list[IndexUpdate]:
    """Build or bring up to date the recall index of each agent ``source`` names (one per
    agent with archives), and say what was read and dropped. :func:`recall` does this itself
    before it searches; call it to build an index ahead of time, so that compactions keep it
    up to date from then on. Unlike a recall, which trusts the archive folder's recorded state
    when it has not changed, it compares every archive, so an archive written into in place
    (its folder unchanged) is read again too (docs/recall.md)."""
    done = []
    for name, paths in _agents(source, agent):
        update = _update(name, paths, timeout=lock_timeout)
        done.append(IndexUpdate(name, index.index_path(paths), update.read, update.dropped,
                                update.messages))  # fmt: skip
    return done


# ---------------------------------------------------------------------------------------------
# Searching


def _terms(query: object) -> list[tuple[str, str]]:
    if not isinstance(query, str):
        raise InvalidSetting(f"query must be a string, not {type(query).__name__}")
    terms = index.query_terms(query)
    if not terms:
        shown = repr(query) if len(query) <= 80 else f"{query[:60]!r}... ({len(query):,} chars)"
        raise InvalidSetting(
            f"query {shown} has no words to search for (letters or digits): give a name, a "
            "path, a number or a question"
        )
    return terms


def recall(
    source: Source,
    query: str,
    *,
    agent: str | None = None,
    k: int = 5,
    lock_timeout: float = 30.0,
) -> list[RecalledMessage]:
    """The ``k`` archived messages that best match ``query``, best first.

    ``source`` is a workspace (``None``: the default one; every agent in it, or the one named
    by ``agent``), an agent folder, a MEMORY.md or a ``Conversation``. The query is words, not
    a query language: each word (letters and digits; ``nginx.conf`` is two) is looked for in
    any form with the same stem (``workers`` finds ``worker``), case and accents aside, and
    messages are ranked by BM25 over them (rarer words weigh more). Scores of different agents
    come from their own indexes. Each agent's index is brought up to date first (built on the
    first recall: see :func:`update_recall_index`).

    A long query is searched for its :data:`~memorylab.memory._recall_index.MAX_QUERY_TERMS`
    rarest words (docs/recall.md). A damaged index is built again, with one logged warning.

    Raises ``InvalidSetting`` for a query without words or a ``k`` that is not a count >= 1,
    ``AgentNotFound`` for an unknown agent, ``StoreError`` for a source that is no workspace,
    agent or memory file (``UnsafePath`` for a folder where the index keeps a file).
    """
    terms = _terms(query)
    k = check_int("k", k, 1)
    found: list[RecalledMessage] = []
    for name, paths in _agents(source, agent):
        try:
            hits = index.search(paths, terms, k, skip=_pending(paths), timeout=lock_timeout)
        except (OSError, sqlite3.Error) as error:
            raise _index_error(name, paths, error) from error
        found += [RecalledMessage.of(name, hit) for hit in hits]
    found.sort(key=lambda m: (-m.score, m.agent, m.archive, m.position))
    return found[:k]


@overload
def recall_messages(
    messages: Sequence[Mapping[str, Any]], query: str, *, k: int = ..., name: str = ...
) -> list[RecalledMessage]: ...


@overload
def recall_messages(
    messages: Sequence[Mapping[str, Any]], query: list[str], *, k: int = ..., name: str = ...
) -> list[list[RecalledMessage]]: ...


def recall_messages(
    messages: Sequence[Mapping[str, Any]],
    query: str | list[str],
    *,
    k: int = 5,
    name: str = "history",
) -> list[RecalledMessage] | list[list[RecalledMessage]]:
    """The ``k`` of ``messages`` (``{"role", "content", "timestamp"}``, oldest first) that best
    match ``query``, best first, ranked as :func:`recall` ranks an agent's archives (the same
    tokenizer, stop words and BM25) but in memory: for a history that is not on disk, such as
    an evaluation's (each one's ``position`` is its index in ``messages``, ``archive`` is
    ``name``). A message without a timestamp is stamped at the epoch. A list of queries gets a
    list of answers, one per query, from one index of ``messages`` (an evaluation asks each
    probe's question of the same history). Raises ``InvalidSetting`` for a message that is not
    a mapping with a ``role``, a query without words, a ``k`` that is not a count >= 1."""
    queries = [query] if isinstance(query, str) or not isinstance(query, list | tuple) else query
    terms = [_terms(text) for text in queries]
    k = check_int("k", k, 1)
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    if isinstance(messages, str | bytes | Mapping):
        raise InvalidSetting(
            f"messages must be a list of messages ({{'role', 'content'}} mappings), not one "
            f"{type(messages).__name__}"
        )
    rows = [
        (_role(i, m), fmt.content_to_text(m.get("content")), _stamp(m.get("timestamp"), epoch))
        for i, m in enumerate(messages)
    ]
    con = index.in_memory(rows, name)
    try:
        found = [[RecalledMessage.of("", hit) for hit in index.ranked(con, t, k)] for t in terms]
    finally:
        con.close()
    return found[0] if isinstance(query, str) else found


def _role(position: int, message: object) -> str:
    """The role of ``messages[position]``, or an error that says what a message must be."""
    if not isinstance(message, Mapping):
        raise InvalidSetting(
            f"messages[{position}] must be a mapping with 'role' and 'content' (and "
            f"'timestamp'), not {type(message).__name__}"
        )
    if "role" not in message:
        raise InvalidSetting(
            f"messages[{position}] has no 'role': each message needs 'role' and 'content' "
            f"(and 'timestamp'); it has {sorted(map(str, message))}"
        )
    return str(message["role"])


def _stamp(value: object, default: datetime) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    try:
        return fmt.parse_timestamp(str(value)).isoformat()
    except ValueError:
        return default.isoformat()


def format_recalled(messages: Sequence[RecalledMessage]) -> str:
    """Recalled messages as a reader is given them: :data:`RECALL_HEADING`, then each message
    as the model reads history (``[<timestamp>] <role>: <content>``) with the archive it came
    from; ``""`` for none."""
    if not messages:
        return ""
    agents = {m.agent for m in messages}
    parts = [f"{RECALL_HEADING} {len(messages)} archived message(s), most relevant first:"]
    for m in messages:
        where = f"{m.agent}/archive/{m.archive}" if len(agents) > 1 else m.archive
        parts.append(f"{m.text()}\n(from {where}, message {m.position})")
    return "\n\n".join(parts)


def recall_context(source: Source, question: str, *, agent: str | None = None, k: int = 5) -> str:
    """The top ``k`` archived messages for ``question`` as the text a reader is given beside
    the memory (:func:`format_recalled`; ``""`` when none matches): what an evaluation's
    reader of a probe gets in recall mode."""
    return format_recalled(recall(source, question, agent=agent, k=k))


def recall_df(source: Source, query: str, *, agent: str | None = None, k: int = 5) -> pd.DataFrame:
    """:func:`recall` as a DataFrame, one row per message, best first: ``agent``,
    ``archive``, ``position``, ``role``, ``timestamp``, ``content``, ``score``."""
    import pandas as pd

    columns = ["agent", "archive", "position", "role", "timestamp", "content", "score"]
    rows = [m.to_dict() for m in recall(source, query, agent=agent, k=k)]
    return pd.DataFrame(rows, columns=columns)
