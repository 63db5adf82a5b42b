"""A child process killed with SIGKILL at a chosen instant of its work: the crash tests' one
harness (the child prints ``ready`` on stdout once it starts working)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Sequence


def kill_while_working(cmd: Sequence[str], delay: float) -> None:
    """Run ``cmd``, wait for its ``ready`` line, let it work ``delay`` seconds and SIGKILL it.

    A child that does not start, or exits by itself before the kill (the kill would test
    nothing), fails the test with its stderr."""
    with subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        if proc.stdout.readline().strip() != b"ready":
            proc.kill()
            proc.wait()
            raise AssertionError(f"child did not start: {proc.stderr.read().decode()}")
        time.sleep(delay)
        if proc.poll() is not None:
            raise AssertionError(
                f"child exited by itself (rc={proc.returncode}) before the kill:\n"
                f"{proc.stderr.read().decode()}"
            )
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert proc.returncode == -signal.SIGKILL
