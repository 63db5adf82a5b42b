"""``tests/run_under_load.py``: the README's test command run again and again beside CPU-bound
processes (issue 41). Checked on a tiny test file of its own, never the suite."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from run_under_load import burners, main, summary_counts


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("===== 3 failed, 1,234 passed, 5 skipped, 2 warnings in 612.03s (0:10:12) =====",
         {"failed": 3, "passed": 1234, "skipped": 5}),
        ("==== 1 passed, 1 error in 0.52s ====", {"passed": 1, "errors": 1}),
        ("==== 11 deselected in 0.05s ====", {"deselected": 11}),
        ("no summary: the run was killed", {}),
    ],
)  # fmt: skip
def test_the_counts_are_read_from_pytests_summary_line(line: str, expected: dict[str, int]) -> None:
    assert summary_counts(f"collected 9 items\n1 passed in the middle\n{line}\n") == expected


def test_the_busy_loops_run_and_are_always_killed() -> None:
    with pytest.raises(KeyboardInterrupt), burners(2) as processes:
        assert [process.poll() for process in processes] == [None, None]
        raise KeyboardInterrupt  # Ctrl-C in the middle of a run
    assert all(process.returncode is not None for process in processes)


def test_a_failing_run_fails_the_script(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tests = tmp_path / "test_tiny.py"
    tests.write_text("def test_passes():\n    pass\n\ndef test_fails():\n    assert False\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")  # not the project's: no workers, quick
    logs = tmp_path / "logs"
    argv = ["--runs", "2", "--burners", "1", "--logs", str(logs), "--", "-p", "no:cacheprovider",
            "-c", str(tmp_path / "pytest.ini"), str(tests)]  # fmt: skip
    assert main(argv) == 1
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| 2 |")]
    assert rows and rows[-1].split(" | ")[1:2] == ["1"], out  # run 2: exit code 1
    assert "| 1 | 1 | 0 |" in rows[-1], out  # passed 1, failed 1, errors 0
    assert re.search(r"^  run 2: FAILED \S*test_tiny\.py::test_fails", out, re.MULTILINE), out
    assert "FAIL: run(s) 1, 2 failed: 0 of 2 runs passed" in out
    assert sorted(os.listdir(logs)) == ["run-1.log", "run-2.log"]


def test_bad_options_are_one_clear_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--runs", "0"])
    assert exited.value.code == 2
    assert "--runs must be at least 1" in capsys.readouterr().err
