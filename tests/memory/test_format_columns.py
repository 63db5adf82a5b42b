"""The column parser (``format.parse_file``) reads every text as the per-block parser it replaced
did (issue 30): the same messages, problems and line numbers, for memorylab's files and the
reference's, whole or torn, forged or hand-edited, given as text or as bytes.

The reference below is that parser's block loop as it was before the columns, kept here (not in
the package: there is one parser): it cuts the text block by block with ``str.find`` and builds a
``Message`` per block. The header, the escaping and the hand-edit rules it shares with the package
did not change.
"""

from __future__ import annotations

import itertools
import re
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memorylab.memory import _format as fmt
from memorylab.memory._records import MemoryDocument, Message

# --------------------------------------------------------------------------- the reference

_ESCAPED = re.compile(r"\n\\(?=" + fmt._STRUCTURE + ")")
_NEXT_BLOCK = "\n\n---\n\n### "


def _unescape(text: str) -> str:
    return text if "\\" not in text else _ESCAPED.sub("\n", "\n" + text)[1:]


def _heading_at(text: str, start: int, stop: int) -> tuple[str, str, int] | None:
    if not text.startswith("### ", start, stop):
        return None
    line_end = text.find("\n", start, stop)
    if line_end < 0:
        return None
    role, dash, stamp = text[start + 4 : line_end].rpartition(" \u2014 ")
    if not dash or fmt._TS_RE.match(stamp) is None:
        return None
    return role, stamp, line_end + 1


def _read_block(
    text: str,
    start: int,
    stop: int,
    heading: tuple[str, str, int] | None,
    closed: bool,
    problems: fmt._Problems,
    messages: list[Message],
) -> None:
    if heading is None:
        line_end = text.find("\n", start, stop)
        found = text[start : stop if line_end < 0 else line_end][:80]
        problems.add(
            start,
            "structure",
            f"expected a block heading '### {{role}} — {{timestamp}}', found {found!r}",
        )
        return
    role, stamp, content_start = heading
    if text.startswith("\n", content_start, stop):
        content_start += 1
    else:
        problems.add(start, "structure", "missing blank line after the heading")
    content_end = stop
    if not closed:
        problems.add(
            start,
            "torn",
            "block is not closed by '---' (an interrupted write?); its content may be cut",
        )
        for tail in fmt._TORN_TAILS:
            if text.endswith(tail, content_start, stop):
                content_end = stop - len(tail)
                break
    try:
        timestamp = datetime.fromisoformat(stamp)
    except ValueError as exc:
        problems.add(
            start,
            "structure",
            f"the heading's timestamp {stamp!r} is not a valid date ({exc}); the block was "
            "skipped: correct the timestamp to read it",
        )
        return
    content = text[content_start:content_end]
    messages.append(
        Message(role, _unescape(content) if fmt.written_by_memorylab(stamp) else content, timestamp)
    )


def _blocks(text: str, start: int, problems: fmt._Problems) -> list[Message]:
    messages: list[Message] = []
    closing = fmt._closing_separator(text, start)
    end = len(text) if closing < 0 else closing
    first = start
    heading = _heading_at(text, start, len(text))
    at = text.find(_NEXT_BLOCK, start)
    while True:
        while at >= 0 and (following := _heading_at(text, at + 7, len(text))) is None:
            at = text.find(_NEXT_BLOCK, at + 1)
        stop = end if at < 0 else at
        if heading is not None and heading[2] > stop:
            heading = None
        torn = at < 0 and closing < 0
        if heading is None and fmt._NOT_SPACE.search(text, first, stop) is None:
            if stop > first and not torn:
                problems.add(first, "structure", "empty block between separators")
        elif (heading is None or fmt.written_by_memorylab(heading[1])) and text.find(
            "\n### ", first, stop
        ) >= 0:
            pieces = [first, *(m.start() + 1 for m in fmt._TORN_AT_RE.finditer(text, first, stop))]
            pieces.append(stop + 1)
            for a, b in itertools.pairwise(pieces):
                closed = b > stop and not torn
                _read_block(text, a, b - 1, _heading_at(text, a, b - 1), closed, problems, messages)
        else:
            _read_block(text, first, stop, heading, not torn, problems, messages)
        if at < 0:
            return messages
        first, heading = at + 7, following
        at = text.find(_NEXT_BLOCK, at + 7)


def reference_parse(text: str) -> tuple[MemoryDocument, list[tuple[int, str, str]]]:
    """The document and ``(line, kind, message)`` problems, as the per-block parser read them."""
    problems = fmt._Problems()
    if text.startswith("\ufeff"):
        problems.add(0, "bom", "the file starts with a byte-order mark (BOM)")
        text = text[1:]
    first_line_end = text.find("\n")
    if first_line_end > 0 and text[first_line_end - 1] == "\r":
        problems.add(0, "crlf", "Windows line ends (CRLF); they were read as '\\n'")
        text = text.replace("\r\n", "\n")
    header: fmt._Header = (None, None, None, None, ())
    if text.startswith(fmt.TITLE_LINE + "\n") or text == fmt.TITLE_LINE:
        marker = text.find(fmt._LOG_MARKER)
        if marker < 0:
            problems.add(len(text), "header", "the header is incomplete (no '## Interaction Log')")
            head, start = text, len(text)
        else:
            head, start = text[: marker + 1], marker + len(fmt._LOG_MARKER)
            start += text.startswith("\n", start)
        header = fmt._parse_header(head, problems)
    else:
        problems.add(0, "header", "missing header (the file should start with '# Agent Memory')")
        found = fmt._HEADING_RE.search(text)
        start = found.start() if found else len(text)
        if fmt._NOT_SPACE.search(text, 0, start):
            problems.add(0, "structure", "text before the first block was skipped")
    if "---" in text or "### " in text:
        text = fmt._tighten(text, start, problems)
    messages = _blocks(text, start, problems)
    name, created, version, continues, extra = header
    document = MemoryDocument(name, created, tuple(messages), version, continues, extra)
    return document, [(p.line, p.kind, p.message) for p in problems.numbered(text)]


def reference_read(data: bytes) -> tuple[MemoryDocument, list[tuple[int, str, str]]]:
    """What ``read_memory(strict=False)`` read of a file's bytes before the columns."""
    try:
        text, leading = data.decode("utf-8"), []
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        leading = [(line, "encoding", f"not UTF-8 at byte {exc.start}")]
        text = data.decode("utf-8", errors="replace")
    document, problems = reference_parse(text)
    return document, leading + problems


def _read(parsed: fmt.ParsedFile) -> tuple[MemoryDocument, list[tuple[int, str, str]]]:
    return parsed.document(), [(p.line, p.kind, p.message) for p in parsed.problems]


# --------------------------------------------------------------------------- texts to read

_LINES = st.sampled_from(
    [
        "---",
        "\\---",
        "---  ",
        "--- x",
        "----",
        "### User — 2020-01-01T00:00:00",
        "### A — 2026-13-01T00:00:00+00:00",
        "### B — 2026-01-01T00:00:00.000000+00:00",
        "### B — 2026-01-01T00:00:00.000000+00:00 ",
        "### C — \u0662\u0660\u0662\u0666-01-01T00:00:00",  # Arabic-Indic digits: \d, no date
        "### x — y",
        "\\### x",
        "### ",
        "###",
        "####",
        "# Agent Memory",
        "## Interaction Log",
        "**Created:** x",
        "```",
        "",
        " ",
        "\t",
        "\r",
        "---\r",
        "\\",
        "—",
        " — ",
        "[Compressed Memory Summary] s",
    ]
)
_CONTENT = st.one_of(
    st.text(max_size=20),
    st.lists(st.one_of(_LINES, st.text(max_size=8)), max_size=8).map("\n".join),
)
_ROLE = st.one_of(
    st.sampled_from(["User", "A — B", "Tool Executor"]),
    st.text(min_size=1, max_size=6).filter(lambda r: r.strip() != "" and r.splitlines() == [r]),
)
_TZ = st.one_of(
    st.none(), st.just(UTC), st.integers(-600, 600).map(lambda m: timezone(timedelta(minutes=m)))
)
_TIME = st.builds(
    lambda dt, tz: dt.replace(tzinfo=tz),
    st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9999, 1, 1)),
    _TZ,
)
_SNIPPETS = st.sampled_from(
    [
        "\n\n---\n\n",
        "\n\n---  \n\n",
        "\n\n---\t\n\n",
        "### R — 2026-01-01T00:00:00.000000+00:00\n\n",
        "\n### R — 2026-01-01T00:00:00.000000+00:00\n\n",
        "### R — 2026-01-01T00:00:00\n\n",
        "### B — 2026-01-01T00:00:00.000000+00:00  \n",
        "\n\n---\n\n### R — 2026-02-30T00:00:00+00:00\n\n",
        "\n\n---\t\n\n### B — 2026-01-01T00:00:00.000000+00:00\t\n\n",
        "\n---\n\n### D — 2026-01-01T00:00:00+00:00\n",
        "\n\n---\n\n### ",
        "\ufeff",
        "\r\n",
        " \n",
        "—",
        "\n",
        "x",
    ]
)


@st.composite
def _texts(draw: st.DrawFn) -> str:
    """A rendered file (either writer's blocks), then cut, spliced, padded or re-ended: torn
    writes, forged headings, hand edits."""
    messages = draw(st.lists(st.builds(Message, _ROLE, _CONTENT, _TIME), max_size=6))
    created = datetime(2026, 1, 1, tzinfo=UTC)
    document = MemoryDocument(
        "c",
        created,
        tuple(messages),
        draw(st.sampled_from([1, None])),
        draw(st.sampled_from([None, "h.md"])),
    )
    text = fmt.render_memory(document)
    for _ in range(draw(st.integers(0, 4))):
        edit = draw(st.integers(0, 6))
        at = draw(st.integers(0, len(text)))
        if edit == 0:
            text = text[:at]
        elif edit == 1:
            text = text[:at] + draw(_SNIPPETS) + text[at:]
        elif edit == 2 and (line_end := text.find("\n", at)) >= 0:
            text = text[:line_end] + draw(st.sampled_from([" ", "\t", " \t"])) + text[line_end:]
        elif edit == 3:
            text = text.replace("\n", "\r\n")
        elif edit == 4:
            text = text[at:]
        elif edit == 5:
            other = draw(st.integers(0, len(text)))
            text = text[: min(at, other)] + text[max(at, other) :]
        elif edit == 6:
            stamp = draw(st.sampled_from(["2026-01-01T00:00:00+00:00", "2026-01-01T00:00:00"]))
            text = text[:at] + fmt.block_text("Z", stamp, draw(_CONTENT)) + text[at:]
    return text


_RAW = st.lists(st.one_of(_LINES, _SNIPPETS, st.text(max_size=5)), max_size=30).map("".join)
_HEADER = (
    "# Agent Memory\n\n**Conversation:** c\n**Created:** 2026-01-01T00:00:00\n\n---\n\n"
    "## Interaction Log\n\n"
)
_FUZZ = settings(deadline=None, suppress_health_check=list(HealthCheck))


# --------------------------------------------------------------------------- the tests


@_FUZZ
@given(_texts())
@example(
    "# Agent Memory\n\n**Conversation:** c\n**Created:** 2026-01-01T00:00:00\n\n---\n\n## Interaction Log\n\n### R — 2026-01-01T00:00:00\n\n---\n\n### S — 2026-01-01T00:00:01\n\nb\n\n---\n\n"
)
def test_the_columns_read_every_file_as_the_per_block_parser_did(text: str) -> None:
    assert _read(fmt.parse_file(text, strict=False)) == reference_parse(text)
    data = text.encode("utf-8", "surrogatepass")
    assert _read(fmt.parse_file(data, strict=False)) == reference_read(data)


@_FUZZ
@given(_RAW, st.booleans())
@example("\n\n---\n\n### \n\n---\n\n### B — 2026-01-01T00:00:00.000000+00:00 \n\n---\n\n", True)
@example("### R — 2026-01-01T00:00:00\n\n---\n\n### S — 2026-01-01T00:00:00\n\nx", True)
def test_the_columns_read_any_text_as_the_per_block_parser_did(text: str, header: bool) -> None:
    text = _HEADER + text if header else text
    assert _read(fmt.parse_file(text, strict=False)) == reference_parse(text)
    data = text.encode("utf-8", "surrogatepass")
    assert _read(fmt.parse_file(data, strict=False)) == reference_read(data)


@_FUZZ
@given(
    _texts(),
    st.integers(0, 10**6),
    st.sampled_from([b"\xff", b"\xe2\x80", b"\xc3", b"\xef\xbb\xbf"]),
)
def test_bytes_that_are_not_utf8_are_read_as_before(text: str, at: int, junk: bytes) -> None:
    data = text.encode("utf-8", "surrogatepass")
    at %= len(data) + 1
    data = data[:at] + junk + data[at:]
    assert _read(fmt.parse_file(data, strict=False)) == reference_read(data)


@given(st.lists(st.builds(Message, _ROLE, _CONTENT, _TIME), max_size=8))
def test_the_columns_round_trip_a_rendered_document(messages: list[Message]) -> None:
    document = MemoryDocument("c", datetime(2026, 1, 1, tzinfo=UTC), tuple(messages), 1, "h.md")
    text = fmt.render_memory(document)
    parsed = fmt.parse_file(text.encode("utf-8", "surrogatepass"), strict=False)
    aware = all(m.timestamp.tzinfo is not None for m in messages)
    if aware:  # memorylab's blocks (escaped) read back exactly
        assert parsed.problems == [] and parsed.document() == document
    assert parsed.blocks.messages() == fmt.parse(text, strict=False).document.messages
    assert fmt.ParsedFile.of(parsed.document()).document() == parsed.document()


def test_blocks_are_columns_and_messages_are_made_when_asked() -> None:
    text = fmt.render_memory(
        MemoryDocument(
            "c",
            datetime(2026, 1, 1, tzinfo=UTC),
            (
                Message("User", "hi\n---\n### x", datetime(2026, 1, 1, 9, tzinfo=UTC)),
                Message("Agent", "ok", datetime(2026, 1, 1, 10, tzinfo=UTC)),
            ),
            1,
        )
    )
    parsed = fmt.parse_file(text)
    assert parsed.blocks.roles == ["User", "Agent"]
    assert parsed.blocks.contents == ["hi\n---\n### x", "ok"]  # unescaped
    assert parsed.blocks.timestamps == [datetime(2026, 1, 1, h, tzinfo=UTC) for h in (9, 10)]
    assert parsed.document() == fmt.parse(text) and parsed.problems == []
