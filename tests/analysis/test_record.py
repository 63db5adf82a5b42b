"""One typed record of an agent's run (issue 37): each rule the readers used to decide apart is
decided once, on the record, and every reader follows it. Each test writes a line (or a folder)
the old readers read differently."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from memorylab import Conversation
from memorylab.analysis import (
    AgentRecord,
    calibration_df,
    compactions_df,
    lineage_df,
    load_records,
    memory_df,
    run_settings,
)
from memorylab.memory._paths import agent_paths
from memorylab.memory._records import UsageRecord
from memorylab.memory._store import MemoryStore

AGENT = "Rules"


def _agent(workspace: Path, compactions: int = 0) -> MemoryStore:
    conv = Conversation(agent_name=AGENT, workspace_dir=workspace)
    for n in range(compactions + 1):
        conv.add("User", f"which port does staging {n} use?")
        conv.add("Assistant", f"543{n}")
        if n < compactions:
            conv.compact(f"staging {n} listens on 543{n}")
    assert conv.store is not None
    return conv.store


def _call(time: str, session: str, call: int, **more: object) -> dict[str, object]:
    return {"time": time, "agent": AGENT, "session_start": session, "call": call,
            "estimated_tokens": 100, "input_tokens": 110, **more}  # fmt: skip


def test_the_processes_are_in_one_order_for_every_reader(tmp_path: Path) -> None:
    """Calibration ordered the processes by their first call's time, the cache costs in the
    order usage.jsonl holds them, the replay's drift by time across processes: a process written
    second but started first is the first process for every reader now, and its calls are in
    the order of their numbers whatever order they were written in."""
    store = _agent(tmp_path)
    store.append_usage(_call("2026-05-01T12:00:00+00:00", "late", 1))  # written first
    store.append_usage(_call("2026-05-01T10:00:05+00:00", "early", 2))
    store.append_usage(_call("2026-05-01T10:00:00+00:00", "early", 1))
    (record,) = load_records(tmp_path)
    order = [[(c.session_start, c.call) for c in calls] for calls in record.processes]
    assert order == [[("early", 1), ("early", 2)], [("late", 1)]]
    frame = calibration_df(tmp_path)
    assert list(zip(frame["session"], frame["time"].dt.hour, frame["call"],
                    strict=True)) == [(0, 10, 1), (0, 10, 2), (1, 12, 1)]  # fmt: skip
    pd.testing.assert_frame_equal(calibration_df(record), frame)


def test_who_an_agent_is_is_its_folder_for_every_reader(tmp_path: Path) -> None:
    """Lineage found a frame's compactions at ``<workspace>/agents/<agent>`` (a guess): an agent
    folder outside ``agents/`` lost its recorded compactions there, while the same folder given
    as a path kept them. The record names the folder its rows came from."""
    _agent(tmp_path / "ws", compactions=2)
    folder = Path(shutil.move(agent_paths(AGENT, tmp_path / "ws").folder, tmp_path / "moved"))
    (record,) = load_records(folder)
    assert (record.agent, record.folder, record.workspace) == ("moved", folder, tmp_path)
    frame = memory_df(folder)
    assert set(frame["agent"]) == {record.agent} == set(compactions_df(folder)["agent"])
    by_frame, by_path = lineage_df(frame), lineage_df(folder)
    assert list(by_path["source"]) == ["jsonl", "jsonl"]
    pd.testing.assert_frame_equal(by_frame, by_path)
    assert run_settings(frame).agent == record.agent == run_settings(folder).agent


def test_a_model_call_is_a_typed_usage_record(tmp_path: Path) -> None:
    """``UsageRecord.from_dict`` was never called: each reader read the dicts its own way. Now
    the record's calls are UsageRecords, a field recorded as null takes its default (it made a
    call number of None), a line of another kind is no call, nor is a line without a time (the
    store's reader logs it); the drift of every reader is the record's."""
    store = _agent(tmp_path)
    store.append_usage(_call("2026-05-01T10:00:00+00:00", "s", 1, compacted=None))
    store.append_usage({**_call("2026-05-01T10:00:01+00:00", "s", 2), "call": None})
    store.append_usage({**_call("2026-05-01T10:00:02+00:00", "s", 3), "kind": "embedding"})
    store.append_usage({k: v for k, v in _call("", "s", 4).items() if k != "time"})
    (record,) = load_records(tmp_path)
    assert all(isinstance(call, UsageRecord) for call in record.calls)
    assert [(c.call, c.compacted) for c in record.calls] == [(1, False), (0, False)]
    drifts = calibration_df(record)["drift"].tolist()
    assert drifts == [call.drift for call in record.calls] == [pytest.approx(0.1)] * 2


def test_a_record_is_read_once_and_handed_on(tmp_path: Path) -> None:
    """The frames take records as they take paths: the same frames, no second read."""
    _agent(tmp_path, compactions=1)
    records = load_records(tmp_path)
    assert isinstance(records[0], AgentRecord) and len(records[0].compactions) == 1
    pd.testing.assert_frame_equal(memory_df(records), memory_df(tmp_path))
    pd.testing.assert_frame_equal(compactions_df(records), compactions_df(tmp_path))
