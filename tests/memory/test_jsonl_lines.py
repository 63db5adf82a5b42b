"""The JSON Lines files of a memory (``compactions.jsonl``, ``usage.jsonl``): one reading rule
and what a bad line does (issue 36).

* a line ends at ``b"\\n"`` only: a record holding any text, U+2028, U+2029, U+0085 and the
  other characters ``str.splitlines`` splits on among them, round-trips through
  ``append_record``/``records`` and ``append_usage``/``usage_records`` (property test over
  every code point, and one pass over all of them), and a line torn by a crash is still
  reported as before;
* a bad line (a 5,000-digit number, 100,000 nested brackets, a string where a count is
  expected, a list where an object is expected, a field missing, NaN/Infinity, a huge float) in
  either file is a reported problem, never a crash: ``compact()`` and every reader of the files
  go on (the frames, calibration, lineage, fact survival, cache costs, token growth, replay,
  the report, the export).
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memorylab import Agent, Conversation
from memorylab.llm import ChatReply
from memorylab.memory._paths import agent_paths
from memorylab.memory._redact import SECRETS
from memorylab.memory._store import MemoryStore

AGENT = "Lines"
SPLITTERS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # every character str.splitlines splits on
TIME = "2026-05-01T10:00:00.000000+00:00"

# Every code point, surrogates too (a lone one reaches a record as an error text may quote it).
# A high surrogate right before a low one is the one text JSON cannot hold as it is: every JSON
# reader takes the pair's escapes for the code point the pair encodes in UTF-16 (U+10000 up).
_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]|[\udc00-\udfff][\ud800-\udbff]")
ANY_TEXT = st.text(st.characters(exclude_categories=()), max_size=40).filter(
    lambda text: not _PAIR.search(text)
)


def _store(folder: Path) -> MemoryStore:
    store = MemoryStore(folder / "MEMORY.md")
    store.ensure("lines", datetime(2026, 5, 1, tzinfo=UTC))
    return store


def _clean(text: str) -> bool:
    """No redaction rule finds anything in ``text`` (the store redacts what it writes)."""
    return SECRETS(text) == text


# -- what a line ends at ---------------------------------------------------------------------


@pytest.mark.parametrize("character", list(SPLITTERS))
def test_a_record_holding_a_line_separator_round_trips(tmp_path: Path, character: str) -> None:
    store = _store(tmp_path)
    records = [
        {"kind": "compaction", "time": TIME, "archive": f"a{i}", "error": f"x{character}y"}
        for i in range(6)
    ]
    for record in records:
        store.append_record(record)
        store.append_usage({**record, "kind": "model_call", "model": f"m{character}"})
    problems: list[str] = []
    assert store.records(problems) == records
    assert [r["model"] for r in store.usage_records(problems)] == [f"m{character}"] * 6
    assert problems == []


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(ANY_TEXT, min_size=1, max_size=4))
def test_any_text_round_trips_property(tmp_path_factory: pytest.TempPathFactory,
                                       texts: list[str]) -> None:  # fmt: skip
    store = _store(tmp_path_factory.mktemp("property"))
    written = [
        {"kind": "compaction", "time": TIME, "archive": f"a{i}", "error": text,
         "extra": {"note": text, "texts": [text, text[::-1]]}}
        for i, text in enumerate(texts)
        if _clean(text) and _clean(text[::-1])
    ]  # fmt: skip
    for record in written:
        store.append_record(record)
        store.append_usage({**record, "kind": "model_call", "model": record["error"]})
    problems: list[str] = []
    assert store.records(problems) == written
    assert [r["model"] for r in store.usage_records(problems)] == [r["error"] for r in written]
    assert problems == []


def test_every_code_point_round_trips(tmp_path: Path) -> None:
    """Each of the 1,114,112 code points, in records of 4,096 consecutive ones (with a space
    after each: no surrogate pair, :data:`_PAIR`)."""
    store = _store(tmp_path)
    chunks = [" ".join(map(chr, range(start, start + 4096))) for start in range(0, 0x110000, 4096)]
    for number, chunk in enumerate(chunks):
        store.append_usage({"kind": "model_call", "time": TIME, "call": number, "model": chunk})
    problems: list[str] = []
    read = store.usage_records(problems)
    assert problems == []
    assert len(read) == len(chunks)
    changed = [r["call"] for r, chunk in zip(read, chunks, strict=True) if r["model"] != chunk]
    assert changed == [n for n, chunk in enumerate(chunks) if not _clean(chunk)]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=ANY_TEXT, cut=st.integers(min_value=1))
def test_a_line_torn_by_a_crash_is_still_reported_property(
    tmp_path_factory: pytest.TempPathFactory, text: str, cut: int
) -> None:
    folder = tmp_path_factory.mktemp("torn")
    store = _store(folder)
    first = {"kind": "compaction", "time": TIME, "archive": "a1", "error": "one\u2028two"}
    store.append_record(first)
    whole = json.dumps({"kind": "compaction", "time": TIME, "archive": "a2", "error": text},
                       ensure_ascii=False).encode("utf-8", "surrogatepass")  # fmt: skip
    torn = whole[: 1 + cut % (len(whole) - 1)]  # a crash stopped the write inside the line
    with open(store.paths.compactions, "ab") as handle:
        handle.write(torn)
    problems: list[str] = []
    assert store.records(problems) == [first]
    assert problems == ["compactions.jsonl line 2: not JSON (cut off by a crash?); skipped"]
    store.append_record({**first, "archive": "a3"})  # on a line of its own
    assert [r["archive"] for r in store.records()] == ["a1", "a3"]


# -- a bad line is a reported problem --------------------------------------------------------

NESTED = "[" * 100_000 + "]" * 100_000  # past what the JSON reader follows
DEEP = "[" * 900 + "]" * 900  # read, but deeper than any reader should walk


def _poisons(kind: str) -> dict[str, str]:
    """Hand-edited lines: each is a problem of its own file, never a crash."""

    def line(fields: str) -> str:
        return f'{{"kind": "{kind}", "time": "{TIME}", "agent": "{AGENT}", {fields}}}'

    return {
        "5000_digits": line(f'"tokens_before": {"9" * 5000}'),
        "5000_digits_alone": "9" * 5000,
        "nested_brackets": NESTED,
        "nested_in_a_field": line(f'"extra": {NESTED}'),
        "nested_900_in_a_field": line(f'"extra": {{"trigger": {DEEP}}}'),
        "string_counts": line(
            '"tokens_before": "many", "messages_archived": "3", "call": "two", '
            '"estimated_tokens": "lots", "input_tokens": "x", "latency_s": "slow", '
            '"cost_usd": "free", "context_length": "wide", "threshold": "high", "compacted": "yes"'
        ),
        "lists_for_objects": line(
            '"strategy": [1], "extra": [2], "archive": ["a"], "time": [3], "agent": {"a": 1}, '
            '"model": [4], "session_start": [5]'
        ),
        "objects_for_fields": line(
            '"extra": {"trigger": [1], "session_start": {}, "summary_budget": "x", "checks": 5}, '
            '"strategy": {"name": 7}'
        ),
        "bad_settings": line(
            '"strategy": {"name": "keep_recent", "keep_messages": -1}, "threshold": -2, '
            '"extra": {"trigger": {"fraction": 5, "tokens": "x"}}'
        ),
        "fields_missing": "{}",
        "kind_only": f'{{"kind": "{kind}"}}',
        "nan_and_infinity": line(
            '"tokens_before": NaN, "latency_s": Infinity, "cost_usd": -Infinity, '
            '"estimated_tokens": NaN, "input_tokens": Infinity, "extra": {"summary_budget": NaN}'
        ),
        "huge_floats": line(
            '"tokens_before": 1e999, "latency_s": 1e308, "cost_usd": -1e999, '
            '"context_length": 1e308, "estimated_tokens": 1e308, "input_tokens": 1e300, '
            '"call": 1e308, "threshold": 1e308'
        ),
        "huge_ints": line(
            f'"tokens_before": {"9" * 30}, "call": -{"9" * 30}, "input_tokens": {"9" * 4000}'
        ),
        "a_list": "[1, 2]",
        "null": "null",
        "torn": line('"archive": "cut')[:-1],
    }


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace with one Agent's run: several compactions and a usage line per call, the
    provider billing 20 % more input than memorylab estimates."""
    workspace = tmp_path_factory.mktemp("template")
    holder: dict[str, Agent] = {}

    def completion(model: str, messages: Sequence[Mapping[str, Any]], **_: Any) -> ChatReply:
        estimate = holder["agent"].short_memory.token_count()
        return ChatReply(content="Noted: the partition is fine.", model="gpt-4o-mini",
                         input_tokens=int(1.2 * estimate) + 1, output_tokens=7)  # fmt: skip

    ticks = iter(range(10**6))
    base = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
    agent = Agent(
        AGENT,
        model_name="gpt-4o-mini",
        context_length=1200,
        compression_threshold=0.8,
        summarizer_model="memorylab/extractive",
        workspace_dir=workspace,
        completion=completion,
        clock=lambda: base + timedelta(seconds=7 * next(ticks)),
        max_loops=1,
    )
    holder["agent"] = agent
    for i in range(24):
        agent.run(f"Step {i}: the table events_{i} has {1000 + 37 * i} rows. " + "Checked. " * 12)
    assert sum(e.ok for e in agent.compaction_events) >= 2
    store = agent.short_memory.store
    assert store is not None
    store.close()
    return workspace


def _readers(workspace: Path) -> dict[str, Callable[[], object]]:
    from memorylab.analysis import (
        calibration_df,
        compaction_costs_df,
        compaction_timing_df,
        compactions_df,
        fact_survival_df,
        lineage_df,
        memory_df,
        memory_df_with_problems,
        replay,
        run_settings,
        token_growth,
    )
    from memorylab.privacy import export_agent
    from memorylab.report import build_report

    folder = workspace / "agents" / AGENT

    def compact() -> object:
        conversation = Conversation(agent_name=AGENT, workspace_dir=workspace)
        conversation.add("User", "one more message")
        event = conversation.compact("summary after the bad line")
        assert event.ok and event.archive
        return event

    return {
        "compact": compact,
        "compactions_df": lambda: compactions_df(workspace),
        "memory_df": lambda: memory_df(workspace),
        "memory_df_with_problems": lambda: memory_df_with_problems(workspace),
        "calibration_df": lambda: calibration_df(workspace),
        "compaction_timing_df": lambda: compaction_timing_df(workspace),
        "lineage_df": lambda: lineage_df(workspace),
        "fact_survival_df": lambda: fact_survival_df(workspace, ["events_3 has 1111 rows"]),
        "compaction_costs_df": lambda: compaction_costs_df(workspace),
        "run_settings": lambda: run_settings(folder),
        "token_growth": lambda: token_growth(memory_df(folder)),
        "replay": lambda: replay(folder, progress=False),
        "report": lambda: build_report(workspace),
        "export": lambda: export_agent(AGENT, workspace, path=workspace.parent / "export.json"),
    }


@pytest.mark.parametrize("poison", sorted(_poisons("x")))
@pytest.mark.parametrize("file", ["compactions", "usage"])
def test_a_bad_line_is_a_reported_problem_never_a_crash(
    template: Path,
    isolated_workspace: Path,
    caplog: pytest.LogCaptureFixture,
    file: str,
    poison: str,
) -> None:
    shutil.copytree(template, isolated_workspace)
    paths = agent_paths(AGENT, isolated_workspace)
    target = paths.compactions if file == "compactions" else paths.usage
    kind = "compaction" if file == "compactions" else "model_call"
    before = target.read_bytes()
    lines = before.count(b"\n")
    with open(target, "ab") as handle:
        handle.write(_poisons(kind)[poison].encode() + (b"" if poison == "torn" else b"\n"))
    failures = {}
    with caplog.at_level(logging.WARNING, logger="memorylab"):
        for name, call in _readers(isolated_workspace).items():
            try:
                call()
            except Exception as error:  # every reader is run, then every failure is listed
                failures[name] = f"{type(error).__name__}: {str(error)[:200]}"
    assert failures == {}
    store = MemoryStore(paths.memory_md)
    read = store.records if file == "compactions" else store.usage_records
    problems: list[str] = []
    records = read(problems)[: lines + 1]  # compact() appended a record after the bad line
    assert len(records) in (lines, lines + 1)  # the bad line skipped, or read with its field(s)
    assert problems and all(p.startswith(f"{target.name} line {lines + 1}: ") for p in problems)
    assert f"{target.name} line {lines + 1}" in caplog.text  # reported (logged once)
    assert caplog.text.count(f"{target.name} line {lines + 1}") <= len(problems)
