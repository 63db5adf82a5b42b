"""The tables' leftovers of issue 41: a probe table marks its ties and its bounds as the summary
table does, a table printed with its differences says each pair once, and a plan's budget
message prints its braces once."""

from __future__ import annotations

import pandas as pd
import pytest

from memorylab.errors import BudgetExceeded
from memorylab.evaluate import (
    ComparisonResult,
    Plan,
    differences_table,
    markdown_table,
    probe_table,
)

PROBES = 40


def _answers(right: dict[str, int]) -> pd.DataFrame:
    """One reader's exact answers: each label right on its first ``right[label]`` probes of
    ``PROBES`` (two categories, alternating)."""
    rows = []
    for label, count in right.items():
        for index in range(PROBES):
            rows.append({"case": "c1", "summarizer": label, "scorer": "probe_qa",
                         "probe": f"p{index}", "category": ("name", "number")[index % 2],
                         "question": "?", "expected": "x", "answer": "x",
                         "exact": float(index < count)})  # fmt: skip
    return pd.DataFrame(rows)  # ComparisonResult.answers: one row per probe answered


def _result(right: dict[str, int], bounds: dict[str, str]) -> ComparisonResult:
    answers = _answers(right)
    frame = pd.DataFrame({"case": "c1", "summarizer": list(right), "scorer": "probe_qa",
                          "metric": "exact", "value": [n / PROBES for n in right.values()],
                          "n": PROBES})  # fmt: skip
    return ComparisonResult(frame, pd.DataFrame(), {}, bounds, {"probe_qa": True}, answers)


def test_a_probe_table_marks_ties_and_a_ceiling_not_above_its_floor() -> None:
    """Before: probe_table had the differences but no marks: no ≈, no †, no note."""
    result = _result({"best": 40, "close": 39, "far": 5, "memorylab/full": 20,
                      "memorylab/none": 20}, {"memorylab/full": "ceiling",
                                               "memorylab/none": "floor"})  # fmt: skip
    table = probe_table(result)
    overall = f"overall (n={PROBES})"
    assert table.tied[overall] == ["best", "close"]  # "far" is clearly below; bounds aside
    assert set(table.not_measuring) == set(table.frame.columns[::3])  # every category column
    why = table.not_measuring[overall]
    assert "not clearly above the floor (memorylab/none): 0.50 vs 0.50" in why
    text = markdown_table(table, percent=list(table.frame.columns))
    assert f"| {overall} † |" in text
    assert "| close | " in text and "98% [" in text and " ≈ |" in text
    assert f"† {overall} measures nothing on these cases" in text


def test_a_ceiling_clearly_above_its_floor_measures() -> None:
    result = _result({"a": 30, "memorylab/full": 40, "memorylab/none": 0},
                     {"memorylab/full": "ceiling", "memorylab/none": "floor"})  # fmt: skip
    assert probe_table(result).not_measuring == {}


def test_a_table_printed_with_its_differences_says_each_pair_once() -> None:
    """Before: the terminal printed the notes' "Differences that rank" and then the
    differences table, the same pairs twice (markdown_table + differences_table)."""
    result = _result({"best": 40, "far": 5, "memorylab/full": 40, "memorylab/none": 0},
                     {"memorylab/full": "ceiling", "memorylab/none": "floor"})  # fmt: skip
    table = probe_table(result)
    pair = "best − far"
    alone = markdown_table(table)  # a notebook's table: the notes say what ranks
    assert "Differences that rank" in alone and pair in alone
    assert "Paired differences" not in alone
    both = markdown_table(table, differences=True)
    assert "Differences that rank" not in both
    assert "Paired differences (over the units both rows have):" in both
    assert both.endswith(differences_table(table))
    overall = f"overall (n={PROBES})"
    assert both.count(f"| {overall} | {pair} |") == 1
    assert both.count(pair) == 1 + sum(f"| {c} | {pair} |" in both for c in ("name (n=20)",
                                                                          "number (n=20)"))  # fmt: skip


def test_rows_are_shown_by_the_names_given() -> None:
    result = _result({"a": 30, "memorylab/full": 40, "memorylab/none": 0},
                     {"memorylab/full": "ceiling", "memorylab/none": "floor"})  # fmt: skip
    text = markdown_table(probe_table(result), labels={"memorylab/none": "no memory"},
                          differences=True)  # fmt: skip
    assert "| no memory | 0 [0, 0] |" in text and "| memorylab/full (ceiling) |" in text
    assert "| overall (n=40) | memorylab/full − no memory |" in text
    assert "memorylab/none" not in text


def _plan() -> Plan:
    frame = pd.DataFrame([{"model": "gpt-4o-mini", "calls": 3, "cached_calls": 0,
                           "input_tokens": 300, "processed_tokens": 300, "output_tokens": 30,
                           "expected_output_tokens": 20, "usd": 0.5, "priced": True}])  # fmt: skip
    return Plan(frame, {})  # no measured speed


def test_a_plan_without_speeds_says_how_to_give_them_with_single_braces() -> None:
    """Before: "speeds={model: memorylab.llm.measure_speed(model, ...)}} or leave ...": the
    brace doubled in the message's plain-string part printed doubled."""
    with pytest.raises(BudgetExceeded) as raised:
        _plan().check(max_seconds=10)
    message = str(raised.value)
    assert "speeds={model: memorylab.llm.measure_speed(model, ...)} or leave max_seconds out" in (
        message
    )
    assert "{{" not in message and "}}" not in message


def test_a_plan_over_its_cost_says_what_it_would_spend() -> None:
    with pytest.raises(BudgetExceeded, match=r"above max_cost_usd=0.1 \(gpt-4o-mini: 3 calls"):
        _plan().check(max_cost_usd=0.1)
    _plan().check(max_cost_usd=1.0)  # within: nothing raised
