"""The peers' compaction strategies, re-created from memorylab's own, as named presets a strategy
comparison runs beside memorylab's (:func:`~memorylab.evaluate.compare_strategies`).

Each :class:`StrategyPreset` is a strategy and the compressor's ``keep_turn`` as a framework
runs them, with where it comes from (``source``) and, honestly, where the re-creation is not
the original (``differs``). Each runs through memorylab's own compressor, summarizer and files:
what differs between rows is the decision of what leaves the context, nothing else.

>>> sorted(PEER_STRATEGIES)[:2]
['Anthropic: clear tool uses', 'Letta: keep 30 %']
>>> PEER_STRATEGIES["seed: summary"].describe()
'summary(), keep_turn=False'

:data:`MEMORYLAB_STRATEGIES` are memorylab's own, as the ``Agent`` runs them (the turn in
progress kept), named as the lab's tables name them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from memorylab.compress._clear_tool_results import ClearToolResults
from memorylab.compress._keep_recent import KeepRecent
from memorylab.compress._ledger import FactLedger
from memorylab.compress._strategy import Strategy
from memorylab.compress._summary import SummaryStrategy
from memorylab.compress._trim import Trim


@dataclass(frozen=True, slots=True)
class StrategyPreset:
    """A strategy as one framework runs it: ``strategy``, and whether the compressor keeps the
    turn in progress (``keep_turn``, ``ContextCompressor(keep_turn=...)``); ``source``: where
    it comes from; ``differs``: where memorylab's re-creation is not the original."""

    strategy: Strategy
    keep_turn: bool
    source: str = ""
    differs: str = ""

    def describe(self) -> str:
        """The strategy's label and the turn setting: ``keep_recent(keep_messages=20),
        keep_turn=False``."""
        return f"{self.strategy.describe()}, keep_turn={self.keep_turn}"


PEER_STRATEGIES: Mapping[str, StrategyPreset] = MappingProxyType(
    {
        "seed: summary": StrategyPreset(
            SummaryStrategy(),
            keep_turn=False,
            source="memorylab's seed (the swarms API's compaction): the whole history summarized",
            differs="none: the seed's own compaction, files byte for byte",
        ),
        "deepagents: summary + keep 20": StrategyPreset(
            KeepRecent(keep_messages=20),
            keep_turn=False,
            source="LangChain deepagents 0.7.32, SummarizationMiddleware (messages_to_keep=20)",
            differs="deepagents drops its earlier summary at the next compaction; memorylab's "
            "keep_recent summarizes it again with the departing messages (it reads more, loses "
            "less)",
        ),
        "Letta: keep 30 %": StrategyPreset(
            KeepRecent(keep_fraction=0.3),
            keep_turn=False,
            source="Letta's summarizer: evicts the oldest messages, keeps the newest ~30 % of "
            "the window beside a recursive summary",
            differs="Letta cuts by message count towards a target fraction and writes the "
            "summary with the agent's model; here the newest 30 % of the window in tokens, the "
            "lab's summarizer",
        ),
        "inspect_ai: trim": StrategyPreset(
            Trim(keep_fraction=0.5),
            keep_turn=False,
            source="inspect_ai CompactionTrim: drops the oldest messages, no model call",
            differs="inspect_ai keeps 80 % of the messages by count (preserve=0.8) and always "
            "the sample's input messages (the task); here the newest half of the window in "
            "tokens, and no first message",
        ),
        "Anthropic: clear tool uses": StrategyPreset(
            ClearToolResults(keep_tool_results=3),
            keep_turn=False,
            source="Anthropic context editing, clear_tool_uses_20250919 (keep 3 tool uses)",
            differs="Anthropic clears the request sent, server side, and keeps the transcript; "
            "here MEMORY.md is rewritten with placeholders naming the archive. Neither "
            "summarizes: the context grows once nothing is left to clear",
        ),
    }
)
"""The peers' strategies re-created (module docstring): the seed's summary, deepagents' summary
+ keep 20, Letta's keep ~30 %, inspect_ai's trim and Anthropic's tool-result clearing, each
without keeping the turn in progress (none of them keeps it as such)."""

MEMORYLAB_STRATEGIES: Mapping[str, StrategyPreset] = MappingProxyType(
    {
        "memorylab: summary + turn": StrategyPreset(
            SummaryStrategy(),
            keep_turn=True,
            source="memorylab's default: the seed's summary, the turn in progress kept verbatim",
        ),
        "memorylab: fact ledger + turn": StrategyPreset(
            FactLedger(),
            keep_turn=True,
            source="memorylab's fact_ledger: the summary of what is new, and the departing "
            "messages' facts carried verbatim in a bounded ledger; the turn in progress kept",
        ),
    }
)
"""memorylab's strategies as the lab compares them with :data:`PEER_STRATEGIES`."""
