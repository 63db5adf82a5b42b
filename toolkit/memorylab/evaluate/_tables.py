"""Tables of a comparison's result: the wide summary, fact survival (each a
:class:`SummaryTable`: the table and its marks), markdown.

Every quality cell (a scorer whose ``quality`` is True: fact recall, probe QA, judge ...)
carries a confidence interval: a seeded percentile bootstrap (``resamples`` draws, default
1,000, seed 0: the same table every run) over the items the value averages — each fact or
probe of every case (the long frame's ``items``) — or over the cases when a scorer gives one
value per case (a judge's rating). The interval is in the columns ``<metric>.lo`` and
``<metric>.hi``.

Differences are read against those intervals, paired (the same facts and probes, resampled
together for two summarizers):

* **ties**: in each quality column, the summarizers whose difference from the best one (the
  bounds aside) has an interval that includes 0 are not significantly worse than it
  (``table.tied``; :func:`markdown_table` marks them ``≈``);
* **bounds**: with the ceiling (``memorylab/full``) and the floor (``memorylab/none``) in the
  comparison, a column whose ceiling is not clearly above its floor (the interval of their
  difference reaches 0) measures nothing on these cases (``table.not_measuring``;
  marked ``†`` with a note);
* **bias**: cells whose scorer flagged them (``fact_recall`` on extracted facts for the
  extractive summarizer) are in ``table.biased`` (marked ``*``);
* **graders**: a ``<scorer>.llm`` column (a model grades the reader's answers) is only as good
  as its grader. Where exact match is certain — an exact hit is right, and an answer given with
  no notes at all (the floor) that is not an exact hit is wrong — the grader should agree with
  it: ``table.grader_agreement`` holds how often it does and on how many answers, and the notes
  say it, ranking several graders; below :data:`GRADER_TRUSTED` the column is not to be ranked
  by. (A small local grader said CORRECT to 248 of 256 answers, "does not contain the answer"
  and wrong dates among them.) A column whose floor scores 0.5 or more says so in its ``†``
  note: the metric accepts answers that cannot be right.

The bootstrap is written here with numpy (already there through pandas) rather than taken from
``scipy.stats.bootstrap``: scipy would be a new dependency of the core for one call, and the
resampled units are weighted items pooled over cases, which it does not take directly.
"""

from __future__ import annotations

import dataclasses
import math
import zlib
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from memorylab._validation import check_columns
from memorylab.compress._baselines import CEILING, FLOOR
from memorylab.errors import InvalidSetting
from memorylab.evaluate._engine import ComparisonResult
from memorylab.results import FormerFrame, TableResult
from memorylab.transcripts import FACT_CATEGORIES

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

_COST_SCORERS = frozenset({"compression", "latency", "cost"})
GRADER_TRUSTED = 0.9
"""The least agreement with exact match (where it is certain) of a grader whose ``llm`` column
can be ranked by."""
_BLOCK = 250  # resamples drawn at a time (memory: _BLOCK x units)


def _weighted(group: pd.DataFrame) -> float:
    values = group["value"]
    weights = group["n"]
    ok = values.notna()
    if not ok.any():
        return math.nan
    if weights[ok].notna().all() and (weights[ok] > 0).all():
        return float((values[ok] * weights[ok]).sum() / weights[ok].sum())
    return float(values[ok].mean())


# --------------------------------------------------------------------------- the bootstrap


Units = dict[tuple[str, Hashable], tuple[float, float]]
"""``(case, item) -> (value, weight)``: the units one row's value averages, keyed so that two
rows' common units are the same items (a fact's or probe's index in its case, -1 for a case's
one value; a probe's id)."""


def _units(rows: pd.DataFrame, weighted: bool) -> Units:
    out: Units = {}
    has_items = "items" in rows.columns
    for row in rows.itertuples(index=False):
        items = getattr(row, "items", None) if has_items else None
        if weighted and isinstance(items, str) and items.strip():
            for index, item in enumerate(items.split()):
                if item != "nan":  # an item that failed alone (a probe's timed-out call)
                    out[(str(row.case), index)] = (float(item), 1.0)
            continue
        number = float(row.value)
        if math.isnan(number):
            continue
        n = row.n if weighted else 1.0
        weight = float(n) if isinstance(n, int | float) and n == n and n > 0 else 1.0
        out[(str(row.case), -1)] = (number, weight)
    return out


def _rng(seed: int, *labels: str) -> np.random.Generator:
    import numpy as np

    return np.random.default_rng([seed, *(zlib.crc32(label.encode()) for label in labels)])


def _draws(
    columns: Sequence[tuple[np.ndarray, np.ndarray]], resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """The weighted mean of each column (values, weights) in each resample of the units, and
    with several columns their first minus their second (paired: the same draw)."""
    import numpy as np

    count = len(columns[0][0])
    out = []
    for start in range(0, resamples, _BLOCK):
        size = min(_BLOCK, resamples - start)
        picks = rng.integers(0, count, size=(size, count))
        means = [(v[picks] * w[picks]).sum(1) / w[picks].sum(1) for v, w in columns]
        out.append(means[0] - means[1] if len(means) == 2 else means[0])
    return np.concatenate(out)


def bootstrap_interval(
    values: Sequence[float],
    weights: Sequence[float] | None = None,
    *,
    confidence: float = 0.95,
    resamples: int = 1000,
    seed: int = 0,
) -> tuple[float, float]:
    """The percentile bootstrap interval of the weighted mean of ``values`` (seeded: the same
    numbers every run). NaN for no values.

    >>> bootstrap_interval([1, 0, 1, 1, 0, 1, 1, 1, 0, 1])
    (0.4, 1.0)
    """
    import numpy as np

    v = np.asarray(values, dtype=float)
    if not len(v):
        return math.nan, math.nan
    w = np.ones_like(v) if weights is None else np.asarray(weights, dtype=float)
    draws = _draws([(v, w)], resamples, _rng(seed))
    return _quantiles(draws, confidence)


def _quantiles(draws: np.ndarray, confidence: float) -> tuple[float, float]:
    import numpy as np

    alpha = (1.0 - confidence) / 2
    low, high = np.quantile(draws, [alpha, 1.0 - alpha])
    return round(float(low), 12), round(float(high), 12)


def _paired(
    a: Units, b: Units, confidence: float, resamples: int, rng: np.random.Generator
) -> tuple[float, float, float, int]:
    """Mean difference a - b over their common units, its interval, and how many units."""
    import numpy as np

    keys = sorted(set(a) & set(b), key=repr)  # repr: keys of mixed kinds still sort
    if not keys:
        return math.nan, math.nan, math.nan, 0
    va = np.array([a[k][0] for k in keys])
    vb = np.array([b[k][0] for k in keys])
    w = np.array([a[k][1] for k in keys])
    diff = float((va * w).sum() / w.sum() - (vb * w).sum() / w.sum())
    low, high = _quantiles(_draws([(va, w), (vb, w)], resamples, rng), confidence)
    return diff, low, high, len(keys)


# --------------------------------------------------------------------------- differences

DIFFERENCE_COLUMNS = ("column", "a", "b", "difference", "lo", "hi", "n")
"""The columns of :attr:`SummaryTable.differences`: for each compared column and pair of rows,
``difference`` = the mean of ``a`` minus that of ``b`` over the units both have (``n``: facts,
probes, or cases), ``lo``/``hi`` its paired bootstrap interval. ``a`` is the higher of the
pair (the difference is never negative; ties keep the table's order)."""

RECALL_LABEL = " + recall "
"""What joins a memory's label and a recall depth in a recall condition's label
(``"summary + recall 5"``): the pairs such a condition makes with its memory are shown."""


def pair_differences(
    column: str,
    units: Mapping[str, Units],
    *,
    confidence: float = 0.95,
    resamples: int = 1000,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Rows of :data:`DIFFERENCE_COLUMNS`: every pair of the labels of ``units`` (in their
    order) compared on ``column`` over their common units, each pair's bootstrap seeded by the
    column and the pair (the same numbers every run); pairs with no unit in common are left
    out."""
    labels = list(units)
    rows = []
    for index, first in enumerate(labels):
        for second in labels[index + 1 :]:
            rng = _rng(seed, column, first, second)
            diff, low, high, n = _paired(units[first], units[second], confidence, resamples, rng)
            if not n:
                continue
            a, b = (first, second) if diff >= 0 else (second, first)
            if diff < 0:
                diff, low, high = -diff, 0.0 - high, 0.0 - low  # 0.0 -: no "-0" bound
            rows.append({"column": column, "a": a, "b": b, "difference": diff, "lo": low,
                         "hi": high, "n": n})  # fmt: skip
    return rows


def differences_frame(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Rows of :func:`pair_differences` as the frame of :data:`DIFFERENCE_COLUMNS`."""
    import pandas as pd

    frame = pd.DataFrame(list(rows), columns=list(DIFFERENCE_COLUMNS))
    return frame.astype({"difference": float, "lo": float, "hi": float, "n": int})


def _no_differences() -> pd.DataFrame:
    return differences_frame([])


def _pair(differences: pd.DataFrame, column: str, a: str, b: str) -> tuple[float, float, float]:
    """The difference ``a - b`` on ``column`` and its interval, read off ``differences`` (NaN:
    the two have no unit in common)."""
    rows = differences[differences["column"] == column]
    for sign, x, y in ((1.0, a, b), (-1.0, b, a)):
        match = rows[(rows["a"] == x) & (rows["b"] == y)]
        if len(match):
            diff, low, high = (float(match.iloc[0][k]) for k in ("difference", "lo", "hi"))
            return (diff, low, high) if sign > 0 else (-diff, 0.0 - high, 0.0 - low)
    return math.nan, math.nan, math.nan


def _best(means: pd.Series, bounds: Mapping[str, str]) -> str | None:
    """The column's best row, the bounds aside (the first of equals); None without one."""
    ranked = [label for label in means.index if label not in bounds.values()
              and not math.isnan(float(means[label]))]  # fmt: skip
    return max(ranked, key=lambda label: float(means[label])) if ranked else None


def _shown(table: SummaryTable, column: str) -> pd.DataFrame:
    """The differences on ``column`` worth printing: each row against the column's best, a
    recall condition against its memory (``L + recall k`` vs ``L``), the ceiling against the
    floor."""
    rows = table.differences[table.differences["column"] == column]
    wanted: set[frozenset[str]] = set()
    best = _best(table.frame[column], table.bounds) if column in table.frame.columns else None
    if best is not None:
        wanted |= {frozenset((best, label)) for label in table.frame.index if label != best}
    labels = set(rows["a"]) | set(rows["b"])
    for label in labels:
        memory, joined, depth = str(label).rpartition(RECALL_LABEL)
        if joined and depth.isdigit() and memory in labels:
            wanted.add(frozenset((label, memory)))
    if {"ceiling", "floor"} <= set(table.bounds):
        wanted.add(frozenset((table.bounds["ceiling"], table.bounds["floor"])))
    keep = [frozenset((a, b)) in wanted for a, b in zip(rows["a"], rows["b"], strict=True)]
    return rows[keep]


def _is_rate(rows: pd.DataFrame) -> bool:
    """Whether a column's differences are of shares (every bound within [-1, 1]): shown in
    percentage points."""
    bounds = rows[["difference", "lo", "hi"]].abs()
    return bool(len(rows)) and bool((bounds <= 1).all().all())


def _difference_text(row: Mapping[str, Any], points: bool) -> str:
    scale, unit, form = (100.0, " pts", "+.1f") if points else (1.0, "", "+.3g")
    diff, low, high = (float(row[k]) * scale for k in ("difference", "lo", "hi"))
    if math.isnan(low) or math.isnan(high):
        return f"{diff:{form}}{unit}"
    return f"{diff:{form}}{unit} [{low:{form}}, {high:{form}}]"


def _ranks(row: Mapping[str, Any]) -> bool:
    """Whether a difference's interval excludes 0 (``a`` is the higher: its low bound > 0)."""
    return float(row["lo"]) > 0


# --------------------------------------------------------------------------- the tables


def _is_quality(column: str, quality: Mapping[str, bool]) -> bool:
    scorer = column.split(".", 1)[0]
    return quality.get(scorer, scorer not in _COST_SCORERS)


@dataclass(frozen=True, slots=True, repr=False)
class SummaryTable(FormerFrame, TableResult):
    """A table of :func:`summary_table` or :func:`fact_survival_table` (``frame``) and its
    marks (module docstring): ``bounds`` (``{"ceiling": label, "floor": label}``), ``tied``
    (per quality column, the summarizers not significantly below its best one, the best
    first), ``not_measuring`` (columns whose ceiling is not clearly above their floor, with
    why), ``biased`` (per column, the flagged summarizers), ``differences`` (every pair of rows
    compared on each quality column, a - b over their common units with its paired bootstrap
    interval: :data:`DIFFERENCE_COLUMNS`; :func:`differences_table` prints them); :meth:`notes`
    says them all in sentences. Earlier versions returned the frame with these in
    ``frame.attrs``: that still works for now and warns."""

    frame: pd.DataFrame
    bounds: Mapping[str, str]
    tied: Mapping[str, list[str]]
    not_measuring: Mapping[str, str]
    biased: Mapping[str, list[str]]
    confidence: float = 0.95
    grader_agreement: Mapping[str, tuple[float, int]] = dataclasses.field(default_factory=dict)
    differences: pd.DataFrame = dataclasses.field(default_factory=_no_differences)

    _former: ClassVar[str] = "summary_table() (and fact_survival_table())"

    def notes(self) -> list[str]:
        return self._mark_notes() + self._ranking_notes()

    def _mark_notes(self) -> list[str]:
        """The notes of the marks (``†``, the graders, ``*``, ``≈``): :meth:`notes` but the
        differences that rank, which a table of the differences printed below says itself."""
        notes = [f"† {column} measures nothing on these cases: {why}."
                 for column, why in self.not_measuring.items()]  # fmt: skip
        graders = sorted(self.grader_agreement.items(), key=lambda item: -item[1][0])
        for column, (share, count) in graders:
            verdict = ("" if share >= GRADER_TRUSTED
                       else f"; below {GRADER_TRUSTED:.0%}, do not rank by {column}")  # fmt: skip
            notes.append(
                f"{column}: its grader agrees with exact match on {share:.0%} of the {count} "
                "answers where exact match is certain (an exact hit is right; an answer from "
                f"no notes that is not one is wrong){verdict}."
            )
        if len(graders) > 1:
            notes.append("Graders by that agreement: " + ", ".join(
                f"{column} {share:.0%}" for column, (share, _) in graders) + ".")  # fmt: skip
        for column, labels in self.biased.items():
            notes.append(
                f"* {column} is biased for {', '.join(labels)}: the facts were extracted by "
                "rules like that summarizer's own."
            )
        if self.tied:
            notes.append(
                f"≈ not significantly below the column's best ({self.confidence:.0%} paired "
                "bootstrap interval of the difference includes 0)."
            )
        return notes

    def _ranking_notes(self) -> list[str]:
        """Per column, the differences between conditions (the bounds aside) that
        :func:`differences_table` shows and whose interval excludes 0, and how many of all the
        column's pairs do; a column where none does is left out (its ``≈`` says it)."""
        lines = []
        bounds = set(self.bounds.values())
        for column, rows in self.differences.groupby("column", sort=False):
            ranked = [row for _, row in _shown(self, str(column)).iterrows()
                      if _ranks(row) and not {row["a"], row["b"]} & bounds]  # fmt: skip
            if ranked:
                points = _is_rate(rows)
                said = "; ".join(f"{row['a']} − {row['b']} {_difference_text(row, points)}"
                                 for row in ranked)  # fmt: skip
                ranking = sum(_ranks(row) for _, row in rows.iterrows())
                lines.append(f"- {column}: {said} ({ranking} of its {len(rows)} pairs rank).")
        if not lines:
            return []
        return [
            f"Differences that rank (the {self.confidence:.0%} paired bootstrap interval, over "
            "the units both rows were scored on, excludes 0; each row against the column's "
            "best, a recall condition against its memory; every pair in .differences):",
            *lines,
        ]

    def reframed(self, frame: pd.DataFrame, rename: Mapping[str, str] | None = None
                 ) -> SummaryTable:  # fmt: skip
        """These marks on ``frame``, a table made from this one: columns renamed by ``rename``,
        the marks of columns ``frame`` does not have left out."""

        def kept(marks: Mapping[str, Any]) -> dict[str, Any]:
            renamed = {(rename or {}).get(k, k): v for k, v in marks.items()}
            return {k: v for k, v in renamed.items() if k in frame.columns}

        differences = self.differences.assign(
            column=self.differences["column"].map(lambda c: (rename or {}).get(c, c))
        )
        differences = differences[differences["column"].isin(frame.columns)]
        order = {column: index for index, column in enumerate(frame.columns)}
        differences = differences.sort_values("column", key=lambda c: c.map(order), kind="stable")
        return dataclasses.replace(self, frame=frame, tied=kept(self.tied),
                                   not_measuring=kept(self.not_measuring),
                                   biased=kept(self.biased),
                                   grader_agreement=kept(self.grader_agreement),
                                   differences=differences.reset_index(drop=True))  # fmt: skip


def _bounds(given: Mapping[str, str], labels: Sequence[str]) -> dict[str, str]:
    """``{"ceiling": label, "floor": label}`` of the bounds present."""
    out = {kind: label for label, kind in given.items() if label in labels}
    for kind, name in (("ceiling", CEILING), ("floor", FLOOR)):
        if kind not in out and name in labels:
            out[kind] = name
    return out


def summary_table(
    results: ComparisonResult | pd.DataFrame,
    metrics: Sequence[str] | None = None,
    *,
    weighted: bool = True,
    ci: bool = True,
    confidence: float = 0.95,
    resamples: int = 1000,
    seed: int = 0,
) -> SummaryTable:
    """The wide table: one row per summarizer, one column per ``scorer.metric`` (the mean over
    cases; weighted by ``n`` — facts, probes — when ``weighted``), with each quality column's
    confidence interval in ``<metric>.lo`` / ``<metric>.hi`` (``ci``), plus ``cases`` and
    ``errors``. ``metrics`` selects and orders columns (``["fact_recall.overall", ...]``).
    With ``ci``, ``differences`` pairs every two rows on each quality column (over the units
    both were scored on) and the marks read those pairs.

    A :class:`SummaryTable`: the table in ``frame``, its marks (``bounds``, ``tied``,
    ``not_measuring``, ``biased``) in its fields and in sentences in ``notes()``. See the
    module docstring. ``results``: a :class:`ComparisonResult` (a long-form frame alone knows
    no bounds but ``memorylab/full`` and ``memorylab/none`` and no scorer's ``quality``).
    """
    import pandas as pd

    if isinstance(confidence, bool) or not 0 < confidence < 1:
        raise InvalidSetting(f"confidence must be between 0 and 1, not {confidence!r}")
    result = ComparisonResult.of(results)
    df = result.frame
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
    bounds = _bounds(result.bounds, order)
    marks: dict[str, Any] = {"tied": {}, "not_measuring": {}, "biased": {}, "differences": []}
    if ci:
        table = _with_intervals(table, ok, order, result.quality, bounds, marks, weighted,
                                confidence, resamples, seed)  # fmt: skip
    if "flag" in ok.columns:
        flagged = ok[ok["flag"] == "biased"]
        for column, group in flagged.groupby("column", sort=False):
            if column in table.columns:
                marks["biased"][str(column)] = list(dict.fromkeys(group["summarizer"]))
    table.columns.name = None
    table.index.name = "summarizer"
    table["cases"] = df.groupby("summarizer", sort=False)["case"].nunique().reindex(order)
    errors = df[df["metric"] == "error"].groupby("summarizer").size()
    table["errors"] = errors.reindex(order).fillna(0).astype(int)
    agreement = {column: value for column, value in _grader_agreement(ok, bounds.get("floor"))
                 .items() if column in table.columns}  # fmt: skip
    marks["differences"] = differences_frame(marks["differences"])
    return SummaryTable(table, bounds, **marks, confidence=confidence,
                        grader_agreement=agreement)  # fmt: skip


def _grader_agreement(ok: pd.DataFrame, floor: str | None) -> dict[str, tuple[float, int]]:
    """Per ``<scorer>.llm`` column: the share of answers where its grade equals exact match
    where exact match is certain (an exact hit; an answer of the ``floor``, given no notes,
    that is not one), and how many such answers there were."""
    out: dict[str, tuple[float, int]] = {}
    if "items" not in ok.columns:  # a long frame from before items were kept
        return out
    for scorer, rows in ok.groupby("scorer", sort=False):
        keyed = rows.set_index(["case", "summarizer"])
        exact = keyed[keyed["metric"] == "exact"]["items"]
        graded = keyed[keyed["metric"] == "llm"]["items"]
        agree = total = 0
        for key, grades in graded.items():
            hits = exact.get(key)
            if not isinstance(grades, str) or not isinstance(hits, str):
                continue
            for hit, grade in zip(hits.split(), grades.split(), strict=False):
                if "nan" not in (hit, grade) and (hit == "1" or key[1] == floor):
                    total += 1
                    agree += hit == grade
        if total:
            out[f"{scorer}.llm"] = (agree / total, total)
    return out


def _with_intervals(
    table: pd.DataFrame,
    ok: pd.DataFrame,
    order: list[str],
    quality: Mapping[str, bool],
    bounds: Mapping[str, str],
    marks: dict[str, Any],
    weighted: bool,
    confidence: float,
    resamples: int,
    seed: int,
) -> pd.DataFrame:
    import numpy as np

    columns: list[str] = []
    data: dict[str, Any] = {}
    for column in table.columns:
        columns.append(column)
        data[column] = table[column]
        if not _is_quality(str(column), quality):
            continue
        rows = ok[ok["column"] == column]
        units = {label: _units(rows[rows["summarizer"] == label], weighted) for label in order}
        low, high = [], []
        for label in order:
            values = units[label]
            if not values:
                low.append(math.nan)
                high.append(math.nan)
                continue
            v = np.array([x for x, _ in values.values()])
            w = np.array([x for _, x in values.values()])
            lo, hi = _quantiles(
                _draws([(v, w)], resamples, _rng(seed, str(column), label)), confidence
            )
            low.append(lo)
            high.append(hi)
        data[f"{column}.lo"] = low
        data[f"{column}.hi"] = high
        columns += [f"{column}.lo", f"{column}.hi"]
        rows_made = pair_differences(str(column), units, confidence=confidence,
                                     resamples=resamples, seed=seed)  # fmt: skip
        marks["differences"] += rows_made
        _mark_column(marks, str(column), table[column], differences_frame(rows_made), order,
                     bounds, confidence)  # fmt: skip
    out = table.copy()
    for name in columns:
        out[name] = data[name]
    return out[columns]


def _mark_column(
    marks: dict[str, Any],
    column: str,
    means: pd.Series,
    differences: pd.DataFrame,
    order: Sequence[str],
    bounds: Mapping[str, str],
    confidence: float,
) -> None:
    """The marks of one quality column, read off its pairs' differences (one rule for a
    difference that counts, in every table): the rows tied with its best (``≈``), and why it
    measures nothing when its ceiling is not clearly above its floor (``†``)."""
    best = _best(means, bounds)
    if best is not None:
        tied = [best]
        for label in order:
            if label == best or label in bounds.values() or math.isnan(float(means[label])):
                continue
            _, lo, _hi = _pair(differences, column, best, label)
            if not lo > 0:
                tied.append(label)
        if len(tied) > 1:
            marks["tied"][column] = tied
    if "ceiling" in bounds and "floor" in bounds:
        ceiling, floor = bounds["ceiling"], bounds["floor"]
        gap, lo, _hi = _pair(differences, column, ceiling, floor)
        if not math.isnan(gap) and not lo > 0:  # no common items: nothing was scored
            floor_mean = float(means[floor])
            marks["not_measuring"][column] = (
                f"the ceiling ({ceiling}) is not clearly above the floor ({floor}): "
                f"{float(means[ceiling]):.2f} vs {floor_mean:.2f}, the "
                f"{confidence:.0%} interval of the gap reaches {lo:.2f}"
            ) + (f"; given no notes at all the floor scores {floor_mean:.2f}: the metric "
                 "accepts answers that cannot be right (an llm grade: its grader agrees "
                 "with everything)" if floor_mean >= 0.5 else "")  # fmt: skip


def probe_table(
    results: ComparisonResult,
    metric: str = "probe_qa.exact",
    *,
    confidence: float = 0.95,
    resamples: int = 1000,
    seed: int = 0,
) -> SummaryTable:
    """The share of probes answered right, per question category (columns, then ``overall``)
    and summarizer (rows), counted in probes: from the result's ``answers`` (one row per
    probe), so a category needs no matching of items to probes by hand. ``metric`` is
    ``<scorer>.<metric>`` (``probe_qa.exact``, ``probe_qa[local].llm`` ...). Each column is
    named with its number of probes (``temporal (n=64)``; a probe whose call failed is not
    counted), each cell has its bootstrap interval over those probes (``.lo`` / ``.hi``),
    ``differences`` every pair of summarizers per column over the probes both answered, and the
    marks those pairs make, as :func:`summary_table`'s (``tied``: ``≈``; ``not_measuring``:
    ``†``, a column whose ceiling is not clearly above its floor)."""
    import pandas as pd

    result = ComparisonResult.of(results)
    scorer, _, name = metric.rpartition(".")
    answers = result.answers
    rows = answers[answers["scorer"] == scorer] if "scorer" in answers.columns else answers
    if rows.empty or name not in rows.columns:
        known = sorted({f"{s}.{m}" for s in answers.get("scorer", ()) for m in answers.columns
                        if m not in ("case", "summarizer", "scorer", "probe", "category",
                                     "question", "expected", "answer")})  # fmt: skip
        raise InvalidSetting(f"no answers for {metric!r} in the result; known: {known or 'none'}")
    rows = rows.assign(category=rows["category"].fillna("uncategorized").astype(str))
    order = list(dict.fromkeys(rows["summarizer"]))
    groups = [*dict.fromkeys(rows["category"]), None]  # None: every category
    data: dict[str, list[float]] = {}
    differences: list[dict[str, Any]] = []
    columns: list[str] = []
    for category in groups:
        cell = rows if category is None else rows[rows["category"] == category]
        count = int(cell.groupby("summarizer")[name].count().max())
        column = f"{'overall' if category is None else category} (n={count})"
        columns.append(column)
        values, lows, highs = [], [], []
        for label in order:
            outcomes = cell.loc[cell["summarizer"] == label, name].dropna().to_numpy(float)
            low, high = bootstrap_interval(outcomes, confidence=confidence,
                                           resamples=resamples, seed=seed)  # fmt: skip
            values.append(float(outcomes.mean()) if len(outcomes) else math.nan)
            lows.append(low)
            highs.append(high)
        data[column], data[f"{column}.lo"], data[f"{column}.hi"] = values, lows, highs
        units: dict[str, Units] = {label: {} for label in order}
        for case, label, probe, outcome in cell[["case", "summarizer", "probe", name]].itertuples(
            index=False
        ):
            if outcome == outcome:  # NaN: the probe's call failed
                units[label][(str(case), str(probe))] = (float(outcome), 1.0)
        differences += pair_differences(column, units, confidence=confidence,
                                        resamples=resamples, seed=seed)  # fmt: skip
    frame = pd.DataFrame(data, index=pd.Index(order, name="summarizer"))
    bounds = _bounds(result.bounds, order)
    paired = differences_frame(differences)
    marks: dict[str, Any] = {"tied": {}, "not_measuring": {}}
    for column in columns:  # the marks summary_table draws, by the same rule
        _mark_column(marks, column, frame[column], paired[paired["column"] == column], order,
                     bounds, confidence)  # fmt: skip
    return SummaryTable(frame, bounds, marks["tied"], marks["not_measuring"], {}, confidence,
                        differences=paired)  # fmt: skip


def fact_survival_table(results: ComparisonResult | pd.DataFrame, *, ci: bool = False
                        ) -> SummaryTable:  # fmt: skip
    """Share of facts kept per category (columns ``number … decision``, ``overall``) and
    summarizer: kept facts / facts over all cases (micro average), plus ``facts`` counted;
    ``ci=True`` adds each cell's interval (``<category>.lo`` / ``.hi``), the marks and the
    paired ``differences`` of the summarizers per category. Categories without a
    fact in any case are left out. A :class:`SummaryTable`, as :func:`summary_table`'s."""
    result = ComparisonResult.of(results)
    df = result.frame
    rows = df[(df["scorer"] == "fact_recall") & df["metric"].isin([*FACT_CATEGORIES, "overall"])]
    full = summary_table(dataclasses.replace(result, frame=rows), ci=ci)
    rename = {c: c.removeprefix("fact_recall.") for c in full.frame.columns}
    table = full.frame.rename(columns=rename)
    columns = []
    for category in (*FACT_CATEGORIES, "overall"):
        if category in table.columns and table[category].notna().any():
            columns += [c for c in (category, f"{category}.lo", f"{category}.hi")
                        if c in table.columns]  # fmt: skip
    out = table[columns].copy()
    counts = rows[rows["metric"] == "overall"].groupby("summarizer", sort=False)["n"].sum()
    out["facts"] = counts.reindex(out.index).fillna(0).astype(int)
    return full.reframed(out, rename)


def markdown_table(
    table: SummaryTable | pd.DataFrame,
    *,
    percent: Sequence[str] = (),
    digits: int = 3,
    notes: bool = True,
    differences: bool = False,
    labels: Mapping[str, str] | None = None,
) -> str:
    """``table`` as a GitHub markdown table (index first); ``percent`` columns as ``42%``.

    A column with ``.lo`` / ``.hi`` columns (:func:`summary_table`) shows each cell as
    ``value [lo, hi]``; the marks of a :class:`SummaryTable` are drawn (``≈`` tied with the
    best, ``*`` biased, ``†`` a column that measures nothing here; the bounds' rows are named
    ``(ceiling)``/``(floor)``) and, with ``notes``, explained below the table, with the
    differences that rank. With ``differences``, the pairs worth reading follow the table
    (:func:`differences_table`, each pair once: its notes then leave out the differences that
    rank, which that table says in its ``ranks`` column). ``labels``: the names some rows are
    shown by (``{"memorylab/none": "no memory"}``), in place of their labels and a bound's
    role; the marks still read the labels.
    """
    marks = table if isinstance(table, SummaryTable) else SummaryTable(table, {}, {}, {}, {})
    frame, not_measuring, tied, biased = marks.frame, marks.not_measuring, marks.tied, marks.biased
    names = set(frame.columns)
    intervals = {c for c in frame.columns if f"{c}.lo" in names and f"{c}.hi" in names}
    hidden = {f"{c}.{end}" for c in intervals for end in ("lo", "hi")}
    shown = [c for c in frame.columns if c not in hidden]
    roles = {label: kind for kind, label in marks.bounds.items()}

    def number(column: Any, value: Any) -> str:
        if isinstance(value, float):
            if math.isnan(value):
                return "–"
            if column in percent:
                return f"{value:.0%}"
            return f"{value:.{digits}g}" if abs(value) < 10**digits else f"{value:,.0f}"
        return str(value)

    def cell(index: Any, column: Any, row: Any) -> str:
        text = number(column, row[column])
        if column in intervals and text != "–":
            low, high = row[f"{column}.lo"], row[f"{column}.hi"]
            if not (math.isnan(low) or math.isnan(high)):
                text += f" [{number(column, low)}, {number(column, high)}]"
        if index in tied.get(column, [])[1:]:
            text += " ≈"
        if index in biased.get(column, []):
            text += " *"
        return text

    headers = [str(frame.index.name or "")]
    headers += [f"{c} †" if c in not_measuring else str(c) for c in shown]
    rule = "|" + "|".join(["---"] + ["---:"] * len(shown)) + "|"
    lines = ["| " + " | ".join(headers) + " |", rule]
    shown_as = dict(labels or {})
    for index, row in frame.iterrows():
        label = f"{index} ({roles[index]})" if index in roles else str(index)
        cells = [shown_as.get(str(index), label), *[cell(index, c, row) for c in shown]]
        lines.append("| " + " | ".join(cells) + " |")
    said = marks._mark_notes() if differences else marks.notes()
    if notes and said:
        lines += ["", *said]
    pairs = differences_table(marks, labels=shown_as) if differences else ""
    if pairs:
        lines += ["", "Paired differences (over the units both rows have):", pairs]
    return "\n".join(lines)


def differences_table(
    table: SummaryTable | pd.DataFrame,
    *,
    columns: Sequence[str] | None = None,
    every: bool = False,
    labels: Mapping[str, str] | None = None,
) -> str:
    """The paired differences of ``table`` (a :class:`SummaryTable`, or a frame of
    :data:`DIFFERENCE_COLUMNS` such as :meth:`StrategyComparison.differences`) as a GitHub
    markdown table: one line per pair, ``a − b``, the difference with its interval (in
    percentage points where the column is a share), ``n`` (the units both were scored on) and
    whether the interval excludes 0 (``ranks``). Of a :class:`SummaryTable`, unless ``every``,
    the pairs worth reading: each row against the column's best (the bounds aside), a recall
    condition against its memory (``L + recall k`` vs ``L``) and the ceiling against the floor;
    ``.differences`` has every pair. ``columns``: which columns (default all); ``labels``: the
    names rows are shown by, as :func:`markdown_table`'s. An empty string when there is no pair.
    """
    summary = table if isinstance(table, SummaryTable) else None
    given = table.differences if isinstance(table, SummaryTable) else table
    frame = check_columns("table", given, DIFFERENCE_COLUMNS, made_by="SummaryTable.differences")
    chosen = list(dict.fromkeys(frame["column"])) if columns is None else list(columns)
    missing = [c for c in chosen if c not in set(frame["column"])]
    if missing:
        raise InvalidSetting(
            f"columns: no differences for {missing}; the table compares "
            f"{list(dict.fromkeys(frame['column'])) or 'none'}"
        )
    interval = "interval" if summary is None else f"{summary.confidence:.0%} interval"
    lines = [f"| column | a − b | difference [{interval}] | n | ranks |",
             "|---|---|---:|---:|:---:|"]  # fmt: skip
    names = dict(labels or {})
    for column in chosen:
        rows = frame[frame["column"] == column]
        points = _is_rate(rows)
        shown = rows if summary is None or every else _shown(summary, column)
        for _, row in shown.iterrows():
            lines.append(
                f"| {column} | {names.get(str(row['a']), row['a'])} − "
                f"{names.get(str(row['b']), row['b'])} | {_difference_text(row, points)} | "
                f"{int(row['n'])} | {'yes' if _ranks(row) else 'no'} |"
            )
    return "\n".join(lines) if len(lines) > 2 else ""
