"""memorylab: persistent agent memory (swarms-compatible MEMORY.md) and tools to study it.

The top level holds the seed's nouns and the verbs a notebook starts with; everything else lives
in a subpackage with its own ``__all__``: :mod:`memorylab.memory` (records, format, store),
:mod:`memorylab.compress` (tokens, thresholds, summarizers), :mod:`memorylab.llm` (the gateway to
LLM providers), :mod:`memorylab.analysis`, :mod:`memorylab.evaluate`, :mod:`memorylab.widgets`,
:mod:`memorylab.privacy`, and the exceptions in :mod:`memorylab.errors`. Heavy libraries
(litellm, pandas, matplotlib, ipywidgets) are imported only by the functions that need them, so
``import memorylab`` stays fast.
"""

import importlib
import warnings

from memorylab import _names
from memorylab._version import __version__
from memorylab.agent import Agent
from memorylab.compress import ContextCompressor, LiteLLMSummarizer, Summarizer, get_summarizer
from memorylab.memory import (
    CompactionEvent,
    Conversation,
    MemoryDocument,
    Message,
    RetentionPolicy,
    parse_memory,
    read_memory,
    render_memory,
)

# Names whose modules need pandas or matplotlib: imported on first use.
_LAZY = {
    "compactions_df": "memorylab.analysis",
    "compare_summarizers": "memorylab.evaluate",
    "memory_df": "memorylab.analysis",
    "replay": "memorylab.analysis",
    "sweep": "memorylab.analysis",
    "token_growth": "memorylab.analysis",
}

# Names this package exported before 0.2, and where they live now (see CHANGELOG.md). They
# still work, with a DeprecationWarning naming the new import.
_MOVED = {
    **dict.fromkeys(
        (
            "AgentNotFound", "BudgetExceeded", "CompactionConflict", "CompressionFailed",
            "EmptySummary", "InvalidAgentName", "InvalidSetting", "LockTimeout",
            "MemoryFormatError", "MemorylabError", "PrerequisiteError", "StoreError",
            "SummarizerAuthError", "SummarizerBadRequest", "SummarizerError",
            "SummarizerRateLimited", "SummarizerTimeout", "SummarizerUnavailable", "UnsafePath",
        ),
        "memorylab.errors",
    ),
    **dict.fromkeys(
        (
            "ArchiveRef", "CompactionTicket", "FORMAT_VERSION", "FormatProblem", "MemoryPaths",
            "MemoryStore", "Redactor", "SECRETS", "SECRETS_AND_PII", "agent_paths",
            "validate_agent_name",
        ),
        "memorylab.memory",
    ),
    **dict.fromkeys(
        (
            "Backoff", "ExtractiveSummarizer", "ScriptedSummarizer", "Summary", "TokenCounter",
            "count_tokens", "get_token_counter", "should_compress", "trigger_tokens",
            "validate_threshold",
        ),
        "memorylab.compress",
    ),
    **dict.fromkeys(("plot_compactions", "plot_sweep", "plot_token_growth"), "memorylab.analysis"),
    **dict.fromkeys(("cases_from_transcripts", "cases_from_workspace"), "memorylab.evaluate"),
    **dict.fromkeys(
        ("CompactionStepper", "MemoryExplorer", "SummarizerArena", "ThresholdTuner"),
        "memorylab.widgets",
    ),
    **dict.fromkeys(
        (
            "check_permissions", "export_agent", "forget", "load_export", "purge",
            "warn_permissions",
        ),
        "memorylab.privacy",
    ),
    "resolve_workspace": "memorylab.config",
}  # fmt: skip
_RENAMED = {"render": "render_memory"}


_moved_getattr = _names.moved(__name__, _MOVED, stacklevel=3)
_names.keep_old_module_paths()


def __getattr__(name: str) -> object:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name in _RENAMED:
        warnings.warn(
            f"memorylab.{name} is now memorylab.{_RENAMED[name]}",
            DeprecationWarning,
            stacklevel=2,
        )
        return globals()[_RENAMED[name]]
    return _moved_getattr(name)


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "Agent",
    "CompactionEvent",
    "ContextCompressor",
    "Conversation",
    "LiteLLMSummarizer",
    "MemoryDocument",
    "Message",
    "RetentionPolicy",
    "Summarizer",
    "__version__",
    "compactions_df",
    "compare_summarizers",
    "get_summarizer",
    "memory_df",
    "parse_memory",
    "read_memory",
    "render_memory",
    "replay",
    "sweep",
    "token_growth",
]
