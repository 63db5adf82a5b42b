"""The fact ledger strategy: the facts of what leaves the context, carried verbatim beside the
summary (no I/O of its own).

Summaries of summaries lose what the first one kept (on the bundled data, 16 % of the extracted
facts survive one summary, 6 % three; commands 100 % → 0 %). A ledger stops the decay: at each
compaction the facts the lab extracts (:func:`memorylab.evaluate.extract_facts`: paths,
commands, names, numbers, decisions) from the departing messages are added to a bounded list
that is written, verbatim, as one entry right after the summary. The summarizer is given the
previous summary's prose and the departing messages, never the ledger; the compressor asks it
for the summary budget less the ledger's tokens, so summary and ledger together fit where the
summary alone did.

The ledger is one ``System`` entry opening with :data:`LEDGER_PREFIX`: the summary's marker,
so every reader treats it as what a compaction wrote (a replay leaves it out of the messages it
replays, the lineage does not take its lines for new facts, a restart preloads it as a summary
block), then ``[Fact ledger]`` and one fact per line, ``category: fact``, oldest first.
:func:`is_ledger` finds it again at the next compaction, in the history or in a preload split
into blocks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from memorylab._validation import check_int
from memorylab.compress._strategy import CompactionPlan, KeepWindow, is_keepable
from memorylab.errors import InvalidSetting
from memorylab.memory._format import content_to_text
from memorylab.memory._records import SUMMARY_PREFIX, EntryKind, entry_kind

LEDGER_PREFIX = f"{SUMMARY_PREFIX} [Fact ledger]"
"""How a ledger entry's content opens (:func:`is_ledger`)."""

LEDGER_HEADER = f"{LEDGER_PREFIX} facts of earlier messages, verbatim (category: fact):"
"""The ledger's first line; one fact per line follows."""

LEDGER_ROLE = "System"

EVICTIONS = ("newest", "oldest", "balanced")
"""Which facts a full ledger leaves out: ``"newest"`` (the default), the facts added last: the
ledger keeps what left the context first, which summaries of summaries lose, and leaves the
newest to the summary, which keeps the latest departures best; ``"oldest"``, the facts added
first (a window of the latest facts, as the summary is); ``"balanced"``, the newest fact of the
category holding the most tokens (each category keeps a share: a few paths are not crowded out
by a log's numbers)."""

CHARS_PER_TOKEN = 4
"""The estimate of a ledger's tokens without a counter: 4 characters a token, rounded up."""


def is_ledger(entry: Mapping[str, Any]) -> bool:
    """Whether a history entry is a fact ledger: a message or a summary (a preload's block)
    whose content opens with :data:`LEDGER_PREFIX`.

    >>> is_ledger({"role": "System", "content": LEDGER_HEADER + "\\npath: /srv/app.py"})
    True
    >>> is_ledger({"role": "System", "content": "[Compressed Memory Summary] Rows loaded."})
    False
    """
    return is_keepable(entry) and content_to_text(entry.get("content")).startswith(LEDGER_PREFIX)


@dataclass(frozen=True, slots=True)
class LedgerFact:
    """One line of a ledger: a fact's category and its text (one line)."""

    category: str
    text: str

    def line(self) -> str:
        return f"{self.category}: {self.text}"


def ledger_facts(text: str) -> list[LedgerFact]:
    """The facts of a ledger entry's content, in order (a line that is not ``category: fact``
    with a known category, as a hand edit may leave, is skipped).

    >>> ledger_facts(LEDGER_HEADER + "\\ncommand: make test\\nnot a fact")
    [LedgerFact(category='command', text='make test')]
    """
    from memorylab.transcripts import FACT_CATEGORIES

    out = []
    for line in text.splitlines()[1:]:
        category, colon, fact = line.partition(": ")
        if colon and category in FACT_CATEGORIES and fact.strip():
            out.append(LedgerFact(category, fact.strip()))
    return out


def render_ledger(facts: Iterable[LedgerFact]) -> str:
    """A ledger entry's content: the header, then one fact per line."""
    return "\n".join([LEDGER_HEADER, *(fact.line() for fact in facts)])


@dataclass(frozen=True, slots=True)
class FactLedger(KeepWindow):
    """Summarize what leaves the context and carry its facts verbatim in a ledger of at most
    ``ledger_tokens`` tokens (default 450: on the bundled transcripts, the largest at which it
    keeps twice the seed's facts after three summaries and reads fewer tokens than the seed,
    docs/compression.md; at most a tenth of the window, so a small window keeps room for the
    summary and the conversation), counted as the model reads the entry
    with the conversation's counter (without one, :data:`CHARS_PER_TOKEN`). When the facts do
    not fit, ``eviction`` (:data:`EVICTIONS`) says which are left out. ``categories``: the fact
    categories ledgered (``None``: all five). The newest ``keep_messages`` (default 0, as the
    seed's summary), or ``keep_tokens``, or ``keep_fraction`` of the window are kept verbatim
    too.

    A fact already in the ledger keeps its place. The previous ledger is neither summarized
    nor kept: the new one, written after the summary, holds its facts.

    >>> entries = [{"role": "User", "content": "Run `make test` in /srv/app, then deploy."},
    ...            {"role": "Assistant", "content": "Done."}]
    >>> plan = FactLedger().plan(entries)
    >>> plan.summarize, plan.carry[0]["content"].splitlines()[1:]
    ((0, 1), ['command: make test', 'path: /srv/app'])
    """

    ledger_tokens: int = 450
    eviction: str = "newest"
    categories: tuple[str, ...] | None = None

    name = "fact_ledger"
    verbatim = True  # a preload is read as its blocks, so the ledger block is found again
    DEFAULT_KEEP: ClassVar[tuple[str, int | float]] = ("keep_messages", 0)

    def __post_init__(self) -> None:
        KeepWindow.__post_init__(self)
        budget = check_int("FactLedger.ledger_tokens", self.ledger_tokens, 1)
        object.__setattr__(self, "ledger_tokens", budget)
        if self.eviction not in EVICTIONS:
            raise InvalidSetting(
                f"FactLedger.eviction must be one of {', '.join(map(repr, EVICTIONS))}, not "
                f"{self.eviction!r}"
            )
        if self.categories is not None:
            from memorylab.transcripts import FACT_CATEGORIES

            given = (self.categories,) if isinstance(self.categories, str) else self.categories
            chosen = tuple(given)
            wrong = [c for c in chosen if c not in FACT_CATEGORIES]
            if not chosen or wrong:
                raise InvalidSetting(
                    f"FactLedger.categories must name some of {', '.join(FACT_CATEGORIES)} "
                    f"(None: all), not {self.categories!r}"
                )
            object.__setattr__(self, "categories", chosen)

    def plan(
        self,
        entries: Sequence[Mapping[str, Any]],
        *,
        tokens: Sequence[int] | None = None,
        context_length: int | None = None,
        counter: Callable[[str], int] | None = None,
    ) -> CompactionPlan:
        size = len(entries)
        start = self.window_start(entries, tokens, context_length)
        ledgers = [i for i, entry in enumerate(entries) if is_ledger(entry)]
        old = set(ledgers)
        summarize = tuple(i for i in range(start) if i not in old)
        keep = tuple(i for i in range(start, size) if i not in old)
        if not summarize:
            return CompactionPlan(
                size,
                keep=tuple(range(size)),
                note=f"{self.name} keeps all {size} entries ({self.keep_text()}): nothing to "
                "summarize; keep fewer (a smaller keep_messages or keep_tokens)",
            )
        departing = [entries[i] for i in summarize if entry_kind(entries[i]) is EntryKind.MESSAGE]
        facts = self.merged(
            [f for i in ledgers for f in ledger_facts(content_to_text(entries[i]["content"]))],
            departing,
        )
        budget = self.ledger_tokens
        if context_length is not None:
            budget = min(budget, check_int("context_length", context_length, 1) // 10)
        kept = self.evicted(facts, budget, counter)
        carry = ({"role": LEDGER_ROLE, "content": render_ledger(kept),
                  "kind": EntryKind.SUMMARY.value},) if kept else ()  # fmt: skip
        return CompactionPlan(size, summarize=summarize, keep=keep, carry=carry)

    def merged(
        self, old: Sequence[LedgerFact], departing: Sequence[Mapping[str, Any]]
    ) -> list[LedgerFact]:
        """The previous ledger's facts, then the departing messages' (in their order), one of
        each (category and normalized text); a fact seen again moves to the end."""
        from memorylab._facts import extract_facts, normalize  # the lab's one fact rule

        found = [LedgerFact(f.category, " ".join(f.text.split())) for f in extract_facts(departing)]
        wanted = self.categories
        facts: dict[tuple[str, str], LedgerFact] = {}
        for fact in [*old, *found]:
            if wanted is not None and fact.category not in wanted:
                continue
            facts.setdefault((fact.category, normalize(fact.text)), fact)
        return list(facts.values())

    def evicted(
        self, facts: Sequence[LedgerFact], budget: int, counter: Callable[[str], int] | None
    ) -> list[LedgerFact]:
        """``facts`` less those :attr:`eviction` leaves out until the ledger fits ``budget``
        tokens (an empty list: not even the header fits)."""
        count = counter or _estimate
        # Lines are counted one by one (a ledger is re-planned at every compaction); the whole
        # entry is counted at the end, where the line counts' sum may differ by a token or so.
        costs = [count("\n" + fact.line()) for fact in facts]
        used = count(f"{LEDGER_ROLE}: {LEDGER_HEADER}") + sum(costs)
        alive = list(range(len(facts)))
        while alive:
            while used > budget and alive:
                used -= costs[self._victim(facts, costs, alive)]
            rendered = render_ledger(facts[i] for i in alive)
            if not alive or count(f"{LEDGER_ROLE}: {rendered}") <= budget:
                break
            used = budget + 1  # over by the sum's error: take one more out
        return [facts[i] for i in alive]

    def _victim(self, facts: Sequence[LedgerFact], costs: Sequence[int], alive: list[int]) -> int:
        """Take the next fact to leave out of ``alive`` (positions, oldest first); return it."""
        if self.eviction == "newest":
            return alive.pop()
        if self.eviction == "oldest":
            return alive.pop(0)
        held: dict[str, int] = {}
        for i in alive:
            held[facts[i].category] = held.get(facts[i].category, 0) + costs[i]
        largest = max(held.values())
        heaviest = next(c for c in held if held[c] == largest)  # ties: the oldest fact's
        return alive.pop(max(n for n, i in enumerate(alive) if facts[i].category == heaviest))


def _estimate(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)
