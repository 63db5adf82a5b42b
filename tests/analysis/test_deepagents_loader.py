"""LangChain deepagents threads, as deepagents 0.7.32 writes them (data/foreign/deepagents/:
a real run, offline, with a fake chat model, whose SummarizationMiddleware summarized several
times): the thread its checkpointer held (exported as thread.json) and the history the middleware
offloaded to its FilesystemBackend, read through the registry: the messages, each summarization
event as a compaction with its summary, each reply's usage_metadata as a model call, and
`memorylab report` on the folder. With MEMORYLAB_DEEPAGENTS_PYTHON naming a venv's python where
deepagents is installed, a run is generated here and read too."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from memorylab.analysis import (
    AgentRecord,
    compactions_df,
    load_records,
    loader_for,
    memory_df,
    token_growth,
)
from memorylab.cli import main
from memorylab.errors import InvalidSetting, MemoryFormatError

HERE = Path(__file__).resolve().parents[2] / "data" / "foreign" / "deepagents"
SAMPLE = HERE / "sample"
DEEPAGENTS_PYTHON = os.environ.get("MEMORYLAB_DEEPAGENTS_PYTHON")  # .ci/run sets it
ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


def _thread(folder: Path) -> Mapping[str, Any]:
    return json.loads((folder / "thread.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _check(record: AgentRecord, folder: Path) -> None:
    """The record against what the files hold, read here with json and re alone."""
    thread = _thread(folder)
    events = thread["summarization_events"]
    assert len(events) == thread["summaries_made"] >= 3  # every summary the fake model wrote
    compactions = record.compactions
    assert len(compactions) == len(events)
    for compaction, event in zip(compactions, events, strict=True):
        text = event["summary_message"]["data"]["content"]
        summary = re.search(r"<summary>\n(.*)\n</summary>", text, re.S)
        assert summary is not None
        assert compaction["summary_chars"] == len(summary.group(1))
        assert compaction["extra"]["kept"] == event["created_at_index"] - event["cutoff_index"]
        assert compaction["extra"]["recorded"] == ["summary"]  # no tokens: deepagents keeps none
        assert "tokens_before" not in compaction
        assert compaction["context_length"] == thread["model"]["profile"]["max_input_tokens"]
        assert compaction["threshold"] == thread["summarization"]["trigger"][1]
    # one offloaded section per summary, in the file each event names
    [history] = {event["file_path"] for event in events}
    offloaded = (folder / "backend" / history.lstrip("/")).read_text(encoding="utf-8")
    assert offloaded.count("## Summarized at ") == len(events)
    replies = [m for m in thread["messages"] if m["type"] == "ai"]
    assert len(record.calls) == len(replies)
    assert [c.input_tokens for c in record.calls] == [
        m["data"]["usage_metadata"]["input_tokens"] for m in replies
    ]


def test_the_folder_and_its_thread_file_are_chosen_by_what_they_are(tmp_path: Path) -> None:
    assert loader_for(SAMPLE).name == "deepagents"
    assert loader_for(SAMPLE / "thread.json").name == "deepagents"
    other = tmp_path / "thread.json"
    other.write_text('{"messages": []}\n', encoding="utf-8")  # JSON, but no export's opening
    with pytest.raises(InvalidSetting, match="no loader reads"):
        loader_for(tmp_path)


def test_the_sample_reads_as_one_record_with_its_compactions() -> None:
    [record] = load_records(SAMPLE)
    assert record.format == "deepagents"
    assert record.agent == _thread(SAMPLE)["thread_id"]
    _check(record, SAMPLE)
    assert [load_records(SAMPLE / "thread.json")[0].records] == [record.records]


def test_the_messages_keep_their_roles_and_the_summaries_open_each_segment() -> None:
    thread = _thread(SAMPLE)
    frame = memory_df(SAMPLE)
    summaries = frame[frame["content"].str.startswith("[Compressed Memory Summary]")]
    assert len(summaries) == len(thread["summarization_events"])
    rows = frame.drop(summaries.index)
    assert list(rows["role"]) == [ROLES[m["type"]] for m in thread["messages"]]
    assert rows["timestamp"].is_monotonic_increasing  # the checkpoints' times
    first = next(m for m in thread["messages"] if m["type"] == "human")
    assert rows["content"].iloc[0] == first["data"]["content"]
    calls = rows[rows["content"].str.contains(r"\[tool call shell ", regex=True)]
    assert len(calls) > 0  # the model's tool calls, rendered beside its text


def test_the_compactions_frame_has_one_row_per_summary() -> None:
    frame = compactions_df(SAMPLE)
    assert len(frame) == len(_thread(SAMPLE)["summarization_events"])
    assert frame["tokens_before"].isna().all()  # not recorded, never guessed


def test_the_growth_marks_each_recorded_compaction_at_the_recorded_threshold() -> None:
    thread = _thread(SAMPLE)
    growth = token_growth(memory_df(SAMPLE))
    assert int(growth["compaction"].sum()) == len(thread["summarization_events"])
    window = thread["model"]["profile"]["max_input_tokens"]
    assert set(growth["trigger"]) == {int(window * thread["summarization"]["trigger"][1])}


def test_what_the_format_does_not_record_is_said() -> None:
    [record] = load_records(SAMPLE)
    said = " ".join(note.message for note in record.notes)
    assert "keep no time" in said
    assert "no token count" in said


def test_a_damaged_thread_is_an_error_naming_it(tmp_path: Path) -> None:
    cut = tmp_path / "thread.json"
    cut.write_bytes((SAMPLE / "thread.json").read_bytes()[:5000])
    with pytest.raises(MemoryFormatError, match="not JSON") as raised:
        load_records(tmp_path)
    assert str(cut) in str(raised.value)


def test_memorylab_report_reads_the_thread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.html"
    assert main(["report", str(SAMPLE), "-o", str(out)]) == 0
    assert out.stat().st_size > 0
    assert "wrote" in capsys.readouterr().out


@pytest.mark.skipif(not DEEPAGENTS_PYTHON, reason="set MEMORYLAB_DEEPAGENTS_PYTHON to a venv's "
                    "python with deepagents==0.7.32 to generate a thread here")  # fmt: skip
def test_a_thread_the_real_package_writes_now(tmp_path: Path) -> None:
    assert DEEPAGENTS_PYTHON is not None
    done = subprocess.run(
        [DEEPAGENTS_PYTHON, str(HERE / "generate.py"), str(tmp_path / "run"), "--turns", "24"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    run = tmp_path / "run"
    assert loader_for(run).name == "deepagents"
    [record] = load_records(run)
    _check(record, run)
