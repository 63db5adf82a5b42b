"""The redaction rules (PURE): one precompiled pattern per category, the substrings that must be
present for it to run, and the checks a match must pass (Luhn, IBAN mod 97, phone shapes,
placeholder values). Private to :mod:`memorylab.memory.redact`, which applies them."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

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
