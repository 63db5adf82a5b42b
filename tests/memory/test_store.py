"""The store: names, paths, symlinks, permissions, compaction order and crash recovery."""

from __future__ import annotations

import json
import os
import stat
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memorylab import Message, read_memory
from memorylab.config import resolve_workspace
from memorylab.errors import CompactionConflict, InvalidAgentName, UnsafePath
from memorylab.memory import MemoryStore, agent_paths, validate_agent_name
from memorylab.memory import _format as fmt

WHEN = datetime(2026, 4, 20, 14, 30, 45, tzinfo=UTC)


def _block(text: str) -> str:
    return fmt.render_block(Message("User", text, WHEN))


@pytest.mark.parametrize(
    "name",
    [
        "ResearchAgent",
        "my agent",
        "Müller",
        "agent 🤖",
        "👨‍👩‍👧 family",
        "a.b",
        "-x",
        "...",
        "名前",
    ],
)
def test_printable_names_are_accepted_as_is(name: str, isolated_workspace: Path) -> None:
    assert validate_agent_name(name) == name
    store = MemoryStore.for_agent(name)
    store.ensure("c", WHEN)
    assert (isolated_workspace / "agents" / name / "MEMORY.md").is_file()


@pytest.mark.parametrize(
    "name",
    [
        "",
        ".",
        "..",
        "../x",
        "a/b",
        "/abs",
        "a\\b",
        "nul\x00",
        "tab\t",
        "new\nline",
        "x\u2028",
        "é" * 128,
    ],
)
def test_unsafe_names_are_rejected(name: str, isolated_workspace: Path) -> None:
    with pytest.raises(InvalidAgentName):
        agent_paths(name)
    assert not (isolated_workspace / "agents").exists()


def test_workspace_resolution_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_workspace(tmp_path / "explicit") == tmp_path / "explicit"
    monkeypatch.setenv("WORKSPACE_DIR", str(tmp_path / "env"))
    assert resolve_workspace() == tmp_path / "env"  # read at call time
    monkeypatch.delenv("WORKSPACE_DIR")
    assert resolve_workspace() == Path.cwd() / "agent_workspace"


def test_symlinked_folders_are_refused(tmp_path: Path, isolated_workspace: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    isolated_workspace.mkdir()
    (isolated_workspace / "agents").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UnsafePath):
        MemoryStore.for_agent("victim").ensure("c", WHEN)
    (isolated_workspace / "agents").unlink()
    (isolated_workspace / "agents").mkdir()
    (isolated_workspace / "agents" / "victim").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UnsafePath):
        MemoryStore.for_agent("victim").ensure("c", WHEN)
    assert list(outside.iterdir()) == []


def test_symlinked_memory_file_is_not_written_through(tmp_path: Path) -> None:
    target = tmp_path / "passwd"
    target.write_text("precious\n")
    store = MemoryStore.for_agent("a")
    store.paths.folder.mkdir(parents=True)
    store.path.symlink_to(target)
    with pytest.raises(UnsafePath):
        store.ensure("c", WHEN)
    with pytest.raises(UnsafePath):
        store.append(_block("x"))
    assert target.read_text() == "precious\n"


def test_private_permissions_despite_a_permissive_umask() -> None:
    old = os.umask(0o022)
    try:
        store = MemoryStore.for_agent("perm")
        store.ensure("c", WHEN)
        store.append(_block("one"))
        store.compact(
            store.snapshot(), Message("System", "s", WHEN), conversation_name="c", now=WHEN
        )
    finally:
        os.umask(old)
    folder = store.paths.folder
    for path in [folder, folder.parent, store.paths.archive_dir]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
    for path in [store.path, store.paths.compactions, store.paths.lock, *store.paths.archives()]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_existing_file_is_left_untouched() -> None:
    store = MemoryStore.for_agent("keep")
    store.ensure("c", WHEN)
    before = store.path.read_bytes()
    assert store.ensure("other name", datetime(2030, 1, 1)) is False
    assert store.path.read_bytes() == before


def test_a_file_ending_mid_block_is_cut_back_and_the_torn_block_kept_aside() -> None:
    store = MemoryStore.for_agent("torn")
    store.ensure("c", WHEN)
    torn = "### User — 2026-04-20T14:30:45.000000+00:00\n\nhalf a mess"
    with open(store.path, "a", encoding="utf-8") as handle:
        handle.write(torn)
    store.ensure("c", WHEN)  # issue 24: recovery cuts the torn block off, keeps it aside
    store.append(_block("next"))
    assert [m.content for m in read_memory(store.path).messages] == ["next"]
    [kept] = store.path.parent.glob("MEMORY.md.torn-*")
    assert kept.read_text(encoding="utf-8") == torn


def test_durable_mode_fsyncs_every_append(monkeypatch: pytest.MonkeyPatch) -> None:
    store = MemoryStore.for_agent("durable", durable=True)
    store.ensure("c", WHEN)
    calls: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real(fd))[1])
    for i in range(3):
        store.append(_block(str(i)))
    assert len(calls) == 3


def test_compaction_archives_exactly_the_snapshot_and_carries_over_the_rest() -> None:
    store = MemoryStore.for_agent("c")
    store.ensure("conv", WHEN)
    store.append(_block("old-1") + _block("old-2"))
    snapshot = store.snapshot()
    store.append(_block("during"))
    result = store.compact(
        snapshot,
        Message("System", "[Compressed Memory Summary] s", WHEN),
        conversation_name="conv",
        now=WHEN,
    )
    assert (result.archive, result.messages_archived, result.carried_over) == (
        "history_2026-04-20_14-30-45Z.md",
        2,
        1,
    )
    archive = store.paths.archive_dir / result.archive
    assert archive.read_bytes() == snapshot.data
    doc = read_memory(store.path)
    assert doc.continues == result.archive
    assert [m.content for m in doc.messages] == ["[Compressed Memory Summary] s", "during"]
    assert store.records()[-1]["archive"] == result.archive
    assert not store.paths.intent.exists()


def test_archives_are_never_overwritten() -> None:
    store = MemoryStore.for_agent("many")
    store.ensure("conv", WHEN)
    for i in range(5):
        store.append(_block(f"m{i}"))
        store.compact(
            store.snapshot(), Message("System", f"s{i}", WHEN), conversation_name="conv", now=WHEN
        )
    names = [p.name for p in store.paths.archives()]
    assert names == ["history_2026-04-20_14-30-45Z.md"] + [
        f"history_2026-04-20_14-30-45Z_{n}.md" for n in range(2, 6)
    ]
    assert len({p.read_bytes() for p in store.paths.archives()}) == 5


def test_a_foreign_archive_with_the_same_name_survives() -> None:
    store = MemoryStore.for_agent("foreign")
    store.ensure("conv", WHEN)
    store.append(_block("m"))
    store.paths.archive_dir.mkdir()
    reference = store.paths.archive_dir / "history_2026-04-20_14-30-45.md"  # its own form
    reference.write_text("written by the reference framework")
    taken = store.paths.archive_dir / "history_2026-04-20_14-30-45Z.md"  # another writer's
    taken.write_text("written by another memorylab")
    result = store.compact(
        store.snapshot(), Message("System", "s", WHEN), conversation_name="c", now=WHEN
    )
    assert result.archive == "history_2026-04-20_14-30-45Z_2.md"
    assert reference.read_text() == "written by the reference framework"
    assert taken.read_text() == "written by another memorylab"


def test_stale_snapshot_is_a_conflict_and_writes_nothing() -> None:
    store = MemoryStore.for_agent("stale")
    store.ensure("conv", WHEN)
    store.append(_block("m"))
    stale = store.snapshot()
    store.compact(store.snapshot(), Message("System", "s", WHEN), conversation_name="c", now=WHEN)
    files = {p: p.read_bytes() for p in store.paths.folder.rglob("*") if p.is_file()}
    with pytest.raises(CompactionConflict, match="nothing was written"):
        store.compact(stale, Message("System", "s2", WHEN), conversation_name="c", now=WHEN)
    assert {p: p.read_bytes() for p in store.paths.folder.rglob("*") if p.is_file()} == files


def _interrupted(store: MemoryStore, *, committed: bool) -> str:
    """Reproduce the files a crash leaves in the middle of a compaction."""
    store.ensure("conv", WHEN)
    store.append(_block("a") + _block("b"))
    data = store.path.read_bytes()
    name = fmt.archive_name(WHEN)
    record = {"archive": name, "kind": "compaction"}
    store.paths.archive_dir.mkdir(exist_ok=True)
    store.paths.intent.write_text(json.dumps({"archive": name, "record": record}))
    (store.paths.archive_dir / name).write_bytes(data)
    (store.paths.archive_dir / f".{name}.tmp-1-ab").write_bytes(data[:10])
    if committed:
        store.path.write_text(fmt.render_header("conv", WHEN, continues=name))
    else:
        (store.paths.folder / ".MEMORY.md.tmp-1-cd").write_text("half")
    return name


def test_recovery_rolls_back_an_uncommitted_compaction() -> None:
    store = MemoryStore.for_agent("rollback")
    name = _interrupted(store, committed=False)
    before = store.path.read_bytes()
    store.ensure("conv", WHEN)
    assert store.path.read_bytes() == before  # the log is whole
    assert not (store.paths.archive_dir / name).exists()  # the duplicate is gone
    assert not store.paths.intent.exists() and store.records() == []
    assert not [p for p in store.paths.folder.rglob("*") if ".tmp-" in p.name]


def test_recovery_finishes_a_committed_compaction_once() -> None:
    store = MemoryStore.for_agent("forward")
    name = _interrupted(store, committed=True)
    assert store.pending_archive() is None  # committed: readers may use the archive
    store.ensure("conv", WHEN)
    store.ensure("conv", WHEN)
    assert (store.paths.archive_dir / name).exists()
    assert [r["archive"] for r in store.records()] == [name]
    assert not store.paths.intent.exists()


def test_pending_archive_names_an_uncommitted_one() -> None:
    store = MemoryStore.for_agent("pending")
    name = _interrupted(store, committed=False)
    assert store.pending_archive() == name


def test_lone_surrogates_are_refused_clearly() -> None:
    store = MemoryStore.for_agent("s")
    store.ensure("c", WHEN)
    with pytest.raises(ValueError, match="UTF-8"):
        store.append(_block("bad \ud800"))


