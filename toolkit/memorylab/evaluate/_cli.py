"""``memorylab compare``: summarizers or memory strategies compared, with recall as a condition.

Wired into ``memorylab`` as a sub-command with :func:`add_compare_arguments` and
:func:`run_compare`; also runnable on its own: ``python -m memorylab.evaluate._cli [...]``.

Sources are transcript files (``.jsonl``) or folders of them, benchmark files (``.json``: LoCoMo
or LongMemEval, recognised by their keys), and workspaces, agent folders or memory files (every
compaction in them becomes a case, scored with ``memorylab/existing`` when no ``-s`` is given).
With no source the bundled transcripts are used. Without ``-s`` the bounds (``memorylab/full``,
``memorylab/none``) and the offline baselines are compared. The wide table is printed as
markdown, with confidence intervals and its notes; ``--csv`` writes the long-form scores,
``--png`` the plots.

``--strategy SPEC`` (repeatable: a registered name, ``NAME:key=value,...`` with its settings,
or a preset's label of :data:`~memorylab.evaluate.PEER_STRATEGIES` /
:data:`~memorylab.evaluate.MEMORYLAB_STRATEGIES`) compares strategies instead
(:func:`~memorylab.evaluate.compare_strategies`, the bounds beside; ``--memory-window`` and
``--threshold`` their window; ``-s`` the one summarizer of their summaries) and prints their
table. ``--recall K`` (repeatable) adds each memory with K recalled messages as a condition,
``--probes N --seed S`` samples the cases to a probe budget, ``--api-base`` repeated spreads a
model over several servers, ``--dask ADDRESS|local`` the jobs over a Dask cluster. Under every
table the paired differences worth reading; before the first call, the plan (stderr).

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
import gc
import inspect
import json
import logging
import math
import signal
import sys
import textwrap
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor
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
    threshold_value,
)
from memorylab.errors import InvalidSetting, PrerequisiteError

if TYPE_CHECKING:
    from memorylab.compress import Strategy, Summarizer
    from memorylab.evaluate._cases import Case
    from memorylab.evaluate._engine import ComparisonResult
    from memorylab.evaluate._peers import StrategyPreset
    from memorylab.evaluate._strategies import StrategyComparison
    from memorylab.evaluate._tables import SummaryTable

STRATEGY_WINDOW = 8192
"""The window ``--strategy`` runs compact in when ``--memory-window`` is not given."""


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
        "offline lexical baseline ('.' in MODEL written '_'; repeatable)",
    )  # fmt: skip
    parser.add_argument("--grader", metavar="MODEL",
                        help="grade the readers' answers with this model too (metric llm)")
    parser.add_argument("--judge", metavar="MODEL", help="add the judge scorer with this model")
    parser.add_argument(
        "--api-base", action="append", metavar="URL",
        help="the OpenAI-compatible server of every model call (a local server); repeatable: "
        "several servers of one model share its requests, each memory's on one server",
    )  # fmt: skip
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
        "--strategy", action="append", dest="strategies", metavar="SPEC",
        help="compare memory strategies instead of summarizers (repeatable): a registered name "
        "(summary, keep_recent, trim ...), NAME:key=value,... with its settings "
        "(keep_recent:keep_messages=20), or a preset's label ('Letta: keep 30 %%'); each case's "
        "whole history runs through it in --memory-window, with the bounds beside; -s then "
        "names the summaries' summarizer (default memorylab/extractive)",
    )  # fmt: skip
    parser.add_argument(
        "--memory-window", "--context-length-window", type=length, metavar="TOKENS",
        help=f"the window the --strategy runs compact in (default: {STRATEGY_WINDOW:,})",
    )  # fmt: skip
    parser.add_argument(
        "--threshold", metavar="T",
        help="when a --strategy run compacts: a fraction of --memory-window (0.9) or tokens "
        "(6000) (default: 0.9, as the Agent)",
    )  # fmt: skip
    parser.add_argument(
        "--recall", action="append", type=bounded_int(1, 10_000, "messages"), metavar="K",
        help="also compare every memory with the K messages recalled for each question "
        "(labelled '<memory> + recall K'; repeatable)",
    )  # fmt: skip
    parser.add_argument(
        "--probes", type=bounded_int(1, 10**9, "probes"), metavar="N",
        help="draw cases in a seeded order until they hold N probes (the rest are not run)",
    )  # fmt: skip
    parser.add_argument("--seed", type=bounded_int(0, 2**32 - 1, "a seed"), metavar="S",
                        help="the order --probes draws cases in (default: 0)")  # fmt: skip
    parser.add_argument(
        "--split", choices=("whole", "conversation", "session", "window"), default="whole",
        help="how transcripts and benchmarks are cut into cases: whole, or its other name "
        "conversation (a LoCoMo conversation, a LongMemEval haystack, a whole transcript), "
        "session (a LoCoMo session, LongMemEval's evidence sessions) or window",
    )  # fmt: skip
    parser.add_argument("--window", type=bounded_int(1, 1_000_000, "messages"), default=40,
                        help="messages per --split window")  # fmt: skip
    parser.add_argument(
        "--concurrency", type=bounded_int(1, 1024, "calls"),
        help="parallel calls (default: 8), or 1 with --local-model (default: its server answers "
        "one request at a time, and one memory's probes in a row share its prompt cache)",
    )  # fmt: skip
    parser.add_argument(
        "--dask", metavar="ADDRESS",
        help="run the (case, summarizer) jobs on a Dask cluster: a scheduler's address "
        "(tcp://host:8786), or 'local' for a cluster on this machine (the 'dask' extra; not "
        "with --strategy)",
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
    """Transcripts with planted facts: a file the loaders read as one (``reads_as_transcript``),
    or a folder of them."""
    from memorylab.analysis._loaders import reads_as_transcript

    if path.is_dir():
        files = [] if (path / "agents").is_dir() else sorted(path.glob("*.jsonl"))
        return bool(files) and reads_as_transcript(files[0])
    return reads_as_transcript(path)


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
    """Cases from command-line sources (see the module docstring); ``split`` ``conversation``
    is ``whole``."""
    from memorylab.evaluate._cases import cases_from_transcripts, cases_from_workspace

    split = "whole" if split == "conversation" else split
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
    shown_marks = marks.reframed(out, renamed)
    text = markdown_table(shown_marks, percent=rates, differences=True)
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


def _failed_readers(answers: Any) -> list[tuple[str, str]]:
    """``(reader, first error)`` of each reader whose every probe's call failed (a server
    that is not there: its column would be empty and the run look fine)."""
    if "error" not in answers.columns:
        return []
    return [(str(scorer), str(rows["error"].iloc[0]))
            for scorer, rows in answers.groupby("scorer", sort=False)
            if rows["error"].notna().all()]  # fmt: skip


def _setting(text: str) -> bool | int | float | str:
    """A strategy setting's value as written: true/false, a whole number, a number, or text."""
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for kind in (int, float):
        with contextlib.suppress(ValueError):
            return kind(text)
    return text


def strategy_specs(specs: Sequence[str]) -> dict[str, Any]:
    """``{label: strategy or preset}`` from ``--strategy`` values: a preset's label
    (:data:`~memorylab.evaluate.PEER_STRATEGIES`, :data:`~memorylab.evaluate.MEMORYLAB_STRATEGIES`),
    a registered name, or ``NAME:key=value,...`` (values parsed as true/false, numbers, text)."""
    from memorylab.compress import get_strategy
    from memorylab.evaluate._peers import MEMORYLAB_STRATEGIES, PEER_STRATEGIES

    presets = {**PEER_STRATEGIES, **MEMORYLAB_STRATEGIES}
    chosen: dict[str, Any] = {}
    for spec in specs:
        strategy: Strategy | StrategyPreset
        if spec in presets:
            label, strategy = spec, presets[spec]
        else:
            name, _, written = spec.partition(":")
            pairs = [part.partition("=") for part in written.split(",")] if written else []
            bad = [key for key, sign, _ in pairs if not sign or not key.strip()]
            if bad:
                raise InvalidSetting(
                    f"--strategy {spec!r}: settings are key=value, comma-separated (e.g. "
                    "keep_recent:keep_messages=20,keep_tokens=2000)"
                )
            settings = {key.strip(): _setting(value.strip()) for key, _, value in pairs}
            try:
                strategy = get_strategy(name.strip(), **settings)
            except (InvalidSetting, TypeError) as error:
                known = "" if name.strip() and "unknown strategy" not in str(error) else (
                    "; or a preset: " + ", ".join(repr(label) for label in presets))  # fmt: skip
                raise InvalidSetting(f"--strategy {spec!r}: {error}{known}") from None
            label = strategy.describe()
        if label in chosen:
            raise InvalidSetting(f"--strategy {spec!r} is given twice (as {label!r}); give "
                                 "each strategy once")  # fmt: skip
        chosen[label] = strategy
    return chosen


def _check_strategy_arguments(args: argparse.Namespace) -> None:
    """``--strategy`` and the options that go with it, or refuse them without it."""
    if not args.strategies:
        for flag, given in (("--memory-window", args.memory_window),
                            ("--threshold", args.threshold)):  # fmt: skip
            if given is not None:
                raise InvalidSetting(f"{flag} sets the window of the --strategy runs: give "
                                     "--strategy too")  # fmt: skip
        return
    args.strategies = strategy_specs(args.strategies)
    if args.threshold is not None:
        from memorylab.compress import trigger_tokens

        args.threshold = threshold_value(args.threshold)
        window = args.memory_window or STRATEGY_WINDOW
        try:
            trigger_tokens(window, args.threshold)
        except InvalidSetting as error:
            raise InvalidSetting(
                f"--threshold {args.threshold} with --memory-window {window}: {error}"
            ) from None
    if args.dask:
        raise InvalidSetting(
            "--strategy runs the strategies in this process (each run's figures are read from "
            "it): leave --dask out, or compare summarizers on the cluster"
        )
    if len(args.summarizers or []) > 1:
        raise InvalidSetting(
            "with --strategy, -s names the one summarizer of the strategies' summaries: a "
            "memorylab summarizer (memorylab/extractive ...), a model (at --api-base's server) "
            "or 'local' (--local-model); give it once"
        )


def _check_arguments(args: argparse.Namespace) -> None:
    """Everything that can be refused before any work: model names, outputs, sources."""
    if args.local_model is None and LOCAL in [*(args.summarizers or ()), *(args.readers or ()),
                                              args.judge, args.grader]:  # fmt: skip
        raise InvalidSetting("the model 'local' needs --local-model PATH.gguf")
    _check_strategy_arguments(args)
    if args.seed is not None and args.probes is None:
        raise InvalidSetting("--seed orders the cases --probes draws: give --probes N too")
    for flag, names in (("-s", args.summarizers), ("--reader", args.readers),
                        ("--judge", [args.judge]), ("--grader", [args.grader])):  # fmt: skip
        for name in names or ():
            if name is not None and name != LOCAL:
                check_model_name(name, flag, summarizers=flag == "-s")
    for url in args.api_base or ():
        if not url.startswith(("http://", "https://")) or url.rstrip("/").endswith("://"):
            raise InvalidSetting(
                f"--api-base {url!r} is not a server's address: give its URL, such as "
                "http://127.0.0.1:8080/v1"
            )
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
        executor = _dask_executor(args.dask, stack) if args.dask else None
        # Calls that an interrupt cuts short inside litellm are never awaited: not the user's
        # business (the library's own tests turn such warnings into errors).
        warnings.filterwarnings("ignore", "coroutine .* was never awaited", RuntimeWarning)
        stack.enter_context(_interrupt_where_the_main_thread_is())
        try:
            return _run(args, local_base, executor)
        except KeyboardInterrupt:
            # One line and what was kept; run_handler's exit code. (Every finished call is
            # in the cache as soon as it ends.)
            where = ("nothing was kept (--no-cache)" if args.no_cache else
                     f"every call that finished is cached in {_cache_dir(args)}: the same "
                     "command goes on from there")  # fmt: skip
            print(f"memorylab: interrupted; {where}", file=sys.stderr)
            return 130
    raise AssertionError("unreachable")


@contextlib.contextmanager
def _interrupt_where_the_main_thread_is() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt in the main thread at once, for the run's duration.
    ``asyncio.run`` would turn the first one into a cancellation of its main task, and a
    cancellation that a library on the way swallows (measured under load: the run went on to
    its end and exited 0) is an interrupt lost; a handler other than Python's default keeps
    asyncio from installing its own. Once interrupted, what the abandoned run's teardown says
    of its own tasks is not printed (the run says one line): asyncio's notices of tasks left
    pending or holding the interrupt, and the errors of coroutines the collector closes outside
    their tasks (measured under load, each a few lines after the run's one). Nothing changes
    off the main thread (a notebook's worker)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    interrupted = False

    def interrupt(signum: int, frame: object) -> None:
        nonlocal interrupted
        interrupted = True
        raise KeyboardInterrupt

    def not_about_abandoned_tasks(record: logging.LogRecord) -> bool:
        return not (interrupted and record.getMessage().startswith(_TASK_NOTICES))

    previous_unraisable = sys.unraisablehook

    def unraisable(event: Any) -> None:
        if not (interrupted and inspect.iscoroutine(event.object)):
            previous_unraisable(event)

    asyncio_log = logging.getLogger("asyncio")
    previous = signal.signal(signal.SIGINT, interrupt)
    asyncio_log.addFilter(not_about_abandoned_tasks)
    sys.unraisablehook = unraisable
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if interrupted:
            gc.collect()  # the abandoned tasks go now, while what they would say is held back
        sys.unraisablehook = previous_unraisable
        asyncio_log.removeFilter(not_about_abandoned_tasks)


# What asyncio logs of a task nobody waits for any more (base_events / tasks in Python 3.11).
_TASK_NOTICES = ("Task was destroyed but it is pending!", "Task exception was never retrieved")


def _dask_executor(address: str, stack: contextlib.ExitStack) -> Executor:
    """The executor of a Dask client of ``address`` (``local``: a cluster on this machine),
    closed with ``stack``."""
    try:
        import distributed as untyped
    except ImportError:
        raise PrerequisiteError(
            "--dask needs Dask's distributed package: pip install 'memorylab[dask]'"
        ) from None
    try:
        distributed: Any = untyped  # an untyped package
        cluster: Any = address
        if address == LOCAL:
            cluster = stack.enter_context(distributed.LocalCluster(dashboard_address="127.0.0.1:0"))
        client = stack.enter_context(distributed.Client(cluster))
    except (OSError, ValueError) as error:
        raise NothingThere(
            f"--dask {address}: no Dask scheduler answers there ({error}); give a scheduler's "
            "address (tcp://host:8786) or 'local'"
        ) from None
    executor: Executor = client.get_executor()
    return executor


def _cache_dir(args: argparse.Namespace) -> Path:
    from memorylab.memory._holders import default_cache_dir

    return Path(args.cache_dir) if args.cache_dir else default_cache_dir()


ModelOf = Callable[[str], tuple[str, dict[str, Any]]]
"""How a model named on the command line is called: ``(litellm model, llm_args)``."""


def _models(args: argparse.Namespace, local_base: str | None) -> ModelOf:
    """How a model named on the command line is called: ``(litellm model, llm_args)``; ``local``
    is the ``--local-model``, every other model goes to ``--api-base`` (a list: several
    servers)."""
    servers = args.api_base or []
    llm_args = {"api_base": servers[0] if len(servers) == 1 else list(servers)} if servers else {}
    local_args = {"api_base": local_base} if local_base else {}

    def model(name: str) -> tuple[str, dict[str, Any]]:
        return ("openai/local", local_args) if name == LOCAL else (name, llm_args)

    return model


def _scorers(args: argparse.Namespace, model: ModelOf) -> list[Any]:
    """The scorers ``--scorer``, ``--reader``, ``--grader`` and ``--judge`` name."""
    from memorylab.evaluate._compare import DEFAULT_SCORERS
    from memorylab.evaluate._scorers import get_scorer

    grader = model(args.grader) if args.grader else None
    scorers: list[Any] = [name for name in args.scorers or DEFAULT_SCORERS if name != "judge"]
    if "probe_qa" in (args.scorers or DEFAULT_SCORERS):
        for reader in args.readers or ():
            reader_model, reader_args = model(reader)
            # no '.' in a scorer's name (columns are <scorer>.<metric>): qwen2.5 -> qwen2_5
            name = f"probe_qa[{reader.replace('.', '_')}]"
            scorers.append(get_scorer(
                "probe_qa", name=name, reader=reader_model, llm_args=reader_args,
                grader=grader[0] if grader else None, grader_args=grader[1] if grader else None,
            ))  # fmt: skip
    if args.judge or "judge" in (args.scorers or ()):
        judge_model, judge_args = model(args.judge) if args.judge else (None, {})
        scorers.append(get_scorer("judge", model=judge_model, llm_args=judge_args))
    return scorers


def _summarizers(args: argparse.Namespace, cases: Sequence[Case], model: ModelOf
                 ) -> dict[str, Any]:  # fmt: skip
    """``{label: summarizer}`` of ``-s`` (default: the bounds and the offline baselines, the
    existing summaries of workspace cases, or with ``--local-model`` alone that model too)."""
    from memorylab.compress._baselines import BOUNDS
    from memorylab.compress._litellm_summarizer import LiteLLMSummarizer
    from memorylab.evaluate._compare import BASELINES
    from memorylab.evaluate._engine import EXISTING

    named = [*(args.summarizers or ())]
    if args.local_model and not (named or args.readers or args.judge or args.grader):
        named = [*BOUNDS, *BASELINES, LOCAL]
    if not named:
        named = [EXISTING] if all(c.summary for c in cases) else [*BOUNDS, *BASELINES]
    summarizers: dict[str, Any] = {name: name for name in named}
    if LOCAL in summarizers:
        local_model, local_args = model(LOCAL)
        summarizers[LOCAL] = LiteLLMSummarizer(
            local_model, llm_args=local_args, context_length=args.context_length
        )
    return summarizers


def _strategy_summarizer(args: argparse.Namespace, cases: Sequence[Case], model: ModelOf
                         ) -> Summarizer | None:  # fmt: skip
    """The summarizer of the ``--strategy`` runs' summaries: ``-s``'s one, built as the
    summarizers compared are (``local`` the ``--local-model``, a model at ``--api-base``);
    ``None`` without ``-s`` (the offline extractive one)."""
    from memorylab.evaluate._compare import resolve_summarizers

    if not args.summarizers:
        return None
    llm_args = model("")[1]
    named = _summarizers(args, cases, model)
    resolved = resolve_summarizers(named, {"llm_args": llm_args} if llm_args else None)
    (summarizer,) = resolved.values()
    return summarizer


def _run(args: argparse.Namespace, local_base: str | None, executor: Executor | None) -> int:
    from memorylab.evaluate._compare import compare_summarizers
    from memorylab.evaluate._strategies import compare_strategies

    cases = load_cases(args.sources, args.split, args.window)
    if args.probes is not None:
        from memorylab.evaluate._cases import sample_cases

        cases = sample_cases(cases, args.probes, seed=args.seed or 0)
    model = _models(args, local_base)
    scorers = _scorers(args, model)
    speeds = {}
    if local_base:  # a short warm-up: the plan's time (and the first load of the model)
        from memorylab.llm import measure_speed

        speeds["openai/local"] = measure_speed("openai/local", api_base=local_base)
    options: dict[str, Any] = {
        "concurrency": args.concurrency or (1 if local_base else 8),
        "cache_dir": False if args.no_cache else (args.cache_dir or True),
        "max_cost_usd": args.max_cost,
        "max_seconds": args.max_seconds,
        "speeds": speeds,
        "progress": not args.no_progress,
        "show_plan": True,  # before the first call, with or without the bar
        "max_tokens": args.max_tokens,
    }
    if args.recall:
        options["recall"] = (0, *dict.fromkeys(args.recall))
    strategies = None
    if args.strategies:
        threshold = {} if args.threshold is None else {"threshold": args.threshold}
        with _failures_counted():
            strategies = compare_strategies(
                cases, args.strategies, scorers,
                context_length=args.memory_window or STRATEGY_WINDOW,
                summarizer=_strategy_summarizer(args, cases, model), **threshold, **options,
            )  # fmt: skip
        result = strategies.comparison
    else:
        llm_args = model("")[1]
        result = compare_summarizers(
            cases, _summarizers(args, cases, model), scorers, executor=executor,
            summarizer_args={"llm_args": llm_args} if llm_args else None, **options,
        )  # fmt: skip
    _print_tables(args, result, strategies)
    dropped = _dropped_note(cases)
    if dropped:
        print(f"\n{dropped}")
    df, run = result.frame, result.run
    compared = "strategies" if strategies is not None else "summarizers"
    print(
        f"\n{len(cases)} cases x {len(set(df['summarizer']))} {compared}; model requests "
        f"{run.get('requests', 0)}, cache hits {run.get('cache_hits', 0)}, spent "
        f"${run.get('spent_usd', 0.0):.4f}",
        file=sys.stderr,
    )
    if args.csv:
        from memorylab.memory._fsutil import write_private_file

        write_private_file(args.csv, df.to_csv(index=False).encode("utf-8"))
    if args.png:
        _plots(result, args.png)
    if strategies is not None:
        _failed_compactions_note(strategies)
    failed = _failed_summarizers(df)
    for label, error in failed:
        print(f"memorylab: every summary of {label} failed; the first error: {error}",
              file=sys.stderr)  # fmt: skip
    unanswered = _failed_readers(result.answers)
    for reader, error in unanswered:
        print(f"memorylab: every probe of {reader} failed; the first error: {error}",
              file=sys.stderr)  # fmt: skip
    return 1 if failed or unanswered else 0


@contextlib.contextmanager
def _failures_counted() -> Iterator[None]:
    """The compressor's "compression failed" warnings of the strategies' runs are not printed
    one by one (a strategy that cannot compact a window says so at every attempt): the runs
    record them (``runs.failed_compactions``) and :func:`_failed_compactions_note` sums them."""
    import logging

    def printed(record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("memorylab: compression failed")

    logger = logging.getLogger("memorylab")
    logger.addFilter(printed)
    try:
        yield
    finally:
        logger.removeFilter(printed)


def _failed_compactions_note(strategies: StrategyComparison) -> None:
    """One line for the compactions the strategies' runs attempted and could not make."""
    failed = strategies.runs.groupby("strategy", sort=False)["failed_compactions"].sum()
    failed = failed[failed > 0]
    if len(failed):
        each = ", ".join(f"{label} {int(count)}" for label, count in failed.items())
        print(f"memorylab: compactions that failed in the strategies' runs, the memory left "
              f"unchanged each time (runs.failed_compactions): {each}", file=sys.stderr)


def _readers(result: ComparisonResult) -> list[str]:
    """The probe scorers that answered, in order (the lexical baseline first)."""
    return list(dict.fromkeys(result.answers["scorer"])) if len(result.answers) else []


def _print_tables(args: argparse.Namespace, result: ComparisonResult,
                  strategies: StrategyComparison | None) -> None:  # fmt: skip
    """The ``--table`` asked for: the summary's key columns (the strategies' table with
    ``--strategy``), the facts' survival per category, or each reader's probes per
    category."""
    from memorylab.evaluate._tables import fact_survival_table, markdown_table, summary_table

    if args.table == "fact-survival":
        table = fact_survival_table(result, ci=True)
        shares = [c for c in table.frame.columns if c != "facts"]
        print(markdown_table(table, percent=shares, differences=True))
    elif args.table == "probes":
        from memorylab.evaluate._tables import probe_table

        readers = _readers(result)
        if not readers:
            raise InvalidSetting("--table probes needs a reader's answers: --scorer probe_qa "
                                 "(and --reader MODEL)")  # fmt: skip
        for number, reader in enumerate(readers):
            table = probe_table(result, f"{reader}.exact")
            print(("\n" if number else "") + f"{reader}.exact, per question category:")
            print(markdown_table(table, percent=list(table.frame.columns), differences=True))
    elif strategies is not None:
        print(_strategies_table(strategies, _readers(result)))
    else:
        print(_terminal_table(summary_table(result)))


def _strategies_table(compared: StrategyComparison, readers: Sequence[str]) -> str:
    """:meth:`StrategyComparison.table` as markdown: the probes each reader answered (exact,
    with intervals), then the facts' survival and what the runs cost (columns with no value,
    the costs without a priced model, left out); its notes; its paired differences."""
    import pandas as pd

    from memorylab.evaluate._strategies import TABLE_COLUMNS
    from memorylab.evaluate._tables import SummaryTable, markdown_table

    probes = TABLE_COLUMNS[0]
    ends = ("", ".lo", ".hi")
    table = compared.table()
    parts, differences = {}, []
    for number, reader in enumerate(readers or ["probe_qa"]):
        metric = f"{reader}.exact"
        answered = table if metric == "probe_qa.exact" else compared.table(metric)
        parts.update({f"{metric}{end}": answered[f"{probes}{end}"] for end in ends})
        pairs = compared.differences(metric)
        pairs = pairs if number == 0 else pairs[pairs["column"] == probes]  # facts: once
        differences.append(pairs.replace({"column": {probes: metric}}))
    rest = table.drop(columns=[f"{probes}{end}" for end in ends])
    rest = rest.loc[:, rest.notna().any()]
    out = rest.assign(**parts)[[*parts, *rest.columns]]
    bounds = {kind: label for label, kind in compared.comparison.bounds.items()}
    marks = SummaryTable(out, bounds, {}, {}, {},
                         differences=pd.concat(differences, ignore_index=True))  # fmt: skip
    shares = [c for c in out.columns if str(c).endswith(".exact") or str(c).startswith("facts")]
    return markdown_table(marks, percent=shares, differences=True)


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
