"""The reference framework (swarms 16.0.3, the real package in its own venv) reading memorylab's
files: what it loads of each MEMORY.md, as text, for the tests that promise the reference reads
what memorylab writes."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterable
from pathlib import Path

SWARMS_PYTHON = os.environ.get("MEMORYLAB_SWARMS_PYTHON")  # .ci/run sets it
SKIP_REASON = "set MEMORYLAB_SWARMS_PYTHON to a Python with swarms==16.0.3 (.ci/run does)"

_SCRIPT = (
    "import json, sys\n"
    "from swarms.structs.conversation import Conversation\n"
    "out = {}\n"
    "for path in sys.argv[2:]:\n"
    "    c = Conversation(memory_md_path=path, conversations_dir=sys.argv[1])\n"
    "    out[path] = '\\n'.join(str(m['content']) for m in c.conversation_history)\n"
    "print('<<<' + json.dumps(out) + '>>>')\n"
)
_ENV = {"SWARMS_TELEMETRY_ON": "false", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_OFFLINE_MODE": "true", "HF_HUB_OFFLINE": "1"}  # fmt: skip


def read_with_swarms(paths: Iterable[str | os.PathLike[str]], workdir: Path) -> dict[str, str]:
    """Each MEMORY.md path (a file named MEMORY.md: the reference takes no other name) as the
    reference's ``Conversation(memory_md_path=...)`` loads it: its history's contents joined by
    newlines, keyed by the path as given. Fails the test when the reference raises."""
    assert SWARMS_PYTHON, SKIP_REASON
    names = [str(p) for p in paths]
    done = subprocess.run(
        [SWARMS_PYTHON, "-c", _SCRIPT, str(workdir), *names],
        capture_output=True, text=True, env={**os.environ, **_ENV}, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    loaded: dict[str, str] = json.loads(
        done.stdout[done.stdout.index("<<<") + 3 : done.stdout.rindex(">>>")]
    )
    assert set(loaded) == set(names)
    return loaded
