"""The audits (calibration, costs, facts): one result type the report renders alike, and fact
survival matched by the shared rules, each summary and each fact prepared once (issue 37)."""

from __future__ import annotations

import hashlib

import matplotlib
import pytest

from memorylab.analysis import (
    AUDITS,
    AuditResult,
    audit,
    calibration_df,
    calibration_summary,
    compaction_costs_df,
    compaction_timing_df,
    fact_survival_df,
    survival_by_generation,
)
from memorylab.evaluate import fact_kept
from memorylab.transcripts import bundled_transcripts, bundled_workspace, load_transcript

matplotlib.use("Agg")

# --------------------------------------------------------------------------- one result type


@pytest.mark.parametrize("name", ["facts", "costs", "calibration"])
def test_each_audit_returns_the_one_result_type(name: str) -> None:
    workspace = bundled_workspace()
    result = audit(workspace, name)
    assert isinstance(result, AuditResult) and result.name == name and name in AUDITS
    assert len(result.frame) and len(result.summary) and result.notes() and result.title
    made = {
        "facts": lambda: fact_survival_df(workspace),
        "costs": lambda: compaction_costs_df(workspace),
        "calibration": lambda: compaction_timing_df(workspace),
    }[name]()
    assert result.frame.equals(made)  # the audit's frame is its function's
    text = result.text()
    assert len(text) == len(result.frame) and set(text.columns) <= set(result.headings.values())
    assert all(isinstance(v, str) for v in text.iloc[0])
    shown = result.text("summary")
    assert len(shown) == len(result.summary) and shown.columns[0] in ("category", "agent", "model")
    axes = result.plot()
    assert axes.has_data() and axes.get_title()
    assert f"{len(result.frame)} rows" in repr(result)
    assert result.notes()[0] in result._repr_html_()  # a notebook shows the table, then the notes
    import matplotlib.pyplot as plt

    plt.close("all")


def test_the_audits_summaries_are_their_tables_per_model_agent_and_category() -> None:
    workspace = bundled_workspace()
    calibration = audit(workspace, "calibration")
    assert calibration.summary.equals(calibration_summary(calibration_df(workspace)))
    costs = audit(workspace, "costs")
    frame = compaction_costs_df(workspace)
    for row in costs.summary.itertuples():
        mine = frame[frame["agent"] == row.agent]
        assert row.compactions == len(mine)
        assert row.paid_for_themselves == int((mine["net_cost_usd"] < 0).sum())
        assert row.net_cost_usd == pytest.approx(mine["net_cost_usd"].sum())
        assert f"{row.agent}: {row.paid_for_themselves} of {row.compactions} paid" in " ".join(
            costs.notes()
        )
    facts = audit(workspace, "facts", max_summaries=3)
    survival = survival_by_generation(facts.frame[facts.frame["generation"].notna()])
    everything = facts.summary.set_index("category").loc["all"]
    expected = survival[(survival["category"] == "all") & (survival["summaries"] == 3)]
    assert everything["after_3"] == pytest.approx(float(expected["survival"].iloc[0]))
    assert "after_5" not in facts.summary.columns  # followed through 3 summaries only
    assert facts.text("summary").columns.tolist() == [
        "category",
        "facts",
        "after 1 summary",
        "after 2 summaries",
        "after 3 summaries",
    ]


# --------------------------------------------------------------------------- the matching rules

# What the matching gave before each summary and each fact were prepared once (issue 37): the
# digests of the rows below, made by the code of commit e8aa818 (each summary normalized again
# for every fact). Preparing them once must not change one match, score or evidence.
_SURVIVAL_BEFORE = (4184, "57b7dc4433485a16828446c77451efe5c0a210ac4fc5eb997c8cdd298a7c0791")
_KEPT_BEFORE = (2385, "a0167fff80a823e41d034706b9db4d42e8899b4ad8f2329e0eba9401b59fcca9")


def _digest(rows: list[str]) -> tuple[int, str]:
    return len(rows), hashlib.sha256("\n".join(rows).encode()).hexdigest()


def test_fact_survival_matches_as_before_the_summaries_were_prepared_once() -> None:
    workspace = bundled_workspace()
    planted = load_transcript(bundled_transcripts()[0])
    runs = {
        "extracted": fact_survival_df(workspace),
        "planted": fact_survival_df(workspace, planted),
    }
    rows = [
        f"{run},{r.agent},{r.fact_id},{r.generation},{r.kept},{r.score:.6f},{r.evidence}"
        for run, frame in runs.items()
        for r in frame.itertuples()
    ]
    assert _digest(rows) == _SURVIVAL_BEFORE


def test_every_category_of_planted_fact_matches_as_before() -> None:
    # the planted facts of every bundled transcript (all five categories, kept and not) against
    # stretches of 60 of its messages: the number, decision and name rules all run
    rows = []
    for path in bundled_transcripts():
        transcript = load_transcript(path)
        messages = transcript.messages
        texts = [
            "\n".join(m.content for m in messages[i : i + 60]) for i in range(0, len(messages), 60)
        ]
        for fact in transcript.facts:
            for number, text in enumerate(texts):
                found = fact_kept(fact, text)
                rows.append(
                    f"{path.name},{fact.id},{number},{found.kept},{found.score:.6f},{found.evidence}"
                )
    assert _digest(rows) == _KEPT_BEFORE
