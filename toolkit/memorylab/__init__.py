"""memorylab: persistent agent memory (swarms-compatible MEMORY.md) and tools to study it."""

from memorylab._version import __version__

__all__ = ["__version__"]
