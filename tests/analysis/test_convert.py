"""Conversion both ways (docs/converting.md): another framework's run written as a memorylab
workspace (``to_workspace``: read back as the run reads), and memorylab's transcripts written in
the others' input formats (``export_transcripts``: read back by our loader, and by the real
packages where their venvs are set: MEMORYLAB_OPENAI_AGENTS_PYTHON, MEMORYLAB_INSPECT_AI_PYTHON,
MEMORYLAB_DEEPAGENTS_PYTHON, which .ci/run sets)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from memorylab.analysis import (
    EXPORT_FORMATS,
    calibration_df,
    compaction_costs_df,
    compactions_df,
    export_transcripts,
    load_records,
    memory_df,
    to_workspace,
)
from memorylab.errors import InvalidSetting, StoreError
from memorylab.memory import MemoryStore
from memorylab.transcripts import (
    bundled_data_dir,
    bundled_foreign_runs,
    bundled_transcripts,
    load_transcript,
)

FOREIGN = bundled_data_dir() / "foreign"  # the runs other frameworks wrote (data/foreign/)
SAMPLES = {
    "claude-code": FOREIGN / "claude-code" / "compacted-session.jsonl",
    "claude-code-public": FOREIGN / "claude-code" / "simonw-sample_session.jsonl",
    "deepagents": FOREIGN / "deepagents" / "sample",
    "inspect-ai-eval": FOREIGN / "inspect-ai" / "checkout-bug-hunt.eval",
    "inspect-ai-json": FOREIGN / "inspect-ai" / "checkout-bug-hunt.json",
    "openai-agents": FOREIGN / "openai-agents" / "sessions.sqlite",
}
COMPARED = ["agent", "segment", "kind", "role", "content", "timestamp", "is_summary"]
# This session repeats a user message within one second, after a compaction that kept its first
# copy: the reader's rule 6 counts copies, so the workspace reads both (it read one, as a set).
SAME_SECOND_REPEAT = "pipeline-migration"


def _frame(source: object) -> pd.DataFrame:
    df = memory_df(source)
    df = df[COMPARED].astype(
        {"agent": str, "kind": str, "role": str}
    )  # a workspace lists its agents by name
    return df.sort_values("agent", kind="stable").reset_index(drop=True)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_a_foreign_run_as_a_workspace_reads_as_the_run(name: str, tmp_path: Path) -> None:
    source = SAMPLES[name]
    result = to_workspace(source, tmp_path / "ws")
    workspace = tmp_path / "ws"
    records = load_records(source)
    assert [a.agent for a in result.agents] == [r.agent for r in records]
    pd.testing.assert_frame_equal(_frame(workspace), _frame(source))
    for agent, record in zip(result.agents, records, strict=True):
        # one archive per recorded compaction, named by its recorded time
        archives = sorted(p.name for p in (agent.memory_md.parent / "archive").glob("*.md"))
        assert len(archives) == len(record.compactions) == len(agent.archives)
        assert sorted(agent.archives) == archives


def test_a_same_second_repeat_after_a_kept_copy_is_read(tmp_path: Path) -> None:
    """A message repeated in one second after a compaction kept its first copy is written and
    read back: rule 6 counts the copies rather than hiding every equal message."""
    to_workspace(SAMPLES["openai-agents"], tmp_path / "ws")
    run = _frame(SAMPLES["openai-agents"])
    run = run[run["agent"] == SAME_SECOND_REPEAT]
    text = (tmp_path / "ws" / "agents" / SAME_SECOND_REPEAT / "MEMORY.md").read_text()
    last = run["content"].iloc[-5:]
    assert all(content in text for content in last)
    read = _frame(tmp_path / "ws")
    assert len(read[read["agent"] == SAME_SECOND_REPEAT]) == len(run)


@pytest.mark.parametrize("name", ["claude-code", "deepagents", "inspect-ai-eval"])
def test_the_recorded_compactions_are_the_workspaces(name: str, tmp_path: Path) -> None:
    source = SAMPLES[name]
    to_workspace(source, tmp_path / "ws")
    run, written = compactions_df(source), compactions_df(tmp_path / "ws")
    assert len(written) == len(run) > 0
    for column in ("tokens_before", "tokens_after", "threshold", "context_length"):
        if column in run:
            pd.testing.assert_series_equal(
                written[column].reset_index(drop=True), run[column].reset_index(drop=True)
            )
    # what the format recorded, and where it came from, is in compactions.jsonl
    folder = next((tmp_path / "ws" / "agents").rglob("compactions.jsonl"))
    lines = [json.loads(line) for line in folder.read_text().splitlines()]
    assert all(line["extra"]["converted_from"] == str(source) for line in lines)
    assert all("recorded" in line["extra"] for line in lines)
    # timestamps preserved: each archive is named by its compaction's recorded time
    times = [pd.Timestamp(r["time"]) for r in load_records(source)[0].compactions]
    assert [pd.Timestamp(line["time"]) for line in lines] == times


def test_an_existing_agent_is_never_written_over(tmp_path: Path) -> None:
    source = SAMPLES["claude-code"]
    first = to_workspace(source, tmp_path / "ws")
    memory = first.agents[0].memory_md
    before = memory.read_bytes()
    with pytest.raises(InvalidSetting, match=r"exists already.*never writes over one"):
        to_workspace(source, tmp_path / "ws")
    assert memory.read_bytes() == before
    renamed = to_workspace(source, tmp_path / "ws", agent="second-look")
    assert renamed.agents[0].agent == "second-look"
    assert sorted(set(memory_df(tmp_path / "ws")["agent"])) == sorted(
        [first.agents[0].agent, "second-look"]
    )


def test_a_new_name_is_for_a_source_of_one_run(tmp_path: Path) -> None:
    with pytest.raises(InvalidSetting, match="holds 4 runs"):
        to_workspace(SAMPLES["openai-agents"], tmp_path / "ws", agent="one")
    assert not (tmp_path / "ws").exists()


def test_memorylabs_own_files_are_copied_not_converted(tmp_path: Path) -> None:
    to_workspace(SAMPLES["claude-code"], tmp_path / "ws")
    with pytest.raises(InvalidSetting, match="memorylab's own files"):
        to_workspace(tmp_path / "ws", tmp_path / "other")


def test_what_the_format_does_not_record_is_said(tmp_path: Path) -> None:
    result = to_workspace(SAMPLES["claude-code"], tmp_path / "ws")
    assert any("context_length and threshold: not recorded" in note for note in result.notes)


# ------------------------------------------------------------------------------------ exports


def _transcript_messages(path: Path) -> list[tuple[str, str, pd.Timestamp]]:
    return [(m.role, m.content, pd.Timestamp(m.timestamp)) for m in load_transcript(path).messages]


def test_a_claude_code_export_reads_back_message_for_message(tmp_path: Path) -> None:
    transcripts = bundled_transcripts()
    written = export_transcripts(transcripts, tmp_path / "project", to="claude-code")
    assert len(written) == len(transcripts)
    for transcript, session in zip(transcripts, written, strict=True):
        df = memory_df(session)
        read = list(zip(df["role"], df["content"], df["timestamp"], strict=True))
        assert read == _transcript_messages(transcript)
    # a project folder of them reads as one record per session
    assert len(load_records(tmp_path / "project")) == len(transcripts)


def test_an_openai_agents_export_reads_back_through_our_loader(tmp_path: Path) -> None:
    transcripts = bundled_transcripts()
    (path,) = export_transcripts(transcripts, tmp_path / "s.sqlite", to="openai-agents")
    records = {r.agent: r for r in load_records(path)}
    for transcript in transcripts:
        name = load_transcript(transcript).name
        df = memory_df(records[name])
        expected = _transcript_messages(transcript)
        assert list(df["role"]) == [role for role, _, _ in expected]
        assert list(df["content"]) == [content for _, content, _ in expected]
        assert list(df["timestamp"]) == [when.floor("s") for _, _, when in expected]


def test_an_export_never_replaces_a_file_unasked(tmp_path: Path) -> None:
    transcript = bundled_transcripts()[0]
    target = tmp_path / "d.jsonl"
    target.write_text("mine\n")
    with pytest.raises(InvalidSetting, match="exists"):
        export_transcripts(transcript, target, to="inspect-ai")
    assert target.read_text() == "mine\n"
    export_transcripts(transcript, target, to="inspect-ai", overwrite=True)
    assert json.loads(target.read_text().splitlines()[0])["id"] == "checkout-bug-hunt"


def test_a_role_a_format_cannot_hold_is_refused_not_dropped(tmp_path: Path) -> None:
    source = tmp_path / "t.jsonl"
    lines = [
        {"type": "meta", "name": "with-system", "seed": 1, "description": "d", "sessions": 1},
        {"type": "message", "session": 1, "role": "system", "content": "Be brief.",
         "timestamp": "2026-01-01T00:00:00+00:00"},
        {"type": "message", "session": 1, "role": "user", "content": "Hi",
         "timestamp": "2026-01-01T00:00:01+00:00"},
    ]  # fmt: skip
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(InvalidSetting, match=r"role 'system'.*Claude Code"):
        export_transcripts(source, tmp_path / "cc", to="claude-code")
    assert not (tmp_path / "cc").exists()
    with pytest.raises(InvalidSetting, match="no export format"):
        export_transcripts(source, tmp_path / "x", to="swarms")


# ------------------------------------------------------------------- the real packages read them

_CHECKS = {
    "openai-agents": (
        "MEMORYLAB_OPENAI_AGENTS_PYTHON",
        "s.sqlite",
        """
import asyncio, json, sys
from agents import SQLiteSession
items = asyncio.run(SQLiteSession(sys.argv[2], sys.argv[1]).get_items())
def text(item):
    if item.get("type") == "function_call_output":
        return "tool", item["output"]
    content = item["content"]
    return item["role"], content if isinstance(content, str) else content[0]["text"]
print(json.dumps([text(item) for item in items]))
""",
    ),
    "inspect-ai": (
        "MEMORYLAB_INSPECT_AI_PYTHON",
        "d.jsonl",
        """
import json, sys
from inspect_ai.dataset import json_dataset
sample = next(s for s in json_dataset(sys.argv[1]) if s.id == sys.argv[2])
print(json.dumps([(m.role, m.text) for m in sample.input]))
""",
    ),
    "langchain": (
        "MEMORYLAB_DEEPAGENTS_PYTHON",
        "lc",
        """
import json, sys
from langchain_core.messages import messages_from_dict
data = json.load(open(f"{sys.argv[1]}/{sys.argv[2]}.langchain.json"))
roles = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}
print(json.dumps([(roles[m.type], m.content) for m in messages_from_dict(data)]))
""",
    ),
}


@pytest.mark.parametrize("format", sorted(_CHECKS))
def test_the_real_package_reads_the_export(format: str, tmp_path: Path) -> None:
    variable, output, script = _CHECKS[format]
    python = os.environ.get(variable)
    if not python:
        pytest.skip(f"set {variable} to a python with the package installed (.ci/run does)")
    transcript = bundled_transcripts()[0]
    export_transcripts(transcript, tmp_path / output, to=format)
    name = load_transcript(transcript).name
    run = subprocess.run(
        [python, "-c", script, str(tmp_path / output), name],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    read = [tuple(pair) for pair in json.loads(run.stdout)]
    assert read == [(role, content) for role, content, _ in _transcript_messages(transcript)]


def test_every_export_format_is_tested() -> None:
    assert set(EXPORT_FORMATS) == {"claude-code", *_CHECKS}


@pytest.mark.parametrize("name", sorted(bundled_foreign_runs()))
def test_the_report_and_the_widgets_read_a_converted_workspace(name: str, tmp_path: Path) -> None:
    from memorylab.cli import main
    from memorylab.widgets import MemoryExplorer

    result = to_workspace(bundled_foreign_runs()[name], tmp_path / "ws")
    assert main(["report", str(tmp_path / "ws"), "-o", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text()
    assert all(agent.agent in page for agent in result.agents)
    explorer = MemoryExplorer(tmp_path / "ws")
    assert explorer.source == tmp_path / "ws"


def test_a_failed_conversion_leaves_no_half_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure while the third run of a source is written (a disk that fills) removes the
    agents that conversion wrote, so that running it again once the cause is fixed works."""
    original = MemoryStore.append

    def append(store: MemoryStore, text: str) -> None:
        if "checkout-bug-hunt" in str(store.path):
            raise StoreError(f"cannot append to {store.path}: No space left on device")
        original(store, text)

    monkeypatch.setattr(MemoryStore, "append", append)
    with pytest.raises(StoreError, match="No space left"):
        to_workspace(SAMPLES["openai-agents"], tmp_path / "ws")
    assert not list((tmp_path / "ws" / "agents").iterdir())
    monkeypatch.setattr(MemoryStore, "append", original)
    assert len(to_workspace(SAMPLES["openai-agents"], tmp_path / "ws").agents) == 4


@pytest.mark.parametrize("name", ["claude-code", "deepagents", "inspect-ai"])
def test_the_audits_read_the_workspace_as_the_run(name: str, tmp_path: Path) -> None:
    """The model calls' usage (usage.jsonl) and the compactions carry over: the calibration and
    cost audits' figures are the run's."""
    source = bundled_foreign_runs()[name]
    to_workspace(source, tmp_path / "ws")
    for frame_of in (calibration_df, compaction_costs_df):
        run, written = frame_of(source), frame_of(tmp_path / "ws")
        assert len(run) == len(written) > 0
        numbers = [c for c in run.columns if pd.api.types.is_numeric_dtype(run[c])]
        pd.testing.assert_frame_equal(
            written[numbers].reset_index(drop=True), run[numbers].reset_index(drop=True)
        )
