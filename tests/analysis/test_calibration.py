"""Trigger calibration (issue 29, part 1): the estimate against the provider's count.

* a live Agent against the fake server, which bills 20 % more input than memorylab estimates:
  with ``Trigger(count="reported")`` it compacts earlier than with the estimate, on time
  against the billed count where the estimate fires late; the replay of the reported run
  applies the recorded drift, says so, and compacts as often as the run did;
* ``calibration_df``, ``calibration_summary`` and ``compaction_timing_df`` on those runs, on a
  memory-only agent and on hand-written records (an early compaction, one without usage);
* ``plot_calibration`` draws the calls and the line billed = estimate.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import matplotlib
import pandas as pd
import pytest

from fakes.openai_server import FakeOpenAIServer, FakeRequest, Reply
from memorylab.agent import Agent
from memorylab.analysis import (
    calibration_audit,
    calibration_df,
    calibration_summary,
    compaction_timing_df,
    plot_calibration,
    replay,
    run_settings,
)
from memorylab.analysis._calibration import (
    CALIBRATION_COLUMNS,
    CALIBRATION_SUMMARY_COLUMNS,
    COMPACTION_TIMING_COLUMNS,
)
from memorylab.compress._policy import Trigger
from memorylab.memory._store import MemoryStore

matplotlib.use("Agg")

WINDOW, FRACTION, OVER = 3000, 0.8, 1.2  # the fake provider bills 20 % above the estimate


def _run(name: str, count: str, *, persistent: bool = True, tasks: int = 40) -> Agent:
    """An Agent whose provider reports ``ceil(1.2 * estimate)`` input tokens for each call,
    run through ``tasks`` tasks with a step clock (same tokens on every run)."""
    holder: dict[str, Agent] = {}

    def script(request: FakeRequest) -> Reply:
        estimate = holder["agent"].short_memory.token_count()  # what the call sends, estimated
        return Reply("Noted, thanks.", prompt_tokens=math.ceil(OVER * estimate),
                     completion_tokens=5)  # fmt: skip

    base = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    ticks = iter(range(10**6))
    with FakeOpenAIServer(script) as server:
        agent = Agent(
            name,
            model_name="openai/fake-model",
            context_length=WINDOW,
            compression_threshold=Trigger(fraction=FRACTION, count=count),
            summarizer_model="memorylab/extractive",
            clock=lambda: base + timedelta(seconds=7 * next(ticks)),
            persistent_memory=persistent,
            llm_args={"api_base": server.base_url, "api_key": "x"},
            retries=0,
            timeout=10,
        )
        holder["agent"] = agent
        for i in range(tasks):
            agent.run(
                f"Step {i}: the table events_{i} has {1000 + 37 * i} rows; "
                + "we checked the partitions and the schema again. " * 3
            )
    store = agent.short_memory.store
    if store is not None:
        store.close()
    return agent


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The same tasks with the trigger on the estimate and on the reported usage."""
    workspace = tmp_path_factory.mktemp("calibration")
    out = {}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WORKSPACE_DIR", str(workspace))
        for count in ("estimated", "reported"):
            agent = _run(f"Metered_{count}", count)
            out[count] = agent.short_memory.memory_md_path.parent  # type: ignore[union-attr]
    out["workspace"] = workspace
    return out


def _compacting_calls(folder: Path) -> list[int]:
    return [r["call"] for r in MemoryStore(folder / "MEMORY.md").usage_records() if r["compacted"]]


def test_the_reported_trigger_compacts_earlier_than_the_estimate(runs: dict[str, Path]) -> None:
    estimated, reported = _compacting_calls(runs["estimated"]), _compacting_calls(runs["reported"])
    assert estimated and reported
    assert reported[0] < estimated[0]  # the billed count crosses the trigger first
    assert len(reported) >= len(estimated)
    records = MemoryStore(runs["reported"] / "MEMORY.md").records()
    assert all(r["extra"]["trigger"] == {"fraction": FRACTION, "count": "reported"}
               for r in records)  # fmt: skip
    assert all(r["extra"]["counted_tokens"] > r["tokens_before"] for r in records)
    settings = run_settings(str(runs["reported"]))
    assert settings.trigger == Trigger(fraction=FRACTION, count="reported")
    assert settings.origin["trigger"] == "recorded"
    assert "counting the reported usage" in settings.describe()


def test_the_replay_of_a_reported_run_applies_its_drift(runs: dict[str, Path]) -> None:
    live = len(_compacting_calls(runs["reported"]))
    result = replay(str(runs["reported"]))
    assert result.compactions == live
    assert result.drift_applied and all(
        r == pytest.approx(OVER, abs=0.02) for r in result.drift_applied
    )
    (note,) = result.notes()
    assert "recorded drift" in note and "+20" in note
    plain = replay(str(runs["estimated"]))
    assert plain.compactions == len(_compacting_calls(runs["estimated"]))
    assert plain.drift_applied is None and plain.notes() == []
    # a what-if at another threshold counts the estimate, as the threshold says
    assert replay(str(runs["reported"]), threshold=0.7).drift_applied is None


def test_calibration_df_and_its_summary(runs: dict[str, Path]) -> None:
    frame = calibration_df(runs["workspace"])
    assert list(frame.columns) == [name for name, _ in CALIBRATION_COLUMNS]
    assert {str(c): str(d) for c, d in frame.dtypes.items()} == dict(CALIBRATION_COLUMNS)
    assert sorted(frame["agent"].unique()) == ["Metered_estimated", "Metered_reported"]
    mine = frame[frame["agent"] == "Metered_estimated"]
    assert mine["call"].tolist() == list(range(1, 41)) and set(mine["session"]) == {0}
    usage = MemoryStore(runs["estimated"] / "MEMORY.md").usage_records()
    assert mine["estimated_tokens"].tolist() == [r["estimated_tokens"] for r in usage]
    assert mine["input_tokens"].tolist() == [math.ceil(OVER * r["estimated_tokens"])
                                             for r in usage]  # fmt: skip
    assert mine["drift"].between(0.19, 0.23).all()
    assert mine["cached_tokens"].isna().all()  # the fake provider reported no cache: NA, not 0
    assert mine["compacted"].sum() == len(_compacting_calls(runs["estimated"]))
    summary = calibration_summary(frame)
    assert list(summary.columns) == [name for name, _ in CALIBRATION_SUMMARY_COLUMNS]
    (row,) = summary.to_dict("records")
    assert row["model"] == "openai/fake-model" and row["calls"] == row["reported_calls"] == 80
    assert row["median_drift"] == pytest.approx(0.2, abs=0.01)
    assert 0.2 <= row["p90_drift"] <= 0.23 and row["undercount_share"] == 1.0


def test_compaction_timing_against_the_billed_count(runs: dict[str, Path]) -> None:
    late = compaction_timing_df(runs["estimated"])
    assert list(late.columns) == [name for name, _ in COMPACTION_TIMING_COLUMNS]
    assert late["call"].tolist() == _compacting_calls(runs["estimated"])
    assert set(late["timing"]) == {"late"} and (late["calls_late"] > 0).all()
    assert (late["trigger_tokens"] == math.ceil(FRACTION * WINDOW)).all()
    assert (late["count"] == "estimated").all()
    assert (late["counted_tokens"] == late["estimated_tokens"]).all()
    assert (late["billed_tokens"] > late["trigger_tokens"]).all()
    assert (late["calls_late"] == late["call"] - late["first_billed_call"]).all()
    on_time = compaction_timing_df(runs["reported"])
    assert set(on_time["timing"]) == {"on time"} and (on_time["calls_late"] == 0).all()
    assert (on_time["count"] == "reported").all()
    assert (on_time["counted_tokens"] >= on_time["trigger_tokens"]).all()


def test_a_memory_only_agent_is_read_from_its_records() -> None:
    agent = _run("InMemory", "estimated", persistent=False)
    frame = calibration_df(agent)
    assert frame["call"].tolist() == list(range(1, 41))
    assert frame["workspace"].isna().all() and set(frame["agent"]) == {"InMemory"}
    assert calibration_df(agent.usage_records)["input_tokens"].tolist() == (
        frame["input_tokens"].tolist()
    )
    timing = compaction_timing_df(agent)
    assert len(timing) == sum(e.ok for e in agent.compaction_events) >= 1
    assert set(timing["timing"]) == {"late"}


def _hand_written(workspace: Path) -> Path:
    """Two processes: S1 with two calls (billed 25 % and 20 % above the estimate) and then a
    compaction at 700 estimated tokens (trigger 1,000); S2 compacted with no usage recorded."""
    store = MemoryStore.for_agent("Hand", workspace)
    store.ensure("Hand_conversation", datetime(2026, 1, 1, tzinfo=UTC))
    base = {"kind": "model_call", "agent": "Hand", "model": "m", "tool_tokens": 0}
    for call, (estimated, billed, compacted) in enumerate(
        [(400, 500, False), (500, 600, False), (300, 360, True)], 1
    ):
        store.append_usage({**base, "session_start": "S1", "call": call, "compacted": compacted,
                            "time": f"2026-01-01T00:0{call}:00+00:00", "checked_tokens": None,
                            "estimated_tokens": estimated, "input_tokens": billed,
                            "output_tokens": 3, "cached_tokens": None,
                            "cache_write_tokens": None, "reasoning_tokens": None})  # fmt: skip
    for when, session in (("2026-01-01T00:02:30+00:00", "S1"), ("2026-01-02T00:00:00+00:00",
                                                                 "S2")):  # fmt: skip
        store.append_record({"kind": "compaction", "time": when, "archive": f"a-{session}",
                             "tokens_before": 700, "threshold": 0.5, "context_length": 2000,
                             "extra": {"session_start": session}})  # fmt: skip
    return store.paths.folder


def test_an_early_compaction_and_one_without_usage(tmp_path: Path) -> None:
    timing = compaction_timing_df(_hand_written(tmp_path / "ws"))
    early, unknown = timing.to_dict("records")
    # billed at the check: 700 * 1.2 = 840 < 1,000; the billed input grew (840 - 500) / 2 = 170
    # a call since the segment began, so it would have crossed ceil(160 / 170) = 1 call later
    assert (early["call"], early["trigger_tokens"], early["billed_tokens"]) == (3, 1000, 840)
    assert early["drift"] == pytest.approx(0.2) and early["timing"] == "early"
    assert early["calls_late"] == -1 and pd.isna(early["first_billed_call"])
    assert early["session"] == 0
    assert unknown["timing"] == "unknown" and pd.isna(unknown["call"])
    assert unknown["trigger_tokens"] == 1000 and unknown["estimated_tokens"] == 700
    frame = calibration_df(tmp_path / "ws")
    assert frame["drift"].tolist() == pytest.approx([0.25, 0.2, 0.2])


def test_plot_calibration_draws_each_call_and_the_line(runs: dict[str, Path]) -> None:
    frame = calibration_df(runs["workspace"])
    axes = plot_calibration(frame)
    (points,) = axes.collections  # one model
    assert len(points.get_offsets()) == len(frame)
    labels = [t.get_text() for t in axes.get_legend().get_texts()]
    assert labels[0].startswith("openai/fake-model: median drift +20") and labels[-1] == (
        "billed = estimate"
    )
    assert axes.get_xlabel() == "memorylab's estimate (tokens)"
    empty = plot_calibration(frame.iloc[0:0])
    assert empty.get_legend() is None
    import matplotlib.pyplot as plt

    plt.close("all")


def test_the_notes_and_table_say_it_in_words(runs: dict[str, Path]) -> None:
    audit = calibration_audit(runs["estimated"])  # the audit result (issue 37)
    timing = audit.frame
    assert timing.equals(compaction_timing_df(runs["estimated"]))
    by_model = calibration_summary(calibration_df(runs["estimated"]))
    row = audit.summary.iloc[0]  # one row per agent, adding up to the notes (issue 41)
    assert (row["agent"], row["model"]) == ("Metered_estimated", by_model["model"].iloc[0])
    assert row["median_drift"] == by_model["median_drift"].iloc[0]
    assert (row["compactions"], row["late"]) == (len(timing), len(timing))
    model, compactions = audit.notes()
    assert model.startswith("openai/fake-model: the estimate undercounted 40 of 40 calls")
    assert "median drift +20" in model
    assert compactions.startswith(f"{len(timing)} compactions of 1 agent against the billed")
    assert f"{len(timing)} late" in compactions and "0 on time, 0 early (" in compactions
    table = audit.text()
    assert list(table.columns)[:3] == ["agent", "process", "time"]
    assert table["timing"].tolist() == ["late"] * len(timing)
    assert all(v.startswith("+") for v in table["calls late"])
    assert table["trigger (tokens)"].tolist() == ["2,400"] * len(timing)
    assert audit.text("summary")["median drift"].str.startswith("+20").all()
    assert calibration_audit([]).notes() == ["No agent was read: nothing to compare."]
