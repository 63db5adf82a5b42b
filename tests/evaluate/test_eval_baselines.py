"""The offline baselines: truncate-to-budget and head+tail."""

from __future__ import annotations

import asyncio

import pytest

from memorylab import Summarizer
from memorylab.compress import HeadTailSummarizer, TruncateSummarizer, get_token_counter
from memorylab.errors import EmptySummary, InvalidSetting

HISTORY = [{"role": "user" if i % 2 else "assistant", "content": f"message number {i}: " + "word " * 20}
           for i in range(40)]  # fmt: skip


def tokens(text: str) -> int:
    return get_token_counter(None).count(text)


def test_truncate_keeps_the_most_recent_messages_within_budget() -> None:
    summary = TruncateSummarizer(100).summarize(HISTORY)
    assert summary.model == "memorylab/truncate" and summary.cost_usd == 0.0
    assert tokens(summary.text) <= 100
    assert summary.output_tokens == tokens(summary.text)
    assert "message number 39" in summary.text and "message number 0:" not in summary.text
    assert summary.text.startswith("… ")  # the oldest kept message was cut
    assert summary.input_tokens is not None and summary.input_tokens > 1000


def test_truncate_head_keeps_the_first_messages() -> None:
    summary = TruncateSummarizer(100, keep="head").summarize(HISTORY)
    assert "message number 0:" in summary.text and "message number 39" not in summary.text
    assert tokens(summary.text) <= 100 and summary.text.endswith(" …")


def test_head_tail_keeps_both_ends_with_a_marker() -> None:
    summary = HeadTailSummarizer(120, head_share=0.3).summarize(HISTORY)
    assert summary.model == "memorylab/head-tail"
    assert "message number 0:" in summary.text and "message number 39" in summary.text
    assert "messages omitted …]" in summary.text
    assert tokens(summary.text) <= 120


def test_a_history_within_budget_is_kept_whole() -> None:
    short = HISTORY[:2]
    for summarizer in (TruncateSummarizer(1000), HeadTailSummarizer(1000)):
        text = summarizer.summarize(short).text
        assert text == "\n\n".join(f"{m['role']}: {m['content']}" for m in short).strip()


def test_budget_override_protocol_and_async() -> None:
    summarizer = TruncateSummarizer(500)
    assert isinstance(summarizer, Summarizer)
    assert tokens(summarizer.summarize(HISTORY, max_tokens=50).text) <= 50
    text = asyncio.run(HeadTailSummarizer().asummarize(HISTORY, max_tokens=60)).text
    assert tokens(text) <= 60
    assert "keep='tail'" in repr(summarizer) and "head_share" in repr(HeadTailSummarizer())


def test_bad_settings_and_empty_history() -> None:
    with pytest.raises(InvalidSetting):
        TruncateSummarizer(4)
    with pytest.raises(InvalidSetting):
        TruncateSummarizer(keep="middle")  # type: ignore[arg-type]
    with pytest.raises(InvalidSetting):
        HeadTailSummarizer(head_share=1.0)
    with pytest.raises(InvalidSetting):
        TruncateSummarizer().summarize(HISTORY, max_tokens=True)  # type: ignore[arg-type]
    with pytest.raises(EmptySummary):
        HeadTailSummarizer().summarize([{"role": "user", "content": "  "}])
    with pytest.raises(InvalidSetting):
        TruncateSummarizer().summarize("not messages")  # type: ignore[arg-type]
