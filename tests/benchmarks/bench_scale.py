"""How the cost of the analysis grows with the data: 1k to 1M messages, and 1, 10 or 100 agents
holding the same messages.

Workspaces are generated with ``random.Random(SEED)`` and written directly in memorylab's byte
format (one MEMORY.md per agent, ~240 bytes a message). Each operation runs in a child process of
its own, so its peak RSS is its own: ``memory_df``, ``token_growth``, ``sweep(fast=True)`` of 5
thresholds, ``replay`` at 0.9 and ``memorylab report``. The table gives wall time, CPU time and
peak RSS per operation and size. Targets (issue 30):

* linear: each operation's cost per message at the largest size against the next smaller one,
  at most 1.3x;
* ``memory_df``'s peak RSS at the largest size at most 4x the files' bytes (the interpreter and
  its imports included);
* the report for 100 agents at most 3x the report for 1 agent holding the same messages.

``--quick`` (CI's smoke run: 1k and 5k messages, 1 and 10 agents) always exits 0; the full run
(1k, 10k, 100k, 1M messages; 1, 10, 100 agents of 20,000 messages; ~20 min on 2 cores) exits 1
when a target fails.

    python tests/benchmarks/bench_scale.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memorylab.memory import _format as fmt

SEED = 30
OPERATIONS = ("memory_df", "token_growth", "sweep", "replay", "report")
LINEAR_TARGET = 1.3
MEMORY_TARGET = 4.0
AGENTS_TARGET = 3.0
WORDS = ("deploy", "port", "8443", "config", "retry", "cache", "token", "window", "summary",
         "the", "agent", "looked", "at", "result", "and", "decided", "next", "file")  # fmt: skip

# The peak RSS is the child's own high-water mark (VmHWM): getrusage's ru_maxrss keeps, across
# exec, what the process had before it (the parent's pages at the fork), so every child of a
# parent that once held a large workspace reported that parent's peak.
_CHILD = """
import json, resource, sys, time
operation, workspace, scratch = sys.argv[1:4]
wall, cpu = time.perf_counter(), time.process_time()
if operation == "report":
    from memorylab.cli import main
    if main(["report", workspace, "-o", scratch + "/report.html"]) != 0:
        sys.exit("the report failed")
else:
    from memorylab import memory_df
    from memorylab.analysis import replay, sweep, token_growth
    frame = memory_df(workspace)
    if operation == "token_growth":
        token_growth(frame)
    elif operation == "sweep":
        sweep(frame, thresholds=(0.5, 0.6, 0.7, 0.8, 0.9), fast=True, progress=False)
    elif operation == "replay":
        replay(frame, threshold=0.9, progress=False)
try:
    with open("/proc/self/status") as status:
        rss = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) * 1024
except OSError:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu,
                  "rss": rss}))
"""


def build(root: Path, agents: int, messages: int) -> int:
    """A workspace of ``agents`` agents sharing ``messages`` messages; returns its bytes."""
    rng = random.Random(SEED)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    size = 0
    for agent in range(agents):
        folder = root / "agents" / f"agent{agent:03d}"
        folder.mkdir(parents=True, mode=0o700)
        with open(folder / "MEMORY.md", "wb") as out:  # written as it is made: this process
            size += out.write(fmt.render_header(f"agent{agent:03d}_conversation",  # stays small
                                                start).encode())  # fmt: skip
            for n in range(messages // agents):
                role = "User" if n % 2 == 0 else "Assistant"
                stamp = (start + timedelta(seconds=n)).isoformat(timespec="microseconds")
                words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 50)))
                size += out.write(fmt.block_text(role, stamp, f"message {n}: {words}").encode())
    return size


def measure(operation: str, workspace: Path, scratch: Path) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", _CHILD, operation, str(workspace), str(scratch)],
                          capture_output=True, text=True, timeout=3600)  # fmt: skip
    if done.returncode:
        raise SystemExit(f"{operation} on {workspace} failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="CI smoke run: smaller, exits 0")
    parser.add_argument("--agents", action="store_true",
                        help="only the 1/10/100-agent rows (the report's and memory_df's growth "
                             "with agents; a few minutes)")  # fmt: skip
    args = parser.parse_args(argv)
    sizes = [1_000, 5_000] if args.quick else [1_000, 10_000, 100_000, 1_000_000]
    sizes = [] if args.agents else sizes
    agent_counts = [1, 10] if args.quick else [1, 10, 100]
    shared = 2_000 if args.quick else 20_000
    root = Path(tempfile.mkdtemp(prefix="memorylab-bench-scale-"))
    rows: list[tuple[str, int, int, int, dict[str, float]]] = []
    try:
        for messages in sizes:
            workspace = root / f"m{messages}"
            size = build(workspace, 1, messages)
            for operation in OPERATIONS:
                rows.append((operation, messages, 1, size, measure(operation, workspace, root)))
            shutil.rmtree(workspace)
        for agents in agent_counts:
            workspace = root / f"a{agents}"
            size = build(workspace, agents, shared)
            for operation in ("memory_df", "report"):
                rows.append((operation, shared, agents, size, measure(operation, workspace, root)))
            shutil.rmtree(workspace)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return report(rows, sizes, agent_counts, shared, args.quick)


def report(rows: list[tuple[str, int, int, int, dict[str, float]]], sizes: list[int],
           agent_counts: list[int], shared: int, quick: bool) -> int:  # fmt: skip
    print(f"# scale: cost against messages and agents ({'quick' if quick else 'full'} run)")
    print(f"python {sys.version.split()[0]}; one child process per row")
    print()
    print("| operation | messages | agents | files | wall | CPU | peak RSS | RSS / files |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for operation, messages, agents, size, got in rows:
        print(f"| {operation} | {messages:,} | {agents} | {size / 1e6:.1f} MB | {got['wall']:.2f} s "
              f"| {got['cpu']:.2f} s | {got['rss'] / 1e6:,.0f} MB | {got['rss'] / size:.1f}x |")  # fmt: skip
    ok = True
    print()
    print("| target | measured | verdict |")
    print("|---|---:|---|")
    by = {(op, m, a): (size, got) for op, m, a, size, got in rows}
    for operation in OPERATIONS if sizes else ():
        big, smaller = sizes[-1], sizes[-2]
        per_big = by[(operation, big, 1)][1]["wall"] / big
        per_small = by[(operation, smaller, 1)][1]["wall"] / smaller
        ratio = per_big / per_small
        passed = ratio <= LINEAR_TARGET
        ok &= passed
        print(f"| {operation}: time per message at {big:,} against {smaller:,} <= "
              f"{LINEAR_TARGET}x | {ratio:.2f}x | {'PASS' if passed else 'FAIL'} |")  # fmt: skip
    if sizes:
        size, got = by[("memory_df", sizes[-1], 1)]
        memory = got["rss"] / size
        ok &= memory <= MEMORY_TARGET
        print(f"| memory_df peak RSS at {sizes[-1]:,} messages <= {MEMORY_TARGET}x the files' "
              f"bytes | {memory:.2f}x | {'PASS' if memory <= MEMORY_TARGET else 'FAIL'} |")  # fmt: skip
    many = by[("report", shared, agent_counts[-1])][1]["wall"]
    one = by[("report", shared, 1)][1]["wall"]
    agents_ratio = many / one
    ok &= agents_ratio <= AGENTS_TARGET
    print(f"| report for {agent_counts[-1]} agents <= {AGENTS_TARGET}x the report for 1 "
          f"({shared:,} messages) | {agents_ratio:.2f}x | "
          f"{'PASS' if agents_ratio <= AGENTS_TARGET else 'FAIL'} |")  # fmt: skip
    if not ok and not quick:
        print("a target failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
