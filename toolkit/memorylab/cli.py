"""The ``memorylab`` command: thin argument parsing over the library.

Every failure is one ``memorylab:`` line on stderr and an exit code (the table in
``docs/cli.md``), and outputs, numbers and model names are checked before any work starts: the
rules of :mod:`memorylab._console`, shared with ``memorylab compare``. Every command that reads
memory (show, stats, plot, report, export, audit) reads it by one rule, :func:`_read`: a damaged
part stops it (exit code 3, the file and line named) unless ``--lenient``, which goes on with
what can be read and names what it skipped, once, on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from memorylab._console import (
    MAX_CONTEXT_TOKENS,
    HelpFormatter,
    NothingThere,
    OneLineParser,
    aligned_table,
    bounded_int,
    check_model_name,
    check_output,
    column,
    image_formats,
    run_handler,
    threshold_value,
)
from memorylab._convert_cli import add_convert_arguments, run_convert
from memorylab._version import __version__
from memorylab.errors import AgentNotFound, InvalidSetting, MemoryFormatError, StoreError
from memorylab.evaluate._cli import add_compare_arguments, run_compare

if TYPE_CHECKING:
    import pandas as pd

    from memorylab.analysis import ReadResult
    from memorylab.analysis._sources import AgentFiles


def _demo(args: argparse.Namespace) -> int:
    """Write a short conversation, compact it, and show what ends up on disk."""
    from memorylab.memory._conversation import Conversation
    from memorylab.memory._store import read_memory

    workspace = Path(args.workspace or tempfile.mkdtemp(prefix="memorylab-demo-"))
    conv = Conversation(agent_name="DemoAgent", workspace_dir=workspace, system_prompt="Be brief.")
    conv.add("User", "Compare cloud providers for a latency-sensitive API.")
    conv.add("DemoAgent", "GCP had the lowest p50 latency (38 ms) in eu-west.")
    conv.add("User", "Use GCP. Write the config to deploy/gcp.yaml.")
    event = conv.compact("User chose GCP (38 ms p50, eu-west); config goes to deploy/gcp.yaml.")
    conv.add("User", "Now estimate the monthly cost.")
    path = conv.memory_md_path
    assert path is not None
    print(f"workspace: {workspace}")
    for item in sorted(path.parent.rglob("*")):
        if item.is_file():
            print(f"  {item.relative_to(workspace)}  ({item.stat().st_size} bytes)")
    print(f"\ncompaction archived {event.messages_archived} messages to archive/{event.archive}")
    print(f"\n--- {path.relative_to(workspace)} ---")
    print(path.read_text(encoding="utf-8"))
    doc = read_memory(path)
    print(f"parsed back: {len(doc.messages)} messages, continues {doc.continues}")
    return 0


def _workspace(value: str | None) -> Path:
    """WORKSPACE argument > $WORKSPACE_DIR > the bundled sample workspace."""
    if value:
        return Path(value)
    if os.environ.get("WORKSPACE_DIR"):
        return Path(os.environ["WORKSPACE_DIR"])
    from memorylab.transcripts import bundled_workspace

    return bundled_workspace()


def _existing_workspace(value: str | None, *, agent_folder_ok: bool = False) -> Path:
    """The workspace to read (see :func:`_workspace`); one that is not there is exit code 5,
    whichever command reads it. ``agent_folder_ok``: an agent folder or memory file will do
    (``stats`` and ``report`` read those too)."""
    workspace = _workspace(value)
    if not workspace.exists():
        raise NothingThere(
            f"no workspace at {workspace} (it does not exist, so no agents/ folder either): give "
            "the folder that holds agents/ (WORKSPACE or --workspace, else $WORKSPACE_DIR)"
        )
    if (workspace / "agents").is_dir():
        return _with_agents(workspace)
    if agent_folder_ok and workspace.is_file():
        return workspace if _foreign_run(workspace) else _memory_file(workspace)
    if agent_folder_ok and ((workspace / "MEMORY.md").exists() or (workspace / "archive").is_dir()
                            or _foreign_run(workspace)):  # fmt: skip
        return workspace
    raise NothingThere(
        f"{workspace} has no agents/ folder: is it a memorylab workspace? Give the folder that "
        "holds agents/"
    )


def _with_agents(workspace: Path) -> Path:
    """``workspace`` when its agents/ holds an agent memorylab can read; else one line saying
    why not (the loaders' notes: a MEMORY.md that is a folder or a dangling link ...)."""
    from memorylab.analysis._sources import resolve

    found, notes = resolve(workspace)
    if found:
        return workspace
    agents = workspace / "agents"
    if not notes:
        raise NothingThere(
            f"{agents} holds no agent yet: an agent's memory appears there once it runs"
        )
    first = notes[0]
    more = f" (and {len(notes) - 1} more)" if len(notes) > 1 else ""
    raise NothingThere(
        f"{agents} holds no agent memory that can be read: {first.file}: {first.message}{more}"
    )


def _foreign_run(path: Path) -> bool:
    """Whether a loader other than memorylab's own files reads ``path`` (a transcript, a save
    file, another framework's run: docs/formats/), decided as every reader decides it; no
    loader reading it is said by the caller's own check."""
    from memorylab.analysis._loaders import loader_name

    return loader_name(path) not in (None, "memorylab")


def _memory_file(path: Path) -> Path:
    """``path`` when it is a memory file (it starts as one: ``# Agent Memory``); a file that
    is not is refused before any work (a report of it would be one unreadable agent)."""
    from memorylab.memory._format import TITLE_LINE

    try:
        with open(path, "rb") as file:
            start = file.read(len(TITLE_LINE.encode()) + 3)
    except OSError as error:
        raise NothingThere(f"cannot read {path}: {error.strerror or error}") from error
    if not start.removeprefix(b"\xef\xbb\xbf").startswith(TITLE_LINE.encode()):
        raise MemoryFormatError(
            f"{path} is a file but not a memory file (it does not start with {TITLE_LINE!r}) "
            "nor a run memorylab reads (a transcript, a save file, another framework's: "
            "docs/formats/): give a workspace, an agent folder, a MEMORY.md or such a run"
        )
    return path


def _existing_or_default_workspace(value: str | None) -> str | None:
    """For the commands that delete or export: a named workspace must exist; without one the
    library's default applies ($WORKSPACE_DIR, else ./agent_workspace)."""
    from memorylab.config import resolve_workspace

    workspace = resolve_workspace(value)
    if not workspace.is_dir():
        raise NothingThere(
            f"no workspace at {workspace}: give the folder that holds agents/ (WORKSPACE or "
            "--workspace, else $WORKSPACE_DIR)"
        )
    return value


def _agent_folder(workspace: Path, agent: str) -> Path:
    from memorylab.memory._paths import agent_paths

    # 'team/alpha': the reference framework's nested agent, read from agents/team/alpha/
    folder = agent_paths(agent, workspace, nested=True).folder
    if not folder.is_dir():
        known = [files.agent for files in _agents(workspace)]
        raise AgentNotFound(
            f"no agent {agent!r} in {workspace}; agents there: {', '.join(known) or 'none'}"
        )
    return folder


def _agents(workspace: Path) -> list[AgentFiles]:
    """Every agent in the workspace and its files, nested ones too, as the loaders find them."""
    from memorylab.analysis._sources import resolve

    if not (workspace / "agents").is_dir():
        return []
    return resolve(workspace)[0]


def _last_message(memory_md: Path) -> tuple[str, str | None]:
    """When the last message of MEMORY.md was written (its timestamp; ``-`` if none), and what
    is wrong with the file where it does not read whole (``None``: nothing)."""
    from memorylab.memory._store import read_memory

    if not memory_md.is_file():
        return "-", None
    try:
        read = read_memory(memory_md, strict=False)
    except (MemoryFormatError, StoreError) as error:
        return "unreadable", " ".join(str(error).split())
    messages = read.document.messages
    last = f"{messages[-1].timestamp:%Y-%m-%d %H:%M}" if messages else "-"
    if not read.problems:
        return last, None
    first = read.problems[0]
    more = f" (and {len(read.problems) - 1} more)" if len(read.problems) > 1 else ""
    return (f"{last} (damaged)" if messages else "unreadable"), (
        f"{memory_md.name}, line {first.line}: {first.message}{more}"
    )


def _ls(args: argparse.Namespace) -> int:
    from memorylab.analysis._sources import resolve

    workspace = _existing_workspace(args.workspace)
    print(f"workspace: {workspace}")
    print(f"{'agent':<28} {'MEMORY.md':>10} {'archives':>8}  last message")
    found, notes = resolve(workspace)
    hints = []
    for files in found:
        memory_md = files.memory_md
        size = memory_md.stat().st_size if memory_md.is_file() else 0
        last, wrong = _last_message(memory_md)
        print(f"{column(files.agent, 28)} {size:>10,} {len(files.archives):>8}  {last}")
        if wrong and last == "unreadable":
            hints.append(
                f"{files.agent}: {wrong}; no message in it reads: restore it or move it aside "
                f"(`memorylab show {files.agent} --all --lenient` prints what its archives hold)"
            )
        elif wrong:
            hints.append(
                f"{files.agent}: {wrong}; `memorylab show {files.agent} --lenient` prints the "
                "messages that read"
            )
    # An agent folder the loaders could not take (a MEMORY.md that is a folder, a dangling
    # link ...) is no row: said here, so it is not missed (the note says what to do).
    hints += [f"{note.file}: {note.message}" for note in notes]
    for hint in hints:
        print(f"  {hint}")
    return 0


def _read(source: Path, args: argparse.Namespace, model: str | None = None,
          agent: str | None = None) -> ReadResult:  # fmt: skip
    """The one reading of every command that reads memory (show, stats, plot, report, export,
    audit): strictly, a damaged part is :class:`MemoryFormatError` (exit code 3) naming its file
    and line and saying to use ``--lenient`` (the library's strict read, ``memory_df(...,
    on_bad="error")``'s); with ``--lenient``, what can be read, and one line on stderr naming
    what was skipped. The records read come with the result, so nothing is read twice.
    ``agent`` (``--agent``): that agent of ``source`` alone, as the library chooses it
    (``load_records(source, agent=...)``); one not there is :class:`AgentNotFound` (exit code
    5), naming the agents there."""
    from memorylab.analysis import load_records, memory_df_with_problems

    if not getattr(args, "lenient", False):
        records = load_records(source, strict=True, agent=agent)
        result = memory_df_with_problems(records, model=model)
        # memorylab's files raise at their first damaged part; another framework's loader
        # notes a damaged line (a torn JSON line) instead: the same stop for it.
        damaged = [note for record in result.records for note in record.notes if note.damaged]
        if damaged:
            first = damaged[0]
            more = f" (and {len(damaged) - 1:,} more)" if len(damaged) > 1 else ""
            raise MemoryFormatError(
                f"{first.file}, line {first.line}: {first.message}{more}; use --lenient to "
                "salvage the readable parts"
            )
        return result
    from memorylab.analysis._sources import REMARK_KINDS

    # An agent chosen is read as its records: a source's own notes are not that agent's.
    chosen = source if agent is None else load_records(source, agent=agent)
    result = memory_df_with_problems(chosen, model=model)
    problems = result.problems[~result.problems["kind"].isin(REMARK_KINDS)]
    if len(problems) and not len(result.frame):  # never an output of nothing: said, exit 3
        first = problems.iloc[0]
        more = f" (and {len(problems) - 1:,} more)" if len(problems) > 1 else ""
        raise MemoryFormatError(
            f"nothing under {source} could be read, even with --lenient: {first['file']}, line "
            f"{first['line']}: {first['message']}{more}; fix or remove the file"
        )
    # What was skipped is what a strict read stops at (a note that says a file did not read
    # whole, or could not be read); a gap or a missing archive is no part skipped.
    stopped_at = {(note.file, note.line, note.kind) for record in result.records
                  for note in record.notes if note.damaged}  # fmt: skip
    where_kind = problems[["file", "line", "kind"]].itertuples(index=False)
    skipped = problems[[(str(file), int(line), kind) in stopped_at or kind == "io"
                        for file, line, kind in where_kind]]  # fmt: skip
    if len(skipped):
        print(f"memorylab: warning: {_skipped(skipped)} (--lenient read around them)",
              file=sys.stderr)  # fmt: skip
    return result


_NAMED_FILES = 3
"""The damaged files a ``--lenient`` warning names (the rest counted)."""


def _skipped(problems: pd.DataFrame) -> str:
    """What ``--lenient`` skipped, in one line: each damaged file (the first few) with its
    problems' lines and kinds (``a.md, line 1: encoding, header; line 9: torn``)."""
    files = list(dict.fromkeys(problems["file"].astype(str)))
    named = []
    for file in files[:_NAMED_FILES]:
        rows = problems[problems["file"].astype(str) == file]
        kinds: dict[int, list[str]] = {}
        for line, kind in rows[["line", "kind"]].itertuples(index=False):
            kinds.setdefault(int(line), []).append(str(kind))
        named.append(f"{file}, " + "; ".join(f"line {line}: {', '.join(dict.fromkeys(k))}"
                                             for line, k in kinds.items()))  # fmt: skip
    more = f" and {len(files) - _NAMED_FILES:,} more file(s)" if len(files) > _NAMED_FILES else ""
    return (f"skipped {len(problems):,} unreadable part(s) of {len(files):,} file(s): "
            f"{' | '.join(named)}{more}")  # fmt: skip


@contextlib.contextmanager
def _said_once(args: argparse.Namespace) -> Iterator[None]:
    """With ``--lenient`` the skipped parts were named once (:func:`_read`): the library's own
    warning about them, read again by a function the command calls, would say it twice."""
    from memorylab.errors import MemoryReadWarning

    with warnings.catch_warnings():
        if getattr(args, "lenient", False):
            warnings.simplefilter("ignore", MemoryReadWarning)
        yield


def _show(args: argparse.Namespace) -> int:
    folder = _agent_folder(_existing_workspace(args.workspace), args.agent)
    live = folder / "MEMORY.md"
    # Without --all only MEMORY.md is shown, so only it is read: a damaged archive it does not
    # print cannot fail it.
    frame = _read(folder if args.all or not live.exists() else live, args).frame
    if not args.all:
        frame = frame[frame["kind"] == "memory"]
    if args.tail is not None:
        frame = frame.tail(args.tail) if args.tail else frame.iloc[0:0]
    for row in frame.itertuples():
        print(f"[{row.timestamp:%Y-%m-%d %H:%M:%S}] {row.role} ({Path(str(row.file)).name}):")
        print(f"{row.content}\n")
    return 0


def _stats(args: argparse.Namespace) -> int:
    from memorylab.analysis import compactions_df

    workspace = _existing_workspace(args.workspace, agent_folder_ok=True)
    check_model_name(args.model, "--model")
    read = _read(workspace, args, model=args.model)
    frame, compactions = read.frame, compactions_df(list(read.records))
    print(f"workspace: {workspace} (tokens counted as {args.model})")
    print(f"{'agent':<28} {'messages':>9} {'segments':>8} {'compactions':>11} {'tokens':>10}")
    for agent, rows in frame.groupby("agent", observed=True):
        count = int((compactions["agent"] == agent).sum()) if len(compactions) else 0
        print(
            f"{column(str(agent), 28)} {len(rows):>9,} {int(rows['segment'].max()) + 1:>8} "
            f"{count:>11} {int(rows['tokens'].sum()):>10,}"
        )
    return 0


def _plot(args: argparse.Namespace) -> int:
    output = check_output(Path(args.output), "-o", formats=image_formats())
    threshold = threshold_value(args.threshold) if args.threshold else None
    if args.model is not None:
        check_model_name(args.model, "--model")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from memorylab.analysis import plot_token_growth, run_settings, save_plot, token_growth

    folder = _agent_folder(_existing_workspace(args.workspace), args.agent)
    frame = _read(folder, args).frame
    growth = token_growth(
        frame, context_length=args.context_length, threshold=threshold, model=args.model
    )
    figure, ax = plt.subplots(figsize=(9, 4), layout="constrained")
    plot_token_growth(growth, ax=ax, title=f"{args.agent}: context tokens per message")
    save_plot(figure, output, dpi=120)
    plt.close(figure)
    settings = run_settings(frame, model=args.model).given(
        context_length=args.context_length, threshold=threshold
    )
    print(f"wrote {output} ({settings.describe()})")
    return 0


def _report(args: argparse.Namespace) -> int:
    from memorylab.report import write_report

    output = check_output(Path(args.output), "-o", formats=("html", "htm"))
    threshold = threshold_value(args.threshold) if args.threshold else None
    if args.model is not None:
        check_model_name(args.model, "--model")
    workspace = _existing_workspace(args.workspace, agent_folder_ok=True)
    # The report reads leniently and lists what it could not read; the command's rule comes
    # first: without --lenient a damaged part stops it, with it the parts left out are named.
    _read(workspace, args, agent=args.agent)
    path = write_report(
        workspace,
        output,
        agent=args.agent,
        context_length=args.context_length,
        threshold=threshold,
        model=args.model,
    )
    print(f"wrote {path} ({path.stat().st_size:,} bytes) for {workspace}")
    return 0


_ROW_IS = {
    ("calibration", "frame"): "compaction against the billed count",
    ("costs", "frame"): "compaction",
    ("facts", "frame"): "fact in a summary",
    ("calibration", "summary"): "agent and model",
    ("costs", "summary"): "agent with priced compactions",
    ("facts", "summary"): "category of facts, and all",
}
"""What one row of each audit's table is, for the header line."""


def _audit(args: argparse.Namespace) -> int:
    from pandas.api.types import is_numeric_dtype

    from memorylab.analysis import audit

    if args.model is not None:
        if args.audit != "costs":
            raise InvalidSetting(
                f"--model prices the costs audit only; leave it out of audit {args.audit}"
            )
        check_model_name(args.model, "--model")
    workspace = _existing_workspace(args.workspace, agent_folder_ok=True)
    read = _read(workspace, args, agent=args.agent)
    options = {"model": args.model} if args.audit == "costs" else {}
    result = audit(list(read.records), args.audit, **options)
    table = result.frame if args.table == "frame" else result.summary
    if args.format == "csv":
        table.to_csv(sys.stdout, index=False)
        return 0
    if args.format == "json":
        rows = json.loads(table.to_json(orient="records", date_format="iso") or "[]")
        document = {"audit": result.name, "title": result.title, "source": str(workspace),
                    "agent": args.agent, "table": args.table, "notes": result.notes(),
                    "rows": rows}  # fmt: skip
        print(json.dumps(document, ensure_ascii=False, indent=1))
        return 0
    shown = result.text(args.table)
    where = f"{workspace}" + (f", agent {args.agent}" if args.agent else "")
    row_is = _ROW_IS[args.audit, args.table]
    header = f"{result.title} ({where}): {len(shown):,} row(s), one per {row_is}"
    notes = result.notes()
    if not len(shown):
        why = notes[0] if notes else "the files hold nothing for this audit"
        print(f"{result.title} ({where}): nothing to show; {why[0].lower()}{why[1:]}")
        return 0
    print(header)
    for note in notes:
        print(f"  {note}")
    print()
    headings = result.headings
    numeric = {headings[c] for c in table.columns
               if c in headings and is_numeric_dtype(table[c])}  # fmt: skip
    rows = shown.astype(str).values.tolist()
    for line in aligned_table(rows, [str(c) for c in shown.columns], right=numeric):
        print(line)
    return 0


def _duration(text: str) -> timedelta:
    """``--older-than``: a duration the clock can go back by (a huge one is refused here rather
    than overflowing in datetime)."""
    from memorylab.memory._retention import parse_duration

    try:
        duration = parse_duration(text)
        _ = datetime.now(UTC) - duration  # a cutoff before year 1 raises OverflowError
    except OverflowError:
        raise InvalidSetting(
            f"--older-than {text!r} is too long: give a duration such as 30d, 12h or 52w"
        ) from None
    return duration


# `forget` and `purge` ask the same way: at a terminal they ask (no: exit code 1); without a
# terminal they refuse (exit code 2) unless --yes says it beforehand.


def _no_terminal_to_ask(what: str) -> bool:
    """True (and the one-line refusal printed) when there is no terminal to ask."""
    if sys.stdin.isatty():
        return False
    print(f"memorylab: refusing to {what} without --yes (no terminal to ask)", file=sys.stderr)
    return True


def _confirmed(question: str) -> bool:
    return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")


def _forget(args: argparse.Namespace) -> int:
    from memorylab.privacy import forget

    workspace = _existing_or_default_workspace(args.workspace)
    if not args.yes:
        if _no_terminal_to_ask("forget"):
            return 2
        if not _confirmed(f"Delete all memory of {args.agent!r} for good?"):
            print("memorylab: not confirmed; nothing deleted", file=sys.stderr)
            return 1
    print(forget(args.agent, workspace))
    return 0


def _export(args: argparse.Namespace) -> int:
    from memorylab.privacy import export_agent

    output = None
    if args.output is not None:
        output = check_output(Path(args.output), "-o", overwrite=args.overwrite,
                               formats=(args.format,))  # fmt: skip
    workspace = _existing_or_default_workspace(args.workspace)
    from memorylab.config import resolve_workspace

    # The export keeps each file's problems beside its messages; the command's rule first. A
    # memory file that is no regular file (a FIFO) is export_agent's to refuse, in its words.
    with contextlib.suppress(StoreError):
        _read(_agent_folder(resolve_workspace(workspace), args.agent), args)
    path = export_agent(
        args.agent, workspace, format=args.format, path=output, overwrite=args.overwrite
    )
    print(f"wrote {path}")
    return 0


def _purge(args: argparse.Namespace) -> int:
    from memorylab.config import resolve_workspace
    from memorylab.memory._retention import format_duration
    from memorylab.privacy import purge
    from memorylab.privacy._remove import agent_names

    older_than = _duration(args.older_than)
    workspace = _existing_or_default_workspace(args.workspace)
    if not args.dry_run and not args.yes:
        if _no_terminal_to_ask("purge"):
            return 2
        doomed = purge(workspace, older_than=older_than, dry_run=True)
        if not doomed:
            print("removed 0 item(s)")
            return 0
        for item in doomed:
            print(item)
        if not _confirmed(f"Remove these {len(doomed)} item(s) for good?"):
            print("memorylab: not confirmed; nothing removed", file=sys.stderr)
            return 1
    agents = agent_names(resolve_workspace(workspace) / "agents")  # as `memorylab ls` names them
    items = purge(workspace, older_than=older_than, dry_run=args.dry_run)
    for item in items:
        print(item)
    gone = {item.agent for item in items if item.kind == "agent"}
    left = [name for name in agents if name not in gone]
    if left:
        shown = ", ".join(left[:10]) + (f" and {len(left) - 10} more" if len(left) > 10 else "")
        print(
            f"{'would keep' if args.dry_run else 'kept'} {len(left)} agent(s) that changed in "
            f"the last {format_duration(older_than)}: {shown} (MEMORY.md holds the messages "
            "since the last compaction and is never trimmed; only archives older than "
            "--older-than go)"
        )
    print(f"{'would remove' if args.dry_run else 'removed'} {len(items)} item(s)")
    return 0


_CONTEXT_LENGTH = bounded_int(1, MAX_CONTEXT_TOKENS, "a context window in tokens")


def _add_workspace(parser: argparse.ArgumentParser, where: str) -> None:
    """The workspace, as an argument or as --workspace (both ways on every command)."""
    parser.add_argument("workspace_arg", nargs="?", metavar="WORKSPACE", help=where)
    parser.add_argument("--workspace", dest="workspace_opt", metavar="WORKSPACE",
                        help="the same as WORKSPACE")  # fmt: skip


def _one_workspace(args: argparse.Namespace) -> None:
    """``args.workspace`` from WORKSPACE or --workspace (given twice, they must agree)."""
    given = [w for w in (getattr(args, "workspace_arg", None), getattr(args, "workspace_opt", None))
             if w]  # fmt: skip
    if len(given) == 2 and Path(given[0]) != Path(given[1]):
        raise InvalidSetting(
            f"two workspaces given ({given[0]} and --workspace {given[1]}); give one"
        )
    args.workspace = given[0] if given else None


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="memorylab",
        description="Persistent agent memory (MEMORY.md) and tools to study it.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"memorylab {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    def command(
        name: str,
        help_text: str,
        handler: Callable[[argparse.Namespace], int],
        where: str | None = None,
        *,
        agent: bool = False,
    ) -> argparse.ArgumentParser:
        """A sub-command, its AGENT argument (``agent``), its WORKSPACE (``where``: the help)."""
        sub = commands.add_parser(
            name, help=help_text, description=help_text, formatter_class=HelpFormatter
        )
        if agent:
            sub.add_argument("agent")
        if where is not None:
            _add_workspace(sub, where)
        sub.set_defaults(handler=handler)
        return sub

    where = "workspace folder (default: $WORKSPACE_DIR, else the bundled sample workspace)"
    where_private = "workspace folder (default: $WORKSPACE_DIR, else ./agent_workspace)"
    lenient = ("go on past a damaged file with what can be read, naming on stderr what was "
               "skipped (without it, a damaged part stops the command: exit code 3)")  # fmt: skip

    demo_where = "workspace folder (default: a new temporary folder)"
    command("demo", "write, compact and show a small agent memory", _demo, demo_where)
    command("ls", "list the agents of a workspace", _ls, where)

    show = command("show", "print an agent's messages", _show, where, agent=True)
    show.add_argument("--all", action="store_true", help="include the archives, oldest first")
    show.add_argument("--tail", type=bounded_int(0, 10**9, "a number of messages"), metavar="N",
                      help="only the last N messages (default: all)")  # fmt: skip
    show.add_argument("--lenient", action="store_true", help=lenient)

    stats = command("stats", "messages, segments, compactions, tokens per agent", _stats, where)
    stats.add_argument("--model", default="gpt-4o", help="count tokens as this model does")
    stats.add_argument("--lenient", action="store_true", help=lenient)

    plot = command("plot", "plot an agent's token growth to an image", _plot, where, agent=True)
    plot.add_argument("-o", "--output", default="growth.png",
                      help="image file (.png, .svg, .pdf ...; replaced if it exists)")  # fmt: skip
    plot.add_argument("--context-length", type=_CONTEXT_LENGTH, default=None,
                      help="tokens (default: the agent's records)")  # fmt: skip
    plot.add_argument(
        "--threshold", default=None,
        help="fraction (0.9) or tokens (6000) (default: the agent's records)",
    )  # fmt: skip
    plot.add_argument("--model", default=None, help="tokenizer (default: the records')")
    plot.add_argument("--lenient", action="store_true", help=lenient)

    report = command("report", "write a self-contained HTML report", _report, where)
    report.add_argument("-o", "--output", default="report.html",
                        help="HTML file (replaced if it exists)")  # fmt: skip
    report.add_argument(
        "--context-length", type=_CONTEXT_LENGTH, default=None,
        help="tokens (default: from the compaction records, else 8192)",
    )  # fmt: skip
    report.add_argument(
        "--threshold", default=None,
        help="fraction or tokens (default: from the records, else 0.9)",
    )  # fmt: skip
    report.add_argument(
        "--model", default=None, help="count tokens as this model does (default: the records')"
    )
    report.add_argument("--agent", default=None, metavar="NAME",
                        help="report this agent only (as `ls` names it)")  # fmt: skip
    report.add_argument("--lenient", action="store_true", help=lenient)

    audit = command(
        "audit",
        "print an audit's table: calibration (did compaction fire when it should have?), "
        "costs (what each compaction cost, with prompt caching), facts (which facts survive "
        "each summary)",
        _audit,
    )
    audit.add_argument("audit", choices=("calibration", "costs", "facts"),
                       help="the audit whose table to print")  # fmt: skip
    _add_workspace(audit, where)
    audit.add_argument("--agent", default=None, metavar="NAME",
                       help="audit this agent only (as `ls` names it)")  # fmt: skip
    audit.add_argument("--format", choices=("text", "csv", "json"), default="text",
                       help="text: an aligned table; csv, json: for a program")  # fmt: skip
    audit.add_argument(
        "--table", choices=("summary", "frame"), default="summary",
        help="summary: per model, agent or category (the report's table); frame: one row per "
        "compaction (calibration, costs) or per fact in a summary (facts)",
    )  # fmt: skip
    audit.add_argument(
        "--model", default=None, help="costs: price the calls as this model (default: the records')"
    )
    audit.add_argument("--lenient", action="store_true", help=lenient)

    forget = command(
        "forget", "delete everything stored for an agent", _forget, where_private, agent=True
    )
    forget.add_argument("--yes", action="store_true", help="do not ask for confirmation")

    exported = "export an agent's whole memory (all segments)"
    export = command("export", exported, _export, where_private, agent=True)
    export.add_argument("--format", choices=("json", "parquet"), default="json")
    export.add_argument("-o", "--output", default=None,
                        help="file to write (default: ./AGENT.export.FORMAT)")  # fmt: skip
    export.add_argument("--overwrite", action="store_true", help="replace an existing file")
    export.add_argument("--lenient", action="store_true", help=lenient)

    purge = command("purge", "remove memory older than a duration", _purge, where_private)
    purge.add_argument("--older-than", default="30d", help="e.g. 30d, 12h, 2w, 1d12h")
    purge.add_argument("--dry-run", action="store_true", help="only list what would go")
    purge.add_argument("--yes", action="store_true", help="do not ask for confirmation")

    add_convert_arguments(
        command(
            "convert",
            "write another framework's run as a memorylab workspace, or memorylab's "
            "transcripts in another framework's input format (docs/converting.md)",
            run_convert,
        )
    )
    add_compare_arguments(
        command(
            "compare",
            "compare summarizers or memory strategies (and recall): which facts "
            "survive, which questions are answered, at what cost",
            run_compare,
        )
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``memorylab ARGV``; return the exit code (docs/cli.md's table)."""
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        # argparse gives an optional positional (WORKSPACE) nothing when options come between it
        # and the arguments before it (`audit costs --agent A ws`): the one word left is it.
        if (len(extra) == 1 and not extra[0].startswith("-")
                and getattr(args, "workspace_arg", "") is None):  # fmt: skip
            args.workspace_arg = extra.pop()
        if extra:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as stop:  # --help (0) or a usage error (2), already printed
        return stop.code if isinstance(stop.code, int) else 2

    def handler(args: argparse.Namespace) -> int:
        _one_workspace(args)
        with _said_once(args):
            return int(args.handler(args))

    return run_handler(handler, args)


__all__ = [
    "build_parser",
    "main",
]


if __name__ == "__main__":
    sys.exit(main())
