"""``memorylab convert``: another framework's run written as a memorylab workspace, or memorylab's
transcripts written in another framework's input format (docs/converting.md). Thin argument
parsing over :func:`memorylab.analysis.to_workspace` and
:func:`memorylab.analysis.export_transcripts`, with the exit codes of :mod:`memorylab._console`."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from memorylab._console import NothingThere
from memorylab.analysis import (
    EXPORT_FORMATS,
    export_transcripts,
    loader_for,
    loader_names,
    to_workspace,
)
from memorylab.errors import InvalidSetting, MemoryFormatError

WORKSPACE = "workspace"
"""``--to``'s value for a memorylab workspace (the others: :data:`EXPORT_FORMATS`)."""
TARGETS = (WORKSPACE, *EXPORT_FORMATS)


def add_convert_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``convert`` options to ``parser`` (and ``run_convert`` as its handler)."""
    parser.add_argument(
        "sources", nargs="+", type=Path, metavar="SOURCE",
        help="with --to workspace: another framework's run (a Claude Code session or project "
        "folder, a deepagents thread folder, an OpenAI Agents SQLite file, an inspect_ai log); "
        "otherwise memorylab transcripts (.jsonl files or folders of them)",
    )  # fmt: skip
    parser.add_argument(
        "-o", "--output", type=Path, required=True, metavar="OUT",
        help="with --to workspace the workspace to write the agents into (made if missing); "
        "claude-code and langchain: a folder (one file per transcript); openai-agents: a "
        "SQLite file; inspect-ai: a .jsonl dataset",
    )  # fmt: skip
    parser.add_argument(
        "--to", choices=TARGETS, default=WORKSPACE,
        help="what to write: a memorylab workspace, or the input format of another framework",
    )  # fmt: skip
    parser.add_argument(
        "--agent", metavar="NAME",
        help="with --to workspace: the agent's name (a source of one run; default: the run's "
        "own name)",
    )  # fmt: skip
    parser.add_argument(
        "--overwrite", action="store_true",
        help="replace files an export would write that exist (a workspace's agents are never "
        "written over)",
    )  # fmt: skip
    parser.set_defaults(handler=run_convert)
    return parser


def run_convert(args: argparse.Namespace) -> int:
    """Convert what ``args`` name; print what was written (and what the format did not record)."""
    sources: list[Path] = [Path(s).expanduser() for s in args.sources]
    output = Path(args.output).expanduser()
    _check_arguments(args, sources, output)
    if args.to == WORKSPACE:
        for source in sources:
            _check_readable(source)
            result = to_workspace(source, output, agent=args.agent)
            for agent in result.agents:
                shown = output / agent.memory_md.relative_to(result.workspace)  # as OUT was given
                print(
                    f"{agent.agent}: {agent.messages} messages, {len(agent.archives)} "
                    f"compaction(s), {agent.calls} model call(s) from {result.format} -> {shown}"
                )
            for note in result.notes:
                print(f"  note: {note}")
        print(f"read it with: memorylab report {output}")
        return 0
    transcripts = [p for source in sources for p in _transcripts(source)]
    for written in export_transcripts(transcripts, output, to=args.to, overwrite=args.overwrite):
        print(f"wrote {written}")
    return 0


def _check_arguments(args: argparse.Namespace, sources: list[Path], output: Path) -> None:
    """What the command line gets wrong, said before anything is read or written."""
    missing = [s for s in sources if not os.path.lexists(s)]
    if missing:
        raise NothingThere(f"no such source: {missing[0]}; give an existing file or folder")
    if args.agent is not None and (args.to != WORKSPACE or len(sources) != 1):
        raise InvalidSetting(
            "--agent names the agent of one source converted to a workspace; leave it out "
            "with several sources or another --to"
        )
    folder = output.absolute().parent
    if not folder.is_dir():
        raise NothingThere(
            f"cannot write -o {output}: the folder {folder} does not exist; create it or choose "
            "another path"
        )
    if args.to in ("openai-agents", "inspect-ai") and output.is_dir():
        raise InvalidSetting(f"-o {output} is a folder; --to {args.to} writes one file: name it")
    if args.to in ("claude-code", "langchain", WORKSPACE) and output.is_file():
        raise InvalidSetting(f"-o {output} is a file; --to {args.to} writes into a folder")


def _check_readable(source: Path) -> None:
    """A source no loader reads is a file convert cannot parse (exit code 3)."""
    try:
        loader_for(source)
    except InvalidSetting:
        raise MemoryFormatError(
            f"{source} is none of the formats convert reads ({', '.join(loader_names())}); "
            "see docs/converting.md"
        ) from None


def _transcripts(source: Path) -> list[Path]:
    """A transcript file, or the ``.jsonl`` transcripts of a folder (in name order)."""
    if not source.is_dir():
        return [source]
    found = sorted(source.glob("*.jsonl"))
    if not found:
        raise NothingThere(f"{source} holds no transcript (.jsonl); give transcript files")
    return found
