"""Evaluation cases: from messages, from transcripts (hand-made files), from workspaces."""

from __future__ import annotations

import json
import os
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memorylab import Conversation
from memorylab.errors import InvalidSetting, StoreError
from memorylab.evaluate import (
    Case,
    Fact,
    Probe,
    cases_from_messages,
    cases_from_transcripts,
    cases_from_workspace,
)

START = datetime(2026, 4, 20, 9, 0, tzinfo=UTC)


def write_transcript(path: Path, sessions: list[list[tuple[str, str]]],
                     facts: list[tuple[str, str, str, int]],
                     probes: list[tuple[str, str, str, str]]) -> Path:  # fmt: skip
    """A transcript file in the bundled format (meta, messages, facts, probes)."""
    lines = [{"type": "meta", "name": path.stem, "seed": 1, "description": "hand-made",
              "sessions": len(sessions)}]  # fmt: skip
    n = 0
    for number, messages in enumerate(sessions, start=1):
        for role, content in messages:
            stamp = (START + timedelta(minutes=n)).isoformat()
            lines.append({"type": "message", "session": number, "role": role,
                          "content": content, "timestamp": stamp})  # fmt: skip
            n += 1
    for fid, category, text, index in facts:
        lines.append({"type": "fact", "id": fid, "category": category, "text": text,
                      "message_index": index})  # fmt: skip
    for pid, fid, question, answer in probes:
        lines.append({"type": "probe", "id": pid, "fact_id": fid, "question": question,
                      "answer": answer})  # fmt: skip
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    return write_transcript(
        tmp_path / "ops.jsonl",
        [
            [("user", "Deploy the API; the config lives at /srv/api/config.yaml."),
             ("assistant", "Staging listens on port 8443.")],
            [("user", "We decided to use blue-green deploys."),
             ("assistant", "Run `make deploy ENV=prod` when ready."),
             ("tool", "deploy finished in 42 s")],
        ],
        [
            ("f1", "path", "/srv/api/config.yaml", 0),
            ("f2", "number", "8443", 1),
            ("f3", "decision", "use blue-green deploys", 2),
            ("f4", "command", "make deploy ENV=prod", 3),
        ],
        [
            ("p1", "f1", "Where is the config?", "/srv/api/config.yaml"),
            ("p2", "f2", "Which port does staging use?", "8443"),
            ("p4", "f4", "Which command deploys?", "make deploy ENV=prod"),
        ],
    )


def test_case_normalizes_messages_and_repr() -> None:
    case = Case("c", ({"role": None, "content": {"k": 1}}, {"role": "user", "content": "hi"}))
    assert case.messages[0] == {"role": "unknown", "content": '{"k": 1}'}
    assert "2 messages" in repr(case)
    assert case.history_text == 'unknown: {"k": 1}\n\nuser: hi'
    with pytest.raises(InvalidSetting):
        Case("", ())
    with pytest.raises(InvalidSetting):
        Case("c", ("not a mapping",))  # type: ignore[arg-type]
    with pytest.raises(InvalidSetting, match="category"):
        Fact("f", "colour", "red")


def test_cases_from_messages() -> None:
    [case] = cases_from_messages([{"role": "user", "content": "x"}], id="one",
                                 facts=[Fact("f", "name", "x")], probes=[Probe("p", None, "q", "a")])  # fmt: skip
    assert case.id == "one" and len(case.facts) == 1 and len(case.probes) == 1


def test_whole_transcript_is_one_case(transcript: Path) -> None:
    [case] = cases_from_transcripts(transcript)
    assert case.id == "ops"
    assert len(case.messages) == 5
    assert [f.id for f in case.facts] == ["f1", "f2", "f3", "f4"]
    assert [p.id for p in case.probes] == ["p1", "p2", "p4"]
    assert case.metadata == {"transcript": "ops", "start": 0, "end": 5}
    assert isinstance(case.messages[0]["timestamp"], datetime)


def test_split_by_session_rebases_fact_indexes(transcript: Path) -> None:
    first, second = cases_from_transcripts(transcript, split="session")
    assert (first.id, second.id) == ("ops#s1", "ops#s2")
    assert [f.id for f in first.facts] == ["f1", "f2"]
    assert [(f.id, f.message_index) for f in second.facts] == [("f3", 0), ("f4", 1)]
    assert [p.id for p in second.probes] == ["p4"]
    fact = second.facts[1]
    assert fact.text in second.messages[fact.message_index]["content"]


def test_split_by_window(transcript: Path) -> None:
    cases = cases_from_transcripts([transcript], split="window", window=2)
    assert [c.id for c in cases] == ["ops#w0", "ops#w1", "ops#w2"]
    assert [len(c.messages) for c in cases] == [2, 2, 1]
    assert [f.id for f in cases[1].facts] == ["f3", "f4"]


def test_transcript_folder_and_errors(transcript: Path, tmp_path: Path) -> None:
    assert [c.id for c in cases_from_transcripts(tmp_path)] == ["ops"]
    with pytest.raises(StoreError):
        cases_from_transcripts(tmp_path / "missing.jsonl")
    with pytest.raises(InvalidSetting):
        cases_from_transcripts(transcript, split="chapter")  # type: ignore[arg-type]
    with pytest.raises(InvalidSetting):
        cases_from_transcripts(transcript, window=0)


# --------------------------------------------------------------------------- workspaces


def test_every_compaction_of_a_memorylab_workspace_is_a_case(isolated_workspace: Path) -> None:
    conv = Conversation(agent_name="Ops")
    conv.add("User", "Deploy the API to /srv/api.")
    conv.add("Ops", "Staging listens on port 8443.")
    conv.compact("Deploying the API to /srv/api; staging port 8443.",
                 summarizer_model="gpt-4o-mini", latency_s=1.5, cost_usd=0.002)  # fmt: skip
    conv.add("User", "Now use blue-green deploys.")
    conv.compact("API at /srv/api, port 8443, blue-green deploys chosen.")
    conv.add("User", "Thanks.")
    cases = cases_from_workspace(isolated_workspace)
    assert len(cases) == 2
    first, second = cases
    assert first.id.startswith("Ops/history_")
    assert [m["content"] for m in first.messages] == [
        "Deploy the API to /srv/api.", "Staging listens on port 8443."]  # fmt: skip
    assert first.summary == "Deploying the API to /srv/api; staging port 8443."
    assert first.metadata["summarizer_model"] == "gpt-4o-mini"
    assert first.metadata["latency_s"] == 1.5 and first.metadata["cost_usd"] == 0.002
    assert first.metadata["reference_format"] is False
    # the second archive starts with the first summary: that is history, not its summary
    assert second.messages[0]["content"].startswith("[Compressed Memory Summary]")
    assert second.summary == "API at /srv/api, port 8443, blue-green deploys chosen."
    # one agent folder, one MEMORY.md, the list form and None give the same cases
    folder = isolated_workspace / "agents" / "Ops"
    assert [c.id for c in cases_from_workspace(folder)] == [c.id for c in cases]
    assert [c.id for c in cases_from_workspace([folder, isolated_workspace])] == [
        c.id for c in cases]  # fmt: skip
    assert [c.id for c in cases_from_workspace(None)] == [c.id for c in cases]
    only = cases_from_workspace(folder / "MEMORY.md")
    assert [c.summary for c in only] == [second.summary]


REFERENCE_ARCHIVE = """# Agent Memory

**Conversation:** Quant_conversation
**Created:** 2026-04-20T18:33:12

---

## Interaction Log

### Human — 2026-04-20T18:33:12.504211

What is the P/E ratio of NVDA? Save the result to /tmp/nvda.csv

---

### Quant — 2026-04-20T18:33:15

The trailing P/E is 52.3.

---

"""

REFERENCE_NEXT = """# Agent Memory

**Conversation:** Quant_conversation
**Created:** 2026-04-20T18:40:00

---

## Interaction Log

### System — 2026-04-20T18:40:00.123456

[Compressed Memory Summary] NVDA P/E 52.3, saved to /tmp/nvda.csv.

---

### user — 2026-04-20T18:41:02

Now AMD?

---

"""


def test_reference_workspace_without_lineage(tmp_path: Path) -> None:
    folder = tmp_path / "ws" / "agents" / "Quant"
    (folder / "archive").mkdir(parents=True)
    (folder / "archive" / "history_2026-04-20_18-40-00.md").write_text(REFERENCE_ARCHIVE)
    (folder / "MEMORY.md").write_text(REFERENCE_NEXT)
    (folder / "archive" / "notes.md").write_text("not an archive")
    [case] = cases_from_workspace(tmp_path / "ws")
    assert case.summary == "NVDA P/E 52.3, saved to /tmp/nvda.csv."
    assert [m["role"] for m in case.messages] == ["Human", "Quant"]
    assert case.metadata["reference_format"] is True
    assert case.metadata["summarizer_model"] is None


def test_archive_without_a_summary_after_it_is_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "agents" / "Crashed"
    (folder / "archive").mkdir(parents=True)
    (folder / "archive" / "history_2026-04-20_18-40-00.md").write_text(REFERENCE_ARCHIVE)
    # the reference crashed between archiving and re-seeding: MEMORY.md is the same log
    (folder / "MEMORY.md").write_text(REFERENCE_ARCHIVE)
    assert cases_from_workspace(tmp_path) == []


def test_pending_archive_of_an_interrupted_compaction_is_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "agents" / "Quant"
    (folder / "archive").mkdir(parents=True)
    (folder / "archive" / "history_2026-04-20_18-40-00.md").write_text(REFERENCE_ARCHIVE)
    (folder / "MEMORY.md").write_text(REFERENCE_NEXT)
    intent = {"archive": "history_2026-04-20_18-40-00.md"}
    (folder / ".MEMORY.md.intent.json").write_text(json.dumps(intent))
    assert cases_from_workspace(folder) == []


def test_workspace_errors(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="does not exist"):
        cases_from_workspace(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(StoreError, match="is not a workspace"):
        cases_from_workspace(tmp_path / "empty")


def test_same_agent_in_two_workspaces_gets_distinct_ids(tmp_path: Path) -> None:
    for name in ("ws1", "ws2"):
        folder = tmp_path / name / "agents" / "Quant"
        (folder / "archive").mkdir(parents=True)
        (folder / "archive" / "history_2026-04-20_18-40-00.md").write_text(REFERENCE_ARCHIVE)
        (folder / "MEMORY.md").write_text(REFERENCE_NEXT)
    cases = cases_from_workspace([tmp_path / "ws1", tmp_path / "ws2", tmp_path / "ws1"])
    assert [c.id for c in cases] == [
        "Quant/history_2026-04-20_18-40-00.md", "ws2/Quant/history_2026-04-20_18-40-00.md"]  # fmt: skip


def test_a_nested_agent_is_found_and_named_by_its_path(tmp_path: Path) -> None:
    """The reference framework writes an agent named ``team/quant`` to agents/team/quant/."""
    folder = tmp_path / "agents" / "team" / "quant"
    (folder / "archive").mkdir(parents=True)
    (folder / "archive" / "history_2026-04-20_18-40-00.md").write_text(REFERENCE_ARCHIVE)
    (folder / "MEMORY.md").write_text(REFERENCE_NEXT)
    cases = cases_from_workspace(tmp_path)
    assert [c.id for c in cases] == ["team/quant/history_2026-04-20_18-40-00.md"]
    assert cases[0].metadata["agent"] == "team/quant"


def test_a_fifo_in_place_of_the_records_is_not_waited_on(tmp_path: Path) -> None:
    """compactions.jsonl as a FIFO: the cases are read without its records (issue 17: FIFOs
    are refused everywhere; reading it blocked cases_from_workspace forever)."""
    folder = tmp_path / "agents" / "Quant"
    (folder / "archive").mkdir(parents=True)
    (folder / "archive" / "history_2026-04-20_18-40-00.md").write_text(REFERENCE_ARCHIVE)
    (folder / "MEMORY.md").write_text(REFERENCE_NEXT)
    os.mkfifo(folder / "compactions.jsonl")
    found: list[list[Case]] = []
    reader = threading.Thread(target=lambda: found.append(cases_from_workspace(tmp_path)),
                              daemon=True)  # fmt: skip
    reader.start()
    reader.join(timeout=300)  # a hang guard: the FIFO blocks forever
    assert not reader.is_alive(), "cases_from_workspace is blocked on the FIFO"
    assert [case.metadata["summarizer_model"] for case in found[0]] == [None]
