"""The loader's fast route gives exactly what the parser gives, for any file.

``memorylab.analysis._scan.read_rows`` reads well-formed files without running the parser and
hands everything else to it; these tests compare its output (roles, contents, UTC timestamps,
problems) with :func:`memorylab.memory.format.parse` on golden files, on generated files in both
memorylab's and the reference's format, and on damaged ones.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memorylab.analysis import _scan
from memorylab.analysis._layout import unescape
from memorylab.analysis._scan import convert_or_parse, convert_stamps, read_rows
from memorylab.memory import format as fmt
from memorylab.memory.records import SUMMARY_PREFIX, MemoryDocument, Message

SMALL_FILE = _scan.SMALL_FILE  # the size the loader uses (the tests below change it)
GOLDEN = sorted((Path(__file__).parent.parent / "data" / "golden").glob("*.md"))
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _micros(when: datetime) -> int:
    aware = when.astimezone() if when.tzinfo is None else when
    return (aware - EPOCH) // timedelta(microseconds=1)


@contextmanager
def _small_files(size: int) -> Iterator[None]:
    """Files below ``size`` bytes go to the parser (0: every file tries the fast route)."""
    saved = _scan.SMALL_FILE
    _scan.SMALL_FILE = size
    try:
        yield
    finally:
        _scan.SMALL_FILE = saved


@pytest.fixture(autouse=True)
def _fast_route_for_small_files() -> Iterator[None]:
    """The files here are small: without this the parser would read them all."""
    with _small_files(0):
        yield


def _same_as_parser(data: bytes) -> None:
    _same_rows_as_parser(data)
    with _small_files(len(data) + 1):
        _same_rows_as_parser(data)


def _same_rows_as_parser(data: bytes) -> None:
    path = Path("test.md")
    rows = read_rows(path, strict=False, box=[data], reader=lambda _: data)
    rows = convert_or_parse(rows, path, strict=False, reader=lambda _: data)
    text = data.decode("utf-8", errors="replace")
    try:
        doc, problems = fmt.parse(text, strict=False)
    except ValueError:  # the parser's own gap: a timestamp out of range (month 13)
        assert rows.contents == [] and rows.problems[-1].kind == "structure"
        return
    expected_problems = [(p.line, p.kind, p.message) for p in problems]
    if not data.startswith(b"\xef\xbb\xbf"):
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            expected_problems.insert(
                0, (rows.problems[0].line, "encoding", rows.problems[0].message)
            )
    assert rows.roles == [m.role for m in doc.messages]
    assert rows.contents == [m.content for m in doc.messages]
    assert rows.chars.tolist() == [len(m.content) for m in doc.messages]
    assert rows.summary.tolist() == [m.content.startswith(SUMMARY_PREFIX) for m in doc.messages]
    assert rows.utc_us.tolist() == [_micros(m.timestamp) for m in doc.messages]
    assert rows.naive.tolist() == [m.timestamp.tzinfo is None for m in doc.messages]
    assert [(p.line, p.kind, p.message) for p in rows.problems] == expected_problems
    assert rows.continues == doc.continues and rows.format_version == doc.format_version


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
    timezones=st.sampled_from(
        [None, UTC, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=8))]
    ),
)
messages = st.lists(st.builds(Message, roles, contents, stamps), max_size=6)


def _own(msgs: list[Message], continues: str | None) -> bytes:
    doc = MemoryDocument("conv", datetime(2026, 1, 1, tzinfo=UTC), tuple(msgs), 1, continues)
    return fmt.render_memory(doc).encode("utf-8", "surrogatepass")


def _reference(msgs: list[Message]) -> bytes:
    head = "# Agent Memory\n\n**Conversation:** c\n**Created:** 2026-01-01T00:00:00\n\n---\n\n"
    head += "## Interaction Log\n\n"
    body = "".join(
        f"### {m.role} — {m.timestamp.isoformat()}\n\n{m.content}\n\n---\n\n" for m in msgs
    )
    return (head + body).encode("utf-8")


@given(messages, st.sampled_from([None, "history_2026-01-01_00-00-00.md"]))
def test_own_format(msgs: list[Message], continues: str | None) -> None:
    data = _own(msgs, continues)
    _same_as_parser(data)
    rows = read_rows(Path("x.md"), strict=True, box=[data])
    assert rows.convert(None) or not msgs
    assert rows.contents == [m.content for m in msgs]  # and the round trip is exact


@given(messages)
def test_reference_format(msgs: list[Message]) -> None:
    _same_as_parser(_reference(msgs))


# Heading stamps in every shape the grammar takes (the fast route checks the usual lengths
# with numpy and searches the others in Python).
stamp_texts = st.builds(
    lambda when, spec, zulu: when.isoformat(timespec=spec).replace(
        "+00:00", "Z" if zulu else "+00:00"
    ),
    st.datetimes(
        min_value=datetime(1990, 1, 1),
        max_value=datetime(2090, 1, 1),
        timezones=st.sampled_from(
            [
                None,
                UTC,
                timezone(timedelta(hours=5, minutes=30, seconds=15)),
                timezone(-timedelta(hours=8)),
            ]
        ),
    ),
    st.sampled_from(["auto", "seconds", "milliseconds", "microseconds"]),
    st.booleans(),
)


@given(st.lists(st.tuples(roles, contents, stamp_texts), max_size=6))
def test_reference_format_with_any_stamp_shape(blocks: list[tuple[str, str, str]]) -> None:
    head = "# Agent Memory\n\n**Conversation:** c\n**Created:** 2026-01-01T00:00:00\n\n---\n\n"
    body = "".join(
        f"### {role} — {stamp}\n\n{content}\n\n---\n\n" for role, content, stamp in blocks
    )
    _same_as_parser((head + "## Interaction Log\n\n" + body).encode("utf-8"))


@pytest.mark.parametrize("reference", [False, True])
def test_long_headings_and_dashes_in_roles(reference: bool) -> None:
    """Headings longer than the fast route's windows, roles holding " — " and non-ASCII
    contents (the fast route decodes only those)."""
    when = datetime(2026, 1, 1, 12, 30, tzinfo=UTC)
    msgs = [
        Message("R — " * 100, "plain", when),
        Message("x — 2026-01-01T00:00:00", "é — ü\n\\### not a heading", when),
        Message("🤖" * 70, "ascii\n---\nafter a rule", when.replace(microsecond=5)),
        Message("User", SUMMARY_PREFIX + " é", when),
    ]
    data = _reference(msgs) if reference else _own(msgs, None)
    _same_as_parser(data)
    with mock.patch.object(_scan, "parsed", wraps=_scan.parsed) as parser:
        rows = read_rows(Path("x.md"), strict=True, box=[data])
    assert not parser.called  # the fast route read it
    assert rows.convert(None)
    assert rows.roles == [m.role for m in msgs]
    if not reference:  # the reference does not escape: "\\###" is read back as "###"
        assert rows.contents == [m.content for m in msgs]


def test_heading_right_after_a_headings_blank_line() -> None:
    """In memorylab's format the parser cuts a block at an unescaped heading that follows a
    blank line (a torn block), also the first line of a content: the fast route must not
    read it as content."""
    when = datetime(2026, 1, 1, tzinfo=UTC)
    data = _own([Message("User", "hello", when), Message("Agent", "reply", when)], None)
    torn = data.replace(b"\n\nreply", "\n\n### A — 2020-01-01T00:00:00\n\nreply".encode())
    assert torn != data
    _same_as_parser(torn)
    assert [m.role for m in fmt.parse(torn.decode(), strict=False)[0].messages][-1] == "A"


def test_fast_route_falls_back_on_invalid_utf8_in_a_content() -> None:
    good = _own([Message("User", "café", datetime(2026, 1, 1, tzinfo=UTC))], None)
    bad = good.replace("café".encode(), b"caf\xe9")  # Latin-1
    with mock.patch.object(_scan, "parsed", wraps=_scan.parsed) as parser:
        rows = read_rows(Path("x.md"), strict=False, box=[bad])
    assert parser.call_count == 1 and rows.problems[0].kind == "encoding"
    _same_as_parser(bad)


@given(messages, st.data())
def test_damaged_files(msgs: list[Message], data: st.DataObject) -> None:
    raw = data.draw(st.sampled_from([_own(msgs, None), _reference(msgs)]))
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


def test_small_files_go_to_the_parser() -> None:
    """Below ``SMALL_FILE`` bytes the parser is faster than the fast route's fixed cost."""
    when = datetime(2026, 1, 1, tzinfo=UTC)
    small = _own([Message("User", "hello", when)], None)
    big = _own([Message("User", "x" * SMALL_FILE, when)], None)
    with _small_files(SMALL_FILE), mock.patch.object(_scan, "parsed", wraps=_scan.parsed) as parser:
        assert read_rows(Path("s.md"), strict=True, box=[small]).contents == ["hello"]
        assert parser.call_count == 1
        assert read_rows(Path("b.md"), strict=True, box=[big]).contents == ["x" * SMALL_FILE]
        assert parser.call_count == 1


def test_strict_mode_raises_like_the_parser() -> None:
    torn = _own([Message("User", "hello", datetime(2026, 1, 1, tzinfo=UTC))], None)[:-3]
    with pytest.raises(fmt.MemoryFormatError) as ours:
        read_rows(Path("t.md"), strict=True, box=[torn])
    with pytest.raises(fmt.MemoryFormatError) as theirs:
        fmt.parse(torn.decode(), strict=True, path="t.md")
    assert str(ours.value) == str(theirs.value)


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
def test_stamp_shapes(stamp: str) -> None:
    utc, naive = convert_stamps([stamp.encode()], UTC)  # type: ignore[misc]
    expected = datetime.fromisoformat(stamp)
    assert naive.tolist() == [expected.tzinfo is None]
    if expected.tzinfo is None:
        expected = expected.replace(tzinfo=UTC)
    assert utc.tolist() == [_micros(expected)]


@pytest.mark.parametrize(
    "stamp",
    [
        "2026-13-01T00:00:00",
        "0000-01-01T00:00:00",
        "2026-01-01 00:00:00",
        "2026-01-01T24:00:00",
        "2026-01-01T00:00:00+0200",
        "2026-02-30T00:00:00.000000+00:00",
        "2026-01-01",
    ],
)
def test_bad_stamps(stamp: str) -> None:
    assert convert_stamps([stamp.encode()], UTC) is None
    assert convert_stamps([b"2026-01-01T00:00:00", stamp.encode()], UTC) is None


def test_many_stamps_at_once() -> None:
    base = datetime(2026, 1, 1, tzinfo=UTC)
    whens = [base + timedelta(seconds=i * 3.7) for i in range(1000)]
    texts = [w.isoformat(timespec="microseconds").encode() for w in whens]
    texts += [w.replace(tzinfo=None).isoformat().encode() for w in whens]
    converted = convert_stamps(texts, UTC)
    assert converted is not None
    utc, naive = converted
    assert utc.tolist() == [_micros(w) for w in whens] * 2
    assert naive.tolist() == [False] * 1000 + [True] * 1000
    assert utc.dtype == np.int64


@given(contents)
def test_unescape_is_the_parsers(text: str) -> None:
    assert unescape(text) == fmt.unescape_content(text)
    escaped = fmt.escape_content(text)
    assert unescape(escaped) == fmt.unescape_content(escaped) == text
