"""The one module of memorylab that talks to an LLM provider (litellm, imported lazily).

Everything that needs a model call goes through here: :class:`Caller` for the summarizers and
scorers, :func:`chat` / :func:`achat` (a :class:`ChatReply` with text and tool calls) for the
:class:`~memorylab.Agent`. Every call made here

* is bounded by the wall clock: each attempt is cancelled after ``RetryPolicy.timeout`` seconds,
  connecting, waiting and reading the reply included (litellm's own ``timeout=`` only bounds
  each read, so a server that trickles its body would hold a call for ever); ``max_retries=0``
  is always passed (the OpenAI SDK would otherwise retry twice, invisibly);
* takes the same ``llm_args`` everywhere (summarizers, readers, judges, the Agent): anything
  litellm accepts (``api_base``, ``api_key``, ``temperature``, ``mock_response`` ...), and
  ``timeout``, which is the attempt's wall-clock bound (it replaces ``RetryPolicy.timeout``);
  retries are a :class:`RetryPolicy`, never ``llm_args``;
* fails at once, without retries, with :class:`~memorylab.errors.ModelAuthError` naming the
  environment variable to set when the provider's key is missing (litellm reports that as a
  server error, which would otherwise be retried);
* is retried deliberately, with tenacity, as one :class:`RetryPolicy` says: exponential backoff
  (honouring ``Retry-After``) on the errors the error table marks retryable (rate limits,
  timeouts, HTTP 5xx, connection errors), never on the others (credentials, bad requests);
* maps the provider's exception to a :class:`~memorylab.errors.ModelError` subclass by a table
  (:func:`error_rule`): exception class -> memorylab class, whether to retry, and a message that
  says what to do next;
* when synchronous, runs the asynchronous path (``litellm.acompletion``, so an attempt can be
  cancelled) in its own event loop, on a short-lived worker thread when this thread is the main
  thread or already runs a loop (a notebook): one implementation of a call, two entry points.

An OpenAI-compatible server on this machine (llama.cpp's ``llama_cpp.server``, Ollama, vLLM) is
a model like any other: ``model="openai/<name>"`` with ``llm_args={"api_base": ...}``; when no key
is configured for it, a placeholder key is sent (such servers accept any).
:func:`local_server` starts llama.cpp's server for a GGUF file and stops it afterwards.
:func:`served_model` is what such a server says it serves (what the evaluation cache keys its
answers by). ``api_base`` may list several servers of one model: each request goes to one, the
one the key of the :func:`same_server` block around it picks.

:func:`model_context_length` is litellm's input window for a model, or
:data:`DEFAULT_CONTEXT_LENGTH`; :func:`token_prices` its list price, :func:`cache_prices` its
prompt-cache prices; they read litellm's model map as a file (:func:`bundled_model_map`) and
import litellm only for a name the map alone does not settle. :func:`response_usage` /
:func:`response_cost` read a reply's token usage and price, :func:`response_usage_details` its
cached, cache-write and reasoning tokens.
litellm (~3 s of CPU) is imported by :func:`import_litellm` on first use, never at module
import; asynchronous code awaits :func:`aimport_litellm`, which imports it on a worker thread
(:func:`start_litellm_import`) so the event loop keeps running meanwhile.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import hashlib
import json
import os
import re
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import IO, TYPE_CHECKING, Any, TypeVar

from memorylab._validation import check_int, check_number
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
from memorylab.memory._format import content_to_text
from memorylab.memory._redact import SECRETS

if TYPE_CHECKING:
    from concurrent.futures import Future

    from tenacity import RetryCallState

__all__ = [
    "CachePrices",
    "Caller",
    "ChatReply",
    "DEFAULT_CONTEXT_LENGTH",
    "ErrorRule",
    "ModelSpeed",
    "RetryPolicy",
    "achat",
    "aimport_litellm",
    "bundled_model_map",
    "bundled_providers",
    "cache_prices",
    "chat",
    "check_int",
    "error_rule",
    "import_litellm",
    "local_server",
    "measure_speed",
    "model_context_length",
    "response_cost",
    "response_usage",
    "response_usage_details",
    "retry_policy",
    "same_server",
    "served_model",
    "start_litellm_import",
    "token_prices",
]

DEFAULT_CONTEXT_LENGTH = 8192
"""Context window (``context_length``) assumed for a model litellm has no information about."""


def __getattr__(name: str) -> Any:
    """``DEFAULT_CONTEXT_WINDOW``, the former name of :data:`DEFAULT_CONTEXT_LENGTH`, still
    works for now and warns (``DeprecationWarning``)."""
    if name == "DEFAULT_CONTEXT_WINDOW":
        warnings.warn("memorylab.llm.DEFAULT_CONTEXT_WINDOW is now DEFAULT_CONTEXT_LENGTH",
                      DeprecationWarning, stacklevel=2)  # fmt: skip
        return DEFAULT_CONTEXT_LENGTH
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_T = TypeVar("_T")


@functools.cache
def import_litellm() -> Any:
    """Import litellm once, offline-friendly (local price map) and quiet."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


_IMPORTING: Future[Any] | None = None
_IMPORTING_LOCK = threading.Lock()


def start_litellm_import() -> Future[Any]:
    """Start importing litellm on a worker thread, once per process, and return the
    :class:`concurrent.futures.Future` of the module (done at once when it is imported).

    Called where a run knows it will need litellm (a comparison that calls a model starts it
    before it plans), so that planning, cache look-ups and local work go on meanwhile. The
    import is CPU-bound Python and shares the GIL: it overlaps with waiting, not with other
    computation."""
    global _IMPORTING
    from concurrent.futures import Future

    with _IMPORTING_LOCK:
        if _IMPORTING is not None:
            return _IMPORTING
        future: Future[Any] = Future()
        future.set_running_or_notify_cancel()  # an awaiter's cancellation cannot cancel it
        _IMPORTING = future
    if import_litellm.cache_info().currsize:
        future.set_result(import_litellm())
        return future

    def load() -> None:
        global _IMPORTING
        try:
            future.set_result(import_litellm())
        except BaseException as exc:  # given to every awaiter; a later call tries again
            with _IMPORTING_LOCK:
                _IMPORTING = None
            future.set_exception(exc)

    threading.Thread(target=load, name="memorylab-import-litellm", daemon=True).start()
    return future


async def aimport_litellm() -> Any:
    """:func:`import_litellm` for a coroutine: the import runs on a worker thread
    (:func:`start_litellm_import`) and is awaited, so the event loop is not held for the
    seconds it takes; once imported, litellm is returned at once."""
    if import_litellm.cache_info().currsize:
        return import_litellm()
    import asyncio

    return await asyncio.wrap_future(start_litellm_import())


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How long one model call may take and how it is retried.

    ``timeout`` bounds each attempt by the wall clock (seconds): connecting, waiting and reading
    the whole reply, however slowly a server trickles it. ``retries`` is the number of attempts
    after the first one, made only for errors the error table marks retryable. The wait before
    retry ``n`` is ``backoff_base * 2**(n-1)`` seconds, at least the provider's ``Retry-After``,
    at most ``backoff_max``.

    >>> RetryPolicy(retries=3, backoff_base=0.5).delay(3)
    2.0
    >>> RetryPolicy(timeout=0)
    Traceback (most recent call last):
    ...
    memorylab.errors.InvalidSetting: RetryPolicy.timeout must be a number of seconds > 0, not 0
    """

    timeout: float = 60.0
    retries: int = 2
    backoff_base: float = 1.0
    backoff_max: float = 30.0

    def __post_init__(self) -> None:
        check_int("RetryPolicy.retries", self.retries, 0)
        seconds = functools.partial(check_number, minimum=0.0, unit="seconds", finite=False)
        timeout = seconds("RetryPolicy.timeout", self.timeout, strict=True)
        object.__setattr__(self, "timeout", timeout)
        base = seconds("RetryPolicy.backoff_base", self.backoff_base, strict=False)
        ceiling = seconds("RetryPolicy.backoff_max", self.backoff_max, strict=True)
        if base > ceiling:
            raise InvalidSetting(
                f"RetryPolicy.backoff_base ({base:g} s) must not exceed backoff_max ({ceiling:g} s)"
            )
        object.__setattr__(self, "backoff_base", base)
        object.__setattr__(self, "backoff_max", ceiling)

    @property
    def attempts(self) -> int:
        """How many times a call is tried at most."""
        return self.retries + 1

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (from 1)."""
        wait = self.backoff_base * 2 ** (retry - 1)
        if retry_after is not None:
            wait = max(wait, retry_after)
        return float(min(wait, self.backoff_max))


def retry_policy(
    retry: RetryPolicy | None,
    default: RetryPolicy,
    *,
    timeout: float | None = None,
    retries: int | None = None,
) -> RetryPolicy:
    """``retry`` (else ``default``) with the ``timeout=`` / ``retries=`` shortcuts applied."""
    if retry is not None and not isinstance(retry, RetryPolicy):
        raise InvalidSetting(
            f"retry must be a memorylab.llm.RetryPolicy(timeout=..., retries=...), not {retry!r}"
        )
    policy = default if retry is None else retry
    if timeout is not None:
        policy = dataclasses.replace(policy, timeout=timeout)
    if retries is not None:
        policy = dataclasses.replace(policy, retries=retries)
    return policy


# --------------------------------------------------------------------------- the error table


@dataclass(frozen=True, slots=True)
class ErrorRule:
    """What a provider exception becomes: the memorylab class, whether a retry may help, and the
    message (``{name}``, ``{timeout}``, ``{where}``, ``{keys}``, ``{too_long}`` and ``{detail}``
    are filled in)."""

    error: type[ModelError]
    retryable: bool
    message: str


_TIMEOUT = ErrorRule(ModelTimeout, True, "{name} did not answer within {timeout:g} s. Raise "
                     "RetryPolicy(timeout=...), lower max_tokens or use a faster model. ({detail})")
_RATE_LIMITED = ErrorRule(ModelRateLimited, True, "{name} was rate-limited by the provider (HTTP "
                          "429). Lower the request rate or concurrency, raise RetryPolicy(retries="
                          "..., backoff_max=...), or check the account's quota. ({detail})")
_AUTH = ErrorRule(ModelAuthError, False, "{name}: the provider refused the credentials. {keys}, "
                  "or pass llm_args={{'api_key': ...}}. ({detail})")
_NO_KEY = ErrorRule(ModelAuthError, False, "{name}: no API key is configured. {keys}, or pass "
                    "llm_args={{'api_key': ...}} (a server on this machine: llm_args={{'api_base': "
                    "'http://127.0.0.1:PORT/v1'}}). ({detail})")
_UNAVAILABLE = ErrorRule(ModelUnavailable, True, "{name}: the provider could not be reached or "
                         "failed. Check {where}, the network and the provider's status, or try "
                         "again later. ({detail})")
_BAD_REQUEST = ErrorRule(ModelBadRequest, False, "{name}: the provider rejected the request. "
                         "Check the model name and llm_args. ({detail})")
_NOT_FOUND = ErrorRule(ModelBadRequest, False, "{name}: model or endpoint not found. Check the "
                       "model name (with its litellm provider prefix, e.g. 'openai/gpt-4o-mini') "
                       "and {where}. ({detail})")
_BLOCKED = ErrorRule(ModelBadRequest, False, "{name}: a content policy, guardrail or budget of the "
                     "provider or of litellm refused the request. Change the content, or the "
                     "guardrail or budget settings. ({detail})")
_TOO_LONG = ErrorRule(ContextWindowExceeded, False, "{name}: the request is larger than the "
                      "model's context window. {too_long} ({detail})")
_BAD_PARAMS = ErrorRule(ModelBadRequest, False, "{name}: the model does not take one of the "
                        "parameters. Remove it from llm_args, or pass llm_args={{'drop_params': "
                        "True}}. ({detail})")
_GENERIC = ErrorRule(ModelError, False, "{name}: litellm failed ({detail}). Check the model name "
                     "and llm_args.")


@functools.cache
def _error_table() -> dict[type[BaseException], ErrorRule]:
    """Provider exception class -> rule. A class not listed takes the rule of its nearest listed
    base class; the generic bases (``openai.APIError`` ...) go by their HTTP status instead."""
    import openai

    ex = import_litellm().exceptions
    return {
        TimeoutError: _TIMEOUT,
        ConnectionError: _UNAVAILABLE,
        openai.APITimeoutError: _TIMEOUT,
        openai.RateLimitError: _RATE_LIMITED,
        openai.AuthenticationError: _AUTH,
        openai.PermissionDeniedError: _AUTH,
        openai.NotFoundError: _NOT_FOUND,
        openai.BadRequestError: _BAD_REQUEST,
        openai.ConflictError: _BAD_REQUEST,
        openai.UnprocessableEntityError: _BAD_REQUEST,
        openai.InternalServerError: _UNAVAILABLE,
        openai.APIConnectionError: _UNAVAILABLE,
        openai.APIResponseValidationError: _UNAVAILABLE,
        ex.ServiceUnavailableError: _UNAVAILABLE,
        ex.BadGatewayError: _UNAVAILABLE,
        ex.ContextWindowExceededError: _TOO_LONG,
        ex.UnsupportedParamsError: _BAD_PARAMS,
        ex.LiteLLMUnknownProvider: _NOT_FOUND,
        ex.ModelNotMappedError: _NOT_FOUND,
        ex.ContentPolicyViolationError: _BLOCKED,
        ex.BudgetExceededError: _BLOCKED,
        ex.BlockedPiiEntityError: _BLOCKED,
        ex.GuardrailRaisedException: _BLOCKED,
        ex.SensitiveDataRouteException: _BLOCKED,
        ex.ModifyResponseException: _BLOCKED,
    }


def _status_rule(status: Any) -> ErrorRule:
    if not isinstance(status, int) or isinstance(status, bool):
        return _GENERIC
    by_status = {401: _AUTH, 403: _AUTH, 404: _NOT_FOUND, 408: _TIMEOUT, 429: _RATE_LIMITED}
    if status in by_status:
        return by_status[status]
    if 400 <= status < 500:
        return _BAD_REQUEST
    return _UNAVAILABLE if status >= 500 else _GENERIC


def error_rule(kind: type[BaseException], status: int | None = None) -> ErrorRule:
    """The rule for a provider exception class (``status``: its HTTP status, when it has one)."""
    table = _error_table()
    for cls in kind.__mro__:
        rule = table.get(cls)
        if rule is not None:
            return rule
    return _status_rule(status)


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
            import email.utils  # an HTTP date: rare, and email.utils is slow to import

            when = email.utils.parsedate_to_datetime(str(value))
            return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, AttributeError):
        return None


# --------------------------------------------------------------------------- calls


def _run_in_worker_thread(call: Callable[[], _T]) -> _T:
    """``call()`` on a short-lived thread when this thread is the main thread or runs an event
    loop (where ``asyncio.run`` cannot run, or would leave the main thread without a loop); on
    any other thread, here. Its result, or its exception re-raised."""
    import asyncio

    try:
        asyncio.get_running_loop()
        running = True
    except RuntimeError:
        running = False
    if not running and threading.current_thread() is not threading.main_thread():
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


_FORBIDDEN_LLM_ARGS = {
    "model": "pass the model as the first argument",
    "messages": "memorylab builds the messages",
    "stream": "replies are not streamed",
    "max_retries": "use retry=RetryPolicy(retries=...) (SDK retries are always off)",
    "num_retries": "use retry=RetryPolicy(retries=...) (memorylab retries itself)",
    "retries": "use retry=RetryPolicy(retries=...)",
    "backoff_base": "use retry=RetryPolicy(backoff_base=...)",
    "backoff_max": "use retry=RetryPolicy(backoff_max=...)",
}

_SERVER_KEY: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "memorylab_server_key", default=None
)


@contextlib.contextmanager
def same_server(key: str) -> Iterator[None]:
    """Requests made in this block (and in the tasks it starts) to a model with
    several servers, ``llm_args={"api_base": [url, ...]}``, go to one of them, the one ``key``
    picks (by its SHA-256: the same in every process). A comparison gives each (case, memory)
    its key, so that a server's prompt cache reads the memory once for all its probes;
    outside such a block every request goes to the first server."""
    token = _SERVER_KEY.set(str(key))
    try:
        yield
    finally:
        # A coroutine abandoned mid-block (an interrupted run) is closed by the collector in
        # another context, where the token means nothing and there is nothing to restore.
        with contextlib.suppress(ValueError):
            _SERVER_KEY.reset(token)


def _served_text(said: Mapping[str, Any] | None) -> str:
    if said is None:
        return "a model it does not name"
    names = [str(m.get("id")) for m in said.get("models", ())] or [str(said)]
    return ", ".join(names) + (f" ({said['props']['model_path']})"
                               if "model_path" in said.get("props", {}) else "")  # fmt: skip


_CREDENTIAL = re.compile(r"KEY|TOKEN|SECRET|PASSWORD")
LOCAL_API_KEY = "memorylab-local"
"""The key sent to a server given by ``api_base`` when no key is configured for it."""


class Caller:
    """litellm calls for one model: a wall-clock timeout, SDK retries off, tenacity retries,
    mapped errors (see the module docstring).

    ``llm_args`` go to litellm as they are, but may not hold the keys memorylab sets itself
    (``model``, ``messages``, ``stream``) or retry settings (``max_retries``, ``num_retries``
    ...: those are ``retry``); ``timeout`` in ``llm_args`` replaces ``retry.timeout``.
    ``too_long_hint`` ends the message of a context-window error: what the caller's user can
    change.
    """

    def __init__(
        self,
        model: str,
        *,
        retry: RetryPolicy | None = None,
        llm_args: Mapping[str, Any] | None = None,
        too_long_hint: str = "Use a model with a larger context window or a shorter input.",
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InvalidSetting(f"model must be a litellm model name, not {model!r}")
        if llm_args is not None and not isinstance(llm_args, Mapping):
            raise InvalidSetting(
                f"llm_args must be a mapping of litellm parameters, not {type(llm_args).__name__}"
            )
        args = dict(llm_args or {})
        for key, why in _FORBIDDEN_LLM_ARGS.items():
            if key in args:
                raise InvalidSetting(f"llm_args may not contain {key!r}: {why}")
        servers = args.get("api_base")
        if isinstance(servers, list | tuple):
            if not servers or not all(isinstance(b, str) and b.strip() for b in servers):
                raise InvalidSetting(
                    "llm_args['api_base'] must be a server's URL or a non-empty list of URLs of "
                    f"servers of one model, not {servers!r}"
                )
            args["api_base"] = list(servers)
        timeout = args.pop("timeout", None)
        self.retry = retry_policy(retry, RetryPolicy(), timeout=timeout)
        self.model = model
        self.llm_args = args
        self.too_long_hint = too_long_hint

    def kwargs(self, defaults: Mapping[str, Any], forced: Mapping[str, Any]) -> dict[str, Any]:
        """``defaults`` < ``llm_args`` < ``forced`` < model, timeout and ``max_retries=0``; a
        placeholder ``api_key`` for an ``api_base`` that has none configured."""
        kwargs = {**defaults, **self.llm_args, **forced}
        kwargs.update(model=self.model, timeout=self.retry.timeout, max_retries=0)
        if isinstance(kwargs.get("api_base"), list):
            kwargs["api_base"] = self._server(kwargs["api_base"], kwargs.get("api_key"))
        if self._api_base() and not kwargs.get("api_key") and self._unset_keys():
            kwargs["api_key"] = LOCAL_API_KEY
        return kwargs

    def _api_base(self) -> str | None:
        base = self.llm_args.get("api_base") or self.llm_args.get("base_url")
        return (", ".join(base) if isinstance(base, list) else str(base)) if base else None

    def _server(self, servers: list[str], api_key: str | None) -> str:
        """The server of ``servers`` this request goes to: the one the key of
        :func:`same_server` picks (the first outside such a block), once every server has said
        it serves the same model (:func:`served_model`), so that their answers are one
        model's and share the cache."""
        said = [served_model(base, model=self.model, api_key=api_key) for base in servers]
        silent = [base for base, one in zip(servers, said, strict=True) if one is None]
        if silent and len(servers) > 1:
            raise InvalidSetting(
                f"llm_args['api_base'] lists several servers, and {silent[0]} does not say what "
                f"model it serves (GET {silent[0].rstrip('/')}/models: no answer): several "
                "servers must say that they serve one model; give that one api_base alone"
            )
        if any(one != said[0] for one in said):
            serves = "; ".join(f"{base} serves {_served_text(one)}"
                               for base, one in zip(servers, said, strict=True))  # fmt: skip
            raise InvalidSetting(
                f"llm_args['api_base'] lists servers of different models ({serves}); give "
                "servers of one model"
            )
        key = _SERVER_KEY.get()
        if key is None:
            return servers[0]
        return servers[int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:12], 16) % len(servers)]

    def missing_keys(self) -> list[str]:
        """The credential variables litellm says this model needs and the environment lacks
        (none when ``llm_args`` give an ``api_key``, an ``api_base`` or a mock)."""
        return [] if self._api_base() else self._unset_keys()

    def _unset_keys(self) -> list[str]:
        if self.llm_args.get("api_key") or any(k.startswith("mock_") for k in self.llm_args):
            return []
        try:
            missing = import_litellm().validate_environment(self.model).get("missing_keys") or []
        except Exception:  # an unknown provider: nothing to say
            return []
        return [str(key) for key in missing if _CREDENTIAL.search(str(key))]

    def _wait(self, state: RetryCallState) -> float:
        outcome = state.outcome
        error = outcome.exception() if outcome is not None else None
        hinted = _retry_after(error.__cause__ if error is not None else None)
        return self.retry.delay(state.attempt_number, hinted)

    def _gave_up(self, error: ModelError) -> ModelError:
        """The last error, saying how many attempts were made."""
        if not (error.retryable and self.retry.retries):
            return error
        again = type(error)(f"{error} Gave up after {self.retry.attempts} attempts.")
        again.retryable = error.retryable
        return again

    def call(self, kwargs: Mapping[str, Any], what: str, check: Callable[[Any], _T]) -> _T:
        """``check(reply)``, retried; ``check`` raises for bad replies. The same path as
        :meth:`acall`, in an event loop of its own."""
        import asyncio

        return _run_in_worker_thread(lambda: asyncio.run(Caller.acall(self, kwargs, what, check)))

    async def acall(self, kwargs: Mapping[str, Any], what: str, check: Callable[[Any], _T]) -> _T:
        """``check(await litellm.acompletion(**kwargs))``, each attempt cancelled after
        ``retry.timeout`` seconds of wall clock, retried as :attr:`retry` says."""
        import asyncio

        from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

        litellm = await aimport_litellm()
        retrying = AsyncRetrying(
            sleep=asyncio.sleep,
            stop=stop_after_attempt(self.retry.attempts),
            wait=self._wait,
            retry=retry_if_exception(lambda e: isinstance(e, ModelError) and e.retryable),
            reraise=True,
        )
        try:
            async for trial in retrying:
                with trial:
                    try:
                        # asyncio.timeout, not wait_for: Python 3.11's wait_for loses a
                        # cancellation (asyncio.run's first Ctrl-C) that lands as the call
                        # ends, and the run went on to the end; timeout() never does.
                        async with asyncio.timeout(self.retry.timeout):
                            response = await litellm.acompletion(**kwargs)
                    except Exception as exc:  # the provider's, as the ModelError its rule names
                        raise self.map_error(exc, what) from exc
                    return check(response)
        except ModelError as error:
            raise self._gave_up(error) from error.__cause__
        raise AssertionError("unreachable: tenacity re-raises the last error")

    def _key_hint(self, missing: Sequence[str]) -> str:
        if missing:
            return f"Set {' and '.join(missing)} in the environment"
        try:
            provider = str(import_litellm().get_llm_provider(self.model)[1])
        except Exception:
            provider = ""
        variable = f"{provider.upper()}_API_KEY" if provider else "the provider's API key variable"
        return f"Check the key in {variable} (or llm_args['api_key'])"

    def map_error(self, exc: Exception, what: str) -> ModelError:
        """The provider's exception as the :class:`~memorylab.errors.ModelError` its rule names;
        any failure while a needed key is missing is that :class:`ModelAuthError`."""
        rule = error_rule(type(exc), getattr(exc, "status_code", None))
        missing = self.missing_keys()
        if missing and rule.error is not ModelAuthError:
            rule = _NO_KEY
        api_base = self._api_base()
        detail = str(exc).strip() or (
            "the attempt ran out of wall-clock time" if isinstance(exc, TimeoutError) else repr(exc)
        )
        detail = SECRETS(detail)  # a provider's message may quote the key it refused
        message = rule.message.format(
            name=f"{self.model} ({what})" if what else self.model,
            timeout=self.retry.timeout,
            where=f"api_base={api_base}" if api_base else "the provider's default endpoint",
            keys=self._key_hint(missing) if rule.error is ModelAuthError else "",
            too_long=self.too_long_hint,
            detail=f"{type(exc).__name__}: {detail[:500]}",
        )
        error = rule.error(message)
        error.retryable = rule.retryable
        return error


# --------------------------------------------------------------------------- replies


def model_context_length(model: str) -> int:
    """litellm's ``max_input_tokens`` for ``model``, or :data:`DEFAULT_CONTEXT_LENGTH`.

    Read from the model map as a file, without importing litellm, when the map settles the
    name (:func:`_map_entry`: a name it lists with its window, or one it has nothing like,
    such as ``openai/my-model``); litellm's ``get_model_info`` answers for the others
    (aliases, dated variants, names its rules match, providers it asks about their models).
    Where both answer they agree, on every name of litellm 1.110's map (tests/test_llm.py);
    a listed name litellm cannot route (``jamba-1.5``) has the map's window here, not 8192."""
    settled, entry = _map_entry(model)
    if settled and entry is None:
        return DEFAULT_CONTEXT_LENGTH
    window = entry.get("max_input_tokens") if entry is not None else None
    if isinstance(window, int) and not isinstance(window, bool) and window > 0:
        return window
    try:
        info = import_litellm().get_model_info(model)
        window = info.get("max_input_tokens") or info.get("max_tokens")
    except Exception:  # ModelNotMappedError and friends: litellm does not know the model
        window = None
    return int(window) if window else DEFAULT_CONTEXT_LENGTH


_ASKS_ELSEWHERE = frozenset({"ollama", "ollama_chat", "lemonade", "huggingface"})
"""Providers whose model information litellm asks their server or the Hugging Face hub for:
litellm answers for their models, never the file alone."""


def _model_map() -> Mapping[str, Any]:
    """The model map litellm uses: its live ``litellm.model_cost`` once litellm is imported
    (models a user registered included), else the bundled file (the same map offline)."""
    module = sys.modules.get("litellm")
    live = getattr(module, "model_cost", None) if module is not None else None
    return live if isinstance(live, dict) and live else bundled_model_map()


_INDEX: dict[tuple[int, int], tuple[list[str], frozenset[str], list[re.Pattern[str]]]] = {}


def _map_index(table: Mapping[str, Any]) -> tuple[list[str], frozenset[str], list[re.Pattern[str]]]:
    """The map's names in lower case, their last ``/`` segments, and litellm's generalization
    rules (the patterns it matches unlisted names against; only the file has them, litellm
    takes them out of its live map); kept for the latest map seen."""
    key = (id(table), len(table))
    index = _INDEX.get(key)
    if index is None:
        names = [str(name).lower() for name in table]  # aliases (``alias_of``) included
        rules = bundled_model_map().get("fallback_generalizations")
        patterns = []
        for rule in rules.get("rules", []) if isinstance(rules, dict) else []:
            with contextlib.suppress(TypeError, KeyError, re.error):
                patterns.append(re.compile(rule["pattern"], re.IGNORECASE))
        index = names, frozenset(n.rsplit("/", 1)[-1] for n in names), patterns
        _INDEX.clear()
        _INDEX[key] = index
    return index


def _matches_rule(model: str, table: Mapping[str, Any]) -> bool:
    patterns = _map_index(table)[2]
    parts = model.lower().split("/")
    tails = ["/".join(parts[i:]) for i in range(len(parts))]
    return any(p.search(tail) for p in patterns for tail in tails)


def _map_entry(model: str) -> tuple[bool, Mapping[str, Any] | None]:
    """What the model map alone says of ``model``: ``(True, entry)`` when it lists the name
    (or, for ``provider/name``, lists ``name`` as that provider's); ``(True, None)`` when
    nothing in it resembles the name, so litellm would not know it either: no listed name
    contains its last segment, no listed name's last segment is part of it and no
    generalization rule matches it; ``(False, None)`` when only litellm can tell (an alias, a
    dated variant, a rule, a provider litellm asks about its models).

    litellm's own lookup tries variants of the name (provider prefix added or dropped, a
    version suffix stripped, aliases, rules): each contains, or is part of, the name, which
    is why a name unlike every listed one is settled as unknown."""
    table = _model_map()
    provider, _, bare = model.partition("/")
    if not table or provider.lower() in _ASKS_ELSEWHERE:
        return False, None
    entry = table.get(model)
    if isinstance(entry, dict) and "litellm_provider" in entry:
        return True, entry
    rule = _matches_rule(model, table)
    candidate = table.get(bare) if bare and entry is None else None
    if isinstance(candidate, dict) and candidate.get("litellm_provider") == provider:
        return (False, None) if rule else (True, candidate)
    if rule or entry is not None:
        return False, None
    names, tails, _ = _map_index(table)
    low = model.lower()
    tail = low.rsplit("/", 1)[-1]
    if any(tail in name for name in names) or any(t in low for t in tails):
        return False, None
    return True, None


@functools.cache
def bundled_model_map() -> Mapping[str, Any]:
    """litellm's own model map (prices, windows, provider of each model name), read from the
    JSON file inside its package without importing litellm: importing it takes seconds, and a
    report prices a column or the CLI checks a name. It is the map litellm itself reads offline
    (``LITELLM_LOCAL_MODEL_COST_MAP=True``, which :func:`import_litellm` sets). Empty when
    litellm or the file is missing."""
    loaded = _bundled_json("model_prices_and_context_window_backup.json")
    return loaded if isinstance(loaded, dict) else {}


@functools.cache
def bundled_providers() -> frozenset[str]:
    """The provider prefixes litellm knows (``openai``, ``ollama`` ...): those its model map
    names and those of its provider list, read without importing litellm; empty without it."""
    providers = {
        info["litellm_provider"]
        for info in bundled_model_map().values()
        if isinstance(info, dict) and isinstance(info.get("litellm_provider"), str)
    }
    endpoints = _bundled_json("provider_endpoints_support_backup.json")
    if isinstance(endpoints, dict) and isinstance(endpoints.get("providers"), dict):
        providers.update(str(name) for name in endpoints["providers"])
    return frozenset(providers)


def _bundled_json(name: str) -> Any:
    """A JSON file of the installed litellm package, found without importing it; ``None``."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("litellm")  # locates the package; does not import it
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        try:
            return json.loads((Path(folder) / name).read_bytes())
        except (OSError, ValueError):
            continue
    return None


_CONDITIONAL_PRICE = re.compile(r"_above_|tier|off_peak")
"""Keys of a map entry whose prices litellm picks by a rule (context size, tier, time of day)."""


def token_prices(model: str) -> tuple[float, float] | None:
    """litellm's list price of ``model`` in USD per input and per output token, or ``None``.

    From the model map as a file, without importing litellm, when the map settles the name
    (:func:`_map_entry`) and lists plain prices (none by context size, tier or time of day);
    litellm's ``cost_per_token`` prices the others. Where both answer they agree, on every
    name of litellm 1.110's map; a listed name litellm cannot route has the map's price."""
    settled, entry = _map_entry(model)
    if settled and entry is None:
        return None
    if entry is not None and not any(_CONDITIONAL_PRICE.search(key) for key in entry):
        listed = entry.get("input_cost_per_token"), entry.get("output_cost_per_token")
        if all(isinstance(p, int | float) and not isinstance(p, bool) for p in listed):
            return float(listed[0]), float(listed[1])  # type: ignore[arg-type]
    litellm = import_litellm()
    million = 1_000_000
    try:
        cost_in, _ = litellm.cost_per_token(model=model, prompt_tokens=million)
        _, cost_out = litellm.cost_per_token(model=model, completion_tokens=million)
    except Exception:  # ModelNotMappedError and friends: no price
        return None
    return float(cost_in) / million, float(cost_out) / million


@dataclass(frozen=True, slots=True)
class CachePrices:
    """A model's prompt-cache prices in litellm's model map (:func:`cache_prices`), USD per token.

    ``read``: an input token read from the provider's prompt cache
    (``cache_read_input_token_cost``); ``write``: an input token written to it
    (``cache_creation_input_token_cost``), ``None`` where the map lists none (OpenAI bills no
    writes apart: a written token costs the input price); ``min_tokens``: the shortest prefix the
    provider caches (``prompt_cache_min_tokens``), ``None`` where the map does not say. The base
    prices: below any context-size tier, for the provider's default cache lifetime (Anthropic's
    one-hour cache, ``..._above_1hr``, costs more to write)."""

    read: float
    write: float | None = None
    min_tokens: int | None = None


def cache_prices(model: str) -> CachePrices | None:
    """litellm's prompt-cache prices of ``model`` (:class:`CachePrices`), or ``None`` where the
    map lists no cache-read price: an unknown model, or one whose caching it does not price
    (no discount is assumed).

    The rule of :func:`token_prices` and :func:`model_context_length`: the map as a file where it
    settles the name (:func:`_map_entry`), litellm's ``get_model_info`` for the others.

    >>> cache_prices("gpt-4o-mini")
    CachePrices(read=7.5e-08, write=None, min_tokens=None)
    """
    settled, entry = _map_entry(model)
    if settled and entry is None:
        return None
    if entry is None:
        try:
            entry = import_litellm().get_model_info(model)
        except Exception:  # ModelNotMappedError and friends: no price
            return None

    def number(key: str) -> float | None:
        value = entry.get(key) if entry is not None else None
        if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
            return float(value)
        return None

    read = number("cache_read_input_token_cost")
    if read is None:
        return None
    least = number("prompt_cache_min_tokens")
    return CachePrices(read, number("cache_creation_input_token_cost"),
                       int(least) if least else None)  # fmt: skip


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


def _reported(value: Any) -> int | None:
    """A count a provider reported: an int (not a bool), else ``None`` (not reported)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def response_usage_details(response: Any) -> dict[str, int | None]:
    """What a provider reported of a reply's usage beyond its input and output, each ``None``
    when it said nothing (never 0 for unknown):

    * ``cached_tokens``: input read from the provider's prompt cache
      (``usage.prompt_tokens_details.cached_tokens``, OpenAI's; else Anthropic's
      ``cache_read_input_tokens``);
    * ``cache_write_tokens``: input written to the cache (Anthropic's
      ``cache_creation_input_tokens``, litellm's ``prompt_tokens_details.cache_write_tokens``);
    * ``reasoning_tokens``: output spent on reasoning
      (``usage.completion_tokens_details.reasoning_tokens``), part of the output tokens.
    """
    usage = getattr(response, "usage", None)
    prompt_details = getattr(usage, "prompt_tokens_details", None)
    output_details = getattr(usage, "completion_tokens_details", None)
    cached = _reported(getattr(prompt_details, "cached_tokens", None))
    if cached is None:
        cached = _reported(getattr(usage, "cache_read_input_tokens", None))
    written = _reported(getattr(usage, "cache_creation_input_tokens", None))
    if written is None:
        written = _reported(getattr(prompt_details, "cache_write_tokens", None))
    return {
        "cached_tokens": cached,
        "cache_write_tokens": written,
        "reasoning_tokens": _reported(getattr(output_details, "reasoning_tokens", None)),
    }


@dataclass(frozen=True, slots=True)
class ChatReply:
    """One assistant reply from :func:`chat`: its text, its tool calls and what it cost.

    ``tool_calls`` are ``{"id", "name", "arguments"}`` mappings, ``arguments`` being the JSON
    text the model wrote. ``content`` is ``""`` when the model only called tools.

    The token counts are the provider's, ``None`` where it reported nothing (never 0 for
    unknown): ``input_tokens`` and ``output_tokens``; ``cached_tokens`` (input read from its
    prompt cache), ``cache_write_tokens`` (input written to it: Anthropic's
    ``cache_creation_input_tokens``) and ``reasoning_tokens`` (output spent reasoning, part of
    ``output_tokens``): :func:`response_usage_details`.
    """

    content: str = ""
    tool_calls: Sequence[Mapping[str, str]] = ()
    model: str = ""
    finish_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    latency_s: float = 0.0
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["tool_calls"] = [dict(call) for call in self.tool_calls]
        return data


def _chat_reply(response: Any, model: str, started: float) -> ChatReply:
    try:
        choice = response.choices[0]
        message = choice.message
    except (AttributeError, IndexError, TypeError):
        raise ModelError(
            f"{model}: the provider answered without choices; check the model and api_base"
        ) from None
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
        **response_usage_details(response),
    )


def _chat_call(
    model: str,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None,
    retry: RetryPolicy | None,
    llm_args: Mapping[str, Any],
) -> tuple[Caller, dict[str, Any], Callable[[Any], ChatReply]]:
    caller = Caller(
        model,
        retry=retry_policy(retry, RetryPolicy()),
        llm_args=llm_args,
        too_long_hint="Compress earlier: lower the compression threshold or context_length.",
    )
    forced: dict[str, Any] = {"messages": [dict(m) for m in messages]}
    if tools:
        forced["tools"] = [dict(t) for t in tools]
    import_litellm()
    started = time.perf_counter()
    return (
        caller,
        caller.kwargs({"drop_params": True}, forced),
        lambda response: _chat_reply(response, model, started),
    )


def chat(
    model: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    retry: RetryPolicy | None = None,
    **llm_args: Any,
) -> ChatReply:
    """One chat completion for the :class:`~memorylab.Agent`, retried as ``retry`` says.

    ``llm_args`` go to ``litellm.completion`` (``temperature``, ``max_tokens``, ``api_base``,
    ``api_key``, ``mock_response``, ``tool_choice`` ...). Errors are
    :class:`~memorylab.errors.ModelError` subclasses (see the module docstring).
    """
    caller, kwargs, check = _chat_call(model, messages, tools, retry, llm_args)
    return caller.call(kwargs, "", check)


async def achat(
    model: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    retry: RetryPolicy | None = None,
    **llm_args: Any,
) -> ChatReply:
    """:func:`chat` with ``litellm.acompletion``."""
    await aimport_litellm()  # before _chat_call imports it: the loop goes on meanwhile
    caller, kwargs, check = _chat_call(model, messages, tools, retry, llm_args)
    return await caller.acall(kwargs, "", check)


@dataclass(frozen=True, slots=True)
class ModelSpeed:
    """How fast a model reads its prompt and writes its reply, in the server's tokens per
    second, measured by :func:`measure_speed` (what a run's time is estimated from).
    ``tokens_per_char``: the server's tokens per character of the text it read, where that was
    measured on a sample of a run's own text (a plan converts the prompts it knows into the
    server's tokens with it; memorylab's tokenizer for the model is an approximation for a
    model on a local server)."""

    read: float
    write: float
    tokens_per_char: float | None = None

    def seconds(self, input_tokens: float, output_tokens: float) -> float:
        return input_tokens / self.read + output_tokens / self.write


def measure_speed(
    model: str,
    *,
    prompt_words: int = 400,
    reply_tokens: int = 24,
    sample: str | None = None,
    **llm_args: Any,
) -> ModelSpeed:
    """A short warm-up of ``model`` (three calls): one untimed (the first call loads what the
    client and the server load once), then one reads a prompt of ``prompt_words`` random words
    and writes one token, and one reads a line and writes ``reply_tokens``; the tokens each took
    come from the server's usage. The words are new each time, so no prompt cache of the server
    applies. For a model on this machine, whose speed no price list knows.

    ``sample``: text like the run's (a case's history): the timed read is a new random word
    and then ``sample``'s first ``prompt_words`` words, and :attr:`ModelSpeed.tokens_per_char`
    is what the server counted of it per character (beyond what it counted of the first call,
    its chat template's own tokens)."""
    import secrets

    def timed(content: str, max_tokens: int) -> tuple[float, ChatReply]:
        started = time.perf_counter()
        reply = chat(model, [{"role": "user", "content": content}], temperature=0.0,
                     max_tokens=max_tokens, **llm_args)  # fmt: skip
        return time.perf_counter() - started, reply

    size = check_int("prompt_words", prompt_words, 10)
    if sample is not None and (not isinstance(sample, str) or len(sample.split()) < 10):
        raise InvalidSetting("sample must be a text of at least 10 words (a case's history)")
    words = (" ".join(sample.split(" ")[:size]) if sample
             else " ".join(secrets.token_hex(3) for _ in range(size)))  # fmt: skip
    instruction = "Reply with one word."
    _, first = timed(instruction, 1)
    read_prompt = f"{secrets.token_hex(3)} {words}\n{instruction}"
    read_s, read = timed(read_prompt, 1)
    write_s, wrote = timed(f"{secrets.token_hex(4)}: count from one to fifty in words.",
                           check_int("reply_tokens", reply_tokens, 2))  # fmt: skip
    read_tokens = read.input_tokens or size * 3
    written = wrote.output_tokens or reply_tokens
    per_char = None
    if sample and read.input_tokens and first.input_tokens:  # the chat template's own tokens
        per_char = (read.input_tokens - first.input_tokens) / (len(read_prompt) - len(instruction))
    # The second call also read a short prompt, the first wrote one token: both are small.
    return ModelSpeed(read=read_tokens / max(read_s, 1e-6), write=written / max(write_s, 1e-6),
                      tokens_per_char=per_char)  # fmt: skip


# --------------------------------------------------------------------------- a local model server


def _free_port(host: str) -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
    return port


def _log_excerpt(path: str, lines: int = 15) -> str:
    """The end of a server's log, after its first lines that name an error (a bad setting is
    reported at the top, then the server prints its whole help text)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.readlines()
    except OSError:
        return ""
    errors = [line for line in text[:-lines] if re.search(r"error|invalid|exception", line, re.I)]
    cause = "".join(errors[:5])
    return (f"{cause}...\n" if cause else "") + "".join(text[-lines:]).strip()


_SERVED: dict[str, dict[str, Any]] = {}
"""The model behind each ``api_base`` that :func:`local_server` is serving in this process."""

_SAID: dict[str, dict[str, Any] | None] = {}
"""What the server at each ``api_base`` said it serves (:func:`served_model`), asked once per
process; a server that could not be reached is asked again next time."""
_SAID_LOCK = threading.Lock()

_MODEL_FIELDS = ("id", "root", "max_model_len", "meta")
"""What of a ``/models`` entry names the model: its id (llama-cpp-python: the GGUF's path;
Ollama: its tag; vLLM: the served name), vLLM's ``root`` (the weights behind a served name) and
``max_model_len``, llama-server's ``meta`` (parameters, size, vocabulary). Not ``created`` or
``permission``, which change from one request to the next."""
_PROPS_FIELDS = ("model_path", "chat_template")
"""What of llama-server's ``GET /props`` names the model: the GGUF's path (its id may be an
``--alias``) and the chat template the prompt is rendered with."""


def served_model(
    api_base: str, *, model: str | None = None, api_key: str | None = None
) -> dict[str, Any] | None:
    """What model answers at ``api_base`` — what it is, not where it listens — or ``None``.

    A server :func:`local_server` runs in this process: its GGUF file's SHA-256 and the settings
    that change its answers. Any other OpenAI-compatible server (llama-server, vLLM, Ollama,
    llama-cpp-python): what it says it serves, asked once per ``api_base`` per process:
    ``{"models": [...]}``, the entries of its ``GET {api_base}/models`` (:data:`_MODEL_FIELDS`;
    when it lists several, the one ``model`` names, without its ``provider/`` prefix), and
    ``"props"``, from llama-server's ``GET /props`` (:data:`_PROPS_FIELDS`). ``None`` for a
    server that does not say (no ``/models``, or not reachable) and for no ``api_base`` (a
    hosted provider): the cache keys those by their address. ``api_key`` (else
    ``OPENAI_API_KEY``, as litellm sends an ``openai/`` model's requests): sent as a bearer
    token (vLLM started with ``--api-key`` asks for one).

    The cache keys a served model by this: a server on a new port finds its answers again,
    several servers of one model share them, and another model at the same address never gets
    the first one's. A server restarted at the same address with another model is not asked
    again by the same process: start a new one (a :func:`local_server` is forgotten when it
    stops).
    """
    base = api_base.rstrip("/")
    if not base:
        return None
    if base in _SERVED:
        return _SERVED[base]
    with _SAID_LOCK:  # one question per server, whatever the threads asking
        if base in _SAID:
            said = _SAID[base]
        else:
            said, settled = _ask_server(base, api_key or os.environ.get("OPENAI_API_KEY"))
            if settled:
                _SAID[base] = said
    if said is None or len(said["models"]) < 2:
        return said
    name = (model or "").split("/", 1)[-1]  # an Ollama tag may leave out its ":latest"
    named = [m for m in said["models"] if m["id"] in (name, f"{name}:latest")]
    return {**said, "models": named} if named else said


def _get_json(url: str, api_key: str | None) -> tuple[Any, bool]:
    """``(the JSON a GET of url answered, settled)``: ``(None, True)`` for an endpoint the
    server does not have; ``(None, False)`` when it could not tell (unreachable, busy,
    refused the key): asked again next time."""
    import urllib.error
    import urllib.request

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                    timeout=10) as answer:  # fmt: skip
            return json.loads(answer.read()), True
    except urllib.error.HTTPError as error:
        return None, error.code in (404, 405, 501)
    except ValueError:  # an answer that is not JSON: no such endpoint
        return None, True
    except OSError:
        return None, False


def _ask_server(base: str, api_key: str | None) -> tuple[dict[str, Any] | None, bool]:
    """What the server at ``base`` says it serves (:func:`served_model`), and whether that is
    settled."""
    listed, settled = _get_json(f"{base}/models", api_key)
    data = listed.get("data") if isinstance(listed, dict) else None
    models = [{k: m[k] for k in _MODEL_FIELDS if m.get(k) is not None}
              for m in data or () if isinstance(m, dict) and m.get("id")]  # fmt: skip
    if not models:
        return None, settled
    said: dict[str, Any] = {"models": sorted(models, key=lambda m: json.dumps(m, default=str))}
    props, _ = _get_json(f"{base.removesuffix('/v1')}/props", api_key)  # at llama-server's root
    if isinstance(props, dict) and any(props.get(k) for k in _PROPS_FIELDS):
        said["props"] = {k: props[k] for k in _PROPS_FIELDS if props.get(k)}
    return said, True


@functools.lru_cache(maxsize=16)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def _server_environment() -> dict[str, str]:
    """This process's environment without the variables ``llama_cpp.server`` would read as
    its settings (pydantic settings: ``CACHE``, ``N_CTX``, ``MODEL``, ``PORT`` ... in any case,
    and ``CONFIG_FILE``): a user's ``CACHE=/some/dir`` made the server exit."""
    from llama_cpp.server.settings import ModelSettings, ServerSettings

    names = {name.lower() for cls in (ModelSettings, ServerSettings) for name in cls.model_fields}
    names.add("config_file")
    return {key: value for key, value in os.environ.items() if key.lower() not in names}


@contextlib.contextmanager
def local_server(
    model_path: str | os.PathLike[str],
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    context_length: int | None = None,
    startup_timeout: float = 180.0,
    server_args: Sequence[str] = (),
    log_path: str | os.PathLike[str] | None = None,
) -> Iterator[str]:
    """Run llama.cpp's OpenAI-compatible server (``python -m llama_cpp.server``) for a GGUF
    model file on this machine, and yield its ``api_base`` (``http://127.0.0.1:PORT/v1``).

    Use the model as ``"openai/local"`` (any name after ``openai/``: the server has one model)
    with ``llm_args={"api_base": api_base}``, and ``context_length=`` the same as here (the
    server's ``--n_ctx``, default 4096 tokens). The server is started on a free port (or
    ``port``), waited for until it answers ``GET /v1/models`` (at most ``startup_timeout``
    seconds; a server that exits or does not answer in time raises
    :class:`~memorylab.errors.ModelUnavailable` with the end of its log), and stopped when the
    block ends, also on an error. ``server_args`` are passed on (``["--n_threads", "2"]``). The
    server gets this process's environment without the variables it would read as its own
    settings, and a session of its own. While it runs, :func:`served_model` tells the cache what
    model answers at its ``api_base``. Its log (what it prints: prefix-cache hits, timings) is
    kept at ``log_path`` when one is given. Needs the ``local`` extra:
    ``pip install 'memorylab[local]'`` (llama-cpp-python with its server).
    """
    import importlib.util
    import subprocess
    import sys
    import tempfile
    import urllib.error
    import urllib.request

    from memorylab.errors import PrerequisiteError

    if context_length is None:
        context_length = 4096
    path = os.fspath(model_path)
    if not path.endswith(".gguf") or not os.path.isfile(path):
        raise InvalidSetting(f"{path} is not a GGUF model file; give the path of a .gguf file")
    for module in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context"):
        if importlib.util.find_spec(module) is None:
            raise PrerequisiteError(
                f"the local model server needs {module}: pip install 'memorylab[local]' "
                "(llama-cpp-python with its server; it builds from source, which takes a while)"
            )
    check_int("context_length", context_length, 64)
    chosen = _free_port(host) if port is None else check_int("port", port, 1)
    base = f"http://{host}:{chosen}/v1"
    # Closed in the finally below.
    log: IO[bytes] = (
        tempfile.NamedTemporaryFile(prefix="memorylab-llama-server-", suffix=".log",  # noqa: SIM115
                                    delete=False)
        if log_path is None else open(log_path, "wb")  # noqa: SIM115
    )  # fmt: skip
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", path, "--host", host,
        "--port", str(chosen), "--n_ctx", str(context_length), *map(str, server_args),
    ]  # fmt: skip
    # A session of its own: a Ctrl-C at the terminal stops memorylab, which stops the server
    # (below) after the calls in flight have ended, instead of killing it under them.
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, env=_server_environment(),
                               start_new_session=True)  # fmt: skip
    info = os.stat(path)
    identity = {"gguf_sha256": _file_sha256(os.path.realpath(path), info.st_size,
                                            info.st_mtime_ns), "n_ctx": context_length}  # fmt: skip
    try:
        deadline = time.monotonic() + float(startup_timeout)
        while True:
            if process.poll() is not None:
                raise ModelUnavailable(
                    f"llama.cpp's server exited (code {process.returncode}) before it answered; "
                    f"its log:\n{_log_excerpt(log.name)}"
                )
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise ModelUnavailable(
                    f"llama.cpp's server did not answer on {base} within {startup_timeout:g} s; "
                    f"raise startup_timeout=. Its log:\n{_log_excerpt(log.name)}"
                )
            time.sleep(0.25)
        _SERVED[base] = identity
        yield base
    finally:
        _SERVED.pop(base, None)
        _SAID.pop(base, None)
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        log.close()
        if log_path is None:
            with contextlib.suppress(OSError):
                os.unlink(log.name)
