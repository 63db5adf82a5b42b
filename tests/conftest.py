"""Shared test set-up: offline LLM settings, an isolated workspace for every test."""

from __future__ import annotations

import os

# Before anything can import litellm: never fetch the price map, never reach a model hub.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from pathlib import Path

import pytest
from hypothesis import settings

# "fast" (the default) keeps the whole suite within a few minutes on two cores; .ci/run selects
# "thorough" (MEMORYLAB_HYPOTHESIS_PROFILE=thorough), at least 2,000 examples per property.
settings.register_profile("fast", max_examples=50, deadline=None)
settings.register_profile(
    "thorough",
    max_examples=int(os.environ.get("MEMORYLAB_HYPOTHESIS_EXAMPLES", "2000")),
    deadline=None,
)
settings.load_profile(os.environ.get("MEMORYLAB_HYPOTHESIS_PROFILE", "fast"))

_PROVIDER_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GROQ_API_KEY")


@pytest.fixture(autouse=True)
def isolated_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point $WORKSPACE_DIR at a fresh folder and run in a fresh cwd; hide provider keys."""
    workspace = tmp_path / "workspace"
    monkeypatch.setenv("WORKSPACE_DIR", str(workspace))
    for key in _PROVIDER_KEYS:
        monkeypatch.delenv(key, raising=False)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return workspace


_BUNDLED_DATA = Path(__file__).parent.parent / "data"


_SUMMARY_LINES: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Keep what a test recorded as ``summary_line`` (``record_property``): reports reach the
    main process from every xdist worker, where a test's own print would be lost."""
    if report.when == "call":
        _SUMMARY_LINES.extend(str(v) for k, v in report.user_properties if k == "summary_line")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print the figures tests recorded for the suite's output (e.g. the redaction corpus)."""
    if _SUMMARY_LINES:
        terminalreporter.section("memorylab figures")
        for line in _SUMMARY_LINES:
            terminalreporter.line(line)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail a run that wrote into the bundled data (a lock or temp file there would ship in the
    package data, and a read-only install could not create it)."""
    strays = sorted(
        p.relative_to(_BUNDLED_DATA)
        for p in _BUNDLED_DATA.rglob(".*")
        if p.is_file() and (p.name.endswith(".lock") or ".tmp-" in p.name)
    )
    if strays:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        names = ", ".join(str(p) for p in strays[:5])
        session.config.get_terminal_writer().line(
            f"FAILED: the tests wrote into the bundled data: {names} (copy it to tmp_path first)",
            red=True,
        )
