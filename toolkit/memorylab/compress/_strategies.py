"""Strategies by name: the table :func:`get_strategy` reads, how a name is added to it, and how a
``compactions.jsonl`` record names the strategy that wrote it.

=======================  ==================================================================
name                     strategy
=======================  ==================================================================
``summary``              :class:`~memorylab.compress._summary.SummaryStrategy`: summarize
                         everything (the default; today's compaction)
``keep_recent``          :class:`~memorylab.compress._keep_recent.KeepRecent`: summarize the
                         old part, keep the newest messages verbatim
``clear_tool_results``   :class:`~memorylab.compress._clear_tool_results.ClearToolResults`:
                         old tool results become a placeholder naming the archive; no model
``trim``                 :class:`~memorylab.compress._trim.Trim`: drop the oldest, keep the
                         newest that fit; no model
``fact_ledger``          :class:`~memorylab.compress._ledger.FactLedger`: summarize, and carry
                         the departing messages' facts verbatim in a bounded ledger
=======================  ==================================================================

An installed package adds one by the entry point group ``memorylab.strategies`` (its name, and
the factory as ``"module:attribute"``), loaded when a name is not in the table or names are
listed.

A record's ``strategy`` field is ``{"name": ..., **settings}`` (absent: summary), and
:func:`strategy_from_record` rebuilds the strategy from it (or from the whole record), so a
replay runs the strategy a live run used:

>>> strategy_from_record({"name": "keep_recent", "keep_messages": 20})
KeepRecent(keep_messages=20, keep_tokens=None, keep_fraction=None)
>>> strategy_from_record({"time": "2026-05-01T10:00:00+00:00", "archive": "history_x.md"})
SummaryStrategy()
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import fields, is_dataclass
from typing import Any, TypeVar

from memorylab._names import plugged_in, plugin_lookup, register
from memorylab.compress._clear_tool_results import ClearToolResults
from memorylab.compress._keep_recent import KeepRecent
from memorylab.compress._ledger import FactLedger
from memorylab.compress._strategy import Strategy
from memorylab.compress._summary import SummaryStrategy
from memorylab.compress._trim import Trim
from memorylab.errors import InvalidSetting
from memorylab.memory._records import CompactionEvent

DEFAULT_STRATEGY = "summary"
"""The strategy of ``get_strategy(None)`` and of a record without a ``strategy`` field."""
_PLUGINS = "memorylab.strategies"
"""The entry-point group of strategies from installed packages."""

_F = TypeVar("_F", bound=Callable[..., Any])

_REGISTRY: dict[str, Callable[..., Strategy]] = {
    "summary": SummaryStrategy,
    "keep_recent": KeepRecent,
    "clear_tool_results": ClearToolResults,
    "trim": Trim,
    "fact_ledger": FactLedger,
}


def register_strategy(
    name: str, factory: Callable[..., Strategy] | None = None
) -> Callable[[_F], _F]:
    """Make ``get_strategy(name, **settings)`` return ``factory(**settings)`` (a
    :class:`~memorylab.compress._strategy.Strategy` subclass, or a function; a name already
    taken is replaced). Used as a decorator when ``factory`` is not given."""
    return register(_REGISTRY, "strategy", name, factory)


def strategy_names() -> list[str]:
    """The registered names, in the order they were added, installed packages' last (what a
    CLI or a widget lists)."""
    return list(plugged_in(_REGISTRY, _PLUGINS, "strategy", register_strategy))


def get_strategy(spec: str | Strategy | None = None, **settings: Any) -> Strategy:
    """A strategy from a registered name and its settings, or a strategy object (returned as
    it is); ``None`` is :data:`DEFAULT_STRATEGY`.

    >>> get_strategy("trim", keep_messages=10).describe()
    'trim(keep_messages=10)'
    """
    if spec is None:
        spec = DEFAULT_STRATEGY
    if isinstance(spec, Strategy):
        if settings:
            raise InvalidSetting(
                f"settings {sorted(settings)} cannot be applied to a strategy object; build "
                f"it with them (get_strategy({spec.name!r}, **settings))"
            )
        return spec
    if not isinstance(spec, str):
        raise InvalidSetting(
            f"a strategy is a name ({', '.join(strategy_names())}) or a Strategy object, not "
            f"{spec!r}"
        )
    name = spec.strip()
    factory = plugin_lookup(_REGISTRY, _PLUGINS, "strategy", name, register_strategy)
    if factory is None:
        raise InvalidSetting(
            f"unknown strategy {spec!r}; registered: {', '.join(strategy_names())} (add your "
            "own with memorylab.compress.register_strategy(name, cls))"
        )
    known = [f.name for f in fields(factory)] if is_dataclass(factory) else None
    unknown: list[str] = sorted(set(settings) - set(known)) if known is not None else []
    if unknown:
        raise InvalidSetting(
            f"strategy {name!r} has no setting {', '.join(unknown)}; its settings: "
            f"{', '.join(known or []) or 'none'}"
        )
    strategy = factory(**settings)
    if not isinstance(strategy, Strategy):
        raise InvalidSetting(
            f"the factory of strategy {name!r} returned {strategy!r}, not a Strategy"
        )
    return strategy


def strategy_from_record(record: Mapping[str, Any] | CompactionEvent | None) -> Strategy:
    """The strategy a ``compactions.jsonl`` record names: its ``strategy`` field
    (``{"name", **settings}``, what :meth:`Strategy.record` wrote), given alone or within the
    whole record or :class:`~memorylab.memory._records.CompactionEvent`; none is the summary
    strategy (every record before strategies)."""
    if isinstance(record, CompactionEvent):
        record = record.strategy
    if record is None:
        return get_strategy(DEFAULT_STRATEGY)
    if not isinstance(record, Mapping):
        raise InvalidSetting(f"not a strategy record: {record!r}")
    if "name" not in record:  # a whole compaction record
        inner = record.get("strategy")
        if inner is not None and (not isinstance(inner, Mapping) or "name" not in inner):
            raise InvalidSetting(f"not a strategy record: {inner!r}; expected a 'name'")
        return strategy_from_record(inner)
    settings = {str(k): v for k, v in record.items() if k != "name"}
    return get_strategy(str(record["name"]), **settings)
