"""Write a real OpenAI Agents SDK session database of runs that compact, offline.

Run with the python of a venv where openai-agents is installed (no network, no key)::

    /tmp/memorylab-openai-agents-0.24.0/bin/python generate.py OUT.sqlite [--turns N]
        [--plain-turns M] [--latency SECONDS]

It replays the first ``--turns`` user turns of a bundled memorylab transcript
(``data/transcripts/pipeline-migration.jsonl``) through the SDK's own machinery: ``Runner.run``
of an ``Agent`` with a function tool, one run per user turn, each with the same session, an
``OpenAIResponsesCompactionSession`` wrapping a ``SQLiteSession`` on disk (``OUT``), so the SDK
stores every item (user messages, assistant messages, function calls and their outputs) and,
when its default decision (10 or more items that are not user messages) fires after a turn,
calls ``responses.compact`` and replaces the compacted items in the file with what it returned.
A second session in the same file (``--plain-turns`` turns of ``literature-review.jsonl``) is a
plain ``SQLiteSession``, which never compacts: a database holds several sessions. A third
(``--advanced-turns`` turns of ``checkout-bug-hunt.jsonl``) is an ``AdvancedSQLiteSession``,
given each run's usage (``store_run_usage``: its ``turn_usage`` table) and branched from its
second turn (``create_branch_from_turn(2, "retry")``), where two more turns run.

Two things are this script's, not the SDK's, and the README says so:

* the model: a ``Model`` subclass that answers each call with the transcript's next assistant
  reply (a ``run`` function call where the transcript ran a tool; the tool returns the
  transcript's tool output), reporting a usage of 4 characters a token;
* the compaction endpoint: a stand-in for ``AsyncOpenAI`` whose ``responses.compact`` returns
  what the real endpoint documents (``CompactedResponse``: every user message of the input, then
  one ``compaction`` item whose ``encrypted_content`` is opaque); the stand-in's content is not
  encrypted text of a summary but an opaque token, as unreadable to a loader as the real one.

``--latency`` seconds are slept per model call (default 1.0) so that the rows' ``created_at``
(SQLite's ``CURRENT_TIMESTAMP``, whole seconds) tell the turns apart, as a real model's latency
would.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

from agents import (
    Agent,
    Model,
    ModelResponse,
    ModelSettings,
    Runner,
    SQLiteSession,
    Usage,
    function_tool,
    set_tracing_disabled,
)
from agents.extensions.memory import AdvancedSQLiteSession
from agents.memory import OpenAIResponsesCompactionSession
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseUsage,
)
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

TRANSCRIPTS = Path(__file__).resolve().parents[2] / "transcripts"
COMPACTING = "pipeline-migration"
PLAIN = "literature-review"
ADVANCED = "checkout-bug-hunt"


def _turns(name: str, count: int) -> list[tuple[str, list[tuple[str, str | None]]]]:
    """The first ``count`` user turns of a transcript: the user's text and the steps of the
    reply, each an assistant text with the tool output that followed it (``None``: none)."""
    turns: list[tuple[str, list[tuple[str, str | None]]]] = []
    for line in (TRANSCRIPTS / f"{name}.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row.get("type") != "message":
            continue
        role, content = row["role"], str(row["content"])
        if role == "user":
            if len(turns) == count:
                break
            turns.append((content, []))
        elif turns and role == "assistant":
            turns[-1][1].append((content, None))
        elif turns and role == "tool" and turns[-1][1]:
            text, _ = turns[-1][1][-1]
            turns[-1][1][-1] = (text, content)
    return turns


def _tokens(value: Any) -> int:
    return max(1, len(json.dumps(value, default=str)) // 4)


class ScriptedModel(Model):
    """Answers with the transcript's replies: a step with a tool output becomes a ``run``
    function call (its text the command), the last step a message (the steps' texts joined)."""

    def __init__(self, outputs: deque[str], latency: float) -> None:
        self.steps: deque[tuple[str, str | None]] = deque()
        self.outputs = outputs
        self.latency = latency
        self.calls = 0

    async def get_response(self, system_instructions: Any, input: Any, *args: Any,
                           **kwargs: Any) -> ModelResponse:  # fmt: skip
        if self.latency:
            await asyncio.sleep(self.latency)
        self.calls += 1
        said: list[str] = []
        output: list[Any] = []
        while self.steps:
            text, tool_output = self.steps.popleft()
            said.append(text)
            if tool_output is not None:
                self.outputs.append(tool_output)
                output.append(ResponseFunctionToolCall(
                    type="function_call", id=f"fc_{self.calls}", call_id=f"call_{self.calls}",
                    name="run", arguments=json.dumps({"command": text}),
                    status="completed"))  # fmt: skip
                break
        message = ResponseOutputMessage(
            type="message", id=f"msg_{self.calls}", role="assistant", status="completed",
            content=[ResponseOutputText(type="output_text", text="\n\n".join(said) or "Done.",
                                        annotations=[])])  # fmt: skip
        output.insert(0, message)
        usage = Usage(requests=1, input_tokens=_tokens(input), output_tokens=_tokens(said),
                      total_tokens=_tokens(input) + _tokens(said))  # fmt: skip
        return ModelResponse(output=output, usage=usage, response_id=f"resp_{self.calls}")

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the generator runs without streaming")


class _Responses:
    """``client.responses`` of the stand-in: ``compact`` as the real endpoint answers."""

    def __init__(self) -> None:
        self.count = 0

    async def compact(self, *, model: str, input: list[Any] | None = None,
                      **kwargs: Any) -> Any:  # fmt: skip
        from openai.types.responses import CompactedResponse

        self.count += 1
        items = list(input or [])
        users = [item for item in items if isinstance(item, dict) and item.get("role") == "user"
                 and item.get("type", "message") == "message"]  # fmt: skip
        opaque = hashlib.sha256(json.dumps(items, default=str).encode()).hexdigest()
        output = [
            {"type": "message", "role": "user", "id": f"cmsg_{self.count}_{n}",
             "status": "completed", "content": [{"type": "input_text", "text": _text(item)}]}
            for n, item in enumerate(users)
        ] + [{"type": "compaction", "id": f"cmp_{self.count}",
              "encrypted_content": opaque}]  # fmt: skip
        before = _tokens(items)
        return CompactedResponse.model_construct(
            id=f"resp_compact_{self.count}", created_at=int(time.time()),
            object="response.compaction", output=output,
            usage=ResponseUsage(input_tokens=before, output_tokens=64, total_tokens=before + 64,
                                input_tokens_details=InputTokensDetails(cached_tokens=0,
                                                                       cache_write_tokens=0),
                                output_tokens_details=OutputTokensDetails(reasoning_tokens=0)),
        )  # fmt: skip


def _text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


class CompactClient:
    """The stand-in for ``AsyncOpenAI`` the compaction session calls (``responses.compact``)."""

    def __init__(self) -> None:
        self.responses = _Responses()


async def _run(session: Any, name: str, count: int, latency: float, skip: int = 0) -> int:
    """Run the user turns ``skip`` to ``count`` of a transcript in ``session``; the model calls
    made. A session that records usage (``store_run_usage``) is given each run's."""
    outputs: deque[str] = deque()

    @function_tool
    def run(command: str) -> str:
        """Run a shell command in the project and return what it printed."""
        return outputs.popleft() if outputs else ""

    model = ScriptedModel(outputs, latency)
    agent = Agent(name=name, instructions="You are a careful engineering assistant.",
                  model=model, tools=[run], model_settings=ModelSettings())  # fmt: skip
    for user, steps in _turns(name, count)[skip:]:
        model.steps = deque(steps)
        result = await Runner.run(agent, user, session=session, max_turns=50)
        if hasattr(session, "store_run_usage"):
            await session.store_run_usage(result)
    return model.calls


async def main(
    out: Path, turns: int, plain_turns: int, advanced_turns: int, latency: float
) -> None:
    set_tracing_disabled(True)  # offline: no trace is exported
    out.parent.mkdir(parents=True, exist_ok=True)
    for path in (out, out.with_name(out.name + "-wal"), out.with_name(out.name + "-shm")):
        path.unlink(missing_ok=True)
    client = CompactClient()
    store = SQLiteSession(COMPACTING, out)
    session = OpenAIResponsesCompactionSession(
        COMPACTING, store, client=client, model="gpt-4.1",  # type: ignore[arg-type]
        compaction_mode="input")  # fmt: skip
    calls = await _run(session, COMPACTING, turns, latency)
    plain = SQLiteSession(PLAIN, out)
    calls += await _run(plain, PLAIN, plain_turns, latency)
    if advanced_turns:
        # AdvancedSQLiteSession: usage per user turn (turn_usage), and a branch from turn 2
        # whose rows are copies of the main branch's first turn (message_structure says which)
        advanced = AdvancedSQLiteSession(session_id=ADVANCED, db_path=out, create_tables=True)
        calls += await _run(advanced, ADVANCED, advanced_turns, latency)
        await advanced.create_branch_from_turn(2, "retry")
        calls += await _run(advanced, ADVANCED, advanced_turns + 2, latency, skip=advanced_turns)
        advanced.close()
    plain.close()
    store.close()  # the last connection closed checkpoints the WAL into the file
    print(f"{out}: {turns} + {plain_turns} + {advanced_turns} (+2 on a branch) turns, "
          f"{calls} model calls, {client.responses.count} compactions",
          file=sys.stderr)  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--plain-turns", type=int, default=8)
    parser.add_argument("--advanced-turns", type=int, default=6)
    parser.add_argument("--latency", type=float, default=1.0)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.out, arguments.turns, arguments.plain_turns,
                     arguments.advanced_turns, arguments.latency))  # fmt: skip
