"""compare_summarizers offline: specs, failures as rows, tables, executors, progress, loops."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from memorylab import Conversation
from memorylab.compress import ExtractiveSummarizer, ScriptedSummarizer, Summary
from memorylab.errors import InvalidSetting, ModelUnavailable
from memorylab.evaluate import (
    BASELINES,
    EXISTING,
    Case,
    Fact,
    Score,
    cases_from_workspace,
    compare_summarizers,
    default_cache_dir,
    fact_survival_table,
    markdown_table,
    summary_table,
)
from memorylab.evaluate._compare import resolve_summarizers

HISTORY = (
    {"role": "user", "content": "Deploy the API; the config lives at /srv/api/config.yaml."},
    {"role": "assistant", "content": "Staging listens on port 8443."},
    {"role": "user", "content": "We decided to use blue-green deploys."},
)
FACTS = (
    Fact("f1", "path", "/srv/api/config.yaml", 0),
    Fact("f2", "number", "port 8443", 1),
    Fact("f3", "decision", "use blue-green deploys", 2),
)


def cases(n: int = 3) -> list[Case]:
    return [Case(f"c{i}", HISTORY, FACTS) for i in range(n)]


class SyncOnly:
    """A user's summarizer with a blocking summarize() and no asummarize()."""

    name = "mine"

    def summarize(self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None
                  ) -> Summary:  # fmt: skip
        return Summary(text="config /srv/api/config.yaml", model=self.name, cost_usd=0.0)


def test_baselines_and_long_form_columns() -> None:
    result = compare_summarizers(cases(), list(BASELINES), progress=False, cache_dir=False)
    df = result.frame
    assert list(df.columns) == ["case", "summarizer", "scorer", "metric", "value", "n",
                                "explanation", "error", "items", "flag"]  # fmt: skip
    assert df.value.dtype == float and df.n.dtype == float
    assert set(df.summarizer) == set(BASELINES)
    assert set(df.scorer) == {"compression", "latency", "cost", "fact_recall", "probe_qa"}
    assert df.error.isna().all()
    overall = df[(df.scorer == "fact_recall") & (df.metric == "overall")]
    assert (overall.value == 1.0).all()  # a short history fits every budget
    assert (overall.n == 3).all()
    assert result.run["requests"] == 0


def test_failures_become_rows_and_the_rest_goes_on() -> None:
    flaky = ScriptedSummarizer(["config /srv/api/config.yaml"], fail_on=[1],
                               error=ModelUnavailable, name="flaky")  # fmt: skip

    def broken(sample: Any) -> float:
        raise RuntimeError("scorer bug")

    result = compare_summarizers(cases(), [flaky, "memorylab/truncate"],
                                 ["fact_recall", broken], progress=False, cache_dir=False)  # fmt: skip
    df = result.frame
    errors = df[df.metric == "error"]
    summarize_errors = errors[errors.scorer == "summarize"]
    assert len(summarize_errors) == 1
    assert summarize_errors.error.iloc[0].startswith("ModelUnavailable: flaky: scripted")
    assert len(errors[errors.scorer == "broken"]) == 5  # 6 summaries, one failed
    assert errors[errors.scorer == "broken"].error.str.contains("RuntimeError: scorer bug").all()
    table = summary_table(result).frame
    assert table.loc["flaky", "errors"] == 1 + 2 and table.loc["memorylab/truncate", "errors"] == 3
    assert table.loc["flaky", "fact_recall.path"] == 1.0


def test_summarizer_specs() -> None:
    resolved = resolve_summarizers(["memorylab/extractive", SyncOnly(), "memorylab/head-tail"])
    assert list(resolved) == ["memorylab/extractive", "mine", "memorylab/head-tail"]
    assert isinstance(resolved["memorylab/extractive"], ExtractiveSummarizer)
    assert list(resolve_summarizers({"a": "memorylab/truncate", "b": "memorylab/truncate"})) == ["a", "b"]
    with pytest.raises(InvalidSetting, match="both named 'memorylab/truncate'"):
        resolve_summarizers(["memorylab/truncate", "memorylab/truncate"])
    with pytest.raises(InvalidSetting, match="unknown memorylab summarizer"):
        resolve_summarizers("memorylab/magic")
    with pytest.raises(InvalidSetting):
        resolve_summarizers([42])  # type: ignore[list-item]
    with pytest.raises(InvalidSetting):
        resolve_summarizers([])
    model = resolve_summarizers("gpt-4o-mini", {"timeout": 5})["gpt-4o-mini"]
    assert model.retry.timeout == 5


def test_a_sync_summarizer_and_a_budget() -> None:
    result = compare_summarizers(cases(1), [SyncOnly(), "memorylab/extractive"], ["compression"],
                                 max_tokens=40, progress=False, cache_dir=False)  # fmt: skip
    df = result.frame
    tokens = df[df.metric == "summary_tokens"].set_index("summarizer").value
    assert tokens["mine"] > 0 and tokens["memorylab/extractive"] <= 40


def test_bad_arguments() -> None:
    with pytest.raises(InvalidSetting, match="concurrency"):
        compare_summarizers(cases(), BASELINES, concurrency=0)
    with pytest.raises(InvalidSetting, match="max_cost_usd"):
        compare_summarizers(cases(), BASELINES, max_cost_usd=-1)
    with pytest.raises(InvalidSetting, match="max_tokens"):
        compare_summarizers(cases(), BASELINES, max_tokens=0)
    with pytest.raises(InvalidSetting, match="no cases"):
        compare_summarizers([], BASELINES)
    with pytest.raises(InvalidSetting, match="unique"):
        compare_summarizers([*cases(1), *cases(1)], BASELINES)
    with pytest.raises(InvalidSetting, match="Case objects"):
        compare_summarizers([{"id": "x"}], BASELINES)  # type: ignore[list-item]
    with pytest.raises(InvalidSetting, match="repeated"):
        compare_summarizers(cases(), BASELINES, ["latency", "latency"])


def test_existing_summaries_of_a_workspace_are_scored_without_a_model(
    isolated_workspace: Path,
) -> None:
    conv = Conversation(agent_name="Ops")
    for message in HISTORY:
        conv.add(message["role"], message["content"])
    conv.compact("Config /srv/api/config.yaml; blue-green deploys.", latency_s=2.0, cost_usd=0.01)
    found = cases_from_workspace(isolated_workspace)
    result = compare_summarizers(found, [EXISTING, "memorylab/truncate"],
                                 ["latency", "cost", "fact_recall"], progress=False)  # fmt: skip
    df = result.frame
    mine = df[df.summarizer == EXISTING].set_index(["scorer", "metric"]).value
    assert mine["latency", "seconds"] == 2.0 and mine["cost", "usd"] == 0.01
    assert mine["fact_recall", "path"] == 1.0
    assert result.run["requests"] == 0
    # a case without a summary: an error row for memorylab/existing only
    result = compare_summarizers(cases(1), [EXISTING], ["latency"], progress=False)
    df = result.frame
    assert df.metric.tolist() == ["error"] and "has no existing summary" in df.error.iloc[0]


def test_with_summaries() -> None:
    result = compare_summarizers(cases(2), ["memorylab/truncate"], ["compression"],
                                 progress=False, cache_dir=False)  # fmt: skip
    df, summaries = result.frame, result.summaries
    assert len(df) == 6 and len(summaries) == 2
    assert summaries.text.str.contains("8443").all()
    assert set(summaries.columns) >= {"model", "latency_s", "cost_usd", "cached", "error"}


def test_tables() -> None:
    rows = []
    for summarizer, kept in (("a", [1.0, 0.0]), ("b", [1.0, 1.0])):
        for case, (value, n) in enumerate(zip(kept, (1, 3), strict=True)):
            rows.append({"case": f"c{case}", "summarizer": summarizer, "scorer": "fact_recall",
                         "metric": "number", "value": value, "n": n, "explanation": "",
                         "error": None})  # fmt: skip
            rows.append({"case": f"c{case}", "summarizer": summarizer, "scorer": "fact_recall",
                         "metric": "overall", "value": value, "n": n, "explanation": "",
                         "error": None})  # fmt: skip
            rows.append({"case": f"c{case}", "summarizer": summarizer, "scorer": "latency",
                         "metric": "seconds", "value": 2.0 * (case + 1), "n": None,
                         "explanation": "", "error": None})  # fmt: skip
    df = pd.DataFrame(rows)
    table = summary_table(df).frame
    assert table.loc["a", "fact_recall.number"] == pytest.approx(0.25)  # 1 of 4 facts, weighted
    assert summary_table(df, weighted=False).frame.loc["a", "fact_recall.number"] == pytest.approx(0.5)
    assert table.loc["a", "latency.seconds"] == 3.0 and table.loc["b", "cases"] == 2
    assert list(summary_table(df, ["latency.seconds"]).frame.columns) == ["latency.seconds", "cases", "errors"]
    with pytest.raises(InvalidSetting):
        summary_table(df, ["nope.nothing"])
    survival = fact_survival_table(df)
    assert list(survival.frame.columns) == ["number", "overall", "facts"]
    assert survival.frame.loc["b", "overall"] == 1.0 and survival.frame.loc["a", "facts"] == 4
    text = markdown_table(survival, percent=["number", "overall"])
    assert text.splitlines()[:3] == [
        "| summarizer | number | overall | facts |",
        "|---|---:|---:|---:|",
        "| a | 25% | 25% | 4 |",
    ]
    nan_table = pd.DataFrame({"x": [math.nan, 12345.0, 0.123456]}, index=["p", "q", "r"])
    assert markdown_table(nan_table).splitlines()[2:] == ["| p | – |", "| q | 12,345 |", "| r | 0.123 |"]


def test_thread_pool_executor_gives_the_same_scores() -> None:
    plain = compare_summarizers(cases(), list(BASELINES), ["compression", "fact_recall"],
                                progress=False, cache_dir=False)  # fmt: skip
    with ThreadPoolExecutor(max_workers=3) as pool:
        pooled = compare_summarizers(cases(), list(BASELINES), ["compression", "fact_recall"],
                                     progress=False, cache_dir=False, executor=pool)  # fmt: skip
    pd.testing.assert_frame_equal(plain.frame, pooled.frame)


def test_runs_inside_a_running_event_loop() -> None:
    async def notebook_cell() -> pd.DataFrame:
        return compare_summarizers(cases(1), ["memorylab/truncate"], ["compression"],
                                   progress=False, cache_dir=False)  # fmt: skip

    result = asyncio.run(notebook_cell())
    df = result.frame
    assert len(df) == 3


def test_progress_bar(capsys: pytest.CaptureFixture[str]) -> None:
    compare_summarizers(cases(), list(BASELINES), ["compression"], cache_dir=False, progress=True)
    assert "compare" in capsys.readouterr().err


def test_function_scorer_returning_scores() -> None:
    def words(sample: Any) -> dict[str, Any]:
        return {"words": len(sample.text.split()), "flag": Score(1.0, "always")}

    result = compare_summarizers(cases(1), ["memorylab/truncate"], [words], progress=False,
                                 cache_dir=False)  # fmt: skip
    df = result.frame
    assert set(df.metric) == {"words", "flag"} and set(df.scorer) == {"words"}


def test_default_cache_dir(isolated_workspace: Path, monkeypatch: pytest.MonkeyPatch,
                           tmp_path: Path) -> None:  # fmt: skip
    assert default_cache_dir() == isolated_workspace / ".cache" / "llm"
    monkeypatch.setenv("MEMORYLAB_CACHE_DIR", str(tmp_path / "c"))
    assert default_cache_dir() == tmp_path / "c"


def test_process_pool_executor_pickles_the_work() -> None:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    plain = compare_summarizers(cases(2), list(BASELINES), ["compression", "fact_recall"],
                                progress=False, cache_dir=False)  # fmt: skip
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=2, mp_context=context) as pool:
        pooled = compare_summarizers(cases(2), list(BASELINES), ["compression", "fact_recall"],
                                     progress=False, cache_dir=False, executor=pool)  # fmt: skip
    pd.testing.assert_frame_equal(plain.frame, pooled.frame)


def test_summarizers_and_scorers_of_your_own_go_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """A registered name works wherever a built-in one does; nothing checks built-in types."""
    import threading

    from memorylab.compress import BaseSummarizer, register_summarizer
    from memorylab.compress import _summarizers as summarizers
    from memorylab.evaluate import BaseScorer, Sample, register_scorer
    from memorylab.evaluate import _scorers as scorers

    monkeypatch.setattr(summarizers, "_REGISTRY", dict(summarizers._REGISTRY))
    monkeypatch.setattr(scorers, "_REGISTRY", dict(scorers._REGISTRY))
    threads: list[str] = []

    @register_summarizer("test/first")
    class First(BaseSummarizer):
        name = "test/first"

        def summarize(self, messages: Sequence[Mapping[str, Any]], *,
                      max_tokens: int | None = None) -> Summary:  # fmt: skip
            threads.append(threading.current_thread().name)
            return Summary(str(messages[0]["content"]), model=self.name, cost_usd=0.0)

    @register_scorer("test/length")
    class Length(BaseScorer):
        name = "test/length"

        def score(self, sample: Sample) -> dict[str, Score]:
            threads.append(threading.current_thread().name)
            return {"chars": Score(len(sample.text))}

    result = compare_summarizers(cases(2), ["test/first"], ["test/length", "fact_recall"],
                                 progress=False, cache_dir=False)  # fmt: skip
    df = result.frame
    assert df.error.isna().all() and set(df.summarizer) == {"test/first"}
    chars = df[df.metric == "chars"].value
    assert list(chars) == [len(HISTORY[0]["content"])] * 2
    assert len(threads) == 4 and threading.main_thread().name not in threads  # off the loop


def test_duck_typed_summarizers_and_scorers_get_the_documented_defaults(tmp_path: Path) -> None:
    """A user's summarizer that says nothing may call a model (local False), but the cost guard
    does not run it to estimate nothing; a scorer that says nothing measures quality and is
    awaited (offline False), with no model calls estimated."""
    from memorylab.evaluate import estimate_cost, get_scorer

    calls: list[int] = []

    class Counting(SyncOnly):
        def summarize(self, messages: Sequence[Mapping[str, Any]], *,
                      max_tokens: int | None = None) -> Summary:  # fmt: skip
            calls.append(1)
            return super().summarize(messages, max_tokens=max_tokens)

    class Plain:
        name = "plain"

        async def ascore(self, sample: Any, llm: Any) -> dict[str, Score]:
            return {"value": Score(1.0)}

    summarizer = resolve_summarizers([Counting()])["mine"]
    assert summarizer.local is False and summarizer.estimate([]) == []
    scorer = get_scorer(Plain())
    assert scorer.quality is True and scorer.offline is False and scorer.estimate(cases(1)[0], 9) == []
    assert estimate_cost(cases(2), [Counting()], ["compression"], cache_dir=tmp_path).empty
    assert calls == []
    result = compare_summarizers(cases(1), [Counting()], [Plain()], progress=False, cache_dir=False)
    assert result.quality == {"plain": True} and result.frame.value.tolist() == [1.0]
    assert calls == [1]
