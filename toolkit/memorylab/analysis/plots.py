"""Plots of token growth, sweeps and compactions: ``plot_*(frame, ..., ax=None) -> Axes``.

Each helper draws on ``ax`` (a new figure's axes when ``None``), labels the axes, adds a legend
and returns the ``Axes``; none calls ``plt.show()`` (a notebook shows the figure, a script saves
it with ``ax.figure.savefig(...)``). matplotlib is imported when a helper is called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memorylab.errors import InvalidSetting

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

__all__ = ["plot_compactions", "plot_sweep", "plot_token_growth"]


def _axes(ax: Axes | None, size: tuple[float, float] = (8.0, 4.0)) -> Axes:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, new = plt.subplots(figsize=size, layout="constrained")
    return new


def _require(frame: pd.DataFrame, columns: tuple[str, ...], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InvalidSetting(f"{what} needs the column(s) {missing}; got {list(frame.columns)}")


def _groups(frame: pd.DataFrame) -> list[tuple[str | None, pd.DataFrame]]:
    if "agent" in frame.columns and frame["agent"].nunique() > 1:
        return [
            (str(name), part) for name, part in frame.groupby("agent", sort=False, observed=True)
        ]
    label = str(frame["agent"].iloc[0]) if "agent" in frame.columns and len(frame) else None
    return [(label, frame)]


def plot_token_growth(
    growth: pd.DataFrame,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    show_limit: bool = True,
) -> Axes:
    """The sawtooth: context tokens per message, the threshold (dashed), the window (dotted)
    and the compactions (markers), for a :func:`token_growth` frame or a replay's timeline.

    One line per agent when the frame holds several. In a replay's timeline (it has a
    ``context_after`` column) the line drops to the context left after each compaction.
    """
    import numpy as np

    _require(growth, ("timeline", "context_tokens", "compaction"), "plot_token_growth")
    axes = _axes(ax)
    for label, part in _groups(growth):
        x = part["timeline"].to_numpy()
        y = part["context_tokens"].to_numpy()
        fired = part["compaction"].to_numpy(dtype=bool)
        if "context_after" in part.columns and fired.any():  # a vertical drop at each compaction
            after = part["context_after"].to_numpy()
            at = np.flatnonzero(fired)
            x = np.insert(x.astype(float), at + 1, x[at])
            y = np.insert(y.astype(float), at + 1, after[at])
        name = f"context tokens ({label})" if label else "context tokens"
        (line,) = axes.plot(x, y, linewidth=1.2, label=name)
        if fired.any():
            axes.plot(
                part["timeline"].to_numpy()[fired],
                part["context_tokens"].to_numpy()[fired],
                linestyle="none",
                marker="v",
                color=line.get_color(),
                label=f"compaction ({label})" if label else "compaction",
            )
    lines = [("trigger", "threshold", "--", "tab:red")]
    if show_limit:
        lines.append(("context_length", "context limit", ":", "black"))
    for column, name, style, color in lines:
        if column in growth.columns and len(growth):
            tokens = int(growth[column].iloc[0])
            label = f"{name} ({tokens:,} tokens)"
            axes.axhline(tokens, linestyle=style, color=color, linewidth=1, label=label)
    axes.set_xlabel("message (timeline)")
    axes.set_ylabel("tokens in context")
    axes.set_title(title or "Context size across compactions")
    axes.set_ylim(bottom=0)
    axes.legend(loc="best", fontsize="small")
    return axes


def plot_sweep(
    sweep: pd.DataFrame,
    *,
    x: str = "threshold",
    y: str = "total_input_tokens",
    hue: str | None = "context_length",
    ax: Axes | None = None,
    title: str | None = None,
) -> Axes:
    """``y`` against ``x`` for a :func:`sweep` frame, one line per value of ``hue``."""
    import numpy as np

    _require(sweep, (x, y), "plot_sweep")
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
    axes.set_xlabel(x.replace("_", " "))
    axes.set_ylabel(y.replace("_", " "))
    axes.set_title(title or f"{y.replace('_', ' ')} by {x.replace('_', ' ')}")
    axes.legend(loc="best", fontsize="small")
    return axes


def plot_compactions(
    compactions: pd.DataFrame, *, ax: Axes | None = None, title: str | None = None
) -> Axes:
    """Each compaction of a :func:`compactions_df` frame: a bar from the tokens after to the
    tokens before (or the messages archived, when tokens are unknown), per agent over time."""
    import matplotlib.dates as mdates
    import numpy as np
    import pandas as pd

    _require(compactions, ("time", "agent", "messages_archived"), "plot_compactions")
    axes = _axes(ax)
    known = "tokens_before" in compactions.columns and compactions["tokens_before"].notna().any()
    groups = _groups(compactions)
    for index, (label, part) in enumerate(groups):
        when = part["time"]
        x: Any = when.dt.tz_convert(None) if getattr(when.dt, "tz", None) is not None else when
        x = x.to_numpy()
        if known:  # nullable counts: a missing one becomes NaN (no bar), or 0 at the bottom
            top = part["tokens_before"].to_numpy(dtype=float, na_value=np.nan)
            bottom = part["tokens_after"].fillna(0).to_numpy(dtype=float)
        else:
            top = part["messages_archived"].to_numpy(dtype=float, na_value=np.nan)
            bottom = np.zeros(len(part))
        color = f"C{index % 10}"  # vlines does not advance the color cycle: one color per agent
        axes.vlines(x, bottom, top, linewidth=3, alpha=0.6, color=color)
        axes.plot(x, top, linestyle="none", marker="o", color=color, label=label or "compactions")
    # Dates that do not overlap, also in a narrow axes (matplotlib leaves these two untyped).
    locator = mdates.AutoDateLocator()  # type: ignore[no-untyped-call]
    axes.xaxis.set_major_locator(locator)
    axes.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))  # type: ignore[no-untyped-call]
    axes.set_xlabel("time (UTC)")
    axes.set_ylabel("tokens before → after" if known else "messages archived")
    axes.set_title(title or "Compactions")
    # The bars fill the plot's width, so any corner legend covers some: one row above them.
    highest = compactions["tokens_before" if known else "messages_archived"].max()
    if pd.notna(highest) and highest > 0:
        axes.set_ylim(0, float(highest) * 1.3)
    axes.legend(loc="upper center", ncol=max(1, min(len(groups), 4)), fontsize="small")
    return axes
