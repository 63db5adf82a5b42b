"""The replay against real runs of memorylab's own Agent (tests/analysis/agent_runs.py): at the
run's own settings it makes the recorded compactions with every tokens_before within 2 %; at
other thresholds it agrees with a rerun of the same scripted agent. The benchmark
tests/benchmarks/bench_validation.py prints the same checks as a table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_runs import SPECS, RunSpec, run_agent, validate

from memorylab.analysis import memory_df, sweep
from memorylab.compress import MIN_SUMMARY_TOKENS


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_replay_reproduces_the_run_and_its_reruns(spec: RunSpec, tmp_path: Path) -> None:
    checks = validate(spec, tmp_path)
    assert len(checks) == 1 + len(spec.other_thresholds)
    own = checks[0]
    assert own.live > 0, "the run should compact"
    assert own.restarts == spec.sessions - 1
    assert own.replayed == own.live and own.worst_tokens_pct is not None
    assert own.worst_tokens_pct <= 2.0
    for check in checks[1:]:
        assert check.replayed == check.live, check
    assert all(check.ok for check in checks)


def test_what_the_agent_records(tmp_path: Path) -> None:
    spec = SPECS[1]  # four sessions
    run = run_agent(spec, tmp_path)
    records = [
        json.loads(line) for line in (run.folder / "compactions.jsonl").read_text().splitlines()
    ]
    for record in records:
        extra = record["extra"]
        assert extra["checks"] == "model_call"
        # the summary shares its room with the turn kept beside it (what stays after it but
        # the static context and the summary entry)
        kept = record["tokens_after"] - extra["static_tokens"] - record["summary_tokens"]
        room = min(spec.summarizer_max_tokens, record["context_length"] * 85 // 200)
        assert kept > 0 and extra["summary_budget"] == max(MIN_SUMMARY_TOKENS, room - kept)
        assert extra["summarizer_max_tokens"] == spec.summarizer_max_tokens
        # after the summary: the static context and the turn in progress, kept (keep_turn)
        assert extra["keep_turn"] is True and extra["kept_turn"] >= 1
        assert extra["static_tokens"] < record["tokens_after"] - record["summary_tokens"]
        assert extra["token_model"] == "gpt-4o-mini" and extra["preload_max_tokens"] == 750
        assert extra["session_start"] <= record["time"]
    starts = {r["extra"]["session_start"] for r in records}
    assert len(starts) >= 2  # compactions in several processes, each naming its own start
    later = [r for r in records if r["extra"]["preload_tokens"] > 0]
    assert later and all(r["extra"]["preload_tokens"] <= 750 + 20 for r in later)


def test_the_sweep_row_of_the_recorded_setting_is_the_run(tmp_path: Path) -> None:
    """The issue's case: an Agent at 0.8 of a small window with the extractive summarizer. The
    sweep's row for 0.8 is the run's compaction count (exact replay); the fast sweep says how
    far it may be off, and is."""
    spec = RunSpec("small-window", "memorylab/extractive", 1000, 0.8, tasks=40, seed=11)
    run = run_agent(spec, tmp_path)
    frame = memory_df(run.folder)
    table = sweep(frame, thresholds=[0.6, 0.7, 0.9])
    row = table.frame[table.frame["recorded"]].iloc[0]
    assert row["threshold"] == 0.8 and row["mode"] == "replay"
    assert row["compactions"] == run.compactions > 10
    fast = sweep(frame, thresholds=[0.6, 0.7, 0.9], fast=True)
    fast_row = fast.frame[fast.frame["recorded"]].iloc[0]
    error = fast.error
    assert abs(int(fast_row["compactions"]) - run.compactions) <= max(1, 2 * error["compactions"])


@pytest.mark.parametrize(
    ("name", "why"),
    [("pinned-task", "pinned entries"), ("cache-aware", "a cache-aware trigger")],
)
def test_the_fast_sweep_says_what_it_does_not_model(name: str, why: str, tmp_path: Path) -> None:
    """A pinned task (kept by every compaction) and a cache-aware trigger (deferrals read off
    the checks' times) are not in the fast engine's model: a fast sweep of such a run replays
    every setting exactly, and its note says why."""
    spec = next(s for s in SPECS if s.name == name)
    frame = memory_df(run_agent(spec, tmp_path).folder)
    fast = sweep(frame, thresholds=[spec.threshold, *spec.other_thresholds], fast=True)
    assert set(fast.frame["mode"]) == {"replay"}
    assert fast.exact_because is not None and fast.exact_because.startswith(why)
    assert f"the fast mode does not model {why}" in fast.notes()[0]
    exact = sweep(frame, thresholds=[spec.threshold, *spec.other_thresholds], fast=False)
    assert exact.exact_because is None  # asked for exact replays: nothing to explain
    assert fast.frame["compactions"].tolist() == exact.frame["compactions"].tolist()
