"""Research helpers: memory files as DataFrames, token growth, replays, sweeps and plots.

pandas and matplotlib are imported by the functions that need them, so importing this package
(or :mod:`memorylab`) stays fast. See docs/analysis.md.
"""

from memorylab.analysis.frames import ReadResult, compactions_df, documents_df, memory_df
from memorylab.analysis.growth import (
    ReplayResult,
    replay,
    sweep,
    sweep_note,
    sweep_table,
    token_growth,
)
from memorylab.analysis.plots import plot_compactions, plot_sweep, plot_token_growth, save_plot
from memorylab.analysis.runs import RunSettings, SummarySize, run_settings

__all__ = [
    "ReadResult",
    "ReplayResult",
    "RunSettings",
    "SummarySize",
    "compactions_df",
    "documents_df",
    "memory_df",
    "plot_compactions",
    "plot_sweep",
    "plot_token_growth",
    "replay",
    "run_settings",
    "save_plot",
    "sweep",
    "sweep_note",
    "sweep_table",
    "token_growth",
]
