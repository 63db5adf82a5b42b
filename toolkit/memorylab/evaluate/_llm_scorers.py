"""Scorers that ask a model: probe questions answered by a reader, and an LLM judge.

Both send their calls through :class:`memorylab.evaluate._cache.CachedLLM` (cached on disk,
retried with backoff, under the comparison's semaphore). The prompts are the named constants
below; a change to them changes the cache keys, so old answers are not reused by mistake.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from memorylab.compress.baselines import HeadTailSummarizer
from memorylab.compress.tokens import get_token_counter
from memorylab.errors import InvalidSetting
from memorylab.evaluate.base import NAN, BaseScorer, Sample, Score

if TYPE_CHECKING:
    from memorylab.evaluate._cache import CachedLLM
    from memorylab.evaluate.cases import Case
    from memorylab.llm import RetryPolicy

READER_SYSTEM_PROMPT = (
    "You answer questions about an AI agent's earlier work using only the notes you are "
    "given. Never guess and never use outside knowledge."
)

READER_PROMPT = (
    "<notes>\n{summary}\n</notes>\n\n"
    "Question: {question}\n\n"
    "Answer with the exact value from the notes (a number, file path, command, name or short "
    "phrase) and nothing else. If the notes do not contain the answer, answer UNKNOWN."
)

JUDGE_SYSTEM_PROMPT = (
    "You are a strict evaluator of summaries of AI agent conversations. You reply with one "
    "JSON object and nothing else."
)

JUDGE_CRITERIA = ("faithfulness", "coverage", "usefulness")
"""The rubric's criteria, each rated 1-5 by the judge and reported as (rating - 1) / 4."""

JUDGE_PROMPT = (
    "Rate the SUMMARY of the TRANSCRIPT below on three criteria, each an integer from 1 (very "
    "poor) to 5 (excellent):\n"
    "- faithfulness: every statement of the summary is supported by the transcript; nothing is "
    "invented or changed (numbers, file paths, commands, names);\n"
    "- coverage: the summary keeps the task, the instructions, the decisions, the facts "
    "(numbers, file paths, commands, names) and the current state of the work;\n"
    "- usefulness: an agent given only the summary could continue the task without asking "
    "again.\n\n"
    'Reply with one JSON object: {{"faithfulness": <1-5>, "coverage": <1-5>, '
    '"usefulness": <1-5>, "explanation": "<one or two sentences>"}}\n\n'
    "<transcript>\n{transcript}\n</transcript>\n\n<summary>\n{summary}\n</summary>"
)

LOOKUP_READER = "memorylab/lookup"
"""The offline reader: answers with the summary line that shares most words with the question."""

_WORD = re.compile(r"[\w./\-]+")
_STOP_WORDS = (
    "a an the and or of to in on at for with by from is are was were be what which who "
    "whom whose when where why how does do did has have had it its this that we you our "
    "your they their there should would will can could used use using set name value"
)
_STOP = frozenset(_STOP_WORDS.split())


# --------------------------------------------------------------------------- grading


def _words(text: str) -> set[str]:
    from memorylab.evaluate.facts import _stem, normalize

    words = {w.strip(".-/:,;!?") for w in _WORD.findall(normalize(text))} - _STOP - {""}
    return {_stem(w) for w in words}


def lookup_answer(question: str, summary: str) -> str:
    """The offline reader: the line (or sentence) of ``summary`` sharing the most words (stop
    words dropped, crudely stemmed) with ``question``, or ``"UNKNOWN"`` when none shares any.

    >>> lookup_answer("Which port does staging use?", "Task: deploy.\\nStaging uses port 8443.")
    'Staging uses port 8443.'
    """
    wanted = _words(question)
    best, best_line = 0, "UNKNOWN"
    for raw in re.split(r"\n+|(?<=[.!?])\s+", summary):
        line = raw.strip()
        if not line:
            continue
        overlap = len(wanted & _words(line))
        if overlap > best:
            best, best_line = overlap, line
    return best_line


def grade_answer(answer: str, expected: str) -> tuple[bool, bool, float]:
    """``(exact, fuzzy, similarity)`` of a reader's ``answer`` against the ``expected`` one.

    *exact*: the normalized expected answer occurs whole in the normalized reply (a reply of
    just the value, or a sentence containing it). *fuzzy*: exact, or rapidfuzz
    ``partial_ratio`` >= 85 (or the same characters without spaces and punctuation: ``250ms``)
    and every number of the expected answer present with the same value. A reply of ``UNKNOWN`` is
    neither.
    """
    from rapidfuzz import fuzz

    from memorylab.evaluate.facts import _find_whole, _squash, normalize, numbers_in

    reply, want = normalize(answer), normalize(expected)
    if not want or not reply or reply.strip(" .") == "unknown":
        return False, False, 0.0
    exact = _find_whole(want, reply) >= 0
    similarity = float(fuzz.partial_ratio(want, reply))
    if _squash(want) and _squash(want) in _squash(reply):
        similarity = 100.0  # the same characters, spaced or punctuated differently
    have = set(numbers_in(reply))
    numbers_ok = all(n in have for n in numbers_in(want))
    return exact, exact or (similarity >= 85.0 and numbers_ok), similarity


# --------------------------------------------------------------------------- probe QA


class ProbeQAScorer(BaseScorer):
    """A reader answers each probe of the case from the summary alone.

    ``reader``: a litellm model name (called through the comparison's cache, with
    ``llm_args`` such as ``api_base``/``api_key`` and the ``retry`` policy), :data:`LOOKUP_READER`
    (the default, offline: :func:`lookup_answer`) or a function ``(question, summary) -> answer``.
    Metrics ``exact`` and ``fuzzy`` (see :func:`grade_answer`) are shares of the case's probes
    (NaN without probes).
    """

    name = "probe_qa"

    def __init__(
        self,
        reader: str | Callable[[str, str], str] = LOOKUP_READER,
        *,
        llm_args: Mapping[str, Any] | None = None,
        max_tokens: int = 64,
        retry: RetryPolicy | None = None,
    ) -> None:
        if not (callable(reader) or (isinstance(reader, str) and reader.strip())):
            raise InvalidSetting(f"reader must be a model name or a function, not {reader!r}")
        self.reader = reader
        self.llm_args = dict(llm_args or {})
        self.max_tokens = max_tokens
        self.retry = retry

    def __repr__(self) -> str:
        return f"ProbeQAScorer(reader={self.reader!r})"

    @property
    def offline(self) -> bool:
        return not isinstance(self.reader, str) or self.reader == LOOKUP_READER

    def _messages(self, question: str, summary: str) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": READER_SYSTEM_PROMPT},
            {"role": "user", "content": READER_PROMPT.format(summary=summary, question=question)},
        ]

    def estimate(self, case: Case, summary_tokens: int) -> list[tuple[str, int, int]]:
        if self.offline or not isinstance(self.reader, str):
            return []
        overhead = 120
        return [(self.reader, summary_tokens + overhead, self.max_tokens) for _ in case.probes]

    def _local_answer(self, question: str, summary: str) -> tuple[str, float]:
        if callable(self.reader):
            return str(self.reader(question, summary)), 0.0
        return lookup_answer(question, summary), 0.0

    async def _answer(self, question: str, summary: str, llm: CachedLLM) -> tuple[str, float]:
        if self.offline:
            return self._local_answer(question, summary)
        options = {"temperature": 0.0, "max_tokens": self.max_tokens, **self.llm_args}
        messages = self._messages(question, summary)
        reply = await llm.acomplete(str(self.reader), messages, retry=self.retry, **options)
        return reply.text, reply.cost_usd if reply.cost_usd is not None else NAN

    def score(self, sample: Sample) -> Mapping[str, Score]:
        if not self.offline:
            return super().score(sample)
        probes = sample.case.probes
        return self._grade(sample, [self._local_answer(p.question, sample.text) for p in probes])

    async def ascore(self, sample: Sample, llm: CachedLLM) -> Mapping[str, Score]:
        answers = await asyncio.gather(
            *(self._answer(p.question, sample.text, llm) for p in sample.case.probes)
        )
        return self._grade(sample, list(answers))

    def _grade(self, sample: Sample, answers: list[tuple[str, float]]) -> Mapping[str, Score]:
        probes = sample.case.probes
        if not probes:
            none = Score(NAN, "the case has no probes", {"n": 0})
            return {"exact": none, "fuzzy": none}
        exact = fuzzy = 0
        wrong: list[str] = []
        for probe, (answer, _cost) in zip(probes, answers, strict=True):
            is_exact, is_fuzzy, _ = grade_answer(answer, probe.answer)
            exact += is_exact
            fuzzy += is_fuzzy
            if not is_fuzzy:
                wrong.append(f"{probe.id}: expected {probe.answer!r}, got {answer[:60]!r}")
        costs = [c for _, c in answers]
        cost = NAN if any(math.isnan(c) for c in costs) else sum(costs)
        n = len(probes)
        meta = {"n": n, "wrong": wrong, "cost_usd": cost, "reader": str(self.reader)}
        why = "; ".join(wrong[:5]) + (f" (+{len(wrong) - 5} more)" if len(wrong) > 5 else "")
        return {
            "exact": Score(exact / n, f"{exact}/{n} exact", meta),
            "fuzzy": Score(fuzzy / n, f"{fuzzy}/{n} fuzzy" + (f"; {why}" if why else ""), meta),
        }


# --------------------------------------------------------------------------- judge


def _json_objects(text: str) -> list[str]:
    """Balanced ``{...}`` substrings of ``text`` (strings respected), outermost first."""
    found, depth, start, in_string, escaped = [], 0, -1, False, False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"' and depth:
            in_string = True
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                found.append(text[start : i + 1])
    return found


def _loads_lenient(text: str) -> Any:
    for candidate in (text, re.sub(r",\s*([}\]])", r"\1", text)):
        try:
            return json.loads(candidate)
        except ValueError:
            pass
        try:
            return json.loads(candidate.replace("'", '"'))
        except ValueError:
            pass
    return None


def _rating(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        match = re.search(r"-?\d+(?:\.\d+)?", value)
        if match is None:
            return None
        number = float(match.group(0))
    elif isinstance(value, Mapping):
        return _rating(value.get("score", value.get("rating")))
    else:
        return None
    return None if math.isnan(number) else min(5.0, max(1.0, number))


def parse_judge_reply(text: str) -> tuple[dict[str, float], str]:
    """The judge's ratings (1-5, clamped) by criterion and its explanation.

    Tolerates code fences, prose around the JSON, single quotes, trailing commas, ratings as
    strings (``"4/5"``) or objects (``{"score": 4}``), keys in any case, and as a last resort
    ``faithfulness: 4`` lines. Raises ``ValueError`` when no criterion can be read.

    >>> parse_judge_reply('Sure! ```json\\n{"Faithfulness": 5, "coverage": "3/5", '
    ...                   '"usefulness": 4,}\\n```')
    ({'faithfulness': 5.0, 'coverage': 3.0, 'usefulness': 4.0}, '')
    """
    ratings: dict[str, float] = {}
    explanation = ""
    for candidate in _json_objects(text):
        data = _loads_lenient(candidate)
        if not isinstance(data, Mapping):
            continue
        lowered = {str(k).strip().lower(): v for k, v in data.items()}
        for criterion in JUDGE_CRITERIA:
            value = _rating(lowered.get(criterion))
            if value is not None:
                ratings.setdefault(criterion, value)
        if not explanation and isinstance(lowered.get("explanation"), str):
            explanation = lowered["explanation"]
        if len(ratings) == len(JUDGE_CRITERIA):
            break
    for criterion in JUDGE_CRITERIA:
        if criterion not in ratings:
            match = re.search(
                rf"{criterion}\W{{0,3}}\s*[:=]?\s*\W?\s*(\d+(?:\.\d+)?)", text, re.IGNORECASE
            )
            if match is not None:
                ratings[criterion] = min(5.0, max(1.0, float(match.group(1))))
    if not ratings:
        raise ValueError(f"the judge's reply has no ratings: {text[:200]!r}")
    return {c: ratings[c] for c in JUDGE_CRITERIA if c in ratings}, explanation


class JudgeScorer(BaseScorer):
    """An LLM rates the summary against the history (:data:`JUDGE_PROMPT`).

    Metrics: each criterion of :data:`JUDGE_CRITERIA` as ``(rating - 1) / 4`` in [0, 1] and
    their mean ``overall``. A history longer than ``max_history_tokens`` is shown to the judge
    as its head and tail (noted in the explanation). ``llm_args`` go to litellm; ``retry`` is
    the calls' :class:`~memorylab.llm.RetryPolicy`.
    """

    name = "judge"

    def __init__(
        self,
        model: str | None = None,
        *,
        llm_args: Mapping[str, Any] | None = None,
        max_history_tokens: int = 12_000,
        max_tokens: int = 300,
        retry: RetryPolicy | None = None,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InvalidSetting(
                "the judge needs a model: get_scorer('judge', model='gpt-4o-mini') (any litellm "
                "model name; llm_args={'api_base': ...} for a local server)"
            )
        self.model = model
        self.llm_args = dict(llm_args or {})
        self.max_history_tokens = max_history_tokens
        self.max_tokens = max_tokens
        self.retry = retry

    def __repr__(self) -> str:
        return f"JudgeScorer({self.model!r})"

    @property
    def offline(self) -> bool:
        return False

    def _transcript(self, case: Case) -> tuple[str, bool]:
        text = case.history_text
        if get_token_counter(None).count(text) <= self.max_history_tokens:
            return text, False
        cut = HeadTailSummarizer(self.max_history_tokens, head_share=0.5)
        return cut.summarize(case.messages).text, True

    def estimate(self, case: Case, summary_tokens: int) -> list[tuple[str, int, int]]:
        history = min(get_token_counter(None).count(case.history_text), self.max_history_tokens)
        return [(self.model, history + summary_tokens + 400, self.max_tokens)]

    async def ascore(self, sample: Sample, llm: CachedLLM) -> Mapping[str, Score]:
        transcript, cut = await asyncio.to_thread(self._transcript, sample.case)
        messages = [
            {"role": "system", "content": JUDGE_SYSTEM_PROMPT},
            {
                "role": "user",
                "content": JUDGE_PROMPT.format(transcript=transcript, summary=sample.text),
            },
        ]
        options = {"temperature": 0.0, "max_tokens": self.max_tokens, **self.llm_args}
        reply = await llm.acomplete(self.model, messages, retry=self.retry, **options)
        ratings, explanation = parse_judge_reply(reply.text)
        note = " (the judge saw the head and tail of a long history)" if cut else ""
        meta = {"ratings": ratings, "cost_usd": reply.cost_usd, "judge": self.model}
        out: dict[str, Score] = {}
        for criterion in JUDGE_CRITERIA:
            rating = ratings.get(criterion)
            value = NAN if rating is None else (rating - 1.0) / 4.0
            out[criterion] = Score(value, f"{rating:g}/5{note}" if rating else "missing", meta)
        present = [s.value for s in out.values() if not math.isnan(s.value)]
        out["overall"] = Score(sum(present) / len(present), explanation + note, meta)
        return out
