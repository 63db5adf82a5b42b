"""memory_df reads the parser's columns, no Message per row (issue 30): its frames are the ones
built message by message from Message records, as before, on the bundled workspaces (memorylab's
and the reference's); rule 6 (a message read once) still holds where the files mix naive and aware
timestamps, which do not compare."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import pytest

from memorylab.analysis import load_records, memory_df, memory_df_with_problems
from memorylab.analysis._frames import MEMORY_COLUMNS, _utc, build_frame
from memorylab.analysis._sources import Segment
from memorylab.memory import _format as fmt
from memorylab.memory._records import Message
from memorylab.transcripts import bundled_workspace


def _by_messages(source: Path) -> pd.DataFrame:
    """memory_df's frame built as before the columns: a Message record per row."""
    data: dict[str, list[Any]] = {name: [] for name, _ in MEMORY_COLUMNS}
    messages: list[Message] = []
    for files in load_records(source):
        start = len(messages)
        previous: Segment | None = None
        for index, segment in enumerate(files.segments):
            kept = list(segment.messages())
            marked = [m.is_summary for m in kept]
            first = segment.document.messages[0] if segment.document.messages else None
            if (
                first is not None
                and previous is not None
                and previous.kind == "archive"
                and 0 not in segment.repeated
                and first.role.casefold() == "system"
            ):
                marked[0] = True
            previous = segment
            data["is_summary"] += marked
            for name, label in (
                ("workspace", str(files.workspace)),
                ("agent", files.agent),
                ("file", str(segment.path)),
                ("kind", segment.kind),
                ("segment", index),
            ):
                data[name] += [label] * len(kept)
            data["position"] += list(segment.positions())
            messages += kept
        data["timeline"] += range(len(messages) - start)
    data["role"] = [m.role for m in messages]
    data["content"] = [m.content for m in messages]
    data["timestamp"], data["naive_timestamp"] = _utc([m.timestamp for m in messages], None)
    data["chars"] = [len(m.content) for m in messages]
    return build_frame(MEMORY_COLUMNS, data)


@pytest.mark.parametrize("kind", ["memorylab", "reference"])
def test_the_bundled_workspaces_frames_are_unchanged(
    kind: Literal["memorylab", "reference"],
) -> None:
    workspace = bundled_workspace(kind)
    frame = memory_df_with_problems(workspace).frame
    assert len(frame) > 200
    pd.testing.assert_frame_equal(frame, _by_messages(workspace), check_exact=True)
    pd.testing.assert_frame_equal(memory_df(workspace), frame, check_exact=True)


def _file(path: Path, blocks: list[tuple[str, str, str]], continues: str | None = None) -> None:
    head = fmt.render_header("c", datetime(2026, 1, 1, tzinfo=UTC), continues=continues)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(head + "".join(fmt.block_text(*block) for block in blocks), encoding="utf-8")
    os.chmod(path, 0o600)


def test_a_message_is_read_once_where_naive_and_aware_timestamps_mix(tmp_path: Path) -> None:
    folder = tmp_path / "agents" / "a"
    old, new = "history_2026-01-01_00-00-00Z.md", "history_2026-01-02_00-00-00Z.md"
    # the first archive mixes the reference's naive blocks with memorylab's aware ones
    _file(
        folder / "archive" / old,
        [("User", "2026-01-01T09:00:00", "naive"), ("User", "2026-01-01T10:00:00+00:00", "one")],
    )
    _file(
        folder / "archive" / new,
        [("User", "2026-01-01T10:00:00+00:00", "one"), ("A", "2026-01-01T11:00:00+00:00", "two")],
        continues=old,
    )
    _file(
        folder / "MEMORY.md",
        [("A", "2026-01-01T11:00:00+00:00", "two"), ("A", "2026-01-01T12:00:00+00:00", "three")],
        continues=new,
    )
    read = memory_df_with_problems(tmp_path)
    assert list(read.frame["content"]) == ["naive", "one", "two", "three"]
    assert list(read.frame["position"]) == [0, 1, 1, 1]
    assert list(read.problems["kind"]) == ["duplicate", "duplicate"]
    pd.testing.assert_frame_equal(read.frame, _by_messages(tmp_path), check_exact=True)
