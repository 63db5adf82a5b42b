"""The offline baselines, where :mod:`memorylab.evaluate` has always offered them; they live in
:mod:`memorylab.compress.baselines` (summarizers, selectable by name like any other)."""

from memorylab.compress.baselines import OMISSION_MARKER, HeadTailSummarizer, TruncateSummarizer

__all__ = ["OMISSION_MARKER", "HeadTailSummarizer", "TruncateSummarizer"]
