"""forget and purge clean every holder of memory text (the model-call cache of comparisons) in
a process that never imports the evaluation: the holders are declared at the memory floor by
where they live, not registered by the module that writes them (privacy stays below evaluate).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memorylab import Conversation
from memorylab.evaluate import LLMCache, default_cache_dir

CANARY = "CANARY-51d0e2b7-locker"
QUOTED = f"the locker code is {CANARY}, keep it safe"
SUMMARY = "The user keeps a locker code; the weekly report goes out on Fridays."

FRESH_PROCESS = """
import json, sys
from datetime import UTC, datetime, timedelta
from memorylab.privacy import forget, purge
if sys.argv[1] == "forget":
    removed = forget("Leaky").cache_entries
else:
    purge(older_than="1d", now=datetime.now(UTC) + timedelta(days=3))
    removed = ()
evaluation = sorted(m for m in sys.modules if m.startswith("memorylab.evaluate"))
print(json.dumps({"removed": [p.name for p in removed], "evaluation": evaluation}))
"""


def _cached(workspace: Path) -> LLMCache:
    """An agent whose message and summary the workspace's cache quotes: a summary call that
    read the message, a reader call that read the summary it answered, an unrelated entry."""
    conversation = Conversation(agent_name="Leaky")
    conversation.add("User", f"Please remember: {QUOTED}.")
    conversation.add("User", "Also send the weekly report on Fridays.")
    cache = LLMCache(workspace / ".cache" / "llm")
    reply = {"choices": [{"message": {"role": "assistant", "content": SUMMARY}}]}
    cache.put("a1" * 32, {"request": {"messages": [{"content": f"User: {QUOTED}"}]},
                          "response": reply})  # fmt: skip
    cache.put("b2" * 32, {"request": {"messages": [{"content": f"Summary: {SUMMARY} Q?"}]}})
    cache.put("c3" * 32, {"request": {"messages": [{"content": "User: blue-green deploys"}]}})
    return cache


@pytest.mark.parametrize("how", ["forget", "purge"])
def test_a_process_that_never_imported_the_evaluation_cleans_its_cache(
    isolated_workspace: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    monkeypatch.delenv("MEMORYLAB_CACHE_DIR", raising=False)
    assert default_cache_dir() == isolated_workspace / ".cache" / "llm"
    cache = _cached(isolated_workspace)
    env = {**os.environ, "WORKSPACE_DIR": str(isolated_workspace)}
    done = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS, how],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.splitlines()[-1])
    assert said["evaluation"] == []  # the cache was cleaned without the evaluation package
    if how == "forget":
        assert sorted(said["removed"]) == [f"{'a1' * 32}.json", f"{'b2' * 32}.json"]
    assert [p.name for p in cache.entries()] == [f"{'c3' * 32}.json"]
    assert not (isolated_workspace / "agents" / "Leaky").exists()
