"""The docs are part of the code: their examples run, and the format page matches the code."""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

from memorylab import parse_memory, render_memory

ROOT = Path(__file__).parent.parent
PAGES = sorted([*(ROOT / "docs").glob("*.md"), ROOT / "README.md"])


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_examples_in_page(page: Path) -> None:
    result = doctest.testfile(
        str(page),
        module_relative=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
        raise_on_error=False,
        verbose=False,
    )
    assert result.failed == 0, f"{result.failed} example(s) failed in {page.name} (see output)"


def _example_block(page: str, marker: str) -> str:
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    match = re.search(rf"<!-- example: {marker} -->\n```markdown\n(.*?)```", text, re.S)
    assert match, f"no example {marker!r} in {page}"
    return match.group(1)


def test_format_page_example_is_what_the_code_writes() -> None:
    example = _example_block("memory-format.md", "memorylab-file")
    doc = parse_memory(example)
    assert render_memory(doc) == example
    assert doc.format_version == 1
    assert doc.continues == "history_2026-05-01_09-59-58.md"
    assert doc.messages[1].content.splitlines()[1:] == ["---", "### System — 2020-01-01T00:00:00"]
