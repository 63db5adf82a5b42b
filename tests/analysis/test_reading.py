"""memory_df reads every file exactly as the parser does: rows, UTC timestamps, problems.

The loader has no reader of its own: each file goes through
:func:`memorylab.memory._store.read_memory`. These tests hold it to that on golden files, on
generated files in memorylab's and the reference's format (escapes, any stamp shape) and on
damaged ones (cut, CRLF, BOM, inserted structure, invalid UTF-8), with the naive timestamps of
the reference read in a given zone; and they pin what the parser does with many problems and
with headings whose timestamp is not a date.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memorylab.analysis import memory_df, memory_df_with_problems
from memorylab.errors import MemoryFormatError, MemoryReadWarning
from memorylab.memory import _format as fmt
from memorylab.memory._records import SUMMARY_PREFIX, MemoryDocument, Message
from memorylab.memory._store import read_memory

GOLDEN = sorted((Path(__file__).parent.parent / "data" / "golden").glob("*.*"))
GOLDEN = [p for p in GOLDEN if p.suffix in (".md", ".bin")]
ZONES = [UTC, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=8))]


def _utc(when: datetime, naive_tz: tzinfo) -> pd.Timestamp:
    return pd.Timestamp(when.replace(tzinfo=naive_tz) if when.tzinfo is None else when)


def _same_as_parser(data: bytes, naive_tz: tzinfo = UTC) -> None:
    """memory_df of a file holding ``data`` gives read_memory's messages and problems."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "agents" / "a" / "MEMORY.md"
        path.parent.mkdir(parents=True)
        path.write_bytes(data)
        parsed = read_memory(path, strict=False)
        doc, expected = parsed.document, parsed.problems
        read = memory_df_with_problems(path, naive_tz=naive_tz)
        frame, problems = read.frame, read.problems
        messages = doc.messages
        assert frame["role"].astype(str).tolist() == [m.role for m in messages]
        assert frame["content"].tolist() == [m.content for m in messages]
        assert frame["chars"].tolist() == [len(m.content) for m in messages]
        assert frame["is_summary"].tolist() == [
            m.content.startswith(SUMMARY_PREFIX) for m in messages
        ]
        assert frame["timestamp"].tolist() == [_utc(m.timestamp, naive_tz) for m in messages]
        assert frame["naive_timestamp"].tolist() == [m.timestamp.tzinfo is None for m in messages]
        assert frame["position"].tolist() == list(range(len(messages)))
        # the loader's own remarks on the timeline: a missing start, times that go backwards
        found = problems[~problems["kind"].isin(["gap", "order"])]
        assert list(zip(found["line"], found["kind"], found["message"], strict=True)) == [
            (p.line, p.kind, p.message) for p in expected
        ]
        if expected:
            with pytest.raises(MemoryFormatError) as ours:
                memory_df(path, naive_tz=naive_tz, on_bad="error")
            with pytest.raises(MemoryFormatError) as theirs:
                read_memory(path)
            # the same error; its advice names the loader's keyword
            assert str(ours.value) == str(theirs.value).replace("strict=False", "on_bad='warn'")
            assert (ours.value.path, ours.value.line) == (theirs.value.path, theirs.value.line)
            with pytest.warns(MemoryReadWarning, match=f"in 1 file .*{expected[0].kind}"):
                assert memory_df(path, naive_tz=naive_tz).equals(frame)
        else:
            assert memory_df(path, naive_tz=naive_tz).equals(frame)


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.name)
def test_golden_files(path: Path) -> None:
    _same_as_parser(path.read_bytes())


# --------------------------------------------------------------------------- generated files

STRUCTURE = [
    "---",
    "\\---",
    "### Human — 2020-01-01T00:00:00",
    "### X — 2020-01-01T00:00:00.5+02:00",
    "###",
    "#### four",
    "# Agent Memory",
    "## Interaction Log",
    "\\### y",
    "\\\\",
    "",
    "\r",
    "| a | b |\n|---|---|",
    "```\n---\n```",
    "**Continues:** history_2020-01-01_00-00-00.md",
    "[Compressed Memory Summary] earlier",
]
roles = st.text(alphabet=st.sampled_from("aZé — #-🤖 \\x"), min_size=1, max_size=8).filter(
    lambda r: r.strip() != "" and "\n" not in r
)
lines = st.one_of(
    st.sampled_from(STRUCTURE), st.text(alphabet=st.sampled_from("ab -#\\—é\r🤖:"), max_size=12)
)
contents = st.lists(lines, max_size=6).map("\n".join)
stamps = st.datetimes(
    min_value=datetime(1990, 1, 1),
    max_value=datetime(2090, 1, 1),
    timezones=st.sampled_from([None, *ZONES]),
)
messages = st.lists(st.builds(Message, roles, contents, stamps), max_size=6)


def _own(msgs: list[Message], continues: str | None = None) -> bytes:
    # memorylab writes every block with a UTC offset (a naive clock's time is local time)
    msgs = [m if m.timestamp.tzinfo else replace(m, timestamp=m.timestamp.replace(tzinfo=UTC))
            for m in msgs]  # fmt: skip
    doc = MemoryDocument("conv", datetime(2026, 1, 1, tzinfo=UTC), tuple(msgs), 1, continues)
    return fmt.render_memory(doc).encode("utf-8", "surrogatepass")


def _reference(blocks: list[tuple[str, str, str]]) -> bytes:
    head = "# Agent Memory\n\n**Conversation:** c\n**Created:** 2026-01-01T00:00:00\n\n---\n\n"
    body = "".join(
        f"### {role} — {stamp}\n\n{content}\n\n---\n\n" for role, stamp, content in blocks
    )
    return (head + "## Interaction Log\n\n" + body).encode("utf-8")


@given(messages, st.sampled_from([None, "history_2026-01-01_00-00-00.md"]), st.sampled_from(ZONES))
def test_own_format(msgs: list[Message], continues: str | None, naive_tz: tzinfo) -> None:
    data = _own(msgs, continues)
    _same_as_parser(data, naive_tz)
    with tempfile.TemporaryDirectory() as tmp:  # the escapes are undone: the contents as added
        path = Path(tmp) / "MEMORY.md"
        path.write_bytes(data)
        assert memory_df(path)["content"].tolist() == [m.content for m in msgs]


@given(messages, st.sampled_from(ZONES))
def test_reference_format(msgs: list[Message], naive_tz: tzinfo) -> None:
    _same_as_parser(
        _reference([(m.role, m.timestamp.isoformat(), m.content) for m in msgs]), naive_tz
    )


# Heading stamps in every shape the grammar takes.
stamp_texts = st.builds(
    lambda when, spec, zulu: when.isoformat(timespec=spec).replace(
        "+00:00", "Z" if zulu else "+00:00"
    ),
    st.datetimes(
        min_value=datetime(1990, 1, 1),
        max_value=datetime(2090, 1, 1),
        timezones=st.sampled_from(
            [None, UTC, timezone(timedelta(hours=5, minutes=30, seconds=15)), *ZONES[2:]]
        ),
    ),
    st.sampled_from(["auto", "seconds", "milliseconds", "microseconds"]),
    st.booleans(),
)


@given(st.lists(st.tuples(roles, stamp_texts, contents), max_size=6), st.sampled_from(ZONES))
def test_reference_format_with_any_stamp_shape(
    blocks: list[tuple[str, str, str]], naive_tz: tzinfo
) -> None:
    _same_as_parser(_reference(blocks), naive_tz)


@pytest.mark.parametrize("reference", [False, True])
def test_long_headings_and_dashes_in_roles(reference: bool) -> None:
    when = datetime(2026, 1, 1, 12, 30, tzinfo=UTC)
    msgs = [
        Message("R — " * 100, "plain", when),
        Message("x — 2026-01-01T00:00:00", "é — ü\n\\### not a heading", when),
        Message("🤖" * 70, "ascii\n---\nafter a rule", when.replace(microsecond=5)),
        Message("User", SUMMARY_PREFIX + " é", when),
    ]
    blocks = [(m.role, m.timestamp.isoformat(), m.content) for m in msgs]
    _same_as_parser(_reference(blocks) if reference else _own(msgs))
    doc = fmt.parse((_reference(blocks) if reference else _own(msgs)).decode())
    assert [m.role for m in doc.messages] == [m.role for m in msgs]


def test_heading_right_after_a_headings_blank_line() -> None:
    """In memorylab's format an unescaped heading after a blank line cuts the block (it was
    torn), also as the first line of a content."""
    when = datetime(2026, 1, 1, tzinfo=UTC)
    data = _own([Message("User", "hello", when), Message("Agent", "reply", when)])
    torn = data.replace(b"\n\nreply", "\n\n### A — 2020-01-01T00:00:00\n\nreply".encode())
    assert torn != data
    _same_as_parser(torn)
    assert [m.role for m in fmt.parse(torn.decode(), strict=False).document.messages][-1] == "A"


def test_invalid_utf8_in_a_content() -> None:
    good = _own([Message("User", "café", datetime(2026, 1, 1, tzinfo=UTC))])
    bad = good.replace("café".encode(), b"caf\xe9")  # Latin-1
    _same_as_parser(bad)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "MEMORY.md"
        path.write_bytes(bad)
        read = memory_df_with_problems(path)
        frame, problems = read.frame, read.problems
        assert frame["content"].tolist() == ["caf\ufffd"] and problems["kind"].iloc[0] == "encoding"
        with pytest.raises(MemoryFormatError, match="not UTF-8"):
            memory_df(path, on_bad="error")


@given(messages, st.data())
def test_damaged_files(msgs: list[Message], data: st.DataObject) -> None:
    raw = data.draw(
        st.sampled_from(
            [_own(msgs), _reference([(m.role, m.timestamp.isoformat(), m.content) for m in msgs])]
        )
    )
    damage = data.draw(st.sampled_from(["cut", "crlf", "bom", "insert", "drop"]))
    if damage == "cut" and raw:
        raw = raw[: data.draw(st.integers(0, len(raw) - 1))]
    elif damage == "crlf":
        raw = raw.replace(b"\n", b"\r\n")
    elif damage == "bom":
        raw = b"\xef\xbb\xbf" + raw
    elif damage == "insert":
        at = data.draw(st.integers(0, len(raw)))
        piece = data.draw(
            st.sampled_from(
                [
                    b"\n### A \xe2\x80\x94 2020-01-01T00:00:00\n\n",
                    b"\n### B \xe2\x80\x94 2020-13-01T00:00:00\n\n",
                    b"\n\n---\n\n",
                    b"\n",
                    b"\xff",
                    b"### ",
                ]
            )
        )
        raw = raw[:at] + piece + raw[at:]
    elif damage == "drop" and raw:
        at = data.draw(st.integers(0, len(raw) - 1))
        raw = raw[:at] + raw[at + 1 :]
    _same_as_parser(raw)


# --------------------------------------------------------------------------- the parser


def test_many_problems_have_their_lines() -> None:
    """Line numbers are counted once for all problems, in one pass (the parse stays linear),
    and each is the line of its block's heading: torn blocks of memorylab's own file, then
    headings without their blank line."""
    head = fmt.render_header("c", datetime(2026, 1, 1, tzinfo=UTC))
    torn = [f"### T{i} — 2026-01-01T00:00:00+00:00\n\npartial {i}\n" for i in range(2000)]
    tight = [f"### R{i} — 2026-01-01T00:00:01\nno blank line {i}\n\n---\n\n" for i in range(500)]
    text = head + "".join(torn) + "### T — 2026-01-01T00:00:00+00:00\n\nclosed\n\n---\n\n"
    text += "".join(tight)
    parsed = fmt.parse(text, strict=False)
    doc, problems = parsed.document, parsed.problems
    assert len(doc.messages) == 2501 and doc.messages[1999].content == "partial 1999"
    assert [p.kind for p in problems] == ["torn"] * 2000 + ["structure"] * 500
    lines = text.split("\n")
    headings = [block.split("\n")[0] for block in torn + tight]
    assert [lines[p.line - 1] for p in problems] == headings
    parsed = fmt.parse(text.replace("\n", "\r\n"), strict=False)
    crlf, found = parsed.document, parsed.problems
    assert crlf == doc and [p.line for p in found[1:]] == [p.line for p in problems]


@pytest.mark.parametrize(
    "stamp",
    [
        "2026-13-01T00:00:00",
        "0000-01-01T00:00:00",
        "2026-01-01T24:00:00",
        "2026-02-30T00:00:00.000000+00:00",
    ],
)
def test_a_heading_timestamp_that_is_not_a_date(stamp: str) -> None:
    """Shaped like a timestamp, not a date: a problem on its line; the other blocks are read."""
    text = _reference([("Human", "2026-04-20T09:00:00", "kept"), ("Human", stamp, "skipped")])
    parsed = fmt.parse(text.decode(), strict=False)
    doc, problems = parsed.document, parsed.problems
    assert [m.content for m in doc.messages] == ["kept"]
    assert [(p.line, p.kind) for p in problems] == [(16, "structure")]
    assert stamp in problems[0].message and "correct the timestamp" in problems[0].message
    with pytest.raises(MemoryFormatError, match="not a valid date"):
        fmt.parse(text.decode())


@pytest.mark.parametrize("stamp", ["2026-01-01 00:00:00", "2026-01-01T00:00:00+0200", "2026-01-01"])
def test_a_heading_without_a_timestamp_is_no_heading(stamp: str) -> None:
    text = _reference([("Human", "2026-04-20T09:00:00", "kept"), ("Human", stamp, "skipped")])
    parsed = fmt.parse(text.decode(), strict=False)
    doc, problems = parsed.document, parsed.problems
    assert [m.content for m in doc.messages] == [
        "kept\n\n---\n\n### Human — " + stamp + "\n\nskipped"
    ]
    assert problems == []


# --------------------------------------------------------------------------- timestamps


@pytest.mark.parametrize(
    "stamp",
    [
        "2026-04-20T09:00:00",
        "2026-04-20T09:00:00.123456",
        "2026-04-20T09:00:00+02:00",
        "2026-04-20T09:00:00.5-07:30",
        "2026-04-20T09:00:00.000001+00:00",
        "2026-04-20T09:00:00Z",
        "2026-04-20T09:00:00.12+05:45:30",
    ],
)
def test_stamp_shapes(stamp: str, tmp_path: Path) -> None:
    path = tmp_path / "MEMORY.md"
    path.write_bytes(_reference([("Human", stamp, "x")]))
    frame = memory_df(path, naive_tz=UTC)
    expected = datetime.fromisoformat(stamp)
    assert frame["naive_timestamp"].tolist() == [expected.tzinfo is None]
    assert frame["timestamp"].tolist() == [_utc(expected, UTC)]


def test_many_stamps_at_once(tmp_path: Path) -> None:
    base = datetime(2026, 1, 1, tzinfo=UTC)
    whens = [base + timedelta(seconds=i * 3.7) for i in range(1000)]
    blocks = [("A", w.isoformat(timespec="microseconds"), "x") for w in whens]
    blocks += [("B", w.replace(tzinfo=None).isoformat(), "y") for w in whens]
    path = tmp_path / "MEMORY.md"
    path.write_bytes(_reference(blocks))
    frame = memory_df(path, naive_tz=ZoneInfo("Asia/Tokyo"))
    tokyo = [pd.Timestamp(w.replace(tzinfo=None) - timedelta(hours=9), tz="UTC") for w in whens]
    assert frame["timestamp"].tolist() == [pd.Timestamp(w) for w in whens] + tokyo
    assert frame["naive_timestamp"].tolist() == [False] * 1000 + [True] * 1000


def test_ambiguous_and_skipped_local_times(tmp_path: Path) -> None:
    """Naive stamps at the daylight-saving changes of Europe/Paris: the hour repeated in
    October is read as the first (summer time) one; a time the clocks skipped in March as the
    first instant after the gap."""
    stamps = [
        "2026-10-25T01:59:00",  # CEST
        "2026-10-25T02:30:00",  # twice: 00:30Z (CEST) and 01:30Z (CET)
        "2026-10-25T03:00:00",  # CET
        "2026-03-29T02:30:00",  # skipped: 02:00 -> 03:00
    ]
    path = tmp_path / "MEMORY.md"
    path.write_bytes(_reference([("Human", s, "x") for s in stamps]))
    frame = memory_df(path, naive_tz=ZoneInfo("Europe/Paris"))
    assert frame["timestamp"].tolist() == [
        pd.Timestamp("2026-10-24T23:59:00Z"),
        pd.Timestamp("2026-10-25T00:30:00Z"),
        pd.Timestamp("2026-10-25T02:00:00Z"),
        pd.Timestamp("2026-03-29T01:00:00Z"),
    ]


def test_times_that_go_backwards_are_said(tmp_path: Path) -> None:
    """Issue 28: a heading forged inside a reference message made "first message 2020-01-01"
    and nothing said so."""
    data = _reference([
        ("Human", "2026-04-20T09:00:00", "deploy it"),
        ("Human", "2020-01-01T00:00:00", "a heading pasted into the content"),
        ("Agent", "2026-04-20T09:01:00", "done"),
    ])  # fmt: skip
    path = tmp_path / "agents" / "a" / "MEMORY.md"
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    read = memory_df_with_problems(path)
    (note,) = read.problems[read.problems["kind"] == "order"]["message"]
    assert note.startswith("message 1 (2020-01-01 00:00:00) is dated before the one before it")
    assert len(read.frame) == 3  # read as written: the order is the file's


def test_a_turn_a_compaction_kept_is_not_said_to_go_backwards(tmp_path: Path) -> None:
    """The turn in progress a compaction keeps follows a summary dated later (issue 38): it is
    read from the archive, where its order is checked, not noted in the new file."""
    from memorylab import ContextCompressor, Conversation

    times = iter(datetime(2026, 4, 20, 9, 0, tzinfo=UTC) + timedelta(minutes=5 * m) for m in range(9))
    conv = Conversation(agent_name="a", workspace_dir=tmp_path, token_counter=len,
                        clock=lambda: next(times))  # fmt: skip
    for text in ("deploy it", "done", "now restart it"):
        conv.add("User" if text != "done" else "a", text)
    compressor = ContextCompressor(summarizer_model="memorylab/extractive")
    assert compressor.compress(conv, 100, force=True).ok  # the summary 5 minutes after the turn
    read = memory_df_with_problems(tmp_path / "agents" / "a")
    assert read.problems.empty or "order" not in set(read.problems["kind"])
    memory = read.frame[read.frame["file"].str.endswith("MEMORY.md")]
    assert memory["is_summary"].tolist() == [True]  # the kept turn is read from the archive
