"""How the cost of the audits (issue 29) grows with a run's messages and compactions, against
``memory_df`` of the same workspace (the named baseline, measured in the same process).

Each workspace is one Agent's run, made here: a scripted model that reports usage as a provider
would (input counted with another tokenizer and a per-message overhead), a 4,096-token window,
compaction at 0.8 by the offline extractive summarizer, so it compacts about every 45 messages.
Operations: ``calibration_df`` + ``compaction_timing_df`` (usage.jsonl against the records),
``lineage_df``, ``fact_survival_df(max_summaries=5)`` (the report's bound; unbounded it grows with
facts times compactions, and says so), ``compaction_costs_df`` (recorded usage, the cache model)
and the report's whole build (``build_report``). The table gives each one's time (the faster of
two runs), its ratio to ``memory_df`` and its time per message against the next smaller size.

Targets: linear: per message, at most 1.5x at the largest size against the next smaller one
(the report's own linearity target is bench_scale's); and ``fact_survival_df(max_summaries=5)``
at most 30x ``memory_df`` of the same run at 10,000 messages (issue 37: each summary and each
fact prepared for matching once; it was 146x), the ratio row after the table, both timed in this
process. ``--quick`` (CI's smoke run: 400 and 1,600 messages) always exits 0; the full run
(2,000, 10,000, 50,000 messages; ~10 min on 2 cores) exits 1 when a target fails; ``--sizes``
runs other sizes (``--sizes 10000``: the ratio's run alone).

    python tests/benchmarks/bench_audits.py [--quick | --sizes N [N ...]]
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import random
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

TARGET = 1.5
FACTS_TARGET = 30.0
"""At most this many times memory_df's time, for fact_survival_df(max_summaries=5) ..."""
FACTS_AT = 10_000
"""... on the run of this many messages."""
FACTS = "fact_survival_df(max_summaries=5)"
WORDS = ("deploy", "port", "8443", "config", "retry", "cache", "token", "window", "summary",
         "the", "agent", "looked", "at", "/srv/app/config.yaml", "and", "next", "file",
         "Alice", "postgres")  # fmt: skip
ROUNDS = 2
"""Each operation runs this many times on each workspace; the fastest counts (the first call of
a process also pays for imports and caches)."""


def make_run(root: Path, messages: int, seed: int = 29) -> Path:
    """One Agent's run of ``messages`` messages in ``root``; returns its agent folder."""
    from memorylab import Agent
    from memorylab.compress import ContextCompressor
    from memorylab.compress._tokens import count_tokens
    from memorylab.llm import ChatReply

    rng = random.Random(seed)
    clock = [datetime(2026, 1, 5, 9, tzinfo=UTC)]

    def now() -> datetime:
        clock[0] += timedelta(seconds=9)
        return clock[0]

    def model(name: str, sent: list[dict[str, Any]], **_: Any) -> ChatReply:
        text = " ".join(rng.choice(WORDS) for _ in range(30))
        billed = sum(count_tokens(str(m["content"])) + 4 for m in sent) + 3
        return ChatReply(content=text, model=name, input_tokens=billed,
                         output_tokens=count_tokens(text), cached_tokens=0)  # fmt: skip

    agent = Agent(agent_name="Audited", model_name="gpt-4o-mini", context_length=4096,
                  workspace_dir=root, completion=model, clock=now, id="agent-bench",
                  summarizer_model="memorylab/extractive")  # fmt: skip
    agent.context_compressor = ContextCompressor(
        threshold=0.8, summarizer_model="memorylab/extractive", summarizer_max_tokens=400
    )
    for turn in range(messages // 2):
        task = f"task {turn}: " + " ".join(rng.choice(WORDS) for _ in range(25))
        if turn % 20 == 0:  # now and then a decision, as a real log has
            task += f" We decided to use postgres for service {turn}."
        agent.run(task)
    store = agent.short_memory.store
    if store is not None:
        store.close()
    return root / "agents" / "Audited"


def _operations(folder: Path) -> dict[str, Callable[[], Any]]:
    import matplotlib

    matplotlib.use("Agg")
    from memorylab.analysis import (
        calibration_df,
        compaction_costs_df,
        compaction_timing_df,
        fact_survival_df,
        lineage_df,
        memory_df,
    )
    from memorylab.report import build_report

    return {
        "memory_df (baseline)": lambda: memory_df(folder),
        "calibration": lambda: (calibration_df(folder), compaction_timing_df(folder)),
        "lineage_df": lambda: lineage_df(folder),
        FACTS: lambda: fact_survival_df(folder, max_summaries=5),
        "compaction_costs_df": lambda: compaction_costs_df(folder),
        "report": lambda: build_report(folder.parent.parent, sweep_thresholds=(0.7, 0.9)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="CI smoke run: small, exits 0")
    parser.add_argument("--sizes", type=int, nargs="+", help="run sizes (messages) to time")
    args = parser.parse_args(argv)
    sizes = args.sizes or ((400, 1_600) if args.quick else (2_000, 10_000, 50_000))
    warnings.simplefilter("ignore")  # the temporary workspace's permissions note
    logging.disable(logging.WARNING)
    print(f"# the audits' cost by run size ({'quick' if args.quick else 'full'})")
    print(f"python {platform.python_version()} on {platform.system()} {platform.machine()}, "
          f"{os.cpu_count()} cores; one Agent's run, 4,096-token window, compaction at 0.8")  # fmt: skip
    print()
    print("| messages | compactions | operation | seconds | vs memory_df | per message vs the "
          "next smaller size | verdict |")  # fmt: skip
    print("|---:|---:|---|---:|---:|---:|:---:|")
    ok = True
    previous: dict[str, tuple[int, float]] = {}
    ratios: list[str] = []
    with tempfile.TemporaryDirectory() as scratch:
        for size in sizes:
            folder = make_run(Path(scratch) / f"w{size}", size)
            compactions = sum(1 for _ in (folder / "archive").glob("history_*.md"))
            timings: dict[str, float] = {}
            for name, operation in _operations(folder).items():
                for _ in range(ROUNDS):
                    started = time.perf_counter()
                    operation()
                    seconds = time.perf_counter() - started
                    timings[name] = min(seconds, timings.get(name, seconds))
            base = timings["memory_df (baseline)"]
            for name, seconds in timings.items():
                growth, verdict = "", ""
                if name in previous:
                    before_size, before = previous[name]
                    ratio = (seconds / size) / (before / before_size)
                    growth = f"{ratio:.2f}x"
                    if size == sizes[-1] and not name.startswith("memory_df"):
                        passed = ratio <= TARGET
                        ok = ok and passed
                        verdict = "PASS" if passed else "FAIL"
                previous[name] = (size, seconds)
                print(f"| {size:,} | {compactions:,} | {name} | {seconds:.2f} | "
                      f"{seconds / base:.1f}x | {growth} | {verdict} |")  # fmt: skip
            ratio = timings[FACTS] / base
            verdict = ""
            if size == FACTS_AT or (args.quick and size == sizes[-1]):
                passed = ratio <= FACTS_TARGET
                ok = ok and passed
                verdict = "PASS" if passed else "FAIL"
            ratios.append(f"| {size:,} | {timings[FACTS]:.2f} | {base:.3f} | {ratio:.1f}x | "
                          f"{verdict} |")  # fmt: skip
    print()
    print(f"target: per message at the largest size <= {TARGET}x the next smaller size's")
    print()
    print(f"| messages | {FACTS} (s) | memory_df (s) | ratio | verdict (<= {FACTS_TARGET:.0f}x "
          f"at {FACTS_AT:,}) |")  # fmt: skip
    print("|---:|---:|---:|---:|:---:|")
    print("\n".join(ratios))
    return 0 if args.quick or ok else 1


if __name__ == "__main__":
    sys.exit(main())
