"""Claude Code session files read through the registry (issue 40): a public sample
(simonw/claude-code-transcripts' test fixture, Apache-2.0) and a session written to the
documented format with compactions (data/foreign/claude-code/README.md says which is which)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from memorylab.analysis import (
    compactions_df,
    load_records,
    loader_for,
    memory_df,
    token_growth,
)
from memorylab.errors import StoreError

SAMPLES = Path(__file__).parents[2] / "data" / "foreign" / "claude-code"
PUBLIC = SAMPLES / "simonw-sample_session.jsonl"
COMPACTED = SAMPLES / "compacted-session.jsonl"


def _boundaries(path: Path) -> list[dict[str, object]]:
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [line for line in lines if line.get("subtype") == "compact_boundary"]


def test_the_registry_reads_a_session_and_a_project_folder() -> None:
    assert loader_for(PUBLIC).name == "claude-code"
    assert loader_for(COMPACTED).name == "claude-code"
    assert loader_for(SAMPLES).name == "claude-code"
    records = load_records(SAMPLES)  # a project folder: one record per session
    assert sorted(r.agent for r in records) == sorted(
        ["test-session-id", "5f0c3a1e-8d2b-4c6f-9a7e-2b1d4e6f8a90"]
    )


def test_a_transcript_is_not_a_session() -> None:
    transcripts = Path(__file__).parents[2] / "data" / "transcripts"
    first = sorted(transcripts.glob("*.jsonl"))[0]
    assert loader_for(first).name == "transcript"


def test_the_public_sample_reads_messages_tool_calls_and_results() -> None:
    frame = memory_df(PUBLIC)
    assert frame["role"].tolist() == [
        "user", "assistant", "tool", "assistant", "tool", "user", "assistant",
    ]  # fmt: skip
    assert '[tool call Write {"content": ' in frame["content"].iloc[1]
    assert frame["content"].iloc[2] == "File written successfully"
    assert frame["timestamp"].is_monotonic_increasing
    assert len(compactions_df(PUBLIC)) == 0
    (record,) = load_records(PUBLIC)
    assert any(n.kind == "order" for n in record.notes)  # no parentUuid: file order, said


def test_compactions_match_the_files_boundaries() -> None:
    boundaries = _boundaries(COMPACTED)
    frame = compactions_df(COMPACTED)
    assert len(frame) == len(boundaries) == 2
    pre = [b["compactMetadata"]["preTokens"] for b in boundaries]  # type: ignore[index]
    assert frame["tokens_before"].tolist() == pre
    assert frame["tokens_after"].iloc[0] == 18_220  # postTokens where recorded
    assert pd.isna(frame["tokens_after"].iloc[1])  # else missing, never guessed
    messages = memory_df(COMPACTED)
    summaries = messages[messages["is_summary"]]
    assert len(summaries) == 2
    assert "parts 0-5 done" in summaries["content"].iloc[0]
    (record,) = load_records(COMPACTED)
    assert [c["extra"]["fired_by"] for c in record.compactions] == ["auto", "manual"]


def test_the_chain_leaves_out_the_retried_branch_and_thinking() -> None:
    frame = memory_df(COMPACTED)
    assert not frame["content"].str.contains("Banker's rounding").any()
    assert frame["content"].str.contains("Half-up rounding").any()
    assert not frame["content"].str.contains("Plan for part").any()
    (record,) = load_records(COMPACTED)
    kinds = {n.kind for n in record.notes}
    assert {"branches", "not-recorded"} <= kinds


def test_usage_per_reply_with_cache_tokens() -> None:
    (record,) = load_records(COMPACTED)
    assert len(record.calls) == 17  # replies on the chain, each once (split lines merged)
    call = record.calls[0]
    assert call.model == "claude-sonnet-4-5-20250929"
    assert call.input_tokens == 14_000  # input + cache read + cache write: the whole context
    assert call.cached_tokens == 12_594
    assert call.cache_write_tokens == 1_400
    assert call.output_tokens == 120


def test_token_growth_holds_the_recorded_compactions() -> None:
    growth = token_growth(memory_df(COMPACTED), context_length=200_000)
    peaks = growth[growth["compaction"]]
    assert peaks["recorded_tokens"].tolist() == [160_512, 31_800]


def test_report_reads_a_session(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    done = subprocess.run(
        [sys.executable, "-m", "memorylab", "report", str(COMPACTED), "-o", str(out)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert "160,512" in text and "31,800" in text


def test_the_committed_sample_is_what_its_writer_writes(tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(SAMPLES / "write_sample.py"), str(tmp_path)], check=True)
    assert (tmp_path / "compacted-session.jsonl").read_bytes() == COMPACTED.read_bytes()


def test_a_cut_last_line_is_a_note_and_a_missing_file_an_error(tmp_path: Path) -> None:
    cut = tmp_path / "cut.jsonl"
    shutil.copy(COMPACTED, cut)
    with cut.open("a") as file:
        file.write('{"type":"user","sessionId":"x","message":{"role":"us')
    (record,) = load_records(cut)
    assert any(n.kind == "json" and n.damaged for n in record.notes)
    from memorylab.analysis import get_loader

    with pytest.raises(StoreError, match="cannot read the Claude Code session"):
        get_loader("claude-code").load(tmp_path / "missing.jsonl")


def test_a_frame_of_a_changed_session_is_read_again(tmp_path: Path) -> None:
    session = tmp_path / "session.jsonl"
    shutil.copy(COMPACTED, session)
    frame = memory_df(session)
    with session.open("a") as file:  # the session goes on: its record is stale
        file.write('{"type":"queue-operation","operation":"enqueue","sessionId":"x"}\n')
    growth = token_growth(frame, context_length=200_000)  # its file read again by its loader
    assert growth[growth["compaction"]]["recorded_tokens"].tolist() == [160_512, 31_800]


PROJECT = SAMPLES / "subagents-project"
PROJECT_SESSION = PROJECT / "7d2e9b40-1c3a-4f5e-8b6d-0a9c8e7f6d51.jsonl"
SESSION_ID = "7d2e9b40-1c3a-4f5e-8b6d-0a9c8e7f6d51"


def test_the_committed_project_is_what_its_writer_writes(tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(SAMPLES / "write_sample.py"), str(tmp_path)], check=True)
    written = sorted(p.relative_to(tmp_path / PROJECT.name) for p in
                     (tmp_path / PROJECT.name).rglob("*") if p.is_file())  # fmt: skip
    assert written == sorted(p.relative_to(PROJECT) for p in PROJECT.rglob("*") if p.is_file())
    for name in written:
        assert (tmp_path / PROJECT.name / name).read_bytes() == (PROJECT / name).read_bytes()


def test_messages_a_compaction_preserved_are_its_kept_and_the_timeline_goes_on() -> None:
    """The session's messages after each compaction chain from the last kept message (before
    the boundary in the file): the compactions are found, each keeps its last two messages,
    and the messages after it follow its summary."""
    (record, *_) = load_records(PROJECT_SESSION)
    assert [(c["tokens_before"], c["extra"]["kept"]) for c in record.compactions] == [
        (170_045, 2), (165_045, 2),
    ]  # fmt: skip
    frame = memory_df(PROJECT_SESSION)
    own = frame[frame["agent"] == SESSION_ID]
    assert own["content"].tolist()[8:12] == [
        "Profile /orders, step 2.",
        "Step 2: the N+1 query is in totals.",
        own["content"].iloc[10],  # the summary, opening the next segment
        "Fix /orders, step 0.",
    ]
    assert own["is_summary"].tolist().count(True) == 2
    assert own["content"].iloc[10].endswith("Profiling /orders: an N+1 query in totals.")
    assert own["content"].tolist().count("Step 2: the N+1 query is in totals.") == 1
    assert own["timestamp"].is_monotonic_increasing
    # both forms of the kept messages: preservedSegment, then preservedMessages.uuids
    metas = [b["compactMetadata"] for b in _boundaries(PROJECT_SESSION)]
    assert "preservedSegment" in metas[0] and "preservedMessages" in metas[1]
    assert not any(n.kind == "branches" for n in record.notes)  # nothing left off the chain


def test_subagents_are_records_of_their_own_named_after_their_session() -> None:
    subagents = {
        f"{SESSION_ID}/agent-a7f3e2",  # <session>/subagents/agent-a7f3e2.jsonl (newer)
        f"{SESSION_ID}/agent-b2c4d6",  # agent-b2c4d6.jsonl beside the session (older)
        f"{SESSION_ID}/sidechain-00000000-0000-4000-8002-000000000001",  # in the session's file
    }
    for source in (PROJECT, PROJECT_SESSION):
        records = load_records(source)
        assert records[0].agent == SESSION_ID
        assert {r.agent for r in records[1:]} == subagents
        assert len(records) == 4  # the project's agent-b2c4d6.jsonl is read once
    main, *others = load_records(PROJECT_SESSION)
    said = " ".join(n.message for n in main.notes)
    assert "agent-a7f3e2 (Explore: Map endpoints) read as" in said  # its .meta.json
    assert "agent-b2c4d6 read as" in said and "sidechain entries read as" in said
    for record in others:
        assert [m for m in memory_df(record)["role"]] == ["user", "assistant"]
        assert len(record.calls) == 1
    # the session's own conversation holds none of the subagents' messages
    assert "Check the cart's cache headers." not in memory_df(main)["content"].tolist()
    (alone,) = load_records(PROJECT / SESSION_ID / "subagents" / "agent-a7f3e2.jsonl")
    assert alone.agent == f"{SESSION_ID}/agent-a7f3e2"


def test_a_subagent_file_that_cannot_be_read_is_said_not_dropped(tmp_path: Path) -> None:
    copy = tmp_path / "project"
    shutil.copytree(PROJECT, copy)
    (copy / SESSION_ID / "subagents" / "agent-a7f3e2.jsonl").write_text("\n")
    records = load_records(copy / PROJECT_SESSION.name)
    assert f"{SESSION_ID}/agent-a7f3e2" not in {r.agent for r in records}
    notes = [n.message for n in records[0].notes if "agent-a7f3e2" in n.message]
    assert len(notes) == 1 and "not read" in notes[0], notes
