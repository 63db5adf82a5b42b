"""Child process for the forget-while-writing test (run as a script, not imported).

    python _writer.py WORKSPACE AGENT EVERY

Makes a ``Conversation``, prints ``ready``, then adds ``msg-<n>`` in a loop and compacts after
every ``EVERY`` adds, until an operation raises ``StoreError`` (the memory was forgotten). Then
it keeps trying adds and compactions for 0.5 s (each must fail too, and none may recreate a
file) and prints ``stopped <ok before> <ok after> <failed after> <error names>``; exit code 0.
"""

from __future__ import annotations

import sys
import time

from memorylab import Conversation
from memorylab.errors import StoreError


def main(workspace: str, agent: str, every: int) -> None:
    conv = Conversation(agent_name=agent, workspace_dir=workspace)
    print("ready", flush=True)
    before = n = 0
    errors: set[str] = set()
    try:
        while True:
            conv.add("User", f"msg-{n}")
            n += 1
            if n % every == 0:
                conv.compact(f"summary up to msg-{n - 1}")
            before += 1
    except StoreError as error:
        errors.add(type(error).__name__)
    after = failed = 0
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:
        for attempt in (lambda: conv.add("User", "late"), lambda: conv.compact("late summary")):
            try:
                attempt()
                after += 1
            except StoreError as error:
                failed += 1
                errors.add(type(error).__name__)
    print("stopped", before, after, failed, ",".join(sorted(errors)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
