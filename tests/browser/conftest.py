"""The browser tests: their marker, and the notebooks here are voila apps, not nbval tests."""

from __future__ import annotations

import pytest

collect_ignore_glob = ["*.ipynb"]  # served by voila in test_voila.py


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "browser: drives a real browser (voila + playwright + Debian chromium)"
    )
