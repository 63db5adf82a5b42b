"""The content-addressed LLM call cache: keys, atomic writes across processes, run counters."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from memorylab.errors import BudgetExceeded
from memorylab.evaluate import LLMCache
from memorylab.evaluate._cache import TRANSPORT_KEYS, RunStats, request_key

REQUEST = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}],
           "temperature": 0.1, "max_tokens": 100}  # fmt: skip


def test_key_is_canonical_and_ignores_transport() -> None:
    key = request_key(REQUEST)
    assert len(key) == 64 and key == request_key(dict(reversed(REQUEST.items())))
    moved = {**REQUEST, "api_key": "secret", "timeout": 3, "max_retries": 0}
    assert request_key(moved) == key
    assert {"api_key", "timeout"} <= TRANSPORT_KEYS and "api_base" not in TRANSPORT_KEYS
    for change in ({"temperature": 0.2}, {"model": "gpt-4o"}, {"max_tokens": 101},
                   {"messages": [{"role": "user", "content": "hi!"}]},
                   {"api_base": "http://127.0.0.1:9/v1"}):  # fmt: skip
        assert request_key({**REQUEST, **change}) != key


def test_put_get_and_corrupt_entries(tmp_path: Path) -> None:
    cache = LLMCache(tmp_path / "c")
    assert cache.get("ab" * 32) is None and len(cache) == 0
    key = request_key(REQUEST)
    cache.put(key, {"response": {"x": 1}, "latency_s": 0.5})
    assert cache.get(key) == {"response": {"x": 1}, "latency_s": 0.5, "key": key}
    assert cache.path(key) == tmp_path / "c" / key[:2] / f"{key}.json"
    assert len(cache) == 1 and not list((tmp_path / "c").rglob("*.tmp"))
    cache.path(key).write_text('{"truncated": ')
    assert cache.get(key) is None  # unreadable: a miss, rewritten by the next call
    cache.path(key).write_text(json.dumps({"key": "another"}))
    assert cache.get(key) is None


WRITER = """
import sys
from memorylab.evaluate import LLMCache
cache = LLMCache(sys.argv[1])
for round in range(40):
    for n in range(10):
        cache.put(f"{n:02d}" * 32, {"response": {"writer": sys.argv[2], "round": round,
                                                 "pad": "x" * 20000}})
"""


def test_two_processes_writing_the_same_keys(tmp_path: Path) -> None:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    procs = [subprocess.Popen([sys.executable, str(script), str(tmp_path / "c"), name])
             for name in ("a", "b")]  # fmt: skip
    cache = LLMCache(tmp_path / "c")
    seen = 0
    while any(p.poll() is None for p in procs):
        for n in range(10):
            entry = cache.get(f"{n:02d}" * 32)
            if entry is not None:  # a whole entry or none, never a torn one
                assert entry["response"]["writer"] in ("a", "b")
                assert len(entry["response"]["pad"]) == 20000
                seen += 1
    assert [p.wait() for p in procs] == [0, 0]
    assert len(cache) == 10 and not list((tmp_path / "c").rglob("*.tmp"))
    assert all(cache.get(f"{n:02d}" * 32) is not None for n in range(10))


def test_run_stats_budget_and_pickle() -> None:
    stats = RunStats(max_cost_usd=0.01)
    stats.check_budget()
    stats.spent(0.004)
    stats.spent(None)
    stats.spent(None, answered=False)
    stats.hit()
    assert stats.as_dict() == {"requests": 3, "cache_hits": 1, "spent_usd": 0.004,
                               "unpriced_calls": 1, "failed_calls": 1}  # fmt: skip
    copy = pickle.loads(pickle.dumps(stats))
    copy.spent(0.006)
    with pytest.raises(BudgetExceeded, match="already spent"):
        copy.check_budget()
    stats.merge(copy.as_dict())
    assert stats.requests == 7
