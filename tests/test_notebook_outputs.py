"""No stored notebook output holds a progress bar: a frozen bar (tqdm's text, or an ipywidgets
IntProgress/FloatProgress view) says nothing to a reader of the stored notebook and changes on
every run (issue 41: notebooks 06 and 07 stored some)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

NOTEBOOKS = sorted((Path(__file__).parents[1] / "notebooks").glob("*.ipynb"))
VIEW = "application/vnd.jupyter.widget-view+json"
PROGRESS_MODELS = ("IntProgress", "FloatProgress")
TQDM_TEXT = re.compile(r"\d%\||[0-9?.]+\s?(?:it|s)/(?:s|it)\]")
"""What tqdm's text bar holds: ``42%|████`` and its rate (``3.21it/s]``, ``1.5s/it]``,
``?it/s]``)."""


def _texts(output: dict[str, Any]) -> list[str]:
    """The text an output shows: a stream's, or each text/* (and error) representation."""
    if output.get("output_type") == "stream":
        text = output.get("text", "")
        return ["".join(text) if isinstance(text, list) else str(text)]
    if output.get("output_type") == "error":
        return ["\n".join(output.get("traceback", []))]
    data = output.get("data", {})
    texts = []
    for kind, value in data.items():
        if kind.startswith("text/"):
            texts.append("".join(value) if isinstance(value, list) else str(value))
    return texts


def progress_bars(notebook: dict[str, Any]) -> list[str]:
    """Where a stored notebook holds a progress bar: ``cell N: why`` for each."""
    state = notebook.get("metadata", {}).get("widgets", {})
    models = state.get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    progress_ids = {model_id for model_id, model in models.items()
                    if str(model.get("model_name", "")).removesuffix("Model") in PROGRESS_MODELS}  # fmt: skip
    found = []
    for index, cell in enumerate(notebook.get("cells", [])):
        for output in cell.get("outputs", []):
            for text in _texts(output):
                bar = TQDM_TEXT.search(text)
                if bar:
                    found.append(f"cell {index}: tqdm's bar {bar.group(0)!r}")
                elif any(f"{name}(" in text for name in PROGRESS_MODELS):
                    found.append(f"cell {index}: a progress widget's text")
            view = output.get("data", {}).get(VIEW, {})
            if view.get("model_id") in progress_ids:
                found.append(f"cell {index}: a progress widget's view")
    return found


def test_there_are_notebooks() -> None:
    assert len(NOTEBOOKS) >= 7


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_no_stored_output_holds_a_progress_bar(notebook: Path) -> None:
    found = progress_bars(json.loads(notebook.read_text(encoding="utf-8")))
    assert not found, (
        f"{notebook.name} stores progress bars ({'; '.join(found[:3])}): run it with "
        "progress=False (or MEMORYLAB_PROGRESS=0) and store it again (docs/notebooks.md)"
    )


def _notebook(*outputs: dict[str, Any], metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"cells": [{"cell_type": "code", "source": "", "outputs": list(outputs)}],
            "metadata": metadata or {}}  # fmt: skip


def test_what_a_real_progress_bar_stores_is_found() -> None:
    """The check finds what tqdm and ipywidgets really store: the text bar tqdm writes to
    stderr, the text/plain of a notebook bar (an HBox of a FloatProgress), and the view of a
    progress model kept in the notebook's widget state."""
    from tqdm import tqdm

    stream = io.StringIO()
    for _ in tqdm(range(3), file=stream, mininterval=0):
        pass
    written = {"output_type": "stream", "name": "stderr", "text": stream.getvalue()}
    assert progress_bars(_notebook(written)) == ["cell 0: tqdm's bar '0%|'"]

    import ipywidgets

    bar = ipywidgets.FloatProgress(value=0.5)
    plain = {"output_type": "display_data",
             "data": {"text/plain": repr(ipywidgets.HBox([bar]))}}  # fmt: skip
    assert progress_bars(_notebook(plain)) == ["cell 0: a progress widget's text"]
    state = {"application/vnd.jupyter.widget-state+json": {"state": {
        bar.model_id: {"model_name": "FloatProgressModel", "state": {}}}}}  # fmt: skip
    view = {"output_type": "display_data",
            "data": {VIEW: {"model_id": bar.model_id, "version_major": 2}}}  # fmt: skip
    assert progress_bars(_notebook(view, metadata={"widgets": state})) == [
        "cell 0: a progress widget's view"
    ]
    # a widget that is no progress bar, and a table of percentages, are not
    table = {"output_type": "execute_result",
             "data": {"text/markdown": "| a | 42% [30%, 50%] |", VIEW: {"model_id": "x"}}}  # fmt: skip
    assert progress_bars(_notebook(table)) == []
