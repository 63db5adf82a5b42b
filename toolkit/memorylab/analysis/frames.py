"""Loaders: memory files as tidy DataFrames, one row per message or per compaction.

:func:`memory_df` reads a MEMORY.md, an archive, an agent folder, a workspace or a list of them
into one row per message in timeline order (archives oldest first, then the live file; the order
rules are in :mod:`memorylab.analysis._sources`). :func:`compactions_df` gives one row per
compaction, from ``compactions.jsonl`` when the agent has one, else inferred from the archives.

Both read memorylab's files and the reference framework's (naive local timestamps, no lineage,
archive names that collide). With ``strict=True`` a file that does not parse raises
:class:`~memorylab.errors.MemoryFormatError`; with ``strict=False`` the result is
``(frame, problems)``, where ``problems`` is a DataFrame with ``file, line, kind, message`` that
also lists what was skipped (duplicate and uncommitted archives, unknown files) and what looks
missing. pandas is imported when a loader is called, not with :mod:`memorylab`.

Both log a warning (logger ``memorylab.privacy``) when memory under a path they are given can be
read by group or others (:func:`memorylab.memory.permissions.warn_permissions`).
"""

from __future__ import annotations

from datetime import tzinfo
from typing import TYPE_CHECKING, Literal, overload

from memorylab.analysis._sources import Source, resolve

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["COMPACTION_COLUMNS", "MEMORY_COLUMNS", "PROBLEM_COLUMNS", "compactions_df", "memory_df"]

MEMORY_COLUMNS = (
    "workspace",
    "agent",
    "file",
    "kind",
    "segment",
    "position",
    "timeline",
    "role",
    "timestamp",
    "naive_timestamp",
    "content",
    "chars",
    "is_summary",
)
"""The columns of :func:`memory_df`, in order (``tokens`` is added when a model is given)."""

PROBLEM_COLUMNS = ("file", "line", "kind", "message")

COMPACTION_COLUMNS = (
    "workspace",
    "agent",
    "time",
    "archive",
    "messages_archived",
    "carried_over",
    "tokens_before",
    "tokens_after",
    "summary_tokens",
    "summarizer_model",
    "latency_s",
    "cost_usd",
    "threshold",
    "context_length",
    "source",
)
"""The columns of :func:`compactions_df`, in order."""


@overload
def memory_df(
    source: Source,
    *,
    tokens: str | None = None,
    strict: Literal[True] = True,
    naive_tz: tzinfo | None = None,
) -> pd.DataFrame: ...


@overload
def memory_df(
    source: Source,
    *,
    tokens: str | None = None,
    strict: Literal[False],
    naive_tz: tzinfo | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]: ...


def memory_df(
    source: Source,
    *,
    tokens: str | None = None,
    strict: bool = True,
    naive_tz: tzinfo | None = None,
) -> pd.DataFrame | tuple[pd.DataFrame, pd.DataFrame]:
    """One row per message of ``source``, in timeline order (see docs/analysis.md).

    ``source``: a MEMORY.md, an archive file, an agent folder, a workspace (the folder holding
    ``agents/``) or a list of these. Columns: ``workspace``, ``agent``, ``file`` (categorical),
    ``kind`` (``"archive"``/``"memory"``), ``segment`` (0 = the oldest archive … the live file
    last), ``position`` (in its file), ``timeline`` (0 … n-1 per agent across segments),
    ``role`` (categorical), ``timestamp`` (UTC), ``naive_timestamp`` (the file had no UTC
    offset: read as local time, or as ``naive_tz``), ``content``, ``chars``, ``is_summary``,
    and ``tokens`` (of the content) when ``tokens`` names a model.

    ``strict=True`` raises :class:`~memorylab.errors.MemoryFormatError` for a file that does not
    parse; ``strict=False`` returns ``(frame, problems)`` with what could be read.
    """
    from memorylab.analysis import _load
    from memorylab.analysis._scan import Roles

    agent_files, notes = resolve(source)
    roles = Roles()
    agents = [
        _load.read_agent(files, notes, strict=strict, roles=roles, naive_tz=naive_tz)
        for files in agent_files
    ]
    frame = _load.build_frame(agents, tokens, roles)
    if strict:
        return frame
    return frame, _load.problems_frame(notes)


# --------------------------------------------------------------------------- compactions


def compactions_df(
    source: Source, *, tokens: str | None = None, naive_tz: tzinfo | None = None
) -> pd.DataFrame:
    """One row per compaction of the agents in ``source`` (see docs/analysis.md).

    From ``compactions.jsonl`` when an agent has one (``source`` column ``"jsonl"``; failed
    attempts and other record kinds are left out), else inferred from its archives and the
    summary blocks that follow them (``"inferred"``): ``time`` is the next summary's timestamp,
    and token figures are counted with ``tokens`` (a model name) when given. Unknown values are
    NaN (``summarizer_model``: None).
    """
    from memorylab.analysis import _load

    agent_files, notes = resolve(source)
    return _load.compactions_frame(agent_files, notes, tokens=tokens, naive_tz=naive_tz)
