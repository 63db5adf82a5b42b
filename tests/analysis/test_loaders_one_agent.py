"""Issue 40/41: which agent of a source is read is decided once, by ``load_records(source,
agent=...)`` (the CLI's ``--agent`` and the report both ask it), and which loader reads a path
once, by ``loader_name`` (``None``: no loader reads it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memorylab import Conversation
from memorylab.analysis import load_records
from memorylab.analysis._loaders import loader_name
from memorylab.cli import main
from memorylab.errors import AgentNotFound, InvalidSetting

SESSIONS = Path(__file__).resolve().parents[2] / "data" / "foreign" / "openai-agents" / "sessions.sqlite"


def _workspace(root: Path) -> Path:
    for name in ("alpha", "beta"):
        Conversation(agent_name=name, workspace_dir=root).add("User", f"{name}'s message")
    return root


def test_an_agent_of_a_workspace_is_read_from_its_folder_alone(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path / "ws")
    # beta's memory is no memory file at all: reading the workspace whole would stop at it
    (workspace / "agents" / "beta" / "MEMORY.md").write_bytes(b"\xff\xfe not a memory file")
    with pytest.raises(Exception, match="beta"):
        load_records(workspace, strict=True)
    (record,) = load_records(workspace, strict=True, agent="alpha")
    assert record.agent == "alpha"


def test_an_agent_not_there_is_agent_not_found_naming_those_there(tmp_path: Path) -> None:
    workspace = _workspace(tmp_path / "ws")
    with pytest.raises(AgentNotFound, match=r"no agent 'gamma' in .*; agents there: alpha, beta"):
        load_records(workspace, agent="gamma")
    with pytest.raises(InvalidSetting, match="agent"):
        load_records(workspace, agent=5)  # type: ignore[arg-type]


def test_a_run_of_a_file_of_several_is_its_record() -> None:
    names = [record.agent for record in load_records(SESSIONS)]
    assert len(names) > 1
    (record,) = load_records(SESSIONS, agent=names[1])
    assert record.agent == names[1]
    with pytest.raises(AgentNotFound, match="agents there: " + ", ".join(sorted(names))):
        load_records(SESSIONS, agent="nobody")


def test_the_cli_agent_of_a_foreign_file_is_the_librarys_choice(
    capsys: pytest.CaptureFixture[str],
) -> None:
    names = [record.agent for record in load_records(SESSIONS)]
    assert main(["audit", "costs", "--agent", names[0], str(SESSIONS), "--format", "csv"]) == 0
    capsys.readouterr()
    assert main(["audit", "costs", "--agent", "nobody", str(SESSIONS)]) == 5
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"memorylab: no agent 'nobody' in {SESSIONS}; agents there: ")


def test_loader_name_is_none_where_no_loader_reads(tmp_path: Path) -> None:
    unknown = tmp_path / "notes.bin"
    unknown.write_bytes(b"\x00\x01 nothing any loader reads")
    assert loader_name(unknown) is None
    assert loader_name(SESSIONS) == "openai-agents"
    assert loader_name(_workspace(tmp_path / "ws")) == "memorylab"
