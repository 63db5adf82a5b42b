"""ExtractiveSummarizer: an offline, deterministic summary built from the history's own words.

No model, no key, no network: it picks sentences and lines from the messages and lays them out
as markdown under a token budget (counted with
:func:`memorylab.compress._tokens.get_token_counter`). Same input, same output, byte for byte.

What is kept, in order of priority, while it fits:

1. any previous ``[Compressed Memory Summary]`` (at most 40 % of the budget; the summaries inside
   a ``[Persistent Memory — MEMORY.md]`` preload are found too);
2. the first user message, the original task, verbatim (at most 25 %, truncated with ``…``);
3. **Decisions**: sentences saying what was decided, agreed, chosen, preferred, required or
   ruled out ("will use", "must", "should not" ...), the most recent first;
4. **Facts**: sentences and lines with file paths (``/x/y.py``, ``C:\\x``, ``foo.txt``), URLs,
   shell commands (``$ ...`` lines, shell code fences, inline backticks), tool results' key lines
   (their first line, errors, pass/fail, status), then numbers;
5. **Recent**: the last messages, newest first, each clipped to about 120 tokens. 15 % of the
   budget is reserved for them and filled first, so that Decisions and Facts skip messages
   Recent already shows in full; older messages are added to Recent while room is left.

Sections are printed in the order Previous summary, Task, Decisions, Facts, Recent; items keep
the order of the conversation. Long items are clipped to a few hundred characters.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memorylab.compress._base import BudgetedSummarizer
from memorylab.compress._chunking import truncate_to_tokens
from memorylab.compress._tokens import TokenCounter
from memorylab.errors import EmptySummary, MemoryFormatError
from memorylab.llm import check_int
from memorylab.memory import _format as fmt
from memorylab.memory._records import PRELOAD_PREFIX, SUMMARY_PREFIX

_DECISION = re.compile(
    r"\b(?:decided|decides?|decision|agreed|agrees?|will use|we'll use|going with|go with|"
    r"prefers?|preferred|preference|must|must not|should not|shouldn't|do not|don't|never|"
    r"always|chose|chosen|choose|selected|settled on|switch(?:ed)? to|constraint|"
    r"requires?|required)\b",
    re.IGNORECASE,
)
_URL = re.compile(r"\bhttps?://[^\s<>()\"']+")
_PATH = re.compile(
    r"(?<![\w/])(?:~|\.{1,2})?/[\w.\-]+(?:/[\w.\-]+)*"  # /x/y.py, ~/x, ./x
    r"|\b[A-Za-z]:\\[^\s\"'<>|]+"  # C:\x\y
    r"|\b[\w\-]+(?:\.[\w\-]+)*\.(?:py|pyi|txt|md|rst|json|jsonl|ya?ml|toml|csv|tsv|ipynb|js|"
    r"mjs|ts|tsx|jsx|sh|bash|cfg|ini|conf|log|html?|css|rs|go|java|kt|c|h|cc|cpp|hpp|sql|"
    r"xml|lock|pdf|png|jpe?g|svg|env|parquet|db|sqlite|zip|gz|tar)\b"
)
_INLINE_CODE = re.compile(r"`[^`\n]+`")
_NUMBER = re.compile(r"\d")
_FENCE = re.compile(r"^(?:```|~~~)\s*([\w+-]*)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[`*])")
_TOOL_KEY = re.compile(
    r"\b(?:error|exception|traceback|failed|failure|fail|passed|pass|success(?:ful)?|"
    r"succeeded|warning|exit code|exit status|status|returned|result)\b",
    re.IGNORECASE,
)
_SHELL_FENCES = frozenset({"", "bash", "sh", "shell", "console", "zsh", "fish", "terminal",
                           "powershell", "ps1", "pwsh", "cmd", "bat", "batch"})  # fmt: skip

_MAX_ITEM_CHARS = 300
_MAX_FENCE_LINES = 5
_MAX_CODE_LINES = 2
_RECENT_TOKENS = 120
_PREVIOUS_SHARE = 0.40
_TASK_SHARE = 0.25
_RECENT_SHARE = 0.15

# Ranks: lower is kept first.
_DECISION_RANK, _ARTIFACT_RANK, _TOOL_RANK, _NUMBER_RANK = 0, 1, 2, 3


@dataclass(frozen=True, slots=True)
class _Msg:
    role: str
    text: str
    timestamp: Any


@dataclass(frozen=True, slots=True)
class _Item:
    rank: int
    section: str  # "Decisions" | "Facts" | "Recent"
    order: int  # chronological position
    line: str
    message: int  # index of the message it comes from


def _clip(text: str, limit: int = _MAX_ITEM_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _timestamp(value: Any) -> str:
    if value is None or value == "":
        return ""
    iso = getattr(value, "isoformat", None)
    return str(iso(timespec="seconds")) if callable(iso) else str(value)


def _expand(messages: Sequence[Mapping[str, Any]]) -> list[_Msg]:
    """Messages as text; a MEMORY.md preload becomes the messages it contains."""
    out: list[_Msg] = []
    for message in messages:
        text = fmt.content_to_text(message.get("content"))
        role = str(message.get("role") or "unknown")
        if text.startswith(PRELOAD_PREFIX):
            inner = text[len(PRELOAD_PREFIX) :].lstrip("\n")
            try:
                doc = fmt.parse(inner, strict=False).document
            except (MemoryFormatError, ValueError):
                doc = None
            if doc is not None and doc.messages:
                out.extend(_Msg(m.role, m.content, m.timestamp) for m in doc.messages)
                continue
        out.append(_Msg(role, text, message.get("timestamp")))
    return out


def _units(text: str) -> Iterator[tuple[str, str]]:
    """``(kind, text)`` for each line/sentence: kind is "command", "code" or "text"."""
    fence: str | None = None
    fence_lines = 0
    for raw in text.splitlines():
        line = raw.strip()
        opened = _FENCE.match(line)
        if opened:
            fence = None if fence is not None else opened.group(1).lower()
            fence_lines = 0
            continue
        if not line:
            continue
        if fence is not None:
            fence_lines += 1
            shell = fence in _SHELL_FENCES
            if fence_lines <= (_MAX_FENCE_LINES if shell else _MAX_CODE_LINES):
                yield ("command" if shell else "code"), line
            continue
        if line.startswith(("$ ", "> $ ")):
            yield "command", line
            continue
        for sentence in _SENTENCE_END.split(line):
            if sentence.strip():
                yield "text", sentence.strip()


def _classify(kind: str, text: str, tool: bool, first: bool) -> tuple[int, str] | None:
    """(rank, section) of a unit, or None when it is not worth keeping."""
    if kind == "command":
        return _ARTIFACT_RANK, "Facts"
    if kind == "code":
        return _NUMBER_RANK, "Facts"
    if _DECISION.search(text):
        return _DECISION_RANK, "Decisions"
    if _URL.search(text) or _PATH.search(text) or _INLINE_CODE.search(text):
        return _ARTIFACT_RANK, "Facts"
    if tool and (first or _TOOL_KEY.search(text)):
        return _TOOL_RANK, "Facts"
    if _NUMBER.search(text):
        return _NUMBER_RANK, "Facts"
    return None


_INTRO = "Extractive summary of "
_SECTION_RE = re.compile(r"(?m)^## (.+)\n")
_CARRIED_SECTIONS = ("Previous summary", "Decisions", "Facts")


def _carry_forward(previous: Sequence[str]) -> tuple[str, str | None]:
    """What earlier summaries contribute: their items as flat lines, and the original task.

    Summaries this summarizer wrote are taken apart (their Previous summary, Decisions and Facts
    lines are kept, their Task is the original task), so carrying them forward again and again
    neither nests headings nor lets the intro lines crowd out the facts. Other summaries (an
    LLM's) are kept as they are, headings demoted.
    """
    lines: list[str] = []
    task: str | None = None
    for body in previous:
        if not body.startswith(_INTRO):
            lines.append(re.sub(r"(?m)^(#{1,5}) ", r"#\1 ", body))  # headings a level down
            continue
        parts = _SECTION_RE.split(body)
        sections = {parts[i].strip(): parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}
        if task is None and sections.get("Task"):
            task = sections["Task"]
        for title in _CARRIED_SECTIONS:
            if sections.get(title):
                lines.append(sections[title])
    return "\n".join(lines), task


class ExtractiveSummarizer(BudgetedSummarizer):
    """Offline, deterministic summarizer (see the module docstring); name ``memorylab/extractive``.

    ``max_tokens`` is the budget of the summary, counted with ``get_token_counter(model)``
    (``model=None``: the cl100k_base approximation).
    """

    name = "memorylab/extractive"
    min_tokens = 32

    def __init__(self, max_tokens: int = 1024, model: str | None = None) -> None:
        self.max_tokens = check_int("max_tokens", max_tokens, self.min_tokens)
        self.model = model

    def __repr__(self) -> str:
        return f"ExtractiveSummarizer(max_tokens={self.max_tokens}, model={self.model!r})"

    def text(
        self, messages: Sequence[Mapping[str, Any]], budget: int, counter: TokenCounter
    ) -> str:
        """The extractive summary of ``messages`` in at most ``budget`` tokens."""
        history = _expand(messages)
        if not any(m.text.strip() for m in history):
            raise EmptySummary("nothing to summarize: the history is empty")
        return self._build(history, budget, counter)

    # -- the work ------------------------------------------------------------------------------
    def _build(self, history: list[_Msg], budget: int, counter: TokenCounter) -> str:
        def cost(line: str) -> int:
            return counter.count(line) + 1

        previous: list[str] = []
        summary_at: set[int] = set()
        for index, message in enumerate(history):
            stripped = message.text.lstrip()
            if stripped.startswith(SUMMARY_PREFIX):
                body = stripped[len(SUMMARY_PREFIX) :].strip()
                if body:
                    previous.append(body)
                summary_at.add(index)
        task_at = next(
            (
                i
                for i, m in enumerate(history)
                if m.role.strip().lower() in ("user", "human")
                and i not in summary_at
                and m.text.strip()
            ),
            None,
        )

        intro = f"{_INTRO}{len(history)} messages."
        used = cost(intro)
        blocks: dict[str, str] = {}
        carried, original_task = _carry_forward(previous)
        if carried:
            blocks["Previous summary"] = truncate_to_tokens(
                carried, max(8, int(budget * _PREVIOUS_SHARE)), counter
            )
        # The task of the very first history, kept across compactions, else this history's.
        task = original_task
        if task is None and task_at is not None:
            task = history[task_at].text.strip()
        if task is not None:
            blocks["Task"] = truncate_to_tokens(task, max(8, int(budget * _TASK_SHARE)), counter)
        task_truncated = original_task is None and task is not None and blocks["Task"] != task
        for title, body in blocks.items():
            used += cost(f"## {title}") + cost(body) + 1

        candidates = self._candidates(history, summary_at, task_at, task_truncated)
        recent = [
            (i, m)
            for i, m in enumerate(history)
            if i not in summary_at and i != task_at and m.text.strip()
        ]
        accepted: list[_Item] = []
        sections: set[str] = set()

        def take(item: _Item, limit: int) -> bool:
            nonlocal used
            extra = cost(item.line) + (0 if item.section in sections else cost("## X") + 1)
            if used + extra > limit:
                return False
            used += extra
            sections.add(item.section)
            accepted.append(item)
            return True

        # Recent first, within its reserved share, so facts need not repeat what it shows ...
        def recent_items() -> Iterator[tuple[_Item, bool]]:
            for index, message in reversed(recent):
                stamp = _timestamp(message.timestamp)
                head = f"- **{message.role}**" + (f" ({stamp})" if stamp else "") + ": "
                whole = " ".join(message.text.split())
                body = truncate_to_tokens(_clip(whole, 2000), _RECENT_TOKENS, counter)
                yield _Item(9, "Recent", index, head + body, index), body == whole

        reserve_end = used + int(budget * _RECENT_SHARE)
        pending = recent_items()
        shown: set[int] = set()
        waiting: _Item | None = None
        for item, complete in pending:
            if not take(item, reserve_end):
                waiting = item
                break
            if complete:
                shown.add(item.message)
        # ... then decisions and facts by rank, then older recent messages if room is left.
        for candidate in candidates:
            if budget - used < 4:  # full: no item is shorter than that
                break
            if candidate.message not in shown:
                take(candidate, budget)
        if waiting is not None and take(waiting, budget):
            for item, _complete in pending:
                if not take(item, budget):
                    break

        text = self._render(intro, blocks, accepted)
        while counter.count(text) > budget and accepted:
            accepted.pop()  # tokenizer boundary effects: drop the least important item
            text = self._render(intro, blocks, accepted)
        if counter.count(text) > budget:
            text = truncate_to_tokens(text, budget, counter)
        return text

    def _candidates(
        self, history: list[_Msg], summary_at: set[int], task_at: int | None, task_truncated: bool
    ) -> list[_Item]:
        """Decision and fact items, most important first (ties: most recent first)."""
        seen: set[str] = set()
        items: list[_Item] = []
        order = 0
        for index, message in enumerate(history):
            if index in summary_at or (index == task_at and not task_truncated):
                continue
            role = message.role.strip().lower()
            tool = "tool" in role or "function" in role
            for position, (kind, unit) in enumerate(_units(message.text)):
                order += 1
                found = _classify(kind, unit, tool, position == 0)
                if found is None:
                    continue
                key = " ".join(unit.lower().split())
                if key in seen:
                    continue
                seen.add(key)
                rank, section = found
                text = _clip(unit)
                if kind == "command" and "`" not in text:
                    text = f"`{text}`"
                if tool and section == "Facts":
                    text = f"({message.role}) {text}"
                items.append(_Item(rank, section, order, f"- {text}", index))
        items.sort(key=lambda item: (item.rank, -item.order))
        return items

    @staticmethod
    def _render(intro: str, blocks: Mapping[str, str], accepted: Sequence[_Item]) -> str:
        parts = [intro]
        for title, body in blocks.items():
            parts.append(f"## {title}\n{body}")
        for section in ("Decisions", "Facts", "Recent"):
            lines = sorted((i for i in accepted if i.section == section), key=lambda i: i.order)
            if lines:
                parts.append(f"## {section}\n" + "\n".join(i.line for i in lines))
        return "\n\n".join(parts)
