"""The memory core: records, the MEMORY.md format, the store that writes it, the Conversation.

Floors, bottom up: :mod:`~memorylab.memory.records` (frozen values) and
:mod:`~memorylab.memory.format` (the pure renderer and parser) know nothing of files;
:mod:`~memorylab.memory.store` is the only module that writes memory files; the
:class:`Conversation` keeps the history in memory and writes it through the store;
:mod:`~memorylab.memory.recall` searches the archives (:func:`recall`).
:mod:`~memorylab.memory.display` holds the rich notebook views of these values (importing this
package registers them).
"""

from memorylab.memory import display  # noqa: F401  (registers the records' HTML views)
from memorylab.memory.conversation import CompactionTicket, Conversation
from memorylab.memory.format import FORMAT_VERSION, FormatProblem, ParseResult, render_memory
from memorylab.memory.format import parse as parse_memory
from memorylab.memory.paths import MemoryPaths, agent_paths, validate_agent_name
from memorylab.memory.permissions import check_permissions, warn_permissions
from memorylab.memory.recall import (
    IndexUpdate,
    RecalledMessage,
    format_recalled,
    recall,
    recall_context,
    recall_df,
    recall_messages,
    update_recall_index,
)
from memorylab.memory.records import ArchiveRef, CompactionEvent, MemoryDocument, Message
from memorylab.memory.redact import SECRETS, SECRETS_AND_PII, Redactor
from memorylab.memory.retention import RetentionPolicy
from memorylab.memory.store import MemoryStore, read_memory

__all__ = [
    "ArchiveRef",
    "CompactionEvent",
    "CompactionTicket",
    "Conversation",
    "FORMAT_VERSION",
    "FormatProblem",
    "IndexUpdate",
    "MemoryDocument",
    "MemoryPaths",
    "MemoryStore",
    "Message",
    "ParseResult",
    "RecalledMessage",
    "Redactor",
    "RetentionPolicy",
    "SECRETS",
    "SECRETS_AND_PII",
    "agent_paths",
    "check_permissions",
    "format_recalled",
    "parse_memory",
    "read_memory",
    "recall",
    "recall_context",
    "recall_df",
    "recall_messages",
    "render_memory",
    "update_recall_index",
    "validate_agent_name",
    "warn_permissions",
]
