"""Recall as a memory condition (issue 39): ``compare_summarizers(recall=(0, k))`` compares every
memory once per depth, ``"<memory> + recall k"`` read with the k best-matching messages that left
it; each memory is made once; the reader's prompt puts what its probes share first, so a server
with a prompt cache reads each memory once and then only each probe's recalled messages and
question."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from fakes import FakeOpenAIServer, FakeRequest, PromptCacheServer, Reply
from memorylab.compress import BaseSummarizer, Summary
from memorylab.errors import InvalidSetting
from memorylab.evaluate import (
    ProbeQAScorer,
    cases_from_locomo,
    cases_from_transcripts,
    compare_strategies,
    compare_summarizers,
    summary_table,
)

LOCOMO = Path(__file__).parent / "data" / "locomo_sample.json"


def _last_prompt(request: FakeRequest) -> str:
    return str(request.body["messages"][-1]["content"])


def test_every_memory_is_compared_once_per_recall_depth_and_reads_as_the_scorer_side_form() -> None:
    cases = cases_from_transcripts(split="session")[:4]
    memories = ["memorylab/extractive", "memorylab/none"]
    result = compare_summarizers(cases, memories, ["probe_qa"], recall=(0, 5), progress=False,
                                 cache_dir=None)  # fmt: skip
    labels = list(dict.fromkeys(result.frame["summarizer"]))
    assert labels == [*memories, *(f"{m} + recall 5" for m in memories)]
    texts = result.summaries.set_index(["case", "summarizer"])["text"]
    for case in cases:  # the same memory at every depth
        assert texts[case.id, "memorylab/extractive + recall 5"] == texts[case.id, memories[0]]
    scorer_side = compare_summarizers(cases, memories, [ProbeQAScorer(recall_k=5)],
                                      progress=False, cache_dir=None)  # fmt: skip
    table = summary_table(result, ["probe_qa.exact"], ci=False).frame["probe_qa.exact"]
    scorer_table = summary_table(scorer_side, ["probe_qa_recall.exact"], ci=False).frame
    for memory in memories:
        assert table[f"{memory} + recall 5"] == scorer_table.loc[memory, "probe_qa_recall.exact"]
    assert table["memorylab/none"] == 0.0 and table["memorylab/none + recall 5"] > 0.1
    assert result.bounds == {"memorylab/none": "floor"}  # recall alone is not the floor


def test_the_summary_of_a_recall_condition_says_its_depth() -> None:
    seen: dict[str, int] = {}

    def depth(sample: Any) -> float:
        seen[sample.summarizer] = getattr(sample.summary, "recall_k", 0)
        return 1.0

    depth.__name__ = "depth"
    compare_summarizers(cases_from_transcripts(split="session")[:1], ["memorylab/truncate"],
                        [depth], recall=[0, 3], progress=False, cache_dir=None)  # fmt: skip
    assert seen == {"memorylab/truncate": 0, "memorylab/truncate + recall 3": 3}


class _Counting(BaseSummarizer):
    """A local summarizer that counts its summaries (and takes a moment over each, so the
    depths of one case ask for it at the same time)."""

    name = "counting"

    def __init__(self) -> None:
        self.made = 0

    def summarize(self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None
                  ) -> Summary:  # fmt: skip
        import time

        self.made += 1
        time.sleep(0.05)
        return Summary(text=str(messages[0]["content"]), model="counting")


def test_each_memory_is_made_once_for_all_its_depths() -> None:
    cases = cases_from_transcripts(split="session")[:3]
    counting = _Counting()
    result = compare_summarizers(cases, {"mine": counting}, ["probe_qa"], recall=(0, 2, 5),
                                 progress=False, cache_dir=None)  # fmt: skip
    assert counting.made == len(cases)
    assert set(result.frame["summarizer"]) == {"mine", "mine + recall 2", "mine + recall 5"}
    requests: list[str] = []

    def summarizer_model(request: FakeRequest) -> Reply:
        requests.append(_last_prompt(request))
        return Reply("The user works on a checkout bug.")

    with FakeOpenAIServer(summarizer_model) as server:  # a model's summary, with no cache
        args = {"llm_args": {"api_base": server.base_url}}
        sent = []
        for recall in ((0,), (0, 4)):
            compare_summarizers(cases, ["openai/summarizer"], ["compression"], recall=recall,
                                summarizer_args=args, progress=False, cache_dir=None)  # fmt: skip
            sent.append(len(requests))
    assert sent[1] == 2 * sent[0]  # the second run's requests: as many as the first's


def test_compare_strategies_takes_recall_as_a_condition() -> None:
    cases = cases_from_transcripts(split="session")[:2]
    compared = compare_strategies(cases, ["summary"], ["probe_qa"], context_length=4096,
                                  recall=(0, 5), progress=False, cache_dir=None)  # fmt: skip
    labels = list(dict.fromkeys(compared.comparison.frame["summarizer"]))
    assert labels == ["summary()", "memorylab/full", "memorylab/none", "summary() + recall 5",
                      "memorylab/full + recall 5", "memorylab/none + recall 5"]  # fmt: skip


@pytest.mark.parametrize(
    ("recall", "match"),
    [
        (5, r"recall must be a list of recall depths"),
        ((), r"recall needs at least one depth"),
        ((0, 5, 5), r"recall repeats the depth 5"),
        ((0, -1), r"recall\[1\] must be an int >= 0"),
        (("5",), r"recall\[0\] must be an int >= 0"),
        ((True,), r"recall\[0\] must be an int >= 0"),
    ],
)
def test_a_bad_recall_is_refused_naming_it(recall: Any, match: str) -> None:
    with pytest.raises(InvalidSetting, match=match):
        compare_summarizers(cases_from_transcripts(split="session")[:1], ["memorylab/none"],
                            ["probe_qa"], recall=recall, progress=False, cache_dir=None)  # fmt: skip


def test_a_label_that_collides_with_a_recall_condition_is_refused() -> None:
    with pytest.raises(InvalidSetting, match=r"'a \+ recall 5' is named twice"):
        compare_summarizers(cases_from_transcripts(split="session")[:1],
                            {"a": "memorylab/none", "a + recall 5": "memorylab/truncate"},
                            ["probe_qa"], recall=(0, 5), progress=False, cache_dir=None)  # fmt: skip


def test_the_prompt_puts_what_the_probes_share_first_and_the_question_last() -> None:
    prompts: list[str] = []

    def reader(request: FakeRequest) -> Reply:
        prompts.append(_last_prompt(request))
        return Reply("UNKNOWN")

    cases = cases_from_locomo(LOCOMO, split="session")
    with FakeOpenAIServer(reader) as server:
        args = {"api_base": server.base_url}
        compare_summarizers(cases, ["memorylab/none"], [ProbeQAScorer("openai/r", llm_args=args)],
                            recall=(0, 2), progress=False, cache_dir=None)  # fmt: skip
        recalled = [p for p in prompts if "<recalled>" in p]
        plain = [p for p in prompts if "<recalled>" not in p]
        assert len(recalled) == len(plain) == sum(len(c.probes) for c in cases)
        for prompt in recalled:  # notes, instructions, the recalled block, the question
            notes, instructions = prompt.index("</notes>"), prompt.index("Answer the question")
            block, question = prompt.index("<recalled>\n[Recalled from archives]"), prompt.index(
                "</recalled>\n\nQuestion: ")  # fmt: skip
            assert notes < instructions < block < question
            assert prompt.rindex("Question: ") > question
        shared = {p[: p.index("<recalled>")] for p in recalled}
        assert shared == {p[: p.index("Question: ")] for p in plain}  # one prefix per memory

        prompts.clear()  # a template of one's own without {recalled}: after the memory, as before
        own = ProbeQAScorer("openai/r", llm_args=args, prompt="NOTES={summary}\nQ={question}")
        compare_summarizers(cases, ["memorylab/none"], [own], recall=(2,), progress=False,
                            cache_dir=None)  # fmt: skip
    assert all(p.startswith("NOTES=\n\n[Recalled from archives]") for p in prompts)
    assert not any("<recalled>" in p for p in prompts)


def _probe_cost(cache: PromptCacheServer) -> tuple[int, int]:
    """``(processed, ideal)``: the tokens the server processed, and one read of each memory
    (the system prompt, the notes, the instructions) + each probe's recalled block, question
    and answer (a word)."""
    memories: dict[tuple[str, ...], int] = {}
    own = 0
    for words in cache.prompts:
        question = max(i for i, word in enumerate(words) if word == "Question:")
        start, end = question, question
        if "<recalled>" in words:
            start, end = words.index("<recalled>"), words.index("</recalled>") + 1
        elif "[Recalled" in words:  # the former order: recalled inside the notes
            start = words.index("[Recalled")
            end = max(i for i, word in enumerate(words[:question]) if word == "</notes>")
        memory = tuple(words[:start] + words[end:question])
        memories[memory] = len(memory)
        own += (end - start) + (len(words) - question) + 1
    return cache.processed, sum(memories.values()) + own


@pytest.mark.parametrize(
    ("cases", "k", "form"),
    [
        ("transcripts", 1, "condition"),
        ("transcripts", 1, "scorer"),
        ("transcripts", 5, "condition"),
        ("locomo", 2, "condition"),
    ],
)
def test_recall_probes_of_one_memory_read_it_once(cases: str, k: int, form: str) -> None:
    """Recall probes of one memory cost at most 1.3x (one read of the memory + N x (recalled
    block + question + answer)) in tokens a server with a prompt cache processes. Before, the
    recalled block sat between the memory and the instructions, so every probe read the
    instructions again: 41,180 words processed for an ideal 30,793 (1.34x) on the bundled
    transcripts at k=1; now 0.93x."""
    chosen = (cases_from_transcripts(split="session") if cases == "transcripts"
              else cases_from_locomo(LOCOMO, split="session"))  # fmt: skip
    cache = PromptCacheServer()
    with FakeOpenAIServer(cache) as server:
        args = {"api_base": server.base_url}
        memories = ["memorylab/extractive", "memorylab/none"]
        if form == "condition":
            compare_summarizers(chosen, memories, [ProbeQAScorer("openai/r", llm_args=args)],
                                recall=(k,), progress=False, cache_dir=None,
                                concurrency=1)  # fmt: skip
        else:
            reader = ProbeQAScorer("openai/r", llm_args=args, recall_k=k)
            compare_summarizers(chosen, memories, [reader], progress=False, cache_dir=None,
                                concurrency=1)  # fmt: skip
    processed, ideal = _probe_cost(cache)
    assert cache.requests == 2 * sum(len(c.probes) for c in chosen)
    assert processed <= 1.3 * ideal, (processed, ideal)
    assert sum("<recalled>" in " ".join(p) for p in cache.prompts) >= cache.requests / 2


def test_the_full_history_with_recall_sends_no_request_beyond_the_full_historys(
    tmp_path: Path,
) -> None:
    """Nothing left the full history, so its recall condition asks the same questions of the
    same prompts: cache hits, or requests awaited while on their way, never sent again."""
    cases = cases_from_locomo(LOCOMO, split="session")
    sent: dict[tuple[int, ...], list[str]] = {}
    results = {}
    for recall in ((0,), (0, 3)):
        cache = PromptCacheServer("Caroline")
        with FakeOpenAIServer(cache) as server:
            reader = ProbeQAScorer("openai/r", llm_args={"api_base": server.base_url})
            results[recall] = compare_summarizers(
                cases, ["memorylab/full", "memorylab/none"], [reader], recall=recall,
                progress=False, cache_dir=tmp_path / str(len(recall)),
            )  # fmt: skip
        sent[recall] = [" ".join(words) for words in cache.prompts]
    assert len(sent[(0, 3)]) == len(set(sent[(0, 3)]))  # no prompt sent twice
    beyond = set(sent[(0, 3)]) - set(sent[(0,)])
    assert beyond and all("<recalled>" in prompt for prompt in beyond)  # recall alone's only
    plain, with_recall = results[(0,)], results[(0, 3)]
    answers = with_recall.answers.set_index(["summarizer", "probe"])["answer"]
    full = plain.answers[plain.answers.summarizer == "memorylab/full"].set_index("probe")["answer"]
    for probe, answer in full.items():
        assert answers["memorylab/full + recall 3", probe] == answer
    assert with_recall.bounds == {"memorylab/full": "ceiling", "memorylab/none": "floor"}
    table = summary_table(with_recall, ["probe_qa.exact"]).frame["probe_qa.exact"]
    assert table["memorylab/full + recall 3"] == table["memorylab/full"]
    assert not math.isnan(table["memorylab/none + recall 3"])
