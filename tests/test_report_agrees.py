"""Every sentence of the report agrees with its table (issue 41), read off the page as a user
reads it: on the bundled workspace (memorylab's Agent wrote it) and on the reference's (the
reference framework's files: no usage.jsonl, no compactions.jsonl)."""

from __future__ import annotations

import functools
import html
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from memorylab.report import build_report
from memorylab.transcripts import bundled_workspace

WORKSPACES = ("memorylab", "reference")


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return {name: build_report(bundled_workspace(name)) for name in WORKSPACES}


def _words(part: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", part))).strip()


def _section(page: str, title: str) -> str:
    """The HTML from the heading ``title`` to the next h2."""
    assert f"<h2>{title}</h2>" in page, f"no section {title!r}"
    return page.split(f"<h2>{title}</h2>", 1)[1].split("<h2>", 1)[0]


def _notes(part: str) -> str:
    return " ".join(
        _words(note) for note in re.findall(r"<p class=note[^>]*>(.*?)</p>", part, re.S)
    )


def _tables(part: str) -> list[list[dict[str, str]]]:
    """Each table of ``part`` as its rows, a dict of heading → cell text per row."""
    tables = []
    for table in re.findall(r"<table[^>]*>(.*?)</table>", part, re.S):
        rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)
        head = [_words(h) for h in re.findall(r"<th[^>]*>(.*?)</th>", rows[0], re.S)]
        tables.append(
            [
                dict(zip(head, [_words(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)],
                         strict=True))
                for row in rows[1:]
            ]
        )  # fmt: skip
    return tables


def _count(text: str) -> int:
    return int(text.replace(",", ""))


def _agents(page: str) -> dict[str, dict[str, str]]:
    return {row["agent"]: row for row in _tables(_section(page, "Agents"))[0]}


def test_the_calibration_sentence_adds_up_to_its_table(pages: dict[str, str]) -> None:
    """Issue 41: "15 compactions: 8 late, 7 on time" above a table of 10 rows without
    BugHunter. The table has a row per agent (every agent that compacted), and its columns add
    up to the sentence."""
    section = _section(pages["memorylab"], "Did compaction fire when it should have?")
    said = re.search(
        r"([\d,]+) compactions of (\d+) agents? against the billed count: (\d+) late"
        r"(?: \(by [^)]*\))?, (\d+) on time, (\d+) early",
        _notes(section),
    )
    assert said is not None, _notes(section)
    total, agents, late, on_time, early = (_count(g) for g in said.groups())
    (rows,) = _tables(section)
    assert len(rows) == agents
    compacted = {a for a, row in _agents(pages["memorylab"]).items() if _count(row["compactions"])}
    assert {row["agent"] for row in rows} == compacted  # BugHunter too
    assert sum(_count(row["compactions"]) for row in rows) == total
    assert sum(_count(row["late"]) for row in rows) == late
    assert sum(_count(row["on time"]) for row in rows) == on_time
    assert sum(_count(row["early"]) for row in rows) == early
    reported = re.search(r"undercounted ([\d,]+) of ([\d,]+) calls", _notes(section))
    assert reported is not None
    assert sum(_count(row["reported"]) for row in rows) == _count(reported.group(2))


def test_no_usage_recorded_says_why_the_calibration_is_empty(pages: dict[str, str]) -> None:
    """On the reference's files calibration_df has no row: the section says why (no
    usage.jsonl, who wrote the files) instead of a table."""
    section = _section(pages["reference"], "Did compaction fire when it should have?")
    notes = _notes(section)
    assert "No model call was recorded for QuantAgent, SupportBot: no usage.jsonl" in notes
    assert "reference framework" in notes
    assert not _tables(section)


def _survival_columns(row: dict[str, str]) -> list[tuple[int, str]]:
    return [
        (int(re.match(r"after (\d+)", heading).group(1)), cell)  # type: ignore[union-attr]
        for heading, cell in row.items()
        if heading.startswith("after ")
    ]


@pytest.mark.parametrize("workspace", WORKSPACES)
def test_each_fact_survival_cell_says_how_many_facts_it_rests_on(
    pages: dict[str, str], workspace: str
) -> None:
    """Issue 41: shares rose between columns with no count, the columns skipped 4 while the
    plot drew it, and "all" was the number row unsaid. Each cell is "share of n", n is at most
    the facts of its row and never grows along it, the columns are 1, 2, 3 … as the plot's, and
    the note says how much of all is numbers."""
    section = _section(pages[workspace], "Which facts survive each summary")
    (rows,) = _tables(section)
    by_category = {row["category"]: row for row in rows}
    for row in rows:
        steps = _survival_columns(row)
        assert [n for n, _ in steps] == list(range(1, len(steps) + 1))
        counts = []
        for _, cell in steps:
            if cell == "–":
                continue
            share = re.fullmatch(r"(\d+)% of ([\d,]+)", cell)
            assert share is not None, cell
            counts.append(_count(share.group(2)))
        assert counts[0] == _count(row["facts"])
        assert counts == sorted(counts, reverse=True)
    numbers, everything = by_category["number"], by_category["all"]
    said = re.search(
        r"([\d,]+) of the ([\d,]+) facts followed \((\d+)%\) are numbers", _notes(section)
    )
    assert said is not None, _notes(section)
    assert _count(said.group(1)) == _count(numbers["facts"])
    assert _count(said.group(2)) == _count(everything["facts"])


@pytest.mark.parametrize("workspace", WORKSPACES)
def test_each_summary_is_named_by_the_archive_it_replaced(
    pages: dict[str, str], workspace: str
) -> None:
    """Issue 41: each summary was labelled with the next compaction's archive (the file it is
    in). Now it names the archive of the compaction that wrote it, at that compaction's time,
    as the agent's compaction table has them."""
    page = pages[workspace]
    for agent in _agents(page):
        section = _section(page, agent)
        compactions = {row["archive"]: row["time"] for row in _tables(section)[0]}
        labels = re.findall(r"<details><summary>(.*?)</summary>", section, re.S)
        assert labels
        for label in map(_words, labels):
            found = re.match(r"summary of (\S+) · written (\S+ \S+) · in (\S+) ·", label)
            assert found is not None, label
            archive, written, holder = found.groups()
            assert archive in compactions, (label, compactions)
            assert compactions[archive].replace("\u00a0", " ") == written
            assert holder != archive  # the summary is in the file written after it


@pytest.mark.parametrize("workspace", WORKSPACES)
def test_the_header_and_every_agent_count_tokens_the_same_way(
    pages: dict[str, str], workspace: str
) -> None:
    """Issue 41: the header said gpt-4o while every agent line said cl100k_base. One tokenizer
    is named, the one every agent's line names, and the cards' total is the Agents table's."""
    page = pages[workspace]
    header = _words(re.search(r"<p class=meta>(.*?)</p>", page, re.S).group(1))  # type: ignore[union-attr]
    counted = re.search(r"tokens counted as (\S+)", header)
    assert counted is not None, header
    for agent in _agents(page):
        line = _notes(_section(page, agent).split("<img", 1)[0])
        named = re.escape(counted.group(1))
        assert re.search(rf"tokens (and prices )?as {named}(?![\w-])", line), line
    total = re.search(r"<b>([\d,]+)</b>tokens in all files", page)
    assert total is not None
    assert _count(total.group(1)) == sum(_count(r["tokens"]) for r in _agents(page).values())


def test_the_what_if_says_whether_caching_is_counted(pages: dict[str, str]) -> None:
    """Issue 41: "est. cost" did not say whether caching was counted. It says so, beside the
    uncached cost; without a model there is no cost column, and the sentence says why."""
    own = _section(pages["memorylab"], "What-if thresholds")
    assert "est. cost counts prompt caching" in _notes(own)
    rows = _tables(own)[0]
    assert all(
        float(row["est. cost (USD)"].lstrip("$")) < float(row["uncached cost (USD)"].lstrip("$"))
        for row in rows
    )
    reference = _section(pages["reference"], "What-if thresholds")
    assert "No est. cost: no model is recorded" in _notes(reference)
    assert "est. cost (USD)" not in _tables(reference)[0][0]


@pytest.mark.parametrize("workspace", WORKSPACES)
def test_the_strategies_section_agrees_with_its_tables(
    pages: dict[str, str], workspace: str
) -> None:
    """Issue 41: no strategies section. One table per agent, a row per registered strategy at
    the agent's setting; its sentence names the agent's own strategy (the row marked) and the
    fewest input tokens (the table's least)."""
    from memorylab.compress import strategy_names

    section = _section(pages[workspace], "Strategies")
    agents = re.findall(r"<h3>(.*?)</h3>", section)
    assert sorted(agents) == sorted(_agents(pages[workspace]))
    for agent, part in zip(agents, re.split(r"<h3>.*?</h3>", section)[1:], strict=True):
        (rows,) = _tables(part)
        assert rows, agent
        assert [row["strategy"].split("(")[0] for row in rows] == strategy_names()
        notes = _notes(part)
        if all(_count(row["compactions"]) == 0 for row in rows):
            assert "No strategy compacts at this setting" in notes
            continue
        least = min(rows, key=lambda row: _count(row["input tokens read"]))
        assert (
            f"Fewest input tokens read: {least['strategy']}, {least['input tokens read']}" in notes
        )
        (own,) = [row for row in rows if row[""] == "the agent's setting"]
        assert f"The agent ran {own['strategy']}: {own['input tokens read']}" in notes


def test_the_turns_compactions_kept_are_one_sentence_not_rows(pages: dict[str, str]) -> None:
    """Issue 41: "How the files were read" listed a duplicate row per file for the turn in
    progress each compaction keeps (compactions.jsonl's kept_turn). They are one sentence, its
    count the records' kept_turn summed; no duplicate row is left."""
    section = _section(pages["memorylab"], "How the files were read")
    kept = 0
    for records in (bundled_workspace() / "agents").glob("*/compactions.jsonl"):
        for line in records.read_text().splitlines():
            kept += json.loads(line).get("extra", {}).get("kept_turn", 0)
    said = re.search(r"([\d,]+) messages in ([\d,]+) files, each read once", _notes(section))
    assert said is not None, _notes(section)
    assert _count(said.group(1)) == kept
    assert all(row["kind"] != "duplicate" for table in _tables(section) for row in table)


def test_the_reference_costs_say_why_they_are_not_priced(pages: dict[str, str]) -> None:
    """Issue 41: compaction_costs_df gave all-NaN costs with no word why. The section names
    what is missing; with a model given, what it can price (the rebuild) and what it cannot."""
    notes = _notes(_section(pages["reference"], "What each compaction cost, with prompt caching"))
    assert "No net cost for QuantAgent, SupportBot: no model is recorded" in notes
    assert "no token counts around each compaction" in notes
    priced = build_report(bundled_workspace("reference"), model="gpt-4o", sweep_thresholds=(0.9,))
    notes = _notes(_section(priced, "What each compaction cost, with prompt caching"))
    assert "no model is recorded" not in notes and "The cache rebuild alone is priced" in notes


def test_no_section_is_dropped_without_a_word(tmp_path: Path) -> None:
    """Issue 41: sections went missing silently. An agent that never compacted still gets the
    compactions heading, its summaries' place and every audit, each saying why it is empty."""
    from memorylab import Conversation

    conversation = Conversation(agent_name="Quiet", workspace_dir=tmp_path)
    for n in range(6):
        conversation.add("User" if n % 2 else "Assistant", f"message {n} about /srv/app.py")
    page = build_report(tmp_path, sweep_thresholds=(0.9,))
    titles = re.findall(r"<h2>(.*?)</h2>", page)
    assert titles == [
        "Agents", "Compactions", "Quiet", "Which facts survive each summary",
        "What each compaction cost, with prompt caching", "Did compaction fire when it should have?",
        "What-if thresholds", "Strategies", "Privacy",
    ]  # fmt: skip
    for title in titles[1:-1]:
        assert _notes(_section(page, title)), f"{title}: no word"
    assert "None: no agent's files hold an archive" in _notes(_section(page, "Compactions"))
    agent = _notes(_section(page, "Quiet"))
    assert "No compaction of this agent" in agent and "No summary in the files" in agent


SWARMS_PYTHON = os.environ.get("MEMORYLAB_SWARMS_PYTHON")  # .ci/run sets it
REFERENCE_LOOP = Path(__file__).parent / "compat" / "reference_agent_loop.py"


@pytest.mark.skipif(
    not SWARMS_PYTHON, reason="set MEMORYLAB_SWARMS_PYTHON to a Python with swarms==16.0.3"
)
def test_a_workspace_the_real_swarms_wrote_says_why_each_audit_is_empty(tmp_path: Path) -> None:
    """Issue 41, on files swarms 16.0.3 wrote (tests/compat's agent loop, its summarizer a local
    fake server): calibration and costs say what is missing, the facts section names the few
    facts it followed, and the summaries are named by the archives they replaced."""
    from fakes import FakeOpenAIServer

    folder = tmp_path / "workspace" / "agents" / "Researcher"
    folder.mkdir(parents=True)
    environment = {
        **os.environ,
        "OPENAI_API_KEY": "sk-test-not-a-key",
        "SWARMS_TELEMETRY_ON": "false",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_OFFLINE_MODE": "true",
        "HF_HUB_OFFLINE": "1",
    }
    environment.pop("WORKSPACE_DIR", None)
    with FakeOpenAIServer("Experiments 1 to 12 measured latencies from 7 to 84 ms.") as server:
        done = subprocess.run(
            [str(SWARMS_PYTHON), str(REFERENCE_LOOP), str(folder)],
            capture_output=True, text=True, cwd=tmp_path, timeout=300,
            env={**environment, "OPENAI_API_BASE": server.base_url},
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    page = build_report(tmp_path / "workspace", sweep_thresholds=(0.9,))
    calibration = _notes(_section(page, "Did compaction fire when it should have?"))
    assert "No model call was recorded for Researcher: no usage.jsonl" in calibration
    costs = _notes(_section(page, "What each compaction cost, with prompt caching"))
    assert "No net cost for Researcher: no model is recorded" in costs
    facts = _section(page, "Which facts survive each summary")
    followed = sum(_count(row["facts"]) for row in _tables(facts)[0] if row["category"] != "all")
    assert followed <= 5 and "The only facts followed: " in _notes(facts)
    for label in map(_words, re.findall(r"<details><summary>(.*?)</summary>", page, re.S)):
        assert label.startswith("summary of "), label


def _foreign_samples() -> dict[str, Path]:
    from memorylab.transcripts import bundled_foreign_runs

    runs = bundled_foreign_runs()
    return {**runs, "inspect-ai json": runs["inspect-ai"].with_suffix(".json")}


FOREIGN = tuple(_foreign_samples())


@functools.cache
def _foreign_page(sample: str) -> str:
    return build_report(_foreign_samples()[sample])


def _what_if(page: str) -> tuple[str, str, int, int]:
    """The what-if's agent, its notes, and its sentence's replayed and recorded compactions."""
    section = _section(page, "What-if thresholds")
    notes = _notes(section)
    agent = re.search(r"The full timeline of (.+?) \(the largest agent\)", notes)
    said = re.search(
        r"the replay makes ([\d,]+) compaction\(s\); the agent recorded ([\d,]+)", notes
    )
    assert agent is not None and said is not None, notes
    return agent.group(1), notes, _count(said.group(1)), _count(said.group(2))


@pytest.mark.parametrize("sample", FOREIGN)
def test_the_what_if_of_another_frameworks_run_says_why_its_count_differs(sample: str) -> None:
    """Issue 41, on each bundled run of another framework: the what-if said "the replay makes 4
    compaction(s); the agent recorded 7" on the deepagents sample while 'Replay at the recorded
    settings' reproduced 7 of 7. The recorded count is the Agents table's and the validation's;
    the sentence says what the what-if counts otherwise (tokenizer, static context, summaries)
    and what the validation found, as its table has it."""
    page = _foreign_page(sample)
    agent, notes, _, recorded = _what_if(page)
    assert recorded == _count(_agents(page)[agent]["compactions"])
    (validation,) = _tables(_section(page, "Replay at the recorded settings"))
    (row,) = [row for row in validation if row["agent"] == agent]
    assert _count(row["recorded"]) == recorded
    assert "same check points, static context, restarts and summaries as the run" not in notes
    assert "the token count, static context and summaries are memorylab's" in notes
    why = re.search(r"Why this count can differ from the run's: (.*)", notes)
    assert why is not None, notes
    assert re.search(r"the replay counts tokens as \w+", why.group(1))
    assert "its static context is" in why.group(1)
    assert "'Replay at the recorded settings' below" in why.group(1)
    if row["verdict"] == "reproduced":
        assert (
            f"reproduced, {row['replayed']} of {row['recorded']} compactions at the messages "
            "the run's fired at" in why.group(1)
        )
        measured = re.search(r"measured ([\d,]+(?:-[\d,]+)?) of the framework's tokens", notes)
        assert measured is not None, notes
        assert row["how"].startswith("the static context")
        assert measured.group(1) in row["how"]
    else:
        assert row["verdict"] == "cannot check"
        assert "here it cannot check (its row says why)" in why.group(1)


@pytest.mark.parametrize("sample", FOREIGN)
def test_the_strategies_row_of_another_frameworks_run_agrees_with_the_what_if(
    sample: str,
) -> None:
    """Issue 41: the Strategies section said "The agent ran summary()" of a deepagents run and
    showed 4 compactions beside the 7 it recorded, unsaid. The row that stands for the run's own
    compaction is the what-if's row at the agent's setting (the same replay), and the sentence
    names the framework and the count the run recorded."""
    page = _foreign_page(sample)
    agent, _, replayed, recorded = _what_if(page)
    section = _section(page, "Strategies")
    agents = re.findall(r"<h3>(.*?)</h3>", section)
    part = re.split(r"<h3>.*?</h3>", section)[1:][agents.index(html.escape(agent))]
    (rows,) = _tables(part)
    notes = _notes(part)
    assert "The agent ran" not in notes
    summary = next(row for row in rows if row["strategy"].startswith("summary("))
    assert _count(summary["compactions"]) == replayed
    own = [row for row in rows if row.get("") == "the agent's setting"]
    if own:
        (own_row,) = own
        made_by = _tables(_section(page, "Replay at the recorded settings"))[0][0]["format"]
        assert (
            f"{own_row['strategy']} stands for {made_by}'s own compaction, replayed as "
            f"memorylab's: {own_row['compactions']} compaction(s), the run recorded {recorded:,}"
            in notes
        ), notes
    else:
        assert "No strategy compacts at this setting" in notes


@pytest.mark.parametrize("sample", FOREIGN)
def test_a_curve_that_peaks_below_its_trigger_says_why(sample: str) -> None:
    """Issue 41: the deepagents run's curve said "The curve's 7 peak(s) are where compaction
    fired" with every peak 1,000-2,500 tokens under the dashed trigger. Where peaks are below
    the trigger, a sentence says how many (at most the agent's compactions), the trigger the
    what-if's table compacts at, and why: the static context the replay at the recorded
    settings measured (its table's figure), or a guessed trigger."""
    page = _foreign_page(sample)
    agent, *_ = _what_if(page)
    notes = _notes(_section(page, html.escape(agent)).split("<details>", 1)[0])
    said = re.search(
        r"([\d,]+) of these peaks are below the trigger line \([\d,-]+ tokens, the trigger at "
        r"([\d,]+)\): (.*)",
        notes,
    )
    if sample == "deepagents":
        assert said is not None, notes
    if said is None:
        return
    assert _count(said.group(1)) <= _count(_agents(page)[agent]["compactions"])
    what_if = _tables(_section(page, "What-if thresholds"))[0]
    own = [row for row in what_if if row.get("") == "the agent's setting"]
    if not own:
        assert "the trigger is memorylab's default, a guess" in said.group(3)
        return
    assert own[0]["compacts at (tokens)"] == said.group(2)
    (row,) = [
        row
        for row in _tables(_section(page, "Replay at the recorded settings"))[0]
        if row["agent"] == agent
    ]
    measured = re.search(r"measured them at ([\d,]+(?:-[\d,]+)?) of the framework's", notes)
    assert measured is not None and measured.group(1) in row["how"], notes
