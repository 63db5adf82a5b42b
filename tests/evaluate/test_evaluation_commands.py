"""Every ``memorylab compare`` command the docs show runs as written (issue 39).

The commands are read from the pages' ``sh`` blocks (``\\`` continuations joined, ``#`` comments
dropped), so a command added to a page is run here with no change to this file. Each runs in a
temporary folder of its own, through ``memorylab.cli.main``, with what it names made real there:

* ``locomo10.json`` (the benchmark, which readers bring) is the LoCoMo-format fixture
  ``tests/evaluate/data/locomo_sample.json`` copied under that name;
* a path of the repository (``data/transcripts/...``, ``data/workspace``) is the repository's;
* ``--local-model X.gguf``: the file is created and ``memorylab.llm.local_server`` replaced by a
  fake OpenAI-compatible server, measured at the speeds docs/evaluation.md reports for SmolLM2 on
  2 cores (167 tokens/s read, 66 written: so ``--max-seconds 1`` refuses the plan as written);
* a hosted model (``gpt-4o-mini``) reaches the same kind of fake server through the environment
  litellm reads (``OPENAI_API_BASE``, ``OPENAI_API_KEY``);
* ``--api-base URL`` (a server the reader runs: llama.cpp, Ollama's OpenAI-compatible endpoint)
  is the fake server's address instead: the one word of a command that is changed.

Each must exit 0, or the code docs/cli.md gives for what it does (:data:`EXPECTED`).
"""

from __future__ import annotations

import contextlib
import re
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes import FakeOpenAIServer, FakeRequest

ROOT = Path(__file__).resolve().parents[2]
PAGES = (ROOT / "docs" / "evaluation.md", ROOT / "docs" / "cli.md")
LOCOMO = Path(__file__).parent / "data" / "locomo_sample.json"

EXPECTED = {("--max-seconds", "1"): 1}
"""Options whose documented effect is an exit code other than 0 (docs/cli.md's table): a plan
above ``--max-seconds`` stops before the first call (exit code 1)."""


def documented_commands() -> list[tuple[str, str]]:
    """``(page, command)`` for every ``memorylab compare`` line of the pages' ``sh`` blocks, and
    every command with arguments quoted inline in docs/evaluation.md's prose (``memorylab
    compare X ...`` between backticks, over several lines; docs/cli.md's inline ones are its
    exit-code table's, run by tests/test_cli_exit_codes.py)."""
    found = []
    for page in PAGES:
        text = page.read_text()
        for block in re.findall(r"^```sh\n(.*?)^```", text, re.M | re.S):
            for line in re.sub(r"\\\n\s*", " ", block).splitlines():
                if line.strip().startswith("memorylab compare"):
                    found.append((page.name, " ".join(line.split())))
        if page.name == "evaluation.md":
            prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
            for span in re.findall(r"`(memorylab compare [^`]+)`", prose):
                found.append((page.name, " ".join(span.split())))
    return found


COMMANDS = documented_commands()


def test_the_pages_show_commands_to_run() -> None:
    """The parsing finds what the pages hold (a page's layout change must not empty the test)."""
    pages = {page for page, _ in COMMANDS}
    assert {"evaluation.md", "cli.md"} <= pages, pages
    assert len(COMMANDS) >= 10
    joined = "\n".join(command for _, command in COMMANDS)
    assert "--strategy" in joined and "--recall" in joined and "--local-model" in joined
    assert "--dask local" in joined and "--probes" in joined
    assert "ollama/" not in joined  # Ollama through its OpenAI-compatible endpoint


def reply(request: FakeRequest) -> str:
    """What a model says: the judge's ratings, the grader's verdict, else a short answer (a
    summary, a reader's answer)."""
    text = str(request.body.get("messages", [])).lower()
    if "faithfulness" in text:
        return '{"faithfulness": 4, "coverage": 3, "usefulness": 4}'
    if "reference answer" in text:
        return "CORRECT"
    return "The notes do not say. UNKNOWN"


def prepare(command: str, folder: Path, stack: contextlib.ExitStack,
            monkeypatch: pytest.MonkeyPatch) -> list[str]:  # fmt: skip
    """The command's arguments (after ``memorylab``), with what it names made real in
    ``folder`` (module docstring): a fake server for the environment's hosted models and the
    local model, and one for each ``--api-base`` address the command names."""
    import memorylab.llm
    from memorylab.llm import ModelSpeed

    def server() -> str:
        return str(stack.enter_context(FakeOpenAIServer(reply)).base_url)

    hosted = server()
    monkeypatch.setenv("OPENAI_API_BASE", hosted)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    addresses: dict[str, str] = {}
    argv = shlex.split(command, comments=True)[1:]
    for index, word in enumerate(argv):
        previous = argv[index - 1] if index else ""
        if previous == "--api-base":
            argv[index] = addresses.setdefault(word, server())
        elif previous == "--local-model":
            (folder / word).write_bytes(b"GGUF")
        elif word == "locomo10.json":
            shutil.copyfile(LOCOMO, folder / word)
        elif not word.startswith("-") and "/" in word and (ROOT / word).exists():
            top = Path(word).parts[0]
            if not (folder / top).exists():
                (folder / top).symlink_to(ROOT / top)

    @contextlib.contextmanager
    def local_server(path: Path, **_: object) -> Iterator[str]:
        assert Path(path).is_file()
        yield hosted

    monkeypatch.setattr(memorylab.llm, "local_server", local_server)
    monkeypatch.setattr(memorylab.llm, "measure_speed",
                        lambda *_, **__: ModelSpeed(read=167.0, write=66.0))  # fmt: skip
    return argv


@pytest.mark.parametrize(("page", "command"), COMMANDS, ids=[c for _, c in COMMANDS])
def test_documented_command_runs_as_written(
    page: str, command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    from memorylab.cli import main

    if "--dask" in command.split():  # the dask extra: .ci/run installs it; the README's test
        pytest.importorskip("distributed", reason="--dask needs the dask extra")  # extra does not
    folder = tmp_path / "here"
    folder.mkdir()
    monkeypatch.chdir(folder)
    monkeypatch.setenv("WORKSPACE_DIR", str(tmp_path / "workspace"))
    monkeypatch.setenv("MEMORYLAB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)  # before OPENAI_API_BASE in litellm
    with contextlib.ExitStack() as stack:
        argv = prepare(command, folder, stack, monkeypatch)
        code = main(argv)
    out = capsys.readouterr()
    expected = next((code for (flag, value), code in EXPECTED.items()
                     if any(argv[i:i + 2] == [flag, value] for i in range(len(argv)))), 0)  # fmt: skip
    assert code == expected, f"{page}: {command}\n{out.err[-3000:]}"
    if expected == 0:
        assert "\n|---|" in out.out, out.out[:500]  # a table
    else:  # stopped before its first call, saying why in one line
        assert out.err.splitlines()[-1].startswith("memorylab: "), out.err
