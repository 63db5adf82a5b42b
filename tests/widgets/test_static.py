"""A static rendering (nbconvert, GitHub, a notebook without its kernel) cannot show a widget
view: every widget's mimebundle carries one meaningful line as text/plain and text/html."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memorylab.widgets import CompactionStepper, MemoryExplorer, SummarizerArena, ThresholdTuner
from memorylab.widgets._common import View

VIEW = "application/vnd.jupyter.widget-view+json"


def _views(workspace: Path, messages: list[dict[str, Any]]) -> dict[str, View]:
    from memorylab.evaluate import cases_from_messages

    return {
        "MemoryExplorer('workspace', agent='alpha', 2 agent(s), ": MemoryExplorer(workspace),
        "ThresholdTuner('transcript', threshold=0.70, context_length=2,048, ": ThresholdTuner(
            messages, context_length=2048
        ),
        "SummarizerArena(1 case(s), 3 summarizer(s), not run yet)": SummarizerArena(
            cases_from_messages(messages[:8], id="etl")
        ),
        "CompactionStepper(message 0 of 17, 0 compaction(s), ": CompactionStepper(),
    }


def test_every_widget_has_a_one_line_static_fallback(
    workspace: Path, messages: list[dict[str, Any]]
) -> None:
    for start, view in _views(workspace, messages).items():
        bundle = view._repr_mimebundle_()
        assert bundle[VIEW]["model_id"] == view.widget.model_id  # the live view, in a kernel
        plain = bundle["text/plain"]
        assert plain == repr(view) and plain.startswith(start), plain
        assert "\n" not in plain and len(plain) <= 120
        assert "VBox(" not in plain  # not ipywidgets' repr of the box and its children
        assert bundle["text/html"].count("<div") == 1 and "run the notebook" in bundle["text/html"]
        assert str(workspace) not in plain and str(workspace) not in bundle["text/html"]
        view.close()


def test_the_line_is_escaped_html_and_follows_the_state(messages: list[dict[str, Any]]) -> None:
    tuner = ThresholdTuner(messages, context_length=2048, threshold=0.7)
    tuner.source.name = "<b>etl</b>"
    html = tuner._repr_mimebundle_()["text/html"]
    assert "&lt;b&gt;etl&lt;/b&gt;" in html and "<b>" not in html
    tuner.threshold_slider.value = 0.45
    assert "threshold=0.45" in tuner._repr_mimebundle_()["text/plain"]


def test_a_closed_widget_still_has_its_line() -> None:
    stepper = CompactionStepper()
    stepper.close()
    bundle = stepper._repr_mimebundle_()
    assert bundle["text/plain"].startswith("CompactionStepper(") and "text/html" in bundle


@pytest.mark.parametrize("include", [None, ["text/plain"]])
def test_ipython_formats_it_as_a_notebook_would(include: list[str] | None) -> None:
    from IPython.core.formatters import DisplayFormatter

    stepper = CompactionStepper()
    data, _ = DisplayFormatter().format(stepper, include=include)
    assert data["text/plain"].startswith("CompactionStepper(message 0 of 17")
    stepper.close()
