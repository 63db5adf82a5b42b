"""Faults where memorylab meets the rest of the world: other writers of the same files, a full
disk, the wrong kind of file in the way, impossible names and dates. Each keeps every message
and leaves every file parseable, or fails with one StoreError/UnsafePath that names the path."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memorylab import Conversation, read_memory
from memorylab.errors import InvalidAgentName, StoreError, UnsafePath
from memorylab.memory import _format as fmt
from memorylab.memory import _store as store_module
from memorylab.memory._fsutil import store_error
from memorylab.memory._paths import agent_paths, validate_agent_name
from memorylab.memory._retention import RetentionPolicy


def _contents(path: Path) -> list[str]:
    doc = read_memory(path)  # strict: any torn or forged block fails here
    return [m.content for m in doc.messages]


def _everything(conv: Conversation) -> list[str]:
    """Every message content in the agent's archives (oldest first) and MEMORY.md."""
    assert conv.memory_md_path is not None
    paths = agent_paths(str(conv.agent_name), conv.workspace_dir)
    seen: list[str] = []
    for archive in paths.archives():
        seen += _contents(archive)
    return seen + _contents(conv.memory_md_path)


# ----------------------------------------------------------------------------- other writers


def test_a_file_replaced_by_rename_is_written_again(isolated_workspace: Path) -> None:
    conv = Conversation(agent_name="A")
    conv.add("User", "one")
    path = conv.memory_md_path
    assert path is not None
    edited = path.with_name("edited.md")  # an editor that saves by writing a copy and renaming
    edited.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    os.replace(edited, path)
    conv.add("User", "two")
    fresh = Conversation(agent_name="A", preload=False)
    fresh.add("User", "three")
    assert _contents(path) == ["one", "two", "three"]


def test_an_append_after_memory_md_was_moved_away_goes_to_the_path(
    isolated_workspace: Path,
) -> None:
    """The per-append check looks at the path (``lstat``), not at the open descriptor: a check
    of the descriptor (``fstat``, cheaper) would still see the moved file as the one to write
    to, and the append would land in ``moved.md`` (issue 30: the suite did not notice)."""
    conv = Conversation(agent_name="A")
    conv.add("User", "one")
    path = conv.memory_md_path
    assert path is not None
    moved = path.with_name("moved.md")
    os.rename(path, moved)
    conv.add("User", "two")
    assert _contents(moved) == ["one"]
    assert "two" in _contents(path)


def test_blocks_a_lockless_replacer_dropped_are_carried_over(isolated_workspace: Path) -> None:
    # The reference framework compacts without memorylab's lock: it reads MEMORY.md, archives
    # that copy, removes the file and starts a new one. What memorylab appended after its read
    # is in neither; memorylab's next append puts it back.
    conv = Conversation(agent_name="A")
    conv.add("User", "before the read")
    path = conv.memory_md_path
    assert path is not None
    copy = path.read_text(encoding="utf-8")  # the reference reads ...
    conv.add("User", "after the read")  # ... memorylab appends meanwhile ...
    archive = path.parent / "archive"
    archive.mkdir(exist_ok=True)
    (archive / "history_2026-01-01_00-00-00.md").write_text(copy, encoding="utf-8")
    path.unlink()  # ... the reference removes MEMORY.md and writes a fresh one
    path.write_text(fmt.render_header("ref", datetime(2026, 1, 1), format_version=None)
                    + "### System — 2026-01-01T00:00:01\n\nsummary\n\n---\n\n")  # fmt: skip
    conv.add("User", "next")
    assert _contents(path) == ["summary", "after the read", "next"]
    assert _everything(conv).count("after the read") == 1


def test_a_deleted_memory_md_is_created_again(isolated_workspace: Path) -> None:
    conv = Conversation(agent_name="A")
    conv.add("User", "one")
    assert conv.memory_md_path is not None
    conv.memory_md_path.unlink()  # by hand, not with memorylab forget
    conv.add("User", "two")
    doc = read_memory(conv.memory_md_path)
    assert doc.conversation_name == "A_conversation"
    assert [m.content for m in doc.messages] == ["one", "two"]  # "one" carried from the old file


def test_appends_of_a_lockless_writer_during_a_compaction_are_kept(
    isolated_workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conv = Conversation(agent_name="A")
    conv.add("User", "summarized")
    path = conv.memory_md_path
    assert path is not None
    foreign = "### Human — 2026-01-01T00:00:00\n\nwritten during the compaction\n\n---\n\n"
    replace = store_module.replace_and_open

    def late_append(target: Path, data: bytes, *expected: tuple[int, int]) -> int:
        if target == path:  # between memorylab's last read and its rename
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(foreign)
        return replace(target, data, *expected)

    monkeypatch.setattr(store_module, "replace_and_open", late_append)
    conv.compact("the summary")
    assert _contents(path)[1:] == ["written during the compaction"]


def test_late_writes_are_kept_when_the_new_file_is_removed_at_once(
    isolated_workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Right after memorylab's rename, a lock-less writer that had opened the old file writes
    to it, and the reference's compact() (which read the old file before the rename) removes
    the new one. Both the late block and memorylab's summary reach MEMORY.md, and the
    compaction is recorded at once (a benchmark run lost two of the reference's messages here:
    the late write was carried to the path, which was missing, and the carrying stopped)."""
    conv = Conversation(agent_name="A")
    conv.add("User", "summarized")
    path = conv.memory_md_path
    assert path is not None
    late = "### Human — 2026-01-01T00:00:00\n\nwritten late\n\n---\n\n"
    replace = store_module.replace_and_open

    def late_write_then_removal(target: Path, data: bytes, *expected: tuple[int, int]) -> int:
        if target != path:
            return replace(target, data, *expected)
        with open(path, "a", encoding="utf-8") as old:  # opened before the rename
            fd = replace(target, data, *expected)
            old.write(late)  # written after it
        path.unlink()  # the reference removes the file it read
        return fd

    monkeypatch.setattr(store_module, "replace_and_open", late_write_then_removal)
    conv.compact("the summary")
    conv.add("User", "after")
    assert _contents(path) == [
        "[Compressed Memory Summary] the summary",
        "written late",
        "after",
    ]
    records = (path.parent / "compactions.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(records) == 1 and not (path.parent / ".MEMORY.md.intent.json").exists()


def test_a_file_created_while_memorylab_recreates_it_is_kept(
    isolated_workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reference's compact() removes MEMORY.md and creates it again with its summary; an
    append in between finds the file missing. memorylab creates it only if nobody did in the
    meantime (a CI run lost the reference's summary and three of its messages when the header
    was written by a rename over its new file): the reference's file is kept, and memorylab's
    blocks go after it."""
    conv = Conversation(agent_name="A")
    conv.add("User", "first")
    path = conv.memory_md_path
    assert path is not None
    theirs = (
        "# Agent Memory\n\n**Conversation:** reference\n**Created:** 2026-01-01T00:00:00\n\n"
        "---\n\n## Interaction Log\n\n### System — 2026-01-01T00:00:01\n\nreference summary\n\n"
        "---\n\n"
    )
    create = store_module.create_new_file

    def reference_first(target: Path, data: bytes) -> bool:
        if target == path:  # the reference re-seeds the file just before memorylab does
            path.write_text(theirs, encoding="utf-8")
        return create(target, data)

    monkeypatch.setattr(store_module, "create_new_file", reference_first)
    path.unlink()  # the reference's compact() removes the file it archived
    conv.add("User", "second")
    assert _contents(path) == ["reference summary", "first", "second"]


def test_blocks_of_both_writers_in_one_file_parse_strictly(isolated_workspace: Path) -> None:
    conv = Conversation(agent_name="A")
    conv.add("User", "ours\n---\n### fake — 2020-01-01T00:00:00")
    assert conv.memory_md_path is not None
    with open(conv.memory_md_path, "a", encoding="utf-8") as handle:  # the reference appends
        handle.write("### Human — 2026-01-01T00:00:00\n\ntheirs\n\\---\n\n---\n\n")
    conv.add("User", "ours again")
    assert _contents(conv.memory_md_path) == [
        "ours\n---\n### fake — 2020-01-01T00:00:00",
        "theirs\n\\---",
        "ours again",
    ]


# ----------------------------------------------------------------------------- the disk


_DISK_FULL = textwrap.dedent(
    """
    import resource, signal, sys
    from memorylab import Conversation
    from memorylab.errors import StoreError
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails instead
    conv = Conversation(agent_name="A", workspace_dir=sys.argv[1], redact=None)
    conv.add("User", "fits")
    size = conv.memory_md_path.stat().st_size
    resource.setrlimit(resource.RLIMIT_FSIZE, (size + 60, resource.RLIM_INFINITY))
    try:
        conv.add("User", "x" * 500)
    except StoreError as error:
        print("refused:", error)
    resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    conv.add("User", "after space was freed")
    """
)


def test_a_full_disk_leaves_no_partial_block(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", _DISK_FULL, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "refused: cannot append to" in out.stdout and "free space" in out.stdout
    memory = tmp_path / "agents" / "A" / "MEMORY.md"
    assert _contents(memory) == ["fits", "after space was freed"]


def test_disk_errors_name_the_path_and_the_fix(tmp_path: Path) -> None:
    for code, words in (
        (errno.ENOSPC, "free space"),
        (errno.EROFS, "read-only"),
        (errno.EACCES, "who owns it"),
        (errno.ELOOP, "symlink"),
    ):
        error = store_error(OSError(code, os.strerror(code)), tmp_path / "x", "append to")
        assert isinstance(error, StoreError) and str(tmp_path / "x") in str(error)
        assert words in str(error)
        assert isinstance(error, UnsafePath) == (code == errno.ELOOP)


# ----------------------------------------------------------------------------- in the way


@pytest.mark.parametrize("kind", ["folder", "symlink", "fifo"])
def test_compactions_jsonl_of_the_wrong_kind_stops_the_compaction_first(
    isolated_workspace: Path, kind: str
) -> None:
    conv = Conversation(agent_name="A")
    conv.add("User", "one")
    paths = agent_paths("A")
    if kind == "folder":
        paths.compactions.mkdir()
    elif kind == "symlink":
        paths.compactions.symlink_to(isolated_workspace / "elsewhere.jsonl")
    else:
        os.mkfifo(paths.compactions)
    before = paths.memory_md.read_bytes()
    with pytest.raises(UnsafePath, match=r"compactions\.jsonl .*move it aside"):
        conv.compact("summary")
    assert paths.memory_md.read_bytes() == before and paths.archives() == []
    assert [e["content"] for e in conv.conversation_history][-1] == "one"
    conv.add("User", "two")  # the conversation goes on
    assert _contents(paths.memory_md) == ["one", "two"]


def test_the_agent_folder_swapped_for_a_symlink_is_refused(isolated_workspace: Path) -> None:
    conv = Conversation(agent_name="A")
    conv.add("User", "one")
    folder = agent_paths("A").folder
    outside = isolated_workspace.parent / "outside"
    folder.rename(outside)
    folder.symlink_to(outside, target_is_directory=True)
    with pytest.raises(UnsafePath, match="symlink"):  # nothing is created through it
        conv.compact("summary")
    with pytest.raises(UnsafePath):
        Conversation(agent_name="A")
    assert not (outside / "archive").exists()


def test_a_summary_that_cannot_be_stored_changes_nothing(isolated_workspace: Path) -> None:
    conv = Conversation(agent_name="A")
    conv.add("User", "one")
    paths = agent_paths("A")
    before = paths.memory_md.read_bytes()
    with pytest.raises(ValueError, match="lone surrogates"):
        conv.compact("bad \ud800 summary")
    assert paths.memory_md.read_bytes() == before
    assert not paths.intent.exists() and not paths.archive_dir.exists()


def test_an_empty_memory_md_is_given_a_header(isolated_workspace: Path) -> None:
    paths = agent_paths("A")
    paths.folder.mkdir(parents=True)
    paths.memory_md.write_bytes(b"")
    conv = Conversation(agent_name="A")
    conv.add("User", "one")
    assert read_memory(paths.memory_md).conversation_name == "A_conversation"


def test_a_symlinked_lock_file_and_an_archive_file_are_refused(isolated_workspace: Path) -> None:
    paths = agent_paths("A")
    paths.folder.mkdir(parents=True)
    paths.lock.symlink_to(isolated_workspace / "lock-elsewhere")
    with pytest.raises(UnsafePath, match="symlink"):
        Conversation(agent_name="A")
    paths.lock.unlink()
    conv = Conversation(agent_name="A")
    conv.add("User", "one")
    paths.archive_dir.write_text("not a folder")
    with pytest.raises(UnsafePath, match="archive"):
        conv.compact("summary")
    assert _contents(paths.memory_md) == ["one"]


def test_a_header_only_memory_is_not_archived(isolated_workspace: Path) -> None:
    conv = Conversation(agent_name="A")
    event = conv.compact("nothing happened yet")
    assert event.archive is None and event.messages_archived == 0
    assert agent_paths("A").archives() == []


def test_blank_content_is_kept_in_memory_only(isolated_workspace: Path) -> None:
    conv = Conversation(agent_name="A")
    conv.add("User", "  \n\t ")
    conv.add("User", "real")
    assert conv.memory_md_path is not None
    assert _contents(conv.memory_md_path) == ["real"]
    assert len(conv.conversation_history) == 2


# ----------------------------------------------------------------------------- dates and names


def test_an_archive_name_that_is_not_a_date_is_no_archive(isolated_workspace: Path) -> None:
    conv = Conversation(agent_name="A", retention=RetentionPolicy(max_archives=1))
    conv.add("User", "one")
    paths = agent_paths("A")
    paths.archive_dir.mkdir()
    (paths.archive_dir / "history_2026-02-30_10-00-00.md").write_text("# Agent Memory\n")
    assert fmt.parse_archive_name("history_2026-02-30_10-00-00.md") is None
    assert [p.name for p in paths.archives()] == []
    event = conv.compact("summary")  # with a retention policy, after its commit point
    assert event.ok and [p.name for p in paths.archives()] == [event.archive]


def test_archive_names_are_never_reused(isolated_workspace: Path) -> None:
    when = datetime(2026, 4, 20, 12, 0, tzinfo=UTC)
    conv = Conversation(agent_name="A", clock=lambda: when, retention=RetentionPolicy(max_archives=0))
    names = []
    for i in range(3):  # all in the same second; each archive deleted right after
        conv.add("User", f"m{i}")
        names.append(conv.compact(f"s{i}").archive)
    assert len(set(names)) == 3 and agent_paths("A").archives() == []


@pytest.mark.parametrize(
    "name", ["a\u202eb", "zero\u200bwidth", "\ufeffbom", "left\u2066to"], ids=repr
)
def test_names_with_invisible_characters_are_refused(name: str) -> None:
    with pytest.raises(InvalidAgentName, match="invisible format"):
        validate_agent_name(name)


def test_nfc_and_nfd_spellings_are_one_agent(isolated_workspace: Path) -> None:
    decomposed = "Mu\u0308ller"
    Conversation(agent_name=decomposed).add("User", "one")
    conv = Conversation(agent_name="M\u00fcller")
    assert conv.agent_name == "M\u00fcller"
    assert [p.name for p in (isolated_workspace / "agents").iterdir()] == ["M\u00fcller"]
    assert "one" in conv.conversation_history[0]["content"]  # the preload found it


def test_an_agent_name_of_250_bytes_exports(isolated_workspace: Path) -> None:
    from memorylab.privacy import export_agent

    name = "x" * 250
    Conversation(agent_name=name).add("User", "one")
    path = export_agent(name)
    assert path.exists() and len(path.name.encode()) <= 255
