"""docs/widgets.md's "Serving your own notebook": the command it documents serves a notebook of
one's own, and the page voila answers over HTTP on 127.0.0.1 holds the notebook's outputs and its
widget.

Needs voila (the ``browser`` extra), not a browser: the page is fetched with urllib. Skipped,
with the reason, when voila is not installed (the default test run installs only ``test``;
.ci/run's browser step installs ``browser`` and runs ``-m browser tests/browser``, this test
included).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

START_TIMEOUT_S = 300.0  # voila runs the notebook before it answers; generous for a loaded machine

MY_NOTEBOOK = """\
from memorylab.widgets import DEMO_SCRIPT, ThresholdTuner

tuner = ThresholdTuner([dict(m) for m in DEMO_SCRIPT] * 3, threshold=0.7, context_length=2048)
print(f"my notebook: {tuner.result.compactions} compaction(s) at {tuner.threshold}")
tuner"""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _write_notebook(path: Path) -> None:
    """A notebook as a user saves one: one code cell, no outputs, the python3 kernel."""
    cell = {"cell_type": "code", "execution_count": None, "id": "my-cell", "metadata": {},
            "outputs": [], "source": MY_NOTEBOOK}  # fmt: skip
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook = {"cells": [cell], "metadata": {"kernelspec": kernel}, "nbformat": 4,
                "nbformat_minor": 5}  # fmt: skip
    path.write_text(json.dumps(notebook, indent=1), encoding="utf-8")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes], Path]]:
    """docs/widgets.md's command, ``voila my_notebook.ipynb --port PORT --no-browser``, run in
    a folder holding the notebook; stopped afterwards."""
    if importlib.util.find_spec("voila") is None:
        pytest.skip("voila is not installed: pip install -e '.[browser]' (docs/widgets.md)")
    _write_notebook(tmp_path / "my_notebook.ipynb")
    port = _free_port()
    env = {**os.environ, "WORKSPACE_DIR": str(tmp_path / "workspace"),
           "MEMORYLAB_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "LITELLM_OFFLINE_MODE": "true", "JUPYTER_PLATFORM_DIRS": "1",
           "MPLBACKEND": "Agg"}  # fmt: skip
    log = tmp_path / "voila.log"
    # `voila` is the console script of the environment voila is installed in: sys.executable's
    command = [sys.executable, "-m", "voila", "my_notebook.ipynb", "--port", str(port),
               "--no-browser"]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=out,
                                   stderr=subprocess.STDOUT)  # fmt: skip
    try:
        yield f"http://127.0.0.1:{port}/", process, log
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _fetch(url: str, process: subprocess.Popen[bytes], log: Path) -> str:
    """The page at ``url`` once voila answers (it runs the notebook first)."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"voila exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=START_TIMEOUT_S) as answer:
                assert answer.status == 200
                return str(answer.read().decode("utf-8"))
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.5)  # not listening yet
    pytest.fail(f"voila did not answer within {START_TIMEOUT_S:.0f} s:\n{log.read_text()[-3000:]}")


def test_voila_serves_ones_own_notebook_with_its_widget(
    served: tuple[str, subprocess.Popen[bytes], Path],
) -> None:
    url, process, log = served
    page = _fetch(url, process, log)
    said = re.search(r"my notebook: (\d+) compaction\(s\) at 0\.7", page)
    assert said, f"the cell's output is not in the page:\n{page[-2000:]}"
    assert int(said.group(1)) >= 1
    # the widget: its view for the page's widget manager, and its one line for a reader without
    assert "application/vnd.jupyter.widget-view+json" in page
    assert "ThresholdTuner(" in page and "context_length=2,048" in page
    assert '"output_type": "error"' not in page and "Traceback" not in page
    assert process.poll() is None  # still serving: the page's widgets talk to its kernel
