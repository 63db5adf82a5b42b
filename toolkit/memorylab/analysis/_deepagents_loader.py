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
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memorylab.analysis._foreign import RunCompaction, RunMessage, run_record
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


class DeepagentsThread:
    """A deepagents thread exported from its checkpointer (``thread.json``), with the folder
    of its backend's offloaded history beside it: one record."""

    name = FORMAT

    def handles(self, path: Path) -> bool:
        thread = path / THREAD_FILE if path.is_dir() else path
        return _OPENING.match(file_head(thread, _HEAD_BYTES)) is not None

    def load(self, path: Path) -> list[AgentRecord]:
        thread = path / THREAD_FILE if path.is_dir() else path
        return [_thread_record(thread, _read_thread(thread))]


def approximate_tokens(path: Path) -> list[int]:
    """Each message of the thread ``path`` (a ``thread.json`` or its folder) as langchain's
    ``count_tokens_approximately`` counts it, the count deepagents' ``SummarizationMiddleware``
    compares with its trigger: ``ceil((content + role + name + tool calls' repr + tool call id)
    / 4) + 3`` (its defaults: 4 characters a token, 3 tokens a message; the tool calls as the
    Python ``repr`` of the stored list, the role OpenAI's name for it). In the thread's order, as
    the loader reads its messages."""
    thread = path / THREAD_FILE if path.is_dir() else path
    counts: list[int] = []
    for message in _read_thread(thread).get("messages", []):
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


def _thread_record(path: Path, data: Mapping[str, Any]) -> AgentRecord:
    notes: list[str] = []
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
                      calls=calls, settings=_settings(data, notes), notes=notes)  # fmt: skip


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
    else:
        notes.append("the export records no summarization trigger: no threshold is given")
    return settings
