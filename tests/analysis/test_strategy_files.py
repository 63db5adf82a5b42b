"""The loaders on the files a compaction strategy writes: the blocks it kept (verbatim, or a tool
result cleared to a placeholder) are read once, from the archive, and said to be kept."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from memorylab import Conversation
from memorylab.analysis import memory_df_with_problems
from memorylab.compress import ClearToolResults, ContextCompressor, KeepRecent


def _run(tmp_path: Path, strategy: object) -> tuple[Path, list[str]]:
    conversation = Conversation(agent_name="Worker", workspace_dir=tmp_path)
    compressor = ContextCompressor(0.6, strategy=strategy)  # type: ignore[arg-type]
    written = []
    for n in range(30):
        role = ("User", "Assistant", "Tool Executor")[n % 3]
        content = f"message {n}: " + ("row of output " * 40 if role == "Tool Executor" else "ok")
        conversation.add(role, content)
        written.append(content)
        compressor.compress(conversation, 1200)
    assert any(e.ok for e in compressor.events)  # (clearing also finds nothing left to clear)
    return tmp_path / "agents" / "Worker", written


@pytest.mark.parametrize(
    "strategy",
    [KeepRecent(keep_messages=4), ClearToolResults(keep_tool_results=1)],
    ids=["keep_recent", "clear_tool_results"],
)
def test_each_message_is_read_once_from_where_it_was_first_written(
    tmp_path: Path, strategy: object, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="memorylab")  # restored after the test
    folder, written = _run(tmp_path, strategy)
    read = memory_df_with_problems(folder)
    frame = read.frame
    messages = frame[~frame["is_summary"]]
    assert messages["content"].tolist() == written  # no copy, no placeholder, nothing lost
    notes = read.problems[read.problems["kind"] == "duplicate"]["message"].tolist()
    assert notes and all("kept by the compaction that wrote this file" in n for n in notes)
