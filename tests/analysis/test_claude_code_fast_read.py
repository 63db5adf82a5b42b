"""Claude Code sessions read fast (issue 40): msgspec decodes only the fields the loader reads,
the complete lines in one call, a file that call refuses line by line. What the record holds
must not change with the speed: every message in order (unicode as written), the compactions,
the calls, a torn last line a note and a blank line nothing, the two readings alike, and the
peak memory a small multiple of the file (it was 5x: every line's dict kept whole)."""

from __future__ import annotations

import gc
import importlib.util
import json
import sys
import tracemalloc
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from memorylab.analysis import AgentRecord, compactions_df, get_loader, load_records, memory_df
from memorylab.errors import MemoryFormatError


def _bench() -> ModuleType:
    """The benchmark's session writer (tests/benchmarks is no package)."""
    path = Path(__file__).parents[1] / "benchmarks" / "bench_foreign_read.py"
    spec = importlib.util.spec_from_file_location("bench_foreign_read", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("bench_foreign_read", module)
    spec.loader.exec_module(module)
    return module


BENCH = _bench()


def _columns(record: AgentRecord) -> list[object]:
    return [
        (str(s.path), s.kind, s.parsed.blocks.roles, s.parsed.blocks.contents,
         s.parsed.blocks.timestamps, sorted(s.repeated))
        for s in record.segments
    ]  # fmt: skip


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    path = tmp_path_factory.mktemp("claude") / "session.jsonl"
    written = BENCH.write_session(
        path, 1_500_000, compact_every=12, blank_line=True, torn_line=True
    )
    return path, written


def test_every_message_compaction_and_call_is_read(session: tuple[Path, Any]) -> None:
    path, written = session
    frame = memory_df(path, on_bad="skip")  # the torn last line: said below, as a note
    messages = frame[~frame["is_summary"]]
    turns = len(written.prompts)
    assert messages["role"].tolist() == ["user", "assistant", "tool", "assistant"] * turns
    assert messages["content"].iloc[0::4].tolist() == written.prompts
    assert messages["content"].iloc[2::4].tolist() == written.results
    assert messages["content"].iloc[3::4].tolist() == written.replies
    calls = messages["content"].iloc[1::4].tolist()
    for content, file in zip(calls, written.tool_files, strict=True):
        assert content.endswith(f'[tool call Read {{"file_path": "{file}"}}]')
    assert any(not text.isascii() for text in written.prompts)
    summaries = frame.loc[frame["is_summary"], "content"].tolist()
    assert len(summaries) == len(written.summaries) > 2
    for summary, text in zip(summaries, written.summaries, strict=True):
        assert summary.endswith(text)
    assert compactions_df(path)["tokens_before"].tolist() == written.pre_tokens
    (record,) = load_records(path)
    assert len(record.calls) == written.calls
    assert {c.cache_write_tokens for c in record.calls} == {900}
    damaged = [n for n in record.notes if n.damaged]
    assert [(n.line, n.kind) for n in damaged] == [(written.lines, "json")]
    assert any(f"{written.thinking} thinking blocks" in n.message for n in record.notes)


def test_a_file_read_line_by_line_reads_as_in_one_call(
    session: tuple[Path, Any], tmp_path: Path
) -> None:
    """A line no JSON reader takes in the middle of the file: the one call refuses the file,
    which is then read line by line; the record is the same but for that line's note."""
    path, _ = session
    lines = path.read_bytes().split(b"\n")
    middle = len(lines) // 2
    damaged = tmp_path / path.name  # the same name: the records name their segments
    damaged.write_bytes(b"\n".join([*lines[:middle], b"{not json", *lines[middle:]]))
    (fast,) = load_records(path)
    (slow,) = load_records(damaged)
    assert _columns(slow) == [
        (c[0].replace(str(path), str(damaged)), *c[1:]) for c in _columns(fast)
    ]
    assert [c.to_dict() for c in slow.calls] == [c.to_dict() for c in fast.calls]
    assert slow.records == fast.records
    json_notes = [(n.line, n.damaged) for n in slow.notes if n.kind == "json"]
    assert json_notes == [(middle + 1, True), (len(lines) + 1, True)]


def test_lines_of_another_structure_read_as_before(tmp_path: Path) -> None:
    """Lines msgspec's types refuse (a content that is an object, a list holding a string, a
    message that is a number, NaN) are read by the standard library, as every line once was."""
    base = {"sessionId": "s", "isSidechain": False}
    lines = [
        {**base, "type": "user", "uuid": "1", "parentUuid": None,
         "timestamp": "2026-03-02T09:00:00Z", "message": {"role": "user", "content": {"a": 1}}},
        {**base, "type": "assistant", "uuid": "2", "parentUuid": "1",
         "timestamp": "2026-03-02T09:00:05Z",
         "message": {"id": "m1", "model": "claude-x", "content": ["plain", {"type": "text",
                     "text": "héllo ✅"}], "usage": {"input_tokens": 3, "output_tokens": float("nan")}}},
        {**base, "type": "user", "uuid": "3", "parentUuid": "2",
         "timestamp": "2026-03-02T09:00:09Z", "message": 5},
        {**base, "type": "assistant", "uuid": "4", "parentUuid": "3",
         "timestamp": "2026-03-02T09:00:12Z",
         "message": {"id": "m2", "model": "claude-x", "content": [{"type": "image"}, {"text": 7}]}},
    ]  # fmt: skip
    path = tmp_path / "odd.jsonl"
    path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
    frame = memory_df(path)
    assert frame["content"].tolist() == ['{"a": 1}', "plain\nhéllo ✅", "", ""]
    (record,) = load_records(path)
    (call,) = record.calls
    assert (call.input_tokens, call.output_tokens) == (3, None)  # NaN is no count
    assert not [n for n in record.notes if n.damaged]


def test_peak_memory_is_a_small_multiple_of_the_file(session: tuple[Path, Any]) -> None:
    """Reading keeps only what the record needs: the peak (the file's bytes, then its decoded
    fields, then the record) stays under 3x the file (every line's dict kept whole made 5x)."""
    path, _ = session
    load_records(path)  # imports and caches warmed outside the measure
    tracemalloc.start()
    try:
        load_records(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 3 * path.stat().st_size


def test_the_garbage_collector_is_left_as_it_was(session: tuple[Path, Any], tmp_path: Path) -> None:
    """The collector is paused while a session is read (no cycle is made), then as it was:
    running after a read and after a refused file, still off for a caller who turned it off."""
    path, _ = session
    assert gc.isenabled()
    load_records(path)
    assert gc.isenabled()
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"type":"summary","summary":"no messages","leafUuid":"x"}\n')
    with pytest.raises(MemoryFormatError):
        get_loader("claude-code").load(empty)
    assert gc.isenabled()
    gc.disable()
    try:
        load_records(path)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_kept_messages_and_subagents_read_alike_line_by_line(tmp_path: Path) -> None:
    """The fields of what a compaction kept and of a subagent (``compactMetadata``'s
    ``preservedSegment``, ``isSidechain``, ``agentId``) are read on both paths: a line no JSON
    reader takes makes the session read line by line, with the same records."""
    import shutil

    project = Path(__file__).parents[2] / "data" / "foreign" / "claude-code" / "subagents-project"
    copy = tmp_path / "project"
    shutil.copytree(project, copy)
    session = next(copy.glob("7d2e*.jsonl"))
    lines = session.read_bytes().split(b"\n")
    fast = load_records(session)
    session.write_bytes(b"\n".join([*lines[:5], b"{not json", *lines[5:]]))
    # and a subagent's line msgspec's types refuse (a content list of a bare text), read by
    # the standard library: still a sidechain, its text the same
    older = copy / "agent-b2c4d6.jsonl"
    text = older.read_text(encoding="utf-8")
    assert '"content":"Read the totals query."' in text
    older.write_text(
        text.replace('"content":"Read the totals query."', '"content":["Read the totals query."]'),
        encoding="utf-8",
    )
    slow = load_records(session)
    assert [r.agent for r in slow] == [r.agent for r in fast] and len(fast) == 4
    assert [r.records for r in slow] == [r.records for r in fast]
    assert [c["extra"]["kept"] for c in slow[0].records] == [2, 2]
    assert [_columns(r) for r in slow] == [_columns(r) for r in fast]
