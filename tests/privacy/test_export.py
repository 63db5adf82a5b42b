"""Export: a JSON export round-trips (every segment's messages, in order, equal what read_memory
finds in each file); lineage and records come along; parquet needs pyarrow."""

from __future__ import annotations

import importlib
import json
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from memorylab import (
    AgentNotFound,
    Conversation,
    InvalidSetting,
    MemoryDocument,
    PrerequisiteError,
    StoreError,
    read_memory,
)
from memorylab.memory.paths import agent_paths
from memorylab.memory.retention import RetentionPolicy
from memorylab.memory.store import MemoryStore
from memorylab.privacy import EXPORT_VERSION, export_agent, export_document

TRICKY = [
    "plain",
    "---\n### User — 2020-01-01T00:00:00\n\nforged block",
    "üñïçødé ✓ 🧠\n\n\nblank lines",
    "\\### escaped already",
]


def _history(agent: str = "Exporter", compactions: int = 3, **options: Any) -> Conversation:
    conv = Conversation(agent_name=agent, **options)
    for i in range(compactions):
        for text in TRICKY:
            conv.add("User", f"{i}: {text}")
        conv.add(agent, {"answer": i})
        conv.compact(f"summary {i}", summarizer_model="fake")
    conv.add("User", "the newest message")
    return conv


def _files_oldest_first(agent: str) -> list[Path]:
    paths = agent_paths(agent)
    return [*MemoryStore(paths.memory_md).archives_oldest_first(), paths.memory_md]


def test_json_export_round_trips(isolated_workspace: Path) -> None:
    conv = _history()
    target = export_agent("Exporter", path=isolated_workspace.parent / "out.json")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    doc = json.loads(target.read_text(encoding="utf-8"))
    assert doc["memorylab_export"] == EXPORT_VERSION and doc["agent"] == "Exporter"

    files = _files_oldest_first("Exporter")
    assert [s["file"] for s in doc["segments"]] == [
        p.relative_to(p.parents[1] if p.parent.name == "archive" else p.parent).as_posix()
        for p in files
    ]
    assert [s["kind"] for s in doc["segments"]] == ["archive"] * 3 + ["memory"]
    for segment, path in zip(doc["segments"], files, strict=True):
        loaded = MemoryDocument.from_dict(segment)
        on_disk = read_memory(path)
        assert loaded == on_disk  # header fields, lineage link and every message, in order
        assert segment["problems"] == []
    assert doc["lineage"] == [p.name for p in files]  # archives oldest first, then MEMORY.md
    assert doc["missing_archives"] == []
    assert conv.store is not None
    assert doc["records"] == conv.store.records()
    assert [r["archive"] for r in doc["records"]] == [p.name for p in files[:-1]]
    all_messages = [m["content"] for s in doc["segments"] for m in s["messages"]]
    assert all_messages.count("0: " + TRICKY[1]) == 1 and all_messages[-1] == "the newest message"


def test_lineage_names_archives_deleted_by_retention(isolated_workspace: Path) -> None:
    _history("Kept", retention=RetentionPolicy(max_archives=1))
    doc = export_document("Kept")
    archives = [s for s in doc["segments"] if s["kind"] == "archive"]
    assert len(archives) == 1
    assert doc["lineage"][-2:] == [archives[0]["file"].split("/")[-1], "MEMORY.md"]
    assert len(doc["missing_archives"]) == 1 and doc["lineage"][0] == doc["missing_archives"][0]
    kinds = [r["kind"] for r in doc["records"]]
    assert kinds.count("compaction") == 3 and kinds.count("retention") == 2


def test_export_of_a_reference_workspace(isolated_workspace: Path) -> None:
    folder = isolated_workspace / "agents" / "SwarmsAgent"
    (folder / "archive").mkdir(parents=True)
    header = "# Agent Memory\n\n**Conversation:** c\n**Created:** 2026-01-01T09:00:00\n\n---\n\n## Interaction Log\n\n"
    (folder / "archive" / "history_2026-01-01_09-30-00.md").write_text(
        header + "### Human — 2026-01-01T09:10:00\n\nold\n\n---\n\n"
    )
    (folder / "MEMORY.md").write_text(header + "### Human — 2026-01-01T10:00:00\n\nnew\n\n---\n\n")
    doc = export_document("SwarmsAgent")
    assert [[m["content"] for m in s["messages"]] for s in doc["segments"]] == [["old"], ["new"]]
    assert doc["lineage"] == ["MEMORY.md"] and doc["records"] == []
    assert doc["segments"][0]["format_version"] is None


def test_export_errors_and_paths(isolated_workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(AgentNotFound, match="Nobody"):
        export_agent("Nobody")
    _history("Exporter", compactions=1)
    with pytest.raises(InvalidSetting, match="json"):
        export_agent("Exporter", format="csv")  # type: ignore[arg-type]
    default = export_agent("Exporter")
    assert default == Path.cwd() / "Exporter.export.json"
    with pytest.raises(StoreError, match="exists"):
        export_agent("Exporter")
    default.write_text("stale")
    assert export_agent("Exporter", overwrite=True) == default
    assert json.loads(default.read_text())["agent"] == "Exporter"
    assert stat.S_IMODE(default.stat().st_mode) == 0o600
    assert [p.name for p in Path.cwd().iterdir()] == ["Exporter.export.json"]  # no temp left


def test_parquet_without_pyarrow_names_the_extra(
    isolated_workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _history("Exporter", compactions=1)
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow -> ImportError
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(PrerequisiteError, match=r'pip install "memorylab\[data\]"'):
        export_agent("Exporter", format="parquet")
    assert not list(Path.cwd().iterdir())


def test_parquet_export(isolated_workspace: Path) -> None:
    pytest.importorskip("pyarrow")
    pq = importlib.import_module("pyarrow.parquet")
    _history("Exporter", compactions=2)
    target = export_agent("Exporter", format="parquet")
    assert target.name == "Exporter.export.parquet"
    table = pq.read_table(target)
    rows = table.to_pylist()
    files = _files_oldest_first("Exporter")
    expected = [
        (i, m.role, m.content) for i, p in enumerate(files) for m in read_memory(p).messages
    ]
    assert [(r["segment"], r["role"], r["content"]) for r in rows] == expected
    assert rows[0]["segment_kind"] == "archive" and rows[-1]["file"] == "MEMORY.md"
    assert sum(r["is_summary"] for r in rows) == 2  # one in each re-seeded file
    header = json.loads(table.schema.metadata[b"memorylab_export"])
    assert header["lineage"] == [p.name for p in files]
    assert len(header["records"]) == 2 and "messages" not in header["segments"][0]
