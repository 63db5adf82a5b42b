"""Scores of a summary: the :class:`Score` record, the scorer protocol and scorers by name.

A scorer looks at one :class:`Sample` (a case, the summary a summarizer made of it, the
summarizer's name) and returns ``{metric: Score}``. Registered scorers (:func:`get_scorer`):

=================  =================================================================  ==========
name               metrics                                                            needs
=================  =================================================================  ==========
``compression``    ``ratio`` (history tokens / summary tokens), ``summary_tokens``,    —
                   ``history_tokens``
``latency``        ``seconds`` (wall time of the summary; NaN when unknown)            —
``cost``           ``usd`` (NaN when the model has no litellm price), ``input_tokens``, —
                   ``output_tokens``, ``calls``
``fact_recall``    ``overall`` and one per category (``number``, ``path``,            —
                   ``command``, ``name``, ``decision``): share of facts kept
``probe_qa``       ``exact``, ``fuzzy``: share of probes a reader answers from the     a reader
                   summary alone
``judge``          ``faithfulness``, ``coverage``, ``usefulness``, ``overall`` (0-1)   a model
``rouge``          ``rouge1``, ``rouge2``, ``rougeLsum``                               ``metrics``
``similarity``     ``cosine`` (embeddings of summary and history)                      ``embed``
=================  =================================================================  ==========

A metric that does not apply (no facts of a category, no probes) is NaN, not 0. Scores that
average over items carry ``metadata["n"]`` (facts, probes), which comparisons use as weights.
Any callable ``sample -> float | Score | {metric: float | Score}`` is a scorer too.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from memorylab.errors import InvalidSetting
from memorylab.evaluate.cases import FACT_CATEGORIES, Case, Fact

if TYPE_CHECKING:
    from memorylab.compress.summarizers import Summary
    from memorylab.evaluate._cache import CachedLLM

__all__ = [
    "NAN",
    "BaseScorer",
    "CompressionScorer",
    "CostScorer",
    "FactRecallScorer",
    "FunctionScorer",
    "LatencyScorer",
    "Sample",
    "Score",
    "Scorer",
    "get_scorer",
    "register_scorer",
    "scorer_names",
]

NAN = float("nan")


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


@runtime_checkable
class Scorer(Protocol):
    """A named scorer; :func:`memorylab.evaluate.compare_summarizers` awaits ``ascore``."""

    name: str

    async def ascore(self, sample: Sample, llm: CachedLLM) -> Mapping[str, Score]: ...


class BaseScorer:
    """Base class: override :meth:`score` (offline) or :meth:`ascore` (model calls).

    :meth:`estimate` lists the model calls a scorer will make for a case, as
    ``(model, input_tokens, output_tokens)``, for the cost guard (``summary_tokens`` is an
    upper bound of the summary's size).
    """

    name = "scorer"

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def score(self, sample: Sample) -> Mapping[str, Score]:
        """Score one sample (offline scorers implement this; model scorers run :meth:`ascore`)."""
        from memorylab.evaluate._cache import CachedLLM

        coroutine = self.ascore(sample, CachedLLM())
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coroutine)
        result: Mapping[str, Score] = _in_thread(lambda: asyncio.run(coroutine))
        return result

    async def ascore(self, sample: Sample, llm: CachedLLM) -> Mapping[str, Score]:
        return self.score(sample)

    def estimate(self, case: Case, summary_tokens: int) -> list[tuple[str, int, int]]:
        return []

    @property
    def offline(self) -> bool:
        """True when :meth:`score` does CPU work only (it is then run on a worker thread)."""
        return type(self).ascore is BaseScorer.ascore


def _in_thread(call: Callable[[], Any]) -> Any:
    """``call()`` on a short-lived thread (for sync use from inside a running event loop)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="memorylab-score") as pool:
        return pool.submit(call).result()


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


def _counter(model: str | None) -> Any:
    from memorylab.compress.tokens import get_token_counter

    return get_token_counter(model)


class CompressionScorer(BaseScorer):
    """How much smaller the summary is: tokens counted with ``get_token_counter(model)``."""

    name = "compression"

    def __init__(self, model: str | None = None) -> None:
        self.model = model

    def score(self, sample: Sample) -> Mapping[str, Score]:
        counter = _counter(self.model)
        history = counter.count(sample.case.history_text)
        summary = counter.count(sample.text)
        ratio = history / summary if summary else NAN
        return {
            "ratio": Score(ratio, f"{history} history tokens / {summary} summary tokens"),
            "summary_tokens": Score(summary),
            "history_tokens": Score(history),
        }


class LatencyScorer(BaseScorer):
    """Wall time of the summary (``Summary.latency_s``; for a cached call, the original's)."""

    name = "latency"

    def score(self, sample: Sample) -> Mapping[str, Score]:
        latency = sample.summary.latency_s
        return {"seconds": Score(NAN if latency is None else latency)}


def _number(value: Any) -> float:
    return NAN if value is None else float(value)


class CostScorer(BaseScorer):
    """What the summary cost (litellm's price; NaN for a model without one) and its tokens."""

    name = "cost"

    def score(self, sample: Sample) -> Mapping[str, Score]:
        summary = sample.summary
        cost = summary.cost_usd
        why = "" if cost is not None else f"no litellm price for {summary.model!r}"
        return {
            "usd": Score(_number(cost), why),
            "input_tokens": Score(_number(summary.input_tokens)),
            "output_tokens": Score(_number(summary.output_tokens)),
            "calls": Score(float(summary.chunks)),
        }


class FactRecallScorer(BaseScorer):
    """Share of facts kept, overall and per category (see :mod:`memorylab.evaluate.facts`).

    The case's reference facts when it has some, otherwise the facts
    :func:`~memorylab.evaluate.facts.extract_facts` finds in its history.
    """

    name = "fact_recall"

    def __init__(self) -> None:
        self._extracted: dict[int, tuple[Case, tuple[Fact, ...]]] = {}

    def __getstate__(self) -> dict[str, Any]:  # executor jobs: the cache stays behind
        return {"_extracted": {}}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._extracted = {}

    def facts(self, case: Case) -> tuple[Fact, ...]:
        """The facts ``case`` is scored on."""
        if case.facts:
            return case.facts
        known = self._extracted.get(id(case))
        if known is not None and known[0] is case:
            return known[1]
        from memorylab.evaluate.facts import extract_facts

        found = tuple(extract_facts(case.messages))
        self._extracted[id(case)] = (case, found)
        return found

    def score(self, sample: Sample) -> Mapping[str, Score]:
        from memorylab.evaluate.facts import fact_kept

        facts = self.facts(sample.case)
        source = "reference" if sample.case.facts else "extracted"
        kept: dict[str, list[Fact]] = {c: [] for c in FACT_CATEGORIES}
        lost: dict[str, list[Fact]] = {c: [] for c in FACT_CATEGORIES}
        for fact in facts:
            (kept if fact_kept(fact, sample.text).kept else lost)[fact.category].append(fact)

        def score(categories: tuple[str, ...], label: str) -> Score:
            k = sum(len(kept[c]) for c in categories)
            missing = [f for c in categories for f in lost[c]]
            n = k + len(missing)
            if not n:
                return Score(NAN, f"no {label} facts", {"n": 0, "source": source})
            shown = ", ".join(repr(f.text[:60]) for f in missing[:8])
            more = f" (+{len(missing) - 8} more)" if len(missing) > 8 else ""
            why = f"kept {k}/{n}" + (f"; lost {shown}{more}" if missing else "")
            metadata = {
                "n": n,
                "kept": k,
                "lost": [f.id for f in missing],
                "source": source,
            }
            return Score(k / n, why, metadata)

        out = {"overall": score(FACT_CATEGORIES, "")}
        for category in FACT_CATEGORIES:
            out[category] = score((category,), category)
        return out


# --------------------------------------------------------------------------- the registry


def _probe_qa(**options: Any) -> BaseScorer:
    from memorylab.evaluate._llm_scorers import ProbeQAScorer

    return ProbeQAScorer(**options)


def _judge(**options: Any) -> BaseScorer:
    from memorylab.evaluate._llm_scorers import JudgeScorer

    return JudgeScorer(**options)


def _rouge(**options: Any) -> BaseScorer:
    from memorylab.evaluate._extras import RougeScorer

    return RougeScorer(**options)


def _similarity(**options: Any) -> BaseScorer:
    from memorylab.evaluate._extras import SimilarityScorer

    return SimilarityScorer(**options)


_REGISTRY: dict[str, Callable[..., Any]] = {
    "compression": CompressionScorer,
    "latency": LatencyScorer,
    "cost": CostScorer,
    "fact_recall": FactRecallScorer,
    "probe_qa": _probe_qa,
    "judge": _judge,
    "rouge": _rouge,
    "similarity": _similarity,
}


def register_scorer(name: str, factory: Callable[..., Any]) -> None:
    """Make ``get_scorer(name, **options)`` return ``factory(**options)`` (replaces a name)."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidSetting("a scorer name must be a non-empty string")
    if not callable(factory):
        raise InvalidSetting(f"the factory of scorer {name!r} must be callable")
    _REGISTRY[name] = factory


def scorer_names() -> list[str]:
    """The registered scorer names, sorted."""
    return sorted(_REGISTRY)


def get_scorer(spec: str | Scorer | Callable[[Sample], Any], **options: Any) -> Scorer:
    """A scorer from a registered name (with ``options`` for its constructor), a scorer object
    (returned as is) or a function (wrapped in :class:`FunctionScorer`)."""
    if isinstance(spec, str):
        factory = _REGISTRY.get(spec)
        if factory is None:
            raise InvalidSetting(
                f"unknown scorer {spec!r}; registered: {', '.join(scorer_names())}"
            )
        scorer = factory(**options)
        if isinstance(scorer, Scorer):
            return scorer
        return FunctionScorer(scorer, spec)
    if options:
        raise InvalidSetting(f"options {sorted(options)} apply to a scorer name only")
    if isinstance(spec, Scorer):
        return spec
    if callable(spec):
        return FunctionScorer(spec)
    raise InvalidSetting(
        f"a scorer is a name, a Scorer or a function, not {type(spec).__name__}"
    )


def is_nan(value: float) -> bool:
    return isinstance(value, float) and math.isnan(value)
