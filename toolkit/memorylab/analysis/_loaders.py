"""Loaders: the formats an agent's run can be read from, one :class:`Loader` each, chosen by
what a path is (never by its extension alone), in one registry.

======================  ===================================================================
name                    reads
======================  ===================================================================
``memorylab``           memorylab's and the reference framework's memory files: a workspace
                        (the folder holding ``agents/``), ``agents/``, an agent folder, a
                        MEMORY.md or an archive (a file named ``*.md``, or that opens with
                        ``# Agent Memory``), read by
                        :func:`~memorylab.analysis._record.read_agent_records`
``reference-save``      a conversation the reference framework saved (``save_as_json``,
                        ``save_as_yaml``, ``export``): JSON or YAML whose first entry is a
                        message (``role``), or ``{"conversation_history": [...]}``
``transcript``          a memorylab transcript (JSON Lines opening with ``{"type": "meta"}``)
``claude-code``         a Claude Code session (JSON Lines with ``sessionId``), or a project
                        folder of them (``_claude_code_loader``)
``deepagents``          a LangChain deepagents thread exported from its checkpointer, with
                        the history it offloaded (``_deepagents_loader``)
``openai-agents``       an OpenAI Agents SDK session database (SQLite; ``_openai_agents_loader``)
``inspect-ai``          an inspect_ai eval log (``.eval`` or ``.json``; ``_inspect_loader``)
======================  ===================================================================

Another framework's run is built by :func:`memorylab.analysis._foreign.run_record` (each
compaction a boundary between segments, a record holding only what the format recorded).

:func:`load_records` reads a source through them: each path by the first loader that handles
it, in the table's order, then loaders registered by :func:`register_loader`, then those of
installed packages (the entry point group ``memorylab.loaders``, loaded when no other handles
a path). A format that records no compactions and no model calls gives records without them.
LoCoMo and LongMemEval files are not here: they are benchmarks (many conversations, each with
its questions), read as evaluation cases by ``memorylab.evaluate.cases_from_locomo`` and
``cases_from_longmemeval``; a run's record has no place for their questions.

A format of your own is a class with a ``name``, ``handles(path)`` (cheap: a look at the
folder or the first bytes) and ``load(path)``, whose records :func:`messages_record` makes::

    class ChatLog:
        name = "my-chat-log"
        def handles(self, path): return path.suffix == ".chat"
        def load(self, path): return [messages_record(path, read_my_lines(path), format=self.name)]

    register_loader(ChatLog())
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from memorylab._names import plugged_in, plugin_lookup
from memorylab._validation import check_name
from memorylab.analysis._claude_code_loader import ClaudeCodeSessions
from memorylab.analysis._deepagents_loader import DeepagentsThread
from memorylab.analysis._foreign import foreign_record, record_among, source_file
from memorylab.analysis._inspect_loader import InspectLog
from memorylab.analysis._openai_agents_loader import OpenAIAgentsSessions
from memorylab.analysis._record import AgentRecord, Records, kept_record, read_agent_records
from memorylab.analysis._sources import Note, Segment, Source, file_head
from memorylab.errors import AgentNotFound, InvalidSetting, StoreError
from memorylab.memory import _format as fmt
from memorylab.memory._paths import agent_folders
from memorylab.memory._pins import pin_key, pin_line
from memorylab.memory._records import MemoryDocument, Message
from memorylab.memory._reference import read_save_file
from memorylab.transcripts import load_transcript

if TYPE_CHECKING:
    import pandas as pd

_PLUGINS = "memorylab.loaders"
"""The entry-point group of loaders from installed packages."""


@runtime_checkable
class Loader(Protocol):
    """A format of an agent's run on disk: its ``name`` (what :func:`get_loader` takes and a
    record's ``format`` says), whether it ``handles`` a path (decided cheaply from what the
    file or folder is: a look at its names or first bytes, never a whole read), and ``load``,
    the agents the path holds as records (raising a memorylab error, naming the path, for one
    it cannot read)."""

    name: str

    def handles(self, path: Path) -> bool: ...

    def load(self, path: Path) -> list[AgentRecord]: ...



def messages_record(
    path: Path,
    messages: Iterable[Mapping[str, Any]],
    *,
    format: str,
    agent: str | None = None,
) -> AgentRecord:
    """The record of one agent whose run a file holds as messages (``{"role", "content",
    "timestamp"}``; a timestamp a ``datetime`` or ISO-8601 text, naive as local time; content
    as :func:`~memorylab.memory._format.content_to_text` stores it). ``agent``: default, the
    file's name without its extension. A message without a readable timestamp is left out,
    with a note (a frame's rows are in time; none is guessed). A message with ``"pinned":
    True`` is pinned from its own time on (the record's ``pins``: a replay keeps it verbatim).
    The record has no compactions and no model calls: the loader of a format that records them
    sets them (``dataclasses.replace(record, records=..., calls=...)``)."""
    kept: list[Message] = []
    pins: list[dict[str, Any]] = []
    notes: list[Note] = []
    for number, message in enumerate(messages, 1):
        when = message.get("timestamp")
        try:
            stamp = when if isinstance(when, datetime) else datetime.fromisoformat(str(when))
        except ValueError:
            notes.append(Note(str(path), 0, "untimed", f"message {number} has no timestamp "
                              f"({when!r}); left out", damaged=True))  # fmt: skip
            continue
        content = fmt.content_to_text(message.get("content"))
        kept.append(Message(str(message.get("role")), content, stamp))
        if message.get("pinned") is True:  # naive: local time, as the replay reads it
            when = stamp if stamp.tzinfo is not None else stamp.astimezone()
            pins.append(pin_line("pin", pin_key(kept[-1].role, when, content), when))
    name = agent if agent is not None else path.stem
    document = MemoryDocument(name, kept[0].timestamp if kept else None, tuple(kept))
    segment = Segment(path, "memory", fmt.ParsedFile.of(document))
    return AgentRecord(
        agent=name,
        workspace=path.parent,
        folder=path.parent,
        segments=(segment,),
        notes=tuple(notes),
        format=format,
        whole_folder=False,
        pins=tuple(pins),
    )


# ------------------------------------------------------------------------------ the built-ins


class _MemorylabFiles:
    """memorylab's own files (and the reference framework's MEMORY.md, the same format)."""

    name = "memorylab"

    def handles(self, path: Path) -> bool:
        if not os.path.lexists(path) or path.name == "agents":
            return True  # its reader says what is missing, naming what a source may be
        if path.is_dir():
            # MEMORY.md that is not a regular file too: its reader reports it as a problem
            return any(os.path.lexists(path / name) for name in ("agents", "MEMORY.md", "archive"))
        return path.suffix == ".md" or file_head(path).startswith(fmt.TITLE_LINE.encode())

    def load(self, path: Path) -> list[AgentRecord]:
        return read_agent_records(path)


# The reference's save files as json.dumps(indent=4) and yaml.safe_dump write them: a list
# whose first entry has a "role" before any nested value, or the reference's whole object.
_SAVE_FILE = re.compile(
    rb'\s*(?:\[\s*\{[^{}\[]*"role"\s*:|\{[^{}\[]*"conversation_history"\s*:'
    rb"|-\s+(?:\w+:.*\n\s+)*role:|conversation_history:\s*\n)"
)


class _ReferenceSaveFile:
    """A conversation saved by the reference framework's methods (JSON or YAML)."""

    name = "reference-save"

    def handles(self, path: Path) -> bool:
        return _SAVE_FILE.match(file_head(path)) is not None

    def load(self, path: Path) -> list[AgentRecord]:
        agent = path.stem.removeprefix("conversation_")  # its default name
        return [messages_record(path, read_save_file(path), format=self.name, agent=agent)]


class _TranscriptFile:
    """A memorylab transcript: its messages (the facts and probes are the evaluation's)."""

    name = "transcript"

    def handles(self, path: Path) -> bool:
        first = file_head(path).split(b"\n", 1)[0]
        try:
            line = json.loads(first)
        except ValueError:
            return False
        return isinstance(line, dict) and line.get("type") == "meta"

    def load(self, path: Path) -> list[AgentRecord]:
        transcript = load_transcript(path)
        return [messages_record(path, transcript.as_messages(), format=self.name,
                                agent=transcript.name)]  # fmt: skip


_MEMORYLAB = _MemorylabFiles()

_LOADERS: dict[str, Loader] = {
    "memorylab": _MEMORYLAB,
    "reference-save": _ReferenceSaveFile(),
    "transcript": _TranscriptFile(),
    "claude-code": ClaudeCodeSessions(),
    "deepagents": DeepagentsThread(),
    "openai-agents": OpenAIAgentsSessions(),
    "inspect-ai": InspectLog(),
}
"""The registry: the built-in formats, then those registered, then installed packages'."""


# ----------------------------------------------------------------------------- the registry


def register_loader(loader: Loader) -> Loader:
    """Add ``loader`` to the registry under its ``name`` (a name taken is replaced): a path
    no earlier loader handles is then read by it. Returns ``loader``."""
    if isinstance(loader, type):
        raise InvalidSetting(f"register a loader object ({loader.__name__}()), not its class")
    if not isinstance(loader, Loader):
        raise InvalidSetting(
            f"a loader has a name, handles(path) and load(path) (memorylab.analysis.Loader), "
            f"not {loader!r}"
        )
    name = loader.name
    if not isinstance(name, str) or not name.strip() or name != name.strip():
        raise InvalidSetting(f"a loader's name must be a non-empty string, not {name!r}")
    _LOADERS[name] = loader
    return loader


def _plugin(name: str, loader: Any) -> None:
    """Register an installed package's loader, whose entry point names it as it names itself."""
    if isinstance(loader, Loader) and loader.name != name:
        raise InvalidSetting(f"the entry point {name!r} names a loader called {loader.name!r}")
    register_loader(loader)


def loader_names() -> list[str]:
    """The registered loaders' names, in the order they are asked (installed packages' last)."""
    return list(plugged_in(_LOADERS, _PLUGINS, "loader", _plugin))


def get_loader(name: str) -> Loader:
    """The loader of that name (:func:`loader_names`)."""
    loader = plugin_lookup(_LOADERS, _PLUGINS, "loader", name, _plugin)
    if loader is None:
        raise InvalidSetting(
            f"unknown loader {name!r}; registered: {', '.join(loader_names())} (add your own "
            "with memorylab.analysis.register_loader(loader))"
        )
    return loader


def loader_for(path: str | os.PathLike[str]) -> Loader:
    """The loader that reads ``path``: the first that handles it, built-ins first; installed
    packages' are loaded when none of the others does."""
    path = Path(path).expanduser()
    for plugins in (False, True):  # installed packages' imported only when no other handles it
        loaders = plugged_in(_LOADERS, _PLUGINS, "loader", _plugin) if plugins else _LOADERS
        for loader in list(loaders.values()):
            if loader.handles(path):
                return loader
    raise InvalidSetting(
        f"no loader reads {path}: it is none of the formats registered ("
        f"{', '.join(loader_names())}). Give a workspace, an agent folder, a MEMORY.md, a save "
        "file or a transcript; for another format install its package or register a loader "
        "(memorylab.analysis.register_loader)"
    )


def reads_as_transcript(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a memorylab transcript as the loaders decide (another framework's
    JSON Lines, a Claude Code session, is not one); a ``.jsonl`` no loader reads counts as one, so
    that the transcript reader says what a transcript must be."""
    name = loader_name(path)
    return name == "transcript" if name is not None else str(path).endswith(".jsonl")


def loader_name(path: str | os.PathLike[str]) -> str | None:
    """The name of the loader that reads ``path`` (:func:`loader_for`), or ``None`` when no
    loader reads it: for a caller that decides what a path is and leaves the refusal to its
    own check."""
    try:
        return loader_for(path).name
    except InvalidSetting:
        return None


def load_records(
    source: Source | Records,
    notes: list[Note] | None = None,
    *,
    strict: bool = False,
    agent: str | None = None,
) -> list[AgentRecord]:
    """Each agent ``source`` names, read by its loader (:func:`loader_for`), in order of
    appearance; records given are returned as they are. memorylab's files are read together,
    so the files of one agent named apart make one record
    (:func:`~memorylab.analysis._record.read_agent_records`, whose ``notes`` and ``strict``
    they take).

    ``agent``: only that agent's record. Of a workspace only its folder is read (``team/alpha``
    a nested one); of any other source (another framework's file of several runs, an agent
    folder, records) the record of that name. Not there: :class:`~memorylab.errors.AgentNotFound`
    naming the agents there."""
    if agent is not None:
        return _one_agent(source, agent, notes, strict)
    given = [source] if isinstance(source, str | os.PathLike) else source
    items: Sequence[object] = given if isinstance(given, Sequence) else ()
    paths = [item for item in items if isinstance(item, str | os.PathLike)]
    if not paths or len(paths) != len(items):
        return read_agent_records(source, notes, strict=strict)  # records, or its error
    groups: list[tuple[Loader, list[str | os.PathLike[str]]]] = []
    for path in paths:
        loader = loader_for(path)
        together = [g for known, g in groups if known is _MEMORYLAB and loader is _MEMORYLAB]
        if together:
            together[0].append(path)
        else:
            groups.append((loader, [path]))
    records: list[AgentRecord] = []
    for loader, group in groups:
        if loader is _MEMORYLAB:
            records += read_agent_records(group, notes, strict=strict)
        else:
            records += loader.load(Path(group[0]).expanduser())
    return records


def _one_agent(
    source: Source | Records, agent: str, notes: list[Note] | None, strict: bool
) -> list[AgentRecord]:
    """:func:`load_records`' ``agent``: the one rule of which agent of a source is read."""
    check_name("agent", agent, what="agent name or None")
    root = Path(source).expanduser() if isinstance(source, str | os.PathLike) else None
    if root is not None and (root / "agents").is_dir():  # a workspace: that folder alone
        agents_dir = root / "agents"
        folders = {f.relative_to(agents_dir).as_posix(): f for f in agent_folders(agents_dir)}
        if agent in folders:
            return load_records(folders[agent], notes, strict=strict)
        names = list(folders)
    else:
        records = load_records(source, notes, strict=strict)
        chosen = [record for record in records if record.agent == agent]
        if chosen:
            return chosen
        names = sorted({record.agent for record in records})
    where = root if root is not None else "the records given"
    raise AgentNotFound(
        f"no agent {agent!r} in {where}; agents there: {', '.join(names) or 'none'}"
    )


def record_of_frame(frame: pd.DataFrame) -> AgentRecord | None:
    """The record of the one agent whose files a :func:`~memorylab.analysis.memory_df` frame
    holds (its ``file`` column): the one read, while its files are unchanged
    (:func:`~memorylab.analysis._record.kept_record`), else its files read again by their
    loader; ``None`` for a frame without files, or of files that are no longer there."""
    if not (hasattr(frame, "columns") and "file" in frame.columns and len(frame)):
        return None
    files = [str(f) for f in frame["file"].unique()]
    foreign = foreign_record(files)  # another framework's run: its segments are named, not files
    if foreign is not None:
        return foreign
    read = list(dict.fromkeys(map(source_file, files)))
    if read != files:  # a foreign run's segments: the file they were read from, read again
        return record_among(load_records(read), files)
    kept = kept_record(files)
    if kept is not None:
        return kept
    try:
        return load_records(files)[0]
    except StoreError:  # an export read back: its files are not on disk
        return None
