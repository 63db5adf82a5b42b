"""Keep the turn in progress (issue 38): the user's last message and everything after it are never
summarized, cleared or dropped, whatever the strategy; pinned entries neither. ``keep_turn=False``
is the seed's compaction, byte for byte. A live Agent run and its replay agree."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from live_agent import replayed, reproduces, run_live

from memorylab import Conversation, read_memory
from memorylab.compress import (
    ClearToolResults,
    ContextCompressor,
    KeepRecent,
    ScriptedSummarizer,
    Strategy,
    SummaryStrategy,
    Trim,
    get_token_counter,
)
from memorylab.errors import InvalidSetting
from memorylab.transcripts import TranscriptMessage, bundled_transcripts, load_transcript

COUNTER = get_token_counter("gpt-4o")
BIG = "row " * 60


class Clock:
    """One second later at every read: two runs write the same bytes."""

    def __init__(self) -> None:
        self.now = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def _bug_hunt_until_a_tool_result() -> list[TranscriptMessage]:
    """The bundled checkout-bug-hunt transcript up to its first tool result of a turn that
    follows earlier turns (the question, the assistant's plan and call, the result)."""
    (path,) = [p for p in bundled_transcripts() if p.stem == "checkout-bug-hunt"]
    messages = load_transcript(path).messages
    end = next(i for i, m in enumerate(messages) if i >= 15 and m.role == "tool") + 1
    return list(messages[:end])


STRATEGIES = [
    SummaryStrategy(),
    KeepRecent(keep_messages=1),
    ClearToolResults(keep_tool_results=0),
    Trim(keep_messages=1),
]


@pytest.mark.parametrize("strategy", STRATEGIES, ids=lambda s: s.name)
def test_a_compaction_right_after_a_tool_result_keeps_the_question_and_the_result(
    strategy: Strategy,
) -> None:
    """The issue's measured case: the summary strategy summarized the user's question and the
    tool result the model had just asked for; now no strategy summarizes, clears or drops them."""
    messages = _bug_hunt_until_a_tool_result()
    question = max(i for i, m in enumerate(messages) if m.role == "user")
    assert messages[-1].role == "tool" and question < len(messages) - 2
    conv = Conversation(agent_name="BugHunter", token_counter=COUNTER)
    for message in messages:
        conv.add(message.role, message.content)
    compressor = ContextCompressor(threshold=0.5, strategy=strategy)
    event = compressor.compress(conv, context_length=conv.token_count())  # it fires
    assert event is not None and event.ok, event
    turn = [(m.role, m.content) for m in messages[question:]]
    written = [(m.role, m.content) for m in read_memory(conv.memory_md_path).messages]  # type: ignore[arg-type]
    assert written[-len(turn) :] == turn  # the question, the plan, the call, the result
    sent = [(e["role"], e["content"]) for e in conv.conversation_history[-len(turn) :]]
    assert sent == turn
    record = conv.store.records()[-1]  # type: ignore[union-attr]
    assert record["extra"]["keep_turn"] is True and record["extra"]["kept_turn"] == len(turn)


def _one_long_turn(
    name: str, clock: Clock | None = None, workspace: Path | None = None
) -> Conversation:
    """A history that is one turn: the task, then calls and their results (two results for the
    last call), as the Agent records them."""
    conv = Conversation(agent_name=name, token_counter=COUNTER, system_prompt="sp", clock=clock,
                        workspace_dir=workspace)  # fmt: skip
    conv.add("User", "task: load the rows of /srv/etl/rows.csv")
    for turn in range(4):
        conv.add(name, f"Calling tools: load({turn})", tool_calls=[{"id": f"c{turn}"}])
        conv.add("Tool Executor", f"result {turn}: " + BIG, tool_call_id=f"c{turn}")
    conv.add("Tool Executor", "result 3b: " + BIG, tool_call_id="c3")
    return conv


def test_a_turn_that_is_the_whole_history_keeps_its_request_and_newest_step() -> None:
    """When keeping the whole turn leaves nothing to compact, the user's message and the newest
    message with the tool call it answers are kept; the rest of the turn is summarized."""
    conv = _one_long_turn("Fallback")
    summarizer = ScriptedSummarizer(["Loaded parts 0-2."])
    compressor = ContextCompressor(threshold=0.5, summarizer=summarizer, timer=lambda: 0.0)
    event = compressor.compress(conv, context_length=conv.token_count())
    assert event is not None and event.ok, event
    kept = [m.content[:20] for m in read_memory(conv.memory_md_path).messages[1:]]  # type: ignore[arg-type]
    assert kept == [
        "task: load the rows ", "Calling tools: load(", "result 3: row row ro", "result 3b: row row r"
    ]  # fmt: skip
    assert [m["content"][:23] for m in summarizer.calls[0]][:1] == ["Calling tools: load(0)"]
    assert len(summarizer.calls[0]) == 6  # calls and results 0-2
    assert conv.store.records()[-1]["extra"]["kept_turn"] == 4  # type: ignore[union-attr]


def test_a_turn_that_alone_is_the_history_is_not_compacted() -> None:
    conv = Conversation(agent_name="Short", token_counter=COUNTER)
    conv.add("User", "task: " + BIG)
    conv.add("Short", "Done: " + BIG)
    compressor = ContextCompressor(threshold=0.5, summarizer=ScriptedSummarizer(["x"]))
    event = compressor.compress(conv, context_length=conv.token_count())
    assert event is not None and not event.ok
    assert "turn in progress" in str(event.error) and "keep_turn=False" in str(event.error)
    seed = ContextCompressor(summarizer=ScriptedSummarizer(["x"]), keep_turn=False)
    event = seed.compress(conv, 10_000, force=True)
    assert event is not None and event.ok  # the seed's compaction summarizes the turn too


def test_pinned_entries_are_kept_by_every_compaction() -> None:
    conv = Conversation(agent_name="Pins", token_counter=COUNTER)
    conv.add("User", "The task: migrate /srv/etl to Airflow 2.9.", pinned=True)
    for i in range(6):
        conv.add("User", f"step {i}: " + BIG)
    for _ in range(2):
        event = ContextCompressor(summarizer=ScriptedSummarizer(["s"]), strategy=Trim(
            keep_messages=1), keep_turn=False).compress(conv, 10_000, force=True)  # fmt: skip
        assert event is not None and event.ok, event
        written = [m.content for m in read_memory(conv.memory_md_path).messages]  # type: ignore[arg-type]
        assert written[0] == "The task: migrate /srv/etl to Airflow 2.9."
        conv.add("User", "step again: " + BIG)


def test_keep_turn_false_writes_the_seeds_bytes(tmp_path: Path) -> None:
    """The seed's compaction (the reference's compact(): the summary alone), byte for byte."""
    written = []
    for run in ("seed", "off"):
        conv = _one_long_turn("Same", Clock(), workspace=tmp_path / run)
        if run == "seed":
            conv.compact("Loaded parts 0-3.")
        else:
            compressor = ContextCompressor(
                summarizer=ScriptedSummarizer(["Loaded parts 0-3."]), keep_turn=False
            )
            event = compressor.compress(conv, 10_000, force=True)
            assert event is not None and event.ok
            assert "keep_turn" not in conv.store.records()[-1]["extra"]  # type: ignore[union-attr]
        folder = conv.memory_md_path.parent  # type: ignore[union-attr]
        files = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*.md")}
        written.append(files)
    assert written[0] == written[1] and len(written[0]) == 2  # MEMORY.md and the archive
    off = repr(ContextCompressor(keep_turn=False))
    assert off == "ContextCompressor(threshold=0.9, summarizer=None, keep_turn=False)"


def test_keep_turn_is_checked() -> None:
    with pytest.raises(InvalidSetting, match="keep_turn must be True or False"):
        ContextCompressor(keep_turn="yes")  # type: ignore[arg-type]


def test_a_live_agent_keeps_each_turn_and_its_replay_reproduces_it(tmp_path: Path) -> None:
    run = run_live(tmp_path, "LiveTurn", seed=2)
    assert len(run.records) >= 3
    assert all(r["extra"]["keep_turn"] is True and r["extra"]["kept_turn"] >= 1
               for r in run.records)  # fmt: skip
    doc = read_memory(run.folder / "MEMORY.md")
    tasks = [m for m in doc.messages if m.role == "User"]
    assert tasks and tasks[-1].content.startswith("Task 15:")
    result = replayed(run)
    assert result.settings is not None and result.settings.keep_turn is True
    assert reproduces(run, result), (run.tokens_before, [e.tokens_before for e in result.events])


def test_a_replay_of_a_seed_run_compacts_the_turn_too(tmp_path: Path) -> None:
    """A record without keep_turn (older files, keep_turn=False) is replayed as it ran."""
    run = run_live(tmp_path, "LiveSeed", seed=2, keep_turn=False)
    assert run.records and all("keep_turn" not in r["extra"] for r in run.records)
    result = replayed(run)
    assert result.settings is not None and result.settings.keep_turn is False
    assert reproduces(run, result)


def test_a_pinned_task_and_the_turn_are_kept_live_and_in_the_replay(tmp_path: Path) -> None:
    run = run_live(tmp_path, "LivePinned", seed=2, pins=1)  # Agent.run(task 0, pin=True)
    assert len(run.records) >= 3
    blocks = [m.content for m in read_memory(run.folder / "MEMORY.md").messages]
    assert blocks[1].startswith("Task 0:") and blocks[2].startswith("Task 15:")
    result = replayed(run)
    assert reproduces(run, result) and blocks[1] in result.final_context
