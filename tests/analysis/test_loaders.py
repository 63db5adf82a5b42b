"""Loaders: each format is chosen by what a path is (not by its extension), a path no loader
reads gets an error that lists the formats, and a loader registered by a user is read by
memory_df like a built-in one."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from memorylab import Conversation
from memorylab.analysis import (
    AgentRecord,
    get_loader,
    load_records,
    loader_for,
    loader_names,
    memory_df,
    memory_df_with_problems,
    messages_record,
    register_loader,
    run_settings,
)
from memorylab.errors import InvalidSetting, MemoryReadWarning
from memorylab.transcripts import bundled_transcripts, bundled_workspace

BUILT_IN = ["memorylab", "reference-save", "transcript"]


@pytest.fixture
def registry() -> Iterator[None]:
    """The registry as it was before the test (a loader registered by a test is dropped)."""
    from memorylab.analysis import _loaders

    before = dict(_loaders._LOADERS)
    yield
    _loaders._LOADERS.clear()
    _loaders._LOADERS.update(before)


def _saved(tmp_path: Path, method: str) -> Path:
    """A conversation saved by the reference framework's method (``save_as_<method>``)."""
    conversation = Conversation(agent_name="alpha", workspace_dir=tmp_path / "ws")
    conversation.add("user", "the deploy key is in vault/prod")
    conversation.add("assistant", "noted")
    path = tmp_path / f"conversation_alpha.{method}"
    getattr(conversation, f"save_as_{method}")(path)
    return path


def test_the_built_in_formats_are_one_table() -> None:
    assert loader_names()[:3] == BUILT_IN
    assert [get_loader(name).name for name in BUILT_IN] == BUILT_IN


def test_each_format_is_chosen_by_what_the_path_is(tmp_path: Path) -> None:
    workspace = bundled_workspace()
    agent = workspace / "agents" / "BugHunter"
    for folder in (workspace, workspace / "agents", agent):
        assert loader_for(folder).name == "memorylab", folder
    # renamed to misleading extensions: chosen by their first bytes all the same
    memory = shutil.copy(agent / "MEMORY.md", tmp_path / "memory.txt")
    transcript = shutil.copy(bundled_transcripts()[0], tmp_path / "transcript.json")
    as_json = _saved(tmp_path, "json").rename(tmp_path / "chat.log")
    as_yaml = _saved(tmp_path, "yaml").rename(tmp_path / "chat.txt")
    whole = tmp_path / "reference.dat"  # the reference's object around its history
    history = json.loads(as_json.read_text())
    whole.write_text(json.dumps({"id": "c1", "name": "alpha", "conversation_history": history}))
    chosen = {p.name: loader_for(p).name for p in (memory, transcript, as_json, as_yaml, whole)}
    assert chosen == {
        "memory.txt": "memorylab",
        "transcript.json": "transcript",
        "chat.log": "reference-save",
        "chat.txt": "reference-save",
        "reference.dat": "reference-save",
    }


def test_a_path_no_loader_reads_says_what_to_do(tmp_path: Path) -> None:
    notes = tmp_path / "notes.json"
    notes.write_text('{"todo": ["buy milk"]}')
    with pytest.raises(InvalidSetting) as caught:
        memory_df(notes)
    message = str(caught.value)
    assert "none of the formats registered (memorylab, reference-save, transcript" in message
    assert "register_loader" in message and str(notes) in message
    # benchmarks hold messages with roles too, under their questions: not a run's record
    locomo = tmp_path / "locomo.json"
    locomo.write_text(json.dumps([{"qa": [], "conversation": {"session_1": [
        {"speaker": "A", "text": "hi", "role": "user"}]}}]))  # fmt: skip
    longmemeval = tmp_path / "longmemeval.json"
    longmemeval.write_text(json.dumps([{"question_id": "q", "haystack_sessions": [[
        {"role": "user", "content": "hi"}]]}]))  # fmt: skip
    for benchmark in (locomo, longmemeval):
        with pytest.raises(InvalidSetting, match="none of the formats registered"):
            loader_for(benchmark)


def test_memory_df_reads_a_save_file_and_a_transcript(tmp_path: Path) -> None:
    saved = _saved(tmp_path, "yaml").rename(tmp_path / "conversation_alpha.backup")
    frame = memory_df(saved)
    assert frame["content"].tolist() == ["the deploy key is in vault/prod", "noted"]
    assert frame["agent"].unique().tolist() == ["alpha"]  # its default name, conversation_<name>
    assert frame["file"].unique().tolist() == [str(saved)]
    transcript = load_records(bundled_transcripts()[0])
    assert [r.format for r in transcript] == ["transcript"] and not transcript[0].compactions
    assert len(memory_df(transcript)) == len(transcript[0].segments[0].blocks())


def test_a_frame_of_a_save_file_finds_its_record_by_its_loader(tmp_path: Path) -> None:
    """A frame's record is read again by the loader of its file (it was read as memorylab
    files, which named the agent after the folder)."""
    saved = _saved(tmp_path, "json")
    assert run_settings(memory_df(saved)).agent == run_settings(saved).agent == "alpha"


def test_a_message_without_a_time_is_left_out_and_said(tmp_path: Path) -> None:
    saved = tmp_path / "saved.json"
    saved.write_text(json.dumps([{"role": "user", "content": "no time", "timestamp": ""},
                                 {"role": "user", "content": "timed",
                                  "timestamp": "2026-05-01T10:00:00+00:00"}]))  # fmt: skip
    with pytest.warns(MemoryReadWarning):
        assert memory_df(saved)["content"].tolist() == ["timed"]
    problems = memory_df_with_problems(saved).problems
    assert problems["kind"].tolist() == ["untimed"]
    assert "message 1 has no timestamp" in problems["message"].iloc[0]


def test_a_list_reads_each_path_by_its_loader(tmp_path: Path) -> None:
    saved = _saved(tmp_path, "json")
    agent = bundled_workspace() / "agents" / "BugHunter"
    archive = sorted((agent / "archive").glob("history_*.md"))[0]
    records = load_records([archive, saved, agent / "MEMORY.md"])
    # memorylab's files of one agent, named apart, make one record
    assert [(r.format, r.agent) for r in records] == [
        ("memorylab", "BugHunter"),
        ("reference-save", "alpha"),
    ]
    assert len(records[0].segments) == 2


class _Chat:
    """A format memorylab does not know: ``who: what`` lines under a ``#chat <time>`` line."""

    name = "test-chat"

    def handles(self, path: Path) -> bool:
        return path.is_file() and path.read_bytes().startswith(b"#chat ")

    def load(self, path: Path) -> list[AgentRecord]:
        first, *lines = path.read_text().splitlines()
        when = first.removeprefix("#chat ")
        said = [line.split(": ", 1) for line in lines]
        messages = [{"role": who, "content": what, "timestamp": when} for who, what in said]
        return [messages_record(path, messages, format=self.name, agent="chatty")]


def test_a_registered_loader_is_read_by_memory_df(tmp_path: Path, registry: None) -> None:
    chat = tmp_path / "log.chat"
    chat.write_text("#chat 2026-05-01T10:00:00+00:00\nUser: hello\nAgent: hi\n")
    with pytest.raises(InvalidSetting, match="none of the formats registered"):
        memory_df(chat)
    register_loader(_Chat())
    assert "test-chat" in loader_names() and get_loader("test-chat").name == "test-chat"
    frame = memory_df(chat)
    assert frame[["agent", "role", "content"]].values.tolist() == [
        ["chatty", "User", "hello"],
        ["chatty", "Agent", "hi"],
    ]
    assert load_records(chat)[0].format == "test-chat"


def test_what_register_loader_refuses(registry: None) -> None:
    with pytest.raises(InvalidSetting, match=r"register a loader object \(_Chat\(\)\)"):
        register_loader(_Chat)  # type: ignore[arg-type]
    with pytest.raises(InvalidSetting, match="handles\\(path\\) and load\\(path\\)"):
        register_loader(object())  # type: ignore[arg-type]
    with pytest.raises(InvalidSetting, match="unknown loader 'nope'; registered: memorylab"):
        get_loader("nope")
