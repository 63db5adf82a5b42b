"""Pure value records of the memory core: no I/O, no clock, no environment.

They are frozen dataclasses; identity and storage live in :mod:`memorylab.memory._store`.
Every record has ``to_dict()`` / ``from_dict()`` producing JSON-ready dicts (timestamps as
ISO-8601 strings), so they travel through ``compactions.jsonl``, ``usage.jsonl``, caches and
DataFrames unchanged.
"""

from __future__ import annotations

import functools
import html
import json
import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from enum import StrEnum
from typing import Any

from memorylab._validation import LARGEST_COUNT, check_int, check_number
from memorylab.errors import InvalidSetting

SUMMARY_PREFIX = "[Compressed Memory Summary]"
PRELOAD_PREFIX = "[Persistent Memory — MEMORY.md]"

TOOL_ROLES = ("tool", "tool executor", "function", "tool result")
"""Roles (compared lower-cased) whose entries are tool results even without a ``tool_call_id``:
what the files keep of a tool result, where no entry field survives."""


USER_ROLES = ("user", "human")
"""Roles (compared lower-cased) of the user's messages besides a conversation's own user role."""


class EntryKind(StrEnum):
    """What an entry of ``Conversation.conversation_history`` is, read by :func:`entry_kind`.

    A message has no ``"kind"`` key (so entries, save files and ``to_dict()`` look like the
    reference's); the others carry their value as ``entry["kind"]``.
    """

    MESSAGE = "message"  # added by add() and its aliases: a block of MEMORY.md when persisted
    STATIC = "static"  # system prompt, rules: never written
    PRELOAD = "preload"  # the MEMORY.md a new conversation read: never written again
    SUMMARY = "summary"  # what compact() left: a block of the new MEMORY.md


def entry_kind(entry: Mapping[str, Any]) -> EntryKind | None:
    """The kind of a history entry: no ``"kind"`` (or ``None``) is a message; ``None`` for a
    ``"kind"`` memorylab never sets (a caller's own ``add(..., kind=...)`` field)."""
    kind = entry.get("kind")
    if kind is None:
        return EntryKind.MESSAGE
    try:
        return EntryKind(kind)
    except ValueError:
        return None


def is_tool_result(entry: Mapping[str, Any]) -> bool:
    """Whether a history entry (or a transcript's message) is a tool's result: it answers a
    ``tool_call_id`` (in the entry or its ``metadata``, as ``Conversation.add_messages`` keeps
    it), or its role is one of :data:`TOOL_ROLES` (a file keeps only the role).

    >>> is_tool_result({"role": "Tool Executor", "content": "42"})
    True
    >>> is_tool_result({"role": "Calc", "content": "42", "tool_call_id": "c1"})
    True
    >>> is_tool_result({"role": "User", "content": "42"})
    False
    """
    if entry.get("tool_call_id"):
        return True
    metadata = entry.get("metadata")
    if isinstance(metadata, Mapping) and metadata.get("tool_call_id"):
        return True
    return str(entry.get("role", "")).lower() in TOOL_ROLES


def is_user_message(entry: Mapping[str, Any], user_role: str) -> bool:
    """Whether a history entry is a message of the user: a message (no other kind) whose role
    is the conversation's ``user_role`` or one of :data:`USER_ROLES`, compared lower-cased (the
    roles ``Conversation.to_messages`` sends as ``user``). The last one starts the turn in
    progress, which a compaction keeps (``ContextCompressor(keep_turn=True)``).

    >>> is_user_message({"role": "Human", "content": "hi"}, "Alice")
    True
    >>> is_user_message({"role": "alice", "content": "hi"}, "Alice")
    True
    >>> is_user_message({"role": "User", "content": "rules", "kind": "static"}, "User")
    False
    """
    if entry_kind(entry) is not EntryKind.MESSAGE:
        return False
    role = str(entry.get("role", "")).lower()
    return role == user_role.lower() or role in USER_ROLES


def turn_start(entries: Sequence[Mapping[str, Any]], user_role: str) -> int | None:
    """Where the turn in progress starts among ``entries``: the position of the user's last
    message (:func:`is_user_message`), the turn being it and every entry after it; ``None``
    without a message of the user.

    >>> turn_start([{"role": "User", "content": "a"}, {"role": "Bot", "content": "b"}], "User")
    0
    """
    for index in range(len(entries) - 1, -1, -1):
        if is_user_message(entries[index], user_role):
            return index
    return None


@functools.singledispatch
def html_view(value: object) -> str:
    """The HTML a notebook shows for a record (its ``_repr_html_``).

    The views are :mod:`memorylab.memory._display`'s, registered when :mod:`memorylab.memory` is
    imported: a record is a value and knows no HTML, and the display module, which reads
    records, stays above them (no import circle).
    """
    return f"<pre>{html.escape(repr(value))}</pre>"


def _dt_to_str(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat(timespec="microseconds")


def _dt_from_str(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value))


@dataclass(frozen=True, slots=True)
class Message:
    """One block of a memory file: who said it, what, and when.

    ``content`` is the text as stored (non-string content is converted on the way in, see
    :func:`memorylab.memory._format.content_to_text`).
    """

    role: str
    content: str
    timestamp: datetime

    @property
    def is_summary(self) -> bool:
        """True for a compaction summary (content starts with ``[Compressed Memory Summary]``)."""
        return self.content.startswith(SUMMARY_PREFIX)

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "content": self.content, "timestamp": _dt_to_str(self.timestamp)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        timestamp = _dt_from_str(data["timestamp"])
        if timestamp is None:
            raise ValueError("a Message needs a timestamp")
        return cls(role=str(data["role"]), content=str(data["content"]), timestamp=timestamp)


@dataclass(frozen=True, slots=True)
class MemoryDocument:
    """A parsed MEMORY.md or archive file.

    Header fields are ``None`` when the file has no header (``conversation_name``, ``created``),
    when it was written by the reference framework (``format_version``), or when it is not the
    result of a compaction (``continues``: the archive file name this file replaced).
    ``extra_header`` keeps header lines memorylab does not know, in order, so they survive a
    round trip.
    """

    conversation_name: str | None
    created: datetime | None
    messages: tuple[Message, ...] = ()
    format_version: int | None = None
    continues: str | None = None
    extra_header: tuple[tuple[str, str], ...] = ()

    def _repr_html_(self) -> str:
        return html_view(self)

    @property
    def summaries(self) -> tuple[Message, ...]:
        return tuple(m for m in self.messages if m.is_summary)

    def to_dict(self) -> dict[str, Any]:
        return {
            "conversation_name": self.conversation_name,
            "created": _dt_to_str(self.created),
            "format_version": self.format_version,
            "continues": self.continues,
            "extra_header": [list(kv) for kv in self.extra_header],
            "messages": [m.to_dict() for m in self.messages],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MemoryDocument:
        return cls(
            conversation_name=data.get("conversation_name"),
            created=_dt_from_str(data.get("created")),
            format_version=data.get("format_version"),
            continues=data.get("continues"),
            extra_header=tuple((str(k), str(v)) for k, v in data.get("extra_header", ())),
            messages=tuple(Message.from_dict(m) for m in data.get("messages", ())),
        )


@dataclass(frozen=True, slots=True)
class ArchiveRef:
    """An archived MEMORY.md: its file name inside ``archive/`` and when it was written."""

    name: str
    created: datetime

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "created": _dt_to_str(self.created)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ArchiveRef:
        created = _dt_from_str(data["created"])
        assert created is not None
        return cls(name=str(data["name"]), created=created)


@dataclass(frozen=True, slots=True)
class CompactionEvent:
    """What one compaction did (or, with ``error`` set, why it did not happen).

    Token figures are ``None`` when nobody counted them (a manual ``compact()`` without a
    tokenizer). ``carried_over`` counts messages appended while the summary was being made, which
    were moved into the fresh MEMORY.md after the summary. ``strategy`` names the strategy that
    made it and its settings (``{"name": "keep_recent", "keep_messages": 20}``, what
    ``memorylab.compress.strategy_from_record`` rebuilds it from); ``None``, and absent from
    ``to_dict()``, for the default, summary (so records of earlier versions read unchanged).
    """

    time: datetime
    agent: str | None = None
    archive: str | None = None
    summary_chars: int = 0
    messages_archived: int = 0
    carried_over: int = 0
    tokens_before: int | None = None
    tokens_after: int | None = None
    summary_tokens: int | None = None
    threshold: float | int | None = None
    context_length: int | None = None
    summarizer_model: str | None = None
    latency_s: float | None = None
    cost_usd: float | None = None
    error: str | None = None
    kind: str = "compaction"
    strategy: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None

    def _repr_html_(self) -> str:
        return html_view(self)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["time"] = _dt_to_str(self.time)
        data["extra"] = dict(self.extra)
        if self.strategy is None:
            del data["strategy"]  # the default: a record's bytes as before strategies
        else:
            data["strategy"] = dict(self.strategy)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CompactionEvent:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        time = _dt_from_str(values.pop("time"))
        assert time is not None
        values["extra"] = dict(values.get("extra") or {})
        return cls(time=time, **values)


@dataclass(frozen=True, slots=True)
class UsageRecord:
    """One model call of the :class:`~memorylab.Agent`: memorylab's estimate of the input it
    sent and what the provider reported (a line of ``usage.jsonl``, beside
    ``compactions.jsonl``). Counts only: no text of the call is in it, nothing a redactor would
    need to see.

    * ``time``: when the call ended, the timestamp its reply got in the history (the clock of
      the messages); ``agent``; ``session_start``: the first message of the process that made
      the call, as its compactions record it (``extra["session_start"]``); ``call``: the call's
      number in that process, from 1; ``model``: the model called.
    * ``estimated_tokens``: memorylab's estimate of the input, the count the trigger uses:
      ``Conversation.token_count()`` at the call (the request's messages, the static context,
      the preload, the summary and the messages, as OpenAI counts a chat request, after any
      compaction of the check before it, and the tool schemas). ``tool_tokens``: the tool
      schemas' share of it, counted as their JSON text by the same tokenizer (0 without tools).
    * ``checked_tokens``: the count the compaction check before the call compared with its
      trigger (``estimated_tokens`` before any compaction, or for a trigger that counts the
      reported usage, the last reported usage plus the estimate of what was added since);
      ``None`` when no check ran (compression off). ``compacted``: that check compacted.
    * the provider's report, each ``None`` when it said nothing (never 0 for unknown):
      ``input_tokens``, ``output_tokens``, ``cached_tokens`` (input read from its prompt
      cache), ``cache_write_tokens`` (input written to it), ``reasoning_tokens`` (part of the
      output); ``latency_s`` and ``cost_usd`` (litellm's price; ``None``: unpriced).
    """

    time: datetime
    agent: str | None = None
    session_start: str | None = None
    call: int = 0
    model: str | None = None
    estimated_tokens: int | None = None
    tool_tokens: int | None = None
    checked_tokens: int | None = None
    compacted: bool = False
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    latency_s: float | None = None
    cost_usd: float | None = None
    kind: str = "model_call"

    @property
    def drift(self) -> float | None:
        """How far the provider's input count is from the estimate: ``input / estimated - 1``
        (``0.2``: it billed 20 % more than memorylab counted); ``None`` without both."""
        if self.input_tokens is None or not self.estimated_tokens:
            return None
        return self.input_tokens / self.estimated_tokens - 1.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["time"] = _dt_to_str(self.time)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> UsageRecord:
        """The record :meth:`to_dict` wrote (fields it does not know are ignored, and a field
        recorded as ``null`` takes its default): how every reader makes a line of
        ``usage.jsonl`` a record."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known and v is not None}
        time = _dt_from_str(values.pop("time", None))
        if time is None:
            raise ValueError("a UsageRecord needs a time")
        return cls(time=time, **values)


# -- reading a line of compactions.jsonl / usage.jsonl -----------------------------------------

# The shapes of the fields (how a problem names what was expected).
_COUNT, _NUMBER, _THRESHOLD, _TEXT = "a count", "a number >= 0", "a number > 0", "a text"
_TIME, _FLAG, _MAPPING, _STRATEGY = "a time", "true or false", "an object", "a strategy record"

# fmt: off
IDENTIFYING_FIELDS = frozenset({"time", "agent", "archive", "kind", "replaced"})
"""The fields of a ``compactions.jsonl``/``usage.jsonl`` record that identify it (readers match
on them): never redacted, as memorylab writes them from names and times it made, which are on
disk already (folder and archive names). Every other text of a record is redacted before it
reaches a file (the store's JSON Lines rule)."""

RECORD_FIELDS: Mapping[str, str] = {
    "time": _TIME,
    **dict.fromkeys(("agent", "archive", "kind", "replaced", "reason", "error",
                     "summarizer_model", "model", "session_start"), _TEXT),
    **dict.fromkeys(("summary_chars", "messages_archived", "carried_over", "tokens_before",
                     "tokens_after", "summary_tokens", "context_length", "call",
                     "estimated_tokens", "tool_tokens", "checked_tokens", "input_tokens",
                     "output_tokens", "cached_tokens", "cache_write_tokens",
                     "reasoning_tokens"), _COUNT),
    **dict.fromkeys(("latency_s", "cost_usd"), _NUMBER),
    "threshold": _THRESHOLD,
    "compacted": _FLAG,
    "strategy": _STRATEGY,
    "extra": _MAPPING,
}
# fmt: on
"""What each field memorylab writes to ``compactions.jsonl`` (:class:`CompactionEvent`, and the
store's deletion records) and ``usage.jsonl`` (:class:`UsageRecord`) holds, for
:func:`read_record_line`; ``None`` (JSON ``null``) is always allowed: unrecorded."""

# fmt: off
EXTRA_FIELDS: Mapping[str, str] = {
    **dict.fromkeys(("summary_input_tokens", "summary_output_tokens", "summary_calls",
                     "summary_budget", "summarizer_max_tokens", "static_tokens",
                     "summarized_messages", "kept_messages", "cleared_messages",
                     "dropped_messages", "counted_tokens", "preload_tokens",
                     "preload_max_tokens", "preload_omitted"), _COUNT),
    **dict.fromkeys(("token_model", "checks", "session_start", "edit"), _TEXT),
    "trigger": _MAPPING,
}
# fmt: on
"""The same for the fields of a compaction record's ``extra`` that the readers use."""

_DEEPEST = 64  # levels of nesting a field may have: memorylab's records have 3


@dataclass(frozen=True, slots=True)
class RecordLine:
    """One line of a JSON Lines file of the store, read by :func:`read_record_line`.

    ``record``: the JSON object, its fields of the wrong shape left out; ``None`` when the line
    is no record at all (it is skipped). ``problems``: what was wrong, one phrase each, naming
    fields and shapes, never quoting a value (they are logged).
    """

    record: dict[str, Any] | None
    problems: tuple[str, ...] = ()


def read_record_line(text: str) -> RecordLine:
    """One line of ``compactions.jsonl`` or ``usage.jsonl`` (or the compaction journal) read the
    way every reader reads it: never an exception, whatever the line holds.

    * not JSON (a line cut off by a crash, a hand edit), nested past what the JSON reader can
      follow, or JSON that is not an object: no record (``record`` is ``None``);
    * NaN, Infinity, a float that overflows (``1e999``) and an integer longer than Python reads
      (4,300 digits: ``sys.get_int_max_str_digits()``) are read as ``null`` (unrecorded);
    * a field of :data:`RECORD_FIELDS` (or of ``extra``, :data:`EXTRA_FIELDS`) of the wrong
      shape (a text where a count is expected, a list where an object is, a negative count or
      one past an int64, a field nested deeper than 64 levels) is left out, and a record
      without a ``time`` says so.

    >>> line = read_record_line('{"time": "2026-05-01T10:00:00+00:00", "tokens_before": "many"}')
    >>> line.record, line.problems
    ({'time': '2026-05-01T10:00:00+00:00'}, ('tokens_before is not a count',))
    >>> read_record_line('{"archive": "cut').problems
    ('not JSON (cut off by a crash?)',)
    """
    read_as_null: list[str] = []

    def integer(text: str) -> int | None:
        try:
            return int(text)
        except ValueError:  # past Python's limit of digits: refused before any conversion
            read_as_null.append(f"an integer of {len(text.lstrip('-')):,} digits")
            return None

    def real(text: str) -> float | None:
        value = float(text)
        if math.isfinite(value):
            return value
        read_as_null.append(f"{text[:12]}{'...' if len(text) > 12 else ''}")
        return None

    try:
        try:  # integers by json's own reader (fast); only a line it refuses is read again
            value = json.loads(text, parse_float=real, parse_constant=real)
        except json.JSONDecodeError:
            raise
        except ValueError:
            value = json.loads(text, parse_int=integer, parse_float=real, parse_constant=real)
    except RecursionError:
        return RecordLine(None, ("nested too deeply to read",))
    except ValueError:
        return RecordLine(None, ("not JSON (cut off by a crash?)",))
    if not isinstance(value, dict):
        return RecordLine(None, (f"a JSON {_json_type(value)}, not an object",))
    problems = [f"{n} read as null (unrecorded)" for n in dict.fromkeys(read_as_null)]
    checked = check_record(value)
    return RecordLine(checked.record, (*problems, *checked.problems))


def check_record(value: object) -> RecordLine:
    """``value`` (a record as JSON reads it) with the fields of the wrong shape left out, and
    what was wrong (:func:`read_record_line`; the compaction journal's record is checked by it
    too). Not a dict: no record."""
    if not isinstance(value, dict):
        return RecordLine(None, (f"a JSON {_json_type(value)}, not an object",))
    record = dict(value)
    problems = _drop_misshapen(record, RECORD_FIELDS, "")
    extra = record.get("extra")
    if isinstance(extra, dict):
        extra = record["extra"] = dict(extra)
        problems += _drop_misshapen(extra, EXTRA_FIELDS, "extra.")
    if "time" not in value:
        problems.append("no time")
    return RecordLine(record, tuple(problems))


def check_field(name: str, value: object) -> None:
    """Refuse ``value`` for the record field ``name`` when it has not the shape every reader
    expects of it (:data:`RECORD_FIELDS`): an :class:`~memorylab.errors.InvalidSetting` naming
    it. ``None`` (unrecorded) and the fields memorylab does not read pass."""
    expected = RECORD_FIELDS.get(name)
    if value is not None and expected is not None and not _has_shape(value, expected):
        raise InvalidSetting(f"{name} must be {expected} or None, not {value!r}")


def _drop_misshapen(record: dict[str, Any], known: Mapping[str, str], prefix: str) -> list[str]:
    problems = []
    for name, value in list(record.items()):
        if value is None:
            continue
        expected = known.get(name)
        if expected is not None and not _has_shape(value, expected):
            problems.append(f"{prefix}{name} is not {expected}")
            del record[name]
        elif isinstance(value, (dict, list)) and _depth(value) > _DEEPEST:
            problems.append(f"{prefix}{name} is nested deeper than {_DEEPEST} levels")
            del record[name]
    return problems


def _has_shape(value: object, expected: str) -> bool:
    """Whether ``value`` is what a field ``expected`` to be that holds (the checks of a count
    and a number are :mod:`memorylab._validation`'s)."""
    try:
        if expected == _COUNT:
            check_int("count", value, 0)
        elif expected in (_NUMBER, _THRESHOLD):
            check_number("number", value, 0.0, strict=expected == _THRESHOLD)
        elif expected == _TIME:
            datetime.fromisoformat(value)  # type: ignore[arg-type]
        elif expected == _TEXT:
            return isinstance(value, str)
        elif expected == _FLAG:
            return isinstance(value, bool)
        elif expected == _MAPPING:
            return isinstance(value, dict)
        elif expected == _STRATEGY:
            return isinstance(value, dict) and isinstance(value.get("name"), str)
    except (InvalidSetting, TypeError, ValueError):
        return False
    return True


def _depth(value: object) -> int:
    """How many levels of lists and objects ``value`` has (walked without recursion: a hand
    edit may nest far deeper than Python's recursion limit)."""
    deepest, todo = 0, [(value, 0)]
    while todo:
        item, level = todo.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, level + 1)
            if deepest > _DEEPEST:
                return deepest
            todo += [(child, level + 1) for child in (item.values() if isinstance(item, dict)
                                                        else item)]  # fmt: skip
    return deepest


def _json_type(value: object) -> str:
    return {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number"
    )


EDIT_ARCHIVE_SUFFIX = "_edit.md"
"""How the name of an archive an edit of the history made ends: memorylab names it
``history_<UTC time>Z[_<n>]_edit.md`` (:func:`memorylab.memory._format.archive_name`), so the
archive itself says what it is, whatever becomes of ``compactions.jsonl``."""


def is_edit_archive(name: str) -> bool:
    """Whether an archive's name says an edit made it (:data:`EDIT_ARCHIVE_SUFFIX`).

    >>> [is_edit_archive(f"history_2026-05-01_10-00-00Z{end}") for end in ("_edit.md", ".md")]
    [True, False]
    """
    return name.endswith(EDIT_ARCHIVE_SUFFIX)


def is_model_call(record: Mapping[str, object]) -> bool:
    """Whether a ``usage.jsonl`` record is a model call: every reader's one rule (calibration,
    cache costs, replays). A record without a ``kind`` is one (the file holds one line per model
    call; ``kind`` tags it, :class:`UsageRecord`'s default), one of another kind is not.

    >>> is_model_call({"input_tokens": 12}), is_model_call({"kind": "embedding"})
    (True, False)
    """
    return record.get("kind", "model_call") == "model_call"


def is_compaction(record: Mapping[str, object]) -> bool:
    """Whether a ``compactions.jsonl`` record is a compaction that succeeded: every reader's
    one rule (the frames, cache costs, calibration, evaluation cases). Not an edit of the
    history (kind ``"edit"``: its archive is the file before the edit), nor a failed compaction
    (an ``error``: nothing was archived). A record without a ``kind`` is a compaction (the
    kind was added later).

    >>> is_compaction({"archive": "history_x.md"}), is_compaction({"kind": "edit"})
    (True, False)
    >>> is_compaction({"error": "timed out"})
    False
    """
    return record.get("kind", "compaction") == "compaction" and not record.get("error")


def recorded_count(value: object) -> int | None:
    """A recorded count (tokens, messages, a call's number) as an ``int``; ``None`` where the
    record holds none: not a real number (a text, a bool, null, pandas' NA), not finite, or
    past what a frame's int64 column holds. Every reader's one rule: a count means the same in
    a frame, a replay and an audit.

    >>> recorded_count(12), recorded_count(12.0), recorded_count("12"), recorded_count(1e308)
    (12, 12, None, None)
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    if isinstance(value, numbers.Integral):
        count = int(value)
        return count if abs(count) <= LARGEST_COUNT else None
    number = float(value)
    if not math.isfinite(number) or abs(number) > LARGEST_COUNT:
        return None
    return int(number)


def edit_archives(records: Iterable[Mapping[str, object]], names: Iterable[str] = ()) -> set[str]:
    """The archives an edit of the history made (``Conversation.update``, ``delete``,
    ``clear``): the file as it was before the edit, kept for recovery. The loaders read no
    message from them (what they hold is in the edited file, changed or removed on purpose)
    and recall indexes none.

    The archive's own word first: each of ``names`` (the archives there are) whose name says so
    (:func:`is_edit_archive`); a ``compactions.jsonl`` that was lost or cut cannot make one
    read. Then, for the archives edits wrote before their names said so, the ``records`` of
    kind ``"edit"``: the names they give.

    >>> edit_archives([], ["history_2026-05-01_10-00-00Z_edit.md", "history_2026-05-01.md"])
    {'history_2026-05-01_10-00-00Z_edit.md'}
    """
    return {name for name in names if is_edit_archive(name)} | {
        str(record["archive"])
        for record in records
        if isinstance(record, Mapping) and record.get("kind") == "edit" and record.get("archive")
    }
