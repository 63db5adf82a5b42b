"""Transcripts: long conversations with planted facts and probe questions (JSON Lines).

A transcript file holds one JSON object per line::

    {"type": "meta", "name": ..., "seed": ..., "description": ..., "sessions": <int>}   line 1
    {"type": "message", "session": <int>, "role": ..., "content": ..., "timestamp": <ISO UTC>}
        (optionally "pinned": true: a message a compaction carries verbatim)
    {"type": "fact", "id": ..., "category": ..., "text": ..., "message_index": <int>}
    {"type": "probe", "id": ..., "fact_id": ..., "question": ..., "answer": ...}

The meta line comes first; :func:`save_transcript` writes the messages, then the facts, then the
probes. ``category`` is one of :data:`FACT_CATEGORIES`; a fact's ``text`` is the exact string as
it appears in the message ``message_index`` (0-based, counting message lines only); a probe asks
about one fact and has a short exact ``answer``. Sessions are numbered from 1, in order, and
``sessions`` is how many there are. Timestamps are ISO-8601 in UTC (``+00:00`` or ``Z``).

:func:`load_transcript` checks all of this and raises :class:`~memorylab.errors.MemoryFormatError`
naming the file and line of the first problem. The repository ships three generated transcripts
(``data/transcripts/``, made by ``data/make_data.py``), found by :func:`bundled_transcripts`.
"""

from __future__ import annotations

import importlib.resources
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from memorylab.errors import InvalidSetting, MemoryFormatError, PrerequisiteError, StoreError
from memorylab.memory._fsutil import write_private_file

__all__ = [
    "FACT_CATEGORIES",
    "Fact",
    "Probe",
    "Transcript",
    "TranscriptMessage",
    "bundled_data_dir",
    "bundled_foreign_runs",
    "bundled_transcripts",
    "bundled_workspace",
    "dumps_transcript",
    "load_transcript",
    "save_transcript",
]

FACT_CATEGORIES = ("number", "path", "command", "name", "decision")
"""The kinds of planted facts, in the order the docs list them."""

DATA_DIR_ENV = "MEMORYLAB_DATA_DIR"
_DATA_PACKAGE = "memorylab._data"
"""The package the bundled data is installed as: pyproject.toml maps the repository's data/ onto
it, so an editable install reads data/ itself and a wheel carries a copy."""
_WORKSPACES = {"memorylab": "workspace", "reference": "reference_workspace"}
_FOREIGN_RUNS = {  # loader name -> one run in data/foreign/ (its folder's README says who wrote it)
    "claude-code": "claude-code/compacted-session.jsonl",
    "deepagents": "deepagents/sample",
    "inspect-ai": "inspect-ai/checkout-bug-hunt.eval",
    "openai-agents": "openai-agents/sessions.sqlite",
}
_KEYS = {  # each line type's keys, in the order they are written
    "meta": ("name", "seed", "description", "sessions"),
    "message": ("session", "role", "content", "timestamp"),
    "fact": ("id", "category", "text", "message_index"),
    "probe": ("id", "fact_id", "question", "answer"),
}


@dataclass(frozen=True, slots=True)
class TranscriptMessage:
    """One message of a transcript: its session (from 1), role, text and UTC time; ``pinned``:
    the user pinned it (``Conversation.add(..., pinned=True)``: every compaction keeps it)."""

    session: int
    role: str
    content: str
    timestamp: datetime
    pinned: bool = False

    def as_dict(self) -> dict[str, Any]:
        """``{"role", "content", "timestamp"}`` (ISO-8601), as a Conversation history entry
        (with ``"pinned": True`` when pinned)."""
        entry: dict[str, Any] = {"role": self.role, "content": self.content}
        entry["timestamp"] = self.timestamp.isoformat()
        return {**entry, "pinned": True} if self.pinned else entry


@dataclass(frozen=True, slots=True)
class Fact:
    """A detail a summary should keep: its ``text`` (the value as written, verbatim in the
    message that states it), its category (one of :data:`FACT_CATEGORIES`) and the index of
    that message (``None``: unknown; a transcript's facts always have one)."""

    id: str
    category: str
    text: str
    message_index: int | None = None

    def __post_init__(self) -> None:
        if self.category not in FACT_CATEGORIES:
            raise InvalidSetting(
                f"fact {self.id!r}: category must be one of {', '.join(FACT_CATEGORIES)}, "
                f"not {self.category!r}"
            )
        if not isinstance(self.text, str) or not self.text.strip():
            raise InvalidSetting(f"fact {self.id!r}: text must be a non-empty string")


@dataclass(frozen=True, slots=True)
class Probe:
    """A question the summary alone should let a reader answer, with its short exact answer;
    ``fact_id`` names the fact it asks about (``None``: no fact; a transcript's probes always
    name one). ``category``: a benchmark's question type (LoCoMo's category, LongMemEval's
    ``question_type``), kept for per-category tables; ``asked_at``: when the question is asked
    (ISO-8601), for questions relative to that day."""

    id: str
    fact_id: str | None
    question: str
    answer: str
    category: str | None = None
    asked_at: str | None = None


@dataclass(frozen=True, slots=True)
class Transcript:
    """A multi-session conversation with planted facts and probes (see the module docstring)."""

    name: str
    seed: int
    description: str
    messages: tuple[TranscriptMessage, ...]
    facts: tuple[Fact, ...] = ()
    probes: tuple[Probe, ...] = ()

    @property
    def sessions(self) -> int:
        """How many sessions the messages span."""
        return len({m.session for m in self.messages})

    def as_messages(self) -> list[dict[str, Any]]:
        """The messages as ``{"role", "content", "timestamp"}`` dicts (timestamps ISO-8601; a
        pinned one with ``"pinned": True``)."""
        return [m.as_dict() for m in self.messages]

    def fact(self, fact_id: str) -> Fact:
        """The fact with this id (``KeyError`` if there is none)."""
        for fact in self.facts:
            if fact.id == fact_id:
                return fact
        raise KeyError(fact_id)

    def message_of(self, fact: Fact) -> TranscriptMessage:
        """The message a fact was planted in."""
        if fact.message_index is None:
            raise InvalidSetting(f"fact {fact.id!r} names no message (message_index=None)")
        return self.messages[fact.message_index]


# --------------------------------------------------------------------------------------- loading


class _Line:
    """One parsed line, for error messages that name the file and the line."""

    def __init__(self, path: Path, number: int, data: Mapping[str, Any]) -> None:
        self.path = path
        self.number = number
        self.data = data

    def fail(self, message: str) -> MemoryFormatError:
        return MemoryFormatError(message, path=self.path, line=self.number)

    def get(self, key: str, kind: type | tuple[type, ...]) -> Any:
        if key not in self.data:
            raise self.fail(f"a {self.data.get('type')} line needs the key {key!r}")
        value = self.data[key]
        if isinstance(value, bool) or not isinstance(value, kind):
            names = (
                kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
            )
            raise self.fail(f"{key!r} must be {names}, not {type(value).__name__}: {value!r}")
        return value

    def text(self, key: str) -> str:
        value: str = self.get(key, str)
        if not value.strip():
            raise self.fail(f"{key!r} must not be empty")
        return value

    def check_keys(self, allowed: tuple[str, ...]) -> None:
        unknown = sorted(set(self.data) - {"type", *allowed})
        if unknown:
            raise self.fail(f"unknown keys {unknown} in a {self.data['type']} line")


def _timestamp(line: _Line) -> datetime:
    raw = line.text("timestamp")
    try:
        value = datetime.fromisoformat(raw)
    except ValueError:
        raise line.fail(f"'timestamp' is not ISO-8601: {raw!r}") from None
    if value.utcoffset() != timedelta(0):
        raise line.fail(f"'timestamp' must be in UTC (+00:00 or Z), got {raw!r}")
    return value


def _read_lines(path: Path) -> list[_Line]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise StoreError(f"{path} does not exist") from None
    except IsADirectoryError:
        raise StoreError(f"{path} is a folder; give a .jsonl transcript file in it") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise MemoryFormatError(
            f"not UTF-8 text (byte {exc.start})", path=path, line=line
        ) from None
    lines: list[_Line] = []
    for number, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise MemoryFormatError(
                f"not valid JSON ({exc.msg} at column {exc.colno})", path=path, line=number
            ) from None
        if not isinstance(obj, dict):
            raise MemoryFormatError(
                f"each line must be a JSON object, found {type(obj).__name__}",
                path=path,
                line=number,
            )
        lines.append(_Line(path, number, obj))
    if not lines:
        raise MemoryFormatError("the transcript is empty (no meta line)", path=path, line=1)
    return lines


def load_transcript(path: str | os.PathLike[str]) -> Transcript:
    """Read and check a transcript file (format: the module docstring).

    Raises :class:`~memorylab.errors.MemoryFormatError` (with the file and line) for a line that
    is not valid, a fact whose text is not in its message, a probe about an unknown fact ...;
    :class:`~memorylab.errors.StoreError` when the file does not exist.
    """
    path = Path(path)
    lines = _read_lines(path)
    meta = lines[0]
    if meta.data.get("type") != "meta":
        raise meta.fail(
            f"the first line must be the meta line, found type {meta.data.get('type')!r}"
        )
    meta.check_keys(_KEYS["meta"])
    name, seed = meta.text("name"), meta.get("seed", int)
    description, sessions = meta.get("description", str), meta.get("sessions", int)

    messages: list[TranscriptMessage] = []
    facts: list[tuple[_Line, Fact]] = []
    probes: list[tuple[_Line, Probe]] = []
    for line in lines[1:]:
        kind = line.data.get("type")
        if kind == "message":
            line.check_keys((*_KEYS["message"], "pinned"))
            session = line.get("session", int)
            previous = messages[-1].session if messages else 0
            if not previous <= session <= previous + 1 or session < 1:
                after = f"after session {previous}" if previous else "first"
                raise line.fail(
                    f"session {session} {after}: sessions are numbered from 1 and messages are "
                    "in order"
                )
            role = line.text("role")
            pinned = line.data.get("pinned", False)
            if not isinstance(pinned, bool):
                raise line.fail(f"'pinned' must be true or false, not {pinned!r}")
            messages.append(
                TranscriptMessage(
                    session, role, line.get("content", str), _timestamp(line), pinned=pinned
                )
            )
        elif kind == "fact":
            line.check_keys(_KEYS["fact"])
            category = line.text("category")
            if category not in FACT_CATEGORIES:
                raise line.fail(f"unknown fact category {category!r}; use one of {FACT_CATEGORIES}")
            fact = Fact(
                line.text("id"), category, line.text("text"), line.get("message_index", int)
            )
            facts.append((line, fact))
        elif kind == "probe":
            line.check_keys(_KEYS["probe"])
            probe = Probe(
                line.text("id"), line.text("fact_id"), line.text("question"), line.text("answer")
            )
            probes.append((line, probe))
        elif kind == "meta":
            raise line.fail("a second meta line (only the first line is the meta line)")
        else:
            raise line.fail(f"unknown line type {kind!r}; use 'message', 'fact' or 'probe'")

    found = messages[-1].session if messages else 0
    if sessions != found:
        raise meta.fail(f"the meta line says {sessions} sessions, the messages have {found}")
    fact_ids: set[str] = set()
    for line, fact in facts:
        if fact.id in fact_ids:
            raise line.fail(f"duplicate fact id {fact.id!r}")
        fact_ids.add(fact.id)
        if fact.message_index is None or not 0 <= fact.message_index < len(messages):
            raise line.fail(
                f"message_index {fact.message_index} is out of range (there are "
                f"{len(messages)} messages, numbered from 0)"
            )
        if fact.text not in messages[fact.message_index].content:
            raise line.fail(
                f"the fact text {fact.text!r} does not appear in message {fact.message_index}"
            )
    probe_ids: set[str] = set()
    for line, probe in probes:
        if probe.id in probe_ids:
            raise line.fail(f"duplicate probe id {probe.id!r}")
        probe_ids.add(probe.id)
        if probe.fact_id not in fact_ids:
            raise line.fail(f"probe {probe.id!r} asks about an unknown fact {probe.fact_id!r}")
    return Transcript(
        name=name,
        seed=seed,
        description=description,
        messages=tuple(messages),
        facts=tuple(f for _, f in facts),
        probes=tuple(p for _, p in probes),
    )


# --------------------------------------------------------------------------------------- saving


def _line(kind: str, value: Any) -> dict[str, Any]:
    fields = {key: getattr(value, key) for key in _KEYS[kind]}
    if kind == "message":
        fields["timestamp"] = value.timestamp.isoformat()
        if value.pinned:  # only then: the files of unpinned transcripts stay as they were
            fields["pinned"] = True
    return {"type": kind, **fields}


def _lines_of(transcript: Transcript) -> list[dict[str, Any]]:
    return [
        _line("meta", transcript),
        *(_line("message", m) for m in transcript.messages),
        *(_line("fact", f) for f in transcript.facts),
        *(_line("probe", p) for p in transcript.probes),
    ]


def dumps_transcript(transcript: Transcript) -> str:
    """The file text for ``transcript`` (UTF-8 JSON Lines, ``\\n`` line ends)."""
    return "".join(json.dumps(obj, ensure_ascii=False) + "\n" for obj in _lines_of(transcript))


def save_transcript(transcript: Transcript, path: str | os.PathLike[str]) -> Path:
    """Write ``transcript`` to ``path`` and return the path: a private file (0o600, whatever
    the umask), written to a temp file and renamed into place, as every file memorylab writes
    for a user (:func:`memorylab.memory._fsutil.write_private_file`)."""
    path = Path(path)
    write_private_file(path, dumps_transcript(transcript).encode("utf-8"))
    return path


# ------------------------------------------------------------------------------- bundled data


def bundled_data_dir() -> Path:
    """The folder of bundled data: ``$MEMORYLAB_DATA_DIR`` if set, else the one installed with
    memorylab (the package ``memorylab._data``: the repository's ``data/`` in an editable
    install, a copy of it in a wheel)."""
    configured = os.environ.get(DATA_DIR_ENV)
    if configured:
        folder = Path(configured)
        if not folder.is_dir():
            raise PrerequisiteError(
                f"${DATA_DIR_ENV} names {folder}, which is not a folder: point it at a copy of "
                "memorylab's data/ folder, or unset it to use the data installed with memorylab."
            )
        return folder
    try:
        installed = importlib.resources.files(_DATA_PACKAGE)
    except ModuleNotFoundError:
        raise PrerequisiteError(
            f"memorylab's bundled data is not installed (no package {_DATA_PACKAGE}). An "
            "editable install made before the data became package data needs `pip install -e .` "
            f"again; or set ${DATA_DIR_ENV} to a copy of the repository's data/ folder."
        ) from None
    if not isinstance(installed, Path):  # a zip import, say: the files are read as plain files
        raise PrerequisiteError(
            f"memorylab's bundled data is installed but not as a folder ({installed}): install "
            f"memorylab unpacked (pip does), or set ${DATA_DIR_ENV} to a copy of the data."
        )
    return installed


def bundled_transcripts() -> list[Path]:
    """The bundled transcript files (``data/transcripts/*.jsonl``), sorted by name."""
    folder = bundled_data_dir() / "transcripts"
    found = sorted(folder.glob("*.jsonl")) if folder.is_dir() else []
    if not found:
        raise PrerequisiteError(
            f"no transcripts in {folder}; regenerate them with `python data/make_data.py`"
        )
    return found


def bundled_workspace(kind: Literal["memorylab", "reference"] = "memorylab") -> Path:
    """A bundled sample workspace (the folder holding ``agents/``): ``"memorylab"`` was written
    by memorylab's own Agent, ``"reference"`` in the reference framework's exact format."""
    if kind not in _WORKSPACES:
        raise InvalidSetting(f"kind must be one of {sorted(_WORKSPACES)}, not {kind!r}")
    folder = bundled_data_dir() / _WORKSPACES[kind]
    if not (folder / "agents").is_dir():
        raise PrerequisiteError(
            f"the bundled {kind} workspace is missing ({folder / 'agents'}); regenerate it with "
            "`python data/make_data.py`"
        )
    return folder


def bundled_foreign_runs() -> dict[str, Path]:
    """One run of each other framework's format memorylab reads, keyed by the name of the loader
    that reads it (``loader_for(path).name``): a Claude Code session written to its documented
    format, and what deepagents, inspect-ai and the OpenAI Agents SDK wrote themselves, offline,
    replaying a bundled transcript (``data/foreign/<format>/``, each with its generator, the
    versions it ran and its licence)."""
    folder = bundled_data_dir() / "foreign"
    runs = {name: folder / relative for name, relative in _FOREIGN_RUNS.items()}
    missing = [str(path) for path in runs.values() if not path.exists()]
    if missing:
        raise PrerequisiteError(
            f"the bundled runs of other frameworks are missing ({', '.join(missing)}): install "
            f"memorylab with its data, or set ${DATA_DIR_ENV} to a copy of the repository's data/"
        )
    return runs
