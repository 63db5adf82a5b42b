"""Redaction of secrets and personal data before text reaches disk (PURE: no clock, no
environment; the only I/O is reading the packaged rule data, ``secret_rules.json``, once at
import).

A :class:`Redactor` is a callable ``str -> str`` that replaces what it finds with a marker naming
what was removed, e.g. ``[REDACTED:openai_key]``. :data:`SECRETS` (the default of
``Conversation(redact=...)``) catches credentials; :data:`SECRETS_AND_PII` also catches personal
data: emails, phone numbers, card numbers (Luhn check) and IBANs (mod-97 check).

>>> SECRETS("use sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0Ab for the demo")
'use [REDACTED:openai_key] for the demo'
>>> SECRETS_AND_PII("write to ada@example.com")
'write to [REDACTED:email]'

The secret rules are gitleaks' (https://github.com/gitleaks/gitleaks, ``config/gitleaks.toml``,
MIT licence): 220 of its 222 rules, converted to Python ``re`` patterns by
``tests/privacy/make_redaction_rules.py`` and packaged as ``secret_rules.json`` (:data:`GITLEAKS`
says from which commit); each pattern compiles the first time its rule runs. memorylab's own
rules (``_OWN_RULES``) run where gitleaks is silent or narrower: passwords and keywords,
URLs with passwords, cookies, headers, presigned URLs, PEM blocks cut short, broader shapes of
some provider tokens. No network, no model, no scanner. memorylab's checks apply to every
rule: placeholders (``sk_live_xxxx…``, ``<token>``, ``${X}``, ``your-token-here``), and the
look-alikes they are tested against (git SHAs, UUIDs, hashes, base64 images, code that names a
password). Redaction is idempotent (``r(r(x)) == r(x)``): markers never match a rule, and the
rules are applied until nothing changes.

Ordinary text is returned after substring checks, without running any pattern (the fast path,
:func:`may_hold_secret`): every secret rule names the substrings one of which each of its
matches holds (its needles: a token prefix such as ``sk-``, ``hf_`` or ``dapi``,
``-----BEGIN``, ``://`` with ``@``, ``Bearer``, ``mysql`` with ``-p``...), or is a keyword rule
(memorylab's, or a gitleaks keyword template) whose label ends with a word the fast path looks
for (password, pwd, secret, token, authorization, key, sig) right before a ``:`` or ``=``; every
PII rule needs ``@`` or a digit. On text that passes, only the rules whose needles are there
run (:class:`_Plan`), found at a rare character they start or end with, or in the text's labels.
"""

from __future__ import annotations

import collections
import functools
import json
import math
import re
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memorylab.memory._format import content_to_text, validate_role

MARKER = "[REDACTED:{category}]"
"""What replaces a finding; ``category`` is one of :data:`ALL_CATEGORIES`."""

_MAX_PASSES = 8

# ---------------------------------------------------------------------------------------------
# The rules: one precompiled pattern per category, the substrings that must be present for it
# to run, and the checks a match must pass (Luhn, IBAN mod 97, phone shapes, placeholders)

MARKED = "[REDACTED:"  # how every marker starts: a match inside one is never redacted again
_VALUE_GROUPS = ("q", "v", "w")  # a rule's pattern names the part it replaces with one of these
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


def _elided(value: str) -> bool:
    """A placeholder: cut short (``sk-ant-...``) or of few distinct characters (``XXXX…``)."""
    return "..." in value or "\u2026" in value or len(set(value)) < min(8, (len(value) + 1) // 2)


# the words of a value that documentation shows in place of a key (``xoxb-your-token-here``)
_DOC_VALUE = re.compile(
    r"(?i)your[-_ ]|[-_ ]here\b|(?:token|key|secret|string|value)[-_ ]?here|random[-_ ]?string"
    r"|change[-_]?me|placeholder|dummy|redacted"
).search
_KEY_MATERIAL = re.compile(r"[A-Za-z0-9+/]{16}").search  # a PEM body, not "anything"


def _value_ok(value: str, minimum: int, quoted: bool) -> bool:
    """A value given to a keyword: long enough, not a placeholder (``${X}``, ``<key>``,
    ``glpat-XXXX…``: few distinct characters; ``your-token-here``) and, unquoted, not a name
    (``password=password`` is code, not a secret)."""
    if len(value) < minimum or value.startswith(_PLACEHOLDER) or _elided(value):
        return False
    if _DOC_VALUE(value) is not None or _elided(max(_RUNS(value), key=len, default="")):
        return False  # your-token-here; sha256~_xxxxxx_xxxxxxxxxxxxxxxx-X: a placeholder
    return quoted or _IDENTIFIER.match(value) is None


def _token_ok(value: str) -> bool:
    """Credentials, not a word: a digit, ``+/=``, or two capitals among lower-case letters."""
    if has_digit(value) is not None or any(c in value for c in "+/="):
        return True
    return sum(c.isupper() for c in value) >= 2 and value.upper() != value


# ---------------------------------------------------------------------------------------------
# The rules, most specific first (an earlier rule wins where two overlap)


@dataclass(frozen=True, slots=True)
class Rule:
    """One kind of finding: a precompiled pattern, the substrings it needs, the checks a match
    must pass, and the category its marker names.

    ``needles``: every match contains one of them (lower-cased text when ``lower``); ``gate``: a
    substring every match contains as well (checked first). A ``lower`` rule is a keyword rule:
    its keyword ends with one of the tails the fast path looks for, right before a ``:``/``=``.
    """

    category: str
    pattern: re.Pattern[str]
    needles: tuple[str, ...]  # the rule runs only if one is in the text (lower-cased if lower)
    check: Callable[[re.Match[str]], bool] | None = None
    lower: bool = False
    digit: bool = False  # runs only if the text has a digit (needles unused)
    gate: str = ""  # and only if this is in the text too
    group: int | None = None  # gitleaks' secret group (0: the first, -1: all); None: ours
    origin: str = ""  # the gitleaks rule id, or "" for memorylab's own rules

    def span(self, match: re.Match[str]) -> tuple[int, int] | None:
        """The part to replace (the ``q``, ``v`` or ``w`` group when the rule has one; a gitleaks
        rule's secret group), if the match passes the rule's check."""
        if self.group is not None:
            start, end = _secret_span(match, self.group)
            if match.string.startswith(MARKED, start) or not (
                self.check is None or self.check(match)
            ):
                return None
            return start, _token_end(match.string, start, end)
        name: str | int = 0
        for group in _VALUE_GROUPS:  # the alternative that matched names its value
            if group in match.re.groupindex and match[group] is not None:
                name = group
                break
        if match[name].startswith(MARKED) or (self.check is not None and not self.check(match)):
            return None
        return match.span(name)


def _kw_rule(
    category: str,
    keywords: str,
    minimum: int,
    *needles: str,
    before: re.Pattern[str] | None = None,
) -> Rule:
    """``keyword = value`` / ``keyword: value`` (quoted or not; the key may be quoted too). The
    keyword may end a longer name (``PGPASSWORD``, ``db_password``, ``x-api-key``); ``before``,
    what must stand right before it (checked after a match: a pattern that starts with a
    keyword is searched for fast, one that starts with a choice of prefixes is tried at every
    character)."""
    pattern = re.compile(
        rf"(?i:{keywords})\\?[\"']?[ \t]{{0,3}}[:=][ \t]*"
        r"(?:(?P<quote>\\?[\"'])(?P<q>[^\"'\n]{1,4000}?)(?P=quote)"
        r"|(?P<v>[^\s'\"`,;()\[\]{}<>&=\\][^\s'\"`,;()\[\]{}<>&\\]{0,3999})"
        r"(?=[\s,;)\]}>&#\"'`\\]|\Z))"
    )

    words = category == "password"  # a password may be words; a key or token is not

    def check(m: re.Match[str]) -> bool:
        if (
            before is not None
            and before.search(m.string, max(0, m.start() - 16), m.start()) is None
        ):
            return False
        quoted = m["q"] is not None
        value = m["q"] if quoted else m["v"]
        return _value_ok(value, minimum, quoted) and (words or quoted or _token_ok(value))

    return Rule(category, pattern, needles, check, lower=True)


_QUOTED_OR_WORD = (  # an option's value: quoted, or one word (not an option, a marker, prose)
    r"(?:(?P<quote>[\"'])(?P<q>[^\"'\n]{1,200})(?P=quote)"
    r"|(?P<v>[^\s\"'`\[\-(<{][^\s\"'`]{0,199}))"
)


def _cli_value_ok(m: re.Match[str], minimum: int) -> bool:
    """A value given after a space: quoted, or a word that looks like a credential (a digit, a
    symbol or mixed case), so prose about an option (``--password option``) is left alone."""
    if m["q"] is not None:
        return _value_ok(m["q"], minimum, True)
    value = m["v"].rstrip(".,;:!?)]}>")
    if len(value) < minimum or value.startswith(_PLACEHOLDER) or _elided(value):
        return False
    return not value.isalnum() or _token_ok(value)


def _cli_rule(category: str, words: str, minimum: int, *needles: str) -> Rule:
    """``--[prefix-]word VALUE`` (``--password hunter2``, ``--db-password 'x y'``); the
    ``--word=VALUE`` form is a keyword rule's."""
    pattern = re.compile(
        rf"(?<![\w-])--(?!no-)(?:[a-z0-9]+-){{0,4}}(?:{words})[ \t]+" + _QUOTED_OR_WORD
    )
    return Rule(category, pattern, needles, lambda m: _cli_value_ok(m, minimum), gate="--")


def _short_password_ok(m: re.Match[str]) -> bool:
    value = m["q"] if m["q"] is not None else m["v"]
    return _value_ok(value, 3, True)


def _varied(value: str, distinct: int = 8) -> bool:
    """Random, not a placeholder: ``distinct`` different characters at least (a random 20-char
    token has about 17; ``xxxx…`` has 1)."""
    return len(set(value)) >= distinct


_PROVIDER_KEY_LENGTHS = {  # a key prefix and its body's length (the prefix left out)
    "gsk_": (48, 60), "xai-": (70, 90), "pplx-": (40, 60), "r8_": (30, 45),
    # the tools agents call (gitleaks has none of these): Supabase, Resend, Fireworks,
    # LangSmith, Pinecone, Tavily, E2B, Neon
    "sbp_": (40, 40), "sb_secret_": (24, 48), "re_": (30, 40), "fw_": (20, 40),
    "lsv2_pt_": (43, 43), "lsv2_sk_": (43, 43), "pcsk_": (50, 80), "tvly-": (32, 40),
    "tvly-dev-": (32, 40), "e2b_": (40, 40), "npg_": (12, 20),
}  # fmt: skip


def _provider_key_ok(m: re.Match[str]) -> bool:
    low, high = _PROVIDER_KEY_LENGTHS[m["p"]]
    body = m["b"]
    return low <= len(body) <= high and _varied(body) and _token_ok(body)


def _cookie_ok(m: re.Match[str]) -> bool:
    """A cookie header or argument holds a session-like value: 8+ characters that look random."""
    return any(len(v) >= 8 and _token_ok(v) for v in _COOKIE_VALUES(m["v"]))


_COOKIE_VALUES = re.compile(r"=([^;,\s]+)").findall
_KEY = r"[A-Za-z0-9_-]"
_TOKEN_START = r"(?<![\w-])"  # a token starts after none of its own characters
_TOKEN_END = r"(?![\w-])"
_B64_START = r"(?<![\w+/-])"  # a prefix of base64 letters (AIza, AKIA) does not continue a run
_B64_END = r"(?![\w+/=-])"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_AUTHORITY_END = r"(?:[/?#\s\"'`<>),;\]}|\\]|\Z)"
_HOST_AFTER = (  # after the @ of a URL's user info: a host, then the end of the authority
    rf"(?=(?:{_LABEL}(?:\.{_LABEL})+|\[[0-9A-Fa-f:.]{{2,45}}\]|localhost)(?::\d{{1,5}})?"
    rf"{_AUTHORITY_END}|{_LABEL}:\d{{1,5}}{_AUTHORITY_END}"  # a name with a dot or a port
    rf"|{_LABEL}(?![^\s\"'`<>]*@){_AUTHORITY_END})"  # a bare name: only at the last @ of the URL
)
_PORT_AND_PATH = re.compile(r"\d{1,5}/").match  # host:8080/@scope: a port, not a password
_SEP_END = r"(?![\w]|[.-]\d)"
_digits_and_letters = re.compile(r"(?=.*\d)(?=.*[A-Za-z])", re.S).match

# memorylab's own rules: where gitleaks' rule set (below, RULES) is silent, or narrower than
# what people paste (its comment says which). A provider token's prefix and alphabet follow
# gitleaks' rule of the same name (MIT licence); the boundaries, the placeholder checks
# (``_varied``: a random token has many distinct characters) and base64 neighbours are ours.
_OWN_RULES: tuple[Rule, ...] = (
    Rule(
        "private_key",
        re.compile(
            r"-----BEGIN (?P<kind>[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?)-----"
            r"(?:[\s\S]*?-----END (?P=kind)-----"
            r"|(?:\r?\n(?:[A-Za-z0-9+/=]{8,}|(?:Proc-Type|DEK-Info|Comment|Version):[^\n]*"
            r"|[ \t]*(?=\r?\n|\Z)))*)"
        ),
        ("-----BEGIN",),
        lambda m: _KEY_MATERIAL(m[0]) is not None,  # not a documentation block ("anything")
    ),
    Rule(  # broader than gitleaks' anthropic-api-key (any sk-ant- key, any length)
        "anthropic_key",
        re.compile(rf"(?<!{_KEY})sk-ant-{_KEY}{{20,}}(?!{_KEY})"),
        ("sk-ant-",),
        lambda m: has_digit(m[0][7:]) is not None,
    ),
    Rule(  # broader than gitleaks' openai-api-key (keys without T3BlbkFJ, any length)
        "openai_key",
        re.compile(rf"(?<!{_KEY})sk-(?!ant-)(?:proj-|svcacct-|admin-)?{_KEY}{{20,}}(?!{_KEY})"),
        ("sk-",),
        lambda m: _digits_and_letters(m[0][3:]) is not None,
    ),
    Rule(  # broader than gitleaks' github-* rules (tokens of other lengths)
        "github_token",
        re.compile(r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{30,})(?!\w)"),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        lambda m: has_digit(m[0]) is not None,
    ),
    Rule(  # broader than gitleaks' slack-* rules (any xox?- token with a digit)
        "slack_token",
        re.compile(r"(?<![A-Za-z0-9-])xox[baprs]-[A-Za-z0-9-]{10,}(?![A-Za-z0-9-])"),
        ("xoxb-", "xoxa-", "xoxp-", "xoxr-", "xoxs-"),
        lambda m: has_digit(m[0]) is not None and not _placeholder(m[0][5:]),
    ),
    Rule(  # Stripe webhook signing secrets (gitleaks has no rule)
        "stripe_key",
        re.compile(rf"{_TOKEN_START}whsec_(?P<b>[A-Za-z0-9+/=]{{24,100}})(?![\w+/=-])"),
        ("whsec_",),
        lambda m: _varied(m["b"]) and _token_ok(m["b"]),
    ),
    Rule(  # Tailscale auth, API, OAuth client, SCIM and webhook keys (gitleaks has no rule)
        "tailscale_key",
        re.compile(
            rf"{_TOKEN_START}tskey-(?:auth|api|client|scim|webhook)-(?P<b>[A-Za-z0-9]{{4,}}"
            r"-[A-Za-z0-9]{16,})" + _TOKEN_END
        ),
        ("tskey-",),
        lambda m: _varied(m["b"]) and _token_ok(m["b"]),
    ),
    Rule(  # Mailgun's private API key on its own (gitleaks' rule needs "mailgun" nearby)
        "mailgun_private_api_token",
        re.compile(rf"{_TOKEN_START}key-(?P<b>[0-9a-f]{{32}})" + _TOKEN_END),
        ("key-",),
        lambda m: _varied(m["b"]),
    ),
    Rule(  # PuTTY private key files (.ppk): the whole file, like a PEM block
        "private_key",
        re.compile(
            r"PuTTY-User-Key-File-\d+:[^\n\"\\]*"
            r"(?:(?:\r?\n|(?:\\r)?\\n)(?:[A-Za-z-]+:[^\n\"\\]*"
            r"|[A-Za-z0-9+/=]+(?=\r?\n|\\[rn]|[\"\\]|\Z)))*"
        ),
        ("PuTTY-User-Key-File-",),
    ),
    Rule(  # broader than gitleaks' aws-access-token (any A-Z0-9 body, its EXAMPLE keys too)
        "aws_access_key",
        re.compile(
            r"(?<![A-Za-z0-9+/])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}"
            r"(?![A-Za-z0-9])"
        ),
        ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
        lambda m: _varied(m[0][4:]),
    ),
    Rule(
        "aws_secret_key",
        re.compile(
            r"(?i:aws_?secret_?access_?key|aws_?secret_?key|secret_?access_?key)\\?[\"']?[ \t]{0,3}"
            r"[:=][ \t]*\\?[\"']?(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        ),
        ("secret",),
        lower=True,
    ),
    Rule(  # OAuth client secrets and access tokens of Google accounts
        "google_oauth",
        re.compile(rf"{_TOKEN_START}(?:GOCSPX-[\w-]{{28}}|ya29\.[\w-]{{30,}}){_TOKEN_END}"),
        ("GOCSPX-", "ya29."),
        lambda m: _varied(m[0][7:]),
    ),
    Rule(  # broader than gitleaks' huggingface-* rules (bodies with digits, 30-40 long)
        "huggingface_token",
        re.compile(rf"{_TOKEN_START}(?:hf|api_org)_(?P<b>[A-Za-z0-9]{{30,40}}){_TOKEN_END}"),
        ("hf_", "api_org_"),
        lambda m: _varied(m["b"]) and _token_ok(m["b"]),
    ),
    Rule(  # Docker Hub personal and organisation access tokens
        "dockerhub_token",
        re.compile(rf"{_TOKEN_START}dckr_(?:pat|oat)_(?P<b>[\w-]{{24,60}}){_TOKEN_END}"),
        ("dckr_",),
        lambda m: _varied(m["b"]),
    ),
    Rule(  # model providers with a key prefix: Groq, xAI, Replicate (gitleaks has none), Perplexity
        "model_provider_key",
        re.compile(
            rf"{_TOKEN_START}(?P<p>gsk_|xai-|pplx-|r8_)(?P<b>[A-Za-z0-9]{{30,90}}){_TOKEN_END}"
        ),
        ("gsk_", "xai-", "pplx-", "r8_"),
        _provider_key_ok,
    ),
    Rule(  # keys of the tools agents call (the table above): one random run after the prefix
        "model_provider_key",
        re.compile(
            rf"{_TOKEN_START}(?P<p>sbp_|sb_secret_|fw_|tvly-(?:dev-)?|e2b_|npg_)"
            rf"(?P<b>[A-Za-z0-9]{{12,48}}){_TOKEN_END}"
        ),
        ("sbp_", "sb_secret_", "fw_", "tvly-", "e2b_", "npg_"),
        _provider_key_ok,
    ),
    Rule(  # ... or two, joined by one _ (Resend, Pinecone, LangSmith)
        "model_provider_key",
        re.compile(
            rf"{_TOKEN_START}(?P<p>re_|pcsk_|lsv2_(?:pt|sk)_)"
            rf"(?P<b>[A-Za-z0-9]{{5,32}}_[A-Za-z0-9]{{10,70}}){_TOKEN_END}"
        ),
        ("re_", "pcsk_", "lsv2_"),
        _provider_key_ok,
    ),
    Rule(  # broader than gitleaks' telegram-bot-api-token: without its keyword
        "telegram_bot_token",
        re.compile(r"(?<![\w:])\d{8,10}:AA[\w-]{33}" + _TOKEN_END),
        (":AA",),
        lambda m: _varied(m[0].partition(":")[2]),
        gate="AA",
    ),
    Rule(  # broader than gitleaks' jwt (any header and payload, not only eyJ... ones)
        "jwt",
        re.compile(rf"(?<!{_KEY})eyJ{_KEY}{{10,}}\.{_KEY}{{10,}}\.{_KEY}*(?!{_KEY})"),
        ("eyJ",),
    ),
    Rule(  # broader than gitleaks' slack-webhook-url (other lengths); Discord's (none there)
        "webhook_url",
        re.compile(
            r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<v>[A-Za-z0-9+/_-]{20,120})"
            r"|discord(?:app)?\.com/api/webhooks/(?P<w>\d{16,20}/[\w-]{50,80})"
        ),
        ("hooks.slack.com", "/api/webhooks/"),
        lambda m: _varied(m["v"] or m["w"]),
        gate="/",
    ),
    Rule(  # Azure storage SAS URLs: the signature
        "url_signature",
        re.compile(r"(?<=[?&;])sig=(?P<v>[A-Za-z0-9%+/=._-]{16,400})"),
        ("sig=",),
        lambda m: _varied(m["v"]) and _token_ok(m["v"]),
        lower=True,
    ),
    Rule(  # AWS and GCS presigned URLs: the signature and the session token
        "url_signature",
        re.compile(
            r"(?<=[?&;])[Xx]-(?:[Aa]mz-[Ss]ignature|[Gg]oog-[Ss]ignature|[Aa]mz-[Ss]ecurity-[Tt]oken)"
            r"=(?P<v>[A-Za-z0-9%+/=._-]{16,4000})"
        ),
        ("-Amz-", "-amz-", "-Goog-", "-goog-"),
        lambda m: _varied(m["v"]) and _token_ok(m["v"]),
    ),
    Rule(  # Azure storage and Service Bus / Event Hubs connection strings
        "azure_key",
        re.compile(
            r"(?i:accountkey|sharedaccesskey)[ \t]{0,3}=[ \t]*(?P<v>[A-Za-z0-9+/]{30,100}={0,2})"
            r"(?![A-Za-z0-9+/=])"
        ),
        ("accountkey", "accesskey"),
        lambda m: _varied(m["v"]),
        lower=True,
    ),
    Rule(  # scheme://user:password@host; the password may hold @ / # : (the host decides)
        "url_password",
        re.compile(
            r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:/@?#\[\]]*:"
            r"(?P<v>(?!\[REDACTED:)[^\s\"'`<>]{1,200}?)@" + _HOST_AFTER
        ),
        ("://",),
        lambda m: _PORT_AND_PATH(m["v"]) is None,
        gate="@",
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
            r"(?<![A-Za-z0-9])(?i:authorization)\\?[\"']?[ \t]{0,3}[:=][ \t]*\\?[\"']?"
            r"(?:[A-Za-z]+[ \t]+)?(?P<v>[A-Za-z0-9._~+/-]{8,}=*)(?![\w.~+/=-])"
        ),
        ("authorization",),
        lambda m: _token_ok(m["v"]),
        lower=True,
    ),
    Rule(  # Cookie: / Set-Cookie: headers: the whole value
        "cookie",
        re.compile(
            r"(?<![\w-])(?:(?:[Ss]et-)?[Cc]ookie|(?:SET-)?COOKIE)[\"']?[ \t]{0,3}:"
            r"[ \t]*[\"']?(?P<v>[^\r\n\"'`]*=[^\r\n\"'`]*)"
        ),
        ("ookie", "OOKIE"),
        _cookie_ok,
        gate=":",
    ),
    Rule(  # curl -b 'name=value; ...' (and --cookie, below)
        "cookie",
        re.compile(r"\bcurl\b[^\n]{0,500}?[ \t]-b[ \t]+[\"']?(?P<v>[^\s\"'`]*=[^\s\"'`]*)"),
        ("curl",),
        _cookie_ok,
        gate="-b",
    ),
    Rule(
        "cookie",
        re.compile(r"(?<![\w-])--cookie[ \t]+[\"']?(?P<v>[^\s\"'`]*=[^\s\"'`]*)"),
        ("-cookie",),
        _cookie_ok,
        gate="--",
    ),
    # -- passwords and tokens on a command line ---------------------------------------------
    _cli_rule("password", "password|passwd|passphrase|pass", 3, "-pass"),
    _cli_rule("api_key", "api-key|apikey", 8, "-api-key", "-apikey"),
    _cli_rule(
        "secret", "token|secret|secret-key|access-key", 8, "-token", "-secret", "-access-key"
    ),
    Rule(  # mysql -pSECRET (attached: "-p SECRET" prompts and names a database)
        "password",
        re.compile(
            r"(?<![\w-])(?:mysql\w*|mariadb\w*)\b[^\n;|&]{0,300}?[ \t]-p"
            r"(?:(?P<quote>[\"'])(?P<q>[^\"'\n]{1,200})(?P=quote)|(?P<v>[^\s\"'`;|&\[-][^\s\"'`;|&]{0,199}))"
        ),
        ("mysql", "mariadb"),
        _short_password_ok,
        gate="-p",
    ),
    Rule(  # docker login -p SECRET, sshpass -p SECRET
        "password",
        re.compile(
            r"(?<![\w-])(?:(?:docker|podman|nerdctl|buildah)[ \t]+login|sshpass)\b"
            r"[^\n;|&]{0,300}?[ \t]-p(?:[ \t]+|(?=[^\s-]))" + _QUOTED_OR_WORD
        ),
        ("login", "sshpass"),
        _short_password_ok,
        gate="-p",
    ),
    # -- keyword = value ---------------------------------------------------------------------
    _kw_rule("password", "password|passwd|pwd", 3, "pass", "pwd"),
    _kw_rule(  # any key of an app, account or service (AZURE_STORAGE_KEY, DD_APP_KEY, X-Auth-Key)
        "api_key",
        "key",
        8,
        "key",
        before=re.compile(
            r"(?i:api|app|auth|access|account|storage|licen[cs]e|master|signing|encryption"
            r"|client|service|admin|subscription|ingest|webhook|dd)[ \t_-]?\Z"
        ),
    ),
    # client_secret, secret_key, access_token, refresh_token...: the keyword ends the name
    _kw_rule("secret", r"secret(?:[_-]?key)?|token", 8, "secret", "token"),
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


# ---------------------------------------------------------------------------------------------
# gitleaks' rules (secret_rules.json, generated from gitleaks' config/gitleaks.toml by
# tests/privacy/make_redaction_rules.py; MIT licence, Copyright (c) 2019 Zachary Rice)


def _entropy(text: str) -> float:
    """Shannon entropy in bits per character, as gitleaks computes it."""
    if not text:
        return 0.0
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in collections.Counter(text).values())


def _secret_span(match: re.Match[str], group: int) -> tuple[int, int]:
    """gitleaks' secret of a match: ``secretGroup``, else the first group that matched
    something, else the whole match (-1: the whole match, whatever groups it has)."""
    if group < 0:
        return match.span(0)
    if group:
        return match.span(group)
    skip = match.re.groupindex.get("sep")  # a label rule's separator (memorylab's name)
    for index in range(1, (match.re.groups or 0) + 1):
        if match[index] and index != skip:
            return match.span(index)
    return match.span(0)


_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_B64_CHARS = _TOKEN_CHARS | frozenset("+/=")


def _token_end(text: str, start: int, end: int) -> int:
    """Where the token a gitleaks rule found ends: some rules name a prefix and a length without
    a boundary (``glpat-[\\w-]{20}``), so a longer token would keep its tail on disk; the
    replaced part runs to the end of the token's characters."""
    chars = _B64_CHARS if any(c in "+/=" for c in text[start:end]) else _TOKEN_CHARS
    while end < len(text) and text[end] in chars:
        end += 1
    return end


def _line_of(match: re.Match[str]) -> str:
    text = match.string
    start = text.rfind("\n", 0, match.start()) + 1
    end = text.find("\n", match.end())
    return text[start : end if end >= 0 else len(text)]


_Allow = tuple[tuple["_LazyPattern", ...], str, tuple[str, ...], bool]


def _allowed(match: re.Match[str], secret: str, allows: tuple[_Allow, ...]) -> bool:
    """Whether one of gitleaks' allowlists of the rule lets the finding go."""
    for regexes, target, stopwords, both in allows:
        checks = []
        if regexes:
            subject = (
                secret if target == "secret" else match[0] if target == "match" else _line_of(match)
            )
            checks.append(any(r.search(subject) is not None for r in regexes))
        if stopwords:
            lowered = secret.lower()
            checks.append(any(word in lowered for word in stopwords))
        if checks and (all(checks) if both else any(checks)):
            return True
    return False


# A label rule (gitleaks' ``<keyword>... = value`` templates) counts where its label ends with a
# credential word right before a ``:`` or ``=`` (``DATADOG_APP_KEY=``, ``"mailgun_token":``):
# what the fast path's keyword check looks for.
_LABEL_END = re.compile(
    r"(?i:password|passwd|pwd|secret|token|authorization|key|sig)\\?[\"']?[ \t]{0,3}\Z"
)
_UNCHECKED = frozenset({"private-key", "kubernetes-secret-yaml", "curl-auth-user"})


_RUNS = re.compile(r"[A-Za-z0-9]+").findall
_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def _at_boundary(text: str, at: int) -> bool:
    """RE2's (ASCII) ``\\b`` at ``at``."""
    before = at > 0 and text[at - 1] in _WORD
    return before != (at < len(text) and text[at] in _WORD)


def _placeholder(secret: str) -> bool:
    """A documentation value, not a token: cut short, of few distinct characters in its longest
    run of letters and digits (``.../T00000000/B00000000/XXXXXXXX``), or a word (no digit, no
    ``+/=``, no mixed case)."""
    longest = max(_RUNS(secret), key=len, default="")
    return (
        _elided(secret)
        or _elided(longest)
        or not _token_ok(secret)
        or _DOC_VALUE(secret) is not None
    )


def _gitleaks_rule(entry: dict[str, Any], allow: _Allow) -> Rule:
    group: int = entry["group"]
    entropy: float = entry["entropy"]
    needles = tuple(entry["needles"])
    exact: bool = entry["exact"]  # a needle is in the match as written
    context: bool = entry["context"]  # a needle is in the text (the product's name)
    boundary: bool = entry["boundary"]  # the pattern's leading \b, checked here
    label: bool = entry["label"]
    allows = (
        *(
            (
                tuple(_LazyPattern(r) for r in a["regexes"]),
                a["target"],
                tuple(a["stopwords"]),
                a["and"],
            )
            for a in entry["allow"]
        ),
        allow,
    )
    shaped = entry["id"] not in _UNCHECKED  # a token, not a block or a user:password pair

    def check(m: re.Match[str]) -> bool:
        if boundary and not _at_boundary(m.string, m.start()):
            return False
        start, end = _secret_span(m, group)
        secret = m.string[start:end]
        if exact and not any(n in m[0] for n in needles):
            return False
        if context and not any(n in m.string for n in needles):
            return False
        if label and not (
            m.string[m.start("sep")] in ":="
            and _LABEL_END.search(m.string, m.start(), m.start("sep")) is not None
        ):
            return False
        if entropy and _entropy(secret) < entropy:
            return False
        if shaped and _placeholder(secret):
            return False
        return not _allowed(m, secret, allows)

    return Rule(
        entry["category"],
        _LazyPattern(entry["regex"]),  # type: ignore[arg-type]
        tuple(entry["keywords"]) if label else needles,
        check,
        lower=label,
        gate=entry["gate"],
        group=group,
        origin=entry["id"],
    )


class _LazyPattern:
    """A gitleaks pattern, compiled the first time a rule runs (importing memorylab compiles
    none of the ~200)."""

    __slots__ = ("_compiled", "pattern")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._compiled: re.Pattern[str] | None = None

    def _get(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, re.ASCII)
        return self._compiled

    def finditer(self, text: str) -> Any:
        return self._get().finditer(text)

    def search(self, text: str, *args: int) -> re.Match[str] | None:
        return self._get().search(text, *args)

    @property
    def groupindex(self) -> Any:
        return self._get().groupindex


def _load_gitleaks() -> tuple[dict[str, Any], tuple[Rule, ...]]:
    """The packaged rule data, read once at import (the only file this module reads)."""
    path = __file__[: -len("_redact.py")] + "secret_rules.json"
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    glob = data["allow"]
    allow: _Allow = (
        tuple(_LazyPattern(r) for r in glob["regexes"]),
        "secret",
        tuple(glob["stopwords"]),
        False,
    )
    return data, tuple(_gitleaks_rule(entry, allow) for entry in data["rules"])


GITLEAKS, _GITLEAKS_RULES = _load_gitleaks()
"""gitleaks' rule set as memorylab packages it: its source, licence and rules (``GITLEAKS``)."""

# Order: an earlier rule wins where two overlap. memorylab's PEM rule first (it also catches a
# key cut short), then gitleaks' rules, then memorylab's own where gitleaks is silent or
# narrower (see docs/privacy.md: which, and why).
RULES: tuple[Rule, ...] = (_OWN_RULES[0], *_GITLEAKS_RULES, *_OWN_RULES[1:])

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
    "api-key", "secretkey", "secret_key", "secret-key", "accesskey", "access_key", "accountkey",
    "sharedaccesskey", "sig",
)  # fmt: skip
_KEY_ENDS = "dtnygDTNYG\"' \t\\"  # those words' last letters, or what may follow them

# Every credential word (and every keyword a rule matches) ends with one of these.
_KEY_TAILS = (
    "password", "passwd", "pwd", "secret", "token", "authorization", "key", "sig",
)  # fmt: skip
_SEPARATOR_AFTER_KEY = re.compile(r"\\?[\"']?[ \t]{0,3}[:=]").match
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
                " \t\"'\\"
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


# The needles of every other secret rule, found in one of two ways (either finds a needle
# wherever it is; they differ only in cost):
# - passes: at each place one of a few characters stands (``-``, ``_``, ``A``), whether a needle
#   ends there (``sk-``, ``hf_``) or starts there (``-----BEGIN``, ``AKIA``), with
#   ``str.endswith``/``startswith`` of a tuple; whether a rule's gate starts there (``-p``,
#   ``--``) and then whether one of its needles is in the text. Past a few places the needles are
#   searched for instead;
# - the rest: the rule's gate or the needle's rarest character (``in``, memchr speed), then the
#   needle. Characters rank by their frequency in the bundled transcripts, rarest first.
_RARE_FIRST = (
    "&@^<>#~|Z$J!%VK*XYQH;Bz()UjG?WMq'R`LCEPADFN+O/xSvIT}{k_b7w8][9=5f.4gy63-h1umcdlp2:i0roa,"
    '\nst"e'
)
_ENDS_AT = "-_."  # token prefixes end with one of these
_STARTS_AT = "-A_"
_FEW_PLACES = 16
_PLACES_PER_NEEDLE = 4  # a place costs about a quarter of a needle's search of a 1 KB text

_Gated = tuple[str, tuple[str, ...]]  # a gate (or a needle's rarest character), needles
# the character; the needles that end at it, and the characters before it they need; those
# that start at it; the gates that start at it, with their needles; what may start at it
_Pass = tuple[
    str, tuple[str, ...], int, frozenset[str], tuple[str, ...], tuple[_Gated, ...], tuple[str, ...]
]


def _rarest(needle: str) -> str:
    return min(needle, key=lambda c: (c not in _RARE_FIRST, _RARE_FIRST.find(c)))


def _groups(pairs: list[tuple[str, str]]) -> tuple[_Gated, ...]:
    grouped: dict[str, list[str]] = {}
    for key, needle in pairs:
        grouped.setdefault(key, []).append(needle)
    return tuple((key, tuple(dict.fromkeys(needles))) for key, needles in grouped.items())


def _needle_tables(rules: tuple[Rule, ...]) -> tuple[tuple[_Pass, ...], tuple[_Gated, ...]]:
    """The passes and the other groups of the needles of ``rules`` (keyword rules aside). A
    needle that holds another needle of a rule without a gate is left out: the shorter one is
    found wherever it is."""
    pairs = list(
        dict.fromkeys((r.gate, n) for r in rules if not (r.lower or r.digit) for n in r.needles)
    )
    ungated: dict[str, list[str]] = {}  # by first character (a needle in n starts with one of n's)
    for gate, needle in pairs:
        if not gate:
            ungated.setdefault(needle[0], []).append(needle)
    kept = [
        (g, n)
        for g, n in pairs
        if not any(m != n and m in n for c in set(n) for m in ungated.get(c, ()))
    ]
    passes: list[_Pass] = []
    for char in dict.fromkeys(_ENDS_AT + _STARTS_AT):
        ending = tuple(n for g, n in kept if not g and char in _ENDS_AT and n[-1] == char)
        starting = tuple(
            n for g, n in kept if not g and char in _STARTS_AT and n[0] == char and n not in ending
        )
        gates = _groups([(g, n) for g, n in kept if g[:1] == char])
        width = 2 if all(len(n) > 2 for n in ending) else 1  # the characters before it
        before = frozenset(n[-1 - width : -1] for n in ending)
        passes.append(
            (char, ending, width, before, starting, gates, starting + tuple(g for g, _ in gates))
        )
    in_passes = {("", n) for p in passes for n in p[1] + p[4]}
    in_passes |= {(g, n) for p in passes for g, ns in p[5] for n in ns}
    rest = [(g or _rarest(n), n) for g, n in kept if (g, n) not in in_passes]
    return tuple(passes), _groups(rest)


_PASSES, _GATED = _needle_tables(tuple(r for r in RULES if r.category in SECRET_CATEGORIES))


def _passes(text: str) -> bool:
    """Whether a needle of :data:`_PASSES` is in ``text``.

    A place costs a ``find`` and a few ``startswith``/``endswith`` of tuples; searching for
    every needle of the pass costs a scan of the text per needle. So a pass visits places until
    that many would cost more than the searches (a few places per needle: ~50 needles end with
    ``_``, and code has an ``_`` every few words), then searches; a gate's needles are searched
    once."""
    for char, ending, width, before, starting, gates, starts in _PASSES:
        at = text.find(char)
        places = 0
        limit = max(_FEW_PLACES, _PLACES_PER_NEEDLE * (len(ending) + len(starting)))
        searched: set[str] = set()
        while at >= 0:
            if text[at - width : at] in before and text.endswith(ending, 0, at + 1):
                return True
            if text.startswith(starts, at):
                if text.startswith(starting, at):
                    return True
                for gate, needles in gates:
                    if gate not in searched and text.startswith(gate, at):
                        searched.add(gate)
                        if any(n in text for n in needles):
                            return True
            places += 1
            if places == limit:
                if any(n in text for n in ending + starting) or any(
                    g in text and any(n in text for n in ns) for g, ns in gates
                ):
                    return True
                break
            at = text.find(char, at + 1)
    return False


def may_hold_secret(text: str) -> bool:
    """False only when no secret rule can match ``text`` (the per-message fast path).

    Substring tests only (``str.find``, ``in`` and ``startswith`` skip text at C speed): the
    needles of every rule that has them (:data:`_PASSES`, :data:`_GATED`); then, if the text has
    a ``:`` or ``=`` that could follow a credential word (the first one follows a letter such a
    word ends with, or there is more than one), whether a credential word stands right before
    one.
    """
    if _passes(text):
        return True
    for gate, group in _GATED:
        if gate in text:
            for needle in group:
                if needle in text:
                    return True
    return _separator_may_follow_key(text) and _keyword_before_separator(text)


def may_hold_pii(text: str) -> bool:
    """False only when no PII rule can match ``text``."""
    return "@" in text or has_digit(text) is not None


@dataclass(frozen=True, slots=True)
class _Plan:
    """Which rules of a tuple to run on a text, found with few substring searches, instead of
    every rule testing each of its needles (~250 rules, a scan of the text each):

    - a needle that starts or ends with a character other than a small letter (``ghp_``,
      ``xoxe-``, ``AKIA``, ``hvs.``, ``eyJ``) is looked for at each place that character
      stands, with ``startswith``/``endswith`` of a tuple of the needles anchored there;
    - another needle (``dapi``, ``curl``), where its rarest character is in the text;
    - a keyword rule's needles, in the text's labels (:func:`_labels`)."""

    free: tuple[int, ...]  # rules that always run (no needles)
    digit: tuple[int, ...]  # rules that run where the text has a digit
    # the character, whether the needles end (or start) with it, the needles, the characters
    # next to it they need, and which rules each needle selects
    anchors: tuple[
        tuple[str, bool, int, tuple[str, ...], frozenset[str], dict[str, tuple[int, ...]]], ...
    ]
    by_char: tuple[tuple[str, bool, tuple[tuple[str, tuple[int, ...]], ...]], ...]


def _anchor(needle: str) -> tuple[str, bool] | None:
    """Where a needle is looked for: at its last or first character, the rarer of the two,
    unless both are small letters (found everywhere in prose)."""
    ends = [(needle[-1], True), (needle[0], False)]
    ends = [(c, e) for c, e in ends if not c.islower() and not c.isspace()]
    if len(needle) < 2 or not ends:
        return None
    return min(ends, key=lambda ce: (ce[0] not in _RARE_FIRST, _RARE_FIRST.find(ce[0])))


def _make_plan(rules: tuple[Rule, ...]) -> _Plan:
    free, digit = [], []
    groups: dict[tuple[str, bool], dict[str, list[int]]] = {}
    anchored: dict[tuple[str, bool], dict[str, list[int]]] = {}
    for index, rule in enumerate(rules):
        if rule.digit:
            digit.append(index)
        elif not rule.needles:
            free.append(index)
        else:
            for needle in rule.needles:
                anchor = None if rule.lower else _anchor(needle)
                if anchor is not None:
                    anchored.setdefault(anchor, {}).setdefault(needle, []).append(index)
                else:
                    key = (_rarest(needle), rule.lower)
                    groups.setdefault(key, {}).setdefault(needle, []).append(index)
    anchors = []
    for (char, at_end), needles in anchored.items():
        width = 2 if min(map(len, needles)) > 2 else 1  # the characters beside the anchor
        beside = frozenset(n[-1 - width : -1] if at_end else n[1 : 1 + width] for n in needles)
        selects = {n: tuple(i) for n, i in needles.items()}
        anchors.append((char, at_end, width, tuple(needles), beside, selects))
    by_char = tuple(
        (char, lower, tuple((n, tuple(i)) for n, i in needles.items()))
        for (char, lower), needles in groups.items()
    )
    return _Plan(tuple(free), tuple(digit), tuple(anchors), by_char)


_LABEL_REACH = 80  # a keyword starts at most this far before the credential word of its label
_VALUE_REACH = 40  # or ends this far after the separator (gitleaks' keyword of a value: nrak)


def _labels(lowered: str) -> str:
    """The labels of ``lowered``: where a credential word stands right before a ``:`` or ``=``
    (what every keyword rule's match has, :func:`_keyword_before_separator`), the text from
    :data:`_LABEL_REACH` characters before that word to :data:`_VALUE_REACH` after the
    separator (where a value's prefix is); joined by NULs. A
    keyword rule runs where one of its keywords is in a label: a few labels of a text are
    searched fast, where ~100 keywords searched in the whole text cost a scan each."""
    parts = []
    for tail in _KEY_TAILS:
        at = lowered.find(tail)
        while at >= 0:
            separator = _SEPARATOR_AFTER_KEY(lowered, at + len(tail))
            if separator is not None:
                parts.append(lowered[max(0, at - _LABEL_REACH) : separator.end() + _VALUE_REACH])
            at = lowered.find(tail, at + 1)
    return "\0".join(parts)


def _scan(
    rules: tuple[Rule, ...], text: str, plan: _Plan | None = None
) -> list[tuple[int, int, str]]:
    """Non-overlapping ``(start, end, category)`` spans in order; earlier rules win overlaps.
    A rule runs where its gate and one of its needles are in the text (for a keyword rule: in
    one of the text's labels, lower-cased), or a digit for a digit rule."""
    if plan is None:
        plan = _make_plan(rules)
    selected = set(plan.free)
    for char, at_end, width, needles, beside, selects in plan.anchors:
        at = text.find(char)
        while at >= 0:
            if at_end:
                if text[at - width : at] in beside and text.endswith(needles, 0, at + 1):
                    for needle in needles:
                        if text.endswith(needle, 0, at + 1):
                            selected.update(selects[needle])
            elif text[at + 1 : at + 1 + width] in beside and text.startswith(needles, at):
                for needle in needles:
                    if text.startswith(needle, at):
                        selected.update(selects[needle])
            at = text.find(char, at + 1)
    labels: str | None = None
    for char, lower, entries in plan.by_char:
        if lower:
            if labels is None:
                labels = _labels(text.lower())
            haystack = labels
        else:
            haystack = text
        if char in haystack:
            for needle, indices in entries:
                if needle in haystack:
                    selected.update(indices)
    if plan.digit and has_digit(text) is not None:
        selected.update(plan.digit)
    starts: list[int] = []
    taken: list[tuple[int, int, str]] = []
    for index in sorted(selected):
        rule = rules[index]
        if rule.gate and not rule.digit and rule.gate not in text:
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
    _plan: _Plan = field(init=False, repr=False, compare=False)

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
        rules = tuple(r for r in RULES if r.category in chosen)
        object.__setattr__(self, "_rules", rules)
        object.__setattr__(self, "_plan", _make_plan(rules))
        object.__setattr__(self, "_maybe", maybe)

    def __call__(self, text: str) -> str:
        """``text`` with every finding replaced by its marker (the same object when none)."""
        if not self._maybe(text):
            return text
        for _ in range(_MAX_PASSES):  # a replacement can expose a match beside it (rare)
            spans = _scan(self._rules, text, self._plan)
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
        found = _scan(self._rules, text, self._plan)
        return [Finding(category, start, end) for start, end, category in found]

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


def redact_values(value: Any, redactor: Callable[[str], str], key: Any = None) -> Any:
    """``value`` with every string in it (also inside dicts, lists and tuples) redacted.

    A string under a dict key is redacted with its key as context, the way it reads in JSON
    (``{"DD_API_KEY": "…"}``: the key is what makes the value a secret); the keys themselves
    are kept.

    >>> redact_values({"DD_API_KEY": "3f1c9a7e5b2d4f608a1c3e5b7d9f0a2c", "n": [1, "ok"]}, SECRETS)
    {'DD_API_KEY': '[REDACTED:api_key]', 'n': [1, 'ok']}
    """
    if isinstance(value, str):
        return _redact_keyed(key, value, redactor) if isinstance(key, str) else redactor(value)
    if isinstance(value, dict):
        return {k: redact_values(item, redactor, k) for k, item in value.items()}
    if isinstance(value, list | tuple):
        return [redact_values(item, redactor, key) for item in value]
    return value


def redact_content(content: Any, redactor: Callable[[str], str]) -> str:
    """A message's content as its text reaches disk (``format.content_to_text``), redacted
    whatever its shape: a string as it is; a dict or list (JSON on disk) value by value
    with each value's key as context (:func:`redact_values`: ``{"DD_API_KEY": "…"}``, a line of
    a tool's output inside a string with its own line breaks), and then as the JSON text.

    >>> redact_content({"stdout": "export DD_API_KEY=3f1c9a7e5b2d4f608a1c3e5b7d9f0a2c\\n"}, SECRETS)
    '{"stdout": "export DD_API_KEY=[REDACTED:api_key]\\\\n"}'
    """
    if isinstance(content, dict | list | tuple):
        content = redact_values(content, redactor)
    return redactor(content_to_text(content))


def _redact_keyed(key: str, value: str, redactor: Callable[[str], str]) -> str:
    """``value`` redacted as it reads after its key in JSON (``"key": "value"``)."""
    alone = redactor(value)
    if alone != value:
        return alone
    text = json.dumps({key: value}, ensure_ascii=False)
    redacted = redactor(text)
    if redacted == text:
        return value
    try:
        back = json.loads(redacted)
        (found,) = back.values()
    except (ValueError, TypeError):
        found = None
    if isinstance(found, str) and len(back) == 1 and MARKED in found:
        return found
    return MARKER.format(category="secret")  # a rule spanned the key or the quotes: all of it


ROLE_MARKER = MARKER.format(category="role")
"""The role written when a redactor's output is no valid role (blank, or more than one line)."""


def redact_role(role: str, redactor: Callable[[str], str] | None) -> str:
    """``role`` as a block heading may show it on disk: redacted like the content, and still a
    valid role (one non-blank line, :func:`memorylab.memory._format.validate_role`).

    A role is redacted because it is written to disk like the content (an agent named after a
    key, ``Tool(api_key=...)``, an e-mail address as a user's name). A marker keeps a role one
    non-blank line; if a custom redactor returns something else, the role becomes
    :data:`ROLE_MARKER`. ``None`` (no redaction) returns ``role`` itself.

    >>> redact_role("Deployer sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0Ab", SECRETS)
    'Deployer [REDACTED:openai_key]'
    >>> redact_role("User", SECRETS), redact_role("ada@example.com", SECRETS_AND_PII)
    ('User', '[REDACTED:email]')
    >>> redact_role("Ada", lambda text: text.replace("Ada", ""))
    '[REDACTED:role]'
    """
    if redactor is None:
        return role
    if type(redactor) is Redactor:  # roles repeat: each distinct one is redacted once
        return _redact_role_with(redactor, role)
    return _valid_role(role, redactor(role))


@functools.lru_cache(maxsize=1024)
def _redact_role_with(redactor: Redactor, role: str) -> str:
    return _valid_role(role, redactor(role))


def _valid_role(role: str, redacted: str) -> str:
    if redacted is role:
        return role
    try:
        return validate_role(redacted)
    except ValueError:
        return ROLE_MARKER


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
