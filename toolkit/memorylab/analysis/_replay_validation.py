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
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memorylab.analysis._foreign import source_file
from memorylab.analysis._record import AgentRecord
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
    "records neither (only each compaction's preTokens, and whether it was auto or manual)",
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


@dataclass(frozen=True, slots=True)
class _Run:
    """A foreign run laid flat again: its messages (summaries out) and its compactions."""

    roles: list[str]
    contents: list[str]
    compactions: list[_Recorded]
    summaries: list[str | None]
    """Each compaction's summary message as the next segment opens with it (``None``: none)."""


def _flat_run(record: AgentRecord, rule: _Rule | None) -> _Run:
    """The record's messages in order, each once, the summaries left out, and where each
    compaction fired among them (the segments :func:`~._foreign.run_record` laid out)."""
    roles: list[str] = []
    contents: list[str] = []
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
            )
        )
    summaries = [opened.get(number) for number in range(1, len(compactions) + 1)]
    return _Run(roles, contents, compactions, summaries)


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


def _check_record(record: AgentRecord) -> dict[str, Any]:
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
    trigger = _trigger_tokens(record)
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
                "missing": "the trigger: the file records no threshold (or no context window "
                "for a fraction)"}  # fmt: skip
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


def replay_validation(source: Source | Records) -> pd.DataFrame:
    """One row per run of ``source`` (a file or folder another framework wrote, or records):
    does a replay at its recorded settings fire where its recorded compactions fired?

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

    rows = [_check_record(record) for record in load_records(source)]
    return pd.DataFrame(rows, columns=list(COLUMNS))
