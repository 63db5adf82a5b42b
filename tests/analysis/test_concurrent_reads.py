"""Readers beside a writer: ``memory_df`` and ``compactions_df`` while another process compacts.

A compaction by another process (archive written, then MEMORY.md renamed into place, then the
record) can fall between a reader's listing of the agent's files and its reads of them. The
loaders read one generation of the files: they compare what identifies the generation before
and after reading and read again when it changed (docs/memory-format.md, "Concurrent readers").

The writer is a separate process that appends and compacts as fast as it can; each message and
each compaction is acknowledged (one line appended to a file) only after its call returned. The
reader, this process, notes what was acknowledged before each read began and checks that the read
holds all of it, each once and in order, with no ``lineage`` problem.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memorylab import Conversation
from memorylab.analysis import compactions_df, memory_df, memory_df_with_problems
from memorylab.analysis._sources import AgentFiles, Note
from memorylab.memory._store import MemoryStore

AGENT = "Busy"

# Appends and compacts (every EVERY adds; an edit of the newest message every 7th compaction)
# until STOP exists; acknowledges "m <n>" after add() returned and "c <n>" after compact().
_WRITER = r"""
import os, sys, time
from pathlib import Path
from memorylab import Conversation

workspace, agent, ack_file, stop, every, summarize_s = sys.argv[1:7]
conv = Conversation(agent_name=agent, workspace_dir=workspace)
ack = os.open(ack_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
stop = Path(stop)
n = compactions = 0
print("ready", flush=True)
while not stop.exists():
    conv.add("User", f"m{n}")
    os.write(ack, f"m {n}\n".encode())
    n += 1
    if n % int(every) == 0:
        time.sleep(float(summarize_s))  # a summarizer's time (a model takes seconds)
        conv.compact(f"summary {compactions}")
        os.write(ack, f"c {compactions}\n".encode())
        compactions += 1
os.close(ack)
"""


def _acknowledged(ack_file: Path) -> tuple[int, int]:
    """How many messages and compactions the writer had acknowledged (whole lines only)."""
    try:
        text = ack_file.read_text()
    except FileNotFoundError:
        return 0, 0
    lines = text[: text.rfind("\n") + 1].splitlines()
    return sum(line[0] == "m" for line in lines), sum(line[0] == "c" for line in lines)


@pytest.fixture
def busy_writer(tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    """A workspace whose agent another process appends to and compacts; yields the workspace, the
    agent folder and the acknowledgements file."""
    workspace, ack_file, stop = tmp_path / "ws", tmp_path / "acks", tmp_path / "stop"
    writer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            _WRITER,
            str(workspace),
            AGENT,
            str(ack_file),
            str(stop),
            "3",
            "0.01",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 120  # a hang guard: a loaded machine starts slowly
        while _acknowledged(ack_file)[1] < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        yield workspace, workspace / "agents" / AGENT, ack_file
    finally:
        stop.touch()
        try:
            writer.wait(timeout=120)  # a hang guard
        except subprocess.TimeoutExpired:
            writer.kill()
            writer.wait()
        assert writer.stdout is not None
        writer.stdout.close()
    assert writer.returncode == 0


def _check_messages(contents: list[str], summaries: list[bool], acked: int) -> None:
    numbers = [int(c[1:]) for c, s in zip(contents, summaries, strict=True) if not s]
    assert numbers == sorted(set(numbers)), "a message read twice or out of order"
    missing = sorted(set(range(acked)) - set(numbers))
    assert not missing, f"{len(missing)} acknowledged message(s) missing, e.g. m{missing[0]}"
    summary_texts = [c for c, s in zip(contents, summaries, strict=True) if s]
    assert len(summary_texts) == len(set(summary_texts)), "a summary read twice"


def test_memory_df_reads_one_generation_while_another_process_compacts(
    busy_writer: tuple[Path, Path, Path],
) -> None:
    workspace, folder, ack_file = busy_writer
    reads = 0
    # Reads until the writer has compacted more than 10 times meanwhile, however slowly a loaded
    # machine lets it (a fixed 2.5 s saw fewer); the deadline is a hang guard only.
    deadline = time.monotonic() + 300
    while reads < 40 or _acknowledged(ack_file)[1] <= 10:
        assert time.monotonic() < deadline, "the writer did not compact 11 times in 300 s"
        acked, _ = _acknowledged(ack_file)
        strict = reads % 2 == 0
        source = folder if reads % 3 else workspace
        if strict:
            df = memory_df(source, on_bad="error")
        else:
            result = memory_df_with_problems(source)
            df, problems = result.frame, result.problems
            kinds = set(problems["kind"])
            assert not kinds - {"pending"}, problems.to_string()
        _check_messages(list(df["content"]), list(df["is_summary"]), acked)
        reads += 1


def test_compactions_df_reads_one_generation_while_another_process_compacts(
    busy_writer: tuple[Path, Path, Path],
) -> None:
    _, folder, ack_file = busy_writer
    reads = 0
    deadline = time.monotonic() + 1.5
    while reads < 30 or time.monotonic() < deadline:
        _, compacted = _acknowledged(ack_file)
        frame = compactions_df(folder)
        assert set(frame["source"]) <= {"jsonl"}, frame.to_string()  # none inferred
        archives = list(frame["archive"])
        assert len(archives) == len(set(archives)), "a compaction listed twice"
        assert len(archives) >= compacted, "an acknowledged compaction is missing"
        reads += 1
        if reads >= 150:
            break


def test_the_generation_changes_at_every_step_of_a_compaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the loaders compare (``read_generation``): each step of a compaction (journal,
    archive, rename, record, journal removed) changes it, and an append does not."""
    from memorylab.memory import _store as store_module
    from memorylab.memory._store import read_generation

    conv = Conversation(agent_name=AGENT, workspace_dir=tmp_path)
    conv.add("User", "m0")
    paths = MemoryStore(conv.memory_md_path).paths
    tokens = [read_generation(paths)]
    conv.add("User", "m1")
    assert read_generation(paths) == tokens[0], "an append is the same generation"

    def after(function: Callable[..., Any]) -> Callable[..., Any]:
        def step(*args: Any, **kwargs: Any) -> Any:
            result = function(*args, **kwargs)
            tokens.append(read_generation(paths))
            return result

        return step

    for name in (
        "atomic_replace",
        "create_new_file",
        "replace_and_open",
    ):  # journal, archive, rename
        monkeypatch.setattr(store_module, name, after(getattr(store_module, name)))
    monkeypatch.setattr(MemoryStore, "append_record", after(MemoryStore.append_record))
    conv.compact("summary")
    tokens.append(read_generation(paths))  # the journal removed
    assert len(tokens) == 6
    assert len(set(tokens)) == 6, tokens


def test_a_read_that_never_settles_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A generation that changes at every attempt: the last read is returned, with an
    ``unsettled`` problem (lenient) and a logged warning (strict too)."""
    from memorylab.analysis import _sources as sources

    conv = Conversation(agent_name=AGENT, workspace_dir=tmp_path)
    conv.add("User", "m0")
    counter = iter(range(10**6))
    monkeypatch.setattr(sources, "read_generation", lambda paths: next(counter))
    monkeypatch.setattr(sources, "_RETRY_PAUSE_S", 0.0)
    folder = conv.memory_md_path.parent
    result = memory_df_with_problems(folder)
    assert list(result.frame["content"]) == ["m0"]
    assert list(result.problems["kind"]) == ["unsettled"]
    assert "changed at each of 20 reads" in result.problems["message"][0]
    caplog.clear()
    assert list(memory_df(folder)["content"]) == ["m0"]
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    assert "changed at each of 20 reads" in caplog.records[0].getMessage()


def _between_listing_and_reading(
    monkeypatch: pytest.MonkeyPatch, action: Callable[[], object]
) -> None:
    """Run ``action`` once, after the loader listed the agent's files and before it reads them
    (what another process may do at that moment)."""
    from memorylab.analysis import _sources as sources

    real = sources.files_of
    pending = [action]

    def files_of(files: AgentFiles, notes: list[Note]) -> list[tuple[Path, str]]:
        found = real(files, notes)
        while pending:
            pending.pop()()
        return found

    monkeypatch.setattr(sources, "files_of", files_of)


def _agent(tmp_path: Path, compactions: int) -> Conversation:
    conv = Conversation(agent_name=AGENT, workspace_dir=tmp_path)
    for n in range(compactions):
        conv.add("User", f"m{2 * n}")
        conv.add("User", f"m{2 * n + 1}")
        conv.compact(f"summary {n}")
    conv.add("User", f"m{2 * compactions}")
    return conv


@pytest.mark.parametrize("strict", [True, False])
def test_a_compaction_between_listing_and_reading_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, strict: bool
) -> None:
    conv = _agent(tmp_path, 2)
    _between_listing_and_reading(monkeypatch, lambda: conv.compact("summary 2"))
    if strict:
        df = memory_df(conv.memory_md_path.parent, on_bad="error")
    else:
        read = memory_df_with_problems(conv.memory_md_path.parent)
        df = read.frame
        assert read.problems.empty, read.problems.to_string()
    messages = [c for c, s in zip(df["content"], df["is_summary"], strict=True) if not s]
    assert messages == ["m0", "m1", "m2", "m3", "m4"]
    assert list(df[df["is_summary"]]["content"].str[-9:]) == ["summary 0", "summary 1", "summary 2"]


def test_an_archive_deleted_between_listing_and_reading_is_no_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Retention (or purge) by another process while a strict read is under way: read again,
    without the deleted archive (nor an ``io`` problem for it)."""
    conv = _agent(tmp_path, 2)
    store = MemoryStore(conv.memory_md_path)
    oldest = store.archives_oldest_first()[0].name
    _between_listing_and_reading(
        monkeypatch, lambda: store.delete_archives([oldest], reason="test")
    )
    df = memory_df(conv.memory_md_path.parent, on_bad="error")
    assert "m0" not in set(df["content"]) and "m4" in set(df["content"])
    monkeypatch.undo()
    problems = memory_df_with_problems(conv.memory_md_path.parent).problems
    assert set(problems["kind"]) == {"gap"}  # the oldest file now starts with a summary


def test_a_read_takes_no_lock(tmp_path: Path) -> None:
    """A reader never waits for a writer: memory_df and compactions_df return while another
    thread holds the agent's lock (this process's lock would block them if they took it).

    No clock: the holder keeps the lock until the test releases it, so the reads returning while
    the holder is still inside ``locked()`` proves they did not wait for it (a read that took
    the lock would block, then fail with the store's lock timeout)."""
    import threading

    conv = _agent(tmp_path, 1)
    store = MemoryStore(conv.memory_md_path)
    held, release = threading.Event(), threading.Event()
    holding: list[bool] = []

    def hold() -> None:
        with store.locked():
            holding.append(True)
            held.set()
            release.wait(600)  # a hang guard only: the test releases it
            holding.append(release.is_set())

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    try:
        assert held.wait(300)
        assert len(memory_df(conv.memory_md_path.parent)) == 4
        assert len(compactions_df(conv.memory_md_path.parent)) == 1
        assert holding == [True] and holder.is_alive()  # the lock is still held
    finally:
        release.set()
        holder.join(300)
    assert holding == [True, True]


def test_a_rewrite_committed_but_not_yet_recorded_is_read_from_its_journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Between a rewrite's rename and its record (or after a crash there), the journal holds the
    record: compactions_df lists the compaction, and an edit's archive is read as an edit's
    (rule 5: the deleted message stays deleted)."""

    def no_record(self: MemoryStore, record: dict[str, object]) -> None:
        raise OSError(28, "No space left on device")

    compacted = _agent(tmp_path / "compacted", 1)
    edited = _agent(tmp_path / "edited", 1)
    edited.add("User", "m3")
    monkeypatch.setattr(MemoryStore, "append_record", no_record)
    compacted.compact("summary 1")
    edited.delete(len(edited) - 1)  # m3
    monkeypatch.undo()
    assert caplog.text.count("finishing it failed") == 2
    for conv in (compacted, edited):
        assert MemoryStore(conv.memory_md_path).paths.intent.exists()

    frame = compactions_df(compacted.memory_md_path.parent)
    assert list(frame["source"]) == ["jsonl", "jsonl"]  # the second from the journal
    assert frame["archive"].is_unique
    assert len(memory_df(compacted.memory_md_path.parent)) == 5  # m0-m2, two summaries
    read = memory_df_with_problems(edited.memory_md_path.parent)
    df = read.frame
    assert [c for c, s in zip(df["content"], df["is_summary"], strict=True) if not s] == [
        "m0",
        "m1",
        "m2",
    ]
    assert set(read.problems["kind"]) == {"edit"}


def test_a_read_between_the_steps_of_a_compaction_sees_one_generation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read after each step of a compaction (journal, archive, rename, record): the generation
    before it (its archive skipped with a ``pending`` note: its messages are still in MEMORY.md)
    or after it; every message once, in order. (The reads run while this thread holds the lock:
    a reader takes none.)"""
    from memorylab.memory import _store as store_module

    conv = _agent(tmp_path, 1)
    folder = conv.memory_md_path.parent
    seen: list[tuple[list[str], set[str], int]] = []

    def after(function: Callable[..., Any]) -> Callable[..., Any]:
        def step(*args: Any, **kwargs: Any) -> Any:
            result = function(*args, **kwargs)
            read = memory_df_with_problems(folder)
            df = read.frame
            messages = [c for c, s in zip(df["content"], df["is_summary"], strict=True) if not s]
            seen.append((messages, set(read.problems["kind"]), len(compactions_df(folder))))
            return result

        return step

    for name in ("atomic_replace", "create_new_file", "replace_and_open"):
        monkeypatch.setattr(store_module, name, after(getattr(store_module, name)))
    monkeypatch.setattr(MemoryStore, "append_record", after(MemoryStore.append_record))
    conv.compact("summary 1")
    assert [messages for messages, _, _ in seen] == [["m0", "m1", "m2"]] * 4
    assert [kinds for _, kinds, _ in seen] == [set(), {"pending"}, set(), set()]
    assert [count for _, _, count in seen] == [1, 1, 2, 2]
