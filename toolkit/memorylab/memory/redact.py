"""Redaction of secrets and personal data before text reaches disk (PURE: no I/O, no clock).

A :class:`Redactor` is a callable ``str -> str`` that replaces what it finds with a marker naming
what was removed, e.g. ``[REDACTED:openai_key]``. :data:`SECRETS` (the default of
``Conversation(redact=...)``) catches credentials; :data:`SECRETS_AND_PII` also catches personal
data: emails, phone numbers, card numbers (Luhn check) and IBANs (mod-97 check).

>>> SECRETS("use sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0Ab for the demo")
'use [REDACTED:openai_key] for the demo'
>>> SECRETS_AND_PII("write to ada@example.com")
'write to [REDACTED:email]'

The rules are precompiled standard-library ``re`` patterns: no network, no model. Redaction
is idempotent (``r(r(x)) == r(x)``): markers never match a rule, and the rules are applied until
nothing changes. Ordinary text is returned after a few substring checks, without running any
pattern: every secret rule needs one of ``sk-``, ``-----BEGIN``, ``xox``, ``gh`` with ``_``,
``://`` with ``@``, ``eyJ``, ``AKIA``/``ASIA``, ``earer`` (Bearer), or a word a credential keyword
ends with (password, pwd, secret, token, authorization, key) right before a ``:`` or ``=``; every
PII rule needs ``@`` or a digit. Text that passes those checks is scanned rule by rule (each rule
skipped unless its own substrings are there).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ALL_CATEGORIES",
    "Finding",
    "MARKER",
    "PII_CATEGORIES",
    "RULES",
    "Redactor",
    "Rule",
    "SECRETS",
    "SECRETS_AND_PII",
    "SECRET_CATEGORIES",
    "may_hold_pii",
    "may_hold_secret",
    "redact_values",
    "resolve_redactor",
]

MARKER = "[REDACTED:{category}]"
"""What replaces a finding; ``category`` is one of :data:`ALL_CATEGORIES`."""

_MAX_PASSES = 8

# ---------------------------------------------------------------------------------------------
# The rules: one precompiled pattern per category, the substrings that must be present for it
# to run, and the checks a match must pass (Luhn, IBAN mod 97, phone shapes, placeholders)

MARKED = "[REDACTED:"  # how every marker starts: a match inside one is never redacted again
has_digit = re.compile(r"\d").search

# -------------------------------------------------------------------------------------------
# Value checks


def _luhn(digits: str) -> bool:
    total = 0
    for position, char in enumerate(reversed(digits)):
        n = ord(char) - 48
        if position % 2:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


def _card_brand_ok(d: str) -> bool:
    n, p2, p4 = len(d), int(d[:2]), int(d[:4])
    return (
        (d[0] == "4" and n in (13, 16, 19))
        or ((51 <= p2 <= 55 or 2221 <= p4 <= 2720) and n == 16)
        or (p2 in (34, 37) and n == 15)
        or ((p4 == 6011 or p2 == 65 or 644 <= int(d[:3]) <= 649 or p2 == 62) and 16 <= n <= 19)
        or ((300 <= int(d[:3]) <= 305 or p2 in (36, 38, 39)) and 14 <= n <= 19)
        or (3528 <= p4 <= 3589 and 16 <= n <= 19)
    )


def _card_ok(text: str) -> bool:
    digits = re.sub(r"[ -]", "", text)
    return 13 <= len(digits) <= 19 and _card_brand_ok(digits) and _luhn(digits)


_IBAN_TABLE = (  # country code and IBAN length
    "AD24 AE23 AL28 AT20 AZ28 BA20 BE16 BG22 BH22 BR29 BY28 CH21 CR22 CY28 CZ24 DE22 DK18 DO28 "
    "EE20 EG29 ES24 FI18 FO18 FR27 GB22 GE22 GI23 GL18 GR27 GT28 HR21 HU28 IE22 IL23 IQ23 IS26 "
    "IT27 JO30 KW30 KZ20 LB28 LC32 LI21 LT20 LU20 LV21 MC27 MD24 ME22 MK19 MR27 MT31 MU30 NL18 "
    "NO15 PK24 PL28 PS29 PT25 QA29 RO24 RS22 SA24 SC31 SE24 SI19 SK24 SM27 ST25 SV28 TL23 TN24 "
    "TR26 UA29 VA22 VG24 XK20"
)
_IBAN_LENGTHS = {entry[:2]: int(entry[2:]) for entry in _IBAN_TABLE.split(" ")}


def _iban_ok(text: str) -> bool:
    iban = text.replace(" ", "")
    if _IBAN_LENGTHS.get(iban[:2]) != len(iban):
        return False
    rearranged = iban[4:] + iban[:4]
    return int("".join(str(int(char, 36)) for char in rearranged)) % 97 == 1


def _phone_ok(text: str) -> bool:
    digits = sum(char.isdigit() for char in text)
    if text.startswith("+"):
        separated = any(not char.isdigit() for char in text[1:])
        return 8 <= digits <= 15 and (separated or digits >= 10)
    if text.startswith("0"):
        return 9 <= digits <= 12
    return digits == 10


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_.]*\Z")  # a variable or dotted name, no digits
_PLACEHOLDER = ("$", "%", "{", "<", "/", "~/", "./", "*", "•", "...", "xxx", "XXX")


def _value_ok(value: str, minimum: int, quoted: bool) -> bool:
    if len(value) < minimum or value.startswith(_PLACEHOLDER):
        return False
    return quoted or _IDENTIFIER.match(value) is None  # password=password is code, not a secret


def _token_ok(value: str) -> bool:
    """Credentials, not a word: a digit, ``+/=``, or two capitals among lower-case letters."""
    if has_digit(value) is not None or any(c in value for c in "+/="):
        return True
    return sum(c.isupper() for c in value) >= 2 and value.upper() != value


# ---------------------------------------------------------------------------------------------
# The rules, most specific first (an earlier rule wins where two overlap)


@dataclass(frozen=True, slots=True)
class Rule:
    category: str
    pattern: re.Pattern[str]
    needles: tuple[str, ...]  # the rule runs only if one is in the text (lower-cased if lower)
    check: Callable[[re.Match[str]], bool] | None = None
    lower: bool = False
    digit: bool = False  # runs only if the text has a digit (needles unused)

    def span(self, match: re.Match[str]) -> tuple[int, int] | None:
        """The part to replace (the ``q`` or ``v`` group when the rule has one), if it passes."""
        groups = match.re.groupindex
        name: str | int = 0
        if "q" in groups and match["q"] is not None:
            name = "q"
        elif "v" in groups:
            name = "v"
        if match[name].startswith(MARKED) or (self.check is not None and not self.check(match)):
            return None
        return match.span(name)


def _kw_rule(category: str, keywords: str, minimum: int, *needles: str) -> Rule:
    """``keyword = value`` / ``keyword: value`` (quoted or not; the key may be quoted too)."""
    pattern = re.compile(
        rf"(?<![A-Za-z0-9])(?i:{keywords})[\"']?[ \t]{{0,3}}[:=][ \t]*"
        r"(?:(?P<quote>[\"'])(?P<q>[^\"'\n]{1,200})(?P=quote)"
        r"|(?P<v>[^\s'\"`,;()\[\]{}<>&=][^\s'\"`,;()\[\]{}<>&]{0,199})(?=[\s,;)\]}>&#]|\Z))"
    )

    def check(m: re.Match[str]) -> bool:
        quoted = m["q"] is not None
        return _value_ok(m["q"] if quoted else m["v"], minimum, quoted)

    return Rule(category, pattern, needles, check, lower=True)


_KEY = r"[A-Za-z0-9_-]"
_SEP_END = r"(?![\w]|[.-]\d)"
_digits_and_letters = re.compile(r"(?=.*\d)(?=.*[A-Za-z])", re.S).match

RULES: tuple[Rule, ...] = (
    Rule(
        "private_key",
        re.compile(
            r"-----BEGIN (?P<kind>[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?)-----"
            r"(?:[\s\S]*?-----END (?P=kind)-----"
            r"|(?:\r?\n(?:[A-Za-z0-9+/=]{8,}|(?:Proc-Type|DEK-Info|Comment|Version):[^\n]*"
            r"|[ \t]*(?=\r?\n|\Z)))*)"
        ),
        ("-----BEGIN",),
    ),
    Rule(
        "anthropic_key",
        re.compile(rf"(?<!{_KEY})sk-ant-{_KEY}{{20,}}(?!{_KEY})"),
        ("sk-ant-",),
        lambda m: has_digit(m[0][7:]) is not None,
    ),
    Rule(
        "openai_key",
        re.compile(rf"(?<!{_KEY})sk-(?!ant-)(?:proj-|svcacct-|admin-)?{_KEY}{{20,}}(?!{_KEY})"),
        ("sk-",),
        lambda m: _digits_and_letters(m[0][3:]) is not None,
    ),
    Rule(
        "github_token",
        re.compile(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{30,})(?!\w)"),
        ("gh", "github_pat_"),
        lambda m: has_digit(m[0]) is not None,
    ),
    Rule(
        "slack_token",
        re.compile(r"(?<![A-Za-z0-9-])xox[baprs]-[A-Za-z0-9-]{10,}(?![A-Za-z0-9-])"),
        ("xox",),
        lambda m: has_digit(m[0]) is not None,
    ),
    Rule(
        "aws_access_key",
        re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
        ("AKIA", "ASIA"),
    ),
    Rule(
        "aws_secret_key",
        re.compile(
            r"(?i:aws_?secret_?access_?key|aws_?secret_?key|secret_?access_?key)[\"']?[ \t]{0,3}"
            r"[:=][ \t]*[\"']?(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        ),
        ("secret",),
        lower=True,
    ),
    Rule(
        "jwt",
        re.compile(rf"(?<!{_KEY})eyJ{_KEY}{{10,}}\.{_KEY}{{10,}}\.{_KEY}*(?!{_KEY})"),
        ("eyJ",),
    ),
    Rule(
        "url_password",
        re.compile(
            r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:/@?#\[\]]*:"
            r"(?P<v>(?!\[REDACTED:)[^\s/@?#]+)@"
        ),
        ("://",),
    ),
    Rule(
        "bearer_token",
        re.compile(r"(?<![A-Za-z0-9])[Bb]earer[ \t]+(?P<v>[A-Za-z0-9._~+/-]{16,}=*)(?![\w.~+/=-])"),
        ("earer",),
        lambda m: has_digit(m["v"]) is not None,
    ),
    Rule(
        "authorization",
        re.compile(
            r"(?<![A-Za-z0-9])(?i:authorization)[\"']?[ \t]{0,3}[:=][ \t]*[\"']?"
            r"(?:[A-Za-z]+[ \t]+)?(?P<v>[A-Za-z0-9._~+/-]{8,}=*)(?![\w.~+/=-])"
        ),
        ("authorization",),
        lambda m: _token_ok(m["v"]),
        lower=True,
    ),
    _kw_rule("password", "password|passwd|pwd", 3, "pass", "pwd"),
    _kw_rule("api_key", r"(?:x[_-])?api[_-]?key", 8, "api"),
    _kw_rule(
        "secret",
        r"(?:client|app|consumer)[_-]?secret|secret(?:[_-]?key)?"
        r"|(?:access|auth|refresh|session|api|id)[_-]?token|token",
        8,
        "secret",
        "token",
    ),
    # -- personal data (opt-in) ---------------------------------------------------------------
    Rule(
        "email",
        re.compile(
            r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@"
            r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![A-Za-z0-9-])"
        ),
        ("@",),
    ),
    Rule(
        "iban",
        re.compile(
            r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?"
            r"(?![A-Za-z0-9])"
        ),
        (),
        lambda m: _iban_ok(m[0]),
        digit=True,
    ),
    Rule(
        "card_number",
        re.compile(
            r"(?<![\w.-])(?:\d{13,19}|\d{4}(?P<s>[ -])"
            r"(?:\d{4}(?P=s)\d{4}(?P=s)\d{4}(?:(?P=s)\d{3})?|\d{6}(?P=s)\d{4,5}))" + _SEP_END
        ),
        (),
        lambda m: _card_ok(m[0]),
        digit=True,
    ),
    Rule(
        "phone",
        re.compile(
            r"(?<![\w+/.-])(?:\+[1-9]\d{0,3}(?:[ .-]?(?:\(\d{1,5}\)|\d{1,5})){1,7}"
            r"|\(\d{3}\)[ -]?\d{3}[-. ]\d{4}|\d{3}(?P<s>[-.])\d{3}(?P=s)\d{4}"
            rf"|0\d{{1,4}}(?:[ -]\d{{2,4}}){{2,4}}|0\d{{1,4}} \d{{5,8}}){_SEP_END}"
        ),
        (),
        lambda m: _phone_ok(m[0]),
        digit=True,
    ),
)

PII_CATEGORIES: tuple[str, ...] = ("email", "iban", "card_number", "phone")
SECRET_CATEGORIES: tuple[str, ...] = tuple(
    dict.fromkeys(r.category for r in RULES if r.category not in PII_CATEGORIES)
)
ALL_CATEGORIES: tuple[str, ...] = SECRET_CATEGORIES + PII_CATEGORIES


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
    speed, where a Python loop over every separator is slow on logs and code).
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


def _tail_before_separator(lowered: str) -> bool:
    """Whether a keyword tail in ``lowered`` is followed by a separator."""
    for tail in _KEY_TAILS:
        at = lowered.find(tail)
        while at >= 0:
            if _SEPARATOR_AFTER_KEY(lowered, at + len(tail)) is not None:
                return True
            at = lowered.find(tail, at + 1)
    return False


def _separator_may_follow_key(text: str) -> bool:
    """Whether a ``:`` or ``=`` could follow a credential word: the first one follows a letter
    such a word ends with, or there is more than one (``str.find``: ``memchr`` speed)."""
    return (
        (at := text.find(":")) >= 0 and (text[at - 1] in _KEY_ENDS or text.find(":", at + 1) >= 0)
    ) or (
        (at := text.find("=")) >= 0 and (text[at - 1] in _KEY_ENDS or text.find("=", at + 1) >= 0)
    )


def may_hold_secret(text: str) -> bool:
    """False only when no secret rule can match ``text`` (the per-message fast path).

    Substring tests only (``in`` skips text at C speed), unless the text has a ``:`` or ``=``
    that could follow a credential word (the first one follows a letter such a word ends with,
    or there is more than one).
    """
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
            "redact must be a callable str -> str (e.g. memorylab.memory.SECRETS_AND_PII), "
            f"True, False or None; got {type(redact).__name__}"
        )
    return redact
