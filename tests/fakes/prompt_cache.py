"""A local server's prompt cache, simulated: a script for :class:`FakeOpenAIServer` that counts
the tokens a llama.cpp-like server would process and reuse, and can take the time it would.

llama.cpp's server keeps one slot per parallel request: each request reuses the longest common
prefix of its prompt with the slot's previous prompt and reply, and processes (evaluates) the
rest. :class:`PromptCacheServer` does the same with words standing for tokens (the prompt is
the messages' contents joined by spaces), so a test can compare what a run processed with what
an ideal ordering would (one read of each shared memory, then each probe's own words).

``answer`` decides the reply (default ``"UNKNOWN"``): a string or ``(FakeRequest) -> str``.
``read_per_s`` / ``write_per_s``: with them each reply is delayed by its processed words /
``read_per_s`` + its reply words / ``write_per_s`` (a model of this speed), so a plan's time can
be checked against a run's wall time. ``slots``: several requests at once each get their own
slot (the first free one: a client that overlaps requests loses the cache as llama.cpp's
``--parallel`` slots do). Counters: ``requests``, ``processed``, ``reused``, ``written`` (reply
words), ``prompts`` (each request's words), all thread-safe.

Usage::

    cache = PromptCacheServer(answer="UNKNOWN", read_per_s=2000, write_per_s=200)
    with FakeOpenAIServer(cache) as server:
        ...  # api_base=server.base_url
    cache.processed, cache.reused
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .openai_server import FakeRequest, Reply

__all__ = ["PromptCacheServer", "prompt_words"]


def prompt_words(body: Any) -> list[str]:
    """The words of a request's prompt (its messages' contents in order): the fake's tokens."""
    return " ".join(str(m.get("content") or "") for m in body.get("messages") or ()).split()


def _shared(a: list[str], b: list[str]) -> int:
    count = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        count += 1
    return count


class PromptCacheServer:
    """The script (module docstring)."""

    def __init__(
        self,
        answer: str | Callable[[FakeRequest], str] = "UNKNOWN",
        *,
        read_per_s: float | None = None,
        write_per_s: float | None = None,
        slots: int = 1,
    ) -> None:
        self.answer = answer
        self.read_per_s = read_per_s
        self.write_per_s = write_per_s
        self._lock = threading.Lock()
        self._slots: list[list[str]] = [[] for _ in range(slots)]
        self._busy = [False] * slots
        self.requests = 0
        self.processed = 0
        self.reused = 0
        self.written = 0
        self.prompts: list[list[str]] = []

    def __call__(self, request: FakeRequest) -> Reply:
        words = prompt_words(request.body)
        text = self.answer(request) if callable(self.answer) else self.answer
        reply = text.split()
        with self._lock:
            free = [i for i, busy in enumerate(self._busy) if not busy]
            # The free slot that shares most with this prompt (llama.cpp picks by similarity).
            slot = max(free or [0], key=lambda i: _shared(words, self._slots[i]))
            if free:
                self._busy[slot] = True
            reused = _shared(words, self._slots[slot])
            self._slots[slot] = [*words, *reply]
            self.requests += 1
            self.processed += len(words) - reused
            self.reused += reused
            self.written += len(reply)
            self.prompts.append(words)
        delay = 0.0
        if self.read_per_s:
            delay += (len(words) - reused) / self.read_per_s
        if self.write_per_s:
            delay += len(reply) / self.write_per_s
        try:
            if delay:
                threading.Event().wait(delay)
            return Reply(text, prompt_tokens=len(words), completion_tokens=len(reply))
        finally:
            with self._lock:
                self._busy[slot] = False
