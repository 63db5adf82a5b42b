"""A self-contained HTML report of a workspace: agents, messages, compactions, growth, a sweep.

One file, no external assets: plots are inline PNGs (matplotlib's Agg backend), styles are
inline. Built only from :mod:`memorylab.analysis` functions; nothing is written into the
workspace. The report quotes stored conversations, so :func:`write_report` writes it private
(0o600), as an export is.

Problems come first: files that could not be read are listed (wrapped, whole) above everything
else, and the header counts their agents ("5 agents, 4 unreadable"), so a report of a damaged
workspace says so before it shows the little it could read. Notes that are not problems (an
edit's archive, copies of messages read once) are listed after the agents, apart from them.
"""

from __future__ import annotations

import base64
import html
import io
import itertools
import numbers
import os
import warnings
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memorylab._version import __version__
from memorylab.compress._policy import Threshold, same_threshold, threshold_text

if TYPE_CHECKING:
    from memorylab.analysis import AgentRecord

_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;
max-width:1100px;color:#1f2328;line-height:1.45;padding:0 1rem}
h1{margin-bottom:.2rem}h3{margin:1.2rem 0 .2rem}
h2{margin-top:2.2rem;border-bottom:1px solid #d0d7de;padding-bottom:.3rem}
.meta{color:#57606a}table{border-collapse:collapse;margin:.8rem 0;font-size:.86rem}
th,td{border:1px solid #d0d7de;padding:.3rem .5rem;text-align:right}
th{background:#f6f8fa}td.text,th.text{text-align:left}td{white-space:nowrap}
img{max-width:100%;border:1px solid #d0d7de;border-radius:6px;margin:.5rem 0}
.summary{background:#f6f8fa;border-left:4px solid #0969da;padding:.6rem .9rem;
white-space:pre-wrap;font-size:.9rem;max-height:16rem;overflow:auto}
.cards{display:flex;gap:1rem;flex-wrap:wrap}.card{border:1px solid #d0d7de;border-radius:6px;
padding:.6rem 1rem;min-width:9rem}.card b{display:block;font-size:1.5rem}
.note{color:#57606a;font-size:.9rem}.wide{overflow-x:auto}
.problems{border-left:4px solid #cf222e;padding-left:.9rem}
table.wrap td{white-space:normal;overflow-wrap:anywhere;vertical-align:top}
table.wrap td:first-child{overflow-wrap:break-word}
"""


_MAX_COMPACTION_ROWS = 10
_ABOVE_NOTE = (
    "<p class=note style='color:#cf222e'>{count:,} message(s) of this curve are above the "
    "{limit:,}-token window (drawn in red): more than the model could have read. The settings "
    "or restarts of this run were not all recorded; pass the window and threshold it ran at, "
    "or the restarts, to draw what it held.</p>"
)
# The sweep's columns the report shows (sweep_table gives them their headings and formats).
_SWEEP_COLUMNS = (
    "threshold",
    "trigger",
    "mode",
    "compactions",
    "peak_context_tokens",
    "total_input_tokens",
    "estimated_cost_usd",
    "uncached_cost_usd",
)
# The columns of the per-agent compaction table and their headings (short ones keep the table
# within the page's width).
_COMPACTION_HEADINGS = {
    "time": "time",
    "archive": "archive",
    "strategy": "strategy",
    "messages_archived": "archived",
    "carried_over": "carried over",
    "tokens_before": "tokens before",
    "tokens_after": "tokens after",
    "summarizer_model": "summarizer",
    "latency_s": "latency (s)",
}


# Up to this many agents each gets a figure of its own; more share one of small multiples (a
# figure costs ~0.1-0.2 s to lay out and encode, a panel of the shared one a fifth of that).
_FIGURE_PER_AGENT_UP_TO = 4


def _png(figure: Any) -> str:
    buffer = io.BytesIO()
    # Every figure of the report is laid out by "constrained" layout already: "tight" would
    # draw each one a second time to measure it (73 % of a 100-agent report was savefig).
    with warnings.catch_warnings():
        # An agent named with a glyph the font lacks (an emoji) draws a box in a plot title:
        # the section heading above it names the agent in full, so the report is not stopped
        # with matplotlib's warning for each figure.
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from font")
        figure.savefig(buffer, format="png", dpi=110)
    encoded = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img alt="plot" src="data:image/png;base64,{encoded}">'


def _counted(count: int, noun: str) -> str:
    """``1 agent``, ``5 agents``: a count with its noun in the right number."""
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"


def _table(frame: Any, *, text_columns: Sequence[str] = (), wrap: bool = False) -> str:
    head = "".join(
        f'<th class="{"text" if c in text_columns else ""}">{html.escape(str(c))}</th>'
        for c in frame.columns
    )
    rows = []
    for values in frame.itertuples(index=False):
        cells = []
        for column, value in zip(frame.columns, values, strict=True):
            css = "text" if column in text_columns else ""
            cells.append(f'<td class="{css}">{html.escape(_cell(value))}</td>')
        rows.append("<tr>" + "".join(cells) + "</tr>")
    # A table wider than the page scrolls inside its own box instead of widening the page; a
    # table of long texts (problems) wraps them instead, so every word stays in view.
    css = ' class="wrap"' if wrap else ""
    return f"<div class=wide><table{css}><tr>{head}</tr>{''.join(rows)}</table></div>"


def _cell(value: Any) -> str:
    import pandas as pd

    if value is None or pd.isna(value):  # None, NaN, NaT, <NA>
        return ""
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, numbers.Integral):  # int, and numpy's from nullable Int64 columns
        return f"{value:,}"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d\u00a0%H:%M:%S")
    return str(value)


def build_report(
    workspace: str | os.PathLike[str],
    *,
    context_length: int | None = None,
    threshold: Threshold | None = None,
    model: str | None = None,
    sweep_thresholds: Sequence[float] = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95),
    agent: str | None = None,
) -> str:
    """The report's HTML for ``workspace``.

    ``agent`` names the one agent to read and report (as ``memorylab ls`` names it, nested ones
    ``team/alpha``); an agent not there raises :class:`~memorylab.errors.AgentNotFound` naming
    the agents that are.

    Each agent's curves, table and what-if sweep use the settings its compaction records hold
    (:func:`memorylab.analysis.run_settings`: window, threshold, tokenizer, static context,
    restarts); ``context_length``, ``threshold`` and ``model`` override them for every agent.
    ``model`` also counts the files' tokens (default ``gpt-4o``).
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from memorylab.analysis import (
        compactions_df,
        load_records,
        memory_df_with_problems,
        plot_compactions,
        plot_sweep,
        plot_token_growth,
        plot_token_growth_grid,
        replay_validation,
        run_settings,
        sweep,
        sweep_note,
        sweep_table,
        token_growth,
    )
    from memorylab.analysis._sources import REMARK_KINDS
    from memorylab.analysis._sweep import sweep_cost_note

    root = Path(workspace)
    # one agent: its folder alone, or its record of a file of several runs
    source = root if agent is None else load_records(root, agent=agent)
    read = memory_df_with_problems(source)  # each agent read once: its record
    records, messages, notes = list(read.records), read.frame, read.problems
    is_remark = notes["kind"].isin(REMARK_KINDS)
    problems, remarks = notes[~is_remark], notes[is_remark]
    compactions = compactions_df(records)
    agents = sorted(messages["agent"].unique()) if len(messages) else []
    unreadable = _unreadable_agents(problems, agents, records)
    if unreadable and not agents:  # never a report of nothing: say why, as every command does
        from memorylab.errors import MemoryFormatError

        first = problems.iloc[0]
        more = f" (and {len(problems) - 1:,} more)" if len(problems) > 1 else ""
        raise MemoryFormatError(
            f"nothing under {root} could be read: {first['file']}, line {first['line']}: "
            f"{first['message']}{more}; read what can be salvaged with memory_df(..., "
            "on_bad='warn'), or fix or remove the file"
        )
    by_agent = dict(tuple(messages.groupby("agent", sort=True, observed=True))) if agents else {}
    # What each agent's curves and what-if run at: its records' settings, with those given.
    settings_of = {
        name: run_settings(by_agent[name], model=model).given(
            context_length=context_length, threshold=threshold, token_model=model
        )
        for name in agents
    }
    # Every count of the report, the Agents table's and the cards' too, is in each agent's
    # tokens: the tokenizer its curves and what-if use (the model given, else the one its
    # records name, else cl100k_base), so the header names one rule, not a second model.
    messages = _with_tokens(messages, by_agent, settings_of)
    by_agent = dict(tuple(messages.groupby("agent", sort=True, observed=True))) if agents else {}
    counted_as = _tokenizers(settings_of, model)
    overrides: dict[str, Any] = {
        "context_length": context_length,
        "threshold": threshold,
        "model": model,
    }
    given = ", ".join(f"{k} {v}" for k, v in overrides.items() if v is not None)
    agent_count = _counted(len(agents) + len(unreadable), "agent") + (
        f", {len(unreadable):,} unreadable" if unreadable else ""
    )
    if agent is not None:
        agent_count = f"agent {agent} only"
    parts = [
        f"<h1>memorylab report</h1><p class=meta>{html.escape(str(root))} · "
        f"{html.escape(agent_count)} · "
        "generated "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M UTC} · memorylab {__version__} · "
        f"{html.escape(counted_as)} · "
        + (
            f"settings given: {html.escape(given)}"
            if given
            else "each agent at the settings its records hold"
        )
        + "</p>"
    ]
    cards = [
        (len(agents) + len(unreadable), f"agents, {len(unreadable):,} unreadable")
        if unreadable
        else (len(agents), "agent" if len(agents) == 1 else "agents"),
        (len(messages), "messages"),
        (len(compactions), "compactions"),
        (int(messages["tokens"].sum()) if len(messages) else 0, "tokens in all files"),
    ]
    parts.append(
        '<div class="cards">'
        + "".join(f'<div class="card"><b>{_cell(v)}</b>{label}</div>' for v, label in cards)
        + "</div>"
    )
    if len(problems):
        parts.append(_problems_section(problems, root, unreadable))
    agent_table = _agent_table(messages, compactions).rename(columns=lambda c: c.replace("_", " "))
    parts.append("<h2>Agents</h2>" + _table(agent_table, text_columns=("agent",)))
    kept, kept_files = _kept_turn_copies(records)
    remarks = remarks[~remarks["file"].astype(str).isin(kept_files)]
    if len(remarks) or kept:
        parts.append(
            "<h2>How the files were read</h2><p class=note>Not problems: archives of edits and "
            "copies of messages in more than one file, each message read once; what another "
            "framework's format does not record (left out, never guessed) and the branches of its "
            f"run left out.{html.escape(kept)}</p>"
            + (_notes_table(remarks, root, "remark") if len(remarks) else "")
        )
    if len(compactions):
        figure, ax = plt.subplots(figsize=(9, 3.2), layout="constrained")
        plot_compactions(compactions, ax=ax)
        parts.append("<h2>Compactions</h2>" + _png(figure))
        plt.close(figure)
    else:
        parts.append(
            "<h2>Compactions</h2><p class=note>None: no agent's files hold an archive "
            "(archive/history_*.md) nor compactions.jsonl a record; the context never reached "
            "the trigger, or the archives were removed.</p>"
        )
    # Another framework's runs replayed at their recorded settings with its own count, once:
    # their section, and the curves' and the what-if's word on why memorylab counts otherwise.
    format_of = {record.agent: record.format for record in records}
    foreign = [record for record in records if record.format != "memorylab"]
    validation = (  # the settings given check a run whose file records none
        replay_validation(foreign, context_length=context_length, threshold=threshold)
        if foreign
        else None
    )
    validated = (
        {}
        if validation is None
        else {str(row["agent"]): row for row in validation.to_dict("records")}
    )
    growths = {agent: token_growth(by_agent[agent], **overrides) for agent in agents}
    small_multiples = len(agents) > _FIGURE_PER_AGENT_UP_TO
    if small_multiples:
        figure = plot_token_growth_grid(growths)
        parts.append(
            "<h2>Context tokens per message, every agent</h2><p class=note>One panel per agent "
            "on its own scale: context tokens (line), the trigger (dashed), the window "
            "(dotted), compactions (markers); each agent's settings are in its section "
            "below.</p>" + _png(figure)
        )
        plt.close(figure)
    for agent in agents:
        rows = by_agent[agent]
        settings = settings_of[agent]
        growth = growths[agent]
        parts.append(
            f"<h2>{html.escape(str(agent))}</h2><p class=note>{html.escape(settings.describe())}"
            "</p>"
        )
        if not small_multiples:
            figure, ax = plt.subplots(figsize=(9, 3.4), layout="constrained")
            plot_token_growth(growth, ax=ax, title=f"{agent}: context tokens per message")
            parts.append(_png(figure))
            plt.close(figure)
        made_by = format_of.get(agent, "memorylab")
        parts.append(_growth_note(growth))
        if made_by != "memorylab":
            parts.append(_peaks_below(growth, settings, made_by, validated.get(agent)))
        mine = compactions[compactions["agent"] == agent] if len(compactions) else compactions
        if len(mine) > _MAX_COMPACTION_ROWS:
            parts.append(
                f"<p class=note>{len(mine)} compactions; the last {_MAX_COMPACTION_ROWS}:</p>"
            )
            mine = mine.tail(_MAX_COMPACTION_ROWS)
        if len(mine):
            # Only the columns some record holds: the reference's records hold no tokens, and
            # a run of the seed's summary strategy alone needs no strategy column.
            held = [
                c
                for c in _COMPACTION_HEADINGS
                if c in mine.columns
                and mine[c].notna().any()
                and (c != "strategy" or (mine[c].dropna() != "summary").any())
            ]
            shown = mine[held].rename(columns=_COMPACTION_HEADINGS)
            if "latency_s" in held:  # seconds to the millisecond, not 4 significant digits
                shown["latency (s)"] = [
                    "" if v != v else f"{v:,.3f}" for v in mine["latency_s"].astype(float)
                ]
            parts.append(_table(shown, text_columns=("archive", "strategy", "summarizer")))
        else:
            parts.append("<p class=note>No compaction of this agent: no archive, no record.</p>")
        parts.append(_summaries_section(rows))
    parts += _audit_sections(records, messages, model)
    if agents:
        biggest = messages.groupby("agent", observed=True).size().idxmax()
        timeline = messages[messages["agent"] == biggest]
        result = sweep(
            timeline,
            thresholds=sweep_thresholds,
            context_lengths=(context_length,) if context_length else None,
            model=model,
        )
        figure, ax = plt.subplots(figsize=(8, 3.2), layout="constrained")
        plot_sweep(result, ax=ax, title=f"What if: {biggest} replayed at other thresholds")
        shown = sweep_table(result, _SWEEP_COLUMNS)
        # No empty column (the agent's-setting column of a run whose setting is not recorded).
        shown = shown[[c for c in shown.columns if (~shown[c].isin(("–", ""))).any()]]
        agreement = _agreement(result, int((compactions["agent"] == biggest).sum())
                               if len(compactions) else 0)  # fmt: skip
        made_by = format_of.get(biggest, "memorylab")
        if made_by != "memorylab":
            agreement += _replay_differs(result.settings, made_by, validated.get(biggest))
        kept_as = (
            "with the same check points, static context, restarts and summaries as the run."
            if made_by == "memorylab"
            # another framework's run: memorylab's count, static context and summaries
            else "with the check points and restarts read off the files; the token count, "
            "static context and summaries are memorylab's (why that can change the count of "
            "compactions: below)."
        )
        parts.append(
            "<h2>What-if thresholds</h2><p class=note>The full timeline of "
            f"{html.escape(str(biggest))} (the largest agent) replayed at other thresholds, "
            f"{kept_as} "
            f"{html.escape(sweep_note(result))} {html.escape(sweep_cost_note(result))}</p>"
            f"{agreement}{_over_window(result)}"
            + _png(figure)
            + _table(shown, text_columns=("", "mode"))
        )
        plt.close(figure)
    if validation is not None:
        parts.append(_recorded_settings_section(validation))
    if agents:
        parts.append(_strategies_section(by_agent, settings_of, model, format_of))
    parts.append(
        "<h2>Privacy</h2><p class=note>This report contains excerpts of stored conversations. "
        "The memory files live under the workspace shown above; see docs/privacy.md for "
        "retention, deletion and redaction.</p>"
    )
    body = "\n".join(parts)
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>memorylab report</title><style>{_STYLE}</style></head><body>{body}</body></html>"
    )


def _audit_sections(records: list[AgentRecord], messages: Any, model: str | None) -> list[str]:
    """Every audit of :data:`~memorylab.analysis.AUDITS`, each rendered the same way (its
    title; what it compares and its notes; its figure and its summary, where it found
    something). The facts follow each agent's latest files only (:func:`_recent_segments`)."""
    import matplotlib.pyplot as plt

    from memorylab.analysis import AUDITS

    followed, cut = _recent_segments(messages)
    sources: dict[str, Any] = {"facts": followed}
    options: dict[str, dict[str, Any]] = {
        "costs": {"model": model},
        "facts": {"max_summaries": _FOLLOWED_SUMMARIES},
    }
    extra = {
        "facts": f"Only each agent's latest files are followed ({len(followed):,} of "
        f"{len(messages):,} messages): matching every fact against every later summary grows "
        "with both; memorylab.analysis.fact_survival_df follows them all."
        if cut
        else ""
    }
    sections = []
    for name, run in AUDITS.items():
        result = run(sources.get(name, records), **options.get(name, {}))
        words = " ".join(filter(None, (result.about, *result.notes(), extra.get(name, ""))))
        section = f"<h2>{html.escape(result.title)}</h2><p class=note>{html.escape(words)}</p>"
        if len(result.summary):
            figure, ax = plt.subplots(figsize=(9, 3.4), layout="constrained")
            result.plot(ax=ax)
            shown = result.text("summary")
            section += _png(figure) + _table(shown, text_columns=shown.columns[:1])
            plt.close(figure)
        sections.append(section)
    return sections


_VALIDATION_COLUMNS = ("format", "agent", "recorded", "replayed", "verdict", "missing", "how")


def _recorded_settings_section(rows: Any) -> str:
    """Another framework's runs replayed at the settings their files record, with the
    framework's own count and trigger (``rows``: :func:`~memorylab.analysis.replay_validation`
    of them): whether each compaction fires where the run's did, or what the file does not
    record to tell."""
    reproduced = int((rows["verdict"] == "reproduced").sum())
    words = (
        f"Reproduced: {reproduced:,} of {_counted(len(rows), 'run')} (replayed at the settings "
        "the file records, with the framework's own count and trigger, every compaction fired "
        "at the message the run's fired at). A run that cannot be checked says what its file "
        "does not record. memorylab.analysis.replay_validation(path) gives every column (at "
        "which message each fired, the tokens, the static context measured at the first "
        "compaction)."
    )
    shown = rows[list(_VALIDATION_COLUMNS)].fillna("–")
    return (
        f"<h2>Replay at the recorded settings</h2><p class=note>{html.escape(words)}</p>"
        + _table(shown, text_columns=("format", "agent", "verdict", "missing", "how"), wrap=True)
    )


_STRATEGY_AGENTS = 4
"""The most agents the strategies section replays (the largest within the next bound)."""
_STRATEGY_MESSAGES = 2_000
"""The most messages it replays over all agents: every strategy is an exact replay, whose time
grows with the messages, so a report of a long run stays a report, not a sweep."""


def _listed(names: Sequence[str], shown: int = 5) -> str:
    """``a, b, c and 7 more``: names a reader can take in."""
    more = f" and {len(names) - shown:,} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


_STRATEGY_COLUMNS = (
    "strategy",
    "compactions",
    "peak_context_tokens",
    "total_input_tokens",
    "summarizer_calls",
    "estimated_cost_usd",
)


def _strategies_section(
    by_agent: dict[str, Any],
    settings_of: dict[str, Any],
    model: str | None,
    format_of: Mapping[str, str],
) -> str:
    """What each registered strategy would have done on each agent's own timeline at the
    setting its curves use (a :func:`~memorylab.analysis.sweep` of the strategies at that one
    setting, exact replays): its compactions, peak context, the input read, summarizer calls,
    the cost; a sentence per agent names the fewest input tokens and the run's own row."""
    import logging

    from memorylab.compress import strategy_names

    names = sorted(by_agent, key=lambda name: -len(by_agent[name]))
    chosen: list[str] = []
    total = 0
    for name in names:  # the largest that fit the bound, each strategy an exact replay
        if len(chosen) < _STRATEGY_AGENTS and total + len(by_agent[name]) <= _STRATEGY_MESSAGES:
            chosen.append(name)
            total += len(by_agent[name])
    left = [name for name in names if name not in chosen]
    parts = [
        "<h2>Strategies</h2><p class=note>What each compaction strategy would have done on "
        "the agent's own timeline, replayed at the setting its curves use (same window, "
        "threshold, check points, restarts and summarizer): "
        f"{html.escape(', '.join(strategy_names()))}. Which facts each keeps is the strategies "
        "lab's question (memorylab.evaluate.compare_strategies on transcripts with questions, "
        "notebooks/06_strategies.ipynb); here, what each one costs on this run."
        + (
            f" Not replayed here: {html.escape(_listed(left))} (the report replays up to "
            f"{_STRATEGY_AGENTS} agents and {_STRATEGY_MESSAGES:,} messages, every strategy "
            "an exact replay); memorylab.analysis.sweep(timeline, strategies=strategy_names()) "
            "replays any of them."
            if left
            else ""
        )
        + "</p>"
    ]
    quiet = logging.getLogger("memorylab")
    level = quiet.level
    # A strategy that finds nothing to take out at a check (clear_tool_results with no old tool
    # result) skips that compaction, as it would live: its table row counts what it did, so the
    # replays' log lines of each skipped attempt are not printed beside the report.
    quiet.setLevel(logging.ERROR + 1)
    try:
        for name in chosen:
            made_by = format_of.get(name, "memorylab")
            parts.append(_strategies_of(name, by_agent[name], settings_of[name], model, made_by))
    finally:
        quiet.setLevel(level)
    return "".join(parts)


def _strategies_of(name: str, timeline: Any, settings: Any, model: str | None, made_by: str) -> str:
    """One agent's strategies table (each strategy swept on its own: one that cannot run on
    this timeline, failing at every check, is named with why, not a failed report);
    ``made_by``: the format of the agent's files (another framework's run ran none of them)."""
    import pandas as pd

    from memorylab.analysis import sweep, sweep_table
    from memorylab.compress import strategy_names
    from memorylab.errors import MemorylabError

    frames, failed = [], []
    for strategy in strategy_names():
        try:
            result = sweep(
                timeline,
                thresholds=(settings.threshold,),
                context_lengths=(settings.context_length,),
                model=model,
                strategies=(strategy,),
            )
        except MemorylabError as error:
            failed.append(f"{strategy} ({str(error).split('. ')[0]})")
            continue
        frames.append(result.frame)
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    guessed = "default" in (settings.source_of("context_length"), settings.source_of("threshold"))
    cannot = f" Could not run here: {'; '.join(failed)}." if failed else ""
    if not len(frame):
        return f"<h3>{html.escape(name)}</h3><p class=note>{html.escape(cannot.strip())}</p>"
    shown = sweep_table(frame, _STRATEGY_COLUMNS)
    shown = shown[[c for c in shown.columns if (~shown[c].isin(("–", ""))).any()]]
    return (
        f"<h3>{html.escape(name)}</h3><p class=note>"
        f"{_strategies_sentence(frame, guessed, made_by, settings.compactions or 0)}"
        f"{html.escape(cannot)}</p>" + _table(shown, text_columns=("", "strategy"))
    )


def _strategies_sentence(frame: Any, guessed: bool, made_by: str, made: int) -> str:
    """The strategies' table in a sentence: the run's own strategy (for another framework's
    run, ``made_by``, the row that stands for its compaction, beside the ``made`` compactions it
    recorded), the fewest input tokens read, and when none compacts (a guessed window too large
    for the run)."""
    if not int(frame["compactions"].max()):
        return "No strategy compacts at this setting: the replay never reaches the trigger" + (
            " (a guessed window; give the one it ran at with --context-length and --threshold)."
            if guessed
            else "."
        )
    least = frame.loc[frame["total_input_tokens"].idxmin()]
    own = frame[frame["recorded"]]
    said = ""
    if len(own) and made_by == "memorylab":
        said = (
            f"The agent ran {html.escape(str(own['strategy'].iloc[0]))}: "
            f"{int(own['total_input_tokens'].iloc[0]):,} input tokens read. "
        )
    elif len(own):
        said = html.escape(
            f"{own['strategy'].iloc[0]} stands for {made_by}'s own compaction, replayed as "
            f"memorylab's: {int(own['compactions'].iloc[0]):,} compaction(s), the run recorded "
            f"{made:,} (memorylab's token count, static context and summaries; 'Replay at the "
            f"recorded settings' replays the run with {made_by}'s own); "
            f"{int(own['total_input_tokens'].iloc[0]):,} input tokens read. "
        )
    return (
        f"{said}Fewest input tokens read: {html.escape(str(least['strategy']))}, "
        f"{int(least['total_input_tokens']):,} over {int(least['compactions']):,} "
        "compaction(s)."
    )


_LINEAGE_MESSAGES = 5_000
"""The most messages the report's facts section follows facts in, over all agents."""
_LINEAGE_FILES = 12
"""The most files of one agent it follows (11 compactions and the live MEMORY.md)."""
_FOLLOWED_SUMMARIES = 10
"""How many summaries it follows each fact through (each summary and fact prepared once for
matching, 10 cost what 5 did before: issue 37)."""


def _recent_segments(messages: Any) -> tuple[Any, bool]:
    """Each agent's newest files, within :data:`_LINEAGE_MESSAGES` over all agents and
    :data:`_LINEAGE_FILES` per agent (at least its last two, a compaction and what followed);
    and whether anything was left out. Facts are matched against every later summary, so the
    cost grows with messages times compactions: the report bounds both."""
    agents = messages["agent"].nunique()
    share = max(500, _LINEAGE_MESSAGES // max(1, agents))
    kept = []
    for _, rows in messages.groupby("agent", sort=False, observed=True):
        sizes = rows.groupby("segment", sort=True).size()
        total, first = 0, int(sizes.index[-1])
        for count, (segment, size) in enumerate(reversed(list(sizes.items()))):
            if count >= 2 and (count >= _LINEAGE_FILES or total + int(size) > share):
                break
            total, first = total + int(size), int(segment)
        kept.append(rows[rows["segment"] >= first])
    import pandas as pd

    chosen = pd.concat(kept) if kept else messages
    return chosen, len(chosen) < len(messages)


def _kept_turn_copies(records: Sequence[AgentRecord]) -> tuple[str, set[str]]:
    """The copies each compaction made on purpose: the turn in progress it kept
    (``compactions.jsonl``'s ``kept_turn``) is in the archive and in the file written after it.
    A file whose copies are exactly those needs no row of its own: one sentence says how many
    there are, and the files (as the notes name them) that it stands for."""
    files: set[str] = set()
    copies = 0
    for record in records:
        kept_by_archive = {
            str(done.get("archive")): done.get("extra", {}).get("kept_turn")
            for done in record.compactions
            if isinstance(done.get("extra"), dict)
        }
        for before, segment in itertools.pairwise(record.segments):
            count = len(segment.repeated)
            if count and kept_by_archive.get(before.path.name) == count:
                files.add(str(segment.path))
                copies += count
    if not files:
        return "", files
    return (
        f" The turn in progress each compaction kept (compactions.jsonl's kept_turn) is in the "
        f"archive and in the file written after it: {_counted(copies, 'message')} in "
        f"{_counted(len(files), 'file')}, each read once from the archive (no row of their own)."
    ), files


def _with_tokens(messages: Any, by_agent: dict[str, Any], settings_of: dict[str, Any]) -> Any:
    """``messages`` with a ``tokens`` column: each message's content counted by its agent's
    tokenizer (:attr:`~memorylab.analysis.RunSettings.token_model`)."""
    import pandas as pd

    from memorylab.compress import get_token_counter

    tokens = pd.Series(0, index=messages.index, dtype="int64")
    for name, rows in by_agent.items():
        counter = get_token_counter(settings_of[name].token_model)
        tokens[rows.index] = counter.count_batch([str(text) for text in rows["content"]])
    return messages.assign(tokens=tokens)


def _tokenizers(settings_of: dict[str, Any], model: str | None) -> str:
    """The header's one line of how tokens are counted: the model given, else each agent's
    recorded model (which agents count as which, when they differ), cl100k_base where none
    is recorded."""
    if model is not None:
        return f"tokens counted as {model} (given)"
    kinds: dict[str, list[str]] = {}
    for name, settings in settings_of.items():
        used = settings.token_model or "cl100k_base (no model recorded)"
        kinds.setdefault(used, []).append(name)
    if len(kinds) == 1:
        (used,) = kinds
        return f"tokens counted as {used}" + ("" if "recorded" in used else " (recorded)")
    return "tokens counted as each agent's records say: " + "; ".join(
        f"{used}: {', '.join(names)}" for used, names in kinds.items()
    )


def _agent_of(file: str) -> str:
    from memorylab.analysis._sources import agent_name, locate

    workspace, folder, _ = locate(Path(file))
    return agent_name(workspace, folder)


def _unreadable_agents(problems: Any, readable: Sequence[str], records: Sequence[Any]) -> list[str]:
    """The agents that problems name and of which not one message could be read. A note a
    record holds is its agent's (another framework's run: its file is no agent folder); any
    other is the agent of the folder its file is in."""
    owner = {note.file: record.agent for record in records for note in record.notes}
    named = dict.fromkeys(owner.get(str(f)) or _agent_of(str(f)) for f in problems["file"])
    return sorted(agent for agent in named if agent not in set(readable))


def _problems_section(problems: Any, root: Path, unreadable: Sequence[str]) -> str:
    """The problems, first in the report: which agent, which file, what was wrong."""
    files = problems["file"].nunique()
    summary = f"{_counted(len(problems), 'problem')} in {_counted(files, 'file')}"
    if unreadable:
        summary += (
            f"; nothing could be read of {_counted(len(unreadable), 'agent')} "
            f"({html.escape(', '.join(unreadable))}), which the rest of this report leaves out"
        )
    return (
        f"<section class=problems><h2>Problems found</h2><p class=note>{summary}.</p>"
        + _notes_table(problems, root, "problem")
        + "</section>"
    )


def _notes_table(notes: Any, root: Path, label: str) -> str:
    """Loader notes as a table: which agent, which file (relative to the workspace), the note;
    long texts wrap instead of running off the page."""
    import pandas as pd

    def shorter(file: str) -> str:
        path = Path(file)
        return str(path.relative_to(root)) if path.is_relative_to(root) else file

    shown = pd.DataFrame(
        {
            "agent": [_agent_of(str(f)) for f in notes["file"]],
            "file": [shorter(str(f)) for f in notes["file"]],
            "line": notes["line"],
            "kind": notes["kind"],
            label: notes["message"],
        }
    )
    return _table(shown, text_columns=("agent", "file", "kind", label), wrap=True)


def _agreement(result: Any, made: int) -> str:
    """Which settings of the what-if are recorded and which guessed, and the replay's count of
    compactions at the run's setting beside the count the agent recorded."""
    settings = result.settings
    guessed = [
        text
        for name, text in (
            ("context_length", f"window {settings.context_length:,} tokens"),
            ("threshold", f"threshold {threshold_text(settings.threshold)}"),
        )
        if settings.source_of(name) == "default"
    ]
    frame = result.frame
    same = [same_threshold(t, settings.threshold) for t in frame["threshold"]]
    at = frame[(frame["context_length"] == settings.context_length).to_numpy() & same]
    replayed = int(at["compactions"].iloc[0]) if len(at) else None
    if guessed:
        line = (
            f"<p class=note style='color:#9a6700'>The records of this agent do not hold its "
            f"{' or '.join(g.split(' ')[0] for g in guessed)}: this what-if runs at "
            f"memorylab's default {' and '.join(guessed)}, a guess, not the run's settings. "
            "Give the ones it ran at (<code>memorylab report --context-length N --threshold "
            "T</code>) to replay the run."
        )
        if replayed is not None:
            line += (
                f" At the guessed setting the replay makes <b>{replayed}</b> compaction(s); "
                f"the agent recorded <b>{made}</b>."
            )
        return line + "</p>"
    if replayed is None:
        return ""
    where = "the setting the agent ran at" if at["recorded"].any() else "the given setting"
    return (
        f"<p class=note>At {where}, the replay makes <b>{replayed}</b> compaction(s); the agent "
        f"recorded <b>{made}</b>.</p>"
    )


def _replay_differs(settings: Any, made_by: str, row: Mapping[str, Any] | None) -> str:
    """Why memorylab's replay of another framework's run can make another count of compactions
    than the run recorded (the token count, the static context, the summaries are memorylab's),
    and what the replay at the recorded settings found with the framework's own (``row``: its
    :func:`~memorylab.analysis.replay_validation` row)."""
    from memorylab.compress import get_token_counter

    counter = get_token_counter(settings.token_model)
    counted = counter.encoding_name + ("" if counter.exact else ", an approximation")
    words = f"Why this count can differ from the run's: the replay counts tokens as {counted}"
    theirs = None if row is None else row.get("counter")
    words += (
        f", where {made_by} counted with {theirs}"
        if isinstance(theirs, str) and theirs
        else f", where the file does not say how {made_by} counted"
    )
    words += (
        f"; its static context is {settings.static_tokens:,} tokens "
        f"({settings.source_of('static_tokens')})"
    )
    measured = None if row is None else row.get("static_tokens")
    if isinstance(measured, tuple) and len(measured) == 2:
        words += (
            f", where the replay at the recorded settings measured {_amount(measured)} of the "
            "framework's tokens at the first compaction (the system prompt and tool schemas, "
            "which the file does not keep)"
        )
    words += (
        f"; its summaries are {settings.summarizer or 'memorylab/extractive'}'s, not the run's. "
        f"'Replay at the recorded settings' below replays the run with {made_by}'s own "
    )
    if row is not None and row.get("verdict") in ("reproduced", "not reproduced"):
        replayed, recorded = int(row["replayed"]), int(row["recorded"])
        words += (
            f"count, static context and compactions: reproduced, {replayed:,} of {recorded:,} "
            "compactions at the messages the run's fired at."
            if row["verdict"] == "reproduced"
            else f"count, static context and compactions: not reproduced, {replayed:,} "
            f"compaction(s) where the run recorded {recorded:,}."
        )
    else:
        words += "trigger where the file records enough: here it cannot check (its row says why)."
    return f"<p class=note>{html.escape(words)}</p>"


def _over_window(result: Any) -> str:
    """A red line naming the settings whose peak context is above the window (more than the
    model could read), as the tuner says it."""
    frame = result.frame
    over = frame[frame["peak_context_tokens"] > frame["context_length"]]
    if not len(over):
        return ""
    settings = ", ".join(
        f"{threshold_text(t)} (peak {int(p):,} of {int(w):,})"
        for t, p, w in zip(
            over["threshold"], over["peak_context_tokens"], over["context_length"], strict=True
        )
    )
    return (
        "<p class=note style='color:#cf222e'>Above the window at threshold(s) "
        f"{html.escape(settings)}: more than the model could have read.</p>"
    )


def _summaries_section(rows: Any) -> str:
    """Every summary of the agent's files in order, folded: a researcher reads what each
    compaction kept, not only the latest one. Each is labelled by the archive it replaced (the
    file before the one it opens: the messages it summarizes), when it was written, and the
    file it is in now."""
    summaries = rows[rows["is_summary"]]
    if not len(summaries):
        return (
            "<p class=note>No summary in the files: no compaction of this agent wrote one "
            "(or its archives are gone), so there is nothing to read here.</p>"
        )
    files = rows.drop_duplicates("segment").set_index("segment")["file"]
    names = {int(k): Path(str(v)).name for k, v in files.items()}
    items = []
    for stamp, segment, text in zip(
        summaries["timestamp"], summaries["segment"], summaries["content"], strict=True
    ):
        replaced = names.get(int(segment) - 1)
        of = (
            f"summary of {html.escape(replaced)}"
            if replaced
            else "summary of an archive no longer there"
        )
        items.append(
            f"<details><summary>{of} · written {html.escape(str(stamp)[:19])} · in "
            f"{html.escape(names.get(int(segment), '?'))} · {len(str(text)):,} characters"
            f'</summary><div class="summary">{html.escape(str(text))}</div></details>'
        )
    count = f"{len(summaries):,} summar{'y' if len(summaries) == 1 else 'ies'}"
    return (
        f"<p class=note>{count} in the files, each named by the archive whose messages it "
        f"replaced (click one to read it):</p>{''.join(items)}"
    )


def _peaks_below(growth: Any, settings: Any, made_by: str, row: Mapping[str, Any] | None) -> str:
    """Why the curve of another framework's run peaks below its trigger where compaction fired
    (no count recorded there): memorylab counts without the static context the file does not
    keep, which the replay at the recorded settings measured (``row``: its
    :func:`~memorylab.analysis.replay_validation` row)."""
    peaks = growth[growth["compaction"] & growth["recorded_tokens"].isna()]
    below = peaks[peaks["context_tokens"] < peaks["trigger"]]
    if not len(below):
        return ""
    peak = _amount((int(below["context_tokens"].min()), int(below["context_tokens"].max())))
    words = (
        f"{len(below):,} of these peaks are below the trigger line ({peak} tokens, the trigger "
        f"at {int(below['trigger'].iloc[0]):,}): "
    )
    guessed = [
        word
        for name, word in (("context_length", "window"), ("threshold", "threshold"))
        if settings.source_of(name) == "default"
    ]
    if guessed:  # not the run's trigger: the what-if says so too
        return (
            f"<p class=note>{html.escape(words)}the trigger is memorylab's default, a guess "
            f"({html.escape(made_by)}'s file records no {' or '.join(guessed)}).</p>"
        )
    words += (
        f"the curve counts as memorylab does, with a static context of "
        f"{settings.static_tokens:,} tokens ({settings.source_of('static_tokens')}), and "
        f"{made_by}'s file keeps no system prompt or tool schemas"
    )
    measured = None if row is None else row.get("static_tokens")
    if isinstance(measured, tuple) and len(measured) == 2:
        amount = _amount(measured)
        words += (
            f"; the replay at the recorded settings measured them at {amount} of the "
            "framework's tokens at the first compaction ('Replay at the recorded settings' "
            "below)"
        )
    return f"<p class=note>{html.escape(words)}.</p>"


def _amount(interval: tuple[int, int]) -> str:
    """A measured interval of tokens as a reader takes it: one value, or ``low-high``."""
    low, high = interval
    return f"{low:,}" if low == high else f"{low:,}-{high:,}"


def _growth_note(growth: Any) -> str:
    """What the curve's peaks are, and a red warning when it passes the window."""
    compacted = growth[growth["compaction"]]
    recorded = int(compacted["recorded_tokens"].notna().sum())
    note = ""
    if len(compacted):
        held = (
            f"; {recorded} of them are the <i>tokens before</i> the records hold (the table below)"
            if recorded
            else ""
        )
        note = (
            f"<p class=note>The curve's {len(compacted)} peak(s) are where compaction "
            f"fired{held}. A restart (dotted line) starts with the static context and the "
            "bounded preload of MEMORY.md, as the agent did.</p>"
        )
    limit = int(growth["context_length"].iloc[0]) if len(growth) else 0
    above = int((growth["context_tokens"] > limit).sum()) if len(growth) else 0
    if above:
        note += _ABOVE_NOTE.format(count=above, limit=limit)
    return note


_AGENT_COLUMNS = (
    "agent",
    "messages",
    "segments",
    "summaries",
    "tokens",
    "first_message",
    "last_message",
    "compactions",
)


def _agent_table(messages: Any, compactions: Any) -> Any:
    from memorylab.analysis._frames import build_frame, columns

    grouped = messages.groupby("agent", observed=True)
    counts = compactions.groupby("agent", observed=True).size()
    agents = grouped.size()
    return build_frame(
        columns(*_AGENT_COLUMNS),
        {
            "agent": agents.index,
            "messages": agents,
            "segments": grouped["segment"].max() + 1,
            "summaries": grouped["is_summary"].sum(),
            "tokens": grouped["tokens"].sum(),
            "first_message": grouped["timestamp"].min(),
            "last_message": grouped["timestamp"].max(),
            "compactions": counts.reindex(agents.index, fill_value=0),
        },
    )


def write_report(
    workspace: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    agent: str | None = None,
    **options: Any,
) -> Path:
    """Write :func:`build_report` to ``output`` (an ``.html`` file) and return its path;
    ``agent`` and ``options`` as :func:`build_report` takes them.

    The file is private (0o600, replaced atomically): it quotes stored conversations. The page
    is built before anything is written, so a bad option (an unknown agent) writes no file."""
    from memorylab.memory._fsutil import write_private_file

    path = Path(output)
    page = build_report(workspace, agent=agent, **options)
    write_private_file(path, page.encode("utf-8"), overwrite=True)
    return path


__all__ = ["build_report", "write_report"]
