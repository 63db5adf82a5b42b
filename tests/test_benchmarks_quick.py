"""Smoke-run every ``tests/benchmarks/bench_*.py`` with ``--quick`` so the benchmarks cannot rot.

Each script must exit 0 in quick mode and print a markdown table (a ``| ... |`` header row
followed by a ``|---|`` separator row). Timings are not checked: CI machines vary too much.
New ``bench_*.py`` scripts are picked up automatically.

The quick runs are marked ``bench``, which the default run deselects (pyproject.toml): they
measure ratios, not correctness, and take most of a minute each on a loaded machine. ``.ci/run``
runs them in a step of their own, ``pytest -m bench tests/test_benchmarks_quick.py``, and
fails when it fails or collects nothing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH_DIR = Path(__file__).parent / "benchmarks"
SCRIPTS = sorted(BENCH_DIR.glob("bench_*.py"))
# A guard against a hang, not a speed check: 26-28 s alone were 120 s and more at load 10-19.
QUICK_TIMEOUT_S = 900
_TABLE_RE = re.compile(r"^\|.*\|[ \t]*\n\|[ \t]*:?-{3,}:?[ \t]*\|", re.MULTILINE)


def test_benchmarks_are_found() -> None:
    assert SCRIPTS, f"no bench_*.py in {BENCH_DIR}"


@pytest.mark.bench
@pytest.mark.timeout(QUICK_TIMEOUT_S + 60)  # past the subprocess's own, which says more
@pytest.mark.parametrize("script", SCRIPTS, ids=[s.stem for s in SCRIPTS])
def test_benchmark_quick_run(script: Path, tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # keep whatever a benchmark writes in here
    result = subprocess.run(
        [sys.executable, str(script), "--quick"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=QUICK_TIMEOUT_S,
        check=False,
    )
    output = f"--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
    assert result.returncode == 0, f"{script.name} --quick exited {result.returncode}\n{output}"
    assert _TABLE_RE.search(result.stdout), f"{script.name} printed no markdown table\n{output}"
