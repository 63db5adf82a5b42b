"""Pinned context: a message the user pins is carried verbatim through every compaction, across
restarts, by the summary strategy too; the pin is a line of pins.jsonl (no text), MEMORY.md stays
the reference's format, and a replay of the files reproduces the run's compactions."""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from fakes.swarms_reader import SKIP_REASON, SWARMS_PYTHON, read_with_swarms
from memorylab import Agent, Conversation, read_memory
from memorylab.analysis import load_records, memory_df, replay
from memorylab.compress import ContextCompressor, ScriptedSummarizer, get_token_counter
from memorylab.errors import InvalidSetting
from memorylab.llm import ChatReply
from memorylab.memory import EntryKind, PinKey, pin_key, pinned_keys
from memorylab.transcripts import bundled_workspace, dumps_transcript, load_transcript

INSTRUCTION = "Always quote ticket INC-4471 and answer in French."
WORDS = ("pipeline", "latency", "schema", "partition", "backfill", "replica", "index", "cache")
COUNTER = get_token_counter("gpt-4o")


class Clock:
    """Whole seconds, so a run and its replay stamp (and count) every message alike."""

    def __init__(self) -> None:
        self.now = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=7)
        return self.now


def _words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(count))


def _agent(workspace: Path, clock: Clock, rng: random.Random, session: int) -> Agent:
    def completion(model: str, messages: Any, **_: Any) -> ChatReply:
        return ChatReply(content="Answer: " + _words(rng, 40))

    return Agent(
        agent_name="Pinner",
        model_name="gpt-4o-mini",
        system_prompt="You help with data.",
        context_length=1500,
        compression_threshold=0.7,
        summarizer_model="memorylab/extractive",  # the default summary strategy
        workspace_dir=workspace,
        completion=completion,
        clock=clock,
        max_loops=1,
        id=f"agent-{session:032x}",
    )


def _tasks(agent: Agent, rng: random.Random, prefix: str, count: int) -> None:
    for i in range(count):
        agent.run(f"Task {prefix}{i}: {_words(rng, 30)}?")


@dataclass
class PinnedRun:
    """A live run in three phases, the agent folder copied after each: ``pinned`` (the task
    pinned, then compactions), ``restarted`` (a new Agent on the same memory, compactions),
    ``unpinned`` (the pin undone, compactions)."""

    folders: dict[str, Path] = field(default_factory=dict)
    compactions: dict[str, int] = field(default_factory=dict)
    stamp: str = ""
    after_restart: list[dict[str, Any]] = field(default_factory=list)
    omitted_at_restart: int = 0


@pytest.fixture(scope="module")
def pinned_run(tmp_path_factory: pytest.TempPathFactory) -> PinnedRun:
    root = tmp_path_factory.mktemp("pinned")
    workspace, folder = root / "workspace", root / "workspace" / "agents" / "Pinner"
    run, rng, clock = PinnedRun(), random.Random(1), Clock()

    def keep(phase: str, agent: Agent) -> None:
        run.compactions[phase] = sum(1 for e in agent.compaction_events if e.ok)
        run.folders[phase] = shutil.copytree(folder, root / phase / "agents" / "Pinner")

    first = _agent(workspace, clock, rng, 1)
    first.run(INSTRUCTION, pin=True)
    run.stamp = first.short_memory.pinned()[0]["timestamp"]
    _tasks(first, rng, "a", 25)
    keep("pinned", first)
    first.short_memory.store.close()  # type: ignore[union-attr]

    clock.now += timedelta(hours=3)  # a new process
    second = _agent(workspace, clock, rng, 2)
    run.after_restart = second.short_memory.pinned()
    plan = second.short_memory.preload_plan
    run.omitted_at_restart = 0 if plan is None else plan.omitted_messages
    _tasks(second, rng, "b", 15)
    keep("restarted", second)
    second.short_memory.unpin(second.short_memory.pinned()[0])
    _tasks(second, rng, "c", 15)
    run.compactions["unpinned"] = sum(1 for e in second.compaction_events if e.ok)
    run.compactions["unpinned"] -= run.compactions["restarted"]
    run.folders["unpinned"] = shutil.copytree(folder, root / "unpinned" / "agents" / "Pinner")
    second.short_memory.store.close()  # type: ignore[union-attr]
    return run


def _instruction_blocks(path: Path) -> list[tuple[str, datetime]]:
    """The blocks of a memory file that are the pinned instruction: (role, timestamp)."""
    messages = read_memory(path).messages
    return [(m.role, m.timestamp) for m in messages if m.content == INSTRUCTION]


def _files(folder: Path) -> list[Path]:
    return [*sorted((folder / "archive").glob("history_*.md")), folder / "MEMORY.md"]


def test_a_pinned_task_is_carried_verbatim_through_every_summary(pinned_run: PinnedRun) -> None:
    folder = pinned_run.folders["pinned"]
    assert pinned_run.compactions["pinned"] >= 3
    block = ("User", datetime.fromisoformat(pinned_run.stamp))
    # every archive (the file each compaction replaced) and the file now: the block as written
    for path in _files(folder):
        assert _instruction_blocks(path) == [block], path.name
    memory = read_memory(folder / "MEMORY.md").messages
    assert memory[0].is_summary and memory[1].content == INSTRUCTION  # right after the summary
    records = [json.loads(line) for line in (folder / "compactions.jsonl").read_text().splitlines()]
    assert all("strategy" not in r for r in records)  # the seed's summary strategy


def test_a_pin_is_a_line_of_pins_jsonl_that_holds_no_text(pinned_run: PinnedRun) -> None:
    folder = pinned_run.folders["pinned"]
    pins = folder / "pins.jsonl"
    lines = [json.loads(line) for line in pins.read_text().splitlines()]
    assert lines == [
        {
            "action": "pin",
            "role": "User",
            "sha256": hashlib.sha256(INSTRUCTION.encode()).hexdigest(),
            "time": pinned_run.stamp,
            "timestamp": pinned_run.stamp,
        }
    ]
    assert b"INC-4471" not in pins.read_bytes()
    assert stat.S_IMODE(pins.stat().st_mode) == 0o600
    assert "pin" not in (folder / "MEMORY.md").read_text()  # MEMORY.md holds no marker
    (record,) = load_records(folder)
    assert record.pinned == {PinKey("User", pinned_run.stamp, lines[0]["sha256"])}


def test_the_pin_survives_a_restart_and_a_later_compaction(pinned_run: PinnedRun) -> None:
    # the new process's bounded preload left older messages out, not the pinned one
    assert pinned_run.omitted_at_restart > 0
    assert [(e["content"], e["timestamp"]) for e in pinned_run.after_restart] == [
        (INSTRUCTION, pinned_run.stamp)
    ]
    assert pinned_run.compactions["restarted"] >= 1
    folder = pinned_run.folders["restarted"]
    stamp = datetime.fromisoformat(pinned_run.stamp)
    assert _instruction_blocks(folder / "MEMORY.md") == [("User", stamp)]


def test_unpin_lets_the_next_compaction_take_it(pinned_run: PinnedRun) -> None:
    folder = pinned_run.folders["unpinned"]
    assert pinned_run.compactions["unpinned"] >= 1
    assert _instruction_blocks(folder / "MEMORY.md") == []
    lines = [json.loads(line) for line in (folder / "pins.jsonl").read_text().splitlines()]
    assert [line["action"] for line in lines] == ["pin", "unpin"]
    (record,) = load_records(folder)
    assert record.pinned == frozenset()


@pytest.mark.parametrize("phase", ["pinned", "restarted", "unpinned"])
def test_a_replay_of_the_files_reproduces_the_compactions(
    pinned_run: PinnedRun, phase: str
) -> None:
    folder = pinned_run.folders[phase]
    recorded = [
        record["tokens_before"]
        for record in map(json.loads, (folder / "compactions.jsonl").read_text().splitlines())
        if record.get("kind") == "compaction"
    ]
    result = replay(memory_df(folder), cache=False)
    replayed = [e.tokens_before for e in result.events if e.ok]
    assert len(replayed) == len(recorded)
    assert all(abs(a - b) <= 0.02 * b for a, b in zip(replayed, recorded, strict=True))
    assert (INSTRUCTION in result.final_context) is (phase != "unpinned")


@pytest.mark.skipif(
    not SWARMS_PYTHON,
    reason=SKIP_REASON,
)
def test_the_reference_reads_a_pinned_runs_memory(pinned_run: PinnedRun, tmp_path: Path) -> None:
    """swarms 16.0.3 preloads the MEMORY.md of a pinned run and its archives (pins.jsonl is
    memorylab's alone: the reference never opens it)."""
    folder = pinned_run.folders["restarted"]
    copies = []
    for path in _files(folder):
        copy = tmp_path / path.name / "MEMORY.md"
        copy.parent.mkdir()
        copy.write_bytes(path.read_bytes())
        copies.append(str(copy))
    loaded = read_with_swarms(copies, tmp_path / "c")
    assert all(INSTRUCTION in loaded[copy] for copy in copies)


def test_a_memory_only_conversation_flags_the_entry() -> None:
    conv = Conversation(system_prompt="Be brief.", memory_md_path=None, token_counter=COUNTER)
    task = conv.add("User", INSTRUCTION, pinned=True)
    other = conv.add("User", "and one more thing")
    assert task["pinned"] is True and "pinned" not in other
    conv.pin(2)
    assert conv.pinned() == [task, other]
    conv.unpin(1)
    assert conv.pinned() == [other] and "pinned" not in task
    with pytest.raises(InvalidSetting, match=r"pin\(0\): that entry is of kind 'static'"):
        conv.pin(0)
    with pytest.raises(InvalidSetting, match="pinned must be True or False"):
        conv.add("User", "x", pinned="yes")  # type: ignore[arg-type]


def test_the_summary_strategy_keeps_a_pinned_preloaded_block(isolated_workspace: Path) -> None:
    conv = Conversation(agent_name="Keeper", token_counter=COUNTER)
    conv.add("User", "step zero")
    conv.add("User", INSTRUCTION, pinned=True)
    for i in range(12):
        conv.add("Keeper", f"step {i}: " + "rows " * 30)
    conv.add("User", "what next?")  # the turn in progress: kept too
    again = Conversation(agent_name="Keeper", token_counter=COUNTER, preload_max_tokens=300)
    (preload,) = again.entries(EntryKind.PRELOAD)
    assert again.preload_plan is not None and again.preload_plan.omitted_messages > 0
    assert INSTRUCTION in preload["content"]  # the oldest kept: it is pinned
    entries = again.compaction_entries()  # the preload read block by block: pins are kept
    assert [e["content"] for e in entries if e.get("pinned")] == [INSTRUCTION]
    compressor = ContextCompressor(summarizer=ScriptedSummarizer(["Twelve steps loaded."]))
    event = compressor.compress(again, 10**6, force=True)
    assert event is not None and event.ok, event
    blocks = read_memory(again.memory_md_path).messages  # type: ignore[arg-type]
    summary = "[Compressed Memory Summary] Twelve steps loaded."
    assert [m.content for m in blocks] == [summary, INSTRUCTION, "what next?"]


def test_a_preloaded_block_can_be_unpinned_by_the_entry_pinned_gives(
    isolated_workspace: Path,
) -> None:
    conv = Conversation(agent_name="Undo", token_counter=COUNTER)
    conv.add("User", INSTRUCTION, pinned=True)
    again = Conversation(agent_name="Undo", token_counter=COUNTER)
    (block,) = again.pinned()
    again.unpin(block)
    assert again.pinned() == []
    assert Conversation(agent_name="Undo", token_counter=COUNTER).pinned() == []  # durable
    with pytest.raises(InvalidSetting, match="neither in conversation_history nor a block"):
        again.pin({"role": "User", "content": "never said", "timestamp": block["timestamp"]})


@pytest.mark.parametrize("kind", ["memorylab", "reference"])
def test_a_workspace_without_pins_reads_as_before(tmp_path: Path, kind: str) -> None:
    """Files written before pins existed, or by the reference framework: nothing pinned,
    nothing written by reading them, the preload one entry as before."""
    workspace = shutil.copytree(bundled_workspace(kind), tmp_path / "workspace")  # type: ignore[arg-type]
    records = load_records(workspace)
    assert records and all(r.pins == () and r.pinned == frozenset() for r in records)
    agent = records[0].folder
    assert agent is not None
    conv = Conversation(memory_md_path=agent / "MEMORY.md", token_counter=COUNTER)
    (preload,) = conv.entries(EntryKind.PRELOAD)
    assert "pins" not in preload and conv.pinned() == []
    assert [e["kind"] for e in conv.compaction_entries()] == ["preload"]
    assert not list(workspace.rglob("pins.jsonl"))


_PINNER = """
import sys
from memorylab import Conversation
conv = Conversation(agent_name="Both", workspace_dir=sys.argv[1])
for i in range(int(sys.argv[3])):
    conv.add("User", f"{sys.argv[2]}-{i}", pinned=True)
"""


def test_two_processes_pinning_at_once_lose_no_line(tmp_path: Path) -> None:
    count = 150
    writers = [
        subprocess.Popen([sys.executable, "-c", _PINNER, str(tmp_path), name, str(count)])
        for name in ("w0", "w1")
    ]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    folder = tmp_path / "agents" / "Both"
    lines = (folder / "pins.jsonl").read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 2 * count + 1
    pinned = pinned_keys(json.loads(line) for line in lines[:-1])
    blocks = read_memory(folder / "MEMORY.md").messages
    assert pinned == {pin_key(m.role, m.timestamp, m.content) for m in blocks}
    assert len(pinned) == 2 * count


def test_a_transcript_message_can_be_pinned(tmp_path: Path) -> None:
    lines: list[dict[str, Any]] = [
        {"type": "meta", "name": "t", "seed": 1, "description": "", "sessions": 1},
        {"type": "message", "session": 1, "role": "User", "content": INSTRUCTION,
         "timestamp": "2026-03-02T09:00:00+00:00", "pinned": True},
        {"type": "message", "session": 1, "role": "Bot", "content": "D'accord.",
         "timestamp": "2026-03-02T09:00:05+00:00"},
    ]  # fmt: skip
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    transcript = load_transcript(path)
    assert [m.pinned for m in transcript.messages] == [True, False]
    assert [m.get("pinned") for m in transcript.as_messages()] == [True, None]
    assert dumps_transcript(transcript).count('"pinned": true') == 1
    (record,) = load_records(path)
    assert record.pinned == {pin_key("User", "2026-03-02T09:00:00+00:00", INSTRUCTION)}
    lines[1]["pinned"] = "yes"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(Exception, match="'pinned' must be true or false"):
        load_transcript(path)


def test_an_edited_pinned_message_stays_pinned(isolated_workspace: Path) -> None:
    conv = Conversation(agent_name="Editor", token_counter=COUNTER)
    conv.add("User", "Deploy on Tuesdays.", pinned=True)
    conv.update(-1, "User", INSTRUCTION)
    again = Conversation(agent_name="Editor", token_counter=COUNTER)
    assert [entry["content"] for entry in again.pinned()] == [INSTRUCTION]


def test_a_pinned_run_with_the_fact_ledger_replays(tmp_path: Path) -> None:
    """A pinned task beside the ledger a compaction carries (an entry with no time until it is
    on disk): the replay flags what the run had pinned without tripping on the ledger, and
    reproduces the run."""
    from memorylab.compress import FactLedger

    rng, clock = random.Random(7), Clock()
    agent = _agent(tmp_path / "ws", clock, rng, 0)
    agent.context_compressor.strategy = FactLedger()
    agent.run(INSTRUCTION + " Deploy from /srv/app with `make deploy`.", pin=True)
    for task in range(14):
        agent.run(f"Task {task}: {_words(rng, 30)}")
    live = [e for e in agent.compaction_events if e.ok]
    assert len(live) >= 2
    folder = agent.short_memory.memory_md_path.parent  # type: ignore[union-attr]
    assert INSTRUCTION in (folder / "MEMORY.md").read_text()
    replayed = [e for e in replay(memory_df(folder), cache=False).events if e.ok]
    assert [e.tokens_before for e in replayed] == [e.tokens_before for e in live]
