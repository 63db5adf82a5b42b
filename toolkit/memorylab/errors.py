"""The one exception tree of memorylab.

Every error memorylab raises on purpose is a ``MemorylabError``. Where callers already expect a
builtin (``ValueError`` for bad arguments, ``OSError`` for the filesystem, ``TimeoutError``,
``ImportError``), the class subclasses it too, so ``except ValueError`` keeps working.

::

    MemorylabError
    ├── MemoryFormatError          (ValueError)   a MEMORY.md / archive that does not parse
    ├── InvalidAgentName           (ValueError)   an agent name that is not one safe path component
    ├── InvalidSetting             (ValueError)   a bad threshold, budget, option value ...
    ├── AgentNotFound              (LookupError)  no memory folder for that agent
    ├── StoreError                 (OSError)      the filesystem refused or would be unsafe
    │   ├── LockTimeout            (TimeoutError) another process held the agent's lock too long
    │   ├── UnsafePath                            a symlink or special file on the way
    │   └── CompactionConflict                    memory changed under a compaction; nothing written
    ├── SummarizerError                           a summary could not be produced
    │   ├── EmptySummary           (ValueError)   the summarizer answered nothing usable
    │   ├── SummarizerTimeout      (TimeoutError)
    │   ├── SummarizerRateLimited
    │   ├── SummarizerAuthError
    │   ├── SummarizerUnavailable                 network/server errors, after retries
    │   └── SummarizerBadRequest                  the provider rejected the request
    ├── CompressionFailed                         compression kept failing; memory left unchanged
    ├── BudgetExceeded                            an estimated cost is above the configured limit
    └── PrerequisiteError          (ImportError)  an optional extra is not installed

Messages say what happened and what to do next.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


class MemorylabError(Exception):
    """Root of every error memorylab raises on purpose."""


class MemoryFormatError(MemorylabError, ValueError):
    """A memory file does not follow the format (see docs/memory-format.md).

    ``path`` and ``line`` (1-based) locate the first problem when known; ``problems`` lists all
    that were found.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        problems: Sequence[object] = (),
    ) -> None:
        self.path = None if path is None else str(path)
        self.line = line
        self.problems = tuple(problems)
        where = ""
        if self.path is not None:
            where = f"{self.path}"
            if line is not None:
                where += f", line {line}"
        elif line is not None:
            where = f"line {line}"
        super().__init__(f"{where}: {message}" if where else message)


class InvalidAgentName(MemorylabError, ValueError):
    """The agent name cannot be used as a single, safe folder name."""


class InvalidSetting(MemorylabError, ValueError):
    """An option has a value memorylab cannot use (threshold, budget, limits ...)."""


class AgentNotFound(MemorylabError, LookupError):
    """There is no memory folder for this agent in the workspace."""


class StoreError(MemorylabError, OSError):
    """The store could not read or write memory safely."""


class LockTimeout(StoreError, TimeoutError):
    """Another thread or process held the agent's memory lock for too long."""


class UnsafePath(StoreError):
    """A path on the way to the memory files is a symlink or not a regular file/folder."""


class CompactionConflict(StoreError):
    """The memory file was compacted or rewritten by someone else since the snapshot was taken.

    Nothing was written; take a new snapshot and summarize again.
    """


class SummarizerError(MemorylabError):
    """A summary could not be produced."""


class EmptySummary(SummarizerError, ValueError):
    """The summarizer returned an empty, blank or ``None`` summary."""


class SummarizerTimeout(SummarizerError, TimeoutError):
    """The summarizer did not answer within its timeout."""


class SummarizerRateLimited(SummarizerError):
    """The provider rate-limited the summarizer (HTTP 429), also after retries."""


class SummarizerAuthError(SummarizerError):
    """The provider refused the credentials (missing or wrong API key)."""


class SummarizerUnavailable(SummarizerError):
    """The provider could not be reached or failed (connection, HTTP 5xx), also after retries."""


class SummarizerBadRequest(SummarizerError):
    """The provider rejected the request (unknown model, context window exceeded ...)."""


class CompressionFailed(MemorylabError):
    """Compression failed repeatedly; memory was left exactly as it was."""


class BudgetExceeded(MemorylabError):
    """The estimated cost of an operation is above the configured limit."""


class PrerequisiteError(MemorylabError, ImportError):
    """An optional dependency is missing; the message names the ``pip install`` that fixes it."""
