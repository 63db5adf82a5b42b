"""Moved to :mod:`memorylab.compress` (the baselines are summarizers like any other); this path
keeps working, with a ``DeprecationWarning``, for one release."""

from __future__ import annotations

import warnings
from typing import Any

from memorylab.compress import baselines as _baselines

_MOVED = ("OMISSION_MARKER", "HeadTailSummarizer", "TruncateSummarizer")


def __getattr__(name: str) -> Any:
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"memorylab.evaluate.baselines has moved: import {name} from memorylab.compress",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(_baselines, name)
