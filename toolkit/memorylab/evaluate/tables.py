"""Tables of a comparison's long-form DataFrame: the wide summary, fact survival, markdown."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memorylab.errors import InvalidSetting
from memorylab.evaluate.cases import FACT_CATEGORIES

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["fact_survival_table", "markdown_table", "summary_table"]


def _weighted(group: pd.DataFrame) -> float:
    values = group["value"]
    weights = group["n"]
    ok = values.notna()
    if not ok.any():
        return math.nan
    if weights[ok].notna().all() and (weights[ok] > 0).all():
        return float((values[ok] * weights[ok]).sum() / weights[ok].sum())
    return float(values[ok].mean())


def summary_table(
    df: pd.DataFrame, metrics: Sequence[str] | None = None, *, weighted: bool = True
) -> pd.DataFrame:
    """The wide table: one row per summarizer, one column per ``scorer.metric`` (mean over
    cases; weighted by ``n`` — facts, probes — when ``weighted``), plus ``cases`` and
    ``errors``. ``metrics`` selects and orders columns (``["fact_recall.overall", ...]``)."""
    import pandas as pd

    ok = df[df["metric"] != "error"].copy()
    ok["column"] = ok["scorer"] + "." + ok["metric"]
    order = list(dict.fromkeys(df["summarizer"]))
    if weighted:
        wide = ok.groupby(["summarizer", "column"], sort=False)[["value", "n"]].apply(_weighted)
        table = wide.unstack("column") if len(wide) else pd.DataFrame(index=order)
    else:
        table = ok.pivot_table(index="summarizer", columns="column", values="value",
                               aggfunc="mean", sort=False)  # fmt: skip
    table = table.reindex(order)
    if metrics is not None:
        missing = [m for m in metrics if m not in table.columns]
        if missing:
            raise InvalidSetting(f"no such metrics in the results: {missing}")
        table = table[list(metrics)]
    else:
        table = table[list(dict.fromkeys(ok["column"]))] if len(ok) else table
    table.columns.name = None
    table.index.name = "summarizer"
    table["cases"] = df.groupby("summarizer", sort=False)["case"].nunique().reindex(order)
    errors = df[df["metric"] == "error"].groupby("summarizer").size()
    table["errors"] = errors.reindex(order).fillna(0).astype(int)
    return table


def fact_survival_table(df: pd.DataFrame) -> pd.DataFrame:
    """Share of facts kept per category (columns ``number … decision``, ``overall``) and
    summarizer: kept facts / facts over all cases (micro average), plus ``facts`` counted."""
    rows = df[(df["scorer"] == "fact_recall") & df["metric"].isin([*FACT_CATEGORIES, "overall"])]
    table = summary_table(rows)
    rename = {f"fact_recall.{c}": c for c in (*FACT_CATEGORIES, "overall")}
    table = table.rename(columns=rename)
    columns = [c for c in (*FACT_CATEGORIES, "overall") if c in table.columns]
    out = table[columns].copy()
    counts = rows[rows["metric"] == "overall"].groupby("summarizer", sort=False)["n"].sum()
    out["facts"] = counts.reindex(out.index).fillna(0).astype(int)
    return out


def markdown_table(table: pd.DataFrame, *, percent: Sequence[str] = (), digits: int = 3) -> str:
    """``table`` as a GitHub markdown table (index first); ``percent`` columns as ``42%``."""
    headers = [str(table.index.name or ""), *[str(c) for c in table.columns]]

    def cell(column: Any, value: Any) -> str:
        if isinstance(value, float):
            if math.isnan(value):
                return "–"
            if column in percent:
                return f"{value:.0%}"
            return f"{value:.{digits}g}" if abs(value) < 10**digits else f"{value:,.0f}"
        return str(value)

    rule = "|" + "|".join(["---"] + ["---:"] * len(table.columns)) + "|"
    lines = ["| " + " | ".join(headers) + " |", rule]
    for index, row in table.iterrows():
        cells = [str(index), *[cell(c, row[c]) for c in table.columns]]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
