"""The redaction corpus (``redaction_corpus.toml``), filled in from a seeded random generator:
shared by the tests of the redactor (test_redact.py) and of what reaches disk in every message
shape (test_redaction_shapes.py)."""

from __future__ import annotations

import base64
import random
import re
import string
import tomllib
from dataclasses import dataclass
from pathlib import Path

CORPUS_FILE = Path(__file__).with_name("redaction_corpus.toml")
CORPUS_SEED = 19
_PLACEHOLDER = re.compile(r"\{\{(\w+)(?::(\d+))?\}\}")
_ALPHABETS = {
    "alnum": string.ascii_letters + string.digits,
    "b64url": string.ascii_letters + string.digits + "_-",
    "b64": string.ascii_letters + string.digits + "+/",
    "hex": "0123456789abcdef",
    "upper": string.ascii_uppercase + string.digits,
    "digits": string.digits,
    "letters": string.ascii_letters,
    "bech32": "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L",  # age keys
}
_PW_SYMBOLS = "!%^*_+-.~"


def _draw(rng: random.Random, kind: str, n: int) -> str:
    """A random value of ``kind`` (re-drawn until it has a digit, a capital and a small letter
    where its alphabet has them, as generated keys do)."""
    if kind == "uuid":
        h = "".join(rng.choice("0123456789abcdef") for _ in range(32))
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[rng.randrange(4)]}{h[17:20]}-{h[20:]}"
    if kind == "png":
        data = b"\x89PNG\r\n\x1a\n" + bytes(rng.randrange(256) for _ in range(n))
        return base64.b64encode(data).decode()
    if kind == "pw":  # a password people type: letters and digits, one symbol, an alnum first
        body = _draw(rng, "alnum", n - 1)
        at = rng.randrange(1, n)
        return body[:at] + rng.choice(_PW_SYMBOLS) + body[at:]
    alphabet = _ALPHABETS[kind]
    needs = [
        set(c) & set(alphabet)
        for c in (string.digits, string.ascii_uppercase, string.ascii_lowercase)
    ]
    while True:
        value = "".join(rng.choice(alphabet) for _ in range(n))
        if n < 3 or all(not need or need & set(value) for need in needs):
            return value


def _fill(text: str, rng: random.Random) -> str:
    return _PLACEHOLDER.sub(lambda m: _draw(rng, m[1], int(m[2] or 0)), text)


@dataclass(frozen=True)
class CorpusSecret:
    format: str
    category: str
    text: str  # filled in, the «» marks removed
    secrets: tuple[str, ...]  # the parts that must be gone


@dataclass(frozen=True)
class Lookalike:
    kind: str
    text: str


def load_corpus(seed: int = CORPUS_SEED) -> tuple[list[CorpusSecret], list[Lookalike]]:
    raw = tomllib.loads(CORPUS_FILE.read_text(encoding="utf-8"))
    rng = random.Random(seed)
    secrets = []
    for entry in raw["secret"]:
        filled = _fill(entry["text"], rng)
        parts = tuple(re.findall("«(.*?)»", filled, re.S))
        assert parts, f"no «secret» marked in {entry['text']!r}"
        secrets.append(
            CorpusSecret(
                entry["format"], entry["category"], filled.replace("«", "").replace("»", ""), parts
            )
        )
    lookalikes = [Lookalike(e["kind"], _fill(e["text"], rng)) for e in raw["lookalike"]]
    return secrets, lookalikes


CORPUS, LOOKALIKES = load_corpus()
