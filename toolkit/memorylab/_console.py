"""What every ``memorylab`` command shares: one rule for exit codes and messages.

Every failure is one line on stderr, starting ``memorylab:``, that names the flag to change
(:func:`cli_message`), and an exit code (:func:`exit_code`, the table in ``docs/cli.md``): 2 the
command line is wrong, 3 a file does not parse, 4 the filesystem refused, 5 what was named is not
there, 1 anything else; 141 when the reader of stdout went away (``| head``), quietly
(:func:`run_handler`). Outputs, numbers and model names are checked before any work starts
(:func:`check_output`, :func:`bounded_int`, :func:`cost_limit`, :func:`check_model_name`).

Used by :mod:`memorylab.cli` and :mod:`memorylab.evaluate._cli`; it imports neither (it sits on
the floor below both).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import re
import sys
import unicodedata
import warnings
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

from memorylab.errors import (
    AgentNotFound,
    InvalidAgentName,
    InvalidSetting,
    MemoryFormatError,
    MemorylabError,
    StoreError,
)
from memorylab.llm import bundled_model_map, bundled_providers


class NothingThere(MemorylabError, FileNotFoundError):
    """A path the command was told to read, or to write into, does not exist (exit code 5)."""


def column(text: str, width: int) -> str:
    """``text`` left-aligned in ``width`` terminal cells: a wide character (CJK, most emoji)
    takes two, a combining mark none, so the columns after it stay in line (``str.ljust``
    counts characters). A longer text is kept whole."""
    return text + " " * max(0, width - cells(text))


def cells(text: str) -> int:
    """How many terminal cells ``text`` takes (:func:`column`'s count)."""
    return sum(
        0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1
        for ch in text
    )


WIDEST_CELL = 60
"""The most terminal cells a text cell of :func:`aligned_table` takes; a longer one is cut
with ``…`` (the whole value is in the command's CSV or JSON)."""


def _cut(text: str, width: int) -> str:
    """``text`` within ``width`` terminal cells, ending ``…`` where it was cut."""
    if cells(text) <= width:
        return text
    kept = ""
    for ch in text:
        if cells(kept + ch) > width - 1:
            break
        kept += ch
    return kept + "…"


def aligned_table(rows: Sequence[Sequence[str]], headings: Sequence[str],
                  right: Collection[str] = ()) -> list[str]:  # fmt: skip
    """``rows`` under ``headings`` as lines of text, each column as wide as its widest cell
    (terminal cells: :func:`cells`; a cell past :data:`WIDEST_CELL` cut), two spaces apart; the
    columns ``right`` names (numbers) right-aligned, the others left-aligned."""
    rows = [[_cut(value, WIDEST_CELL) for value in row] for row in rows]
    widths = [max([cells(h), *(cells(row[i]) for row in rows)]) for i, h in enumerate(headings)]

    def line(values: Sequence[str]) -> str:
        fields = [
            " " * (width - cells(value)) + value if heading in right else column(value, width)
            for value, width, heading in zip(values, widths, headings, strict=True)
        ]
        return "  ".join(fields).rstrip()

    return [line(headings), *(line(row) for row in rows)]


def exit_code(error: MemorylabError) -> int:
    """The code of docs/cli.md's table: 2 the command line is wrong, 3 a file does not parse,
    4 the filesystem refused, 5 what was named is not there, 1 anything else."""
    if isinstance(error, InvalidAgentName | InvalidSetting):
        return 2
    if isinstance(error, AgentNotFound | NothingThere):
        return 5
    if isinstance(error, MemoryFormatError):
        return 3
    if isinstance(error, StoreError):
        return 4
    return 1


# The library's messages name Python arguments; a command-line user needs the flag instead.
_FLAG_FOR_ARGUMENT: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), flag)
    for pattern, flag in (
        (r"\(--overwrite, overwrite=True\)", "(--overwrite)"),
        (r"\bpass overwrite=True\b", "pass --overwrite"),
        (r"\boverwrite=True\b", "--overwrite"),
        (r"\b[Uu]se strict=False\b", "use --lenient"),
        (r"\bstrict=False\b", "--lenient"),
        (r"\b[Uu]se on_bad='warn'", "use --lenient"),  # memory_df(on_bad="error")'s advice
        (r"\bmax_cost_usd=(?=\S)", "--max-cost "),
        (r"\bmax_cost_usd\b", "--max-cost"),
        # a command measures no speed but the --local-model's (compare_summarizers' speeds=)
        (r"Give speeds=\{+model: memorylab\.llm\.measure_speed\(model, \.\.\.\)\}+ or leave "
         r"max_seconds out", "Only a --local-model's speed is measured (a short warm-up): leave "
         "--max-seconds out for other models"),
        (r"\bmax_seconds=(?=\S)", "--max-seconds "),
        (r"\bmax_seconds\b", "--max-seconds"),
        (r"\bmax_tokens\b", "--max-tokens"),
        (r"\bworkspace_dir, else \$WORKSPACE_DIR", "--workspace, else $WORKSPACE_DIR"),
        (r"""format=["']json["']""", "--format json"),
    )
)


def cli_message(error: BaseException) -> str:
    """``memorylab: <message>`` on one line, with flags where the library names arguments."""
    text = " ".join(str(error).split()) or type(error).__name__
    for pattern, flag in _FLAG_FOR_ARGUMENT:
        text = pattern.sub(flag, text)
    return f"memorylab: {text}"


def run_handler(handler: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run a command: a memorylab error is one line on stderr and its exit code; a reader that
    closed the pipe (``| head``) ends the command quietly, as Unix tools do."""
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _one_line_warning
            return int(handler(args))
    except MemorylabError as error:
        print(cli_message(error), file=sys.stderr)
        return exit_code(error)
    except BrokenPipeError:
        _silence_stdout()
        return 141  # 128 + SIGPIPE: what a shell reports for `yes | head`
    except KeyboardInterrupt:
        print("memorylab: interrupted", file=sys.stderr)
        return 130


def _one_line_warning(message: Warning | str, category: type[Warning], *_: Any, **__: Any) -> None:
    """A warning while a command runs, as the command's own line: ``memorylab: warning: ...``
    (Python's format adds the source file and line of the library, which say nothing to a user
    of the command)."""
    text = " ".join(str(message).split())
    print(f"memorylab: warning: {text.removeprefix('memorylab: ')}", file=sys.stderr)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's last flush does not fail again."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


class OneLineParser(argparse.ArgumentParser):
    """argparse's usage errors as one ``memorylab:`` line (exit code 2) instead of the usage."""

    def error(self, message: str) -> Any:
        print(f"memorylab: {message} (see: {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows each option's default, except where there is none to show (None, False) or the
    help text already explains it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.default in (None, False, argparse.SUPPRESS) or "default" in text:
            return text
        return super()._get_help_string(action)


def bounded_int(low: int, high: int, what: str) -> Callable[[str], int]:
    """An argparse type: an int in [low, high] (a huge number is refused here, not overflowed
    deep in numpy or datetime)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number ({what})") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"{text} is out of range: give {what} from {low:,} to {high:,}"
            )
        return value

    return parse


def cost_limit(text: str) -> float:
    """An argparse type: a finite amount of USD >= 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not an amount of USD >= 0 (e.g. 0.5)")
    return value


MAX_CONTEXT_TOKENS = 100_000_000
"""The largest context window a command accepts (no model comes near it)."""


MIN_THRESHOLD_TOKENS = 256
"""The fewest tokens a threshold given in tokens may be: the smallest window the commands take.
Below it a whole number is a percentage or a fraction mistyped (``--threshold 2`` drew the line
below a workspace's 42-token static context, and every strategy's compaction failed)."""


def threshold_value(text: str, flag: str = "--threshold") -> float | int:
    """A threshold as every command takes it: a fraction of the window (``0.9``) or a whole
    number of tokens (``6000``); else :class:`InvalidSetting` naming ``flag``."""
    try:
        value = float(text)
    except ValueError:
        raise InvalidSetting(
            f"{flag} {text!r} is not a number: give a fraction such as 0.9 or tokens such "
            "as 6000"
        ) from None
    if not math.isfinite(value) or value <= 0 or value > MAX_CONTEXT_TOKENS:
        raise InvalidSetting(
            f"{flag} {text} is out of range: give a fraction such as 0.9 or tokens such "
            f"as 6000 (at most {MAX_CONTEXT_TOKENS:,})"
        )
    if value > 1 and not value.is_integer():
        raise InvalidSetting(
            f"{flag} {text}: a fraction of the window is at most 1 (0.9 = compress at 90 %), "
            "and tokens are a whole number such as 6000"
        )
    if value > 1 and value < MIN_THRESHOLD_TOKENS:
        raise InvalidSetting(
            f"{flag} {text} reads as {int(value)} tokens, fewer than any window holds (at least "
            f"{MIN_THRESHOLD_TOKENS}): give "
            + (f"a fraction such as {value / 100:g} ({int(value)} %)" if value <= 100
               else "a fraction such as 0.9")
            + " or tokens such as 6000"
        )  # fmt: skip
    return int(value) if value > 1 else value


def check_output(
    path: Path, flag: str, *, overwrite: bool = True, formats: Sequence[str] = ()
) -> Path:
    """Refuse, before any work, an output the command could not write: a folder, a missing
    folder to write into, an unsupported format (``formats``: suffixes without the dot), or an
    existing file without ``--overwrite``."""
    names = ", ".join("." + f for f in formats)
    if str(path) == "-":
        raise InvalidSetting(
            f"{flag} -: memorylab writes a file, not standard output; give a file name"
            + (f" ending in one of {names}" if formats else "")
        )
    path = path.expanduser()
    if path.is_dir():
        raise InvalidSetting(f"{flag} {path} is a folder; give a file name inside it")
    suffix = path.suffix.lower().lstrip(".")
    if formats and suffix not in formats:
        if not suffix:
            raise InvalidSetting(f"{flag} {path} has no file extension: end it with one of {names}")
        raise InvalidSetting(
            f"{flag} {path}: '.{suffix}' is not a format memorylab can write there; use one of "
            f"{names}"
        )
    folder = path.absolute().parent
    if not folder.exists():
        raise NothingThere(
            f"cannot write {flag} {path}: the folder {folder} does not exist; create it or "
            "choose another path"
        )
    if not folder.is_dir():
        raise InvalidSetting(f"cannot write {flag} {path}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise StoreError(
            f"cannot write {flag} {path}: no permission to write into {folder}; choose "
            "another path"
        )
    if not overwrite and path.exists():
        raise InvalidSetting(f"{flag} {path} exists; choose another path or pass --overwrite")
    return path


def image_formats() -> list[str]:
    """The file formats matplotlib can save a figure as."""
    from matplotlib.backend_bases import FigureCanvasBase

    return sorted(FigureCanvasBase.get_supported_filetypes())


def check_model_name(name: str, flag: str, *, summarizers: bool = False) -> str:
    """``name`` if litellm knows it (its model map, or ``provider/model`` of a provider it
    supports, e.g. ``openai/my-model`` behind ``--api-base``) or, with ``summarizers``, it is a
    registered memorylab summarizer; else :class:`InvalidSetting` saying how to name one."""
    from memorylab.compress import summarizer_names

    registered = [*summarizer_names(), "memorylab/existing"] if summarizers else []
    if name in registered:
        return name
    models, providers = bundled_model_map(), bundled_providers()
    provider = name.split("/", 1)[0] if "/" in name else ""
    if not models or name in models or (provider in providers and name != provider + "/"):
        return name
    ours = f"a memorylab summarizer ({', '.join(registered)}), " if summarizers else ""
    raise InvalidSetting(
        f"{flag} {name!r} is not a model memorylab knows: name {ours}a model in litellm's "
        "model map (e.g. gpt-4o-mini, claude-sonnet-4-5) or provider/model (e.g. "
        "openai/my-model with --api-base, ollama/llama3)"
    )
