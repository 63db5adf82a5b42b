"""Statistics that rank: paired differences between a table's conditions, with intervals, and
the planner's detectable difference checked against a simulation (issue 39)."""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pytest

from memorylab.errors import InvalidSetting
from memorylab.evaluate import (
    BASELINES,
    BOUNDS,
    ComparisonResult,
    StrategyComparison,
    bootstrap_interval,
    cases_from_transcripts,
    compare_strategies,
    compare_summarizers,
    detectable_difference,
    differences_table,
    fact_survival_table,
    markdown_table,
    probe_table,
    probes_needed,
    summary_table,
)

DIFFERENCE_COLUMNS = ["column", "a", "b", "difference", "lo", "hi", "n"]

Z = 1.959963984540054  # the two-sided 95 % quantile


def _paired_outcomes(
    rng: np.random.Generator, probes: int, repetitions: int, difference: float, discordant: float
) -> np.ndarray:
    """Per-probe differences a - b (+1, -1, 0) of two conditions asked the same probes, whose
    discordant share is ``discordant`` and whose true difference is ``difference``."""
    ahead, behind = (discordant + difference) / 2, (discordant - difference) / 2
    draws = rng.random((repetitions, probes))
    return (draws < ahead).astype(float) - ((draws >= ahead) & (draws < ahead + behind))


def _normal_power(outcomes: np.ndarray) -> float:
    """The share of repetitions whose 95 % interval (normal approximation) is above 0."""
    mean = outcomes.mean(1)
    error = outcomes.std(1, ddof=1) / np.sqrt(outcomes.shape[1])
    return float((mean - Z * error > 0).mean())


@pytest.mark.parametrize(
    ("probes", "discordant"), [(105, 0.3), (300, 0.3), (800, 0.6), (1000, 0.05)]
)
def test_the_detectable_difference_is_detected_at_the_requested_power(
    probes: int, discordant: float
) -> None:
    difference = detectable_difference(probes, discordant=discordant)
    outcomes = _paired_outcomes(np.random.default_rng(7), probes, 6000, difference, discordant)
    # 6,000 repetitions: the empirical power's standard error is 0.005. A difference off by
    # sqrt(2) either way gives about 0.5 or 0.98, the unpaired variance at rate 0.5 0.95 (0.73
    # at 800 probes), the power's quantile left out 0.5. (With fewer than ~30 discordant probes
    # expected the normal approximation is off: 10 give 0.85.)
    assert _normal_power(outcomes) == pytest.approx(0.8, abs=0.03)
    # the tables' own test: the seeded paired bootstrap's interval excludes 0 (fewer repetitions,
    # 1,000 resamples each: standard error 0.02)
    detected = [bootstrap_interval(row, seed=index)[0] > 0
                for index, row in enumerate(outcomes[:400])]  # fmt: skip
    assert np.mean(detected) == pytest.approx(0.8, abs=0.07)


def test_the_bound_from_the_rate_is_conservative() -> None:
    """Without the discordant share, the detectable difference holds at its largest possible
    value (every probe one condition answers the other misses) and over-delivers below it."""
    probes, rate = 200, 0.3
    difference = detectable_difference(probes, rate=rate)
    assert difference == detectable_difference(probes, discordant=2 * rate)
    rng = np.random.default_rng(11)
    at_bound = _normal_power(_paired_outcomes(rng, probes, 6000, difference, 2 * rate))
    assert at_bound == pytest.approx(0.8, abs=0.03)
    assert _normal_power(_paired_outcomes(rng, probes, 6000, difference, rate)) > 0.95
    assert detectable_difference(probes, rate=0.9) == detectable_difference(probes, rate=0.1)


@pytest.mark.parametrize("discordant", [None, 0.05, 0.3, 1.0])
@pytest.mark.parametrize("difference", [0.01, 0.05, 0.2])
def test_probes_needed_inverts_the_detectable_difference(
    difference: float, discordant: float | None
) -> None:
    if discordant is not None and difference > discordant:
        return
    needed = probes_needed(difference, discordant=discordant, power=0.9)
    assert detectable_difference(needed, discordant=discordant, power=0.9) <= difference
    assert needed == 1 or difference < detectable_difference(
        needed - 1, discordant=discordant, power=0.9
    )


def test_a_five_point_difference_needs_probes_by_its_discordant_share() -> None:
    # the docs' example: a pilot's 10 % discordant probes, and the conservative bound at 50 %
    assert probes_needed(0.05, discordant=0.1) == 307
    assert probes_needed(0.05) == 3132
    # more power, more confidence or more discordance: more probes
    base = probes_needed(0.05, discordant=0.2)
    assert probes_needed(0.05, discordant=0.2, power=0.9) > base
    assert probes_needed(0.05, discordant=0.2, confidence=0.99) > base
    assert probes_needed(0.05, discordant=0.4) > base


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda: detectable_difference(0), "probes"),
        (lambda: detectable_difference(2.5), "probes"),  # type: ignore[arg-type]
        (lambda: detectable_difference(100, power=80), "power"),
        (lambda: detectable_difference(100, confidence=1.0), "confidence"),
        (lambda: detectable_difference(100, rate=0), "rate"),
        (lambda: detectable_difference(100, discordant=1.5), "discordant"),
        (lambda: probes_needed(5), "difference"),
        (lambda: probes_needed(0.3, discordant=0.2), "difference"),
        (lambda: probes_needed(0.3, rate=0.1), "rate"),
    ],
)
def test_bad_arguments_name_themselves(call: object, named: str) -> None:
    with pytest.raises(InvalidSetting, match=named):
        call()  # type: ignore[operator]


# --------------------------------------------------------------------------- paired differences


def _scores(outcomes: dict[str, Sequence[float]], column: str = "probe_qa.exact") -> pd.DataFrame:
    """A long frame of scores: one case whose probes each summarizer answered as given (1, 0,
    NaN for a failed call)."""
    scorer, metric = column.split(".")
    rows = [{"case": "c", "summarizer": label, "scorer": scorer, "metric": metric,
             "value": float(np.nanmean(values)), "n": len(values),
             "items": " ".join("nan" if v != v else str(int(v)) for v in values)}
            for label, values in outcomes.items()]  # fmt: skip
    return pd.DataFrame(rows)


def test_a_paired_difference_ranks_what_overlapping_intervals_hide() -> None:
    """The issue's case: two conditions whose intervals overlap, but one answers every probe
    the other does and six more: the paired interval excludes 0."""
    ahead = [1.0] * 30 + [0.0] * 30
    behind = [1.0] * 24 + [0.0] * 36
    table = summary_table(_scores({"keep-recent": ahead, "summary": behind}))
    frame = table.frame
    assert frame.loc["keep-recent", "probe_qa.exact.lo"] < frame.loc["summary", "probe_qa.exact.hi"]
    assert list(table.differences.columns) == DIFFERENCE_COLUMNS
    row = table.differences.iloc[0].to_dict()
    assert row["a"] == "keep-recent" and row["b"] == "summary" and row["n"] == 60
    assert row["difference"] == pytest.approx(0.1)
    assert 0 < row["lo"] <= row["difference"] <= row["hi"]
    assert "- probe_qa.exact: keep-recent − summary +10.0 pts [" in "\n".join(table.notes())
    assert "keep-recent − summary | +10.0 pts [" in differences_table(table)
    assert table.tied == {}  # the ties read the same difference
    # seeded: the same every run
    assert summary_table(_scores({"keep-recent": ahead, "summary": behind})).differences.equals(
        table.differences
    )


def test_every_pair_is_compared_on_its_common_units_and_the_marks_read_them() -> None:
    rng = np.random.default_rng(3)
    outcomes: dict[str, Any] = {label: (rng.random(80) < rate).astype(float)
                                for label, rate in [("memorylab/full", 0.9), ("memorylab/none", 0.05),
                                                    ("x", 0.5), ("y", 0.45), ("z", 0.2)]}  # fmt: skip
    outcomes["y"][:10] = np.nan  # ten probes y's reader never answered
    table = summary_table(_scores(outcomes))
    differences = table.differences
    assert len(differences) == 10  # 5 rows: every pair once
    for row in differences.itertuples():
        a, b = outcomes[row.a], outcomes[row.b]
        both = ~(np.isnan(a) | np.isnan(b))
        assert row.n == both.sum() == (70 if "y" in (row.a, row.b) else 80)
        assert row.difference == pytest.approx(a[both].mean() - b[both].mean())
        assert row.difference >= 0 and row.lo <= row.difference <= row.hi
    # one rule: tied with the best (x, the bounds aside) exactly when the pair's interval
    # reaches 0; the bounds measure when the ceiling's pair with the floor excludes 0
    tied = set(table.tied.get("probe_qa.exact", ["x"])[1:])
    for label in ("y", "z"):
        pair = differences[differences[["a", "b"]].isin(["x", label]).all(axis=1)]
        assert (label in tied) == (not pair["lo"].iloc[0] > 0)
    assert tied == {"y"}  # x and y differ by ~5 points on 70 probes, z by ~30 on 80
    assert table.not_measuring == {}
    # printed: each row against the best and the ceiling against the floor, not z against y
    shown = differences_table(table)
    assert (
        "| x − y |" in shown and "| x − z |" in shown and "memorylab/full − memorylab/none" in shown
    )
    assert "y − z" not in shown and "y − z" in differences_table(table, every=True)


def test_a_recall_condition_is_shown_against_its_memory() -> None:
    rng = np.random.default_rng(5)
    labels = ["best", "summary", "summary + recall 5", "trim", "trim + recall 5"]
    outcomes = {label: (rng.random(50) < 0.3 + 0.1 * (label == "best")).astype(float)
                for label in labels}  # fmt: skip
    shown = differences_table(summary_table(_scores(outcomes)))
    pairs = {line.split(" | ")[1] for line in shown.splitlines()[2:]}
    against_best = {p for p in pairs if "best" in p}
    assert len(against_best) == 4
    recall = pairs - against_best
    assert {frozenset(p.split(" − ")) for p in recall} == {
        frozenset({"summary", "summary + recall 5"}),
        frozenset({"trim", "trim + recall 5"}),
    }


def test_a_share_is_shown_in_points_and_another_value_as_it_is() -> None:
    scores = _scores({"a": [1.0, 1.0, 0.0, 1.0], "b": [0.0, 1.0, 0.0, 0.0]})
    assert "+50.0 pts" in differences_table(summary_table(scores))
    rated = scores.assign(value=scores["value"] * 10, items=None)  # a rating, one per case
    table = differences_table(summary_table(rated))
    assert "| a − b | +5 " in table and "pts" not in table


def test_differences_table_checks_what_it_is_given() -> None:
    table = summary_table(_scores({"a": [1.0, 0.0], "b": [0.0, 0.0]}))
    with pytest.raises(InvalidSetting, match="columns"):
        differences_table(table, columns=["fact_recall.overall"])
    with pytest.raises(InvalidSetting, match="table"):
        differences_table(pd.DataFrame({"x": [1]}))
    assert differences_table(table.differences).count("\n") == 2  # a frame: every pair
    assert differences_table(summary_table(_scores({"a": [1.0]}))) == ""  # nothing to pair


@pytest.fixture(scope="module")
def bundled() -> ComparisonResult:
    os.environ.setdefault("WORKSPACE_DIR", tempfile.mkdtemp())
    cases = cases_from_transcripts(split="session")[:4]
    return compare_summarizers(cases, [*BOUNDS, *BASELINES], ["fact_recall", "probe_qa"],
                               max_tokens=2048, progress=False, cache_dir=False)  # fmt: skip


def test_probe_and_fact_tables_have_their_differences(bundled: ComparisonResult) -> None:
    probes = probe_table(bundled)
    overall = next(c for c in probes.frame.columns if c.startswith("overall") and "." not in c)
    rows = probes.differences[probes.differences["column"] == overall]
    assert len(rows) == 10  # 5 rows
    answers = bundled.answers.set_index(["case", "probe"])
    for row in rows.itertuples():
        a = answers[answers["summarizer"] == row.a]["exact"]
        b = answers[answers["summarizer"] == row.b]["exact"]
        assert row.n == len(a) == len(b)
        assert row.difference == pytest.approx((a - b.reindex(a.index)).mean())
    assert overall in differences_table(probes, columns=[overall])
    # a probe whose call failed in one condition is left out of that condition's pairs
    failed = bundled.answers.copy()
    failed.loc[failed.index[0], "exact"] = np.nan
    fewer = probe_table(dataclasses.replace(bundled, answers=failed)).differences
    assert fewer[fewer["column"] == overall]["n"].min() == len(a) - 1
    facts = fact_survival_table(bundled, ci=True)
    assert set(facts.differences["column"]) <= set(facts.frame.columns)
    assert "overall" in set(facts.differences["column"])
    assert "- overall: memorylab/extractive − memorylab/truncate +" in markdown_table(facts)


def test_strategies_are_paired_on_the_same_probes_and_facts() -> None:
    os.environ.setdefault("WORKSPACE_DIR", tempfile.mkdtemp())
    hunt = next(c for c in cases_from_transcripts() if c.id == "checkout-bug-hunt")
    start = dataclasses.replace(hunt, messages=hunt.messages[:240])
    compared: StrategyComparison = compare_strategies(
        start, ["summary", "keep_recent", "trim"], ["probe_qa"], context_length=4096,
        threshold=0.8, cache_dir=False, progress=False,
    )  # fmt: skip
    differences = compared.differences()
    assert list(differences.columns) == DIFFERENCE_COLUMNS
    probes = differences[differences["column"] == "probe QA"]
    assert len(probes) == 10  # 3 strategies and the bounds
    assert (probes["n"] == len(start.probes)).all()
    after = differences[differences["column"] == "facts after 1"]
    assert len(after) == 3  # the strategies alone follow facts
    facts = compared.facts[compared.facts["since"] == 0]
    for row in after.itertuples():
        texts = [set(zip(*[facts.loc[facts["strategy"] == label, k] for k in ("category", "fact")],
                         strict=True)) for label in (row.a, row.b)]  # fmt: skip
        assert 0 < row.n <= len(texts[0] & texts[1]) + 5  # the same facts (a few said twice)
        assert row.lo <= row.difference <= row.hi
    assert any(note.startswith("- facts after 1: ") for note in compared.notes())
