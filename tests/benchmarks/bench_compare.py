"""``compare_summarizers`` wall time at concurrency c against a local server with a fixed latency.

A ``FakeOpenAIServer`` (tests/fakes) runs in a child process (so its threads do not compete with
the client for the GIL) and answers every chat completion after ``latency`` seconds. For each
row, N distinct one-message cases are summarized by one ``LiteLLMSummarizer`` pointed at it:

* ideal: ``ceil(N / c) * latency`` — c requests in flight at every instant, no overhead;
* floor: the same N requests sent straight through ``memorylab.llm.achat`` under an
  ``asyncio.Semaphore(c)``, measured in the same run (what litellm itself costs);
* compare: ``compare_summarizers(cases, [summarizer], ["latency"], concurrency=c,
  cache_dir=<empty folder>)`` — the whole engine: planning, semaphore, retries, the cache
  writes, scoring, rows;
* cached: the same comparison again on the now full cache (no request is sent).

A second table runs the comparison cold: a fresh Python process (``COLD``) builds the summarizer
and times its first ``compare_summarizers`` call at (32, 8, 0.5 s) (``--quick``: the quick row),
litellm not yet imported; ``rounds`` such processes, each followed by a fresh process that only
imports litellm (wall and CPU). "cold call" is the call's wall time (litellm's import included:
the comparison starts it on a worker thread before it plans, and nothing can be sent before it
is done); "litellm ready at" is when, in the call, the import was done (polled every 10 ms);
"after it" the rest of the call; "from process start" the child process's whole life, for
information (interpreter start, ``import memorylab``, the call). The row is printed with the
1.3x target but not gated: no request can precede the import, which alone takes ~2.7 s of CPU
here, above the 0.6 s that 1.3x of a 2 s ideal leaves (docs/performance.md, "Cold first
comparison").

A third table prices the confidence intervals: ``summary_table(df)`` (seeded bootstrap, 1,000
resamples per quality cell, paired ones for ties and bounds) against ``summary_table(df,
ci=False)`` on the same long frame, measured in the same run: the bundled sessions with the
bounds and baselines, and a synthetic frame of ``P`` probes per case. Printed, no target.

Target: compare <= 1.3 x ideal for every warm row (the cached re-run is printed for scale).
Each figure is the median of ``rounds`` runs. ``--quick`` (CI smoke run) always exits 0; the
full run exits 1 when a warm row's target fails. The client's per-request CPU (litellm builds
and parses each call, ~5-10 ms here) adds about ``c * cpu / latency`` to the ratio, so rows keep
c x cpu well below the latency.

    python tests/benchmarks/bench_compare.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
TESTS = Path(__file__).resolve().parents[1]

from memorylab import LiteLLMSummarizer, llm  # noqa: E402
from memorylab.evaluate import Case, compare_summarizers, summary_table  # noqa: E402

TARGET = 1.3
COLD = """
import json, os, sys, tempfile, threading, time
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
from memorylab import LiteLLMSummarizer, llm
from memorylab.evaluate import Case, compare_summarizers
base_url, n, c = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
summarizer = LiteLLMSummarizer("openai/bench", retries=0, timeout=60,
                               llm_args={"api_base": base_url, "api_key": "x"})
cases = [Case(f"cold{i}", ({"role": "user", "content": f"cold task {i}: do it"},))
         for i in range(n)]
assert "litellm" not in sys.modules, "not cold: litellm is imported already"
ready = []
def watch():  # when litellm's import has finished, within 10 ms (it is not started here)
    while not llm.import_litellm.cache_info().currsize:
        time.sleep(0.01)
    ready.append(time.perf_counter())
threading.Thread(target=watch, daemon=True).start()
with tempfile.TemporaryDirectory() as cache:
    cpu, start = time.process_time(), time.perf_counter()
    result = compare_summarizers(cases, [summarizer], ["latency"], concurrency=c,
                                 cache_dir=cache, progress=False)
    end, cpu = time.perf_counter(), time.process_time() - cpu
errors = int(result.frame["error"].notna().sum())
print(json.dumps({"call": end - start, "cpu": cpu, "ready": (ready or [end])[0] - start,
                  "errors": errors}), flush=True)
"""
IMPORT_ALONE = """
import os, time
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
start, cpu = time.perf_counter(), time.process_time()
import litellm
print(time.perf_counter() - start, time.process_time() - cpu, flush=True)
"""
SERVER = """
import sys, http.server
sys.path.insert(0, {tests!r})
# socketserver's listen backlog is 5: more simultaneous connects than that are dropped and the
# client's SYN is retried a second later, which would be measured as latency.
http.server.ThreadingHTTPServer.request_queue_size = 1024
from fakes import FakeOpenAIServer, Reply
with FakeOpenAIServer(Reply("summary: the task is done", delay={latency!r})) as server:
    print(server.port, flush=True)
    sys.stdin.read()  # until the parent closes the pipe
"""


@dataclass(frozen=True)
class Row:
    n: int
    c: int
    latency: float


@dataclass
class Result:
    row: Row
    floor: list[float] = field(default_factory=list)
    compare: list[float] = field(default_factory=list)
    cached: list[float] = field(default_factory=list)

    @property
    def ideal(self) -> float:
        return math.ceil(self.row.n / self.row.c) * self.row.latency


FULL = ([Row(16, 1, 0.1), Row(32, 8, 0.5), Row(64, 8, 0.5), Row(64, 16, 1.0), Row(96, 32, 1.5)], 2)
QUICK = ([Row(8, 4, 0.2)], 1)
COLD_FULL = (Row(32, 8, 0.5), 3)
COLD_QUICK = (Row(8, 4, 0.2), 1)


@dataclass
class Cold:
    """Fresh processes: the comparison as a program's first call, and litellm's import alone."""

    row: Row
    call: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    ready: list[float] = field(default_factory=list)
    process: list[float] = field(default_factory=list)
    import_alone: list[float] = field(default_factory=list)
    import_cpu: list[float] = field(default_factory=list)

    @property
    def ideal(self) -> float:
        return math.ceil(self.row.n / self.row.c) * self.row.latency


class Server:
    """The fake server in a child process."""

    def __init__(self, latency: float) -> None:
        code = SERVER.format(tests=str(TESTS), latency=latency)
        self.process = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)  # fmt: skip
        assert self.process.stdout is not None
        self.base_url = f"http://127.0.0.1:{int(self.process.stdout.readline())}/v1"

    def close(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        self.process.wait(timeout=10)
        self.process.stdout.close()


def cases(n: int, tag: str) -> list[Case]:
    return [Case(f"{tag}{i}", ({"role": "user", "content": f"{tag} task {i}: do it"},))
            for i in range(n)]  # fmt: skip


async def floor_run(row: Row, base_url: str, tag: str) -> None:
    semaphore = asyncio.Semaphore(row.c)

    async def one(i: int) -> None:
        async with semaphore:
            await llm.achat("openai/bench", [{"role": "user", "content": f"{tag} floor {i}"}],
                            api_base=base_url, api_key="x",
                            retry=llm.RetryPolicy(timeout=60, retries=0))  # fmt: skip

    await asyncio.gather(*(one(i) for i in range(row.n)))


def timed(function: object, *args: object, **kwargs: object) -> float:
    start = time.perf_counter()
    function(*args, **kwargs)  # type: ignore[operator]
    return time.perf_counter() - start


def measure(row: Row, rounds: int, scratch: Path) -> Result:
    result = Result(row)
    server = Server(row.latency)
    try:
        summarizer = LiteLLMSummarizer("openai/bench", retries=0, timeout=60,
                                       llm_args={"api_base": server.base_url, "api_key": "x"})  # fmt: skip
        compare_summarizers(cases(2, "warm"), [summarizer], ["latency"], cache_dir=None,
                            progress=False)  # fmt: skip
        asyncio.run(floor_run(Row(2, 2, row.latency), server.base_url, "warm"))
        for r in range(rounds):
            tag = f"r{r}-"
            result.floor.append(timed(asyncio.run, floor_run(row, server.base_url, tag)))
            cache = scratch / f"cache-{row.n}-{row.c}-{r}"  # fresh: every call is a miss
            result.compare.append(timed(compare_summarizers, cases(row.n, tag), [summarizer],
                                        ["latency"], concurrency=row.c, cache_dir=cache,
                                        progress=False))  # fmt: skip
            result.cached.append(timed(compare_summarizers, cases(row.n, tag), [summarizer],
                                       ["latency"], concurrency=row.c, cache_dir=cache,
                                       progress=False))  # fmt: skip
    finally:
        server.close()
    return result


def measure_cold(row: Row, rounds: int) -> Cold:
    """``rounds`` fresh processes each running one comparison, interleaved with fresh processes
    that only import litellm."""
    import json

    cold = Cold(row)
    server = Server(row.latency)
    try:
        for _ in range(rounds):
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-c", COLD, server.base_url, str(row.n),
                                   str(row.c)], capture_output=True, text=True, check=True)  # fmt: skip
            cold.process.append(time.perf_counter() - started)
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            if figures["errors"]:
                raise RuntimeError(f"the cold comparison has error rows: {done.stdout}")
            cold.call.append(figures["call"])
            cold.cpu.append(figures["cpu"])
            cold.ready.append(figures["ready"])
            alone = subprocess.run([sys.executable, "-c", IMPORT_ALONE], capture_output=True,
                                   text=True, check=True)  # fmt: skip
            wall, cpu = alone.stdout.strip().splitlines()[-1].split()
            cold.import_alone.append(float(wall))
            cold.import_cpu.append(float(cpu))
    finally:
        server.close()
    return cold


def report_cold(cold: Cold, rounds: int) -> None:
    row, median = cold.row, statistics.median
    call, ready, alone = median(cold.call), median(cold.ready), median(cold.import_alone)
    ratio = call / cold.ideal
    print()
    print(f"# cold: compare_summarizers as the first call of a fresh process (median of {rounds})")
    print()
    print(f"| N | c | latency s | ideal s | import litellm alone s (CPU s) | cold call s | "
          f"cold / ideal | cold / (import + ideal) | CPU of the call s | litellm ready at s | "
          f"after it s | from process start s | target <= {TARGET:g}x ideal |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|")
    verdict = "PASS" if ratio <= TARGET else "FAIL (see below)"
    print(f"| {row.n} | {row.c} | {row.latency:g} | {cold.ideal:.2f} | {alone:.2f} "
          f"({median(cold.import_cpu):.2f}) | {call:.2f} | {ratio:.2f}x | "
          f"{call / (alone + cold.ideal):.2f}x | {median(cold.cpu):.2f} | {ready:.2f} | "
          f"{call - ready:.2f} | {median(cold.process):.2f} | {verdict} |")  # fmt: skip
    if ratio > TARGET:
        budget = TARGET * cold.ideal - cold.ideal
        print()
        print(f"Not met: no request can be sent before litellm is imported, and the import alone "
              f"takes {alone:.2f} s here, more than the {budget:.2f} s that {TARGET:g}x ideal "
              "leaves above the ideal. The cold row is reported, not gated.")  # fmt: skip


def report(results: list[Result], rounds: int, quick: bool) -> bool:
    print(f"# compare_summarizers at concurrency c ({'quick' if quick else 'full'} run)")
    print(f"python {platform.python_version()} on {platform.system()} {platform.machine()}, "
          f"{os.cpu_count()} cores; median of {rounds} run(s); fake server in a child process")  # fmt: skip
    print()
    print(f"| N | c | latency s | ideal s | floor s | compare s | compare / ideal | "
          f"compare / floor | cached re-run s | target <= {TARGET:g}x ideal |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|")
    ok = True
    for result in results:
        floor = statistics.median(result.floor)
        wall = statistics.median(result.compare)
        cached = statistics.median(result.cached)
        ratio = wall / result.ideal
        passed = ratio <= TARGET
        ok &= passed
        row = result.row
        print(f"| {row.n} | {row.c} | {row.latency:g} | {result.ideal:.2f} | {floor:.2f} | "
              f"{wall:.2f} | {ratio:.2f}x | {wall / floor:.2f}x | {cached:.3f} | "
              f"{'PASS' if passed else 'FAIL'} |")  # fmt: skip
    return ok


def _synthetic_frame(cases_: int, probes: int, summarizers: int) -> object:
    """A long frame of ``probes`` binary probe outcomes per case and summarizer (seeded)."""
    import random

    import pandas as pd

    rng = random.Random(7)
    rows = []
    for s in range(summarizers):
        label = ["memorylab/full", "memorylab/none"][s] if s < 2 else f"s{s}"
        share = 0.9 if s == 0 else 0.0 if s == 1 else 0.1 + 0.1 * s
        for c in range(cases_):
            items = [1.0 if rng.random() < share else 0.0 for _ in range(probes)]
            rows.append({"case": f"c{c}", "summarizer": label, "scorer": "probe_qa",
                         "metric": "exact", "value": sum(items) / probes, "n": float(probes),
                         "explanation": "", "error": None,
                         "items": " ".join(f"{v:g}" for v in items), "flag": None})  # fmt: skip
    return pd.DataFrame(rows)


def intervals(quick: bool) -> None:
    from memorylab.evaluate import BASELINES, BOUNDS, cases_from_transcripts

    frames = []
    bundled = cases_from_transcripts(split="session")[: 2 if quick else None]
    frames.append((f"bundled sessions ({len(bundled)} cases x 5 summarizers, default scorers)",
                   compare_summarizers(bundled, [*BOUNDS, *BASELINES], progress=False,
                                       cache_dir=None, max_tokens=2048)))  # fmt: skip
    shape = (10, 20, 4) if quick else (50, 100, 6)
    frames.append((f"synthetic ({shape[0]} cases x {shape[1]} probes x {shape[2]} summarizers)",
                   _synthetic_frame(*shape)))  # fmt: skip
    print()
    print("# summary_table with intervals, against the same table without (same run)")
    print()
    print("| frame | rows | without s | with intervals s | ratio |")
    print("|---|---:|---:|---:|---:|")
    for name, frame in frames:
        plain = statistics.median(timed(summary_table, frame, ci=False) for _ in range(3))
        full = statistics.median(timed(summary_table, frame) for _ in range(3))
        rows = len(getattr(frame, "frame", frame))  # a ComparisonResult's rows are its .frame
        print(f"| {name} | {rows:,} | {plain:.3f} | {full:.3f} | {full / plain:.1f}x |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="CI smoke run: smaller, exits 0")
    args = parser.parse_args(argv)
    rows, rounds = QUICK if args.quick else FULL
    cold_row, cold_rounds = COLD_QUICK if args.quick else COLD_FULL
    cold = measure_cold(cold_row, cold_rounds)  # before this process imports litellm: no matter
    llm.import_litellm()
    with tempfile.TemporaryDirectory(prefix="memorylab-bench-compare-") as scratch:
        results = [measure(row, rounds, Path(scratch)) for row in rows]
    ok = report(results, rounds, args.quick)
    report_cold(cold, cold_rounds)
    intervals(args.quick)
    if not ok and not args.quick:
        print("a target failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
