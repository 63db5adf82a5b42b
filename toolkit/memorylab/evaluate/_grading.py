r"""Grading a reader's answer against a reference answer, as answers are really written.

:func:`grade_answer` compares the two after :func:`~memorylab.evaluate.normalize_answer`, which
makes the common ways of writing one answer the same text (dates as ISO, number words as
digits, case, articles and punctuation dropped: its docstring states the rules; it is shared
with the analysis, which finds a benchmark's answer in a summary by ``contains_answer``).

Then *exact* is the normalized reference occurring whole (word-bounded) in the normalized reply
— a reply of just the value or a sentence containing it — and *fuzzy* is exact, or rapidfuzz
``partial_ratio`` >= 85 (or the same characters spaced differently: ``250ms``) with every number
of the reference present. ``UNKNOWN`` (the reader's "not in the notes") is neither.

What is graded is the reader's *answer*, not all it wrote (:func:`answer_span`): the reply cut at
the ``max_tokens`` the reader was asked for (:func:`cut_to_tokens`; a server may ignore it), then
its first line that says something. Containment in the whole reply would credit a reader that
echoes its notes with every answer in them (such a reader scored 21 % exact on full context and
0 % with no notes). An answer that gives a date as relative to when it was said ("last Saturday",
"two weeks ago") where the reference is a date is wrong, and counted (:func:`relative_date`):
the reader is asked for the date, and every line of the notes carries one.

An *LLM grade* (the judge model decides whether the reply means the reference answer, as the
LoCoMo and mem0 evaluations grade) is the ``llm`` metric of
:class:`~memorylab.evaluate.ProbeQAScorer` with ``grader=``; its prompts are
:data:`GRADER_SYSTEM_PROMPT` and :data:`GRADER_PROMPT` and its reply is read by
:func:`parse_grade`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from memorylab._facts import normalize_answer


def _numbers(normalized: str) -> list[str]:
    return re.findall(r"\d+(?:[.\-]\d+)*", normalized)


def grade_answer(answer: str, expected: str) -> tuple[bool, bool, float]:
    """``(exact, fuzzy, similarity)`` of a reader's ``answer`` against the ``expected`` one
    (the rules: the module docstring); ``similarity`` is rapidfuzz's ``partial_ratio``, 0-100.

    >>> grade_answer("She went on 7 May 2023.", "May 7, 2023")[:2]
    (True, True)
    >>> grade_answer("2023-05-07", "7 May 2023")[0], grade_answer("three", "3")[0]
    (True, True)
    >>> grade_answer("UNKNOWN", "3")
    (False, False, 0.0)
    """
    from rapidfuzz import fuzz

    reply, want = normalize_answer(answer), normalize_answer(expected)
    if not want or not reply or reply == "unknown":
        return False, False, 0.0
    exact = f" {want} " in f" {reply} "
    similarity = float(fuzz.partial_ratio(want, reply))
    squashed = want.replace(" ", "")
    if squashed and squashed in reply.replace(" ", ""):
        similarity = 100.0  # the same characters, spaced differently
    have = set(_numbers(reply))
    numbers_ok = all(n in have for n in _numbers(want))
    return exact, exact or (similarity >= 85.0 and numbers_ok), similarity


_ANSWER_LABEL = re.compile(
    r"^[\s*_#>\-]*(?:final\s+)?answer\s*[*_]*\s*[:：\-–]\s*[*_]*\s*", re.IGNORECASE
)


def answer_span(reply: str) -> str:
    """The part of a reader's ``reply`` that is graded: its first line that says something,
    without a leading ``Answer:`` label. A reader that echoes its notes, or answers and then
    goes on, is graded on what it answered first.

    >>> answer_span("Answer: 7 May 2023\\n\\nThe notes say so on line 3.")
    '7 May 2023'
    >>> answer_span("\\n  **Final answer:** Paris")
    'Paris'
    """
    for line in str(reply).splitlines():
        line = _ANSWER_LABEL.sub("", line).strip()
        if line:
            return line
    return ""


def cut_to_tokens(text: str, max_tokens: int, count: Callable[[str], int]) -> tuple[str, bool]:
    """``text`` cut after as many whole words as fit in ``max_tokens`` (counted by ``count``),
    and whether it was cut: a reply longer than the reader was allowed (a server that ignores
    ``max_tokens``) is graded on what fits. Counts a few prefixes (a binary search), never
    word by word.

    >>> cut_to_tokens("one two three four", 2, lambda t: len(t.split()))
    ('one two', True)
    """
    if count(text) <= max_tokens:
        return text, False
    words = re.findall(r"\S+\s*", text)
    fits, over = 0, len(words)  # the longest prefix that fits has between fits and over - 1
    while over - fits > 1:
        middle = (fits + over) // 2
        if count("".join(words[:middle]).rstrip()) <= max_tokens:
            fits = middle
        else:
            over = middle
    return "".join(words[:fits]).rstrip(), True


_RELATIVE_DATE = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow"
    r"|(?:last|next|this|past|previous|coming|the\s+other)\s+"
    r"(?:week(?:end)?|month|year|night|morning|afternoon|evening|day"
    r"|(?:mon|tues|wednes|thurs|fri|satur|sun)day)"
    r"|(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a\s+few|few|several"
    r"|a\s+couple\s+of|couple\s+of)\s+(?:days?|weeks?|months?|years?)\s+(?:ago|back|earlier))\b",
    re.IGNORECASE,
)
_DATE_IN_NORMALIZED = re.compile(r"\b\d{4}-\d{2}(?:-\d{2})?\b")


def relative_date(answer: str, expected: str) -> bool:
    """Whether ``answer`` gives a date relative to when it was said ("last Saturday", "two
    weeks ago") where ``expected`` holds a date, and does not give that date: such an answer is
    wrong (the reader was asked for the date itself) and counted apart.

    >>> relative_date("Last Saturday", "6 May 2023"), relative_date("6 May 2023", "6 May 2023")
    (True, False)
    >>> relative_date("last week", "a red bike")
    False
    """
    want = normalize_answer(expected)
    if not _DATE_IN_NORMALIZED.search(want) or _RELATIVE_DATE.search(str(answer)) is None:
        return False
    return f" {want} " not in f" {normalize_answer(answer)} "


LISTED_LENGTH_FACTOR = 3
"""An answer longer than this many times its reference's words (and :data:`LISTED_SLACK` words
more than it) is not an answer (:func:`listed_candidates`): a command or a list comes back with
its words once, in a sentence at most."""

LISTED_SLACK = 12
"""The words an answer may add to its reference before it is too long to be one, however short
the reference (:func:`listed_candidates`): SmolLM2-135M's longest right sentence on the LoCoMo
fixture added 9 ("The bowl Noor made is a blue ceramic bowl with a white rim" for "blue"), a
quoted note line 13, and the shortest list of the notes' names and numbers that held its
answer (cut at 64 tokens) 15."""

# Where a reply lists: commas (not the one before the year of "May 7, 2023", nor in "12,000"),
# semicolons, bars and "or".
_ITEM_SEPARATOR = re.compile(
    r"\s*(?:,(?!\s*(?:1[89]|20)\d\d(?![\d\-/]))(?!\d{3}\b)|;|\||\bor\b)\s*", re.IGNORECASE
)
_PATH_LIKE = re.compile(r"\S/\S|\b[\w\-]+\.[A-Za-z]{1,5}\b")
_NAME_ALONE = re.compile(r"[A-Z][\w'\u2019.\-]*(?:\s+[A-Z][\w'\u2019.\-]*){0,3}")


def _candidate_kinds(text: str) -> Counter[str]:
    """How many of ``text``'s items (its parts between commas, semicolons, bars and "or") hold a
    date, a number (outside a date), a path or file name, or are a name alone."""
    counts: Counter[str] = Counter()
    for item in _ITEM_SEPARATOR.split(str(text)):
        item = item.strip(" .!?\"'*_`()[]")
        normalized = normalize_answer(item)
        dates = _DATE_IN_NORMALIZED.findall(normalized)
        counts["date"] += bool(dates)
        counts["number"] += bool(_numbers(_DATE_IN_NORMALIZED.sub(" ", normalized)))
        counts["path"] += bool(_PATH_LIKE.search(item))
        counts["name"] += bool(_NAME_ALONE.fullmatch(item))
    return counts


def listed_candidates(answer: str, expected: str) -> bool:
    """Whether ``answer`` is a list of candidates rather than an answer to ``expected``: longer
    than :data:`LISTED_LENGTH_FACTOR` times the reference's words and :data:`LISTED_SLACK`
    words more than it (after :func:`~memorylab.evaluate.normalize_answer`), or several
    candidates of the reference's kind where the reference has fewer (dates, numbers, paths,
    names alone, each counted once per item of a list: ``"3 or 4"``, ``"Paris, London"``). Such
    a reply holds the answer whenever its notes do, as a reader that echoes them does.

    >>> listed_candidates("3 or 4", "3"), listed_candidates("Melanie ran 3 laps", "3")
    (True, False)
    >>> listed_candidates("Caroline, Melanie, Jon", "Caroline")
    True
    >>> listed_candidates("On May 7, 2023, she ran 3 laps", "7 May 2023")
    False
    """
    want, got = normalize_answer(expected).split(), normalize_answer(answer).split()
    if not want:
        return False
    if len(got) > max(LISTED_LENGTH_FACTOR * len(want), len(want) + LISTED_SLACK):
        return True
    reference, reply = _candidate_kinds(expected), _candidate_kinds(answer)
    return any(reply[kind] > count for kind, count in reference.items() if count)


GRADER_SYSTEM_PROMPT = (
    "You grade answers to questions about a conversation against the reference answer. "
    "You reply with one word: CORRECT or WRONG."
)

GRADER_PROMPT = (
    "Question: {question}\n"
    "Reference answer: {expected}\n"
    "Answer to grade: {answer}\n\n"
    "Be generous: the answer is CORRECT when it means the same as the reference answer, even "
    "if it is longer, worded differently, or writes a date, time or number in another format "
    "(for dates, the same day, month or period counts). It is WRONG when it is missing, says "
    "it does not know, or states something different. Reply CORRECT or WRONG."
)


def parse_grade(text: str) -> bool:
    """The grader's verdict: True for CORRECT, False for WRONG (a JSON ``{"label": ...}`` or
    prose around the word is fine); ``ValueError`` when the reply has neither.

    >>> parse_grade('{"label": "CORRECT"}'), parse_grade("wrong, the date differs")
    (True, False)
    """
    words = re.findall(r"[a-z]+", text.lower())
    for word in words:
        if word in ("correct", "right", "yes"):
            return True
        if word in ("wrong", "incorrect", "no"):
            return False
    raise ValueError(f"the grader's reply is neither CORRECT nor WRONG: {text[:200]!r}")
