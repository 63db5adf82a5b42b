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

A second table prices the confidence intervals: ``summary_table(df)`` (seeded bootstrap, 1,000
resamples per quality cell, paired ones for ties and bounds) against ``summary_table(df,
ci=False)`` on the same long frame, measured in the same run: the bundled sessions with the
bounds and baselines, and a synthetic frame of ``P`` probes per case. Printed, no target.

Target: compare <= 1.3 x ideal for every row (the cached re-run is printed for scale). Each
figure is the median of ``rounds`` runs. ``--quick`` (CI smoke run) always exits 0; the full run
exits 1 when a target fails. The client's per-request CPU (litellm builds and parses each call,
~5-10 ms here) adds about ``c * cpu / latency`` to the ratio, so rows keep c x cpu well below the
latency.

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


FULL = ([Row(16, 1, 0.1), Row(64, 8, 0.5), Row(64, 16, 1.0), Row(96, 32, 1.5)], 2)
QUICK = ([Row(8, 4, 0.2)], 1)


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
        print(f"| {name} | {len(frame):,} | {plain:.3f} | {full:.3f} | {full / plain:.1f}x |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="CI smoke run: smaller, exits 0")
    args = parser.parse_args(argv)
    rows, rounds = QUICK if args.quick else FULL
    llm.import_litellm()
    with tempfile.TemporaryDirectory(prefix="memorylab-bench-compare-") as scratch:
        results = [measure(row, rounds, Path(scratch)) for row in rows]
    ok = report(results, rounds, args.quick)
    intervals(args.quick)
    if not ok and not args.quick:
        print("a target failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
