"""What every scorer shares: the :class:`Score` record, the :class:`Sample` a scorer looks at, the
:class:`Scorer` protocol and :class:`BaseScorer`, the base class of the built-in scorers.

A scorer looks at one :class:`Sample` (a case, the summary a summarizer made of it, the
summarizer's name) and returns ``{metric: Score}``. :class:`BaseScorer` adds what a comparison
asks of a scorer, with defaults for one that runs locally: ``offline`` (True when it calls no
model: it then runs on a worker thread), ``estimate(case, summary_tokens)`` (its model calls, for
the cost guard) and a synchronous :meth:`BaseScorer.score`. A plain function is a scorer through
:class:`FunctionScorer`. Scorers users write are registered by name like the built-in ones
(:func:`memorylab.evaluate.register_scorer`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar, runtime_checkable

from memorylab.errors import InvalidSetting

if TYPE_CHECKING:
    from memorylab.compress._base import Summary
    from memorylab.evaluate._cache import CachedLLM
    from memorylab.evaluate._cases import Case

NAN = float("nan")

_T = TypeVar("_T")


def run_sync(factory: Callable[[], Coroutine[Any, Any, _T]]) -> _T:
    """``asyncio.run(factory())``, on a worker thread when this thread already runs an event loop
    (a notebook cell)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="memorylab-run") as pool:
        return pool.submit(lambda: asyncio.run(factory())).result()


@dataclass(frozen=True, slots=True)
class Score:
    """One number with why: ``value`` (NaN when it does not apply), a human ``explanation`` and
    ``metadata`` (``n``: how many items it averages over; lost facts; raw judge scores ...)."""

    value: float
    explanation: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        value = self.value
        if value is None:
            value = NAN
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InvalidSetting(f"a Score value must be a number, not {value!r}")
        object.__setattr__(self, "value", float(value))


@dataclass(frozen=True, slots=True)
class Sample:
    """What a scorer sees: the case, the summary made of it and who made it."""

    case: Case
    summary: Summary
    summarizer: str

    @property
    def text(self) -> str:
        """The summary's text."""
        return self.summary.text


class PlannedCall(NamedTuple):
    """One model call a scorer will make, as its :meth:`Scorer.estimate` says before the run:
    the ``model``, the prompt's ``input_tokens``, the reply's ``output_tokens`` at most (its
    ``max_tokens``), ``shared_tokens``: how many of the prompt's first tokens are those of the
    scorer's previous call on the same memory (what a server's prompt cache reads once: the
    memory and the instructions before a probe's question), and ``expected_output_tokens``, the
    reply's expected length (``None``: ``output_tokens``). A plain ``(model, input_tokens,
    output_tokens)`` tuple is read as a call that shares nothing and writes its bound."""

    model: str
    input_tokens: int
    output_tokens: int
    shared_tokens: int = 0
    expected_output_tokens: int | None = None


@runtime_checkable
class Scorer(Protocol):
    """What a comparison reads of a scorer: its ``name``, whether it measures ``quality`` and
    runs ``offline`` (then :meth:`score` runs on a worker thread, else ``ascore`` is awaited),
    and the model calls it will make (``estimate``). :func:`as_scorer` completes an object that
    is only a ``name`` and an ``ascore``: ``quality`` True, ``offline`` False, no estimate."""

    name: str

    @property
    def quality(self) -> bool: ...

    @property
    def offline(self) -> bool: ...

    def score(self, sample: Sample) -> Mapping[str, Score]: ...

    async def ascore(self, sample: Sample, llm: CachedLLM) -> Mapping[str, Score]: ...

    def estimate(self, case: Case, summary_tokens: int) -> list[PlannedCall]: ...


class BaseScorer:
    """Base class: override :meth:`score` (offline) or :meth:`ascore` (model calls).

    :meth:`estimate` lists the model calls a scorer will make for a case, as
    :class:`PlannedCall` values (or ``(model, input_tokens, output_tokens)`` tuples), for the
    plan and the cost guard (``summary_tokens`` is an upper bound of the summary's size).
    ``quality``: whether its metrics measure what a summary keeps (higher is better; the tables
    check them against the bounds and mark ties), rather than its size, time or cost.
    """

    name = "scorer"
    quality: bool = True

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def score(self, sample: Sample) -> Mapping[str, Score]:
        """Score one sample (offline scorers implement this; model scorers run :meth:`ascore`)."""
        from memorylab.evaluate._cache import CachedLLM

        return run_sync(lambda: self.ascore(sample, CachedLLM()))

    async def ascore(self, sample: Sample, llm: CachedLLM) -> Mapping[str, Score]:
        return self.score(sample)

    def estimate(self, case: Case, summary_tokens: int) -> list[PlannedCall]:
        return []

    @property
    def offline(self) -> bool:
        """True when :meth:`score` does CPU work only (it is then run on a worker thread)."""
        return type(self).ascore is BaseScorer.ascore


def _as_scores(result: Any, name: str) -> dict[str, Score]:
    if isinstance(result, Score):
        return {"value": result}
    if isinstance(result, Mapping):
        return {
            str(k): (v if isinstance(v, Score) else Score(float(v))) for k, v in result.items()
        }
    if isinstance(result, int | float) and not isinstance(result, bool):
        return {"value": Score(float(result))}
    raise InvalidSetting(
        f"scorer {name!r} returned {type(result).__name__}; return a float, a Score or a "
        "mapping of metric names to them"
    )


class FunctionScorer(BaseScorer):
    """A plain function ``sample -> float | Score | {metric: ...}`` as a scorer."""

    def __init__(self, function: Callable[[Sample], Any], name: str | None = None) -> None:
        if not callable(function):
            raise InvalidSetting(f"a scorer function must be callable, not {function!r}")
        self.function = function
        self.name = name or str(getattr(function, "__name__", "function"))

    def __repr__(self) -> str:
        return f"FunctionScorer({self.name!r})"

    def score(self, sample: Sample) -> Mapping[str, Score]:
        return _as_scores(self.function(sample), self.name)


class _DeclaredScorer(BaseScorer):
    """A duck-typed scorer completed with the defaults of :func:`as_scorer`."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name = inner, str(inner.name)
        self.quality = bool(getattr(inner, "quality", True))
        self._offline = bool(getattr(inner, "offline", False)) and callable(
            getattr(inner, "score", None)
        )
        if callable(getattr(inner, "estimate", None)):
            self.estimate = inner.estimate  # type: ignore[method-assign]

    @property
    def offline(self) -> bool:
        return self._offline

    def score(self, sample: Sample) -> Mapping[str, Score]:
        return self.inner.score(sample)  # type: ignore[no-any-return]

    async def ascore(self, sample: Sample, llm: CachedLLM) -> Mapping[str, Score]:
        return await self.inner.ascore(sample, llm)  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return repr(self.inner)


def as_scorer(obj: Any) -> Scorer:
    """``obj`` when it declares all of :class:`Scorer`; an object with a ``name`` and an
    ``ascore`` completed with the defaults (``quality`` True, ``offline`` False, no model calls
    estimated); else :class:`~memorylab.errors.InvalidSetting`."""
    named = isinstance(getattr(obj, "name", None), str)
    if named and isinstance(obj, Scorer):
        return obj
    if not named or not callable(getattr(obj, "ascore", None)):
        kind = type(obj).__name__
        raise InvalidSetting(f"a scorer is a name, a Scorer or a function, not {kind}")
    return _DeclaredScorer(obj)
