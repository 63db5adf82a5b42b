"""``MemoryExplorer``: browse a workspace's memory — agents, segments, messages, compactions.

A thin view over :func:`memorylab.analysis.memory_df` (messages in timeline order, one segment
per archive and the live MEMORY.md last), :func:`~memorylab.analysis.compactions_df`,
:func:`~memorylab.analysis.token_growth` + :func:`~memorylab.analysis.plot_token_growth`, and
:func:`memorylab.evaluate._cases.cases_from_workspace` (which summary replaced which archive).
Filtering the message table (role, search, segment), marking the search's matches and paging
through the rows are the only things the widget does itself.
"""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import TYPE_CHECKING

from memorylab.compress._policy import Threshold
from memorylab.errors import InvalidSetting, MemorylabError
from memorylab.memory._display import document_html
from memorylab.widgets._common import (
    View,
    figure_png,
    frame_html,
    import_widgets,
    new_axes,
    status_html,
)

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from memorylab.analysis._runs import RunSettings
    from memorylab.evaluate._cases import Case

ALL = "(all)"
"""The filter value that keeps everything."""

MESSAGE_COLUMNS = ("timeline", "segment", "role", "timestamp", "content")
"""The columns of the message table."""

PAGE_SIZES = (20, 40, 100, 250)
"""The page sizes offered (the given ``max_rows`` is added when missing)."""

_SEGMENT_COLORS = ("#ddf4ff", "#fbefff", "#dafbe1", "#fff8c5", "#ffebe9", "#eaeef2")


class MemoryExplorer(View):
    """Explore the memory of a workspace (default: the current one, ``$WORKSPACE_DIR``).

    ``source`` is anything :func:`~memorylab.analysis.memory_df` reads: a workspace, an agent
    folder, a memory file. The token-growth plot is :func:`~memorylab.analysis.token_growth` at
    the settings the agent's ``compactions.jsonl`` records (:attr:`settings`: window,
    threshold, tokenizer, static context, restarts; else 8192 tokens and the default
    threshold); ``context_length``, ``threshold`` and ``model`` override them.

    The message table shows ``max_rows`` rows a page (the page-size picker changes it; the
    previous/next buttons page through, and the line above says "rows a–b of N"); the search's
    matches are marked in the messages.

    State for code and tests: :attr:`frame` / :attr:`problems` (the loaded frames),
    :attr:`agent_frame`, :attr:`table` (the filtered message DataFrame, every page),
    :attr:`page` / :attr:`page_count` / :attr:`page_rows` (the rows shown),
    :attr:`segments` (one row per segment of the agent), :attr:`growth` (the
    :func:`token_growth` frame), :attr:`settings` (the agent's
    :class:`~memorylab.analysis.RunSettings`), :attr:`figure` / :attr:`axes`, :attr:`cases` (the
    agent's compactions as evaluation cases) and :attr:`case` (the one shown).
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | None = None,
        *,
        agent: str | None = None,
        context_length: int | None = None,
        threshold: Threshold | None = None,
        model: str | None = None,
        max_rows: int = 40,
    ) -> None:
        from memorylab.analysis._frames import compactions_df, memory_df_with_problems
        from memorylab.config import resolve_workspace

        widgets = import_widgets()
        self.source = Path(source) if source is not None else resolve_workspace(None)
        self.model = model
        self.max_rows = max_rows
        self._context_length = context_length
        self._threshold = threshold
        read = memory_df_with_problems(self.source)
        self.frame, self.problems = read.frame, read.problems
        self.compactions = compactions_df(self.source)
        agents = [str(a) for a in dict.fromkeys(self.frame["agent"].astype(str))]
        if not agents:
            raise InvalidSetting(
                f"no agent memory found in {self.source}; give a workspace (the folder holding "
                "agents/), an agent folder or a MEMORY.md"
            )
        if agent is not None and agent not in agents:
            raise InvalidSetting(f"no agent {agent!r} in {self.source}; found {agents}")

        style = {"description_width": "70px"}
        self.agent_picker = widgets.Dropdown(
            options=agents, value=agent or agents[0], description="agent", style=style
        )
        self.segment_picker = widgets.Dropdown(description="segment", style=style)
        self.role_picker = widgets.Dropdown(description="role", style=style)
        self.search_box = widgets.Text(
            placeholder="search the messages",
            description="search",
            style=style,
            continuous_update=False,
        )
        self.case_picker = widgets.Dropdown(
            description="compaction",
            style={"description_width": "80px"},
            layout=widgets.Layout(width="460px"),
        )
        self.header = widgets.HTML()
        self.timeline_view = widgets.HTML()
        self.table_view = widgets.HTML()
        self.page_size_picker = widgets.Dropdown(
            options=sorted({*PAGE_SIZES, int(max_rows)}),
            value=int(max_rows),
            description="rows a page",
            style={"description_width": "80px"},
            layout=widgets.Layout(width="170px"),
        )
        self.previous_button = widgets.Button(
            description="previous", icon="chevron-left", layout=widgets.Layout(width="110px")
        )
        self.next_button = widgets.Button(
            description="next", icon="chevron-right", layout=widgets.Layout(width="110px")
        )
        self.page_label = widgets.HTML()
        self.image = widgets.Image(format="png", layout=widgets.Layout(width="100%"))
        self.archive_view = widgets.HTML(layout=widgets.Layout(width="50%"))
        self.summary_view = widgets.HTML(layout=widgets.Layout(width="50%"))
        self.provenance_view = widgets.HTML()
        self.status = widgets.HTML()
        messages = widgets.VBox(
            [
                widgets.HBox([self.segment_picker, self.role_picker, self.search_box]),
                widgets.HBox(
                    [
                        self.previous_button,
                        self.next_button,
                        self.page_size_picker,
                        self.page_label,
                    ]
                ),
                self.table_view,
            ]
        )
        compaction = widgets.VBox(
            [
                self.case_picker,
                widgets.HBox([self.archive_view, self.summary_view]),
                self.provenance_view,
            ]
        )
        self.tabs = widgets.Tab(children=[messages, self.image, compaction])
        for index, title in enumerate(("Messages", "Token growth", "Compactions")):
            self.tabs.set_title(index, title)
        super().__init__(
            [
                widgets.HBox([self.agent_picker, self.header]),
                self.timeline_view,
                self.status,
                self.tabs,
            ],
            layout=widgets.Layout(max_width="1100px"),
        )
        self.table: pd.DataFrame = self.frame.iloc[:0]
        self.page = 0
        self._summary_rows: list[int] = []
        self.figure: Figure | None = None
        self.axes: Axes | None = None
        self.cases: list[Case] = []
        self.case: Case | None = None
        self.agent_picker.observe(lambda _: self._agent_changed(), names="value")
        for control in (self.segment_picker, self.role_picker, self.search_box):
            control.observe(lambda _: self._filter(), names="value")
        self.case_picker.observe(lambda _: self._show_case(), names="value")
        self.page_size_picker.observe(lambda _: self.show_page(0), names="value")
        self.previous_button.on_click(lambda _: self.show_page(self.page - 1))
        self.next_button.on_click(lambda _: self.show_page(self.page + 1))
        self._agent_changed()

    # -- state ----------------------------------------------------------------------------------

    @property
    def agent(self) -> str:
        return str(self.agent_picker.value)

    @property
    def page_size(self) -> int:
        return int(self.page_size_picker.value)

    @property
    def page_count(self) -> int:
        """Pages of the filtered table (at least one, empty or not)."""
        return max(1, -(-len(self.table) // self.page_size))

    @property
    def page_rows(self) -> pd.DataFrame:
        """The rows of the current page, as the table shows them."""
        start = self.page * self.page_size
        return self.table.iloc[start : start + self.page_size]

    @property
    def agent_frame(self) -> pd.DataFrame:
        return self.frame[self.frame["agent"].astype(str) == self.agent]

    @property
    def segments(self) -> pd.DataFrame:
        """One row per segment of the agent: file, kind, messages, first and last time."""
        frame = self.agent_frame
        grouped = frame.groupby("segment", sort=True, observed=True)
        out = grouped.agg(
            file=("file", "first"),
            kind=("kind", "first"),
            messages=("content", "size"),
            first=("timestamp", "min"),
            last=("timestamp", "max"),
        ).reset_index()
        out["file"] = [Path(str(f)).name for f in out["file"]]
        return out

    @property
    def settings(self) -> RunSettings:
        """The agent's settings: its record's, with this explorer's overrides."""
        from memorylab.analysis._runs import run_settings

        recorded = run_settings(self.agent_frame, model=self.model)
        return recorded.given(context_length=self._context_length, threshold=self._threshold)

    @property
    def context_length(self) -> int:
        return int(self.settings.context_length)

    @property
    def threshold(self) -> Threshold:
        return self.settings.threshold

    def __repr__(self) -> str:
        # The folder's name, not its path: this line is what a saved notebook keeps.
        return (
            f"MemoryExplorer({self.source.name!r}, agent={self.agent!r}, "
            f"{len(self.agent_picker.options)} agent(s), {len(self.frame):,} messages)"
        )

    # -- updating -------------------------------------------------------------------------------

    def _agent_changed(self) -> None:
        frame = self.agent_frame
        segments = self.segments
        options: list[tuple[str, int]] = [(ALL, -1)]
        for row in segments.itertuples(index=False):
            live = " (live)" if row.kind == "memory" else ""
            options.append((f"{row.segment} · {row.file}{live} · {row.messages} msgs", row.segment))
        self.segment_picker.options = options
        self.segment_picker.value = -1
        roles = [str(r) for r in dict.fromkeys(frame["role"].astype(str))]
        self.role_picker.options = [ALL, *roles]
        self.role_picker.value = ALL
        records = self.compactions
        records = records[records["agent"].astype(str) == self.agent] if len(records) else records
        self.header.value = (
            '<div style="font-family:system-ui,sans-serif;font-size:13px;padding:4px 8px">'
            f"<b>{len(frame):,}</b> messages in <b>{len(segments)}</b> segment(s) · "
            f"<b>{len(records)}</b> compaction(s) · {html.escape(str(self.source))}<br>"
            f'<span style="color:#57606a">{html.escape(self.settings.describe())}</span></div>'
        )
        self._draw_growth()
        self._load_cases()
        self._filter()

    def _timeline_html(self, selected: int) -> str:
        segments = self.segments
        total = max(1, int(segments["messages"].sum())) if len(segments) else 1
        boxes = []
        for row in segments.itertuples(index=False):
            width = max(4.0, 100.0 * int(row.messages) / total)
            color = _SEGMENT_COLORS[int(row.segment) % len(_SEGMENT_COLORS)]
            live = row.kind == "memory"
            border = "2px solid #0969da" if row.segment == selected else "1px solid #d0d7de"
            label = "MEMORY.md (live)" if live else str(row.file)
            when = "" if row.first != row.first else str(row.first)[:16]
            short = "MEMORY.md (live)" if live else (when[5:] if when else str(row.file))
            boxes.append(
                f'<div title="{html.escape(label)}: {row.messages} messages from '
                f'{html.escape(when)}" style="flex:{width:.2f} 1 0;min-width:0;'
                f"background:{color};border:{border};border-radius:4px;padding:2px 4px;"
                'overflow:hidden;white-space:nowrap;text-overflow:ellipsis;font-size:11px">'
                f"<b>{row.segment}</b> {html.escape(short)}<br>{row.messages} msgs</div>"
            )
        arrow = '<div style="align-self:center;color:#57606a;padding:0 2px">→</div>'
        return (
            '<div style="font-family:system-ui,sans-serif;font-size:12px;color:#57606a">'
            "Segments, oldest archive → live file (hover for the file name)</div>"
            f'<div style="display:flex;gap:2px;align-items:stretch">{arrow.join(boxes)}</div>'
        )

    def _filter(self) -> None:
        frame = self.agent_frame
        segment = self.segment_picker.value
        if segment is not None and segment != -1:
            frame = frame[frame["segment"] == segment]
        role = self.role_picker.value
        if role not in (None, ALL):
            frame = frame[frame["role"].astype(str) == role]
        query = str(self.search_box.value or "").strip()
        if query:
            frame = frame[frame["content"].str.contains(query, case=False, regex=False)]
        self.table = frame[list(MESSAGE_COLUMNS)].reset_index(drop=True)
        self._summary_rows = [i for i, s in enumerate(frame["is_summary"].tolist()) if s]
        self.timeline_view.value = self._timeline_html(-1 if segment is None else int(segment))
        self.show_page(0)
        self._report(None, "")

    def show_page(self, page: int) -> None:
        """Show page ``page`` (from 0; clamped to the pages there are) of the filtered table."""
        self.page = min(max(0, int(page)), self.page_count - 1)
        start = self.page * self.page_size
        rows = self.page_rows
        shown = rows.assign(
            timestamp=rows["timestamp"].astype(str).str.slice(0, 19).str.replace("T", " ")
        )
        summaries = [i - start for i in self._summary_rows if start <= i < start + len(rows)]
        query = str(self.search_box.value or "").strip()
        total = len(self.table)
        where = f"rows {start + 1:,}–{start + len(rows):,} of {total:,}" if total else "no rows"
        self.page_label.value = (
            f'<div style="font-size:12px;color:#57606a;padding:6px 8px">{where} · page '
            f"{self.page + 1:,} of {self.page_count:,}</div>"
        )
        self.previous_button.disabled = self.page == 0
        self.next_button.disabled = self.page >= self.page_count - 1
        matched = f"; matches of “{html.escape(query)}” marked" if query else ""
        self.table_view.value = (
            f'<div style="font-size:12px;color:#57606a">{total:,} of '
            f"{len(self.agent_frame):,} messages ({where}); summaries highlighted{matched}</div>"
            + frame_html(
                shown,
                max_rows=self.page_size,
                highlight=summaries,
                text_columns=("content",),
                mark=query,
            )
        )

    def _draw_growth(self) -> None:
        from memorylab.analysis._growth import token_growth
        from memorylab.analysis._plots import plot_token_growth

        try:
            self.growth = token_growth(
                self.agent_frame,
                context_length=self._context_length,
                threshold=self._threshold,
                model=self.model,
            )
        except MemorylabError as error:
            self._report(error)
            return
        figure, axes = new_axes((9.0, 3.6))
        plot_token_growth(self.growth, ax=axes, title=f"Context size of {self.agent}")
        self.figure, self.axes = figure, axes
        self.image.value = figure_png(figure)

    def _load_cases(self) -> None:
        from memorylab.analysis._sources import locate
        from memorylab.evaluate._cases import cases_from_workspace

        folders = {locate(Path(str(f)))[1] for f in self.agent_frame["file"].unique()}
        try:
            self.cases = cases_from_workspace(sorted(folders)) if folders else []
        except MemorylabError as error:
            self.cases = []
            self._report(error)
        options: list[tuple[str, int]] = [
            (f"{i + 1}. {case.metadata.get('archive', case.id)}", i)
            for i, case in enumerate(self.cases)
        ]
        self.case_picker.options = options or [("(no compaction)", -1)]
        self.case_picker.value = options[0][1] if options else -1
        self._show_case()

    def _show_case(self) -> None:
        from memorylab.memory._store import read_memory

        index = self.case_picker.value
        if index is None or index < 0 or index >= len(self.cases):
            self.case = None
            self.archive_view.value = status_html("This agent has not compacted yet.")
            self.summary_view.value = self.provenance_view.value = ""
            return
        case = self.case = self.cases[index]
        try:
            document = read_memory(case.source, strict=False).document
            archive = document_html(document, limit=16)
        except MemorylabError as error:
            archive = status_html(str(error), error=True)
        meta = case.metadata
        facts = [
            ("summarizer", meta.get("summarizer_model")),
            ("summary tokens", meta.get("summary_tokens")),
            ("latency", None if meta.get("latency_s") is None else f"{meta['latency_s']:.3f} s"),
            ("written to", Path(str(meta.get("summary_file", ""))).name),
        ]
        listed = " · ".join(f"{k}: <code>{html.escape(str(v))}</code>" for k, v in facts if v)
        self.archive_view.value = (
            f"<b>Archive it replaced</b> <code>{html.escape(str(meta.get('archive')))}</code>"
            + archive
        )
        self.summary_view.value = (
            f"<b>The summary that replaced it</b><div style='font-size:12px;color:#57606a'>"
            f"{listed}</div>"
            '<pre style="white-space:pre-wrap;word-break:break-word;font-size:12px;line-height:1.4;'
            "background:#fffbe6;border:1px solid #d4a72c;border-radius:6px;padding:8px;"
            f'max-height:520px;overflow:auto">{html.escape(case.summary or "")}</pre>'
        )
        self.provenance_view.value = self._provenance_html(index + 1)

    def _provenance_html(self, generation: int) -> str:
        """Where each sentence of the summary of compaction ``generation`` came from, and what
        it dropped (:func:`~memorylab.analysis.summary_provenance`,
        :func:`~memorylab.analysis.dropped_by`)."""
        from memorylab.analysis import dropped_by, summary_provenance

        try:
            origins = summary_provenance(self.agent_frame, self.agent, generation)
            dropped = dropped_by(self.agent_frame, self.agent, generation)
        except MemorylabError as error:
            return status_html(str(error), error=True)
        if not len(origins):
            return status_html("This compaction wrote no summary (its strategy keeps or trims).")
        shown = origins[["sentence", "score", "carried", "role", "position", "snippet"]].rename(
            columns={"carried": "from the previous summary", "position": "message"}
        )
        lost = dropped[["fact", "category", "in_previous", "role", "position"]].rename(
            columns={"in_previous": "the previous summary held it", "position": "message"}
        )
        return (
            "<b>Where each sentence came from</b> <span style='font-size:12px;color:#57606a'>"
            "(the archived message or previous-summary sentence it best matches, lexically: "
            "rapidfuzz, 0-100)</span>"
            + frame_html(shown, max_rows=40, text_columns=("sentence", "snippet"), clip=160)
            + "<b>What it dropped</b> <span style='font-size:12px;color:#57606a'>"
            f"({len(dropped):,} extracted fact(s) that what it read held and the summary does "
            "not)</span>"
            + frame_html(lost, max_rows=40, text_columns=("fact",), clip=160)
        )
