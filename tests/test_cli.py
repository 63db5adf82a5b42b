"""The command line: each command on a small workspace, and errors mapped to exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest

from memorylab import ContextCompressor, Conversation
from memorylab.cli import main
from memorylab.compress import get_token_counter


@pytest.fixture
def workspace(isolated_workspace: Path) -> Path:
    counter = get_token_counter("gpt-4o")
    for name in ("alpha", "beta"):
        conv = Conversation(agent_name=name, token_counter=counter)
        compressor = ContextCompressor(threshold=0.6)
        for i in range(120):
            conv.add("User" if i % 2 else name, f"message {i}: deploy service {i % 7} at 42 ms p50 " * 3)
            compressor.compress(conv, context_length=2500)
    return isolated_workspace


def test_ls_and_stats(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ls", str(workspace)]) == 0
    out = capsys.readouterr().out
    assert "alpha" in out and "beta" in out
    assert main(["stats"]) == 0  # $WORKSPACE_DIR
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("alpha")]
    assert len(lines) == 1 and int(lines[0].split()[3]) >= 3  # compactions


def test_show_prints_messages(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "alpha", "--tail", "2"]) == 0
    out = capsys.readouterr().out
    assert out.count("message 119") >= 1 and "(MEMORY.md)" in out


def test_plot_and_report_write_files(workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    png, html = tmp_path / "growth.png", tmp_path / "report.html"
    assert main(["plot", "alpha", "-o", str(png), "--context-length", "2500", "--threshold", "0.6"]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["report", str(workspace), "-o", str(html)]) == 0
    text = html.read_text(encoding="utf-8")
    assert text.startswith("<!doctype html>") and "<h2>alpha</h2>" in text and "<h2>beta</h2>" in text
    assert text.count("data:image/png;base64,") >= 4  # compactions, two growth plots, the sweep
    assert "What-if thresholds" in text and "src=\"http" not in text  # self-contained


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["show", "nobody"], 5, "no agent 'nobody'"),
        (["show", "../etc"], 2, "path separator"),
        (["plot", "alpha", "--threshold", "lots"], 2, "not a number"),
        (["ls", "/nonexistent/workspace"], 5, "no agents/ folder"),
    ],
)
def test_errors_map_to_exit_codes(
    workspace: Path, argv: list[str], code: int, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == code
    assert message in capsys.readouterr().err


def test_unreadable_file_is_a_format_error(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (workspace / "agents" / "alpha" / "MEMORY.md").write_bytes(b"\xff\xfe binary \x00")
    assert main(["show", "alpha"]) == 3
    assert "not UTF-8" in capsys.readouterr().err


def test_export_purge_and_forget(workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "alpha.json"
    assert main(["export", "alpha", "-o", str(out)]) == 0
    assert out.stat().st_size > 1000
    assert main(["purge", "--older-than", "30d", "--dry-run"]) == 0
    assert "would remove 0 item(s)" in capsys.readouterr().out
    assert main(["forget", "alpha"]) == 2  # no terminal to ask: needs --yes
    assert (workspace / "agents" / "alpha").exists()
    assert main(["forget", "alpha", "--yes"]) == 0
    assert not (workspace / "agents" / "alpha").exists()
    assert main(["forget", "alpha", "--yes"]) == 5  # unknown now


def test_report_on_bundled_data_agrees_with_its_compaction_table() -> None:
    """The curves are drawn at the recorded settings, restarts and all: their peaks are the
    table's tokens before, none passes the window, and the what-if row of the recorded setting
    makes the recorded number of compactions."""
    from memorylab.report import build_report

    sample = Path(__file__).resolve().parents[1] / "data" / "workspace"
    text = build_report(sample)
    for agent in ("BugHunter", "DataEngineer", "Researcher"):
        section = text.split(f"<h2>{agent}</h2>", 1)[1].split("<h2>", 1)[0]
        records = (sample / "agents" / agent / "compactions.jsonl").read_text().splitlines()
        assert f"{len(records)} of them are the <i>tokens before</i>" in section
        assert "above the" not in section  # no curve above the window
        assert "threshold 0.85; of 3,000 (recorded)" in section
    what_if = text.split("<h2>What-if thresholds</h2>", 1)[1]
    made = len((sample / "agents" / "DataEngineer" / "compactions.jsonl").read_text().splitlines())
    assert f"the replay makes <b>{made}</b> compaction(s); the agent recorded <b>{made}</b>" in what_if
    assert "the agent&#x27;s setting" in what_if
    assert "<th class=\"\">tokens before</th>" in text and "summarizer_model" not in text
    assert text.count("<div class=wide><table>") == text.count("<table>")
    assert "passes the context limit" not in text
