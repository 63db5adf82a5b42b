"""A langgraph checkpointer's own database, read directly: the SqliteSaver file
(langgraph-checkpoint-sqlite 3.1.2) that deepagents 0.7.32 wrote through, offline, in
data/foreign/deepagents/checkpointer/ beside the thread.json the generator exported from the same
run. The database reads to the same messages, times, compactions and model calls as that
thread.json; several threads are several records; a damaged blob, an extension type the serializer
does not write and a pickled blob are refused with one line naming the file. With
MEMORYLAB_DEEPAGENTS_PYTHON naming a venv's python where deepagents and
langgraph-checkpoint-sqlite are installed, a run is generated here and read too."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from contextlib import closing
from pathlib import Path

import pandas as pd
import pytest

from memorylab.analysis import (
    compactions_df,
    load_records,
    loader_for,
    memory_df,
    replay_validation,
)
from memorylab.cli import main
from memorylab.errors import InvalidSetting, MemoryFormatError

HERE = Path(__file__).resolve().parents[2] / "data" / "foreign" / "deepagents"
RUN = HERE / "checkpointer"
DATABASE = RUN / "checkpoints.sqlite"
OPENAI_SESSIONS = HERE.parent / "openai-agents" / "sessions.sqlite"
DEEPAGENTS_PYTHON = os.environ.get("MEMORYLAB_DEEPAGENTS_PYTHON")  # .ci/run sets it
MESSAGE_COLUMNS = ["segment", "position", "role", "timestamp", "content", "chars", "is_summary"]
COMPACTION_COLUMNS = ["time", "messages_archived", "carried_over", "tokens_before", "source"]


def _copy(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    shutil.copytree(RUN, folder)
    return folder / DATABASE.name


def _execute(database: Path, sql: str, *parameters: object) -> None:
    with closing(sqlite3.connect(database)) as connection, connection:
        connection.execute(sql, parameters)


def _same_run(database: Path, folder: Path) -> None:
    """The database read as the thread.json of the same run is read."""
    from_database = memory_df(str(database))
    from_json = memory_df(str(folder))
    assert len(from_database) == len(from_json) > 0
    pd.testing.assert_frame_equal(
        from_database[MESSAGE_COLUMNS].reset_index(drop=True),
        from_json[MESSAGE_COLUMNS].reset_index(drop=True),
    )
    compacted = compactions_df(str(database))
    recorded = compactions_df(str(folder))
    assert len(compacted) == len(recorded) == len(json.loads(
        (folder / "thread.json").read_text(encoding="utf-8"))["summarization_events"]) > 0  # fmt: skip
    pd.testing.assert_frame_equal(
        compacted[COMPACTION_COLUMNS].reset_index(drop=True),
        recorded[COMPACTION_COLUMNS].reset_index(drop=True),
    )
    [database_record] = load_records(database)
    [json_record] = load_records(folder)
    assert database_record.agent == json_record.agent
    differ = {"archive", "context_length", "threshold"}  # the file's name; what json keeps
    assert [
        {k: v for k, v in c.items() if k not in differ} for c in database_record.compactions
    ] == [{k: v for k, v in c.items() if k not in differ} for c in json_record.compactions]
    assert database_record.calls == json_record.calls  # each reply's usage_metadata
    assert len(database_record.calls) > 0


def test_the_database_reads_as_the_thread_json_of_the_same_run() -> None:
    assert loader_for(DATABASE).name == "deepagents"
    _same_run(DATABASE, RUN)


def test_what_the_database_does_not_keep_is_said_not_guessed() -> None:
    [record] = load_records(DATABASE)
    assert all("threshold" not in c and "context_length" not in c for c in record.compactions)
    assert any("neither the model's profile nor the summarization trigger" in n.message
               for n in record.notes)  # fmt: skip
    [row] = replay_validation(DATABASE).to_dict("records")
    [exported] = replay_validation(RUN).to_dict("records")
    assert row["verdict"] == "cannot check" and "trigger" in row["missing"]
    assert exported["verdict"] == "reproduced"  # thread.json keeps the profile and the trigger
    assert row["recorded_at"] == exported["recorded_at"]


def test_memorylab_report_and_stats_read_the_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report.html"
    assert main(["report", str(DATABASE), "-o", str(out)]) == 0
    assert "memorylab-deepagents-sample" in out.read_text(encoding="utf-8")
    capsys.readouterr()
    assert main(["stats", str(DATABASE)]) == 0
    [row] = [x for x in capsys.readouterr().out.splitlines() if x.startswith("memorylab-deep")]
    assert row.split()[1:4] == [str(len(memory_df(str(DATABASE)))), "4", "3"]  # messages, ...


def test_reading_writes_nothing_beside_the_database(tmp_path: Path) -> None:
    database = _copy(tmp_path)
    before = sorted(p.name for p in database.parent.iterdir())
    load_records(database)
    assert sorted(p.name for p in database.parent.iterdir()) == before


def test_only_a_database_with_the_savers_tables_is_a_deepagents_thread(tmp_path: Path) -> None:
    assert loader_for(OPENAI_SESSIONS).name == "openai-agents"
    other = tmp_path / "other.sqlite"
    _execute(other, "CREATE TABLE checkpoints (thread_id TEXT, checkpoint BLOB)")
    with pytest.raises(InvalidSetting, match="no loader reads"):
        loader_for(other)


def test_several_threads_are_several_records(tmp_path: Path) -> None:
    database = _copy(tmp_path)
    with closing(sqlite3.connect(database)) as connection, connection:
        for table in ("checkpoints", "writes"):
            columns = [row[1] for row in connection.execute(f"PRAGMA table_info({table})")]
            chosen = ", ".join("'second'" if c == "thread_id" else c for c in columns)
            connection.execute(f"INSERT INTO {table} SELECT {chosen} FROM {table}")
    first, second = load_records(database)
    assert (first.agent, second.agent) == ("memorylab-deepagents-sample", "second")
    assert len(first.compactions) == len(second.compactions) == 3
    assert {str(s.path) for s in first.segments}.isdisjoint(str(s.path) for s in second.segments)
    frame = memory_df(str(database))
    assert frame.groupby("agent").size().tolist() == [len(frame) // 2] * 2


@pytest.mark.parametrize(
    "damaged",
    ["x'c1'", "substr(checkpoint, 1, length(checkpoint) / 2)", "CAST(checkpoint || x'00' AS BLOB)"],
    ids=["a byte msgpack never writes", "cut in half", "a byte too many"],
)
def test_a_damaged_blob_is_refused_naming_the_file(tmp_path: Path, damaged: str) -> None:
    database = _copy(tmp_path)
    _execute(database, f"UPDATE checkpoints SET checkpoint = {damaged} WHERE checkpoint_id = "
             "(SELECT MAX(checkpoint_id) FROM checkpoints)")  # fmt: skip
    with pytest.raises(MemoryFormatError, match=r"is damaged") as raised:
        load_records(database)
    assert str(database) in str(raised.value) and "thread.json" in str(raised.value)


def test_an_unknown_extension_type_is_refused_naming_it(tmp_path: Path) -> None:
    database = _copy(tmp_path)
    # fixext 1 (0xd4) of type 42 holding an empty array (0x90): no code JsonPlusSerializer writes
    _execute(database, "UPDATE writes SET value = x'd42a90' WHERE rowid = "
             "(SELECT MIN(rowid) FROM writes WHERE channel = 'messages')")  # fmt: skip
    with pytest.raises(MemoryFormatError, match=r"extension type 42") as raised:
        load_records(database)
    assert str(database) in str(raised.value)


def test_a_pickled_blob_is_never_unpickled(tmp_path: Path) -> None:
    database = _copy(tmp_path)
    _execute(database, "UPDATE writes SET type = 'pickle' WHERE rowid = "
             "(SELECT MIN(rowid) FROM writes WHERE channel = 'messages')")  # fmt: skip
    with pytest.raises(MemoryFormatError, match=r"never unpickles"):
        load_records(database)


def test_a_message_the_json_serializer_wrote_is_read(tmp_path: Path) -> None:
    database = _copy(tmp_path)
    message = {"lc": 1, "type": "constructor",
               "id": ["langchain_core", "messages", "HumanMessage"],
               "kwargs": {"content": "hello from the json serializer", "id": "json-1"}}  # fmt: skip
    # the last message's write: after the last snapshot, so the walk folds it in
    _execute(database, "UPDATE writes SET type = 'json', value = ? WHERE rowid = (SELECT rowid "
             "FROM writes WHERE channel = 'messages' ORDER BY checkpoint_id DESC LIMIT 1)",
             json.dumps([message]).encode())  # fmt: skip
    last = memory_df(str(database)).iloc[-1]
    assert (last["role"], last["content"]) == ("user", "hello from the json serializer")


def _message_blob(name: str, fields: dict[str, object]) -> bytes:
    """A write of one LangChain message as JsonPlusSerializer packs it: ext type 5 (a pydantic
    model) holding its module, class, ``model_dump()`` and the method that rebuilds it."""
    import msgpack  # type: ignore[import-untyped]

    module = "langchain_core.messages." + ("modifier" if name == "RemoveMessage" else "human")
    packed = msgpack.packb([module, name, fields, "model_validate_json"])
    return msgpack.packb([msgpack.ExtType(5, packed)])  # type: ignore[no-any-return]


def test_writes_replace_and_remove_messages_by_id_as_add_messages_does(tmp_path: Path) -> None:
    database = _copy(tmp_path)
    frame = memory_df(str(database))
    [record] = load_records(database)
    with closing(sqlite3.connect(database)) as connection, connection:
        # the last step's checkpoint whose writes are folded in, and the ids of the messages
        [(checkpoint, task)] = connection.execute(
            "SELECT checkpoint_id, task_id FROM writes WHERE channel = 'messages' "
            "ORDER BY checkpoint_id DESC LIMIT 1"
        ).fetchall()
        [(index,)] = connection.execute(
            "SELECT MAX(idx) FROM writes WHERE checkpoint_id = ? AND task_id = ?",
            (checkpoint, task),
        ).fetchall()
        columns = "thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type"
        for offset, blob in enumerate([
            _message_blob("HumanMessage", {"type": "human", "content": "asked again",
                                           "id": "replaced-later"}),
            _message_blob("HumanMessage", {"type": "human", "content": "the final question",
                                           "id": "replaced-later"}),
            _message_blob("RemoveMessage", {"type": "remove", "content": "",
                                            "id": "replaced-later"}),
        ]):  # fmt: skip
            connection.execute(
                f"INSERT INTO writes ({columns}, value) VALUES (?, '', ?, ?, '', ?, 'messages', "
                "'msgpack', ?)",
                ("memorylab-deepagents-sample", checkpoint, task, index + 1 + offset, blob),
            )
    # appended, replaced in place, then removed: the thread is as it was
    assert memory_df(str(database))["content"].tolist() == frame["content"].tolist()
    with closing(sqlite3.connect(database)) as connection, connection:
        connection.execute("DELETE FROM writes WHERE idx = ? AND checkpoint_id = ?",
                           (index + 3, checkpoint))  # fmt: skip
    again = memory_df(str(database))
    assert len(again) == len(frame) + 1
    assert "the final question" in again["content"].tolist()
    assert "asked again" not in again["content"].tolist()
    assert len(load_records(database)[0].compactions) == len(record.compactions)


def _has_sqlite_saver(python: str) -> bool:
    done = subprocess.run([python, "-c", "import langgraph.checkpoint.sqlite"],
                          capture_output=True, timeout=120, check=False)  # fmt: skip
    return done.returncode == 0


@pytest.mark.skipif(not DEEPAGENTS_PYTHON, reason="set MEMORYLAB_DEEPAGENTS_PYTHON to a venv's "
                    "python with deepagents==0.7.32 to generate a thread here")  # fmt: skip
def test_a_database_the_real_package_writes_now(tmp_path: Path) -> None:
    assert DEEPAGENTS_PYTHON is not None
    if not _has_sqlite_saver(DEEPAGENTS_PYTHON):
        pytest.skip("langgraph-checkpoint-sqlite is not installed in MEMORYLAB_DEEPAGENTS_PYTHON's "
                    "venv: pip install langgraph-checkpoint-sqlite==3.1.2")  # fmt: skip
    run = tmp_path / "run"
    done = subprocess.run(
        [DEEPAGENTS_PYTHON, str(HERE / "generate.py"), str(run), "--turns", "12"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert loader_for(run / DATABASE.name).name == "deepagents"
    _same_run(run / DATABASE.name, run)
