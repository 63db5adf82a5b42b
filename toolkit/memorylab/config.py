"""Where memory lives: workspace resolution.

Precedence: an explicit ``workspace_dir`` argument > ``$WORKSPACE_DIR`` read at call time (never
at import, so tests and notebooks may change it) > ``./agent_workspace`` relative to the current
directory.
"""

from __future__ import annotations

import os
from pathlib import Path

WORKSPACE_ENV = "WORKSPACE_DIR"
DEFAULT_WORKSPACE = "agent_workspace"


def resolve_workspace(workspace_dir: str | os.PathLike[str] | None = None) -> Path:
    """Return the workspace folder as an absolute path (it need not exist yet)."""
    if workspace_dir is not None and str(workspace_dir) != "":
        chosen = Path(workspace_dir)
    elif os.environ.get(WORKSPACE_ENV):
        chosen = Path(os.environ[WORKSPACE_ENV])
    else:
        chosen = Path(DEFAULT_WORKSPACE)
    return chosen.expanduser().absolute()


__all__ = [
    "DEFAULT_WORKSPACE",
    "WORKSPACE_ENV",
    "resolve_workspace",
]
