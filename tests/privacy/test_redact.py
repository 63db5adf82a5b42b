"""Redaction: a corpus of realistic secrets and PII (each caught), ordinary text (never changed),
idempotence and the soundness of the fast path (hypothesis), and what Conversation writes.

The redaction corpus (``redaction_corpus.toml``: secrets in many formats, and look-alikes) is
filled in from a seeded random generator; ``pytest -k corpus -s`` prints its table.
"""

from __future__ import annotations

import collections
import itertools
import json
import string
from collections.abc import Callable
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st
from redaction_corpus import (
    CORPUS,
    CORPUS_SEED,
    LOOKALIKES,
    CorpusSecret,
    Lookalike,
    load_corpus,
)

from memorylab import Conversation, read_memory
from memorylab.memory import _format as fmt
from memorylab.memory._redact import (
    ALL_CATEGORIES,
    MARKER,
    PII_CATEGORIES,
    ROLE_MARKER,
    RULES,
    SECRET_CATEGORIES,
    SECRETS,
    SECRETS_AND_PII,
    Finding,
    Redactor,
    _scan,
    may_hold_pii,
    may_hold_secret,
    redact_role,
    redact_values,
    resolve_redactor,
)

PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\n"
    "aFDrBz9vFqU4yB5ZlGkM1X2mQ8GyqD0n7cE5R3kR9m0Jt8vH2aXz4bQ==\n"
    "-----END RSA PRIVATE KEY-----"
)

# (text, the secret inside it, the category that must replace it)
SECRET_CORPUS = [
    (
        "export OPENAI_API_KEY=sk-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0AbCdEfGhIjKlMnOpQr",
        "sk-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0AbCdEfGhIjKlMnOpQr",
        "openai_key",
    ),
    (
        "client = OpenAI(api_key='sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAB7cD-EfGh_IjKl')",
        "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAB7cD-EfGh_IjKl",
        "openai_key",
    ),
    (
        "my key is sk-svcacct-Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp, use it",
        "sk-svcacct-Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp",
        "openai_key",
    ),
    (
        "ANTHROPIC_API_KEY=sk-ant-api03-Qm9yZ2V0LW1lLW5vdC1hLXJlYWwta2V5LWF0LWFsbA-AbCdEf12GhIjAA",
        "sk-ant-api03-Qm9yZ2V0LW1lLW5vdC1hLXJlYWwta2V5LWF0LWFsbA-AbCdEf12GhIjAA",
        "anthropic_key",
    ),
    ("aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE", "aws_access_key"),
    (
        "temporary creds: ASIAY34FZKBOKMUTVV7A (expires soon)",
        "ASIAY34FZKBOKMUTVV7A",
        "aws_access_key",
    ),
    (
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "aws_secret_key",
    ),
    (
        '{"AccessKeyId": "x", "SecretAccessKey": "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY"}',
        "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY",
        "aws_secret_key",
    ),
    (
        "git clone https://ghp_R2d2C3p0Bb8Yoda9Luke7Leia5Han3Chewie1",
        "ghp_R2d2C3p0Bb8Yoda9Luke7Leia5Han3Chewie1",
        "github_token",
    ),
    (
        "GITHUB_TOKEN: gho_16C7e42F292c6912E7710c838347Ae178B4a",
        "gho_16C7e42F292c6912E7710c838347Ae178B4a",
        "github_token",
    ),
    (
        "token github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcd",
        "github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcd",
        "github_token",
    ),
    (
        "SLACK_BOT_TOKEN=xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        "slack_token",
    ),
    (
        "webhook user token xoxp-2233445566-7788990011-1122334455-abcdef0123456789abcdef",
        "xoxp-2233445566-7788990011-1122334455-abcdef0123456789abcdef",
        "slack_token",
    ),
    (
        'curl -H "Authorization: Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0" https://api.example.com',
        "9f8e7d6c5b4a39281706f5e4d3c2b1a0",
        "curl_auth_header",  # gitleaks' rule for a curl command's header
    ),
    (
        "requests.get(url, headers={'Authorization': 'Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0'})",
        "9f8e7d6c5b4a39281706f5e4d3c2b1a0",
        "bearer_token",
    ),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA==", "authorization"),
    ("AUTHORIZATION: Token 3a9F7c1E5b8D2f6A0e4C", "3a9F7c1E5b8D2f6A0e4C", "authorization"),
    (
        "session eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFkYSJ9.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c ok",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFkYSJ9.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
        "jwt",
    ),
    (f"here is the deploy key:\n{PEM}\nkeep it safe", PEM, "private_key"),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
        "private_key",
    ),
    (
        "truncated: -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7\n",
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
        "private_key",
    ),
    (
        "DATABASE_URL=postgres://admin:s3cr3t-Pa55@db.internal:5432/app",
        "s3cr3t-Pa55",
        "url_password",
    ),
    (
        "connect to redis://:hunter2hunter2@cache.example.com:6379/0",
        "hunter2hunter2",
        "url_password",
    ),
    ("mysql -u root --password=Tr0ub4dor&3 -h localhost", "Tr0ub4dor", "password"),
    (
        "db:\n  user: app\n  password: 'correct horse battery staple'\n",
        "correct horse battery staple",
        "password",
    ),
    ('{"username": "ada", "password": "Lovelace1815!"}', "Lovelace1815!", "password"),
    ("Server=db;Database=app;User Id=sa;Pwd=myPass123;", "myPass123", "password"),
    ("DB_PASSWORD=pa55w0rd", "pa55w0rd", "password"),
    (
        'requests.get(url, headers={"X-Api-Key": "d41d8cd98f00b204e9800998ecf8427e"})',
        "d41d8cd98f00b204e9800998ecf8427e",
        "api_key",
    ),
    (
        "apiKey: 7c9e6679-7425-40de-944b-e07fc1f90ae7",
        "7c9e6679-7425-40de-944b-e07fc1f90ae7",
        "api_key",
    ),
    (
        "STRIPE_API_KEY=rk_live_51H8xYz2eZvKYlo2C0123456789abcdef",
        "rk_live_51H8xYz2eZvKYlo2C0123456789abcdef",
        "stripe_key",
    ),
    ("client_secret=Zx9Yw8Vu7Ts6Rq5P", "Zx9Yw8Vu7Ts6Rq5P", "secret"),
    (
        "refresh_token: 1//0gLxQ7Ab9CdEfGhIjKlMnOpQrStUv",
        "1//0gLxQ7Ab9CdEfGhIjKlMnOpQrStUv",
        "secret",
    ),
    ("the token: 8a1f6e0c9b2d4e7f", "8a1f6e0c9b2d4e7f", "secret"),
]

PII_CORPUS = [
    ("please write to ada.lovelace@example.co.uk today", "ada.lovelace@example.co.uk", "email"),
    ("cc: j.doe+newsletter@mail.example.org.", "j.doe+newsletter@mail.example.org", "email"),
    ("call me on +1 (555) 123-4567 after six", "+1 (555) 123-4567", "phone"),
    ("UK office +44 20 7946 0958", "+44 20 7946 0958", "phone"),
    ("Paris: +33 6 12 34 56 78", "+33 6 12 34 56 78", "phone"),
    ("Tokyo +81-3-1234-5678", "+81-3-1234-5678", "phone"),
    ("E.164: +14155552671", "+14155552671", "phone"),
    ("mobile +91 98765 43210", "+91 98765 43210", "phone"),
    ("US: 555-123-4567 or (555) 987-6543", "555-123-4567", "phone"),
    ("landline 020 7946 0958", "020 7946 0958", "phone"),
    ("Handy 06 12 34 56 78", "06 12 34 56 78", "phone"),
    ("Visa 4111 1111 1111 1111 exp 12/29", "4111 1111 1111 1111", "card_number"),
    ("card: 5555-5555-5555-4444", "5555-5555-5555-4444", "card_number"),
    ("amex 378282246310005", "378282246310005", "card_number"),
    ("Amex grouped 3782 822463 10005", "3782 822463 10005", "card_number"),
    ("IBAN DE89 3704 0044 0532 0130 00 (Deutsche Bank)", "DE89 3704 0044 0532 0130 00", "iban"),
    ("pay to GB82WEST12345698765432 please", "GB82WEST12345698765432", "iban"),
    ("FR14 2004 1010 0505 0001 3M02 606", "FR14 2004 1010 0505 0001 3M02 606", "iban"),
]

ORDINARY = [
    "Released version 1.2.3.4 on 2026-04-20; the previous one was v2.10.0-rc.1.",
    "Meeting at 10:30, then 14:45:59 — bring the 2026-04-20T10:30:00.123456+00:00 log.",
    "Timestamps: 2026-04-20T10:30:00Z, 2026-04-20 10:30:00, 20/04/2026, 04/20/2026, 12:00pm.",
    "request id 550e8400-e29b-41d4-a716-446655440000 and 123e4567-e89b-12d3-a456-426614174000",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b (short 3f78685), merged in a1b2c3d",
    "Prices: $1,299.99, €49.90, £1 234, 15% off, total 1234567.89 USD.",
    "Open /usr/lib/python3.11/site-packages/memorylab/memory/store.py and C:\\Users\\ada\\notes.txt",
    "The key insight: tokens are cheap, but the password policy is strict.",
    "## Results\n\n| model | score |\n|---|---|\n| gpt-4o | 0.91 |\n\n- item one\n- item two\n\n> quote",
    "The quick brown fox jumps over the lazy dog; Bearer of good news, Asia and Africa.",
    "Ports 8080 and 5432; IP 192.168.1.100 and 10.0.0.1; localhost:3000/api?page=2&size=50",
    "Phone-like but not: 2026-04-20, 1.2.3.4, 10:30:45, 3.14159265358979, 1e-9, 0x7fffffff.",
    "See https://example.com/docs/a-b_c?x=1#frag and mailto-free text; ISBN 978-3-16-148410-0.",
    "pip install memorylab==0.1.0 ; npm i left-pad@1.3.0 ; git checkout feature/auth-tokens",
    "ordinary words: task-management, self-check, well_known_name, e-mail, x=y+z, a == b",
    "Order #1029384756 shipped; tracking 1Z999AA10123456784; invoice 2026-0042.",
    "Numbers: 1234567890123 (ms timestamp 1745149200123), 4096 tokens, max_tokens=4096.",
    # version numbers and dates in the shapes people write them
    "Python 3.11.9 and 3.12.0rc1; Node v20.11.1; CUDA 12.4.131; build 2026.04.20.1",
    "Windows 10.0.19045.4291; kernel 6.8.0-45-generic; semver 1.2.3-alpha.4+build.5678",
    "git describe v1.4.2-14-g2414721; wheel memorylab-0.1.0.dev20260420-py3-none-any.whl",
    "dates 20.04.2026, 2026/04/20, 04-20-2026, 20-04-2026, Apr 20 2026, 2026-W16, 2026-110",
    "times 10:30:45.123, 23:59:59,999, T10:30:00+02:00, UTC+05:30, GMT-0800, 2026-04-20 - 2026-05-20",
    "RFC 2822: Mon, 20 Apr 2026 10:30:00 +0000; log 2026-04-20 10:30:00,123 INFO worker-3 took 1234 ms",
    "ids 20260420103000 and 2026042010300012; epoch 1745149200 and 1745149200123456",
    "1 000 000 rows, 128 000 tokens of context; pp. 123-456, section 12.3.4.5; 1920x1080",
    "score 0.9123 ± 0.0045, p=0.001, n=1024, lr=3e-4, batch=32, seed=1234567890",
]

PYTHON_CODE = '''
import os
from getpass import getpass


def connect(user: str, password: str, token: str | None = None) -> None:
    """Connect with the password from the environment."""
    api_key = os.environ["OPENAI_API_KEY"]
    secret = None
    password = password or getpass("Password: ")
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    session = login(user=user, password=password, api_key=api_key, secret=secret)
    token_count = len(tokens)
    if password == "":
        raise ValueError("empty password")
    return session.get(url, headers=headers, params={"page": 1, "max_tokens": 4096})
'''


# -- the redaction corpus ---------------------------------------------------------------------


def _caught(entry: CorpusSecret, out: str) -> bool:
    return MARKER.format(category=entry.category) in out and not any(
        p in out for p in entry.secrets
    )


def test_corpus_recall_and_false_positives(record_property: Callable[[str, object], None]) -> None:
    """Every secret of the corpus is redacted (with its category's marker) and no look-alike is
    touched; the table says how many of each (``pytest -k corpus -s``), and every run of the
    suite prints its last line."""
    by_format: dict[str, list[bool]] = collections.defaultdict(list)
    for entry in CORPUS:
        by_format[entry.format].append(_caught(entry, SECRETS(entry.text)))
    by_kind: dict[str, list[bool]] = collections.defaultdict(list)
    for lookalike in LOOKALIKES:
        by_kind[lookalike.kind].append(SECRETS(lookalike.text) != lookalike.text)
    rows = [f"{'format':<56} {'secrets':>7} {'redacted':>8}"]
    rows += [f"{name:<56} {len(hits):>7} {sum(hits):>8}" for name, hits in by_format.items()]
    caught = sum(sum(hits) for hits in by_format.values())
    rows.append(f"{f'{len(by_format)} formats':<56} {len(CORPUS):>7} {caught:>8}")
    rows.append(f"recall {caught / len(CORPUS):.1%}")
    rows.append(f"\n{'look-alike':<56} {'texts':>7} {'changed':>8}")
    rows += [f"{kind:<56} {len(hits):>7} {sum(hits):>8}" for kind, hits in by_kind.items()]
    false_positives = sum(sum(hits) for hits in by_kind.values())
    rows.append(f"{'all look-alikes':<56} {len(LOOKALIKES):>7} {false_positives:>8}")
    rows.append(f"false positives {false_positives} of {len(LOOKALIKES)}")
    print("\n" + "\n".join(rows))
    record_property(  # tests/conftest.py prints it at the end of every run of the suite
        "summary_line",
        f"redaction corpus: {caught} of {len(CORPUS)} secrets in {len(by_format)} formats "
        f"redacted ({caught / len(CORPUS):.1%}); {false_positives} of {len(LOOKALIKES)} "
        "look-alikes changed",
    )
    assert len(CORPUS) >= 60 and len(by_format) >= 25 and len(LOOKALIKES) >= 50
    assert [e.text for e in CORPUS if not _caught(e, SECRETS(e.text))] == []
    assert [t.text for t in LOOKALIKES if SECRETS(t.text) != t.text] == []


@pytest.mark.parametrize("entry", CORPUS, ids=[f"{e.category}-{i}" for i, e in enumerate(CORPUS)])
def test_corpus_secret_is_redacted(entry: CorpusSecret) -> None:
    out = SECRETS(entry.text)
    assert MARKER.format(category=entry.category) in out, out
    assert [p for p in entry.secrets if p in out] == []
    assert SECRETS(out) == out  # idempotent
    assert may_hold_secret(entry.text)
    assert not any(p in SECRETS_AND_PII(entry.text) for p in entry.secrets)


@pytest.mark.parametrize(
    "lookalike", LOOKALIKES, ids=[f"{t.kind}-{i}" for i, t in enumerate(LOOKALIKES)]
)
def test_corpus_lookalike_is_left_alone(lookalike: Lookalike) -> None:
    assert SECRETS(lookalike.text) == lookalike.text
    assert SECRETS.findings(lookalike.text) == []


def test_corpus_is_the_same_for_every_run() -> None:
    assert load_corpus() == (CORPUS, LOOKALIKES)
    assert load_corpus(seed=CORPUS_SEED + 1)[0] != CORPUS  # the values are drawn, not written


@pytest.mark.parametrize("seed", range(1, 9))
def test_corpus_holds_for_other_draws(seed: int) -> None:
    # the rules do not depend on the values one seed happens to draw
    secrets, lookalikes = load_corpus(seed=CORPUS_SEED + seed)
    assert [e.text for e in secrets if not _caught(e, SECRETS(e.text))] == []
    assert [t.text for t in lookalikes if SECRETS(t.text) != t.text] == []


@pytest.mark.parametrize(
    ("text", "secret", "category"), SECRET_CORPUS, ids=[c for _, _, c in SECRET_CORPUS]
)
def test_every_secret_is_redacted_by_default(text: str, secret: str, category: str) -> None:
    out = SECRETS(text)
    assert secret not in out
    assert f"[REDACTED:{category}]" in out
    assert SECRETS_AND_PII(text) == out or secret not in SECRETS_AND_PII(text)


@pytest.mark.parametrize(
    ("text", "value", "category"), PII_CORPUS, ids=[c for _, _, c in PII_CORPUS]
)
def test_pii_is_redacted_only_when_asked(text: str, value: str, category: str) -> None:
    assert SECRETS(text) == text  # opt-in
    out = SECRETS_AND_PII(text)
    assert value not in out
    assert f"[REDACTED:{category}]" in out


def test_the_redacted_text_keeps_its_context() -> None:
    assert SECRETS("postgres://admin:s3cr3t@db:5432/app") == (
        "postgres://admin:[REDACTED:url_password]@db:5432/app"
    )
    assert SECRETS('{"password": "hunter2", "user": "ada"}') == (
        '{"password": "[REDACTED:password]", "user": "ada"}'
    )
    assert SECRETS(
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZGEifQ.c2lnbmF0dXJlMTIz"
    ) == ("Authorization: Bearer [REDACTED:jwt]")
    assert SECRETS(f"a\n{PEM}\nb") == "a\n[REDACTED:private_key]\nb"
    assert (
        SECRETS_AND_PII("ada@example.com, +44 20 7946 0958") == "[REDACTED:email], [REDACTED:phone]"
    )


@pytest.mark.parametrize("text", [*ORDINARY, PYTHON_CODE], ids=range(len(ORDINARY) + 1))
def test_ordinary_text_is_never_changed(text: str) -> None:
    assert SECRETS(text) == text
    assert SECRETS_AND_PII(text) == text
    assert SECRETS_AND_PII.findings(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "card 4111 1111 1111 1112",  # fails the Luhn check
        "iban DE89 3704 0044 0532 0130 01",  # fails mod 97
        "iban XX89 3704 0044 0532 0130 00",  # not a country
        "password=password, password: str, token=get_token()",  # code, not secrets
        "password=${DB_PASSWORD} password=<your password> secret=********",  # placeholders
        "sk-this-is-not-a-key-at-all-really-no",  # no digit: a slug, not a key
        "Authorization: required for every endpoint",
    ],
)
def test_near_misses_are_left_alone(text: str) -> None:
    assert SECRETS_AND_PII(text) == text


def test_findings_say_what_and_where_without_the_text() -> None:
    text = "key sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0Ab and ada@example.com"
    found = SECRETS_AND_PII.findings(text)
    assert found == [Finding("openai_key", 4, 43), Finding("email", 48, 63)]
    assert [text[f.start : f.end] for f in found] == [
        "sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0Ab",
        "ada@example.com",
    ]
    assert str(found[0]) == "openai_key at 4-43"
    assert SECRETS.findings(text) == found[:1]
    assert SECRETS.findings("nothing here") == []


def test_categories_presets_and_options() -> None:
    assert SECRETS.categories == frozenset(SECRET_CATEGORIES)
    assert SECRETS_AND_PII.categories == frozenset(ALL_CATEGORIES)
    assert set(PII_CATEGORIES) | set(SECRET_CATEGORIES) == set(ALL_CATEGORIES)
    assert {r.category for r in RULES} == set(ALL_CATEGORIES)
    assert repr(SECRETS) == "SECRETS" and repr(SECRETS_AND_PII) == "SECRETS_AND_PII"
    only_email = Redactor(frozenset({"email"}))
    assert repr(only_email) == "Redactor(['email'])"
    assert only_email("ada@example.com password=hunter2") == "[REDACTED:email] password=hunter2"
    assert Redactor(frozenset())("ada@example.com sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0Ab") == (
        "ada@example.com sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0Ab"
    )
    assert Redactor(frozenset({"email"})) == only_email
    with pytest.raises(ValueError, match="unknown redaction categories"):
        Redactor(frozenset({"emails"}))
    assert resolve_redactor(None) is None and resolve_redactor(False) is None
    assert resolve_redactor(True) is SECRETS
    assert resolve_redactor(str.upper) is str.upper
    with pytest.raises(TypeError, match="callable"):
        resolve_redactor("SECRETS")  # type: ignore[arg-type]
    assert redact_values({"a": ["password=hunter2", 3], "b": ("x",)}, SECRETS) == {
        "a": ["password=[REDACTED:password]", 3],
        "b": ["x"],
    }


def test_clean_text_is_returned_as_is() -> None:
    text = "benchmark message: the agent looked at the result and decided what to do next. #1"
    assert not may_hold_secret(text)
    assert SECRETS(text) is text


# -- properties -------------------------------------------------------------------------------

_FRAGMENTS = st.sampled_from(
    [t for t, _, _ in SECRET_CORPUS + PII_CORPUS]
    + [s for _, s, _ in SECRET_CORPUS + PII_CORPUS]
    + ORDINARY
    + [e.text for e in CORPUS]
    + [part for e in CORPUS for part in e.secrets]
    + [t.text for t in LOOKALIKES if len(t.text) < 400]
    + [
        "[REDACTED:email]",
        "[REDACTED:",
        "password=",
        "://u:",
        "@",
        "-",
        "_",
        "Bearer ",
        ":",
        "+1 ",
        "0",
    ]
    + [
        "PaSsWoRd: ",
        '"Token" :',
        "AUTHORIZATION:\t",
        "secretKey: ",
        "PWD:",
        "AccessKey':",
        "hunter22",
        "api-key =",
        "Client_Secret=",
        "x-api-key:",
        "sk-",
        "-----BEGIN RSA PRIVATE KEY-----\n",
        "ghp_",
        "xoxb-",
        "eyJ",
        "AKIA",
    ]
    + [  # the new rules' prefixes, keywords and shapes, to be combined with anything
        "sk_live_",
        "rk_test_",
        "glpat-",
        "gldt-",
        "AIza",
        "GOCSPX-",
        "ya29.",
        "SG.",
        "hf_",
        "api_org_",
        "npm_",
        "pypi-AgEIcHlwaS5vcmc",
        "dckr_pat_",
        "dop_v1_",
        "gsk_",
        "xai-",
        "pplx-",
        "r8_",
        "1234567890:AA",
        "hooks.slack.com/services/",
        "discord.com/api/webhooks/",
        "?sig=",
        "&X-Amz-Signature=",
        "?x-goog-signature=",
        "AccountKey=",
        "SharedAccessKey =",
        "postgres://u:",
        "p@ss",
        "/w#rd",
        "@db.example.com:5432/",
        "PGPASSWORD=",
        "DbPassword: ",
        "--password ",
        "--db-pass '",
        "--api-key ",
        "--token ",
        "mysql -u root -p",
        "docker login -u me -p ",
        "sshpass -p",
        "Cookie: ",
        "Set-Cookie: sid=",
        "sessionid=",
        "curl -b '",
        "--cookie ",
        "Hunter2Pass!",
        "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    ]
)
_TEXT = st.lists(
    st.one_of(
        _FRAGMENTS, st.text(max_size=12), st.text(alphabet="0123456789 -+()@.:=_'\"", max_size=12)
    ),
    max_size=6,
).map("".join)


@given(_TEXT)
def test_redaction_is_idempotent(text: str) -> None:
    once = SECRETS_AND_PII(text)
    assert SECRETS_AND_PII(once) == once
    assert SECRETS(SECRETS(text)) == SECRETS(text)


@given(st.one_of(_TEXT, st.text(max_size=200)))
def test_the_fast_path_never_skips_a_match(text: str) -> None:
    secret_rules = tuple(r for r in RULES if r.category in SECRET_CATEGORIES)
    pii_rules = tuple(r for r in RULES if r.category in PII_CATEGORIES)
    if not may_hold_secret(text):
        assert _scan(secret_rules, text) == []
    if not may_hold_pii(text):
        assert _scan(pii_rules, text) == []


_ASCII_TEXT = st.lists(
    st.one_of(_FRAGMENTS.filter(str.isascii), st.text(alphabet=string.printable, max_size=24)),
    max_size=8,
).map("".join)


@given(_ASCII_TEXT, st.sampled_from(["", " " * 300, "word " * 60]))
def test_the_fast_path_never_skips_a_match_in_long_text(text: str, padding: str) -> None:
    # Long text: past the first few separators the keyword check finds the keyword tails.
    secret_rules = tuple(r for r in RULES if r.category in SECRET_CATEGORIES)
    for candidate in (padding + text, text + padding):
        if not may_hold_secret(candidate):
            assert _scan(secret_rules, candidate) == []


def test_the_fast_path_survives_lone_surrogates() -> None:
    text = "token: sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0Ab \ud800\n---\n" + "x" * 300
    assert may_hold_secret(text)
    assert "[REDACTED:openai_key]" in SECRETS(text)


@given(st.one_of(_TEXT, st.text(max_size=200)))
def test_the_redactor_scans_exactly_when_the_fast_path_says_so(text: str) -> None:
    with mock.patch("memorylab.memory._redact._scan", return_value=[]) as scan:
        SECRETS(text)
    assert scan.called == may_hold_secret(text)


@given(st.one_of(_TEXT, _ASCII_TEXT))
def test_each_rule_runs_wherever_it_can_match(text: str) -> None:
    # a rule is skipped (its gate or needles absent) only where its pattern finds nothing
    for rule in RULES:
        found = any(rule.span(m) is not None for m in rule.pattern.finditer(text))
        assert bool(_scan((rule,), text)) == found, rule.category


@given(_TEXT)
def test_findings_match_the_first_pass(text: str) -> None:
    found = SECRETS_AND_PII.findings(text)
    assert all(a.end <= b.start for a, b in itertools.pairwise(found))
    if not found:
        assert SECRETS_AND_PII(text) == text


# -- roles ------------------------------------------------------------------------------------
# A role is written to disk in its block's heading (``### {role} — {time}``), so it is redacted
# like the content, and stays a valid role: one non-blank line.


def test_a_role_is_redacted_and_stays_a_role() -> None:
    key = "sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0Ab"
    assert redact_role(f"Deployer {key}", SECRETS) == "Deployer [REDACTED:openai_key]"
    assert redact_role(f"Tool(api_key={key})", SECRETS) == "Tool(api_key=[REDACTED:openai_key])"
    assert redact_role("ada@example.com", SECRETS) == "ada@example.com"  # PII is opt-in
    assert redact_role("ada@example.com", SECRETS_AND_PII) == "[REDACTED:email]"
    role = "ResearchAgent"
    assert redact_role(role, SECRETS) is role and redact_role(role, None) is role
    assert redact_role(f"Agent {key}", None) == f"Agent {key}"  # redaction off
    # a custom redactor may break a role: the heading then says so
    assert redact_role("Ada", lambda t: t.replace("Ada", "")) == ROLE_MARKER == "[REDACTED:role]"
    assert redact_role("Ada", lambda t: "A\nda") == ROLE_MARKER
    assert redact_role("Ada", lambda t: None) == ROLE_MARKER  # type: ignore[arg-type,return-value]
    assert redact_role("Ada", str.upper) == "ADA"


def test_a_redacted_role_reads_back_from_its_heading() -> None:
    from datetime import UTC, datetime

    now = datetime(2026, 4, 20, 10, 30, tzinfo=UTC)
    role = redact_role("Deploy — sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0Ab", SECRETS)
    text = fmt.render_header("c", now) + fmt.block_text(role, fmt.format_timestamp(now), "hi")
    assert [(m.role, m.content) for m in fmt.parse(text).messages] == [
        ("Deploy — [REDACTED:openai_key]", "hi")
    ]


_ROLES = st.one_of(_TEXT, st.text(max_size=40)).filter(
    lambda r: bool(r.strip()) and r.splitlines() == [r]
)


@given(_ROLES)
def test_redact_role_always_gives_a_valid_role(role: str) -> None:
    for redactor in (SECRETS, SECRETS_AND_PII):
        out = redact_role(role, redactor)
        assert fmt.validate_role(out) == out
        assert redact_role(out, redactor) == out  # idempotent
        assert out == redactor(role)  # a built-in redactor keeps a role a role


def test_conversation_redacts_the_roles_it_writes(isolated_workspace: Path) -> None:
    key = "sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0Ab"
    conv = Conversation(agent_name="Agent")
    conv.add(f"Deployer {key}", "deployed")
    assert conv.conversation_history[-1]["role"] == f"Deployer {key}"  # in memory: as given
    conv.compact("summary", summary_role=f"Summarizer {key}", error=None)
    conv.add(f"Deployer {key}", "again")
    assert key not in _disk_text(conv)
    roles = [m.role for m in read_memory(conv.memory_md_path).messages]  # type: ignore[arg-type]
    assert roles == ["Summarizer [REDACTED:openai_key]", "Deployer [REDACTED:openai_key]"]


# -- what Conversation writes -----------------------------------------------------------------

KEY = "sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0Ab"


def _stored(conv: Conversation) -> list[str]:
    assert conv.memory_md_path is not None
    return [m.content for m in read_memory(conv.memory_md_path).messages]


def _disk_text(conv: Conversation) -> str:
    assert conv.memory_md_path is not None
    folder = conv.memory_md_path.parent
    return "".join(
        p.read_text()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.suffix in (".md", ".jsonl")
    )


def test_conversation_redacts_the_disk_but_not_the_running_history(
    isolated_workspace: Path,
) -> None:
    conv = Conversation(agent_name="Agent")
    conv.add("User", f"use {KEY} and mail ada@example.com")
    conv.add("Agent", {"api_key": KEY})
    assert conv.conversation_history[-2]["content"] == f"use {KEY} and mail ada@example.com"
    assert conv.conversation_history[-1]["content"] == {"api_key": KEY}  # the original object
    assert KEY in conv.to_messages()[-2]["content"]  # the model of this process sees it
    assert _stored(conv) == [
        "use [REDACTED:openai_key] and mail ada@example.com",
        '{"api_key": "[REDACTED:openai_key]"}',
    ]
    event = conv.compact(f"the user gave {KEY}", error=None, extra={"note": f"saw {KEY}"})
    assert KEY in conv.conversation_history[-1]["content"]  # in memory: the summary as given
    assert event.extra == {"note": "saw [REDACTED:openai_key]"}  # the event matches the record
    assert KEY not in _disk_text(conv)
    assert "[REDACTED:openai_key]" in _stored(conv)[0]
    # a later process preloads what is on disk: the markers, not the key
    later = Conversation(agent_name="Agent")
    assert KEY not in later.return_history_as_string()
    assert "[REDACTED:openai_key]" in later.return_history_as_string()


def test_redaction_options_of_conversation(isolated_workspace: Path) -> None:
    raw = Conversation(agent_name="Raw", redact=None)
    raw.add("User", f"key {KEY}")
    assert KEY in _disk_text(raw)
    off = Conversation(agent_name="Off", redact=False)
    off.add("User", f"key {KEY}")
    assert KEY in _disk_text(off)
    pii = Conversation(agent_name="Pii", redact=SECRETS_AND_PII)
    pii.add("User", f"{KEY} ada@example.com")
    assert _stored(pii) == ["[REDACTED:openai_key] [REDACTED:email]"]
    custom = Conversation(agent_name="Custom", redact=lambda text: text.replace("Ada", "[name]"))
    custom.add("User", f"Ada says {KEY}")
    assert _stored(custom) == [f"[name] says {KEY}"]
    with pytest.raises(TypeError):
        Conversation(agent_name="Bad", redact="yes")  # type: ignore[arg-type]


def test_compaction_records_are_redacted(isolated_workspace: Path) -> None:
    conv = Conversation(agent_name="Agent")
    conv.add("User", "hello")
    conv.compact("summary", summarizer_model="fake", error=None, extra={"prompt": f"Bearer {KEY}"})
    assert conv.store is not None
    line = json.loads(conv.store.paths.compactions.read_text().splitlines()[-1])
    assert line["extra"] == {"prompt": "Bearer [REDACTED:openai_key]"}
    assert line["summarizer_model"] == "fake" and line["archive"].startswith("history_")


_KEYWORD_RULES = [r for r in RULES if r.lower and r.category in SECRET_CATEGORIES and not r.origin]
_LABEL_RULES = [r for r in RULES if r.lower and r.origin]  # gitleaks' keyword templates


def test_every_credential_word_ends_with_a_tail_the_fast_path_looks_for() -> None:
    # _keyword_before_separator finds only the tails: a keyword ending otherwise would be missed.
    from memorylab.memory._redact import _KEY_ENDS, _KEY_TAILS, _KEY_WORDS

    assert all(word.endswith(_KEY_TAILS) for word in _KEY_WORDS)
    assert all(w[-1] in _KEY_ENDS and w[-1].upper() in _KEY_ENDS for w in _KEY_WORDS)
    assert {r.category for r in _KEYWORD_RULES} == {
        "aws_secret_key", "azure_key", "url_signature", "authorization", "password", "api_key",
        "secret",
    }  # fmt: skip
    for rule in _KEYWORD_RULES:
        for keyword in (*_KEY_WORDS, "PGPASSWORD", "DBPASSWORD", "adminPassword", "X-Auth-Token"):
            for text in (f"{keyword}: Value1234567x", f"?{keyword}=Value1234567x%3D"):
                if rule.pattern.search(text) is not None:
                    assert keyword.lower().endswith(_KEY_TAILS)


@pytest.mark.parametrize("rule", _KEYWORD_RULES, ids=[r.category for r in _KEYWORD_RULES])
def test_keyword_rules_match_a_tail_right_before_a_separator(rule: object) -> None:
    # what the fast path relies on, for every match of a keyword rule in the corpus
    from memorylab.memory._redact import _KEY_TAILS, _SEPARATOR_AFTER_KEY

    assert isinstance(rule, type(RULES[0]))
    texts = [e.text for e in CORPUS] + [t for t, _, _ in SECRET_CORPUS]
    matched = 0
    for text in texts:
        for match in rule.pattern.finditer(text):
            if rule.span(match) is None:
                continue
            head = text[match.start() : match.end()].lower()
            ends = [i for i in range(len(head)) if head.endswith(_KEY_TAILS, 0, i)]
            assert any(_SEPARATOR_AFTER_KEY(head, i) for i in ends), match[0]
            matched += 1
    assert matched > 0


def _padded(text: str) -> list[str]:
    """``text`` alone, and behind and before many of the characters the passes stop at."""
    noise = "- _ A -_A " * 12
    return [text, noise + text, text + noise, noise + text + noise]


@pytest.mark.parametrize("rule", RULES, ids=[f"{r.category}-{i}" for i, r in enumerate(RULES)])
def test_the_fast_path_sees_every_rule_s_own_condition(rule: object) -> None:
    # _scan runs a rule only where its gate and one of its needles are: the fast path must say
    # yes wherever that holds (then it never skips a match), whatever stands around them.
    # (Keyword rules are seen through their keyword's tail: the two tests above.)
    from memorylab.memory._redact import Rule

    assert isinstance(rule, Rule)
    if rule.digit or rule.lower or rule.category not in SECRET_CATEGORIES:
        return
    for needle in rule.needles:
        for text in (f"{rule.gate} {needle}", f"{needle}{rule.gate}", f"x{needle}x {rule.gate}x"):
            for padded in _padded(text):
                assert may_hold_secret(padded), padded


def test_code_with_separators_on_every_line_takes_the_fast_path() -> None:
    code = "\n".join(f"config_{n} = load(path_{n})  # step {n}: ok" for n in range(40))
    assert not may_hold_secret(code)
    assert SECRETS(code) is code
    assert may_hold_secret(code + "\nAPI_KEY = 'x'")  # a keyword late in the text is seen


def test_separator_heavy_text_still_finds_a_late_password() -> None:
    text = "".join(f"step {n} command: ok\n" for n in range(40)) + "db password: hunter2secret\n"
    assert "hunter2secret" not in SECRETS(text)


# -- the rule set (gitleaks' and memorylab's) ------------------------------------------------


def _every_rule(rules: tuple[object, ...], text: str) -> list[tuple[int, int, str]]:
    """What _scan finds when every rule runs (no needle, label or gate decides): the reference
    for the plan that picks the rules to run."""
    from bisect import bisect_left

    from memorylab.memory._redact import Rule

    starts: list[int] = []
    taken: list[tuple[int, int, str]] = []
    for rule in rules:
        assert isinstance(rule, Rule)
        for match in rule.pattern.finditer(text):
            span = rule.span(match)
            if span is None:
                continue
            at = bisect_left(starts, span[0])
            if (at > 0 and taken[at - 1][1] > span[0]) or (
                at < len(taken) and taken[at][0] < span[1]
            ):
                continue
            starts.insert(at, span[0])
            taken.insert(at, (span[0], span[1], rule.category))
    return taken


_PLAN_TEXTS = [e.text for e in CORPUS] + [t.text for t in LOOKALIKES] + [PYTHON_CODE, *ORDINARY]


@pytest.mark.parametrize("index", range(len(_PLAN_TEXTS)))
def test_the_plan_runs_every_rule_that_finds_something(index: int) -> None:
    # _scan runs a rule only where its needles are (anchored, by character, or in a label):
    # on the corpus, alone and padded, it finds what running every rule finds
    rules = SECRETS._rules
    text = _PLAN_TEXTS[index]
    for padded in (text, f"{PYTHON_CODE}\n{text}\n{ORDINARY[0]}", json.dumps({"out": text})):
        assert _scan(rules, padded) == _every_rule(rules, padded)


def test_the_packaged_rules_say_where_they_come_from() -> None:
    from memorylab.memory._redact import GITLEAKS

    assert GITLEAKS["source"].startswith("https://github.com/gitleaks/gitleaks/blob/")
    assert "MIT" in GITLEAKS["licence"]
    ids = {r.origin for r in RULES if r.origin}
    assert len(ids) >= 200 and "generic-api-key" not in ids
    assert {r.category for r in RULES if r.origin == "github-pat"} == {"github_token"}
    # a keyword rule's keyword is found in a label: it must fit the reach before the separator
    from memorylab.memory._redact import _LABEL_REACH

    assert max(len(n) for r in RULES if r.lower for n in r.needles) + 24 <= _LABEL_REACH


def test_gitleaks_tokens_are_redacted_to_their_end() -> None:
    # gitlab-pat is glpat- and 20 characters, with no boundary: a longer token goes whole
    token = "glpat-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0"
    assert SECRETS(f"token {token} ok") == "token [REDACTED:gitlab_token] ok"


def test_redact_content_redacts_every_shape_of_content() -> None:
    from memorylab.memory._redact import redact_content

    hexkey = "3f1c9a7e5b2d4f608a1c3e5b7d9f0a2c"
    assert redact_content(f"DD_API_KEY={hexkey}", SECRETS) == "DD_API_KEY=[REDACTED:api_key]"
    assert redact_content({"DD_API_KEY": hexkey, "n": 1}, SECRETS) == (
        '{"DD_API_KEY": "[REDACTED:api_key]", "n": 1}'
    )
    assert redact_content([{"env": {"storage_key": hexkey}}], SECRETS) == (
        '[{"env": {"storage_key": "[REDACTED:api_key]"}}]'
    )
    assert redact_content(None, SECRETS) == "" and redact_content(42, SECRETS) == "42"
    for content in (f"KEY {KEY}", {"a": KEY}, [KEY], (KEY, 1)):
        assert KEY not in redact_content(content, SECRETS)
        assert redact_content(content, lambda text: text) == fmt.content_to_text(content)


@pytest.mark.parametrize(
    ("name", "value", "category"),
    [
        ("DD_API_KEY", "3f1c9a7e5b2d4f608a1c3e5b7d9f0a2c", "api_key"),
        ("AZURE_STORAGE_KEY", "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWprbG1ub3A+/==", "api_key"),
        ("STRIPE_WEBHOOK_SECRET", "whsec_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z", "stripe_key"),
        ("SessionToken", "IQoJb3JpZ2luX2VjEHoaCXVzLWVhc3QtMSJHMEUCIQ+abc/def0123456789", "secret"),
        (
            "VAULT_TOKEN",
            "hvs." + "CAESIJk3bN8pQ2rT5vX7yZ9aB1cD3eF5gH7iJ9kL" * 3,
            "vault_service_token",
        ),
        ("db_password", "Tr0ub4dor-and-3", "password"),
    ],
)
def test_a_labelled_secret_is_redacted_in_every_notation(
    name: str, value: str, category: str
) -> None:
    # KEY=value, KEY: value, "KEY": "value", 'KEY': 'value', and the same inside a JSON string
    # (a tool's result: quotes and line breaks escaped)
    texts = [
        f"{name}={value}",
        f"{name}: {value}",
        json.dumps({name: value}),
        repr({name: value}),
        f"export {name}={value}\nnext",
    ]
    texts += [json.dumps({"stdout": text}) for text in list(texts)]
    for text in texts:
        out = SECRETS(text)
        assert value not in out and f"[REDACTED:{category}]" in out, (text, out)


def test_a_vault_token_that_starts_with_letters_is_redacted() -> None:
    # gitleaks' allowlist for legacy "s." tokens (s\.[A-Za-z]{24}, searched, not anchored)
    # matched inside "hvs." + 24 letters and let about 1 % of real service tokens go
    token = (
        "hvs."
        + "gKjsgcgnDIuiHGRxeVZPlLTR"
        + "lUDJirKDMMlBW0I74IVeh5uaU8259RvYrJCQWWx3UDd899XdR8JCXvIbE5iIzTqkK7Qw2"
    )
    assert SECRETS(f"token {token} here") == "token [REDACTED:vault_service_token] here"
    legacy_look_alike = "s.abcdefghijklmnopqrstuvwx"  # what the allowlist is for: left alone
    assert SECRETS(f"value {legacy_look_alike}") == f"value {legacy_look_alike}"


@pytest.mark.parametrize(
    "key",
    [
        "sbp_" + "3f1c9a7e5b2d4f608a1c3e5b7d9f0a2c4e6a8b0d",
        "re_" + "Ab3dEf6h_" + "Ij9kLm2nOp5qRs8tUv1wXy4z",
        "lsv2_pt_" + "3f1c9a7e5b2d4f608a1c3e5b7d9f0a2c_4e6a8b0d12",
        "tvly-dev-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
        "key-" + "3f1c9a7e5b2d4f608a1c3e5b7d9f0a2c",
    ],
)
def test_keys_of_the_tools_agents_call_are_redacted_bare(key: str) -> None:
    # found by probing with formats the corpus did not hold (Supabase, Resend, LangSmith,
    # Tavily, a Mailgun key with no "mailgun" near it)
    assert key not in SECRETS(f"use {key} for the tool") and "[REDACTED:" in SECRETS(key)
