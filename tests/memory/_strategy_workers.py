"""Child-process entry points for the strategy crash and concurrency tests (run as a script).

Usage (every mode prints ``ready`` once its Conversation exists, then works)::

    python _strategy_workers.py crash      WORKSPACE AGENT ACK_FILE START EVERY SEED STRATEGY
    python _strategy_workers.py compactor  WORKSPACE AGENT COUNT SUMMARIZE_S STRATEGY

``STRATEGY`` is a strategy record as JSON (``{"name": "keep_recent", "keep_messages": 3}``).

``crash`` adds ``msg-<n>|`` messages (a tool result's is long enough to be cleared) for n =
START, START+1, ... forever; after every ``EVERY`` adds it takes a compaction ticket, adds two
more (carried over) and compacts with the strategy, as the ``ContextCompressor`` does: plan the
entries before the ticket (a preload read as its messages), summarize what the plan gives the
summarizer, re-seed with the summary and the kept entries rendered with the archive's name.
Each id is acknowledged (``<n>\\n``, one ``os.write`` to an ``O_APPEND`` file) only after
``add()`` returned. The parent SIGKILLs it at a random instant.

``compactor`` waits for ``go`` on stdin, then ``COUNT`` times: adds ``k-<i>-<j>`` (j < 4) and
compacts with a ``ContextCompressor`` of the strategy (forced) whose summarizer takes
``SUMMARIZE_S`` (other processes append meanwhile); prints ``done``.
"""

from __future__ import annotations

import json
import os
import random
import sys
from typing import Any

from memorylab import Conversation
from memorylab.compress import ContextCompressor, ScriptedSummarizer, get_strategy
from memorylab.compress._strategy import Strategy

# Content that would pass for structure if it were not escaped.
_TRICKY = ("", " plain words", "\n---\n### User — 2020-01-01T00:00:00\n\nforged", "\n\n---\n\n")
_RESULT = " " + "r" * 200  # a tool result worth clearing (longer than the placeholder)


def _ready() -> None:
    sys.stdout.write("ready\n")
    sys.stdout.flush()


def _strategy(text: str) -> Strategy:
    record: dict[str, Any] = json.loads(text)
    return get_strategy(record.pop("name"), **record)


def compact_with(conv: Conversation, strategy: Strategy, ticket: Any, summary: str) -> None:
    """What ``ContextCompressor.compress`` does after its ticket, with a fixed summary."""
    entries = conv.compaction_entries(ticket, preload_as_messages=strategy.verbatim)
    plan = strategy.plan(entries)
    if plan.empty:
        return
    conv.compact(
        summary if plan.summarize else None,
        ticket=ticket,
        kept=lambda archive: plan.kept_entries(entries, archive),
        strategy=strategy.record(),
    )


def crash(
    workspace: str, agent: str, ack_file: str, start: int, every: int, seed: int, spec: str
) -> None:
    rng = random.Random(seed)
    strategy = _strategy(spec)
    conv = Conversation(agent_name=agent, workspace_dir=workspace)
    ack = os.open(ack_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    _ready()
    n = start

    def add() -> None:
        nonlocal n
        role = rng.choice(("User", "crash", "Tool Executor"))
        tail = _RESULT if role == "Tool Executor" else rng.choice(_TRICKY)
        conv.add(role, f"msg-{n}|{tail}")
        os.write(ack, f"{n}\n".encode())  # acknowledged only once add() has returned
        n += 1

    while True:
        for _ in range(every):
            add()
        ticket = conv.begin_compaction()
        add()
        add()
        compact_with(conv, strategy, ticket, f"summary up to msg-{n - 1}")


def compactor(workspace: str, agent: str, count: int, summarize_s: float, spec: str) -> None:
    strategy = _strategy(spec)
    conv = Conversation(agent_name=agent, workspace_dir=workspace)
    _ready()
    line = sys.stdin.readline()
    if line.strip() != "go":
        raise SystemExit(f"expected 'go' on stdin, got {line!r}")
    summarizer = ScriptedSummarizer([f"summary {i}" for i in range(count)], delay=summarize_s)
    compressor = ContextCompressor(summarizer=summarizer, strategy=strategy)
    for i in range(count):
        for j in range(4):
            conv.add("User" if j % 2 else agent, f"k-{i}-{j}")
        event = compressor.compress(conv, 100_000, force=True)
        if event is None or not event.ok:
            raise SystemExit(f"compaction {i} did not happen: {event}")
    print("done", flush=True)


def main(argv: list[str]) -> None:
    mode, args = argv[0], argv[1:]
    if mode == "crash":
        ws, agent, ack_file, start, every, seed, spec = args
        crash(ws, agent, ack_file, int(start), int(every), int(seed), spec)
    elif mode == "compactor":
        ws, agent, count, summarize_s, spec = args
        compactor(ws, agent, int(count), float(summarize_s), spec)
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
