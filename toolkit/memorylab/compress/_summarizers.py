"""Summarizers by name: the table :func:`get_summarizer` reads, and how a name is added to it.

===========================  ==============================================================
name                         summarizer
===========================  ==============================================================
``memorylab/extractive``     :class:`~memorylab.compress._extractive.ExtractiveSummarizer`
                             (offline, deterministic; the default)
``memorylab/truncate``       :class:`~memorylab.compress._baselines.TruncateSummarizer`
``memorylab/head-tail``      :class:`~memorylab.compress._baselines.HeadTailSummarizer`
``memorylab/full``           :class:`~memorylab.compress._baselines.FullHistory` (the ceiling:
                             the history unchanged; a bound for comparisons)
``memorylab/none``           :class:`~memorylab.compress._baselines.NoSummary` (the floor: an
                             empty summary; a bound for comparisons)
``memorylab/scripted``       :class:`~memorylab.compress._scripted.ScriptedSummarizer`
any other name               a litellm model, for
                             :class:`~memorylab.compress._litellm_summarizer.LiteLLMSummarizer`
===========================  ==============================================================

A summarizer of your own is added the same way as these, by name::

    @register_summarizer("my/keywords")
    class KeywordSummarizer(BaseSummarizer): ...

after which ``get_summarizer("my/keywords", **options)`` (and every option that takes a
summarizer name: ``ContextCompressor(summarizer_model=...)``, ``compare_summarizers``) builds it.
An installed package adds one by the entry point group ``memorylab.summarizers`` (its name, and
the factory as ``"module:attribute"``), loaded when a name is not in the table or names are
listed (docs/analysis.md, "Other formats: loaders and plugins").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from memorylab._names import plugged_in, plugin_lookup, register
from memorylab.compress._base import Summarizer, as_summarizer
from memorylab.compress._baselines import (
    FullHistory,
    HeadTailSummarizer,
    NoSummary,
    TruncateSummarizer,
)
from memorylab.compress._extractive import ExtractiveSummarizer
from memorylab.compress._litellm_summarizer import LiteLLMSummarizer
from memorylab.compress._scripted import ScriptedSummarizer
from memorylab.errors import InvalidSetting

DEFAULT_SUMMARIZER = "memorylab/extractive"
"""The summarizer of ``get_summarizer(None)``: offline, no key."""
_PLUGINS = "memorylab.summarizers"
"""The entry-point group of summarizers from installed packages."""

_F = TypeVar("_F", bound=Callable[..., Any])

_REGISTRY: dict[str, Callable[..., Summarizer]] = {
    "memorylab/extractive": ExtractiveSummarizer,
    "memorylab/truncate": TruncateSummarizer,
    "memorylab/head-tail": HeadTailSummarizer,
    "memorylab/full": FullHistory,
    "memorylab/none": NoSummary,
    "memorylab/scripted": ScriptedSummarizer,
}


def register_summarizer(
    name: str, factory: Callable[..., Summarizer] | None = None
) -> Callable[[_F], _F]:
    """Make ``get_summarizer(name, **options)`` return ``factory(**options)`` (a class or a
    function; a name already taken is replaced). Used as a decorator when ``factory`` is not
    given."""
    return register(_REGISTRY, "summarizer", name, factory)


def summarizer_names() -> list[str]:
    """The registered names, in the order they were added, installed packages' last (litellm
    model names come on top)."""
    return list(plugged_in(_REGISTRY, _PLUGINS, "summarizer", register_summarizer))


def get_summarizer(spec: str | Summarizer | None = None, **options: Any) -> Summarizer:
    """A summarizer from a registered name, a litellm model name, or an object (returned as it
    is, or completed by :func:`~memorylab.compress._base.as_summarizer` when it is only a
    ``name`` and a ``summarize``); ``None`` is :data:`DEFAULT_SUMMARIZER`. ``options`` go to the
    constructor."""
    if spec is None:
        spec = DEFAULT_SUMMARIZER
    if isinstance(spec, str):
        name = spec.strip()
        factory = plugin_lookup(_REGISTRY, _PLUGINS, "summarizer", name, register_summarizer)
        if factory is not None:
            return factory(**options)
        if name.lower().startswith("memorylab/"):
            raise InvalidSetting(
                f"unknown memorylab summarizer {spec!r}; registered: "
                f"{', '.join(summarizer_names())} (or a litellm model name such as 'gpt-4o-mini')"
            )
        if not name:
            raise InvalidSetting("a summarizer name must not be empty")
        return LiteLLMSummarizer(name, **options)
    if options:
        raise InvalidSetting(
            f"options {sorted(options)} cannot be applied to an existing summarizer object"
        )
    return as_summarizer(spec)
