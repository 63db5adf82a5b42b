"""When to compress, and how long to back off after a failed summary. PURE: no I/O, clock or env.

Threshold convention
--------------------
* a ``float`` in ``(0, 1]`` is a **fraction** of the context window: ``0.9`` fires at 90 %;
* an ``int >= 1`` is an **absolute** token count: ``3000`` fires at 3,000 tokens;
* anything else is an :class:`~memorylab.errors.InvalidSetting`: ``0``, negatives, floats
  above 1 (``2.0`` is not "2 tokens"), NaN, infinities, ``bool`` (``True`` is an ``int`` in
  Python), ``str``, ``None``. Other real numbers follow their kind: integral ones
  (``numpy.int64``) are absolute counts, the rest (``numpy.float64``, ``Fraction``) fractions.

Compression fires when ``tokens >= threshold * context_length``, compared exactly. A fraction is
read as the decimal it prints as (``0.9`` is 9/10, not the binary float 0.9000000000000000222...),
so ``0.9`` of 1000 fires at 900 tokens, not 901, and ``0.07`` of 100 at 7 (the float product
``0.07 * 100`` is ``7.000000000000001``, which 7 would not reach). :func:`trigger_tokens` is the
smallest token count that fires: ``ceil(fraction * context_length)``, at least 1.

An absolute threshold above ``context_length`` is rejected: it could never fire before the window
overflows. An absolute threshold equal to ``context_length`` fires only when the window is full.

>>> trigger_tokens(1000, 0.9), trigger_tokens(1000, 900), trigger_tokens(1001, 0.9)
(900, 900, 901)
>>> trigger_tokens(100, 0.07)
7
>>> should_compress(899, 1000), should_compress(900, 1000)
(False, True)

Several triggers
----------------
A :class:`Trigger` holds up to three conditions and fires when any of them does (as
LangChain's ``SummarizationMiddleware`` allows several): ``fraction`` of the window, an
absolute ``tokens`` count, and ``messages``, the number of messages in the history (what
``add()`` appended, not the static context, a preload or a summary). A plain threshold is the
trigger of one condition (:meth:`Trigger.of`), so ``threshold=0.9`` keeps working unchanged.

>>> Trigger(fraction=0.9, messages=50).fires(tokens=100, context_length=1000, messages=50)
True
>>> Trigger.of(3000)
Trigger(tokens=3000)

What a trigger counts
---------------------
By default a trigger's token conditions compare memorylab's estimate of the history
(``count="estimated"``: ``Conversation.token_count()``, an offline tokenizer's count). With
``count="reported"`` they compare what the provider reported at the last model call plus the
estimate of what was added since (:class:`ReportedUsage`, as LangChain 1.2.3's summarization
middleware counts): the provider's count of the context, which may differ from the estimate by
its per-message overhead, the tool schemas and its own tokenizer. Before the first reported
call (a new process, a provider that reports no usage) it counts the estimate.

>>> trigger = Trigger(fraction=0.9, count="reported")
>>> trigger.counted(850, ReportedUsage(tokens=960, estimate=800))  # 960 + (850 - 800)
1010
>>> trigger.fires(trigger.counted(850, ReportedUsage(960, 800)), context_length=1000)
True
>>> trigger.counted(850, None)  # nothing reported yet: the estimate
850

Cache-aware timing
------------------
A trigger with ``cache=CacheTiming(...)`` defers a compaction its conditions call for while the
provider's prompt cache is warm (the previous model call within ``ttl_s`` of this check, in
this process) and the window still holds the context and the growth expected before the next
check below ``ceiling`` of it: the compressor weighs the compaction against the cached calls
it would spare by the prompt-cache model (:mod:`memorylab.compress._cache_model`).

>>> timed = Trigger(fraction=0.5, cache=CacheTiming("claude-sonnet-4-5", ceiling=0.95))
>>> timed.cache.warm(400.0, 200.0), timed.cache.warm(400.0, 50.0), timed.cache.warm(400.0, None)
(True, False, False)
>>> timed.ceiling_tokens(1000)  # a deferral ends where the context would reach it
950

Failure policy
--------------
After a failed summarization the compressor waits ``Backoff.delay(failures)`` (in loop
iterations or seconds: the policy is unit-agnostic) and gives up once ``exhausted(failures)``.
"""

from __future__ import annotations

import enum
import functools
import math
import numbers
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final, TypeGuard

from memorylab._validation import check_int, check_name, check_number
from memorylab.errors import InvalidSetting

Threshold = float | int
"""A compression threshold: a fraction of the window (float) or a token count (int)."""

DEFAULT_THRESHOLD: float = 0.9

THRESHOLD_CONVENTION = (
    "a threshold is either a float in (0, 1], the fraction of the context window "
    "(0.9 = compress at 90%), or an int >= 1, an absolute token count (3000 = compress at 3000 "
    "tokens)"
)


def _is_integral(value: object) -> TypeGuard[numbers.Integral]:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def validate_threshold(threshold: object) -> Threshold:
    """Return ``threshold`` as a builtin ``float`` fraction or ``int`` token count, or raise.

    >>> validate_threshold(0.75), validate_threshold(3000), validate_threshold(1.0)
    (0.75, 3000, 1.0)
    >>> validate_threshold(2.0)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    memorylab.errors.InvalidSetting: threshold=2.0 is invalid: a threshold must be in (0, 1] ...
    """
    if isinstance(threshold, bool) or not isinstance(threshold, numbers.Real):
        raise InvalidSetting(
            f"threshold={threshold!r} ({type(threshold).__name__}) is invalid: "
            f"{THRESHOLD_CONVENTION}."
        )
    if _is_integral(threshold):
        count = int(threshold)
        if count < 1:
            raise InvalidSetting(
                f"threshold={threshold!r} is invalid: a threshold must be in (0, 1] (a fraction) "
                f"or an int >= 1; {THRESHOLD_CONVENTION}."
            )
        return count
    fraction = float(threshold)
    if not (math.isfinite(fraction) and 0.0 < fraction <= 1.0):
        raise InvalidSetting(
            f"threshold={threshold!r} is invalid: a threshold must be in (0, 1] when it is a "
            f"float; {THRESHOLD_CONVENTION} (to mean an absolute count, pass an int)."
        )
    return fraction


def trigger_tokens(context_length: int, threshold: Threshold = DEFAULT_THRESHOLD) -> int:
    """The smallest token count at which compression fires for this window and threshold.

    >>> trigger_tokens(128_000, 0.9)
    115200
    >>> trigger_tokens(4096, 1.0), trigger_tokens(4096, 4096), trigger_tokens(10, 1e-9)
    (4096, 4096, 1)
    """
    length = check_int("context_length", context_length, 1)
    value = validate_threshold(threshold)
    if isinstance(value, int):
        if value > length:
            raise InvalidSetting(
                f"threshold={value} tokens is larger than context_length={length}: compression "
                "could never fire before the window overflows. Use an int <= context_length or a "
                f"fraction; {THRESHOLD_CONVENTION}."
            )
        return value
    # repr() is the shortest decimal that round-trips: 0.9 -> "0.9" -> exactly 9/10.
    return max(1, math.ceil(Fraction(repr(value)) * length))


def should_compress(
    tokens: int,
    context_length: int,
    threshold: Threshold | Trigger = DEFAULT_THRESHOLD,
    *,
    messages: int = 0,
) -> bool:
    """True when ``tokens >= threshold * context_length`` (see the module docstring); for a
    :class:`Trigger`, when any of its conditions is met (``messages``: the history's messages).

    >>> should_compress(900, 1000, 0.9), should_compress(899, 1000, 0.9)
    (True, False)
    >>> should_compress(2999, 8192, 3000), should_compress(5000, 4096, 1.0)
    (False, True)
    >>> should_compress(10, 1000, Trigger(fraction=0.9, messages=40), messages=40)
    True
    """
    if isinstance(threshold, Trigger):
        return threshold.fires(tokens, context_length, messages)
    count = check_int("tokens", tokens, 0)
    if type(context_length) is int and type(threshold) in (int, float):
        # Checked on every loop iteration: plain arguments take a cached trigger (typed, so the
        # absolute threshold 1 and the fraction 1.0 never share an entry).
        return count >= _cached_trigger(context_length, threshold)
    return count >= trigger_tokens(context_length, threshold)


@functools.lru_cache(maxsize=64, typed=True)
def _cached_trigger(context_length: int, threshold: int | float) -> int:
    return trigger_tokens(context_length, threshold)


def same_threshold(one: Threshold, other: Threshold) -> bool:
    """Whether two thresholds are the same setting: of the same kind (a token count or a
    fraction, whatever the number's type) and equal within 1e-9.

    >>> same_threshold(0.7, 0.7000000001), same_threshold(1, 1.0), same_threshold(3000, 3000.0)
    (True, False, False)
    """
    return _is_integral(one) == _is_integral(other) and abs(float(one) - float(other)) < 1e-9


def threshold_text(threshold: object) -> str:
    """A threshold as people read it: a fraction with two decimals, more when it has them
    (``0.50``, ``0.85``, ``0.875``), a token count with separators (``3,000 tokens``); ``""`` for
    none (``None``, NaN).

    >>> threshold_text(0.5), threshold_text(0.875), threshold_text(3000), threshold_text(None)
    ('0.50', '0.875', '3,000 tokens', '')
    """
    if _is_integral(threshold):
        return f"{int(threshold):,} tokens"
    number = float(threshold) if isinstance(threshold, numbers.Real) else math.nan
    if isinstance(threshold, bool) or math.isnan(number):
        return ""
    return f"{number:.2f}" if round(number, 2) == number else f"{number:g}"


def check_points(roles: Sequence[str], reply_roles: Collection[str]) -> list[bool]:
    """After which messages of a history the Agent checks compression: message ``i`` is
    followed by a check when message ``i + 1`` is a model reply (its role in ``reply_roles``),
    since the check runs right before each model call.

    >>> check_points(["User", "Bot", "Tool Executor", "Bot", "User"], {"Bot"})
    [True, False, True, False, False]
    """
    replies = [role in reply_roles for role in roles]
    return [*replies[1:], False] if replies else []


class DefaultPreload(enum.Enum):
    """The type of :data:`DEFAULT_PRELOAD` (one member, so type checkers narrow on ``is``)."""

    DEFAULT_PRELOAD = "default_preload_max_tokens"

    def __repr__(self) -> str:
        return "<default preload bound>"


DEFAULT_PRELOAD: Final = DefaultPreload.DEFAULT_PRELOAD
"""``Agent(preload_max_tokens=...)``'s default: :func:`default_preload_max_tokens` of its window
and threshold (``None`` is no bound)."""


def default_preload_max_tokens(context_length: int, threshold: Threshold | Trigger) -> int:
    """The Agent's bound of a preloaded MEMORY.md: a quarter of the window, and at most half of
    the compression trigger (of its token conditions: :meth:`Trigger.token_trigger`), so a big
    MEMORY.md cannot make compression fire on the very first loop."""
    trigger = Trigger.of(threshold).token_trigger(context_length)
    if trigger is None:  # a message count alone: the window bounds it
        return max(1, context_length // 4)
    return max(1, min(context_length // 4, trigger // 2))


COUNTS = ("estimated", "reported")
"""What a trigger's token conditions compare (:attr:`Trigger.count`): memorylab's estimate, or
the provider's last reported usage plus the estimate of what was added since."""


@dataclass(frozen=True, slots=True)
class ReportedUsage:
    """What a provider reported of the context at a model call, beside memorylab's estimate of
    the same context: ``tokens`` the provider's count (the call's input, plus its visible
    output once the reply is in the history), ``estimate`` memorylab's count of the history at
    that point (``Conversation.token_count()``).

    >>> ReportedUsage(tokens=1200, estimate=1000).now(1100)  # 100 estimated tokens added since
    1300
    >>> ReportedUsage(tokens=1200, estimate=1000).now(900) is None  # compacted since: stale
    True
    """

    tokens: int
    estimate: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "tokens", check_int("ReportedUsage.tokens", self.tokens, 0))
        object.__setattr__(self, "estimate", check_int("ReportedUsage.estimate", self.estimate, 0))

    def now(self, estimate: int) -> int | None:
        """The reported count plus the estimate of what was added since (``estimate`` is the
        history's estimate now); ``None`` when the history is smaller than it was then (a
        compaction or an edit since: the report no longer describes it)."""
        added = check_int("estimate", estimate, 0) - self.estimate
        return None if added < 0 else self.tokens + added


@dataclass(frozen=True, slots=True)
class CacheTiming:
    """Defer compactions while the prompt cache is warm (``Trigger(cache=...)``, the module
    docstring; docs/compression.md, "Cache-aware timing").

    Args:
        model: the model whose prompt cache and prices decide (the model the agent calls,
            ``"claude-sonnet-4-5"``): litellm's model map must price it (the compressor checks);
            a model whose map entry lists no cache-read price never defers.
        ttl_s: the cache's lifetime in seconds (Anthropic's default cache and OpenAI's keep a
            prefix at least 5 minutes idle: 300). A check more than ``ttl_s`` after the previous
            model call finds the cache cold and compacts as the threshold says.
        ceiling: the fraction of the window a deferral may not pass, in (0, 1] and above the
            trigger's: a check whose context plus the growth since the previous call (what the
            next call is expected to add) reaches it compacts.

    >>> CacheTiming("claude-sonnet-4-5", ttl_s=0)
    Traceback (most recent call last):
    ...
    memorylab.errors.InvalidSetting: CacheTiming.ttl_s must be a finite number > 0, not 0
    """

    model: str
    ttl_s: float = 300.0
    ceiling: float = 0.95

    def __post_init__(self) -> None:
        check_name("CacheTiming.model", self.model, what="model name (e.g. 'claude-sonnet-4-5')")
        object.__setattr__(
            self, "ttl_s", check_number("CacheTiming.ttl_s", self.ttl_s, 0.0, strict=True)
        )
        ceiling = check_number("CacheTiming.ceiling", self.ceiling, 0.0, strict=True)
        if ceiling > 1.0:
            raise InvalidSetting(
                f"CacheTiming.ceiling must be a fraction of the window in (0, 1], not "
                f"{self.ceiling!r} (0.95: defer until the context would pass 95 %)"
            )
        object.__setattr__(self, "ceiling", ceiling)

    def warm(self, now: float, last_call: float | None) -> bool:
        """Whether the cache still holds the previous call's prefix at ``now`` (seconds):
        ``last_call`` (its time, ``None``: no call in this process) at most ``ttl_s`` before."""
        return last_call is not None and 0.0 <= now - last_call <= self.ttl_s

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "ttl_s": self.ttl_s, "ceiling": self.ceiling}


@dataclass(frozen=True, slots=True)
class Trigger:
    """When to compress: any of the conditions set fires (the module docstring).

    Args:
        fraction: a fraction of the context window, in (0, 1] (``0.9``: at 90 %).
        tokens: an absolute token count >= 1 (``3000``: at 3,000 tokens).
        messages: a number of messages >= 1 in the history (``50``: at 50 messages).
        count: what the token conditions compare: ``"estimated"`` (memorylab's count of the
            history, the default) or ``"reported"`` (the provider's last reported usage plus
            the estimate of what was added since: :meth:`counted`).
        cache: defer a compaction the conditions call for while the prompt cache is warm
            (:class:`CacheTiming`); ``None``: compact when they do.

    >>> Trigger(fraction=0.8, tokens=3000).token_trigger(10_000)
    3000
    >>> Trigger(messages=0)
    Traceback (most recent call last):
    ...
    memorylab.errors.InvalidSetting: Trigger.messages must be an int >= 1, not 0
    """

    fraction: float | None = None
    tokens: int | None = None
    messages: int | None = None
    count: str = "estimated"
    cache: CacheTiming | None = None

    def __post_init__(self) -> None:
        if self.fraction is None and self.tokens is None and self.messages is None:
            raise InvalidSetting(
                "Trigger() has no condition: give fraction= (of the window, e.g. 0.9), "
                "tokens= (e.g. 3000) or messages= (e.g. 50), or several: any of them fires"
            )
        if self.count not in COUNTS:
            raise InvalidSetting(
                f"Trigger.count must be 'estimated' (memorylab's count of the history) or "
                f"'reported' (the provider's last reported usage plus the estimate since), not "
                f"{self.count!r}"
            )
        if self.fraction is not None:
            fraction = check_number("Trigger.fraction", self.fraction, 0.0, strict=True)
            if fraction > 1.0:
                raise InvalidSetting(
                    f"Trigger.fraction must be in (0, 1] (a fraction of the window), not "
                    f"{self.fraction!r}; for an absolute count use Trigger(tokens=...)"
                )
            object.__setattr__(self, "fraction", fraction)
        if self.tokens is not None:
            object.__setattr__(self, "tokens", check_int("Trigger.tokens", self.tokens, 1))
        if self.messages is not None:
            object.__setattr__(self, "messages", check_int("Trigger.messages", self.messages, 1))
        if self.cache is not None:
            if not isinstance(self.cache, CacheTiming):
                raise InvalidSetting(
                    f"Trigger.cache must be a CacheTiming (or None), not {self.cache!r}"
                )
            if self.fraction is not None and self.cache.ceiling <= self.fraction:
                raise InvalidSetting(
                    f"CacheTiming.ceiling={self.cache.ceiling!r} must be above the trigger's "
                    f"fraction={self.fraction!r}: a deferral waits between the two"
                )

    def __repr__(self) -> str:
        return f"Trigger({', '.join(f'{k}={v!r}' for k, v in self.to_dict().items())})"

    @classmethod
    def of(cls, threshold: Threshold | Trigger) -> Trigger:
        """``threshold`` as a trigger: a trigger as it is, a fraction or a token count (the
        threshold convention, :func:`validate_threshold`) as its one condition."""
        if isinstance(threshold, Trigger):
            return threshold
        value = validate_threshold(threshold)
        return cls(tokens=value) if isinstance(value, int) else cls(fraction=value)

    @property
    def threshold(self) -> Threshold | None:
        """The threshold a record names (``threshold`` in ``compactions.jsonl``): the fraction,
        else the token count; ``None`` for a message count alone."""
        return self.fraction if self.fraction is not None else self.tokens

    @property
    def plain(self) -> bool:
        """Whether this is one threshold (one token condition, no message count, counting the
        estimate): what ``threshold=`` has always meant."""
        return (
            self.messages is None
            and (self.fraction is None) != (self.tokens is None)
            and self.count == "estimated"
            and self.cache is None
        )

    @property
    def reported(self) -> bool:
        """Whether its token conditions count the provider's reported usage."""
        return self.count == "reported"

    def counted(self, estimate: int, reported: ReportedUsage | None = None) -> int:
        """The tokens its token conditions compare: ``estimate`` (the history's tokens as
        memorylab counts them), or with ``count="reported"`` the ``reported`` usage plus the
        estimate added since (:meth:`ReportedUsage.now`) when there is a report that still
        describes the history."""
        if self.count == "reported" and reported is not None:
            now = reported.now(estimate)
            if now is not None:
                return now
        return check_int("estimate", estimate, 0)

    def token_trigger(self, context_length: int) -> int | None:
        """The smallest token count that fires for this window (:func:`trigger_tokens` of each
        token condition); ``None`` when only ``messages`` is set."""
        found = [
            trigger_tokens(context_length, value)
            for value in (self.fraction, self.tokens)
            if value is not None
        ]
        return min(found) if found else None

    def ceiling_tokens(self, context_length: int) -> int:
        """The context at which a :class:`CacheTiming` deferral ends in this window (its
        ``ceiling``); an :class:`~memorylab.errors.InvalidSetting` when the trigger's token
        count is not below it, or without ``cache``."""
        if self.cache is None:
            raise InvalidSetting(
                "this trigger defers nothing: give Trigger(cache=CacheTiming(...))"
            )
        ceiling = trigger_tokens(context_length, self.cache.ceiling)
        fires = self.token_trigger(context_length)
        if fires is not None and fires >= ceiling:
            raise InvalidSetting(
                f"CacheTiming.ceiling={self.cache.ceiling!r} of context_length={context_length:,} "
                f"is {ceiling:,} tokens, not above the trigger's {fires:,}: raise the ceiling or "
                "lower the threshold"
            )
        return ceiling

    def fires(self, tokens: int, context_length: int, messages: int = 0) -> bool:
        """Whether ``tokens`` in a window of ``context_length``, or ``messages`` in the history,
        meet any condition."""
        count = check_int("tokens", tokens, 0)
        if self.messages is not None and check_int("messages", messages, 0) >= self.messages:
            return True
        trigger = self.token_trigger(context_length)
        return trigger is not None and count >= trigger

    def to_dict(self) -> dict[str, Any]:
        """The conditions set, for a record (``extra["trigger"]`` in ``compactions.jsonl``);
        ``count`` only when it is ``"reported"`` (records of the estimate read as before),
        ``cache`` only when set."""
        return {
            key: value
            for key, value in (
                ("fraction", self.fraction),
                ("tokens", self.tokens),
                ("messages", self.messages),
                ("count", None if self.count == "estimated" else self.count),
                ("cache", None if self.cache is None else self.cache.to_dict()),
            )
            if value is not None
        }

    @classmethod
    def from_dict(cls, data: Any) -> Trigger:
        """The trigger :meth:`to_dict` wrote."""
        known = {"fraction", "tokens", "messages", "count", "cache"}
        cache = data.get("cache") if isinstance(data, dict) else None
        if (
            not isinstance(data, dict)
            or set(data) - known
            or not (
                cache is None
                or (isinstance(cache, dict) and set(cache) <= {"model", "ttl_s", "ceiling"})
            )
        ):
            raise InvalidSetting(
                f"not a trigger record: {data!r}; expected fraction, tokens and/or messages "
                "(and count, cache)"
            )
        return cls(**{**data, "cache": None if cache is None else CacheTiming(**cache)})

    def text(self) -> str:
        """The conditions as people read them: ``0.90 of the window or 50 messages``
        (``..., counting the reported usage`` for ``count="reported"``)."""
        parts = []
        if self.fraction is not None:
            parts.append(f"{threshold_text(self.fraction)} of the window")
        if self.tokens is not None:
            parts.append(threshold_text(self.tokens))
        if self.messages is not None:
            parts.append(f"{self.messages:,} messages")
        text = " or ".join(parts)
        if self.reported:
            text += ", counting the reported usage"
        if self.cache is not None:
            text += (
                f", deferred while {self.cache.model}'s prompt cache is warm ({self.cache.ttl_s:g}"
                f" s) up to {threshold_text(self.cache.ceiling)} of the window"
            )
        return text


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff after failed summaries: ``min(cap, base * factor ** (failures - 1))``.

    ``max_attempts`` is the number of failures after which the compressor gives up.

    >>> backoff = Backoff()
    >>> [backoff.delay(n) for n in range(0, 9)]
    [0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 64.0]
    >>> backoff.exhausted(4), backoff.exhausted(5)
    (False, True)
    >>> Backoff(base=0.5, factor=3, cap=10).delay(4)
    10.0
    """

    base: float = 1.0
    factor: float = 2.0
    cap: float = 64.0
    max_attempts: int = 5

    def __post_init__(self) -> None:
        base = check_number("Backoff.base", self.base, 0.0, strict=True)
        factor = check_number("Backoff.factor", self.factor, 1.0, strict=False)
        cap = check_number("Backoff.cap", self.cap, base, strict=False)
        attempts = check_int("Backoff.max_attempts", self.max_attempts, 1)
        object.__setattr__(self, "base", base)
        object.__setattr__(self, "factor", factor)
        object.__setattr__(self, "cap", cap)
        object.__setattr__(self, "max_attempts", attempts)

    def delay(self, failures: int) -> float:
        """How long to wait after ``failures`` consecutive failures (0 failures: no wait)."""
        count = check_int("failures", failures, 0)
        if count == 0:
            return 0.0
        try:
            value = self.base * self.factor ** (count - 1)
        except OverflowError:
            return self.cap
        return min(self.cap, value)

    def exhausted(self, failures: int) -> bool:
        """True once ``failures`` reaches ``max_attempts``: stop retrying."""
        return check_int("failures", failures, 0) >= self.max_attempts
