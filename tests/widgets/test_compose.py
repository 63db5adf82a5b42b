"""Each widget IS an ipywidgets box (issue 28): it composes like any widget — in a VBox, an
HBox, a Tab's children — keeps the names docs/widgets.md documents, and closes with everything
in it."""

from __future__ import annotations

import gc
import warnings
from pathlib import Path
from types import FunctionType
from typing import Any

import ipywidgets
import pytest

from memorylab.errors import InvalidSetting
from memorylab.widgets import CompactionStepper, MemoryExplorer, SummarizerArena, ThresholdTuner
from memorylab.widgets._common import View, widget_tree

VIEW = "application/vnd.jupyter.widget-view+json"
VIEWS = (CompactionStepper, MemoryExplorer, SummarizerArena, ThresholdTuner)


def test_widgets_compose_in_boxes_and_tabs(workspace: Path, messages: list[dict[str, Any]]) -> None:
    tuner = ThresholdTuner(messages[:34], context_length=2048)
    stepper = CompactionStepper()
    explorer = MemoryExplorer(workspace)
    column = ipywidgets.VBox([tuner, stepper])  # raised TraitError before: .widget was needed
    row = ipywidgets.HBox([stepper, tuner])
    tabs = ipywidgets.Tab(children=[explorer])
    tabs.set_title(0, "explorer")
    assert column.children == (tuner, stepper) and row.children == (stepper, tuner)
    assert tabs.children == (explorer,) and tabs.get_title(0) == "explorer"
    # What a frontend is sent: the box names each widget's model, which holds its own children.
    assert column.get_state()["children"] == [f"IPY_MODEL_{tuner.model_id}",
                                              f"IPY_MODEL_{stepper.model_id}"]  # fmt: skip
    assert f"IPY_MODEL_{stepper.progress.model_id}" in stepper.get_state()["children"]
    assert column._repr_mimebundle_()[VIEW]["model_id"] == column.model_id
    # The controls still drive the view inside the box.
    stepper.next_button.click()
    tuner.threshold_slider.value = 0.5
    assert stepper.position == 1 and tuner.result is not None and tuner.result.trigger == 1024
    for box in (column, row, tabs):
        box.close()
    for view in (tuner, stepper, explorer):
        view.close()


def test_each_widget_is_a_vbox_and_widget_is_itself(
    workspace: Path, messages: list[dict[str, Any]]
) -> None:
    from memorylab.evaluate import cases_from_messages

    views: list[View] = [
        ThresholdTuner(messages[:34], context_length=2048),
        CompactionStepper(),
        MemoryExplorer(workspace),
        SummarizerArena(cases_from_messages(messages[:8], id="etl")),
    ]
    for view in views:
        assert isinstance(view, ipywidgets.VBox) and view.widget is view
        assert view.children and view.status in widget_tree(view)
        assert view.error is None
        view.close()


@pytest.mark.parametrize("cls", VIEWS, ids=lambda c: c.__name__)
def test_no_name_of_ours_hides_a_trait_or_method_of_the_box(cls: type[View]) -> None:
    """Our attributes and methods must not shadow ipywidgets' (layout, children, keys, comm,
    log, ...): a widget's state would silently break, or its frontend model."""
    box = set(dir(ipywidgets.VBox)) | set(ipywidgets.VBox.class_trait_names())
    ours = {  # what our classes define (not what traitlets' metaclass adds to every class)
        name
        for klass in cls.__mro__
        if klass.__module__.startswith("memorylab")
        for name, value in vars(klass).items()
        if not name.startswith("_") or isinstance(value, FunctionType | property)
    }
    assert {"close", "widget", "error", "_report"} <= ours
    assert (ours & box) - {"__init__", "__repr__", "close", "_repr_mimebundle_"} == set()


def test_documented_attributes_are_ours_not_traits(
    workspace: Path, messages: list[dict[str, Any]]
) -> None:
    """The public state docs/widgets.md names is still the widget's own, not a trait."""
    tuner = ThresholdTuner(messages[:34], context_length=2048)
    stepper = CompactionStepper()
    explorer = MemoryExplorer(workspace)
    documented = {
        tuner: ("threshold_slider", "context_slider", "summarizer_picker", "mode_picker",
                "strategy_picker", "image", "sweep_image", "summary", "table", "status",
                "result", "sweep_table", "figure", "axes", "sweep_figure", "above_window",
                "updates", "source", "model", "facts", "thresholds"),
        stepper: ("next_button", "run_button", "reset_button", "progress", "bar",
                  "history_view", "memory_view", "archive_view", "event_view", "status",
                  "conversation", "compressor", "position", "script", "workspace"),
        explorer: ("agent_picker", "segment_picker", "role_picker", "search_box", "case_picker",
                   "page_size_picker", "previous_button", "next_button", "tabs", "header",
                   "table_view", "image", "status", "frame", "problems", "table", "source"),
    }  # fmt: skip
    for view, names in documented.items():
        for name in names:
            assert not view.has_trait(name), f"{type(view).__name__}.{name} is a trait"
            assert name in vars(view), f"{type(view).__name__}.{name} is missing"
        view.close()


def test_closing_closes_everything_inside_and_keeps_the_line(
    messages: list[dict[str, Any]],
) -> None:
    tuner = ThresholdTuner(messages[:34], context_length=2048)
    stepper = CompactionStepper()
    folder = stepper.workspace
    box = ipywidgets.VBox([tuner, stepper])
    inside = [*widget_tree(tuner), *widget_tree(stepper)]
    assert len(inside) > 40 and all(w.comm is not None for w in inside)
    # ipywidgets closes no child of a closed box: the views are gone from the page with it,
    # the widgets live on until closed themselves.
    box.close()
    assert box.comm is None and tuner.comm is not None
    tuner.close()
    stepper.close()
    assert all(w.comm is None for w in inside)  # every control, image, layout and style
    assert not folder.exists()  # the stepper's temporary workspace went with it
    for view in (tuner, stepper):  # a closed widget: its one line, no view
        bundle = view._repr_mimebundle_()
        assert VIEW not in bundle and bundle["text/plain"] == repr(view)
    tuner.close()  # twice is fine


def test_a_widget_that_fails_to_build_leaves_no_error_behind() -> None:
    """ipywidgets closes a widget when it is collected (``__del__``): a stepper whose
    construction failed must close quietly (pytest would report the unraisable error)."""
    with pytest.raises(InvalidSetting, match="at least one message"):
        CompactionStepper(script=[])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gc.collect()
