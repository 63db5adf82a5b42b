"""Moved to :mod:`memorylab.compress` (the baselines are summarizers like any other); this path
keeps working, with a ``DeprecationWarning``, for one release."""

from memorylab._names import moved
from memorylab.compress import baselines as _baselines

__getattr__ = moved(
    __name__,
    dict.fromkeys(("OMISSION_MARKER", "HeadTailSummarizer", "TruncateSummarizer"), _baselines),
    "memorylab.compress",
)
