"""``ScriptedSummarizer``: canned replies, delays and failures, for tests and teaching."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from memorylab.compress._base import BaseSummarizer, Summary
from memorylab.errors import EmptySummary, InvalidSetting, ModelUnavailable


class ScriptedSummarizer(BaseSummarizer):
    """Canned replies, in order and cycling, with scripted failures; records every call.

    Call ``i`` (0-based, counting failures) raises ``error`` when ``i in fail_on`` (default
    :class:`~memorylab.errors.ModelUnavailable`; a class is instantiated, an instance is
    raised as is); a failed call does not use up a reply. A reply of ``None`` or a blank string
    raises :class:`~memorylab.errors.EmptySummary`. ``delay`` seconds are slept per call.
    ``.calls`` holds each call's messages (copied).
    """

    def __init__(
        self,
        replies: Sequence[str | None] = ("summary",),
        *,
        delay: float = 0.0,
        fail_on: Sequence[int] = (),
        error: BaseException | type[BaseException] | None = None,
        name: str = "memorylab/scripted",
    ) -> None:
        if isinstance(replies, str):
            replies = (replies,)
        if not replies:
            raise InvalidSetting("ScriptedSummarizer needs at least one reply")
        if not isinstance(delay, int | float) or delay < 0:
            raise InvalidSetting(f"delay must be a number of seconds >= 0, not {delay!r}")
        self.replies: tuple[str | None, ...] = tuple(replies)
        self.delay = float(delay)
        self.fail_on = frozenset(int(i) for i in fail_on)
        self.error = error
        self.name = name
        self.calls: list[list[dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._next_reply = 0

    def __repr__(self) -> str:
        return f"ScriptedSummarizer({len(self.replies)} replies, calls={len(self.calls)})"

    def summarize(
        self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None
    ) -> Summary:
        started = time.perf_counter()
        with self._lock:
            index = len(self.calls)
            self.calls.append([dict(m) for m in messages])
            fail = index in self.fail_on
            reply = None if fail else self.replies[self._next_reply % len(self.replies)]
            self._next_reply += 0 if fail else 1
        if self.delay:
            time.sleep(self.delay)
        if fail:
            error = self.error if self.error is not None else ModelUnavailable
            if isinstance(error, type):
                raise error(f"{self.name}: scripted failure on call {index}")
            raise error
        if reply is None or not str(reply).strip():
            raise EmptySummary(f"{self.name}: scripted empty reply on call {index}")
        return Summary(
            text=str(reply),
            model=self.name,
            cost_usd=0.0,
            latency_s=time.perf_counter() - started,
            chunks=1,
        )
