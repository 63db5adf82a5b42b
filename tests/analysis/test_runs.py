"""One engine, run at the recorded settings: run_settings, growth from the record, the replay's
check points, restarts and preload, and sweeps that mark the recorded setting and state their
error. The bundled workspace was written by memorylab's own Agent (data/make_data.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from agent_runs import RunSpec, run_agent

from memorylab.analysis import (
    RunSettings,
    SummarySize,
    _progress,
    estimate_sweep,
    memory_df,
    replay,
    run_settings,
    sweep,
    sweep_note,
    token_growth,
)
from memorylab.analysis._sweep import EXACT_SECONDS
from memorylab.compress._policy import check_points, default_preload_max_tokens
from memorylab.errors import InvalidSetting
from memorylab.memory import REPLY_TOKENS
from memorylab.transcripts import bundled_workspace

AGENTS = ("BugHunter", "DataEngineer", "Researcher")


@pytest.fixture(scope="module")
def bundled() -> pd.DataFrame:
    return memory_df(bundled_workspace("memorylab"))


def _records(agent: str) -> list[dict[str, object]]:
    path = bundled_workspace("memorylab") / "agents" / agent / "compactions.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def _agent(frame: pd.DataFrame, agent: str) -> pd.DataFrame:
    return frame[frame["agent"] == agent]


# --------------------------------------------------------------------------- the record


def test_run_settings_come_from_the_record(bundled: pd.DataFrame) -> None:
    settings = run_settings(_agent(bundled, "BugHunter"))
    assert isinstance(settings, RunSettings)
    assert (settings.threshold, settings.context_length) == (0.85, 2800)
    assert settings.summarizer == "memorylab/extractive" and settings.summarizer_max_tokens == 500
    # the system message (3 + 1 for its role + 18 of content), the reply's priming (3) and the
    # tool schemas every call sends (252, usage.jsonl's tool_tokens)
    assert settings.static_tokens == 25 + 252 and settings.token_model == "gpt-4o-mini"
    assert settings.checks == "model_call" and settings.reply_roles == ("BugHunter",)
    assert settings.preload_max_tokens == default_preload_max_tokens(2800, 0.85) == 700
    assert len(settings.restarts) == 4  # five sessions, a new Agent each
    assert settings.compactions == 5 and settings.keep_turn
    assert [t for t in settings.recorded_tokens] == [
        r["tokens_before"] for r in _records("BugHunter")
    ]
    for name in ("threshold", "context_length", "summarizer_max_tokens", "static_tokens", "checks"):
        assert settings.source_of(name) == "recorded", name
    assert settings.source_of("preload_max_tokens") == "default"  # the Agent's rule, recorded
    assert "0.85" in settings.describe() and "277 tokens (recorded)" in settings.describe()
    assert settings.summary_size is not None and 0.9 < settings.summary_size.fill <= 1.0
    given = settings.given(threshold=0.6, context_length=None)
    assert given.threshold == 0.6 and given.source_of("threshold") == "given"
    assert given.context_length == 2800
    with pytest.raises(InvalidSetting, match="no field"):
        settings.given(window=5)


def test_settings_of_a_path_equal_those_of_its_frame(bundled: pd.DataFrame) -> None:
    folder = bundled_workspace("memorylab") / "agents" / "Researcher"
    assert run_settings(folder) == run_settings(_agent(bundled, "Researcher"))


def test_older_records_are_inferred(tmp_path: Path) -> None:
    """Files written before the replay's fields were recorded (by the seed's compaction, which
    kept no turn): the static context comes from tokens_after - summary_tokens, the restarts from
    the gaps, the checks from the roles, the budget from the summaries' sizes; the replay still
    makes the recorded compactions. The inferred budget is the largest summary made (a bound
    from below: 492 of the 500 here), so a compaction whose check was within a few tokens of the
    trigger may come a check later (2.3 % here): given the run's budget, the other inferred
    settings replay every tokens_before exactly."""
    spec = RunSpec("Older", "memorylab/extractive", 3000, 0.85, sessions=5, tasks=9, seed=5,
                   summarizer_max_tokens=500, keep_turn=False)  # fmt: skip
    folder = run_agent(spec, tmp_path).folder
    records = [json.loads(line) for line in (folder / "compactions.jsonl").read_text().splitlines()]
    static = records[0]["extra"]["static_tokens"]
    keep = {"summary_calls", "summary_input_tokens", "summary_output_tokens"}
    lines = [
        json.dumps({**r, "extra": {k: v for k, v in r["extra"].items() if k in keep}})  # type: ignore[union-attr]
        for r in records
    ]
    (folder / "compactions.jsonl").write_text("\n".join(lines) + "\n")
    settings = run_settings(folder)
    assert settings.source_of("static_tokens") == "inferred" and settings.static_tokens == static
    assert settings.source_of("checks") == "inferred" and settings.checks == "model_call"
    assert settings.source_of("restarts") == "inferred" and len(settings.restarts) == 4
    assert settings.source_of("summarizer_max_tokens") == "inferred"
    assert 470 < settings.summarizer_max_tokens <= 500
    result = replay(folder, model="gpt-4o-mini", cache=False)
    assert result.compactions == len(records)
    budgeted = replay(folder, model="gpt-4o-mini", cache=False, max_summary_tokens=500)
    assert [e.tokens_before for e in budgeted.events] == list(settings.recorded_tokens)


# --------------------------------------------------------------------------- growth


@pytest.mark.parametrize("agent", AGENTS)
def test_growth_agrees_with_the_compaction_table(bundled: pd.DataFrame, agent: str) -> None:
    growth = token_growth(_agent(bundled, agent))
    records = _records(agent)
    peaks = growth[growth["compaction"]]
    assert peaks["context_tokens"].tolist() == [r["tokens_before"] for r in records]
    assert peaks["recorded_tokens"].tolist() == [r["tokens_before"] for r in records]
    assert (growth["trigger"] == 2380).all() and (growth["context_length"] == 2800).all()
    assert growth["context_tokens"].max() <= 2800  # never above what the model could read
    assert int(growth["restart"].sum()) == 4 and growth["session"].max() == 4
    after = growth[growth["restart"]]
    bound = default_preload_max_tokens(2800, 0.85)
    static = run_settings(_agent(bundled, agent)).static_tokens  # the tool schemas among them
    assert (after["context_tokens"] < static + bound + after["tokens"] + 50).all()


@pytest.mark.parametrize("agent", AGENTS)
def test_growth_and_replay_are_one_engine(bundled: pd.DataFrame, agent: str) -> None:
    """At the recorded settings the replay makes the recorded compactions with the recorded
    tokens_before, and its context is the growth's, message by message."""
    rows = _agent(bundled, agent)
    result = replay(rows, cache=False)
    records = _records(agent)
    assert result.compactions == len(records)
    assert [e.tokens_before for e in result.events] == [r["tokens_before"] for r in records]
    growth = token_growth(rows)
    messages = growth[~growth["is_summary"]]
    assert messages["context_tokens"].tolist() == result.frame["context_tokens"].tolist()
    assert result.restarts == 4 and result.settings is not None


def test_arguments_override_the_record(bundled: pd.DataFrame) -> None:
    rows = _agent(bundled, "BugHunter")
    growth = token_growth(rows, context_length=8192, threshold=0.5)
    assert (growth["trigger"] == 4096).all() and (growth["context_length"] == 8192).all()
    one_session = token_growth(rows, restarts=False)
    assert not one_session["restart"].any()
    peak = one_session.loc[~one_session["compaction"], "context_tokens"].max()
    assert peak > 2800  # one session would have been above the window: the old curve


# --------------------------------------------------------------------------- the replay's rules


def test_checks_fall_before_model_calls() -> None:
    messages = [
        {"role": "user", "content": "task " * 20},
        {"role": "assistant", "content": "calling a tool"},
        {"role": "tool", "content": "result " * 700},  # lands before the next check
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "next " * 20},
    ]
    result = replay(messages, threshold=0.5, context_length=600, cache=False)
    assert result.frame["check"].tolist() == [True, False, True, False, False]
    assert result.frame["check"].tolist() == check_points(
        [m["role"] for m in messages], {"assistant"}
    )
    fired = result.frame[result.frame["compaction"]]
    assert fired["timeline"].tolist() == [2]  # the check before the second model call
    assert result.peak_context_tokens > 600  # the tool result passed the window before it
    every = replay(messages, threshold=0.5, context_length=600, checks="message", cache=False)
    assert every.frame["check"].all()
    with pytest.raises(InvalidSetting, match="checks must be"):
        replay(messages, context_length=600, checks="sometimes")


def test_a_restart_preloads_memory_within_the_bound() -> None:
    start = datetime(2026, 1, 1, 9, tzinfo=UTC)
    messages = [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"message {i}: " + "word " * 60,
            "timestamp": (start + timedelta(minutes=i) + timedelta(days=i // 20)).isoformat(),
        }
        for i in range(60)
    ]
    result = replay(messages, threshold=0.9, context_length=4000, cache=False)
    timeline = result.frame
    assert timeline["restart"].sum() == 2 and result.compactions == 0
    bound = default_preload_max_tokens(4000, 0.9)
    assert bound == 1000
    at = timeline[timeline["restart"]]
    assert (at["context_tokens"] <= bound + at["tokens"] + 30).all()  # + the entry's prefix
    assert (at["context_tokens"].to_numpy() < timeline["context_tokens"].shift(1)[at.index]).all()
    explicit = replay(
        messages, threshold=0.9, context_length=4000, preload_max_tokens=bound, cache=False
    )
    pd.testing.assert_frame_equal(explicit.frame, timeline)  # the Agent's rule by default
    unbounded = replay(
        messages, threshold=0.9, context_length=4000, preload_max_tokens=None, cache=False
    )
    assert unbounded.frame["context_tokens"].iloc[-1] > timeline["context_tokens"].iloc[-1]
    given = replay(messages, threshold=0.9, context_length=4000, restarts=False, cache=False)
    assert not given.frame["restart"].any()


def test_static_tokens_count_as_recorded() -> None:
    messages = [{"role": "User", "content": f"note {i} " + "x " * 30} for i in range(40)]
    plain = replay(messages, threshold=0.8, context_length=900, cache=False)
    static = replay(messages, threshold=0.8, context_length=900, static_tokens=200, cache=False)
    # without a record, a request's least: the reply's priming (REPLY_TOKENS); given: 200
    assert (
        static.frame["context_tokens"].iloc[:5] - plain.frame["context_tokens"].iloc[:5]
        == 200 - REPLY_TOKENS
    ).all()
    assert static.compactions > plain.compactions
    assert all(e.extra.get("static_tokens") == 200 for e in static.events if e.ok)
    with pytest.raises(InvalidSetting, match="not both"):
        replay(messages, context_length=900, static_tokens=10, system_prompt="x")
    with pytest.raises(InvalidSetting, match="static_tokens"):
        replay(messages, context_length=900, static_tokens=-1)


def test_the_summary_budget_is_the_compressors(bundled: pd.DataFrame) -> None:
    """The replay asks for what ContextCompressor asks for: summarizer_max_tokens within half
    the trigger (the fast sweep used to assume a tenth of the window)."""
    messages = [{"role": "User", "content": f"step {i}: " + "detail " * 40} for i in range(80)]
    result = replay(messages, threshold=0.8, context_length=1000, cache=False)
    assert {e.extra["summary_budget"] for e in result.events if e.ok} == {400}
    small = replay(
        messages, threshold=0.8, context_length=1000, max_summary_tokens=100, cache=False
    )
    assert {e.extra["summary_budget"] for e in small.events if e.ok} == {100}
    assert small.compactions < result.compactions


# --------------------------------------------------------------------------- sweeps


def test_sweep_marks_the_recorded_setting(bundled: pd.DataFrame) -> None:
    rows = _agent(bundled, "DataEngineer")
    table = sweep(rows, thresholds=[0.5, 0.7, 0.9])
    assert table.frame["threshold"].tolist() == [0.5, 0.7, 0.85, 0.9]  # the recorded one added
    assert table.frame["recorded"].tolist() == [False, False, True, False]
    assert set(table.frame["mode"]) == {"replay"}  # small enough to replay exactly
    row = table.frame[table.frame["recorded"]].iloc[0]
    assert row["compactions"] == len(_records("DataEngineer"))
    assert sweep_note(table).startswith("Every setting replayed exactly")
    other_window = sweep(rows, thresholds=[0.5], context_lengths=[8192])
    assert not other_window.frame["recorded"].any() and len(other_window.frame) == 1


def test_fast_sweep_states_its_measured_error(bundled: pd.DataFrame) -> None:
    rows = _agent(bundled, "DataEngineer")
    fast = sweep(rows, thresholds=[0.5, 0.7, 0.9], fast=True)
    exact = sweep(rows, thresholds=[0.5, 0.7, 0.9], fast=False)
    assert set(fast.frame["mode"]) == {"fast"}
    error = fast.error
    assert error["settings"] == 3 and error["messages"] > 0
    calibration = pd.DataFrame(fast.calibration)
    assert {"exact_compactions", "fast_compactions"} <= set(calibration.columns)
    worst = (calibration["fast_compactions"] - calibration["exact_compactions"]).abs().max()
    assert worst == error["compactions"]
    note = sweep_note(fast)
    assert f"within ±{error['compactions']}" in note and "Fast sweep" in note
    # the stated error bounds what it stated it for; the whole grid stays close as well
    assert (fast.frame["compactions"] - exact.frame["compactions"]).abs().max() <= 2
    uncalibrated = sweep(rows, thresholds=[0.5], fast=True, calibrate=False)
    assert uncalibrated.error == {} and "not measured" in sweep_note(uncalibrated)


def test_replay_at_gives_exact_rows_in_a_fast_sweep(bundled: pd.DataFrame) -> None:
    rows = _agent(bundled, "BugHunter")
    table = sweep(rows, thresholds=[0.5, 0.7], fast=True, calibrate=False, replay_at=[0.7])
    assert table.frame["mode"].tolist() == ["fast", "replay", "fast"]
    direct = replay(rows, threshold=0.7)
    row = table.frame.iloc[1]
    assert row["compactions"] == direct.compactions
    assert row["peak_context_tokens"] == direct.peak_context_tokens
    assert row["total_input_tokens"] == direct.total_input_tokens


def test_a_large_sweep_goes_fast_by_itself() -> None:
    messages = [
        {"role": "User" if i % 2 else "assistant", "content": f"row {i} " + "value " * 120}
        for i in range(3000)
    ]
    table = sweep(
        messages, thresholds=np.linspace(0.3, 0.9, 12).round(2).tolist(), context_lengths=[4096]
    )
    assert set(table.frame["mode"]) == {"fast"}
    assert table.error["settings"] >= 1


def test_a_sweep_states_its_cost_before_it_starts() -> None:
    """The estimate is made before any replay, chooses the mode, and is what the note says."""
    messages = [
        {"role": "User" if i % 2 else "assistant", "content": f"row {i} " + "value " * 120}
        for i in range(1000)
    ]
    thresholds = [0.5, 0.7, 0.9]
    ahead = estimate_sweep(messages, thresholds, [4096])
    assert (ahead.settings, ahead.messages, ahead.local) == (3, 1000, True)
    assert ahead.mode == ("replay" if ahead.exact_seconds <= EXACT_SECONDS else "fast")
    made = sweep(messages, thresholds, [4096], calibrate=False)
    assert made.estimate == ahead  # the sweep made the same estimate, and kept it
    assert set(made.frame["mode"]) == {ahead.mode}
    # The fast engine's count of summaries is the exact replays' count, near enough to plan by.
    exact = int(sweep(messages, thresholds, [4096], fast=False).frame["summarizer_calls"].sum())
    assert abs(ahead.summarizer_calls - exact) <= 0.05 * exact
    assert f"3 exact replays of 1,000 messages: about {ahead.exact_seconds:,.0f} s, " in (
        ahead.describe()
    )
    fast = sweep(messages, thresholds, [4096], fast=True, calibrate=False)
    assert f"Fast sweep (instead of {ahead.describe()}): " in sweep_note(fast)
    one = estimate_sweep(messages[:10], [0.9], [4096])
    assert one.describe() == "1 exact replay of 10 messages: under 1 s, 0 summaries"


def test_an_exact_sweep_shows_one_bar_over_all_its_messages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Bar:
        def __init__(self, total: int, desc: str) -> None:
            self.total, self.desc, self.n, self.closed = total, desc, 0, False

        def update(self, steps: int) -> None:
            self.n += steps

        def close(self) -> None:
            self.closed = True

    bars: list[Bar] = []

    def watched_bar(total: int, desc: str, unit: str, enabled: bool | None = None) -> Bar:
        bars.append(Bar(total, desc))
        return bars[-1]

    monkeypatch.setattr(_progress, "bar", watched_bar)
    messages = [{"role": "User", "content": f"row {i} " + "value " * 60} for i in range(200)]
    sweep(messages, [0.5, 0.9], [2048], fast=False)
    (only,) = bars  # no bar of its own per replay
    assert only.total == only.n == 2 * 200 and only.closed
    assert only.desc.startswith("sweep: 2 exact replays of 200 messages: ")


def test_summary_size_model() -> None:
    size = SummarySize.fit([(2000, 480, 500), (2500, 485, 500), (900, 300, 500)])
    assert size is not None and size.fill == 0.97 and size.ratio == pytest.approx(1 / 3, abs=1e-3)
    assert size.tokens(5000, 500) == 485 and size.tokens(300, 500) == 99
    assert SummarySize.fit([]) is None
    with pytest.raises(InvalidSetting, match=r"SummarySize.ratio must be a number in \(0, 1\]"):
        SummarySize(ratio=1.5)


def test_progress_bars_are_off_in_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not _progress.watched()
    bar = _progress.bar(10, "replay", "msg")
    assert bar.disable
    bar.close()
    monkeypatch.setenv("MEMORYLAB_PROGRESS", "1")
    assert _progress.watched()
    monkeypatch.setenv("MEMORYLAB_PROGRESS", "0")
    assert not _progress.watched()


def test_bad_settings_get_one_line_errors() -> None:
    messages = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
    cases = [
        ({"restarts": ["not a time"]}, "restarts holds 'not a time'"),
        ({"preload_max_tokens": 0}, "preload_max_tokens must be >= 1"),
        ({"preload_max_tokens": "lots"}, "preload_max_tokens must be an int"),
        ({"context_length": 100, "threshold": 500}, "larger than context_length"),
    ]
    for options, message in cases:
        with pytest.raises(InvalidSetting, match=message) as caught:
            replay(messages, **options)  # type: ignore[arg-type]
        assert "\n" not in str(caught.value)
    with pytest.raises(InvalidSetting, match="summary_size or summary_ratio"):
        sweep(messages, fast=True, summary_ratio=0.2, summary_size=SummarySize())
    with pytest.raises(InvalidSetting, match="needs the role of the model's replies"):
        replay([{"role": "User", "content": "x"}], checks="model_call")


# --------------------------------------------------------------------------- one way to change


def test_given_is_the_one_way_to_change_a_setting() -> None:
    """None keeps a setting (as every keyword's None means the record's), except
    preload_max_tokens=None, which removes the bound; RECORDED keeps it; a bound that is the
    Agent's rule follows the window."""
    from memorylab.analysis._runs import RECORDED

    settings = RunSettings(context_length=4000).given(preload_max_tokens=900)
    kept = settings.given(context_length=None, preload_max_tokens=RECORDED)
    assert kept == settings
    assert settings.given(preload_max_tokens=None).preload_max_tokens is None
    assert settings.given(preload_max_tokens=None).source_of("preload_max_tokens") == "given"
    assert RunSettings(context_length=4000).given(context_length=8000).preload_max_tokens == (
        default_preload_max_tokens(8000, settings.threshold)  # the default bound: the rule
    )
    assert (
        settings.given(preload_max_tokens=500).given(context_length=8000).preload_max_tokens == 500
    )
    with pytest.raises(InvalidSetting, match="static_tokens must be an int >= 0"):
        settings.given(static_tokens=-1)
    with pytest.raises(InvalidSetting, match="context_length must be an int >= 1"):
        settings.given(context_length=0)
    messages = [{"role": "user", "content": f"m{i} " + "w " * 30} for i in range(20)]
    unbounded = replay(messages, context_length=400, restarts=False, preload_max_tokens=None)
    assert unbounded.settings is not None and unbounded.settings.preload_max_tokens is None


def test_an_unknown_keyword_is_still_a_type_error() -> None:
    messages = [{"role": "user", "content": "hello"}]
    with pytest.raises(TypeError, match="unexpected keyword argument 'treshold'"):
        replay(messages, treshold=0.5)  # type: ignore[call-arg]
    with pytest.raises(
        TypeError, match=r"sweep\(\) got an unexpected keyword argument 'threshold'"
    ):
        sweep(messages, threshold=0.5)  # type: ignore[call-arg]
    frame = pd.DataFrame({"role": ["user"], "content": ["hello"]})
    with pytest.raises(TypeError, match=r"token_growth\(\) got an unexpected keyword argument"):
        token_growth(frame, checks="message")  # type: ignore[call-arg]


# --------------------------------------------------------------------------- deprecated forms


def test_the_old_forms_of_replays_and_sweeps_warn_and_still_work() -> None:
    from memorylab.analysis import SweepResult, sweep_table

    messages = [{"role": "user", "content": f"m{i} " + "w " * 30} for i in range(40)]
    result = replay(messages, threshold=0.5, context_length=600)
    with pytest.warns(DeprecationWarning, match="ReplayResult.frame"):
        assert result.timeline is result.frame
    table = sweep(messages, [0.5, 0.9], [600], fast=True)
    assert isinstance(table, SweepResult) and table.notes() == [sweep_note(table)]
    with pytest.warns(DeprecationWarning, match="use result.frame"):
        assert table["threshold"].tolist() == [0.5, 0.9]
    with pytest.warns(DeprecationWarning, match="use result.frame"):
        assert table.attrs["error"] == table.error and table.attrs["summarizer"] == table.summarizer
    pd.testing.assert_frame_equal(sweep_table(table.frame), sweep_table(table))
    import importlib

    import memorylab.analysis

    old_growth = importlib.import_module("memorylab.analysis.growth")  # 0.1's module path
    for name in ("replay", "ReplayResult", "sweep", "DEFAULT_THRESHOLDS"):
        with pytest.warns(DeprecationWarning, match="import it from memorylab.analysis "):
            moved = getattr(old_growth, name)
        assert moved is getattr(memorylab.analysis, name)


def test_replay_and_sweep_take_a_strategy(bundled: pd.DataFrame) -> None:
    from memorylab.compress import KeepRecent, Trim

    rows = _agent(bundled, "BugHunter")
    plain = replay(rows, threshold=0.7)
    kept = replay(rows, threshold=0.7, strategy=KeepRecent(keep_messages=4))
    trimmed = replay(rows, threshold=0.7, strategy="trim")
    assert plain.strategy == "summary()" and kept.strategy == "keep_recent(keep_messages=4)"
    assert trimmed.strategy.startswith("trim(") and trimmed.summarizer_calls == 0
    assert kept.compactions > 0 and trimmed.compactions > 0
    # What a keep-recent compaction leaves: the summary and the 4 newest messages (or a few
    # more when the window would start inside a tool call's results).
    final = kept.final_context.split("\n\n[")
    assert any("[Compressed Memory Summary]" in part for part in final)
    strategies = ["summary", KeepRecent(keep_messages=4), Trim(keep_messages=6)]
    table = sweep(rows, thresholds=[0.7, 0.9], strategies=strategies, fast=True, calibrate=False)
    frame = table.frame
    assert list(frame.columns[:6]) == [
        "context_length", "threshold", "trigger", "strategy", "mode", "recorded",
    ]  # fmt: skip
    assert frame["strategy"].tolist() == [
        name for name in ("summary()", "keep_recent(keep_messages=4)", "trim(keep_messages=6)")
        for _ in range(3)  # 0.7, the recorded 0.85, 0.9
    ]  # fmt: skip
    # The fast engine models summaries only: every other strategy's row is an exact replay.
    assert set(frame[frame["strategy"] == "summary()"]["mode"]) == {"fast"}
    assert set(frame[frame["strategy"] != "summary()"]["mode"]) == {"replay"}
    assert frame["recorded"].tolist() == [False, True, False] + [False] * 6  # the run's own
    row = frame[(frame["strategy"] == "keep_recent(keep_messages=4)") & (frame["threshold"] == 0.7)]
    assert int(row["compactions"].iloc[0]) == kept.compactions
    assert int(row["total_input_tokens"].iloc[0]) == kept.total_input_tokens
    ahead = estimate_sweep(rows, [0.7, 0.9], strategies=strategies)
    assert ahead.settings == 9 and table.estimate == ahead
    with pytest.raises(TypeError, match="strategy"):
        sweep(rows, strategy="trim")  # type: ignore[call-arg]
    with pytest.raises(InvalidSetting, match="unknown strategy 'nope'"):
        sweep(rows, strategies=["nope"])


def test_a_run_with_a_message_count_trigger_is_replayed_by_it(tmp_path: Path) -> None:
    """A trigger of several conditions is recorded (extra["trigger"]) and replayed as it ran;
    a threshold given to the replay replaces it."""
    from memorylab import Conversation
    from memorylab.compress import ContextCompressor
    from memorylab.compress._policy import Trigger

    conversation = Conversation(agent_name="Counter", workspace_dir=tmp_path)
    trigger = Trigger(fraction=0.8, messages=12)
    compressor = ContextCompressor(trigger)
    for n in range(60):
        conversation.add("User" if n % 2 else "Assistant", f"note {n} " + "word " * (5 + n % 7))
        compressor.compress(conversation, 4000)
    live = [e.tokens_before for e in compressor.events if e.ok]
    assert len(live) >= 4  # the message count fires long before 80 % of 4,000 tokens
    folder = tmp_path / "agents" / "Counter"
    settings = run_settings(folder)
    assert settings.trigger == trigger and settings.source_of("trigger") == "recorded"
    assert settings.describe().startswith("trigger 0.80 of the window or 12 messages (recorded)")
    result = replay(folder, checks="message")
    replayed = [e.tokens_before or 0 for e in result.events if e.ok]
    assert len(replayed) == len(live)  # the validation's rule: the count, tokens within 2 %
    assert all(abs(a - b) <= 0.02 * b for a, b in zip(replayed, live, strict=True))
    by_threshold = replay(folder, checks="message", threshold=0.8)
    assert by_threshold.settings is not None and by_threshold.settings.trigger is None
    assert by_threshold.compactions < len(live)
