"""The remembering token counter the replays share (``analysis/_transcript.py``): the same
numbers as the counter it wraps, whatever its memo holds (issue 30: a batch past the memo's
limit cleared it, then looked up texts it no longer held, and every operation on a million
messages crashed with ``KeyError``)."""

from __future__ import annotations

import pytest

from memorylab.analysis import _transcript
from memorylab.analysis._transcript import MemoCounter
from memorylab.compress._tokens import get_token_counter


def test_a_batch_past_the_memo_limit_counts_every_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_transcript, "_MEMO_LIMIT", 5)
    plain = get_token_counter(None)
    memo = MemoCounter(plain)
    first = [f"message {n} " * (n + 1) for n in range(4)]
    assert memo.count_batch(first) == plain.count_batch(first)
    mixed = [*first, *(f"another {n}" for n in range(4)), first[0]]  # 4 known, 4 new: past 5
    assert memo.count_batch(mixed) == plain.count_batch(mixed)
    assert memo.count_batch(mixed) == plain.count_batch(mixed)  # and again from the memo
    assert len(memo._memo) <= 8
    assert memo("once more") == plain.count("once more")


def test_a_transcript_larger_than_the_limit_is_counted_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The report counts one transcript several times: past the limit the memo used to forget
    it between the passes, and a million messages were counted five times over (issue 30)."""
    monkeypatch.setattr(_transcript, "_MEMO_LIMIT", 5)
    plain = get_token_counter(None)
    calls: list[int] = []

    class Counting:
        model = plain.model

        def count(self, text: str) -> int:
            return plain.count(text)

        def count_batch(self, texts: list[str], num_threads: int | None = None) -> list[int]:
            calls.append(len(texts))
            return plain.count_batch(texts)

    memo = MemoCounter(Counting())  # type: ignore[arg-type]
    transcript = [f"line {n}" for n in range(40)]
    for _ in range(3):
        assert memo.count_batch(transcript) == plain.count_batch(transcript)
    assert calls == [40, 0, 0]
