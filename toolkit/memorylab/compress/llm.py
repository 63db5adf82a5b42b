"""The one module of memorylab that talks to an LLM provider (litellm, imported lazily).

Everything that needs a model call goes through here: :class:`Caller` for the summarizers,
:func:`chat` / :func:`achat` (a :class:`ChatReply` with text and tool calls) for the
:class:`~memorylab.Agent`. Every call made here

* passes an explicit ``timeout=`` and ``max_retries=0`` (the OpenAI SDK would otherwise retry
  twice, invisibly; ``llm_args`` may not override either);
* is retried deliberately, with tenacity: exponential backoff (honouring ``Retry-After``) on
  rate limits, timeouts, HTTP 5xx and connection errors; never on authentication or
  bad-request errors;
* maps litellm's exceptions to :class:`~memorylab.errors.SummarizerError` subclasses whose
  messages say what to do next;
* when synchronous and made from the main thread, runs litellm on a short-lived worker thread:
  there, litellm's timing hook would install an event loop that nobody closes, and a later
  ``asyncio.run()`` turns it into a ``ResourceWarning: unclosed event loop`` in unrelated code.

:func:`model_context_length` is litellm's input window for a model, or
:data:`DEFAULT_CONTEXT_WINDOW`; :func:`response_usage` / :func:`response_cost` read a reply's
token usage and price. litellm is imported by :func:`import_litellm` on first use, never at
module import.
"""

from __future__ import annotations

import email.utils
import functools
import json
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from memorylab.errors import (
    InvalidSetting,
    SummarizerAuthError,
    SummarizerBadRequest,
    SummarizerError,
    SummarizerRateLimited,
    SummarizerTimeout,
    SummarizerUnavailable,
)
from memorylab.memory.format import content_to_text

if TYPE_CHECKING:
    from tenacity import RetryCallState

__all__ = [
    "DEFAULT_CONTEXT_WINDOW",
    "Caller",
    "ChatReply",
    "achat",
    "chat",
    "check_int",
    "import_litellm",
    "model_context_length",
    "response_cost",
    "response_usage",
]

DEFAULT_CONTEXT_WINDOW = 8192
"""Context window assumed for a model litellm has no information about."""

_T = TypeVar("_T")


# --------------------------------------------------------------------------- litellm plumbing


@functools.cache
def import_litellm() -> Any:
    """Import litellm once, offline-friendly (local price map) and quiet."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


def _run_in_worker_thread(call: Callable[[], _T]) -> _T:
    """Run a blocking litellm call on a short-lived thread and return (or raise) its result.

    litellm's synchronous HTTP path reports timings through ``asyncio.get_event_loop()``, which
    on the main thread silently creates and installs an event loop that nobody closes; the next
    ``asyncio.run()`` drops it and a ``ResourceWarning: unclosed event loop`` fires later, in
    unrelated code. On any other thread that call raises and litellm uses ``asyncio.run``.
    """
    if threading.current_thread() is not threading.main_thread():
        return call()
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # re-raised on the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=target, name="memorylab-llm-call", daemon=True)
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    value: _T = box["value"]
    return value


def _retry_after(exc: BaseException | None) -> float | None:
    """Seconds from a ``Retry-After``/``retry-after-ms`` header of the provider's answer."""
    headers: Any = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        return None
    try:
        millis = headers.get("retry-after-ms")
        if millis is not None:
            return max(0.0, float(millis) / 1000)
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            when = email.utils.parsedate_to_datetime(str(value))
            return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, AttributeError):
        return None


_RETRYABLE = (SummarizerRateLimited, SummarizerTimeout, SummarizerUnavailable)

_FORBIDDEN_LLM_ARGS = {
    "model": "pass the model as the first argument",
    "messages": "memorylab builds the messages",
    "stream": "replies are not streamed",
    "timeout": "use timeout=",
    "max_retries": "use retries= (SDK retries are always off)",
    "num_retries": "use retries= (memorylab retries itself)",
}


def check_int(label: str, value: Any, minimum: int) -> None:
    """Raise :class:`~memorylab.errors.InvalidSetting` unless ``value`` is an int >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidSetting(f"{label} must be an int >= {minimum}, not {value!r}")


def _check_seconds(label: str, value: Any, minimum: float = 0.0, strict: bool = True) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not (value > minimum if strict else value >= minimum):
        sign = ">" if strict else ">="
        raise InvalidSetting(
            f"{label} must be a number of seconds {sign} {minimum:g}, not {value!r}"
        )
    return float(value)


def model_context_length(model: str) -> int:
    """litellm's ``max_input_tokens`` for ``model``, or :data:`DEFAULT_CONTEXT_WINDOW`."""
    try:
        info = import_litellm().get_model_info(model)
        window = info.get("max_input_tokens") or info.get("max_tokens")
    except Exception:  # ModelNotMappedError and friends: litellm does not know the model
        window = None
    return int(window) if window else DEFAULT_CONTEXT_WINDOW


def response_cost(response: Any) -> float | None:
    """litellm's price of a completion in USD, or ``None`` (an unmapped model has no price)."""
    try:
        cost = import_litellm().completion_cost(completion_response=response)
    except Exception:  # an unmapped model has no price
        return None
    return None if cost is None else float(cost)


def response_usage(response: Any) -> tuple[int | None, int | None]:
    """``(prompt_tokens, completion_tokens)`` a provider reported, each ``None`` when missing."""
    usage = getattr(response, "usage", None)
    prompt = getattr(usage, "prompt_tokens", None)
    completion = getattr(usage, "completion_tokens", None)
    return (
        prompt if isinstance(prompt, int) else None,
        completion if isinstance(completion, int) else None,
    )


class Caller:
    """litellm calls with a timeout, SDK retries off, tenacity retries and mapped errors.

    ``llm_args`` may not hold the keys memorylab sets itself (``model``, ``messages``,
    ``stream``, ``timeout``, ``max_retries``, ``num_retries``). ``too_long_hint`` ends the
    message of a context-window error: what the caller's user can change.
    """

    def __init__(
        self,
        model: str,
        *,
        timeout: float,
        retries: int,
        backoff_base: float,
        backoff_max: float,
        llm_args: Mapping[str, Any] | None,
        too_long_hint: str,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InvalidSetting(f"model must be a litellm model name, not {model!r}")
        check_int("retries", retries, 0)
        self.timeout = _check_seconds("timeout", timeout)
        self.backoff_max = _check_seconds("backoff_max", backoff_max)
        self.backoff_base = _check_seconds("backoff_base", backoff_base, strict=False)
        if self.backoff_base > self.backoff_max:
            raise InvalidSetting(f"backoff_base ({backoff_base}) must not exceed backoff_max")
        args = dict(llm_args or {})
        for key, why in _FORBIDDEN_LLM_ARGS.items():
            if key in args:
                raise InvalidSetting(f"llm_args may not contain {key!r}: {why}")
        self.model = model
        self.retries = retries
        self.llm_args = args
        self.too_long_hint = too_long_hint

    def kwargs(self, defaults: Mapping[str, Any], forced: Mapping[str, Any]) -> dict[str, Any]:
        """``defaults`` < ``llm_args`` < ``forced`` < model, timeout and ``max_retries=0``."""
        kwargs = {**defaults, **self.llm_args, **forced}
        kwargs.update(model=self.model, timeout=self.timeout, max_retries=0)
        return kwargs

    def _wait(self, state: RetryCallState) -> float:
        delay = self.backoff_base * 2 ** (state.attempt_number - 1)
        outcome = state.outcome
        error = outcome.exception() if outcome is not None else None
        hinted = _retry_after(error.__cause__ if error is not None else None)
        if hinted is not None:
            delay = max(delay, hinted)
        return float(min(delay, self.backoff_max))

    def _options(self) -> dict[str, Any]:
        from tenacity import retry_if_exception_type, stop_after_attempt

        return {
            "stop": stop_after_attempt(self.retries + 1),
            "wait": self._wait,
            "retry": retry_if_exception_type(_RETRYABLE),
            "reraise": True,
        }

    def _gave_up(self, error: SummarizerError) -> SummarizerError:
        if not self.retries:
            return error
        again = type(error)(f"{error} Gave up after {self.retries + 1} attempts.")
        again.__cause__ = error.__cause__
        return again

    def call(self, kwargs: Mapping[str, Any], what: str, check: Callable[[Any], _T]) -> _T:
        """``check(litellm.completion(**kwargs))``, retried; ``check`` raises for bad replies."""
        from tenacity import Retrying

        litellm = import_litellm()

        def attempt() -> _T:
            try:
                response = _run_in_worker_thread(lambda: litellm.completion(**kwargs))
            except Exception as exc:
                raise self.map_error(exc, what) from exc
            return check(response)

        try:
            for trial in Retrying(**self._options()):
                with trial:
                    return attempt()
        except _RETRYABLE as error:
            raise self._gave_up(error) from error.__cause__
        raise AssertionError("unreachable: tenacity re-raises the last error")

    async def acall(self, kwargs: Mapping[str, Any], what: str, check: Callable[[Any], _T]) -> _T:
        """:meth:`call` with ``litellm.acompletion``."""
        import asyncio

        from tenacity import AsyncRetrying

        litellm = import_litellm()

        async def attempt() -> _T:
            try:
                response = await litellm.acompletion(**kwargs)
            except Exception as exc:
                raise self.map_error(exc, what) from exc
            return check(response)

        try:
            async for trial in AsyncRetrying(sleep=asyncio.sleep, **self._options()):
                with trial:
                    return await attempt()
        except _RETRYABLE as error:
            raise self._gave_up(error) from error.__cause__
        raise AssertionError("unreachable: tenacity re-raises the last error")

    def _key_hint(self) -> str:
        try:
            missing = import_litellm().validate_environment(self.model).get("missing_keys") or []
        except Exception:
            missing = []
        if missing:
            return f"Set {' and '.join(missing)} in the environment"
        return "Check the provider's API key environment variable (e.g. OPENAI_API_KEY)"

    def map_error(self, exc: Exception, what: str) -> SummarizerError:
        """A litellm/OpenAI exception as the matching SummarizerError, saying what to do."""
        litellm = import_litellm()
        name = f"{self.model} ({what})" if what else self.model
        detail = str(exc).strip()[:500]
        api_base = self.llm_args.get("api_base") or self.llm_args.get("base_url")
        where = f"api_base={api_base}" if api_base else "the provider's default endpoint"
        status = getattr(exc, "status_code", None)
        if isinstance(exc, litellm.Timeout):
            return SummarizerTimeout(
                f"{name} did not answer within {self.timeout:g} s. Raise timeout=, lower "
                f"max_tokens or use a faster model. ({detail})"
            )
        if isinstance(exc, litellm.RateLimitError) or status == 429:
            return SummarizerRateLimited(
                f"{name} was rate-limited by the provider (HTTP 429). Lower the request rate "
                f"or concurrency, raise retries=/backoff_max=, or check the account's quota. "
                f"({detail})"
            )
        auth = litellm.AuthenticationError | litellm.PermissionDeniedError
        if isinstance(exc, auth) or status in (401, 403):
            return SummarizerAuthError(
                f"{name}: the provider refused the credentials. {self._key_hint()}, or pass "
                f"llm_args={{'api_key': ...}}. ({detail})"
            )
        if isinstance(exc, litellm.ContextWindowExceededError):
            return SummarizerBadRequest(
                f"{name}: the request is larger than the model's context window. "
                f"{self.too_long_hint} ({detail})"
            )
        if isinstance(exc, litellm.NotFoundError) or status == 404:
            return SummarizerBadRequest(
                f"{name}: model or endpoint not found. Check the model name (with its litellm "
                f"provider prefix, e.g. 'openai/gpt-4o-mini') and {where}. ({detail})"
            )
        unavailable = (
            litellm.InternalServerError,
            litellm.ServiceUnavailableError,
            litellm.BadGatewayError,
            litellm.APIConnectionError,
        )
        if isinstance(exc, unavailable) or (isinstance(status, int) and status >= 500):
            return SummarizerUnavailable(
                f"{name}: the provider could not be reached or failed. Check {where}, the "
                f"network and the provider's status, or try again later. ({detail})"
            )
        if isinstance(exc, litellm.BadRequestError | litellm.UnprocessableEntityError) or (
            isinstance(status, int) and 400 <= status < 500
        ):
            return SummarizerBadRequest(
                f"{name}: the provider rejected the request. Check the model name and "
                f"llm_args. ({detail})"
            )
        return SummarizerError(f"{name}: litellm failed ({type(exc).__name__}: {detail})")


# --------------------------------------------------------------------------- agent calls


@dataclass(frozen=True, slots=True)
class ChatReply:
    """One assistant reply from :func:`chat`: its text, its tool calls and what it cost.

    ``tool_calls`` are ``{"id", "name", "arguments"}`` mappings, ``arguments`` being the JSON
    text the model wrote. ``content`` is ``""`` when the model only called tools.
    """

    content: str = ""
    tool_calls: Sequence[Mapping[str, str]] = ()
    model: str = ""
    finish_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    latency_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["tool_calls"] = [dict(call) for call in self.tool_calls]
        return data


def _chat_reply(response: Any, model: str, started: float) -> ChatReply:
    try:
        choice = response.choices[0]
        message = choice.message
    except (AttributeError, IndexError, TypeError):
        raise SummarizerBadRequest(f"{model}: the provider answered without choices") from None
    content = message.content
    text = content if isinstance(content, str) else content_to_text(content)
    calls: list[dict[str, str]] = []
    for index, call in enumerate(getattr(message, "tool_calls", None) or ()):
        function = getattr(call, "function", None)
        name = getattr(function, "name", None)
        if not name:
            continue
        arguments = getattr(function, "arguments", None)
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments if arguments is not None else {})
        calls.append({"id": str(getattr(call, "id", None) or f"call_{index}"), "name": name,
                      "arguments": arguments})  # fmt: skip
    prompt_tokens, completion_tokens = response_usage(response)
    return ChatReply(
        content=text,
        tool_calls=tuple(calls),
        model=model,
        finish_reason=getattr(choice, "finish_reason", None),
        input_tokens=prompt_tokens,
        output_tokens=completion_tokens,
        cost_usd=response_cost(response),
        latency_s=time.perf_counter() - started,
    )


def _chat_call(
    model: str,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None,
    options: dict[str, Any],
) -> tuple[Caller, dict[str, Any]]:
    caller = Caller(
        model,
        timeout=options.pop("timeout", 60.0),
        retries=options.pop("retries", 2),
        backoff_base=options.pop("backoff_base", 1.0),
        backoff_max=options.pop("backoff_max", 30.0),
        llm_args=options,
        too_long_hint="Compress earlier: lower the compression threshold or context_length.",
    )
    forced: dict[str, Any] = {"messages": [dict(m) for m in messages]}
    if tools:
        forced["tools"] = [dict(t) for t in tools]
    return caller, caller.kwargs({"drop_params": True}, forced)


def chat(
    model: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    **options: Any,
) -> ChatReply:
    """One chat completion for the :class:`~memorylab.Agent`, with the summarizer's safety.

    ``options``: ``timeout`` (60 s), ``retries`` (2), ``backoff_base`` (1 s), ``backoff_max``
    (30 s); everything else goes to ``litellm.completion`` (``temperature``, ``max_tokens``,
    ``api_base``, ``api_key``, ``mock_response``, ``tool_choice`` ...). Retries, ``Retry-After``,
    SDK retries off and the errors (``SummarizerError`` subclasses) are as for
    :class:`~memorylab.compress.summarizers.LiteLLMSummarizer`.
    """
    caller, kwargs = _chat_call(model, messages, tools, dict(options))
    import_litellm()
    started = time.perf_counter()
    return caller.call(kwargs, "", lambda response: _chat_reply(response, model, started))


async def achat(
    model: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    **options: Any,
) -> ChatReply:
    """:func:`chat` with ``litellm.acompletion``."""
    caller, kwargs = _chat_call(model, messages, tools, dict(options))
    import_litellm()
    started = time.perf_counter()
    return await caller.acall(kwargs, "", lambda response: _chat_reply(response, model, started))
