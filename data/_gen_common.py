"""Shared pieces of the data generator: fact specs, domain vocabularies, template filling and
tool-output builders. Everything takes a seeded ``random.Random``; nothing reads a clock."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

MIN_CHARS = 50
MAX_CHARS = 3072

_SLOT = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class FactSpec:
    """A fact to plant: ``sentence`` (said by ``role``) contains ``text``; ``answer`` is in
    ``text``; ``recall`` (optional) is a later sentence that mentions ``text`` again."""

    category: str
    role: str
    text: str
    sentence: str
    question: str
    answer: str
    recall: str | None = None

    def __post_init__(self) -> None:
        assert self.text in self.sentence, (self.text, self.sentence)
        assert self.answer in self.text, (self.answer, self.text)
        assert self.recall is None or self.text in self.recall, (self.text, self.recall)
        assert self.role in ("user", "assistant", "tool"), self.role


ToolOutput = Callable[[random.Random, int], str]


@dataclass(frozen=True)
class Vocab:
    """Templates and word lists for one domain's filler (``{slot}`` names a list in ``slots``)."""

    slots: Mapping[str, Sequence[str]]
    openings: Sequence[str]
    closings: Sequence[str]
    recaps: Sequence[str]
    tasks: Sequence[str]
    plans: Sequence[str]
    narrations: Sequence[str]
    findings: Sequence[str]
    followups: Sequence[str]
    answers: Sequence[str]
    explain_requests: Sequence[str]
    paragraphs: Sequence[str]
    user_chatter: Sequence[str]
    assistant_chatter: Sequence[str]
    pastes: Sequence[str]
    reviews: Sequence[str]
    tool_outputs: Sequence[tuple[Sequence[str], ToolOutput]]
    """(commands that produce it, output builder): a narration names one of the commands."""


@dataclass(frozen=True)
class Domain:
    """One transcript's world: identity, calendar, size, vocabulary and facts."""

    name: str
    prefix: str
    seed: int
    description: str
    start: datetime
    sessions: tuple[int, int]
    messages_per_session: tuple[int, int]
    vocab: Vocab
    facts: Callable[[random.Random], list[FactSpec]]
    extra: Mapping[str, object] = field(default_factory=dict)


def fill(template: str, rng: random.Random, slots: Mapping[str, Sequence[str]]) -> str:
    """Replace each ``{slot}`` by a random item of ``slots[slot]`` (unknown slots are kept); a
    slot used twice in one template gets two different items."""
    used: dict[str, set[str]] = {}

    def pick(match: re.Match[str]) -> str:
        options = slots.get(match[1])
        if not options:
            return match[0]
        taken = used.setdefault(match[1], set())
        fresh = [o for o in options if o not in taken] or list(options)
        value = rng.choice(fresh)
        taken.add(value)
        return value

    return _SLOT.sub(pick, template)


def pick(rng: random.Random, options: Sequence[str], vocab: Vocab) -> str:
    return fill(rng.choice(options), rng, vocab.slots)


def fit(text: str, limit: int = MAX_CHARS - 300) -> str:
    """Cut ``text`` at a line end so it has at most ``limit`` characters."""
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    return text[: cut if cut > limit // 2 else limit].rstrip()


# ----------------------------------------------------------------------------- tool outputs


def stamp(rng: random.Random, day: str = "2026-03-02") -> str:
    hour, minute, second = rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59)
    return f"{day} {hour:02d}:{minute:02d}:{second:02d},{rng.randint(0, 999):03d}"


def log_output(
    levels: Sequence[tuple[str, int]], components: Sequence[str], lines: Sequence[str]
) -> ToolOutput:
    """A log excerpt: ``<time> LEVEL [component] message`` lines (messages are templates with
    ``{n}``, ``{f}`` and ``{id}`` number slots)."""
    names = [name for name, _ in levels]
    weights = [weight for _, weight in levels]

    def make(rng: random.Random, target: int) -> str:
        out: list[str] = []
        size = 0
        while size < target:
            line = rng.choice(lines)
            line = line.replace("{n}", str(rng.randint(2, 9999)))
            line = line.replace("{f}", f"{rng.uniform(0.1, 99.9):.2f}")
            line = line.replace("{id}", f"{rng.getrandbits(32):08x}")
            level = rng.choices(names, weights)[0]
            text = f"{stamp(rng)} {level:<5} [{rng.choice(components)}] {line}"
            out.append(text)
            size += len(text) + 1
        out.sort()
        return "\n".join(out)

    return make


def json_rows(columns: Sequence[tuple[str, Callable[[random.Random], object]]]) -> ToolOutput:
    """A query result as JSON: ``{"columns": [...], "rows": [...], "row_count": n, ...}``."""

    def make(rng: random.Random, target: int) -> str:
        rows: list[list[object]] = []
        names = [name for name, _ in columns]
        while len(rows) < 2 or len(json.dumps(rows)) < target - 120:
            rows.append([value(rng) for _, value in columns])
        result = {
            "columns": names,
            "rows": rows,
            "row_count": len(rows),
            "elapsed_ms": rng.randint(3, 4000),
            "truncated": False,
        }
        return json.dumps(result, indent=None, ensure_ascii=False)

    return make


def json_events(fields: Mapping[str, Callable[[random.Random], object]]) -> ToolOutput:
    """Pretty-printed JSON list of records."""

    def make(rng: random.Random, target: int) -> str:
        records: list[dict[str, object]] = []
        while len(records) < 2 or len(json.dumps(records, indent=2)) < target - 200:
            records.append({key: value(rng) for key, value in fields.items()})
        return json.dumps({"status": "ok", "count": len(records), "items": records}, indent=2)

    return make


def pytest_report(tests: Sequence[str]) -> ToolOutput:
    """pytest-like output with mostly passing tests."""

    def make(rng: random.Random, target: int) -> str:
        lines = ["============================= test session starts =============================="]
        lines.append("platform linux -- Python 3.11.9, pytest-8.3.2, pluggy-1.5.0")
        passed = failed = 0
        while sum(len(x) + 1 for x in lines) < target - 300:
            name = rng.choice(tests)
            case = f"{name}[{rng.choice(('a', 'b', 'c', 'edge', 'empty', 'large'))}]"
            ok = rng.random() > 0.08
            passed += ok
            failed += not ok
            lines.append(f"{case} {'PASSED' if ok else 'FAILED'}")
        if failed:
            lines.append(
                "=================================== FAILURES ==================================="
            )
            lines.append("E       AssertionError: assert 0 == 1")
        seconds = rng.uniform(0.5, 80)
        lines.append(f"========= {failed} failed, {passed} passed in {seconds:.2f}s =========")
        return "\n".join(lines)

    return make


def number(low: int, high: int) -> Callable[[random.Random], object]:
    return lambda rng: rng.randint(low, high)


def decimal(low: float, high: float, digits: int = 2) -> Callable[[random.Random], object]:
    return lambda rng: round(rng.uniform(low, high), digits)


def choice(options: Sequence[object]) -> Callable[[random.Random], object]:
    return lambda rng: rng.choice(options)


def hexid(bits: int = 32) -> Callable[[random.Random], object]:
    return lambda rng: f"{rng.getrandbits(bits):0{bits // 4}x}"
