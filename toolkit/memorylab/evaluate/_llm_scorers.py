"""Scorers that ask a model: probe questions answered by a reader, and an LLM judge.

Both send their calls through :class:`memorylab.evaluate._cache.CachedLLM` (cached on disk,
retried with backoff, under the comparison's semaphore). Every model is a litellm model name
with ``llm_args`` (the same everywhere: :class:`memorylab.llm.Caller`), so a server on this
machine (``"openai/<name>"`` with ``llm_args={"api_base": ...}``) works like a hosted one. The
prompts are parameters, with the named constants below as defaults; a change to them changes
the cache keys, so old answers are not reused by mistake. ``name=`` gives a scorer a name of its
own, so two readers (the lexical baseline and a model, or two models) score in one run.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memorylab import llm
from memorylab.compress._baselines import HeadTailSummarizer
from memorylab.compress._tokens import get_token_counter
from memorylab.errors import InvalidSetting, ModelError
from memorylab.evaluate._base import NAN, BaseScorer, PlannedCall, Sample, Score
from memorylab.evaluate._grading import (
    GRADER_PROMPT,
    GRADER_SYSTEM_PROMPT,
    answer_span,
    cut_to_tokens,
    grade_answer,
    listed_candidates,
    parse_grade,
    relative_date,
)
from memorylab.evaluate._recall_condition import RecalledSummary
from memorylab.memory import _format as fmt

if TYPE_CHECKING:
    from memorylab.evaluate._cache import CachedLLM
    from memorylab.evaluate._cases import Case
    from memorylab.transcripts import Probe

READER_SYSTEM_PROMPT = (
    "You answer questions about an earlier conversation using only the notes you are given. "
    "Never guess and never use outside knowledge."
)

READER_PROMPT = (
    "<notes>\n{summary}\n</notes>\n\n"
    "Answer the question below in a few words, from the notes and any recalled messages that "
    "follow them, with the exact names, numbers, dates, paths or commands they use. Give a date "
    "as the date itself (day, month, year), worked out from the dates they carry, never as "
    '"yesterday" or "last week". If they do not contain the answer, answer UNKNOWN.\n\n'
    "{recalled}Question: {question}"
)
"""The reader's prompt: ``{summary}``, ``{recalled}`` and ``{question}`` are filled in (a probe
asked on a known date gets ``(asked on <date>)`` after its question; ``{recalled}`` is empty, or
the recalled messages of a reader with recall as ``<recalled>...</recalled>`` and a blank line).
What every probe of one memory shares comes first (the system prompt, the notes, the
instructions), which a server with a prompt cache reads once; then what is each probe's own,
the recalled messages and the question, so the probes after the first read only those. A
template of your own without ``{recalled}`` gets the recalled messages after the memory in
``{summary}``, as before (each probe then reads again all the template puts after it)."""

JUDGE_SYSTEM_PROMPT = (
    "You are a strict evaluator of summaries of conversations. You reply with one JSON object "
    "and nothing else."
)

JUDGE_CRITERIA = ("faithfulness", "coverage", "usefulness")
"""The rubric's criteria, each rated 1-5 by the judge and reported as (rating - 1) / 4."""

JUDGE_PROMPT = (
    "Rate the SUMMARY of the TRANSCRIPT below on three criteria, each an integer from 1 (very "
    "poor) to 5 (excellent):\n"
    "- faithfulness: every statement of the summary is supported by the transcript; nothing is "
    "invented or changed (numbers, dates, names, file paths, commands);\n"
    "- coverage: the summary keeps the task or topics, the instructions, the decisions, the "
    "facts (numbers, dates, names, file paths, commands) and the current state;\n"
    "- usefulness: someone given only the summary could continue the conversation or the work "
    "without asking again.\n\n"
    'Reply with one JSON object: {{"faithfulness": <1-5>, "coverage": <1-5>, '
    '"usefulness": <1-5>, "explanation": "<one or two sentences>"}}\n\n'
    "<transcript>\n{transcript}\n</transcript>\n\n<summary>\n{summary}\n</summary>"
)
"""The judge's prompt: ``{transcript}`` and ``{summary}`` are filled in."""

LOOKUP_READER = "memorylab/lookup"
"""The lexical baseline (offline, no model): answers with the summary line that shares most words
with the question. It is not a reader: it measures that an answer is present and findable by
its words, nothing more."""

_WORD = re.compile(r"[\w./\-]+")
_STOP_WORDS = (
    "a an the and or of to in on at for with by from is are was were be what which who "
    "whom whose when where why how does do did has have had it its this that we you our "
    "your they their there should would will can could used use using set name value"
)
_STOP = frozenset(_STOP_WORDS.split())


def _check_prompt(label: str, prompt: Any, fields: tuple[str, ...]) -> str:
    if not isinstance(prompt, str) or not prompt.strip():
        raise InvalidSetting(f"{label} must be a non-empty template string")
    missing = [f for f in fields if "{" + f + "}" not in prompt]
    if missing:
        raise InvalidSetting(
            f"{label} must contain the fields {', '.join('{' + f + '}' for f in fields)}; "
            f"missing: {', '.join('{' + f + '}' for f in missing)} (literal braces: {{{{ }}}})"
        )
    return prompt


def _words(text: str) -> set[str]:
    from memorylab._facts import normalize, word_stem

    words = {w.strip(".-/:,;!?") for w in _WORD.findall(normalize(text))} - _STOP - {""}
    return {word_stem(w) for w in words}


def lookup_answer(question: str, summary: str) -> str:
    """The lexical baseline: the line (or sentence) of ``summary`` sharing the most words (stop
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


# --------------------------------------------------------------------------- probe QA


_RECALLED_TOKENS = 200  # a recalled message in the cost estimate (a message and its heading)
_JUDGE_REPLY_TOKENS = 80  # the judge's JSON: three ratings and one or two sentences


def _joined(memory: str, recalled: str) -> str:
    """The memory and the recalled messages as one text (a reader without a ``{recalled}``
    field: the lexical baseline, a function, a template of one's own)."""
    return f"{memory}\n\n{recalled}" if recalled else memory


def _question(probe: Probe) -> str:
    asked_at = getattr(probe, "asked_at", None)
    return f"{probe.question} (asked on {asked_at})" if asked_at else probe.question


class ProbeQAScorer(BaseScorer):
    """A reader answers each probe of the case from the summary alone; the answers are graded.

    ``reader``: a litellm model name (called through the comparison's cache with ``llm_args``
    and ``retry``), :data:`LOOKUP_READER` (the default: the offline lexical baseline,
    :func:`lookup_answer`) or a function ``(question, summary) -> answer``. ``prompt`` /
    ``system_prompt``: the reader's (defaults :data:`READER_PROMPT`,
    :data:`READER_SYSTEM_PROMPT`). ``grader``: a litellm model that also grades each answer
    against the reference (metric ``llm``, prompts ``grader_prompt`` / ``grader_system_prompt``,
    options ``grader_args``, as the LoCoMo and mem0 evaluations grade).

    Metrics, shares of the case's answered probes (NaN without any): ``exact`` and ``fuzzy``
    (:func:`memorylab.evaluate._grading.grade_answer`: dates, number words, case, articles and
    punctuation normalized), and ``llm`` with a ``grader``. What is graded is the answer, not
    all the reader wrote: a model's reply cut at ``max_tokens`` (a server may ignore it; counted
    as ``cut``), then its first line (:func:`~memorylab.evaluate._grading.answer_span`). A date
    given as relative ("last Saturday") where the reference is a date is wrong and counted
    (``relative``); an empty reply is an answer (no answer, ``empty``). A probe whose reader
    call fails (a timeout, after the retries) fails alone: it is left out of ``n`` and named
    in ``failed``, and the other probes are graded. Each metric carries the per-probe outcomes
    (``metadata["items"]``, ``nan`` for a failed probe) for the confidence intervals of a
    comparison, and the answers (``metadata["answers"]``).

    Recall: the reader of each probe of a memory condition with recall
    (``compare_summarizers(recall=(0, 5))``: ``"<memory> + recall 5"``) gets the memory and the
    ``k`` messages of the case's history that best match its question among those that left
    the memory (BM25, the ranking of :func:`memorylab.memory._recall`), as an agent with a
    ``recall`` tool would fetch them, after the instructions and before the question
    (:data:`READER_PROMPT`). ``recall_k`` is the scorer-side form, kept for compatibility: this
    scorer recalls ``recall_k`` messages for every memory but a recall condition's (which says
    its own depth), and is then named ``probe_qa_recall`` unless ``name`` says otherwise.

    Known failure modes: the lexical baseline answers with whole lines, so a line that holds
    the answer among other words counts as exact, and a question that shares no words with the
    line holding its answer is missed; a model reader can answer from world knowledge, which
    the prompt forbids but cannot prevent; a small model drifts from the expected form (the
    grader helps); exact grading accepts a hedge that contains the answer ("3 or 4").
    """

    name = "probe_qa"

    def __init__(
        self,
        reader: str | Callable[[str, str], str] = LOOKUP_READER,
        *,
        llm_args: Mapping[str, Any] | None = None,
        max_tokens: int = 64,
        retry: llm.RetryPolicy | None = None,
        prompt: str = READER_PROMPT,
        system_prompt: str = READER_SYSTEM_PROMPT,
        grader: str | None = None,
        grader_args: Mapping[str, Any] | None = None,
        grader_prompt: str = GRADER_PROMPT,
        grader_system_prompt: str = GRADER_SYSTEM_PROMPT,
        name: str | None = None,
        recall_k: int = 0,
    ) -> None:
        if not (callable(reader) or (isinstance(reader, str) and reader.strip())):
            raise InvalidSetting(f"reader must be a model name or a function, not {reader!r}")
        self.reader = reader
        self.recall_k = llm.check_int("recall_k", recall_k, 0)
        if self.recall_k and name is None:
            name = "probe_qa_recall"
        self.max_tokens = llm.check_int("max_tokens", max_tokens, 1)
        self.prompt = _check_prompt("prompt", prompt, ("summary", "question"))
        self.system_prompt = str(system_prompt)
        self.caller: llm.Caller | None = None
        if isinstance(reader, str) and reader != LOOKUP_READER:
            self.caller = llm.Caller(reader, retry=retry, llm_args=llm_args)
        elif llm_args:
            raise InvalidSetting("llm_args apply to a model reader only (reader='<model>')")
        self.grader: llm.Caller | None = None
        if grader is not None:
            self.grader = llm.Caller(grader, retry=retry, llm_args=grader_args)
        self.grader_prompt = _check_prompt(
            "grader_prompt", grader_prompt, ("question", "expected", "answer")
        )
        self.grader_system_prompt = str(grader_system_prompt)
        if name is not None:
            self.name = check_scorer_name(name)

    @property
    def llm_args(self) -> dict[str, Any]:
        return dict(self.caller.llm_args) if self.caller is not None else {}

    @property
    def retry(self) -> llm.RetryPolicy | None:
        return self.caller.retry if self.caller is not None else None

    def __repr__(self) -> str:
        grader = f", grader={self.grader.model!r}" if self.grader is not None else ""
        named = f", name={self.name!r}" if self.name != type(self).name else ""
        recalled = f", recall_k={self.recall_k}" if self.recall_k else ""
        return f"ProbeQAScorer(reader={self.reader!r}{grader}{recalled}{named})"

    @property
    def offline(self) -> bool:
        return self.caller is None and self.grader is None

    def estimate(self, case: Case, summary_tokens: int) -> list[PlannedCall]:
        """A reader call per probe (the memory, the instructions, the question, the recalled
        messages), each after the first sharing its memory and instructions with the one before
        (a prompt cache reads them once); a grader call per probe. The expected reply: the
        reference answer's tokens and one more (the prompt asks for a few words; a reader that
        rambles writes up to ``max_tokens``, the plan's "at most"); the grader's, one word."""
        calls: list[PlannedCall] = []
        if self.caller is not None:
            count = get_token_counter(self.caller.model).count
            before, _, after = self.prompt.partition("{question}")
            shared = (summary_tokens + count(self.system_prompt)
                      + count(before.replace("{summary}", "")))  # fmt: skip
            for index, probe in enumerate(case.probes):
                own = count(_question(probe) + after) + self.recall_k * _RECALLED_TOKENS
                expected = min(self.max_tokens, count(probe.answer) + 1)
                calls.append(PlannedCall(self.caller.model, shared + own, self.max_tokens,
                                         shared if index else 0, expected))  # fmt: skip
        if self.grader is not None:
            calls += [PlannedCall(self.grader.model, 200 + self.max_tokens, 8, 0, 2)] * len(
                case.probes
            )
        return calls

    def _local_answer(self, question: str, summary: str) -> _Answer:
        if callable(self.reader):
            return _Answer(str(self.reader(question, summary)))
        return _Answer(lookup_answer(question, summary))

    async def _answer(self, question: str, memory: str, recalled: str, llm_: CachedLLM
                      ) -> _Answer:  # fmt: skip
        if self.caller is None:
            return self._local_answer(question, _joined(memory, recalled))
        messages = [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": self._prompt(question, memory, recalled)},
        ]
        try:
            reply = await llm_.acomplete(self.caller, messages, temperature=0.0,
                                         max_tokens=self.max_tokens, allow_empty=True)  # fmt: skip
        except ModelError as exc:  # this probe fails alone
            return _Answer("", NAN, error=f"{type(exc).__name__}: {exc}"[:300])
        count = get_token_counter(self.caller.model).count
        text, cut = cut_to_tokens(reply.text, self.max_tokens, count)
        return _Answer(text, reply.cost_usd if reply.cost_usd is not None else NAN, cut)

    async def _grade_llm(
        self, probe: Probe, answer: _Answer, llm_: CachedLLM
    ) -> tuple[float, float]:
        """``(verdict, cost)``: 1.0 or 0.0, NaN when the reader or the grader failed."""
        assert self.grader is not None
        if answer.error is not None:
            return NAN, 0.0
        span = answer_span(answer.text)
        if not span or span.strip(" .").upper() == "UNKNOWN":
            return 0.0, 0.0
        content = self.grader_prompt.format(
            question=probe.question, expected=probe.answer, answer=span
        )
        messages = [
            {"role": "system", "content": self.grader_system_prompt},
            {"role": "user", "content": content},
        ]
        try:
            reply = await llm_.acomplete(self.grader, messages, temperature=0.0, max_tokens=8)
            verdict = float(parse_grade(reply.text))
        except (ModelError, ValueError):  # this grade fails alone
            return NAN, NAN
        return verdict, reply.cost_usd if reply.cost_usd is not None else NAN

    def _memories(self, sample: Sample) -> list[tuple[str, str]]:
        """What the reader of each probe is given: the memory, and with recall (a recall
        condition's depth, else ``recall_k``) the messages of the history that best match the
        probe's question among those that left the memory
        (:func:`memorylab.memory.recall_messages`: the ranking of
        :func:`memorylab.memory._recall`), as :func:`~memorylab.memory.format_recalled` writes
        them (``""``: none)."""
        probes = sample.case.probes
        summary = sample.summary
        depth = summary.recall_k if isinstance(summary, RecalledSummary) else self.recall_k
        archived = [
            m for m in sample.case.messages if fmt.content_to_text(m["content"]) not in sample.text
        ] if depth else []  # fmt: skip
        if not archived:
            return [(sample.text, "")] * len(probes)
        from memorylab.memory._recall import format_recalled, recall_messages

        found = recall_messages(archived, [p.question for p in probes], k=depth)
        return [(sample.text, format_recalled(messages)) for messages in found]

    def _prompt(self, question: str, memory: str, recalled: str) -> str:
        """The reader's prompt: the recalled messages in ``{recalled}`` (tagged), or for a
        template without the field after the memory in ``{summary}``, as before."""
        if "{recalled}" not in self.prompt:
            memory, recalled = _joined(memory, recalled), ""
        block = f"<recalled>\n{recalled}\n</recalled>\n\n" if recalled else ""
        return self.prompt.format(summary=memory, recalled=block, question=question)

    def score(self, sample: Sample) -> Mapping[str, Score]:
        if not self.offline:
            return super().score(sample)
        probes = sample.case.probes
        answers = [
            self._local_answer(_question(p), _joined(memory, recalled))
            for p, (memory, recalled) in zip(probes, self._memories(sample), strict=True)
        ]
        return self._grade(sample, answers, None)

    async def ascore(self, sample: Sample, llm: CachedLLM) -> Mapping[str, Score]:
        probes = sample.case.probes
        answers = list(
            await asyncio.gather(
                *(
                    self._answer(_question(p), memory, recalled, llm)
                    for p, (memory, recalled) in zip(probes, self._memories(sample), strict=True)
                )
            )
        )
        graded = None
        if self.grader is not None:
            graded = list(
                await asyncio.gather(
                    *(self._grade_llm(p, a, llm) for p, a in zip(probes, answers, strict=True))
                )
            )
        return self._grade(sample, answers, graded)

    def _grade(
        self,
        sample: Sample,
        answers: list[_Answer],
        graded: list[tuple[float, float]] | None,
    ) -> Mapping[str, Score]:
        probes = sample.case.probes
        metrics = ("exact", "fuzzy", "llm") if self.grader is not None else ("exact", "fuzzy")
        if not probes:
            none = Score(NAN, "the case has no probes", {"n": 0})
            return dict.fromkeys(metrics, none)
        outcomes: dict[str, list[float]] = {m: [] for m in metrics}
        wrong: list[str] = []
        counted: dict[str, list[str]] = {"cut": [], "relative": [], "listed": [], "empty": []}
        failed: dict[str, str] = {}
        # The lexical baseline answers with a whole line by design (it measures that the answer
        # is present and findable), so it is not held to the candidate-list rule.
        held_to_lists = self.reader != LOOKUP_READER
        for index, (probe, answer) in enumerate(zip(probes, answers, strict=True)):
            span = answer_span(answer.text)
            if answer.error is not None:
                failed[probe.id] = answer.error
                is_exact = is_fuzzy = NAN
            elif relative_date(span, probe.answer):
                counted["relative"].append(probe.id)
                is_exact = is_fuzzy = 0.0
            elif held_to_lists and listed_candidates(span, probe.answer):
                counted["listed"].append(probe.id)
                is_exact = is_fuzzy = 0.0
            else:
                exact, fuzzy, _ = grade_answer(span, probe.answer)
                is_exact, is_fuzzy = float(exact), float(fuzzy)
            counted["cut"] += [probe.id] if answer.cut else []
            counted["empty"] += [probe.id] if answer.error is None and not span else []
            outcomes["exact"].append(is_exact)
            outcomes["fuzzy"].append(is_fuzzy)
            if graded is not None:
                outcomes["llm"].append(graded[index][0])
            if is_fuzzy == 0.0:
                wrong.append(f"{probe.id}: expected {probe.answer!r}, got {span[:60]!r}")
        costs = [a.cost for a in answers] + [c for _, c in graded or ()]
        cost = NAN if any(math.isnan(c) for c in costs) else sum(costs)
        reader = (
            f"{LOOKUP_READER} (lexical baseline)" if self.reader == LOOKUP_READER
            else str(getattr(self.reader, "__name__", self.reader))
        )  # fmt: skip
        base = {"wrong": wrong, "cost_usd": cost, "reader": reader, "failed": failed,
                "answers": tuple(a.text for a in answers),
                "categories": [getattr(p, "category", None) for p in probes],
                **counted}  # fmt: skip
        why = "; ".join(wrong[:5]) + (f" (+{len(wrong) - 5} more)" if len(wrong) > 5 else "")
        notes = [f"{len(ids)} {what}" for what, ids in (
            ("answer(s) cut at max_tokens", counted["cut"]),
            ("relative date(s) graded wrong", counted["relative"]),
            ("candidate list(s) graded wrong", counted["listed"]),
            ("empty answer(s)", counted["empty"]),
            ("probe(s) failed, left out", list(failed)),
        ) if ids]  # fmt: skip
        out: dict[str, Score] = {}
        for metric in metrics:
            done = [v for v in outcomes[metric] if not math.isnan(v)]
            hits, n = int(sum(done)), len(done)
            text = f"{hits}/{n} {metric}" + "".join(f"; {note}" for note in notes)
            if why and metric == "fuzzy":
                text += f"; {why}"
            if failed and metric == "fuzzy":
                text += "; failed: " + "; ".join(f"{k}: {v}" for k, v in list(failed.items())[:3])
            meta = {**base, "n": n, "items": tuple(outcomes[metric])}
            out[metric] = Score(hits / n if n else NAN, text, meta)
        return out


@dataclass(frozen=True, slots=True)
class _Answer:
    """A reader's reply to one probe: ``text`` (cut at ``max_tokens`` when ``cut``), ``cost``
    in USD (NaN unknown), ``error`` when the call failed."""

    text: str
    cost: float = 0.0
    cut: bool = False
    error: str | None = None


def check_scorer_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip() or "." in name:
        raise InvalidSetting(
            f"a scorer name must be a non-empty string without '.', not {name!r} (the tables "
            "name columns '<scorer>.<metric>')"
        )
    return name.strip()


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
    """An LLM rates the summary against the history (``prompt``, default :data:`JUDGE_PROMPT`).

    Metrics: each criterion of :data:`JUDGE_CRITERIA` as ``(rating - 1) / 4`` in [0, 1] and
    their mean ``overall``. A history longer than ``max_history_tokens`` is shown to the judge
    as its head and tail (noted in the explanation). ``llm_args`` go to litellm (the same as
    everywhere); ``retry`` is the calls' :class:`~memorylab.llm.RetryPolicy`.

    Known failure modes: judges favour long and fluent summaries and their own model family,
    drift between model versions, and a small local judge rates everything alike; compare
    summarizers with one judge, next to ``fact_recall`` and ``probe_qa``.
    """

    name = "judge"

    def __init__(
        self,
        model: str | None = None,
        *,
        llm_args: Mapping[str, Any] | None = None,
        max_history_tokens: int = 12_000,
        max_tokens: int = 300,
        retry: llm.RetryPolicy | None = None,
        prompt: str = JUDGE_PROMPT,
        system_prompt: str = JUDGE_SYSTEM_PROMPT,
        name: str | None = None,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InvalidSetting(
                "the judge needs a model: get_scorer('judge', model='gpt-4o-mini') (any litellm "
                "model name; llm_args={'api_base': ...} for a local server)"
            )
        self.model = model
        self.caller = llm.Caller(model, retry=retry, llm_args=llm_args)
        self.max_history_tokens = llm.check_int("max_history_tokens", max_history_tokens, 16)
        self.max_tokens = llm.check_int("max_tokens", max_tokens, 1)
        self.prompt = _check_prompt("prompt", prompt, ("transcript", "summary"))
        self.system_prompt = str(system_prompt)
        if name is not None:
            self.name = check_scorer_name(name)

    @property
    def llm_args(self) -> dict[str, Any]:
        return dict(self.caller.llm_args)

    @property
    def retry(self) -> llm.RetryPolicy:
        return self.caller.retry

    def __repr__(self) -> str:
        return f"JudgeScorer({self.model!r})"

    def _transcript(self, case: Case) -> tuple[str, bool]:
        text = case.history_text
        if get_token_counter(None).count(text) <= self.max_history_tokens:
            return text, False
        cut = HeadTailSummarizer(self.max_history_tokens, head_share=0.5)
        return cut.summarize(case.messages).text, True

    def estimate(self, case: Case, summary_tokens: int) -> list[PlannedCall]:
        """One call: the history (at most ``max_history_tokens``), the summary, the rubric; the
        expected reply, the JSON object of three ratings and a sentence (at most
        ``max_tokens``)."""
        history = min(get_token_counter(None).count(case.history_text), self.max_history_tokens)
        expected = min(self.max_tokens, _JUDGE_REPLY_TOKENS)
        return [PlannedCall(self.model, history + summary_tokens + 400, self.max_tokens, 0,
                            expected)]  # fmt: skip

    async def ascore(self, sample: Sample, llm: CachedLLM) -> Mapping[str, Score]:
        transcript, cut = await asyncio.to_thread(self._transcript, sample.case)
        messages = [
            {"role": "system", "content": self.system_prompt},
            {
                "role": "user",
                "content": self.prompt.format(transcript=transcript, summary=sample.text),
            },
        ]
        reply = await llm.acomplete(
            self.caller, messages, temperature=0.0, max_tokens=self.max_tokens
        )
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
