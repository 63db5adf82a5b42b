"""The implementation of :mod:`memorylab.analysis.frames` (imported when a loader runs)."""

from __future__ import annotations

import importlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memorylab.analysis._scan import (
    FileRows,
    Roles,
    convert_or_parse,
    decoded,
    read_bytes,
    read_rows,
)
from memorylab.analysis._sources import AgentFiles, Note, order
from memorylab.analysis._stamps import convert_grid
from memorylab.errors import StoreError

if TYPE_CHECKING:
    import pandas as pd

_SIGNATURE = 256  # bytes compared at each end before two files are compared in full


@dataclass
class _Segment:
    path: Path
    kind: str
    rows: FileRows


@dataclass
class _Signature:
    """Enough of a file to tell cheaply whether the next file starts with it."""

    path: Path
    size: int
    head: bytes
    tail: bytes

    @classmethod
    def of(cls, path: Path, data: bytes) -> _Signature:
        return cls(path, len(data), data[:_SIGNATURE], data[-_SIGNATURE:])

    def is_prefix_of(self, data: bytes) -> bool:
        if len(data) < self.size or self.size == 0:
            return False
        if (
            data[: len(self.head)] != self.head
            or data[self.size - len(self.tail) : self.size] != self.tail
        ):
            return False
        try:  # rare: only files whose ends already match are compared in full
            return data.startswith(read_bytes(self.path))
        except StoreError:
            return False


@dataclass
class _Agent:
    files: AgentFiles
    segments: list[_Segment] = field(default_factory=list)


def _convert_stamps(
    agent: _Agent, notes: list[Note], *, strict: bool, naive_tz: tzinfo | None, roles: Roles
) -> None:
    """Convert the timestamps of all the agent's files at once (one numpy pass, not one per
    file); a file with a stamp that does not convert is read again by the parser."""
    pending = [segment.rows for segment in agent.segments if segment.rows.pending]
    if not pending:
        return
    converted = convert_grid(
        np.concatenate([rows.stamp_grid for rows in pending]),
        np.concatenate([rows.stamp_lengths for rows in pending]),
        naive_tz,
    )
    if converted is not None:
        start = 0
        for rows in pending:
            count = len(rows)
            rows.utc_us = converted[0][start : start + count]
            rows.naive = converted[1][start : start + count]
            rows.stamp_grid, rows.stamp_lengths = rows.stamp_grid[:0], rows.stamp_lengths[:0]
            start += count
        return
    for segment in agent.segments:
        rows = convert_or_parse(
            segment.rows, segment.path, strict=strict, naive_tz=naive_tz, roles=roles
        )
        if rows is not segment.rows:
            notes += [Note(str(segment.path), p.line, p.kind, p.message) for p in rows.problems]
            segment.rows = rows


def read_agent(
    files: AgentFiles,
    notes: list[Note],
    *,
    strict: bool,
    roles: Roles,
    naive_tz: tzinfo | None,
) -> _Agent:
    agent = _Agent(files)
    previous: _Signature | None = None
    for path, kind in order(files, notes):
        try:
            data = read_bytes(path)
        except StoreError as exc:
            if strict:
                raise
            notes.append(Note(str(path), 0, "io", str(exc)))
            continue
        if previous is not None and agent.segments and previous.is_prefix_of(data):
            dropped = agent.segments.pop()
            same = previous.size == len(data)
            notes.append(
                Note(
                    str(dropped.path),
                    0,
                    "duplicate",
                    (
                        f"same bytes as {path.name}"
                        if same
                        else f"{path.name} starts with all of it (a compaction that did not finish)"
                    )
                    + "; skipped, its messages are read once from the later file",
                )
            )
        previous = _Signature.of(path, data)
        box = [data]
        del data
        rows = read_rows(path, strict=strict, roles=roles, box=box)
        notes += [Note(str(path), p.line, p.kind, p.message) for p in rows.problems]
        agent.segments.append(_Segment(path, kind, rows))
    _convert_stamps(agent, notes, strict=strict, naive_tz=naive_tz, roles=roles)
    if len(agent.segments) > 0:
        first = agent.segments[0]
        if len(first.rows) and first.rows.summary[0]:
            notes.append(
                Note(
                    str(first.path),
                    0,
                    "gap",
                    "the oldest file starts with a "
                    "compaction summary: older archives are missing (deleted, or "
                    "overwritten by the reference framework, whose archive names "
                    "collide within one second)",
                )
            )
    return agent


def problems_frame(notes: Sequence[Note]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(
        {
            "file": pd.Series([n.file for n in notes], dtype=object),
            "line": pd.Series([n.line for n in notes], dtype=np.int64),
            "kind": pd.Series([n.kind for n in notes], dtype=object),
            "message": pd.Series([n.message for n in notes], dtype=object),
        }
    )


def _categorical(labels: list[str], counts: list[int]) -> Any:
    """A categorical column repeating ``labels[i]`` ``counts[i]`` times (no per-row work)."""
    import pandas as pd

    categories = list(dict.fromkeys(labels))
    index = {label: i for i, label in enumerate(categories)}
    codes = np.repeat(np.array([index[label] for label in labels], dtype=np.int32), counts)
    return pd.Categorical.from_codes(codes, categories=pd.Index(categories, dtype=object))


def _role_column(parts: list[FileRows], roles: Roles) -> Any:
    """``pd.Categorical(roles)`` (sorted categories, only those used) from the role codes."""
    import pandas as pd

    codes = np.concatenate([rows.role_codes for rows in parts] or [np.empty(0, np.int32)])
    used = np.flatnonzero(np.bincount(codes, minlength=len(roles.names))).tolist()
    order = sorted(used, key=roles.names.__getitem__)
    remap = np.full(len(roles.names), -1, dtype=np.int32)
    remap[order] = np.arange(len(order), dtype=np.int32)
    categories = pd.Index([roles.names[code] for code in order])
    return pd.Categorical.from_codes(remap[codes], categories=categories)


def arrow_text_dtype() -> Any:
    """pandas' dtype for text when pyarrow stores it (pandas 3's default), else None."""
    import pandas as pd

    dtype = pd.Series(["x"]).dtype
    return dtype if isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow" else None


def _content_column(parts: list[FileRows]) -> Any:
    """The contents in the dtype pandas gives text. When pyarrow stores it, the files' buffers
    become the column's chunks as they are: no ``str`` per row, no copy."""
    import pandas as pd

    dtype = arrow_text_dtype()
    if dtype is None or not any(map(len, parts)):  # pandas infers no text dtype for no rows
        return pd.array(decoded(parts), dtype=object)
    pa: Any = importlib.import_module("pyarrow")  # pandas stores text with it: it is there
    chunks = []
    for rows in parts:
        if len(rows):
            buffers = [None, pa.py_buffer(rows.offsets), pa.py_buffer(rows.text)]
            chunks.append(pa.Array.from_buffers(pa.large_string(), len(rows), buffers))
            chunks[-1].validate()  # offsets within the buffer (cheap; the text was checked)
    return pd.array(pa.chunked_array(chunks, type=pa.large_string()), dtype=dtype)


def build_frame(agents: list[_Agent], tokens: str | None, roles: Roles) -> pd.DataFrame:
    import pandas as pd

    workspaces: list[str] = []
    names: list[str] = []
    files: list[str] = []
    kinds: list[str] = []
    counts: list[int] = []
    segment_ids: list[int] = []
    parts: list[FileRows] = []
    timeline: list[np.ndarray] = []
    for agent in agents:
        for index, segment in enumerate(agent.segments):
            rows = segment.rows
            workspaces.append(str(agent.files.workspace))
            names.append(agent.files.agent)
            files.append(str(segment.path))
            kinds.append(segment.kind)
            counts.append(len(rows))
            segment_ids.append(index)
            parts.append(rows)
            segment.rows = FileRows.empty(rows.continues, rows.format_version, [], rows.size)
        total = sum(counts[len(counts) - len(agent.segments) :])
        timeline.append(np.arange(total, dtype=np.int64))
    sizes = np.array(counts, dtype=np.int64)
    total_rows = int(sizes.sum()) if len(sizes) else 0
    offsets = np.repeat(np.cumsum(sizes) - sizes, sizes) if total_rows else np.empty(0, np.int64)

    def joined(column: str, dtype: Any) -> np.ndarray:
        return np.concatenate([getattr(rows, column) for rows in parts] or [np.empty(0, dtype)])

    columns: dict[str, Any] = {
        "workspace": _categorical(workspaces, counts),
        "agent": _categorical(names, counts),
        "file": _categorical(files, counts),
        "kind": pd.Categorical.from_codes(
            np.repeat(np.array([k == "memory" for k in kinds], dtype=np.int8), sizes),
            categories=pd.Index(["archive", "memory"], dtype=object),
        ),
        "segment": np.repeat(np.array(segment_ids, dtype=np.int64), sizes),
        "position": np.arange(total_rows, dtype=np.int64) - offsets,
        "timeline": np.concatenate(timeline) if timeline else np.empty(0, np.int64),
        "role": _role_column(parts, roles),
        "timestamp": pd.to_datetime(joined("utc_us", np.int64), unit="us", utc=True),
        "naive_timestamp": joined("naive", bool),
        "content": _content_column(parts),
        "chars": joined("chars", np.int64),
        "is_summary": joined("summary", bool),
    }
    if tokens is not None:
        from memorylab.compress.tokens import get_token_counter

        counts_ = get_token_counter(tokens).count_batch(decoded(parts))
        columns["tokens"] = np.array(counts_, dtype=np.int64)
    return pd.DataFrame(columns, copy=False)


# --------------------------------------------------------------------------- compactions

_FLOAT_COLUMNS = (
    "carried_over",
    "tokens_before",
    "tokens_after",
    "summary_tokens",
    "latency_s",
    "cost_usd",
    "context_length",
)


def _float(value: Any) -> float:
    if value is None or isinstance(value, bool):
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _records(files: AgentFiles) -> list[dict[str, Any]] | None:
    """The compaction records of ``compactions.jsonl``, or None when the agent has none."""
    from memorylab.memory.paths import MemoryPaths
    from memorylab.memory.store import MemoryStore

    if not MemoryPaths(files.memory_md).compactions.is_file():
        return None
    return [
        record
        for record in MemoryStore(files.memory_md).records()
        if isinstance(record, dict)
        and record.get("kind", "compaction") == "compaction"
        and not record.get("error")
    ]


def _utc(value: Any) -> Any:
    import pandas as pd

    if value is None or value == "":
        return pd.NaT
    try:
        stamp = pd.Timestamp(value)
    except (TypeError, ValueError):
        return pd.NaT
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")


def _record_row(files: AgentFiles, record: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {
        "workspace": str(files.workspace),
        "agent": files.agent,
        "time": _utc(record.get("time")),
        "archive": record.get("archive"),
        "messages_archived": int(_float(record.get("messages_archived")) or 0),
        "summarizer_model": record.get("summarizer_model"),
        "source": "jsonl",
    }
    for column in _FLOAT_COLUMNS:
        row[column] = _float(record.get(column))
    row["threshold"] = _threshold(record.get("threshold"))
    return row


def _threshold(value: Any) -> Any:
    """A recorded threshold as it was: an int is a token count, a float a fraction."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return math.nan
    return value


def _inferred(
    files: AgentFiles, kinds: list[tuple[Path, str]], frame: pd.DataFrame, tokens: str | None
) -> list[dict[str, Any]]:
    """One compaction per archive that a later segment follows (reference workspaces)."""
    from memorylab.analysis._transcript import entry_tokens

    counted = entry_tokens(frame, tokens) if tokens is not None and len(frame) else None
    segment_of = frame["segment"].to_numpy()
    is_summary = frame["is_summary"].to_numpy(dtype=bool)
    stamps = frame["timestamp"]
    rows: list[dict[str, Any]] = []
    for index, (path, kind) in enumerate(kinds[:-1]):
        if kind != "archive":
            continue
        here = np.flatnonzero(segment_of == index)
        after = np.flatnonzero(segment_of == index + 1)
        summary_at = int(after[0]) if len(after) and is_summary[after[0]] else None
        when = stamps.iloc[int(after[0])] if len(after) else None
        row: dict[str, Any] = {column: math.nan for column in _FLOAT_COLUMNS}
        row["threshold"] = math.nan
        row.update(
            workspace=str(files.workspace),
            agent=files.agent,
            time=when,
            archive=path.name,
            messages_archived=len(here),
            summarizer_model=None,
            source="inferred",
        )
        if counted is not None:
            row["tokens_before"] = float(
                counted.tokens[here].sum() + max(len(here) - 1, 0) * counted.separator
            )
            if summary_at is not None:
                row["summary_tokens"] = row["tokens_after"] = float(counted.tokens[summary_at])
        rows.append(row)
    return rows


def compactions_frame(
    agent_files: list[AgentFiles],
    notes: list[Note],
    *,
    tokens: str | None,
    naive_tz: tzinfo | None,
) -> pd.DataFrame:
    import pandas as pd

    from memorylab.analysis.frames import COMPACTION_COLUMNS

    rows: list[dict[str, Any]] = []
    for files in agent_files:
        records = _records(files)
        if records is not None:
            rows += [_record_row(files, record) for record in records]
            continue
        roles = Roles()
        agent = read_agent(files, notes, strict=False, roles=roles, naive_tz=naive_tz)
        kinds = [(segment.path, segment.kind) for segment in agent.segments]
        rows += _inferred(files, kinds, build_frame([agent], None, roles), tokens)
    frame = pd.DataFrame(rows, columns=list(COMPACTION_COLUMNS))
    frame["time"] = pd.to_datetime(frame["time"], utc=True)
    frame["messages_archived"] = frame["messages_archived"].astype(np.int64)
    for column in _FLOAT_COLUMNS:
        frame[column] = frame[column].astype(np.float64)
    frame["summarizer_model"] = frame["summarizer_model"].astype(object)
    if all(isinstance(t, float) for t in frame["threshold"]):
        frame["threshold"] = frame["threshold"].astype(np.float64)
    else:  # keep 3000 an int: an absolute token count, not a fraction
        frame["threshold"] = frame["threshold"].astype(object)
    return frame.sort_values(["workspace", "agent", "time"], kind="stable").reset_index(drop=True)
