"""Redaction of secrets and personal data before text reaches disk (PURE: no I/O, no clock).

A :class:`Redactor` is a callable ``str -> str`` that replaces what it finds with a marker naming
what was removed, e.g. ``[REDACTED:openai_key]``. :data:`SECRETS` (the default of
``Conversation(redact=...)``) catches credentials; :data:`SECRETS_AND_PII` also catches personal
data: emails, phone numbers, card numbers (Luhn check) and IBANs (mod-97 check).

>>> SECRETS("use sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0Ab for the demo")
'use [REDACTED:openai_key] for the demo'
>>> SECRETS_AND_PII("write to ada@example.com")
'write to [REDACTED:email]'

The rules are precompiled standard-library ``re`` patterns: no network, no model (the substring
pre-checks below use stringzilla on long ASCII text). Redaction is idempotent
(``r(r(x)) == r(x)``): markers never match a rule, and the rules are applied until nothing changes.
Ordinary text is returned after a few substring checks, without running any pattern: every
secret rule needs one of ``sk-``, ``-----BEGIN``, ``xox``, ``gh`` with ``_``, ``://`` with ``@``,
``eyJ``, ``AKIA``/``ASIA``, ``earer`` (Bearer), or a word a credential keyword ends with
(password, pwd, secret, token, authorization, key) right before a ``:`` or ``=``; every PII rule
needs ``@`` or a digit.
Text that passes those checks is scanned rule by rule (each rule skipped unless its own
substrings are there): a few microseconds per message.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from stringzilla import contains as _contains
from stringzilla import find as _find

from memorylab.memory._redact_rules import (
    ALL_CATEGORIES,
    PII_CATEGORIES,
    RULES,
    SECRET_CATEGORIES,
    Rule,
    has_digit,
)

__all__ = [
    "ALL_CATEGORIES",
    "MARKER",
    "PII_CATEGORIES",
    "SECRETS",
    "SECRETS_AND_PII",
    "SECRET_CATEGORIES",
    "Finding",
    "Redactor",
    "redact_values",
    "resolve_redactor",
]

MARKER = "[REDACTED:{category}]"
"""What replaces a finding; ``category`` is one of :data:`ALL_CATEGORIES`."""

_MAX_PASSES = 8

# ---------------------------------------------------------------------------------------------
# Fast pre-checks (necessary conditions: when they say no, no rule can match)

# Every "keyword = value" / "keyword: value" rule has a keyword ending in one of these words
# right before the separator (an optional quote and up to 3 spaces between).
_KEY_WORDS = (
    "password", "passwd", "pwd", "secret", "token", "authorization", "apikey", "api_key",
    "api-key", "secretkey", "secret_key", "secret-key", "accesskey", "access_key",
)  # fmt: skip
_KEY_ENDS = "dtnyDTNY\"' \t"  # the last letters of those words, or what may follow them

# Every credential word (and every keyword a rule matches) ends with one of these.
_KEY_TAILS = ("password", "passwd", "pwd", "secret", "token", "authorization", "key")
_SEPARATOR_AFTER_KEY = re.compile(r"[\"']?[ \t]{0,3}[:=]").match
_FEW_SEPARATORS = 12  # looked behind one by one; past that, the tails are found


def _keyword_before_separator(text: str) -> bool:
    """Whether a word a credential keyword ends with stands right before a ``:`` or ``=``
    (``"password: "``, ``'token='``, ``"API_KEY" =``), case-insensitively.

    A necessary condition only ("monkey: 3" passes; the rules then decide), computed the cheaper
    way: behind each of the first few separators; past those (code, logs, JSON), by finding the
    keyword tails and looking after each for a separator (``str.find`` of a word skips text at C
    speed, where a Python loop over every separator cost ~20 µs per KB of logs).
    """
    visited = 0
    for separator in ":=":
        at = text.find(separator, 1)
        while at > 0:
            visited += 1
            if visited > _FEW_SEPARATORS:
                return _tail_before_separator(text.lower())
            if text[at - 1] in _KEY_ENDS and text[max(0, at - 20) : at].rstrip(
                " \t\"'"
            ).lower().endswith(_KEY_TAILS):
                return True
            at = text.find(separator, at + 1)
    return False


def _tail_before_separator(lowered: str, find: Callable[[str, str, int], int] = str.find) -> bool:
    """Whether a keyword tail in ``lowered`` is followed by a separator; ``find`` is
    ``str.find`` or, for ASCII text, stringzilla's (the same offsets there, SIMD speed)."""
    for tail in _KEY_TAILS:
        at = find(lowered, tail, 0)
        while at >= 0:
            if _SEPARATOR_AFTER_KEY(lowered, at + len(tail)) is not None:
                return True
            at = find(lowered, tail, at + 1)
    return False


def _separator_may_follow_key(text: str) -> bool:
    """Whether a ``:`` or ``=`` could follow a credential word: the first one follows a letter
    such a word ends with, or there is more than one (``str.find``: ``memchr`` speed)."""
    return (
        (at := text.find(":")) >= 0 and (text[at - 1] in _KEY_ENDS or text.find(":", at + 1) >= 0)
    ) or (
        (at := text.find("=")) >= 0 and (text[at - 1] in _KEY_ENDS or text.find("=", at + 1) >= 0)
    )


_SIMD_MIN_CHARS = 256  # shorter text: ``in`` costs less than a call into stringzilla


def may_hold_secret(text: str) -> bool:
    """False only when no secret rule can match ``text`` (the per-message fast path).

    Substring tests only, unless the text has a ``:`` or ``=`` that could follow a credential
    word (the first one follows a letter such a word ends with, or there is more than one).
    Single characters are found with ``in`` (``memchr``). Longer needles in a long ASCII text
    are found with stringzilla's SIMD search, ~8x faster than ``in`` on a KB: the same test,
    written out twice (``in`` is an operator, not a call), both checked by a test.
    stringzilla reads UTF-8 and crashes on a lone surrogate, so other text keeps ``in``.
    """
    if len(text) >= _SIMD_MIN_CHARS and text.isascii():
        return _long_ascii_may_hold_secret(text)
    return (
        ("-" in text and ("sk-" in text or "-----BEGIN" in text))
        or "xox" in text
        or ("_" in text and ("gh" in text or "github_pat_" in text))
        or ("@" in text and "://" in text)
        or ("J" in text and "eyJ" in text)
        or "earer" in text
        or ("A" in text and ("AKIA" in text or "ASIA" in text))
        or (_separator_may_follow_key(text) and _keyword_before_separator(text))
    )


def _long_ascii_may_hold_secret(text: str) -> bool:
    has = _contains
    return (
        ("-" in text and (has(text, "sk-") or has(text, "-----BEGIN")))
        or has(text, "xox")
        or ("_" in text and (has(text, "gh") or has(text, "github_pat_")))
        or ("@" in text and has(text, "://"))
        or ("J" in text and has(text, "eyJ"))
        or has(text, "earer")
        or ("A" in text and (has(text, "AKIA") or has(text, "ASIA")))
        or (_separator_may_follow_key(text) and _tail_before_separator(text.lower(), _find))
    )


def may_hold_pii(text: str) -> bool:
    """False only when no PII rule can match ``text``."""
    return "@" in text or has_digit(text) is not None


def _scan(rules: tuple[Rule, ...], text: str) -> list[tuple[int, int, str]]:
    """Non-overlapping ``(start, end, category)`` spans in order; earlier rules win overlaps."""
    starts: list[int] = []
    taken: list[tuple[int, int, str]] = []
    lowered: str | None = None
    digits: bool | None = None
    for rule in rules:
        if rule.digit:
            if digits is None:
                digits = has_digit(text) is not None
            if not digits:
                continue
        elif rule.needles:
            if rule.lower and lowered is None:
                lowered = text.lower()
            haystack = lowered if rule.lower and lowered is not None else text
            if not any(needle in haystack for needle in rule.needles):
                continue
        for match in rule.pattern.finditer(text):
            span = rule.span(match)
            if span is None:
                continue
            start, end = span
            at = bisect_left(starts, start)
            if (at > 0 and taken[at - 1][1] > start) or (at < len(taken) and taken[at][0] < end):
                continue
            starts.insert(at, start)
            taken.insert(at, (start, end, rule.category))
    return taken


# ---------------------------------------------------------------------------------------------
# The redactor


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing a redactor removes: its category and where it is (``text[start:end]``).

    The matched text is not kept, so findings can be logged for an audit.
    """

    category: str
    start: int
    end: int

    def __str__(self) -> str:
        return f"{self.category} at {self.start}-{self.end}"


def _never(text: str) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class Redactor:
    """Replaces secrets (and, if asked, personal data) with ``[REDACTED:<category>]``.

    ``categories`` picks the rules (any of :data:`ALL_CATEGORIES`); the presets are
    :data:`SECRETS` and :data:`SECRETS_AND_PII`. Call it on a string to redact it;
    :meth:`findings` says what it would remove and where, without the removed text.

    >>> Redactor(frozenset({"email"}))("ada@example.com, password=hunter2")
    '[REDACTED:email], password=hunter2'
    """

    categories: frozenset[str] = frozenset(SECRET_CATEGORIES)
    _rules: tuple[Rule, ...] = field(init=False, repr=False, compare=False)
    _maybe: Callable[[str], bool] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        given = self.categories
        chosen = frozenset((given,) if isinstance(given, str) else given)
        unknown = sorted(chosen - set(ALL_CATEGORIES))
        if unknown:
            raise ValueError(f"unknown redaction categories {unknown}; known: {ALL_CATEGORIES}")
        secrets, pii = bool(chosen & set(SECRET_CATEGORIES)), bool(chosen & set(PII_CATEGORIES))
        maybe: Callable[[str], bool] = _never
        if secrets and pii:

            def maybe(text: str) -> bool:
                return may_hold_secret(text) or may_hold_pii(text)

        elif secrets or pii:
            maybe = may_hold_secret if secrets else may_hold_pii
        object.__setattr__(self, "categories", chosen)
        object.__setattr__(self, "_rules", tuple(r for r in RULES if r.category in chosen))
        object.__setattr__(self, "_maybe", maybe)

    def __call__(self, text: str) -> str:
        """``text`` with every finding replaced by its marker (the same object when none)."""
        if not self._maybe(text):
            return text
        for _ in range(_MAX_PASSES):  # a replacement can expose a match beside it (rare)
            spans = _scan(self._rules, text)
            if not spans:
                break
            pieces: list[str] = []
            last = 0
            for start, end, category in spans:
                pieces += (text[last:start], MARKER.format(category=category))
                last = end
            pieces.append(text[last:])
            text = "".join(pieces)
        return text

    def findings(self, text: str) -> list[Finding]:
        """What calling the redactor removes from ``text``, in order, as positions in ``text``.

        >>> [str(f) for f in SECRETS.findings("token: ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8")]
        ['github_token at 7-47']
        """
        if not self._maybe(text):
            return []
        return [Finding(category, start, end) for start, end, category in _scan(self._rules, text)]

    def __repr__(self) -> str:
        if self.categories == frozenset(SECRET_CATEGORIES):
            return "SECRETS"
        if self.categories == frozenset(ALL_CATEGORIES):
            return "SECRETS_AND_PII"
        return f"Redactor({sorted(self.categories)!r})"


SECRETS = Redactor(frozenset(SECRET_CATEGORIES))
"""The default: API keys and tokens, private keys, passwords in URLs and assignments."""

SECRETS_AND_PII = Redactor(frozenset(ALL_CATEGORIES))
""":data:`SECRETS` plus emails, phone numbers, card numbers (Luhn) and IBANs (mod 97)."""


def redact_values(value: Any, redactor: Callable[[str], str]) -> Any:
    """``value`` with every string in it (also inside dicts, lists and tuples) redacted."""
    if isinstance(value, str):
        return redactor(value)
    if isinstance(value, dict):
        return {key: redact_values(item, redactor) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact_values(item, redactor) for item in value]
    return value


def resolve_redactor(redact: Callable[[str], str] | bool | None) -> Callable[[str], str] | None:
    """What a ``redact=`` option means: ``True`` -> :data:`SECRETS`; ``None`` or ``False`` -> no
    redaction; any callable ``str -> str`` -> itself (it replaces the built-in rules)."""
    if redact is None or redact is False:
        return None
    if redact is True:
        return SECRETS
    if not callable(redact):
        raise TypeError(
            "redact must be a callable str -> str (e.g. memorylab.SECRETS_AND_PII), True, False "
            f"or None; got {type(redact).__name__}"
        )
    return redact
