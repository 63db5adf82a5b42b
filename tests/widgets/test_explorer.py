"""MemoryExplorer: pickers and filters drive the table, plot and compaction view."""

from __future__ import annotations

from pathlib import Path

import pytest

from memorylab.errors import InvalidSetting
from memorylab.widgets import MemoryExplorer
from memorylab.widgets._explorer import ALL, MESSAGE_COLUMNS


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
    # Nothing damaged: a remark on each file a compaction wrote (the turn it kept, read once).
    assert list(explorer.problems["kind"]) == ["duplicate"] * 5


def test_default_workspace_is_the_current_one(workspace: Path) -> None:
    assert MemoryExplorer().source == workspace


def test_token_growth_uses_the_recorded_settings(workspace: Path) -> None:
    explorer = MemoryExplorer(workspace)
    assert explorer.context_length == 600 and explorer.threshold == 0.7
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
    assert explorer.context_length == 2800 and explorer.threshold == 0.85
    assert "static context 286 tokens (recorded)" in explorer.header.value
    peaks = explorer.growth[explorer.growth["compaction"]]
    assert (peaks["context_tokens"] == peaks["recorded_tokens"]).all() and len(peaks) == 7


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
    assert "MemoryDocument · 10 messages" in explorer.archive_view.value
    assert "Extractive summary of 8 messages" in explorer.summary_view.value  # 2: the turn kept
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


def test_search_matches_are_marked_and_escaped(isolated_workspace: Path) -> None:
    from memorylab import Conversation

    conv = Conversation(agent_name="marks", workspace_dir=isolated_workspace)
    conv.add("User", "<script>alert('PORT')</script> then the Port 5433 & the port again")
    conv.add("User", "x " * 400 + "the staging port is deep in a long message")
    conv.add("User", "nothing to see here")
    explorer = MemoryExplorer(isolated_workspace)
    explorer.search_box.value = "port"
    assert len(explorer.table) == 2
    shown = explorer.table_view.value
    assert "&lt;script&gt;alert(&#x27;<mark>PORT</mark>&#x27;)&lt;/script&gt;" in shown
    assert "the <mark>Port</mark> 5433 &amp; the <mark>port</mark> again" in shown
    assert "<script>" not in shown
    assert "…" in shown and "staging <mark>port</mark> is deep" in shown  # clipped around it
    assert "matches of “port” marked" in shown
    explorer.search_box.value = "<b>"
    assert explorer.table.empty and "<mark>" not in explorer.table_view.value


def test_the_table_pages_through_every_row(workspace: Path) -> None:
    explorer = MemoryExplorer(workspace, max_rows=5)
    assert explorer.page_size_picker.options == (5, 20, 40, 100, 250)
    assert len(explorer.table) == 19 and explorer.page_count == 4
    assert explorer.page == 0 and list(explorer.page_rows["timeline"]) == [0, 1, 2, 3, 4]
    assert "rows 1–5 of 19" in explorer.page_label.value
    assert explorer.previous_button.disabled and not explorer.next_button.disabled
    seen = list(explorer.page_rows["timeline"])
    while not explorer.next_button.disabled:
        explorer.next_button.click()
        seen += list(explorer.page_rows["timeline"])
    assert seen == list(explorer.table["timeline"])  # every row, once, in order
    assert explorer.page == 3 and "rows 16–19 of 19" in explorer.page_label.value
    assert "more rows" not in explorer.table_view.value
    last = explorer.table_view.value
    assert f"<td>{explorer.table['timeline'].iloc[-1]}</td>" in last
    explorer.previous_button.click()
    assert explorer.page == 2 and "rows 11–15 of 19" in explorer.page_label.value
    explorer.show_page(99)
    assert explorer.page == 3
    explorer.role_picker.value = "User"  # a new filter starts at its first page
    assert explorer.page == 0 and "rows 1–5 of 5" in explorer.page_label.value
    assert explorer.next_button.disabled
    explorer.role_picker.value = ALL
    explorer.page_size_picker.value = 20
    assert explorer.page_count == 1 and "rows 1–19 of 19" in explorer.page_label.value
    explorer.search_box.value = "no such words anywhere"
    assert "no rows" in explorer.page_label.value and explorer.page_count == 1


def test_summaries_are_highlighted_on_later_pages(workspace: Path) -> None:
    explorer = MemoryExplorer(workspace, max_rows=5)
    summaries = [i for i, c in enumerate(explorer.table["content"]) if "Extractive summary" in c]
    assert summaries and summaries[-1] >= 5
    explorer.show_page(summaries[-1] // 5)
    assert 'class="mlab-hl"' in explorer.table_view.value


def test_each_compaction_shows_where_its_summary_came_from_and_what_it_dropped() -> None:
    """Issue 29: the explorer shows summary_provenance and dropped_by for the chosen compaction,
    the same rows the functions give."""
    from memorylab.analysis import dropped_by, summary_provenance
    from memorylab.transcripts import bundled_workspace

    explorer = MemoryExplorer(bundled_workspace(), agent="BugHunter")
    explorer.case_picker.value = 2  # the third compaction
    view = explorer.provenance_view.value
    origins = summary_provenance(explorer.agent_frame, "BugHunter", 3)
    dropped = dropped_by(explorer.agent_frame, "BugHunter", 3)
    assert len(origins) and "Where each sentence came from" in view
    assert f"({len(dropped):,} extracted fact(s)" in view
    first = origins["sentence"].iloc[0]
    assert first[:40].replace("&", "&amp;").replace("<", "&lt;") in view
    explorer.case_picker.value = 0
    assert explorer.provenance_view.value != view  # follows the picker
