"""`memorylab audit {calibration,costs,facts}`: the audits' tables at the command line (issue 41),
the same tables the report shows (:data:`memorylab.analysis.AUDITS`), as text, CSV and JSON, on
a workspace, one agent of it, an agent folder and another framework's run."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pytest

from memorylab.analysis import AUDITS, audit, load_records
from memorylab.cli import main

DATA = Path(__file__).resolve().parents[1] / "data"
SAMPLE = DATA / "workspace"
REFERENCE = DATA / "reference_workspace"
INSPECT_RUN = DATA / "foreign" / "inspect-ai" / "checkout-bug-hunt.eval"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("name", list(AUDITS))
def test_each_audit_prints_the_reports_table_as_text_csv_and_json(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = audit(load_records(SAMPLE), name)
    assert len(expected.summary), "the bundled workspace holds something for every audit"

    code, out, err = _run(capsys, "audit", name, str(SAMPLE))
    assert code == 0 and err == "", err
    lines = out.splitlines()
    assert lines[0].startswith(f"{expected.title} ({SAMPLE}): {len(expected.summary)} row(s)")
    shown = expected.text("summary")
    header = next(i for i, line in enumerate(lines) if line.startswith(str(shown.columns[0])))
    table = lines[header:]
    assert len(table) == 1 + len(shown)  # the headings, then a line per row
    for line, first in zip(table[1:], shown.iloc[:, 0], strict=True):
        assert line.startswith(str(first))
    widths = {len(line) for line in table}
    assert max(widths) - min(widths) <= max(len(str(v)) for v in shown.iloc[:, -1])  # aligned
    for note in expected.notes():
        assert note in out

    code, out, err = _run(capsys, "audit", name, str(SAMPLE), "--format", "csv")
    assert code == 0 and err == ""
    read = pd.read_csv(io.StringIO(out))
    assert list(read.columns) == list(expected.summary.columns)
    assert len(read) == len(expected.summary)
    numeric = expected.summary.select_dtypes("number").columns
    assert numeric.size
    for column in numeric:
        assert read[column].astype(float).tolist() == pytest.approx(
            expected.summary[column].astype(float).tolist(), nan_ok=True
        )

    code, out, err = _run(capsys, "audit", name, str(SAMPLE), "--format", "json")
    assert code == 0 and err == ""
    document = json.loads(out)
    assert document["audit"] == name and document["notes"] == expected.notes()
    assert len(document["rows"]) == len(expected.summary)
    assert set(document["rows"][0]) == set(expected.summary.columns)


def test_table_frame_prints_one_row_per_compaction(capsys: pytest.CaptureFixture[str]) -> None:
    expected = audit(load_records(SAMPLE), "calibration")
    code, out, _ = _run(capsys, "audit", "calibration", str(SAMPLE), "--table", "frame")
    assert code == 0
    assert out.splitlines()[0].endswith(
        f"{len(expected.frame)} row(s), one per compaction against the billed count"
    )
    code, out, _ = _run(capsys, "audit", "costs", str(SAMPLE), "--table", "frame", "--format",
                        "json")  # fmt: skip
    rows = json.loads(out)["rows"]
    assert code == 0 and len(rows) == len(audit(load_records(SAMPLE), "costs").frame)
    assert {"agent", "net_cost_usd", "tokens_removed"} <= set(rows[0])


def test_agent_reads_one_agent_and_an_unknown_one_names_those_there(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(capsys, "audit", "costs", str(SAMPLE), "--agent", "Researcher",
                        "--format", "csv")  # fmt: skip
    assert code == 0 and set(pd.read_csv(io.StringIO(out))["agent"]) == {"Researcher"}
    # an agent folder is a source too
    code, folder_out, _ = _run(capsys, "audit", "costs", str(SAMPLE / "agents" / "Researcher"),
                               "--format", "csv")  # fmt: skip
    assert code == 0 and folder_out == out

    code, out, err = _run(capsys, "audit", "facts", str(SAMPLE), "--agent", "Nobody")
    assert code == 5 and out == ""
    (line,) = err.splitlines()
    assert line == (
        f"memorylab: no agent 'Nobody' in {SAMPLE}; agents there: BugHunter, DataEngineer, "
        "Researcher"
    )


def test_another_frameworks_run_is_audited_by_its_records(
    capsys: pytest.CaptureFixture[str],
) -> None:
    (record,) = load_records(INSPECT_RUN)
    code, out, err = _run(capsys, "audit", "calibration", str(INSPECT_RUN), "--table", "frame",
                          "--format", "csv")  # fmt: skip
    assert code == 0 and err == ""
    assert len(pd.read_csv(io.StringIO(out))) == len(record.compactions) == 8
    code, out, _ = _run(capsys, "audit", "facts", str(INSPECT_RUN), "--agent", record.agent)
    assert code == 0 and out.startswith(f"Which facts survive each summary ({INSPECT_RUN}, agent")
    code, _, err = _run(capsys, "audit", "facts", str(INSPECT_RUN), "--agent", "nobody")
    assert code == 5 and f"agents there: {record.agent}" in err


def test_an_empty_audit_says_why_in_its_header(capsys: pytest.CaptureFixture[str]) -> None:
    """The reference framework's files hold no usage.jsonl: no call to calibrate against."""
    code, out, _ = _run(capsys, "audit", "calibration", str(REFERENCE))
    assert code == 0
    (line,) = out.splitlines()
    assert line.startswith(f"Did compaction fire when it should have? ({REFERENCE}): nothing to "
                           "show; no model call was recorded")  # fmt: skip


def test_bad_audit_arguments_are_one_line_and_code_2(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (
        ["audit", "speed", str(SAMPLE)],
        ["audit", "facts", str(SAMPLE), "--model", "gpt-4o"],
        ["audit", "costs", str(SAMPLE), "--model", "not-a-model"],
        ["audit", "costs", str(SAMPLE), "--format", "xml"],
    ):
        code, out, err = _run(capsys, *argv)
        assert code == 2 and out == "", argv
        (line,) = err.splitlines()
        assert line.startswith("memorylab: "), argv


def test_the_text_table_aligns_numbers_right_and_cuts_a_long_cell() -> None:
    """A fact can be a long sentence: one cell must not push every row of the table off the
    screen (the whole value is in the CSV and JSON)."""
    from memorylab._console import WIDEST_CELL, aligned_table, cells

    rows = [["研究助手", "x" * 200, "5"], ["a", "short", "1,234"]]
    lines = aligned_table(rows, ["agent", "fact", "n"], right={"n"})
    assert len({cells(line) for line in lines}) == 1  # every line as wide on screen
    assert lines[1].split("  ")[1].rstrip().endswith("…")
    assert cells(lines[1]) <= 8 + 2 + WIDEST_CELL + 2 + 5
    assert lines[2].endswith("1,234") and lines[1].endswith("    5")
    assert lines[2].startswith("a         short")
