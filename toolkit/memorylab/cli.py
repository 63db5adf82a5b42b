"""The ``memorylab`` command: thin argument parsing over the library.

Every ``MemorylabError`` becomes a one-line message on stderr and a non-zero exit code:
2 for bad usage/arguments, 3 for format errors, 4 for store errors, 5 for an unknown agent,
1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from memorylab.errors import (
    AgentNotFound,
    InvalidAgentName,
    InvalidSetting,
    MemoryFormatError,
    MemorylabError,
    StoreError,
)


def _exit_code(error: MemorylabError) -> int:
    if isinstance(error, InvalidAgentName | InvalidSetting):
        return 2
    if isinstance(error, AgentNotFound):
        return 5
    if isinstance(error, MemoryFormatError):
        return 3
    if isinstance(error, StoreError):
        return 4
    return 1


def _demo(args: argparse.Namespace) -> int:
    """Write a short conversation, compact it, and show what ends up on disk."""
    from memorylab.memory.conversation import Conversation
    from memorylab.memory.store import read_memory

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


def _agent_folder(workspace: Path, agent: str) -> Path:
    from memorylab.memory.paths import agent_paths, validate_agent_name

    validate_agent_name(agent)
    folder = agent_paths(agent, workspace).folder
    if not folder.is_dir():
        known = sorted(p.name for p in (workspace / "agents").glob("*") if p.is_dir())
        raise AgentNotFound(
            f"no agent {agent!r} in {workspace}; agents there: {', '.join(known) or 'none'}"
        )
    return folder


def _ls(args: argparse.Namespace) -> int:
    from memorylab.memory.paths import MemoryPaths

    workspace = _workspace(args.workspace)
    agents_dir = workspace / "agents"
    if not agents_dir.is_dir():
        raise AgentNotFound(f"{workspace} has no agents/ folder: is it a memorylab workspace?")
    print(f"{'agent':<28} {'MEMORY.md':>10} {'archives':>8}  last change")
    for folder in sorted(p for p in agents_dir.iterdir() if p.is_dir()):
        paths = MemoryPaths(folder / "MEMORY.md")
        size = paths.memory_md.stat().st_size if paths.memory_md.is_file() else 0
        changed = (
            f"{datetime.fromtimestamp(paths.memory_md.stat().st_mtime):%Y-%m-%d %H:%M}"
            if paths.memory_md.is_file()
            else "-"
        )
        print(f"{folder.name:<28} {size:>10,} {len(paths.archives()):>8}  {changed}")
    return 0


def _show(args: argparse.Namespace) -> int:
    from memorylab.analysis import memory_df

    folder = _agent_folder(_workspace(args.workspace), args.agent)
    frame = memory_df(folder)
    if not args.all:
        frame = frame[frame["kind"] == "memory"]
    if args.tail:
        frame = frame.tail(args.tail)
    for row in frame.itertuples():
        print(f"[{row.timestamp:%Y-%m-%d %H:%M:%S}] {row.role} ({Path(str(row.file)).name}):")
        print(f"{row.content}\n")
    return 0


def _stats(args: argparse.Namespace) -> int:
    from memorylab.analysis import compactions_df, memory_df

    workspace = _workspace(args.workspace)
    frame = memory_df(workspace, tokens=args.model)
    compactions = compactions_df(workspace)
    grouped = frame.groupby("agent", observed=True)
    print(f"workspace: {workspace} (tokens counted as {args.model})")
    print(f"{'agent':<28} {'messages':>9} {'segments':>8} {'compactions':>11} {'tokens':>10}")
    for agent, rows in grouped:
        count = int((compactions["agent"] == agent).sum()) if len(compactions) else 0
        print(
            f"{agent!s:<28} {len(rows):>9,} {int(rows['segment'].max()) + 1:>8} {count:>11} "
            f"{int(rows['tokens'].sum()):>10,}"
        )
    return 0


def _plot(args: argparse.Namespace) -> int:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from memorylab.analysis import memory_df, plot_token_growth, run_settings, token_growth

    folder = _agent_folder(_workspace(args.workspace), args.agent)
    frame = memory_df(folder)
    threshold = _threshold(args.threshold) if args.threshold else None
    growth = token_growth(
        frame, context_length=args.context_length, threshold=threshold, model=args.model
    )
    figure, ax = plt.subplots(figsize=(9, 4), layout="constrained")
    plot_token_growth(growth, ax=ax, title=f"{args.agent}: context tokens per message")
    figure.savefig(args.output, dpi=120, bbox_inches="tight")
    settings = run_settings(frame, model=args.model).given(
        context_length=args.context_length, threshold=threshold
    )
    print(f"wrote {args.output} ({settings.describe()})")
    return 0


def _report(args: argparse.Namespace) -> int:
    from memorylab.report import write_report

    workspace = _workspace(args.workspace)
    path = write_report(
        workspace,
        args.output,
        context_length=args.context_length,
        threshold=_threshold(args.threshold) if args.threshold else None,
        model=args.model,
    )
    print(f"wrote {path} ({path.stat().st_size:,} bytes) for {workspace}")
    return 0


def _threshold(text: str) -> float | int:
    try:
        value = float(text)
    except ValueError:
        raise InvalidSetting(
            f"--threshold {text!r} is not a number: give a fraction such as 0.9 or tokens such "
            "as 6000"
        ) from None
    return int(value) if value > 1 and value.is_integer() else value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memorylab", description="Persistent agent memory (MEMORY.md) and tools to study it."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    where = "workspace folder (default: $WORKSPACE_DIR, else the bundled sample workspace)"

    demo = commands.add_parser("demo", help="write, compact and show a small agent memory")
    demo.add_argument("--workspace", help="workspace folder (default: a new temporary folder)")
    demo.set_defaults(handler=_demo)

    ls = commands.add_parser("ls", help="list the agents of a workspace")
    ls.add_argument("workspace", nargs="?", help=where)
    ls.set_defaults(handler=_ls)

    show = commands.add_parser("show", help="print an agent's messages")
    show.add_argument("agent")
    show.add_argument("--workspace", help=where)
    show.add_argument("--all", action="store_true", help="include the archives, oldest first")
    show.add_argument("--tail", type=int, default=0, help="only the last N messages")
    show.set_defaults(handler=_show)

    stats = commands.add_parser("stats", help="messages, segments, compactions, tokens per agent")
    stats.add_argument("workspace", nargs="?", help=where)
    stats.add_argument("--model", default="gpt-4o", help="count tokens as this model does")
    stats.set_defaults(handler=_stats)

    for name, help_text in (("plot", "plot an agent's token growth to a PNG"),):
        plot = commands.add_parser(name, help=help_text)
        plot.add_argument("agent")
        plot.add_argument("-o", "--output", default="growth.png")
        plot.add_argument("--workspace", help=where)
        plot.add_argument(
            "--context-length", type=int, default=None, help="default: the agent's records"
        )
        plot.add_argument(
            "--threshold",
            default=None,
            help="fraction (0.9) or tokens (6000); default: the agent's records",
        )
        plot.add_argument("--model", default=None, help="tokenizer; default: the records'")
        plot.set_defaults(handler=_plot)

    report = commands.add_parser("report", help="write a self-contained HTML report")
    report.add_argument("workspace", nargs="?", help=where)
    report.add_argument("-o", "--output", default="report.html")
    report.add_argument(
        "--context-length",
        type=int,
        default=None,
        help="default: from the compaction records, else 8192",
    )
    report.add_argument("--threshold", default=None, help="default: from the records, else 0.9")
    report.add_argument(
        "--model", default=None, help="count tokens as this model does (default: the records')"
    )
    report.set_defaults(handler=_report)
    forget = commands.add_parser("forget", help="delete everything stored for an agent")
    forget.add_argument("agent")
    forget.add_argument("--workspace", help="workspace folder (default: $WORKSPACE_DIR)")
    forget.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    forget.set_defaults(handler=_forget)

    export = commands.add_parser("export", help="export an agent's whole memory (all segments)")
    export.add_argument("agent")
    export.add_argument("--workspace", help="workspace folder (default: $WORKSPACE_DIR)")
    export.add_argument("--format", choices=("json", "parquet"), default="json")
    export.add_argument("-o", "--output", default=None, help="file to write")
    export.set_defaults(handler=_export)

    purge = commands.add_parser("purge", help="remove memory older than a duration")
    purge.add_argument("--workspace", help="workspace folder (default: $WORKSPACE_DIR)")
    purge.add_argument("--older-than", default="30d", help="e.g. 30d, 12h")
    purge.add_argument("--dry-run", action="store_true", help="only list what would go")
    purge.set_defaults(handler=_purge)

    from memorylab.evaluate.cli import add_compare_arguments

    add_compare_arguments(
        commands.add_parser(
            "compare", help="compare summarizers: which facts survive, at what cost"
        )
    )
    return parser


def _forget(args: argparse.Namespace) -> int:
    from memorylab.privacy import forget

    if not args.yes:
        if not sys.stdin.isatty():
            print(
                "memorylab: refusing to forget without --yes (no terminal to ask)", file=sys.stderr
            )
            return 2
        answer = input(f"Delete all memory of {args.agent!r} for good? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("nothing deleted")
            return 1
    print(forget(args.agent, args.workspace))
    return 0


def _export(args: argparse.Namespace) -> int:
    from memorylab.privacy import export_agent

    path = export_agent(args.agent, args.workspace, format=args.format, path=args.output)
    print(f"wrote {path}")
    return 0


def _purge(args: argparse.Namespace) -> int:
    from memorylab.privacy import purge

    items = purge(args.workspace, older_than=args.older_than, dry_run=args.dry_run)
    for item in items:
        print(item)
    print(f"{'would remove' if args.dry_run else 'removed'} {len(items)} item(s)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except MemorylabError as error:
        print(f"memorylab: {error}", file=sys.stderr)
        return _exit_code(error)


__all__ = [
    "build_parser",
    "main",
]
