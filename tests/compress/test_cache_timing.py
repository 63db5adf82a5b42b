"""Cache-aware timing (issue 38): a trigger that defers a compaction while the prompt cache is
warm and the window allows it, live in memorylab's own Agent and in the replay of its files."""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memorylab import Agent
from memorylab.analysis import memory_df, replay, sweep
from memorylab.compress import CacheTiming, ContextCompressor, Trigger
from memorylab.errors import InvalidSetting
from memorylab.llm import ChatReply

WINDOW = 3000
SONNET = "claude-sonnet-4-5"  # litellm's map prices its cache: read 0.1x, write 1.25x input
WORDS = ("cache", "shard", "retry", "schema", "index", "queue", "commit", "branch", "latency")


def lookup(topic: str, rows: int) -> str:
    """Look a topic up in the notes.

    Args:
        topic: what to look up
        rows: how many lines to return
    """
    rng = random.Random(f"{topic}:{rows}")
    return "\n".join(f"{i}. {topic}: " + " ".join(rng.choices(WORDS, k=9)) for i in range(rows))


class Clock:
    """Moves ``step`` seconds forward each time it is read (message timestamps)."""

    def __init__(self, step: float) -> None:
        self.now, self.step = datetime(2026, 3, 2, 9, 0, tzinfo=UTC), timedelta(seconds=step)

    def __call__(self) -> datetime:
        self.now += self.step
        return self.now


class Model:
    """A scripted completion that reports its usage, the cache's reads included (as Anthropic
    reports them: what the previous call's context still covers)."""

    def __init__(self, seed: int) -> None:
        self.rng, self.calls, self.previous = random.Random(seed), 0, 0

    def __call__(self, model: str, messages: Sequence[Mapping[str, Any]], **_: Any) -> ChatReply:
        self.calls += 1
        tokens = sum(len(str(m.get("content") or "")) // 4 for m in messages)
        cached, self.previous = min(self.previous, tokens), tokens
        words = " ".join(self.rng.choices(WORDS, k=self.rng.randint(10, 40)))
        usage = {"input_tokens": tokens, "output_tokens": 30, "cached_tokens": cached}
        if self.calls % 2:  # every other call looks something up
            call = {"id": f"call_{self.calls}", "name": "lookup",
                    "arguments": json.dumps({"topic": "cache", "rows": 6})}  # fmt: skip
            return ChatReply(content=f"Checking {words}.", tool_calls=(call,), **usage)
        return ChatReply(content=f"Answer: {words}.", **usage)


def run(workspace: Path, trigger: Trigger | float, *, step: float, tasks: int = 30) -> Agent:
    """An agent run (one process) at ``trigger``, its clock moving ``step`` s per message."""
    agent = Agent(
        agent_name="Timed",
        model_name="gpt-4o-mini",
        system_prompt="You hunt bugs.",
        context_length=WINDOW,
        compression_threshold=trigger,
        summarizer_model="memorylab/extractive",
        workspace_dir=workspace,
        tools=[lookup],
        completion=Model(seed=7),
        clock=Clock(step),
        max_loops=1,
        id="agent-" + "0" * 32,
    )
    agent.context_compressor.summarizer_max_tokens = 500
    rng = random.Random(3)
    for _ in range(tasks):
        agent.run("Task: " + " ".join(rng.choices(WORDS, k=rng.randint(5, 30))) + "?")
    assert all(event.ok for event in agent.compaction_events)
    return agent


def records(workspace: Path) -> list[dict[str, Any]]:
    path = workspace / "agents" / "Timed" / "compactions.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


TIMED = Trigger(fraction=0.5, cache=CacheTiming(SONNET, ttl_s=300, ceiling=0.6))


def growth_at_compactions(agent: Agent) -> list[tuple[int, int]]:
    """Per compaction, its count and what the history grew by since the previous call (what
    the next call is expected to add)."""
    calls = agent.usage_records
    events = [e for e in agent.compaction_events if e.ok]
    fired = [i for i, call in enumerate(calls) if call.compacted]
    assert len(fired) == len(events)
    return [
        (e.tokens_before, e.tokens_before - calls[i - 1].estimated_tokens)
        for i, e in zip(fired, events, strict=True)
    ]


def test_a_warm_cache_defers_the_compaction_up_to_the_ceiling(tmp_path: Path) -> None:
    run(tmp_path / "plain", 0.5, step=3)
    timed = run(tmp_path / "timed", TIMED, step=3)
    made, unchanged = records(tmp_path / "timed"), records(tmp_path / "plain")
    assert made and len(made) <= len(unchanged)
    mean = [sum(r["tokens_before"] for r in rs) / len(rs) for rs in (made, unchanged)]
    assert mean[0] > mean[1] + 100  # later than the threshold alone
    ceiling = 1800  # 0.6 of the window
    for record in made:
        assert record["extra"]["trigger"] == TIMED.to_dict()
        assert record["extra"]["deferred_checks"] >= 1
        assert record["tokens_before"] >= 1500  # the threshold, 0.5 of the window
    # each fired where the growth the next call is expected to add would pass the ceiling
    assert all(before + growth >= ceiling for before, growth in growth_at_compactions(timed))


def test_the_deferral_ends_once_the_deferred_calls_carried_what_a_compaction_costs(
    tmp_path: Path,
) -> None:
    """With the ceiling out of reach, the cost model ends each deferral: gpt-4o-mini's cache
    (writes at the input price, reads at half of it) is soon rebuilt, so the deferred calls'
    extra tokens at the read price reach the compaction's cost after a call or two."""
    high = Trigger(fraction=0.5, cache=CacheTiming("gpt-4o-mini", ceiling=0.95))
    higher = Trigger(fraction=0.5, cache=CacheTiming("gpt-4o-mini", ceiling=0.99))
    timed = run(tmp_path / "high", high, step=3)
    made = records(tmp_path / "high")
    assert made and all(r["extra"]["deferred_checks"] >= 1 for r in made)
    assert all(before + growth < 2850 for before, growth in growth_at_compactions(timed))
    run(tmp_path / "higher", higher, step=3)
    same = [r["tokens_before"] for r in records(tmp_path / "higher")]
    assert same == [r["tokens_before"] for r in made]
    # Sonnet's costlier rebuild (writes at 1.25x the input price, reads at 0.1x) defers longer
    run(tmp_path / "sonnet", Trigger(fraction=0.5, cache=CacheTiming(SONNET, ceiling=0.95)), step=3)
    longer = records(tmp_path / "sonnet")
    assert sum(r["extra"]["deferred_checks"] for r in longer) > sum(
        r["extra"]["deferred_checks"] for r in made
    )


def test_a_cold_cache_compacts_at_the_threshold(tmp_path: Path) -> None:
    run(tmp_path / "plain", 0.5, step=400)
    run(tmp_path / "timed", TIMED, step=400)  # 400 s between messages: past the 300 s cache
    plain, timed = records(tmp_path / "plain"), records(tmp_path / "timed")
    assert timed and [r["tokens_before"] for r in timed] == [r["tokens_before"] for r in plain]
    assert all(r["extra"]["deferred_checks"] == 0 for r in timed)


@pytest.mark.parametrize("step", [3, 400], ids=["warm", "cold"])
def test_the_replay_of_the_run_defers_as_it_did(tmp_path: Path, step: float) -> None:
    run(tmp_path, TIMED, step=step)
    live = [r["tokens_before"] for r in records(tmp_path)]
    result = replay(memory_df(tmp_path / "agents" / "Timed"), cache=False)
    assert result.settings is not None and result.settings.trigger == TIMED
    replayed = [e.tokens_before or 0 for e in result.events if e.ok]
    assert len(replayed) == len(live)
    assert all(abs(a - b) <= 0.02 * b for a, b in zip(replayed, live, strict=True))
    deferred = [r["extra"]["deferred_checks"] for r in records(tmp_path)]
    assert [e.extra["deferred_checks"] for e in result.events if e.ok] == deferred


def test_replay_and_sweep_defer_a_plain_run_as_a_what_if(tmp_path: Path) -> None:
    run(tmp_path, 0.5, step=3)
    frame = memory_df(tmp_path / "agents" / "Timed")
    result = replay(frame, cache_timing=TIMED.cache, cache=False)
    assert result.settings is not None and result.settings.trigger == TIMED
    assert any(e.extra["deferred_checks"] for e in result.events if e.ok)
    table = sweep(frame, [0.5, 0.55], cache_timing=TIMED.cache, cache=False, progress=False)
    assert set(table.frame["mode"]) == {"replay"}  # the fast engine has no clock
    at_half = table.frame[table.frame["threshold"] == 0.5]
    assert at_half["compactions"].tolist() == [result.compactions]


def test_the_trigger_round_trips_through_its_record() -> None:
    assert Trigger.from_dict(TIMED.to_dict()) == TIMED
    assert TIMED.to_dict()["cache"] == {"model": SONNET, "ttl_s": 300.0, "ceiling": 0.6}
    assert not TIMED.plain and "prompt cache is warm" in TIMED.text()


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda: Trigger(fraction=0.9, cache=CacheTiming(SONNET, ceiling=0.8)), "ceiling=0.8"),
        (lambda: Trigger(fraction=0.8, cache=CacheTiming(SONNET, ceiling=0.8)), "above"),
        (lambda: CacheTiming(SONNET, ttl_s=0), "ttl_s"),
        (lambda: CacheTiming(SONNET, ttl_s=-5), "ttl_s"),
        (lambda: CacheTiming(SONNET, ceiling=1.5), "ceiling"),
        (lambda: CacheTiming(""), "model"),
        (
            lambda: ContextCompressor(Trigger(fraction=0.5, cache=CacheTiming("no-such/model-x"))),
            "no-such/model-x",
        ),
        (
            lambda: Trigger(tokens=2900, cache=CacheTiming(SONNET)).ceiling_tokens(WINDOW),
            "raise the ceiling",
        ),
    ],
)
def test_bad_settings_are_refused(make: Any, says: str) -> None:
    with pytest.raises(InvalidSetting, match=says.replace("(", r"\(")):
        make()
