"""``memorylab convert`` (docs/converting.md, docs/cli.md's exit codes): run through a parser built
here with ``add_convert_arguments`` and the command line's one handler (``run_handler``), so the
exit codes and the one-line messages are the command's."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from memorylab._console import OneLineParser, run_handler
from memorylab._convert_cli import add_convert_arguments, run_convert
from memorylab.analysis import memory_df
from memorylab.cli import main
from memorylab.transcripts import bundled_data_dir

FOREIGN = bundled_data_dir() / "foreign"  # the runs other frameworks wrote (data/foreign/)
SESSION = FOREIGN / "claude-code" / "compacted-session.jsonl"
TRANSCRIPTS = bundled_data_dir() / "transcripts"


def convert(*argv: str | Path) -> int:
    parser = add_convert_arguments(OneLineParser(prog="memorylab convert"))
    try:
        args = parser.parse_args([str(a) for a in argv])
    except SystemExit as stop:  # a usage error: one line, exit code 2
        return int(stop.code or 0)
    assert args.handler is run_convert
    return run_handler(args.handler, args)


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("memorylab: "), err
    return lines[0]


def test_a_session_becomes_a_workspace_the_report_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert convert(SESSION, "-o", tmp_path / "ws") == 0
    out = capsys.readouterr().out
    assert "36 messages, 2 compaction(s), 17 model call(s) from claude-code" in out
    assert "  note: " in out and f"memorylab report {tmp_path / 'ws'}" in out
    assert len(memory_df(tmp_path / "ws")) == len(memory_df(SESSION))
    assert main(["report", str(tmp_path / "ws"), "-o", str(tmp_path / "r.html")]) == 0
    assert main(["stats", str(tmp_path / "ws")]) == 0
    assert "5f0c3a1e-8d2b-4c6f-9a7e-2b1d4e6f8a90" in capsys.readouterr().out


def test_an_existing_agent_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert convert(SESSION, "-o", tmp_path / "ws") == 0
    before = sorted(p.name for p in (tmp_path / "ws" / "agents").rglob("*"))
    capsys.readouterr()
    assert convert(SESSION, "-o", tmp_path / "ws") == 2
    assert "never writes over" in _one_line(capsys.readouterr().err)
    assert sorted(p.name for p in (tmp_path / "ws" / "agents").rglob("*")) == before
    assert convert(SESSION, "-o", tmp_path / "ws", "--agent", "again") == 0


@pytest.mark.parametrize(
    ("to", "output"),
    [("claude-code", "project"), ("openai-agents", "s.sqlite"), ("inspect-ai", "d.jsonl"),
     ("langchain", "threads")],
)  # fmt: skip
def test_transcripts_export_to_each_format(
    to: str, output: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert convert(TRANSCRIPTS, "-o", tmp_path / output, "--to", to) == 0
    written = [line.removeprefix("wrote ") for line in capsys.readouterr().out.splitlines()]
    assert written and all(Path(w).is_file() for w in written)
    # again: the files exist; --overwrite replaces them
    assert convert(TRANSCRIPTS, "-o", tmp_path / output, "--to", to) == 2
    assert "exists" in _one_line(capsys.readouterr().err)
    assert convert(TRANSCRIPTS, "-o", tmp_path / output, "--to", to, "--overwrite") == 0


def test_the_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    garbage = tmp_path / "g.bin"
    garbage.write_bytes(b"\x00\x01 not a run\n")
    cases: list[tuple[list[str | Path], int, str]] = [
        ([tmp_path / "missing.jsonl", "-o", tmp_path / "ws"], 5, "no such source"),
        ([SESSION, "-o", tmp_path / "nowhere" / "ws"], 5, "does not exist"),
        ([garbage, "-o", tmp_path / "ws"], 3, "none of the formats convert reads"),
        ([garbage, "-o", tmp_path / "d.jsonl", "--to", "inspect-ai"], 3, "g.bin"),
        ([SESSION, "-o", tmp_path / "ws", "--to", "swarms"], 2, "invalid choice"),
        ([SESSION, "-o", tmp_path / "ws", "--to", "langchain", "--agent", "x"], 2, "--agent"),
        ([FOREIGN / "openai-agents" / "sessions.sqlite", "-o", tmp_path / "ws", "--agent", "x"],
         2, "holds 4 runs"),
        ([TRANSCRIPTS, "-o", tmp_path, "--to", "openai-agents"], 2, "is a folder"),
        # a folder format given a file's name is refused, not made a folder called cc.jsonl
        ([TRANSCRIPTS, "-o", tmp_path / "cc.jsonl", "--to", "claude-code"], 2,
         "named like a file"),
        ([TRANSCRIPTS, "-o", tmp_path / "t.json", "--to", "langchain"], 2, "give a folder"),
    ]  # fmt: skip
    for argv, code, said in cases:
        assert convert(*argv) == code, argv
        assert said in _one_line(capsys.readouterr().err), argv
    # nothing was written by a refused command
    assert not any(tmp_path.joinpath(n).exists() for n in ("ws", "cc.jsonl", "t.json"))


def test_an_inspect_export_holds_one_sample_per_transcript(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert convert(TRANSCRIPTS, "-o", tmp_path / "d.jsonl", "--to", "inspect-ai") == 0
    samples = [json.loads(line) for line in (tmp_path / "d.jsonl").read_text().splitlines()]
    assert [s["id"] for s in samples] == sorted(p.stem for p in TRANSCRIPTS.glob("*.jsonl"))
    assert all(len(s["metadata"]["timestamps"]) == len(s["input"]) for s in samples)


def test_the_parser_is_argparse(tmp_path: Path) -> None:
    parser = add_convert_arguments(argparse.ArgumentParser())
    args = parser.parse_args([str(SESSION), "-o", str(tmp_path / "ws")])
    assert args.to == "workspace" and args.agent is None and not args.overwrite
