"""An on-disk, content-addressed cache of LLM calls, and the cached calls evaluate makes.

Key: the SHA-256 of a canonical JSON (sorted keys, no spaces, UTF-8) of the request as litellm
receives it — the model, the endpoint (for an OpenAI-compatible server, what it serves,
:func:`memorylab.llm.served_model`, wherever it listens: the GGUF file's SHA-256 and context
window of a model that :func:`memorylab.llm.local_server` runs, else what the server's
``/models`` and llama-server's ``/props`` say; the address of a server that says nothing), every
generation parameter and the messages — *without* the transport settings in
:data:`TRANSPORT_KEYS` (API key, timeout, retries, headers), which change how a request is sent
but not what answers it. A cached entry is
``<cache_dir>/<key[:2]>/<key>.json`` holding the request and the provider's response as litellm
returned it (``ModelResponse.model_dump()``), plus the call's latency.

Entries quote conversations (the history a summarizer read, the summary a scorer read), so they
are private like memory: folders 0o700, files 0o600, written by
:func:`memorylab.memory._fsutil.write_private_file` (a temp file in the same folder, fsync, then
a rename: a reader sees a whole entry or none). Two processes racing on one key both call the
model and the last rename wins (both entries are valid); an entry that does not parse is treated
as missing and rewritten. The cache is a holder of memory text (:mod:`memorylab.memory._holders`
declares where it lives and which entries quote given texts): :func:`memorylab.privacy.forget`
cleans it with the forgotten agent's messages, whether or not this module was imported.

Model calls themselves go through :class:`memorylab.llm.Caller` (timeouts, retries with backoff
on rate limits and timeouts, mapped errors): :class:`CachingCaller` is a ``Caller`` that looks in
the cache first; :class:`CachedLLM` is the reader/judge client of the scorers.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from memorylab import llm
from memorylab.errors import BudgetExceeded, InvalidSetting, ModelError
from memorylab.memory._format import content_to_text
from memorylab.memory._fsutil import write_private_file
from memorylab.memory._holders import cache_entries

_T = TypeVar("_T")

TRANSPORT_KEYS = frozenset(
    {
        "api_key",
        "api_version",
        "organization",
        "timeout",
        "max_retries",
        "num_retries",
        "extra_headers",
        "headers",
        "metadata",
        "mock_delay",
    }
)
"""Request keys left out of the cache key (how a request is sent, not what answers it)."""

CACHE_VERSION = 1


def _canonical(value: Any) -> str:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )


def request_key(kwargs: Mapping[str, Any]) -> str:
    """The cache key of a litellm request (see the module docstring)."""
    payload = {k: v for k, v in kwargs.items() if k not in TRANSPORT_KEYS}
    served = llm.served_model(str(payload.get("api_base") or ""), model=str(kwargs.get("model")),
                              api_key=kwargs.get("api_key"))  # fmt: skip
    if served is not None:  # what the server serves, not where it listens
        payload["api_base"] = {"served_model": served}
    payload["__cache_version__"] = CACHE_VERSION
    return hashlib.sha256(_canonical(payload).encode("utf-8")).hexdigest()


class LLMCache:
    """Entries under ``directory`` (created on first write), one JSON file per key."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory).expanduser()

    def __repr__(self) -> str:
        return f"LLMCache({str(self.directory)!r})"

    def path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            data = json.loads(self.path(key).read_bytes())
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) and data.get("key") == key else None

    def put(self, key: str, entry: Mapping[str, Any]) -> None:
        data = _canonical({**entry, "key": key}).encode("utf-8")
        write_private_file(self.path(key), data)  # missing folders are made 0o700 too

    def entries(self) -> Iterator[Path]:
        """The entry files, in no particular order (none when the folder does not exist)."""
        return cache_entries(self.directory)

    def __len__(self) -> int:
        return sum(1 for _ in self.entries())


_COUNTERS = ("requests", "cache_hits", "spent_usd", "unpriced_calls", "failed_calls")


class RunStats:
    """Thread-safe counters of one comparison: requests sent, cache hits, USD spent."""

    def __init__(self, max_cost_usd: float | None = None) -> None:
        self._lock = threading.Lock()
        self.requests = 0
        self.cache_hits = 0
        self.spent_usd = 0.0
        self.unpriced_calls = 0
        self.failed_calls = 0
        self.max_cost_usd = max_cost_usd
        self.on_request: Callable[[], None] | None = None  # a progress bar counting requests

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["_lock"]
        state["on_request"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def check_budget(self) -> None:
        """Raise :class:`BudgetExceeded` once the money spent reached ``max_cost_usd``."""
        with self._lock:
            if self.max_cost_usd is not None and self.spent_usd >= self.max_cost_usd:
                raise BudgetExceeded(
                    f"this comparison already spent ${self.spent_usd:.4f}, the limit "
                    f"max_cost_usd={self.max_cost_usd:g}; no further requests are sent"
                )

    def hit(self) -> None:
        with self._lock:
            self.cache_hits += 1

    def spent(self, cost: float | None, *, answered: bool = True) -> None:
        if self.on_request is not None:
            self.on_request()
        with self._lock:
            self.requests += 1
            if not answered:
                self.failed_calls += 1
            elif cost is None:
                self.unpriced_calls += 1
            else:
                self.spent_usd += cost

    def merge(self, other: Mapping[str, Any]) -> None:
        """Add the counters of another run's :meth:`as_dict` (an executor job's)."""
        with self._lock:
            for key in _COUNTERS:
                setattr(self, key, getattr(self, key) + other.get(key, 0))

    def as_dict(self) -> dict[str, Any]:
        with self._lock:
            return {key: getattr(self, key) for key in _COUNTERS}


class CacheMiss(Exception):
    """Raised by a cache-only :class:`CachingCaller` for a request that is not cached."""


def _response_dict(response: Any) -> dict[str, Any]:
    dump = getattr(response, "model_dump", None)
    data = dump() if callable(dump) else dict(response)
    return json.loads(_canonical(data))  # type: ignore[no-any-return]


class CachingCaller(llm.Caller):
    """A copy of a :class:`memorylab.llm.Caller` whose calls are served from an :class:`LLMCache`.

    Every call (hit or miss) adds its latency — the original call's, for a hit — to
    ``latency_s``, so a re-run reports the numbers of the first. ``cache_only=True`` raises
    :class:`CacheMiss` instead of calling the model (used to estimate what a run will cost).
    """

    def __init__(
        self,
        inner: llm.Caller,
        cache: LLMCache | None,
        stats: RunStats | None = None,
        *,
        cache_only: bool = False,
        inflight: dict[str, Any] | None = None,
    ) -> None:
        self.__dict__.update(inner.__dict__)  # model, retry, llm_args, too_long_hint
        self.cache = cache
        self.stats = stats if stats is not None else RunStats()
        self.cache_only = cache_only
        self.inflight = inflight
        self.latency_s = 0.0
        self.hits = 0
        self.misses = 0

    def _lookup(self, kwargs: Mapping[str, Any], check: Callable[[Any], _T]) -> tuple[str, Any]:
        key = request_key(kwargs)
        entry = self.cache.get(key) if self.cache is not None else None
        if entry is not None and isinstance(entry.get("response"), dict):
            try:
                result = check(llm.import_litellm().ModelResponse(**entry["response"]))
            except Exception:  # an entry this version cannot read: ask again
                return key, None
            self.hits += 1
            self.latency_s += float(entry.get("latency_s") or 0.0)
            self.stats.hit()
            return key, (result,)
        if self.cache_only:
            raise CacheMiss(key)
        return key, None

    def _storing(
        self, key: str, kwargs: Mapping[str, Any], check: Callable[[Any], _T]
    ) -> tuple[Callable[[Any], _T], Callable[[], None]]:
        started = time.perf_counter()
        box: dict[str, Any] = {}

        def store(response: Any) -> _T:
            result = check(response)  # only a reply that passes the check is cached
            box["latency"] = time.perf_counter() - started
            box["cost"] = llm.response_cost(response)
            if self.cache is not None:
                payload = {k: v for k, v in kwargs.items() if k not in TRANSPORT_KEYS}
                self.cache.put(
                    key,
                    {
                        "request": payload,
                        "response": _response_dict(response),
                        "latency_s": box["latency"],
                        "created": time.time(),
                    },
                )
            return result

        def done() -> None:
            self.misses += 1
            self.latency_s += box.get("latency", time.perf_counter() - started)
            self.stats.spent(box.get("cost"), answered="latency" in box)

        return store, done

    def call(self, kwargs: Mapping[str, Any], what: str, check: Callable[[Any], _T]) -> _T:
        key, hit = self._lookup(kwargs, check)
        if hit is not None:
            return hit[0]  # type: ignore[no-any-return]
        self.stats.check_budget()
        store, done = self._storing(key, kwargs, check)
        try:
            return super().call(kwargs, what, store)
        finally:
            done()

    async def acall(self, kwargs: Mapping[str, Any], what: str, check: Callable[[Any], _T]) -> _T:
        """:meth:`call` with ``acompletion``. With ``inflight`` (a dict shared by the callers of
        one event loop), a request already on its way is awaited instead of sent twice."""
        import asyncio

        key, hit = self._lookup(kwargs, check)
        if hit is not None:
            return hit[0]  # type: ignore[no-any-return]
        pending = self.inflight.get(key) if self.inflight is not None else None
        if pending is not None and self.cache is not None:
            await asyncio.shield(pending)
            key, hit = self._lookup(kwargs, check)
            if hit is not None:
                return hit[0]  # type: ignore[no-any-return]
        self.stats.check_budget()
        store, done = self._storing(key, kwargs, check)
        mine = None
        if self.inflight is not None and self.cache is not None and key not in self.inflight:
            mine = asyncio.get_running_loop().create_future()
            self.inflight[key] = mine
        try:
            return await super().acall(kwargs, what, store)
        finally:
            done()
            if mine is not None and self.inflight is not None:
                del self.inflight[key]
                mine.set_result(None)


@dataclass(frozen=True, slots=True)
class Completion:
    """One reader/judge reply: text, usage, cost (``None``: unknown) and latency."""

    text: str
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    latency_s: float
    cached: bool


def _completion_check(model: str, allow_empty: bool) -> Callable[[Any], Completion]:
    def check(response: Any) -> Completion:
        try:
            content = response.choices[0].message.content
        except (AttributeError, IndexError, TypeError):
            raise ModelError(
                f"{model}: the provider answered without choices; check the model and api_base"
            ) from None
        text = content if isinstance(content, str) else content_to_text(content)
        if not allow_empty and (not text or not text.strip()):
            raise ModelError(f"{model} returned an empty answer; check the prompt and max_tokens")
        prompt_tokens, completion_tokens = llm.response_usage(response)
        cost = llm.response_cost(response)
        return Completion((text or "").strip(), prompt_tokens, completion_tokens, cost, 0.0, False)

    return check


class CachedLLM:
    """Chat completions for scorers (a reader, a judge): cached, retried, under a semaphore."""

    def __init__(
        self,
        cache: LLMCache | None = None,
        stats: RunStats | None = None,
        semaphore: Any = None,
        *,
        cache_only: bool = False,
        inflight: dict[str, Any] | None = None,
    ) -> None:
        self.cache = cache
        self.stats = stats if stats is not None else RunStats()
        self.semaphore = semaphore
        self.cache_only = cache_only
        self.inflight = inflight

    async def acomplete(
        self,
        model: str | llm.Caller,
        messages: Sequence[Mapping[str, Any]],
        *,
        retry: llm.RetryPolicy | None = None,
        allow_empty: bool = False,
        **llm_args: Any,
    ) -> Completion:
        """One reply of ``model`` (a litellm model name, or a :class:`memorylab.llm.Caller` that
        holds a model, its ``llm_args`` and retry policy). ``llm_args`` go to litellm
        (``temperature``, ``max_tokens``, ``api_base``, ``api_key``, ``mock_response`` ...); given
        with a ``Caller`` they are defaults its own ``llm_args`` override. ``retry`` defaults to
        ``RetryPolicy()``. An empty reply is a ``ModelError`` unless ``allow_empty`` (a reader's
        empty answer is an answer: no answer)."""
        defaults: dict[str, Any] = {"drop_params": True}
        if isinstance(model, llm.Caller):
            if retry is not None:
                raise InvalidSetting("retry= goes with a model name; a Caller has its own")
            inner = model
            defaults.update(llm_args)
        else:
            inner = llm.Caller(
                model,
                retry=llm.retry_policy(retry, llm.RetryPolicy()),
                llm_args=llm_args,
                too_long_hint="Use a model with a larger context window or a shorter history.",
            )
        caller = CachingCaller(
            inner, self.cache, self.stats, cache_only=self.cache_only, inflight=self.inflight
        )
        kwargs = caller.kwargs(defaults, {"messages": [dict(m) for m in messages]})
        check = _completion_check(inner.model, allow_empty)
        if self.semaphore is None:
            result = await caller.acall(kwargs, "", check)
        else:
            async with self.semaphore:
                result = await caller.acall(kwargs, "", check)
        return Completion(
            result.text,
            result.input_tokens,
            result.output_tokens,
            result.cost_usd,
            caller.latency_s,
            caller.hits > 0,
        )
