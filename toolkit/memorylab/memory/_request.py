"""What the model is sent: a history entry as a provider message, and its tokens (PURE).

One rule for the :class:`~memorylab.Conversation`'s :meth:`~memorylab.Conversation.to_messages`
(what the :class:`~memorylab.Agent` sends), its :meth:`~memorylab.Conversation.token_count` (what
the compression trigger compares) and the lab's growth curves, replays and sweeps, so that the
trigger counts exactly what the request carries.

The tokens of a request follow OpenAI's documented count of a chat request (the cookbook's
``num_tokens_from_messages``, which litellm's ``token_counter`` follows too): each message costs
:data:`MESSAGE_TOKENS` (``<|start|>{role}<|message|>`` ... ``<|end|>``) plus the tokens of its
text fields (the role, the content, a ``tool_call_id``); the request costs
:data:`REPLY_TOKENS` more (the reply is primed with ``<|start|>assistant<|message|>``).

An assistant message's ``tool_calls`` are not counted: the documented rule counts text fields
only, and MEMORY.md keeps no tool call (only the reply's text, and each result under the tool's
role), so a count of them could not be replayed from the files. For the same reason a tool
result is counted as a ``tool`` message of its content alone (``counted=True``), whether it is
sent with its ``tool_call_id`` (live) or, read back from a file that kept only its role, as a
``user`` message tagged with the role: the live count and the replay's are the same, a few
tokens (the call's id) under what a provider bills for each result. Where a model writes no text
with its calls, the Agent's reply text names them (``Calling tools: name(arguments)``) and is
counted; otherwise a provider bills a few tokens more per call than this count (the calibration
of ``usage.jsonl`` shows it: :func:`memorylab.analysis.calibration_df`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from memorylab.memory import _format as fmt
from memorylab.memory._records import (
    TOOL_ROLES,
    EntryKind,
    entry_kind,
    is_tool_result,
    is_user_message,
)

MESSAGE_TOKENS = 3
"""Tokens every message of a request costs beyond its fields (OpenAI's chat format)."""

REPLY_TOKENS = 3
"""Tokens every request costs beyond its messages: the priming of the reply."""


def request_message(
    entry: Mapping[str, Any], *, user: str = "User", stamped: bool = True, counted: bool = False
) -> dict[str, Any]:
    """``entry`` (a history entry) as the provider message it is sent as.

    ``System`` becomes ``system``; ``user`` (the user's role name), ``User`` and ``Human``
    ``user``; an entry with a ``tool_call_id`` (in the entry or its ``metadata``) ``tool``; other
    tool roles (:data:`~memorylab.memory._records.TOOL_ROLES`) a ``user`` message tagged with
    the role; everything else (the agent's own name) ``assistant``, with its ``tool_calls``.
    With ``stamped`` a user turn of the conversation (not the static context, a preload or a
    summary) starts with its timestamp, ``[<timestamp>] <content>``. ``counted``: the message
    as it is counted (the module docstring: a tool result is a ``tool`` message of its content).

    >>> request_message({"role": "User", "content": "hi", "timestamp": "2026-04-20T09:00:00Z"})
    {'role': 'user', 'content': '[2026-04-20T09:00:00Z] hi'}
    >>> request_message({"role": "Tool Executor", "content": "42"})
    {'role': 'user', 'content': '[Tool Executor]\\n42'}
    """
    role = str(entry["role"])
    content = fmt.content_to_text(entry["content"])
    lowered = role.lower()
    fields: Mapping[str, Any] = entry
    if "metadata" in entry and isinstance(entry["metadata"], Mapping):
        fields = {**entry["metadata"], **entry}
    if counted and is_tool_result(entry):
        return {"role": "tool", "content": content}
    if fields.get("tool_call_id"):
        return {"role": "tool", "tool_call_id": fields["tool_call_id"], "content": content}
    if lowered == "system":
        return {"role": "system", "content": content}
    if is_user_message({"role": role}, user):
        stamp = entry.get("timestamp") if stamped else None
        if stamp and entry_kind(entry) is EntryKind.MESSAGE:
            content = f"[{stamp}] {content}"
        return {"role": "user", "content": content}
    if lowered in TOOL_ROLES:
        return {"role": "user", "content": f"[{role}]\n{content}"}
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if fields.get("tool_calls"):
        message["tool_calls"] = fields["tool_calls"]
    return message


def message_tokens(
    message: Mapping[str, Any], counter: Callable[[str], int], content_tokens: int | None = None
) -> int:
    """Tokens ``message`` (a provider message) costs in a request, counted by ``counter``
    (the module docstring); ``content_tokens``: its content's count, when the caller counted
    the contents in a batch.

    >>> message_tokens({"role": "user", "content": "hello world"}, lambda text: len(text.split()))
    6
    """
    tokens = MESSAGE_TOKENS
    for key, value in message.items():
        if key == "content":
            counted = content_tokens
            tokens += counter(fmt.content_to_text(value)) if counted is None else counted
        elif isinstance(value, str):  # the role, a tool_call_id (tool_calls: the docstring)
            tokens += counter(value)
    return tokens
