"""``ThresholdTuner``: sliders for the compression threshold and context length over a transcript.

A thin view over :func:`memorylab.analysis._replay`, :func:`~memorylab.analysis._sweep`,
:func:`~memorylab.analysis.plot_token_growth` and :func:`~memorylab.analysis.plot_sweep`: every
change of a control replays the transcript under the new setting (the sawtooth plot and the
headline) and sweeps the thresholds at the chosen context length (the table). The slider's row
is always replayed exactly (``sweep(replay_at=...)``), so the headline and the highlighted row
are the same figures; the other rows are exact when that fits in a few seconds, else the fast
sweep's, whose measured error the table states (:func:`~memorylab.analysis.sweep_note`). The
setting the agent ran at, when the source recorded one, is marked in the table and the plots.
Replays cache their summaries, so moving a slider back costs nothing.
"""

from __future__ import annotations

import html
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memorylab.compress._compressor import AgentLike
from memorylab.compress._policy import Threshold, same_threshold, threshold_text
from memorylab.compress._strategies import get_strategy, strategy_names
from memorylab.compress._strategy import Strategy
from memorylab.errors import MemorylabError
from memorylab.memory._records import EntryKind, entry_kind
from memorylab.widgets._common import (
    View,
    figure_png,
    frame_html,
    import_widgets,
    new_axes,
    offered_models,
    status_html,
)

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from memorylab.analysis._replay import ReplayResult
    from memorylab.analysis._runs import TranscriptSource

CONTEXT_LENGTHS = (2048, 4096, 8192, 16384, 32768, 65536, 131072)
"""The context lengths the slider offers (the given one is added when missing)."""

MODES = (("exact when it fits", "auto"), ("exact replays", "exact"), ("fast (modelled)", "fast"))
"""The sweep modes offered (label, picker value): ``sweep(fast=None)``, ``fast=False`` and
``fast=True``. The values are names, not ``sweep``'s ``None``/``False``/``True``: a dropdown
whose value is ``None`` shows nothing selected."""
_FAST = {"auto": None, "exact": False, "fast": True}
RUN_STRATEGY = "run"
"""The strategy picker's value for the run's own strategy (recorded, else the summary)."""
TURN_CHOICES = (("the run's own", "run"), ("kept", "keep"), ("compacted (the seed)", "seed"))
"""The turn picker's choices (label, value): ``replay(keep_turn=None)`` (recorded, else the
seed's), ``True`` and ``False``; named values, as :data:`MODES`."""
_KEEP_TURN = {"run": None, "keep": True, "seed": False}

SWEEP_COLUMNS = (
    "setting",
    "threshold",
    "mode",
    "trigger",
    "compactions",
    "peak_context_tokens",
    "total_input_tokens",
    "summary_tokens",
    "estimated_cost_usd",
    "fact_survival",
)
"""The sweep columns the table shows (those the sweep has)."""

SWEEP_HEADERS = {
    "setting": "",
    "peak_context_tokens": "peak",
    "total_input_tokens": "input tokens",
    "summarizer_calls": "summarizer calls",
    "summary_tokens": "summary tokens",
    "estimated_cost_usd": "est. cost",
    "fact_survival": "facts kept",
}
"""Short headers for the table (the DataFrame in :attr:`ThresholdTuner.sweep_table` keeps the
sweep's own column names)."""

EXTRACTIVE = "memorylab/extractive"

_NOTE_CSS = (
    "font-size:12px;line-height:1.45;margin:2px 0 4px;white-space:normal;overflow-wrap:anywhere;"
    "width:0;min-width:100%"
)
"""The lines above the sweep table: they wrap at the table's width (``width:0`` keeps a long
line from widening the box; ``min-width`` fills it) and are never cut."""

ABOVE_WINDOW_CSS = "#cf222e"
"""The red of context above the window in the headline and the table (the plots' red is
:data:`memorylab.analysis._plots.ABOVE_WINDOW_COLOR`)."""


@dataclass
class _Source:
    """What the tuner replays, with the defaults its source suggests."""

    transcript: TranscriptSource
    facts: list[str] | None = None
    context_length: int | None = None
    threshold: Threshold | None = None
    model: str | None = None
    name: str = "transcript"
    recorded: tuple[int, Threshold] | None = None


def _history(entries: Iterable[Any]) -> list[dict[str, Any]]:
    return [
        {"role": e["role"], "content": e["content"], "timestamp": e.get("timestamp")}
        for e in entries
        if entry_kind(e) is EntryKind.MESSAGE
    ]


def _calibration_lines(source: Any) -> list[str]:
    """What the run's recorded usage says of its trigger (the estimate against the billed
    input, and when its compactions fired against the billed count: issue 29's calibration),
    for a source that recorded usage: an Agent, a memory path; none otherwise. The replays do
    not use it: a line to read beside them."""
    from memorylab.analysis import calibration_audit

    if not isinstance(source, AgentLike | str | os.PathLike):
        return []
    try:
        audit = calibration_audit(source)
    except MemorylabError:
        return []
    return audit.notes() if audit.summary["reported_calls"].sum() else []


def tuner_source(source: Any) -> _Source:
    """Normalize what :class:`ThresholdTuner` accepts (see its docstring)."""
    from memorylab.analysis._loaders import reads_as_transcript
    from memorylab.transcripts import Transcript, load_transcript

    if isinstance(source, str | os.PathLike) and reads_as_transcript(source):
        source = load_transcript(source)
    if isinstance(source, Transcript):
        return _Source(
            source.as_messages(), facts=[f.text for f in source.facts] or None, name=source.name
        )
    if isinstance(source, AgentLike):
        path = source.short_memory.memory_md_path
        transcript: TranscriptSource = (
            path.parent
            if path is not None and path.exists()
            else _history(source.short_memory.conversation_history)
        )
        threshold = source.context_compressor.threshold
        return _Source(
            transcript,
            context_length=source.context_length,
            threshold=threshold,
            model=source.model_name,
            name=source.agent_name,
            recorded=(source.context_length, threshold) if threshold is not None else None,
        )
    if hasattr(source, "conversation_history") and hasattr(source, "token_count"):
        return _Source(_history(source.conversation_history), name=str(source.name))
    if isinstance(source, str | os.PathLike) or hasattr(source, "columns"):
        return _recorded_source(source)
    return _Source(source)


def _recorded_source(source: Any) -> _Source:
    """A memory path or a memory_df frame: its record gives the defaults and the marked row."""
    from memorylab.analysis._runs import run_settings

    settings = run_settings(source)
    at = settings.context_length, settings.threshold
    recorded = at if settings.source_of("threshold") == "recorded" else None
    path = isinstance(source, str | os.PathLike)
    name = os.path.basename(os.fspath(source).rstrip("/")) or "memory" if path else None
    return _Source(
        source,
        context_length=settings.context_length if recorded else None,
        threshold=settings.threshold if recorded else None,
        model=settings.token_model,
        name=name or settings.agent or "transcript",
        recorded=recorded,
    )


class ThresholdTuner(View):
    """Tune the compression threshold and context length on a transcript, live.

    ``source``: a bundled transcript file (``.jsonl``) or a loaded
    :class:`memorylab.transcripts.Transcript` (its planted facts give a fact-survival column),
    an :class:`~memorylab.Agent` (its memory folder; its context length, threshold and model are
    the defaults), a :class:`~memorylab.Conversation`, a :func:`~memorylab.analysis.memory_df`
    frame of one agent, a list of ``{"role", "content"}`` messages, or an agent folder / memory
    file path.

    A workspace's agent folder (or its frame) and an Agent give the setting the agent ran at: the
    sliders start there, and that row of the table is marked "the agent's setting".

    ``summarizers``: the summarizers offered (default: the offline extractive one, plus a cheap
    real model when a provider key is set). ``fast``: the sweep's mode (:data:`MODES`: ``None``
    replays every setting exactly when that fits in a few seconds, ``True`` models the summary
    sizes, ``False`` always replays); the replay plot always runs the chosen summarizer.
    ``strategies``: the strategy picker's choices (default: every registered strategy,
    :func:`~memorylab.compress.strategy_names`, with its default settings); ``keep_turn``: the
    turn picker's start (:data:`TURN_CHOICES`: ``None`` the run's own, ``True`` each compaction
    keeps the turn in progress, ``False`` compacts it as the seed does): the replay (its plot
    and figures) runs it; the sweep runs the run's own (``sweep`` models the seed's).

    Context above the window — a peak larger than the context length, more than the model could
    have read — is flagged in red: in the replay plot, in the headline (with a line saying how
    far above), and in the table's peak column, with a line naming the thresholds whose sweep
    row peaks above it (their points on the sweep plot are red too).

    State for code and tests: :attr:`result` (the :class:`~memorylab.analysis.ReplayResult`),
    :attr:`sweep_table` (the sweep DataFrame), :attr:`above_window` (the swept thresholds whose
    peak is above the window), :attr:`figure` / :attr:`axes` (the replay plot),
    :attr:`sweep_figure`, :attr:`updates` (how many times the view was recomputed).
    """

    def __init__(
        self,
        source: Any,
        *,
        threshold: Threshold | None = None,
        context_length: int | None = None,
        context_lengths: Sequence[int] = CONTEXT_LENGTHS,
        thresholds: Sequence[Threshold] | None = None,
        summarizers: Sequence[str] | None = None,
        fast: bool | None = None,
        model: str | None = None,
        facts: Sequence[str] | None = None,
        system_prompt: str | None = None,
        strategies: Sequence[Strategy | str] | None = None,
        keep_turn: bool | None = None,
    ) -> None:
        from memorylab.analysis._sweep import DEFAULT_THRESHOLDS

        widgets = import_widgets()
        self.source = tuner_source(source)
        self.calibration = _calibration_lines(source)
        self.model = model if model is not None else self.source.model
        self.facts = list(facts) if facts is not None else self.source.facts
        self.system_prompt = system_prompt
        self.thresholds = tuple(thresholds if thresholds is not None else DEFAULT_THRESHOLDS)
        start_threshold = float(
            threshold
            if threshold is not None
            else (self.source.threshold if self.source.threshold is not None else 0.7)
        )
        start_length = int(context_length or self.source.context_length or 8192)
        lengths = sorted({*map(int, context_lengths), start_length})
        offered = offered_models([EXTRACTIVE]) if summarizers is None else list(summarizers)

        self.threshold_slider = widgets.FloatSlider(
            value=start_threshold,
            min=0.05,
            max=1.0,
            step=0.05,
            description="threshold",
            readout_format=".2f",
            continuous_update=False,
            style={"description_width": "110px"},
            layout=widgets.Layout(width="520px"),
        )
        self.context_slider = widgets.SelectionSlider(
            options=[(f"{n:,}", n) for n in lengths],
            value=start_length,
            description="context length",
            continuous_update=False,
            style={"description_width": "110px"},
            layout=widgets.Layout(width="520px"),
        )
        self.summarizer_picker = widgets.Dropdown(
            options=offered,
            value=offered[0],
            description="summarizer",
            style={"description_width": "110px"},
        )
        chosen = [get_strategy(s) for s in strategies] if strategies is not None else [
            get_strategy(name) for name in strategy_names()
        ]  # fmt: skip
        self._strategies = {s.describe(): s for s in chosen}
        self.strategy_picker = widgets.Dropdown(
            options=[("the run's own", RUN_STRATEGY), *((n, n) for n in self._strategies)],
            value=RUN_STRATEGY,
            description="strategy",
            style={"description_width": "110px"},
        )
        self.turn_picker = widgets.Dropdown(
            options=list(TURN_CHOICES),
            value={None: "run", True: "keep", False: "seed"}[keep_turn],
            description="turn in progress",
            style={"description_width": "110px"},
        )
        self.mode_picker = widgets.Dropdown(
            options=list(MODES),
            value={None: "auto", False: "exact", True: "fast"}[fast],
            description="sweep",
            style={"description_width": "50px"},
        )
        # A full-width child has no side margins: ipywidgets' 2px would make it 4px wider
        # than the box, which would then scroll sideways.
        self.image = widgets.Image(
            format="png", layout=widgets.Layout(width="100%", margin="2px 0")
        )
        # The sweep's table and its plot share a row that wraps: side by side when both fit,
        # else the plot goes below the table. The table never shrinks below its columns (it
        # scrolls sideways in a box narrower than it), and its note wraps to the table's width.
        self.sweep_image = widgets.Image(
            format="png",
            layout=widgets.Layout(flex="1 1 360px", max_width="560px", min_width="0"),
        )
        self.summary = widgets.HTML()
        self.table = widgets.HTML(
            layout=widgets.Layout(flex="0 1 auto", min_width="0", max_width="100%")
        )
        self.status = widgets.HTML()
        controls = widgets.VBox(
            [
                self.threshold_slider,
                self.context_slider,
                widgets.HBox(
                    [self.summarizer_picker, self.mode_picker],
                    layout=widgets.Layout(flex_flow="row wrap"),
                ),
                widgets.HBox(
                    [self.strategy_picker, self.turn_picker],
                    layout=widgets.Layout(flex_flow="row wrap"),
                ),
            ]
        )
        super().__init__(
            [
                widgets.HTML(
                    f"<b>Threshold tuner</b> · {html.escape(self.source.name)}"
                    + (" · fact survival from the planted facts" if self.facts else "")
                ),
                controls,
                self.status,
                self.summary,
                self.image,
                widgets.Box(
                    [self.table, self.sweep_image],
                    layout=widgets.Layout(
                        display="flex",
                        flex_flow="row wrap",
                        align_items="flex-start",
                        grid_gap="8px 16px",
                        width="100%",
                        margin="2px 0",
                    ),
                ),
            ],
            layout=widgets.Layout(max_width="1100px"),
        )
        self.result: ReplayResult | None = None
        self.sweep_table: pd.DataFrame | None = None
        self.figure: Figure | None = None
        self.axes: Axes | None = None
        self.sweep_figure: Figure | None = None
        self.above_window: list[float] = []
        self.updates = 0
        for control in (
            self.threshold_slider,
            self.context_slider,
            self.summarizer_picker,
            self.mode_picker,
            self.strategy_picker,
            self.turn_picker,
        ):
            control.observe(lambda _: self.update(), names="value")
        self.update()

    # -- state ----------------------------------------------------------------------------------

    @property
    def threshold(self) -> float:
        return round(float(self.threshold_slider.value), 4)

    @property
    def context_length(self) -> int:
        return int(self.context_slider.value)

    @property
    def summarizer(self) -> str:
        return str(self.summarizer_picker.value)

    @property
    def strategy(self) -> Strategy | None:
        """The strategy picked (``None``: the run's own, recorded or the summary)."""
        value = str(self.strategy_picker.value)
        return None if value == RUN_STRATEGY else self._strategies[value]

    @property
    def keep_turn(self) -> bool | None:
        """Whether each compaction keeps the turn in progress (``None``: the run's own, recorded,
        else not: the seed's compaction)."""
        return _KEEP_TURN[str(self.turn_picker.value)]

    @property
    def fast(self) -> bool | None:
        """The sweep's ``fast=``: ``None`` (exact when it fits), ``False`` or ``True``."""
        return _FAST[str(self.mode_picker.value)]

    def __repr__(self) -> str:
        outcome = "" if self.result is None else f", {self.result.compactions} compaction(s)"
        return (
            f"ThresholdTuner({self.source.name!r}, threshold={self.threshold:.2f}, "
            f"context_length={self.context_length:,}{outcome})"
        )

    # -- updating -------------------------------------------------------------------------------

    def update(self) -> None:
        """Replay and sweep under the controls' values and redraw (called on every change)."""
        from memorylab.analysis._plots import ABOVE_WINDOW_COLOR, plot_sweep, plot_token_growth
        from memorylab.analysis._replay import replay
        from memorylab.analysis._sweep import estimate_sweep, sweep, sweep_note

        threshold, length = self.threshold, self.context_length
        spec = None if self.summarizer == EXTRACTIVE else self.summarizer
        self.status.value = status_html("computing …")
        strategy = self.strategy
        try:
            recorded = self.source.recorded
            wanted = {*(float(t) for t in self.thresholds), threshold}
            if recorded is not None and recorded[0] == length:
                wanted.add(float(recorded[1]))
            if self.fast is False:  # exact replays asked for: say how long before the wait
                ahead = estimate_sweep(
                    self.source.transcript,
                    sorted(wanted),
                    [length],
                    summarizer=spec,
                    model=self.model,
                    system_prompt=self.system_prompt,
                    strategies=None if strategy is None else [strategy],
                )
                self.status.value = status_html(f"computing {ahead.describe()} …")
            result = replay(
                self.source.transcript,
                threshold=threshold,
                context_length=length,
                summarizer=spec,
                model=self.model,
                system_prompt=self.system_prompt,
                strategy=strategy,
                keep_turn=self.keep_turn,
            )
            swept = sweep(
                self.source.transcript,
                sorted(wanted),
                [length],
                summarizer=spec,
                model=self.model,
                fast=self.fast,
                facts=self.facts,
                system_prompt=self.system_prompt,
                replay_at=[threshold],
                strategies=None if strategy is None else [strategy],
            )
        except MemorylabError as error:
            self._report(error)
            return
        table = swept.frame.assign(
            recorded=[
                recorded is not None and recorded[0] == length and same_threshold(t, recorded[1])
                for t in swept.frame["threshold"]
            ]
        )
        self.result, self.sweep_table = result, table
        self.updates += 1

        ran_at = ""
        if recorded is not None:
            ran_at = f"\n(the agent ran at {threshold_text(recorded[1])} of {recorded[0]:,})"
        figure, axes = new_axes((11.0, 3.6))  # room for the legend beside the plot
        plot_token_growth(
            result.frame,
            ax=axes,
            title=f"Replay at threshold {threshold_text(threshold)} of {length:,} tokens "
            f"({result.summarizer}"
            + ("" if result.strategy == "summary()" else f", {result.strategy}")
            + f"){ran_at}",
        )
        self.figure, self.axes = figure, axes
        self.image.value = figure_png(figure)

        # The sweep's own peaks, against the window it swept: the rows to flag.
        over = [i for i, peak in enumerate(table["peak_context_tokens"]) if int(peak) > length]
        self.above_window = [float(table["threshold"].iloc[i]) for i in over]
        sweep_figure, sweep_axes = new_axes((5.6, 3.2))
        plot_sweep(table, ax=sweep_axes, hue=None, title="Input tokens the model read")
        sweep_axes.axvline(threshold, color="tab:red", linestyle="--", linewidth=1)
        if over:
            sweep_axes.plot(
                table["threshold"].iloc[over].astype(float),
                table["total_input_tokens"].iloc[over].astype(float),
                linestyle="none",
                marker="X",
                markersize=9,
                color=ABOVE_WINDOW_COLOR,
                label="peak above the window",
                zorder=5,
            )
        # The legend inside the axes: beside them (plot_sweep's place) it would take half of a
        # plot this narrow.
        if sweep_axes.get_legend_handles_labels()[0]:
            sweep_axes.legend(fontsize="small")
        self.sweep_figure = sweep_figure
        self.sweep_image.value = figure_png(sweep_figure)

        current = [i for i, t in enumerate(table["threshold"]) if same_threshold(t, threshold)]
        labels = ["the agent's setting" if r else "" for r in table["recorded"]]
        shown = table.assign(setting=labels)
        present = [c for c in SWEEP_COLUMNS if c in shown.columns and shown[c].notna().any()]
        shown = shown[present].rename(columns=SWEEP_HEADERS)
        cache_note = ""
        if "uncached_cost_usd" in table.columns and not table["uncached_cost_usd"].equals(
            table["estimated_cost_usd"]
        ):  # the model has cache prices: say what the cache saves (a column would not fit)
            uncached = table["uncached_cost_usd"].dropna()
            priced = html.escape(f"{self.model}'s" if self.model else "the run's model's")
            cache_note = (
                f'<div class="mlab-note" style="{_NOTE_CSS};color:#57606a">The est. cost counts '
                f"prompt caching at {priced} cache prices; without the cache: "
                f"${uncached.min():.4f} to ${uncached.max():.4f}.</div>"
            )
        flag_note = ""
        if over:
            highest = int(table["peak_context_tokens"].iloc[over].max())
            thresholds = ", ".join(threshold_text(t) for t in self.above_window)
            flag_note = (
                f'<div class="mlab-note" style="{_NOTE_CSS};color:{ABOVE_WINDOW_CSS};'
                f'font-weight:600">Peak above the {length:,}-token window at threshold(s) '
                f"{thresholds} (up to {highest:,} tokens): more than the model could read.</div>"
            )
        self.table.value = (
            f'<div class="mlab-note" style="{_NOTE_CSS};color:#57606a">'
            f"Sweep at {length:,} tokens. "
            f"{html.escape(sweep_note(swept))} The highlighted row is the slider's threshold, "
            "replayed exactly (the figures above the plot).</div>"
            + flag_note
            + cache_note
            + frame_html(
                shown,
                highlight=current,
                label_columns=("",),
                flagged={SWEEP_HEADERS["peak_context_tokens"]: over},
                formats={
                    "threshold": threshold_text,
                    "est. cost": lambda v: "" if v != v else f"${float(v):.4f}",
                    "facts kept": lambda v: "" if v != v else f"{float(v):.0%}",
                },
            )
        )
        survival = (
            f" · {result.fact_survival(self.facts):.0%} of the planted facts in the final context"
            if self.facts
            else ""
        )
        above = int((result.frame["context_tokens"] > length).sum())
        peak = f"{result.peak_context_tokens:,}"
        warning = ""
        if result.peak_context_tokens > length:
            peak = f'<span style="color:{ABOVE_WINDOW_CSS};font-weight:600">{peak}</span>'
            warning = (
                f'<div style="color:{ABOVE_WINDOW_CSS}">The context peaks at '
                f"{result.peak_context_tokens:,} tokens, {result.peak_context_tokens - length:,} "
                f"above the {length:,}-token window: {above:,} message(s) with more context than "
                "the model could read (red in the plot).</div>"
            )
        self.summary.value = (
            '<div style="font-family:system-ui,sans-serif;font-size:13px;line-height:1.45">'
            f"<b>{result.compactions}</b> compaction(s) over {len(result.frame):,} messages · "
            f"trigger {result.trigger:,} tokens · peak {peak} · "
            f"{result.total_input_tokens:,} input tokens read{survival}{warning}"
            + "".join(
                f'<div style="color:#57606a">{html.escape(line)}</div>' for line in self.calibration
            )
            + "</div>"
        )
        self._report(None, f"updated ({self.updates})")
