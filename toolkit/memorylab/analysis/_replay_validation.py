"""Does a replay at a run's recorded settings fire where the run's own compactions fired?

:func:`replay_validation` answers it for another framework's run (:mod:`._foreign`), one row per
run: the compactions the file recorded, those a replay of its messages at the recorded settings
makes, where each fired, and a verdict (``reproduced``, ``not reproduced``, ``cannot check``) with
what the file does not record that the replay would need, in words.

The replay is the framework's trigger, not memorylab's: a framework fires on its own count of its
own context, so the replay counts the recorded messages with the counter the framework used
(:data:`_RULES`: deepagents' ``count_tokens_approximately``, 4 characters a token and 3 a
message, each message read again from the thread; inspect_ai's count of the context's text, the
one of its known counters that gives every compaction's recorded ``tokens_after`` from the
messages that compaction left) and checks where the framework checks (before each model call,
each assistant message). What the files never keep,
the system prompt and the tool schemas every request carries, is MEASURED at the first recorded
compaction, never guessed:

* where the format records the count that fired it (inspect_ai's ``tokens_before``), as that
  count less the recorded messages' count at that check;
* where it records only the trigger (deepagents' fraction of the window), as the least static
  context that makes the trigger fire at that check and not at the one before (the interval is in
  the row's ``static_tokens``).

The replay then runs with that static context from the start, so the first compaction is
reproduced by construction (its row says so) and every later one is a check. After each
compaction the context is what the run recorded of that compaction: its ``tokens_after`` where
recorded (inspect_ai), else the static context, the message that carried the summary and the
messages it kept (deepagents). Where the replay fires elsewhere than the run did, the rest of the
replay is still measured, with the sizes of the run's compaction of the same number.

Settings a user gives (``context_length=``, ``threshold=``) stand for those a file does not
record (Claude Code's window and auto-compact threshold; a deepagents checkpointer's trigger):
with them the row is checked, and ``how`` says they were given, not recorded. A Claude Code
session is replayed on its recorded usage, no tokenizer guessed: each reply's input, cache read,
cache write and output tokens are the context the next request carries (what Claude Code's
auto-compact compares, and what its ``preTokens`` record), and the trigger fires after the first
reply of a stretch to reach ``threshold`` times the window; a manual compaction (``/compact``)
is shown, not checked (no trigger fired it).
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memorylab.analysis._foreign import source_file
from memorylab.analysis._record import AgentRecord
from memorylab.errors import InvalidSetting
from memorylab.memory._records import SUMMARY_PREFIX

if TYPE_CHECKING:
    import pandas as pd

    from memorylab.analysis._record import Records
    from memorylab.analysis._sources import Source

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
CANNOT_CHECK = "cannot check"

COLUMNS = (
    "format",
    "agent",
    "recorded",
    "replayed",
    "verdict",
    "recorded_at",
    "replayed_at",
    "recorded_tokens_before",
    "replayed_tokens_before",
    "trigger_tokens",
    "static_tokens",
    "reproduced_with",
    "counter",
    "missing",
    "how",
)
"""The columns of :func:`replay_validation`'s frame, in order."""


@dataclass(frozen=True, slots=True)
class _Rule:
    """How a framework decides to compact: its counter (``counts``: the tokens of one message,
    role and content, as a float the comparison rounds up) and its comparison (``above``: the
    count must exceed the trigger, else reach it)."""

    counter: str
    counts: Callable[[str, str], float]
    above: bool
    exact: Callable[[AgentRecord, _Run], tuple[Sequence[float], str] | str] | None = None
    """Each message's count as the framework made it and the counter's words (read again from
    the file, or chosen by what the record says the framework counted), where ``counts`` of the
    loader's text is not that count; a text says what is missing to make it."""

    def fires(self, count: float, trigger: int) -> bool:
        total = math.ceil(count)
        return total > trigger if self.above else total >= trigger


def _langchain_approximate(role: str, content: str) -> float:
    # langchain_core's count_tokens_approximately: ceil((content + role) / 4) + 3 a message
    return math.ceil((len(content) + len(role)) / 4) + 3


def _deepagents_counts(record: AgentRecord, run: _Run) -> tuple[Sequence[float], str] | str:
    from memorylab.analysis._deepagents_loader import approximate_tokens

    counts = approximate_tokens(
        Path(source_file(str(record.segments[-1].path))), thread_id=record.agent
    )
    if len(counts) != len(run.roles):
        return (f"the file as it was read: it now holds {len(counts)} messages, the record "
                f"{len(run.roles)} (read it again)")  # fmt: skip
    return counts, _RULES["deepagents"].counter


_TOOL_CALL_LINE = re.compile(r"^\[tool call (\S+) (.*)\]$", re.M)


def _inspect_text(role: str, content: str) -> str:
    """The text inspect_ai counts of a message: its content, each tool call as its function
    and its arguments' JSON on lines of their own (the loaders render it
    :func:`~._foreign.tool_call_text`'s way)."""
    return _TOOL_CALL_LINE.sub(r"\1\n\2", content) if role == "assistant" else content


@functools.cache
def _o200k() -> Callable[[str], int]:
    from memorylab.compress._tokens import get_token_counter

    return get_token_counter("gpt-4o").count  # o200k_base, exact


_INSPECT_COUNTERS: tuple[tuple[str, Callable[[str], float], Callable[[str], int]], ...] = (
    ("4 characters a token (a model's count_text_tokens set so, as the sample's generator did)",
     lambda text: (len(text) + 1) / 4, lambda text: math.ceil(len(text) / 4)),
    ("o200k_base tokens plus 10 % (inspect_ai's default count_text_tokens)",
     lambda text: _o200k()(text) * 1.1, lambda text: max(1, int(_o200k()(text) * 1.1))),
)  # fmt: skip
"""inspect_ai's counts, each as (words, one message's share, a joined text's count)."""


def _inspect_counts(record: AgentRecord, run: _Run) -> tuple[Sequence[float], str] | str:
    """The count inspect_ai made, chosen by the context each compaction left: its recorded
    ``tokens_after`` is the count of the messages it kept at the head (the system messages and
    the sample's input, to the first user message) and its summary message, all in the file."""
    head = next((i + 1 for i, role in enumerate(run.roles) if role == "user"), 0)
    texts = [_inspect_text(r, c) for r, c in zip(run.roles, run.contents, strict=True)]
    left = [
        (c.tokens_after, "\n".join([*texts[:head], summary]))
        for c, summary in zip(run.compactions, run.summaries, strict=True)
        if c.tokens_after is not None and summary is not None
    ]
    if not left:
        return ("the counter inspect_ai used: it is told by a compaction's tokens_after and "
                "summary, which no compaction records")  # fmt: skip
    misses = []
    for words, share, joined in _INSPECT_COUNTERS:
        off = max(abs(joined(text) - after) / after for after, text in left)
        if off == 0:
            return ([share(text) for text in texts],
                    f"{words}: it gives the {len(left)} recorded tokens_after exactly")  # fmt: skip
        misses.append((off, words, share))
    off, words, share = min(misses, key=lambda miss: miss[0])
    if off <= _COUNTER_TOLERANCE:
        near = f"{words}: it gives the {len(left)} recorded tokens_after within {off:.1%}"
        return [share(text) for text in texts], near
    return (f"the counter inspect_ai used (its model's own count_text_tokens): none of "
            f"{len(_INSPECT_COUNTERS)} known counts gives the recorded tokens_after (closest: "
            f"{off:.0%} off)")  # fmt: skip


_COUNTER_TOLERANCE = 0.02
"""How far from every recorded tokens_after a counter may be and still be taken for the one the
framework used (a provider's own count differs by more)."""


def _inspect_estimate(role: str, content: str) -> float:
    return (len(_inspect_text(role, content)) + 1) / 4


_RULES: dict[str, _Rule] = {
    "deepagents": _Rule(
        "langchain count_tokens_approximately (4 characters a token, 3 a message), as "
        "deepagents' SummarizationMiddleware counts",
        _langchain_approximate,
        above=False,
        exact=_deepagents_counts,
    ),
    "inspect-ai": _Rule(
        "inspect_ai's count of the context's text",
        _inspect_estimate,
        above=True,
        exact=_inspect_counts,
    ),
}
"""The frameworks whose trigger the replay can follow, by loader name."""

_CANNOT = {
    "openai-agents": "the trigger and the compactions before the last: an OpenAI Agents SDK "
    "session records no window or threshold (the compaction session decides in code, "
    "should_trigger_compaction), and each compaction replaces the items, and the compaction "
    "item, before it, so the file keeps only what the last ones left",
    "claude-code": "the context window and the auto-compact threshold: a Claude Code session "
    "records neither (only each compaction's preTokens, and whether it was auto or manual); "
    "give context_length= and threshold= (report: --context-length, --threshold) to check it",
    "memorylab": "another framework's run: this check follows another framework's trigger; "
    "memorylab's own files are replayed by replay() at their recorded settings "
    "(docs/analysis.md)",
}
"""What each other format lacks for the check, in words."""


@dataclass(frozen=True, slots=True)
class _Recorded:
    """One recorded compaction: before message ``at`` of the run's messages, keeping ``kept``."""

    at: int
    kept: int
    tokens_before: int | None
    tokens_after: int | None
    summary_tokens: float | None
    manual: bool = False
    """Fired by the user (Claude Code's ``/compact``), not by a trigger."""


@dataclass(frozen=True, slots=True)
class _Run:
    """A foreign run laid flat again: its messages (summaries out) and its compactions."""

    roles: list[str]
    contents: list[str]
    times: list[datetime]
    compactions: list[_Recorded]
    summaries: list[str | None]
    """Each compaction's summary message as the next segment opens with it (``None``: none)."""


def _flat_run(record: AgentRecord, rule: _Rule | None) -> _Run:
    """The record's messages in order, each once, the summaries left out, and where each
    compaction fired among them (the segments :func:`~._foreign.run_record` laid out)."""
    roles: list[str] = []
    contents: list[str] = []
    times: list[datetime] = []
    ats: list[int] = []
    opened: dict[int, str] = {}
    for number, segment in enumerate(record.segments):
        blocks = segment.parsed.blocks
        for position in segment.positions():
            role, content = blocks.roles[position], blocks.contents[position]
            if number and position == 0 and role == "system" and content.startswith(SUMMARY_PREFIX):
                opened[number] = content.removeprefix(SUMMARY_PREFIX).removeprefix(" ")
                continue  # the summary that opens the segment after a compaction
            roles.append(role)
            contents.append(content)
            times.append(blocks.timestamps[position])
        if segment.kind == "archive":
            ats.append(len(roles))
    compactions: list[_Recorded] = []
    for at, entry in zip(ats, record.compactions, strict=False):
        given = entry.get("extra")
        extra: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
        chars = extra.get("summary_message_chars")
        # the message that carried the summary counts as a user message of that many characters
        summary_tokens = (
            rule.counts("user", "x" * chars)
            if rule is not None and isinstance(chars, int)
            else None
        )
        compactions.append(
            _Recorded(
                at=at,
                kept=int(extra.get("kept", 0) or 0),
                tokens_before=_count(entry.get("tokens_before")),
                tokens_after=_count(entry.get("tokens_after")),
                summary_tokens=summary_tokens,
                manual=extra.get("fired_by") == "manual",
            )
        )
    summaries = [opened.get(number) for number in range(1, len(compactions) + 1)]
    return _Run(roles, contents, times, compactions, summaries)


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _trigger_tokens(record: AgentRecord) -> int | None:
    """The trigger in tokens as the record's compactions recorded it: a count, or a fraction
    of the context window (the framework's rounding down, ``int(window * fraction)``)."""
    for entry in record.compactions:
        threshold = entry.get("threshold")
        window = _count(entry.get("context_length"))
        if isinstance(threshold, int) and not isinstance(threshold, bool):
            return threshold
        if isinstance(threshold, float) and window is not None:
            return int(window * threshold)
    return None


def _row(record: AgentRecord, **values: Any) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(COLUMNS)
    row.update(format=record.format, agent=record.agent, recorded=len(record.compactions))
    row.update(recorded_at=[], replayed_at=[], recorded_tokens_before=[], replayed_tokens_before=[])
    row.update(values)
    return row


@dataclass(frozen=True, slots=True)
class _Given:
    """The settings a user gives for the runs (``None``: not given)."""

    context_length: int | None = None
    threshold: float | int | None = None

    def __bool__(self) -> bool:
        return self.context_length is not None or self.threshold is not None

    def trigger(self, record: AgentRecord) -> tuple[int | None, str]:
        """The trigger in tokens these settings make, with what the record recorded filling
        in the other, and their words (``how``); ``None``: they make none (the words say what
        is missing)."""
        recorded = next((e for e in record.compactions if e.get("threshold") is not None), {})
        window = self.context_length
        if window is None:
            window = _count(recorded.get("context_length"))
        threshold = self.threshold if self.threshold is not None else recorded.get("threshold")
        words = ", ".join(
            f"{name}={value:,}" if isinstance(value, int) else f"{name}={value}"
            for name, value in (("context_length", self.context_length),
                                ("threshold", self.threshold))
            if value is not None
        )  # fmt: skip
        given = f"settings given, not recorded: {words}"
        if isinstance(threshold, int) and not isinstance(threshold, bool):
            return threshold, f"{given} (trigger {threshold:,} tokens)"
        if isinstance(threshold, float) and window is not None:
            trigger = int(window * threshold)
            return trigger, f"{given} (trigger {trigger:,} tokens)"
        if isinstance(threshold, float):
            return None, "the context window: give context_length= with a threshold fraction"
        return None, "the threshold: give threshold= (a fraction of the window, or tokens)"


def _checked_given(given: _Given) -> _Given:
    """``given``, refused in one line where a value cannot be a window or a threshold."""
    window, threshold = given.context_length, given.threshold
    if window is not None and (isinstance(window, bool) or not isinstance(window, int)
                               or window <= 0):  # fmt: skip
        raise InvalidSetting(
            f"replay_validation: context_length={window!r}; give the window in tokens, a "
            "whole number above 0 (e.g. 200000)"
        )
    if threshold is not None and (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not (0 < threshold <= 1 if isinstance(threshold, float) else threshold > 0)
    ):
        raise InvalidSetting(
            f"replay_validation: threshold={threshold!r}; give a fraction of the window in "
            "(0, 1] (e.g. 0.8) or a count of tokens above 0 (e.g. 160000)"
        )
    return given


def _check_record(record: AgentRecord, given: _Given = _Given()) -> dict[str, Any]:
    if record.format == "claude-code" and given:
        return _check_claude_code(record, given)
    row = _check_rule(record, given)
    if given and record.format in _RULES and row["verdict"] != CANNOT_CHECK:
        _, words = given.trigger(record)
        row["how"] = f"{words}; {row['how']}"
    return row


def _reply_counts(record: AgentRecord, run: _Run) -> list[int | None]:
    """Each message's recorded context, where it is a reply whose usage the file records:
    the call's input (fresh, cache read and cache write tokens) and output tokens. A call is
    its reply's by time (a call's time is its reply's), in order."""
    counts: list[int | None] = [None] * len(run.roles)
    calls = [c for c in record.calls if c.input_tokens is not None]
    j = 0
    for position, role in enumerate(run.roles):
        if role != "assistant":
            continue
        when = run.times[position]
        while j < len(calls) and calls[j].time < when:
            j += 1
        if j < len(calls) and calls[j].time == when:
            call = calls[j]
            counts[position] = (call.input_tokens or 0) + (call.output_tokens or 0)
            j += 1
    return counts


_CLAUDE_COUNTER = (
    "each reply's recorded usage: input + cache read + cache write + output tokens (the context "
    "the next request carries, as Claude Code's auto-compact counts it)"
)


def _check_claude_code(record: AgentRecord, given: _Given) -> dict[str, Any]:
    """A Claude Code session replayed on its recorded usage at the settings given (the module
    docstring)."""
    run = _flat_run(record, None)
    recorded = run.compactions
    trigger, words = given.trigger(record)
    base = _row(record, counter=_CLAUDE_COUNTER, trigger_tokens=trigger,
                recorded_at=[c.at for c in recorded],
                recorded_tokens_before=[c.tokens_before for c in recorded])  # fmt: skip
    if trigger is None:
        return {**base, "verdict": CANNOT_CHECK, "missing": words}
    counts = _reply_counts(record, run)
    replies = [p for p, count in enumerate(counts) if count is not None]
    if not replies:
        return {**base, "verdict": CANNOT_CHECK,
                "missing": "the usage of each reply: this session records none"}  # fmt: skip
    # the reply each compaction came after: the last whose usage is recorded before it
    after = {c.at: max((p for p in replies if p < c.at), default=None) for c in recorded}
    fires: list[int] = []
    before: int | None = None  # the count of the reply before, in the same stretch
    for number, position in enumerate(replies):
        previous = replies[number - 1] if number else -1
        if any(previous < c.at <= position for c in recorded):
            before = None  # compacted in between: a new stretch
        count = counts[position]
        assert count is not None
        if count >= trigger and (before is None or before < trigger):
            fires.append(position)
        before = count
    manual = {after[c.at] for c in recorded if c.manual}
    auto = [c for c in recorded if not c.manual]
    wanted = {after[c.at] for c in auto}
    fired = [p for p in fires if p not in manual]
    by_reply = {after[c.at]: c.at for c in recorded}
    reproduced = None not in wanted and set(fired) == wanted and len(fired) == len(wanted)
    how = (f"{words}; the replay fires after the first reply of a stretch whose count reaches "
           f"the trigger, {len(auto)} automatic compaction(s) are the check")  # fmt: skip
    off = [abs(counts[p] or 0) - c.tokens_before for p in fires for c in recorded
           if by_reply.get(p) == c.at and c.tokens_before is not None]  # fmt: skip
    if any(off):
        how += (f"; the counts where it fired differ from the recorded preTokens by up to "
                f"{max(map(abs, off)):,} tokens")  # fmt: skip
    if len(auto) != len(recorded):
        how += (f"; {len(recorded) - len(auto)} manual one(s) (/compact) shown, not checked: no "
                "trigger fired them")  # fmt: skip
    return {
        **base,
        "replayed": len(fires),
        "verdict": REPRODUCED if reproduced else NOT_REPRODUCED,
        "replayed_at": [by_reply.get(p, p + 1) for p in fires],
        "replayed_tokens_before": [counts[p] for p in fires],
        "missing": "",
        "how": how,
    }


def _check_rule(record: AgentRecord, given: _Given) -> dict[str, Any]:
    rule = _RULES.get(record.format)
    if rule is None:
        missing = _CANNOT.get(
            record.format, f"the {record.format} format's trigger rule (no rule is known for it)"
        )
        if record.format == "memorylab":
            return _row(record, verdict=CANNOT_CHECK, missing=missing)
        found = _flat_run(record, None).compactions  # what was recorded, shown all the same
        return _row(record, verdict=CANNOT_CHECK, missing=missing,
                    recorded_at=[c.at for c in found],
                    recorded_tokens_before=[c.tokens_before for c in found])  # fmt: skip
    run = _flat_run(record, rule)
    recorded = run.compactions
    trigger = given.trigger(record)[0] if given else _trigger_tokens(record)
    base = _row(
        record,
        counter=rule.counter,
        trigger_tokens=trigger,
        recorded_at=[c.at for c in recorded],
        recorded_tokens_before=[c.tokens_before for c in recorded],
    )
    if not recorded:
        return {**base, "verdict": CANNOT_CHECK,
                "missing": "a recorded compaction: the static context (system prompt and tool "
                "schemas, which the file does not keep) is measured at the first one"}  # fmt: skip
    if trigger is None:
        return {**base, "verdict": CANNOT_CHECK,
                "missing": given.trigger(record)[1] if given else "the trigger: the file "
                "records no threshold (or no context window for a fraction); give "
                "context_length= and threshold="}  # fmt: skip
    tokens: Sequence[float] = [
        rule.counts(role, text) for role, text in zip(run.roles, run.contents, strict=True)
    ]
    if rule.exact is not None:
        made = rule.exact(record, run)
        if isinstance(made, str):
            return {**base, "verdict": CANNOT_CHECK, "missing": made}
        tokens, base["counter"] = made
    checks = [i for i, role in enumerate(run.roles) if role == "assistant"]
    measured = _static_range(recorded[0], tokens, checks, trigger, rule)
    if measured is None:
        return {**base, "verdict": CANNOT_CHECK,
                "missing": "a static context consistent with the first compaction: no count of "
                "its messages fires the trigger there and not at the check before (the counter "
                "differs from the framework's)"}  # fmt: skip
    low = measured[0]
    after_missing = [
        n + 1 for n, c in enumerate(recorded) if c.tokens_after is None and c.summary_tokens is None
    ]
    if after_missing:
        return {**base, "verdict": CANNOT_CHECK, "static_tokens": measured,
                "missing": "the context after compaction(s) "
                f"{', '.join(map(str, after_missing))}: neither its tokens_after nor the message "
                "that carried its summary is recorded"}  # fmt: skip
    sums = [0.0, *itertools.accumulate(tokens)]
    span = _reproducing(sums, checks, recorded, trigger, rule, measured)
    fits = range(span[0], span[1] + 1) if span is not None else range(0)
    shown = fits[len(fits) // 2] if fits else low
    fired = _replay(sums, checks, recorded, shown, trigger, rule)
    return {
        **base,
        "replayed": len(fired),
        "verdict": REPRODUCED if fits else NOT_REPRODUCED,
        "replayed_at": [at for at, _ in fired],
        "replayed_tokens_before": [math.ceil(count) for _, count in fired],
        "static_tokens": measured,
        "reproduced_with": (fits[0], fits[-1]) if fits else None,
        "missing": "",
        "how": _how(recorded, measured, fits, shown, exact=recorded[0].tokens_before is not None),
    }


def _how(
    recorded: Sequence[_Recorded],
    measured: tuple[int, int],
    fits: Sequence[int],
    shown: int,
    *,
    exact: bool,
) -> str:
    """What the replay measured and what it checked, in words."""
    low, high = measured
    if exact:
        source = (f"the static context (system prompt, tool schemas) measured at the first "
                  f"compaction: its recorded tokens_before less its messages, {low:,} tokens"
                  + (" (below zero: the loader's text of the tool calls counts more than the "
                     "framework's did)" if low < 0 else ""))  # fmt: skip
    else:
        source = (f"the static context (system prompt, tool schemas) measured at the first "
                  f"compaction: {low:,}-{high:,} tokens fire the trigger there and not at the "
                  "check before")  # fmt: skip
    if len(recorded) == 1:
        return f"{source}; one compaction checks nothing more"
    checked = f"compactions 2-{len(recorded)} are the check"
    if not fits:
        return (f"{source}; {checked}: with none of those values does the replay fire where "
                f"the run did (shown: {shown:,})")  # fmt: skip
    if fits[0] == fits[-1] == low == high:
        return f"{source}; {checked}"
    return (f"{source}; {checked}: {fits[0]:,}-{fits[-1]:,} reproduce them all "
            f"({len(fits)} values; shown: {shown:,})")  # fmt: skip


def _static_range(
    first: _Recorded, tokens: Sequence[float], checks: Sequence[int], trigger: int, rule: _Rule
) -> tuple[int, int] | None:
    """The static contexts consistent with the first compaction: the one value its recorded
    ``tokens_before`` gives, else those that fire the trigger at its check and not at the check
    before (``None``: none does)."""
    counted = math.ceil(sum(tokens[: first.at]))
    if first.tokens_before is not None:
        return first.tokens_before - counted, first.tokens_before - counted
    low = max(0, trigger - counted + (1 if rule.above else 0))
    earlier = [i for i in checks if i < first.at]
    high = trigger  # fired at the first check: any static up to the trigger itself
    if earlier:
        high = trigger - math.ceil(sum(tokens[: earlier[-1]])) - (0 if rule.above else 1)
    return (low, high) if low <= high else None


def _reproducing(
    sums: Sequence[float],
    checks: Sequence[int],
    recorded: Sequence[_Recorded],
    trigger: int,
    rule: _Rule,
    measured: tuple[int, int],
) -> tuple[int, int] | None:
    """The static contexts with which :func:`_replay` fires exactly where the run did (an
    interval, ``None``: none). Along the recorded course each check's count is the static
    context (where the context after a compaction holds it) plus what the record gives, so each
    check bounds it from one side: below where the run fired, above where it did not."""
    low, high = measured
    fired_at = {c.at: n for n, c in enumerate(recorded)}
    if any(c.at not in set(checks) for c in recorded):
        return None  # a compaction where the framework does not check: no replay fires there
    static_part, rest, start = 1, 0.0, 0  # the count is static_part * static + rest + messages
    for at in checks:
        dynamic = math.ceil(rest + sums[at] - sums[start])
        fires = at in fired_at
        # ceil(static + x) = static + ceil(x) for a whole static: the bound is on static alone
        least = trigger - dynamic + (1 if rule.above else 0)  # the least static that fires here
        if static_part:
            if fires:
                low = max(low, least)
            else:
                high = min(high, least - 1)
        elif rule.fires(dynamic, trigger) != fires:
            return None
        if low > high:
            return None
        if fires:
            made = recorded[fired_at[at]]
            if made.tokens_after is not None:
                static_part, rest = 0, float(made.tokens_after)
            else:
                kept = min(made.kept, at)
                static_part = 1
                rest = (made.summary_tokens or 0.0) + sums[at] - sums[at - kept]
            start = at
    return low, high


def _replay(
    sums: Sequence[float],
    checks: Sequence[int],
    recorded: Sequence[_Recorded],
    static: int,
    trigger: int,
    rule: _Rule,
) -> list[tuple[int, float]]:
    """Where the framework's trigger fires over the run's messages (``sums``: their counts'
    prefix sums), at its checks, each compaction leaving the context the run's compaction of
    that number left."""
    fired: list[tuple[int, float]] = []
    base = float(static)
    start = 0
    for at in checks:
        count = base + sums[at] - sums[start]
        if not rule.fires(count, trigger):
            continue
        fired.append((at, count))
        made = recorded[min(len(fired), len(recorded)) - 1]
        if made.tokens_after is not None:
            base = float(made.tokens_after)
        else:
            kept = min(made.kept, at)
            base = static + (made.summary_tokens or 0.0) + sums[at] - sums[at - kept]
        start = at
    return fired


def replay_validation(
    source: Source | Records,
    *,
    context_length: int | None = None,
    threshold: float | int | None = None,
) -> pd.DataFrame:
    """One row per run of ``source`` (a file or folder another framework wrote, or records):
    does a replay at its recorded settings fire where its recorded compactions fired?

    ``context_length`` (tokens) and ``threshold`` (a fraction of the window, or a count of
    tokens): settings for runs whose file records none (a Claude Code session; a deepagents
    checkpointer without its trigger), used in place of the recorded ones; ``how`` says they
    were given. Without them such a run's row says it cannot check, and what is missing.

    Columns (:data:`COLUMNS`): ``format``, ``agent``; ``recorded`` and ``replayed``, the
    compactions; ``verdict``: ``reproduced`` (every compaction at the message the run's fired
    at), ``not reproduced``, or ``cannot check``; ``recorded_at``/``replayed_at``: before which
    of the run's messages (summaries left out, from 0) each fired; ``recorded_tokens_before``
    (``None`` where not recorded) and ``replayed_tokens_before`` (the replay's count that fired
    it); ``trigger_tokens``; ``static_tokens``, the system prompt and tool schemas measured at
    the first compaction (an interval where only the trigger is recorded); ``counter``, the
    framework's count the replay used; ``missing``, what the file does not record that the check
    needs (empty where nothing is); ``how``, what the replay measured and what it checked.
    See the module docstring for the rules. Nothing is written.
    """
    import pandas as pd

    from memorylab.analysis._loaders import load_records

    given = _checked_given(_Given(context_length, threshold))
    rows = [_check_record(record, given) for record in load_records(source)]
    return pd.DataFrame(rows, columns=list(COLUMNS))
