"""Memory that ``Conversation.update`` / ``delete`` / ``clear`` edited reads as one timeline: an
edit's archive (the file before the edit) stays on the lineage but its messages are not read
twice (rule 5 of ``analysis/sources.py``)."""

from __future__ import annotations

from pathlib import Path

from memorylab import Conversation, compactions_df, memory_df
from memorylab.analysis import memory_df_with_problems
from memorylab.privacy import export_agent, load_export


def _edited(workspace: Path) -> Conversation:
    conv = Conversation(agent_name="Editor", workspace_dir=workspace)
    for n in range(4):
        conv.add("User", f"m{n}")
    conv.compact("summary of m0-m3")
    conv.add("User", "x")
    conv.add("User", "y")
    conv.update(2, "User", "y, edited")
    conv.delete(1)
    return conv


def test_each_message_is_read_once_after_edits(isolated_workspace: Path) -> None:
    _edited(isolated_workspace)
    result = memory_df_with_problems(isolated_workspace)
    assert result.frame["content"].tolist() == [
        "m0", "m1", "m2", "m3", "[Compressed Memory Summary] summary of m0-m3", "y, edited",
    ]  # fmt: skip
    assert result.frame["segment"].tolist() == [0, 0, 0, 0, 1, 1]
    kinds = result.problems["kind"].astype(str).tolist()
    assert kinds == ["edit", "edit"]  # said, and no "lineage" note: the chain goes through them
    assert len(list((isolated_workspace / "agents" / "Editor" / "archive").iterdir())) == 3


def test_edits_are_not_compactions_and_an_export_reads_the_same(
    isolated_workspace: Path, tmp_path: Path
) -> None:
    _edited(isolated_workspace)
    assert len(compactions_df(isolated_workspace)) == 1
    exported = export_agent("Editor", isolated_workspace, path=tmp_path / "editor.json")
    assert (
        load_export(exported)["content"].tolist()
        == memory_df(isolated_workspace)["content"].tolist()
    )


def test_clear_leaves_only_what_was_added_after_it(isolated_workspace: Path) -> None:
    conv = Conversation(agent_name="Editor", workspace_dir=isolated_workspace)
    conv.add("User", "before")
    conv.clear()
    conv.add("User", "after")
    assert memory_df(isolated_workspace)["content"].tolist() == ["after"]
