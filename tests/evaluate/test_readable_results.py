"""Comparison plots people can read, and one result object from compare_summarizers (issue 19)."""

from __future__ import annotations

from collections.abc import Iterator

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from matplotlib.axes import Axes

from memorylab.evaluate import BASELINES, Case, Fact, compare_summarizers
from memorylab.evaluate._engine import ComparisonResult
from memorylab.evaluate._plots import (
    ALL_FREE_NOTE,
    plot_cost_quality,
    plot_latency,
    plot_quality,
)
from memorylab.evaluate._tables import SummaryTable, markdown_table, summary_table

HISTORY = (
    {"role": "user", "content": "Config at /srv/api/config.yaml; run `make deploy` later."},
    {"role": "assistant", "content": "Staging listens on port 8443."},
)
FACTS = (Fact("f1", "path", "/srv/api/config.yaml", 0), Fact("f2", "number", "port 8443", 1))
CASES = [Case(f"c{i}", HISTORY, FACTS) for i in range(3)]


@pytest.fixture(autouse=True)
def _close() -> Iterator[None]:
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def offline() -> ComparisonResult:
    """Every summarizer local: every cost is zero."""
    return compare_summarizers(CASES, list(BASELINES), max_tokens=40, progress=False,
                               cache_dir=False)  # fmt: skip


def _ticks(ax: Axes, axis: str) -> list[str]:
    ax.figure.canvas.draw()
    labels = ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()
    return [t.get_text() for t in labels if t.get_text()]


def _no_offset(ax: Axes) -> None:
    ax.figure.canvas.draw()
    assert ax.xaxis.get_offset_text().get_text() == ""
    assert ax.yaxis.get_offset_text().get_text() == ""


def test_cost_quality_with_every_cost_zero_says_so(offline: ComparisonResult) -> None:
    ax = plot_cost_quality(offline)
    low, _high = ax.get_xlim()
    assert -0.1 < low <= 0  # not a span around zero (-0.04 ... 0.04): no cost is negative
    assert _ticks(ax, "x") == ["$0"]
    assert ALL_FREE_NOTE == "all costs are zero (local/offline)"
    assert ALL_FREE_NOTE in [t.get_text() for t in ax.texts]
    _no_offset(ax)


def test_cost_quality_with_small_costs_in_dollars_without_offset(offline: ComparisonResult) -> None:
    priced = offline.frame.copy()
    costs = {"memorylab/extractive": 0.000012, "memorylab/truncate": 0.000031}
    rows = priced["scorer"].eq("cost") & priced["metric"].eq("usd")
    priced.loc[rows, "value"] = priced.loc[rows, "summarizer"].map(costs).fillna(0.0)
    ax = plot_cost_quality(priced)
    labels = _ticks(ax, "x")
    assert labels[:3] == ["$0", "$0.000005", "$0.000010"], labels
    assert all(label.startswith("$") and "e" not in label for label in labels), labels
    assert len({len(label.split(".")[-1]) for label in labels[1:]}) == 1  # one decimal count
    assert ax.get_xlim()[0] == 0
    assert ALL_FREE_NOTE not in [t.get_text() for t in ax.texts]
    _no_offset(ax)


def test_quality_and_latency_ticks_are_plain(offline: ComparisonResult) -> None:
    for ax in (plot_quality(offline), plot_latency(offline)):
        labels = _ticks(ax, "y")
        assert labels and not any("e" in label for label in labels), labels
        decimals = {len(label.partition(".")[2]) for label in labels if label != "0"}
        assert len(decimals) == 1, labels
        _no_offset(ax)


def test_with_summaries_returns_one_result() -> None:
    """Deprecated: with_summaries=True gives a result that still unpacks as (scores, summaries)."""
    with pytest.warns(DeprecationWarning, match=r"with_summaries=\.\.\.\) is deprecated"):
        result = compare_summarizers(CASES[:2], ["memorylab/truncate"], ["compression"],
                                     progress=False, cache_dir=False, with_summaries=True)  # fmt: skip
    assert isinstance(result, ComparisonResult)
    assert len(result.frame) == 6 and len(result.summaries) == 2
    assert result.summaries.text.str.contains("8443").all()
    with pytest.warns(DeprecationWarning, match=r"use result\.frame and result\.summaries"):
        scores, summaries = result
    assert scores is result.frame and summaries is result.summaries
    with pytest.warns(DeprecationWarning, match="with_summaries=True"):
        assert result[0] is result.frame
    with pytest.warns(DeprecationWarning, match=r"use result\.frame"):
        assert result.scores is result.frame
    plain = compare_summarizers(CASES[:2], ["memorylab/truncate"], ["compression"],
                                progress=False, cache_dir=False)  # fmt: skip
    assert isinstance(plain, ComparisonResult) and isinstance(plain.frame, pd.DataFrame)


def test_results_carry_their_marks_in_fields_not_attrs(offline: ComparisonResult) -> None:
    assert offline.run["requests"] == 0 and offline.bounds == {}
    assert offline.quality == {"compression": False, "latency": False, "cost": False,
                               "fact_recall": True, "probe_qa": True}  # fmt: skip
    assert offline.frame.attrs == {} and len(offline.summaries) == 3 * 3
    assert offline.notes() == ["model requests 0, cache hits 0, spent $0.0000"]
    table = summary_table(offline)
    assert isinstance(table, SummaryTable) and table.frame.attrs == {}
    assert table.bounds == {} and table.not_measuring == {} and table.confidence == 0.95
    text = markdown_table(table)
    assert all(line in text for line in table.notes())


def test_the_former_frame_forms_still_work_and_warn(offline: ComparisonResult) -> None:
    """Deprecated for a release: a comparison, a summary table used as the DataFrame they were."""
    with pytest.warns(DeprecationWarning, match=r"compare_summarizers\(\) returns a Comparison"):
        assert offline.attrs["run"] == offline.run  # type: ignore[attr-defined]
    with pytest.warns(DeprecationWarning, match=r"use result\.frame\[\.\.\.\]"):
        assert list(offline["case"]) == list(offline.frame["case"])  # type: ignore[index]
    with pytest.warns(DeprecationWarning):
        assert len(offline) == len(offline.frame)  # type: ignore[arg-type]
    table = summary_table(offline)
    with pytest.warns(DeprecationWarning, match=r"summary_table\(\) .* returns a SummaryTable"):
        assert table.attrs["tied"] == table.tied  # type: ignore[attr-defined]
    with pytest.warns(DeprecationWarning):
        assert table.loc["memorylab/truncate", "cases"] == 3  # type: ignore[attr-defined]
    # a long-form frame alone still makes a table: no bounds but the built-in ones' names
    assert summary_table(offline.frame).frame.equals(table.frame)
