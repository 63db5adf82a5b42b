"""A cleared tool result names the archive that holds its original (issue 36): once retention or
purge deletes that archive, what reaches the model says the original is gone: a conversation
that preloads MEMORY.md, and the live history when retention deletes the archive right after
the compaction. MEMORY.md itself keeps the placeholder as the compaction wrote it."""

from __future__ import annotations

from memorylab import Conversation, read_memory
from memorylab.compress import ClearToolResults, ContextCompressor
from memorylab.compress._strategy import PLACEHOLDER, is_placeholder
from memorylab.memory import MemoryDocument, RetentionPolicy
from memorylab.memory._records import EntryKind

GONE = " (deleted since: the original is gone)"
BIG = "row " * 60


def _add_tool_results(conv: Conversation, turns: range) -> None:
    conv.add("User", f"task {turns.start}")
    for turn in turns:
        conv.add("Agent", f"call {turn}", tool_calls=[{"id": f"c{turn}"}])
        conv.add("Tool Executor", f"result {turn} {BIG}", tool_call_id=f"c{turn}")


def _clear(conv: Conversation) -> str:
    # keep_turn=False: every result is cleared, the turn in progress's too (the placeholders
    # are what this file tests)
    compressor = ContextCompressor(strategy=ClearToolResults(keep_tool_results=0), keep_turn=False)
    event = compressor.compress(conv, 100_000, force=True)
    assert event is not None and event.ok and event.archive is not None
    return event.archive


def _cleared(texts: list[str]) -> list[str]:
    return [text for text in texts if text.startswith("[memorylab: tool result cleared")]


def test_a_preload_says_a_cleared_results_archive_is_gone() -> None:
    conv = Conversation(agent_name="Cleared")
    _add_tool_results(conv, range(3))
    first = _clear(conv)
    _add_tool_results(conv, range(3, 5))
    second = _clear(conv)  # clears the new results; the first ones stay as they were cleared
    assert conv.store is not None
    assert conv.store.delete_archives([first], reason="test") == [first]
    on_disk = conv.memory_md_path.read_bytes()  # type: ignore[union-attr]

    later = Conversation(agent_name="Cleared")
    (preload,) = later.entries(EntryKind.PRELOAD)
    texts = _cleared([m.content for m in read_memory(later.memory_md_path).messages])  # type: ignore[arg-type]
    assert len(texts) == 5 and not any(GONE in text for text in texts)  # the file: as written
    assert later.memory_md_path.read_bytes() == on_disk  # type: ignore[union-attr]
    said = preload["content"]
    assert said.count(f"archive/{first}{GONE}]") == 3  # the deleted archive's three
    assert said.count(f"archive/{second}]") == 2  # the archive that is still there: as written
    noted = [line for line in said.splitlines() if GONE in line]
    assert len(noted) == 3 and all(is_placeholder(PLACEHOLDER, line) for line in noted)
    # Never cleared again by the next compaction: a noted placeholder is still a placeholder.
    entries = later.compaction_entries(preload_as_messages=True)
    assert sum(GONE in str(entry["content"]) for entry in entries) == 3
    assert ClearToolResults(keep_tool_results=0).plan(entries).cleared == ()


def test_retention_right_after_the_compaction_says_so_in_the_live_history() -> None:
    conv = Conversation(agent_name="Kept0", retention=RetentionPolicy(max_archives=0))
    _add_tool_results(conv, range(3))
    archive = _clear(conv)
    assert conv.store is not None and conv.store.paths.archives() == []  # deleted at once
    live = _cleared([str(entry["content"]) for entry in conv.conversation_history])
    assert len(live) == 3 and all(text.endswith(f"archive/{archive}{GONE}]") for text in live)
    sent = "\n".join(str(m["content"]) for m in conv.to_messages())
    assert sent.count(GONE) == 3
    document = read_memory(conv.memory_md_path)  # type: ignore[arg-type]
    assert isinstance(document, MemoryDocument)
    on_disk = _cleared([m.content for m in document.messages])
    assert len(on_disk) == 3 and all(text.endswith(f"archive/{archive}]") for text in on_disk)
