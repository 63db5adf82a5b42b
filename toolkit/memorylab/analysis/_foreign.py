"""Another framework's run as an :class:`~memorylab.analysis._record.AgentRecord`: the one
builder every foreign format's loader calls (:func:`run_record`), so that the frames, growth,
replays, sweeps, the audits and the report read a Claude Code session, a deepagents thread, an
OpenAI Agents session or an inspect_ai sample as they read a MEMORY.md folder.

A loader reads its format into :class:`RunMessage` values (the flat history as the framework
recorded it, summaries left out) and :class:`RunCompaction` values (where each compaction fired
in that history, what it kept and what it recorded), and :func:`run_record` lays them out as
memorylab's own files would be: each compaction a boundary between segments, the messages before
it an ``"archive"`` segment, the summary (marked ``[Compressed Memory Summary]``) the first entry
of the next segment, followed by the messages the compaction kept verbatim (copies, left out of
the frames as memorylab's rule 6 leaves out a message an earlier file holds) and those added
after it. Each compaction is also a record in ``compactions.jsonl``'s schema naming its archive
segment, holding only what the format recorded (``extra["recorded"]`` lists those fields); what
a format does not record is left out and said so in a note, never guessed.

The segments have no files of their own: each is named after the file read, the archives with a
fragment (``session.jsonl#1`` holds the history up to the first compaction; with a ``key``,
``log.eval#sample-3/1``), the last by the file itself (``log.eval#sample-3`` with a key). A
frame's ``file`` column carries those names; :func:`foreign_record` finds the record a frame came
from, so ``token_growth(memory_df(path))`` works as it does for memorylab's files.
"""

from __future__ import annotations

import json
import os
import sqlite3
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from memorylab.analysis._record import AgentRecord
from memorylab.analysis._sources import Note, Segment
from memorylab.errors import InvalidSetting
from memorylab.memory import _format as fmt
from memorylab.memory._records import SUMMARY_PREFIX, UsageRecord

NOT_RECORDED = "not-recorded"
"""The kind of a note that says what a format does not record (left out, never guessed)."""

ROLES = ("user", "assistant", "tool", "system")
"""The roles of a :class:`RunMessage`: every format's roles are mapped to these."""

_SETTINGS = ("context_length", "threshold", "model")
"""The run settings a format may record (:func:`run_record`'s ``settings``)."""


@dataclass(frozen=True, slots=True)
class RunMessage:
    """One message of another framework's run, as the framework recorded it.

    ``role``: one of :data:`ROLES`; ``content``: its text (tool calls and structured content as
    the loader renders them); ``timestamp``: when it was recorded, timezone-aware (a format that
    keeps no time gives the file's time and says so in a note; a naive one is local time).
    ``tool_call_id`` and ``name``: the tool call a ``tool`` message answers, and the tool's (or
    the speaker's) name, where recorded (memorylab's files keep neither: the frames do not show
    them, a conversion back to the format does)."""

    role: str
    content: str
    timestamp: datetime
    tool_call_id: str | None = None
    name: str | None = None


@dataclass(frozen=True, slots=True)
class RunCompaction:
    """One compaction another framework recorded.

    ``at``: ``messages[:at]`` of the run's messages (:func:`run_record`) were the history when it
    fired; ``kept``: how many of the last of them stayed verbatim after it; ``summary``: the text
    that replaced the rest (``None``: the format does not keep it). ``time``: when it happened.
    ``tokens_before``/``tokens_after``: the context's tokens as the framework recorded them
    (``None``: not recorded; never estimated here). ``trigger``: what the framework says fired it
    (Claude Code's ``"auto"`` or ``"manual"``), where recorded."""

    at: int
    time: datetime
    summary: str | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    kept: int = 0
    trigger: str | None = None
    summary_message_chars: int | None = None
    """How many characters the message that carried the summary into the framework's context
    had, its wrapper included (deepagents' "You are in the middle of a conversation ..."), where
    the format keeps that message: a replay at the recorded settings counts it as the framework
    did (:func:`memorylab.analysis.replay_validation`)."""


@contextmanager
def read_only_database(path: Path) -> Iterator[sqlite3.Connection]:
    """A framework's SQLite database opened read-only, writing nothing beside it. Frameworks write
    in WAL mode: while a ``-wal`` file beside the database holds recent rows (the framework has it
    open), it is read through SQLite's read-only mode, which sees them; otherwise the file is
    opened as immutable, which creates no ``-shm`` or ``-wal`` file next to the user's (a
    read-only open would, and a bundled sample's folder may not be writable)."""
    live = path.with_name(path.name + "-wal").exists()
    uri = f"{path.resolve().as_uri()}?{'mode=ro' if live else 'immutable=1'}"
    with closing(sqlite3.connect(uri, uri=True)) as connection:
        yield connection


def tool_call_text(name: object, arguments: object) -> str:
    """A tool call as every foreign loader shows it in its assistant message's content, after
    the message's text: ``[tool call <name> <arguments as JSON>]`` (what the request carried of
    it, so the frames count its tokens; one rendering for every format)."""
    shown = json.dumps(arguments, sort_keys=True, ensure_ascii=False, default=str)
    return f"[tool call {name} {shown}]"


def segment_name(path: Path, number: int | None, key: str | None = None) -> Path:
    """The name of a foreign run's segment: ``number`` (from 1) the history up to that
    compaction, ``None`` the last (the history after the last compaction, or the whole run)."""
    if key is None:
        return path if number is None else Path(f"{path}#{number}")
    return Path(f"{path}#{key}" if number is None else f"{path}#{key}/{number}")


def run_record(
    path: str | os.PathLike[str],
    messages: Sequence[RunMessage],
    *,
    format: str,
    agent: str | None = None,
    compactions: Iterable[RunCompaction] = (),
    calls: Sequence[UsageRecord] = (),
    settings: Mapping[str, Any] | None = None,
    notes: Iterable[str | Note] = (),
    key: str | None = None,
) -> AgentRecord:
    """The record of one run of another framework, read from ``path`` (the module docstring).

    ``messages``: the run's history in order, summaries left out; ``compactions``: where it was
    compacted (in order; ``at`` never decreasing, ``kept`` at most ``at``); ``calls``: the
    provider-reported usage of its model calls (:class:`UsageRecord`: ``input_tokens``,
    ``output_tokens``, ``cached_tokens``, ``cache_write_tokens`` where reported); ``settings``:
    what the run recorded of ``context_length``, ``threshold`` (a fraction of the window, or a
    count of tokens) and ``model``, given to each compaction record, where the readers look for
    them (the model as ``extra["token_model"]``: its tokenizer counts the messages, its prices
    the costs); ``notes``: what the format does not record or what reading it found (a text is
    a :data:`NOT_RECORDED` note on ``path``). ``format``: the loader's name; ``agent``: default,
    the file's name without its extension; ``key``: what tells this run apart from the file's
    others (an eval log's sample), carried by its segments' names."""
    path = Path(path)
    name = agent if agent is not None else path.stem
    given = dict(settings or {})
    unknown = set(given) - set(_SETTINGS)
    if unknown:
        raise InvalidSetting(
            f"run_record: settings holds {', '.join(sorted(unknown))}; it takes "
            f"{', '.join(_SETTINGS)}"
        )
    for message in messages:
        if message.role not in ROLES:
            raise InvalidSetting(
                f"run_record: a message of {path} has the role {message.role!r}; a loader maps "
                f"its format's roles to {', '.join(ROLES)}"
            )
    ordered = list(compactions)
    _check_compactions(path, ordered, len(messages))
    segments: list[Segment] = []
    records: list[dict[str, Any]] = []
    start = 0
    carried: Sequence[RunMessage] = ()
    opening: RunMessage | None = None
    for number, compaction in enumerate(ordered, 1):
        archive = segment_name(path, number, key)
        own = messages[start : compaction.at]
        segments.append(_segment(archive, "archive", name, opening, carried, own))
        records.append(_compaction_record(name, archive.name, compaction, len(carried) + len(own),
                                          given, format))  # fmt: skip
        history = [*carried, *own]
        carried = history[len(history) - compaction.kept :] if compaction.kept else ()
        opening = (
            None
            if compaction.summary is None
            else RunMessage("system", f"{SUMMARY_PREFIX} {compaction.summary}", compaction.time)
        )
        start = compaction.at
    own = messages[start:]
    segments.append(_segment(segment_name(path, None, key), "memory", name, opening, carried, own))
    found = [
        note if isinstance(note, Note) else Note(str(path), 0, NOT_RECORDED, note) for note in notes
    ]
    record = AgentRecord(
        agent=name,
        workspace=path.parent,
        folder=path.parent,
        segments=tuple(segments),
        records=tuple(records),
        calls=tuple(calls),
        notes=tuple(found),
        format=format,
        whole_folder=False,
        stamp=_identity(path),
    )
    _keep(record)
    return record


def _check_compactions(path: Path, compactions: Sequence[RunCompaction], count: int) -> None:
    """Each compaction fired within the history, after the one before it, keeping no more than
    the history held: a loader's mistake, said before any reader is misled by it."""
    before = 0
    for number, compaction in enumerate(compactions, 1):
        if not before <= compaction.at <= count or not 0 <= compaction.kept <= compaction.at:
            raise InvalidSetting(
                f"run_record: compaction {number} of {path} fires at message {compaction.at} "
                f"keeping {compaction.kept}; it must fire between message {before} (the one "
                f"before it) and {count} (the run's last) and keep at most what it held"
            )
        before = compaction.at


def _segment(
    path: Path,
    kind: str,
    agent: str,
    opening: RunMessage | None,
    carried: Sequence[RunMessage],
    own: Sequence[RunMessage],
) -> Segment:
    """One segment as memorylab's file would hold it: the summary, the messages the compaction
    kept (copies: ``repeated``, read from the segment before), then its own; as the parser's
    columns (no :class:`~memorylab.memory._records.Message` made: a long session makes none)."""
    head = () if opening is None else (opening,)
    blocks = [*head, *carried, *own]
    columns = fmt.Blocks(
        [m.role for m in blocks], [m.content for m in blocks], [m.timestamp for m in blocks]
    )
    created = blocks[0].timestamp if blocks else None
    repeated = frozenset(range(len(head), len(head) + len(carried)))
    return Segment(path, kind, fmt.ParsedFile(agent, created, columns), repeated)


def _compaction_record(
    agent: str,
    archive: str,
    compaction: RunCompaction,
    archived: int,
    settings: Mapping[str, Any],
    format: str,
) -> dict[str, Any]:
    """A compaction in ``compactions.jsonl``'s schema, with only what was recorded."""
    recorded = [
        name
        for name in ("summary", "tokens_before", "tokens_after", "trigger")
        if getattr(compaction, name) is not None
    ]
    record: dict[str, Any] = {
        "agent": agent,
        "archive": archive,
        "kind": "compaction",
        "time": fmt.format_timestamp(compaction.time),
        "messages_archived": archived,
    }
    if compaction.summary is not None:
        record["summary_chars"] = len(compaction.summary)
    for name in ("tokens_before", "tokens_after"):
        if getattr(compaction, name) is not None:
            record[name] = getattr(compaction, name)
    if settings.get("context_length") is not None:
        record["context_length"] = settings["context_length"]
    threshold = settings.get("threshold")
    if isinstance(threshold, int | float) and not isinstance(threshold, bool):
        record["threshold"] = threshold  # a fraction of the window, or a count of tokens (int)
    extra: dict[str, Any] = {"format": format, "recorded": recorded, "kept": compaction.kept}
    if compaction.trigger is not None:  # not "trigger": that field is memorylab's Trigger
        extra["fired_by"] = compaction.trigger
    if compaction.summary_message_chars is not None:
        extra["summary_message_chars"] = compaction.summary_message_chars
    if settings.get("model") is not None:  # the run's model: its tokenizer and prices
        extra["token_model"] = settings["model"]
    record["extra"] = extra
    return record


# --------------------------------------------------------------------------- a frame's record

_KEPT = 8
"""How many of the foreign records built last are kept strongly (the rest while held)."""
_HELD: weakref.WeakValueDictionary[str, AgentRecord] = weakref.WeakValueDictionary()
_RECENT: OrderedDict[str, AgentRecord] = OrderedDict()


def _identity(path: Path) -> tuple[object, ...] | None:
    """What identifies the file read (``lstat``): a record is reused while it is unchanged."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns)


def _keep(record: AgentRecord) -> None:
    for segment in record.segments:
        _HELD[str(segment.path)] = record
    key = str(record.segments[-1].path)
    _RECENT[key] = record
    _RECENT.move_to_end(key)
    while len(_RECENT) > _KEPT:
        _RECENT.popitem(last=False)


def source_file(name: str) -> str:
    """The file a segment's name (:func:`segment_name`) was read from: the name without its
    fragment, where that is a file and the name is not."""
    head, sep, _ = name.rpartition("#")
    while sep:
        if os.path.isfile(head) and not os.path.lexists(name):
            return head
        head, sep, _ = head.rpartition("#")
    return name


def foreign_record(files: Sequence[str]) -> AgentRecord | None:
    """The foreign record whose segments are ``files`` (a frame's ``file`` column), while the
    file it was read from is unchanged; ``None``: none is kept (the frame is of memorylab's own
    files, or the file changed: its loader reads it again)."""
    records = {id(r): r for f in files if (r := _HELD.get(str(f))) is not None}
    if len(records) != 1:
        return None
    record = next(iter(records.values()))
    if all(str(f) in record._by_path for f in files) and record.stamp == _identity(
        Path(source_file(str(record.segments[-1].path)))
    ):
        return record
    return None


def record_among(records: Sequence[AgentRecord], files: Sequence[str]) -> AgentRecord | None:
    """Of the records a file's loader read, the one whose segments hold ``files``."""
    for record in records:
        if all(record.segment(f) is not None for f in files):
            return record
    return None
