"""Redaction's cost per KB (issue 25): ``SECRETS`` on ~1 KB messages against one regex pass.

Messages of ~1 KB (``random.Random(SEED)``): prose; code (identifiers with ``_``, calls,
``key = value`` lines: the text the pre-check finds hardest); and each of those with one secret
in it (a key from the corpus' formats, built from parts here), which runs the rules. For each:

* ``SECRETS(text)``: the redactor (the pre-check, and the rules where it says "maybe");
* ``may_hold_secret(text)``: the pre-check alone;
* the baseline, one regex pass: one precompiled pattern (an OpenAI key's) substituted over the
  same text, ``re.sub`` with a replacement: what the cheapest one-rule redactor costs.

Timings are medians of batches measured in rounds that visit every row in turn; the table gives
µs per KB and the ratio to the baseline of the same row, measured in the same run (no absolute
time is a target: compare rows of one run). The rule set is gitleaks' (as packaged in
``memorylab/memory/secret_rules.json``) with memorylab's own rules.

    python tests/benchmarks/bench_redaction.py [--quick]
"""

from __future__ import annotations

import argparse
import platform
import random
import re
import statistics
import string
import sys
import time
from collections.abc import Callable

from memorylab.memory._redact import GITLEAKS, RULES, SECRETS, may_hold_secret

SEED = 25
BASELINE = re.compile(r"(?<![\w-])sk-(?:proj-)?[A-Za-z0-9_-]{20,}(?![\w-])")
WORDS = [
    "the",
    "agent",
    "read",
    "the",
    "file",
    "and",
    "found",
    "that",
    "the",
    "test",
    "failed",
    "because",
    "a",
    "fixture",
    "was",
    "missing",
    "we",
    "should",
    "compare",
    "the",
    "summaries",
    "before",
    "and",
    "after",
    "compaction",
    "then",
    "decide",
    "which",
    "model",
    "keeps",
    "more",
    "facts",
    "about",
    "the",
    "user",
    "and",
    "their",
    "project",
    "while",
    "staying",
    "under",
    "the",
    "budget",
    "of",
    "tokens",
    "that",
    "the",
    "context",
    "window",
    "allows",
    "for",
    "each",
    "turn",
    "of",
    "the",
    "conversation",
]
NAMES = [
    "load_config",
    "parse_args",
    "user_id",
    "max_tokens",
    "items",
    "result",
    "data_frame",
    "row_count",
    "api_client",
    "http_get",
    "response_json",
    "file_path",
    "base_dir",
    "retry_policy",
    "summary_text",
    "token_count",
]


def _prose(rng: random.Random) -> str:
    out: list[str] = []
    while sum(map(len, out)) < 1000:
        words = rng.choices(WORDS, k=rng.randrange(8, 18))
        out.append(" ".join(words).capitalize() + rng.choice([".", ".", ",", "?", ":"]) + " ")
    return "".join(out).strip()


def _code(rng: random.Random) -> str:
    lines: list[str] = []
    while sum(map(len, lines)) < 1000:
        a, b, c = rng.sample(NAMES, 3)
        lines.append(
            rng.choice(
                [
                    f"    {a} = {b}({c}, timeout=30)",
                    f"def {a}(self, {b}: str, {c}: int = 0) -> dict[str, int]:",
                    f"    for {a} in self.{b}.{c}():",
                    f"    if not {a}:\n        return {b}[-1]",
                    f"    logger.info('{a} -> %s', {b})  # step {rng.randrange(100)}",
                    f"    {a}['{b}'] = {c} or os.environ.get('{b.upper()}')",
                ]
            )
        )
    return "\n".join(lines)


def _secret(rng: random.Random) -> str:
    """A fake key of one of a few formats, built from parts (nothing real-looking is written)."""

    def draw(alphabet: str, n: int) -> str:
        return "".join(rng.choice(alphabet) for _ in range(n))

    alnum = string.ascii_letters + string.digits
    return rng.choice(
        [
            "OPENAI_API_KEY=" + "sk-proj-" + draw(alnum, 48),
            "export GITHUB_TOKEN=" + "ghp_" + draw(alnum, 36),
            "DATABRICKS_TOKEN=" + "dapi" + draw("0123456789abcdef", 32),
            "postgres://app:" + draw(alnum, 16) + "@db.internal:5432/app",
            '{"DD_API_KEY": "' + draw("0123456789abcdef", 32) + '"}',
            "VAULT_TOKEN=" + "hvs." + draw(alnum + "_-", 95),
        ]
    )


def _with_secret(make: Callable[[random.Random], str], rng: random.Random) -> str:
    text = make(rng)
    at = rng.randrange(len(text) // 2, len(text))
    return text[:at] + "\n" + _secret(rng) + "\n" + text[at:]


def _batch_us_per_kb(fn: Callable[[str], object], texts: list[str], kb: float) -> float:
    start = time.perf_counter()
    for text in texts:
        fn(text)
    return (time.perf_counter() - start) / kb * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="CI smoke run (a few seconds)")
    args = parser.parse_args(argv)
    n_texts, rounds = (40, 5) if args.quick else (300, 21)
    rng = random.Random(SEED)
    rows = {
        "prose": [_prose(rng) for _ in range(n_texts)],
        "code": [_code(rng) for _ in range(n_texts)],
        "prose with a secret": [_with_secret(_prose, rng) for _ in range(n_texts)],
        "code with a secret": [_with_secret(_code, rng) for _ in range(n_texts)],
    }
    for texts in rows.values():  # warm: the rules compile their patterns on first use
        for text in texts:
            SECRETS(text)
    subjects: dict[str, Callable[[str], object]] = {
        "SECRETS": SECRETS,
        "pre-check": may_hold_secret,
        "one regex pass": lambda text: BASELINE.sub("[REDACTED:openai_key]", text),
    }
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(rounds):
        for row, texts in rows.items():
            kb = sum(len(t.encode("utf-8")) for t in texts) / 1024
            for name, fn in subjects.items():
                times.setdefault((row, name), []).append(_batch_us_per_kb(fn, texts, kb))
    gitleaks = len({r.origin for r in RULES if r.origin})
    own = sum(1 for r in RULES if not r.origin and r.category in SECRETS.categories)
    print(f"# redaction per KB ({'quick' if args.quick else 'full'} run)")
    print(
        f"python {platform.python_version()} on {platform.system()} {platform.machine()}; "
        f"{gitleaks} rules from gitleaks ({GITLEAKS['source'].split('/blob/')[1][:12]}) and "
        f"{own} of memorylab's; {n_texts} messages per row, median of {rounds} rounds"
    )
    print()
    print(
        "| messages | SECRETS µs/KB | pre-check µs/KB | one regex pass µs/KB | "
        "SECRETS / one regex pass |"
    )
    print("|---|---:|---:|---:|---:|")
    for row in rows:
        med = {name: statistics.median(times[(row, name)]) for name in subjects}
        print(
            f"| {row} | {med['SECRETS']:.1f} | {med['pre-check']:.1f} | "
            f"{med['one regex pass']:.1f} | {med['SECRETS'] / med['one regex pass']:.1f}x |"
        )
    print()
    print(
        "one regex pass: one precompiled pattern (an OpenAI key's) substituted over the same "
        "text; no target is asserted (ratios of one run)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
