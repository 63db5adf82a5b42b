"""Plugins: a package installed beside memorylab adds a summarizer, a strategy and a loader
through its entry points (tests/fakes/plugin_package), and memorylab finds each by name; its
broken entry point fails clearly, by its own name only.

The package is installed (offline, by pip, as a user would) into a venv the test makes, which
sees memorylab and its dependencies through a .pth line; a fresh interpreter of that venv runs
the checks, so the entry points are read as they would be in a user's process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import venv
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = ROOT / "tests" / "fakes" / "plugin_package"

CHECKS = """
import warnings
from pathlib import Path
import sys

from memorylab.analysis import loader_for, loader_names, memory_df
from memorylab.compress import get_strategy, get_summarizer, strategy_names, summarizer_names
from memorylab.errors import PrerequisiteError

log = Path(sys.argv[1])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    summarizer = get_summarizer("plugin/first-words")
    assert summarizer.summarize([{"role": "User", "content": "one two three four"}]).text == (
        "one two three"
    )
    assert [str(w.message) for w in caught if "plugin/broken" in str(w.message)], caught
assert "plugin/first-words" in summarizer_names()
strategy = get_strategy("plugin_keep_first", keep=2)
assert strategy.plan([{"role": "User", "content": "x"}] * 3).keep == (0, 1)
assert "plugin_keep_first" in strategy_names()
assert loader_for(log).name == "plugin-chat" and "plugin-chat" in loader_names()
frame = memory_df(log)
assert frame["content"].tolist() == ["hello", "hi there"], frame
assert frame["agent"].unique().tolist() == ["support"], frame
try:
    get_summarizer("plugin/broken")
except PrerequisiteError as error:
    print("BROKEN:", error)
else:
    raise AssertionError("the broken entry point loaded")
print("OK")
"""


def _plugin_venv(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A venv holding the plugin package (built and installed offline by pip), seeing this
    interpreter's packages, memorylab included, through a .pth file; returns its python."""
    target = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(target)
    where = {"base": str(target), "platbase": str(target)}
    site = Path(sysconfig.get_path("purelib", scheme="venv", vars=where))
    # The editable install's finder is a .pth of this interpreter's site-packages, which a .pth
    # line does not run: memorylab's source folder is named too.
    lines = [sysconfig.get_path("purelib"), str(ROOT / "toolkit")]
    (site / "memorylab_dev.pth").write_text("\n".join(lines) + "\n", encoding="utf-8")
    scripts = Path(sysconfig.get_path("scripts", scheme="venv", vars=where))
    python = scripts / ("python.exe" if os.name == "nt" else "python")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    source = tmp_path / "plugin_source"  # the build writes build/ and *.egg-info beside it
    shutil.copytree(PLUGIN, source)
    install = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
               "--no-deps", "--no-build-isolation", "--no-index", str(source)]  # fmt: skip
    done = subprocess.run(install, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return python, env


def test_a_packages_summarizer_strategy_and_loader_are_found_by_name(tmp_path: Path) -> None:
    python, env = _plugin_venv(tmp_path)
    log = tmp_path / "support.log"  # a format memorylab does not know, named as it likes
    lines = [{"who": "User", "said": "hello", "at": "2026-05-01T10:00:00+00:00"},
             {"who": "Agent", "said": "hi there", "at": "2026-05-01T10:00:05+00:00"}]  # fmt: skip
    log.write_text('{"chat-log": 1}\n' + "".join(json.dumps(x) + "\n" for x in lines))
    env["WORKSPACE_DIR"] = str(tmp_path / "workspace")
    done = subprocess.run(
        [str(python), "-c", textwrap.dedent(CHECKS), str(log)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("OK"), done.stdout
    (broken,) = [line for line in done.stdout.splitlines() if line.startswith("BROKEN:")]
    # the error names the name asked for, the package to fix or uninstall, and why
    assert "'plugin/broken'" in broken and "memorylab-test-plugin" in broken, broken
    assert "ModuleNotFoundError" in broken and "fix or uninstall" in broken, broken


def test_without_the_package_its_names_are_unknown() -> None:
    """The baseline: this interpreter has no such package, so the names above are not found
    (what makes the test above prove the entry points work)."""
    from memorylab.analysis import loader_names
    from memorylab.compress import strategy_names, summarizer_names

    assert "plugin/first-words" not in summarizer_names()
    assert "plugin_keep_first" not in strategy_names()
    assert "plugin-chat" not in loader_names()
