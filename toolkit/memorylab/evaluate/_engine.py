"""How a comparison runs: units of (case, summarizer), summarized then scored (internal).

One unit summarizes one case with one summarizer, under the comparison's semaphore, then runs
every scorer on the summary (model calls of scorers take the semaphore again, one call at a
time, so a unit never holds a slot while it waits for another). Offline work — a summarizer's
``asummarize`` runs ``summarize`` on a worker thread unless it awaits model calls, offline
scorers too — so the event loop keeps the model calls of other units going. litellm, which a
model's calls and cache hits need, is imported on a worker thread and awaited
(:func:`memorylab.llm.aimport_litellm`), never inside the loop. A summarizer's
model calls go through the run's cache (its ``with_caller``,
:class:`memorylab.compress.Summarizer`). Nothing here knows the built-in
summarizers or scorers by type. Any exception of a summarizer or a scorer becomes an error row;
nothing is lost.

With an ``executor`` every unit is a job (:func:`run_unit_job`) that runs its own event loop;
its arguments are pickled by process-based executors (Dask, ``ProcessPoolExecutor``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from memorylab.compress._base import BaseSummarizer, Summarizer, Summary
from memorylab.errors import InvalidSetting
from memorylab.evaluate._base import Sample, Scorer, run_sync
from memorylab.evaluate._cache import CachedLLM, CacheMiss, CachingCaller, LLMCache, RunStats
from memorylab.evaluate._cases import Case, probe_category
from memorylab.llm import Caller, aimport_litellm, same_server
from memorylab.results import FormerFrame, FormerPair, TableResult

if TYPE_CHECKING:
    import pandas as pd

    from memorylab.evaluate._plan import Plan

EXISTING = "memorylab/existing"

COLUMNS = (
    "case", "summarizer", "scorer", "metric", "value", "n", "explanation", "error", "items",
    "flag",
)  # fmt: skip
"""The long frame's columns. ``items``: the outcome of each item (fact, probe) the value
averages, space-separated in the case's order (the unit the confidence intervals resample);
``flag``: ``"biased"`` for a value the scorer marked so."""
ANSWER_COLUMNS = (
    "case", "summarizer", "scorer", "probe", "category", "question", "expected", "answer",
)  # fmt: skip
"""The answers frame's first columns (:attr:`ComparisonResult.answers`): one row per probe a
reader answered, then one column per metric of its scorer (``exact``, ``fuzzy``, ``llm``: 1, 0,
or NaN for a probe whose call failed) and, where a reader's call failed, ``error``: why (None for
the probes answered)."""
SUMMARY_COLUMNS = (
    "case", "summarizer", "text", "model", "input_tokens", "output_tokens", "cost_usd",
    "latency_s", "chunks", "truncated", "cached", "error",
)  # fmt: skip


@dataclass(frozen=True, slots=True, repr=False)
class ComparisonResult(FormerFrame, TableResult):
    """What :func:`~memorylab.evaluate.compare_summarizers` returns: ``frame``, the long-form
    scores (:data:`COLUMNS`); ``summaries`` (:data:`SUMMARY_COLUMNS`); ``run``, the run's
    counters (``requests``, ``cache_hits``, ``spent_usd``, ``estimate_usd``,
    ``unpriced_models``, ``planned_requests``, ``wall_s`` ...); ``plan``, its
    :class:`~memorylab.evaluate.Plan`; ``bounds`` (``{label: "ceiling" | "floor"}``);
    ``quality``, which scorers measure quality. The former frame with these in ``attrs``
    still works for now and warns (:class:`~memorylab.results.FormerFrame`); ``.scores`` is
    ``.frame``."""

    frame: pd.DataFrame
    summaries: pd.DataFrame
    run: Mapping[str, Any]
    bounds: Mapping[str, str]
    quality: Mapping[str, bool]
    answers: pd.DataFrame = dataclasses.field(default_factory=lambda: _empty(ANSWER_COLUMNS))
    """The readers' answers, one row per probe (:data:`ANSWER_COLUMNS`)."""
    plan: Plan | None = None
    """The plan made before the run's first call (:func:`~memorylab.evaluate.plan_comparison`),
    beside the run's own figures in :attr:`run` (``requests`` sent, ``wall_s``); None for a run
    that sends no model request."""

    _former: ClassVar[str] = "compare_summarizers()"

    @property
    def scores(self) -> pd.DataFrame:
        """Deprecated: :attr:`frame`."""
        warnings.warn("ComparisonResult.scores is ComparisonResult.frame now: use result.frame",
                      DeprecationWarning, stacklevel=2)  # fmt: skip
        return self.frame

    def notes(self) -> list[str]:
        run = self.run
        spent = run.get("spent_usd") or 0.0
        lines = [f"model requests {run.get('requests', 0)}, cache hits "
                 f"{run.get('cache_hits', 0)}, spent ${spent:.4f}"]  # fmt: skip
        if run.get("unpriced_models"):
            lines.append(f"no price known for {', '.join(run['unpriced_models'])} (counted as 0)")
        return lines

    @classmethod
    def of(cls, results: ComparisonResult | pd.DataFrame) -> ComparisonResult:
        """``results`` itself, or a long-form frame of scores as a result with nothing else
        known (no summaries, counters, bounds or quality marks)."""

        if isinstance(results, ComparisonResult):
            return results
        return cls(results, _empty(SUMMARY_COLUMNS), {}, {}, {})

    @classmethod
    def concat(cls, parts: Sequence[ComparisonResult]) -> ComparisonResult:
        """One result of comparisons run one after another: the frames concatenated, the
        numeric counters added up, the bounds and quality marks merged."""
        import pandas as pd

        run: dict[str, Any] = {}
        for key, value in (item for p in parts for item in p.run.items()):
            if isinstance(value, int | float) and not isinstance(value, bool):
                run[key] = run.get(key, 0) + value
        return cls(pd.concat([p.frame for p in parts], ignore_index=True),
                   pd.concat([p.summaries for p in parts], ignore_index=True), run,
                   {k: v for p in parts for k, v in p.bounds.items()},
                   {k: v for p in parts for k, v in p.quality.items()},
                   pd.concat([p.answers for p in parts], ignore_index=True))  # fmt: skip


class FormerComparison(FormerPair, ComparisonResult):
    """What ``compare_summarizers(..., with_summaries=True)`` returns for now: a
    :class:`ComparisonResult` that also unpacks and indexes as the former ``(scores,
    summaries)`` pair, with a ``DeprecationWarning``."""

    __slots__ = ()
    _former = ("compare_summarizers(..., with_summaries=True)", "frame", "summaries")  # type: ignore[assignment]


class ExistingSummaries(BaseSummarizer):
    """The summaries the cases already have (``Case.summary``): scored without any model."""

    name = EXISTING

    def __repr__(self) -> str:
        return "ExistingSummaries()"

    def summarize(self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None
                  ) -> Summary:  # fmt: skip
        raise InvalidSetting(
            f"{EXISTING} takes each case's own summary (cases_from_workspace); it cannot "
            "summarize new messages"
        )

    @staticmethod
    def summary_of_case(case: Case) -> Summary:
        """The summary ``case`` already has, with the cost and latency its record gives."""
        if not case.summary:
            raise InvalidSetting(
                f"case {case.id!r} has no existing summary; {EXISTING} scores the summaries of "
                "cases_from_workspace() cases"
            )
        meta = case.metadata

        def number(key: str) -> float | None:
            value = meta.get(key)
            return float(value) if isinstance(value, int | float) else None

        tokens = meta.get("summary_tokens")
        return Summary(
            text=case.summary,
            model=str(meta.get("summarizer_model") or EXISTING),
            output_tokens=tokens if isinstance(tokens, int) else None,
            cost_usd=number("cost_usd"),
            latency_s=number("latency_s"),  # type: ignore[arg-type]
            chunks=1,
        )


@dataclass
class Context:
    """What every unit of one run (or one executor job) shares."""

    cache: LLMCache | None
    stats: RunStats
    concurrency: int
    max_tokens: int | None
    cache_only: bool = False
    semaphore: asyncio.Semaphore | None = None
    inflight: dict[str, Any] = dataclasses.field(default_factory=dict)

    def llm(self) -> CachedLLM:
        return CachedLLM(self.cache, self.stats, self.semaphore, cache_only=self.cache_only,
                         inflight=self.inflight)  # fmt: skip


async def summarize(summarizer: Summarizer, case: Case, ctx: Context) -> tuple[Summary, bool]:
    """The summary of ``case`` and whether it came whole from the cache.

    A summarizer with a summary of its own (``summary_of_case``: :data:`EXISTING`) gives it.
    """
    existing = summarizer.summary_of_case(case)
    if existing is not None:
        return existing, False
    callers: list[CachingCaller] = []

    def through_cache(inner: Caller) -> Caller:
        caller = CachingCaller(inner, ctx.cache, ctx.stats, cache_only=ctx.cache_only,
                               inflight=ctx.inflight)  # fmt: skip
        callers.append(caller)
        return caller

    bound = summarizer.with_caller(through_cache)
    summary = await bound.asummarize(list(case.messages), max_tokens=ctx.max_tokens)
    hits = sum(c.hits for c in callers)
    misses = sum(c.misses for c in callers)
    if hits or misses:
        summary = dataclasses.replace(summary, latency_s=sum(c.latency_s for c in callers))
    return summary, hits > 0 and misses == 0


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:2000]


def _row(case: str, label: str, scorer: str, metric: str, value: float, n: Any,
         explanation: str, error: str | None, items: str | None = None,
         flag: str | None = None) -> dict[str, Any]:  # fmt: skip
    values = (case, label, scorer, metric, value, n, explanation, error, items, flag)
    return dict(zip(COLUMNS, values, strict=True))


def _empty(columns: Sequence[str]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(columns=list(columns))


def _answer_rows(sample: Sample, scorer: str, scores: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per probe that a scorer reported answers for (``metadata["answers"]``, in the
    case's probe order), with each of its metrics' outcome for that probe."""
    probes = sample.case.probes
    metas = {m: s.metadata for m, s in scores.items() if isinstance(s.metadata, Mapping)}
    answers = next((m["answers"] for m in metas.values() if "answers" in m), None)
    if answers is None or len(answers) != len(probes):
        return []
    failed: Mapping[str, Any] = next(
        (m["failed"] for m in metas.values() if isinstance(m.get("failed"), Mapping)), {}
    )
    rows = []
    for index, (probe, answer) in enumerate(zip(probes, answers, strict=True)):
        category = probe_category(sample.case, probe)
        row = dict(zip(ANSWER_COLUMNS, (sample.case.id, sample.summarizer, scorer, probe.id,
                                        category, probe.question, probe.answer, answer),
                       strict=True))  # fmt: skip
        for metric, meta in metas.items():
            items = meta.get("items")
            if isinstance(items, tuple | list) and len(items) == len(probes):
                row[str(metric)] = float(items[index])
        if failed:
            row["error"] = failed.get(probe.id)
        rows.append(row)
    return rows


def _items(metadata: Mapping[str, Any]) -> str | None:
    items = metadata.get("items")
    if not isinstance(items, tuple | list) or not items:
        return None
    return " ".join(f"{float(v):g}" for v in items)


async def _score(scorer: Scorer, sample: Sample, ctx: Context) -> list[dict[str, Any]]:
    case, label = sample.case.id, sample.summarizer
    try:
        if scorer.offline:
            scores = await asyncio.to_thread(scorer.score, sample)
        else:
            await aimport_litellm()
            scores = await scorer.ascore(sample, ctx.llm())
    except CacheMiss:
        raise
    except Exception as exc:
        return [_row(case, label, scorer.name, "error", math.nan, None, "", _error_text(exc))]
    rows = []
    for metric, score in scores.items():
        meta = score.metadata if isinstance(score.metadata, Mapping) else {}
        flag = "biased" if meta.get("biased") else None
        rows.append(_row(case, label, scorer.name, str(metric), score.value, meta.get("n"),
                         score.explanation, None, _items(meta), flag))  # fmt: skip
    answers = _answer_rows(sample, scorer.name, scores)
    if answers and rows:  # carried by the first row (not a column of the frame)
        rows[0][ANSWERS_KEY] = answers
    return rows


ANSWERS_KEY = "_answers"
"""The key of a score row that carries its scorer's answer rows to :attr:`ComparisonResult
.answers` (the frame takes only :data:`COLUMNS`)."""


def _summary_record(case: Case, label: str, summary: Summary | None, cached: bool,
                    error: str | None) -> dict[str, Any]:  # fmt: skip
    made = [getattr(summary, name) if summary else None for name in SUMMARY_COLUMNS[2:-2]]
    values = (case.id, label, *made, cached, error)
    return dict(zip(SUMMARY_COLUMNS, values, strict=True))


async def run_unit(
    case: Case, label: str, summarizer: Summarizer, scorers: Sequence[Scorer], ctx: Context
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Rows of one (case, summarizer) and its summary record."""
    # A model served by several servers (llm_args={"api_base": [...]}) answers all the requests
    # of one unit on one server, the one its key picks in every process (an executor's jobs
    # too): the probes of one memory share all but their question, which that server's prompt
    # cache then reads once. Chosen per unit, where what the requests share is known, rather
    # than guessed from each prompt's text; units are many, so the servers share the work.
    with same_server(f"{case.id}\n{label}"):
        return await _run_unit(case, label, summarizer, scorers, ctx)


async def _run_unit(
    case: Case, label: str, summarizer: Summarizer, scorers: Sequence[Scorer], ctx: Context
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    if ctx.semaphore is None:
        ctx.semaphore = asyncio.Semaphore(ctx.concurrency)
    try:
        if not summarizer.local:  # a model's calls and cache hits need litellm: loaded on a
            await aimport_litellm()  # thread, awaited without a slot, the loop going on
        async with ctx.semaphore:
            summary, cached = await summarize(summarizer, case, ctx)
    except CacheMiss:
        raise
    except Exception as exc:
        error = _error_text(exc)
        row = _row(case.id, label, "summarize", "error", math.nan, None, "", error)
        return [row], _summary_record(case, label, None, False, error)
    sample = Sample(case, summary, label)
    results = await asyncio.gather(*(_score(s, sample, ctx) for s in scorers))
    rows = [row for group in results for row in group]
    return rows, _summary_record(case, label, summary, cached, None)


def run_unit_job(
    case: Case,
    label: str,
    summarizer: Summarizer,
    scorers: Sequence[Scorer],
    cache_dir: str | None,
    concurrency: int,
    max_tokens: int | None,
    max_cost_usd: float | None,
) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """One unit as an executor job: ``(rows, summary record, stats)``; picklable arguments."""
    stats = RunStats(max_cost_usd)
    ctx = Context(LLMCache(cache_dir) if cache_dir else None, stats, concurrency, max_tokens)
    rows, record = run_sync(lambda: run_unit(case, label, summarizer, scorers, ctx))
    return rows, record, stats.as_dict()
