"""The remembering token counter the replays share (``analysis/_transcript.py``): the same
numbers as the counter it wraps, whatever its memo holds (issue 30: a batch past the memo's
limit cleared it, then looked up texts it no longer held, and every operation on a million
messages crashed with ``KeyError``)."""

from __future__ import annotations

import pytest

from memorylab.analysis import _transcript
from memorylab.analysis._transcript import MemoCounter
from memorylab.compress.tokens import get_token_counter


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
