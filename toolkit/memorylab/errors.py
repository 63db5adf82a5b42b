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
    ├── ModelError                                a model call failed (after retries, if retried)
    │   ├── ModelTimeout           (TimeoutError) no answer within the timeout
    │   ├── ModelRateLimited                      the provider rate-limited the calls (HTTP 429)
    │   ├── ModelAuthError                        missing or refused credentials (HTTP 401/403)
    │   ├── ModelUnavailable                      connection or server errors (HTTP 5xx)
    │   └── ModelBadRequest                       the provider rejected the request (HTTP 4xx)
    │       └── ContextWindowExceeded             the request is larger than the model's window
    ├── EmptySummary               (ValueError)   a summarizer produced nothing usable
    ├── CompressionFailed                         compression kept failing; memory left unchanged
    ├── BudgetExceeded                            an estimated cost is above the configured limit
    └── PrerequisiteError          (ImportError)  an optional extra is not installed

One warning class, for what is worth a warning rather than an error::

    MemoryReadWarning              (UserWarning)  a loader read damaged files: it returned what
                                                  it could, the warning says how to see the rest

Messages say what happened and what to do next. Which model errors are retried is decided by
the table that maps provider exceptions to these classes (:mod:`memorylab.llm`); the error carries
it as ``retryable``.

The names of the previous release stay importable for one more release: ``SummarizerError`` is
:class:`ModelError`, and ``SummarizerTimeout``, ``SummarizerRateLimited``, ``SummarizerAuthError``,
``SummarizerUnavailable`` and ``SummarizerBadRequest`` are the ``Model*`` class of the same
suffix. ``EmptySummary`` is no longer a ``SummarizerError``.
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
        place = (self.path, None if line is None else f"line {line}")
        where = ", ".join(part for part in place if part is not None)
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


class ModelError(MemorylabError):
    """A call to a language model failed.

    ``retryable`` is True when trying again may help; :mod:`memorylab.llm`'s error table sets it
    for each provider exception it maps.
    """

    retryable: bool = False


class ModelTimeout(ModelError, TimeoutError):
    """The model did not answer within its timeout."""


class ModelRateLimited(ModelError):
    """The provider rate-limited the calls (HTTP 429)."""


class ModelAuthError(ModelError):
    """The provider refused the credentials (missing or wrong API key, no access)."""


class ModelUnavailable(ModelError):
    """The provider could not be reached or failed (connection, HTTP 5xx)."""


class ModelBadRequest(ModelError):
    """The provider rejected the request (unknown model, bad parameters, content policy ...)."""


class ContextWindowExceeded(ModelBadRequest):
    """The request is larger than the model's context window."""


class EmptySummary(MemorylabError, ValueError):
    """A summarizer produced an empty, blank or ``None`` summary, or had nothing to summarize."""


class CompressionFailed(MemorylabError):
    """Compression failed repeatedly; memory was left exactly as it was."""


class BudgetExceeded(MemorylabError):
    """The estimated cost of an operation is above the configured limit."""


class PrerequisiteError(MemorylabError, ImportError):
    """An optional dependency is missing; the message names the ``pip install`` that fixes it."""


class MemoryReadWarning(UserWarning):
    """A loader (:func:`memorylab.analysis.memory_df`) read files that do not parse whole, or
    could not read some: it returned the rows it could read, and the warning says how many
    problems of which kinds in how many files, and how to list them
    (:func:`memorylab.analysis.problems_df`). ``on_bad="skip"`` reads without it,
    ``on_bad="error"`` raises :class:`MemoryFormatError` instead."""


# The names of the previous release, for one more release.
SummarizerError = ModelError
SummarizerTimeout = ModelTimeout
SummarizerRateLimited = ModelRateLimited
SummarizerAuthError = ModelAuthError
SummarizerUnavailable = ModelUnavailable
SummarizerBadRequest = ModelBadRequest


__all__ = [
    "AgentNotFound",
    "BudgetExceeded",
    "CompactionConflict",
    "CompressionFailed",
    "ContextWindowExceeded",
    "EmptySummary",
    "InvalidAgentName",
    "InvalidSetting",
    "LockTimeout",
    "MemoryFormatError",
    "MemoryReadWarning",
    "MemorylabError",
    "ModelAuthError",
    "ModelBadRequest",
    "ModelError",
    "ModelRateLimited",
    "ModelTimeout",
    "ModelUnavailable",
    "PrerequisiteError",
    "StoreError",
    "SummarizerAuthError",
    "SummarizerBadRequest",
    "SummarizerError",
    "SummarizerRateLimited",
    "SummarizerTimeout",
    "SummarizerUnavailable",
    "UnsafePath",
]
