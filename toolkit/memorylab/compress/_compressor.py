"""``ContextCompressor``: check the history's tokens, summarize it, compact the conversation.

Threshold convention (see :mod:`memorylab.compress._policy`): a float in (0, 1] is a fraction of
the context length, an int >= 1 an absolute token count. Compression fires when the tokens of
the request the model is sent (``conversation.token_count()``: ``to_messages()`` counted as
OpenAI counts a chat request, :mod:`memorylab.memory._request`) reach it.

What the replay needs is recorded with every compaction (``extra`` in ``compactions.jsonl``):
``summary_budget`` (the tokens asked of the summarizer, :meth:`ContextCompressor.summary_budget`),
``summarizer_max_tokens``, ``static_tokens`` (the share of ``tokens_before`` every request
carries whatever the history: the static context's messages and the reply's priming),
``token_model`` (the tokenizer's model), ``trigger`` (a
trigger of more than one threshold) and ``counted_tokens`` (the count a trigger of the reported
usage compared: ``tokens_before`` is always memorylab's estimate), ``keep_turn`` and
``kept_turn`` (the turn in progress kept: :class:`ContextCompressor`'s ``keep_turn``; a record
without them compacted it too, as the seed does) and ``hooks`` (the hooks' names and the entries
``before_compaction`` kept, :mod:`memorylab.compress._hooks`), besides
whatever the caller passes (the :class:`~memorylab.Agent` adds its check points and the process's
start and preload). :mod:`memorylab.analysis` replays a transcript with this same class and reads
these fields to run it at the recorded settings.

Failure policy: a summarizer error, an empty or ``None`` summary, or any exception from a custom
summarizer leaves the history and every file exactly as they were. The failure is recorded as a
``CompactionEvent`` with ``error`` set (in :attr:`ContextCompressor.events` and the log, not on
disk), and compression is not retried on the very next check: after the n-th consecutive failure
the compressor skips ``backoff.delay(n)`` checks (1, 2, 4 ... capped). Once
``backoff.max_attempts`` consecutive attempts have failed, :class:`~memorylab.errors.
CompressionFailed` is raised, naming the last error. A success resets the count.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, overload, runtime_checkable

from memorylab.compress import _cache_model as cache_model
from memorylab.compress import _policy as policy
from memorylab.compress._base import Summarizer, Summary
from memorylab.compress._hooks import CompactionPreview, hook_name, kept_marks, kept_positions
from memorylab.compress._litellm_summarizer import SUMMARY_PROMPT, SUMMARY_SYSTEM_PROMPT
from memorylab.compress._policy import Backoff, ReportedUsage, Threshold, Trigger
from memorylab.compress._strategies import get_strategy
from memorylab.compress._strategy import CompactionPlan, KeepWindow, Strategy
from memorylab.compress._summarizers import DEFAULT_SUMMARIZER, get_summarizer, summarizer_names
from memorylab.compress._tokens import TokenCounter, get_token_counter
from memorylab.errors import CompactionConflict, CompressionFailed, InvalidSetting
from memorylab.llm import check_int
from memorylab.memory._conversation import Conversation, register_tokenizer
from memorylab.memory._format import parse_timestamp
from memorylab.memory._records import (
    SUMMARY_PREFIX,
    CompactionEvent,
    EntryKind,
    UsageRecord,
    turn_start,
)
from memorylab.memory._redact import SECRETS

logger = logging.getLogger("memorylab")

MIN_SUMMARY_TOKENS = 64
"""The smallest summary budget the compressor asks for, however small the window."""

COMPRESSION_SYSTEM_PROMPT = SUMMARY_SYSTEM_PROMPT
"""The reference's name for the system prompt of a model summary: memorylab's
(:data:`~memorylab.compress.SUMMARY_SYSTEM_PROMPT`, what a litellm model summarizer sends)."""

COMPRESSION_USER_TEMPLATE = SUMMARY_PROMPT.replace("{transcript}", "{history}")
"""The reference's name for the request of a model summary: memorylab's
(:data:`~memorylab.compress.SUMMARY_PROMPT`), with the reference's ``{history}`` placeholder
(``COMPRESSION_USER_TEMPLATE.format(history=conversation.get_str())``)."""

# ``Conversation().token_count()`` counts with the tokenizer of its ``tokenizer_model_name``:
# the memory core, a floor below, has no tokenizer of its own, so this floor installs it.
register_tokenizer(get_token_counter)


class ContextCompressor:
    """Decides when to compress a :class:`~memorylab.Conversation` and does it.

    Args:
        threshold: when to compress: a float in (0, 1] is a fraction of the context length, an
            int an absolute token count (:mod:`memorylab.compress._policy`), a
            :class:`~memorylab.compress._policy.Trigger` several conditions (a fraction, a token
            count, a message count: any fires).
        summarizer_model: a summarizer name (``"memorylab/extractive"`` or any registered one)
            or a litellm model name. ``None``: the :class:`~memorylab.Agent` uses its own
            ``model_name`` (as the seed does), a standalone compressor the offline extractive
            summarizer.
        summarizer_temperature: the temperature of a litellm model summarizer.
        summarizer_max_tokens: the largest summary to ask for (it is also kept under half of
            the trigger: :meth:`summary_budget`).
        summarizer: a summarizer object; wins over ``summarizer_model``.
        backoff: how many checks to skip after a failed summary, and when to give up
            (:class:`~memorylab.compress._policy.Backoff`).
        summarizer_args: options for the summarizer's constructor when it is built from
            ``summarizer_model`` (``llm_args``, ``retry``, ``timeout`` ...).
        timer: measures ``latency_s`` (default ``time.perf_counter``); injectable for
            reproducible records.
        strategy: what a compaction does with the history: a
            :class:`~memorylab.compress._strategy.Strategy` or a registered name
            (:func:`~memorylab.compress.get_strategy`); default ``"summary"``, the seed's
            compaction.
        keep_turn: keep the turn in progress verbatim, whatever the strategy: the last message
            of the user (:func:`~memorylab.memory._records.is_user_message`) and every entry
            after it are never summarized, cleared or dropped. When that leaves nothing to
            compact, only the user's message and the newest message (with the tool call it
            answers) are kept. ``False``: the seed's compaction, whose files (with the default
            strategy) are byte for byte those of the seed's API. Entries marked ``pinned``
            (``Conversation.add(..., pinned=True)``) are kept either way.
        before_compaction: called with a :class:`~memorylab.compress.CompactionPreview` before
            a compaction is carried out; it may return positions of ``preview.entries`` to keep
            verbatim too. A hook that raises makes the attempt a failed one (memory unchanged,
            the back-off applies).
        after_compaction: called with the :class:`~memorylab.memory._records.CompactionEvent`
            of each successful compaction; an error it raises is logged (the compaction is
            done).
    """

    def __init__(
        self,
        threshold: Threshold | Trigger = policy.DEFAULT_THRESHOLD,
        summarizer_model: str | None = None,
        summarizer_temperature: float = 0.1,
        summarizer_max_tokens: int = 2000,
        summarizer: Summarizer | None = None,
        *,
        backoff: Backoff | None = None,
        summarizer_args: Mapping[str, Any] | None = None,
        timer: Callable[[], float] | None = None,
        strategy: Strategy | str | None = None,
        keep_turn: bool = True,
        before_compaction: Callable[[CompactionPreview], Iterable[int] | None] | None = None,
        after_compaction: Callable[[CompactionEvent], object] | None = None,
    ) -> None:
        self.trigger = Trigger.of(threshold)
        timing = self.trigger.cache
        if timing is not None and math.isnan(cache_model.unit_prices(timing.model)[0]):
            raise InvalidSetting(
                f"CacheTiming.model={timing.model!r} has no price in litellm's model map: name "
                "the model the agent calls (e.g. 'claude-sonnet-4-5'), whose prompt cache the "
                "deferral weighs"
            )
        self.threshold: Threshold | None = (
            self.trigger.threshold
            if isinstance(threshold, Trigger)
            else policy.validate_threshold(threshold)
        )
        self.strategy = get_strategy(strategy)
        if not isinstance(keep_turn, bool):
            raise InvalidSetting(f"keep_turn must be True or False, not {keep_turn!r}")
        self.keep_turn = keep_turn
        for name, hook in (("before_compaction", before_compaction),
                           ("after_compaction", after_compaction)):  # fmt: skip
            if hook is not None and not callable(hook):
                raise InvalidSetting(f"{name} must be a function (or None), not {hook!r}")
        self.before_compaction = before_compaction
        self.after_compaction = after_compaction
        self.summarizer_model = summarizer_model
        self.summarizer_temperature = summarizer_temperature
        self.summarizer_max_tokens = check_int("summarizer_max_tokens", summarizer_max_tokens, 1)
        self.summarizer_args = dict(summarizer_args or {})
        self.backoff = backoff or Backoff()
        self.timer = timer or time.perf_counter
        self.events: list[CompactionEvent] = []
        self.last_counted: int | None = None
        """The tokens the last check compared with the trigger (:meth:`compress`)."""
        self.failures = 0
        self._summarizer = summarizer
        self._skip_checks = 0
        # A cache-aware trigger's state (Trigger.cache): the previous check's time and count
        # (the model call it preceded), the checks deferred since the trigger fired and what
        # those deferred calls carried (USD at the cache-read price).
        self._last_call: tuple[float, int] | None = None
        self._deferred = 0
        self._carried_usd = 0.0

    # -- the summarizer -------------------------------------------------------------------------

    @property
    def has_summarizer(self) -> bool:
        """Whether the summarizer is chosen already (given as an object, or built)."""
        return self._summarizer is not None

    def summarizer_for(self, default_model: str | None = None) -> Summarizer:
        """The summarizer to use; built once from ``summarizer_model`` (or ``default_model``).

        A litellm model name is given ``summarizer_temperature`` and ``summarizer_max_tokens``;
        every summarizer is given ``summarizer_args``.
        """
        if self._summarizer is None:
            spec = self.summarizer_model or default_model or DEFAULT_SUMMARIZER
            options: dict[str, Any] = {}
            if spec.strip() not in summarizer_names():
                options = {
                    "max_tokens": self.summarizer_max_tokens,
                    "temperature": self.summarizer_temperature,
                }
            self._summarizer = get_summarizer(spec, **{**options, **self.summarizer_args})
        return self._summarizer

    # -- deciding -------------------------------------------------------------------------------

    def trigger_tokens(self, context_length: int) -> int:
        """The token count at which it fires (the smallest of a trigger's token conditions);
        the window itself for a message count alone (where a model call would fail)."""
        found = self.trigger.token_trigger(context_length)
        return context_length if found is None else found

    def summary_budget(self, context_length: int) -> int:
        """Tokens the summary may take: ``summarizer_max_tokens``, but at most half the trigger,
        so the fresh context is well below the threshold (a summary as big as the trigger would
        make compression fire again at once)."""
        return max(
            MIN_SUMMARY_TOKENS,
            min(self.summarizer_max_tokens, self.trigger_tokens(context_length) // 2),
        )

    def should_compress(self, conversation: Any, context_length: int | None = None) -> bool:
        """Whether the history's tokens reached the threshold (no back-off applied).

        ``should_compress(agent)`` is the reference's form (:meth:`usage_ratio`)."""
        if context_length is None:
            return self._agent_should_compress(conversation)
        return self._fires(conversation, conversation.token_count(), context_length)

    def _fires(self, conversation: Conversation, tokens: int, context_length: int) -> bool:
        """The trigger, for ``tokens`` it counts of the history (:meth:`Trigger.counted`) and
        the history's messages, when it counts them."""
        if self.trigger.plain:
            return policy.should_compress(tokens, context_length, self.threshold)  # type: ignore[arg-type]
        messages = 0
        if self.trigger.messages is not None:
            messages = len(conversation.entries(EntryKind.MESSAGE))
        return self.trigger.fires(tokens, context_length, messages)

    # -- doing ----------------------------------------------------------------------------------

    @overload
    def compress(
        self,
        conversation: Conversation,
        context_length: int,
        *,
        force: bool = ...,
        default_model: str | None = ...,
        extra: Mapping[str, Any] | None = ...,
        reported: ReportedUsage | None = ...,
    ) -> CompactionEvent | None: ...

    @overload
    def compress(self, conversation: Any, /) -> str | None: ...

    def compress(
        self,
        conversation: Any,
        context_length: int | None = None,
        *,
        force: bool = False,
        default_model: str | None = None,
        extra: Mapping[str, Any] | None = None,
        reported: ReportedUsage | None = None,
    ) -> CompactionEvent | str | None:
        """Compress if the threshold is reached (or ``force``); ``None`` when nothing was done.

        Returns the successful event, or the failed one (``event.ok`` is False) when this attempt
        failed; raises :class:`CompressionFailed` once the attempts are exhausted. ``extra`` goes
        into the event's ``extra`` (and ``compactions.jsonl``) next to what the compressor
        records itself (the module docstring). ``reported``: the provider's usage at the last
        model call (:class:`~memorylab.compress._policy.ReportedUsage`, the Agent passes it), what
        a trigger with ``count="reported"`` counts from (other triggers ignore it); the count it
        compared is recorded as ``extra["counted_tokens"]``. :attr:`last_counted` is the count
        the last check compared.

        ``compress(agent)`` is the reference's form (:meth:`_agent_compress`): it compresses
        ``agent.short_memory`` whatever its size and returns the summary text.
        """
        if context_length is None:
            return self._agent_compress(conversation)
        tokens_before = conversation.token_count()
        counted = self.trigger.counted(tokens_before, reported)
        self.last_counted = counted
        previous = self._called(conversation, counted)
        if not force and not self._fires(conversation, counted, context_length):
            return None
        if not force and self._defers(
            conversation, counted, context_length, previous, default_model
        ):
            return None
        if self._skip_checks > 0 and not force:
            self._skip_checks -= 1
            return None
        strategy = self.strategy
        summarizer = self.summarizer_for(default_model) if strategy.summarizes else None
        ticket = conversation.begin_compaction()
        entries = conversation.compaction_entries(ticket, preload_as_messages=strategy.verbatim)
        started = self.timer()
        try:
            tokens = _entry_tokens(conversation, entries) if strategy.needs_tokens else None
            plan = strategy.plan(
                entries, tokens=tokens, context_length=context_length, counter=conversation.counter
            )
            if plan.empty:
                raise InvalidSetting(plan.note or f"{strategy.describe()}: nothing to compact")
            planned = set(plan.keep)
            plan, protected = self._protected(plan, entries, conversation.user)
            plan, hooks = self._before(plan, entries, tokens_before, context_length)
            summary: Summary | None = None
            recorded: dict[str, Any] = {}
            if plan.summarize:
                summarizer = summarizer or self.summarizer_for(default_model)
                # What is written beside the summary shares its room: a ledger the plan
                # carries, and the entries kept only as the turn, pinned or by a hook, so the
                # context after the compaction is no larger than the strategy's own.
                beside = [*plan.carry, *(entries[i] for i in plan.keep if i not in planned)]
                budget = max(
                    MIN_SUMMARY_TOKENS,
                    self.summary_budget(context_length)
                    - sum(conversation.request_tokens(e) for e in beside),
                )
                summary = summarizer.summarize(
                    [entries[i] for i in plan.summarize], max_tokens=budget
                )
                recorded = {**_usage(summary), "summary_budget": budget}
            recorded["summarizer_max_tokens"] = self.summarizer_max_tokens
            recorded.update(_context_record(conversation))
            recorded.update(protected)
            if hooks:
                recorded["hooks"] = hooks
            if strategy.record() is not None:
                recorded.update(plan.counts())
            if not self.trigger.plain:
                recorded["trigger"] = self.trigger.to_dict()
            if self.trigger.cache is not None:
                recorded["deferred_checks"] = self._deferred
            if self.trigger.reported:
                recorded["counted_tokens"] = counted
            recorded.update(extra or {})
            kept = None
            if plan.keep or plan.carry or summary is None:

                def kept(archive: str | None) -> list[dict[str, Any]]:
                    return plan.kept_entries(entries, archive)

            event: CompactionEvent = conversation.compact(
                None if summary is None else summary.text,
                ticket=ticket,
                kept=kept,
                tokens_before=tokens_before,
                threshold=self.threshold,
                context_length=context_length,
                summarizer_model=None
                if summary is None or summarizer is None
                else summary.model or summarizer.name,
                latency_s=round(self.timer() - started, 6),
                cost_usd=0.0 if summary is None else summary.cost_usd,
                strategy=strategy.record(),
                extra=recorded,
            )
        except CompactionConflict as error:
            # Another process compacted this memory meanwhile: not a failure of ours.
            logger.info("memorylab: compaction skipped: %s", error)
            return None
        except Exception as error:  # any failure must leave memory as it was
            return self._failed(conversation, error, tokens_before, context_length, summarizer)
        self.failures = 0
        self._skip_checks = 0
        self._deferred, self._carried_usd = 0, 0.0
        self.events.append(event)
        if self.after_compaction is not None:
            try:
                self.after_compaction(event)
            except Exception as error:  # the compaction is done and on disk: say so, go on
                logger.warning(
                    "memorylab: after_compaction %s failed after a compaction (%s)",
                    hook_name(self.after_compaction),
                    SECRETS(f"{type(error).__name__}: {error}"),
                )
        return event

    def _protected(
        self, plan: CompactionPlan, entries: Sequence[Mapping[str, Any]], user_role: str
    ) -> tuple[CompactionPlan, dict[str, Any]]:
        """``plan`` with the pinned entries kept, and with ``keep_turn`` the turn in progress
        (the class docstring); what the record says of it (``keep_turn``, ``kept_turn``: how
        many entries of the turn were kept). Nothing left to compact is refused."""
        plan = plan.keeping(i for i, entry in enumerate(entries) if entry.get("pinned"))
        record: dict[str, Any] = {}
        if self.keep_turn:
            start = turn_start(entries, user_role)
            turn = [] if start is None else list(range(start, len(entries)))
            kept = plan.keeping(turn)
            if kept.empty and turn:  # the turn is all there is: its request and newest step
                newest = KeepWindow(keep_messages=1).window_start(entries, None, None)
                turn = [turn[0], *range(max(newest, turn[0] + 1), len(entries))]
                kept = plan.keeping(turn)
            plan, record = kept, {"keep_turn": True, "kept_turn": len(turn)}
        if plan.empty:
            raise InvalidSetting(
                "nothing to compact but the turn in progress and pinned entries, which are "
                "kept: compaction waits for the turn to end (keep_turn=False compacts it too)"
            )
        return plan, record

    def _before(
        self,
        plan: CompactionPlan,
        entries: Sequence[Mapping[str, Any]],
        tokens_before: int,
        context_length: int,
    ) -> tuple[CompactionPlan, dict[str, Any]]:
        """``plan`` with what ``before_compaction`` keeps, and what the record says of the
        hooks (``{"before", "after", "kept"}``, what is set)."""
        hooks: dict[str, Any] = {}
        if self.before_compaction is not None:
            hooks["before"] = hook_name(self.before_compaction)
        if self.after_compaction is not None:
            hooks["after"] = hook_name(self.after_compaction)
        if self.before_compaction is None:
            return plan, hooks
        preview = CompactionPreview.of(
            plan, entries, tokens_before=tokens_before, context_length=context_length,
            strategy=self.strategy,
        )  # fmt: skip
        positions = kept_positions(self.before_compaction(preview), len(entries))
        if positions:
            hooks["kept"] = kept_marks(entries[i] for i in positions)
            plan = plan.keeping(positions)
            if plan.empty:
                raise InvalidSetting(
                    "before_compaction kept every entry the compaction would remove: nothing "
                    "is left to compact"
                )
        return plan, hooks

    def _called(self, conversation: Conversation, counted: int) -> tuple[float, int] | None:
        """For a cache-aware trigger: the previous check's time and count (the model call it
        preceded; ``None`` in a new process), this check's remembered. A check's time is its
        history's newest entry's timestamp (the Agent checks right after adding a message), so
        a replay of the run's files meets the same times."""
        if self.trigger.cache is None:
            return None
        previous = self._last_call
        now = _newest_time(conversation)
        self._last_call = None if now is None else (now, counted)
        return previous

    def _defers(
        self,
        conversation: Conversation,
        counted: int,
        context_length: int,
        previous: tuple[float, int] | None,
        default_model: str | None,
    ) -> bool:
        """Whether a cache-aware trigger defers the compaction its conditions call for
        (docs/compression.md, "Cache-aware timing"): the cache is warm (the previous call
        within ``ttl_s``, in this process), the context plus the growth since that call stays
        below the ceiling, and the deferred calls have carried, at the cache-read price, less
        than the compaction costs: its summary call and the cache it rebuilds (the terms of
        ``compaction_costs_df``, :mod:`memorylab.compress._cache_model`). A model without cache
        prices never defers."""
        timing = self.trigger.cache
        if timing is None or previous is None or self._last_call is None:
            return False
        ceiling = self.trigger.ceiling_tokens(context_length)
        if not timing.warm(self._last_call[0], previous[0]):
            return False
        growth = max(0, counted - previous[1])  # what the next call is expected to add
        if counted + growth >= ceiling:
            return False
        model = timing.model
        static = _context_record(conversation).get("static_tokens", 0)
        # what the compaction leaves: as this process's last one did, else the static context
        # and a summary of the whole budget
        after = next(
            (e.tokens_after for e in reversed(self.events) if e.ok and e.tokens_after),
            static + self.summary_budget(context_length),
        )
        rebuild = cache_model.compaction_rebuild_usd(
            model, after=after, static=static, growth=growth
        )
        carried = self._carried_usd + cache_model.carried_usd(model, max(0, counted - after))
        if not carried < self._summary_usd(conversation, context_length, default_model) + rebuild:
            return False  # NaN (no cache prices) included: compact
        self._deferred, self._carried_usd = self._deferred + 1, carried
        return True

    def _summary_usd(
        self, conversation: Conversation, context_length: int, default_model: str | None
    ) -> float:
        """The summary call a compaction now would make, at its summarizer's prices
        (``Summarizer.estimate``); 0 for a strategy that writes no summary, an offline
        summarizer, or one litellm has no price for."""
        if not self.strategy.summarizes:
            return 0.0
        history = conversation.entries(EntryKind.SUMMARY, EntryKind.PRELOAD, EntryKind.MESSAGE)
        calls = self.summarizer_for(default_model).estimate(
            history, self.summary_budget(context_length)
        )
        cost = sum(cache_model.price(model, tokens_in, out) for model, tokens_in, out in calls)
        return 0.0 if math.isnan(cost) else cost

    def _failed(
        self,
        conversation: Conversation,
        error: Exception,
        tokens_before: int,
        context_length: int,
        summarizer: Summarizer | None,
    ) -> CompactionEvent:
        self.failures += 1
        # A provider's message may quote the key it refused: the text is redacted before it
        # reaches the event, the log and the error (the store's rule, memory.redact.SECRETS).
        description = SECRETS(f"{type(error).__name__}: {error}")
        event = CompactionEvent(
            time=datetime.now(UTC),
            agent=conversation.agent_name,
            tokens_before=tokens_before,
            threshold=self.threshold,
            context_length=context_length,
            summarizer_model=None if summarizer is None else summarizer.name,
            error=description,
            kind="failed",
            strategy=self.strategy.record(),
        )
        self.events.append(event)
        if self.backoff.exhausted(self.failures):
            raise CompressionFailed(
                f"compression failed {self.failures} times in a row; memory was left unchanged. "
                f"Last error: {description}. Check the summarizer (model name, API key, "
                "api_base), or use summarizer_model='memorylab/extractive' to work offline."
            ) from error
        self._skip_checks = math.ceil(self.backoff.delay(self.failures))
        logger.warning(
            "memorylab: compression failed (%s); memory unchanged, next attempt in %d checks",
            description,
            self._skip_checks,
        )
        return event

    # -- the reference's calls: an agent (``.short_memory``, ``.context_length``) ---------------

    def usage_ratio(self, agent: Any, context_length: int | None = None) -> float:
        """Tokens of the history as a fraction of the window: the reference's
        ``usage_ratio(agent)`` (``agent.short_memory.count_history_tokens() /
        agent.context_length``; 0.0 without a window), or ``usage_ratio(conversation,
        context_length)``. It may exceed 1."""
        if context_length is not None:
            return float(agent.token_count()) / float(context_length)
        call = _agent_call(agent, "usage_ratio")
        if not call.window:
            return 0.0
        return float(call.memory.count_history_tokens()) / float(call.window)

    def _agent_should_compress(self, agent: Any) -> bool:
        """``should_compress(agent)``: :meth:`usage_ratio` reached the threshold (False without
        a window). A history that is not memorylab's (the reference's, a stand-in) is first
        ruled out by its size, as the reference does: a token is at least one byte."""
        call = _agent_call(agent, "should_compress")
        window, memory = call.window, call.memory
        if not window:
            return False
        history = getattr(memory, "conversation_history", None)  # the reference's, or a stand-in
        if self.trigger.messages is not None:
            if isinstance(memory, Conversation):
                messages = len(memory.entries(EntryKind.MESSAGE))
            else:
                messages = len(history) if isinstance(history, list) else 0
            if messages >= self.trigger.messages:
                return True
        found = self.trigger.token_trigger(window)
        if found is None:
            return False
        trigger = found
        if (
            not isinstance(memory, Conversation)
            and isinstance(history, list)
            and _history_bytes(history) < trigger
        ):
            return False
        return round(self.usage_ratio(agent) * float(window), 6) >= trigger  # round: float noise

    def _agent_compress(self, agent: Any) -> str | None:
        """``compress(agent)``: summarize ``agent.short_memory`` (a memorylab Conversation)
        whatever its size and compact it; the summary text, or ``None`` when there was nothing
        to compress or the attempt failed (the failed event is in :attr:`events`). The
        summarizer is ``summarizer_model``, else ``agent.model_name`` (as the reference's)."""
        call = _agent_call(agent, "compress")
        memory = call.memory
        if not str(memory.return_history_as_string()).strip():
            return None
        if not isinstance(memory, Conversation):
            raise InvalidSetting(
                "compress(agent) compacts a memorylab Conversation; agent.short_memory is a "
                f"{type(memory).__name__}: construct it with memorylab.Conversation"
            )
        window = call.window or memory.context_length
        if not window:
            raise InvalidSetting(
                "compress(agent) needs the model's window: set agent.context_length (or the "
                "Conversation's context_length)"
            )
        event = self.compress(memory, window, force=True, default_model=call.model)
        if event is None or not event.ok or not event.summary_chars:
            return None  # failed, or a strategy that writes no summary (trim, tool clearing)
        summary = memory.entries(EntryKind.SUMMARY)[0]
        text = str(summary["content"])
        return text.removeprefix(SUMMARY_PREFIX + " ") if text != SUMMARY_PREFIX else text

    def maybe_compress(self, agent: Any) -> str | None:
        """The reference's loop call: :meth:`compress` ``(agent)`` when :meth:`should_compress`
        ``(agent)`` says so; the summary text or ``None``. After a failed attempt the next
        ``backoff.delay(n)`` checks are skipped; an error other than the compressor's own give-up
        (:class:`CompressionFailed`) or a setting (:class:`InvalidSetting`) is logged and the
        loop goes on, as the reference does."""
        if not self.should_compress(agent):
            return None
        if self._skip_checks > 0:
            self._skip_checks -= 1
            return None
        try:
            return self.compress(agent)
        except (CompressionFailed, InvalidSetting):
            raise
        except Exception as error:
            logger.error(
                "memorylab: compression failed (%s); continuing without it", SECRETS(str(error))
            )
            return None

    def __repr__(self) -> str:
        name = self._summarizer.name if self._summarizer else self.summarizer_model
        when = f"threshold={self.threshold!r}" if self.trigger.plain else f"{self.trigger!r}"
        how = "" if self.strategy.record() is None else f", strategy={self.strategy.describe()}"
        turn = "" if self.keep_turn else ", keep_turn=False"
        return f"ContextCompressor({when}, summarizer={name!r}{how}{turn})"


def _usage(summary: Summary) -> dict[str, Any]:
    return {
        key: value
        for key, value in (
            ("summary_input_tokens", summary.input_tokens),
            ("summary_output_tokens", summary.output_tokens),
            ("summary_calls", summary.chunks),
        )
        if value is not None
    }


def _newest_time(conversation: Conversation) -> float | None:
    """The newest history entry's timestamp in seconds (``None``: no entry, or none readable)."""
    history = conversation.conversation_history
    stamp = history[-1].get("timestamp") if history else None
    try:
        return parse_timestamp(stamp).timestamp() if isinstance(stamp, str) else None
    except ValueError:
        return None


def _entry_tokens(conversation: Conversation, entries: list[dict[str, Any]]) -> list[int]:
    """Each entry's tokens as the request carries it (what a strategy keeping tokens needs)."""
    counter = conversation.counter
    return [conversation.request_tokens(e, counter) for e in entries]


def _context_record(conversation: Conversation) -> dict[str, Any]:
    """The tokens every request carries whatever the history (the static context's messages,
    the reply's priming and the tool schemas, as :meth:`Conversation.token_count` counts them)
    and the model of a TokenCounter counting."""
    counter = conversation.token_counter
    if counter is None:
        return {}
    static = conversation.static_context()
    tokens = sum(conversation.request_tokens(e, counter) for e in static)
    record: dict[str, Any] = {"static_tokens": tokens + conversation.fixed_request_tokens}
    if isinstance(counter, TokenCounter) and counter.model is not None:
        record["token_model"] = counter.model
    return record


@runtime_checkable
class AgentLike(Protocol):
    """What memorylab reads of an agent (:class:`~memorylab.Agent` declares all of it): its
    name, model and window, its memory, its model calls and compactions, and its compressor.

    The reference framework's agents enter only the compressor's agent calls
    (``should_compress(agent)``, ``compress(agent)``, ``usage_ratio(agent)``), through one
    adapter, ``_agent_call``: of those, ``short_memory`` is required (memorylab's Conversation,
    or the reference's for ``should_compress``), ``context_length`` and ``model_name`` optional.
    """

    agent_name: str
    model_name: str
    context_length: int
    short_memory: Conversation
    usage_records: list[UsageRecord]
    context_compressor: ContextCompressor

    @property
    def compaction_events(self) -> list[CompactionEvent]: ...


@dataclass(frozen=True, slots=True)
class _AgentCall:
    """What the compressor's agent calls read of an agent (:class:`AgentLike`'s note)."""

    memory: Any
    window: int | None
    model: str | None


def _agent_call(agent: Any, method: str) -> _AgentCall:
    """An agent as the compressor's agent calls read it (an :class:`AgentLike`, or the
    reference's agent, whose shape is its own: the one place it is read), or the error that
    says how to call ``method``."""
    if isinstance(agent, Conversation):
        raise InvalidSetting(
            f"{method}(conversation) needs the context length: {method}(conversation, "
            "context_length), or pass an agent (with .short_memory and .context_length)"
        )
    memory = getattr(agent, "short_memory", None)
    if memory is None:
        raise InvalidSetting(
            f"{method}() takes a Conversation and a context length, or an agent with "
            f".short_memory and .context_length; got {type(agent).__name__}"
        )
    return _AgentCall(
        memory, getattr(agent, "context_length", None), getattr(agent, "model_name", None)
    )


def _history_bytes(history: list[Any]) -> int:
    """At least the UTF-8 size of the history as the reference formats it."""
    return sum(
        len(f"[{m.get('timestamp')}] {m.get('role')}: {m.get('content')}\n\n".encode())
        for m in history
        if isinstance(m, Mapping)
    )
