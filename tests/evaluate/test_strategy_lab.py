"""The strategy lab (issue 38): what each strategy's runs lose (the turn in progress, facts by
generation) read off the replay, the peers' strategies re-created as presets, the one table with
intervals, the benchmark that prints it and the tuner's pickers."""

from __future__ import annotations

import logging
import math
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memorylab.analysis import replay
from memorylab.compress import ClearToolResults, KeepRecent, Trim, strategy_names
from memorylab.evaluate import (
    MEMORYLAB_STRATEGIES,
    PEER_STRATEGIES,
    Case,
    Probe,
    StrategyComparison,
    StrategyPreset,
    cases_from_messages,
    compare_strategies,
    markdown_table,
)

WINDOW = 2000
THRESHOLD = 0.5  # compacts at 1,000 tokens: a turn (a question, a call, a result) is ~400
BENCH = Path(__file__).parents[1] / "benchmarks" / "bench_strategies.py"


def _turns(count: int = 12) -> list[dict[str, str]]:
    """``count`` turns of a user's question, the assistant's tool call and the tool's long
    result: compactions fire right after a tool result, with the turn in progress the newest
    three messages. The first question names a path and a number, facts to follow."""
    messages = []
    for turn in range(count):
        where = "/srv/shop/checkout.py, which failed 17 times" if turn == 0 else f"step {turn}"
        messages += [
            {"role": "user", "content": f"Question {turn}: why does the checkout fail at {where}?"},
            {"role": "assistant", "content": f"Calling tools: grep_logs(step={turn})"},
            {"role": "tool", "content": f"log {turn}: " + " ".join(f"line{i}" for i in range(150))},
        ]
    return messages


def _case() -> Case:
    probes = [
        Probe("q1", None, "Which file does the checkout fail at?", "/srv/shop/checkout.py", "path"),
        Probe("q2", None, "How many times did the checkout fail?", "17", "number"),
    ]
    (case,) = cases_from_messages(_turns(), id="turns", probes=probes)
    return case


@pytest.fixture(scope="module")
def lab() -> Iterator[StrategyComparison]:
    logging.getLogger("memorylab").setLevel(logging.ERROR)  # clearing's "nothing to clear"
    try:
        yield compare_strategies(
            _case(),
            {**PEER_STRATEGIES, "summary, turn kept": "summary",
             "trim 2, turn kept": Trim(keep_messages=2)},
            ["probe_qa"],
            context_length=WINDOW,
            threshold=THRESHOLD,
            model="claude-sonnet-4-5",
            cache_dir=False,
            progress=False,
        )  # fmt: skip
    finally:
        logging.getLogger("memorylab").setLevel(logging.NOTSET)


def test_the_seeds_summary_loses_the_task_and_keep_turn_does_not(lab: StrategyComparison) -> None:
    runs = lab.runs.set_index("strategy")
    seed, kept = runs.loc["seed: summary"], runs.loc["summary, turn kept"]
    assert not seed["keep_turn"] and kept["keep_turn"]
    assert seed["compactions"] > 0 and kept["compactions"] > 0
    # every compaction of the seed fired after a tool result and summarized its question
    assert seed["task_losses"] == seed["compactions"]
    assert kept["task_losses"] == 0
    # trimming to the newest 2 messages drops the question (3 messages a turn) unless kept
    assert runs.loc["trim 2, turn kept", "task_losses"] == 0
    memory = lab.comparison.summaries.set_index("summarizer")["text"]
    last_question = _turns()[-3]["content"]
    assert last_question in memory["summary, turn kept"]


def test_task_losses_are_what_the_replay_did() -> None:
    """The count is read off the compactions the replay carried out: trimming to one message
    without the turn kept loses it at every compaction that had more than one message of it."""
    memory = compare_strategies(
        _case(), {"trim 1": StrategyPreset(Trim(keep_messages=1), keep_turn=False)},
        ["fact_recall"], context_length=WINDOW, threshold=THRESHOLD, cache_dir=False,
        progress=False, bounds=False,
    )  # fmt: skip
    run = memory.runs.iloc[0]
    direct = replay(_turns(), strategy=Trim(keep_messages=1), keep_turn=False,
                    context_length=WINDOW, threshold=THRESHOLD, checks="message",
                    restarts=False)  # fmt: skip
    assert run["compactions"] == direct.compactions > 0
    assert 0 < run["task_losses"] <= run["compactions"]


def test_facts_are_followed_through_what_each_context_holds(lab: StrategyComparison) -> None:
    facts = lab.facts
    assert set(lab.runs.columns) >= {"survival_1", "survival_3", "survival_5", "task_losses"}
    path = facts[(facts["fact"] == "/srv/shop/checkout.py") & (facts["since"] == 0)]
    kept = path.set_index("strategy")["kept"]
    assert kept["seed: summary"]  # the extractive summary keeps paths
    assert not kept["inspect_ai: trim"]  # trim dropped the message: the path left the context
    assert (facts["survived"] <= facts["kept"]).all()
    runs = lab.runs.set_index("strategy")
    for column in ("survival_1", "survival_3"):  # NaN: no fact followed that far
        assert runs[column].dropna().between(0, 1).all() and runs[column].notna().sum() >= 4
    assert runs.loc["seed: summary", "survival_1"] > runs.loc["inspect_ai: trim", "survival_1"]
    by_category = lab.survival()
    seed = by_category[(by_category["strategy"] == "seed: summary")
                       & (by_category["category"] == "path")]  # fmt: skip
    assert seed["survival"].iloc[0] == 1.0


def test_the_peers_presets_build_and_run(lab: StrategyComparison) -> None:
    assert list(PEER_STRATEGIES) == [
        "seed: summary", "deepagents: summary + keep 20", "Letta: keep 30 %",
        "inspect_ai: trim", "Anthropic: clear tool uses",
    ]  # fmt: skip
    for preset in PEER_STRATEGIES.values():
        assert preset.source and preset.differs and preset.keep_turn is False
    assert PEER_STRATEGIES["deepagents: summary + keep 20"].strategy == KeepRecent(keep_messages=20)
    assert PEER_STRATEGIES["Anthropic: clear tool uses"].strategy == ClearToolResults(
        keep_tool_results=3
    )
    assert all(preset.keep_turn for preset in MEMORYLAB_STRATEGIES.values())
    runs = lab.runs.set_index("strategy")
    assert set(PEER_STRATEGIES) <= set(runs.index)
    assert not runs.loc[list(PEER_STRATEGIES), "keep_turn"].any()
    # a list of presets is labelled by what they run
    listed = compare_strategies(
        _case(), [PEER_STRATEGIES["inspect_ai: trim"]], ["fact_recall"], context_length=WINDOW,
        threshold=THRESHOLD, cache_dir=False, progress=False, bounds=False,
    )  # fmt: skip
    assert listed.runs["strategy"].tolist() == ["trim(keep_fraction=0.5), keep_turn=False"]


def test_the_table_has_a_row_per_strategy_with_intervals(lab: StrategyComparison) -> None:
    table = lab.table()
    assert list(table.index) == [*PEER_STRATEGIES, "summary, turn kept", "trim 2, turn kept",
                                 "memorylab/full", "memorylab/none"]  # fmt: skip
    for column in ("probe QA", "facts after 1", "facts after 3"):
        row = table.loc["seed: summary"]
        assert row[f"{column}.lo"] <= row[column] <= row[f"{column}.hi"]
    assert table.loc["seed: summary", "task losses"] > 0
    assert math.isnan(table.loc["memorylab/full", "task losses"])  # a bound runs nothing
    # prompt caching at claude-sonnet-4-5's prices: never more than every token at full price,
    # less where a prefix of 1,024 tokens or more stays the same from one call to the next
    cached, uncached = table["cost cached (USD)"].dropna(), table["cost uncached (USD)"].dropna()
    assert (cached <= uncached).all() and (cached < uncached).any()
    assert "facts after 3" in markdown_table(table)
    frame = lab.frame.set_index("strategy")
    assert frame.loc["seed: summary", "task_losses"] == table.loc["seed: summary", "task losses"]


@pytest.mark.slow
def test_the_benchmark_prints_the_lab_table(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(BENCH), "--quick"], cwd=tmp_path, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    header = next(line for line in result.stdout.splitlines() if line.startswith("| strategy"))
    for column in ("probe QA", "facts after 1", "facts after 3", "facts after 5", "task losses",
                   "tokens read", "summarizer input", "cost cached", "cost uncached"):  # fmt: skip
        assert column in header
    assert "| seed: summary |" in result.stdout


def test_the_tuner_offers_every_strategy_and_the_turn() -> None:
    pytest.importorskip("ipywidgets")
    from memorylab.widgets import ThresholdTuner

    tuner = ThresholdTuner(_turns(), context_length=WINDOW, threshold=THRESHOLD)
    offered = {label.split("(")[0] for label, _ in tuner.strategy_picker.options[1:]}
    assert offered == set(strategy_names())
    assert tuner.keep_turn is None and tuner.turn_picker.label == "the run's own"
    tuner.strategy_picker.value = "summary()"
    tuner.turn_picker.value = "seed"
    assert tuner.result is not None and tuner.result.settings is not None
    assert tuner.result.settings.keep_turn is False
    seed = tuner.result.compactions
    tuner.turn_picker.value = "keep"
    assert tuner.result.settings.keep_turn is True and tuner.result.compactions > 0
    assert seed > 0
