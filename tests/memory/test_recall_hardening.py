"""Recall keeps the core's promises (issue 36): a damaged index is built again and said so once;
nothing at the index's names blocks a recall, a compaction or a deletion; a long question costs
what its words cost; a query when nothing changed lists no archive; an agent's recall tool
searches its own memory; bad input gets memorylab's errors, never a raw one."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import selectors
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memorylab import Conversation
from memorylab.agent import Agent
from memorylab.errors import InvalidSetting, MemorylabError
from memorylab.memory import (
    MemoryDocument,
    Message,
    recall,
    recall_messages,
    render_memory,
    update_recall_index,
)
from memorylab.memory import _format as fmt
from memorylab.memory import _recall_index as index
from memorylab.memory._paths import MemoryPaths
from memorylab.tools import Tool, recall_tool
from memorylab.transcripts import bundled_transcripts, load_transcript

ROOT = Path(__file__).resolve().parents[2]
WARNING = "not a recall index"  # what the one warning of a rebuild says


def _agent(name: str = "Ops", archives: int = 4, per: int = 6) -> Conversation:
    """An agent with ``archives`` compactions of ``per`` messages, each message holding a word
    of its own (``codeword<archive>x<message>``), and its recall index built."""
    conv = Conversation(agent_name=name)
    for a in range(archives):
        for m in range(per):
            conv.add("User", f"note {a}-{m}: codeword{a}x{m} " + "filler words of a long day " * 8)
        conv.compact(f"summary {a}")
    assert recall(conv, "codeword0x0", k=1)[0].content.startswith("note 0-0")
    return conv


def _paths(conv: Conversation) -> MemoryPaths:
    assert conv.memory_md_path is not None
    return MemoryPaths(Path(conv.memory_md_path))


def _rebuild_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if WARNING in r.getMessage()]


# -- a damaged index is built again, and said so once -------------------------------------------


def _sql(statements: str) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        with contextlib.closing(sqlite3.connect(path)) as con:
            con.executescript(statements)

    return damage


def _bytes(change: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        path.write_bytes(change(path.read_bytes()))

    return damage


PAGE = 4096  # SQLite's default page size

DAMAGE: dict[str, Callable[[Path], None]] = {
    "cut to half": _bytes(lambda data: data[: len(data) // 2]),
    "cut to its first page": _bytes(lambda data: data[:PAGE]),
    "its second page zeroed": _bytes(lambda data: data[:PAGE] + bytes(PAGE) + data[2 * PAGE :]),
    "garbage in the header": _bytes(lambda data: b"garbage!" * 4 + data[32:]),
    "the header zeroed": _bytes(lambda data: bytes(100) + data[100:]),
    "a write-ahead log's header": _bytes(lambda data: data[:18] + b"\x02\x02" + data[20:]),
    "not SQLite at all": _bytes(lambda data: b"these are not the pages you are looking for\n" * 99),
    **{
        f"FTS5's {shadow} table dropped": _sql(f"DROP TABLE recall_messages_{shadow};")
        for shadow in ("data", "idx", "config", "docsize", "content")
    },
    "the archives' table dropped": _sql("DROP TABLE recall_archives;"),
    "the meta table dropped": _sql("DROP TABLE recall_meta;"),
    "another schema": _sql(
        "DROP TABLE recall_messages; DROP TABLE recall_archives; DROP TABLE recall_meta; "
        "CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine');"
    ),
    "another version of the schema": _sql(
        "UPDATE recall_meta SET value = 'memorylab-recall/0' WHERE key = 'schema';"
    ),
    "rows of no archive": _sql("UPDATE recall_archives SET first_row = first_row + 1000000;"),
}


@pytest.mark.parametrize("damage", list(DAMAGE), ids=list(DAMAGE))
def test_a_damaged_index_is_built_again_and_said_so_once(
    damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    conv = _agent()
    path = index.index_path(_paths(conv))
    DAMAGE[damage](path)
    with caplog.at_level(logging.WARNING, logger="memorylab"):
        found = recall(conv, "codeword2x3", k=1)
    assert found[0].content.startswith("note 2-3: codeword2x3")
    assert len(_rebuild_warnings(caplog)) == 1, caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="memorylab"):
        assert recall(conv, "codeword3x1", k=1)[0].content.startswith("note 3-1")
        assert recall(conv, "codeword2x3", k=1) == found
    assert not caplog.records, caplog.text  # built once: the next recalls are quiet


def test_an_empty_file_is_a_new_index_built_quietly(caplog: pytest.LogCaptureFixture) -> None:
    """What a first recall makes before its tables (a process killed right there leaves it):
    not damage, so no warning."""
    conv = _agent()
    index.index_path(_paths(conv)).write_bytes(b"")
    with caplog.at_level(logging.WARNING, logger="memorylab"):
        assert recall(conv, "codeword1x1", k=1)[0].content.startswith("note 1-1")
    assert not caplog.records


def test_a_well_formed_but_altered_index_answers_from_what_it_holds() -> None:
    """The limit of the damage checks (docs/recall.md): an index whose tables were rewritten
    and stay well-formed SQLite is answered from; deleting the file builds it again."""
    conv = _agent()
    path = index.index_path(_paths(conv))
    _sql("UPDATE recall_messages_content SET c0 = 'altered' WHERE id = 1;")(path)
    assert recall(conv, "codeword0x0", k=1)[0].content == "altered"
    index.remove_files(_paths(conv))
    assert recall(conv, "codeword0x0", k=1)[0].content.startswith("note 0-0")


def test_a_damaged_index_is_removed_by_a_compaction_and_built_by_the_next_recall(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The compaction's hook runs under the agent's lock: it removes a damaged index (one
    warning) and builds nothing; the next recall builds it quietly."""
    conv = _agent()
    path = index.index_path(_paths(conv))
    DAMAGE["cut to half"](path)
    conv.add("User", "the new word is zanzibar")
    with caplog.at_level(logging.WARNING, logger="memorylab"):
        assert conv.compact("more").archive is not None
        assert len(_rebuild_warnings(caplog)) == 1
        assert not path.exists()
        caplog.clear()
        assert recall(conv, "zanzibar", k=1)[0].content == "the new word is zanzibar"
    assert not caplog.records


# -- nothing at the index's names blocks recall, a compaction or a deletion ----------------------

_WORKER = r"""
import json, os, stat, sys
from pathlib import Path
from memorylab import Conversation
from memorylab.errors import MemorylabError
from memorylab.memory import MemoryStore, RetentionPolicy, recall
from memorylab.memory import _recall_index as index

def say(**what):
    print(json.dumps(what), flush=True)

# The store's calls into the index under the agent's lock say so: the parent adds meanwhile.
for hook in ("after_compaction", "drop_archives"):
    def announced(*args, _real=getattr(index, hook), **kwargs):
        say(event="locked")
        return _real(*args, **kwargs)
    setattr(index, hook, announced)

outside = Path(sys.argv[1])
for number, (side, kind) in enumerate(json.loads(sys.argv[2])):
    name = f"Agent{number}"
    conv = Conversation(agent_name=name)
    for a in range(3):
        conv.add("User", f"secret{a} lives in archive {a}")
        conv.compact(f"summary {a}")
    recall(conv, "secret0")
    store = MemoryStore(conv.memory_md_path)
    target = index.index_path(store.paths).with_name(index.INDEX_NAME + side)

    def plant():
        if target.is_dir() and not target.is_symlink():
            os.rmdir(target)
        elif os.path.lexists(target):
            os.unlink(target)
        {"fifo": os.mkfifo, "folder": os.mkdir}.get(kind, lambda t: os.symlink(outside, t))(target)

    def outcome(step, work):
        plant()
        say(event="step", agent=name, step=step)
        try:
            result = work()
        except MemorylabError as error:
            result = type(error).__name__
        say(event="done", agent=name, step=step, result=result)

    outcome("recall", lambda: [m.content for m in recall(conv, "secret2 archive", k=1)])
    conv.add("User", "secret3 lives in archive 3")
    outcome("compact", lambda: conv.compact("summary 3").archive is not None)
    outcome("retention", lambda: len(store.apply_retention(RetentionPolicy(max_archives=1))))

    def left():
        return {p: os.lstat(p).st_mode for p in store.paths.archive_dir.glob(index.INDEX_NAME + "*")}

    secret = any(b"secret0" in p.read_bytes() for p, mode in left().items() if stat.S_ISREG(mode))
    try:  # what the retention left, a recall cleans (with no index, nothing opened those names)
        recall(conv, "secret3")
    except MemorylabError:
        pass
    say(event="left", agent=name, secret=secret,
        odd=sorted(p.name for p, mode in left().items()
                   if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)))
say(event="end")
"""

SIDES = ["", "-journal", "-wal", "-shm"]
KINDS = ["fifo", "symlink", "folder"]
EVENT_TIMEOUT_S = 60.0  # generous: a regression fails here instead of hanging the suite


def _events(proc: subprocess.Popen[bytes]) -> Iterator[dict[str, Any]]:
    """The worker's JSON lines, each waited for at most EVENT_TIMEOUT_S."""
    assert proc.stdout is not None
    buffer = b""
    # selectors, not select.select: a descriptor numbered past 1023 (a suite with many files
    # open in one worker) is out of select()'s range.
    waiting = selectors.DefaultSelector()
    waiting.register(proc.stdout, selectors.EVENT_READ)
    while True:
        while b"\n" not in buffer:
            ready = waiting.select(EVENT_TIMEOUT_S)
            if not ready:
                raise AssertionError(f"the worker said nothing for {EVENT_TIMEOUT_S} s: blocked")
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                raise AssertionError("the worker ended early")
            buffer += chunk
        line, buffer = buffer.split(b"\n", 1)
        yield json.loads(line)


def _follow(
    worker: subprocess.Popen[bytes],
    results: dict[tuple[str, str], Any],
    added: list[str],
    left: dict[str, dict[str, Any]],
) -> None:
    """Read the worker's events to its end; add to the agent's memory from this process while
    the worker holds the agent's lock in a compaction's or a deletion's call into the index."""
    step: tuple[str, str] | None = None  # (agent, step) under way
    try:
        for event in _events(worker):
            if event["event"] == "end":
                break
            if event["event"] == "step":
                step = (event["agent"], event["step"])
            elif event["event"] == "locked" and step is not None:
                # The worker holds the agent's lock: this add waits for it, at most 20 s.
                Conversation(agent_name=step[0], lock_timeout=20).add("User", "meanwhile")
                added.append("/".join(step))
            elif event["event"] == "done":
                results[(event["agent"], event["step"])] = event["result"]
                step = None
            elif event["event"] == "left":
                left[event["agent"]] = event
        assert worker.wait(timeout=EVENT_TIMEOUT_S) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()


def test_a_fifo_symlink_or_folder_at_the_index_names_blocks_nothing(
    isolated_workspace: Path, tmp_path: Path
) -> None:
    """At each name SQLite may open (the index, -journal, -wal, -shm), a FIFO, a symlink or a
    folder: recall, compact() and retention return, the symlink's target is never written, and
    another process's add() meanwhile (while the store holds the agent's lock in the index's
    hook) succeeds. A FIFO or symlink is damage (removed unopened, the index built again); a
    folder is an UnsafePath for recall and left alone."""
    outside = tmp_path / "outside.txt"
    outside.write_text("not the index's")
    combos = [(side, kind) for side in SIDES for kind in KINDS]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "toolkit")}
    results: dict[tuple[str, str], Any] = {}
    added: list[str] = []
    left: dict[str, dict[str, Any]] = {}
    with subprocess.Popen(
        [sys.executable, "-c", _WORKER, str(outside), json.dumps(combos)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    ) as worker:
        try:
            _follow(worker, results, added, left)
        finally:
            assert worker.stderr is not None
            stderr = worker.stderr.read().decode()
    for number, (side, kind) in enumerate(combos):
        name = f"Agent{number}"
        what = f"{kind} at .recall.sqlite{side}"
        expected_recall = "UnsafePath" if kind == "folder" else ["secret2 lives in archive 2"]
        assert results[(name, "recall")] == expected_recall, (what, stderr)
        assert results[(name, "compact")] is True, what
        assert results[(name, "retention")] == 3, what
        assert {f"{name}/compact", f"{name}/retention"} <= set(added), what
        assert not left[name]["secret"] and not left[name]["odd"], (what, left[name])
    assert outside.read_text() == "not the index's", stderr
    assert "Traceback" not in stderr, stderr


# -- a long question costs what its words cost ---------------------------------------------------


def _long_text() -> str:
    return " ".join(m.content for p in bundled_transcripts() for m in load_transcript(p).messages)


def _tokenizer_steps(text: str) -> int:
    """SQLite virtual-machine steps (counted every 100, a count, not a time) that
    :func:`query_terms` runs to read ``text``."""
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    db = index._tokenizer()
    db.set_progress_handler(count, 100)
    try:
        terms = index.query_terms(text)
    finally:
        db.set_progress_handler(None, 100)
    assert terms
    return steps


def test_reading_a_question_is_linear_in_its_length() -> None:
    """The question's words were paired by a join of two FTS5 vocabularies on the position,
    without an index: quadratic (100 KB: 13 s). Now a 100 KB question takes at most 15x the
    SQLite steps of a 10 KB one (10x the words, whatever a step costs), and pairs them as the
    join did."""
    text = _long_text()
    small, large = text[:10_000], text[:100_000]
    assert _tokenizer_steps(large) <= 15 * _tokenizer_steps(small)
    short = text[:3_000]
    db = index._tokenizer()
    db.execute("INSERT INTO stemmed (rowid, text) VALUES (1, ?)", (short,))
    db.execute("INSERT INTO plain (rowid, text) VALUES (1, ?)", (short,))
    joined = db.execute(
        "SELECT s.term, p.term FROM stemmed_at AS s JOIN plain_at AS p ON s.offset = p.offset "
        "ORDER BY s.offset"
    ).fetchall()
    db.execute("DELETE FROM stemmed")
    db.execute("DELETE FROM plain")
    expected: dict[str, str] = {}
    for term, word in joined:
        expected.setdefault(term, word)
    assert index.query_terms(short) == list(expected.items())


def test_a_long_question_is_searched_for_its_rarest_words(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """75 words held by one message each, then 100 KB of text: the first 64 of those words
    (rarest first, the question's order among equals) are searched, nothing else."""
    conv = _agent(archives=3, per=25)
    statements: list[str] = []
    real = index._connection

    @contextlib.contextmanager
    def traced(paths: MemoryPaths, timeout: float) -> Iterator[sqlite3.Connection]:
        with real(paths, timeout) as con:
            con.set_trace_callback(statements.append)
            yield con

    monkeypatch.setattr(index, "_connection", traced)
    # Every word of the index and many it does not hold; the rarest are the codewords.
    notes = [(a, m) for a in range(3) for m in range(25)]
    question = " ".join(f"codeword{a}x{m}" for a, m in notes)
    question += " " + _long_text()[:100_000] + " filler words of a long day"
    found = recall(conv, question, k=100)
    (match,) = [s for s in statements if "bm25(" in s]  # the search (not FTS5's own)
    assert match.count(" OR ") + 1 == index.MAX_QUERY_TERMS == 64
    assert "filler" not in match  # held by every message: no weight
    assert {m.content.split(":")[0] for m in found} == {f"note {a}-{m}" for a, m in notes[:64]}


# -- a query when nothing changed lists no archive -----------------------------------------------


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """A clock 10 s ahead: every folder state is older than SETTLED_NS (as on an agent that did
    not compact in the last seconds), so recalls record it and trust it."""
    real = time.time_ns
    monkeypatch.setattr(index, "_clock", lambda: real() + 10_000_000_000, raising=False)


def _listings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the listings of the archive folder from now on."""
    calls: list[int] = []
    real = index._archives_on_disk

    def counted(paths: MemoryPaths, skip: Any) -> Any:
        calls.append(1)
        return real(paths, skip)

    monkeypatch.setattr(index, "_archives_on_disk", counted)
    return calls


def test_a_query_when_nothing_changed_lists_no_archive(
    settled: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    conv = _agent(archives=30, per=2)
    recall(conv, "codeword5x1")  # records the folder's state
    listings = _listings(monkeypatch)
    for number in range(30):
        assert recall(conv, f"codeword{number}x1", k=1)[0].content.startswith(f"note {number}-1")
    assert listings == []


def _by_hand(folder: Path, hour: int, text: str) -> str:
    """An archive written by hand (not by a compaction, whose hook would index it); its name."""
    when = datetime(2001, 1, 1, hour, tzinfo=UTC)
    name = fmt.archive_name(when, 1)
    document = MemoryDocument("Hand_conversation", when, (Message("User", text, when),), 1)
    (folder / name).write_text(render_memory(document))
    return name


def test_a_new_deleted_or_renamed_archive_is_seen_at_the_next_query(
    settled: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    conv = _agent(archives=3)
    folder = _paths(conv).archive_dir
    recall(conv, "codeword1x1")  # records the state
    listings = _listings(monkeypatch)

    def unchanged_then_quiet() -> None:
        listings.clear()
        assert recall(conv, "codeword2x2", k=1)[0].content.startswith("note 2-2")
        assert listings == []  # nothing changed since the query before: nothing listed

    unchanged_then_quiet()
    new = _by_hand(folder, 1, "a new word: quagga")
    assert [(m.archive, m.content) for m in recall(conv, "quagga")] == [(new, "a new word: quagga")]
    unchanged_then_quiet()
    first = min(p.name for p in folder.glob("history_2026*"))
    os.unlink(folder / first)
    assert recall(conv, "codeword0x1") == []
    unchanged_then_quiet()
    renamed = "history_2001-01-01_05-00-00Z.md"
    os.rename(folder / new, folder / renamed)
    assert [m.archive for m in recall(conv, "quagga")] == [renamed]
    unchanged_then_quiet()


def test_two_changes_within_one_tick_of_the_folders_mtime_are_both_seen() -> None:
    """The second archive is given the folder modification time the first left, as a
    filesystem with coarse timestamps would: with the real clock, the recall in between saw a
    state too recent to be recorded (SETTLED_NS), so the next one compares every archive."""
    conv = _agent(archives=2)
    folder = _paths(conv).archive_dir
    _by_hand(folder, 1, "first change: okapi")
    tick = os.stat(folder).st_mtime_ns
    assert recall(conv, "okapi", k=1)[0].content == "first change: okapi"
    _by_hand(folder, 2, "second change: oryx")
    os.utime(folder, ns=(tick, tick))
    assert recall(conv, "oryx", k=1)[0].content == "second change: oryx"


def test_a_change_that_sets_the_folders_mtime_back_is_seen(settled: None) -> None:
    """With a recorded state: an archive added, then the folder's modification time set back
    by hand to the recorded one (touch -d, a restore tool): its change time moved."""
    conv = _agent(archives=2)
    folder = _paths(conv).archive_dir
    recall(conv, "codeword0x0")
    before = os.stat(folder)
    _by_hand(folder, 1, "added by hand: tapir")
    os.utime(folder, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert [m.content for m in recall(conv, "tapir")] == ["added by hand: tapir"]


def test_an_archive_written_into_in_place_is_seen_by_update_recall_index_or_the_next_change(
    settled: None,
) -> None:
    """What the fast path can miss (docs/recall.md): an archive changed in place keeps the
    folder's state, so a recall answers from the index as it was; update_recall_index
    compares every archive, and so does the next recall after any change of the folder."""
    conv = _agent(archives=2)
    folder = _paths(conv).archive_dir
    recall(conv, "codeword0x0")  # the state is recorded
    archive = min(folder.glob("history_*"))
    with open(archive, "r+b") as handle:  # in place: same file, same folder
        data = handle.read().replace(b"codeword0x0", b"wapitiword0")
        handle.seek(0)
        handle.write(data)
    assert recall(conv, "wapitiword0") == []  # the miss
    (update,) = update_recall_index(conv)
    assert update.read == (archive.name,)
    assert recall(conv, "wapitiword0", k=1)[0].content.startswith("note 0-0: wapitiword0")
    with open(archive, "r+b") as handle:
        data = handle.read().replace(b"wapitiword0", b"elandword00")
        handle.seek(0)
        handle.write(data)
    conv.add("User", "a change of the folder")
    conv.compact("three")
    assert recall(conv, "elandword00", k=1)[0].content.startswith("note 0-0: elandword00")


# -- an agent's recall tool searches its own memory ----------------------------------------------


def test_an_agents_recall_tool_never_returns_another_agents_text() -> None:
    private = Conversation(agent_name="Bob")
    private.add("User", "my private note: the locker code is 4417 pangolin")
    private.compact("bob's summary")
    mine = Conversation(agent_name="Alice")
    mine.add("User", "my note: the pangolin exhibit opens at nine")
    mine.compact("alice's summary")
    alice = Agent(agent_name="Alice", model_name="gpt-4o-mini", tools=[recall_tool()])
    answer = alice.tools["recall"].call({"query": "pangolin locker code 4417"})
    assert "exhibit opens at nine" in answer and "4417" not in answer and "Bob" not in answer
    as_tool = Agent(agent_name="Alice", tools=[Tool.from_function(recall_tool(k=1))])
    assert "4417" not in as_tool.tools["recall"].call({"query": "locker code 4417 pangolin"})
    # Others' memory only when named.
    named = Agent(agent_name="Alice", tools=[recall_tool(agent="Bob")])
    assert "4417" in named.tools["recall"].call({"query": "locker code"})
    assert "4417" in Tool.from_function(recall_tool(private)).call({"query": "locker code"})
    assert "4417" not in Tool.from_function(recall_tool(alice)).call({"query": "pangolin"})


def test_a_recall_tool_that_names_nothing_and_has_no_agent_says_what_to_name() -> None:
    unbound = recall_tool()
    with pytest.raises(InvalidSetting, match=r"recall_tool\(\) names no memory.*Agent.*agent="):
        unbound("anything")
    answer = Tool.from_function(unbound).call({"query": "anything"})
    assert answer.startswith("Error: recall failed: InvalidSetting: recall_tool() names no memory")
    offline = Agent(agent_name="Offline", persistent_memory=False, tools=[recall_tool()])
    assert "keeps no memory on disk" in offline.tools["recall"].call({"query": "x"})


# -- bad input -----------------------------------------------------------------------------------


def test_bad_input_gets_memorylabs_errors_in_the_callers_words() -> None:
    conv = _agent(archives=1, per=2)
    for k in (2**63, 10**30):
        with pytest.raises(InvalidSetting, match=r"^k must be an int >= 1 and <= "):
            recall(conv, "codeword0x0", k=k)
    assert recall(conv, "codeword0x0", k=2**63 - 1)[0].content.startswith("note 0-0")
    with pytest.raises(InvalidSetting, match="has no words to search for"):
        recall(conv, "\ud800")
    assert recall(conv, "codeword0x0\ud800", k=1)[0].content.startswith("note 0-0")
    history = [{"role": "User", "content": "kiwi"}, {"content": "no role here"}]
    with pytest.raises(InvalidSetting, match=r"messages\[1\] has no 'role'"):
        recall_messages(history, "kiwi")
    with pytest.raises(InvalidSetting, match=r"messages\[0\] must be a mapping"):
        recall_messages(["kiwi"], "kiwi")  # type: ignore[list-item]
    with pytest.raises(InvalidSetting, match="messages must be a list"):
        recall_messages({"role": "User", "content": "kiwi"}, "kiwi")  # type: ignore[arg-type]
    with pytest.raises(InvalidSetting, match="query must be a string"):
        recall_messages(history[:1], 5)  # type: ignore[call-overload]
    with pytest.raises(InvalidSetting, match=r"^k must be an int >= 1 and <= "):
        recall_messages(history[:1], "kiwi", k=2**64)
    long = "?" * 100_000
    with pytest.raises(InvalidSetting) as raised:
        recall(conv, long)
    assert len(str(raised.value)) < 300  # the query is shown cut


# Every code point, lone surrogates (category Cs) drawn as often as the rest: st.text leaves
# them out of an alphabet unless they are all it holds.
ANY_TEXT = st.lists(
    st.characters(exclude_categories=()) | st.characters(categories=["Cs"]), max_size=60
).map("".join)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(query=ANY_TEXT, content=ANY_TEXT)
def test_any_text_gets_a_result_or_a_memorylab_error(
    query: str, content: str, isolated_workspace: Path
) -> None:
    """Every code point, lone surrogates included, as a query of an agent's archives and of a
    history in memory, and as a message of that history."""
    folder = isolated_workspace / "agents" / "Any"
    if not folder.exists():
        _agent("Any", archives=1, per=2)
    for ask in (
        lambda: recall(folder, query, k=3),
        lambda: recall_messages([{"role": "User", "content": content}], query, k=3),
        lambda: recall_messages([{"role": content, "content": query}], content, k=3),
    ):
        try:
            found = ask()
        except MemorylabError:
            continue
        assert isinstance(found, list)
