"""Scorers by name: the table :func:`get_scorer` reads, and the built-in scorers that need nothing.

A scorer looks at one :class:`~memorylab.evaluate.base.Sample` and returns ``{metric: Score}``
(the types are in :mod:`memorylab.evaluate.base`). Registered scorers (:func:`get_scorer`):

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
Any callable ``sample -> float | Score | {metric: float | Score}`` is a scorer too. A scorer of
your own is added by name the same way as these: ``register_scorer("mine", MyScorer)``, or
``@register_scorer("mine")`` on the class.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from memorylab._names import register
from memorylab.compress.tokens import get_token_counter
from memorylab.errors import InvalidSetting
from memorylab.evaluate._extras import RougeScorer, SimilarityScorer
from memorylab.evaluate._llm_scorers import JudgeScorer, ProbeQAScorer
from memorylab.evaluate.base import NAN, BaseScorer, FunctionScorer, Sample, Score, Scorer
from memorylab.evaluate.cases import FACT_CATEGORIES, Case, Fact
from memorylab.evaluate.facts import extract_facts, fact_kept

__all__ = [
    "CompressionScorer",
    "CostScorer",
    "FactRecallScorer",
    "LatencyScorer",
    "get_scorer",
    "register_scorer",
    "scorer_names",
]

_F = TypeVar("_F", bound=Callable[..., Any])


class CompressionScorer(BaseScorer):
    """How much smaller the summary is: tokens counted with ``get_token_counter(model)``."""

    name = "compression"

    def __init__(self, model: str | None = None) -> None:
        self.model = model

    def score(self, sample: Sample) -> Mapping[str, Score]:
        counter = get_token_counter(self.model)
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
        found = tuple(extract_facts(case.messages))
        self._extracted[id(case)] = (case, found)
        return found

    def score(self, sample: Sample) -> Mapping[str, Score]:
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

_REGISTRY: dict[str, Callable[..., Any]] = {
    "compression": CompressionScorer,
    "latency": LatencyScorer,
    "cost": CostScorer,
    "fact_recall": FactRecallScorer,
    "probe_qa": ProbeQAScorer,
    "judge": JudgeScorer,
    "rouge": RougeScorer,
    "similarity": SimilarityScorer,
}


def register_scorer(name: str, factory: Callable[..., Any] | None = None) -> Callable[[_F], _F]:
    """Make ``get_scorer(name, **options)`` return ``factory(**options)`` (a scorer class, or a
    function returning a scorer or a ``sample -> float`` function; a name already taken is
    replaced). Used as a decorator when ``factory`` is not given."""
    return register(_REGISTRY, "scorer", name, factory)


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
