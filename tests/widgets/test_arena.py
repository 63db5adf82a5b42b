"""SummarizerArena: a comparison with a progress bar, the table, the plot, side by side."""

from __future__ import annotations

from typing import Any

import pytest

from memorylab.compress import ScriptedSummarizer
from memorylab.evaluate import Case, Fact, cases_from_messages, compare_summarizers
from memorylab.widgets import SummarizerArena, comparison_html
from memorylab.widgets._arena import lost_facts


@pytest.fixture
def cases(messages: list[dict[str, Any]]) -> list[Case]:
    facts = (
        Fact("port", "number", "5433", 0),
        Fact("rates", "path", "/srv/etl/cache/ecb_rates.csv", 8),
    )
    return [
        *cases_from_messages(messages, id="etl", facts=facts),
        *cases_from_messages(messages[:8], id="etl-start"),
    ]


def test_nothing_runs_until_asked(cases: list[Case]) -> None:
    arena = SummarizerArena(cases)
    assert arena.scores is None and arena.table is None and arena.progress.value == 0
    assert arena.selected == ["memorylab/extractive", "memorylab/truncate", "memorylab/head-tail"]
    assert "press Run comparison" in arena.status.value


def test_run_fills_table_plot_and_side_by_side(cases: list[Case]) -> None:
    arena = SummarizerArena(cases, max_tokens=150)
    arena.run_button.click()
    assert arena.error is None
    assert arena.progress.max == arena.progress.value == 3
    assert arena.progress.bar_style == "success"
    assert arena.scores is not None and set(arena.scores["case"]) == {"etl", "etl-start"}
    assert arena.table is not None and list(arena.table.index) == arena.selected
    assert list(arena.table.columns[:2]) == ["fact_recall.overall", "probe_qa.exact"]
    assert "3 summarizer(s) × 2 case(s)" in arena.table_view.value
    assert bytes(arena.image.value).startswith(b"\x89PNG")
    assert arena.axes is not None and arena.axes.get_title() == "cost vs quality"
    assert set(arena.columns) == set(arena.selected)
    for kept, lost in arena.columns.values():
        assert {f.id for f in (*kept, *lost)} == {"port", "rates"}
    assert 'data-columns="3"' in arena.side_by_side.value
    arena.case_picker.value = 1
    assert all(kept or lost for kept, lost in arena.columns.values())  # extracted facts


def test_lost_facts_are_highlighted(cases: list[Case]) -> None:
    forgetful = ScriptedSummarizer(["The port is 5433. Nothing else was said."], name="forgetful")
    arena = SummarizerArena(cases[:1], {"forgetful": forgetful}, run=True)
    kept, lost = arena.columns["forgetful"]
    assert [f.id for f in kept] == ["port"] and [f.id for f in lost] == ["rates"]
    assert "1/2 facts kept" in arena.side_by_side.value
    assert "path: /srv/etl/cache/ecb_rates.csv" in arena.side_by_side.value


def test_subset_and_empty_selection(cases: list[Case]) -> None:
    arena = SummarizerArena(cases, max_tokens=150)
    arena.summarizer_picker.value = ("memorylab/truncate",)
    arena.run()
    assert arena.table is not None and list(arena.table.index) == ["memorylab/truncate"]
    arena.summarizer_picker.value = ()
    assert arena.run() is None and arena.error == "select at least one summarizer"


def test_failures_are_rows_not_crashes(cases: list[Case]) -> None:
    broken = ScriptedSummarizer(["x"], fail_on=[0, 1], name="broken")
    arena = SummarizerArena(cases, {"broken": broken}, run=True)
    assert arena.table is not None and int(arena.table.loc["broken", "errors"]) >= 1
    assert "failed:" in arena.side_by_side.value and "error(s)" in arena.status.value


def test_lost_facts_and_comparison_html(cases: list[Case]) -> None:
    kept, lost = lost_facts(cases[0], "port 5433")
    assert [f.id for f in kept] == ["port"] and [f.id for f in lost] == ["rates"]
    scores = compare_summarizers(cases, ["memorylab/truncate"], progress=False, cache_dir=False)
    html = comparison_html(scores)
    assert "1 summarizer(s) × 2 case(s)" in html and "memorylab/truncate" in html
    assert "%" in html  # fact recall as a percentage


def test_facts_kept_are_plotted_from_the_fact_recall_scores(cases: list[Case]) -> None:
    from matplotlib.container import BarContainer

    from memorylab.evaluate import fact_survival_table

    forgetful = ScriptedSummarizer(["The port is 5433. Nothing else was said."], name="forgetful")
    arena = SummarizerArena(cases[:1], {"forgetful": forgetful, "truncate": "memorylab/truncate"})
    assert arena.facts_axes is None and arena.facts_image.value == b""
    arena.run_button.click()
    assert arena.scores is not None and arena.facts_axes is not None
    assert bytes(arena.facts_image.value).startswith(b"\x89PNG")
    assert arena.facts_axes.get_title() == "Facts kept, by category (95% intervals)"
    expected = fact_survival_table(arena.result).frame
    labels = [t.get_text() for t in arena.facts_axes.get_xticklabels()]
    categories = [c for c in expected.columns if c not in ("facts",) and "." not in c]
    assert [label.rstrip(" †") for label in labels] == categories  # number, path, overall
    bars = [c for c in arena.facts_axes.containers if isinstance(c, BarContainer)]
    for container, name in zip(bars, ["forgetful", "truncate"], strict=True):
        heights = [round(bar.get_height(), 6) for bar in container]
        assert heights == [round(float(expected.loc[name, c]), 6) for c in categories]
    assert round(bars[0][len(categories) - 1].get_height(), 2) == 0.5  # forgetful: 1 of 2 kept


def test_without_fact_recall_the_facts_plot_says_why(cases: list[Case]) -> None:
    arena = SummarizerArena(cases[:1], ["memorylab/truncate"], scorers=["compression"], run=True)
    assert arena.error is None and arena.facts_axes is not None
    assert "fact_recall" in arena.facts_axes.texts[0].get_text()


def test_the_arena_compares_strategies_as_it_compares_summarizers(cases: list[Case]) -> None:
    """A strategy run through each case in a window is a summarizer to the arena
    (evaluate.StrategyMemory): its side by side shows what each strategy left."""
    from memorylab.compress import Trim
    from memorylab.evaluate import StrategyMemory

    memories = {
        "summary": StrategyMemory("summary", context_length=300, threshold=0.6),
        "trim": StrategyMemory(Trim(keep_messages=2), context_length=300, threshold=0.6),
    }
    arena = SummarizerArena(cases, memories)
    arena.run_button.click()
    assert arena.error is None and arena.selected == ["summary", "trim"]
    assert arena.table is not None and list(arena.table.index) == ["summary", "trim"]
    trim_runs = list(memories["trim"].runs.values())
    assert trim_runs and all(run.result.summarizer_calls == 0 for run in trim_runs)
    assert any(run.result.compactions > 0 for run in trim_runs)
