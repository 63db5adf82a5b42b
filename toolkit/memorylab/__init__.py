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
from memorylab.compress.scripted import ScriptedSummarizer
from memorylab.compress.summarizers import (
    LiteLLMSummarizer,
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
from memorylab.memory.format import FORMAT_VERSION, FormatProblem, render_memory
from memorylab.memory.format import parse as parse_memory
from memorylab.memory.paths import MemoryPaths, agent_paths, validate_agent_name
from memorylab.memory.records import ArchiveRef, CompactionEvent, MemoryDocument, Message
from memorylab.memory.redact import SECRETS, SECRETS_AND_PII, Redactor
from memorylab.memory.retention import RetentionPolicy
from memorylab.memory.store import MemoryStore, read_memory
from memorylab.privacy import (
    check_permissions,
    export_agent,
    forget,
    load_export,
    purge,
    warn_permissions,
)

# Names whose modules need pandas, matplotlib or ipywidgets: imported on first use, so that
# ``import memorylab`` stays fast.
_LAZY = {
    "memory_df": "memorylab.analysis",
    "compactions_df": "memorylab.analysis",
    "token_growth": "memorylab.analysis",
    "replay": "memorylab.analysis",
    "sweep": "memorylab.analysis",
    "plot_token_growth": "memorylab.analysis",
    "plot_sweep": "memorylab.analysis",
    "plot_compactions": "memorylab.analysis",
    "compare_summarizers": "memorylab.evaluate",
    "cases_from_transcripts": "memorylab.evaluate",
    "cases_from_workspace": "memorylab.evaluate",
    "MemoryExplorer": "memorylab.widgets",
    "ThresholdTuner": "memorylab.widgets",
    "SummarizerArena": "memorylab.widgets",
    "CompactionStepper": "memorylab.widgets",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'memorylab' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "Agent",
    "AgentNotFound",
    "ArchiveRef",
    "Backoff",
    "BudgetExceeded",
    "CompactionConflict",
    "CompactionEvent",
    "CompactionStepper",
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
    "MemoryExplorer",
    "MemoryFormatError",
    "MemoryPaths",
    "MemoryStore",
    "MemorylabError",
    "Message",
    "PrerequisiteError",
    "Redactor",
    "RetentionPolicy",
    "SECRETS",
    "SECRETS_AND_PII",
    "ScriptedSummarizer",
    "StoreError",
    "Summarizer",
    "SummarizerArena",
    "SummarizerAuthError",
    "SummarizerBadRequest",
    "SummarizerError",
    "SummarizerRateLimited",
    "SummarizerTimeout",
    "SummarizerUnavailable",
    "Summary",
    "ThresholdTuner",
    "TokenCounter",
    "UnsafePath",
    "__version__",
    "agent_paths",
    "cases_from_transcripts",
    "cases_from_workspace",
    "check_permissions",
    "compactions_df",
    "compare_summarizers",
    "count_tokens",
    "export_agent",
    "forget",
    "get_summarizer",
    "get_token_counter",
    "load_export",
    "memory_df",
    "parse_memory",
    "plot_compactions",
    "plot_sweep",
    "plot_token_growth",
    "purge",
    "read_memory",
    "render_memory",
    "replay",
    "resolve_workspace",
    "should_compress",
    "sweep",
    "token_growth",
    "trigger_tokens",
    "validate_agent_name",
    "validate_threshold",
    "warn_permissions",
]
