r"""Facts: extracting them from a history by documented rules, and finding them in a summary.

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

from memorylab.evaluate.cases import Fact
from memorylab.memory.format import content_to_text

__all__ = [
    "DECISION_CUES",
    "DECISION_THRESHOLD",
    "FactMatch",
    "NUMBER_WINDOW",
    "PROGRAMS",
    "SHARES_EXTRACTION_RULES",
    "UNITS",
    "extract_facts",
    "fact_kept",
    "normalize",
    "numbers_in",
    "sentences",
]

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
    text = re.sub(r"[\u2010-\u2015\u2212]", "-", text)
    text = re.sub(r"[`*\"'\u2018\u2019\u201c\u201d]", "", text)
    text = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", text)
    return " ".join(text.split())


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

    def add(self, category: str, text: str, index: int) -> None:
        text = text.strip()
        if not text or len(text) < 2:
            return
        key = (category, normalize(text))
        if key in self.seen:
            return
        self.seen.add(key)
        self.facts.append(Fact(f"x{len(self.facts) + 1}", category, text, index))


def _mask(line: str, spans: list[tuple[int, int]]) -> str:
    chars = list(line)
    for start, end in spans:
        for i in range(start, end):
            chars[i] = " "
    return "".join(chars)


def _scan_text(line: str, index: int, out: _Collector) -> None:
    taken: list[tuple[int, int]] = []
    for match in _INLINE.finditer(line):
        code = match.group(1).strip()
        if _is_command(code):
            out.add("command", code, index)
        elif _URL.fullmatch(code) or _PATH.fullmatch(code):
            out.add("path", code, index)
        elif code:
            out.add("name", code, index)
        taken.append(match.span())
    rest = _mask(line, taken)
    for pattern in (_URL, _PATH):
        for match in pattern.finditer(rest):
            value = _clean(match.group(0))
            if len(value) > 1 and value not in ("/", "~/", "./"):
                out.add("path", value, index)
            taken.append(match.span())
        rest = _mask(line, taken)
    for match in _NAME.finditer(rest):
        out.add("name", _clean(match.group(0)), index)
        taken.append(match.span())
    rest = _mask(line, taken)
    for match in _DATE.finditer(rest):
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


def _numbers_ok(fact_text: str, region: str) -> bool:
    wanted = numbers_in(normalize(fact_text))
    have = set(numbers_in(region))
    return all(n in have for n in wanted)


NUMBER_WINDOW = 80
"""Characters on each side of a number in which a number fact's other words are looked for."""


def _match_number(fact: str, hay: str) -> FactMatch:
    """A number fact (normalized): its first number, with the same value and no other unit,
    with its other numbers and at least half of its words (fuzzily) within
    :data:`NUMBER_WINDOW` characters."""
    from rapidfuzz import fuzz

    head = _NUMBER.search(fact)
    values = numbers_in(fact)
    first = _number_value(head.group(2)) if head else values[0]
    unit = UNITS.get((head.group(3) or "").lower()) if head else None
    unit_words = {w for w, u in UNITS.items() if u == unit}
    context = [
        w for w in _content(fact).split()
        if not _ANY_NUMBER.fullmatch(w) and len(w) >= 3 and w not in unit_words
    ]  # fmt: skip
    best = 0.0
    for found in _NUMBER.finditer(hay):
        if _number_value(found.group(2)) != first:
            continue
        seen_unit = UNITS.get((found.group(3) or "").lower())
        if unit and seen_unit and seen_unit != unit:
            continue  # 300 ms is not 300 s
        window = hay[max(0, found.start() - NUMBER_WINDOW) : found.end() + NUMBER_WINDOW]
        if not all(v in set(numbers_in(window)) for v in values):
            continue
        if not context:
            return FactMatch(True, 100.0, window)
        words = _content(window).split()
        hits = sum(any(fuzz.ratio(w, x) >= 85 for x in words) for w in context)
        share = 100.0 * hits / len(context)
        if share >= 50.0:
            return FactMatch(True, share, window)
        best = max(best, share)
    return FactMatch(False, best)


_GLUE_WORDS = (
    "decided decide decides decision decisions agreed agree agrees chose chosen choose "
    "selected settled going go with use using used"
)
_GLUE = frozenset(_GLUE_WORDS.split())


def _content(text: str) -> str:
    """The words that carry meaning: stop words and decision glue dropped (negations kept)."""
    words = (w.strip(".,;:!?-") for w in re.findall(r"[\w.\-/]+", text))
    return " ".join(w for w in words if w and w not in _STOP and w not in _GLUE)


def _stem(word: str) -> str:
    """A crude English stem, enough for ``races`` = ``raced``, ``partition`` = ``partitioned``."""
    return re.sub(r"(?:ing|ed|es|s|ly)$", "", word) if len(word) > 4 else word


_NEGATIONS = frozenset(
    {"not", "never", "dont", "no", "without", "nor", "cannot", "cant", "shouldnt", "wont",
     "mustnt", "doesnt", "isnt", "arent"}
)  # fmt: skip


def _coverage(words: list[str], stems: list[str]) -> float:
    """Share of ``words`` found among a piece's ``stems`` (exactly, or rapidfuzz ``ratio``
    >= 85)."""
    from rapidfuzz import fuzz, process

    if not words:
        return 0.0
    have = set(stems)
    hits = 0
    for word in map(_stem, words):
        if word in have or process.extractOne(word, stems, scorer=fuzz.ratio, score_cutoff=85):
            hits += 1
    return 100.0 * hits / len(words)


@functools.lru_cache(maxsize=256)
def _decision_pieces(
    summary: str,
) -> tuple[tuple[str, str, frozenset[str], list[str]], ...]:
    """A summary cut for the decision matcher: each sentence and each pair of neighbours, with
    its normalized text, its content words and their stems. Made once per summary: the facts of
    a workspace are matched against the same few summaries again and again (a lineage matches
    every fact against every later summary)."""
    pieces = sentences(summary)
    pieces += [f"{a} {b}" for a, b in itertools.pairwise(pieces)]
    out = []
    for piece in pieces:
        norm = normalize(piece)
        words = _content(norm).split()
        out.append((piece, norm, frozenset(words), [_stem(w) for w in words]))
    return tuple(out)


def _match_decision(fact_text: str, summary: str) -> FactMatch:
    from rapidfuzz import fuzz

    fact_norm = normalize(fact_text)
    words = _content(fact_norm).split()
    negations = _NEGATIONS & set(words)
    best, best_piece = 0.0, ""
    wanted = set(words)
    for piece, norm, piece_words, stems in _decision_pieces(summary):
        if not wanted & piece_words or not negations <= piece_words:  # cheap filter
            continue
        score = _coverage(words, stems)
        if len(norm) >= len(fact_norm):
            score = max(score, float(fuzz.partial_ratio(fact_norm, norm)))
        if score > best and _numbers_ok(fact_text, norm):
            best, best_piece = score, piece
    return FactMatch(best >= DECISION_THRESHOLD, best, best_piece[:200])


def fact_kept(fact: Fact, summary: str) -> FactMatch:
    """Is ``fact`` in ``summary``? (The rules are in the module docstring.)

    >>> from memorylab.evaluate.cases import Fact
    >>> fact_kept(Fact("f1", "number", "52.3"), "The P/E ratio is 52.30.").kept
    True
    >>> fact_kept(Fact("f1", "number", "52.3"), "The P/E ratio is 52.4.").kept
    False
    """
    if fact.category == "decision":
        return _match_decision(fact.text, summary)
    hay = normalize(summary)
    needle = normalize(fact.text)
    if fact.category == "command":
        needle = needle.removeprefix("$ ").strip()
    if fact.category == "number" and numbers_in(needle):
        return _match_number(needle, hay)
    at = _find_whole(needle, hay)
    if at >= 0:
        return FactMatch(True, 100.0, _snippet(hay, at, len(needle)))
    if fact.category == "name":
        target = _squash(needle)
        for token in re.findall(r"[\w.\-]+", hay):
            if _squash(token) == target and target:
                return FactMatch(True, 95.0, token)
        words = hay.split()
        for width in (2, 3, 4):
            for i in range(len(words) - width + 1):
                if target and _squash("".join(words[i : i + width])) == target:
                    return FactMatch(True, 90.0, " ".join(words[i : i + width]))
    return FactMatch(False, 0.0)
