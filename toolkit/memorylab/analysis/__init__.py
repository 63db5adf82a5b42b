"""Research helpers: memory files as DataFrames, token growth, replays, sweeps and plots.

pandas and matplotlib are imported by the functions that need them, so importing this package
(or :mod:`memorylab`) stays fast. See docs/analysis.md.
"""

from memorylab.analysis.frames import compactions_df, documents_df, memory_df
from memorylab.analysis.growth import ReplayResult, replay, sweep, token_growth
from memorylab.analysis.plots import plot_compactions, plot_sweep, plot_token_growth

__all__ = [
    "ReplayResult",
    "compactions_df",
    "documents_df",
    "memory_df",
    "plot_compactions",
    "plot_sweep",
    "plot_token_growth",
    "replay",
    "sweep",
    "token_growth",
]
