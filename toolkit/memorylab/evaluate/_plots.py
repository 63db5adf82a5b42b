"""Plots of a comparison's result (matplotlib, imported when a plot is drawn).

Every function takes ``ax=None`` (a new figure is made) and returns the ``Axes``; none calls
``plt.show()``. Tick labels are plain numbers (:mod:`memorylab.analysis._ticks`: no offset, no
power of ten, one decimal count per axis; costs in dollars).

* :func:`plot_quality` — fact recall (or another scorer) per category, one bar per summarizer,
  with its confidence interval; the bounds (``memorylab/full``, ``memorylab/none``) are drawn
  as lines, not bars, and a bar not significantly below the best is marked ``≈``;
* :func:`plot_cost_quality` — cost against quality, one point per summarizer with its
  interval, the bounds as horizontal lines, and the Pareto front (no other summarizer is both
  cheaper and better);
* :func:`plot_latency` — the spread of latency per summarizer.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

from memorylab.errors import InvalidSetting
from memorylab.evaluate._engine import ComparisonResult
from memorylab.transcripts import FACT_CATEGORIES

if TYPE_CHECKING:
    import pandas as pd

def _axes(ax: Any, size: tuple[float, float]) -> Any:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _figure, axes = plt.subplots(figsize=size)
    return axes


def plot_quality(
    results: ComparisonResult | pd.DataFrame,
    scorer: str = "fact_recall",
    metrics: tuple[str, ...] | None = None,
    *,
    ax: Any = None,
) -> Any:
    """Grouped bars: ``scorer``'s metrics (default: the fact categories that have facts, and
    ``overall``) per summarizer, averaged over cases (weighted by ``n``)."""
    from memorylab.evaluate._tables import summary_table

    result = ComparisonResult.of(results)
    rows = result.frame[result.frame["scorer"] == scorer]
    if rows.empty:
        raise InvalidSetting(f"no {scorer!r} scores in the results")
    if metrics is None:
        scored = rows[(rows["metric"] != "error") & rows["value"].notna()]
        present = list(dict.fromkeys(scored["metric"]))
        known = [m for m in (*FACT_CATEGORIES, "overall") if m in present]
        metrics = tuple(known or present)
    columns = [f"{scorer}.{m}" for m in metrics]
    marks = summary_table(dataclasses.replace(result, frame=rows))
    full = marks.frame
    table = full[columns]
    bounds = marks.bounds
    bars = [label for label in table.index if label not in bounds.values()]
    axes = _axes(ax, (max(6.0, 1.2 * len(metrics) * max(1, len(bars)) / 2), 4.0))
    width = 0.8 / max(1, len(bars))
    for i, name in enumerate(bars):
        row = full.loc[name]
        positions = [m + (i - (len(bars) - 1) / 2) * width for m in range(len(metrics))]
        values = [_value(row[c]) for c in columns]
        errors = _errors(full, name, columns)
        axes.bar(positions, values, width=width, label=str(name), yerr=errors, capsize=2,
                 error_kw={"elinewidth": 0.8})  # fmt: skip
        for x, column, value in zip(positions, columns, values, strict=True):
            if name in marks.tied.get(column, [])[1:]:
                axes.annotate("≈", (x, value), ha="center", va="bottom", fontsize="small")
    for kind, style in (("ceiling", "--"), ("floor", ":")):
        label = bounds.get(kind)
        if label is None:
            continue
        for m, column in enumerate(columns):
            axes.hlines(_value(full.loc[label, column]), m - 0.45, m + 0.45, colors="black",
                        linestyles=style, linewidth=1,
                        label=f"{label} ({kind})" if m == 0 else None)  # fmt: skip
    names = [f"{m} †" if c in marks.not_measuring else m
             for m, c in zip(metrics, columns, strict=True)]  # fmt: skip
    axes.set_xticks(range(len(metrics)), names)
    axes.set_ylabel(f"{scorer} (share kept)" if scorer == "fact_recall" else scorer)
    axes.set_ylim(0, 1.05)
    _plain_numbers(axes.yaxis)
    axes.set_title(f"{scorer} by category (95% intervals; ≈ tied with the best)")
    axes.legend(fontsize="small")
    return axes


def _plain_numbers(axis: Any, prefix: str = "") -> None:
    from memorylab.analysis._ticks import number_axis

    number_axis(axis, prefix=prefix)


def _value(value: Any) -> float:
    number = float(value)
    return 0.0 if math.isnan(number) else number


def _errors(table: pd.DataFrame, name: Any, columns: list[str]) -> list[list[float]] | None:
    """matplotlib's ``yerr`` (below, above) from the ``.lo``/``.hi`` columns, or None."""
    if not all(f"{c}.lo" in table.columns for c in columns):
        return None
    row = table.loc[name]
    below, above = [], []
    for column in columns:
        value = float(row[column])
        low, high = float(row[f"{column}.lo"]), float(row[f"{column}.hi"])
        ok = not (math.isnan(value) or math.isnan(low) or math.isnan(high))
        below.append(max(0.0, value - low) if ok else 0.0)
        above.append(max(0.0, high - value) if ok else 0.0)
    return [below, above]


def pareto_front(points: list[tuple[str, float, float]]) -> list[tuple[str, float, float]]:
    """The ``(name, cost, quality)`` points no other point beats (cheaper or equal and better,
    or cheaper and equal), by increasing cost; NaN costs or qualities are left out.

    >>> pareto_front([("a", 0.0, 0.5), ("b", 1.0, 0.9), ("c", 2.0, 0.8), ("d", 0.5, 0.4)])
    [('a', 0.0, 0.5), ('b', 1.0, 0.9)]
    """
    valid = [p for p in points if not (math.isnan(p[1]) or math.isnan(p[2]))]
    front: list[tuple[str, float, float]] = []
    best = -math.inf
    for point in sorted(valid, key=lambda p: (p[1], -p[2])):
        if point[2] > best:
            front.append(point)
            best = point[2]
    return front


def plot_cost_quality(
    results: ComparisonResult | pd.DataFrame,
    quality: str = "fact_recall.overall",
    cost: str = "cost.usd",
    *,
    ax: Any = None,
) -> Any:
    """Mean cost per summary against mean quality, one labelled point per summarizer, the
    Pareto front drawn as a step line. A summarizer without a price is drawn at cost 0
    with its label marked ``(no price)``."""
    from memorylab.evaluate._tables import summary_table

    marks = summary_table(results)
    table = marks.frame
    for column in (quality, cost):
        if column not in table.columns:
            raise InvalidSetting(f"no {column!r} in the results; score with its scorer first")
    axes = _axes(ax, (6.0, 4.5))
    bounds = marks.bounds
    points = []
    labelled: dict[tuple[float, float], int] = {}
    for name, row in table.iterrows():
        usd, value = float(row[cost]), float(row[quality])
        if name in bounds.values():
            kind = next(k for k, label in bounds.items() if label == name)
            if not math.isnan(value):
                axes.axhline(value, color="black", linewidth=1,
                             linestyle="--" if kind == "ceiling" else ":",
                             label=f"{name} ({kind})")  # fmt: skip
            continue
        label = str(name) + (" (no price)" if math.isnan(usd) else "")
        usd = 0.0 if math.isnan(usd) else usd
        points.append((str(name), usd, value))
        errors = _errors(table, name, [quality])
        axes.errorbar([usd], [value], yerr=errors, fmt="o", markersize=6, capsize=3)
        # Summarizers at the same point (free and equally good) get their labels stacked, one
        # line each, instead of printed over one another.
        spot = (round(usd, 12), round(value, 12) if not math.isnan(value) else value)
        stacked = labelled.get(spot, 0)
        labelled[spot] = stacked + 1
        axes.annotate(label, (usd, value), textcoords="offset points",
                      xytext=(5, 5 + 11 * stacked), fontsize="small")  # fmt: skip
    front = pareto_front(points)
    if len(front) > 1:
        axes.step([p[1] for p in front], [p[2] for p in front], where="post", linestyle="--",
                  color="grey", label="Pareto front")  # fmt: skip
    if len(front) > 1 or bounds:
        axes.legend(fontsize="small")
    _cost_axis(axes, [usd for _, usd, _ in points])
    axes.set_xlabel(f"{cost} (mean per summary, USD)")
    axes.set_ylabel(f"{quality} (mean, 95% interval)")
    axes.set_title("cost vs quality")
    _plain_numbers(axes.yaxis)
    return axes


ALL_FREE_NOTE = "all costs are zero (local/offline)"
"""What :func:`plot_cost_quality` writes on a plot whose summarizers all cost nothing."""


def _cost_axis(axes: Any, costs: list[float]) -> None:
    """Costs start at $0 (none is negative); when every cost is zero the axis shows $0 alone and
    says so, instead of a span around zero (−0.04 … 0.04) that no summarizer could cost."""
    highest = max(costs, default=0.0)
    if highest > 0:
        axes.set_xlim(left=0.0, right=highest * 1.15)
        _plain_numbers(axes.xaxis, prefix="$")
        return
    axes.set_xlim(-0.05, 1.0)  # the points sit at the left edge, their labels to their right
    axes.set_xticks([0.0], ["$0"])
    axes.text(0.5, 0.04, ALL_FREE_NOTE, transform=axes.transAxes, ha="center", va="bottom",
              fontsize="small", color="dimgray")  # fmt: skip


def plot_latency(results: ComparisonResult | pd.DataFrame, metric: str = "latency.seconds", *,
                 ax: Any = None) -> Any:  # fmt: skip
    """Box plot of seconds per summary, one box per summarizer."""
    scorer, _, name = metric.partition(".")
    df = ComparisonResult.of(results).frame
    rows = df[(df["scorer"] == scorer) & (df["metric"] == name)]
    if rows.empty:
        raise InvalidSetting(f"no {metric!r} in the results; add the {scorer!r} scorer")
    order = list(dict.fromkeys(rows["summarizer"]))
    data = [rows.loc[rows["summarizer"] == s, "value"].dropna().to_list() or [0.0] for s in order]
    axes = _axes(ax, (max(5.0, 1.3 * len(order)), 4.0))
    axes.boxplot(data)
    axes.set_xticks(range(1, len(order) + 1), order, rotation=20, ha="right")
    axes.set_ylabel("seconds per summary")
    axes.set_ylim(bottom=0)  # no summary takes less than no time
    axes.set_title("latency")
    _plain_numbers(axes.yaxis)
    return axes
