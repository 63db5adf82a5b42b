"""What every summarizer shares: the :class:`Summary` record, the :class:`Summarizer` protocol,
:class:`BaseSummarizer`, the base class of the built-in ones, and :class:`BudgetedSummarizer`, the
base of the local ones that write within a token budget (extractive, truncate, head-tail).

A summarizer (the :class:`Summarizer` protocol) declares everything the orchestrators (the
compressor, replays and sweeps, comparisons and their cost guard) read of it: ``name``,
``model`` (the model it calls, ``None`` when none), ``summarize(messages, *, max_tokens=None) ->
Summary`` and:

* ``asummarize``: the same, awaitable; by default ``summarize`` on a worker thread, so an event
  loop (a comparison) keeps other work going meanwhile;
* ``local``: True when the summarizer runs on this machine and calls no model (no cost, nothing to
  cache);
* ``estimate(messages, max_tokens)``: the model calls a summary would make, as ``(model,
  input_tokens, output_tokens)`` (none for a local one), for a comparison's cost guard;
* ``with_caller(wrap)``: a copy whose model calls go through ``wrap(caller)`` (a comparison's
  on-disk cache); a summarizer without model calls returns itself;
* ``max_tokens``: its own summary budget when none is asked (``None``: it has none; a
  comparison's cost guard then plans 1024 tokens); ``min_tokens``: the smallest budget it
  accepts (a replay asking for a modelled size asks for no less);
* ``bound``: ``"ceiling"`` or ``"floor"`` for the reference summarizers of a comparison
  (``memorylab/full``, ``memorylab/none``), else ``None``;
* ``summary_of_case(case)``: the summary an evaluation case already has, scored as it is
  (``memorylab/existing``); ``None``, the default: summarize the case's messages.

:class:`BaseSummarizer` gives the defaults of one that runs locally (``local`` True, no model).
A summarizer users write is registered by name like the built-in ones
(:func:`memorylab.compress.register_summarizer`). One that is only a ``name`` and a
``summarize`` is completed where it enters (:func:`as_summarizer`: ``get_summarizer``,
comparisons): ``local`` False (a user's object may call a model), ``model`` None, no estimated
calls, ``with_caller`` itself, ``asummarize`` on a thread, and :class:`BaseSummarizer`'s
``max_tokens``, ``min_tokens``, ``bound`` and ``summary_of_case``; what it declares is kept. The
orchestrators read these as attributes, never by ``getattr`` (``tests/test_capabilities.py``).
Everything here imports only the floor below it.

The budget rule (:func:`fit_to_budget`, one implementation): a summary is never accepted longer
than its budget. A model's reply (each call's: summaries, chunks, merges) within ``max_tokens``
plus :data:`BUDGET_TOLERANCE` (tokenizers differ a little between memorylab's count and the
provider's) is kept as it is; a longer one — a provider that ignores ``max_tokens`` — is cut at
a token boundary to ``max_tokens`` tokens, ending with :data:`CUT_MARKER`, and the
:class:`Summary` says ``truncated=True``. So a compaction never makes the context grow.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from memorylab.compress._chunking import truncate_to_tokens
from memorylab.compress._tokens import TokenCounter, get_token_counter
from memorylab.errors import EmptySummary, InvalidSetting
from memorylab.llm import check_int
from memorylab.memory import _format as fmt

if TYPE_CHECKING:
    from typing import Self

    from memorylab.llm import Caller


@dataclass(frozen=True, slots=True)
class Summary:
    """A summary and what it cost to make.

    ``input_tokens`` / ``output_tokens`` / ``cost_usd`` are ``None`` when unknown (a provider
    that reports no usage, a model without a price). ``chunks`` is the number of LLM calls
    (chunk summaries plus merges; 1 for a single call or a local summarizer's one pass).
    ``truncated``: a reply was over its budget and was cut (:func:`fit_to_budget`).
    """

    text: str
    model: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    latency_s: float = 0.0
    chunks: int = 1
    truncated: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@runtime_checkable
class Summarizer(Protocol):
    """What the orchestrators read of a summarizer (the module docstring): a ``name``, the
    ``model`` it calls, whether it is ``local``, its budgets (``max_tokens``, ``min_tokens``),
    its ``bound``, and the five methods.

    Messages are mappings with ``"role"``, ``"content"`` (str or any object) and optionally
    ``"timestamp"``. An empty, blank or ``None`` result raises
    :class:`~memorylab.errors.EmptySummary`; it is never returned — except by the floor of
    comparisons, ``memorylab/none``, whose empty summary is its whole point.
    """

    name: str

    @property
    def model(self) -> str | None: ...

    @property
    def local(self) -> bool: ...

    @property
    def max_tokens(self) -> int | None: ...

    @property
    def min_tokens(self) -> int: ...

    @property
    def bound(self) -> str | None: ...

    def summarize(
        self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None
    ) -> Summary: ...

    async def asummarize(
        self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None
    ) -> Summary: ...

    def estimate(
        self, messages: Sequence[Mapping[str, Any]], max_tokens: int | None = None
    ) -> list[tuple[str, int, int]]: ...

    def with_caller(self, wrap: Callable[[Caller], Caller]) -> Summarizer: ...

    def summary_of_case(self, case: Any) -> Summary | None: ...


class BaseSummarizer:
    """Base class of summarizers: implement :meth:`summarize` (see the module docstring)."""

    name: str = "summarizer"
    model: str | None = None
    local: bool = True
    max_tokens: int | None = None
    min_tokens: int = 1
    bound: str | None = None

    def summarize(
        self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None
    ) -> Summary:
        raise NotImplementedError(f"{type(self).__name__} must implement summarize()")

    async def asummarize(
        self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None
    ) -> Summary:
        """:meth:`summarize` on a worker thread."""
        import asyncio  # not at module import: it takes longer than the rest of memorylab

        return await asyncio.to_thread(self.summarize, messages, max_tokens=max_tokens)

    def estimate(
        self, messages: Sequence[Mapping[str, Any]], max_tokens: int | None = None
    ) -> list[tuple[str, int, int]]:
        """The model calls a summary of ``messages`` makes: ``(model, input, output tokens)``."""
        return []

    def with_caller(self, wrap: Callable[[Caller], Caller]) -> Self:
        """A copy whose model calls go through ``wrap(caller)``; ``self`` when it makes none."""
        return self

    def summary_of_case(self, case: Any) -> Summary | None:
        """The summary ``case`` already has; ``None``: summarize its messages."""
        return None


class _Declared(BaseSummarizer):
    """A duck-typed summarizer completed with the defaults of :func:`as_summarizer` (``inner``:
    the object itself)."""

    local = False

    def __init__(self, inner: Any) -> None:
        self.inner, self.name = inner, str(inner.name)
        for field in ("model", "local", "max_tokens", "min_tokens", "bound"):  # its own win
            if hasattr(inner, field):
                setattr(self, field, getattr(inner, field))
        for method in ("asummarize", "estimate", "summary_of_case"):
            if callable(getattr(inner, method, None)):
                setattr(self, method, getattr(inner, method))

    def with_caller(self, wrap: Callable[[Caller], Caller]) -> Self:
        with_caller = getattr(self.inner, "with_caller", None)
        return type(self)(with_caller(wrap)) if callable(with_caller) else self

    def summarize(
        self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None
    ) -> Summary:
        return self.inner.summarize(messages, max_tokens=max_tokens)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return repr(self.inner)


def as_summarizer(obj: Any) -> Summarizer:
    """``obj`` when it declares all of :class:`Summarizer`; an object with a ``name`` and a
    ``summarize`` completed with the documented defaults (module docstring; docs/compression.md
    shows one); else :class:`~memorylab.errors.InvalidSetting`."""
    named = isinstance(getattr(obj, "name", None), str)
    if named and isinstance(obj, Summarizer):
        return obj
    if not named or not callable(getattr(obj, "summarize", None)):
        raise InvalidSetting(
            f"a summarizer has a name and summarize(messages, *, max_tokens=None), not "
            f"{type(obj).__name__}"
        )
    return _Declared(obj)


BUDGET_TOLERANCE = 0.1
"""How far (a share of ``max_tokens``, at least 16 tokens) a reply may run over its budget before
it is cut: memorylab's token count and the provider's differ by a few percent."""

CUT_MARKER = " [… cut to the summary budget]"
"""Ends a reply that :func:`fit_to_budget` cut."""

_LONGEST_TOKEN_CHARS = 256  # no tokenizer memorylab uses has a longer token


def fit_to_budget(text: str, max_tokens: int, counter: TokenCounter) -> tuple[str, bool]:
    """``(text, False)`` when ``text`` is within ``max_tokens`` plus :data:`BUDGET_TOLERANCE`;
    else ``(its first max_tokens tokens + CUT_MARKER, True)``. A 10 MB reply costs no more
    than its head: only ``256 * allowed`` characters of it are ever counted.

    >>> from memorylab.compress import get_token_counter
    >>> fit_to_budget("short", 100, get_token_counter(None))
    ('short', False)
    >>> text, cut = fit_to_budget("word " * 5000, 100, get_token_counter(None))
    >>> cut, get_token_counter(None).count(text) <= 100
    (True, True)
    """
    allowed = max_tokens + max(16, int(max_tokens * BUDGET_TOLERANCE))
    if len(text.encode("utf-8")) <= allowed:  # never more tokens than bytes
        return text, False
    head = text[: allowed * _LONGEST_TOKEN_CHARS]
    if counter.count(head) <= allowed:
        if len(head) == len(text) or counter.count(text) <= allowed:
            return text, False
        head = text
    return truncate_to_tokens(head, max_tokens, counter, marker=CUT_MARKER), True


def check_history(messages: Sequence[Mapping[str, Any]]) -> None:
    """Refuse what is not a list of messages, and a history with nothing to summarize."""
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise InvalidSetting("messages must be a sequence of {'role', 'content'} mappings")
    if not any(fmt.content_to_text(m.get("content")).strip() for m in messages):
        raise EmptySummary("nothing to summarize: the history is empty")


class BudgetedSummarizer(BaseSummarizer):
    """A summarizer that runs locally and writes its summary within a token budget.

    Subclasses set ``max_tokens`` (the default budget) and ``model`` (whose tokenizer counts,
    ``None``: cl100k_base) and implement :meth:`text`; the :class:`Summary` is made here, with
    the tokens counted and no cost.
    """

    min_tokens = 16
    max_tokens: int
    model: str | None

    def text(
        self, messages: Sequence[Mapping[str, Any]], budget: int, counter: TokenCounter
    ) -> str:
        """The summary of ``messages`` in at most ``budget`` tokens of ``counter``."""
        raise NotImplementedError(f"{type(self).__name__} must implement text()")

    def summarize(
        self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None
    ) -> Summary:
        started = time.perf_counter()
        budget = self.max_tokens if max_tokens is None else max_tokens
        check_int("max_tokens", budget, self.min_tokens)
        check_history(messages)
        counter = get_token_counter(self.model)
        text = self.text(messages, budget, counter).strip()
        if not text:
            raise EmptySummary(f"{self.name}: the budget of {budget} tokens kept nothing")
        return local_summary(self.name, messages, text, counter, started)


def local_summary(
    name: str,
    messages: Sequence[Mapping[str, Any]],
    text: str,
    counter: TokenCounter,
    started: float,
) -> Summary:
    """The :class:`Summary` of a summarizer that runs here: tokens counted, no cost, one chunk
    (``started`` is its ``time.perf_counter()`` at the start)."""
    return Summary(
        text=text,
        model=name,
        input_tokens=counter.count(fmt.history_text(messages)),
        output_tokens=counter.count(text),
        cost_usd=0.0,
        latency_s=time.perf_counter() - started,
        chunks=1,
    )
