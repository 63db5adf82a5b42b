"""`memorylab report` reads each file of the workspace once, and token growth of a frame reads
none (issue 37): every section takes the agents' records (memorylab.analysis.AgentRecord) read
at the start, where before each went back to the files (archives 159 times, compactions.jsonl
40, MEMORY.md 22, usage.jsonl 9 on the bundled workspace)."""

from __future__ import annotations

import builtins
import io
import os
import shutil
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from memorylab.analysis import memory_df, token_growth
from memorylab.report import build_report
from memorylab.transcripts import bundled_workspace


@contextmanager
def counted_opens(under: Path) -> Iterator[Counter[str]]:
    """Every open of a file below ``under`` in this process (builtins.open, io.open, which
    pathlib's opens call, and os.open, the store's), by path."""
    opened: Counter[str] = Counter()
    real_open, real_os_open = builtins.open, os.open  # io.open is builtins.open

    def note(path: Any) -> None:
        if isinstance(path, str | os.PathLike):
            full = Path(os.fsdecode(path)).absolute()
            if full.is_relative_to(under):
                opened[str(full.relative_to(under))] += 1

    def counting_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        note(file)
        return real_open(file, *args, **kwargs)

    def counting_os_open(path: Any, *args: Any, **kwargs: Any) -> int:
        note(path)
        return real_os_open(path, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(builtins, "open", counting_open)
        patch.setattr(io, "open", counting_open)
        patch.setattr(os, "open", counting_os_open)
        yield opened


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The bundled 3-agent workspace, copied (private: the suite's other tests read it too)."""
    return Path(shutil.copytree(bundled_workspace(), tmp_path / "ws")).absolute()


def test_the_report_opens_each_file_of_the_workspace_once(workspace: Path) -> None:
    with counted_opens(workspace) as opened:
        build_report(workspace, sweep_thresholds=(0.5, 0.9))
    kinds = Counter(Path(name).name.split("_")[0] for name in opened)
    assert kinds["history"] >= 10 and kinds["MEMORY.md"] == 3  # every archive, every agent
    assert kinds["compactions.jsonl"] == 3 and kinds["usage.jsonl"] == 3
    assert {name: n for name, n in opened.items() if n > 1} == {}


def test_token_growth_of_a_frame_opens_no_file(workspace: Path) -> None:
    folder = workspace / "agents" / "BugHunter"
    frame = memory_df(folder)
    with counted_opens(workspace) as opened:
        growth = token_growth(frame)
    assert dict(opened) == {}
    pd.testing.assert_frame_equal(growth, token_growth(memory_df(folder)))


def test_a_frame_of_a_changed_agent_is_read_again(workspace: Path) -> None:
    """The record kept for a frame is used while its files are unchanged only."""
    from memorylab import Conversation

    folder = workspace / "agents" / "BugHunter"
    frame = memory_df(folder)
    Conversation(agent_name="BugHunter", workspace_dir=workspace).add("User", "one more")
    with counted_opens(workspace) as opened:
        token_growth(frame)
    assert opened["agents/BugHunter/MEMORY.md"] == 1
