"""The docs are part of the code: their examples run as a reader pastes them, and the format page
matches the code.

A reader pastes each page into a fresh Python session, in the order the docs list them, in one
folder of their own. So the pages run here the same way: README.md, docs/index.md, the pages in
the order index.md links them, then any other page; each in a new interpreter
(``python -m doctest``, with the pages' option flags), all in one fresh folder, with no
``WORKSPACE_DIR`` and no provider key in the environment. The autouse ``isolated_workspace``
fixture (tests/conftest.py) plays no part: nothing gives a page a workspace of its own but the
page itself, which is why every page starts by pointing ``WORKSPACE_DIR`` at a temporary folder.
"""

from __future__ import annotations

import doctest
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from memorylab import parse_memory, render_memory

ROOT = Path(__file__).parent.parent
DOCS = ROOT / "docs"
OPTION_FLAGS = ("ELLIPSIS", "NORMALIZE_WHITESPACE")
PAGE_TIMEOUT_S = 300

# What a page's first examples must do, visibly, before anything else.
SETUP_IMPORT = "import os, tempfile"
SETUP_WORKSPACE = re.compile(r'^os\.environ\["WORKSPACE_DIR"\] = tempfile\.mkdtemp\(')


def reading_order() -> list[Path]:
    """README.md, docs/index.md, the pages index.md links (in its order, the format pages of
    docs/formats/ among them), then the rest, sorted."""
    linked = re.findall(
        r"\]\(((?:formats/)?[\w.-]+\.md)\)", (DOCS / "index.md").read_text(encoding="utf-8")
    )
    pages = [ROOT / "README.md", DOCS / "index.md"]
    for name in linked:
        page = DOCS / name
        if page.is_file() and page not in pages:
            pages.append(page)
    pages += sorted(page for page in _doc_pages() if page not in pages)
    return pages


def _doc_pages() -> list[Path]:
    """Every page under docs/: its own and those of docs/formats/ (one per foreign format)."""
    return [*DOCS.glob("*.md"), *DOCS.glob("formats/*.md")]


PAGES = reading_order()


def examples(page: Path) -> list[doctest.Example]:
    return doctest.DocTestParser().get_examples(page.read_text(encoding="utf-8"), page.name)


def _page_name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix() if page.is_relative_to(ROOT) else page.name


@dataclass(frozen=True)
class Failure:
    """One example that failed (or the page's interpreter, when ``line`` is 0)."""

    page: str
    line: int
    source: str
    detail: str

    def __str__(self) -> str:
        where = f"{self.page}, line {self.line}" if self.line else self.page
        return f"{where}: {self.source}\n{self.detail}"


_FAILED = re.compile(
    r'^File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<name>\S+)\n'
    r"Failed example:\n(?P<source>(?: {4}.*\n)+)",
    re.M,
)


# A warning raised by a page's own code (a deprecated call the page should not teach).
_WARNED = re.compile(r"^<doctest (?P<name>[^\[]+)\[(?P<index>\d+)\]>:\d+: \w*Warning: .*$", re.M)


def _failures(page: Path, output: str, returncode: int) -> list[Failure]:
    """The examples ``python -m doctest`` reported failed for ``page``, and those that warned."""
    name = _page_name(page)
    found: list[Failure] = []
    reports = output.split("*" * 70 + "\n")
    for report in reports:
        match = _FAILED.match(report)
        if match:
            source = match.group("source").splitlines()[0].strip()
            found.append(Failure(name, int(match.group("line")), source, report.strip()))
    for warning in _WARNED.finditer(output):
        if warning.group("name") == page.name:
            example = examples(page)[int(warning.group("index"))]
            found.append(
                Failure(name, example.lineno + 1, example.source.strip(), warning.group(0))
            )
    if returncode != 0 and not found:
        found.append(Failure(name, 0, f"exit code {returncode}", output.strip()[-3000:]))
    return found


def _reader_environment(tmp: Path) -> dict[str, str]:
    """This environment without a workspace, provider keys or memorylab settings; offline."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key != "WORKSPACE_DIR"
        and not key.startswith("MEMORYLAB_")
        and not key.endswith("_API_KEY")
    }
    env.update(
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        LITELLM_OFFLINE_MODE="true",
        HF_HUB_OFFLINE="1",
        TMPDIR=str(tmp),  # the pages' temporary folders, removed with this test's
    )
    return env


def run_pages_as_pasted(pages: list[Path], folder: Path, tmp: Path) -> list[Failure]:
    """Run each page's examples in a new interpreter, in order, all in ``folder``."""
    command = [sys.executable, "-m", "doctest"]
    for flag in OPTION_FLAGS:
        command += ["-o", flag]
    env = _reader_environment(tmp)
    failures: list[Failure] = []
    for page in pages:
        done = subprocess.run(
            [*command, str(page)],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=PAGE_TIMEOUT_S,
            check=False,
        )
        failures += _failures(page, done.stdout + done.stderr, done.returncode)
    return failures


def test_reading_order_holds_every_page_once() -> None:
    assert PAGES[:2] == [ROOT / "README.md", DOCS / "index.md"]
    assert sorted(PAGES) == sorted([*_doc_pages(), ROOT / "README.md"])
    assert DOCS / "formats" / "deepagents.md" in PAGES  # the format pages' examples run too
    assert len(set(PAGES)) == len(PAGES)
    assert sum(len(examples(page)) for page in PAGES) > 300  # the docs are mostly examples


@pytest.mark.parametrize("page", [p for p in PAGES if examples(p)], ids=lambda p: p.name)
def test_page_starts_with_a_workspace_of_its_own(page: Path) -> None:
    """Visibly, before its first other example: ``os.environ["WORKSPACE_DIR"] = tempfile.mkdtemp()``."""
    sources = [example.source.strip() for example in examples(page)]
    starts = len(sources) >= 2 and sources[0] == SETUP_IMPORT and SETUP_WORKSPACE.match(sources[1])
    assert starts, (
        f"{_page_name(page)} must start with `>>> {SETUP_IMPORT}` and "
        f'`>>> os.environ["WORKSPACE_DIR"] = tempfile.mkdtemp()`; it starts with {sources[:2]}'
    )


def test_pages_pasted_in_order_into_one_folder(tmp_path: Path) -> None:
    folder = tmp_path / "reader"  # not the fixture's cwd: a folder only the pages write into
    folder.mkdir()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    failures = run_pages_as_pasted(PAGES, folder, tmp)
    assert not failures, (
        f"{len(failures)} example(s) failed when the pages were pasted in order into one folder:\n\n"
        + "\n\n".join(str(failure) for failure in failures)
    )
    assert not (folder / "agent_workspace").exists(), (
        "a page wrote memory into ./agent_workspace: it must point WORKSPACE_DIR at a temporary "
        "folder before it makes an agent"
    )
    memory = sorted(path.relative_to(folder).as_posix() for path in folder.rglob("MEMORY.md"))
    assert memory == [], f"the pages wrote agents' memory into the reader's folder: {memory}"


def test_a_failing_page_is_named_with_its_example(tmp_path: Path) -> None:
    """The runner itself: what the page before left in the folder, a failure, a warning."""
    first = tmp_path / "first.md"
    first.write_text(
        "```python\n>>> from memorylab import Conversation\n"
        '>>> _ = Conversation(agent_name="A").add("User", "hi")\n\n```\n'
    )
    second = tmp_path / "second.md"
    second.write_text(
        "```python\n>>> import os\n>>> sorted(os.listdir('agent_workspace/agents'))\n[]\n"
        ">>> 1 + 1\n2\n\n```\n"
    )
    third = tmp_path / "third.md"
    third.write_text(
        "Text.\n\n```python\n>>> import warnings\n"
        ">>> warnings.warn('use the new name', DeprecationWarning)\n\n```\n"
    )
    folder = tmp_path / "reader"
    folder.mkdir()
    failures = run_pages_as_pasted([first, second, third], folder, tmp_path)
    assert [(f.page, f.line, f.source) for f in failures] == [
        ("second.md", 3, "sorted(os.listdir('agent_workspace/agents'))"),
        ("third.md", 5, "warnings.warn('use the new name', DeprecationWarning)"),
    ]
    assert "['A']" in failures[0].detail
    assert "DeprecationWarning: use the new name" in failures[1].detail
    assert sorted(path.name for path in folder.iterdir()) == ["agent_workspace"]


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


def test_a_python_block_is_one_a_reader_can_paste() -> None:
    """Issue 41: four blocks marked as Python were signatures (``memory_md_path=<from
    agent_name>``, ``*`` before keywords) that fail when pasted. A ``python`` block is a doctest
    (``>>>``, run above) or code that at least compiles; a signature is a ``text`` block."""
    failing = []
    for page in [*DOCS.rglob("*.md"), ROOT / "README.md"]:
        text = page.read_text(encoding="utf-8")
        for block in re.finditer(r"```python\n(.*?)```", text, re.S):
            if ">>>" in block.group(1):
                continue
            try:
                compile(block.group(1), str(page), "exec")
            except SyntaxError as error:
                line = text[: block.start()].count("\n") + 1
                failing.append(f"{page.relative_to(ROOT)}:{line}: {error.msg}")
    assert not failing, failing
