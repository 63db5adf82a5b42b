"""Memory strategies compared as summarizers are: each case's whole history run through a
strategy in a window, and the probes asked of what remains.

A summarizer comparison scores one summary of a history. A strategy comparison runs the history
the way an agent would live it: message by message through a
:class:`~memorylab.compress.ContextCompressor` with the strategy, in a ``context_length``-token
window compacting at ``threshold`` (several compactions on a long case), with the same exact
replay that :func:`memorylab.analysis._replay` is. What the context holds at the end (the
summaries and the messages the strategy kept, as the model reads them) is the memory the
scorers read, as they read a summary. The bounds are the usual ones: ``memorylab/full`` (the
whole history: the ceiling) and ``memorylab/none`` (nothing: the floor).

:func:`compare_strategies` returns a :class:`StrategyComparison`: the scores as a
:class:`~memorylab.evaluate.ComparisonResult` (``summary_table``, ``probe_table`` and the plots
take it as they take a summarizer comparison: per-category QA accuracy with intervals), and
``runs``, one row per (case, strategy) with what the run cost and lost: compactions, the tokens the
model read at every check, the summarizer's calls, tokens and cost, the cost of the model's
reading with and without prompt caching, the compactions that took the turn in progress away
(``task_losses``) and the facts that survived 1, 3 and 5 compactions; ``facts``, each fact
followed through the compactions after it left the messages (:meth:`StrategyComparison.survival`
by category and generation); :meth:`StrategyComparison.table`, the one table of all of it, with
intervals.

What a compaction did is read off the replay itself: each attempt's entries and the plan the
compressor carried out (the strategy's, with the turn in progress, pinned entries and a hook's
kept: :meth:`~memorylab.compress.CompactionPlan.keeping`), never guessed from counts.

* **Task losses**: the compactions at which the turn in progress (the last message of the user
  and every entry after it, :func:`~memorylab.memory._records.turn_start`) was not
  all kept verbatim: an entry of it summarized, cleared or dropped.
* **Fact survival**: the facts :func:`~memorylab.evaluate.extract_facts` finds in the messages
  each compaction took out of the context (summarized, dropped or cleared; a fact enters at the
  first one), followed through the next compactions and matched by the lab's fact rules
  (:func:`~memorylab.evaluate.fact_kept`) against what the context holds right after each: the
  summary, the entries the strategy carries (a ledger) and the messages it kept. (Where
  :func:`~memorylab.analysis.fact_survival_df` reads a run's summaries alone, a strategy is
  judged by all it leaves in the context.) ``survived`` after n compactions: every context from
  the one it left through the n-th held it. The extractive summarizer keeps facts by the rules
  the extraction finds them by, so its summaries' survival is flattered for every strategy
  alike.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from memorylab._facts import PreparedFact, PreparedText, extract_facts
from memorylab._validation import check_int
from memorylab.compress._base import BaseSummarizer, Summary
from memorylab.compress._baselines import CEILING, FLOOR
from memorylab.compress._policy import (
    DEFAULT_THRESHOLD,
    Threshold,
    trigger_tokens,
    validate_threshold,
)
from memorylab.compress._strategies import get_strategy
from memorylab.compress._strategy import CompactionPlan, Strategy, is_placeholder
from memorylab.errors import InvalidSetting
from memorylab.evaluate._cases import Case
from memorylab.evaluate._compare import (
    DEFAULT_SCORERS,
    ScorerSpec,
    compare_summarizers,
    resolve_cases,
)
from memorylab.evaluate._engine import ComparisonResult
from memorylab.evaluate._peers import StrategyPreset
from memorylab.evaluate._tables import (
    SummaryTable,
    Units,
    bootstrap_interval,
    differences_frame,
    pair_differences,
    probe_table,
)
from memorylab.memory._format import content_to_text
from memorylab.memory._records import SUMMARY_PREFIX, EntryKind, entry_kind, turn_start
from memorylab.results import TableResult

if TYPE_CHECKING:
    import pandas as pd

    from memorylab.analysis._replay import ReplayResult
    from memorylab.compress import Summarizer

GENERATIONS = (1, 3, 5)
"""The compactions after which :attr:`StrategyComparison.runs` gives the facts' survival
(``survival_1``, ``survival_3``, ``survival_5``); facts are followed no further."""

RUN_COLUMNS = (
    "case", "strategy", "keep_turn", "messages", "compactions", "failed_compactions",
    "task_losses", "survival_1", "survival_3", "survival_5", "tokens_read",
    "peak_context_tokens", "over_window", "summarizer_calls", "summarizer_input_tokens",
    "summary_tokens", "summarizer_cost_usd", "cached_cost_usd", "uncached_cost_usd",
    "memory_tokens",
)  # fmt: skip
"""The columns of :attr:`StrategyComparison.runs`: ``tokens_read`` is the context the model read
at every check (what the agent's calls cost), ``over_window`` the checks at which the context was
larger than the window (a model could not have read it: a strategy that cannot shrink the
context, such as tool-result clearing alone once every old result is cleared, scores on a memory
no model would have had), ``memory_tokens`` what is left at the end (what the probes are asked
of). ``task_losses``: the compactions that summarized, cleared or dropped an entry of the turn in
progress; ``survival_<n>``: the share of the facts followed through ``n`` compactions that every
context since they left held (NaN: none followed that far); ``cached_cost_usd`` and
``uncached_cost_usd``: the model's reading (every check) at ``model``'s prices with prompt
caching (NaN where litellm lists no cache prices for it) and without, plus the summarizer's cost
(the replay's figures: :mod:`memorylab.analysis._cache_costs`)."""

FACT_COLUMNS = (
    "case", "strategy", "fact_id", "fact", "category", "entered", "generation", "since",
    "kept", "survived",
)  # fmt: skip
"""The columns of :attr:`StrategyComparison.facts`, those of
:func:`~memorylab.analysis.fact_survival_df` for a run: one row per fact and compaction it was
followed through (``entered``: the compaction that took it out of the messages; ``since``: 0 at
that one), ``kept`` (the context right after it held the fact), ``survived`` (every context
since ``entered`` held it)."""


@dataclass(frozen=True, slots=True)
class _Watched(CompactionPlan):
    """A strategy's plan that notes, in ``attempts[-1]``, each plan the compressor derives from
    it (the turn in progress, pinned entries, a hook's: :meth:`CompactionPlan.keeping`), so the
    last one noted is the plan the compaction carried out."""

    attempts: list[list[Any]] = field(default_factory=list, compare=False, repr=False)

    def keeping(self, positions: Iterable[int]) -> CompactionPlan:
        plan = CompactionPlan.keeping(self, positions)
        self.attempts[-1][1] = plan
        return plan


def _watching(strategy: Strategy, attempts: list[list[Any]]) -> Strategy:
    """``strategy`` (same class, name, settings and record) whose every plan is noted in
    ``attempts`` as ``[entries, plan carried out]``, one per compaction attempt."""
    base = type(strategy)

    def plan(self: Strategy, entries: Sequence[Mapping[str, Any]], **options: Any) -> Any:
        made = base.plan(self, entries, **options)
        attempts.append([[dict(e) for e in entries], None])
        kept = {f.name: getattr(made, f.name) for f in fields(CompactionPlan)}
        attempts[-1][1] = watched = _Watched(**kept, attempts=attempts)
        return watched

    watched_class = type(base.__name__, (base,), {"__slots__": (), "plan": plan})
    settings = {f.name: getattr(strategy, f.name) for f in fields(strategy) if f.init}  # type: ignore[arg-type]
    made: Strategy = watched_class(**settings)
    return made


@dataclass(frozen=True, slots=True)
class _Compaction:
    """One compaction a replay carried out: the entries it worked on, its plan, its summary."""

    entries: list[dict[str, Any]]
    plan: CompactionPlan
    summary: str | None

    def leaving(self) -> list[int]:
        """The positions of the entries it took out of the messages: summarized, dropped or
        cleared."""
        return sorted(set(self.plan.removed) | set(self.plan.cleared))

    def lost_turn(self, user_role: str) -> bool:
        """Whether an entry of the turn in progress (the user's last message and every entry
        after it) left the messages."""
        start = turn_start(self.entries, user_role)
        return start is not None and any(i >= start for i in self.leaving())

    def context_after(self) -> str:
        """What the context holds of the history right after it (the summary, the carried
        entries, the kept ones as kept: a cleared result's placeholder)."""
        kept = self.plan.kept_entries(self.entries, None)
        texts = [self.summary or "", *(content_to_text(e.get("content")) for e in kept)]
        return "\n\n".join(text for text in texts if text)


def _compactions(result: ReplayResult, attempts: list[list[Any]]) -> list[_Compaction]:
    """The successful compactions of ``result``, each with the attempt noted for it."""
    if len(attempts) != len(result.events):
        raise RuntimeError(
            f"the replay made {len(result.events)} compaction attempts and its strategy planned "
            f"{len(attempts)}: its compactions cannot be read (a compressor that attempts "
            "without asking the strategy?)"
        )
    summaries = iter(result.summaries)
    done = []
    for (entries, plan), event in zip(attempts, result.events, strict=True):
        if event.ok:
            summary = next(summaries).text if plan.summarize else None
            done.append(_Compaction(entries, plan, summary))
    return done


def _followed(compactions: Sequence[_Compaction]) -> list[dict[str, Any]]:
    """Each fact of the messages the compactions took out, followed from the one it left
    through at most ``max(GENERATIONS)`` contexts (:data:`FACT_COLUMNS` but case and
    strategy)."""
    leaving: list[dict[str, Any]] = []
    generation_of: list[int] = []
    for number, compaction in enumerate(compactions, 1):
        placeholder = compaction.plan.placeholder
        for index in compaction.leaving():
            entry = compaction.entries[index]
            text = content_to_text(entry.get("content"))
            # a message only, and once: a placeholder is a result that left already, a text
            # opening with the summary's marker (a ledger) what a compaction wrote
            if (entry_kind(entry) is EntryKind.MESSAGE and not is_placeholder(placeholder, text)
                    and not text.startswith(SUMMARY_PREFIX)):  # fmt: skip
                leaving.append({"role": entry.get("role"), "content": text})
                generation_of.append(number)
    contexts: dict[int, PreparedText] = {}
    rows: list[dict[str, Any]] = []
    for fact in extract_facts(leaving):
        entered = generation_of[fact.message_index or 0]
        prepared, survived = PreparedFact(fact), True
        last = min(len(compactions), entered + max(GENERATIONS) - 1)
        for generation in range(entered, last + 1):
            if generation not in contexts:
                body = compactions[generation - 1].context_after().removeprefix(SUMMARY_PREFIX)
                contexts[generation] = PreparedText(body)
            kept = prepared.match(contexts[generation]).kept
            survived = survived and kept
            rows.append(
                {"fact_id": fact.id, "fact": fact.text, "category": fact.category,
                 "entered": entered, "generation": generation, "since": generation - entered,
                 "kept": kept, "survived": survived}
            )  # fmt: skip
    return rows


@dataclass(frozen=True, slots=True)
class _Run:
    """A strategy's run of one history: the replay, and what its compactions took away."""

    result: ReplayResult
    task_losses: int
    facts: list[dict[str, Any]]


class StrategyMemory(BaseSummarizer):
    """A strategy as a summarizer: :meth:`summarize` runs the history through ``strategy`` in a
    ``context_length``-token window (compacting at ``threshold``, summaries by ``summarizer``:
    a name or a :class:`~memorylab.Summarizer` object, such as one calling a local server,
    keeping the turn in progress or not, ``keep_turn``; a check after every message, one
    process; tokens counted and the reading priced as ``model``, ``None``: the default
    tokenizer, no price) and returns what the context holds at the end.

    Each run's figures are kept in :attr:`runs` (keyed by the history's SHA-256), so the
    comparison can say what each strategy cost and lost. The summarizer inside runs as in a
    replay: a model summarizer is called one summary at a time (a comparison's concurrency and
    cache are for the scorers' calls).
    """

    def __init__(
        self,
        strategy: Strategy | str | None = None,
        *,
        context_length: int,
        threshold: Threshold = DEFAULT_THRESHOLD,
        summarizer: str | Summarizer | None = None,
        label: str | None = None,
        keep_turn: bool = True,
        model: str | None = None,
    ) -> None:
        from memorylab.compress._summarizers import get_summarizer

        self.strategy = get_strategy(strategy)
        self.context_length = check_int("context_length", context_length, 1)
        self.threshold = validate_threshold(threshold)
        trigger_tokens(self.context_length, self.threshold)  # validates the pair
        if not isinstance(keep_turn, bool):
            raise InvalidSetting(f"keep_turn must be True or False, not {keep_turn!r}")
        self.keep_turn = keep_turn
        self.summarizer = summarizer
        self.model_name = model
        inner = get_summarizer(summarizer or "memorylab/extractive")
        self.local = inner.local
        self.model = inner.model
        self.name = label or self.strategy.describe()
        self.runs: dict[str, _Run] = {}

    def __repr__(self) -> str:
        return (
            f"StrategyMemory({self.strategy.describe()}, context_length={self.context_length:,}, "
            f"threshold={self.threshold!r}, keep_turn={self.keep_turn})"
        )

    def summarize(
        self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None
    ) -> Summary:
        """What remains after running ``messages`` through the strategy (``max_tokens`` is not
        used: each compaction's summary budget is the compressor's, as live)."""
        from memorylab.analysis._replay import replay

        started = time.perf_counter()
        history = [{"role": m["role"], "content": m["content"]} for m in messages]
        attempts: list[list[Any]] = []  # this call's own: runs may be summarized concurrently
        result = replay(
            history,
            strategy=_watching(self.strategy, attempts),
            keep_turn=self.keep_turn,
            model=self.model_name,
            context_length=self.context_length,
            threshold=self.threshold,
            summarizer=self.summarizer,
            checks="message",
            restarts=False,
            progress=False,
        )
        compactions = _compactions(result, attempts)
        user = "User"  # the replay's conversations are the Conversation default's
        self.runs[_history_key(history)] = _Run(
            result,
            task_losses=sum(c.lost_turn(user) for c in compactions),
            facts=_followed(compactions),
        )
        return Summary(
            text=result.final_context,
            model=self.name,
            input_tokens=result.summarizer_input_tokens,
            output_tokens=result.summary_tokens,
            cost_usd=result.summarizer_cost_usd,
            latency_s=time.perf_counter() - started,
            chunks=max(1, result.summarizer_calls),
        )


def _history_key(messages: Sequence[Mapping[str, Any]]) -> str:
    """A history's identity: the SHA-256 of its roles and contents."""
    text = json.dumps([[str(m["role"]), str(m["content"])] for m in messages])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


TABLE_COLUMNS = (
    "probe QA", "facts after 1", "facts after 3", "facts after 5", "task losses",
    "compactions", "tokens read", "summarizer input", "cost cached (USD)", "cost uncached (USD)",
)  # fmt: skip
"""The columns of :meth:`StrategyComparison.table` (the first four with ``.lo`` / ``.hi``)."""


@dataclass(frozen=True, slots=True, repr=False)
class StrategyComparison(TableResult):
    """What :func:`compare_strategies` made: ``frame``, one row per strategy (the bounds too)
    with its quality means and what its runs cost and lost in all (compactions, task losses,
    the facts' survival, tokens read, summarizer calls and cost); ``comparison``, the scores (a
    :class:`~memorylab.evaluate.ComparisonResult`: ``summary_table``, ``probe_table`` and the
    plots take it); ``runs``, one row per (case, strategy) (:data:`RUN_COLUMNS`); ``facts``,
    each fact followed (:data:`FACT_COLUMNS`)."""

    frame: pd.DataFrame
    comparison: ComparisonResult
    runs: pd.DataFrame
    facts: pd.DataFrame

    def survival(self, by: str = "category") -> pd.DataFrame:
        """The facts' survival per strategy, ``by`` (``"category"``, ``"case"``; an ``"all"``
        row each) and compactions since they left the messages: each strategy's
        :func:`~memorylab.analysis.survival_by_generation` of :attr:`facts`."""
        import pandas as pd

        from memorylab.analysis._lineage import survival_by_generation

        parts = [
            survival_by_generation(part, by=by).assign(strategy=label)
            for label, part in self.facts.groupby("strategy", sort=False)
        ]
        if not parts:
            return survival_by_generation(self.facts, by=by).assign(strategy=[])
        table = pd.concat(parts, ignore_index=True)
        return table[["strategy", *table.columns[:-1]]]

    def table(
        self,
        metric: str = "probe_qa.exact",
        *,
        confidence: float = 0.95,
        resamples: int = 1000,
        seed: int = 0,
    ) -> pd.DataFrame:
        """One row per strategy (the bounds too), :data:`TABLE_COLUMNS`: the probes answered
        (``metric``, over every case's probes; NaN without probes), the share of the facts
        surviving 1, 3 and 5 compactions (over the facts followed that far), each with its
        bootstrap interval (``.lo`` / ``.hi``, seeded), then the runs' sums: task losses,
        compactions, tokens the model read, summarizer input tokens and the cost with and
        without prompt caching.
        :func:`~memorylab.evaluate.markdown_table` shows it; :meth:`differences` pairs the
        strategies on the same probes and facts, and :meth:`notes` says which differences rank."""
        import pandas as pd

        labels = list(dict.fromkeys(self.comparison.frame["summarizer"]))
        out = pd.DataFrame(index=pd.Index(labels, name="strategy"))
        if len(self.comparison.answers):  # cases with probes (LoCoMo's conversations alone: none)
            probes = probe_table(self.comparison, metric, confidence=confidence,
                                 resamples=resamples, seed=seed).frame  # fmt: skip
            overall = next(c for c in probes.columns if str(c).startswith("overall")
                           and not str(c).endswith((".lo", ".hi")))  # fmt: skip
            for end in ("", ".lo", ".hi"):
                out[f"probe QA{end}"] = probes[f"{overall}{end}"].reindex(labels)
        else:
            for end in ("", ".lo", ".hi"):
                out[f"probe QA{end}"] = math.nan
        for n in GENERATIONS:
            column = f"facts after {n}"
            values: dict[str, list[float]] = {column: [], f"{column}.lo": [], f"{column}.hi": []}
            for label in labels:
                outcomes = self.facts.loc[
                    (self.facts["strategy"] == label) & (self.facts["since"] == n - 1), "survived"
                ].to_numpy(dtype=float)
                low, high = bootstrap_interval(outcomes, confidence=confidence,
                                               resamples=resamples, seed=seed)  # fmt: skip
                values[column].append(float(outcomes.mean()) if len(outcomes) else math.nan)
                values[f"{column}.lo"].append(low)
                values[f"{column}.hi"].append(high)
            for name, got in values.items():
                out[name] = got
        summed = {"task losses": "task_losses", "compactions": "compactions",
                  "tokens read": "tokens_read", "summarizer input": "summarizer_input_tokens",
                  "cost cached (USD)": "cached_cost_usd",
                  "cost uncached (USD)": "uncached_cost_usd"}  # fmt: skip
        sums = self.runs.groupby("strategy", sort=False)[list(summed.values())].sum(min_count=1)
        for name, column in summed.items():
            out[name] = sums[column].reindex(labels)
        return out

    def differences(
        self,
        metric: str = "probe_qa.exact",
        *,
        confidence: float = 0.95,
        resamples: int = 1000,
        seed: int = 0,
    ) -> pd.DataFrame:
        """Every pair of strategies (the bounds too) compared on :meth:`table`'s quality
        columns, paired: ``probe QA`` (``metric``) on the probes both answered, ``facts after
        n`` on the facts both runs followed through n compactions (the same fact: its case,
        category and text, each occurrence once; a fact another strategy's compactions never
        took out is not compared). A frame of
        :data:`~memorylab.evaluate._tables.DIFFERENCE_COLUMNS` (``a - b``, the higher first,
        with its seeded paired bootstrap interval and ``n``, the units compared), as
        :attr:`SummaryTable.differences <memorylab.evaluate.SummaryTable>`;
        :func:`~memorylab.evaluate.differences_table` prints it."""
        rows: list[dict[str, Any]] = []
        if len(self.comparison.answers):
            probes = probe_table(self.comparison, metric, confidence=confidence,
                                 resamples=resamples, seed=seed).differences  # fmt: skip
            overall = probes[probes["column"].str.startswith("overall")]
            rows += overall.assign(column="probe QA").to_dict("records")
        labels = list(dict.fromkeys(self.comparison.frame["summarizer"]))
        for n in GENERATIONS:
            followed = self.facts[self.facts["since"] == n - 1]
            units: dict[str, Units] = {label: {} for label in labels
                                       if label in set(followed["strategy"])}  # fmt: skip
            seen: dict[tuple[str, ...], int] = {}
            for case, label, category, fact, survived in followed[
                ["case", "strategy", "category", "fact", "survived"]
            ].itertuples(index=False):
                same = (str(label), str(case), str(category), str(fact))
                seen[same] = seen.get(same, 0) + 1  # a fact said twice is two facts
                key = (str(case), (str(category), str(fact), seen[same]))
                units[str(label)][key] = (float(survived), 1.0)
            rows += pair_differences(f"facts after {n}", units, confidence=confidence,
                                     resamples=resamples, seed=seed)  # fmt: skip
        return differences_frame(rows)

    def notes(self) -> list[str]:
        """The differences of :meth:`differences` (defaults) whose interval excludes 0, per
        column: each strategy against the column's best, the bounds aside, as a
        :class:`~memorylab.evaluate.SummaryTable` says them."""
        table = self.table()
        bounds = {kind: label for kind, label in (("ceiling", CEILING), ("floor", FLOOR))
                  if label in table.index}  # fmt: skip
        return SummaryTable(table, bounds, {}, {}, {}, differences=self.differences()).notes()


_COMPARE_OPTIONS = tuple(
    name
    for name, parameter in inspect.signature(compare_summarizers).parameters.items()
    if parameter.kind is inspect.Parameter.KEYWORD_ONLY
)
"""The keywords :func:`compare_strategies` passes on to
:func:`~memorylab.evaluate.compare_summarizers` (its ``options``)."""

StrategySpec = Strategy | str | StrategyPreset
"""What :func:`compare_strategies` runs: a strategy object, a registered name, or a
:class:`~memorylab.evaluate.StrategyPreset` (a strategy with its own ``keep_turn``)."""


def compare_strategies(
    cases: Case | Iterable[Case],
    strategies: Sequence[StrategySpec] | Mapping[str, StrategySpec],
    scorers: ScorerSpec | Sequence[ScorerSpec] = DEFAULT_SCORERS,
    *,
    context_length: int,
    threshold: Threshold = DEFAULT_THRESHOLD,
    summarizer: str | Summarizer | None = None,
    keep_turn: bool = True,
    model: str | None = None,
    bounds: bool = True,
    **options: Any,
) -> StrategyComparison:
    """Run every case's history through every strategy and score what remains (module docstring).

    ``strategies``: strategy objects, registered names or presets
    (:data:`~memorylab.evaluate.PEER_STRATEGIES`), or ``{label: strategy}``;
    ``context_length`` and ``threshold``: the window and when to compact (the same for every
    strategy); ``summarizer``: the summaries' summarizer, a name or a
    :class:`~memorylab.Summarizer` object (as :func:`~memorylab.evaluate.compare_summarizers`
    takes them: ``LiteLLMSummarizer("openai/m", llm_args={"api_base": url})`` reaches a local
    server; default the offline extractive one);
    ``keep_turn``: whether the compressor keeps the turn in progress (as the ``Agent`` does by
    default; a preset says its own); ``model``: the tokenizer and the prices of the cost
    columns (``"claude-sonnet-4-5"``; ``None``: the default tokenizer, no price); ``bounds``:
    add ``memorylab/full`` and ``memorylab/none``. ``options`` go to
    :func:`~memorylab.evaluate.compare_summarizers` (``concurrency``, ``cache_dir``,
    ``max_cost_usd``, ``progress`` ...).
    """
    import pandas as pd

    unknown = [name for name in options if name not in _COMPARE_OPTIONS]
    if unknown:
        raise InvalidSetting(
            f"compare_strategies() got an unexpected keyword argument {unknown[0]!r}; its "
            f"options are compare_summarizers': {', '.join(_COMPARE_OPTIONS)}"
        )
    items = resolve_cases(cases)  # once: an iterator of cases is read here, not twice
    one = isinstance(strategies, str | Strategy | StrategyPreset)
    if one or not isinstance(strategies, Iterable):
        raise InvalidSetting(
            "strategies must be a list of strategies (registered names, Strategy objects or "
            f"StrategyPresets) or a {{label: strategy}} dict, not {strategies!r}"
            + (f"; for one, pass [{strategies!r}]" if one else "")
        )

    def label_of(spec: StrategySpec) -> str:
        chosen = spec if isinstance(spec, StrategyPreset) else get_strategy(spec)
        return chosen.describe()

    labelled = dict(strategies) if isinstance(strategies, Mapping) else {
        label_of(s): s for s in strategies
    }  # fmt: skip
    if not labelled:
        raise InvalidSetting("compare_strategies needs at least one strategy")

    def memory(label: str, spec: StrategySpec) -> StrategyMemory:
        if not isinstance(spec, StrategyPreset):
            spec = StrategyPreset(get_strategy(spec), keep_turn=keep_turn)
        return StrategyMemory(
            spec.strategy, context_length=context_length, threshold=threshold,
            summarizer=summarizer, label=label, keep_turn=spec.keep_turn, model=model,
        )  # fmt: skip

    memories = {label: memory(label, spec) for label, spec in labelled.items()}
    compared: dict[str, Any] = dict(memories)
    if bounds:
        compared.update({CEILING: CEILING, FLOOR: FLOOR})
    if options.get("executor") is not None:
        raise InvalidSetting(
            "compare_strategies runs the strategies in this process (their runs' figures are "
            "read from it): leave executor out"
        )
    result = compare_summarizers(items, compared, scorers, **options)
    rows, facts = [], []
    for case in items:
        key = _history_key(case.messages)
        for label, strategy_memory in memories.items():
            run = strategy_memory.runs.get(key)
            if run is None:  # failed (an error row in the scores says why)
                continue
            rows.append(_run_row(case.id, label, strategy_memory.keep_turn, run))
            facts += [{"case": case.id, "strategy": label, **fact} for fact in run.facts]
    runs = pd.DataFrame(rows, columns=list(RUN_COLUMNS))
    followed = pd.DataFrame(facts, columns=list(FACT_COLUMNS))
    return StrategyComparison(
        frame=_overview(result, runs, followed), comparison=result, runs=runs, facts=followed
    )


def _survival(facts: Sequence[Mapping[str, Any]], generations: int) -> float:
    """The share of ``facts`` (rows of :data:`FACT_COLUMNS`) followed through ``generations``
    compactions that survived them (NaN: none followed that far)."""
    outcomes = [row["survived"] for row in facts if row["since"] == generations - 1]
    return sum(outcomes) / len(outcomes) if outcomes else math.nan


def _run_row(case: str, label: str, keep_turn: bool, run: _Run) -> dict[str, Any]:
    result = run.result
    checked = result.frame["check"]
    return {
        "case": case,
        "strategy": label,
        "keep_turn": keep_turn,
        "messages": len(result.frame),
        "compactions": result.compactions,
        "failed_compactions": sum(1 for e in result.events if not e.ok),
        "task_losses": run.task_losses,
        **{f"survival_{n}": _survival(run.facts, n) for n in GENERATIONS},
        "tokens_read": result.total_input_tokens,
        "peak_context_tokens": result.peak_context_tokens,
        "over_window": int((result.frame["context_after"] > result.context_length)[checked].sum()),
        "summarizer_calls": result.summarizer_calls,
        "summarizer_input_tokens": result.summarizer_input_tokens,
        "summary_tokens": result.summary_tokens,
        "summarizer_cost_usd": result.summarizer_cost_usd,
        "cached_cost_usd": result.cached_cost_usd,
        "uncached_cost_usd": result.uncached_cost_usd,
        "memory_tokens": int(result.frame["context_after"].iloc[-1]) if len(result.frame) else 0,
    }


def _overview(result: ComparisonResult, runs: pd.DataFrame, facts: pd.DataFrame) -> pd.DataFrame:
    """One row per strategy and bound: each quality metric's mean over cases, the runs' costs
    and task losses summed, and the facts' survival over every case's facts."""
    import pandas as pd

    scores = result.frame[result.frame["metric"] != "error"]
    quality = scores.assign(column=scores["scorer"] + "." + scores["metric"]).pivot_table(
        index="summarizer", columns="column", values="value", aggfunc="mean", sort=False
    )
    summed = ["compactions", "task_losses", "tokens_read", "over_window", "summarizer_calls",
              "summarizer_input_tokens", "summarizer_cost_usd", "cached_cost_usd",
              "uncached_cost_usd", "memory_tokens"]  # fmt: skip
    costs = runs.groupby("strategy", sort=False)[summed].sum(min_count=1)
    for n in GENERATIONS:
        followed = facts[facts["since"] == n - 1]
        costs[f"survival_{n}"] = followed.groupby("strategy", sort=False)["survived"].mean()
    order = list(dict.fromkeys(result.frame["summarizer"]))
    frame = pd.concat([quality.reindex(order), costs.reindex(order)], axis=1)
    frame.index.name = "strategy"
    return frame.reset_index()
