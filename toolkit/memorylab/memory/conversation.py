"""``Conversation``: the in-memory history with write-through to MEMORY.md (the seed's API).

History layout after construction (the static context never reaches the file)::

    [0] System : <system_prompt>            (if set)
    [1] User   : <rules>                    (if set)
    [2] User   : <custom_rules_prompt>      (if set)
    [3] System : [Persistent Memory — MEMORY.md]\\n<file text>   (if the file has messages)
    ...        : messages= seeds (in memory only), then every add()

Every ``add()`` appends to ``conversation_history`` and writes one block to MEMORY.md through the
:class:`~memorylab.memory.store.MemoryStore` (the only writer). ``compact()`` archives the file,
re-seeds it with the summary and carries over anything appended meanwhile.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memorylab.errors import EmptySummary, InvalidSetting
from memorylab.memory import display
from memorylab.memory import format as fmt
from memorylab.memory.paths import validate_agent_name
from memorylab.memory.permissions import warn_permissions
from memorylab.memory.preload import PreloadPlan, has_messages, plan_preload
from memorylab.memory.records import PRELOAD_PREFIX, SUMMARY_PREFIX, CompactionEvent, Message
from memorylab.memory.redact import SECRETS, redact_values, resolve_redactor
from memorylab.memory.retention import RetentionPolicy
from memorylab.memory.store import (
    CompactionResult,
    MemoryStore,
    Snapshot,
    agent_paths,
    apply_retention,
)

logger = logging.getLogger("memorylab")


class _Default:
    def __repr__(self) -> str:
        return "<default>"


DEFAULT_PATH: Any = _Default()
"""Sentinel: ``memory_md_path`` follows ``agent_name`` (``<ws>/agents/<agent_name>/MEMORY.md``)."""

_RECORD_KEYS = frozenset({"time", "agent", "archive", "kind"})  # structure: never redacted
_TOOL_ROLES = ("tool", "tool executor", "function", "tool result")


def _utc_now() -> datetime:
    """The default clock: timezone-aware UTC (the reference wrote naive local time)."""
    return datetime.now(UTC)


_second_text: tuple[int, str] = (-1, "")


def _utc_stamp() -> str:
    """``format_timestamp(_utc_now())``, with each second's text formatted once: for a short
    message the datetime and its ``isoformat`` cost more than the write they stamp."""
    global _second_text
    seconds, nanos = divmod(time.time_ns(), 1_000_000_000)
    cached, text = _second_text
    if cached != seconds:
        text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
        _second_text = (seconds, text)
    return f"{text}.{nanos // 1000:06d}+00:00"


@dataclass(frozen=True, slots=True)
class CompactionTicket:
    """Taken before summarizing: what the summary will replace (file bytes and history length)."""

    snapshot: Snapshot | None
    history_length: int
    taken: datetime


class Conversation:
    """A message history that persists to ``MEMORY.md`` (the seed's ``Conversation``).

    Everything written to disk goes through the redactor, while ``conversation_history`` keeps
    what was added, so this process's model sees the original and whatever is read back from
    disk (the next process's preload) shows ``[REDACTED:...]`` markers.

    Args:
        name: The conversation's name, written in the header of a new MEMORY.md (default:
            ``<agent_name>_conversation``, or a random one without an agent).
        system_prompt: Static context: the first history entry, never written to disk.
        rules: Static context after the system prompt (a ``user`` entry), never written.
        custom_rules_prompt: More static context (skills), never written.
        time_enabled: Whether :meth:`return_history_as_string` prefixes each entry with its
            timestamp (``[<timestamp>] Role: content``).
        agent_name: Picks ``<workspace>/agents/<agent_name>/MEMORY.md``; must be one safe
            folder name. Without it (and without ``memory_md_path``) the conversation lives in
            memory only.
        workspace_dir: The workspace; default ``$WORKSPACE_DIR`` (read now), else
            ``./agent_workspace``.
        memory_md_path: An explicit memory file, overriding ``agent_name``; ``None`` keeps the
            conversation in memory only.
        user: The user's role name: it marks the rules and maps to ``user`` in
            :meth:`to_messages`.
        messages: Seed entries (``{"role", "content"}``) added to the history only, never to
            the file.
        durable: ``fsync`` every append (slower; survives a power loss, not just a crash).
        preload: Load the existing MEMORY.md as one ``System`` entry (the seed's preload).
        preload_max_tokens: A budget for the preload: the latest summary and the newest
            messages that fit, with a note of what was left out (needs ``token_counter``).
        token_counter: Counts tokens for :meth:`token_count` (e.g.
            ``memorylab.compress.get_token_counter("gpt-4o")``).
        lock_timeout: Seconds to wait for the agent's lock (other threads and processes).
        clock: Returns the time that stamps messages and compactions (default: UTC now).
        redact: What is removed before anything reaches disk: the default
            :data:`~memorylab.memory.redact.SECRETS`, ``None``/``False`` for nothing, any
            callable ``str -> str`` to replace the built-in rules.
        retention: A :class:`~memorylab.memory.retention.RetentionPolicy` applied after every
            compaction (opt-in); each deletion is recorded in ``compactions.jsonl``.
    """

    def __init__(
        self,
        name: str | None = None,
        system_prompt: str | None = None,
        rules: str | None = None,
        custom_rules_prompt: str | None = None,
        time_enabled: bool = True,
        agent_name: str | None = None,
        workspace_dir: str | os.PathLike[str] | None = None,
        memory_md_path: str | os.PathLike[str] | None = DEFAULT_PATH,
        user: str = "User",
        messages: Iterable[Mapping[str, Any]] | None = None,
        *,
        durable: bool = False,
        preload: bool = True,
        preload_max_tokens: int | None = None,
        token_counter: Callable[[str], int] | None = None,
        lock_timeout: float = 30.0,
        clock: Callable[[], datetime] | None = None,
        redact: Callable[[str], str] | bool | None = SECRETS,
        retention: RetentionPolicy | None = None,
    ) -> None:
        if agent_name is not None:
            agent_name = validate_agent_name(agent_name)  # its NFC form, or InvalidAgentName
        self.agent_name = agent_name
        self.name = name or (
            f"{agent_name}_conversation" if agent_name else f"conversation_{uuid.uuid4().hex[:12]}"
        )
        self.system_prompt = system_prompt
        self.rules = rules
        self.custom_rules_prompt = custom_rules_prompt
        self.time_enabled = time_enabled
        self.user = user
        self.workspace_dir = workspace_dir
        self.durable = durable
        self.lock_timeout = lock_timeout
        self.clock: Callable[[], datetime] = clock or _utc_now
        self.redactor: Callable[[str], str] | None = resolve_redactor(redact)
        if retention is not None and not isinstance(retention, RetentionPolicy):
            raise InvalidSetting(f"retention must be a RetentionPolicy or None, got {retention!r}")
        self.retention = retention
        self.conversation_history: list[dict[str, Any]] = []
        self._suppress_memory_md = False
        self._lock = threading.RLock()  # orders the history and its writes to the file
        self._store: MemoryStore | None = None
        self.memory_created = False
        self.token_counter = token_counter
        self.preload_max_tokens = preload_max_tokens
        self.preload_plan: PreloadPlan | None = None
        self._counted_list: list[dict[str, Any]] | None = None
        self._counted_with: Callable[[str], int] | None = None
        self._counted = 0
        self._total_tokens = 0
        self._separator_tokens = 0

        if memory_md_path is DEFAULT_PATH:
            self._store = (
                MemoryStore.for_agent(
                    agent_name, workspace_dir, durable=durable, lock_timeout=lock_timeout
                )
                if agent_name is not None
                else None
            )
        elif memory_md_path is not None:
            self._store = self._store_for(memory_md_path)
        elif agent_name is not None:
            agent_paths(agent_name, workspace_dir)  # still validate the name

        self._seed_static_context()
        if self._store is not None:
            self._ensure_file()
            if preload:
                self._preload()
        for seed in messages or ():
            self._append(str(seed["role"]), seed.get("content"), persist=False)

    # -- construction helpers -----------------------------------------------------------------

    def _store_for(self, path: str | os.PathLike[str]) -> MemoryStore:
        return MemoryStore(path, durable=self.durable, lock_timeout=self.lock_timeout)

    def _seed_static_context(self) -> None:
        for role, text in (
            ("System", self.system_prompt),
            (self.user, self.rules),
            (self.user, self.custom_rules_prompt),
        ):
            if text:
                self._append(role, text, persist=False, kind="static")

    def _ensure_file(self) -> None:
        assert self._store is not None
        created = self._store.ensure(self.name, self._now())
        if created:
            self.memory_created = True
            logger.info(
                "memorylab: storing this conversation in %s (every message is written there and "
                "archived on compaction). Turn persistence off with memory_md_path=None; delete it "
                "by removing the folder %s.",
                self._store.path,
                self._store.path.parent,
            )

    def _preload(self) -> None:
        assert self._store is not None
        text = self._store.read_text()
        warn_permissions(self._store.path)  # the file only: one lstat
        if not has_messages(text):
            return  # a header without messages: nothing worth loading
        plan = plan_preload(text, max_tokens=self.preload_max_tokens, count=self.token_counter)
        self.preload_plan = plan
        if not plan.complete:
            logger.info(
                "memorylab: preloaded %d of %d messages of %s (preload_max_tokens=%d)",
                plan.kept_messages,
                plan.kept_messages + plan.omitted_messages,
                self._store.path,
                self.preload_max_tokens,
            )
        self._append("System", f"{PRELOAD_PREFIX}\n{plan.text}", persist=False, kind="preload")

    # -- properties -----------------------------------------------------------------------------

    @property
    def memory_md_path(self) -> Path | None:
        """MEMORY.md, or ``None`` when persistence is off (assign ``None`` to turn it off)."""
        return None if self._store is None else self._store.path

    @memory_md_path.setter
    def memory_md_path(self, value: str | os.PathLike[str] | None) -> None:
        with self._lock:
            if self._store is not None:
                self._store.close()
            if value is None:
                self._store = None
                return
            self._store = self._store_for(value)
            self._ensure_file()

    @property
    def store(self) -> MemoryStore | None:
        return self._store

    # -- messages -------------------------------------------------------------------------------

    def _now(self) -> datetime:
        """The clock's time, timezone-aware (a naive one is this machine's local time): the
        offset in a block's timestamp is what marks its content as escaped by memorylab."""
        now = self.clock()
        return now if now.tzinfo is not None else now.astimezone()

    def add(self, role: str, content: Any, **metadata: Any) -> dict[str, Any]:
        """Append a message to the history and write it through to MEMORY.md.

        ``content`` may be any object: dicts and lists are stored as JSON, others with ``str()``
        (the history keeps the original object). ``metadata`` (e.g. ``tool_call_id``) is kept in
        the history entry only.
        """
        return self._append(role, content, metadata)

    def _append(
        self,
        role: str,
        content: Any,
        extra: Mapping[str, Any] | None = None,
        *,
        persist: bool = True,
        kind: str | None = None,
    ) -> dict[str, Any]:
        """The one way an entry enters the history: stamped, written through to MEMORY.md when
        ``persist`` (and persistence is on), then appended, under the conversation's lock so the
        history and the file keep the same order."""
        fmt.validate_role(role)
        clock = self.clock
        stamp = _utc_stamp() if clock is _utc_now else fmt.format_timestamp(self._now())
        entry: dict[str, Any] = {"role": role, "content": content, "timestamp": stamp}
        if kind is not None:
            entry["kind"] = kind
        if extra:
            entry.update(extra)
        with self._lock:
            store = self._store
            if persist and store is not None and not self._suppress_memory_md:
                text = fmt.content_to_text(content)
                # Like the reference, blank content stays in memory only.
                if text and not text.isspace():
                    if self.redactor is not None:  # disk only: the history keeps the original
                        text = self.redactor(text)
                    store.append(fmt.block_text(role, stamp, text))
            self.conversation_history.append(entry)
        return entry

    def return_history_as_string(self) -> str:
        """The history as the model reads it: ``[<timestamp>] Role: content`` blocks."""
        return "\n\n".join(self._entry_text(e) for e in self.conversation_history)

    def _entry_text(self, entry: Mapping[str, Any]) -> str:
        stamp = entry["timestamp"] if self.time_enabled else None
        return fmt.history_line(entry["role"], entry["content"], stamp)

    def to_messages(self) -> list[dict[str, Any]]:
        """Provider-ready ``{"role", "content"}`` messages, preloaded memory included.

        ``System`` rows become ``system``; the user's role (and ``User``/``Human``) ``user``;
        rows with a ``tool_call_id`` ``tool``; other tool-ish roles a ``user`` row tagged with the
        role; everything else (the agent's own name) ``assistant``.
        """
        out: list[dict[str, Any]] = []
        user_roles = {self.user.lower(), "user", "human"}
        for entry in self.conversation_history:
            role = str(entry["role"])
            content = fmt.content_to_text(entry["content"])
            lowered = role.lower()
            message: dict[str, Any]
            if entry.get("tool_call_id"):
                message = {"role": "tool", "tool_call_id": entry["tool_call_id"]}
                message["content"] = content
            elif lowered == "system":
                message = {"role": "system", "content": content}
            elif lowered in user_roles:
                message = {"role": "user", "content": content}
            elif lowered in _TOOL_ROLES:
                message = {"role": "user", "content": f"[{role}]\n{content}"}
            else:
                message = {"role": "assistant", "content": content}
                if entry.get("tool_calls"):
                    message["tool_calls"] = entry["tool_calls"]
            out.append(message)
        return out

    def token_count(self, counter: Callable[[str], int] | None = None) -> int:
        """Tokens of the history as the model reads it (:meth:`return_history_as_string`).

        Each entry is counted once and a running total is kept, so a check costs only the
        messages added since the last one. The total is the sum of the entries' counts plus one
        ``"\\n\\n"`` separator between entries (BPE merges across the joins make counting the
        joined string differ by at most about one token per entry). ``counter`` defaults to
        ``token_counter`` (e.g. ``memorylab.compress.get_token_counter("gpt-4o")``). Entries
        edited in place are not noticed; replacing ``conversation_history`` or changing the
        counter recounts everything.
        """
        counter = counter or self.token_counter
        if counter is None:
            raise InvalidSetting(
                "token_count() needs a tokenizer: pass "
                "counter=memorylab.compress.get_token_counter(model) or construct the "
                "Conversation with token_counter=..."
            )
        with self._lock:
            history = self.conversation_history
            if (
                history is not self._counted_list
                or counter is not self._counted_with
                or len(history) < self._counted
            ):
                self._counted_list, self._counted_with = history, counter
                self._counted = self._total_tokens = 0
                self._separator_tokens = counter("\n\n")
            if len(history) == self._counted + 1 and self._counted:  # one new message: add()
                self._total_tokens += counter(self._entry_text(history[-1]))
                self._total_tokens += self._separator_tokens
                self._counted += 1
                return self._total_tokens
            new = history[self._counted :]
            if new:
                texts = [self._entry_text(e) for e in new]
                batch = getattr(counter, "count_batch", None)
                counts = (
                    batch(texts) if batch is not None and len(texts) > 64 else map(counter, texts)
                )
                separators = len(new) - (1 if self._counted == 0 else 0)
                self._total_tokens += sum(counts) + separators * self._separator_tokens
                self._counted = len(history)
            return self._total_tokens

    def static_context(self) -> list[dict[str, Any]]:
        return [e for e in self.conversation_history if e.get("kind") == "static"]

    # -- compaction -----------------------------------------------------------------------------

    def begin_compaction(self) -> CompactionTicket:
        """Mark what a summary will replace; messages added after this are carried over."""
        with self._lock:
            snapshot = self._store.snapshot() if self._store is not None else None
            return CompactionTicket(snapshot, len(self.conversation_history), self._now())

    def compact(
        self,
        summary: str,
        summary_role: str = "System",
        *,
        ticket: CompactionTicket | None = None,
        **event_fields: Any,
    ) -> CompactionEvent:
        """Archive MEMORY.md, re-seed it and the history with ``summary`` (see the module doc).

        ``ticket`` (from :meth:`begin_compaction`, taken before a slow summarization) makes
        every message added since then survive, after the summary. ``event_fields`` (tokens,
        model, latency ...) go into the returned event and the ``compactions.jsonl`` record.
        """
        if summary is None or not str(summary).strip():
            raise EmptySummary(
                "refusing to compact with an empty summary: memory was left unchanged"
            )
        fmt.validate_role(summary_role)
        text = str(summary)
        content = text if text.startswith(SUMMARY_PREFIX) else f"{SUMMARY_PREFIX} {text}"
        with self._lock:
            ticket = ticket or self.begin_compaction()
            now = self._now()
            history = self.conversation_history
            kept = [e for e in history[ticket.history_length :] if e.get("kind") is None]
            summary_entry = {
                "role": summary_role,
                "content": content,
                "timestamp": fmt.format_timestamp(now),
                "kind": "summary",
            }
            new_history = [e for e in history if e.get("kind") == "static"]
            new_history += [summary_entry, *kept]
            base: dict[str, Any] = {
                "time": now,
                "agent": self.agent_name,
                "summary_chars": len(content),
                "messages_archived": sum(
                    1 for e in history[: ticket.history_length] if e.get("kind") is None
                ),
                "carried_over": len(kept),
            }
            if self.token_counter is not None:
                count = self.token_counter
                base["summary_tokens"] = count(self._entry_text(summary_entry))
                base["tokens_after"] = sum(count(self._entry_text(e)) for e in new_history) + (
                    len(new_history) - 1
                ) * count("\n\n")
            base.update(event_fields)
            event = CompactionEvent(**base)
            if self._store is not None and ticket.snapshot is not None:
                redactor = self.redactor

                def record(result: CompactionResult) -> dict[str, Any]:
                    line = replace(
                        event,
                        archive=result.archive,
                        messages_archived=result.messages_archived,
                        carried_over=result.carried_over,
                    ).to_dict()
                    if redactor is not None:  # error texts and extra fields may quote content
                        line = {
                            k: v if k in _RECORD_KEYS else redact_values(v, redactor)
                            for k, v in line.items()
                        }
                    return line

                on_disk = content
                if redactor is not None:
                    on_disk = SUMMARY_PREFIX + redactor(content[len(SUMMARY_PREFIX) :])
                result = self._store.compact(
                    ticket.snapshot,
                    Message(summary_role, on_disk, now),
                    conversation_name=self.name,
                    now=now,
                    record=record,
                )
                event = CompactionEvent.from_dict(record(result))
                if self.retention is not None:
                    self._apply_retention(now)
            self.conversation_history = new_history
            return event

    def _apply_retention(self, now: datetime) -> None:
        assert self._store is not None and self.retention is not None
        try:
            deleted = apply_retention(self._store, self.retention, now=now, agent=self.agent_name)
        except OSError as exc:  # the compaction itself is done: report, retry next time
            logger.warning(
                "memorylab: retention (%s) after compacting %s failed: %s; the old archives "
                "stay until the next compaction",
                self.retention,
                self._store.path,
                exc,
            )
            return
        if deleted:
            logger.info("memorylab: retention (%s) deleted %s", self.retention, ", ".join(deleted))

    # -- misc -----------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.conversation_history)

    def _repr_html_(self) -> str:
        return display.conversation_html(self)

    def __repr__(self) -> str:
        where = self.memory_md_path or "memory only"
        return f"Conversation(name={self.name!r}, messages={len(self)}, path={str(where)!r})"


__all__ = [
    "CompactionTicket",
    "Conversation",
    "DEFAULT_PATH",
]
