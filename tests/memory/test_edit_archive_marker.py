"""An edit's archive says itself that it is one (issue 36): the archive of
``Conversation.update``/``delete``/``clear`` is named ``history_<time>Z[_<n>]_edit.md``, so
messages deleted with ``Conversation.delete`` stay deleted for recall and for the loaders even
when ``compactions.jsonl`` is lost or its edit lines are cut. Archives written before (named by
their records alone), by older memorylab versions and by the reference framework read as they
did."""

from __future__ import annotations

import json
import warnings
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memorylab import Conversation
from memorylab.analysis import memory_df
from memorylab.memory import MemoryDocument, Message, recall, render_memory
from memorylab.memory import _format as fmt
from memorylab.memory._paths import MemoryPaths
from memorylab.memory._records import edit_archives, is_edit_archive
from memorylab.privacy import export_agent, load_export

AGENT = "Editor"
CANARIES = [f"wallaby{chr(ord('a') + i)}{i}secret" for i in range(10)]


def _agent_with_deleted_canaries() -> Conversation:
    """Ten messages holding a canary each, deleted one by one (ten edits, ten archives that
    hold them), around a compaction whose archive holds an ordinary message."""
    conv = Conversation(agent_name=AGENT)
    conv.add("User", "the kiwi harvest is on monday")
    conv.compact("summary of the harvest")
    for word in CANARIES:
        conv.add("User", f"my password is {word}")
    conv.add("User", "lemon tart for dessert")
    for word in CANARIES:
        position = next(
            i for i, e in enumerate(conv.conversation_history) if word in str(e["content"])
        )
        conv.delete(position)
    return conv


def _canaries_in(texts: object) -> list[str]:
    joined = "\n".join(str(t) for t in texts)  # type: ignore[attr-defined]
    return [word for word in CANARIES if word in joined]


def _cut_edit_lines(paths: MemoryPaths) -> None:
    lines = paths.compactions.read_text().splitlines(keepends=True)
    kept = [line for line in lines if json.loads(line).get("kind") != "edit"]
    assert len(kept) < len(lines)
    paths.compactions.write_text("".join(kept))


def test_an_edit_names_its_archive_as_an_edits() -> None:
    conv = _agent_with_deleted_canaries()
    paths = MemoryPaths(conv.memory_md_path)  # type: ignore[arg-type]
    names = [path.name for path in paths.archives()]
    edits = [name for name in names if is_edit_archive(name)]
    assert len(names) == 11 and len(edits) == 10  # the compaction's archive is not one
    assert all(fmt.parse_archive_name(name) is not None for name in edits)
    recorded = {r["archive"] for r in conv.store.records() if r.get("kind") == "edit"}  # type: ignore[union-attr]
    assert recorded == set(edits)
    # Time and number never shared by an edit's and a compaction's archive.
    assert len({fmt.parse_archive_name(name) for name in names}) == len(names)
    # MEMORY.md names the last edit's archive in its lineage line, bytes as before.
    assert fmt.parse_file(conv.memory_md_path.read_bytes()).continues == edits[-1]  # type: ignore[union-attr]


@pytest.mark.parametrize("log", ["lost", "edit lines cut"])
def test_deleted_messages_stay_deleted_without_the_edit_log(
    log: str, isolated_workspace: Path
) -> None:
    conv = _agent_with_deleted_canaries()
    paths = MemoryPaths(conv.memory_md_path)  # type: ignore[arg-type]
    if log == "lost":
        paths.compactions.unlink()
    else:
        _cut_edit_lines(paths)
    found = recall(isolated_workspace, " ".join(CANARIES), agent=AGENT, k=50)
    assert _canaries_in(m.content for m in found) == [], f"{len(found)} deleted messages recalled"
    index = paths.archive_dir / ".recall.sqlite"
    assert index.is_file() and _canaries_in([index.read_bytes()]) == []
    assert [m.content for m in recall(isolated_workspace, "kiwi harvest", agent=AGENT)] == [
        "the kiwi harvest is on monday"
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a lost log is noted; not this test's question
        frame = memory_df(isolated_workspace)
    assert _canaries_in(frame["content"]) == []
    assert "lemon tart for dessert" in set(frame["content"])
    exported = export_agent(AGENT, format="json", path=isolated_workspace.parent / "e.json")
    assert _canaries_in(load_export(exported)["content"]) == []


def test_archives_named_before_the_marker_are_known_by_their_records(
    isolated_workspace: Path,
) -> None:
    """An edit's archive of an earlier version (a plain name, its record of kind ``edit``)
    still reads as an edit's; an archive of the reference framework (local time, no ``Z``) and
    a compaction's of memorylab 0.1 (UTC, no ``Z``) read as archives."""
    folder = isolated_workspace / "agents" / "Old"
    (folder / "archive").mkdir(parents=True)
    when = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)

    def archive(name: str, text: str) -> None:
        document = MemoryDocument("Old_conversation", when, (Message("User", text, when),), 1)
        (folder / "archive" / name).write_text(render_memory(document))

    archive("history_2026-04-01_09-00-00Z.md", "before the edit: platypusword")
    archive("history_2026-04-01_08-00-00.md", "a reference archive: echidnaword")
    archive("history_2026-03-01_08-00-00.md", "a memorylab 0.1 archive: bandicootword")
    (folder / "MEMORY.md").write_text(render_memory(MemoryDocument("Old_conversation", when)))
    record = {"kind": "edit", "archive": "history_2026-04-01_09-00-00Z.md", "time": str(when)}
    (folder / "compactions.jsonl").write_text(json.dumps(record) + "\n")
    assert edit_archives([record], ["history_2026-04-01_08-00-00.md"]) == {record["archive"]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        contents = set(memory_df(folder)["content"])
    assert "a reference archive: echidnaword" in contents
    assert "a memorylab 0.1 archive: bandicootword" in contents
    assert not _canaries_in(contents) and "before the edit: platypusword" not in contents
    found = recall(folder, "platypusword echidnaword bandicootword", k=5)
    assert sorted(m.content.split(":")[0] for m in found) == [
        "a memorylab 0.1 archive",
        "a reference archive",
    ]
