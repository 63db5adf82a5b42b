"""A compaction's commit is a rename over MEMORY.md; a writer that keeps no lock (the reference's
``compact()``: remove, create, its summary, its messages) can replace the file between
memorylab's last look at it and that rename (issue 24: 1 mixed run of 720 lost 6 of the
reference's messages there). The look and the rename are one step now where the system can swap
two names (Linux ``renameat2(RENAME_EXCHANGE)``): a file that is not the one compacted is swapped
back, with whatever was written to memorylab's file in that instant. The tests stop the
reference exactly inside the old window."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memorylab import Conversation, read_memory
from memorylab.errors import CompactionConflict
from memorylab.memory import _fsutil
from memorylab.memory import _store as store_module

_THEIRS = (
    "# Agent Memory\n\n**Conversation:** reference\n**Created:** 2026-01-01T00:00:00\n\n"
    "---\n\n## Interaction Log\n\n### System — 2026-01-01T00:00:01\n\nreference summary\n\n"
    "---\n\n### Human — 2026-01-01T00:00:02\n\nref-1\n\n---\n\n"
)
_INSTANT = "### Human — 2026-01-01T00:00:03\n\nwritten in the instant\n\n---\n\n"


def _reference_compacts(path: Path) -> None:
    path.unlink()
    path.write_text(_THEIRS, encoding="utf-8")


def _agent(tmp_path: Path) -> tuple[Conversation, Path]:
    conv = Conversation(agent_name="A", workspace_dir=tmp_path, preload=False)
    conv.add("User", "ml-1")
    assert conv.memory_md_path is not None
    return conv, conv.memory_md_path


def _nothing_of_ours_kept(path: Path) -> None:
    archive = path.parent / "archive"
    assert not archive.exists() or not list(archive.iterdir())
    records = path.parent / "compactions.jsonl"
    assert not records.exists() or not records.read_text(encoding="utf-8").strip()
    assert not list(path.parent.glob(".MEMORY.md.tmp-*"))
    assert not (path.parent / ".MEMORY.md.intent.json").exists()


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "test-then-rename"])
def test_a_replacement_just_before_the_rename_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exchange: bool
) -> None:
    """Fails before the look moved into the rename: the look passed, then the rename put
    memorylab's file over the reference's summary and message."""
    if exchange and _fsutil._renameat2 is None:
        pytest.skip("this system cannot swap two names in one step")
    if not exchange:
        monkeypatch.setattr(_fsutil, "_renameat2", None)
    conv, path = _agent(tmp_path)
    replace = store_module.replace_and_open

    def reference_in_the_window(target: Path, data: bytes, *expected: Any) -> int:
        if target == path:
            _reference_compacts(path)
        return replace(target, data, *expected)

    monkeypatch.setattr(store_module, "replace_and_open", reference_in_the_window)
    with pytest.raises(CompactionConflict, match="replaced by another writer"):
        conv.compact("our summary")
    assert [m.content for m in read_memory(path).messages] == ["reference summary", "ref-1"]
    _nothing_of_ours_kept(path)


def test_a_block_written_while_memorylabs_file_was_in_place_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reference replaced the file just before the swap, and a writer that opens the file
    by name appended to memorylab's file in the instant before it was swapped back."""
    if _fsutil._renameat2 is None:
        pytest.skip("this system cannot swap two names in one step")
    conv, path = _agent(tmp_path)
    exchange = _fsutil._exchange
    calls: list[Path] = []

    def racing_exchange(first: Path, second: Path) -> bool:
        calls.append(second)
        if len(calls) == 1:
            _reference_compacts(path)
        swapped = exchange(first, second)
        if len(calls) == 1:
            with open(path, "a", encoding="utf-8") as handle:  # memorylab's file, for now
                handle.write(_INSTANT)
        return swapped

    monkeypatch.setattr(_fsutil, "_exchange", racing_exchange)
    with pytest.raises(CompactionConflict):
        conv.compact("our summary")
    assert calls == [path, path]
    kept = [m.content for m in read_memory(path).messages]
    # ml-1 was in the file the reference replaced without archiving it: carried over too
    assert kept[:2] == ["reference summary", "ref-1"]
    assert sorted(kept[2:]) == ["ml-1", "written in the instant"]
    _nothing_of_ours_kept(path)


def test_a_removal_just_before_the_rename_is_a_conflict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reference removed MEMORY.md and has not created it yet: memorylab's file is not put
    in its place (its create would truncate it, or find it and append after our summary)."""
    conv, path = _agent(tmp_path)
    replace = store_module.replace_and_open

    def removed_in_the_window(target: Path, data: bytes, *expected: Any) -> int:
        if target == path:
            path.unlink()
        return replace(target, data, *expected)

    monkeypatch.setattr(store_module, "replace_and_open", removed_in_the_window)
    with pytest.raises(CompactionConflict):
        conv.compact("our summary")
    assert not path.exists()
    _nothing_of_ours_kept(path)


def test_an_unchanged_file_is_replaced_and_the_old_one_removed(tmp_path: Path) -> None:
    conv, path = _agent(tmp_path)
    conv.compact("our summary")
    assert [m.content for m in read_memory(path).messages] == [
        "[Compressed Memory Summary] our summary"
    ]
    assert not list(path.parent.glob(".MEMORY.md.tmp-*"))
    assert len(list((path.parent / "archive").iterdir())) == 1
