"""memorylab and the real reference framework (swarms 16.0.3) writing one agent's memory at once.

The reference runs in its own interpreter (``$MEMORYLAB_SWARMS_PYTHON``, a venv with
``swarms==16.0.3``; ``.ci/run`` makes one): it appends ``ref-<n>`` blocks without memorylab's
lock and compacts now and then as its ``Conversation.compact()`` does (read, archive, remove,
re-create), at most once a second (its archive names have one-second resolution and it
overwrites them). memorylab appends ``ml-<n>`` and compacts every ``every`` messages. When the
reference is done, memorylab appends once more (``ml-final``): that append is where it notices a
replaced file and carries over what the replacer dropped. Then every MEMORY.md and archive is
read strictly and every message of both is counted, in the files and in the timeline the
loaders read.

Used by ``tests/memory/test_mixed_writers.py`` and ``tests/benchmarks/bench_reliability.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

SWARMS_PYTHON_ENV = "MEMORYLAB_SWARMS_PYTHON"
AGENT = "Mixed"

_REFERENCE = textwrap.dedent(
    """
    import os, random, sys, time
    from swarms.structs.conversation import Conversation
    memory_md, count, every, seed, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    rng = random.Random(seed)
    conv = Conversation(name="reference", time_enabled=True, memory_md_path=memory_md)
    while not os.path.exists(go):
        time.sleep(0.001)
    last = 0.0
    for n in range(count):
        conv.add("Human", f"ref-{n}")
        if every and n % every == every - 1:
            # Its archive names have one-second resolution and it opens them with "w": two
            # compactions in one second overwrite the first archive (its own defect, which
            # memorylab cannot mend). A real agent compacts minutes apart.
            time.sleep(max(0.0, last + 1.05 - time.time()))
            conv.compact(summary=f"reference summary after ref-{n}")
            last = time.time()
        time.sleep(rng.random() * 0.002)
    print("done")
    """
)

_MEMORYLAB = textwrap.dedent(
    """
    import os, random, sys, time
    from memorylab import Conversation
    from memorylab.errors import CompactionConflict
    workspace, count, every, seed, go, reference_done = sys.argv[1:7]
    count, every, rng = int(count), int(every), random.Random(int(seed))
    conv = Conversation(agent_name="Mixed", workspace_dir=workspace, preload=False)
    open(go, "w").close()
    for n in range(count):
        conv.add("User", f"ml-{n}")
        if every and n % every == every - 1:
            try:
                conv.compact(f"memorylab summary after ml-{n}")
            except CompactionConflict:  # the reference replaced the file meanwhile: as
                pass  # ContextCompressor does, skip this one (nothing was changed)
        time.sleep(rng.random() * 0.002)
    while not os.path.exists(reference_done):
        time.sleep(0.005)
    conv.add("User", "ml-final")
    print("done")
    """
)


@dataclass(frozen=True)
class Outcome:
    """``*_lost``: messages in no file at all. ``*_duplicated``: messages read more than once
    by the loaders (``memory_df``, which reads a copy once: rule 6 of analysis/sources).
    ``copies``: messages stored in more than one file (the reference's ``compact()`` archiving
    the file memorylab archived at the same moment makes such copies; printed, not a fault)."""

    memorylab_lost: int
    memorylab_duplicated: int
    reference_lost: int
    reference_duplicated: int
    unparseable: int
    files: int
    copies: int = 0


def swarms_python() -> str | None:
    return os.environ.get(SWARMS_PYTHON_ENV) or None


def run(root: Path, *, count: int = 400, every: int = 20, reference_every: int = 0,
        seed: int = 0) -> Outcome:  # fmt: skip
    """One run in the empty folder ``root``; ``reference_every`` > 0 makes the reference
    compact too (every that many of its messages)."""
    python = swarms_python()
    if python is None:
        raise RuntimeError(f"set ${SWARMS_PYTHON_ENV} to a Python that has swarms==16.0.3")
    workspace = root / "workspace"
    memory_md = workspace / "agents" / AGENT / "MEMORY.md"
    go, done = root / "go", root / "reference-done"
    env = {
        **os.environ,
        "SWARMS_TELEMETRY_ON": "false",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_OFFLINE_MODE": "true",
        "HF_HUB_OFFLINE": "1",
    }
    ours = subprocess.Popen(
        [sys.executable, "-c", _MEMORYLAB, str(workspace), str(count), str(every), str(seed),
         str(go), str(done)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    theirs = subprocess.Popen(
        [python, "-c", _REFERENCE, str(memory_md), str(count), str(reference_every),
         str(seed + 1), str(go)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        # The reference waits for memorylab's go: a memorylab writer that failed first (an
        # import error) fails the run now, instead of after the reference's 600 s.
        deadline = time.monotonic() + 600
        while theirs.poll() is None and time.monotonic() < deadline:
            if ours.poll() not in (None, 0):
                raise RuntimeError(f"the memorylab writer failed:\n{ours.communicate()[1][-3000:]}")
            time.sleep(0.05)
        _, their_err = theirs.communicate(timeout=max(1.0, deadline - time.monotonic()))
        if theirs.returncode != 0:
            raise RuntimeError(f"the reference writer failed:\n{their_err[-3000:]}")
        done.touch()
        _, our_err = ours.communicate(timeout=600)
        if ours.returncode != 0:
            raise RuntimeError(f"the memorylab writer failed:\n{our_err[-3000:]}")
    finally:
        for process in (ours, theirs):
            if process.poll() is None:
                process.kill()
                process.wait()
    return count_messages(memory_md, count)


def count_messages(memory_md: Path, count: int) -> Outcome:
    """Read MEMORY.md and every archive strictly, and the agent's timeline as the loaders
    read it; count both writers' messages."""
    from memorylab import read_memory
    from memorylab.analysis import memory_df_with_problems
    from memorylab.errors import MemoryFormatError

    files = [memory_md, *sorted((memory_md.parent / "archive").glob("*.md"))]
    stored: Counter[str] = Counter()
    unparseable = 0
    for path in files:
        try:
            doc = read_memory(path)
        except MemoryFormatError:
            unparseable += 1
            doc = read_memory(path, strict=False).document
        stored.update(m.content for m in doc.messages)
    read = Counter(memory_df_with_problems(memory_md.parent).frame["content"])
    ours = [f"ml-{n}" for n in range(count)] + ["ml-final"]
    theirs = [f"ref-{n}" for n in range(count)]
    return Outcome(
        memorylab_lost=sum(1 for m in ours if not stored[m]),
        memorylab_duplicated=sum(1 for m in ours if read[m] > 1),
        reference_lost=sum(1 for m in theirs if not stored[m]),
        reference_duplicated=sum(1 for m in theirs if read[m] > 1),
        unparseable=unparseable,
        files=len(files),
        copies=sum(1 for m in ours + theirs if stored[m] > 1),
    )
