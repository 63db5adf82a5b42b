"""The command line: each command on a small workspace, and errors mapped to exit codes."""

from __future__ import annotations

import json
import os
import re
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
        (["show", "../etc"], 2, "is not an agent name"),
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
        assert (
            "threshold 0.85 (recorded); window 2,800 tokens (recorded); "
            "turn in progress kept (recorded)" in section
        )
    what_if = text.split("<h2>What-if thresholds</h2>", 1)[1]
    made = len((sample / "agents" / "DataEngineer" / "compactions.jsonl").read_text().splitlines())
    assert f"the replay makes <b>{made}</b> compaction(s); the agent recorded <b>{made}</b>" in what_if
    assert "the agent&#x27;s setting" in what_if
    assert "<th class=\"\">tokens before</th>" in text and "summarizer_model" not in text
    assert text.count("<div class=wide><table>") == text.count("<table>")
    assert "passes the context limit" not in text


# -- issue 19: the first hour at the command line ------------------------------------------------


def test_show_tail_zero_prints_none_and_a_negative_tail_is_refused(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", "alpha", "--tail", "0"]) == 0
    assert capsys.readouterr().out == ""
    assert main(["show", "alpha", "--tail", "1"]) == 0
    assert capsys.readouterr().out.count("(MEMORY.md):") == 1
    assert main(["show", "alpha", "--tail", "-1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("memorylab: ") and "--tail" in err


def test_every_command_that_reads_a_workspace_takes_it_both_ways(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("WORKSPACE_DIR")
    ws = str(workspace)
    for argv in (["ls"], ["stats"], ["show", "alpha"], ["purge", "--dry-run"]):
        assert main([*argv, ws]) == 0
        by_argument = capsys.readouterr().out
        assert main([*argv, "--workspace", ws]) == 0
        assert capsys.readouterr().out == by_argument and by_argument
    out = tmp_path / "a.json"
    assert main(["export", "alpha", ws, "-o", str(out)]) == 0 and out.exists()
    assert main(["plot", "alpha", "--workspace", ws, "-o", str(tmp_path / "g.png")]) == 0
    assert main(["ls", ws, "--workspace", str(tmp_path)]) == 2
    assert "give one" in capsys.readouterr().err


def test_ls_names_the_workspace_and_the_last_message_time(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from memorylab.memory._store import read_memory

    assert main(["ls"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"workspace: {workspace}" and out[1].endswith("last message")
    last = read_memory(workspace / "agents" / "alpha" / "MEMORY.md").messages[-1].timestamp
    assert next(line for line in out if line.startswith("alpha")).endswith(f"{last:%Y-%m-%d %H:%M}")


def test_help_shows_the_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plot", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: growth.png)" in text and "(default: the agent's records)" in text
    assert main(["compare", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: 8)" in text and "(default: 4096)" in text and "(default: whole)" in text
    assert main(["stats", "--help"]) == 0
    assert "(default: gpt-4o)" in " ".join(capsys.readouterr().out.split())


def test_purge_asks_at_a_terminal_as_forget_does(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import os
    import time

    old = time.time() - 90 * 86400
    for path in (workspace / "agents" / "beta").rglob("*"):
        os.utime(path, (old, old))
    assert main(["purge"]) == 2  # no terminal, no --yes: refused like forget
    assert "--yes" in capsys.readouterr().err
    assert (workspace / "agents" / "beta").exists()
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    answers = iter(["n", "y"])
    asked: list[str] = []
    monkeypatch.setattr("builtins.input", lambda prompt="": asked.append(prompt) or next(answers))
    assert main(["purge"]) == 1
    assert "beta: the whole agent" in capsys.readouterr().out and asked[-1].endswith("[y/N] ")
    assert (workspace / "agents" / "beta").exists()
    assert main(["purge"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "removed 1 item(s)"
    assert not (workspace / "agents" / "beta").exists() and (workspace / "agents" / "alpha").exists()
    monkeypatch.setattr("builtins.input", lambda prompt="": "n")
    assert main(["forget", "alpha"]) == 1 and (workspace / "agents" / "alpha").exists()


def test_messages_name_flags_not_python_arguments(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    memory = workspace / "agents" / "alpha" / "MEMORY.md"
    memory.write_bytes(memory.read_bytes() + b"\n## stray heading\n\xff\xfe\n")
    assert main(["show", "alpha"]) == 3
    err = capsys.readouterr().err
    assert "--lenient" in err and "strict=False" not in err
    assert main(["show", "alpha", "--lenient", "--tail", "1"]) == 0
    captured = capsys.readouterr()
    assert "(MEMORY.md):" in captured.out and "--lenient" in captured.err
    assert main(["stats", "--lenient"]) == 0
    out = tmp_path / "alpha.json"
    out.write_text("{}", encoding="utf-8")
    assert main(["export", "beta", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--overwrite" in err and "overwrite=True" not in err and out.read_text() == "{}"
    assert main(["export", "beta", "-o", str(out), "--overwrite"]) == 0
    assert out.stat().st_size > 1000 and (out.stat().st_mode & 0o777) == 0o600


def test_huge_numbers_and_durations_are_one_line_errors(
    workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in (
        ["plot", "alpha", "--context-length", "100000000000000000000"],
        ["report", "--context-length", "100000000000000000000"],
        ["plot", "alpha", "--threshold", "1e300"],
        ["plot", "alpha", "--threshold", "inf"],
        ["purge", "--older-than", "99999999999999d"],
        ["purge", "--older-than", "9999999d", "--dry-run"],
        ["compare", "--max-cost", "nan"],
        ["compare", "--concurrency", "0"],
    ):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("memorylab: ") and "Traceback" not in err


def test_outputs_are_checked_before_any_work(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import memorylab.evaluate._cli as compare_cli

    def no_work(*args: object, **kwargs: object) -> None:
        raise AssertionError("the work started before the outputs were checked")

    monkeypatch.setattr(compare_cli, "load_cases", no_work)
    monkeypatch.setattr("memorylab.analysis.memory_df", no_work)
    monkeypatch.setattr("memorylab.report.write_report", no_work)
    missing = tmp_path / "missing" / "dir"
    for argv, code in (
        (["compare", "--csv", str(missing / "x.csv")], 5),
        (["compare", "--png", str(missing / "x.png")], 5),
        (["compare", "--png", str(tmp_path / "x.txt")], 2),
        (["compare", "--csv", str(tmp_path)], 2),
        (["plot", "alpha", "-o", str(missing / "x.png")], 5),
        (["plot", "alpha", "-o", "out.txt"], 2),
        (["report", "-o", str(missing / "r.html")], 5),
        (["export", "alpha", "-o", str(missing / "a.json")], 5),
        (["export", "alpha", "-o", str(tmp_path / "a.parquet")], 2),  # --format json
    ):
        assert main(argv) == code, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("memorylab: "), err
    assert not missing.parent.exists()
    assert "supported" not in err
    assert main(["plot", "alpha", "-o", "out.txt"]) == 2
    assert ".png, " in capsys.readouterr().err  # names the formats it can write


def test_plot_writes_a_private_file_in_the_format_of_its_name(workspace: Path, tmp_path: Path) -> None:
    svg = tmp_path / "growth.svg"
    assert main(["plot", "alpha", "-o", str(svg)]) == 0
    assert b"<svg" in svg.read_bytes()[:500] and (svg.stat().st_mode & 0o777) == 0o600


@pytest.mark.parametrize(
    ("argv", "accepted"),
    [
        (["stats", "--model", "not-a-model"], False),
        (["stats", "--model", "gpt4o"], False),
        (["stats", "--model", "gpt-4o-mini"], True),
        (["stats", "--model", "anthropic/claude-sonnet-4-5"], True),
        (["stats", "--model", "openai/my-own-model"], True),  # a provider litellm supports
        (["stats", "--model", "hosted_vllm/my-model"], True),
        (["compare", "-s", "not-a-model"], False),
        (["compare", "-s", "memorylab/nope"], False),
        (["compare", "--reader", "nobody/model"], False),
        (["compare", "--judge", "not-a-judge"], False),
    ],
)
def test_unknown_model_names_are_refused(
    workspace: Path, argv: list[str], accepted: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    if accepted:
        assert main(argv) == 0
        return
    assert main([*argv, "missing.jsonl"] if argv[0] == "compare" else argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "provider/model" in err and "not a model" in err


def test_registered_and_local_names_pass_the_model_check() -> None:
    from memorylab._console import check_model_name

    for name in ("memorylab/extractive", "memorylab/existing", "gpt-4o-mini", "ollama/llama3"):
        assert check_model_name(name, "-s", summarizers=True) == name
    with pytest.raises(ValueError, match="not a model"):
        check_model_name("memorylab/extractive", "--judge")  # not a model for a judge


def test_python_dash_m_memorylab_cli_runs(workspace: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    html = tmp_path / "r.html"
    done = subprocess.run(
        [sys.executable, "-m", "memorylab.cli", "report", str(workspace), "-o", str(html)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"wrote {html}" in done.stdout and html.read_text(encoding="utf-8").startswith("<!doctype")
    done = subprocess.run(
        [sys.executable, "-m", "memorylab.cli", "show", "nobody", str(workspace)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 5 and done.stderr.startswith("memorylab: no agent 'nobody'")


def test_compare_table_fits_a_terminal_with_percentages(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pandas as pd

    from memorylab.transcripts import bundled_transcripts

    source = sorted(bundled_transcripts())[0]
    csv = tmp_path / "s.csv"
    assert main(["compare", str(source), "--no-progress", "--no-cache", "--csv", str(csv)]) == 0
    out = capsys.readouterr().out
    table = out.split("\n\n")[0].splitlines()  # the paired differences follow it
    assert max(len(line) for line in table) <= 100, table
    assert table[0] == "| summarizer | compression | latency | cost | fact_recall.overall | probe_qa.exact |"
    extractive = next(line for line in table if line.startswith("| memorylab/extractive |"))
    assert "×" in extractive and " s |" in extractive and "$" in extractive
    assert re.search(r"\| \d+% \[\d+%, \d+%\]", extractive)  # rates as percentages
    assert "More columns in --csv" in out and "fact_recall.path" in out
    scores = pd.read_csv(csv)
    assert {"fact_recall", "probe_qa", "compression", "latency", "cost"} <= set(scores.scorer)
    assert (csv.stat().st_mode & 0o777) == 0o600


def test_the_model_check_does_not_import_litellm(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys; from memorylab.cli import main; "
        "codes = (main(['compare', '-s', 'gpt-4o-mini', '-s', 'openai/x', 'missing.jsonl']), "
        "main(['compare', '-s', 'not-a-model'])); "
        "print(codes, 'litellm' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300, check=False)  # fmt: skip
    assert done.stdout.strip() == "(5, 2) False", done.stderr


def test_nested_agents_are_listed_shown_and_plotted(
    isolated_workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An agent the reference framework named ``team/alpha`` (agents/team/alpha/MEMORY.md)."""
    alpha = isolated_workspace / "agents" / "team" / "alpha"
    alpha.mkdir(parents=True)
    Conversation(agent_name="solo").add("User", "solo's message")
    (alpha / "MEMORY.md").write_text(
        "# Agent Memory\n\n**Conversation:** team/alpha\n**Created:** 2026-04-20T09:00:00\n\n"
        "---\n\n## Interaction Log\n\n### Human — 2026-04-20T09:00:01\n\nalpha's message\n\n"
        "---\n\n",
        encoding="utf-8",
    )
    assert main(["ls"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()[2:]]
    assert listed == ["solo", "team/alpha"]
    assert main(["show", "team/alpha"]) == 0
    assert "alpha's message" in capsys.readouterr().out
    assert main(["plot", "team/alpha", "-o", str(tmp_path / "alpha.png")]) == 0
    assert (tmp_path / "alpha.png").stat().st_size > 0
    assert main(["show", "team/gamma"]) == 5
    assert "agents there: solo, team/alpha" in capsys.readouterr().err
    assert main(["show", "team/../solo"]) == 2  # each part of the name is checked
    # the privacy commands take the same name (issue 24: they refused it as invalid)
    assert main(["export", "team/alpha", "-o", str(tmp_path / "alpha.json")]) == 0
    assert json.loads((tmp_path / "alpha.json").read_text(encoding="utf-8"))["agent"] == "team/alpha"
    os.utime(alpha / "MEMORY.md", (0, 0))  # idle for decades
    assert main(["purge", "--older-than", "30d", "--yes"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-3].startswith("team/alpha: the whole agent ")
    assert out[-2].startswith("kept 1 agent(s) that changed in the last 30d: solo (")
    assert out[-1] == "removed 1 item(s)"
    assert not alpha.exists()
    assert main(["forget", "solo", "--yes"]) == 0


def test_show_reads_only_what_it_prints(workspace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 28: `show AGENT --tail 2` failed on a torn archive it would not even print."""
    archive = workspace / "agents" / "alpha" / "archive"
    archive.mkdir(exist_ok=True)
    (archive / "history_2026-01-01_00-00-00Z.md").write_bytes(b"\xff\xfe torn \x00")
    assert main(["show", "alpha", "--tail", "2"]) == 0
    assert capsys.readouterr().out.count("(MEMORY.md):") == 2
    assert main(["show", "alpha", "--all"]) == 3  # --all reads the archive: said, not hidden
    assert "not UTF-8" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["ls", "stats", "report"])
def test_one_rule_for_what_a_workspace_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """Issue 28: a file, an empty agents/, a MEMORY.md that is a folder or a dangling link:
    one line and the documented exit code from every command, never a report of nothing."""
    (tmp_path / "plain.txt").write_text("hello\n")
    (tmp_path / "empty" / "agents").mkdir(parents=True)
    (tmp_path / "folder" / "agents" / "A" / "MEMORY.md").mkdir(parents=True)
    (tmp_path / "link" / "agents" / "B").mkdir(parents=True)
    (tmp_path / "link" / "agents" / "B" / "MEMORY.md").symlink_to(tmp_path / "nowhere")
    out = ["-o", str(tmp_path / "r.html")] if command == "report" else []
    cases = [
        ("empty", 5, "holds no agent yet"),
        ("folder", 5, "A/MEMORY.md: not a regular file"),
        ("link", 5, "B/MEMORY.md: not a regular file"),
    ]
    if command != "ls":  # stats and report read a memory file too: not this one
        cases.append(("plain.txt", 3, "is a file but not a memory file"))
    for where, code, said in cases:
        assert main([command, str(tmp_path / where), *out]) == code, where
        lines = [line for line in capsys.readouterr().err.splitlines()
                 if "can be read by other users" not in line]  # fmt: skip
        assert len(lines) == 1 and said in lines[0], (where, lines)
    assert not (tmp_path / "r.html").exists()


def test_ls_columns_stay_in_line_with_wide_characters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 28: a CJK or emoji agent name shifted the columns after it."""
    import unicodedata

    from memorylab import Conversation
    from memorylab._console import column

    for name in ("研究助手", "Plain"):
        Conversation(agent_name=name, workspace_dir=tmp_path).add("User", "hello")
    assert main(["ls", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = [line for line in out if line.startswith(("研究助手", "Plain"))]

    def cells(text: str) -> int:  # what a terminal shows: a wide character takes two
        return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)

    # Every field right of the name is right-aligned in a fixed width: aligned rows are
    # equally wide on screen.
    assert len(rows) == 2 and cells(rows[0]) == cells(rows[1]), rows
    assert column("研究", 6) == "研究  " and column("ab", 4) == "ab  "


@pytest.mark.parametrize("command", ["report", "stats"])
def test_a_run_another_loader_reads_is_reported_like_a_workspace(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 40: `report` and `stats` refused any file that is not a MEMORY.md before the
    loaders were asked; a run any registered loader reads (here a memorylab transcript) is read
    as every reader reads it (`loader_for`)."""
    transcript = Path(__file__).parents[1] / "data" / "transcripts" / "checkout-bug-hunt.jsonl"
    out = ["-o", str(tmp_path / "r.html")] if command == "report" else []
    assert main([command, str(transcript), *out]) == 0
    printed = capsys.readouterr().out
    if command == "report":
        assert "checkout-bug-hunt" in (tmp_path / "r.html").read_text(encoding="utf-8")
    else:
        assert "checkout-bug-hunt" in printed and "721" in printed


def test_a_report_of_a_workspace_where_nothing_reads_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 41: a workspace whose only agent's MEMORY.md is not a memory file got a report of
    its problems alone and exit 0 ("wrote g.html"); now, as `stats`, one line and exit 3, and no
    page is written."""
    (tmp_path / "agents" / "A").mkdir(parents=True)
    (tmp_path / "agents" / "A" / "MEMORY.md").write_text("hello\nnot a memory\n")
    for lenient in ([], ["--lenient"]):  # refused at the first damaged part, or after reading
        assert main(["report", str(tmp_path), "-o", str(tmp_path / "g.html"), *lenient]) == 3
        lines = [line for line in capsys.readouterr().err.splitlines()
                 if "can be read by other users" not in line and "skipped" not in line]  # fmt: skip
        assert len(lines) == 1 and "A/MEMORY.md, line 1: missing header" in lines[0], lines
        if lenient:
            assert lines[0].startswith(f"memorylab: nothing under {tmp_path} could")
        else:
            assert "use --lenient" in lines[0]
    assert not (tmp_path / "g.html").exists()


def test_stats_lenient_names_what_it_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 41: `stats --lenient` said "skipped 2 unreadable part(s)" and not which."""
    from memorylab import Conversation

    Conversation(agent_name="A", workspace_dir=tmp_path).add("User", "hello")
    archive = tmp_path / "agents" / "A" / "archive" / "history_2026-01-01_00-00-00Z.md"
    archive.parent.mkdir(exist_ok=True)
    archive.write_bytes(b"\xff\xfe garbage")
    assert main(["stats", str(tmp_path), "--lenient"]) == 0
    [line] = [x for x in capsys.readouterr().err.splitlines() if "skipped" in x]
    assert f"of 1 file(s): {archive}, line 1: encoding, header" in line


def test_a_warning_while_a_command_runs_is_one_memorylab_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Issue 41: `report` printed Python's warning format, the library's source file and line
    and the code on a second line (`_cache_costs.py:150: MemoryReadWarning: ...`), breaking the
    one-line `memorylab:` rule of docs/cli.md. Every command runs through run_handler, which
    says a warning as one line."""
    import argparse
    import warnings

    from memorylab._console import run_handler
    from memorylab.errors import MemoryReadWarning

    def warns(args: argparse.Namespace) -> int:
        warnings.warn(MemoryReadWarning("memory_df: 3 problems\n in 1 file"), stacklevel=1)
        return 0

    with warnings.catch_warnings():
        warnings.simplefilter("default")  # as a user's shell shows them (the suite raises them)
        assert run_handler(warns, argparse.Namespace()) == 0
    err = capsys.readouterr().err
    assert err == "memorylab: warning: memory_df: 3 problems in 1 file\n", err


def test_one_lenient_rule_for_every_command_that_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 41: `stats` and `plot` stopped at swarms' torn race archive until --lenient while
    `report` and `export` went ahead. Now each command that reads memory stops at a damaged
    part (exit 3, one line naming the file and --lenient) and, with --lenient, goes ahead
    naming on stderr what it skipped, once."""
    import warnings

    from memorylab import Conversation

    conv = Conversation(agent_name="A", workspace_dir=tmp_path)
    conv.add("User", "deploy to eu-west")
    conv.compact("deploy to eu-west")
    conv.add("User", "estimate the cost")
    archive = tmp_path / "agents" / "A" / "archive" / "history_2026-01-01_00-00-00Z.md"
    archive.write_bytes(b"\xff\xfe torn \x00")
    ws = str(tmp_path)
    commands = [
        ["show", "A", ws, "--all"],
        ["stats", ws],
        ["plot", "A", ws, "-o", str(tmp_path / "g.png")],
        ["report", ws, "-o", str(tmp_path / "r.html")],
        ["export", "A", ws, "-o", str(tmp_path / "a.json"), "--overwrite"],
        ["audit", "facts", ws],
        ["audit", "costs", ws, "--agent", "A"],
    ]
    for argv in commands:
        assert main(argv) == 3, argv
        [line] = capsys.readouterr().err.splitlines()
        assert line.startswith(f"memorylab: {archive}") or line.startswith(
            f"memorylab: {Path(ws, 'agents', 'A', 'archive', archive.name)}"
        ), (argv, line)
        assert "use --lenient" in line and "strict=" not in line and "on_bad" not in line
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            assert main([*argv, "--lenient"]) == 0, argv
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and err[0].startswith("memorylab: warning: skipped 3 unreadable "
                                                   "part(s) of 1 file(s): "), (argv, err)  # fmt: skip
        assert f"{archive.name}, line 1: encoding, header, structure" in err[0]
    assert (tmp_path / "r.html").is_file() and (tmp_path / "a.json").is_file()  # with --lenient


def test_ls_says_what_is_wrong_with_an_unreadable_agent_and_what_to_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 41: `ls` listed an unreadable agent with no hint."""
    from memorylab import Conversation

    for name in ("A", "B", "C", "D"):
        Conversation(agent_name=name, workspace_dir=tmp_path).add("User", "hello")
    agents = tmp_path / "agents"
    (agents / "B" / "MEMORY.md").write_bytes(b"\xff\xfe binary \x00")
    with (agents / "C" / "MEMORY.md").open("ab") as file:
        file.write(b"\n## stray heading\n\xff\xfe\n")  # damaged after a message that reads
    (agents / "D" / "MEMORY.md").unlink()
    (agents / "D" / "MEMORY.md").symlink_to(tmp_path / "nowhere")
    assert main(["ls", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: line for line in out[2:] if not line.startswith(" ")}
    hints = [line.strip() for line in out if line.startswith("  ")]
    assert rows["B"].endswith("unreadable") and rows["C"].endswith("(damaged)"), rows
    assert not rows["A"].endswith(("unreadable", "(damaged)"))
    assert len(hints) == 3, hints
    assert hints[0].startswith("B: MEMORY.md, line 1: not UTF-8") and "restore it" in hints[0]
    assert "`memorylab show B --all --lenient`" in hints[0]
    assert hints[1].startswith("C: MEMORY.md, line ") and "`memorylab show C --lenient`" in hints[1]
    assert hints[2].startswith(f"{agents / 'D' / 'MEMORY.md'}: not a regular file")


def test_report_agent_reports_that_agent_only(
    workspace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 41: no `report --agent NAME`; an agent not there is exit 5, naming those there,
    and no page is written."""
    html = tmp_path / "alpha.html"
    assert main(["report", "--agent", "alpha", "-o", str(html)]) == 0
    text = html.read_text(encoding="utf-8")
    assert "<h2>alpha</h2>" in text and "<h2>beta</h2>" not in text
    assert main(["report", "--agent", "gamma", "-o", str(tmp_path / "g.html")]) == 5
    (line,) = capsys.readouterr().err.splitlines()
    assert line == f"memorylab: no agent 'gamma' in {workspace}; agents there: alpha, beta"
    assert not (tmp_path / "g.html").exists()


def test_convert_writes_a_workspace_every_command_then_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`memorylab convert` (docs/converting.md) is a command of `memorylab`: the converted
    Claude Code session is listed, counted and audited like any workspace."""
    session = Path(__file__).resolve().parents[1] / "data" / "foreign" / "claude-code"
    out = tmp_path / "ws"
    assert main(["convert", str(session / "compacted-session.jsonl"), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "2 compaction(s)" in printed and f"read it with: memorylab report {out}" in printed
    assert main(["stats", str(out)]) == 0
    [row] = [line for line in capsys.readouterr().out.splitlines()[2:]]
    assert row.split()[1:4] == ["36", "3", "2"]  # messages, segments, compactions
    assert main(["audit", "facts", str(out), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"]


def test_lenient_names_only_the_parts_it_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An archive deleted before the oldest one left (a gap: what the reference framework's
    colliding archive names do) is no damaged part: the strict read goes ahead, and --lenient
    does not call it an unreadable part it skipped (it named swarms' gap so)."""
    from memorylab import Conversation

    conv = Conversation(agent_name="A", workspace_dir=tmp_path)
    for text in ("deploy to eu-west", "estimate the cost"):
        conv.add("User", text)
        conv.compact(text)
    conv.add("User", "write the config")
    oldest = sorted((tmp_path / "agents" / "A" / "archive").glob("history_*.md"))[0]
    oldest.unlink()
    for lenient in ([], ["--lenient"]):
        assert main(["stats", str(tmp_path), *lenient]) == 0
        err = capsys.readouterr().err
        assert "skipped" not in err, err


def test_a_damaged_line_of_another_frameworks_run_stops_a_command_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The one --lenient rule holds for every loader: a Claude Code session cut off mid-line is
    noted by its loader, not raised, and went through `stats` and `audit` unsaid."""
    import shutil

    sample = Path(__file__).resolve().parents[1] / "data" / "foreign" / "claude-code"
    session = tmp_path / "session.jsonl"
    shutil.copyfile(sample / "compacted-session.jsonl", session)
    lines = session.read_bytes().count(b"\n")
    with session.open("ab") as file:
        file.write(b'{"type": "user", "mess')  # a write cut off
    for argv in (["stats", str(session)], ["audit", "facts", str(session)]):
        assert main(argv) == 3, argv
        (line,) = capsys.readouterr().err.splitlines()
        assert line.startswith(f"memorylab: {session}, line {lines + 1}: not JSON")
        assert line.endswith("use --lenient to salvage the readable parts")
        assert main([*argv, "--lenient"]) == 0
        (line,) = capsys.readouterr().err.splitlines()
        assert f"of 1 file(s): {session}, line {lines + 1}: json" in line


def test_the_workspace_may_follow_the_options(capsys: pytest.CaptureFixture[str]) -> None:
    """`memorylab show AGENT --tail 1 WS` and `audit costs --format csv WS` were refused
    ("unrecognized arguments: WS"): argparse leaves an optional positional empty when options
    come between it and the arguments before it. A second word left over is still refused."""
    sample = str(Path(__file__).resolve().parents[1] / "data" / "workspace")
    assert main(["show", "BugHunter", "--tail", "1", sample]) == 0
    assert capsys.readouterr().out.startswith("[")
    assert main(["audit", "costs", "--format", "csv", sample]) == 0
    assert capsys.readouterr().out.startswith("agent,")
    assert main(["stats", "--model", "gpt-4o", sample]) == 0
    assert main(["show", "BugHunter", "--tail", "1", sample, "more"]) == 2
    assert main(["ls", "--bogus"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [f"memorylab: unrecognized arguments: {sample} more (see: memorylab --help)",
                   "memorylab: unrecognized arguments: --bogus (see: memorylab --help)"]  # fmt: skip
