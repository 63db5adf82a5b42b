"""forget() leaves no quote of the agent in the evaluation cache, and the cache is private.

A canary is planted in an agent's memory, a real comparison (an LLM summarizer, a model reader
and a judge, all served by a local fake OpenAI server) caches calls that quote it in the
workspace's ``.cache/llm``; ``memorylab forget AGENT --yes`` must leave no byte of it anywhere in
the workspace, and keep the cache entries of the other agent.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes import FakeOpenAIServer, FakeRequest
from memorylab import Conversation, LiteLLMSummarizer
from memorylab.cli import main
from memorylab.evaluate import cases_from_workspace, compare_summarizers, get_scorer
from memorylab.evaluate._cache import LLMCache
from memorylab.llm import RetryPolicy
from memorylab.privacy import check_permissions, forget

CANARY = "CANARY-7f3a9c41-vault"
OTHER = "blue-green deploys on port 8443"


def _grep(root: Path, needle: str) -> list[Path]:
    """Every file under ``root`` whose bytes hold ``needle`` (hidden folders included)."""
    data = needle.encode("utf-8")
    return [p for p in root.rglob("*") if p.is_file() and data in p.read_bytes()]


def _leaky() -> None:
    conv = Conversation(agent_name="Leaky")
    conv.add("User", f"Please remember this for later: the vault code is {CANARY}. Keep it safe.")
    conv.add("Leaky", f"Noted, I will remember that the vault code is {CANARY}.")
    conv.add("User", "Also write the weekly report to /srv/reports/weekly.md on Fridays.")
    conv.compact(f"The user asked to remember the vault code {CANARY}; weekly report on Fridays.")
    conv.add("User", "Thanks, that is all for today.")


def _keeper() -> None:
    """Another agent: none of its messages is one of Leaky's, so its entries must stay."""
    conv = Conversation(agent_name="Keeper")
    conv.add("User", f"Our staging cluster uses {OTHER}, switched over last March.")
    conv.add("Keeper", "Understood: staging switches traffic between two identical stacks.")
    conv.compact(f"Staging uses {OTHER}.")
    conv.add("User", "Check the load balancer health page tomorrow morning.")


def _reply(request: FakeRequest) -> str:
    """Echo what a model would: a summary that repeats the secret, an answer that quotes it."""
    prompt = request.body["messages"][-1]["content"]
    if "Rate the SUMMARY" in prompt:
        return '{"faithfulness": 5, "coverage": 4, "usefulness": 4}'
    if "Question:" in prompt:
        return CANARY if CANARY in prompt else "UNKNOWN"
    if CANARY in prompt:
        return f"Summary: keep the vault code {CANARY} safe; the weekly report goes out Fridays."
    return f"Staging deploys: {OTHER}; the load balancer health page is checked daily."


@pytest.fixture
def cached_workspace(
    isolated_workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    """Two agents, and a comparison on their compactions cached in <workspace>/.cache/llm."""
    monkeypatch.delenv("MEMORYLAB_CACHE_DIR", raising=False)
    _leaky()
    _keeper()
    with FakeOpenAIServer(_reply) as server:
        args = {"api_base": server.base_url, "api_key": "x"}
        fast = RetryPolicy(timeout=60, retries=0, backoff_base=0.01, backoff_max=0.05)  # hang guard
        summarizer = LiteLLMSummarizer("openai/fake", llm_args=args, retry=fast)
        scorers = [
            "fact_recall",
            get_scorer("probe_qa", reader="openai/reader", llm_args=args),
            get_scorer("judge", model="openai/judge", llm_args=args),
        ]
        compare_summarizers(
            cases_from_workspace(isolated_workspace), [summarizer], scorers,
            cache_dir=True, progress=False,
        )  # fmt: skip
    yield isolated_workspace


def test_the_comparison_cached_quotes_privately(cached_workspace: Path) -> None:
    cache_dir = cached_workspace / ".cache" / "llm"
    entries = list(LLMCache(cache_dir).entries())
    assert len(entries) >= 4  # a summary, a reader and a judge call per agent, at least
    assert any(p.is_relative_to(cache_dir) for p in _grep(cached_workspace, CANARY))
    for folder in [cached_workspace / ".cache", cache_dir, *{p.parent for p in entries}]:
        assert stat.S_IMODE(os.lstat(folder).st_mode) == 0o700, folder
    for entry in entries:
        assert stat.S_IMODE(os.lstat(entry).st_mode) == 0o600, entry
    assert check_permissions(cached_workspace) == []  # memorylab's own check has nothing to say


def test_forget_on_the_command_line_leaves_no_quote_in_the_cache(
    cached_workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = LLMCache(cached_workspace / ".cache" / "llm")
    before = set(cache.entries())
    assert main(["forget", "Leaky", "--yes"]) == 0
    said = capsys.readouterr().out
    assert "evaluation cache entries quoting it" in said and ".cache/llm" in said
    assert _grep(cached_workspace, CANARY) == []
    kept = set(cache.entries())
    assert kept and kept < before  # the other agent's entries stay cached
    assert all(OTHER.encode() in p.read_bytes() for p in kept)
    assert _grep(cached_workspace, OTHER)


def test_the_report_names_the_entries_and_the_caches(cached_workspace: Path) -> None:
    cache_dir = (cached_workspace / ".cache" / "llm").resolve()
    report = forget("Leaky")
    assert report.cache_dirs == (cache_dir,)
    assert report.cache_entries and all(not p.exists() for p in report.cache_entries)
    assert _grep(cached_workspace, CANARY) == []


def test_a_cache_outside_the_workspace_is_cleaned_too(
    isolated_workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = tmp_path / "shared-cache"
    monkeypatch.setenv("MEMORYLAB_CACHE_DIR", str(outside))
    _leaky()
    cache = LLMCache(outside)
    cache.put("ab" * 32, {"request": {"messages": [{"content": f"User: remember {CANARY}"}]}})
    cache.put("cd" * 32, {"request": {"messages": [{"content": "User: unrelated words only"}]}})
    report = forget("Leaky")
    assert report.cache_dirs == (outside.resolve(),)
    assert [p.name for p in report.cache_entries] == [f"{'ab' * 32}.json"]
    assert _grep(outside, CANARY) == [] and len(list(cache.entries())) == 1
    assert f"caches searched: {outside.resolve()}" in str(report)


def test_forget_without_a_cache_says_none_was_found(isolated_workspace: Path) -> None:
    _leaky()
    report = forget("Leaky")
    assert report.cache_entries == () and report.cache_dirs == ()
    assert "caches searched: none found" in str(report)
