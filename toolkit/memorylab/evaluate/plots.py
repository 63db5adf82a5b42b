"""Plots of a comparison's long-form DataFrame (matplotlib, imported when a plot is drawn).

Every function takes ``ax=None`` (a new figure is made) and returns the ``Axes``; none calls
``plt.show()``.

* :func:`plot_quality` — fact recall (or another scorer) per category, one bar per summarizer;
* :func:`plot_cost_quality` — cost against quality, one point per summarizer, with the Pareto
  front (no other summarizer is both cheaper and better);
* :func:`plot_latency` — the spread of latency per summarizer.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from memorylab.errors import InvalidSetting
from memorylab.evaluate.cases import FACT_CATEGORIES

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["pareto_front", "plot_cost_quality", "plot_latency", "plot_quality"]


def _axes(ax: Any, size: tuple[float, float]) -> Any:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _figure, axes = plt.subplots(figsize=size)
    return axes


def _summarizers(df: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(df["summarizer"]))


def plot_quality(
    df: pd.DataFrame,
    scorer: str = "fact_recall",
    metrics: tuple[str, ...] | None = None,
    *,
    ax: Any = None,
) -> Any:
    """Grouped bars: ``scorer``'s metrics (default: the fact categories that have facts, and
    ``overall``) per summarizer, averaged over cases (weighted by ``n``)."""
    from memorylab.evaluate.tables import summary_table

    rows = df[df["scorer"] == scorer]
    if rows.empty:
        raise InvalidSetting(f"no {scorer!r} scores in the results")
    if metrics is None:
        scored = rows[(rows["metric"] != "error") & rows["value"].notna()]
        present = list(dict.fromkeys(scored["metric"]))
        known = [m for m in (*FACT_CATEGORIES, "overall") if m in present]
        metrics = tuple(known or present)
    columns = [f"{scorer}.{m}" for m in metrics]
    table = summary_table(rows, columns)[columns]
    axes = _axes(ax, (max(6.0, 1.2 * len(metrics) * max(1, len(table)) / 2), 4.0))
    width = 0.8 / max(1, len(table))
    for i, (name, row) in enumerate(table.iterrows()):
        positions = [m + (i - (len(table) - 1) / 2) * width for m in range(len(metrics))]
        values = [0.0 if math.isnan(v) else float(v) for v in row.to_numpy()]
        axes.bar(positions, values, width=width, label=str(name))
    axes.set_xticks(range(len(metrics)), list(metrics))
    axes.set_ylabel(f"{scorer} (share kept)" if scorer == "fact_recall" else scorer)
    axes.set_ylim(0, 1.05)
    axes.set_title(f"{scorer} by category")
    axes.legend(fontsize="small")
    return axes


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
    df: pd.DataFrame,
    quality: str = "fact_recall.overall",
    cost: str = "cost.usd",
    *,
    ax: Any = None,
) -> Any:
    """Mean cost per summary against mean quality, one labelled point per summarizer, the
    Pareto front drawn as a step line. A summarizer without a price is drawn at cost 0
    with its label marked ``(no price)``."""
    from memorylab.evaluate.tables import summary_table

    table = summary_table(df)
    for column in (quality, cost):
        if column not in table.columns:
            raise InvalidSetting(f"no {column!r} in the results; score with its scorer first")
    axes = _axes(ax, (6.0, 4.5))
    points = []
    for name, row in table.iterrows():
        usd, value = float(row[cost]), float(row[quality])
        label = str(name) + (" (no price)" if math.isnan(usd) else "")
        usd = 0.0 if math.isnan(usd) else usd
        points.append((str(name), usd, value))
        axes.scatter([usd], [value], s=40)
        axes.annotate(label, (usd, value), textcoords="offset points", xytext=(5, 5),
                      fontsize="small")  # fmt: skip
    front = pareto_front(points)
    if len(front) > 1:
        axes.step([p[1] for p in front], [p[2] for p in front], where="post", linestyle="--",
                  color="grey", label="Pareto front")  # fmt: skip
        axes.legend(fontsize="small")
    axes.set_xlabel(f"{cost} (mean per summary)")
    axes.set_ylabel(f"{quality} (mean)")
    axes.set_title("cost vs quality")
    return axes


def plot_latency(df: pd.DataFrame, metric: str = "latency.seconds", *, ax: Any = None) -> Any:
    """Box plot of seconds per summary, one box per summarizer."""
    scorer, _, name = metric.partition(".")
    rows = df[(df["scorer"] == scorer) & (df["metric"] == name)]
    if rows.empty:
        raise InvalidSetting(f"no {metric!r} in the results; add the {scorer!r} scorer")
    order = _summarizers(rows)
    data = [rows.loc[rows["summarizer"] == s, "value"].dropna().to_list() or [0.0] for s in order]
    axes = _axes(ax, (max(5.0, 1.3 * len(order)), 4.0))
    axes.boxplot(data)
    axes.set_xticks(range(1, len(order) + 1), order, rotation=20, ha="right")
    axes.set_ylabel("seconds per summary")
    axes.set_title("latency")
    return axes
