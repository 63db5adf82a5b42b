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
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

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
_NOT_MESSAGES = (b'{"type":"file-history-snapshot"', b'{"type":"queue-operation"')
"""Lines that are no message, skipped before they are parsed (the snapshots are most of a
file's bytes)."""
_FOLDER_LOOK = 3
"""How many of a folder's ``.jsonl`` files ``handles`` looks at."""



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
        if path.is_dir():
            sessions = [f for f in sorted(path.glob("*.jsonl")) if _is_session(f)]
            return [read_session(f) for f in sessions]
        return [read_session(path)]


# ------------------------------------------------------------------------------ one session


def _entries(path: Path, notes: list[Note]) -> list[dict[str, Any]]:
    """The file's lines that are entries (objects), in file order; a line that is not JSON is a
    note (a session being written ends with a cut line)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise StoreError(
            f"cannot read the Claude Code session {path}: {exc.strerror or exc}; check that it "
            "exists and is readable"
        ) from exc
    entries = []
    for number, line in enumerate(data.split(b"\n"), 1):
        if not line.strip() or line.startswith(_NOT_MESSAGES):
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            notes.append(Note(str(path), number, "json", "not JSON (cut off?); skipped", True))
            continue
        if isinstance(entry, dict):
            entry["_line"] = number
            entries.append(entry)
    return entries


def _chain(
    entries: Sequence[dict[str, Any]], path: Path, notes: list[Note]
) -> list[dict[str, Any]]:
    """The entries of the conversation, oldest first: the chain of ``parentUuid`` (through each
    compaction's ``logicalParentUuid``) that leads to the file's last message; without uuids, the
    file's messages in order."""
    messages = [
        e
        for e in entries
        if e.get("type") in ("user", "assistant", "system") and not e.get("isSidechain")
    ]
    if not messages:
        return []
    if not any("parentUuid" in e for e in messages):
        notes.append(
            Note(str(path), 0, "order", "no parentUuid: the messages are read in file order")
        )
        return messages
    by_uuid = {e["uuid"]: e for e in messages if isinstance(e.get("uuid"), str)}
    last = next(e for e in reversed(messages) if e.get("type") in ("user", "assistant"))
    chain: list[dict[str, Any]] = []
    seen: set[str] = set()
    entry: dict[str, Any] | None = last
    while entry is not None:
        chain.append(entry)
        seen.add(str(entry.get("uuid")))
        parent = entry.get("parentUuid") or entry.get("logicalParentUuid")
        if parent is None or parent in seen:
            break
        entry = by_uuid.get(parent)
        if entry is None:
            message = (
                f"the chain stops at {parent!r}, which the file does not hold (a session "
                "resumed from another file?)"
            )
            notes.append(Note(str(path), 0, "chain", message))
    chain.reverse()
    left = sum(1 for e in messages if e.get("type") in ("user", "assistant")) - sum(
        1 for e in chain if e.get("type") in ("user", "assistant")
    )
    if left:
        notes.append(Note(str(path), 0, "branches", f"{left} messages off the conversation's chain "
                          "(edited or retried branches) left out"))  # fmt: skip
    return chain


def _time(entry: Mapping[str, Any]) -> datetime | None:
    value = entry.get("timestamp")
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
        if not isinstance(block, dict):
            parts.append(str(block))
        elif block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_result":
            parts.append(_text(block.get("content")))
        else:
            parts.append(f"[{block.get('type', 'block')}]")  # an image, a document: named only
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
        self.calls: dict[str, dict[str, Any]] = {}  # by message.id: the last line's usage
        self.models: list[str] = []
        self.thinking = 0
        self.untimed = 0
        self.boundary: dict[str, Any] | None = None  # a compaction waiting for its summary
        self.reply: tuple[str, list[str], datetime] | None = None  # an assistant reply's lines

    def read(self, chain: Iterable[dict[str, Any]]) -> None:
        for entry in chain:
            when = _time(entry)
            if when is None:
                self.untimed += 1
                continue
            kind = entry.get("type")
            if kind != "assistant":
                self._end_reply()
            if kind == "system":
                if entry.get("subtype") == "compact_boundary":
                    self._end_boundary(None)
                    self.boundary = entry
            elif kind == "user":
                self._user(entry, when)
            elif kind == "assistant":
                self._assistant(entry, when)
        self._end_reply()
        self._end_boundary(None)

    def _end_boundary(self, summary: str | None) -> None:
        entry, self.boundary = self.boundary, None
        if entry is None:
            return
        meta = entry.get("compactMetadata")
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

    def _user(self, entry: dict[str, Any], when: datetime) -> None:
        message = entry.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if entry.get("isCompactSummary"):
            if self.boundary is None:  # a summary without its boundary (older versions)
                self.boundary = {"timestamp": entry.get("timestamp")}
            self._end_boundary(_text(content))
            return
        self._end_boundary(None)
        if isinstance(content, list):
            texts = []
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    call = block.get("tool_use_id")
                    answered = call if isinstance(call, str) else None
                    text = _text(block.get("content"))
                    self.messages.append(RunMessage("tool", text, when, tool_call_id=answered))
                else:
                    texts.append(block)
            if texts:
                self.messages.append(RunMessage("user", _text(texts), when))
        else:
            self.messages.append(RunMessage("user", _text(content), when))

    def _assistant(self, entry: dict[str, Any], when: datetime) -> None:
        self._end_boundary(None)
        message = entry.get("message")
        message = message if isinstance(message, dict) else {}
        ident = str(message.get("id") or entry.get("uuid") or len(self.messages))
        if self.reply is not None and self.reply[0] != ident:
            self._end_reply()
        parts = [] if self.reply is None else self.reply[1]
        content = message.get("content")
        blocks: list[Any] = content if isinstance(content, list) else [content]
        for block in blocks:
            if isinstance(block, str):
                parts.append(block)
            elif not isinstance(block, dict):
                continue
            elif block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif block.get("type") == "tool_use":
                parts.append(tool_call_text(block.get("name"), block.get("input")))
            elif block.get("type") in ("thinking", "redacted_thinking"):
                self.thinking += 1  # not in the next request's context: left out
        self.reply = (ident, parts, when if self.reply is None else self.reply[2])
        model = message.get("model")
        if isinstance(model, str) and model != "<synthetic>":
            self.models.append(model)
        usage = message.get("usage")
        if isinstance(usage, dict) and isinstance(model, str) and model != "<synthetic>":
            fresh = _count(usage.get("input_tokens"))
            read = _count(usage.get("cache_read_input_tokens"))
            written = _count(usage.get("cache_creation_input_tokens"))
            total = None if fresh is None else fresh + (read or 0) + (written or 0)
            self.calls[ident] = {  # a UsageRecord once the session's start is known
                "time": when,
                "model": model,
                "input_tokens": total,
                "output_tokens": _count(usage.get("output_tokens")),
                "cached_tokens": read,
                "cache_write_tokens": written,
            }

    def _end_reply(self) -> None:
        if self.reply is None:
            return
        _, parts, when = self.reply
        self.reply = None
        self.messages.append(RunMessage("assistant", "\n".join(p for p in parts if p), when))


def read_session(path: Path) -> AgentRecord:
    """The record of one Claude Code session file (the module docstring)."""
    notes: list[Note] = []
    entries = _entries(path, notes)
    if not any(e.get("type") in ("user", "assistant") for e in entries) and not any(
        isinstance(e.get("sessionId"), str) for e in entries
    ):
        raise MemoryFormatError(
            f"{path} holds no Claude Code message (no user or assistant line with a sessionId); "
            "give a session file from ~/.claude/projects/<project>/"
        )
    reader = _Reader(path, notes)
    reader.read(_chain(entries, path, notes))
    session = next((e["sessionId"] for e in entries if isinstance(e.get("sessionId"), str)), None)
    first = reader.messages[0].timestamp.isoformat() if reader.messages else None
    calls = [  # one process: the session's calls numbered from its first message
        UsageRecord(**call, agent=session or path.stem, session_start=first, call=number)
        for number, call in enumerate(reader.calls.values(), 1)
    ]
    said = [
        "context_length and threshold: not recorded by Claude Code (its window depends on the "
        "model and plan; give context_length= to growth and replays)",
        "estimated tokens per call: not recorded (the calls hold the API's counts only); the "
        "summary call's usage is not recorded",
    ]
    if any(c.tokens_after is None for c in reader.compactions):
        said.append("tokens after a compaction: not recorded by this version (postTokens)")
    if reader.thinking:
        said.append(f"{reader.thinking} thinking blocks left out (not sent back in later requests)")
    if reader.untimed:
        said.append(f"{reader.untimed} entries without a timestamp left out")
    model = reader.models[-1] if reader.models else None
    return run_record(
        path,
        reader.messages,
        format="claude-code",
        agent=session or path.stem,
        compactions=reader.compactions,
        calls=calls,
        settings={"model": model} if model else None,
        notes=[*notes, *said],
    )
