"""Agent: the loop, tools, compression at the top of each iteration, memory reaching the model."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fakes.openai_server import FakeOpenAIServer, FakeRequest, HTTPError, ToolCall, ToolCallReply
from memorylab import Conversation, read_memory
from memorylab.agent import Agent
from memorylab.compress._compressor import ContextCompressor
from memorylab.compress._policy import default_preload_max_tokens
from memorylab.compress._scripted import ScriptedSummarizer
from memorylab.errors import InvalidSetting, ModelAuthError, ModelUnavailable
from memorylab.memory._records import PRELOAD_PREFIX, EntryKind


def _agent(server: FakeOpenAIServer, **kwargs: object) -> Agent:
    options: dict[str, object] = {
        "agent_name": "Tester",
        "model_name": "openai/fake-model",
        "context_length": 100_000,
        "llm_args": {"api_base": server.base_url, "api_key": "x"},
        "retries": 0,
        "timeout": 60,  # a hang guard: a loaded machine's local replies stay far below it
    }
    options.update(kwargs)
    return Agent(**options)  # type: ignore[arg-type]


def test_mock_response_run_writes_task_and_reply() -> None:
    agent = Agent(
        agent_name="Mocked", model_name="gpt-4o-mini", llm_args={"mock_response": "Paris."}
    )
    assert agent.context_length == 128_000  # litellm's max_input_tokens for the model
    assert agent.run("Capital of France?") == "Paris."
    doc = read_memory(agent.short_memory.memory_md_path)  # type: ignore[arg-type]
    assert [(m.role, m.content) for m in doc.messages] == [
        ("User", "Capital of France?"),
        ("Mocked", "Paris."),
    ]


def test_unknown_model_falls_back_to_a_documented_window() -> None:
    with FakeOpenAIServer("ok") as server:
        agent = _agent(server, context_length=None, model_name="openai/not-a-real-model")
    assert agent.context_length == 8192


def test_preloaded_memory_reaches_the_model() -> None:
    with FakeOpenAIServer("first answer") as server:
        _agent(server, system_prompt="sp").run("Remember: the vault path is /srv/vault.")
    with FakeOpenAIServer("second answer") as server:
        _agent(server, system_prompt="sp").run("Where is the vault?")
        sent = server.requests[0]["messages"]
    assert sent[0] == {"role": "system", "content": "sp"}
    assert sent[1]["role"] == "system" and sent[1]["content"].startswith(PRELOAD_PREFIX)
    assert "/srv/vault" in sent[1]["content"]
    assert sent[-1]["role"] == "user"
    assert re.fullmatch(r"\[\d{4}-\d\d-\d\dT[^\]]+\] Where is the vault\?", sent[-1]["content"])


def test_tools_are_offered_called_and_recorded() -> None:
    calls: list[str] = []

    def get_weather(city: str, unit: str = "C") -> dict[str, object]:
        """Current weather for a city.

        Args:
            city: the city name
            unit: C or F
        """
        calls.append(city)
        return {"city": city, "temp": 21, "unit": unit}

    def explode() -> str:
        """Always fails."""
        raise RuntimeError("boom")

    script = [
        ToolCallReply(
            [ToolCall("get_weather", {"city": "Paris"}, id="c1"), ToolCall("explode", {}, id="c2")]
        ),
        "It is 21 C in Paris.",
    ]
    with FakeOpenAIServer(script) as server:
        agent = _agent(server, tools=[get_weather, explode])
        assert agent.run("Weather in Paris?") == "It is 21 C in Paris."
        first, second = server.requests
    schema = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert schema["get_weather"]["parameters"]["required"] == ["city"]
    assert schema["get_weather"]["parameters"]["properties"]["city"] == {
        "type": "string",
        "description": "the city name",
    }
    assert schema["get_weather"]["description"] == "Current weather for a city."
    assert calls == ["Paris"]
    tool_messages = [m for m in second["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["c1", "c2"]
    assert json.loads(tool_messages[0]["content"])["temp"] == 21
    assert tool_messages[1]["content"].startswith("Error: explode failed: RuntimeError: boom")
    assistant = next(m for m in second["messages"] if m["role"] == "assistant")
    assert assistant["tool_calls"][0]["function"]["name"] == "get_weather"
    contents = [m.content for m in read_memory(agent.short_memory.memory_md_path).messages]  # type: ignore[arg-type]
    assert any('"temp": 21' in c for c in contents)  # tool results hit MEMORY.md
    assert any("boom" in c for c in contents)


def test_auto_loops_until_no_tools_and_int_loops_stop_at_the_token() -> None:
    script = [ToolCallReply([ToolCall("noop", {}, id=f"t{i}")]) for i in range(3)] + ["done"]

    def noop() -> str:
        """Does nothing."""
        return "ok"

    with FakeOpenAIServer(script) as server:
        assert _agent(server, tools=[noop], max_loops="auto").run("go") == "done"
        assert len(server.requests) == 4
    with FakeOpenAIServer(["thinking", "still thinking <DONE>", "never"]) as server:
        assert _agent(server, max_loops=5).run("go").endswith("<DONE>")
        assert len(server.requests) == 2


def test_compression_fires_at_the_top_of_an_iteration() -> None:
    summarizer = ScriptedSummarizer(["The user asked about the ETL job."])
    with FakeOpenAIServer("reply " * 50) as server:
        agent = _agent(server, context_length=2000, compression_threshold=0.5)
        agent.context_compressor = ContextCompressor(threshold=0.5, summarizer=summarizer)
        for i in range(25):
            agent.run(f"task {i}: " + "details " * 60)
    assert len(agent.compaction_events) >= 2
    assert all(
        e.ok and e.tokens_before is not None and e.tokens_before >= 1000
        for e in agent.compaction_events
    )
    archives = sorted((agent.short_memory.memory_md_path.parent / "archive").iterdir())  # type: ignore[union-attr]
    assert len(archives) == len(agent.compaction_events)
    assert agent.short_memory.token_count() < 2000


def test_seed_style_compressor_override() -> None:
    with FakeOpenAIServer("ok") as server:
        agent = _agent(server)
    replacement = ContextCompressor(threshold=0.75, summarizer_model="memorylab/extractive")
    agent._context_compressor = replacement
    assert agent.context_compressor is replacement


def test_the_seeds_compressor_snippet_calls_the_model_as_the_agent_does() -> None:
    """Issue 28: `agent._context_compressor = ContextCompressor(summarizer_model=...)` on an
    agent given llm_args (a local server, a mock) called the model without them and failed
    offline with ModelAuthError."""
    agent = Agent(
        agent_name="Snippet", model_name="gpt-4o-mini", context_length=4000,
        llm_args={"mock_response": "A short summary."},
    )  # fmt: skip
    agent._context_compressor = ContextCompressor(summarizer_model="gpt-4o-mini")
    for n in range(3):
        agent.short_memory.add("User", f"task {n}: " + "word " * 20)
    event = agent.check_compression(force=True)
    assert event is not None and event.ok, event
    assert "A short summary." in str(agent.short_memory.entries(EntryKind.SUMMARY)[0]["content"])
    own = ContextCompressor(summarizer_model="gpt-4o-mini", summarizer_args={"timeout": 5})
    agent._context_compressor = own
    assert own.summarizer_args == {"timeout": 5}  # its own options stay its own


def test_summarizer_failure_leaves_memory_unchanged_and_the_run_goes_on() -> None:
    with FakeOpenAIServer("ok") as server:
        agent = _agent(server, context_length=400, compression_threshold=0.5)
        agent.context_compressor = ContextCompressor(
            threshold=0.5,
            summarizer=ScriptedSummarizer(fail_on=range(10), error=ModelUnavailable),
        )
        agent.short_memory.add("User", "x " * 300)
        folder = agent.short_memory.memory_md_path.parent  # type: ignore[union-attr]
        before = (folder / "MEMORY.md").read_bytes()
        assert agent.run("next") == "ok"
    assert (folder / "MEMORY.md").read_bytes().startswith(before)
    assert not (folder / "archive").exists()
    assert agent.compaction_events[-1].error is not None


def test_bounded_preload_does_not_force_a_compaction_on_the_first_loop() -> None:
    conv = Conversation(agent_name="Tester")
    for i in range(400):
        conv.add("User", f"old message {i} " + "lorem ipsum dolor sit amet " * 10)
    with FakeOpenAIServer("ok") as server:
        agent = _agent(server, context_length=8000, compression_threshold=0.9)
        agent.context_compressor = ContextCompressor(threshold=0.9, summarizer=ScriptedSummarizer())
        agent.run("continue")
    assert agent.compaction_events == []
    assert agent.short_memory.token_count() <= default_preload_max_tokens(8000, 0.9) + 200
    preload = agent.short_memory.conversation_history[0]["content"]
    assert "older message(s)" in preload and "old message 399" in preload


def test_llm_errors_surface_clearly() -> None:
    with (
        FakeOpenAIServer(HTTPError(401)) as server,
        pytest.raises(ModelAuthError, match="OPENAI_API_KEY"),
    ):
        _agent(server).run("hi")


@pytest.mark.parametrize("bad", [0, -1, "forever", 1.5, True])
def test_max_loops_validation(bad: object) -> None:
    with FakeOpenAIServer("ok") as server, pytest.raises(InvalidSetting):
        _agent(server, max_loops=bad)


_CHILD = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {tests!r})
    from memorylab.agent import Agent
    from memorylab.compress._compressor import ContextCompressor
    agent = Agent(agent_name="Shared", model_name="openai/fake-model", context_length=1500,
                  compression_threshold=0.5, llm_args={{"api_base": {base!r}, "api_key": "x"}},
                  retries=0, timeout=60)
    agent.context_compressor = ContextCompressor(threshold=0.5, summarizer_args={{
        "llm_args": {{"api_base": {base!r}, "api_key": "x"}}, "retries": 0, "timeout": 60}},
        summarizer_model="openai/fake-model")
    for i in range(6):
        agent.run("{name} task " + str(i) + ": " + "words " * 80)
    print(len(agent.compaction_events))
    """
)


@pytest.mark.slow
def test_end_to_end_across_two_processes(isolated_workspace: Path) -> None:
    def behave(request: FakeRequest) -> str:
        text = json.dumps(request.body["messages"])
        if "Summarize" in text or "summar" in request.body["messages"][0]["content"].lower():
            return "SUMMARY of the work so far"
        return "answer " * 40

    tests_dir = str(Path(__file__).parent)
    with FakeOpenAIServer(behave) as server:
        for name in ("first", "second"):
            code = _CHILD.format(tests=tests_dir, base=server.base_url, name=name)
            out = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
            )
            assert out.returncode == 0, out.stderr
            assert int(out.stdout.strip()) >= 1
        summary_requests = [
            r for r in server.requests if "summar" in r["messages"][0]["content"].lower()
        ]
    folder = isolated_workspace / "agents" / "Shared"
    records = [json.loads(line) for line in (folder / "compactions.jsonl").read_text().splitlines()]
    archives = sorted(p.name for p in (folder / "archive").iterdir())
    assert len(records) == len(archives) >= 2
    assert sorted(r["archive"] for r in records) == archives
    live = read_memory(folder / "MEMORY.md")
    assert live.continues == records[-1]["archive"]
    for archive in archives[1:]:  # every later archive continues an earlier one
        assert read_memory(folder / "archive" / archive).continues in archives
    # the summarizer saw the first task of the history it replaced
    assert "first task 0" in json.dumps(summary_requests[0]["messages"])
    for later in summary_requests[1:]:  # every later history starts from the previous summary
        assert "SUMMARY of the work so far" in json.dumps(later["messages"])
    assert all(r["summarizer_model"] == "openai/fake-model" and r["tokens_before"] for r in records)


def test_the_default_preload_bound_is_a_typed_sentinel_and_none_is_no_bound() -> None:
    from memorylab.compress._policy import DEFAULT_PRELOAD

    conv = Conversation(agent_name="Tester")
    for i in range(400):
        conv.add("User", f"old message {i} " + "lorem ipsum dolor sit amet " * 10)
    with FakeOpenAIServer("ok") as server:
        bounded = _agent(server, context_length=8000, preload_max_tokens=DEFAULT_PRELOAD)
        unbounded = _agent(server, context_length=8000, preload_max_tokens=None)
    assert repr(DEFAULT_PRELOAD) == "<default preload bound>"
    assert bounded.short_memory.token_count() <= default_preload_max_tokens(8000, 0.9) + 200
    assert unbounded.short_memory.token_count() > default_preload_max_tokens(8000, 0.9) + 200


def test_live_user_turns_reach_the_model_with_their_time() -> None:
    """The seed: the agent can answer "what time did I ask you this?" from its own history; the
    live turns carry their timestamps to the model, not only the preloaded ones."""
    with FakeOpenAIServer(["noted", "at the time shown"]) as server:
        agent = _agent(server, system_prompt="sp", rules="be brief")
        agent.run("Remember the number 7.")
        agent.run("What time did I ask you to remember it?")
        sent = server.requests[1]["messages"]
    entries = agent.short_memory.entries(EntryKind.MESSAGE)
    asked = [e for e in entries if e["role"] == "User"]
    users = [m["content"] for m in sent if m["role"] == "user"]
    assert users == [
        "be brief",  # the rules: static context, no time
        f"[{asked[0]['timestamp']}] Remember the number 7.",
        f"[{asked[1]['timestamp']}] What time did I ask you to remember it?",
    ]
    replies = [m["content"] for m in sent if m["role"] == "assistant"]
    assert replies == ["noted"]  # replies go as they are
    doc = read_memory(agent.short_memory.memory_md_path)  # type: ignore[arg-type]
    assert doc.messages[0].content == "Remember the number 7."  # disk: unchanged
    agent.short_memory.time_enabled = False
    assert agent.short_memory.to_messages()[2]["content"] == "Remember the number 7."


def test_the_agent_has_an_id_that_names_its_conversation_as_the_reference_does(
    isolated_workspace: Path,
) -> None:
    first = Agent(agent_name="Quant", llm_args={"mock_response": "ok"})
    second = Agent(agent_name="Quant", llm_args={"mock_response": "ok"})
    assert re.fullmatch(r"agent-[0-9a-f]{32}", first.id)
    assert first.id != second.id  # fresh each construction (the seed's design note) ...
    assert first.short_memory.memory_md_path == second.short_memory.memory_md_path  # ... same file
    first.run("hello")
    doc = read_memory(first.short_memory.memory_md_path)  # type: ignore[arg-type]
    assert doc.conversation_name == f"Quant_id_{first.id}_conversation"
    named = Agent(agent_name="Named", id="agent-fixed", llm_args={"mock_response": "ok"})
    assert named.short_memory.name == "Named_id_agent-fixed_conversation"
    for bad in ("", "two\nlines", 7):
        with pytest.raises(InvalidSetting, match=r"Agent\(id=\.\.\.\)"):
            Agent(agent_name="Bad", id=bad)  # type: ignore[arg-type]
