"""memorylab.llm: the error table covers every exception litellm exports, one RetryPolicy, and the
old import path."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from memorylab.errors import (
    ContextWindowExceeded,
    InvalidSetting,
    ModelAuthError,
    ModelBadRequest,
    ModelError,
    ModelRateLimited,
    ModelTimeout,
    ModelUnavailable,
)
from memorylab.llm import Caller, RetryPolicy, error_rule, import_litellm, retry_policy

GENERIC = {
    # Base classes that say nothing by themselves: their HTTP status decides.
    "openai.OpenAIError",
    "openai.APIError",
    "openai.APIStatusError",
    "litellm.exceptions.OpenAIError",
    "litellm.exceptions.APIError",
    "litellm.exceptions.MockException",
    # openai's helpers for structured output, webhooks and realtime sockets: litellm's
    # completion never raises them, so they keep the generic rule.
    "openai.ContentFilterFinishReasonError",
    "openai.LengthFinishReasonError",
    "openai.InvalidWebhookSignatureError",
    "openai.WebSocketConnectionClosedError",
    "openai.WebSocketQueueFullError",
}


def provider_exceptions() -> dict[str, type[BaseException]]:
    import openai

    found: dict[str, type[BaseException]] = {}
    for module in (import_litellm().exceptions, openai):
        for name, value in list(vars(module).items()):
            if inspect.isclass(value) and issubclass(value, Exception) and not name.startswith("_"):
                found.setdefault(f"{module.__name__}.{name}", value)
    return found


def test_every_exported_exception_has_a_specific_rule() -> None:
    exceptions = provider_exceptions()
    assert len(exceptions) > 40  # litellm's and openai's, not an empty walk
    assert set(exceptions) >= GENERIC, "a deliberately generic class is no longer exported"
    generic = error_rule(Exception)
    assert generic.error is ModelError
    unmapped = [
        name
        for name, cls in exceptions.items()
        if name not in GENERIC and error_rule(cls).error is ModelError
    ]
    assert unmapped == [], "map these in memorylab.llm._error_table (or list them in GENERIC)"
    for name in GENERIC:
        assert error_rule(exceptions[name]) == generic, name


@pytest.mark.parametrize(
    ("name", "error", "retryable"),
    [
        ("Timeout", ModelTimeout, True),
        ("RateLimitError", ModelRateLimited, True),
        ("InternalServerError", ModelUnavailable, True),
        ("ServiceUnavailableError", ModelUnavailable, True),
        ("APIConnectionError", ModelUnavailable, True),
        ("AuthenticationError", ModelAuthError, False),
        ("PermissionDeniedError", ModelAuthError, False),
        ("BadRequestError", ModelBadRequest, False),
        ("NotFoundError", ModelBadRequest, False),
        ("ContextWindowExceededError", ContextWindowExceeded, False),
        ("ContentPolicyViolationError", ModelBadRequest, False),
        ("BudgetExceededError", ModelBadRequest, False),
    ],
)
def test_the_rules_of_litellm_exceptions(
    name: str, error: type[ModelError], retryable: bool
) -> None:
    rule = error_rule(getattr(import_litellm().exceptions, name))
    assert (rule.error, rule.retryable) == (error, retryable)


def test_a_generic_exception_goes_by_its_status() -> None:
    api_error = import_litellm().exceptions.APIError
    assert error_rule(api_error, 429).error is ModelRateLimited
    assert error_rule(api_error, 401).error is ModelAuthError
    assert error_rule(api_error, 422).error is ModelBadRequest
    assert error_rule(api_error, 503).error is ModelUnavailable
    assert error_rule(api_error, None).error is ModelError
    assert error_rule(ConnectionRefusedError).error is ModelUnavailable
    assert error_rule(TimeoutError).error is ModelTimeout


def test_map_error_says_what_to_do() -> None:
    litellm = import_litellm()
    caller = Caller(
        "openai/x", retry=RetryPolicy(timeout=7), llm_args={"api_base": "http://127.0.0.1:9/v1"}
    )
    cases: list[tuple[Any, type[ModelError], str]] = [
        (litellm.Timeout("slow", model="x", llm_provider="openai"), ModelTimeout, "within 7 s"),
        (
            litellm.RateLimitError("429", llm_provider="openai", model="x"),
            ModelRateLimited,
            "RetryPolicy(retries=",
        ),
        (
            litellm.InternalServerError("boom", llm_provider="openai", model="x"),
            ModelUnavailable,
            "api_base=http://127.0.0.1:9/v1",
        ),
        (ValueError("odd"), ModelError, "ValueError: odd"),
    ]
    for exc, error, hint in cases:
        mapped = caller.map_error(exc, "chunk 1/2")
        assert type(mapped) is error and hint in str(mapped), str(mapped)
        assert str(mapped).startswith("openai/x (chunk 1/2)")
        assert mapped.retryable == (error is not ModelError)


def test_retry_policy_is_validated_in_one_place() -> None:
    policy = RetryPolicy()
    assert (policy.timeout, policy.retries, policy.attempts) == (60.0, 2, 3)
    assert [RetryPolicy(backoff_base=1, backoff_max=5).delay(n) for n in (1, 2, 3, 4)] == [
        1.0, 2.0, 4.0, 5.0,
    ]  # fmt: skip
    assert RetryPolicy(backoff_base=0.1).delay(1, retry_after=3.0) == 3.0  # Retry-After wins
    for bad in (
        {"timeout": 0},
        {"timeout": "60"},
        {"retries": -1},
        {"retries": True},
        {"backoff_base": -1},
        {"backoff_base": 10, "backoff_max": 5},
    ):
        with pytest.raises(InvalidSetting, match="RetryPolicy"):
            RetryPolicy(**bad)
    with pytest.raises(AttributeError):
        policy.timeout = 5  # type: ignore[misc]
    assert retry_policy(None, policy, timeout=5) == RetryPolicy(timeout=5)
    assert retry_policy(RetryPolicy(retries=4), policy, retries=0).retries == 0
    with pytest.raises(InvalidSetting, match="RetryPolicy"):
        retry_policy({"timeout": 5}, policy)  # type: ignore[arg-type]


def test_the_old_module_path_warns_and_works() -> None:
    from memorylab import llm
    from memorylab.compress import llm as old

    with pytest.warns(DeprecationWarning, match="from memorylab.llm import ChatReply"):
        assert old.ChatReply is llm.ChatReply
    with pytest.raises(AttributeError):
        old.nope  # noqa: B018


def test_module_doctests() -> None:
    import doctest

    from memorylab import llm

    result = doctest.testmod(llm)
    assert result.attempted >= 2 and result.failed == 0


# --------------------------------------------------------------------------- failures that say what happened

HISTORY = [{"role": "user", "content": "Deploy the API on port 8443."}]


def test_a_missing_key_is_an_auth_error_at_once_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memorylab import LiteLLMSummarizer
    from memorylab.compress import ContextCompressor
    from memorylab.memory._conversation import Conversation

    litellm = import_litellm()
    attempts: list[str] = []
    real = litellm.acompletion

    async def counted(**kwargs: Any) -> Any:
        attempts.append(kwargs["model"])
        return await real(**kwargs)

    monkeypatch.setattr(litellm, "acompletion", counted)
    summarizer = LiteLLMSummarizer("gpt-4o-mini", retry=RetryPolicy(retries=3, backoff_base=5.0))
    with pytest.raises(ModelAuthError, match="Set OPENAI_API_KEY in the environment") as caught:
        summarizer.summarize(HISTORY)
    assert attempts == ["gpt-4o-mini"]  # no retries (a retry would first wait 5 s)
    assert not caught.value.retryable and "Gave up" not in str(caught.value)
    # The compressor records the same error after one attempt (a failed event, memory unchanged).
    conversation = Conversation(agent_name="NoKey", token_counter=len)
    conversation.add("User", "Deploy the API on port 8443, config in /srv/api.yaml.")
    conversation.add("NoKey", "Deployed.")
    conversation.add("User", "Now restart it.")  # the turn in progress, kept: the rest summarized
    event = ContextCompressor(summarizer=summarizer).compress(conversation, 100, force=True)
    assert attempts == ["gpt-4o-mini"] * 2
    assert event is not None and not event.ok and "OPENAI_API_KEY" in str(event.error)
    assert "ModelAuthError" in str(event.error)


def test_a_refused_key_is_not_retried_and_names_the_variable() -> None:
    from fakes import FakeOpenAIServer, HTTPError
    from memorylab.llm import chat

    with FakeOpenAIServer(HTTPError(401)) as server:
        with pytest.raises(ModelAuthError, match="OPENAI_API_KEY") as caught:
            chat("openai/fake-model", HISTORY, api_base=server.base_url, api_key="bad",
                 retry=RetryPolicy(retries=3, backoff_base=0.01, backoff_max=0.05))  # fmt: skip
        assert server.request_count == 1 and not caught.value.retryable


def test_a_server_on_this_machine_needs_no_key() -> None:
    from fakes import FakeOpenAIServer
    from memorylab.llm import LOCAL_API_KEY, chat

    with FakeOpenAIServer("hello") as server:
        reply = chat("openai/local", HISTORY, api_base=server.base_url)
        assert reply.content == "hello"
        assert server.request_headers[0]["authorization"] == f"Bearer {LOCAL_API_KEY}"


@pytest.mark.parametrize("asynchronous", [False, True])
def test_timeout_bounds_the_whole_attempt_of_a_trickling_server(asynchronous: bool) -> None:
    import asyncio
    import time

    from fakes import FakeOpenAIServer, Reply
    from memorylab import LiteLLMSummarizer

    # Answers at once, then one byte every 0.5 s: each read is quick, the whole reply (~500
    # bytes, ~250 s) is not.
    with FakeOpenAIServer(Reply("a summary " * 20, byte_delay=0.5)) as server:
        summarizer = LiteLLMSummarizer(
            "openai/fake-model", timeout=1, retries=0, llm_args={"api_base": server.base_url}
        )
        started = time.perf_counter()
        with pytest.raises(ModelTimeout, match="within 1 s"):
            if asynchronous:
                asyncio.run(summarizer.asummarize(HISTORY))
            else:
                summarizer.summarize(HISTORY)
        # Bounded by the timeout, not the body: half the body's ~250 s, a margin no loaded
        # machine eats (this also times litellm's first import: seconds of CPU).
        assert time.perf_counter() - started < 120


def test_llm_args_mean_the_same_everywhere() -> None:
    from memorylab import LiteLLMSummarizer
    from memorylab.evaluate import JudgeScorer, ProbeQAScorer

    args = {"timeout": 7, "api_base": "http://127.0.0.1:9/v1", "temperature": 0.3}
    assert LiteLLMSummarizer("openai/m", llm_args=args).retry.timeout == 7.0
    assert ProbeQAScorer("openai/m", llm_args=args).caller.retry.timeout == 7.0
    assert JudgeScorer("openai/m", llm_args=args).caller.retry.timeout == 7.0
    assert Caller("openai/m", llm_args=args).llm_args == {
        "api_base": "http://127.0.0.1:9/v1", "temperature": 0.3,
    }  # fmt: skip
    for bad in ({"num_retries": 2}, {"timeout": 0}, {"stream": True}):
        for build in (
            lambda a: LiteLLMSummarizer("openai/m", llm_args=a),
            lambda a: ProbeQAScorer("openai/m", llm_args=a),
            lambda a: JudgeScorer("openai/m", llm_args=a),
        ):
            with pytest.raises(InvalidSetting):
                build(bad)


def test_the_local_server_says_what_it_needs(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from memorylab.errors import PrerequisiteError
    from memorylab.llm import local_server

    with (
        pytest.raises(InvalidSetting, match="is not a GGUF model file"),
        local_server(tmp_path / "model.bin"),
    ):
        pass  # pragma: no cover
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "llama_cpp" else real(name, *a))  # fmt: skip
    with (
        pytest.raises(PrerequisiteError, match=r"pip install 'memorylab\[local\]'"),
        local_server(model),
    ):
        pass  # pragma: no cover


