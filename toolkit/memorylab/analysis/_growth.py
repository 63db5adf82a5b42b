"""Token growth across compactions: per message, the context the agent held, read off the files
at the recorded settings (:mod:`.runs`); where ``compactions.jsonl`` recorded ``tokens_before``,
the peaks are the recorded figures. Replays and sweeps moved to :mod:`.replay` and :mod:`.sweep`
(importing them from here still works for now, and warns).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Unpack

from memorylab._validation import check_columns
from memorylab.analysis._runs import PreparedRun, RunOverrides
from memorylab.compress._policy import trigger_tokens
from memorylab.memory import _format as fmt
from memorylab.memory._records import Message

if TYPE_CHECKING:
    import pandas as pd

    from memorylab.analysis._transcript import Transcript



def token_growth(df: pd.DataFrame, **overrides: Unpack[RunOverrides]) -> pd.DataFrame:
    """Per message of ``df`` (from :func:`memory_df`), the context the agent held.

    Every setting comes from the agent's record (:func:`~memorylab.analysis._runs.run_settings`);
    the ``overrides`` (:class:`~memorylab.analysis._runs.RunOverrides` but ``max_summary_tokens``,
    ``system_prompt`` and ``checks``) override it. A segment (one file) starts with the static
    context and the summary row; a restart (a new process) with the static context and the
    bounded preload of MEMORY.md as it stood (the rule :class:`~memorylab.Conversation` follows).

    Columns: ``workspace``, ``agent`` (when ``df`` has them), ``timeline``, ``segment``,
    ``session`` (the process: 0, 1 ... after each restart), ``role``, ``is_summary``, ``tokens``
    (of the message as read), ``context_tokens``, ``trigger``, ``context_length``,
    ``compaction`` (True on the last message before each compaction: the peaks), ``restart``
    (the first message of a new process) and ``recorded_tokens`` (the ``tokens_before`` the
    record holds, on the compaction rows). Where a compaction's ``tokens_before`` was recorded,
    ``context_tokens`` of its row is that figure.
    """
    import numpy as np
    import pandas as pd

    check_columns("df", df, ("role", "content"), made_by="memory_df")
    keys = [c for c in ("workspace", "agent") if c in df.columns]
    frame = df.sort_values([*keys, "timeline"], kind="stable") if "timeline" in df else df
    frame = frame.reset_index(drop=True)
    parts = (
        [part for _, part in frame.groupby(keys, sort=False, observed=True)]
        if keys and len(frame)
        else [frame]
    )
    pieces = [_growth_of(part, keys, overrides) for part in parts]
    out = pd.concat(pieces, ignore_index=True) if pieces else pd.DataFrame()
    out["recorded_tokens"] = out["recorded_tokens"].astype("Int64")
    for column in ("compaction", "restart", "is_summary"):
        out[column] = out[column].astype(bool)
    out["context_tokens"] = out["context_tokens"].astype(np.int64)
    return out


def _growth_of(part: pd.DataFrame, keys: list[str], overrides: RunOverrides) -> pd.DataFrame:
    import numpy as np
    import pandas as pd

    from memorylab.analysis._runs import prepare_run
    from memorylab.analysis._transcript import entry_tokens, from_frame, positions

    count = len(part)
    run = prepare_run(part, None, overrides, "token_growth")
    settings = run.settings
    trigger = trigger_tokens(settings.context_length, settings.threshold)
    tokens = entry_tokens(part, settings.token_model)
    segment = (
        part["segment"].to_numpy(dtype=np.int64) if "segment" in part else np.zeros(count, np.int64)
    )
    everything = from_frame(part.assign(timeline=np.arange(count)), drop_summaries=False)
    restart = np.zeros(count, dtype=bool)
    restart[positions(everything, settings.restarts)] = True
    new_segment = np.ones(count, dtype=bool)
    if count:
        new_segment[1:] = segment[1:] != segment[:-1]
    restart &= ~new_segment
    static = settings.static_tokens
    base = np.full(count, static, dtype=np.int64)
    for at in np.flatnonzero(restart):
        entry = _file_preload(part, int(at), everything, run)
        if entry:
            base[at] = static + entry
    if "file" in part.columns:  # a compaction's kept blocks open its file's context too
        for at in np.flatnonzero(new_segment):
            base[at] += _kept_tokens(run, str(part["file"].iloc[at]))
    starts = new_segment | restart
    first = np.maximum.accumulate(np.where(starts, np.arange(count), 0)) if count else segment
    cumulative = np.cumsum(tokens)
    before = (cumulative - tokens)[first] if count else cumulative
    context = base[first] + cumulative - before if count else cumulative
    compaction = np.zeros(count, dtype=bool)
    if count:
        compaction[:-1] = new_segment[1:]
    recorded = pd.array([pd.NA] * count, dtype="Int64")
    if count and "file" in part.columns and settings.recorded_archives:
        names = [os.path.basename(str(f)) for f in part["file"].tolist()]
        by_archive = dict(zip(settings.recorded_archives, settings.recorded_tokens, strict=True))
        for row in np.flatnonzero(compaction):
            value = by_archive.get(names[row])
            if value is not None:
                recorded[row] = value
                context[row] = value
    out: dict[str, Any] = {key: part[key].to_numpy() for key in keys}
    out.update(
        timeline=part["timeline"].to_numpy() if "timeline" in part else np.arange(count),
        segment=segment,
        session=np.cumsum(restart),
        role=part["role"].to_numpy() if "role" in part else None,
        is_summary=part["is_summary"].to_numpy(dtype=bool)
        if "is_summary" in part
        else np.zeros(count, dtype=bool),
        tokens=tokens,
        context_tokens=context.astype(np.int64),
        trigger=np.full(count, trigger, dtype=np.int64),
        context_length=np.full(count, settings.context_length, dtype=np.int64),
        compaction=compaction,
        restart=restart,
        recorded_tokens=recorded,
    )
    return pd.DataFrame(out)


def _kept_tokens(run: PreparedRun, path: str) -> int:
    """Tokens of the blocks a compaction kept in the file at ``path`` (the turn in progress,
    pinned messages, a strategy's newest ones): read once, from the earlier file that holds
    them too, so not among this file's rows, yet in the context from the compaction on."""
    import numpy as np

    from memorylab.analysis._record import to_micros
    from memorylab.analysis._transcript import Transcript

    segment = None if run.record is None else run.record.segment(path)
    if segment is None or not segment.repeated:
        return 0
    blocks, kept = segment.parsed.blocks, sorted(segment.repeated)
    micros = np.array([to_micros(blocks.timestamps[p]) for p in kept], dtype=np.int64)
    roles, contents = [blocks.roles[p] for p in kept], [blocks.contents[p] for p in kept]
    return int(Transcript(roles, contents, micros).tokens(run.counter).sum())


def _file_preload(part: pd.DataFrame, at: int, everything: Transcript, run: PreparedRun) -> int:
    """Tokens of the preload entry a process starting at row ``at`` read: MEMORY.md as it stood
    (the row's file up to that row, as the record parsed it, else rendered from the rows),
    planned as :class:`~memorylab.Conversation` plans it."""
    from dataclasses import replace

    from memorylab.analysis._transcript import memory_text, preload_content, system_tokens

    text: str | None = None
    if run.record is not None and "file" in part.columns and "position" in part.columns:
        segment = run.record.segment(str(part["file"].iloc[at]))
        if segment is not None:
            doc = segment.document
            position = int(part["position"].iloc[at])
            text = fmt.render_memory(replace(doc, messages=doc.messages[:position]))
    if text is None:
        segment = part["segment"].to_numpy() if "segment" in part else None
        start = at
        while start > 0 and (segment is None or segment[start - 1] == segment[at]):
            start -= 1
        whens = everything.datetimes()
        messages = [
            Message(everything.roles[i], everything.contents[i], whens[i]) for i in range(start, at)
        ]
        text = memory_text(messages, name=run.name, created=whens[start], continues=None)
    content = preload_content(text, max_tokens=run.settings.preload_max_tokens, counter=run.counter)
    if content is None:
        return 0
    return system_tokens(run.counter, content)
