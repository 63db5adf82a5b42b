"""The plan of a comparison: what it will send and how long that will take, known before its
first call (internal; made by :func:`memorylab.evaluate.plan_comparison`, its figures by
:mod:`memorylab.evaluate._budget`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memorylab.errors import BudgetExceeded
from memorylab.evaluate._power import detectable_difference
from memorylab.llm import ModelSpeed
from memorylab.results import TableResult

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True, slots=True, repr=False)
class Plan(TableResult):
    """What a comparison will send, known before its first call (:func:`plan_comparison`):
    ``frame``, one row per model (``model, calls, cached_calls, input_tokens,
    processed_tokens, output_tokens, expected_output_tokens, usd, priced``: requests not cached,
    the cached ones, their prompt tokens read cold and with a prompt cache, reply tokens at most
    and expected, USD), ``speeds``, the models whose speed is known, and ``probes``, the probes
    the run grades per condition; :meth:`text` (its :meth:`notes`) says it in one line. The
    figures are estimates: docs/evaluation.md says how each is made and what it assumes."""

    frame: pd.DataFrame
    speeds: Mapping[str, ModelSpeed]
    probes: int = 0

    def notes(self) -> list[str]:
        return [self.text()]

    def _sum(self, column: str) -> int:
        return int(self.frame[column].sum())

    @property
    def requests(self) -> int:
        """Distinct model requests not in the cache (identical prompts once)."""
        return self._sum("calls")

    @property
    def cached(self) -> int:
        """Distinct model requests the cache answers."""
        return self._sum("cached_calls")

    @property
    def input_tokens(self) -> int:
        """The requests' prompt tokens, each read whole (no prompt cache)."""
        return self._sum("input_tokens")

    @property
    def processed_tokens(self) -> int:
        """The prompt tokens a server with a prompt cache reads: each request after the first of
        a memory reads only what follows its common prefix with the one before."""
        return self._sum("processed_tokens")

    @property
    def output_tokens(self) -> int:
        """Reply tokens at most (every reply at its ``max_tokens``)."""
        return self._sum("output_tokens")

    @property
    def expected_output_tokens(self) -> int:
        """Reply tokens as expected (each scorer's expected reply length)."""
        return self._sum("expected_output_tokens")

    @property
    def usd(self) -> float:
        return float(self.frame["usd"].sum())

    def _time(self, column: str) -> float | None:
        total = 0.0
        for row in self.frame.to_dict("records"):
            if row["calls"]:
                speed = self.speeds.get(str(row["model"]))
                if speed is None:
                    return None
                total += speed.seconds(row["processed_tokens"], row[column])
        return total

    @property
    def seconds(self) -> float | None:
        """The requests' expected time, one at a time: processed tokens at the read speed and
        the expected reply tokens at the write speed; None when a model that gets requests has
        no known speed."""
        return self._time("expected_output_tokens")

    @property
    def seconds_at_most(self) -> float | None:
        """:attr:`seconds` with every reply at its ``max_tokens``."""
        return self._time("output_tokens")

    def check(self, max_cost_usd: float | None = None, max_seconds: float | None = None) -> None:
        """Raise :class:`~memorylab.errors.BudgetExceeded`, saying what to change, when the plan
        costs more than ``max_cost_usd`` or is expected to take longer than ``max_seconds``
        (which needs the speed of every model it calls); None: no limit."""
        if max_cost_usd is not None and self.usd > max_cost_usd:
            lines = "; ".join(
                f"{r.model}: {int(r.calls)} calls, ~{int(r.input_tokens):,} in / "
                f"{int(r.output_tokens):,} out tokens, ${r.usd:.4f}"
                for r in self.frame.itertuples()
                if r.usd > 0
            )
            raise BudgetExceeded(
                f"the estimated cost of this comparison is ${self.usd:.4f}, above max_cost_usd="
                f"{max_cost_usd:g} ({lines}). Compare fewer cases or summarizers, use cheaper "
                "models, lower max_tokens, or raise max_cost_usd."
            )
        if max_seconds is None or not self.requests:
            return
        seconds = self.seconds
        if seconds is None:
            # one f-string: a brace doubled in a plain string part prints doubled
            raise BudgetExceeded(
                f"max_seconds={max_seconds:g} needs the time of every model this comparison "
                f"calls: {self.text()}. Give speeds={{model: memorylab.llm.measure_speed(model, "
                f"...)}} or leave max_seconds out."
            )
        if seconds > max_seconds:
            raise BudgetExceeded(
                f"this comparison is expected to take {duration(seconds)}, above max_seconds="
                f"{max_seconds:g} ({self.text()}). Compare fewer cases or summarizers, lower "
                "max_tokens, or raise max_seconds."
            )

    def text(self) -> str:
        """The plan in one line."""
        calls, seconds, longest = self.frame, self.seconds, self.seconds_at_most
        unknown = [m for m, n in zip(calls["model"], calls["calls"], strict=True)
                   if n and m not in self.speeds]  # fmt: skip
        when = (f"~{duration(seconds)} (at most {duration(longest)})"
                if seconds is not None and longest is not None
                else f"time unknown ({', '.join(unknown)}: no measured speed)")  # fmt: skip
        speeds = "; ".join(f"{model} reads {speed.read:,.0f} and writes {speed.write:,.0f} "
                           "tokens/s" for model, speed in self.speeds.items())  # fmt: skip
        probes = ""
        if self.probes:
            difference = detectable_difference(self.probes)
            probes = (f"; {self.probes:,} probes per condition: a paired difference of "
                      f"{difference:.0%} or more is detected at 80% power")  # fmt: skip
        return (f"plan: {self.requests:,} model requests ({self.cached:,} more cached), "
                f"~{self.processed_tokens:,} tokens read with the prompt cache "
                f"({self.input_tokens:,} cold), ~{self.expected_output_tokens:,} written (<= "
                f"{self.output_tokens:,}), ${self.usd:.4f}, {when}"
                + (f" ({speeds})" if speeds else "") + probes)  # fmt: skip


def duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
