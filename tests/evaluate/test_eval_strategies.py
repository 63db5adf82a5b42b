"""compare_strategies: each case's whole history run through each strategy in a window, the probes
asked of what remains, what each run cost, against the replay that runs the same strategy."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace

import pytest

from memorylab.analysis import replay
from memorylab.compress import ClearToolResults, KeepRecent, Trim
from memorylab.errors import InvalidSetting
from memorylab.evaluate import Case, cases_from_transcripts, probe_table, summary_table
from memorylab.evaluate._strategies import (
    RUN_COLUMNS,
    StrategyComparison,
    StrategyMemory,
    compare_strategies,
)
from memorylab.transcripts import bundled_transcripts

WINDOW = 4096


def _case() -> Case:
    """The first 360 of checkout-bug-hunt's 721 messages (the probes of the facts planted later
    are unanswerable for every strategy alike: the bounds show it)."""
    (case,) = cases_from_transcripts(bundled_transcripts()[0])
    return replace(case, messages=case.messages[:360])


@pytest.fixture(scope="module")
def compared() -> Iterator[StrategyComparison]:
    case = _case()
    logging.getLogger("memorylab").setLevel(logging.ERROR)  # clearing's "nothing to clear"
    try:
        yield compare_strategies(
            case,
            {"summary": "summary", "keep 30 %": KeepRecent(keep_fraction=0.3),
             "trim": Trim(), "clear": ClearToolResults()},
            ["probe_qa", "fact_recall"],
            context_length=WINDOW,
            threshold=0.8,
            cache_dir=False,
            progress=False,
        )  # fmt: skip
    finally:
        logging.getLogger("memorylab").setLevel(logging.NOTSET)


def test_each_strategy_and_the_bounds_get_a_row(compared: StrategyComparison) -> None:
    labels = ["summary", "keep 30 %", "trim", "clear", "memorylab/full", "memorylab/none"]
    assert compared.frame["strategy"].tolist() == labels
    assert list(compared.runs.columns) == list(RUN_COLUMNS)
    assert compared.runs["strategy"].tolist() == labels[:4]  # the bounds run nothing
    table = summary_table(compared.comparison)
    assert table.bounds == {"ceiling": "memorylab/full", "floor": "memorylab/none"}
    by_category = probe_table(compared.comparison).frame
    assert "overall (n=45)" in by_category.columns
    full = by_category.loc["memorylab/full", "overall (n=45)"]
    assert all(by_category.loc[label, "overall (n=45)"] <= full + 1e-9 for label in labels[:3])


def test_a_run_is_the_replay_of_the_same_strategy(compared: StrategyComparison) -> None:
    case = _case()
    messages = [{"role": m["role"], "content": m["content"]} for m in case.messages]
    direct = replay(messages, strategy=Trim(), context_length=WINDOW, threshold=0.8,
                    checks="message", restarts=False)  # fmt: skip
    run = compared.runs.set_index("strategy").loc["trim"]
    assert run["compactions"] == direct.compactions > 0
    assert run["tokens_read"] == direct.total_input_tokens
    assert run["summarizer_calls"] == 0  # trim calls no model
    memory = compared.comparison.summaries.set_index("summarizer").loc["trim", "text"]
    assert memory == direct.final_context
    summary = compared.runs.set_index("strategy").loc["summary"]
    assert summary["summarizer_calls"] == summary["compactions"] > 0


def test_a_strategy_that_cannot_shrink_the_context_is_flagged(
    compared: StrategyComparison,
) -> None:
    """Clearing alone runs out of tool results to clear: the context grows past the window,
    and the run says so (its memory is one no model could have read)."""
    runs = compared.runs.set_index("strategy")
    assert runs.loc["clear", "over_window"] > 0
    assert runs.loc["clear", "peak_context_tokens"] > WINDOW
    assert runs.loc["summary", "over_window"] == 0 and runs.loc["trim", "over_window"] == 0


def test_bad_input() -> None:
    case = _case()
    with pytest.raises(InvalidSetting, match="at least one strategy"):
        compare_strategies(case, [], context_length=WINDOW)
    with pytest.raises(InvalidSetting, match="unknown strategy 'nope'"):
        compare_strategies(case, ["nope"], context_length=WINDOW)
    with pytest.raises(InvalidSetting, match="leave executor out"):
        compare_strategies(case, ["trim"], context_length=WINDOW, executor=object())
    with pytest.raises(InvalidSetting, match="context_length"):
        StrategyMemory("trim", context_length=0)


def test_recall_mode_gives_each_probe_the_archived_messages_for_its_question() -> None:
    """The reader gets the memory plus the messages that best match each question among those
    that left it: with nothing in memory (the floor), recall alone answers probes."""
    from memorylab.evaluate import ProbeQAScorer

    case = _case()
    plain, recalled = ProbeQAScorer(), ProbeQAScorer(recall_k=5)
    assert recalled.name == "probe_qa_recall" and "recall_k=5" in repr(recalled)
    compared = compare_strategies(
        case, {"trim": Trim()}, [plain, recalled], context_length=WINDOW, threshold=0.8,
        cache_dir=False, progress=False,
    )  # fmt: skip
    table = compared.frame.set_index("strategy")
    for label in ("trim", "memorylab/none"):
        assert table.loc[label, "probe_qa_recall.exact"] >= table.loc[label, "probe_qa.exact"]
    assert table.loc["memorylab/none", "probe_qa.exact"] == 0
    assert table.loc["memorylab/none", "probe_qa_recall.exact"] > 0.1
    by_category = probe_table(compared.comparison, "probe_qa_recall.exact")
    assert "overall (n=45)" in by_category.frame.columns
