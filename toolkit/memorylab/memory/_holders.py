"""The holders of memory text outside the agents' folders: where copies of an agent's messages
are kept (caches), and how the copies quoting given texts are removed. ``privacy.forget`` and
``purge`` clean every holder in :data:`HOLDERS`.

A holder is declared here, at the memory floor, by where it lives on disk, not registered by
the module that writes it: so ``forget`` finds and cleans it in a process that never imported
that module (privacy stays below the evaluation). One today: the model-call cache of
comparisons (``evaluate/_cache.py`` writes it, :func:`default_cache_dir` is where), entries
``<folder>/<key[:2]>/<key>.json`` holding a request and the provider's response as JSON.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memorylab.config import resolve_workspace

CACHE_ENV = "MEMORYLAB_CACHE_DIR"
"""Where comparisons cache model calls when set (else ``<workspace>/.cache/llm``)."""


def default_cache_dir() -> Path:
    """``$MEMORYLAB_CACHE_DIR``, else ``<workspace>/.cache/llm`` (the workspace as resolved by
    :func:`memorylab.config.resolve_workspace`): the last of the cache's folders."""
    return _cache_folders(resolve_workspace(None))[-1]


def cache_entries(folder: Path) -> Iterator[Path]:
    """The entry files of the model-call cache in ``folder``, in no particular order (none when
    the folder does not exist)."""
    if folder.is_dir():
        yield from folder.glob("??/*.json")


def forget_quoting(folder: Path, texts: Iterable[str]) -> list[Path]:
    """Delete every entry of the cache in ``folder`` that quotes one of ``texts`` (a run of
    :data:`QUOTE_WORDS` words of one, or the whole of a shorter one, or one of its identifiers:
    a long word of letters and digits, such as a key or a code), and then the entries that quote
    the replies of those (a scorer's request holds the summary a summarizer's entry answered),
    until none is left; return the files deleted.

    Quoting is matched on whitespace-separated words, so a text rendered into a prompt
    (``[time] Role: text``, chunked, wrapped) is still found. An entry that merely shares a
    common phrase may go too: that costs one repeated call, never a kept quote.
    """
    quotes = _Quotes()
    for text in texts:
        quotes.add(text)
    if not quotes:
        return []
    pending: dict[Path, tuple[list[str], list[str]]] = {}
    for path in cache_entries(folder):
        entry = _read_entry(path)
        if entry is not None:
            pending[path] = (_strings(entry), _reply_texts(entry.get("response")))
    removed: list[Path] = []
    while True:
        found = [path for path, (words, _) in pending.items() if quotes.quoted_in(words)]
        if not found:
            return removed
        for path in found:
            for reply in pending.pop(path)[1]:
                quotes.add(reply)
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            removed.append(path)


QUOTE_WORDS = 6
"""How many consecutive words of a text make a quote of it (a shorter text: all of it)."""

_QUOTE_MIN_CHARS = 12
"""A quote this short ("ok thanks") says nothing about whose text it is: not matched."""


def _read_entry(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _strings(value: Any) -> list[str]:
    """Every string inside a JSON value (keys aside), depth first."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list | tuple):
        return [s for item in value for s in _strings(item)]
    return []


def _reply_texts(response: Any) -> list[str]:
    """The texts a model answered in a cached response (not its ids, model name, finish reason:
    those are in every entry, and would make every entry look like a quote)."""
    if not isinstance(response, Mapping):
        return []
    texts = []
    for choice in response.get("choices") or []:
        message = choice.get("message") if isinstance(choice, Mapping) else None
        if isinstance(message, Mapping):
            texts += _strings(message.get("content"))
    return texts


_EDGE_PUNCTUATION = "\"'.,;:!?()[]{}<>`"


def _identifier(word: str) -> str | None:
    """``word`` without the punctuation around it, when it looks like an identifier (a key, a
    code, an id: long, letters and digits): quoted alone, it is still the agent's."""
    core = word.strip(_EDGE_PUNCTUATION)
    if (
        len(core) >= _QUOTE_MIN_CHARS
        and any(c.isdigit() for c in core)
        and any(c.isalpha() for c in core)
    ):
        return core
    return None


class _Quotes:
    """Runs of words (and identifiers) whose presence in an entry means it quotes one of the
    added texts."""

    def __init__(self) -> None:
        self.runs: set[tuple[str, ...]] = set()
        self.sizes: set[int] = set()
        self.identifiers: set[str] = set()

    def __bool__(self) -> bool:
        return bool(self.runs or self.identifiers)

    def add(self, text: str) -> None:
        words = text.split()
        size = min(QUOTE_WORDS, len(words))
        for start in range(len(words) - size + 1):
            run = tuple(words[start : start + size])
            if size and sum(map(len, run)) >= _QUOTE_MIN_CHARS:
                self.runs.add(run)
                self.sizes.add(size)
        self.identifiers.update(filter(None, map(_identifier, words)))

    def quoted_in(self, texts: Sequence[str]) -> bool:
        words = "\n".join(texts).split()
        if self.identifiers and any(_identifier(word) in self.identifiers for word in words):
            return True
        return any(
            tuple(words[start : start + size]) in self.runs
            for size in self.sizes
            for start in range(len(words) - size + 1)
        )


@dataclass(frozen=True, slots=True)
class TextHolder:
    """Copies of memory text kept outside the agents' folders: ``folders(workspace)``, where
    they may be; ``forget_quoting(folder, texts)``, which deletes the copies quoting ``texts``
    and returns the files it deleted."""

    folders: Callable[[Path], list[Path]]
    forget_quoting: Callable[[Path, Iterable[str]], list[Path]]


def _cache_folders(workspace: Path) -> list[Path]:
    """The workspace's ``.cache/llm`` and ``$MEMORYLAB_CACHE_DIR`` both: a cache written
    before the variable was set, or after it was unset, is found too."""
    configured = os.environ.get(CACHE_ENV)
    return [workspace / ".cache" / "llm", *([Path(configured).expanduser()] if configured else [])]


HOLDERS: tuple[TextHolder, ...] = (
    TextHolder(_cache_folders, forget_quoting),  # the model-call cache of comparisons
)
"""Every holder of memory text outside the agents' folders (a new cache adds its row here)."""


def holders_in(workspace_dir: str | os.PathLike[str] | None) -> list[tuple[TextHolder, Path]]:
    """Each holder's folders that exist for the workspace, resolved, each once."""
    root = resolve_workspace(workspace_dir)
    found: dict[Path, TextHolder] = {}
    for holder in HOLDERS:
        for folder in holder.folders(root):
            if folder.is_dir():
                found.setdefault(folder.resolve(), holder)
    return [(holder, folder) for folder, holder in found.items()]
