"""MemoryExplorer: pickers and filters drive the table, plot and compaction view."""

from __future__ import annotations

from pathlib import Path

import pytest

from memorylab.errors import InvalidSetting
from memorylab.widgets import MemoryExplorer
from memorylab.widgets.explorer import ALL, MESSAGE_COLUMNS


def test_loads_the_workspace(workspace: Path) -> None:
    explorer = MemoryExplorer(workspace)
    assert list(explorer.agent_picker.options) == ["alpha", "beta"]
    assert explorer.agent == "alpha"
    assert len(explorer.table) == len(explorer.agent_frame) == 19  # 17 messages + 2 summaries
    assert tuple(explorer.table.columns) == MESSAGE_COLUMNS
    segments = explorer.segments
    assert list(segments["kind"]) == ["archive", "archive", "memory"]
    assert list(segments["file"])[-1] == "MEMORY.md"
    assert "MEMORY.md (live)" in explorer.timeline_view.value
    assert "<b>3</b> segment(s)" in explorer.header.value
    assert explorer.problems.empty


def test_default_workspace_is_the_current_one(workspace: Path) -> None:
    assert MemoryExplorer().source == workspace


def test_token_growth_uses_the_recorded_settings(workspace: Path) -> None:
    explorer = MemoryExplorer(workspace)
    assert explorer.context_length == 700 and explorer.threshold == 0.7
    assert bytes(explorer.image.value).startswith(b"\x89PNG")
    assert explorer.growth["compaction"].sum() == 2
    assert explorer.axes is not None and explorer.axes.get_title() == "Context size of alpha"
    explorer.agent_picker.value = "beta"
    assert explorer.context_length == 500
    assert explorer.growth["compaction"].sum() == 3
    overridden = MemoryExplorer(workspace, context_length=4000, threshold=0.5)
    assert int(overridden.growth["trigger"].iloc[0]) == 2000
    assert overridden.settings.source_of("threshold") == "given"


def test_growth_is_the_functions_on_the_bundled_workspace() -> None:
    from memorylab.analysis import memory_df, token_growth
    from memorylab.transcripts import bundled_workspace

    workspace = bundled_workspace("memorylab")
    explorer = MemoryExplorer(workspace, agent="DataEngineer")
    direct = token_growth(memory_df(workspace / "agents" / "DataEngineer"))
    columns = ["timeline", "context_tokens", "compaction", "restart", "recorded_tokens"]
    assert explorer.growth[columns].reset_index(drop=True).equals(direct[columns])
    assert explorer.context_length == 3000 and explorer.threshold == 0.85
    assert "static context 41 tokens (recorded)" in explorer.header.value
    peaks = explorer.growth[explorer.growth["compaction"]]
    assert (peaks["context_tokens"] == peaks["recorded_tokens"]).all() and len(peaks) == 6


def test_role_filter_and_search(workspace: Path) -> None:
    explorer = MemoryExplorer(workspace)
    assert explorer.role_picker.options == (ALL, "User", "Agent", "Tool Executor", "System")
    explorer.role_picker.value = "User"
    assert set(explorer.table["role"]) == {"User"} and len(explorer.table) == 5
    explorer.search_box.value = "PORT"
    assert len(explorer.table) == 2  # the task and the question at the end
    assert "port" in explorer.table_view.value
    explorer.role_picker.value = ALL
    assert all("port" in c.lower() for c in explorer.table["content"])
    explorer.search_box.value = "no such words anywhere"
    assert explorer.table.empty and "(no rows)" in explorer.table_view.value


def test_segment_filter(workspace: Path) -> None:
    explorer = MemoryExplorer(workspace)
    labels = [label for label, _ in explorer.segment_picker.options]
    assert labels[0] == ALL and "(live)" in labels[-1]
    explorer.segment_picker.value = 1
    assert set(explorer.table["segment"]) == {1}
    assert "border:2px solid #0969da" in explorer.timeline_view.value
    assert 'class="mlab-hl"' in explorer.table_view.value  # the summary that opens segment 1


def test_compaction_summary_next_to_its_archive(workspace: Path) -> None:
    explorer = MemoryExplorer(workspace)
    assert len(explorer.cases) == 2
    case = explorer.case
    assert case is not None and case.metadata["archive"] == explorer.segments["file"].iloc[0]
    assert case.metadata["archive"] in explorer.archive_view.value
    assert "MemoryDocument · 9 messages" in explorer.archive_view.value
    assert "Extractive summary of 9 messages" in explorer.summary_view.value
    explorer.case_picker.value = 1
    assert explorer.case is explorer.cases[1]
    explorer.agent_picker.value = "beta"
    assert len(explorer.cases) == 3 and explorer.case is explorer.cases[0]
    assert explorer.segment_picker.value == -1 and explorer.role_picker.value == ALL


def test_agent_without_compactions(isolated_workspace: Path) -> None:
    from memorylab import Conversation

    conv = Conversation(agent_name="fresh", workspace_dir=isolated_workspace)
    conv.add("User", "hello")
    explorer = MemoryExplorer(isolated_workspace)
    assert explorer.cases == [] and explorer.case is None
    assert "not compacted yet" in explorer.archive_view.value
    assert explorer.context_length == 8192


def test_agent_argument_and_errors(workspace: Path, tmp_path: Path) -> None:
    assert MemoryExplorer(workspace, agent="beta").agent == "beta"
    with pytest.raises(InvalidSetting, match="no agent 'gamma'"):
        MemoryExplorer(workspace, agent="gamma")
    empty = tmp_path / "empty"
    (empty / "agents").mkdir(parents=True)
    with pytest.raises(InvalidSetting, match="no agent memory found"):
        MemoryExplorer(empty)


def test_an_agent_folder_as_source(workspace: Path) -> None:
    explorer = MemoryExplorer(workspace / "agents" / "beta")
    assert list(explorer.agent_picker.options) == ["beta"] and len(explorer.cases) == 3
