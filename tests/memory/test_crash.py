"""Crash safety (FORMAT.md defect 5): SIGKILL a writer at random instants, recover, lose nothing.

A child process (``_workers.py crash``) adds ``msg-<n>`` messages and compacts every few adds,
taking the ticket before two more adds so carry-over is exercised too. It acknowledges an id
only after ``add()`` returned. The parent kills it at a random instant (most land inside a
compaction: its fsyncs dominate), recovers by opening a ``Conversation`` on the agent, and
checks that

* MEMORY.md parses with ``strict=True`` even before recovery (it is only ever appended to or
  atomically replaced), and after recovery so does every archive (nothing torn, missing, empty);
* no temp file (``.tmp-``) and no compaction journal is left;
* the timeline (archives in lineage order, then MEMORY.md) holds ``msg-0 ... msg-<last>``
  exactly once each and in order: every acknowledged id, and at most the one add that was in
  flight when the kill landed; each content round-trips exactly;
* every archive has exactly one line in ``compactions.jsonl`` and the lineage is one chain.

Trials run in chains of a few kills on one workspace, so the store must also keep working after
a recovery. ``MEMORYLAB_CRASH_TRIALS`` sets the number of trials (default 50);
``python tests/memory/test_crash.py --trials 200`` is the longer reliability run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import runpy
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from memorylab import Conversation, MemoryDocument, read_memory
from memorylab.memory import format as fmt
from memorylab.memory.paths import MemoryPaths, agent_paths

WORKERS = Path(__file__).with_name("_workers.py")
AGENT = "crash"
CHAIN = 5  # kills per workspace before starting a fresh one
DEFAULT_SEED = 20240601
_ID_RE = re.compile(r"msg-(\d+)")
_TRICKY: tuple[str, ...] = runpy.run_path(str(WORKERS))["_TRICKY"]


PHASES = (
    "between compactions",
    "before the journal",
    "journal written",
    "archive linked",
    "committed, not finished",
)


@dataclass
class Summary:
    trials: int = 0
    acked: int = 0
    in_flight_written: int = 0
    mid_compaction: int = 0
    leftover_temp: int = 0
    archives: int = 0
    seconds: float = 0.0
    phases: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PHASES, 0))

    def line(self) -> str:
        phases = ", ".join(f"{name}: {count}" for name, count in self.phases.items())
        return (
            f"crash trials: {self.trials} kills, {self.acked} acknowledged adds, 0 lost; "
            f"{self.mid_compaction} kills inside a compaction (journal found), "
            f"{self.leftover_temp} left temp files, {self.in_flight_written} in-flight adds "
            f"written but unacknowledged; {self.archives} archives checked; "
            f"{self.seconds:.1f} s; where the kills landed: {phases}"
        )


def _phase(paths: MemoryPaths) -> str:
    """Where in a compaction the kill landed, read from what it left (before recovery). The
    un-recovered MEMORY.md must already be whole: it is only ever appended to or replaced."""
    memory = read_memory(paths.memory_md, strict=True)
    assert isinstance(memory, MemoryDocument)
    if not paths.intent.exists():
        return PHASES[1] if _temp_files(paths.folder) else PHASES[0]
    name = json.loads(paths.intent.read_bytes())["archive"]
    if memory.continues == name:
        return PHASES[4]
    return PHASES[3] if (paths.archive_dir / name).exists() else PHASES[2]


def _kill_delay(rng: random.Random) -> float:
    return rng.uniform(0.0, rng.choice((0.003, 0.03, 0.15)))


def _run_child(workspace: Path, ack_file: Path, start: int, rng: random.Random) -> list[int]:
    """Start a child at id ``start``, SIGKILL it after a random delay; the acknowledged ids."""
    every = rng.randint(1, 6)
    cmd = [
        sys.executable,
        str(WORKERS),
        "crash",
        str(workspace),
        AGENT,
        str(ack_file),
        str(start),
        str(every),
        str(rng.randrange(2**32)),
    ]
    ack_file.write_bytes(b"")
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        ready = proc.stdout.readline()
        if ready.strip() != b"ready":
            proc.kill()
            proc.wait()
            raise AssertionError(f"child did not start: {proc.stderr.read().decode()}")
        time.sleep(_kill_delay(rng))
        if proc.poll() is not None:
            raise AssertionError(
                f"child exited by itself (rc={proc.returncode}) before the kill:\n"
                f"{proc.stderr.read().decode()}"
            )
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL
    raw = ack_file.read_bytes().decode()
    assert raw == "" or raw.endswith("\n"), "an acknowledgement was torn"
    return [int(line) for line in raw.splitlines()]


def _temp_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if ".tmp-" in p.name)


def _timeline(paths: MemoryPaths) -> tuple[list[tuple[str, MemoryDocument]], list[str]]:
    """Every file, parsed strictly, oldest first by lineage; and the archive names on disk."""
    memory = read_memory(paths.memory_md, strict=True)
    assert isinstance(memory, MemoryDocument)
    names = (
        sorted(p.name for p in paths.archive_dir.iterdir()) if paths.archive_dir.is_dir() else []
    )
    archives: dict[str, MemoryDocument] = {}
    for name in names:
        assert fmt.parse_archive_name(name) is not None, f"unexpected file archive/{name}"
        doc = read_memory(paths.archive_dir / name, strict=True)
        assert isinstance(doc, MemoryDocument)
        archives[name] = doc
    chain: list[str] = []
    current = memory.continues
    while current is not None:
        assert current in archives, f"lineage names {current!r}, which does not exist"
        assert current not in chain, f"lineage loops at {current!r}"
        chain.append(current)
        current = archives[current].continues
    assert sorted(chain) == names, f"archives outside the lineage: {set(names) - set(chain)}"
    ordered = [(name, archives[name]) for name in reversed(chain)]
    return [*ordered, ("MEMORY.md", memory)], names


def verify(workspace: Path, acked: set[int], kills: int) -> tuple[list[int], int]:
    """Check a recovered workspace (see the module docstring); the ids found and #archives."""
    paths = agent_paths(AGENT, workspace)
    assert not _temp_files(paths.folder), f"temp files left: {_temp_files(paths.folder)}"
    assert not paths.intent.exists(), "the compaction journal was left behind"
    files, archive_names = _timeline(paths)
    ids: list[int] = []
    for where, doc in files:
        for message in doc.messages:
            if message.is_summary:
                continue
            match = _ID_RE.match(message.content)
            assert match is not None, f"{where}: foreign message {message.content[:80]!r}"
            assert message.content[match.end() :] in _TRICKY, (
                f"{where}: content did not round-trip: {message.content!r}"
            )
            ids.append(int(match[1]))
    assert ids == list(range(len(ids))), (
        f"ids are not msg-0..msg-{len(ids) - 1} exactly once in order: "
        f"missing {sorted(set(range(max(ids, default=0) + 1)) - set(ids))[:10]}, "
        f"duplicated {sorted({i for i in ids if ids.count(i) > 1})[:10]}"
    )
    lost = sorted(acked - set(ids))
    assert not lost, f"acknowledged ids lost: {lost[:20]}"
    unacked = set(ids) - acked
    assert len(unacked) <= kills, f"more unacknowledged ids than kills: {sorted(unacked)}"
    lines = paths.compactions.read_text().splitlines() if paths.compactions.exists() else []
    recorded = [json.loads(line)["archive"] for line in lines]
    assert sorted(recorded) == archive_names, (
        f"compactions.jsonl and archive/ disagree: records {sorted(recorded)}, "
        f"archives {archive_names}"
    )
    return ids, len(archive_names)


def run_trials(trials: int, seed: int, root: Path) -> Summary:
    """Run ``trials`` kill/recover/verify rounds under ``root``; raises AssertionError."""
    rng = random.Random(seed)
    summary = Summary()
    began = time.perf_counter()
    workspace = root
    acked: set[int] = set()
    next_id = 0
    kills = 0
    for trial in range(trials):
        if trial % CHAIN == 0:
            workspace = root / f"chain-{trial // CHAIN:04d}"
            acked, next_id, kills = set(), 0, 0
        where = f"trial {trial} (seed {seed}, workspace {workspace})"
        try:
            new = _run_child(workspace, root / "acks.txt", next_id, rng)
            kills += 1
            assert new == list(range(next_id, next_id + len(new))), "acks out of order"
            acked.update(new)
            paths = agent_paths(AGENT, workspace)
            summary.mid_compaction += paths.intent.exists()
            summary.phases[_phase(paths)] += 1
            summary.leftover_temp += bool(_temp_files(paths.folder))
            recovered = Conversation(agent_name=AGENT, workspace_dir=workspace)  # recovery
            assert recovered.store is not None
            recovered.store.close()
            ids, archives = verify(workspace, acked, kills)
        except AssertionError as exc:
            raise AssertionError(f"{where}: {exc}") from exc
        summary.in_flight_written += bool(ids) and ids[-1] not in acked
        next_id = len(ids)
        summary.trials += 1
        summary.acked += len(new)
        if trial % CHAIN == CHAIN - 1 or trial == trials - 1:
            summary.archives += archives
    summary.seconds = time.perf_counter() - began
    return summary


@pytest.mark.slow
def test_sigkill_at_random_instants_loses_nothing(tmp_path: Path) -> None:
    trials = int(os.environ.get("MEMORYLAB_CRASH_TRIALS", "50"))
    seed = int(os.environ.get("MEMORYLAB_CRASH_SEED", str(DEFAULT_SEED)))
    summary = run_trials(trials, seed, tmp_path)
    print(summary.line())
    assert summary.trials == trials
    assert summary.acked > 0
    if trials >= 20:  # otherwise the kills might all have missed the compactions
        assert summary.mid_compaction > 0, "no kill landed inside a compaction: " + summary.line()
        assert summary.archives > 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="SIGKILL reliability run of the memory store")
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--seed", type=int, default=None, help="default: random (printed)")
    parser.add_argument("--keep", action="store_true", help="keep the workspaces")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(2**31)
    root = Path(tempfile.mkdtemp(prefix="memorylab-crash-"))
    print(f"seed {seed}, workspaces under {root}", flush=True)
    try:
        summary = run_trials(args.trials, seed, root)
    except AssertionError as exc:
        print(f"FAIL: {exc}\n(workspaces kept in {root})")
        return 1
    print(f"PASS: {summary.line()}")
    if not args.keep:
        shutil.rmtree(root)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
