"""Tick labels people read without decoding them: the one tick formatting of every plot (internal).

matplotlib's default formatter moves large or tiny numbers into an offset or a power of ten
(``1e6`` at the axis' end, ``+5.6e1``) and writes ``12345`` without separators. Every plot of
memorylab (:mod:`memorylab.analysis._plots`, :mod:`memorylab.evaluate._plots`) labels its number
axes through :func:`number_axis` instead: whole values with thousands separators (``12,345``),
fractions with as many decimals as the tick spacing needs, the same for every tick of the axis
(``0.50 0.55 0.60``, ``$0.0001 $0.0002``), never an offset nor scientific notation. Count axes
(:func:`count_axis`) put their ticks on whole numbers only. Imported by the plot helpers when
they draw (it imports matplotlib).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from matplotlib.ticker import Formatter, MaxNLocator

if TYPE_CHECKING:
    from matplotlib.axis import Axis

_MOST_DECIMALS = 8  # below this a cost or a share is zero for anyone reading the plot


def _decimals(values: Sequence[float]) -> int:
    """The decimals that tell apart ticks this far apart (0 for whole numbers)."""
    finite = sorted({v for v in values if math.isfinite(v)})
    steps = [b - a for a, b in itertools.pairwise(finite) if b - a > 0]
    if all(abs(v - round(v)) < 1e-9 for v in finite):
        return 0
    step = min(steps) if steps else max((abs(v) for v in finite), default=1.0)
    if step <= 0:
        return 2
    needed = max(0, -math.floor(math.log10(step) + 1e-9))
    # A step of 0.25 needs two decimals, not one: add one while rounding would merge ticks.
    while needed < _MOST_DECIMALS and any(abs(round(v, needed) - v) > step * 1e-3 for v in finite):
        needed += 1
    return min(needed, _MOST_DECIMALS)


class PlainFormatter(Formatter):
    """``12,345`` / ``0.85`` / ``$0.0149``: separators, one decimal count per axis, no offset."""

    def __init__(self, prefix: str = "", suffix: str = "") -> None:
        self.prefix = prefix
        self.suffix = suffix
        self.decimals = 2

    def _text(self, value: float) -> str:
        shown = f"{value:,.{self.decimals}f}"
        if shown.lstrip("-").strip("0.,") == "":
            shown = "0"  # zero is "0" (or "$0"), not "-0.00" nor "0.000000"
        return f"{self.prefix}{shown}{self.suffix}"

    def format_ticks(self, values: Sequence[float]) -> list[str]:
        self.decimals = _decimals([float(v) for v in values])
        return [self._text(float(v)) for v in values]

    def __call__(self, x: float, pos: int | None = None) -> str:
        # One tick alone (the cursor readout): the decimals of the last ticks drawn.
        return self._text(float(x))

    def get_offset(self) -> str:
        return ""  # never "1e6" at the end of an axis


def number_axis(axis: Axis, *, prefix: str = "", suffix: str = "") -> None:
    """Label ``axis`` with :class:`PlainFormatter` (a ``prefix`` such as ``"$"``)."""
    axis.set_major_formatter(PlainFormatter(prefix, suffix))


def count_axis(axis: Axis) -> None:
    """A count axis: ticks on whole numbers only, labelled ``12,345``."""
    # matplotlib's own choice of ticks (AutoLocator's), only never between two whole numbers.
    # min_n_ticks=1: a range holding one whole number gets that one tick, never fractions.
    axis.set_major_locator(
        MaxNLocator(nbins="auto", steps=[1, 2, 2.5, 5, 10], integer=True, min_n_ticks=1)
    )
    number_axis(axis)
