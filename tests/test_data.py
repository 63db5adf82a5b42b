"""The bundled data (data/): up to date with its generator, transcripts that keep their promises,
workspaces that parse, the transcript format's loader and errors, and the package data."""

from __future__ import annotations

import importlib.resources
import importlib.util
import itertools
import json
import re
import sys
import tomllib
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from memorylab import read_memory
from memorylab.errors import InvalidSetting, MemoryFormatError, PrerequisiteError, StoreError
from memorylab.memory._format import parse_archive_name
from memorylab.transcripts import (
    FACT_CATEGORIES,
    Fact,
    Probe,
    Transcript,
    TranscriptMessage,
    bundled_data_dir,
    bundled_foreign_runs,
    bundled_transcripts,
    bundled_workspace,
    dumps_transcript,
    load_transcript,
    save_transcript,
)

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"


@pytest.fixture(autouse=True)
def _repository_data(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMORYLAB_DATA_DIR", raising=False)


def _make_data() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_data", DATA / "make_data.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_data", module)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------------------ the generator


def test_generated_files_are_up_to_date() -> None:
    problems = _make_data().check(DATA)
    assert problems == [], "run `python data/make_data.py` and commit:\n" + "\n".join(problems)


def test_differences_names_missing_extra_and_changed_files(tmp_path: Path) -> None:
    make_data = _make_data()
    want, have = tmp_path / "want", tmp_path / "have"
    for root in (want, have):
        (root / "transcripts").mkdir(parents=True)
    (want / "transcripts" / "a.jsonl").write_text("1")
    (want / "transcripts" / "b.jsonl").write_text("1")
    (have / "transcripts" / "b.jsonl").write_text("2")
    (have / "transcripts" / "c.jsonl").write_text("3")
    assert make_data.differences(want, have) == [
        "missing: transcripts/a.jsonl",
        "differs: transcripts/b.jsonl",
        "not generated any more: transcripts/c.jsonl",
    ]


def test_every_domain_file_is_generated() -> None:
    assert sorted(_make_data().DOMAINS) == sorted(p.stem for p in (DATA / "domains").glob("*.toml"))


def test_data_folder_is_small() -> None:
    total = sum(
        p.stat().st_size for p in DATA.rglob("*") if p.is_file() and "__pycache__" not in p.parts
    )
    assert total < 8 * 1024 * 1024


# ------------------------------------------------------------------------------ transcripts


def _transcripts() -> list[Transcript]:
    return [load_transcript(path) for path in bundled_transcripts()]


def test_three_long_multi_session_transcripts() -> None:
    transcripts = _transcripts()
    assert len(transcripts) == 3
    assert len({t.name for t in transcripts}) == 3
    for t in transcripts:
        assert 600 <= len(t.messages) <= 1500, t.name
        assert 4 <= t.sessions <= 8, t.name
        assert [m.session for m in t.messages] == sorted(m.session for m in t.messages)
        assert {m.role for m in t.messages} == {"user", "assistant", "tool"}
        sizes = [len(m.content) for m in t.messages]
        assert min(sizes) >= 50 and max(sizes) <= 3072, t.name
        assert max(sizes) > 2000, "some messages are long"
        stamps = [m.timestamp for m in t.messages]
        assert all(a < b for a, b in itertools.pairwise(stamps)), t.name
        assert all(s.utcoffset() is not None and not s.utcoffset() for s in stamps)


def test_facts_are_planted_where_they_say() -> None:
    for t in _transcripts():
        assert len(t.facts) >= 40, t.name
        counts = Counter(f.category for f in t.facts)
        assert set(counts) == set(FACT_CATEGORIES), t.name
        assert len({f.id for f in t.facts}) == len(t.facts)
        for fact in t.facts:
            assert fact.text in t.messages[fact.message_index].content, fact
        # every category early, in the middle and late
        for category in FACT_CATEGORIES:
            thirds = {
                3 * f.message_index // len(t.messages) for f in t.facts if f.category == category
            }
            assert thirds == {0, 1, 2}, (t.name, category, thirds)
        # some facts are mentioned again later
        repeated = [
            f
            for f in t.facts
            if any(f.text in m.content for m in t.messages[f.message_index + 1 :])
        ]
        assert len(repeated) >= 8, t.name


def test_every_fact_has_a_probe_with_a_short_answer_from_the_fact() -> None:
    for t in _transcripts():
        facts = {f.id: f for f in t.facts}
        assert {p.fact_id for p in t.probes} == set(facts)
        for probe in t.probes:
            assert probe.fact_id in facts
            assert probe.answer in facts[probe.fact_id].text
            assert probe.question.endswith("?")
            assert len(probe.answer) <= 100


def test_as_messages_feeds_a_conversation() -> None:
    t = load_transcript(bundled_transcripts()[0])
    rows = t.as_messages()
    assert len(rows) == len(t.messages)
    assert set(rows[0]) == {"role", "content", "timestamp"}
    assert datetime.fromisoformat(rows[0]["timestamp"]) == t.messages[0].timestamp
    assert t.message_of(t.facts[0]) is t.messages[t.facts[0].message_index]
    assert t.fact(t.facts[-1].id) == t.facts[-1]
    with pytest.raises(KeyError):
        t.fact("nope")


# ------------------------------------------------------------------------------ workspaces


def _agent_folders(kind: str) -> list[Path]:
    return sorted(p for p in (bundled_workspace(kind) / "agents").iterdir() if p.is_dir())  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["memorylab", "reference"])
def test_every_workspace_file_parses_strictly(kind: str) -> None:
    files = sorted(bundled_workspace(kind).rglob("*.md"))  # type: ignore[arg-type]
    assert len(files) >= 10
    for path in files:
        doc = read_memory(path, strict=True)
        assert doc.messages, path


def test_memorylab_workspace_has_lineage_and_records() -> None:
    folders = _agent_folders("memorylab")
    assert len(folders) == 3
    for folder in folders:
        archives = sorted(p.name for p in (folder / "archive").iterdir())
        records = [
            json.loads(line) for line in (folder / "compactions.jsonl").read_text().splitlines()
        ]
        assert len(records) >= 3, folder.name
        assert [r["archive"] for r in records] == archives  # one line per archive, in time order
        for record in records:
            assert record["summarizer_model"] == "memorylab/extractive"
            assert record["agent"] == folder.name and record["error"] is None
            assert record["tokens_after"] < record["tokens_before"] <= record["context_length"]
            when = datetime.fromisoformat(record["time"])
            assert when.tzinfo is not None
            parsed = parse_archive_name(record["archive"])
            assert parsed is not None and parsed[0] == when.astimezone(UTC).replace(
                tzinfo=None, microsecond=0
            )
        # lineage: MEMORY.md -> newest archive -> ... -> oldest archive (which continues nothing)
        chain: list[str] = []
        doc = read_memory(folder / "MEMORY.md")
        while doc.continues is not None:
            chain.append(doc.continues)
            assert doc.format_version == 1 and doc.messages[0].is_summary
            doc = read_memory(folder / "archive" / doc.continues)
        assert chain[::-1] == archives
        roles = {m.role for p in folder.rglob("*.md") for m in read_memory(p).messages}
        assert {"User", folder.name, "Tool Executor", "System"} <= roles


def test_reference_workspace_is_in_the_reference_format() -> None:
    folders = _agent_folders("reference")
    assert len(folders) == 2
    fractions: set[bool] = set()
    roles: set[str] = set()
    for folder in folders:
        assert not (folder / "compactions.jsonl").exists()
        names = sorted(p.name for p in (folder / "archive").iterdir())
        assert len(names) >= 3
        for path in [folder / "MEMORY.md", *(folder / "archive" / n for n in names)]:
            text = path.read_text(encoding="utf-8")
            assert "**Format:**" not in text and "**Continues:**" not in text
            doc = read_memory(path)
            assert doc.format_version is None and doc.continues is None
            assert re.fullmatch(
                rf"{folder.name}_id_[0-9a-f-]{{36}}_conversation", doc.conversation_name or ""
            )
            assert doc.created is not None and doc.created.tzinfo is None
            for message in doc.messages:
                assert message.timestamp.tzinfo is None
                fractions.add(message.timestamp.microsecond != 0)
                roles.add(message.role)
                assert message.content == message.content.strip()
            if path.name != names[0]:
                assert doc.messages[0].is_summary, path  # the first block after a compaction
        for name in names:
            assert re.fullmatch(r"history_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d\.md", name)
    assert fractions == {True, False}
    assert {"Human", "System", "Tool Executor", "QuantAgent", "SupportBot", "user"} <= roles


def test_reference_workspace_has_a_lost_archive() -> None:
    """Two compactions in one second: the second archive (which starts with the first one's
    summary, written that same second) replaced the first."""
    overwritten = []
    for folder in _agent_folders("reference"):
        for path in (folder / "archive").iterdir():
            doc = read_memory(path)
            name_time = parse_archive_name(path.name)
            assert name_time is not None
            first = doc.messages[0]
            if first.is_summary and first.timestamp.replace(microsecond=0) == name_time[0]:
                overwritten.append(path)
    assert len(overwritten) == 1


# ------------------------------------------------------------------------------ the format


def _small() -> Transcript:
    when = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    return Transcript(
        name="tiny",
        seed=1,
        description="two sessions",
        messages=(
            TranscriptMessage(1, "user", "Use /srv/data for the output, please.", when),
            TranscriptMessage(2, "assistant", "Writing to /srv/data — done.", when.replace(day=6)),
        ),
        facts=(Fact("t-f01", "path", "/srv/data", 0),),
        probes=(Probe("t-q01", "t-f01", "Where does the output go?", "/srv/data"),),
    )


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    transcript = _small()
    path = save_transcript(transcript, tmp_path / "tiny.jsonl")
    assert load_transcript(path) == transcript
    lines = path.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0]) == {
        "type": "meta",
        "name": "tiny",
        "seed": 1,
        "description": "two sessions",
        "sessions": 2,
    }
    assert json.loads(lines[1])["timestamp"] == "2026-01-05T09:00:00+00:00"
    assert "—" in lines[2]  # UTF-8, not escaped
    assert path.read_text(encoding="utf-8") == dumps_transcript(transcript)


def _write(tmp_path: Path, lines: list[object]) -> Path:
    path = tmp_path / "bad.jsonl"
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


META = {"type": "meta", "name": "x", "seed": 0, "description": "", "sessions": 1}
MSG = {
    "type": "message",
    "session": 1,
    "role": "user",
    "content": "port 8443",
    "timestamp": "2026-01-01T00:00:00Z",
}


@pytest.mark.parametrize(
    ("lines", "line", "message"),
    [
        ([META, "{not json"], 2, "not valid JSON"),
        ([MSG], 1, "first line must be the meta line"),
        ([META, MSG, [1, 2]], 3, "must be a JSON object"),
        ([META, {**MSG, "session": 2}], 2, "session 2 first: sessions are numbered from 1"),
        ([META, MSG, {**MSG, "session": 3}], 3, "session 3 after session 1"),
        ([META, {**MSG, "timestamp": "2026-01-01T00:00:00+02:00"}], 2, "must be in UTC"),
        ([META, {**MSG, "timestamp": "yesterday"}], 2, "not ISO-8601"),
        ([META, {**MSG, "role": ""}], 2, "'role' must not be empty"),
        ([META, {**MSG, "content": 5}], 2, "'content' must be str"),
        ([META, {**MSG, "extra": 1}], 2, "unknown keys ['extra']"),
        ([META, {"type": "note"}], 2, "unknown line type 'note'"),
        (
            [
                META,
                MSG,
                {
                    "type": "fact",
                    "id": "f",
                    "category": "color",
                    "text": "8443",
                    "message_index": 0,
                },
            ],
            3,
            "unknown fact category",
        ),
        (
            [
                META,
                MSG,
                {
                    "type": "fact",
                    "id": "f",
                    "category": "number",
                    "text": "9000",
                    "message_index": 0,
                },
            ],
            3,
            "does not appear in message 0",
        ),
        (
            [
                META,
                MSG,
                {
                    "type": "fact",
                    "id": "f",
                    "category": "number",
                    "text": "8443",
                    "message_index": 4,
                },
            ],
            3,
            "out of range",
        ),
        (
            [META, MSG, {"type": "fact", "id": "f", "category": "number", "text": "8443"}],
            3,
            "needs the key 'message_index'",
        ),
        (
            [
                META,
                MSG,
                {"type": "probe", "id": "q", "fact_id": "f", "question": "?", "answer": "8443"},
            ],
            3,
            "unknown fact 'f'",
        ),
        ([{**META, "sessions": 3}, MSG], 1, "says 3 sessions, the messages have 1"),
        ([META, MSG, META], 3, "a second meta line"),
    ],
)
def test_load_errors_name_the_file_and_line(
    tmp_path: Path, lines: list[object], line: int, message: str
) -> None:
    path = _write(tmp_path, lines)
    with pytest.raises(MemoryFormatError) as caught:
        load_transcript(path)
    assert caught.value.line == line
    assert caught.value.path == str(path)
    assert message in str(caught.value)
    assert str(caught.value).startswith(f"{path}, line {line}: ")


def test_load_errors_for_files(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="does not exist"):
        load_transcript(tmp_path / "missing.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(MemoryFormatError, match="empty"):
        load_transcript(tmp_path / "empty.jsonl")
    (tmp_path / "binary.jsonl").write_bytes(b'{"type": "meta"}\n\xff\xfe')
    with pytest.raises(MemoryFormatError, match="not UTF-8") as caught:
        load_transcript(tmp_path / "binary.jsonl")
    assert caught.value.line == 2


def test_duplicate_ids_are_refused(tmp_path: Path) -> None:
    fact = {"type": "fact", "id": "f", "category": "number", "text": "8443", "message_index": 0}
    with pytest.raises(MemoryFormatError, match="duplicate fact id 'f'"):
        load_transcript(_write(tmp_path, [META, MSG, fact, fact]))
    probe = {"type": "probe", "id": "q", "fact_id": "f", "question": "Port?", "answer": "8443"}
    with pytest.raises(MemoryFormatError, match="duplicate probe id 'q'"):
        load_transcript(_write(tmp_path, [META, MSG, fact, probe, probe]))


# ------------------------------------------------------------------------------ bundled paths


def test_bundled_paths() -> None:
    assert bundled_data_dir() == DATA
    assert [p.name for p in bundled_transcripts()] == sorted(
        p.name for p in (DATA / "transcripts").glob("*.jsonl")
    )
    assert bundled_workspace() == DATA / "workspace"
    assert bundled_workspace("reference") == DATA / "reference_workspace"
    with pytest.raises(InvalidSetting, match="kind must be one of"):
        bundled_workspace("swarms")  # type: ignore[arg-type]


def test_data_dir_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORYLAB_DATA_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(PrerequisiteError, match="MEMORYLAB_DATA_DIR"):
        bundled_data_dir()
    (tmp_path / "nowhere").mkdir()
    assert bundled_data_dir() == tmp_path / "nowhere"
    with pytest.raises(PrerequisiteError, match="no transcripts"):
        bundled_transcripts()
    with pytest.raises(PrerequisiteError, match=r"make_data\.py"):
        bundled_workspace()
    with pytest.raises(PrerequisiteError, match="runs of other frameworks are missing"):
        bundled_foreign_runs()


def test_one_bundled_run_of_each_other_framework_read_by_its_loader() -> None:
    """Each format in data/foreign/ has one run the notebook and docs can open from an installed
    memorylab, read by the loader of the name it is listed under."""
    from memorylab.analysis import loader_for

    runs = bundled_foreign_runs()
    assert sorted(runs) == sorted(p.name for p in (DATA / "foreign").iterdir() if p.is_dir())
    for name, path in runs.items():
        assert path.is_relative_to(DATA / "foreign" / name)
        assert loader_for(path).name == name


def test_bundled_data_dir_says_when_the_data_package_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def not_installed(package: str) -> Path:
        raise ModuleNotFoundError(f"No module named {package!r}")

    monkeypatch.setattr(importlib.resources, "files", not_installed)
    with pytest.raises(PrerequisiteError, match=r"memorylab\._data.*pip install -e \."):
        bundled_data_dir()


# ------------------------------------------------------------------------------ packaging
# data/ is installed as the package memorylab._data (tests/test_wheel.py builds the wheel).


def _setuptools_config() -> dict[str, Any]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    setuptools: dict[str, Any] = config["tool"]["setuptools"]
    return setuptools


def test_pyproject_lists_every_package_and_the_data() -> None:
    config = _setuptools_config()
    toolkit = ROOT / "toolkit"
    found = {
        ".".join(init.parent.relative_to(toolkit).parts)
        for init in toolkit.glob("memorylab/**/__init__.py")
    }
    assert sorted(config["packages"]) == sorted(found | {"memorylab._data"})
    assert config["package-dir"] == {"": "toolkit", "memorylab._data": "data"}


def test_package_data_holds_every_generated_file_and_the_domains() -> None:
    patterns = _setuptools_config()["package-data"]["memorylab._data"]
    shipped = {path for pattern in patterns for path in DATA.glob(pattern) if path.is_file()}
    wanted = {
        path
        for name in _make_data().GENERATED
        for path in (DATA / name).rglob("*")
        if path.is_file() and not path.name.startswith(".")  # lock files are per machine
    }
    assert wanted - shipped == set()
    assert set(DATA.glob("domains/*.toml")) <= shipped


def test_package_data_holds_the_runs_other_frameworks_wrote() -> None:
    """data/foreign/ ships whole: each run with its README, generator and licence."""
    patterns = _setuptools_config()["package-data"]["memorylab._data"]
    shipped = {path for pattern in patterns for path in DATA.glob(pattern) if path.is_file()}
    wanted = {
        path
        for path in (DATA / "foreign").rglob("*")
        if path.is_file()
        and "__pycache__" not in path.parts
        and not path.name.startswith(".")
        and not path.name.endswith(("-wal", "-shm", "-journal"))  # a SQLite reader's, per machine
    }
    assert sorted(str(p.relative_to(DATA)) for p in wanted - shipped) == [], (
        "add a pattern for these to [tool.setuptools.package-data] memorylab._data in pyproject.toml"
    )
