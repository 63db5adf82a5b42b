"""What a compaction strategy's replay costs against today's summary replay of the same transcript.

The bundled long transcripts (``data/transcripts/*.jsonl``: users, assistants and tool results)
are replayed exactly (``replay(..., strategy=..., cache=False)``: every summary made again by the
offline extractive summarizer) at each threshold of a 4,096-token window, once with the summary
strategy (the baseline: what ``replay`` did before strategies) and once with each other strategy,
in rounds that alternate subject and baseline so a busy machine slows both alike.

Rows: the replay's wall time against the summary replay's, and the compactions each made. The
target (the issue's <= 1.2x) is on the time per compaction: what replaying a strategy costs the
engine. The whole replay's ratio is printed beside it, not targeted: it also holds how often the
strategy compacts, which is the strategy's behaviour on that transcript (keep-recent with 20
messages in a 4,096-token window keeps nearly a trigger's worth and compacts at almost every
check: a finding the sweep shows, not a cost of the replay). ``--quick`` (the CI smoke run) replays one
transcript's first 300 messages and always exits 0; the full run exits 1 when a target fails.

    python tests/benchmarks/bench_strategies.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from typing import Any

from memorylab.analysis import replay
from memorylab.compress import ClearToolResults, KeepRecent, Trim
from memorylab.compress._strategy import Strategy
from memorylab.transcripts import bundled_transcripts, load_transcript

TARGET = 1.2
WINDOW = 4096
STRATEGIES: tuple[Strategy, ...] = (
    KeepRecent(keep_messages=20),
    KeepRecent(keep_fraction=0.3),
    ClearToolResults(keep_tool_results=3),
    Trim(keep_fraction=0.5),
)


def _timed(messages: list[dict[str, Any]], threshold: float, strategy: Strategy | None) -> tuple[
        float, int]:  # fmt: skip
    started = time.perf_counter()
    result = replay(messages, threshold=threshold, context_length=WINDOW, strategy=strategy,
                    cache=False, progress=False)  # fmt: skip
    return time.perf_counter() - started, result.compactions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="CI smoke run: small, exits 0")
    args = parser.parse_args(argv)
    paths = bundled_transcripts()[:1] if args.quick else bundled_transcripts()
    thresholds = (0.8,) if args.quick else (0.6, 0.9)
    rounds = 1 if args.quick else 3
    print(f"# a strategy's replay against the summary replay ({'quick' if args.quick else 'full'})")
    print(f"python {platform.python_version()} on {platform.system()} {platform.machine()}, "
          f"{os.cpu_count()} cores; window {WINDOW:,} tokens, extractive summaries made fresh, "
          f"median of {rounds} alternating round(s)")  # fmt: skip
    print()
    print("| transcript | threshold | strategy | replay | summary replay | ratio | compactions "
          "(summary) | per compaction vs summary's | verdict |")  # fmt: skip
    print("|---|---:|---|---:|---:|---:|---:|---:|:---:|")
    ok = True
    for path in paths:
        messages = [{"role": m.role, "content": m.content} for m in load_transcript(path).messages]
        messages = messages[:300] if args.quick else messages
        for threshold in thresholds:
            _timed(messages, threshold, None)  # counts the tokens once (remembered) and warms up
            for strategy in STRATEGIES:
                mine: list[float] = []
                base: list[float] = []
                made = baseline_made = 0
                for _ in range(rounds):
                    seconds, made = _timed(messages, threshold, strategy)
                    mine.append(seconds)
                    seconds, baseline_made = _timed(messages, threshold, None)
                    base.append(seconds)
                subject, floor = statistics.median(mine), statistics.median(base)
                ratio = subject / floor
                per = (subject / max(made, 1)) / (floor / max(baseline_made, 1))
                passed = per <= TARGET
                ok &= passed
                print(f"| {path.stem} ({len(messages):,} msgs) | {threshold:.2f} | "
                      f"{strategy.describe()} | {subject:.2f} s | {floor:.2f} s | {ratio:.2f}x | "
                      f"{made} ({baseline_made}) | {per:.2f}x | "
                      f"{'PASS' if passed else 'FAIL'} |")  # fmt: skip
    print()
    print(f"target: a strategy's replay per compaction <= {TARGET}x the summary replay's, same "
          f"transcript: {'PASS' if ok else 'FAIL'}")  # fmt: skip
    return 0 if ok or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
