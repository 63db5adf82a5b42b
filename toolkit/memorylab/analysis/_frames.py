"""Loaders: memory files as tidy DataFrames, one row per message or per compaction.

:func:`memory_df` reads a MEMORY.md, an archive, an agent folder, a workspace or a list of them
into one row per message in timeline order (archives oldest first, then the live file; the order
rules are in :mod:`memorylab.analysis._sources`). :func:`compactions_df` gives one row per
compaction, from ``compactions.jsonl`` when the agent has one, else inferred from the archives.
:func:`documents_df` is :func:`memory_df` for files that were parsed already (an export read
back, :func:`memorylab.privacy.load_export`).

Each agent's files are read as one generation, without the writers' lock: another process that
compacts, edits or deletes meanwhile makes the loader read the agent again
(:func:`memorylab.analysis._sources.read_consistent`; docs/memory-format.md, "Concurrent
readers"). Every file is read by :func:`memorylab.memory._store.read_parsed`, the one parser of
the format (:func:`memorylab.memory._format.parse_file`), whose output is columns: no
:class:`~memorylab.memory._records.Message` is made for a row; the columns become the frame's with
pandas' own conversions. Each column has one dtype in
every frame, declared once in :data:`DTYPES` (categories for labels, nullable ``Int64`` for
counts, UTC timestamps), and :func:`build_frame` makes every frame of the package from those
declarations.

Both loaders read memorylab's files and the reference framework's (naive local timestamps, no
lineage, archive names that collide), and return a DataFrame whatever the files hold. A file
that does not parse whole is read as far as it can be, and :func:`memory_df` warns once
(:class:`~memorylab.errors.MemoryReadWarning`; ``on_bad="skip"``: silently, ``on_bad="error"``:
it raises :class:`~memorylab.errors.MemoryFormatError` instead). :func:`problems_df` lists the
problems, ``file, line, kind, message``, with what was skipped (duplicate and uncommitted
archives, unknown files) and what looks missing; :func:`memory_df_with_problems` gives both of
one read (a :class:`ReadResult`).
pandas is imported when a loader is called, not with :mod:`memorylab`.

Both log a warning (logger ``memorylab.privacy``) when memory under a path they are given can be
read by group or others (:func:`memorylab.memory._permissions.warn_permissions`).
"""

from __future__ import annotations

import contextlib
import importlib
import itertools
import math
import os
import re
import warnings
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, overload

from memorylab._names import renamed_keyword
from memorylab.analysis._loaders import load_records
from memorylab.analysis._record import AgentRecord, Records
from memorylab.analysis._sources import Note, Segment, Source, agent_name, locate, timeline
from memorylab.errors import InvalidSetting, MemoryFormatError, MemoryReadWarning
from memorylab.memory import _format as fmt
from memorylab.memory._records import MemoryDocument, recorded_count
from memorylab.results import FormerPair, TableResult

if TYPE_CHECKING:
    import pandas as pd

_Columns = tuple[tuple[str, str], ...]

UTC_TIME = "datetime64[us, UTC]"
DTYPES: Mapping[str, str] = {
    # where a row comes from
    "workspace": "category",
    "agent": "category",
    "file": "category",
    "kind": "category",
    "segment": "Int64",
    "position": "Int64",
    "timeline": "Int64",
    # a message
    "role": "category",
    "timestamp": UTC_TIME,
    "naive_timestamp": "bool",
    "content": "str",
    "chars": "Int64",
    "is_summary": "bool",
    "tokens": "Int64",
    # a compaction
    "time": UTC_TIME,
    "archive": "str",
    "messages_archived": "Int64",
    "carried_over": "Int64",
    "tokens_before": "Int64",
    "tokens_after": "Int64",
    "summary_tokens": "Int64",
    "summarizer_model": "str",
    "strategy": "category",  # a compaction strategy's name (memorylab.compress._strategies)
    "latency_s": "float64",
    "cost_usd": "float64",
    "threshold": "float64",  # a fraction of the window (compactions_df: NaN for a token count)
    "context_length": "Int64",
    "source": "category",
    # a problem
    "line": "Int64",
    "message": "str",
    # per agent (the report)
    "messages": "Int64",
    "segments": "Int64",
    "summaries": "Int64",
    "compactions": "Int64",
    "first_message": UTC_TIME,
    "last_message": UTC_TIME,
}
"""The dtype of every column of the package's frames, one per name whatever the frame."""


def columns(*names: str, own: Mapping[str, str] | None = None) -> _Columns:
    """``(name, dtype)`` of each named column (:data:`DTYPES`), in order: a frame's declaration.
    ``own``: the dtypes of an analysis module's own new names (a name :data:`DTYPES` declares
    keeps its dtype there: one dtype per name across the frames)."""
    extra = own or {}
    return tuple((name, DTYPES[name] if name in DTYPES else extra[name]) for name in names)


MEMORY_COLUMNS = columns(
    "workspace",
    "agent",
    "file",
    "kind",
    "segment",
    "position",
    "timeline",
    "role",
    "timestamp",
    "naive_timestamp",
    "content",
    "chars",
    "is_summary",
)
"""The columns of :func:`memory_df`, in order (``tokens`` is added when a model is given)."""

PROBLEM_COLUMNS = columns("file", "line", "kind", "message")
"""The columns of :func:`problems_df` (and :attr:`ReadResult.problems`)."""

COMPACTION_COLUMNS = columns(
    "workspace",
    "agent",
    "time",
    "archive",
    "messages_archived",
    "carried_over",
    "tokens_before",
    "tokens_after",
    "summary_tokens",
    "summarizer_model",
    "strategy",
    "latency_s",
    "cost_usd",
    "threshold",
    "context_length",
    "source",
)
"""The columns of :func:`compactions_df`, in order."""


def record_time(value: Any) -> datetime | None:
    """A record's ``time`` (ISO 8601) as an aware datetime (a naive one is this machine's local
    time); ``None`` when it is not one."""
    try:
        when = datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.astimezone()


def text_table(
    frame: pd.DataFrame,
    headings: Mapping[str, str],
    formats: Mapping[str, Callable[[Any], str]] | None = None,
) -> pd.DataFrame:
    """``frame``'s columns named in ``headings`` (in that order) as text to read, under their
    headings: ``–`` where a value is missing, times to the minute, numbers as ``12,345``, the
    rest as they are; ``formats`` gives a column a format of its own (given a present value).
    What an analysis module's ``*_table`` shows in a report or a view."""
    import pandas as pd

    own = formats or {}

    def text(name: str, value: Any) -> str:
        if value is None or (not isinstance(value, str) and bool(pd.isna(value))):
            return "–"
        if name in own:
            return own[name](value)
        if name == "time":
            return str(pd.Timestamp(value).strftime("%Y-%m-%d %H:%M"))
        if isinstance(value, int | float) and not isinstance(value, bool):
            return f"{value:,.0f}"
        return str(value)

    chosen = [c for c in headings if c in frame.columns]
    return pd.DataFrame(
        {headings[c]: [text(c, v) for v in frame[c].tolist()] for c in chosen}
    ).reset_index(drop=True)


def build_frame(declared: Sequence[tuple[str, str]], data: Mapping[str, Any]) -> pd.DataFrame:
    """A DataFrame of exactly the ``declared`` ``(name, dtype)`` columns, in order.

    ``data`` holds each column's values (a list, an array, a Series: by position, whatever its
    index), all of one length; each is converted to its dtype. Categories keep the order in which
    values first appear (a ``pandas.Categorical`` given for a categorical column is kept as it
    is: its maker orders its categories so).
    """
    import numpy as np
    import pandas as pd

    names = [name for name, _ in declared]
    if set(names) != set(data):
        raise ValueError(
            f"build_frame: the data's columns {sorted(data)} are not the declared {names}; "
            "give values for exactly the declared columns"
        )
    built: dict[str, Any] = {}
    for name, dtype in declared:
        values = data[name]
        if isinstance(values, pd.Series | pd.Index):
            values = values.array
        if dtype == "category" and isinstance(values, pd.Categorical):
            built[name] = values  # its codes made already (a file's label, repeated)
        elif dtype == "category":
            codes, categories = pd.factorize(np.asarray(values, dtype=object))
            built[name] = pd.Categorical.from_codes(codes, categories=categories)
        else:
            built[name] = pd.array(values, dtype=dtype)
    return pd.DataFrame(built, columns=names, copy=False)


# --------------------------------------------------------------------------- messages


@dataclass(frozen=True, slots=True, repr=False)
class ReadResult(FormerPair, TableResult):
    """What :func:`memory_df_with_problems` read: ``frame``, the rows it could read
    (:data:`MEMORY_COLUMNS`, :func:`memory_df`'s frame), and ``problems``
    (:data:`PROBLEM_COLUMNS`: ``file, line, kind, message``, :func:`problems_df`'s frame), one
    row per problem found or file skipped; :meth:`notes` says how many.

    It replaces the ``(frame, problems)`` tuple of earlier versions: unpacking it that way, or
    indexing it ``[0]``/``[1]``, still works for now and warns (``DeprecationWarning``).
    """

    frame: pd.DataFrame
    problems: pd.DataFrame
    records: tuple[AgentRecord, ...] = ()
    """The agents read, once each (:class:`~memorylab.analysis.AgentRecord`): what a caller hands
    to every other reader instead of reading the files again (the report does)."""

    _former: ClassVar[tuple[str, str, str]] = ("memory_df_with_problems(...)", "frame", "problems")

    def notes(self) -> list[str]:
        kinds = self.problems["kind"].value_counts(sort=False) if len(self.problems) else {}
        return [f"{count} {kind} problem(s): see .problems" for kind, count in kinds.items()]


OnBad = Literal["error", "warn", "skip"]
"""What :func:`memory_df` does with a file that does not read whole (a parse problem or an I/O
error): raise, warn once (:class:`~memorylab.errors.MemoryReadWarning`) or say nothing; the
rows it could read are returned unless it raises."""

ON_BAD: tuple[OnBad, ...] = ("error", "warn", "skip")
"""The values of ``on_bad``."""


@overload
def memory_df(
    source: Source | Records,
    *,
    model: str | None = None,
    on_bad: OnBad = "warn",
    naive_tz: tzinfo | None = None,
    tokens: str | None = None,
    strict: Literal[True] | None = None,
) -> pd.DataFrame: ...


@overload
def memory_df(
    source: Source | Records,
    *,
    model: str | None = None,
    on_bad: OnBad = "warn",
    naive_tz: tzinfo | None = None,
    tokens: str | None = None,
    strict: Literal[False],
) -> ReadResult: ...


def memory_df(
    source: Source | Records,
    *,
    model: str | None = None,
    on_bad: OnBad = "warn",
    naive_tz: tzinfo | None = None,
    tokens: str | None = None,
    strict: bool | None = None,
) -> pd.DataFrame | ReadResult:
    """One row per message of ``source``, in timeline order (see docs/analysis.md).

    ``source``: a MEMORY.md, an archive file, an agent folder, a workspace (the folder holding
    ``agents/``) or a list of these. Columns (:data:`MEMORY_COLUMNS`): ``workspace``,
    ``agent``, ``file`` (categorical), ``kind`` (``"archive"``/``"memory"``), ``segment`` (0 =
    the oldest archive … the live file last), ``position`` (in its file), ``timeline`` (0 … n-1
    per agent across segments), ``role`` (categorical), ``timestamp`` (UTC),
    ``naive_timestamp`` (the file had no UTC offset: read as wall-clock time in ``naive_tz``,
    ``None`` for this machine's time zone), ``content``, ``chars``, ``is_summary``, and
    ``tokens`` (of the content) when ``model`` names a tokenizer model.

    ``on_bad``, for a file that does not parse whole or cannot be read (as pandas'
    ``read_csv(on_bad_lines=)``): ``"warn"`` (the default) returns the rows that could be read
    and warns once (:class:`~memorylab.errors.MemoryReadWarning`: how many problems of which
    kinds in how many files, and the :func:`problems_df` call that lists them); ``"skip"``
    returns them silently; ``"error"`` raises :class:`~memorylab.errors.MemoryFormatError`
    (:class:`~memorylab.errors.StoreError` for a file that cannot be read). What is skipped or
    looks missing otherwise (duplicates, gaps, an interrupted compaction's archive) never warns:
    :func:`problems_df` lists it too. :func:`memory_df_with_problems` gives the frame and the
    problems of one read.

    Deprecated, for this release only: ``tokens=`` is ``model=``; ``strict=True`` is
    ``on_bad="error"``, and ``strict=False`` returns a :class:`ReadResult` as before (use
    :func:`memory_df_with_problems`). Both warn (``DeprecationWarning``).
    """
    model = renamed_keyword("memory_df", "tokens", "model", tokens, model)
    if strict is not None:
        if on_bad != "warn":
            raise TypeError("memory_df() got both strict= and on_bad=; give on_bad= only")
        instead = (
            'memory_df(..., on_bad="error")'
            if strict
            else 'memory_df(...), which returns the DataFrame (on_bad="warn" or "skip"), and '
            "problems_df(...) for the problems, or memory_df_with_problems(...) for both (the "
            "ReadResult strict=False returns)"
        )
        warnings.warn(
            f"memory_df(strict={strict}) is deprecated: use {instead}; strict= keeps working for "
            "this release only",
            DeprecationWarning,
            stacklevel=2,
        )
        if not strict:
            return _read(source, model, naive_tz)
        on_bad = "error"
    if on_bad not in ON_BAD:
        raise InvalidSetting(
            f"on_bad must be one of {', '.join(map(repr, ON_BAD))} (raise, warn once, or say "
            f"nothing about a file that does not read whole), not {on_bad!r}"
        )
    if on_bad == "error":
        return _messages_frame(_strict_timelines(source), model, naive_tz)
    agents, notes = _timelines(source)
    frame = _messages_frame(agents, model, naive_tz)
    if on_bad == "warn":
        _warn_damaged(source, notes)
    return frame


def memory_df_with_problems(
    source: Source | Records, *, model: str | None = None, naive_tz: tzinfo | None = None
) -> ReadResult:
    """:func:`memory_df` (``on_bad="skip"``) and :func:`problems_df` of one read of ``source``:
    a :class:`ReadResult`, ``.frame`` and ``.problems`` (what the report and the command line
    show beside the messages)."""
    return _read(source, model, naive_tz)


def problems_df(source: Source | Records) -> pd.DataFrame:
    """What :func:`memory_df` finds reading ``source``: one row per problem or file left
    out (:data:`PROBLEM_COLUMNS`: ``file``, ``line`` (1-based; 0: the file as a whole),
    ``kind``, ``message``). The kinds of the parser (``torn``, ``structure``, ``header``,
    ``encoding`` …, docs/memory-format.md) and ``io`` are the problems ``memory_df``'s
    ``on_bad`` is about; the others say what was skipped or looks missing (``duplicate``,
    ``edit``, ``gap``, ``lineage``, ``order``, ``pending``, ``records``, ``skipped``, ``torn``
    for the kept-aside end of a write, ``unsettled``: docs/analysis.md)."""
    _agents, notes = _timelines(source)
    return _problems_frame(notes)


def _timelines(source: Source | Records) -> tuple[list[AgentRecord], list[Note]]:
    """Each agent's record (:func:`~memorylab.analysis.load_records`: read leniently, or
    given), and the notes of the source and of every agent, in that order."""
    notes: list[Note] = []
    records = load_records(source, notes)
    return records, notes + [note for record in records for note in record.notes]


def _strict_timelines(source: Source | Records) -> list[AgentRecord]:
    """Each agent's record, read strictly: a file that does not parse raises
    :class:`~memorylab.errors.MemoryFormatError`, whose advice names ``on_bad``."""
    try:
        return load_records(source, strict=True)
    except MemoryFormatError as exc:
        # The parser's advice names its own keyword (read_memory(strict=False)).
        error = MemoryFormatError(
            re.sub(r"\bstrict=False\b", "on_bad='warn'", str(exc)), problems=exc.problems
        )
        error.path, error.line = exc.path, exc.line
        raise error from None


def _read(source: Source | Records, model: str | None, naive_tz: tzinfo | None) -> ReadResult:
    """The frame and the problems of one lenient read of ``source``."""
    agents, notes = _timelines(source)
    return ReadResult(
        _messages_frame(agents, model, naive_tz), _problems_frame(notes), tuple(agents)
    )


def _warn_damaged(source: Source | Records, notes: Sequence[Note]) -> None:
    """One :class:`~memorylab.errors.MemoryReadWarning` for the files of ``source`` that did not
    read whole (none: no warning), at the line that called :func:`memory_df`."""
    damaged = [note for note in notes if note.damaged]
    if not damaged:
        return
    kinds = Counter(note.kind for note in damaged)
    files = len({note.file for note in damaged})
    named = [source] if isinstance(source, str | os.PathLike | AgentRecord) else source
    shown = repr([os.fspath(str(i.folder) if isinstance(i, AgentRecord) else i) for i in named])
    shown = shown[1:-1] if isinstance(source, str | os.PathLike) else shown
    warnings.warn(
        MemoryReadWarning(
            f"memory_df: {_counted(len(damaged), 'problem')} in {_counted(files, 'file')} "
            f"that did not read whole ({', '.join(f'{n} {kind}' for kind, n in kinds.items())}); "
            "the frame holds the rows that could be read. See every problem with "
            f"memorylab.analysis.problems_df({shown}); on_bad='skip' reads without this "
            "warning, on_bad='error' raises instead"
        ),
        stacklevel=3,
    )


def _counted(count: int, noun: str) -> str:
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def _problems_frame(notes: Sequence[Note]) -> pd.DataFrame:
    data = {name: [getattr(note, name) for note in notes] for name, _ in PROBLEM_COLUMNS}
    return build_frame(PROBLEM_COLUMNS, data)  # a Note's fields, in order


def _document_pairs(
    documents: object,
) -> Iterator[tuple[str | os.PathLike[str], MemoryDocument]]:
    """``documents_df``'s ``(path, document)`` pairs, each checked before it is used."""
    if isinstance(documents, str | bytes | os.PathLike) or not isinstance(documents, Iterable):
        raise InvalidSetting(
            "documents must be (path, MemoryDocument) pairs (what load_export reads back), "
            f"not {type(documents).__name__}; for files on disk use memory_df(path)"
        )
    for index, pair in enumerate(documents):
        if (
            not isinstance(pair, tuple | list)
            or len(pair) != 2
            or not isinstance(pair[0], str | os.PathLike)
            or not isinstance(pair[1], MemoryDocument)
        ):
            raise InvalidSetting(
                f"documents[{index}] must be a (path, MemoryDocument) pair, "
                f"not {type(pair).__name__}"
            )
        yield pair[0], pair[1]


def documents_df(
    documents: Iterable[tuple[str | os.PathLike[str], MemoryDocument]],
    *,
    model: str | None = None,
    naive_tz: tzinfo | None = None,
    edits: Collection[str] = (),
    tokens: str | None = None,
) -> pd.DataFrame:
    """:func:`memory_df`'s frame of memory files parsed already (an export read back).

    ``documents``: ``(path, document)`` pairs, in any order; each path says where the file is
    (or was), as :func:`memory_df` would have found it: ``<workspace>/agents/<agent>/MEMORY.md``
    or ``…/archive/history_<time>.md``. ``edits``: the archive names an edit made (the export's
    records say which, :func:`~memorylab.memory._records.edit_archives`). Each agent's files
    are put in timeline order and duplicates dropped by the same rules, so the frame is the one
    :func:`memory_df` gives for the same files. ``model`` as in :func:`memory_df` (``tokens=``
    is its deprecated name).
    """
    model = renamed_keyword("documents_df", "tokens", "model", tokens, model)
    agents: dict[Path, tuple[Path, list[Segment]]] = {}
    for name, document in _document_pairs(documents):
        path = Path(name).expanduser()
        workspace, folder, kind = locate(path)
        if kind == "archive" and path.name in edits:
            kind = "edit"
        agents.setdefault(folder, (workspace, []))[1].append(
            Segment(path, kind, fmt.ParsedFile.of(document))
        )
    records = [
        AgentRecord(
            agent_name(workspace, folder),
            workspace,
            folder,
            tuple(timeline(segments, [], whole_folder=False)),
            format="export",
            whole_folder=False,
        )
        for folder, (workspace, segments) in agents.items()
    ]
    return _messages_frame(records, model, naive_tz)


def _messages_frame(
    records: Sequence[AgentRecord], model: str | None, naive_tz: tzinfo | None
) -> pd.DataFrame:
    """The rows of :func:`memory_df` for agents' files in timeline order: the files' columns
    (:meth:`Segment.blocks`: the parser's, no :class:`Message` made) joined, and each file's
    labels repeated over its rows by numpy."""
    import numpy as np

    labels: dict[str, list[Any]] = {name: [] for name in _FILE_COLUMNS}
    counts: list[int] = []  # rows per file
    positions: list[Any] = []
    timelines: list[Any] = []
    roles: list[str] = []
    contents: list[str] = []
    stamps: list[datetime] = []
    summaries: list[bool] = []
    for record in records:
        start = len(roles)
        for flags in record.summary_flags:
            summaries += flags
        for index, segment in enumerate(record.segments):
            blocks = segment.blocks()  # rule 6 leaves out repeated messages
            for name, label in zip(
                _FILE_COLUMNS,
                (str(record.workspace), record.agent, str(segment.path), segment.kind, index),
                strict=True,
            ):
                labels[name].append(label)
            counts.append(len(blocks))
            read = segment.positions()
            positions.append(np.arange(len(read)) if isinstance(read, range) else read)
            roles += blocks.roles
            contents += blocks.contents
            stamps += blocks.timestamps
        timelines.append(np.arange(len(roles) - start))
    data: dict[str, Any] = {
        name: _repeated(values, counts, categorical=dict(MEMORY_COLUMNS)[name] == "category")
        for name, values in labels.items()
    }
    data["position"] = np.concatenate([np.zeros(0, dtype=np.int64), *positions])
    data["timeline"] = np.concatenate([np.zeros(0, dtype=np.int64), *timelines])
    data["role"] = roles
    data["content"] = contents
    data["timestamp"], data["naive_timestamp"] = _utc(stamps, naive_tz)
    data["chars"] = list(map(len, contents))
    data["is_summary"] = summaries
    declared = MEMORY_COLUMNS
    if model is not None:
        from memorylab.compress._tokens import get_token_counter

        data["tokens"] = get_token_counter(model).count_batch(contents)
        declared += columns("tokens")
    return build_frame(declared, data)


_FILE_COLUMNS = ("workspace", "agent", "file", "kind", "segment")
"""The columns of :data:`MEMORY_COLUMNS` that hold one value per file."""


def _repeated(values: list[Any], counts: list[int], *, categorical: bool) -> Any:
    """Each of ``values`` repeated ``counts`` times: the codes of a categorical (its categories
    in the order they first appear, as :func:`build_frame` makes them), else an array."""
    import numpy as np
    import pandas as pd

    if not categorical:
        return np.repeat(np.asarray(values, dtype=np.int64), counts)
    codes, categories = pd.factorize(np.asarray(values, dtype=object))
    return pd.Categorical.from_codes(np.repeat(codes, counts), categories=categories)


def _utc(stamps: list[datetime], naive_tz: tzinfo | None) -> tuple[Any, list[bool]]:
    """The stamps in UTC, and which were naive.

    A naive stamp (the reference framework writes local time) is wall-clock time in
    ``naive_tz`` (``None``: this machine's time zone, see :func:`_local_zone`), with its
    daylight-saving rules. A wall-clock time that occurs twice (the hour repeated when the clocks
    go back) is read as the first, summer time one, as Python reads it (``fold=0``); one that
    does not occur (skipped when they go forward: the file came from elsewhere) as the first
    instant after the gap.
    """
    import numpy as np
    import pandas as pd

    naive = [stamp.tzinfo is None for stamp in stamps]
    utc = pd.to_datetime(stamps, utc=True)  # naive ones as UTC for now
    if any(naive):
        mask = np.array(naive)
        local = (
            utc[mask]
            .tz_localize(None)
            .tz_localize(
                naive_tz or _local_zone(),
                ambiguous=np.ones(int(mask.sum()), dtype=bool),
                nonexistent="shift_forward",
            )
        )
        values = utc.tz_localize(None).to_numpy(copy=True)
        values[mask] = local.tz_convert(None).to_numpy().astype(values.dtype)
        utc = pd.DatetimeIndex(values).tz_localize("UTC")
    return utc, naive


def _local_zone() -> tzinfo:
    """This machine's time zone with its rules: the IANA zone that ``$TZ`` or ``/etc/localtime``
    names, else dateutil's ``tzlocal()`` (the C library's rules: as correct, slower)."""
    from zoneinfo import ZoneInfo

    name = os.environ.get("TZ")
    if name is None:
        with contextlib.suppress(OSError):
            name = os.path.realpath("/etc/localtime").partition("/zoneinfo/")[2]
    with contextlib.suppress(KeyError, ValueError, OSError):  # not an IANA name: ask the C library
        return ZoneInfo((name or "").removeprefix(":"))
    dateutil_tz: Any = importlib.import_module("dateutil.tz")  # pandas depends on dateutil
    local: tzinfo = dateutil_tz.tzlocal()
    return local


# --------------------------------------------------------------------------- compactions


def compactions_df(
    source: Source | Records,
    *,
    model: str | None = None,
    naive_tz: tzinfo | None = None,
    tokens: str | None = None,
) -> pd.DataFrame:
    """One row per compaction of the agents in ``source`` (see docs/analysis.md).

    From ``compactions.jsonl`` when an agent has one (``source`` column ``"jsonl"``; failed
    attempts and other record kinds are left out), else inferred from its archives and the
    summary blocks that follow them (``"inferred"``): ``time`` is the next summary's timestamp,
    and token figures are counted with ``model`` (a tokenizer model's name; ``tokens=`` is its
    deprecated name) when given. Columns: :data:`COMPACTION_COLUMNS`; unknown values are missing
    (``<NA>``, NaN or NaT). ``threshold`` is the fraction of the window a record's compaction
    was set to fire at (of a trigger of several conditions, its fraction), NaN where the record
    holds none: an inferred compaction, a token-count threshold, a trigger without a fraction
    (``compactions.jsonl``'s own ``threshold`` and ``trigger`` fields keep them,
    :meth:`~memorylab.memory._store.MemoryStore.records`).

    It never raises for a damaged file, so it has no ``on_bad``: the archives it infers from are
    read as far as they parse (:func:`problems_df` lists the rest) and a line of
    ``compactions.jsonl`` that is no record is skipped and logged.
    """
    model = renamed_keyword("compactions_df", "tokens", "model", tokens, model)
    rows: list[dict[str, Any]] = []
    for record in load_records(source):
        rows += _agent_compactions(record, model, naive_tz)
    frame = build_frame(
        COMPACTION_COLUMNS,
        {name: [row.get(name) for row in rows] for name, _ in COMPACTION_COLUMNS},
    )
    return frame.sort_values(["workspace", "agent", "time"], kind="stable").reset_index(drop=True)


def _agent_compactions(
    record: AgentRecord, model: str | None, naive_tz: tzinfo | None
) -> list[dict[str, Any]]:
    """The rows of one agent: its records, then what its archives say nobody recorded."""
    rows = _recorded(record)
    named = {r.get("archive") for r in record.records}  # any kind, edits too
    archives = [s.path.name for s in record.segments if s.kind == "archive"]
    if record.records and all(name in named for name in archives):
        return rows  # memorylab recorded every archive: nothing to infer
    # Compactions nobody recorded: a reference workspace, or the reference's compact()
    # writing beside memorylab (its archive and re-seeded MEMORY.md, no record).
    return rows + [row for row in _inferred(record, model, naive_tz) if row["archive"] not in named]


def _number(value: Any) -> float:
    """A recorded figure as a float (NaN when there is none)."""
    if value is None or isinstance(value, bool):
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _recorded(agent: AgentRecord) -> list[dict[str, Any]]:
    """The rows of the agent's ``compactions.jsonl`` records (its successful compactions)."""
    import pandas as pd

    compactions = agent.compactions
    times = pd.to_datetime(
        [str(r.get("time") or "") for r in compactions],
        format="ISO8601",
        utc=True,
        errors="coerce",
    )
    rows = []
    for record, time in zip(compactions, times, strict=True):
        threshold = record.get("threshold")
        rows.append(
            {
                "workspace": str(agent.workspace),
                "agent": agent.agent,
                "time": time,
                "archive": record.get("archive"),
                "messages_archived": recorded_count(record.get("messages_archived")) or 0,
                **{
                    name: recorded_count(record.get(name))
                    for name in (
                        "carried_over",
                        "tokens_before",
                        "tokens_after",
                        "summary_tokens",
                        "context_length",
                    )
                },
                "summarizer_model": record.get("summarizer_model"),
                "strategy": (record.get("strategy") or {}).get("name", "summary")
                if isinstance(record.get("strategy") or {}, dict)
                else None,
                "latency_s": _number(record.get("latency_s")),
                "cost_usd": _number(record.get("cost_usd")),
                # a fraction of the window; a token count (an int) or none: NaN
                "threshold": threshold if isinstance(threshold, float) else math.nan,
                "source": "jsonl",
            }
        )
    return rows


def _inferred(
    record: AgentRecord, model: str | None, naive_tz: tzinfo | None
) -> list[dict[str, Any]]:
    """One compaction per archive that a later file follows (reference workspaces): it
    archived that file's messages, and the next file starts with its summary."""
    from memorylab.analysis._transcript import entry_tokens
    from memorylab.memory._request import REPLY_TOKENS

    frame = _messages_frame([record], None, naive_tz)
    counted = entry_tokens(frame, model) if model is not None and len(frame) else None
    rows: list[dict[str, Any]] = []
    start = 0
    for segment, after in itertools.pairwise(record.segments):
        count = len(segment.positions())
        following = start + count  # the first row of the next file
        after_messages = len(after.positions())
        row: dict[str, Any] = {
            "workspace": str(record.workspace),
            "agent": record.agent,
            "time": frame["timestamp"].iloc[following] if after_messages else None,
            "archive": segment.path.name,
            "messages_archived": count,
            "latency_s": math.nan,
            "cost_usd": math.nan,
            "threshold": math.nan,
            "source": "inferred",
        }
        if counted is not None:  # each a request: its messages and the reply's priming
            row["tokens_before"] = int(counted[start:following].sum()) + REPLY_TOKENS
            if after_messages and frame["is_summary"].iloc[following]:
                row["summary_tokens"] = int(counted[following])
                row["tokens_after"] = row["summary_tokens"] + REPLY_TOKENS
        if segment.kind == "archive":
            rows.append(row)
        start = following
    return rows
