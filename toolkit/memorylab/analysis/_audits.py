"""The audits: one result type for the questions asked of what agents recorded, and their table.

An audit asks one question of a run's records and answers it as an :class:`AuditResult`:
``frame`` (one row per thing audited), ``summary`` (one row per model, agent or category),
``notes()`` (what a reader should see with them), ``text()`` (either table to read: headings,
formats), ``plot(ax)``. :data:`AUDITS` names them: ``facts`` (which facts survive each
summary), ``costs`` (what each compaction cost with prompt caching), ``calibration`` (did
compaction fire when it should have?); :func:`audit` runs one by name, and the report renders
each one the same way. A new audit is its frame's function, a function here returning an
AuditResult, and its line in :data:`AUDITS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from memorylab._validation import check_name
from memorylab.analysis._frames import text_table
from memorylab.errors import InvalidSetting
from memorylab.results import TableResult

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes


@dataclass(frozen=True, repr=False)
class AuditResult(TableResult):
    """What one audit found (the module docstring): its tables, its notes, how to read and
    draw them. In a notebook it shows as its frame, then its notes."""

    name: str
    """The audit's name in :data:`AUDITS`."""
    title: str
    """The question it answers (a report's heading)."""
    about: str
    """What it compares, in a sentence or two (said before its notes)."""
    frame: pd.DataFrame
    """One row per thing audited: a compaction, a fact in a summary."""
    summary: pd.DataFrame
    """One row per model, agent or category."""
    draw: Callable[[Axes | None], Axes]
    """Draws the audit on the axes given (new ones for ``None``): :meth:`plot`."""
    lines: tuple[str, ...] = ()
    """What :meth:`notes` gives."""
    headings: Mapping[str, str] = field(default_factory=dict)
    """The columns of the frame and the summary that :meth:`text` shows, with their headings."""
    formats: Mapping[str, Callable[[Any], str]] = field(default_factory=dict)
    """A column's own format in :meth:`text` (given a present value)."""
    counts: Mapping[str, str] = field(default_factory=dict)
    """A share's column → the column of the count it is a share of: :meth:`text` shows the
    share with its count (``86% of 7``), so a reader sees what each cell rests on."""

    def notes(self) -> list[str]:
        """What a reader should see with the tables, in words."""
        return list(self.lines)

    def text(self, table: Literal["frame", "summary"] = "frame") -> pd.DataFrame:
        """The ``frame`` (or the ``summary``) to read, for a report, a view or a terminal: the
        columns :attr:`headings` names, under their headings, as text (``–`` where unknown,
        counts as ``12,345``, times to the minute; costs, drifts and shares formatted)."""
        if table not in ("frame", "summary"):
            raise InvalidSetting(f"table must be 'frame' or 'summary', not {table!r}")
        frame = getattr(self, table)
        shown = text_table(frame, self.headings, self.formats)
        for share, count in self.counts.items():
            if share in frame.columns and count in frame.columns:
                heading = self.headings[share]
                shown[heading] = [
                    text if text == "–" or n != n or n is None else f"{text} of {int(n):,}"
                    for text, n in zip(shown[heading], frame[count].tolist(), strict=True)
                ]
        return shown

    def plot(self, ax: Axes | None = None) -> Axes:
        """The audit's figure on ``ax`` (new axes when ``None``); never shown."""
        return self.draw(ax)


def _signed(value: Any) -> str:
    return f"{value:+.1%}"


def _share(value: Any) -> str:
    return f"{value:.0%}"


def _dollars(value: Any) -> str:
    return f"${value:,.6f}" if value >= 0 else f"-${-value:,.6f}"


# --------------------------------------------------------------------------- calibration

_TIMINGS = ("late", "on time", "early", "unknown")


def calibration_audit(source: Any) -> AuditResult:
    """Did compaction fire when it should have: memorylab's estimate of each model call's input
    against what the provider billed (docs/analysis.md, "Calibration"). ``source`` as
    :func:`~memorylab.analysis.calibration_df` takes it (read once). ``frame``:
    :func:`~memorylab.analysis.compaction_timing_df` (each compaction against the billed
    count); ``summary``: one row per agent (``calibration_by_agent``: its calls and their drift,
    its compactions late, on time, early), whose rows add up to what the notes say; the plot:
    :func:`~memorylab.analysis.plot_calibration` of each call; the notes: per model how often
    and how far the estimate missed, and how many compactions fired late, on time or early (or
    why there is nothing to compare)."""
    from memorylab.analysis._calibration import (
        calibration_by_agent,
        calibration_df,
        calibration_records,
        calibration_summary,
        compaction_timing_df,
        why_nothing_to_calibrate,
    )
    from memorylab.analysis._plots import plot_calibration

    records = calibration_records(source)
    calls = calibration_df(records)
    timing = compaction_timing_df(records)
    summary = calibration_by_agent(calls, timing)
    lines = []
    if not len(calls):
        lines.append(why_nothing_to_calibrate(records))
    for row in calibration_summary(calls).to_dict("records"):
        model = row["model"] or "(no model)"
        reported = int(row["reported_calls"])
        if not reported:
            lines.append(f"{model}: {int(row['calls']):,} calls, none with a reported input.")
            continue
        under = round(row["undercount_share"] * reported)
        lines.append(
            f"{model}: the estimate undercounted {under:,} of {reported:,} calls the provider "
            f"reported (median drift {row['median_drift']:+.1%}, 90th percentile "
            f"{row['p90_drift']:+.1%})."
        )
    if len(timing):
        counts = {k: int((timing["timing"] == k).sum()) for k in _TIMINGS}
        late = timing.loc[timing["timing"] == "late", "calls_late"].dropna()
        by = f" (by {int(late.min())}-{int(late.max())} calls)" if len(late) else ""
        if len(late) and late.min() == late.max():
            by = f" (by {int(late.min())} call{'s' if late.min() != 1 else ''})"
        agents = len(summary)
        lines.append(
            f"{len(timing):,} compactions of {agents:,} agent{'s' if agents != 1 else ''} "
            f"against the billed count: {counts['late']} late{by}, "
            f"{counts['on time']} on time, {counts['early']} early"
            + (f", {counts['unknown']} without recorded usage" if counts["unknown"] else "")
            + " (a row per agent in the table)."
        )
    return AuditResult(
        name="calibration",
        title="Did compaction fire when it should have?",
        about="Each model call's input as memorylab estimated it (what the trigger counts) "
        "against what the provider billed (usage.jsonl), and each compaction against the "
        "billed count.",
        frame=timing,
        summary=summary,
        draw=lambda ax: plot_calibration(calls, ax=ax),
        lines=tuple(lines),
        headings={
            "agent": "agent",
            "session": "process",
            "time": "time",
            "call": "call",
            "count": "trigger counts",
            "trigger_tokens": "trigger (tokens)",
            "estimated_tokens": "estimated",
            "billed_tokens": "billed",
            "drift": "drift",
            "first_billed_call": "billed crossed at call",
            "calls_late": "calls late",
            "timing": "timing",
            "model": "model",
            "calls": "calls",
            "reported_calls": "reported",
            "median_drift": "median drift",
            "p90_drift": "90th percentile",
            "undercount_share": "undercounted",
            "compactions": "compactions",
            "late": "late",
            "on_time": "on time",
            "early": "early",
            "unknown": "no usage",
            "fewest_calls_late": "late by (fewest calls)",
            "most_calls_late": "late by (most calls)",
        },
        formats={
            "drift": _signed,
            "calls_late": lambda v: f"{int(v):+d}" if v else "0",
            "median_drift": _signed,
            "p90_drift": _signed,
            "undercount_share": _share,
        },
    )


# --------------------------------------------------------------------------- costs

_PLOTTED_COSTS = 10
"""The compactions the costs' figure draws: the last ones of the agent with the most."""


def cost_audit(source: Any, *, model: str | None = None) -> AuditResult:
    """What each compaction cost once prompt caching is counted (docs/analysis.md, "Cache
    economics"). ``source`` and ``model`` as :func:`~memorylab.analysis.compaction_costs_df`
    takes them; ``frame``: its rows; ``summary``: per agent, the compactions priced, how many
    paid for themselves (net below zero), the net, where the usage came from; the plot:
    :func:`~memorylab.analysis.plot_compaction_costs` of the last compactions of the agent with
    the most."""
    import pandas as pd

    from memorylab.analysis._cache_costs import compaction_costs_df
    from memorylab.analysis._plots import plot_compaction_costs

    costs = compaction_costs_df(source, model=model)
    priced = costs[costs["net_cost_usd"].notna()]
    grouped = priced.groupby(priced["agent"].astype(str), sort=True)
    summary = pd.DataFrame(
        {
            "compactions": grouped.size(),
            "paid_for_themselves": grouped["net_cost_usd"].agg(lambda v: int((v < 0).sum())),
            "net_cost_usd": grouped["net_cost_usd"].sum(),
            "usage": grouped["source"].agg(lambda v: ", ".join(sorted(set(map(str, v))))),
        }
    ).rename_axis("agent")
    summary = summary.reset_index().astype({"compactions": "Int64", "paid_for_themselves": "Int64"})
    lines = [
        f"{row.agent}: {row.paid_for_themselves} of {row.compactions} paid for themselves (net "
        f"{'-' if row.net_cost_usd < 0 else ''}${abs(row.net_cost_usd):,.4f}; {row.usage})."
        for row in summary.itertuples()
    ]
    if len(priced) < len(costs):
        lines.append(_why_unpriced(costs[costs["net_cost_usd"].isna()], everything=not len(priced)))
    elif not len(costs):
        lines.append("No compaction was recorded: nothing to price.")
    largest = priced["agent"].value_counts().idxmax() if len(priced) else None
    drawn = priced[priced["agent"] == largest].tail(_PLOTTED_COSTS)
    title = f"What each compaction cost with prompt caching: {largest}" if largest else None
    return AuditResult(
        name="costs",
        title="What each compaction cost, with prompt caching",
        about="Per compaction: the summary call, plus the cache it invalidated (the next calls "
        "read at the full input price what a warm cache would have served), minus the input it "
        "saved until the next compaction (the removed tokens, at the cached price, on every "
        "call). Below zero, the compaction paid for itself. Usage is the provider's where "
        "usage.jsonl recorded every call, else modelled from the files (docs/analysis.md, "
        "Cache economics).",
        frame=costs,
        summary=summary,
        draw=lambda ax: plot_compaction_costs(drawn, ax=ax, title=title),
        lines=tuple(lines),
        headings={
            "agent": "agent",
            "compaction": "#",
            "time": "time",
            "source": "usage",
            "calls": "model calls",
            "tokens_removed": "tokens removed",
            "summary_cost_usd": "summary (USD)",
            "rebuild_cost_usd": "cache rebuild (USD)",
            "saved_cost_usd": "input saved (USD)",
            "compactions": "compactions priced",
            "paid_for_themselves": "paid for themselves",
            "net_cost_usd": "net (USD)",
            "usage": "usage",
        },
        formats=dict.fromkeys(
            ("summary_cost_usd", "rebuild_cost_usd", "saved_cost_usd", "net_cost_usd"), _dollars
        ),
    )


def _why_unpriced(unpriced: Any, *, everything: bool) -> str:
    """Why these compactions have no net cost, from what their rows lack: a model (no
    prices), the tokens before and after (no saving), the summary call (no cost of it)."""
    agents = ", ".join(dict.fromkeys(map(str, unpriced["agent"])))
    reasons = []
    if unpriced["model"].isna().all():
        reasons.append(
            "no model is recorded, so nothing has a price (name one: model=, or --model on the "
            "command line)"
        )
    elif unpriced["rebuild_cost_usd"].isna().all():
        models = ", ".join(dict.fromkeys(map(str, unpriced["model"].dropna())))
        reasons.append(f"litellm's map lists no cache prices for {models}")
    if unpriced["tokens_removed"].isna().all():
        reasons.append(
            "the records hold no token counts around each compaction (compactions.jsonl's "
            "tokens_before and tokens_after; the reference framework writes no compactions.jsonl), "
            "so the input it saved is unknown"
        )
    if unpriced["summary_cost_usd"].isna().all():
        reasons.append("the summary call's cost and tokens were not recorded")
    known = (
        " The cache rebuild alone is priced (the frame's rebuild_cost_usd)."
        if unpriced["rebuild_cost_usd"].notna().any()
        else ""
    )
    what = "No net cost" if everything else f"{len(unpriced):,} compaction(s) have no net cost"
    return f"{what} for {agents}: {'; '.join(reasons) or 'a part of the cost is unknown'}.{known}"


# --------------------------------------------------------------------------- facts

_NAMED_FACTS = 5
"""Up to this many facts followed, the notes name them (a reader sees what 100 % rests on)."""


def fact_audit(source: Any, facts: Any = None, *, max_summaries: int | None = None) -> AuditResult:
    """Which facts survive each summary (docs/analysis.md, "Lineage"). ``source``, ``facts``
    and ``max_summaries`` as :func:`~memorylab.analysis.fact_survival_df` takes them;
    ``frame``: its rows; ``summary``: per category (and ``all``), the facts followed and, for
    every count of summaries the plot draws (1, 2, … as far as any fact was followed), the
    share every summary since still holds (``after_N``) and the facts followed that far
    (``facts_after_N``: a later column counts only the facts that entered early enough;
    :func:`~memorylab.analysis.survival_by_generation`); the plot:
    :func:`~memorylab.analysis.plot_fact_survival` of the same table. The notes say how much of
    ``all`` is numbers, and name the facts when there are only a few."""
    import pandas as pd

    from memorylab.analysis._lineage import fact_survival_df, survival_by_generation
    from memorylab.analysis._plots import plot_fact_survival

    frame = fact_survival_df(source, facts, max_summaries=max_summaries)
    followed = frame[frame["generation"].notna()]
    survival = survival_by_generation(followed)
    steps = sorted({int(n) for n in survival["summaries"].dropna()})
    summary = pd.DataFrame({"category": pd.Series(dtype="str"), "facts": pd.Series(dtype="Int64")})
    if steps:
        table = survival.pivot_table(
            index="category", columns="summaries", values=["survival", "facts"], sort=False,
            observed=True,
        )  # fmt: skip
        summary = pd.DataFrame({"category": list(table.index)})
        summary["facts"] = [int(n) for n in table[("facts", steps[0])].fillna(0)]
        for n in steps:
            summary[f"after_{n}"] = table[("survival", n)].to_numpy(dtype=float)
            summary[f"facts_after_{n}"] = table[("facts", n)].astype("Int64").to_numpy()
        summary = summary.astype({"facts": "Int64"})
    after = {f"after_{n}": f"after {n} {'summary' if n == 1 else 'summaries'}" for n in steps}
    lines = []
    if bool(followed["biased"].any()):
        lines.append(
            "The summaries were written by an extractive summarizer that picks sentences by the "
            "same rules as the extraction, so these shares are biased upwards."
        )
    if not len(followed):
        lines.append(_why_no_fact(frame))
    else:
        # Facts, not rows: a fact has a row per summary it is followed through.
        first = followed[followed["since"] == 0]
        counted = first["category"].astype(str).value_counts()
        numbers, total = int(counted.get("number", 0)), len(first)
        if numbers == total:
            lines.append(
                f"All {total:,} facts followed are numbers (tool outputs' figures too: "
                "latencies, counts, ids); no name, path, command or decision was found."
            )
        elif numbers * 2 > total:
            lines.append(
                f"{numbers:,} of the {total:,} facts followed ({numbers / total:.0%}) are "
                "numbers, tool outputs' figures too (latencies, counts, ids): the all row is "
                "mostly the number row; read the rows by kind."
            )
        if len(steps) > 1:
            lines.append(
                "Each cell is the share of the facts followed that far (its count after "
                "'of'): a later column counts only the facts that entered early enough, so a "
                "row can rise from one column to the next."
            )
        if total <= _NAMED_FACTS:
            named = ", ".join(
                f"{fact} ({category})"
                for fact, category in zip(first["fact"], first["category"], strict=True)
            )
            lines.append(f"The only facts followed: {named}.")
    return AuditResult(
        name="facts",
        title="Which facts survive each summary",
        about="Facts (paths, commands, names, decisions, numbers) "
        + ("extracted from the archived messages" if facts is None else "given")
        + ", each followed from the compaction that archived it through every later summary: "
        "the share that every summary since still holds. A summary re-states what survives; "
        "the rest is only in the archives (recall finds it).",
        frame=frame,
        summary=summary,
        draw=lambda ax: plot_fact_survival(survival, ax=ax),
        lines=tuple(lines),
        headings={
            "agent": "agent",
            "fact": "fact",
            "category": "category",
            "entered": "entered",
            "generation": "generation",
            "kept": "kept",
            "survived": "survived",
            "facts": "facts",
            **after,
        },
        formats=dict.fromkeys(after, _share),
        counts={f"after_{n}": f"facts_after_{n}" for n in steps},
    )


def _why_no_fact(frame: Any) -> str:
    """Why no fact was followed: no compaction wrote a summary after one archived a fact, or
    the archived messages held none the extraction finds."""
    if len(frame):
        return (
            f"{len(frame):,} facts were found in the archived messages, but no summary was "
            "written after the compaction that archived them: nothing to follow yet."
        )
    return (
        "No compaction that wrote a summary archived a fact (a path, command, name, decision "
        "or number the extraction finds): nothing to follow."
    )


# --------------------------------------------------------------------------- the table

AUDITS: dict[str, Callable[..., AuditResult]] = {
    "facts": fact_audit,
    "costs": cost_audit,
    "calibration": calibration_audit,
}
"""The audits by name, in the order a report shows them."""


def audit(source: Any, name: str, **options: Any) -> AuditResult:
    """The audit ``name`` of :data:`AUDITS` (``"facts"``, ``"costs"``, ``"calibration"``) run
    on ``source``; ``options``: that audit's keywords (``model=`` of costs; ``facts=``,
    ``max_summaries=`` of facts)."""
    check_name("name", name, what="audit name")
    if name not in AUDITS:
        raise InvalidSetting(f"no audit {name!r}; the audits: {', '.join(AUDITS)}")
    return AUDITS[name](source, **options)
