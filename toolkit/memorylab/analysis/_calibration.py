"""Trigger calibration: did compaction fire when it should have?

memorylab decides when to compact from its own estimate of the context (an offline tokenizer's
count of the history as ``[timestamp] Role: content`` blocks); the provider bills its own count
(its tokenizer, its per-message overhead, the tool schemas). Every model call of the
:class:`~memorylab.Agent` records both (:class:`~memorylab.memory._records.UsageRecord`, a line
of ``usage.jsonl`` beside ``compactions.jsonl``; a memory-only agent keeps them in
``agent.usage_records``). This module compares them:

* :func:`calibration_df`: one row per recorded call, the estimate beside the provider's
  counts and the ``drift`` (``input_tokens / estimated_tokens - 1``: 0.2 is a 20 % undercount);
* :func:`calibration_summary`: per model, the calls, the median and 90th-percentile drift and
  the share of calls the estimate undercounted;
* :func:`compaction_timing_df`: per compaction, the estimate when it fired against the billed
  count, and how many calls early or late it fired against the billed count (the first call
  whose billed input reached the trigger).

:func:`~memorylab.analysis._plots.plot_calibration` draws the estimate against the billed input;
:func:`~memorylab.analysis.calibration_audit` gives the three with the notes a reader should
see (the audit result every audit returns: docs/analysis.md, "Audits").
A trigger that counts the provider's reported usage instead (``Trigger(count="reported")``,
:mod:`memorylab.compress._policy`) fires on the billed count. docs/analysis.md documents every
column.
"""

from __future__ import annotations

import math
import os
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memorylab._validation import check_columns
from memorylab.analysis._frames import (
    DTYPES,
    build_frame,
    columns,
    record_time,
)
from memorylab.analysis._loaders import load_records
from memorylab.analysis._record import AgentRecord
from memorylab.compress._compressor import AgentLike
from memorylab.compress._policy import Trigger, validate_threshold
from memorylab.errors import InvalidSetting
from memorylab.memory._records import UsageRecord, check_record, is_model_call, recorded_count

if TYPE_CHECKING:
    import pandas as pd


_NEW_DTYPES: Mapping[str, str] = {
    "session": "Int64",
    "session_start": DTYPES["time"],
    "call": "Int64",
    "model": "str",
    "estimated_tokens": "Int64",
    "tool_tokens": "Int64",
    "checked_tokens": "Int64",
    "compacted": "bool",
    "input_tokens": "Int64",
    "cached_tokens": "Int64",
    "cache_write_tokens": "Int64",
    "reasoning_tokens": "Int64",
    "output_tokens": "Int64",
    "drift": "float64",
    "calls": "Int64",
    "reported_calls": "Int64",
    "median_drift": "float64",
    "p90_drift": "float64",
    "undercount_share": "float64",
    "count": "category",
    "trigger_tokens": "Int64",
    "counted_tokens": "Int64",
    "billed_tokens": "Int64",
    "first_billed_call": "Int64",
    "calls_late": "Int64",
    "timing": "category",
    "compactions": "Int64",
    "late": "Int64",
    "on_time": "Int64",
    "early": "Int64",
    "unknown": "Int64",
    "fewest_calls_late": "Int64",
    "most_calls_late": "Int64",
}
"""The dtypes of this module's own column names; a name :data:`~memorylab.analysis._frames.DTYPES`
declares keeps its dtype there (:func:`~memorylab.analysis._frames.columns`)."""


def _columns(*names: str) -> tuple[tuple[str, str], ...]:
    return columns(*names, own=_NEW_DTYPES)


CALIBRATION_COLUMNS = _columns(
    "workspace",
    "agent",
    "session",
    "session_start",
    "call",
    "time",
    "model",
    "estimated_tokens",
    "tool_tokens",
    "checked_tokens",
    "compacted",
    "input_tokens",
    "cached_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "output_tokens",
    "drift",
)
"""The columns of :func:`calibration_df`, ``(name, dtype)`` in order."""

CALIBRATION_SUMMARY_COLUMNS = _columns(
    "model", "calls", "reported_calls", "median_drift", "p90_drift", "undercount_share"
)
"""The columns of :func:`calibration_summary`, ``(name, dtype)`` in order."""

COMPACTION_TIMING_COLUMNS = _columns(
    "workspace",
    "agent",
    "session",
    "time",
    "archive",
    "call",
    "count",
    "trigger_tokens",
    "estimated_tokens",
    "counted_tokens",
    "billed_tokens",
    "drift",
    "first_billed_call",
    "calls_late",
    "timing",
)
"""The columns of :func:`compaction_timing_df`, ``(name, dtype)`` in order."""

CALIBRATION_BY_AGENT_COLUMNS = _columns(
    "agent",
    "model",
    "calls",
    "reported_calls",
    "median_drift",
    "p90_drift",
    "undercount_share",
    "compactions",
    "late",
    "on_time",
    "early",
    "unknown",
    "fewest_calls_late",
    "most_calls_late",
)
"""The columns of :func:`calibration_by_agent`, ``(name, dtype)`` in order."""


# --------------------------------------------------------------------------- reading the records


def _is_path(value: object) -> bool:
    return isinstance(value, str | os.PathLike)


def _agents(source: Any) -> list[AgentRecord]:
    """The agents a source names, as records: paths (read once,
    :func:`~memorylab.analysis.load_records`; what a path source is:
    :func:`~memorylab.analysis._sources.source_paths`), records read already, an Agent (its
    records in memory), or usage records (grouped by their ``agent``)."""
    from memorylab.analysis._sources import source_paths

    if isinstance(source, AgentRecord) or (
        isinstance(source, list) and source and all(isinstance(s, AgentRecord) for s in source)
    ):
        return load_records(source)
    if isinstance(source, str | os.PathLike | bytes) or (
        isinstance(source, Collection)
        and not isinstance(source, Mapping)
        and any(_is_path(s) for s in source)
    ):
        return load_records(source_paths(source))
    if isinstance(source, AgentLike):
        records, events = source.usage_records, source.compaction_events
        compactions = tuple(e.to_dict() for e in events if e.ok)
        return [AgentRecord(source.agent_name, records=compactions, calls=tuple(records))]
    if isinstance(source, Iterable) and not isinstance(source, Mapping):
        grouped: dict[str, list[UsageRecord]] = {}
        for index, item in enumerate(source):
            if not isinstance(item, UsageRecord | Mapping):
                raise InvalidSetting(
                    "source must be usage records (UsageRecords or their dicts), or paths; an "
                    f"item is {type(item).__name__}"
                )
            data = item.to_dict() if isinstance(item, UsageRecord) else item
            if not is_model_call(data):
                continue
            try:  # a field of the wrong shape is left out, as the store's reader leaves it out
                call = UsageRecord.from_dict(check_record(dict(data)).record or {})
            except (TypeError, ValueError) as exc:
                raise InvalidSetting(f"source[{index}] is no usage record: {exc}") from None
            grouped.setdefault(call.agent or "", []).append(call)
        return [AgentRecord(name, calls=tuple(calls)) for name, calls in grouped.items()]
    raise InvalidSetting(
        "source must be a workspace, an agent folder or a memory file (or a list of them), an "
        f"Agent, or its usage records; not {type(source).__name__}"
    )


def _workspace(agent: AgentRecord) -> str | None:
    return None if agent.workspace is None else str(agent.workspace)


def _sessions(agent: AgentRecord) -> dict[str, tuple[UsageRecord, ...]]:
    """The calls of each process by its ``session_start``, in the record's one order."""
    return {str(calls[0].session_start): calls for calls in agent.processes}


def _order(value: Any) -> float:
    """A recorded time as a number to sort by (unreadable times last)."""
    when = record_time(value)
    return math.inf if when is None else when.timestamp()


# --------------------------------------------------------------------------- the frames


def calibration_df(source: Any) -> pd.DataFrame:
    """One row per model call the agents in ``source`` recorded: memorylab's estimate of its
    input beside what the provider reported (docs/analysis.md, "Calibration").

    ``source``: a workspace, an agent folder or a memory file, or a list of them (each agent's
    ``usage.jsonl``, read through the store: a torn line is skipped and logged); an
    :class:`~memorylab.Agent` (its ``usage_records``, what a memory-only agent keeps); or
    :class:`~memorylab.memory._records.UsageRecord` s (or their dicts). Columns
    (:data:`CALIBRATION_COLUMNS`): ``workspace``, ``agent``, ``session`` (the agent's process,
    0, 1 … in the order of their first call), ``session_start`` (its first message),
    ``call`` (1, 2 … in the process), ``time`` (its reply), ``model``, ``estimated_tokens``,
    ``tool_tokens``, ``checked_tokens``, ``compacted``, the provider's ``input_tokens``,
    ``cached_tokens``, ``cache_write_tokens``, ``reasoning_tokens`` and ``output_tokens``
    (``<NA>`` where it reported nothing) and ``drift`` = ``input_tokens / estimated_tokens - 1``
    (NaN without both). Sorted by workspace, agent, session and call.
    """
    import pandas as pd

    rows: list[dict[str, Any]] = []
    for found in _agents(source):
        for session, calls in enumerate(found.processes):
            for call in calls:
                rows.append(
                    {
                        **{name: getattr(call, name) for name in _COUNT_FIELDS},
                        "workspace": _workspace(found),
                        "agent": found.agent,
                        "session": session,
                        "session_start": call.session_start,
                        "time": call.time.isoformat(),
                        "model": call.model,
                        "compacted": call.compacted,
                        "drift": math.nan if call.drift is None else call.drift,
                    }
                )
    data: dict[str, Any] = {name: [row[name] for row in rows] for name, _ in CALIBRATION_COLUMNS}
    for name in ("session_start", "time"):
        data[name] = pd.to_datetime(
            [str(v) if v is not None else "" for v in data[name]],
            format="ISO8601", utc=True, errors="coerce",
        )  # fmt: skip
    return build_frame(CALIBRATION_COLUMNS, data)


_COUNT_FIELDS = (
    "call", "estimated_tokens", "tool_tokens", "checked_tokens", "input_tokens", "cached_tokens",
    "cache_write_tokens", "reasoning_tokens", "output_tokens",
)  # fmt: skip


def calibration_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per model of a :func:`calibration_df` frame: ``calls``, ``reported_calls`` (those the
    provider reported an input for), the ``median_drift`` and ``p90_drift`` (the 90th
    percentile) over them, and the ``undercount_share``: the share whose billed input exceeded
    the estimate (drift above 0). NaN for a model with no reported call. Columns:
    :data:`CALIBRATION_SUMMARY_COLUMNS`, one row per model in order of appearance."""
    check_columns("frame", frame, ("model", "drift"), made_by="calibration_df")
    rows = []
    for model, part in frame.groupby(frame["model"].astype(object), sort=False, dropna=False):
        drift = part["drift"].astype(float).dropna()
        reported = len(drift)
        rows.append(
            {
                "model": None if model is None or model != model else str(model),
                "calls": len(part),
                "reported_calls": reported,
                "median_drift": float(drift.median()) if reported else math.nan,
                "p90_drift": float(drift.quantile(0.9)) if reported else math.nan,
                "undercount_share": float((drift > 0).mean()) if reported else math.nan,
            }
        )
    data = {name: [row[name] for row in rows] for name, _ in CALIBRATION_SUMMARY_COLUMNS}
    return build_frame(CALIBRATION_SUMMARY_COLUMNS, data)


def calibration_by_agent(calls: pd.DataFrame, timing: pd.DataFrame) -> pd.DataFrame:
    """Per agent of a :func:`calibration_df` frame (``calls``) and a
    :func:`compaction_timing_df` frame (``timing``): its ``model`` (several joined by ``, ``),
    the drift columns of :func:`calibration_summary` over its calls, its ``compactions`` and
    how many fired ``late``, ``on_time``, ``early`` or with ``unknown`` timing (no usage
    recorded), and the ``fewest_calls_late`` and ``most_calls_late`` of the late ones. One row
    per agent of either frame, in order of appearance (columns:
    :data:`CALIBRATION_BY_AGENT_COLUMNS`): the calibration audit's table, whose rows add up to
    what its notes say."""
    check_columns("calls", calls, ("agent", "model", "drift"), made_by="calibration_df")
    check_columns(
        "timing", timing, ("agent", "timing", "calls_late"), made_by="compaction_timing_df"
    )
    agents = list(dict.fromkeys([*map(str, calls["agent"]), *map(str, timing["agent"])]))
    rows = []
    for agent in agents:
        mine = calls[calls["agent"].astype(str) == agent]
        models = [str(m) for m in dict.fromkeys(mine["model"].dropna().astype(str))]
        drift = calibration_summary(mine.assign(model="all")) if len(mine) else None
        fired = timing[timing["agent"].astype(str) == agent]
        kinds = fired["timing"].astype(str)
        late = fired.loc[kinds == "late", "calls_late"].dropna()
        stats = drift.iloc[0].to_dict() if drift is not None and len(drift) else {}
        rows.append(
            {
                "agent": agent,
                "model": ", ".join(models) if models else None,
                "calls": len(mine),
                "reported_calls": stats.get("reported_calls", 0),
                "median_drift": stats.get("median_drift", math.nan),
                "p90_drift": stats.get("p90_drift", math.nan),
                "undercount_share": stats.get("undercount_share", math.nan),
                "compactions": len(fired),
                "late": int((kinds == "late").sum()),
                "on_time": int((kinds == "on time").sum()),
                "early": int((kinds == "early").sum()),
                "unknown": int((kinds == "unknown").sum()),
                "fewest_calls_late": int(late.min()) if len(late) else None,
                "most_calls_late": int(late.max()) if len(late) else None,
            }
        )
    data = {name: [row[name] for row in rows] for name, _ in CALIBRATION_BY_AGENT_COLUMNS}
    return build_frame(CALIBRATION_BY_AGENT_COLUMNS, data)


def calibration_records(source: Any) -> list[AgentRecord]:
    """The agents' records ``source`` names, read once, as :func:`calibration_df` and
    :func:`compaction_timing_df` read them (records given are returned as they are): the
    calibration audit reads its source once and hands both the records."""
    return _agents(source)


def why_nothing_to_calibrate(records: Sequence[AgentRecord]) -> str:
    """Why the agents of ``records`` give :func:`calibration_df` no row: which ones have no
    ``usage.jsonl`` and who wrote their files (the reference framework and the other
    frameworks' formats record no model call memorylab can compare), in a sentence."""
    if not records:
        return "No agent was read: nothing to compare."
    names = ", ".join(record.agent for record in records[:5]) + (
        f" and {len(records) - 5:,} more" if len(records) > 5 else ""
    )
    formats = sorted({record.format for record in records})
    if formats == ["memorylab"] and not any(record.records for record in records):
        writer = (
            "no compactions.jsonl either: files the reference framework (swarms) wrote, or "
            "memorylab's Conversation without an Agent"
        )
    elif formats == ["memorylab"]:
        writer = "memorylab's Conversation used without its Agent records no model call"
    else:
        writer = f"the {', '.join(formats)} format keeps no estimate beside the provider's count"
    return (
        f"No model call was recorded for {names}: no usage.jsonl ({writer}). memorylab's Agent "
        "writes one beside compactions.jsonl (each call's estimate and what the provider "
        "billed), so the estimate cannot be compared and no compaction can be timed against "
        "the billed count."
    )


def compaction_timing_df(source: Any) -> pd.DataFrame:
    """For each compaction the agents in ``source`` recorded, when it fired against the
    provider's count (docs/analysis.md, "Calibration").

    ``source`` as for :func:`calibration_df` (an Agent: its ``compaction_events``). A
    compaction is found at the call its check compacted before: the first compacting call of
    its process (``session_start`` in both files) at or after its time. Columns
    (:data:`COMPACTION_TIMING_COLUMNS`): ``workspace``, ``agent``, ``session``, ``time``,
    ``archive``, ``call`` (the call it compacted before), ``count`` (what the trigger counted:
    ``"estimated"`` or ``"reported"``), ``trigger_tokens`` (the trigger, in tokens: the
    smallest of its token conditions), ``estimated_tokens`` (memorylab's estimate when it
    fired, ``tokens_before``), ``counted_tokens`` (what the trigger compared: the estimate, or
    the reported usage plus the estimate since), ``billed_tokens`` (what the provider would
    have billed for that context: the estimate times the billed/estimated ratio of the last
    call before the check, ``drift`` = that ratio - 1), ``first_billed_call`` (the first call
    since the process started or the last compaction whose billed input reached the trigger),
    ``calls_late`` (``call - first_billed_call``: it fired that many calls after the billed
    count crossed; 0 when the billed count crossed at the check itself; negative when it fired
    before the billed count crossed: the calls the billed count would still have taken, at its
    mean growth per call since the segment began, rounded up) and ``timing`` (``"late"``,
    ``"on time"``, ``"early"``, or ``"unknown"`` where no usage was recorded).
    """
    import pandas as pd

    rows: list[dict[str, Any]] = []
    for found in _agents(source):
        sessions = _sessions(found)
        numbers = {name: number for number, name in enumerate(sessions)}
        # Per process, its calls that compacted and when they replied, read once: each
        # compaction looks only among these (a process of 25,000 calls has ~1,000).
        marks = {
            name: [(i, record_time(c.time)) for i, c in enumerate(run) if c.compacted]
            for name, run in sessions.items()
        }
        used: set[tuple[str, int]] = set()
        for record in sorted(found.compactions, key=lambda r: _order(r.get("time"))):
            recorded = record.get("extra")
            extra: Mapping[str, Any] = recorded if isinstance(recorded, Mapping) else {}
            session = str(extra.get("session_start"))
            calls = sessions.get(session, ())
            row = _timing(record, extra, calls, marks.get(session, []), used, session)
            row.update(
                workspace=_workspace(found),
                agent=found.agent,
                session=numbers.get(session),
                time=record.get("time"),
                archive=record.get("archive"),
            )
            rows.append(row)
    data: dict[str, Any] = {
        name: [row.get(name) for row in rows] for name, _ in COMPACTION_TIMING_COLUMNS
    }
    data["time"] = pd.to_datetime(
        [str(v) if v is not None else "" for v in data["time"]],
        format="ISO8601", utc=True, errors="coerce",
    )  # fmt: skip
    data["drift"] = [math.nan if v is None else v for v in data["drift"]]
    return build_frame(COMPACTION_TIMING_COLUMNS, data)


def _trigger_of(record: Mapping[str, Any], extra: Mapping[str, Any]) -> tuple[int | None, str]:
    """The trigger in tokens (its smallest token condition) and what it counted."""
    length = recorded_count(record.get("context_length"))
    recorded = extra.get("trigger")
    trigger: Trigger | None = None
    if isinstance(recorded, Mapping):
        try:
            trigger = Trigger.from_dict(dict(recorded))
        except InvalidSetting:
            trigger = None
    elif record.get("threshold") is not None:
        try:
            trigger = Trigger.of(validate_threshold(record["threshold"]))
        except InvalidSetting:
            trigger = None
    if trigger is None or length is None:
        return None, "estimated" if trigger is None else trigger.count
    try:
        tokens = trigger.token_trigger(length)
    except InvalidSetting:
        tokens = None
    return tokens, trigger.count


def _timing(
    record: Mapping[str, Any],
    extra: Mapping[str, Any],
    calls: Sequence[UsageRecord],
    marks: Sequence[tuple[int, datetime | None]],
    used: set[tuple[str, int]],
    session: str,
) -> dict[str, Any]:
    """The timing columns of one compaction against its process's calls (see
    :func:`compaction_timing_df`); ``marks``: the positions of the calls that compacted, with
    their reply times."""
    trigger, count = _trigger_of(record, extra)
    estimated = recorded_count(record.get("tokens_before"))
    counted = recorded_count(extra.get("counted_tokens"))
    row: dict[str, Any] = {
        "count": count,
        "trigger_tokens": trigger,
        "estimated_tokens": estimated,
        "counted_tokens": counted if counted is not None else estimated,
        "timing": "unknown",
    }
    when = record_time(record.get("time"))
    at = next(
        (
            i
            for i, replied in marks
            # not matched to another compaction yet, and replied after it
            if (session, i) not in used and (when is None or (replied or when) >= when)
        ),
        None,
    )
    if at is None:
        return row
    used.add((session, at))
    start = max((i for i, _ in marks if i < at), default=0)
    segment = calls[start:at]
    row["call"] = calls[at].call
    last = next((c for c in reversed(segment) if c.drift is not None), None)
    billed = None
    if last is not None and estimated is not None:
        ratio = 1.0 + (last.drift or 0.0)
        row["drift"] = ratio - 1.0
        billed = round(estimated * ratio)
        row["billed_tokens"] = billed
    if trigger is None or billed is None:
        return row
    crossed = next((c for c in segment if (c.input_tokens or 0) >= trigger), None)
    if crossed is not None:
        first = crossed.call
        row["first_billed_call"] = first
        row["calls_late"] = None if first is None or row["call"] is None else row["call"] - first
        row["timing"] = "late"
        return row
    if billed >= trigger:
        row["first_billed_call"], row["calls_late"], row["timing"] = row["call"], 0, "on time"
        return row
    row["timing"] = "early"
    inputs = [c.input_tokens for c in segment if c.input_tokens is not None]
    steps = len(segment)
    growth = (billed - inputs[0]) / steps if inputs and steps else 0.0
    if growth > 0:
        row["calls_late"] = -math.ceil((trigger - billed) / growth)
    return row
