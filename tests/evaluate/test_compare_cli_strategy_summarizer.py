"""Issue 40/41: the strategies' summarizer may be an object (as compare_summarizers takes), so a
model at a local OpenAI-compatible server writes the strategies' summaries, from the library and
from ``memorylab compare --strategy ... -s MODEL --api-base URL`` (the fake server: no network)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes import FakeOpenAIServer
from memorylab import LiteLLMSummarizer
from memorylab.evaluate import cases_from_locomo, compare_strategies
from memorylab.evaluate._cli import main

LOCOMO = Path(__file__).parent / "data" / "locomo_sample.json"
SUMMARY = "Ines Duarte moved to Lisbon."


def _summary_requests(server: FakeOpenAIServer, model: str) -> list[object]:
    return [request for request in server.requests if request.get("model") == model]


def test_compare_strategies_takes_a_summarizer_object() -> None:
    cases = cases_from_locomo(LOCOMO, split="conversation")
    with FakeOpenAIServer(SUMMARY) as server:
        summarizer = LiteLLMSummarizer("openai/summ-library", llm_args={"api_base": server.base_url},
                                       retries=0)  # fmt: skip
        compared = compare_strategies(
            cases, ["summary"], "fact_recall", context_length=256, threshold=0.5,
            summarizer=summarizer, bounds=False, cache_dir=False, progress=False,
        )  # fmt: skip
        assert _summary_requests(server, "summ-library")  # the strategy's compactions called it
    assert compared.runs["compactions"].sum() > 0
    assert compared.runs["summarizer_calls"].sum() == len(_summary_requests(server, "summ-library"))


def test_the_cli_strategies_summarizer_reaches_the_api_base(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with FakeOpenAIServer(SUMMARY) as server:
        code = main([str(LOCOMO), "--split", "conversation", "--strategy", "summary",
                     "--memory-window", "256", "--threshold", "0.5", "-s", "openai/summ",
                     "--api-base", server.base_url, "--scorer", "fact_recall",
                     "--no-cache", "--no-progress"])  # fmt: skip
        err = capsys.readouterr().err
        assert code == 0, err
        assert _summary_requests(server, "summ"), err


def test_the_cli_strategies_take_one_summarizer(capsys: pytest.CaptureFixture[str]) -> None:
    code = main([str(LOCOMO), "--strategy", "summary", "-s", "memorylab/extractive", "-s",
                 "memorylab/full", "--no-cache", "--no-progress"])  # fmt: skip
    assert code == 2
    assert "give it once" in capsys.readouterr().err
