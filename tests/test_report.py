"""The HTML report as a newcomer reads it: problems first and counted, private, fast to make."""

from __future__ import annotations

import html
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from memorylab.report import build_report, write_report
from memorylab.transcripts import bundled_workspace


@pytest.fixture(scope="module")
def damaged_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five agents, four of them unreadable (bytes that are not text, a folder where MEMORY.md
    should be, text that is not the format): the workspace issue 19 reported."""
    root = tmp_path_factory.mktemp("damaged")
    agents = root / "agents"
    agents.mkdir()
    shutil.copytree(bundled_workspace() / "agents" / "BugHunter", agents / "BugHunter")
    for name in ("Broken", "Folder", "Latin1", "Plain"):
        (agents / name).mkdir()
    (agents / "Broken" / "MEMORY.md").write_bytes(bytes(range(256)) * 8)
    (agents / "Folder" / "MEMORY.md").mkdir()
    (agents / "Latin1" / "MEMORY.md").write_bytes(b"\xff\xfe caf\xe9")
    (agents / "Plain" / "MEMORY.md").write_text("hello\nnot a memory file\n")
    return root


@pytest.fixture(scope="module")
def damaged_report(damaged_workspace: Path) -> str:
    return build_report(damaged_workspace, sweep_thresholds=(0.5, 0.9))


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_the_header_counts_every_agent_and_the_unreadable_ones(damaged_report: str) -> None:
    header = _text(damaged_report[: damaged_report.index("</p>")])
    assert "5 agents, 4 unreadable" in header
    cards = _text(damaged_report[: damaged_report.index("<h2>")])
    assert "5 agents, 4 unreadable" in cards
    # "1 agents" nowhere (a path such as "agents/x" after a line number is not a count)
    assert not re.search(r"\b1 agents\b(?!/)", _text(damaged_report))


def test_problems_come_first_whole_and_wrapped(damaged_report: str) -> None:
    headings = re.findall(r"<h2>([^<]+)</h2>", damaged_report)
    assert headings[0] == "Problems found"
    section = damaged_report[
        damaged_report.index("<section class=problems>") : damaged_report.index("</section>")
    ]
    assert '<table class="wrap">' in section  # long messages wrap instead of running off
    text = _text(section)
    assert "nothing could be read of 4 agents (Broken, Folder, Latin1, Plain)" in text
    assert "agents/Folder/MEMORY.md" in text and "not a regular file" in text
    assert "not UTF-8" in text
    assert "table.wrap td{white-space:normal" in damaged_report


def test_a_clean_workspace_has_no_problems_section_and_a_plain_count() -> None:
    html = build_report(bundled_workspace(), sweep_thresholds=(0.5, 0.9))
    assert "Problems found" not in html
    assert "3 agents ·" in _text(html[: html.index("</p>")])


def test_the_what_if_table_has_human_headings_and_one_format_per_column(
    damaged_report: str,
) -> None:
    section = damaged_report[damaged_report.index("What-if thresholds") :]
    table = section[section.index("<table") : section.index("</table>")]
    headings = re.findall(r"<th[^>]*>([^<]*)</th>", table)
    assert headings == [
        "",
        "threshold",
        "compacts at (tokens)",
        "mode",
        "compactions",
        "peak context (tokens)",
        "input tokens read",
        "est. cost (USD)",
        "uncached cost (USD)",
    ]
    assert not any("_" in heading for heading in headings)
    rows = [re.findall(r"<td[^>]*>([^<]*)</td>", row) for row in table.split("<tr>")[2:]]
    thresholds = [row[1] for row in rows]
    assert all(re.fullmatch(r"0\.\d\d", value) for value in thresholds), thresholds
    costs = [row[-1] for row in rows] + [row[-2] for row in rows]
    assert all(re.fullmatch(r"\$\d+\.\d{4}", value) for value in costs), costs
    assert all(re.fullmatch(r"\d{1,3}(,\d{3})*", row[6]) for row in rows)


def test_the_report_is_written_private(damaged_workspace: Path, tmp_path: Path) -> None:
    output = tmp_path / "report.html"
    output.write_text("an older report, readable by all")
    output.chmod(0o644)
    written = write_report(damaged_workspace, output, sweep_thresholds=(0.5,))
    assert written == output and "Problems found" in output.read_text()
    assert stat.S_IMODE(output.stat().st_mode) == 0o600  # it quotes stored conversations


def test_the_report_prices_without_importing_litellm(tmp_path: Path) -> None:
    """litellm takes seconds to import; the report prices its one column from the cost map
    litellm ships, read as a file."""
    script = (
        "import sys\n"
        "from memorylab.report import build_report\n"
        "from memorylab.transcripts import bundled_workspace\n"
        "html = build_report(bundled_workspace(), sweep_thresholds=(0.5, 0.9))\n"
        "assert '$0.0' in html, 'the cost column is priced'\n"
        "print('litellm' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert done.stdout.strip() == "False", done.stderr


def test_an_edit_is_a_remark_after_the_agents_not_a_problem() -> None:
    """An edit archives the file it changes; the loaders say so with a note of kind 'edit',
    which the report lists apart, after the agents, not under "Problems found"."""
    from memorylab import Conversation

    conv = Conversation(agent_name="Editor")
    conv.add("User", "first")
    conv.add("Assistant", "second")
    conv.delete(0)
    assert conv.memory_md_path is not None
    root = conv.memory_md_path.parent.parent.parent
    html = build_report(root, sweep_thresholds=(0.5, 0.9))
    headings = re.findall(r"<h2>([^<]+)</h2>", html)
    assert "Problems found" not in headings and "<section class=problems>" not in html
    assert headings.index("How the files were read") == headings.index("Agents") + 1
    remarks = _text(html[html.index("How the files were read") :])
    assert "Editor" in remarks and "edit" in remarks and "before an edit" in remarks


def test_many_agents_share_one_figure_of_small_multiples(tmp_path: Path) -> None:
    """A figure per agent was most of a 100-agent report's time: past four agents, one figure
    of small multiples, and every agent still has its own section."""
    agents = tmp_path / "agents"
    for copy in range(6):
        shutil.copytree(bundled_workspace() / "agents" / "BugHunter", agents / f"Hunter{copy}")
    html = build_report(tmp_path, sweep_thresholds=(0.5, 0.9))
    text = _text(html)
    assert "Context tokens per message, every agent" in text
    assert all(f"Hunter{copy}" in text for copy in range(6))
    # The compactions figure, the small multiples, the facts' survival, the compactions' costs,
    # the calibration and the what-if: no figure per agent.
    assert html.count("data:image/png") == 6
    few = build_report(bundled_workspace(), sweep_thresholds=(0.5, 0.9))
    assert "every agent" not in _text(few)
    assert few.count("data:image/png") == 5 + 3  # 5 shared figures, one per agent


@pytest.fixture(scope="module")
def reference_report() -> str:
    return build_report(bundled_workspace("reference"))


def test_guessed_settings_are_named_and_the_recorded_count_shown(reference_report: str) -> None:
    """The reference records no window or threshold: the what-if says it runs at a guess and
    puts the agent's recorded count beside the replay's (issue 28)."""
    what_if = _text(reference_report[reference_report.index("What-if thresholds") :])
    assert "do not hold its window or threshold" in what_if
    assert "memorylab's default window 8,192 tokens and threshold 0.90, a guess" in what_if
    assert re.search(r"the replay makes \d+ compaction\(s\); the agent recorded 4 \.", what_if)
    assert "--context-length N --threshold T" in what_if
    own = _text(build_report(bundled_workspace(), sweep_thresholds=(0.5, 0.9)))
    assert "a guess" not in own and "At the setting the agent ran at, the replay makes" in own


def test_what_the_records_do_not_hold_is_left_out(reference_report: str) -> None:
    text = _text(reference_report)
    assert "0 of them" not in text and "tokens before" not in text  # no record holds tokens
    assert "est. cost (USD)" not in text  # every row unpriced: no column of dashes
    heading = re.search(r"<tr><th class=\"\">time</th>(.*?)</tr>", reference_report)
    assert heading is not None and "latency" not in heading.group(1)
    assert "threshold 0.90 (default); window 8,192 tokens (default)" in text


def test_every_summary_is_there_in_order(reference_report: str) -> None:
    import pandas as pd

    from memorylab.analysis import memory_df

    frame = memory_df(bundled_workspace("reference"))
    quant = frame[(frame["agent"] == "QuantAgent") & frame["is_summary"]]
    section = reference_report[reference_report.index("<h2>QuantAgent") :]
    section = section[: section.index("<h2>", 4)]
    assert f"{len(quant)} summaries in the files" in section
    shown = re.findall(r'<div class="summary">(.*?)</div>', section, re.S)
    assert [html.unescape(text) for text in shown] == quant["content"].tolist()
    assert isinstance(quant, pd.DataFrame)


def test_a_strategy_other_than_the_summary_is_named(tmp_path: Path) -> None:
    from memorylab import Conversation
    from memorylab.compress import ContextCompressor, KeepRecent

    conversation = Conversation(agent_name="Keeper", workspace_dir=tmp_path)
    compressor = ContextCompressor(0.5, strategy=KeepRecent(keep_messages=2))
    for n in range(40):
        conversation.add("User" if n % 2 else "Assistant", f"message {n}: " + "word " * 30)
        compressor.compress(conversation, 1000)
    html_text = build_report(tmp_path, sweep_thresholds=(0.5, 0.9))
    heading = re.search(r"<tr><th class=\"\">time</th>(.*?)</tr>", html_text)
    assert heading is not None and "strategy" in heading.group(1)
    assert "keep_recent" in _text(html_text)
    assert "strategy keep_recent(keep_messages=2) (recorded)" in _text(html_text)
    plain = build_report(bundled_workspace(), sweep_thresholds=(0.5, 0.9))
    heading = re.search(r"<tr><th class=\"\">time</th>(.*?)</tr>", plain)
    assert heading is not None and "strategy" not in heading.group(1)


def test_a_what_if_peak_above_the_window_is_flagged() -> None:
    """Issue 28: at 0.95 the what-if peak was above the window and nothing said so."""
    html_text = build_report(bundled_workspace(), sweep_thresholds=(0.5, 0.95, 1.0))
    what_if = _text(html_text[html_text.index("What-if thresholds") :])
    assert "Above the window at threshold(s)" in what_if
    assert "more than the model could have read" in what_if
    calm = _text(build_report(bundled_workspace(), sweep_thresholds=(0.5, 0.6)))
    assert "Above the window at threshold(s)" not in calm


def test_an_emoji_in_an_agent_name_is_no_warning(tmp_path: Path) -> None:
    """Issue 28: an emoji in an agent name printed matplotlib's raw UserWarning per figure
    (the suite turns warnings into errors: this would fail)."""
    from memorylab import Conversation

    conversation = Conversation(agent_name="Bot\N{ROCKET}", workspace_dir=tmp_path)
    for n in range(5):
        conversation.add("User", f"hello {n}")
    html_text = build_report(tmp_path, sweep_thresholds=(0.5,))
    assert "<h2>Bot\N{ROCKET}</h2>" in html_text


def test_the_report_says_which_facts_survive_each_summary() -> None:
    """Issue 29: the lineage section's shares are survival_by_generation's, per category."""
    from memorylab.analysis import fact_survival_df, memory_df, survival_by_generation

    page = build_report(bundled_workspace(), sweep_thresholds=(0.85,))
    section = page.split("<h2>Which facts survive each summary</h2>", 1)[1].split("<h2>", 1)[0]
    assert "biased upwards" in section  # the extractive summarizer shares the extraction's rules
    facts = fact_survival_df(memory_df(bundled_workspace()))
    survival = survival_by_generation(facts[facts["generation"].notna()])
    for category in ("path", "name", "all"):
        row = survival[(survival["category"] == category) & (survival["summaries"] == 3)]
        share = f"{float(row['survival'].iloc[0]):.0%}"
        cells = re.search(rf"<td[^>]*>{category}</td>(.*?)</tr>", section, re.S)
        assert cells is not None and share in cells.group(1), (category, share)


def test_the_lineage_section_bounds_what_it_follows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Facts are matched against every later summary (messages x compactions): past its bound
    the report follows each agent's latest files and says so."""
    import memorylab.report as report

    monkeypatch.setattr(report, "_LINEAGE_MESSAGES", 100)
    monkeypatch.setattr(report, "_LINEAGE_FILES", 3)
    page = build_report(bundled_workspace(), sweep_thresholds=(0.85,))
    section = page.split("<h2>Which facts survive each summary</h2>", 1)[1].split("<h2>", 1)[0]
    kept = re.search(
        r"Only each agent&#x27;s latest files are followed \(([\d,]+) of ([\d,]+)", section
    )
    assert kept is not None, section[:600]
    followed, total = (int(g.replace(",", "")) for g in kept.groups())
    assert 0 < followed < total == 641  # 625 messages + 16 summaries


def test_the_report_prices_each_compaction_with_prompt_caching(reference_report: str) -> None:
    """Issue 29: each agent's compactions that paid for themselves, from compaction_costs_df;
    a workspace with no recorded model says how to price it."""
    from memorylab.analysis import compaction_costs_df

    page = build_report(bundled_workspace(), sweep_thresholds=(0.85,))
    section = _text(
        page.split("<h2>What each compaction cost, with prompt caching</h2>", 1)[1].split(
            "<h2>", 1
        )[0]
    )
    costs = compaction_costs_df(bundled_workspace())
    for agent, rows in costs.groupby("agent"):
        paid = int((rows["net_cost_usd"] < 0).sum())
        assert f"{agent}: {paid} of {len(rows)} paid for themselves" in section
    assert "recorded" in section
    reference = _text(reference_report.split("with prompt caching</h2>", 1)[1].split("<h2>", 1)[0])
    assert "No net cost" in reference and "--model" in reference


def test_the_report_says_whether_compaction_fired_on_time(reference_report: str) -> None:
    """Issue 29: the estimate against the billed input, from usage.jsonl; where no usage was
    recorded, the section says so (issue 37: every audit is rendered, its notes say why it is
    empty)."""
    from memorylab.analysis import calibration_audit

    page = build_report(bundled_workspace(), sweep_thresholds=(0.85,))
    section = page.split("<h2>Did compaction fire when it should have?</h2>", 1)[1].split(
        "<h2>", 1
    )[0]
    result = calibration_audit(bundled_workspace())
    for line in result.notes():
        assert html.escape(line) in section
    assert section.count("<tr>") == 1 + len(result.summary)  # a heading row and one per model
    reference = reference_report.split("<h2>Did compaction fire when it should have?</h2>", 1)[1]
    assert "No model call was recorded" in reference.split("<h2>", 1)[0]


def test_the_report_renders_every_audit_the_same_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 37: the report renders each audit of AUDITS through the one result type: a fourth
    audit added to the table gets its section, notes, figure and summary like the others."""
    import pandas as pd

    from memorylab.analysis import AUDITS, AuditResult

    def fake_audit(source: object) -> AuditResult:
        summary = pd.DataFrame({"agent": ["BugHunter"], "checks": [3]})
        return AuditResult(
            name="fake",
            title="Was the fake audit rendered?",
            about="A fourth audit, added to the table by this test.",
            frame=summary,
            summary=summary,
            draw=lambda ax: ax,
            lines=("It was found 3 times.",),
            headings={"agent": "agent", "checks": "checks made"},
        )

    monkeypatch.setitem(AUDITS, "fake", fake_audit)
    page = build_report(bundled_workspace(), sweep_thresholds=(0.85,))
    titles = re.findall(r"<h2>([^<]+)</h2>", page)
    audits = [t for t in titles if t in {"Which facts survive each summary",
                                         "What each compaction cost, with prompt caching",
                                         "Did compaction fire when it should have?",
                                         "Was the fake audit rendered?"}]  # fmt: skip
    assert audits[-1] == "Was the fake audit rendered?" and len(audits) == 4
    section = page.split("<h2>Was the fake audit rendered?</h2>", 1)[1].split("<h2>", 1)[0]
    assert "A fourth audit, added to the table by this test. It was found 3 times." in section
    assert section.count("data:image/png") == 1  # its figure, drawn by its plot()
    assert '<th class="">checks made</th>' in section and ">3</td>" in section


FOREIGN = Path(__file__).parents[1] / "data" / "foreign"


@pytest.mark.parametrize("run", [
    FOREIGN / "claude-code" / "compacted-session.jsonl",
    FOREIGN / "deepagents" / "sample",
    FOREIGN / "inspect-ai" / "checkout-bug-hunt.eval",
    FOREIGN / "openai-agents" / "sessions.sqlite",
], ids=lambda p: p.parent.name)  # fmt: skip
def test_another_frameworks_run_is_no_unreadable_agent(run: Path) -> None:
    """Issue 40: what a format does not record was listed as a problem of an agent named after
    the run's folder, so every foreign run read "N agents, 1 unreadable"; those notes are the
    run's own record's, and say how it was read."""
    if run.suffix == ".eval":
        pytest.importorskip("zstandard", reason="inspect's .eval members are zstd-compressed")
    page = build_report(run)
    assert "unreadable" not in page and "<h2>Problems found</h2>" not in page
    assert "<h2>How the files were read</h2>" in page and ">not-recorded<" in page


@pytest.mark.parametrize(("run", "verdict"), [
    (FOREIGN / "deepagents" / "sample", "reproduced"),
    (FOREIGN / "inspect-ai" / "checkout-bug-hunt.json", "reproduced"),
    (FOREIGN / "claude-code" / "compacted-session.jsonl", "cannot check"),
], ids=lambda v: v.parent.name if isinstance(v, Path) else v)  # fmt: skip
def test_another_frameworks_run_gets_its_replay_at_the_recorded_settings(
    run: Path, verdict: str
) -> None:
    """Issue 40: the report's validation row per run: whether a replay at the settings the file
    records fires where the run's compactions fired, or what the file lacks to tell; a
    memorylab workspace has no such section (its own records are replayed by the what-if)."""
    page = build_report(run, sweep_thresholds=(0.9,))
    section = page.split("<h2>Replay at the recorded settings</h2>", 1)[1].split("<h2>", 1)[0]
    reproduced = 1 if verdict == "reproduced" else 0
    assert f"Reproduced: {reproduced} of 1 run " in _text(section)
    assert f">{verdict}</td>" in section
    if verdict == "cannot check":
        assert "records neither" in section  # what the file lacks, said
    assert "Replay at the recorded settings" not in build_report(
        bundled_workspace(), sweep_thresholds=(0.9,)
    )


def test_one_agent_only_is_read_and_reported(tmp_path: Path) -> None:
    """``agent=`` reports that agent alone (its section, its row, no other agent's); an agent
    folder given as the source takes it too (issue 41)."""
    workspace = bundled_workspace()
    names = sorted(p.name for p in (workspace / "agents").iterdir() if p.is_dir())
    chosen, others = names[0], names[1:]
    page = _text(build_report(workspace, agent=chosen, sweep_thresholds=(0.5, 0.9)))
    assert f"agent {chosen} only" in page
    assert f"<h2>{chosen}</h2>" in build_report(workspace, agent=chosen, sweep_thresholds=(0.9,))
    for other in others:
        assert other not in page
    folder_page = _text(
        build_report(workspace / "agents" / chosen, agent=chosen, sweep_thresholds=(0.9,))
    )
    assert f"agent {chosen} only" in folder_page
    written = write_report(workspace, tmp_path / "one.html", agent=chosen, sweep_thresholds=(0.9,))
    assert f"agent {chosen} only" in _text(written.read_text())


def test_an_unknown_agent_is_one_line_naming_the_agents_there(tmp_path: Path) -> None:
    """A name that is no agent of the workspace is AgentNotFound naming the agents there, and
    no report file is written."""
    from memorylab.errors import AgentNotFound

    workspace = bundled_workspace()
    names = sorted(p.name for p in (workspace / "agents").iterdir() if p.is_dir())
    with pytest.raises(AgentNotFound, match="no agent 'Nobody'") as raised:
        write_report(workspace, tmp_path / "none.html", agent="Nobody")
    assert all(name in str(raised.value) for name in names)
    assert not (tmp_path / "none.html").exists()
    with pytest.raises(AgentNotFound, match="agents there: " + names[0]):
        build_report(workspace / "agents" / names[0], agent="Nobody")
