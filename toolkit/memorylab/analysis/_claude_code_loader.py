"""Claude Code's session files (``~/.claude/projects/<project>/<session>.jsonl``) as records
(docs/formats/claude-code.md).

A session file holds one JSON object a line: ``user``, ``assistant`` and ``system`` entries linked
by ``uuid``/``parentUuid`` (a DAG: an edit or a retry branches it; the conversation is the chain
that leads to the last message), and lines that are no message (``summary`` titles,
``file-history-snapshot``, ``queue-operation``). A compaction writes a ``system`` entry of subtype
``compact_boundary`` that starts a new root (``parentUuid`` null, ``logicalParentUuid`` the last
message before it; ``compactMetadata``: ``trigger``, ``preTokens``), followed by a ``user`` entry
marked ``isCompactSummary`` that holds the summary. Each assistant reply records the API's usage
(``message.usage``: input, output, cache read and cache write tokens); a reply of several content
blocks is written as several lines sharing ``message.id``, read as one message and one call.

A compaction may keep the conversation's last messages verbatim: its ``compactMetadata`` names
them (``preservedSegment``: ``headUuid``, ``tailUuid`` and ``anchorUuid``, what the head hangs
from after the compaction; or ``preservedMessages.uuids``). The file holds them once, before the
boundary, and the messages after it chain from the tail; Claude Code relinks the head to the
anchor when it loads the session, and so does :func:`_chain`: they are the compaction's ``kept``.

A subagent (the Task tool's) is a conversation of its own: entries marked ``isSidechain``, in
the session's file (older versions), in ``agent-<id>.jsonl`` beside it, or in
``<session>/subagents/agent-<id>.jsonl`` (newer versions). Each is read as a record of its own,
named ``<session>/<subagent>``, when the session or its project folder is given.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from memorylab.analysis._foreign import RunCompaction, RunMessage, run_record, tool_call_text
from memorylab.analysis._record import AgentRecord
from memorylab.analysis._sources import Note, file_head
from memorylab.errors import MemoryFormatError, StoreError
from memorylab.memory._records import UsageRecord

_HEAD_BYTES = 8192
"""How much of a file ``handles`` looks at (a first ``summary`` line can be long)."""
_TYPES = ("user", "assistant", "system", "summary", "file-history-snapshot", "queue-operation")
_TYPE = re.compile(rb'"type"\s*:\s*"(?:' + b"|".join(t.encode() for t in _TYPES) + rb')"')
_SESSION = re.compile(rb'"sessionId"\s*:\s*"')
_NOT_MESSAGES = frozenset({"file-history-snapshot", "queue-operation"})
"""The types of the lines that are no message (msgspec skips their fields unread: the snapshots
are a large part of a file's bytes)."""
_FOLDER_LOOK = 3
"""How many of a folder's ``.jsonl`` files ``handles`` looks at."""
_AGENT_PREFIX = "agent-"
"""How a subagent's file is named (``agent-<id>.jsonl``), beside its session or below it."""


def _is_session(path: Path) -> bool:
    """Whether the first bytes of ``path`` are Claude Code's: a ``sessionId`` and an entry type
    of its own (a memorylab transcript opens with ``{"type": "meta"}`` and has no session)."""
    if path.suffix != ".jsonl" or not path.is_file():
        return False
    head = file_head(path, _HEAD_BYTES)
    return _SESSION.search(head) is not None and _TYPE.search(head) is not None


class ClaudeCodeSessions:
    """A Claude Code session file, or a project folder of them (one record per session)."""

    name = "claude-code"

    def handles(self, path: Path) -> bool:
        if path.is_dir():
            files = sorted(path.glob("*.jsonl"))[:_FOLDER_LOOK]
            return any(_is_session(f) for f in files)
        return _is_session(path)

    def load(self, path: Path) -> list[AgentRecord]:
        if not path.is_dir():
            return read_sessions(path)
        files = [f for f in sorted(path.glob("*.jsonl")) if _is_session(f)]
        sessions = [f for f in files if not f.name.startswith(_AGENT_PREFIX)]
        records = []
        claimed: set[Path] = set()  # the subagents' files read with their session
        beside = _agents_beside(path)
        for session in sessions:
            records += read_sessions(session, claimed=claimed, beside=beside)
        # a subagent's file whose session is not in the folder: a record all the same
        records += [r for f in files if f not in claimed and f not in sessions
                    for r in read_sessions(f)]  # fmt: skip
        return records


_SESSION_ID = re.compile(rb'"sessionId"\s*:\s*"([^"\\]+)"')


def _agents_beside(folder: Path) -> dict[str, list[Path]]:
    """The ``agent-*.jsonl`` files of ``folder`` (older versions' subagents) by the
    ``sessionId`` each names, read once for every session of the folder."""
    found: dict[str, list[Path]] = {}
    for agent_file in sorted(folder.glob(f"{_AGENT_PREFIX}*.jsonl")):
        named = _SESSION_ID.search(file_head(agent_file, _HEAD_BYTES))
        if named is not None:
            found.setdefault(named.group(1).decode(errors="replace"), []).append(agent_file)
    return found


def _subagent_files(
    session: Path, session_id: str | None, beside: Mapping[str, list[Path]] | None = None
) -> list[Path]:
    """The subagents' files of the session ``session``: ``<session>/subagents/agent-*.jsonl``
    (newer versions) and, beside it, the ``agent-*.jsonl`` files that name its ``sessionId``
    (older versions; ``beside``: those of its folder, by session, where already read)."""
    below = sorted((session.parent / session.stem / "subagents").glob(f"{_AGENT_PREFIX}*.jsonl"))
    if session_id is None:
        return below
    if beside is None:
        beside = _agents_beside(session.parent)
    return [*below, *(f for f in beside.get(session_id, []) if f != session)]


def _described(agent_file: Path) -> str:
    """What the ``agent-<id>.meta.json`` beside a subagent's file says of it (newer versions:
    ``agentType``, ``description``), or nothing."""
    try:
        meta = json.loads(agent_file.with_suffix(".meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    if not isinstance(meta, dict):
        return ""
    said = [str(meta[k]) for k in ("agentType", "description") if isinstance(meta.get(k), str)]
    return f" ({': '.join(said)})" if said else ""


# ------------------------------------------------------------------------------ one session
# The lines are decoded by msgspec into the fields below and nothing else: the rest of a line
# (``toolUseResult``'s copy of each tool's output, thinking text and signatures, the working
# directory, ...) is skipped without building a Python object, which is what lets a 100 MB
# session load at a small multiple of reading its bytes (tests/benchmarks/bench_foreign_read.py).
# Every field is ``Any`` but the structure (a message an object, its content a text or a list of
# blocks), so what the loader makes of a field's value stays its own decision, as with dicts. A
# line whose structure is other (a number for a message) is read by the standard library and
# converted by :func:`_entry_of`, so an odd line reads as it did before, never fails the file.


class _Block(msgspec.Struct, gc=False):
    """A content block: text, a tool call (``name``, ``input``), a tool result (``tool_use_id``,
    ``content``), or another kind, named only."""

    type: Any = msgspec.UNSET
    text: Any = msgspec.UNSET
    name: Any = None
    input: Any = None
    tool_use_id: Any = None
    content: str | list[_Block] | None = None


class _Usage(msgspec.Struct, gc=False):
    """A reply's usage: the API's four counts (``service_tier`` and the rest skipped)."""

    input_tokens: Any = None
    cache_read_input_tokens: Any = None
    cache_creation_input_tokens: Any = None
    output_tokens: Any = None


class _Message(msgspec.Struct, gc=False):
    id: Any = None
    model: Any = None
    content: str | list[_Block] | None = None
    usage: _Usage | None = None


class _Entry(msgspec.Struct, gc=False):
    """A line of the session, with only the fields the loader reads (named as the file names
    them). ``parentUuid`` missing (``UNSET``) is no DAG at all: the file is read in order."""

    type: Any = None
    uuid: Any = None
    parentUuid: Any = msgspec.UNSET
    logicalParentUuid: Any = None
    isSidechain: Any = None
    agentId: Any = None
    isCompactSummary: Any = None
    timestamp: Any = None
    sessionId: Any = None
    subtype: Any = None
    compactMetadata: Any = None
    message: _Message | None = None


_DECODER = msgspec.json.Decoder(_Entry)


def _blocks_of(content: Any) -> Any:
    """A content value of the standard library's reading as :data:`_DECODER` gives it: a
    list's objects as blocks, anything else as it is."""
    if not isinstance(content, list):
        return content
    return [_block_of(item) if isinstance(item, dict) else item for item in content]


def _block_of(block: dict[str, Any]) -> _Block:
    return _Block(
        type=block.get("type", msgspec.UNSET),
        text=block.get("text", msgspec.UNSET),
        name=block.get("name"),
        input=block.get("input"),
        tool_use_id=block.get("tool_use_id"),
        content=_blocks_of(block.get("content")),
    )


def _usage_of(usage: Any) -> _Usage | None:
    if not isinstance(usage, dict):
        return None  # no counts to read
    return _Usage(
        input_tokens=usage.get("input_tokens"),
        cache_read_input_tokens=usage.get("cache_read_input_tokens"),
        cache_creation_input_tokens=usage.get("cache_creation_input_tokens"),
        output_tokens=usage.get("output_tokens"),
    )


def _entry_of(line: dict[str, Any]) -> _Entry:
    """A line read by the standard library (one whose structure msgspec's types refuse) as an
    :class:`_Entry`; a message that is no object is none (it holds nothing to read)."""
    message = line.get("message")
    return _Entry(
        type=line.get("type"),
        uuid=line.get("uuid"),
        parentUuid=line.get("parentUuid", msgspec.UNSET),
        logicalParentUuid=line.get("logicalParentUuid"),
        isSidechain=line.get("isSidechain"),
        agentId=line.get("agentId"),
        isCompactSummary=line.get("isCompactSummary"),
        timestamp=line.get("timestamp"),
        sessionId=line.get("sessionId"),
        subtype=line.get("subtype"),
        compactMetadata=line.get("compactMetadata"),
        message=None
        if not isinstance(message, dict)
        else _Message(
            id=message.get("id"),
            model=message.get("model"),
            content=_blocks_of(message.get("content")),
            usage=_usage_of(message.get("usage")),
        ),
    )


def _entries(path: Path, notes: list[Note]) -> list[_Entry]:
    """The file's lines that are entries (objects), in file order, but those that are no
    message; a line that is not JSON is a note (a session being written ends with a cut line).

    The complete lines are decoded in one call (msgspec reads JSON Lines as values separated by
    whitespace: a blank line is none, a line of two values two); a file that call refuses is
    read line by line, each line that msgspec's types refuse by the standard library."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise StoreError(
            f"cannot read the Claude Code session {path}: {exc.strerror or exc}; check that it "
            "exists and is readable"
        ) from exc
    whole = data.rfind(b"\n") + 1  # the bytes after the last newline: a line still written
    try:
        entries = _DECODER.decode_lines(memoryview(data)[:whole])
    except msgspec.DecodeError:
        entries = _line_by_line(path, data, 1, notes)
    else:
        if data[whole:].strip():
            entries += _line_by_line(path, data[whole:], data.count(b"\n", 0, whole) + 1, notes)
    return [e for e in entries if not (isinstance(e.type, str) and e.type in _NOT_MESSAGES)]


def _line_by_line(path: Path, data: bytes, first: int, notes: list[Note]) -> list[_Entry]:
    """The lines of ``data`` (the first numbered ``first``) decoded one by one: what msgspec's
    types refuse read by the standard library (another structure, ``NaN``), what is not JSON a
    note, what is no object skipped."""
    entries = []
    for number, line in enumerate(data.split(b"\n"), first):
        if not line or line.isspace():
            continue
        try:
            entries.append(_DECODER.decode(line))
            continue
        except msgspec.DecodeError:
            pass
        try:
            entry = json.loads(line)
        except ValueError:
            notes.append(Note(str(path), number, "json", "not JSON (cut off?); skipped", True))
            continue
        if isinstance(entry, dict):
            entries.append(_entry_of(entry))
    return entries


_BOUNDARY = "compact_boundary"


@dataclass(frozen=True, slots=True)
class _Preserved:
    """What a compaction kept verbatim: ``uuids``, hung after it from ``anchor`` by ``head``."""

    boundary: str
    head: str
    anchor: str
    uuids: frozenset[str]


def _preserved(
    boundary: _Entry, by_uuid: Mapping[str, _Entry], summary: _Entry | None
) -> _Preserved | None:
    """The messages ``boundary``'s compaction kept (``compactMetadata.preservedSegment``: the
    chain from ``tailUuid`` up to ``headUuid``; or ``preservedMessages.uuids``), ``None``:
    none recorded, or not in the file."""
    meta = boundary.compactMetadata
    if not isinstance(meta, dict) or not isinstance(boundary.uuid, str):
        return None
    fallback = summary.uuid if summary is not None and isinstance(summary.uuid, str) else None
    segment, listed = meta.get("preservedSegment"), meta.get("preservedMessages")
    uuids: set[str] = set()
    head = anchor = None
    if isinstance(segment, dict):
        head, tail, anchor = (segment.get(k) for k in ("headUuid", "tailUuid", "anchorUuid"))
        entry = by_uuid.get(tail) if isinstance(tail, str) else None
        while entry is not None and isinstance(entry.uuid, str) and entry.uuid not in uuids:
            uuids.add(entry.uuid)
            if entry.uuid == head:
                break
            entry = by_uuid.get(entry.parentUuid) if isinstance(entry.parentUuid, str) else None
        if head not in uuids:
            return None  # the segment is not all in the file
    elif isinstance(listed, dict) and isinstance(listed.get("uuids"), list):
        uuids = {u for u in listed["uuids"] if isinstance(u, str) and u in by_uuid}
        heads = [u for u in uuids if by_uuid[u].parentUuid not in uuids]
        head = heads[0] if len(heads) == 1 else None
        anchor = listed.get("anchorUuid")
    if not isinstance(head, str) or not uuids:
        return None
    if not isinstance(anchor, str) or anchor not in by_uuid or anchor in uuids:
        anchor = fallback or boundary.uuid
    return _Preserved(boundary.uuid, head, anchor, frozenset(uuids))


def _chain(
    entries: Sequence[_Entry], path: Path, notes: list[Note], *, sidechain: bool = False
) -> tuple[list[_Entry], list[bool]]:
    """The entries of the conversation, oldest first: the chain of ``parentUuid`` (through each
    compaction's ``logicalParentUuid``, and from the head of what it kept to its anchor) that
    leads to the last message; without uuids, the messages in order. With it, whether each entry
    is a message a compaction kept (read before it already). ``sidechain``: the chain of a
    subagent's entries, else of the session's own."""
    messages = [
        e
        for e in entries
        if e.type in ("user", "assistant", "system") and bool(e.isSidechain) == sidechain
    ]
    if not messages:
        return [], []
    if all(e.parentUuid is msgspec.UNSET for e in messages):
        notes.append(
            Note(str(path), 0, "order", "no parentUuid: the messages are read in file order")
        )
        return messages, [False] * len(messages)
    by_uuid = {e.uuid: e for e in messages if isinstance(e.uuid, str)}
    summaries = {e.parentUuid: e for e in messages if e.isCompactSummary}
    relinks: dict[str, _Preserved] = {}
    for e in [e for e in messages if e.subtype == _BOUNDARY]:
        if kept := _preserved(e, by_uuid, summaries.get(e.uuid)):
            relinks[kept.head] = kept
    last = next(e for e in reversed(messages) if e.type in ("user", "assistant"))
    chain: list[_Entry] = []
    crossed: set[str] = set()  # the boundaries walked past: their relinks are behind
    seen: set[str] = set()
    entry: _Entry | None = last
    while entry is not None:
        if entry.subtype == _BOUNDARY and entry.uuid in crossed:
            break  # a loop through compactions: a damaged file
        chain.append(entry)
        seen.add(str(entry.uuid))
        if entry.subtype == _BOUNDARY:
            crossed.add(str(entry.uuid))
            seen = {str(entry.uuid)}  # the history before it holds the kept messages again
        kept = relinks.get(str(entry.uuid))
        if kept is not None and kept.boundary not in crossed:
            parent: Any = kept.anchor
        else:
            parent = entry.parentUuid or entry.logicalParentUuid
        if parent is None or parent in seen:
            break
        entry = by_uuid.get(parent)
        if entry is None:
            message = (
                f"the chain stops at {parent!r}, which the file does not hold (a session "
                "resumed from another file?)"
            )
            notes.append(Note(str(path), 0, "chain", message))
        elif entry.subtype == _BOUNDARY and chain[-1] is not summaries.get(parent, chain[-1]):
            chain.append(summaries[parent])  # kept messages hung from the boundary itself
    chain.reverse()
    if not relinks:  # nothing kept: each message once on the chain
        copies = [False] * len(chain)
        left = sum(1 for e in messages if e.type in ("user", "assistant")) - sum(
            1 for e in chain if e.type in ("user", "assistant")
        )
    else:
        copies = []
        keeping: frozenset[str] = frozenset()
        for e in chain:
            if e.subtype == _BOUNDARY:
                found = [p for p in relinks.values() if p.boundary == e.uuid]
                keeping = found[0].uuids if found else frozenset()
            elif not e.isCompactSummary and e.uuid not in keeping:
                keeping = frozenset()  # the kept messages are the first after the summary
            copies.append(bool(keeping) and e.uuid in keeping)
        on_chain = {id(e) for e in chain}
        left = sum(1 for e in messages if e.type in ("user", "assistant") and id(e) not in on_chain)
    if left:
        notes.append(Note(str(path), 0, "branches", f"{left} messages off the conversation's chain "
                          "(edited or retried branches) left out"))  # fmt: skip
    return chain, copies


def _time(entry: _Entry) -> datetime | None:
    value = entry.timestamp
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _text(content: Any) -> str:
    """A tool result's or a message's content as text (text blocks joined, others named)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return "" if content is None else json.dumps(content, ensure_ascii=False)
    parts = []
    for block in content:
        if not isinstance(block, _Block):
            parts.append(str(block))
        elif block.type == "text":
            parts.append("" if block.text is msgspec.UNSET else str(block.text))
        elif block.type == "tool_result":
            parts.append(_text(block.content))
        else:  # an image, a document: named only
            parts.append(f"[{'block' if block.type is msgspec.UNSET else block.type}]")
    return "\n".join(parts)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class _Reader:
    """One session's chain read into messages, compactions and calls."""

    def __init__(self, path: Path, notes: list[Note]) -> None:
        self.path = path
        self.notes = notes
        self.messages: list[RunMessage] = []
        self.compactions: list[RunCompaction] = []
        # by message.id: the last line's time, model and usage (a reply's lines repeat them)
        self.calls: dict[str, tuple[datetime, str, _Usage]] = {}
        self.model: str | None = None  # the last reply's
        self.thinking = 0
        self.untimed = 0
        self.boundary: _Entry | None = None  # a compaction waiting for its summary
        self.reply: tuple[str, list[str], datetime] | None = None  # an assistant reply's lines
        self.copies: int | None = None  # where the messages a compaction kept start

    def read(self, chain: Iterable[_Entry], copies: Iterable[bool]) -> None:
        for entry, copy in zip(chain, copies, strict=True):
            when = _time(entry)
            if when is None:
                self.untimed += 1
                continue
            if copy and self.copies is None:
                self._start_copies()
            elif not copy and self.copies is not None:
                self._end_copies()
            kind = entry.type
            if kind != "assistant" and self.reply is not None:
                self._end_reply()
            if kind == "system":
                if entry.subtype == "compact_boundary":
                    self._end_boundary(None)
                    self.boundary = entry
            elif kind == "user":
                self._user(entry, when)
            elif kind == "assistant":
                self._assistant(entry, when)
        self._end_copies()
        self._end_reply()
        self._end_boundary(None)

    def _start_copies(self) -> None:
        self._end_reply()
        self._end_boundary(None)
        self.copies = len(self.messages)

    def _end_copies(self) -> None:
        """The messages read since :meth:`_start_copies` are those the last compaction kept:
        taken out again (the history holds them already) and counted as its ``kept``."""
        if self.copies is None:
            return
        self._end_reply()
        start, self.copies = self.copies, None
        copied = self.messages[start:]
        at = self.compactions[-1].at if self.compactions else -1
        history = self.messages[:at][len(self.messages[:at]) - len(copied) :]
        if (
            not copied
            or at != start
            or [(m.role, m.content) for m in copied] != [(m.role, m.content) for m in history]
        ):
            self.notes.append(Note(str(self.path), 0, "kept", f"{len(copied)} messages a "
                                   "compaction names as kept are not the last before it: read "
                                   "as new ones"))  # fmt: skip
            return
        del self.messages[start:]
        self.compactions[-1] = dataclasses.replace(self.compactions[-1], kept=len(copied))

    def _end_boundary(self, summary: str | None) -> None:
        entry, self.boundary = self.boundary, None
        if entry is None:
            return
        meta = entry.compactMetadata
        meta = meta if isinstance(meta, dict) else {}
        trigger = meta.get("trigger")
        self.compactions.append(
            RunCompaction(
                at=len(self.messages),
                time=_time(entry) or self.messages[-1].timestamp,
                summary=summary,
                tokens_before=_count(meta.get("preTokens")),
                tokens_after=_count(meta.get("postTokens")),  # newer versions record it
                trigger=trigger if isinstance(trigger, str) else None,
            )
        )

    def _user(self, entry: _Entry, when: datetime) -> None:
        content = None if entry.message is None else entry.message.content
        if entry.isCompactSummary:
            if self.boundary is None:  # a summary without its boundary (older versions)
                self.boundary = _Entry(timestamp=entry.timestamp)
            self._end_boundary(_text(content))
            return
        self._end_boundary(None)
        if isinstance(content, list):
            texts = []
            for block in content:
                if isinstance(block, _Block) and block.type == "tool_result":
                    call = block.tool_use_id
                    answered = call if isinstance(call, str) else None
                    text = _text(block.content)
                    self.messages.append(RunMessage("tool", text, when, tool_call_id=answered))
                else:
                    texts.append(block)
            if texts:
                self.messages.append(RunMessage("user", _text(texts), when))
        else:
            self.messages.append(RunMessage("user", _text(content), when))

    def _assistant(self, entry: _Entry, when: datetime) -> None:
        self._end_boundary(None)
        message = _Message() if entry.message is None else entry.message
        ident = str(message.id or entry.uuid or len(self.messages))
        if self.reply is not None and self.reply[0] != ident:
            self._end_reply()
        if self.reply is None:  # the reply's first line: its id, its parts so far, its time
            self.reply = (ident, [], when)
        parts = self.reply[1]
        content = message.content
        blocks: list[Any] = content if isinstance(content, list) else [content]
        for block in blocks:
            if isinstance(block, str):
                parts.append(block)
            elif not isinstance(block, _Block):
                continue
            elif block.type == "text":
                parts.append("" if block.text is msgspec.UNSET else str(block.text))
            elif block.type == "tool_use":
                parts.append(tool_call_text(block.name, block.input))
            elif block.type in ("thinking", "redacted_thinking"):
                self.thinking += 1  # not in the next request's context: left out
        model = message.model
        if isinstance(model, str) and model != "<synthetic>":
            self.model = model
            if message.usage is not None:  # at the reply's time (its first line's)
                self.calls[ident] = (self.reply[2], model, message.usage)

    def usage_records(self, agent: str) -> list[UsageRecord]:
        """The calls as one process: numbered from the session's first message."""
        first = self.messages[0].timestamp.isoformat() if self.messages else None
        records = []
        for number, (when, model, usage) in enumerate(self.calls.values(), 1):
            fresh = _count(usage.input_tokens)
            read = _count(usage.cache_read_input_tokens)
            written = _count(usage.cache_creation_input_tokens)
            records.append(
                UsageRecord(
                    time=when,
                    model=model,
                    input_tokens=None if fresh is None else fresh + (read or 0) + (written or 0),
                    output_tokens=_count(usage.output_tokens),
                    cached_tokens=read,
                    cache_write_tokens=written,
                    agent=agent,
                    session_start=first,
                    call=number,
                )
            )
        return records

    def _end_reply(self) -> None:
        if self.reply is None:
            return
        _, parts, when = self.reply
        self.reply = None
        self.messages.append(RunMessage("assistant", "\n".join(p for p in parts if p), when))


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while a session is read, then as it was: the
    reading makes a container or two a line and no cycle, so the passes its allocations set off
    walk the whole heap for nothing (an eighth of a 100 MB session's load)."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def read_session(path: Path) -> AgentRecord:
    """The record of one Claude Code session file's own conversation (the module docstring);
    a subagent's file (all sidechain) as the subagent's."""
    notes: list[Note] = []
    with _collector_paused():
        entries = _entries_of_session(path, notes)
        own = any(e.type in ("user", "assistant") and not e.isSidechain for e in entries)
        return _record(path, entries, notes, sidechain=not own)


def read_sessions(
    path: Path,
    *,
    claimed: set[Path] | None = None,
    beside: Mapping[str, list[Path]] | None = None,
) -> list[AgentRecord]:
    """The records of a session file: its own conversation, then each subagent's (its
    sidechains in the file, and the subagents' files of :func:`_subagent_files`, each added to
    ``claimed``; ``beside``: :func:`_agents_beside` of its folder, where read already), named
    ``<session>/<subagent>``. A subagent's file given alone is its record."""
    with _collector_paused():
        notes: list[Note] = []
        entries = _entries_of_session(path, notes)
        own = any(e.type in ("user", "assistant") and not e.isSidechain for e in entries)
        if not own:  # a subagent's file
            return [_record(path, entries, notes, sidechain=True)]
        session = _session_id(entries) or path.stem
        subagents: list[AgentRecord] = []
        said: list[str] = []
        groups = _sidechains(entries)
        for name, group in groups.items():
            subagents.append(_record(path, group, [], sidechain=True,
                                     agent=f"{session}/{name}", key=name))  # fmt: skip
        for agent_file in _subagent_files(path, _session_id(entries), beside):
            if claimed is not None:
                claimed.add(agent_file)
            try:
                subagents.append(
                    _record(
                        agent_file,
                        _entries_of_session(agent_file, []),
                        [],
                        sidechain=True,
                        agent=f"{session}/{agent_file.stem}",
                    )
                )
            except (StoreError, MemoryFormatError) as exc:
                said.append(f"subagent {agent_file.name} not read: {exc}")  # fmt: skip
                continue
            said.append(f"subagent {agent_file.stem}{_described(agent_file)} read as "
                        f"{session}/{agent_file.stem} from {agent_file}")  # fmt: skip
        if groups:
            said.append(
                f"{len(groups)} subagent(s) in this file's sidechain entries read as "
                f"records of their own: {', '.join(f'{session}/{n}' for n in groups)}"
            )
        return [_record(path, entries, notes, sidechain=False, extra=said), *subagents]


def _session_id(entries: Sequence[_Entry]) -> str | None:
    return next((e.sessionId for e in entries if isinstance(e.sessionId, str)), None)


def _sidechains(entries: Sequence[_Entry]) -> dict[str, list[_Entry]]:
    """A session file's sidechain entries (a subagent's, as older versions wrote them there),
    by subagent: its ``agentId``, else the uuid of its chain's first entry."""
    side = [e for e in entries if e.isSidechain and e.type in ("user", "assistant", "system")]
    if not side:
        return {}
    by_uuid = {e.uuid: e for e in side if isinstance(e.uuid, str)}
    groups: dict[str, list[_Entry]] = {}
    for entry in side:
        if isinstance(entry.agentId, str):
            name = f"{_AGENT_PREFIX}{entry.agentId}"
        else:
            root, seen = entry, set()
            while isinstance(root.parentUuid, str) and root.parentUuid in by_uuid:
                if root.parentUuid in seen:
                    break
                seen.add(root.parentUuid)
                root = by_uuid[root.parentUuid]
            name = f"sidechain-{root.uuid}"
        groups.setdefault(name, []).append(entry)
    return groups


def _entries_of_session(path: Path, notes: list[Note]) -> list[_Entry]:
    entries = _entries(path, notes)
    if not any(e.type in ("user", "assistant") for e in entries) and not any(
        isinstance(e.sessionId, str) for e in entries
    ):
        raise MemoryFormatError(
            f"{path} holds no Claude Code message (no user or assistant line with a sessionId); "
            "give a session file from ~/.claude/projects/<project>/"
        )
    return entries


def _record(
    path: Path,
    entries: Sequence[_Entry],
    notes: list[Note],
    *,
    sidechain: bool,
    agent: str | None = None,
    key: str | None = None,
    extra: Sequence[str] = (),
) -> AgentRecord:
    """The record of one conversation of ``entries``: the session's own, or a subagent's."""
    reader = _Reader(path, notes)
    reader.read(*_chain(entries, path, notes, sidechain=sidechain))
    session = _session_id(entries)
    if agent is None:  # a subagent's file read alone is named as with its session
        agent = f"{session or path.parent.parent.name}/{path.stem}" if sidechain else None
    name = agent or session or path.stem
    calls = reader.usage_records(name)
    said = [
        "context_length and threshold: not recorded by Claude Code (its window depends on the "
        "model and plan; give context_length= to growth and replays)",
        "estimated tokens per call: not recorded (the calls hold the API's counts only); the "
        "summary call's usage is not recorded",
        *extra,
    ]
    if any(c.tokens_after is None for c in reader.compactions):
        said.append("tokens after a compaction: not recorded by this version (postTokens)")
    if reader.thinking:
        said.append(f"{reader.thinking} thinking blocks left out (not sent back in later requests)")
    if reader.untimed:
        said.append(f"{reader.untimed} entries without a timestamp left out")
    model = reader.model
    return run_record(
        path,
        reader.messages,
        format="claude-code",
        agent=name,
        compactions=reader.compactions,
        calls=calls,
        settings={"model": model} if model else None,
        notes=[*notes, *said],
        key=key,
    )
