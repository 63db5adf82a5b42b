"""Memory strategies compared as summarizers are: each case's whole history run through a
strategy in a window, and the probes asked of what remains.

A summarizer comparison scores one summary of a history. A strategy comparison runs the history
the way an agent would live it: message by message through a
:class:`~memorylab.compress.ContextCompressor` with the strategy, in a ``context_length``-token
window compacting at ``threshold`` (several compactions on a long case), with the same exact
replay that :func:`memorylab.analysis._replay` is. What the context holds at the end (the
summaries and the messages the strategy kept, as the model reads them) is the memory the
scorers read, as they read a summary. The bounds are the usual ones: ``memorylab/full`` (the
whole history: the ceiling) and ``memorylab/none`` (nothing: the floor).

:func:`compare_strategies` returns a :class:`StrategyComparison`: the scores as a
:class:`~memorylab.evaluate.ComparisonResult` (``summary_table``, ``probe_table`` and the plots
take it as they take a summarizer comparison: per-category QA accuracy with intervals), and
``runs``, one row per (case, strategy) with what the run cost: compactions, the tokens the model
read at every check, the summarizer's calls, tokens and cost.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memorylab._validation import check_int
from memorylab.compress._base import BaseSummarizer, Summary
from memorylab.compress._baselines import CEILING, FLOOR
from memorylab.compress._policy import (
    DEFAULT_THRESHOLD,
    Threshold,
    trigger_tokens,
    validate_threshold,
)
from memorylab.compress._strategies import get_strategy
from memorylab.compress._strategy import Strategy
from memorylab.errors import InvalidSetting
from memorylab.evaluate._cases import Case
from memorylab.evaluate._compare import (
    DEFAULT_SCORERS,
    ScorerSpec,
    compare_summarizers,
    resolve_cases,
)
from memorylab.evaluate._engine import ComparisonResult
from memorylab.results import TableResult

if TYPE_CHECKING:
    import pandas as pd

    from memorylab.analysis._replay import ReplayResult

RUN_COLUMNS = (
    "case", "strategy", "messages", "compactions", "failed_compactions", "tokens_read",
    "peak_context_tokens", "over_window", "summarizer_calls", "summarizer_input_tokens",
    "summary_tokens", "summarizer_cost_usd", "memory_tokens",
)  # fmt: skip
"""The columns of :attr:`StrategyComparison.runs`: ``tokens_read`` is the context the model read
at every check (what the agent's calls cost), ``over_window`` the checks at which the context was
larger than the window (a model could not have read it: a strategy that cannot shrink the
context, such as tool-result clearing alone once every old result is cleared, scores on a memory
no model would have had), ``memory_tokens`` what is left at the end (what the probes are asked
of)."""


class StrategyMemory(BaseSummarizer):
    """A strategy as a summarizer: :meth:`summarize` runs the history through ``strategy`` in a
    ``context_length``-token window (compacting at ``threshold``, summaries by ``summarizer``,
    a check after every message, one process) and returns what the context holds at the end.

    Each run's figures are kept in :attr:`runs` (keyed by the history's SHA-256), so the
    comparison can say what each strategy cost. The summarizer inside runs as in a replay: a
    model summarizer is called one summary at a time (a comparison's concurrency and cache are
    for the scorers' calls).
    """

    def __init__(
        self,
        strategy: Strategy | str | None = None,
        *,
        context_length: int,
        threshold: Threshold = DEFAULT_THRESHOLD,
        summarizer: str | None = None,
        label: str | None = None,
    ) -> None:
        from memorylab.compress._summarizers import get_summarizer

        self.strategy = get_strategy(strategy)
        self.context_length = check_int("context_length", context_length, 1)
        self.threshold = validate_threshold(threshold)
        trigger_tokens(self.context_length, self.threshold)  # validates the pair
        self.summarizer = summarizer
        inner = get_summarizer(summarizer or "memorylab/extractive")
        self.local = inner.local
        self.model = inner.model
        self.name = label or self.strategy.describe()
        self.runs: dict[str, ReplayResult] = {}

    def __repr__(self) -> str:
        return (
            f"StrategyMemory({self.strategy.describe()}, context_length={self.context_length:,}, "
            f"threshold={self.threshold!r})"
        )

    def summarize(
        self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None
    ) -> Summary:
        """What remains after running ``messages`` through the strategy (``max_tokens`` is not
        used: each compaction's summary budget is the compressor's, as live)."""
        from memorylab.analysis._replay import replay

        started = time.perf_counter()
        history = [{"role": m["role"], "content": m["content"]} for m in messages]
        result = replay(
            history,
            strategy=self.strategy,
            context_length=self.context_length,
            threshold=self.threshold,
            summarizer=self.summarizer,
            checks="message",
            restarts=False,
            progress=False,
        )
        self.runs[_history_key(history)] = result
        return Summary(
            text=result.final_context,
            model=self.name,
            input_tokens=result.summarizer_input_tokens,
            output_tokens=result.summary_tokens,
            cost_usd=result.summarizer_cost_usd,
            latency_s=time.perf_counter() - started,
            chunks=max(1, result.summarizer_calls),
        )


def _history_key(messages: Sequence[Mapping[str, Any]]) -> str:
    """A history's identity: the SHA-256 of its roles and contents."""
    text = json.dumps([[str(m["role"]), str(m["content"])] for m in messages])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True, repr=False)
class StrategyComparison(TableResult):
    """What :func:`compare_strategies` made: ``frame``, one row per strategy (the bounds too)
    with its quality means and what its runs cost in all (compactions, tokens read, summarizer
    calls and cost); ``comparison``, the scores (a
    :class:`~memorylab.evaluate.ComparisonResult`: ``summary_table``, ``probe_table`` and the
    plots take it); ``runs``, one row per (case, strategy) (:data:`RUN_COLUMNS`)."""

    frame: pd.DataFrame
    comparison: ComparisonResult
    runs: pd.DataFrame


_COMPARE_OPTIONS = tuple(
    name
    for name, parameter in inspect.signature(compare_summarizers).parameters.items()
    if parameter.kind is inspect.Parameter.KEYWORD_ONLY
)
"""The keywords :func:`compare_strategies` passes on to
:func:`~memorylab.evaluate.compare_summarizers` (its ``options``)."""


def compare_strategies(
    cases: Case | Iterable[Case],
    strategies: Sequence[Strategy | str] | Mapping[str, Strategy | str],
    scorers: ScorerSpec | Sequence[ScorerSpec] = DEFAULT_SCORERS,
    *,
    context_length: int,
    threshold: Threshold = DEFAULT_THRESHOLD,
    summarizer: str | None = None,
    bounds: bool = True,
    **options: Any,
) -> StrategyComparison:
    """Run every case's history through every strategy and score what remains (module docstring).

    ``strategies``: strategy objects or registered names, or ``{label: strategy}``;
    ``context_length`` and ``threshold``: the window and when to compact (the same for every
    strategy); ``summarizer``: the summaries' summarizer (default the offline extractive one);
    ``bounds``: add ``memorylab/full`` and ``memorylab/none``. ``options`` go to
    :func:`~memorylab.evaluate.compare_summarizers` (``concurrency``, ``cache_dir``,
    ``max_cost_usd``, ``progress`` ...).
    """
    import pandas as pd

    unknown = [name for name in options if name not in _COMPARE_OPTIONS]
    if unknown:
        raise InvalidSetting(
            f"compare_strategies() got an unexpected keyword argument {unknown[0]!r}; its "
            f"options are compare_summarizers': {', '.join(_COMPARE_OPTIONS)}"
        )
    items = resolve_cases(cases)  # once: an iterator of cases is read here, not twice
    one = isinstance(strategies, str | Strategy)
    if one or not isinstance(strategies, Iterable):
        raise InvalidSetting(
            "strategies must be a list of strategies (registered names or Strategy objects) or a "
            f"{{label: strategy}} dict, not {strategies!r}"
            + (f"; for one, pass [{strategies!r}]" if one else "")
        )
    labelled = dict(strategies) if isinstance(strategies, Mapping) else {
        get_strategy(s).describe(): s for s in strategies
    }  # fmt: skip
    if not labelled:
        raise InvalidSetting("compare_strategies needs at least one strategy")
    memories = {
        label: StrategyMemory(strategy, context_length=context_length, threshold=threshold,
                              summarizer=summarizer, label=label)
        for label, strategy in labelled.items()
    }  # fmt: skip
    compared: dict[str, Any] = dict(memories)
    if bounds:
        compared.update({CEILING: CEILING, FLOOR: FLOOR})
    if options.get("executor") is not None:
        raise InvalidSetting(
            "compare_strategies runs the strategies in this process (their runs' figures are "
            "read from it): leave executor out"
        )
    result = compare_summarizers(items, compared, scorers, **options)
    rows = []
    for case in items:
        key = _history_key(case.messages)
        for label, memory in memories.items():
            run = memory.runs.get(key)
            if run is None:  # failed (an error row in the scores says why)
                continue
            rows.append(
                {
                    "case": case.id,
                    "strategy": label,
                    "messages": len(run.frame),
                    "compactions": run.compactions,
                    "failed_compactions": sum(1 for e in run.events if not e.ok),
                    "tokens_read": run.total_input_tokens,
                    "peak_context_tokens": run.peak_context_tokens,
                    "over_window": int(
                        (run.frame["context_after"] > run.context_length)[run.frame["check"]].sum()
                    ),
                    "summarizer_calls": run.summarizer_calls,
                    "summarizer_input_tokens": run.summarizer_input_tokens,
                    "summary_tokens": run.summary_tokens,
                    "summarizer_cost_usd": run.summarizer_cost_usd,
                    "memory_tokens": int(run.frame["context_after"].iloc[-1])
                    if len(run.frame)
                    else 0,
                }
            )
    runs = pd.DataFrame(rows, columns=list(RUN_COLUMNS))
    return StrategyComparison(frame=_overview(result, runs), comparison=result, runs=runs)


def _overview(result: ComparisonResult, runs: pd.DataFrame) -> pd.DataFrame:
    """One row per strategy and bound: each quality metric's mean over cases, and the runs'
    costs summed."""
    import pandas as pd

    scores = result.frame[result.frame["metric"] != "error"]
    quality = scores.assign(column=scores["scorer"] + "." + scores["metric"]).pivot_table(
        index="summarizer", columns="column", values="value", aggfunc="mean", sort=False
    )
    summed = ["compactions", "tokens_read", "over_window", "summarizer_calls",
              "summarizer_cost_usd", "memory_tokens"]  # fmt: skip
    costs = runs.groupby("strategy", sort=False)[summed].sum()
    order = list(dict.fromkeys(result.frame["summarizer"]))
    frame = pd.concat([quality.reindex(order), costs.reindex(order)], axis=1)
    frame.index.name = "strategy"
    return frame.reset_index()
