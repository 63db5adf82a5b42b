"""Summarizer comparison: which summarizer, at what cost and latency, keeps which facts.

* :mod:`~memorylab.evaluate.cases` — :class:`Case` (a history, reference facts and probes, an
  existing summary); :func:`cases_from_transcripts`, :func:`cases_from_workspace`.
* :mod:`~memorylab.evaluate.scorers` — :class:`Score`, scorers by name (:func:`get_scorer`).
* :mod:`~memorylab.evaluate.compare` — :func:`compare_summarizers` (long-form DataFrame),
  :func:`summary_table`, :func:`fact_survival_table`, :func:`estimate_cost`.
* :mod:`~memorylab.evaluate.baselines` — offline floors: truncate and head+tail.
* :mod:`~memorylab.evaluate.plots` — ``plot_*(df, ax=None) -> Axes``.

pandas, matplotlib, litellm, rapidfuzz and the optional extras are imported only when used.
"""

from memorylab.compress.baselines import HeadTailSummarizer, TruncateSummarizer
from memorylab.evaluate._cache import LLMCache
from memorylab.evaluate._llm_scorers import (
    JUDGE_PROMPT,
    JUDGE_SYSTEM_PROMPT,
    LOOKUP_READER,
    READER_PROMPT,
    READER_SYSTEM_PROMPT,
    JudgeScorer,
    ProbeQAScorer,
    parse_judge_reply,
)
from memorylab.evaluate.cases import (
    FACT_CATEGORIES,
    Case,
    Fact,
    Probe,
    cases_from_messages,
    cases_from_transcripts,
    cases_from_workspace,
)
from memorylab.evaluate.compare import (
    BASELINES,
    DEFAULT_SCORERS,
    EXISTING,
    compare_summarizers,
    default_cache_dir,
    estimate_cost,
    fact_survival_table,
    markdown_table,
    summary_table,
)
from memorylab.evaluate.facts import extract_facts, fact_kept
from memorylab.evaluate.plots import plot_cost_quality, plot_latency, plot_quality
from memorylab.evaluate.scorers import (
    BaseScorer,
    Sample,
    Score,
    Scorer,
    get_scorer,
    register_scorer,
    scorer_names,
)

__all__ = [
    "BASELINES",
    "BaseScorer",
    "Case",
    "DEFAULT_SCORERS",
    "EXISTING",
    "FACT_CATEGORIES",
    "Fact",
    "HeadTailSummarizer",
    "JUDGE_PROMPT",
    "JUDGE_SYSTEM_PROMPT",
    "JudgeScorer",
    "LLMCache",
    "LOOKUP_READER",
    "Probe",
    "ProbeQAScorer",
    "READER_PROMPT",
    "READER_SYSTEM_PROMPT",
    "Sample",
    "Score",
    "Scorer",
    "TruncateSummarizer",
    "cases_from_messages",
    "cases_from_transcripts",
    "cases_from_workspace",
    "compare_summarizers",
    "default_cache_dir",
    "estimate_cost",
    "extract_facts",
    "fact_kept",
    "fact_survival_table",
    "get_scorer",
    "markdown_table",
    "parse_judge_reply",
    "plot_cost_quality",
    "plot_latency",
    "plot_quality",
    "register_scorer",
    "scorer_names",
    "summary_table",
]
