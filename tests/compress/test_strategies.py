"""Compaction strategies as pure decisions: each plan on hand-made histories, the registry and
the records that rebuild a strategy, the triggers, and the errors of bad settings."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memorylab.compress import (
    ClearToolResults,
    CompactionPlan,
    KeepRecent,
    Strategy,
    SummaryStrategy,
    Trigger,
    Trim,
    get_strategy,
    register_strategy,
    should_compress,
    strategy_from_record,
    strategy_names,
)
from memorylab.compress._policy import default_preload_max_tokens
from memorylab.compress._strategy import NOT_ARCHIVED, PLACEHOLDER, render_placeholder
from memorylab.errors import InvalidSetting
from memorylab.memory._records import CompactionEvent, is_tool_result

ARCHIVE = "history_2026-05-01_10-00-00Z.md"
BIG = "row " * 60  # a tool result longer than its placeholder


def _msg(role: str, content: str, **fields: Any) -> dict[str, Any]:
    return {"role": role, "content": content, **fields}


def _agent_history() -> list[dict[str, Any]]:
    """As the Agent records a run: a task, replies calling tools (tool_calls) and each call's
    result (tool_call_id), a final answer."""
    out = [_msg("User", "task: load the rows")]
    for turn in range(4):
        calls = [{"id": f"c{turn}a"}, {"id": f"c{turn}b"}]
        out.append(_msg("Agent", f"Calling tools: load({turn})", tool_calls=calls))
        out.append(_msg("Tool Executor", f"{turn}a " + BIG, tool_call_id=f"c{turn}a"))
        out.append(_msg("Tool Executor", f"{turn}b " + BIG, tool_call_id=f"c{turn}b"))
    out.append(_msg("Agent", "All rows loaded."))
    return out


# -- the plans -----------------------------------------------------------------------------------


def test_summary_summarizes_everything_and_keeps_nothing() -> None:
    history = _agent_history()
    plan = SummaryStrategy().plan(history)
    assert plan.summarize == tuple(range(len(history))) and plan.keep == () and not plan.empty
    assert SummaryStrategy().plan([]).empty
    assert (
        SummaryStrategy().plan([]).note == "there is nothing to summarize beyond the static context"
    )
    assert SummaryStrategy().record() is None  # a record without a strategy is a summary


def test_keep_recent_keeps_the_newest_messages_after_the_summary() -> None:
    history = [_msg("User", f"m{i}") for i in range(10)]
    plan = KeepRecent(keep_messages=4).plan(history)
    assert plan.summarize == (0, 1, 2, 3, 4, 5) and plan.keep == (6, 7, 8, 9)
    assert [e["content"] for e in plan.kept_entries(history, ARCHIVE)] == ["m6", "m7", "m8", "m9"]
    assert KeepRecent(keep_messages=0).plan(history).keep == ()
    everything = KeepRecent(keep_messages=50).plan(history)
    assert everything.empty and "keep fewer" in everything.note


def test_keep_recent_never_splits_a_tool_call_from_its_results() -> None:
    history = _agent_history()  # [task, call0, r, r, call1, r, r, call2, r, r, call3, r, r, final]
    for keep in range(len(history) + 1):
        plan = KeepRecent(keep_messages=keep).plan(history)
        assert len(plan.keep) >= min(keep, len(history))
        if plan.keep:
            first = history[plan.keep[0]]
            assert not is_tool_result(first), (keep, first)
    plan = KeepRecent(keep_messages=2).plan(history)  # would start on call3's second result
    assert [history[i]["content"][:14] for i in plan.keep] == [
        "Calling tools:", "3a row row row", "3b row row row", "All rows loade"
    ]  # fmt: skip


def test_a_recorded_transcript_pairs_a_result_with_the_message_before_it() -> None:
    """A file keeps no tool_call_id: a result is known by its role, its call is the message
    before the run of results."""
    history = [
        _msg("User", "go"),
        _msg("Agent", "Calling tools: a()"),
        _msg("Tool Executor", "1"),
        _msg("tool", "2"),
        _msg("Agent", "done"),
    ]
    assert KeepRecent(keep_messages=2).plan(history).keep == (1, 2, 3, 4)
    assert Trim(keep_messages=2).plan(history).keep == (1, 2, 3, 4)


def test_keep_recent_by_tokens_and_by_a_fraction_of_the_window() -> None:
    history = [_msg("User", f"m{i}") for i in range(6)]
    tokens = [10, 10, 10, 10, 10, 10]
    assert KeepRecent(keep_tokens=30).plan(history, tokens=tokens).keep == (3, 4, 5)
    assert KeepRecent(keep_tokens=29).plan(history, tokens=tokens).keep == (4, 5)
    assert KeepRecent(keep_fraction=0.2).plan(history, tokens=tokens, context_length=100).keep == (
        4,
        5,
    )
    with pytest.raises(InvalidSetting, match="token count"):
        KeepRecent(keep_tokens=30).plan(history)
    with pytest.raises(InvalidSetting, match="context_length"):
        KeepRecent(keep_fraction=0.2).plan(history, tokens=tokens)


def test_the_window_holds_messages_and_summaries_only() -> None:
    history = [
        _msg("System", "[Compressed Memory Summary] old", kind="summary"),
        _msg("User", "m1"),
        _msg("System", "a preload", kind="preload"),
        _msg("User", "m2"),
        _msg("User", "m3"),
    ]
    plan = KeepRecent(keep_messages=10).plan(history)
    assert plan.keep == (3, 4) and plan.summarize == (0, 1, 2)
    assert Trim(keep_messages=10).plan(history[:2]).empty  # a summary can be kept verbatim


def test_trim_keeps_the_newest_that_fit_and_summarizes_nothing() -> None:
    history = [_msg("User", f"m{i}") for i in range(8)]
    tokens = [5, 50, 5, 5, 20, 20, 20, 20]
    plan = Trim(keep_tokens=60).plan(history, tokens=tokens)
    assert plan.keep == (5, 6, 7) and plan.summarize == () and plan.dropped == (0, 1, 2, 3, 4)
    assert Trim().keep_fraction == 0.5  # the default: half the window
    assert Trim().plan(history, tokens=tokens, context_length=100).keep == (6, 7)
    assert Trim(keep_tokens=10).plan(history, tokens=tokens).keep == ()  # nothing fits
    assert Trim(keep_messages=3).plan(history).keep == (5, 6, 7)
    assert Trim(keep_messages=8).plan(history).empty


def test_clearing_keeps_every_message_and_the_newest_tool_results() -> None:
    history = _agent_history()
    plan = ClearToolResults(keep_tool_results=3).plan(history)
    assert plan.keep == tuple(range(len(history))) and plan.summarize == ()
    results = [i for i, e in enumerate(history) if is_tool_result(e)]
    assert plan.cleared == tuple(results[:-3])
    after = plan.kept_entries(history, ARCHIVE)
    for index in plan.cleared:
        text = after[index]["content"]
        assert ARCHIVE in text and text.startswith("[memorylab: tool result cleared (")
        assert after[index]["tool_call_id"] == history[index]["tool_call_id"]  # the pair holds
    for index in results[-3:]:
        assert after[index]["content"] == history[index]["content"]
    assert history[results[0]]["content"].startswith("0a row")  # the input is not changed


def test_a_cleared_result_is_not_cleared_again_nor_a_short_one() -> None:
    history = _agent_history()
    strategy = ClearToolResults(keep_tool_results=1)
    once = strategy.plan(history).kept_entries(history, ARCHIVE)
    again = strategy.plan(once)
    assert again.empty and "no tool result to clear" in again.note
    short = [_msg("Tool Executor", "42"), _msg("Tool Executor", "43")]
    assert ClearToolResults(keep_tool_results=0).plan(short).cleared == ()


def test_a_placeholder_names_the_archive_or_says_there_is_none() -> None:
    entry = _msg("Tool Executor", "x" * 1200)
    assert render_placeholder(PLACEHOLDER, ARCHIVE, entry).endswith(f"archive/{ARCHIVE}]")
    assert NOT_ARCHIVED in render_placeholder(PLACEHOLDER, None, entry)
    own = ClearToolResults(keep_tool_results=0, placeholder="[{role} output in {archive}]")
    plan = own.plan([entry])
    assert (
        plan.kept_entries([entry], ARCHIVE)[0]["content"] == f"[Tool Executor output in {ARCHIVE}]"
    )


@given(
    st.lists(st.sampled_from(["User", "Agent", "Tool Executor", "tool"]), min_size=0, max_size=25),
    st.integers(min_value=0, max_value=30),
)
def test_a_window_never_starts_on_a_tool_result(roles: list[str], keep: int) -> None:
    history = [_msg(role, f"{role} {i} " + BIG) for i, role in enumerate(roles)]
    for strategy in (KeepRecent(keep_messages=keep), Trim(keep_messages=keep)):
        plan = strategy.plan(history)
        assert plan.keep == tuple(range(len(history) - len(plan.keep), len(history)))
        if plan.keep:
            assert not is_tool_result(history[plan.keep[0]])
        # the window holds the newest `keep` unless a result would lose its call
        assert len(plan.keep) >= min(keep, len(history)) or is_tool_result(
            history[len(history) - min(keep, len(history))]
        )


def test_a_plan_is_checked() -> None:
    with pytest.raises(InvalidSetting, match="increasing"):
        CompactionPlan(3, keep=(2, 1))
    with pytest.raises(InvalidSetting, match="either summarized or kept"):
        CompactionPlan(3, summarize=(0, 1), keep=(1, 2))
    with pytest.raises(InvalidSetting, match="plan them again"):
        CompactionPlan(2, keep=(1,)).kept_entries([_msg("User", "a")], ARCHIVE)
    plan = CompactionPlan(5, summarize=(0,), keep=(2, 3, 4), cleared=(3,))
    assert plan.dropped == (1,) and plan.removed == (0, 1)
    assert plan.counts() == {
        "summarized_messages": 1,
        "kept_messages": 3,
        "cleared_messages": 1,
        "dropped_messages": 1,
    }


# -- the registry and the records ----------------------------------------------------------------


def test_the_registry_lists_the_four_strategies_and_rebuilds_each_from_its_record() -> None:
    assert strategy_names()[:4] == ["summary", "keep_recent", "clear_tool_results", "trim"]
    for strategy in (
        SummaryStrategy(),
        KeepRecent(),
        KeepRecent(keep_tokens=3000),
        ClearToolResults(keep_tool_results=5),
        Trim(keep_messages=12),
        Trim(),
    ):
        record = strategy.record()
        line = json.loads(json.dumps(record))  # what compactions.jsonl holds
        assert strategy_from_record(line) == strategy
        assert get_strategy(strategy.name, **(strategy.settings())) == strategy
    assert KeepRecent().record() == {"name": "keep_recent", "keep_messages": 20}
    assert get_strategy(None) == SummaryStrategy() == strategy_from_record(None)


def test_a_record_or_an_event_names_its_strategy() -> None:
    old = {"time": "2026-05-01T10:00:00+00:00", "archive": ARCHIVE, "threshold": 0.9}
    assert strategy_from_record(old) == SummaryStrategy()  # records before strategies
    new = {**old, "strategy": {"name": "trim", "keep_messages": 4}}
    assert strategy_from_record(new) == Trim(keep_messages=4)
    event = CompactionEvent.from_dict(new)
    assert strategy_from_record(event) == Trim(keep_messages=4)
    assert event.to_dict()["strategy"] == {"name": "trim", "keep_messages": 4}
    assert "strategy" not in CompactionEvent.from_dict(old).to_dict()  # old lines unchanged


def test_a_strategy_of_ones_own_is_registered_by_name() -> None:
    from dataclasses import dataclass

    @register_strategy("demo/drop-all")
    @dataclass(frozen=True)
    class DropAll(Strategy):
        name = "demo/drop-all"
        summarizes = False

        def plan(self, entries, *, tokens=None, context_length=None):  # type: ignore[no-untyped-def]
            return CompactionPlan(len(entries))

    assert isinstance(get_strategy("demo/drop-all"), DropAll)
    assert "demo/drop-all" in strategy_names()
    assert strategy_from_record({"name": "demo/drop-all"}) == DropAll()


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: KeepRecent(keep_messages=-1), r"keep_messages must be an int >= 0.*0 keeps none"),
        (lambda: KeepRecent(keep_tokens=-5), r"keep_tokens must be an int >= 0"),
        (lambda: KeepRecent(keep_messages=2.5), r"keep_messages must be an int"),
        (lambda: Trim(keep_fraction=1.5), r"keep_fraction must be in \[0, 1\].*keep_tokens="),
        (lambda: Trim(keep_messages=3, keep_tokens=100), r"give one of keep_messages="),
        (lambda: ClearToolResults(keep_tool_results=-1), r"keep_tool_results must be an int >= 0"),
        (lambda: ClearToolResults(placeholder="cleared"), r"must name the archive.*\{archive\}"),
        (lambda: ClearToolResults(placeholder="{archive} {bytes}"), r"no other field"),
        (lambda: ClearToolResults(placeholder="{archive"), r"does not render"),
        (lambda: get_strategy("keep-recent"), r"unknown strategy 'keep-recent'; registered: "),
        (lambda: get_strategy("trim", keep=3), r"no setting keep; its settings: keep_messages"),
        (lambda: get_strategy(KeepRecent(), keep_messages=3), r"cannot be applied"),
        (lambda: get_strategy(42), r"a strategy is a name"),  # type: ignore[arg-type]
        (lambda: strategy_from_record({"strategy": "trim"}), r"expected a 'name'"),
        (lambda: Trigger(), r"Trigger\(\) has no condition: give fraction="),
        (lambda: Trigger(fraction=2.0), r"Trigger.fraction must be in \(0, 1\].*tokens="),
        (lambda: Trigger(tokens=0), r"Trigger.tokens must be an int >= 1"),
        (lambda: Trigger(messages=-3), r"Trigger.messages must be an int >= 1"),
    ],
)
def test_bad_settings_say_what_to_do(build: Any, match: str) -> None:
    with pytest.raises(InvalidSetting, match=match):
        build()


# -- triggers ------------------------------------------------------------------------------------


def test_a_plain_threshold_is_a_trigger_of_one_condition() -> None:
    assert Trigger.of(0.9) == Trigger(fraction=0.9) and Trigger.of(3000) == Trigger(tokens=3000)
    assert Trigger.of(0.9).plain and not Trigger(fraction=0.9, messages=10).plain
    for tokens in (0, 899, 900, 901):
        assert should_compress(tokens, 1000, Trigger.of(0.9)) == should_compress(tokens, 1000, 0.9)
    assert Trigger.of(Trigger(messages=5)) == Trigger(messages=5)
    with pytest.raises(InvalidSetting, match="threshold"):
        Trigger.of(1.5)


def test_triggers_by_fraction_tokens_and_messages() -> None:
    assert Trigger(fraction=0.5).fires(500, 1000) and not Trigger(fraction=0.5).fires(499, 1000)
    assert Trigger(tokens=300).fires(300, 1000) and not Trigger(tokens=300).fires(299, 1000)
    assert Trigger(messages=20).fires(0, 1000, messages=20)
    assert not Trigger(messages=20).fires(10**6, 10**6, messages=19)  # tokens are not a condition
    assert Trigger(messages=20).token_trigger(1000) is None
    with pytest.raises(InvalidSetting, match="larger than context_length"):
        Trigger(tokens=2000).fires(0, 1000)


def test_several_triggers_fire_when_any_does() -> None:
    trigger = Trigger(fraction=0.9, tokens=600, messages=40)
    assert trigger.token_trigger(1000) == 600  # the lower of the two token conditions
    assert trigger.fires(600, 1000, messages=0)
    assert trigger.fires(10, 1000, messages=40)
    assert not trigger.fires(599, 1000, messages=39)
    assert should_compress(10, 1000, trigger, messages=40)
    assert trigger.to_dict() == {"fraction": 0.9, "tokens": 600, "messages": 40}
    assert Trigger.from_dict(trigger.to_dict()) == trigger
    assert trigger.text() == "0.90 of the window or 600 tokens or 40 messages"
    assert repr(trigger) == "Trigger(fraction=0.9, tokens=600, messages=40)"


def test_the_default_preload_bound_follows_a_trigger() -> None:
    assert default_preload_max_tokens(8000, Trigger(fraction=0.5)) == default_preload_max_tokens(
        8000, 0.5
    )
    assert default_preload_max_tokens(8000, Trigger(messages=30)) == 2000  # a quarter of the window
    assert default_preload_max_tokens(8000, Trigger(fraction=0.9, tokens=1000)) == 500


def test_a_strategy_is_named_by_the_settings_that_decide() -> None:
    """A label fits a table's column: a default placeholder text is left out, a given one is
    named, and every number is said (the default keep is a decision worth reading)."""
    from memorylab.compress import ClearToolResults, KeepRecent, Trim

    assert ClearToolResults().describe() == "clear_tool_results(keep_tool_results=3)"
    custom = ClearToolResults(placeholder="[cleared: archive/{archive}]")
    assert custom.describe().endswith("placeholder='[cleared: archive/{archive}]')")
    assert KeepRecent().describe() == "keep_recent(keep_messages=20)"
    assert Trim(keep_tokens=500).describe() == "trim(keep_tokens=500)"
