"""plot_* helpers on the Agg backend: what is drawn, labelled and listed in the legend."""

from __future__ import annotations

import re
import stat
from collections.abc import Iterator
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.dates
import matplotlib.pyplot as plt
import pandas as pd
import pytest
from analysis_support import Built
from matplotlib.axes import Axes

from memorylab.analysis import (
    compactions_df,
    memory_df,
    plot_compactions,
    plot_sweep,
    plot_token_growth,
    plot_token_growth_grid,
    replay,
    save_plot,
    sweep,
    token_growth,
)
from memorylab.errors import InvalidSetting, StoreError
from memorylab.transcripts import bundled_workspace


@pytest.fixture(autouse=True)
def _no_show(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("plot helpers must not call plt.show()")

    monkeypatch.setattr(plt, "show", refuse)
    yield
    plt.close("all")


def _legend(ax: Axes) -> list[str]:
    legend = ax.get_legend()
    assert legend is not None
    return [text.get_text() for text in legend.get_texts()]


def test_token_growth_plot(own_workspace: Built) -> None:
    df = memory_df(own_workspace.root / "agents" / "alpha")
    growth = token_growth(df, context_length=1000, threshold=0.8)
    ax = plot_token_growth(growth)
    assert isinstance(ax, Axes)
    labels = _legend(ax)
    assert labels == [
        "context tokens (alpha)",
        "compaction (alpha)",
        "threshold (800 tokens)",
        "context limit (1,000 tokens)",
    ]
    line, markers, threshold, limit = ax.get_lines()
    assert len(line.get_xdata()) == len(df)
    assert len(markers.get_xdata()) == 3 and markers.get_marker() == "v"
    assert threshold.get_linestyle() == "--" and list(threshold.get_ydata()) == [800, 800]
    assert limit.get_linestyle() == ":" and list(limit.get_ydata()) == [1000, 1000]
    assert ax.get_xlabel() == "message (timeline)" and ax.get_ylabel() == "tokens in context"
    assert ax.get_title() == "Context size across compactions"


def test_token_growth_plot_on_a_given_axes_with_several_agents(own_workspace: Built) -> None:
    growth = token_growth(memory_df(own_workspace.root), context_length=1000)
    _, (left, right) = plt.subplots(1, 2)
    ax = plot_token_growth(growth, ax=right, title="all agents", show_limit=False)
    assert ax is right and not left.get_lines()
    labels = _legend(ax)
    assert [label for label in labels if label.startswith("context tokens")] == [
        "context tokens (alpha)",
        "context tokens (beta)",
        "context tokens (gamma)",
    ]
    assert "compaction (gamma)" not in labels  # gamma never compacted
    assert not any(label.startswith("context limit") for label in labels)
    assert ax.get_title() == "all agents"


def test_small_multiples_draw_one_panel_per_agent_and_one_legend(own_workspace: Built) -> None:
    frame = memory_df(own_workspace.root)
    growths = {
        agent: token_growth(part, context_length=1000, threshold=0.8)
        for agent, part in frame.groupby("agent", observed=True)
    }
    figure = plot_token_growth_grid(growths, columns=2)
    visible = [ax for ax in figure.axes if ax.get_visible()]
    assert [ax.get_title() for ax in visible] == list(growths)  # the mapping's order
    assert len(figure.axes) == 4 and not figure.axes[3].get_visible()  # 3 agents, 2 x 2
    for ax, growth in zip(visible, growths.values(), strict=True):
        assert ax.get_legend() is None
        assert len(ax.get_lines()[0].get_xdata()) == len(growth)
        assert [800, 800] in [list(line.get_ydata()) for line in ax.get_lines()]
    (legend,) = figure.legends
    labels = [text.get_text() for text in legend.get_texts()]
    assert labels == ["context tokens", "compaction", "threshold", "context limit"]


def test_small_multiples_need_an_agent() -> None:
    with pytest.raises(InvalidSetting, match="at least one"):
        plot_token_growth_grid({})


def test_replay_timeline_plot_drops_at_compactions() -> None:
    messages = [{"role": "User", "content": f"message {i} " + "word " * 30} for i in range(60)]
    result = replay(messages, threshold=0.5, context_length=500)
    ax = plot_token_growth(result.frame)
    context = ax.get_lines()[0]
    assert len(context.get_xdata()) == 60 + result.compactions  # one drop point per compaction
    assert min(context.get_ydata()) < result.frame["context_tokens"].min() + 1


def test_sweep_plot() -> None:
    messages = [{"role": "User", "content": "word " * 40} for _ in range(200)]
    frame = sweep(messages, thresholds=[0.5, 0.7, 0.9], context_lengths=[1000, 4000], fast=True)
    ax = plot_sweep(frame)
    assert _legend(ax) == ["context_length = 1,000", "context_length = 4,000"]
    assert [len(line.get_xdata()) for line in ax.get_lines()] == [3, 3]
    assert ax.get_xlabel() == "threshold" and ax.get_ylabel() == "total input tokens"
    other = plot_sweep(frame, x="context_length", y="compactions", hue=None)
    assert _legend(other) == ["compactions"] and other.get_xlabel() == "context length"
    with pytest.raises(InvalidSetting):
        plot_sweep(frame, y="no_such_column")


def test_compactions_plot(own_workspace: Built, reference_workspace: Built) -> None:
    frame = compactions_df(own_workspace.root)
    ax = plot_compactions(frame)
    assert _legend(ax) == ["alpha", "beta"]
    assert ax.get_ylabel() == "messages archived"  # no token figures recorded
    assert len(ax.collections) == 2  # one set of bars per agent
    bar_colors = [tuple(c.get_colors()[0]) for c in ax.collections]
    assert bar_colors[0] != bar_colors[1]  # each agent in its own color, bars and markers alike
    markers = [line.get_color() for line in ax.get_lines()]
    assert [matplotlib.colors.to_rgba(m, alpha=0.6) for m in markers] == bar_colors
    counted = compactions_df(reference_workspace.root, model="gpt-4o")
    _, given = plt.subplots()
    ax2 = plot_compactions(counted, ax=given, title="reference")
    assert ax2 is given and ax2.get_ylabel() == "tokens before → after"
    assert _legend(ax2) == ["Researcher", "Writer"] and ax2.get_title() == "reference"


# --------------------------------------------------------------------------- readable plots


def _bundled() -> pd.DataFrame:
    return memory_df(bundled_workspace("memorylab"))


def _outside(ax: Axes) -> bool:
    """The legend's box lies right of the axes' box (it covers no data)."""
    ax.figure.canvas.draw()
    legend = ax.get_legend()
    assert legend is not None
    return bool(legend.get_window_extent().x0 >= ax.get_window_extent().x1)


def test_legends_sit_outside_the_axes(own_workspace: Built) -> None:
    growth = token_growth(memory_df(own_workspace.root), context_length=1000)
    assert _outside(plot_token_growth(growth))
    frame = sweep([{"role": "User", "content": "w " * 40}] * 60, [0.5, 0.9], [1000], fast=True)
    assert _outside(plot_sweep(frame))
    assert _outside(plot_compactions(compactions_df(own_workspace.root)))


def test_every_compaction_is_drawn_where_it_can_be_seen() -> None:
    frame = _bundled()
    compactions = compactions_df(bundled_workspace("memorylab"))
    ax = plot_compactions(compactions)
    xs = [float(x) for line in ax.get_lines() for x in matplotlib.dates.date2num(line.get_xdata())]
    assert len(set(xs)) == len(compactions) == 16  # the two of one morning side by side
    growth = token_growth(frame[frame["agent"] == "DataEngineer"])
    ax = plot_token_growth(growth)
    markers = [line for line in ax.get_lines() if line.get_marker() == "v"]
    assert len(markers) == 1 and len(markers[0].get_xdata()) == 7
    low, high = ax.get_ylim()
    assert all(low <= y <= high for y in markers[0].get_ydata())
    assert _outside(ax)


def test_ticks_have_thousands_separators_and_no_offset() -> None:
    frame = _bundled()
    ax = plot_token_growth(token_growth(frame[frame["agent"] == "BugHunter"]))
    ax.figure.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert "2,500" in labels or "3,000" in labels
    assert ax.yaxis.get_offset_text().get_text() == ""
    assert ax.xaxis.get_offset_text().get_text() == ""


def test_context_above_the_window_is_flagged_in_red() -> None:
    frame = _bundled()
    rows = frame[frame["agent"] == "BugHunter"]
    honest = plot_token_growth(token_growth(rows))
    assert not any("above the window" in label for label in _legend(honest))
    one_session = plot_token_growth(token_growth(rows, restarts=False))
    flagged = [label for label in _legend(one_session) if "above the window" in label]
    assert len(flagged) == 1 and "more than the model could read" in flagged[0]
    red = [
        line
        for line in one_session.get_lines()
        if matplotlib.colors.to_hex(line.get_color()) == matplotlib.colors.to_hex("tab:red")
        and line.get_linewidth() > 2
    ]
    assert red
    restarts = [label for label in _legend(honest) if label.startswith("restart")]
    assert restarts == ["restart (bounded preload)"]


def test_sweep_plot_marks_the_recorded_setting() -> None:
    frame = _bundled()
    table = sweep(frame[frame["agent"] == "Researcher"], thresholds=[0.6, 0.9])
    ax = plot_sweep(table)
    assert "the agent's setting (0.85 of 2,800)" in _legend(ax)
    assert _outside(ax)


# --------------------------------------------------------------------------- ticks people read


def _tick_texts(ax: Axes, axis: str) -> list[str]:
    ax.figure.canvas.draw()
    labels = ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()
    return [t.get_text() for t in labels if t.get_text()]


def _short_run() -> pd.DataFrame:
    """Three compactions within a second, as a test or a quick demo makes them."""
    frame = compactions_df(bundled_workspace("memorylab")).head(3).copy()
    start = pd.Timestamp("2026-12-04 14:17:56.1", tz="UTC")
    frame["time"] = [start, start + pd.Timedelta("0.4s"), start + pd.Timedelta("0.9s")]
    frame["tokens_before"] = pd.array([None] * 3, dtype="Int64")
    return frame


def test_a_short_run_has_readable_time_ticks_and_whole_counts() -> None:
    ax = plot_compactions(_short_run())
    times = _tick_texts(ax, "x")
    assert times and all(re.fullmatch(r"\d\d:\d\d(:\d\d)?", t) for t in times), times  # not "56.2"
    assert ax.get_xlabel() == "time (UTC), 2026-12-04"
    counts = _tick_texts(ax, "y")
    assert all(re.fullmatch(r"\d{1,3}(,\d{3})*", c) for c in counts), counts  # no "2.5"
    assert ax.xaxis.get_offset_text().get_text() == ""


def test_days_are_named_with_their_month() -> None:
    ax = plot_compactions(compactions_df(bundled_workspace("memorylab")))
    days = _tick_texts(ax, "x")
    assert all(re.fullmatch(r"[A-Z][a-z]{2}( \d\d)?", d) for d in days), days  # "Apr 21"
    assert ax.get_xlabel() == "time (UTC), 2026-04-20 to 2026-05-08"


def test_no_plot_writes_an_offset_even_for_millions() -> None:
    messages = [{"role": "User", "content": "word " * 4000} for _ in range(300)]
    growth = token_growth(
        pd.DataFrame(
            {
                "agent": "big",
                "timeline": range(300),
                "role": "User",
                "content": [m["content"] for m in messages],
                "timestamp": pd.date_range("2026-01-01", periods=300, freq="min", tz="UTC"),
            }
        ),
        context_length=2_000_000,
        threshold=0.9,
    )
    frame = sweep(messages, thresholds=[0.5, 0.9], context_lengths=[2_000_000], fast=True)
    for ax in (
        plot_token_growth(growth),
        plot_sweep(frame),
        plot_sweep(frame, y="estimated_cost_usd"),
        plot_compactions(_short_run()),
    ):
        ax.figure.canvas.draw()
        assert ax.xaxis.get_offset_text().get_text() == "", ax.get_title()
        assert ax.yaxis.get_offset_text().get_text() == "", ax.get_title()
        for label in _tick_texts(ax, "y"):
            assert "e" not in label and (len(label) < 5 or "," in label or "." in label), label
    tokens = _tick_texts(plot_token_growth(growth), "y")
    assert any(re.fullmatch(r"\d{1,3}(,\d{3}){2}", t) for t in tokens), tokens  # "1,000,000"


def test_thresholds_have_one_decimal_count() -> None:
    frame = sweep(
        [{"role": "User", "content": "w " * 40}] * 80, [0.5, 0.85, 0.9], [1000], fast=True
    )
    labels = _tick_texts(plot_sweep(frame), "x")
    assert len({len(label.partition(".")[2]) for label in labels if label != "0"}) == 1, labels


def test_save_plot_writes_a_private_file(tmp_path: Path) -> None:
    ax = plot_compactions(_short_run())
    target = save_plot(ax, tmp_path / "plots" / "compactions.png")
    assert target.read_bytes().startswith(b"\x89PNG")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert stat.S_IMODE(target.parent.stat().st_mode) == 0o700
    save_plot(ax.figure, target)  # overwrite by default
    with pytest.raises(StoreError, match="exists"):
        save_plot(ax, target, overwrite=False)
    with pytest.raises(InvalidSetting, match=r"end the name in one of .*\.png"):
        save_plot(ax, tmp_path / "plot.txt")


def test_a_one_message_agent_is_a_point_on_a_readable_axis(tmp_path: Path) -> None:
    """Issue 28: one message drew an empty plot from -0.04 to 0.04."""
    from memorylab import Conversation

    Conversation(agent_name="Once", workspace_dir=tmp_path).add("User", "only this")
    growth = token_growth(memory_df(tmp_path / "agents" / "Once"), context_length=1000)
    ax = plot_token_growth(growth)
    low, high = ax.get_xlim()
    assert high - low >= 2 and low < 0 < high
    assert len(ax.get_lines()[0].get_xdata()) == 1


def test_a_sweep_of_counts_starts_at_zero() -> None:
    """Issue 28: the report's what-if plot started its y-axis at 99k, so a few percent looked
    like a fall to nothing."""
    table = pd.DataFrame({"threshold": [0.5, 0.9], "total_input_tokens": [99_000, 104_000]})
    ax = plot_sweep(table)
    low, high = ax.get_ylim()
    assert low == 0 and high >= 104_000


def test_one_summary_is_one_whole_tick_not_hundredths() -> None:
    """A workspace with one compaction: the survival and length plots show generation 1 as a
    point on a whole-number axis (the report's reference page drew 0.96 ... 1.04)."""
    import pandas as pd

    from memorylab.analysis import plot_fact_survival, plot_summary_lengths

    table = pd.DataFrame({"category": ["number", "all"], "since": [0, 0], "summaries": [1, 1],
                          "facts": [4, 4], "kept": [0, 0], "kept_rate": [0.0, 0.0],
                          "survived": [0, 0], "survival": [0.0, 0.0]})  # fmt: skip
    lineage = pd.DataFrame({"agent": ["R"], "generation": [1], "chars": [229]})
    for axes in (plot_fact_survival(table), plot_summary_lengths(lineage)):
        axes.figure.canvas.draw()
        low, high = axes.get_xlim()
        shown = [t for t in axes.get_xticks() if low <= t <= high]
        assert shown == [1.0], shown
