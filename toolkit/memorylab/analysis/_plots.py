"""Plots of token growth, sweeps, compactions, fact survival and summary lengths:
``plot_*(frame, ..., ax=None) -> Axes``.

Each helper draws on ``ax`` (a new figure's axes when ``None``), labels the axes, puts the legend
outside the axes, on the right (it never covers data), writes tick labels with thousands
separators and one decimal count per axis (never an offset, :mod:`memorylab.analysis._ticks`),
draws times with concise date labels, and returns the ``Axes``; none calls ``plt.show()`` (a
notebook shows the figure, a script saves it with :func:`save_plot`, which writes it private).
matplotlib is imported when a helper is called.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memorylab._validation import check_columns
from memorylab.errors import InvalidSetting

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from memorylab.analysis._sweep import SweepResult

ABOVE_WINDOW_COLOR = "tab:red"
RECORDED_COLOR = "black"


def _axes(ax: Axes | None, size: tuple[float, float] = (8.0, 4.0)) -> Axes:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, new = plt.subplots(figsize=size, layout="constrained")
    return new


def _require(frame: pd.DataFrame, columns: tuple[str, ...], label: str, made_by: str) -> None:
    """The one check of a plot's table (:func:`memorylab._validation.check_columns`): ``label``
    is the plot's parameter, ``made_by`` what makes such a table."""
    check_columns(label, frame, columns, made_by=made_by)


def _groups(frame: pd.DataFrame) -> list[tuple[str | None, pd.DataFrame]]:
    if "agent" in frame.columns and frame["agent"].nunique() > 1:
        return [
            (str(name), part) for name, part in frame.groupby("agent", sort=False, observed=True)
        ]
    label = str(frame["agent"].iloc[0]) if "agent" in frame.columns and len(frame) else None
    return [(label, frame)]


def _thousands(axes: Axes, *, x: bool = True, y: bool = True, counts: bool = False) -> None:
    """Tick labels as ``12,345`` or ``0.85`` (:mod:`memorylab.analysis._ticks`): thousands
    separators, one decimal count per axis, no offset, no scientific notation; ``counts``: ticks
    on whole numbers only."""
    from memorylab.analysis._ticks import count_axis, number_axis

    for wanted, axis in ((x, axes.xaxis), (y, axes.yaxis)):
        if wanted:
            (count_axis if counts else number_axis)(axis)


def _legend_outside(axes: Axes) -> None:
    """The legend to the right of the axes, so it covers none of the data."""
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize="small")


def plot_token_growth(
    growth: pd.DataFrame,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    show_limit: bool = True,
    legend: bool = True,
) -> Axes:
    """The sawtooth: context tokens per message, the threshold (dashed), the window (dotted)
    and the compactions (markers, every one drawn above the line), for a :func:`token_growth`
    frame or a replay's timeline. ``legend=False`` leaves the legend out (small multiples
    share one: :func:`plot_token_growth_grid`).

    One line per agent when the frame holds several. In a replay's timeline (it has a
    ``context_after`` column) the line drops to the context left after each compaction. Restarts
    (a ``restart`` column: a new process, which read the bounded preload) are thin vertical
    lines. Context above the window — more than the model could have read — is drawn in red and
    named in the legend.
    """
    import numpy as np

    _require(growth, ("timeline", "context_tokens", "compaction"), "growth", "token_growth")
    axes = _axes(ax)
    limit = (
        int(growth["context_length"].iloc[0])
        if "context_length" in growth.columns and len(growth)
        else None
    )
    above_count = 0
    restarts_drawn = False
    highest = 0.0
    for label, part in _groups(growth):
        x = part["timeline"].to_numpy().astype(float)
        y = part["context_tokens"].to_numpy().astype(float)
        fired = part["compaction"].to_numpy(dtype=bool)
        if "context_after" in part.columns and fired.any():  # a vertical drop at each compaction
            after = part["context_after"].to_numpy().astype(float)
            at = np.flatnonzero(fired)
            x = np.insert(x, at + 1, x[at])
            y = np.insert(y, at + 1, after[at])
        highest = max(highest, float(y.max()) if len(y) else 0.0)
        name = f"context tokens ({label})" if label else "context tokens"
        (line,) = axes.plot(x, y, linewidth=1.2, label=name, zorder=2)
        if fired.any():
            axes.plot(
                part["timeline"].to_numpy()[fired],
                part["context_tokens"].to_numpy()[fired],
                linestyle="none",
                marker="v",
                markersize=6,
                color=line.get_color(),
                markeredgecolor="white",
                markeredgewidth=0.6,
                label=f"compaction ({label})" if label else "compaction",
                zorder=4,
                clip_on=False,
            )
        if "restart" in part.columns and part["restart"].any():
            for position in part["timeline"].to_numpy()[part["restart"].to_numpy(dtype=bool)]:
                axes.axvline(
                    float(position),
                    color=line.get_color(),
                    linestyle=(0, (1, 3)),
                    linewidth=0.8,
                    alpha=0.7,
                    zorder=1,
                    label=None if restarts_drawn else "restart (bounded preload)",
                )
                restarts_drawn = True
        if limit is not None:
            over = np.where(y > limit, y, np.nan)
            if np.isfinite(over).any():
                above_count += int((part["context_tokens"].to_numpy() > limit).sum())
                axes.plot(x, over, color=ABOVE_WINDOW_COLOR, linewidth=2.2, zorder=3)
    if above_count:
        axes.plot(
            [],
            [],
            color=ABOVE_WINDOW_COLOR,
            linewidth=2.2,
            label=f"above the window ({above_count:,} messages): more than the model could read",
        )
    lines = [("trigger", "threshold", "--", "tab:red")]
    if show_limit:
        lines.append(("context_length", "context limit", ":", "black"))
    for column, name, style, color in lines:
        if column in growth.columns and len(growth):
            tokens = int(growth[column].iloc[0])
            label = f"{name} ({tokens:,} tokens)"
            axes.axhline(tokens, linestyle=style, color=color, linewidth=1, label=label, zorder=1)
            highest = max(highest, tokens)
    axes.set_xlabel("message (timeline)")
    axes.set_ylabel("tokens in context")
    axes.set_title(title or "Context size across compactions")
    axes.set_ylim(0, max(1.0, highest) * 1.08)
    low, high = axes.get_xlim()
    if high - low < 2:  # one message: a point, not an axis of a tenth of a message
        middle = (low + high) / 2
        axes.set_xlim(middle - 1, middle + 1)
    _thousands(axes, counts=True)  # message positions and token counts
    if legend:
        _legend_outside(axes)
    return axes


def plot_token_growth_grid(
    growths: Mapping[str, pd.DataFrame],
    *,
    columns: int = 4,
    panel_size: tuple[float, float] = (3.0, 1.7),
    title: str | None = None,
) -> Figure:
    """Small multiples: one :func:`plot_token_growth` panel per agent (``{agent: growth}``, in
    the mapping's order), ``columns`` to a row, each panel on its own scale, one legend above.

    For many agents: each panel costs a fraction of a figure of its own (a 100-agent report
    drew 100 figures, most of its time), and the agents can be compared at a glance. Panels
    keep their thresholds, windows, compactions and above-the-window markings; the axis
    titles are left to the figure's caption.
    """
    import matplotlib.pyplot as plt

    if not isinstance(growths, Mapping):
        raise InvalidSetting(
            f"growths must be a mapping {{agent: token_growth frame}}, not {type(growths).__name__}"
        )
    if not growths:
        raise InvalidSetting("plot_token_growth_grid needs at least one agent's growth frame")
    columns = max(1, min(int(columns), len(growths)))
    rows = -(-len(growths) // columns)
    width, height = panel_size
    # A fixed layout, not "constrained": solving a layout of a hundred panels costs a second
    # draw of every one of them, and equal panels need no solver.
    figure, panels = plt.subplots(
        rows, columns, figsize=(width * columns, height * rows + 0.6), squeeze=False
    )
    top = 1 - 0.6 / (height * rows + 0.6)
    figure.subplots_adjust(left=0.06, right=0.99, bottom=0.25 / rows, top=top,
                           hspace=0.75, wspace=0.3)  # fmt: skip
    flat = list(panels.flat)
    for panel, (agent, growth) in zip(flat, growths.items(), strict=False):
        plot_token_growth(growth, ax=panel, title=str(agent), legend=False)
        panel.set_xlabel("")
        panel.set_ylabel("")
        panel.title.set_fontsize("small")
        panel.tick_params(labelsize="x-small")
        panel.locator_params(nbins=3)
    for panel in flat[len(growths) :]:
        panel.set_visible(False)
    handles: dict[str, Any] = {}
    for panel in flat[: len(growths)]:
        for handle, label in zip(*panel.get_legend_handles_labels(), strict=True):
            # One entry per kind of line ("threshold (3,000 tokens)" differs per agent).
            handles.setdefault(label.split(" (")[0], handle)
    figure.legend(list(handles.values()), list(handles), loc="upper center", ncols=len(handles),
                  fontsize="small", frameon=False)  # fmt: skip
    if title:
        figure.suptitle(title, y=1.0, va="bottom")
    return figure


def plot_sweep(
    sweep: pd.DataFrame | SweepResult,
    *,
    x: str = "threshold",
    y: str = "total_input_tokens",
    hue: str | None = "context_length",
    ax: Axes | None = None,
    title: str | None = None,
) -> Axes:
    """``y`` against ``x`` for a :func:`sweep` frame, one line per value of ``hue``; the setting
    the agent ran at (the ``recorded`` row) is ringed and named in the legend."""
    import numpy as np

    from memorylab.analysis._sweep import SweepResult

    sweep = sweep.frame if isinstance(sweep, SweepResult) else sweep  # else checked by _require
    _require(sweep, (x, y), "sweep", "sweep")
    axes = _axes(ax)
    if hue is not None and hue in sweep.columns:
        groups = [
            (
                f"{hue} = {value:,}" if isinstance(value, int | np.integer) else f"{hue} = {value}",
                part,
            )
            for value, part in sweep.groupby(hue, sort=True, observed=True)
        ]
    else:
        groups = [(y.replace("_", " "), sweep)]
    for label, part in groups:
        ordered = part.sort_values(x, kind="stable")
        axes.plot(ordered[x].astype(float), ordered[y].astype(float), marker="o", label=label)
    if "recorded" in sweep.columns and sweep["recorded"].any():
        row = sweep[sweep["recorded"]].iloc[0]
        axes.plot(
            [float(row[x])],
            [float(row[y])],
            linestyle="none",
            marker="o",
            markersize=13,
            markerfacecolor="none",
            markeredgecolor=RECORDED_COLOR,
            markeredgewidth=1.6,
            label=f"the agent's setting ({_setting(row)})",
            zorder=5,
            clip_on=False,
        )
    axes.set_xlabel(x.replace("_", " "))
    axes.set_ylabel(y.replace("_", " "))
    axes.set_title(title or f"{y.replace('_', ' ')} by {x.replace('_', ' ')}")
    axes.margins(x=0.06, y=0.1)
    values = sweep[y].astype(float)
    if len(values) and float(values.min()) >= 0:  # counts and costs: from 0, so a 1 % change
        axes.set_ylim(0, float(values.max()) * 1.1 or 1.0)  # does not look like tenfold
    _thousands(axes)
    _legend_outside(axes)
    return axes


def _dodged(times: list[Any], gap: Any) -> Any:
    """``times`` with each one at least ``gap`` after the one before it (none hidden behind
    another); missing times are kept."""
    import pandas as pd

    out: list[Any] = []
    for when in times:
        if pd.notna(when) and out and pd.notna(out[-1]) and when - out[-1] < gap:
            when = out[-1] + gap
        out.append(when)
    return pd.DatetimeIndex(out).to_numpy(dtype="datetime64[us]")  # NaT: numpy refuses it


def _setting(row: Any) -> str:
    from memorylab.compress._policy import threshold_text

    shown = threshold_text(row["threshold"])
    if "context_length" in row.index:
        return f"{shown} of {int(row['context_length']):,}"
    return shown


_SHORTEST_TIME_AXIS = 30
"""Minutes a time axis spans at the least: a run of a few seconds is drawn in a half hour around
it, so its ticks fall on whole minutes (``14:10``), not on fractions of a second (``56.2``)."""


def _date_axis(axes: Axes, times: Any) -> None:
    """A readable time axis: concise date labels (``09:00``, ``Apr 28``) that do not overlap, no
    offset (the dates it spans are in the axis label), at least :data:`_SHORTEST_TIME_AXIS`
    minutes wide."""
    import matplotlib.dates as mdates
    import pandas as pd

    # matplotlib leaves these two untyped.
    locator = mdates.AutoDateLocator(minticks=3, maxticks=8)  # type: ignore[no-untyped-call]
    formatter = mdates.ConciseDateFormatter(locator, show_offset=False)  # type: ignore[no-untyped-call]
    # Days as "Apr 21" (not a bare "21"), seconds as "14:17:56" (not "56.2"): each label whole.
    formatter.formats = ["%Y", "%b", "%b %d", "%H:%M", "%H:%M", "%H:%M:%S"]
    formatter.zero_formats = ["", "%Y", "%b %d", "%b %d", "%H:%M", "%H:%M:%S"]
    axes.xaxis.set_major_locator(locator)
    axes.xaxis.set_major_formatter(formatter)
    label = "time (UTC)"
    if len(times):
        first, last = times.min(), times.max()
        shortest = pd.Timedelta(minutes=_SHORTEST_TIME_AXIS)
        if last - first < shortest:
            middle = first + (last - first) / 2
            start, end = middle - shortest / 2, middle + shortest / 2
            naive = [t.tz_convert(None) if t.tzinfo is not None else t for t in (start, end)]
            limits = mdates.date2num(naive)  # type: ignore[no-untyped-call]
            axes.set_xlim(float(limits[0]), float(limits[1]))
        span = (
            f"{first:%Y-%m-%d}"
            if first.date() == last.date()
            else f"{first:%Y-%m-%d} to {last:%Y-%m-%d}"
        )
        label = f"time (UTC), {span}"
    axes.set_xlabel(label)


def plot_compactions(
    compactions: pd.DataFrame, *, ax: Axes | None = None, title: str | None = None
) -> Axes:
    """Each compaction of a :func:`compactions_df` frame: a bar from the tokens after to the
    tokens before (or the messages archived, when tokens are unknown), per agent over time.
    Compactions closer in time than a bar's width are set side by side, so each one shows."""
    import numpy as np
    import pandas as pd

    _require(compactions, ("time", "agent", "messages_archived"), "compactions", "compactions_df")
    axes = _axes(ax)
    known = "tokens_before" in compactions.columns and compactions["tokens_before"].notna().any()
    groups = _groups(compactions)
    when_all = compactions["time"].dropna()
    span = (when_all.max() - when_all.min()) if len(when_all) > 1 else pd.Timedelta(0)
    gap = max(span, pd.Timedelta(hours=1)) / 120  # about a bar's width at the default size
    for index, (label, part) in enumerate(groups):
        when = part["time"]
        stamps: Any = when.dt.tz_convert(None) if getattr(when.dt, "tz", None) is not None else when
        x = _dodged(list(stamps), gap)
        if known:  # nullable counts: a missing one becomes NaN (no bar), or 0 at the bottom
            top = part["tokens_before"].to_numpy(dtype=float, na_value=np.nan)
            bottom = part["tokens_after"].fillna(0).to_numpy(dtype=float)
        else:
            top = part["messages_archived"].to_numpy(dtype=float, na_value=np.nan)
            bottom = np.zeros(len(part))
        color = f"C{index % 10}"  # vlines does not advance the color cycle: one color per agent
        axes.vlines(x, bottom, top, linewidth=3, alpha=0.6, color=color)
        axes.plot(
            x,
            top,
            linestyle="none",
            marker="o",
            color=color,
            label=label or "compactions",
            clip_on=False,
            zorder=3,
        )
    _date_axis(axes, when_all)
    axes.set_ylabel("tokens before → after" if known else "messages archived")
    axes.set_title(title or "Compactions")
    highest = compactions["tokens_before" if known else "messages_archived"].max()
    if pd.notna(highest) and highest > 0:
        axes.set_ylim(0, float(highest) * 1.08)
    _thousands(axes, x=False, counts=True)
    _legend_outside(axes)
    return axes


def plot_fact_survival(
    survival: pd.DataFrame,
    *,
    ax: Axes | None = None,
    measure: str = "survival",
    title: str | None = None,
) -> Axes:
    """The share of facts held by the summaries after they entered, one line per category and
    one for all of them (:func:`~memorylab.analysis._lineage.survival_by_generation`'s table, or
    :func:`~memorylab.analysis._lineage.fact_survival_df`'s frame, tabled first). ``measure``:
    ``"survival"`` (held by every summary since the fact entered) or ``"kept_rate"`` (held by
    that summary). The legend gives each line's facts at the first summary; a later point
    counts only the facts followed that far."""
    from memorylab.analysis._lineage import survival_by_generation

    if measure not in ("survival", "kept_rate"):
        raise InvalidSetting(f"measure must be 'survival' or 'kept_rate', not {measure!r}")
    table = (
        survival
        if "survival" in getattr(survival, "columns", ())
        else survival_by_generation(survival)
    )
    _require(
        table, ("category", "summaries", "facts", measure), "survival", "survival_by_generation"
    )
    axes = _axes(ax)
    for category, part in table.groupby("category", sort=False, observed=True):
        overall = category == "all"
        axes.plot(
            part["summaries"].to_numpy(dtype=float),
            part[measure].to_numpy(dtype=float) * 100,
            marker="o",
            linewidth=2.5 if overall else 1.5,
            linestyle="--" if overall else "-",
            color="black" if overall else None,
            label=f"{category} ({int(part['facts'].iloc[0]):,} facts)",
            clip_on=False,
        )
    # Whole summaries: half a step either side, so one summary is a point on an axis, not a
    # tick range of hundredths.
    axes.set_xlim(0.5, float(table["summaries"].max()) + 0.5 if len(table) else 1.5)
    axes.set_xlabel("summaries since the fact entered (1 = the first summary after it)")
    held = "held by every summary since" if measure == "survival" else "held by that summary"
    axes.set_ylabel(f"facts {held} (%)")
    axes.set_ylim(0, 100)
    axes.set_title(title or "Fact survival across summaries")
    _thousands(axes, y=False, counts=True)
    from memorylab.analysis._ticks import number_axis

    number_axis(axes.yaxis, suffix="%")
    _legend_outside(axes)
    return axes


def plot_summary_lengths(
    lineage: pd.DataFrame,
    *,
    ax: Axes | None = None,
    y: str = "chars",
    title: str | None = None,
) -> Axes:
    """Each summary's length by generation, one line per agent
    (:func:`~memorylab.analysis._lineage.lineage_df`'s frame); ``y``: ``"chars"``, ``"tokens"``
    (a frame made with ``model=``) or ``"summary_tokens"`` (the records' counts)."""
    _require(lineage, ("generation", y), "lineage", "lineage_df")
    axes = _axes(ax)
    for label, part in _groups(lineage):
        axes.plot(
            part["generation"].to_numpy(dtype=float),
            part[y].to_numpy(dtype=float, na_value=float("nan")),
            marker="o",
            label=label or "summaries",
            clip_on=False,
        )
    axes.set_xlim(0.5, float(lineage["generation"].max()) + 0.5 if len(lineage) else 1.5)
    axes.set_xlabel("generation (compactions so far)")
    axes.set_ylabel({"chars": "summary length (characters)"}.get(y, f"summary length ({y})"))
    axes.set_ylim(bottom=0)
    axes.set_title(title or "Summary length by generation")
    _thousands(axes, counts=True)
    _legend_outside(axes)
    return axes


def save_plot(
    plot: Axes | Figure, path: str | os.PathLike[str], *, dpi: int = 110, overwrite: bool = True
) -> Path:
    """Save the figure of ``plot`` (an ``Axes`` a helper returned, or a ``Figure``) to ``path``,
    private (0o600, written atomically), in the format its suffix names (``.png``, ``.svg``,
    ``.pdf``): a plot of memory shows what agents were told, so it is kept like the memory.
    ``overwrite=False`` refuses an existing file."""
    from matplotlib.figure import Figure

    from memorylab.memory._fsutil import write_private_file

    target = Path(path).expanduser()
    figure = plot if isinstance(plot, Figure) else plot.get_figure()
    if not isinstance(figure, Figure):
        raise InvalidSetting("save_plot needs a Figure or an Axes drawn on one")
    kind = target.suffix.lstrip(".").lower()
    supported = figure.canvas.get_supported_filetypes()
    if kind not in supported:
        raise InvalidSetting(
            f"{target}: cannot save a plot as {target.suffix or 'a file without a suffix'}; "
            f"end the name in one of {', '.join('.' + k for k in sorted(supported))}"
        )
    buffer = io.BytesIO()
    figure.savefig(buffer, format=kind, dpi=dpi, bbox_inches="tight")
    write_private_file(target, buffer.getvalue(), overwrite=overwrite)
    return target


def plot_compaction_costs(
    costs: pd.DataFrame, *, ax: Axes | None = None, title: str | None = None
) -> Axes:
    """Each compaction of a :func:`~memorylab.analysis.compaction_costs_df` frame, what it cost
    once prompt caching is counted: stacked bars of its summary call and its cache rebuild above
    zero, the input it saved below zero, and its net (their sum) as a black diamond; one bar per
    compaction, labelled ``agent #n``. Below zero, a compaction paid for itself."""
    import numpy as np

    parts = ("summary_cost_usd", "rebuild_cost_usd", "saved_cost_usd", "net_cost_usd")
    _require(costs, ("agent", "compaction", *parts), "costs", "compaction_costs_df")
    axes = _axes(ax)
    x = np.arange(len(costs), dtype=float)

    def values(name: str) -> Any:
        return costs[name].to_numpy(dtype=float, na_value=np.nan)

    summary, rebuild = np.nan_to_num(values(parts[0])), np.nan_to_num(values(parts[1]))
    axes.bar(x, summary, width=0.7, color="tab:blue", label="summary call")
    axes.bar(x, rebuild, width=0.7, bottom=summary, color="tab:orange", label="cache rebuild")
    axes.bar(x, -np.nan_to_num(values(parts[2])), width=0.7, color="tab:green",
             label="input saved")  # fmt: skip
    axes.plot(x, values(parts[3]), linestyle="none", marker="D", color="black", label="net",
              zorder=3)  # fmt: skip
    axes.axhline(0, color="black", linewidth=0.8)
    labels = [f"{agent} #{int(n)}" for agent, n in zip(costs["agent"], costs["compaction"],
                                                         strict=True)]  # fmt: skip
    axes.set_xticks(x, labels, rotation=60 if len(labels) > 6 else 0, ha="right", fontsize="small")
    model = costs["model"].dropna().unique() if "model" in costs.columns else []
    axes.set_ylabel("USD" + (f" at {model[0]}'s prices" if len(model) == 1 else ""))
    axes.set_title(title or "What each compaction cost with prompt caching")
    _thousands(axes, x=False)
    _legend_outside(axes)
    return axes


def plot_calibration(
    calls: pd.DataFrame, *, ax: Axes | None = None, title: str | None = None
) -> Axes:
    """Each model call of a :func:`~memorylab.analysis.calibration_df` frame: memorylab's
    estimate of its input (x) against the input the provider billed (y), one colour per model,
    its median drift in the legend, and the line billed = estimate (dashed): a point above it
    is a call the estimate undercounted, so a trigger on the estimate fires late. Calls the
    provider reported no input for are left out."""
    import numpy as np

    _require(calls, ("estimated_tokens", "input_tokens", "model"), "calls", "calibration_df")
    axes = _axes(ax, (6.5, 5.0))
    estimated = calls["estimated_tokens"].to_numpy(dtype=float, na_value=np.nan)
    billed = calls["input_tokens"].to_numpy(dtype=float, na_value=np.nan)
    known = ~(np.isnan(estimated) | np.isnan(billed))
    models = calls["model"].astype(object).where(calls["model"].notna(), "(no model)")
    for model in dict.fromkeys(models[known].tolist()):
        mine = known & (models == model).to_numpy()
        drift = np.median(billed[mine] / np.maximum(estimated[mine], 1.0) - 1.0)
        label = f"{model}: median drift {drift:+.1%} ({int(mine.sum()):,} calls)"
        axes.scatter(estimated[mine], billed[mine], s=14, alpha=0.7, label=label)
    if known.any():
        low = float(min(estimated[known].min(), billed[known].min()))
        high = float(max(estimated[known].max(), billed[known].max()))
        axes.plot([low, high], [low, high], linestyle="--", color="black", linewidth=1.0,
                  label="billed = estimate")  # fmt: skip
    axes.set_xlabel("memorylab's estimate (tokens)")
    axes.set_ylabel("input billed by the provider (tokens)")
    axes.set_title(title or "Estimate vs billed input per model call")
    _thousands(axes)
    if known.any():
        _legend_outside(axes)
    return axes
