"""Loader throughput and memory, token counting, and the fast sweep, against same-run baselines.

Workspaces: generated with ``random.Random(SEED)`` and written directly in the byte format
(much faster than ``add()``), each in memorylab's format (lineage headers, UTC timestamps,
escaped content) and in the reference framework's (naive timestamps, no lineage). Agents hold
several archives and a live MEMORY.md. Two corpora:

* ``prose``: a realistic mix of short user turns, assistant answers (some with ``###`` headings,
  lists, code fences) and long tool outputs (logs, JSON, tables);
* ``markdown``: most messages are markdown-heavy answers: headings, ``---`` rules, tables and code
  fences (escaped in memorylab's files; in the reference's, a rule is a separator look-alike).

Full run: 8 agents x 6 files x 1,500 messages per workspace (~55 MB each); ``--quick``: 2 x 3 x 300.

Rows (medians of rounds that alternate subject and baseline, so drift hits both alike):

* ``memory_df(workspace)`` against reading the same files and splitting them into lines (read the
  bytes, decode, ``str.splitlines()``). Target: the loader at least half as fast (ratio <= 2.0).
* peak memory of ``memory_df`` (``tracemalloc``, the returned frame included) against the bytes
  of the files. Target <= 3.0x.
* the ``tokens`` column (``memory_df(..., model="gpt-4o")`` minus ``memory_df(...)``) against
  tiktoken's ``encode_ordinary_batch`` over the same contents (all cores). Target <= 1.5x.
* ``sweep(..., fast=True)`` of 50 thresholds on a 10,000-message transcript whose tokens were
  counted before (by an earlier sweep, replay or growth of the same transcript: counts are
  remembered), against the 1 s target of the issue (the only absolute figure; printed, never
  asserted in tests): calibrated against exact replays (its default: the extractive summaries
  made fresh, then from the cache), and without calibration. Printed too: the same sweep
  counting the tokens itself (bound by tiktoken, which the tokens row measures), and the
  simulation alone against a plain Python loop over the messages for each threshold (the
  obvious implementation).

``--scale`` then prints the scale table of ``bench_scale.py`` (run from there, not copied): each
operation's wall time, CPU time and peak RSS on 1k to 1M messages and on 1, 10 and 100 agents
holding the same messages, its cost per message at 1M against 100k (<= 1.3x: linear), and
``memory_df``'s peak RSS against the files' bytes (<= 4x); with ``--quick``, its smoke run.

``--quick`` (the CI smoke run) always exits 0; the full run exits 1 when a target fails.

    python tests/benchmarks/bench_analysis.py [--quick] [--scale] [--dir DIR]
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import tiktoken

from memorylab.analysis import _transcript, memory_df, sweep
from memorylab.compress._tokens import get_token_counter
from memorylab.memory import _format as fmt
from memorylab.memory._records import MemoryDocument, Message

SEED = 20260420
MODEL = "gpt-4o"
PARSE_TARGET = 2.0
MEMORY_TARGET = 3.0
TOKENS_TARGET = 1.5
SWEEP_TARGET_S = 1.0
SWEEP_THRESHOLDS = 50
SWEEP_MESSAGES = 10_000
VERDICT = {True: "PASS", False: "FAIL"}


@dataclass(frozen=True)
class Settings:
    agents: int
    files: int
    messages: int
    rounds: int


# label -> (reference format?, corpus)
WORKSPACES = {
    "memorylab format, prose": (False, "prose"),
    "reference format, prose": (True, "prose"),
    "memorylab format, markdown": (False, "markdown"),
    "reference format, markdown": (True, "markdown"),
}

FULL = Settings(agents=8, files=6, messages=1_500, rounds=7)
QUICK = Settings(agents=2, files=3, messages=300, rounds=3)

WORDS = [
    "the",
    "agent",
    "looked",
    "at",
    "result",
    "and",
    "decided",
    "what",
    "to",
    "do",
    "next",
    "file",
    "path",
    "error",
    "passed",
    "failed",
    "retry",
    "config",
    "value",
    "cache",
    "latency",
    "request",
    "response",
    "model",
    "token",
    "window",
    "summary",
    "threshold",
    "compaction",
    "archive",
    "memory",
    "update",
    "deploy",
    "build",
    "test",
    "install",
    "version",
    "branch",
    "commit",
]


def _sentence(rng: random.Random, low: int, high: int) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(low, high))]
    return " ".join(words).capitalize() + "."


def _user(rng: random.Random) -> str:
    return " ".join(_sentence(rng, 4, 18) for _ in range(rng.randint(1, 3)))


def _assistant(rng: random.Random) -> str:
    parts = [_sentence(rng, 8, 30) for _ in range(rng.randint(1, 4))]
    if rng.random() < 0.4:
        parts.append("### " + _sentence(rng, 2, 5))
        parts += [f"- {_sentence(rng, 3, 10)}" for _ in range(rng.randint(2, 6))]
    if rng.random() < 0.3:
        code = [f"    result = run_{rng.randint(0, 99)}(path='/srv/app/{rng.choice(WORDS)}.py')"]
        parts.append("```python\n" + "\n".join(code * rng.randint(1, 8)) + "\n```")
    return "\n\n".join(parts)


def _tool(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.4:
        lines = [
            f"2026-04-20 12:{i % 60:02d}:{i % 59:02d} INFO {_sentence(rng, 3, 12)}"
            for i in range(rng.randint(5, 80))
        ]
        return "\n".join(lines)
    if kind < 0.7:
        rows = [f'{{"id": {i}, "name": "{rng.choice(WORDS)}", "ok": true}}' for i in range(50)]
        return "[" + ", ".join(rows[: rng.randint(3, 50)]) + "]"
    return "\n".join(
        f"| {rng.choice(WORDS)} | {rng.randint(0, 9999)} | {rng.random():.4f} |"
        for _ in range(rng.randint(3, 40))
    )


def _markdown(rng: random.Random) -> str:
    """A markdown-heavy answer: most have a heading, a ``---`` rule, a table and a code fence."""
    parts = ["### " + _sentence(rng, 2, 5), _sentence(rng, 8, 30)]
    if rng.random() < 0.8:
        parts += ["---", "#### " + _sentence(rng, 2, 4)]
    if rng.random() < 0.8:
        rows = [f"| {rng.choice(WORDS)} | {rng.randint(0, 999)} | {rng.random():.3f} |"
                for _ in range(rng.randint(2, 12))]  # fmt: skip
        parts.append("| name | count | share |\n|---|---:|---:|\n" + "\n".join(rows))
    if rng.random() < 0.8:
        code = [f"    value = run_{rng.randint(0, 99)}('{rng.choice(WORDS)}')  # ---"
                for _ in range(rng.randint(2, 10))]  # fmt: skip
        parts.append("```python\n### not a heading\n" + "\n".join(code) + "\n```")
    parts.append(_sentence(rng, 5, 20))
    return "\n\n".join(parts)


CORPORA = {
    "prose": lambda agent: [
        ("User", _user),
        (agent, _assistant),
        (agent, _assistant),
        ("tool", _tool),
    ],
    "markdown": lambda agent: [
        ("User", _user),
        (agent, _markdown),
        (agent, _markdown),
        (agent, _markdown),
    ],
}


def _messages(
    rng: random.Random, count: int, start: datetime, agent: str, corpus: str
) -> list[Message]:
    kinds = CORPORA[corpus](agent)
    out = []
    for i in range(count):
        role, content = rng.choice(kinds)
        out.append(Message(role, content(rng), start + timedelta(seconds=i * 7.25)))
    return out


def build(root: Path, settings: Settings, reference: bool, corpus: str = "prose") -> list[Path]:
    """Write a workspace; returns its files."""
    rng = random.Random(SEED + reference + 2 * list(CORPORA).index(corpus))
    files: list[Path] = []
    start = datetime(2026, 4, 20, 9, 0, tzinfo=UTC)
    for a in range(settings.agents):
        agent = f"agent-{a}"
        folder = root / "agents" / agent
        (folder / "archive").mkdir(parents=True)
        previous: str | None = None
        for f in range(settings.files):
            messages = _messages(rng, settings.messages, start, agent, corpus)
            start += timedelta(hours=4)
            if f:
                summary = Message("System", "[Compressed Memory Summary] " + _assistant(rng),
                                  messages[0].timestamp)  # fmt: skip
                messages[0] = summary
            name = fmt.archive_name(start.replace(tzinfo=None) if reference else start)
            path = folder / "MEMORY.md" if f == settings.files - 1 else folder / "archive" / name
            if reference:
                text = "# Agent Memory\n\n**Conversation:** c\n**Created:** 2026-04-20T09:00:00\n"
                text += "\n---\n\n## Interaction Log\n\n" + "".join(
                    f"### {m.role} — {m.timestamp.replace(tzinfo=None).isoformat()}\n\n"
                    f"{m.content}\n\n---\n\n"
                    for m in messages
                )
            else:
                doc = MemoryDocument(f"{agent}_conversation", messages[0].timestamp,
                                     tuple(messages), 1, previous)  # fmt: skip
                text = fmt.render_memory(doc)
            path.write_text(text, encoding="utf-8")
            files.append(path)
            previous = name
    return files


def _timed(call: Callable[[], object]) -> float:
    gc.collect()
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def _read_and_split(files: list[Path]) -> int:
    return sum(len(path.read_bytes().decode("utf-8").splitlines()) for path in files)


def parse_rows(root: Path, files: list[Path], rounds: int) -> tuple[float, float, int]:
    subject, floor = [], []
    memory_df(root)  # warm up (imports, page cache)
    _read_and_split(files)
    for _ in range(rounds):
        subject.append(_timed(lambda: memory_df(root)))
        floor.append(_timed(lambda: _read_and_split(files)))
    return statistics.median(subject), statistics.median(floor), len(memory_df(root))


def peak_memory(root: Path) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        frame = memory_df(root)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del frame
    return peak


def token_rows(root: Path, rounds: int) -> tuple[float, float, int]:
    contents = memory_df(root)["content"].tolist()
    counter = get_token_counter(MODEL)
    counter.count("x")  # loads the encoding offline (memorylab points tiktoken at its copy)
    encoding = tiktoken.get_encoding(counter.encoding_name)
    threads = os.cpu_count() or 1
    memory_df(root, model=MODEL)
    with_tokens, without, floor = [], [], []
    for _ in range(rounds):
        with_tokens.append(_timed(lambda: memory_df(root, model=MODEL)))
        without.append(_timed(lambda: memory_df(root)))
        floor.append(_timed(lambda: encoding.encode_ordinary_batch(contents, num_threads=threads)))
    added = max(statistics.median(with_tokens) - statistics.median(without), 1e-9)
    return added, statistics.median(floor), sum(len(c) for c in contents)


def _plain_loop(tokens: list[int], triggers: list[int], summary: int) -> list[int]:
    """The obvious sweep: one pass over the messages per threshold."""
    counts = []
    for trigger in triggers:
        context, compactions = 0, 0
        for t in tokens:
            context += t
            if context >= trigger:
                compactions += 1
                context = summary
        counts.append(compactions)
    return counts


def sweep_rows(rounds: int) -> tuple[float, float, float, float, int, float, float, str]:
    from memorylab.analysis import _summarizers, sweep_note
    from memorylab.analysis._fast import Prefix, simulate
    from memorylab.analysis._runs import SummarySize

    rng = random.Random(SEED)
    transcript = [
        {"role": role, "content": make(rng)}
        for role, make in (
            rng.choice([("User", _user), ("Agent", _assistant), ("tool", _tool)])
            for _ in range(SWEEP_MESSAGES)
        )
    ]
    thresholds = np.linspace(0.3, 0.95, SWEEP_THRESHOLDS).round(4).tolist()

    def fast(calibrate: bool) -> object:
        return sweep(transcript, thresholds, (32_768,), fast=True, calibrate=calibrate)

    cold, warm, calibrated_cold, calibrated = [], [], [], []
    note = ""
    for _ in range(rounds):
        _transcript._COUNTERS.clear()  # forget every count: this sweep counts the tokens itself
        cold.append(_timed(lambda: fast(False)))
        warm.append(_timed(lambda: fast(False)))
        _summarizers.SUMMARY_CACHE.clear()  # the calibration's summaries made fresh, then cached
        calibrated_cold.append(_timed(lambda: fast(True)))
        calibrated.append(_timed(lambda: fast(True)))
    note = sweep_note(fast(True))  # type: ignore[arg-type]
    tokens = _transcript.as_transcript(transcript).tokens(_transcript.memo_counter(None))
    triggers = [int(t * 32_768) for t in thresholds]
    prefix = Prefix.of(tokens)
    size = SummarySize(ratio=0.1)
    core = statistics.median(
        _timed(lambda: [simulate(prefix, t, overhead=20, size=size, budget=2000) for t in triggers])
        for _ in range(rounds)
    )
    listed = tokens.tolist()
    loop = statistics.median(_timed(lambda: _plain_loop(listed, triggers, 500)) for _ in range(3))
    chars = sum(len(m["content"]) for m in transcript)
    return (
        statistics.median(warm),
        statistics.median(cold),
        core,
        loop,
        chars,
        statistics.median(calibrated_cold),
        statistics.median(calibrated),
        note,
    )


def report(quick: bool, settings: Settings, results: dict[str, tuple[object, ...]]) -> bool:
    print(f"# analysis: loader, tokens, fast sweep ({'quick' if quick else 'full'} run)")
    print(
        f"python {platform.python_version()} on {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} cores; {settings.agents} agents x {settings.files} files x "
        f"{settings.messages:,} messages per workspace; medians of {settings.rounds} rounds"
    )
    import pandas as pd

    # The content column is built differently when pandas stores strings in pyarrow (the
    # optional `data` extra): say which route this table measured.
    storage = getattr(pd.Series(["x"], dtype="str").dtype, "storage", "python")
    print(f"pandas {pd.__version__}, string storage: {storage}")
    print()
    print("| measure | subject | baseline | ratio | target | verdict |")
    print("|---|---:|---:|---:|---:|:---:|")
    ok = True
    for label in WORKSPACES:
        subject, floor, rows, size = results[f"parse-{label}"]  # type: ignore[misc]
        ratio = subject / floor
        passed = ratio <= PARSE_TARGET
        ok &= passed
        print(
            f"| memory_df, {label} ({rows:,} rows, {size / 1e6:.1f} MB) | "
            f"{subject * 1e3:.1f} ms | read+split {floor * 1e3:.1f} ms | {ratio:.2f}x | "
            f"<= {PARSE_TARGET:g}x | {VERDICT[passed]} |"
        )
    for label in WORKSPACES:
        peak, size = results[f"memory-{label}"]  # type: ignore[misc]
        ratio = peak / size
        passed = ratio <= MEMORY_TARGET
        ok &= passed
        print(
            f"| peak memory of memory_df, {label} | {peak / 1e6:.1f} MB | "
            f"file bytes {size / 1e6:.1f} MB | {ratio:.2f}x | <= {MEMORY_TARGET:g}x | "
            f"{VERDICT[passed]} |"
        )
    added, floor, chars = results["tokens"]  # type: ignore[misc]
    ratio = added / floor
    passed = ratio <= TOKENS_TARGET
    ok &= passed
    print(
        f"| tokens column ({MODEL}, {chars / 1e6:.1f} M chars) | {added * 1e3:.1f} ms | "
        f"encode_ordinary_batch {floor * 1e3:.1f} ms | {ratio:.2f}x | <= {TOKENS_TARGET:g}x | "
        f"{VERDICT[passed]} |"
    )
    warm, cold, core, loop, chars, calibrated_cold, calibrated, note = results["sweep"]  # type: ignore[misc]
    passed = calibrated_cold <= SWEEP_TARGET_S
    ok &= passed
    print(
        f"| sweep(fast=True), {SWEEP_THRESHOLDS} thresholds x {SWEEP_MESSAGES:,} messages "
        f"(tokens counted before), calibrated: summaries made fresh | "
        f"{calibrated_cold * 1e3:.0f} ms | target {SWEEP_TARGET_S * 1e3:.0f} ms | "
        f"{calibrated_cold / SWEEP_TARGET_S:.2f}x | <= 1x | {VERDICT[passed]} |"
    )
    print(
        f"| the same, calibration summaries from the cache | {calibrated * 1e3:.0f} ms | "
        f"target {SWEEP_TARGET_S * 1e3:.0f} ms | {calibrated / SWEEP_TARGET_S:.2f}x | <= 1x | "
        f"{VERDICT[calibrated <= SWEEP_TARGET_S]} |"
    )
    passed = warm <= SWEEP_TARGET_S
    ok &= passed
    print(
        f"| the same, calibrate=False | {warm * 1e3:.0f} ms | target "
        f"{SWEEP_TARGET_S * 1e3:.0f} ms | {warm / SWEEP_TARGET_S:.2f}x | <= 1x | "
        f"{VERDICT[passed]} |"
    )
    print(
        f"| the same sweep, counting the tokens of its {chars / 1e6:.1f} M chars too | "
        f"{cold * 1e3:.0f} ms | target {SWEEP_TARGET_S * 1e3:.0f} ms | "
        f"{cold / SWEEP_TARGET_S:.2f}x | (tiktoken-bound, see the tokens row) | - |"
    )
    print(
        f"| fast simulation alone ({SWEEP_THRESHOLDS} settings, prefix sums) | {core * 1e3:.2f} ms | "
        f"plain loop per threshold {loop * 1e3:.1f} ms | {core / loop:.3f}x | (for scale) | - |"
    )
    print()
    print(f"the calibrated sweep's own note: {note}")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="CI smoke run: smaller, exits 0")
    parser.add_argument("--dir", type=Path, default=None, help="where to write (default: temp)")
    parser.add_argument(
        "--scale",
        action="store_true",
        help="then bench_scale.py's table: 1k to 1M messages, 1/10/100 agents (full run ~20 min)",
    )
    args = parser.parse_args(argv)
    settings = QUICK if args.quick else FULL
    os.umask(0o077)  # private files, as memorylab writes them (no permission warnings)
    root = Path(tempfile.mkdtemp(prefix="memorylab-bench-analysis-", dir=args.dir))
    results: dict[str, tuple[object, ...]] = {}
    try:
        for label, (reference, corpus) in WORKSPACES.items():
            workspace = root / label.replace(" ", "-").replace(",", "")
            files = build(workspace, settings, reference, corpus)
            size = sum(path.stat().st_size for path in files)
            subject, floor, rows = parse_rows(workspace, files, settings.rounds)
            results[f"parse-{label}"] = (subject, floor, rows, size)
            results[f"memory-{label}"] = (peak_memory(workspace), size)
        results["tokens"] = token_rows(root / "memorylab-format-prose", settings.rounds)
        results["sweep"] = sweep_rows(1 if args.quick else settings.rounds)
        ok = report(args.quick, settings, results)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if args.scale:
        import bench_scale  # beside this script: its table, its targets

        print()
        ok &= bench_scale.main(["--quick"] if args.quick else []) == 0
    if not ok and not args.quick:
        print("a target failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
