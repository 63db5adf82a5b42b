"""The ``memorylab`` command: thin argument parsing over the library.

Every ``MemorylabError`` becomes a one-line message on stderr and a non-zero exit code:
2 for bad usage/arguments, 3 for format errors, 4 for store errors, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from memorylab.errors import (
    InvalidAgentName,
    InvalidSetting,
    MemoryFormatError,
    MemorylabError,
    StoreError,
)


def _exit_code(error: MemorylabError) -> int:
    if isinstance(error, InvalidAgentName | InvalidSetting):
        return 2
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="memorylab", description="Persistent agent memory (MEMORY.md) and tools to study it."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="write, compact and show a small agent memory")
    demo.add_argument("--workspace", help="workspace folder (default: a new temporary folder)")
    demo.set_defaults(handler=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except MemorylabError as error:
        print(f"memorylab: {error}", file=sys.stderr)
        return _exit_code(error)
