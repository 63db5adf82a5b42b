"""The terminal table of ``memorylab compare`` says each ranking pair once (issue 41): before, the
notes' "Differences that rank" and then the differences table listed the same pairs twice."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_compare_prints_each_pair_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from memorylab.evaluate._cli import main

    monkeypatch.setenv("WORKSPACE_DIR", str(tmp_path))
    assert main(["--split", "session", "--no-progress", "--no-cache",
                 "--table", "fact-survival"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "Paired differences (over the units both rows have):" in out
    assert "Differences that rank" not in out
    assert out.count("| overall | memorylab/extractive − memorylab/truncate |") == 1
