"""Deleted stays deleted across a crash (issue 36): a SIGKILL at ANY step of a deletion
(``MemoryStore.delete_archives``, retention, purge, forget) leaves no deleted text in any file
of the agent (the recall index ``archive/.recall.sqlite`` and its journal included) once the
agent is opened again, by a ``Conversation`` or by ``MemoryStore.for_agent``.

A child process (``_deletion_worker.py``) runs the deletion and counts its steps (every
unlink, rename and ``rmdir``, every record, the call that drops the archives from the index,
every write statement of the index's transaction); it is run once to list them, then once per
step, SIGKILLing itself right before that step. After each kill the parent opens the agent
(the opening runs recovery) and checks, before anything else reads the index:

* the deletion either never began (every file as it was: only a kill before its first unlink
  may leave that) or is finished: the archives meant to go are gone, each deletion recorded once, the others
  byte for byte as they were;
* no planted canary of a deleted archive is in the bytes of any file of the agent's folder;
* no journal of the deletion is left, and recall still works (it finds the kept archives'
  messages and none of the deleted ones).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import memorylab
from memorylab import Conversation
from memorylab.errors import InvalidSetting
from memorylab.memory import MemoryStore, recall
from memorylab.memory._paths import agent_paths
from memorylab.memory._store import deletion_journal

TOOLKIT = Path(memorylab.__file__).resolve().parents[1]  # the children import the same code
WORKER = Path(__file__).with_name("_deletion_worker.py")
AGENT = "Doomed"
# Ten canaries in the three oldest archives (each word its own FTS5 term), and the words of
# the three archives that stay.
CANARIES = [
    ["quokkaalpha7731", "wombatbravo4410", "numbatcharlie0932", "dingodelta5518"],
    ["possumecho2207", "bilbyfoxtrot9063", "quollgolf3381"],
    ["dunnarthotel6674", "potoroojuliet1129", "bettongkilo8845"],
]
KEPT = ["kiwi lemon", "mango peach", "cherry plum"]


def _make_template(workspace: Path) -> dict[str, list[str]]:
    """The agent: three archives named in 2020 holding the canaries (old enough for
    purge and the first to go under retention), three recent ones, a MEMORY.md written now,
    and the recall index of all six."""
    clock = [datetime(2020, 1, 1, tzinfo=UTC)]
    conv = Conversation(agent_name=AGENT, workspace_dir=workspace, clock=lambda: clock[0])
    doomed, kept = [], []
    for i, words in enumerate(CANARIES):
        for word in words:
            conv.add("User", f"remember the passphrase {word}")
        event = conv.compact(f"summary {i}")
        assert event.archive is not None
        doomed.append(event.archive)
        clock[0] += timedelta(hours=1)
    clock[0] = datetime.now(UTC) - timedelta(hours=1)
    for i, words in enumerate(KEPT):
        conv.add("User", f"we talked about {words}")
        event = conv.compact(f"summary {i + len(CANARIES)}")
        assert event.archive is not None
        kept.append(event.archive)
        clock[0] += timedelta(minutes=1)
    conv.add("User", "still here")
    assert len(recall(workspace, "passphrase", agent=AGENT, k=20)) == 10  # the index holds them
    plan = {"doomed": doomed, "kept": kept}
    (workspace / "doomed.json").write_text(json.dumps(plan))
    return plan


def _run(operation: str, workspace: Path, kill_at: int) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(TOOLKIT)}
    return subprocess.run(
        [sys.executable, str(WORKER), operation, str(workspace), AGENT, str(kill_at)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def _files(folder: Path) -> dict[str, bytes]:
    """Every regular file below ``folder`` (relative name: bytes)."""
    if not folder.is_dir():
        return {}
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


def _began(steps: list[str], doomed: set[str] | None) -> bool:
    """Whether one of the steps that ran removed one of the ``doomed`` archives (``None``, a
    forget: any file, a temp file aside)."""
    for step in steps:
        verb, _, name = step.partition(" ")
        removes = verb in ("os.unlink", "os.rmdir") and ".tmp-" not in name
        if removes and (doomed is None or name in doomed):
            return True
    return False


@pytest.mark.parametrize("operation", ["delete", "retention", "purge", "forget"])
def test_a_kill_at_any_step_of_a_deletion_leaves_no_deleted_text(
    operation: str, tmp_path: Path
) -> None:
    template = tmp_path / "template"
    plan = _make_template(template)
    folder = agent_paths(AGENT, template).folder
    before = _files(folder / "archive")
    dry = tmp_path / "dry"
    shutil.copytree(template, dry)
    listed = _run(operation, dry, 0)
    assert listed.returncode == 0, listed.stderr
    steps: list[str] = json.loads(listed.stdout)
    assert any(step.startswith("os.unlink") for step in steps), steps
    canaries = [word.encode() for words in CANARIES for word in words]
    kept_words = [word.encode() for words in KEPT for word in words.split()]
    forgotten = operation == "forget"
    gone = set(before) if forgotten else set(plan["doomed"])
    journals = 0
    for kill_at in range(1, len(steps) + 1):
        where = f"{operation}: killed before step {kill_at} of {len(steps)} ({steps[kill_at - 1]})"
        workspace = tmp_path / f"kill-{kill_at}"
        shutil.copytree(template, workspace)
        killed = _run(operation, workspace, kill_at)
        assert killed.returncode == -signal.SIGKILL, f"{where}: {killed.stderr}"
        journal = workspace / "agents" / AGENT / "archive" / ".recall.sqlite-journal"
        if journal.is_file() and any(c in journal.read_bytes() for c in canaries):
            journals += 1  # SQLite's journal of the killed transaction: the deleted pages
        # Opened again, as a conversation or as a store: either runs recovery.
        if kill_at % 2:
            Conversation(agent_name=AGENT, workspace_dir=workspace)
        else:
            MemoryStore.for_agent(AGENT, workspace)
        files = _files(workspace / "agents" / AGENT)
        archives = {
            name.removeprefix("archive/"): data
            for name, data in files.items()
            if name.startswith("archive/")
        }
        if archives == before:  # not begun: only a kill before the first unlink leaves that
            began = _began(steps[: kill_at - 1], None if forgotten else set(plan["doomed"]))
            assert not began, f"{where}: the deletion began, and recovery undid or lost it"
            continue
        # Finished: what was meant to go is gone, with every trace of its text.
        for name, data in files.items():
            found = [c.decode() for c in canaries if c in data]
            assert not found, f"{where}: {name} still holds deleted canaries {found}"
        assert not gone & set(archives), f"{where}: left {sorted(gone & set(archives))}"
        left_over = {name for name in files if name.startswith(".") and "lock" not in name}
        assert not left_over, f"{where}: a journal or temp file left: {left_over}"
        if forgotten:
            assert not any(w in data for data in files.values() for w in kept_words), where
            if (workspace / "agents" / AGENT).is_dir():  # a Conversation made it again
                assert recall(workspace, "kiwi passphrase", agent=AGENT) == [], where
            continue
        for name in plan["kept"]:
            assert archives.get(name) == before[name], f"{where}: {name} changed"
        records = MemoryStore.for_agent(AGENT, workspace).records()
        kind = {"delete": "retention"}.get(operation, operation)
        recorded = sorted(r["archive"] for r in records if r.get("kind") == kind)
        assert recorded == sorted(plan["doomed"]), f"{where}: deletions recorded {recorded}"
        assert recall(workspace, " ".join(c.decode() for c in canaries), agent=AGENT) == []
        found = recall(workspace, "kiwi mango cherry", agent=AGENT, k=10)
        assert sorted(m.archive for m in found) == sorted(plan["kept"]), where
    # The kills inside the index's transaction left its journal holding the deleted text.
    assert forgotten or journals > 0, "no kill landed inside the index's transaction"


def test_recovery_deletes_only_archives_whatever_the_journal_says(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A deletion journal is read only as memorylab writes it: a name that is not an archive's
    deletes nothing, and a journal of another shape (a hand edit) is logged and removed."""
    conv = Conversation(agent_name="Hand")
    names = []
    for word in ("kiwi", "mango"):
        conv.add("User", word)
        names.append(conv.compact(f"summary {word}").archive)
    paths = agent_paths("Hand")
    journal = deletion_journal(paths)
    entries = [{"archive": "../MEMORY.md"}, {"archive": "compactions.jsonl"}, {"archive": names[0]}]
    journal.write_text(json.dumps({"kind": "retention", "time": "t", "archives": entries}))
    MemoryStore.for_agent("Hand")
    assert not journal.exists() and paths.memory_md.is_file() and paths.compactions.is_file()
    assert [p.name for p in paths.archives()] == [names[1]]
    journal.write_text("[1, 2]")
    with caplog.at_level(logging.WARNING, logger="memorylab"):
        Conversation(agent_name="Hand")
    assert "is not a deletion journal" in caplog.text and not journal.exists()
    assert [p.name for p in paths.archives()] == [names[1]]


def test_a_deletions_reasons_are_checked_before_anything_goes() -> None:
    conv = Conversation(agent_name="Reasons")
    conv.add("User", "kiwi")
    name = conv.compact("summary").archive
    assert conv.store is not None and name is not None
    with pytest.raises(InvalidSetting, match="reason names no reason for"):
        conv.store.delete_archives([name], reason={"history_2020-01-01_00-00-00Z.md": "old"})
    with pytest.raises(InvalidSetting, match="reason must be a text"):
        conv.store.delete_archives([name], reason=5)  # type: ignore[arg-type]
    assert conv.store.delete_archives([name], reason={name: "old"}) == [name]
