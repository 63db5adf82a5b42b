"""Compare summarizers on cases: a :class:`ComparisonResult` (the long-form scores, the summaries,
the run's counters), and the tables made from it.

:func:`compare_summarizers` summarizes every case with every summarizer and scores each
summary. Summarizers are litellm model names (:class:`~memorylab.LiteLLMSummarizer`), the
built-in offline ones — ``"memorylab/extractive"``, ``"memorylab/truncate"``,
``"memorylab/head-tail"`` (:data:`BASELINES`) — the bounds ``"memorylab/full"`` (the history
unchanged, the ceiling) and ``"memorylab/none"`` (nothing, the floor) (:data:`BOUNDS`),
``"memorylab/existing"`` (the summaries that :func:`~memorylab.evaluate.cases_from_workspace`
cases already have), or any :class:`~memorylab.Summarizer` object.

* Concurrency: asyncio, at most ``concurrency`` summaries or model calls at a time; offline
  work runs on threads. Rate limits, timeouts and 5xx are retried with exponential backoff by
  :class:`memorylab.llm.Caller`; what still fails is a row with ``metric="error"``.
* Cache: every model call (summaries, chunks, merges, reader and judge calls) is stored under
  ``cache_dir`` keyed by the SHA-256 of its model, parameters and prompt
  (:mod:`memorylab.evaluate._cache`); a re-run sends no request and reports the same numbers,
  latency included (the first run's).
* Cost guard: with ``max_cost_usd`` the cost of the calls that are not cached yet is estimated
  first, from token counts and litellm's prices (:func:`estimate_cost`); above the limit
  :class:`~memorylab.errors.BudgetExceeded` is raised and nothing is sent. Models without a
  litellm price count as 0 in the estimate and are named in the result's ``run``. During the
  run, calls stop once the money spent reaches the limit.
* Plan and progress: before its first call a comparison that sends model requests works out
  its :class:`Plan` (:func:`plan_comparison`: the requests not in the cache, their tokens, their
  cost, and their time for the models whose speed is known, ``speeds=``, measured by
  :func:`memorylab.llm.measure_speed`), prints it with the progress bar, and refuses a run over
  ``max_cost_usd`` or ``max_seconds``. The bar counts requests, so its rate and time left are
  those of the model calls, not of the (case, summarizer) pairs.
* Scale-out: ``executor`` (any :class:`concurrent.futures.Executor`, e.g. a Dask
  ``distributed.Client.get_executor()``) runs each (case, summarizer) as a job; the cache is
  shared through ``cache_dir``.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Executor
from typing import TYPE_CHECKING, Any

from memorylab._validation import check_int, check_number
from memorylab.compress._base import Summarizer, as_summarizer
from memorylab.compress._summarizers import get_summarizer, summarizer_names
from memorylab.errors import InvalidSetting
from memorylab.evaluate._base import Scorer, run_sync
from memorylab.evaluate._budget import estimate_units
from memorylab.evaluate._cache import LLMCache, RunStats
from memorylab.evaluate._cases import Case
from memorylab.evaluate._engine import (
    ANSWER_COLUMNS,
    ANSWERS_KEY,
    COLUMNS,
    EXISTING,
    SUMMARY_COLUMNS,
    ComparisonResult,
    Context,
    ExistingSummaries,
    FormerComparison,
    run_unit,
    run_unit_job,
)
from memorylab.evaluate._llm_scorers import ProbeQAScorer
from memorylab.evaluate._plan import Plan
from memorylab.evaluate._recall_condition import recall_conditions
from memorylab.evaluate._scorers import get_scorer
from memorylab.llm import ModelSpeed, start_litellm_import
from memorylab.memory._holders import default_cache_dir

if TYPE_CHECKING:
    import pandas as pd

BASELINES = ("memorylab/extractive", "memorylab/truncate", "memorylab/head-tail")
"""The built-in offline summarizers: what every model should beat."""

DEFAULT_SCORERS = ("compression", "latency", "cost", "fact_recall", "probe_qa")
"""Scorers used when none are named: all offline (``probe_qa`` with the lookup reader)."""

SummarizerSpec = str | Summarizer
ScorerSpec = str | Scorer | Callable[..., Any]


def _resolve_one(spec: SummarizerSpec, options: Mapping[str, Any]) -> Summarizer:
    if isinstance(spec, str):
        name = spec.strip()
        if name == EXISTING:
            return ExistingSummaries()
        return get_summarizer(name, **(options if name not in summarizer_names() else {}))
    try:
        return as_summarizer(spec)
    except InvalidSetting:
        raise InvalidSetting(
            f"a summarizer is a litellm model name, a registered name or a Summarizer object, "
            f"not {type(spec).__name__}"
        ) from None


def resolve_summarizers(
    summarizers: SummarizerSpec | Sequence[SummarizerSpec] | Mapping[str, SummarizerSpec],
    summarizer_args: Mapping[str, Any] | None = None,
) -> dict[str, Summarizer]:
    """``{label: summarizer}``: a mapping keeps its labels; otherwise the summarizer's
    ``name`` (a model name for LiteLLM). ``summarizer_args`` go to LiteLLMSummarizer for model
    names (``{"llm_args": {"api_base": ...}, "retry": RetryPolicy(timeout=30)}``); registered
    names are built with their defaults."""
    options = dict(summarizer_args or {})
    if isinstance(summarizers, str) or not isinstance(summarizers, Sequence | Mapping):
        summarizers = [summarizers]
    pairs: list[tuple[str | None, SummarizerSpec]]
    if isinstance(summarizers, Mapping):
        pairs = [(str(k), v) for k, v in summarizers.items()]
    else:
        pairs = [(None, s) for s in summarizers]
    if not pairs:
        raise InvalidSetting("name at least one summarizer, e.g. ['memorylab/extractive']")
    out: dict[str, Summarizer] = {}
    for label, spec in pairs:
        summarizer = _resolve_one(spec, options)
        name = label or summarizer.name or type(summarizer).__name__
        if name in out:
            raise InvalidSetting(
                f"two summarizers are both named {name!r}; pass a dict {{label: summarizer}}"
            )
        out[name] = summarizer
    return out


def _resolve_scorers(scorers: ScorerSpec | Sequence[ScorerSpec]) -> list[Scorer]:
    if isinstance(scorers, str) or not isinstance(scorers, Sequence):
        scorers = [scorers]
    resolved = [get_scorer(s) for s in scorers]
    names = [s.name for s in resolved]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InvalidSetting(
            f"scorer names must be unique; repeated: {duplicates}. Give one a name of its own: "
            f"get_scorer({duplicates[0]!r}, name='{duplicates[0]}_2', ...)"
        )
    return resolved


def resolve_cases(cases: Case | Iterable[Case]) -> list[Case]:
    if not isinstance(cases, Case | Iterable) or isinstance(cases, str | bytes | Mapping):
        raise InvalidSetting(
            f"cases must be a Case or a list of Cases (from cases_from_*), not "
            f"{type(cases).__name__}"
        )
    items = [cases] if isinstance(cases, Case) else list(cases)
    if not items:
        raise InvalidSetting("no cases to compare on")
    bad = [type(c).__name__ for c in items if not isinstance(c, Case)]
    if bad:
        raise InvalidSetting(f"cases must be Case objects (from cases_from_*), not {bad[0]}")
    ids = [c.id for c in items]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise InvalidSetting(f"case ids must be unique; repeated: {repeated[:5]}")
    return items


def _cache(cache_dir: str | os.PathLike[str] | bool | None) -> LLMCache | None:
    if cache_dir is None or cache_dir is False:
        return None
    if cache_dir is True:
        return LLMCache(default_cache_dir())
    return LLMCache(cache_dir)


def _check_settings(concurrency: Any, max_cost_usd: Any, max_tokens: Any) -> None:
    check_int("concurrency", concurrency, 1)
    if max_cost_usd is not None:
        check_number("max_cost_usd", max_cost_usd, 0, strict=False, unit="USD", finite=False)
    if max_tokens is not None:
        check_int("max_tokens", max_tokens, 1)


# --------------------------------------------------------------------------- the plan


def plan_comparison(
    cases: Case | Iterable[Case],
    summarizers: SummarizerSpec | Sequence[SummarizerSpec] | Mapping[str, SummarizerSpec],
    scorers: ScorerSpec | Sequence[ScorerSpec] = DEFAULT_SCORERS,
    *,
    cache_dir: str | os.PathLike[str] | bool | LLMCache | None = True,
    max_tokens: int | None = None,
    summarizer_args: Mapping[str, Any] | None = None,
    speeds: Mapping[str, ModelSpeed] | None = None,
    recall: Sequence[int] = (0,),
) -> Plan:
    """What :func:`compare_summarizers` with these arguments would send (:class:`Plan`, the
    one the run returns as :attr:`ComparisonResult.plan`), timed with ``speeds`` (``{model:
    ModelSpeed}``, from :func:`memorylab.llm.measure_speed`; the model names as the table
    writes them). Nothing is sent: local summaries are made, cached calls read."""
    items = resolve_cases(cases)
    resolved = recall_conditions(resolve_summarizers(summarizers, summarizer_args), recall)
    scorer_list = _resolve_scorers(scorers)
    cache = cache_dir if isinstance(cache_dir, LLMCache) else _cache(cache_dir)
    frame = estimate_units(items, resolved, scorer_list, cache, max_tokens, speeds)
    graded = any(isinstance(s, ProbeQAScorer) for s in scorer_list)
    probes = sum(len(case.probes) for case in items) if graded else 0
    return Plan(frame, dict(speeds or {}), probes)


# --------------------------------------------------------------------------- running


async def _run_all(
    units: list[tuple[Case, str, Any]], scorers: list[Scorer], ctx: Context, bar: Any
) -> list[tuple[list[dict[str, Any]], dict[str, Any]]]:
    ctx.semaphore = asyncio.Semaphore(ctx.concurrency)

    async def one(case: Case, label: str, summarizer: Any) -> Any:
        result = await run_unit(case, label, summarizer, scorers, ctx)
        if bar is not None:  # else the bar counts requests
            bar.update(1)
        return result

    return list(await asyncio.gather(*(one(c, label, s) for c, label, s in units)))


def _run_executor(
    units: list[tuple[Case, str, Any]],
    scorers: list[Scorer],
    executor: Executor,
    cache: LLMCache | None,
    concurrency: int,
    max_tokens: int | None,
    stats: RunStats,
    bar: Any,
) -> list[tuple[list[dict[str, Any]], dict[str, Any]]]:
    from concurrent.futures import as_completed

    cache_dir = str(cache.directory) if cache is not None else None
    limit = stats.max_cost_usd
    futures = {
        executor.submit(
            run_unit_job, case, label, s, scorers, cache_dir, concurrency, max_tokens, limit
        ): index
        for index, (case, label, s) in enumerate(units)
    }
    results: list[Any] = [None] * len(units)
    for future in as_completed(futures):
        rows, record, job_stats = future.result()
        stats.merge(job_stats)
        results[futures[future]] = (rows, record)
        bar.update(1)
    return results


def _frame(rows: list[dict[str, Any]], columns: Sequence[str], *, extra: bool = False
           ) -> pd.DataFrame:  # fmt: skip
    """The rows as a frame of ``columns`` (other keys dropped), or ``columns`` first then the
    other keys in order of appearance (``extra``)."""
    import pandas as pd

    if extra:
        columns = [*columns, *dict.fromkeys(k for r in rows for k in r if k not in columns)]
    frame = pd.DataFrame(rows, columns=list(columns))
    if "value" in frame:
        frame["value"] = frame["value"].astype(float)
    if "n" in frame:
        frame["n"] = pd.to_numeric(frame["n"], errors="coerce").astype(float)
    return frame


def compare_summarizers(
    cases: Case | Iterable[Case],
    summarizers: SummarizerSpec | Sequence[SummarizerSpec] | Mapping[str, SummarizerSpec],
    scorers: ScorerSpec | Sequence[ScorerSpec] = DEFAULT_SCORERS,
    *,
    concurrency: int = 8,
    cache_dir: str | os.PathLike[str] | bool | None = True,
    max_cost_usd: float | None = None,
    executor: Executor | None = None,
    progress: bool = True,
    max_tokens: int | None = None,
    summarizer_args: Mapping[str, Any] | None = None,
    with_summaries: bool | None = None,
    max_seconds: float | None = None,
    speeds: Mapping[str, ModelSpeed] | None = None,
    recall: Sequence[int] = (0,),
    show_plan: bool | None = None,
) -> ComparisonResult:
    """Summarize every case with every summarizer, score the summaries (module docstring).

    Args:
        cases: a :class:`~memorylab.evaluate._cases.Case` or several (``cases_from_*``).
        summarizers: names (registered or litellm models), :class:`~memorylab.Summarizer`
            objects, a list of them, or a dict ``{label: summarizer}`` that chooses the labels.
        scorers: scorer names, :class:`~memorylab.evaluate._base.Scorer` objects or functions
            ``sample -> float``; default :data:`DEFAULT_SCORERS` (all offline).
        concurrency: the most summaries and model calls in flight at a time.
        cache_dir: where model calls are cached: ``True`` (:func:`default_cache_dir`), a
            folder, or ``None``/``False`` for no cache.
        max_cost_usd: the cost guard: estimate first and raise
            :class:`~memorylab.errors.BudgetExceeded` above it; stop sending at it.
        max_seconds: the time guard: raise :class:`~memorylab.errors.BudgetExceeded` when the
            plan's time is above it, or unknown (a model without a speed in ``speeds``).
        speeds: ``{model: ModelSpeed}`` (:func:`memorylab.llm.measure_speed`) for the plan's
            time.
        executor: a :class:`concurrent.futures.Executor` that runs each (case, summarizer) as
            a job (Dask's ``client.get_executor()``, a process pool).
        progress: show a progress bar.
        show_plan: print the plan's line on stderr before the first call (``None``: with the
            progress bar, when it sends requests; ``memorylab compare`` always does).
        max_tokens: the summary budget given to every summarizer (``None``: each one's
            default).
        summarizer_args: options for summarizers given as litellm model names (``llm_args``,
            ``retry`` ...).
        with_summaries: deprecated (the summaries are always there): ``True`` returns a
            result that also unpacks as the former ``(scores, summaries)`` pair.
        recall: recall depths, each a memory condition: every summarizer (memory) ``L`` is
            compared once per depth ``k``, as ``L`` for 0 and ``f"{L} + recall {k}"`` for
            ``k > 0``, whose probe reader also gets the ``k`` messages of the history that best
            match each question among those that left the memory; each memory is made once
            for all its depths. ``memorylab/full + recall k`` is the ceiling's same requests
            (nothing left it); ``memorylab/none + recall k`` is recall alone, not the floor.

    Returns:
        A :class:`ComparisonResult`: ``frame``, the long-form scores, one row per (case,
        summarizer, scorer, metric; a failure is a row with ``metric="error"``, NaN value and
        the ``error`` text); ``summaries``; the run's counters in ``run``; ``bounds``;
        ``quality``.
    """
    from tqdm.auto import tqdm

    _check_settings(concurrency, max_cost_usd, max_tokens)
    items = resolve_cases(cases)
    resolved = recall_conditions(resolve_summarizers(summarizers, summarizer_args), recall)
    scorer_list = _resolve_scorers(scorers)
    cache = _cache(cache_dir)
    if max_seconds is not None:
        check_number("max_seconds", max_seconds, 0, strict=True, unit="s")
    stats = RunStats(max_cost_usd)
    plan = None
    models = any(not s.offline for s in scorer_list) or any(
        not s.local for s in resolved.values())  # fmt: skip
    if models and executor is None:
        start_litellm_import()  # on a worker thread, while the plan and the first units go on
    if max_cost_usd is not None or max_seconds is not None or models:
        plan = plan_comparison(items, resolved, scorer_list,
                               cache_dir=cache if cache is not None else False,
                               max_tokens=max_tokens, speeds=speeds)  # fmt: skip
        plan.check(max_cost_usd, max_seconds)
    units = [(case, label, s) for case in items for label, s in resolved.items()]
    by_request = plan is not None and plan.requests > 0 and executor is None
    bar = tqdm(total=plan.requests if by_request and plan else len(units), desc="compare",
               unit="request" if by_request else "summary", disable=not progress,
               leave=False)  # fmt: skip
    if plan is not None and (progress and plan.requests if show_plan is None else show_plan):
        bar.write(plan.text(), file=sys.stderr)
    if by_request:
        stats.on_request = lambda: bar.update(1)
    started = time.perf_counter()
    try:
        if executor is None:
            ctx = Context(cache, stats, concurrency, max_tokens)
            results = run_sync(lambda: _run_all(units, scorer_list, ctx,
                                                None if by_request else bar))  # fmt: skip
        else:
            results = _run_executor(units, scorer_list, executor, cache, concurrency,
                                    max_tokens, stats, bar)  # fmt: skip
    finally:
        bar.close()
    wall_s = time.perf_counter() - started
    rows = [row for unit_rows, _ in results for row in unit_rows]
    frame = _frame(rows, COLUMNS)
    run: dict[str, Any] = {**stats.as_dict(), "estimate_usd": None, "unpriced_models": [],
                           "planned_requests": None, "wall_s": wall_s}  # fmt: skip
    if plan is not None:
        run["estimate_usd"] = plan.usd
        run["unpriced_models"] = sorted(plan.frame.loc[~plan.frame["priced"], "model"])
        run["planned_requests"] = plan.requests
    bounds: dict[str, str] = {}
    for label, summarizer in resolved.items():  # the first of each: the ceiling with recall
        if summarizer.bound and summarizer.bound not in bounds.values():  # repeats it
            bounds[label] = summarizer.bound
    made = FormerComparison if with_summaries else ComparisonResult
    if with_summaries is not None:
        warnings.warn(
            "compare_summarizers(with_summaries=...) is deprecated: the result always has "
            ".frame (the scores) and .summaries",
            DeprecationWarning,
            stacklevel=2,
        )
    summaries = _frame([record for _, record in results], SUMMARY_COLUMNS)
    answers = _frame([a for row in rows for a in row.get(ANSWERS_KEY, ())], ANSWER_COLUMNS,
                     extra=True)  # fmt: skip
    return made(frame, summaries, run, bounds, {s.name: bool(s.quality) for s in scorer_list},
                answers, plan)  # fmt: skip


# --------------------------------------------------------------------------- cost estimate


def estimate_cost(
    cases: Case | Iterable[Case],
    summarizers: SummarizerSpec | Sequence[SummarizerSpec] | Mapping[str, SummarizerSpec],
    scorers: ScorerSpec | Sequence[ScorerSpec] = DEFAULT_SCORERS,
    *,
    cache_dir: str | os.PathLike[str] | bool | LLMCache | None = True,
    max_tokens: int | None = None,
    summarizer_args: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """What :func:`compare_summarizers` would spend, per model, before running it.

    Calls already in the cache cost nothing (a summary is cached when replaying it from the
    cache alone succeeds; so is a scorer's call on a cached summary). The rest: input tokens
    counted with the model's tokenizer (prompt included), output tokens at their upper bound
    (``max_tokens``), priced with litellm's map. Columns ``model, calls, cached_calls,
    input_tokens, output_tokens, usd, priced`` (unpriced models: ``usd`` 0).
    """
    from memorylab.evaluate._budget import estimate_units

    items = resolve_cases(cases)
    resolved = resolve_summarizers(summarizers, summarizer_args)
    scorer_list = _resolve_scorers(scorers)
    cache = cache_dir if isinstance(cache_dir, LLMCache) else _cache(cache_dir)
    return estimate_units(items, resolved, scorer_list, cache, max_tokens)
