"""``Conversation``: the in-memory history with write-through to MEMORY.md (the seed's API).

History layout after construction (the static context never reaches the file)::

    [0] System : <system_prompt>            (if set)
    [1] User   : <rules>                    (if set)
    [2] User   : <custom_rules_prompt>      (if set)
    [3] System : [Persistent Memory — MEMORY.md]\\n<file text>   (if the file has messages)
    ...        : messages= seeds (in memory only), then every add()

Every ``add()`` appends to ``conversation_history`` and writes one block to MEMORY.md through the
:class:`~memorylab.memory._store.MemoryStore` (the only writer). ``compact()`` archives the file,
re-seeds it with the summary and carries over anything appended meanwhile. Edits (``update``,
``delete``, ``clear``) change the blocks in the file by the same crash-ordered path: the old file
is archived, then atomically replaced (:meth:`MemoryStore.edit`).

The reference framework's keywords and methods (``get_str``, ``to_dict``, ``save_as_json`` ...)
are :mod:`memorylab.memory._reference`'s.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from dataclasses import fields as dataclass_fields
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from typing import Any, Final, Unpack

from memorylab.errors import EmptySummary, InvalidSetting
from memorylab.memory import _display as display
from memorylab.memory import _format as fmt
from memorylab.memory import _request as request
from memorylab.memory._fsutil import encode_utf8
from memorylab.memory._paths import agent_paths, validate_agent_name
from memorylab.memory._permissions import warn_permissions
from memorylab.memory._pins import PinAction, PinKey, pin_key, pin_line, pinned_keys, preload_pins
from memorylab.memory._preload import PreloadPlan, has_messages, plan_preload
from memorylab.memory._records import (
    IDENTIFYING_FIELDS,
    PRELOAD_PREFIX,
    SUMMARY_PREFIX,
    CompactionEvent,
    EntryKind,
    check_field,
    entry_kind,
)
from memorylab.memory._redact import SECRETS, redact_role, redact_values, resolve_redactor
from memorylab.memory._reference import (
    ReferenceKeywords,
    ReferenceMethods,
    check_keywords,
    history_index,
)
from memorylab.memory._retention import RetentionPolicy
from memorylab.memory._store import CompactionResult, MemoryStore, Snapshot

logger = logging.getLogger("memorylab")


class DefaultPath(Enum):
    """The type of :data:`DEFAULT_PATH` (one member, so type checkers narrow on ``is``)."""

    DEFAULT_PATH = "<default>"

    def __repr__(self) -> str:
        return "<default>"


DEFAULT_PATH: Final = DefaultPath.DEFAULT_PATH
"""Sentinel: ``memory_md_path`` follows ``agent_name`` (``<ws>/agents/<agent_name>/MEMORY.md``)."""


_ARCHIVE_GONE = " (deleted since: the original is gone)"
"""What follows the name of an archive that no longer exists (retention, purge) where a text
of the memory names it as ``archive/<name>``, as a cleared tool result's placeholder does
(:func:`memorylab.compress._strategy.render_placeholder`): :func:`_note_gone_archives`."""

_ARCHIVE_REFERENCE = re.compile(
    r"archive/(history_[\w.-]+?\.md)(?!" + re.escape(_ARCHIVE_GONE) + ")"
)


def _note_gone_archives(text: str, gone: Callable[[str], bool]) -> str:
    """``text`` with :data:`_ARCHIVE_GONE` after each ``archive/<name>`` whose archive is
    ``gone`` (a name noted already is left as it is).

    Said where the text reaches the model, not in MEMORY.md: when a conversation preloads the
    file (:meth:`Conversation._preload`: the archives there are listed only when the text names
    one) and, in the live history, when retention deletes archives right after a compaction.
    The file keeps what the compaction wrote, for two reasons: changing it at every deletion
    would be an edit (the whole file archived again, for a pointer's wording), and a writer
    that takes no lock (the reference framework) may append to it at any time. A reader of the
    file sees the archive gone in ``archive/`` and its deletion in ``compactions.jsonl``. The
    note goes right after the name, inside the placeholder's ``{archive}`` field, so the text
    is still that placeholder (:func:`memorylab.compress._strategy.is_placeholder`: never
    cleared again).

    >>> _note_gone_archives("in archive/history_2026-05-01_10-00-00Z.md]", lambda name: True)
    'in archive/history_2026-05-01_10-00-00Z.md (deleted since: the original is gone)]'
    """

    def noted(match: re.Match[str]) -> str:
        name = match[1]
        if fmt.parse_archive_name(name) is None or not gone(name):
            return match[0]
        return match[0] + _ARCHIVE_GONE

    return _ARCHIVE_REFERENCE.sub(noted, text) if "archive/history_" in text else text


_ON_DISK_KINDS = (EntryKind.MESSAGE, EntryKind.SUMMARY)  # blocks of MEMORY.md (when persisted)

KeptEntries = Sequence[Mapping[str, Any]] | Callable[[str | None], Sequence[Mapping[str, Any]]]
"""What a strategy keeps (:meth:`Conversation.compact`'s ``kept``): the entries, or a function of
the archive's name returning them."""

_TokenizerFactory = Callable[[str], Callable[[str], int]]
_tokenizer_factory: list[_TokenizerFactory] = []


def register_tokenizer(factory: _TokenizerFactory) -> None:
    """Install what turns a ``tokenizer_model_name`` into a token counter (``str -> int``).

    :mod:`memorylab.compress` registers :func:`~memorylab.compress.get_token_counter` when
    memorylab is imported: the memory core counts no tokens itself (it is a floor below the
    tokenizers), yet ``Conversation().token_count()`` works without a ``token_counter``.
    """
    _tokenizer_factory[:] = [factory]


def generate_conversation_name() -> str:
    """The name of a conversation without a name or an agent: ``conversation-<8 hex digits>``
    (the reference's form), different for every instance."""
    return f"conversation-{secrets.token_hex(4)}"


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


# The fields of a compaction's record that compact() decides itself (its time, what it archived
# and carried over, ...); a caller describes the compaction with the others.
_COMPACTION_DECIDES = frozenset(
    {"time", "agent", "archive", "summary_chars", "messages_archived", "carried_over", "kind"}
)


def _check_compact_arguments(
    summary_role: str, ticket: object, kept: object, event_fields: Mapping[str, object]
) -> None:
    """:meth:`Conversation.compact`'s arguments, checked before anything is written: each wrong
    one is an :class:`~memorylab.errors.InvalidSetting` naming it (a record field's value as
    every reader of the record expects it: :func:`~memorylab.memory._records.check_field`)."""
    try:
        fmt.validate_role(summary_role)
    except ValueError as exc:
        raise InvalidSetting(f"summary_role={summary_role!r}: {exc}") from None
    if ticket is not None and not isinstance(ticket, CompactionTicket):
        raise InvalidSetting(
            "ticket must be what begin_compaction() returned (a CompactionTicket) or None, not "
            f"{type(ticket).__name__}"
        )
    if kept is not None and not callable(kept):
        _check_kept(kept)
    recorded = sorted({f.name for f in dataclass_fields(CompactionEvent)} - _COMPACTION_DECIDES)
    for name, value in event_fields.items():
        if name not in recorded:
            itself = " (compact() records it itself)" if name in _COMPACTION_DECIDES else ""
            raise InvalidSetting(
                f"compact() got an unexpected keyword argument {name!r}{itself}; it takes "
                f"summary, summary_role, ticket, kept and the record's {', '.join(recorded)}"
            )
        if name == "extra" and not isinstance(value, Mapping):
            raise InvalidSetting(f"extra must be a dict, not {type(value).__name__}")
        check_field(name, value)  # the shape every reader of compactions.jsonl expects


def _check_kept(kept: object, made_by: str = "kept") -> None:
    """The entries a strategy keeps (``kept``, or what its function returned): history entries,
    each a mapping with a ``role``."""
    if not isinstance(kept, Sequence) or isinstance(kept, str | bytes):
        raise InvalidSetting(
            f"{made_by} must be a list of history entries (dicts with a role and a content), a "
            f"function of the archive's name returning them, or None; not {type(kept).__name__}"
        )
    for index, entry in enumerate(kept):
        if not isinstance(entry, Mapping) or "role" not in entry:
            raise InvalidSetting(
                f"{made_by}[{index}] must be a history entry (a dict with a role and a content), "
                f"not {entry!r:.80}"
            )


class Conversation(ReferenceMethods):
    """A message history that persists to ``MEMORY.md`` (the seed's ``Conversation``).

    Everything written to disk goes through the redactor, while ``conversation_history`` keeps
    what was added, so this process's model sees the original and whatever is read back from
    disk (the next process's preload) shows ``[REDACTED:...]`` markers.

    Args:
        name: The conversation's name, written in the header of a new MEMORY.md (default:
            ``<agent_name>_conversation``, or :func:`generate_conversation_name` without an
            agent).
        system_prompt: Static context: the first history entry, never written to disk.
        rules: Static context after the system prompt (a ``user`` entry), never written.
        custom_rules_prompt: More static context (skills), never written.
        time_enabled: Whether :meth:`return_history_as_string` prefixes each entry with its
            timestamp (``[<timestamp>] Role: content``) and :meth:`to_messages` each user turn
            (so :meth:`token_count` counts those stamps). Default ``True`` (the reference's is
            ``False``; its ``Agent`` turns it on); every entry is stamped either way.
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
            ``False`` also keeps a ``name`` alone from resuming from its default save file
            (``./conversations/conversation_<name>.json``); a ``save_filepath`` or
            ``load_filepath`` given still resumes.
        preload_max_tokens: A budget for the preload: the latest summary and the newest
            messages that fit, with a note of what was left out.
        token_counter: Counts tokens for :meth:`token_count` (e.g.
            ``memorylab.compress.get_token_counter("gpt-4o")``); default: the tokenizer of
            ``tokenizer_model_name``, loaded at the first count.
        lock_timeout: Seconds to wait for the agent's lock (other threads and processes).
        clock: Returns the time that stamps messages and compactions (default: UTC now).
        redact: What is removed before anything reaches disk (MEMORY.md and the save files of
            :meth:`save_as_json`): the default :data:`~memorylab.memory._redact.SECRETS`,
            ``None``/``False`` for nothing, any callable ``str -> str`` to replace the
            built-in rules.
        retention: A :class:`~memorylab.memory._retention.RetentionPolicy` applied after every
            compaction (opt-in); each deletion is recorded in ``compactions.jsonl``.

    The reference framework's keywords (``id``, ``autosave``, ``save_filepath`` ...: pass them by
    keyword) and methods (``get_str``, ``to_dict``, ``save_as_json`` ...) are those of
    :class:`~memorylab.memory._reference.ReferenceMethods`; :class:`ReferenceKeywords` lists what
    each keyword means here.
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
        memory_md_path: str | os.PathLike[str] | DefaultPath | None = DEFAULT_PATH,
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
        **reference: Unpack[ReferenceKeywords],
    ) -> None:
        check_keywords(reference)
        if agent_name is not None:
            agent_name = validate_agent_name(agent_name)  # its NFC form, or InvalidAgentName
        self.agent_name = agent_name
        self.name = name or (
            f"{agent_name}_conversation" if agent_name else generate_conversation_name()
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
        # A memory-only conversation archives nothing: what a compaction's kept entries name as
        # their archive (a cleared tool result's placeholder). None names none; a replay names
        # the archive the run it replays wrote, so its placeholders count as the run's did.
        self.archive_namer: Callable[[datetime], str | None] | None = None
        self.conversation_history: list[dict[str, Any]] = []
        self._suppress_memory_md = False
        self._lock = threading.RLock()  # orders the history and its writes to the file
        self._store: MemoryStore | None = None
        self.memory_created = False
        if token_counter is not None and not callable(token_counter):
            raise InvalidSetting(
                f"token_counter must be a callable str -> int, not {token_counter!r}"
            )
        self.token_counter = token_counter
        self.tool_tokens = 0
        """Tokens every request carries beside its messages: the tool schemas sent with each
        call (the :class:`~memorylab.Agent` sets it from its tools), counted by
        :meth:`token_count` like the messages, since the model reads and the provider bills
        them."""
        channel = self._take_keywords(reference)  # the reference's settings
        self._default_counter: tuple[str, Callable[[str], int]] | None = None
        self.preload_max_tokens = preload_max_tokens
        self.preload_plan: PreloadPlan | None = None
        # Each entry is rendered once for get_str (the history string); the cache is
        # for this history list and time_enabled, and starts again when either changes.
        self._lines: list[str] = []
        self._lines_for: tuple[list[dict[str, Any]], bool] | None = None
        # token_count's running total: for this history list, time_enabled, user and counter.
        self._counted_for: tuple[Any, ...] | None = None
        self._counted = 0
        self._total_tokens = 0

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

        files = (reference.get("save_filepath"), reference.get("load_filepath"))
        self._resume(files != (None, None) or (name is not None and preload))
        if not self.conversation_history:
            self._seed_static_context()
        if self._store is not None:
            self._ensure_file()
            if preload:
                self._preload()
        for seed in messages or ():
            self._append(str(seed["role"]), seed.get("content"), persist=False)
        if channel is not None:
            for row in channel.messages():
                self._append(str(row["agent_name"]), row.get("content"), persist=False)
            self.channel = channel

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
                self._append(role, text, persist=False, kind=EntryKind.STATIC)

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
        warn_permissions(self._store.path, own=True)  # the file only: one lstat
        if not has_messages(text):
            return  # a header without messages: nothing worth loading
        paths = self._store.paths
        present: list[set[str]] = []  # listed once, and only when the text names an archive

        def gone(name: str) -> bool:
            if not present:
                present.append({p.name for p in paths.archives()})
            return name not in present[0]

        text = _note_gone_archives(text, gone)  # a cleared tool result's original deleted since
        pins = pinned_keys(self._store.pin_records())  # none: a memory never pinned
        plan = plan_preload(
            text,
            max_tokens=self.preload_max_tokens,
            count=self.counter,
            last_archive=lambda: next((p.name for p in reversed(paths.archives())), None),
            pins=pins,
        )
        self.preload_plan = plan
        if not plan.complete:
            logger.info(
                "memorylab: preloaded %d of %d messages of %s (preload_max_tokens=%d)",
                plan.kept_messages,
                plan.kept_messages + plan.omitted_messages,
                self._store.path,
                self.preload_max_tokens,
            )
        entry = self._append(
            "System", f"{PRELOAD_PREFIX}\n{plan.text}", persist=False, kind=EntryKind.PRELOAD
        )
        held = preload_pins(plan.text, pins)
        if held:  # the blocks a compaction keeps one by one (compaction_entries)
            entry["pins"] = sorted(held)

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

    def add(
        self,
        role: str,
        content: Any,
        metadata: Mapping[str, Any] | None = None,
        category: str | None = None,
        *,
        pinned: bool = False,
        **fields: Any,
    ) -> dict[str, Any]:
        """Append a message to the history and write it through to MEMORY.md; returns its entry.

        ``content`` may be any object: dicts and lists are stored as JSON, others with ``str()``
        (the history keeps the original object). ``metadata`` and ``category`` (the reference's
        positional arguments) are kept in the entry under those keys when given; other keyword
        ``fields`` (e.g. ``tool_call_id``) go into the entry as they are. None of them is written
        to the file.

        ``pinned=True`` pins the message (:meth:`pin`): every compaction carries it verbatim.
        """
        if not isinstance(pinned, bool):
            raise InvalidSetting(f"pinned must be True or False, not {pinned!r}")
        if metadata:
            fields["metadata"] = metadata
        if category:
            fields["category"] = category
        with self._lock:  # flagged before a compaction on another thread can take it
            entry = self._append(role, content, fields)
            if pinned:
                self._record_pin(entry, "pin", entry["timestamp"])
        channel = self.channel
        if channel is not None and content is not None and role not in ("System", "system"):
            channel.post(role, str(content))
        if self.autosave:
            self.export()
        return entry

    def _append(
        self,
        role: str,
        content: Any,
        extra: Mapping[str, Any] | None = None,
        *,
        persist: bool = True,
        kind: EntryKind = EntryKind.MESSAGE,
    ) -> dict[str, Any]:
        """The one way an entry enters the history: stamped, written through to MEMORY.md when
        ``persist`` (and persistence is on), then appended, under the conversation's lock so the
        history and the file keep the same order."""
        fmt.validate_role(role)
        clock = self.clock
        stamp = _utc_stamp() if clock is _utc_now else fmt.format_timestamp(self._now())
        entry: dict[str, Any] = {"role": role, "content": content, "timestamp": stamp}
        if kind is not EntryKind.MESSAGE:
            entry["kind"] = kind.value
        if extra:
            entry.update(extra)
        if self.message_id_on:
            entry["message_id"] = str(uuid.uuid4())
        if self.token_count_on:
            entry["token_count"] = self.request_tokens(entry)
        with self._lock:
            store = self._store
            if persist and store is not None and not self._suppress_memory_md:
                block = self._block(role, stamp, content)
                if block is not None:  # like the reference, blank content stays in memory only
                    store.append(block)
            self.conversation_history.append(entry)
        return entry

    def _disk_text(self, text: str, *, summary: bool = False) -> str:
        """``text`` as it is written to disk: redacted (a summary after its prefix)."""
        redactor = self.redactor
        if redactor is None:
            return text
        if summary and text.startswith(SUMMARY_PREFIX):
            return SUMMARY_PREFIX + redactor(text[len(SUMMARY_PREFIX) :])
        return redactor(text)

    def _block(self, role: str, stamp: str, content: Any, *, summary: bool = False) -> str | None:
        """The block an entry is in MEMORY.md; ``None`` for blank content (never written)."""
        text = fmt.content_to_text(content)
        if not text or text.isspace():
            return None
        role = redact_role(role, self.redactor)  # a heading reaches disk like the content
        return fmt.block_text(role, stamp, self._disk_text(text, summary=summary))

    def return_history_as_string(self) -> str:
        """The history as one string of ``[<timestamp>] Role: content`` blocks (the reference's
        view, ``get_str``). The model is sent :meth:`to_messages`, not this string, and
        :meth:`token_count` counts that request."""
        with self._lock:
            return "\n\n".join(self._history_lines())

    def _history_lines(self) -> list[str]:
        """Each entry rendered as :meth:`return_history_as_string` shows it, rendered once: an
        agent loop reads the history every turn and must not pay for the old entries again.
        Replacing ``conversation_history``, shrinking it, changing ``time_enabled``, or an
        :meth:`update` / :meth:`delete` starts the cache again; an entry edited in place by
        hand is not noticed. The caller holds the lock."""
        history = self.conversation_history
        lines = self._lines
        cached = self._lines_for
        stale = cached is None or cached[0] is not history or cached[1] != self.time_enabled
        if stale or len(history) < len(lines):
            lines = self._lines = []
            self._lines_for = (history, self.time_enabled)
        if len(history) > len(lines):
            lines.extend(self.entry_text(e) for e in history[len(lines) :])
        return lines

    def _forget_rendering(self) -> None:
        """An entry changed: render (and count) the history again at the next read."""
        self._lines_for = None
        self._counted_for = None

    def entry_text(self, entry: Mapping[str, Any]) -> str:
        """``entry`` as one block of :meth:`return_history_as_string` (what a summarizer reads
        of it); its tokens in the request are :meth:`request_tokens`'."""
        stamp = entry.get("timestamp") if self.time_enabled else None
        return fmt.history_line(entry["role"], entry["content"], stamp)

    def to_messages(self) -> list[dict[str, Any]]:
        """Provider-ready ``{"role", "content"}`` messages, preloaded memory included: each
        entry as :meth:`request_message` renders it.

        With ``time_enabled`` each user turn of the conversation starts with its timestamp,
        ``[<timestamp>] <content>``, as the preloaded turns and
        :meth:`return_history_as_string` show it, so the model can say when it was asked
        something in this session too. Replies, tool results and the static context go as they
        are: a model shown stamped replies tends to start its own with a stamp.
        """
        with self._lock:
            return [self.request_message(e) for e in self.conversation_history]

    def request_message(self, entry: Mapping[str, Any]) -> dict[str, Any]:
        """``entry`` as the provider message :meth:`to_messages` sends
        (:func:`memorylab.memory._request.request_message`): ``System`` rows become ``system``;
        the user's role (and ``User``/``Human``) ``user``, stamped with ``time_enabled``; rows
        with a ``tool_call_id`` (in the entry or its ``metadata``, as :meth:`add_messages`
        keeps it) ``tool``; other tool-ish roles a ``user`` row tagged with the role;
        everything else (the agent's own name) ``assistant``, with its ``tool_calls``."""
        return request.request_message(entry, user=self.user, stamped=self.time_enabled)

    def request_tokens(
        self, entry: Mapping[str, Any], counter: Callable[[str], int] | None = None
    ) -> int:
        """Tokens ``entry`` costs in the request, as it is sent (:meth:`request_message`; a
        tool result without its call's id, which no file keeps): the one rule of an entry's
        tokens (:func:`memorylab.memory._request.message_tokens`: OpenAI's count of a chat
        message). ``counter`` defaults to :attr:`counter`."""
        return request.message_tokens(self._counted_message(entry), counter or self.counter)

    def _counted_message(self, entry: Mapping[str, Any]) -> dict[str, Any]:
        """``entry`` as the request is counted (``request_message(counted=True)``)."""
        return request.request_message(
            entry, user=self.user, stamped=self.time_enabled, counted=True
        )

    @property
    def fixed_request_tokens(self) -> int:
        """Tokens every request carries whatever its messages: the reply's priming
        (:data:`~memorylab.memory._request.REPLY_TOKENS`) and the tool schemas
        (:attr:`tool_tokens`)."""
        return request.REPLY_TOKENS + self.tool_tokens

    @property
    def counter(self) -> Callable[[str], int]:
        """What counts tokens: ``token_counter``, else the tokenizer of
        ``tokenizer_model_name`` (made on first use; tiktoken loads at the first count)."""
        if self.token_counter is not None:
            return self.token_counter
        model = self.tokenizer_model_name
        made = self._default_counter
        if made is None or made[0] != model:
            if not _tokenizer_factory:
                raise InvalidSetting(
                    "token_count() needs a tokenizer: import memorylab.compress (it installs "
                    "one) or construct the Conversation with token_counter=..."
                )
            made = self._default_counter = (model, _tokenizer_factory[0](model))
        return made[1]

    def token_count(self, counter: Callable[[str], int] | None = None) -> int:
        """Tokens of the request the model is sent: :meth:`to_messages`, each entry counted by
        :meth:`request_tokens`, plus :attr:`fixed_request_tokens` (the reply's priming and the
        tool schemas; 0 for an empty history). Not the tokens of
        :meth:`return_history_as_string`, which stamps and names every entry: that string is
        the reference's view, not what is sent.

        Each entry is counted once and a running total is kept, so a check costs only the
        messages added since the last one. ``counter`` defaults to :attr:`counter`
        (``token_counter``, else the tokenizer of ``tokenizer_model_name``). Entries edited in
        place are not noticed (:meth:`update` and :meth:`delete` are); replacing
        ``conversation_history``, changing ``time_enabled``, ``user`` or the counter recounts
        everything.
        """
        counter = counter or self.counter
        with self._lock:
            history = self.conversation_history
            counted_for = self._counted_for
            if (
                counted_for is None
                or counted_for[0] is not history
                or counted_for[1:3] != (self.time_enabled, self.user)
                or counted_for[3] is not counter
                or len(history) < self._counted
            ):
                self._counted_for = (history, self.time_enabled, self.user, counter)
                self._counted = self._total_tokens = 0
            new = history[self._counted :]
            batch = getattr(counter, "count_batch", None)
            if len(new) > 64 and batch is not None:
                messages = [self._counted_message(e) for e in new]
                contents = batch([m["content"] for m in messages])
                self._total_tokens += sum(
                    request.message_tokens(m, counter, content_tokens=c)
                    for m, c in zip(messages, contents, strict=True)
                )
            else:
                self._total_tokens += sum(self.request_tokens(e, counter) for e in new)
            self._counted = len(history)
            return self._total_tokens + (self.fixed_request_tokens if history else 0)

    def static_context(self) -> list[dict[str, Any]]:
        """The system prompt and rules entries (:meth:`entries` of ``EntryKind.STATIC``)."""
        return self.entries(EntryKind.STATIC)

    def entries(self, *kinds: EntryKind) -> list[dict[str, Any]]:
        """The history's entries of these kinds, in order (every entry when none is given);
        the entries themselves, not copies."""
        if not kinds:
            return list(self.conversation_history)
        return [e for e in self.conversation_history if entry_kind(e) in kinds]

    entry_kind = staticmethod(entry_kind)

    # -- pins -----------------------------------------------------------------------------------

    def pin(self, index: int | str | Mapping[str, Any]) -> None:
        """Pin a message: every compaction carries it verbatim (never summarized, cleared or
        dropped), across restarts. ``index``: its place in the history, or a block of the
        preload as :meth:`compaction_entries` gives it. With persistence the pin is a line of
        ``pins.jsonl`` naming the block (role, timestamp, SHA-256 of its content; MEMORY.md is
        not changed); a memory-only conversation flags the entry (``"pinned": True``) only."""
        self._set_pin(index, "pin")

    def unpin(self, index: int | str | Mapping[str, Any]) -> None:
        """Undo :meth:`pin`: the next compaction treats the message as its strategy decides.
        ``index`` as for :meth:`pin`, or an entry :meth:`pinned` returned."""
        self._set_pin(index, "unpin")

    def pinned(self) -> list[dict[str, Any]]:
        """The pinned messages, in order: the history's entries flagged ``"pinned"`` (the
        entries themselves) and the preload's pinned blocks (as :meth:`compaction_entries`
        gives them)."""
        with self._lock:
            out: list[dict[str, Any]] = []
            for entry in self.conversation_history:
                if entry_kind(entry) is EntryKind.PRELOAD and entry.get("pins"):
                    out += [e for e in _preloaded_entries(entry) if e.get("pinned")]
                elif entry.get("pinned"):
                    out.append(entry)
            return out

    def _set_pin(self, index: int | str | Mapping[str, Any], action: PinAction) -> None:
        with self._lock:
            if isinstance(index, Mapping):
                entry = next((e for e in self.conversation_history if e is index), None)
                if entry is None:
                    self._pin_preloaded(index, action)
                    return
            else:
                entry = self.conversation_history[self._position(index, action)]
            kind = entry_kind(entry)
            if kind not in (EntryKind.MESSAGE, EntryKind.SUMMARY):
                what = "an unknown kind" if kind is None else f"kind {kind.value!r}"
                raise InvalidSetting(
                    f"{action}({index!r}): that entry is of {what}, not a message; pin a "
                    "message by its index, or a block of the preload as "
                    f"compaction_entries() gives it: {action}(conv.compaction_entries("
                    "preload_as_messages=True)[i])"
                )
            self._record_pin(entry, action, self._now())

    def _pin_preloaded(self, block: Mapping[str, Any], action: PinAction) -> None:
        """Pin or unpin a block of the preload (an entry of :meth:`compaction_entries`)."""
        preload = next(iter(self.entries(EntryKind.PRELOAD)), None)
        key = None
        if preload is not None and {"role", "content", "timestamp"} <= block.keys():
            key = pin_key(str(block["role"]), str(block["timestamp"]), str(block["content"]))
        if preload is None or key is None or not preload_pins(str(preload["content"]), [key]):
            raise InvalidSetting(
                f"{action}(): the entry given is neither in conversation_history nor a block of "
                "its preload; give an index, or an entry of compaction_entries() or pinned()"
            )
        pins = _pins_of(preload)
        pins = pins | {key} if action == "pin" else pins - {key}
        preload["pins"] = sorted(pins)
        if self._store is not None and not self._suppress_memory_md:
            self._store.append_pin(pin_line(action, key, self._now()))

    def _record_pin(self, entry: dict[str, Any], action: PinAction, time: str | datetime) -> None:
        """Flag ``entry`` (or not) and, when it is a block of MEMORY.md, append the pin to
        ``pins.jsonl``: the block's role, timestamp and content as written (redacted)."""
        if action == "pin":
            entry["pinned"] = True
        else:
            entry.pop("pinned", None)
        if self._store is None or self._entry_block(entry) is None:
            return  # in memory only: the flag is the pin
        summary = entry_kind(entry) is EntryKind.SUMMARY
        text = self._disk_text(fmt.content_to_text(entry.get("content")), summary=summary)
        key = pin_key(redact_role(str(entry["role"]), self.redactor), entry["timestamp"], text)
        self._store.append_pin(pin_line(action, key, time))

    # -- compaction -----------------------------------------------------------------------------

    def begin_compaction(self) -> CompactionTicket:
        """Mark what a summary will replace; messages added after this are carried over."""
        with self._lock:
            snapshot = self._store.snapshot() if self._store is not None else None
            return CompactionTicket(snapshot, len(self.conversation_history), self._now())

    def compaction_entries(
        self, ticket: CompactionTicket | None = None, *, preload_as_messages: bool = False
    ) -> list[dict[str, Any]]:
        """What a compaction works on: the entries before ``ticket`` (the whole history without
        one) that are not the static context, in order: what the summary strategy summarizes.

        With ``preload_as_messages`` a preload entry is replaced by the blocks it holds (its
        messages and summary, each an entry stamped with its heading's timestamp), so that a
        strategy keeping messages verbatim keeps them one by one, as the file holds them; a
        preload that holds pinned blocks always is, its pinned blocks flagged ``"pinned"``.
        """
        with self._lock:
            end = len(self.conversation_history) if ticket is None else ticket.history_length
            out: list[dict[str, Any]] = []
            for entry in self.conversation_history[:end]:
                kind = entry_kind(entry)
                if kind is EntryKind.STATIC:
                    continue
                if kind is EntryKind.PRELOAD and (preload_as_messages or entry.get("pins")):
                    out += _preloaded_entries(entry)
                else:
                    out.append(entry)
            return out

    def compact(
        self,
        summary: str | None,
        summary_role: str = "System",
        *,
        ticket: CompactionTicket | None = None,
        kept: KeptEntries | None = None,
        **event_fields: Any,
    ) -> CompactionEvent:
        """Archive MEMORY.md, re-seed it and the history with ``summary`` (see the module doc).

        ``ticket`` (from :meth:`begin_compaction`, taken before a slow summarization) makes
        every message added since then survive, after the summary. ``event_fields`` (tokens,
        model, latency, the ``strategy`` record ...) go into the returned event and the
        ``compactions.jsonl`` record.

        ``kept``: the entries a strategy keeps (:mod:`memorylab.compress` strategies), after
        the summary and before what is carried over, in the history and as blocks of the new
        MEMORY.md; or a function of the archive's name (``None`` when nothing is archived)
        returning them, for entries that name the archive holding their original: it is
        called with the name the store chose. With ``kept`` the summary may be ``None`` (the
        file is re-seeded with the kept blocks alone); without it, today's compaction: the
        summary alone. The archive always holds the whole old file.

        A wrong argument (an unknown keyword, a record field of the wrong type) is an
        :class:`~memorylab.errors.InvalidSetting` and nothing is written.
        """
        _check_compact_arguments(summary_role, ticket, kept, event_fields)
        content: str | None = None
        if summary is not None and str(summary).strip():
            text = str(summary)
            content = text if text.startswith(SUMMARY_PREFIX) else f"{SUMMARY_PREFIX} {text}"
        elif kept is None:
            raise EmptySummary(
                "refusing to compact with an empty summary: memory was left unchanged"
            )
        with self._lock:
            ticket = ticket or self.begin_compaction()
            now = self._now()
            history = self.conversation_history
            message = EntryKind.MESSAGE
            carried = [e for e in history[ticket.history_length :] if entry_kind(e) is message]
            static = self.entries(EntryKind.STATIC)
            head: list[dict[str, Any]] = []
            if content is not None:
                head.append(
                    {
                        "role": summary_role,
                        "content": content,
                        "timestamp": fmt.format_timestamp(now),
                        "kind": EntryKind.SUMMARY.value,
                    }
                )

            def reseeded(archive: str | None) -> list[dict[str, Any]]:
                """What follows the static context: the summary, then the kept entries."""
                if kept is None:
                    return list(head)
                if callable(kept):
                    chosen = kept(archive)
                    _check_kept(chosen, "what kept() returned")
                else:
                    chosen = kept
                return [*head, *(dict(e) for e in chosen)]

            base: dict[str, Any] = {
                "time": now,
                "agent": self.agent_name,
                "summary_chars": 0 if content is None else len(content),
                "messages_archived": sum(
                    1 for e in history[: ticket.history_length] if entry_kind(e) is message
                ),
                "carried_over": len(carried),
            }

            def event_for(archive: str | None) -> CompactionEvent:
                fields = dict(base)
                if self.token_counter is not None:
                    count = self.token_counter
                    fields["summary_tokens"] = self.request_tokens(head[0], count) if head else 0
                    after = [*static, *reseeded(archive), *carried]
                    fields["tokens_after"] = sum(self.request_tokens(e, count) for e in after) + (
                        self.fixed_request_tokens if after else 0
                    )
                fields.update(event_fields)
                return CompactionEvent(**fields)

            archive: str | None = None
            deleted: set[str] = set()
            if self._store is not None and ticket.snapshot is not None:
                redactor = self.redactor

                def body(name: str | None) -> bytes:
                    blocks = (self._kept_block(e, now) for e in reseeded(name))
                    return encode_utf8("".join(b for b in blocks if b is not None))

                def record(result: CompactionResult) -> dict[str, Any]:
                    line = replace(
                        event_for(result.archive),
                        archive=result.archive,
                        messages_archived=result.messages_archived,
                        carried_over=result.carried_over,
                    ).to_dict()
                    if redactor is not None:  # error texts and extra fields may quote content
                        line = {
                            k: v if k in IDENTIFYING_FIELDS else redact_values(v, redactor)
                            for k, v in line.items()
                        }
                    return line

                # Rendered now, so that what cannot be stored (a lone surrogate) changes nothing;
                # blocks naming the archive are rendered again with the name the store chose.
                first = body(fmt.archive_name(now))
                result = self._store.rewrite(
                    ticket.snapshot,
                    body if callable(kept) else first,
                    conversation_name=self.name,
                    now=now,
                    record=record,
                )
                event = CompactionEvent.from_dict(record(result))
                archive = result.archive
                if self.retention is not None:
                    deleted = self._apply_retention(now)
            else:
                archive = None if self.archive_namer is None else self.archive_namer(now)
                event = event_for(archive)
            self.conversation_history = [*static, *reseeded(archive), *carried]
            if deleted:  # what the history says of the archives retention just deleted
                for entry in self.conversation_history:
                    if isinstance(entry.get("content"), str):
                        entry["content"] = _note_gone_archives(
                            entry["content"], deleted.__contains__
                        )
                self._forget_rendering()
            return event

    def _kept_block(self, entry: Mapping[str, Any], now: datetime) -> str | None:
        """The block an entry of the re-seeded history is in the new MEMORY.md: as it was
        appended (its role, timestamp and content, redacted), stamped ``now`` when it has no
        timestamp a heading can hold; ``None`` for blank content or a role no heading can hold
        (kept in the history only, like such entries when they are added)."""
        stamp = entry.get("timestamp")
        try:
            fmt.parse_timestamp(stamp if isinstance(stamp, str) else "")
        except ValueError:
            stamp = fmt.format_timestamp(now)
        summary = entry_kind(entry) is EntryKind.SUMMARY
        role, content = str(entry["role"]), entry.get("content")
        try:
            return self._block(role, str(stamp), content, summary=summary)
        except ValueError:
            return None

    def _apply_retention(self, now: datetime) -> set[str]:
        """Apply the retention policy after a compaction; the archives it deleted."""
        assert self._store is not None and self.retention is not None
        try:
            deleted = self._store.apply_retention(self.retention, now=now, agent=self.agent_name)
        except OSError as exc:  # the compaction itself is done: report, retry next time
            logger.warning(
                "memorylab: retention (%s) after compacting %s failed: %s; the old archives "
                "stay until the next compaction",
                self.retention,
                self._store.path,
                exc,
            )
            return set()
        if deleted:
            logger.info("memorylab: retention (%s) deleted %s", self.retention, ", ".join(deleted))
        return set(deleted)

    # -- edits: update, delete, clear -----------------------------------------------------------

    def update(self, index: int | str, role: str, content: Any) -> None:
        """Replace the role and content of the entry at ``index``; its other fields (its
        timestamp among them) stay.

        An entry that is a block of MEMORY.md is changed there too, by the compaction's
        crash-ordered path (:meth:`MemoryStore.edit`): the old file is archived, then replaced
        atomically, so the old text stays in ``archive/`` and blocks other writers append
        meanwhile are kept. The static context and the preload are not blocks of the file:
        editing them changes this history only. An index outside the history is an
        ``IndexError`` (the reference logs a warning and does nothing).
        """
        fmt.validate_role(role)
        with self._lock:
            position = self._position(index, "update")
            entry = self.conversation_history[position]
            block = self._entry_block(entry)
            if block is not None:
                new = self._block(role, entry["timestamp"], content,
                                  summary=entry_kind(entry) is EntryKind.SUMMARY)  # fmt: skip
                self._edit_block(position, block, "" if new is None else new, "update")
            entry["role"] = role
            entry["content"] = content
            if entry.get("pinned"):  # the edited block is the one pinned now
                self._record_pin(entry, "pin", self._now())
            if "token_count" in entry:  # token_count=True: the entry's own count follows it
                entry["token_count"] = self.request_tokens(entry)
            self._forget_rendering()

    def delete(self, index: int | str) -> None:
        """Remove the entry at ``index`` (negative counts from the end, as for a list); a block
        of MEMORY.md is removed from the file as :meth:`update` changes one (archived first).
        An index outside the history is an ``IndexError``."""
        with self._lock:
            position = self._position(index, "delete")
            block = self._entry_block(self.conversation_history[position])
            if block is not None:
                self._edit_block(position, block, "", "delete")
            del self.conversation_history[position]
            self._forget_rendering()

    def clear(self) -> None:
        """Empty the history, static context and preload included (as the reference does), and
        MEMORY.md: its blocks are archived and it starts again from a fresh header, so the next
        run preloads nothing. Blocks other writers added are in that archive too; nothing is
        destroyed (``memorylab forget`` deletes memory for good)."""
        with self._lock:
            self._edit_file(_without_messages, "clear", None)
            self.conversation_history = []

    def _position(self, index: object, method: str) -> int:
        """``index`` as a position in the history (``"3"`` too, as the reference takes it)."""
        position = history_index(index, method)
        size = len(self.conversation_history)
        if not -size <= position < size:
            raise IndexError(
                f"{method}({index!r}): no entry at that index; conversation_history has {size} "
                f"entries{f' (0 to {size - 1})' if size else ''}"
            )
        return position % size

    def _entry_block(self, entry: Mapping[str, Any]) -> str | None:
        """The block ``entry`` is in MEMORY.md if it was written there: a message or summary
        stamped by memorylab, with content, while persistence is on. ``None`` otherwise."""
        stamp = entry.get("timestamp")
        if (
            self._store is None
            or self._suppress_memory_md
            or entry_kind(entry) not in _ON_DISK_KINDS
            or not isinstance(stamp, str)
            or not fmt.written_by_memorylab(stamp)
        ):
            return None
        try:
            return self._block(str(entry["role"]), stamp, entry.get("content"),
                               summary=entry_kind(entry) is EntryKind.SUMMARY)  # fmt: skip
        except ValueError:  # a role loaded from a save file that no heading can hold
            return None

    def _edit_block(self, position: int, block: str, new: str, action: str) -> None:
        """Replace, in MEMORY.md, the block of the entry at ``position`` by ``new``."""
        history = self.conversation_history
        entry = history[position]
        occurrence = sum(  # identical blocks (same role, time and content) are told by order
            1
            for earlier in history[:position]
            if earlier.get("timestamp") == entry.get("timestamp")
            and earlier.get("role") == entry.get("role")
            and self._entry_block(earlier) == block
        )
        old, replacement = encode_utf8(block), encode_utf8(new)
        found = True

        def change(blocks: bytes) -> bytes | None:
            nonlocal found
            edited = _replace_block(blocks, old, replacement, occurrence)
            found = edited is not None
            return edited

        self._edit_file(change, action, position)
        if not found:
            logger.info(
                "memorylab: %s(%d): the message is no longer in %s (compacted or rewritten by "
                "another writer); only the history was changed",
                action,
                position,
                self.memory_md_path,
            )

    def _edit_file(
        self, change: Callable[[bytes], bytes | None], action: str, position: int | None
    ) -> None:
        """Apply ``change`` to the blocks of MEMORY.md (archived first: :meth:`MemoryStore.edit`)
        and record the edit in ``compactions.jsonl`` (kind ``"edit"``: never content)."""
        store = self._store
        if store is None or self._suppress_memory_md:
            return
        now = self._now()
        detail = {"edit": action} if position is None else {"edit": action, "index": position}

        def record(result: CompactionResult) -> dict[str, Any]:
            return CompactionEvent(
                time=now,
                agent=self.agent_name,
                archive=result.archive,
                messages_archived=result.messages_archived,
                carried_over=result.carried_over,
                kind="edit",
                extra=detail,
            ).to_dict()

        store.edit(change, conversation_name=self.name, now=now, record=record)

    # -- misc -----------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.conversation_history)

    def _repr_html_(self) -> str:
        return display.conversation_html(self)

    def __repr__(self) -> str:
        where = self.memory_md_path or "memory only"
        return f"Conversation(name={self.name!r}, messages={len(self)}, path={str(where)!r})"


def _preloaded_entries(entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The blocks a preload entry holds, as history entries (a summary with its kind; a block
    the entry's ``"pins"`` names flagged ``"pinned"``)."""
    text = fmt.content_to_text(entry.get("content")).removeprefix(PRELOAD_PREFIX)
    document = fmt.parse(text.removeprefix("\n"), strict=False).document
    pins = _pins_of(entry)
    out: list[dict[str, Any]] = []
    for m in document.messages:
        block: dict[str, Any] = {
            "role": m.role,
            "content": m.content,
            "timestamp": fmt.format_timestamp(m.timestamp),
        }
        if m.is_summary:
            block["kind"] = EntryKind.SUMMARY.value
        if pins and pin_key(m.role, m.timestamp, m.content) in pins:
            block["pinned"] = True
        out.append(block)
    return out


def _pins_of(entry: Mapping[str, Any]) -> set[PinKey]:
    """The pinned blocks a preload entry holds (its ``"pins"``: lists once saved as JSON)."""
    return {PinKey(*key) for key in entry.get("pins") or ()}


def _replace_block(blocks: bytes, old: bytes, new: bytes, occurrence: int) -> bytes | None:
    """``blocks`` with the ``occurrence``-th (from 0) block ``old`` replaced by ``new``; ``None``
    when there is no such block. A block starts at a line start."""
    start = seen = 0
    while (at := blocks.find(old, start)) >= 0:
        if at == 0 or blocks[at - 1 : at] == b"\n":
            if seen == occurrence:
                return blocks[:at] + new + blocks[at + len(old) :]
            seen += 1
        start = at + 1
    return None


def _without_messages(blocks: bytes) -> bytes | None:
    """What :meth:`Conversation.clear` leaves of the blocks: nothing (``None`` when there is
    no message to clear, so a file without messages is not rewritten)."""
    text = f"{fmt.TITLE_LINE}\n\n{fmt.LOG_LINE}\n\n" + blocks.decode("utf-8", errors="replace")
    return b"" if fmt.parse(text, strict=False).document.messages else None
