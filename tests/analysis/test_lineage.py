"""Lineage, fact survival across summaries, provenance (issue 29, part 2).

The planted-fact workspace: a transcript of five rounds with seven planted facts, written by a
Conversation that compacts after each of the first four rounds with summaries written here, so
which summary holds which fact is known, and the survival table is asserted cell by cell against
a count written out by hand.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from memorylab import Conversation
from memorylab.analysis import (
    compactions_df,
    dropped_by,
    fact_survival_df,
    lineage_df,
    memory_df,
    plot_fact_survival,
    plot_summary_lengths,
    summary_provenance,
    survival_by_generation,
)
from memorylab.analysis._lineage import (
    DROPPED_COLUMNS,
    FACT_SURVIVAL_COLUMNS,
    LINEAGE_COLUMNS,
    PROVENANCE_COLUMNS,
    SURVIVAL_COLUMNS,
)
from memorylab.errors import InvalidSetting
from memorylab.evaluate import Case, Probe
from memorylab.transcripts import Fact, Transcript, TranscriptMessage, bundled_workspace

START = datetime(2026, 4, 20, 9, 0, tzinfo=UTC)

# Five rounds of messages; a fact is planted in the round that states it.
ROUNDS = [
    [
        ("user", "The service reads its settings from /srv/app/config.yaml on start."),
        ("assistant", "Noted. Dump the schema first: `pg_dump -s billing` before any change."),
        ("user", "The owning module is payment_service, keep that in mind."),
        ("assistant", "The proxy listens on port 8443 in staging."),
    ],
    [
        ("user", "We decided to use Postgres 16 for billing."),
        ("assistant", "Understood, the migration plan follows that."),
    ],
    [
        ("user", "Errors go to /var/log/shop/error.log now."),
        ("assistant", "I will tail it during the next deploy."),
    ],
    [
        ("user", "Ticket SHOP-4172 tracks the duplicate orders in checkout."),
        ("assistant", "Linking the fix to it."),
    ],
    [("user", "Scratch notes live in /opt/never/archived.txt for now.")],
]
PLANTED = [  # id, category, text, (round, message in round)
    ("f1", "path", "/srv/app/config.yaml", (0, 0)),
    ("f2", "command", "pg_dump -s billing", (0, 1)),
    ("f3", "name", "payment_service", (0, 2)),
    ("f4", "number", "port 8443", (0, 3)),
    ("f5", "decision", "We decided to use Postgres 16 for billing.", (1, 0)),
    ("f6", "path", "/var/log/shop/error.log", (2, 0)),
    ("f7", "name", "SHOP-4172", (3, 0)),
    ("f8", "path", "/opt/never/archived.txt", (4, 0)),  # never archived: the live file
]
# The summary each compaction writes, and so which facts it holds.
SUMMARIES = [
    # generation 1 keeps f1, f2, f4 and drops f3
    "Config lives at /srv/app/config.yaml. Run pg_dump -s billing first. Staging uses port 8443.",
    # generation 2 keeps f1 (carried) and f5; drops f2 and f4
    "Config lives at /srv/app/config.yaml. Decided: Postgres 16 for billing.",
    # generation 3 keeps f1, f6, and f4 again (which generation 2 had dropped); drops f5
    "Config lives at /srv/app/config.yaml. Errors: /var/log/shop/error.log. Port 8443 again.",
    # generation 4 keeps f1 and f7 (a sentence copied from its message); drops f4 and f6
    "Config lives at /srv/app/config.yaml. Ticket SHOP-4172 tracks the duplicate orders in "
    "checkout.",
]
HELD = {  # fact -> the generations whose summary holds it (the comments above, as sets)
    "f1": {1, 2, 3, 4},
    "f2": {1},
    "f3": set(),
    "f4": {1, 3},
    "f5": {2},
    "f6": {3},
    "f7": {4},
}
ENTERED = {"f1": 1, "f2": 1, "f3": 1, "f4": 1, "f5": 2, "f6": 3, "f7": 4, "f8": None}
CATEGORY = {fact_id: category for fact_id, category, _, _ in PLANTED}


def _transcript() -> Transcript:
    messages: list[TranscriptMessage] = []
    index: dict[tuple[int, int], int] = {}
    for round_, pairs in enumerate(ROUNDS):
        for n, (role, content) in enumerate(pairs):
            index[(round_, n)] = len(messages)
            stamp = START + timedelta(minutes=len(messages))
            messages.append(TranscriptMessage(round_ + 1, role, content, stamp))
    facts = tuple(
        Fact(fact_id, category, text, index[where]) for fact_id, category, text, where in PLANTED
    )
    for fact in facts:
        assert fact.text in messages[fact.message_index or 0].content
    return Transcript("planted", 1, "five rounds, four compactions", tuple(messages), facts)


def _workspace(root: Path) -> Path:
    ticks = (START + timedelta(seconds=n) for n in range(1_000_000))
    conv = Conversation(
        agent_name="Planted", workspace_dir=root, clock=lambda: next(ticks), preload=False
    )
    for round_, pairs in enumerate(ROUNDS):
        for role, content in pairs:
            conv.add(role, content)
        if round_ < len(SUMMARIES):
            conv.compact(SUMMARIES[round_])
    conv.store.close()  # type: ignore[union-attr]
    return root


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    return _workspace(tmp_path / "ws")


def test_lineage_df_one_row_per_compaction_in_order(planted: Path) -> None:
    lineage = lineage_df(planted, model="gpt-4o-mini")
    assert list(lineage.columns) == [name for name, _ in LINEAGE_COLUMNS] + ["tokens"]
    assert lineage["generation"].tolist() == [1, 2, 3, 4]
    assert lineage["archive"].tolist() == compactions_df(planted)["archive"].tolist()
    assert [text.removeprefix("[Compressed Memory Summary] ") for text in lineage["summary"]] == (
        SUMMARIES
    )
    assert lineage["chars"].tolist() == [
        len(s) + len("[Compressed Memory Summary] ") for s in SUMMARIES
    ]
    assert lineage["tokens"].notna().all() and (lineage["tokens"] > 0).all()
    # the archived messages: round 1's four, then each later round's messages and the summary
    assert lineage["messages_archived"].tolist() == [4, 3, 3, 3]
    assert lineage["summary_file"].iloc[-1].endswith("MEMORY.md")
    assert str(lineage["generation"].dtype) == "Int64" and str(lineage["chars"].dtype) == "Int64"


def test_survival_table_equals_the_hand_count(planted: Path) -> None:
    frame = fact_survival_df(planted, _transcript())
    assert list(frame.columns) == [name for name, _ in FACT_SURVIVAL_COLUMNS]
    assert set(frame["source"]) == {"planted"}
    # every fact's entry, and each later summary's verdict, as written above
    entered = frame.groupby("fact_id")["entered"].first()
    assert {k: (None if pd.isna(v) else int(v)) for k, v in entered.items()} == ENTERED
    followed = frame[frame["generation"].notna()]
    held = {
        fact_id: {int(g) for g in part.loc[part["kept"], "generation"]}
        for fact_id, part in followed.groupby("fact_id")
    }
    assert held == HELD
    assert sorted(followed["fact_id"].unique()) == sorted(HELD)
    rows = {(r.fact_id, r.generation): r for r in followed.itertuples()}
    assert rows[("f4", 3)].kept and not rows[("f4", 3)].survived  # back, after a gap
    assert frame.loc[frame["fact_id"] == "f8", "generation"].isna().all()

    table = survival_by_generation(frame)
    assert list(table.columns) == ["category", *SURVIVAL_COLUMNS]
    cells = {
        (r.category, r.since): (r.facts, r.kept, r.survived) for r in table.itertuples(index=False)
    }
    # (category, summaries since entry): (facts followed, held by that summary, held by all)
    assert cells == {
        ("number", 0): (1, 1, 1),  # f4
        ("number", 1): (1, 0, 0),
        ("number", 2): (1, 1, 0),
        ("number", 3): (1, 0, 0),
        ("path", 0): (2, 2, 2),  # f1 at generation 1, f6 at 3
        ("path", 1): (2, 1, 1),
        ("path", 2): (1, 1, 1),  # f6 entered at 3 of 4: followed one step only
        ("path", 3): (1, 1, 1),
        ("command", 0): (1, 1, 1),  # f2
        ("command", 1): (1, 0, 0),
        ("command", 2): (1, 0, 0),
        ("command", 3): (1, 0, 0),
        ("name", 0): (2, 1, 1),  # f3 never kept, f7 at its only step
        ("name", 1): (1, 0, 0),
        ("name", 2): (1, 0, 0),
        ("name", 3): (1, 0, 0),
        ("decision", 0): (1, 1, 1),  # f5
        ("decision", 1): (1, 0, 0),
        ("decision", 2): (1, 0, 0),
        ("all", 0): (7, 6, 6),
        ("all", 1): (6, 1, 1),
        ("all", 2): (5, 2, 1),
        ("all", 3): (4, 1, 1),
    }
    all_rows = table[table["category"] == "all"]
    assert all_rows["summaries"].tolist() == [1, 2, 3, 4]
    assert all_rows["survival"].tolist() == pytest.approx([6 / 7, 1 / 6, 1 / 5, 1 / 4])
    assert all_rows["kept_rate"].tolist() == pytest.approx([6 / 7, 1 / 6, 2 / 5, 1 / 4])
    assert table["category"].tolist()[:4] == ["number"] * 4  # the categories' order, then all


def test_facts_given_as_strings_pairs_and_answers(planted: Path) -> None:
    frame = fact_survival_df(
        planted, ["/srv/app/config.yaml", ("payment_service", "name"), ("Postgres 16", "tech")]
    )
    first = frame.groupby("fact_id").first()
    assert first["category"].tolist() == ["other", "name", "tech"]
    assert set(frame["source"]) == {"given"}
    kept = frame.groupby("fact_id")["kept"].sum().to_dict()
    assert kept == {"f1": 4, "f2": 0, "f3": 1}  # Postgres 16: by the answer rule, generation 2
    case = Case(
        "c", ({"role": "user", "content": "x"},), probes=(Probe("q1", None, "?", "SHOP-4172"),)
    )
    answers = fact_survival_df(planted, case)
    assert answers["source"].unique().tolist() == ["answers"]
    assert answers[["entered", "generation", "kept"]].values.tolist() == [[4, 4, True]]
    with pytest.raises(InvalidSetting, match="facts="):
        fact_survival_df(planted, [3])


def test_extracted_facts_are_marked(planted: Path) -> None:
    frame = fact_survival_df(planted)
    assert set(frame["source"]) == {"extracted"}
    assert not frame["biased"].any()  # no summarizer with the extraction's rules wrote these
    texts = set(frame["fact"])
    assert {"/srv/app/config.yaml", "pg_dump -s billing", "payment_service"} <= texts
    config = frame[frame["fact"] == "/srv/app/config.yaml"]
    assert config["kept"].all() and config["entered"].iloc[0] == 1


def test_provenance_links_a_copied_sentence_to_its_message(planted: Path) -> None:
    rows = summary_provenance(planted, "Planted", 4, top=2)
    assert list(rows.columns) == [name for name, _ in PROVENANCE_COLUMNS]
    best = rows[rows["rank"] == 1].set_index("sentence")
    copied = best.loc["Ticket SHOP-4172 tracks the duplicate orders in checkout."]
    assert copied["score"] == 100.0 and copied["ties"] == 1 and not copied["carried"]
    assert copied["role"] == "user" and copied["position"] == 1  # after the summary it read
    assert copied["snippet"] == "Ticket SHOP-4172 tracks the duplicate orders in checkout."
    runner_up = rows[(rows["sentence"] == copied.name) & (rows["rank"] == 2)]["score"].iloc[0]
    assert runner_up < 100.0
    carried = best.loc["Config lives at /srv/app/config.yaml."]
    assert carried["carried"] and carried["score"] == 100.0
    assert carried["role"] == "System" and carried["position"] == 0  # the previous summary
    # the same call on the rows the explorer holds
    frame = memory_df(planted)
    assert summary_provenance(frame, None, 4, top=2).equals(rows)
    with pytest.raises(InvalidSetting, match="no generation 9"):
        summary_provenance(planted, "Planted", 9)


def test_dropped_by_names_what_a_generation_lost(planted: Path) -> None:
    transcript = _transcript()
    second = dropped_by(planted, "Planted", 2, transcript)
    assert list(second.columns) == [name for name, _ in DROPPED_COLUMNS]
    assert second["fact_id"].tolist() == ["f2", "f4"]  # held by summary 1, not by summary 2
    assert second["in_previous"].all() and not second["in_messages"].any()
    assert (second["position"] == 0).all()  # where they were: the previous summary
    first = dropped_by(planted, "Planted", 1, transcript)
    assert first["fact_id"].tolist() == ["f3"]
    assert first[["in_previous", "in_messages", "position", "role"]].values.tolist() == [
        [False, True, 2, "user"]
    ]
    fourth = dropped_by(planted, "Planted", 4, transcript)
    assert fourth["fact_id"].tolist() == ["f4", "f6"]
    extracted = dropped_by(planted, "Planted", 1)
    assert "payment_service" in set(extracted["fact"])
    assert "/srv/app/config.yaml" not in set(extracted["fact"])


def test_a_compaction_without_a_summary(tmp_path: Path) -> None:
    conv = Conversation(agent_name="k", workspace_dir=tmp_path, preload=False)
    for i in range(4):
        conv.add("user", f"message {i} about /srv/app{i}")
    conv.compact(None, kept=conv.compaction_entries()[-1:])
    conv.add("user", "after")
    conv.compact("now a summary of /srv/app3")
    lineage = lineage_df(tmp_path)
    assert lineage["summary"].isna().tolist() == [True, False]
    assert lineage["chars"].isna().tolist() == [True, False]
    frame = fact_survival_df(tmp_path, ["/srv/app3"])
    assert frame[["generation", "kept", "survived"]].values.tolist() == [
        [1, False, False],
        [2, True, False],
    ]
    assert summary_provenance(tmp_path, "k", 1).empty


@pytest.mark.parametrize("which", ["memorylab", "reference"])
def test_bundled_workspaces(which: str) -> None:
    workspace = bundled_workspace(which)
    lineage = lineage_df(workspace)
    records = compactions_df(workspace)
    assert len(lineage) == len(records)
    assert lineage["summary"].notna().all()  # every compaction there wrote a summary
    messages = memory_df(workspace)
    summaries = messages[messages["is_summary"]]
    assert sorted(lineage["chars"]) == sorted(summaries["chars"])
    frame = fact_survival_df(workspace)
    assert len(frame) and set(frame["source"]) == {"extracted"}
    assert frame["biased"].any() == (which == "memorylab")  # the extractive summarizer's
    table = survival_by_generation(frame)
    assert (table["survived"] <= table["kept"]).all() and (table["kept"] <= table["facts"]).all()
    agent = str(lineage["agent"].iloc[0])
    rows = summary_provenance(workspace, agent, 2)
    assert len(rows) and rows["score"].between(0, 100).all() and rows["carried"].any()
    assert dropped_by(workspace, agent, 2)["generation"].eq(2).all()


def test_plots(planted: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    frame = fact_survival_df(planted, _transcript())
    ax = plot_fact_survival(frame)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[-1] == "all (7 facts)" and "path (2 facts)" in labels
    ax = plot_fact_survival(survival_by_generation(frame), measure="kept_rate")
    assert ax.get_ylabel() == "facts held by that summary (%)"
    ax = plot_summary_lengths(lineage_df(planted))
    assert ax.get_xlabel() == "generation (compactions so far)"
    with pytest.raises(InvalidSetting):
        plot_fact_survival(frame, measure="other")


def test_max_summaries_follows_each_fact_that_far_and_no_further() -> None:
    """The bound the report uses: the rows are the unbounded frame's first summaries after each
    fact entered, the same values; a bound below one is refused."""
    from memorylab.transcripts import bundled_workspace

    whole = fact_survival_df(bundled_workspace())
    bounded = fact_survival_df(bundled_workspace(), max_summaries=2)
    expected = whole[whole["since"].isna() | (whole["since"] < 2)].reset_index(drop=True)
    pd.testing.assert_frame_equal(bounded, expected)
    assert len(bounded) < len(whole)
    with pytest.raises(InvalidSetting, match="max_summaries"):
        fact_survival_df(bundled_workspace(), max_summaries=0)
