"""Token-count cost per message, per check and after a big preload, against tiktoken itself.

Messages: ~1 KB of deterministic prose, bullet lists and code (``random.Random(SEED)``), counted
with ``get_token_counter("gpt-4o")``. Per history size (1k / 10k / 100k; ``--quick``: 1k / 10k,
fewer and smaller batches) a ``Conversation`` holds that many messages in MEMORY.md and in
memory, counted once. Then, in rounds that visit every size in turn:

* (a) a batch of ``add()`` + ``should_compress(conv.token_count(), CONTEXT_LENGTH, 0.9)``, then
  MEMORY.md, the history and the running token total are cut back (every batch starts equal);
  floor: ``os.write`` of the same block to a pre-opened ``O_APPEND`` descriptor + tiktoken's
  ``encode_ordinary`` of the fields the check counts of the message as the request carries it
  (its role and its content, a user turn's stamped: :func:`memorylab.memory.request_message`):
  the same bytes written and the same text counted, nothing else;
* (b) ``token_count()`` with nothing new (O(1)); for scale, one O(n) check (render the whole
  history, count it) is timed once per size.

(c) ``Conversation(...)`` + first ``token_count()`` after a 10 MB MEMORY.md (``--quick``: 2 MB),
against one ``encode_ordinary`` of its text; and with ``preload_max_tokens=32_000`` (an Agent's).

Targets (on medians): (a) <= 1.6x the floor, largest history within 20% of the smallest; (b)
largest within 20% of smallest; (c) whole file <= 1.5x the floor. ``--quick`` (CI) always exits
0; the full run exits 1 when a target fails. No absolute time is asserted.

    python tests/benchmarks/bench_tokens.py [--quick] [--dir DIR]
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
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import tiktoken

from memorylab import Conversation
from memorylab.compress._policy import should_compress
from memorylab.compress._tokens import TokenCounter, get_token_counter
from memorylab.memory import _format as fmt
from memorylab.memory import request_message
from memorylab.memory._preload import PreloadPlan
from memorylab.memory._records import Message

RATIO_TARGET = 1.6  # (a) add() + check
PRELOAD_TARGET = 1.5  # (c) construct + first check after a big MEMORY.md
FLAT_TARGET = 0.20
CONTEXT_LENGTH = 128_000
THRESHOLD = 0.9
PRELOAD_BUDGET = 32_000
MODEL = "gpt-4o"
SEED = 20240613
POOL = 256  # distinct messages, cycled
VERDICT = {True: "PASS", False: "FAIL"}
REFERENCE = (
    "reference swarms 16.x: 13-15 ms per warm check, 250+ ms cold at 10k messages",
    "reference swarms 16.x: 3+ s for the first history read after a 10 MB preload",
)
_PROSE = (
    "the agent read file result error value function call tool output context window summary "
    "memory message user request response status test case config path list token budget "
    "model step plan retry timeout cache index query record batch thread lock write parse "
    "check returns fails passes because after before while then when which every one two"
)
WORDS = _PROSE.split()
NAMES = ("items", "path", "result", "config", "record", "handle", "payload", "cursor", "data")
CODE = (
    "def {a}_{b}(self, {c}: str) -> int:",
    "    return len(self.{a}[{n}])",
    "for {a} in {b}.{c}():",
    "    if {a} is None:",
    '        raise ValueError(f"bad {a}: {{{b}!r}}")',
    "{a} = json.loads({b}.read_text())  # {c}",
    "assert {a} == {n}, {b}",
)

Pool = list[tuple[str, str]]  # (role, content)


def make_message(rng: random.Random) -> str:
    """~1 KB: paragraphs of prose, now and then a bullet list or a few lines of code."""
    parts: list[str] = []
    while sum(len(p) + 2 for p in parts) < 1000:
        kind = rng.random()
        if kind < 0.55:
            sentences = (" ".join(rng.choices(WORDS, k=rng.randint(6, 16))) for _ in range(3))
            parts.append(" ".join(s.capitalize() + rng.choice(".?.!.") for s in sentences))
        elif kind < 0.75:
            parts.append("\n".join("- " + " ".join(rng.choices(WORDS, k=5)) for _ in range(3)))
        else:
            names = {"a": rng.choice(NAMES), "b": rng.choice(NAMES), "c": rng.choice(NAMES)}
            lines = rng.sample(CODE, k=rng.randint(2, 4))
            parts.append("\n".join(line.format(n=rng.randint(0, 999), **names) for line in lines))
    return "\n\n".join(parts)


@dataclass(frozen=True)
class Settings:
    sizes: tuple[int, ...]
    batch: int  # (a) add() + check per batch
    checks: int  # (b) token_count() per batch
    rounds: int  # (a) and (b); (c) uses rounds // 6
    megabytes: int  # (c)


FULL = Settings(sizes=(1_000, 10_000, 100_000), batch=250, checks=20_000, rounds=31, megabytes=10)
QUICK = Settings(sizes=(1_000, 10_000), batch=100, checks=10_000, rounds=15, megabytes=2)


@dataclass
class Subject:
    size: int
    conv: Conversation
    memory_md: Path
    base_bytes: int
    base_len: int
    base_tokens: int
    floor_fd: int
    add_ns: list[float] = field(default_factory=list)
    floor_ns: list[float] = field(default_factory=list)
    check_ns: list[float] = field(default_factory=list)
    full_count_ms: float = 0.0


def _timed(fn: Callable[..., object], *args: object) -> float:
    """Nanoseconds ``fn(*args)`` takes, with the garbage collector off."""
    gc.disable()
    try:
        start = time.perf_counter_ns()
        fn(*args)
        return time.perf_counter_ns() - start
    finally:
        gc.enable()


def new_memory(workspace: Path, agent: str, pool: Pool, count: int) -> Path:
    """A MEMORY.md holding ``count`` messages of the pool (pre-written: faster than add())."""
    Conversation(agent_name=agent, workspace_dir=workspace).store.close()  # type: ignore[union-attr]
    memory_md = workspace / "agents" / agent / "MEMORY.md"
    now = datetime.now().astimezone()
    blocks = [fmt.render_block(Message(role, content, now)) for role, content in pool]
    body = "".join(blocks[n % POOL] for n in range(count))
    memory_md.write_text(fmt.render_header(f"{agent}_conversation", now) + body, encoding="utf-8")
    return memory_md


def build(workspace: Path, size: int, pool: Pool, counter: TokenCounter) -> Subject:
    agent = f"bench-{size}"
    memory_md = new_memory(workspace, agent, pool, size)
    seeds = [{"role": pool[n % POOL][0], "content": pool[n % POOL][1]} for n in range(size)]
    conv = Conversation(
        agent_name=agent,
        workspace_dir=workspace,
        preload=False,
        messages=seeds,
        token_counter=counter,
    )
    floor_path = memory_md.with_name("floor.md")
    shutil.copyfile(memory_md, floor_path)
    return Subject(
        size=size,
        conv=conv,
        memory_md=memory_md,
        base_bytes=memory_md.stat().st_size,
        base_len=len(conv.conversation_history),
        base_tokens=conv.token_count(),  # the one full count, outside any timing
        floor_fd=os.open(floor_path, os.O_WRONLY | os.O_APPEND),
    )


def time_adds(subject: Subject, items: Pool, expected_bytes: int) -> float:
    conv = subject.conv

    def batch() -> None:
        for role, content in items:
            conv.add(role, content)
            should_compress(conv.token_count(), CONTEXT_LENGTH, THRESHOLD)

    elapsed = _timed(batch)
    assert subject.memory_md.stat().st_size == subject.base_bytes + expected_bytes
    assert conv.token_count() > subject.base_tokens
    os.truncate(subject.memory_md, subject.base_bytes)  # back to the same history size
    del conv.conversation_history[subject.base_len :]
    # A shrunk history makes token_count() recount everything (O(n), by design); we removed only
    # what this batch added, so restore the running total instead.
    # (token_count() is the running total + the request's fixed tokens).
    conv._counted = subject.base_len
    conv._total_tokens = subject.base_tokens - conv.fixed_request_tokens
    assert conv.token_count() == subject.base_tokens
    return elapsed / len(items)


def time_floor(subject: Subject, items: list[tuple[bytes, list[str]]], encode: Any) -> float:
    fd = subject.floor_fd

    def batch() -> None:
        for block, texts in items:
            os.write(fd, block)
            for text in texts:
                encode(text)

    elapsed = _timed(batch)
    os.truncate(subject.memory_md.with_name("floor.md"), subject.base_bytes)
    return elapsed / len(items)


def time_checks(subject: Subject, n: int) -> float:
    count = subject.conv.token_count
    count()  # the first check; each one timed below has nothing new to count

    def batch() -> None:
        for _ in range(n):
            count()

    return _timed(batch) / n


def _counted_texts(role: str, content: str, stamp: str) -> list[str]:
    """The texts the check counts of a message: the request message's role and content."""
    entry = {"role": role, "content": content, "timestamp": stamp}
    message = request_message(entry, counted=True)
    return [message["role"], message["content"]]


def run_history(settings: Settings, workspace: Path, pool: Pool, encode: Any) -> list[Subject]:
    counter = get_token_counter(MODEL)
    stamp = datetime.now(UTC).isoformat(timespec="microseconds")  # as wide as add()'s stamps
    items = [pool[i % POOL] for i in range(settings.batch)]
    floor_items = [  # the block add() writes, the texts token_count() counts
        (fmt.block_text(r, stamp, c).encode("utf-8"), _counted_texts(r, c, stamp)) for r, c in items
    ]
    expected = sum(len(block) for block, _ in floor_items)
    subjects = [build(workspace, size, pool, counter) for size in settings.sizes]
    for subject in subjects:  # warm up: caches, descriptors, the lock file
        time_adds(subject, items[:100], sum(len(block) for block, _ in floor_items[:100]))
        time_floor(subject, floor_items[:100], encode)
        time_checks(subject, 1_000)
    for _ in range(settings.rounds):
        gc.collect()
        for subject in subjects:
            subject.add_ns.append(time_adds(subject, items, expected))
            subject.floor_ns.append(time_floor(subject, floor_items, encode))
            subject.check_ns.append(time_checks(subject, settings.checks))
    for subject in subjects:  # what an O(n) check costs: render the history, count it, once
        render = subject.conv.return_history_as_string
        subject.full_count_ms = _timed(lambda r: counter(r()), render) / 1e6
    return subjects


@dataclass
class Preload:
    messages: int
    file_bytes: int
    ms: dict[str, list[float]] = field(default_factory=dict)  # "whole", "bounded", "floor"
    outcome: dict[str, tuple[int, PreloadPlan | None]] = field(default_factory=dict)


def run_preload(settings: Settings, workspace: Path, pool: Pool, encode: Any) -> Preload:
    """(c): construct + first check after a big MEMORY.md, whole and bounded, and the floor."""
    agent, counter = "bench-preload", get_token_counter(MODEL)
    block_bytes = statistics.mean(len(fmt.block_text(r, "x" * 32, c).encode()) for r, c in pool)
    count = int(settings.megabytes * 1_000_000 / block_bytes) + 1
    memory_md = new_memory(workspace, agent, pool, count)
    result = Preload(messages=count, file_bytes=memory_md.stat().st_size)
    text = memory_md.read_text(encoding="utf-8")  # the floor only encodes

    def construct(key: str, budget: int | None) -> None:
        conv = Conversation(
            agent_name=agent,
            workspace_dir=workspace,
            token_counter=counter,
            preload_max_tokens=budget,
        )
        result.outcome[key] = (conv.token_count(), conv.preload_plan)
        conv.store.close()  # type: ignore[union-attr]

    for round_ in range(max(3, settings.rounds // 6) + 1):  # round 0 warms up
        gc.collect()
        times = {
            "whole": _timed(lambda: construct("whole", None)),
            "bounded": _timed(lambda: construct("bounded", PRELOAD_BUDGET)),
            "floor": _timed(lambda: encode(text)),
        }
        assert memory_md.stat().st_size == result.file_bytes  # construction leaves the file alone
        for key, ns in times.items():
            result.ms.setdefault(key, []).extend([ns / 1e6] if round_ else [])
    return result


def _flat(name: str, medians: dict[int, float]) -> bool:
    small, large = min(medians), max(medians)
    flat = medians[large] / medians[small]
    passed = abs(flat - 1.0) <= FLAT_TARGET
    print(
        f"\nflat ({name}): {large // 1000}k/{small // 1000}k = {flat:.2f} "
        f"(target within {FLAT_TARGET:.0%} of 1.00: {VERDICT[passed]})"
    )
    return passed


def report_history(subjects: list[Subject], settings: Settings) -> bool:
    ok = True
    print(f"\n## (a) add() + compression check per message ({settings.batch:,} per batch)\n")
    print(f"| history size | add + check µs | floor µs | ratio | target <= {RATIO_TARGET:g}x |")
    print("|---:|---:|---:|---:|:---:|")
    medians: dict[int, float] = {}
    for s in subjects:
        add_us = statistics.median(s.add_ns) / 1000
        floor_us = statistics.median(s.floor_ns) / 1000
        medians[s.size], ratio = add_us, add_us / floor_us
        ok &= (passed := ratio <= RATIO_TARGET)
        print(f"| {s.size:,} | {add_us:.2f} | {floor_us:.2f} | {ratio:.2f}x | {VERDICT[passed]} |")
    ok &= _flat("add + check", medians)
    print(
        "floor: os.write of the same block (O_APPEND) + tiktoken encode_ordinary of the message "
        "as counted (the request message's role and content, a user turn's stamped)"
    )

    print(f"\n## (b) token_count() with nothing new ({settings.checks:,} per batch)\n")
    print("| history size | check µs | vs smallest | target within 20% | O(n) check ms |")
    print("|---:|---:|---:|:---:|---:|")
    checks = {s.size: statistics.median(s.check_ns) / 1000 for s in subjects}
    for s in subjects:
        rel = checks[s.size] / checks[min(checks)]
        ok &= (passed := abs(rel - 1.0) <= FLAT_TARGET)
        row = f"{checks[s.size]:.3f} | {rel:.2f} | {VERDICT[passed]} | {s.full_count_ms:,.0f}"
        print(f"| {s.size:,} | {row} |")
    ok &= _flat("check", checks)
    print("O(n) check: what an O(n) check costs (render the whole history, count it; timed once)")
    print(REFERENCE[0])
    return ok


def report_preload(pre: Preload) -> bool:
    whole, bounded, floor = (statistics.median(pre.ms[k]) for k in ("whole", "bounded", "floor"))
    print(
        f"\n## (c) Conversation(...) + first token_count() after a {pre.file_bytes / 1e6:.1f} MB "
        f"MEMORY.md ({pre.messages:,} messages; median of {len(pre.ms['whole'])})\n"
    )
    print(f"| preload | ms | floor ms | ratio | target <= {PRELOAD_TARGET:g}x |")
    print("|---|---:|---:|---:|:---:|")
    passed = whole / floor <= PRELOAD_TARGET
    row = f"{whole:,.0f} | {floor:,.0f} | {whole / floor:.2f}x | {VERDICT[passed]}"
    print(f"| whole file | {row} |")
    budget = f"preload_max_tokens={PRELOAD_BUDGET:,}"
    print(f"| {budget} | {bounded:,.1f} | {floor:,.0f} | {bounded / floor:.2f}x | (no target) |")
    tokens, plan = pre.outcome["bounded"]
    assert plan is not None
    print(
        f"\nfloor: one tiktoken encode_ordinary of the file's text (read beforehand); bounded: "
        f"{plan.kept_messages} messages kept ({plan.omitted_messages:,} left in the file), "
        f"{tokens:,} tokens (whole file: {pre.outcome['whole'][0]:,})"
    )
    print(REFERENCE[1])
    return passed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="CI smoke run: smaller, exits 0")
    parser.add_argument(
        "--dir", type=Path, default=None, help="where to write (default: a temp dir)"
    )
    args = parser.parse_args(argv)
    settings = QUICK if args.quick else FULL
    rng = random.Random(SEED)
    pool = [("User" if n % 2 else "bench-agent", make_message(rng)) for n in range(POOL)]
    get_token_counter(MODEL).count("x")  # points tiktoken at memorylab's offline files
    encode = tiktoken.get_encoding("o200k_base").encode_ordinary  # the encoding it counts with
    sizes = [len(content.encode("utf-8")) for _, content in pool]
    tokens = [len(encode(content)) for _, content in pool]
    root = Path(tempfile.mkdtemp(prefix="memorylab-bench-", dir=args.dir))
    subjects: list[Subject] = []
    try:
        subjects = run_history(settings, root / "workspace", pool, encode)
        preload = run_preload(settings, root / "workspace", pool, encode)
        print(f"# token counting cost ({'quick' if args.quick else 'full'} run)")
        print(
            f"python {platform.python_version()} on {platform.system()} {platform.machine()}, "
            f"{os.cpu_count()} cores; {MODEL} (o200k_base); {POOL} distinct messages of "
            f"{min(sizes)}-{max(sizes)} bytes (mean {statistics.mean(sizes):.0f} B, "
            f"{statistics.mean(tokens):.0f} tokens); median of {settings.rounds} batches"
        )
        ok = report_history(subjects, settings)
        ok &= report_preload(preload)
    finally:
        for subject in subjects:
            os.close(subject.floor_fd)
            subject.conv.store.close()  # type: ignore[union-attr]
        shutil.rmtree(root, ignore_errors=True)
    if not ok and not args.quick:
        print("a target failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
