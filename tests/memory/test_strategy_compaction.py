"""A strategy's compaction through the store: ``Conversation.compact(kept=...)`` keeps the
store's guarantees (crash-ordered, under the lock, what others appended carried over, the
archive the whole old file), a SIGKILL mid-compaction loses no message, processes appending
while one compacts with keep-recent lose none, and the reference framework (swarms 16.0.3, the
real package) reads every strategy's MEMORY.md and archive."""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from fakes.processes import kill_while_working
from fakes.swarms_reader import SKIP_REASON, SWARMS_PYTHON, read_with_swarms
from memorylab import Conversation, MemoryDocument, read_memory
from memorylab.compress import (
    ClearToolResults,
    ContextCompressor,
    KeepRecent,
    ScriptedSummarizer,
    Trim,
    get_token_counter,
)
from memorylab.compress._strategy import Strategy
from memorylab.errors import EmptySummary
from memorylab.memory import _store as store_module
from memorylab.memory._paths import MemoryPaths, agent_paths

WORKERS = Path(__file__).with_name("_workers.py")
STRATEGY_WORKERS = Path(__file__).with_name("_strategy_workers.py")
COUNTER = get_token_counter("gpt-4o")
BIG = "row " * 60
_ID = re.compile(r"msg-(\d+)\|")

STRATEGIES: list[Strategy] = [
    KeepRecent(keep_messages=3),
    ClearToolResults(keep_tool_results=1),
    Trim(keep_messages=4),
]


def _read(path: Path) -> MemoryDocument:
    doc = read_memory(path, strict=True)  # a torn block or any format problem raises here
    assert isinstance(doc, MemoryDocument)
    return doc


def _lineage(paths: MemoryPaths) -> list[tuple[str, MemoryDocument]]:
    """Archives oldest first along ``**Continues:**``, then MEMORY.md; all strictly parsed, all
    on the chain."""
    memory = _read(paths.memory_md)
    archives = {p.name: _read(p) for p in paths.archives()}
    chain: list[str] = []
    current = memory.continues
    while current is not None:
        assert current in archives and current not in chain, f"lineage broken at {current!r}"
        chain.append(current)
        current = archives[current].continues
    assert sorted(chain) == sorted(archives), "archives off MEMORY.md's lineage"
    return [*((name, archives[name]) for name in reversed(chain)), ("MEMORY.md", memory)]


def _records(paths: MemoryPaths) -> list[dict[str, Any]]:
    if not paths.compactions.exists():
        return []
    return [json.loads(line) for line in paths.compactions.read_text().splitlines()]


def _tool_history(name: str) -> Conversation:
    conv = Conversation(agent_name=name, token_counter=COUNTER)
    conv.add("User", "task")
    for turn in range(3):
        conv.add(name, f"call {turn}", tool_calls=[{"id": f"c{turn}"}])
        conv.add("Tool Executor", f"result {turn} {BIG}", tool_call_id=f"c{turn}")
    return conv


# -- Conversation.compact(kept=...) ----------------------------------------------------------------


def test_kept_entries_without_a_summary_reseed_the_file_alone() -> None:
    conv = _tool_history("Kept")
    entries = conv.compaction_entries()
    conv.compact(None, kept=entries[-2:])
    assert [m.content for m in _read(conv.memory_md_path).messages] == [  # type: ignore[arg-type]
        "call 2",
        f"result 2 {BIG}",
    ]
    with pytest.raises(EmptySummary, match="empty summary"):  # without kept: as before
        conv.compact("   ")


def test_kept_blocks_are_rendered_with_the_archive_name_the_store_chose(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another writer takes the archive's name between the choice and the link: the kept
    blocks that name it are rendered again with the name used."""
    conv = _tool_history("Raced")
    real = store_module.create_new_file
    taken: list[Path] = []

    def first_name_taken(path: Path, data: bytes) -> bool:
        if not taken:
            taken.append(path)
            return False
        return real(path, data)

    monkeypatch.setattr(store_module, "create_new_file", first_name_taken)
    # keep_turn=False: every result is cleared (the turn in progress's too), each naming it
    compressor = ContextCompressor(strategy=ClearToolResults(keep_tool_results=0), keep_turn=False)
    event = compressor.compress(conv, 100_000, force=True)
    assert event is not None and event.ok and event.archive is not None
    assert event.archive != taken[0].name and event.archive.endswith("_2.md")
    texts = [m.content for m in _read(conv.memory_md_path).messages]  # type: ignore[arg-type]
    cleared = [t for t in texts if t.startswith("[memorylab: tool result cleared")]
    assert len(cleared) == 3 and all(t.endswith(f"archive/{event.archive}]") for t in cleared)
    assert all(t.endswith(f"archive/{event.archive}]") for t in (
        e["content"] for e in conv.conversation_history if "cleared (" in str(e["content"])
    ))  # fmt: skip
    assert _records(agent_paths("Raced"))[-1]["archive"] == event.archive


def test_a_kept_entry_that_cannot_be_stored_changes_nothing() -> None:
    conv = _tool_history("Surrogate")
    paths = agent_paths("Surrogate")
    before = paths.memory_md.read_bytes()
    entry = {**conv.compaction_entries()[-1], "content": "bad \ud800 text"}  # never stored
    with pytest.raises(ValueError, match="lone surrogates"):
        conv.compact("summary", kept=[entry])
    assert paths.memory_md.read_bytes() == before
    assert not paths.intent.exists() and not paths.archive_dir.exists()


def test_blocks_another_process_appended_since_the_ticket_survive(tmp_path: Path) -> None:
    ours = _tool_history("Shared")
    other = Conversation(agent_name="Shared")
    ticket = ours.begin_compaction()
    other.add("User", "from the other process")
    entries = ours.compaction_entries(ticket, preload_as_messages=True)
    plan = KeepRecent(keep_messages=2).plan(entries)
    ours.compact("s", ticket=ticket, kept=lambda archive: plan.kept_entries(entries, archive))
    contents = [m.content for m in _read(ours.memory_md_path).messages]  # type: ignore[arg-type]
    assert contents[1:] == ["call 2", f"result 2 {BIG}", "from the other process"]


# -- SIGKILL mid-compaction ------------------------------------------------------------------------


def _kill_one(
    workspace: Path, ack: Path, start: int, strategy: Strategy, rng: random.Random
) -> list[int]:
    cmd = [
        sys.executable, str(STRATEGY_WORKERS), "crash", str(workspace), "crash", str(ack),
        str(start), str(rng.randint(1, 5)), str(rng.randrange(2**32)),
        json.dumps(strategy.record()),
    ]  # fmt: skip
    ack.write_bytes(b"")
    kill_while_working(cmd, rng.uniform(0.0, rng.choice((0.01, 0.05, 0.3))))
    return [int(line) for line in ack.read_text().splitlines()]


def _verify_no_message_lost(workspace: Path, acked: set[int], strategy: Strategy) -> int:
    """Recovered files parse strictly; every acknowledged id's original is in some file; the
    live file holds ids in order; every archive has its record, naming the strategy. Returns
    the highest id found."""
    paths = agent_paths("crash", workspace)
    assert not paths.intent.exists(), "the compaction journal was left behind"
    assert not [p for p in paths.folder.rglob("*") if ".tmp-" in p.name]
    files = _lineage(paths)
    originals: set[int] = set()
    for name, doc in files:
        for message in doc.messages:
            match = _ID.match(message.content)
            if match is not None:
                originals.add(int(match[1]))
            elif message.content.startswith("[memorylab: tool result cleared"):
                archive = message.content.rsplit("archive/", 1)[1].rstrip("]")
                assert (paths.archive_dir / archive).is_file(), f"{name}: names {archive}"
            else:
                assert message.is_summary, f"{name}: foreign message {message.content[:60]!r}"
    lost = sorted(acked - originals)
    assert not lost, f"acknowledged ids lost: {lost[:20]}"
    live = [int(m[1]) for m in map(_ID.match, (x.content for x in files[-1][1].messages)) if m]
    assert live == sorted(set(live)), f"MEMORY.md's ids out of order or twice: {live}"
    records = _records(paths)
    assert sorted(r["archive"] for r in records) == sorted(name for name, _ in files[:-1])
    assert all(r["strategy"] == strategy.record() for r in records)
    return max(originals, default=-1)


@pytest.mark.slow
@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: s.name)
def test_sigkill_during_a_strategys_compaction_loses_no_message(
    tmp_path: Path, strategy: Strategy, record_property: Any
) -> None:
    rng = random.Random(f"strategy-crash-{strategy.name}")
    workspace = tmp_path / "ws"
    paths = agent_paths("crash", workspace)
    acked: set[int] = set()
    next_id = kills = mid_compaction = 0
    trials = int(os.environ.get("MEMORYLAB_STRATEGY_CRASH_TRIALS", "10"))
    # Kills land anywhere: go on until a compaction has committed too (at most 4x the trials).
    while kills < trials or not _records(paths):
        assert kills < 4 * trials, "no compaction committed between the kills"
        new = _kill_one(workspace, tmp_path / "acks.txt", next_id, strategy, rng)
        kills += 1
        assert new == list(range(next_id, next_id + len(new))), "acks out of order"
        acked.update(new)
        mid_compaction += paths.intent.exists()
        recovered = Conversation(agent_name="crash", workspace_dir=workspace)  # recovery
        assert recovered.store is not None
        recovered.store.close()
        next_id = _verify_no_message_lost(workspace, acked, strategy) + 1
    assert acked
    record_property(
        "summary_line",
        f"{strategy.name} crash trials: {kills} kills ({mid_compaction} inside a compaction), "
        f"{len(acked)} acknowledged adds, 0 lost, {len(_records(paths))} compactions",
    )


# -- processes appending while one compacts with keep-recent ---------------------------------------


def _spawn(script: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(script), *args],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


@pytest.mark.slow
def test_processes_append_while_another_compacts_with_keep_recent(tmp_path: Path) -> None:
    workspace, agent, stop = tmp_path / "ws", "shared", tmp_path / "stop"
    Conversation(agent_name=agent, workspace_dir=workspace).add("User", "pre-0")
    strategy = KeepRecent(keep_messages=3)
    writers = [_spawn(WORKERS, "writer", str(workspace), agent, p, "300", str(stop))
               for p in ("w0", "w1")]  # fmt: skip
    compactor = _spawn(STRATEGY_WORKERS, "compactor", str(workspace), agent, "6", "0.05",
                       json.dumps(strategy.record()))  # fmt: skip
    procs = [*writers, compactor]
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdin is not None
            line = proc.stdout.readline()
            assert line == "ready\n", f"worker did not start: {line!r} {proc.communicate()}"
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        out, err = compactor.communicate(timeout=300)
        assert compactor.returncode == 0 and out.strip() == "done", err[-2000:]
        stop.touch()
        written = {}
        for prefix, proc in zip(("w0", "w1"), writers, strict=True):
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err[-2000:]
            written[prefix] = int(out.split()[1])
    finally:
        stop.touch()
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                if pipe is not None:
                    with contextlib.suppress(OSError):
                        pipe.close()
    paths = agent_paths(agent, workspace)
    files = _lineage(paths)
    records = _records(paths)
    assert len(records) == len(files) - 1 == 6
    assert all(r["strategy"] == strategy.record() for r in records)
    seen: Counter[str] = Counter()
    for _, doc in files:
        contents = [m.content for m in doc.messages if not m.is_summary]
        assert len(contents) == len(set(contents)), "a message twice in one file"
        seen.update(contents)
    expected = {f"{prefix}-{n}" for prefix, count in written.items() for n in range(count)}
    expected |= {f"k-{i}-{j}" for i in range(6) for j in range(4)} | {"pre-0"}
    missing = sorted(expected - seen.keys())
    assert not missing, f"{len(missing)} messages lost, e.g. {missing[:5]}"
    assert not seen.keys() - expected, "unexpected messages"
    live = _read(paths.memory_md).messages
    assert live[0].is_summary and live[0].content.endswith("summary 5")
    for prefix in ("w0", "w1"):  # each writer's order holds in the timeline (first copies)
        order: list[int] = []
        for _, doc in files:
            for m in doc.messages:
                if m.content.startswith(f"{prefix}-") and int(m.content[3:]) not in order:
                    order.append(int(m.content[3:]))
        assert order == sorted(order), f"{prefix}'s messages out of order"


# -- the reference framework reads every strategy's files ------------------------------------------


@pytest.mark.skipif(
    not SWARMS_PYTHON,
    reason=SKIP_REASON,
)
def test_the_reference_reads_every_strategys_memory_and_archive(tmp_path: Path) -> None:
    copies: dict[str, list[str]] = {}  # file -> contents memorylab reads in it
    for strategy in [*STRATEGIES, KeepRecent(keep_messages=0)]:
        name = f"Ref{strategy.name}{len(copies)}"
        conv = _tool_history(name)
        conv.add("User", "escaped\n---\n### User — 2020-01-01T00:00:00\n\nnot a block")
        compressor = ContextCompressor(
            summarizer=ScriptedSummarizer(["summary of the calls"]), strategy=strategy
        )
        event = compressor.compress(conv, 100_000, force=True)
        assert event is not None and event.ok, event
        folder = conv.memory_md_path.parent  # type: ignore[union-attr]
        for path in [folder / "MEMORY.md", *sorted((folder / "archive").iterdir())]:
            copy = tmp_path / "files" / f"{name}-{path.name}" / "MEMORY.md"
            copy.parent.mkdir(parents=True)
            copy.write_bytes(path.read_bytes())
            copies[str(copy)] = [m.content for m in _read(path).messages]
    loaded = read_with_swarms(copies, tmp_path / "c")
    for path, contents in copies.items():
        for content in contents:  # every block's text reaches the reference's context
            assert content.split("\n")[0] in loaded[path], (path, content[:80])
    cleared = [p for p, c in copies.items() if any("tool result cleared" in x for x in c)]
    assert cleared and all("tool result cleared" in loaded[p] for p in cleared)
