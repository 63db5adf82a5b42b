"""Scorers by name: the table :func:`get_scorer` reads, and the built-in scorers that need nothing.

A scorer looks at one :class:`~memorylab.evaluate._base.Sample` and returns ``{metric: Score}``
(the types are in :mod:`memorylab.evaluate._base`). Registered scorers (:func:`get_scorer`):

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
``probe_qa``       ``exact``, ``fuzzy`` (``llm`` with a grader): share of probes a     —
                   reader answers from the summary alone (default: the lexical
                   baseline, not a reader; a model reader needs a model)
``judge``          ``faithfulness``, ``coverage``, ``usefulness``, ``overall`` (0-1)   a model
``rouge``          ``rouge1``, ``rouge2``, ``rougeLsum``                               ``metrics``
``similarity``     ``cosine`` (embeddings of summary and history)                      ``embed``
=================  =================================================================  ==========

A metric that does not apply (no facts of a category, no probes) is NaN, not 0. Scores that
average over items carry ``metadata["n"]`` (facts, probes), which comparisons use as weights,
and ``metadata["items"]`` (each item's outcome, in the case's order), which they resample for
confidence intervals. ``quality`` (a class attribute) is False for the scorers that measure
size, time or money rather than what a summary keeps; the bounds and significance marks of
:func:`~memorylab.evaluate.summary_table` apply to the others. ``get_scorer(name, name=...)``
gives any scorer a name of its own (two readers in one run).
Any callable ``sample -> float | Score | {metric: float | Score}`` is a scorer too. A scorer of
your own is added by name the same way as these: ``register_scorer("mine", MyScorer)``, or
``@register_scorer("mine")`` on the class.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from memorylab._facts import (
    SHARES_EXTRACTION_RULES,
    contains_answer,
    extract_facts,
    fact_kept,
    normalize_answer,
)
from memorylab._names import register
from memorylab.compress._tokens import get_token_counter
from memorylab.errors import InvalidSetting
from memorylab.evaluate._base import (
    NAN,
    BaseScorer,
    FunctionScorer,
    Sample,
    Score,
    Scorer,
    as_scorer,
)
from memorylab.evaluate._cases import Case
from memorylab.evaluate._extras import RougeScorer, SimilarityScorer
from memorylab.evaluate._llm_scorers import JudgeScorer, ProbeQAScorer, check_scorer_name
from memorylab.transcripts import FACT_CATEGORIES, Fact

_F = TypeVar("_F", bound=Callable[..., Any])


class CompressionScorer(BaseScorer):
    """How much smaller the summary is: tokens counted with ``get_token_counter(model)``.

    Known failure modes: size only, not quality (the floor ``memorylab/none`` compresses
    best: its ratio is NaN, nothing at all); a model's own tokenizer may count a few percent
    differently.
    """

    name = "compression"
    quality = False

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
    """Wall time of the summary (``Summary.latency_s``; for a cached call, the original's).

    Known failure modes: under concurrency a call's time includes waiting for the provider;
    offline summarizers are timed on each run (their cost is CPU time, which other work on
    the machine changes).
    """

    name = "latency"
    quality = False

    def score(self, sample: Sample) -> Mapping[str, Score]:
        latency = sample.summary.latency_s
        return {"seconds": Score(NAN if latency is None else latency)}


def _number(value: Any) -> float:
    return NAN if value is None else float(value)


class CostScorer(BaseScorer):
    """What the summary cost (litellm's price; NaN for a model without one) and its tokens.

    Known failure modes: list prices only (no discounts, no cached-prompt rates); a local
    server or a fine-tune has no price (NaN, never 0).
    """

    name = "cost"
    quality = False

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
    """Share of the case's facts the summary kept, overall and per category.

    The ground truth, wherever a case has one: its reference facts (planted in the bundled
    transcripts; matched by :func:`~memorylab.evaluate.fact_kept`), else the reference
    answers of its probes (a benchmark's; matched by
    :func:`~memorylab.evaluate._grading.grade_answer`: the summary contains the answer), counting
    only the answers the history itself contains, so the ceiling ``memorylab/full`` keeps every
    one (metric ``overall`` only). Without either, facts are extracted from the history by
    :func:`~memorylab.evaluate.extract_facts` (``source="extracted"``).

    Known failure modes: extracted facts follow rules close to the extractive summarizer's (both
    keep numbers, paths, commands, decision sentences), so ``fact_recall`` on extracted facts
    measures their agreement for ``memorylab/extractive``: those cells are flagged ``biased``
    (the tables mark them); tool output makes extracted facts noisy (every number of a log
    line); a paraphrase that changes every word of a decision, or writes a number in words, is
    counted as lost.
    """

    name = "fact_recall"

    def __init__(self) -> None:
        self._known: dict[int, tuple[Case, str, tuple[Any, ...]]] = {}

    def __getstate__(self) -> dict[str, Any]:  # executor jobs: the cache stays behind
        return {"name": self.name}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._known = {}
        if state.get("name", type(self).name) != type(self).name:
            self.name = state["name"]

    def _truth(self, case: Case) -> tuple[str, tuple[Any, ...]]:
        known = self._known.get(id(case))
        if known is not None and known[0] is case:
            return known[1], known[2]
        items: tuple[Any, ...]
        if case.facts:
            source, items = "reference", tuple(case.facts)
        elif any(p.answer.strip() for p in case.probes):
            history = normalize_answer(case.history_text)
            items = tuple(
                p for p in case.probes if contains_answer(history, p.answer, normalized=True)
            )
            source = "answers"
        else:
            source, items = "extracted", tuple(extract_facts(case.messages))
        self._known[id(case)] = (case, source, items)
        return source, items

    def facts(self, case: Case) -> tuple[Fact, ...]:
        """The facts ``case`` is scored on (none when it is scored on reference answers)."""
        source, items = self._truth(case)
        return () if source == "answers" else items

    def score(self, sample: Sample) -> Mapping[str, Score]:
        source, items = self._truth(sample.case)
        biased = source == "extracted" and sample.summary.model in SHARES_EXTRACTION_RULES
        note = (
            " (biased: the extracted facts follow rules like this summarizer's)" if biased else ""
        )
        if source == "answers":
            summary = normalize_answer(sample.text)
            outcomes = [
                (p.id, p.answer, contains_answer(summary, p.answer, normalized=True)) for p in items
            ]
            overall = _share(outcomes, "answer", source, note, biased)
            empty = Score(NAN, "scored on reference answers", {"n": 0, "source": source})
            return {"overall": overall, **dict.fromkeys(FACT_CATEGORIES, empty)}
        by_category: dict[str, list[tuple[str, str, bool]]] = {c: [] for c in FACT_CATEGORIES}
        everything: list[tuple[str, str, bool]] = []
        for fact in items:
            outcome = (fact.id, fact.text, fact_kept(fact, sample.text).kept)
            by_category[fact.category].append(outcome)
            everything.append(outcome)
        out = {"overall": _share(everything, "", source, note, biased)}
        for category in FACT_CATEGORIES:
            out[category] = _share(by_category[category], category, source, note, biased)
        return out


def _share(
    outcomes: list[tuple[str, str, bool]], label: str, source: str, note: str, biased: bool
) -> Score:
    n = len(outcomes)
    if not n:
        return Score(NAN, f"no {label} facts".replace("  ", " "), {"n": 0, "source": source})
    kept = sum(1 for _, _, ok in outcomes if ok)
    missing = [(i, text) for i, text, ok in outcomes if not ok]
    shown = ", ".join(repr(text[:60]) for _, text in missing[:8])
    more = f" (+{len(missing) - 8} more)" if len(missing) > 8 else ""
    why = f"kept {kept}/{n}" + (f"; lost {shown}{more}" if missing else "") + note
    metadata = {
        "n": n,
        "kept": kept,
        "lost": [i for i, _ in missing],
        "source": source,
        "items": tuple(1.0 if ok else 0.0 for _, _, ok in outcomes),
        "biased": biased,
    }
    return Score(kept / n, why, metadata)


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


def get_scorer(
    spec: str | Scorer | Callable[[Sample], Any], *, name: str | None = None, **options: Any
) -> Scorer:
    """A scorer from a registered name (with ``options`` for its constructor), a scorer object
    (returned as is) or a function (wrapped in :class:`FunctionScorer`); ``name`` gives it a
    name of its own (a copy, for an object), so two of one kind score in one run:
    ``get_scorer("probe_qa", name="qa_model", reader="openai/local", llm_args=...)``."""
    scorer = _build(spec, options)
    if name is None or name == scorer.name:
        return scorer
    renamed = copy.copy(scorer)
    renamed.name = check_scorer_name(name)
    return renamed


def _build(spec: str | Scorer | Callable[[Sample], Any], options: dict[str, Any]) -> Scorer:
    if isinstance(spec, str):
        factory = _REGISTRY.get(spec)
        if factory is None:
            raise InvalidSetting(
                f"unknown scorer {spec!r}; registered: {', '.join(scorer_names())}"
            )
        scorer = factory(**options)
        return FunctionScorer(scorer, spec) if _is_function(scorer) else as_scorer(scorer)
    if options:
        raise InvalidSetting(f"options {sorted(options)} apply to a scorer name only")
    return FunctionScorer(spec) if _is_function(spec) else as_scorer(spec)  # type: ignore[arg-type]


def _is_function(obj: Any) -> bool:
    return callable(obj) and not callable(getattr(obj, "ascore", None))
