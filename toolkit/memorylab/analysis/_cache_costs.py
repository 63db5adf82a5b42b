"""Cache economics: what each compaction cost once prompt caching is counted.

A provider that caches prompts bills the prefix it has seen before at its cache-read price (a
tenth or half of the input price), so a compaction costs more than its summary call: it rewrites
the history, and the prefix the cache held is gone. :func:`compaction_costs_df` gives, per
compaction, the summary call, that cache rebuild, the input the shorter context saved until the
next compaction, and the net. The same cost model prices every model call of
:func:`~memorylab.analysis._replay` and :func:`~memorylab.analysis._sweep` (their
``cached_input_tokens`` and ``estimated_cost_usd``).

**The cache rules** (rules 1 to 6: what a call reads from the cache, the provider's minimum,
the write and read prices from litellm's map) are stated once, in
:mod:`memorylab.compress._cache_model`, below this floor: a cache-aware trigger
(:class:`~memorylab.compress.CacheTiming`) decides by the same rules and the same terms
(``rebuild_usd``, ``carried_usd``) that price the columns below.

**Each compaction's costs** (:func:`compaction_costs_df`), over its *span*: the model calls from
the one its check compacted before (it reads the new history) up to the next compaction, the end
of the process, or the end of the record:

* ``summary_cost_usd``: the summary call, as recorded (``cost_usd``), else its recorded tokens at
  the summarizer's prices; 0 for memorylab's offline summarizers.
* ``rebuild_cost_usd``: what the span's calls paid above the cache-read price for tokens a warm
  cache would have served (``rebuild_tokens``): at the compaction's call, every token it did not
  read from the cache (all but the static context); at a later call, what the call before it
  read that this one could not (the new history is under the cache's minimum). Each at the write
  price where the call wrote to the cache, else at the input price, minus the cache-read price.
  Nothing at a process's first call, which is cold either way.
* ``saved_cost_usd``: the input the compaction removed, ``tokens_removed`` (``tokens_before -
  tokens_after``), at each call of the span, at the price those tokens would have cost: the
  cache-read price (they were the cached prefix).
* ``net_cost_usd`` = ``summary_cost_usd + rebuild_cost_usd - saved_cost_usd``: below 0, the
  compaction paid for itself before the next one.

``source`` says where the calls' figures come from: ``"recorded"``, the provider-reported input
and cached tokens of the span's calls (``usage.jsonl``, which the Agent writes beside
``compactions.jsonl``; an :class:`~memorylab.analysis.AgentRecord`'s processes), priced at the
called model's prices;
``"modelled"``, the rules above applied to the context read off the files at the recorded
settings (:func:`~memorylab.analysis.token_growth`, the checks where the Agent checks): where no
call of the span was recorded with its cached tokens, or ``model=`` names another model than the
one called (another provider's cache would have behaved otherwise).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memorylab._validation import check_name
from memorylab.analysis._frames import build_frame, columns, compactions_df, memory_df
from memorylab.analysis._loaders import load_records
from memorylab.analysis._record import AgentRecord, Records
from memorylab.analysis._sources import Source
from memorylab.compress import _cache_model as cache_model
from memorylab.memory._records import recorded_count

if TYPE_CHECKING:
    import pandas as pd

CACHE_COST_COLUMNS: tuple[tuple[str, str], ...] = (
    *columns("workspace", "agent"),
    ("compaction", "Int64"),
    *columns("time", "archive"),
    ("model", "str"),
    *columns("source"),
    ("calls", "Int64"),
    ("tokens_removed", "Int64"),
    ("cached_tokens", "Int64"),
    ("rebuild_tokens", "Int64"),
    ("summary_cost_usd", "float64"),
    ("rebuild_cost_usd", "float64"),
    ("saved_cost_usd", "float64"),
    ("net_cost_usd", "float64"),
)
"""The columns of :func:`compaction_costs_df`, ``(name, dtype)`` in order."""


@dataclass
class _Calls:
    """An agent's model calls in order: the input each read, how much of it came from the prompt
    cache and how much was written to it, whether it was a process's first call, and per
    compaction (by archive) the call its check compacted before."""

    contexts: list[int] = field(default_factory=list)
    cached: list[int] = field(default_factory=list)
    written: list[int] = field(default_factory=list)
    first: list[bool] = field(default_factory=list)
    at: dict[str, int] = field(default_factory=dict)
    reported: list[bool] = field(default_factory=list)
    """Per call, whether the provider reported its input and cached tokens (recorded calls)."""

    def span(self, call: int) -> range:
        """The calls from ``call`` to the next compaction's, the next process or the end."""
        starts = set(self.at.values())
        end = call + 1
        while end < len(self.contexts) and not self.first[end] and end not in starts:
            end += 1
        return range(call, end)


def compaction_costs_df(source: Source | Records, *, model: str | None = None) -> pd.DataFrame:
    """One row per compaction of the agents in ``source`` (a workspace, agent folders, memory
    files: as :func:`~memorylab.analysis.compactions_df` reads them) with what it cost once
    prompt caching is counted (the module docstring states the rules and each column).

    ``model``: the model whose prices (and cache minimum) are used, default the model the agent
    called (``usage.jsonl``), else the recorded token model; the tokens stay the run's (counted
    as recorded), so ``model=`` asks what the same run would have cost at another model's
    prices. Columns
    (:data:`CACHE_COST_COLUMNS`): ``workspace``, ``agent``, ``compaction`` (1, 2 ... per agent in
    time order), ``time``, ``archive``, ``model``, ``source`` (``"recorded"``/``"modelled"``),
    ``calls`` (of its span), ``tokens_removed``, ``cached_tokens`` (of the span's input, read
    from the cache), ``rebuild_tokens``, ``summary_cost_usd``, ``rebuild_cost_usd``,
    ``saved_cost_usd``, ``net_cost_usd``. The cache's parts are NaN where litellm's map lists no
    cache prices for the model (or no price), and where the compaction's calls are not found in
    the files (an inferred compaction with no archive).
    """
    import pandas as pd

    if model is not None:
        check_name("model", model, what="model name or None")
    agents = load_records(source)
    recorded = compactions_df(agents)
    rows: list[dict[str, Any]] = []
    for agent in agents:
        mine = recorded[
            (recorded["workspace"].astype(str) == str(agent.workspace))
            & (recorded["agent"].astype(str) == agent.agent)
        ]
        if len(mine):
            rows += _agent_rows(agent, mine.reset_index(drop=True), model)
    data = {name: [row.get(name) for row in rows] for name, _ in CACHE_COST_COLUMNS}
    frame = build_frame(CACHE_COST_COLUMNS, data)
    if len(frame):
        frame = frame.sort_values(["workspace", "agent", "time"], kind="stable")
    return pd.DataFrame(frame).reset_index(drop=True)


def _agent_rows(
    agent: AgentRecord, compactions: pd.DataFrame, model: str | None
) -> list[dict[str, Any]]:
    """The rows of one agent's compactions (``compactions``: its rows of compactions_df)."""
    records = {str(r.get("archive")): r for r in agent.compactions}
    called = next((call.model for call in agent.calls if call.model), None)
    priced = model or called
    modelled, token_model = _modelled_calls(memory_df(agent), compactions, model)
    priced = priced or token_model
    # another model's cache behaves otherwise (its minimum, its writes): its prices are asked
    # of the modelled calls, not of what the called model's provider reported
    actual = _recorded(agent, records) if agent.calls and priced == called else None
    rows = []
    for number, row in enumerate(compactions.itertuples(index=False), start=1):
        archive = str(row.archive) if isinstance(row.archive, str) else ""
        calls, source = modelled, "modelled"
        if actual is not None and archive in actual.at:
            span = actual.span(actual.at[archive])
            if all(actual.reported[i] for i in span):
                calls, source = actual, "recorded"
        before, after = recorded_count(row.tokens_before), recorded_count(row.tokens_after)
        removed = before - after if before is not None and after is not None else None
        out: dict[str, Any] = {
            "workspace": str(agent.workspace),
            "agent": agent.agent,
            "compaction": number,
            "time": row.time,
            "archive": archive or None,
            "model": priced,
            "source": source,
            "tokens_removed": removed,
            "summary_cost_usd": _summary_cost(row, records.get(archive)),
        }
        at = calls.at.get(archive)
        out.update(_span_costs(calls, at, removed, priced))
        out["net_cost_usd"] = (
            out["summary_cost_usd"] + out["rebuild_cost_usd"] - out["saved_cost_usd"]
        )
        rows.append(out)
    return rows


def _summary_cost(row: Any, record: Mapping[str, Any] | None) -> float:
    """The summary call's cost: as recorded, else its recorded tokens at the summarizer's
    prices (NaN when neither is known)."""
    recorded = row.cost_usd
    if recorded is not None and not math.isnan(float(recorded)):
        return float(recorded)
    extra = record.get("extra") if record is not None else None
    if not isinstance(extra, Mapping):
        return math.nan
    tokens_in, tokens_out = extra.get("summary_input_tokens"), extra.get("summary_output_tokens")
    if not isinstance(tokens_in, int) or not isinstance(tokens_out, int):
        return math.nan
    name = row.summarizer_model if isinstance(row.summarizer_model, str) else None
    return cache_model.price(name, tokens_in, tokens_out)


def _span_costs(
    calls: _Calls, at: int | None, removed: int | None, model: str | None
) -> dict[str, Any]:
    """The span's calls, cached tokens, rebuild and saving (the module docstring)."""
    if at is None:
        return {"calls": None, "cached_tokens": None, "rebuild_tokens": None,
                "rebuild_cost_usd": math.nan, "saved_cost_usd": math.nan}  # fmt: skip
    span = calls.span(at)
    rebuild_tokens, rebuild_usd = 0, 0.0
    for call in span:
        if calls.first[call]:
            continue  # a process's first call is cold, compaction or not
        warm = calls.contexts[call] if call == at else calls.contexts[call - 1]
        missed = max(0, warm - calls.cached[call])
        rebuild_tokens += missed
        rebuild_usd += cache_model.rebuild_usd(model, missed, written=calls.written[call] > 0)
    unpriced = math.isnan(cache_model.carried_usd(model, 0))
    saved = math.nan if removed is None else cache_model.carried_usd(model, removed, len(span))
    return {
        "calls": len(span),
        "cached_tokens": sum(calls.cached[i] for i in span),
        "rebuild_tokens": rebuild_tokens,
        "rebuild_cost_usd": math.nan if unpriced else rebuild_usd,
        "saved_cost_usd": math.nan if unpriced else saved,
    }


def _modelled_calls(
    frame: pd.DataFrame, compactions: pd.DataFrame, model: str | None
) -> tuple[_Calls, str | None]:
    """The agent's model calls read off its files (the module docstring, rule 1 on): per check
    (and per compaction), the context :func:`~memorylab.analysis.token_growth` gives at the
    recorded settings, the recorded ``tokens_after`` at a compaction's call; the cache by the
    rules, with ``model``'s minimum (default the run's). Also the token model of the run."""
    import numpy as np

    from memorylab.analysis._growth import token_growth
    from memorylab.analysis._runs import prepare_run

    calls = _Calls()
    if not len(frame):
        return calls, model
    frame = frame.sort_values("timeline", kind="stable").reset_index(drop=True)
    run = prepare_run(frame, None, {}, "token_growth")
    growth = token_growth(frame)
    summary = growth["is_summary"].to_numpy(dtype=bool)
    compaction = growth["compaction"].to_numpy(dtype=bool)
    checked = np.zeros(len(growth), dtype=bool)
    checked[np.flatnonzero(~summary)[run.checks]] = True
    context = growth["context_tokens"].to_numpy(dtype=np.int64)
    session = growth["session"].to_numpy(dtype=np.int64)
    names = [os.path.basename(str(f)) for f in frame["file"].tolist()]
    after = {
        str(a): int(t)
        for a, t in zip(compactions["archive"], compactions["tokens_after"], strict=True)
        if isinstance(a, str) and recorded_count(t) is not None
    }
    static = run.settings.static_tokens
    kept: list[int | None] = []
    last_session: int | None = None
    for row in np.flatnonzero(checked | compaction):
        if compaction[row]:
            following = int(context[row + 1]) if row + 1 < len(growth) else int(context[row])
            calls.at[names[row]] = len(calls.contexts)
            calls.contexts.append(after.get(names[row], following))
            kept.append(static)
        else:
            calls.contexts.append(int(context[row]))
            kept.append(None)
        calls.first.append(bool(session[row] != last_session))
        last_session = int(session[row])
    least = cache_model.cache_terms(model or run.model)[2]
    calls.cached, calls.written = cache_model.cache_calls(calls.contexts, calls.first, kept, least)
    calls.reported = [False] * len(calls.contexts)
    return calls, run.model


def _recorded(agent: AgentRecord, records: Mapping[str, Any]) -> _Calls | None:
    """The recorded calls as :class:`_Calls` (the agent's processes, in their one order), each
    compaction found at the call its check compacted before: a process's compacting calls, in
    order, are its compactions in order (``session_start`` names the process in both files);
    ``None`` when nothing lines up."""
    calls = _Calls()
    compacting: dict[str, list[int]] = {}
    for made in agent.processes:
        session = str(made[0].session_start)
        for position, call in enumerate(made):
            if call.compacted:
                compacting.setdefault(session, []).append(len(calls.contexts))
            billed, cached = call.input_tokens, call.cached_tokens
            ok = billed is not None and cached is not None
            calls.contexts.append((billed or 0) if ok else 0)
            calls.cached.append((cached or 0) if ok else 0)
            calls.written.append(call.cache_write_tokens or 0)
            calls.first.append(position == 0)
            calls.reported.append(ok)
    ordered: dict[str, list[str]] = {}
    for archive, record in sorted(records.items(), key=lambda item: str(item[1].get("time"))):
        extra = record.get("extra")
        started = extra.get("session_start") if isinstance(extra, Mapping) else None
        ordered.setdefault(str(started), []).append(archive)
    for session, archives in ordered.items():
        made_at = compacting.get(session, [])
        if len(made_at) == len(archives):
            calls.at.update(zip(archives, made_at, strict=True))
    return calls if calls.at else None
