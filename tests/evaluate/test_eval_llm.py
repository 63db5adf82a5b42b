"""compare_summarizers against local OpenAI-compatible fake servers: several "models" with
different replies, latencies and failures; the on-disk cache; the cost guard; model scorers."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from fakes import FakeOpenAIServer, FakeRequest, HTTPError, Reply
from memorylab import LiteLLMSummarizer
from memorylab.errors import BudgetExceeded
from memorylab.evaluate import (
    Case,
    Fact,
    Probe,
    compare_summarizers,
    estimate_cost,
    get_scorer,
    summary_table,
)
from memorylab.evaluate._cache import LLMCache
from memorylab.llm import RetryPolicy

HISTORY = (
    {"role": "user", "content": "Deploy the API. Config: /srv/api/config.yaml"},
    {"role": "assistant", "content": "Staging listens on port 8443; we decided to use blue-green deploys."},
)
FACTS = (
    Fact("f1", "path", "/srv/api/config.yaml", 0),
    Fact("f2", "number", "port 8443", 1),
    Fact("f3", "decision", "use blue-green deploys", 1),
)
PROBES = (Probe("p1", "f2", "Which port does staging listen on?", "8443"),)


def cases(n: int = 4) -> list[Case]:
    return [
        Case(f"c{i}", (*HISTORY, {"role": "user", "content": f"This is ticket {i}."}), FACTS, PROBES)
        for i in range(n)
    ]


def summarizer(model: str, server: FakeOpenAIServer, *, retries: int = 2, timeout: float = 60,
               **options: Any) -> LiteLLMSummarizer:  # fmt: skip
    fast = RetryPolicy(timeout=timeout, retries=retries, backoff_base=0.01, backoff_max=0.05)
    return LiteLLMSummarizer(model, llm_args={"api_base": server.base_url, "api_key": "x"},
                             retry=fast, **options)  # fmt: skip


@pytest.fixture
def servers() -> Iterator[dict[str, FakeOpenAIServer]]:
    """good: keeps everything; lossy: drops the port; flaky: a 429 then good; slow: 0.2 s."""
    good = "Config /srv/api/config.yaml; staging port 8443; blue-green deploys."

    def good_with_ticket(request: FakeRequest) -> Reply:
        prompt = request.body["messages"][-1]["content"]
        if "Question:" in prompt:
            return Reply("8443" if "8443" in prompt else "UNKNOWN")
        ticket = re.search(r"ticket \d+", prompt)
        return Reply(good + (f" ({ticket.group(0)})" if ticket else ""), delay=0.05)

    with (
        FakeOpenAIServer(good_with_ticket) as a,
        FakeOpenAIServer(Reply("Config /srv/api/config.yaml; blue-green deploys.")) as b,
        FakeOpenAIServer([HTTPError(429, retry_after=0)], default=Reply(good)) as c,
        FakeOpenAIServer(Reply(good, delay=0.2)) as d,
    ):
        yield {"good": a, "lossy": b, "flaky": c, "slow": d}


SCORERS = ["compression", "latency", "cost", "fact_recall"]


def value(df: pd.DataFrame, summarizer: str, scorer: str, metric: str) -> float:
    rows = df[(df.summarizer == summarizer) & (df.scorer == scorer) & (df.metric == metric)]
    return float(rows["value"].mean())


def test_several_models_with_different_replies_and_failures(
    servers: dict[str, FakeOpenAIServer], tmp_path: Path
) -> None:
    dead = FakeOpenAIServer(HTTPError(500))
    with dead:
        summarizers = {
            "good": summarizer("openai/gpt-4o-mini", servers["good"]),
            "lossy": summarizer("openai/lossy", servers["lossy"]),
            "flaky": summarizer("openai/flaky", servers["flaky"]),
            "dead": summarizer("openai/dead", dead, retries=1),
            "floor": "memorylab/truncate",
        }
        result = compare_summarizers(cases(), summarizers, SCORERS, cache_dir=tmp_path / "cache",
                                     concurrency=4, progress=False)  # fmt: skip
        df = result.frame
        assert dead.request_count == 8  # 4 cases x (1 + 1 retry)
    assert value(df, "good", "fact_recall", "overall") == 1.0
    assert value(df, "lossy", "fact_recall", "number") == 0.0  # exactly the port is lost
    assert value(df, "lossy", "fact_recall", "path") == 1.0
    assert value(df, "flaky", "fact_recall", "overall") == 1.0  # the 429 was retried
    errors = df[df.metric == "error"]
    assert set(errors.summarizer) == {"dead"} and len(errors) == 4
    assert errors.error.str.contains("ModelUnavailable").all()
    assert value(df, "good", "cost", "usd") > 0  # gpt-4o-mini has a litellm price
    assert pd.isna(value(df, "lossy", "cost", "usd"))  # an unmapped model: NaN, not a crash
    table = summary_table(result).frame
    assert table.loc["dead", "errors"] == 4 and table.loc["good", "errors"] == 0
    assert list(table.index) == ["good", "lossy", "flaky", "dead", "floor"]


def test_rerun_is_served_from_the_cache(servers: dict[str, FakeOpenAIServer], tmp_path: Path) -> None:
    summarizers = {"good": summarizer("openai/gpt-4o-mini", servers["good"]),
                   "flaky": summarizer("openai/flaky", servers["flaky"])}  # fmt: skip
    reader = get_scorer("probe_qa", reader="openai/reader",
                        llm_args={"api_base": servers["good"].base_url, "api_key": "x"})  # fmt: skip
    first = compare_summarizers(cases(), summarizers, [*SCORERS, reader],
                                cache_dir=tmp_path, progress=False)  # fmt: skip
    sent = {name: s.request_count for name, s in servers.items()}
    # 4 summaries; reader prompts: 4 distinct summaries of "good", 1 repeated one of "flaky"
    assert sent["good"] == 4 + 5
    assert sent["flaky"] == 1 + 4  # the 429 and its retry, then 3 more summaries
    assert first.run["requests"] == 4 + 4 + 5
    second = compare_summarizers(cases(), summarizers, [*SCORERS, reader],
                                 cache_dir=tmp_path, progress=False)  # fmt: skip
    assert {name: s.request_count for name, s in servers.items()} == sent  # zero requests
    assert second.run["requests"] == 0
    assert second.run["cache_hits"] == 4 + 4 + 8
    assert value(first.frame, "good", "probe_qa", "exact") == 1.0
    pd.testing.assert_frame_equal(first.frame, second.frame)  # identical numbers, latency included
    entries = list((tmp_path).glob("??/*.json"))
    assert len(entries) == 4 + 4 + 5 == len(LLMCache(tmp_path))
    entry = json.loads(entries[0].read_text())
    assert "api_key" not in entry["request"] and "timeout" not in entry["request"]


def test_identical_requests_in_one_run_are_sent_once(servers: dict[str, FakeOpenAIServer],
                                                     tmp_path: Path) -> None:  # fmt: skip
    same = [Case(f"same{i}", HISTORY) for i in range(5)]
    compare_summarizers(same, [summarizer("openai/slow", servers["slow"])], ["compression"],
                        cache_dir=tmp_path, progress=False)  # fmt: skip
    assert servers["slow"].request_count == 1


def test_without_a_cache_every_run_sends(servers: dict[str, FakeOpenAIServer]) -> None:
    for _ in range(2):
        compare_summarizers(cases(2), [summarizer("openai/m", servers["lossy"])], ["compression"],
                            cache_dir=None, progress=False)  # fmt: skip
    assert servers["lossy"].request_count == 4


def test_concurrency_overlaps_slow_calls(servers: dict[str, FakeOpenAIServer]) -> None:
    """Calls overlap up to ``concurrency`` and never beyond, counted at the server (a wall-time
    ratio failed under a parallel suite: the other worker's CPU load, not the overlap, set it)."""
    # No clock: each request waits at the server until 4 are in at once (a client that sent
    # fewer at a time would leave them waiting until the 120 s hang guard broke the barrier).
    four_in = threading.Barrier(4, timeout=120)

    def when_four_are_in(request: FakeRequest) -> Reply:
        four_in.wait()
        return Reply("Config /srv/api/config.yaml; staging port 8443.", delay=0.2)

    with FakeOpenAIServer(when_four_are_in) as server:
        slow = summarizer("openai/slow", server, retries=0)
        result = compare_summarizers(cases(8), [slow], ["latency"], concurrency=4,
                                     cache_dir=None, progress=False)  # fmt: skip
    assert result.frame.error.isna().all(), result.frame.error.dropna().tolist()
    assert server.request_count == 8
    assert server.most_waiting <= 4  # never beyond: within the listen backlog of 5
    with FakeOpenAIServer(Reply("Staging listens on 8443.", delay=0.05)) as one_at_a_time:
        compare_summarizers(cases(4), [summarizer("openai/serial", one_at_a_time)], ["latency"],
                            concurrency=1, cache_dir=None, progress=False)  # fmt: skip
    assert one_at_a_time.request_count == 4 and one_at_a_time.most_waiting == 1


def test_cost_guard_refuses_before_sending(servers: dict[str, FakeOpenAIServer],
                                           tmp_path: Path) -> None:  # fmt: skip
    priced = summarizer("openai/gpt-4o-mini", servers["good"], max_tokens=500)
    estimate = estimate_cost(cases(), [priced], SCORERS, cache_dir=tmp_path)
    [row] = estimate.itertuples()
    assert (row.model, row.calls, row.cached_calls, row.priced) == ("openai/gpt-4o-mini", 4, 0, True)
    assert row.output_tokens == 4 * 500 and row.input_tokens > 4 * 30
    assert row.usd == pytest.approx(row.input_tokens * 0.15e-6 + row.output_tokens * 0.6e-6)
    with pytest.raises(BudgetExceeded, match=r"estimated cost .* is \$0\.00\d+, above max_cost_usd=1e-06"):
        compare_summarizers(cases(), [priced], SCORERS, cache_dir=tmp_path, max_cost_usd=1e-6,
                            progress=False)  # fmt: skip
    assert servers["good"].request_count == 0
    result = compare_summarizers(cases(), [priced], SCORERS, cache_dir=tmp_path, max_cost_usd=1.0,
                                 progress=False)  # fmt: skip
    assert result.run["estimate_usd"] == pytest.approx(row.usd)
    assert 0 < result.run["spent_usd"] < row.usd
    # everything is cached now: the estimate is 0 and even a zero budget runs
    assert estimate_cost(cases(), [priced], SCORERS, cache_dir=tmp_path)["usd"].sum() == 0
    again = compare_summarizers(cases(), [priced], SCORERS, cache_dir=tmp_path, max_cost_usd=0,
                                progress=False)  # fmt: skip
    assert again.run["requests"] == 0


def test_cost_guard_counts_model_scorers(servers: dict[str, FakeOpenAIServer],
                                         tmp_path: Path) -> None:  # fmt: skip
    judge = get_scorer("judge", model="gpt-4o-mini", llm_args={"api_base": servers["good"].base_url})
    estimate = estimate_cost(cases(2), ["memorylab/truncate"], ["compression", judge],
                             cache_dir=tmp_path)  # fmt: skip
    assert list(estimate.model) == ["gpt-4o-mini"] and int(estimate.calls.iloc[0]) == 2
    assert estimate.usd.iloc[0] > 0


def test_unpriced_models_are_named(servers: dict[str, FakeOpenAIServer], tmp_path: Path) -> None:
    result = compare_summarizers(cases(1), [summarizer("openai/lossy", servers["lossy"])], SCORERS,
                                 cache_dir=tmp_path, max_cost_usd=1.0, progress=False)  # fmt: skip
    assert result.run["unpriced_models"] == ["openai/lossy"]
    assert result.run["unpriced_calls"] == 1


def test_model_reader_and_judge(tmp_path: Path) -> None:
    def answer(request: FakeRequest) -> str:
        prompt = request.body["messages"][-1]["content"]
        if "Rate the SUMMARY" in prompt:
            return 'Here you go:\n```json\n{"faithfulness": 5, "coverage": "3/5", "usefulness": 4}\n```'
        return "8443" if "8443" in prompt.split("Question:")[0] else "UNKNOWN"

    with FakeOpenAIServer(answer) as server:
        args = {"api_base": server.base_url, "api_key": "x"}
        scorers = [
            get_scorer("probe_qa", reader="openai/reader", llm_args=args),
            get_scorer("judge", model="openai/judge", llm_args=args),
        ]
        keep = Case("keep", HISTORY, FACTS, PROBES)
        result = compare_summarizers(
            [keep], ["memorylab/head-tail", "memorylab/scripted"], scorers, cache_dir=tmp_path,
            progress=False,
        )  # fmt: skip
        df, summaries = result.frame, result.summaries
        judge_calls = [r for r in server.requests if "Rate the SUMMARY" in r["messages"][-1]["content"]]
        assert len(judge_calls) == 2
        assert "<transcript>" in judge_calls[0]["messages"][-1]["content"]
    assert value(df, "memorylab/head-tail", "probe_qa", "exact") == 1.0
    assert value(df, "memorylab/scripted", "probe_qa", "exact") == 0.0  # "summary" has no port
    assert value(df, "memorylab/head-tail", "judge", "faithfulness") == 1.0
    assert value(df, "memorylab/head-tail", "judge", "coverage") == 0.5
    assert value(df, "memorylab/head-tail", "judge", "overall") == pytest.approx(0.75)
    assert list(summaries.columns[:3]) == ["case", "summarizer", "text"]
    assert summaries.set_index("summarizer").loc["memorylab/scripted", "text"] == "summary"


def test_a_judge_reply_without_ratings_is_an_error_row(tmp_path: Path) -> None:
    with FakeOpenAIServer("I cannot rate this.") as server:
        judge = get_scorer("judge", model="openai/judge",
                           llm_args={"api_base": server.base_url, "api_key": "x"})  # fmt: skip
        result = compare_summarizers(cases(1), ["memorylab/truncate"], ["compression", judge],
                                     cache_dir=tmp_path, progress=False)  # fmt: skip
        df = result.frame
    error = df[df.metric == "error"]
    assert list(error.scorer) == ["judge"] and "no ratings" in error.error.iloc[0]
    assert value(df, "memorylab/truncate", "compression", "summary_tokens") > 0


def test_timeouts_retry_then_become_rows(tmp_path: Path) -> None:
    # 5 s: time for each attempt's request to reach the server at load 20 on 2 cores (0.2 s
    # timed out before 2 of the 4 were sent); the reply is 60 s away (stopping ends the wait).
    with FakeOpenAIServer(Reply("late", delay=60.0)) as server:
        slow = summarizer("openai/slow", server, timeout=5.0, retries=1)
        result = compare_summarizers(cases(2), [slow], ["compression"], cache_dir=tmp_path,
                                     progress=False)  # fmt: skip
        df = result.frame
        assert server.request_count == 4
    assert set(df.metric) == {"error"}
    assert df.error.str.contains("ModelTimeout").all()
