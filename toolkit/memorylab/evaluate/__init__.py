"""Summarizer comparison: which summarizer, at what cost and latency, keeps which facts.

* :mod:`~memorylab.evaluate._cases` — :class:`Case` (a history, reference facts and probes, an
  existing summary); :func:`cases_from_transcripts`, :func:`cases_from_workspace`, and the
  public benchmarks' files: :func:`cases_from_locomo`, :func:`cases_from_longmemeval`;
  :func:`sample_cases` (a seeded sample to a probe budget), :func:`dropped_questions`.
* :mod:`~memorylab.evaluate._grading` — :func:`grade_answer` (dates, numbers, case, articles
  and punctuation normalized), the LLM grade's prompts; the fact rules (:func:`extract_facts`,
  :func:`fact_kept`, :func:`normalize_answer`) are shared with the analysis, below both;
* :mod:`~memorylab.evaluate._base` — :class:`Score`, :class:`Sample`, the :class:`Scorer`
  protocol and :class:`BaseScorer`; :mod:`~memorylab.evaluate._scorers` — scorers by name
  (:func:`get_scorer`, :func:`register_scorer`).
* :mod:`~memorylab.evaluate._compare` — :func:`compare_summarizers` (long-form DataFrame),
  :func:`summary_table`, :func:`fact_survival_table`, :func:`estimate_cost`.
* :mod:`~memorylab.evaluate._strategies` — :func:`compare_strategies`: memory strategies run
  through each case's whole history in a window, scored like summaries, with what each lost
  (the turn in progress, facts by generation) and cost; :mod:`~memorylab.evaluate._peers` —
  :data:`PEER_STRATEGIES`, the peers' strategies re-created as :class:`StrategyPreset` values,
  beside :data:`MEMORYLAB_STRATEGIES`.
* :mod:`~memorylab.evaluate._power` — :func:`detectable_difference` and :func:`probes_needed`:
  the difference a paired comparison of so many probes detects, and the probes a difference
  needs (before the run).
* :mod:`~memorylab.evaluate._plots` — ``plot_*(df, ax=None) -> Axes``.

pandas, matplotlib, litellm, rapidfuzz and the optional extras are imported only when used.
"""

from memorylab._facts import extract_facts, fact_kept, normalize_answer
from memorylab._names import moved as _moved
from memorylab.compress._baselines import BOUNDS
from memorylab.evaluate._base import (
    BaseScorer,
    FunctionScorer,
    PlannedCall,
    Sample,
    Score,
    Scorer,
)
from memorylab.evaluate._cache import LLMCache
from memorylab.evaluate._cases import (
    LOCOMO_CATEGORIES,
    Case,
    cases_from_locomo,
    cases_from_longmemeval,
    cases_from_messages,
    cases_from_transcripts,
    cases_from_workspace,
    dropped_questions,
    sample_cases,
)
from memorylab.evaluate._compare import (
    BASELINES,
    DEFAULT_SCORERS,
    compare_summarizers,
    estimate_cost,
    plan_comparison,
)
from memorylab.evaluate._engine import EXISTING, ComparisonResult
from memorylab.evaluate._extras import RougeScorer, SimilarityScorer
from memorylab.evaluate._grading import (
    GRADER_PROMPT,
    GRADER_SYSTEM_PROMPT,
    answer_span,
    grade_answer,
    listed_candidates,
    relative_date,
)
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
from memorylab.evaluate._peers import MEMORYLAB_STRATEGIES, PEER_STRATEGIES, StrategyPreset
from memorylab.evaluate._plan import Plan
from memorylab.evaluate._plots import plot_cost_quality, plot_latency, plot_quality
from memorylab.evaluate._power import detectable_difference, probes_needed
from memorylab.evaluate._scorers import (
    CompressionScorer,
    CostScorer,
    FactRecallScorer,
    LatencyScorer,
    get_scorer,
    register_scorer,
    scorer_names,
)
from memorylab.evaluate._strategies import StrategyComparison, StrategyMemory, compare_strategies
from memorylab.evaluate._tables import (
    SummaryTable,
    bootstrap_interval,
    differences_table,
    fact_survival_table,
    markdown_table,
    probe_table,
    summary_table,
)
from memorylab.memory._holders import default_cache_dir
from memorylab.transcripts import FACT_CATEGORIES, Fact, Probe

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
    "MEMORYLAB_STRATEGIES",
    "PEER_STRATEGIES",
    "Plan",
    "PlannedCall",
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
    "StrategyPreset",
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
    "detectable_difference",
    "differences_table",
    "dropped_questions",
    "estimate_cost",
    "extract_facts",
    "fact_kept",
    "fact_survival_table",
    "get_scorer",
    "grade_answer",
    "listed_candidates",
    "lookup_answer",
    "markdown_table",
    "normalize_answer",
    "parse_judge_reply",
    "plan_comparison",
    "plot_cost_quality",
    "plot_latency",
    "plot_quality",
    "probe_table",
    "probes_needed",
    "register_scorer",
    "relative_date",
    "sample_cases",
    "scorer_names",
    "summary_table",
]
