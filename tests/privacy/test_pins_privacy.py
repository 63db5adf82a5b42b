"""pins.jsonl is the agent's memory like compactions.jsonl: exported with it, removed with it,
refused when it is not a regular file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memorylab import Conversation
from memorylab.errors import UnsafePath
from memorylab.memory import MemoryStore
from memorylab.privacy import export_agent, export_document, forget

TASK = "Deploy only on Tuesdays."


def _pinned(name: str) -> Conversation:
    conv = Conversation(agent_name=name)
    conv.add("User", TASK, pinned=True)
    conv.add("User", "and log every step")
    conv.pin(-1)
    conv.unpin(-1)
    return conv


def test_an_export_holds_the_pins(isolated_workspace: Path) -> None:
    conv = _pinned("Exported")
    assert conv.store is not None
    doc = export_document("Exported")
    assert doc["pins"] == conv.store.pin_records()
    assert [line["action"] for line in doc["pins"]] == ["pin", "pin", "unpin"]
    written = export_agent("Exported", path=isolated_workspace.parent / "out.json")
    assert json.loads(written.read_text())["pins"] == doc["pins"]
    assert TASK not in json.dumps(doc["pins"])  # identities, no text


def test_forget_removes_the_pins(isolated_workspace: Path) -> None:
    _pinned("Forgotten").store.close()  # type: ignore[union-attr]
    pins = isolated_workspace / "agents" / "Forgotten" / "pins.jsonl"
    assert pins.is_file()
    report = forget("Forgotten")
    assert not pins.exists()
    assert "pins.jsonl" in report.files


def test_removing_one_memory_file_removes_its_pins(tmp_path: Path) -> None:
    path = tmp_path / "notes" / "MEMORY.md"
    conv = Conversation(memory_md_path=path)
    conv.add("User", TASK, pinned=True)
    (tmp_path / "notes" / "mine.txt").write_text("not memory")
    assert (tmp_path / "notes" / "pins.jsonl").is_file()
    removed = MemoryStore(path).remove(whole_folder=False)
    assert "pins.jsonl" in {name for name, _ in removed}
    assert sorted(p.name for p in (tmp_path / "notes").iterdir()) == ["mine.txt"]


def test_a_pins_file_that_is_not_a_regular_file_is_refused(isolated_workspace: Path) -> None:
    _pinned("Fifo").store.close()  # type: ignore[union-attr]
    pins = isolated_workspace / "agents" / "Fifo" / "pins.jsonl"
    pins.unlink()
    os.mkfifo(pins)
    with pytest.raises(UnsafePath, match=r"pins\.jsonl"):
        export_document("Fifo")
    with pytest.raises(UnsafePath):
        forget("Fifo")
