"""Child process of tests/memory/test_deletion_crash.py (run as a script, not imported).

Usage::

    python _deletion_worker.py OPERATION WORKSPACE AGENT KILL_AT

Runs one deletion on AGENT (``delete``: ``MemoryStore.delete_archives`` of the archives named
in ``WORKSPACE/doomed.json``; ``retention``: ``apply_retention(max_archives=...)`` keeping the
others; ``purge``: ``memorylab.privacy.purge(older_than="30d")``; ``forget``:
``memorylab.privacy.forget``) and counts its steps as it goes: every ``os.unlink``,
``os.rmdir`` and ``os.replace``, every record appended to ``compactions.jsonl``, the call that
drops the archives from the recall index, and every write statement SQLite runs on the index
(``BEGIN``, ``DELETE``, the FTS5 ``optimize``, ``COMMIT``). Right before step number KILL_AT
it SIGKILLs itself: the kill lands at a named step, deterministically. KILL_AT 0 kills nowhere
and prints the steps, one JSON list, so the parent knows how many there are and what each is.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import sys
from pathlib import Path
from typing import Any

operation, workspace, agent, kill_at = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
os.environ["WORKSPACE_DIR"] = workspace
steps: list[str] = []


def step(what: str) -> None:
    steps.append(what)
    if len(steps) == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)


def counted(real: Any, label: str) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        step(f"{label} {os.path.basename(str(args[0])) if args else ''}".strip())
        return real(*args, **kwargs)

    return wrapper


for name in ("unlink", "rmdir", "replace"):
    setattr(os, name, counted(getattr(os, name), f"os.{name}"))

_WRITES = re.compile(
    r"\s*(BEGIN|COMMIT|ROLLBACK|DELETE FROM recall_\w+|INSERT INTO recall_messages \(recall_messages\))",
    re.IGNORECASE,
)
_connect = sqlite3.connect


def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
    con = _connect(*args, **kwargs)

    def trace(sql: str) -> None:
        match = _WRITES.match(sql)
        if match:
            step(f"sql {match[1]}")

    con.set_trace_callback(trace)
    return con


sqlite3.connect = connect  # type: ignore[assignment]

from memorylab.memory import _recall_index  # noqa: E402
from memorylab.memory._retention import RetentionPolicy  # noqa: E402
from memorylab.memory._store import MemoryStore  # noqa: E402
from memorylab.privacy import forget, purge  # noqa: E402

_append_record = MemoryStore.append_record


def append_record(self: MemoryStore, record: Any) -> None:
    step(f"record {record.get('kind')} {record.get('archive')}")
    _append_record(self, record)


MemoryStore.append_record = append_record  # type: ignore[method-assign]
_drop_archives = _recall_index.drop_archives


def drop_archives(*args: Any, **kwargs: Any) -> None:
    step("index drop")
    _drop_archives(*args, **kwargs)


_recall_index.drop_archives = drop_archives

plan = json.loads(Path(workspace, "doomed.json").read_text())
if operation == "delete":
    MemoryStore.for_agent(agent).delete_archives(plan["doomed"], reason="test")
elif operation == "retention":
    MemoryStore.for_agent(agent).apply_retention(RetentionPolicy(max_archives=len(plan["kept"])))
elif operation == "purge":
    purge(older_than="30d")
elif operation == "forget":
    forget(agent)
else:
    raise SystemExit(f"unknown operation {operation!r}")
print(json.dumps(steps))
