"""Export one agent's memory to a file, and load an export back (internal; the public names are
in :mod:`memorylab.privacy`).

Exports are read under the agent's lock; :func:`load_export` gives the very frame
:func:`memorylab.analysis.memory_df` gives for the agent folder (pandas, numpy and pyarrow are
imported when needed).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from memorylab.errors import InvalidSetting, PrerequisiteError, StoreError
from memorylab.memory import format as fmt
from memorylab.memory.permissions import warn_permissions
from memorylab.memory.records import SUMMARY_PREFIX
from memorylab.memory.store import MemoryStore, read_memory
from memorylab.privacy._remove import existing_agent

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["EXPORT_VERSION", "export_agent", "export_document", "load_export"]

EXPORT_VERSION = 1
"""``memorylab_export`` in an export document: bumped when its layout changes."""


# ---------------------------------------------------------------------------------------------
# Export


def _segment(index: int, path: Path, folder: Path, kind: str) -> dict[str, Any]:
    doc, problems = read_memory(path, strict=False)
    return {
        "segment": index,
        "file": path.relative_to(folder).as_posix(),
        "kind": kind,
        **doc.to_dict(),
        "problems": [{"line": p.line, "kind": p.kind, "message": p.message} for p in problems],
    }


def export_document(
    agent_name: str, workspace_dir: str | os.PathLike[str] | None = None
) -> dict[str, Any]:
    """Everything of one agent as a JSON-ready dict (read under the agent's lock).

    ``segments``: the archives oldest first (by name time), then MEMORY.md — each with its
    header fields, ``continues`` (lineage), messages and format problems; ``lineage``: the
    chain of ``**Continues:**`` links from MEMORY.md back, oldest first (``missing_archives``:
    names on it whose file was deleted by retention or purge); ``records``: the lines of
    ``compactions.jsonl`` (compactions and deletions); ``workspace``: the absolute workspace
    folder it was exported from (what :func:`load_export` puts in its ``workspace`` and
    ``file`` columns unless told another).
    """
    paths = existing_agent(agent_name, workspace_dir)
    store = MemoryStore.for_agent(agent_name, workspace_dir)
    with store.locked():
        pending = store.pending_archive()
        archives = [p for p in store.archives_oldest_first() if p.name != pending]
        segments = [_segment(i, p, paths.folder, "archive") for i, p in enumerate(archives)]
        if paths.memory_md.is_file():
            segments.append(_segment(len(segments), paths.memory_md, paths.folder, "memory"))
        records = store.records()
    by_name = {s["file"].rsplit("/", 1)[-1]: s for s in segments if s["kind"] == "archive"}
    lineage: list[str] = []
    missing: list[str] = []
    current = segments[-1] if segments and segments[-1]["kind"] == "memory" else None
    if current is not None:
        lineage.append("MEMORY.md")
        while current is not None and current["continues"] and current["continues"] not in lineage:
            name = str(current["continues"])
            lineage.append(name)
            current = by_name.get(name)
            if current is None:
                missing.append(name)
    return {
        "memorylab_export": EXPORT_VERSION,
        "format_version": fmt.FORMAT_VERSION,
        "agent": agent_name,
        "workspace": str(paths.folder.parent.parent),
        "exported_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "segments": segments,
        "lineage": lineage[::-1],
        "missing_archives": missing,
        "records": records,
    }


def _parquet_bytes(doc: dict[str, Any]) -> bytes:
    try:
        pa: Any = importlib.import_module("pyarrow")
        pq: Any = importlib.import_module("pyarrow.parquet")
    except ImportError:
        raise PrerequisiteError(
            'parquet export needs pyarrow: pip install "memorylab[data]" (or use format="json")'
        ) from None
    columns: dict[str, list[Any]] = {
        key: []
        for key in (
            "agent", "segment", "file", "segment_kind", "conversation_name", "continues",
            "position", "role", "content", "timestamp", "is_summary",
        )
    }  # fmt: skip
    for seg in doc["segments"]:
        for position, message in enumerate(seg["messages"]):
            for key, value in (
                ("agent", doc["agent"]), ("segment", seg["segment"]), ("file", seg["file"]),
                ("segment_kind", seg["kind"]), ("conversation_name", seg["conversation_name"]),
                ("continues", seg["continues"]), ("position", position),
                ("role", message["role"]), ("content", message["content"]),
                ("timestamp", message["timestamp"]),
                ("is_summary", message["content"].startswith("[Compressed Memory Summary]")),
            ):  # fmt: skip
                columns[key].append(value)
    types = {"segment": pa.int32(), "position": pa.int32(), "is_summary": pa.bool_()}
    table = pa.table(
        {key: pa.array(values, type=types.get(key, pa.string())) for key, values in columns.items()}
    )
    header = {k: v for k, v in doc.items() if k != "segments"}
    header["segments"] = [{k: v for k, v in s.items() if k != "messages"} for s in doc["segments"]]
    table = table.replace_schema_metadata(
        {b"memorylab_export": json.dumps(header, ensure_ascii=False, default=str).encode()}
    )
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return bytes(sink.getvalue().to_pybytes())


def export_agent(
    agent_name: str,
    workspace_dir: str | os.PathLike[str] | None = None,
    format: Literal["json", "parquet"] = "json",
    path: str | os.PathLike[str] | None = None,
    *,
    overwrite: bool = False,
) -> Path:
    """Write one agent's whole memory to a file and return its path.

    ``format="json"``: the :func:`export_document` dict (UTF-8, indented). ``"parquet"``: one
    row per message (``agent, segment, file, segment_kind, conversation_name, continues,
    position, role, content, timestamp, is_summary``) with the rest of the document (lineage,
    records, segment headers) as JSON in the schema metadata key ``memorylab_export``; needs
    pyarrow (``pip install "memorylab[data]"``). ``path`` defaults to
    ``./<agent>.export.<format>``. The file is created private (0o600); an existing file is an
    error unless ``overwrite=True``.
    """
    if format not in ("json", "parquet"):
        raise InvalidSetting(f"export format must be 'json' or 'parquet', got {format!r}")
    doc = export_document(agent_name, workspace_dir)
    if format == "json":
        data = (json.dumps(doc, ensure_ascii=False, indent=2, default=str) + "\n").encode()
    else:
        data = _parquet_bytes(doc)
    target = Path(path) if path is not None else Path(f"{agent_name}.export.{format}")
    target = target.expanduser().absolute()
    _write_private(target, data, overwrite=overwrite)
    return target


def _write_private(target: Path, data: bytes, *, overwrite: bool) -> None:
    """Create ``target`` 0o600 (atomically replacing it only with ``overwrite``)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}") if overwrite else target
    try:
        fd = os.open(tmp, flags, 0o600)
    except FileExistsError:
        raise StoreError(f"{target} exists; choose another path or pass overwrite=True") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if overwrite:
            os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


# ---------------------------------------------------------------------------------------------
# Load an export back


_HEADER_FIELDS = ("conversation_name", "created", "format_version", "continues", "extra_header")
_PARQUET_MAGIC = b"PAR1"


def _read_export(source: Path) -> dict[str, Any]:
    """The export document of a json or parquet export (parquet rows back into segments)."""
    try:
        with source.open("rb") as handle:
            magic = handle.read(4)
    except FileNotFoundError:
        raise StoreError(f"{source} does not exist") from None
    if magic != _PARQUET_MAGIC:
        try:
            doc = json.loads(source.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise StoreError(
                f"{source} is not a memorylab export (json or parquet): {exc}"
            ) from None
    else:
        try:
            pq: Any = importlib.import_module("pyarrow.parquet")
        except ImportError:
            raise PrerequisiteError(
                f'reading the parquet export {source} needs pyarrow: pip install "memorylab[data]"'
            ) from None
        table = pq.read_table(source)
        raw = (table.schema.metadata or {}).get(b"memorylab_export")
        if raw is None:
            raise StoreError(f"{source} is a parquet file without memorylab_export metadata")
        doc = json.loads(raw)
        messages: dict[int, list[dict[str, Any]]] = {}
        columns = table.select(["segment", "role", "content", "timestamp"]).to_pydict()
        for segment, role, content, timestamp in zip(
            columns["segment"], columns["role"], columns["content"], columns["timestamp"],
            strict=True,
        ):  # fmt: skip
            messages.setdefault(segment, []).append(
                {"role": role, "content": content, "timestamp": timestamp}
            )
        if isinstance(doc, dict) and isinstance(doc.get("segments"), list):
            for seg in doc["segments"]:
                seg["messages"] = messages.get(seg["segment"], [])
    if not isinstance(doc, dict) or "memorylab_export" not in doc:
        raise StoreError(f"{source} is not a memorylab export (no memorylab_export field)")
    if doc["memorylab_export"] != EXPORT_VERSION:
        raise StoreError(
            f"{source} is a memorylab export of version {doc['memorylab_export']!r}; this "
            f"memorylab reads version {EXPORT_VERSION}"
        )
    return doc


def _timeline(segments: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The segments in the order ``memory_df`` reads an agent folder, duplicates dropped.

    The same rules as :mod:`memorylab.analysis` (its ``_sources`` docstring): the lineage chain
    from MEMORY.md back, archives off the chain before it by name time; an archive that is the
    start of the next file (the reference framework's crash leftover) is read once, from the
    later file. The export already leaves out an uncommitted archive.
    """
    archives = [s for s in segments if s["kind"] == "archive"]
    memory = next((s for s in segments if s["kind"] == "memory"), None)
    by_name = {str(s["file"]).rsplit("/", 1)[-1]: s for s in archives}

    def name_key(name: str) -> tuple[datetime, int, str]:
        parsed = fmt.parse_archive_name(name)
        when, attempt = parsed if parsed is not None else (datetime.min, 0)
        return when, attempt, name

    live = memory["continues"] if memory is not None else None
    referenced = {s["continues"] for s in archives if s["continues"]} | ({live} if live else set())
    start = live if live in by_name else None
    if start is None:
        heads = [name for name in by_name if name not in referenced]
        start = max(heads, key=name_key) if heads else None
    chain: list[dict[str, Any]] = []
    seen: set[str] = set()
    while start is not None and start in by_name and start not in seen:
        seen.add(start)
        chain.append(by_name[start])
        start = by_name[start]["continues"]
    rest = [by_name[name] for name in sorted(set(by_name) - seen, key=name_key)]
    ordered = [*rest, *reversed(chain), *([memory] if memory is not None else [])]
    kept: list[dict[str, Any]] = []
    for seg in ordered:
        if kept and _starts(kept[-1], seg):
            kept.pop()
        kept.append(seg)
    return kept


def _starts(earlier: dict[str, Any], later: dict[str, Any]) -> bool:
    """Whether the file of ``earlier`` is the beginning of the file of ``later``."""
    head = [earlier.get(key) for key in _HEADER_FIELDS]
    if head != [later.get(key) for key in _HEADER_FIELDS]:
        return False
    if not earlier["messages"] and earlier.get("conversation_name") is None:
        return False  # an empty file is the start of nothing
    count = len(earlier["messages"])
    return bool(later["messages"][:count] == earlier["messages"])


def load_export(
    path: str | os.PathLike[str],
    *,
    workspace_dir: str | os.PathLike[str] | None = None,
    tokens: str | None = None,
    naive_tz: tzinfo | None = None,
) -> pd.DataFrame:
    """An export (json or parquet, as :func:`export_agent` writes it) as the DataFrame
    :func:`memorylab.analysis.memory_df` gives for the agent folder it was exported from.

    Same columns, dtypes, rows and order: segments in timeline order (lineage first),
    ``segment`` 0 … n, ``position``, ``timeline``, ``role``, ``timestamp`` (UTC; naive stamps
    read in ``naive_tz``, default local time, with ``naive_timestamp`` set), ``content``,
    ``chars``, ``is_summary`` and ``tokens`` when ``tokens`` names a model. ``workspace`` and
    ``file`` name where the memory was exported from (the export's ``workspace``), or
    ``workspace_dir`` when given (after copying an export to another machine). The format is
    read from the file, not its name. Parquet needs pyarrow (``pip install "memorylab[data]"``).
    Logs a warning if group or others can read the file (see :func:`warn_permissions`).
    """
    import numpy as np
    import pandas as pd

    from memorylab.analysis._scan import convert_stamps

    source = Path(path).expanduser()
    doc = _read_export(source)
    warn_permissions(source)
    workspace = Path(workspace_dir if workspace_dir is not None else doc.get("workspace") or ".")
    agent = str(doc["agent"])
    folder = workspace.expanduser() / "agents" / agent
    segments = _timeline(list(doc["segments"]))
    messages = [m for seg in segments for m in seg["messages"]]
    counts = [len(seg["messages"]) for seg in segments]
    sizes = np.array(counts, dtype=np.int64)
    stamps = [str(m["timestamp"]).encode("ascii") for m in messages]
    converted = convert_stamps(stamps, naive_tz)
    if converted is None:
        raise StoreError(f"{source}: a message timestamp is not ISO-8601")
    utc, naive = converted
    contents = [str(m["content"]) for m in messages]

    def repeated(labels: list[str]) -> Any:
        categories = list(dict.fromkeys(labels))
        index = {label: i for i, label in enumerate(categories)}
        codes = np.repeat(np.array([index[label] for label in labels], dtype=np.int32), sizes)
        return pd.Categorical.from_codes(codes, categories=pd.Index(categories, dtype=object))

    total = len(messages)
    offsets = np.repeat(np.cumsum(sizes) - sizes, sizes) if total else np.empty(0, np.int64)
    columns: dict[str, Any] = {
        "workspace": repeated([str(workspace)] * len(segments)),
        "agent": repeated([agent] * len(segments)),
        "file": repeated([str(folder / seg["file"]) for seg in segments]),
        "kind": pd.Categorical.from_codes(
            np.repeat(np.array([s["kind"] == "memory" for s in segments], dtype=np.int8), sizes),
            categories=pd.Index(["archive", "memory"], dtype=object),
        ),
        "segment": np.repeat(np.arange(len(segments), dtype=np.int64), sizes),
        "position": np.arange(total, dtype=np.int64) - offsets,
        "timeline": np.arange(total, dtype=np.int64),
        "role": pd.Categorical([str(m["role"]) for m in messages]),
        "timestamp": pd.to_datetime(utc, unit="us", utc=True),
        "naive_timestamp": naive,
        "content": pd.array(contents, dtype=object),
        "chars": np.fromiter(map(len, contents), dtype=np.int64, count=total),
        "is_summary": np.array([c.startswith(SUMMARY_PREFIX) for c in contents], dtype=bool),
    }
    if tokens is not None:
        from memorylab.compress.tokens import get_token_counter

        columns["tokens"] = np.array(get_token_counter(tokens).count_batch(contents), np.int64)
    return pd.DataFrame(columns, copy=False)
