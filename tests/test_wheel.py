"""memorylab works from a wheel installed outside the checkout: the wheel carries the bundled data
(the package memorylab._data, which pyproject.toml maps onto data/) and `memorylab report` finds
it from any folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
DATA_IN_WHEEL = "memorylab/_data/"

# What the wheel is built from. The build runs on a copy, so it neither writes build/ and
# *.egg-info into the checkout nor packs files an earlier build left in build/.
_SOURCES = ("pyproject.toml", "README.md", "toolkit", "data")
_NOT_SOURCES = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "dist", ".*")

# Variables that would make the installed memorylab read something other than what it installed.
_HIDDEN = ("PYTHONPATH", "PYTHONHOME", "MEMORYLAB_DATA_DIR", "WORKSPACE_DIR", "VIRTUAL_ENV")


def _run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, f"{args} failed ({done.returncode}):\n{done.stdout}{done.stderr}"
    return done.stdout


def _build_wheel(tmp_path: Path) -> Path:
    source = tmp_path / "source"
    for name in _SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=_NOT_SOURCES)
        else:
            source.mkdir(exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    dist = tmp_path / "dist"
    # An isolated build, as a user's would be: pip gets setuptools from its cache or the index.
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), "."], source)
    (wheel,) = dist.glob("memorylab-*.whl")
    return wheel


def _data_files(folder: Path) -> set[str]:
    return {
        path.relative_to(folder).as_posix()
        for path in folder.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def _check_contents(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    junk = [n for n in names if "__pycache__" in n or n.endswith((".pyc", ".lock", ".tmp"))]
    assert junk == []
    assert all(n.startswith(("memorylab/", "memorylab-")) for n in names), names
    shipped = {n.removeprefix(DATA_IN_WHEEL) for n in names if n.startswith(DATA_IN_WHEEL)}
    for folder in ("transcripts", "workspace", "reference_workspace", "domains", "foreign"):
        in_checkout = {
            f"{folder}/{name}"
            for name in _data_files(ROOT / "data" / folder)
            if not Path(name).name.startswith(".")  # lock files are per machine
            and not name.endswith(("-wal", "-shm", "-journal"))  # a SQLite reader's, per machine
        }
        assert in_checkout, folder
        assert in_checkout <= shipped, sorted(in_checkout - shipped)


def _install(wheel: Path, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A fresh venv holding the wheel; returns its scripts folder and the environment to run
    them in. The third-party packages come from the current interpreter's site-packages through
    a .pth line; the site module runs the .pth files of a venv's own site-packages only, so the
    editable install's finder there stays out."""
    target = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(target)
    where = {"base": str(target), "platbase": str(target)}
    site = Path(sysconfig.get_path("purelib", scheme="venv", vars=where))
    (site / "third_party.pth").write_text(sysconfig.get_path("purelib") + "\n", encoding="utf-8")
    scripts = Path(sysconfig.get_path("scripts", scheme="venv", vars=where))
    env = {k: v for k, v in os.environ.items() if k not in _HIDDEN}
    python = _script(scripts, "python")
    pip = [sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps"]
    _run([*pip, "--no-index", str(wheel)], tmp_path, env)
    return scripts, env


def _script(scripts: Path, name: str) -> str:
    found = shutil.which(name, path=str(scripts))
    assert found is not None, f"no {name} in {scripts}"
    return found


def test_report_runs_from_an_installed_wheel(tmp_path: Path) -> None:
    wheel = _build_wheel(tmp_path)
    _check_contents(wheel)
    scripts, env = _install(wheel, tmp_path)
    venv_dir = (tmp_path / "venv").resolve()

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = _run(
        [
            _script(scripts, "python"),
            "-c",
            "import memorylab, memorylab.transcripts as t; "
            "print(memorylab.__file__); print(t.bundled_data_dir())",
        ],
        elsewhere,
        env,
    ).splitlines()
    package, data = (Path(line).resolve() for line in where)
    assert package.is_relative_to(venv_dir), f"memorylab came from {package}, not the wheel"
    assert data.is_relative_to(venv_dir) and data.name == "_data", data
    before = _data_files(data)

    report = elsewhere / "r.html"
    _run([_script(scripts, "memorylab"), "report", "-o", str(report)], elsewhere, env)
    html = report.read_text(encoding="utf-8")
    for agent in ("BugHunter", "DataEngineer", "Researcher"):
        assert agent in html
    assert _data_files(data) == before, "report wrote into the installed package"
