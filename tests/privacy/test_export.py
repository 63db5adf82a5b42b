"""Export: a JSON export round-trips (every segment's messages, in order, equal what read_memory
finds in each file); lineage and records come along; parquet needs pyarrow. ``load_export`` turns
an export (json or parquet, also one written by ``memorylab export``) back into the very frame
``memory_df`` gives for the agent folder, column by column, also on the bundled reference
workspace; it warns about an export others can read."""

from __future__ import annotations

import importlib
import json
import logging
import os
import shutil
import stat
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import pytest

from memorylab import Conversation, MemoryDocument, read_memory, render_memory
from memorylab.analysis import compactions_df, memory_df
from memorylab.cli import main
from memorylab.errors import AgentNotFound, InvalidSetting, PrerequisiteError, StoreError
from memorylab.memory._paths import agent_paths
from memorylab.memory._records import Message
from memorylab.memory._retention import RetentionPolicy
from memorylab.memory._store import MemoryStore
from memorylab.privacy import (
    EXPORT_VERSION,
    check_permissions,
    export_agent,
    export_document,
    load_export,
    warn_permissions,
)

REFERENCE = Path(__file__).parents[2] / "data" / "reference_workspace"

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
    assert doc["workspace"] == str(isolated_workspace)

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


# -- load_export: back into memory_df's frame ---------------------------------------------------

PARQUET = pytest.param(
    "parquet",
    marks=pytest.mark.skipif(
        importlib.util.find_spec("pyarrow") is None,
        reason="parquet export needs the optional extra memorylab[data] (pyarrow), not installed",
    ),
)
FORMATS = ["json", PARQUET]
Format = Literal["json", "parquet"]


def _assert_same_frame(loaded: pd.DataFrame, expected: pd.DataFrame) -> None:
    """``load_export``'s frame is ``memory_df``'s: same columns, and each column equal exactly
    (values, order, dtype, categories)."""
    assert list(loaded.columns) == list(expected.columns)
    for column in expected.columns:
        pd.testing.assert_series_equal(
            loaded[column], expected[column], check_exact=True, obj=f"column {column!r}"
        )
    pd.testing.assert_frame_equal(loaded, expected, check_exact=True)


@pytest.mark.parametrize("fmt", FORMATS)
def test_load_export_equals_memory_df(isolated_workspace: Path, fmt: Format) -> None:
    _history("Exporter", compactions=3)
    _history("Bystander", compactions=1)  # another agent of the workspace: not in the export
    target = export_agent("Exporter", format=fmt, path=isolated_workspace.parent / f"x.{fmt}")
    expected = memory_df(isolated_workspace / "agents" / "Exporter")
    loaded = load_export(target)
    _assert_same_frame(loaded, expected)
    # the frame is a real one: every segment, every message, lineage order, UTC times
    assert loaded["segment"].max() == 3 and list(loaded["kind"].unique()) == ["archive", "memory"]
    assert loaded["content"].iloc[-1] == "the newest message"
    assert (loaded["content"] == "0: " + TRICKY[1]).sum() == 1
    assert loaded["is_summary"].sum() == 3 and not loaded["naive_timestamp"].any()
    assert loaded["timestamp"].is_monotonic_increasing
    assert set(loaded["agent"]) == {"Exporter"}


def test_load_export_counts_tokens_like_memory_df(isolated_workspace: Path) -> None:
    _history("Exporter", compactions=1)
    target = export_agent("Exporter")
    expected = memory_df(isolated_workspace / "agents" / "Exporter", model="gpt-4o")
    _assert_same_frame(load_export(target, model="gpt-4o"), expected)
    with pytest.warns(
        DeprecationWarning, match=r"load_export\(tokens=\.\.\.\) is now load_export\(model="
    ):
        _assert_same_frame(load_export(target, tokens="gpt-4o"), expected)  # for one release


@pytest.mark.parametrize("fmt", FORMATS)
def test_load_export_after_retention_broke_the_lineage(
    isolated_workspace: Path, fmt: Format
) -> None:
    _history("Kept", compactions=4, retention=RetentionPolicy(max_archives=1))
    target = export_agent("Kept", format=fmt)
    expected = memory_df(isolated_workspace / "agents" / "Kept")
    assert expected["segment"].max() == 1  # one archive left, then MEMORY.md
    _assert_same_frame(load_export(target), expected)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("naive_tz", [None, timezone(timedelta(hours=-5))], ids=["local", "utc-5"])
def test_load_export_of_the_reference_workspace(
    isolated_workspace: Path, tmp_path: Path, fmt: Format, naive_tz: timezone | None
) -> None:
    shutil.copytree(REFERENCE, isolated_workspace)
    agents = sorted(p.name for p in (isolated_workspace / "agents").iterdir())
    assert agents == ["QuantAgent", "SupportBot"]
    for agent in agents:
        target = export_agent(agent, format=fmt, path=tmp_path / f"{agent}.{fmt}")
        expected = memory_df(isolated_workspace / "agents" / agent, naive_tz=naive_tz)
        loaded = load_export(target, naive_tz=naive_tz)
        _assert_same_frame(loaded, expected)
        archives = len(list((isolated_workspace / "agents" / agent / "archive").iterdir()))
        assert loaded["segment"].nunique() == archives + 1
        assert loaded["naive_timestamp"].all()  # the reference writes local times


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_cli_export_loads_back(
    isolated_workspace: Path, tmp_path: Path, fmt: Format, capsys: pytest.CaptureFixture[str]
) -> None:
    _history("Exporter", compactions=2)
    out = tmp_path / f"exported.{fmt}"
    assert main(["export", "Exporter", "--format", fmt, "-o", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    _assert_same_frame(load_export(out), memory_df(isolated_workspace / "agents" / "Exporter"))


def _write(path: Path, doc: MemoryDocument) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_memory(doc), encoding="utf-8")


@pytest.mark.parametrize("fmt", FORMATS)
def test_load_export_follows_lineage_not_names(isolated_workspace: Path, fmt: Format) -> None:
    """The lineage chain decides the order (as in memory_df), not the archive names: here the
    older name holds the newer archive; an archive off the chain comes first."""
    folder = isolated_workspace / "agents" / "Mixed"
    t0 = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)

    def doc(continues: str | None, *texts: str, version: int | None = 1) -> MemoryDocument:
        messages = tuple(
            Message("User", text, t0 + timedelta(minutes=i)) for i, text in enumerate(texts)
        )
        return MemoryDocument("c", t0, messages, format_version=version, continues=continues)

    _write(folder / "archive" / "history_2025-12-31_00-00-00.md", doc(None, "off", version=None))
    _write(folder / "archive" / "history_2026-01-02_00-00-00.md", doc(None, "first"))
    _write(
        folder / "archive" / "history_2026-01-01_00-00-00.md",
        doc("history_2026-01-02_00-00-00.md", "second"),
    )
    _write(folder / "MEMORY.md", doc("history_2026-01-01_00-00-00.md", "third"))
    exported = export_document("Mixed")
    assert [s["file"].split("_")[1] for s in exported["segments"][:3]] == [
        "2025-12-31", "2026-01-01", "2026-01-02",
    ]  # fmt: skip
    target = export_agent("Mixed", format=fmt)
    expected = memory_df(folder)
    assert list(expected["content"]) == ["off", "first", "second", "third"]
    _assert_same_frame(load_export(target), expected)


@pytest.mark.parametrize("fmt", FORMATS)
def test_load_export_reads_a_crash_leftover_once(isolated_workspace: Path, fmt: Format) -> None:
    """The reference framework, interrupted between archiving and re-seeding, leaves an archive
    that is the start of MEMORY.md: memory_df reads those messages once, and so does
    load_export (the export itself keeps both files)."""
    folder = isolated_workspace / "agents" / "Crashed"
    header = (
        "# Agent Memory\n\n**Conversation:** c\n**Created:** 2026-01-01T09:00:00\n\n---\n\n"
        "## Interaction Log\n\n"
    )
    first = "### Human — 2026-01-01T09:10:00\n\nbefore the crash\n\n---\n\n"
    (folder / "archive").mkdir(parents=True)
    (folder / "archive" / "history_2026-01-01_09-30-00.md").write_text(header + first)
    (folder / "MEMORY.md").write_text(
        header + first + "### Human — 2026-01-01T10:00:00\n\nafter it\n\n---\n\n"
    )
    assert len(export_document("Crashed")["segments"]) == 2
    expected = memory_df(folder)
    assert list(expected["content"]) == ["before the crash", "after it"]
    _assert_same_frame(load_export(export_agent("Crashed", format=fmt)), expected)


def test_load_export_of_an_empty_agent(isolated_workspace: Path) -> None:
    Conversation(agent_name="Quiet")  # MEMORY.md with a header, no message
    expected = memory_df(isolated_workspace / "agents" / "Quiet")
    assert len(expected) == 0
    _assert_same_frame(load_export(export_agent("Quiet")), expected)


def test_load_export_elsewhere_names_the_new_place(
    isolated_workspace: Path, tmp_path: Path
) -> None:
    _history("Exporter", compactions=1)
    target = export_agent("Exporter")
    moved = tmp_path / "other-machine"
    loaded = load_export(target, workspace_dir=moved)
    assert list(loaded["workspace"].cat.categories) == [str(moved)]
    assert list(loaded["file"].cat.categories) == [
        str(moved / "agents" / "Exporter" / s["file"])
        for s in export_document("Exporter")["segments"]
    ]
    expected = memory_df(isolated_workspace / "agents" / "Exporter")
    columns = [c for c in expected.columns if c not in ("workspace", "file")]
    _assert_same_frame(loaded[columns], expected[columns])


def test_load_export_errors(isolated_workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(StoreError, match="does not exist"):
        load_export("missing.json")
    Path("notes.txt").write_text("not json")
    with pytest.raises(StoreError, match="not a memorylab export"):
        load_export("notes.txt")
    Path("other.json").write_text('{"agent": "x"}')
    with pytest.raises(StoreError, match="no memorylab_export"):
        load_export("other.json")
    _history("Exporter", compactions=1)
    future = export_document("Exporter") | {"memorylab_export": EXPORT_VERSION + 1}
    Path("future.json").write_text(json.dumps(future))
    with pytest.raises(StoreError, match="version"):
        load_export("future.json")
    Path("fake.parquet").write_bytes(b"PAR1 not really")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(PrerequisiteError, match=r'pip install "memorylab\[data\]"'):
        load_export("fake.parquet")


# -- loaders warn about memory others can read ---------------------------------------------------


@pytest.fixture
def private_umask() -> Any:
    """A user who keeps files private (umask 077): a loader warns about memory more open than
    that (under umask 022, 0o644 files are the user's normal and not warned about, issue 41:
    tests/memory/test_permissions.py)."""
    before = os.umask(0o077)
    yield
    os.umask(before)


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and "can be read by other users" in r.getMessage()
    ]


def test_load_export_warns_once_about_an_export_others_can_read(
    isolated_workspace: Path, caplog: pytest.LogCaptureFixture, private_umask: None
) -> None:
    _history("Exporter", compactions=1)
    target = export_agent("Exporter")
    with caplog.at_level(logging.WARNING, logger="memorylab"):
        load_export(target)
        assert _warnings(caplog) == []  # created 0o600: nothing to say
        os.chmod(target, 0o644)
        load_export(target)
        load_export(target)
    (message,) = _warnings(caplog)
    assert str(target) in message and f"check_permissions('{target}') lists them" in message
    assert "chmod" not in message  # a file the user reads: nothing suggested to change


def test_warn_permissions_sums_up_a_workspace(
    isolated_workspace: Path, caplog: pytest.LogCaptureFixture, private_umask: None
) -> None:
    shutil.copytree(REFERENCE, isolated_workspace)
    for path in [isolated_workspace, *isolated_workspace.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    with caplog.at_level(logging.WARNING, logger="memorylab"):
        found = warn_permissions(isolated_workspace)
        assert warn_permissions(isolated_workspace) == found  # said once per process
        assert warn_permissions(isolated_workspace / "missing") == []
    assert len(found) == 1 + len(list(isolated_workspace.rglob("*")))
    assert found == check_permissions(isolated_workspace)
    (message,) = _warnings(caplog)
    assert message.startswith(f"memorylab: {len(found)} memory file(s) or folder(s) under ")
    assert f" and {len(found) - 3} more)" in message
    assert f"check_permissions('{isolated_workspace}') lists them" in message


def test_a_workspace_read_part_by_part_is_warned_about_once(
    isolated_workspace: Path, caplog: pytest.LogCaptureFixture, private_umask: None
) -> None:
    """Issue 28: a script reading the reference's 0644 files logged the warning three times."""
    shutil.copytree(REFERENCE, isolated_workspace)
    for path in [isolated_workspace, *isolated_workspace.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    agent = isolated_workspace / "agents" / "QuantAgent"
    with caplog.at_level(logging.WARNING, logger="memorylab"):
        memory_df(isolated_workspace)
        memory_df(agent)
        memory_df(agent / "MEMORY.md")
        compactions_df(isolated_workspace)
    (message,) = _warnings(caplog)
    assert "chmod" not in message
    assert warn_permissions(agent / "MEMORY.md", own=True)  # an agent's own memory: said too
    own = _warnings(caplog)[1:]
    assert len(own) == 1 and f"chmod -R go-rwx '{agent / 'MEMORY.md'}'" in own[0]


def test_memory_df_warns_about_memory_others_can_read(
    isolated_workspace: Path, caplog: pytest.LogCaptureFixture, private_umask: None
) -> None:
    shutil.copytree(REFERENCE, isolated_workspace)
    for path in [isolated_workspace, *isolated_workspace.rglob("*")]:
        os.chmod(path, 0o700 if path.is_dir() else 0o600)  # private but for one file
    os.chmod(isolated_workspace / "agents" / "QuantAgent" / "MEMORY.md", 0o644)
    with caplog.at_level(logging.WARNING, logger="memorylab"):
        memory_df(isolated_workspace)
    assert any("QuantAgent" in message for message in _warnings(caplog))


def test_the_bundled_sample_data_is_not_warned_about(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    """The bundled workspaces are synthetic and checked out 0o644 by git: the README's main job
    (`memorylab report` on them) must not tell the user to chmod them."""
    from memorylab.transcripts import bundled_workspace

    sample = bundled_workspace("reference")
    os.chmod(sample / "agents" / "QuantAgent" / "MEMORY.md", 0o644)
    assert check_permissions(sample) != []  # readable by others, as git leaves it
    with caplog.at_level(logging.WARNING, logger="memorylab"):
        memory_df(sample)
        assert main(["stats", str(sample)]) == 0
    assert _warnings(caplog) == []
    assert "can be read by other users" not in capsys.readouterr().err


def test_the_preload_warns_about_memory_others_can_read(
    isolated_workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    conv = _history("Shared", compactions=1)
    assert conv.memory_md_path is not None
    os.chmod(conv.memory_md_path, 0o644)
    with caplog.at_level(logging.WARNING, logger="memorylab"):
        Conversation(agent_name="Shared")
    assert any("MEMORY.md" in message for message in _warnings(caplog))


def test_private_memory_gives_no_warning(
    isolated_workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _history("Private", compactions=2)
    Conversation(agent_name="Other").add("User", "hello")
    assert check_permissions(isolated_workspace) == []  # as memorylab writes it: 0o700/0o600
    with caplog.at_level(logging.WARNING, logger="memorylab"):
        memory_df(isolated_workspace)
        memory_df(isolated_workspace / "agents" / "Private" / "MEMORY.md")
        Conversation(agent_name="Private")
    assert _warnings(caplog) == []


def test_the_preload_checks_only_the_file_it_loads(
    isolated_workspace: Path, caplog: pytest.LogCaptureFixture, private_umask: None
) -> None:
    _history("Shared", compactions=2)
    folder = isolated_workspace / "agents" / "Shared"
    archive = sorted((folder / "archive").iterdir())[0]
    os.chmod(archive, 0o644)  # an archive, not the preloaded MEMORY.md, is readable by others
    with caplog.at_level(logging.WARNING, logger="memorylab"):
        Conversation(agent_name="Shared")
        assert _warnings(caplog) == []
        memory_df(folder)
    (message,) = _warnings(caplog)
    assert str(archive) in message and f"check_permissions('{folder}')" in message


def test_memory_df_warns_once_per_process_for_the_same_files(
    isolated_workspace: Path, caplog: pytest.LogCaptureFixture, private_umask: None
) -> None:
    conv = _history("Shared", compactions=1)
    assert conv.memory_md_path is not None
    os.chmod(conv.memory_md_path, 0o644)
    with caplog.at_level(logging.WARNING, logger="memorylab"):
        memory_df(isolated_workspace)
        memory_df(isolated_workspace)
        Conversation(agent_name="Shared")  # the file itself: a warning of its own, once
        Conversation(agent_name="Shared")
    assert len(_warnings(caplog)) == 2
