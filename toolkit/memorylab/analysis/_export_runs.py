"""memorylab's transcripts written in other frameworks' input formats, for a side-by-side run of
the same conversation under their compaction (:func:`export_transcripts`; docs/converting.md).

One writer per format, each in the format's own terms, checked against the real package
(tests/analysis/test_convert.py):

- ``claude-code``: a Claude Code session file (``<session>.jsonl``, one entry a line, linked by
  ``uuid``/``parentUuid``), one per transcript in the folder given: what Claude Code writes under
  ``~/.claude/projects/<project>/`` and memorylab's Claude Code loader reads back, message for
  message.
- ``openai-agents``: an OpenAI Agents SDK ``SQLiteSession`` database (its two tables, as the SDK
  creates them), one session per transcript, named after it: ``SQLiteSession(name,
  path).get_items()`` returns the messages as input items.
- ``inspect-ai``: an inspect_ai dataset (JSON Lines, one sample per transcript: its id, the
  messages as ``input`` chat messages, and the planted facts' probes in its metadata), which
  ``inspect_ai.dataset.json_dataset`` reads.
- ``langchain``: LangChain messages (``messages_to_dict``'s form: ``{"type", "data"}``), one JSON
  file per transcript: ``langchain_core.messages.messages_from_dict`` makes the messages a
  deepagents (LangGraph) thread starts from.

What a format cannot take is said, never dropped without a word: a transcript's tool message is a
tool's output without the call that asked for it (the transcripts record no call: no id, no name,
no arguments). inspect_ai takes a tool message without a call id; Claude Code, the OpenAI Agents
SDK and LangChain require one, so each tool output gets an id made up for it
(``memorylab-tool-<n>``) that answers no recorded call: the files read back whole, but a
provider asked to continue such a history (Anthropic's, OpenAI's API) refuses a tool result whose
call it was not sent. Times: Claude Code keeps each message's; the SQLite session keeps seconds
(``created_at``, UTC: a fraction of a second is cut); inspect_ai's chat messages keep none, so a
sample's metadata holds them (``timestamps``, one per message); LangChain's messages keep none, so
each holds its own under ``additional_kwargs["memorylab"]`` (a namespace no provider reads).
A message the user pinned (memorylab's mark: every compaction keeps it) is marked where the format
has room for it (inspect_ai's sample metadata ``pinned``, LangChain's ``additional_kwargs``);
Claude Code's session and the SQLite session have none, so there the mark is not written.
"""

from __future__ import annotations

import json
import os
import sqlite3
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memorylab.errors import InvalidSetting
from memorylab.memory._fsutil import write_private_file
from memorylab.transcripts import Transcript, TranscriptMessage, load_transcript

EXPORT_FORMATS = ("claude-code", "openai-agents", "inspect-ai", "langchain")
"""The formats :func:`export_transcripts` writes (``memorylab convert --to``)."""

TOOL_ID_PREFIX = "memorylab-tool-"
"""The start of the ids made up for tool outputs whose call the transcript did not record."""

_NAMESPACE = uuid.UUID("6f1d3c1e-4a8e-4f0b-9a61-8d7c2b5e3f10")
"""Session and message ids are derived from the transcript's name: exporting again writes the
same ids (a diff of two exports shows what changed)."""

TranscriptSource = Transcript | str | os.PathLike[str]


def export_transcripts(
    transcripts: TranscriptSource | Sequence[TranscriptSource],
    output: str | os.PathLike[str],
    *,
    to: str,
    overwrite: bool = False,
) -> list[Path]:
    """Write ``transcripts`` (:class:`~memorylab.transcripts.Transcript` values or paths of
    transcript files, e.g. :func:`~memorylab.transcripts.bundled_transcripts`) in the input
    format ``to`` (one of :data:`EXPORT_FORMATS`; the module docstring says what each holds and
    what it cannot take). Returns the files written.

    ``output``: for ``claude-code`` and ``langchain`` a folder (one file per transcript, named
    after its session id or the transcript); for ``openai-agents`` a SQLite file (one session per
    transcript), for ``inspect-ai`` a ``.jsonl`` dataset (one sample per transcript). A file
    that exists is refused (:class:`~memorylab.errors.InvalidSetting`, before anything is
    written) unless ``overwrite``.
    """
    if to not in _WRITERS:
        raise InvalidSetting(f"to={to!r} is no export format; choose one of {', '.join(_WRITERS)}")
    given = (
        [transcripts]
        if isinstance(transcripts, Transcript | str | os.PathLike)
        else list(transcripts)
    )
    if not given:
        raise InvalidSetting("no transcript to export: give one or more transcripts or paths")
    loaded = [t if isinstance(t, Transcript) else load_transcript(t) for t in given]
    names = [t.name for t in loaded]
    if len(set(names)) != len(names):
        raise InvalidSetting(
            f"two transcripts are named alike ({', '.join(names)}); each becomes one session"
        )
    return _WRITERS[to](loaded, Path(output).expanduser(), overwrite)


def _refuse_taken(paths: Sequence[Path], overwrite: bool) -> None:
    """Refuse, before anything is written, to replace a file unless asked to."""
    taken = [p for p in paths if os.path.lexists(p)]
    if taken and not overwrite:
        raise InvalidSetting(
            f"{taken[0]} exists; choose another output, or replace it (overwrite=True)"
        )


_FILE_SUFFIXES = (".jsonl", ".json")


def _refuse_file_name(folder: Path, format: str, each: str) -> None:
    """A format written as a folder of files, given a new output named like a file
    (``-o cc.jsonl``), is refused rather than made a folder of that name: the user meant a file,
    and the files in it must keep their own names (Claude Code finds a session by its id)."""
    if folder.suffix.lower() in _FILE_SUFFIXES and not folder.is_dir():
        raise InvalidSetting(
            f"{folder} is named like a file, but {format} is written as a folder holding one "
            f"{each} per transcript; give a folder (e.g. {folder.with_suffix('')})"
        )


def _tool_ids(messages: Sequence[TranscriptMessage]) -> dict[int, str]:
    """A made-up id for each tool output (the module docstring), by its position."""
    return {n: f"{TOOL_ID_PREFIX}{n}" for n, m in enumerate(messages) if m.role == "tool"}


def _utc(when: datetime) -> datetime:
    return when.astimezone(UTC)


def _refuse_roles(transcript: Transcript, format: str, allowed: Sequence[str]) -> None:
    """A message of a role the format has no place for is refused, never dropped."""
    for number, message in enumerate(transcript.messages):
        if message.role not in allowed:
            raise InvalidSetting(
                f"{transcript.name}: message {number} has the role {message.role!r}, which a "
                f"{format} file cannot hold (it takes {', '.join(allowed)}); export to another "
                "format, or leave that message out of the transcript"
            )


# ---------------------------------------------------------------------------- Claude Code


def _claude_code(transcripts: Sequence[Transcript], folder: Path, overwrite: bool) -> list[Path]:
    """One Claude Code session file per transcript in ``folder`` (the module docstring).

    Claude Code keeps its system prompt out of the session, so a ``system`` message is refused.
    Each message is one entry: a user's a ``user`` entry, an assistant's an ``assistant`` entry
    of one text block (a message id of its own, so no two replies merge), a tool output a
    ``user`` entry holding one ``tool_result`` block with a made-up ``tool_use_id``."""
    _refuse_file_name(folder, "claude-code", "<session id>.jsonl")
    files = {t.name: folder / f"{_session_id(t)}.jsonl" for t in transcripts}
    _refuse_taken(list(files.values()), overwrite)
    for transcript in transcripts:
        _refuse_roles(transcript, "Claude Code session", ("user", "assistant", "tool"))
    for transcript in transcripts:
        data = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in _session(transcript))
        write_private_file(files[transcript.name], data.encode("utf-8"))
    return list(files.values())


def _session_id(transcript: Transcript) -> str:
    return str(uuid.uuid5(_NAMESPACE, transcript.name))


def _claude_time(when: datetime) -> str:
    """Claude Code's form, ``2025-12-24T10:00:00.000Z`` (microseconds where the time has them)."""
    spec = "milliseconds" if when.microsecond % 1000 == 0 else "microseconds"
    return _utc(when).replace(tzinfo=None).isoformat(timespec=spec) + "Z"


def _session(transcript: Transcript) -> list[dict[str, Any]]:
    session = _session_id(transcript)
    tool_ids = _tool_ids(transcript.messages)
    entries: list[dict[str, Any]] = []
    parent: str | None = None
    for number, message in enumerate(transcript.messages):
        ident = str(uuid.uuid5(_NAMESPACE, f"{transcript.name}/{number}"))
        content: Any
        if message.role == "assistant":
            kind = "assistant"
            body: dict[str, Any] = {
                "id": f"msg_memorylab_{number}",
                "type": "message",
                "role": "assistant",
                "content": [{"type": "text", "text": message.content}],
            }
        else:
            kind = "user"
            content = message.content
            if message.role == "tool":
                content = [{"type": "tool_result", "tool_use_id": tool_ids[number],
                            "content": message.content}]  # fmt: skip
            body = {"role": "user", "content": content}
        entries.append(
            {
                "parentUuid": parent,
                "isSidechain": False,
                "type": kind,
                "message": body,
                "uuid": ident,
                "timestamp": _claude_time(message.timestamp),
                "sessionId": session,
            }
        )
        parent = ident
    return entries


# ----------------------------------------------------------------------- OpenAI Agents SDK

_SQLITE_SCHEMA = """
CREATE TABLE agent_sessions (
    session_id TEXT PRIMARY KEY,
    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP
);
CREATE TABLE agent_messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    message_data TEXT NOT NULL,
    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    FOREIGN KEY (session_id) REFERENCES agent_sessions (session_id) ON DELETE CASCADE
);
CREATE INDEX idx_agent_messages_session_id ON agent_messages (session_id, id);
"""
"""The tables ``agents.memory.SQLiteSession`` creates (openai-agents 0.24.0, its default names)."""


def _openai_agents(transcripts: Sequence[Transcript], path: Path, overwrite: bool) -> list[Path]:
    """One SQLite database, one session per transcript (its name is the session id; the module
    docstring). A user's and a system message are easy input messages (``{"role", "content"}``),
    an assistant's an output message of one ``output_text``, a tool output a
    ``function_call_output`` with a made-up ``call_id``; ``created_at`` is the message's time
    in SQLite's form (UTC seconds)."""
    _refuse_taken([path], overwrite)
    db = sqlite3.connect(":memory:")
    try:
        db.executescript(_SQLITE_SCHEMA)
        for transcript in transcripts:
            _refuse_roles(transcript, "OpenAI Agents session", ("user", "assistant", "tool",
                                                                "system"))  # fmt: skip
            times = [_sqlite_time(m.timestamp) for m in transcript.messages]
            first, last = (times[0], times[-1]) if times else (None, None)
            db.execute(
                "INSERT INTO agent_sessions (session_id, created_at, updated_at) VALUES (?, ?, ?)",
                (transcript.name, first, last),
            )
            db.executemany(
                "INSERT INTO agent_messages (session_id, message_data, created_at) "
                "VALUES (?, ?, ?)",
                [
                    (transcript.name, json.dumps(item, ensure_ascii=False), when)
                    for item, when in zip(_items(transcript), times, strict=True)
                ],
            )
        db.commit()
        data = db.serialize()
    finally:
        db.close()
    write_private_file(path, bytes(data))
    return [path]


def _sqlite_time(when: datetime) -> str:
    """SQLite's ``CURRENT_TIMESTAMP`` form: ``YYYY-MM-DD HH:MM:SS``, UTC."""
    return _utc(when).strftime("%Y-%m-%d %H:%M:%S")


def _items(transcript: Transcript) -> list[dict[str, Any]]:
    tool_ids = _tool_ids(transcript.messages)
    items: list[dict[str, Any]] = []
    for number, message in enumerate(transcript.messages):
        if message.role == "assistant":
            items.append({
                "id": f"msg_memorylab_{number}",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": message.content, "annotations": []}],
            })  # fmt: skip
        elif message.role == "tool":
            items.append({"type": "function_call_output", "call_id": tool_ids[number],
                          "output": message.content})  # fmt: skip
        else:
            items.append({"role": message.role, "content": message.content})
    return items


# ------------------------------------------------------------------------------- inspect_ai


def _inspect_ai(transcripts: Sequence[Transcript], path: Path, overwrite: bool) -> list[Path]:
    """A JSON Lines dataset, one sample per transcript (the module docstring): ``id`` the
    transcript's name, ``input`` its messages as chat messages (a tool output with no
    ``tool_call_id``, which inspect_ai allows), ``target`` empty (the transcript has no single
    answer: its probes, with their answers, and the planted facts are in ``metadata``, with each
    message's time and session, which inspect_ai's chat messages do not keep)."""
    _refuse_taken([path], overwrite)
    lines = []
    for transcript in transcripts:
        _refuse_roles(transcript, "inspect_ai sample", ("user", "assistant", "tool", "system"))
        facts = [
            {"id": f.id, "category": f.category, "text": f.text, "message_index": f.message_index}
            for f in transcript.facts
        ]
        probes = [
            {"id": p.id, "fact_id": p.fact_id, "question": p.question, "answer": p.answer}
            for p in transcript.probes
        ]
        metadata = {
            "description": transcript.description,
            "timestamps": [_utc(m.timestamp).isoformat() for m in transcript.messages],
            "sessions": [m.session for m in transcript.messages],
            "pinned": [n for n, m in enumerate(transcript.messages) if m.pinned],
            "facts": facts,
            "probes": probes,
        }
        sample = {
            "id": transcript.name,
            "input": [{"role": m.role, "content": m.content} for m in transcript.messages],
            "target": "",
            "metadata": metadata,
        }
        lines.append(json.dumps(sample, ensure_ascii=False) + "\n")
    write_private_file(path, "".join(lines).encode("utf-8"))
    return [path]


# -------------------------------------------------------------------------------- LangChain

_LANGCHAIN_TYPES = {"user": "human", "assistant": "ai", "system": "system", "tool": "tool"}


def _langchain(transcripts: Sequence[Transcript], folder: Path, overwrite: bool) -> list[Path]:
    """One JSON file per transcript in ``folder``: a list of messages in ``messages_to_dict``'s
    form (the module docstring); a tool output a ``ToolMessage`` with a made-up
    ``tool_call_id`` (LangChain requires one)."""
    _refuse_file_name(folder, "langchain", "<transcript>.langchain.json")
    files = {t.name: folder / f"{t.name}.langchain.json" for t in transcripts}
    _refuse_taken(list(files.values()), overwrite)
    for transcript in transcripts:
        _refuse_roles(transcript, "LangChain message list", tuple(_LANGCHAIN_TYPES))
    for transcript in transcripts:
        tool_ids = _tool_ids(transcript.messages)
        messages = []
        for number, message in enumerate(transcript.messages):
            data: dict[str, Any] = {
                "content": message.content,
                "additional_kwargs": {"memorylab": {
                    "timestamp": _utc(message.timestamp).isoformat(),
                    "session": message.session,
                    **({"pinned": True} if message.pinned else {}),
                }},
                "response_metadata": {},
                "type": _LANGCHAIN_TYPES[message.role],
                "name": None,
                "id": None,
            }  # fmt: skip
            if message.role == "tool":
                data["tool_call_id"] = tool_ids[number]
            messages.append({"type": _LANGCHAIN_TYPES[message.role], "data": data})
        text = json.dumps(messages, ensure_ascii=False, indent=1) + "\n"
        write_private_file(files[transcript.name], text.encode("utf-8"))
    return list(files.values())


_WRITERS: dict[str, Callable[[Sequence[Transcript], Path, bool], list[Path]]] = {
    "claude-code": _claude_code,
    "openai-agents": _openai_agents,
    "inspect-ai": _inspect_ai,
    "langchain": _langchain,
}
assert tuple(_WRITERS) == EXPORT_FORMATS
