"""Reading another framework's run into its record, against reading the same bytes (issue 40).

Files, generated in a temporary folder (``--quick``: ~4 MB each; the full run: 100 MB sessions):

* two Claude Code sessions written to its format (:func:`write_session`): a user prompt, a
  reply over three lines (thinking, text, a ``Read`` tool call: one ``message.id``), the tool's
  result with Claude Code's ``toolUseResult`` copy of it, a closing reply, usage with cache
  tokens on every reply, a ``file-history-snapshot`` every 10 turns, a compaction every 40
  turns (``compact_boundary`` + summary, at ~160k tokens of context). One has some non-ASCII
  text (``é``, ``→``, ``✅``, now and then an emoji), the other none: one character past U+FFFF
  makes the baseline's decoded text four bytes a character, so the two show what the baseline
  itself costs;
* an OpenAI Agents SDK sessions database (``SQLiteSession``'s two tables, ~60 MB): the committed
  sample's sessions copied under new ids;
* an inspect_ai ``.json`` eval log (50 MB): the committed sample's sample copied under new ids.

Rows (medians of rounds that alternate each subject with its baselines, so a busy machine slows
them alike; CPU time, system time included, every subject on one thread):

* ``read + split lines``: the bytes read, decoded as UTF-8, ``str.splitlines()`` (the baseline
  of ``bench_analysis.py``'s loader row, the same words in the issue); target: the loader
  (``load_records``) <= 2.0x;
* ``read + split bytes``: the bytes read and split at ``\\n``, nothing decoded (the floor);
* ``load_records``: the file into its records (what every reader calls); ``memory_df``: then the
  frame (no tokens counted: ``model=`` counts them, which ``bench_analysis.py`` measures);
* candidates: decoding the lines alone (read included) with the standard library, orjson and
  pysimdjson (where installed), msgspec into dicts, and msgspec into a few fields, line by line
  and in one call: how the loader's decoder was chosen;
* the database: ``load_records`` against selecting the rows and parsing each ``message_data``
  (``json.loads``); the eval log: against reading it and ``json.loads``.

Peak memory: each subject in a child process, its peak RSS (``VmHWM``, reset once the imports
are done) over the RSS before it, against the file's bytes (Linux; elsewhere left out).

``--quick`` (the CI smoke run) always exits 0; the full run exits 1 when a target fails.

    python tests/benchmarks/bench_foreign_read.py [--quick] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec

from memorylab.analysis import load_records, memory_df

SEED = 20260906
TARGET = 2.0
VERDICT = {True: "PASS", False: "FAIL"}
DATA = Path(__file__).resolve().parents[2] / "data" / "foreign"
SESSION = "5f0c3a1e-8d2b-4c6f-9a7e-2b1d4e6f8a90"
MODEL = "claude-sonnet-4-5-20250929"
WORDS = [
    "the",
    "order",
    "total",
    "tax",
    "invoice",
    "rounding",
    "checkout",
    "refactor",
    "cart",
    "line",
    "item",
    "price",
    "discount",
    "coupon",
    "test",
    "assert",
    "fixture",
    "module",
    "def",
    "return",
    "self",
    "items",
    "(i)",
    "=",
    "+",
    "{x}",
    "'q'",
    '"quoted"',
    "path/to/file.py",
]
NON_ASCII = ("café", "→", "✅", "naïve", "größe", "—", "日本語")
EMOJI = ("🚀", "🎉")


@dataclass(frozen=True)
class Settings:
    session_bytes: int
    database_bytes: int
    eval_bytes: int
    rounds: int


FULL = Settings(session_bytes=100_000_000, database_bytes=60_000_000, eval_bytes=50_000_000,
                rounds=5)  # fmt: skip
QUICK = Settings(session_bytes=4_000_000, database_bytes=3_000_000, eval_bytes=3_000_000,
                 rounds=3)  # fmt: skip


# ---------------------------------------------------------------------------- a Claude Code session


@dataclass
class Written:
    """What :func:`write_session` wrote, for a reader to be checked against: the chain's user
    prompts, tool results and closing replies in order, each compaction's ``preTokens`` and
    summary, the replies (``message.id``s) with usage, the thinking blocks, the file's lines."""

    prompts: list[str] = field(default_factory=list)
    results: list[str] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)
    tool_files: list[str] = field(default_factory=list)
    pre_tokens: list[int] = field(default_factory=list)
    summaries: list[str] = field(default_factory=list)
    calls: int = 0
    thinking: int = 0
    lines: int = 0
    bytes: int = 0


class _SessionWriter:
    def __init__(self, out: Any, rng: random.Random, unicode: bool) -> None:
        self.out = out
        self.rng = rng
        self.unicode = unicode
        self.count = 0
        self.parent: str | None = None
        self.clock = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
        self.written = Written()

    def text(self, words: int) -> str:
        chosen = [self.rng.choice(WORDS) for _ in range(words)]
        if self.unicode and self.rng.random() < 0.3:
            chosen[self.rng.randrange(words)] = self.rng.choice(NON_ASCII)
        if self.unicode and self.rng.random() < 0.02:
            chosen[0] = self.rng.choice(EMOJI)
        return " ".join(chosen)

    def emit(self, line: dict[str, Any]) -> None:
        data = json.dumps(line, separators=(",", ":"), ensure_ascii=False) + "\n"
        self.out.write(data)
        self.written.lines += 1
        self.written.bytes += len(data.encode())

    def entry(self, kind: str, **fields: Any) -> None:
        self.count += 1
        self.clock += timedelta(seconds=self.rng.randint(1, 40))
        uuid = f"00000000-0000-4000-8000-{self.count:012d}"
        self.emit({
            "parentUuid": self.parent, "isSidechain": False, "userType": "external",
            "cwd": "/home/dev/shop", "sessionId": SESSION, "version": "2.0.14",
            "gitBranch": "main", "type": kind, **fields, "uuid": uuid,
            "timestamp": self.clock.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        })  # fmt: skip
        self.parent = uuid

    def reply(self, ident: str, blocks: list[dict[str, Any]], context: int) -> None:
        usage = {"input_tokens": 4, "cache_creation_input_tokens": 900,
                 "cache_read_input_tokens": context, "output_tokens": 250,
                 "service_tier": "standard"}  # fmt: skip
        for block in blocks:  # one line per content block, as Claude Code writes a reply
            self.entry("assistant", requestId=f"req_{ident}", message={
                "id": ident, "type": "message", "role": "assistant", "model": MODEL,
                "content": [block], "stop_reason": None, "stop_sequence": None, "usage": usage,
            })  # fmt: skip
        self.written.calls += 1

    def turn(self, turn: int, context: int) -> None:
        prompt = self.text(self.rng.randint(8, 60))
        self.entry("user", message={"role": "user", "content": prompt})
        self.written.prompts.append(prompt)
        tool, file = f"toolu_{turn:07d}", f"/home/dev/shop/module_{turn}.py"
        self.reply(f"msg_{turn:07d}a", [
            {"type": "thinking", "thinking": self.text(90), "signature": "EqQB" + "x" * 300},
            {"type": "text", "text": self.text(25)},
            {"type": "tool_use", "id": tool, "name": "Read", "input": {"file_path": file}},
        ], context)  # fmt: skip
        self.written.thinking += 1
        self.written.tool_files.append(file)
        body = "\n".join(f"{n:>6}\t{self.text(10)}" for n in range(1, self.rng.randint(20, 160)))
        self.entry(
            "user",
            message={"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": tool, "content": body}]},
            toolUseResult={"type": "text", "file": {"filePath": file, "content": body,
                           "numLines": body.count("\n") + 1, "startLine": 1, "totalLines": 400}},
        )  # fmt: skip
        self.written.results.append(body)
        answer = self.text(self.rng.randint(20, 120))
        self.reply(f"msg_{turn:07d}b", [{"type": "text", "text": answer}], context + 2_000)
        self.written.replies.append(answer)
        if turn % 10 == 0:
            self.emit({"type": "file-history-snapshot", "messageId": f"msg_{turn:07d}a",
                       "isSnapshotUpdate": False, "snapshot": {
                           "messageId": f"msg_{turn:07d}a", "timestamp": "2026-03-02T09:00:00Z",
                           "trackedFileBackups": {f"/home/dev/shop/module_{n}.py": {
                               "backupFileName": f"{n:08x}@v2", "version": 2,
                               "backupTime": "2026-03-02T09:00:00Z"} for n in range(25)}}})  # fmt: skip

    def compact(self, pre_tokens: int) -> None:
        last, self.parent = self.parent, None
        self.entry("system", subtype="compact_boundary", content="Conversation compacted",
                   isMeta=False, level="info", logicalParentUuid=last,
                   compactMetadata={"trigger": "auto", "preTokens": pre_tokens})  # fmt: skip
        summary = self.text(300)
        self.entry("user", isCompactSummary=True, isVisibleInTranscriptOnly=True, message={
            "role": "user", "content": "This session is being continued from a previous "
            f"conversation that ran out of context. The conversation is summarized below:\n{summary}",
        })  # fmt: skip
        self.written.pre_tokens.append(pre_tokens)
        self.written.summaries.append(summary)


def write_session(
    path: Path,
    size: int,
    *,
    seed: int = SEED,
    unicode: bool = True,
    compact_every: int = 40,
    blank_line: bool = False,
    torn_line: bool = False,
) -> Written:
    """Write a Claude Code session of about ``size`` bytes to ``path`` (the module docstring);
    ``blank_line``: one empty line after the first turn; ``torn_line``: the file ends in half a
    line (a session being written). Deterministic for a seed."""
    with path.open("w", encoding="utf-8", newline="\n") as out:
        writer = _SessionWriter(out, random.Random(seed), unicode)
        writer.emit({"type": "summary", "summary": "Shop checkout refactor", "leafUuid": "x"})
        turn, context = 0, 20_000
        while writer.written.bytes < size:
            turn += 1
            writer.turn(turn, context)
            context += writer.rng.randint(3_000, 4_000)
            if turn == 1 and blank_line:
                out.write("\n")
                writer.written.lines += 1
                writer.written.bytes += 1
            if turn % compact_every == 0:
                writer.compact(context)
                context = 20_000
        if torn_line:
            out.write('{"parentUuid":"00000000-0000-4000-8000-0000000000","type":"user","mess')
            writer.written.lines += 1
    return writer.written


# ---------------------------------------------------------------------------- the other formats


def write_database(path: Path, size: int) -> None:
    """An OpenAI Agents SDK sessions database of about ``size`` bytes: the committed sample's
    ``SQLiteSession`` tables, its sessions' rows copied under new session ids."""
    # immutable: a read-only open of a WAL database writes -shm and -wal beside the sample
    sample = sqlite3.connect(f"file:{DATA / 'openai-agents' / 'sessions.sqlite'}?immutable=1",
                             uri=True)  # fmt: skip
    schema = [sql for (name, sql) in sample.execute("SELECT name, sql FROM sqlite_master")
              if name in ("agent_sessions", "agent_messages", "idx_agent_messages_session_id")]  # fmt: skip
    sessions = [s for (s,) in sample.execute("SELECT session_id FROM agent_sessions")]
    rows = {s: sample.execute("SELECT message_data, created_at FROM agent_messages WHERE "
                              "session_id = ? ORDER BY id", (s,)).fetchall() for s in sessions}  # fmt: skip
    sample.close()
    copy_bytes = sum(len(data) + 90 for session in rows.values() for data, _ in session)
    with sqlite3.connect(path) as db:
        for sql in schema:
            db.execute(sql)
        for copy in range(max(1, size // copy_bytes)):
            for session, items in rows.items():
                name = f"{session}-{copy}"
                db.execute("INSERT INTO agent_sessions (session_id) VALUES (?)", (name,))
                db.executemany("INSERT INTO agent_messages (session_id, message_data, created_at) "
                               "VALUES (?, ?, ?)", [(name, d, t) for d, t in items])  # fmt: skip
    db.close()


def write_eval_log(path: Path, size: int) -> None:
    """An inspect_ai ``.json`` eval log of about ``size`` bytes: the committed sample's sample
    copied under new ids."""
    log = json.loads((DATA / "inspect-ai" / "checkout-bug-hunt.json").read_text(encoding="utf-8"))
    (sample,) = log["samples"]
    copies = max(1, size // len(json.dumps(sample)))
    log["samples"] = [{**sample, "id": f"{sample['id']}-{n}"} for n in range(copies)]
    path.write_text(json.dumps(log), encoding="utf-8")


# ---------------------------------------------------------------------------- measuring


def _read_split_lines(path: Path) -> int:
    return len(path.read_bytes().decode("utf-8").splitlines())


def _read_split_bytes(path: Path) -> int:
    return len(path.read_bytes().split(b"\n"))


class _Fields(msgspec.Struct):  # the loader's own types are private: a like-sized stand-in
    type: Any = None
    uuid: Any = None
    parentUuid: Any = None
    timestamp: Any = None
    sessionId: Any = None
    message: Any = None


def _per_line(decode: Callable[[bytes], Any]) -> Callable[[Path], int]:
    def run(path: Path) -> int:  # the values kept, as a reader keeps them
        return len([decode(line) for line in path.read_bytes().split(b"\n") if line])

    return run


def _candidates() -> dict[str, Callable[[Path], int]]:
    """Decoders of the session's lines, read included (orjson and pysimdjson where installed:
    neither is a dependency)."""
    found: dict[str, Callable[[Path], int]] = {"json.loads, line by line": _per_line(json.loads)}
    try:
        import orjson
    except ImportError:
        pass
    else:
        found["orjson.loads, line by line"] = _per_line(orjson.loads)
    try:
        import simdjson
    except ImportError:
        pass
    else:
        parser = simdjson.Parser()
        found["pysimdjson, line by line"] = _per_line(lambda line: parser.parse(line, True))
    found["msgspec into dicts, line by line"] = _per_line(msgspec.json.Decoder().decode)
    fields = msgspec.json.Decoder(_Fields)
    found["msgspec into fields, line by line"] = _per_line(fields.decode)
    found["msgspec into fields, one call"] = lambda path: len(
        fields.decode_lines(path.read_bytes())
    )
    return found


def _medians(subjects: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Each subject's median CPU time (this process's, system time included: reading the file
    is) over ``rounds`` rounds that visit every subject. Not wall time: on a shared machine it
    measures the neighbours; every subject here runs on one thread."""
    times: dict[str, list[float]] = {name: [] for name in subjects}
    for _ in range(rounds):
        for name, run in subjects.items():
            start = time.process_time()
            run()
            times[name].append(time.process_time() - start)
    return {name: statistics.median(values) for name, values in times.items()}


_PEAK = """
import json, sys
from pathlib import Path
sys.path.insert(0, {here!r})
import bench_foreign_read as bench
from memorylab.analysis import load_records
def kib(field):
    status = Path("/proc/self/status").read_text().splitlines()
    return int(next(line for line in status if line.startswith(field)).split()[1])
path = Path(sys.argv[2])
run = {{"baseline": bench._read_split_lines, "db baseline": bench._select_and_parse,
        "json baseline": bench._read_and_parse, "load": load_records}}[sys.argv[1]]
before = kib("VmRSS:")
Path("/proc/self/clear_refs").write_text("5")  # the peak (VmHWM) starts again from here
kept = run(path)
print(json.dumps(kib("VmHWM:") - before))
"""


def _peak(subject: str, path: Path) -> float | None:
    """How much a fresh process's peak RSS grows while ``subject`` reads ``path``, against the
    file's bytes (the peak reset once the imports are done: Linux's ``clear_refs``; elsewhere
    ``None``)."""
    if not Path("/proc/self/clear_refs").exists():
        return None
    code = _PEAK.format(here=str(Path(__file__).parent))
    done = subprocess.run([sys.executable, "-c", code, subject, str(path)], capture_output=True,
                          text=True, check=True)  # fmt: skip
    return int(done.stdout.strip().splitlines()[-1]) * 1024 / path.stat().st_size


def _select_and_parse(path: Path) -> int:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT message_data FROM agent_messages ORDER BY id").fetchall()
    db.close()
    return sum(1 for (data,) in rows if json.loads(data))


def _read_and_parse(path: Path) -> int:
    return len(json.loads(path.read_bytes()))


@dataclass
class Row:
    subject: str
    seconds: float
    ratio: float | None = None
    floor: float | None = None
    peak: float | None = None
    verdict: str = ""


def _session_rows(path: Path, settings: Settings, with_candidates: bool) -> list[Row]:
    subjects: dict[str, Callable[[], object]] = {
        "read + split lines (baseline)": lambda: _read_split_lines(path),
        "read + split bytes (floor)": lambda: _read_split_bytes(path),
        "load_records": lambda: load_records(path),
        "memory_df (no tokens)": lambda: memory_df(path),
    }
    if with_candidates:
        subjects |= {name: (lambda run=run: run(path)) for name, run in _candidates().items()}
    times = _medians(subjects, settings.rounds)
    base = times["read + split lines (baseline)"]
    floor = times["read + split bytes (floor)"]
    peaks = {name: _peak(key, path)
             for name, key in (("read + split lines (baseline)", "baseline"),
                               ("load_records", "load"))}  # fmt: skip
    rows = []
    for name, seconds in times.items():
        row = Row(name, seconds, seconds / base, seconds / floor, peaks.get(name))
        if name == "load_records":
            row.verdict = f"{VERDICT[row.ratio is not None and row.ratio <= TARGET]} (<= {TARGET}x)"
        rows.append(row)
    return rows


def _other_rows(database: Path, log: Path, settings: Settings) -> list[Row]:
    times = _medians({
        "select + json.loads each row": lambda: _select_and_parse(database),
        "load_records (sessions database)": lambda: load_records(database),
        "read + json.loads": lambda: _read_and_parse(log),
        "load_records (.json eval log)": lambda: load_records(log),
    }, settings.rounds)  # fmt: skip
    db_base, log_base = times["select + json.loads each row"], times["read + json.loads"]
    return [
        Row("select + json.loads each row", db_base, 1.0,
            peak=_peak("db baseline", database)),
        Row("load_records (sessions database)", times["load_records (sessions database)"],
            times["load_records (sessions database)"] / db_base,
            peak=_peak("load", database)),
        Row("read + json.loads", log_base, 1.0,
            peak=_peak("json baseline", log)),
        Row("load_records (.json eval log)", times["load_records (.json eval log)"],
            times["load_records (.json eval log)"] / log_base,
            peak=_peak("load", log)),
    ]  # fmt: skip


def _table(title: str, rows: list[Row], floor: bool) -> str:
    head = "| subject | median CPU s | x baseline |" + (" x floor |" if floor else "")
    head += " peak RSS / file | target |"
    lines = [f"**{title}**", "", head, "|" + "---|" * (head.count("|") - 1)]
    for row in rows:
        cells = [row.subject, f"{row.seconds:.3f}", "" if row.ratio is None else f"{row.ratio:.2f}"]
        if floor:
            cells.append("" if row.floor is None else f"{row.floor:.2f}")
        cells += ["" if row.peak is None else f"{row.peak:.2f}", row.verdict]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small files (the CI smoke run)")
    parser.add_argument("--dir", type=Path, help="where to write the files (default: a temp dir)")
    args = parser.parse_args(argv)
    settings = QUICK if args.quick else FULL
    folder = Path(tempfile.mkdtemp(prefix="bench-foreign-", dir=args.dir))
    try:
        print(f"python {platform.python_version()} on {platform.system()} {platform.machine()}, "
              f"{os.cpu_count()} CPUs, msgspec {msgspec.__version__}; load average "
              f"{os.getloadavg()[0]:.1f}; {settings.rounds} rounds\n")  # fmt: skip
        passed = True
        for label, unicode in (("with non-ASCII text", True), ("ASCII only", False)):
            path = folder / f"session-{'unicode' if unicode else 'ascii'}.jsonl"
            written = write_session(path, settings.session_bytes, unicode=unicode)
            rows = _session_rows(path, settings, with_candidates=unicode)
            passed &= all(not r.verdict or r.verdict.startswith("PASS") for r in rows)
            title = (f"Claude Code session, {written.bytes / 1e6:.0f} MB, {written.lines:,} "
                     f"lines, {len(written.pre_tokens)} compactions, {label}")  # fmt: skip
            print(_table(title, rows, floor=True), end="\n\n")
        database, log = folder / "sessions.sqlite", folder / "eval.json"
        write_database(database, settings.database_bytes)
        write_eval_log(log, settings.eval_bytes)
        title = (f"Other formats: OpenAI Agents SDK sessions database "
                 f"{database.stat().st_size / 1e6:.0f} MB, inspect_ai .json eval log "
                 f"{log.stat().st_size / 1e6:.0f} MB (x: each against its own baseline)")  # fmt: skip
        print(_table(title, _other_rows(database, log, settings), floor=False))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if args.quick:
        return 0
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
