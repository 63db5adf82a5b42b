"""Moved to :mod:`memorylab.llm`; this path keeps working, with a ``DeprecationWarning``, for one
release."""

from __future__ import annotations

import warnings
from typing import Any

from memorylab import llm as _llm


def __getattr__(name: str) -> Any:
    if name.startswith("__"):  # module machinery (__all__, __path__ ...): this shim has none
        raise AttributeError(name)
    value = getattr(_llm, name)  # AttributeError for a name memorylab.llm does not have
    warnings.warn(
        f"memorylab.compress.llm has moved: import {name} from memorylab.llm",
        DeprecationWarning,
        stacklevel=2,
    )
    return value
