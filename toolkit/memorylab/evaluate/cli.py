"""``memorylab compare``: compare summarizers from the command line (thin over the library).

Wired into ``memorylab`` as a sub-command with :func:`add_compare_arguments` and
:func:`run_compare`; also runnable on its own: ``python -m memorylab.evaluate.cli [...]``.

Sources are transcript files (``.jsonl``) or folders of them, and workspaces, agent folders or
memory files (every compaction in them becomes a case, scored with ``memorylab/existing`` when
no ``-s`` is given). With no source the bundled transcripts are used. The wide table is printed
as markdown; ``--csv`` writes the long-form scores, ``--png`` the plots.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memorylab.errors import InvalidSetting, MemorylabError

__all__ = ["add_compare_arguments", "load_cases", "main", "run_compare"]


def add_compare_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``compare`` options to ``parser`` (and ``run_compare`` as its handler)."""
    parser.add_argument(
        "sources", nargs="*", type=Path,
        help="transcripts (.jsonl or folders of them) and/or workspaces, agent folders, "
        "MEMORY.md/archive files (default: the bundled transcripts)",
    )  # fmt: skip
    parser.add_argument(
        "-s", "--summarizer", action="append", dest="summarizers", metavar="SPEC",
        help="a litellm model name or memorylab/extractive, memorylab/truncate, "
        "memorylab/head-tail, memorylab/existing (repeatable; default: the three offline "
        "baselines, or memorylab/existing for workspace cases)",
    )  # fmt: skip
    parser.add_argument(
        "--scorer", action="append", dest="scorers", metavar="NAME",
        help="compression, latency, cost, fact_recall, probe_qa, judge, rouge, similarity "
        "(repeatable; default: compression, latency, cost, fact_recall, probe_qa)",
    )  # fmt: skip
    parser.add_argument("--reader", help="litellm model that answers probes (default: offline)")
    parser.add_argument("--judge", metavar="MODEL", help="add the judge scorer with this model")
    parser.add_argument("--api-base", help="api_base for every model call (a local server)")
    parser.add_argument("--max-tokens", type=int, help="summary budget for every summarizer")
    parser.add_argument(
        "--split", choices=("whole", "session", "window"), default="whole",
        help="how transcripts are cut into cases (default: whole)",
    )  # fmt: skip
    parser.add_argument("--window", type=int, default=40, help="messages per --split window")
    parser.add_argument("--concurrency", type=int, default=8, help="parallel calls (default 8)")
    parser.add_argument("--cache-dir", type=Path, help="LLM call cache (default: workspace)")
    parser.add_argument("--no-cache", action="store_true", help="do not cache model calls")
    parser.add_argument("--max-cost", type=float, metavar="USD", help="refuse above this")
    parser.add_argument(
        "--table", choices=("summary", "fact-survival"), default="summary",
        help="what to print: the wide summary table or the per-category fact survival",
    )  # fmt: skip
    parser.add_argument("--csv", type=Path, help="write the long-form scores here")
    parser.add_argument("--png", type=Path, help="write the plots here (one PNG, 3 panels)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(handler=run_compare)
    return parser


def _is_transcripts(path: Path) -> bool:
    return path.suffix == ".jsonl" or (
        path.is_dir() and not (path / "agents").is_dir() and any(path.glob("*.jsonl"))
    )


def load_cases(sources: Sequence[Path], split: str = "whole", window: int = 40) -> list[Any]:
    """Cases from command-line sources (see the module docstring)."""
    from memorylab.evaluate.cases import cases_from_transcripts, cases_from_workspace

    if not sources:
        return cases_from_transcripts(None, split=split, window=window)  # type: ignore[arg-type]
    cases: list[Any] = []
    for source in sources:
        if _is_transcripts(source):
            cases += cases_from_transcripts(source, split=split, window=window)  # type: ignore[arg-type]
        else:
            cases += cases_from_workspace(source)
    if not cases:
        raise InvalidSetting(f"no cases found in {', '.join(map(str, sources))}")
    return cases


def _plots(df: Any, path: Path) -> None:

    from matplotlib.figure import Figure

    from memorylab.evaluate.plots import plot_cost_quality, plot_latency, plot_quality

    figure = Figure(figsize=(18, 5), layout="constrained")
    axes = figure.subplots(1, 3)
    scorers = set(df["scorer"])
    if "fact_recall" in scorers:
        plot_quality(df, ax=axes[0])
        if "cost" in scorers:
            plot_cost_quality(df, ax=axes[1])
    if "latency" in scorers:
        plot_latency(df, ax=axes[2])
    figure.savefig(path, dpi=110)


def run_compare(args: argparse.Namespace) -> int:
    """Run the comparison that ``args`` describe; print the table; write CSV/PNG."""
    from memorylab.evaluate.compare import (
        BASELINES,
        DEFAULT_SCORERS,
        EXISTING,
        compare_summarizers,
        fact_survival_table,
        markdown_table,
        summary_table,
    )
    from memorylab.evaluate.scorers import get_scorer

    cases = load_cases(args.sources, args.split, args.window)
    llm_args = {"api_base": args.api_base, "api_key": "x"} if args.api_base else {}
    summarizers = args.summarizers or (
        [EXISTING] if all(c.summary for c in cases) else list(BASELINES)
    )
    scorers: list[Any] = []
    for name in args.scorers or DEFAULT_SCORERS:
        if name == "probe_qa" and args.reader:
            scorers.append(get_scorer("probe_qa", reader=args.reader, llm_args=llm_args))
        elif name == "judge":
            scorers.append(get_scorer("judge", model=args.judge, llm_args=llm_args))
        else:
            scorers.append(name)
    if args.judge and "judge" not in (args.scorers or ()):
        scorers.append(get_scorer("judge", model=args.judge, llm_args=llm_args))
    cache_dir: Any = False if args.no_cache else (args.cache_dir or True)
    df = compare_summarizers(
        cases,
        summarizers,
        scorers,
        concurrency=args.concurrency,
        cache_dir=cache_dir,
        max_cost_usd=args.max_cost,
        progress=not args.no_progress,
        max_tokens=args.max_tokens,
        summarizer_args={"llm_args": llm_args} if llm_args else None,
    )
    if args.table == "fact-survival":
        table = fact_survival_table(df)
        shares = [c for c in table.columns if c != "facts"]
        print(markdown_table(table, percent=shares))
    else:
        print(markdown_table(summary_table(df)))
    run = df.attrs.get("run", {})
    print(
        f"\n{len(cases)} cases x {len(set(df['summarizer']))} summarizers; model requests "
        f"{run.get('requests', 0)}, cache hits {run.get('cache_hits', 0)}, spent "
        f"${run.get('spent_usd', 0.0):.4f}",
        file=sys.stderr,
    )
    if args.csv:
        df.to_csv(args.csv, index=False)
    if args.png:
        _plots(df, args.png)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m memorylab.evaluate.cli``: the ``compare`` command on its own."""
    parser = add_compare_arguments(
        argparse.ArgumentParser(prog="memorylab compare", description=__doc__.split("\n")[0])
    )
    args = parser.parse_args(argv)
    try:
        return run_compare(args)
    except MemorylabError as error:
        print(f"memorylab: {error}", file=sys.stderr)
        return 2 if isinstance(error, InvalidSetting) else 1


if __name__ == "__main__":
    raise SystemExit(main())
