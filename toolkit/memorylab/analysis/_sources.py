"""Moved to :mod:`memorylab.analysis.sources`; these names warn there for one release."""

from memorylab._names import moved
from memorylab.analysis import sources as _sources

__getattr__ = moved(__name__, dict.fromkeys(_sources.__all__, "memorylab.analysis.sources"))
