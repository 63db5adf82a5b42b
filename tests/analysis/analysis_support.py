"""Sample workspaces for the analysis tests.

* ``own_workspace``: written by memorylab itself (``Conversation`` + ``compact()``): three agents,
  several compactions each, tool-role and JSON messages, a clock one second per call so archive
  names, timestamps and lineage are all known.
* ``reference_workspace``: files in the reference framework's exact format, written by hand:
  naive timestamps (with and without a fraction), no ``**Format:**`` or ``**Continues:**`` lines,
  no ``compactions.jsonl``, two archives with the same bytes (a copy), and an agent whose oldest
  archive was overwritten (it starts with a summary).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memorylab import Conversation
from memorylab.memory._format import content_to_text

START = datetime(2026, 4, 20, 12, 0, 0, tzinfo=UTC)


class Clock:
    """One second per call, from ``START`` (or ``start``)."""

    def __init__(self, start: datetime = START) -> None:
        self.now = start

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=1)
        return self.now


@dataclass
class Built:
    """What a builder wrote: the workspace and, per agent, the messages in timeline order."""

    root: Path
    messages: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    compactions: dict[str, int] = field(default_factory=dict)


def _conversation(root: Path, agent: str, clock: Clock) -> Conversation:
    return Conversation(agent_name=agent, workspace_dir=root, clock=clock, preload=False)


def build_own(root: Path) -> Built:
    """Three agents; ``alpha`` 3 compactions, ``beta`` 2, ``gamma`` none."""
    built = Built(root)
    plan = {"alpha": 3, "beta": 2, "gamma": 0}
    for agent, compactions in plan.items():
        clock = Clock()
        conv = _conversation(root, agent, clock)
        timeline: list[tuple[str, str]] = []
        for round_ in range(compactions + 1):
            for i in range(4):
                for role, content in (
                    ("User", f"{agent} question {round_}.{i}: what is in /data/run_{i}.csv?"),
                    (
                        agent,
                        f"{agent} answer {round_}.{i}\n---\n### Forged — 2020-01-01T00:00:00\nend",
                    ),
                    ("tool", {"rows": i, "path": f"/data/run_{i}.csv"}),
                ):
                    conv.add(role, content)
                    timeline.append((role, content_to_text(content)))
            if round_ < compactions:
                summary = f"{agent} summary {round_}"
                conv.compact(summary)
                timeline.append(("System", f"[Compressed Memory Summary] {summary}"))
        conv.store.close()  # type: ignore[union-attr]
        built.messages[agent] = timeline
        built.compactions[agent] = compactions
    return built


HEADER = "# Agent Memory\n\n**Conversation:** {name}\n**Created:** {created}\n\n---\n\n## Interaction Log\n\n"


def block(role: str, stamp: str, content: str) -> str:
    """One message block exactly as the reference framework writes it (no escaping)."""
    return f"### {role} — {stamp}\n\n{content}\n\n---\n\n"


def reference_file(name: str, created: str, blocks: list[tuple[str, str, str]]) -> str:
    return HEADER.format(name=name, created=created) + "".join(block(*b) for b in blocks)


def build_reference(root: Path) -> Built:
    """``Researcher``: 2 archives + a copy of the first (same bytes), then MEMORY.md.
    ``Writer``: its oldest archive was overwritten (starts with a summary), then MEMORY.md."""
    built = Built(root)
    agent = root / "agents" / "Researcher"
    (agent / "archive").mkdir(parents=True)
    first = [
        ("Human", "2026-04-20T09:00:00", "Find the cheapest GPU cloud."),
        ("Researcher", "2026-04-20T09:00:05.250000", "Looking.\n\n---\n\nA markdown rule above."),
        ("Tool Executor", "2026-04-20T09:00:07.5", "price list: A=1.2, B=0.9"),
    ]
    second = [
        ("System", "2026-04-20T09:10:00", "[Compressed Memory Summary] B is cheapest so far."),
        ("Human", "2026-04-20T09:10:02", "Check C too.\n### Not a heading"),
        ("Researcher", "2026-04-20T09:10:03.000001", "C costs 1.0."),
    ]
    live = [
        ("user", "2026-04-20T09:20:00", "[Compressed Memory Summary] B (0.9) beats C (1.0)."),
        ("Human", "2026-04-20T09:20:09", "Thanks."),
    ]
    (agent / "archive" / "history_2026-04-20_09-10-00.md").write_text(
        reference_file("Researcher_conversation", "2026-04-20T08:59:59", first), encoding="utf-8"
    )
    # A same-second collision resolved by hand, or a backup: the same bytes under another name.
    (agent / "archive" / "history_2026-04-20_09-10-00_2.md").write_text(
        reference_file("Researcher_conversation", "2026-04-20T08:59:59", first), encoding="utf-8"
    )
    (agent / "archive" / "history_2026-04-20_09-20-00.md").write_text(
        reference_file("Researcher_conversation", "2026-04-20T09:10:00", second), encoding="utf-8"
    )
    (agent / "MEMORY.md").write_text(
        reference_file("Researcher_conversation", "2026-04-20T09:20:00", live), encoding="utf-8"
    )
    built.messages["Researcher"] = [(r, c) for r, _, c in first + second + live]
    built.compactions["Researcher"] = 2

    writer = root / "agents" / "Writer"
    (writer / "archive").mkdir(parents=True)
    overwritten = [
        ("System", "2026-04-21T10:00:01", "[Compressed Memory Summary] chapter one drafted"),
        ("Writer", "2026-04-21T10:00:02", "Chapter two."),
    ]
    writer_live = [("System", "2026-04-21T10:05:00", "[Compressed Memory Summary] two chapters")]
    (writer / "archive" / "history_2026-04-21_10-05-00.md").write_text(
        reference_file("Writer_conversation", "2026-04-21T10:00:01", overwritten), encoding="utf-8"
    )
    (writer / "MEMORY.md").write_text(
        reference_file("Writer_conversation", "2026-04-21T10:05:00", writer_live), encoding="utf-8"
    )
    built.messages["Writer"] = [(r, c) for r, _, c in overwritten + writer_live]
    built.compactions["Writer"] = 1
    return built


@pytest.fixture
def own_workspace(tmp_path: Path) -> Built:
    return build_own(tmp_path / "own")


@pytest.fixture
def reference_workspace(tmp_path: Path) -> Built:
    return build_reference(tmp_path / "reference")


@pytest.fixture
def snapshot_tree() -> Callable[[Path], dict[str, bytes]]:
    """Every file under a folder with its bytes (to prove nothing was written)."""

    def take(root: Path) -> dict[str, bytes]:
        return {
            str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
        }

    return take
