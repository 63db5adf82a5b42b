"""forget() leaves nothing behind (walk the tree), also while another process writes; purge;
check_permissions."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memorylab import Conversation
from memorylab.errors import AgentNotFound, InvalidAgentName, StoreError, UnsafePath
from memorylab.memory._paths import agent_paths
from memorylab.memory._store import MemoryStore, read_memory
from memorylab.privacy import check_permissions, forget, purge

WRITER = Path(__file__).with_name("_writer.py")


def _tree(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def _busy_agent(name: str = "Researcher", compactions: int = 2) -> Conversation:
    conv = Conversation(agent_name=name, system_prompt="static")
    for i in range(compactions):
        conv.add("User", f"question {i}")
        conv.add(name, f"answer {i}")
        conv.compact(f"summary {i}")
    conv.add("User", "still here")
    return conv


def test_forget_removes_every_file_and_the_folder(isolated_workspace: Path) -> None:
    conv = _busy_agent()
    folder = isolated_workspace / "agents" / "Researcher"
    (folder / "cache").mkdir()
    (folder / "cache" / "summaries.json").write_text("{}")
    (folder / ".MEMORY.md.tmp-123-abcd").write_bytes(b"leftover")
    other = _busy_agent("Other", compactions=1)
    expected = {p for p in _tree(folder) if (folder / p).is_file()}
    assert {"MEMORY.md", "compactions.jsonl", ".MEMORY.md.lock"} <= expected

    report = forget("Researcher")

    assert not folder.exists()
    assert all(not p.startswith("Researcher") for p in _tree(isolated_workspace / "agents"))
    assert set(report.files) == expected
    assert report.bytes_removed > 0 and report.folder == folder
    assert "Researcher" in str(report)
    # the other agent is untouched
    assert read_memory(other.memory_md_path).messages[-1].content == "still here"  # type: ignore[arg-type]
    # the old object cannot write any more, and does not recreate anything
    with pytest.raises(StoreError, match="was deleted"):
        conv.add("User", "after forget")
    with pytest.raises(StoreError):
        conv.compact("late summary")
    assert not folder.exists()


def test_a_new_conversation_after_forget_starts_empty(isolated_workspace: Path) -> None:
    _busy_agent()
    forget("Researcher")
    fresh = Conversation(agent_name="Researcher")
    assert fresh.memory_created
    assert [e.get("kind") for e in fresh.conversation_history] == []  # nothing to preload
    fresh.add("User", "hello again")
    assert [m.content for m in read_memory(fresh.memory_md_path).messages] == ["hello again"]  # type: ignore[arg-type]
    assert _tree(fresh.memory_md_path.parent) == [".MEMORY.md.lock", "MEMORY.md"]  # type: ignore[union-attr]


def test_forget_works_on_a_reference_workspace(isolated_workspace: Path) -> None:
    folder = isolated_workspace / "agents" / "SwarmsAgent"
    (folder / "archive").mkdir(parents=True)
    block = "### Human — 2026-01-01T10:00:00\n\nhi\n\n---\n\n"
    header = "# Agent Memory\n\n**Conversation:** c\n**Created:** 2026-01-01T09:00:00\n\n---\n\n## Interaction Log\n\n"
    (folder / "MEMORY.md").write_text(header + block)
    (folder / "archive" / "history_2026-01-01_09-30-00.md").write_text(header + block)
    report = forget("SwarmsAgent", isolated_workspace)
    # (the lock file is forget's own: it locks the agent against memorylab writers first)
    assert set(report.files) == {
        ".MEMORY.md.lock",
        "MEMORY.md",
        "archive/history_2026-01-01_09-30-00.md",
    }
    assert not folder.exists()


def test_unknown_and_invalid_agents(isolated_workspace: Path) -> None:
    _busy_agent("Known")
    with pytest.raises(AgentNotFound, match=r"'Nobody'.*agents there: Known"):
        forget("Nobody")
    with pytest.raises(InvalidAgentName):
        forget("../Known")
    assert (isolated_workspace / "agents" / "Known").is_dir()
    with pytest.raises(AgentNotFound, match="no agents"):
        forget("Nobody", isolated_workspace / "elsewhere")


def test_a_symlinked_agent_folder_is_refused(isolated_workspace: Path, tmp_path: Path) -> None:
    target = tmp_path / "precious"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    (isolated_workspace / "agents").mkdir(parents=True)
    (isolated_workspace / "agents" / "Linked").symlink_to(target)
    with pytest.raises(UnsafePath):
        forget("Linked")
    assert (target / "keep.txt").read_text() == "mine"


def test_something_left_behind_is_an_error(
    isolated_workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _busy_agent()
    (isolated_workspace / "agents" / "Researcher" / "cache").mkdir()
    (isolated_workspace / "agents" / "Researcher" / "cache" / "x").write_text("x")
    with monkeypatch.context() as patched:
        patched.setattr("memorylab.memory._store.shutil.rmtree", lambda path: None)
        with pytest.raises(StoreError, match=r"left .*cache/x.*run forget again"):
            forget("Researcher")
    forget("Researcher")  # running it again finishes the job
    assert not (isolated_workspace / "agents" / "Researcher").exists()


def test_store_forget_of_an_explicit_path_keeps_other_files(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    conv = Conversation(memory_md_path=folder / "MEMORY.md")
    conv.add("User", "one")
    conv.compact("summary")
    (folder / "my-notes.txt").write_text("not memory")
    assert conv.store is not None
    removed = conv.store.remove()
    assert {name for name, _ in removed} >= {"MEMORY.md", "compactions.jsonl"}
    assert _tree(folder) == ["my-notes.txt"]


def _wait_for_blocks(path: Path, count: int, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if path.read_bytes().count(b"\n### ") >= count:
                return
        except FileNotFoundError:
            pass
        time.sleep(0.01)
    raise AssertionError(f"the writer did not write {count} blocks in {timeout} s")


@pytest.mark.slow
def test_forget_while_another_process_appends(isolated_workspace: Path) -> None:
    agent = "Busy"
    child = subprocess.Popen(
        [sys.executable, str(WRITER), str(isolated_workspace), agent, "25"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        paths = agent_paths(agent, isolated_workspace)
        _wait_for_blocks(paths.memory_md, 10)
        while not paths.archives():  # at least one compaction happened
            time.sleep(0.01)
        report = forget(agent, isolated_workspace)
        assert not paths.folder.exists()
        assert "MEMORY.md" in report.files
        out, err = child.communicate(timeout=300)  # a hang guard
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 0, err
    word, before, after, failed, errors = out.split()
    assert word == "stopped" and int(before) > 0
    assert int(after) == 0 and int(failed) > 0  # every later add and compaction failed
    assert set(errors.split(",")) <= {"StoreError", "CompactionConflict"}
    assert not paths.folder.exists()  # and none of them recreated anything
    assert not (isolated_workspace / "agents").exists() or not any(
        (isolated_workspace / "agents").iterdir()
    )


# -- purge ------------------------------------------------------------------------------------


def _age(path: Path, days: float) -> None:
    when = time.time() - days * 86_400
    for item in [path, *path.rglob("*")] if path.is_dir() else [path]:
        os.utime(item, (when, when), follow_symlinks=False)


def _conversation_at(name: str, start: datetime) -> Conversation:
    moments = iter(start + timedelta(days=d) for d in range(1000))
    return Conversation(agent_name=name, clock=lambda: next(moments))


def test_purge_deletes_old_archives_and_idle_agents(isolated_workspace: Path) -> None:
    now = datetime.now(UTC)
    active = _conversation_at("Active", now - timedelta(days=60))  # archives named 60.. days ago
    for i in range(3):
        active.add("User", f"m{i}")
        active.compact(f"s{i}")  # each step of the clock is one day
    idle = _busy_agent("Idle", compactions=1)
    assert idle.memory_md_path is not None
    _age(idle.memory_md_path.parent, 45)
    recent = _busy_agent("Recent", compactions=1)
    assert active.memory_md_path is not None and recent.memory_md_path is not None
    archives_before = [p.name for p in agent_paths("Active").archives()]

    planned = purge(older_than="30d", dry_run=True, now=now)
    assert [(i.agent, i.kind) for i in planned] == [("Active", "archive")] * 3 + [("Idle", "agent")]
    assert [p.name for p in agent_paths("Active").archives()] == archives_before
    assert idle.memory_md_path.exists()

    done = purge(older_than="30d", now=now)
    assert done == planned
    assert agent_paths("Active").archives() == []
    assert not idle.memory_md_path.parent.exists()
    assert read_memory(active.memory_md_path).messages  # MEMORY.md itself is kept
    assert len(agent_paths("Recent").archives()) == 1
    records = MemoryStore(active.memory_md_path).records()
    purged = [r for r in records if r.get("kind") == "purge"]
    assert sorted(r["archive"] for r in purged) == sorted(archives_before)
    assert all(r["reason"].startswith("purge older_than=30d") for r in purged)
    assert purge(older_than="30d", now=now) == []  # nothing left to do


def test_purge_of_a_missing_workspace_and_bad_durations(tmp_path: Path) -> None:
    assert purge(tmp_path / "nothing-here") == []
    with pytest.raises(ValueError, match="duration"):
        purge(older_than="thirty days")


# -- permissions ------------------------------------------------------------------------------


def test_memory_is_private_and_check_permissions_says_so(isolated_workspace: Path) -> None:
    conv = _busy_agent()
    assert check_permissions(isolated_workspace / "agents") == []
    folder = conv.memory_md_path.parent  # type: ignore[union-attr]
    for path in [folder, *folder.rglob("*")]:
        expected = 0o700 if path.is_dir() else 0o600
        assert stat.S_IMODE(path.stat().st_mode) == expected, path
    os.chmod(folder / "MEMORY.md", 0o644)
    os.chmod(folder / "archive", 0o755)
    warnings = check_permissions(isolated_workspace)
    assert len(warnings) == 2
    assert any(
        "MEMORY.md: group and others can read it" in w and "chmod 600" in w for w in warnings
    )
    assert any("archive: group and others can read it" in w and "chmod 700" in w for w in warnings)
    assert len(check_permissions(folder / "MEMORY.md")) == 1
    with pytest.raises(StoreError, match="does not exist"):
        check_permissions(isolated_workspace / "missing")


def test_a_stale_writer_cannot_write_into_a_recreated_agent(isolated_workspace: Path) -> None:
    stale = _busy_agent()
    forget("Researcher")
    fresh = Conversation(agent_name="Researcher")
    with pytest.raises(StoreError):
        stale.add("User", "stale write")
    assert fresh.memory_md_path is not None
    assert read_memory(fresh.memory_md_path).messages == ()
    with pytest.raises(StoreError, match="deleted"):
        stale.compact("a summary of what was forgotten")
    assert read_memory(fresh.memory_md_path).messages == ()
    fresh.add("User", "the fresh memory works")
    assert [m.content for m in read_memory(fresh.memory_md_path).messages] == [
        "the fresh memory works"
    ]


def test_a_stale_writer_does_not_recreate_a_forgotten_agent(isolated_workspace: Path) -> None:
    stale = _busy_agent()
    forget("Researcher")
    with pytest.raises(StoreError):
        stale.add("User", "stale write")
    assert not (isolated_workspace / "agents" / "Researcher").exists()


_STALE_CHILD = """
import sys
from memorylab import Conversation, StoreError
conv = Conversation(agent_name="Researcher", workspace_dir=sys.argv[1])
conv.add("User", "before the forget")
print("ready", flush=True)
sys.stdin.readline()
for attempt in (lambda: conv.add("User", "stale write"), lambda: conv.compact("stale summary")):
    try:
        attempt()
        print("written", flush=True)
    except StoreError as error:
        print("refused", type(error).__name__, flush=True)
"""


def test_a_stale_writer_in_another_process_cannot_write_into_a_recreated_agent(
    isolated_workspace: Path,
) -> None:
    with subprocess.Popen(
        [sys.executable, "-c", _STALE_CHILD, str(isolated_workspace)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as child:
        assert child.stdin is not None and child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        forget("Researcher", workspace_dir=isolated_workspace)
        fresh = Conversation(agent_name="Researcher", workspace_dir=isolated_workspace)
        child.stdin.write("go\n")
        child.stdin.flush()
        answers = [child.stdout.readline().strip() for _ in range(2)]
    assert child.returncode == 0
    assert answers == ["refused StoreError", "refused StoreError"]
    assert fresh.memory_md_path is not None
    assert read_memory(fresh.memory_md_path).messages == ()
    assert not list((fresh.memory_md_path.parent / "archive").glob("*.md"))


def test_a_folder_holding_nested_agents_is_never_removed_whole(isolated_workspace: Path) -> None:
    """The reference framework writes an agent named ``team/alpha`` to agents/team/alpha/:
    forgetting ``team`` must not delete ``team/alpha``'s memory; purging takes the nested
    agents that are idle, and of ``team`` only its own files while it holds one in use."""
    team = isolated_workspace / "agents" / "team"
    for name in ("alpha", "beta"):
        (team / name).mkdir(parents=True)
        (team / name / "MEMORY.md").write_text(f"# Agent Memory\n\n{name}'s notes\n")
    (team / "MEMORY.md").write_text("# Agent Memory\n\nthe team's own notes\n")
    with pytest.raises(StoreError, match=r"other agents too \(alpha, beta\).*move their folders"):
        forget("team")
    old = time.time() - 90 * 86_400
    for path in (team / "MEMORY.md", team / "alpha" / "MEMORY.md"):
        os.utime(path, (old, old))
    items = purge(older_than="30d")
    assert [(item.agent, item.kind, item.kept) for item in items] == [
        ("team", "agent", ("team/beta",)),
        ("team/alpha", "agent", ()),
    ]
    kept = sorted(str(p.relative_to(team)) for p in team.rglob("MEMORY.md"))
    assert kept == ["beta/MEMORY.md"]
    later = datetime.now(UTC) + timedelta(days=400)
    assert [item.agent for item in purge(older_than="30d", now=later)] == ["team/beta"]
    assert not team.exists()
