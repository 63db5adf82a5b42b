"""The fact ledger strategy: the departing messages' facts carried verbatim beside the summary,
bounded, never summarized; live through the Agent on a bundled transcript, across a restart,
in a replay of its files, and read by the reference framework."""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from fakes.swarms_reader import SKIP_REASON, SWARMS_PYTHON, read_with_swarms
from memorylab import Agent, Conversation, read_memory
from memorylab.analysis import memory_df, replay
from memorylab.compress import (
    MIN_SUMMARY_TOKENS,
    BaseSummarizer,
    ContextCompressor,
    ExtractiveSummarizer,
    FactLedger,
    Summary,
    get_strategy,
    get_token_counter,
    is_ledger,
    strategy_from_record,
    strategy_names,
)
from memorylab.errors import InvalidSetting
from memorylab.llm import ChatReply
from memorylab.memory._records import SUMMARY_PREFIX, EntryKind
from memorylab.transcripts import bundled_transcripts, load_transcript

sys.path.insert(0, str(Path(__file__).parents[1] / "analysis"))
from agent_runs import START, ScriptedModel, SecondClock

COUNTER = get_token_counter("gpt-4o-mini")
LEDGER = "[Compressed Memory Summary] [Fact ledger]"


def _ledger(content: str) -> dict[str, Any]:
    return {"role": "System", "content": content, "kind": "summary"}


def _lines(entry: Mapping[str, Any]) -> list[str]:
    """A ledger's fact lines."""
    return str(entry["content"]).splitlines()[1:]


# -- the plan -------------------------------------------------------------------------------------


def test_the_previous_ledger_is_dropped_and_its_facts_carried_before_the_new_ones() -> None:
    entries = [
        {"role": "System", "content": f"{SUMMARY_PREFIX} Earlier work.", "kind": "summary"},
        _ledger(f"{LEDGER} facts:\npath: /srv/old.py\ncommand: make lint"),
        {"role": "User", "content": "Run `pytest -x` on src/app.py; /srv/old.py is fine."},
        {"role": "Assistant", "content": "Done: 12 passed in 3.5 s."},
    ]
    plan = FactLedger().plan(entries, counter=COUNTER)
    assert plan.summarize == (0, 2, 3)  # the previous summary's prose and the new messages
    assert plan.keep == () and plan.dropped == (1,)  # the old ledger: replaced, not summarized
    (carried,) = plan.carry
    assert is_ledger(carried) and carried["kind"] == "summary" and carried["role"] == "System"
    assert _lines(carried) == [
        "path: /srv/old.py", "command: make lint", "command: pytest -x", "path: src/app.py",
        "number: 12", "number: 3.5 s",
    ]  # fmt: skip
    assert plan.counts()["carried_entries"] == 1


def test_a_window_of_newest_messages_is_kept_and_the_ledger_never_in_it() -> None:
    entries = [_ledger(f"{LEDGER} facts:\npath: /a.py")] + [
        {"role": "User", "content": f"step {i} in /srv/s{i}.py"} for i in range(4)
    ]
    plan = FactLedger(keep_messages=2).plan(entries)
    assert plan.summarize == (1, 2) and plan.keep == (3, 4)
    assert _lines(plan.carry[0]) == ["path: /a.py", "path: /srv/s0.py", "path: /srv/s1.py"]
    everything = FactLedger(keep_messages=10).plan(entries)
    assert everything.empty and "nothing to summarize" in everything.note


def test_nothing_extracted_carries_no_ledger() -> None:
    plan = FactLedger().plan([{"role": "User", "content": "hello there"}])
    assert plan.summarize == (0,) and plan.carry == ()


def _facts(n: int, category: str = "path") -> list[dict[str, Any]]:
    if category == "path":
        return [{"role": "User", "content": f"see /srv/app/module_{i:03d}.py"} for i in range(n)]
    return [{"role": "User", "content": f"run `make target{i:03d}`"} for i in range(n)]


@pytest.mark.parametrize("budget", [40, 120, 400])
def test_the_ledger_fits_its_budget_counted_as_the_model_reads_it(budget: int) -> None:
    plan = FactLedger(ledger_tokens=budget).plan(_facts(80), counter=COUNTER)
    (carried,) = plan.carry
    assert COUNTER(f"System: {carried['content']}") <= budget
    assert len(_lines(carried)) < 80  # something had to go
    more = FactLedger(ledger_tokens=budget + 60).plan(_facts(80), counter=COUNTER)
    assert len(_lines(more.carry[0])) > len(_lines(carried))  # the budget is what bounds it


def test_without_a_counter_four_characters_make_a_token() -> None:
    (carried,) = FactLedger(ledger_tokens=100).plan(_facts(80)).carry
    assert len(f"System: {carried['content']}") <= 400


def test_a_tenth_of_the_window_at_most() -> None:
    (carried,) = FactLedger(ledger_tokens=5000).plan(_facts(80), context_length=1000,
                                                     counter=COUNTER).carry  # fmt: skip
    assert COUNTER(f"System: {carried['content']}") <= 100


def test_newest_keeps_what_left_first_and_oldest_what_left_last() -> None:
    first = FactLedger(ledger_tokens=80).plan(_facts(40), counter=COUNTER).carry[0]
    assert _lines(first)[0] == "path: /srv/app/module_000.py"
    latest = FactLedger(ledger_tokens=80, eviction="oldest").plan(_facts(40), counter=COUNTER)
    assert _lines(latest.carry[0])[-1] == "path: /srv/app/module_039.py"
    assert "path: /srv/app/module_000.py" not in _lines(latest.carry[0])
    # a ledger full of old facts keeps them and leaves the new ones out ("newest"), or the reverse
    again = FactLedger(ledger_tokens=80).plan([first, *_facts(60)[40:]], counter=COUNTER)
    assert _lines(again.carry[0]) == _lines(first)
    turned = FactLedger(ledger_tokens=80, eviction="oldest").plan([first, *_facts(60)[40:]],
                                                                  counter=COUNTER)  # fmt: skip
    assert _lines(turned.carry[0])[-1] == "path: /srv/app/module_059.py"


def test_balanced_gives_each_category_a_share() -> None:
    entries = _facts(40) + _facts(3, "command")  # the paths come first and would fill it
    newest = FactLedger(ledger_tokens=120).plan(entries, counter=COUNTER)
    assert not any(line.startswith("command:") for line in _lines(newest.carry[0]))
    balanced = FactLedger(ledger_tokens=120, eviction="balanced").plan(entries, counter=COUNTER)
    lines = _lines(balanced.carry[0])
    assert [x for x in lines if x.startswith("command:")] == [
        "command: make target000", "command: make target001", "command: make target002"
    ]  # fmt: skip
    assert lines[0] == "path: /srv/app/module_000.py"  # within a category, the newest leave
    assert COUNTER(f"System: {balanced.carry[0]['content']}") <= 120


def test_categories_choose_what_is_ledgered() -> None:
    entries = [{"role": "User", "content": "Run `make test` in /srv/app at 10:30 for 45 s."}]
    plan = FactLedger(categories=("command",)).plan(entries)
    assert _lines(plan.carry[0]) == ["command: make test"]


def test_a_fact_seen_again_is_ledgered_once_in_its_first_place() -> None:
    entries = [{"role": "User", "content": "edit /srv/a.py"}, {"role": "User", "content": "b.py"},
               {"role": "User", "content": "and /srv/a.py again"}]  # fmt: skip
    assert _lines(FactLedger().plan(entries).carry[0]) == ["path: /srv/a.py", "path: b.py"]


def test_a_hand_edited_ledger_line_that_is_not_a_fact_is_skipped() -> None:
    entries = [_ledger(f"{LEDGER} x\nnot a fact\nmood: fine\npath: /ok.py"),
               {"role": "User", "content": "hi"}]  # fmt: skip
    assert _lines(FactLedger().plan(entries).carry[0]) == ["path: /ok.py"]


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"ledger_tokens": 0}, "FactLedger.ledger_tokens"),
        ({"ledger_tokens": "many"}, "FactLedger.ledger_tokens"),
        ({"eviction": "random"}, "FactLedger.eviction"),
        ({"categories": ["paths"]}, "FactLedger.categories"),
        ({"categories": []}, "FactLedger.categories"),
        ({"keep_messages": 2, "keep_tokens": 10}, "keep_tokens"),
    ],
)
def test_a_wrong_setting_names_it(settings: dict[str, Any], named: str) -> None:
    with pytest.raises(InvalidSetting, match=named):
        FactLedger(**settings)


def test_the_record_rebuilds_it() -> None:
    ledger = FactLedger(ledger_tokens=300, eviction="balanced", categories=["path", "command"])
    record = ledger.record()
    assert record == {"name": "fact_ledger", "keep_messages": 0, "ledger_tokens": 300,
                      "eviction": "balanced", "categories": ["path", "command"]}  # fmt: skip
    assert strategy_from_record(json.loads(json.dumps({"strategy": record}))) == ledger
    assert get_strategy("fact_ledger") == FactLedger() and "fact_ledger" in strategy_names()
    assert FactLedger.verbatim  # a preload is read as its blocks: the ledger is found again


# -- live: the compressor ----------------------------------------------------------------------


class Recording(BaseSummarizer):
    """The extractive summarizer, recording what it is given and the budget it is asked for."""

    name = "memorylab/extractive"

    def __init__(self) -> None:
        self.inner = ExtractiveSummarizer()
        self.inputs: list[list[str]] = []
        self.budgets: list[int | None] = []

    def summarize(
        self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None
    ) -> Summary:
        self.inputs.append([str(m["content"]) for m in messages])
        self.budgets.append(max_tokens)
        return self.inner.summarize(messages, max_tokens=max_tokens)


def _transcript(count: int) -> list[dict[str, str]]:
    """The first messages of a bundled transcript (roles as the files keep them)."""
    transcript = load_transcript(bundled_transcripts()[0])
    return [{"role": m.role, "content": m.content} for m in transcript.messages[:count]]


def test_the_summarizer_never_reads_the_ledger_and_shares_its_budget(tmp_path: Path) -> None:
    conv = Conversation(agent_name="Ledgered", workspace_dir=tmp_path, token_counter=COUNTER)
    summarizer = Recording()
    compressor = ContextCompressor(0.8, summarizer=summarizer, strategy=FactLedger())
    for message in _transcript(200):
        conv.add(message["role"].capitalize(), message["content"])
        compressor.compress(conv, 4000)
    events = [e for e in compressor.events if e.ok]
    assert len(events) >= 3 and len(summarizer.inputs) == len(events)
    ledgers = [text for given in summarizer.inputs for text in given if "[Fact ledger]" in text]
    assert ledgers == []  # never summarized
    assert all(given[0].startswith(SUMMARY_PREFIX) for given in summarizer.inputs[1:])
    for event, asked in zip(events, summarizer.budgets, strict=True):
        assert event.extra["summary_budget"] == asked
        assert asked is not None and MIN_SUMMARY_TOKENS <= asked < compressor.summary_budget(4000)
        assert event.extra["carried_entries"] == 1
    summary, ledger = conv.entries(EntryKind.SUMMARY)
    assert is_ledger(ledger) and not is_ledger(summary)
    together = COUNTER(conv.entry_text(summary)) + COUNTER(conv.entry_text(ledger))
    assert together <= compressor.summary_budget(4000) + 10  # where the seed's summary alone fit


def test_the_ledger_is_written_when_no_entry_is_kept(tmp_path: Path) -> None:
    """The seed's compaction (``keep_turn=False``, nothing kept verbatim): the summary, then
    the ledger, in the history and as MEMORY.md's blocks."""
    conv = Conversation(agent_name="NoKeep", workspace_dir=tmp_path, token_counter=COUNTER)
    for message in _transcript(40):
        conv.add(message["role"].capitalize(), message["content"])
    compressor = ContextCompressor(
        summarizer_model="memorylab/extractive", strategy=FactLedger(), keep_turn=False
    )
    event = compressor.compress(conv, 100_000, force=True)
    assert event is not None and event.ok and event.extra["kept_messages"] == 0
    history = conv.compaction_entries()
    assert len(history) == 2 and is_ledger(history[1]) and not is_ledger(history[0])
    blocks = read_memory(tmp_path / "agents" / "NoKeep" / "MEMORY.md").messages
    assert [b.content for b in blocks] == [str(e["content"]) for e in history]
    assert event.tokens_after == conv.token_count()


def test_a_bounded_preload_keeps_the_summary_and_its_ledger(tmp_path: Path) -> None:
    """The latest summary is what a preload keeps first: with a ledger, both blocks the
    compaction wrote (the prose first), then the newest messages that fit."""
    conv = Conversation(agent_name="Bounded", workspace_dir=tmp_path, token_counter=COUNTER)
    for message in _transcript(60):
        conv.add(message["role"].capitalize(), message["content"])
    compressor = ContextCompressor(summarizer_model="memorylab/extractive", strategy=FactLedger())
    assert compressor.compress(conv, 8192, force=True).ok  # type: ignore[union-attr]
    for message in _transcript(90)[60:]:
        conv.add(message["role"].capitalize(), message["content"])
    again = Conversation(agent_name="Bounded", workspace_dir=tmp_path, token_counter=COUNTER,
                         preload_max_tokens=2600)  # fmt: skip
    entries = again.compaction_entries(preload_as_messages=True)
    assert "not in this preload" in str(again.entries(EntryKind.PRELOAD)[0]["content"])
    summaries = [e for e in entries if e.get("kind") == "summary"]
    assert len(summaries) == 2 and is_ledger(summaries[1]) and not is_ledger(summaries[0])
    assert entries[:2] == summaries


# -- live: the Agent on a bundled transcript, a restart, the replay, the reference --------------


def _turns(messages: Sequence[Mapping[str, str]]) -> list[tuple[str, str]]:
    """Each user message with the messages up to the next one as the model's reply."""
    turns: list[tuple[str, list[str]]] = []
    for message in messages:
        if message["role"] == "user" or not turns:
            turns.append((message["content"], []))
        else:
            turns[-1][1].append(message["content"])
    return [(prompt, "\n\n".join(reply) or "ok") for prompt, reply in turns]


def _run(workspace: Path, turns: Sequence[tuple[str, str]], sessions: int) -> Path:
    clock = SecondClock(START, random.Random("ledger"))
    per = -(-len(turns) // sessions)
    for session in range(sessions):
        model = ScriptedModel()
        agent = Agent(
            agent_name="Ledger", model_name="gpt-4o-mini", context_length=4096,
            compression_threshold=0.8, summarizer_model="memorylab/extractive",
            workspace_dir=workspace, completion=model, clock=clock, max_loops=1,
            strategy=FactLedger(), id=f"agent-{session:032x}",
        )  # fmt: skip
        if session:  # the preload, read as its blocks, holds the ledger once
            entries = agent.short_memory.compaction_entries(preload_as_messages=True)
            assert sum(1 for e in entries if is_ledger(e)) == 1
            assert [e.get("kind") for e in entries[:2]] == ["summary", "summary"]  # prose, ledger
        for prompt, reply in turns[session * per : (session + 1) * per]:
            model.queue = [ChatReply(content=reply)]
            agent.run(prompt)
        assert all(e.ok for e in agent.compaction_events)
        store = agent.short_memory.store
        assert store is not None
        store.close()
        clock.now += timedelta(hours=20)
    return workspace / "agents" / "Ledger"


@pytest.fixture(scope="module")
def ledger_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _run(tmp_path_factory.mktemp("ledger"), _turns(_transcript(260)), sessions=2)


def _records(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (folder / "compactions.jsonl").read_text().splitlines()]


def _files(folder: Path) -> list[Path]:
    """The agent's files in the order they were written: the archives, then MEMORY.md."""
    return [folder / "archive" / r["archive"] for r in _records(folder)] + [folder / "MEMORY.md"]


def test_the_agent_carries_facts_verbatim_through_every_compaction(ledger_run: Path) -> None:
    records = _records(ledger_run)
    assert len(records) >= 4
    assert all(r["strategy"] == FactLedger().record() for r in records)
    assert all(r["extra"]["carried_entries"] == 1 for r in records)
    ledgers = []
    for path in _files(ledger_run)[1:]:  # each file a compaction wrote opens with summary, ledger
        blocks = read_memory(path).messages
        assert blocks[0].is_summary and not is_ledger(
            {"role": "System", "content": blocks[0].content}
        )
        assert blocks[1].is_summary and blocks[1].content.startswith(LEDGER)
        assert sum(1 for b in blocks if b.content.startswith(LEDGER)) == 1
        ledgers.append(blocks[1].content.splitlines()[1:])
    first = ledgers[0]
    assert len(first) >= 10
    archived = read_memory(_files(ledger_run)[0]).messages
    for line in first:  # the first compaction's facts, as its departing messages wrote them
        assert any(line.split(": ", 1)[1] in m.content for m in archived), line
    for later in ledgers[1:]:  # kept verbatim, in order, through every later compaction
        assert later[: len(first)] == first
    # and the last summary's prose alone no longer holds most of them: the ledger does
    prose = read_memory(ledger_run / "MEMORY.md").messages[0].content
    assert sum(line.split(": ", 1)[1] in prose for line in first) < len(first) / 2


def test_a_replay_of_the_files_reproduces_the_compactions(ledger_run: Path) -> None:
    records = _records(ledger_run)
    result = replay(memory_df(ledger_run), cache=False)
    assert result.strategy == FactLedger().describe()
    replayed = [int(e.tokens_before or 0) for e in result.events if e.ok]
    assert len(replayed) == len(records)
    for again, live in zip(replayed, (int(r["tokens_before"]) for r in records), strict=True):
        assert abs(again - live) <= 0.02 * live
    assert all(e.strategy == FactLedger().record() for e in result.events)


@pytest.mark.skipif(
    not SWARMS_PYTHON,
    reason=SKIP_REASON,
)
def test_the_reference_reads_the_ledgers_files(ledger_run: Path, tmp_path: Path) -> None:
    copies: dict[str, list[str]] = {}
    for path in _files(ledger_run):
        copy = tmp_path / "files" / path.name / "MEMORY.md"
        copy.parent.mkdir(parents=True)
        copy.write_bytes(path.read_bytes())
        copies[str(copy)] = [m.content for m in read_memory(path).messages]
    loaded = read_with_swarms(copies, tmp_path / "c")
    for path, contents in copies.items():
        for content in contents:  # every block, the ledger's every line included, is read
            for line in content.splitlines()[:40]:
                assert line in loaded[path], (path, line[:80])
    assert sum(LEDGER in text for text in loaded.values()) == len(copies) - 1
