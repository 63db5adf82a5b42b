"""Moved to :mod:`memorylab.compress` (the baselines are summarizers like any other); this path
keeps working, with a ``DeprecationWarning``, for one release."""

from memorylab._names import moved

__getattr__ = moved(
    __name__,
    dict.fromkeys(
        ("OMISSION_MARKER", "HeadTailSummarizer", "TruncateSummarizer"), "memorylab.compress"
    ),
)
