"""Issue 24: a kill that tears a block, hand edits and odd files never leave MEMORY.md (or an
archive made from it) unreadable through memorylab's own writes.

A SIGKILL can stop a large ``write()`` at a page boundary (the kernel checks for a fatal signal
between pages): what it leaves is written here byte for byte (a block cut at 24,576 bytes), and
another process opens or appends to the memory afterwards.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import stat
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memorylab import Conversation, read_memory
from memorylab.errors import MemoryFormatError
from memorylab.memory import _format as fmt
from memorylab.memory._paths import agent_paths
from memorylab.memory._store import MemoryStore

AGENT = "torn"
BIG = "x" * 100_000


def _tear(path: Path, content: str, at: int = 24_576) -> bytes:
    """Append the first ``at`` bytes of a block of ``content`` to ``path`` (a killed write)."""
    block = fmt.block_text("User", "2026-05-01T10:00:00.000000+00:00", content).encode()
    with open(path, "ab") as handle:
        handle.write(block[:at])
    return block[:at]


def _in_other_process(workspace: Path, code: str) -> str:
    script = "import sys\nfrom memorylab import Conversation\nws = sys.argv[1]\n"
    script += textwrap.dedent(code)
    done = subprocess.run(
        [sys.executable, "-c", script, str(workspace)], capture_output=True, text=True, check=True
    )
    return done.stdout + done.stderr


def _contents(path: Path) -> list[str]:
    doc = read_memory(path)  # strict
    return [m.content for m in doc.messages]


def test_reopening_cuts_a_torn_block_back_and_keeps_it_aside(
    isolated_workspace: Path, caplog: pytest.LogCaptureFixture
) -> None:
    conv = Conversation(agent_name=AGENT)
    conv.add("User", "kept")
    conv.store.close()
    path = conv.memory_md_path
    torn = _tear(path, "msg-1" + BIG)
    with pytest.raises(MemoryFormatError, match="not closed"):
        read_memory(path)
    log = _in_other_process(isolated_workspace, f"Conversation(agent_name={AGENT!r})\n")
    assert "torn block" in log  # the warning
    assert _contents(path) == ["kept"]
    [kept] = path.parent.glob("MEMORY.md.torn-*")
    assert kept.read_bytes() == torn
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    again = Conversation(agent_name=AGENT)  # nothing torn any more: nothing kept twice
    again.add("User", "next")
    assert _contents(path) == ["kept", "next"]
    assert len(list(path.parent.glob("MEMORY.md.torn-*"))) == 1


def test_an_open_conversation_appends_after_another_process_tore_a_block(
    isolated_workspace: Path,
) -> None:
    conv = Conversation(agent_name=AGENT)
    conv.add("User", "first")
    _in_other_process(  # opens, then its add is "killed" mid-write (written torn by hand)
        isolated_workspace,
        f"""
        from memorylab.memory import _format as fmt
        c = Conversation(agent_name={AGENT!r})
        block = fmt.block_text("User", "2026-05-01T10:00:00.000000+00:00", "msg" + "y" * 90000)
        with open(c.memory_md_path, "ab") as f:
            f.write(block[:8192].encode())
        """,
    )
    conv.add("User", "second")  # the append path recovers first
    assert _contents(conv.memory_md_path) == ["first", "second"]
    conv.compact("summary")
    for archive in agent_paths(AGENT).archives():
        read_memory(archive)  # strict: no archive is made of a torn file


def test_a_torn_block_is_never_archived(isolated_workspace: Path) -> None:
    conv = Conversation(agent_name=AGENT)
    conv.add("User", "one")
    ticket = conv.begin_compaction()
    _tear(conv.memory_md_path, "two" + BIG, 4096)  # another process killed after the snapshot
    conv.compact("summary", ticket=ticket)
    archives = agent_paths(AGENT).archives()
    assert [_contents(a) for a in archives] == [["one"]]
    assert _contents(conv.memory_md_path)[1:] == []


@pytest.mark.parametrize(
    "cut", [1, 3, 20, 60, 24_576, -10, -7, -6, -5, -3, -2, -1], ids=lambda c: f"cut{c}"
)
def test_any_cut_of_a_write_is_recovered_whole(isolated_workspace: Path, cut: int) -> None:
    conv = Conversation(agent_name=AGENT)
    conv.add("User", "kept\n---\n### User — 2020-01-01T00:00:00+00:00\n\nforged")
    conv.store.close()
    block = fmt.block_text("Tool Executor", "2026-05-01T10:00:00.000000+00:00", "z" * 30_000)
    with open(conv.memory_md_path, "ab") as handle:
        handle.write(block.encode()[:cut])
    fresh = Conversation(agent_name=AGENT)
    fresh.add("User", "after")
    got = _contents(conv.memory_md_path)
    assert got[0].startswith("kept") and got[-1] == "after"
    assert got[1:-1] in ([], ["z" * 30_000])  # at most the whole in-flight message


# -- hand edits ---------------------------------------------------------------------------------


def _two_blocks() -> Conversation:
    conv = Conversation(agent_name="edited")
    conv.add("User", "one")
    conv.add("Assistant", "two")
    conv.store.close()
    return conv


@pytest.mark.parametrize("ending", ["---\n", "---", "---  \n\n", "---\t\n", "---\n\n\n\n"])
def test_appending_after_an_editor_trimmed_or_padded_the_end(
    isolated_workspace: Path, ending: str
) -> None:
    conv = _two_blocks()
    path = conv.memory_md_path
    text = path.read_text()
    path.write_text(text.removesuffix("---\n\n") + ending)
    Conversation(agent_name="edited").add("User", "three")
    assert _contents(path) == ["one", "two", "three"]  # strict


def test_trailing_spaces_on_a_heading_are_read_and_reported(isolated_workspace: Path) -> None:
    conv = _two_blocks()
    path = conv.memory_md_path
    lines = path.read_text().split("\n")
    heading = next(i for i, line in enumerate(lines) if line.startswith("### Assistant"))
    lines[heading] += "   "
    path.write_text("\n".join(lines))
    read = read_memory(path, strict=False)
    assert [m.content for m in read.document.messages] == ["one", "two"]
    assert [(p.line, p.kind) for p in read.problems] == [(heading + 1, "whitespace")]
    with pytest.raises(MemoryFormatError, match=f"line {heading + 1}: the heading's timestamp"):
        read_memory(path)


def test_tabs_after_separators_are_read_as_separators(isolated_workspace: Path) -> None:
    conv = _two_blocks()
    path = conv.memory_md_path
    header_end = path.read_text().index("## Interaction Log")
    text = path.read_text()
    path.write_text(text[:header_end] + text[header_end:].replace("\n---\n", "\n---\t\n"))
    read = read_memory(path, strict=False)
    assert [m.content for m in read.document.messages] == ["one", "two"]
    assert [p.kind for p in read.problems] == ["whitespace", "whitespace"]
    with pytest.raises(MemoryFormatError, match="'---' is followed by spaces or tabs"):
        read_memory(path)
    Conversation(agent_name="edited").add("User", "three")
    read = read_memory(path, strict=False)
    assert [m.content for m in read.document.messages] == ["one", "two", "three"]
    assert [p.kind for p in read.problems] == ["whitespace"]  # the last one was written again


def test_notes_typed_at_the_end_stay_and_the_next_block_is_its_own(
    isolated_workspace: Path,
) -> None:
    conv = _two_blocks()
    path = conv.memory_md_path
    path.write_text(path.read_text() + "my own notes")
    Conversation(agent_name="edited").add("User", "three")
    read = read_memory(path, strict=False)
    assert [m.content for m in read.document.messages][-1] == "three"
    assert "my own notes" in path.read_text()


# -- compactions.jsonl ------------------------------------------------------------------------


@pytest.mark.parametrize("line", ["[1, 2]", "42", '"text"', "null", '{"archive": "cut'])
def test_a_bad_record_line_is_skipped_and_reported(
    isolated_workspace: Path, caplog: pytest.LogCaptureFixture, line: str
) -> None:
    conv = Conversation(agent_name="records")
    conv.add("User", "one")
    conv.compact("first")
    paths = agent_paths("records")
    with open(paths.compactions, "a") as handle:
        handle.write(line + ("\n" if not line.endswith("cut") else ""))
    conv.add("User", "two")
    with caplog.at_level(logging.WARNING, logger="memorylab"):
        conv.compact("second")  # no AttributeError
    problems: list[str] = []
    records = MemoryStore(paths.memory_md).records(problems)
    assert [r["archive"] for r in records] == [a.name for a in paths.archives()]
    assert problems == ["compactions.jsonl line 2: " + problems[0].split(": ", 1)[1]]
    assert "compactions.jsonl line 2" in caplog.text
    for text in paths.compactions.read_text().splitlines()[2:]:
        assert isinstance(json.loads(text), dict)  # the next record is on a line of its own


# -- filesystems without hard links -----------------------------------------------------------


def test_memory_without_hard_links(
    isolated_workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_link(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_link)
    conv = Conversation(agent_name="fat")
    for i in range(3):
        conv.add("User", f"m{i}")
    conv.compact("summary")
    conv.add("User", "after")
    paths = agent_paths("fat")
    assert [_contents(a) for a in paths.archives()] == [["m0", "m1", "m2"]]
    assert _contents(paths.memory_md)[1:] == ["after"]
    assert not list(paths.folder.glob(".*tmp-*"))
    # a second writer never replaces a file: the exclusive create says it exists
    from memorylab.memory._fsutil import create_new_file

    assert create_new_file(paths.memory_md, b"other") is False
    assert _contents(paths.memory_md)[1:] == ["after"]


@pytest.mark.parametrize("code", [errno.ENOTSUP, errno.ENOSYS])
def test_other_link_refusals_fall_back_too(
    isolated_workspace: Path, monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    def no_link(*args: object, **kwargs: object) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "link", no_link)
    Conversation(agent_name="fuse").add("User", "hello")
    assert _contents(agent_paths("fuse").memory_md) == ["hello"]


def test_on_a_real_vfat_mount(tmp_path: Path) -> None:
    image, mount = tmp_path / "fat.img", tmp_path / "mnt"
    mount.mkdir()
    try:
        with open(image, "wb") as handle:
            handle.truncate(16 << 20)
        subprocess.run(["mkfs.vfat", str(image)], check=True, capture_output=True)
        subprocess.run(
            ["mount", "-o", "loop,umask=077", str(image), str(mount)],
            check=True,
            capture_output=True,
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"cannot mount a vfat image here: {exc}")
    try:
        script = (
            "from memorylab import Conversation\n"
            f"c = Conversation(agent_name='fat', workspace_dir={str(mount)!r})\n"
            "c.add('User', 'a'); c.add('User', 'b'); c.compact('s'); c.add('User', 'c')\n"
        )
        subprocess.run([sys.executable, "-c", script], check=True)
        paths = agent_paths("fat", mount)
        assert _contents(paths.memory_md)[1:] == ["c"]
        assert [_contents(a) for a in paths.archives()] == [["a", "b"]]
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_forget_removes_the_torn_ends_kept_aside(isolated_workspace: Path) -> None:
    folder = isolated_workspace / "custom"
    folder.mkdir(parents=True)
    store = MemoryStore(folder / "MEMORY.md")
    store.ensure("c", datetime(2026, 5, 1, tzinfo=UTC))
    _tear(store.path, "secret" + BIG)
    store.ensure("c", datetime(2026, 5, 1, tzinfo=UTC))
    assert list(folder.glob("MEMORY.md.torn-*"))
    removed = store.remove(whole_folder=False)
    assert any(name.startswith("MEMORY.md.torn-") for name, _ in removed)
    assert not list(folder.glob("MEMORY.md.torn-*"))


def test_loaders_report_the_torn_end_and_bad_records(isolated_workspace: Path) -> None:
    from memorylab.analysis import memory_df_with_problems

    conv = Conversation(agent_name=AGENT)
    conv.add("User", "one")
    conv.compact("summary")
    conv.store.close()
    _tear(conv.memory_md_path, "two" + BIG)
    with open(agent_paths(AGENT).compactions, "a") as handle:
        handle.write("[1, 2]\n")
    Conversation(agent_name=AGENT)  # recovery
    read = memory_df_with_problems(isolated_workspace)
    kinds = set(read.problems["kind"])
    assert {"torn", "records"} <= kinds, read.problems
    assert list(read.frame["content"].str.slice(0, 3)).count("one") == 1


def test_an_edit_after_a_torn_write_keeps_no_torn_block(isolated_workspace: Path) -> None:
    conv = Conversation(agent_name=AGENT)
    conv.add("User", "one")
    conv.add("User", "two")
    _tear(conv.memory_md_path, "three" + BIG)  # another process killed mid-write
    conv.delete(0)
    assert _contents(conv.memory_md_path) == ["two"]


@pytest.mark.parametrize("kind", ["crlf", "crlf-trimmed", "bom", "crlf-torn"])
def test_windows_line_ends_and_a_bom_are_appended_to_as_parse_reads_them(
    isolated_workspace: Path, kind: str
) -> None:
    conv = _two_blocks()
    path = conv.memory_md_path
    text = path.read_text()
    if kind == "bom":
        text = "\ufeff" + text
    else:
        text = text.replace("\n", "\r\n")
        if kind == "crlf-trimmed":
            text = text.removesuffix("\r\n")
        if kind == "crlf-torn":
            text += "### User — 2026-05-01T10:00:00.000000+00:00\r\n\r\nhalf"
    path.write_bytes(text.encode())
    Conversation(agent_name="edited").add("User", "three")
    read = read_memory(path, strict=False)
    assert [m.content for m in read.document.messages] == ["one", "two", "three"]
    assert [p.kind for p in read.problems] == ["bom" if kind == "bom" else "crlf"]


def test_a_whole_read_only_memory_can_still_be_snapshotted(isolated_workspace: Path) -> None:
    conv = Conversation(agent_name="ro")
    conv.add("User", "one")
    store = conv.store
    assert store is not None
    header_only = MemoryStore.for_agent("ro-empty")
    header_only.ensure("c", datetime(2026, 5, 1, tzinfo=UTC))
    for path in (store.path, header_only.path):
        path.chmod(0o400)
    if os.access(store.path, os.W_OK):
        pytest.skip("running as root: a 0o400 file is writable")
    assert store.snapshot().data == store.path.read_bytes()
    assert header_only.snapshot().data == header_only.path.read_bytes()
