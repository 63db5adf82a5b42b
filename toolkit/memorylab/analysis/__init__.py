"""Research helpers: memory files as DataFrames, token growth, replays, sweeps and plots.

One concept per module: :mod:`~memorylab.analysis._frames` (the frames),
:mod:`~memorylab.analysis._runs` (a run's settings and their overrides),
:mod:`~memorylab.analysis._growth` (token growth), :mod:`~memorylab.analysis._replay` (replays),
:mod:`~memorylab.analysis._sweep` (sweeps and their table), :mod:`~memorylab.analysis._lineage`
(compactions in order, fact survival across summaries, a summary's provenance),
:mod:`~memorylab.analysis._calibration` (the estimate against the provider's count, and when
each compaction fired against it), :mod:`~memorylab.analysis._plots`. The audits (calibration,
costs, facts) return one result type, :class:`AuditResult` (:func:`audit`, :data:`AUDITS`).

pandas and matplotlib are imported by the functions that need them, so importing this package
(or :mod:`memorylab`) stays fast. See docs/analysis.md.
"""

from memorylab.analysis._audits import (
    AUDITS,
    AuditResult,
    audit,
    calibration_audit,
    cost_audit,
    fact_audit,
)
from memorylab.analysis._cache_costs import compaction_costs_df
from memorylab.analysis._calibration import (
    calibration_df,
    calibration_summary,
    compaction_timing_df,
)
from memorylab.analysis._convert import ConvertedAgent, WorkspaceConversion, to_workspace
from memorylab.analysis._export_runs import EXPORT_FORMATS, export_transcripts
from memorylab.analysis._foreign import RunCompaction, RunMessage, run_record
from memorylab.analysis._frames import (
    MEMORY_COLUMNS,
    ReadResult,
    compactions_df,
    documents_df,
    memory_df,
    memory_df_with_problems,
    problems_df,
)
from memorylab.analysis._growth import token_growth
from memorylab.analysis._lineage import (
    dropped_by,
    fact_survival_df,
    lineage_df,
    summary_provenance,
    survival_by_generation,
)
from memorylab.analysis._loaders import (
    Loader,
    get_loader,
    load_records,
    loader_for,
    loader_names,
    messages_record,
    register_loader,
)
from memorylab.analysis._plots import (
    plot_calibration,
    plot_compaction_costs,
    plot_compactions,
    plot_fact_survival,
    plot_summary_lengths,
    plot_sweep,
    plot_token_growth,
    plot_token_growth_grid,
    save_plot,
)
from memorylab.analysis._record import AgentRecord
from memorylab.analysis._replay import ReplayResult, replay
from memorylab.analysis._replay_validation import replay_validation
from memorylab.analysis._runs import RunOverrides, RunSettings, SummarySize, run_settings
from memorylab.analysis._sweep import (
    DEFAULT_THRESHOLDS,
    SweepEstimate,
    SweepResult,
    estimate_sweep,
    sweep,
    sweep_note,
    sweep_table,
)

__all__ = [
    "AUDITS",
    "AgentRecord",
    "AuditResult",
    "ConvertedAgent",
    "DEFAULT_THRESHOLDS",
    "EXPORT_FORMATS",
    "Loader",
    "MEMORY_COLUMNS",
    "ReadResult",
    "ReplayResult",
    "RunCompaction",
    "RunMessage",
    "RunOverrides",
    "RunSettings",
    "SummarySize",
    "SweepEstimate",
    "SweepResult",
    "WorkspaceConversion",
    "audit",
    "calibration_audit",
    "calibration_df",
    "calibration_summary",
    "compaction_costs_df",
    "compaction_timing_df",
    "compactions_df",
    "cost_audit",
    "documents_df",
    "dropped_by",
    "estimate_sweep",
    "export_transcripts",
    "fact_audit",
    "fact_survival_df",
    "get_loader",
    "lineage_df",
    "load_records",
    "loader_for",
    "loader_names",
    "memory_df",
    "memory_df_with_problems",
    "messages_record",
    "plot_calibration",
    "plot_compaction_costs",
    "plot_compactions",
    "plot_fact_survival",
    "plot_summary_lengths",
    "plot_sweep",
    "plot_token_growth",
    "plot_token_growth_grid",
    "problems_df",
    "register_loader",
    "replay",
    "replay_validation",
    "run_record",
    "run_settings",
    "save_plot",
    "summary_provenance",
    "survival_by_generation",
    "sweep",
    "sweep_note",
    "sweep_table",
    "to_workspace",
    "token_growth",
]
