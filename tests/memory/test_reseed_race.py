"""The reference's ``compact()`` re-creates MEMORY.md without a lock (remove, a test for the name,
``open(path, "w")``, its header, its summary): an append of memorylab's that finds the file
missing or empty in that gap waits for it (issue 24). Before, creating the file between the
reference's test and its ``open(..., "w")`` let that open truncate memorylab's blocks (a mixed
run lost ``ml-374``), and a header renamed over the reference's empty new file took its summary
and next message with it. The reference is stopped for 30 ms at each gap, as a scheduler may."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from memorylab import Conversation, read_memory
from memorylab.memory import _store as store_module

_HEADER = (
    "# Agent Memory\n\n**Conversation:** reference\n**Created:** 2026-01-01T00:00:00\n\n"
    "---\n\n## Interaction Log\n\n"
)


def _reseed(path: Path, gap: str, started: threading.Event) -> None:
    """The reference's ``_init_memory_md`` and ``add(summary)``, then its next message."""
    exists = path.exists()
    started.set()
    if gap == "after-test":
        time.sleep(0.03)
    if not exists:
        with open(path, "w", encoding="utf-8") as f:
            if gap == "after-open":
                time.sleep(0.03)
            f.write(_HEADER)
    for block in ("### System — 2026-01-01T00:00:01\n\nreference summary\n\n---\n\n",
                  "### Human — 2026-01-01T00:00:02\n\nref-100\n\n---\n\n"):  # fmt: skip
        with open(path, "a", encoding="utf-8") as f:
            f.write(block)


@pytest.mark.parametrize("gap", ["after-test", "after-open"])
def test_an_append_during_a_lockless_reseed_loses_nobody(tmp_path: Path, gap: str) -> None:
    conv = Conversation(agent_name="A", workspace_dir=tmp_path, preload=False)
    conv.add("User", "ml-1")
    path = conv.memory_md_path
    assert path is not None
    archive = path.parent / "archive"
    archive.mkdir(exist_ok=True)
    (archive / "history_2026-01-01_00-00-00.md").write_bytes(path.read_bytes())
    os.unlink(path)  # the reference removed the file it had archived
    started = threading.Event()
    reference = threading.Thread(target=_reseed, args=(path, gap, started))
    reference.start()
    started.wait()
    time.sleep(0.005)
    conv.add("User", "ml-2")  # while the reference is stopped in its gap
    reference.join()
    conv.add("User", "ml-3")
    kept = [m.content for m in read_memory(path).messages]
    assert {"reference summary", "ref-100", "ml-2", "ml-3"} <= set(kept), kept
    assert "ml-1" not in kept  # it is in the reference's archive


def test_a_plain_rm_is_not_waited_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no archive written since this process began appending, a missing MEMORY.md was
    removed by hand (nobody re-creates it): the next append writes a header at once."""
    conv = Conversation(agent_name="A", workspace_dir=tmp_path, preload=False)
    conv.add("User", "ml-1")
    path = conv.memory_md_path
    assert path is not None
    os.unlink(path)
    sleeps: list[float] = []
    monkeypatch.setattr(store_module.time, "sleep", sleeps.append)
    conv.add("User", "ml-2")
    assert sleeps == []
    assert [m.content for m in read_memory(path).messages] == ["ml-1", "ml-2"]
