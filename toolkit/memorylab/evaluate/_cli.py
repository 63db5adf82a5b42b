"""``memorylab compare``: compare summarizers from the command line (thin over the library).

Wired into ``memorylab`` as a sub-command with :func:`add_compare_arguments` and
:func:`run_compare`; also runnable on its own: ``python -m memorylab.evaluate._cli [...]``.

Sources are transcript files (``.jsonl``) or folders of them, benchmark files (``.json``: LoCoMo
or LongMemEval, recognised by their keys), and workspaces, agent folders or memory files (every
compaction in them becomes a case, scored with ``memorylab/existing`` when no ``-s`` is given).
With no source the bundled transcripts are used. Without ``-s`` the bounds (``memorylab/full``,
``memorylab/none``) and the offline baselines are compared. The wide table is printed as
markdown, with confidence intervals and its notes; ``--csv`` writes the long-form scores,
``--png`` the plots.

``--local-model PATH.gguf`` starts llama.cpp's server for that model file for the run (extra
``local``); the name ``local`` then means that model in ``-s``, ``--reader`` and ``--judge``
(without any of them, it is compared as a summarizer). The exit code is 1 when every summary of
a summarizer failed (its first error is printed); every other failure is one ``memorylab:`` line
and the exit code of the table in ``docs/cli.md`` (the same as ``memorylab compare``).

The terminal table holds the key columns (compression, latency, cost, each quality scorer's
headline metric; errors when there are any) so it fits a terminal; rates (facts kept, probes
answered, judge ratings) are percentages, as in ``--table fact-survival``. Every metric is in
the ``--csv`` file.

The plumbing it shares with ``memorylab`` (exit codes, one-line errors, checks of outputs and
model names) is :mod:`memorylab._console`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
import textwrap
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memorylab._console import (
    MAX_CONTEXT_TOKENS,
    HelpFormatter,
    NothingThere,
    OneLineParser,
    bounded_int,
    check_model_name,
    check_output,
    cost_limit,
    image_formats,
    run_handler,
)
from memorylab.errors import InvalidSetting

if TYPE_CHECKING:
    from memorylab.evaluate._cases import Case
    from memorylab.evaluate._engine import ComparisonResult
    from memorylab.evaluate._tables import SummaryTable

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
    parser.add_argument(
        "--reader", action="append", dest="readers", metavar="MODEL",
        help="a litellm model that answers the probes, scored as probe_qa[MODEL] beside the "
        "offline lexical baseline (repeatable)",
    )  # fmt: skip
    parser.add_argument("--grader", metavar="MODEL",
                        help="grade the readers' answers with this model too (metric llm)")
    parser.add_argument("--judge", metavar="MODEL", help="add the judge scorer with this model")
    parser.add_argument("--api-base", help="api_base for every model call (a local server)")
    parser.add_argument(
        "--local-model", type=Path, metavar="PATH.gguf",
        help="start llama.cpp's server for this GGUF file for the run; call it 'local' in -s, "
        "--reader, --judge (needs the 'local' extra)",
    )  # fmt: skip
    length = bounded_int(256, MAX_CONTEXT_TOKENS, "tokens")
    parser.add_argument("--context-length", type=length, default=4096,
                        help="the local model's context window in tokens")  # fmt: skip
    parser.add_argument(
        "--threads", type=bounded_int(1, 1024, "threads"), metavar="N",
        help="threads of the local model (llama.cpp's --n_threads and --n_threads_batch; "
        "default: llama.cpp's choice). On a busy machine fewer can be faster: on 2 shared "
        "cores one thread decoded 60 tokens/s where two decoded 24",
    )  # fmt: skip
    parser.add_argument("--max-tokens", type=bounded_int(1, MAX_CONTEXT_TOKENS, "tokens"),
                        help="summary budget for every summarizer")  # fmt: skip
    parser.add_argument(
        "--split", choices=("whole", "session", "window"), default="whole",
        help="how transcripts and benchmarks are cut into cases: whole (a LoCoMo conversation, "
        "a LongMemEval haystack), session (a LoCoMo session, LongMemEval's evidence sessions) "
        "or window",
    )  # fmt: skip
    parser.add_argument("--window", type=bounded_int(1, 1_000_000, "messages"), default=40,
                        help="messages per --split window")  # fmt: skip
    parser.add_argument(
        "--concurrency", type=bounded_int(1, 1024, "calls"),
        help="parallel calls (default: 8), or 1 with --local-model (default: its server answers "
        "one request at a time, and one memory's probes in a row share its prompt cache)",
    )  # fmt: skip
    parser.add_argument("--cache-dir", type=Path,
                        help="LLM call cache (default: $MEMORYLAB_CACHE_DIR, else the "
                        "workspace's .cache/llm)")  # fmt: skip
    parser.add_argument("--no-cache", action="store_true", help="do not cache model calls")
    parser.add_argument(
        "--max-cost", type=cost_limit, metavar="USD",
        help="estimate the cost first and refuse to start above this many USD (default: no "
        "limit)",
    )  # fmt: skip
    parser.add_argument(
        "--max-seconds", type=bounded_int(1, 10**7, "seconds"), metavar="S",
        help="refuse to start when the planned time is above this (needs every model's speed: "
        "the --local-model is measured by a short warm-up)",
    )  # fmt: skip
    parser.add_argument(
        "--table", choices=("summary", "fact-survival", "probes"), default="summary",
        help="what to print: the key columns of the summary, the per-category fact survival, "
        "or each reader's exact answers per question category, counted in probes",
    )  # fmt: skip
    parser.add_argument("--csv", type=Path,
                        help="write the long-form scores here (every metric; replaced if it "
                        "exists)")  # fmt: skip
    parser.add_argument("--png", type=Path,
                        help="write the plots here (one image, 3 panels; .png, .svg, .pdf ...; "
                        "replaced if it exists)")  # fmt: skip
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.set_defaults(handler=run_compare)
    return parser


def _is_transcripts(path: Path) -> bool:
    return path.suffix == ".jsonl" or (
        path.is_dir() and not (path / "agents").is_dir() and any(path.glob("*.jsonl"))
    )


def _benchmark(path: Path, split: str) -> list[Any]:
    from memorylab.evaluate._cases import cases_from_locomo, cases_from_longmemeval

    try:
        head = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise InvalidSetting(f"{path} is not a JSON file ({exc})") from None
    first = head[0] if isinstance(head, list) and head else head
    if isinstance(first, dict) and "conversation" in first:
        return cases_from_locomo(path, split="session" if split == "session" else "conversation")
    if isinstance(first, dict) and "haystack_sessions" in first:
        return cases_from_longmemeval(path, sessions="evidence" if split == "session" else "all")
    raise InvalidSetting(
        f"{path}: a .json source is a LoCoMo file (samples with 'conversation' and 'qa') or a "
        "LongMemEval file (instances with 'haystack_sessions')"
    )


def load_cases(sources: Sequence[Path], split: str = "whole", window: int = 40) -> list[Any]:
    """Cases from command-line sources (see the module docstring)."""
    from memorylab.evaluate._cases import cases_from_transcripts, cases_from_workspace

    if not sources:
        return cases_from_transcripts(None, split=split, window=window)  # type: ignore[arg-type]
    cases: list[Any] = []
    for source in sources:
        if source.suffix == ".json" and source.is_file():
            cases += _benchmark(source, split)
        elif _is_transcripts(source):
            cases += cases_from_transcripts(source, split=split, window=window)  # type: ignore[arg-type]
        else:
            cases += cases_from_workspace(source)
    if not cases:
        raise InvalidSetting(f"no cases found in {', '.join(map(str, sources))}")
    return cases


def _plots(result: ComparisonResult, path: Path) -> None:
    from matplotlib.figure import Figure

    from memorylab.analysis._plots import save_plot
    from memorylab.evaluate._plots import plot_cost_quality, plot_latency, plot_quality

    figure = Figure(figsize=(18, 5), layout="constrained")
    axes = figure.subplots(1, 3)
    scorers = set(result.frame["scorer"])
    if "fact_recall" in scorers:
        plot_quality(result, ax=axes[0])
        if "cost" in scorers:
            plot_cost_quality(result, ax=axes[1])
    if "latency" in scorers:
        plot_latency(result, ax=axes[2])
    save_plot(figure, path, dpi=110)


TERMINAL_WIDTH = 100
"""The width the terminal table of ``compare`` aims at (the key columns; the rest is in --csv)."""

_HEADLINE = {"fact_recall": "overall", "probe_qa": "exact", "judge": "overall"}
"""Each quality scorer's headline metric (a ``probe_qa[reader]`` scorer shows its ``llm``
grade when it has one); any other scorer shows its first metric."""

_RATE_SCORERS = ("fact_recall", "probe_qa", "judge")
"""Scorers whose values are shares (facts kept, probes answered, ratings scaled to [0, 1]):
shown as percentages, in both tables."""


def _scorer_of(column: str) -> str:
    return column.rsplit(".", 1)[0]


def _key_columns(columns: Sequence[str]) -> list[str]:
    """The columns the terminal shows: compression, latency, cost, one per quality scorer."""
    metrics = [
        c for c in columns if c not in ("cases", "errors") and not c.endswith((".lo", ".hi"))
    ]
    chosen: dict[str, str] = {}
    for column in metrics:
        scorer = _scorer_of(column)
        if scorer in ("compression", "latency", "cost"):
            wanted = {"compression": "ratio", "latency": "seconds", "cost": "usd"}[scorer]
            if column == f"{scorer}.{wanted}":
                chosen[scorer] = column
            continue
        family = scorer.split("[", 1)[0]
        preferred = [f"{scorer}.llm", f"{scorer}.{_HEADLINE.get(family, '')}"]
        best = next((c for c in preferred if c in metrics), None)
        chosen.setdefault(scorer, best or column)
    return list(chosen.values())


_DROPPED_WHY = {
    "no answer": "without an answer",
    "spans sessions": "whose evidence spans sessions (--split conversation keeps them)",
    "no evidence": "without evidence",
}


def _dropped_note(cases: Sequence[Case]) -> str:
    """The questions the benchmark's loader left out, by reason and category, in a sentence."""
    from memorylab.evaluate._cases import dropped_questions

    parts = [
        f"{sum(counts.values())} {_DROPPED_WHY.get(reason, reason)} ("
        + ", ".join(f"{category} {count}" for category, count in counts.items()) + ")"
        for reason, counts in dropped_questions(cases).items()
    ]
    return f"Questions left out of these cases: {'; '.join(parts)}." if parts else ""


def _terminal_table(marks: SummaryTable) -> str:
    """The key columns of :func:`~memorylab.evaluate.summary_table` as markdown for a
    terminal: compression as ``144×``, latency in seconds, cost in USD, rates as percentages
    with their intervals; errors only when there were some; the hidden columns named below."""
    from memorylab.evaluate._tables import markdown_table

    table = marks.frame
    keys = _key_columns(list(table.columns))
    shown = [c for c in keys if not table[c].isna().all()] or keys
    columns = [part for c in shown for part in (c, f"{c}.lo", f"{c}.hi") if part in table.columns]
    if "errors" in table.columns and table["errors"].fillna(0).astype(float).any():
        columns.append("errors")
    out = table[columns].copy()
    units: dict[str, tuple[str, Callable[[float], str]]] = {
        "compression.ratio": ("compression", lambda v: f"{v:,.3g}×"),
        "latency.seconds": ("latency", lambda v: f"{v:.3g} s"),
        "cost.usd": ("cost", lambda v: f"${v:,.4f}"),
    }
    renamed: dict[str, str] = {}
    for column, (header, show) in units.items():
        if column in out.columns:
            out[column] = [
                "–" if not isinstance(v, int | float) or math.isnan(v) else show(float(v))
                for v in out[column]
            ]
            renamed[column] = header
    out = out.rename(columns=renamed)
    rates = [c for c in out.columns if _scorer_of(str(c)).split("[", 1)[0] in _RATE_SCORERS]
    text = markdown_table(marks.reframed(out, renamed), percent=rates)
    hidden = [c for c in table.columns if c not in (*columns, "cases", "errors")
              and not str(c).endswith((".lo", ".hi"))]  # fmt: skip
    if hidden:
        more = f"More columns in --csv (long form): {', '.join(map(str, hidden))}."
        text += "\n\n" + "\n".join(textwrap.wrap(more, TERMINAL_WIDTH, break_on_hyphens=False))
    return text


LOCAL = "local"
"""The name of the ``--local-model`` model in ``-s``, ``--reader`` and ``--judge``."""


def _failed_summarizers(df: Any) -> list[tuple[str, str]]:
    """``(label, first error)`` of each summarizer whose every summary failed."""
    out = []
    for label, rows in df.groupby("summarizer", sort=False):
        summaries = rows[rows["scorer"] == "summarize"]
        cases = rows["case"].nunique()
        if len(summaries) and summaries["case"].nunique() == cases:
            out.append((str(label), str(summaries["error"].iloc[0])))
    return out


def _check_arguments(args: argparse.Namespace) -> None:
    """Everything that can be refused before any work: model names, outputs, sources."""
    for flag, names in (("-s", args.summarizers), ("--reader", args.readers),
                        ("--judge", [args.judge]), ("--grader", [args.grader])):  # fmt: skip
        for name in names or ():
            if name is not None and name != LOCAL:
                check_model_name(name, flag, summarizers=flag == "-s")
    if args.csv is not None:
        args.csv = check_output(args.csv, "--csv", formats=("csv",))
    if args.png is not None:
        args.png = check_output(args.png, "--png", formats=image_formats())
    for source in args.sources:
        if not source.exists():
            raise NothingThere(
                f"{source} does not exist; give transcripts (.jsonl or a folder of them), a "
                "benchmark .json, a workspace, an agent folder or a memory file"
            )


def run_compare(args: argparse.Namespace) -> int:
    """Run the comparison that ``args`` describe; print the table; write CSV/PNG."""
    _check_arguments(args)
    with contextlib.ExitStack() as stack:
        local_base = None
        if args.local_model is not None:
            from memorylab.llm import local_server

            threads = [] if args.threads is None else [
                "--n_threads", str(args.threads), "--n_threads_batch", str(args.threads)]
            local_base = stack.enter_context(local_server(
                args.local_model, context_length=args.context_length, server_args=threads))
        # Calls that an interrupt cuts short inside litellm are never awaited: not the user's
        # business (the library's own tests turn such warnings into errors).
        warnings.filterwarnings("ignore", "coroutine .* was never awaited", RuntimeWarning)
        try:
            return _run(args, local_base)
        except KeyboardInterrupt:
            # One line and what was kept; run_handler's exit code. (Every finished call is
            # in the cache as soon as it ends.)
            where = ("nothing was kept (--no-cache)" if args.no_cache else
                     f"every call that finished is cached in {_cache_dir(args)}: the same "
                     "command goes on from there")  # fmt: skip
            print(f"memorylab: interrupted; {where}", file=sys.stderr)
            return 130
    raise AssertionError("unreachable")


def _cache_dir(args: argparse.Namespace) -> Path:
    from memorylab.memory._holders import default_cache_dir

    return Path(args.cache_dir) if args.cache_dir else default_cache_dir()


def _run(args: argparse.Namespace, local_base: str | None) -> int:
    from memorylab.compress._baselines import BOUNDS
    from memorylab.compress._litellm_summarizer import LiteLLMSummarizer
    from memorylab.evaluate._compare import BASELINES, DEFAULT_SCORERS, compare_summarizers
    from memorylab.evaluate._engine import EXISTING
    from memorylab.evaluate._scorers import get_scorer
    from memorylab.evaluate._tables import fact_survival_table, markdown_table, summary_table

    cases = load_cases(args.sources, args.split, args.window)
    llm_args = {"api_base": args.api_base} if args.api_base else {}
    local_args = {"api_base": local_base} if local_base else {}
    if local_base is None and LOCAL in [*(args.summarizers or ()), *(args.readers or ()),
                                        args.judge, args.grader]:  # fmt: skip
        raise InvalidSetting("the model 'local' needs --local-model PATH.gguf")

    def model(name: str) -> tuple[str, dict[str, Any]]:
        return ("openai/local", local_args) if name == LOCAL else (name, llm_args)

    named = [*(args.summarizers or ())]
    if local_base and not (named or args.readers or args.judge or args.grader):
        named = [*BOUNDS, *BASELINES, LOCAL]
    if not named:
        named = [EXISTING] if all(c.summary for c in cases) else [*BOUNDS, *BASELINES]
    summarizers: dict[str, Any] = {name: name for name in named}
    if LOCAL in summarizers:
        summarizers[LOCAL] = LiteLLMSummarizer(
            "openai/local", llm_args=local_args, context_length=args.context_length
        )
    grader = model(args.grader) if args.grader else None
    scorers: list[Any] = [name for name in args.scorers or DEFAULT_SCORERS if name != "judge"]
    if "probe_qa" in (args.scorers or DEFAULT_SCORERS):
        for reader in args.readers or ():
            reader_model, reader_args = model(reader)
            scorers.append(get_scorer(
                "probe_qa", name=f"probe_qa[{reader}]", reader=reader_model, llm_args=reader_args,
                grader=grader[0] if grader else None, grader_args=grader[1] if grader else None,
            ))  # fmt: skip
    if args.judge or "judge" in (args.scorers or ()):
        judge_model, judge_args = model(args.judge) if args.judge else (None, {})
        scorers.append(get_scorer("judge", model=judge_model, llm_args=judge_args))
    cache_dir: Any = False if args.no_cache else (args.cache_dir or True)
    speeds = {}
    if local_base:  # a short warm-up: the plan's time (and the first load of the model)
        from memorylab.llm import measure_speed

        speeds["openai/local"] = measure_speed("openai/local", api_base=local_base)
    result = compare_summarizers(
        cases,
        summarizers,
        scorers,
        concurrency=args.concurrency or (1 if local_base else 8),
        cache_dir=cache_dir,
        max_cost_usd=args.max_cost,
        max_seconds=args.max_seconds,
        speeds=speeds,
        progress=not args.no_progress,
        max_tokens=args.max_tokens,
        summarizer_args={"llm_args": llm_args} if llm_args else None,
    )
    df = result.frame
    if args.table == "fact-survival":
        table = fact_survival_table(result, ci=True)
        shares = [c for c in table.frame.columns if c != "facts"]
        print(markdown_table(table, percent=shares))
    elif args.table == "probes":
        from memorylab.evaluate._tables import probe_table

        readers = dict.fromkeys(result.answers["scorer"]) if len(result.answers) else {}
        if not readers:
            raise InvalidSetting("--table probes needs a reader's answers: --scorer probe_qa "
                                 "(and --reader MODEL)")  # fmt: skip
        for number, reader in enumerate(readers):
            table = probe_table(result, f"{reader}.exact")
            print(("\n" if number else "") + f"{reader}.exact, per question category:")
            print(markdown_table(table, percent=list(table.frame.columns)))
    else:
        print(_terminal_table(summary_table(result)))
    dropped = _dropped_note(cases)
    if dropped:
        print(f"\n{dropped}")
    run = result.run
    print(
        f"\n{len(cases)} cases x {len(set(df['summarizer']))} summarizers; model requests "
        f"{run.get('requests', 0)}, cache hits {run.get('cache_hits', 0)}, spent "
        f"${run.get('spent_usd', 0.0):.4f}",
        file=sys.stderr,
    )
    if args.csv:
        from memorylab.memory._fsutil import write_private_file

        write_private_file(args.csv, df.to_csv(index=False).encode("utf-8"))
    if args.png:
        _plots(result, args.png)
    failed = _failed_summarizers(df)
    for label, error in failed:
        print(f"memorylab: every summary of {label} failed; the first error: {error}",
              file=sys.stderr)  # fmt: skip
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m memorylab.evaluate._cli``: the ``compare`` command on its own."""
    parser = add_compare_arguments(
        OneLineParser(
            prog="memorylab compare",
            description=__doc__.split("\n")[0],
            formatter_class=HelpFormatter,
        )
    )
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # --help (0) or a usage error (2), already printed
        return stop.code if isinstance(stop.code, int) else 2
    return run_handler(run_compare, args)


if __name__ == "__main__":
    raise SystemExit(main())
