"""token_growth, replay and sweep: the sawtooth, the invariants, fast mode against real replays."""

from __future__ import annotations

import math
import random
import string
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from analysis_support import Built
from hypothesis import given, settings
from hypothesis import strategies as st

from memorylab.analysis import memory_df, replay, run_settings, sweep, token_growth
from memorylab.analysis._fast import Prefix, simulate
from memorylab.analysis._runs import SummarySize
from memorylab.analysis._transcript import memo_counter
from memorylab.compress._base import Summary
from memorylab.compress._cache_model import unit_prices
from memorylab.compress._policy import trigger_tokens
from memorylab.compress._scripted import ScriptedSummarizer
from memorylab.errors import InvalidSetting
from memorylab.memory import REPLY_TOKENS, message_tokens, request_message

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "eta",
    "theta",
    "iota",
    "kappa",
    "lambda",
]


def transcript(count: int, seed: int = 3, longest: int = 60) -> list[dict[str, str]]:
    rng = random.Random(seed)
    return [
        {
            "role": rng.choice(["User", "Agent", "tool"]),
            "content": " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, longest))),
        }
        for _ in range(count)
    ]


class SizedSummarizer:
    """Summaries of exactly the size the fast mode models: ``min(budget, ratio * summarized)``
    (the budget is what the compressor asks for, within ``cap``)."""

    name = "test/sized"

    def __init__(self, ratio: float, cap: int, model: str | None = None) -> None:
        self.ratio, self.cap = ratio, cap
        self.counter = memo_counter(model)
        self.calls = 0

    def summarize(
        self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None
    ) -> Summary:
        self.calls += 1
        # the tokens the summarized messages cost in the request, as the fast mode counts them
        summarized = sum(
            message_tokens(request_message(m, counted=True), self.counter) for m in messages
        )
        cap = self.cap if max_tokens is None else min(self.cap, max_tokens)
        size = min(cap, max(1, int(self.ratio * summarized)))
        # one token a word; the first two spell the call's number, so no two summaries are the
        # same text, as a summarizer's never are (the exact replay credits a summary the prompt
        # cache still holds; a model of the sizes cannot know two are the same)
        letters = string.ascii_lowercase
        words = [letters[self.calls % 26], letters[self.calls // 26 % 26]] + ["x"] * size
        return Summary(text=" ".join(words[:size]), model=self.name, cost_usd=0.0)


# --------------------------------------------------------------------------- token_growth


def test_growth_is_a_sawtooth(own_workspace: Built) -> None:
    df = memory_df(own_workspace.root)
    growth = token_growth(df, context_length=1000, threshold=0.8, model="gpt-4o")
    assert list(growth.columns) == [
        "workspace",
        "agent",
        "timeline",
        "segment",
        "session",
        "role",
        "is_summary",
        "tokens",
        "context_tokens",
        "trigger",
        "context_length",
        "compaction",
        "restart",
        "recorded_tokens",
    ]
    assert len(growth) == len(df)
    assert not growth["restart"].any() and growth["recorded_tokens"].isna().all()
    assert (growth["trigger"] == 800).all() and (growth["context_length"] == 1000).all()
    for agent, part in growth.groupby("agent", observed=True):
        assert int(part["compaction"].sum()) == own_workspace.compactions[str(agent)]
        for _, segment in part.groupby("segment"):
            tokens = segment["tokens"].to_numpy()
            expected = REPLY_TOKENS + np.cumsum(tokens)  # no static context: the priming
            assert segment["context_tokens"].tolist() == expected.tolist()
            assert segment["compaction"].tolist()[:-1] == [False] * (len(segment) - 1)
        last = part[part["segment"] == part["segment"].max()]
        assert not last["compaction"].any()  # no compaction after the live file's last message


def test_growth_counts_what_the_request_carries(own_workspace: Built) -> None:
    df = memory_df(own_workspace.root / "agents" / "gamma")
    growth = token_growth(df, context_length=4096, model="gpt-4o")
    counter = memo_counter("gpt-4o")
    first = df.iloc[0]
    text = f"[{first['timestamp'].isoformat(timespec='microseconds')}] {first['content']}"
    assert text.startswith("[2026-04-20T12:00:02.000000+00:00] gamma question")  # a user turn
    # OpenAI's count of the message: 3 tokens, its role ("user") and its stamped content
    assert growth["tokens"].iloc[0] == 3 + counter("user") + counter(text)
    static = token_growth(df, context_length=4096, model="gpt-4o", static_tokens=100)
    assert (static["context_tokens"] - growth["context_tokens"] == 100 - REPLY_TOKENS).all()
    with pytest.raises(InvalidSetting):
        token_growth(df, context_length=4096, static_tokens=-1)


def test_growth_of_a_plain_frame() -> None:
    frame = pd.DataFrame(transcript(10))
    growth = token_growth(frame, context_length=2000, threshold=500)
    assert growth["segment"].eq(0).all() and not growth["compaction"].any()
    assert growth["context_tokens"].is_monotonic_increasing
    assert growth["trigger"].iloc[0] == 500


# --------------------------------------------------------------------------- replay


def test_replay_touches_no_file(own_workspace: Built, snapshot_tree: Any) -> None:
    before = snapshot_tree(own_workspace.root)
    result = replay(own_workspace.root / "agents" / "alpha", threshold=0.6, context_length=600)
    assert snapshot_tree(own_workspace.root) == before
    timeline = result.frame
    assert list(timeline.columns) == [
        "timeline",
        "segment",
        "session",
        "role",
        "tokens",
        "context_tokens",
        "compaction",
        "context_after",
        "check",
        "restart",
        "trigger",
        "context_length",
        "cached_tokens",
        "cache_write_tokens",
    ]
    assert len(timeline) == len(own_workspace.messages["alpha"]) - 3  # summaries left out
    assert result.compactions == int(timeline["compaction"].sum()) > 0
    assert all(event.ok and event.archive is None for event in result.events)
    assert result.summarizer == "memorylab/extractive"
    assert result.final_context.startswith("[")
    assert "compactions=" in repr(result)


def test_context_never_exceeds_the_window() -> None:
    messages = transcript(400)
    for threshold, window in [(0.5, 600), (0.8, 800), (0.9, 1500), (300, 500)]:
        result = replay(
            messages,
            threshold=threshold,
            context_length=window,
            summarizer=SizedSummarizer(0.3, 40),
        )
        timeline = result.frame
        assert result.compactions > 0
        assert timeline["context_tokens"].max() <= window
        assert (timeline["context_after"] < trigger_tokens(window, threshold)).all()
        fired = timeline[timeline["compaction"]]
        assert (fired["context_tokens"] >= fired["trigger"]).all()
        assert (fired["context_after"] < fired["context_tokens"]).all()
        last_fired = int(timeline["compaction"].iloc[-1])
        assert timeline["segment"].iloc[-1] == result.compactions - last_fired


def test_replay_uses_the_timestamps_and_is_deterministic(own_workspace: Built) -> None:
    df = memory_df(own_workspace.root / "agents" / "beta")
    one = replay(df, threshold=0.7, context_length=700, cache=False)
    two = replay(df, threshold=0.7, context_length=700, cache=False)
    pd.testing.assert_frame_equal(one.frame, two.frame)
    assert one.final_context == two.final_context
    assert "[2026-04-20T12:00:" in one.final_context


def test_summaries_are_cached() -> None:
    messages = transcript(120)
    scripted = ScriptedSummarizer(["a short summary of what happened"])
    cache: dict[str, Summary] = {}
    first = replay(messages, threshold=0.6, context_length=500, summarizer=scripted, cache=cache)
    calls = len(scripted.calls)
    assert calls == first.compactions > 0 and len(cache) == calls
    again = replay(messages, threshold=0.6, context_length=500, summarizer=scripted, cache=cache)
    assert len(scripted.calls) == calls  # every summary came from the cache
    assert again.compactions == first.compactions
    assert again.summarizer_calls == first.summarizer_calls  # still reported as the setting's cost
    replay(messages, threshold=0.6, context_length=500, summarizer=scripted, cache=False)
    assert len(scripted.calls) == 2 * calls


def test_default_cache_is_shared() -> None:
    messages = transcript(80, seed=11)
    sized = SizedSummarizer(0.2, 50)
    replay(messages, threshold=0.5, context_length=400, summarizer=sized)
    calls = sized.calls
    replay(messages, threshold=0.5, context_length=400, summarizer=sized)
    assert sized.calls == calls > 0


def test_failing_summarizer_leaves_the_context() -> None:
    scripted = ScriptedSummarizer(["ok summary"], fail_on=[0])
    result = replay(
        transcript(60), threshold=0.5, context_length=600, summarizer=scripted, cache=False
    )
    assert [event.ok for event in result.events][:1] == [False]
    assert result.compactions == sum(event.ok for event in result.events) > 0


def test_transcript_inputs(own_workspace: Built) -> None:
    df = memory_df(own_workspace.root)
    with pytest.raises(InvalidSetting, match="several agents"):
        replay(df, threshold=0.8, context_length=1000)
    with pytest.raises(InvalidSetting):
        replay(42, threshold=0.8, context_length=1000)
    with pytest.raises(InvalidSetting):
        replay([{"content": "no role"}], threshold=0.8, context_length=1000)
    with pytest.raises(InvalidSetting):
        replay(pd.DataFrame({"x": [1]}), threshold=0.8, context_length=1000)
    gamma = own_workspace.root / "agents" / "gamma"
    from_path = replay(gamma, threshold=0.8, context_length=500).frame
    from_frame = replay(memory_df(gamma), threshold=0.8, context_length=500).frame
    pd.testing.assert_frame_equal(from_path, from_frame)
    stamped = [
        {"role": "User", "content": "hi", "timestamp": "2026-01-01T00:00:00+00:00"},
        {"role": "User", "content": "[Compressed Memory Summary] dropped"},
    ]
    result = replay(stamped, threshold=0.9, context_length=100)
    assert len(result.frame) == 1
    assert result.final_context == "[2026-01-01T00:00:00.000000+00:00] User: hi"


def test_system_prompt_is_static_context() -> None:
    messages = transcript(100)
    plain = replay(messages, threshold=0.7, context_length=800, summarizer=SizedSummarizer(0.1, 30))
    with_system = replay(
        messages,
        threshold=0.7,
        context_length=800,
        summarizer=SizedSummarizer(0.1, 30),
        system_prompt="You are a careful assistant. " * 10,
    )
    assert with_system.compactions > plain.compactions
    assert with_system.final_context.count("You are a careful assistant.") == 10


# --------------------------------------------------------------------------- fast mode


@pytest.mark.parametrize("system_prompt", [None, "Be brief."])
def test_fast_mode_agrees_with_real_replays(system_prompt: str | None) -> None:
    messages = transcript(300)
    settings_ = {"thresholds": [0.5, 0.7, 0.9, 400], "context_lengths": [500, 1000, 2000]}
    fast = sweep(
        messages,
        **settings_,
        fast=True,
        summary_ratio=0.2,
        max_summary_tokens=60,
        system_prompt=system_prompt,
    )  # type: ignore[arg-type]
    real = sweep(
        messages,
        **settings_,
        summarizer=SizedSummarizer(0.2, 10_000),
        max_summary_tokens=60,
        cache=False,
        system_prompt=system_prompt,
        fast=False,
    )  # type: ignore[arg-type]
    assert len(fast.frame) == len(real.frame) == 12
    columns = [
        "context_length",
        "threshold",
        "trigger",
        "recorded",
        "compactions",
        "peak_context_tokens",
        "total_input_tokens",
        "summarizer_calls",
        "summary_tokens",
    ]
    pd.testing.assert_frame_equal(fast.frame[columns], real.frame[columns])
    assert fast.error["settings"] >= 1  # calibrated against the extractive replay
    assert set(fast.frame["mode"]) == {"fast"} and set(real.frame["mode"]) == {"replay"}


@pytest.mark.parametrize("system_prompt", [None, "Be brief."])
def test_fast_mode_keeps_the_turn_in_progress_as_replays_do(system_prompt: str | None) -> None:
    """A compressor keeping the turn (the Agent's default): the fast mode keeps the user's last
    message and what followed out of the summary, takes their tokens off its budget, and where
    the turn is all there is keeps its request and newest step (this transcript's first
    compaction at 500 tokens and 0.5), as the compressor does: the same figures as replays."""
    messages = transcript(300, seed=18)
    kept = run_settings(messages).given(keep_turn=True)
    grid = {"thresholds": [0.5, 0.7, 0.9, 400], "context_lengths": [500, 1000, 2000]}
    options: dict[str, Any] = {"max_summary_tokens": 60, "system_prompt": system_prompt}
    fast = sweep(messages, **grid, fast=True, summary_ratio=0.2, settings=kept, **options)
    real = sweep(messages, **grid, summarizer=SizedSummarizer(0.2, 10_000), cache=False,
                 fast=False, settings=kept, **options)  # fmt: skip
    columns = ["compactions", "peak_context_tokens", "total_input_tokens", "summarizer_calls",
               "summary_tokens", "cached_input_tokens"]  # fmt: skip
    pd.testing.assert_frame_equal(fast.frame[columns], real.frame[columns])
    assert set(fast.frame["mode"]) == {"fast"}
    # the turn changes the figures: a fast sweep that dropped it would not agree
    dropped = sweep(messages, **grid, fast=True, summary_ratio=0.2, **options)
    assert (dropped.frame["total_input_tokens"] != fast.frame["total_input_tokens"]).any()


def test_a_turn_the_compressor_refuses_to_compact_is_replayed() -> None:
    """The user's first request alone over the trigger: a compressor keeping the turn refuses
    to compact it (a failed attempt, then its back-off), which the fast mode does not model;
    the sweep replays that setting exactly and says why."""
    messages = [{"role": "User", "content": " ".join(["word"] * 460)}, *transcript(60)]
    kept = run_settings(messages).given(keep_turn=True)
    result = sweep(messages, thresholds=[0.5, 0.9], context_lengths=[500, 4000], fast=True,
                   summary_ratio=0.2, settings=kept)  # fmt: skip
    frame = result.frame
    modes = {(r.context_length, r.threshold): r.mode for r in frame.itertuples()}
    assert modes == {(500, 0.5): "replay", (500, 0.9): "replay",
                     (4000, 0.5): "fast", (4000, 0.9): "fast"}  # fmt: skip
    exact = replay(messages, settings=kept, threshold=0.5, context_length=500, cache=False)
    assert not exact.events[0].ok and "turn in progress" in str(exact.events[0].error)
    row = frame.iloc[0]
    assert row["compactions"] == exact.compactions
    assert row["total_input_tokens"] == exact.total_input_tokens
    assert "refuses to compact it" in result.notes()[0]


def test_sweep_columns_and_skipped_settings() -> None:
    frame = sweep(
        transcript(50), thresholds=[0.5, 0.9, 3000], context_lengths=[1000, 4000], fast=True
    ).frame
    assert list(frame.columns) == [
        "context_length",
        "threshold",
        "trigger",
        "strategy",
        "mode",
        "recorded",
        "messages",
        "compactions",
        "peak_context_tokens",
        "total_input_tokens",
        "summarizer_calls",
        "summarizer_input_tokens",
        "summary_tokens",
        "cached_input_tokens",
        "estimated_cost_usd",
        "uncached_cost_usd",
    ]
    # 3000 tokens cannot fire in a 1000-token window: that combination is left out
    assert frame[["context_length", "threshold"]].values.tolist() == [
        [1000, 0.5],
        [1000, 0.9],
        [4000, 0.5],
        [4000, 0.9],
        [4000, 3000],
    ]
    assert frame["estimated_cost_usd"].isna().all()  # no model: no price
    with pytest.raises(InvalidSetting):
        sweep(transcript(5), thresholds=[5000], context_lengths=[1000], fast=True)
    with pytest.raises(InvalidSetting, match="summary_ratio"):
        sweep(transcript(5), fast=True, summary_ratio=2.0)
    assert [type(t) for t in frame["threshold"]] == [float, float, float, float, int]


def test_compactions_fall_as_the_threshold_rises() -> None:
    messages = transcript(500, seed=5)
    thresholds = [round(0.3 + 0.05 * i, 2) for i in range(14)]
    fast = sweep(messages, thresholds=thresholds, context_lengths=[600, 2000], fast=True)
    real = sweep(
        messages,
        thresholds=thresholds[::3],
        context_lengths=[600],
        summarizer=SizedSummarizer(0.1, 60),
        fast=False,
    )
    for frame in (fast.frame, real.frame):
        for _, part in frame.groupby("context_length"):
            counts = part.sort_values("threshold")["compactions"].tolist()
            assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1]
            totals = part.sort_values("threshold")["peak_context_tokens"].tolist()
            assert totals == sorted(totals)


@settings(deadline=None)
@given(
    st.lists(st.integers(1, 300), min_size=1, max_size=200),
    st.lists(st.integers(1, 5000), min_size=2, max_size=6),
    st.integers(1, 400),
)
def test_fast_compaction_count_is_monotonic(
    tokens: list[int], triggers: list[int], summary: int
) -> None:
    """With a summary of constant size the count never rises with the trigger (and a check
    against a plain loop over the messages)."""
    prefix = Prefix.of(np.array(tokens, dtype=np.int64))
    outcomes = [
        (
            t,
            simulate(prefix, t, overhead=5, size=SummarySize(), budget=summary, keep_points=True),
        )
        for t in sorted(set(triggers))
    ]
    counts = [o.compactions for _, o in outcomes]
    assert counts == sorted(counts, reverse=True)
    for trigger, outcome in outcomes:
        context, total, peak, points = 0, 0, 0, []
        for i, t in enumerate(tokens):
            context += t
            peak = max(peak, context)
            if context >= trigger:
                size = min(summary, max(1, int(context)))
                points.append(i)
                context = size + 5
            total += context
        assert list(outcome.points) == points
        assert outcome.total_input_tokens == total and outcome.peak_context_tokens == peak


def test_fast_sweep_of_many_settings_runs() -> None:
    messages = transcript(2000, longest=30)
    frame = sweep(
        messages, thresholds=np.linspace(0.3, 0.95, 50).tolist(), context_lengths=[4096], fast=True
    ).frame
    assert len(frame) == 50 and (frame["messages"] == 2000).all()


# --------------------------------------------------------------------------- facts and prices


def test_fact_survival() -> None:
    messages = transcript(200)
    messages[3]["content"] += " the build command is make release-7"
    messages[-5]["content"] += " the api port is 8443"
    facts = ["make release-7", "port is 8443", "never mentioned"]
    # where the last compaction falls, from a real replay that fast mode models exactly
    sized = replay(
        messages,
        threshold=0.7,
        context_length=600,
        summarizer=SizedSummarizer(0.1, 10_000),
        max_summary_tokens=60,
    )
    fired = np.flatnonzero(sized.frame["compaction"].to_numpy())
    tail_start = int(fired[-1]) + 1
    expected = sum(1 for i in (3, 195) if i >= tail_start) / 3
    fast = sweep(
        messages,
        thresholds=[0.7],
        context_lengths=[600, 100_000],
        fast=True,
        facts=facts,
        summary_ratio=0.1,
        max_summary_tokens=60,
    )
    assert fast.frame["fact_survival"].tolist() == [pytest.approx(expected), pytest.approx(2 / 3)]
    assert sized.fact_survival(facts) == pytest.approx(expected)  # "x x x" summaries keep nothing
    real = sweep(messages, thresholds=[0.7], context_lengths=[600, 100_000], facts=facts)
    assert real.frame["fact_survival"].iloc[1] == pytest.approx(2 / 3)
    assert real.frame["fact_survival"].iloc[0] >= expected  # the extractive summary may keep a fact
    result = replay(messages, threshold=0.7, context_length=100_000)
    assert result.fact_survival(facts) == pytest.approx(2 / 3)
    assert math.isnan(result.fact_survival([]))


def test_estimated_cost() -> None:
    messages = transcript(100)
    priced = sweep(
        messages, thresholds=[0.5, 0.9], context_lengths=[800], fast=True, model="gpt-4o-mini"
    )
    per_in, per_out = unit_prices("gpt-4o-mini")
    assert per_in > 0 and per_out > 0
    assert priced.frame["estimated_cost_usd"].tolist() == pytest.approx(
        (priced.frame["total_input_tokens"] * per_in).tolist()  # the offline summarizer is free
    )
    llm_summaries = sweep(
        messages,
        thresholds=[0.5],
        context_lengths=[800],
        fast=True,
        model="gpt-4o-mini",
        summarizer="gpt-4o-mini",
    )
    row = llm_summaries.frame.iloc[0]
    assert row["estimated_cost_usd"] == pytest.approx(
        (row["total_input_tokens"] + row["summarizer_input_tokens"]) * per_in
        + (row["summary_tokens"] - row["compactions"] * _overhead()) * per_out
    )
    unknown = sweep(
        messages, thresholds=[0.5], context_lengths=[800], fast=True, model="no-such-model-xyz"
    )
    assert unknown.frame["estimated_cost_usd"].isna().all()
    replayed = sweep(messages, thresholds=[0.5], context_lengths=[800], model="gpt-4o-mini")
    assert replayed.frame["estimated_cost_usd"].iloc[0] == pytest.approx(
        replayed.frame["total_input_tokens"].iloc[0] * per_in
    )


def _overhead() -> int:
    """A summary entry's tokens in the request beyond its text."""
    counter = memo_counter("gpt-4o-mini")
    return message_tokens({"role": "system", "content": "[Compressed Memory Summary]"}, counter)


def test_replay_of_a_reference_workspace(reference_workspace: Built) -> None:
    path: Path = reference_workspace.root / "agents" / "Researcher"
    result = replay(path, threshold=0.9, context_length=100_000)
    assert len(result.frame) == 6 and result.compactions == 0
    assert "Tool Executor" in result.final_context
