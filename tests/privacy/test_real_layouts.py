"""The privacy commands on the layouts real users have (issue 24, "Privacy commands on real
layouts"): nested agents the reference framework writes (``Agent(agent_name="team/alpha")`` →
``agents/team/alpha/``), a FIFO where MEMORY.md belongs, a report run from a folder that holds
the reference's save files, and the modes of every file memorylab writes.

The nested workspace is written by the real reference (swarms 16.0.3, the interpreter named by
``$MEMORYLAB_SWARMS_PYTHON``); those tests are skipped without it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from memorylab.analysis import memory_df
from memorylab.cli import main
from memorylab.errors import AgentNotFound, InvalidAgentName, UnsafePath
from memorylab.memory._paths import agent_folders, validate_agent_path
from memorylab.privacy import export_agent, export_document, forget, load_export, purge

SWARMS_PYTHON = os.environ.get("MEMORYLAB_SWARMS_PYTHON")
needs_reference = pytest.mark.skipif(
    not SWARMS_PYTHON,
    reason="set MEMORYLAB_SWARMS_PYTHON to a Python with swarms==16.0.3 (.ci/run does)",
)
REFERENCE_ENV = {"SWARMS_TELEMETRY_ON": "false", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                 "LITELLM_OFFLINE_MODE": "true", "HF_HUB_OFFLINE": "1"}  # fmt: skip
NESTED = ["ops/db/primary", "ops/web", "team/alpha", "team/beta"]
AGENTS = [*NESTED[:2], "solo", *NESTED[2:]]  # as `memorylab ls` lists them


def _reference(script: str, cwd: Path, **env: str) -> list[str]:
    """Run ``script`` with the reference; the lines it wrote with ``out(...)`` (to a file: the
    reference's logger shares stdout)."""
    assert SWARMS_PYTHON is not None
    answers = cwd / ".answers"
    answers.unlink(missing_ok=True)
    prelude = f"def out(*parts):\n    open({str(answers)!r}, 'a').write(' '.join(map(str, parts)) + '\\n')\n"
    done = subprocess.run(
        [SWARMS_PYTHON, "-c", prelude + textwrap.dedent(script)], cwd=cwd, capture_output=True,
        text=True, env={**os.environ, **REFERENCE_ENV, **env}, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    if not answers.exists():
        return []
    lines = answers.read_text(encoding="utf-8").splitlines()
    answers.unlink()
    return lines


@pytest.fixture(scope="module")
def reference_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four nested agents and one plain one, each with a compaction, written by the real
    reference's ``Agent(agent_name=..., persistent_memory=True)``."""
    root = tmp_path_factory.mktemp("reference-nested")
    _reference(
        f"""
        from swarms import Agent
        for name in {AGENTS!r}:
            agent = Agent(agent_name=name, model_name="gpt-4o-mini", max_loops=1, print_on=False,
                          persistent_memory=True)
            agent.short_memory.add("user", f"hello from {{name}}")
            agent.short_memory.compact(f"summary of {{name}}")
            agent.short_memory.add("user", f"after {{name}}")
        """,
        root,
        WORKSPACE_DIR=str(root),
    )
    return root


@pytest.fixture
def nested(reference_workspace: Path, isolated_workspace: Path) -> Path:
    """A copy of the reference's workspace as this test's workspace ($WORKSPACE_DIR)."""
    shutil.copytree(reference_workspace / "agents", isolated_workspace / "agents")
    return isolated_workspace


def _memory_files(workspace: Path) -> list[str]:
    agents = workspace / "agents"
    return sorted(p.relative_to(agents).as_posix() for p in agents.rglob("*") if p.is_file())


def _age(workspace: Path, seconds: float) -> None:
    when = time.time() - seconds
    for item in (workspace / "agents").rglob("*"):
        os.utime(item, (when, when), follow_symlinks=False)


# -- nested agents -------------------------------------------------------------------------------


@needs_reference
def test_the_names_ls_prints_are_the_names_the_privacy_commands_take(
    nested: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ls"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()[2:]]
    assert listed == AGENTS
    folders = agent_folders(nested / "agents")
    names = [f.relative_to(nested / "agents").as_posix() for f in folders]
    assert [n for n in names if n not in ("ops", "team")] == AGENTS
    for name in AGENTS:  # every name the loaders print is one the privacy commands accept
        assert "/".join(validate_agent_path(name)) == name


@needs_reference
def test_export_and_forget_a_nested_agent_by_the_name_ls_prints(
    nested: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "alpha.json"
    assert main(["export", "team/alpha", "-o", str(out)]) == 0, capsys.readouterr().err
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["agent"] == "team/alpha"
    texts = [m["content"] for s in doc["segments"] for m in s["messages"]]
    assert texts == ["hello from team/alpha", "summary of team/alpha", "after team/alpha"]
    assert load_export(out).equals(memory_df(nested / "agents" / "team" / "alpha"))
    os.chdir(tmp_path)
    default = export_agent("ops/db/primary")  # no folders made in the current one
    assert default == tmp_path / "ops__db__primary.export.json" and default.is_file()
    assert export_document("ops/db/primary")["agent"] == "ops/db/primary"

    assert main(["forget", "team/alpha", "--yes"]) == 0, capsys.readouterr().err
    assert "forgot 'team/alpha'" in capsys.readouterr().out
    assert not (nested / "agents" / "team" / "alpha").exists()
    report = forget("ops/db/primary")
    assert report.folder == nested / "agents" / "ops" / "db" / "primary"
    assert "MEMORY.md" in report.files and not report.folder.exists()
    left = {p.split("/MEMORY.md")[0] for p in _memory_files(nested) if p.endswith("MEMORY.md")}
    assert left == {"ops/web", "solo", "team/beta"}
    assert not (nested / "agents" / "ops" / "db").exists()  # it held only ops/db/primary
    forget("team/beta")
    assert not (nested / "agents" / "team").exists() and (nested / "agents").is_dir()
    with pytest.raises(AgentNotFound, match=r"agents there: ops/web, solo\)"):
        forget("team/alpha")


@needs_reference
def test_purge_removes_every_idle_agent_nested_ones_too(
    nested: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's run: ``purge --older-than 1s`` said "removed 1 item(s)" and left 4 nested
    agents' data on disk without a word."""
    _age(nested, 10)
    assert main(["purge", "--older-than", "1s", "--dry-run"]) == 0
    dry = capsys.readouterr().out.splitlines()
    assert _memory_files(nested) != []
    assert main(["purge", "--older-than", "1s", "--yes"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out.splitlines()
    assert [line.replace("would remove", "removed") for line in dry] == out
    whole = [line.split(":", 1)[0] for line in out if ": the whole agent " in line]
    assert whole == AGENTS  # ops/ and team/ go with their agents, as no items of their own
    assert out[-1] == "removed 5 item(s)"
    assert _memory_files(nested) == [] and list((nested / "agents").iterdir()) == []


@needs_reference
def test_purge_keeps_a_nested_agent_in_use_and_says_so(
    nested: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _age(nested, 7200)
    beta = nested / "agents" / "team" / "beta" / "MEMORY.md"
    os.utime(beta)  # team/beta is in use
    team_own = nested / "agents" / "team" / "MEMORY.md"  # and team has memory of its own
    team_own.write_text("# Agent Memory\n\n## Interaction Log\n\n", encoding="utf-8")
    os.utime(team_own, (time.time() - 7200, time.time() - 7200))

    items = purge(older_than="1h")
    by_agent = {item.agent: item for item in items if item.kind == "agent"}
    assert sorted(by_agent) == ["ops/db/primary", "ops/web", "solo", "team", "team/alpha"]
    assert by_agent["team"].kept == ("team/beta",)
    assert "the folder stays, it holds the memory of team/beta" in by_agent["team"].reason
    assert str(by_agent["team"]).startswith("team: its own memory files in ")
    assert not team_own.exists() and beta.is_file()
    assert [p for p in _memory_files(nested) if not p.startswith("team/beta/")] == []

    _age(nested, 7200)
    os.utime(beta)
    assert main(["purge", "--older-than", "1h", "--yes"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "kept 1 agent(s) that changed in the last 1h: team/beta (MEMORY.md holds the messages "
        "since the last compaction and is never trimmed; only archives older than --older-than "
        "go)",
        "removed 0 item(s)",
    ]


@pytest.mark.parametrize(
    "name",
    ["team/../solo", "/etc/passwd", "team//alpha", "team/alpha/", "solo/archive", ".x/alpha",
     "team/.hidden", "team\\alpha", "team/..", "../team/alpha", "team/al\x00pha"],
)  # fmt: skip
def test_a_nested_name_stays_inside_the_workspace(
    isolated_workspace: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    (isolated_workspace / "agents" / "solo" / "archive").mkdir(parents=True)
    (isolated_workspace / "agents" / "team" / "alpha").mkdir(parents=True)
    with pytest.raises(InvalidAgentName):
        forget(name)
    with pytest.raises(InvalidAgentName):
        export_document(name)
    assert main(["forget", name, "--yes"]) == 2
    assert main(["export", name]) == 2
    assert main(["show", name]) == 2
    assert capsys.readouterr().err.count("memorylab: ") == 3
    assert (isolated_workspace / "agents" / "solo" / "archive").is_dir()


def test_a_symlinked_folder_on_the_way_is_refused(isolated_workspace: Path, tmp_path: Path) -> None:
    """``agents/link -> elsewhere``: ``link/alpha`` names memory outside the workspace."""
    outside = tmp_path / "outside"
    (outside / "alpha").mkdir(parents=True)
    (outside / "alpha" / "MEMORY.md").write_text("# Agent Memory\n", encoding="utf-8")
    (isolated_workspace / "agents").mkdir(parents=True)
    (isolated_workspace / "agents" / "link").symlink_to(outside)
    with pytest.raises(UnsafePath, match="not a folder"):
        forget("link/alpha")
    with pytest.raises(UnsafePath, match="not a folder"):
        export_document("link/alpha")
    assert purge(older_than="1s") == []
    assert (outside / "alpha" / "MEMORY.md").is_file()


# -- a FIFO where a memory file belongs ----------------------------------------------------------


def _cli(argv: list[str], cwd: Path, workspace: Path) -> subprocess.CompletedProcess[str]:
    """``memorylab ARGV`` in a child process: a hang is a failure, not a stuck suite (300 s: a
    hang guard a loaded machine's start-up never reaches; a FIFO blocks forever)."""
    code = f"from memorylab.cli import main; raise SystemExit(main({argv!r}))"
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300,
        env={**os.environ, "WORKSPACE_DIR": str(workspace)},
    )  # fmt: skip


@pytest.mark.parametrize("where", ["MEMORY.md", "archive/history_2026-04-20_09-00-00.md",
                                   "compactions.jsonl"])  # fmt: skip
def test_a_fifo_is_refused_at_once(isolated_workspace: Path, tmp_path: Path, where: str) -> None:
    """``forget`` blocked forever on a FIFO MEMORY.md, and ``export`` then exited 0 with the file
    left out: both, and ``purge``, refuse at once with one line and exit code 4."""
    from memorylab import Conversation

    conv = Conversation(agent_name="Alpha")
    conv.add("User", "deploy to eu-west")
    folder = isolated_workspace / "agents" / "Alpha"
    fifo = folder / where
    fifo.parent.mkdir(exist_ok=True)
    fifo.unlink(missing_ok=True)
    os.mkfifo(fifo)
    before = _memory_files(isolated_workspace)
    for argv in (["forget", "Alpha", "--yes"], ["export", "Alpha"],
                 ["purge", "--older-than", "1s", "--yes"]):  # fmt: skip
        done = _cli(argv, tmp_path, isolated_workspace)  # blocked on the FIFO: TimeoutExpired
        assert done.returncode == 4, (argv, done.stdout, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("memorylab: "), done.stderr
        assert f"{where} should be a regular file but is a FIFO" in lines[0]
    assert list(tmp_path.glob("*.export.*")) == []
    assert _memory_files(isolated_workspace) == before
    for call in (lambda: forget("Alpha"), lambda: export_document("Alpha"),
                 lambda: purge(older_than="1s")):  # fmt: skip
        with pytest.raises(UnsafePath, match="FIFO"):
            call()


# -- the report reads only the workspace it is given ---------------------------------------------


def _figures(html: str) -> str:
    """The report without the time it was made."""
    return re.sub(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2})?(\.\d+)?([+-]\d{2}:?\d{2}| UTC)?",
                  "TIME", html)  # fmt: skip


def test_the_report_ignores_save_files_in_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``./conversations/conversation_<name>.json`` (the reference's save file of a
    conversation of that name) changed the report's figures; YAML there made it exit 2."""
    from memorylab.memory._reference import ReferenceMethods
    from memorylab.report import build_report
    from memorylab.transcripts import bundled_workspace

    workspace = tmp_path / "workspace"
    shutil.copytree(bundled_workspace(), workspace)
    clean = tmp_path / "clean"
    clean.mkdir()
    monkeypatch.chdir(clean)
    expected = _figures(build_report(workspace))

    cwd = tmp_path / "cwd"
    (cwd / "conversations").mkdir(parents=True)
    monkeypatch.chdir(cwd)
    names = ["BugHunter", "DataEngineer", "Researcher"]
    big = [{"role": "User", "content": "padding " * 4000, "timestamp": ""}] * 20
    for name in names:
        save = cwd / "conversations" / f"conversation_{name}_conversation.json"
        save.write_text(json.dumps(big), encoding="utf-8")
    loads: list[object] = []
    with monkeypatch.context() as patched:
        patched.setattr(ReferenceMethods, "load", lambda self, path: loads.append(path))
        assert _figures(build_report(workspace)) == expected
    assert loads == []

    for name in names:
        save = cwd / "conversations" / f"conversation_{name}_conversation.json"
        save.write_text("- role: User\n  content: yaml in a .json file\n", encoding="utf-8")
    out = tmp_path / "report.html"
    assert main(["report", str(workspace), "-o", str(out)]) == 0, capsys.readouterr().err
    assert _figures(out.read_text(encoding="utf-8")) == expected


def test_a_named_conversation_still_resumes_from_its_save_file(
    isolated_workspace: Path,
) -> None:
    """The reference's rule is kept for a conversation that may preload: a name given resumes
    from ``./conversations/conversation_<name>.json``; ``preload=False`` reads nothing."""
    from memorylab import Conversation

    first = Conversation(name="project")
    first.add("User", "remember this")
    first.save_as_json()
    assert Path("conversations/conversation_project.json").is_file()
    again = Conversation(name="project")
    assert [e["content"] for e in again.conversation_history] == ["remember this"]
    fresh = Conversation(name="project", preload=False)
    assert fresh.conversation_history == []
    given = Conversation(name="x", preload=False, load_filepath="conversations/"
                         "conversation_project.json")  # fmt: skip
    assert [e["content"] for e in given.conversation_history] == ["remember this"]


# -- save files and transcripts ------------------------------------------------------------------


def test_save_as_yaml_writes_a_yaml_path(isolated_workspace: Path) -> None:
    from memorylab import Conversation
    from memorylab.errors import InvalidSetting

    conv = Conversation(name="x")
    conv.add("User", "hello")
    conv.save_as_yaml()
    assert not Path("conversations/conversation_x.json").exists()
    saved = Path("conversations/conversation_x.yaml")
    assert saved.read_text(encoding="utf-8").startswith("-   role: User")
    assert oct(saved.stat().st_mode & 0o777) == "0o600"
    back = Conversation(name="y")
    back.load(saved)
    assert [e["content"] for e in back.conversation_history] == ["hello"]
    conv.save_as_json()
    assert json.loads(Path("conversations/conversation_x.json").read_text())[0]["content"] == (
        "hello"
    )
    yaml_first = Conversation(name="z", export_method="yaml")
    yaml_first.add("User", "z")
    yaml_first.save_as_json()  # its save_filepath says .yaml: JSON goes to the .json path
    assert Path("conversations/conversation_z.json").is_file()
    assert not Path("conversations/conversation_z.yaml").exists()
    with pytest.raises(InvalidSetting, match=r"extension says JSON; give a \.yaml path"):
        conv.save_as_yaml("elsewhere.json")


@needs_reference
def test_save_as_yaml_against_the_reference(tmp_path: Path) -> None:
    """swarms 16.0.3's ``save_as_yaml()`` writes YAML into the ``.json`` save path, which its own
    ``load`` then cannot read; its ``export()`` with ``export_method="yaml"`` writes
    ``conversation_<name>.yaml``. memorylab's ``save_as_yaml()`` writes that ``.yaml`` path, and
    the reference loads it."""
    from memorylab import Conversation

    reference = tmp_path / "reference"
    reference.mkdir()
    out = _reference(
        """
        import os
        from swarms.structs.conversation import Conversation
        plain = Conversation(name="x")
        plain.add("user", "hello")
        plain.save_as_yaml()
        out(os.path.relpath(plain.save_filepath))
        out(open(plain.save_filepath).read().startswith("-   role: user"))
        try:
            Conversation(name="x")
            out("resumed")
        except Exception as error:
            out("cannot resume:", type(error).__name__)
        exported = Conversation(name="x", export_method="yaml")
        exported.add("user", "hello")
        exported.export()
        out(os.path.relpath(exported.save_filepath))
        """,
        reference,
    )
    lines = out
    assert lines[0] == "conversations/conversation_x.json" and lines[1] == "True"
    assert lines[3] == "conversations/conversation_x.yaml"

    ours = tmp_path / "ours"
    ours.mkdir()
    os.chdir(ours)
    conv = Conversation(name="x", redact=None)
    conv.add("user", "hello")
    conv.save_as_yaml()
    assert Path(lines[3]).is_file() and not Path(lines[0]).exists()
    loaded = _reference(
        """
        from swarms.structs.conversation import Conversation
        conv = Conversation(name="other")
        conv.load("conversations/conversation_x.yaml")
        out([m["content"] for m in conv.conversation_history if m["role"] == "user"])
        """,
        ours,
    )
    assert loaded == ["['hello']"]


def test_save_transcript_is_private_whatever_the_umask(tmp_path: Path) -> None:
    from memorylab.transcripts import load_transcript, save_transcript

    source = Path(__file__).resolve().parents[2] / "data" / "transcripts" / "checkout-bug-hunt.jsonl"
    transcript = load_transcript(source)
    old = os.umask(0)
    try:
        path = save_transcript(transcript, tmp_path / "t.jsonl")
    finally:
        os.umask(old)
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert load_transcript(path) == transcript


# -- summaries the reference's plain compact() wrote (issue 28) ---------------------------------


@needs_reference
def test_plain_compact_summaries_are_summaries_in_frames_and_preload(tmp_path: Path) -> None:
    """The reference's ``compact(summary)`` re-seeds MEMORY.md with the summary unmarked, role
    System by default or the role it is given; the ContextCompressor's own is marked. The
    loaders and the bounded preload read each as a summary, decided from the times the files
    record; a fresh agent's first task, written as quickly, is not one."""
    from memorylab import Conversation

    _reference(
        """
        import time
        from swarms.structs.conversation import Conversation
        def conv(name):
            return Conversation(name=name, time_enabled=True, memory_md_path=f"agents/{name}/MEMORY.md")
        system = conv("Sys")
        for turn in range(30):
            system.add("user", f"task {turn} " + "words " * 30)
        system.compact("plain summary in System")
        for turn in range(8):
            system.add("user", f"after the summary {turn} " + "more " * 20)
        user = conv("Usr")
        user.add("user", "an early task")
        time.sleep(3)  # the archive's name and the new file's time: 3 s after this block
        user.compact("plain summary as user", summary_role="user")
        user.add("user", "after")
        fresh = conv("Fresh")
        fresh.add("user", "a first task, at once")
        """,
        tmp_path,
        WORKSPACE_DIR=str(tmp_path),
    )
    frame = memory_df(tmp_path, on_bad="error")
    summaries = frame.loc[frame["is_summary"], ["agent", "role", "content"]]
    assert summaries.values.tolist() == [
        ["Sys", "System", "plain summary in System"],
        ["Usr", "user", "plain summary as user"],
    ]
    assert not frame.loc[frame["agent"] == "Fresh", "is_summary"].any()
    # The bounded preload keeps the summary first, whatever else its budget leaves out.
    again = Conversation(
        agent_name="Sys", workspace_dir=tmp_path, preload_max_tokens=700, token_counter=len
    )
    plan = again.preload_plan
    assert plan is not None and 0 < plan.omitted_messages < 8
    assert "plain summary in System" in plan.text  # the oldest block, kept as the summary
    assert "after the summary 7" in plan.text and "after the summary 0" not in plan.text
