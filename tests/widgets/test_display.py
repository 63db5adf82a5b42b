"""The pure rich-display functions of memorylab.memory._display."""

from __future__ import annotations

from datetime import UTC, datetime

from memorylab import CompactionEvent, Conversation, MemoryDocument, Message
from memorylab.compress import get_token_counter
from memorylab.memory import _display as display

WHEN = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def test_conversation_html_and_text_show_the_history() -> None:
    conv = Conversation(
        name="demo",
        system_prompt="Be brief.",
        memory_md_path=None,
        token_counter=get_token_counter(None),
    )
    conv.add("User", "<script>alert(1)</script> port 5433")
    html = display.conversation_html(conv)
    assert "Conversation <code>demo</code>" in html
    assert "&lt;script&gt;" in html and "<script>" not in html
    assert "static" in html  # the system prompt is tagged
    assert "tokens" in html and "memory only" in html
    text = display.conversation_text(conv)
    assert text.startswith("Conversation 'demo': 2 messages, ")
    assert "User: <script>alert(1)</script> port 5433" in text


def test_long_histories_show_head_and_tail() -> None:
    conv = Conversation(name="long", memory_md_path=None)
    for i in range(40):
        conv.add("User", f"message number {i}")
    html = display.conversation_html(conv, limit=6)
    assert "message number 0" in html and "message number 39" in html
    assert "message number 20" not in html
    assert "34 more messages" in html
    assert "34 more messages" in display.conversation_text(conv, limit=6)


def test_long_content_is_clipped() -> None:
    conv = Conversation(name="big", memory_md_path=None)
    conv.add("User", "x" * 5000)
    html = display.conversation_html(conv)
    assert "x" * display.MAX_CHARS not in html
    assert "…" in html


def test_document_html_marks_summaries_and_lineage() -> None:
    doc = MemoryDocument(
        conversation_name="agent_conversation",
        created=WHEN,
        messages=(
            Message("System", "[Compressed Memory Summary] the port is 5433", WHEN),
            Message("User", "and the path?", WHEN),
        ),
        format_version=1,
        continues="history_2026-01-05_09-00-00.md",
    )
    html = display.document_html(doc)
    assert "2 messages, 1 summary" in html
    assert "history_2026-01-05_09-00-00.md" in html and "memorylab/1" in html
    assert "summary</span>" in html
    text = display.document_text(doc)
    assert text.startswith("MemoryDocument: 2 messages; conversation=agent_conversation")
    assert "System [summary]: [Compressed Memory Summary] the port is 5433" in text


def test_reference_document_without_header() -> None:
    doc = MemoryDocument(conversation_name=None, created=None)
    assert "reference (no version)" in display.document_html(doc)
    assert "(no messages)" in display.document_html(doc)
    assert (
        display.document_text(doc) == "MemoryDocument: 0 messages; format=reference (no version)"
    )


def test_event_html_and_text() -> None:
    event = CompactionEvent(
        time=WHEN,
        agent="alpha",
        archive="history_2026-01-05_09-00-00.md",
        messages_archived=9,
        tokens_before=522,
        tokens_after=139,
        summary_tokens=120,
        threshold=0.7,
        context_length=700,
        summarizer_model="memorylab/extractive",
        latency_s=0.0012,
        cost_usd=0.0,
    )
    html = display.event_html(event)
    assert "CompactionEvent" in html and "522 → 139" in html and "memorylab/extractive" in html
    text = display.event_text(event)
    assert text.splitlines()[0] == "CompactionEvent (compaction, ok)"
    assert "  tokens: 522 → 139" in text and "  summarizer: memorylab/extractive" in text


def test_failed_event_shows_the_error() -> None:
    event = CompactionEvent(time=WHEN, error="SummarizerTimeout: <slow>", kind="failed")
    assert "SummarizerTimeout: &lt;slow&gt;" in display.event_html(event)
    text = display.event_text(event)
    assert "FAILED" in text and "  error: SummarizerTimeout: <slow>" in text
