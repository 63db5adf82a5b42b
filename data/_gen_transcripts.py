"""Builds one transcript from a :class:`~_gen_common.Domain`: filler episodes per session, then
planted facts (each category early, in the middle and late), recalls, probes and timestamps."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import timedelta

from _gen_common import MAX_CHARS, MIN_CHARS, Domain, FactSpec, Vocab, fit, pick

from memorylab.transcripts import (
    FACT_CATEGORIES,
    Fact,
    Probe,
    Transcript,
    TranscriptMessage,
)

_HOSTS = {
    "user": ("task", "followup", "chatter", "opening", "paste"),
    "assistant": ("plan", "findings", "answer", "long", "review", "recap"),
    "tool": ("tool",),
}
_RECALL_GAP = 30


@dataclass
class _Draft:
    session: int
    role: str
    kind: str
    content: str
    fact: bool = False


def _tool_target(rng: random.Random) -> int:
    size = rng.choices(("small", "medium", "large"), (4, 4, 2))[0]
    low, high = {"small": (250, 900), "medium": (900, 1800), "large": (1800, 2700)}[size]
    return rng.randint(low, high)


def _episode(rng: random.Random, vocab: Vocab, session: int) -> list[_Draft]:
    def d(role: str, kind: str, content: str) -> _Draft:
        return _Draft(session, role, kind, content)

    roll = rng.random()
    if roll < 0.55:
        out = [d("user", "task", pick(rng, vocab.tasks, vocab))]
        out.append(d("assistant", "plan", pick(rng, vocab.plans, vocab)))
        for _ in range(rng.choice((1, 1, 2, 2, 3))):
            commands, make = rng.choice(vocab.tool_outputs)
            narration = rng.choice(vocab.narrations).replace("{command}", rng.choice(commands))
            out.append(d("assistant", "narration", fill_one(rng, vocab, narration)))
            output = make(rng, _tool_target(rng))
            out.append(d("tool", "tool", fit(output)))
        findings = pick(rng, vocab.findings, vocab)
        if rng.random() < 0.35:  # some findings come with an explanation
            findings += "\n\n" + fill_one(rng, vocab, rng.choice(vocab.paragraphs))
        out.append(d("assistant", "findings", findings))
        if rng.random() < 0.5:
            out.append(d("user", "followup", pick(rng, vocab.followups, vocab)))
            out.append(d("assistant", "answer", pick(rng, vocab.answers, vocab)))
        return out
    if roll < 0.70:
        count = rng.randint(3, 6)
        paragraphs = [fill_one(rng, vocab, p) for p in rng.sample(list(vocab.paragraphs), count)]
        return [
            d("user", "task", pick(rng, vocab.explain_requests, vocab)),
            d("assistant", "long", fit("\n\n".join(paragraphs))),
        ]
    if roll < 0.85:
        return [
            d("user", "paste", fit(pick(rng, vocab.pastes, vocab))),
            d("assistant", "review", pick(rng, vocab.reviews, vocab)),
        ]
    return [
        d("user", "chatter", pick(rng, vocab.user_chatter, vocab)),
        d("assistant", "chatter", pick(rng, vocab.assistant_chatter, vocab)),
    ]


def fill_one(rng: random.Random, vocab: Vocab, template: str) -> str:
    return pick(rng, [template], vocab)


def _drafts(domain: Domain, rng: random.Random) -> list[_Draft]:
    vocab = domain.vocab
    drafts: list[_Draft] = []
    for session in range(1, rng.randint(*domain.sessions) + 1):
        target = rng.randint(*domain.messages_per_session)
        part = [
            _Draft(session, "user", "opening", pick(rng, vocab.openings, vocab)),
            _Draft(session, "assistant", "chatter", pick(rng, vocab.assistant_chatter, vocab)),
        ]
        while len(part) < target - 2:
            part += _episode(rng, vocab, session)
        part.append(_Draft(session, "user", "closing", pick(rng, vocab.closings, vocab)))
        part.append(_Draft(session, "assistant", "recap", pick(rng, vocab.recaps, vocab)))
        drafts += part
    return drafts


def _insert(rng: random.Random, draft: _Draft, sentence: str) -> None:
    """Put ``sentence`` into the draft at a paragraph (or, for tool output, line) boundary."""
    if draft.role == "tool":
        lines = draft.content.split("\n")
        if draft.content.lstrip().startswith(("{", "[")):
            spot = len(lines)  # after the JSON, like a line on stderr
        else:
            spot = rng.randint(0, len(lines))
        lines.insert(spot, sentence)
        draft.content = "\n".join(lines)
        return
    parts = draft.content.split("\n\n")
    spots = [i for i in range(len(parts) + 1) if "\n\n".join(parts[:i]).count("```") % 2 == 0]
    parts.insert(rng.choice(spots), sentence)
    draft.content = "\n\n".join(parts)


def _find_host(
    drafts: list[_Draft], target: int, role: str, room: int, taken: set[int], low: int = 0
) -> int | None:
    for step in range(len(drafts)):
        for index in (target + step, target - step):
            if not low <= index < len(drafts) or index in taken:
                continue
            draft = drafts[index]
            if (
                draft.role == role
                and draft.kind in _HOSTS[role]
                and len(draft.content) + room <= MAX_CHARS
            ):
                return index
    return None


def _plant(
    domain: Domain, drafts: list[_Draft], specs: list[FactSpec], rng: random.Random
) -> list[tuple[FactSpec, int, list[int]]]:
    by_category = {c: [s for s in specs if s.category == c] for c in FACT_CATEGORIES}
    wanted: list[tuple[float, FactSpec]] = []
    for category in FACT_CATEGORIES:
        group = by_category[category]
        assert len(group) >= 3, f"{domain.name}: at least 3 {category} facts are needed"
        rng.shuffle(group)
        for i, spec in enumerate(group):
            third = i % 3
            wanted.append((rng.uniform(third / 3 + 0.01, (third + 1) / 3 - 0.01), spec))
    taken: set[int] = set()
    placed: list[tuple[FactSpec, int, list[int]]] = []
    for fraction, spec in wanted:
        index = _find_host(
            drafts, int(fraction * len(drafts)), spec.role, len(spec.sentence) + 2, taken
        )
        assert index is not None, f"{domain.name}: no room for {spec.text!r}"
        taken.add(index)
        _insert(rng, drafts[index], spec.sentence)
        recalls: list[int] = []
        if spec.recall is not None and index + _RECALL_GAP < len(drafts):
            role = rng.choice(("user", "assistant"))
            spot = rng.randint(index + _RECALL_GAP, len(drafts) - 1)
            host = _find_host(drafts, spot, role, len(spec.recall) + 2, taken, low=index + 1)
            if host is not None:
                taken.add(host)
                _insert(rng, drafts[host], spec.recall)
                recalls.append(host)
        placed.append((spec, index, recalls))
    return placed


def _timestamps(
    domain: Domain, drafts: list[_Draft], rng: random.Random
) -> list[TranscriptMessage]:
    out: list[TranscriptMessage] = []
    day = domain.start
    now = day
    session = 0
    for draft in drafts:
        if draft.session != session:
            if session:
                day = day + timedelta(days=rng.choice((1, 1, 1, 2, 3)))
            session = draft.session
            now = day.replace(hour=rng.randint(8, 10), minute=rng.randint(0, 59), second=0)
        else:
            size = len(draft.content)
            if draft.role == "user":
                gap = 15 + size / 12 + rng.expovariate(1 / 60)
            elif draft.role == "assistant":
                gap = 2 + size / 80 + rng.uniform(0, 20)
            else:
                gap = rng.uniform(0.5, 12)
            now = now + timedelta(seconds=max(1, round(gap)))
        out.append(TranscriptMessage(draft.session, draft.role, draft.content, now))
    return out


def build_transcript(domain: Domain) -> Transcript:
    """The transcript of ``domain`` (same domain, same bytes)."""
    rng = random.Random(f"{domain.seed}:messages")
    drafts = _drafts(domain, rng)
    specs = domain.facts(random.Random(f"{domain.seed}:facts"))
    placed = _plant(domain, drafts, specs, random.Random(f"{domain.seed}:placement"))
    messages = _timestamps(domain, drafts, random.Random(f"{domain.seed}:clock"))

    for i, message in enumerate(messages):
        assert MIN_CHARS <= len(message.content) <= MAX_CHARS, (
            domain.name,
            i,
            len(message.content),
        )
    placed.sort(key=lambda item: item[1])
    facts: list[Fact] = []
    probes: list[Probe] = []
    for number, (spec, index, recalls) in enumerate(placed, start=1):
        holders = [i for i, m in enumerate(messages) if spec.text in m.content]
        assert holders == sorted([index, *recalls]), (domain.name, spec.text, holders, index)
        if spec.category != "decision":  # short answers of decisions may be common words
            holders = [i for i, m in enumerate(messages) if spec.answer in m.content]
            assert holders == sorted([index, *recalls]), (domain.name, spec.answer, holders)
        fact_id = f"{domain.prefix}-f{number:02d}"
        facts.append(Fact(fact_id, spec.category, spec.text, index))
        probes.append(Probe(f"{domain.prefix}-q{number:02d}", fact_id, spec.question, spec.answer))
    return Transcript(
        name=domain.name,
        seed=domain.seed,
        description=domain.description,
        messages=tuple(messages),
        facts=tuple(facts),
        probes=tuple(probes),
    )
