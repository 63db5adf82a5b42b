"""Which memory the permissions warning is about (memory/_permissions.py, issue 41): a file whose
content group or others can read; never a folder made with a normal umask around memorylab's
private files, which every command warned about."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from memorylab import Conversation
from memorylab.cli import main
from memorylab.privacy import check_permissions, warn_permissions


@pytest.fixture
def umask() -> Iterator[None]:
    """Restore the process's umask after a test that sets its own."""
    before = os.umask(0o022)
    yield
    os.umask(before)


def _warned(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if "can be read by other users" in r.getMessage()]  # fmt: skip


def _workspace(folder: Path) -> Path:
    folder.mkdir()  # as a user makes it, with the umask in force
    conv = Conversation(agent_name="Alpha", workspace_dir=folder)
    conv.add("User", "deploy to eu-west")
    conv.compact("deploy to eu-west")
    conv.add("User", "estimate the cost")
    return folder


@pytest.mark.parametrize("mask", [0o022, 0o077])
def test_a_workspace_made_with_a_normal_umask_is_not_warned_about(
    umask: None,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    mask: int,
) -> None:
    os.umask(mask)
    workspace = _workspace(tmp_path / f"ws{mask:o}")
    assert (workspace.stat().st_mode & 0o777) == 0o777 & ~mask
    with caplog.at_level(logging.WARNING, logger="memorylab"):
        for argv in (["ls", str(workspace)], ["stats", str(workspace)],
                     ["audit", "facts", str(workspace)]):  # fmt: skip
            assert main(argv) == 0, argv
    assert _warned(caplog) == []
    assert "can be read by other users" not in capsys.readouterr().err
    # the folder is still listed for whoever asks: others can list it, not read its files
    listed = check_permissions(workspace)
    assert len(listed) == (1 if mask == 0o022 else 0)


@pytest.mark.parametrize("mask", [0o022, 0o077])
def test_files_another_framework_wrote_are_warned_about_where_more_open_than_the_umask(
    umask: None, tmp_path: Path, caplog: pytest.LogCaptureFixture, mask: int
) -> None:
    """0o644 files (the reference framework writes them under umask 022) that memorylab only
    reads: the user's normal under umask 022, not warned about; more open than umask 077
    makes files, warned about once. The same file loaded as an agent's own memory (which
    memorylab writes 0o600 whatever the umask) is warned about either way, with the chmod."""
    workspace = _workspace(tmp_path / "ws")
    memory_md = workspace / "agents" / "Alpha" / "MEMORY.md"
    os.chmod(memory_md, 0o644)
    os.umask(mask)
    with caplog.at_level(logging.WARNING, logger="memorylab"):
        assert main(["stats", str(workspace)]) == 0
        assert main(["audit", "costs", str(workspace)]) == 0
    if mask == 0o022:
        assert _warned(caplog) == []
    else:
        (message,) = _warned(caplog)
        assert str(memory_md) in message and "1 file(s) more open than umask 077 makes" in message
        assert "chmod" not in message  # files the user only reads: nothing to change
    caplog.clear()
    os.chmod(memory_md, 0o640)  # group only: said too (a group may hold other users)
    with caplog.at_level(logging.WARNING, logger="memorylab"):
        found = warn_permissions(memory_md, own=True)
    assert any("group can read it" in line for line in found)
    (message,) = _warned(caplog)
    assert f"chmod -R go-rwx '{memory_md}'" in message
