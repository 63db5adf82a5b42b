"""Usage records (issue 29, part 1): what the provider reports of each call is kept, not dropped.

* ``ChatReply`` keeps the provider's cached, cache-write and reasoning tokens (OpenAI's and
  Anthropic's names), ``None`` where it reported nothing;
* every model call of the ``Agent`` leaves a ``UsageRecord``: counts only, in
  ``agent.usage_records`` and (persistent memory) a private line of ``usage.jsonl``, written
  through the store by the rule of ``compactions.jsonl`` (a torn last line is skipped, noted,
  and the next line starts on its own);
* forgetting, purging and removing an agent delete ``usage.jsonl``; an export includes it;
* ``Trigger(count="reported")`` counts the last reported usage plus the estimate since.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from fakes.openai_server import FakeOpenAIServer, FakeRequest, Reply, ToolCall, ToolCallReply
from memorylab.agent import Agent
from memorylab.compress._policy import ReportedUsage, Trigger
from memorylab.errors import InvalidSetting
from memorylab.llm import chat
from memorylab.memory._paths import agent_paths
from memorylab.memory._records import UsageRecord
from memorylab.memory._store import MemoryStore
from memorylab.privacy import export_document, forget, purge

SECRET = "the vault path is /srv/vault-7f3a"
COUNTS = {
    "estimated_tokens", "tool_tokens", "checked_tokens", "input_tokens", "output_tokens",
    "cached_tokens", "cache_write_tokens", "reasoning_tokens", "call",
}  # fmt: skip


def _agent(server: FakeOpenAIServer, **kwargs: Any) -> Agent:
    options: dict[str, Any] = {
        "agent_name": "Counter",
        "model_name": "openai/fake-model",
        "context_length": 100_000,
        "llm_args": {"api_base": server.base_url, "api_key": "x"},
        "retries": 0,
        "timeout": 10,
        "summarizer_model": "memorylab/extractive",
    }
    options.update(kwargs)
    return Agent(**options)


# --------------------------------------------------------------------------- the gateway


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (Reply("hi", prompt_tokens=100, completion_tokens=20, cached_tokens=64,
               reasoning_tokens=12), (100, 20, 64, None, 12)),
        (Reply("hi", prompt_tokens=100, completion_tokens=20, cache_read_input_tokens=50,
               cache_creation_input_tokens=30), (100, 20, 50, 30, None)),
        (Reply("hi", prompt_tokens=100, completion_tokens=20, cached_tokens=0),
         (100, 20, 0, None, None)),
        (Reply("hi", prompt_tokens=7, completion_tokens=3), (7, 3, None, None, None)),
    ],
    ids=["openai-details", "anthropic-names", "zero-is-reported", "nothing-reported"],
)  # fmt: skip
def test_chat_reply_keeps_what_the_provider_reports(reply: Reply, expected: tuple) -> None:
    with FakeOpenAIServer(reply) as server:
        got = chat("openai/fake-model", [{"role": "user", "content": "x"}],
                   api_base=server.base_url, api_key="x")  # fmt: skip
    assert (got.input_tokens, got.output_tokens, got.cached_tokens, got.cache_write_tokens,
            got.reasoning_tokens) == expected  # fmt: skip
    assert {"cached_tokens", "cache_write_tokens", "reasoning_tokens"} <= set(got.to_dict())


# --------------------------------------------------------------------------- the Agent's records


def test_every_call_leaves_a_record_of_counts_in_usage_jsonl() -> None:
    def script(request: FakeRequest) -> Reply | ToolCallReply:
        if request.index == 0:
            return ToolCallReply([ToolCall("lookup", {"key": "vault"}, id="c1")],
                                 prompt_tokens=300, completion_tokens=9)  # fmt: skip
        return Reply(f"Done: {SECRET}.", prompt_tokens=420, completion_tokens=11,
                     cached_tokens=256, reasoning_tokens=4)  # fmt: skip

    def lookup(key: str) -> str:
        """Look a key up.

        Args:
            key: the key
        """
        return SECRET

    seen: list[int] = []
    with FakeOpenAIServer(script) as server:
        agent = _agent(server, tools=[lookup], max_loops=1, system_prompt=f"Know: {SECRET}")
        original = agent._completion

        def counting(*args: Any, **kwargs: Any) -> Any:
            seen.append(agent.short_memory.token_count())  # what the model is sent, counted
            return original(*args, **kwargs)

        agent._completion = counting
        agent.run(f"Where is the vault? {SECRET}")
    records = agent.usage_records
    assert [r.call for r in records] == [1, 2]
    assert [r.estimated_tokens for r in records] == seen
    assert [r.input_tokens for r in records] == [300, 420]
    assert [r.output_tokens for r in records] == [9, 11]
    assert [(r.cached_tokens, r.reasoning_tokens, r.cache_write_tokens) for r in records] == [
        (None, None, None),
        (256, 4, None),
    ]
    assert all(r.tool_tokens and r.tool_tokens > 10 for r in records)  # the lookup schema
    assert [r.checked_tokens for r in records] == seen  # no compaction: the check saw the same
    assert not any(r.compacted for r in records)
    replies = [e for e in agent.short_memory.entries() if e["role"] == "Counter"]
    assert [r.time for r in records] == [
        datetime.fromisoformat(e["timestamp"]) for e in replies
    ]
    session = agent.session_record()["session_start"]
    assert {r.session_start for r in records} == {session}
    assert records[1].drift == pytest.approx(420 / seen[1] - 1)

    path = agent_paths("Counter").usage
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    text = path.read_text(encoding="utf-8")
    lines = [json.loads(line) for line in text.splitlines()]
    assert [UsageRecord.from_dict(line) for line in lines] == records
    assert "vault" not in text and "lookup" not in text  # counts only, never content
    for line in lines:
        assert set(line) == {f.name for f in UsageRecord.__dataclass_fields__.values()}
        assert all(line[k] is None or isinstance(line[k], int) for k in COUNTS)
    assert MemoryStore(agent_paths("Counter").memory_md).usage_records() == lines


def test_a_memory_only_agent_keeps_its_records_in_memory(isolated_workspace: Path) -> None:
    with FakeOpenAIServer(Reply("ok", prompt_tokens=50, completion_tokens=2)) as server:
        agent = _agent(server, persistent_memory=False)
        agent.run("one")
        agent.run("two")
    assert [(r.call, r.input_tokens) for r in agent.usage_records] == [(1, 50), (2, 50)]
    assert not agent_paths("Counter").usage.exists()
    assert not list(isolated_workspace.rglob("usage.jsonl"))


def test_a_provider_that_reports_nothing_leaves_none_not_zero() -> None:
    def completion(model: str, messages: Any, **_: Any) -> Any:
        from memorylab.llm import ChatReply

        return ChatReply(content="ok", model=model)

    agent = Agent("Quiet", completion=completion, context_length=10_000)
    agent.run("hello")
    (record,) = agent.usage_records
    assert record.estimated_tokens and record.estimated_tokens > 0
    assert (record.input_tokens, record.output_tokens, record.cached_tokens) == (None, None, None)
    assert record.drift is None
    line = json.loads(agent_paths("Quiet").usage.read_text())
    assert line["input_tokens"] is None and line["cached_tokens"] is None


def test_usage_record_round_trips() -> None:
    record = UsageRecord(
        time=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), agent="a", session_start="s", call=3,
        model="m", estimated_tokens=100, tool_tokens=0, checked_tokens=120, compacted=True,
        input_tokens=125, output_tokens=7, cached_tokens=64, cache_write_tokens=None,
        reasoning_tokens=2, latency_s=0.5, cost_usd=None,
    )  # fmt: skip
    assert UsageRecord.from_dict(json.loads(json.dumps(record.to_dict()))) == record
    assert record.drift == pytest.approx(0.25)
    assert UsageRecord.from_dict({**record.to_dict(), "future_field": 1}) == record


# --------------------------------------------------------------------------- the JSONL rule


def test_usage_jsonl_after_a_torn_line_starts_a_line_of_its_own(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = MemoryStore.for_agent("Torn")
    store.ensure("Torn_conversation", datetime.now(UTC))
    first = {"time": "2026-01-01T00:00:00+00:00", "call": 1, "input_tokens": 10}
    store.append_usage(first)
    path = store.paths.usage
    with open(path, "ab") as handle:  # a crash while the next line was written
        handle.write(b'{"time": "2026-01-01T00:00:01+00:00", "call": 2, "inp')
    second = {"time": "2026-01-01T00:00:02+00:00", "call": 3, "input_tokens": 12}
    store.append_usage(second)
    problems: list[str] = []
    with caplog.at_level(logging.WARNING, logger="memorylab"):
        assert store.usage_records(problems) == [first, second]
        assert store.usage_records() == [first, second]
    assert problems == ["usage.jsonl line 2: not JSON (cut off by a crash?); skipped"]
    assert sum("usage.jsonl line 2" in r.getMessage() for r in caplog.records) == 1  # once
    assert path.read_bytes().count(b"\n") == 3
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert store.records() == []  # compactions.jsonl is a file of its own


def test_usage_jsonl_is_created_private_whatever_the_umask() -> None:
    store = MemoryStore.for_agent("Umask")
    store.ensure("Umask_conversation", datetime.now(UTC))
    old = os.umask(0)
    try:
        store.append_usage({"call": 1})
    finally:
        os.umask(old)
    assert stat.S_IMODE(store.paths.usage.stat().st_mode) == 0o600


# --------------------------------------------------------------------------- privacy


def _used_agent(name: str) -> Path:
    with FakeOpenAIServer(Reply("ok", prompt_tokens=40, completion_tokens=2)) as server:
        agent = _agent(server, agent_name=name)
        agent.run("hello")
        store = agent.short_memory.store
        assert store is not None
        store.close()
    path = agent_paths(name).usage
    assert path.is_file()
    return path


def test_forget_deletes_usage_jsonl() -> None:
    path = _used_agent("Forgotten")
    report = forget("Forgotten")
    assert "usage.jsonl" in report.files
    assert not path.exists() and not path.parent.exists()


def test_remove_of_the_memory_files_only_takes_usage_jsonl() -> None:
    path = _used_agent("Shared")
    (path.parent / "notes.txt").write_text("someone else's file")
    removed = MemoryStore(agent_paths("Shared").memory_md).remove(whole_folder=False)
    assert "usage.jsonl" in [name for name, _ in removed]
    assert not path.exists() and (path.parent / "notes.txt").exists()


def test_purge_of_an_idle_agent_deletes_usage_jsonl() -> None:
    path = _used_agent("Idle")
    items = purge(older_than="1d", now=datetime.now(UTC) + timedelta(days=3))
    assert [(i.agent, i.kind) for i in items] == [("Idle", "agent")]
    assert not path.exists()


def test_export_includes_the_usage_records() -> None:
    path = _used_agent("Exported")
    doc = export_document("Exported")
    assert doc["usage"] == [json.loads(line) for line in path.read_text().splitlines()]
    assert doc["usage"][0]["input_tokens"] == 40


def test_a_usage_jsonl_that_is_not_a_file_refuses_forget() -> None:
    path = _used_agent("Fifo")
    path.unlink()
    os.mkfifo(path)
    from memorylab.errors import UnsafePath

    with pytest.raises(UnsafePath, match=r"usage\.jsonl"):
        forget("Fifo")
    assert agent_paths("Fifo").memory_md.exists()


# --------------------------------------------------------------------------- the trigger


def test_a_trigger_counts_the_estimate_or_the_reported_usage() -> None:
    estimated, reported = Trigger(fraction=0.9), Trigger(fraction=0.9, count="reported")
    report = ReportedUsage(tokens=1000, estimate=800)
    assert estimated.counted(850, report) == 850
    assert reported.counted(850, report) == 1050
    assert reported.counted(700, report) == 700  # compacted since: the report is stale
    assert reported.counted(850, None) == 850
    assert estimated.plain and not reported.plain and reported.reported
    assert reported.to_dict() == {"fraction": 0.9, "count": "reported"}
    assert estimated.to_dict() == {"fraction": 0.9}  # records of the estimate read as before
    assert Trigger.from_dict(reported.to_dict()) == reported
    assert reported.text() == "0.90 of the window, counting the reported usage"
    assert repr(reported) == "Trigger(fraction=0.9, count='reported')"
    with pytest.raises(InvalidSetting, match=r"Trigger\.count"):
        Trigger(fraction=0.9, count="billed")
    with pytest.raises(InvalidSetting, match="no condition"):
        Trigger(count="reported")
