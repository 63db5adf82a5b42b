"""Compaction hooks (issue 38): ``before_compaction`` is shown the plan and the facts that will
leave the context and may keep entries; ``after_compaction`` gets the event; both are recorded,
and a replay keeps what the hook kept without the callback."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from live_agent import replayed, reproduces, run_live

from memorylab import Conversation, read_memory
from memorylab.compress import (
    CompactionPreview,
    ContextCompressor,
    ScriptedSummarizer,
    get_token_counter,
)
from memorylab.errors import InvalidSetting
from memorylab.memory import CompactionEvent

COUNTER = get_token_counter("gpt-4o")


def _history(name: str) -> Conversation:
    conv = Conversation(agent_name=name, token_counter=COUNTER, system_prompt="You migrate.")
    conv.add("User", "Dump the schema: run `pg_dump -s billing` into /tmp/schema.sql.")
    conv.add(name, "Done. We decided to use Postgres 16 for the new cluster.")
    conv.add("User", "Which port does the replica listen on?")
    conv.add(name, "The replica listens on 5433, see /etc/postgresql/replica.conf.")
    conv.add("User", "Now copy /srv/etl/rows.csv to the staging bucket.")
    return conv


def _compressor(**hooks: object) -> ContextCompressor:
    return ContextCompressor(
        summarizer=ScriptedSummarizer(["Migrating billing to Postgres 16."]), **hooks
    )  # type: ignore[arg-type]


def test_the_preview_lists_the_facts_of_what_leaves() -> None:
    conv = _history("Previewed")
    seen: list[CompactionPreview] = []
    compressor = _compressor(before_compaction=seen.append)
    event = compressor.compress(conv, 10_000, force=True)
    assert event is not None and event.ok, event
    (preview,) = seen
    assert preview.plan.summarize == (0, 1, 2, 3) and preview.plan.keep == (4,)  # the turn kept
    assert preview.tokens_before == event.tokens_before and preview.context_length == 10_000
    assert preview.strategy is compressor.strategy
    leaving = {(fact.category, fact.text) for fact in preview.leaving}
    assert {("command", "pg_dump -s billing"), ("path", "/tmp/schema.sql"),
            ("path", "/etc/postgresql/replica.conf"), ("number", "5433")} <= leaving  # fmt: skip
    assert not any("rows.csv" in text for _, text in leaving)  # the turn stays
    for fact in preview.leaving:  # each names the entry it leaves with
        assert fact.message_index is not None
        assert fact.text in str(preview.entries[fact.message_index]["content"])
    with pytest.raises(TypeError):
        preview.entries[0]["content"] = "changed"  # type: ignore[index]
    assert conv.compaction_entries()[-1]["content"].startswith("Now copy")


def test_entries_a_hook_keeps_are_in_the_new_memory_md_verbatim() -> None:
    conv = _history("Hooked")
    events: list[CompactionEvent] = []

    def keep_decisions(preview: CompactionPreview) -> list[int]:
        return [f.message_index for f in preview.leaving if f.category == "decision"]  # type: ignore[misc]

    compressor = _compressor(before_compaction=keep_decisions, after_compaction=events.append)
    event = compressor.compress(conv, 10_000, force=True)
    assert event is not None and event.ok and events == [event]
    written = [(m.role, m.content) for m in read_memory(conv.memory_md_path).messages]  # type: ignore[arg-type]
    assert written[1:] == [
        ("Hooked", "Done. We decided to use Postgres 16 for the new cluster."),
        ("User", "Now copy /srv/etl/rows.csv to the staging bucket."),
    ]
    kept_at = conv.conversation_history[2]["timestamp"]
    hooks = conv.store.records()[-1]["extra"]["hooks"]  # type: ignore[union-attr]
    assert hooks == {
        "before": "test_entries_a_hook_keeps_are_in_the_new_memory_md_verbatim.<locals>."
        "keep_decisions",
        "after": "list.append",
        "kept": [{"role": "Hooked", "timestamp": kept_at}],
    }


@pytest.mark.parametrize(
    ("hook", "error"),
    [
        (lambda preview: 1 / 0, "ZeroDivisionError"),
        (lambda preview: "all of them", "before_compaction must return None or an iterable"),
        (lambda preview: [99], "each in 0..4"),
    ],
    ids=["raises", "returns a string", "returns a position out of range"],
)
def test_a_failing_hook_changes_nothing(hook: object, error: str) -> None:
    conv = _history("Failing")
    folder = conv.memory_md_path.parent  # type: ignore[union-attr]
    before = (folder / "MEMORY.md").read_bytes()
    history = list(conv.conversation_history)
    compressor = _compressor(before_compaction=hook)
    event = compressor.compress(conv, 10_000, force=True)
    assert event is not None and not event.ok and error in str(event.error)
    assert (folder / "MEMORY.md").read_bytes() == before
    assert not (folder / "archive").exists() and not (folder / "compactions.jsonl").exists()
    assert conv.conversation_history == history
    assert compressor.failures == 1  # the usual back-off: the next check is skipped
    assert compressor.compress(conv, 100, force=False) is None


def test_an_after_hook_that_raises_is_logged_and_the_compaction_stands(
    caplog: pytest.LogCaptureFixture,
) -> None:
    conv = _history("AfterFails")

    def broken(event: CompactionEvent) -> None:
        raise RuntimeError("dashboard down")

    with caplog.at_level(logging.WARNING, logger="memorylab"):
        event = _compressor(after_compaction=broken).compress(conv, 10_000, force=True)
    assert event is not None and event.ok
    assert "after_compaction" in caplog.text and "dashboard down" in caplog.text


def test_hooks_are_checked() -> None:
    with pytest.raises(InvalidSetting, match="before_compaction must be a function"):
        ContextCompressor(before_compaction="keep")  # type: ignore[arg-type]
    with pytest.raises(InvalidSetting, match="after_compaction must be a function"):
        ContextCompressor(after_compaction=3)  # type: ignore[arg-type]


def test_a_hooked_live_run_and_its_replay_without_the_callback_agree(tmp_path: Path) -> None:
    def keep_the_first_task(preview: CompactionPreview) -> list[int]:
        return [i for i, e in enumerate(preview.entries) if str(e["content"]).startswith("Task 0:")]

    run = run_live(tmp_path, "LiveHooked", seed=2, before_compaction=keep_the_first_task)
    assert len(run.records) >= 3
    hooks = [r["extra"]["hooks"] for r in run.records]
    assert all(h["before"].endswith("keep_the_first_task") for h in hooks)
    assert all(len(h["kept"]) == 1 for h in hooks)  # the first task, at every compaction
    task = next(m for m in read_memory(run.folder / "MEMORY.md").messages if m.role == "User")
    assert task.content.startswith("Task 0:")
    result = replayed(run)
    assert result.settings is not None and len(result.settings.hook_kept) == len(run.records)
    assert reproduces(run, result), (run.tokens_before, [e.tokens_before for e in result.events])
    assert task.content in result.final_context
