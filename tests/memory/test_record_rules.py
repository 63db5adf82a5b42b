"""What a record means is decided once (issue 37, first part): a model call
(:func:`~memorylab.memory._records.is_model_call`), a successful compaction
(:func:`~memorylab.memory._records.is_compaction`) and a recorded count
(:func:`~memorylab.memory._records.recorded_count`). Each test writes a line the readers used to
disagree on, and checks that every reader now reads it alike."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from memorylab import Conversation
from memorylab.analysis import calibration_df, compactions_df, load_records
from memorylab.evaluate import cases_from_workspace
from memorylab.memory._paths import agent_paths
from memorylab.memory._records import is_compaction, is_model_call, recorded_count
from memorylab.memory._store import MemoryStore

AGENT = "Rules"


def _agent(tmp_path: Path) -> tuple[Path, MemoryStore]:
    workspace = tmp_path / "ws"
    conv = Conversation(agent_name=AGENT, workspace_dir=workspace)
    conv.add("User", "which port does staging use?")
    conv.add("Assistant", "5433")
    store = conv.store
    assert store is not None
    return workspace, store


def test_a_usage_line_without_a_kind_is_a_model_call_for_every_reader(tmp_path: Path) -> None:
    """Calibration read a line without ``kind`` as a call, the cache costs' reader did not:
    one audit counted it and the other did not."""
    workspace, store = _agent(tmp_path)
    call = {"time": "2026-05-01T10:00:00+00:00", "session_start": "s1", "call": 1,
            "model": "gpt-4o-mini", "estimated_tokens": 100, "input_tokens": 110}  # fmt: skip
    store.append_usage(call)
    store.append_usage({**call, "call": 2, "kind": "embedding"})
    folder = agent_paths(AGENT, workspace).folder
    assert [call.call for call in load_records(folder)[0].calls] == [1]
    assert list(calibration_df(folder)["call"]) == [1]


@pytest.mark.parametrize(
    ("record", "compaction"),
    [
        ({"archive": "history_a.md"}, True),  # written before the kind was recorded
        ({"kind": "compaction", "archive": "history_a.md"}, True),
        ({"kind": "edit", "archive": "history_a_edit.md"}, False),
        ({"kind": "compaction", "error": "timed out"}, False),
        ({"archive": "history_a.md", "error": "disk full"}, False),
    ],
)
def test_what_a_successful_compaction_is(record: dict[str, object], compaction: bool) -> None:
    assert is_compaction(record) is compaction


def test_an_edit_is_no_compaction_for_the_evaluation_cases_either(tmp_path: Path) -> None:
    """The evaluation's cases took every record with an archive and no error for a compaction,
    an edit's included (the frames and the cache costs did not)."""
    workspace, _ = _agent(tmp_path)
    conv = Conversation(agent_name=AGENT, workspace_dir=workspace)
    conv.compact("staging listens on 5433")
    conv.add("User", "forget the port")
    conv.delete(len(conv.conversation_history) - 1)
    records = MemoryStore(agent_paths(AGENT, workspace).memory_md).records()
    assert sorted(str(r.get("kind", "compaction")) for r in records) == ["compaction", "edit"]
    (record,) = load_records(workspace)  # what the cases take their compactions from
    assert len(record.compactions) == 1 and all(is_compaction(r) for r in record.compactions)
    assert [case.metadata["archive"] for case in cases_from_workspace(workspace)] == [
        record.compactions[0]["archive"]
    ]
    assert len(compactions_df(workspace)) == 1


@pytest.mark.parametrize(
    ("value", "count"),
    [
        (12, 12),
        (12.0, 12),
        (np.int64(12), 12),  # a frame's value: calibration's rule read it as no count
        (np.float64(12.0), 12),
        (Decimal("12"), None),  # not a real number JSON gives
        ("12", None),  # the frames' rule read a text as a count, calibration's did not
        (True, None),
        (None, None),
        (pd.NA, None),
        (float("nan"), None),
        (float("inf"), None),
        (1e308, None),  # past int64: no frame holds it
        (2**64, None),
        (-3, -3),
    ],
)
def test_what_a_recorded_count_is(value: object, count: int | None) -> None:
    assert recorded_count(value) == count


def test_a_count_written_as_text_is_no_count_in_any_frame(tmp_path: Path) -> None:
    """A hand-written ``"tokens_before": "900"``: the frames' rule read 900, calibration's
    none; now the line's field is left out where it is read, and no reader sees a count."""
    workspace, _ = _agent(tmp_path)
    Conversation(agent_name=AGENT, workspace_dir=workspace).compact("staging: 5433")
    path = agent_paths(AGENT, workspace).compactions
    (line,) = path.read_text(encoding="utf-8").splitlines()
    record = json.loads(line)
    record["tokens_before"] = "900"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    frame = compactions_df(workspace)
    assert frame["tokens_before"].isna().all()


def test_model_call_rule_in_one_place() -> None:
    assert is_model_call({}) and is_model_call({"kind": "model_call"})
    assert not is_model_call({"kind": "summary"})
