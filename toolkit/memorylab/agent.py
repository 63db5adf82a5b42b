"""``Agent``: the seed's agent loop with persistent memory and context compression.

Each loop iteration first checks compression (``short_memory``'s tokens against
``compression_threshold * context_length``), then calls the model with
``short_memory.to_messages()`` — static context, the preloaded MEMORY.md, the conversation — and
records the reply. Tool calls in a reply are executed and their results recorded (they reach
MEMORY.md, like every message); the model is then called again within the same iteration, up to
``max_tool_rounds`` times. Compression is checked before every model call.

``max_loops`` is an int (that many iterations, ending early when a reply contains
``stop_token``) or ``"auto"`` (model calls until a reply uses no tool or says ``stop_token``, at
most ``auto_loop_cap`` calls).

Where the checks fall in the files: every model call's reply is recorded under ``agent_name``, so
a check ran after message ``i`` exactly when message ``i + 1`` is one of the agent's replies
(:func:`memorylab.compress._policy.check_points`): after the task, and after the tool results of
a reply that called tools (they land in the history, and in MEMORY.md, before the next check).
Each compaction records this (``checks: "model_call"``), the first message this process added
(``session_start``: a new ``Agent`` on an existing MEMORY.md is a restart, with a bounded
preload), ``preload_tokens``, ``preload_max_tokens`` and ``preload_omitted`` in its ``extra``, so
that :mod:`memorylab.analysis` replays the run with the same check points and restarts.

Every model call leaves a :class:`~memorylab.memory._records.UsageRecord` (counts only: the
estimate of the input the trigger uses, what the provider reported, whether the check before it
compacted): in :attr:`Agent.usage_records`, and with persistent memory a line of ``usage.jsonl``
beside ``compactions.jsonl`` (written through the store, by the same rule).
:func:`memorylab.analysis.calibration_df` compares them. A trigger with ``count="reported"``
(:class:`~memorylab.compress._policy.Trigger`) counts the last reply's reported usage plus the
estimate of what was added since: the Agent gives the compressor that report
(:class:`~memorylab.compress._policy.ReportedUsage`).
"""

from __future__ import annotations

import json
import logging
import os
import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

from memorylab._names import moved
from memorylab.compress import _policy as policy
from memorylab.compress._compressor import AgentLike, ContextCompressor
from memorylab.compress._hooks import CompactionPreview
from memorylab.compress._strategy import Strategy
from memorylab.compress._summarizers import summarizer_names
from memorylab.compress._tokens import get_token_counter
from memorylab.errors import InvalidSetting, StoreError
from memorylab.llm import (
    ChatReply,
    RetryPolicy,
    chat,
    check_int,
    model_context_length,
    retry_policy,
)
from memorylab.memory import _format as fmt
from memorylab.memory._conversation import DEFAULT_PATH, Conversation
from memorylab.memory._records import CompactionEvent, EntryKind, UsageRecord
from memorylab.tools import Tool, as_tools

logger = logging.getLogger("memorylab")

STOP_TOKEN = "<DONE>"
AUTO_LOOP_CAP = 25
CHECKS = "model_call"
"""Where the Agent checks compression: before every model call (recorded as ``checks``)."""


@dataclass(frozen=True, slots=True)
class _Call:
    """What the Agent knew of a model call before its reply (for its usage record)."""

    estimated_tokens: int
    tool_tokens: int
    checked_tokens: int | None
    compacted: bool


class Agent:
    """An LLM agent whose memory persists in ``$WORKSPACE_DIR/agents/{agent_name}/MEMORY.md``.

    Args:
        agent_name: the agent's name: the folder of its memory and the role of its replies.
        model_name: the litellm model the agent calls.
        system_prompt: static context sent first on every call (never compressed).
        rules: more static context, after the system prompt.
        max_loops: iterations per :meth:`run` (ending early at ``stop_token``), or ``"auto"``:
            model calls until a reply uses no tool or says ``stop_token``.
        context_compression: check compression before every model call.
        context_length: the window compression is measured against; ``None``: litellm's
            ``max_input_tokens`` for ``model_name``, else
            :data:`memorylab.llm.DEFAULT_CONTEXT_LENGTH` (8192).
        compression_threshold: a fraction of ``context_length`` (float) or a token count (int),
            or a :class:`~memorylab.compress._policy.Trigger` (a fraction, a token count and a
            message count: any fires).
        summarizer_model: ``None`` summarizes with ``model_name`` (as the seed does); a
            summarizer name such as ``"memorylab/extractive"`` (offline) or another model.
        persistent_memory: keep MEMORY.md on disk (False: in the process only).
        workspace_dir: the workspace; ``None``: ``$WORKSPACE_DIR``, else ``./agent_workspace``.
        tools: plain functions (or :class:`~memorylab.tools.Tool`) the model may call; a
            :func:`~memorylab.tools.recall_tool` made without a source or an agent searches
            this agent's own archives.
        llm_args: go to ``litellm.completion`` unchanged (``mock_response``, ``api_base``,
            ``api_key`` ...) for the agent's calls, and for the summarizer's when it is a model.
        custom_rules_prompt: more static context (skills), after the rules.
        preload_max_tokens: the most MEMORY.md may take when preloaded; default a quarter of
            the window and at most half of the compression trigger
            (:func:`~memorylab.compress._policy.default_preload_max_tokens`); ``None``: no bound.
        temperature: the model's temperature (``None``: the provider's default).
        max_tokens: the most tokens of one reply (``None``: the provider's default).
        retry: timeout and retries of each model call (default ``RetryPolicy()``: 60 s, 2
            retries).
        timeout: shortcut that replaces ``retry.timeout``; also the summarizer's timeout.
        retries: shortcut that replaces ``retry.retries``.
        max_tool_rounds: model calls per iteration that may follow tool results.
        auto_loop_cap: the most model calls of a ``max_loops="auto"`` run.
        stop_token: a reply containing it ends the run.
        user_name: the role of the task in the history.
        tool_role: the role of tool results in the history.
        durable: ``fsync`` every append (slower; survives a power loss, not just a crash).
        completion: replaces :func:`memorylab.llm.chat` (a function returning a
            :class:`~memorylab.llm.ChatReply`), e.g. a scripted model for offline runs.
        clock: the time source of message timestamps (tests and generated data).
        strategy: what a compaction does with the history (docs/compression.md, Strategies):
            a :class:`~memorylab.compress._strategy.Strategy` or its name; default
            ``"summary"``, the seed's compaction. Given to the compressor.
        keep_turn: every compaction keeps the turn in progress verbatim (the last task and
            everything after it: docs/compression.md, "Keep the turn in progress"); ``False``:
            the seed's compaction, byte for byte. Given to the compressor.
        before_compaction: called with a :class:`~memorylab.compress.CompactionPreview` before
            each compaction (the plan, the facts that will leave the context); it may return
            positions of entries to keep too. Given to the compressor.
        after_compaction: called with each successful compaction's
            :class:`~memorylab.memory._records.CompactionEvent`. Given to the compressor.
        id: this instance's identifier, as the reference's ``Agent.id``: default a fresh
            ``agent-<32 hex digits>`` at each construction. It names the conversation
            (``<agent_name>_id_<id>_conversation``, the header of a MEMORY.md this agent
            creates); the memory folder is keyed on ``agent_name``, never on ``id``, so a new
            process resumes the same memory.
    """

    def __init__(
        self,
        agent_name: str = "Agent",
        model_name: str = "gpt-4o-mini",
        system_prompt: str | None = None,
        rules: str | None = None,
        max_loops: int | Literal["auto"] = 1,
        context_compression: bool = True,
        context_length: int | None = None,
        compression_threshold: policy.Threshold | policy.Trigger = policy.DEFAULT_THRESHOLD,
        summarizer_model: str | None = None,
        persistent_memory: bool = True,
        workspace_dir: str | os.PathLike[str] | None = None,
        tools: Sequence[Callable[..., Any] | Tool] | None = None,
        llm_args: Mapping[str, Any] | None = None,
        *,
        custom_rules_prompt: str | None = None,
        preload_max_tokens: int | policy.DefaultPreload | None = policy.DEFAULT_PRELOAD,
        temperature: float | None = None,
        max_tokens: int | None = None,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
        retries: int | None = None,
        max_tool_rounds: int = 8,
        auto_loop_cap: int = AUTO_LOOP_CAP,
        stop_token: str = STOP_TOKEN,
        user_name: str = "User",
        tool_role: str = "Tool Executor",
        durable: bool = False,
        completion: Callable[..., ChatReply] | None = None,
        clock: Callable[[], datetime] | None = None,
        strategy: Strategy | str | None = None,
        id: str | None = None,  # the reference's keyword
        keep_turn: bool = True,
        before_compaction: Callable[[CompactionPreview], Iterable[int] | None] | None = None,
        after_compaction: Callable[[CompactionEvent], object] | None = None,
    ) -> None:
        self.agent_name = agent_name
        self.id = _check_id(id)
        self.model_name = model_name
        self.max_loops = _check_loops(max_loops)
        self.context_compression = context_compression
        self.llm_args = dict(llm_args or {})
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.retry = retry_policy(retry, RetryPolicy(), timeout=timeout, retries=retries)
        self.max_tool_rounds = max_tool_rounds
        self.auto_loop_cap = auto_loop_cap
        self.stop_token = stop_token
        self.user_name = user_name
        self.tool_role = tool_role
        self.tools = as_tools(tools)
        self._completion = completion or chat
        self.context_length = (
            context_length if context_length is not None else model_context_length(model_name)
        )
        check_int("context_length", self.context_length, 1)
        self.token_counter = get_token_counter(model_name)
        threshold: policy.Threshold | policy.Trigger = (
            compression_threshold
            if isinstance(compression_threshold, policy.Trigger)
            else policy.validate_threshold(compression_threshold)
        )
        if preload_max_tokens is policy.DEFAULT_PRELOAD:
            preload_max_tokens = policy.default_preload_max_tokens(self.context_length, threshold)
        self.short_memory = Conversation(
            name=f"{agent_name}_id_{self.id}_conversation",
            system_prompt=system_prompt,
            rules=rules,
            custom_rules_prompt=custom_rules_prompt,
            agent_name=agent_name,
            workspace_dir=workspace_dir,
            memory_md_path=DEFAULT_PATH if persistent_memory else None,
            user=user_name,
            durable=durable,
            preload_max_tokens=preload_max_tokens,
            token_counter=self.token_counter,
            clock=clock,
        )
        self.tools = as_tools(tools, memory=self.short_memory)  # recall_tool(): its own memory
        self.context_compressor = ContextCompressor(
            threshold=threshold,
            summarizer_model=summarizer_model,
            summarizer_args=self._summarizer_options(summarizer_model),
            strategy=strategy,
            keep_turn=keep_turn,
            before_compaction=before_compaction,
            after_compaction=after_compaction,
        )
        self._session: dict[str, Any] | None = None
        self.usage_records: list[UsageRecord] = []
        """This process's model calls (:class:`~memorylab.memory._records.UsageRecord`), also
        written to ``usage.jsonl`` with persistent memory."""
        self._reported: policy.ReportedUsage | None = None
        self._call: _Call | None = None
        self._tool_tokens: tuple[str, int] = ("", 0)
        # every request carries the tool schemas: the trigger counts them, as the provider bills
        # them (set again at each call, with the tools it sends)
        self.short_memory.tool_tokens = self._count_tools([t.schema() for t in self.tools.values()])

    # The seed tunes the compressor by assigning ``agent._context_compressor``.
    @property
    def _context_compressor(self) -> ContextCompressor:
        return self.context_compressor

    @_context_compressor.setter
    def _context_compressor(self, value: ContextCompressor) -> None:
        # The seed's own snippet gives the new compressor a model name only: it calls that
        # model as the agent calls its own, unless it was given options of its own or a
        # summarizer object.
        if not value.summarizer_args and not value.has_summarizer:
            value.summarizer_args = self._summarizer_options(value.summarizer_model)
        self.context_compressor = value

    def _summarizer_options(self, summarizer_model: str | None) -> dict[str, Any]:
        """What the compressor's summarizer is given: a model (``None``: the agent's) is called
        as the agent calls its own (its llm_args: api_base, keys, mock_response; its timeout);
        a registered summarizer (``memorylab/extractive``) takes none of them."""
        if summarizer_model is not None and summarizer_model.strip() in summarizer_names():
            return {}
        return {"llm_args": self.llm_args, "timeout": self.retry.timeout}

    @property
    def compaction_events(self) -> list[CompactionEvent]:
        return self.context_compressor.events

    # -- the loop -------------------------------------------------------------------------------

    def check_compression(self, *, force: bool = False) -> CompactionEvent | None:
        """Compress now if the threshold is reached (and compression is on). A trigger with
        ``count="reported"`` counts from the last reply's reported usage."""
        session = self.session_record()
        if not self.context_compression and not force:
            return None
        event = self.context_compressor.compress(
            self.short_memory,
            self.context_length,
            force=force,
            default_model=self.model_name,
            extra=session,
            reported=self._reported,
        )
        if event is not None and event.ok:
            self._reported = None  # the report counted a history that is gone
        return event

    def session_record(self) -> dict[str, Any]:
        """What this process's compactions record about it (the module docstring): taken at
        the first check, when the history holds the preload and this process's first message."""
        if self._session is None:
            memory = self.short_memory
            first = next(iter(memory.entries(EntryKind.MESSAGE)), None)
            preload = next(iter(memory.entries(EntryKind.PRELOAD)), None)
            plan = memory.preload_plan
            preload_tokens = memory.request_tokens(preload) if preload else 0
            self._session = {
                "checks": CHECKS,
                "session_start": None if first is None else first["timestamp"],
                "preload_tokens": preload_tokens,
                "preload_max_tokens": memory.preload_max_tokens,
                "preload_omitted": 0 if plan is None else plan.omitted_messages,
            }
        return dict(self._session)

    def _call_model(self) -> ChatReply:
        tools = [t.schema() for t in self.tools.values()] or None
        self.short_memory.tool_tokens = self._count_tools(tools)  # the tools as this call sends
        event = self.check_compression()
        checked = self.context_compressor.last_counted if self.context_compression else None
        options: dict[str, Any] = dict(self.llm_args)
        for key, value in (("temperature", self.temperature), ("max_tokens", self.max_tokens)):
            if value is not None:
                options.setdefault(key, value)
        self._call = _Call(
            estimated_tokens=self.short_memory.token_count(),
            tool_tokens=self.short_memory.tool_tokens,
            checked_tokens=checked,
            compacted=event is not None and event.ok,
        )
        return self._completion(
            self.model_name,
            self.short_memory.to_messages(),
            tools=tools,
            retry=self.retry,
            **options,
        )

    def _count_tools(self, tools: Sequence[Mapping[str, Any]] | None) -> int:
        """The tool schemas sent with a call, counted as their JSON text (0 without tools)."""
        if not tools:
            return 0
        text = json.dumps(tools, ensure_ascii=False, sort_keys=True)
        if self._tool_tokens[0] != text:
            self._tool_tokens = (text, self.token_counter(text))
        return self._tool_tokens[1]

    def _record_usage(self, reply: ChatReply, entry: Mapping[str, Any]) -> None:
        """The call's :class:`UsageRecord` (``entry``: its reply in the history), kept and
        written to ``usage.jsonl``; and the report a trigger of the reported usage counts from
        next (:class:`~memorylab.compress._policy.ReportedUsage`): the input and the visible
        output (reasoning is not sent again) against the estimate with the reply, or the input
        alone against the estimate at the call."""
        call = self._call
        if call is None:
            return
        self._call = None
        record = UsageRecord(
            time=fmt.parse_timestamp(str(entry["timestamp"])),
            agent=self.agent_name,
            session_start=self.session_record()["session_start"],
            call=len(self.usage_records) + 1,
            model=reply.model or self.model_name,
            estimated_tokens=call.estimated_tokens,
            tool_tokens=call.tool_tokens,
            checked_tokens=call.checked_tokens,
            compacted=call.compacted,
            input_tokens=reply.input_tokens,
            output_tokens=reply.output_tokens,
            cached_tokens=reply.cached_tokens,
            cache_write_tokens=reply.cache_write_tokens,
            reasoning_tokens=reply.reasoning_tokens,
            latency_s=round(reply.latency_s, 6),
            cost_usd=reply.cost_usd,
        )
        self.usage_records.append(record)
        store = self.short_memory.store
        if store is not None:
            try:
                store.append_usage(record.to_dict())
            except (StoreError, OSError) as error:  # an audit line: the run goes on
                logger.warning("memorylab: usage.jsonl not written (%s); kept in memory", error)
        self._reported = None
        if reply.input_tokens is not None and reply.output_tokens is not None:
            visible = max(0, reply.output_tokens - (reply.reasoning_tokens or 0))
            self._reported = policy.ReportedUsage(
                reply.input_tokens + visible, self.short_memory.token_count()
            )
        elif reply.input_tokens is not None:
            self._reported = policy.ReportedUsage(reply.input_tokens, call.estimated_tokens)

    def _record_reply(self, reply: ChatReply) -> None:
        if not reply.tool_calls:
            entry = self.short_memory.add(self.agent_name, reply.content)
            self._record_usage(reply, entry)
            return
        calls = "; ".join(f"{c['name']}({c['arguments']})" for c in reply.tool_calls)
        text = reply.content or f"Calling tools: {calls}"
        openai_calls = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]},
            }
            for c in reply.tool_calls
        ]
        entry = self.short_memory.add(self.agent_name, text, tool_calls=openai_calls)
        self._record_usage(reply, entry)
        for call in reply.tool_calls:
            tool = self.tools.get(call["name"])
            result = (
                tool.call(call["arguments"])
                if tool is not None
                else f"Error: no tool named {call['name']!r}; available: {sorted(self.tools)}"
            )
            self.short_memory.add(self.tool_role, result, tool_call_id=call["id"])

    def _iteration(self, max_rounds: int) -> str:
        """Model calls until a reply without tool calls (at most ``max_rounds`` calls)."""
        text = ""
        for _ in range(max_rounds):
            reply = self._call_model()
            self._record_reply(reply)
            text = reply.content
            if not reply.tool_calls or (self.stop_token and self.stop_token in text):
                break
        return text

    def run(
        self, task: str, max_loops: int | Literal["auto"] | None = None, *, pin: bool = False
    ) -> str:
        """Add ``task`` and run the loop; returns the last reply's text. ``pin``: the task is
        pinned (``Conversation.add(..., pinned=True)``), kept verbatim by every compaction."""
        loops = self.max_loops if max_loops is None else _check_loops(max_loops)
        if not isinstance(pin, bool):
            raise InvalidSetting(f"run(pin=...) must be True or False, not {pin!r}")
        self.short_memory.add(self.user_name, task, pinned=pin)
        if loops == "auto":  # until the model stops using tools or says it is done
            return self._iteration(self.auto_loop_cap)
        text = ""
        for _ in range(loops):
            text = self._iteration(self.max_tool_rounds + 1)
            if self.stop_token and self.stop_token in text:
                break
        return text

    def __repr__(self) -> str:
        return (
            f"Agent(agent_name={self.agent_name!r}, model_name={self.model_name!r}, "
            f"context_length={self.context_length}, memory={self.short_memory.memory_md_path})"
        )


def _check_id(value: object) -> str:
    """``id`` as given, or a fresh one shaped as the reference's (``agent-`` + 32 hex digits)."""
    if value is None:
        return f"agent-{secrets.token_hex(16)}"
    if not isinstance(value, str) or not value.strip() or not value.isprintable():
        raise InvalidSetting(
            f"Agent(id=...) must be a non-empty line of printable text, not {value!r}; "
            "leave it out for a fresh one"
        )
    return value


def _check_loops(value: object) -> int | Literal["auto"]:
    if value == "auto":
        return "auto"
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidSetting(f"max_loops must be an int >= 1 or 'auto', not {value!r}")
    return value


if TYPE_CHECKING:  # the Agent is what memorylab reads of an agent (mypy checks it here)
    _AGENT_LIKE: type[AgentLike] = Agent

__all__ = [
    "AUTO_LOOP_CAP",
    "Agent",
    "CHECKS",
    "STOP_TOKEN",
]

__getattr__ = moved(__name__, {"default_preload_max_tokens": "memorylab.compress"})
