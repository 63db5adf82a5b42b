"""Summarizers: litellm (mocked and through a local fake server), extractive, scripted, dispatch.

Everything is offline: litellm's ``mock_response`` or ``FakeOpenAIServer`` on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import gc
import re
import sys
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from fakes import (
    FakeOpenAIServer,
    FakeRequest,
    HTTPError,
    Reply,
    ToolCall,
    ToolCallReply,
    closed_base_url,
)
from memorylab.compress import (
    CHUNK_PROMPT,
    MERGE_PROMPT,
    SUMMARY_PROMPT,
    SUMMARY_SYSTEM_PROMPT,
    ExtractiveSummarizer,
    HeadTailSummarizer,
    LiteLLMSummarizer,
    ScriptedSummarizer,
    Summarizer,
    Summary,
    TruncateSummarizer,
    count_tokens,
    get_summarizer,
    get_token_counter,
)
from memorylab.compress._chunking import split_by_tokens, truncate_to_tokens
from memorylab.errors import (
    ContextWindowExceeded,
    EmptySummary,
    InvalidSetting,
    ModelAuthError,
    ModelBadRequest,
    ModelRateLimited,
    ModelTimeout,
    ModelUnavailable,
)
from memorylab.llm import (
    ChatReply,
    RetryPolicy,
    achat,
    chat,
    import_litellm,
    model_context_length,
)
from memorylab.memory import _format as fmt
from memorylab.memory._records import PRELOAD_PREFIX, SUMMARY_PREFIX, MemoryDocument, Message

HISTORY = [
    {"role": "User", "content": "Write a haiku about the sea.", "timestamp": "2026-04-20T10:00:00"},
    {"role": "Agent", "content": "Waves fold into foam."},
]


def fast(retries: int = 3, timeout: float = 60.0, backoff_max: float = 0.05) -> RetryPolicy:
    """A retry policy with short waits (the 60 s timeout is a hang guard a loaded machine's
    local replies never reach; the tests of timeouts give their own)."""
    return RetryPolicy(timeout=timeout, retries=retries, backoff_base=0.01, backoff_max=backoff_max)


def fake(
    url: str, *, retries: int = 3, timeout: float = 60.0, backoff_max: float = 0.05, **options: Any
) -> LiteLLMSummarizer:
    """A summarizer for the fake server, with fast backoff."""
    return LiteLLMSummarizer(
        "openai/fake-model",
        llm_args={"api_base": url, "api_key": "x"},
        retry=fast(retries, timeout, backoff_max),
        **options,
    )


def user_text(request: Mapping[str, Any]) -> str:
    messages = request["messages"]
    assert messages[0] == {"role": "system", "content": SUMMARY_SYSTEM_PROMPT}
    return str(messages[1]["content"])


# --------------------------------------------------------------------------- prompts, rendering


def test_prompts_ask_for_what_must_survive() -> None:
    for prompt in (SUMMARY_PROMPT, CHUNK_PROMPT, MERGE_PROMPT):
        for needle in ("ORIGINAL TASK", "decisions", "file paths", "commands", "numbers"):
            assert needle.lower() in prompt.lower(), (needle, prompt[:40])
        assert "tool" in prompt and "open questions" in prompt
    assert SUMMARY_PREFIX in SUMMARY_PROMPT and SUMMARY_PREFIX in CHUNK_PROMPT
    assert SUMMARY_PROMPT.format(transcript="T").endswith("<transcript>\nT\n</transcript>")
    assert "part 2 of 3" in CHUNK_PROMPT.format(part=2, total=3, transcript="")
    assert "3 summaries" in MERGE_PROMPT.format(count=3, summaries="")


def test_split_and_truncate_by_tokens() -> None:
    counter = get_token_counter(None)
    text = " ".join(f"word{i}" for i in range(500))
    pieces = split_by_tokens(text, 50, counter)
    assert "".join(pieces) == text
    assert len(pieces) > 5 and all(counter.count(p) <= 50 for p in pieces)
    short = truncate_to_tokens(text, 20, counter)
    assert short.endswith(" …") and counter.count(short) <= 20 and text.startswith(short[:-2])
    assert truncate_to_tokens("small", 20, counter) == "small"
    assert split_by_tokens("x" * 10_000, 7, counter)  # no whitespace at all: still bounded


# --------------------------------------------------------------------------- litellm: mock_response


def test_mock_response_success() -> None:
    summarizer = LiteLLMSummarizer("gpt-4o-mini", llm_args={"mock_response": "  The sea.  "})
    started = time.perf_counter()
    summary = summarizer.summarize(HISTORY)
    took = time.perf_counter() - started
    assert isinstance(summary, Summary) and isinstance(summarizer, Summarizer)
    assert summary.text == "The sea."
    assert summary.model == "gpt-4o-mini" == summarizer.name
    assert isinstance(summary.input_tokens, int) and isinstance(summary.output_tokens, int)
    assert summary.cost_usd is not None and summary.cost_usd > 0
    assert 0 < summary.latency_s <= took  # this call's time, measured inside it
    assert summary.chunks == 1
    assert summary.to_dict() == {
        "text": "The sea.",
        "model": "gpt-4o-mini",
        "input_tokens": summary.input_tokens,
        "output_tokens": summary.output_tokens,
        "cost_usd": summary.cost_usd,
        "latency_s": summary.latency_s,
        "chunks": 1,
        "truncated": False,
    }
    with pytest.raises(AttributeError):
        summary.text = "changed"  # type: ignore[misc]


def test_unmapped_model_has_no_cost_and_default_window() -> None:
    summarizer = LiteLLMSummarizer("openai/fake-model", llm_args={"mock_response": "ok"})
    summary = summarizer.summarize(HISTORY)
    assert summary.text == "ok" and summary.cost_usd is None
    assert summarizer.get_context_length() == 8192
    assert LiteLLMSummarizer("gpt-4o").get_context_length() == 128000
    assert LiteLLMSummarizer("gpt-4o", context_length=1000).get_context_length() == 1000


def test_mock_rate_limit_is_retried_then_reported() -> None:
    summarizer = LiteLLMSummarizer(
        "gpt-4o-mini", retry=fast(retries=2), llm_args={"mock_response": "litellm.RateLimitError"}
    )
    with pytest.raises(ModelRateLimited, match="Gave up after 3 attempts") as caught:
        summarizer.summarize(HISTORY)
    assert "rate" in str(caught.value).lower()


def test_mock_context_window_exceeded_is_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    litellm = import_litellm()
    attempts: list[str] = []
    real = litellm.acompletion

    async def counted(**kwargs: Any) -> Any:
        attempts.append(kwargs["model"])
        return await real(**kwargs)

    monkeypatch.setattr(litellm, "acompletion", counted)
    summarizer = LiteLLMSummarizer(
        "gpt-4o-mini",
        retry=RetryPolicy(retries=3, backoff_base=0.01, backoff_max=0.05),
        llm_args={"mock_response": "litellm.ContextWindowExceededError"},
    )
    with pytest.raises(ContextWindowExceeded, match="context_length=") as caught:
        summarizer.summarize(HISTORY)
    assert attempts == ["gpt-4o-mini"]  # one attempt: no retry
    assert isinstance(caught.value, ModelBadRequest) and not caught.value.retryable
    assert "Gave up" not in str(caught.value)


def test_mock_timeout() -> None:
    summarizer = LiteLLMSummarizer(
        "gpt-4o-mini", timeout=0.05, retries=0, llm_args={"mock_timeout": True}
    )
    with pytest.raises(ModelTimeout, match=re.escape("RetryPolicy(timeout=...)")) as caught:
        summarizer.summarize(HISTORY)
    assert isinstance(caught.value, TimeoutError)
    assert summarizer.retry == RetryPolicy(timeout=0.05, retries=0)  # the shortcuts


def test_asummarize_with_mock_response() -> None:
    summarizer = LiteLLMSummarizer("gpt-4o-mini", llm_args={"mock_response": "async sea"})

    async def both() -> list[Summary]:
        return list(
            await asyncio.gather(summarizer.asummarize(HISTORY), summarizer.asummarize(HISTORY))
        )

    summaries = asyncio.run(both())
    assert [s.text for s in summaries] == ["async sea", "async sea"]
    assert all(s.chunks == 1 and s.cost_usd for s in summaries)


def test_invalid_settings() -> None:
    for bad in (
        {"max_tokens": 0},
        {"retries": -1},
        {"timeout": 0},
        {"retry": {"timeout": 5}},
        {"context_length": 1},
        {"temperature": 5},
        {"llm_args": {"model": "x"}},
        {"llm_args": {"timeout": 0}},
        {"llm_args": {"num_retries": 2}},
        {"llm_args": {"backoff_max": 2}},
    ):
        with pytest.raises(InvalidSetting):
            LiteLLMSummarizer("gpt-4o-mini", **bad)
    with pytest.raises(InvalidSetting):
        LiteLLMSummarizer("")
    summarizer = LiteLLMSummarizer("gpt-4o-mini", llm_args={"api_key": "sk-secret"})
    assert "sk-secret" not in repr(summarizer)


def test_empty_history_is_refused_before_any_call() -> None:
    summarizer = LiteLLMSummarizer("gpt-4o-mini", llm_args={"mock_response": "x"})
    for history in ([], [{"role": "User", "content": "   "}], [{"role": "User", "content": None}]):
        with pytest.raises(EmptySummary):
            summarizer.summarize(history)


# --------------------------------------------------------------------------- litellm: fake server


def test_fake_server_success() -> None:
    with FakeOpenAIServer(Reply("summary text", prompt_tokens=123, completion_tokens=4)) as server:
        summary = fake(server.base_url, max_tokens=77, temperature=0.0).summarize(HISTORY)
        (request,) = server.requests
    assert summary.text == "summary text"
    assert (summary.input_tokens, summary.output_tokens) == (123, 4)
    assert summary.cost_usd is None and summary.chunks == 1
    assert request["model"] == "fake-model"
    assert request["max_tokens"] == 77 and request["temperature"] == 0.0
    assert "Write a haiku about the sea." in user_text(request)
    assert "[2026-04-20T10:00:00] User:" in user_text(request)


def test_rate_limit_then_success_is_retried() -> None:
    with FakeOpenAIServer([HTTPError(429, retry_after=0), "after retry"]) as server:
        summary = fake(server.base_url, retries=3).summarize(HISTORY)
        assert server.request_count == 2
    assert summary.text == "after retry" and summary.chunks == 1


def test_retry_after_is_honoured() -> None:
    with FakeOpenAIServer([HTTPError(429, retry_after=0.3), "ok"]) as server:
        started = time.perf_counter()
        fake(server.base_url, backoff_max=2.0).summarize(HISTORY)
        assert time.perf_counter() - started >= 0.3
        assert server.request_count == 2


def test_rate_limit_after_all_retries() -> None:
    with FakeOpenAIServer(HTTPError(429, retry_after=0)) as server:
        with pytest.raises(ModelRateLimited, match="Gave up after 3 attempts"):
            fake(server.base_url, retries=2).summarize(HISTORY)
        assert server.request_count == 3


@pytest.mark.parametrize("retries", [0, 2])
def test_server_error_always_is_unavailable_after_retries(retries: int) -> None:
    """One HTTP request per attempt: no hidden SDK retries."""
    with FakeOpenAIServer(HTTPError(500)) as server:
        with pytest.raises(
            ModelUnavailable, match=re.escape("api_base=http://127.0.0.1")
        ) as caught:
            fake(server.base_url, retries=retries).summarize(HISTORY)
        assert server.request_count == retries + 1
    assert caught.value.__cause__ is not None  # the litellm exception is kept


def test_503_is_retried() -> None:
    with FakeOpenAIServer([HTTPError(503), HTTPError(502), "back"]) as server:
        assert fake(server.base_url, retries=2).summarize(HISTORY).text == "back"
        assert server.request_count == 3


def test_auth_error_is_not_retried() -> None:
    with FakeOpenAIServer(HTTPError(401, "Incorrect API key provided")) as server:
        with pytest.raises(ModelAuthError, match="api_key") as caught:
            fake(server.base_url, retries=3).summarize(HISTORY)
        assert server.request_count == 1
    assert "OPENAI_API_KEY" in str(caught.value)


@pytest.mark.parametrize("status", [400, 404, 422])
def test_bad_request_is_not_retried(status: int) -> None:
    with FakeOpenAIServer(HTTPError(status, "no such thing")) as server:
        with pytest.raises(ModelBadRequest):
            fake(server.base_url, retries=3).summarize(HISTORY)
        assert server.request_count == 1


def test_slow_reply_times_out() -> None:
    # No clock: the reply comes 60 s after each request (stopping the server cuts that short),
    # so ModelTimeout at all means each attempt was cut at 0.3 s, and one attempt not cut would
    # return "too late"; 60 s is past anything a loaded machine adds to 0.3 s.
    with FakeOpenAIServer(Reply("too late", delay=60)) as server:
        with pytest.raises(ModelTimeout, match=re.escape("0.3 s")):
            fake(server.base_url, timeout=0.3, retries=1).summarize(HISTORY)
        assert server.request_count == 2


def test_connection_refused_is_unavailable() -> None:
    """A refused connection is ModelUnavailable at each attempt, not waited out: a client that
    waited would end in ModelTimeout (no ModelUnavailable) once the attempt's timeout passed."""
    with pytest.raises(ModelUnavailable, match="Gave up after 2 attempts") as caught:
        fake(closed_base_url(), retries=1).summarize(HISTORY)
    assert "Connection error" in str(caught.value)


@pytest.mark.parametrize("reply", [Reply(None), Reply(""), Reply("   \n ")])
def test_empty_reply_is_empty_summary(reply: Reply) -> None:
    with FakeOpenAIServer(reply) as server:
        with pytest.raises(EmptySummary):
            fake(server.base_url, retries=3).summarize(HISTORY)
        assert server.request_count == 1


def test_empty_reply_cut_by_length_says_so() -> None:
    server = FakeOpenAIServer(Reply(None, finish_reason="length"))
    with server, pytest.raises(EmptySummary, match="max_tokens"):
        fake(server.base_url).summarize(HISTORY)


def test_the_old_error_names_are_the_new_classes() -> None:
    from memorylab import errors

    for old, new in (
        ("SummarizerError", "ModelError"),
        ("SummarizerTimeout", "ModelTimeout"),
        ("SummarizerRateLimited", "ModelRateLimited"),
        ("SummarizerAuthError", "ModelAuthError"),
        ("SummarizerUnavailable", "ModelUnavailable"),
        ("SummarizerBadRequest", "ModelBadRequest"),
    ):
        assert getattr(errors, old) is getattr(errors, new)
    try:
        raise ModelTimeout("slow")
    except errors.SummarizerTimeout as caught:  # an old except clause still catches
        assert isinstance(caught, errors.SummarizerError) and isinstance(caught, TimeoutError)
    assert issubclass(EmptySummary, ValueError) and not issubclass(EmptySummary, errors.ModelError)


def test_asummarize_through_the_fake_server() -> None:
    with FakeOpenAIServer([HTTPError(429, retry_after=0), "async one", "async two"]) as server:
        summarizer = fake(server.base_url, retries=2)
        first = asyncio.run(summarizer.asummarize(HISTORY))
        second = asyncio.run(summarizer.asummarize(HISTORY, max_tokens=50))
        assert server.request_count == 3
        assert server.requests[2]["max_tokens"] == 50
    assert (first.text, second.text) == ("async one", "async two")


def test_asummarize_errors_match_summarize() -> None:
    with FakeOpenAIServer(HTTPError(401)) as server:
        with pytest.raises(ModelAuthError):
            asyncio.run(fake(server.base_url).asummarize(HISTORY))
        assert server.request_count == 1
    with FakeOpenAIServer(HTTPError(500)) as server:
        with pytest.raises(ModelUnavailable):
            asyncio.run(fake(server.base_url, retries=1).asummarize(HISTORY))
        assert server.request_count == 2


def test_sync_call_leaves_no_event_loop_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    """litellm's sync path would install an event loop on the main thread that nobody closes."""
    unraisable: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    with FakeOpenAIServer("ok") as server:
        fake(server.base_url).summarize(HISTORY)
    asyncio.run(asyncio.sleep(0))
    gc.collect()
    assert not [u for u in unraisable if issubclass(u.exc_type, ResourceWarning)]


# --------------------------------------------------------------------------- chunking


def long_history(count: int, words: int = 45) -> list[dict[str, Any]]:
    task = {"role": "User", "content": "ORIGINAL TASK: migrate the billing service to Postgres."}
    rest = [
        {
            "role": "Agent" if i % 2 else "User",
            "content": f"MARK{i:03d} " + " ".join(f"filler{i}x{j}" for j in range(words)),
        }
        for i in range(1, count)
    ]
    return [task, *rest]


def scripted_replies(request: FakeRequest) -> str:
    text = str(request.body["messages"][1]["content"])
    if "<summaries>" in text:
        return f"MERGED({request.index})"
    return f"PARTIAL({request.index})"


def test_long_history_is_chunked_and_merged_without_loss() -> None:
    history = long_history(40)
    with FakeOpenAIServer(scripted_replies) as server:
        summarizer = fake(server.base_url, context_length=1500, max_tokens=100)
        summary = summarizer.summarize(history)
        requests = server.requests
    texts = [user_text(r) for r in requests]
    chunk_texts = [t for t in texts if "<transcript>" in t]
    merge_texts = [t for t in texts if "<summaries>" in t]
    assert len(chunk_texts) >= 3 and len(merge_texts) == 1
    assert summary.chunks == len(requests) == len(chunk_texts) + 1
    assert summary.text == f"MERGED({len(requests) - 1})"
    assert "ORIGINAL TASK: migrate the billing service" in texts[0]
    assert f"part 1 of {len(chunk_texts)}" in texts[0]
    joined = "\n".join(chunk_texts)
    for message in history:  # nothing dropped
        assert message["content"] in joined
    for index in range(len(chunk_texts)):
        assert f"PARTIAL({index})" in merge_texts[0]
    counter = get_token_counter("openai/fake-model")
    for request in requests:  # every request fits the window with room for the answer
        prompt = SUMMARY_SYSTEM_PROMPT + user_text(request)
        assert counter.count(prompt) <= 1500 - 100


def test_oversized_single_message_is_split_by_tokens() -> None:
    huge = " ".join(f"w{i:04d}" for i in range(1500))
    history = [{"role": "User", "content": "Summarize the log."}, {"role": "Tool", "content": huge}]
    with FakeOpenAIServer(scripted_replies) as server:
        summary = fake(server.base_url, context_length=1200, max_tokens=100).summarize(history)
        texts = [user_text(r) for r in server.requests]
    assert summary.chunks == len(texts) >= 3
    joined = "\n".join(t for t in texts if "<transcript>" in t)
    for word in huge.split():
        assert word in joined
    assert "[message 2 (Tool), part 2/" in joined


def test_merge_is_recursive_when_partials_are_large() -> None:
    big = " ".join(f"fact{j}" for j in range(120))

    def replies(request: FakeRequest) -> str:
        text = str(request.body["messages"][1]["content"])
        return f"M{request.index} {big}" if "<summaries>" in text else f"P{request.index} {big}"

    with FakeOpenAIServer(replies) as server:
        summary = fake(server.base_url, context_length=1400, max_tokens=100).summarize(
            long_history(60)
        )
        texts = [user_text(r) for r in server.requests]
    merges = [t for t in texts if "<summaries>" in t]
    assert len(merges) >= 3  # more than one level of merging
    assert "(level 2)" not in summary.text and summary.text.startswith(f"M{len(texts) - 1} ")
    assert summary.chunks == len(texts)


def test_single_call_when_it_fits() -> None:
    with FakeOpenAIServer(scripted_replies) as server:
        summary = fake(server.base_url, context_length=100_000).summarize(long_history(40))
        assert server.request_count == 1
    assert summary.chunks == 1 and summary.text == "PARTIAL(0)"
    assert "<transcript>" in user_text(server.requests[0])


def test_window_too_small_for_max_tokens() -> None:
    summarizer = LiteLLMSummarizer(
        "gpt-4o-mini", context_length=600, max_tokens=400, llm_args={"mock_response": "x"}
    )
    with pytest.raises(InvalidSetting, match="lower max_tokens or raise context_length"):
        summarizer.summarize(long_history(40))


def test_context_length_is_the_window_and_context_window_its_former_name() -> None:
    history = long_history(40)
    counter = get_token_counter("openai/fake-model")
    runs = []
    for keyword in ("context_length", "context_window"):
        with FakeOpenAIServer(scripted_replies) as server:
            if keyword == "context_window":
                with pytest.warns(DeprecationWarning,
                                  match=r"LiteLLMSummarizer\(context_window=.*context_length="):
                    summarizer = fake(server.base_url, context_window=1000, max_tokens=100)
            else:
                summarizer = fake(server.base_url, context_length=1000, max_tokens=100)
            summary = summarizer.summarize(history)
            texts = [user_text(r) for r in server.requests]
        assert summarizer.context_length == summarizer.get_context_length() == 1000
        assert summary.chunks == len(texts) >= 4  # chunked to fit 1000 tokens
        assert all(counter.count(SUMMARY_SYSTEM_PROMPT + t) <= 1000 - 100 for t in texts)
        runs.append((texts, summary.text))
    assert runs[0] == runs[1]  # the former keyword means the same
    with pytest.warns(DeprecationWarning, match=r"LiteLLMSummarizer.context_window is now "
                      r"\.context_length"):  # fmt: skip
        assert summarizer.context_window == 1000
    with pytest.warns(DeprecationWarning, match=r"get_context_window is now \.get_context_length"):
        assert summarizer.get_context_window() == 1000


def test_context_length_and_context_window_together_are_refused() -> None:
    with pytest.raises(TypeError, match=r"LiteLLMSummarizer\(\) got both .*context_length= only"):
        LiteLLMSummarizer("gpt-4o-mini", context_length=1000, context_window=1000)


def test_asummarize_chunks_like_summarize() -> None:
    history = long_history(40)
    with FakeOpenAIServer(scripted_replies) as server:
        summary = asyncio.run(
            fake(server.base_url, context_length=1500, max_tokens=100).asummarize(history)
        )
        assert summary.chunks == server.request_count >= 4
        assert "ORIGINAL TASK" in user_text(server.requests[0])


def test_empty_partial_summary_fails_the_whole_summary() -> None:
    server = FakeOpenAIServer(["part one", Reply("")])
    with server, pytest.raises(EmptySummary, match="chunk 2/"):
        fake(server.base_url, context_length=1500, max_tokens=100).summarize(long_history(40))


# --------------------------------------------------------------------------- extractive


def synthetic_history() -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [
        {"role": "System", "content": f"{SUMMARY_PREFIX} Earlier work: the user prefers tabs."},
        {
            "role": "User",
            "content": "Please convert data/input.json to CSV and upload it. Keep it simple.",
            "timestamp": "2026-04-20T10:00:00",
        },
        {"role": "Agent", "content": "I will look at the file first. Sounds fun."},
        {"role": "User", "content": "We decided to use pandas. Do not use the csv module."},
        {
            "role": "Agent",
            "content": "Running the check:\n```bash\npytest -q tests/test_export.py\n```",
        },
        {
            "role": "Tool",
            "content": "exit code 1\nFAILED tests/test_export.py::test_roundtrip\nnoise",
        },
        {
            "role": "Agent",
            "content": "$ python export.py --limit 1000\nWrote 4217 rows to /srv/out/data.csv.",
        },
        {"role": "Agent", "content": "Docs are at https://example.com/export for reference."},
    ]
    for i in range(40):
        history.append(
            {
                "role": "User" if i % 2 else "Agent",
                "content": f"Small talk, round {i}. Nice weather.",
            }
        )
    history.append({"role": "User", "content": "Thanks, that is all for today."})
    return history


def test_extractive_keeps_task_facts_and_previous_summary() -> None:
    summary = ExtractiveSummarizer(max_tokens=600).summarize(synthetic_history())
    text = summary.text
    assert "Please convert data/input.json to CSV and upload it. Keep it simple." in text
    assert "Earlier work: the user prefers tabs." in text
    assert "We decided to use pandas." in text and "Do not use the csv module." in text
    assert "pytest -q tests/test_export.py" in text
    assert "$ python export.py --limit 1000" in text
    assert "4217" in text and "/srv/out/data.csv" in text
    assert "https://example.com/export" in text
    assert "FAILED tests/test_export.py::test_roundtrip" in text
    assert "Thanks, that is all for today." in text  # Recent
    for section in ("## Previous summary", "## Task", "## Decisions", "## Facts", "## Recent"):
        assert section in text
    order = [
        text.index(s)
        for s in ("## Previous summary", "## Task", "## Decisions", "## Facts", "## Recent")
    ]
    assert order == sorted(order)
    assert "Sounds fun" not in text  # nothing worth keeping in it
    assert summary.model == "memorylab/extractive" and summary.chunks == 1
    assert summary.cost_usd == 0.0
    assert summary.output_tokens == count_tokens(text)
    assert summary.input_tokens == count_tokens(fmt.history_text(synthetic_history()))


def test_extractive_is_deterministic() -> None:
    first = ExtractiveSummarizer(max_tokens=300).summarize(synthetic_history()).text
    again = ExtractiveSummarizer(max_tokens=300).summarize(synthetic_history()).text
    assert first == again


@pytest.mark.parametrize("budget", [32, 64, 128, 300, 1024])
@pytest.mark.parametrize("model", [None, "gpt-4o"])
def test_extractive_stays_within_budget(budget: int, model: str | None) -> None:
    history = synthetic_history() + long_history(80)
    history[1] = {"role": "User", "content": "Huge task. " * 2000}
    text = ExtractiveSummarizer(max_tokens=budget, model=model).summarize(history).text
    assert 0 < count_tokens(text, model) <= budget
    assert "Huge task." in text


def test_extractive_keeps_priorities_when_tight() -> None:
    text = ExtractiveSummarizer(max_tokens=120).summarize(synthetic_history()).text
    assert "Please convert data/input.json" in text
    assert "We decided to use pandas." in text
    assert count_tokens(text) <= 120


def test_extractive_max_tokens_argument_overrides() -> None:
    summarizer = ExtractiveSummarizer(max_tokens=1024)
    small = summarizer.summarize(synthetic_history(), max_tokens=64)
    assert count_tokens(small.text) <= 64
    with pytest.raises(InvalidSetting):
        summarizer.summarize(synthetic_history(), max_tokens=3)
    with pytest.raises(InvalidSetting):
        ExtractiveSummarizer(max_tokens=0)


def test_extractive_carries_summaries_out_of_a_preload() -> None:
    when = datetime(2026, 4, 20, 9, 0, tzinfo=UTC)
    doc = MemoryDocument(
        conversation_name="demo",
        created=when,
        messages=(
            Message("System", f"{SUMMARY_PREFIX} Old facts: the port is 8080.", when),
            Message("User", "Original task: build the exporter.", when),
        ),
    )
    preload = {"role": "System", "content": f"{PRELOAD_PREFIX}\n{fmt.render_memory(doc)}"}
    history = [preload, {"role": "User", "content": "Also add a --dry-run flag."}]
    text = ExtractiveSummarizer().summarize(history).text
    assert "Old facts: the port is 8080." in text
    assert "## Task\nOriginal task: build the exporter." in text


def test_extractive_repeated_compaction_keeps_the_task() -> None:
    summarizer = ExtractiveSummarizer(max_tokens=400)
    first = summarizer.summarize(synthetic_history()).text
    history = [{"role": "System", "content": f"{SUMMARY_PREFIX} {first}"}, *long_history(30)]
    second = summarizer.summarize(history).text
    assert "Please convert data/input.json" in second.split("## Task\n", 1)[1]  # the original task
    assert "### " not in second  # carried forward flat: no nested headings
    assert count_tokens(second) <= 400
    third = summarizer.summarize(
        [{"role": "System", "content": f"{SUMMARY_PREFIX} {second}"}, *long_history(30)]
    ).text
    assert "Please convert data/input.json" in third.split("## Task\n", 1)[1]
    assert third.count("## Previous summary") == 1 and "### " not in third
    assert "Earlier work: the user prefers tabs." in third  # a previous summary's own carry-over
    assert count_tokens(third) <= 400


def test_extractive_non_string_content_and_windows_paths() -> None:
    history: list[dict[str, Any]] = [
        {"role": "User", "content": "Fix the build."},
        {"role": "Tool", "content": {"status": "failed", "code": 2}},
        {"role": "Agent", "content": "The config lives in C:\\proj\\settings.ini now. Okay."},
    ]
    history += [{"role": "Agent", "content": "Nothing to see here, move along."}] * 30
    text = ExtractiveSummarizer(max_tokens=200).summarize(history).text
    assert '(Tool) {"status": "failed", "code": 2}' in text
    assert "- The config lives in C:\\proj\\settings.ini now." in text


@pytest.mark.parametrize(
    "history",
    [
        [],
        [{"role": "User", "content": ""}],
        [{"role": "User", "content": None}],
        [{"role": "A", "content": " \n"}],
    ],
)
def test_extractive_empty_history(history: list[dict[str, Any]]) -> None:
    with pytest.raises(EmptySummary):
        ExtractiveSummarizer().summarize(history)


def test_extractive_async_and_protocol() -> None:
    summarizer = ExtractiveSummarizer()
    assert isinstance(summarizer, Summarizer) and summarizer.name == "memorylab/extractive"
    summary = asyncio.run(summarizer.asummarize(HISTORY))
    assert summary.text == summarizer.summarize(HISTORY).text


# --------------------------------------------------------------------------- scripted


def test_scripted_order_cycling_and_calls() -> None:
    scripted = ScriptedSummarizer(("a", "b"))
    texts = [scripted.summarize([{"role": "User", "content": f"m{i}"}]).text for i in range(5)]
    assert texts == ["a", "b", "a", "b", "a"]
    assert [call[0]["content"] for call in scripted.calls] == [f"m{i}" for i in range(5)]
    assert scripted.summarize(HISTORY).model == "memorylab/scripted"
    assert isinstance(scripted, Summarizer)


def test_scripted_fail_on_and_error() -> None:
    scripted = ScriptedSummarizer(("ok", "fine"), fail_on=(1, 2))
    assert scripted.summarize(HISTORY).text == "ok"
    with pytest.raises(ModelUnavailable, match="call 1"):
        scripted.summarize(HISTORY)
    with pytest.raises(ModelUnavailable, match="call 2"):
        scripted.summarize(HISTORY)
    assert scripted.summarize(HISTORY).text == "fine"  # failures use up no reply
    assert len(scripted.calls) == 4
    custom = ScriptedSummarizer(fail_on=(0,), error=ModelTimeout("too slow"))
    with pytest.raises(ModelTimeout, match="too slow"):
        custom.summarize(HISTORY)
    by_class = ScriptedSummarizer(fail_on=(0,), error=ModelRateLimited)
    with pytest.raises(ModelRateLimited):
        by_class.summarize(HISTORY)


@pytest.mark.parametrize("reply", [None, "", "   "])
def test_scripted_empty_reply(reply: str | None) -> None:
    scripted = ScriptedSummarizer(("good", reply))
    assert scripted.summarize(HISTORY).text == "good"
    with pytest.raises(EmptySummary):
        scripted.summarize(HISTORY)


def test_scripted_delay_and_async() -> None:
    scripted = ScriptedSummarizer(("slow",), delay=0.05, name="teacher")
    started = time.perf_counter()
    summary = scripted.summarize(HISTORY)
    assert time.perf_counter() - started >= 0.05 and summary.latency_s >= 0.05
    assert summary.model == "teacher" == scripted.name
    summary = asyncio.run(scripted.asummarize(HISTORY))
    assert summary.text == "slow" and len(scripted.calls) == 2
    with pytest.raises(InvalidSetting):
        ScriptedSummarizer(())
    with pytest.raises(InvalidSetting):
        ScriptedSummarizer(delay=-1)


# --------------------------------------------------------------------------- dispatch


def test_get_summarizer_dispatch() -> None:
    assert isinstance(get_summarizer(), ExtractiveSummarizer)
    extractive = get_summarizer("memorylab/extractive", max_tokens=64)
    assert isinstance(extractive, ExtractiveSummarizer) and extractive.max_tokens == 64
    scripted = get_summarizer("memorylab/scripted", replies=("x",))
    assert isinstance(scripted, ScriptedSummarizer)
    llm = get_summarizer("gpt-4o-mini", max_tokens=500, llm_args={"mock_response": "y"})
    assert isinstance(llm, LiteLLMSummarizer) and llm.max_tokens == 500
    assert get_summarizer(scripted) is scripted


def test_the_offline_baselines_are_selectable_by_name() -> None:
    truncate = get_summarizer("memorylab/truncate", max_tokens=64)
    assert isinstance(truncate, TruncateSummarizer) and truncate.max_tokens == 64
    head_tail = get_summarizer(" memorylab/head-tail ")
    assert isinstance(head_tail, HeadTailSummarizer)
    history = [{"role": "User", "content": f"step {i}: " + "word " * 40} for i in range(30)]
    summary = head_tail.summarize(history)
    assert summary.model == "memorylab/head-tail" and "step 0" in summary.text
    assert "step 29" in summary.text and "omitted" in summary.text


def test_get_summarizer_errors() -> None:
    with pytest.raises(InvalidSetting, match=re.escape(
        "memorylab/extractive, memorylab/truncate, memorylab/head-tail, memorylab/full, "
        "memorylab/none, memorylab/scripted"
    )):
        get_summarizer("memorylab/abstractive")
    with pytest.raises(InvalidSetting):
        get_summarizer("")
    with pytest.raises(InvalidSetting, match="existing summarizer"):
        get_summarizer(ScriptedSummarizer(), delay=1)
    with pytest.raises(InvalidSetting):
        get_summarizer(42)  # type: ignore[arg-type]


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Names registered by a test are gone after it."""
    from memorylab.compress import _summarizers as summarizers

    monkeypatch.setattr(summarizers, "_REGISTRY", dict(summarizers._REGISTRY))


@pytest.mark.usefixtures("registry")
def test_a_summarizer_of_your_own_is_registered_like_the_built_in_ones(tmp_path: Any) -> None:
    from memorylab.compress import BaseSummarizer, ContextCompressor, register_summarizer
    from memorylab.compress._summarizers import summarizer_names
    from memorylab.memory import Conversation

    @register_summarizer("test/first-words")
    class FirstWords(BaseSummarizer):
        name = "test/first-words"

        def __init__(self, words: int = 3) -> None:
            self.words = words

        def summarize(
            self, messages: Any, *, max_tokens: int | None = None
        ) -> Summary:
            text = " ".join(str(messages[0]["content"]).split()[: self.words])
            return Summary(text, model=self.name, cost_usd=0.0)

    assert "test/first-words" in summarizer_names()
    made = get_summarizer("test/first-words", words=2)
    assert isinstance(made, FirstWords) and made.words == 2
    assert made.local and made.estimate(HISTORY) == [] and made.with_caller(lambda c: c) is made
    assert asyncio.run(made.asummarize(HISTORY)).text == "Write a"  # summarize, on a thread
    conv = Conversation(agent_name="Own", workspace_dir=tmp_path, token_counter=get_token_counter())
    conv.add("User", "Write a haiku about the sea.")
    # no temperature given; keep_turn=False: the one message, the turn in progress, is summarized
    compressor = ContextCompressor(summarizer_model="test/first-words", keep_turn=False)
    event = compressor.compress(conv, context_length=10_000, force=True)
    assert event is not None and event.ok and event.summarizer_model == "test/first-words"
    with pytest.raises(InvalidSetting, match="non-empty"):
        register_summarizer(" ")
    with pytest.raises(InvalidSetting, match="callable"):
        register_summarizer("test/nothing", 42)  # type: ignore[arg-type]


def test_the_old_import_paths_warn_and_work() -> None:
    import importlib

    import memorylab.evaluate

    summarizers = importlib.import_module("memorylab.compress.summarizers")  # 0.1's paths
    baselines = importlib.import_module("memorylab.evaluate.baselines")

    with pytest.warns(DeprecationWarning, match="import it from memorylab.compress"):
        assert summarizers.SUMMARY_PROMPT is SUMMARY_PROMPT
    with pytest.warns(DeprecationWarning, match="import it from memorylab.compress"):
        assert summarizers.Summary is Summary
    with pytest.warns(DeprecationWarning, match="from memorylab.compress import TruncateSummarizer"):
        assert baselines.TruncateSummarizer is TruncateSummarizer
    with pytest.warns(DeprecationWarning, match="memorylab.evaluate.HeadTailSummarizer"):
        assert memorylab.evaluate.HeadTailSummarizer is HeadTailSummarizer
    for module in (summarizers, baselines, memorylab.evaluate):
        with pytest.raises(AttributeError):
            module.Nope  # type: ignore[attr-defined]  # noqa: B018


def test_estimate_follows_the_plan_summarize_makes() -> None:
    history = long_history(40)
    with FakeOpenAIServer(scripted_replies) as server:
        summarizer = fake(server.base_url, context_length=1500, max_tokens=100)
        calls = summarizer.estimate(history)
        summary = summarizer.summarize(history)
        assert server.request_count == summary.chunks
    assert len(calls) >= summary.chunks >= 4  # answers at the full budget: as many or more
    assert all(model == "openai/fake-model" and out == 100 for model, _, out in calls)
    assert all(0 < tokens <= 1500 - 100 for _, tokens, _ in calls)
    whole = fake("http://127.0.0.1:9", context_length=100_000)
    [(_, tokens, out)] = whole.estimate(history, max_tokens=50)
    assert out == 50 and tokens > count_tokens(fmt.history_text(history), "openai/fake-model")
    assert whole.estimate([]) == []  # the summary would fail before any call
    assert not whole.local and ExtractiveSummarizer().estimate(history) == []


# --------------------------------------------------------------------------- agent calls: chat()

FAST = {"api_key": "x", "retry": fast(retries=2)}


def test_chat_text_reply_through_the_fake_server() -> None:
    with FakeOpenAIServer(Reply("hello", prompt_tokens=9, completion_tokens=2)) as server:
        reply = chat(
            "openai/fake-model",
            [{"role": "user", "content": "hi"}],
            api_base=server.base_url,
            temperature=0.5,
            max_tokens=33,
            **FAST,
        )
        (request,) = server.requests
    assert reply == ChatReply(
        content="hello",
        model="openai/fake-model",
        finish_reason="stop",
        input_tokens=9,
        output_tokens=2,
        cost_usd=None,
        latency_s=reply.latency_s,
    )
    assert request["messages"] == [{"role": "user", "content": "hi"}]
    assert (request["temperature"], request["max_tokens"]) == (0.5, 33)
    assert "tools" not in request
    assert reply.to_dict()["tool_calls"] == []


def test_chat_tool_calls_and_retries() -> None:
    tools = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]
    calls = [ToolCall("add", {"a": 1, "b": 2}, id="call_7")]
    with FakeOpenAIServer([HTTPError(429, retry_after=0), ToolCallReply(calls)]) as server:
        reply = chat(
            "openai/fake-model",
            [{"role": "user", "content": "1+2?"}],
            tools=tools,
            api_base=server.base_url,
            api_key="x",
            retry=fast(retries=1),
        )
        assert server.request_count == 2
        assert server.requests[1]["tools"] == tools
    assert reply.content == "" and reply.finish_reason == "tool_calls"
    assert list(reply.tool_calls) == [
        {"id": "call_7", "name": "add", "arguments": '{"a": 1, "b": 2}'}
    ]


def test_chat_errors_and_options() -> None:
    with FakeOpenAIServer(HTTPError(401)) as server:
        with pytest.raises(ModelAuthError):
            chat("openai/fake-model", HISTORY, api_base=server.base_url, api_key="x",
                 retry=fast(retries=3))  # fmt: skip
        assert server.request_count == 1
    with pytest.raises(ModelUnavailable, match="Gave up after 2 attempts"):
        chat("openai/fake-model", HISTORY, api_base=closed_base_url(), api_key="x",
             retry=fast(retries=1))  # fmt: skip
    for forbidden in ({"num_retries": 3}, {"timeout": 0}, {"retries": 1}):
        with pytest.raises(InvalidSetting, match="RetryPolicy"):
            chat("gpt-4o-mini", HISTORY, **forbidden)


def test_chat_with_mock_response_and_achat() -> None:
    reply = chat("gpt-4o-mini", HISTORY, mock_response="mocked")
    assert reply.content == "mocked" and reply.cost_usd and reply.input_tokens
    with FakeOpenAIServer("async hello") as server:
        reply = asyncio.run(achat("openai/fake-model", HISTORY, api_base=server.base_url, **FAST))
    assert reply.content == "async hello"


def test_model_context_length() -> None:
    assert model_context_length("gpt-4o") == 128000
    assert model_context_length("openai/fake-model") == 8192


# --------------------------------------------------------------------------- the budget rule, the bounds


def test_a_provider_that_ignores_max_tokens_has_its_summary_cut() -> None:
    from memorylab.compress import ContextCompressor, get_token_counter
    from memorylab.compress._base import CUT_MARKER
    from memorylab.memory._conversation import Conversation

    huge = "The deploy uses port 8443. " * 200_000  # ~5 MB, ~1.2 million tokens
    with FakeOpenAIServer(huge) as server:
        summarizer = fake(server.base_url, max_tokens=200)
        summary = summarizer.summarize(HISTORY)
        counter = get_token_counter("openai/fake-model")
        assert summary.truncated and summary.text.endswith(CUT_MARKER.strip())
        assert counter.count(summary.text) <= 200
        # Through the compressor: the compacted context is smaller than before, never larger.
        conversation = Conversation(agent_name="Huge", token_counter=counter.count)
        for i in range(40):
            conversation.add("User", f"step {i}: deploy the API on port 8443 with 12 workers")
        before = conversation.token_count()
        event = ContextCompressor(summarizer=summarizer, summarizer_max_tokens=200).compress(
            conversation, 8000, force=True
        )
        assert event is not None and event.ok
        assert conversation.token_count() < before
    within = fake_reply_of_tokens(150)
    with FakeOpenAIServer(within) as server:
        summary = fake(server.base_url, max_tokens=140).summarize(HISTORY)  # within tolerance
        assert not summary.truncated and summary.text == within


def fake_reply_of_tokens(count: int) -> str:
    return " ".join(f"w{i}" for i in range(count // 2))


def test_the_reference_summarizers_are_the_bounds() -> None:
    full = get_summarizer("memorylab/full").summarize(HISTORY, max_tokens=16)
    assert full.text == fmt.history_text(HISTORY) and full.cost_usd == 0.0
    none = get_summarizer("memorylab/none").summarize(HISTORY)
    assert none.text == "" and none.output_tokens == 0  # an empty summary is its valid output
    with pytest.raises(EmptySummary):
        get_summarizer("memorylab/none").summarize([])


def test_a_duck_typed_summarizer_is_completed_once_where_it_enters() -> None:
    """A user's object with only a name and summarize gets the documented defaults: it may call
    a model (local False), no model name, no estimated calls, with_caller itself, asummarize on
    a thread; what it declares itself wins, its other attributes are still there."""
    from memorylab.compress import as_summarizer

    class Duck:
        name = "duck"
        max_tokens = 77

        def summarize(self, messages: Any, *, max_tokens: int | None = None) -> Summary:
            return Summary(text=f"{len(messages)} messages", model=self.name)

    duck = Duck()
    made = get_summarizer(duck)
    assert isinstance(made, Summarizer) and made.name == "duck"
    assert made.local is False and made.model is None and made.estimate(HISTORY) == []
    assert made.with_caller(lambda c: c) is made and as_summarizer(made) is made
    assert asyncio.run(made.asummarize(HISTORY)).text == f"{len(HISTORY)} messages"
    assert made.max_tokens == 77  # type: ignore[attr-defined]

    class Declares(Duck):
        local = True
        model = "m"

        def estimate(self, messages: Any, max_tokens: int | None = None) -> list[Any]:
            return [("m", 1, 2)]

    declared = as_summarizer(Declares())
    assert declared.local is True and declared.model == "m" and declared.estimate([]) == [("m", 1, 2)]
    full = ExtractiveSummarizer()
    assert get_summarizer(full) is full  # a complete one is used as it is
    with pytest.raises(InvalidSetting, match="has a name and summarize"):
        get_summarizer(object())  # type: ignore[arg-type]
