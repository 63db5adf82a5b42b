"""Deciding when to compress and summarizing: tokens, thresholds, summarizers, the compressor.

* :mod:`~memorylab.compress._tokens` — token counting that works offline.
* :mod:`~memorylab.compress._policy` — the threshold convention, :class:`Trigger` (its
  :class:`CacheTiming`: compactions deferred while the prompt cache is warm) and the back-off
  after failures.
* :mod:`~memorylab.compress._cache_model` — the prompt-cache model: the rules and prices that
  the cache-aware trigger decides by and the analysis floor measures with.
* :mod:`~memorylab.compress._base` — :class:`Summary`, the :class:`Summarizer` protocol and
  :class:`BaseSummarizer`; each strategy has its own module: :mod:`.litellm_summarizer`,
  :mod:`.extractive`, :mod:`.baselines`, :mod:`.scripted`.
* :mod:`~memorylab.compress._summarizers` — summarizers by name (:func:`get_summarizer`,
  :func:`register_summarizer`).
* :mod:`~memorylab.compress._strategy` — what a compaction does with the history: the
  :class:`Strategy` base and its :class:`CompactionPlan`; each strategy has its own module:
  :mod:`.summary` (the default), :mod:`.keep_recent`, :mod:`.clear_tool_results`, :mod:`.trim`,
  :mod:`.ledger` (:class:`FactLedger`, :func:`is_ledger`).
* :mod:`~memorylab.compress._strategies` — strategies by name (:func:`get_strategy`,
  :func:`register_strategy`, :func:`strategy_from_record`).
* :mod:`~memorylab.compress._compressor` — :class:`ContextCompressor`, and :class:`AgentLike`,
  what memorylab reads of an agent.
* :mod:`~memorylab.compress._hooks` — :class:`CompactionPreview`, what a ``before_compaction``
  hook is shown.

Importing this package imports neither litellm nor tiktoken; the first model call or token
count does.
"""

from memorylab.compress._base import (
    BaseSummarizer,
    BudgetedSummarizer,
    Summarizer,
    Summary,
    as_summarizer,
)
from memorylab.compress._baselines import OMISSION_MARKER, HeadTailSummarizer, TruncateSummarizer
from memorylab.compress._clear_tool_results import ClearToolResults
from memorylab.compress._compressor import MIN_SUMMARY_TOKENS, AgentLike, ContextCompressor
from memorylab.compress._extractive import ExtractiveSummarizer
from memorylab.compress._hooks import CompactionPreview
from memorylab.compress._keep_recent import KeepRecent
from memorylab.compress._ledger import FactLedger, is_ledger
from memorylab.compress._litellm_summarizer import (
    CHUNK_PROMPT,
    MERGE_PROMPT,
    SUMMARIZER_RETRY,
    SUMMARY_PROMPT,
    SUMMARY_SYSTEM_PROMPT,
    LiteLLMSummarizer,
)
from memorylab.compress._policy import (
    DEFAULT_THRESHOLD,
    THRESHOLD_CONVENTION,
    Backoff,
    CacheTiming,
    ReportedUsage,
    Threshold,
    Trigger,
    default_preload_max_tokens,
    should_compress,
    trigger_tokens,
    validate_threshold,
)
from memorylab.compress._scripted import ScriptedSummarizer
from memorylab.compress._strategies import (
    DEFAULT_STRATEGY,
    get_strategy,
    register_strategy,
    strategy_from_record,
    strategy_names,
)
from memorylab.compress._strategy import CompactionPlan, Strategy
from memorylab.compress._summarizers import (
    DEFAULT_SUMMARIZER,
    get_summarizer,
    register_summarizer,
    summarizer_names,
)
from memorylab.compress._summary import SummaryStrategy
from memorylab.compress._tokens import TokenCounter, count_tokens, get_token_counter
from memorylab.compress._trim import Trim

__all__ = [
    "AgentLike",
    "Backoff",
    "BaseSummarizer",
    "BudgetedSummarizer",
    "CHUNK_PROMPT",
    "CacheTiming",
    "ClearToolResults",
    "CompactionPlan",
    "CompactionPreview",
    "ContextCompressor",
    "DEFAULT_STRATEGY",
    "DEFAULT_SUMMARIZER",
    "DEFAULT_THRESHOLD",
    "ExtractiveSummarizer",
    "FactLedger",
    "HeadTailSummarizer",
    "KeepRecent",
    "LiteLLMSummarizer",
    "MERGE_PROMPT",
    "MIN_SUMMARY_TOKENS",
    "OMISSION_MARKER",
    "ReportedUsage",
    "SUMMARIZER_RETRY",
    "SUMMARY_PROMPT",
    "SUMMARY_SYSTEM_PROMPT",
    "ScriptedSummarizer",
    "Strategy",
    "Summarizer",
    "Summary",
    "SummaryStrategy",
    "THRESHOLD_CONVENTION",
    "Threshold",
    "TokenCounter",
    "Trigger",
    "Trim",
    "TruncateSummarizer",
    "as_summarizer",
    "count_tokens",
    "default_preload_max_tokens",
    "get_strategy",
    "get_summarizer",
    "get_token_counter",
    "is_ledger",
    "register_strategy",
    "register_summarizer",
    "should_compress",
    "strategy_from_record",
    "strategy_names",
    "summarizer_names",
    "trigger_tokens",
    "validate_threshold",
]
