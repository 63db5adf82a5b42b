"""The OpenAI Agents SDK's session databases: a SQLite file written by ``SQLiteSession`` (and the
sessions built on it: ``AdvancedSQLiteSession``, ``OpenAIResponsesCompactionSession`` wrapping
one), one record per session it holds (docs/formats/openai-agents.md).

What the file keeps (openai-agents 0.24.0, ``agents/memory/sqlite_session.py``):

* a sessions table (``agent_sessions`` by default: ``session_id``, ``created_at``,
  ``updated_at``) and a messages table (``agent_messages``: ``id`` AUTOINCREMENT,
  ``session_id``, ``message_data`` the item as JSON, ``created_at`` SQLite's
  ``CURRENT_TIMESTAMP``, UTC to the second). Both names can be changed by the caller, so the
  tables are found by their columns and the messages table's foreign key, never by name.
* each item is a Responses API input item: a message (``role`` user, assistant, system or
  developer; text or content parts), a ``function_call`` (its ``name``, ``arguments`` and
  ``call_id``) or its ``function_call_output``, a ``reasoning`` item, another tool's call or
  output, or a ``compaction`` item.
* ``OpenAIResponsesCompactionSession`` calls ``responses.compact`` and replaces the items it
  compacted with what the endpoint returned: every user message of them again, then one
  ``compaction`` item whose ``encrypted_content`` only OpenAI can read. The items replaced are
  deleted from the file; the compaction item marks where it fired. A later compaction takes the
  earlier compaction item in and replaces it too, so a file shows the compactions its last
  replacements left, not every compaction of the run.

What it does not keep, said in each record's notes: the summary's text (encrypted), the tokens
before or after a compaction, the history a compaction replaced, the model, the threshold (the
session's decision hook is code), and any usage (``RunResult.context_wrapper.usage`` is in
memory only; ``AdvancedSQLiteSession.store_run_usage`` writes a ``turn_usage`` table, summed per
user turn, not per call: its totals are given in a note, not as calls).

``AdvancedSQLiteSession`` also writes ``message_structure``, which places each row in a branch
(``create_branch_from_turn``): a branch's rows are read in its order, one record per branch, the
rows a branch shares with the one it was made from in both.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memorylab.analysis._foreign import RunCompaction, RunMessage, read_only_database, run_record
from memorylab.analysis._record import AgentRecord
from memorylab.errors import MemoryFormatError

FORMAT = "openai-agents"
_SQLITE_MAGIC = b"SQLite format 3\x00"
_REFERENCES = re.compile(r'REFERENCES\s+["`\[]?(\w+)["`\]]?\s*\(\s*session_id\s*\)', re.I)
_MESSAGE_COLUMNS = frozenset({"id", "session_id", "message_data", "created_at"})
_SESSION_COLUMNS = frozenset({"session_id", "created_at", "updated_at"})
_Row = tuple[int, str, object]
"""A messages row: ``id``, ``message_data``, ``created_at``."""
_MAIN = "main"
"""AdvancedSQLiteSession's first branch: its runs are named by the session alone."""
_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}


def _tables(connection: sqlite3.Connection) -> tuple[str, str] | None:
    """The SDK's messages table and sessions table, found by their columns and the messages
    table's foreign key (the caller may name them): ``None`` when the database has none."""
    rows = connection.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall()
    schema = {str(name): str(sql or "") for name, sql in rows}
    for name, sql in schema.items():
        reference = _REFERENCES.search(sql)
        if reference is None or reference.group(1) not in schema:
            continue
        sessions = reference.group(1)
        if _columns(connection, name) >= _MESSAGE_COLUMNS and (
            _columns(connection, sessions) >= _SESSION_COLUMNS
        ):
            return name, sessions
    return None


def _columns(connection: sqlite3.Connection, table: str) -> set[str]:
    return {str(row[1]) for row in connection.execute(f'PRAGMA table_info("{table}")')}


def _time(value: object) -> datetime | None:
    """A row's ``created_at``: SQLite's ``CURRENT_TIMESTAMP`` text is UTC without a zone."""
    try:
        when = datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _text(content: object) -> str:
    """A message's or an output's text: a string, or its content parts' texts (an image or a
    file part as a placeholder naming it: its bytes are no text of the conversation)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return "" if content is None else json.dumps(content, ensure_ascii=False)
    texts: list[str] = []
    for part in content:
        if not isinstance(part, Mapping):
            texts.append(str(part))
        elif isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif isinstance(part.get("refusal"), str):
            texts.append(part["refusal"])
        elif part.get("type") in ("input_image", "input_file", "input_audio"):
            label, name = part["type"].removeprefix("input_"), part.get("filename")
            texts.append(f"[{label} {name}]" if name else f"[{label}]")
    return "\n".join(texts)


def _message(item: Mapping[str, Any], when: datetime) -> RunMessage | None:
    """An item as a message (``None``: an item that is no message of the conversation: a
    reasoning item without a summary, or a type this loader does not know)."""
    kind = item.get("type")
    if (kind in (None, "message")) and item.get("role") in _ROLES:
        return RunMessage(_ROLES[item["role"]], _text(item.get("content")), when)
    if kind == "function_call":
        name = str(item.get("name", ""))
        return RunMessage("assistant", f"{name}({item.get('arguments', '')})", when,
                          tool_call_id=item.get("call_id"), name=name)  # fmt: skip
    if kind == "reasoning":
        text = _text(item.get("summary"))
        return RunMessage("assistant", text, when) if text else None
    if isinstance(kind, str) and kind.endswith("_output"):  # function_call_output and the others
        output = item.get("output", item.get("content"))
        return RunMessage("tool", _text(output), when, tool_call_id=item.get("call_id"))
    if isinstance(kind, str) and kind.endswith("_call"):  # a hosted tool's call, as recorded
        shown = {k: v for k, v in item.items() if k not in ("id", "status", "type")}
        return RunMessage("assistant", f"{kind} {json.dumps(shown, ensure_ascii=False)}", when,
                          tool_call_id=item.get("call_id"))  # fmt: skip
    return None


def _session(path: Path, agent: str, rows: list[_Row], found: list[str]) -> AgentRecord:
    """One session's (or branch's) record from its rows, in order; ``found``: notes of what
    reading the file found about it."""
    messages: list[RunMessage] = []
    compactions: list[RunCompaction] = []
    skipped: Counter[str] = Counter()
    damaged = untimed = 0
    last: datetime | None = None
    times: dict[object, datetime | None] = {}  # rows of one second share it: parsed once
    for _, data, created in rows:
        when = times[created] if created in times else times.setdefault(created, _time(created))
        if when is None:
            untimed += 1
        when = when or last or datetime.fromtimestamp(path.stat().st_mtime, UTC)
        last = when
        try:
            item = json.loads(data)
        except (TypeError, ValueError):
            damaged += 1  # the SDK skips such a row too
            continue
        if not isinstance(item, dict):  # json's objects (not Mapping: an ABC check per row)
            damaged += 1
            continue
        if item.get("type") == "compaction":
            # The user messages the endpoint returned were inserted just before it: kept verbatim
            kept = 0
            while kept < len(messages) - (compactions[-1].at if compactions else 0) and (
                messages[len(messages) - 1 - kept].role == "user"
            ):
                kept += 1
            compactions.append(RunCompaction(at=len(messages), time=when, kept=kept))
            continue
        message = _message(item, when)
        if message is None:
            skipped[str(item.get("type"))] += 1
        else:
            messages.append(message)
    notes = [
        *found,
        "openai-agents sessions record no usage per model call (a run's usage is in memory only; "
        "AdvancedSQLiteSession's turn_usage sums it per user turn), no model and no compaction "
        "threshold",
    ]
    if compactions:
        notes.append(
            f"{len(compactions)} compaction(s) recorded as the compaction items the last "
            "replacements left: the summary is encrypted (not read), the tokens before and after "
            "are not recorded, the history each replaced is deleted from the file (the messages "
            "before a compaction are the user messages it kept, timed when it fired), and earlier "
            "compactions that a later one replaced leave no trace"
        )
    else:
        notes.append(
            "no compaction recorded: a plain SQLiteSession never compacts (an "
            "OpenAIResponsesCompactionSession's leave compaction items)"
        )
    if skipped:
        kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(skipped.items()))
        notes.append(f"items that are no message of the conversation left out: {kinds}")
    if damaged:
        notes.append(f"{damaged} row(s) whose message_data is no JSON object left out")
    if untimed:
        notes.append(f"{untimed} row(s) without a readable created_at timed as the row before")
    return run_record(path, messages, format=FORMAT, agent=agent, compactions=compactions,
                      notes=notes, key=agent)  # fmt: skip


class OpenAIAgentsSessions:
    """A SQLite database of the OpenAI Agents SDK's sessions: one record per session."""

    name = FORMAT

    def handles(self, path: Path) -> bool:
        try:
            if not path.is_file():
                return False
            with path.open("rb") as file:
                if file.read(len(_SQLITE_MAGIC)) != _SQLITE_MAGIC:
                    return False
            with read_only_database(path) as connection:  # the schema only: a page or two
                return _tables(connection) is not None
        except (OSError, sqlite3.Error):
            return False

    def load(self, path: Path) -> list[AgentRecord]:
        try:
            with read_only_database(path) as connection:
                tables = _tables(connection)
                if tables is None:
                    raise MemoryFormatError(
                        "no OpenAI Agents session tables (a messages table with session_id, "
                        "message_data and created_at): give the database a SQLiteSession wrote",
                        path=path,
                    )
                runs = _runs(connection, *tables)
        except sqlite3.Error as error:
            raise MemoryFormatError(
                f"cannot read the SQLite database ({error}); check that it is a complete "
                "SQLiteSession file (copy its -wal file beside it, or close the session first)",
                path=path,
            ) from error
        return [_session(path, agent, rows, found) for agent, rows, found in runs]


def _runs(
    connection: sqlite3.Connection, messages: str, sessions: str
) -> list[tuple[str, list[_Row], list[str]]]:
    """Each run the database holds: its name, its rows in order and notes on them. A session is
    a run; a session an ``AdvancedSQLiteSession`` wrote (rows in its ``message_structure``) is a
    run per branch (the rows a branch shares with the one it was made from are read in both),
    named ``session@branch`` but for the first branch, ``main``."""
    order = [
        str(row[0])
        for row in connection.execute(
            f'SELECT session_id FROM "{sessions}" ORDER BY created_at, rowid'
        )
    ]
    by_session: dict[str, dict[int, _Row]] = {s: {} for s in order}
    query = f'SELECT session_id, id, message_data, created_at FROM "{messages}" ORDER BY id'
    for session, row_id, data, created in connection.execute(query):
        by_session.setdefault(str(session), {})[row_id] = (row_id, data, created)
    branches: dict[str, dict[str, list[int]]] = {}
    if _columns(connection, "message_structure") >= {"session_id", "message_id", "branch_id",
                                                     "sequence_number"}:  # fmt: skip
        for session, branch, message in connection.execute(
            "SELECT session_id, branch_id, message_id FROM message_structure "
            "ORDER BY sequence_number, message_id"
        ):
            branches.setdefault(str(session), {}).setdefault(str(branch), []).append(message)
    usage = _turn_usage(connection)
    runs: list[tuple[str, list[_Row], list[str]]] = []
    for session, rows in by_session.items():
        if session not in branches:
            runs.append((session, list(rows.values()), usage.get((session, _MAIN), [])))
            continue
        held = {m for ids in branches[session].values() for m in ids}
        stray = [row_id for row_id in rows if row_id not in held]
        for branch, ids in sorted(branches[session].items(), key=lambda b: b[0] != _MAIN):
            found = list(usage.get((session, branch), []))
            if stray and branch == _MAIN:
                found.append(f"{len(stray)} row(s) of the session no branch holds left out")
            agent = session if branch == _MAIN else f"{session}@{branch}"
            runs.append((agent, [rows[m] for m in ids if m in rows], found))
    return runs


def _turn_usage(connection: sqlite3.Connection) -> dict[tuple[str, str], list[str]]:
    """What an ``AdvancedSQLiteSession``'s ``turn_usage`` table says of each branch: usage
    summed per user turn (``store_run_usage``), not per model call, so no call of the record
    (a note gives its totals)."""
    if not _columns(connection, "turn_usage") >= {"session_id", "branch_id", "requests",
                                                  "input_tokens", "output_tokens"}:  # fmt: skip
        return {}
    notes: dict[tuple[str, str], list[str]] = {}
    for session, branch, turns, requests, given, taken in connection.execute(
        "SELECT session_id, branch_id, COUNT(*), SUM(requests), SUM(input_tokens), "
        "SUM(output_tokens) FROM turn_usage GROUP BY session_id, branch_id"
    ):
        notes[(str(session), str(branch))] = [
            f"turn_usage records {turns} user turn(s): {requests} request(s), {given} input and "
            f"{taken} output tokens, summed per turn (not per model call): not read as calls"
        ]
    return notes
