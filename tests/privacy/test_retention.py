"""Retention: the pure policy (durations, which archives go) and what Conversation does with it:
exactly the configured archives stay, and every deletion is recorded without content; the
workspace-wide ``memorylab purge --older-than ... [--dry-run]``; files stay private under any
umask; the first creation of a memory is disclosed once, in the log."""

from __future__ import annotations

import json
import logging
import os
import stat
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memorylab import Conversation
from memorylab.cli import main
from memorylab.errors import InvalidSetting, StoreError
from memorylab.memory._format import archive_name
from memorylab.memory._paths import agent_paths
from memorylab.memory._retention import (
    RetentionPolicy,
    archive_time,
    format_duration,
    older_than,
    parse_duration,
)
from memorylab.memory._store import MemoryStore

NOW = datetime(2026, 4, 20, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30d", timedelta(days=30)),
        ("12h", timedelta(hours=12)),
        ("90m", timedelta(minutes=90)),
        ("45s", timedelta(seconds=45)),
        ("2w", timedelta(weeks=2)),
        ("1d12h", timedelta(days=1, hours=12)),
        (" 7D ", timedelta(days=7)),
        (timedelta(hours=3), timedelta(hours=3)),
    ],
)
def test_parse_duration(text: str | timedelta, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize("bad", ["", "30", "d", "30 days", "-1d", "0d", "1.5d", timedelta(0)])
def test_bad_durations_are_refused_clearly(bad: str | timedelta) -> None:
    with pytest.raises(InvalidSetting, match="duration"):
        parse_duration(bad)


def test_format_duration() -> None:
    assert [format_duration(parse_duration(t)) for t in ("30d", "36h", "90m", "45s", "2w")] == [
        "30d",
        "36h",
        "90m",
        "45s",
        "14d",
    ]


def test_policy_values_and_validation() -> None:
    policy = RetentionPolicy(max_archives=3, max_age="30d")
    assert policy.max_archives == 3 and policy.max_age == timedelta(days=30)
    assert repr(policy) == "RetentionPolicy(max_archives=3, max_age='30d')"
    assert str(policy) == "max_archives=3, max_age=30d"
    assert RetentionPolicy().keeps_everything and str(RetentionPolicy()) == "keep everything"
    assert RetentionPolicy(max_archives=0).max_archives == 0
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(InvalidSetting, match="max_archives"):
            RetentionPolicy(max_archives=bad)  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        policy.max_archives = 4  # type: ignore[misc]


def _names(*offsets: timedelta) -> list[str]:
    return [archive_name(NOW - offset) for offset in offsets]


def test_select_keeps_the_newest_and_drops_the_old() -> None:
    names = _names(*(timedelta(days=d) for d in (1, 10, 40, 60)))
    names.append("history_2026-04-19_12-00-00_2.md")  # a same-second sibling, newer
    names.append("notes.md")  # not an archive: never selected
    by_count = RetentionPolicy(max_archives=2).select(names, NOW)
    assert [d.name for d in by_count] == [names[3], names[2], names[1]]
    assert all(d.rule == "max_archives" for d in by_count)
    assert "only the newest 2 are kept" in by_count[0].reason
    by_age = RetentionPolicy(max_age="30d").select(names, NOW)
    assert [d.name for d in by_age] == [names[3], names[2]]
    assert by_age[0].reason.startswith("retention max_age=30d: archived 2026-02-19T12:00:00+00:00")
    both = RetentionPolicy(max_archives=4, max_age="30d").select(names, NOW)
    assert [(d.name, d.rule) for d in both] == [(names[3], "max_archives"), (names[2], "max_age")]
    assert RetentionPolicy().select(names, NOW) == []
    naive = RetentionPolicy(max_age="30d").select(names, NOW.replace(tzinfo=None))
    assert naive == by_age  # a naive "now" is UTC, like archive names


def test_archive_time_and_older_than() -> None:
    assert archive_time("history_2026-04-20_12-00-00_3.md") == NOW
    assert archive_time("MEMORY.md") is None
    old = older_than(_names(timedelta(days=2), timedelta(hours=1)), NOW - timedelta(days=1))
    assert [d.created for d in old] == [NOW - timedelta(days=2)]


@given(
    st.lists(st.integers(min_value=0, max_value=10_000), max_size=30, unique=True),
    st.integers(min_value=0, max_value=35),
)
def test_exactly_the_newest_max_archives_stay(minutes: list[int], keep: int) -> None:
    names = _names(*(timedelta(minutes=m) for m in minutes))
    doomed = {d.name for d in RetentionPolicy(max_archives=keep).select(names, NOW)}
    kept = [n for n in names if n not in doomed]
    newest = sorted(names, key=lambda n: archive_time(n) or NOW)[max(0, len(names) - keep) :]
    assert sorted(kept) == sorted(newest)
    assert len(kept) == min(keep, len(names))


# -- with a Conversation ----------------------------------------------------------------------


def _stepping_clock(start: datetime, step: timedelta) -> Callable[[], datetime]:
    moments = iter(start + step * i for i in range(100_000))
    return lambda: next(moments)


def test_conversation_keeps_exactly_max_archives(isolated_workspace: Path) -> None:
    conv = Conversation(
        agent_name="Keeper",
        retention=RetentionPolicy(max_archives=2),
        clock=_stepping_clock(NOW, timedelta(minutes=1)),
    )
    made = []
    for i in range(5):
        conv.add("User", f"secret plan {i}")
        made.append(conv.compact(f"summary {i}").archive)
    paths = agent_paths("Keeper")
    assert [p.name for p in paths.archives()] == made[-2:]
    assert sorted(p.name for p in paths.archive_dir.iterdir()) == made[-2:]
    records = [json.loads(line) for line in paths.compactions.read_text().splitlines()]
    deletions = [r for r in records if r["kind"] == "retention"]
    assert [r["archive"] for r in deletions] == made[:3]
    for record in deletions:
        assert set(record) == {"kind", "archive", "time", "reason", "agent"}
        assert record["agent"] == "Keeper" and "max_archives=2" in record["reason"]
        assert "secret plan" not in json.dumps(record)  # never content
    assert [r["kind"] for r in records].count("compaction") == 5


def test_conversation_max_age_and_no_retention(isolated_workspace: Path) -> None:
    aged = Conversation(
        agent_name="Aged",
        retention=RetentionPolicy(max_age="1h"),
        clock=_stepping_clock(NOW, timedelta(minutes=7)),  # 3 ticks per round: 21 minutes
    )
    names: list[str] = []
    for i in range(6):
        aged.add("User", f"m{i}")
        names.append(str(aged.compact(f"s{i}").archive))
    kept = [p.name for p in agent_paths("Aged").archives()]
    newest = archive_time(names[-1])
    assert newest is not None
    assert kept == [n for n in names if (archive_time(n) or NOW) >= newest - timedelta(hours=1)]
    assert kept == names[-3:]
    keep_all = Conversation(agent_name="All")
    for i in range(3):
        keep_all.add("User", f"m{i}")
        keep_all.compact(f"s{i}")
    assert len(agent_paths("All").archives()) == 3


def test_a_failing_retention_does_not_fail_the_compaction(
    isolated_workspace: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    conv = Conversation(agent_name="Agent", retention=RetentionPolicy(max_archives=0))

    def broken(store: MemoryStore, *args: object, **kwargs: object) -> list[str]:
        raise StoreError("disk on fire")

    monkeypatch.setattr(MemoryStore, "apply_retention", broken)
    conv.add("User", "hello")
    with caplog.at_level(logging.WARNING, logger="memorylab"):
        event = conv.compact("summary")
    assert event.ok and event.archive is not None
    assert "retention (max_archives=0)" in caplog.text and "disk on fire" in caplog.text
    assert len(agent_paths("Agent").archives()) == 1
    assert conv.conversation_history[-1]["kind"] == "summary"


def test_retention_must_be_a_policy(isolated_workspace: Path) -> None:
    with pytest.raises(InvalidSetting, match="RetentionPolicy"):
        Conversation(agent_name="Agent", retention={"max_archives": 2})  # type: ignore[arg-type]


def test_delete_archives_primitive(isolated_workspace: Path) -> None:
    conv = Conversation(agent_name="Agent", clock=_stepping_clock(NOW, timedelta(seconds=1)))
    names = []
    for i in range(2):
        conv.add("User", f"m{i}")
        names.append(str(conv.compact(f"s{i}").archive))
    store = conv.store
    assert store is not None
    with pytest.raises(InvalidSetting, match="not an archive name"):
        store.delete_archives(["../MEMORY.md"], reason="nope")
    with pytest.raises(InvalidSetting):
        store.delete_archives(["MEMORY.md"], reason="nope")
    gone = store.delete_archives(
        [names[0], names[0], "history_2000-01-01_00-00-00.md"], reason="asked", kind="user"
    )
    assert gone == [names[0]]
    assert [p.name for p in agent_paths("Agent").archives()] == [names[1]]
    last = store.records()[-1]
    assert last["kind"] == "user" and last["archive"] == names[0] and last["reason"] == "asked"
    assert conv.memory_md_path is not None and conv.memory_md_path.is_file()


def test_max_age_deletions_are_recorded_without_content(isolated_workspace: Path) -> None:
    conv = Conversation(
        agent_name="Aged",
        retention=RetentionPolicy(max_age="1h"),
        clock=_stepping_clock(NOW, timedelta(minutes=20)),
    )
    made = []
    for i in range(5):
        conv.add("User", f"private detail {i}")
        made.append(str(conv.compact(f"summary of private detail {i}").archive))
    kept = {p.name for p in agent_paths("Aged").archives()}
    records = [
        json.loads(line) for line in agent_paths("Aged").compactions.read_text().splitlines()
    ]
    deletions = [r for r in records if r["kind"] == "retention"]
    assert sorted(r["archive"] for r in deletions) == sorted(set(made) - kept) != []
    for record in deletions:
        assert set(record) == {"kind", "archive", "time", "reason", "agent"}
        assert record["reason"].startswith("retention max_age=1h: archived ")
        assert datetime.fromisoformat(record["time"]).tzinfo is not None
        assert "private detail" not in json.dumps(record)


# -- purge from the command line --------------------------------------------------------------


def _age(folder: Path, days: float) -> None:
    when = time.time() - days * 86_400
    for item in [folder, *folder.rglob("*")]:
        os.utime(item, (when, when), follow_symlinks=False)


def test_cli_purge_dry_run_lists_then_purge_removes(
    isolated_workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    start = datetime.now(UTC) - timedelta(days=60)
    active = Conversation(agent_name="Active", clock=_stepping_clock(start, timedelta(days=1)))
    for i in range(3):  # archives named 60, 59, 58 days ago; MEMORY.md written just now
        active.add("User", f"old secret plan {i}")
        active.compact(f"summary {i}")
    old_archives = [p.name for p in agent_paths("Active").archives()]
    idle = Conversation(agent_name="Idle")
    idle.add("User", "hello")
    _age(agent_paths("Idle").folder, 45)
    recent = Conversation(agent_name="Recent")
    recent.add("User", "hi")
    recent.compact("s")
    before = sorted(p.relative_to(isolated_workspace) for p in isolated_workspace.rglob("*"))

    assert main(["purge", "--older-than", "30d", "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "would remove 4 item(s)"
    assert out[-2].startswith("would keep 2 agent(s) that changed in the last 30d: Active, Recent")
    assert [line.split(":", 1)[0] for line in out[:-2]] == ["Active"] * 3 + ["Idle"]
    assert all(name in "\n".join(out) for name in old_archives)
    assert "Idle: the whole agent" in out[3] and "purge older_than=30d" in out[3]
    assert (
        sorted(p.relative_to(isolated_workspace) for p in isolated_workspace.rglob("*")) == before
    )

    assert main(["purge", "--older-than", "30d", "--yes"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "removed 4 item(s)"
    assert agent_paths("Active").archives() == [] and not agent_paths("Idle").folder.exists()
    assert len(agent_paths("Recent").archives()) == 1
    records = MemoryStore(agent_paths("Active").memory_md).records()
    purged = [r for r in records if r["kind"] == "purge"]
    assert sorted(r["archive"] for r in purged) == sorted(old_archives)
    assert "old secret plan" not in json.dumps(purged)
    assert main(["purge", "--older-than", "30d", "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == ["would remove 0 item(s)"]
    assert main(["purge", "--older-than", "thirty days"]) == 2
    assert "duration" in capsys.readouterr().err


# -- permissions and disclosure -----------------------------------------------------------------


def test_memory_stays_private_under_a_permissive_umask(isolated_workspace: Path) -> None:
    previous = os.umask(0)
    try:
        conv = Conversation(agent_name="Open", retention=RetentionPolicy(max_archives=1))
        for i in range(3):
            conv.add("User", f"m{i}")
            conv.compact(f"s{i}")
    finally:
        os.umask(previous)
    entries = [isolated_workspace, *isolated_workspace.rglob("*")]
    assert {p.name for p in entries} >= {"MEMORY.md", "compactions.jsonl", "archive"}
    for path in entries:
        assert stat.S_IMODE(path.stat().st_mode) == (0o700 if path.is_dir() else 0o600), path


def test_creating_a_memory_is_disclosed_once_in_the_log(
    isolated_workspace: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    def disclosures() -> list[str]:
        return [
            r.getMessage()
            for r in caplog.records
            if r.name.startswith("memorylab") and "storing this conversation" in r.getMessage()
        ]

    with caplog.at_level(logging.INFO, logger="memorylab"):
        first = Conversation(agent_name="Told")
        first.add("User", "hello")
        Conversation(agent_name="Told").add("User", "again")  # the file exists: nothing new
        Conversation(agent_name="Nowhere", memory_md_path=None).add("User", "not stored")
    (message,) = disclosures()
    assert first.memory_md_path is not None and str(first.memory_md_path) in message
    assert "memory_md_path=None" in message and str(first.memory_md_path.parent) in message
    assert capsys.readouterr() == ("", "")  # logged, never printed
    with caplog.at_level(logging.INFO, logger="memorylab"):
        Conversation(agent_name="Other")
    assert len(disclosures()) == 2  # once per memory created


def test_the_0_1_name_forget_warns_and_still_removes(isolated_workspace: Path) -> None:
    conv = Conversation(agent_name="Agent", clock=_stepping_clock(NOW, timedelta(seconds=1)))
    conv.add("User", "m0")
    store = conv.store
    assert store is not None
    with pytest.warns(DeprecationWarning, match=r"MemoryStore\.remove\(\) now"):
        removed = store.forget()
    assert "MEMORY.md" in {name for name, _ in removed}
