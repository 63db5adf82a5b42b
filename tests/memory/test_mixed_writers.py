"""memorylab and the real reference framework writing one agent's memory at the same time (see
``mixed_writers.py``): memorylab loses none of its messages, ever, and the loaders read every
message once; how many of the reference's own appends survive memorylab's compactions is
printed (its target is 0 lost as well)."""

from __future__ import annotations

import os
import subprocess
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest

from memorylab import Conversation, read_memory
from memorylab.analysis import memory_df, memory_df_with_problems
from mixed_writers import AGENT, run, swarms_python

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        swarms_python() is None,
        reason="needs the reference framework: set $MEMORYLAB_SWARMS_PYTHON to a Python with "
        "swarms==16.0.3 (.ci/run makes one)",
    ),
]


@pytest.mark.parametrize("reference_compacts", [False, True], ids=["ref-appends", "ref-compacts"])
def test_both_writers_at_once(tmp_path: Path, reference_compacts: bool) -> None:
    outcome = run(tmp_path, count=400, every=20, reference_every=100 if reference_compacts else 0)
    print(f"\nmixed writers ({'reference compacts too' if reference_compacts else 'reference appends'}): {outcome}")
    assert outcome.memorylab_lost == 0 and outcome.memorylab_duplicated == 0
    assert outcome.unparseable == 0
    assert outcome.reference_duplicated == 0


# The reference's compact() with a pause between its archive (it has read MEMORY.md) and its
# removal of MEMORY.md: the window in which memorylab compacted in the failing CI run.
_PAUSED_REFERENCE = textwrap.dedent(
    """
    import os, sys, time
    from swarms.structs.conversation import Conversation
    memory_md, archived, go = sys.argv[1:4]
    archive = Conversation._archive_memory_md

    def archive_then_wait(self):
        archive(self)
        open(archived, "w").close()
        while not os.path.exists(go):
            time.sleep(0.001)

    Conversation._archive_memory_md = archive_then_wait
    conv = Conversation(name="reference", time_enabled=True, memory_md_path=memory_md)
    conv.compact(summary="reference summary")
    print("done")
    """
)


def test_reference_compacting_around_a_memorylab_compaction(tmp_path: Path) -> None:
    """The reference reads and archives MEMORY.md; memorylab appends, compacts (its archive
    holds what the reference archived, and more); then the reference removes memorylab's new
    MEMORY.md and re-seeds it. memorylab's next append carries over its summary, which was
    only in the removed file; every message is read once."""
    python = swarms_python()
    assert python is not None
    workspace = tmp_path / "workspace"
    conv = Conversation(agent_name=AGENT, workspace_dir=workspace, preload=False)
    for n in range(5):
        conv.add("User", f"ml-{n}")
    memory_md = conv.memory_md_path
    assert memory_md is not None
    archived, go = tmp_path / "archived", tmp_path / "go"
    env = {**os.environ, "SWARMS_TELEMETRY_ON": "false", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "LITELLM_OFFLINE_MODE": "true", "HF_HUB_OFFLINE": "1"}  # fmt: skip
    reference = subprocess.Popen(
        [python, "-c", _PAUSED_REFERENCE, str(memory_md), str(archived), str(go)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not archived.exists():
            assert reference.poll() is None, reference.communicate()[1][-3000:]
            assert time.monotonic() < deadline, "the reference did not archive in 120 s"
            time.sleep(0.01)
        conv.add("User", "ml-5")  # after the reference read the file: only in memorylab's archive
        conv.compact("memorylab summary")
        go.touch()
        _, err = reference.communicate(timeout=120)
        assert reference.returncode == 0, err[-3000:]
    finally:
        if reference.poll() is None:
            reference.kill()
            reference.wait()
    conv.add("User", "ml-6")

    live = [m.content for m in read_memory(memory_md).messages]
    assert live[0] == "reference summary"
    assert live[1:] == ["[Compressed Memory Summary] memorylab summary", "ml-6"]
    stored: Counter[str] = Counter(live)
    for archive in (memory_md.parent / "archive").glob("*.md"):
        stored.update(m.content for m in read_memory(archive).messages)
    assert stored["ml-0"] == 2  # both archived the file: two copies on disk
    read = memory_df_with_problems(memory_md.parent)
    counted = Counter(read.frame["content"])
    expected = [f"ml-{n}" for n in range(7)]
    expected += ["reference summary", "[Compressed Memory Summary] memorylab summary"]
    assert {content: counted[content] for content in expected} == dict.fromkeys(expected, 1)
    assert len(read.frame) == len(expected)
    assert "duplicate" in set(read.problems["kind"])


def test_agents_the_reference_names_with_a_slash_are_read(tmp_path: Path) -> None:
    """The real reference's ``Agent(agent_name="team/alpha", persistent_memory=True)`` writes
    agents/team/alpha/MEMORY.md; the loaders read it as agent ``team/alpha`` (issue 17: a
    workspace report silently left such agents out)."""
    python = swarms_python()
    assert python is not None
    script = textwrap.dedent(
        """
        from swarms import Agent
        for name in ("team/alpha", "solo"):
            agent = Agent(agent_name=name, model_name="gpt-4o-mini", max_loops=1, print_on=False,
                          persistent_memory=True)
            agent.short_memory.add("user", f"hello from {name}")
        """
    )
    env = {**os.environ, "WORKSPACE_DIR": str(tmp_path), "SWARMS_TELEMETRY_ON": "false",
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_OFFLINE_MODE": "true"}  # fmt: skip
    done = subprocess.run([python, "-c", script], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "agents" / "team" / "alpha" / "MEMORY.md").is_file()
    frame = memory_df(tmp_path)
    by_agent = dict(zip(frame["agent"].astype(str), frame["content"], strict=True))
    assert by_agent == {"solo": "hello from solo", "team/alpha": "hello from team/alpha"}


def test_a_reference_compaction_beside_memorylab_is_a_compaction_with_a_summary(
    tmp_path: Path,
) -> None:
    """memorylab compacts (and records it in compactions.jsonl), then the real reference's plain
    ``compact(summary)`` archives MEMORY.md and re-seeds it with the summary, unmarked, as its
    first block (System): compactions_df lists both compactions, memory_df flags both summaries,
    and cases_from_workspace makes a case of each (issue 17)."""
    from memorylab.analysis import compactions_df
    from memorylab.evaluate import cases_from_workspace

    python = swarms_python()
    assert python is not None
    conv = Conversation(agent_name=AGENT, workspace_dir=tmp_path, preload=False)
    for n in range(3):
        conv.add("User", f"ml-{n}")
    conv.compact("memorylab summary")
    conv.add("User", "ml-after")
    script = textwrap.dedent(
        """
        import sys
        from swarms.structs.conversation import Conversation
        conv = Conversation(name="ref", time_enabled=True, memory_md_path=sys.argv[1])
        conv.add("user", "ref-message")
        conv.compact("reference plain summary")
        conv.add("user", "ref-after")
        """
    )
    env = {**os.environ, "SWARMS_TELEMETRY_ON": "false", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "LITELLM_OFFLINE_MODE": "true"}  # fmt: skip
    done = subprocess.run([python, "-c", script, str(conv.memory_md_path)], env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    compactions = compactions_df(tmp_path)
    assert list(compactions["source"]) == ["jsonl", "inferred"]
    assert list(compactions["messages_archived"]) == [3, 3]
    frame = memory_df(tmp_path)
    summaries = list(frame.loc[frame["is_summary"], "content"])
    assert summaries == ["[Compressed Memory Summary] memorylab summary", "reference plain summary"]
    assert [case.summary for case in cases_from_workspace(tmp_path)] == [
        "memorylab summary",
        "reference plain summary",
    ]
