"""Faults where memorylab meets the rest of the world, each tried many times: one table of
trials, messages lost and files left unparseable (read strictly).

* the real reference framework (``swarms==16.0.3``, in the interpreter ``$MEMORYLAB_SWARMS_PYTHON``
  names; ``.ci/run`` makes one) appending while memorylab appends and compacts every 20
  messages, then also compacting (``tests/memory/mixed_writers.py``): memorylab's messages and the
  reference's are counted separately;
* MEMORY.md replaced by rename (an editor's save) at a random moment while memorylab appends;
* MEMORY.md deleted by hand at a random moment while memorylab appends;
* the disk full (``RLIMIT_FSIZE``) at a random size while memorylab appends, then space freed;
* carry-over (a second table, timed): a process appends N blocks of ~500 bytes (2,500 / 5,000 /
  10,000 / 20,000: up to 10 MB), a writer that keeps no record replaces MEMORY.md (an editor's
  save by rename: every block kept, or all but one; ``rm``: every block dropped), and the
  process's next ``add()`` checks each of its blocks against the new file and carries over
  what is missing. Its time is set against a floor measured in the same run (medians of 5):
  one read of the file, plus what the filesystem takes to free the replaced file when its last
  descriptor is closed (``add()`` closes it), plus for ``rm`` one write of the file. Target:
  the editor's save at most 5x the floor at 10,000 and 20,000 blocks (the check is linear: it
  used to be blocks x file size, 127-258 s at 20,000 blocks, holding the agent lock); the other
  rows are printed for scale.

Targets: memorylab loses no message and leaves no file unparseable in any trial; the reference
loses none in the mixed runs either. ``--quick`` (CI's smoke run) makes fewer, shorter trials
and always exits 0; the full run (10 mixed runs of 400 messages each) exits 1 when a target
fails. Only the carry-over table measures time (ratios within one run).

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


_CARRY_OVER = textwrap.dedent(
    """
    import os, statistics, sys, time
    from memorylab import Conversation
    fault, workspace, blocks, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    filler = "x" * 440  # ~500 bytes a block with its heading and separator
    times, reads, writes, frees, size = [], [], [], [], 0
    for repeat in range(repeats):
        # A fresh agent each time: the check happens once per replacement.
        conv = Conversation(agent_name=f"C{repeat}", workspace_dir=workspace, preload=False)
        for n in range(blocks):
            conv.add("User", f"m-{n} {filler}")
        path = conv.memory_md_path
        data = path.read_bytes()
        size = len(data)
        start = time.perf_counter()
        with open(path, "rb") as handle:  # one read of the file, for scale
            handle.read()
        reads.append(time.perf_counter() - start)
        scratch = path.with_name("scratch.md")
        start = time.perf_counter()
        fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, data)  # and one write of it
        os.close(fd)
        writes.append(time.perf_counter() - start)
        fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        step = len(data) // blocks
        for at in range(0, len(data), step):  # written as MEMORY.md was: one write a block
            os.write(fd, data[at : at + step])
        os.unlink(scratch)
        start = time.perf_counter()
        os.close(fd)  # what the filesystem takes to free a removed file: the replaced one is
        frees.append(time.perf_counter() - start)  # freed when add() closes it
        if fault in ("rename", "trim"):  # an editor's save: a copy, renamed over MEMORY.md
            if fault == "trim":  # without one block of the middle
                middle = f"m-{blocks // 2} {filler}".encode()
                cut = data.index(middle)
                start = data.rindex(b"### ", 0, cut)
                data = data[:start] + data[data.index(b"\\n---\\n\\n", cut) + 6 :]
            tmp = path.with_name("editor.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
        else:  # deleted by hand
            path.unlink()
        start = time.perf_counter()
        conv.add("User", "next")  # notices the replaced file, checks and carries over
        times.append(time.perf_counter() - start)
        kept = path.read_bytes()
        assert kept.count(b"\\n\\nm-") == blocks and kept.count(b"\\n\\nnext\\n") == 1
    med = statistics.median
    print(size, med(reads), med(writes), med(frees), med(times))
    """
)


@dataclass
class CarryRow:
    fault: str
    blocks: int
    size: int
    read_s: float
    write_s: float
    free_s: float
    add_s: float

    @property
    def floor_s(self) -> float:
        """One read of the file and the filesystem freeing the replaced one (its last
        descriptor closed); for rm, one write of the file too."""
        return self.read_s + self.free_s + (self.write_s if self.fault == "rm" else 0.0)

    @property
    def ratio(self) -> float:
        return self.add_s / self.floor_s


CARRY_TARGET = 5.0  # the editor's save: add() at most this many floors (read + free) ...
CARRY_JUDGED = 10_000  # ... from this many blocks on (the case: 10 MB, 20,000 blocks;
# below, fixed costs of a few system calls weigh as much as the reads)


def _carry_over(sizes: list[int], repeats: int, root: Path) -> list[CarryRow]:
    rows = []
    for fault in ("rename", "trim", "rm"):
        for blocks in sizes:
            workspace = root / f"carry-{fault}-{blocks}"
            out = subprocess.run(
                [sys.executable, "-c", _CARRY_OVER, fault, str(workspace), str(blocks),
                 str(repeats)],
                capture_output=True, text=True, timeout=600,
            )  # fmt: skip
            if out.returncode != 0:
                raise SystemExit(f"carry-over at {blocks} blocks failed:\n{out.stderr[-2000:]}")
            size, *times = out.stdout.split()
            rows.append(CarryRow(fault, blocks, int(size), *map(float, times)))
            shutil.rmtree(workspace, ignore_errors=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="CI smoke run: fewer trials, exits 0")
    args = parser.parse_args(argv)
    mixed_trials, mixed_count = (2, 100) if args.quick else (10, 400)
    trials, count = (3, 40) if args.quick else (30, 200)
    random.seed(0)
    root = Path(tempfile.mkdtemp(prefix="memorylab-reliability-"))
    sizes = [300] if args.quick else [2_500, 5_000, 10_000, 20_000]
    try:
        carry = _carry_over(sizes, 1 if args.quick else 5, root)
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
    print()
    repeats = 1 if args.quick else 5
    print(f"# carry-over after a replacement by a writer that keeps no record (median of {repeats})")
    print()
    print("| replaced by | blocks | file | one read | one write | freeing the old file | next add() "
          "| ratio to the floor | target |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    labels = {"rename": "an editor's save (all kept)",
              "trim": "an editor's save without one block (carried over)",
              "rm": "rm (all carried over)"}  # fmt: skip
    for c in carry:
        floor = "read + free + write" if c.fault == "rm" else "read + free"
        verdict = "PASS" if c.ratio <= CARRY_TARGET else "FAIL"
        judged = c.fault == "rename" and c.blocks >= CARRY_JUDGED and not args.quick
        target = f"<= {CARRY_TARGET:g}x {floor}: {verdict}" if judged else f"vs {floor}"
        print(f"| {labels[c.fault]} | {c.blocks:,} | {c.size / 1e6:.1f} MB | "
              f"{c.read_s * 1e3:.1f} ms | {c.write_s * 1e3:.1f} ms | {c.free_s * 1e3:.1f} ms | "
              f"{c.add_s * 1e3:.1f} ms | {c.ratio:.1f}x | {target} |")  # fmt: skip
    ok = all(row.lost == 0 and row.unparseable == 0 for row in rows)
    ok = ok and all(
        c.ratio <= CARRY_TARGET for c in carry if c.fault == "rename" and c.blocks >= CARRY_JUDGED
    )
    if not ok and not args.quick:
        print("a target failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
