"""Per-``add()`` cost with persistence on, against the cost of the write itself.

For each history size (100 / 1k / 10k / 100k; ``--quick``: 100 / 1k / 10k with fewer and
smaller batches) a ``Conversation`` is built whose MEMORY.md already holds that many blocks
(pre-written) and whose in-memory history holds as many messages. Then, in rounds that visit
every size in turn (so drift on a busy machine hits all rows alike):

* ``add()``: time a batch of N ``add()`` calls (``perf_counter_ns``), then cut MEMORY.md and
  the history back to the size, so every batch starts from the same state;
* locked floor (the baseline): N ``os.write`` calls of the same rendered block bytes to a
  pre-opened ``O_APPEND`` descriptor on a copy of that MEMORY.md, each between
  ``flock(LOCK_EX)`` and ``flock(LOCK_UN)`` on a lock file: the system calls any append that
  excludes other processes per message must make, so ``add()`` over it is what memorylab's own
  work costs;
* one write (for scale): the same writes without the lock;
* the reference framework (when ``$MEMORYLAB_SWARMS_PYTHON`` names a Python with
  ``swarms==16.0.3``, as ``.ci/run`` makes): its ``Conversation.add()`` of the same content with
  its MEMORY.md on, timed in that interpreter in the same rounds.

Each row reports the median per-call time over the batches. Targets: ``add()`` within 3x the
locked floor, the largest history within 20% of the smallest (appending must not get slower as
the history grows), and at least 3x faster than the reference's ``add()`` when it was measured.
``--quick`` (the CI smoke run) always exits 0; the full run exits 1 when a target fails. No
absolute time is asserted anywhere.

    python tests/benchmarks/bench_append.py [--quick] [--dir DIR]
"""

from __future__ import annotations

import argparse
import fcntl
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from memorylab import Conversation
from memorylab.memory import _format as fmt
from memorylab.memory._records import Message

RATIO_TARGET = 3.0
SWARMS_SPEEDUP_TARGET = 3.0
SWARMS_PYTHON_ENV = "MEMORYLAB_SWARMS_PYTHON"
FLAT_TARGET = 0.20
CONTENT = "benchmark message: the agent looked at the result and decided what to do next. #{n}"


@dataclass(frozen=True)
class Settings:
    sizes: tuple[int, ...]
    batch: int
    rounds: int


FULL = Settings(sizes=(100, 1_000, 10_000, 100_000), batch=2_000, rounds=15)
QUICK = Settings(sizes=(100, 1_000, 10_000), batch=500, rounds=7)


@dataclass
class Subject:
    size: int
    conv: Conversation
    memory_md: Path
    base_bytes: int
    base_len: int
    floor_fd: int
    floor_path: Path
    block: bytes
    add_ns: list[float]
    floor_ns: list[float]
    locked_ns: list[float]
    lock_fd: int


def _label(size: int) -> str:
    return f"{size // 1000}k" if size >= 1000 and size % 1000 == 0 else str(size)


def build(workspace: Path, size: int) -> Subject:
    agent = f"bench-{size}"
    Conversation(agent_name=agent, workspace_dir=workspace).store.close()  # type: ignore[union-attr]
    memory_md = workspace / "agents" / agent / "MEMORY.md"
    now = datetime.now().astimezone()
    seeds = [
        {"role": "User" if n % 2 else agent, "content": CONTENT.format(n=n)} for n in range(size)
    ]
    with memory_md.open("a", encoding="utf-8") as handle:  # pre-write: much faster than add()
        for seed in seeds:
            handle.write(fmt.render_block(Message(seed["role"], seed["content"], now)))
    conv = Conversation(agent_name=agent, workspace_dir=workspace, preload=False, messages=seeds)
    floor_path = memory_md.with_name("floor.md")
    shutil.copyfile(memory_md, floor_path)
    block = fmt.render_block(Message("User", CONTENT.format(n=size), now)).encode("utf-8")
    return Subject(
        size=size,
        conv=conv,
        memory_md=memory_md,
        base_bytes=memory_md.stat().st_size,
        base_len=len(conv.conversation_history),
        floor_fd=os.open(floor_path, os.O_WRONLY | os.O_APPEND),
        floor_path=floor_path,
        block=block,
        add_ns=[],
        floor_ns=[],
        locked_ns=[],
        lock_fd=os.open(memory_md.with_name("floor.lock"), os.O_RDWR | os.O_CREAT, 0o600),
    )


def time_adds(subject: Subject, n: int) -> float:
    conv, content = subject.conv, CONTENT.format(n=subject.size)
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter_ns()
        for _ in range(n):
            conv.add("User", content)
        elapsed = time.perf_counter_ns() - start
    finally:
        gc.enable()
    assert subject.memory_md.stat().st_size == subject.base_bytes + n * len(subject.block)
    os.truncate(subject.memory_md, subject.base_bytes)  # back to the same history size
    del conv.conversation_history[subject.base_len :]
    return elapsed / n


def time_floor(subject: Subject, n: int) -> float:
    fd, block = subject.floor_fd, subject.block
    gc.disable()
    try:
        start = time.perf_counter_ns()
        for _ in range(n):
            os.write(fd, block)
        elapsed = time.perf_counter_ns() - start
    finally:
        gc.enable()
    os.truncate(subject.floor_path, subject.base_bytes)
    return elapsed / n


def time_locked_floor(subject: Subject, n: int) -> float:
    fd, block, lock_fd = subject.floor_fd, subject.block, subject.lock_fd
    gc.disable()
    try:
        start = time.perf_counter_ns()
        for _ in range(n):
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
            os.write(fd, block)
            fcntl.flock(lock_fd, fcntl.LOCK_UN)
        elapsed = time.perf_counter_ns() - start
    finally:
        gc.enable()
    os.truncate(subject.floor_path, subject.base_bytes)
    return elapsed / n


# Timed inside the reference's own interpreter: its Conversation as its Agent builds one
# (message ids and timestamps on, MEMORY.md on), the file and history cut back after each batch.
_SWARMS_SCRIPT = """
import json, os, statistics, sys, time
from swarms.structs.conversation import Conversation
workspace, content, batch, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
path = os.path.join(workspace, "agents", "swarms-bench", "MEMORY.md")
conv = Conversation(name="bench", token_count=False, message_id_on=True, time_enabled=True,
                    memory_md_path=path)
for _ in range(100):
    conv.add("User", content)
base_bytes, base_len = os.path.getsize(path), len(conv.conversation_history)
times = []
for _ in range(rounds):
    start = time.perf_counter_ns()
    for _ in range(batch):
        conv.add("User", content)
    times.append((time.perf_counter_ns() - start) / batch)
    os.truncate(path, base_bytes)
    del conv.conversation_history[base_len:]
print(json.dumps(times))
"""


def time_swarms(settings: Settings, workspace: Path) -> list[float] | None:
    """Per-add ns of the reference's ``Conversation.add()`` per batch, or None when
    ``$MEMORYLAB_SWARMS_PYTHON`` is not set."""
    python = os.environ.get(SWARMS_PYTHON_ENV)
    if not python:
        return None
    env = {**os.environ, "SWARMS_TELEMETRY_ON": "false", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    args = [str(workspace), CONTENT.format(n=0), str(settings.batch), str(settings.rounds)]
    out = subprocess.run(
        [python, "-c", _SWARMS_SCRIPT, *args], capture_output=True, text=True, env=env, timeout=600
    )
    if out.returncode != 0:
        raise SystemExit(f"the reference benchmark failed ({python}):\n{out.stderr[-2000:]}")
    return [float(ns) for ns in json.loads(out.stdout.strip().splitlines()[-1])]


def run(settings: Settings, workspace: Path) -> list[Subject]:
    subjects = [build(workspace, size) for size in settings.sizes]
    for subject in subjects:  # warm up: caches, descriptors, the lock file
        time_adds(subject, min(100, settings.batch))
        time_floor(subject, min(100, settings.batch))
    for _ in range(settings.rounds):
        for subject in subjects:
            subject.add_ns.append(time_adds(subject, settings.batch))
            subject.floor_ns.append(time_floor(subject, settings.batch))
            subject.locked_ns.append(time_locked_floor(subject, settings.batch))
    return subjects


def report(
    subjects: list[Subject], swarms_ns: list[float] | None, settings: Settings, quick: bool
) -> bool:
    """Print the table; True when every target is met."""
    print(f"# add() cost with persistence on ({'quick' if quick else 'full'} run)")
    print(
        f"python {platform.python_version()} on {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} cores; median of {settings.rounds} batches x {settings.batch} calls"
    )
    print()
    print(
        "| history size | add() µs | locked floor µs | add() / locked floor "
        f"| target <= {RATIO_TARGET:g}x | one write µs |"
    )
    print("|---:|---:|---:|---:|:---:|---:|")
    ok = True
    medians: dict[int, float] = {}
    for s in subjects:
        add_us = statistics.median(s.add_ns) / 1000
        locked_us = statistics.median(s.locked_ns) / 1000
        ratio = add_us / locked_us
        medians[s.size] = add_us
        passed = ratio <= RATIO_TARGET
        ok &= passed
        print(
            f"| {s.size:,} | {add_us:.2f} | {locked_us:.2f} | {ratio:.2f}x "
            f"| {'PASS' if passed else 'FAIL'} | {statistics.median(s.floor_ns) / 1000:.2f} |"
        )
    print()
    small, large = min(medians), max(medians)
    flat = medians[large] / medians[small]
    passed = abs(flat - 1.0) <= FLAT_TARGET
    ok &= passed
    print(
        f"flat: {_label(large)}/{_label(small)} = {flat:.2f} "
        f"(target within {FLAT_TARGET:.0%} of 1.00: {'PASS' if passed else 'FAIL'})"
    )
    if swarms_ns is None:
        print(f"reference swarms: not measured (set ${SWARMS_PYTHON_ENV} to its Python)")
    else:
        swarms_us = statistics.median(swarms_ns) / 1000
        speedup = swarms_us / medians[small]
        passed = speedup >= SWARMS_SPEEDUP_TARGET
        ok &= passed
        print(
            f"reference swarms 16.0.3 add(): {swarms_us:.2f} µs, {speedup:.1f}x memorylab's at "
            f"{small:,} messages (target >= {SWARMS_SPEEDUP_TARGET:g}x: "
            f"{'PASS' if passed else 'FAIL'})"
        )
    print(
        "locked floor: os.write of the same block between flock(LOCK_EX) and flock(LOCK_UN), the "
        "system calls of a per-message cross-process lock; one write: the same without the lock"
    )
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="CI smoke run: smaller, exits 0")
    parser.add_argument(
        "--dir", type=Path, default=None, help="where to write (default: a temp dir)"
    )
    args = parser.parse_args(argv)
    settings = QUICK if args.quick else FULL
    root = Path(tempfile.mkdtemp(prefix="memorylab-bench-", dir=args.dir))
    subjects: list[Subject] = []
    try:
        subjects = run(settings, root / "workspace")
        swarms_ns = time_swarms(settings, root / "swarms-workspace")
        ok = report(subjects, swarms_ns, settings, args.quick)
    finally:
        for subject in subjects:
            os.close(subject.floor_fd)
            os.close(subject.lock_fd)
            subject.conv.store.close()  # type: ignore[union-attr]
        shutil.rmtree(root, ignore_errors=True)
    if not ok and not args.quick:
        print("a target failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
