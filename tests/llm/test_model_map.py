"""Model metadata (context windows, list prices) read from litellm's model map as a file, without
importing litellm, and equal to what litellm itself answers; litellm imported off the event loop
(issue 30)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

from memorylab import llm

# --------------------------------------------------------------------------- no import


def test_the_first_window_and_price_lookups_do_not_import_litellm() -> None:
    script = r"""
import json, sys, tempfile
from memorylab import LiteLLMSummarizer, llm
from memorylab.evaluate import Case, plan_comparison

history = [{"role": "user", "content": "remember the port 8443"}]
summarizer = LiteLLMSummarizer("openai/bench", llm_args={"api_base": "http://127.0.0.1:9/v1"})
plan = plan_comparison([Case("c1", tuple(history))], [summarizer, "gpt-4o-mini"], ["latency"],
                       cache_dir=tempfile.mkdtemp())  # an empty cache: nothing to replay
print(json.dumps({
    "windows": [llm.model_context_length(m) for m in
                ("gpt-4o", "openai/gpt-4o-mini", "claude-sonnet-4-5", "openai/my-model")],
    "prices": [llm.token_prices(m) for m in ("gpt-4o-mini", "openai/my-model")],
    "summarizer": [summarizer.get_context_length(), len(summarizer.estimate(history))],
    "plan": [plan.requests, plan.usd > 0],
    "litellm": "litellm" in sys.modules,
}))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {
        "windows": [128000, 128000, 200000, llm.DEFAULT_CONTEXT_LENGTH],
        "prices": [[1.5e-07, 6e-07], None],
        "summarizer": [llm.DEFAULT_CONTEXT_LENGTH, 1],
        "plan": [2, True],
        "litellm": False,
    }


# --------------------------------------------------------------------------- same answers

# Every name of the bundled map, each also with its provider's prefix, its aliases, and names
# it does not list; in a fresh process, so the file (not litellm's live map) answers first.
# github_copilot is left out: litellm starts a device-code login to price its models.
AGREEMENT = r"""
import json, logging, math, sys
from memorylab import llm

table = llm.bundled_model_map()
listed = [k for k, v in table.items() if isinstance(v, dict) and "litellm_provider" in v
          and k != "sample_spec"]
names = [*listed, *(f"{table[k]['litellm_provider']}/{k}" for k in listed if "/" not in k),
         *(k for k, v in table.items() if isinstance(v, dict) and "alias_of" in v),
         "openai/bench", "openai/my-model", "bench", "hosted_vllm/foo", "anthropic/foo-bar",
         "together_ai/xyz-123", "openai/gpt-4-custom", "claude-newfamily-5",
         "anthropic/claude-sonnet-9-9", "gpt-4o-2099-01-01", "GPT-4O", "openai/GPT-4o-mini",
         "ollama/llama3", "ollama/my-model"]
names = [n for n in names if "github_copilot" not in n]

class Asked(BaseException):  # not an Exception: the lookups' own handlers must not catch it
    pass

def ask():
    raise Asked

def from_file(lookup, name):
    try:
        return lookup(name)
    except Asked:
        return "litellm"

real, llm.import_litellm = llm.import_litellm, ask
ours = {n: (from_file(llm.model_context_length, n), from_file(llm.token_prices, n)) for n in names}
llm.import_litellm = real
imported_early = "litellm" in sys.modules
litellm = real()
logging.getLogger("LiteLLM").setLevel(logging.CRITICAL)

def window(name):
    try:
        info = litellm.get_model_info(name)
        value = info.get("max_input_tokens") or info.get("max_tokens")
    except Exception:
        value = None
    return int(value) if value else None

def price(name):
    try:
        cost_in, _ = litellm.cost_per_token(model=name, prompt_tokens=1_000_000)
        _, cost_out = litellm.cost_per_token(model=name, completion_tokens=1_000_000)
    except Exception:
        return None
    return [cost_in / 1_000_000, cost_out / 1_000_000]

differ, file_only = [], 0
for name, (our_window, our_price) in ours.items():
    if our_window != "litellm":
        theirs = window(name)
        if theirs is None and our_window != llm.DEFAULT_CONTEXT_LENGTH:
            file_only += 1  # listed, but litellm's lookup cannot route the bare name
        elif (theirs or llm.DEFAULT_CONTEXT_LENGTH) != our_window:
            differ.append(["window", name, our_window, theirs])
    if our_price != "litellm":
        theirs = price(name)
        if theirs is None and our_price is not None:
            file_only += 1
        elif (theirs is None) != (our_price is None) or (theirs and not all(
                math.isclose(a, b, rel_tol=1e-9) for a, b in zip(theirs, our_price))):
            differ.append(["price", name, our_price, theirs])
print(json.dumps({
    "names": len(names), "imported_early": imported_early, "differ": differ[:20],
    "windows_from_file": sum(w != "litellm" for w, _ in ours.values()),
    "prices_from_file": sum(p != "litellm" for _, p in ours.values()),
    "unknown": [n for n, (w, p) in ours.items() if p is None and w == llm.DEFAULT_CONTEXT_LENGTH],
    "ollama": ours["ollama/llama3"], "file_only": file_only,
}))
"""


def test_the_file_answers_as_litellm_does_on_every_name_of_its_map() -> None:
    done = subprocess.run([sys.executable, "-c", AGREEMENT], capture_output=True, text=True,
                          timeout=600, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert not seen["imported_early"], "a lookup the file settles imported litellm"
    assert seen["differ"] == [], seen["differ"]
    # The file settles most names (the rest: aliases, rules, tiered prices, providers that
    # litellm asks about their models); names unlike every listed one are settled as unknown.
    assert seen["windows_from_file"] > 0.6 * seen["names"], seen
    assert seen["prices_from_file"] > 0.5 * seen["names"], seen
    assert {"openai/bench", "openai/my-model", "bench", "hosted_vllm/foo"} <= set(seen["unknown"])
    assert "openai/gpt-4-custom" not in seen["unknown"]  # like gpt-4: litellm decides
    assert seen["ollama"] == ["litellm", "litellm"]  # litellm asks the Ollama server


def test_a_model_registered_with_litellm_is_seen_once_it_is_imported() -> None:
    litellm = llm.import_litellm()
    name = "openai/memorylab-registered-test-model"
    assert llm.model_context_length(name) == llm.DEFAULT_CONTEXT_LENGTH
    litellm.register_model({name: {"max_input_tokens": 1234, "input_cost_per_token": 1e-06,
                                   "output_cost_per_token": 2e-06,
                                   "litellm_provider": "openai", "mode": "chat"}})  # fmt: skip
    try:
        assert llm.model_context_length(name) == 1234
        assert llm.token_prices(name) == pytest.approx((1e-06, 2e-06))
    finally:
        litellm.model_cost.pop(name, None)
    assert llm.model_context_length(name) == llm.DEFAULT_CONTEXT_LENGTH


def test_the_default_window_s_former_name_warns() -> None:
    former = "DEFAULT_CONTEXT_WINDOW"
    with pytest.warns(DeprecationWarning, match=f"{former} is now DEFAULT_CONTEXT_LENGTH"):
        assert getattr(llm, former) == llm.DEFAULT_CONTEXT_LENGTH == 8192
    with pytest.raises(AttributeError):
        llm.DEFAULT_CONTEXT_WINDOWS  # type: ignore[attr-defined]  # noqa: B018


# --------------------------------------------------------------------------- the import


def test_the_import_is_started_once_and_awaited_off_the_loop() -> None:
    first = llm.start_litellm_import()
    assert llm.start_litellm_import() is first
    module = asyncio.run(llm.aimport_litellm())
    assert first.result(timeout=300) is module is llm.import_litellm()
    assert llm.token_prices("gpt-4o-mini") == (1.5e-07, 6e-07)


# --------------------------------------------------------------------------- cache prices


def test_cache_prices_come_from_the_map_by_the_same_rule() -> None:
    """The prompt cache's prices as the map lists them: OpenAI's read price and no write price
    (writes are not billed apart), Anthropic's both and its minimum prefix; none for a model
    whose entry lists no cache price, or that the map does not know (no discount assumed)."""
    assert llm.cache_prices("gpt-4o-mini") == llm.CachePrices(read=7.5e-08)
    assert llm.cache_prices("claude-sonnet-4-5") == llm.CachePrices(
        read=3e-07, write=3.75e-06, min_tokens=1024
    )
    assert llm.cache_prices("gpt-3.5-turbo") is None  # priced, but no cache price listed
    assert llm.cache_prices("openai/my-model") is None
    litellm = llm.import_litellm()  # where both answer, litellm's own lookup agrees
    for name in ("gpt-4o-mini", "claude-sonnet-4-5", "deepseek/deepseek-chat"):
        info = litellm.get_model_info(name)
        prices = llm.cache_prices(name)
        assert prices is not None and prices.read == info["cache_read_input_token_cost"]
        assert prices.write == info.get("cache_creation_input_token_cost")
