"""Rich displays for the memory records: PURE functions from a value to HTML or plain text.

The classes' ``_repr_html_`` / ``__repr__`` hooks call these, so evaluating a
:class:`~memorylab.Conversation`, a :class:`~memorylab.MemoryDocument` or a
:class:`~memorylab.CompactionEvent` in a notebook cell shows something useful:

* :func:`conversation_html` / :func:`conversation_text` — name, file, message count and the
  history as the model reads it (static context, preloaded memory and summaries tagged);
* :func:`document_html` / :func:`document_text` — the header fields (format, lineage) and the
  messages, summaries highlighted;
* :func:`event_html` / :func:`event_text` — what a compaction did (or why it failed).

No I/O, no clock, no environment: the functions read attributes of the value they are given
(a conversation's ``token_counter`` is called when it has one; a conversation is read through
:class:`_Shown`, so this module imports no ``Conversation``). Long histories are shown as their
first and last messages, long contents are clipped; everything is HTML-escaped. The HTML is
self-contained (inline styles only), so it renders the same in Jupyter, voila and nbconvert.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from memorylab.memory._format import content_to_text
from memorylab.memory._records import (
    PRELOAD_PREFIX,
    SUMMARY_PREFIX,
    CompactionEvent,
    EntryKind,
    MemoryDocument,
    entry_kind,
    html_view,
)

MAX_ROWS = 12
"""Messages shown at most: the first and last ``MAX_ROWS // 2``, with a gap row between."""

MAX_CHARS = 600
"""Characters of one message's content shown at most (the rest is elided with ``…``)."""

_BOX = (
    "font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; font-size: 13px; "
    "line-height: 1.4; max-width: 100%; border: 1px solid #d0d7de; border-radius: 6px; "
    "padding: 8px 10px; margin: 4px 0; background: #ffffff; color: #1f2328"
)
_TITLE = "font-weight: 600; font-size: 14px; margin-bottom: 4px"
_META = "color: #57606a; font-size: 12px; margin-bottom: 6px"
_TABLE = "border-collapse: collapse; width: 100%; table-layout: fixed; line-height: 1.35"
_CELL = "border-top: 1px solid #eaeef2; padding: 4px 6px; vertical-align: top; text-align: left"
_CONTENT = (
    "white-space: pre-wrap; word-break: break-word; font-family: ui-monospace, SFMono-Regular, "
    "Menlo, Consolas, monospace; font-size: 12px; line-height: 1.35; margin: 0"
)
_TAG_STYLES = {
    "summary": "background: #fff8c5; color: #7d4e00",
    "preload": "background: #ddf4ff; color: #0550ae",
    "static": "background: #eaeef2; color: #57606a",
    "failed": "background: #ffebe9; color: #cf222e",
    "ok": "background: #dafbe1; color: #116329",
}
_ROW_STYLES = {"summary": "background: #fffbe6", "preload": "background: #f3faff"}


# --------------------------------------------------------------------------- small pieces


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _clip(text: str, limit: int = MAX_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _stamp(value: Any) -> str:
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    text = "" if value is None else str(value)
    return text[:19].replace("T", " ") if len(text) >= 19 and text[10] == "T" else text


def _tag(kind: str, label: str | None = None) -> str:
    style = _TAG_STYLES.get(kind, _TAG_STYLES["static"])
    return (
        f'<span style="{style}; border-radius: 10px; padding: 0 6px; font-size: 11px; '
        f'margin-left: 4px">{_e(label or kind)}</span>'
    )


def _plural(count: int, word: str, many: str | None = None) -> str:
    return f"{count:,} {word if count == 1 else (many or word + 's')}"


def _window(count: int, limit: int) -> tuple[list[int], int]:
    """Indices to show of ``count`` rows (head and tail), and how many are left out."""
    if count <= limit:
        return list(range(count)), 0
    head = limit // 2
    tail = limit - head
    return [*range(head), *range(count - tail, count)], count - limit


def _kind_of(entry: Mapping[str, Any]) -> str | None:
    kind = entry_kind(entry)
    if kind is not EntryKind.MESSAGE:
        return str(entry["kind"])
    content = entry.get("content")
    if isinstance(content, str):
        if content.startswith(SUMMARY_PREFIX):
            return "summary"
        if content.startswith(PRELOAD_PREFIX):
            return "preload"
    return None


def messages_html(messages: Sequence[Mapping[str, Any]], *, limit: int = MAX_ROWS) -> str:
    """A table of ``{"role", "content", "timestamp"[, "kind"]}`` messages (head and tail)."""
    shown, omitted = _window(len(messages), limit)
    rows = []
    for position, index in enumerate(shown):
        if omitted and position == limit // 2:
            rows.append(
                f'<tr><td colspan="3" style="{_CELL}; color: #57606a; text-align: center">'
                f"… {_plural(omitted, 'more message')} …</td></tr>"
            )
        entry = messages[index]
        kind = _kind_of(entry)
        row_style = _ROW_STYLES.get(kind or "", "")
        role = _e(entry.get("role", ""))
        tag = _tag(kind) if kind else ""
        content = _e(_clip(content_to_text(entry.get("content"))))
        rows.append(
            f'<tr style="{row_style}">'
            f'<td style="{_CELL}; width: 3em; color: #57606a">{index}</td>'
            f'<td style="{_CELL}; width: 11em"><b>{role}</b>{tag}<br>'
            f'<span style="color: #57606a; font-size: 11px">{_e(_stamp(entry.get("timestamp")))}'
            f"</span></td>"
            f'<td style="{_CELL}"><pre style="{_CONTENT}">{content}</pre></td></tr>'
        )
    if not rows:
        rows.append(f'<tr><td style="{_CELL}; color: #57606a">(no messages)</td></tr>')
    return f'<table style="{_TABLE}">{"".join(rows)}</table>'


def _text_rows(messages: Sequence[Mapping[str, Any]], limit: int, width: int = 70) -> list[str]:
    shown, omitted = _window(len(messages), limit)
    lines = []
    for position, index in enumerate(shown):
        if omitted and position == limit // 2:
            lines.append(f"  … {_plural(omitted, 'more message')} …")
        entry = messages[index]
        kind = _kind_of(entry)
        content = " ".join(content_to_text(entry.get("content")).split())
        tag = f" [{kind}]" if kind else ""
        lines.append(f"  {index:>3} {entry.get('role', '')}{tag}: {_clip(content, width)}")
    return lines


# --------------------------------------------------------------------------- conversation


class _Shown(Protocol):
    """What the views read of a :class:`~memorylab.Conversation`."""

    name: str
    agent_name: str | None
    conversation_history: list[dict[str, Any]]
    token_counter: Callable[[str], int] | None

    @property
    def memory_md_path(self) -> Path | None: ...
    def token_count(self) -> int: ...


def _conversation_facts(conv: _Shown) -> tuple[str, str, int | None]:
    path = conv.memory_md_path
    where = str(path) if path is not None else "memory only (not persisted)"
    tokens: int | None = None
    if conv.token_counter is not None:
        try:
            tokens = conv.token_count()
        except Exception:  # a display must never raise
            tokens = None
    return conv.name, where, tokens


def conversation_html(conv: _Shown, *, limit: int = MAX_ROWS) -> str:
    """HTML for a :class:`~memorylab.Conversation`: name, file, size and the history."""
    name, where, tokens = _conversation_facts(conv)
    history = list(conv.conversation_history)
    size = _plural(len(history), "message")
    if tokens is not None:
        size += f" · {tokens:,} tokens"
    agent = f" · agent <b>{_e(conv.agent_name)}</b>" if conv.agent_name else ""
    return (
        f'<div style="{_BOX}">'
        f'<div style="{_TITLE}">Conversation <code>{_e(name)}</code></div>'
        f'<div style="{_META}">{size}{agent} · {_e(where)}</div>'
        f"{messages_html(history, limit=limit)}</div>"
    )


def conversation_text(conv: _Shown, *, limit: int = MAX_ROWS) -> str:
    """Plain text for a :class:`~memorylab.Conversation` (the same facts as the HTML)."""
    name, where, tokens = _conversation_facts(conv)
    history = list(conv.conversation_history)
    size = _plural(len(history), "message") + (f", {tokens:,} tokens" if tokens is not None else "")
    return "\n".join([f"Conversation {name!r}: {size}; {where}", *_text_rows(history, limit)])


# --------------------------------------------------------------------------- document


def _document_meta(doc: MemoryDocument) -> list[tuple[str, str]]:
    fields: list[tuple[str, str]] = []
    if doc.conversation_name is not None:
        fields.append(("conversation", doc.conversation_name))
    if doc.created is not None:
        fields.append(("created", _stamp(doc.created)))
    version = doc.format_version
    shown = "reference (no version)" if version is None else f"memorylab/{version}"
    fields.append(("format", shown))
    if doc.continues:
        fields.append(("continues", doc.continues))
    fields.extend(doc.extra_header)
    return fields


def _doc_messages(doc: MemoryDocument) -> list[dict[str, Any]]:
    return [{"role": m.role, "content": m.content, "timestamp": m.timestamp} for m in doc.messages]


def document_html(doc: MemoryDocument, *, limit: int = MAX_ROWS) -> str:
    """HTML for a :class:`~memorylab.MemoryDocument`: header fields and messages."""
    meta = " · ".join(f"{_e(key)}: <code>{_e(value)}</code>" for key, value in _document_meta(doc))
    counts = _plural(len(doc.messages), "message")
    if doc.summaries:
        counts += f", {_plural(len(doc.summaries), 'summary', 'summaries')}"
    return (
        f'<div style="{_BOX}">'
        f'<div style="{_TITLE}">MemoryDocument · {counts}</div>'
        f'<div style="{_META}">{meta}</div>'
        f"{messages_html(_doc_messages(doc), limit=limit)}</div>"
    )


def document_text(doc: MemoryDocument, *, limit: int = MAX_ROWS) -> str:
    """Plain text for a :class:`~memorylab.MemoryDocument`."""
    meta = ", ".join(f"{key}={value}" for key, value in _document_meta(doc))
    head = f"MemoryDocument: {_plural(len(doc.messages), 'message')}; {meta}"
    return "\n".join([head, *_text_rows(_doc_messages(doc), limit)])


# --------------------------------------------------------------------------- event


def _event_fields(event: CompactionEvent) -> list[tuple[str, str]]:
    fields: list[tuple[str, str]] = [("time", _stamp(event.time))]
    if event.agent:
        fields.append(("agent", event.agent))
    if event.archive:
        fields.append(("archive", event.archive))
    fields.append(("messages archived", f"{event.messages_archived:,}"))
    if event.carried_over:
        fields.append(("carried over", f"{event.carried_over:,}"))
    if event.tokens_before is not None or event.tokens_after is not None:
        before = "?" if event.tokens_before is None else f"{event.tokens_before:,}"
        after = "?" if event.tokens_after is None else f"{event.tokens_after:,}"
        fields.append(("tokens", f"{before} → {after}"))
    if event.summary_tokens is not None:
        fields.append(("summary tokens", f"{event.summary_tokens:,}"))
    elif event.summary_chars:
        fields.append(("summary chars", f"{event.summary_chars:,}"))
    if event.threshold is not None:
        fields.append(("threshold", str(event.threshold)))
    if event.context_length is not None:
        fields.append(("context length", f"{event.context_length:,}"))
    if event.summarizer_model:
        fields.append(("summarizer", event.summarizer_model))
    if event.latency_s is not None:
        fields.append(("latency", f"{event.latency_s:.3f} s"))
    if event.cost_usd is not None:
        fields.append(("cost", f"${event.cost_usd:.6f}"))
    if event.error:
        fields.append(("error", event.error))
    return fields


def event_html(event: CompactionEvent) -> str:
    """HTML for a :class:`~memorylab.CompactionEvent`: a small key/value table."""
    state = _tag("ok", event.kind) if event.ok else _tag("failed", event.kind)
    rows = "".join(
        f'<tr><th style="{_CELL}; width: 11em; font-weight: 500; color: #57606a">{_e(key)}</th>'
        f'<td style="{_CELL}">{_e(_clip(value))}</td></tr>'
        for key, value in _event_fields(event)
    )
    return (
        f'<div style="{_BOX}"><div style="{_TITLE}">CompactionEvent{state}</div>'
        f'<table style="{_TABLE}">{rows}</table></div>'
    )


def event_text(event: CompactionEvent) -> str:
    """Plain text for a :class:`~memorylab.CompactionEvent` (one line per field)."""
    state = "ok" if event.ok else "FAILED"
    lines = [f"CompactionEvent ({event.kind}, {state})"]
    lines += [f"  {key}: {_clip(value, 200)}" for key, value in _event_fields(event)]
    return "\n".join(lines)


html_view.register(MemoryDocument, document_html)
html_view.register(CompactionEvent, event_html)
