"""Summarizers: the ``Summarizer`` protocol and its implementations.

Everything else receives a summarizer, so tests and demos swap in an offline one. Model calls go
through :mod:`memorylab.compress.llm`, the only module that talks to an LLM provider.

* :class:`LiteLLMSummarizer` — any litellm model, with :mod:`~memorylab.compress.llm`'s
  guarantees: an explicit ``timeout=``, ``max_retries=0`` (the OpenAI SDK would otherwise retry
  twice, invisibly) and its own tenacity retries: exponential backoff (honouring
  ``Retry-After``) on rate limits, timeouts, HTTP 5xx and connection errors; never on
  authentication or bad-request errors. litellm's exceptions become
  :class:`~memorylab.errors.SummarizerError` subclasses whose messages say what to do.
* :class:`~memorylab.compress.extractive.ExtractiveSummarizer` — offline and deterministic.
* :class:`~memorylab.compress.scripted.ScriptedSummarizer` — canned replies and failures, for
  tests and teaching.
* :func:`get_summarizer` — a summarizer from a spec string.

Chunking (the whole history, never silently cut)
------------------------------------------------
The input budget of one call is ``context_window - max_tokens - margin`` tokens, where the
context window is ``context_window=`` or litellm's ``get_model_info(model)["max_input_tokens"]``
(:data:`~memorylab.compress.llm.DEFAULT_CONTEXT_WINDOW` = 8192 when litellm does not know the
model) and the margin is 10 % of the window, clamped to [32, 2048], for tokenizer differences
(tokens are counted with :func:`memorylab.compress.tokens.get_token_counter`). When the system
prompt plus :data:`SUMMARY_PROMPT` with the transcript fit, one call is made. Otherwise the
messages are packed, in order and at message boundaries, into chunks that fit with
:data:`CHUNK_PROMPT`; a single message larger than a chunk is split by tokens into labelled
parts. Each chunk is summarized (map), then the partial summaries are merged with
:data:`MERGE_PROMPT` (reduce), in groups and recursively while the merge input is still too
large. ``Summary.chunks`` is the number of LLM calls that produced the summary (retries not
counted). The plan itself is :func:`memorylab.compress._chunking.plan_calls`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from memorylab.compress import llm
from memorylab.compress._chunking import Plan, Prompts, plan_calls, token_counter
from memorylab.errors import EmptySummary, InvalidSetting
from memorylab.memory import format as fmt
from memorylab.memory.format import content_to_text

__all__ = [
    "CHUNK_PROMPT",
    "MERGE_PROMPT",
    "SUMMARY_PROMPT",
    "SUMMARY_SYSTEM_PROMPT",
    "LiteLLMSummarizer",
    "Summarizer",
    "Summary",
    "get_summarizer",
]

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

_PROMPTS = Prompts(SUMMARY_SYSTEM_PROMPT, SUMMARY_PROMPT, CHUNK_PROMPT, MERGE_PROMPT)

if TYPE_CHECKING:
    from memorylab.compress.tokens import TokenCounter


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


def offline_summary(
    name: str,
    text: str,
    messages: Sequence[Mapping[str, Any]],
    counter: TokenCounter,
    started: float,
) -> Summary:
    """The :class:`Summary` of a summarizer that runs locally: one pass, no cost."""
    return Summary(
        text=text,
        model=name,
        input_tokens=counter.count(fmt.history_text(messages)),
        output_tokens=counter.count(text),
        cost_usd=0.0,
        latency_s=time.perf_counter() - started,
        chunks=1,
    )


def _check_history(messages: Sequence[Mapping[str, Any]]) -> None:
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise InvalidSetting("messages must be a sequence of {'role', 'content'} mappings")
    if not any(content_to_text(m.get("content")).strip() for m in messages):
        raise EmptySummary("nothing to summarize: the history is empty")


# --------------------------------------------------------------------------- litellm


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
        self._caller = llm.Caller(
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
        llm.check_int("max_tokens", max_tokens, 1)
        if context_window is not None:
            llm.check_int("context_window", context_window, 2)
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
            self._resolved_window = llm.model_context_length(self.model)
        return self._resolved_window

    def _output_tokens(self, max_tokens: int | None) -> int:
        if max_tokens is None:
            return self.max_tokens
        llm.check_int("max_tokens", max_tokens, 1)
        return max_tokens

    # -- planning (pure: yields prompts, receives texts; see _chunking.plan_calls) -----------
    def _plan(self, messages: Sequence[Mapping[str, Any]], out_tokens: int) -> Plan:
        _check_history(messages)
        counter = token_counter(self.model)
        window = self.get_context_window()
        return (
            yield from plan_calls(
                fmt.history_lines(messages),
                [str(m.get("role") or "unknown") for m in messages],
                name=self.model,
                window=window,
                out_tokens=out_tokens,
                counter=counter,
                prompts=_PROMPTS,
            )
        )

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
            prompt_tokens, completion_tokens = llm.response_usage(response)
            cost = llm.response_cost(response)
            return _CallResult(content.strip(), prompt_tokens, completion_tokens, cost)

        return check

    def _warm_up(self) -> float:
        """Import litellm and load the tokenizer (one-time costs kept out of ``latency_s``)."""
        llm.import_litellm()
        token_counter(self.model).count("")
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
        what, prompt = next(plan)
        while True:
            kwargs = self._kwargs(_request(prompt), out_tokens)
            result = self._caller.call(kwargs, _label(what), self._checker(what))
            totals.add(result)
            try:
                what, prompt = plan.send(result.text)
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
        what, prompt = next(plan)
        while True:
            kwargs = self._kwargs(_request(prompt), out_tokens)
            result = await self._caller.acall(kwargs, _label(what), self._checker(what))
            totals.add(result)
            try:
                what, prompt = plan.send(result.text)
            except StopIteration as done:
                return totals.summary(done.value, self.model, started)


def _label(what: str) -> str:
    return "" if what == "summary" else what


def _request(prompt: str) -> _Request:
    return [
        {"role": "system", "content": SUMMARY_SYSTEM_PROMPT},
        {"role": "user", "content": prompt},
    ]


# --------------------------------------------------------------------------- dispatch

_BUILTIN = (
    "memorylab/extractive", "memorylab/truncate", "memorylab/head-tail", "memorylab/scripted",
)  # fmt: skip


def __getattr__(name: str) -> Any:
    # ScriptedSummarizer lived here before compress/scripted.py: old imports keep working.
    if name == "ScriptedSummarizer":
        from memorylab.compress.scripted import ScriptedSummarizer

        return ScriptedSummarizer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_summarizer(spec: str | Summarizer | None = None, **kwargs: Any) -> Summarizer:
    """A summarizer from a spec.

    ``None`` or ``"memorylab/extractive"``: :class:`ExtractiveSummarizer` (offline);
    ``"memorylab/truncate"`` and ``"memorylab/head-tail"``: the offline baselines of
    :mod:`memorylab.compress.baselines`; ``"memorylab/scripted"``:
    :class:`~memorylab.compress.scripted.ScriptedSummarizer`; any other string: a litellm model
    for :class:`LiteLLMSummarizer`; a summarizer object is returned as is. ``kwargs`` go to the
    constructor.
    """
    if spec is None or spec == "memorylab/extractive":
        from memorylab.compress.extractive import ExtractiveSummarizer

        return ExtractiveSummarizer(**kwargs)
    if isinstance(spec, str):
        name = spec.strip()
        if name == "memorylab/scripted":
            from memorylab.compress.scripted import ScriptedSummarizer

            return ScriptedSummarizer(**kwargs)
        if name in ("memorylab/truncate", "memorylab/head-tail"):
            from memorylab.compress import baselines

            if name == "memorylab/head-tail":
                return baselines.HeadTailSummarizer(**kwargs)
            return baselines.TruncateSummarizer(**kwargs)
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
