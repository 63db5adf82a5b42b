"""Bad input to the public functions gets a memorylab error in the caller's words (issue 36).

Each call below raised a raw ``TypeError``, ``KeyError``, ``AttributeError`` or
``OverflowError`` (or was accepted silently) before: the analysis facade's loaders and audits,
``compare_strategies`` and ``Conversation.compact``. Now each raises the memorylab error of its
kind (:class:`~memorylab.errors.InvalidSetting` for a value, :class:`~memorylab.errors.StoreError`
for a path the system refuses), whose message names the parameter as the caller wrote it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from analysis_support import build_own

from memorylab import Conversation, analysis
from memorylab._validation import LARGEST_COUNT, check_columns, check_int
from memorylab.errors import InvalidSetting, MemorylabError, StoreError
from memorylab.evaluate import Case, cases_from_transcripts
from memorylab.evaluate._strategies import StrategyMemory, compare_strategies
from memorylab.transcripts import bundled_transcripts


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """memorylab's own workspace: ``alpha`` compacted three times."""
    return build_own(tmp_path_factory.mktemp("bad-input") / "own").root


def _alpha(root: Path) -> Path:
    return root / "agents" / "alpha"


Call = Callable[[Path], Any]

# (id, the call on the workspace, the error class, what the message says: the parameter's name)
ANALYSIS: list[tuple[str, Call, type[MemorylabError], str]] = [
    # the source rule (analysis/sources.py): every loader and audit
    ("lineage_df(5)", lambda ws: analysis.lineage_df(5), InvalidSetting,
     r"^source must be a path .* or memory_df's frame, not int"),
    ("compaction_costs_df(5)", lambda ws: analysis.compaction_costs_df(5), InvalidSetting,
     r"^source must be a path .*, not int"),
    ("memory_df(None)", lambda ws: analysis.memory_df(None), InvalidSetting,
     r"^source must be a path .*, not NoneType"),
    ("compactions_df(3.5)", lambda ws: analysis.compactions_df(3.5), InvalidSetting,
     r"^source must be a path .*, not float"),
    ("problems_df(True)", lambda ws: analysis.problems_df(True), InvalidSetting,
     r"^source must be a path .*, not bool"),
    ("memory_df(bytes)", lambda ws: analysis.memory_df(bytes(ws)), InvalidSetting,
     r"^source must be .*, not bytes: decode it \(os\.fsdecode\(source\)\)"),
    ("memory_df(set)", lambda ws: analysis.memory_df({str(ws)}), InvalidSetting,
     r"^source must be .*, not set \(pass list\(source\)\)"),
    ("fact_survival_df([path, 5])", lambda ws: analysis.fact_survival_df([ws, 5]),
     InvalidSetting, r"^source\[1\] must be a path"),
    ("memory_df(a name too long)", lambda ws: analysis.memory_df("x" * 5000), StoreError,
     r"cannot be looked up .*give a MEMORY\.md"),
    ("calibration_df([path, 5])", lambda ws: analysis.calibration_df([ws, 5]), InvalidSetting,
     r"^source\[1\] must be a path"),
    ("calibration_df(1e308)", lambda ws: analysis.calibration_df(1e308), InvalidSetting,
     r"^source must be a workspace.*not float"),
    # a frame given as the source, or to an audit of a frame
    ("lineage_df(empty frame)", lambda ws: analysis.lineage_df(pd.DataFrame()), InvalidSetting,
     r"^source must be a DataFrame as memory_df returns: it has no \['workspace', 'agent'"),
    ("fact_survival_df(frame without is_summary)",
     lambda ws: analysis.fact_survival_df(analysis.memory_df(ws).drop(columns="is_summary")),
     InvalidSetting, r"^source must be a DataFrame as memory_df returns: it has no \['is_summary'\]"),
    ("survival_by_generation(5)", lambda ws: analysis.survival_by_generation(5), InvalidSetting,
     r"^frame must be a DataFrame as fact_survival_df returns, not int"),
    ("survival_by_generation(by=5)",
     lambda ws: analysis.survival_by_generation(analysis.fact_survival_df(ws), by=5),
     InvalidSetting, r"^by must be a column name or a list of them, not 5"),
    ("calibration_summary(5)", lambda ws: analysis.calibration_summary(5), InvalidSetting,
     r"^frame must be a DataFrame as calibration_df returns, not int"),
    ("audit(name='nope')", lambda ws: analysis.audit(ws, "nope"), InvalidSetting,
     r"^no audit 'nope'; the audits: facts, costs, calibration"),
    ("audit(name=5)", lambda ws: analysis.audit(ws, 5), InvalidSetting, r"^name must be"),
    ("audit(...).text('rows')", lambda ws: analysis.calibration_audit(ws).text("rows"),
     InvalidSetting, r"^table must be 'frame' or 'summary', not 'rows'"),
    # the other arguments
    ("fact_survival_df(facts=5)", lambda ws: analysis.fact_survival_df(ws, facts=5),
     InvalidSetting, r"^facts= takes strings.*; got int"),
    ("dropped_by(facts=5)", lambda ws: analysis.dropped_by(ws, "alpha", 1, facts=5),
     InvalidSetting, r"^facts= takes strings.*; got int"),
    ("summary_provenance(generation=True)",
     lambda ws: analysis.summary_provenance(ws, "alpha", True), InvalidSetting,
     r"^generation must be an int >= 1, not True"),
    ("dropped_by(generation='1')", lambda ws: analysis.dropped_by(ws, "alpha", "1"),
     InvalidSetting, r"^generation must be an int >= 1, not '1'"),
    ("compaction_costs_df(model=5)", lambda ws: analysis.compaction_costs_df(ws, model=5),
     InvalidSetting, r"^model must be a non-empty model name or None, not 5"),
    ("load_records(5)", lambda ws: analysis.load_records(5), InvalidSetting,
     r"^source must be a path"),
    ("documents_df(5)", lambda ws: analysis.documents_df(5), InvalidSetting,
     r"^documents must be \(path, MemoryDocument\) pairs"),
    ("documents_df([5])", lambda ws: analysis.documents_df([5]), InvalidSetting,
     r"^documents\[0\] must be a \(path, MemoryDocument\) pair, not int"),
    ("token_growth(5)", lambda ws: analysis.token_growth(5), InvalidSetting,
     r"^df must be a DataFrame as memory_df returns, not int"),
    ("token_growth(empty frame)", lambda ws: analysis.token_growth(pd.DataFrame()),
     InvalidSetting, r"^df must be a DataFrame as memory_df returns: it has no \['role'"),
    ("sweep(thresholds=0.5)", lambda ws: analysis.sweep(_alpha(ws), thresholds=0.5),
     InvalidSetting, r"^thresholds must be a list of thresholds, not float: pass \[0\.5\]"),
    ("sweep(context_lengths=8000)",
     lambda ws: analysis.sweep(_alpha(ws), context_lengths=8000), InvalidSetting,
     r"^context_lengths must be a list of context lengths, not int"),
    ("sweep(strategies='trim')", lambda ws: analysis.sweep(_alpha(ws), strategies="trim"),
     InvalidSetting, r"^strategies must be a list of strategies"),
    ("sweep_table(5)", lambda ws: analysis.sweep_table(5), InvalidSetting,
     r"^result must be a DataFrame as sweep returns, not int"),
    ("plot_token_growth(5)", lambda ws: analysis.plot_token_growth(5), InvalidSetting,
     r"^growth must be a DataFrame as token_growth returns, not int"),
    ("plot_token_growth_grid(5)", lambda ws: analysis.plot_token_growth_grid(5),
     InvalidSetting, r"^growths must be a mapping \{agent: token_growth frame\}, not int"),
    ("plot_sweep(5)", lambda ws: analysis.plot_sweep(5), InvalidSetting,
     r"^sweep must be a DataFrame as sweep returns, not int"),
    ("plot_compactions(5)", lambda ws: analysis.plot_compactions(5), InvalidSetting,
     r"^compactions must be a DataFrame as compactions_df returns, not int"),
    ("plot_fact_survival(5)", lambda ws: analysis.plot_fact_survival(5), InvalidSetting,
     r"^frame must be a DataFrame as fact_survival_df returns, not int"),
    ("plot_summary_lengths(5)", lambda ws: analysis.plot_summary_lengths(5), InvalidSetting,
     r"^lineage must be a DataFrame as lineage_df returns, not int"),
    ("plot_compaction_costs(5)", lambda ws: analysis.plot_compaction_costs(5), InvalidSetting,
     r"^costs must be a DataFrame as compaction_costs_df returns, not int"),
    ("plot_calibration(5)", lambda ws: analysis.plot_calibration(5), InvalidSetting,
     r"^calls must be a DataFrame as calibration_df returns, not int"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [case[1:] for case in ANALYSIS],
    ids=[case[0] for case in ANALYSIS],
)
def test_analysis_bad_input(
    workspace: Path, call: Call, error: type[MemorylabError], message: str
) -> None:
    with pytest.raises(error, match=message):
        call(workspace)


def test_a_count_no_frame_holds_is_no_count() -> None:
    """calibration_df given usage records with 1e308 tokens raised a raw OverflowError; a value
    that is no count is missing, as a text or a NaN there already is."""
    time = "2026-05-01T10:00:00+00:00"  # a record without one is no usage record
    records = [
        {"time": time, "agent": "a", "session_start": "s", "call": 1, "estimated_tokens": 100,
         "input_tokens": 1e308},
        {"time": time, "agent": "a", "session_start": "s", "call": 2, "estimated_tokens": 1e308,
         "input_tokens": 120},
        {"time": time, "agent": "a", "session_start": "s", "call": 3, "estimated_tokens": 100,
         "input_tokens": -1e300},
    ]  # fmt: skip
    frame = analysis.calibration_df(records)
    assert frame["input_tokens"].isna().tolist() == [True, False, True]
    assert frame["estimated_tokens"].isna().tolist() == [False, True, False]
    assert frame["drift"].isna().all()
    assert analysis.calibration_summary(frame)["reported_calls"].tolist() == [0]


def test_the_checks_of_the_ground_floor() -> None:
    assert check_int("k", LARGEST_COUNT, 1) == LARGEST_COUNT
    with pytest.raises(InvalidSetting, match=r"^k must be an int >= 1 and <= 9,223,"):
        check_int("k", LARGEST_COUNT + 1, 1)
    frame = pd.DataFrame({"a": [1]})
    assert check_columns("frame", frame, ["a"], made_by="f") is frame
    with pytest.raises(InvalidSetting, match=r"^frame must be a DataFrame as f returns, not type"):
        check_columns("frame", pd.DataFrame, [], made_by="f")


# --------------------------------------------------------------------------- compare_strategies


@pytest.fixture(scope="module")
def case() -> Case:
    (first,) = cases_from_transcripts(bundled_transcripts()[0])
    return replace(first, messages=first.messages[:40])


Compare = Callable[[Case], Any]


def _compare(case: Case, **changed: Any) -> Any:
    settings: dict[str, Any] = {
        "strategies": ["trim"], "scorers": ["fact_recall"], "context_length": 4096,
        "threshold": 0.8, "cache_dir": False, "progress": False,
    } | changed  # fmt: skip
    cases = settings.pop("cases", case)
    strategies, scorers = settings.pop("strategies"), settings.pop("scorers")
    return compare_strategies(cases, strategies, scorers, **settings)


COMPARE: list[tuple[str, Compare, str]] = [
    ("threshold=nan", lambda c: _compare(c, threshold=math.nan), r"^threshold=nan is invalid"),
    ("threshold=2.0", lambda c: _compare(c, threshold=2.0), r"^threshold=2\.0 is invalid"),
    ("threshold='0.8'", lambda c: _compare(c, threshold="0.8"), r"^threshold='0\.8' \(str\)"),
    ("threshold=True", lambda c: _compare(c, threshold=True), r"^threshold=True \(bool\)"),
    ("threshold above the window", lambda c: _compare(c, threshold=5000),
     r"^threshold=5000 tokens is larger than context_length=4096"),
    ("context_length=2**70", lambda c: _compare(c, context_length=2**70),
     r"^context_length must be an int >= 1 and <= 9,223,372,036,854,775,807"),
    ("cases=5", lambda c: _compare(c, cases=5),
     r"^cases must be a Case or a list of Cases .*, not int"),
    ("strategies=5", lambda c: _compare(c, strategies=5), r"^strategies must be a list"),
    ("strategies='trim'", lambda c: _compare(c, strategies="trim"),
     r"^strategies must be a list.*; for one, pass \['trim'\]"),
    ("an unknown option", lambda c: _compare(c, thresold=0.5),
     r"^compare_strategies\(\) got an unexpected keyword argument 'thresold'"),
    ("StrategyMemory(threshold=nan)",
     lambda c: StrategyMemory("trim", context_length=4096, threshold=math.nan),
     r"^threshold=nan is invalid"),
]  # fmt: skip


@pytest.mark.parametrize(("call", "message"), [c[1:] for c in COMPARE], ids=[c[0] for c in COMPARE])
def test_compare_strategies_bad_input(case: Case, call: Compare, message: str) -> None:
    with pytest.raises(InvalidSetting, match=message):
        call(case)


def test_compare_strategies_reads_an_iterator_of_cases_once(case: Case) -> None:
    """The cases were read twice (scored, then listed for the runs): an iterator gave the
    scores and no runs."""
    result = _compare(case, cases=iter([case]))
    assert result.runs["case"].tolist() == [case.id]


# --------------------------------------------------------------------------- Conversation.compact


@pytest.fixture
def conversation(tmp_path: Path) -> Iterator[Conversation]:
    conv = Conversation(agent_name="compacted", workspace_dir=tmp_path, preload=False)
    conv.add("User", "the cheapest GPU is B at 0.9")
    yield conv
    conv.store.close()  # type: ignore[union-attr]


Compact = Callable[[Conversation], Any]

COMPACT: list[tuple[str, Compact, str]] = [
    ("note='x'", lambda c: c.compact("s", note="x"),
     r"^compact\(\) got an unexpected keyword argument 'note'; it takes summary"),
    ("time='x'", lambda c: c.compact("s", time="x"),
     r"^compact\(\) got an unexpected keyword argument 'time' \(compact\(\) records it itself\)"),
    ("kind='edit'", lambda c: c.compact("s", kind="edit"),
     r"unexpected keyword argument 'kind' \(compact\(\) records it itself\)"),
    ("summary_role=5", lambda c: c.compact("s", 5), r"^summary_role=5: a role must be a string"),
    ("summary_role=''", lambda c: c.compact("s", ""), r"^summary_role='': a role must not be"),
    ("ticket=5", lambda c: c.compact("s", ticket=5), r"^ticket must be what begin_compaction"),
    ("kept=5", lambda c: c.compact("s", kept=5), r"^kept must be a list of history entries"),
    ("kept=['x']", lambda c: c.compact("s", kept=["x"]), r"^kept\[0\] must be a history entry"),
    ("kept=[{}]", lambda c: c.compact("s", kept=[{}]), r"^kept\[0\] must be a history entry"),
    ("kept returning 5", lambda c: c.compact("s", kept=lambda archive: 5),
     r"^what kept\(\) returned must be a list of history entries"),
    ("tokens_before='x'", lambda c: c.compact("s", tokens_before="x"),
     r"^tokens_before must be a count or None, not 'x'"),
    ("tokens_after=nan", lambda c: c.compact("s", tokens_after=math.nan),
     r"^tokens_after must be a count or None, not nan"),
    ("summary_tokens=True", lambda c: c.compact("s", summary_tokens=True),
     r"^summary_tokens must be a count or None, not True"),
    ("threshold=nan", lambda c: c.compact("s", threshold=math.nan),
     r"^threshold must be a number > 0 or None, not nan"),
    ("cost_usd=inf", lambda c: c.compact("s", cost_usd=math.inf),
     r"^cost_usd must be a number >= 0 or None, not inf"),
    ("error=5", lambda c: c.compact("s", error=5), r"^error must be a text or None, not 5"),
    ("extra=5", lambda c: c.compact("s", extra=5), r"^extra must be a dict, not int"),
    ("extra=None", lambda c: c.compact("s", extra=None), r"^extra must be a dict, not NoneType"),
    ("strategy=5", lambda c: c.compact("s", strategy=5),
     r"^strategy must be a strategy record or None, not 5"),
]  # fmt: skip


@pytest.mark.parametrize(("call", "message"), [c[1:] for c in COMPACT], ids=[c[0] for c in COMPACT])
def test_compact_bad_input_changes_nothing(
    conversation: Conversation, call: Compact, message: str
) -> None:
    memory = conversation.store.path  # type: ignore[union-attr]
    before = memory.read_bytes()
    history = list(conversation.conversation_history)
    with pytest.raises(InvalidSetting, match=message):
        call(conversation)
    assert memory.read_bytes() == before
    assert not list((memory.parent / "archive").glob("history_*"))
    assert not (memory.parent / "compactions.jsonl").exists()
    assert conversation.conversation_history == history


def test_compact_takes_the_record_fields_it_always_took(conversation: Conversation) -> None:
    event = conversation.compact(
        "s", tokens_before=120, threshold=0.8, context_length=4096, summarizer_model="m",
        latency_s=0.0, cost_usd=None, error=None, strategy=None, extra={"note": "kept"},
    )  # fmt: skip
    assert (event.tokens_before, event.threshold, event.extra) == (120, 0.8, {"note": "kept"})
