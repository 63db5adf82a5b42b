"""The notebooks' stored outputs: no absolute path of the machine that ran them, no widget
state, and a one-line static fallback for every widget they end with."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest

NOTEBOOKS = sorted((Path(__file__).parents[2] / "notebooks").glob("*.ipynb"))
VIEW = "application/vnd.jupyter.widget-view+json"


def _machine_paths() -> re.Pattern[str]:
    """Folders whose absolute paths say where and by whom a notebook was run."""
    roots = {"/work/", "/tmp/", "/root/", "/home/", "/Users/", "/private/var/", "/var/folders/"}
    roots |= {str(Path.home()).rstrip("/") + "/", tempfile.gettempdir().rstrip("/") + "/"}
    roots.add(str(Path(__file__).parents[2]).rstrip("/") + "/")
    windows = r"[A-Za-z]:\\\\Users\\\\"  # as stored in JSON
    return re.compile("|".join([*(re.escape(r) for r in sorted(roots)), windows]))


def _stored(notebook: Path) -> dict[str, Any]:
    return json.loads(notebook.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def test_there_are_notebooks() -> None:
    assert len(NOTEBOOKS) >= 8


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_stored_outputs_hold_no_absolute_path(notebook: Path) -> None:
    pattern = _machine_paths()
    found = []
    data = _stored(notebook)
    for index, cell in enumerate(data["cells"]):
        for output in cell.get("outputs", []):
            for match in pattern.finditer(json.dumps(output, ensure_ascii=False)):
                found.append(f"cell {index}: {match.group(0)}")
    for match in pattern.finditer(json.dumps(data["metadata"], ensure_ascii=False)):
        found.append(f"metadata: {match.group(0)}")
    assert not found, f"{notebook.name} stores paths of this machine: {found[:5]}"


# Each notebook's widget (03 and 06 both end with the tuner: 06 with its strategy picker; 02
# and 07 with the explorer: 07 on its compactions' provenance).
WIDGETS = (
    "MemoryExplorer", "ThresholdTuner", "SummarizerArena", "CompactionStepper", "ThresholdTuner",
    "MemoryExplorer",
)  # fmt: skip


def test_widgets_are_stored_with_their_one_line_fallback() -> None:
    seen = []
    for notebook in NOTEBOOKS:
        data = _stored(notebook)
        assert "widgets" not in data["metadata"], notebook.name  # no widget state stored
        for cell in data["cells"]:
            for output in cell.get("outputs", []):
                shown = output.get("data", {})
                if VIEW not in shown:
                    continue
                plain = "".join(shown["text/plain"])
                name = plain.split("(", 1)[0]
                if name not in WIDGETS:  # e.g. a progress bar
                    continue
                seen.append(name)
                assert "\n" not in plain, plain
                html = "".join(shown.get("text/html", ""))
                assert plain.replace("'", "&#x27;") in html and "run the notebook" in html
    assert sorted(seen) == sorted(WIDGETS)  # each notebook's widget, once
