"""Summarizer comparison: which summarizer, at what cost and latency, keeps which facts.

* :mod:`~memorylab.evaluate.cases` — :class:`Case` (a history, reference facts and probes, an
  existing summary); :func:`cases_from_transcripts`, :func:`cases_from_workspace`, and the
  public benchmarks' files: :func:`cases_from_locomo`, :func:`cases_from_longmemeval`.
* :mod:`~memorylab.evaluate.grading` — :func:`grade_answer` (dates, numbers, case, articles
  and punctuation normalized), the LLM grade's prompts; the fact rules (:func:`extract_facts`,
  :func:`fact_kept`, :func:`normalize_answer`) are shared with the analysis, below both;
* :mod:`~memorylab.evaluate.base` — :class:`Score`, :class:`Sample`, the :class:`Scorer`
  protocol and :class:`BaseScorer`; :mod:`~memorylab.evaluate.scorers` — scorers by name
  (:func:`get_scorer`, :func:`register_scorer`).
* :mod:`~memorylab.evaluate.compare` — :func:`compare_summarizers` (long-form DataFrame),
  :func:`summary_table`, :func:`fact_survival_table`, :func:`estimate_cost`.
* :mod:`~memorylab.evaluate.strategies` — :func:`compare_strategies`: memory strategies run
  through each case's whole history in a window, scored like summaries.
* :mod:`~memorylab.evaluate.plots` — ``plot_*(df, ax=None) -> Axes``.

pandas, matplotlib, litellm, rapidfuzz and the optional extras are imported only when used.
"""

from memorylab._facts import extract_facts, fact_kept, normalize_answer
from memorylab._names import moved as _moved
from memorylab.evaluate._cache import LLMCache
from memorylab.evaluate._extras import RougeScorer, SimilarityScorer
from memorylab.evaluate._llm_scorers import (
    JUDGE_CRITERIA,
    JUDGE_PROMPT,
    JUDGE_SYSTEM_PROMPT,
    LOOKUP_READER,
    READER_PROMPT,
    READER_SYSTEM_PROMPT,
    JudgeScorer,
    ProbeQAScorer,
    lookup_answer,
    parse_judge_reply,
)
from memorylab.evaluate.base import BaseScorer, FunctionScorer, Sample, Score, Scorer
from memorylab.evaluate.cases import (
    FACT_CATEGORIES,
    LOCOMO_CATEGORIES,
    Case,
    Fact,
    Probe,
    cases_from_locomo,
    cases_from_longmemeval,
    cases_from_messages,
    cases_from_transcripts,
    cases_from_workspace,
    dropped_questions,
)
from memorylab.evaluate.compare import (
    BASELINES,
    BOUNDS,
    DEFAULT_SCORERS,
    EXISTING,
    ComparisonResult,
    Plan,
    SummaryTable,
    compare_summarizers,
    default_cache_dir,
    estimate_cost,
    fact_survival_table,
    markdown_table,
    plan_comparison,
    summary_table,
)
from memorylab.evaluate.grading import (
    GRADER_PROMPT,
    GRADER_SYSTEM_PROMPT,
    answer_span,
    grade_answer,
    relative_date,
)
from memorylab.evaluate.plots import plot_cost_quality, plot_latency, plot_quality
from memorylab.evaluate.scorers import (
    CompressionScorer,
    CostScorer,
    FactRecallScorer,
    LatencyScorer,
    get_scorer,
    register_scorer,
    scorer_names,
)
from memorylab.evaluate.strategies import StrategyComparison, StrategyMemory, compare_strategies
from memorylab.evaluate.tables import bootstrap_interval, probe_table

# The baselines were importable from here; they are summarizers of memorylab.compress.
__getattr__ = _moved(
    __name__, dict.fromkeys(("HeadTailSummarizer", "TruncateSummarizer"), "memorylab.compress")
)

__all__ = [
    "BASELINES",
    "BOUNDS",
    "BaseScorer",
    "Case",
    "ComparisonResult",
    "CompressionScorer",
    "CostScorer",
    "DEFAULT_SCORERS",
    "EXISTING",
    "FACT_CATEGORIES",
    "Fact",
    "FactRecallScorer",
    "FunctionScorer",
    "GRADER_PROMPT",
    "GRADER_SYSTEM_PROMPT",
    "JUDGE_CRITERIA",
    "JUDGE_PROMPT",
    "JUDGE_SYSTEM_PROMPT",
    "JudgeScorer",
    "LLMCache",
    "LOCOMO_CATEGORIES",
    "LOOKUP_READER",
    "LatencyScorer",
    "Plan",
    "Probe",
    "ProbeQAScorer",
    "READER_PROMPT",
    "READER_SYSTEM_PROMPT",
    "RougeScorer",
    "Sample",
    "Score",
    "Scorer",
    "SimilarityScorer",
    "StrategyComparison",
    "StrategyMemory",
    "SummaryTable",
    "answer_span",
    "bootstrap_interval",
    "cases_from_locomo",
    "cases_from_longmemeval",
    "cases_from_messages",
    "cases_from_transcripts",
    "cases_from_workspace",
    "compare_strategies",
    "compare_summarizers",
    "default_cache_dir",
    "dropped_questions",
    "estimate_cost",
    "extract_facts",
    "fact_kept",
    "fact_survival_table",
    "get_scorer",
    "grade_answer",
    "lookup_answer",
    "markdown_table",
    "normalize_answer",
    "parse_judge_reply",
    "plan_comparison",
    "plot_cost_quality",
    "plot_latency",
    "plot_quality",
    "probe_table",
    "register_scorer",
    "relative_date",
    "scorer_names",
    "summary_table",
]
