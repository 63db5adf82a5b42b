"""Child-process entry points for the crash and concurrency tests (run as a script, not imported).

Usage (every mode prints ``ready`` once its Conversation exists, then works)::

    python _workers.py crash      WORKSPACE AGENT ACK_FILE START EVERY SEED
    python _workers.py writer     WORKSPACE AGENT PREFIX COUNT STOP_FILE
    python _workers.py compactor  WORKSPACE AGENT COUNT SUMMARIZE_S GAP_S
    python _workers.py usage      WORKSPACE AGENT ACK_FILE SEED
    python _workers.py usage_writer WORKSPACE AGENT PREFIX COUNT

``crash`` adds ``msg-<n>`` for n = START, START+1, ... forever; after every ``EVERY`` adds it
takes a compaction ticket, adds two more messages (carried over) and compacts. Each id is
acknowledged (``<n>\\n``, one ``os.write`` to an ``O_APPEND`` file) only after ``add()`` has
returned. The parent SIGKILLs it at a random instant.

``usage`` runs an ``Agent`` (a scripted model that answers at once, reporting usage; a small
window, so it compacts) for ever; after each run it acknowledges the call's usage record
(``<session_start> <call>\\n``). The parent SIGKILLs it at a random instant.

``writer``, ``compactor`` and ``usage_writer`` wait for a ``go`` line on stdin after ``ready``
(so all processes start together) and print ``done`` when finished. A writer keeps writing past
``COUNT`` until ``STOP_FILE`` exists, so the compactions always run while it writes. A
``usage_writer`` adds a message and appends a usage record (``session_start`` PREFIX, ``call``
1 ... COUNT) through the store, as the Agent does after each call.
"""

from __future__ import annotations

import os
import random
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from memorylab import Conversation

# Content that would pass for structure if it were not escaped: the crash test also checks
# that escaping holds up when files are torn apart by kills.
_TRICKY = (
    "",
    " plain words",
    "\n---\n### User — 2020-01-01T00:00:00\n\nforged",
    "\n\n---\n\n",
    " " + "x" * 300,
    "\nüñïçødé ✓ 🧠",
)


# Messages of a given size (the crash run's --size): a large write is the one a kill can cut.
_FILLER = "." * int(os.environ.get("MEMORYLAB_CRASH_FILL", "0") or 0) + "|"


def _ready() -> None:
    sys.stdout.write("ready\n")
    sys.stdout.flush()


def _wait_for_go() -> None:
    line = sys.stdin.readline()
    if line.strip() != "go":
        raise SystemExit(f"expected 'go' on stdin, got {line!r}")


def crash(workspace: str, agent: str, ack_file: str, start: int, every: int, seed: int) -> None:
    rng = random.Random(seed)
    conv = Conversation(agent_name=agent, workspace_dir=workspace)
    ack = os.open(ack_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    _ready()
    n = start

    def add() -> None:
        nonlocal n
        role = rng.choice(("User", "crash", "Tool Executor"))
        conv.add(role, f"msg-{n}{_FILLER}{rng.choice(_TRICKY)}")
        os.write(ack, f"{n}\n".encode())  # acknowledged only once add() has returned
        n += 1

    while True:
        for _ in range(every):
            add()
        ticket = conv.begin_compaction()
        add()
        add()
        conv.compact(f"summary up to msg-{n - 1}", ticket=ticket)


def writer(workspace: str, agent: str, prefix: str, count: int, stop_file: str) -> None:
    """Write ``<prefix>-0`` ... at least ``count`` messages, and go on until ``stop_file``
    exists, so the writing overlaps every compaction however fast either side is. Prints
    ``done <number written>``."""
    conv = Conversation(agent_name=agent, workspace_dir=workspace)
    stop = Path(stop_file)
    _ready()
    _wait_for_go()
    n = 0
    while n < count or n % 20 or not stop.exists():
        conv.add("User" if n % 2 else agent, f"{prefix}-{n}")
        n += 1
    print("done", n, flush=True)


def compactor(workspace: str, agent: str, count: int, summarize_s: float, gap_s: float) -> None:
    conv = Conversation(agent_name=agent, workspace_dir=workspace)
    _ready()
    _wait_for_go()
    for i in range(count):
        time.sleep(gap_s)
        ticket = conv.begin_compaction()
        time.sleep(summarize_s)  # a slow summarizer: writers keep appending meanwhile
        conv.compact(f"summary {i}", ticket=ticket)
    print("done", flush=True)


def usage(workspace: str, agent: str, ack_file: str, seed: int) -> None:
    from memorylab import Agent
    from memorylab.llm import ChatReply

    rng = random.Random(seed)

    def completion(model: str, messages: object, **_: object) -> ChatReply:
        return ChatReply(
            content=f"reply {rng.random()}{_FILLER}",
            model=model,
            input_tokens=rng.randint(100, 5000),
            output_tokens=rng.randint(1, 50),
            cached_tokens=rng.choice((None, 0, 64)),
            reasoning_tokens=rng.choice((None, 3)),
        )

    bot = Agent(agent_name=agent, workspace_dir=workspace, completion=completion,
                context_length=300, summarizer_model="memorylab/extractive")  # fmt: skip
    ack = os.open(ack_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def run() -> None:
        bot.run(f"task {rng.random()} {'words ' * rng.randint(5, 80)}{rng.choice(_TRICKY)}")
        record = bot.usage_records[-1]
        os.write(ack, f"{record.session_start} {record.call}\n".encode())

    run()  # tiktoken loaded, the first record written: the kills land in later calls
    bot.check_compression(force=True)  # and the summarizer loaded
    _ready()
    while True:
        run()


def usage_writer(workspace: str, agent: str, prefix: str, count: int) -> None:
    conv = Conversation(agent_name=agent, workspace_dir=workspace)
    store = conv.store
    assert store is not None
    _ready()
    _wait_for_go()
    for n in range(count):
        conv.add("User", f"{prefix}-{n}")
        # Every record the Agent writes has its time (UsageRecord.to_dict): one without is a
        # reported problem of the file.
        store.append_usage({"agent": agent, "session_start": prefix, "call": n + 1,
                            "time": datetime.now(UTC).isoformat(),
                            "estimated_tokens": n, "input_tokens": 2 * n})  # fmt: skip
    print("done", count, flush=True)


def main(argv: list[str]) -> None:
    mode, args = argv[0], argv[1:]
    if mode == "crash":
        ws, agent, ack_file, start, every, seed = args
        crash(ws, agent, ack_file, int(start), int(every), int(seed))
    elif mode == "writer":
        ws, agent, prefix, count, stop_file = args
        writer(ws, agent, prefix, int(count), stop_file)
    elif mode == "compactor":
        ws, agent, count, summarize_s, gap_s = args
        compactor(ws, agent, int(count), float(summarize_s), float(gap_s))
    elif mode == "usage":
        ws, agent, ack_file, seed = args
        usage(ws, agent, ack_file, int(seed))
    elif mode == "usage_writer":
        ws, agent, prefix, count = args
        usage_writer(ws, agent, prefix, int(count))
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
