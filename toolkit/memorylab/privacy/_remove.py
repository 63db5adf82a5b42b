"""Data controls over a workspace: forget an agent, purge old memory, export, check permissions.

Everything that deletes goes through :class:`~memorylab.memory.store.MemoryStore` (the only
module that writes or deletes memory files), under the agent's lock. This module depends only on
``memorylab.memory``, ``config`` and ``errors``, so loaders may import :func:`check_permissions`.
See ``docs/privacy.md`` for what is stored, where, for how long, and how to remove it.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import stat
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from memorylab.config import resolve_workspace
from memorylab.errors import (
    AgentNotFound,
    InvalidSetting,
    PrerequisiteError,
    StoreError,
    UnsafePath,
)
from memorylab.memory import format as fmt
from memorylab.memory.paths import MemoryPaths, agent_paths, validate_agent_name
from memorylab.memory.records import SUMMARY_PREFIX
from memorylab.memory.retention import format_duration, parse_duration
from memorylab.memory.retention import older_than as archives_older_than
from memorylab.memory.store import MemoryStore, read_memory

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "EXPORT_VERSION",
    "ForgetReport",
    "PurgeItem",
    "check_permissions",
    "export_agent",
    "export_document",
    "forget",
    "load_export",
    "purge",
    "warn_permissions",
]

logger = logging.getLogger(__name__)

EXPORT_VERSION = 1
"""``memorylab_export`` in an export document: bumped when its layout changes."""


# ---------------------------------------------------------------------------------------------
# Forget


@dataclass(frozen=True, slots=True)
class ForgetReport:
    """What :func:`forget` removed: the agent folder and every file that was in it."""

    agent: str
    folder: Path
    files: tuple[str, ...]
    bytes_removed: int

    def __str__(self) -> str:
        return (
            f"forgot {self.agent!r}: removed {len(self.files)} file(s), {self.bytes_removed} "
            f"bytes, and the folder {self.folder}"
        )


def _existing_agent(agent_name: str, workspace_dir: str | os.PathLike[str] | None) -> MemoryPaths:
    paths = agent_paths(agent_name, workspace_dir)
    try:
        info = os.lstat(paths.folder)
    except FileNotFoundError:
        known = _agent_names(paths.folder.parent)
        hint = f"agents there: {', '.join(known[:10])}" if known else "it has no agents"
        raise AgentNotFound(
            f"no memory for agent {agent_name!r}: {paths.folder} does not exist ({hint}); "
            "check the name and the workspace (workspace_dir, else $WORKSPACE_DIR)"
        ) from None
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise UnsafePath(f"{paths.folder} is not a folder (a symlink?); refusing to touch it")
    return paths


def _agent_names(agents_dir: Path) -> list[str]:
    try:
        entries = sorted(os.scandir(agents_dir), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    names = []
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            with contextlib.suppress(ValueError):
                names.append(validate_agent_name(entry.name))
    return names


def forget(
    agent_name: str,
    workspace_dir: str | os.PathLike[str] | None = None,
    *,
    lock_timeout: float = 30.0,
) -> ForgetReport:
    """Remove everything memorylab keeps for ``agent_name``, for good, and verify it is gone.

    MEMORY.md, every archive, ``compactions.jsonl``, the lock, journal and temp files, and any
    other file in the agent's folder (caches) are deleted under the agent's lock, so a running
    writer cannot resurrect them: its next ``add()`` raises ``StoreError``. A new
    ``Conversation`` made afterwards starts a fresh, empty folder. Works on folders written by
    the reference framework too. Raises ``AgentNotFound`` for an unknown agent and
    ``StoreError`` if anything is left afterwards.
    """
    paths = _existing_agent(agent_name, workspace_dir)
    store = MemoryStore.for_agent(agent_name, workspace_dir, lock_timeout=lock_timeout)
    removed = store.forget(whole_folder=True)
    return ForgetReport(
        agent=agent_name,
        folder=paths.folder,
        files=tuple(name for name, _ in removed),
        bytes_removed=sum(size for _, size in removed),
    )


# ---------------------------------------------------------------------------------------------
# Purge


@dataclass(frozen=True, slots=True)
class PurgeItem:
    """One thing :func:`purge` removed (or, with ``dry_run``, would remove).

    ``kind`` is ``"archive"`` (one archive file) or ``"agent"`` (the whole agent, forgotten);
    ``time`` is what made it old: the archive's name time, or the last change of the agent.
    """

    agent: str
    kind: Literal["archive", "agent"]
    path: Path
    time: datetime
    reason: str

    def __str__(self) -> str:
        what = "the whole agent" if self.kind == "agent" else "archive"
        return f"{self.agent}: {what} {self.path} ({self.reason})"


def _last_change(folder: Path, lock: Path) -> datetime | None:
    """The newest modification time of the memory files in ``folder`` (the lock file aside)."""
    newest: float | None = None
    for top, _, files in os.walk(folder):
        for name in files:
            path = Path(top, name)
            if path == lock:
                continue
            with contextlib.suppress(FileNotFoundError):
                mtime = os.lstat(path).st_mtime
                newest = mtime if newest is None else max(newest, mtime)
    return None if newest is None else datetime.fromtimestamp(newest, UTC)


def purge(
    workspace_dir: str | os.PathLike[str] | None = None,
    older_than: timedelta | str = "30d",
    dry_run: bool = False,
    *,
    now: datetime | None = None,
    lock_timeout: float = 30.0,
) -> list[PurgeItem]:
    """Remove memory older than ``older_than`` from every agent of a workspace.

    * an agent none of whose files changed since the cutoff (MEMORY.md not written to, no
      compaction) is forgotten whole, as by :func:`forget`;
    * otherwise its archives whose name time is before the cutoff are deleted, and each
      deletion is recorded in ``compactions.jsonl`` (kind ``"purge"``).

    MEMORY.md itself is never trimmed: it holds the messages since the last compaction (use
    compaction and a ``RetentionPolicy`` to bound it). ``dry_run=True`` only lists what would
    go. ``now`` (default: the current time) is for tests and reports. Returns the items, agents
    in name order, archives oldest first; a missing workspace has nothing to purge.
    """
    when = now or datetime.now(UTC)
    when = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    cutoff = when - parse_duration(older_than)
    label = f"purge older_than={format_duration(parse_duration(older_than))}"
    agents_dir = resolve_workspace(workspace_dir) / "agents"
    items: list[PurgeItem] = []
    for agent in _agent_names(agents_dir):
        paths = MemoryPaths(agents_dir / agent / "MEMORY.md")
        last = _last_change(paths.folder, paths.lock)
        if last is None or last < cutoff:
            since = "no memory files" if last is None else f"last change {last.isoformat()}"
            item = PurgeItem(agent, "agent", paths.folder, last or cutoff, f"{label}: {since}")
            if dry_run or _purge_agent(paths, agent, cutoff, lock_timeout):
                items.append(item)
            continue
        names = [p.name for p in paths.archives()]
        doomed = archives_older_than(names, cutoff, rule="purge", label=label)
        if not doomed:
            continue
        if not dry_run:
            store = MemoryStore(paths.memory_md, agent_root=agents_dir, lock_timeout=lock_timeout)
            gone = set()
            for deletion in doomed:
                gone.update(
                    store.delete_archives(
                        [deletion.name], reason=deletion.reason, kind="purge", agent=agent
                    )
                )
            doomed = [d for d in doomed if d.name in gone]
        items += [
            PurgeItem(agent, "archive", paths.archive_dir / d.name, d.created, d.reason)
            for d in doomed
        ]
    return items


def _purge_agent(paths: MemoryPaths, agent: str, cutoff: datetime, lock_timeout: float) -> bool:
    """Forget an idle agent, unless it changed meanwhile (checked again under its lock)."""
    store = MemoryStore(paths.memory_md, agent_root=paths.folder.parent, lock_timeout=lock_timeout)
    with store.locked():
        last = _last_change(paths.folder, paths.lock)
        if last is not None and last >= cutoff:
            return False
        store.forget(whole_folder=True)
    return True


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
    paths = _existing_agent(agent_name, workspace_dir)
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


# ---------------------------------------------------------------------------------------------
# Permissions


def _not_private(path: str | os.PathLike[str]) -> list[tuple[Path, int]]:
    """``(entry, mode)`` of each file or folder under ``path`` that group or others can access."""
    root = Path(path)
    try:
        os.lstat(root)
    except FileNotFoundError:
        raise StoreError(f"{root} does not exist") from None
    found = [root]
    if root.is_dir() and not root.is_symlink():
        for top, dirs, files in os.walk(root):
            found += [Path(top, name) for name in sorted(dirs) + sorted(files)]
    shared = []
    for entry in found:
        with contextlib.suppress(FileNotFoundError):
            mode = os.lstat(entry).st_mode
            if not stat.S_ISLNK(mode) and mode & 0o077:
                shared.append((entry, mode))
    return shared


def check_permissions(path: str | os.PathLike[str]) -> list[str]:
    """Memory files and folders under ``path`` (a file, an agent folder or a workspace) that
    group or others can access, one warning each; ``[]`` when all are private.

    memorylab creates folders 0o700 and files 0o600; files copied, unpacked or written by the
    reference framework are often 0o644/0o755. Symlinks are not followed.
    """
    warnings = []
    for entry, mode in _not_private(path):
        who = " and ".join(w for w, bits in (("group", 0o70), ("others", 0o7)) if mode & bits)
        can = "read" if mode & 0o044 else "access"
        private = "700" if stat.S_ISDIR(mode) else "600"
        warnings.append(
            f"{entry}: {who} can {can} it (mode {stat.filemode(mode)}); memory may hold "
            f"private conversations: chmod {private} '{entry}'"
        )
    return warnings


_WARNED: set[tuple[str, tuple[tuple[Path, int], ...]]] = set()
_SHOWN = 3


def warn_permissions(path: str | os.PathLike[str]) -> list[str]:
    """Log one warning (logger ``memorylab.privacy``) when memory under ``path`` (a file, an
    agent folder or a workspace) can be accessed by group or others, and return
    :func:`check_permissions`'s list (``[]``: all private, or ``path`` does not exist).

    For loaders: the same entries with the same modes are warned about once per process.
    Logging, not ``warnings.warn``: a notebook reading a copied workspace should be told, not
    stopped.
    """
    try:
        shared = _not_private(path)
    except StoreError:
        return []
    if not shared:
        return []
    key = (os.path.abspath(path), tuple(shared))
    if key not in _WARNED:
        _WARNED.add(key)
        names = ", ".join(str(entry) for entry, _ in shared[:_SHOWN])
        more = f" and {len(shared) - _SHOWN} more" if len(shared) > _SHOWN else ""
        logger.warning(
            "memorylab: %d memory file(s) or folder(s) under %s can be read by other users "
            "(%s%s); memory may hold private conversations. Make them private with: "
            "chmod -R go-rwx '%s'",
            len(shared),
            path,
            names,
            more,
            path,
        )
    return check_permissions(path)
