"""Notebook widgets: thin ipywidgets views over :mod:`memorylab.analysis` and
:mod:`memorylab.evaluate` (see docs/widgets.md).

* :class:`MemoryExplorer` — a workspace's agents, segments, messages, token growth, compactions;
* :class:`ThresholdTuner` — threshold and context-length sliders over a transcript (replay + sweep);
* :class:`SummarizerArena` — compare summarizers: scores, cost vs quality, the facts each lost;
* :class:`CompactionStepper` — step through a scripted run and watch compaction happen.

The widgets keep their state in attributes (the current figure, table, result), so they work
and are tested headless; displayed in Jupyter or voila they render as ipywidgets. ipywidgets,
pandas and matplotlib are imported when a widget module is first used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memorylab.widgets.arena import SummarizerArena, comparison_html
    from memorylab.widgets.explorer import MemoryExplorer
    from memorylab.widgets.stepper import CompactionStepper
    from memorylab.widgets.tuner import ThresholdTuner

__all__ = [
    "CompactionStepper",
    "MemoryExplorer",
    "SummarizerArena",
    "ThresholdTuner",
    "comparison_html",
]

_WHERE = {
    "CompactionStepper": "memorylab.widgets.stepper",
    "MemoryExplorer": "memorylab.widgets.explorer",
    "SummarizerArena": "memorylab.widgets.arena",
    "ThresholdTuner": "memorylab.widgets.tuner",
    "comparison_html": "memorylab.widgets.arena",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'memorylab.widgets' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
