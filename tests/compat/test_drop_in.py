"""memorylab as a drop-in for the reference framework's users (issue 18).

A script written for swarms 16.0.3 (``reference_agent_loop.py``) runs unchanged under the real
reference and, with only its import lines swapped, under memorylab; the behaviour of the ported
tests that patch the reference's internals is checked here on memorylab's public API; and the
list of differences names real tests.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from differences import DIFFERENCES, INTERNALS
from fakes import FakeOpenAIServer
from memorylab import ContextCompressor, Conversation
from memorylab.compress import get_token_counter

HERE = Path(__file__).parent
SCRIPT = HERE / "reference_agent_loop.py"
REFERENCE_IMPORTS = (
    "from swarms.agents.context_compressor import ContextCompressor\n"
    "from swarms.structs.conversation import Conversation\n"
)
SWARMS_PYTHON = os.environ.get("MEMORYLAB_SWARMS_PYTHON")  # .ci/run sets it
MEMORYLAB_IMPORT = "from memorylab import ContextCompressor, Conversation\n"
SUMMARY = "Experiments 1 to 12 measured latencies from 7 to 84 ms, 7 ms apart."


def _run_script(python: str, script: Path, folder: Path, server: FakeOpenAIServer) -> dict[str, Any]:
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
        [python, str(script), str(folder)], capture_output=True, text=True, env=env,
        cwd=folder, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    # The script prints one JSON object; the framework logs to stdout around (even inside) it.
    start = done.stdout.find('{"summaries"')
    assert start >= 0, f"no result in stdout:\n{done.stdout[-3000:]}"
    result: dict[str, Any] = json.JSONDecoder().raw_decode(done.stdout, start)[0]
    return result


def _check_loop(result: dict[str, Any], folder: Path) -> list[Path]:
    """What the script's user relies on, whoever runs it; returns the archives."""
    assert result["summaries"] and all(s == SUMMARY for s in result["summaries"])
    assert result["peak_tokens"] > 300  # it reached the threshold (0.5 x 600)...
    assert result["tokens"] < 600  # ...and compression kept it inside the window
    assert "[Compressed Memory Summary]" in result["history"]
    assert SUMMARY in result["history"]
    assert "Experiment 12 measured a latency of 84 ms." in result["history"]
    assert result["last"] == "Experiment 12 measured a latency of 84 ms."
    assert SUMMARY in (folder / "MEMORY.md").read_text(encoding="utf-8")
    return sorted((folder / "archive").glob("history_*.md"))


def _every_turn_kept(folder: Path, archives: list[Path]) -> bool:
    """Raw chat logs are never destroyed: every answer is in MEMORY.md or an archive."""
    files = [folder / "MEMORY.md", *archives]
    everything = "".join(f.read_text(encoding="utf-8") for f in files)
    return all(
        f"Experiment {turn} measured a latency of {turn * 7} ms." in everything
        for turn in range(1, 13)
    )


def test_the_reference_script_runs_under_memorylab_with_only_its_imports_swapped(tmp_path: Path) -> None:
    source = SCRIPT.read_text(encoding="utf-8")
    assert source.count(REFERENCE_IMPORTS) == 1
    swapped = tmp_path / "agent_loop.py"
    swapped.write_text(source.replace(REFERENCE_IMPORTS, MEMORYLAB_IMPORT), encoding="utf-8")
    folder = tmp_path / "run"
    folder.mkdir()
    with FakeOpenAIServer(SUMMARY) as server:
        result = _run_script(sys.executable, swapped, folder, server)
        requests = server.request_count
    archives = _check_loop(result, folder)
    assert requests == len(result["summaries"])  # one model call per compression
    assert len(archives) == len(result["summaries"])  # one archive per compression
    assert _every_turn_kept(folder, archives)


@pytest.mark.skipif(
    not SWARMS_PYTHON,
    reason="set MEMORYLAB_SWARMS_PYTHON to a Python with swarms==16.0.3 (.ci/run does)",
)
def test_the_reference_script_is_a_real_reference_script(tmp_path: Path) -> None:
    """The same script, unchanged, under the real swarms 16.0.3: it is what its users write.
    (The reference names archives by the second: compressions within one second overwrite each
    other's archive, so it is not held to memorylab's one archive per compression.)"""
    python = str(SWARMS_PYTHON)
    folder = tmp_path / "run"
    folder.mkdir()
    with FakeOpenAIServer(SUMMARY) as server:
        result = _run_script(python, SCRIPT, folder, server)
    assert _check_loop(result, folder)


def _agent(conversation: Conversation, window: int = 10_000) -> SimpleNamespace:
    return SimpleNamespace(
        short_memory=conversation, context_length=window, model_name="openai/summarizer",
        agent_name="IntegrationAgent",
    )  # fmt: skip


def test_compress_agent_updates_memory_md_and_archives(tmp_path: Path) -> None:
    """The reference's TestIntegration scenario, with memorylab's summarizer in place of a patched
    ``_summarize``: compact once, the prefix in MEMORY.md, the raw summary returned."""
    memory_path = tmp_path / "MEMORY.md"
    conv = Conversation(
        system_prompt="You are a helpful assistant.", memory_md_path=str(memory_path),
        conversations_dir=str(tmp_path), time_enabled=False, token_count=False,
    )  # fmt: skip
    for role, text in [("User", "What is 2+2?"), ("Assistant", "It is 4."),
                       ("User", "What about 3+3?"), ("Assistant", "That is 6.")]:  # fmt: skip
        conv.add(role, text)
    raw_summary = "Agent discussed arithmetic: 2+2=4, 3+3=6."
    with FakeOpenAIServer(raw_summary) as server:
        cc = ContextCompressor(
            threshold=0.01,
            summarizer_args={"llm_args": {"api_base": server.base_url, "api_key": "sk-test"}},
            keep_turn=False,  # the reference's compaction: the last question summarized too
        )
        result = cc.compress(_agent(conv))
        assert server.request_count == 1
        prompt = server.requests[0]["messages"][-1]["content"]
    assert result == raw_summary
    assert "What is 2+2?" in prompt  # the whole history was summarized
    assert conv.conversation_history[0]["role"] == "System"
    full_text = conv.return_history_as_string()
    assert f"[Compressed Memory Summary] {raw_summary}" in full_text
    assert "What is 2+2?" not in full_text
    memory_text = memory_path.read_text(encoding="utf-8")
    assert f"[Compressed Memory Summary] {raw_summary}" in memory_text
    for turn in ("What is 2+2?", "It is 4.", "What about 3+3?", "That is 6."):
        assert turn not in memory_text
    archives = list((tmp_path / "archive").glob("history_*.md"))
    assert len(archives) == 1 and "What is 2+2?" in archives[0].read_text(encoding="utf-8")
    assert len(cc.events) == 1 and cc.events[0].ok  # compacted exactly once


def test_compress_agent_with_nothing_to_compress_calls_no_model() -> None:
    conv = Conversation(time_enabled=False)
    with FakeOpenAIServer("unused") as server:
        cc = ContextCompressor(summarizer_args={"llm_args": {"api_base": server.base_url}})
        assert cc.compress(_agent(conv)) is None
        assert server.request_count == 0


def test_a_usage_check_tokenizes_only_the_new_message() -> None:
    """What the reference's TestUsageRatioReusesMessageCounts checks on its tokenizer backend:
    a check after one new message tokenizes just that message's fields (its role and stamped
    content, as the request sends them), and the running count never undercounts: it is the
    request's count, message by message (3 + role + content, and 3 for the reply)."""
    seen: list[str] = []
    count = get_token_counter("gpt-4o")

    def counter(text: str) -> int:
        seen.append(text)
        return count(text)

    conv = Conversation(token_counter=counter, context_length=100_000)
    for i in range(20):
        conv.add("User", f"message {i} " + "word " * 50)
    agent = SimpleNamespace(short_memory=conv, context_length=100_000)
    cc = ContextCompressor()
    first = cc.usage_ratio(agent)
    conv.add("User", "the newest message")
    seen.clear()
    second = cc.usage_ratio(agent)
    newest = conv.conversation_history[-1]
    assert seen == ["user", f"[{newest['timestamp']}] the newest message"]
    assert second > first
    exact = 3 + sum(3 + count(m["role"]) + count(m["content"]) for m in conv.to_messages())
    assert round(second * 100_000) == exact


def test_get_str_renders_each_entry_once() -> None:
    conv = Conversation(time_enabled=False)
    conv.add("User", {"question": "first"})
    first = conv.get_str()
    conv.conversation_history[0]["content"] = "edited by hand"  # not noticed: rendered once
    conv.add("Assistant", "second")
    assert conv.get_str() == first + "\n\nAssistant: second"
    conv.update(0, "User", "edited")  # noticed: the history is rendered again
    assert conv.get_str() == "User: edited\n\nAssistant: second"
    conv.time_enabled = True
    assert re.match(r"\[\d{4}-\d\d-\d\dT[^]]+\] User: edited", conv.get_str())


def test_the_differences_name_real_tests() -> None:
    for name in {**DIFFERENCES, **INTERNALS}:
        file, *path = name.split("::")
        target: Any = importlib.import_module(file.removesuffix(".py"))
        for part in path:
            target = getattr(target, part)  # AttributeError names a stale entry
        assert callable(target), name
