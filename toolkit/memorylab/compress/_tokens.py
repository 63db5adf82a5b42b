"""Token counting that works offline: tiktoken encodings plus litellm's bundled Claude tokenizer.

Nothing here downloads. tiktoken fetches its BPE files from ``openaipublic.blob.core.windows.net``
on first use; litellm ships copies of ``cl100k_base``, ``o200k_base`` and ``p50k_base`` in
``litellm/litellm_core_utils/tokenizers/``, each named by tiktoken's cache key (the SHA-1 of the
file's URL, e.g. ``9b5ad71b2ce5302211f9c61530b329a4922fc6a4`` for cl100k_base; the SHA-256 of
each file matches the hash tiktoken expects). Before the first encoding is loaded, if neither
``TIKTOKEN_CACHE_DIR`` nor tiktoken's older ``DATA_GYM_CACHE_DIR`` is set, this module sets
``TIKTOKEN_CACHE_DIR`` to that folder (found with :func:`importlib.util.find_spec`, which does not
import litellm). litellm's first ``token_counter`` call sets the same value. Before tiktoken is
asked for an encoding, the cached file is checked (it exists and has the right SHA-256); when it is
missing, :class:`~memorylab.errors.PrerequisiteError` says which file and how to fix it, instead of
letting tiktoken try a download (a raw ``ConnectionError`` offline, a hang behind some firewalls).

Models map to tokenizers by name, after dropping provider prefixes (``openai/``,
``azure/eu/``, ``openrouter/anthropic/``, ``ft:``):

* ``o200k_base`` (exact): gpt-4o, chatgpt-4o, gpt-4.1, gpt-4.5, gpt-5*, o1/o3/o4 (``-mini`` ...),
  gpt-oss (o200k_harmony differs only in special tokens, which are never used here).
* ``cl100k_base`` (exact): gpt-4, gpt-4-turbo, gpt-3.5-turbo, text-embedding-ada-002/-3-*.
* ``claude_legacy`` (approximation): every Claude name (``claude-sonnet-4-5``,
  ``anthropic/claude-opus-4-1``, ``bedrock/us.anthropic.claude-3-7-sonnet-...``).
* ``cl100k_base`` (approximation) for everything else, including ``None``, Llama, Gemini, Mistral.
  No Hugging Face hub lookup is ever made (litellm's own counter tries one for Llama names).

What litellm 1.110 bundles for Claude: ``anthropic_tokenizer.json``, a Hugging Face ``tokenizers``
byte-level BPE with 65,000 entries and NFKC normalisation. It is Anthropic's *legacy* tokenizer
(the Claude 1/2 era one, which Anthropic says is not accurate for Claude 3 and later); Anthropic
has published no tokenizer for Claude 3 or 4.x, only the ``count_tokens`` API is exact. litellm's
``token_counter`` uses this file for bare Claude names in its model map other than ``claude-3*``
(so ``claude-sonnet-4-5`` yes, ``anthropic/claude-sonnet-4-5`` no). memorylab uses it for every
Claude name, prefixed or not, and reports ``exact=False``: it counts the same as litellm for bare
``claude-*-4-5`` names, and it gives more tokens than cl100k_base (docs/performance.md has the
numbers), the direction Claude's newer tokenizers go, so a compression threshold errs on the
early side. It loads offline, once per process, with the ``tokenizers`` package litellm depends
on. Its five added tokens (``<EOT>``, ``<META>`` ...) are dropped
before loading, so that text in a message is always counted as ordinary text.

Special-token text such as ``"<|endoftext|>"`` in user content is counted as ordinary text
(tiktoken's ``encode_ordinary``) and never raises. Lone surrogates are replaced, as tiktoken does.

>>> count_tokens("hello world", "gpt-4o")
2
>>> counter = get_token_counter("openai/gpt-4o-mini")
>>> counter.encoding_name, counter.exact
('o200k_base', True)
>>> counter.count_batch(["hello world", "<|endoftext|>"])
[2, 7]

Importing this module imports neither tiktoken nor litellm nor tokenizers; the first count does.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memorylab.errors import InvalidSetting, PrerequisiteError

CL100K = "cl100k_base"
O200K = "o200k_base"
CLAUDE_LEGACY = "claude_legacy"
"""Name of litellm's bundled (legacy) Claude tokenizer, an approximation for every Claude model."""

_BLOB = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"
# The SHA-256 tiktoken expects for each file (tiktoken_ext/openai_public.py).
_EXPECTED_SHA256 = {
    CL100K: "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    O200K: "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}
_CLAUDE_FILE = "anthropic_tokenizer.json"

# Texts at least this long are encoded in parallel by count_batch; shorter ones in a plain loop
# (a thread pool only pays off for texts of a few thousand characters or more).
PARALLEL_MIN_CHARS = 4096

_O200K_MODEL = re.compile(
    r"^(?:chatgpt-4o|gpt-4o|gpt-4\.1|gpt-4\.5|gpt-5|gpt-oss|o[134](?![0-9a-z]))", re.ASCII
)
_CL100K_MODEL = re.compile(
    r"^(?:gpt-4(?![0-9a-z.])|gpt-3\.5|gpt-35|text-embedding-ada-002|text-embedding-3-)", re.ASCII
)
_CLAUDE_MODEL = re.compile(r"(?:^|\.)claude(?:$|[-_.@:])", re.ASCII)


def _bare_model_name(model: str) -> str:
    """Lower-case, no provider prefix: ``"openrouter/anthropic/Claude-3"`` -> ``"claude-3"``."""
    return model.strip().lower().rsplit("/", 1)[-1].removeprefix("ft:")


def _classify(model: str | None) -> tuple[str, bool]:
    if model is None:
        return CL100K, False
    if not isinstance(model, str) or not model.strip():
        raise InvalidSetting(f"model must be a non-empty model name or None, not {model!r}")
    name = _bare_model_name(model)
    if _O200K_MODEL.match(name):
        return O200K, True
    if _CL100K_MODEL.match(name):
        return CL100K, True
    if _CLAUDE_MODEL.search(name):
        return CLAUDE_LEGACY, False
    return CL100K, False


def encoding_name_for_model(model: str | None) -> str:
    """The tokenizer memorylab counts ``model``'s tokens with (see the module docstring).

    >>> encoding_name_for_model("openai/gpt-4o")
    'o200k_base'
    >>> encoding_name_for_model("gpt-3.5-turbo"), encoding_name_for_model(None)
    ('cl100k_base', 'cl100k_base')
    >>> encoding_name_for_model("anthropic/claude-sonnet-4-5")
    'claude_legacy'
    """
    return _classify(model)[0]


# --------------------------------------------------------------------------- locating the files


def _litellm_tokenizers_dir() -> Path | None:
    """litellm's bundled tokenizer folder, found without importing litellm (None if absent)."""
    try:
        spec = importlib.util.find_spec("litellm")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"
    return folder if folder.is_dir() else None


def _tiktoken_cache_dir() -> tuple[str, str]:
    """(variable, folder) tiktoken will read, after pointing it at litellm's copy if unset."""
    if "TIKTOKEN_CACHE_DIR" not in os.environ and "DATA_GYM_CACHE_DIR" not in os.environ:
        bundled = _litellm_tokenizers_dir()
        if bundled is not None:
            os.environ["TIKTOKEN_CACHE_DIR"] = str(bundled)
    for variable in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if variable in os.environ:
            return variable, os.environ[variable]
    return "the default", os.path.join(tempfile.gettempdir(), "data-gym-cache")  # tiktoken's


def _check_bpe_file(name: str) -> None:
    """Raise PrerequisiteError unless tiktoken will find ``name``'s BPE file in its cache."""
    url = _BLOB.format(name)
    key = hashlib.sha1(url.encode()).hexdigest()
    variable, cache_dir = _tiktoken_cache_dir()
    bundled = _litellm_tokenizers_dir()
    fix = (
        f"Fix: unset TIKTOKEN_CACHE_DIR so memorylab uses the copy litellm ships in {bundled}, "
        f"or set TIKTOKEN_CACHE_DIR={bundled}"
        if bundled is not None
        else "Fix: install litellm, which ships the file (pip install 'litellm>=1.110,<1.111')"
    )
    fix += f", or save {url} (downloaded elsewhere) as <TIKTOKEN_CACHE_DIR>/{key}."
    if cache_dir == "":
        raise PrerequisiteError(
            f"{variable} is set to an empty string, which makes tiktoken download {name} on "
            f"every load; memorylab never downloads. {fix}"
        )
    path = Path(cache_dir) / key
    try:
        data = path.read_bytes()
    except OSError:
        raise PrerequisiteError(
            f"tiktoken's {name} file is not available offline: {path} is missing ({variable} "
            f"cache folder {cache_dir}; {key} is tiktoken's cache key for {url}). {fix}"
        ) from None
    if hashlib.sha256(data).hexdigest() != _EXPECTED_SHA256[name]:
        raise PrerequisiteError(
            f"tiktoken's {name} file {path} is corrupt (its SHA-256 is not the one tiktoken "
            f"expects, and tiktoken would delete it and download it again). {fix}"
        )


# --------------------------------------------------------------------------- backends


def _replace_surrogates(text: str) -> str:
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


class _Backend:
    """A loaded encoding: ``count`` one text, ``_parallel`` many on threads."""

    def count(self, text: str) -> int:
        raise NotImplementedError

    def _parallel(self, texts: list[str], num_threads: int) -> list[int]:
        raise NotImplementedError

    def count_many(self, texts: list[str], num_threads: int) -> list[int]:
        """Count long texts with ``_parallel`` (when worth it), the rest one by one."""
        long_texts = [text for text in texts if len(text) >= PARALLEL_MIN_CHARS]
        if num_threads < 2 or len(long_texts) < 2:
            return [self.count(text) for text in texts]
        long_counts = iter(self._parallel(long_texts, min(num_threads, len(long_texts))))
        return [
            next(long_counts) if len(text) >= PARALLEL_MIN_CHARS else self.count(text)
            for text in texts
        ]


class _Tiktoken(_Backend):
    def __init__(self, encoding: Any) -> None:
        self._encoding = encoding

    def count(self, text: str) -> int:
        return len(self._encoding.encode_ordinary(text))

    def _parallel(self, texts: list[str], num_threads: int) -> list[int]:
        batch = self._encoding.encode_ordinary_batch(texts, num_threads=num_threads)
        return [len(ids) for ids in batch]


class _HuggingFace(_Backend):
    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer

    def count(self, text: str) -> int:
        try:
            return len(self._tokenizer.encode(text, add_special_tokens=False).ids)
        except TypeError:  # a lone surrogate: "TextInputSequence must be str"
            clean = _replace_surrogates(text)
            return len(self._tokenizer.encode(clean, add_special_tokens=False).ids)

    def _parallel(self, texts: list[str], num_threads: int) -> list[int]:
        # tokenizers parallelises encode_batch on its own (Rayon) thread pool.
        try:
            batch = self._tokenizer.encode_batch(texts, add_special_tokens=False)
        except TypeError:  # a lone surrogate somewhere
            clean = [_replace_surrogates(text) for text in texts]
            batch = self._tokenizer.encode_batch(clean, add_special_tokens=False)
        return [len(encoding.ids) for encoding in batch]


def _load_tiktoken(name: str) -> _Backend:
    import tiktoken

    if name not in getattr(tiktoken.registry, "ENCODINGS", {}):
        _check_bpe_file(name)
    try:
        encoding = tiktoken.get_encoding(name)
    except Exception as error:  # requests.ConnectionError, ValueError (hash), OSError ...
        raise PrerequisiteError(
            f"tiktoken could not load {name} offline ({type(error).__name__}: {error}). Set "
            "TIKTOKEN_CACHE_DIR to a folder holding its BPE file, e.g. "
            f"{_litellm_tokenizers_dir()}."
        ) from error
    return _Tiktoken(encoding)


def _load_claude_legacy() -> _Backend:
    folder = _litellm_tokenizers_dir()
    if folder is None or not (folder / _CLAUDE_FILE).is_file():
        raise PrerequisiteError(
            f"The Claude tokenizer ships with litellm ({_CLAUDE_FILE} in "
            "litellm/litellm_core_utils/tokenizers/) and was not found. "
            "Install it: pip install 'litellm>=1.110,<1.111'."
        )
    try:
        from tokenizers import Tokenizer
    except ImportError as error:
        raise PrerequisiteError(
            "Counting Claude tokens needs the 'tokenizers' package (a litellm dependency): "
            "pip install 'tokenizers>=0.21'."
        ) from error
    spec = json.loads((folder / _CLAUDE_FILE).read_text(encoding="utf-8"))
    spec["added_tokens"] = []  # "<EOT>" and friends in a message are ordinary text
    return _HuggingFace(Tokenizer.from_str(json.dumps(spec)))


@functools.cache
def _backend(encoding_name: str) -> _Backend:
    """Load an encoding once per process (two threads racing may both load it; harmless)."""
    if encoding_name == CLAUDE_LEGACY:
        return _load_claude_legacy()
    return _load_tiktoken(encoding_name)


# --------------------------------------------------------------------------- public API


def _resolve_threads(num_threads: int | None) -> int:
    if num_threads is None:
        return os.cpu_count() or 1
    if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1:
        raise InvalidSetting(f"num_threads must be an int >= 1 or None, not {num_threads!r}")
    return num_threads


def _require_str(text: object) -> str:
    if not isinstance(text, str):
        raise TypeError(f"token counting takes str, not {type(text).__name__}")
    return text


@dataclass(frozen=True)
class TokenCounter:
    """Counts tokens the way ``model`` does, or approximately when ``exact`` is False.

    Immutable; equal and hashable by ``model`` (as given, provider prefix included). The
    encoding is loaded on the first count and cached per process, so constructing one is cheap.

    >>> counter = TokenCounter("gpt-4")
    >>> counter("hello world"), counter.encoding_name, counter.exact
    (2, 'cl100k_base', True)
    >>> TokenCounter().exact  # no model: the cl100k_base approximation
    False
    """

    model: str | None = None
    encoding_name: str = field(init=False, compare=False)
    exact: bool = field(init=False, compare=False)

    def __post_init__(self) -> None:
        name, exact = _classify(self.model)
        object.__setattr__(self, "encoding_name", name)
        object.__setattr__(self, "exact", exact)

    def count(self, text: str) -> int:
        """The number of tokens in ``text``; special-token text counts as ordinary text."""
        return _backend(self.encoding_name).count(_require_str(text))

    __call__ = count

    def count_batch(self, texts: Sequence[str], num_threads: int | None = None) -> list[int]:
        """``[self.count(t) for t in texts]``, with long texts encoded on ``num_threads`` threads.

        ``num_threads`` defaults to ``os.cpu_count()``; 1 means a plain loop. Texts shorter than
        ``PARALLEL_MIN_CHARS`` are always counted in a loop (a thread pool costs more than it
        saves on them). Long texts go to tiktoken's ``encode_ordinary_batch``; for the Claude
        tokenizer to ``tokenizers``' ``encode_batch``, which uses that package's own thread pool.
        """
        if isinstance(texts, str):
            raise TypeError("count_batch takes a sequence of str, not one str; use count()")
        items = [_require_str(text) for text in texts]
        threads = _resolve_threads(num_threads)
        if not items:
            return []
        return _backend(self.encoding_name).count_many(items, threads)


@functools.lru_cache(maxsize=256)
def _cached_counter(model: str | None) -> TokenCounter:
    return TokenCounter(model)


def get_token_counter(model: str | None = None) -> TokenCounter:
    """A shared :class:`TokenCounter` for ``model`` (cached per process)."""
    if model is not None and not isinstance(model, str):
        raise InvalidSetting(f"model must be a non-empty model name or None, not {model!r}")
    return _cached_counter(model)


def count_tokens(text: str, model: str | None = None) -> int:
    """The number of tokens in ``text`` for ``model`` (``None``: the cl100k_base approximation).

    >>> count_tokens("hello world")
    2
    >>> count_tokens("<|endoftext|>", "gpt-4o")  # special-token text is ordinary text
    7
    """
    return get_token_counter(model).count(text)
