"""Agent names and the files that belong to one memory file (no writes here)."""

from __future__ import annotations

import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from memorylab.config import resolve_workspace
from memorylab.errors import InvalidAgentName
from memorylab.memory import _format as fmt

MAX_NAME_BYTES = 255


def validate_agent_name(agent_name: str) -> str:
    """``agent_name`` in Unicode NFC form if it is one safe folder name, else raise
    :class:`~memorylab.errors.InvalidAgentName`.

    Any printable Unicode is fine (spaces, accents, emoji); path separators, ``.``/``..``,
    control and line-break characters, invisible format characters (bidi controls, zero-width
    characters, a BOM: they make two names print alike) and names over 255 UTF-8 bytes are not.
    Names are compared in NFC form, so "Müller" typed either way is one agent.
    """
    if not isinstance(agent_name, str):
        raise InvalidAgentName(f"agent_name must be a string, got {type(agent_name).__name__}")
    hint = "choose a plain name such as 'ResearchAgent'"
    name = unicodedata.normalize("NFC", agent_name)
    if name in ("", ".", ".."):
        raise InvalidAgentName(f"agent_name {agent_name!r} is not a folder name; {hint}")
    if "/" in name or "\\" in name:
        raise InvalidAgentName(
            f"agent_name {agent_name!r} contains a path separator; it must be a single folder "
            f"name inside the workspace ({hint})"
        )
    bad = sorted(
        {c for i, c in enumerate(name) if _refused(c) and not _joins_emoji(name, i)}
    )
    if bad:
        shown = ", ".join(f"U+{ord(c):04X} {unicodedata.name(c, '?')}" for c in bad)
        raise InvalidAgentName(
            f"agent_name {agent_name!r} contains control, line-break or invisible format "
            f"characters ({shown}); {hint}"
        )
    size = len(name.encode("utf-8"))
    if size > MAX_NAME_BYTES:
        raise InvalidAgentName(
            f"agent_name is {size} bytes in UTF-8; at most {MAX_NAME_BYTES} fit in a folder name"
        )
    return name


def validate_agent_path(agent_name: str) -> tuple[str, ...]:
    """The folder names of an agent's name as the loaders and ``memorylab ls`` print it, each
    in NFC form: ``"Researcher"`` is ``("Researcher",)``, the reference framework's nested
    ``"team/alpha"`` (``agents/team/alpha/``) is ``("team", "alpha")``. Raise
    :class:`~memorylab.errors.InvalidAgentName` for anything else.

    Each part is a name :func:`validate_agent_name` accepts, so no ``..``, no empty part (no
    absolute path, no ``//``), no backslash, nothing that leaves ``agents/``. A nested name
    names only folders :func:`agent_folders` lists: none of its parts is hidden (``.x``), and
    none below the first is ``archive`` (``alpha/archive`` is alpha's archives, not an agent).
    """
    if not isinstance(agent_name, str):
        raise InvalidAgentName(f"agent_name must be a string, got {type(agent_name).__name__}")
    parts = agent_name.split("/")
    if len(parts) == 1:
        return (validate_agent_name(agent_name),)
    nested = "a nested agent's name is folder names below agents/ joined by '/', as 'team/alpha'"
    names = []
    for number, part in enumerate(parts):
        try:
            name = validate_agent_name(part)
        except InvalidAgentName as error:
            raise InvalidAgentName(
                f"{agent_name!r} is not an agent name: {error} ({nested})"
            ) from None
        if name.startswith(".") or (number and name == "archive"):
            what = "a hidden folder" if name.startswith(".") else "an agent's archive folder"
            raise InvalidAgentName(
                f"{agent_name!r} is not an agent name: {part!r} is {what}, never an agent's "
                f"folder ({nested})"
            )
        names.append(name)
    return tuple(names)


# Cc control, Cf format (bidi controls, zero-width, BOM), Cs surrogates, Zl/Zp line breaks.
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_ZWJ = "\u200d"


def _refused(char: str) -> bool:
    return unicodedata.category(char) in _REFUSED_CATEGORIES


def _joins_emoji(name: str, at: int) -> bool:
    """A zero-width joiner inside an emoji sequence (👨‍👩‍👧): symbols on both sides."""
    if name[at] != _ZWJ or at == 0 or at == len(name) - 1:
        return False
    before = name[at - 1] if name[at - 1] != "\ufe0f" or at < 2 else name[at - 2]
    return unicodedata.category(before) == "So" and unicodedata.category(name[at + 1]) == "So"


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
    def usage(self) -> Path:
        """``usage.jsonl``: one line per model call of the Agent (``UsageRecord``)."""
        stem = "" if self.memory_md.name == "MEMORY.md" else f"{self.memory_md.stem}."
        return self.folder / f"{stem}usage.jsonl"

    @property
    def pins(self) -> Path:
        """``pins.jsonl``: one line per pin or unpin of a block (``memory._pins``)."""
        stem = "" if self.memory_md.name == "MEMORY.md" else f"{self.memory_md.stem}."
        return self.folder / f"{stem}pins.jsonl"

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
    agent_name: str,
    workspace_dir: str | os.PathLike[str] | None = None,
    *,
    nested: bool = False,
) -> MemoryPaths:
    """Paths for ``<workspace>/agents/<agent_name>/MEMORY.md`` (the name is validated).

    ``nested=True`` also takes the name of a nested agent, ``team/alpha`` for
    ``agents/team/alpha/`` (:func:`validate_agent_path`), as the privacy commands do."""
    names = validate_agent_path(agent_name) if nested else (validate_agent_name(agent_name),)
    folder = resolve_workspace(workspace_dir) / "agents"
    for name in names:
        folder = folder / _existing_spelling(folder, name)
    return MemoryPaths(folder / "MEMORY.md")


def agent_folders(folder: Path, *, nested: bool = False) -> list[Path]:
    """The agent folders below ``folder`` (a workspace's ``agents/``), at any depth, in name
    order: the reference framework writes an agent named ``team/alpha`` to
    ``agents/team/alpha/``. A folder is an agent's when it holds a ``MEMORY.md`` (of any kind:
    the loaders say when it is not a file) or an ``archive/``. Hidden folders are skipped;
    below the top (``nested``, also for ``folder`` an agent's own folder) an ``archive/`` holds
    archives, not an agent, and is not searched; a symlinked folder is listed but not searched
    (no loops)."""
    found = []
    try:
        children = sorted(folder.iterdir(), key=lambda p: p.name)
    except OSError:
        return []
    for child in children:
        if not child.is_dir() or child.name.startswith(".") or (nested and child.name == "archive"):
            continue
        if os.path.lexists(child / "MEMORY.md") or (child / "archive").is_dir():
            found.append(child)
        if not child.is_symlink():
            found += agent_folders(child, nested=True)
    return found


def _existing_spelling(agents: Path, name: str) -> str:
    """``name``, or the spelling of the agent folder that is the same name in NFC form (another
    writer may have created it decomposed, NFD): one agent, one folder."""
    if (agents / name).exists():
        return name
    try:
        entries = os.listdir(agents)
    except OSError:
        return name
    return next((e for e in entries if unicodedata.normalize("NFC", e) == name), name)
