"""ContextCompressor: when it fires, what it records, and that failures never touch memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from memorylab.compress._compressor import ContextCompressor
from memorylab.compress._policy import Backoff
from memorylab.compress._scripted import ScriptedSummarizer
from memorylab.compress._tokens import get_token_counter
from memorylab.errors import CompressionFailed, InvalidSetting, ModelTimeout
from memorylab.memory._conversation import Conversation
from memorylab.memory._store import read_memory

COUNTER = get_token_counter("gpt-4o")


def _conversation(n: int = 20, **kwargs: object) -> Conversation:
    conv = Conversation(
        agent_name="Compressed", token_counter=COUNTER, system_prompt="sp", **kwargs
    )  # type: ignore[arg-type]
    conv.add("User", "ORIGINAL TASK: build the ETL job in /srv/etl/job.py")
    for i in range(n):
        conv.add("Compressed", f"step {i}: processed batch {i} of 400 rows")
    return conv


def _snapshot_files(folder: Path) -> dict[Path, bytes]:
    return {
        p: p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and ".lock" not in p.name
    }


def test_token_count_is_incremental_and_counts_the_request() -> None:
    conv = _conversation(5)
    total = conv.token_count()
    messages = conv.to_messages()  # OpenAI's count: 3 a message, its role and content; 3 more
    assert total == sum(3 + COUNTER(m["role"]) + COUNTER(m["content"]) for m in messages) + 3
    conv.add("User", "one more message")
    assert conv.token_count() > total
    assert conv.token_count() == conv.token_count()  # nothing new: same total


def test_fires_at_the_threshold_and_records_everything() -> None:
    conv = _conversation()
    tokens = conv.token_count()
    summarizer = ScriptedSummarizer(["Task: ETL job in /srv/etl/job.py; 20 batches done."])
    compressor = ContextCompressor(threshold=tokens, summarizer=summarizer)
    assert compressor.compress(conv, context_length=tokens + 1000) is not None
    event = compressor.events[-1]
    assert event.ok and event.tokens_before == tokens and event.threshold == tokens
    assert event.tokens_after is not None and event.tokens_after < tokens
    assert event.summary_tokens and event.summarizer_model == "memorylab/scripted"
    assert event.context_length == tokens + 1000 and event.latency_s is not None
    record = conv.store.records()[-1]  # type: ignore[union-attr]
    assert record["tokens_before"] == tokens and record["archive"] == event.archive
    assert conv.token_count() == event.tokens_after
    # the history is one turn: its task and newest step are kept, the summarizer saw the rest
    assert [m["content"][:7] for m in summarizer.calls[0][:1]] == ["step 0:"]
    assert len(summarizer.calls[0]) == 19
    assert record["extra"]["keep_turn"] is True and record["extra"]["kept_turn"] == 2
    kept = read_memory(conv.memory_md_path).messages[1:]  # type: ignore[arg-type]
    assert [m.content[:14] for m in kept] == ["ORIGINAL TASK:", "step 19: proce"]


def test_below_the_threshold_nothing_happens() -> None:
    conv = _conversation()
    compressor = ContextCompressor(threshold=0.9, summarizer=ScriptedSummarizer())
    assert compressor.compress(conv, context_length=10 * conv.token_count()) is None
    assert compressor.events == []


@pytest.mark.parametrize("bad", [0, -1, 1.5, float("nan"), True, "0.9", None])
def test_threshold_validation(bad: object) -> None:
    with pytest.raises(InvalidSetting):
        ContextCompressor(threshold=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("summarizer", "error_name"),
    [
        (ScriptedSummarizer([None]), "EmptySummary"),
        (ScriptedSummarizer(["   "]), "EmptySummary"),
        (ScriptedSummarizer(fail_on=[0], error=ModelTimeout), "ModelTimeout"),
        (
            ScriptedSummarizer(fail_on=[0], error=RuntimeError("bug in a custom summarizer")),
            "RuntimeError",
        ),
    ],
    ids=["none", "blank", "timeout", "custom-exception"],
)
def test_a_failure_leaves_memory_exactly_as_it_was(
    summarizer: ScriptedSummarizer, error_name: str
) -> None:
    conv = _conversation()
    folder = conv.memory_md_path.parent  # type: ignore[union-attr]
    files = _snapshot_files(folder)
    history = [dict(e) for e in conv.conversation_history]
    compressor = ContextCompressor(threshold=1, summarizer=summarizer)
    event = compressor.compress(conv, context_length=100_000)
    assert event is not None and not event.ok and event.kind == "failed"
    assert event.error is not None and event.error.startswith(error_name)
    assert _snapshot_files(folder) == files
    assert conv.conversation_history == history


def test_failures_back_off_and_then_surface() -> None:
    conv = _conversation()
    summarizer = ScriptedSummarizer(fail_on=range(100))
    compressor = ContextCompressor(
        threshold=1, summarizer=summarizer, backoff=Backoff(base=1, factor=2, cap=8, max_attempts=3)
    )
    outcomes = []
    with pytest.raises(CompressionFailed, match="3 times in a row; memory was left unchanged"):
        for _ in range(20):
            event = compressor.compress(conv, context_length=10**6)
            outcomes.append("skip" if event is None else "fail")
    # attempt, skip 1 check, attempt, skip 2 checks, attempt -> raise
    assert outcomes == ["fail", "skip", "fail", "skip", "skip"]
    assert len(summarizer.calls) == 3


def test_success_resets_the_failure_count() -> None:
    conv = _conversation()
    summarizer = ScriptedSummarizer(["ok summary"], fail_on=[0])
    compressor = ContextCompressor(threshold=1, summarizer=summarizer, backoff=Backoff(base=1))
    assert not compressor.compress(conv, context_length=10**6).ok  # type: ignore[union-attr]
    assert compressor.compress(conv, context_length=10**6) is None  # backing off
    assert compressor.compress(conv, context_length=10**6).ok  # type: ignore[union-attr]
    assert compressor.failures == 0


def test_the_offline_default_summarizer_keeps_the_task() -> None:
    conv = _conversation(50)
    event = ContextCompressor(threshold=1).compress(conv, context_length=10**6)
    assert event is not None and event.ok, event
    assert event.summarizer_model == "memorylab/extractive"
    doc = read_memory(conv.memory_md_path)  # type: ignore[arg-type]
    assert "/srv/etl/job.py" in doc.messages[1].content  # the turn's task, kept verbatim


def test_messages_added_while_summarizing_are_carried_over() -> None:
    conv = _conversation()

    class AddsWhileSummarizing(ScriptedSummarizer):
        def summarize(self, messages, *, max_tokens=None):  # type: ignore[no-untyped-def]
            conv.add("User", "typed while the summary was being made")
            return super().summarize(messages, max_tokens=max_tokens)

    event = ContextCompressor(threshold=1, summarizer=AddsWhileSummarizing(["s"])).compress(
        conv, context_length=10**6
    )
    assert event is not None and event.carried_over == 1
    doc = read_memory(conv.memory_md_path)  # type: ignore[arg-type]
    assert doc.messages[-1].content == "typed while the summary was being made"


def test_token_count_defaults_to_the_reference_tokenizer() -> None:
    conv = Conversation(time_enabled=False)  # the reference's tokenizer_model_name: gpt-5.4
    conv.add("User", "hello world")
    counter = get_token_counter("gpt-5.4")
    assert conv.token_count() == 3 + counter("user") + counter("hello world") + 3 == 9


def test_bounded_preload_keeps_summary_and_newest(isolated_workspace: Path) -> None:
    conv = _conversation(0)
    conv.compact("the summary of everything before")
    for i in range(300):
        conv.add("User", f"later message {i} " + "x" * 200)
    again = Conversation(agent_name="Compressed", token_counter=COUNTER, preload_max_tokens=2000)
    plan = again.preload_plan
    assert plan is not None and not plan.complete
    preload = again.conversation_history[0]["content"]
    assert "the summary of everything before" in preload
    assert "later message 299" in preload and "later message 0 " not in preload
    assert f"{plan.omitted_messages} older message(s)" in preload
    assert COUNTER(preload) <= 2000 + 50
    full = Conversation(agent_name="Compressed", token_counter=COUNTER)
    assert full.preload_plan is not None and full.preload_plan.complete


def test_the_summary_budget_keeps_the_fresh_context_below_the_threshold() -> None:
    conv = _conversation(200)
    compressor = ContextCompressor(threshold=0.6, summarizer_max_tokens=2000)
    assert compressor.summary_budget(3000) == 900  # half of the 1,800-token trigger
    event = compressor.compress(conv, context_length=3000, force=True)
    assert event is not None and event.ok
    assert event.tokens_after is not None and event.tokens_after < compressor.trigger_tokens(3000)
    # and the very next check does not fire again
    assert compressor.compress(conv, context_length=3000) is None


def test_scripted_summarizer_is_still_importable_from_its_old_module() -> None:
    from memorylab.compress import _summarizers as summarizers

    assert summarizers.ScriptedSummarizer is ScriptedSummarizer
    assert type(summarizers.get_summarizer("memorylab/scripted")) is ScriptedSummarizer
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        summarizers.Nope  # noqa: B018
