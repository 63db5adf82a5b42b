"""docs/cli.md's exit-code table, row by row: each documented failure is run through
``memorylab.cli.main`` and must give its code and exactly one ``memorylab:`` line on stderr."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from memorylab import Conversation
from memorylab.cli import main

PAGE = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


def documented_rows() -> list[tuple[int, str]]:
    """``(code, failure)`` of each row of the exit-code table."""
    section = PAGE.read_text(encoding="utf-8").split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\d+) \| (.+?) \|", section, re.M)
    assert rows, "docs/cli.md has no exit-code table"
    return [(int(code), failure) for code, failure in rows]


@pytest.fixture
def workspace(isolated_workspace: Path) -> Path:
    conv = Conversation(agent_name="Alpha")
    conv.add("User", "deploy to eu-west")
    conv.compact("deploy to eu-west")
    conv.add("User", "estimate the cost")
    return isolated_workspace


Setup = Callable[[Path, pytest.MonkeyPatch], list[str]]


def _answer_no(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    monkeypatch.setattr("builtins.input", lambda prompt="": "n")
    return ["forget", "Alpha"]


def _binary_memory(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    (workspace / "agents" / "Alpha" / "MEMORY.md").write_bytes(b"\xff\xfe binary \x00")
    return ["show", "Alpha"]


def _nothing_readable(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    (Path("ws") / "agents" / "A").mkdir(parents=True)
    (Path("ws") / "agents" / "A" / "MEMORY.md").write_text("hello\nnot a memory\n")
    return ["report", "ws", "-o", "g.html", "--lenient"]


def _not_a_run(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    Path("notes.txt").write_text("hello\n", encoding="utf-8")
    return ["convert", "notes.txt", "-o", "ws"]


def _damaged_archive(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    archive = workspace / "agents" / "Alpha" / "archive" / "history_2026-01-01_00-00-00Z.md"
    archive.write_bytes(b"\xff\xfe torn \x00")
    return ["stats"]


def _taken(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    Path("taken.json").write_text("{}", encoding="utf-8")
    return ["export", "Alpha", "-o", "taken.json"]


def _no_terminal(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setattr(sys.stdin, "isatty", lambda: False, raising=False)
    return ["purge"]


def _fifo_memory(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    memory_md = workspace / "agents" / "Alpha" / "MEMORY.md"
    memory_md.unlink()
    os.mkfifo(memory_md)  # forget used to wait on it forever (issue 24)
    return ["forget", "Alpha", "--yes"]


def _proc(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    if not Path("/proc/self").is_dir():
        pytest.skip("needs Linux's /proc")
    return ["demo", "/proc/memorylab-test"]


def _argv(*argv: str) -> Setup:
    return lambda workspace, monkeypatch: list(argv)


# One entry per row of the table (the failure column, as the page words it).
FAILURES: dict[str, Setup] = {
    "none: done": _argv("ls"),
    "the estimated cost is above `--max-cost`": _argv(
        "compare", "-s", "gpt-4o-mini", "--max-cost", "0", "--no-progress", "--no-cache"
    ),
    "the planned time is above `--max-seconds`, or unknown": _argv(
        "compare", "-s", "gpt-4o-mini", "--max-seconds", "60", "--no-progress", "--no-cache"
    ),
    "`forget` or `purge` not confirmed at the terminal": _answer_no,
    "an unknown option, or a number out of range": _argv("show", "Alpha", "--tail", "-1"),
    "a value that is not one": _argv("plot", "Alpha", "--threshold", "lots"),
    "an unsafe agent name": _argv("show", "../etc"),
    "an unknown model name": _argv("stats", "--model", "not-a-model"),
    "`--model` given to an audit other than `costs`": _argv("audit", "facts", "--model", "gpt-4o"),
    "an output in a format memorylab cannot write there": _argv("plot", "Alpha", "-o", "out.txt"),
    "an output that exists, without `--overwrite`": _taken,
    "`forget` or `purge` without `--yes` and no terminal to ask": _no_terminal,
    "a source `convert` reads in none of its formats": _not_a_run,
    "a memory file that does not parse (not UTF-8, not MEMORY.md)": _binary_memory,
    "a damaged part of what a command reads, without `--lenient` (the file and line named)":
        _damaged_archive,
    "`report --lenient` of a workspace where no agent could be read at all (no page is written)":
        _nothing_readable,
    "the filesystem refused (permissions, disk full, lock timeout, a symlink where memory belongs)": _proc,
    "a memory file that is not a regular file (a FIFO, a device), refused at once": _fifo_memory,
    "no such agent": _argv("show", "Nobody"),
    "no such agent for `--agent` (the agents there named)": _argv(
        "audit", "costs", "--agent", "Nobody"
    ),
    "no such workspace": _argv("stats", "/nonexistent/workspace"),
    "no folder to write an output into": _argv("plot", "Alpha", "-o", "/nonexistent/dir/x.png"),
    "no such source to compare": _argv("compare", "missing.jsonl", "--no-progress"),
}


def test_every_row_of_the_table_is_run_here() -> None:
    documented = {failure for code, failure in documented_rows() if code != 141}
    assert documented == set(FAILURES)


@pytest.mark.parametrize(
    ("code", "failure"), [row for row in documented_rows() if row[0] != 141], ids=lambda v: str(v)
)
def test_each_documented_failure_gives_its_code_and_one_line(
    workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    code: int,
    failure: str,
) -> None:
    argv = FAILURES[failure](workspace, monkeypatch)
    assert main(argv) == code, capsys.readouterr().err
    err = capsys.readouterr().err
    if code == 0:
        assert err == ""
        return
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("memorylab: "), err
    assert "Traceback" not in err and "strict=False" not in err and "overwrite=True" not in err
    assert "max_seconds" not in err and "speeds=" not in err  # flags, not Python arguments


def test_the_same_codes_from_compare_on_its_own(capsys: pytest.CaptureFixture[str]) -> None:
    from memorylab.evaluate._cli import main as compare_main

    assert compare_main(["missing.jsonl", "--no-progress"]) == 5
    assert compare_main(["--window", "0"]) == 2
    assert capsys.readouterr().err.count("memorylab: ") == 2


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    """`memorylab show AGENT --all | head -1`: no BrokenPipeError, nothing on stderr."""
    sample = Path(__file__).resolve().parents[1] / "data" / "workspace"
    command = [sys.executable, "-m", "memorylab", "show", "DataEngineer", str(sample), "--all"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert process.stdout is not None and process.stderr is not None
        first = process.stdout.readline()
        process.stdout.close()  # what `head -1` does after its line
        err = process.stderr.read().decode()
        code = process.wait(timeout=120)
    assert first.startswith(b"[") and err == "" and code in (0, 141)
    documented = {code for code, _ in documented_rows()}
    assert 141 in documented


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["report", "--threshold", "1.5"],
            "--threshold 1.5: a fraction of the window is at most 1",
        ),
        (
            ["plot", "BugHunter", "--threshold", "2"],
            "--threshold 2 reads as 2 tokens, fewer than any window holds (at least 256): give a "
            "fraction such as 0.02 (2 %)",
        ),
        (["report", "-o", "-"], "-o -: memorylab writes a file, not standard output"),
        (["report", "-o", "report"], "-o report has no file extension: end it with one of .html"),
    ],
)
def test_bad_input_is_said_in_the_flags_words(
    workspace: Path, capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    """Issue 28: these answered in Python's words ("pass an int") or read oddly ("no file
    extension is not a format")."""
    assert main(argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert said in line


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from memorylab import __version__

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"memorylab {__version__}"
