"""The replay against real agent runs: does it reproduce what memorylab's own Agent did?

Runs memorylab's ``Agent`` with a scripted model (tests/analysis/agent_runs.py: the extractive
and the scripted summarizer, one process or several with restarts, several windows and
thresholds, the compaction strategies run live: keep-recent, trim, clearing tool results and the
fact ledger; the turn in progress kept, as the Agent does by default, or not; a pinned task; a
cache-aware trigger), then replays each run from its files at the settings they record (the
strategy, the turn, the pins, the trigger; the table's ``strategy`` and ``turn`` columns):

* at the run's own settings: the replay must make the recorded number of compactions, every
  ``tokens_before`` within 2 % of the recorded one (the baseline is the live run's record);
* at other thresholds: the exact replay against a real rerun of the same scripted agent at that
  threshold (same tasks, same replies): the compaction counts must agree;
* the fast sweep (``sweep(fast=True)``, calibrated) at the same settings, with the error it
  states, against the same baselines ("exact": what it does not model, a strategy other than the
  summary, pins or a cache-aware trigger, it replays exactly); and the replay's time against the
  live run's time.

``--quick`` (the CI smoke run) runs two of the runs and always exits 0; the full run exits 1
when a check fails.

    python tests/benchmarks/bench_validation.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "analysis"))  # the agent runs the tests validate with

from agent_runs import QUICK_SPECS, SPECS, RunSpec, run_agent  # noqa: E402

from memorylab.analysis import memory_df, replay, sweep  # noqa: E402

MORE = (
    RunSpec("extractive-small-window", "memorylab/extractive", 1000, 0.8, tasks=40, seed=11,
            other_thresholds=(0.6, 0.9)),
    RunSpec("extractive-long", "memorylab/extractive", 8192, 0.9, sessions=3, tasks=60, seed=12,
            other_thresholds=(0.5, 0.7)),
    RunSpec("extractive-budget", "memorylab/extractive", 4096, 0.75, sessions=5, tasks=14,
            seed=13, summarizer_max_tokens=300, gap=timedelta(minutes=2),
            other_thresholds=(0.6, 0.95)),
    RunSpec("scripted-tokens", "memorylab/scripted", 3000, 2000, sessions=2, tasks=30, seed=14,
            other_thresholds=(1200, 2800)),
)  # fmt: skip
TOKENS_TARGET_PCT = 2.0


def _fmt(threshold: object) -> str:
    return f"{threshold:g}" if isinstance(threshold, float) else f"{threshold:,} tok"


def measure(spec: RunSpec, root: Path) -> tuple[list[list[str]], bool]:
    rows: list[list[str]] = []
    started = time.perf_counter()
    run = run_agent(spec, root / "recorded")
    live_seconds = time.perf_counter() - started
    frame = memory_df(run.folder)
    started = time.perf_counter()
    result = replay(frame, cache=False)
    replay_seconds = time.perf_counter() - started
    replayed = [int(e.tokens_before or 0) for e in result.events if e.ok]
    same_count = len(replayed) == run.compactions
    worst = (
        max(
            (100 * abs(a - b) / b for a, b in zip(replayed, run.tokens_before, strict=True)),
            default=0.0,
        )
        if same_count
        else float("inf")
    )
    thresholds = [spec.threshold, *spec.other_thresholds]
    fast = sweep(frame, thresholds=thresholds, fast=True)
    fast_counts = {
        row.threshold: f"{row.compactions} (±{fast.error['compactions']})"
        if row.mode == "fast"
        else f"{row.compactions} (exact)"
        for row in fast.frame.itertuples()
    }
    turn = "kept" if result.settings is not None and result.settings.keep_turn else "-"
    ok = same_count and worst <= TOKENS_TARGET_PCT
    rows.append(
        [
            spec.name,
            result.strategy,
            turn,
            spec.summarizer.removeprefix("memorylab/"),
            f"{spec.context_length:,}",
            _fmt(spec.threshold) + " (own)",
            str(spec.sessions - 1),
            f"{len(result.frame):,}",
            f"{run.compactions} (record)",
            str(result.compactions),
            f"{worst:.2f} %",
            fast_counts[spec.threshold],
            f"{replay_seconds / live_seconds:.2f}x",
            "PASS" if ok else "FAIL",
        ]
    )
    for other in spec.other_thresholds:
        started = time.perf_counter()
        rerun = run_agent(spec, root / f"rerun-{other}", threshold=other)
        rerun_seconds = time.perf_counter() - started
        started = time.perf_counter()
        what_if = replay(frame, threshold=other, cache=False)
        what_if_seconds = time.perf_counter() - started
        agrees = what_if.compactions == rerun.compactions
        ok &= agrees
        rows.append(
            [
                spec.name,
                what_if.strategy,
                turn,
                spec.summarizer.removeprefix("memorylab/"),
                f"{spec.context_length:,}",
                _fmt(other),
                str(spec.sessions - 1),
                f"{len(what_if.frame):,}",
                f"{rerun.compactions} (rerun)",
                str(what_if.compactions),
                "-",
                fast_counts[other],
                f"{what_if_seconds / rerun_seconds:.2f}x",
                "PASS" if agrees else "FAIL",
            ]
        )
    return rows, ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="CI smoke run: two runs, exits 0")
    args = parser.parse_args(argv)
    specs = QUICK_SPECS if args.quick else (*SPECS, *MORE)
    os.umask(0o077)  # private files, as memorylab writes them (no permission warnings)
    root = Path(tempfile.mkdtemp(prefix="memorylab-bench-validation-"))
    print(f"# replay vs the live Agent ({'quick' if args.quick else 'full'} run)")
    print(
        f"python {platform.python_version()} on {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} cores; {len(specs)} agent runs, each replayed at its own settings "
        "and at other thresholds (against a rerun)"
    )
    print()
    print(
        "| run | strategy | turn | summarizer | window | threshold | restarts | messages | "
        "live compactions | replayed | worst tokens_before diff | fast sweep (stated error) | "
        "replay / live time | verdict |"
    )
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|")
    ok = True
    try:
        for index, spec in enumerate(specs):
            rows, passed = measure(spec, root / str(index))
            ok &= passed
            for row in rows:
                print("| " + " | ".join(row) + " |")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print()
    print(
        f"target: the recorded compactions exactly and every tokens_before within "
        f"{TOKENS_TARGET_PCT:g} % at the run's own settings; the rerun's compactions at the "
        f"others: {'PASS' if ok else 'FAIL'}"
    )
    if not ok and not args.quick:
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
