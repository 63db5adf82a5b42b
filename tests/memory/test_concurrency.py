"""Concurrency (FORMAT.md defects 2-4): writers and compactions on one agent lose nothing.

* 4 writer processes x (at least) 2,000 adds while a 5th process compacts 10 times with a slow
  summarizer; the writers go on until the compactions are done, so every one overlaps writing
  (defects 2 and 3); the same with threads and two ``Conversation`` objects in one process;
* 100 compactions in one second give 100 distinct archives, none overwritten (defect 4);
* a compaction whose snapshot went stale raises ``CompactionConflict`` and changes no byte;
* 4 processes appending usage records (``usage.jsonl``) while a 5th compacts lose none.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memorylab import Conversation, MemoryDocument, read_memory
from memorylab.errors import CompactionConflict
from memorylab.memory._paths import MemoryPaths, agent_paths

WORKERS = Path(__file__).with_name("_workers.py")


def _read(path: Path) -> MemoryDocument:
    doc = read_memory(path, strict=True)  # a torn block or any format problem raises here
    assert isinstance(doc, MemoryDocument)
    return doc


def _lineage(paths: MemoryPaths) -> list[tuple[str, MemoryDocument]]:
    """Archives oldest first by following ``**Continues:**`` back from MEMORY.md, then MEMORY.md;
    every file is parsed strictly and every archive must be on the chain."""
    memory = _read(paths.memory_md)
    archives = {p.name: _read(p) for p in paths.archives()}
    on_disk = sorted(p.name for p in paths.archive_dir.iterdir()) if archives else []
    assert sorted(archives) == on_disk, "archive/ holds files that are not archives"
    chain: list[str] = []
    current = memory.continues
    while current is not None:
        assert current in archives, f"lineage names {current!r}, which does not exist"
        assert current not in chain, f"lineage loops at {current!r}"
        chain.append(current)
        current = archives[current].continues
    assert sorted(chain) == sorted(archives), "some archives are not on MEMORY.md's lineage"
    return [*((name, archives[name]) for name in reversed(chain)), ("MEMORY.md", memory)]


def _records(paths: MemoryPaths) -> list[dict[str, Any]]:
    lines = paths.compactions.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def check_agent(
    workspace: Path, agent: str, writers: dict[str, int], compactions: int
) -> list[dict[str, Any]]:
    """Every ``<prefix>-<n>`` exactly once and in each writer's order, nothing else; the expected
    number of archives, records and lineage links. Returns the compaction records."""
    paths = agent_paths(agent, workspace)
    files = _lineage(paths)
    assert len(files) - 1 == compactions, f"{len(files) - 1} archives, expected {compactions}"
    records = _records(paths)
    assert len(records) == compactions
    assert sorted(r["archive"] for r in records) == sorted(name for name, _ in files[:-1])
    assert not paths.intent.exists()
    assert not [p for p in paths.folder.rglob("*") if ".tmp-" in p.name]

    seen: list[str] = []
    for _, doc in files:
        seen += [m.content for m in doc.messages if not m.is_summary]
    expected = {f"{prefix}-{n}" for prefix, count in writers.items() for n in range(count)}
    counts = Counter(seen)
    duplicated = sorted(c for c, k in counts.items() if k > 1)
    assert not duplicated, f"{len(duplicated)} messages stored twice, e.g. {duplicated[:5]}"
    missing = sorted(expected - counts.keys())
    assert not missing, f"{len(missing)} messages lost, e.g. {missing[:5]}"
    extra = sorted(counts.keys() - expected)
    assert not extra, f"unexpected messages: {extra[:5]}"
    for prefix in writers:
        order = [int(c.rsplit("-", 1)[1]) for c in seen if c.rsplit("-", 1)[0] == prefix]
        assert order == sorted(order), f"{prefix}'s messages are out of order"
    summaries = [m for _, doc in files for m in doc.messages if m.is_summary]
    assert len(summaries) == compactions  # each file after the first starts with one
    return records


def _spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKERS), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _reap(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


@pytest.mark.slow
@pytest.mark.parametrize("existing", [False, True], ids=["racing-to-create", "existing-file"])
def test_processes_append_while_another_compacts(tmp_path: Path, existing: bool) -> None:
    workspace, agent, stop = tmp_path / "ws", "shared", tmp_path / "stop"
    prefixes = [f"w{k}" for k in range(4)]
    if existing:  # else the five processes also race to create MEMORY.md
        Conversation(agent_name=agent, workspace_dir=workspace).add("User", "pre-0")
    # Writers add at least 2,000 messages each and keep going until the compactor is done.
    writers = [_spawn("writer", str(workspace), agent, p, "2000", str(stop)) for p in prefixes]
    compactor = _spawn("compactor", str(workspace), agent, "10", "0.02", "0.005")
    procs = [*writers, compactor]
    written: dict[str, int] = {"pre": 1} if existing else {}
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdin is not None
            line = proc.stdout.readline()
            if line != "ready\n":
                proc.kill()
                raise AssertionError(f"worker did not start: {line!r} {proc.communicate()}")
        for proc in procs:  # start together
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        out, err = compactor.communicate(timeout=300)
        assert compactor.returncode == 0 and out.strip() == "done", (out, err)
        stop.touch()
        for prefix, proc in zip(prefixes, writers, strict=True):
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0 and out.startswith("done "), (out, err)
            written[prefix] = int(out.split()[1])
            assert written[prefix] >= 2000
    finally:
        for proc in procs:
            _reap(proc)
    records = check_agent(workspace, agent, written, compactions=10)
    # Messages appended while the summarizer slept were carried over (defect 3), not erased.
    assert sum(r["carried_over"] for r in records) > 0


@pytest.mark.slow
def test_processes_append_usage_records_while_another_compacts(tmp_path: Path) -> None:
    """``usage.jsonl`` (one line per model call of the Agent) follows the rule of
    ``compactions.jsonl``: 4 processes each add 300 messages, appending a usage record after
    each (as the Agent does after a call), while a 5th compacts 5 times; no record is lost,
    none is written twice, every line is whole, and no message is lost either."""
    from memorylab.memory._store import MemoryStore

    workspace, agent, count = tmp_path / "ws", "metered", 300
    Conversation(agent_name=agent, workspace_dir=workspace).add("User", "pre-0")
    prefixes = [f"u{k}" for k in range(4)]
    writers = [_spawn("usage_writer", str(workspace), agent, p, str(count)) for p in prefixes]
    compactor = _spawn("compactor", str(workspace), agent, "5", "0.02", "0.01")
    procs = [*writers, compactor]
    try:
        for proc in procs:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if line != "ready\n":
                proc.kill()
                raise AssertionError(f"worker did not start: {line!r} {proc.communicate()}")
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        for proc in procs:
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0 and out.startswith("done"), (out, err)
    finally:
        for proc in procs:
            _reap(proc)
    paths = agent_paths(agent, workspace)
    problems: list[str] = []
    records = MemoryStore(paths.memory_md).usage_records(problems)
    assert problems == []
    lines = paths.usage.read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) - 1 == len(records)  # whole lines, nothing else
    found = Counter((r["session_start"], r["call"]) for r in records)
    expected = {(p, n) for p in prefixes for n in range(1, count + 1)}
    assert set(found) == expected, f"lost: {sorted(expected - set(found))[:5]}"
    assert max(found.values()) == 1, "a usage record was written twice"
    for prefix in prefixes:  # each process's records in its order
        calls = [r["call"] for r in records if r["session_start"] == prefix]
        assert calls == sorted(calls)
    written = {"pre": 1, **dict.fromkeys(prefixes, count)}
    check_agent(workspace, agent, written, compactions=5)


def test_threads_and_two_conversations_on_one_agent(tmp_path: Path) -> None:
    workspace, agent, per_writer, compactions = tmp_path / "ws", "threaded", 500, 5
    first = Conversation(agent_name=agent, workspace_dir=workspace)
    second = Conversation(agent_name=agent, workspace_dir=workspace)
    start = threading.Barrier(5)
    errors: list[BaseException] = []

    def guarded(work: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                start.wait(timeout=30)
                work()
            except BaseException as exc:
                errors.append(exc)

        return run

    finished = threading.Event()
    written: dict[str, int] = {}

    def writer(conv: Conversation, prefix: str) -> Callable[[], None]:
        def work() -> None:  # at least per_writer, and on until the compactions are done
            n = 0
            while n < per_writer or not finished.is_set():
                conv.add("User", f"{prefix}-{n}")
                n += 1
            written[prefix] = n

        return work

    def compactor() -> None:
        try:
            for i in range(compactions):
                while "\n### " not in first.store.read_text():  # type: ignore[union-attr]
                    time.sleep(0.001)  # a header alone is not archived: wait for a message
                ticket = first.begin_compaction()
                time.sleep(0.01)  # a slow summarizer: the writers go on meanwhile
                first.compact(f"summary {i}", ticket=ticket)
                time.sleep(0.002)
        finally:
            finished.set()

    targets = [writer(first if k < 2 else second, f"t{k}") for k in range(4)] + [compactor]
    threads = [threading.Thread(target=guarded(t)) for t in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not errors, errors
    assert min(written.values()) >= per_writer
    records = check_agent(workspace, agent, written, compactions)
    assert sum(r["carried_over"] for r in records) > 0
    # first's in-memory history kept its own messages added during the summaries, after them.
    assert first.conversation_history[0]["content"].endswith(f"summary {compactions - 1}")


def _frozen_clock() -> Callable[[], datetime]:
    base = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
    ticks = itertools.count()
    return lambda: base + timedelta(microseconds=next(ticks))


@pytest.mark.parametrize("frozen", [True, False], ids=["same-second-clock", "real-clock"])
def test_hundred_compactions_in_a_tight_loop_never_overwrite(tmp_path: Path, frozen: bool) -> None:
    clock = _frozen_clock() if frozen else None
    conv = Conversation(agent_name="tight", workspace_dir=tmp_path / "ws", clock=clock)
    for i in range(100):
        conv.add("User", f"before-{i}")
        conv.compact(f"summary {i}")
    paths = agent_paths("tight", tmp_path / "ws")
    archives = paths.archives()
    assert len({p.name for p in archives}) == 100
    assert len({p.read_bytes() for p in archives}) == 100, "two archives have the same content"
    if frozen:
        assert {p.name[: len("history_2024-05-01_12-00-00")] for p in archives} == {
            "history_2024-05-01_12-00-00"
        }
    files = _lineage(paths)
    for i, (name, doc) in enumerate(files[:-1]):
        kept = [m.content for m in doc.messages if not m.is_summary]
        assert kept == [f"before-{i}"], f"{name} should hold before-{i}, holds {kept}"
        if i:
            assert doc.messages[0].content.endswith(f"summary {i - 1}")
    assert len(_records(paths)) == 100


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd (Linux)")
def test_compactions_do_not_leak_file_descriptors(tmp_path: Path) -> None:
    # Regression: MemoryStore.compact() used to drop its append descriptor without closing it,
    # leaking one fd per compaction (and keeping each replaced MEMORY.md allocated on disk).
    conv = Conversation(agent_name="fds", workspace_dir=tmp_path / "ws")
    conv.add("User", "warm up")
    # The lock file's descriptor is opened once and kept while the conversation (its store)
    # lives: the agent-lock cache holds it weakly, so it closes with the last store.
    conv.compact("warm up")
    before = _open_fds()
    for i in range(20):
        conv.add("User", f"message {i}")
        conv.compact(f"summary {i}")
    assert _open_fds() - before <= 1, f"{_open_fds() - before} descriptors leaked by 20 compactions"


def _folder_bytes(folder: Path) -> dict[str, bytes | None]:
    return {
        str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(folder.rglob("*"))
    }


@pytest.mark.parametrize("stale_by", ["another-conversation", "same-ticket-reused"])
def test_stale_snapshot_raises_conflict_and_changes_nothing(tmp_path: Path, stale_by: str) -> None:
    workspace = tmp_path / "ws"
    mine = Conversation(agent_name="stale", workspace_dir=workspace)
    other = Conversation(agent_name="stale", workspace_dir=workspace)
    for i in range(3):
        mine.add("User", f"old-{i}")
    ticket = mine.begin_compaction()
    mine.add("User", "during the summary")
    if stale_by == "another-conversation":
        other.add("User", "from the other one")
        other.compact("the other's summary")
    else:
        mine.compact("first summary", ticket=ticket)
    other.add("User", "after that compaction")
    folder = agent_paths("stale", workspace).folder
    before = _folder_bytes(folder)
    history = list(mine.conversation_history)

    with pytest.raises(CompactionConflict):
        mine.compact("stale summary", ticket=ticket)

    assert _folder_bytes(folder) == before, "a failed compaction changed files"
    assert mine.conversation_history == history, "a failed compaction changed the history"
    mine.compact("fresh summary")  # a new snapshot works
    final = _read(folder / "MEMORY.md")
    assert [m.content for m in final.messages if not m.is_summary] == []
    assert len(list((folder / "archive").iterdir())) == 2
