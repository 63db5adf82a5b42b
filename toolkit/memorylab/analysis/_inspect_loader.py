"""inspect_ai's eval logs: a ``.eval`` file (a zip of JSON members) or a ``.json`` log, one
record per sample (and epoch) of the run.

What a log keeps of a sample, and how it is read (docs/formats/inspect-ai.md):

* ``messages``: the sample's history (``state.messages``), every message with an ``id`` and no
  time of its own. A message's time is that of the event that first shows it: a user or system
  message the first ``ModelEvent`` whose input holds it (``input``, or ``input_refs`` into the
  sample's ``events_data`` pool), an assistant reply its ``ModelEvent``'s ``completed``, a tool
  result its ``ToolEvent``'s (``message_id``), a compaction summary its ``CompactionEvent``'s.
  A message no event shows takes the time of the message before it (a note says how many).
  Texts stored as ``attachment://<hash>`` are read from the sample's ``attachments``.
* ``events``: each ``CompactionEvent`` (``type`` summary, edit or trim; ``tokens_before``,
  ``tokens_after``: inspect_ai's own count; ``metadata.trigger``) is a compaction. A summary
  compaction appends its summary to the history, a user message whose ``metadata`` has
  ``summary``: that message is the compaction's summary and its place in the history where it
  fired; it is taken out of the messages (the record puts it at the head of the next segment).
  Edit and trim compactions append none: they fire after the messages timed at or before them.
* each ``ModelEvent`` whose reply is in the history is one of the agent's model calls
  (``output.usage``: input, cache read and write, output and reasoning tokens, cost); the others
  (the summarizer's calls inside a compaction, a scorer's) are counted in a note.
* settings: the model (``eval.model``) and the compaction threshold a plan step records (a
  parameter that is a compaction strategy: ``{"type", "threshold", ...}``).

Zstandard: inspect_ai 0.3.1xx and later compress the members of a ``.eval`` with zstd (zip method
93), which Python's ``zipfile`` reads from 3.14 on; before it, through the ``zstandard`` package
when it is installed, else the error says what to install (or to convert the log to JSON with
``inspect log convert``).
"""

from __future__ import annotations

import importlib
import io
import json
import re
import struct
import zipfile
import zlib
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from memorylab.analysis._foreign import RunCompaction, RunMessage, run_record, tool_call_text
from memorylab.analysis._record import AgentRecord
from memorylab.analysis._sources import file_head
from memorylab.errors import MemoryFormatError, PrerequisiteError
from memorylab.memory._records import UsageRecord

FORMAT = "inspect-ai"
_HEAD_BYTES = 512
_ZIP_MAGIC = b"PK\x03\x04"
_EVAL_MEMBERS = ("header.json", "_journal/start.json")
"""A ``.eval`` zip holds one of these (``_journal/start.json`` alone: a run still writing)."""
_JSON_LOG = re.compile(rb'\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:\s*"\w+"\s*,\s*"eval"\s*:')
"""How inspect_ai's JSON log opens: ``EvalLog``'s first fields in its declared order."""
_ATTACHMENT = "attachment://"
_ZSTD = 93
_STRATEGY_TYPES = frozenset({"summary", "edit", "trim", "native", "auto"})
_ROLES = frozenset({"system", "user", "assistant", "tool"})


class InspectLog:
    """An inspect_ai eval log (``.eval`` or ``.json``): one record per sample and epoch."""

    name = FORMAT

    def handles(self, path: Path) -> bool:
        head = file_head(path, _HEAD_BYTES)
        if head.startswith(_ZIP_MAGIC):
            try:  # the central directory only: names, no member read
                with zipfile.ZipFile(path) as log:
                    names = set(log.namelist())
            except (OSError, zipfile.BadZipFile):
                return False
            return any(name in names for name in _EVAL_MEMBERS)
        return _JSON_LOG.match(head) is not None

    def load(self, path: Path) -> list[AgentRecord]:
        return [_sample_record(path, log, sample) for log, sample in _samples(path)]



# ------------------------------------------------------------------------------- the file


def _samples(path: Path) -> Iterator[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """The log's header (``eval``, ``plan``, ...) with each sample, in the file's order."""
    if file_head(path, _HEAD_BYTES).startswith(_ZIP_MAGIC):
        yield from _eval_samples(path)
        return
    log = _json(path, path.read_bytes(), "the log")
    for sample in log.get("samples") or ():
        yield log, sample


def _eval_samples(path: Path) -> Iterator[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    try:
        with zipfile.ZipFile(path) as log:
            names = log.namelist()
            header_name = next((name for name in _EVAL_MEMBERS if name in names), None)
            if header_name is None:
                raise MemoryFormatError(
                    "a zip without inspect_ai's header.json or _journal/start.json: not an "
                    "inspect_ai .eval log", path=path,
                )  # fmt: skip
            header = _json(path, _member(path, log, header_name), header_name)
            samples = [name for name in names if name.startswith("samples/")]
            for name in sorted(samples, key=_sample_order):
                yield header, _json(path, _member(path, log, name), name)
    except (OSError, zipfile.BadZipFile) as error:
        raise MemoryFormatError(f"cannot read the .eval zip ({error}); is it whole?",
                                path=path) from error  # fmt: skip


def _sample_order(name: str) -> tuple[int, str]:
    """``samples/<id>_epoch_<n>.json`` by epoch, then id (the order inspect_ai lists them)."""
    match = re.search(r"_epoch_(\d+)\.json$", name)
    return (int(match.group(1)) if match else 0, name)


def _member(path: Path, log: zipfile.ZipFile, name: str) -> bytes:
    """A member's bytes: stdlib ``zipfile`` for what it reads, zstd (method 93) otherwise."""
    info = log.getinfo(name)
    if info.compress_type != _ZSTD or getattr(zipfile, "ZIP_ZSTANDARD", None) == _ZSTD:
        return log.read(name)
    try:  # by name: an optional package, typed or not, installed or not where mypy runs
        zstandard: Any = importlib.import_module("zstandard")
    except ImportError:
        raise PrerequisiteError(
            f"{path}: its members are compressed with Zstandard, which Python before 3.14 "
            "reads through the zstandard package: pip install zstandard (or convert the log: "
            f"inspect log convert {path} --to json --output-dir DIR)"
        ) from None
    with open(log.filename or path, "rb") as file:  # the member's raw bytes after its header
        file.seek(info.header_offset)
        local = file.read(30)
        if len(local) != 30 or not local.startswith(_ZIP_MAGIC):
            raise MemoryFormatError(f"{name}: no local header where the zip says", path=path)
        name_length, extra_length = struct.unpack("<HH", local[26:30])
        file.seek(info.header_offset + 30 + name_length + extra_length)
        raw = file.read(info.compress_size)
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw), read_across_frames=True)
    data: bytes = reader.read()
    if zlib.crc32(data) != info.CRC:
        raise MemoryFormatError(f"{name}: its bytes do not match the zip's checksum", path=path)
    return data


def _json(path: Path, data: bytes, what: str) -> Mapping[str, Any]:
    try:
        value = json.loads(data)
    except ValueError as error:
        raise MemoryFormatError(f"{what} is not JSON ({error})", path=path) from error
    if not isinstance(value, Mapping):
        raise MemoryFormatError(f"{what} is not a JSON object", path=path)
    return value


# ------------------------------------------------------------------------------ a sample


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return None
    return when if when.tzinfo is not None else None  # inspect_ai writes UTC times with +00:00


def _text(content: Any, attachments: Mapping[str, Any]) -> str:
    """A message's text: a string (an attachment's when it names one), or a list of content
    parts whose texts are joined (reasoning left out: it is not what the history carries on;
    an image, audio or document part as its type in brackets)."""
    if isinstance(content, str):
        if content.startswith(_ATTACHMENT):
            return str(attachments.get(content.removeprefix(_ATTACHMENT), content))
        return content
    if isinstance(content, Sequence):
        parts = []
        for part in content:
            if not isinstance(part, Mapping):
                continue
            kind = part.get("type")
            if kind == "text":
                parts.append(_text(part.get("text", ""), attachments))
            elif kind != "reasoning":
                parts.append(f"[{kind}]")
        return "\n".join(parts)
    return "" if content is None else str(content)


def _with_calls(text: str, calls: Any, attachments: Mapping[str, Any]) -> str:
    """An assistant message's text with its tool calls after it, each as every foreign loader
    shows one (:func:`~memorylab.analysis._foreign.tool_call_text`; an argument stored as an
    attachment read back)."""
    shown = []
    for call in calls if isinstance(calls, list) else ():
        if not isinstance(call, Mapping):
            continue
        arguments = call.get("arguments")
        if isinstance(arguments, Mapping):
            arguments = {k: _text(v, attachments) if isinstance(v, str) else v
                         for k, v in arguments.items()}  # fmt: skip
        shown.append(tool_call_text(call.get("function"), arguments))
    return "\n".join([text, *shown]) if text else "\n".join(shown)


def _input_ids(event: Mapping[str, Any], pool: Sequence[Any]) -> list[str]:
    """The ids of a ``ModelEvent``'s input messages (condensed logs keep ``input_refs``:
    ``[start, end)`` ranges into the sample's ``events_data["messages"]`` pool)."""
    refs = event.get("input_refs")
    messages: list[Any] = []
    if refs:
        for start, end in refs:
            messages += pool[start:end]
    else:
        messages = list(event.get("input") or ())
    ids = (m.get("id") for m in messages if isinstance(m, Mapping))
    return [i for i in ids if isinstance(i, str)]


def _reply_id(event: Mapping[str, Any]) -> str | None:
    choices = (event.get("output") or {}).get("choices") or ()
    message = choices[0].get("message") if choices and isinstance(choices[0], Mapping) else None
    return message.get("id") if isinstance(message, Mapping) else None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _agent(log: Mapping[str, Any], sample: Mapping[str, Any]) -> tuple[str, str]:
    """The record's agent, ``<task>/<sample id>`` (``/epoch-<n>`` for a log of several
    epochs), each part made a folder name memorylab accepts (characters outside letters,
    digits, ``.-_`` become ``_``), and its key among the file's samples (the name without the
    task: what its segments' names carry)."""
    spec = log.get("eval") or {}
    parts = [str(spec.get("task") or "task"), str(sample.get("id"))]
    if ((spec.get("config") or {}).get("epochs") or 1) > 1:
        parts.append(f"epoch-{sample.get('epoch')}")
    parts = [re.sub(r"[^\w.-]", "_", part).lstrip(".") or "_" for part in parts]
    return "/".join(parts), "/".join(parts[1:])


def _threshold(plan: Any) -> int | float | None:
    """The compaction threshold a plan step records: a parameter that is a compaction
    strategy (``{"type": "summary", "threshold": ...}``), searched depth first."""
    if isinstance(plan, Mapping):
        if plan.get("type") in _STRATEGY_TYPES and isinstance(plan.get("threshold"), int | float):
            return plan["threshold"]  # type: ignore[no-any-return]
        values: Any = plan.values()
    elif isinstance(plan, list):
        values = plan
    else:
        return None
    for value in values:
        found = _threshold(value)
        if found is not None:
            return found
    return None


def _sample_record(path: Path, log: Mapping[str, Any], sample: Mapping[str, Any]) -> AgentRecord:
    attachments = sample.get("attachments") or {}
    pool = (sample.get("events_data") or {}).get("messages") or ()
    events = [e for e in sample.get("events") or () if isinstance(e, Mapping)]
    history = [m for m in sample.get("messages") or () if isinstance(m, Mapping)]
    in_history = {m.get("id") for m in history}
    notes: list[str] = []

    # each message's time: the first event that shows it (the module docstring)
    seen: dict[str, datetime] = {}
    compaction_events: list[Mapping[str, Any]] = []
    agent_calls: list[tuple[Mapping[str, Any], bool]] = []
    other_calls: list[Mapping[str, Any]] = []
    compacted = False
    for event in events:
        kind, when = event.get("event"), _time(event.get("timestamp"))
        if when is None:
            continue
        if kind == "model":
            for message_id in _input_ids(event, pool):
                seen.setdefault(message_id, when)
            reply = _reply_id(event)
            if reply in in_history:
                seen.setdefault(str(reply), _time(event.get("completed")) or when)
                agent_calls.append((event, compacted))
                compacted = False
            else:
                other_calls.append(event)
        elif kind == "tool" and isinstance(event.get("message_id"), str):
            seen.setdefault(event["message_id"], _time(event.get("completed")) or when)
        elif kind == "compaction":
            compaction_events.append(event)
            compacted = True

    # the messages, the summaries taken out at their places
    messages: list[RunMessage] = []
    summaries: list[tuple[int, str, datetime | None]] = []
    untimed = 0
    previous = _time(sample.get("started_at"))
    for message in history:
        role = message.get("role")
        when = seen.get(str(message.get("id")))
        text = _text(message.get("content"), attachments)
        if role == "assistant":
            text = _with_calls(text, message.get("tool_calls"), attachments)
        if role == "user" and "summary" in (message.get("metadata") or {}):
            summaries.append((len(messages), text, when))
            continue
        if role not in _ROLES:
            continue
        if when is None:
            untimed += 1
            when = previous
        if when is None:
            raise MemoryFormatError(
                f"sample {sample.get('id')!r}: message {message.get('id')} has no event and "
                "the sample no start time; is the log whole?", path=path,
            )  # fmt: skip
        previous = when
        messages.append(RunMessage(
            str(role), text, when,
            tool_call_id=message.get("tool_call_id") if role == "tool" else None,
            name=message.get("function") if role == "tool" else None,
        ))  # fmt: skip
    if untimed:
        notes.append(
            f"{untimed} message(s) no event shows by its id took the time of the one "
            "before (inspect_ai merges consecutive user messages before a call)"
        )

    compactions = _compactions(compaction_events, summaries, messages, notes)
    agent, key = _agent(log, sample)
    calls = _calls(agent_calls, agent, messages)
    if other_calls:
        spent = sum(_usage_input(e) or 0 for e in other_calls)
        notes.append(
            f"{len(other_calls)} model call(s) whose reply is not in the history (the "
            f"summarizer's within a compaction, a scorer's; {spent:,} input tokens) are not "
            "among the agent's calls"
        )
    spec = log.get("eval") or {}
    settings: dict[str, Any] = {"model": spec.get("model")}
    threshold = _threshold(log.get("plan"))
    if threshold is not None:
        settings["threshold"] = threshold
    else:
        notes.append("the plan records no compaction strategy: the threshold is not known")
    return run_record(
        path, messages, format=FORMAT, agent=agent, compactions=compactions, calls=calls,
        settings=settings, notes=notes, key=key,
    )  # fmt: skip


def _compactions(
    events: list[Mapping[str, Any]],
    summaries: list[tuple[int, str, datetime | None]],
    messages: list[RunMessage],
    notes: list[str],
) -> list[RunCompaction]:
    """Each ``CompactionEvent`` as a compaction: a summary one matched, in order, with the
    summary messages of the history; an edit or trim one (no summary) after the messages timed
    at or before it."""
    found: list[RunCompaction] = []
    pending = list(summaries)
    for event in events:
        when = _time(event.get("timestamp"))
        assert when is not None  # events without a time were skipped
        kind = event.get("type")
        metadata = event.get("metadata") or {}
        summary: str | None = None
        if kind == "summary" and pending:
            at, summary, _ = pending.pop(0)
        else:
            at = sum(1 for m in messages if m.timestamp <= when)
        found.append(RunCompaction(
            at, when, summary=summary,
            tokens_before=_count(event.get("tokens_before")),
            tokens_after=_count(event.get("tokens_after")),
            kept=0, trigger=str(metadata.get("trigger") or "threshold"),
        ))  # fmt: skip
    if pending:
        notes.append(f"{len(pending)} summary message(s) without a compaction event: read as "
                     "messages' summaries of no recorded compaction, left out")  # fmt: skip
    kinds = {str(e.get("type")) for e in events} - {"summary"}
    if kinds:
        notes.append(f"{', '.join(sorted(kinds))} compactions record no summary and no "
                     "count of what they kept (kept: 0)")  # fmt: skip
    return found


def _usage_input(event: Mapping[str, Any]) -> int | None:
    """All the input a call's usage reports: inspect_ai's ``input_tokens`` leaves out the
    cache reads and writes, which memorylab's ``input_tokens`` include."""
    usage = (event.get("output") or {}).get("usage")
    if not isinstance(usage, Mapping) or _count(usage.get("input_tokens")) is None:
        return None
    return sum(_count(usage.get(k)) or 0 for k in
               ("input_tokens", "input_tokens_cache_read", "input_tokens_cache_write"))  # fmt: skip


def _calls(
    events: list[tuple[Mapping[str, Any], bool]], agent: str, messages: list[RunMessage]
) -> list[UsageRecord]:
    start = messages[0].timestamp.isoformat() if messages else None
    calls = []
    for number, (event, compacted) in enumerate(events, 1):
        output = event.get("output") or {}
        reported = output.get("usage")
        usage: Mapping[str, Any] = reported if isinstance(reported, Mapping) else {}
        when = _time(event.get("completed")) or _time(event.get("timestamp"))
        assert when is not None
        cost = usage.get("total_cost")
        latency = output.get("time")
        calls.append(UsageRecord(
            time=when, agent=agent, session_start=start, call=number,
            model=event.get("model"), compacted=compacted,
            input_tokens=_usage_input(event),
            output_tokens=_count(usage.get("output_tokens")),
            cached_tokens=_count(usage.get("input_tokens_cache_read")),
            cache_write_tokens=_count(usage.get("input_tokens_cache_write")),
            reasoning_tokens=_count(usage.get("reasoning_tokens")),
            latency_s=float(latency) if isinstance(latency, int | float) else None,
            cost_usd=float(cost) if isinstance(cost, int | float) else None,
        ))  # fmt: skip
    return calls
