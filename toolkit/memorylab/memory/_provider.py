"""History entries as provider-ready chat messages (PURE: no I/O)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from memorylab.memory import format as fmt

_TOOL_ROLES = ("tool", "tool executor", "function", "tool result")


def provider_messages(history: Iterable[Mapping[str, Any]], user: str) -> list[dict[str, Any]]:
    """``{"role", "content"}`` messages for ``history`` (see ``Conversation.to_messages``).

    ``System`` rows become ``system``; ``user`` (and ``User``/``Human``) ``user``; rows with a
    ``tool_call_id`` ``tool``; other tool-ish roles a ``user`` row tagged with the role;
    everything else (the agent's own name) ``assistant``.
    """
    out: list[dict[str, Any]] = []
    user_roles = {user.lower(), "user", "human"}
    for entry in history:
        role = str(entry["role"])
        content = fmt.content_to_text(entry["content"])
        lowered = role.lower()
        message: dict[str, Any]
        if entry.get("tool_call_id"):
            message = {"role": "tool", "tool_call_id": entry["tool_call_id"], "content": content}
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
