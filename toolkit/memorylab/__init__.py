"""memorylab: persistent agent memory (swarms-compatible MEMORY.md) and tools to study it.

The public API is what ``__all__`` lists; everything else is internal. Heavy libraries
(litellm, pandas, matplotlib, ipywidgets) are imported only by the functions that need them, so
``import memorylab`` stays fast.
"""

from memorylab._version import __version__
from memorylab.config import resolve_workspace
from memorylab.errors import (
    AgentNotFound,
    BudgetExceeded,
    CompactionConflict,
    CompressionFailed,
    EmptySummary,
    InvalidAgentName,
    InvalidSetting,
    LockTimeout,
    MemoryFormatError,
    MemorylabError,
    PrerequisiteError,
    StoreError,
    SummarizerAuthError,
    SummarizerBadRequest,
    SummarizerError,
    SummarizerRateLimited,
    SummarizerTimeout,
    SummarizerUnavailable,
    UnsafePath,
)
from memorylab.memory.conversation import CompactionTicket, Conversation
from memorylab.memory.format import FORMAT_VERSION, FormatProblem, render
from memorylab.memory.format import parse as parse_memory
from memorylab.memory.paths import MemoryPaths, agent_paths, validate_agent_name
from memorylab.memory.records import ArchiveRef, CompactionEvent, MemoryDocument, Message
from memorylab.memory.store import MemoryStore, read_memory

__all__ = [
    "AgentNotFound",
    "ArchiveRef",
    "BudgetExceeded",
    "CompactionConflict",
    "CompactionEvent",
    "CompactionTicket",
    "CompressionFailed",
    "Conversation",
    "EmptySummary",
    "FORMAT_VERSION",
    "FormatProblem",
    "InvalidAgentName",
    "InvalidSetting",
    "LockTimeout",
    "MemoryDocument",
    "MemoryFormatError",
    "MemoryPaths",
    "MemoryStore",
    "MemorylabError",
    "Message",
    "PrerequisiteError",
    "StoreError",
    "SummarizerAuthError",
    "SummarizerBadRequest",
    "SummarizerError",
    "SummarizerRateLimited",
    "SummarizerTimeout",
    "SummarizerUnavailable",
    "UnsafePath",
    "__version__",
    "agent_paths",
    "parse_memory",
    "read_memory",
    "render",
    "resolve_workspace",
    "validate_agent_name",
]
