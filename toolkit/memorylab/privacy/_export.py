"""Export one agent's memory to a file, and load an export back (internal; the public names are
in :mod:`memorylab.privacy`).

Exports are read under the agent's lock; :func:`load_export` gives the very frame
:func:`memorylab.analysis.memory_df` gives for the agent folder: the export's documents go
through :func:`memorylab.analysis._frames.documents_df`, the same timeline rules and frame
builder (pandas and pyarrow are imported when needed).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from memorylab._names import renamed_keyword
from memorylab.errors import InvalidSetting, PrerequisiteError, StoreError
from memorylab.memory import _format as fmt
from memorylab.memory._fsutil import write_private_file
from memorylab.memory._permissions import warn_permissions
from memorylab.memory._records import MemoryDocument
from memorylab.memory._store import MemoryStore, read_memory
from memorylab.privacy._remove import existing_agent

if TYPE_CHECKING:
    import pandas as pd

EXPORT_VERSION = 1
"""``memorylab_export`` in an export document: bumped when its layout changes."""


# ---------------------------------------------------------------------------------------------
# Export


def _segment(index: int, path: Path, folder: Path, kind: str) -> dict[str, Any]:
    read = read_memory(path, strict=False)
    return {
        "segment": index,
        "file": path.relative_to(folder).as_posix(),
        "kind": kind,
        **read.document.to_dict(),
        "problems": [{"line": p.line, "kind": p.kind, "message": p.message} for p in read.problems],
    }


def export_document(
    agent_name: str, workspace_dir: str | os.PathLike[str] | None = None
) -> dict[str, Any]:
    """Everything of one agent as a JSON-ready dict (read under the agent's lock).

    ``segments``: the archives oldest first (by name time), then MEMORY.md — each with its
    header fields, ``continues`` (lineage), messages and format problems; ``lineage``: the
    chain of ``**Continues:**`` links from MEMORY.md back, oldest first (``missing_archives``:
    names on it whose file was deleted by retention or purge); ``records``: the lines of
    ``compactions.jsonl`` (compactions and deletions); ``usage``: the lines of ``usage.jsonl``
    (one per model call of the Agent, counts only); ``pins``: the lines of ``pins.jsonl`` (each
    pin and unpin of a message: its role, timestamp and content hash, no text); ``workspace``:
    the absolute workspace folder it was exported from (what :func:`load_export` puts in its
    ``workspace`` and ``file`` columns unless told another).
    """
    paths = existing_agent(agent_name, workspace_dir)
    store = MemoryStore(paths.memory_md, agent_root=paths.folder.parent)
    with store.locked():
        pending = store.pending_archive()
        archives = [p for p in store.archives_oldest_first() if p.name != pending]
        segments = [_segment(i, p, paths.folder, "archive") for i, p in enumerate(archives)]
        if paths.memory_md.is_file():
            segments.append(_segment(len(segments), paths.memory_md, paths.folder, "memory"))
        records = store.records()
        usage = store.usage_records()
        pins = store.pin_records()
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
        "workspace": str(paths.folder.parents[agent_name.count("/") + 1]),  # team/alpha: 3 up
        "exported_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "segments": segments,
        "lineage": lineage[::-1],
        "missing_archives": missing,
        "records": records,
        "usage": usage,
        "pins": pins,
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
    records, usage, pins, segment headers) as JSON in the schema metadata key
    ``memorylab_export``; needs pyarrow (``pip install "memorylab[data]"``). ``agent_name`` is
    the name the loaders and ``memorylab ls`` print (a nested agent: ``team/alpha``). ``path``
    defaults to ``./<agent>.export.<format>`` (``./team__alpha.export.json`` for a nested
    agent). Raises ``UnsafePath`` at once, writing nothing, when a memory file is not a regular
    file (a FIFO, a symlink). The file is created private (0o600); an existing file is an error
    unless ``overwrite=True``.
    """
    if format not in ("json", "parquet"):
        raise InvalidSetting(f"export format must be 'json' or 'parquet', got {format!r}")
    doc = export_document(agent_name, workspace_dir)
    if format == "json":
        data = (json.dumps(doc, ensure_ascii=False, indent=2, default=str) + "\n").encode()
    else:
        data = _parquet_bytes(doc)
    target = Path(path) if path is not None else _default_export_path(agent_name, format)
    target = target.expanduser().absolute()
    write_private_file(target, data, overwrite=overwrite)
    return target


# ---------------------------------------------------------------------------------------------
# Load an export back


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


def load_export(
    path: str | os.PathLike[str],
    *,
    workspace_dir: str | os.PathLike[str] | None = None,
    model: str | None = None,
    naive_tz: tzinfo | None = None,
    tokens: str | None = None,
) -> pd.DataFrame:
    """An export (json or parquet, as :func:`export_agent` writes it) as the DataFrame
    :func:`memorylab.analysis.memory_df` gives for the agent folder it was exported from.

    Same columns, dtypes, rows and order: segments in timeline order (lineage first),
    ``segment`` 0 … n, ``position``, ``timeline``, ``role``, ``timestamp`` (UTC; naive stamps
    read in ``naive_tz``, default local time, with ``naive_timestamp`` set), ``content``,
    ``chars``, ``is_summary`` and ``tokens`` when ``model`` names a tokenizer model
    (``tokens=`` is its deprecated name, for this release). ``workspace`` and
    ``file`` name where the memory was exported from (the export's ``workspace``), or
    ``workspace_dir`` when given (after copying an export to another machine). The format is
    read from the file, not its name. Parquet needs pyarrow (``pip install "memorylab[data]"``).
    Logs a warning if group or others can read the file (see :func:`warn_permissions`).
    """
    from memorylab.analysis._frames import documents_df
    from memorylab.memory._records import edit_archives

    model = renamed_keyword("load_export", "tokens", "model", tokens, model)
    source = Path(path).expanduser()
    doc = _read_export(source)
    warn_permissions(source)
    workspace = Path(workspace_dir if workspace_dir is not None else doc.get("workspace") or ".")
    folder = workspace / "agents" / str(doc["agent"])
    try:
        documents = [
            (folder / seg["file"], MemoryDocument.from_dict(seg)) for seg in doc["segments"]
        ]
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreError(
            f"{source}: a segment of the export is not readable ({exc}); export the agent again"
        ) from None
    records = doc.get("records")
    names = [Path(str(seg.get("file", ""))).name for seg in doc["segments"]]
    edits = edit_archives(records if isinstance(records, list) else [], names)
    return documents_df(documents, model=model, naive_tz=naive_tz, edits=edits)


def _default_export_path(agent_name: str, format: str) -> Path:
    """``<agent>.export.<format>`` in the current folder; a name too long for a file name (the
    limit is 255 bytes, an agent name may use them all) is cut and told apart by a hash."""
    suffix = f".export.{format}"
    name = agent_name.replace("/", "__") + suffix  # a nested agent: team/alpha -> team__alpha
    if len(name.encode("utf-8")) <= 255:
        return Path(name)
    digest = hashlib.sha256(agent_name.encode("utf-8")).hexdigest()[:12]
    room = 255 - len(suffix) - len(digest) - 1
    head = name[: -len(suffix)].encode("utf-8")[:room].decode("utf-8", errors="ignore")
    return Path(f"{head}-{digest}{suffix}")
