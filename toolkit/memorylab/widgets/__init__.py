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
    from memorylab.widgets._arena import SummarizerArena, comparison_html
    from memorylab.widgets._explorer import MemoryExplorer
    from memorylab.widgets._stepper import DEMO_SCRIPT, CompactionStepper
    from memorylab.widgets._tuner import ThresholdTuner

__all__ = [
    "CompactionStepper",
    "DEMO_SCRIPT",
    "MemoryExplorer",
    "SummarizerArena",
    "ThresholdTuner",
    "comparison_html",
]

_WHERE = {
    "DEMO_SCRIPT": "memorylab.widgets._stepper",
    "CompactionStepper": "memorylab.widgets._stepper",
    "MemoryExplorer": "memorylab.widgets._explorer",
    "SummarizerArena": "memorylab.widgets._arena",
    "ThresholdTuner": "memorylab.widgets._tuner",
    "comparison_html": "memorylab.widgets._arena",
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
