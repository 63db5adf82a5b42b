"""Progress bars for replays and sweeps (internal): tqdm, shown only for work that takes more
than a second, and only where someone watches (a terminal or a notebook; never under pytest or
with ``$MEMORYLAB_PROGRESS=0``)."""

from __future__ import annotations

import os
import sys
from typing import Any

DELAY_S = 1.0
"""A bar appears once its work has taken this long (tqdm's ``delay``)."""


def watched() -> bool:
    """Whether a progress bar would be seen: a terminal or a notebook, not a test run."""
    setting = os.environ.get("MEMORYLAB_PROGRESS", "").strip().lower()
    if setting in ("0", "false", "no", "off"):
        return False
    if setting in ("1", "true", "yes", "on"):
        return True
    if "PYTEST_CURRENT_TEST" in os.environ or "pytest" in sys.modules:
        return False
    if "ipykernel" in sys.modules:
        return True
    stream = sys.stderr
    return bool(stream is not None and hasattr(stream, "isatty") and stream.isatty())


def bar(total: int, desc: str, unit: str, enabled: bool | None = None) -> Any:
    """A tqdm bar of ``total`` steps (disabled when nobody watches, or ``enabled`` is False)."""
    from tqdm.auto import tqdm

    show = watched() if enabled is None else enabled
    return tqdm(total=total, desc=desc, unit=unit, disable=not show, leave=False, delay=DELAY_S)
