"""Run the README's test command several times in a row on a loaded machine (issue 41).

A test must not depend on the machine being idle: this runs ``python -m pytest`` (the README's
test command, with the Python that runs this script) ``--runs`` times in a row, from the
repository root, with ``--burners`` CPU-bound processes (Python busy loops) running beside it the
whole time, and prints a table per run: exit code, wall time, the load average, and the counts of
pytest's summary line. It exits 1 if any run failed (any exit code but 0), 0 otherwise. The busy
loops are always killed, also when this script is interrupted, and each also stops by itself
once this script is gone (it checks its parent), so none is ever left spinning.

    .venv/bin/python tests/run_under_load.py                       # 5 runs of the whole suite
    .venv/bin/python tests/run_under_load.py --runs 1 -- tests/test_data.py   # a quick check

Arguments after ``--`` are passed to pytest. Each run's output goes to a log file (``--logs``,
default a new temporary folder), named in the table; a failed run's ``FAILED``/``ERROR`` lines are
printed below it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# A busy loop that stops once its parent (this script) is gone, even after a SIGKILL of it.
_BURN = (
    "import os\n"
    "parent = os.getppid()\n"
    "while os.getppid() == parent:\n"
    "    for _ in range(1_000_000):\n"
    "        pass\n"
)
# pytest's last line: "==== 3 failed, 1,234 passed, 5 skipped, 2 warnings in 612.03s (0:10:12) ===="
_COUNT = re.compile(r"(\d[\d,]*) (passed|failed|errors?|skipped|xfailed|xpassed|deselected)")
_SUMMARY = re.compile(r"^=+ .*\bin [\d.]+s\b.* =+$", re.MULTILINE)
_FAILED_LINE = re.compile(r"^(?:FAILED|ERROR) .*$", re.MULTILINE)
_COLUMNS = ("passed", "failed", "errors", "skipped")


@dataclass(frozen=True, slots=True)
class Run:
    number: int
    exit_code: int
    wall_s: float
    load: float  # the 1-minute load average at the end of the run
    counts: dict[str, int]
    log: Path
    failures: list[str]


def summary_counts(output: str) -> dict[str, int]:
    """The counts of pytest's summary line (the last one in ``output``); empty when none."""
    lines = _SUMMARY.findall(output)
    counts: dict[str, int] = {}
    for number, word in _COUNT.findall(lines[-1] if lines else ""):
        key = "errors" if word.startswith("error") else word
        counts[key] = counts.get(key, 0) + int(number.replace(",", ""))
    return counts


@contextlib.contextmanager
def burners(count: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``count`` CPU-bound processes, killed (and reaped) on the way out, whatever happens."""
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for _ in range(count):
            processes.append(subprocess.Popen([sys.executable, "-c", _BURN]))
        yield processes
    finally:
        for process in processes:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        for process in processes:
            process.wait()


def run_once(number: int, pytest_args: Sequence[str], logs: Path) -> Run:
    log = logs / f"run-{number}.log"
    start = time.monotonic()
    with open(log, "wb") as out:
        code = subprocess.call(
            [sys.executable, "-m", "pytest", *pytest_args], cwd=ROOT, stdout=out, stderr=out
        )
    wall = time.monotonic() - start
    output = log.read_text(encoding="utf-8", errors="replace")
    failures = _FAILED_LINE.findall(output) if code else []
    return Run(number, code, wall, os.getloadavg()[0], summary_counts(output), log, failures)


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {seconds % 60:04.1f} s"


def table(runs: Sequence[Run]) -> str:
    header = ["run", "exit code", "wall", "load (1 min)", *_COLUMNS, "log"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for run in runs:
        cells = [str(run.number), str(run.exit_code), _minutes(run.wall_s), f"{run.load:.1f}"]
        cells += [str(run.counts.get(column, 0)) for column in _COLUMNS]
        lines.append("| " + " | ".join([*cells, str(run.log)]) + " |")
    return "\n".join(lines)


def _parse(argv: Sequence[str]) -> tuple[argparse.Namespace, list[str]]:
    argv = list(argv)
    pytest_args = argv[argv.index("--") + 1 :] if "--" in argv else []
    own = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(
        prog="run_under_load.py",
        description="Run the README's test command N times in a row beside CPU-bound processes.",
        epilog="Arguments after -- go to pytest (e.g. -- tests/test_data.py).",
    )
    parser.add_argument("--runs", type=int, default=5, help="runs in a row (default 5)")
    parser.add_argument("--burners", type=int, default=2, help="busy loops beside (default 2)")
    parser.add_argument("--logs", type=Path, help="folder for each run's output (default: new)")
    options = parser.parse_args(own)
    if options.runs < 1 or options.burners < 0:
        parser.error("--runs must be at least 1 and --burners at least 0")
    return options, pytest_args


def main(argv: Sequence[str] | None = None) -> int:
    options, pytest_args = _parse(sys.argv[1:] if argv is None else argv)
    logs: Path = options.logs or Path(tempfile.mkdtemp(prefix="memorylab-under-load-"))
    logs.mkdir(parents=True, exist_ok=True)
    # A SIGTERM (a CI step cancelled) unwinds like Ctrl-C, so the busy loops are killed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    command = " ".join(["python -m pytest", *pytest_args])
    print(f"{options.runs} run(s) of `{command}` beside {options.burners} busy loop(s), "
          f"on {os.cpu_count()} CPU(s); logs in {logs}", flush=True)  # fmt: skip
    runs: list[Run] = []
    with burners(options.burners):
        for number in range(1, options.runs + 1):
            run = run_once(number, pytest_args, logs)
            runs.append(run)
            print(f"\nafter run {number}:\n{table(runs)}", flush=True)
            for line in run.failures:
                print(f"  run {number}: {line}", flush=True)
    failed = [run.number for run in runs if run.exit_code != 0]
    total = sum(run.wall_s for run in runs)
    verdict = f"FAIL: run(s) {', '.join(map(str, failed))} failed" if failed else "PASS"
    print(f"\n{verdict}: {len(runs) - len(failed)} of {len(runs)} runs passed "
          f"({_minutes(total)} in all)")  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
