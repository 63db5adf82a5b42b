"""Token growth across compactions, replays of a transcript under other settings, and sweeps.

* :func:`token_growth` — from the files: per message, the context the model read (static
  context + the summary + the messages since the last compaction), the threshold line and the
  compaction points (the sawtooth).
* :func:`replay` — run a real :class:`~memorylab.compress.compressor.ContextCompressor` over a
  transcript in a fresh in-memory :class:`~memorylab.Conversation` (no file is read after the
  transcript is loaded, none is written).
* :func:`sweep` — one row per (context length, threshold): compactions, peak context, the total
  input tokens sent (the cost of carrying context), summarizer calls and tokens, the estimated
  cost (litellm's price map) and, given facts, how many survive to the final context. ``fast=True``
  models the summary size instead of summarizing (:mod:`memorylab.analysis._fast`).

Tokens are counted as :meth:`memorylab.Conversation.token_count` counts them (``[<ts>] Role:
content`` per message, ``"\\n\\n"`` between messages), see :mod:`memorylab.analysis._transcript`.
Summaries made during replays are cached (keyed by the summarizer's name, model and budget and a
hash of the messages it summarized), so sweeps and repeated replays do not pay twice for the same
history; pass ``cache=False`` for a summarizer that is not deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memorylab.compress.policy import DEFAULT_THRESHOLD, Threshold
from memorylab.compress.summarizers import Summarizer, Summary
from memorylab.errors import InvalidSetting
from memorylab.memory.records import CompactionEvent

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "DEFAULT_SUMMARY_RATIO",
    "DEFAULT_THRESHOLDS",
    "ReplayResult",
    "replay",
    "sweep",
    "token_growth",
]

DEFAULT_THRESHOLDS: tuple[float, ...] = (0.5, 0.6, 0.7, 0.8, 0.9)
"""The thresholds :func:`sweep` tries when none are given."""

DEFAULT_SUMMARY_RATIO = 0.1
"""The fast sweep's summary size, as a fraction of the tokens summarized."""


# --------------------------------------------------------------------------- token growth


def token_growth(
    df: pd.DataFrame,
    *,
    context_length: int,
    threshold: Threshold = DEFAULT_THRESHOLD,
    model: str | None = None,
    static_tokens: int = 0,
) -> pd.DataFrame:
    """Per message of ``df`` (from :func:`memory_df`), the context the model read.

    Columns: ``workspace``, ``agent`` (when ``df`` has them), ``timeline``, ``segment``,
    ``role``, ``is_summary``, ``tokens`` (of the message as read), ``context_tokens``
    (``static_tokens`` — the system prompt and rules, which are not in the files — plus the
    summary and the messages of the segment so far), ``trigger``
    (:func:`~memorylab.compress.policy.trigger_tokens`), ``context_length`` and ``compaction``
    (True on the last message before each compaction: the peaks of the sawtooth).
    """
    import numpy as np
    import pandas as pd

    from memorylab.analysis._transcript import entry_tokens
    from memorylab.compress.policy import trigger_tokens

    trigger = trigger_tokens(context_length, threshold)
    keys = [c for c in ("workspace", "agent") if c in df.columns]
    frame = df.sort_values([*keys, "timeline"], kind="stable") if "timeline" in df else df
    frame = frame.reset_index(drop=True)
    counted = entry_tokens(frame, model)
    tokens, separator = counted.tokens, counted.separator
    count = len(frame)
    segment = (
        frame["segment"].to_numpy(dtype=np.int64)
        if "segment" in frame
        else np.zeros(count, np.int64)
    )
    agent_key = (
        frame.groupby(keys, sort=False, observed=True).ngroup().to_numpy(dtype=np.int64)
        if keys and count
        else np.zeros(count, np.int64)
    )
    starts = np.ones(count, dtype=bool)
    if count:
        starts[1:] = (segment[1:] != segment[:-1]) | (agent_key[1:] != agent_key[:-1])
    first = (
        np.maximum.accumulate(np.where(starts, np.arange(count), 0))
        if count
        else starts.astype(np.int64)
    )
    cumulative = np.cumsum(tokens)
    before = (cumulative - tokens)[first] if count else cumulative
    within = np.arange(count) - first
    static = int(static_tokens)
    if static < 0:
        raise InvalidSetting(f"static_tokens must be >= 0, not {static_tokens!r}")
    context = static + cumulative - before + (within + (1 if static else 0)) * separator
    compaction = np.zeros(count, dtype=bool)
    if count:
        compaction[:-1] = starts[1:] & (agent_key[1:] == agent_key[:-1])
    out: dict[str, Any] = {key: frame[key].to_numpy() for key in keys}
    out.update(
        timeline=frame["timeline"].to_numpy() if "timeline" in frame else np.arange(count),
        segment=segment,
        role=frame["role"].to_numpy() if "role" in frame else None,
        is_summary=frame["is_summary"].to_numpy(dtype=bool)
        if "is_summary" in frame
        else np.zeros(count, dtype=bool),
        tokens=tokens,
        context_tokens=context.astype(np.int64),
        trigger=np.full(count, trigger, dtype=np.int64),
        context_length=np.full(count, context_length, dtype=np.int64),
        compaction=compaction,
    )
    return pd.DataFrame(out)


# --------------------------------------------------------------------------- replay


@dataclass
class ReplayResult:
    """What a replay did: the per-message ``timeline``, the compaction ``events`` (failed
    attempts included, ``event.ok`` False) and the context at the end."""

    timeline: pd.DataFrame
    events: list[CompactionEvent]
    final_context: str
    threshold: Threshold
    context_length: int
    trigger: int
    model: str | None
    summarizer: str
    summaries: list[Summary] = field(default_factory=list)
    summarizer_calls: int = 0
    summarizer_input_tokens: int = 0
    summarizer_cost_usd: float = 0.0

    @property
    def compactions(self) -> int:
        return sum(1 for event in self.events if event.ok)

    @property
    def peak_context_tokens(self) -> int:
        return int(self.timeline["context_tokens"].max()) if len(self.timeline) else 0

    @property
    def total_input_tokens(self) -> int:
        return int(self.timeline["context_after"].sum())

    @property
    def summary_tokens(self) -> int:
        return sum(event.summary_tokens or 0 for event in self.events if event.ok)

    def fact_survival(self, facts: Iterable[str]) -> float:
        """The fraction of ``facts`` (strings) found in the final context."""
        wanted = list(facts)
        if not wanted:
            return math.nan
        return sum(1 for fact in wanted if fact in self.final_context) / len(wanted)

    def __repr__(self) -> str:
        return (
            f"ReplayResult(messages={len(self.timeline)}, compactions={self.compactions}, "
            f"peak_context_tokens={self.peak_context_tokens}, trigger={self.trigger}, "
            f"context_length={self.context_length})"
        )


def replay(
    transcript: Any,
    *,
    threshold: Threshold = DEFAULT_THRESHOLD,
    context_length: int,
    summarizer: str | Summarizer | None = None,
    model: str | None = None,
    max_summary_tokens: int | None = None,
    system_prompt: str | None = None,
    cache: bool | MutableMapping[str, Summary] = True,
) -> ReplayResult:
    """Replay ``transcript`` through a :class:`ContextCompressor` (see the module docstring).

    ``transcript``: a :func:`memory_df` frame of one agent, a list of ``{"role", "content"}``
    dicts (``"timestamp"`` optional), or the path of an agent folder or memory file; summary
    rows are left out (the replay writes its own). ``summarizer``: a summarizer object or spec
    (default: the offline extractive one; a litellm model name calls that model).
    ``max_summary_tokens``: the summarizer's budget (default a tenth of the window, within
    [32, 2000]). ``model`` picks the tokenizer. Nothing is read or written on disk.
    """
    from memorylab.analysis._replay import run_replay
    from memorylab.analysis._transcript import as_transcript

    return run_replay(
        as_transcript(transcript),
        threshold=threshold,
        context_length=context_length,
        summarizer=summarizer,
        model=model,
        max_summary_tokens=max_summary_tokens,
        cache=cache,
        system_prompt=system_prompt,
    )


# --------------------------------------------------------------------------- sweep


def sweep(
    transcript: Any,
    thresholds: Iterable[Threshold] = DEFAULT_THRESHOLDS,
    context_lengths: Iterable[int] = (8192,),
    *,
    summarizer: str | Summarizer | None = None,
    model: str | None = None,
    fast: bool = False,
    summary_ratio: float = DEFAULT_SUMMARY_RATIO,
    max_summary_tokens: int | None = None,
    facts: Sequence[str] | None = None,
    system_prompt: str | None = None,
    cache: bool | MutableMapping[str, Summary] = True,
) -> pd.DataFrame:
    """One row per (context length, threshold) setting (see docs/analysis.md).

    Columns: ``context_length``, ``threshold``, ``trigger``, ``mode`` (``"fast"`` or
    ``"replay"``), ``messages``, ``compactions``, ``peak_context_tokens`` (the largest context
    reached, before a check), ``total_input_tokens`` (the context after each message, summed:
    what carrying the context costs if every message is followed by a model call),
    ``summarizer_calls``, ``summarizer_input_tokens``, ``summary_tokens`` (of the summary
    entries), ``estimated_cost_usd`` (input tokens at ``model``'s price plus the summarizer's
    tokens at its price, from litellm's map; NaN when unknown) and ``fact_survival`` when
    ``facts`` are given.

    ``fast=True`` makes no summaries: a summary is ``min(max_summary_tokens, summary_ratio *
    summarized tokens)`` tokens, and a fact survives when a message after the last compaction
    still quotes it (summaries are not text in this mode). ``summarizer`` then only names the
    model whose price is used (default: the free offline summarizer).
    """
    from memorylab.analysis._replay import run_sweep

    return run_sweep(
        transcript,
        thresholds,
        context_lengths,
        summarizer=summarizer,
        model=model,
        fast=fast,
        summary_ratio=summary_ratio,
        max_summary_tokens=max_summary_tokens,
        facts=facts,
        system_prompt=system_prompt,
        cache=cache,
    )
