"""Moved to :mod:`memorylab.llm`; this path keeps working, with a ``DeprecationWarning``, for one
release."""

from memorylab import llm as _llm
from memorylab._names import moved

__getattr__ = moved(__name__, dict.fromkeys(_llm.__all__, "memorylab.llm"))
