"""memory_df / compactions_df on memorylab's own workspaces and on reference-format files."""

from __future__ import annotations

import json
import os
import shutil
import time
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pandas as pd
import pytest
from analysis_support import START, Built, Clock, block, build_own, reference_file

from memorylab import Conversation, read_memory
from memorylab.analysis import _sources as sources
from memorylab.analysis import (
    compactions_df,
    documents_df,
    memory_df,
    memory_df_with_problems,
    problems_df,
)
from memorylab.analysis._frames import (
    COMPACTION_COLUMNS,
    DTYPES,
    MEMORY_COLUMNS,
    ON_BAD,
    PROBLEM_COLUMNS,
    ReadResult,
    build_frame,
    columns,
)
from memorylab.compress._tokens import get_token_counter
from memorylab.errors import InvalidSetting, MemoryFormatError, MemoryReadWarning, StoreError
from memorylab.memory import REPLY_TOKENS


def _pairs(frame: pd.DataFrame) -> list[tuple[str, str]]:
    return list(zip(frame["role"].astype(str), frame["content"], strict=True))


# --------------------------------------------------------------------------- own workspaces


def test_rows_and_order_follow_the_timeline(own_workspace: Built) -> None:
    df = memory_df(own_workspace.root)
    assert list(df.columns) == [name for name, _ in MEMORY_COLUMNS]
    assert len(df) == sum(len(m) for m in own_workspace.messages.values())
    for agent, expected in own_workspace.messages.items():
        rows = df[df["agent"] == agent]
        assert _pairs(rows) == expected
        assert rows["timeline"].tolist() == list(range(len(expected)))
        assert rows["timestamp"].is_monotonic_increasing
        compactions = own_workspace.compactions[agent]
        assert rows["segment"].max() == compactions
        assert rows["segment"].is_monotonic_increasing
        assert set(rows[rows["segment"] == compactions]["kind"]) == {"memory"}
        assert set(rows[rows["segment"] < compactions]["kind"]) <= {"archive"}
        assert int(rows["is_summary"].sum()) == compactions
        for _, part in rows.groupby("segment", observed=True):
            assert part["position"].tolist() == list(range(len(part)))
            assert part["file"].nunique() == 1
            if part["segment"].iloc[0] > 0:
                assert bool(part["is_summary"].iloc[0])  # every later segment starts with one


def _assert_declared(frame: pd.DataFrame, declared: tuple[tuple[str, str], ...]) -> None:
    assert [name for name, _ in declared] == list(frame.columns)
    for name, dtype in declared:
        assert frame[name].dtype == dtype, (name, frame[name].dtype, dtype)
        assert DTYPES[name] == dtype  # one dtype per column name, whatever the frame


def test_every_frame_has_the_declared_dtypes(
    own_workspace: Built, reference_workspace: Built, tmp_path: Path
) -> None:
    (tmp_path / "empty" / "agents").mkdir(parents=True)
    for root in (own_workspace.root, reference_workspace.root, tmp_path / "empty"):
        read = memory_df_with_problems(root)
        frame, problems = read.frame, read.problems
        _assert_declared(frame, MEMORY_COLUMNS)
        _assert_declared(problems, PROBLEM_COLUMNS)
        _assert_declared(memory_df(root, model="gpt-4o"), (*MEMORY_COLUMNS, ("tokens", "Int64")))
        _assert_declared(compactions_df(root), COMPACTION_COLUMNS)
        _assert_declared(compactions_df(root, model="gpt-4o"), COMPACTION_COLUMNS)


def test_dtypes(own_workspace: Built) -> None:
    df = memory_df(own_workspace.root)
    assert isinstance(df["role"].dtype, pd.CategoricalDtype)
    assert str(df["timestamp"].dtype) == "datetime64[us, UTC]"
    for column in ("segment", "position", "timeline", "chars"):
        assert df[column].dtype == "Int64", column
    for column in ("naive_timestamp", "is_summary"):
        assert df[column].dtype == bool, column
    assert pd.api.types.is_string_dtype(df["content"])
    assert set(df["kind"].astype(str)) == {"archive", "memory"}
    assert list(df["file"].cat.categories) == list(dict.fromkeys(df["file"].astype(str)))
    assert not df["naive_timestamp"].any()
    assert (df["chars"] == df["content"].str.len()).all()


def test_build_frame_takes_exactly_the_declared_columns() -> None:
    declared = columns("agent", "line")
    frame = build_frame(
        declared, {"agent": pd.Series(["b", "a", "b"], index=[7, 8, 9]), "line": [1, None, 3]}
    )
    assert frame["agent"].tolist() == ["b", "a", "b"]  # by position, not by the Series' index
    assert list(frame["agent"].cat.categories) == ["b", "a"]  # in order of appearance
    assert frame["line"].isna().tolist() == [False, True, False]
    with pytest.raises(ValueError, match="declared"):
        build_frame(declared, {"agent": ["a"]})


def test_timestamps_are_the_ones_written(own_workspace: Built) -> None:
    df = memory_df(own_workspace.root / "agents" / "gamma")
    expected = [START + timedelta(seconds=2 + i) for i in range(len(df))]  # 1 s per clock call
    assert df["timestamp"].tolist() == [pd.Timestamp(t) for t in expected]


def test_each_file_matches_read_memory(own_workspace: Built) -> None:
    df = memory_df(own_workspace.root)
    for file, part in df.groupby("file", observed=True):
        doc = read_memory(str(file))
        assert _pairs(part) == [(m.role, m.content) for m in doc.messages]
        assert part["timestamp"].tolist() == [pd.Timestamp(m.timestamp) for m in doc.messages]


def test_tool_and_json_content(own_workspace: Built) -> None:
    df = memory_df(own_workspace.root / "agents" / "alpha")
    tools = df[df["role"] == "tool"]
    assert len(tools) == 16
    assert json.loads(tools["content"].iloc[0]) == {"rows": 0, "path": "/data/run_0.csv"}
    assert (
        "### Forged — 2020-01-01T00:00:00" in df["content"].iloc[1]
    )  # escaped on disk, exact here


@pytest.mark.parametrize("model", ["gpt-4o", None])
def test_tokens_column(own_workspace: Built, model: str | None) -> None:
    df = memory_df(own_workspace.root, model=model or "gpt-4")
    counter = get_token_counter(model or "gpt-4")
    assert df["tokens"].dtype == "Int64"
    assert df["tokens"].tolist() == [counter.count(c) for c in df["content"]]
    assert "tokens" not in memory_df(own_workspace.root).columns


def test_sources(own_workspace: Built) -> None:
    root = own_workspace.root
    alpha = root / "agents" / "alpha"
    whole = memory_df(root)
    assert len(memory_df(root / "agents")) == len(whole)
    assert _pairs(memory_df(alpha)) == own_workspace.messages["alpha"]
    live = memory_df(alpha / "MEMORY.md")
    assert set(live["kind"].astype(str)) == {"memory"} and live["segment"].eq(0).all()
    first_archive = sorted((alpha / "archive").iterdir())[0]
    one = memory_df(first_archive)
    assert set(one["kind"].astype(str)) == {"archive"} and len(one) == 12
    assert one["agent"].astype(str).unique().tolist() == ["alpha"]
    assert one["workspace"].astype(str).unique().tolist() == [str(root)]
    # a list naming the same agent twice, and files of one agent, merge into one timeline
    merged = memory_df([alpha / "MEMORY.md", first_archive, alpha])
    assert _pairs(merged) == own_workspace.messages["alpha"]
    pair = memory_df([alpha / "MEMORY.md", first_archive])
    assert pair["segment"].max() == 1 and pair["kind"].astype(str).iloc[0] == "archive"


def test_several_workspaces(own_workspace: Built, reference_workspace: Built) -> None:
    df = memory_df([own_workspace.root, reference_workspace.root])
    assert df["workspace"].astype(str).unique().tolist() == [
        str(own_workspace.root),
        str(reference_workspace.root),
    ]
    assert df.groupby("agent", observed=True)["timeline"].min().eq(0).all()


DOCS = Path(__file__).parents[2] / "docs" / "analysis.md"


def _documented_dtypes(heading: str) -> dict[str, str]:
    """``{column: dtype}`` of the first ``| column | dtype | meaning |`` table after ``heading``
    in docs/analysis.md (a row may name several columns)."""
    text = DOCS.read_text(encoding="utf-8")
    section = text[text.index(heading) :]
    table = section[section.index("| column | dtype | meaning |") :].split("\n\n")[0]
    documented: dict[str, str] = {}
    for row in table.splitlines()[2:]:
        names, dtype = row.split(" | ")[:2]
        for name in names.strip("| ").split(", "):
            documented[name.strip("`")] = dtype.strip("`")
    return documented


def _dtype(series: pd.Series) -> str:
    return "category" if isinstance(series.dtype, pd.CategoricalDtype) else str(series.dtype)


def test_the_docs_tables_give_every_column_its_dtype(
    own_workspace: Built, reference_workspace: Built, tmp_path: Path
) -> None:
    """Issue 28: the dtype of every column docs/analysis.md documents, in every frame."""
    messages = _documented_dtypes("## `memory_df`: one row per message")
    compactions = _documented_dtypes("## `compactions_df`: one row per compaction")
    assert messages == dict((*MEMORY_COLUMNS, ("tokens", "Int64")))
    assert compactions == dict(COMPACTION_COLUMNS)
    assert compactions["threshold"] == "float64"
    _torn_archive_workspace(tmp_path / "torn")
    roots = (own_workspace.root, reference_workspace.root, tmp_path / "torn")
    for root in roots:
        for frame in (
            memory_df(root, model="gpt-4o", on_bad="skip"),
            memory_df(root, on_bad="skip"),
        ):
            assert {name: _dtype(frame[name]) for name in frame} == {
                name: messages[name] for name in frame
            }
        frame = compactions_df(root, model="gpt-4o")
        assert {name: _dtype(frame[name]) for name in frame} == compactions, root


def test_compactions_threshold_is_a_float_fraction(tmp_path: Path) -> None:
    """``threshold`` is float64: the fraction a record holds (a trigger's fraction condition),
    NaN for a token-count threshold (an int in the record) or a trigger without a fraction."""
    from memorylab.compress._compressor import ContextCompressor
    from memorylab.compress._policy import Trigger
    from memorylab.compress._scripted import ScriptedSummarizer

    counter = get_token_counter("gpt-4o")
    for name, threshold in (
        ("fraction", 0.5),
        ("count", 100),
        ("both", Trigger(fraction=0.5, messages=6)),
        ("messages", Trigger(messages=6)),
    ):
        conv = Conversation(agent_name=name, workspace_dir=tmp_path, token_counter=counter)
        compressor = ContextCompressor(threshold, summarizer=ScriptedSummarizer(["short"]))
        for i in range(30):
            conv.add("User", f"message number {i} with a few more words in it")
            compressor.compress(conv, 200)
        assert compressor.events
    frame = compactions_df(tmp_path)
    assert frame["threshold"].dtype == "float64"
    by_agent = {str(a): part["threshold"] for a, part in frame.groupby("agent", observed=True)}
    assert (by_agent["fraction"] == 0.5).all() and (by_agent["both"] == 0.5).all()
    assert by_agent["count"].isna().all() and by_agent["messages"].isna().all()


def test_bad_sources(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="does not exist"):
        memory_df(tmp_path / "nowhere")
    (tmp_path / "plain").mkdir()
    with pytest.raises(InvalidSetting, match=r"none of the formats registered \(memorylab, "):
        memory_df(tmp_path / "plain")  # not a workspace, nor any other format
    with pytest.raises(InvalidSetting, match="source must be a path"):
        memory_df(42)  # type: ignore[arg-type]


def test_empty_workspace_has_the_columns(tmp_path: Path) -> None:
    (tmp_path / "ws" / "agents").mkdir(parents=True)
    df = memory_df(tmp_path / "ws")
    assert list(df.columns) == [name for name, _ in MEMORY_COLUMNS] and len(df) == 0
    assert isinstance(df["timestamp"].dtype, pd.DatetimeTZDtype)
    read = memory_df_with_problems(tmp_path / "ws")
    problems = read.problems
    assert list(problems.columns) == [name for name, _ in PROBLEM_COLUMNS] and len(problems) == 0


def test_lineage_beats_archive_names(tmp_path: Path) -> None:
    """The clock jumps back an hour before the second compaction: the names sort the wrong
    way round, the Continues lines do not."""
    clock = Clock(datetime(2026, 4, 20, 12, 0, tzinfo=UTC))
    conv = Conversation(agent_name="a", workspace_dir=tmp_path, clock=clock, preload=False)
    conv.add("User", "one")
    conv.compact("first")
    clock.now -= timedelta(hours=1)
    conv.add("User", "two")
    conv.compact("second")
    conv.add("User", "three")
    names = sorted(p.name for p in (tmp_path / "agents" / "a" / "archive").iterdir())
    assert names == ["history_2026-04-20_11-00-07Z.md", "history_2026-04-20_12-00-04Z.md"]
    df = memory_df(tmp_path)
    assert df["content"].tolist() == [
        "one",
        "[Compressed Memory Summary] first",
        "two",
        "[Compressed Memory Summary] second",
        "three",
    ]
    assert Path(str(df["file"].iloc[0])).name == "history_2026-04-20_12-00-04Z.md"


def test_same_second_archives_use_the_suffix_order(tmp_path: Path) -> None:
    when = datetime(2026, 4, 20, 12, 0, tzinfo=UTC)
    conv = Conversation(agent_name="a", workspace_dir=tmp_path, clock=lambda: when, preload=False)
    for i in range(3):
        conv.add("User", f"m{i}")
        conv.compact(f"s{i}")
    names = sorted(p.name for p in (tmp_path / "agents" / "a" / "archive").iterdir())
    assert names == [
        "history_2026-04-20_12-00-00Z.md",
        "history_2026-04-20_12-00-00Z_2.md",
        "history_2026-04-20_12-00-00Z_3.md",
    ]
    contents = memory_df(tmp_path)["content"].tolist()
    assert [c for c in contents if not c.startswith("[")] == ["m0", "m1", "m2"]
    assert contents[-1] == "[Compressed Memory Summary] s2"


def test_uncommitted_archive_is_skipped(own_workspace: Built) -> None:
    """A crash after the archive was linked, before MEMORY.md was replaced (step 3 of a
    compaction): the archive's messages are still all in MEMORY.md."""
    folder = own_workspace.root / "agents" / "gamma"
    pending = folder / "archive" / "history_2026-04-20_13-00-00.md"
    pending.parent.mkdir()
    shutil.copyfile(folder / "MEMORY.md", pending)
    (folder / ".MEMORY.md.intent.json").write_text(json.dumps({"archive": pending.name}))
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    read = memory_df_with_problems(own_workspace.root)
    df, problems = read.frame, read.problems
    gamma = df[df["agent"] == "gamma"]
    assert _pairs(gamma) == own_workspace.messages["gamma"]
    assert set(gamma["kind"].astype(str)) == {"memory"}
    assert problems[problems["kind"] == "pending"]["file"].tolist() == [str(pending)]
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before  # read only


# --------------------------------------------------------------------------- reference files


def test_reference_workspace(reference_workspace: Built) -> None:
    read = memory_df_with_problems(reference_workspace.root)
    df, problems = read.frame, read.problems
    for agent, expected in reference_workspace.messages.items():
        assert _pairs(df[df["agent"] == agent]) == expected
    assert df["naive_timestamp"].all()
    kinds = dict(zip(problems["kind"], problems["file"], strict=True))
    assert Path(kinds["duplicate"]).name == "history_2026-04-20_09-10-00.md"
    assert Path(kinds["gap"]).parent.parent.name == "Writer"
    researcher = df[df["agent"] == "Researcher"]
    assert researcher["segment"].tolist() == [0, 0, 0, 1, 1, 1, 2, 2]
    assert researcher["role"].astype(str).tolist()[:3] == ["Human", "Researcher", "Tool Executor"]
    assert "\n\n---\n\nA markdown rule above." in researcher["content"].iloc[1]
    assert memory_df(reference_workspace.root).shape == df.shape  # notes do not raise


@pytest.fixture
def paris() -> Iterator[None]:
    previous = os.environ.get("TZ")
    os.environ["TZ"] = "Europe/Paris"
    time.tzset()
    yield
    if previous is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = previous
    time.tzset()


def test_naive_timestamps_are_local_time(reference_workspace: Built, paris: None) -> None:
    df = memory_df(reference_workspace.root / "agents" / "Researcher")
    # 2026-04-20 is summer time in Paris (UTC+2); the fraction is kept
    assert df["timestamp"].iloc[0] == pd.Timestamp("2026-04-20T07:00:00Z")
    assert df["timestamp"].iloc[1] == pd.Timestamp("2026-04-20T07:00:05.25Z")
    assert df["timestamp"].iloc[2] == pd.Timestamp("2026-04-20T07:00:07.5Z")
    utc = memory_df(reference_workspace.root / "agents" / "Researcher", naive_tz=UTC)
    assert utc["timestamp"].iloc[0] == pd.Timestamp("2026-04-20T09:00:00Z")
    tokyo = memory_df(reference_workspace.root, naive_tz=ZoneInfo("Asia/Tokyo"))
    assert tokyo["timestamp"].iloc[0] == pd.Timestamp("2026-04-20T00:00:00Z")


def test_daylight_saving_change_is_honoured(tmp_path: Path, paris: None) -> None:
    folder = tmp_path / "agents" / "a"
    folder.mkdir(parents=True)
    stamps = ["2026-03-29T01:59:00", "2026-03-29T03:01:00"]  # the clocks went 02:00 -> 03:00
    (folder / "MEMORY.md").write_text(
        reference_file("c", stamps[0], [("Human", s, "x") for s in stamps])
    )
    df = memory_df(tmp_path)
    assert df["timestamp"].tolist() == [
        pd.Timestamp("2026-03-29T00:59:00Z"),
        pd.Timestamp("2026-03-29T01:01:00Z"),
    ]


def test_archive_that_is_a_prefix_of_the_next_file(tmp_path: Path) -> None:
    """The reference crashed between archiving and re-seeding: the next archive (or MEMORY.md)
    starts with all of it. Its messages are read once."""
    folder = tmp_path / "agents" / "a"
    (folder / "archive").mkdir(parents=True)
    blocks = [("Human", f"2026-04-20T09:00:0{i}", f"m{i}") for i in range(4)]
    (folder / "archive" / "history_2026-04-20_09-00-02.md").write_text(
        reference_file("c", "2026-04-20T09:00:00", blocks[:2])
    )
    (folder / "MEMORY.md").write_text(reference_file("c", "2026-04-20T09:00:00", blocks))
    read = memory_df_with_problems(tmp_path)
    df, problems = read.frame, read.problems
    assert df["content"].tolist() == ["m0", "m1", "m2", "m3"]
    assert problems["kind"].tolist() == ["duplicate"]
    assert "starts with all of it" in problems["message"].iloc[0]


def test_messages_copied_into_another_file_are_read_once(tmp_path: Path) -> None:
    """Rule 6: a writer without memorylab's lock (the reference's compact()) archived a file
    that was archived at the same moment, then carried on: two files that are not next to each
    other hold some of the same messages. Each is read once, from the earlier file, and the
    later file's own messages keep their positions."""
    folder = tmp_path / "agents" / "a"
    (folder / "archive").mkdir(parents=True)
    blocks = [("Human", f"2026-04-20T09:00:0{i}", f"m{i}") for i in range(6)]
    (folder / "archive" / "history_2026-04-20_09-00-03.md").write_text(
        reference_file("c", "2026-04-20T09:00:00", blocks[:4])
    )
    (folder / "archive" / "history_2026-04-20_09-00-05.md").write_text(
        reference_file("c2", "2026-04-20T09:00:03", blocks[2:5])
    )
    (folder / "MEMORY.md").write_text(reference_file("c3", "2026-04-20T09:00:05", blocks[5:]))
    read = memory_df_with_problems(tmp_path)
    df, problems = read.frame, read.problems
    assert df["content"].tolist() == ["m0", "m1", "m2", "m3", "m4", "m5"]
    assert df["timeline"].tolist() == list(range(6))
    assert df["segment"].tolist() == [0, 0, 0, 0, 1, 2]
    assert df["position"].tolist() == [0, 1, 2, 3, 2, 0]
    assert problems["kind"].tolist() == ["duplicate"]
    assert Path(problems["file"].iloc[0]).name == "history_2026-04-20_09-00-05.md"
    assert "2 of its 3 messages" in problems["message"].iloc[0]
    documents = [(p, read_memory(p)) for p in sorted(folder.rglob("*.md"))]
    assert documents_df(documents).equals(memory_df(tmp_path))


def test_unknown_files_in_archive_are_noted(reference_workspace: Built) -> None:
    archive = reference_workspace.root / "agents" / "Writer" / "archive"
    (archive / "notes.md").write_text("# my notes\n")
    (archive / ".history_x.md.tmp-1").write_text("partial")
    read = memory_df_with_problems(reference_workspace.root)
    problems = read.problems
    skipped = problems[problems["kind"] == "skipped"]
    assert [Path(f).name for f in skipped["file"]] == ["notes.md"]


# --------------------------------------------------------------------------- damaged files: on_bad


def _torn_workspace(root: Path) -> Path:
    folder = root / "agents" / "a"
    folder.mkdir(parents=True)
    text = reference_file("c", "2026-04-20T09:00:00", [("Human", "2026-04-20T09:00:01", "fine")])
    (folder / "MEMORY.md").write_text(text + "### Human — 2026-04-20T09:00:02\n\ncut off in the mi")
    return folder / "MEMORY.md"


def _torn_archive_workspace(root: Path) -> Path:
    """Two agents: ``a``, whose archive ends in a block cut off in the middle (then a summary and
    a message in MEMORY.md), and ``b``, undamaged. Returns the torn archive."""
    archive = root / "agents" / "a" / "archive" / "history_2026-04-20_09-10-00.md"
    archive.parent.mkdir(parents=True)
    old = reference_file("c", "2026-04-20T09:00:00", [("Human", "2026-04-20T09:00:01", "kept")])
    archive.write_text(old + "### AI — 2026-04-20T09:00:02\n\nhalf a rep")
    blocks = [
        ("System", "2026-04-20T09:10:00", "[Compressed Memory Summary] kept"),
        ("Human", "2026-04-20T09:11:00", "next"),
    ]
    (archive.parents[1] / "MEMORY.md").write_text(
        reference_file("c", "2026-04-20T09:10:00", blocks)
    )
    (root / "agents" / "b").mkdir(parents=True)
    fine = reference_file("d", "2026-04-20T09:00:00", [("Human", "2026-04-20T09:00:03", "hello")])
    (root / "agents" / "b" / "MEMORY.md").write_text(fine)
    return archive


def test_a_torn_archive_gives_the_readable_rows_and_one_warning(tmp_path: Path) -> None:
    """Issue 28: a researcher reading someone else's workspace gets a DataFrame, and one warning
    that says how many problems of which kinds, and how to see them."""
    archive = _torn_archive_workspace(tmp_path)
    with pytest.warns(MemoryReadWarning) as caught:
        df = memory_df(tmp_path)
    assert len(caught) == 1
    text = str(caught[0].message)
    assert "1 problem in 1 file" in text and "(1 torn)" in text
    assert f"memorylab.analysis.problems_df({str(tmp_path)!r})" in text
    assert "on_bad='skip'" in text and "on_bad='error'" in text
    assert caught[0].filename == __file__  # the caller's line
    assert list(df.columns) == [name for name, _ in MEMORY_COLUMNS]
    assert df["content"].tolist() == [
        "kept",
        "half a rep",
        "[Compressed Memory Summary] kept",
        "next",
        "hello",
    ]
    problems = problems_df(tmp_path)
    _assert_declared(problems, PROBLEM_COLUMNS)
    torn = problems[problems["kind"] == "torn"]
    assert torn["file"].tolist() == [str(archive)] and torn["line"].tolist() == [16]
    read = memory_df_with_problems(tmp_path)  # one read, both: no warning
    pd.testing.assert_frame_equal(read.frame, df)
    pd.testing.assert_frame_equal(read.problems, problems)


def test_on_bad_skip_is_silent_and_error_raises(tmp_path: Path) -> None:
    archive = _torn_archive_workspace(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails
        skipped = memory_df(tmp_path, on_bad="skip")
    with pytest.warns(MemoryReadWarning):
        pd.testing.assert_frame_equal(memory_df(tmp_path, on_bad="warn"), skipped)
    with pytest.raises(MemoryFormatError, match="use on_bad='warn' to read") as raised:
        memory_df(tmp_path, on_bad="error")
    assert raised.value.path == str(archive) and raised.value.line == 16
    assert "strict=False" not in str(raised.value)


def test_an_undamaged_workspace_does_not_warn(
    own_workspace: Built, reference_workspace: Built
) -> None:
    """Only a file that does not read whole warns: what the reference's workspaces have (a
    duplicate archive, a gap) is in problems_df, not in a warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        memory_df(own_workspace.root)
        memory_df(reference_workspace.root)
    assert set(problems_df(reference_workspace.root)["kind"]) >= {"duplicate", "gap"}


def test_on_bad_must_be_one_of_the_choices(tmp_path: Path) -> None:
    _torn_workspace(tmp_path)
    with pytest.raises(InvalidSetting, match="on_bad must be one of 'error', 'warn', 'skip'"):
        memory_df(tmp_path, on_bad="ignore")  # type: ignore[arg-type]
    assert ON_BAD == ("error", "warn", "skip")


def test_strict_raises_and_lenient_salvages(tmp_path: Path) -> None:
    path = _torn_workspace(tmp_path)
    with pytest.raises(MemoryFormatError) as raised:
        memory_df(tmp_path, on_bad="error")
    assert raised.value.path == str(path) and raised.value.line == 16
    read = memory_df_with_problems(tmp_path)
    df, problems = read.frame, read.problems
    assert df["content"].tolist() == ["fine", "cut off in the mi"]
    torn = problems[problems["kind"] == "torn"]
    assert torn["file"].tolist() == [str(path)] and torn["line"].tolist() == [16]
    assert problems["line"].dtype == "Int64"


def test_strict_keeps_working_for_a_release(tmp_path: Path) -> None:
    """``strict=`` warns (DeprecationWarning naming what to use) and does what it did."""
    path = _torn_workspace(tmp_path)
    with (
        pytest.warns(
            DeprecationWarning, match=r"strict=True\) is deprecated: use .*on_bad=\"error\""
        ),
        pytest.raises(MemoryFormatError) as raised,
    ):
        memory_df(tmp_path, strict=True)
    assert raised.value.path == str(path)
    with pytest.warns(DeprecationWarning, match=r"strict=False\) is deprecated: .*problems_df"):
        old = memory_df(tmp_path, strict=False)
    assert isinstance(old, ReadResult)
    new = memory_df_with_problems(tmp_path)
    pd.testing.assert_frame_equal(old.frame, new.frame)
    pd.testing.assert_frame_equal(old.problems, new.problems)
    with pytest.warns(DeprecationWarning, match="strict="):
        pd.testing.assert_frame_equal(
            memory_df(own := build_own(tmp_path / "own").root, strict=True), memory_df(own)
        )
    with pytest.raises(TypeError, match="give on_bad= only"):
        memory_df(tmp_path, strict=True, on_bad="skip")


def test_tokens_is_the_former_name_of_model(reference_workspace: Built, tmp_path: Path) -> None:
    """``tokens=`` names a tokenizer model, as ``model=`` does everywhere else: it keeps working
    for a release, with a DeprecationWarning naming ``model=``, and gives the same frame."""
    root = reference_workspace.root
    with pytest.warns(
        DeprecationWarning, match=r"memory_df\(tokens=\.\.\.\) is now memory_df\(model="
    ):
        old = memory_df(root, tokens="gpt-4o")
    pd.testing.assert_frame_equal(old, memory_df(root, model="gpt-4o"))
    assert old["tokens"].dtype == "Int64"
    with pytest.warns(DeprecationWarning, match=r"compactions_df\(tokens=.*model="):
        old = compactions_df(root, tokens="gpt-4o")
    pd.testing.assert_frame_equal(old, compactions_df(root, model="gpt-4o"))
    documents = [(p, read_memory(p)) for p in sorted((root / "agents" / "Writer").rglob("*.md"))]
    with pytest.warns(DeprecationWarning, match=r"documents_df\(tokens=.*model="):
        old = documents_df(documents, tokens="gpt-4o")
    pd.testing.assert_frame_equal(old, documents_df(documents, model="gpt-4o"))
    with pytest.raises(TypeError, match="give model= only"):
        memory_df(root, tokens="gpt-4o", model="gpt-4o")


def test_binary_file(tmp_path: Path) -> None:
    folder = tmp_path / "agents" / "a"
    folder.mkdir(parents=True)
    good = reference_file("c", "2026-04-20T09:00:00", [("Human", "2026-04-20T09:00:01", "ok")])
    (folder / "MEMORY.md").write_bytes(good.encode() + b"### Human \xff\xfe\n\n")
    with pytest.raises(MemoryFormatError, match="not UTF-8"):
        memory_df(tmp_path, on_bad="error")
    read = memory_df_with_problems(tmp_path)
    df, problems = read.frame, read.problems
    parsed = read_memory(folder / "MEMORY.md", strict=False)
    doc, expected = parsed.document, parsed.problems
    assert _pairs(df) == [(m.role, m.content) for m in doc.messages]
    assert problems["kind"].tolist() == [p.kind for p in expected]
    assert problems["kind"].iloc[0] == "encoding"
    with pytest.warns(MemoryReadWarning, match=r"in 1 file .*\(1 encoding"):
        memory_df(tmp_path)


def test_timestamp_out_of_range(tmp_path: Path) -> None:
    folder = tmp_path / "agents" / "a"
    folder.mkdir(parents=True)
    bad = reference_file("c", "2026-04-20T09:00:00", [("Human", "2026-13-01T09:00:01", "x")])
    (folder / "MEMORY.md").write_text(bad)
    with pytest.raises(MemoryFormatError, match="timestamp"):
        memory_df(tmp_path, on_bad="error")
    read = memory_df_with_problems(tmp_path)
    df, problems = read.frame, read.problems
    assert len(df) == 0 and "structure" in set(problems["kind"])


def test_an_unreadable_file_is_a_problem_not_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file the loader cannot open (the filesystem refuses: StoreError) is an ``io`` problem:
    warned about with the others, and raised only with ``on_bad="error"``."""
    archive = _torn_archive_workspace(tmp_path)
    (archive.parents[1] / "MEMORY.md").write_text(
        reference_file("c", "2026-04-20T09:10:00", [("Human", "2026-04-20T09:11:00", "next")])
    )
    real = sources.read_parsed

    def refusing(path: Path, *, strict: bool = True) -> Any:
        if Path(path) == archive:
            raise StoreError(f"{path}: permission denied")
        return real(path, strict=strict)

    monkeypatch.setattr(sources, "read_parsed", refusing)
    with pytest.raises(StoreError, match="permission denied"):
        memory_df(tmp_path, on_bad="error")
    with pytest.warns(MemoryReadWarning, match=r"1 problem in 1 file .*\(1 io\)"):
        df = memory_df(tmp_path)
    assert df["content"].tolist() == ["next", "hello"]
    problems = problems_df(tmp_path)
    assert problems[problems["kind"] == "io"]["file"].tolist() == [str(archive)]


# --------------------------------------------------------------------------- compactions


def test_compactions_from_jsonl(own_workspace: Built) -> None:
    frame = compactions_df(own_workspace.root)
    assert list(frame.columns) == [name for name, _ in COMPACTION_COLUMNS]
    assert frame.groupby("agent")["archive"].count().to_dict() == {"alpha": 3, "beta": 2}
    assert set(frame["source"]) == {"jsonl"}
    alpha = frame[frame["agent"] == "alpha"]
    archives = sorted(p.name for p in (own_workspace.root / "agents/alpha/archive").iterdir())
    assert alpha["archive"].tolist() == archives
    assert alpha["messages_archived"].tolist() == [12, 13, 13]  # the summary is archived too
    assert alpha["carried_over"].tolist() == [0.0, 0.0, 0.0]
    assert isinstance(frame["time"].dtype, pd.DatetimeTZDtype)
    assert frame["time"].is_monotonic_increasing or frame["agent"].nunique() > 1
    assert frame["tokens_before"].isna().all()  # compact() without a tokenizer counts nothing


def test_compactions_ignore_other_record_kinds(own_workspace: Built) -> None:
    jsonl = own_workspace.root / "agents" / "beta" / "compactions.jsonl"
    with jsonl.open("a") as handle:
        handle.write(json.dumps({"kind": "deletion", "time": "2026-04-21T00:00:00+00:00"}) + "\n")
        handle.write(json.dumps({"kind": "compaction", "error": "boom", "time": "x"}) + "\n")
        handle.write('{"torn": ')
    assert len(compactions_df(own_workspace.root / "agents" / "beta")) == 2


def test_compactions_with_token_figures(tmp_path: Path) -> None:
    from memorylab.compress._compressor import ContextCompressor
    from memorylab.compress._scripted import ScriptedSummarizer

    counter = get_token_counter("gpt-4o")
    conv = Conversation(agent_name="a", workspace_dir=tmp_path, token_counter=counter)
    compressor = ContextCompressor(0.5, summarizer=ScriptedSummarizer(["short summary"]))
    for i in range(40):
        conv.add("User", f"message number {i} with a few more words in it")
        compressor.compress(conv, 200)
    frame = compactions_df(tmp_path)
    assert len(frame) == len(compressor.events) > 2
    assert (frame["tokens_before"] >= 100).all()
    assert (frame["tokens_after"] < frame["tokens_before"]).all()
    assert (frame["summarizer_model"] == "memorylab/scripted").all()
    assert (frame["threshold"] == 0.5).all() and (frame["context_length"] == 200).all()


def test_compactions_inferred_for_reference(reference_workspace: Built) -> None:
    frame = compactions_df(reference_workspace.root)
    assert list(frame.columns) == [name for name, _ in COMPACTION_COLUMNS]
    assert set(frame["source"]) == {"inferred"}
    researcher = frame[frame["agent"] == "Researcher"]
    assert researcher["archive"].tolist() == [
        "history_2026-04-20_09-10-00_2.md",
        "history_2026-04-20_09-20-00.md",
    ]
    assert researcher["messages_archived"].tolist() == [3, 3]
    assert researcher["time"].tolist()[1] == pd.Timestamp("2026-04-20T09:20:00").tz_localize(
        datetime.now().astimezone().tzinfo
    ).tz_convert("UTC")
    assert frame["tokens_before"].isna().all() and frame["summarizer_model"].isna().all()
    counted = compactions_df(reference_workspace.root, model="gpt-4o")
    assert (counted["tokens_before"] > counted["tokens_after"]).all()
    # the request after it: the summary and the reply's priming
    assert (counted["summary_tokens"] + REPLY_TOKENS == counted["tokens_after"]).all()


def test_compactions_of_a_workspace_without_any(tmp_path: Path) -> None:
    built = build_own(tmp_path / "ws")
    frame = compactions_df(built.root / "agents" / "gamma")
    assert len(frame) == 0 and list(frame.columns) == [name for name, _ in COMPACTION_COLUMNS]


def test_reference_file_helper_is_the_reference_format() -> None:
    assert (
        block("Human", "2026-01-01T00:00:00", "hi")
        == "### Human — 2026-01-01T00:00:00\n\nhi\n\n---\n\n"
    )


def test_nested_agent_folders_are_agents_named_by_their_path(tmp_path: Path) -> None:
    """The reference framework writes an agent named ``team/alpha`` to agents/team/alpha/: the
    loaders find it at any depth, name it by its path, and do not take an agent's archive/ for
    an agent (issue 17: a workspace report silently left such agents out)."""
    agents = tmp_path / "agents"
    for name, words in (("team/alpha", "alpha here"), ("team/beta", "beta here"), ("solo", "hi")):
        (agents / name / "archive").mkdir(parents=True)
        text = reference_file(
            name, "2026-04-20T09:00:00", [("Human", "2026-04-20T09:00:01", words)]
        )
        (agents / name / "MEMORY.md").write_text(text, encoding="utf-8")
    older = reference_file(
        "team/alpha", "2026-04-20T08:00:00", [("Human", "2026-04-20T08:00:01", "older")]
    )
    archive = agents / "team" / "alpha" / "archive" / "history_2026-04-20_08-00-00.md"
    archive.write_text(older, encoding="utf-8")
    frame = memory_df(tmp_path)
    assert list(frame["agent"].astype(str)) == ["solo", "team/alpha", "team/alpha", "team/beta"]
    assert list(frame["content"]) == ["hi", "older", "alpha here", "beta here"]
    one = memory_df(agents / "team" / "alpha")
    assert set(one["agent"].astype(str)) == {"team/alpha"} and len(one) == 2
    assert set(memory_df(agents / "team" / "beta" / "MEMORY.md")["agent"].astype(str)) == {
        "team/beta"
    }
    assert set(memory_df(agents)["workspace"].astype(str)) == {str(tmp_path)}


def test_a_system_block_after_an_edit_is_not_a_summary() -> None:
    """After a compaction's archive a file's first System block is its summary (the reference's
    plain compact()); after an edit's archive it is just the first message kept."""
    conv = Conversation(agent_name="Edited")
    conv.add("System", "you are a helpful agent")
    conv.add("User", "drop me")
    conv.delete(1)
    assert conv.memory_md_path is not None
    frame = memory_df(conv.memory_md_path.parent)
    assert list(frame["content"]) == ["you are a helpful agent"]
    assert not frame["is_summary"].any()
