"""The strategy lab (issue 38): memorylab's strategies against the peers' re-created, on the
bundled transcripts (and a long public one), and what a strategy's replay costs the engine.

**The lab's table.** ``compare_strategies`` runs every bundled transcript
(``data/transcripts/*.jsonl``) message by message through each strategy in an 8,192-token window
compacting at 0.8 (the offline extractive summarizer, the lexical reader, tokens counted and
priced as claude-sonnet-4-5): one row per strategy, the bounds included, with the probes
answered and the facts surviving 1, 3 and 5 compactions (95 % bootstrap intervals), the
compactions that took the turn in progress away (``task losses``), the tokens the model read,
the summarizer's input and the cost with and without prompt caching. Then the facts' survival
after 3 compactions by category, and the issue's criterion for each of memorylab's strategies:
>= 2x the seed's facts after 3 compactions, 0 task losses, no more tokens read than the seed's.
``--locomo PATH`` adds the same table on LoCoMo's conversations (snap-research/locomo: a LoCoMo
JSON file, or a folder of its ``locomo10_v2/<n>.json`` conversations; not bundled: its licence
is not memorylab's).

**The engine's cost.** Each strategy's replay (``replay(..., strategy=..., cache=False)``: every
summary made again) against the summary replay of the same transcript, at each threshold of a
4,096-token window, in rounds that alternate subject and baseline so a busy machine slows both
alike. The target (<= 1.2x) is on the time per compaction; the whole replay's ratio is printed
beside it, not targeted (it also holds how often the strategy compacts).

``--quick`` (the CI smoke run) runs the lab on the first transcript's first 150 messages in a
4,096-token window, the engine's cost on its first 300, and always exits 0; the full run exits 1 when the replay's target fails (the lab's
criterion is a finding, printed, not an exit code).

    python tests/benchmarks/bench_strategies.py [--quick] [--locomo PATH]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from memorylab.analysis import replay
from memorylab.compress import ClearToolResults, KeepRecent, Trim
from memorylab.compress._strategy import Strategy
from memorylab.evaluate import (
    MEMORYLAB_STRATEGIES,
    PEER_STRATEGIES,
    Case,
    StrategyComparison,
    cases_from_locomo,
    cases_from_transcripts,
    compare_strategies,
    markdown_table,
)
from memorylab.transcripts import bundled_transcripts, load_transcript

TARGET = 1.2
WINDOW = 4096
LAB_WINDOW = 8192
LAB_THRESHOLD = 0.8
PRICED_AS = "claude-sonnet-4-5"
SEED = "seed: summary"
STRATEGIES: tuple[Strategy, ...] = (
    KeepRecent(keep_messages=20),
    KeepRecent(keep_fraction=0.3),
    ClearToolResults(keep_tool_results=3),
    Trim(keep_fraction=0.5),
)
PERCENT = ["probe QA", "facts after 1", "facts after 3", "facts after 5"]


def lab(cases: list[Case], window: int) -> StrategyComparison:
    """Every strategy, peers' and memorylab's, over ``cases``."""
    logging.getLogger("memorylab").setLevel(logging.ERROR)  # clearing's "nothing to clear"
    return compare_strategies(
        cases, {**PEER_STRATEGIES, **MEMORYLAB_STRATEGIES}, ["probe_qa"], context_length=window,
        threshold=LAB_THRESHOLD, model=PRICED_AS, cache_dir=False, progress=False,
    )  # fmt: skip


def criterion(table: Any) -> list[str]:
    """The issue's criterion for each of memorylab's strategies, measured against the seed's."""
    seed = table.loc[SEED]
    lines = []
    for label in MEMORYLAB_STRATEGIES:
        row = table.loc[label]
        ratio = row["facts after 3"] / seed["facts after 3"] if seed["facts after 3"] else None
        checks = {
            f">= 2x the seed's facts after 3 ({'n/a' if ratio is None else f'{ratio:.2f}x'})":
                ratio is not None and ratio >= 2,
            f"0 task losses ({row['task losses']:.0f})": row["task losses"] == 0,
            f"tokens read <= the seed's ({row['tokens read'] / seed['tokens read']:.3f}x)":
                row["tokens read"] <= seed["tokens read"],
        }  # fmt: skip
        verdict = "PASS" if all(checks.values()) else "FAIL"
        shown = "; ".join(f"{text} {'yes' if ok else 'no'}" for text, ok in checks.items())
        lines.append(f"- {label}: {verdict}: {shown}")
    return lines


def print_lab(title: str, compared: StrategyComparison) -> None:
    table = compared.table()
    print(f"## {title}")
    print()
    print(markdown_table(table, percent=PERCENT))
    print()
    survival = compared.survival()
    after = survival[survival["summaries"] == 3].pivot(
        index="strategy", columns="category", values="survival"
    )
    after = after.reindex([label for label in table.index if label in after.index])
    order = [c for c in ("command", "path", "name", "number", "decision", "all") if c in after]
    print("Facts surviving 3 compactions, by category (the lab's extraction):")
    print()
    print(markdown_table(after[order], percent=order))
    print()
    print("The issue's criterion, measured:")
    print("\n".join(criterion(table)))
    print()


def locomo_cases(path: Path) -> list[Case]:
    """LoCoMo's conversations: a LoCoMo JSON file, or a folder of ``<n>.json`` conversations
    (the ``locomo10_v2`` release: conversations without questions)."""
    if path.is_file():
        return cases_from_locomo(path, split="conversation")
    samples = [
        {"sample_id": f"locomo-{file.stem}", "conversation": json.loads(file.read_text()),
         "qa": []}
        for file in sorted(path.glob("*.json"))
    ]  # fmt: skip
    joined = Path(os.environ.get("TMPDIR", "/tmp")) / "memorylab-locomo-conversations.json"
    joined.write_text(json.dumps(samples))
    return cases_from_locomo(joined, split="conversation")


def _timed(messages: list[dict[str, Any]], threshold: float, strategy: Strategy | None) -> tuple[
        float, int]:  # fmt: skip
    started = time.perf_counter()
    result = replay(messages, threshold=threshold, context_length=WINDOW, strategy=strategy,
                    cache=False, progress=False)  # fmt: skip
    return time.perf_counter() - started, result.compactions


def timing(quick: bool) -> bool:
    """The engine's cost table; whether every row meets the target."""
    paths = bundled_transcripts()[:1] if quick else bundled_transcripts()
    thresholds = (0.8,) if quick else (0.6, 0.9)
    rounds = 1 if quick else 3
    print(f"## A strategy's replay against the summary replay (window {WINDOW:,}, median of "
          f"{rounds} alternating round(s))")  # fmt: skip
    print()
    print("| transcript | threshold | strategy | replay | summary replay | ratio | compactions "
          "(summary) | per compaction vs summary's | verdict |")  # fmt: skip
    print("|---|---:|---|---:|---:|---:|---:|---:|:---:|")
    ok = True
    for path in paths:
        messages = [{"role": m.role, "content": m.content} for m in load_transcript(path).messages]
        messages = messages[:300] if quick else messages
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
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="CI smoke run: small, exits 0")
    parser.add_argument("--locomo", type=Path, help="LoCoMo's JSON file or conversations folder")
    args = parser.parse_args(argv)
    cases = cases_from_transcripts()
    window = WINDOW if args.quick else LAB_WINDOW
    if args.quick:
        cases = [replace(cases[0], messages=cases[0].messages[:150])]
    print(f"# the strategy lab ({'quick' if args.quick else 'full'})")
    print(f"python {platform.python_version()} on {platform.system()} {platform.machine()}, "
          f"{os.cpu_count()} cores; window {window:,} tokens, compacting at {LAB_THRESHOLD}, "
          f"extractive summaries, the lexical reader, tokens and prices of {PRICED_AS}")  # fmt: skip
    print()
    started = time.perf_counter()
    named = ", ".join(f"{case.id} ({len(case.messages):,} msgs)" for case in cases)
    print_lab(f"The bundled transcripts: {named}", lab(cases, window))
    if args.locomo is not None:
        public = locomo_cases(args.locomo)
        named = f"{len(public)} conversations, {sum(len(c.messages) for c in public):,} msgs"
        print_lab(f"LoCoMo ({named})", lab(public, window))
    print(f"(the lab: {time.perf_counter() - started:.0f} s)")
    print()
    ok = timing(args.quick)
    return 0 if ok or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
