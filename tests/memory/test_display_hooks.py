"""Rich displays: Conversation, MemoryDocument and CompactionEvent render escaped HTML."""

from __future__ import annotations

from memorylab import Conversation, read_memory


def test_html_reprs_escape_content_and_show_the_essentials() -> None:
    conv = Conversation(agent_name="Shown")
    conv.add("User", "<script>alert(1)</script> deploy to /srv/app")
    html = conv._repr_html_()
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;" in html
    assert "/srv/app" in html and "Shown" in html
    event = conv.compact("user deploys to /srv/app")
    assert event.archive is not None and event.archive in event._repr_html_()
    doc = read_memory(conv.memory_md_path)  # type: ignore[arg-type]
    assert "user deploys to /srv/app" in doc._repr_html_()
    assert "Conversation(name='Shown_conversation'" in repr(conv)
