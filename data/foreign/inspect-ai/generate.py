"""Write a real inspect_ai eval log of a run that compacts several times, offline.

Run with the python of a venv where inspect-ai is installed (no network, no key)::

    /tmp/memorylab-inspect-ai-0.3.285/bin/python generate.py OUT [--turns N] [--format eval|json]

It replays the first ``--turns`` user turns of a bundled memorylab transcript
(``data/transcripts/checkout-bug-hunt.jsonl``) through inspect_ai's own machinery: a task with one
sample, a solver that loops over the turns with inspect_ai's compaction handler
(``compaction(CompactionSummary(threshold=...))``, the handler ``react(compaction=...)`` uses) and
``execute_tools`` for the transcript's tool results, and the ``mockllm/model`` model, whose
``custom_outputs`` callable answers each call with the transcript's next assistant reply (a tool
call where the transcript ran a tool) and each summarization request with a short extractive
summary. inspect_ai writes the log (``log_dir=OUT``, ``log_format``): its ``ModelEvent``s, each
call's ``output.usage``, its ``CompactionEvent``s and the sample's ``messages``.

Two things are this script's, not inspect_ai's, and the README says so: the mock's usage (the
callable reports the input as cache reads of the previous call's prefix, a cache write of what
is new and the last message as uncached input, so the log has cache tokens to read) and the
token count (``count_text_tokens`` of the mock, patched to 4 characters a token: the default
downloads tiktoken's o200k_base file, which an offline run cannot).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageSystem,
    ChatMessageUser,
    CompactionStrategy,
    CompactionSummary,
    GenerateConfig,
    ModelOutput,
    ModelUsage,
    compaction,
    execute_tools,
    get_model,
)
from inspect_ai.model._providers.mockllm import MockLLM
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.tool import ToolCall, ToolChoice, ToolInfo, tool

TRANSCRIPT = Path(__file__).resolve().parents[2] / "transcripts" / "checkout-bug-hunt.jsonl"
THRESHOLD = 1500
"""Compaction threshold in tokens: small, so a few dozen turns compact several times."""
SUMMARY_ASK = "summarizing conversations"
"""Words of inspect_ai's summarization prompt: how the mock knows a summary is asked for."""


async def _count_text_tokens(self: Any, text: str) -> int:
    return math.ceil(len(text) / 4)


MockLLM.count_text_tokens = _count_text_tokens  # type: ignore[method-assign]  # offline


def turns(path: Path, count: int) -> list[tuple[str, list[tuple[str, list[str]]]]]:
    """The transcript's first ``count`` user turns: each the user's text and the steps of the
    reply (the assistant's text and the tool outputs that follow it)."""
    found: list[tuple[str, list[tuple[str, list[str]]]]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if entry.get("type") != "message":
            continue
        role, content = entry["role"], entry["content"]
        if role == "user":
            if len(found) == count:
                break
            found.append((content, []))
        elif not found:
            continue
        elif role == "assistant":
            steps = found[-1][1]
            if steps and not steps[-1][1]:  # consecutive replies: one message
                steps[-1] = (steps[-1][0] + "\n\n" + content, [])
            else:
                steps.append((content, []))
        elif role == "tool" and found[-1][1]:
            found[-1][1][-1][1].append(content)
    return found


class Script:
    """The mock model's answers and the tool's outputs, in transcript order."""

    def __init__(self, script: list[tuple[str, list[tuple[str, list[str]]]]]) -> None:
        self.steps: list[tuple[str, list[str]]] = []
        for _, steps in script:
            for step in steps or [("OK.", [])]:
                self.steps.append(step)
            if not steps or steps[-1][1]:  # a turn ends on the assistant's words
                self.steps.append(("Done; the output is above.", []))
        self.outputs: list[str] = []
        self.previous: tuple[list[str], int] = ([], 0)

    async def __call__(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        if SUMMARY_ASK in input[-1].text:
            output = ModelOutput.from_content("mockllm/model", summarize(input[:-1]))
        else:
            text, tool_outputs = self.steps.pop(0)
            calls = [
                ToolCall(id=f"call_{len(self.outputs) + i}", function="run",
                         arguments={"command": f"step {len(self.outputs) + i}"})
                for i in range(len(tool_outputs))
            ]  # fmt: skip
            self.outputs += tool_outputs
            output = ModelOutput.from_content("mockllm/model", text)
            if calls:
                output.choices[0].message.tool_calls = calls
                output.choices[0].stop_reason = "tool_calls"
        output.usage = await self.usage(input, output.completion)
        return output

    async def usage(self, input: list[ChatMessage], completion: str) -> ModelUsage:
        """Cache reads of the prefix the previous call sent, a write of the rest but the last
        message, the last message uncached (what a prompt-caching provider would report)."""
        model = get_model()
        total = await model.count_tokens(input)
        last = await model.count_tokens(input[-1:])
        ids = [m.id or "" for m in input]
        before, before_tokens = self.previous
        read = before_tokens if before and ids[: len(before)] == before else 0
        read = min(read, total - last)
        self.previous = (ids, total)
        output_tokens = math.ceil(len(completion) / 4)
        return ModelUsage(
            input_tokens=last,
            input_tokens_cache_read=read,
            input_tokens_cache_write=total - last - read,
            output_tokens=output_tokens,
            total_tokens=total + output_tokens,
        )


def summarize(messages: list[ChatMessage]) -> str:
    """A short extractive summary: the first sentence of each user turn."""
    lines = [
        "- " + m.text.split(". ")[0][:160]
        for m in messages
        if m.role == "user" and not (m.metadata or {}).get("summary")
    ]
    return "The user asked, in order:\n" + "\n".join(lines[-12:])


def run_tool(script: Script) -> Any:
    @tool
    def run() -> Any:
        async def execute(command: str) -> str:
            """Run a shell command.

            Args:
                command: The command line.
            """
            return script.outputs.pop(0)

        return execute

    return run()


@solver
def replay(strategy: CompactionStrategy) -> Any:
    """A chat loop over the transcript's user turns, compacting as inspect_ai's agents do (the
    turns and the mock come from :data:`RUN`, so the log's plan records only the strategy:
    its type and threshold, as it records ``react(compaction=...)``'s)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        script, mock = RUN
        model = get_model()
        tools = [run_tool(mock)]
        state.messages = [ChatMessageSystem(content="You are a helpful coding assistant.")]
        handler = compaction(strategy, prefix=state.messages[:1], tools=tools)
        for user, _ in script:
            state.messages.append(ChatMessageUser(content=user))
            while True:
                input, summary = await handler.compact_input(state.messages)
                if summary is not None:
                    state.messages.append(summary)
                output = await model.generate(input, tools)
                await handler.record_output(input, output)
                state.messages.append(output.message)
                state.output = output
                if not output.message.tool_calls:
                    break
                result = await execute_tools([*input, output.message], tools)
                state.messages.extend(result.messages)
        return state

    return solve


RUN: list[Any] = []
"""The turns and the mock of the run in progress."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("out", type=Path, help="the folder the log is written to")
    parser.add_argument("--turns", type=int, default=30, help="user turns replayed (30)")
    parser.add_argument("--format", choices=("eval", "json"), default="eval")
    args = parser.parse_args(argv)
    script = turns(TRANSCRIPT, args.turns)
    mock = Script(script)
    RUN[:] = [script, mock]
    task = Task(
        name="checkout-bug-hunt",
        dataset=[Sample(id="checkout-bug-hunt", input=script[0][0])],
        solver=replay(CompactionSummary(threshold=THRESHOLD)),
    )
    logs = eval(
        task,
        model="mockllm/model",
        model_args={"custom_outputs": mock},
        log_dir=str(args.out),
        log_format=args.format,
        display="none",
    )
    for log in logs:
        print(log.location)
    return 0 if all(log.status == "success" for log in logs) else 1


if __name__ == "__main__":
    sys.exit(main())
