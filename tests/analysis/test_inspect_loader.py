"""inspect_ai's eval logs, as inspect-ai 0.3.285 writes them (data/foreign/inspect-ai/: a
real run, offline, with its mock model and its summary compaction), read through the registry:
one record per sample, its compactions as the log's CompactionEvents, each agent call's usage
as its ModelEvent's, and `memorylab report` on the file. With MEMORYLAB_INSPECT_AI_PYTHON naming
a venv's python where inspect-ai is installed, a run is generated here and read too."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from memorylab.analysis import AgentRecord, load_records, loader_for, memory_df, run_settings
from memorylab.cli import main
from memorylab.errors import MemoryFormatError, PrerequisiteError

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "foreign" / "inspect-ai"
JSON_LOG = SAMPLES / "checkout-bug-hunt.json"
EVAL_LOG = SAMPLES / "checkout-bug-hunt.eval"
INSPECT_PYTHON = os.environ.get("MEMORYLAB_INSPECT_AI_PYTHON")  # .ci/run sets it
ZSTD = sys.version_info >= (3, 14) or importlib.util.find_spec("zstandard") is not None
needs_zstd = pytest.mark.skipif(
    not ZSTD, reason="the .eval sample's members are zstd: Python 3.14, or pip install zstandard"
)


def _sample(log: Mapping[str, Any]) -> Mapping[str, Any]:
    samples = log["samples"]
    assert len(samples) == 1
    return samples[0]  # type: ignore[no-any-return]


def _expected(sample: Mapping[str, Any]) -> tuple[list[int], list[tuple[int, ...]]]:
    """What the log records, read here with json alone: each CompactionEvent's tokens before,
    and the usage of each ModelEvent whose reply is in the history (input as memorylab counts
    it: inspect_ai's input_tokens plus the cache reads and writes)."""
    history = {m["id"] for m in sample["messages"]}
    before: list[int] = [e["tokens_before"] for e in sample["events"] if e["event"] == "compaction"]
    usage: list[tuple[int, ...]] = []
    for event in sample["events"]:
        if event["event"] == "model" and event["output"]["choices"][0]["message"]["id"] in history:
            u = event["output"]["usage"]
            read, write = (
                u.get("input_tokens_cache_read") or 0,
                u.get("input_tokens_cache_write") or 0,
            )
            usage.append((u["input_tokens"] + read + write, u["output_tokens"], read, write))
    return before, usage


def _check(record: AgentRecord, sample: Mapping[str, Any]) -> None:
    before, usage = _expected(sample)
    assert record.format == "inspect-ai"
    assert len(record.compactions) == len(before) >= 2  # the sample compacts several times
    assert [c["tokens_before"] for c in record.compactions] == before
    assert all(c["tokens_after"] < c["tokens_before"] for c in record.compactions)
    calls = [(c.input_tokens, c.output_tokens, c.cached_tokens, c.cache_write_tokens)
             for c in record.calls]  # fmt: skip
    assert calls == usage
    assert sum(c.compacted for c in record.calls) == len(before)
    times = [c.time for c in record.calls]
    assert times == sorted(times) and all(t.tzinfo is not None for t in times)


def test_both_logs_are_chosen_by_what_they_are(tmp_path: Path) -> None:
    assert loader_for(JSON_LOG).name == "inspect-ai"
    assert loader_for(EVAL_LOG).name == "inspect-ai"
    other = tmp_path / "other.eval"  # a zip, but not inspect_ai's
    with zipfile.ZipFile(other, "w") as archive:
        archive.writestr("notes.txt", "hello")
    assert not _handled(other)
    plain = tmp_path / "plain.json"
    plain.write_text('{"version": 2, "messages": []}', encoding="utf-8")
    assert not _handled(plain)


def _handled(path: Path) -> bool:
    from memorylab.analysis import get_loader

    return get_loader("inspect-ai").handles(path)


def test_the_json_log_reads_as_one_record_per_sample() -> None:
    log = json.loads(JSON_LOG.read_text(encoding="utf-8"))
    [record] = load_records(JSON_LOG)
    assert record.agent == "checkout-bug-hunt/checkout-bug-hunt"
    _check(record, _sample(log))


def test_each_summary_is_the_compaction_record_of_its_event() -> None:
    [record] = load_records(JSON_LOG)
    log = json.loads(JSON_LOG.read_text(encoding="utf-8"))
    attachments = _sample(log)["attachments"]
    written = [m["content"] for m in _sample(log)["messages"]
               if "summary" in (m.get("metadata") or {})]  # fmt: skip
    written = [attachments[t.removeprefix("attachment://")] if t.startswith("attachment://")
               else t for t in written]  # fmt: skip
    assert len(written) == len(record.compactions)
    assert all(s.startswith("[CONTEXT COMPACTION SUMMARY]") for s in written)
    assert [c["summary_chars"] for c in record.compactions] == [len(s) for s in written]
    # each summary opens the segment after its boundary, as a MEMORY.md's compaction does
    firsts = [segment.document.messages[0].content for segment in record.segments[1:]]
    assert all(first.endswith(summary) for first, summary in zip(firsts, written, strict=True))


def test_messages_are_timed_by_their_events_and_keep_their_tool_calls() -> None:
    """Messages keep no time in a log: each takes its event's, so the frame's rows are in the
    sample's order and within its run; tool calls are shown in the assistant's row."""
    sample = _sample(json.loads(JSON_LOG.read_text(encoding="utf-8")))
    df = memory_df(JSON_LOG)
    history = [m for m in sample["messages"] if "summary" not in (m.get("metadata") or {})]
    rows = df[~df.is_summary]
    assert list(rows.role) == [m["role"] for m in history]
    times = list(rows.timestamp)
    assert times == sorted(times)
    start, end = (datetime.fromisoformat(sample[k]) for k in ("started_at", "completed_at"))
    assert start <= times[0] and times[-1] <= end
    calls = sum(len(m.get("tool_calls") or ()) for m in history)
    assert calls and rows.content.str.count(r"\[tool call run ").sum() == calls


def test_what_the_log_does_not_record_is_said_in_notes() -> None:
    [record] = load_records(JSON_LOG)
    said = " ".join(note.message for note in record.notes)
    assert "whose reply is not in the history" in said  # the summarizer's calls
    assert all(c["extra"]["recorded"] == ["summary", "tokens_before", "tokens_after", "trigger"]
               for c in record.compactions)  # fmt: skip


def test_the_recorded_threshold_is_the_runs() -> None:
    assert run_settings(memory_df(JSON_LOG)).threshold == 1500


@needs_zstd
def test_the_eval_log_reads_like_the_json_one() -> None:
    with zipfile.ZipFile(EVAL_LOG) as archive:
        [name] = [n for n in archive.namelist() if n.startswith("samples/")]
        sample = json.loads(_zstd_member(archive, name))
    [record] = load_records(EVAL_LOG)
    _check(record, sample)
    assert len(record.compactions) > len(load_records(JSON_LOG)[0].compactions)


def _zstd_member(archive: zipfile.ZipFile, name: str) -> bytes:
    """A zip member compressed with zstd (method 93), read apart from the loader: by zipfile
    on Python 3.14, else its raw bytes after the local header through zstandard."""
    info = archive.getinfo(name)
    if sys.version_info >= (3, 14) or info.compress_type != 93:
        return archive.read(name)
    import zstandard

    with open(str(archive.filename), "rb") as file:
        file.seek(info.header_offset + 26)
        skip = int.from_bytes(file.read(2), "little") + int.from_bytes(file.read(2), "little")
        file.seek(skip, os.SEEK_CUR)
        raw = file.read(info.compress_size)
    reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
    data: bytes = reader.read()
    return data


def test_a_zstd_log_without_zstandard_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if sys.version_info >= (3, 14):
        pytest.skip("Python 3.14 reads zstd zip members itself")
    monkeypatch.setitem(sys.modules, "zstandard", None)  # an import of it fails
    with pytest.raises(PrerequisiteError, match="pip install zstandard") as raised:
        load_records(EVAL_LOG)
    assert str(EVAL_LOG) in str(raised.value)


def test_a_damaged_log_is_an_error_naming_it(tmp_path: Path) -> None:
    cut = tmp_path / "cut.json"
    cut.write_bytes(JSON_LOG.read_bytes()[:5000])
    with pytest.raises(MemoryFormatError, match="not JSON") as raised:
        load_records(cut)
    assert str(cut) in str(raised.value)


@pytest.mark.parametrize("log", [JSON_LOG, pytest.param(EVAL_LOG, marks=needs_zstd)],
                         ids=["json", "eval"])  # fmt: skip
def test_memorylab_report_reads_the_log(
    log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.html"
    assert main(["report", str(log), "-o", str(out)]) == 0
    assert out.stat().st_size > 0
    assert "wrote" in capsys.readouterr().out


@pytest.mark.skipif(not INSPECT_PYTHON, reason="set MEMORYLAB_INSPECT_AI_PYTHON to a venv's "
                    "python with inspect-ai==0.3.285 to generate a log here")  # fmt: skip
@pytest.mark.parametrize("form", ["json", pytest.param("eval", marks=needs_zstd)])
def test_a_log_the_real_package_writes_now(form: str, tmp_path: Path) -> None:
    assert INSPECT_PYTHON is not None
    done = subprocess.run(
        [INSPECT_PYTHON, str(SAMPLES / "generate.py"), str(tmp_path / "logs"), "--turns", "12",
         "--format", form],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False,  # nothing in tests/
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    [log] = (tmp_path / "logs").glob(f"*.{form}")
    assert loader_for(log).name == "inspect-ai"
    [record] = load_records(log)
    if form == "json":
        _check(record, _sample(json.loads(log.read_text(encoding="utf-8"))))
    else:
        assert len(record.compactions) >= 2
        assert record.calls and all(c.input_tokens for c in record.calls)
