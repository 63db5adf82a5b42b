"""The prompt-cache cost model (memorylab.analysis._cache_costs states its rules): a hand
computation on a three-compaction run, the fast sweep against exact replays, a model without
cache prices, recorded usage, and the plot."""

from __future__ import annotations

import json
import math
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memorylab import Agent, llm
from memorylab.analysis import (
    compaction_costs_df,
    cost_audit,
    memory_df,
    plot_compaction_costs,
    replay,
    sweep,
)
from memorylab.analysis._cache_costs import CACHE_COST_COLUMNS
from memorylab.analysis._fast import Prefix, simulate
from memorylab.analysis._runs import SummarySize
from memorylab.compress._cache_model import cache_calls
from memorylab.llm import ChatReply
from memorylab.transcripts import bundled_workspace


class TenSeconds:
    """A clock that moves ten seconds each time it is read."""

    def __init__(self) -> None:
        self.now = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=10)
        return self.now


def three_compactions(workspace: Path, replies: list[ChatReply] | None = None) -> Path:
    """An Agent with a 608-token static context, a 4,000-token window compacting at half of
    it, a summarizer that writes "summary", and 14 tasks of the same 300 words: each task adds
    339 tokens (the task 330 and the reply 9), so the run compacts three times."""
    queue = list(replies or [])

    def model(name: str, messages: Any, **_: Any) -> ChatReply:
        return queue.pop(0) if queue else ChatReply(content="Noted: done.")

    agent = Agent(
        agent_name="Cachey",
        model_name="gpt-4o-mini",
        system_prompt="Keep every rule. " * 150,
        context_length=4000,
        compression_threshold=0.5,
        summarizer_model="memorylab/scripted",
        workspace_dir=workspace,
        completion=model,
        clock=TenSeconds(),
        max_loops=1,
    )
    for _ in range(14):
        agent.run("Please read this: " + "data " * 300)
    store = agent.short_memory.store
    assert store is not None
    store.close()
    return workspace / "agents" / "Cachey"


# The run's 14 model calls: the context each read (memorylab's count of the request,
# gpt-4o-mini's tokenizer). The static context is 608 tokens (the system message: 3 + 1 for
# its role + 601 of content; 3 priming the reply); a task is a user message of 330 (3 + 1 +
# 326 of stamped content) and its reply 9 (3 + 1 + 5). The context before call i is 608 +
# 339 i - 9; the check of call 4 (2,294 >= the 2,000 trigger) compacts, and what stays is the
# static context, the summary entry (10) and the turn in progress (the task, 330): 948; then
# each task adds 339 again, and calls 8 and 12 (2,304 before) compact the same way.
CONTEXTS = [938, 1277, 1616, 1955, 948, 1287, 1626, 1965, 948, 1287, 1626, 1965, 948, 1287]
COMPACTED = [4, 8, 12]  # the calls whose check compacted (tokens before: 2294, 2304, 2304)
# The rules with a 1,024-token minimum (gpt-4o-mini: the map names none, so OpenAI's):
#   call 0: a process's first call reads nothing; 938 < 1024 writes nothing.
#   call 1: the previous context (938) is under the minimum: reads 0; writes its 1277.
#   call 2: reads the previous 1277, writes 1616 - 1277 = 339; call 3: reads 1616, writes 339.
#   call 4 (compacted): keeps only the static context, 608 < 1024: reads 0; 948 writes nothing.
#   call 5: previous 948 < 1024: reads 0; writes 1287.
#   call 6: reads 1287, writes 339; call 7: reads 1626, writes 339. The same after each
#   compaction.
CACHED = [0, 0, 1277, 1616, 0, 0, 1287, 1626, 0, 0, 1287, 1626, 0, 0]
WRITTEN = [0, 1277, 339, 339, 0, 1287, 339, 339, 0, 1287, 339, 339, 0, 1287]


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return three_compactions(tmp_path_factory.mktemp("cache"))


def test_the_cache_rules_on_a_three_compaction_run(run_folder: Path) -> None:
    result = replay(run_folder)
    calls = result.frame[result.frame["check"]]
    assert result.compactions == 3 and result.settings is not None
    assert result.settings.static_tokens == 608
    assert calls["context_after"].tolist() == CONTEXTS
    assert np.flatnonzero(calls["compaction"].to_numpy()).tolist() == COMPACTED
    assert calls["cached_tokens"].tolist() == CACHED
    assert calls["cache_write_tokens"].tolist() == WRITTEN
    assert result.total_input_tokens == sum(CONTEXTS) == 19_673
    assert result.cached_input_tokens == 1277 + 1616 + 2 * (1287 + 1626) == 8_719
    assert result.cache_write_tokens == 1277 + 2 * 339 + 2 * (1287 + 2 * 339) + 1287 == 7_172

    # gpt-4o-mini: input $0.15 per million tokens, a cached read $0.075, writes not billed apart
    assert llm.token_prices("gpt-4o-mini") == (1.5e-07, 6e-07)
    assert llm.cache_prices("gpt-4o-mini") == llm.CachePrices(read=7.5e-08)
    uncached = 19_673 * 1.5e-07
    cached = (19_673 - 8_719) * 1.5e-07 + 8_719 * 7.5e-08
    assert result.uncached_cost_usd == pytest.approx(uncached)  # the summarizer is offline: 0
    assert result.cached_cost_usd == pytest.approx(cached)
    assert result.estimated_cost_usd == pytest.approx(cached)

    # Each compaction: its span is its own call and the calls until the next one (or the end).
    # The rebuild: at the compaction's call the 948 tokens it could not read (only the static
    # context stays, and it is under the minimum), at the next the 948 the compaction's call
    # read; then the cache is warm again (1287 reaches the minimum).
    frame = compaction_costs_df(run_folder)
    assert list(frame.columns) == [name for name, _ in CACHE_COST_COLUMNS]
    assert frame["source"].tolist() == ["modelled"] * 3  # the scripted model reports no usage
    assert frame["model"].tolist() == ["gpt-4o-mini"] * 3
    assert frame["calls"].tolist() == [4, 4, 2]
    assert frame["tokens_removed"].tolist() == [2294 - 948, 2304 - 948, 2304 - 948]
    assert frame["cached_tokens"].tolist() == [1287 + 1626, 1287 + 1626, 0]
    assert frame["rebuild_tokens"].tolist() == [948 + 948] * 3
    rebuild = (948 + 948) * (1.5e-07 - 7.5e-08)  # each at the input price, not cached
    saved = [4 * 1346 * 7.5e-08, 4 * 1356 * 7.5e-08, 2 * 1356 * 7.5e-08]
    assert frame["summary_cost_usd"].tolist() == [0.0, 0.0, 0.0]
    assert frame["rebuild_cost_usd"].tolist() == pytest.approx([rebuild] * 3)
    assert frame["saved_cost_usd"].tolist() == pytest.approx(saved)
    assert frame["net_cost_usd"].tolist() == pytest.approx([rebuild - s for s in saved])


def test_a_provider_that_bills_cache_writes(run_folder: Path) -> None:
    """claude-sonnet-4-5 bills a written token at 1.25 times the input price: the same run's
    calls (tokens as recorded) at its prices."""
    assert llm.token_prices("claude-sonnet-4-5") == (3e-06, 1.5e-05)
    assert llm.cache_prices("claude-sonnet-4-5") == llm.CachePrices(3e-07, 3.75e-06, 1024)
    frame = compaction_costs_df(run_folder, model="claude-sonnet-4-5")
    assert frame["rebuild_tokens"].tolist() == [948 + 948] * 3
    # the compaction's call read its 948 at the input price (it wrote nothing: under the
    # minimum), the next call the same 948 at the write price (it wrote its 1287 to the cache)
    rebuild = 948 * (3e-06 - 3e-07) + 948 * (3.75e-06 - 3e-07)
    saved = [4 * 1346 * 3e-07, 4 * 1356 * 3e-07, 2 * 1356 * 3e-07]
    assert frame["rebuild_cost_usd"].tolist() == pytest.approx([rebuild] * 3)
    assert frame["net_cost_usd"].tolist() == pytest.approx([rebuild - s for s in saved])
    assert (frame["net_cost_usd"] > 0).all()  # at Anthropic's prices none paid for itself


def test_a_model_without_cache_prices_has_no_cached_cost(run_folder: Path) -> None:
    """gpt-3.5-turbo has list prices and no cache prices in the map: no discount is assumed,
    the cached cost is NaN, and the estimate is the uncached one, as before caching counted."""
    per_in, _ = llm.token_prices("gpt-3.5-turbo") or (math.nan, math.nan)
    assert per_in > 0 and llm.cache_prices("gpt-3.5-turbo") is None
    result = replay(run_folder, model="gpt-3.5-turbo")
    assert math.isnan(result.cached_cost_usd)
    assert result.uncached_cost_usd == pytest.approx(result.total_input_tokens * per_in)
    assert result.estimated_cost_usd == result.uncached_cost_usd
    for fast in (False, True):
        row = sweep(run_folder, thresholds=[0.5], fast=fast, model="gpt-3.5-turbo").frame.iloc[0]
        before = row["total_input_tokens"] * per_in  # the estimate before caching counted
        assert row["uncached_cost_usd"] == pytest.approx(before)
        assert row["estimated_cost_usd"] == row["uncached_cost_usd"]
    frame = compaction_costs_df(run_folder, model="gpt-3.5-turbo")
    assert frame["summary_cost_usd"].tolist() == [0.0, 0.0, 0.0]
    for column in ("rebuild_cost_usd", "saved_cost_usd", "net_cost_usd"):
        assert frame[column].isna().all()
    assert frame["rebuild_tokens"].tolist() == [1896] * 3  # the tokens are still counted


def test_recorded_usage_is_used_where_the_provider_reported_it(tmp_path: Path) -> None:
    """With the provider's cached tokens in usage.jsonl, a compaction is priced from them: here
    each call billed 7 tokens more than memorylab counted, and the cache served 1280 of the
    1284 or 1294 and 1536 of the 1623 or 1633 the previous call read (OpenAI caches in steps
    of 128 tokens)."""
    served = [0, 0, 1280, 1536, 0, 0, 1280, 1536, 0, 0, 1280, 1536, 0, 0]
    reported = [
        ChatReply(content="Noted: done.", input_tokens=t + 7, cached_tokens=c, output_tokens=3)
        for t, c in zip(CONTEXTS, served, strict=True)
    ]
    folder = three_compactions(tmp_path, reported)
    usage = [json.loads(line) for line in (folder / "usage.jsonl").read_text().splitlines()]
    assert [u["compacted"] for u in usage].count(True) == 3
    frame = compaction_costs_df(folder)
    assert frame["source"].tolist() == ["recorded"] * 3
    assert frame["cached_tokens"].tolist() == [1280 + 1536, 1280 + 1536, 0]
    # the rebuild from the reported figures: at the compaction's call its 955 input tokens
    # (none read from the cache), then what the previous call read and this one did not: 955,
    # 1294 - 1280 = 14 and 1633 - 1536 = 97 (the last span ends after two calls)
    assert frame["rebuild_tokens"].tolist() == [955 + 955 + 14 + 97] * 2 + [955 + 955]
    per_token = 1.5e-07 - 7.5e-08  # OpenAI: not read from the cache costs the input price
    assert frame["rebuild_cost_usd"].tolist() == pytest.approx(
        [2021 * per_token, 2021 * per_token, 1910 * per_token]
    )
    saved = [4 * 1346 * 7.5e-08, 4 * 1356 * 7.5e-08, 2 * 1356 * 7.5e-08]  # tokens as recorded
    assert frame["saved_cost_usd"].tolist() == pytest.approx(saved)


def test_the_bundled_workspace() -> None:
    workspace = bundled_workspace("memorylab")
    frame = compaction_costs_df(workspace)
    records = memory_df(workspace)
    assert set(frame["agent"]) == set(records["agent"]) and len(frame) == 16
    for agent, part in frame.groupby("agent", observed=True):  # recorded where usage.jsonl is
        reported = (workspace / "agents" / str(agent) / "usage.jsonl").is_file()
        assert set(part["source"]) == {"recorded" if reported else "modelled"}
    at_claude = compaction_costs_df(workspace, model="claude-sonnet-4-5")
    assert set(at_claude["source"]) == {"modelled"}  # another model's cache: not what was reported
    parts = frame["summary_cost_usd"] + frame["rebuild_cost_usd"] - frame["saved_cost_usd"]
    assert frame["net_cost_usd"].tolist() == pytest.approx(parts.tolist())
    assert (frame["calls"] >= 1).all() and (frame["rebuild_tokens"] > 0).all()
    table = cost_audit(workspace).text()  # the audit result (issue 37)
    assert table.columns[0] == "agent" and table["net (USD)"].str.startswith(("$", "-$")).all()
    axes = plot_compaction_costs(frame)
    assert len(axes.patches) == 3 * len(frame)  # summary, rebuild and saving per compaction
    assert axes.get_xticklabels()[0].get_text() == "BugHunter #1"
    axes.figure.canvas.draw()
    legend = axes.get_legend()
    assert legend is not None  # outside the axes, on the right, as every plot's
    assert legend.get_window_extent().x0 >= axes.get_window_extent().x1
    assert axes.yaxis.get_offset_text().get_text() == ""
    assert all("e" not in t.get_text() for t in axes.get_yticklabels())


# --------------------------------------------------------------------------- fast and exact


def test_the_fast_sweep_prices_the_cache_as_the_exact_replay() -> None:
    """With summaries of exactly the modelled size, the fast engine's cached tokens and costs
    are the exact replay's, with a static context under and over the cache's minimum and a
    provider that bills writes."""
    from test_growth import SizedSummarizer, transcript

    messages = transcript(300)
    grid = {"thresholds": [0.5, 0.9, 1500], "context_lengths": [2000, 4000]}
    columns = ["compactions", "total_input_tokens", "cached_input_tokens", "estimated_cost_usd",
               "uncached_cost_usd"]  # fmt: skip
    for system_prompt in ("Be brief.", "You are careful. " * 260):
        for model in ("gpt-4o-mini", "claude-sonnet-4-5"):
            options: dict[str, Any] = {"max_summary_tokens": 60, "model": model}
            options["system_prompt"] = system_prompt
            fast = sweep(messages, **grid, fast=True, summary_ratio=0.2, **options)
            exact = sweep(messages, **grid, summarizer=SizedSummarizer(0.2, 10_000, model),
                          cache=False, fast=False, **options)  # fmt: skip
            pd.testing.assert_frame_equal(fast.frame[columns], exact.frame[columns])
            assert (fast.frame["cached_input_tokens"] > 0).any()


@pytest.mark.parametrize("agent", ["BugHunter", "DataEngineer", "Researcher"])
def test_fast_and_exact_cached_costs_agree_on_the_bundled_workspace(agent: str) -> None:
    """The bundled runs (restarts, the turn in progress kept, tool schemas, contexts either side
    of the minimum). With summaries of exactly the modelled size, the fast engine's figures and
    cached costs are the exact replay's, at every threshold. With the sizes modelled (the
    calibrated sweep): the fast sweep's tolerance against exact replays (compactions within 2),
    and where its compactions are the replay's, the replay validation's (tokens within 2 %)
    applied to the cached cost; a modelled summary size that moves a compaction moves the cost
    with it (DataEngineer at 0.9: 6 compactions against 5, 2.4 %), which the exact sizes above
    show is the size model's error, not the cost's."""
    from test_growth import SizedSummarizer

    rows = memory_df(bundled_workspace("memorylab") / "agents" / agent)
    thresholds = [0.5, 0.7, 0.9]
    size = SummarySize(ratio=0.2)
    sized = sweep(rows, thresholds=thresholds, fast=True, summary_size=size).frame
    for row in sized.itertuples():
        made = SizedSummarizer(0.2, 10_000, "gpt-4o-mini")
        exactly = replay(rows, threshold=row.threshold, summarizer=made, summary_size=size,
                         cache=False)  # fmt: skip
        assert (row.compactions, row.total_input_tokens, row.cached_input_tokens) == (
            exactly.compactions,
            exactly.total_input_tokens,
            exactly.cached_input_tokens,
        )
        assert row.estimated_cost_usd == pytest.approx(exactly.cached_cost_usd)
    fast = sweep(rows, thresholds=thresholds, fast=True).frame
    exact = sweep(rows, thresholds=thresholds, fast=False).frame
    apart = (fast["compactions"] - exact["compactions"]).abs()
    assert apart.max() <= 2
    same = apart == 0
    assert same.sum() >= len(same) - 1
    cost, exact_cost = fast["estimated_cost_usd"][same], exact["estimated_cost_usd"][same]
    assert ((cost - exact_cost).abs() <= 0.02 * exact_cost).all(), (cost, exact_cost)
    assert (exact["estimated_cost_usd"] < exact["uncached_cost_usd"]).all()  # gpt-4o-mini caches
    recorded = exact[exact["recorded"]].iloc[0]
    direct = replay(rows)
    assert recorded["cached_input_tokens"] == direct.cached_input_tokens
    assert recorded["estimated_cost_usd"] == pytest.approx(direct.cached_cost_usd)


@settings(deadline=None, max_examples=60)
@given(
    st.lists(st.integers(1, 300), min_size=1, max_size=150),
    st.integers(200, 5000),
    st.integers(1, 400),
    st.integers(0, 1500),
    st.integers(0, 10**6),
    st.sampled_from([1, 512, 1024]),
)
def test_the_fast_cache_sums_are_the_call_by_call_rules(
    tokens: list[int], trigger: int, summary: int, static: int, seed: int, least: int
) -> None:
    """The fast engine's closed form against :func:`cache_calls` on a plain loop over the
    messages: random checks, restarts and a static context."""
    rng = random.Random(seed)
    count = len(tokens)
    checks = [rng.random() < 0.6 for _ in tokens]
    restarts = sorted({rng.randrange(1, count) for _ in range(rng.randint(0, 2))} if count > 1
                      else set())  # fmt: skip
    prefix = Prefix.of(np.array(tokens, dtype=np.int64), np.array(checks))
    outcome = simulate(prefix, trigger, overhead=5, size=SummarySize(), budget=summary,
                       static_tokens=static, restarts=restarts, cache_min_tokens=least)  # fmt: skip
    contexts: list[int] = []
    first: list[bool] = []
    kept: list[int | None] = []
    context, fresh, compacted = static, True, False
    for i, t in enumerate(tokens):
        # a new process reads nothing preloaded here (no preload callback); one starting just
        # after a compaction's check goes on from the summary, as the engine models it
        if i in restarts and not compacted:
            context, fresh = static, True
        compacted = False
        context += t
        if not checks[i]:
            continue
        compacted = context >= trigger
        if compacted:
            context = static + min(summary, max(1, context - static)) + 5
        contexts.append(context)
        first.append(fresh)
        kept.append(static if compacted else None)
        fresh = False
    reads, writes = cache_calls(contexts, first, kept, least)
    assert outcome.total_input_tokens == sum(contexts)
    assert (outcome.cached_tokens, outcome.cache_write_tokens) == (sum(reads), sum(writes))


def test_the_call_rules() -> None:
    # a process's first call reads nothing; then the previous context, if at least the minimum
    assert cache_calls([1500, 1600, 1700], [True, False, False], [None] * 3, 1024) == (
        [0, 1500, 1600],
        [1500, 100, 100],
    )
    # after a compaction only the kept prefix (here 1100 tokens of static context) is read
    assert cache_calls([1500, 1200, 1300], [True, False, False], [None, 1100, None], 1024) == (
        [0, 1100, 1200],
        [1500, 100, 100],
    )
    # a restart starts cold; under the minimum nothing is read or written
    assert cache_calls([1500, 900, 1100], [True, True, False], [None] * 3, 1024) == (
        [0, 0, 0],
        [1500, 0, 1100],
    )
