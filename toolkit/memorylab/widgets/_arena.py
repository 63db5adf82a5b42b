"""``SummarizerArena``: compare summarizers on cases, with a progress bar; see what each one lost.

A thin view over :mod:`memorylab.evaluate`: :func:`~memorylab.evaluate.compare_summarizers`
(run one summarizer at a time, so the progress bar moves), :func:`~memorylab.evaluate.
summary_table` (the wide score table: quality cells with their 95% intervals, the bounds'
rows named ``(ceiling)``/``(floor)`` when a comparison has them),
:func:`~memorylab.evaluate.plot_cost_quality`, :func:`~memorylab.evaluate.plot_quality` (the
share of facts kept, by category, from the fact-recall scores) and, for
the side-by-side view, the fact-recall scorer's own facts and
:func:`~memorylab.evaluate.fact_kept` — the same rules that produced the scores.
:func:`comparison_html` is the rich display of a comparison's long-form result.
"""

from __future__ import annotations

import html
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memorylab.errors import InvalidSetting, MemorylabError
from memorylab.widgets._common import (
    View,
    figure_png,
    frame_html,
    import_widgets,
    new_axes,
    offered_models,
    status_html,
)

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from memorylab.evaluate._cases import Case
    from memorylab.evaluate._engine import ComparisonResult
    from memorylab.transcripts import Fact

TABLE_METRICS = (
    "fact_recall.overall",
    "probe_qa.exact",
    "probe_qa.fuzzy",
    "compression.ratio",
    "latency.seconds",
    "cost.usd",
)
"""Columns of the wide table shown first (when present); the others follow."""


def _formats(columns: Iterable[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for column in columns:
        if column.startswith(("fact_recall.", "probe_qa.")):  # shares
            out[column] = lambda v: "" if v != v else f"{float(v):.0%}"
        elif column.startswith("cost."):
            out[column] = lambda v: "" if v != v else f"${float(v):.5f}"
        elif column.startswith("latency."):
            out[column] = lambda v: "" if v != v else f"{float(v):.3f}s"
    return out


def _ordered(table: pd.DataFrame) -> pd.DataFrame:
    first = [c for c in TABLE_METRICS if c in table.columns]
    return table[first + [c for c in table.columns if c not in first]]


def _shown(table: pd.DataFrame, max_columns: int) -> list[str]:
    """The headline metrics, the fact categories, then ``cases``/``errors`` (known values)."""
    from memorylab.transcripts import FACT_CATEGORIES

    wanted = [*TABLE_METRICS, *(f"fact_recall.{c}" for c in FACT_CATEGORIES)]
    columns = [c for c in wanted if c in table.columns and table[c].notna().any()]
    return columns[:max_columns] + [c for c in ("cases", "errors") if c in table.columns]


def comparison_html(results: ComparisonResult | pd.DataFrame, *, max_columns: int = 12) -> str:
    """HTML for a :func:`~memorylab.evaluate.compare_summarizers` result: the wide table (one
    row per summarizer) and the run's counters (requests, cache hits, money spent)."""
    from memorylab.evaluate._engine import ComparisonResult
    from memorylab.evaluate._tables import summary_table

    result = ComparisonResult.of(results)
    scores = result.frame
    marks = summary_table(result)
    table = _ordered(marks.frame)
    columns = _shown(table, max_columns)
    shown = table[columns].copy()
    formats = _formats(columns)
    for column in columns:  # a quality cell with its 95% interval: "42% [35%, 49%]"
        low, high = f"{column}.lo", f"{column}.hi"
        if low in table.columns and high in table.columns and column in formats:
            show = formats.pop(column)
            shown[column] = [
                "" if v != v else f"{show(v)} [{show(lo)}, {show(hi)}]"
                for v, lo, hi in zip(table[column], table[low], table[high], strict=True)
            ]
    roles = {label: kind for kind, label in marks.bounds.items()}
    shown.index = [f"{label} ({roles[label]})" if label in roles else label
                   for label in shown.index]  # fmt: skip
    shown.index.name = "summarizer"
    shown = shown.reset_index()
    run = result.run
    facts = [
        f"{html.escape(k.replace('_', ' '))}: <b>{html.escape(str(v))}</b>"
        for k, v in run.items()
        if k in ("requests", "cache_hits", "spent_usd") and v is not None
    ]
    cases = scores["case"].nunique() if len(scores) else 0
    head = (
        '<div style="font-family:system-ui,sans-serif;font-size:12px;color:#57606a">'
        f"{len(table)} summarizer(s) × {cases} case(s)"
        + (" · " + " · ".join(facts) if facts else "")
        + "</div>"
    )
    return head + frame_html(shown, formats=formats, label_columns=("summarizer",))


def lost_facts(case: Case, summary: str) -> tuple[list[Fact], list[Fact]]:
    """``(kept, lost)``: the case's facts as the fact-recall scorer sees them (its reference
    facts, else those extracted from the history), split by :func:`fact_kept`."""
    from memorylab.evaluate import fact_kept
    from memorylab.evaluate._scorers import FactRecallScorer

    kept: list[Fact] = []
    lost: list[Fact] = []
    for fact in FactRecallScorer().facts(case):
        (kept if fact_kept(fact, summary).kept else lost).append(fact)
    return kept, lost


def _chip(text: str, lost: bool) -> str:
    style = (
        "background:#ffebe9;color:#82071e;border:1px solid #ff8182"
        if lost
        else "background:#dafbe1;color:#116329;border:1px solid #4ac26b"
    )
    shown = text if len(text) <= 80 else text[:79] + "…"
    return (
        f'<span style="{style};border-radius:10px;padding:0 6px;margin:1px;display:inline-block;'
        f'line-height:1.5;font-size:11px">{html.escape(shown)}</span>'
    )


def _column_html(
    label: str, text: str, kept: Sequence[Fact], lost: Sequence[Fact], error: str
) -> str:
    total = len(kept) + len(lost)
    share = f"{len(kept)}/{total} facts kept" if total else "no facts to check"
    body = (
        status_html(f"failed: {error}", error=True)
        if error
        else (
            '<pre style="white-space:pre-wrap;word-break:break-word;font-size:11px;'
            "line-height:1.35;max-height:420px;overflow:auto;background:#f6f8fa;border:1px solid "
            f'#d0d7de;border-radius:6px;padding:6px;margin:4px 0">{html.escape(text)}</pre>'
        )
    )
    chips = "".join(_chip(f"{f.category}: {f.text}", True) for f in lost[:30])
    if len(lost) > 30:
        chips += f" … +{len(lost) - 30} more"
    return (
        '<div style="font-family:system-ui,sans-serif;font-size:12px">'
        f"<b>{html.escape(label)}</b> · {share}{body}"
        + (f"<div><b style='color:#82071e'>lost</b> {chips}</div>" if lost else "")
        + "</div>"
    )


class SummarizerArena(View):
    """Compare ``summarizers`` on ``cases``; the table, the cost-vs-quality plot, side by side.

    ``cases``: :class:`~memorylab.evaluate.Case` objects (default: the bundled transcripts, one
    case per session). ``summarizers``: names or objects as
    :func:`~memorylab.evaluate.compare_summarizers` takes them, or a ``{label: summarizer}``
    mapping (default: the offline baselines, plus a cheap real model when a provider key is
    set). ``scorers``, ``max_tokens``, ``cache_dir``, ``max_cost_usd`` and ``summarizer_args``
    go to ``compare_summarizers``. ``run=True`` runs the comparison at once.

    State for code and tests: :attr:`result` (the :class:`~memorylab.evaluate.ComparisonResult`
    of all of them), :attr:`scores` (its long-form frame), :attr:`summaries` (one row per case
    and summarizer), :attr:`table` (the wide table), :attr:`figure` / :attr:`axes` (cost vs
    quality), :attr:`facts_figure` / :attr:`facts_axes` (the facts kept by category),
    :attr:`progress` (an ``IntProgress``) and :attr:`columns` (per summarizer, the kept and
    lost facts of the case shown).
    """

    def __init__(
        self,
        cases: Case | Iterable[Case] | None = None,
        summarizers: Sequence[Any] | Mapping[str, Any] | None = None,
        *,
        scorers: Sequence[Any] | None = None,
        max_tokens: int | None = 400,
        cache_dir: str | os.PathLike[str] | bool | None = True,
        max_cost_usd: float | None = None,
        summarizer_args: Mapping[str, Any] | None = None,
        run: bool = False,
    ) -> None:
        from memorylab.compress._base import as_summarizer
        from memorylab.evaluate._cases import Case, cases_from_transcripts
        from memorylab.evaluate._compare import BASELINES, DEFAULT_SCORERS

        widgets = import_widgets()
        if cases is None:
            cases = cases_from_transcripts(split="session")
        self.cases: list[Case] = [cases] if isinstance(cases, Case) else list(cases)
        if not self.cases:
            raise InvalidSetting("the arena needs at least one case")
        if summarizers is None:
            summarizers = offered_models(BASELINES)
        if isinstance(summarizers, Mapping):
            self.choices: dict[str, Any] = dict(summarizers)
        else:
            self.choices = {(s if isinstance(s, str) else as_summarizer(s).name): s
                            for s in summarizers}  # fmt: skip
        self.scorers = list(scorers) if scorers is not None else list(DEFAULT_SCORERS)
        self.max_tokens = max_tokens
        self.cache_dir = cache_dir
        self.max_cost_usd = max_cost_usd
        self.summarizer_args = summarizer_args

        labels = list(self.choices)
        self.summarizer_picker = widgets.SelectMultiple(
            options=labels,
            value=tuple(labels),
            description="summarizers",
            rows=min(6, max(2, len(labels))),
            style={"description_width": "90px"},
            layout=widgets.Layout(width="420px"),
        )
        self.run_button = widgets.Button(description="Run comparison", icon="play",
                                         button_style="primary")  # fmt: skip
        self.run_button.on_click(lambda _: self.run())
        self.progress = widgets.IntProgress(min=0, max=1, value=0, description="progress")
        self.case_picker = widgets.Dropdown(
            options=[(f"{c.id} ({len(c.messages)} msgs)", i) for i, c in enumerate(self.cases)],
            value=0,
            description="case",
            layout=widgets.Layout(width="520px"),
        )
        self.case_picker.observe(lambda _: self._show_case(), names="value")
        self.status = widgets.HTML()
        self.table_view = widgets.HTML()
        # The two plots side by side while both fit at 400 px or more, else one below the other.
        plot_layout = {"flex": "1 1 400px", "max_width": "560px", "min_width": "0"}
        self.image = widgets.Image(format="png", layout=widgets.Layout(**plot_layout))
        self.facts_image = widgets.Image(format="png", layout=widgets.Layout(**plot_layout))
        self.side_by_side = widgets.HTML()
        super().__init__(
            [
                widgets.HTML(f"<b>Summarizer arena</b> · {len(self.cases)} case(s)"),
                widgets.HBox(
                    [self.summarizer_picker, widgets.VBox([self.run_button, self.progress])]
                ),
                self.status,
                self.table_view,
                widgets.HBox(
                    [self.image, self.facts_image], layout=widgets.Layout(flex_flow="row wrap")
                ),
                self.case_picker,
                self.side_by_side,
            ],
            layout=widgets.Layout(max_width="1200px"),
        )
        self.result: ComparisonResult | None = None
        self.scores: pd.DataFrame | None = None
        self.summaries: pd.DataFrame | None = None
        self.table: pd.DataFrame | None = None
        self.figure: Figure | None = None
        self.axes: Axes | None = None
        self.facts_figure: Figure | None = None
        self.facts_axes: Axes | None = None
        self.columns: dict[str, tuple[list[Fact], list[Fact]]] = {}
        self._report(None, "choose summarizers and press Run comparison")
        if run:
            self.run()

    def __repr__(self) -> str:
        state = "not run yet" if self.table is None else f"{len(self.table)} summarizer(s) scored"
        count = f"{len(self.cases)} case(s), {len(self.choices)} summarizer(s)"
        return f"SummarizerArena({count}, {state})"

    @property
    def selected(self) -> list[str]:
        return list(self.summarizer_picker.value)

    def run(self) -> pd.DataFrame | None:
        """Run the comparison for the selected summarizers (one at a time, for the progress
        bar); returns the long-form scores (``None`` when it failed: see :attr:`error`)."""

        from memorylab.evaluate._compare import compare_summarizers
        from memorylab.evaluate._engine import ComparisonResult
        from memorylab.evaluate._plots import plot_cost_quality, plot_quality
        from memorylab.evaluate._tables import summary_table

        chosen = self.selected
        if not chosen:
            self._report(InvalidSetting("select at least one summarizer"))
            return None
        self.progress.max, self.progress.value = len(chosen), 0
        self.progress.bar_style = "info"
        self.run_button.disabled = True
        parts: list[ComparisonResult] = []
        try:
            for label in chosen:
                self.status.value = status_html(f"summarizing with {label} …")
                parts.append(compare_summarizers(
                    self.cases,
                    {label: self.choices[label]},
                    self.scorers,
                    progress=False,
                    cache_dir=self.cache_dir,
                    max_cost_usd=self.max_cost_usd,
                    max_tokens=self.max_tokens,
                    summarizer_args=self.summarizer_args,
                ))  # fmt: skip
                self.progress.value += 1
        except MemorylabError as error:
            self.progress.bar_style = "danger"
            self.run_button.disabled = False
            self._report(error)
            return None
        self.run_button.disabled = False
        self.progress.bar_style = "success"
        result = self.result = ComparisonResult.concat(parts)
        scores = self.scores = result.frame
        self.summaries = result.summaries
        self.table = _ordered(summary_table(result).frame)
        self.table_view.value = comparison_html(result, max_columns=len(TABLE_METRICS))
        figure, axes = new_axes((6.4, 4.0))
        try:
            plot_cost_quality(result, ax=axes)
        except MemorylabError as error:  # e.g. no fact_recall scorer chosen
            axes.text(0.5, 0.5, str(error), ha="center", va="center", wrap=True)
        self.figure, self.axes = figure, axes
        self.image.value = figure_png(figure)
        facts_figure, facts_axes = new_axes((6.4, 4.0))
        try:
            plot_quality(result, "fact_recall", ax=facts_axes)
            facts_axes.set_title("Facts kept, by category (95% intervals)")
        except MemorylabError as error:  # no fact_recall scorer chosen
            facts_axes.text(0.5, 0.5, str(error), ha="center", va="center", wrap=True)
            facts_axes.set_axis_off()
        self.facts_figure, self.facts_axes = facts_figure, facts_axes
        self.facts_image.value = figure_png(facts_figure)
        self._show_case()
        errors = int(self.table["errors"].sum()) if "errors" in self.table else 0
        self._report(None, f"done: {len(chosen)} summarizer(s) × {len(self.cases)} case(s)"
                     + (f", {errors} error(s)" if errors else ""))  # fmt: skip
        return scores

    def _show_case(self) -> None:
        if self.summaries is None:
            self.side_by_side.value = ""
            return
        case = self.cases[int(self.case_picker.value)]
        rows = self.summaries[self.summaries["case"] == case.id]
        self.columns = {}
        parts = []
        for row in rows.itertuples(index=False):
            text = "" if not isinstance(row.text, str) else row.text
            error = row.error if isinstance(row.error, str) and row.error else ""
            kept, lost = lost_facts(case, text) if text else ([], [])
            self.columns[str(row.summarizer)] = (kept, lost)
            parts.append(
                '<div style="flex:1 1 0;min-width:220px">'
                + _column_html(str(row.summarizer), text, kept, lost, error)
                + "</div>"
            )
        width = "" if not parts else f"{len(parts)}"
        self.side_by_side.value = (
            f'<div data-columns="{width}" style="display:flex;gap:8px;align-items:flex-start">'
            + "".join(parts)
            + "</div>"
        )
