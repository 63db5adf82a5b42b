"""The process-wide cache of agent locks holds them weakly: a store's lock file (and the
descriptor it appends through) closes once no store of that agent is left in the process. It
used to keep every lock for the process's life, one descriptor per agent ever opened (20 stores
in 20 folders left 20 open after ``del`` and ``gc.collect()``; a CI worker passed 1,023). What
the cache is for still holds while stores are alive: several stores of one agent share one lock
(re-entrant, excluding other threads, one late-write state), and a forked child opens its own."""

from __future__ import annotations

import gc
import os
import threading
import warnings
from pathlib import Path
from typing import Any

import pytest

from memorylab import Conversation, read_memory
from memorylab.errors import LockTimeout
from memorylab.memory import MemoryStore
from memorylab.memory import _store as store_module

_FDS = "/proc/self/fd"
pytestmark = pytest.mark.skipif(not os.path.isdir(_FDS), reason="counts /proc/self/fd (Linux)")
_LATE = "### Human — 2026-01-01T00:00:00\n\nwritten late\n\n---\n\n"


def _open_fds() -> int:
    return len(os.listdir(_FDS))


def _messages(path: Path) -> list[str]:
    return [m.content for m in read_memory(path).messages]


def _use_and_drop(workspace: Path, agents: list[str]) -> None:
    """Open a Conversation per agent, write (and compact every other one), drop them all."""
    for i, name in enumerate(agents):
        conv = Conversation(agent_name=name, workspace_dir=workspace, preload=False)
        conv.add("User", f"message of {name}")
        if i % 2:
            conv.compact(f"summary of {name}")
        del conv
    gc.collect()


def test_stores_opened_and_dropped_leave_no_descriptors(tmp_path: Path) -> None:
    """Fails before the cache held locks weakly: 40 more descriptors (a lock file and an
    append descriptor per agent)."""
    _use_and_drop(tmp_path, ["warm-up"])  # what opens once per process (imports, caches)
    before = _open_fds()
    _use_and_drop(tmp_path, [f"agent-{i}" for i in range(20)])
    assert _open_fds() - before <= 0, f"{_open_fds() - before} descriptors left by 20 agents"
    # The same agents opened again work as before (a fresh lock each, the memory intact).
    conv = Conversation(agent_name="agent-1", workspace_dir=tmp_path, preload=False)
    conv.add("User", "again")
    assert conv.memory_md_path is not None
    assert _messages(conv.memory_md_path)[-1] == "again"


def test_two_live_stores_of_one_agent_share_one_lock(tmp_path: Path) -> None:
    """Two stores of one agent alive in one process: one lock, so a thread holding it through
    one store enters it again through the other (two locks would wait on each other's flock
    and time out), and another thread is kept out."""
    Conversation(agent_name="shared", workspace_dir=tmp_path, preload=False).add("User", "x")
    first = MemoryStore.for_agent("shared", tmp_path, lock_timeout=0.05)
    second = MemoryStore.for_agent("shared", tmp_path, lock_timeout=0.05)
    outcome: list[str] = []

    def other_thread() -> None:
        try:
            with second.locked():
                outcome.append("entered")
        except LockTimeout:
            outcome.append("kept out")

    with first.locked():
        with second.locked():  # re-entrant across the two stores
            second.append(_LATE.replace("written late", "under both"))
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
    assert outcome == ["kept out"]
    assert _messages(first.path)[-1] == "under both"


def _late_writer(path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Patch the compaction's rename so that a writer that takes no lock (the reference) opens
    the old MEMORY.md just before it; returns a list that receives that open file."""
    handles: list[Any] = []
    replace = store_module.replace_and_open

    def opened_before_the_rename(target: Path, data: bytes, *expected: tuple[int, int]) -> int:
        if target == path and not handles:
            handles.append(open(path, "a", encoding="utf-8"))  # noqa: SIM115 - closed below
        return replace(target, data, *expected)

    monkeypatch.setattr(store_module, "replace_and_open", opened_before_the_rename)
    monkeypatch.setattr(store_module, "LATE_WRITE_WINDOW_S", 600.0)  # never over in the test
    return handles


def test_two_live_stores_share_the_late_write_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One store compacts; a lock-less writer writes late to the file it replaced; the next
    append through the OTHER live store of that agent carries the late block over before its
    own (the window lives on the shared lock)."""
    compactor = Conversation(agent_name="late", workspace_dir=tmp_path, preload=False)
    writer = Conversation(agent_name="late", workspace_dir=tmp_path, preload=False)
    compactor.add("User", "summarized")
    path = compactor.memory_md_path
    assert path is not None
    handles = _late_writer(path, monkeypatch)
    compactor.compact("the summary")
    (old,) = handles
    with old:
        old.write(_LATE)
    writer.add("User", "after")
    assert _messages(path) == ["[Compressed Memory Summary] the summary", "written late", "after"]


def test_a_store_dropped_inside_the_late_write_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The only store of an agent is dropped within the late-write window of its compaction:
    its descriptors close at once (they stayed open for the process's life before), and what a
    lock-less writer writes late to the replaced file is still carried over, by the next store
    opened in this process (recovery on opening), as after a process that exited."""
    _use_and_drop(tmp_path, ["warm-up"])
    before = _open_fds()
    conv = Conversation(agent_name="dropped", workspace_dir=tmp_path, preload=False)
    conv.add("User", "summarized")
    path = conv.memory_md_path
    assert path is not None
    handles = _late_writer(path, monkeypatch)
    conv.compact("the summary")
    del conv
    gc.collect()
    (old,) = handles
    assert _open_fds() - before == 1, "only the late writer's own file is left open"
    with old:
        old.write(_LATE)  # after the store is gone, still inside the window
    again = Conversation(agent_name="dropped", workspace_dir=tmp_path, preload=False)
    again.add("User", "after")
    assert _messages(path) == ["[Compressed Memory Summary] the summary", "written late", "after"]
    del again
    gc.collect()
    assert _open_fds() - before <= 0


def _child(workspace: Path, inherited: list[MemoryStore]) -> int:
    """In a forked child of a parent that holds the lock of agent ``forked``: the exit code."""
    inherited.clear()  # the child's copy of the parent's store (and of its lock) is dropped
    gc.collect()
    shut_out = MemoryStore.for_agent("forked", workspace, lock_timeout=0.05)
    try:
        with shut_out.locked():
            return 2  # entered a lock the parent holds
    except LockTimeout:
        pass
    del shut_out
    before = _open_fds()
    _use_and_drop(workspace, ["child-a", "child-b"])
    return 3 if _open_fds() > before else 0


def test_a_forked_child_opens_its_own_lock_and_closes_it(tmp_path: Path) -> None:
    """A child forked while the parent holds an agent's lock is kept out of it (its own lock
    file description, even after dropping what it inherited), and the stores it opens and
    drops leave no descriptors in it either."""
    Conversation(agent_name="forked", workspace_dir=tmp_path, preload=False).add("User", "x")
    inherited = [MemoryStore.for_agent("forked", tmp_path)]
    with inherited[0].locked():
        with warnings.catch_warnings():  # Python 3.12+ warns about fork in threaded processes
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            code = 1
            try:
                code = _child(tmp_path, inherited)
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, {
        1: "the child raised",
        2: "the child entered the parent's lock",
        3: "descriptors left",
    }.get(os.waitstatus_to_exitcode(status))
    inherited[0].append(_LATE)  # the parent's lock is still its own
    assert _messages(inherited[0].path)[-1] == "written late"


def test_threads_opening_and_dropping_one_agent_lose_nothing_and_leak_nothing(
    tmp_path: Path,
) -> None:
    """Threads each opening a Conversation of one agent, adding a message and dropping it, over
    and over: the lock is made, shared, dropped and made again under them (a lock found by one
    thread while another's last reference goes must never be half closed), every message is
    there once, and no descriptor is left."""
    _use_and_drop(tmp_path, ["warm-up"])
    Conversation(agent_name="busy", workspace_dir=tmp_path, preload=False).add("User", "first")
    gc.collect()
    before = _open_fds()
    errors: list[BaseException] = []

    def writer(thread: int) -> None:
        try:
            for i in range(25):
                conv = Conversation(agent_name="busy", workspace_dir=tmp_path, preload=False)
                conv.add("User", f"t{thread}-{i}")
                del conv
        except BaseException as exc:  # reported below, with the thread's traceback lost
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    gc.collect()
    assert errors == []
    path = tmp_path / "agents" / "busy" / "MEMORY.md"
    written = _messages(path)
    expected = {f"t{n}-{i}" for n in range(4) for i in range(25)}
    assert sorted(written[1:]) == sorted(expected) and written[0] == "first"
    assert _open_fds() - before <= 0
