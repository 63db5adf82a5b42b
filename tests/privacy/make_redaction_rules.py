"""Generate memorylab's packaged secret rules from gitleaks' rule set (issue 25).

    python tests/privacy/make_redaction_rules.py PATH/TO/gitleaks.toml [COMMIT]

reads gitleaks' default configuration (https://github.com/gitleaks/gitleaks, ``config/gitleaks.toml``,
MIT licence, Copyright (c) 2019 Zachary Rice) and writes
``toolkit/memorylab/memory/secret_rules.json``, which ``memorylab.memory._redact`` reads once at
import. Nothing here runs at redaction time, and nothing is downloaded: get the file with
``git show <commit>:config/gitleaks.toml`` from a clone. What the conversion does:

- Go's RE2 syntax becomes Python's: POSIX classes (``[[:alnum:]]``) are spelled out, a ``(?i)`` in the middle of a pattern scopes to the rest of
  its group (``(?i:...)``), ``\\z`` is ``\\Z``; patterns compile with ``re.ASCII`` (RE2's ``\\w``
  and ``\\b`` are ASCII).
- The leading ``[\\w.-]{0,50}?`` of gitleaks' keyword templates is dropped: it only widens the
  reported match, never changes which secret is found, and costs a scan step per character. A
  leading ``\\b`` is checked on the match instead (``boundary``): a pattern that starts with an
  assertion is tried at every character, one that starts with a literal is searched for.
- Each rule keeps its id, keywords (lower-case: the rule runs only where one is in the lower-cased
  text), secret group, entropy threshold and allowlists (regexes with their target, stopwords),
  and gets ``needles``: literal strings, as written and case-sensitive, one of which every match
  contains (computed from the parsed pattern), for memorylab's one-substring pre-check. A rule
  without such literals is a *label* rule (gitleaks' ``keyword ... = value`` templates): the
  pre-check sees it through the credential word that ends its label.
- ``category`` names the marker: memorylab's existing category where gitleaks' rule covers the
  same tokens (``openai_key``, ``github_token``...), else the gitleaks id (``-`` -> ``_``).

Left out: ``generic-api-key`` (memorylab's own keyword rules, tuned against code that names a
password, cover ``label = value``) and ``pkcs12-file`` (a file-name rule: no pattern).
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from re import _constants as C  # type: ignore[attr-defined]
from re import _parser as P  # type: ignore[attr-defined]
from typing import Any

OUT = Path(__file__).resolve().parents[2] / "toolkit" / "memorylab" / "memory" / "secret_rules.json"
SOURCE = "https://github.com/gitleaks/gitleaks/blob/{commit}/config/gitleaks.toml"
MIT_TEXT = """MIT License

Copyright (c) 2019 Zachary Rice

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""  # gitleaks' LICENSE: shipped in secret_rules.json with the rules derived from it
EXCLUDED = {"generic-api-key", "pkcs12-file"}
CATEGORY = {  # gitleaks id -> memorylab's category of the same tokens (markers stay the same)
    "openai-api-key": "openai_key",
    "anthropic-api-key": "anthropic_key",
    "anthropic-admin-api-key": "anthropic_key",
    "aws-access-token": "aws_access_key",
    "gcp-api-key": "google_api_key",
    "sendgrid-api-token": "sendgrid_key",
    "huggingface-access-token": "huggingface_token",
    "huggingface-organization-api-token": "huggingface_token",
    "npm-access-token": "npm_token",
    "pypi-upload-token": "pypi_token",
    "perplexity-api-key": "model_provider_key",
    "telegram-bot-api-token": "telegram_bot_token",
    "jwt": "jwt",
    "jwt-base64": "jwt",
    "private-key": "private_key",
    "slack-webhook-url": "webhook_url",
    "discord-webhook": "webhook_url",
    "hashicorp-tf-password": "password",  # any `password = "..."` in HCL: a password
}
CATEGORY_PREFIXES = (
    ("github-", "github_token"),
    ("gitlab-", "gitlab_token"),
    ("slack-", "slack_token"),
    ("stripe-", "stripe_key"),
    ("digitalocean-", "digitalocean_token"),
)
# Needles given by hand where the pattern's own literals are case-insensitive words or single
# characters (the rule then matches only where one is in the match as written: ``exact``)
NEEDLES = {
    "authress-service-client-access-key": ["sc_", "ext_", "scauth_", "authress_"],
    "aws-access-token": ["A3T", "AKIA", "ASIA", "ABIA", "ACCA"],
    "curl-auth-header": ["curl"],
    "freemius-secret-key": ["=>"],
    "jwt": ["eyJ"],  # a JWT's header is base64 of '{"'
    "slack-user-token": ["xoxp-", "xoxe-"],
    "slack-webhook-url": ["hooks.slack.com"],
    "grafana-api-key": ["eyJrIjoi"],
    "kubernetes-secret-yaml": ["Secret"],  # kind: Secret (and a data: gate)
    "sidekiq-sensitive-url": ["contribsys.com"],
    "slack-config-access-token": ["xoxe.xox"],
    "sourcegraph-access-token": ["sgp_"],  # without the bare 40-hex form (a git SHA)
    "vault-service-token": ["hvs."],  # without the legacy s.<24 chars> form ("s." is everywhere)
}
# Needles that must be in the text, not in the match (gitleaks' keyword semantics), where the
# pattern's own literal is a common word: the rule runs only where the product is named
CONTEXT = {
    "airtable-personnal-access-token": ["airtable", "Airtable", "AIRTABLE"],
    "facebook-access-token": ["facebook", "Facebook", "FACEBOOK"],
}
# A second literal every match holds, where the needle alone is a common word: the rule runs
# only where both are in the text
GATES = {
    "curl-auth-header": "-",  # -H or --header
    "curl-auth-user": "-",  # -u or --user
    "kubernetes-secret-yaml": "data:",
    "sidekiq-sensitive-url": "@",
    "slack-webhook-url": "/",
}
# Allowlist regexes meant for the whole secret (gitleaks searches them: ``x+`` would let any
# password that starts with an x go; Vault's ``s\.[A-Za-z]{24}``, meant for legacy ``s.``
# tokens, let an ``hvs.`` token go whose first 24 characters are letters, ~1 % of them)
ANCHORED_ALLOWS = {"curl-auth-user", "vault-service-token"}
# The whole match is the secret, where the first group is a piece of it (a repeated UUID part)
WHOLE_MATCH = {"microsoft-teams-webhook"}
# Multi-line rules that also read their line breaks JSON-escaped (``\\n``: a tool's JSON result)
ESCAPED_LINE_BREAKS = {"kubernetes-secret-yaml"}
_TEMPLATE_HEAD = r"(?i)[\w.-]{0,50}?(?:"
_POSIX = {"[:alnum:]": "A-Za-z0-9", "[:alpha:]": "A-Za-z", "[:digit:]": "0-9"}
_MAX_VARIANTS = 24  # an alternation of more literal starts than this is not a needle set


def category_of(rule_id: str) -> str:
    if rule_id in CATEGORY:
        return CATEGORY[rule_id]
    for prefix, category in CATEGORY_PREFIXES:
        if rule_id.startswith(prefix) and not rule_id.endswith("-webhook-url"):
            return category
    return rule_id.replace("-", "_")


def _structure(pattern: str, start: int = 0) -> Iterator[tuple[int, str, int]]:
    """The characters of ``pattern`` from ``start`` that are structure, with their depth of
    groups: ``(``, ``)`` and ``|`` outside character classes and escapes (the one walk of a
    pattern that :func:`_group_end` and :func:`split_top` share)."""
    depth, i, in_class = 0, start, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "]":
                i += 1
        elif c in "()|":
            depth -= c == ")"
            yield i, c, depth
            depth += c == "("
        i += 1


def _group_end(pattern: str, start: int) -> int:
    """Index of the ``)`` that closes the group open at ``start`` (or len(pattern))."""
    return next((i for i, c, depth in _structure(pattern, start) if depth < 0), len(pattern))


def to_python(pattern: str) -> str:
    """gitleaks' RE2 pattern as a Python ``re`` pattern."""
    pattern = pattern.replace(r"\z", r"\Z")
    for posix, chars in _POSIX.items():
        pattern = pattern.replace(f"[{posix}]", f"[{chars}]").replace(posix, chars)
    if pattern.startswith(_TEMPLATE_HEAD):
        pattern = "(?i)(?:" + pattern[len(_TEMPLATE_HEAD) :]
    if pattern.startswith(r"[\w.-]{0,50}?(?i:[\w.-]{0,50}?"):  # okta, sumologic, ...
        pattern = "(?i:" + pattern[len(r"[\w.-]{0,50}?(?i:[\w.-]{0,50}?") :]
    while True:  # a (?i) after the start: to the end of its group
        at = pattern.find("(?i)", 1)
        if at < 0:
            return pattern
        end = _group_end(pattern, at + 4)
        pattern = pattern[:at] + "(?i:" + pattern[at + 4 : end] + ")" + pattern[end:]


def _literals(items: Any, ignorecase: bool) -> list[str] | None:
    """Literal strings one of which each match of the sequence ``items`` contains (the longest
    such set found at one place), or None."""
    best: list[str] | None = None
    run: list[str] = [""]

    def close() -> None:
        nonlocal best, run
        if run != [""] and all(run) and _better(run, best):
            best = run
        run = [""]

    for op, av in items:
        if op is C.LITERAL:
            run = [r + chr(av) for r in run]
            if ignorecase:
                _FOLDED.append(True)
            continue
        if op is C.IN and not ignorecase and _small_set(av) is not None:
            chars = _small_set(av) or []
            if len(run) * len(chars) <= _MAX_VARIANTS:
                run = [r + ch for r in run for ch in chars]
                continue
        if op is C.SUBPATTERN:
            _group, add, delete, sub = av
            inner_ic = (ignorecase or bool(add & C.SRE_FLAG_IGNORECASE)) and not (
                delete & C.SRE_FLAG_IGNORECASE
            )
            inner = _whole(sub, inner_ic)
            if inner is not None and len(run) * len(inner) <= _MAX_VARIANTS:
                run = [r + s for r in run for s in inner]
                continue
            close()
            found = _literals(sub, inner_ic)
            if found is not None and _better(found, best):
                best = found
            continue
        if op is C.AT:
            continue
        if op is C.BRANCH:
            alts = [_whole(alt, ignorecase) for alt in av[1]]
            if all(a is not None for a in alts):
                merged = [s for a in alts for s in a or []]
                if len(run) * len(merged) <= _MAX_VARIANTS:
                    run = [r + s for r in run for s in merged]
                    continue
            close()
            found_alts = [_literals(alt, ignorecase) for alt in av[1]]
            if all(a is not None for a in found_alts):
                merged = [s for a in found_alts for s in a or []]
                if len(merged) <= _MAX_VARIANTS and _better(merged, best):
                    best = merged
            continue
        if op in (C.MAX_REPEAT, C.MIN_REPEAT):
            low, _high, sub = av
            close()
            if low >= 1:
                found = _literals(sub, ignorecase)
                if found is not None and _better(found, best):
                    best = found
            continue
        close()
    close()
    return best


def _whole(items: Any, ignorecase: bool) -> list[str] | None:
    """All the strings ``items`` matches, if it is a small set of literals."""
    out = [""]
    for op, av in items:
        if op is C.LITERAL:
            out = [o + chr(av) for o in out]
            if ignorecase:
                _FOLDED.append(True)
        elif op is C.IN and not ignorecase and _small_set(av):
            out = [o + ch for o in out for ch in _small_set(av) or []]
        elif op is C.SUBPATTERN:
            _g, add, delete, sub = av
            ic = (ignorecase or bool(add & C.SRE_FLAG_IGNORECASE)) and not (
                delete & C.SRE_FLAG_IGNORECASE
            )
            inner = _whole(sub, ic)
            if inner is None:
                return None
            out = [o + s for o in out for s in inner]
        elif op is C.BRANCH:
            alts = [_whole(alt, ignorecase) for alt in av[1]]
            if any(a is None for a in alts):
                return None
            out = [o + s for o in out for a in alts for s in a or []]
        elif op is C.AT:
            continue
        else:
            return None
        if len(out) > _MAX_VARIANTS:
            return None
    return out


def _small_set(av: Any) -> list[str] | None:
    chars = []
    for op, value in av:
        if op is not C.LITERAL:
            return None
        chars.append(chr(value))
    return chars if 0 < len(chars) <= 4 else None


def _better(new: list[str], old: list[str] | None) -> bool:
    """Fewer, longer needles win: the shortest needle of a set is what the pre-check pays for."""
    if old is None:
        return True
    return (min(map(len, new)), -len(new)) > (min(map(len, old)), -len(old))


_FOLDED: list[bool] = []  # set when a needle's letters came from a case-insensitive part


def needles_of(pattern: str) -> tuple[list[str], bool]:
    """The needles of ``pattern``, and whether some came from a case-insensitive part (then the
    rule matches only where one is in the match as written: ``exact``). Case-insensitive words
    of letters only (``datadog``: a label) are no needles."""
    parsed = P.parse(pattern, re.ASCII)
    ignorecase = bool(parsed.state.flags & C.SRE_FLAG_IGNORECASE)
    _FOLDED.clear()
    found = _literals(list(parsed), ignorecase)
    exact = bool(_FOLDED)
    if not found or min(map(len, found)) < 2:
        return [], False
    if exact and any(n.isalpha() for n in found):
        return [], False
    # a needle holding another one is redundant
    unique = sorted(set(found), key=len)
    return [n for i, n in enumerate(unique) if not any(m in n for m in unique[:i])], exact


_TEMPLATE_SEPARATOR = r"(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)"


def convert(rule: dict[str, Any]) -> dict[str, Any]:
    pattern = to_python(rule["regex"])
    if rule["id"] == "vault-service-token":  # the legacy s.<24> form: see NEEDLES
        pattern = pattern.replace(r"|s\.(?i:[a-z0-9]{24})", "")
    # gitleaks' end of a token: a quote, a space, ``;``, an escaped line break (\\n), the end;
    # and an escaped quote (\\"), as a string inside a JSON string has it (a tool's result)
    pattern = pattern.replace(r"|\\[nr]|$)", r"|\\[nrt\"]|$)")
    if rule["id"] in ESCAPED_LINE_BREAKS:
        pattern = pattern.replace(r"\s+", r"(?:\s|\\[nrt])+")
        for word in ("kind:", "data:"):  # after an escaped line break: "\\nkind:"
            pattern = pattern.replace(rf"\b{word}", rf"(?:\b|(?<=\\[nrt])){word}")
    label = _TEMPLATE_SEPARATOR in pattern
    if label:  # a keyword template: name its separator, for the label check
        pattern = pattern.replace(_TEMPLATE_SEPARATOR, "(?P<sep>" + _TEMPLATE_SEPARATOR[3:], 1)
    compiled = re.compile(pattern, re.ASCII)
    group = int(rule.get("secretGroup", 0))
    if label and group >= compiled.groupindex["sep"]:
        group += 1  # the separator's group comes before it
    boundary = False
    flags = "(?i)" if pattern.startswith("(?i)") else ""
    body = pattern[len(flags) :]
    while body.startswith(r"\b") or body.startswith(r"(\b"):
        # a leading \b: checked on the match (a pattern that starts with an assertion is
        # tried at every character; one that starts with a literal is searched for)
        body = body[2:] if body.startswith(r"\b") else "(" + body[3:]
        boundary = True
    pattern = flags + body
    re.compile(pattern, re.ASCII)
    needles, exact = needles_of(pattern)
    context = rule["id"] in CONTEXT
    if label:  # a keyword template is a label rule, whatever literals its keyword has
        needles, exact = [], False
    if rule["id"] in NEEDLES:
        needles, exact = NEEDLES[rule["id"]], True
    elif context:
        needles, exact = CONTEXT[rule["id"]], False
    allow: list[dict[str, Any]] = []
    for entry in rule.get("allowlists", []):
        regexes = [to_python(r) for r in entry.get("regexes", [])]
        if rule["id"] in ANCHORED_ALLOWS:
            regexes = [rf"\A[\"']?(?:{r})[\"']?\Z" for r in regexes]
        for r in regexes:
            re.compile(r, re.ASCII)
        allow.append(
            {
                "regexes": regexes,
                "target": entry.get("regexTarget", "secret"),
                "stopwords": [s.lower() for s in entry.get("stopwords", [])],
                "and": entry.get("condition", "OR") == "AND",
                "paths_only": bool(entry.get("paths"))
                and not entry.get("regexes")
                and not entry.get("stopwords"),
            }
        )
    allow = [a for a in allow if not a["paths_only"]]
    for a in allow:
        del a["paths_only"]
    return {
        "id": rule["id"],
        "category": category_of(rule["id"]),
        "regex": pattern,
        "group": -1 if rule["id"] in WHOLE_MATCH else group,
        "entropy": float(rule.get("entropy", 0.0)),
        "keywords": sorted({k.lower() for k in rule.get("keywords", [])}),
        "needles": needles,
        "gate": GATES.get(rule["id"], ""),
        "exact": exact,
        "context": context,
        "boundary": boundary,
        "label": label and not needles,
        "allow": allow,
    }


def split_top(pattern: str) -> list[str]:
    """The top-level alternatives of ``pattern`` (a leading ``(?i)`` stays with the first)."""
    out, start = [], 0
    for i, c, depth in _structure(pattern):
        if c == "|" and depth == 0:
            out.append(pattern[start:i])
            start = i + 1
    out.append(pattern[start:])
    return out


def convert_all(rule: dict[str, Any]) -> list[dict[str, Any]]:
    """A rule, or two where a keyword template is one alternative and a token with its own
    prefix another (atlassian-api-token: ``jira ... = value`` or ``ATATT3...``): the template
    and the prefixed token are found in different ways."""
    if "regex" in rule:
        alternatives = split_top(to_python(rule["regex"]))
        flags = "(?i)" if alternatives[0].startswith("(?i)") else ""
        tokens = [a for a in alternatives if _TEMPLATE_SEPARATOR not in a]
        if len(alternatives) > 1 and tokens and len(tokens) < len(alternatives):
            labels = [a for a in alternatives if _TEMPLATE_SEPARATOR in a]
            return [
                convert({**rule, "regex": "|".join(labels)}),
                convert({**rule, "regex": flags + "|".join(tokens)}),
            ]
    return [convert(rule)]


def main(argv: list[str]) -> int:
    """``PATH/TO/gitleaks.toml [COMMIT]``; gitleaks' LICENSE is read from the same clone (the
    file next to ``config/``), else its text below is used."""
    source = Path(argv[0])
    licence_file = source.resolve().parent.parent / "LICENSE"
    licence = licence_file.read_text(encoding="utf-8") if licence_file.is_file() else MIT_TEXT
    commit = argv[1] if len(argv) > 1 else "unknown"
    config = tomllib.loads(source.read_text(encoding="utf-8"))
    rules = [c for r in config["rules"] if r["id"] not in EXCLUDED for c in convert_all(r)]
    glob = config.get("allowlist", {})
    document = {
        "source": SOURCE.format(commit=commit),
        "licence": "MIT, Copyright (c) 2019 Zachary Rice (gitleaks)",
        "licence_text": licence,
        "generator": "tests/privacy/make_redaction_rules.py",
        "excluded": sorted(EXCLUDED),
        "allow": {
            "regexes": [to_python(r) for r in glob.get("regexes", [])],
            "stopwords": [s.lower() for s in glob.get("stopwords", [])],
        },
        "rules": rules,
    }
    OUT.write_text(json.dumps(document, indent=1, ensure_ascii=True) + "\n", encoding="utf-8")
    labels = sum(r["label"] for r in rules)
    for r in rules:
        if not r["needles"] and not r["label"]:
            print("neither needles nor a label:", r["id"], r["regex"][:100])
    print(f"{OUT}: {len(rules)} rules ({labels} label rules), from {document['source']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
