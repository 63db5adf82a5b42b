"""Regenerate memorylab's bundled data, or check that the committed files are up to date.

    python data/make_data.py           # rewrite transcripts/, workspace/, reference_workspace/
    python data/make_data.py --check   # exit 1 and list the differences if not up to date

Each domain file (``domains/*.toml``) holds one transcript's world: its filler vocabulary and
templates, its tool outputs, its 45 facts and the workspace agent of that world. This script
turns a domain into a transcript (filler episodes per session, planted facts, recalls, probes,
timestamps) and has ``_gen_workspace`` and ``_gen_reference`` write the two sample workspaces.
Everything is deterministic: seeded ``random.Random`` streams and fixed base timestamps, no clock
and no network (the workspace's agents use a scripted model and the offline
``memorylab/extractive`` summarizer). See data/README.md.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the _gen_* helpers sit next to this script
    sys.path.insert(0, str(HERE))

from _gen_reference import build_reference  # noqa: E402
from _gen_workspace import build_workspace  # noqa: E402

from memorylab.transcripts import (  # noqa: E402
    FACT_CATEGORIES,
    Fact,
    Probe,
    Transcript,
    TranscriptMessage,
    load_transcript,
    save_transcript,
)

GENERATED = ("transcripts", "workspace", "reference_workspace")
"""The folders of data/ this script writes (everything else in data/ is written by hand)."""

DOMAINS = ("pipeline", "webapp", "research")
"""The domain files, in the order their agents join the workspace (that order seeds them)."""

WORKSPACE_SEED = 20260420
WORKSPACE_START = datetime(2026, 4, 20, 9, 0, tzinfo=UTC)
REFERENCE_SEED = 20260309

MIN_CHARS = 50
MAX_CHARS = 3072
_SLOT = re.compile(r"\{(\w+)\}")
_HOSTS = {
    "user": ("task", "followup", "chatter", "opening", "paste"),
    "assistant": ("plan", "findings", "answer", "long", "review", "recap"),
    "tool": ("tool",),
}
"""The kinds of filler message that may host a fact said by each role."""
_RECALL_GAP = 30

# ----------------------------------------------------------------------------- domain files

ToolOutput = Callable[[random.Random, int], str]
"""Builds a tool message of about the given number of characters."""


@dataclass(frozen=True)
class Templates:
    """A domain's filler message templates, by kind (``{slot}`` names a list of words)."""

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
        assert self.category in FACT_CATEGORIES, self.category
        assert self.text in self.sentence, (self.text, self.sentence)
        assert self.answer in self.text, (self.answer, self.text)
        assert self.recall is None or self.text in self.recall, (self.text, self.recall)
        assert self.role in _HOSTS, self.role


@dataclass(frozen=True)
class Domain:
    """One domain file, read: the transcript's identity, calendar, size, filler and facts, and
    the ``agent`` table for the workspace."""

    name: str
    prefix: str
    seed: int
    description: str
    start: datetime
    sessions: tuple[int, int]
    messages_per_session: tuple[int, int]
    slots: Mapping[str, Sequence[str]]
    templates: Templates
    tool_outputs: Sequence[tuple[Sequence[str], ToolOutput]]
    """(commands that produce it, output builder): a narration names one of the commands."""
    fact_values: Mapping[str, Mapping[str, Any]]
    fact_templates: Sequence[Mapping[str, str]]
    """The ``[[facts]]`` tables: each key's text with ``{name}`` for a fact value."""
    agent: Mapping[str, Any]


def load_domain(path: Path) -> Domain:
    """Read a domain file (TOML; the keys are described in data/README.md)."""
    with path.open("rb") as handle:
        data = tomllib.load(handle)
    head = data["transcript"]
    start = head["start"]
    assert isinstance(start, datetime) and start.utcoffset() is not None, f"{path}: start"
    low, high = head["sessions"]
    fewest, most = head["messages_per_session"]
    used = {
        match[1]
        for fact in data["facts"]
        for text in fact.values()
        for match in _SLOT.finditer(text)
    }
    unused = sorted(set(data["fact_values"]) - used)
    assert not unused, f"{path}: no fact uses the fact values {unused} (a misspelt name?)"
    return Domain(
        name=head["name"],
        prefix=head["prefix"],
        seed=head["seed"],
        description=head["description"],
        start=start.astimezone(UTC),
        sessions=(low, high),
        messages_per_session=(fewest, most),
        slots=data["slots"],
        templates=Templates(**data["templates"]),
        tool_outputs=[(spec["commands"], tool_output(spec)) for spec in data["tool_outputs"]],
        fact_values=data["fact_values"],
        fact_templates=data["facts"],
        agent=data["agent"],
    )


def draw(rng: random.Random, spec: Mapping[str, Any]) -> object:
    """A random value as ``spec`` describes it: ``{choice = [...]}``, ``{int = [low, high]}``,
    ``{decimal = [low, high], digits = 2}`` or ``{hex_bits = n}``."""
    if "choice" in spec:
        return rng.choice(spec["choice"])
    if "int" in spec:
        return rng.randint(*spec["int"])
    if "decimal" in spec:
        return round(rng.uniform(*spec["decimal"]), spec.get("digits", 2))
    if "hex_bits" in spec:
        bits = spec["hex_bits"]
        return f"{rng.getrandbits(bits):0{bits // 4}x}"
    raise ValueError(f"not a value spec: {dict(spec)}")


def fact_specs(domain: Domain, rng: random.Random) -> list[FactSpec]:
    """The domain's facts with their ``{name}`` values drawn (in the order of the file); other
    braces are text (``curl -w '%{http_code}'``)."""
    values = {name: str(draw(rng, spec)) for name, spec in domain.fact_values.items()}

    def put(text: str) -> str:
        return _SLOT.sub(lambda match: values.get(match[1], match[0]), text)

    return [
        FactSpec(**{key: put(text) for key, text in fact.items()}) for fact in domain.fact_templates
    ]


# ----------------------------------------------------------------------------- filler


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


def fit(text: str, limit: int = MAX_CHARS - 300) -> str:
    """Cut ``text`` at a line end so it has at most ``limit`` characters (room for a fact)."""
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit)
    return text[: cut if cut > limit // 2 else limit].rstrip()


def tool_output(spec: Mapping[str, Any]) -> ToolOutput:
    """The builder of a ``[[tool_outputs]]`` table, by its ``kind``."""
    builders: dict[str, Callable[[Mapping[str, Any]], ToolOutput]] = {
        "log": _log_output,
        "json_rows": _json_rows,
        "json_events": _json_events,
        "pytest": _pytest_report,
    }
    return builders[spec["kind"]](spec)


def _stamp(rng: random.Random, day: str = "2026-03-02") -> str:
    hour, minute, second = rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59)
    return f"{day} {hour:02d}:{minute:02d}:{second:02d},{rng.randint(0, 999):03d}"


def _log_output(spec: Mapping[str, Any]) -> ToolOutput:
    """A log excerpt: ``<time> LEVEL [component] message`` lines, sorted (messages may hold
    ``{n}``, ``{f}`` and ``{id}`` number slots)."""
    names, weights = list(spec["levels"]), list(spec["levels"].values())
    components, lines = spec["components"], spec["lines"]

    def make(rng: random.Random, target: int) -> str:
        out: list[str] = []
        size = 0
        while size < target:
            line = rng.choice(lines)
            line = line.replace("{n}", str(rng.randint(2, 9999)))
            line = line.replace("{f}", f"{rng.uniform(0.1, 99.9):.2f}")
            line = line.replace("{id}", f"{rng.getrandbits(32):08x}")
            level = rng.choices(names, weights)[0]
            text = f"{_stamp(rng)} {level:<5} [{rng.choice(components)}] {line}"
            out.append(text)
            size += len(text) + 1
        out.sort()
        return "\n".join(out)

    return make


def _json_rows(spec: Mapping[str, Any]) -> ToolOutput:
    """A query result as JSON: ``{"columns": [...], "rows": [...], "row_count": n, ...}``."""
    columns = spec["columns"]

    def make(rng: random.Random, target: int) -> str:
        rows: list[list[object]] = []
        while len(rows) < 2 or len(json.dumps(rows)) < target - 120:
            rows.append([draw(rng, column) for column in columns])
        result = {
            "columns": [column["name"] for column in columns],
            "rows": rows,
            "row_count": len(rows),
            "elapsed_ms": rng.randint(3, 4000),
            "truncated": False,
        }
        return json.dumps(result, ensure_ascii=False)

    return make


def _json_events(spec: Mapping[str, Any]) -> ToolOutput:
    """A pretty-printed JSON list of records."""
    fields = spec["fields"]

    def make(rng: random.Random, target: int) -> str:
        records: list[dict[str, object]] = []
        while len(records) < 2 or len(json.dumps(records, indent=2)) < target - 200:
            records.append({field["name"]: draw(rng, field) for field in fields})
        return json.dumps({"status": "ok", "count": len(records), "items": records}, indent=2)

    return make


def _pytest_report(spec: Mapping[str, Any]) -> ToolOutput:
    """pytest-like output with mostly passing tests."""
    tests = spec["tests"]

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


# ----------------------------------------------------------------------------- transcripts


@dataclass
class _Draft:
    session: int
    role: str
    kind: str
    content: str


def _tool_target(rng: random.Random) -> int:
    size = rng.choices(("small", "medium", "large"), (4, 4, 2))[0]
    low, high = {"small": (250, 900), "medium": (900, 1800), "large": (1800, 2700)}[size]
    return rng.randint(low, high)


def _episode(rng: random.Random, domain: Domain, session: int) -> list[_Draft]:
    """One exchange of filler: a task with tool runs (most often), a design note, a paste to
    review, or small talk."""
    said = domain.templates

    def d(role: str, kind: str, content: str) -> _Draft:
        return _Draft(session, role, kind, content)

    def pick(options: Sequence[str]) -> str:
        return fill(rng.choice(options), rng, domain.slots)

    roll = rng.random()
    if roll < 0.55:
        out = [d("user", "task", pick(said.tasks))]
        out.append(d("assistant", "plan", pick(said.plans)))
        for _ in range(rng.choice((1, 1, 2, 2, 3))):
            commands, make = rng.choice(domain.tool_outputs)
            narration = rng.choice(said.narrations).replace("{command}", rng.choice(commands))
            out.append(d("assistant", "narration", pick([narration])))
            output = make(rng, _tool_target(rng))
            out.append(d("tool", "tool", fit(output)))
        findings = pick(said.findings)
        if rng.random() < 0.35:  # some findings come with an explanation
            findings += "\n\n" + pick([rng.choice(said.paragraphs)])
        out.append(d("assistant", "findings", findings))
        if rng.random() < 0.5:
            out.append(d("user", "followup", pick(said.followups)))
            out.append(d("assistant", "answer", pick(said.answers)))
        return out
    if roll < 0.70:
        count = rng.randint(3, 6)
        paragraphs = [pick([p]) for p in rng.sample(list(said.paragraphs), count)]
        return [
            d("user", "task", pick(said.explain_requests)),
            d("assistant", "long", fit("\n\n".join(paragraphs))),
        ]
    if roll < 0.85:
        return [
            d("user", "paste", fit(pick(said.pastes))),
            d("assistant", "review", pick(said.reviews)),
        ]
    return [
        d("user", "chatter", pick(said.user_chatter)),
        d("assistant", "chatter", pick(said.assistant_chatter)),
    ]


def _drafts(domain: Domain, rng: random.Random) -> list[_Draft]:
    said = domain.templates

    def pick(options: Sequence[str]) -> str:
        return fill(rng.choice(options), rng, domain.slots)

    drafts: list[_Draft] = []
    for session in range(1, rng.randint(*domain.sessions) + 1):
        target = rng.randint(*domain.messages_per_session)
        part = [
            _Draft(session, "user", "opening", pick(said.openings)),
            _Draft(session, "assistant", "chatter", pick(said.assistant_chatter)),
        ]
        while len(part) < target - 2:
            part += _episode(rng, domain, session)
        part.append(_Draft(session, "user", "closing", pick(said.closings)))
        part.append(_Draft(session, "assistant", "recap", pick(said.recaps)))
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
    """The filler message nearest ``target`` that ``role`` said, of a kind that can hold a fact,
    not used yet and with ``room`` characters to spare."""
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
    """Insert every fact (each category's spread over the three thirds) and some recalls;
    returns (fact, message index, recall indexes)."""
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
    """Sessions start on a new day between 08:00 and 11:00; within one, the gap after a message
    grows with its length (typing, reading) and is shortest for tool output."""
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
    specs = fact_specs(domain, random.Random(f"{domain.seed}:facts"))
    placed = _plant(domain, drafts, specs, random.Random(f"{domain.seed}:placement"))
    messages = _timestamps(domain, drafts, random.Random(f"{domain.seed}:clock"))

    for i, message in enumerate(messages):
        size = len(message.content)
        assert MIN_CHARS <= size <= MAX_CHARS, (domain.name, i, size)
    placed.sort(key=lambda item: item[1])
    facts: list[Fact] = []
    probes: list[Probe] = []
    for number, (spec, index, recalls) in enumerate(placed, start=1):
        # a probe answer found in a summary must come from that fact, nowhere else
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


# ----------------------------------------------------------------------------- the command


def generate(out: Path) -> dict[str, object]:
    """Write every generated folder into ``out``; returns statistics for the report."""
    domains = [load_domain(HERE / "domains" / f"{stem}.toml") for stem in DOMAINS]
    stats: dict[str, object] = {}
    folder = out / "transcripts"
    folder.mkdir(parents=True, exist_ok=True)
    facts: dict[str, dict[str, int]] = {}
    for domain in domains:
        transcript = build_transcript(domain)
        path = save_transcript(transcript, folder / f"{domain.name}.jsonl")
        assert load_transcript(path) == transcript, f"{path} does not read back the same"
        counts: dict[str, int] = {}
        for fact in transcript.facts:
            counts[fact.category] = counts.get(fact.category, 0) + 1
        facts[domain.name] = {
            "messages": len(transcript.messages),
            "sessions": transcript.sessions,
            **counts,
        }
    stats["transcripts"] = facts
    stats["compactions"] = build_workspace(
        [domain.agent for domain in domains], out / "workspace", WORKSPACE_START, WORKSPACE_SEED
    )
    stats["reference archives (kept, lost)"] = build_reference(
        out / "reference_workspace", REFERENCE_SEED
    )
    return stats


def _files(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def differences(expected: Path, actual: Path) -> list[str]:
    """How the generated folders in ``actual`` differ from those in ``expected``."""
    out: list[str] = []
    for name in GENERATED:
        want, have = _files(expected / name), _files(actual / name)
        for path in sorted(want.keys() | have.keys()):
            label = f"{name}/{path}"
            if path not in have:
                out.append(f"missing: {label}")
            elif path not in want:
                out.append(f"not generated any more: {label}")
            elif want[path] != have[path]:
                out.append(f"differs: {label}")
    return out


def check(data_dir: Path = HERE) -> list[str]:
    """Regenerate into a temporary folder and compare with ``data_dir``: [] when up to date."""
    with tempfile.TemporaryDirectory(prefix="memorylab-data-") as tmp:
        generate(Path(tmp))
        return differences(Path(tmp), data_dir)


def write(data_dir: Path = HERE) -> dict[str, object]:
    """Regenerate the generated folders of ``data_dir`` (old files in them are removed)."""
    with tempfile.TemporaryDirectory(prefix="memorylab-data-") as tmp:
        fresh = Path(tmp)
        stats = generate(fresh)
        for name in GENERATED:
            target = data_dir / name
            for old in sorted(target.rglob("*"), reverse=True) if target.exists() else []:
                if old.is_dir():
                    old.rmdir()
                else:
                    old.unlink()
            for relative, data in _files(fresh / name).items():
                path = target / relative
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
    return stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    parser.add_argument("--data-dir", type=Path, default=HERE, help="default: this folder")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    if args.check:
        problems = check(args.data_dir)
        for line in problems:
            print(line)
        if problems:
            print(
                f"{len(problems)} generated file(s) are not up to date: run "
                "`python data/make_data.py` and commit the result",
                file=sys.stderr,
            )
            return 1
        print(f"data is up to date ({time.perf_counter() - started:.1f} s)")
        return 0
    stats = write(args.data_dir)
    for key, value in stats.items():
        print(f"{key}: {value}")
    print(f"generated in {time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
