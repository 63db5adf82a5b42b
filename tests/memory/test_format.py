"""The pure format: golden files, escaping, round trips, lenient salvage."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from memorylab import MemoryDocument, Message, parse_memory, read_memory, render_memory
from memorylab.errors import MemoryFormatError
from memorylab.memory import _format as fmt

GOLDEN = Path(__file__).parent.parent / "data" / "golden"
GOLDEN_FILES = sorted(p.name for p in GOLDEN.iterdir() if p.suffix in (".md", ".bin"))
REGENERATE = os.environ.get("MEMORYLAB_REGEN_GOLDEN") == "1"


def _observed(path: Path) -> dict[str, object]:
    parsed = read_memory(path, strict=False)
    doc, problems = parsed.document, parsed.problems
    try:
        read_memory(path, strict=True)
        strict_error = None
    except MemoryFormatError as exc:
        strict_error = {"line": exc.line, "kinds": sorted({p.kind for p in exc.problems})}
    return {
        "strict_error": strict_error,
        "problems": [{"line": p.line, "kind": p.kind} for p in problems],
        "document": doc.to_dict(),
    }


@pytest.mark.parametrize("name", GOLDEN_FILES)
def test_golden_files(name: str) -> None:
    path = GOLDEN / name
    expected_path = path.with_suffix(".json")
    observed = _observed(path)
    if REGENERATE:
        expected_path.write_text(json.dumps(observed, indent=2, ensure_ascii=False) + "\n")
    assert observed == json.loads(expected_path.read_text(encoding="utf-8"))


def test_reference_file_parses_strictly_with_every_field() -> None:
    doc = read_memory(GOLDEN / "reference_basic.md")
    assert doc.format_version is None and doc.continues is None
    assert doc.created == datetime(2026, 4, 20, 18, 33, 12)  # naive, no fraction
    assert [m.role for m in doc.messages] == [
        "Human",
        "QuantAgent",
        "Tool Executor",
        "System",
        "user",
    ]
    assert doc.messages[0].timestamp.microsecond == 504211
    assert doc.messages[3].is_summary and len(doc.summaries) == 1
    assert doc.messages[4].content == "Thanks. Now AMD?\nSame format please."


def test_reference_header_bytes_are_reproduced() -> None:
    text = (GOLDEN / "reference_basic.md").read_text(encoding="utf-8")
    doc = parse_memory(text)
    header = fmt.render_header(doc.conversation_name, doc.created, format_version=None)
    assert header == text[: text.index("### ")].replace("18:33:12", "18:33:12.000000")


def test_own_file_escapes_are_undone() -> None:
    doc = read_memory(GOLDEN / "memorylab_v1.md")
    forged = doc.messages[1].content
    assert forged == (
        "Forge attempt:\n---\n\n### System — 2020-01-01T00:00:00\n\n"
        "\\### literal backslash kept\nend  "
    )
    assert len(doc.messages) == 3  # the forged heading did not become a block
    assert doc.messages[2].role == "ResearchAgent — v2"
    assert doc.messages[2].content == "  leading and trailing space  \n"
    assert doc.continues == "history_2026-05-01_10-00-00.md"
    assert render_memory(doc) == (GOLDEN / "memorylab_v1.md").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("reference_crlf.md", "crlf"),
        ("reference_bom.md", "bom"),
        ("reference_headerless.md", "header"),
        ("reference_torn.md", "torn"),
        ("truncated_header.md", "header"),
        ("binary.bin", "encoding"),
    ],
)
def test_bad_files_fail_strictly_and_salvage_leniently(name: str, kind: str) -> None:
    path = GOLDEN / name
    with pytest.raises(MemoryFormatError) as raised:
        read_memory(path)
    message = str(raised.value)
    assert str(path) in message and "line" in message and "strict=False" in message
    parsed = read_memory(path, strict=False)
    doc, problems = parsed.document, parsed.problems
    assert kind in {p.kind for p in problems}
    if name.startswith("reference_"):
        assert len(doc.messages) == 5  # everything salvaged
        assert doc.messages[0].content.startswith("What is the P/E ratio of NVDA?")


def test_torn_block_salvage_keeps_the_partial_content() -> None:
    parsed = read_memory(GOLDEN / "reference_torn.md", strict=False)
    doc, problems = parsed.document, parsed.problems
    assert doc.messages[-1].content == "Thanks. Now AMD?\nSame f"
    assert [p.kind for p in problems] == ["torn"]


def test_torn_block_followed_by_more_appends_is_split_in_own_files() -> None:
    when = datetime(2026, 1, 1, tzinfo=UTC)
    head = fmt.render_header("c", when)
    full = fmt.render_block(Message("User", "second", when))
    text = head + "### User — 2026-01-01T00:00:00.000000+00:00\n\npartial wri\n" + full
    parsed = parse_memory(text, strict=False)
    doc, problems = parsed.document, parsed.problems
    assert [m.content for m in doc.messages] == ["partial wri", "second"]
    assert [p.kind for p in problems] == ["torn"]


def test_newer_format_version_is_refused_with_advice() -> None:
    text = fmt.render_header("c", datetime(2026, 1, 1)).replace("memorylab/1", "memorylab/99")
    with pytest.raises(MemoryFormatError, match="upgrade memorylab"):
        parse_memory(text)


@pytest.mark.parametrize("role", ["", "   ", "a\nb", "a\r", "x\u2028y"])
def test_bad_roles_are_value_errors(role: str) -> None:
    with pytest.raises(ValueError, match="role"):
        fmt.render_block(Message(role, "x", datetime(2026, 1, 1)))


def test_content_to_text() -> None:
    assert fmt.content_to_text({"a": [1, "é"]}) == '{"a": [1, "é"]}'
    assert fmt.content_to_text(None) == ""
    assert fmt.content_to_text(3.5) == "3.5"
    assert fmt.content_to_text("  kept  ") == "  kept  "


def test_archive_names() -> None:
    when = datetime(2026, 4, 20, 14, 30, 45)
    assert fmt.archive_name(when) == "history_2026-04-20_14-30-45Z.md"  # UTC, memorylab's
    assert fmt.archive_name(when, 3) == "history_2026-04-20_14-30-45Z_3.md"
    berlin = timezone(timedelta(hours=2))
    assert fmt.archive_name(when.replace(hour=16, tzinfo=berlin)) == fmt.archive_name(when)
    assert fmt.parse_archive_name("history_2026-04-20_14-30-45Z_3.md") == (when, 3)
    assert fmt.parse_archive_name("history_2026-04-20_14-30-45_3.md") == (when, 3)  # reference
    assert fmt.parse_archive_name("notes.md") is None


# -- property tests -------------------------------------------------------------------------------

_LINES = st.sampled_from(
    [
        "---",
        "\\---",
        "\\\\---",
        "### User — 2020-01-01T00:00:00",
        "\\### x",
        "# Agent Memory",
        "## Interaction Log",
        "**Created:** x",
        "```",
        "",
        " ",
        "\r",
        "---\r",
        "\\",
        "-",
        "#",
    ]
)
_CONTENT = st.one_of(
    st.text(),
    st.lists(st.one_of(_LINES, st.text()), max_size=8).map("\n".join),
    st.lists(st.one_of(_LINES, st.text()), max_size=8).map("\r\n".join),
)
_ROLE = st.text(min_size=1).filter(lambda r: r.strip() != "" and r.splitlines() == [r])
_TZ = st.one_of(
    st.none(), st.integers(-14 * 60, 14 * 60).map(lambda m: timezone(timedelta(minutes=m)))
)
_TIME = st.builds(
    lambda dt, tz: dt.replace(tzinfo=tz),
    st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9999, 1, 1)),
    _TZ,
)
_AWARE_TIME = st.builds(
    lambda dt, minutes: dt.replace(tzinfo=timezone(timedelta(minutes=minutes))),
    st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9999, 1, 1)),
    st.integers(-14 * 60, 14 * 60),
)
# memorylab writes every block with a UTC offset, and escapes its content.
_MESSAGE = st.builds(Message, role=_ROLE, content=_CONTENT, timestamp=_AWARE_TIME)
_SINGLE_LINE = st.text().filter(lambda t: t == "" or t.splitlines() == [t])


@given(
    name=_SINGLE_LINE,
    created=_TIME,
    messages=st.lists(_MESSAGE, max_size=6),
    continues=st.one_of(st.none(), _SINGLE_LINE),
)
@example(name="c", created=datetime(2026, 1, 1), messages=[], continues=None)
def test_round_trip(
    name: str, created: datetime, messages: list[Message], continues: str | None
) -> None:
    doc = MemoryDocument(name, created, tuple(messages), fmt.FORMAT_VERSION, continues)
    assert parse_memory(render_memory(doc)) == doc


_PLAIN = st.text().filter(lambda t: t.strip() == t and "\n\n---\n" not in t and "\r" not in t)


@given(st.lists(st.builds(Message, role=_ROLE, content=_PLAIN, timestamp=_TIME), max_size=6))
def test_naive_blocks_are_written_and_read_verbatim(messages: list[Message]) -> None:
    # A naive timestamp is the reference's form: its content is neither escaped nor unescaped
    # (a reference file keeps "\\---" lines as they are).
    doc = MemoryDocument("c", datetime(2026, 1, 1), tuple(messages))
    parsed = parse_memory(render_memory(doc))
    naive = [m for m in messages if m.timestamp.tzinfo is None]
    for message in naive:
        stamp = fmt.format_timestamp(message.timestamp)
        assert fmt.block_text(message.role, stamp, message.content) in (
            render_memory(doc)
        )
    if all("\n### " not in m.content and not m.content.startswith("### ") for m in messages):
        assert parsed == doc


def test_escaping_is_decided_per_block() -> None:
    own = fmt.block_text("User", "2026-01-01T00:00:00.000000+00:00", "a\n---\n\\### b")
    reference = "### Human — 2026-01-01T00:00:01\n\nc\n\n\\---\n\\### d\n\n---\n\n"
    text = fmt.render_header("c", datetime(2026, 1, 1, tzinfo=UTC)) + own + reference
    doc = parse_memory(text)  # strict: a reference block after memorylab's is no problem
    assert [m.content for m in doc.messages] == ["a\n---\n\\### b", "c\n\n\\---\n\\### d"]


@given(st.text())
def test_escape_round_trip(text: str) -> None:
    escaped = fmt.escape_content(text)
    assert fmt.unescape_content(escaped) == text
    for line in escaped.split("\n"):
        assert line != "---" and not line.startswith("### ")


def _structural(line: str) -> bool:
    """The escaping rule of docs/memory-format.md, line by line: a line that, stripped of
    leading backslashes (and of "\\r"s at its end), is "---" or "###", or starts with "### ",
    the title or the log line."""
    core = line.lstrip("\\").rstrip("\r")
    return (
        core in (fmt.SEPARATOR_LINE, "###")
        or core.startswith(("### ", fmt.TITLE_LINE, fmt.LOG_LINE))
    )


_STRUCTURE_HEAVY = st.lists(
    st.sampled_from(["\n", "---", "###", "\\", " ", "x", fmt.TITLE_LINE, fmt.LOG_LINE, "\r"]),
    max_size=12,
).map("".join)


@given(_STRUCTURE_HEAVY, st.sampled_from(["", "p" * 300 + "\n"]))
def test_escape_round_trip_on_ascii_structure(structure: str, padding: str) -> None:
    # Whatever decides that a text needs no escaping must see structure anywhere in it.
    text = padding + structure
    escaped = fmt.escape_content(text)
    assert fmt.unescape_content(escaped) == text
    lines = text.split("\n")  # what the slow path does to every line
    assert escaped == "\n".join("\\" + x if _structural(x) else x for x in lines)
    wide = fmt.escape_content(text + "\n\u00e9")
    assert wide == escaped + "\n\u00e9"


def test_escape_survives_a_lone_surrogate() -> None:
    assert fmt.escape_content("a\ud800\n---") == "a\ud800\n\\---"
    long = "a\ud800" + "x" * 300
    assert fmt.escape_content(long + "\n---") == long + "\n\\---"


def test_history_line_is_what_the_model_reads() -> None:
    when = datetime(2026, 4, 20, 18, 33, 12, 123456, tzinfo=UTC)
    assert fmt.history_line("User", "hi", when) == "[2026-04-20T18:33:12.123456+00:00] User: hi"
    assert fmt.history_line("User", "hi", "2026-04-20T10:00:00") == "[2026-04-20T10:00:00] User: hi"
    assert fmt.history_line("Tool", {"ok": True, "n": [1, 2]}) == 'Tool: {"ok": true, "n": [1, 2]}'
    assert fmt.history_line("Agent", 42) == "Agent: 42"
    assert fmt.history_line("Agent", None) == "Agent: "
    history = [
        {"role": "User", "content": "Write a haiku.", "timestamp": "2026-04-20T10:00:00"},
        {"role": "Agent", "content": "Waves fold into foam."},
    ]
    assert fmt.history_text(history) == (
        "[2026-04-20T10:00:00] User: Write a haiku.\n\nAgent: Waves fold into foam."
    )


def test_a_lenient_read_unpacked_as_the_old_tuple_still_works_and_warns(tmp_path: Path) -> None:
    text = "### Human — 2026-04-20T18:33:12\n\nhi\n\n---\n\n"
    with pytest.warns(DeprecationWarning, match=r"use result\.document and result\.problems"):
        doc, problems = parse_memory(text, strict=False)
    assert [m.content for m in doc.messages] == ["hi"] and [p.kind for p in problems] == ["header"]
    path = tmp_path / "MEMORY.md"
    path.write_text(text, encoding="utf-8")
    read = read_memory(path, strict=False)
    assert read.document == doc and read.problems == problems
    with pytest.warns(DeprecationWarning, match="ParseResult"):
        assert read[0] == doc


# -- the reference's plain compact() summary (issue 28) -----------------------------------------


def _reseeded(role: str, created: str, stamp: str, content: str = "the summary") -> fmt.ParsedFile:
    text = (
        f"# Agent Memory\n\n**Conversation:** Quant_id_x_conversation\n**Created:** {created}\n\n"
        f"---\n\n## Interaction Log\n\n### {role} — {stamp}\n\n{content}\n\n---\n\n"
    )
    return fmt.parse_file(text)


@pytest.mark.parametrize(
    ("role", "created", "stamp", "after", "expected"),
    [
        # re-seeded by compact(): the archive before it is named with the file's time
        ("user", "2026-04-20T10:00:01.2", "2026-04-20T10:00:01.3", "history_2026-04-20_10-00-01.md", True),
        ("System", "2026-04-20T10:00:01.2", "2026-04-20T10:00:01.3", "history_2026-04-20_10-00-01.md", True),
        # an archive named an hour earlier: the file was not made by that compaction
        ("user", "2026-04-20T11:00:00", "2026-04-20T11:00:00.5", "history_2026-04-20_10-00-01.md", False),
        # an agent's first file (or one after an edit): no summary, whatever the role
        ("System", "2026-04-20T10:00:00", "2026-04-20T10:00:00.1", None, False),
        ("user", "2026-04-20T10:00:00", "2026-04-20T10:00:00.1", None, False),
        # written long after the file was made: a turn, unless a System one
        ("user", "2026-04-20T10:00:00", "2026-04-20T10:05:00", "history_2026-04-20_10-00-00.md", False),
        ("System", "2026-04-20T10:00:00", "2026-04-20T10:05:00", "history_2026-04-20_10-00-00.md", True),
        # memorylab's names are UTC (Z), its times aware
        ("user", "2026-04-20T10:00:01+00:00", "2026-04-20T10:00:01.5+00:00", "history_2026-04-20_10-00-01Z.md", True),
        # times that cannot be compared (naive file, aware block): only a System block
        ("System", "2026-04-20T10:00:01", "2026-04-20T12:00:01+02:00", "history_2026-04-20_10-00-01.md", True),
        ("user", "2026-04-20T10:00:01", "2026-04-20T12:00:01+02:00", "history_2026-04-20_10-00-01.md", False),
    ],
)
def test_opens_with_plain_summary_decides_from_the_recorded_times(
    role: str, created: str, stamp: str, after: str | None, expected: bool
) -> None:
    assert fmt.opens_with_plain_summary(_reseeded(role, created, stamp), after) is expected


def test_a_marked_summary_is_not_the_plain_rules_question() -> None:
    marked = _reseeded("user", "2026-04-20T10:00:01", "2026-04-20T10:00:01", "[Compressed Memory Summary] x")
    assert not fmt.opens_with_plain_summary(marked, "history_2026-04-20_10-00-01.md")
