"""Faults where memorylab meets the rest of the world, each tried many times: one table of
trials, messages lost and files left unparseable (read strictly).

* the real reference framework (``swarms==16.0.3``, in the interpreter ``$MEMORYLAB_SWARMS_PYTHON``
  names; ``.ci/run`` makes one) appending while memorylab appends and compacts every 20
  messages, then also compacting (``tests/memory/mixed_writers.py``): memorylab's messages and the
  reference's are counted separately;
* MEMORY.md replaced by rename (an editor's save) at a random moment while memorylab appends;
* MEMORY.md deleted by hand at a random moment while memorylab appends;
* the disk full (``RLIMIT_FSIZE``) at a random size while memorylab appends, then space freed.

Targets: memorylab loses no message and leaves no file unparseable in any trial; the reference
loses none in the mixed runs either. ``--quick`` (CI's smoke run) makes fewer, shorter trials
and always exits 0; the full run (10 mixed runs of 400 messages each) exits 1 when a target
fails. No time is measured.

    python tests/benchmarks/bench_reliability.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "memory"))
import mixed_writers


@dataclass
class Row:
    fault: str
    trials: int = 0
    lost: int = 0
    unparseable: int = 0
    note: str = ""


_ONE_TRIAL = textwrap.dedent(
    """
    import os, random, resource, signal, sys
    from memorylab import Conversation, read_memory
    from memorylab.errors import MemoryFormatError, StoreError
    fault, workspace, count, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    rng = random.Random(seed)
    conv = Conversation(agent_name="R", workspace_dir=workspace, preload=False)
    path = conv.memory_md_path
    at = rng.randrange(1, count)
    refused = 0
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    for n in range(count):
        if n == at:
            if fault == "rename":
                text = path.read_text(encoding="utf-8")
                tmp = path.with_name("editor.tmp")
                tmp.write_text(text, encoding="utf-8")
                os.replace(tmp, path)
            elif fault == "delete":
                path.unlink()
            elif fault == "disk-full":
                size = path.stat().st_size + rng.randrange(0, 200)
                resource.setrlimit(resource.RLIMIT_FSIZE, (size, resource.RLIM_INFINITY))
        if fault == "disk-full" and n == at + 3:
            resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY,) * 2)
        try:
            conv.add("User", f"m-{n} " + "x" * rng.randrange(0, 120))
        except StoreError:
            refused += 1  # told, not silently lost: counted as refused, not lost
            conv.conversation_history.append({"role": "User", "content": f"m-{n}", "refused": 1})
    try:
        doc = read_memory(path)
        unparseable = 0
    except MemoryFormatError:
        doc = read_memory(path, strict=False).document
        unparseable = 1
    kept = {m.content.split(" ", 1)[0] for m in doc.messages}
    acked = {e["content"].split(" ", 1)[0] for e in conv.conversation_history
             if not e.get("refused")}
    print(len(acked - kept), unparseable, refused)
    """
)


def _single_writer(fault: str, trials: int, count: int, root: Path) -> Row:
    labels = {"rename": "MEMORY.md replaced by rename (an editor's save)",
              "delete": "MEMORY.md deleted by hand", "disk-full": "disk full, then space freed"}
    row = Row(labels[fault])  # fmt: skip
    refused = 0
    for trial in range(trials):
        workspace = root / f"{fault}-{trial}"
        out = subprocess.run(
            [sys.executable, "-c", _ONE_TRIAL, fault, str(workspace), str(count), str(trial)],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        if out.returncode != 0:
            raise SystemExit(f"{fault} trial {trial} failed:\n{out.stderr[-2000:]}")
        lost, unparseable, told = map(int, out.stdout.split())
        row.trials += 1
        row.lost += lost
        row.unparseable += unparseable
        refused += told
        shutil.rmtree(workspace, ignore_errors=True)
    if refused:
        row.note = f"{refused} add() refused with StoreError (disk full), none half-written"
    return row


def _mixed(trials: int, count: int, reference_every: int, root: Path) -> list[Row]:
    label = "reference compacting too" if reference_every else "reference appending"
    ours = Row(f"memorylab beside the {label}")
    theirs = Row(f"the {label}: its own messages")
    if mixed_writers.swarms_python() is None:
        note = f"not measured: set ${mixed_writers.SWARMS_PYTHON_ENV}"
        return [Row(ours.fault, note=note), Row(theirs.fault, note=note)]
    for trial in range(trials):
        folder = root / f"mixed-{reference_every}-{trial}"
        folder.mkdir()
        outcome = mixed_writers.run(
            folder, count=count, every=20, reference_every=reference_every, seed=trial
        )
        for row, lost in ((ours, outcome.memorylab_lost), (theirs, outcome.reference_lost)):
            row.trials += 1
            row.lost += lost
            row.unparseable += outcome.unparseable
        shutil.rmtree(folder, ignore_errors=True)
    ours.note = f"{count} messages each, memorylab compacting every 20"
    return [ours, theirs]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="CI smoke run: fewer trials, exits 0")
    args = parser.parse_args(argv)
    mixed_trials, mixed_count = (2, 100) if args.quick else (10, 400)
    trials, count = (3, 40) if args.quick else (30, 200)
    random.seed(0)
    root = Path(tempfile.mkdtemp(prefix="memorylab-reliability-"))
    try:
        rows = [
            *_mixed(mixed_trials, mixed_count, 0, root),
            *_mixed(mixed_trials, mixed_count, 100 if not args.quick else 40, root),
            _single_writer("rename", trials, count, root),
            _single_writer("delete", trials, count, root),
            _single_writer("disk-full", trials, count, root),
        ]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"# reliability: faults tried ({'quick' if args.quick else 'full'} run)")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores")
    print()
    print("| fault | trials | messages lost | files left unparseable | note |")
    print("|---|---:|---:|---:|---|")
    for row in rows:
        print(f"| {row.fault} | {row.trials} | {row.lost} | {row.unparseable} | {row.note} |")
    ok = all(row.lost == 0 and row.unparseable == 0 for row in rows)
    if not ok and not args.quick:
        print("a target failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
