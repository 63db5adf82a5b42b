"""Conversation: the seed's API, write-through, preload, compaction."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from memorylab import Conversation, read_memory
from memorylab.errors import EmptySummary
from memorylab.memory._records import PRELOAD_PREFIX, SUMMARY_PREFIX

GOLDEN = Path(__file__).parent.parent / "data" / "golden"


def _conversation(**kwargs: object) -> Conversation:
    return Conversation(agent_name="ResearchAgent", **kwargs)  # type: ignore[arg-type]


def test_file_location_and_header(isolated_workspace: Path) -> None:
    conv = _conversation()
    assert conv.memory_md_path == isolated_workspace / "agents" / "ResearchAgent" / "MEMORY.md"
    doc = read_memory(conv.memory_md_path)
    assert doc.conversation_name == "ResearchAgent_conversation"
    assert doc.format_version == 1 and doc.messages == ()
    assert doc.created is not None and doc.created.tzinfo is not None


def test_explicit_workspace_beats_the_environment(tmp_path: Path) -> None:
    conv = Conversation(agent_name="a", workspace_dir=tmp_path / "ws")
    assert conv.memory_md_path == tmp_path / "ws" / "agents" / "a" / "MEMORY.md"


def test_write_through_and_static_context_stays_off_disk() -> None:
    conv = _conversation(
        system_prompt="SECRET SYSTEM PROMPT", rules="RULES", custom_rules_prompt="SKILLS"
    )
    conv.add("User", "What is 2+2?")
    conv.add("ResearchAgent", {"answer": 4})
    conv.add("Tool Executor", ["a", 1])
    text = conv.memory_md_path.read_text(encoding="utf-8")  # type: ignore[union-attr]
    assert "SECRET" not in text and "RULES" not in text and "SKILLS" not in text
    doc = read_memory(conv.memory_md_path)  # type: ignore[arg-type]
    assert [(m.role, m.content) for m in doc.messages] == [
        ("User", "What is 2+2?"),
        ("ResearchAgent", '{"answer": 4}'),
        ("Tool Executor", '["a", 1]'),
    ]
    assert conv.conversation_history[4]["content"] == {"answer": 4}  # original object kept
    assert [e["role"] for e in conv.conversation_history[:3]] == ["System", "User", "User"]


def test_empty_content_stays_in_memory_only() -> None:
    conv = _conversation()
    conv.add("User", "")
    conv.add("User", None)
    assert read_memory(conv.memory_md_path).messages == ()  # type: ignore[arg-type]
    assert len(conv) == 2


def test_preload_is_one_system_message_and_is_not_rewritten() -> None:
    first = _conversation(system_prompt="sp")
    first.add("User", "remember: the deploy key lives in vault")
    size = first.memory_md_path.stat().st_size  # type: ignore[union-attr]
    second = _conversation(system_prompt="sp", rules="r")
    preloads = [e for e in second.conversation_history if e.get("kind") == "preload"]
    assert len(preloads) == 1 and second.conversation_history[2] is preloads[0]
    assert preloads[0]["role"] == "System"
    assert preloads[0]["content"].startswith(PRELOAD_PREFIX + "\n# Agent Memory")
    assert "deploy key lives in vault" in preloads[0]["content"]
    assert second.memory_md_path.stat().st_size == size  # type: ignore[union-attr]
    sent = second.to_messages()
    assert sent[2] == {"role": "system", "content": preloads[0]["content"]}


def test_a_header_only_file_is_not_preloaded() -> None:
    _conversation()
    assert [e for e in _conversation().conversation_history if e.get("kind") == "preload"] == []


def test_a_reference_file_is_kept_byte_for_byte_and_preloaded(isolated_workspace: Path) -> None:
    folder = isolated_workspace / "agents" / "QuantAgent"
    folder.mkdir(parents=True)
    original = (GOLDEN / "reference_basic.md").read_bytes()
    (folder / "MEMORY.md").write_bytes(original)
    conv = Conversation(agent_name="QuantAgent")
    assert (folder / "MEMORY.md").read_bytes() == original
    assert conv.conversation_history[0]["content"].endswith(original.decode())
    conv.add("Human", "and AMD?")
    assert (folder / "MEMORY.md").read_bytes().startswith(original)
    assert read_memory(folder / "MEMORY.md").messages[-1].content == "and AMD?"


def test_seed_messages_are_not_persisted() -> None:
    conv = _conversation(messages=[{"role": "User", "content": "seeded"}])
    assert conv.conversation_history[-1]["content"] == "seeded"
    _conversation(messages=[{"role": "User", "content": "seeded"}])
    assert read_memory(conv.memory_md_path).messages == ()  # type: ignore[arg-type]


def test_history_string_and_provider_messages() -> None:
    conv = Conversation(system_prompt="sp", time_enabled=False, user="Alice")
    conv.add("Alice", "hi")
    conv.add("Bot", "hello")
    conv.add("tool", "42", tool_call_id="call_1")
    conv.add("Tool Executor", "result")
    assert conv.return_history_as_string() == (
        "System: sp\n\nAlice: hi\n\nBot: hello\n\ntool: 42\n\nTool Executor: result"
    )
    assert [m["role"] for m in conv.to_messages()] == [
        "system",
        "user",
        "assistant",
        "tool",
        "user",
    ]
    assert conv.to_messages()[3]["tool_call_id"] == "call_1"
    timed = Conversation()
    timed.add("User", "x")
    entry = timed.conversation_history[0]
    assert timed.return_history_as_string() == f"[{entry['timestamp']}] User: x"


def test_memory_md_path_none_turns_persistence_off() -> None:
    conv = _conversation()
    path = conv.memory_md_path
    conv.memory_md_path = None
    conv.add("User", "not on disk")
    event = conv.compact("summary")
    assert event.archive is None
    assert read_memory(path).messages == ()  # type: ignore[arg-type]
    assert Conversation(memory_md_path=None, agent_name="x").memory_md_path is None


def test_compact_archives_reseeds_and_records(isolated_workspace: Path) -> None:
    conv = _conversation(system_prompt="sp", rules="r")
    for i in range(3):
        conv.add("User", f"task {i}")
    before = conv.memory_md_path.read_bytes()  # type: ignore[union-attr]
    event = conv.compact("user prefers GCP")
    assert event.ok and event.messages_archived == 3 and event.carried_over == 0
    archive = conv.memory_md_path.parent / "archive" / event.archive  # type: ignore[union-attr,operator]
    assert archive.read_bytes() == before
    doc = read_memory(conv.memory_md_path)  # type: ignore[arg-type]
    assert doc.continues == event.archive
    assert [(m.role, m.content) for m in doc.messages] == [
        ("System", f"{SUMMARY_PREFIX} user prefers GCP")
    ]
    assert [(e["role"], e["content"]) for e in conv.conversation_history] == [
        ("System", "sp"),
        ("User", "r"),
        ("System", f"{SUMMARY_PREFIX} user prefers GCP"),
    ]
    assert conv.store.records()[-1]["archive"] == event.archive  # type: ignore[union-attr]
    resumed = _conversation()
    assert "user prefers GCP" in resumed.conversation_history[0]["content"]
    assert "task 0" not in resumed.conversation_history[0]["content"]


def test_messages_added_during_summarization_survive() -> None:
    conv = _conversation()
    conv.add("User", "before")
    ticket = conv.begin_compaction()
    conv.add("User", "during the slow summary")
    other = _conversation()
    other.add("Other", "from another writer")
    event = conv.compact("sum", ticket=ticket)
    assert event.carried_over == 2
    contents = [m.content for m in read_memory(conv.memory_md_path).messages]  # type: ignore[arg-type]
    assert contents == [f"{SUMMARY_PREFIX} sum", "during the slow summary", "from another writer"]
    assert conv.conversation_history[-1]["content"] == "during the slow summary"


@pytest.mark.parametrize("summary", ["", "   \n", None])
def test_empty_summaries_are_refused_and_change_nothing(summary: str | None) -> None:
    conv = _conversation()
    conv.add("User", "x")
    before = conv.memory_md_path.read_bytes()  # type: ignore[union-attr]
    history = list(conv.conversation_history)
    with pytest.raises(EmptySummary):
        conv.compact(summary)  # type: ignore[arg-type]
    assert conv.memory_md_path.read_bytes() == before  # type: ignore[union-attr]
    assert conv.conversation_history == history
    assert not (conv.memory_md_path.parent / "archive").exists()  # type: ignore[union-attr]


def test_compact_keeps_the_callers_suppression_flag() -> None:
    conv = _conversation()
    conv.add("User", "x")
    conv._suppress_memory_md = True
    conv.compact("s")
    assert conv._suppress_memory_md is True
    conv.add("User", "suppressed")
    assert "suppressed" not in conv.memory_md_path.read_text()  # type: ignore[union-attr]


def test_creation_is_disclosed_once_in_the_log(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="memorylab"):
        _conversation()
        _conversation()
    notes = [
        r.getMessage() for r in caplog.records if "storing this conversation" in r.getMessage()
    ]
    assert len(notes) == 1
    assert "memory_md_path=None" in notes[0] and "removing the folder" in notes[0]


def test_summary_role_may_be_user_like_some_reference_versions() -> None:
    conv = _conversation()
    conv.add("User", "x")
    conv.compact("s", summary_role="user")
    assert read_memory(conv.memory_md_path).messages[0].role == "user"  # type: ignore[arg-type]


def test_messages_are_stamped_in_utc_with_microseconds() -> None:
    from datetime import UTC, datetime, timedelta

    conv = Conversation()  # memory only: the default clock
    before = datetime.now(UTC)
    stamps = [conv.add("User", str(i))["timestamp"] for i in range(100)]
    after = datetime.now(UTC)
    for stamp in (stamps[0], stamps[-1]):
        parsed = datetime.fromisoformat(stamp)
        assert parsed.tzinfo == UTC and len(stamp) == len(before.isoformat(timespec="microseconds"))
        assert before - timedelta(milliseconds=1) <= parsed <= after + timedelta(milliseconds=1)
    assert stamps == sorted(stamps)


def test_the_default_stamp_is_format_timestamp_of_utc_now() -> None:
    from datetime import UTC, datetime, timedelta

    from memorylab.memory import _conversation as conversation_module
    from memorylab.memory._format import format_timestamp

    before = datetime.now(UTC)
    stamps = [conversation_module._utc_stamp() for _ in range(2000)]  # crosses a second or not
    after = datetime.now(UTC)
    for stamp in stamps:
        parsed = datetime.fromisoformat(stamp)
        assert format_timestamp(parsed) == stamp  # the same text the datetime formats to
        assert before - timedelta(milliseconds=1) <= parsed <= after + timedelta(milliseconds=1)
    assert stamps == sorted(stamps)


def test_entries_by_kind(isolated_workspace: Path) -> None:
    from memorylab.memory._records import EntryKind

    _conversation().add("User", "remember me")
    conv = _conversation(system_prompt="Be brief.")
    conv.add("User", "hello")
    assert [conv.entry_kind(e) for e in conv.entries()] == [
        EntryKind.STATIC,
        EntryKind.PRELOAD,
        EntryKind.MESSAGE,
    ]
    assert [e["content"] for e in conv.entries(EntryKind.MESSAGE)] == ["hello"]
    assert conv.entries(EntryKind.STATIC, EntryKind.MESSAGE)[0]["content"] == "Be brief."
    assert "kind" not in conv.to_dict()[-1]  # a message's entry has no kind key, as before
    conv.compact("short")
    assert conv.entries(EntryKind.SUMMARY)[0]["kind"] == "summary"
    assert conv.entry_kind({"role": "User", "content": "x", "kind": "mine"}) is None


def test_the_reference_keywords_are_checked_like_parameters(isolated_workspace: Path) -> None:
    from memorylab.memory._conversation import DEFAULT_PATH, DefaultPath

    with pytest.raises(TypeError, match="unexpected keyword argument 'save_path'"):
        Conversation(save_path="x.json")  # type: ignore[call-arg]
    conv = Conversation(agent_name="A", memory_md_path=DEFAULT_PATH, id="abc", context_length=None)
    assert (conv.id, conv.context_length, conv.export_method) == ("abc", None, "json")
    assert conv.memory_md_path is not None and repr(DEFAULT_PATH) == "<default>"
    assert DEFAULT_PATH is DefaultPath.DEFAULT_PATH
