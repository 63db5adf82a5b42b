"""The plan's figures: what a comparison will send before it runs (internal).

Each (case, summarizer) unit is replayed without sending anything: the summary is made from the
cache alone or locally (a cache-only :class:`~memorylab.evaluate._cache.CachingCaller` raises
``CacheMiss`` on a summarizer call that is not cached), then the model scorers run on it with a
client that answers a cached call from the cache and records any other, answering it with a
stand-in so the scorer goes on to its next call. So the prompts of every request are known where
the summary is, and each request is counted once (identical prompts are one request: the cache
answers the second), cached or not. Where the summary is not known (a model's summary not
cached yet), the summarizer's and the scorers' ``estimate`` give counts.

The tokens a server with a prompt cache processes are modelled as llama.cpp's server does with
one slot and one request at a time: a request reuses the longest common prefix of its prompt
with the previous request of the same memory (the same model, case and summary), and reads the
rest. Counts come from the model's tokenizer (memorylab's, :mod:`memorylab.compress._tokens`);
a model whose speed was measured on a sample of the run's text
(:attr:`memorylab.llm.ModelSpeed.tokens_per_char`) has its processed tokens converted to the
server's own tokens.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memorylab import llm
from memorylab.compress._base import Summarizer
from memorylab.compress._tokens import get_token_counter
from memorylab.evaluate._base import PlannedCall, Scorer, run_sync
from memorylab.evaluate._cache import CachedLLM, CacheMiss, Completion, LLMCache, RunStats
from memorylab.evaluate._cases import Case
from memorylab.evaluate._engine import Context, run_unit
from memorylab.memory._format import content_to_text

if TYPE_CHECKING:
    import pandas as pd

COLUMNS = ["model", "calls", "cached_calls", "input_tokens", "processed_tokens", "output_tokens",
           "expected_output_tokens", "usd", "priced"]  # fmt: skip
"""The plan's table, one row per model: requests not cached, the cached ones, their prompt
tokens read cold, the tokens a server with a prompt cache processes, the reply tokens at most
and as expected, the USD at litellm's prices (input cold, output at most)."""

STAND_IN = "(planned)"
"""The reply a recorded request gets while planning (a non-empty answer: a grader is asked)."""


@dataclass(frozen=True, slots=True)
class _Request:
    """One request of the plan: its identity (the cache key, or the prompt), its prompt when
    known (``text``, as the server reads it), or counts; the memory whose prompt-cache slot it
    goes to; whether the cache answers it."""

    model: str
    identity: Any
    memory: tuple[Any, ...]
    cached: bool
    output_tokens: int
    expected_output_tokens: int
    text: str | None = None
    input_tokens: int = 0
    shared_tokens: int = 0


def _prompt_text(messages: Sequence[Mapping[str, Any]]) -> str:
    """The messages as one text in order, as a chat template lays them out (role, content)."""
    return "".join(f"{m.get('role')}\n{content_to_text(m.get('content'))}\n" for m in messages)


class _PlanningLLM:
    """The scorers' client while planning (module docstring): records each request of one
    memory in ``sent`` as ``(model, identity, prompt, max_tokens, cached)``."""

    def __init__(self, cache: LLMCache | None, sent: list[tuple[str, Any, str, int, bool]]) -> None:
        self.inner = CachedLLM(cache, RunStats(), None, cache_only=True)
        self.sent = sent

    async def acomplete(self, model: str | llm.Caller, messages: Sequence[Mapping[str, Any]],
                        **options: Any) -> Completion:  # fmt: skip
        text = _prompt_text(messages)
        name = model.model if isinstance(model, llm.Caller) else model
        limit = options.get("max_tokens")
        if limit is None and isinstance(model, llm.Caller):
            limit = model.llm_args.get("max_tokens")
        try:
            reply = await self.inner.acomplete(model, messages, **options)
        except CacheMiss as miss:
            self.sent.append((name, miss.args[0] if miss.args else text, text, limit or 0, False))
            return Completion(STAND_IN, None, None, None, 0.0, False)
        self.sent.append((name, (name, text, limit), text, limit or 0, True))
        return reply


@dataclass
class _PlanningContext(Context):
    sent: list[tuple[str, Any, str, int, bool]] = dataclasses.field(default_factory=list)

    def llm(self) -> Any:
        return _PlanningLLM(self.cache, self.sent)


def _expected_length(call: PlannedCall) -> int:
    expected = call.expected_output_tokens
    return call.output_tokens if expected is None else expected


def _expected(calls: list[PlannedCall]) -> dict[tuple[str, int], int]:
    """The expected reply length of a model's calls of a given bound, averaged (a recorded
    request is matched to the estimate's calls by its model and ``max_tokens``)."""
    lengths: dict[tuple[str, int], list[int]] = {}
    for call in calls:
        lengths.setdefault((call.model, call.output_tokens), []).append(_expected_length(call))
    return {key: round(sum(v) / len(v)) for key, v in lengths.items()}


def _calls(listed: Sequence[Any]) -> list[PlannedCall]:
    return [PlannedCall(*call) for call in listed]


def _unit_requests(
    units: list[tuple[Case, str, Summarizer]],
    scorers: list[Scorer],
    cache: LLMCache | None,
    max_tokens: int | None,
) -> list[_Request]:
    """Every request of the units, in the order the engine sends them per memory."""
    needs_model = [s for s in scorers if not s.offline]
    semaphore: list[asyncio.Semaphore] = []
    cached_any = cache is not None and next(cache.entries(), None) is not None

    async def replay(case: Case, label: str, summarizer: Summarizer) -> list[_Request]:
        made = _calls(summarizer.estimate(case.messages, max_tokens))
        if not made and not needs_model:
            return []
        ctx = _PlanningContext(cache, RunStats(), 8, max_tokens, cache_only=True,
                               semaphore=semaphore[0])  # fmt: skip
        bound = max_tokens or summarizer.max_tokens or 1024
        record = None  # the summary is a model's, not cached yet: counts
        if summarizer.local or cached_any:  # (an empty cache: nor litellm to import to read it)
            with contextlib.suppress(CacheMiss):
                _, record = await run_unit(case, label, summarizer, needs_model, ctx)
        own = (case.id, id(summarizer))  # one summary per memory, whatever its label
        out = [_Request(c.model, (own, index), own, record is not None, c.output_tokens,
                        c.output_tokens, input_tokens=c.input_tokens)
               for index, c in enumerate(made)]  # fmt: skip
        if record is None:
            for scorer in needs_model:
                memory = (case.id, label, scorer.name)
                for index, c in enumerate(_calls(scorer.estimate(case, bound))):
                    out.append(_Request(c.model, (memory, index), (c.model, *memory), False,
                                        c.output_tokens, _expected_length(c),
                                        input_tokens=c.input_tokens,
                                        shared_tokens=c.shared_tokens))  # fmt: skip
            return out
        if record["error"] is not None:  # the summary fails: the run sends no scorer call
            return out
        text = str(record["text"])
        summary_tokens = get_token_counter(None).count(text)
        lengths = _expected(
            [c for s in needs_model for c in _calls(s.estimate(case, summary_tokens))]
        )
        for model, identity, prompt, limit, cached in ctx.sent:
            out.append(_Request(model, identity, (model, case.id, text), cached, limit,
                                lengths.get((model, limit), limit), text=prompt))  # fmt: skip
        return out

    async def replay_all() -> list[list[_Request]]:
        semaphore.append(asyncio.Semaphore(8))
        return list(await asyncio.gather(*(replay(*unit) for unit in units)))

    return [request for group in run_sync(replay_all) for request in group]


def _shared_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of ``a`` and ``b`` (compared in C, by halves)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


@dataclass
class _Totals:
    calls: int = 0
    cached_calls: int = 0
    input_tokens: int = 0
    processed_tokens: float = 0.0
    output_tokens: int = 0
    expected_output_tokens: int = 0
    known_chars: int = 0  # of the processed text of known prompts
    known_tokens: int = 0  # the same, counted


def _totals(requests: list[_Request], dedupe: bool) -> dict[str, _Totals]:
    """Per model: the distinct requests (``dedupe``: identical ones once, as the cache answers
    the second), the cached ones, and the tokens the uncached ones read cold and with a prompt
    cache of one slot per memory."""
    totals: dict[str, _Totals] = {}
    seen: set[Any] = set()
    previous: dict[tuple[Any, ...], str] = {}  # each memory's slot: its last prompt
    prefix_tokens: dict[tuple[str, str], int] = {}
    for request in requests:
        if dedupe and request.identity in seen:
            continue
        seen.add(request.identity)
        total = totals.setdefault(request.model, _Totals())
        if request.cached:
            total.cached_calls += 1
            continue
        total.calls += 1
        total.output_tokens += request.output_tokens
        total.expected_output_tokens += request.expected_output_tokens
        if request.text is None:
            total.input_tokens += request.input_tokens
            total.processed_tokens += request.input_tokens - request.shared_tokens
            continue
        count = get_token_counter(request.model).count
        last = previous.get(request.memory, "")
        previous[request.memory] = request.text
        shared = request.text[: _shared_prefix(last, request.text)]
        rest = count(request.text[len(shared) :])
        if shared and (request.model, shared) not in prefix_tokens:
            prefix_tokens[request.model, shared] = count(shared)
        total.input_tokens += rest + (prefix_tokens[request.model, shared] if shared else 0)
        total.processed_tokens += rest
        total.known_chars += len(request.text) - len(shared)
        total.known_tokens += rest
    return totals


def _server_tokens(total: _Totals, speed: llm.ModelSpeed | None) -> float:
    """The processed tokens in the server's own tokens where its speed says how many it reads
    per character (the known prompts' characters; counts at the known prompts' characters per
    counted token), else as counted."""
    per_char = speed.tokens_per_char if speed is not None else None
    if not per_char or not total.known_tokens:
        return total.processed_tokens
    counted_only = total.processed_tokens - total.known_tokens
    chars_per_token = total.known_chars / total.known_tokens
    return per_char * (total.known_chars + counted_only * chars_per_token)


def estimate_units(
    items: list[Case],
    resolved: Mapping[str, Summarizer],
    scorer_list: list[Scorer],
    cache: LLMCache | None,
    max_tokens: int | None,
    speeds: Mapping[str, llm.ModelSpeed] | None = None,
) -> pd.DataFrame:
    """The plan's table (:data:`COLUMNS`) of resolved cases, summarizers and scorers (see
    :func:`memorylab.evaluate._compare.estimate_cost`)."""
    import pandas as pd

    units = [(case, label, summarizer) for case in items for label, summarizer in resolved.items()]
    requests = _unit_requests(units, scorer_list, cache, max_tokens)
    rows = []
    for model, total in sorted(_totals(requests, dedupe=cache is not None).items()):
        price = llm.token_prices(model)
        usd = (0.0 if price is None
               else total.input_tokens * price[0] + total.output_tokens * price[1])  # fmt: skip
        processed = _server_tokens(total, (speeds or {}).get(model))
        rows.append((model, total.calls, total.cached_calls, total.input_tokens,
                     round(processed), total.output_tokens, total.expected_output_tokens, usd,
                     price is not None))  # fmt: skip
    return pd.DataFrame(rows, columns=COLUMNS)
