"""``LiteLLMSummarizer``: summaries by any litellm model, and the prompts it sends.

Model calls go through :mod:`memorylab.llm` (a :class:`~memorylab.llm.RetryPolicy`, SDK retries
off, errors mapped to :class:`~memorylab.errors.ModelError` subclasses that say what to do).

Chunking (the whole history, never silently cut)
------------------------------------------------
The input budget of one call is ``context_length - max_tokens - margin`` tokens, where the
context window is ``context_length=`` or litellm's ``max_input_tokens`` for the model
(:func:`memorylab.llm.model_context_length`, read from litellm's model map without importing it;
:data:`~memorylab.llm.DEFAULT_CONTEXT_LENGTH` = 8192 when litellm does not know the model) and
the margin is 10 % of the window, clamped to [32, 2048], for tokenizer differences (tokens are
counted with :func:`memorylab.compress._tokens.get_token_counter`). When the system prompt plus
:data:`SUMMARY_PROMPT` with the transcript fit, one call is made. Otherwise the messages are
packed, in order and at message boundaries, into chunks that fit with :data:`CHUNK_PROMPT`; a
single message larger than a chunk is split by tokens into labelled parts. Each chunk is
summarized (map), then the partial summaries are merged with :data:`MERGE_PROMPT` (reduce), in
groups and recursively while the merge input is still too large. ``Summary.chunks`` is the number
of LLM calls that produced the summary (retries not counted). Each reply is held to the call's
``max_tokens`` by :func:`memorylab.compress._base.fit_to_budget` (a provider that ignores it has
its reply cut, ``Summary.truncated``), so neither a merge nor the compacted context grows. The
plan itself is
:func:`memorylab.compress._chunking.plan_calls`; :meth:`LiteLLMSummarizer.estimate` runs the same
plan without calling the model.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memorylab import llm
from memorylab._names import renamed_attribute, renamed_keyword
from memorylab.compress._base import BaseSummarizer, Summary, check_history, fit_to_budget
from memorylab.compress._chunking import Plan, Prompts, plan_calls
from memorylab.compress._tokens import get_token_counter
from memorylab.errors import EmptySummary, InvalidSetting, MemorylabError
from memorylab.memory import _format as fmt

if TYPE_CHECKING:
    from typing import Self

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

SUMMARIZER_RETRY = llm.RetryPolicy(retries=3)
"""The retry policy of a :class:`LiteLLMSummarizer` unless ``retry=`` says otherwise."""

_TOO_LONG = (
    "Pass a smaller context_length= so the history is split into chunks, or lower max_tokens."
)


@dataclass(frozen=True, slots=True)
class _CallResult:
    text: str
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    truncated: bool = False


_Request = tuple[dict[str, Any], str, Callable[[Any], _CallResult]]
"""What :meth:`llm.Caller.call` takes for one call: litellm's kwargs, a label, the reply check."""


class _Run:
    """One summary in progress: the plan, the calls it asked for and what they cost."""

    def __init__(self, summarizer: LiteLLMSummarizer, plan: Plan, out_tokens: int) -> None:
        self.summarizer = summarizer
        self.plan = plan
        self.out_tokens = out_tokens
        self.started = time.perf_counter()
        self.calls = 0
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None
        self.cost_usd: float | None = 0.0
        self.truncated = False
        self.summary: Summary | None = None

    def _request(self, what: str, prompt: str) -> _Request:
        s = self.summarizer
        messages = [
            {"role": "system", "content": SUMMARY_SYSTEM_PROMPT},
            {"role": "user", "content": prompt},
        ]
        kwargs = s._caller.kwargs(
            {"temperature": s.temperature, "drop_params": True},
            {"messages": messages, "max_tokens": self.out_tokens},
        )
        return kwargs, ("" if what == "summary" else what), s._checker(what, self.out_tokens)

    def first(self) -> _Request:
        return self._request(*next(self.plan))

    def send(self, result: _CallResult) -> _Request | None:
        """Count ``result`` and return the next request, or ``None`` once :attr:`summary` is
        made."""
        self.calls += 1
        self.truncated = self.truncated or result.truncated
        if result.input_tokens is not None:
            self.input_tokens = (self.input_tokens or 0) + result.input_tokens
        if result.output_tokens is not None:
            self.output_tokens = (self.output_tokens or 0) + result.output_tokens
        if self.cost_usd is not None:
            self.cost_usd = None if result.cost_usd is None else self.cost_usd + result.cost_usd
        try:
            return self._request(*self.plan.send(result.text))
        except StopIteration as done:
            self.summary = Summary(
                text=done.value,
                model=self.summarizer.model,
                input_tokens=self.input_tokens,
                output_tokens=self.output_tokens,
                cost_usd=self.cost_usd,
                latency_s=time.perf_counter() - self.started,
                chunks=self.calls,
                truncated=self.truncated,
            )
            return None


class LiteLLMSummarizer(BaseSummarizer):
    """Summarize with any litellm model, chunking histories larger than its context window.

    Args:
        model: a litellm model name, with its provider prefix where litellm needs one
            (``"gpt-4o-mini"``, ``"openai/my-model"`` for an OpenAI-compatible server).
        temperature: sampling temperature, 0 to 2.
        max_tokens: the summary's budget in tokens (each call's ``max_tokens``; the chunk plan
            depends on it). ``summarize(max_tokens=...)`` overrides it for one summary.
        context_length: the model's input window in tokens; ``None`` asks litellm
            (``max_input_tokens``), else :data:`~memorylab.llm.DEFAULT_CONTEXT_LENGTH`. Its
            former name ``context_window=`` still works for now and warns
            (``DeprecationWarning``).
        llm_args: given to ``litellm.completion`` as they are (``api_base``, ``api_key``,
            ``mock_response``, ``drop_params`` ...; ``drop_params=True`` is the default here).
            They mean the same as everywhere in memorylab (:class:`memorylab.llm.Caller`):
            ``timeout`` is the wall-clock bound of each attempt (as ``retry.timeout``); retries
            are ``retry``, never llm_args.
        retry: timeout and retries of each call; default :data:`SUMMARIZER_RETRY`.
        timeout: shortcut that replaces ``retry.timeout`` (seconds of wall clock per attempt).
        retries: shortcut that replaces ``retry.retries`` (attempts after the first one).
    """

    local = False
    model: str
    # The former names, for a release.
    context_window = renamed_attribute("context_window", "context_length")
    get_context_window = renamed_attribute("get_context_window", "get_context_length")

    def __init__(
        self,
        model: str,
        *,
        temperature: float = 0.1,
        max_tokens: int = 2000,
        context_length: int | None = None,
        llm_args: Mapping[str, Any] | None = None,
        retry: llm.RetryPolicy | None = None,
        timeout: float | None = None,
        retries: int | None = None,
        context_window: int | None = None,  # the former name of context_length
    ) -> None:
        context_length = renamed_keyword("LiteLLMSummarizer", "context_window", "context_length",
                                         context_window, context_length)  # fmt: skip
        policy = llm.retry_policy(retry, SUMMARIZER_RETRY, timeout=timeout, retries=retries)
        self._caller = llm.Caller(model, retry=policy, llm_args=llm_args, too_long_hint=_TOO_LONG)
        llm.check_int("max_tokens", max_tokens, 1)
        if context_length is not None:
            llm.check_int("context_length", context_length, 2)
        if not isinstance(temperature, int | float) or not 0 <= temperature <= 2:
            raise InvalidSetting(f"temperature must be between 0 and 2, not {temperature!r}")
        self.model = model
        self.name = model
        self.temperature = float(temperature)
        self.max_tokens: int = max_tokens
        self.context_length = context_length
        self._resolved_length: int | None = context_length

    @property
    def retry(self) -> llm.RetryPolicy:
        return self._caller.retry

    @property
    def llm_args(self) -> dict[str, Any]:
        return self._caller.llm_args

    def __repr__(self) -> str:
        shown = {k: ("***" if "key" in k.lower() else v) for k, v in self.llm_args.items()}
        return (
            f"LiteLLMSummarizer({self.model!r}, max_tokens={self.max_tokens}, "
            f"timeout={self.retry.timeout:g}, retries={self.retry.retries}, "
            f"context_length={self.context_length}, llm_args={shown})"
        )

    def get_context_length(self) -> int:
        """``context_length=``, else litellm's ``max_input_tokens``, else 8192."""
        if self._resolved_length is None:
            self._resolved_length = llm.model_context_length(self.model)
        return self._resolved_length

    def _output_tokens(self, max_tokens: int | None) -> int:
        return self.max_tokens if max_tokens is None else llm.check_int("max_tokens", max_tokens, 1)

    def _plan(self, messages: Sequence[Mapping[str, Any]], out_tokens: int) -> Plan:
        """The calls of one summary (pure: yields prompts, is sent the replies' texts)."""
        check_history(messages)
        return plan_calls(
            fmt.history_lines(messages),
            [str(m.get("role") or "unknown") for m in messages],
            name=self.model,
            window=self.get_context_length(),
            out_tokens=out_tokens,
            counter=get_token_counter(self.model),
            prompts=_PROMPTS,
        )

    def _checker(self, what: str, out_tokens: int) -> Callable[[Any], _CallResult]:
        def check(response: Any) -> _CallResult:
            try:
                choice = response.choices[0]
                content = choice.message.content
                finish = getattr(choice, "finish_reason", None)
            except (AttributeError, IndexError, TypeError):
                raise EmptySummary(f"{self.model} ({what}) returned no choices") from None
            if content is not None and not isinstance(content, str):
                content = fmt.content_to_text(content)
            if content is None or not content.strip():
                hint = " (finish_reason='length': raise max_tokens)" if finish == "length" else ""
                raise EmptySummary(f"{self.model} ({what}) returned an empty summary{hint}")
            usage, cost = llm.response_usage(response), llm.response_cost(response)
            text, cut = fit_to_budget(content.strip(), out_tokens, get_token_counter(self.model))
            return _CallResult(text, *usage, cost, cut)

        return check

    def _start(self, messages: Sequence[Mapping[str, Any]], max_tokens: int | None) -> _Run:
        # One-time costs (importing litellm: the caller's; loading the tokenizer) stay out of
        # latency_s.
        get_token_counter(self.model).count("")
        out_tokens = self._output_tokens(max_tokens)
        return _Run(self, self._plan(messages, out_tokens), out_tokens)

    def summarize(
        self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None
    ) -> Summary:
        """Summarize the whole history (chunked when needed); see the module docstring."""
        llm.import_litellm()
        run = self._start(messages, max_tokens)
        request: _Request | None = run.first()
        while request is not None:
            request = run.send(self._caller.call(*request))
        assert run.summary is not None
        return run.summary

    async def asummarize(
        self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None
    ) -> Summary:
        """:meth:`summarize` with ``litellm.acompletion`` (calls of one summary run in order;
        litellm is imported on a worker thread the first time, the event loop going on)."""
        await llm.aimport_litellm()
        run = self._start(messages, max_tokens)
        request: _Request | None = run.first()
        while request is not None:
            request = run.send(await self._caller.acall(*request))
        assert run.summary is not None
        return run.summary

    def estimate(
        self, messages: Sequence[Mapping[str, Any]], max_tokens: int | None = None
    ) -> list[tuple[str, int, int]]:
        """The calls :meth:`summarize` would make, each answered at the full ``max_tokens``.

        Runs the real plan with stand-in replies, so chunks and merges are counted as they
        would be made. A history the summarizer would refuse makes no call.
        """
        out_tokens = self._output_tokens(max_tokens)
        counter = get_token_counter(self.model)
        system = counter.count(SUMMARY_SYSTEM_PROMPT)
        stand_in = " ".join(["x"] * out_tokens)
        calls: list[tuple[str, int, int]] = []
        try:
            plan = self._plan(messages, out_tokens)
            _what, prompt = next(plan)
            while True:
                calls.append((self.model, system + counter.count(prompt), out_tokens))
                _what, prompt = plan.send(stand_in)
        except StopIteration:
            return calls
        except MemorylabError:  # an empty history, a window too small: the run fails, unpaid
            return []

    def with_caller(self, wrap: Callable[[llm.Caller], llm.Caller]) -> Self:
        """A copy whose calls go through ``wrap(caller)`` (the context window resolved first, so
        the copies share it)."""
        self.get_context_length()
        bound = copy.copy(self)
        bound._caller = wrap(self._caller)
        return bound
