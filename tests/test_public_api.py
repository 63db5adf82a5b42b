"""The curated public surface: sorted, complete, importable, fast."""

from __future__ import annotations

import subprocess
import sys

import memorylab


def test_all_is_sorted_and_unique() -> None:
    assert memorylab.__all__ == sorted(set(memorylab.__all__))


def test_every_name_in_all_exists() -> None:
    missing = [name for name in memorylab.__all__ if not hasattr(memorylab, name)]
    assert missing == []


def test_every_public_attribute_is_in_all() -> None:
    public = {
        name
        for name, value in vars(memorylab).items()
        if not name.startswith("_") and not isinstance(value, type(sys))
    } | set(memorylab._LAZY)
    assert public - set(memorylab.__all__) == set()


def test_import_does_not_pull_heavy_libraries() -> None:
    code = (
        "import sys, memorylab; "
        "heavy = [m for m in ('litellm', 'pandas', 'matplotlib', 'ipywidgets', 'tiktoken') "
        "if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
