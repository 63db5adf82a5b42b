"""Per-``add()`` cost with persistence on, against the cost of the write itself.

For each history size (100 / 1k / 10k / 100k; ``--quick``: 100 / 1k / 10k with fewer and
smaller batches) a ``Conversation`` is built whose MEMORY.md already holds that many blocks
(pre-written) and whose in-memory history holds as many messages. Then, in rounds that visit
every size in turn (so drift on a busy machine hits all rows alike):

* ``add()``: time a batch of N ``add()`` calls (``perf_counter_ns``), then cut MEMORY.md and
  the history back to the size, so every batch starts from the same state;
* floor: time N ``os.write`` calls of the same rendered block bytes to a pre-opened ``O_APPEND``
  descriptor on a copy of that MEMORY.md (also cut back after each batch);
* locked floor (for scale, no target): the same write between ``flock(LOCK_EX)`` and
  ``flock(LOCK_UN)`` on a lock file: the system calls any append that excludes other processes
  per message must make, so ``add()`` over it is what memorylab's own work costs.

Each row reports the median per-call time over the batches. Targets: ``add()`` within 5x the
floor, and the largest history within 20% of the smallest (appending must not get slower as the
history grows). ``--quick`` (the CI smoke run) always exits 0; the full run exits 1 when a target
fails. No absolute time is asserted anywhere.

    python tests/benchmarks/bench_append.py [--quick] [--dir DIR]
"""

from __future__ import annotations

import argparse
import fcntl
import gc
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from memorylab import Conversation
from memorylab.memory import format as fmt
from memorylab.memory.records import Message

RATIO_TARGET = 5.0
FLAT_TARGET = 0.20
REFERENCE = "reference swarms 16.x: 20-33 µs per add (measured on this kind of machine)"
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


def report(subjects: list[Subject], settings: Settings, quick: bool) -> bool:
    """Print the table; True when every target is met."""
    print(f"# add() cost with persistence on ({'quick' if quick else 'full'} run)")
    print(
        f"python {platform.python_version()} on {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} cores; median of {settings.rounds} batches x {settings.batch} calls"
    )
    print()
    print(
        f"| history size | add() µs | floor µs | ratio | target ratio <= {RATIO_TARGET:g}x "
        "| locked floor µs | add() / locked floor |"
    )
    print("|---:|---:|---:|---:|:---:|---:|---:|")
    ok = True
    medians: dict[int, float] = {}
    for s in subjects:
        add_us = statistics.median(s.add_ns) / 1000
        floor_us = statistics.median(s.floor_ns) / 1000
        ratio = add_us / floor_us
        medians[s.size] = add_us
        passed = ratio <= RATIO_TARGET
        ok &= passed
        verdict = "PASS" if passed else "FAIL"
        locked_us = statistics.median(s.locked_ns) / 1000
        print(
            f"| {s.size:,} | {add_us:.2f} | {floor_us:.2f} | {ratio:.1f}x | {verdict} "
            f"| {locked_us:.2f} | {add_us / locked_us:.1f}x |"
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
    print(
        "locked floor: the same os.write between flock(LOCK_EX) and flock(LOCK_UN), the system "
        "calls of a per-message cross-process lock (no target; for scale)"
    )
    print(REFERENCE)
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
        ok = report(subjects, settings, args.quick)
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
