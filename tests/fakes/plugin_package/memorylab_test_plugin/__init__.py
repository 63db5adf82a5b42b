"""A third party's additions to memorylab, found through its entry points (pyproject.toml):
a summarizer, a strategy and a loader of a format memorylab does not know."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memorylab.analysis import AgentRecord, messages_record
from memorylab.compress import BaseSummarizer, CompactionPlan, Strategy, Summary

CHAT_HEADER = b'{"chat-log": 1}'
"""The first line of a chat log: what the loader handles."""


class FirstWords(BaseSummarizer):
    """The first three words of each message."""

    name = "plugin/first-words"

    def summarize(self, messages: Sequence[Mapping[str, Any]], *, max_tokens: int | None = None
                  ) -> Summary:  # fmt: skip
        words = [" ".join(str(m["content"]).split()[:3]) for m in messages]
        return Summary(text=" / ".join(words), model=self.name)


@dataclass(frozen=True, slots=True)
class KeepFirst(Strategy):
    """Keep the first ``keep`` entries verbatim, summarize the rest."""

    name = "plugin_keep_first"
    keep: int = 1

    def plan(
        self,
        entries: Sequence[Mapping[str, Any]],
        *,
        tokens: Sequence[int] | None = None,
        context_length: int | None = None,
    ) -> CompactionPlan:
        first = min(self.keep, len(entries))
        return CompactionPlan(
            len(entries), summarize=tuple(range(first, len(entries))), keep=tuple(range(first))
        )


class ChatLog:
    """A JSON Lines chat log: the header line, then ``{"who", "said", "at"}`` lines."""

    name = "plugin-chat"

    def handles(self, path: Path) -> bool:
        if not path.is_file():
            return False
        with path.open("rb") as file:
            return file.readline().strip() == CHAT_HEADER

    def load(self, path: Path) -> list[AgentRecord]:
        lines = path.read_text(encoding="utf-8").splitlines()[1:]
        said = [json.loads(line) for line in lines if line.strip()]
        messages = [{"role": s["who"], "content": s["said"], "timestamp": s["at"]} for s in said]
        return [messages_record(path, messages, format=self.name)]


CHAT_LOADER = ChatLog()
