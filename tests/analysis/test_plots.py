"""plot_* helpers on the Agg backend: what is drawn, labelled and listed in the legend."""

from __future__ import annotations

from collections.abc import Iterator

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
from analysis_support import Built
from matplotlib.axes import Axes

from memorylab.analysis import (
    compactions_df,
    memory_df,
    plot_compactions,
    plot_sweep,
    plot_token_growth,
    replay,
    sweep,
    token_growth,
)
from memorylab.errors import InvalidSetting


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


def test_replay_timeline_plot_drops_at_compactions() -> None:
    messages = [{"role": "User", "content": f"message {i} " + "word " * 30} for i in range(60)]
    result = replay(messages, threshold=0.5, context_length=500)
    ax = plot_token_growth(result.timeline)
    context = ax.get_lines()[0]
    assert len(context.get_xdata()) == 60 + result.compactions  # one drop point per compaction
    assert min(context.get_ydata()) < result.timeline["context_tokens"].min() + 1


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
    counted = compactions_df(reference_workspace.root, tokens="gpt-4o")
    _, given = plt.subplots()
    ax2 = plot_compactions(counted, ax=given, title="reference")
    assert ax2 is given and ax2.get_ylabel() == "tokens before → after"
    assert _legend(ax2) == ["Researcher", "Writer"] and ax2.get_title() == "reference"
