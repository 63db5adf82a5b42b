"""A live run of memorylab's own Agent for the compaction tests, and its replay: a scripted model
(it never reads the context) whose tasks call a tool, the offline extractive summarizer, a small
window so it compacts several times. Everything is seeded and the clock ticks whole seconds, so
a replay of the run's files at its recorded settings can be compared with the run."""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memorylab import Agent
from memorylab.analysis import ReplayResult, memory_df, replay
from memorylab.llm import ChatReply

WORDS = ("pipeline", "latency", "schema", "partition", "backfill", "replica", "index", "cache",
         "queue", "shard", "retry", "budget", "window", "token", "archive", "rollout", "canary")  # fmt: skip


def lookup(topic: str, rows: int) -> str:
    """Look a topic up in the team's notes.

    Args:
        topic: what to look up
        rows: how many lines to return
    """
    rng = random.Random(f"{topic}:{rows}")
    return "\n".join(f"{i}. {topic}: " + " ".join(rng.choices(WORDS, k=8)) for i in range(rows))


class _Clock:
    def __init__(self, seed: int) -> None:
        self.now = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
        self.rng = random.Random(f"{seed}:clock")

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=self.rng.randint(1, 30))
        return self.now


class _Model:
    """A ``completion=`` answering from a queue."""

    def __init__(self) -> None:
        self.queue: list[ChatReply] = []

    def __call__(self, model: str, messages: Sequence[Mapping[str, Any]], **_: Any) -> ChatReply:
        return self.queue.pop(0)


@dataclass
class LiveRun:
    """What a run wrote: its agent folder, its compaction records and the Agent."""

    folder: Path
    records: list[dict[str, Any]]
    agent: Agent

    @property
    def tokens_before(self) -> list[int]:
        return [int(r["tokens_before"]) for r in self.records]


def run_live(
    workspace: Path, name: str, *, tasks: int = 16, seed: int = 1, pins: int = 0, **options: Any
) -> LiveRun:
    """A scripted Agent's run of ``tasks`` tasks (each: 0-2 tool calls, then an answer) in a
    1,500-token window compacting at 70 %; the first ``pins`` tasks are pinned; ``options`` go
    to the Agent."""
    rng = random.Random(seed)
    model = _Model()
    agent = Agent(
        agent_name=name,
        system_prompt="You are a careful data engineer.",
        context_length=1500,
        compression_threshold=0.7,
        summarizer_model="memorylab/extractive",
        workspace_dir=workspace,
        tools=[lookup],
        completion=model,
        clock=_Clock(seed),
        id=f"agent-{seed:032x}",
        **options,
    )
    calls = 0
    for task in range(tasks):
        for _ in range(rng.choice((0, 1, 2))):
            calls += 1
            arguments = json.dumps({"topic": rng.choice(WORDS), "rows": rng.randint(2, 14)})
            call = {"id": f"call_{calls}", "name": "lookup", "arguments": arguments}
            model.queue.append(ChatReply(content="Checking the notes.", tool_calls=(call,)))
        model.queue.append(ChatReply(content="Answer: " + " ".join(rng.choices(WORDS, k=40))))
        agent.run(f"Task {task}: " + " ".join(rng.choices(WORDS, k=20)) + "?", pin=task < pins)
    folder = workspace / "agents" / name
    lines = (folder / "compactions.jsonl").read_text().splitlines()
    return LiveRun(folder, [json.loads(line) for line in lines if line.strip()], agent)


def replayed(run: LiveRun) -> ReplayResult:
    """The replay of the run's files at its recorded settings."""
    return replay(memory_df(run.folder), cache=False, progress=False)


def reproduces(run: LiveRun, result: ReplayResult) -> bool:
    """The replay made the run's compactions, each ``tokens_before`` within 2 %."""
    again = [int(e.tokens_before or 0) for e in result.events if e.ok]
    return len(again) == len(run.records) and all(
        abs(a - b) <= 0.02 * b for a, b in zip(again, run.tokens_before, strict=True)
    )
