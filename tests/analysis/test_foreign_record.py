"""run_record: another framework's run read like a MEMORY.md folder (issue 40)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from memorylab.analysis import (
    AgentRecord,
    RunCompaction,
    RunMessage,
    compactions_df,
    memory_df,
    run_record,
    token_growth,
)
from memorylab.errors import InvalidSetting

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _messages(count: int) -> list[RunMessage]:
    roles = ("user", "assistant")
    return [
        RunMessage(roles[i % 2], f"message {i}: " + "words " * 30, START + timedelta(minutes=i))
        for i in range(count)
    ]


def _record(path: Path, **kwargs: Any) -> AgentRecord:
    path.write_text("{}\n")  # the file read: its identity keeps the record for its frames
    messages = _messages(10)
    compactions = [
        RunCompaction(
            at=6,
            time=START + timedelta(minutes=5, seconds=30),
            summary="the gist",
            tokens_before=1234,
            kept=2,
            trigger="auto",
        ),
    ]
    return run_record(path, messages, format="test", compactions=compactions, **kwargs)


def test_memory_df_lays_out_segments_and_marks_the_summary(tmp_path: Path) -> None:
    record = _record(tmp_path / "run.jsonl")
    frame = memory_df(record)
    # 6 before the compaction, the summary, 4 after (the 2 kept are copies: read once)
    assert len(frame) == 11
    assert frame["is_summary"].sum() == 1
    summary = frame[frame["is_summary"]].iloc[0]
    assert summary["content"].endswith("the gist")
    assert list(frame["kind"].unique()) == ["archive", "memory"]
    assert frame["timestamp"].is_monotonic_increasing


def test_compactions_df_holds_what_was_recorded(tmp_path: Path) -> None:
    record = _record(tmp_path / "run.jsonl")
    frame = compactions_df(record)
    assert len(frame) == 1
    row = frame.iloc[0]
    assert row["tokens_before"] == 1234
    assert pd.isna(row["tokens_after"])  # not recorded: missing, never guessed
    assert row["archive"] == "run.jsonl#1"
    assert row["source"] == "jsonl"
    extra = record.compactions[0]["extra"]
    assert extra["recorded"] == ["summary", "tokens_before", "trigger"]
    assert extra["fired_by"] == "auto"


def test_token_growth_shows_the_recorded_compaction(tmp_path: Path) -> None:
    record = _record(tmp_path / "run.jsonl", settings={"context_length": 4000, "threshold": 0.8})
    growth = token_growth(memory_df(record))  # the frame finds its record (foreign_record)
    peaks = growth[growth["compaction"]]
    assert len(peaks) == 1
    assert peaks["recorded_tokens"].tolist() == [1234]
    assert (growth["context_length"] == 4000).all()


def test_segments_are_named_after_the_file(tmp_path: Path) -> None:
    record = _record(tmp_path / "run.jsonl")
    frame = memory_df(record)
    assert set(frame["file"].astype(str)) == {f"{tmp_path / 'run.jsonl'}#1",
                                              str(tmp_path / "run.jsonl")}  # fmt: skip


def test_a_record_without_compactions_is_one_segment(tmp_path: Path) -> None:
    path = tmp_path / "plain.jsonl"
    record = run_record(path, _messages(3), format="test", notes=["no usage recorded"])
    assert [s.kind for s in record.segments] == ["memory"]
    assert len(memory_df(record)) == 3
    assert len(compactions_df(record)) == 0
    assert record.notes[0].kind == "not-recorded"


def test_a_loaders_mistake_is_said(tmp_path: Path) -> None:
    with pytest.raises(InvalidSetting, match="fires at message 20"):
        run_record(tmp_path / "x.jsonl", _messages(3), format="test",
                   compactions=[RunCompaction(at=20, time=START)])  # fmt: skip
    with pytest.raises(InvalidSetting, match="role 'human'"):
        run_record(tmp_path / "x.jsonl", [RunMessage("human", "hi", START)], format="test")


def test_a_token_count_threshold_stays_a_count(tmp_path: Path) -> None:
    record = _record(tmp_path / "run.jsonl", settings={"threshold": 3000, "model": "gpt-4o"})
    (compaction,) = record.compactions
    assert compaction["threshold"] == 3000 and isinstance(compaction["threshold"], int)
    assert compaction["extra"]["token_model"] == "gpt-4o"
