"""The reference framework's own tests of ``Conversation``, ported to memorylab.

A port of ``tests/structs/test_conversation.py`` of kyegomez/swarms (the version whose tests
report with ``return True/False``; swarms 16.0.3 is the reference): the same tests, with the
same names, inputs and expectations. The shim is the import swap below; where the original
caught its own ``AssertionError`` and returned a boolean, the assertions are plain pytest asserts
(and ``with pytest.raises`` where it expected an exception). Its report runner (``run_all_tests``,
``generate_markdown_report``) is left out.

The tests that differ on purpose, and those of the reference's internals, are listed with the
reason in ``differences.py`` (applied by ``conftest.py``).
"""

import concurrent.futures
import json
import os
import re
import shutil
from datetime import datetime
from pathlib import Path

import pytest

# The shim: ``from swarms.structs import conversation as conversation_module`` and
# ``from swarms.structs.conversation import Conversation``.
from memorylab import Conversation
from memorylab.memory import _conversation as conversation_module


def setup_temp_conversations_dir():
    """Create a temporary directory for conversation cache files."""
    temp_dir = Path("temp_test_conversations")
    if temp_dir.exists():
        shutil.rmtree(temp_dir)
    temp_dir.mkdir()
    return temp_dir


def test_add_message():
    conv = Conversation()
    conv.add("user", "Hello, world!")
    assert len(conv.conversation_history) == 1
    assert conv.conversation_history[0]["role"] == "user"
    assert conv.conversation_history[0]["content"] == "Hello, world!"


def test_add_message_with_time():
    conv = Conversation(time_enabled=False)
    conv.add("user", "Hello, world!")
    assert len(conv.conversation_history) == 1
    assert conv.conversation_history[0]["role"] == "user"
    assert conv.conversation_history[0]["content"] == "Hello, world!"
    assert "timestamp" in conv.conversation_history[0]


def test_delete_message():
    conv = Conversation()
    conv.add("user", "Hello, world!")
    conv.delete(0)
    assert len(conv.conversation_history) == 0


def test_delete_message_out_of_bounds():
    conv = Conversation()
    conv.add("user", "Hello, world!")
    with pytest.raises(IndexError):
        conv.delete(1)


def test_update_message():
    conv = Conversation()
    conv.add("user", "Hello, world!")
    conv.update(0, "assistant", "Hello, user!")
    assert len(conv.conversation_history) == 1
    assert conv.conversation_history[0]["role"] == "assistant"
    assert conv.conversation_history[0]["content"] == "Hello, user!"


def test_update_message_out_of_bounds():
    conv = Conversation()
    conv.add("user", "Hello, world!")
    with pytest.raises(IndexError):
        conv.update(1, "assistant", "Hello, user!")


def test_return_history_as_string():
    conv = Conversation()
    conv.add("user", "Hello, world!")
    conv.add("assistant", "Hello, user!")
    result = conv.return_history_as_string()
    assert result == "user: Hello, world!\n\nassistant: Hello, user!"


def test_search():
    conv = Conversation()
    conv.add("user", "Hello, world!")
    conv.add("assistant", "Hello, user!")
    results = conv.search("Hello")
    assert len(results) == 2
    assert results[0]["content"] == "Hello, world!"
    assert results[1]["content"] == "Hello, user!"


def test_conversation_cache_creation():
    temp_dir = setup_temp_conversations_dir()
    try:
        conv = Conversation(name="cache_test", conversations_dir=str(temp_dir))
        conv.add("user", "Test message")
        assert (temp_dir / "cache_test.json").exists()
    finally:
        shutil.rmtree(temp_dir)


def test_conversation_cache_loading():
    temp_dir = setup_temp_conversations_dir()
    try:
        conv1 = Conversation(name="load_test", conversations_dir=str(temp_dir))
        conv1.add("user", "Test message")
        conv2 = Conversation.load_conversation(name="load_test", conversations_dir=str(temp_dir))
        assert len(conv2.conversation_history) == 1
        assert conv2.conversation_history[0]["content"] == "Test message"
    finally:
        shutil.rmtree(temp_dir)


def test_add_multiple_messages():
    conv = Conversation()
    roles = ["user", "assistant", "system"]
    contents = ["Hello", "Hi there", "System message"]
    conv.add_multiple_messages(roles, contents)
    assert len(conv.conversation_history) == 3
    assert conv.conversation_history[0]["role"] == "user"
    assert conv.conversation_history[1]["role"] == "assistant"
    assert conv.conversation_history[2]["role"] == "system"


def test_query():
    conv = Conversation()
    conv.add("user", "Test message")
    result = conv.query(0)
    assert result["role"] == "user"
    assert result["content"] == "Test message"


def test_display_conversation():
    conv = Conversation()
    conv.add("user", "Hello")
    conv.add("assistant", "Hi")
    conv.display_conversation()


def test_count_messages_by_role():
    conv = Conversation()
    conv.add("user", "Hello")
    conv.add("assistant", "Hi")
    conv.add("system", "System message")
    counts = conv.count_messages_by_role()
    assert counts["user"] == 1
    assert counts["assistant"] == 1
    assert counts["system"] == 1


def test_get_str():
    conv = Conversation()
    conv.add("user", "Hello")
    result = conv.get_str()
    assert "user: Hello" in result


def test_to_json():
    conv = Conversation()
    conv.add("user", "Hello")
    result = conv.to_json()
    assert isinstance(result, str)
    assert "Hello" in result


def test_to_dict():
    conv = Conversation()
    conv.add("user", "Hello")
    result = conv.to_dict()
    assert isinstance(result, list)
    assert result[0]["content"] == "Hello"


def test_to_yaml():
    conv = Conversation()
    conv.add("user", "Hello")
    result = conv.to_yaml()
    assert isinstance(result, str)
    assert "Hello" in result


def test_get_last_message_as_string():
    conv = Conversation()
    conv.add("user", "First")
    conv.add("assistant", "Last")
    assert conv.get_last_message_as_string() == "assistant: Last"


def test_return_messages_as_list():
    conv = Conversation()
    conv.add("user", "Hello")
    conv.add("assistant", "Hi")
    result = conv.return_messages_as_list()
    assert len(result) == 2
    assert result[0] == "user: Hello"
    assert result[1] == "assistant: Hi"


def test_return_messages_as_dictionary():
    conv = Conversation()
    conv.add("user", "Hello")
    result = conv.return_messages_as_dictionary()
    assert len(result) == 1
    assert result[0]["role"] == "user"
    assert result[0]["content"] == "Hello"


def test_add_tool_output_to_agent():
    conv = Conversation()
    tool_output = {"name": "test_tool", "output": "test result"}
    conv.add_tool_output_to_agent("tool", tool_output)
    assert len(conv.conversation_history) == 1
    assert conv.conversation_history[0]["role"] == "tool"
    assert conv.conversation_history[0]["content"] == tool_output


def test_get_final_message():
    conv = Conversation()
    conv.add("user", "First")
    conv.add("assistant", "Last")
    assert conv.get_final_message() == "assistant: Last"


def test_get_final_message_content():
    conv = Conversation()
    conv.add("user", "First")
    conv.add("assistant", "Last")
    assert conv.get_final_message_content() == "Last"


def test_return_all_except_first():
    conv = Conversation()
    conv.add("system", "System")
    conv.add("user", "Hello")
    conv.add("assistant", "Hi")
    result = conv.return_all_except_first()
    assert len(result) == 2
    assert result[0]["role"] == "user"
    assert result[1]["role"] == "assistant"


def test_return_all_except_first_string():
    conv = Conversation()
    conv.add("system", "System")
    conv.add("user", "Hello")
    conv.add("assistant", "Hi")
    result = conv.return_all_except_first_string()
    assert "Hello" in result
    assert "Hi" in result
    assert "System" not in result


def test_batch_add():
    conv = Conversation()
    messages = [
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi"},
    ]
    conv.batch_add(messages)
    assert len(conv.conversation_history) == 2
    assert conv.conversation_history[0]["role"] == "user"
    assert conv.conversation_history[1]["role"] == "assistant"


def test_get_cache_stats():
    conv = Conversation(cache_enabled=True)
    conv.add("user", "Hello")
    stats = conv.get_cache_stats()
    assert "hits" in stats
    assert "misses" in stats
    assert "cached_tokens" in stats
    assert "total_tokens" in stats
    assert "hit_rate" in stats


def test_list_cached_conversations():
    temp_dir = setup_temp_conversations_dir()
    try:
        conv = Conversation(name="test_list", conversations_dir=str(temp_dir))
        conv.add("user", "Test message")
        conversations = Conversation.list_cached_conversations(str(temp_dir))
        assert "test_list" in conversations
    finally:
        shutil.rmtree(temp_dir)


def test_clear():
    conv = Conversation()
    conv.add("user", "Hello")
    conv.add("assistant", "Hi")
    conv.clear()
    assert len(conv.conversation_history) == 0


def test_save_and_load_json():
    temp_dir = setup_temp_conversations_dir()
    file_path = temp_dir / "test_save.json"
    try:
        conv = Conversation(save_filepath=str(file_path))
        conv.add("user", "Hello")
        conv.save_as_json(force=True)

        conv2 = Conversation()
        conv2.load_from_json(str(file_path))
        assert len(conv2.conversation_history) == 1
        assert conv2.conversation_history[0]["content"] == "Hello"
    finally:
        shutil.rmtree(temp_dir)


# ── memory_md_path initialization ──


def test_memory_md_creates_parent_dir(tmp_path):
    """Parent dir is created when it doesn't exist."""
    md_path = tmp_path / "nested" / "deep" / "MEMORY.md"
    Conversation(memory_md_path=str(md_path), conversations_dir=str(tmp_path / "convs"))
    assert md_path.parent.is_dir()
    assert md_path.is_file()


def test_memory_md_seeds_file_with_header(tmp_path):
    """New file is seeded with Agent Memory header and Interaction Log."""
    md_path = tmp_path / "MEMORY.md"
    Conversation(memory_md_path=str(md_path), conversations_dir=str(tmp_path / "convs"))
    content = md_path.read_text()
    assert "# Agent Memory" in content
    assert "## Interaction Log" in content


def test_memory_md_no_overwrite_existing(tmp_path):
    """Existing file is NOT overwritten on construction."""
    md_path = tmp_path / "MEMORY.md"
    original = "# Existing\n\nKeep this.\n"
    md_path.write_text(original)
    Conversation(memory_md_path=str(md_path), conversations_dir=str(tmp_path / "convs"))
    assert md_path.read_text() == original


def test_memory_md_none_no_file_io(tmp_path):
    """No file I/O when memory_md_path is None (default)."""
    conv = Conversation(conversations_dir=str(tmp_path / "convs"))
    assert conv.memory_md_path is None
    conv.add("user", "Hello")
    assert not list(tmp_path.glob("**/MEMORY.md"))


# ── Preload ──


def test_preload_no_preamble_for_header_only(tmp_path):
    """Header-only file produces no preamble in history."""
    conv = Conversation(
        memory_md_path=str(tmp_path / "MEMORY.md"), conversations_dir=str(tmp_path / "convs")
    )
    preambles = [
        m for m in conv.conversation_history if "Persistent Memory" in str(m.get("content", ""))
    ]
    assert len(preambles) == 0


def test_preload_injects_system_preamble(tmp_path):
    """Prior interactions produce exactly one System preamble containing the full file
    contents."""
    md_path = tmp_path / "MEMORY.md"
    file_text = (
        "# Agent Memory\n\n## Interaction Log\n\n"
        "### user — 2025-01-01T00:00:00\n\n"
        "Hello from past\n\n---\n\n"
    )
    md_path.write_text(file_text)
    conv = Conversation(memory_md_path=str(md_path), conversations_dir=str(tmp_path / "convs"))
    preambles = [
        m for m in conv.conversation_history if "Persistent Memory" in str(m.get("content", ""))
    ]
    assert len(preambles) == 1
    assert preambles[0]["role"] == "System"
    # Full file contents must be embedded in the preamble
    assert file_text in preambles[0]["content"]


def test_preload_does_not_write_to_disk(tmp_path):
    """Preload appends to history, never writes back to MEMORY.md."""
    md_path = tmp_path / "MEMORY.md"
    content = (
        "# Agent Memory\n\n## Interaction Log\n\n"
        "### user — 2025-01-01T00:00:00\n\n"
        "Hello\n\n---\n\n"
    )
    md_path.write_text(content)
    Conversation(memory_md_path=str(md_path), conversations_dir=str(tmp_path / "convs"))
    assert md_path.read_text() == content


# ── Write-through ──


def test_add_appends_to_memory_md(tmp_path):
    """Each add() writes a ### {role} — <iso-timestamp> block."""
    md_path = tmp_path / "MEMORY.md"
    conv = Conversation(memory_md_path=str(md_path), conversations_dir=str(tmp_path / "convs"))
    conv.add("user", "Test message")
    content = md_path.read_text()
    assert "### user — " in content
    assert "Test message" in content
    assert "---" in content


def test_add_multiple_returns_one_result_per_message():
    """add_multiple_messages reports what it added, rather than None."""
    conv = Conversation()
    added = conv.add_multiple_messages(["user", "assistant"], ["Hello", "Hi there"])
    assert added is not None
    assert len(added) == 2


def test_add_multiple_does_not_depend_on_the_cpu_count(monkeypatch):
    """A machine reporting fewer than four CPUs can still add messages."""
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    conv = Conversation()
    conv.add_multiple_messages(
        ["user", "assistant", "system"], ["Hello", "Hi there", "System message"]
    )
    assert [msg["role"] for msg in conv.conversation_history] == ["user", "assistant", "system"]


def test_concurrent_add_thread_safety(tmp_path):
    """Concurrent add() calls serialize writes via the lock."""
    md_path = tmp_path / "MEMORY.md"
    conv = Conversation(memory_md_path=str(md_path), conversations_dir=str(tmp_path / "convs"))

    def add_msg(i):
        conv.add("user", f"Message {i}")

    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as ex:
        list(ex.map(add_msg, range(50)))

    content = md_path.read_text()
    for i in range(50):
        assert f"Message {i}" in content


def test_suppress_memory_md_during_setup(tmp_path):
    """system_prompt / rules / custom_rules NOT written to MEMORY.md."""
    md_path = tmp_path / "MEMORY.md"
    Conversation(
        system_prompt="You are helpful.",
        rules="Be nice.",
        custom_rules_prompt="Custom rule.",
        memory_md_path=str(md_path),
        conversations_dir=str(tmp_path / "convs"),
    )
    content = md_path.read_text()
    assert "### " not in content
    assert "You are helpful." not in content
    assert "Be nice." not in content
    assert "Custom rule." not in content


def test_empty_content_skipped(tmp_path):
    """Empty or whitespace-only content is not written to MEMORY.md."""
    md_path = tmp_path / "MEMORY.md"
    conv = Conversation(memory_md_path=str(md_path), conversations_dir=str(tmp_path / "convs"))
    header = md_path.read_text()
    conv.add("user", "")
    conv.add("user", "   ")
    conv.add("user", None)
    assert md_path.read_text() == header


# ── compact ──


def test_compact_preserves_static_context(tmp_path):
    """After compact: system_prompt, rules, custom_rules, summary."""
    conv = Conversation(
        system_prompt="System prompt",
        rules="Rules text",
        custom_rules_prompt="Custom rules",
        memory_md_path=str(tmp_path / "MEMORY.md"),
        conversations_dir=str(tmp_path / "convs"),
    )
    conv.add("user", "Hello")
    conv.add("assistant", "Hi")
    conv.compact("Summary of conversation")

    h = conv.conversation_history
    assert len(h) == 4
    assert h[0]["role"] == "System"
    assert h[0]["content"] == "System prompt"
    assert h[1]["role"] == "User"
    assert h[1]["content"] == "Rules text"
    assert h[2]["role"] == "User"
    assert h[2]["content"] == "Custom rules"
    assert h[3]["role"] == "System"
    assert h[3]["content"] == "Summary of conversation"


def test_compact_removes_raw_turns(tmp_path):
    """Raw turn-by-turn messages are gone after compaction."""
    conv = Conversation(conversations_dir=str(tmp_path / "convs"))
    conv.add("user", "Turn 1")
    conv.add("assistant", "Response 1")
    conv.compact("Summary")
    contents = [m["content"] for m in conv.conversation_history]
    assert "Turn 1" not in contents
    assert "Response 1" not in contents
    assert "Summary" in contents


def test_compact_archives_memory_md(tmp_path):
    """Prior MEMORY.md is copied to archive/ before wipe."""
    md_path = tmp_path / "MEMORY.md"
    conv = Conversation(memory_md_path=str(md_path), conversations_dir=str(tmp_path / "convs"))
    conv.add("user", "Archived interaction")
    conv.compact("Summary")

    archives = list((tmp_path / "archive").glob("history_*.md"))
    assert len(archives) == 1
    assert "Archived interaction" in archives[0].read_text()


def test_compact_resets_memory_md(tmp_path):
    """After compaction MEMORY.md has fresh header + summary only."""
    md_path = tmp_path / "MEMORY.md"
    conv = Conversation(memory_md_path=str(md_path), conversations_dir=str(tmp_path / "convs"))
    conv.add("user", "Old message")
    conv.compact("Fresh summary")

    content = md_path.read_text()
    assert "# Agent Memory" in content
    assert "## Interaction Log" in content
    assert "Old message" not in content
    assert "Fresh summary" in content


def test_compact_skips_archive_when_no_interactions(tmp_path):
    """No archive when MEMORY.md has no ### blocks."""
    conv = Conversation(
        memory_md_path=str(tmp_path / "MEMORY.md"), conversations_dir=str(tmp_path / "convs")
    )
    conv.compact("Summary")
    archive_dir = tmp_path / "archive"
    if archive_dir.exists():
        assert len(list(archive_dir.glob("history_*.md"))) == 0


def test_archive_filename_format(tmp_path):
    """Archive filename uses %Y-%m-%d_%H-%M-%S format."""
    md_path = tmp_path / "MEMORY.md"
    conv = Conversation(memory_md_path=str(md_path), conversations_dir=str(tmp_path / "convs"))
    conv.add("user", "Interaction")
    conv.compact("Summary")

    archives = list((tmp_path / "archive").glob("history_*.md"))
    assert len(archives) == 1
    stamp = archives[0].stem.replace("history_", "")
    datetime.strptime(stamp, "%Y-%m-%d_%H-%M-%S")


# ── Timestamp in prompt string ──


def test_timestamp_format_in_history_string(tmp_path):
    """Messages with timestamp render as [<ts>] Role: content."""
    conv = Conversation(
        time_enabled=True,
        dynamic_context_window=False,
        save_filepath=str(tmp_path / "timestamp_1.json"),
        conversations_dir=str(tmp_path / "convs"),
    )
    conv.add("user", "Hello")
    result = conv.return_history_as_string()
    assert result.startswith("[")
    assert "] user: Hello" in result


def test_no_timestamp_fallback(tmp_path):
    """Messages without timestamp render as Role: content."""
    conv = Conversation(
        time_enabled=False,
        dynamic_context_window=False,
        save_filepath=str(tmp_path / "timestamp_2.json"),
        conversations_dir=str(tmp_path / "convs"),
    )
    conv.add("user", "Hello")
    assert conv.return_history_as_string() == "user: Hello"


def test_time_enabled_end_to_end(tmp_path):
    """Two messages with time_enabled contain ISO-8601 timestamps."""
    conv = Conversation(
        time_enabled=True,
        dynamic_context_window=False,
        save_filepath=str(tmp_path / "timestamp_3.json"),
        conversations_dir=str(tmp_path / "convs"),
    )
    conv.add("user", "First")
    conv.add("assistant", "Second")
    lines = conv.return_history_as_string().split("\n\n")
    assert len(lines) == 2
    for line in lines:
        assert line.startswith("[")
        ts = line.split("]")[0][1:]
        datetime.fromisoformat(ts)  # must parse as valid ISO-8601


# ── Message Metadata Tests (Issue #1926) ──


def test_add_message_with_metadata(tmp_path):
    """Conversation.add preserves message metadata."""
    conv = Conversation(
        name="test_add_metadata",
        save_filepath=str(tmp_path / "metadata_1.json"),
        conversations_dir=str(tmp_path / "convs"),
    )
    metadata = {"trace_id": "abc123", "cost": 0.01}
    msg = conv.add("user", "Hello with metadata", metadata=metadata)
    assert len(conv.conversation_history) == 1
    assert conv.conversation_history[0]["metadata"] == metadata
    assert msg["metadata"] == metadata


def test_add_message_with_metadata_and_category(tmp_path):
    """Metadata and category coexist on the stored message."""
    conv = Conversation(
        name="test_add_metadata_cat",
        save_filepath=str(tmp_path / "metadata_2.json"),
        conversations_dir=str(tmp_path / "convs"),
    )
    metadata = {"trace_id": "xyz789"}
    msg = conv.add("user", "Hello", category="input", metadata=metadata)
    assert conv.conversation_history[0]["category"] == "input"
    assert conv.conversation_history[0]["metadata"] == metadata
    assert msg["category"] == "input"
    assert msg["metadata"] == metadata


def test_add_message_metadata_serialization(tmp_path):
    """Metadata is preserved across to_dict, to_json, and to_yaml."""
    conv = Conversation(
        name="test_add_metadata_ser",
        save_filepath=str(tmp_path / "metadata_3.json"),
        conversations_dir=str(tmp_path / "convs"),
    )
    metadata = {"source": "unit_test", "run_id": 42}
    conv.add("user", "Test metadata serialization", metadata=metadata)

    assert conv.to_dict()[0]["metadata"] == metadata

    json_res = conv.to_json()
    assert '"metadata":' in json_res
    assert '"source": "unit_test"' in json_res

    yaml_res = conv.to_yaml()
    assert "metadata:" in yaml_res
    assert "source: unit_test" in yaml_res


def test_add_message_empty_and_none_metadata(tmp_path):
    """Empty or None metadata does not pollute the message dict."""
    conv = Conversation(
        name="test_add_metadata_empty",
        save_filepath=str(tmp_path / "metadata_4.json"),
        conversations_dir=str(tmp_path / "convs"),
    )
    msg_none = conv.add("user", "None metadata", metadata=None)
    assert "metadata" not in conv.conversation_history[0]
    assert "metadata" not in msg_none

    msg_empty = conv.add("user", "Empty metadata", metadata={})
    assert "metadata" not in conv.conversation_history[1]
    assert "metadata" not in msg_empty


# ── Context isolation: an unnamed conversation must not resume someone else's ──


class TestDefaultConversationDoesNotResumeFromDisk:
    """An anonymous ``Conversation()`` never loads a file an unrelated run left behind."""

    def test_anonymous_conversation_starts_empty(self, tmp_path, monkeypatch):
        monkeypatch.setattr(
            conversation_module, "generate_conversation_name", lambda: "conversation-deadbeef"
        )
        stale = tmp_path / "conversation_conversation-deadbeef.json"
        stale.write_text(json.dumps([{"role": "user", "content": "left over from another run"}]))

        conversation = Conversation(conversations_dir=str(tmp_path))

        assert conversation.conversation_history == [], (
            "an unnamed conversation resumed from an unrelated file"
        )

    def test_two_anonymous_conversations_do_not_share_state(self, tmp_path):
        first = Conversation(conversations_dir=str(tmp_path), autosave=True)
        first.add("user", "private to the first conversation")
        first.save_as_json(force=True)

        second = Conversation(conversations_dir=str(tmp_path))

        contents = [m["content"] for m in second.conversation_history]
        assert "private to the first conversation" not in contents

    def test_anonymous_conversations_get_distinct_names_and_ids(self):
        first, second = Conversation(), Conversation()

        assert re.fullmatch(r"conversation-[0-9a-f]{8}", first.name)
        assert first.name != second.name
        assert first.id != second.id

    def test_a_named_conversation_still_resumes(self, tmp_path):
        """Resume-by-name is deliberate and must keep working."""
        first = Conversation(name="my-project", conversations_dir=str(tmp_path))
        first.add("user", "remember this")
        first.save_as_json(str(tmp_path / "conversation_my-project.json"))

        second = Conversation(name="my-project", conversations_dir=str(tmp_path))

        contents = [m["content"] for m in second.conversation_history]
        assert "remember this" in contents

    def test_an_explicit_filepath_still_resumes(self, tmp_path):
        path = tmp_path / "explicit.json"
        first = Conversation(save_filepath=str(path))
        first.add("user", "explicit save")
        first.save_as_json(str(path))

        second = Conversation(save_filepath=str(path))

        contents = [m["content"] for m in second.conversation_history]
        assert "explicit save" in contents


# ── Message accessors: strings vs real message dicts ──


def _two_turn_conversation():
    conv = Conversation()
    conv.add("user", "Hello, world!")
    conv.add("assistant", "Hello, user!")
    return conv


def test_return_messages_as_strings_formats_role_colon_content():
    """The flattener returns renderings, not messages."""
    strings = _two_turn_conversation().return_messages_as_strings()
    assert isinstance(strings, list)
    assert all(isinstance(s, str) for s in strings)
    assert strings == ["user: Hello, world!", "assistant: Hello, user!"]


def test_return_messages_as_list_returns_message_dicts():
    """The name promises a message list, so it returns dicts, not strings."""
    conversation = Conversation()
    conversation.add("user", "Hello, world!")
    conversation.add("assistant", "Hello, user!")

    messages = conversation.return_messages_as_list()

    assert all(isinstance(message, dict) for message in messages)
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert [m["content"] for m in messages] == ["Hello, world!", "Hello, user!"]
    # The string rendering lives under its own name.
    assert conversation.return_messages_as_strings() == [
        "user: Hello, world!",
        "assistant: Hello, user!",
    ]


def test_return_messages_as_dictionary_preserves_roles():
    """The real message-list accessor: dicts with exactly role and content."""
    messages = _two_turn_conversation().return_messages_as_dictionary()

    assert isinstance(messages, list)
    for message in messages:
        assert isinstance(message, dict)
        assert set(message.keys()) == {"role", "content"}

    assert messages[0]["role"] == "user"
    assert messages[0]["content"] == "Hello, world!"
    assert messages[1]["role"] == "assistant"
    assert messages[1]["content"] == "Hello, user!"


def test_return_all_except_first_without_a_system_prompt():
    conv = Conversation()
    conv.add("User", "Task")
    conv.add("Agent-1", "First answer")
    conv.add("Agent-2", "Second answer")

    assert [m["role"] for m in conv.return_all_except_first()] == ["Agent-1", "Agent-2"]

    text = conv.return_all_except_first_string()
    assert "First answer" in text
    assert "Second answer" in text
    assert "Task" not in text


def test_return_all_except_first_with_a_system_prompt():
    conv = Conversation(system_prompt="You are helpful.")
    conv.add("User", "Task")
    conv.add("Agent-1", "First answer")
    conv.add("Agent-2", "Second answer")

    assert [m["role"] for m in conv.return_all_except_first()] == ["Agent-1", "Agent-2"]

    text = conv.return_all_except_first_string()
    assert "You are helpful." not in text
    assert "Task" not in text
    assert "First answer" in text


def test_construction_does_not_create_a_conversations_dir(tmp_path):
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        conv = Conversation()
        assert not (tmp_path / "conversations").exists()

        conv.add("User", "Task")
        conv.save_as_json(force=True)
        assert (tmp_path / "conversations").is_dir()
    finally:
        os.chdir(cwd)


class _WatchedMessage(dict):
    def __init__(self, message, reads):
        super().__init__(message)
        self._reads = reads

    def __getitem__(self, key):
        self._reads.append(key)
        return super().__getitem__(key)


def test_history_string_does_not_re_render_earlier_messages():
    conv = Conversation(dynamic_context_window=False)
    conv.add("User", "first")
    assert "first" in conv.get_str()

    reads = []
    conv.conversation_history[0] = _WatchedMessage(conv.conversation_history[0], reads)

    conv.add("Assistant", "second")
    text = conv.get_str()

    assert reads == []
    assert "User: first" in text
    assert "Assistant: second" in text

    conv.update(0, "User", "edited")
    edited = conv.get_str()
    assert "edited" in edited
    assert "first" not in edited

    conv.delete(0)
    assert "edited" not in conv.get_str()


def test_construction_does_not_touch_the_home_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    Conversation(name="demo")
    assert list(tmp_path.iterdir()) == []
