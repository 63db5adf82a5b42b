"""Agent names and the files that belong to one memory file (no writes here)."""

from __future__ import annotations

import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from memorylab.config import resolve_workspace
from memorylab.errors import InvalidAgentName
from memorylab.memory import format as fmt

MAX_NAME_BYTES = 255


def validate_agent_name(agent_name: str) -> str:
    """Return ``agent_name`` unchanged if it is one safe folder name, else raise InvalidAgentName.

    Any printable Unicode is fine (spaces, accents, emoji); path separators, ``.``/``..``,
    NUL and other control characters, and names over 255 UTF-8 bytes are not.
    """
    if not isinstance(agent_name, str):
        raise InvalidAgentName(f"agent_name must be a string, got {type(agent_name).__name__}")
    hint = "choose a plain name such as 'ResearchAgent'"
    if agent_name in ("", ".", ".."):
        raise InvalidAgentName(f"agent_name {agent_name!r} is not a folder name; {hint}")
    if "/" in agent_name or "\\" in agent_name:
        raise InvalidAgentName(
            f"agent_name {agent_name!r} contains a path separator; it must be a single folder "
            f"name inside the workspace ({hint})"
        )
    bad = [c for c in agent_name if unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp")]
    if bad:
        raise InvalidAgentName(
            f"agent_name {agent_name!r} contains control or line-break characters "
            f"{sorted(set(bad))!r}; {hint}"
        )
    if len(agent_name.encode("utf-8")) > MAX_NAME_BYTES:
        raise InvalidAgentName(
            f"agent_name is {len(agent_name.encode('utf-8'))} bytes in UTF-8; at most "
            f"{MAX_NAME_BYTES} fit in a folder name"
        )
    return agent_name


@dataclass(frozen=True, slots=True)
class MemoryPaths:
    """Every file that belongs to one memory file."""

    memory_md: Path

    @property
    def folder(self) -> Path:
        return self.memory_md.parent

    @property
    def archive_dir(self) -> Path:
        return self.folder / "archive"

    @property
    def compactions(self) -> Path:
        stem = "" if self.memory_md.name == "MEMORY.md" else f"{self.memory_md.stem}."
        return self.folder / f"{stem}compactions.jsonl"

    @property
    def lock(self) -> Path:
        return self.folder / f".{self.memory_md.name}.lock"

    @property
    def intent(self) -> Path:
        return self.folder / f".{self.memory_md.name}.intent.json"

    def archives(self) -> list[Path]:
        """Committed archives, oldest first (by name time, then suffix)."""
        if not self.archive_dir.is_dir():
            return []
        found = []
        for entry in self.archive_dir.iterdir():
            parsed = fmt.parse_archive_name(entry.name)
            if parsed is not None and entry.is_file():
                found.append((parsed, entry))
        return [p for _, p in sorted(found)]


def agent_paths(
    agent_name: str, workspace_dir: str | os.PathLike[str] | None = None
) -> MemoryPaths:
    """Paths for ``<workspace>/agents/<agent_name>/MEMORY.md`` (the name is validated)."""
    validate_agent_name(agent_name)
    return MemoryPaths(resolve_workspace(workspace_dir) / "agents" / agent_name / "MEMORY.md")


__all__ = [
    "MAX_NAME_BYTES",
    "MemoryPaths",
    "agent_paths",
    "validate_agent_name",
]
