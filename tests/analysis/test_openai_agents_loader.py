"""The OpenAI Agents SDK's session databases, as openai-agents 0.24.0 writes them
(data/foreign/openai-agents/: a real run, offline, with a scripted model, two sessions in
one file, one of them an OpenAIResponsesCompactionSession over a SQLiteSession), read through the
registry: one record per session, its items as messages, its compaction items as compactions, what
the format does not record said in notes, and `memorylab report` on the file. With
MEMORYLAB_OPENAI_AGENTS_PYTHON naming a venv's python where openai-agents is installed, a database
is generated here and read too."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

import pytest

from memorylab.analysis import (
    AgentRecord,
    compactions_df,
    get_loader,
    load_records,
    loader_for,
    memory_df,
    token_growth,
)
from memorylab.cli import main
from memorylab.errors import InvalidSetting, MemoryFormatError

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "foreign" / "openai-agents"
SAMPLE = SAMPLES / "sessions.sqlite"
AGENTS_PYTHON = os.environ.get("MEMORYLAB_OPENAI_AGENTS_PYTHON")  # .ci/run sets it


def _items(path: Path, messages: str = "agent_messages") -> dict[str, list[dict[str, object]]]:
    """Each run's items as the file holds them, read here with sqlite3 and json alone: a
    session's rows, or where AdvancedSQLiteSession's message_structure places them in branches,
    each branch's (``session@branch``, the first branch ``main`` named by the session)."""
    with closing(sqlite3.connect(f"{path.resolve().as_uri()}?immutable=1", uri=True)) as db:
        rows = {
            row_id: (session, json.loads(data))
            for row_id, session, data in db.execute(
                f"SELECT id, session_id, message_data FROM {messages} ORDER BY id"
            )
        }
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master")}
        structure = (
            db.execute(
                "SELECT session_id, branch_id, message_id FROM message_structure "
                "ORDER BY branch_id != 'main', sequence_number"
            ).fetchall()
            if "message_structure" in tables
            else []
        )
    found: dict[str, list[dict[str, object]]] = {}
    branched = {session for session, _, _ in structure}
    for session, item in rows.values():
        if session not in branched:
            found.setdefault(session, []).append(item)
    for session, branch, message in structure:
        run = session if branch == "main" else f"{session}@{branch}"
        found.setdefault(run, []).append(rows[message][1])
    return found


def _messages(record: AgentRecord) -> list[tuple[str, str]]:
    """A record's messages, each once (the copies a compaction kept left out), in order."""
    return [
        (m.role, m.content)
        for segment in record.segments
        for n, m in enumerate(segment.document.messages)
        if n not in segment.repeated
    ]


def _check(path: Path) -> list[AgentRecord]:
    items = _items(path)
    records = load_records(path)
    assert sorted(r.agent for r in records) == sorted(items)  # one per session (and branch)
    for record in records:
        own = items[record.agent]
        compactions = [i for i in own if i.get("type") == "compaction"]
        assert record.format == "openai-agents"
        assert len(record.compactions) == len(compactions)
        assert not record.calls  # the file records no usage per call
        assert {n.kind for n in record.notes} == {"not-recorded"}
        assert all(n.file == str(path) for n in record.notes)
        messages = _messages(record)
        assert len(messages) == len(own) - len(compactions)  # every other item is a message
        calls = [i for i in own if i.get("type") == "function_call"]
        outputs = [i for i in own if i.get("type") == "function_call_output"]
        assert [c for r, c in messages if r == "tool"] == [o["output"] for o in outputs]
        assert sum(c.startswith("run(") for r, c in messages if r == "assistant") == len(calls)
        users = [i["content"] for i in own if i.get("role") == "user" and "type" not in i]
        assert all(any(c == text for r, c in messages if r == "user") for text in users)
        times = [m.timestamp for s in record.segments for m in s.document.messages]
        assert all(t.tzinfo is not None for t in times) and times == sorted(times)
        for compaction in record.compactions:
            assert compaction["extra"]["recorded"] == []  # no summary, no tokens: encrypted
            assert "tokens_before" not in compaction and "summary_chars" not in compaction
    return records


def test_the_sample_is_chosen_by_what_it_is(tmp_path: Path) -> None:
    assert loader_for(SAMPLE).name == "openai-agents"
    other = tmp_path / "other.sqlite"  # a SQLite database, not the SDK's
    with closing(sqlite3.connect(other)) as db:
        db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, session_id TEXT, body TEXT)")
    with pytest.raises(InvalidSetting, match="no loader reads"):
        loader_for(other)
    text = tmp_path / "sessions.sqlite"  # the name, not what it is
    text.write_text("SQLite format 2, not a database\n")
    assert not get_loader("openai-agents").handles(text)


def test_each_session_is_a_record_with_its_compactions() -> None:
    records = {r.agent: r for r in _check(SAMPLE)}
    assert list(records) == [
        "pipeline-migration",
        "literature-review",
        "checkout-bug-hunt",
        "checkout-bug-hunt@retry",
    ]
    compacted = records["pipeline-migration"]
    assert len(compacted.compactions) == 1  # the last replacement's compaction item
    assert not any(r.compactions for r in records.values() if r is not compacted)
    kept = compacted.compactions[0]["extra"]["kept"]
    assert kept == compacted.compactions[0]["messages_archived"] > 0  # the user messages
    notes = " ".join(n.message for n in compacted.notes)
    assert "encrypted" in notes and "no usage per model call" in notes
    plain = records["literature-review"]
    assert "plain SQLiteSession never compacts" in " ".join(n.message for n in plain.notes)


def test_branches_and_turn_usage_of_an_advanced_session() -> None:
    """AdvancedSQLiteSession: a branch made from turn 2 shares the first turn's rows with main
    and adds its own; the usage summed per user turn is a note, never calls."""
    records = {r.agent: r for r in load_records(SAMPLE)}
    main_run, branch = records["checkout-bug-hunt"], records["checkout-bug-hunt@retry"]
    shared = [m.content for m in branch.segments[-1].document.messages[:2]]
    assert shared == [m.content for m in main_run.segments[-1].document.messages[:2]]
    with closing(sqlite3.connect(f"{SAMPLE.resolve().as_uri()}?immutable=1", uri=True)) as db:
        usage = dict(
            db.execute(
                "SELECT branch_id, SUM(input_tokens) FROM turn_usage "
                "WHERE session_id = 'checkout-bug-hunt' GROUP BY branch_id"
            ).fetchall()
        )
    for record, name in ((main_run, "main"), (branch, "retry")):
        assert not record.calls
        assert any(f"{usage[name]} input" in n.message for n in record.notes)


def test_frames_read_the_file() -> None:
    frame = memory_df(SAMPLE)
    assert {"pipeline-migration", "literature-review", "checkout-bug-hunt@retry"} <= set(
        frame["agent"]
    )
    assert len(compactions_df(SAMPLE)) == 1
    growth = token_growth(frame)  # its compactions are the file's compaction items
    assert growth.groupby("agent")["compaction"].sum().to_dict() == {
        "checkout-bug-hunt": 0,
        "checkout-bug-hunt@retry": 0,
        "literature-review": 0,
        "pipeline-migration": 1,
    }


def test_renamed_tables_and_a_damaged_row_are_read(tmp_path: Path) -> None:
    """The caller may name the tables (``sessions_table``, ``messages_table``); a row that is no
    JSON is left out, as the SDK leaves it out, with a note."""
    path = tmp_path / "renamed.db"
    shutil.copyfile(SAMPLE, path)
    with closing(sqlite3.connect(path)) as db:
        db.execute("ALTER TABLE agent_sessions RENAME TO my_sessions")
        db.execute("ALTER TABLE agent_messages RENAME TO my_items")
        db.execute(
            "INSERT INTO my_items (session_id, message_data) VALUES ('literature-review', '{')"
        )
        db.commit()
    records = _check_renamed(path)
    assert any("no JSON object" in n.message for n in records[1].notes)


def _check_renamed(path: Path) -> list[AgentRecord]:
    assert loader_for(path).name == "openai-agents"
    records = load_records(path)
    assert [r.agent for r in records][:2] == ["pipeline-migration", "literature-review"]
    return records


def test_reading_writes_nothing_beside_the_file(tmp_path: Path) -> None:
    """The SDK writes in WAL mode: a read-only open would leave -wal and -shm files."""
    folder = tmp_path / "copy"
    folder.mkdir()
    path = folder / "sessions.sqlite"
    shutil.copyfile(SAMPLE, path)
    load_records(path)
    assert sorted(p.name for p in folder.iterdir()) == ["sessions.sqlite"]


def test_a_session_still_open_is_read_with_its_wal(tmp_path: Path) -> None:
    """While a session is open the SDK's recent items are in the -wal file beside the database
    (WAL mode): they are read too."""
    path = tmp_path / "live.sqlite"
    shutil.copyfile(SAMPLE, path)
    item = json.dumps({"content": "still open", "role": "user"})
    with closing(sqlite3.connect(path)) as writer:
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute(
            "INSERT INTO agent_messages (session_id, message_data) VALUES (?, ?)",
            ("literature-review", item),
        )
        writer.commit()
        assert path.with_name("live.sqlite-wal").stat().st_size > 0
        records = {r.agent: r for r in load_records(path)}
    last = records["literature-review"].segments[-1].document.messages[-1]
    assert (last.role, last.content) == ("user", "still open")


def test_a_damaged_database_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "cut.sqlite"
    path.write_bytes(SAMPLE.read_bytes()[:1024])  # the header and part of the schema
    with pytest.raises(MemoryFormatError, match=r"cut\.sqlite"):
        get_loader("openai-agents").load(path)


def test_report_on_the_sample(tmp_path: Path) -> None:
    html = tmp_path / "report.html"
    assert main(["report", str(SAMPLE), "-o", str(html)]) == 0
    text = html.read_text(encoding="utf-8")
    assert all(name in text for name in ("pipeline-migration", "checkout-bug-hunt@retry"))


@pytest.mark.skipif(
    not AGENTS_PYTHON,
    reason="set MEMORYLAB_OPENAI_AGENTS_PYTHON to a python with openai-agents 0.24.0 installed "
    "to generate a session database here",
)
def test_a_database_generated_here(tmp_path: Path) -> None:
    out = tmp_path / "run.sqlite"
    command = [str(AGENTS_PYTHON), str(SAMPLES / "generate.py"), str(out), "--turns", "24",
               "--plain-turns", "4", "--advanced-turns", "3", "--latency", "0"]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True, timeout=300)
    records = _check(out)
    assert len(records) == 4 and len(records[0].compactions) >= 1
    html = tmp_path / "report.html"
    assert main(["report", str(out), "-o", str(html)]) == 0
