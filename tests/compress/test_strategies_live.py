"""Strategies live: ContextCompressor(strategy=...) and Agent(strategy=...) write the archive
(the whole old MEMORY.md), the re-seeded MEMORY.md (the summary first where there is one, then
the kept blocks as they were written) and a compactions.jsonl record naming the strategy."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memorylab import Conversation, read_memory
from memorylab.agent import Agent
from memorylab.compress import (
    ClearToolResults,
    ContextCompressor,
    KeepRecent,
    ScriptedSummarizer,
    SummaryStrategy,
    Trigger,
    Trim,
    get_token_counter,
)
from memorylab.compress._strategy import Strategy
from memorylab.llm import ChatReply
from memorylab.memory._records import SUMMARY_PREFIX, EntryKind, MemoryDocument

COUNTER = get_token_counter("gpt-4o")
BIG = "row " * 60


class Clock:
    """One second later at every read: files written by two runs compare byte for byte."""

    def __init__(self) -> None:
        self.now = datetime(2026, 5, 1, 10, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


def _conversation(name: str, clock: Clock | None = None) -> Conversation:
    """A history as the Agent records one: a task, calls with tool_calls, results with a
    tool_call_id, a final answer."""
    conv = Conversation(
        agent_name=name, token_counter=COUNTER, system_prompt="You load rows.", clock=clock
    )
    conv.add("User", "task: load the rows of /srv/etl/rows.csv")
    for turn in range(4):
        conv.add(name, f"Calling tools: load({turn})", tool_calls=[{"id": f"c{turn}"}])
        conv.add("Tool Executor", f"result {turn}: " + BIG, tool_call_id=f"c{turn}")
    conv.add(name, "All rows loaded.")
    return conv


def _records(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "compactions.jsonl").read_text().splitlines()]


def _blocks(doc: MemoryDocument) -> list[tuple[str, str, str]]:
    return [(m.role, m.content, m.timestamp.isoformat()) for m in doc.messages]


def _compress(conv: Conversation, strategy: Strategy | str | None) -> Any:
    compressor = ContextCompressor(
        threshold=0.5,
        summarizer=ScriptedSummarizer(["Loaded rows 0-3 of /srv/etl/rows.csv."]),
        strategy=strategy,
        timer=lambda: 0.0,
    )
    return compressor.compress(conv, context_length=2 * conv.token_count())


def test_no_strategy_and_the_summary_strategy_write_the_same_bytes(tmp_path: Path) -> None:
    """The default is today's compaction: given explicitly or not, the files are identical."""
    written = []
    for run, strategy in (("a", None), ("b", SummaryStrategy()), ("c", "summary")):
        workspace = tmp_path / run
        conv = Conversation(
            agent_name="Same", workspace_dir=workspace, token_counter=COUNTER, clock=Clock()
        )
        for i in range(12):
            conv.add("User", f"step {i}: loaded 400 rows into staging")
        event = _compress(conv, strategy)
        assert event.ok and event.strategy is None
        folder = workspace / "agents" / "Same"
        # The file a compaction replaced is kept by a second name for a second, named by the
        # time it was replaced: the store's state for late writers, not what a strategy wrote.
        files = {
            p.relative_to(folder): p.read_bytes()
            for p in folder.rglob("*")
            if p.is_file() and not p.name.startswith(".MEMORY.md.replaced-")
        }
        line = json.loads(files.pop(Path("compactions.jsonl")))
        assert set(line) == {
            "time", "agent", "archive", "summary_chars", "messages_archived", "carried_over",
            "tokens_before", "tokens_after", "summary_tokens", "threshold", "context_length",
            "summarizer_model", "latency_s", "cost_usd", "error", "kind", "extra", "replaced",
        }  # fmt: skip
        del line["replaced"]  # the replaced file's identity (device, inode): each run its own
        written.append((files, line))
    assert written[0] == written[1] == written[2]


def test_keep_recent_reseeds_the_summary_then_the_newest_blocks_as_written() -> None:
    conv = _conversation("Keeper")
    folder = conv.memory_md_path.parent  # type: ignore[union-attr]
    before = (folder / "MEMORY.md").read_bytes()
    old = _blocks(read_memory(folder / "MEMORY.md"))
    event = _compress(conv, KeepRecent(keep_messages=2))  # would split call 3 from its result
    assert event.ok and event.archive
    assert (folder / "archive" / event.archive).read_bytes() == before  # the whole old file
    doc = read_memory(folder / "MEMORY.md")
    assert doc.continues == event.archive
    assert doc.messages[0].content == f"{SUMMARY_PREFIX} Loaded rows 0-3 of /srv/etl/rows.csv."
    # the task (the turn in progress's request, kept: keep_turn), then the call, its result
    # and the answer, byte for byte
    assert _blocks(doc)[1:] == [old[0], *old[-3:]]
    record = _records(folder)[-1]
    assert record["strategy"] == {"name": "keep_recent", "keep_messages": 2}
    assert record["extra"]["kept_messages"] == 4 and record["extra"]["summarized_messages"] == 6
    assert record["summarizer_model"] == "memorylab/scripted" and record["archive"] == event.archive
    history = conv.conversation_history
    assert [e.get("kind") for e in history[:2]] == ["static", "summary"]
    assert [e["content"][:14] for e in history[2:]] == [
        "task: load the", "Calling tools:", "result 3: row ", "All rows loade"
    ]  # fmt: skip
    assert history[4]["tool_call_id"] == "c3"  # the provider pair survives in memory
    assert conv.token_count() == event.tokens_after < event.tokens_before


def test_clearing_names_the_archive_that_holds_each_original() -> None:
    conv = _conversation("Clearer")
    folder = conv.memory_md_path.parent  # type: ignore[union-attr]
    event = _compress(conv, ClearToolResults(keep_tool_results=1))
    assert event.ok and event.summarizer_model is None and event.summary_chars == 0
    archive = read_memory(folder / "archive" / str(event.archive))
    doc = read_memory(folder / "MEMORY.md")
    assert len(doc.messages) == len(archive.messages)  # every message kept, in order
    cleared = 0
    for new, original in zip(doc.messages, archive.messages, strict=True):
        assert (new.role, new.timestamp) == (original.role, original.timestamp)
        if new.content != original.content:
            cleared += 1
            assert new.role == "Tool Executor" and f"archive/{event.archive}]" in new.content
            assert original.content.startswith("result ") and len(original.content) > 200
    assert cleared == 3 and doc.messages[-2].content.startswith("result 3: row")
    record = _records(folder)[-1]
    assert record["strategy"]["name"] == "clear_tool_results"
    assert record["extra"]["cleared_messages"] == 3 and "summary_budget" not in record["extra"]
    assert record["cost_usd"] == 0.0
    assert event.tokens_after is not None and event.tokens_after < event.tokens_before
    in_memory = [e["content"] for e in conv.entries(EntryKind.MESSAGE)]
    assert in_memory == [m.content for m in doc.messages]


def test_trim_reseeds_the_newest_blocks_alone() -> None:
    conv = _conversation("Trimmer")
    folder = conv.memory_md_path.parent  # type: ignore[union-attr]
    old = _blocks(read_memory(folder / "MEMORY.md"))
    event = _compress(conv, Trim(keep_messages=3))
    assert event.ok and event.summary_tokens == 0
    assert _blocks(read_memory(folder / "MEMORY.md")) == [old[0], *old[-3:]]  # the task kept
    assert _blocks(read_memory(folder / "archive" / str(event.archive))) == old
    assert [e["role"] for e in conv.conversation_history] == ["System", "User", "Trimmer",
                                                              "Tool Executor", "Trimmer"]  # fmt: skip
    assert _records(folder)[-1]["extra"]["dropped_messages"] == 6


def test_messages_added_while_a_strategy_compacts_are_carried_over() -> None:
    conv = _conversation("Carry")
    ticket = conv.begin_compaction()
    entries = conv.compaction_entries(ticket, preload_as_messages=True)
    conv.add("User", "added while the summary was made")
    plan = KeepRecent(keep_messages=1).plan(entries)
    conv.compact(
        "made meanwhile",
        ticket=ticket,
        kept=lambda archive: plan.kept_entries(entries, archive),
        strategy=KeepRecent(keep_messages=1).record(),
    )
    doc = read_memory(conv.memory_md_path)  # type: ignore[arg-type]
    assert [m.content for m in doc.messages][1:] == [
        "All rows loaded.",
        "added while the summary was made",
    ]


def test_after_a_restart_the_preload_is_kept_message_by_message(isolated_workspace: Path) -> None:
    first = _conversation("Restart")
    assert first.store is not None
    first.store.close()
    again = Conversation(agent_name="Restart", token_counter=COUNTER)
    assert again.entries(EntryKind.PRELOAD)  # one preload entry: the whole file
    again.add("User", "new task")
    event = _compress(again, KeepRecent(keep_messages=4))
    assert event.ok
    doc = read_memory(again.memory_md_path)  # type: ignore[arg-type]
    contents = [m.content for m in doc.messages]
    assert contents[0].startswith(SUMMARY_PREFIX)
    assert contents[1:] == ["Calling tools: load(3)", f"result 3: {BIG}", "All rows loaded.",
                            "new task"]  # fmt: skip
    archive = read_memory(again.memory_md_path.parent / "archive" / str(event.archive))  # type: ignore[union-attr]
    assert [(m.role, m.timestamp) for m in doc.messages[1:4]] == [
        (m.role, m.timestamp) for m in archive.messages[-4:-1]
    ]


def test_a_memory_only_conversation_compacts_with_a_strategy() -> None:
    conv = Conversation(token_counter=COUNTER)
    for turn in range(3):
        conv.add("Agent", f"call {turn}", tool_calls=[{"id": f"c{turn}"}])
        conv.add("tool", BIG, tool_call_id=f"c{turn}")
    event = _compress(conv, ClearToolResults(keep_tool_results=1))
    assert event.ok and event.archive is None
    assert "(none: this memory is not on disk)" in conv.conversation_history[1]["content"]


def test_a_strategy_with_nothing_to_do_is_a_failed_attempt_that_changes_nothing() -> None:
    conv = Conversation(agent_name="NoTools", token_counter=COUNTER)
    for i in range(10):
        conv.add("User", f"message {i}")
    folder = conv.memory_md_path.parent  # type: ignore[union-attr]
    before = (folder / "MEMORY.md").read_bytes()
    event = _compress(conv, "clear_tool_results")
    assert event is not None and not event.ok
    assert "no tool result to clear" in str(event.error) and "keep_tool_results" in str(event.error)
    assert event.strategy == {"name": "clear_tool_results", "keep_tool_results": 3,
                              "placeholder": ClearToolResults().placeholder}  # fmt: skip
    assert (folder / "MEMORY.md").read_bytes() == before and not (folder / "archive").exists()


def test_a_message_count_trigger_fires_the_compressor() -> None:
    conv = Conversation(agent_name="Counted", token_counter=COUNTER)
    compressor = ContextCompressor(
        threshold=Trigger(fraction=0.99, messages=5),
        summarizer=ScriptedSummarizer(["s"]),
        strategy=KeepRecent(keep_messages=2),
    )
    for i in range(4):
        conv.add("User", f"m{i}")
    assert not compressor.should_compress(conv, 10_000)
    conv.add("User", "m4")
    assert compressor.should_compress(conv, 10_000)
    event = compressor.compress(conv, 10_000)
    assert event is not None and event.ok and event.threshold == 0.99
    assert event.extra["trigger"] == {"fraction": 0.99, "messages": 5}
    assert len(conv.entries(EntryKind.MESSAGE)) == 2
    assert compressor.compress(conv, 10_000) is None  # 2 messages: below the count again
    assert "Trigger(fraction=0.99, messages=5)" in repr(compressor)
    assert "strategy=keep_recent(keep_messages=2)" in repr(compressor)


def test_the_reference_agent_call_with_a_strategy_that_writes_no_summary() -> None:
    from types import SimpleNamespace

    conv = _conversation("Reference")
    agent = SimpleNamespace(short_memory=conv, context_length=100_000, model_name="x")
    compressor = ContextCompressor(threshold=0.5, strategy=Trim(keep_messages=2))
    assert compressor.compress(agent) is None  # the reference's call returns a summary: none
    assert compressor.events[-1].ok
    counted = ContextCompressor(threshold=Trigger(messages=3))
    assert counted.should_compress(agent)


# -- through the Agent ---------------------------------------------------------------------------


class ToolModel:
    """A ``completion=`` model: each task is answered by one tool call, then a reply."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, model: str, messages: Sequence[Mapping[str, Any]], **_: Any) -> ChatReply:
        self.calls += 1
        if messages[-1]["role"] == "tool":
            return ChatReply(content=f"Answer {self.calls}: the rows are loaded.")
        call = {"id": f"call{self.calls}", "name": "lookup", "arguments": '{"topic": "rows"}'}
        return ChatReply(content="", tool_calls=[call])


def lookup(topic: str) -> str:
    """Look a topic up.

    Args:
        topic: what to look up
    """
    return f"{topic}: " + BIG


@pytest.mark.parametrize(
    "strategy",
    [KeepRecent(keep_messages=4), ClearToolResults(keep_tool_results=2), Trim(keep_fraction=0.3)],
    ids=lambda s: s.name,
)
def test_an_agent_runs_with_each_strategy(isolated_workspace: Path, strategy: Strategy) -> None:
    agent = Agent(
        agent_name="Runner",
        model_name="gpt-4o-mini",
        context_length=1500,
        compression_threshold=0.6,
        summarizer_model="memorylab/extractive",
        tools=[lookup],
        completion=ToolModel(),
        clock=Clock(),
        strategy=strategy,
    )
    assert agent.context_compressor.strategy is strategy
    for i in range(8):
        agent.run(f"task {i}: load the rows of table t{i}")
    events = agent.compaction_events
    failed = [e.error for e in events if not e.ok]
    if isinstance(strategy, ClearToolResults):  # clearing alone cannot bound the growth: once
        assert all("no tool result to clear" in str(e) for e in failed)  # all old ones are...
    else:
        assert not failed
    assert all(e.strategy == strategy.record() for e in events)
    folder = isolated_workspace / "agents" / "Runner"
    records = _records(folder)
    assert [r["strategy"] for r in records] == [strategy.record()] * (len(events) - len(failed))
    doc = read_memory(folder / "MEMORY.md")
    if strategy.summarizes:
        assert doc.messages[0].is_summary
    else:
        assert not any(m.is_summary for m in doc.messages)
    roles = [m.role for m in doc.messages]
    for index, role in enumerate(roles):  # a result is always right after its call (or one)
        if role == "Tool Executor":
            assert index > 0 and roles[index - 1] in ("Runner", "Tool Executor")
            assert roles[index - 1] == "Runner" or roles[index - 2] == "Runner"
    everything = "".join(p.read_text() for p in folder.rglob("*.md"))
    for i in range(8):  # nothing is lost: every task is in MEMORY.md or an archive
        assert f"task {i}: load the rows of table t{i}" in everything
    if isinstance(strategy, ClearToolResults):
        archives = {p.name for p in (folder / "archive").iterdir()}
        named = [m.content for m in doc.messages if m.content.startswith("[memorylab: tool")]
        assert named and all(any(a in text for a in archives) for text in named)
    assert agent.short_memory.token_count() < 1500


def test_an_agent_compacts_on_a_message_count(isolated_workspace: Path) -> None:
    agent = Agent(
        agent_name="Counter",
        model_name="gpt-4o-mini",
        context_length=100_000,
        compression_threshold=Trigger(messages=6),
        summarizer_model="memorylab/extractive",
        completion=lambda model, messages, **_: ChatReply(content="ok"),
        strategy=KeepRecent(keep_messages=2),
    )
    for i in range(5):
        agent.run(f"question {i}")
    assert len(agent.compaction_events) >= 1
    record = _records(isolated_workspace / "agents" / "Counter")[0]
    assert record["threshold"] is None and record["extra"]["trigger"] == {"messages": 6}
    assert record["strategy"] == {"name": "keep_recent", "keep_messages": 2}
    assert record["messages_archived"] == 7  # checked before the call after the 7th message
    assert read_memory(agent.short_memory.memory_md_path).messages[0].is_summary  # type: ignore[arg-type]


def test_a_replay_can_apply_the_recorded_strategy_to_the_archived_messages() -> None:
    """What the replay engines do: rebuild the strategy from the record and plan the same
    entries (here the archive's messages) to the same kept blocks."""
    from memorylab.compress import strategy_from_record

    conv = _conversation("Replayed")
    folder = conv.memory_md_path.parent  # type: ignore[union-attr]
    event = _compress(conv, ClearToolResults(keep_tool_results=2))
    record = _records(folder)[-1]
    strategy = strategy_from_record(record)
    archived = read_memory(folder / "archive" / record["archive"]).messages
    entries = [{"role": m.role, "content": m.content} for m in archived]
    plan = strategy.plan(entries)
    kept = plan.kept_entries(entries, record["archive"])
    live = read_memory(folder / "MEMORY.md").messages
    assert [e["content"] for e in kept] == [m.content for m in live]
    assert len(plan.cleared) == record["extra"]["cleared_messages"] == 2
    assert event.archive == record["archive"]
