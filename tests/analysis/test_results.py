"""One result object per call, one dtype per column, one price map, one table format (issue 19)."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from analysis_support import Built

from memorylab.analysis import (
    ReadResult,
    compactions_df,
    memory_df,
    memory_df_with_problems,
    sweep,
    sweep_table,
)
from memorylab.analysis._frames import DTYPES, PROBLEM_COLUMNS
from memorylab.compress._cache_model import unit_prices
from memorylab.privacy import export_agent, load_export
from memorylab.transcripts import bundled_workspace

# --------------------------------------------------------------------------- memory_df's result


def test_lenient_memory_df_returns_one_result(own_workspace: Built) -> None:
    read = memory_df_with_problems(own_workspace.root)
    assert isinstance(read, ReadResult)
    assert read.frame.equals(memory_df(own_workspace.root))
    assert list(read.problems.columns) == [name for name, _ in PROBLEM_COLUMNS]


def test_the_read_result_is_a_table_result_with_notes(own_workspace: Built) -> None:
    import pandas as pd

    from memorylab.results import TableResult

    read = memory_df_with_problems(own_workspace.root)
    assert isinstance(read, TableResult) and read.notes() == []
    assert repr(read).startswith("ReadResult(frame=<") and "problems" in repr(read)
    problems = pd.DataFrame({"file": ["a", "b", "c"], "line": [1, 2, 3],
                             "kind": ["parse", "parse", "skipped"], "message": ["", "", ""]})  # fmt: skip
    assert ReadResult(read.frame, problems).notes() == [
        "2 parse problem(s): see .problems", "1 skipped problem(s): see .problems"]  # fmt: skip


def test_unpacking_the_old_tuple_still_works_and_warns(own_workspace: Built) -> None:
    read = memory_df_with_problems(own_workspace.root)
    with pytest.warns(DeprecationWarning, match=r"use result\.frame and result\.problems"):
        frame, problems = memory_df_with_problems(own_workspace.root)
    assert frame.equals(read.frame) and problems.equals(read.problems)
    with pytest.warns(DeprecationWarning, match="ReadResult"):
        assert read[1].equals(read.problems)


def test_the_warning_points_at_the_callers_line(own_workspace: Built) -> None:
    with pytest.warns(DeprecationWarning) as caught:
        _frame, _problems = memory_df_with_problems(own_workspace.root)
    assert caught[0].filename == __file__


# --------------------------------------------------------------------------- dtypes


def test_every_column_shared_by_the_frames_has_one_dtype(tmp_path: Path) -> None:
    """memory_df, compactions_df, load_export and the problems: a column name means one dtype
    (categories for labels, nullable Int64 for counts), whatever the frame."""
    workspace = tmp_path / "workspace"  # a copy: exporting takes the agent's lock, a file
    shutil.copytree(bundled_workspace(), workspace)  # that must not land in the package data
    exported = export_agent("BugHunter", workspace, path=tmp_path / "bug.json")
    read = memory_df_with_problems(workspace, model="gpt-4o")
    frames = {
        "memory_df": read.frame,
        "problems": read.problems,
        "compactions_df": compactions_df(workspace),
        "compactions_df(model)": compactions_df(workspace, model="gpt-4o"),
        "load_export": load_export(exported, model="gpt-4o"),
    }
    seen: dict[str, dict[str, str]] = {}
    for name, frame in frames.items():
        for column in frame.columns:
            kind = "category" if isinstance(frame[column].dtype, pd.CategoricalDtype) else None
            seen.setdefault(column, {})[name] = kind or str(frame[column].dtype)
    for column, dtypes in seen.items():
        assert len(set(dtypes.values())) == 1, (column, dtypes)
        assert set(dtypes.values()) == {DTYPES[column]}, (column, dtypes)
    shared = {c for c, d in seen.items() if len(d) > 1}
    assert {"workspace", "agent", "file", "tokens"} <= shared
    compactions = frames["compactions_df"]
    assert str(compactions["agent"].dtype) == "category"
    for column in ("messages_archived", "tokens_before", "tokens_after", "carried_over"):
        assert compactions[column].dtype == "Int64", column


# --------------------------------------------------------------------------- prices


def test_unknown_and_offline_models() -> None:
    assert unit_prices("memorylab/extractive") == (0.0, 0.0)
    assert all(math.isnan(p) for p in unit_prices(None))
    assert all(math.isnan(p) for p in unit_prices("no-such-provider/no-such-model-xyz"))


def test_pricing_a_listed_model_does_not_import_litellm() -> None:
    script = (
        "import sys\n"
        "from memorylab.compress._cache_model import price\n"
        "assert price('gpt-4o', 1_000_000) == 2.5\n"
        "print('litellm' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False", done.stderr


# --------------------------------------------------------------------------- sweep_table


def test_sweep_table_formats_for_reading_and_keeps_the_frame() -> None:
    frame = memory_df(bundled_workspace())
    result = sweep(frame[frame["agent"] == "Researcher"], thresholds=[0.5, 0.6, 0.9])
    before = result.frame.copy()
    shown = sweep_table(result)
    assert result.frame.equals(before) and "total_input_tokens" in result.frame.columns  # untouched
    assert not any("_" in str(c) for c in shown.columns)
    assert shown.columns[0] == "" and "the agent's setting" in set(shown[""])
    assert list(shown["threshold"]) == ["0.50", "0.60", "0.85", "0.90"]
    assert all(re.fullmatch(r"\$\d+\.\d{4}", v) for v in shown["est. cost (USD)"])
    assert all(re.fullmatch(r"\d{1,3}(,\d{3})*", v) for v in shown["input tokens read"])
    chosen = sweep_table(result, ["threshold", "compactions"])
    assert list(chosen.columns) == ["", "threshold", "compactions"]


def test_sweep_table_of_token_thresholds() -> None:
    messages = [{"role": "User", "content": "word " * 40} for _ in range(120)]
    result = sweep(messages, thresholds=[1500, 3000], context_lengths=[4000], fast=True)
    assert list(sweep_table(result)["threshold"]) == ["1,500 tokens", "3,000 tokens"]
