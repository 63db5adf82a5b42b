r"""Grading a reader's answer against a reference answer, as answers are really written.

:func:`grade_answer` compares the two after :func:`normalize_answer`, which makes the common
ways of writing one answer the same text:

* **dates** in any common written form become ISO: ``7 May 2023``, ``May 7, 2023``,
  ``7th of May, 2023``, ``Sunday, May 7th 2023``, ``2023/05/07`` and ``2023-05-07`` are all
  ``2023-05-07``; a month and year (``May 2023``) is ``2023-05``;
* **numbers** written in words become digits: ``three`` is ``3``, ``twenty-five`` is ``25``,
  ``two hundred fifty`` is ``250``, ``third`` is ``3rd``; digit ordinals stay (``3rd``);
  thousands separators go (``12,000`` is ``12000``);
* case, accents folded by NFKC, the articles ``a``/``an``/``the``, and punctuation (but the
  ``-`` of an ISO date and the ``.`` of a decimal) do not matter.

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

The rules are written here rather than taken from a library: the date forms are a fixed list of
patterns over one month table, and number words a small grammar (units, tens, hundred,
thousand, million, ordinals); the libraries that parse them either guess one date per string
(dateutil) or would be a new dependency of the core for a dozen lines (text2num).

An *LLM grade* (the judge model decides whether the reply means the reference answer, as the
LoCoMo and mem0 evaluations grade) is the ``llm`` metric of
:class:`~memorylab.evaluate.ProbeQAScorer` with ``grader=``; its prompts are
:data:`GRADER_SYSTEM_PROMPT` and :data:`GRADER_PROMPT` and its reply is read by
:func:`parse_grade`.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

__all__ = [
    "GRADER_PROMPT",
    "GRADER_SYSTEM_PROMPT",
    "answer_span",
    "contains_answer",
    "cut_to_tokens",
    "grade_answer",
    "normalize_answer",
    "parse_grade",
    "relative_date",
]

_MONTHS = {
    "january": 1, "february": 2, "march": 3, "april": 4, "may": 5, "june": 6, "july": 7,
    "august": 8, "september": 9, "october": 10, "november": 11, "december": 12,
    "jan": 1, "feb": 2, "mar": 3, "apr": 4, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "sept": 9,
    "oct": 10, "nov": 11, "dec": 12,
}  # fmt: skip
_MONTH = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(\d{4})"
_WEEKDAY = r"(?:(?:mon|tues?|wed(?:nes)?|thu(?:rs?)?|fri|sat(?:ur)?|sun)(?:day)?\.?,?\s+)?"
_DATE_FORMS: tuple[tuple[re.Pattern[str], tuple[int, int, int | None]], ...] = (
    # (pattern, (group of year, month, day)); month groups are names or digits
    (re.compile(rf"\b{_YEAR}[-/.](\d{{1,2}})[-/.](\d{{1,2}})\b"), (1, 2, 3)),
    (re.compile(rf"\b{_WEEKDAY}{_DAY}(?:\s+of)?\s+{_MONTH},?\s+{_YEAR}\b"), (3, 2, 1)),
    (re.compile(rf"\b{_WEEKDAY}{_MONTH}\s+{_DAY},?\s+{_YEAR}\b"), (3, 1, 2)),
    (re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b"), (2, 1, None)),
)

_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19,
}  # fmt: skip
_TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
    "eighty": 80, "ninety": 90,
}  # fmt: skip
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_ORDINALS = {
    "first": "one", "second": "two", "third": "three", "fourth": "four", "fifth": "five",
    "sixth": "six", "seventh": "seven", "eighth": "eight", "ninth": "nine", "tenth": "ten",
    "eleventh": "eleven", "twelfth": "twelve", "thirteenth": "thirteen",
    "fourteenth": "fourteen", "fifteenth": "fifteen", "sixteenth": "sixteen",
    "seventeenth": "seventeen", "eighteenth": "eighteen", "nineteenth": "nineteen",
    "twentieth": "twenty", "thirtieth": "thirty", "fortieth": "forty", "fiftieth": "fifty",
    "sixtieth": "sixty", "seventieth": "seventy", "eightieth": "eighty", "ninetieth": "ninety",
    "hundredth": "hundred", "thousandth": "thousand",
}  # fmt: skip
_NUMBER_WORDS = {*_UNITS, *_TENS, *_SCALES, *_ORDINALS}
_ARTICLES = frozenset({"a", "an", "the"})
_KEEP = re.compile(r"(?<=\d)[.\-](?=\d)")
_TOKEN = re.compile(r"[^\W_]+(?:_[^\W_]+)*|_+")


def _iso_dates(text: str) -> str:
    for pattern, (y, m, d) in _DATE_FORMS:

        def iso(match: re.Match[str], y: int = y, m: int = m, d: int | None = d) -> str:
            month_text = match.group(m).lower().rstrip(".")
            month = _MONTHS.get(month_text) or int(month_text)
            day = int(match.group(d)) if d is not None else None
            if not 1 <= month <= 12 or (day is not None and not 1 <= day <= 31):
                return match.group(0)
            year = int(match.group(y))
            return f"{year:04d}-{month:02d}" + (f"-{day:02d}" if day is not None else "")

        text = pattern.sub(iso, text)
    return text


def _words_to_number(words: list[str]) -> int:
    total = current = 0
    for word in words:
        if word in _UNITS:
            current += _UNITS[word]
        elif word in _TENS:
            current += _TENS[word]
        elif word == "hundred":
            current = max(current, 1) * 100
        else:
            total += max(current, 1) * _SCALES[word]
            current = 0
    return total + current


def _digits(text: str) -> str:
    """Runs of number words (``twenty-five``, ``two hundred and fifty``, ``third``) as digits."""
    tokens = re.split(r"(\s+|-)", text)
    out: list[str] = []
    run: list[str] = []
    ordinal = False

    def flush() -> None:
        nonlocal run, ordinal
        if run:
            value = _words_to_number(run)
            suffix = ""
            if ordinal:
                last = value % 100
                suffix = "th" if 11 <= last <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(
                    value % 10, "th"
                )
            out.append(f"{value}{suffix}")
        run, ordinal = [], False

    pending: list[str] = []  # separators (and "and") between number words
    for token in tokens:
        word = token.lower()
        if word in _NUMBER_WORDS and not ordinal:
            if word in _ORDINALS:
                word, ordinal = _ORDINALS[word], True
            run.append(word)
            pending = []
            continue
        if run and (not token.strip() or token == "-" or word == "and"):
            pending.append(token)
            continue
        flush()
        out.extend(pending)
        pending = []
        out.append(token)
    flush()
    out.extend(pending)
    return "".join(out)


def normalize_answer(text: str) -> str:
    """``text`` as :func:`grade_answer` compares it (rules: the module docstring).

    >>> normalize_answer("The meeting was on May 7th, 2023!")
    'meeting was on 2023-05-07'
    >>> normalize_answer("Three cats, twelve thousand dollars, 3.5 kg")
    '3 cats 12000 dollars 3.5 kg'
    """
    text = unicodedata.normalize("NFKC", str(text)).casefold()
    text = re.sub(r"[\u2010-\u2015\u2212]", "-", text)
    text = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", text)
    text = _iso_dates(text)
    text = _digits(text)
    text = _KEEP.sub(lambda m: "\x00" if m.group(0) == "." else "\x01", text)
    found = re.findall(r"[\w\x00\x01]+", text)
    words = [w.replace("\x00", ".").replace("\x01", "-") for w in found]
    return " ".join(w for w in words if w not in _ARTICLES)


def contains_answer(text: str, answer: str, *, normalized: bool = False) -> bool:
    """Whether ``answer`` occurs whole (word-bounded) in ``text``, both as
    :func:`normalize_answer` writes them: the *exact* grade's rule, and how ``fact_recall`` finds
    a benchmark's reference answer in a history or a summary. ``normalized=True``: ``text`` was
    normalized already (one normalization for many answers).

    >>> contains_answer("We moved on the 7th of May, 2023.", "May 7, 2023")
    True
    >>> contains_answer("It took 12 s.", "2 s")
    False
    """
    want = normalize_answer(answer)
    have = text if normalized else normalize_answer(text)
    return bool(want) and f" {want} " in f" {have} "


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
