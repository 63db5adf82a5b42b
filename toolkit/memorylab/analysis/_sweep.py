"""Sweeps: a replay's figures at every (context length, threshold) setting, in one table.

:func:`sweep` returns a :class:`SweepResult`: one row per setting and how the table was made.
Exact replays by default when they fit in a few seconds; ``fast=True`` models the summaries'
sizes (:mod:`._fast`, glued to a run by :class:`_FastEngine`), calibrated against exact replays
(:func:`_calibrate`), whose measured error the result states. :func:`sweep_table` is the table
to read (:data:`SWEEP_HEADINGS`; thresholds as :func:`~memorylab.compress._policy.threshold_text`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, Unpack

from memorylab._validation import check_columns, check_list
from memorylab.analysis._replay import replay_run
from memorylab.analysis._runs import (
    PreparedRun,
    RunOverrides,
    RunSettings,
    SummarySize,
    TranscriptSource,
    summary_sample,
)
from memorylab.compress import _cache_model as cache_model
from memorylab.compress._base import Summarizer, Summary
from memorylab.compress._policy import Threshold, same_threshold, threshold_text, trigger_tokens
from memorylab.compress._strategy import Strategy
from memorylab.errors import InvalidSetting
from memorylab.memory import _format as fmt
from memorylab.memory._records import SUMMARY_PREFIX, Message
from memorylab.results import FormerFrame, TableResult

if TYPE_CHECKING:
    import pandas as pd

    from memorylab.analysis import _fast
    from memorylab.analysis._transcript import Transcript

DEFAULT_THRESHOLDS: tuple[float, ...] = (0.5, 0.6, 0.7, 0.8, 0.9)
"""The thresholds :func:`sweep` tries when none are given (with the recorded one)."""

EXACT_SECONDS = 3.0
""":func:`sweep` replays every setting exactly when that is estimated to take at most this long
(and the summarizer runs locally); else it sweeps fast, calibrated against exact replays."""

CALIBRATION_SECONDS = 0.6
"""What a fast sweep's calibration may spend (estimated) on its exact replays, by default: the
whole transcript when that fits, else its start (at least :data:`CALIBRATION_COMPACTIONS`
compactions of each calibration setting)."""

CALIBRATION_COMPACTIONS = 2
_FIGURES = ("compactions", "peak_context_tokens", "total_input_tokens")  # replays, fast runs

# The estimate behind EXACT_SECONDS (an extractive replay on a laptop: about 20 µs a message and
# 4 µs a summarized token); it only chooses a mode, nothing is asserted about it.
_SECONDS_PER_MESSAGE = 2e-5
_SECONDS_PER_SUMMARIZED_TOKEN = 4e-6


@dataclass(frozen=True, slots=True, repr=False)
class SweepResult(FormerFrame, TableResult):
    """What :func:`sweep` made: ``frame``, one row per setting (the columns in :func:`sweep`),
    the ``settings`` of the run it swept, the ``summarizer`` that made the summaries and, for a
    fast sweep, the ``summary_size`` it modelled, the ``calibration`` rows (exact and fast
    figures of the same settings) and the largest differences among them (``error``: empty when
    not measured), and the ``estimate`` of its exact replays made before it started
    (:class:`SweepEstimate`). :meth:`notes` says it in a line (:func:`sweep_note`);
    ``exact_because`` says what the fast engine does not model of the run, which made settings
    exact replays (``None``: nothing).

    Earlier versions returned the frame, with these in ``frame.attrs``: using the result as that
    frame still works for now and warns (``DeprecationWarning``).
    """

    frame: pd.DataFrame
    settings: RunSettings
    summarizer: str
    summary_size: SummarySize | None = None
    calibration: list[dict[str, Any]] = field(default_factory=list)
    error: dict[str, Any] = field(default_factory=dict)
    estimate: SweepEstimate | None = None
    exact_because: str | None = None

    _former: ClassVar[str] = "sweep()"

    def notes(self) -> list[str]:
        """How the table was made and, for a fast sweep, its measured error (one line)."""
        frame, error = self.frame, self.error
        because = self.exact_because
        if "mode" not in frame.columns or not len(frame) or (frame["mode"] == "replay").all():
            why = "" if because is None else f": the fast mode does not model {because}"
            return [f"Every setting replayed exactly (summaries by {self.summarizer}){why}."]
        size = self.summary_size if self.summary_size is not None else "modelled"
        # Why fast: the wait exact replays were estimated at (fast=True or not, it is stated).
        why = "" if self.estimate is None else f" (instead of {self.estimate.describe()})"
        because = "" if because is None else f" Replayed exactly where it meets {because}."
        if not error:
            return [
                f"Fast sweep{why}: summaries modelled as {size}; its error was not measured "
                f"(calibrate=True replays a few settings exactly to measure it).{because}"
            ]
        return [
            f"Fast sweep{why}: summaries modelled as {size}. Against exact replays "
            f"({self.summarizer}) of {_extent(error)} at {error['settings']} setting(s): "
            f"compactions within ±{error['compactions']} ({error['compactions_pct']:.0f} %), "
            f"peak context within {error['peak_pct']:.1f} %.{because}"
        ]


def sweep(
    transcript: TranscriptSource,
    thresholds: Iterable[Threshold] | None = None,
    context_lengths: Iterable[int] | None = None,
    *,
    summarizer: str | Summarizer | None = None,
    fast: bool | None = None,
    summary_size: SummarySize | None = None,
    summary_ratio: float | None = None,
    facts: Sequence[str] | None = None,
    settings: RunSettings | None = None,
    calibrate: bool | float | None = None,
    replay_at: Iterable[Threshold] = (),
    cache: bool | MutableMapping[str, Summary] = True,
    progress: bool | None = None,
    strategies: Iterable[Strategy | str] | None = None,
    **overrides: Unpack[RunOverrides],
) -> SweepResult:
    """One row per (context length, threshold) setting (see docs/analysis.md).

    The recorded setting is added to the grid when its window is swept, and marked (``recorded``
    True); ``thresholds`` default to :data:`DEFAULT_THRESHOLDS`, ``context_lengths`` to the
    recorded window. Every other setting is :func:`~memorylab.analysis._replay`'s (the same
    ``overrides``, :class:`~memorylab.analysis._runs.RunOverrides`, the same defaults from the
    record). A :class:`SweepResult`: the table in ``frame``, how it was made in its fields.

    Columns: ``context_length``, ``threshold``, ``trigger``, ``mode`` (``"replay"`` or
    ``"fast"``), ``recorded``, ``messages``, ``compactions``, ``peak_context_tokens`` (the
    largest context reached, before a check), ``total_input_tokens`` (the context the model read
    at every check), ``summarizer_calls``, ``summarizer_input_tokens``, ``summary_tokens`` (of
    the summary entries), ``cached_input_tokens`` (of the input tokens, those read from the
    prompt cache: :mod:`~memorylab.compress._cache_model` states the rules),
    ``estimated_cost_usd`` (what the user would be billed: the input at ``model``'s cache-aware
    prices where litellm's map lists cache prices for it, else at its input price, plus the
    summarizer's tokens at its price; NaN when unknown), ``uncached_cost_usd`` (every input
    token at the input price, plus the summarizer's: the estimate before caching was counted)
    and ``fact_survival`` when ``facts`` are given.

    ``fast``: ``None`` replays every setting exactly when that fits in :data:`EXACT_SECONDS`
    (and the summarizer runs locally), else sweeps fast; ``True`` makes no summaries: each is
    ``summary_size`` tokens (a :class:`~memorylab.analysis._runs.SummarySize`; ``summary_ratio``
    is the shorthand ``SummarySize(ratio=summary_ratio)``; default: fitted on the calibration
    replays, else the recorded sizes), and a fact survives when a message after the last
    compaction still quotes it. ``calibrate`` (default: when the summarizer runs locally; a
    number: the seconds it may spend, default :data:`CALIBRATION_SECONDS`) replays up to three
    settings exactly (the whole transcript when that fits, else its start) and measures the
    fast mode against them: ``result.calibration`` holds the rows, ``result.error`` the
    largest differences, and ``result.notes()`` (:func:`sweep_note`) says it in a line.
    ``replay_at``: thresholds replayed exactly even in a fast sweep (their rows' ``mode`` is
    ``"replay"``: a view that shows one setting's replay beside the table).

    ``strategies``: what each compaction does (:mod:`memorylab.compress` strategies or their
    names; default: the run's own, recorded or ``summary``): the grid is every strategy at every
    setting, and the ``strategy`` column names each row's (``Strategy.describe()``). The fast
    engine models the summary strategy only: the other strategies' rows are exact replays.
    """
    import pandas as pd

    from memorylab.analysis import _progress

    if summary_ratio is not None:
        if summary_size is not None:
            raise InvalidSetting("give summary_size or summary_ratio, not both")
        if not (isinstance(summary_ratio, int | float) and 0 < summary_ratio <= 1):
            raise InvalidSetting(f"summary_ratio must be within (0, 1], not {summary_ratio!r}")
        summary_size = SummarySize(ratio=float(summary_ratio))
    plan = _plan(transcript, thresholds, context_lengths, summarizer, summary_size, settings,
                 overrides, strategies)  # fmt: skip
    grid, recorded, chosen, fast_engine = plan.grid, plan.recorded, plan.chosen, plan.engine
    estimate = plan.estimate()
    wanted = list(facts) if facts is not None else None
    mode = estimate.mode if fast is None else "fast" if fast else "replay"
    rows: list[dict[str, Any]] = []
    calibration: list[dict[str, Any]] = []
    because = _not_modelled(plan.run) if mode == "fast" else None  # said where it mattered
    if because is not None:
        mode = "replay"
    exact_rows = len(grid) * sum(mode == "replay" or not _modelled(s) for s in plan.strategies)
    # One bar over every message of every exact replay, its cost stated before the first one.
    bar = _progress.bar(exact_rows * estimate.messages, f"sweep: {estimate.describe()}", "msg",
                        progress if exact_rows else False)  # fmt: skip
    for strategy in plan.strategies:
        run = plan.run_of(strategy)
        made: list[dict[str, Any]] = []
        if mode == "replay" or not _modelled(strategy):
            for length, threshold, trigger in grid:
                made.append(_exact_row(run, (length, threshold, trigger), chosen, cache, wanted,
                                       bar))  # fmt: skip
        else:
            if calibrate if calibrate is not None else chosen.local:
                seconds = CALIBRATION_SECONDS if calibrate in (None, True) else float(calibrate)
                calibration, fitted = _calibrate(
                    run, grid, recorded, chosen, fast_engine, seconds, cache
                )
                if summary_size is None and fitted is not None:
                    fast_engine = _FastEngine(run, fitted)
                    calibration = _measure(run, calibration, fast_engine)
            made = fast_engine.rows(grid, wanted, _summarizer_model(summarizer, chosen))
            exactly = list(replay_at)
            for place, (_, threshold, _) in enumerate(grid):
                refused = made[place].pop("refused")
                if refused:
                    because = _REFUSED
                if refused or any(same_threshold(threshold, t) for t in exactly):
                    made[place] = _exact_row(run, grid[place], chosen, cache, wanted)
        for row in made:
            row["strategy"] = strategy.describe()
            row["recorded"] = (
                recorded is not None
                and strategy == plan.run.settings.strategy
                and row["context_length"] == recorded[0]
                and same_threshold(row["threshold"], recorded[1])
            )
        rows += made
    bar.close()
    frame = pd.DataFrame(rows)
    order = ["context_length", "threshold", "trigger", "strategy", "mode", "recorded"]
    frame = frame[order + [c for c in frame.columns if c not in order]]
    if not all(isinstance(row["threshold"], float) for row in rows):  # keep 3000 an int (tokens)
        frame["threshold"] = pd.Series([row["threshold"] for row in rows], dtype=object)
    run = plan.run
    fast_mode = bool((frame["mode"] == "fast").any())
    return SweepResult(
        frame=frame,
        settings=run.settings,
        summarizer=chosen.name,
        summary_size=fast_engine.size if fast_mode else None,
        calibration=calibration,
        error=_errors(calibration, len(run.transcript)) if fast_mode else {},
        estimate=estimate,
        exact_because=because,
    )


_REFUSED = (
    "a compressor keeping the turn in progress that refuses to compact it (the turn is all the "
    "history holds: the failed attempt and its back-off)"
)


def _not_modelled(run: PreparedRun) -> str | None:
    """What of ``run`` the fast engine does not model, which makes every setting an exact
    replay (``None``: it models the run)."""
    trigger = run.settings.trigger
    if trigger is not None and trigger.cache is not None:
        return "a cache-aware trigger (Trigger(cache=...): the fast engine has no clock)"
    if run.record is not None and run.record.pins:
        return "pinned entries (pins.jsonl), which every compaction keeps"
    if run.settings.hook_kept:
        return "the entries a before_compaction hook kept"
    return None


@dataclass(frozen=True, slots=True)
class SweepEstimate:
    """What a :func:`sweep` would cost, known before it starts (:func:`estimate_sweep`).

    ``exact_seconds``: this machine's estimated time to replay every setting exactly with a
    summarizer that runs locally (about 20 µs a message and 4 µs a summarized token: it
    chooses a mode and states a wait, it is not a measurement); ``summarizer_calls``: the
    summaries those replays would ask for (the fast engine's count; a model summarizer adds
    its latency per call); ``local``: whether the summarizer runs on this machine. ``mode``
    is what ``sweep(fast=None)`` does: ``"replay"`` when the summarizer is local and the
    estimate is within :data:`EXACT_SECONDS`, else ``"fast"``.
    """

    settings: int
    messages: int
    exact_seconds: float
    summarizer_calls: int
    local: bool

    @property
    def mode(self) -> str:
        return "replay" if self.local and self.exact_seconds <= EXACT_SECONDS else "fast"

    def describe(self) -> str:
        """``5 exact replays of 100,000 messages: about 58 s, 212 summaries``."""
        replays = "exact replay" if self.settings == 1 else "exact replays"
        calls = "summary" if self.summarizer_calls == 1 else "summaries"
        wait = f"about {self.exact_seconds:,.0f} s" if self.exact_seconds >= 1 else "under 1 s"
        if not self.local:
            wait += " here, plus the summarizer's time per call"
        return (
            f"{self.settings:,} {replays} of {self.messages:,} messages: {wait}, "
            f"{self.summarizer_calls:,} {calls}"
        )


def estimate_sweep(
    transcript: TranscriptSource,
    thresholds: Iterable[Threshold] | None = None,
    context_lengths: Iterable[int] | None = None,
    *,
    summarizer: str | Summarizer | None = None,
    settings: RunSettings | None = None,
    strategies: Iterable[Strategy | str] | None = None,
    **overrides: Unpack[RunOverrides],
) -> SweepEstimate:
    """What :func:`sweep` with the same arguments would cost replayed exactly, before it
    starts (a :class:`SweepEstimate`): the tuner and the report choose the mode from it, and a
    notebook can say "this will take a minute" before it does. Counting the transcript's tokens
    is the only work done (and it is remembered for the sweep)."""
    return _plan(transcript, thresholds, context_lengths, summarizer, None, settings,
                 overrides, strategies).estimate()  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Plan:
    """A sweep's run, grid and engines, prepared once for :func:`sweep` and
    :func:`estimate_sweep`."""

    run: PreparedRun
    grid: list[tuple[int, Threshold, int]]
    recorded: tuple[int, Threshold] | None
    chosen: Summarizer
    engine: _FastEngine
    strategies: list[Strategy]

    def run_of(self, strategy: Strategy) -> PreparedRun:
        """The run with ``strategy`` compacting (the run itself for its own strategy)."""
        if strategy == self.run.settings.strategy:
            return self.run
        return replace(self.run, settings=self.run.settings.given(strategy=strategy))

    def estimate(self) -> SweepEstimate:
        # The fast engine models the summary strategy: its replay's cost stands for every
        # strategy's (keeping or clearing costs no more per message than summarizing).
        outcomes = [self.engine.simulate(self.run, length, t) for length, t, _ in self.grid]
        summarizing = sum(1 for s in self.strategies if s.summarizes)
        return SweepEstimate(
            settings=len(self.grid) * len(self.strategies),
            messages=len(self.run.transcript),
            exact_seconds=len(self.strategies) * sum(self.engine.cost_of(o) for o in outcomes),
            summarizer_calls=summarizing * sum(outcome.compactions for outcome in outcomes),
            local=bool(self.chosen.local),
        )


def _modelled(strategy: Strategy) -> bool:
    """Whether the fast engine models ``strategy`` (the summary strategy only: the others'
    sweep rows are exact replays)."""
    return strategy.name == "summary"


def _plan(
    transcript: TranscriptSource,
    thresholds: Iterable[Threshold] | None,
    context_lengths: Iterable[int] | None,
    summarizer: str | Summarizer | None,
    summary_size: SummarySize | None,
    settings: RunSettings | None,
    overrides: RunOverrides,
    strategies: Iterable[Strategy | str] | None = None,
) -> _Plan:
    from memorylab.analysis._runs import prepare_run
    from memorylab.analysis._summarizers import choose
    from memorylab.compress._strategies import get_strategy

    run = prepare_run(transcript, settings, overrides, "sweep")
    at = run.settings.context_length, run.settings.threshold
    recorded = at if run.settings.source_of("threshold") == "recorded" else None
    lengths = (
        [run.settings.context_length]
        if context_lengths is None
        else check_list("context_lengths", context_lengths, of="context lengths")
    )
    tried = DEFAULT_THRESHOLDS if thresholds is None else thresholds
    grid = _settings(check_list("thresholds", tried, of="thresholds"), lengths, recorded)
    chosen = choose(summarizer, run, None)
    size = summary_size or run.settings.summary_size or SummarySize()
    chosen_strategies = [run.settings.strategy]
    if strategies is not None:
        listed = check_list("strategies", strategies, of="strategies (names or Strategy)")
        chosen_strategies = list(dict.fromkeys(get_strategy(s) for s in listed))
        if not chosen_strategies:
            raise InvalidSetting("strategies= names no strategy; give at least one, or None")
    return _Plan(run, grid, recorded, chosen, _FastEngine(run, size), chosen_strategies)


def sweep_note(result: SweepResult) -> str:
    """One line on how a :func:`sweep` table was made and, for a fast one, its measured error
    (``result.notes()``)."""
    return " ".join(result.notes())


def sweep_cost_note(result: SweepResult) -> str:
    """Whether a :func:`sweep`'s ``estimated_cost_usd`` counts prompt caching, in a sentence:
    with it where litellm's map lists cache prices for the model it prices with (the run's token
    model), else every input token at the input price; or why there is no cost at all."""
    model = result.settings.token_model
    if model is None:
        return "No est. cost: no model is recorded to price with (give one: model=, --model)."
    read, write, least = cache_model.cache_terms(model)
    if math.isnan(read):
        return (
            f"The est. cost: every input token at {model}'s input price, without prompt caching "
            "(litellm's map lists no cache prices for it), plus the summarizer's calls."
        )
    return (
        "The est. cost counts prompt caching: the input a warm cache serves (prefixes of "
        f"{least:,} tokens or more) at {model}'s cached price (${read * 1e6:,.3g} per million "
        f"tokens), cache writes at ${write * 1e6:,.3g}, the rest at the input price, plus the "
        "summarizer's calls; uncached cost: every input token at the input price."
    )


def _text(form: str, missing: str = "") -> Callable[[Any], str]:
    """A column's one format (``missing`` for a missing value)."""

    def text(value: Any) -> str:
        import pandas as pd

        return missing if value is None or bool(pd.isna(value)) else form.format(value)

    return text


_count_text = _text("{:,.0f}")
SWEEP_HEADINGS: Mapping[str, tuple[str, Callable[[Any], str]]] = {
    "context_length": ("window (tokens)", _count_text),
    "threshold": ("threshold", threshold_text),
    "trigger": ("compacts at (tokens)", _count_text),
    "strategy": ("strategy", str),
    "mode": ("mode", str),
    "messages": ("messages", _count_text),
    "compactions": ("compactions", _count_text),
    "peak_context_tokens": ("peak context (tokens)", _count_text),
    "total_input_tokens": ("input tokens read", _count_text),
    "summarizer_calls": ("summarizer calls", _count_text),
    "summarizer_input_tokens": ("summarizer input tokens", _count_text),
    "summary_tokens": ("summary tokens", _count_text),
    "cached_input_tokens": ("cached input tokens", _count_text),
    "estimated_cost_usd": ("est. cost (USD)", _text("${:,.4f}", "–")),  # cents: $0.0149
    "uncached_cost_usd": ("uncached cost (USD)", _text("${:,.4f}", "–")),
    "fact_survival": ("facts kept", _text("{:.0%}")),
}
"""Each :func:`sweep` column shown by :func:`sweep_table`: its heading and its one format."""


def sweep_table(
    result: SweepResult | pd.DataFrame, columns: Sequence[str] | None = None
) -> pd.DataFrame:
    """A :func:`sweep` result (or its frame) to read: human headings, one number format per
    column (thresholds ``0.85``, counts ``12,345``, costs ``$0.0149``), and a first column
    naming the agent's own setting. The values are text; the result keeps its columns for
    computing (this is the table the report shows, and what a notebook displays)."""
    import pandas as pd

    frame = result.frame if isinstance(result, SweepResult) else result
    check_columns("result", frame, (), made_by="sweep")
    chosen = [c for c in (columns or SWEEP_HEADINGS) if c in frame.columns and c in SWEEP_HEADINGS]
    shown = pd.DataFrame(
        {SWEEP_HEADINGS[c][0]: [SWEEP_HEADINGS[c][1](v) for v in frame[c]] for c in chosen},
        index=frame.index,
    )
    if "recorded" in frame.columns:
        marks = ["the agent's setting" if bool(r) else "" for r in frame["recorded"]]
        shown.insert(0, "", marks)
    return shown.reset_index(drop=True)


def _extent(error: Mapping[str, Any]) -> str:
    return "the whole transcript" if error["whole"] else f"the first {error['messages']:,} messages"


def _exact_row(
    run: PreparedRun,
    setting: tuple[int, Threshold, int],
    summarizer: Summarizer,
    cache: bool | MutableMapping[str, Summary],
    facts: list[str] | None,
    bar: Any = None,
) -> dict[str, Any]:
    """A sweep row from an exact replay of the setting (``bar``: the sweep's progress bar)."""
    length, threshold, trigger = setting
    result = replay_run(run.at(length, threshold), summarizer, cache=cache,
                    progress=False if bar is None else bar)  # fmt: skip
    row = {"context_length": length, "threshold": threshold, "trigger": trigger, "mode": "replay"}
    row["messages"] = len(run.transcript)
    for name in (*_FIGURES, "summarizer_calls", "summarizer_input_tokens", "summary_tokens",
                 "cached_input_tokens", "estimated_cost_usd", "uncached_cost_usd"):  # fmt: skip
        row[name] = getattr(result, name)
    if facts is not None:
        row["fact_survival"] = result.fact_survival(facts)
    return row


class _FastEngine:
    """The fast sweep of one run: the replay's rules on token counts, summaries of ``size``."""

    def __init__(self, run: PreparedRun, size: SummarySize) -> None:
        from memorylab.analysis import _fast
        from memorylab.analysis._transcript import summary_overhead

        self.run, self.size = run, size
        data = run.transcript
        counter = run.counter
        self.tokens = data.tokens(counter)
        self.prefix = _fast.Prefix.of(self.tokens, run.checks)
        self.overhead = summary_overhead(counter)
        self.whens = data.datetimes()
        self._preloads: dict[tuple[Any, ...], int] = {}
        # the turn in progress, kept by the compressor as the run's was (its rules, modelled)
        self.turns = _fast.Turns.of(data.roles, "User") if run.settings.keep_turn else None

    def simulate(
        self, run: PreparedRun, length: int, threshold: Threshold, stop_after: int | None = None
    ) -> _fast.Outcome:
        from memorylab.analysis import _fast
        from memorylab.compress._compressor import MIN_SUMMARY_TOKENS, ContextCompressor

        settings = run.at(length, threshold).settings
        compressor = ContextCompressor(
            threshold, summarizer_max_tokens=settings.summarizer_max_tokens
        )
        prefix = self.prefix
        if len(run.transcript) != prefix.count:
            prefix = _fast.Prefix.of(self.tokens[: len(run.transcript)], run.checks)
        return _fast.simulate(
            prefix,
            compressor.trigger_tokens(length),
            overhead=self.overhead,
            size=self.size,
            budget=compressor.summary_budget(length),
            static_tokens=settings.static_tokens,
            restarts=run.restarts,
            preload=lambda *at: self._preload(settings.preload_max_tokens, *at),
            stop_after=stop_after,
            keep_points=True,
            cache_min_tokens=cache_model.cache_terms(run.model)[2],
            turns=self.turns,
            least_summary=MIN_SUMMARY_TOKENS,
        )

    def _preload(
        self, bound: int | None, summary: int | None, at: int, start: int, end: int, lone: int
    ) -> int:
        """The preload entry's tokens: the real bounded preload of the MEMORY.md the fast run
        would have (a summary of ``summary`` tokens, the message ``lone`` a compaction kept
        alone, then the messages from ``start``)."""
        from memorylab.analysis._transcript import memory_text, preload_content, system_tokens

        key = (bound, summary, at, start, end, lone)
        found = self._preloads.get(key)
        if found is not None:
            return found
        data, counter, whens = self.run.transcript, self.run.counter, self.whens
        messages = []
        if summary is not None:
            text = f"{SUMMARY_PREFIX} " + " ".join(["x"] * summary)
            messages.append(Message("System", text, whens[at]))
        kept = ([lone] if lone >= 0 else []) + list(range(start, end))
        messages += [Message(data.roles[i], data.contents[i], whens[i]) for i in kept]
        created = whens[at] if summary is not None else whens[0]
        continues = fmt.archive_name(whens[at]) if summary is not None else None
        name = self.run.name_at(end)  # the process restarting at message ``end``
        text = memory_text(messages, name=name, created=created, continues=continues)
        content = preload_content(text, max_tokens=bound, counter=counter)
        tokens = 0 if content is None else system_tokens(counter, content)
        self._preloads[key] = tokens
        return tokens

    def cost_of(self, outcome: _fast.Outcome) -> float:
        """Seconds an exact replay of the setting this fast ``outcome`` ran is estimated to
        take (:class:`SweepEstimate`)."""
        return (
            self.prefix.count * _SECONDS_PER_MESSAGE
            + outcome.summarizer_input_tokens * _SECONDS_PER_SUMMARIZED_TOKEN
        )

    def rows(
        self,
        grid: list[tuple[int, Threshold, int]],
        facts: list[str] | None,
        priced: str | None,
    ) -> list[dict[str, Any]]:
        import numpy as np

        run = self.run
        last = _last_mentions(run.transcript, facts) if facts else None
        rows = []
        for length, threshold, trigger in grid:
            outcome = self.simulate(run, length, threshold)
            row = {
                "context_length": length,
                "threshold": threshold,
                "trigger": trigger,
                "mode": "fast",
                "messages": len(run.transcript),
                **{name: getattr(outcome, name) for name in _FIGURES},
                "summarizer_calls": outcome.compactions,
                "summarizer_input_tokens": outcome.summarizer_input_tokens,
                "summary_tokens": outcome.summary_tokens + outcome.compactions * self.overhead,
                "cached_input_tokens": outcome.cached_tokens,
                "refused": bool(outcome.refused),  # sweep() replays such a setting exactly
            }
            summaries = cache_model.price(
                priced, outcome.summarizer_input_tokens, outcome.summary_tokens
            )
            uncached = cache_model.price(run.model, outcome.total_input_tokens) + summaries
            cached = cache_model.cached_price(
                run.model, outcome.total_input_tokens, outcome.cached_tokens,
                outcome.cache_write_tokens,
            )  # fmt: skip
            row["estimated_cost_usd"] = uncached if math.isnan(cached) else cached + summaries
            row["uncached_cost_usd"] = uncached
            if facts is not None:
                row["fact_survival"] = (
                    float(np.mean(last >= outcome.final_start))
                    if last is not None and len(last)
                    else math.nan
                )
            rows.append(row)
        return rows


def _calibrate(
    run: PreparedRun,
    grid: list[tuple[int, Threshold, int]],
    recorded: tuple[int, Threshold] | None,
    summarizer: Summarizer,
    engine: _FastEngine,
    seconds: float,
    cache: bool | MutableMapping[str, Summary],
) -> tuple[list[dict[str, Any]], SummarySize | None]:
    """Exact replays of up to three settings (the recorded one, the lowest and the highest
    threshold at the first window), within ``seconds`` (estimated) together: each of the whole
    transcript when that fits, else of its start; the summary sizes they made, fitted."""
    from memorylab.compress._compressor import ContextCompressor

    first = grid[0][0]
    at_first = sorted(
        (t for length, t, _ in grid if length == first), key=lambda t: trigger_tokens(first, t)
    )
    chosen: list[tuple[int, Threshold]] = []
    for pick in (recorded, (first, at_first[0]), (first, at_first[-1])):
        if pick is not None and pick not in chosen and any((w, t) == pick for w, t, _ in grid):
            chosen.append(pick)
    rows: list[dict[str, Any]] = []
    samples: list[tuple[int, int, int]] = []
    for length, threshold in chosen:
        end = _calibration_end(engine.simulate(run, length, threshold), seconds / len(chosen))
        head = run.head(min(len(run.transcript), end)).at(length, threshold)
        result = replay_run(head, summarizer, cache=cache, progress=False)
        budget = ContextCompressor(
            threshold, summarizer_max_tokens=head.settings.summarizer_max_tokens
        ).summary_budget(length)
        static = head.settings.static_tokens
        for event in result.events:
            asked = event.extra.get("summary_budget")
            sample = summary_sample(
                event.tokens_before, event.tokens_after, event.summary_tokens,
                asked if isinstance(asked, int) else None,
                static=static, overhead=engine.overhead, budget=budget,
            )  # fmt: skip
            if event.ok and sample is not None:
                samples.append(sample)
        rows.append(
            {
                "context_length": length,
                "threshold": threshold,
                "messages": len(head.transcript),
                "exact_compactions": result.compactions,
                "exact_peak_context_tokens": result.peak_context_tokens,
            }
        )
    calibration = _measure(run, rows, engine)
    return calibration, SummarySize.fit(samples)


def _calibration_end(outcome: _fast.Outcome, seconds: float) -> int:
    """How many messages a calibration replay runs: all when its estimated cost fits in
    ``seconds``, else up to the last compaction that fits (at least the first few)."""
    ends: list[tuple[float, int]] = []
    summarized = 0
    for point, tokens in zip(outcome.points, outcome.summarized, strict=True):
        summarized += tokens
        cost = (point + 1) * _SECONDS_PER_MESSAGE + summarized * _SECONDS_PER_SUMMARIZED_TOKEN
        ends.append((cost, point + 2))
    total = outcome.messages * _SECONDS_PER_MESSAGE
    total += outcome.summarizer_input_tokens * _SECONDS_PER_SUMMARIZED_TOKEN
    if total <= seconds or not ends:
        return outcome.messages
    fitting = [end for cost, end in ends if cost <= seconds]
    least = ends[min(CALIBRATION_COMPACTIONS, len(ends)) - 1][1]
    return max([least, *fitting])


def _measure(
    run: PreparedRun, rows: list[dict[str, Any]], engine: _FastEngine
) -> list[dict[str, Any]]:
    """The fast mode's figures next to the exact ones, on the same messages and settings."""
    out = []
    for row in rows:
        head = run.head(int(row["messages"]))
        outcome = engine.simulate(head, int(row["context_length"]), row["threshold"])
        out.append(
            {
                **row,
                "fast_compactions": outcome.compactions,
                "fast_peak_context_tokens": outcome.peak_context_tokens,
            }
        )
    return out


def _errors(calibration: list[dict[str, Any]], messages: int) -> dict[str, Any]:
    if not calibration:
        return {}

    def worst(name: str, share: bool) -> Any:
        exact, fast = f"exact_{name}", f"fast_{name}"
        scale = (lambda r: 100 / max(1, r[exact])) if share else (lambda r: 1)
        return max(abs(r[fast] - r[exact]) * scale(r) for r in calibration)

    return {
        "compactions": worst("compactions", False),
        "compactions_pct": worst("compactions", True),
        "exact_compactions": max(r["exact_compactions"] for r in calibration),
        "peak_pct": worst("peak_context_tokens", True),
        "messages": max(r["messages"] for r in calibration),
        "whole": all(r["messages"] >= messages for r in calibration),
        "settings": len(calibration),
    }


def _settings(
    thresholds: list[Threshold], context_lengths: list[int], recorded: tuple[int, Threshold] | None
) -> list[tuple[int, Threshold, int]]:
    out: list[tuple[int, Threshold, int]] = []
    for length in context_lengths:
        for threshold in thresholds:
            if type(threshold) is int and threshold > length:  # an absolute threshold above
                continue  # the window can never fire: left out
            out.append((int(length), threshold, trigger_tokens(length, threshold)))
    swept = {int(length) for length in context_lengths}
    if recorded is not None and recorded[0] in swept and all((w, t) != recorded for w, t, _ in out):
        length, threshold = recorded
        trigger = trigger_tokens(length, threshold)
        later = (i for i, (w, _, t) in enumerate(out) if (w, t) > (length, trigger))
        out.insert(next(later, len(out)), (length, threshold, trigger))  # after smaller triggers
    if not out:
        raise InvalidSetting("no valid (context_length, threshold) combination to sweep")
    return out


def _last_mentions(transcript: Transcript, facts: Sequence[str]) -> Any:
    """Per fact, the index of the last message that contains it (-1: none)."""
    import numpy as np

    last = np.full(len(facts), -1, dtype=np.int64)
    for f, fact in enumerate(facts):
        for index in range(len(transcript) - 1, -1, -1):
            if fact in transcript.contents[index]:
                last[f] = index
                break
    return last


def _summarizer_model(spec: str | Summarizer | None, chosen: Summarizer) -> str | None:
    """The model whose prices a fast sweep's summaries cost."""
    if spec is None:
        return chosen.name
    return spec if isinstance(spec, str) else chosen.model or chosen.name
