"""ThresholdTuner: sliders drive replay and sweep; state is read back headless."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from memorylab import Agent, Conversation
from memorylab.llm import ChatReply
from memorylab.transcripts import Fact, Transcript, TranscriptMessage, save_transcript
from memorylab.widgets import ThresholdTuner

PNG = b"\x89PNG"


def test_initial_state(messages: list[dict[str, Any]]) -> None:
    tuner = ThresholdTuner(messages, context_length=2048, threshold=0.7)
    assert tuner.threshold == 0.7 and tuner.context_length == 2048
    assert tuner.result is not None and tuner.result.trigger == 1434
    assert tuner.result.compactions >= 1
    assert bytes(tuner.image.value).startswith(PNG) and bytes(tuner.sweep_image.value).startswith(
        PNG
    )
    assert tuner.axes is not None and "threshold 0.70" in tuner.axes.get_title()
    table = tuner.sweep_table
    assert table is not None
    assert [float(t) for t in table["threshold"]] == [0.5, 0.6, 0.7, 0.8, 0.9]
    assert set(table["mode"]) == {"replay"}
    assert 'class="mlab-hl"><td class="mlab-label"></td><td>0.70</td>' in tuner.table.value
    assert f"<b>{tuner.result.compactions}</b> compaction(s)" in tuner.summary.value
    assert "Every setting replayed exactly" in tuner.table.value
    assert tuner.updates == 1 and tuner.error is None


def test_threshold_slider_updates_plot_and_table(messages: list[dict[str, Any]]) -> None:
    tuner = ThresholdTuner(messages, context_length=2048, threshold=0.7)
    assert tuner.result is not None
    image, html, compactions = tuner.image.value, tuner.table.value, tuner.result.compactions
    tuner.threshold_slider.value = 0.45
    assert tuner.updates == 2
    assert tuner.result.threshold == 0.45 and tuner.result.compactions > compactions
    assert tuner.image.value != image and tuner.table.value != html
    assert 0.45 in [float(t) for t in tuner.sweep_table["threshold"]]  # type: ignore[index]
    assert 'class="mlab-hl"><td class="mlab-label"></td><td>0.45</td>' in tuner.table.value
    assert tuner.axes is not None and "threshold 0.45" in tuner.axes.get_title()


def test_context_length_and_fast_mode(messages: list[dict[str, Any]]) -> None:
    tuner = ThresholdTuner(messages, context_length=2048)
    tuner.context_slider.value = 4096
    assert tuner.result is not None and tuner.result.context_length == 4096
    assert set(tuner.sweep_table["context_length"]) == {4096}  # type: ignore[index]
    tuner.mode_picker.value = "fast"
    assert tuner.fast is True
    table = tuner.sweep_table
    assert table is not None
    modes = dict(zip(table["threshold"], table["mode"], strict=True))
    assert modes.pop(tuner.threshold) == "replay"  # the slider's row: exact, as the headline
    assert set(modes.values()) == {"fast"}
    assert "Fast sweep" in tuner.table.value and "within ±" in tuner.table.value
    assert tuner.updates == 3


def test_context_lengths_offered_include_the_given_one(messages: list[dict[str, Any]]) -> None:
    tuner = ThresholdTuner(messages, context_length=3000, context_lengths=(2048, 8192))
    assert [value for _, value in tuner.context_slider.options] == [2048, 3000, 8192]


def test_offered_summarizers(
    messages: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert ThresholdTuner(messages).summarizer_picker.options == ("memorylab/extractive",)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    tuner = ThresholdTuner(messages, context_length=2048)
    assert tuner.summarizer_picker.options == ("memorylab/extractive", "gpt-4o-mini")
    monkeypatch.setenv("MEMORYLAB_OFFLINE", "1")
    assert ThresholdTuner(messages).summarizer_picker.options == ("memorylab/extractive",)


def test_summarizer_choice_is_used(messages: list[dict[str, Any]]) -> None:
    tuner = ThresholdTuner(
        messages, context_length=2048, summarizers=["memorylab/extractive", "memorylab/scripted"]
    )
    tuner.summarizer_picker.value = "memorylab/scripted"
    assert tuner.result is not None and tuner.result.summarizer == "memorylab/scripted"


def _transcript(tmp_path: Path, messages: list[dict[str, Any]]) -> Path:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    transcript = Transcript(
        name="demo",
        seed=1,
        description="the demo script",
        messages=tuple(
            TranscriptMessage(1, m["role"], m["content"], start + timedelta(minutes=i))
            for i, m in enumerate(messages)
        ),
        facts=(
            Fact("f1", "number", "5433", 0),
            Fact("f2", "path", "/srv/etl/cache/ecb_rates.csv", 8),
        ),
    )
    return save_transcript(transcript, tmp_path / "demo.jsonl")


def test_transcript_file_gives_fact_survival(
    tmp_path: Path, messages: list[dict[str, Any]]
) -> None:
    tuner = ThresholdTuner(_transcript(tmp_path, messages), context_length=2048)
    assert tuner.facts == ["5433", "/srv/etl/cache/ecb_rates.csv"]
    assert "fact_survival" in tuner.sweep_table.columns  # type: ignore[union-attr]
    assert "facts kept" in tuner.table.value and "planted facts" in tuner.summary.value


def test_conversation_source(messages: list[dict[str, Any]]) -> None:
    conv = Conversation(name="c", system_prompt="static, left out", memory_md_path=None)
    for m in messages:
        conv.add(m["role"], m["content"])
    tuner = ThresholdTuner(conv, context_length=2048)
    assert tuner.result is not None and len(tuner.result.frame) == len(messages)


def test_agent_source_uses_its_settings(isolated_workspace: Path) -> None:
    def completion(model: str, messages: list[dict[str, Any]], **_: Any) -> ChatReply:
        return ChatReply(content="Done: the port is 5433 and the path is /srv/etl/out. " * 4)

    agent = Agent(
        agent_name="worker",
        model_name="gpt-4o",
        context_length=1024,
        compression_threshold=0.6,
        summarizer_model="memorylab/extractive",
        completion=completion,
    )
    for i in range(12):
        agent.run(f"step {i}: write the next part of the report")
    tuner = ThresholdTuner(agent)
    assert tuner.context_length == 1024 and tuner.threshold == 0.6 and tuner.model == "gpt-4o"
    assert tuner.source.name == "worker"
    assert tuner.result is not None and len(tuner.result.frame) == 24


def test_errors_are_reported_not_raised(messages: list[dict[str, Any]]) -> None:
    tuner = ThresholdTuner(messages, context_length=2048, summarizers=["memorylab/nope"])
    assert tuner.error is not None and "memorylab/nope" in tuner.error
    assert "InvalidSetting" in tuner.status.value
    assert tuner.result is None


def _highlighted(tuner: ThresholdTuner) -> Any:
    table = tuner.sweep_table
    assert table is not None
    rows = table[[abs(float(t) - tuner.threshold) < 1e-9 for t in table["threshold"]]]
    assert len(rows) == 1
    return rows.iloc[0]


@pytest.mark.parametrize("fast", [None, False, True])
def test_the_widget_shows_what_the_functions_return(
    messages: list[dict[str, Any]], fast: bool | None
) -> None:
    """The headline and the highlighted row are the same replay, and both are what
    replay() and sweep() return for the controls' values."""
    from memorylab.analysis import replay, sweep

    tuner = ThresholdTuner(messages, context_length=2048, threshold=0.6, fast=fast)
    direct = replay(messages, threshold=0.6, context_length=2048)
    assert tuner.result is not None
    assert tuner.result.compactions == direct.compactions
    assert tuner.result.peak_context_tokens == direct.peak_context_tokens
    row = _highlighted(tuner)
    assert row["compactions"] == direct.compactions  # the headline's figure
    assert row["total_input_tokens"] == direct.total_input_tokens
    assert f"<b>{direct.compactions}</b> compaction(s)" in tuner.summary.value
    table = sweep(messages, tuner.thresholds, [2048], fast=fast, replay_at=[0.6])
    pd.testing.assert_frame_equal(
        tuner.sweep_table.drop(columns="recorded"),  # type: ignore[union-attr]
        table.frame.drop(columns="recorded"),
    )


def test_a_recorded_run_marks_the_agents_setting() -> None:
    from memorylab.transcripts import bundled_workspace

    folder = bundled_workspace("memorylab") / "agents" / "BugHunter"
    tuner = ThresholdTuner(folder)
    assert tuner.threshold == 0.85 and tuner.context_length == 2800
    assert tuner.model == "gpt-4o-mini"
    table = tuner.sweep_table
    assert table is not None and table["recorded"].sum() == 1
    assert "the agent&#x27;s setting" in tuner.table.value
    assert "the agent ran at 0.85 of 2,800" in tuner.axes.get_title()  # type: ignore[union-attr]
    row = _highlighted(tuner)
    assert bool(row["recorded"]) and row["compactions"] == 5  # what BugHunter recorded
    tuner.context_slider.value = 4096
    assert not tuner.sweep_table["recorded"].any()  # type: ignore[index]


def test_peaks_above_the_window_are_flagged(messages: list[dict[str, Any]]) -> None:
    """At threshold 1.0 of 2,048 tokens the demo transcript peaks above the window: the sweep
    and the replay say so, and the widget flags it in red, with a line of text."""
    from memorylab.analysis import replay, sweep

    direct = sweep(messages, [0.5, 0.6, 0.7, 0.8, 0.9, 1.0], [2048])
    over = direct.frame[direct.frame["peak_context_tokens"] > 2048]
    assert list(over["threshold"]) == [1.0]  # what the analysis functions report
    tuner = ThresholdTuner(messages, context_length=2048, threshold=1.0)
    assert tuner.above_window == [1.0]
    peak = int(over["peak_context_tokens"].iloc[0])
    assert "Peak above the 2,048-token window at threshold(s) 1.00" in tuner.table.value
    assert f'<td class="mlab-flag">{peak:,}</td>' in tuner.table.value
    assert tuner.table.value.count('class="mlab-flag"') == 1  # only the row above the window
    result = replay(messages, threshold=1.0, context_length=2048)
    assert tuner.result is not None and tuner.result.peak_context_tokens == peak == (
        result.peak_context_tokens
    )
    assert f"The context peaks at {peak:,} tokens, {peak - 2048:,} above" in tuner.summary.value
    assert f'color:#cf222e;font-weight:600">{peak:,}</span>' in tuner.summary.value
    legend = tuner.sweep_figure.axes[0].get_legend()  # type: ignore[union-attr]
    assert "peak above the window" in [t.get_text() for t in legend.get_texts()]
    assert tuner.axes is not None and any(
        "above the window" in t.get_text() for t in tuner.axes.get_legend().get_texts()
    )
    tuner.threshold_slider.value = 0.7  # the sweep's rows: 0.5 … 0.9 and the slider's
    assert tuner.above_window == [] and "above the" not in tuner.summary.value
    swept = ThresholdTuner(messages, context_length=2048, threshold=0.7,
                           thresholds=(0.5, 0.7, 1.0))  # fmt: skip
    assert swept.above_window == [1.0] and "above the" not in swept.summary.value
    assert "at threshold(s) 1.00" in swept.table.value  # a row other than the slider's
    tuner.context_slider.value = 4096
    assert tuner.above_window == [] and 'mlab-flag">' not in tuner.table.value
    assert "Peak above" not in tuner.table.value


def test_the_tuner_and_the_sweep_table_write_thresholds_alike(
    messages: list[dict[str, Any]],
) -> None:
    """One threshold text: the tuner's table, its plot title and sweep_table agree."""
    from memorylab.analysis import sweep, sweep_table

    tuner = ThresholdTuner(messages, context_length=2048, threshold=0.6, thresholds=(0.5, 0.875))
    shown = sweep_table(sweep(messages, [0.5, 0.6, 0.875], [2048]))
    assert list(shown["threshold"]) == ["0.50", "0.60", "0.875"]
    for text in shown["threshold"]:
        assert f"<td>{text}</td>" in tuner.table.value
    assert "threshold 0.60 of 2,048" in tuner.axes.get_title()  # type: ignore[union-attr]


def test_exact_replays_say_how_long_before_the_wait(messages: list[dict[str, Any]]) -> None:
    tuner = ThresholdTuner(messages, context_length=2048)
    shown: list[str] = []
    tuner.status.observe(lambda change: shown.append(change["new"]), names="value")
    tuner.mode_picker.value = "exact"
    assert tuner.fast is False and set(tuner.sweep_table["mode"]) == {"replay"}  # type: ignore[index]
    during = [text for text in shown if "exact replay" in text]
    assert during and re.search(r"computing \d+ exact replays of [\d,]+ messages: ", during[0])
    assert "updated" in shown[-1]
    assert [label for label, _ in tuner.mode_picker.options][tuner.mode_picker.index] == (
        "exact replays"
    )


def test_the_sweep_picker_shows_its_mode_from_the_start(messages: list[dict[str, Any]]) -> None:
    assert ThresholdTuner(messages).mode_picker.label == "exact when it fits"
    assert ThresholdTuner(messages, fast=True).mode_picker.label == "fast (modelled)"


def test_the_strategy_picker_replays_and_sweeps_the_strategy(
    messages: list[dict[str, Any]],
) -> None:
    tuner = ThresholdTuner(messages, context_length=2048, strategies=["summary", "trim"])
    assert tuner.strategy is None and tuner.strategy_picker.label == "the run's own"
    plain = tuner.result
    assert plain is not None and plain.strategy == "summary()"
    tuner.strategy_picker.value = "trim(keep_fraction=0.5)"
    assert tuner.result is not None and tuner.result.strategy == "trim(keep_fraction=0.5)"
    assert set(tuner.sweep_table["strategy"]) == {"trim(keep_fraction=0.5)"}  # type: ignore[index]
    assert tuner.result.summarizer_calls == 0
    assert tuner.axes is not None and "trim(keep_fraction=0.5)" in tuner.axes.get_title()


def test_a_run_with_recorded_usage_shows_its_calibration_and_the_cached_cost() -> None:
    """Issue 29: beside the replay, what the recorded usage says of the trigger (the
    calibration's lines), and the sweep's cost with and without prompt caching."""
    from memorylab.analysis import calibration_audit
    from memorylab.transcripts import bundled_workspace

    folder = bundled_workspace() / "agents" / "BugHunter"
    tuner = ThresholdTuner(folder)
    lines = calibration_audit(folder).notes()
    assert tuner.calibration == lines and lines
    text = re.sub(r"<[^>]+>", " ", tuner.summary.value)
    assert all(line in text for line in lines)
    table = tuner.sweep_table
    assert (table["estimated_cost_usd"] < table["uncached_cost_usd"]).all()  # gpt-4o-mini caches
    low, high = table["uncached_cost_usd"].min(), table["uncached_cost_usd"].max()
    assert f"without the cache: ${low:.4f} to ${high:.4f}" in tuner.table.value


def test_a_source_without_recorded_usage_has_no_calibration(messages: list[dict[str, Any]]) -> None:
    tuner = ThresholdTuner(messages)
    assert tuner.calibration == [] and "without the cache" not in tuner.table.value
