"""The plan tells the truth (issue 39): before its first call a comparison knows the distinct
requests it will send (identical prompts once, what an interrupted run cached counted), the
tokens a server with a prompt cache reads, and the time at the model's measured speed; the
run returns that plan beside its own measured figures, with or without a progress bar.

The server is :class:`PromptCacheServer` (``tests/fakes``): a llama.cpp-like prompt cache with
one slot, words standing for tokens, and the time of a given read and write speed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fakes import FakeOpenAIServer, FakeRequest, PromptCacheServer
from memorylab.evaluate import (
    PlannedCall,
    ProbeQAScorer,
    cases_from_locomo,
    compare_summarizers,
    detectable_difference,
    plan_comparison,
)
from memorylab.llm import ModelSpeed, measure_speed

LOCOMO = Path(__file__).parent / "data" / "locomo_sample.json"
CASES = cases_from_locomo(LOCOMO)
MEMORIES = ["memorylab/full", "memorylab/extractive", "memorylab/none"]
ANSWERS = {p.question: p.answer for case in CASES for p in case.probes}
COUNTING = " ".join(["one"] * 24)  # measure_speed's reply of 24 tokens


def _answer(request: FakeRequest) -> str:
    """A reader that answers each probe with its reference answer (``measure_speed``'s counting
    call with 24 words)."""
    prompt = str(request.body["messages"][-1]["content"])
    if "count from one to fifty" in prompt:
        return COUNTING
    asked = [q for q in ANSWERS if f"Question: {q}" in prompt]
    return ANSWERS[max(asked, key=len)] if asked else "UNKNOWN"


def _within(planned: float, measured: float, factor: float = 1.5) -> bool:
    return measured / factor <= planned <= measured * factor


def test_identical_requests_are_planned_once(tmp_path: Path) -> None:
    """The full history with and without recall, and two scorers asking the same reader the
    same questions, are the same requests: the cache answers the second. Before, the plan
    counted each (the bar never reached its end): 4 x 2 x 9 = 72 where 27 are sent."""
    cache = PromptCacheServer(_answer)
    with FakeOpenAIServer(cache) as server:
        args = {"api_base": server.base_url}
        readers = [ProbeQAScorer("openai/reader", llm_args=args),
                   ProbeQAScorer("openai/reader", llm_args=args, name="again")]  # fmt: skip
        memories = ["memorylab/full", "memorylab/extractive"]
        plan = plan_comparison(CASES, memories, readers, cache_dir=tmp_path / "cache",
                               recall=(0, 2))  # fmt: skip
        result = compare_summarizers(CASES, memories, readers, cache_dir=tmp_path / "cache",
                                     recall=(0, 2), progress=False, concurrency=1)  # fmt: skip
    assert cache.requests == result.run["requests"] == plan.requests == result.plan.requests
    assert plan.requests < 2 * 2 * 2 * len(ANSWERS)
    assert result.run["planned_requests"] == plan.requests


def test_what_an_interrupted_run_cached_is_counted(tmp_path: Path) -> None:
    """After a run that finished part of the probes of each memory, the plan counts those as
    cached and the rest as requests, which is what the next run sends. Before, a scorer was
    cached only when all its calls on a memory were: "0 more cached" while some were."""
    folder = tmp_path / "cache"
    cache = PromptCacheServer(_answer)
    with FakeOpenAIServer(cache) as server:
        reader = ProbeQAScorer("openai/reader", llm_args={"api_base": server.base_url})
        compare_summarizers(CASES, MEMORIES, [reader], cache_dir=folder, progress=False)
        entries = sorted(folder.rglob("*.json"))
        for entry in entries[::3]:  # a third of the calls never finished
            entry.unlink()
        plan = plan_comparison(CASES, MEMORIES, [reader], cache_dir=folder)
        before = cache.requests
        compare_summarizers(CASES, MEMORIES, [reader], cache_dir=folder, progress=False)
    lost = len(entries[::3])
    assert (plan.requests, plan.cached) == (lost, len(entries) - lost)
    assert cache.requests - before == lost
    assert f"({len(entries) - lost} more cached)" in plan.text()


def test_the_plan_is_returned_without_a_progress_bar(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """Before, ``progress=False`` made no plan at all."""
    with FakeOpenAIServer(PromptCacheServer(_answer)) as server:
        reader = ProbeQAScorer("openai/reader", llm_args={"api_base": server.base_url})
        result = compare_summarizers(CASES, MEMORIES, [reader], cache_dir=None,
                                     progress=False)  # fmt: skip
    plan = result.plan
    assert plan is not None and plan.requests == result.run["requests"] == 3 * len(ANSWERS)
    assert plan.probes == len(ANSWERS) and result.run["wall_s"] > 0
    difference = detectable_difference(len(ANSWERS))
    assert f"{len(ANSWERS)} probes per condition: a paired difference of {difference:.0%}" in (
        plan.text())  # fmt: skip
    assert capsys.readouterr().err == ""  # nothing printed


def test_a_run_with_offline_scorers_has_no_plan() -> None:
    result = compare_summarizers(CASES, MEMORIES, ["probe_qa"], cache_dir=None, progress=False)
    assert result.plan is None


def test_the_plan_is_within_1_5x_of_what_the_run_measured(tmp_path: Path) -> None:
    """Requests, tokens processed by the server's prompt cache, and wall time, planned at the
    speed :func:`measure_speed` measured on a sample of the cases' text, against the server's
    counters and the run's clock. Before, every probe was priced as a cold read of its whole
    memory (here ~7x the tokens processed) and replies at their bound."""
    cache = PromptCacheServer(_answer, read_per_s=500, write_per_s=50)
    with FakeOpenAIServer(cache) as server:
        speed = measure_speed("openai/reader", api_base=server.base_url,
                              sample=CASES[0].history_text)  # fmt: skip
        assert speed.tokens_per_char is not None
        reader = ProbeQAScorer("openai/reader", llm_args={"api_base": server.base_url})
        before = (cache.requests, cache.processed)
        result = compare_summarizers(CASES, MEMORIES, [reader], cache_dir=tmp_path / "cache",
                                     recall=(0, 2), progress=False, concurrency=1,
                                     speeds={"openai/reader": speed})  # fmt: skip
    plan = result.plan
    assert plan is not None and plan.seconds is not None
    requests, processed = cache.requests - before[0], cache.processed - before[1]
    print(f"\nplan: {plan.text()}\nmeasured: {requests} requests, {processed} words processed, "
          f"{result.run['wall_s']:.1f} s")  # fmt: skip
    assert plan.requests == requests == result.run["requests"]
    assert _within(plan.processed_tokens, processed), (plan.processed_tokens, processed)
    assert plan.input_tokens > 3 * plan.processed_tokens  # the prompt cache is modelled
    assert _within(plan.seconds, result.run["wall_s"]), (plan.seconds, result.run["wall_s"])
    assert plan.seconds_at_most is not None and plan.seconds_at_most >= plan.seconds


def test_a_memory_not_known_before_the_run_is_planned_from_counts() -> None:
    """A model's summary not cached yet: the reader's calls are the scorer's estimate, each
    probe after the first sharing the memory and the instructions (read once)."""
    reader = ProbeQAScorer("openai/reader", llm_args={"api_base": "http://127.0.0.1:9/v1"})
    calls = reader.estimate(CASES[0], 500)
    assert [c.shared_tokens for c in calls][:2] == [0, calls[1].shared_tokens]
    assert all(isinstance(c, PlannedCall) for c in calls)
    assert calls[1].shared_tokens > 500 and calls[1].input_tokens - calls[1].shared_tokens < 100
    assert all(c.expected_output_tokens <= c.output_tokens for c in calls)


def test_a_plain_tuple_estimate_is_still_read() -> None:
    """A user's scorer that still returns ``(model, input, output)`` tuples: its expected reply
    is its bound."""
    from memorylab.evaluate import BaseScorer, Sample, Score

    class Old(BaseScorer):
        name = "old"

        async def ascore(self, sample: Sample, llm: Any) -> dict[str, Score]:
            reply = await llm.acomplete("openai/old", [{"role": "user", "content": sample.text}],
                                        max_tokens=10)  # fmt: skip
            return {"length": Score(len(reply.text))}

        def estimate(self, case: Any, summary_tokens: int) -> list[PlannedCall]:
            return [("openai/old", summary_tokens, 10)]  # type: ignore[list-item]

    plan = plan_comparison(CASES, ["memorylab/full"], [Old()], cache_dir=False,
                           speeds={"openai/old": ModelSpeed(100.0, 10.0)})  # fmt: skip
    assert plan.requests == len(CASES) and plan.expected_output_tokens == 10 * len(CASES)
    assert plan.seconds == pytest.approx(plan.processed_tokens / 100 + 2 * 10 / 10)
