"""Shared pieces of the widgets: figures as PNG images, DataFrames as HTML, a status line.

Plots are drawn on a :class:`matplotlib.figure.Figure` made without pyplot (no global figure
registry, nothing shown twice by the inline backend) and shown in an ``ipywidgets.Image``;
tables are ``ipywidgets.HTML``. Both are plain widget state, so a test outside a kernel reads
exactly what a browser shows (``Output`` widgets only capture inside a kernel).

Every widget is an ``ipywidgets.VBox`` (:class:`View`), so it composes like any widget:
``ipywidgets.VBox([tuner, stepper])``, a ``Tab``'s children. This module imports ipywidgets, so
it is imported only when a widget is first used (``memorylab.widgets`` is lazy).
"""

from __future__ import annotations

import html
import io
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memorylab.errors import MemorylabError, PrerequisiteError

try:
    import ipywidgets
except ImportError as _missing:  # pragma: no cover - ipywidgets is a core dependency
    raise PrerequisiteError(
        "memorylab's widgets need ipywidgets: pip install 'ipywidgets>=8.1'"
    ) from _missing

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


PROVIDER_MODELS = (
    ("OPENAI_API_KEY", "gpt-4o-mini"),
    ("ANTHROPIC_API_KEY", "anthropic/claude-haiku-4-5"),
    ("GEMINI_API_KEY", "gemini/gemini-2.0-flash"),
    ("GROQ_API_KEY", "groq/llama-3.1-8b-instant"),
)
"""A cheap model per provider key: offered when the key is in the environment."""

OFFLINE_ENV = "MEMORYLAB_OFFLINE"
"""Set to ``1`` to never offer a real model, even with a provider key in the environment."""


def import_widgets() -> Any:
    """``ipywidgets`` (this module's import says how to install it when it is missing)."""
    return ipywidgets


def offered_models(offline: Iterable[str]) -> list[str]:
    """``offline``, then a real model when a provider key is set (and ``$MEMORYLAB_OFFLINE`` is
    not)."""
    if os.environ.get(OFFLINE_ENV, "").strip() not in ("", "0"):
        return list(offline)
    real = [model for key, model in PROVIDER_MODELS if os.environ.get(key)]
    return [*offline, *real[:1]]


def new_axes(size: tuple[float, float] = (8.0, 3.6)) -> tuple[Figure, Axes]:
    """A figure (no pyplot) and its one Axes, for the ``plot_*(…, ax=)`` helpers."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=size, layout="constrained")
    return figure, figure.subplots()


def figure_png(figure: Figure, dpi: int = 96) -> bytes:
    """The figure as PNG bytes (for an ``ipywidgets.Image``)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


_TABLE_CSS = (
    "<style>"
    # The table scrolls sideways in a box narrower than its columns; the box around it (an
    # ipywidgets HTML's content, a flex item) may then shrink below the table's width.
    ".mlab-scroll{overflow-x:auto;max-width:100%}"
    ".widget-html-content:has(>.mlab-scroll),.jupyter-widget-html-content:has(>.mlab-scroll)"
    "{min-width:0}"
    ".mlab-table{border-collapse:collapse;font-family:system-ui,-apple-system,'Segoe UI',"
    "sans-serif;font-size:12px;line-height:1.4;color:#1f2328}"
    # Headers and labels wrap between words when the columns do not fit (numbers never do).
    ".mlab-table th{background:#f6f8fa;text-align:right;padding:3px 6px;"
    "border-bottom:1px solid #d0d7de;vertical-align:bottom}"
    ".mlab-table td{padding:3px 6px;border-bottom:1px solid #eaeef2;text-align:right;"
    "vertical-align:top}"
    ".mlab-table td.mlab-text{text-align:left;white-space:pre-wrap;word-break:break-word;"
    "max-width:60em}"
    ".mlab-table td.mlab-label{text-align:left}"
    ".mlab-table tr.mlab-hl td{background:#fff8c5;font-weight:600}"
    ".mlab-table td.mlab-flag{color:#cf222e;font-weight:600}"
    "</style>"
)


def _cell(value: Any, formats: dict[str, Callable[[Any], str]] | None, column: str) -> str:
    if formats and column in formats:
        return formats[column](value)
    if isinstance(value, float):
        if value != value:  # NaN
            return ""
        return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def marked_html(text: str, query: str = "", clip: int = 0) -> str:
    """``text`` HTML-escaped, each case-insensitive occurrence of ``query`` in ``<mark>``.

    With ``clip`` (characters), a longer text is cut to ``clip`` characters around its first
    match (or from its start), with ``…`` where it was cut, so a match deep in a long message
    is still shown.
    """
    matches = list(re.finditer(re.escape(query), text, re.IGNORECASE)) if query else []
    start, end = 0, len(text)
    if clip and len(text) > clip:
        first = matches[0].start() if matches else 0
        start = max(0, min(first - clip // 3, len(text) - clip + 1))
        end = start + clip - 1
    pieces = ["…"] if start > 0 else []
    at = start
    for match in matches:
        if match.start() < at:
            continue
        if match.start() >= end:
            break
        stop = min(match.end(), end)
        found = html.escape(text[match.start() : stop])
        pieces += [html.escape(text[at : match.start()]), f"<mark>{found}</mark>"]
        at = stop
    pieces.append(html.escape(text[at:end]))
    if end < len(text):
        pieces.append("…")
    return "".join(pieces)


def frame_html(
    frame: pd.DataFrame,
    *,
    max_rows: int = 50,
    highlight: Iterable[int] = (),
    text_columns: Sequence[str] = (),
    label_columns: Sequence[str] = (),
    formats: dict[str, Callable[[Any], str]] | None = None,
    clip: int = 300,
    mark: str = "",
    more_hint: str = "narrow the filter",
    flagged: Mapping[str, Iterable[int]] | None = None,
) -> str:
    """A compact HTML table of ``frame`` (the first ``max_rows`` rows; rows at the positions
    in ``highlight`` marked). ``text_columns`` are left-aligned, wrapped and clipped at ``clip``
    chars, and every occurrence of ``mark`` in them (case-insensitive) is wrapped in ``<mark>``
    (the clipped part shows the first one); ``label_columns`` are left-aligned. Headers and
    labels wrap between words only when the columns do not fit, and a table narrower still
    scrolls sideways in its box. ``more_hint`` says what to do about rows beyond ``max_rows``.
    ``flagged`` names, per column, the row positions whose cell is drawn in red (a value to
    worry about)."""
    marked = set(highlight)
    red = {column: set(rows) for column, rows in (flagged or {}).items()}
    columns = [str(c) for c in frame.columns]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = []
    for position, row in enumerate(frame.head(max_rows).itertuples(index=False, name=None)):
        cells = []
        for column, value in zip(columns, row, strict=True):
            text = _cell(value, formats, column)
            if column in text_columns:
                cells.append(f'<td class="mlab-text">{marked_html(text, mark, clip)}</td>')
            elif column in label_columns:
                cells.append(f'<td class="mlab-label">{html.escape(text)}</td>')
            elif position in red.get(column, ()):
                cells.append(f'<td class="mlab-flag">{html.escape(text)}</td>')
            else:
                cells.append(f"<td>{html.escape(text)}</td>")
        css = ' class="mlab-hl"' if position in marked else ""
        body.append(f"<tr{css}>{''.join(cells)}</tr>")
    more = ""
    if len(frame) > max_rows:
        more = (
            f'<div style="color:#57606a;font-size:12px">… {len(frame) - max_rows:,} more rows '
            f"({html.escape(more_hint)})</div>"
        )
    if not body:
        body.append(f'<tr><td colspan="{max(1, len(columns))}">(no rows)</td></tr>')
    return (
        f'{_TABLE_CSS}<div class="mlab-scroll"><table class="mlab-table">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>{more}"
    )


def status_html(text: str, *, error: bool = False) -> str:
    """A one-line status (an error in red)."""
    color = "#cf222e" if error else "#57606a"
    return (
        f'<div style="color:{color};font-family:system-ui,sans-serif;font-size:12px">'
        f"{html.escape(text)}</div>"
    )


def widget_tree(root: Any) -> list[Any]:
    """``root`` and every widget under it: its children, theirs, and each one's layout and style
    (widgets too, each with a comm in a kernel), each once."""
    found: dict[int, Any] = {}
    stack = [root]
    while stack:
        widget = stack.pop()
        if id(widget) in found:
            continue
        found[id(widget)] = widget
        for name in ("children", "layout", "style"):
            value = getattr(widget, name) if widget.has_trait(name) else None
            items = value if isinstance(value, tuple | list) else (value,)
            stack.extend(item for item in items if isinstance(item, ipywidgets.Widget))
    return list(found.values())


class View(ipywidgets.VBox):  # type: ignore[misc]  # ipywidgets has no type information
    """Base of the widgets: each one IS an ``ipywidgets.VBox``, so it composes like any widget
    (``ipywidgets.VBox([tuner, stepper])``, ``Tab(children=[explorer])``) and displays itself.

    A subclass builds its controls, then calls ``super().__init__(children, layout=...)``
    (attributes set before that are plain Python attributes; none of them may be named like a
    trait of ``VBox``: ``children``, ``layout``, ``keys``, ``comm``, ``log``, ``tooltip`` …).
    ``widget`` is the view itself (what it was before the widgets were boxes: the box to put in
    a layout). ``error`` holds the message of the last library error a control change caused
    (shown in the status line instead of a traceback in the browser), or ``None``.
    """

    status: Any
    error: str | None = None

    @property
    def widget(self) -> View:
        """The widget itself: ``view.widget`` is ``view`` (kept for notebooks written before
        the views were ipywidgets boxes)."""
        return self

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        """The live widget for a kernel, and one line for every static rendering.

        ipywidgets' own bundle holds the widget view and, as ``text/plain``, the repr cut at
        110 characters. A static rendering (nbconvert, GitHub, a notebook opened without its
        kernel) cannot show the view, so it falls back to ``text/html`` or ``text/plain``: both
        say what this widget shows, in one line. A closed widget has no view: only the line.
        """
        data: dict[str, Any] = {}
        if self.comm is not None:
            data.update(super()._repr_mimebundle_(**kwargs) or {})
        line = repr(self)
        data["text/plain"] = line
        data["text/html"] = (
            '<div class="mlab-static" style="font-family:ui-monospace,monospace;font-size:12px;'
            f'color:#57606a">{html.escape(line)} <i>(an interactive widget: run the notebook '
            "to use it)</i></div>"
        )
        return data

    def _report(self, error: MemorylabError | None, note: str = "") -> None:
        self.error = None if error is None else str(error)
        if error is not None:
            self.status.value = status_html(f"{type(error).__name__}: {error}", error=True)
        else:
            self.status.value = status_html(note)

    def close(self) -> None:
        """Close this widget and every widget in it (frees their comms in a kernel).

        A box holding this widget closes only itself when it is closed (ipywidgets never
        closes a box's children; the browser removes their views with the box's): close the
        memorylab widgets in it too.
        """
        for widget in widget_tree(self):
            if widget is not self:
                widget.close()
        super().close()
        # ipywidgets' close sets _repr_mimebundle_ to None on the instance: keep the class's,
        # so a closed widget still has its one line (and no view).
        self.__dict__.pop("_repr_mimebundle_", None)
