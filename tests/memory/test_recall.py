"""Recall from archives (issue 27): the search, its index beside the archives, how the index
stays up to date (incrementally, from what it recorded), privacy of deletions, concurrency and
crashes, the agent's tool, and bad input."""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from fakes.openai_server import FakeOpenAIServer, ToolCall, ToolCallReply
from memorylab import Conversation
from memorylab.agent import Agent
from memorylab.errors import AgentNotFound, InvalidSetting, StoreError
from memorylab.memory import (
    MemoryDocument,
    MemoryStore,
    Message,
    RecalledMessage,
    RetentionPolicy,
    format_recalled,
    recall,
    recall_context,
    recall_df,
    render_memory,
    update_recall_index,
)
from memorylab.memory import _format as fmt
from memorylab.memory import _recall_index as index
from memorylab.memory._paths import MemoryPaths
from memorylab.privacy import forget, purge
from memorylab.tools import Tool, recall_tool
from memorylab.transcripts import bundled_transcripts, bundled_workspace, load_transcript

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
ROOT = Path(__file__).resolve().parents[2]
SWARMS_PYTHON = os.environ.get("MEMORYLAB_SWARMS_PYTHON")


def write_archive(workspace: Path, agent: str, number: int, messages: list[tuple[str, str]]) -> str:
    """An archive of ``messages`` (role, content) as a compaction writes it; its name."""
    folder = workspace / "agents" / agent / "archive"
    folder.mkdir(parents=True, exist_ok=True)
    start = T0 + timedelta(hours=number)
    blocks = tuple(
        Message(role, text, start + timedelta(minutes=i)) for i, (role, text) in enumerate(messages)
    )
    name = fmt.archive_name(start, 1)
    (folder / name).write_text(
        render_memory(MemoryDocument(f"{agent}_conversation", start, blocks, 1))
    )
    return name


# A hand-made workspace: words whose stems differ (no two merge), one space between them, so a
# message's length in tokens is its number of words.
ARCHIVES = [
    [("User", "kiwi mango lemon"), ("Assistant", "mango mango peach plum"), ("User", "fig grape")],
    [("User", "kiwi lemon cherry melon grape"), ("Assistant", "apple banana")],
    [("User", "mango"), ("Assistant", "cherry fig plum peach apple banana melon lemon"),
     ("Tool", "kiwi kiwi kiwi apple")],
]  # fmt: skip


@pytest.fixture
def workspace(isolated_workspace: Path) -> Path:
    for number, messages in enumerate(ARCHIVES):
        write_archive(isolated_workspace, "Alpha", number, messages)
    memory = isolated_workspace / "agents" / "Alpha" / "MEMORY.md"
    now = MemoryDocument("Alpha_conversation", T0, (Message("User", "kiwi kiwi kiwi", T0),), 1)
    memory.write_text(render_memory(now))  # in the context already: never recalled
    return isolated_workspace


def bm25(query: list[str], messages: list[str]) -> list[float]:
    """BM25 as SQLite's FTS5 computes it (k1 = 1.2, b = 0.75; an IDF at most 0 counts 1e-6)."""
    docs = [m.split() for m in messages]
    n_docs, avgdl = len(docs), sum(map(len, docs)) / len(docs)
    scores = []
    for doc in docs:
        score = 0.0
        for word in query:
            holders = sum(word in d for d in docs)
            idf = math.log((n_docs - holders + 0.5) / (holders + 0.5))
            tf = doc.count(word)
            score += max(idf, 1e-6) * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len(doc) / avgdl))
        scores.append(score)
    return scores


def _locations() -> list[tuple[int, int, str]]:
    return [(a, p, text) for a, msgs in enumerate(ARCHIVES) for p, (_, text) in enumerate(msgs)]


# -- the ranking ---------------------------------------------------------------------------------


def test_ranking_is_bm25_exactly_on_a_hand_made_workspace(workspace: Path) -> None:
    locations = _locations()
    names = sorted(os.listdir(workspace / "agents" / "Alpha" / "archive"))
    for query in (["kiwi"], ["mango", "peach"], ["apple", "fig", "plum"], ["cherry", "banana"]):
        expected = bm25(query, [text for *_, text in locations])
        order = sorted(range(len(locations)), key=lambda i: -expected[i])
        matching = [i for i in order if expected[i] > 0]
        found = recall(workspace, " ".join(query), agent="Alpha", k=len(locations))
        assert [(m.archive, m.position) for m in found] == [
            (names[locations[i][0]], locations[i][1]) for i in matching
        ], query
        assert [m.score for m in found] == pytest.approx([expected[i] for i in matching], abs=1e-9)
    best = recall(workspace, "kiwi", agent="Alpha", k=1)[0]
    assert best == RecalledMessage(
        agent="Alpha", archive=names[2], position=2, role="Tool",
        timestamp=T0 + timedelta(hours=2, minutes=2), content="kiwi kiwi kiwi apple",
        score=best.score,
    )  # fmt: skip


def test_k_bounds_the_results_and_memory_md_is_not_searched(workspace: Path) -> None:
    assert len(recall(workspace, "kiwi", agent="Alpha", k=2)) == 2
    assert len(recall(workspace, "kiwi", agent="Alpha", k=50)) == 3  # three archived holders
    assert recall(workspace, "durian", agent="Alpha") == []


def test_a_word_half_the_messages_hold_weighs_nothing_and_is_left_out(workspace: Path) -> None:
    write_archive(workspace, "Beta", 0, [("User", "common rare"), ("User", "common"),
                                         ("User", "common"), ("User", "other")])  # fmt: skip
    found = recall(workspace, "common rare", agent="Beta", k=4)
    assert [m.content for m in found] == ["common rare"]  # 'common' (3 of 4) has no weight
    only_common = recall(workspace, "common", agent="Beta", k=4)  # nothing else: it is used
    assert [m.content for m in only_common] == ["common", "common", "common rare"]


def test_stop_words_are_left_out_unless_the_query_has_nothing_else(
    isolated_workspace: Path,
) -> None:
    write_archive(isolated_workspace, "A", 0, [
        ("User", "it is what it is"), ("User", "the kiwi"), ("User", "mango and lemon"),
        ("User", "fig"),
    ])  # fmt: skip
    assert recall(None, "What about the kiwi?", agent="A", k=4) == recall(
        None, "kiwi", agent="A", k=4
    )
    assert [m.content for m in recall(None, "what is it", agent="A", k=4)] == ["it is what it is"]


def test_compaction_summaries_are_not_recalled_and_positions_count_them() -> None:
    conv = Conversation(agent_name="Live")
    conv.add("User", "the kiwi crate arrives monday")
    conv.compact("kiwi crate talk")
    conv.add("User", "the mango crate arrives friday")
    second = conv.compact("mango crate talk").archive
    found = recall(conv, "kiwi mango crate talk", k=10)
    assert {m.content for m in found} == {
        "the kiwi crate arrives monday", "the mango crate arrives friday"
    }  # fmt: skip
    mango = next(m for m in found if "mango" in m.content)
    assert (mango.archive, mango.position) == (second, 1)  # 0: the first compaction's summary


def test_words_meet_their_other_forms_case_and_accents_aside(isolated_workspace: Path) -> None:
    write_archive(isolated_workspace, "A", 0, [
        ("User", "We run 12 gunicorn workers per production pod."),
        ("User", "Ask Müller about the café on /etc/nginx/nginx.conf."),
        ("User", "Deployed it yesterday."),
        ("User", "Nothing to see here."),
        ("User", "Unrelated chatter about lunch."),
    ])  # fmt: skip
    assert recall(None, "how many worker per pod?", agent="A", k=1)[0].content.startswith("We run")
    assert "Müller" in recall(None, "MULLER cafe", agent="A", k=1)[0].content
    assert "nginx" in recall(None, "nginx.conf", agent="A", k=1)[0].content
    assert recall(None, "deploying", agent="A", k=1)[0].content == "Deployed it yesterday."


def test_the_planted_facts_of_the_bundled_transcripts_are_recalled(
    isolated_workspace: Path, record_property: Callable[[str, object], None]
) -> None:
    """Each probe question of the bundled transcripts asked of the transcript's archives: the
    message that holds the fact is among the top 5 for 119 of 135 (docs/recall.md; 113 without
    the stop list)."""
    found = asked = 0
    for path in bundled_transcripts():
        transcript = load_transcript(path)
        for number in range(0, len(transcript.messages), 200):
            chunk = transcript.messages[number : number + 200]
            write_archive(isolated_workspace, transcript.name, number // 200,
                          [(m.role, m.content) for m in chunk])  # fmt: skip
        facts = {fact.id: fact.text for fact in transcript.facts}
        for probe in transcript.probes:
            hits = recall(None, probe.question, agent=transcript.name, k=5)
            found += any(facts[probe.fact_id] in hit.content for hit in hits)
            asked += 1
    record_property("summary_line", f"recall: {found} of {asked} planted facts in the top 5")
    assert asked == 135 and found >= 115


# -- the index: beside the archives, incremental, from what it recorded --------------------------


def test_the_index_is_a_private_file_beside_the_archives(workspace: Path) -> None:
    old = os.umask(0)
    try:
        recall(workspace, "kiwi", agent="Alpha")
    finally:
        os.umask(old)
    path = workspace / "agents" / "Alpha" / "archive" / ".recall.sqlite"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    journal = path.with_name(path.name + "-journal")  # TRUNCATE mode: left in place, empty
    assert sorted(p.name for p in path.parent.iterdir() if p.name.startswith(".")) == [
        path.name,
        journal.name,
    ]
    assert stat.S_IMODE(journal.stat().st_mode) == 0o600 and journal.stat().st_size == 0


def test_no_archives_no_index(isolated_workspace: Path) -> None:
    conv = Conversation(agent_name="Fresh")
    conv.add("User", "kiwi")
    assert recall(conv, "kiwi") == []
    assert not (isolated_workspace / "agents" / "Fresh" / "archive").exists()


def test_a_new_archive_is_read_and_the_old_ones_are_not(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed: list[int] = []
    real_parse = fmt.parse

    def counting_parse(text: str, **kwargs: object) -> object:
        parsed.append(len(text))
        return real_parse(text, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(fmt, "parse", counting_parse)
    (first,) = update_recall_index(workspace, agent="Alpha")
    assert len(first.read) == 3 and first.messages == 8 and len(parsed) == 3
    assert update_recall_index(workspace, agent="Alpha")[0].read == ()
    name = write_archive(workspace, "Alpha", 7, [("User", "durian kiwi")])
    parsed.clear()
    assert recall(workspace, "durian", agent="Alpha")[0].archive == name
    assert len(parsed) == 1  # only the new archive was read
    assert update_recall_index(workspace, agent="Alpha")[0].read == ()


def test_a_deleted_archive_leaves_and_a_changed_one_is_read_again(workspace: Path) -> None:
    archive = workspace / "agents" / "Alpha" / "archive"
    names = sorted(p.name for p in archive.glob("history_*"))
    assert len(recall(workspace, "kiwi", agent="Alpha", k=10)) == 3
    os.unlink(archive / names[2])  # by hand: the next recall notices
    assert {m.archive for m in recall(workspace, "kiwi", agent="Alpha", k=10)} == set(names[:2])
    text = (archive / names[0]).read_text().replace("kiwi mango lemon", "durian mango lemon")
    (archive / names[0]).write_text(text)
    (update,) = update_recall_index(workspace, agent="Alpha")
    assert update.read == (names[0],) and update.dropped == (names[0],)
    assert [m.archive for m in recall(workspace, "durian", agent="Alpha")] == [names[0]]
    assert [m.archive for m in recall(workspace, "kiwi", agent="Alpha", k=10)] == [names[1]]


def test_an_uncommitted_archive_is_not_indexed(workspace: Path) -> None:
    folder = workspace / "agents" / "Alpha"
    pending = write_archive(workspace, "Alpha", 9, [("User", "durian")])
    (folder / ".MEMORY.md.intent.json").write_text(json.dumps({"archive": pending}))
    assert recall(workspace, "durian", agent="Alpha") == []
    (folder / ".MEMORY.md.intent.json").unlink()  # as if committed
    assert [m.archive for m in recall(workspace, "durian", agent="Alpha")] == [pending]


def test_a_damaged_index_is_built_again(workspace: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = workspace / "agents" / "Alpha" / "archive" / ".recall.sqlite"
    path.write_bytes(b"this is not a database at all" * 100)
    with caplog.at_level(logging.WARNING, logger="memorylab"):
        assert len(recall(workspace, "kiwi", agent="Alpha", k=10)) == 3
    assert "not a recall index" in caplog.text


# -- compactions keep it up to date --------------------------------------------------------------


def _index_names(paths: MemoryPaths) -> list[str]:
    with sqlite3.connect(index.index_path(paths)) as con:
        return sorted(name for (name,) in con.execute("SELECT name FROM recall_archives"))


def test_a_compaction_adds_its_archive_to_an_existing_index() -> None:
    conv = Conversation(agent_name="Live")
    conv.add("User", "the vault path is /srv/vault")
    conv.compact("first summary")
    paths = MemoryPaths(conv.memory_md_path)  # type: ignore[arg-type]
    assert not index.index_path(paths).exists()  # never recalled: no index is made
    assert recall(conv, "vault")[0].content == "the vault path is /srv/vault"
    conv.add("User", "the backup host is tern-04")
    conv.compact("second summary")
    assert len(_index_names(paths)) == 2  # the compaction indexed its archive
    assert update_recall_index(conv)[0].read == ()
    assert recall(conv, "backup host")[0].content == "the backup host is tern-04"


def test_what_an_edit_changed_or_removed_is_not_recalled() -> None:
    conv = Conversation(agent_name="Edited")
    conv.add("User", "the kiwi crate arrives monday")
    conv.compact("kiwi talk")
    recall(conv, "kiwi")  # the index exists: the edits' rewrites reach its hook
    conv.add("User", "the mango crate arrives fridya")
    conv.add("User", "my pin is quokka-4417, forget it")
    conv.update(len(conv) - 2, "User", "the mango crate arrives friday")
    conv.delete(len(conv) - 1)
    assert recall(conv, "fridya") == [] and recall(conv, "quokka pin") == []
    conv.compact("mango talk")  # now the corrected message leaves the context
    assert [m.content for m in recall(conv, "mango")] == ["the mango crate arrives friday"]
    assert recall(conv, "fridya quokka pin") == []


def test_an_index_error_never_fails_a_compaction(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    conv = Conversation(agent_name="Live")
    conv.add("User", "the vault path is /srv/vault")
    conv.compact("first summary")
    recall(conv, "vault")

    def broken(*args: object, **kwargs: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(index, "update", broken)
    conv.add("User", "the backup host is tern-04")
    with caplog.at_level(logging.WARNING, logger="memorylab"):
        event = conv.compact("second summary")
    assert event.archive is not None and "was not updated after a compaction" in caplog.text
    monkeypatch.undo()
    assert recall(conv, "backup host")[0].archive == event.archive  # the next recall catches up


# -- privacy -------------------------------------------------------------------------------------

SECRET_WORD = "quokkaphrase7731"


def _agent_with_secret() -> tuple[Conversation, MemoryStore, list[str]]:
    """Three archives, the first holding SECRET_WORD; the index built."""
    conv = Conversation(agent_name="Private")
    names = []
    for i, text in enumerate([f"my passphrase is {SECRET_WORD}", "lunch at noon", "tea at four"]):
        conv.add("User", text)
        names.append(conv.compact(f"summary {i}").archive)
    assert recall(conv, SECRET_WORD)[0].content.endswith(SECRET_WORD)
    store = MemoryStore(conv.memory_md_path)  # type: ignore[arg-type]
    return conv, store, names  # type: ignore[return-value]


def _bytes_of_index(paths: MemoryPaths) -> bytes:
    folder = paths.archive_dir
    return (
        b"".join(p.read_bytes() for p in folder.glob(".recall.sqlite*")) if folder.is_dir() else b""
    )


def test_deletions_through_memorylab_leave_no_trace_in_the_index() -> None:
    for how in ("delete_archives", "apply_retention"):
        conv, store, names = _agent_with_secret()
        if how == "delete_archives":
            assert store.delete_archives([names[0]], reason="test") == [names[0]]
        else:
            assert store.apply_retention(RetentionPolicy(max_archives=2)) == [names[0]]
        data = _bytes_of_index(store.paths)
        assert data and SECRET_WORD.encode() not in data and b"quokka" not in data, how
        assert recall(conv, SECRET_WORD) == []
        assert {m.content for m in recall(conv, "lunch tea", k=5)} == {
            "lunch at noon",
            "tea at four",
        }
        store.remove(whole_folder=True)


def test_purge_of_old_archives_leaves_no_trace_in_the_index(isolated_workspace: Path) -> None:
    conv = Conversation(agent_name="Private")
    old = datetime(2020, 1, 1, tzinfo=UTC)
    conv._now = lambda: old  # type: ignore[method-assign]  # an archive named in 2020
    conv.add("User", f"my passphrase is {SECRET_WORD}")
    first = conv.compact("old summary").archive
    conv._now = lambda: datetime.now(UTC)  # type: ignore[method-assign]
    conv.add("User", "lunch at noon")
    conv.compact("new summary")
    assert len(recall(conv, f"{SECRET_WORD} lunch")) == 2
    items = purge(older_than="30d")
    assert [(i.kind, i.path.name) for i in items] == [("archive", first)]
    paths = MemoryPaths(conv.memory_md_path)  # type: ignore[arg-type]
    assert SECRET_WORD.encode() not in _bytes_of_index(paths)
    assert [m.content for m in recall(conv, f"{SECRET_WORD} lunch")] == ["lunch at noon"]


def test_forget_and_remove_take_the_index_with_them(isolated_workspace: Path) -> None:
    _, store, _ = _agent_with_secret()
    forget("Private")
    assert not store.paths.folder.exists()
    _, store2, _ = _agent_with_secret()
    removed = store2.remove(whole_folder=False)  # only this memory file's own files
    assert ".recall.sqlite" in {Path(name).name for name, _ in removed}
    assert not store2.paths.archive_dir.exists()


def test_an_idle_agent_with_a_fresh_index_is_still_purged(isolated_workspace: Path) -> None:
    conv = Conversation(agent_name="Idle")
    conv.add("User", "kiwi")
    conv.compact("summary")
    old = time.time() - 90 * 86400
    for path in (isolated_workspace / "agents" / "Idle").rglob("*"):
        os.utime(path, (old, old), follow_symlinks=False)
    recall(conv, "kiwi")  # writes the index now
    assert [i.kind for i in purge(older_than="30d")] == ["agent"]


def test_archives_and_so_the_index_hold_redacted_text() -> None:
    key = "AKIAIOSFODNN7EXAMPLE"[:4] + "Z7QK3M5RT2WX9PLB"  # an AWS access key id's shape
    conv = Conversation(agent_name="Keys")
    conv.add("User", f"the deploy key is {key} for the kiwi bucket")
    conv.compact("summary")
    (found,) = recall(conv, "deploy key kiwi bucket")
    assert key not in found.content and "[REDACTED" in found.content
    assert key.encode() not in _bytes_of_index(MemoryPaths(conv.memory_md_path))  # type: ignore[arg-type]


# -- several processes, and a kill ---------------------------------------------------------------

_RECALLER = """
import json, sys
from memorylab.memory import recall
workspace, queries = sys.argv[1], json.loads(sys.argv[2])
print(json.dumps([[(m.archive, m.position, round(m.score, 9)) for m in recall(workspace, q, agent="Many", k=5)]
                  for q in queries]))
"""


def _many(workspace: Path, archives: int, per: int = 20, start: int = 0) -> None:
    for a in range(start, start + archives):
        write_archive(workspace, "Many", a, [
            ("User", f"message {a}-{i} about topic{(a * per + i) % 37} and item{(a + i) % 11} "
                     f"with words w{(a * i) % 53} w{(a + 3 * i) % 29}")
            for i in range(per)
        ])  # fmt: skip


def test_processes_recalling_and_updating_at_once_agree(isolated_workspace: Path) -> None:
    _many(isolated_workspace, 60)
    queries = ["topic3 item4", "w17 w5", "message 12-3", "topic36"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "toolkit")}
    args = [sys.executable, "-c", _RECALLER, str(isolated_workspace), json.dumps(queries)]
    runs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env) for _ in range(4)]  # fmt: skip
    outputs = [run.communicate(timeout=120) for run in runs]
    assert all(run.returncode == 0 for run in runs), [err for _, err in outputs]
    results = [json.loads(out) for out, _ in outputs]
    expected = [[(m.archive, m.position, round(m.score, 9)) for m in recall(
        isolated_workspace, q, agent="Many", k=5)] for q in queries]  # fmt: skip
    assert all(r == json.loads(json.dumps(expected)) for r in results)
    # Recallers while archives come and go: no errors, and the index ends up as a fresh one.
    runs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env) for _ in range(3)]  # fmt: skip
    _many(isolated_workspace, 20, start=60)
    store = MemoryStore.for_agent("Many")
    store.delete_archives(sorted(p.name for p in store.paths.archives())[:5], reason="test")
    outputs = [run.communicate(timeout=120) for run in runs]
    assert all(run.returncode == 0 for run in runs), [err for _, err in outputs]
    fresh = isolated_workspace.parent / "fresh"
    shutil.copytree(isolated_workspace, fresh, ignore=shutil.ignore_patterns(".recall.sqlite*"))
    for q in queries:
        assert recall(isolated_workspace, q, agent="Many") == recall(fresh, q, agent="Many")


# The build stopped inside its transaction, deterministically: after the tenth archive it adds,
# it says so on stdout and waits to be killed (a fault injected into the one per-archive step).
_STOPPED_BUILDER = """
import importlib, sys, time
index = importlib.import_module("memorylab.memory._recall_index")
add, added = index._add_archive, []
def add_then_stop(*args, **kwargs):
    result = add(*args, **kwargs)
    added.append(1)
    if len(added) == 10:
        print("inside the transaction", flush=True)
        time.sleep(3600)
    return result
index._add_archive = add_then_stop
from memorylab.memory import update_recall_index
update_recall_index(sys.argv[1], agent="Many")
"""


def test_a_kill_during_an_update_leaves_a_usable_index(isolated_workspace: Path) -> None:
    _many(isolated_workspace, 400, per=40)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "toolkit")}
    child = subprocess.Popen([sys.executable, "-c", _STOPPED_BUILDER, str(isolated_workspace)],
                             env=env, stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert child.stdout is not None
    assert child.stdout.readline() == "inside the transaction\n"  # no race with the kill
    child.send_signal(signal.SIGKILL)
    assert child.wait(timeout=300) == -signal.SIGKILL
    child.stdout.close()
    (update,) = update_recall_index(isolated_workspace, agent="Many")  # rolled back: all again
    assert len(update.read) == 400 and update.messages == 16_000
    fresh = isolated_workspace.parent / "fresh"
    shutil.copytree(isolated_workspace, fresh, ignore=shutil.ignore_patterns(".recall.sqlite*"))
    for q in ("topic3 item4", "w17 w5", "message 12-3"):
        assert recall(isolated_workspace, q, agent="Many") == recall(fresh, q, agent="Many")


# -- real workspaces -----------------------------------------------------------------------------


def test_the_bundled_workspaces_are_searchable(isolated_workspace: Path) -> None:
    for kind, query, word in (("memorylab", "no note named deadlines", "deadlines"),
                              ("reference", "P/E ratio of AMD", "AMD")):  # fmt: skip
        copy = isolated_workspace.parent / kind
        shutil.copytree(bundled_workspace(kind), copy)  # type: ignore[arg-type]
        found = recall(copy, query, k=3)
        assert len(found) == 3 and all(m.score > 0 for m in found), kind
        assert word.casefold() in found[0].content.casefold()
        assert {m.agent for m in found} <= {p.name for p in (copy / "agents").iterdir()}


@pytest.mark.skipif(not SWARMS_PYTHON, reason="set MEMORYLAB_SWARMS_PYTHON to a Python with "
                    "swarms==16.0.3 (.ci/run does)")  # fmt: skip
def test_a_workspace_the_reference_wrote_is_searchable(isolated_workspace: Path) -> None:
    script = textwrap.dedent("""
        import time
        from swarms import Agent
        agent = Agent(agent_name="QuantAgent", model_name="gpt-4o-mini", max_loops=1,
                      print_on=False, persistent_memory=True)
        agent.short_memory.add("user", "The risk desk wants the VaR report by Friday.")
        agent.short_memory.add("QuantAgent", "Noted: VaR at 99 percent, ten-day horizon.")
        agent.short_memory.compact("summary one")
        time.sleep(1.1)  # the reference names archives by the second: one per second
        agent.short_memory.add("user", "Switch the backtest to the 2019-2023 window.")
        agent.short_memory.compact("summary two")
    """)
    env = {**os.environ, "WORKSPACE_DIR": str(isolated_workspace), "SWARMS_TELEMETRY_ON": "false",
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_OFFLINE_MODE": "true"}  # fmt: skip
    done = subprocess.run([SWARMS_PYTHON, "-c", script], cwd=isolated_workspace.parent,  # type: ignore[list-item]
                          env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    found = recall(None, "VaR horizon", agent="QuantAgent", k=2)
    assert found[0].content == "Noted: VaR at 99 percent, ten-day horizon."
    assert found[0].role == "QuantAgent" and found[0].timestamp.tzinfo is None  # naive: as written
    assert recall(None, "backtest window", agent="QuantAgent")[0].content.startswith("Switch")


# -- the agent's tool, the reader's text, the DataFrame ------------------------------------------


def test_the_tool_schema_and_answers(workspace: Path) -> None:
    tool = Tool.from_function(recall_tool(workspace, agent="Alpha", k=2))
    assert tool.schema() == {
        "type": "function",
        "function": {
            "name": "recall",
            "description": "Search your archived messages: what earlier compactions summarized "
            "away, word for word. Returns the best matches, most relevant first, each with its "
            "timestamp, role and the archive that holds it.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string", "description": "the words to look "
                               "for: a name, a path, a number, a command or a question"}},
                "required": ["query"],
            },
        },
    }  # fmt: skip
    names = sorted(os.listdir(workspace / "agents" / "Alpha" / "archive"))
    answer = tool.call('{"query": "kiwi"}')
    assert answer.startswith("[Recalled from archives] 2 archived message(s)")
    assert "[2026-05-01T11:02:00.000000+00:00] Tool: kiwi kiwi kiwi apple" in answer
    assert f"(from {names[2]}, message 2)" in answer
    assert tool.call({"query": "durian"}) == "No archived message matches 'durian'."
    assert tool.call({"query": "***"}).startswith("Error: recall failed: InvalidSetting: query")


def test_an_agent_calls_the_tool_of_its_own_name() -> None:
    conv = Conversation(agent_name="Tester")
    conv.add("User", "the vault path is /srv/vault-7")
    conv.compact("we talked about storage")
    del conv
    script = [ToolCallReply([ToolCall("recall", {"query": "vault path"}, id="c1")]), "/srv/vault-7"]
    with FakeOpenAIServer(script) as server:
        agent = Agent(agent_name="Tester", model_name="openai/fake-model", context_length=100_000,
                      llm_args={"api_base": server.base_url, "api_key": "x"}, retries=0,
                      timeout=10, tools=[recall_tool(agent="Tester")])  # fmt: skip
        assert agent.run("Where is the vault?") == "/srv/vault-7"
        second = server.requests[1]
    (result,) = [m for m in second["messages"] if m["role"] == "tool"]
    assert "User: the vault path is /srv/vault-7" in result["content"]
    assert recall_tool(agent)  # an Agent itself is a source (its short_memory)
    assert "vault-7" in Tool.from_function(recall_tool(agent)).call({"query": "vault"})


def test_the_readers_text_and_the_frame(workspace: Path) -> None:
    text = recall_context(workspace, "What about peach and plum?", agent="Alpha", k=2)
    found = recall(workspace, "What about peach and plum?", agent="Alpha", k=2)
    assert text == format_recalled(found)
    assert (
        text.splitlines()[0]
        == "[Recalled from archives] 2 archived message(s), most relevant first:"
    )
    assert found[0].text() in text and found[1].text() in text
    assert recall_context(workspace, "durian", agent="Alpha") == ""
    frame = recall_df(workspace, "kiwi", agent="Alpha")
    assert list(frame.columns) == ["agent", "archive", "position", "role", "timestamp", "content",
                                   "score"]  # fmt: skip
    assert len(frame) == 3 and frame["score"].is_monotonic_decreasing
    assert recall_df(workspace, "durian", agent="Alpha").empty


def test_a_workspace_of_several_agents_nested_ones_too(workspace: Path) -> None:
    write_archive(workspace, "team/beta", 0, [("User", "kiwi kiwi kiwi kiwi kiwi kiwi"),
                                              ("User", "fig"), ("User", "plum")])  # fmt: skip
    found = recall(workspace, "kiwi", k=10)
    assert {m.agent for m in found} == {"Alpha", "team/beta"}
    assert [m.score for m in found] == sorted((m.score for m in found), reverse=True)
    assert {m.agent for m in recall(workspace, "kiwi", agent="team/beta", k=10)} == {"team/beta"}
    assert "team/beta/archive/history_" in format_recalled(found)


# -- bad input -----------------------------------------------------------------------------------


def test_bad_input_gets_a_clear_error(workspace: Path, tmp_path: Path) -> None:
    with pytest.raises(AgentNotFound, match=r"no memory for agent 'Nobody'.*agents there: Alpha"):
        recall(workspace, "kiwi", agent="Nobody")
    a_file = tmp_path / "notes.txt"
    a_file.write_text("hi")
    with pytest.raises(StoreError, match="is a file, not a workspace"):
        recall(a_file, "kiwi")
    with pytest.raises(StoreError, match="does not exist"):
        recall(tmp_path / "missing", "kiwi")
    with pytest.raises(StoreError, match="not a workspace"):
        recall(tmp_path / "cwd", "kiwi")
    for k in (0, -1, True, 2.5):
        with pytest.raises(InvalidSetting, match="k must be an int >= 1"):
            recall(workspace, "kiwi", agent="Alpha", k=k)  # type: ignore[arg-type]
    with pytest.raises(InvalidSetting, match="query must be a string"):
        recall(workspace, None, agent="Alpha")  # type: ignore[arg-type]
    for blank in ("", "   ", "?!", "*", '"', "()"):
        with pytest.raises(InvalidSetting, match="has no words to search for"):
            recall(workspace, blank, agent="Alpha")
    with pytest.raises(InvalidSetting, match="keeps no memory on disk"):
        recall(Conversation(agent_name="Off", memory_md_path=None), "kiwi")
    with pytest.raises(InvalidSetting, match="source must be"):
        recall(42, "kiwi")  # type: ignore[arg-type]
    with pytest.raises(InvalidSetting, match="k must be"):
        recall_tool(workspace, k=0)


@pytest.mark.parametrize("query", [
    "a OR", '"', "NEAR(", "*", "kiwi OR", 'kiwi" OR "mango', "kiwi AND NOT mango", "kiwi*",
    "content: kiwi", "{content}: kiwi", "^kiwi", "kiwi NEAR/2 mango", "(kiwi", "kiwi)",
    "'; DROP TABLE recall_messages; --", "kiwi - mango + lemon", "rank:bm25",
])  # fmt: skip
def test_query_syntax_is_only_words(workspace: Path, query: str) -> None:
    words = " ".join(w for _, w in index.query_terms(query))
    if not words:
        with pytest.raises(InvalidSetting, match="has no words"):
            recall(workspace, query, agent="Alpha")
        return
    assert recall(workspace, query, agent="Alpha", k=10) == recall(
        workspace, words, agent="Alpha", k=10
    )
    assert len(recall(workspace, "kiwi", agent="Alpha", k=10)) == 3  # the table is still there


def test_a_history_in_memory_is_ranked_as_an_index_ranks_it() -> None:
    """recall_messages (an evaluation's history, not on disk) ranks by the same rule: the
    message holding the rare words first, stop words ignored, positions in the list."""
    from memorylab.memory import recall_messages

    history = [
        {
            "role": "User",
            "content": "the deploy is blocked",
            "timestamp": "2026-01-01T10:00:00+00:00",
        },
        {"role": "Assistant", "content": "the nginx worker crashed at 3 am", "timestamp": None},
        {"role": "User", "content": "what about the database?"},
        {"role": "Assistant", "content": "the database is fine"},
    ]
    found = recall_messages(history, "Why did the nginx worker crash?", k=2)
    assert [m.position for m in found] == [1]  # "why", "did", "the" carry no weight here
    assert found[0].archive == "history" and found[0].timestamp.year == 1970
    assert [m.position for m in recall_messages(history, "database", k=5)] == [2, 3] or [
        m.position for m in recall_messages(history, "database", k=5)
    ] == [3, 2]
    with pytest.raises(InvalidSetting):
        recall_messages(history, "?!", k=2)


def test_several_questions_of_one_history_are_each_answered_as_alone() -> None:
    from memorylab.memory import recall_messages

    history = [
        {"role": "User", "content": "the nginx worker crashed at 3 am"},
        {"role": "User", "content": "the database is fine"},
        {"role": "User", "content": "deploy the canary tomorrow"},
    ]
    questions = ["why did nginx crash?", "when is the canary deploy?"]
    assert recall_messages(history, questions, k=2) == [
        recall_messages(history, question, k=2) for question in questions
    ]
