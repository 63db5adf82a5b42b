"""CompactionStepper: driven by its buttons, checked through its state."""

from __future__ import annotations

from pathlib import Path

import pytest

from memorylab.compress import ScriptedSummarizer
from memorylab.errors import InvalidSetting
from memorylab.widgets import CompactionStepper
from memorylab.widgets._stepper import DEMO_SCRIPT


def test_steps_one_message_at_a_time(tmp_path: Path) -> None:
    stepper = CompactionStepper(workspace=tmp_path)
    assert stepper.position == 0 and stepper.tokens == 0 and stepper.archives == []
    assert "Interaction Log" in stepper.memory_text
    stepper.next_button.click()
    assert stepper.position == 1 and stepper.progress.value == 1
    assert "port 5433" in stepper.memory_text and "port 5433" in stepper.history_view.value
    assert stepper.tokens > 0
    assert f"{stepper.tokens:,}</b> tokens" in stepper.bar.value
    assert "message 1 of" in stepper.status.value


def test_compaction_archives_and_reseeds(tmp_path: Path) -> None:
    stepper = CompactionStepper(workspace=tmp_path)
    before = 0
    while not stepper.events:
        before = stepper.tokens
        stepper.step()
    event = stepper.last_event
    assert event is not None and event.ok
    assert before < stepper.trigger <= event.tokens_before  # fired at the threshold
    assert stepper.tokens < stepper.trigger
    assert stepper.archives == [event.archive]
    assert "[Compressed Memory Summary]" in stepper.memory_text
    assert f"**Continues:** {event.archive}" in stepper.memory_text
    assert "← new" in stepper.archive_view.value
    assert "compaction fired" in stepper.bar.value
    assert "messages archived" in stepper.status.value
    assert event.archive in stepper.event_view.value
    archived = (stepper.memory_path.parent / "archive" / event.archive).read_text()
    assert "port 5433" in archived


def test_run_to_compaction_and_the_end(tmp_path: Path) -> None:
    stepper = CompactionStepper(workspace=tmp_path)
    stepper.run_button.click()
    assert len(stepper.events) == 1
    while not stepper.done:
        stepper.run_button.click()
    assert stepper.position == len(DEMO_SCRIPT)
    assert stepper.next_button.disabled and stepper.run_button.disabled
    assert stepper.step() is None and stepper.run_to_compaction() is None
    assert len(stepper.archives) == len(stepper.events) >= 2
    assert "the script is over" in stepper.status.value


def test_reset_starts_again(tmp_path: Path) -> None:
    stepper = CompactionStepper(workspace=tmp_path)
    stepper.run_to_compaction()
    stepper.reset_button.click()
    assert stepper.position == 0 and stepper.events == [] and stepper.archives == []
    assert not stepper.next_button.disabled


def test_deterministic_files(tmp_path: Path) -> None:
    first, second = (CompactionStepper(workspace=tmp_path / name) for name in "ab")
    for stepper in (first, second):
        stepper.run_to_compaction()
    assert first.archives == second.archives == ["history_2026-01-05_09-09-30Z.md"]
    assert first.memory_text == second.memory_text


def test_custom_script_and_summarizer(tmp_path: Path) -> None:
    script = [{"role": "User", "content": f"note {i}: " + "word " * 30} for i in range(6)]
    summarizer = ScriptedSummarizer(["everything so far, in one line"])
    stepper = CompactionStepper(
        script, workspace=tmp_path, context_length=200, threshold=0.5, summarizer=summarizer
    )
    event = stepper.run_to_compaction()
    assert event is not None and event.summarizer_model == "memorylab/scripted"
    assert "everything so far, in one line" in stepper.memory_text
    assert len(summarizer.calls) == 1


def test_temporary_workspace_is_removed_on_close() -> None:
    stepper = CompactionStepper()
    folder = stepper.workspace
    stepper.step()
    assert folder.is_dir()
    stepper.close()
    assert not folder.exists()


def test_empty_script_is_refused() -> None:
    with pytest.raises(InvalidSetting):
        CompactionStepper([])
