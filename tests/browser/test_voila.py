"""Real-browser test: voila serves a notebook's widgets, headless Chromium drives them.

Needs the ``browser`` extra (voila, playwright) and Debian's ``chromium`` at /usr/bin/chromium
(or ``$MEMORYLAB_CHROMIUM``); skipped, with the reason, when any of them is missing. Playwright
never downloads a browser here: it launches the system one with the flags of OFFLINE.md.
Screenshots go to ``$MEMORYLAB_ARTIFACTS`` (default: the system temp folder's
``memorylab-artifacts``).

Besides driving the widgets, it checks that they read right at the page widths people use
(1,000 and 1,300 px, and the ~600 px of JupyterLab's notebook column beside its file browser):
nothing cut, nothing covered, no empty dropdown; and that the HTML report (``memorylab report``)
reads right opened from disk, for the bundled workspace and for one the real reference package
(swarms 16.0.3, ``$MEMORYLAB_SWARMS_PYTHON``) wrote.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.browser

HERE = Path(__file__).parent
CHROMIUM = os.environ.get("MEMORYLAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
START_TIMEOUT_S = 90.0
WIDGET_TIMEOUT_MS = 60_000


def _missing() -> str | None:
    for module, what in (("voila", "voila"), ("playwright", "playwright (Python)")):
        if importlib.util.find_spec(module) is None:
            return f"{what} is not installed: pip install -e '.[browser]'"
    if not (Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)):
        return (
            f"no Chromium at {CHROMIUM}: apt-get install -y chromium (never `playwright install`)"
        )
    return None


@pytest.fixture(scope="module")
def artifacts() -> Path:
    folder = Path(
        os.environ.get("MEMORYLAB_ARTIFACTS") or Path(tempfile.gettempdir()) / "memorylab-artifacts"
    )
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_until_up(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"voila exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:  # the tree page: no kernel
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.25)
    pytest.fail(f"voila did not answer within {START_TIMEOUT_S:.0f} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def voila_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Serve tests/browser/*.ipynb with voila on a free 127.0.0.1 port; stopped afterwards."""
    reason = _missing()
    if reason:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("voila")
    for notebook in HERE.glob("*.ipynb"):
        shutil.copy(notebook, root / notebook.name)
    port = _free_port()
    env = {
        **os.environ,
        "WORKSPACE_DIR": str(root / "workspace"),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_OFFLINE_MODE": "true",
        "HF_HUB_OFFLINE": "1",
        "MEMORYLAB_OFFLINE": "1",
        "JUPYTER_PLATFORM_DIRS": "1",
        "MPLBACKEND": "Agg",
    }
    log = root / "voila.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "voila",
                "--no-browser",
                f"--port={port}",
                "--Voila.ip=127.0.0.1",
                "--VoilaConfiguration.show_tracebacks=True",
                str(root),
            ],
            cwd=root,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}/"
    try:
        _wait_until_up(url, process, log)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


@pytest.fixture(scope="module")
def browser_context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    reason = _missing()
    if reason:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    profile = tmp_path_factory.mktemp("chromium-profile")  # a fresh user-data-dir
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1280, "height": 1500},
        )
        try:
            yield context
        finally:
            context.close()


def _wait_for_change(read: Any, before: str, timeout_s: float = 60.0) -> str:
    deadline = time.monotonic() + timeout_s
    now = read()
    while now == before and time.monotonic() < deadline:
        time.sleep(0.2)
        now = read()
    return str(now)


def test_threshold_slider_updates_plot_and_table(
    voila_url: str, browser_context: Any, artifacts: Path
) -> None:
    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(voila_url + "voila/render/tuner_app.ipynb", timeout=WIDGET_TIMEOUT_MS)
    page.wait_for_selector(".widget-slider .widget-readout", timeout=WIDGET_TIMEOUT_MS)
    page.wait_for_selector(".mlab-table", timeout=WIDGET_TIMEOUT_MS)
    plot = page.locator(".widget-image").first
    plot.wait_for(timeout=WIDGET_TIMEOUT_MS)
    table = page.locator(".mlab-table").first
    readout = page.locator(".widget-slider .widget-readout").first
    assert readout.inner_text().strip() == "0.70"
    src_before = plot.get_attribute("src") or ""
    png_before = plot.screenshot()
    table_before = table.inner_text()
    page.screenshot(path=str(artifacts / "voila_tuner_before.png"), full_page=True)

    # Type a new value into the slider's editable readout, as a user would.
    readout.click()
    page.keyboard.press("Control+A")
    page.keyboard.type("0.45")
    page.keyboard.press("Enter")

    src_after = _wait_for_change(lambda: plot.get_attribute("src") or "", src_before)
    table_after = _wait_for_change(
        lambda: page.locator(".mlab-table").first.inner_text(), table_before
    )
    page.wait_for_timeout(300)  # let the new image decode before the screenshot
    page.screenshot(path=str(artifacts / "voila_tuner_after.png"), full_page=True)

    assert readout.inner_text().strip() == "0.45"
    assert src_after != src_before, "the replay plot was not redrawn"
    assert plot.screenshot() != png_before, "the replay plot looks the same"
    assert table_after != table_before, "the sweep table did not change"
    assert "0.45" in table_after  # the slider's threshold is a row of the sweep now
    highlighted = page.locator(".mlab-table tr.mlab-hl").first.inner_text()
    assert highlighted.split()[0] == "0.45"
    assert not errors, errors
    page.close()


GALLERY = ("explorer", "tuner", "arena", "stepper")


def test_widget_gallery_renders(voila_url: str, browser_context: Any, artifacts: Path) -> None:
    """Every widget renders in a real browser; one screenshot each (for a human to look at)."""
    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(voila_url + "voila/render/gallery.ipynb", timeout=WIDGET_TIMEOUT_MS)
    outputs = page.locator(".jp-OutputArea-output:has(.widget-box)")
    outputs.nth(len(GALLERY) - 1).wait_for(timeout=WIDGET_TIMEOUT_MS)
    assert outputs.count() == len(GALLERY)
    page.wait_for_timeout(500)  # images decode
    for index, name in enumerate(GALLERY):
        output = outputs.nth(index)
        output.scroll_into_view_if_needed()
        assert output.locator(".widget-html, .widget-image").count() > 0, name
        output.screenshot(path=str(artifacts / f"widget_{name}.png"))
    page.screenshot(path=str(artifacts / "widget_gallery.png"), full_page=True)
    assert not errors, errors
    page.close()


# -- the tuner at the widths people use ------------------------------------------------------------

# Every problem of layout on the page, as text (an empty list: it reads right). A box clips what
# lies outside it when its overflow is not "visible"; a header cell must be inside the viewport
# and every such box, and be what the browser finds at its centre (not covered by the plot).
# ``scrollable`` names the boxes a reader may scroll sideways (the check at JupyterLab's width).
LAYOUT_PROBLEMS = """([modes, scrollable]) => {
  const problems = [];
  const width = document.documentElement.clientWidth;
  const describe = (el) => {
    const classes = String(el.className).split(' ');
    const telling = classes.filter((c) => /^(widget-|mlab-|jp-)/.test(c)).pop() || classes[0];
    return `${el.tagName.toLowerCase()}.${telling}`;
  };
  const clippedBy = (el) => {
    const box = el.getBoundingClientRect();
    if (box.left < -1 || box.right > width + 1) return 'the viewport';
    for (let up = el.parentElement; up; up = up.parentElement) {
      if (scrollable && up.matches(scrollable)) return '';
      if (getComputedStyle(up).overflowX === 'visible') continue;
      const clip = up.getBoundingClientRect();
      if (box.left < clip.left - 1 || box.right > clip.right + 1) return describe(up);
    }
    return '';
  };
  document.querySelectorAll('.mlab-note').forEach((note) => {
    const text = note.textContent.slice(0, 40);
    if (note.scrollWidth > note.clientWidth + 1) {
      problems.push(`note "${text}" overflows itself: ${note.scrollWidth} > ${note.clientWidth}`);
    }
    const by = clippedBy(note);
    if (by) problems.push(`note "${text}" is cut by ${by}`);
  });
  document.querySelectorAll('.mlab-scroll').forEach((box) => { box.scrollLeft = 0; });
  document.querySelectorAll('.mlab-table').forEach((table) => {
    table.scrollIntoView({block: 'center', inline: 'nearest'});
    document.querySelectorAll('.mlab-scroll').forEach((box) => { box.scrollLeft = 0; });
    table.querySelectorAll('th').forEach((cell) => {
      const name = `header "${cell.textContent}"`;
      const by = clippedBy(cell);
      if (by) { problems.push(`${name} is cut by ${by}`); return; }
      if (scrollable && cell.closest(scrollable)) return;
      const box = cell.getBoundingClientRect();
      const found = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
      if (!found || !(found === cell || cell.contains(found))) {
        problems.push(`${name} is covered by ${found ? describe(found) : 'nothing'}`);
      }
    });
  });
  document.querySelectorAll('.widget-dropdown').forEach((dropdown) => {
    const select = dropdown.querySelector('select');
    const label = dropdown.querySelector('label');
    const option = select ? select.options[select.selectedIndex] : null;
    const shown = option ? option.text : '';
    const name = label ? label.textContent : '?';
    if (!shown.trim()) problems.push(`dropdown "${name}" shows nothing`);
    if (name === 'sweep' && !modes.includes(shown.replace(/\u00a0/g, ' '))) {
      problems.push(`the sweep dropdown shows "${shown}", not a mode`);
    }
  });
  return problems;
}"""


def _open_layout_page(browser_context: Any, url: str, width: int) -> tuple[Any, list[str]]:
    """tuner_layout.ipynb at ``width`` px, rendered; the page and its script errors."""
    page = browser_context.new_page()
    page.set_viewport_size({"width": width, "height": 2800})  # both tuners in one screenshot
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(url + "voila/render/tuner_layout.ipynb", timeout=WIDGET_TIMEOUT_MS)
    page.locator(".mlab-table").nth(1).wait_for(timeout=WIDGET_TIMEOUT_MS)
    page.locator(".widget-image").nth(3).wait_for(timeout=WIDGET_TIMEOUT_MS)
    page.wait_for_timeout(500)  # images decode, the layout settles
    return page, errors


@pytest.mark.parametrize("width", [1000, 1300])
def test_the_tuner_reads_at_each_width(
    voila_url: str, browser_context: Any, artifacts: Path, width: int
) -> None:
    """Issue 28: at 1,300 px the sweep's note was cut ("The highlighte…"), the table's right
    columns were under the sweep plot, and the mode dropdown could show nothing."""
    from memorylab.widgets._tuner import MODES

    page, errors = _open_layout_page(browser_context, voila_url, width)
    assert page.locator(".mlab-table").count() == 2  # both tuners of the composed VBox
    assert "Peak above the" in page.locator(".mlab-note").all_inner_texts()[1]
    problems = page.evaluate(LAYOUT_PROBLEMS, [[label for label, _ in MODES], ""])
    page.screenshot(path=str(artifacts / f"tuner_{width}px.png"), full_page=True)
    sweep = page.locator(".widget-dropdown:has(label:text-is('sweep')) select").first
    assert sweep.evaluate("s => s.options[s.selectedIndex].text") == "exact\xa0when\xa0it\xa0fits"
    assert not problems, "\n".join(problems)
    assert not errors, errors
    page.close()


def test_the_tuner_reads_in_a_jupyterlab_column(
    voila_url: str, browser_context: Any, artifacts: Path
) -> None:
    """JupyterLab's default layout at a 1,000 px window leaves a notebook's outputs about
    600 px beside the file browser: the notes wrap, nothing is cut; a table wider than that
    scrolls sideways inside its own box, and the page does not."""
    from memorylab.widgets._tuner import MODES

    page, errors = _open_layout_page(browser_context, voila_url, 640)
    problems = page.evaluate(LAYOUT_PROBLEMS, [[label for label, _ in MODES], ".mlab-scroll"])
    page.screenshot(path=str(artifacts / "tuner_640px.png"), full_page=True)
    assert not problems, "\n".join(problems)
    width = page.evaluate("() => [document.scrollingElement.scrollWidth, innerWidth]")
    assert width[0] <= width[1] + 1, width
    assert not errors, errors
    page.close()


# -- the HTML report, opened from disk -------------------------------------------------------------

SWARMS_PYTHON = os.environ.get("MEMORYLAB_SWARMS_PYTHON")  # .ci/run sets it
REFERENCE_LOOP = HERE.parent / "compat" / "reference_agent_loop.py"
REFERENCE_SUMMARY = "Experiments 1 to 12 measured latencies from 7 to 84 ms, 7 ms apart."

# What of the report does not read right at this width (an empty list: it does). Inside a
# designated scroll box (a wide table's, a summary's) content may be wider than the page.
REPORT_PROBLEMS = """() => {
  const problems = [];
  const width = innerWidth;
  const page = document.scrollingElement.scrollWidth;
  if (page > width + 1) problems.push(`the page scrolls sideways: ${page} > ${width}`);
  document.querySelectorAll('body *').forEach((el) => {
    if (el.closest('.wide, .summary')) return;
    const box = el.getBoundingClientRect();
    if (box.right > width + 1) {
      problems.push(`${el.tagName.toLowerCase()}.${el.className} ends at ${box.right} > ${width}`);
    }
  });
  document.querySelectorAll('img').forEach((img, i) => {
    if (!img.complete || img.naturalWidth === 0) problems.push(`image ${i} did not load`);
  });
  document.querySelectorAll('table').forEach((table, i) => {
    if (table.querySelectorAll('tr td').length === 0) problems.push(`table ${i} has no row`);
  });
  return problems;
}"""


def _reference_workspace(root: Path) -> Path:
    """A workspace written by the real reference package: tests/compat's agent loop run under
    swarms 16.0.3 (its summarizer a local fake OpenAI server), one agent, Researcher."""
    if not SWARMS_PYTHON or not os.access(SWARMS_PYTHON, os.X_OK):
        pytest.skip("set MEMORYLAB_SWARMS_PYTHON to a Python with swarms==16.0.3 (.ci/run does)")
    from fakes import FakeOpenAIServer

    folder = root / "workspace" / "agents" / "Researcher"
    folder.mkdir(parents=True)
    cwd = root / "swarms-cwd"  # swarms writes agent_workspace/ into its working folder
    cwd.mkdir()
    with FakeOpenAIServer(REFERENCE_SUMMARY) as server:
        env = {
            **os.environ,
            "OPENAI_API_BASE": server.base_url,
            "OPENAI_API_KEY": "sk-test-not-a-key",
            "SWARMS_TELEMETRY_ON": "false",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "LITELLM_OFFLINE_MODE": "true",
            "HF_HUB_OFFLINE": "1",
        }
        env.pop("WORKSPACE_DIR", None)
        done = subprocess.run(
            [SWARMS_PYTHON, str(REFERENCE_LOOP), str(folder)],
            capture_output=True, text=True, env=env, cwd=cwd, timeout=300,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert (folder / "MEMORY.md").is_file() and list((folder / "archive").glob("history_*.md"))
    return root / "workspace"


REPORT_HEADINGS = {
    # the workspace README.md's first command reports on, and one the reference wrote
    # the bundled one: its compactions keep the turn in progress, copies the report says it read
    # once ("How the files were read": not problems)
    "bundled": ["memorylab report", "Agents", "How the files were read", "Compactions",
                "BugHunter", "DataEngineer",
                "Researcher", "Which facts survive each summary",
                "What each compaction cost, with prompt caching",
                "Did compaction fire when it should have?", "What-if thresholds", "Strategies",
                "Privacy"],
    "reference": ["memorylab report", "Problems found", "Agents", "Compactions", "Researcher",
                  "Which facts survive each summary",
                  "What each compaction cost, with prompt caching",
                  "Did compaction fire when it should have?", "What-if thresholds", "Strategies",
                  "Privacy"],
}  # fmt: skip


@pytest.mark.parametrize("workspace", sorted(REPORT_HEADINGS))
def test_the_report_reads_right_in_a_browser(
    browser_context: Any, artifacts: Path, tmp_path: Path, workspace: str
) -> None:
    output = tmp_path / "report.html"
    env = {**os.environ, "MPLBACKEND": "Agg"}
    command = [sys.executable, "-m", "memorylab", "report", "-o", str(output)]
    if workspace == "bundled":  # as README.md runs it: no workspace, no $WORKSPACE_DIR
        env.pop("WORKSPACE_DIR", None)
    else:  # a run of the real swarms may tear an archive in its race: read around it
        command[4:4] = [str(_reference_workspace(tmp_path)), "--lenient"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]

    page = browser_context.new_page()
    page.set_viewport_size({"width": 1000, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(output.as_uri(), wait_until="load")
    page.evaluate("() => document.querySelectorAll('details').forEach(d => { d.open = true; })")
    page.wait_for_timeout(200)
    page.screenshot(path=str(artifacts / f"report_{workspace}_1000px.png"), full_page=True)
    problems = page.evaluate(REPORT_PROBLEMS)
    headings = page.locator("h1, h2").all_inner_texts()
    summaries = page.locator("details .summary").count()
    labels = page.locator("details > summary").all_inner_texts()
    notes = " ".join(page.locator("p.note").all_inner_texts())
    page.close()

    assert not problems, "\n".join(problems)
    assert headings == REPORT_HEADINGS[workspace]
    assert summaries >= (4 if workspace == "bundled" else 1)  # every agent's summaries, readable
    # Each summary named by the archive it replaced (issue 41), and on the files swarms wrote,
    # why calibration and costs have no table (tests/test_report_agrees.py reads every sentence
    # against its table).
    assert labels and all(label.startswith("summary of ") for label in labels), labels
    if workspace == "reference":
        assert "No model call was recorded for Researcher: no usage.jsonl" in notes
        assert "No net cost for Researcher" in notes
    assert not errors, errors
