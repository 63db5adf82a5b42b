"""Summarizers: the ``Summarizer`` protocol and its implementations.

This is the ONLY module of memorylab that calls an LLM provider (through litellm, imported
lazily). Everything else receives a summarizer, so tests and demos swap in an offline one.

* :class:`LiteLLMSummarizer` — any litellm model. Always passes ``timeout=`` and
  ``max_retries=0`` (the OpenAI SDK would otherwise retry twice, invisibly) and retries on its
  own with tenacity: exponential backoff (honouring ``Retry-After``) on rate limits, timeouts,
  HTTP 5xx and connection errors; never on authentication or bad-request errors. litellm's
  exceptions become :class:`~memorylab.errors.SummarizerError` subclasses whose messages say
  what to do.
* :class:`~memorylab.compress.extractive.ExtractiveSummarizer` — offline and deterministic.
* :class:`ScriptedSummarizer` — canned replies and failures, for tests and teaching.
* :func:`get_summarizer` — a summarizer from a spec string.
* :func:`chat` / :func:`achat` — the :class:`~memorylab.Agent`'s own model calls (a
  :class:`ChatReply` with text and tool calls), with the same timeout, retry and error handling;
  :func:`model_context_length` — litellm's input window for a model, or 8192.

Sync calls run litellm on a short-lived worker thread when called from the main thread: there,
litellm's timing hook would install an event loop that nobody closes, and a later
``asyncio.run()`` turns it into a ``ResourceWarning: unclosed event loop`` in unrelated code.

Chunking (the whole history, never silently cut)
------------------------------------------------
The input budget of one call is ``context_window - max_tokens - margin`` tokens, where the
context window is ``context_window=`` or litellm's ``get_model_info(model)["max_input_tokens"]``
(:data:`DEFAULT_CONTEXT_WINDOW` = 8192 when litellm does not know the model) and the margin is
10 % of the window, clamped to [32, 2048], for tokenizer differences (tokens are counted with
:func:`memorylab.compress.tokens.get_token_counter`). When the system prompt plus
:data:`SUMMARY_PROMPT` with the transcript fit, one call is made. Otherwise the messages are
packed, in order and at message boundaries, into chunks that fit with :data:`CHUNK_PROMPT`; a
single message larger than a chunk is split by tokens into labelled parts. Each chunk is
summarized (map), then the partial summaries are merged with :data:`MERGE_PROMPT` (reduce), in
groups and recursively while the merge input is still too large. ``Summary.chunks`` is the number
of LLM calls that produced the summary (retries not counted).
"""

from __future__ import annotations

import email.utils
import functools
import json
import os
import threading
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from memorylab.errors import (
    EmptySummary,
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

    from memorylab.compress.tokens import TokenCounter

__all__ = [
    "CHUNK_PROMPT",
    "DEFAULT_CONTEXT_WINDOW",
    "MERGE_PROMPT",
    "SUMMARY_PROMPT",
    "SUMMARY_SYSTEM_PROMPT",
    "ChatReply",
    "LiteLLMSummarizer",
    "ScriptedSummarizer",
    "Summarizer",
    "Summary",
    "achat",
    "chat",
    "get_summarizer",
    "model_context_length",
    "render_message",
    "render_transcript",
    "split_by_tokens",
    "truncate_to_tokens",
]

DEFAULT_CONTEXT_WINDOW = 8192
"""Context window assumed for a model litellm has no information about."""

_KEEP = """Keep, specifically and without paraphrasing away details:
- the ORIGINAL TASK and every user instruction, preference and constraint (quote short ones);
- decisions made and their reasons; what was tried, what worked and what failed;
- facts, names, identifiers, numbers, dates, file paths, URLs and shell commands, exactly;
- tool calls and the key lines of their results;
- the current state of the work, open questions and the next steps."""

SUMMARY_SYSTEM_PROMPT = (
    "You compress the conversation history of an AI agent into a faithful working memory. "
    "The agent will continue from your summary alone, so every detail it needs must survive. "
    "Never invent facts, never answer the task yourself, never address the user."
)

SUMMARY_PROMPT = (
    "Summarize the conversation transcript below so the agent can continue the work "
    "without it.\n\n" + _KEEP + "\n\n"
    'The transcript may start with a previous "[Compressed Memory Summary]": it stands for '
    "everything that came before. Carry its content forward, updated where later messages "
    "change it; never drop it.\n\n"
    "Write compact markdown with these sections: Task, Instructions and constraints, "
    "Decisions, Facts and artifacts, Progress, Open questions and next steps. Do not start "
    'with "[Compressed Memory Summary]"; it is added for you.\n\n'
    "<transcript>\n{transcript}\n</transcript>"
)

CHUNK_PROMPT = (
    "The transcript below is part {part} of {total} of one long conversation, in order. "
    "Summarize this part only; the parts' summaries will be merged later.\n\n" + _KEEP + "\n\n"
    "Part 1 begins with the original task: keep it verbatim. If this part starts with a "
    'previous "[Compressed Memory Summary]", carry all of its content forward.\n\n'
    "<transcript>\n{transcript}\n</transcript>"
)

MERGE_PROMPT = (
    "Below are {count} summaries of consecutive parts of one conversation, in chronological "
    "order. Merge them into one summary of the whole conversation.\n\n" + _KEEP + "\n\n"
    "Keep the ORIGINAL TASK from the first part. Where a later part changes an earlier fact "
    "or decision, keep the later one. Drop only exact repetitions.\n\n"
    "Write compact markdown with these sections: Task, Instructions and constraints, "
    "Decisions, Facts and artifacts, Progress, Open questions and next steps.\n\n"
    "<summaries>\n{summaries}\n</summaries>"
)

_FRAMING_TOKENS = 16  # chat-format overhead of a system + user message, rounded up
_LABEL_TOKENS = 24  # room for the "[... part i/n]" label of a split message
_MIN_CHUNK_TOKENS = 128

_T = TypeVar("_T")


# --------------------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class Summary:
    """A summary and what it cost to make.

    ``input_tokens`` / ``output_tokens`` / ``cost_usd`` are ``None`` when unknown (a provider
    that reports no usage, a model without a price). ``chunks`` is the number of LLM calls
    (chunk summaries plus merges; 1 for a single call or an offline summarizer's one pass).
    """

    text: str
    model: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    latency_s: float = 0.0
    chunks: int = 1

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@runtime_checkable
class Summarizer(Protocol):
    """Anything with a ``name`` that turns messages into a :class:`Summary`.

    Messages are mappings with ``"role"``, ``"content"`` (str or any object) and optionally
    ``"timestamp"``. An empty, blank or ``None`` result raises
    :class:`~memorylab.errors.EmptySummary`; it is never returned.
    """

    name: str

    def summarize(
        self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None
    ) -> Summary: ...


# --------------------------------------------------------------------------- rendering


def _timestamp_text(value: Any) -> str:
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    return str(value)


def render_message(message: Mapping[str, Any]) -> str:
    """``[<timestamp>] <Role>: <content>`` (no timestamp part when it is missing).

    Non-string content is rendered with JSON (dicts, lists) or ``str()``; ``None`` is ``""``.
    """
    role = str(message.get("role") or "unknown")
    text = content_to_text(message.get("content"))
    timestamp = message.get("timestamp")
    prefix = f"[{_timestamp_text(timestamp)}] " if timestamp not in (None, "") else ""
    return f"{prefix}{role}: {text}"


def render_transcript(messages: Sequence[Mapping[str, Any]]) -> str:
    """The messages as one transcript: :func:`render_message` blocks separated by blank lines."""
    return "\n\n".join(render_message(m) for m in messages)


def _require_text(text: Any, what: str) -> str:
    if text is None or not isinstance(text, str) or not text.strip():
        raise EmptySummary(f"{what} returned an empty summary")
    return text.strip()


def _check_history(messages: Sequence[Mapping[str, Any]]) -> None:
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise InvalidSetting("messages must be a sequence of {'role', 'content'} mappings")
    if not any(content_to_text(m.get("content")).strip() for m in messages):
        raise EmptySummary("nothing to summarize: the history is empty")


# --------------------------------------------------------------------------- token helpers


def _token_counter(model: str | None) -> TokenCounter:
    from memorylab.compress.tokens import get_token_counter

    return get_token_counter(model)


def _longest_prefix(text: str, limit: int, counter: TokenCounter) -> int:
    """The largest ``n`` with ``count(text[:n]) <= limit`` (at least 1)."""
    lo, hi = 1, min(len(text), max(16, limit * 4))
    while counter.count(text[:hi]) <= limit:
        if hi == len(text):
            return hi
        lo, hi = hi, min(len(text), hi * 2)
    while lo < hi - 1:
        mid = (lo + hi) // 2
        if counter.count(text[:mid]) <= limit:
            lo = mid
        else:
            hi = mid
    return lo


def split_by_tokens(text: str, limit: int, counter: TokenCounter) -> list[str]:
    """Cut ``text`` into consecutive pieces of at most ``limit`` tokens, nothing dropped.

    Cuts prefer a newline, then a space, in the last fifth of a piece.
    """
    if limit < 1:
        raise InvalidSetting(f"limit must be >= 1 token, not {limit}")
    pieces: list[str] = []
    rest = text
    while rest:
        cut = _longest_prefix(rest, limit, counter)  # counts prefixes only: linear overall
        if cut >= len(rest):
            pieces.append(rest)
            break
        floor = cut - cut // 5
        for sep in ("\n", " "):
            at = rest.rfind(sep, floor, cut)
            if at > 0:
                cut = at + 1
                break
        pieces.append(rest[:cut])
        rest = rest[cut:]
    return pieces


def truncate_to_tokens(text: str, limit: int, counter: TokenCounter, marker: str = " …") -> str:
    """``text`` itself when it fits in ``limit`` tokens, else its head plus ``marker``."""
    if counter.count(text) <= limit:
        return text
    room = max(1, limit - counter.count(marker))
    return text[: _longest_prefix(text, room, counter)].rstrip() + marker


def _pack(costs: Sequence[int], budget: int) -> list[list[int]]:
    """Greedy, order-keeping packing of unit indices into groups of at most ``budget`` tokens.

    A unit larger than the budget gets a group of its own.
    """
    groups: list[list[int]] = []
    current: list[int] = []
    used = 0
    for index, cost in enumerate(costs):
        if current and used + cost > budget:
            groups.append(current)
            current, used = [], 0
        current.append(index)
        used += cost + 1  # the blank line between units
    if current:
        groups.append(current)
    return groups


# --------------------------------------------------------------------------- litellm plumbing


@functools.cache
def _litellm() -> Any:
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


def _check_int(label: str, value: Any, minimum: int) -> None:
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
        info = _litellm().get_model_info(model)
        window = info.get("max_input_tokens") or info.get("max_tokens")
    except Exception:  # ModelNotMappedError and friends: litellm does not know the model
        window = None
    return int(window) if window else DEFAULT_CONTEXT_WINDOW


def _cost(response: Any) -> float | None:
    try:
        cost = _litellm().completion_cost(completion_response=response)
    except Exception:  # an unmapped model has no price
        return None
    return None if cost is None else float(cost)


def _usage(response: Any) -> tuple[int | None, int | None]:
    usage = getattr(response, "usage", None)
    prompt = getattr(usage, "prompt_tokens", None)
    completion = getattr(usage, "completion_tokens", None)
    return (
        prompt if isinstance(prompt, int) else None,
        completion if isinstance(completion, int) else None,
    )


class _Caller:
    """litellm calls with a timeout, SDK retries off, tenacity retries and mapped errors."""

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
        _check_int("retries", retries, 0)
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

        litellm = _litellm()

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

        litellm = _litellm()

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
            missing = _litellm().validate_environment(self.model).get("missing_keys") or []
        except Exception:
            missing = []
        if missing:
            return f"Set {' and '.join(missing)} in the environment"
        return "Check the provider's API key environment variable (e.g. OPENAI_API_KEY)"

    def map_error(self, exc: Exception, what: str) -> SummarizerError:
        """A litellm/OpenAI exception as the matching SummarizerError, saying what to do."""
        litellm = _litellm()
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


@dataclass(frozen=True, slots=True)
class _CallResult:
    text: str
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None


class _Totals:
    def __init__(self) -> None:
        self.calls = 0
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self.cost_usd: float | None = 0.0

    def add(self, result: _CallResult) -> None:
        self.calls += 1
        if result.input_tokens is not None:
            self.input_tokens = (self.input_tokens or 0) + result.input_tokens
        if result.output_tokens is not None:
            self.output_tokens = (self.output_tokens or 0) + result.output_tokens
        if self.cost_usd is not None:
            self.cost_usd = None if result.cost_usd is None else self.cost_usd + result.cost_usd

    def summary(self, text: str, model: str, started: float) -> Summary:
        return Summary(
            text=text,
            model=model,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cost_usd=self.cost_usd if self.calls else None,
            latency_s=time.perf_counter() - started,
            chunks=self.calls,
        )


_Request = list[dict[str, str]]
_Plan = Generator[tuple[str, _Request], str, str]


class LiteLLMSummarizer:
    """Summarize with any litellm model, chunking histories larger than its context window.

    ``llm_args`` go to ``litellm.completion`` as they are (``api_base``, ``api_key``,
    ``mock_response``, ``drop_params`` ...; ``drop_params=True`` is the default here), except
    that ``max_tokens`` always comes from this summarizer (the chunk plan depends on it).
    ``retries`` is the number of retries after the first attempt; the wait before retry ``n``
    is ``backoff_base * 2**(n-1)`` seconds, at least the provider's ``Retry-After``, at most
    ``backoff_max``.
    """

    def __init__(
        self,
        model: str,
        *,
        temperature: float = 0.1,
        max_tokens: int = 2000,
        timeout: float = 60.0,
        retries: int = 3,
        backoff_base: float = 1.0,
        backoff_max: float = 30.0,
        context_window: int | None = None,
        llm_args: Mapping[str, Any] | None = None,
    ) -> None:
        self._caller = _Caller(
            model,
            timeout=timeout,
            retries=retries,
            backoff_base=backoff_base,
            backoff_max=backoff_max,
            llm_args=llm_args,
            too_long_hint=(
                "Pass a smaller context_window= so the history is split into chunks, or lower "
                "max_tokens."
            ),
        )
        _check_int("max_tokens", max_tokens, 1)
        if context_window is not None:
            _check_int("context_window", context_window, 2)
        if not isinstance(temperature, int | float) or not 0 <= temperature <= 2:
            raise InvalidSetting(f"temperature must be between 0 and 2, not {temperature!r}")
        self.model = model
        self.name = model
        self.temperature = float(temperature)
        self.max_tokens = max_tokens
        self.timeout = self._caller.timeout
        self.retries = retries
        self.backoff_base = self._caller.backoff_base
        self.backoff_max = self._caller.backoff_max
        self.context_window = context_window
        self.llm_args = self._caller.llm_args
        self._resolved_window: int | None = context_window

    def __repr__(self) -> str:
        shown = {k: ("***" if "key" in k.lower() else v) for k, v in self.llm_args.items()}
        return (
            f"LiteLLMSummarizer({self.model!r}, max_tokens={self.max_tokens}, "
            f"timeout={self.timeout:g}, retries={self.retries}, "
            f"context_window={self.context_window}, llm_args={shown})"
        )

    # -- configuration -----------------------------------------------------------------------
    def get_context_window(self) -> int:
        """``context_window=``, else litellm's ``max_input_tokens``, else 8192."""
        if self._resolved_window is None:
            self._resolved_window = model_context_length(self.model)
        return self._resolved_window

    def _output_tokens(self, max_tokens: int | None) -> int:
        if max_tokens is None:
            return self.max_tokens
        _check_int("max_tokens", max_tokens, 1)
        return max_tokens

    # -- planning (pure: yields requests, receives texts) --------------------------------------
    def _plan(self, messages: Sequence[Mapping[str, Any]], out_tokens: int) -> _Plan:
        _check_history(messages)
        counter = _token_counter(self.model)
        window = self.get_context_window()
        budget = window - out_tokens - min(2048, max(32, window // 10)) - _FRAMING_TOKENS
        system_tokens = counter.count(SUMMARY_SYSTEM_PROMPT)
        units = [render_message(m) for m in messages]
        transcript = "\n\n".join(units)
        prompt_tokens = counter.count(SUMMARY_PROMPT.format(transcript=""))
        if system_tokens + prompt_tokens + counter.count(transcript) <= budget:
            text = yield "summary", _request(SUMMARY_PROMPT.format(transcript=transcript))
            return _require_text(text, self.model)

        chunk_prompt = CHUNK_PROMPT.format(part=99, total=99, transcript="")
        chunk_budget = budget - system_tokens - counter.count(chunk_prompt)
        if chunk_budget < _MIN_CHUNK_TOKENS:
            raise InvalidSetting(
                f"{self.model}: a context window of {window} tokens leaves {max(chunk_budget, 0)} "
                f"tokens per chunk after max_tokens={out_tokens}, the prompt and the margin; "
                "lower max_tokens or raise context_window"
            )
        pieces: list[str] = []
        for number, unit in enumerate(units, start=1):
            if counter.count(unit) <= chunk_budget:
                pieces.append(unit)
                continue
            parts = split_by_tokens(unit, chunk_budget - _LABEL_TOKENS, counter)
            role = str(messages[number - 1].get("role") or "unknown")
            for index, fragment in enumerate(parts, start=1):
                label = f"[message {number} ({role}), part {index}/{len(parts)}]"
                pieces.append(fragment if index == 1 else f"{label} {fragment}")
        chunks = _pack([counter.count(p) for p in pieces], chunk_budget)
        partials: list[str] = []
        for part, chunk in enumerate(chunks, start=1):
            transcript = "\n\n".join(pieces[i] for i in chunk)
            prompt = CHUNK_PROMPT.format(part=part, total=len(chunks), transcript=transcript)
            what = f"chunk {part}/{len(chunks)}"
            text = yield what, _request(prompt)
            partials.append(_require_text(text, f"{self.model} ({what})"))
        merge_prompt = MERGE_PROMPT.format(count=99, summaries="")
        merge_budget = budget - system_tokens - counter.count(merge_prompt)
        return (yield from self._reduce(partials, merge_budget, counter))

    def _reduce(self, partials: list[str], budget: int, counter: TokenCounter) -> _Plan:
        """Merge partial summaries in groups that fit ``budget``, level by level, until one."""
        level = 0
        while len(partials) > 1:
            level += 1
            blocks = [f'<part index="{i}">\n{text}\n</part>' for i, text in enumerate(partials, 1)]
            groups = _pack([counter.count(b) for b in blocks], budget)
            if len(groups) == len(blocks):  # no two fit together: pair them anyway to progress
                groups = [list(range(i, min(i + 2, len(blocks)))) for i in range(0, len(blocks), 2)]
            merged: list[str] = []
            for number, group in enumerate(groups, start=1):
                if len(group) == 1:
                    merged.append(partials[group[0]])
                    continue
                summaries = "\n\n".join(blocks[i] for i in group)
                prompt = MERGE_PROMPT.format(count=len(group), summaries=summaries)
                what = f"merge {number}/{len(groups)} (level {level})"
                text = yield what, _request(prompt)
                merged.append(_require_text(text, f"{self.model} ({what})"))
            partials = merged
        return partials[0]

    # -- one call ------------------------------------------------------------------------------
    def _kwargs(self, request: _Request, out_tokens: int) -> dict[str, Any]:
        return self._caller.kwargs(
            {"temperature": self.temperature, "drop_params": True},
            {"messages": request, "max_tokens": out_tokens},
        )

    def _checker(self, what: str) -> Callable[[Any], _CallResult]:
        def check(response: Any) -> _CallResult:
            try:
                choice = response.choices[0]
                content = choice.message.content
                finish = getattr(choice, "finish_reason", None)
            except (AttributeError, IndexError, TypeError):
                raise EmptySummary(f"{self.model} ({what}) returned no choices") from None
            if content is not None and not isinstance(content, str):
                content = content_to_text(content)
            if content is None or not content.strip():
                hint = " (finish_reason='length': raise max_tokens)" if finish == "length" else ""
                raise EmptySummary(f"{self.model} ({what}) returned an empty summary{hint}")
            prompt_tokens, completion_tokens = _usage(response)
            return _CallResult(content.strip(), prompt_tokens, completion_tokens, _cost(response))

        return check

    def _warm_up(self) -> float:
        """Import litellm and load the tokenizer (one-time costs kept out of ``latency_s``)."""
        _litellm()
        _token_counter(self.model).count("")
        return time.perf_counter()

    # -- public API ----------------------------------------------------------------------------
    def summarize(
        self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None
    ) -> Summary:
        """Summarize the whole history (chunked when needed); see the module docstring."""
        started = self._warm_up()
        out_tokens = self._output_tokens(max_tokens)
        totals = _Totals()
        plan = self._plan(messages, out_tokens)
        what, request = next(plan)
        while True:
            kwargs = self._kwargs(request, out_tokens)
            result = self._caller.call(kwargs, _label(what), self._checker(what))
            totals.add(result)
            try:
                what, request = plan.send(result.text)
            except StopIteration as done:
                return totals.summary(done.value, self.model, started)

    async def asummarize(
        self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None
    ) -> Summary:
        """:meth:`summarize` with ``litellm.acompletion`` (calls of one summary run in order)."""
        started = self._warm_up()
        out_tokens = self._output_tokens(max_tokens)
        totals = _Totals()
        plan = self._plan(messages, out_tokens)
        what, request = next(plan)
        while True:
            kwargs = self._kwargs(request, out_tokens)
            result = await self._caller.acall(kwargs, _label(what), self._checker(what))
            totals.add(result)
            try:
                what, request = plan.send(result.text)
            except StopIteration as done:
                return totals.summary(done.value, self.model, started)


def _label(what: str) -> str:
    return "" if what == "summary" else what


def _request(prompt: str) -> _Request:
    return [
        {"role": "system", "content": SUMMARY_SYSTEM_PROMPT},
        {"role": "user", "content": prompt},
    ]


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
    prompt_tokens, completion_tokens = _usage(response)
    return ChatReply(
        content=text,
        tool_calls=tuple(calls),
        model=model,
        finish_reason=getattr(choice, "finish_reason", None),
        input_tokens=prompt_tokens,
        output_tokens=completion_tokens,
        cost_usd=_cost(response),
        latency_s=time.perf_counter() - started,
    )


def _chat_call(
    model: str,
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None,
    options: dict[str, Any],
) -> tuple[_Caller, dict[str, Any]]:
    caller = _Caller(
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
    :class:`LiteLLMSummarizer`.
    """
    caller, kwargs = _chat_call(model, messages, tools, dict(options))
    _litellm()
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
    _litellm()
    started = time.perf_counter()
    return await caller.acall(kwargs, "", lambda response: _chat_reply(response, model, started))


# --------------------------------------------------------------------------- scripted


class ScriptedSummarizer:
    """Canned replies, in order and cycling, with scripted failures; records every call.

    Call ``i`` (0-based, counting failures) raises ``error`` when ``i in fail_on`` (default
    :class:`~memorylab.errors.SummarizerUnavailable`; a class is instantiated, an instance is
    raised as is); a failed call does not use up a reply. A reply of ``None`` or a blank string
    raises :class:`~memorylab.errors.EmptySummary`. ``delay`` seconds are slept per call.
    ``.calls`` holds each call's messages (copied).
    """

    def __init__(
        self,
        replies: Sequence[str | None] = ("summary",),
        *,
        delay: float = 0.0,
        fail_on: Sequence[int] = (),
        error: BaseException | type[BaseException] | None = None,
        name: str = "memorylab/scripted",
    ) -> None:
        if isinstance(replies, str):
            replies = (replies,)
        if not replies:
            raise InvalidSetting("ScriptedSummarizer needs at least one reply")
        if not isinstance(delay, int | float) or delay < 0:
            raise InvalidSetting(f"delay must be a number of seconds >= 0, not {delay!r}")
        self.replies: tuple[str | None, ...] = tuple(replies)
        self.delay = float(delay)
        self.fail_on = frozenset(int(i) for i in fail_on)
        self.error = error
        self.name = name
        self.calls: list[list[dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._next_reply = 0

    def __repr__(self) -> str:
        return f"ScriptedSummarizer({len(self.replies)} replies, calls={len(self.calls)})"

    def _take(self, messages: Sequence[Mapping[str, Any]]) -> tuple[int, str | None, bool]:
        with self._lock:
            index = len(self.calls)
            self.calls.append([dict(m) for m in messages])
            if index in self.fail_on:
                return index, None, True
            reply = self.replies[self._next_reply % len(self.replies)]
            self._next_reply += 1
            return index, reply, False

    def _finish(self, index: int, reply: str | None, fail: bool, started: float) -> Summary:
        if fail:
            error = self.error if self.error is not None else SummarizerUnavailable
            if isinstance(error, type):
                raise error(f"{self.name}: scripted failure on call {index}")
            raise error
        if reply is None or not str(reply).strip():
            raise EmptySummary(f"{self.name}: scripted empty reply on call {index}")
        return Summary(
            text=str(reply),
            model=self.name,
            cost_usd=0.0,
            latency_s=time.perf_counter() - started,
            chunks=1,
        )

    def summarize(
        self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None
    ) -> Summary:
        started = time.perf_counter()
        index, reply, fail = self._take(messages)
        if self.delay:
            time.sleep(self.delay)
        return self._finish(index, reply, fail, started)

    async def asummarize(
        self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None
    ) -> Summary:
        started = time.perf_counter()
        index, reply, fail = self._take(messages)
        if self.delay:
            import asyncio

            await asyncio.sleep(self.delay)
        return self._finish(index, reply, fail, started)


# --------------------------------------------------------------------------- dispatch

_BUILTIN = ("memorylab/extractive", "memorylab/scripted")


def get_summarizer(spec: str | Summarizer | None = None, **kwargs: Any) -> Summarizer:
    """A summarizer from a spec.

    ``None`` or ``"memorylab/extractive"``: :class:`ExtractiveSummarizer` (offline);
    ``"memorylab/scripted"``: :class:`ScriptedSummarizer`; any other string: a litellm model
    for :class:`LiteLLMSummarizer`; a summarizer object is returned as is. ``kwargs`` go to the
    constructor.
    """
    if spec is None or spec == "memorylab/extractive":
        from memorylab.compress.extractive import ExtractiveSummarizer

        return ExtractiveSummarizer(**kwargs)
    if isinstance(spec, str):
        name = spec.strip()
        if name == "memorylab/scripted":
            return ScriptedSummarizer(**kwargs)
        if name.lower().startswith("memorylab/"):
            raise InvalidSetting(
                f"unknown memorylab summarizer {spec!r}; valid: {', '.join(_BUILTIN)} "
                "(or a litellm model name such as 'gpt-4o-mini')"
            )
        if not name:
            raise InvalidSetting("a summarizer spec must not be empty")
        return LiteLLMSummarizer(name, **kwargs)
    if isinstance(spec, Summarizer):
        if kwargs:
            raise InvalidSetting(
                f"options {sorted(kwargs)} cannot be applied to an existing summarizer object"
            )
        return spec
    raise InvalidSetting(
        f"a summarizer spec is a name, a Summarizer or None, not {type(spec).__name__}"
    )
