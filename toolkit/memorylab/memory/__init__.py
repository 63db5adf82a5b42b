"""The memory core: records, the MEMORY.md format, the store that writes it, the Conversation.

Floors, bottom up: :mod:`~memorylab.memory._records` (frozen values) and
:mod:`~memorylab.memory._format` (the pure renderer and parser) know nothing of files;
:mod:`~memorylab.memory._store` is the only module that writes memory files; the
:class:`Conversation` keeps the history in memory and writes it through the store;
:mod:`~memorylab.memory._recall` searches the archives (:func:`recall`);
:mod:`~memorylab.memory._request` is the one rule of what the model is sent and its tokens
(:func:`request_message`, :func:`message_tokens`); :mod:`~memorylab.memory._pins` says which
blocks are pinned (``pins.jsonl``: :class:`PinKey`, :func:`pin_key`, :func:`pinned_keys`).
:mod:`~memorylab.memory._display` holds the rich notebook views of these values (importing this
package registers them).
"""

from memorylab.memory import _display  # noqa: F401  (registers the records' HTML views)
from memorylab.memory._conversation import CompactionTicket, Conversation
from memorylab.memory._format import (
    FORMAT_VERSION,
    FormatProblem,
    ParseResult,
    block_text,
    render_header,
    render_memory,
)
from memorylab.memory._format import parse as parse_memory
from memorylab.memory._paths import MemoryPaths, agent_paths, validate_agent_name
from memorylab.memory._permissions import check_permissions, warn_permissions
from memorylab.memory._pins import PinKey, pin_key, pinned_keys
from memorylab.memory._recall import (
    IndexUpdate,
    RecalledMessage,
    format_recalled,
    recall,
    recall_context,
    recall_df,
    recall_messages,
    update_recall_index,
)
from memorylab.memory._records import (
    ArchiveRef,
    CompactionEvent,
    EntryKind,
    MemoryDocument,
    Message,
)
from memorylab.memory._redact import SECRETS, SECRETS_AND_PII, Redactor, redact_role
from memorylab.memory._request import (
    MESSAGE_TOKENS,
    REPLY_TOKENS,
    message_tokens,
    request_message,
)
from memorylab.memory._retention import RetentionPolicy
from memorylab.memory._store import MemoryStore, read_memory

__all__ = [
    "ArchiveRef",
    "CompactionEvent",
    "CompactionTicket",
    "Conversation",
    "EntryKind",
    "FORMAT_VERSION",
    "FormatProblem",
    "IndexUpdate",
    "MESSAGE_TOKENS",
    "MemoryDocument",
    "MemoryPaths",
    "MemoryStore",
    "Message",
    "ParseResult",
    "PinKey",
    "REPLY_TOKENS",
    "RecalledMessage",
    "Redactor",
    "RetentionPolicy",
    "SECRETS",
    "SECRETS_AND_PII",
    "agent_paths",
    "block_text",
    "check_permissions",
    "format_recalled",
    "message_tokens",
    "parse_memory",
    "pin_key",
    "pinned_keys",
    "read_memory",
    "recall",
    "recall_context",
    "recall_df",
    "recall_messages",
    "redact_role",
    "render_header",
    "render_memory",
    "request_message",
    "update_recall_index",
    "validate_agent_name",
    "warn_permissions",
]
