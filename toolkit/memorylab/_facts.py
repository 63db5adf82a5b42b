r"""Facts: extracting them from a history by documented rules, and finding them (or a reference
answer) in a summary.

The rules are pure and shared: the evaluation (``fact_recall``, the grading of answers) and the
analysis (``fact_survival_df``, ``dropped_by``) match by them, so they live below both; the
package ``memorylab.evaluate`` exports the public names.

Extracted facts are the last resort of ``fact_recall``: planted facts and a benchmark's
reference answers are the ground truth wherever a case has them. The extraction rules below
keep the same kinds of spans as :class:`~memorylab.compress.ExtractiveSummarizer` (numbers,
paths, commands, decision sentences), so on extracted facts that summarizer is graded by rules
like its own: its scores are flagged ``biased`` (:data:`SHARES_EXTRACTION_RULES`).

Extraction (:func:`extract_facts`), for histories without reference facts. Each message is
scanned in this order; a span taken by one rule is not read again by a later one (except
decisions, which are whole sentences):

1. **command** — a line starting with ``$ `` (the prompt removed), a line inside a shell code
   fence (```` ``` ````, ```` ```bash ````, ``sh``, ``shell``, ``console``, ``zsh``), and an
   inline code span (`` `...` ``) whose first word is a known program (:data:`PROGRAMS`) or
   which has a lowercase first word followed by an option (``-x``/``--x``);
2. **path** — URLs (``http(s)://...``), absolute and home/relative paths (``/a/b``, ``~/a``,
   ``./a``, ``../a``), Windows paths (``C:\a``), and file names with a known extension
   (``src/app.py``, ``notes.md``); trailing ``.,;:)`` is not part of a path;
3. **name** — identifiers: the rest of the inline code spans, and bare tokens written like
   code: ``snake_case``, ``camelCase``/``PascalCase`` with an inner capital, dotted
   ``module.attr`` names, ticket ids (``ABC-123``) and model-style names (``gpt-4o``,
   ``llama-3-70b``);
4. **number** — dates (``2026-04-20``, optionally with a time), versions (``3.11.9``), and
   numbers with at least two digits or a decimal point, or any number followed by a
   unit or ``%`` (``3 retries`` is not kept, ``3 s`` is); thousands separators are allowed
   (``12,000``), a currency sign may precede, a unit from :data:`UNITS` may follow;
5. **decision** — sentences containing a decision cue (``decided``, ``agreed``, ``will use``,
   ``chose``, ``go with``, ``prefer``, ``must``, ``should not``, ``don't`` ...
   :data:`DECISION_CUES`), clipped to 200 characters.

Facts are de-duplicated by category and normalized text, in order of first appearance.

Matching (:func:`fact_kept`) is tolerant to formatting and strict on values. Both texts are
normalized (:func:`normalize`: Unicode NFKC, case folded, backticks, ``*`` and quotes removed,
dashes unified, thousands separators dropped, whitespace collapsed). Then:

* every number of the fact must occur with the same value (``4.10`` = ``4.1``, ``12,000`` =
  ``12000``, but ``52.3`` ≠ ``52.4`` and ``5`` ≠ ``50``). A **number** fact (``12 gunicorn
  workers per pod``) is kept when its first number occurs without a different unit (``300 ms``
  is not ``300 s``) and, within :data:`NUMBER_WINDOW` characters of it, its other numbers and
  at least half of its other words (rapidfuzz ``ratio`` >= 85 per word, so ``worker`` =
  ``workers``): a ``12`` elsewhere in a log does not count. A decision's numbers must be in
  the sentence that matches it;
* a path, command or name must occur whole (not as part of a longer token: ``/srv/app`` is not
  in ``/srv/app2``); names also match written with other separators or case
  (``payment_service`` = ``PaymentService`` = ``payment-service``); a command's ``$`` prompt
  and quoting style do not matter;
* a **decision** (a phrase, which model summaries paraphrase) is kept when one sentence or
  line of the summary (or two consecutive ones) has at least :data:`DECISION_THRESHOLD` % of
  its words that carry meaning (stop words and decision glue such as "decided", "use" dropped;
  each word, crudely stemmed, exactly or with rapidfuzz ``ratio`` >= 85), its negations
  (``not``, ``never``, ``don't`` ...: "never push on Fridays" is not "push on Fridays") and its
  numbers; or contains it nearly verbatim (``partial_ratio`` >= the same threshold).

Answers (:func:`normalize_answer`, :func:`contains_answer`): a benchmark's reference answer is
found in a text, and a reader's answer graded (``memorylab.evaluate.grade_answer``), after
:func:`normalize_answer` makes the common ways of writing one answer the same text:

* **dates** in any common written form become ISO: ``7 May 2023``, ``May 7, 2023``,
  ``7th of May, 2023``, ``Sunday, May 7th 2023``, ``2023/05/07`` and ``2023-05-07`` are all
  ``2023-05-07``; a month and year (``May 2023``) is ``2023-05``;
* **numbers** written in words become digits: ``three`` is ``3``, ``twenty-five`` is ``25``,
  ``two hundred fifty`` is ``250``, ``third`` is ``3rd``; digit ordinals stay (``3rd``);
  thousands separators go (``12,000`` is ``12000``);
* case, accents folded by NFKC, the articles ``a``/``an``/``the``, and punctuation (but the
  ``-`` of an ISO date and the ``.`` of a decimal) do not matter.

The rules are written here rather than taken from a library: the date forms are a fixed list of
patterns over one month table, and number words a small grammar (units, tens, hundred,
thousand, million, ordinals); the libraries that parse them either guess one date per string
(dateutil) or would be a new dependency of the core for a dozen lines (text2num).
"""

from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from memorylab.memory._format import content_to_text
from memorylab.transcripts import Fact

SHARES_EXTRACTION_RULES = frozenset({"memorylab/extractive"})
"""Summarizers that keep facts by rules like :func:`extract_facts` (commands, paths, numbers,
decision sentences): ``fact_recall`` on extracted facts measures their agreement with the
extractor, not memory quality, and is flagged ``biased`` for them."""

DECISION_THRESHOLD = 70.0
"""Minimum share (percent) of a decision's words one summary sentence must have to keep it."""

DECISION_CUES = (
    "decided", "decide", "decision", "agreed", "agree", "will use", "we'll use", "going with",
    "go with", "chose", "chosen", "choose", "selected", "settled on", "switch to",
    "switched to", "prefer", "prefers", "preferred", "must", "must not", "should not",
    "shouldn't", "don't", "do not", "never", "always", "instead of", "stick with",
)  # fmt: skip

_PROGRAM_WORDS = (
    "git python python3 pip pip3 uv poetry pytest npm npx yarn pnpm node make cmake cargo go "
    "docker kubectl helm terraform ansible ssh scp rsync curl wget ls cd cat grep rg sed awk "
    "find chmod chown mv cp rm mkdir tar psql mysql redis-cli sqlite3 systemctl journalctl "
    "brew apt apt-get bash sh zsh export echo ruff mypy black tox nox alembic flask django-admin "
    "gunicorn uvicorn java mvn gradle dotnet ffmpeg jq aws gcloud az"
)
PROGRAMS = frozenset(_PROGRAM_WORDS.split())
"""Programs whose inline code span counts as a command."""

UNITS = {
    "ms": "ms", "msec": "ms", "millisecond": "ms", "milliseconds": "ms",
    "s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
    "min": "min", "mins": "min", "minute": "min", "minutes": "min",
    "h": "h", "hr": "h", "hrs": "h", "hour": "h", "hours": "h",
    "d": "d", "day": "d", "days": "d", "week": "week", "weeks": "week",
    "kb": "kb", "mb": "mb", "gb": "gb", "tb": "tb", "kib": "kib", "mib": "mib", "gib": "gib",
    "k": "k", "m": "m", "bn": "bn", "%": "%", "percent": "%", "x": "x",
    "usd": "usd", "eur": "eur", "rps": "rps", "qps": "qps",
    "rows": "rows", "tokens": "tokens", "requests": "requests", "users": "users",
}  # fmt: skip
"""Units that may follow a number (lower case), mapped to one spelling."""

_SHELL_FENCES = frozenset({"", "bash", "sh", "shell", "console", "zsh", "terminal"})
_FENCE = re.compile(r"^\s*(?:```|~~~)\s*([\w+-]*)\s*$")
_INLINE = re.compile(r"`([^`\n]+)`")
_URL = re.compile(r"\bhttps?://[^\s<>()\"'`]+")
_EXT = (
    r"py|pyi|txt|md|rst|json|jsonl|ya?ml|toml|csv|tsv|ipynb|js|mjs|ts|tsx|jsx|sh|bash|cfg|ini|"
    r"conf|log|html?|css|rs|go|java|kt|c|h|cc|cpp|hpp|sql|xml|lock|pdf|png|jpe?g|svg|env|parquet|"
    r"db|sqlite|zip|gz|tar|tf|proto|dockerfile"
)
_PATH = re.compile(
    r"(?<![\w/.\-])(?:~|\.{1,2})?/[\w.\-@+]+(?:/[\w.\-@+]+)*/?"
    r"|\b[A-Za-z]:\\[^\s\"'<>|`]+"
    rf"|(?<![\w/.\-])[\w\-]+(?:[/.][\w\-]+)*\.(?:{_EXT})\b",
    re.IGNORECASE,
)
_NAME = re.compile(
    r"(?<![\w.\-])(?:"
    r"[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+"  # snake_case, UPPER_SNAKE
    r"|[a-z]+(?:[A-Z][a-z0-9]*)+"  # camelCase
    r"|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+"  # PascalCase
    r"|[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+(?:\(\))?"  # module.attr
    r"|[A-Z][A-Z0-9]+-\d+"  # ticket ids
    r"|[a-z][a-z]+-\d[\w.]*(?:-[\w.]+)*"  # gpt-4o, llama-3-70b
    r")(?![\w\-])"
)
_DATE = re.compile(
    r"(?<![\w.\-])\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?(?![\w\-])"
    r"|(?<![\w.])v?\d+\.\d+\.\d+(?![\w.])"
)
_UNIT_RE = "|".join(sorted((re.escape(u) for u in UNITS), key=len, reverse=True))
_NUMBER = re.compile(
    r"(?<![\w.,\-/:])([$€£]?)(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    rf"(?:\s?({_UNIT_RE})(?![\w]))?",
    re.IGNORECASE,
)
_DIGIT = re.compile(r"\d")
_PATH_HINT = re.compile(r"/|\\|\.[A-Za-z]")  # what a URL or each of _PATH's forms holds
_DATE_HINT = re.compile(r"\d[-.]\d")  # what each of _DATE's forms holds
_ANY_NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w,])\d+(?:\.\d+)?")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[`*])|\n+")
_DECISION = re.compile(
    r"\b(?:" + "|".join(re.escape(c) for c in sorted(DECISION_CUES, key=len, reverse=True))
    + r")\b",
    re.IGNORECASE,
)
_STOP_WORDS = (
    "a an the and or but to of in on at for with by from as is are was were be been it this "
    "that these those we i you they he she our your their us me my will would should shall "
    "can could do does did has have had so then than there here also just about into "
    "over under up down out all any each per because again make made rather since"
)
_STOP = frozenset(_STOP_WORDS.split())
_TRAILING = ".,;:)]}!?'\""


# --------------------------------------------------------------------------- normalization


def normalize(text: str) -> str:
    """The text for matching: NFKC, case folded, markup and quotes removed, whitespace collapsed.

    >>> normalize("Use **`PaymentService`**  for 12,000 “users”")
    'use paymentservice for 12000 users'
    """
    text = unicodedata.normalize("NFKC", text).casefold()
    text = _DASHES.sub("-", text)
    text = _MARKUP.sub("", text)
    text = _THOUSANDS.sub("", text)
    return " ".join(text.split())


_DASHES = re.compile(r"[\u2010-\u2015\u2212]")
_MARKUP = re.compile(r"[`*\"'\u2018\u2019\u201c\u201d]")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")


@functools.lru_cache(maxsize=4096)  # a log repeats its numbers; Decimal is the cost
def _number_value(raw: str) -> str:
    try:
        value = Decimal(raw.replace(",", ""))
    except InvalidOperation:
        return raw
    text = format(value.normalize(), "f")
    return text


def numbers_in(text: str) -> list[str]:
    """The numeric values in ``text``, normalized (``"4.10"`` -> ``"4.1"``, ``"12,000"`` ->
    ``"12000"``), in order."""
    return [_number_value(m.group(0)) for m in _ANY_NUMBER.finditer(text)]


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` as the matching reads a summary: cut at each line break and
    after ``.``, ``!`` or ``?`` followed by a capital, a digit, a quote or markup; stripped,
    empty ones left out.

    >>> sentences("Use Postgres 16. It is faster.\\n- keep /srv/app")
    ['Use Postgres 16.', 'It is faster.', '- keep /srv/app']
    """
    return [piece.strip() for piece in _SENTENCE_END.split(text) if piece.strip()]


# --------------------------------------------------------------------------- extraction


def _units(text: str) -> Iterator[tuple[str, str]]:
    """``(kind, line)``: ``"command"`` for prompt and shell-fence lines, ``"code"`` for lines
    of other fences (skipped), ``"text"`` otherwise."""
    fence: str | None = None
    for raw in text.splitlines():
        opened = _FENCE.match(raw)
        if opened:
            fence = None if fence is not None else opened.group(1).lower()
            continue
        line = raw.strip()
        if not line:
            continue
        if fence is not None:
            yield ("command" if fence in _SHELL_FENCES else "code"), line
        elif line.startswith("$ "):
            yield "command", line[2:].strip()
        else:
            yield "text", line


def _is_command(code: str) -> bool:
    words = code.split()
    if not words:
        return False
    first = words[0]
    if first in PROGRAMS or first.startswith("./"):
        return True
    return bool(re.fullmatch(r"[a-z][\w.\-]*", first)) and any(
        w.startswith("-") and len(w) > 1 for w in words[1:]
    )


def _clean(value: str) -> str:
    return value.rstrip(_TRAILING) if value[-1:] in _TRAILING else value


class _Collector:
    def __init__(self) -> None:
        self.facts: list[Fact] = []
        self.seen: set[tuple[str, str]] = set()
        self.normalized: dict[str, str] = {}  # a log repeats its paths and numbers

    def add(self, category: str, text: str, index: int) -> None:
        text = text.strip()
        if not text or len(text) < 2:
            return
        if text not in self.normalized:
            self.normalized[text] = normalize(text)
        key = (category, self.normalized[text])
        if key in self.seen:
            return
        self.seen.add(key)
        self.facts.append(Fact(f"x{len(self.facts) + 1}", category, text, index))


def _mask(line: str, spans: list[tuple[int, int]]) -> str:
    for start, end in spans:
        line = line[:start] + " " * (end - start) + line[end:]
    return line


def _scan_text(line: str, index: int, out: _Collector) -> None:
    # A pattern runs only on a line holding what any match of it needs (a backquote, a "://",
    # a "/", a backslash or a "." before a letter, a digit, a digit then "-" or "." then a
    # digit): the patterns cost most of an extraction.
    taken: list[tuple[int, int]] = []
    for match in _INLINE.finditer(line) if "`" in line else ():
        code = match.group(1).strip()
        if _is_command(code):
            out.add("command", code, index)
        elif _URL.fullmatch(code) or _PATH.fullmatch(code):
            out.add("path", code, index)
        elif code:
            out.add("name", code, index)
        taken.append(match.span())
    rest = _mask(line, taken)
    for pattern in (_URL, _PATH) if _PATH_HINT.search(rest) else ():
        for match in pattern.finditer(rest) if pattern is _PATH or "://" in rest else ():
            value = _clean(match.group(0))
            if len(value) > 1 and value not in ("/", "~/", "./"):
                out.add("path", value, index)
            taken.append(match.span())
        rest = _mask(line, taken)
    for match in _NAME.finditer(rest):
        out.add("name", _clean(match.group(0)), index)
        taken.append(match.span())
    if not _DIGIT.search(rest):
        return
    rest = _mask(line, taken)
    for match in _DATE.finditer(rest) if _DATE_HINT.search(rest) else ():
        out.add("number", match.group(0), index)
        taken.append(match.span())
    rest = _mask(line, taken)
    for match in _NUMBER.finditer(rest):
        digits, unit = match.group(2), match.group(3)
        if not unit and "." not in digits and len(digits.replace(",", "")) < 2:
            continue
        out.add("number", match.group(0).strip(), index)


def extract_facts(messages: Sequence[Mapping[str, Any]]) -> list[Fact]:
    """Facts found in ``messages`` by the rules of the module docstring (ids ``x1``, ``x2``...).

    >>> text = "We decided to use Postgres 16. Run `pg_dump -s billing`, save it to /tmp/s.sql"
    >>> for fact in extract_facts([{"role": "user", "content": text}]):
    ...     print(fact.category, repr(fact.text))
    command 'pg_dump -s billing'
    path '/tmp/s.sql'
    number '16'
    decision 'We decided to use Postgres 16.'
    """
    out = _Collector()
    for index, message in enumerate(messages):
        text = content_to_text(message.get("content"))
        for kind, line in _units(text):
            if kind == "command":
                out.add("command", line, index)
            elif kind == "text":
                _scan_text(line, index, out)
                for sentence in _SENTENCE_END.split(line):
                    sentence = sentence.strip()
                    if len(sentence) >= 12 and _DECISION.search(sentence):
                        clipped = sentence if len(sentence) <= 200 else sentence[:199] + "…"
                        out.add("decision", clipped, index)
    return out.facts


# --------------------------------------------------------------------------- matching


@dataclass(frozen=True, slots=True)
class FactMatch:
    """Whether a fact is kept in a summary, how well it matched (0-100) and where."""

    kept: bool
    score: float
    evidence: str = ""


def _find_whole(needle: str, hay: str) -> int:
    """Index of ``needle`` in ``hay`` not inside a longer token, or -1."""
    if not needle:
        return -1
    start = 0
    while True:
        at = hay.find(needle, start)
        if at < 0:
            return -1
        before = hay[at - 1] if at > 0 else " "
        after = hay[at + len(needle) : at + len(needle) + 2]
        left_ok = not (before.isalnum() or (before in "_-/." and needle[0].isalnum()))
        right_ok = not after or not (
            after[0].isalnum() or after[0] in "_-" or (after[0] in "./" and after[1:2].isalnum())
        )
        if left_ok and right_ok:
            return at
        start = at + 1


def _squash(text: str) -> str:
    return re.sub(r"[\W_]+", "", text)


def _snippet(hay: str, at: int, length: int) -> str:
    return hay[max(0, at - 30) : at + length + 30]


NUMBER_WINDOW = 80
"""Characters on each side of a number in which a number fact's other words are looked for."""

_GLUE_WORDS = (
    "decided decide decides decision decisions agreed agree agrees chose chosen choose "
    "selected settled going go with use using used"
)
_GLUE = frozenset(_GLUE_WORDS.split())


def _content(text: str) -> str:
    """The words that carry meaning: stop words and decision glue dropped (negations kept)."""
    words = (w.strip(".,;:!?-") for w in _WORD.findall(text))
    return " ".join(w for w in words if w and w not in _STOP and w not in _GLUE)


def word_stem(word: str) -> str:
    """A crude English stem, enough for ``races`` = ``raced``, ``partition`` = ``partitioned``."""
    return _SUFFIX.sub("", word) if len(word) > 4 else word


_WORD = re.compile(r"[\w.\-/]+")
_SUFFIX = re.compile(r"(?:ing|ed|es|s|ly)$")


_NEGATIONS = frozenset(
    {"not", "never", "dont", "no", "without", "nor", "cannot", "cant", "shouldnt", "wont",
     "mustnt", "doesnt", "isnt", "arent"}
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Piece:
    """A sentence of a text (or two neighbours) as the decision matcher reads it."""

    text: str
    norm: str
    words: frozenset[str]  # its content words
    stems: frozenset[str]  # theirs, stemmed
    numbers: frozenset[str]


class PreparedText:
    """A text (a summary) prepared once for matching many facts against it: a lineage follows
    thousands of facts through the same few hundred summaries. Its normalized form at once; its
    numbers by value, the words near each, its tokens and its sentences when a fact first needs
    them. Matching against it gives what :func:`fact_kept` gives for the text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.hay = normalize(text)
        self._windows: dict[tuple[int, int], tuple[str, frozenset[str], list[str]]] = {}
        self._similar: dict[str, frozenset[str]] = {}

    @functools.cached_property
    def answers(self) -> str:
        """The text as :func:`normalize_answer` writes it, for :func:`contains_answer`."""
        return normalize_answer(self.text)

    @functools.cached_property
    def numbers(self) -> dict[str, list[tuple[int, int, str | None]]]:
        """Each number of the normalized text by value: its span and its unit, in order."""
        found: dict[str, list[tuple[int, int, str | None]]] = {}
        for match in _NUMBER.finditer(self.hay):
            unit = UNITS.get((match.group(3) or "").lower())
            found.setdefault(_number_value(match.group(2)), []).append(
                (match.start(), match.end(), unit)
            )
        return found

    def window(self, start: int, end: int) -> tuple[str, frozenset[str], list[str]]:
        """The text within :data:`NUMBER_WINDOW` of a number's span, its numbers, its words."""
        if (start, end) not in self._windows:
            text = self.hay[max(0, start - NUMBER_WINDOW) : end + NUMBER_WINDOW]
            self._windows[start, end] = (text, frozenset(numbers_in(text)), _content(text).split())
        return self._windows[start, end]

    @functools.cached_property
    def tokens(self) -> dict[str, str]:
        """The first token of each squashed form (``payment_service`` -> ``paymentservice``)."""
        found: dict[str, str] = {}
        for token in re.findall(r"[\w.\-]+", self.hay):
            found.setdefault(_squash(token), token)
        return found

    @functools.cached_property
    def runs(self) -> tuple[dict[str, str], ...]:
        """For runs of 2, 3 and 4 words: the first run of each squashed form."""
        words = self.hay.split()
        found: tuple[dict[str, str], ...] = ({}, {}, {})
        for width, runs in zip((2, 3, 4), found, strict=True):
            for i in range(len(words) - width + 1):
                run = words[i : i + width]
                runs.setdefault(_squash("".join(run)), " ".join(run))
        return found

    @functools.cached_property
    def pieces(self) -> tuple[_Piece, ...]:
        """Each sentence and each pair of neighbours, for the decision matcher. A pair is made of
        its two sentences' forms: normalizing, the content words and the numbers never reach
        across the space that joins them."""
        out = []
        for piece in sentences(self.text):
            norm = normalize(piece)
            words = frozenset(_content(norm).split())
            stems = frozenset(map(word_stem, words))
            out.append(_Piece(piece, norm, words, stems, frozenset(numbers_in(norm))))
        pairs = [
            _Piece(f"{a.text} {b.text}", f"{a.norm} {b.norm}", a.words | b.words,
                   a.stems | b.stems, a.numbers | b.numbers)
            for a, b in itertools.pairwise(out)
        ]  # fmt: skip
        return (*out, *pairs)

    @functools.cached_property
    def vocabulary(self) -> list[str]:
        """The stems of its pieces, each once."""
        return list(dict.fromkeys(stem for piece in self.pieces for stem in piece.stems))

    def similar(self, stem: str) -> frozenset[str]:
        """The stems of the text's pieces within rapidfuzz ``ratio`` >= 85 of ``stem``."""
        if stem not in self._similar:
            from rapidfuzz import fuzz, process

            found = process.extract(
                stem, self.vocabulary, scorer=fuzz.ratio, score_cutoff=85, limit=None
            )
            self._similar[stem] = frozenset(choice for choice, _, _ in found)
        return self._similar[stem]


class PreparedFact:
    """A fact prepared once for matching against many texts (:class:`PreparedText`): its
    normalized text, and what its category's rule looks for."""

    def __init__(self, fact: Fact) -> None:
        self.fact = fact
        needle = normalize(fact.text)
        if fact.category == "command":
            needle = needle.removeprefix("$ ").strip()
        self.needle = needle
        self.values = numbers_in(needle)
        words = _content(needle).split() if fact.category in ("decision", "number") else []
        # a decision: its content words, their stems and its negations
        self.words, self.stems = frozenset(words), [word_stem(w) for w in words]
        self.negations = _NEGATIONS & self.words
        # a number: its first number, that number's unit and the other words
        head = _NUMBER.search(needle) if fact.category == "number" else None
        self.first = _number_value(head.group(2)) if head else (self.values or [""])[0]
        self.unit = UNITS.get((head.group(3) or "").lower()) if head else None
        unit_words = {w for w, u in UNITS.items() if u == self.unit}
        self.context = [
            w for w in words
            if not _ANY_NUMBER.fullmatch(w) and len(w) >= 3 and w not in unit_words
        ]  # fmt: skip

    def match(self, text: PreparedText) -> FactMatch:
        """Is the fact in ``text``? (The rules are in the module docstring.)"""
        category = self.fact.category
        if category == "decision":
            return self._decision(text)
        if category == "number" and self.values:
            return self._number(text)
        at = _find_whole(self.needle, text.hay)
        if at >= 0:
            return FactMatch(True, 100.0, _snippet(text.hay, at, len(self.needle)))
        if category == "name":
            target = _squash(self.needle)
            if target and target in text.tokens:
                return FactMatch(True, 95.0, text.tokens[target])
            for runs in text.runs if target else ():
                if target in runs:
                    return FactMatch(True, 90.0, runs[target])
        return FactMatch(False, 0.0)

    def _number(self, text: PreparedText) -> FactMatch:
        """Its first number, with the same value and no other unit, with its other numbers and
        at least half of its words (fuzzily) within :data:`NUMBER_WINDOW` characters."""
        best = 0.0
        for start, end, seen_unit in text.numbers.get(self.first, ()):
            if self.unit and seen_unit and seen_unit != self.unit:
                continue  # 300 ms is not 300 s
            window, numbers, words = text.window(start, end)
            if not all(v in numbers for v in self.values):
                continue
            if not self.context:
                return FactMatch(True, 100.0, window)
            from rapidfuzz import fuzz  # here: most facts are decided before any fuzzy score

            hits = sum(any(fuzz.ratio(w, x) >= 85 for x in words) for w in self.context)
            share = 100.0 * hits / len(self.context)
            if share >= 50.0:
                return FactMatch(True, share, window)
            best = max(best, share)
        return FactMatch(False, best)

    def _decision(self, text: PreparedText) -> FactMatch:
        """One piece holding enough of its words (exactly or fuzzily, stemmed), its negations
        and its numbers, or holding it nearly verbatim."""
        best, best_piece = 0.0, ""
        for piece in text.pieces:
            if (
                self.words.isdisjoint(piece.words)
                or not self.negations <= piece.words
                or not all(n in piece.numbers for n in self.values)
            ):
                continue  # it could not be the best piece: the cheap tests first
            hits = sum(
                stem in piece.stems or not piece.stems.isdisjoint(text.similar(stem))
                for stem in self.stems
            )
            score = 100.0 * hits / len(self.stems) if self.stems else 0.0
            if len(piece.norm) >= len(self.needle) and score < 100.0:
                # a score below both the words' and the best so far changes nothing: rapidfuzz
                # gives it as 0 and skips the work
                from rapidfuzz import fuzz  # here: most pieces are left before any fuzzy score

                cutoff = max(score, best)
                nearly = fuzz.partial_ratio(self.needle, piece.norm, score_cutoff=cutoff)
                score = max(score, float(nearly))
            if score > best:
                best, best_piece = score, piece.text
        return FactMatch(best >= DECISION_THRESHOLD, best, best_piece[:200])


@functools.lru_cache(maxsize=256)
def _prepared(text: str) -> PreparedText:
    """A text prepared once however many facts are matched against it (``fact_recall`` matches
    a case's facts against the same summary)."""
    return PreparedText(text)


def fact_kept(fact: Fact, summary: str) -> FactMatch:
    """Is ``fact`` in ``summary``? (The rules are in the module docstring.)

    >>> from memorylab.transcripts import Fact
    >>> fact_kept(Fact("f1", "number", "52.3"), "The P/E ratio is 52.30.").kept
    True
    >>> fact_kept(Fact("f1", "number", "52.3"), "The P/E ratio is 52.4.").kept
    False
    """
    return PreparedFact(fact).match(_prepared(summary))


# --------------------------------------------------------------------------- answers

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
    """``text`` as answers are compared (rules: the module docstring, "Answers").

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
