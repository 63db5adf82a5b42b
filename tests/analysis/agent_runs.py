"""Agent runs to validate the replay against: memorylab's own ``Agent`` with a scripted model.

Each :class:`RunSpec` is a run: a window and threshold, a summarizer (the offline extractive one
or the scripted one), one process or several (a new ``Agent`` per session, on the same memory:
restarts with the bounded preload), and tasks whose replies call tools with outputs of varied
size; the compressor's strategy, whether it keeps the turn in progress (the Agent's default),
a pinned first task, and a cache-aware trigger. Everything is seeded; the model never sees the context, so a rerun at another threshold
writes the same messages (only the compactions differ). The clock ticks whole seconds, so every
timestamp has the same number of tokens in a run and its rerun.

:func:`validate` replays a run at its own settings (the replay must make the recorded number of
compactions, each ``tokens_before`` within 2 %), and at other thresholds against a rerun of the
same scripted agent (the compaction counts must agree). ``tests/analysis/test_validation.py``
asserts it; ``tests/benchmarks/bench_validation.py`` prints the table.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memorylab import Agent
from memorylab.analysis import memory_df, replay
from memorylab.compress import CacheTiming, ClearToolResults, FactLedger, KeepRecent, Trigger, Trim
from memorylab.compress._policy import Threshold
from memorylab.compress._strategy import Strategy
from memorylab.llm import ChatReply

WORDS = tuple(
    [
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
        "retry",
        "budget",
        "window",
        "token",
        "summary",
        "archive",
        "checkpoint",
        "migration",
        "rollout",
        "canary",
        "metric",
        "alert",
        "dashboard",
        "parquet",
        "airflow",
        "cron",
        "worker",
        "timeout",
        "endpoint",
        "payload",
        "header",
        "cursor",
        "offset",
        "commit",
        "branch",
    ]
)
START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@dataclass(frozen=True)
class RunSpec:
    """One agent run: its window, threshold, summarizer, sessions (1: no restart), tasks per
    session, the gap between sessions, and the seed of its words."""

    name: str
    summarizer: str
    context_length: int
    threshold: Threshold
    sessions: int = 1
    tasks: int = 24
    gap: timedelta = timedelta(hours=20)
    seed: int = 1
    summarizer_max_tokens: int = 2000
    system_prompt: str = "You are a careful data engineer. Answer briefly and cite the tools."
    other_thresholds: tuple[Threshold, ...] = ()
    strategy: Strategy | None = None
    """What each compaction does (``None``: the seed's summary, with no strategy given)."""
    nothing_to_do: bool = False
    """The strategy may find nothing to do at a check (clearing, once every old tool result is
    cleared): such attempts fail, change nothing, and are replayed too."""
    keep_turn: bool = True
    """Whether each compaction keeps the turn in progress (``False``: the seed's compaction)."""
    pin_first: bool = False
    """Pin the run's first task (``Agent.run(task, pin=True)``): every compaction keeps it."""
    cache: CacheTiming | None = None
    """Defer compactions while the prompt cache is warm (``Trigger(cache=...)``, at each
    threshold the run is made at); the checks' times are the run's seeded clock's."""

    def trigger(self, threshold: Threshold) -> Threshold | Trigger:
        """What the Agent is given as its ``compression_threshold`` at ``threshold``."""
        if self.cache is None:
            return threshold
        if isinstance(threshold, float):
            return Trigger(fraction=threshold, cache=self.cache)
        return Trigger(tokens=threshold, cache=self.cache)


SPECS: tuple[RunSpec, ...] = (
    RunSpec("extractive-one", "memorylab/extractive", 2000, 0.8, seed=1, other_thresholds=(0.6,)),
    RunSpec(
        "extractive-restarts",
        "memorylab/extractive",
        3000,
        0.85,
        sessions=4,
        tasks=9,
        seed=2,
        summarizer_max_tokens=500,
        other_thresholds=(0.7,),
    ),
    RunSpec(
        "extractive-quick-restarts",
        "memorylab/extractive",
        2500,
        1800,
        sessions=3,
        tasks=10,
        gap=timedelta(seconds=5),
        seed=3,
        other_thresholds=(1400,),
    ),
    RunSpec(
        "scripted-one", "memorylab/scripted", 1500, 0.7, tasks=20, seed=4, other_thresholds=(0.9,)
    ),
    RunSpec(
        "scripted-restarts",
        "memorylab/scripted",
        4000,
        0.9,
        sessions=3,
        tasks=12,
        seed=5,
        other_thresholds=(0.5,),
    ),
    RunSpec(
        "keep-recent",
        "memorylab/extractive",
        2000,
        0.8,
        sessions=2,
        tasks=16,
        seed=6,
        strategy=KeepRecent(keep_messages=6),
        other_thresholds=(0.6,),
    ),
    RunSpec(
        "trim",
        "memorylab/extractive",
        2000,
        0.8,
        sessions=2,
        tasks=16,
        seed=7,
        strategy=Trim(keep_fraction=0.3),
        other_thresholds=(0.6,),
    ),
    RunSpec(
        "clear-tool-results",
        "memorylab/extractive",
        2500,
        0.8,
        tasks=20,
        seed=8,
        strategy=ClearToolResults(keep_tool_results=2),
        nothing_to_do=True,
        other_thresholds=(0.7,),
    ),
    RunSpec(
        "seed-compaction",
        "memorylab/extractive",
        2000,
        0.8,
        sessions=2,
        tasks=16,
        seed=15,
        keep_turn=False,
        other_thresholds=(0.6,),
    ),
    RunSpec(
        "fact-ledger",
        "memorylab/extractive",
        3000,
        0.8,
        sessions=2,
        tasks=20,
        seed=16,
        strategy=FactLedger(),
        other_thresholds=(0.6,),
    ),
    RunSpec(
        "pinned-task",
        "memorylab/extractive",
        2000,
        0.8,
        sessions=2,
        tasks=16,
        seed=17,
        pin_first=True,
        other_thresholds=(0.6,),
    ),
    RunSpec(
        "cache-aware",
        "memorylab/scripted",
        4000,
        0.6,
        tasks=30,
        seed=18,
        cache=CacheTiming("claude-sonnet-4-5"),
        other_thresholds=(0.5,),
    ),
)
"""The runs of the test (the benchmark's full run adds more): the seed's summary, each strategy
of :mod:`memorylab.compress` run live, and the compressor's options: the turn in progress kept
(every run but ``seed-compaction``, the seed's compaction), a pinned task and a cache-aware
trigger."""

QUICK_SPECS = SPECS[:2]


class SecondClock:
    """A clock that moves forward a whole number of seconds (seeded) each time it is read."""

    def __init__(self, start: datetime, rng: random.Random) -> None:
        self.now, self.rng = start, rng

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=self.rng.randint(1, 40))
        return self.now


def _words(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def lookup(topic: str, rows: int) -> str:
    """Look a topic up in the team's notes.

    Args:
        topic: what to look up
        rows: how many lines to return
    """
    rng = random.Random(f"{topic}:{rows}")
    return "\n".join(f"{i}. {topic}: {_words(rng, 4, 14)}" for i in range(int(rows)))


def _task_replies(rng: random.Random, call_ids: Any) -> tuple[str, list[ChatReply | None]]:
    """A task's prompt and the model's replies (``None``: the final answer, made on the call)."""
    prompt = f"Task: {_words(rng, 8, 40)}?"
    replies: list[ChatReply | None] = []
    for _ in range(rng.choice((0, 1, 1, 2))):
        calls = tuple(
            {
                "id": f"call_{next(call_ids):04d}",
                "name": "lookup",
                "arguments": json.dumps({"topic": rng.choice(WORDS), "rows": rng.randint(2, 18)}),
            }
            for _ in range(rng.choice((1, 1, 2)))
        )
        replies.append(ChatReply(content=f"Checking: {_words(rng, 3, 12)}.", tool_calls=calls))
    replies.append(ChatReply(content=f"Answer: {_words(rng, 10, 90)}."))
    return prompt, replies


class ScriptedModel:
    """A ``completion=`` callable answering from a queue (it never reads the context)."""

    def __init__(self) -> None:
        self.queue: list[ChatReply | None] = []

    def __call__(self, model: str, messages: Sequence[Mapping[str, Any]], **_: Any) -> ChatReply:
        reply = self.queue.pop(0)
        assert reply is not None
        return reply


@dataclass
class Run:
    """What a run wrote: the agent folder and the compactions' ``tokens_before``."""

    spec: RunSpec
    threshold: Threshold
    folder: Path
    tokens_before: list[int] = field(default_factory=list)

    @property
    def compactions(self) -> int:
        return len(self.tokens_before)


def run_agent(spec: RunSpec, workspace: Path, threshold: Threshold | None = None) -> Run:
    """Run ``spec`` (at ``threshold``, default its own) in ``workspace``."""
    threshold = spec.threshold if threshold is None else threshold
    rng = random.Random(spec.seed)
    clock = SecondClock(START, random.Random(f"{spec.seed}:clock"))
    call_ids = iter(range(1, 1_000_000))
    folder = workspace / "agents" / spec.name
    for session in range(spec.sessions):
        if session:
            clock.now += spec.gap
        model = ScriptedModel()
        agent = Agent(
            agent_name=spec.name,
            model_name="gpt-4o-mini",
            system_prompt=spec.system_prompt,
            context_length=spec.context_length,
            compression_threshold=spec.trigger(threshold),
            summarizer_model=spec.summarizer,
            workspace_dir=workspace,
            tools=[lookup],
            completion=model,
            clock=clock,
            max_loops=1,
            strategy=spec.strategy,
            keep_turn=spec.keep_turn,
            # each process's id (the header names it), drawn from the seed: the same run, to
            # the token, every time (a fresh random id tokenizes to a few tokens more or less)
            id=f"agent-{random.Random(f'{spec.seed}:{session}:id').getrandbits(128):032x}",
        )
        agent.context_compressor.summarizer_max_tokens = spec.summarizer_max_tokens
        for task in range(spec.tasks):
            prompt, replies = _task_replies(rng, call_ids)
            model.queue = replies
            agent.run(prompt, pin=spec.pin_first and session == 0 and task == 0)
        failed = [e.error for e in agent.compaction_events if not e.ok]
        if spec.nothing_to_do:
            failed = [f for f in failed if "found no tool result to clear" not in str(f)]
        assert not failed, failed
        store = agent.short_memory.store
        if store is not None:
            store.close()
    records = (
        [
            json.loads(line)
            for line in (folder / "compactions.jsonl").read_text().splitlines()
            if line.strip()
        ]
        if (folder / "compactions.jsonl").is_file()
        else []
    )
    return Run(spec, threshold, folder, [int(r["tokens_before"]) for r in records])


@dataclass(frozen=True)
class Check:
    """One row of the validation: a run replayed at a threshold."""

    run: str
    strategy: str
    summarizer: str
    context_length: int
    threshold: Threshold
    restarts: int
    messages: int
    live: int
    replayed: int
    worst_tokens_pct: float | None
    """At the run's own setting: the largest difference of a ``tokens_before`` (%)."""

    @property
    def ok(self) -> bool:
        tokens_ok = self.worst_tokens_pct is None or self.worst_tokens_pct <= 2.0
        return self.live == self.replayed and tokens_ok


def validate(spec: RunSpec, workspace: Path) -> list[Check]:
    """The run at its own settings and at each of ``spec.other_thresholds`` (against a rerun)."""
    run = run_agent(spec, workspace / "recorded")
    frame = memory_df(run.folder)
    result = replay(frame, cache=False)
    replayed = [int(e.tokens_before or 0) for e in result.events if e.ok]
    worst = max(
        (100 * abs(a - b) / b for a, b in zip(replayed, run.tokens_before, strict=False)),
        default=0.0,
    )
    if len(replayed) != len(run.tokens_before):
        worst = float("inf")
    checks = [
        Check(
            spec.name,
            result.strategy,
            spec.summarizer,
            spec.context_length,
            spec.threshold,
            result.restarts,
            len(result.frame),
            run.compactions,
            result.compactions,
            worst,
        )
    ]
    for other in spec.other_thresholds:
        rerun = run_agent(spec, workspace / f"rerun-{other}", threshold=other)
        what_if = replay(frame, threshold=other, cache=False)
        checks.append(
            Check(
                spec.name,
                what_if.strategy,
                spec.summarizer,
                spec.context_length,
                other,
                what_if.restarts,
                len(what_if.frame),
                rerun.compactions,
                what_if.compactions,
                None,
            )
        )
    return checks
