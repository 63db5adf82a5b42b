"""The sample workspace written by memorylab's own :class:`~memorylab.Agent`.

Each agent runs several sessions (a new ``Agent`` per session, so MEMORY.md is preloaded) of
tasks. The model is a script (``completion=``): replies that call real tools (plain functions
given to ``Agent(tools=...)``, executed by the Agent), then a final answer that reads the tool
results. Compression uses the offline ``memorylab/extractive`` summarizer with a small window, so
it fires several times per agent. A step clock (``Agent(clock=...)``) makes every timestamp, and
so every archive name, the same on every run.
"""

from __future__ import annotations

import functools
import itertools
import json
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from unittest import mock

from memorylab import Agent, ContextCompressor
from memorylab.compress import compressor as compressor_module
from memorylab.compress.llm import ChatReply

CONTEXT_LENGTH = 3000
THRESHOLD = 0.85
SUMMARY_TOKENS = 500
MODEL = "gpt-4o-mini"


class StepClock:
    """A clock that moves forward by a seeded random step each time it is read."""

    def __init__(self, start: datetime, rng: random.Random) -> None:
        self.now = start
        self.rng = rng

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=round(self.rng.uniform(0.4, 40.0), 6))
        return self.now

    def next_day(self, hour: int) -> None:
        day = (self.now + timedelta(days=1)).replace(hour=hour, minute=0, second=0)
        self.now = day + timedelta(minutes=self.rng.randint(0, 50))


@dataclass(frozen=True)
class Call:
    """One tool call the scripted model makes."""

    tool: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class Task:
    """A user task: rounds of tool calls (each round is one model reply), then a final answer
    (``answer(tool_results) -> text``); ``preamble`` is the text of the tool-calling replies."""

    prompt: str
    rounds: Sequence[Sequence[Call]]
    answer: Callable[[list[str]], str]
    preamble: Sequence[str] = ()


@dataclass(frozen=True)
class AgentPlan:
    name: str
    system_prompt: str
    tools: Sequence[Callable[..., Any]]
    sessions: Sequence[Sequence[Task]]
    extra: Mapping[str, Any] = field(default_factory=dict)


class ScriptedModel:
    """A ``completion=`` callable that answers from a queue of replies (no network).

    The tools given to the Agent are wrapped (:meth:`wrap`) so that the final answer of a task
    can read their results even when a compaction between the tool call and the answer has
    folded them into the summary. Tool call ids are numbered per session (``call_0001`` ...).
    """

    def __init__(self) -> None:
        self.queue: list[ChatReply | Callable[[], ChatReply]] = []
        self.ids = itertools.count(1)
        self.results: list[str] = []

    def wrap(self, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def tool(*args: Any, **kwargs: Any) -> Any:
            try:
                result = function(*args, **kwargs)
            except Exception as error:  # recorded as the Agent's Tool.call reports it
                self.results.append(f"Error: {function.__name__} failed: {error}")
                raise
            text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
            self.results.append(text)
            return result

        return tool

    def plan(self, task: Task) -> None:
        self.results = []
        for index, calls in enumerate(task.rounds):
            text = task.preamble[index] if index < len(task.preamble) else ""
            self.queue.append(
                ChatReply(
                    content=text,
                    tool_calls=tuple(
                        {
                            "id": f"call_{next(self.ids):04d}",
                            "name": c.tool,
                            "arguments": json.dumps(dict(c.arguments), ensure_ascii=False),
                        }
                        for c in calls
                    ),
                    model=MODEL,
                )
            )
        self.queue.append(lambda: ChatReply(content=task.answer(list(self.results)), model=MODEL))

    def __call__(
        self,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        **options: Any,
    ) -> ChatReply:
        if not self.queue:
            raise AssertionError("the scripted model ran out of replies")
        reply = self.queue.pop(0)
        return reply if isinstance(reply, ChatReply) else reply()


@contextmanager
def steady_latency(rng: random.Random) -> Iterator[None]:
    """Make the compressor's measured latency (``latency_s`` in compactions.jsonl) a seeded
    value: ContextCompressor has no timer hook, so its module's ``time`` is swapped meanwhile."""
    clock = itertools.accumulate(rng.uniform(0.002, 0.09) for _ in itertools.count())

    class _Time:
        @staticmethod
        def perf_counter() -> float:
            return next(clock)

    with mock.patch.object(compressor_module, "time", _Time):
        yield


def run_agent(plan: AgentPlan, workspace: Path, clock: StepClock) -> int:
    """Run every session of ``plan`` in ``workspace``; returns the number of compactions."""
    compactions = 0
    for number, tasks in enumerate(plan.sessions):
        if number:
            clock.next_day(hour=9)
        model = ScriptedModel()
        agent = Agent(
            agent_name=plan.name,
            model_name=MODEL,
            system_prompt=plan.system_prompt,
            context_length=CONTEXT_LENGTH,
            summarizer_model="memorylab/extractive",
            workspace_dir=workspace,
            tools=[model.wrap(t) for t in plan.tools],
            completion=model,
            clock=clock,
            max_loops=1,
        )
        agent.context_compressor = ContextCompressor(
            threshold=THRESHOLD,
            summarizer_model="memorylab/extractive",
            summarizer_max_tokens=SUMMARY_TOKENS,
        )
        for task in tasks:
            model.plan(task)
            agent.run(task.prompt)
        assert not model.queue, f"{plan.name}: replies left over"
        compactions += sum(1 for e in agent.compaction_events if e.ok)
        failed = [e.error for e in agent.compaction_events if not e.ok]
        assert not failed, failed
        store = agent.short_memory.store
        if store is not None:
            store.close()
    return compactions


def build_workspace(
    plans: Sequence[AgentPlan], workspace: Path, start: datetime, seed: int
) -> dict[str, int]:
    """Write the workspace; returns compactions per agent."""
    out: dict[str, int] = {}
    with steady_latency(random.Random(f"{seed}:latency")):
        for index, plan in enumerate(plans):
            clock = StepClock(start + timedelta(days=7 * index), random.Random(f"{seed}:{index}"))
            out[plan.name] = run_agent(plan, workspace, clock)
    for lock in workspace.glob("agents/*/.MEMORY.md.lock"):
        lock.unlink()  # a per-machine lock file, recreated on first use: not sample data
    return out


def describe(result: str, limit: int = 3) -> str:
    """A sentence about one tool result, as a model would paraphrase it."""
    if result.startswith("Error:"):
        return f"The tool reported an error ({result[len('Error: ') :][:120]})."
    try:
        data = json.loads(result)
    except ValueError:
        first = result.strip().splitlines()[0] if result.strip() else ""
        return f"The output starts with: {first[:160]}"
    if isinstance(data, list):
        if not data:
            return "Nothing matched."
        head = data[0]
        shown = head.get("title") if isinstance(head, dict) else head
        return f"{len(data)} results; the first is {str(shown)[:160]}."
    if isinstance(data, dict):
        scalars = [(k, v) for k, v in data.items() if isinstance(v, int | float | str)][:limit]
        parts = ", ".join(f"{k} = {v}" for k, v in scalars)
        return f"Key figures: {parts}." if parts else "The result has no scalar fields."
    return f"The result is {data!r}."
