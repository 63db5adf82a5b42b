"""Edits of the history (the reference's ``update``, ``delete``, ``clear``) keep every guarantee.

An edit changes MEMORY.md by the compaction's path (the old file archived, then replaced
atomically, :meth:`MemoryStore.edit`): nothing it removes is destroyed, writers in other processes
lose nothing meanwhile, and the file stays strictly parseable and readable by the reference. Also
the reference's constructor keywords and save files, given bad input.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from memorylab import Conversation, read_memory
from memorylab.errors import InvalidSetting, StoreError

WORKERS = Path(__file__).with_name("_workers.py")
KEY = "sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0Ab"


def _contents(path: Path) -> list[str]:
    return [m.content for m in read_memory(path, strict=True).messages]


def _archived(conv: Conversation) -> str:
    assert conv.memory_md_path is not None
    folder = conv.memory_md_path.parent / "archive"
    return "".join(p.read_text(encoding="utf-8") for p in sorted(folder.glob("history_*.md")))


def _records(conv: Conversation) -> list[dict[str, object]]:
    assert conv.memory_md_path is not None
    lines = (conv.memory_md_path.parent / "compactions.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_update_rewrites_the_block_and_archives_the_old_one() -> None:
    conv = Conversation(agent_name="Editor", system_prompt="static, never on disk")
    conv.add("User", "deploy to eu-west")
    conv.add("Editor", "deployed to eu-west")
    conv.update(2, "Editor", "deployed to eu-west-2")
    assert conv.memory_md_path is not None
    assert _contents(conv.memory_md_path) == ["deploy to eu-west", "deployed to eu-west-2"]
    assert "deployed to eu-west\n" in _archived(conv)  # the old text is archived, not destroyed
    record = _records(conv)[-1]
    assert record["kind"] == "edit" and record["extra"] == {"edit": "update", "index": 2}
    assert "deployed" not in json.dumps(record)  # records never hold content


def test_delete_and_clear_archive_what_they_remove() -> None:
    conv = Conversation(agent_name="Editor")
    for n in range(4):
        conv.add("User", f"message {n}")
    conv.delete(1)
    conv.delete(-1)
    assert conv.memory_md_path is not None
    assert _contents(conv.memory_md_path) == ["message 0", "message 2"]
    conv.clear()
    assert conv.conversation_history == []
    assert _contents(conv.memory_md_path) == []
    archived = _archived(conv)
    assert all(f"message {n}" in archived for n in range(4))
    assert [r["extra"]["edit"] for r in _records(conv)] == ["delete", "delete", "clear"]  # type: ignore[index]
    assert Conversation(agent_name="Editor").conversation_history == []  # nothing to preload


def test_clearing_an_empty_memory_writes_nothing() -> None:
    conv = Conversation(agent_name="Editor")
    conv.clear()
    assert conv.memory_md_path is not None
    assert not (conv.memory_md_path.parent / "archive").exists()


def test_an_edit_out_of_range_changes_nothing() -> None:
    conv = Conversation(agent_name="Editor")
    conv.add("User", "only")
    assert conv.memory_md_path is not None
    before = conv.memory_md_path.read_bytes()
    with pytest.raises(IndexError):
        conv.update(5, "User", "x")
    with pytest.raises(IndexError):
        conv.delete(-3)
    with pytest.raises(InvalidSetting, match="index"):
        conv.delete("first")
    assert conv.memory_md_path.read_bytes() == before


def _spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKERS), *args],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


@pytest.mark.slow
def test_writers_in_other_processes_lose_nothing_while_the_history_is_edited(
    tmp_path: Path,
) -> None:
    workspace, agent, stop = tmp_path / "ws", "shared", tmp_path / "stop"
    editor = Conversation(agent_name=agent, workspace_dir=workspace)
    for n in range(30):
        editor.add("User", f"own-{n}")
    writers = {p: _spawn("writer", str(workspace), agent, p, "300", str(stop)) for p in ("a", "b")}
    written: dict[str, int] = {}
    try:
        for proc in writers.values():
            assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
        for proc in writers.values():
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        for n in range(10):  # edits while both writers append
            editor.update(n, "User", f"own-{n} (edited)")
            editor.delete(len(editor.conversation_history) - 1)
        stop.touch()
        for prefix, proc in writers.items():
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0 and out.startswith("done "), (out, err)
            written[prefix] = int(out.split()[1])
    finally:
        for proc in writers.values():
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    assert editor.memory_md_path is not None
    counts = Counter(_contents(editor.memory_md_path))  # strict: no torn or forged block
    for prefix, count in written.items():
        for n in range(count):  # every writer's message, exactly once, in the live file
            assert counts[f"{prefix}-{n}"] == 1, f"{prefix}-{n}: {counts[f'{prefix}-{n}']}"
    for n in range(10):
        assert counts[f"own-{n} (edited)"] == 1 and counts[f"own-{n}"] == 0
    for n in range(20, 30):  # deleted from the file, kept in an archive
        assert counts[f"own-{n}"] == 0 and f"own-{n}\n" in _archived(editor)


@pytest.mark.skipif(
    not os.environ.get("MEMORYLAB_SWARMS_PYTHON"),
    reason="set MEMORYLAB_SWARMS_PYTHON to a Python with swarms==16.0.3 (.ci/run does)",
)
def test_the_reference_preloads_a_file_memorylab_edited(tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    conv = Conversation(memory_md_path=path)
    conv.add("User", "keep me")
    conv.add("User", "drop me")
    conv.add("User", "change me")
    conv.delete(1)
    conv.update(1, "User", "changed")
    script = (
        "import sys\n"
        "from swarms.structs.conversation import Conversation\n"
        "c = Conversation(memory_md_path=sys.argv[1], conversations_dir=sys.argv[2])\n"
        "print('\\n'.join(str(m['content']) for m in c.conversation_history))\n"
    )
    env = {**os.environ, "SWARMS_TELEMETRY_ON": "false", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
           "LITELLM_OFFLINE_MODE": "true", "HF_HUB_OFFLINE": "1"}  # fmt: skip
    done = subprocess.run(
        [os.environ["MEMORYLAB_SWARMS_PYTHON"], "-c", script, str(path), str(tmp_path / "c")],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "keep me" in done.stdout and "changed" in done.stdout
    assert "drop me" not in done.stdout and "change me" not in done.stdout


# -- the reference's keywords and save files -------------------------------------------------


def test_entries_carry_what_the_reference_keywords_ask_for() -> None:
    conv = Conversation(token_count=True, message_id_on=True, time_enabled=False)
    entry = conv.add("User", "hello world", {"source": "cli"}, "input")
    assert entry["metadata"] == {"source": "cli"} and entry["category"] == "input"
    # the entry's tokens in the request (3 a message, "user", "hello world"); the request
    # costs 3 more (the reply's priming)
    assert len(entry["message_id"]) == 36 and entry["token_count"] == conv.token_count() - 3 == 6
    conv.update(0, "User", "hello world, and a longer greeting than before")
    assert conv.conversation_history[0]["token_count"] == conv.token_count() - 3 == 13
    conv.batch_add([{"role": "Tool", "content": "42", "tool_call_id": "call_1"}])
    assert conv.conversation_history[-1]["tool_call_id"] == "call_1"


def test_batch_add_writes_through_to_memory_md() -> None:
    conv = Conversation(agent_name="Batch")
    conv.batch_add([{"role": "User", "content": "one"}, {"role": "User", "content": "two"}])
    assert conv.memory_md_path is not None
    assert _contents(conv.memory_md_path) == ["one", "two"]


def test_count_history_tokens_is_never_capped_at_the_window() -> None:
    conv = Conversation(context_length=10, dynamic_context_window=True, time_enabled=False)
    conv.add("User", "word " * 100)
    assert conv.count_history_tokens() > 10


def test_save_files_are_private_and_redacted(tmp_path: Path) -> None:
    target = tmp_path / "saves" / "2026" / "conv.json"
    conv = Conversation(save_filepath=target, autosave=True)
    conv.add("User", f"my key is {KEY}")
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    for folder in (target.parent, target.parent.parent):  # every folder made, not only the last
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    saved = target.read_text(encoding="utf-8")
    assert KEY not in saved and "[REDACTED:openai_key]" in saved
    assert conv.conversation_history[-1]["content"] == f"my key is {KEY}"  # memory keeps it
    again = Conversation(save_filepath=target)  # resumes from its save file
    assert [e["content"] for e in again.conversation_history] == [
        "my key is [REDACTED:openai_key]"
    ]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"context_length": 0}, "context_length must be an int >= 1"),
        ({"context_length": "8k"}, "context_length must be an int >= 1"),
        ({"token_counter": 4}, "token_counter must be a callable"),
        ({"tokenizer_model_name": " "}, "tokenizer_model_name must be a model name"),
        ({"autosave": "yes"}, "autosave must be True or False"),
        ({"export_method": "xml"}, "export_method must be 'json' or 'yaml'"),
        ({"save_filepath": "c.json", "export_method": "yaml"}, "does not match export_method"),
    ],
)
def test_bad_reference_keywords_are_one_line_errors(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(InvalidSetting, match=match) as info:
        Conversation(**kwargs)  # type: ignore[arg-type]
    assert "\n" not in str(info.value)


def test_loading_a_bad_save_file_says_what_is_wrong(tmp_path: Path) -> None:
    conv = Conversation()
    (tmp_path / "broken.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(InvalidSetting, match=r"broken\.json is not JSON .*save_as_json"):
        conv.load_from_json(tmp_path / "broken.json")
    (tmp_path / "broken.yaml").write_text("a: [1, 2", encoding="utf-8")
    with pytest.raises(InvalidSetting, match=r"broken\.yaml is not YAML .*save_as_yaml"):
        conv.load_from_yaml(tmp_path / "broken.yaml")
    (tmp_path / "number.json").write_text("42", encoding="utf-8")
    with pytest.raises(InvalidSetting, match="holds no conversation"):
        conv.load_from_json(tmp_path / "number.json")
    with pytest.raises(StoreError, match="does not exist"):
        conv.load_from_json(tmp_path / "missing.json")
    with pytest.raises(InvalidSetting, match=r"\.json, \.yaml or \.yml"):
        conv.load(tmp_path / "notes.txt")
    assert conv.conversation_history == []  # nothing half-loaded
