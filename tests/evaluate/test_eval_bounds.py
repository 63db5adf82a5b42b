"""Evaluation you can trust: bounds, confidence intervals, grading as answers are written, public
benchmark formats, honest scorers, configurable readers, failures that say what happened."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from fakes import FakeOpenAIServer, FakeRequest, Reply
from memorylab import LiteLLMSummarizer
from memorylab.errors import InvalidSetting
from memorylab.evaluate import (
    BASELINES,
    BOUNDS,
    DEFAULT_SCORERS,
    LOCOMO_CATEGORIES,
    READER_PROMPT,
    Case,
    ProbeQAScorer,
    cases_from_locomo,
    cases_from_longmemeval,
    cases_from_transcripts,
    compare_summarizers,
    fact_survival_table,
    get_scorer,
    grade_answer,
    markdown_table,
    normalize_answer,
    summary_table,
)
from memorylab.evaluate._cli import main
from memorylab.evaluate._engine import ComparisonResult
from memorylab.evaluate._tables import bootstrap_interval
from memorylab.llm import RetryPolicy

DATA = Path(__file__).parent / "data"
LOCOMO = DATA / "locomo_sample.json"
LONGMEMEVAL = DATA / "longmemeval_sample.json"
QUALITY = ["fact_recall.overall", "probe_qa.exact", "probe_qa.fuzzy"]


@pytest.fixture(scope="module")
def bundled() -> ComparisonResult:
    cases = cases_from_transcripts(split="session")
    return compare_summarizers(cases, [*BOUNDS, *BASELINES], progress=False, cache_dir=None,
                               max_tokens=2048)  # fmt: skip


# --------------------------------------------------------------------------- bounds


def test_every_default_scorer_ranks_the_ceiling_clearly_above_the_floor(bundled: ComparisonResult) -> None:
    marks = summary_table(bundled)
    table = marks.frame
    assert marks.bounds == {"ceiling": "memorylab/full", "floor": "memorylab/none"}
    quality = [c for c in table.columns if c.startswith(("fact_recall.", "probe_qa."))
               and not c.endswith((".lo", ".hi"))]  # fmt: skip
    assert {"fact_recall.overall", "probe_qa.exact", "probe_qa.fuzzy"} <= set(quality)
    for column in quality:
        assert table.loc["memorylab/full", f"{column}.lo"] > table.loc["memorylab/none", f"{column}.hi"], column
    assert marks.not_measuring == {}
    assert table.loc["memorylab/full", "fact_recall.overall"] == 1.0
    assert table.loc["memorylab/none", "probe_qa.exact"] == 0.0
    # the cost-like scorers get no interval and no bound check
    assert "compression.ratio.lo" not in table.columns and "cost.usd.lo" not in table.columns


def test_a_scorer_that_does_not_separate_the_bounds_is_said_to_measure_nothing() -> None:
    cases = cases_from_transcripts(split="session")[:4]

    def constant(sample: Any) -> float:
        return 0.5

    result = compare_summarizers(cases, [*BOUNDS, "memorylab/truncate"], ["fact_recall", constant],
                                 progress=False, cache_dir=None)  # fmt: skip
    marks = summary_table(result)
    assert list(marks.not_measuring) == ["constant.value"]
    assert "is not clearly above the floor" in marks.not_measuring["constant.value"]
    text = markdown_table(marks)
    assert "| constant.value † |" in text.splitlines()[0]
    assert "† constant.value measures nothing on these cases" in text
    assert "memorylab/full (ceiling)" in text and "memorylab/none (floor)" in text


def test_intervals_are_seeded_bootstrap_and_deterministic(bundled: ComparisonResult) -> None:
    first = summary_table(bundled, QUALITY).frame
    again = summary_table(bundled, QUALITY).frame
    pd.testing.assert_frame_equal(first, again)
    for column in QUALITY:
        for label in first.index:
            low, value, high = (first.loc[label, f"{column}{s}"] for s in (".lo", "", ".hi"))
            assert low <= value <= high
    other = summary_table(bundled, QUALITY, seed=1).frame
    assert not other.equals(first)  # another seed, other draws
    assert bootstrap_interval([1.0] * 5) == (1.0, 1.0)
    assert all(math.isnan(x) for x in bootstrap_interval([]))


def test_differences_inside_the_interval_are_marked_not_significant() -> None:
    cases = cases_from_transcripts(split="session")[:6]
    twins = {"a": "memorylab/truncate", "b": "memorylab/truncate", "best": "memorylab/extractive"}
    result = compare_summarizers(cases, twins, ["fact_recall"], progress=False, cache_dir=None,
                                 max_tokens=512)  # fmt: skip
    marks = summary_table(result, ["fact_recall.overall"])
    table = marks.frame
    means = table["fact_recall.overall"]
    assert means["best"] > means["a"] == means["b"]
    tied = marks.tied.get("fact_recall.overall")
    assert tied is None or tied[0] == "best"
    # two identical summarizers are always tied with each other when one of them is the best
    result2 = compare_summarizers(cases, {"a": "memorylab/truncate", "b": "memorylab/truncate"},
                                  ["fact_recall"], progress=False, cache_dir=None)  # fmt: skip
    pair_marks = summary_table(result2, ["fact_recall.overall"])
    assert pair_marks.tied["fact_recall.overall"] == ["a", "b"]
    assert "≈" in markdown_table(pair_marks).splitlines()[3]


def test_plots_draw_bounds_intervals_and_ties(bundled: ComparisonResult) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from memorylab.evaluate import plot_cost_quality, plot_quality

    fig, (left, right) = plt.subplots(1, 2)
    plot_quality(bundled, ax=left)
    labels = [t.get_text() for t in left.get_legend().get_texts()]
    assert "memorylab/full (ceiling)" in labels and "memorylab/none (floor)" in labels
    from matplotlib.container import BarContainer

    bars = [c for c in left.containers if isinstance(c, BarContainer)]
    assert len(bars) == 3  # one bar group per summarizer; the bounds are lines
    plot_cost_quality(bundled, ax=right)
    assert "memorylab/full (ceiling)" in [t.get_text() for t in right.get_legend().get_texts()]
    plt.close(fig)


# --------------------------------------------------------------------------- honest scorers


def test_fact_recall_on_extracted_facts_is_flagged_biased_for_the_extractive_summarizer() -> None:
    bare = [Case(c.id, c.messages) for c in cases_from_transcripts(split="session")[:3]]
    result = compare_summarizers(bare, BASELINES, ["fact_recall"], progress=False, cache_dir=None)
    df = result.frame
    flagged = df[df.flag == "biased"]
    assert set(flagged.summarizer) == {"memorylab/extractive"}
    assert flagged.explanation.str.contains("biased").all()
    marks = summary_table(result, ["fact_recall.overall"])
    assert marks.biased == {"fact_recall.overall": ["memorylab/extractive"]}
    text = markdown_table(marks)
    assert "* fact_recall.overall is biased for memorylab/extractive" in text
    # with planted facts (the ground truth) nothing is flagged
    planted = compare_summarizers(cases_from_transcripts(split="session")[:3], BASELINES,
                                  ["fact_recall"], progress=False, cache_dir=None)  # fmt: skip
    assert planted.frame.flag.isna().all()


def test_the_lexical_baseline_is_called_so() -> None:
    scorer = get_scorer("probe_qa")
    case = cases_from_transcripts(split="session")[0]
    from memorylab.compress import Summary
    from memorylab.evaluate import Sample

    score = scorer.score(Sample(case, Summary("nothing", model="x"), "x"))["exact"]
    assert score.metadata["reader"] == "memorylab/lookup (lexical baseline)"
    assert "lexical baseline" in ProbeQAScorer.__doc__  # type: ignore[operator]


# --------------------------------------------------------------------------- grading


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("May 7, 2023", "7 May 2023"),
        ("2023-05-07", "7 May 2023"),
        ("three", "3"),
        ("It was on Sunday, the 7th of May, 2023.", "2023/05/07"),
        ("twenty-five people", "25"),
        ("The Ridge Loop!", "ridge loop"),
        ("in May 2023", "May, 2023"),
        ("3rd", "third"),
        ("12,000 rows", "12000 rows"),
    ],
)
def test_grading_matches_how_answers_are_written(answer: str, expected: str) -> None:
    assert grade_answer(answer, expected)[:2] == (True, True)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [("8 May 2023", "7 May 2023"), ("four", "3"), ("UNKNOWN", "3"), ("2023-05", "2023-05-07")],
)
def test_grading_stays_strict_on_values(answer: str, expected: str) -> None:
    assert grade_answer(answer, expected)[0] is False


def test_normalize_answer_is_public_and_documented() -> None:
    assert normalize_answer("The 7th of May, 2023") == "2023-05-07"
    import memorylab.evaluate

    assert "normalize_answer" in memorylab.evaluate.__all__


# --------------------------------------------------------------------------- benchmarks


def test_locomo_cases_per_session_and_per_conversation() -> None:
    sessions = cases_from_locomo(LOCOMO)
    assert [c.id for c in sessions] == ["demo-1#s1", "demo-1#s2"]
    first = sessions[0]
    assert first.messages[0] == {
        "role": "Noor",
        "content": "Hi Tomas! I finally signed up for the pottery class at the community centre yesterday.",
        "timestamp": "2024-03-12T16:05:00",
    }
    assert "[shares an image: a photo of a small blue ceramic bowl" in first.messages[4]["content"]
    assert "[2024-03-12T16:05:00] Noor: Hi Tomas!" in first.history_text  # what a reader sees
    probes = {p.id: p for p in first.probes}
    assert probes["demo-1-q1"].category == "2" and LOCOMO_CATEGORIES["2"] == "temporal"
    assert probes["demo-1-q5"].answer == "3"  # an int answer, as text
    # a question with evidence in both sessions belongs to no session case, only the whole one
    assert all(p.id != "demo-1-q8" for c in sessions for p in c.probes)
    [whole] = cases_from_locomo(LOCOMO, split="conversation")
    assert len(whole.messages) == 16 and len(whole.probes) == 11
    assert whole.metadata["unanswered"] == 1  # the adversarial question has no answer
    with pytest.raises(InvalidSetting, match="split"):
        cases_from_locomo(LOCOMO, split="turn")  # type: ignore[arg-type]


def test_the_same_comparison_runs_on_a_locomo_fixture() -> None:
    cases = cases_from_locomo(LOCOMO)
    result = compare_summarizers(cases, [*BOUNDS, *BASELINES], progress=False, cache_dir=None,
                                 max_tokens=64)  # fmt: skip
    df = result.frame
    assert df.error.isna().all()  # the floor's empty summary is a valid output
    marks = summary_table(result)
    table = marks.frame
    recall = df[(df.scorer == "fact_recall") & (df.metric == "overall")]
    assert set(recall.explanation.str.len() > 0)
    full = table.loc["memorylab/full"]
    # reference answers are the ground truth: the ceiling keeps every one the history holds
    assert full["fact_recall.overall"] == 1.0
    assert table.loc["memorylab/none", "fact_recall.overall"] == 0.0
    assert full["probe_qa.fuzzy"] > table.loc["memorylab/none", "probe_qa.fuzzy"]
    sources = {r.split("source")[0] for r in recall.explanation}
    assert sources


def test_longmemeval_cases() -> None:
    cases = cases_from_longmemeval(LONGMEMEVAL)
    assert [c.id for c in cases] == ["demo-lme-1", "demo-lme-2"]
    probe = cases[0].probes[0]
    assert (probe.answer, probe.category, probe.asked_at) == (
        "Ridge Loop", "single-session-user", "2024-06-02T09:15:00")  # fmt: skip
    assert cases[0].messages[0]["timestamp"] == "2024-05-20T18:40:00"
    oracle = cases_from_longmemeval(LONGMEMEVAL, sessions="evidence")
    assert len(oracle[0].messages) == 2
    asked: list[str] = []

    def reader(question: str, summary: str) -> str:
        asked.append(question)
        return "Ridge Loop"

    scores = ProbeQAScorer(reader).score(_sample(cases[0], "anything"))
    assert scores["exact"].value == 1.0
    assert asked == [f"{probe.question} (asked on 2024-06-02T09:15:00)"]


def test_bad_benchmark_files_say_what_is_wrong(tmp_path: Path) -> None:
    from memorylab.errors import MemoryFormatError, StoreError

    with pytest.raises(StoreError, match="does not exist"):
        cases_from_locomo(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text('[{"sample_id": "x"}]')
    with pytest.raises(MemoryFormatError, match="no 'conversation' object"):
        cases_from_locomo(bad)
    with pytest.raises(MemoryFormatError, match="haystack_sessions"):
        cases_from_longmemeval(bad)
    bad.write_text("{not json")
    with pytest.raises(MemoryFormatError, match="not a JSON file"):
        cases_from_locomo(bad)


def test_the_command_reads_benchmark_files(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(LOCOMO), "--no-progress", "--no-cache", "--split", "session"]) == 0
    out = capsys.readouterr()
    assert "| memorylab/full (ceiling) |" in out.out and "2 cases x 5 summarizers" in out.err
    assert main([str(LONGMEMEVAL), "--no-progress", "--no-cache", "-s", "memorylab/full"]) == 0


# --------------------------------------------------------------------------- configurable


def _sample(case: Case, text: str) -> Any:
    from memorylab.compress import Summary
    from memorylab.evaluate import Sample

    return Sample(case, Summary(text, model="demo"), "demo")


def test_two_readers_score_in_one_run_under_names_of_their_own(tmp_path: Path) -> None:
    case = cases_from_locomo(LOCOMO)[0]
    with FakeOpenAIServer("Ines Duarte") as server:
        model = get_scorer("probe_qa", name="qa_model", reader="openai/reader",
                           llm_args={"api_base": server.base_url})  # fmt: skip
        result = compare_summarizers([case], ["memorylab/full"], ["probe_qa", model],
                                     progress=False, cache_dir=tmp_path / "cache")  # fmt: skip
        df = result.frame
    assert {"probe_qa", "qa_model"} <= set(df.scorer)
    assert model.name == "qa_model" and get_scorer("probe_qa").name == "probe_qa"
    with pytest.raises(InvalidSetting, match="name='probe_qa_2'"):
        compare_summarizers([case], ["memorylab/full"], ["probe_qa", "probe_qa"], progress=False)
    with pytest.raises(InvalidSetting, match=r"without '\.'"):
        get_scorer("probe_qa", name="a.b")


def test_reader_and_judge_prompts_are_parameters(tmp_path: Path) -> None:
    case = cases_from_locomo(LOCOMO)[0]
    seen: list[str] = []

    def answer(request: FakeRequest) -> Reply:
        seen.append(request.body["messages"][-1]["content"])
        if "RATE" in seen[-1]:
            return Reply('{"faithfulness": 4, "coverage": 4, "usefulness": 4}')
        return Reply("blue")

    with FakeOpenAIServer(answer) as server:
        args = {"api_base": server.base_url}
        reader = ProbeQAScorer("openai/r", llm_args=args, prompt="Q={question}\nNOTES={summary}",
                               system_prompt="Be brief.")  # fmt: skip
        judge = get_scorer("judge", model="openai/j", llm_args=args,
                           prompt="RATE {summary} AGAINST {transcript}")  # fmt: skip
        result = compare_summarizers([case], ["memorylab/full"], [reader, judge], progress=False,
                                     cache_dir=None)  # fmt: skip
        df = result.frame
    assert df.error.isna().all()
    assert any(s.startswith("Q=") for s in seen) and any(s.startswith("RATE ") for s in seen)
    assert "an AI agent's earlier work" not in READER_PROMPT
    with pytest.raises(InvalidSetting, match=r"\{question\}"):
        ProbeQAScorer("openai/r", prompt="no fields {summary}")


def test_two_local_servers_under_one_alias_do_not_share_cached_answers(tmp_path: Path) -> None:
    case = cases_from_locomo(LOCOMO)[0]
    cache = tmp_path / "cache"
    results = []
    # Two models (llama-cpp-python's /v1/models says each one's GGUF path): the cache keys a
    # server by what it says it serves, so a model alias shared by the two is no one model.
    with (
        FakeOpenAIServer("Ines Duarte", model="/models/qwen.gguf") as one,
        FakeOpenAIServer("UNKNOWN", model="/models/smol.gguf") as two,
    ):
        for server in (one, two):
            reader = get_scorer("probe_qa", reader="openai/local",
                                llm_args={"api_base": server.base_url})  # fmt: skip
            result = compare_summarizers([case], ["memorylab/full"], [reader], progress=False,
                                         cache_dir=cache)  # fmt: skip
            df = result.frame
            results.append(df)
        assert one.request_count == len(case.probes) == two.request_count
    exact = [d[d.metric == "exact"].value.iloc[0] for d in results]
    assert exact[0] > exact[1] == 0.0


def test_an_llm_grade_beside_exact_and_fuzzy() -> None:
    case = cases_from_locomo(LOCOMO)[0]

    def grader(request: FakeRequest) -> Reply:
        content = request.body["messages"][-1]["content"]
        if content.startswith("Question:"):
            return Reply("CORRECT" if "Reference answer: 11 March 2024" in content else "WRONG")
        return Reply("the day before 12 March 2024")  # the reader resolved "yesterday"

    with FakeOpenAIServer(grader) as server:
        args = {"api_base": server.base_url}
        scorer = ProbeQAScorer("openai/reader", llm_args=args, grader="openai/grader",
                               grader_args=args)  # fmt: skip
        scores = scorer.score(_sample(case, case.history_text))
    assert scores["llm"].value == 1 / len(case.probes)
    assert scores["exact"].value == 0.0  # the grader accepts what exact matching cannot
    assert scores["llm"].metadata["items"][0] == 1.0


# --------------------------------------------------------------------------- failures


def test_the_command_fails_when_every_summary_of_a_summarizer_failed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main([str(LOCOMO), "-s", "gpt-4o-mini", "-s", "memorylab/truncate", "--no-progress",
                 "--no-cache", "--split", "session"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1
    assert "every summary of gpt-4o-mini failed; the first error: ModelAuthError" in err
    assert "Set OPENAI_API_KEY in the environment" in err
    assert "Gave up" not in err  # not retried


def test_the_local_model_name_needs_the_flag(capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path) -> None:  # fmt: skip
    assert main([str(LOCOMO), "-s", "local", "--no-progress"]) == 2
    assert "needs --local-model PATH.gguf" in capsys.readouterr().err
    assert main([str(LOCOMO), "--local-model", str(tmp_path / "m.bin"), "--no-progress"]) == 2
    assert "is not a GGUF model file" in capsys.readouterr().err


def test_fact_survival_table_has_intervals_on_request(bundled: ComparisonResult) -> None:
    marks = fact_survival_table(bundled, ci=True)
    table = marks.frame
    assert {"overall", "overall.lo", "overall.hi", "facts"} <= set(table.columns)
    assert table.loc["memorylab/full", "overall"] == 1.0
    assert "memorylab/full (ceiling)" in markdown_table(marks)


def test_a_summary_over_budget_is_recorded_as_truncated(tmp_path: Path) -> None:
    case = cases_from_locomo(LOCOMO)[0]
    with FakeOpenAIServer("word " * 5000) as server:
        model = LiteLLMSummarizer("openai/m", llm_args={"api_base": server.base_url},
                                  retry=RetryPolicy(retries=0), max_tokens=100)  # fmt: skip
        summaries = compare_summarizers([case], [model], ["compression"], progress=False,
                                        cache_dir=None).summaries  # fmt: skip
    assert bool(summaries.truncated.iloc[0])
    assert "cut to the summary budget" in summaries.text.iloc[0]


def test_default_scorers_unchanged() -> None:
    assert DEFAULT_SCORERS == ("compression", "latency", "cost", "fact_recall", "probe_qa")
