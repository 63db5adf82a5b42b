"""LangChain deepagents threads: what the checkpointer stored of a thread run through
``SummarizationMiddleware``, and the history the middleware offloaded to its backend.

What deepagents keeps, and how it is read (docs/formats/deepagents.md):

* The thread's state, through a langgraph checkpointer, exported as JSON (``thread.json``: the
  shape ``data/foreign/deepagents/generate.py`` writes from ``get_state_history``, opening
  with ``"deepagents_thread": 1``): ``messages`` (``messages_to_dict``), never rewritten by the
  middleware (it summarizes through a private state key, not by removing messages), and
  ``checkpoints``, each with its ``created_at``, its message count and the summarization event it
  held. A message keeps no time of its own: its time is that of the first checkpoint that holds
  it (a note says so).
* Each summarization event (``_summarization_event``: ``cutoff_index``, ``created_at_index``,
  the summary message, the offload path) is a compaction: it fired on the first
  ``created_at_index`` messages, and the last ``created_at_index - cutoff_index`` of them stayed
  verbatim. Its summary is the text between ``<summary>`` tags of the summary message. Its time
  is that of its section of the offloaded history (``## Summarized at <ISO time>``), else of the
  first checkpoint that held it. deepagents records no token count with an event: none is given.
* The offloaded history, ``<backend root>/conversation_history/<session>.md`` (``backend/``
  beside ``thread.json``, a ``FilesystemBackend``'s root): one section per summary, each holding
  the messages that left (``get_buffer_string(..., format="xml")``); read for the times and
  checked against the events (a count that differs is a note).
* Each assistant message's ``usage_metadata`` is one model call (input, output, cache read and
  creation, reasoning tokens). The summarizer's own calls are not in the thread (a note).
* Settings: the model's name and ``profile["max_input_tokens"]`` (the context length) and the
  trigger where it is a ``("fraction", f)`` (the threshold), as the export recorded them.

A checkpointer's own database is read too: langgraph-checkpoint-sqlite's ``SqliteSaver`` file
(tables ``checkpoints`` and ``writes``), one record per thread. Its blobs are what langgraph's
``JsonPlusSerializer`` wrote: msgpack whose extension types name a constructor (codes 0-5: module,
class, its arguments; a LangChain message is a pydantic model, its ``model_dump()``), a numpy array
(6) or a delta-channel snapshot (7); or JSON in LangChain's ``{"lc": 1, "type": "constructor"}``
form. They are decoded with msgpack, never by importing or calling what they name (no langgraph
here, nothing unpickled). The thread's ``messages`` channel is a langgraph ``DeltaChannel``: a
checkpoint stores it only as a snapshot now and then, and every step's new messages as writes, so
the thread is walked from its first checkpoint to its latest (``parent_checkpoint_id``), the
writes of each step folded in as langgraph's ``add_messages`` does (append, replace by id,
remove), which gives each checkpoint's messages as ``get_state_history`` would. What that walk
finds is the shape ``thread.json`` holds, read by the same code (one rule): the database keeps no
model profile and no trigger, so no context length or threshold is given (a note says so).
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memorylab.analysis._foreign import RunCompaction, RunMessage, read_only_database, run_record
from memorylab.analysis._record import AgentRecord
from memorylab.analysis._sources import file_head
from memorylab.errors import MemoryFormatError
from memorylab.memory._records import UsageRecord

FORMAT = "deepagents"
THREAD_FILE = "thread.json"
BACKEND_FOLDER = "backend"
_HEAD_BYTES = 256
_OPENING = re.compile(rb'\s*\{\s*"deepagents_thread"\s*:\s*1\b')
"""How an exported thread opens: its version first."""
_ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system",
          "HumanMessageChunk": "user", "AIMessageChunk": "assistant",
          "ToolMessageChunk": "tool", "SystemMessageChunk": "system"}  # fmt: skip
"""``messages_to_dict``'s types: a message's ``type``, a chunk's class name."""
_SECTION = re.compile(r"^## Summarized at (\S+)\s*$", re.M)
_OFFLOADED = re.compile(r'^<message type="')
_SUMMARY = re.compile(r"<summary>\n?(.*?)\n?</summary>", re.S)
_PLAIN_SUMMARY = "Here is a summary of the conversation to date:\n\n"
_SQLITE_MAGIC = b"SQLite format 3\x00"
_SAVER_TABLES = {
    "checkpoints": frozenset({"thread_id", "checkpoint_ns", "checkpoint_id",
                              "parent_checkpoint_id", "type", "checkpoint"}),
    "writes": frozenset({"thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx",
                         "channel", "type", "value"}),
}  # fmt: skip
"""langgraph-checkpoint-sqlite's tables and the columns read of each."""
_MESSAGES = "messages"
_EVENT = "_summarization_event"
_REMOVE_ALL = "__remove_all__"
"""langgraph's ``REMOVE_ALL_MESSAGES``: a ``RemoveMessage`` with this id empties the list."""
_CLASS_TYPES = {"HumanMessage": "human", "AIMessage": "ai", "ToolMessage": "tool",
                "SystemMessage": "system", "RemoveMessage": "remove"}  # fmt: skip
"""A LangChain message class's ``type`` (JSON constructors name the class, not the type)."""
_EXT_SNAPSHOT = 7
_EXT_NUMPY = 6
_EXT_CONSTRUCTORS = frozenset(range(6))
"""JsonPlusSerializer's msgpack extension codes (langgraph-checkpoint 4.x, ``jsonplus.py``):
0-3 a constructor or method with its argument(s), 4-5 a pydantic model, 6 a numpy array, 7 a
``DeltaChannel`` snapshot."""


class DeepagentsThread:
    """A deepagents thread exported from its checkpointer (``thread.json``): one record; or the
    checkpointer's own SQLite database (``SqliteSaver``): one record per thread. Either with the
    folder of its backend's offloaded history beside it."""

    name = FORMAT

    def handles(self, path: Path) -> bool:
        thread = path / THREAD_FILE if path.is_dir() else path
        head = file_head(thread, _HEAD_BYTES)
        if head.startswith(_SQLITE_MAGIC):
            return _is_saver_database(thread)
        return _OPENING.match(head) is not None

    def load(self, path: Path) -> list[AgentRecord]:
        thread = path / THREAD_FILE if path.is_dir() else path
        if file_head(thread, len(_SQLITE_MAGIC)) == _SQLITE_MAGIC:
            return [_thread_record(thread, data, key=name)
                    for name, data in _read_database(thread).items()]  # fmt: skip
        return [_thread_record(thread, _read_thread(thread))]


def approximate_tokens(path: Path, thread_id: str | None = None) -> list[int]:
    """Each message of the thread ``path`` (a ``thread.json`` or its folder; or a checkpointer's
    database, ``thread_id`` the thread, which may instead follow its name, ``db.sqlite#thread``,
    and may be left out where the database holds one) as langchain's
    ``count_tokens_approximately`` counts it, the count deepagents' ``SummarizationMiddleware``
    compares with its trigger: ``ceil((content + role + name + tool calls' repr + tool call id)
    / 4) + 3`` (its defaults: 4 characters a token, 3 tokens a message; the tool calls as the
    Python ``repr`` of the stored list, the role OpenAI's name for it). In the thread's order, as
    the loader reads its messages."""
    counts: list[int] = []
    for message in _thread_data(Path(path), thread_id).get("messages", []):
        if not isinstance(message, Mapping):
            continue
        body = _mapping(message.get("data"))
        role = _ROLES.get(str(message.get("type") or body.get("type")), "user")
        content = body.get("content")
        chars = len(content) if isinstance(content, str) else len(_text(content))
        calls = body.get("tool_calls")
        if role == "assistant" and isinstance(content, str) and calls:
            chars += len(repr(calls))
        call_id = body.get("tool_call_id")
        if role == "tool" and isinstance(call_id, str):
            chars += len(call_id)
        name = body.get("name")
        if isinstance(name, str) and name:
            chars += len(name)
        counts.append(math.ceil((chars + len(role)) / 4) + 3)  # the role as OpenAI names it
    return counts


def _fail(path: Path, what: str) -> MemoryFormatError:
    return MemoryFormatError(
        f"{path} is not a deepagents thread memorylab reads: {what}. Export the thread with "
        "data/foreign/deepagents/generate.py's checkpoints() (docs/formats/deepagents.md)"
    )


def _thread_data(path: Path, thread_id: str | None) -> Mapping[str, Any]:
    """The thread ``path`` names, in ``thread.json``'s shape, whichever file it is."""
    if not path.exists() and "#" in path.name and thread_id is None:
        file, _, thread_id = str(path).rpartition("#")
        path = Path(file)
    thread = path / THREAD_FILE if path.is_dir() else path
    if file_head(thread, len(_SQLITE_MAGIC)) != _SQLITE_MAGIC:
        return _read_thread(thread)
    threads = _read_database(thread)
    if thread_id is None and len(threads) == 1:
        return next(iter(threads.values()))
    if thread_id not in threads:
        raise MemoryFormatError(
            f"{thread} holds the threads {', '.join(threads) or '(none)'}: name one, "
            f"{thread}#THREAD_ID"
        )
    return threads[thread_id]


def _read_thread(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise MemoryFormatError(f"cannot read {path}: {error.strerror or error}") from error
    except (UnicodeDecodeError, ValueError) as error:
        raise _fail(path, f"not JSON ({error})") from error
    if not isinstance(data, dict) or data.get("deepagents_thread") != 1:
        raise _fail(path, 'no "deepagents_thread": 1')
    for key in ("messages", "checkpoints", "summarization_events"):
        if not isinstance(data.get(key, []), list):
            raise _fail(path, f'"{key}" is not a list')
    return data


def _time(text: object) -> datetime | None:
    try:
        stamp = datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=UTC)


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(content: object) -> str:
    """A message's content as text: a string, or its content blocks' text (a block without
    text named by its type)."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content if isinstance(content, list) else [content]:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, Mapping):
            text = block.get("text")
            parts.append(text if isinstance(text, str) else f"[{block.get('type', 'block')}]")
    return "\n".join(parts)


def _rendered(data: Mapping[str, Any]) -> str:
    """An assistant message's text with its tool calls, as the frames show them."""
    text = _text(data.get("content"))
    calls = [
        f"[tool call {call.get('name')} {json.dumps(call.get('args'), sort_keys=True)}]"
        for call in data.get("tool_calls") or []
        if isinstance(call, Mapping)
    ]
    return "\n".join([text, *calls]) if text and calls else text or "\n".join(calls)


def _message_times(checkpoints: Sequence[Mapping[str, Any]], count: int) -> list[datetime | None]:
    """Each message's time: that of the first checkpoint whose state holds it."""
    times: list[datetime | None] = [None] * count
    filled = 0
    for checkpoint in checkpoints:
        held = _int(checkpoint.get("messages"))
        when = _time(checkpoint.get("created_at"))
        if held is None or when is None:
            continue
        while filled < min(held, count):
            times[filled] = when
            filled += 1
    return times


def _message_chars(message: object) -> int | None:
    """How many characters a stored message's content has (what deepagents' counter reads)."""
    data = message.get("data") if isinstance(message, Mapping) else None
    return len(_text(data.get("content"))) if isinstance(data, Mapping) else None


def _summary(message: object) -> str | None:
    data = message.get("data") if isinstance(message, Mapping) else None
    if not isinstance(data, Mapping):
        return None
    text = _text(data.get("content"))
    found = _SUMMARY.search(text)
    if found:
        return found.group(1)
    return text.removeprefix(_PLAIN_SUMMARY) if text else None


def _offloaded(base: Path, virtual: str) -> list[tuple[datetime | None, int]] | None:
    """The sections of an offloaded history file (its path as the backend names it, under
    ``base``): each one's time and how many messages left in it; ``None``: not there."""
    file = base / virtual.lstrip("/")
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    starts = list(_SECTION.finditer(text))
    sections: list[tuple[datetime | None, int]] = []
    for number, start in enumerate(starts):
        end = starts[number + 1].start() if number + 1 < len(starts) else len(text)
        body = text[start.end() : end]
        left = sum(1 for line in body.splitlines() if _OFFLOADED.match(line))
        sections.append((_time(start.group(1)), left))
    return sections


def _thread_record(path: Path, data: Mapping[str, Any], key: str | None = None) -> AgentRecord:
    """One thread's record, from ``thread.json``'s shape (what a database's thread reads to too);
    ``key``: the thread's name among the file's others."""
    notes: list[str] = list(data.get("read_notes", []))
    stored = [m for m in data.get("messages", []) if isinstance(m, Mapping)]
    checkpoints = [c for c in data.get("checkpoints", []) if isinstance(c, Mapping)]
    times = _message_times(checkpoints, len(stored))
    file_time = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    if any(t is None for t in times):
        notes.append(f"{sum(t is None for t in times)} messages are held by no checkpoint with a "
                     "time: they have the file's time")  # fmt: skip
    notes.append("deepagents messages keep no time: each has the time of the first checkpoint "
                 "that holds it (created_at)")  # fmt: skip
    messages: list[RunMessage] = []
    calls: list[UsageRecord] = []
    agent = str(data.get("thread_id") or path.parent.name)
    model_info = _mapping(data.get("model"))
    model_name = model_info.get("name") if isinstance(model_info.get("name"), str) else None
    for number, (message, when) in enumerate(zip(stored, times, strict=True)):
        body = _mapping(message.get("data"))
        kind = str(message.get("type") or body.get("type"))
        role = _ROLES.get(kind)
        if role is None:
            raise _fail(path, f"message {number} has the type {kind!r}")
        stamp = when or file_time
        if role == "assistant":
            content = _rendered(body)
            usage = body.get("usage_metadata")
            if isinstance(usage, Mapping):
                calls.append(_call(usage, body, stamp, agent, len(calls) + 1, model_name))
        else:
            content = _text(body.get("content"))
        name = body.get("name") if isinstance(body.get("name"), str) else None
        call_id = body.get("tool_call_id") if isinstance(body.get("tool_call_id"), str) else None
        messages.append(RunMessage(role, content, stamp, tool_call_id=call_id, name=name))
    compactions = _compactions(path, data, checkpoints, len(messages), file_time, notes)
    notes.append("deepagents records no token count with a summarization event: tokens before "
                 "and after each compaction are not recorded")  # fmt: skip
    notes.append("the summarizer's model calls are not in the thread: their usage is not "
                 "recorded")  # fmt: skip
    notes.append("the trigger counts the system prompt and the tool schemas, which the thread "
                 "does not keep: the growth counts the messages alone (replay_validation "
                 "measures them at the first summary)")  # fmt: skip
    return run_record(path, messages, format=FORMAT, agent=agent, compactions=compactions,
                      calls=calls, settings=_settings(data, notes), notes=notes,
                      key=key)  # fmt: skip


def _call(usage: Mapping[str, Any], body: Mapping[str, Any], when: datetime, agent: str,
          number: int, model: str | None) -> UsageRecord:  # fmt: skip
    """An assistant reply's ``usage_metadata`` as a model call (langchain's names: input and
    output tokens, ``input_token_details`` cache read and creation, ``output_token_details``
    reasoning)."""
    given = usage.get("input_token_details")
    made = usage.get("output_token_details")
    given = given if isinstance(given, Mapping) else {}
    made = made if isinstance(made, Mapping) else {}
    meta = body.get("response_metadata")
    named = meta.get("model_name") if isinstance(meta, Mapping) else None
    return UsageRecord(
        time=when,
        agent=agent,
        call=number,
        model=named if isinstance(named, str) else model,
        input_tokens=_int(usage.get("input_tokens")),
        output_tokens=_int(usage.get("output_tokens")),
        cached_tokens=_int(given.get("cache_read")),
        cache_write_tokens=_int(given.get("cache_creation")),
        reasoning_tokens=_int(made.get("reasoning")),
    )


def _compactions(
    path: Path,
    data: Mapping[str, Any],
    checkpoints: Sequence[Mapping[str, Any]],
    count: int,
    file_time: datetime,
    notes: list[str],
) -> list[RunCompaction]:
    """Each summarization event, in order, timed by its offloaded section (else its first
    checkpoint) and checked against what its section says left."""
    events = [e for e in data.get("summarization_events", []) if isinstance(e, Mapping)]
    first_held: dict[int, datetime] = {}
    for checkpoint in checkpoints:
        number = _int(checkpoint.get("summarization_event"))
        when = _time(checkpoint.get("created_at"))
        if number is not None and when is not None:
            first_held.setdefault(number, when)
    base = path.parent / BACKEND_FOLDER
    sections: dict[str, list[tuple[datetime | None, int]] | None] = {}
    used: dict[str, int] = {}
    compactions: list[RunCompaction] = []
    previous_cutoff = 0
    for number, event in enumerate(events):
        cutoff = _int(event.get("cutoff_index"))
        at = _int(event.get("created_at_index"))
        if cutoff is None:
            raise _fail(path, f"summarization event {number + 1} has no cutoff_index")
        if at is None:  # deepagents before created_at_index: all from the cutoff were kept
            at = count if number == len(events) - 1 else cutoff
            notes.append(f"summarization event {number + 1} has no created_at_index: it is "
                         f"placed at message {at}")  # fmt: skip
        when = first_held.get(number)
        virtual = event.get("file_path")
        if isinstance(virtual, str):
            if virtual not in sections:
                sections[virtual] = _offloaded(base, virtual)
                if sections[virtual] is None:
                    notes.append(f"the offloaded history {virtual} is not under {base}: "
                                 "compactions are timed by their checkpoints")  # fmt: skip
            found = sections[virtual]
            index = used.get(virtual, 0)
            used[virtual] = index + 1
            if found is not None and index < len(found):
                section_time, left = found[index]
                when = section_time or when
                if left != cutoff - previous_cutoff:
                    moved = cutoff - previous_cutoff
                    notes.append(f"compaction {number + 1}: its offloaded section holds {left} "
                                 f"messages, its cutoff moved by {moved}")  # fmt: skip
        else:
            notes.append(f"compaction {number + 1}: its history was not offloaded (file_path "
                         "is null: the backend's write failed)")  # fmt: skip
        compactions.append(RunCompaction(
            at=at,
            time=when or file_time,
            summary=_summary(event.get("summary_message")),
            kept=max(at - cutoff, 0),
            summary_message_chars=_message_chars(event.get("summary_message")),
        ))  # fmt: skip
        previous_cutoff = cutoff
    return compactions


def _settings(data: Mapping[str, Any], notes: list[str]) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    model = data.get("model")
    if isinstance(model, Mapping):
        if isinstance(model.get("name"), str):
            settings["model"] = model["name"]
        profile = model.get("profile")
        window = _int(profile.get("max_input_tokens")) if isinstance(profile, Mapping) else None
        if window is not None:
            settings["context_length"] = window
    summarization = data.get("summarization")
    trigger = summarization.get("trigger") if isinstance(summarization, Mapping) else None
    if isinstance(trigger, list) and len(trigger) == 2 and trigger[0] == "fraction":
        settings["threshold"] = float(trigger[1])
    elif trigger is not None:
        notes.append(f"the trigger {trigger!r} is not a fraction of the window: no threshold "
                     "is given")  # fmt: skip
    elif not data.get("from_database"):  # a database's note says it (read_notes)
        notes.append("the export records no summarization trigger: no threshold is given")
    return settings


# --- a checkpointer's SQLite database -----------------------------------------------------------


def _fail_database(path: Path, what: str) -> MemoryFormatError:
    return MemoryFormatError(
        f"{path} is not a langgraph SqliteSaver database memorylab reads: {what}. Read the "
        "thread through langgraph and export it as thread.json with "
        "data/foreign/deepagents/generate.py's checkpoints() (docs/formats/deepagents.md)"
    )


def _saver_columns(connection: sqlite3.Connection) -> dict[str, set[str]]:
    listed = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    tables = {str(row[0]) for row in listed}
    return {table: {str(row[1]) for row in connection.execute(f'PRAGMA table_info("{table}")')}
            for table in _SAVER_TABLES if table in tables}  # fmt: skip


def _is_saver_database(path: Path) -> bool:
    """A SQLite file with SqliteSaver's two tables (their names and columns: no row is read)."""
    try:
        with read_only_database(path) as connection:
            columns = _saver_columns(connection)
    except sqlite3.Error:
        return False
    return all(needed <= columns.get(table, set()) for table, needed in _SAVER_TABLES.items())


@dataclass(frozen=True)
class _Snapshot:
    """A ``DeltaChannel``'s full value, stored now and then in a checkpoint (ext code 7)."""

    value: Any


@dataclass(frozen=True)
class _Overwrite:
    """langgraph's ``Overwrite``: a write that replaces the channel's value, bypassing the
    reducer."""

    value: Any


class _UnknownExtension(ValueError):
    def __init__(self, code: int) -> None:
        super().__init__(f"msgpack extension type {code}")
        self.code = code


def _message(class_name: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """A LangChain message as ``messages_to_dict`` writes it: its type and its fields."""
    kind = fields.get("type")
    return {"type": kind if isinstance(kind, str) else _CLASS_TYPES.get(class_name, class_name),
            "data": dict(fields)}  # fmt: skip


def _revived(module: object, name: object, argument: Any) -> Any:
    """What a serialized constructor call stands for, without calling it: a message as
    ``messages_to_dict`` writes it, an ``Overwrite``, a UUID as its text, else its argument(s)."""
    is_message = isinstance(module, str) and module.startswith("langchain_core.messages")
    if is_message and isinstance(argument, Mapping):
        return _message(str(name), argument)
    if (module, name) == ("langgraph.types", "Overwrite"):  # a dataclass: its fields by name
        return _Overwrite(argument.get("value") if isinstance(argument, Mapping) else argument)
    if (module, name) == ("uuid", "UUID") and isinstance(argument, str):
        try:
            return str(uuid.UUID(hex=argument))
        except ValueError:
            return argument
    return argument


def _unpacker() -> Callable[[bytes], Any]:
    """JsonPlusSerializer's msgpack read with msgpack, each extension type decoded as data."""
    try:
        import msgpack  # type: ignore[import-untyped]
    except ImportError as error:
        raise MemoryFormatError(
            "reading a langgraph checkpointer's database needs msgpack: pip install msgpack"
        ) from error

    def unpack(blob: bytes) -> Any:
        return msgpack.unpackb(blob, ext_hook=extension, strict_map_key=False, raw=False)

    def extension(code: int, data: bytes) -> Any:
        if code == _EXT_SNAPSHOT:
            return _Snapshot(unpack(data))
        if code == _EXT_NUMPY:
            return unpack(data)  # (dtype, shape, order, bytes): no array is read here
        if code not in _EXT_CONSTRUCTORS:
            raise _UnknownExtension(code)
        parts = unpack(data)
        if not isinstance(parts, list) or len(parts) < 3:
            raise ValueError(f"msgpack extension type {code} holds no (module, name, argument)")
        return _revived(parts[0], parts[1], parts[2])

    return unpack


def _json_object(value: dict[str, Any]) -> Any:
    """LangChain's JSON serialization of an object (``{"lc": 1, "type": "constructor"}``) as
    data, as the msgpack constructors are read."""
    if value.get("lc") == 1 and value.get("type") == "constructor":
        ident = value.get("id")
        if isinstance(ident, list) and ident:
            module = ".".join(str(part) for part in ident[:-1])
            return _revived(module, ident[-1], value.get("kwargs", {}))
    return value


def _decoder(path: Path) -> Callable[[str | None, bytes | None, str], Any]:
    """A blob's value, as ``JsonPlusSerializer.loads_typed`` reads it; a blob memorylab cannot
    read is an error naming ``path``, where the blob is (``where``) and what to do."""
    unpack = _unpacker()

    def decode(kind: str | None, blob: bytes | None, where: str) -> Any:
        if kind == "null" or blob is None:
            return None
        if kind in ("bytes", "bytearray"):
            return bytes(blob)
        try:
            if kind == "msgpack":
                return unpack(bytes(blob))
            if kind == "json":
                return json.loads(bytes(blob), object_hook=_json_object)
        except _UnknownExtension as error:
            raise _fail_database(path, f"{where} holds msgpack extension type {error.code}, "
                                 "which langgraph-checkpoint 4.x does not write (codes 0-7): "
                                 "a newer serializer wrote it") from error  # fmt: skip
        except (ValueError, TypeError, IndexError) as error:  # msgpack's errors are ValueErrors
            raise _fail_database(path, f"{where} is damaged ({kind} that does not decode: "
                                 f"{error})") from error  # fmt: skip
        if kind == "pickle":
            raise _fail_database(path, f"{where} was pickled (pickle_fallback), which memorylab "
                                 "never unpickles")  # fmt: skip
        raise _fail_database(path, f"{where} has the serialization type {kind!r}")

    return decode


def _read_database(path: Path) -> dict[str, dict[str, Any]]:
    """Each thread of a SqliteSaver database, oldest first, in ``thread.json``'s shape."""
    try:
        with read_only_database(path) as connection:
            columns = _saver_columns(connection)
            for table, needed in _SAVER_TABLES.items():
                if not needed <= columns.get(table, set()):
                    raise _fail_database(path, f"no table {table} with the columns "
                                         f"{', '.join(sorted(needed))}")  # fmt: skip
            ordered = "task_path, " if "task_path" in columns["writes"] else ""
            checkpoints = connection.execute(
                "SELECT thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, "
                "checkpoint FROM checkpoints ORDER BY thread_id, checkpoint_id"
            ).fetchall()
            writes = connection.execute(
                "SELECT thread_id, checkpoint_id, channel, type, value FROM writes "
                "WHERE checkpoint_ns = '' AND channel IN (?, ?) "
                f"ORDER BY thread_id, checkpoint_id, {ordered}task_id, idx",  # writes_sort_key
                (_MESSAGES, _EVENT),
            ).fetchall()
    except sqlite3.Error as error:
        raise MemoryFormatError(
            f"cannot read the SQLite database {path} ({error}); check that it is a complete "
            "SqliteSaver file (copy its -wal file beside it, or stop the agent first)"
        ) from error
    decode = _decoder(path)
    step_writes: dict[tuple[str, str], list[tuple[str, str | None, bytes | None]]] = {}
    for thread, checkpoint, channel, kind, value in writes:
        step_writes.setdefault((str(thread), str(checkpoint)), []).append((channel, kind, value))
    by_thread: dict[str, list[tuple[str, str | None, str | None, bytes | None]]] = {}
    nested: dict[str, int] = {}
    for thread, namespace, checkpoint, parent, kind, blob in checkpoints:
        if namespace:  # a subgraph's own checkpoints
            nested[str(thread)] = nested.get(str(thread), 0) + 1
            continue
        by_thread.setdefault(str(thread), []).append((str(checkpoint), parent, kind, blob))
    threads = {
        thread: _walk(path, thread, rows, step_writes, decode, nested.get(thread, 0))
        for thread, rows in by_thread.items()
    }
    # Oldest first: by each thread's first checkpoint (uuid6 ids sort by time).
    return dict(sorted(threads.items(), key=lambda item: min(r[0] for r in by_thread[item[0]])))


def _walk(
    path: Path,
    thread: str,
    rows: Sequence[tuple[str, str | None, str | None, bytes | None]],
    step_writes: Mapping[tuple[str, str], Sequence[tuple[str, str | None, bytes | None]]],
    decode: Callable[[str | None, bytes | None, str], Any],
    nested: int,
) -> dict[str, Any]:
    """One thread walked from its first checkpoint to its latest, along ``parent_checkpoint_id``:
    each checkpoint's messages (its snapshot, else its parent's with the parent's writes folded
    in, as ``DeltaChannel`` rebuilds them) and summarization event."""
    parents = {checkpoint: parent for checkpoint, parent, _, _ in rows}
    blobs = {checkpoint: (kind, blob) for checkpoint, _, kind, blob in rows}
    line: list[str] = []
    at: str | None = max(parents)  # the latest (uuid6 ids sort by time)
    while at is not None and at in parents and at not in line:
        line.append(at)
        at = parents[at]
    line.reverse()
    notes: list[str] = []
    if len(line) < len(rows):
        notes.append(f"thread {thread}: {len(rows) - len(line)} checkpoint(s) on other branches "
                     "(a fork or a replay from an earlier checkpoint) are not read: the latest "
                     "checkpoint's line is")  # fmt: skip
    if at is not None:
        notes.append(f"thread {thread}: the checkpoint {at} before the first one read is not in "
                     "the database: its messages start where the database does")  # fmt: skip
    if nested:
        notes.append(f"thread {thread}: {nested} checkpoint(s) of subgraphs are not read")
    notes.append("a checkpointer's database keeps neither the model's profile nor the "
                 "summarization trigger: no context length or threshold is given (give them: "
                 "--context-length, --threshold)")  # fmt: skip
    messages: list[Any] = []
    event: Any = None
    events: list[Mapping[str, Any]] = []
    checkpoints: list[dict[str, Any]] = []
    model: str | None = None
    for checkpoint in line:
        kind, blob = blobs[checkpoint]
        state = decode(kind, blob, f"checkpoint {checkpoint} of thread {thread}")
        if not isinstance(state, Mapping):
            raise _fail_database(path, f"checkpoint {checkpoint} of thread {thread} is no map")
        values = _mapping(state.get("channel_values"))
        if _MESSAGES in values:  # a snapshot (or, before DeltaChannel, the whole list)
            stored = values[_MESSAGES]
            messages = _add_messages([], stored.value if isinstance(stored, _Snapshot) else stored)
        if _EVENT in values:
            event = values[_EVENT]
        number = None
        if isinstance(event, Mapping):
            if not events or events[-1] != event:
                events.append(event)
            number = len(events) - 1
        checkpoints.append({"checkpoint_id": checkpoint, "created_at": state.get("ts"),
                            "messages": len(messages), "summarization_event": number})  # fmt: skip
        written_after = step_writes.get((thread, checkpoint), [])
        if checkpoint == line[-1]:  # a step that never finished: not in the thread's state
            if written_after:
                notes.append(f"thread {thread}: {len(written_after)} write(s) after its latest "
                             "checkpoint (a step that did not finish) are not read, as langgraph "
                             "leaves them out of the thread's state")  # fmt: skip
            break
        for channel, write_kind, value in written_after:
            where = f"a write to {channel} after checkpoint {checkpoint} of thread {thread}"
            written = decode(write_kind, value, where)
            if channel == _MESSAGES:
                messages = _add_messages(messages, written)
            else:
                event = written
    for message in messages:
        meta = _mapping(_mapping(_mapping(message).get("data")).get("response_metadata"))
        if model is None and isinstance(meta.get("model_name"), str):
            model = meta["model_name"]
    return {
        "deepagents_thread": 1,
        "from_database": True,
        "thread_id": thread,
        "model": {"name": model} if model else {},
        "checkpoints": checkpoints,
        "summarization_events": [dict(e) for e in events],
        "messages": messages,
        "read_notes": notes,
    }


def _add_messages(current: list[Any], update: Any) -> list[Any]:
    """langgraph's ``add_messages`` on messages as data: each new message appended, one whose id
    is already there replacing it, a ``remove`` message deleting its id (all, with
    ``__remove_all__``); an ``Overwrite`` replacing the list."""
    if isinstance(update, _Overwrite):
        return _add_messages([], update.value)
    if isinstance(update, Mapping) and "__overwrite__" in update:
        return _add_messages([], update["__overwrite__"])
    merged = list(current)
    for message in update if isinstance(update, list) else [update]:
        if isinstance(message, str):  # langchain's coercion of a bare string
            message = {"type": "human", "data": {"type": "human", "content": message}}
        body = _mapping(_mapping(message).get("data"))
        ident = body.get("id")
        if _mapping(message).get("type") == "remove":
            merged = (
                []
                if ident == _REMOVE_ALL
                else [m for m in merged if _mapping(_mapping(m).get("data")).get("id") != ident]
            )
            continue
        for index, held in enumerate(merged):
            if ident is not None and _mapping(_mapping(held).get("data")).get("id") == ident:
                merged[index] = message
                break
        else:
            merged.append(message)
    return merged
