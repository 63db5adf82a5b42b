"""The trigger counts exactly what the request carries (issue 38).

An OpenAI-compatible fake server counts every request it receives as OpenAI documents the count
of a chat request (the cookbook's ``num_tokens_from_messages``, with tiktoken): 3 tokens a
message, the tokens of its text fields (role, content, ``tool_call_id``), and 3 for the reply's
priming. The documented rule counts no ``tool_calls`` (a list) and neither does memorylab
(MEMORY.md keeps none, so a replay could not count them: memorylab.memory._request), nor a tool
result's ``tool_call_id`` (no file keeps it: the live count and the replay's must be one), so
the estimate is the server's count less exactly the ids' tokens. The tool schemas
sent beside the messages are counted too, as the JSON text the server receives (the usage
record's ``tool_tokens`` is their share). An
:class:`Agent` talks to it through litellm, with tools and compactions, with timestamps on and
off.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
import tiktoken

from fakes.openai_server import FakeOpenAIServer, FakeRequest, Reply, ToolCall, ToolCallReply
from memorylab import Agent, Conversation
from memorylab.compress import get_token_counter
from memorylab.memory import REPLY_TOKENS

MODEL = "openai/gpt-4o"
WINDOW, THRESHOLD = 1500, 0.7
TRIGGER = int(WINDOW * THRESHOLD)
WORDS = [
    "pipeline",
    "latency",
    "schema",
    "partition",
    "backfill",
    "replica",
    "index",
    "cache",
    "queue",
    "shard",
]


SYSTEM_PROMPT = (
    "You are a careful data engineer on the platform team. Answer briefly, cite the tools you "
    "used, say which notes you read and when they were written, and never guess an owner: if "
    "the notes do not name one, say so and suggest who could know."
)  # a prompt of a realistic length: a tool result's id is then well under 2 % of a request
without_ids: list[int] = []


def server_count(body: Mapping[str, Any], *, ids: bool = True) -> int:
    """The request's tokens as the server counts them: tiktoken, OpenAI's documented rule;
    ``ids=False``: without the tool results' ``tool_call_id`` (what memorylab counts)."""
    get_token_counter(MODEL)  # points tiktoken at memorylab's offline encodings
    encoding = tiktoken.encoding_for_model("gpt-4o")
    tokens = 0
    for message in body["messages"]:
        tokens += 3
        for key, value in message.items():
            if isinstance(value, str) and (ids or key != "tool_call_id"):  # tool_calls: a list
                tokens += len(encoding.encode(value))
    if body.get("tools"):  # the schemas every request carries, as the JSON text received
        tokens += len(encoding.encode(json.dumps(body["tools"], ensure_ascii=False, sort_keys=True)))
    return tokens + 3


def lookup(topic: str, rows: int) -> str:
    """Look a topic up in the team's notes.

    Args:
        topic: what to look up
        rows: how many lines to return
    """
    return "\n".join(f"{i}. {topic}: " + " ".join(WORDS[(i + j) % 10] for j in range(9))
                     for i in range(int(rows)))  # fmt: skip


def script() -> list[Reply | ToolCallReply]:
    """Per task: a reply calling ``lookup`` (twice on odd tasks), then the answer."""
    replies: list[Reply | ToolCallReply] = []
    for task in range(10):
        calls = [
            ToolCall(
                "lookup", {"topic": WORDS[(task + n) % 10], "rows": 6 + n}, id=f"call_{task}{n}"
            )
            for n in range(1 + task % 2)
        ]
        replies.append(ToolCallReply(calls, text=f"Checking the notes on {WORDS[task]}."))
        replies.append(Reply("Answer: " + " ".join(WORDS[(task * 3 + i) % 10] for i in range(40))))
    return replies


def run_agent(*, stamped: bool, compression: bool = True) -> tuple[Agent, list[int]]:
    """The scripted tasks run by an Agent against the counting server; the server's counts
    (``without_ids``: the same without the tool results' ids)."""
    without_ids.clear()
    counts: list[int] = []
    replies = script()

    def answer(request: FakeRequest) -> Reply | ToolCallReply:
        counted = server_count(request.body)
        counts.append(counted)
        without_ids.append(server_count(request.body, ids=False))
        reply = replies[request.index]
        if isinstance(reply, Reply):
            return Reply(reply.text, prompt_tokens=counted)
        return ToolCallReply(reply.calls, text=reply.text, prompt_tokens=counted)

    with FakeOpenAIServer(answer) as server:
        agent = Agent(
            agent_name="Counter",
            model_name=MODEL,
            system_prompt=SYSTEM_PROMPT,
            context_length=WINDOW,
            compression_threshold=THRESHOLD,
            context_compression=compression,
            summarizer_model="memorylab/extractive",
            persistent_memory=False,
            tools=[lookup],
            llm_args={"api_base": server.base_url, "api_key": "x"},
            retries=0,
            timeout=10,
        )
        agent.short_memory.time_enabled = stamped
        for task in range(10):
            agent.run(f"Task {task}: what do the notes say about {WORDS[task]} and its owners?")
    return agent, counts


@pytest.mark.parametrize("stamped", [True, False], ids=["timestamps", "no-timestamps"])
def test_the_trigger_counts_the_request_the_server_receives(stamped: bool) -> None:
    agent, counts = run_agent(stamped=stamped)
    records = agent.usage_records
    assert len(records) == len(counts) == 20
    assert sum(r.compacted for r in records) >= 2  # the window forces compactions
    for call, (record, counted) in enumerate(zip(records, counts, strict=True)):
        # what the Agent estimated of the request it sent: within 2 % of the server's count,
        # and exactly that count without the tool results' ids
        assert record.estimated_tokens == pytest.approx(counted, rel=0.02)
        assert record.estimated_tokens == without_ids[call]
        assert record.input_tokens == counted
        if not record.compacted:  # the trigger compared the request that was then sent
            assert record.checked_tokens == record.estimated_tokens
    # a compaction's own record: tokens_before is the request the check counted
    for event in agent.compaction_events:
        assert event.tokens_before is not None and event.tokens_before >= TRIGGER


@pytest.mark.parametrize("stamped", [True, False], ids=["timestamps", "no-timestamps"])
def test_the_first_compaction_fires_where_the_request_reaches_the_trigger(stamped: bool) -> None:
    """With timestamps or without, the first compaction fires at the first call whose request
    (as the server counted it, the same tasks run without compression) reaches the trigger."""
    _, uncompressed = run_agent(stamped=stamped, compression=False)
    expected = next(call for call, counted in enumerate(uncompressed) if counted >= TRIGGER)
    agent, _ = run_agent(stamped=stamped)
    fired = next(call for call, record in enumerate(agent.usage_records) if record.compacted)
    assert fired == expected
    assert agent.compaction_events[0].tokens_before == pytest.approx(
        uncompressed[expected], rel=0.02
    )


def test_timestamps_move_the_count_by_what_they_add_to_the_request() -> None:
    """Only the user turns carry a stamp in the request: that, and nothing else, is what
    ``time_enabled`` adds to the count (the history string stamps every entry)."""
    counter = get_token_counter(MODEL)
    stamped = Conversation(system_prompt="Be brief.", token_counter=counter)
    stamped.add("User", "What is in the notes?")
    stamped.add("Counter", "Checking.", tool_calls=[{"id": "c1", "type": "function",
                "function": {"name": "lookup", "arguments": json.dumps({"topic": "cache"})}}])  # fmt: skip
    stamped.add("Tool Executor", "1. cache: warm", tool_call_id="c1")
    stamped.add("Counter", "The cache is warm.")
    plain = Conversation(system_prompt="Be brief.", token_counter=counter, time_enabled=False)
    plain.conversation_history = [dict(e) for e in stamped.conversation_history]
    assert stamped.token_count() == server_count({"messages": stamped.to_messages()}, ids=False)
    assert plain.token_count() == server_count({"messages": plain.to_messages()}, ids=False)
    user_turn = stamped.conversation_history[1]
    stamp_tokens = counter(f"[{user_turn['timestamp']}] What is in the notes?") - counter(
        "What is in the notes?"
    )
    assert stamped.token_count() - plain.token_count() == stamp_tokens
    assert Conversation(token_counter=counter).token_count() == 0  # no request, no priming
    assert REPLY_TOKENS == 3


def test_a_long_history_counted_at_once_is_counted_by_the_same_rule() -> None:
    """A history counted in one go (a batch of contents) gives the message by message count."""
    counter = get_token_counter(MODEL)
    conversation = Conversation(system_prompt="Be brief.", token_counter=counter)
    for i in range(100):
        conversation.add("User" if i % 2 else "Counter", f"message {i}: " + WORDS[i % 10] * 3)
    by_message = sum(conversation.request_tokens(e) for e in conversation.conversation_history)
    assert conversation.token_count() == by_message + REPLY_TOKENS
    conversation.conversation_history = list(conversation.conversation_history)  # recount
    assert conversation.token_count() == by_message + REPLY_TOKENS
