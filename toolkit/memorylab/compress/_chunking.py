"""Chunk planning and token helpers: cut, truncate and pack text by tokens, nothing lost.

Private to :mod:`memorylab.compress`. :func:`plan_calls` is the map-reduce plan of
:class:`~memorylab.compress._litellm_summarizer.LiteLLMSummarizer` (described in that module's
docstring): a generator that yields each call's prompt and receives its reply, so it makes no
call itself. :func:`truncate_to_tokens` also serves
:class:`~memorylab.compress._extractive.ExtractiveSummarizer`. Tokens are counted with
:func:`memorylab.compress._tokens.get_token_counter`; no I/O beyond loading its encodings.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memorylab.errors import EmptySummary, InvalidSetting

if TYPE_CHECKING:
    from memorylab.compress._tokens import TokenCounter

_FRAMING_TOKENS = 16  # chat-format overhead of a system + user message, rounded up
_LABEL_TOKENS = 24  # room for the "[... part i/n]" label of a split message
_MIN_CHUNK_TOKENS = 128

Plan = Generator[tuple[str, str], str, str]
"""Yields ``(what, prompt)`` per call, is sent the reply's text, returns the final summary."""


@dataclass(frozen=True, slots=True)
class Prompts:
    """The templates of a plan: ``summary`` ({transcript}), ``chunk`` ({part}, {total},
    {transcript}) and ``merge`` ({count}, {summaries}); ``system`` goes with each of them."""

    system: str
    summary: str
    chunk: str
    merge: str


def _longest_prefix(text: str, limit: int, counter: TokenCounter) -> int:
    """The largest ``n`` with ``count(text[:n]) <= limit`` (at least 1)."""
    lo, hi = 1, min(len(text), max(16, limit * 4))
    while counter.count(text[:hi]) <= limit:
        if hi == len(text):
            return hi
        lo, hi = hi, min(len(text), hi * 2)
    while lo < hi - 1:
        mid = (lo + hi) // 2
        if counter.count(text[:mid]) <= limit:
            lo = mid
        else:
            hi = mid
    return lo


def split_by_tokens(text: str, limit: int, counter: TokenCounter) -> list[str]:
    """Cut ``text`` into consecutive pieces of at most ``limit`` tokens, nothing dropped.

    Cuts prefer a newline, then a space, in the last fifth of a piece.
    """
    if limit < 1:
        raise InvalidSetting(f"limit must be >= 1 token, not {limit}")
    pieces: list[str] = []
    rest = text
    while rest:
        cut = _longest_prefix(rest, limit, counter)  # counts prefixes only: linear overall
        if cut >= len(rest):
            pieces.append(rest)
            break
        floor = cut - cut // 5
        for sep in ("\n", " "):
            at = rest.rfind(sep, floor, cut)
            if at > 0:
                cut = at + 1
                break
        pieces.append(rest[:cut])
        rest = rest[cut:]
    return pieces


def truncate_to_tokens(text: str, limit: int, counter: TokenCounter, marker: str = " …") -> str:
    """``text`` itself when it fits in ``limit`` tokens, else its head plus ``marker``."""
    if counter.count(text) <= limit:
        return text
    room = max(1, limit - counter.count(marker))
    return text[: _longest_prefix(text, room, counter)].rstrip() + marker


def _pack(costs: Sequence[int], budget: int) -> list[list[int]]:
    """Greedy, order-keeping packing of unit indices into groups of at most ``budget`` tokens.

    A unit larger than the budget gets a group of its own.
    """
    groups: list[list[int]] = []
    current: list[int] = []
    used = 0
    for index, cost in enumerate(costs):
        if current and used + cost > budget:
            groups.append(current)
            current, used = [], 0
        current.append(index)
        used += cost + 1  # the blank line between units
    if current:
        groups.append(current)
    return groups


def _require_text(text: Any, what: str) -> str:
    """``text`` stripped, or :class:`~memorylab.errors.EmptySummary` when it is blank or no str."""
    if text is None or not isinstance(text, str) or not text.strip():
        raise EmptySummary(f"{what} returned an empty summary")
    return text.strip()


# --------------------------------------------------------------------------- the plan


def plan_calls(
    units: Sequence[str],
    roles: Sequence[str],
    *,
    name: str,
    window: int,
    out_tokens: int,
    counter: TokenCounter,
    prompts: Prompts,
) -> Plan:
    """The calls that summarize the rendered messages ``units`` (with their ``roles``).

    One call when everything fits the budget, else chunk summaries (map) and merges (reduce).
    ``name`` starts error messages.
    """
    budget = window - out_tokens - min(2048, max(32, window // 10)) - _FRAMING_TOKENS
    system_tokens = counter.count(prompts.system)
    transcript = "\n\n".join(units)
    prompt_tokens = counter.count(prompts.summary.format(transcript=""))
    if system_tokens + prompt_tokens + counter.count(transcript) <= budget:
        text = yield "summary", prompts.summary.format(transcript=transcript)
        return _require_text(text, name)

    chunk_prompt = prompts.chunk.format(part=99, total=99, transcript="")
    chunk_budget = budget - system_tokens - counter.count(chunk_prompt)
    if chunk_budget < _MIN_CHUNK_TOKENS:
        raise InvalidSetting(
            f"{name}: a context window of {window} tokens leaves {max(chunk_budget, 0)} "
            f"tokens per chunk after max_tokens={out_tokens}, the prompt and the margin; "
            "lower max_tokens or raise context_length"
        )
    pieces: list[str] = []
    for number, unit in enumerate(units, start=1):
        if counter.count(unit) <= chunk_budget:
            pieces.append(unit)
            continue
        parts = split_by_tokens(unit, chunk_budget - _LABEL_TOKENS, counter)
        role = roles[number - 1]
        for index, fragment in enumerate(parts, start=1):
            label = f"[message {number} ({role}), part {index}/{len(parts)}]"
            pieces.append(fragment if index == 1 else f"{label} {fragment}")
    chunks = _pack([counter.count(p) for p in pieces], chunk_budget)
    partials: list[str] = []
    for part, chunk in enumerate(chunks, start=1):
        transcript = "\n\n".join(pieces[i] for i in chunk)
        prompt = prompts.chunk.format(part=part, total=len(chunks), transcript=transcript)
        what = f"chunk {part}/{len(chunks)}"
        text = yield what, prompt
        partials.append(_require_text(text, f"{name} ({what})"))
    merge_prompt = prompts.merge.format(count=99, summaries="")
    merge_budget = budget - system_tokens - counter.count(merge_prompt)
    return (yield from _reduce(partials, merge_budget, counter, name, prompts.merge))


def _reduce(
    partials: list[str], budget: int, counter: TokenCounter, name: str, merge_prompt: str
) -> Plan:
    """Merge partial summaries in groups that fit ``budget``, level by level, until one."""
    level = 0
    while len(partials) > 1:
        level += 1
        blocks = [f'<part index="{i}">\n{text}\n</part>' for i, text in enumerate(partials, 1)]
        groups = _pack([counter.count(b) for b in blocks], budget)
        if len(groups) == len(blocks):  # no two fit together: pair them anyway to progress
            groups = [list(range(i, min(i + 2, len(blocks)))) for i in range(0, len(blocks), 2)]
        merged: list[str] = []
        for number, group in enumerate(groups, start=1):
            if len(group) == 1:
                merged.append(partials[group[0]])
                continue
            summaries = "\n\n".join(blocks[i] for i in group)
            prompt = merge_prompt.format(count=len(group), summaries=summaries)
            what = f"merge {number}/{len(groups)} (level {level})"
            text = yield what, prompt
            merged.append(_require_text(text, f"{name} ({what})"))
        partials = merged
    return partials[0]
