"""memorylab: persistent agent memory (swarms-compatible MEMORY.md) and tools to study it.

The public API is what ``__all__`` lists; everything else is internal. Heavy libraries
(litellm, pandas, matplotlib, ipywidgets) are imported only by the functions that need them, so
``import memorylab`` stays fast.
"""

from memorylab._version import __version__
from memorylab.agent import Agent
from memorylab.compress.compressor import ContextCompressor
from memorylab.compress.extractive import ExtractiveSummarizer
from memorylab.compress.policy import Backoff, should_compress, trigger_tokens, validate_threshold
from memorylab.compress.summarizers import (
    LiteLLMSummarizer,
    ScriptedSummarizer,
    Summarizer,
    Summary,
    get_summarizer,
)
from memorylab.compress.tokens import TokenCounter, count_tokens, get_token_counter
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
    "Agent",
    "AgentNotFound",
    "ArchiveRef",
    "Backoff",
    "BudgetExceeded",
    "CompactionConflict",
    "CompactionEvent",
    "CompactionTicket",
    "CompressionFailed",
    "ContextCompressor",
    "Conversation",
    "EmptySummary",
    "ExtractiveSummarizer",
    "FORMAT_VERSION",
    "FormatProblem",
    "InvalidAgentName",
    "InvalidSetting",
    "LiteLLMSummarizer",
    "LockTimeout",
    "MemoryDocument",
    "MemoryFormatError",
    "MemoryPaths",
    "MemoryStore",
    "MemorylabError",
    "Message",
    "PrerequisiteError",
    "ScriptedSummarizer",
    "StoreError",
    "Summarizer",
    "SummarizerAuthError",
    "SummarizerBadRequest",
    "SummarizerError",
    "SummarizerRateLimited",
    "SummarizerTimeout",
    "SummarizerUnavailable",
    "Summary",
    "TokenCounter",
    "UnsafePath",
    "__version__",
    "agent_paths",
    "count_tokens",
    "get_summarizer",
    "get_token_counter",
    "parse_memory",
    "read_memory",
    "render",
    "resolve_workspace",
    "should_compress",
    "trigger_tokens",
    "validate_agent_name",
    "validate_threshold",
]
