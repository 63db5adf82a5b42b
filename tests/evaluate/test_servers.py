"""Runs that outgrow one server: the cache key of a served model is what its server says it
serves, one model's requests spread over several servers (each memory's to one), and a Dask
cluster's executor gives the same result with the cache shared (issue 39)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from fakes import FakeOpenAIServer, FakeRequest, Reply
from memorylab import llm
from memorylab.errors import InvalidSetting
from memorylab.evaluate import Case, ProbeQAScorer, cases_from_transcripts, compare_summarizers

CASES = [dataclasses.replace(c, probes=c.probes[:6]) for c in cases_from_transcripts()]
MEMORIES = ["memorylab/full", "memorylab/none", "memorylab/extractive"]
ANSWERS = {p.question: p.answer for case in CASES for p in case.probes}
PROBES = sum(len(c.probes) for c in CASES)


def answer_from_prompt(request: FakeRequest) -> Reply:
    """A reader that answers what the prompt holds: the probe's reference answer when it is in
    the prompt outside its question, else UNKNOWN (deterministic, and memories score apart)."""
    prompt = "\n".join(str(m["content"]) for m in request.body["messages"])
    question = next(q for q in ANSWERS if q in prompt)
    rest = prompt.replace(question, "").lower()
    return Reply(ANSWERS[question] if ANSWERS[question].lower() in rest else "UNKNOWN")


def reader(api_base: str | list[str]) -> ProbeQAScorer:
    return ProbeQAScorer("openai/local", llm_args={"api_base": api_base},
                         retry=llm.RetryPolicy(timeout=30, retries=0))  # fmt: skip


def compare(cache: Path, api_base: str | list[str], cases: list[Case] = CASES,
            memories: list[str] = MEMORIES, **options: Any) -> pd.DataFrame:  # fmt: skip
    result = compare_summarizers(
        cases, memories, [reader(api_base)], progress=False, cache_dir=cache, **options
    )
    assert result.frame["error"].isna().all(), result.frame["error"].dropna().iloc[0]
    return result.frame


def memories_asked(server: FakeOpenAIServer) -> set[str]:
    """What each request read but its question: one text per (case, memory)."""
    asked = set()
    for body in server.requests:
        prompt = "\n".join(str(m["content"]) for m in body["messages"])
        asked.add(prompt.replace(next(q for q in ANSWERS if q in prompt), ""))
    return asked


# --------------------------------------------------------------------------- the cache key


def test_a_server_is_keyed_by_the_model_it_says_it_serves_not_its_address(
    tmp_path: Path,
) -> None:
    """Before: any server but one local_server started in this process was keyed by its
    address, so the same model on a new port missed every entry."""
    case = [CASES[0]]
    first: dict[str, Any] = {"model": "smol", "props": {"model_path": "/models/smol.gguf"}}
    with FakeOpenAIServer(answer_from_prompt, **first) as one:
        compare(tmp_path, one.base_url, case, ["memorylab/full"])
        assert one.request_count == len(CASES[0].probes)
        first_base = one.base_url
    with FakeOpenAIServer(answer_from_prompt, **first) as again:
        assert again.base_url != first_base
        compare(tmp_path, again.base_url, case, ["memorylab/full"])
        assert again.request_count == 0  # the same model on a new port: every answer cached
    # The same id, another file behind it (llama-server's /props), and another model: no stale
    # answer.
    with (
        FakeOpenAIServer(answer_from_prompt, model="smol",
                         props={"model_path": "/models/qwen.gguf"}) as other_file,
        FakeOpenAIServer(answer_from_prompt, model="qwen") as other_model,
    ):  # fmt: skip
        for server in (other_file, other_model):
            compare(tmp_path, server.base_url, case, ["memorylab/full"])
            assert server.request_count == len(CASES[0].probes)


def test_a_server_that_does_not_say_what_it_serves_is_keyed_by_its_address(
    tmp_path: Path,
) -> None:
    case = [CASES[0]]
    for _ in range(2):
        with FakeOpenAIServer(answer_from_prompt, models_endpoint=False) as server:
            compare(tmp_path, server.base_url, case, ["memorylab/none"])
            assert server.request_count == len(CASES[0].probes)


def test_what_a_server_serves_is_what_its_models_and_props_say() -> None:
    with FakeOpenAIServer(model="smol", props={"model_path": "/m/smol.gguf", "n_ctx": 9}) as one:
        served = llm.served_model(one.base_url)
    assert served == {"models": [{"id": "smol"}], "props": {"model_path": "/m/smol.gguf"}}
    with FakeOpenAIServer(models_endpoint=False) as silent:
        assert llm.served_model(silent.base_url) is None


# --------------------------------------------------------------------------- several servers


def test_several_api_bases_are_checked() -> None:
    messages = [{"role": "user", "content": "hi"}]
    for bad in ([], ["http://127.0.0.1:1/v1", ""], ["http://127.0.0.1:1/v1", 3]):
        with pytest.raises(InvalidSetting, match="api_base"):
            llm.chat("openai/local", messages, api_base=bad)
    with (
        FakeOpenAIServer("ok", model="smol") as one,
        FakeOpenAIServer("ok", model="qwen") as two,
        pytest.raises(InvalidSetting, match=r"api_base.*smol.*qwen"),
    ):
        llm.chat("openai/local", messages, api_base=[one.base_url, two.base_url])
    with (
        FakeOpenAIServer("ok", model="smol") as one,
        FakeOpenAIServer("ok", models_endpoint=False) as two,
        pytest.raises(InvalidSetting, match=r"does not say"),
    ):
        llm.chat("openai/local", messages, api_base=[one.base_url, two.base_url])


def test_one_comparison_over_two_servers_gives_the_result_of_one_and_shares_its_cache(
    tmp_path: Path, record_property: pytest.RecordProperty
) -> None:
    """Before: api_base could only be one server."""
    with (
        FakeOpenAIServer(answer_from_prompt, model="smol") as alone,
        FakeOpenAIServer(answer_from_prompt, model="smol") as one,
        FakeOpenAIServer(answer_from_prompt, model="smol") as two,
    ):
        single = compare(tmp_path / "single", alone.base_url)
        spread = compare(tmp_path / "spread", [one.base_url, two.base_url])
        served = one.request_count, two.request_count
        assert alone.request_count == sum(served) == PROBES * len(MEMORIES)
        assert min(served) > 0  # both servers worked
        assert not memories_asked(one) & memories_asked(two)  # each memory read by one server
        compare(tmp_path / "single", [one.base_url, two.base_url])  # the same model's cache
        assert (one.request_count, two.request_count) == served
    pd.testing.assert_frame_equal(single, spread)
    assert single[single.metric == "exact"].value.nunique() > 1  # memories score apart
    record_property("summary_line", f"two servers: {served[0]} and {served[1]} requests")


def test_a_dask_cluster_of_processes_gives_the_result_of_one_server(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed", reason="the dask extra is not installed")
    with (
        FakeOpenAIServer(answer_from_prompt, model="smol") as alone,
        FakeOpenAIServer(answer_from_prompt, model="smol") as one,
        FakeOpenAIServer(answer_from_prompt, model="smol") as two,
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                 dashboard_address="127.0.0.1:0") as cluster,
        distributed.Client(cluster) as client,
    ):  # fmt: skip
        single = compare(tmp_path / "single", alone.base_url)
        servers = [one.base_url, two.base_url]
        cache = tmp_path / "dask"
        spread = compare(cache, servers, executor=client.get_executor())
        sent = one.request_count, two.request_count
        assert sum(sent) == alone.request_count and min(sent) > 0
        again = compare_summarizers(CASES, MEMORIES, [reader(servers)], progress=False,
                                    cache_dir=cache, executor=client.get_executor())  # fmt: skip
        assert (one.request_count, two.request_count) == sent  # all from the shared cache
        assert again.run["requests"] == 0 and again.run["cache_hits"] == sum(sent)
    pd.testing.assert_frame_equal(single, spread)
    pd.testing.assert_frame_equal(single, again.frame)


def test_a_server_block_closed_outside_its_task_says_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A coroutine abandoned inside ``same_server`` (an interrupted run) is closed by the
    collector in another context, where its reset token means nothing: nothing to restore, and
    no "Exception ignored" error printed for it."""
    import contextvars
    import gc
    import sys
    from collections.abc import Generator

    class Suspend:
        def __await__(self) -> Generator[None, None, None]:
            yield

    async def inside_a_block() -> None:
        with llm.same_server("case\nmemory"):
            await Suspend()

    unraisable: list[object] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda event: unraisable.append(event.exc_value))
    abandoned = inside_a_block()
    contextvars.copy_context().run(abandoned.send, None)  # entered in the task's own context
    del abandoned
    gc.collect()
    assert unraisable == []
