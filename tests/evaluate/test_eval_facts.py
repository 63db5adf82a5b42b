"""Fact extraction rules and matching: tolerant to formatting, strict on values."""

from __future__ import annotations

import doctest

import pytest

import memorylab._facts
import memorylab.evaluate._llm_scorers
import memorylab.evaluate._plots
from memorylab._facts import normalize, numbers_in
from memorylab.evaluate import Fact, extract_facts, fact_kept


@pytest.mark.parametrize(
    "module",
    [memorylab._facts, memorylab.evaluate._llm_scorers, memorylab.evaluate._plots],
    ids=lambda m: m.__name__,
)
def test_docstring_examples(module: object) -> None:
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    result = doctest.testmod(module, optionflags=flags)  # type: ignore[arg-type]
    assert result.failed == 0 and result.attempted > 0


def kept(category: str, text: str, summary: str) -> bool:
    return fact_kept(Fact("f", category, text), summary).kept


@pytest.mark.parametrize(
    ("category", "fact", "summary"),
    [
        ("number", "12,000", "about 12000 rows"),
        ("number", "4.10", "cost 4.1 USD"),
        ("number", "300 ms", "a 300ms timeout"),
        ("number", "2026-04-20", "on 2026-04-20"),
        ("path", "/srv/api/config.yaml", "config: `/srv/api/config.yaml`."),
        ("path", "https://example.com/x", "see <https://example.com/x>"),
        ("command", "$ make deploy ENV=prod", "ran `make  deploy ENV=prod`"),
        ("command", "git commit -m 'fix'", 'git commit -m "fix"'),
        ("name", "PaymentService", "the payment_service module"),
        ("name", "PaymentService", "the Payment Service"),
        ("name", "retry_count", "**RETRY_COUNT**"),
        ("decision", "We decided to use blue-green deploys.", "- Decision: blue-green deploys"),
        ("decision", "Never push to main on Fridays", "Rule: never push to main on Fridays!"),
    ],
)
def test_formatting_does_not_matter(category: str, fact: str, summary: str) -> None:
    assert kept(category, fact, summary)


@pytest.mark.parametrize(
    ("category", "fact", "summary"),
    [
        ("number", "52.3", "P/E 52.4"),
        ("number", "5", "5.5 GB"),
        ("number", "5", "50 workers"),
        ("number", "300 ms", "a 300 s timeout"),
        ("path", "/srv/api", "/srv/api2 and /srv/api-old"),
        ("path", "/srv/api/config.yaml", "/srv/api/config.yml"),
        ("command", "make deploy ENV=prod", "make deploy ENV=staging"),
        ("name", "PaymentService", "PaymentServiceV2"),
        ("decision", "We decided to use Postgres 16 for billing.", "We use Postgres 15 for billing"),
        ("decision", "We decided to use blue-green deploys.", "Deploys are done by hand."),
    ],
)
def test_changed_values_do_not_match(category: str, fact: str, summary: str) -> None:
    assert not kept(category, fact, summary)


def test_normalize_and_numbers() -> None:
    assert normalize("**`A`**  “b”\u2014c 1,234") == "a b-c 1234"
    assert numbers_in("1,234 and 4.50 and v3") == ["1234", "4.5"]


def test_match_reports_evidence() -> None:
    match = fact_kept(Fact("f", "path", "/tmp/x.csv"), "Saved the table to /tmp/x.csv today.")
    assert match.kept and match.score == 100.0 and "/tmp/x.csv" in match.evidence
    assert fact_kept(Fact("f", "path", "/tmp/x.csv"), "nothing").score == 0.0


def test_extraction_rules_by_category() -> None:
    text = (
        "Run this:\n```bash\nmake test\n```\n$ git push origin main\n"
        "The handler in payments/api.py calls PaymentService with retry_count=3 and 250 ms "
        "backoff; JIRA-451 tracks it. See https://example.com/x. Use gpt-4o-mini. "
        "Revenue grew 12% to $4.1M on 2026-04-20. We must not ship on Fridays.\n"
        "```python\nx = 12345\n```"
    )
    facts = extract_facts([{"role": "user", "content": text}])
    by = {(f.category, f.text) for f in facts}
    assert {
        ("command", "make test"),
        ("command", "git push origin main"),
        ("path", "payments/api.py"),
        ("path", "https://example.com/x"),
        ("name", "PaymentService"),
        ("name", "retry_count"),
        ("name", "JIRA-451"),
        ("name", "gpt-4o-mini"),
        ("number", "250 ms"),
        ("number", "12%"),
        ("number", "$4.1M"),
        ("number", "2026-04-20"),
        ("decision", "We must not ship on Fridays."),
    } <= by
    assert ("number", "3") not in by  # single digits without a unit are noise
    assert not any("12345" in text for _, text in by)  # code fences other than shell: skipped
    assert [f.id for f in facts] == [f"x{i}" for i in range(1, len(facts) + 1)]
    assert all(f.message_index == 0 for f in facts)


def test_extraction_deduplicates_and_keeps_first_message() -> None:
    facts = extract_facts([
        {"role": "user", "content": "Config at /etc/app.toml"},
        {"role": "assistant", "content": "Edited /etc/app.toml."},
    ])  # fmt: skip
    assert [(f.text, f.message_index) for f in facts] == [("/etc/app.toml", 0)]


@pytest.mark.parametrize(
    ("fact", "summary", "expected"),
    [
        ("12 gunicorn workers per pod", "Prod pods run 12 gunicorn workers each.", True),
        ("12 gunicorn workers per pod", "log: 12 retries; gunicorn restarted", False),
        ("12 gunicorn workers per pod", "12 rows inserted." + " filler" * 30 + " gunicorn workers", False),
        ("12 gunicorn workers per pod", "Prod pods run 16 gunicorn workers each.", False),
        ("proxy_read_timeout 75s", "nginx proxy_read_timeout = 75 s", True),
        ("proxy_read_timeout 75s", "nginx proxy_read_timeout = 75 ms", False),
        ("Cohen's kappa of 0.71", "inter-rater kappa: 0.71", True),
        ("38.2 million events per day", "about 38.2 million events daily", True),
    ],
)
def test_number_facts_need_their_context(fact: str, summary: str, expected: bool) -> None:
    assert kept("number", fact, summary) is expected


@pytest.mark.parametrize(
    ("fact", "summary", "expected"),
    [
        ("partition events_daily by event_date rather than by ingestion time",
         "Decision: events_daily partitioned by event_date, not ingestion time.", True),
        ("partition events_daily by event_date rather than by ingestion time",
         "table: events_daily", False),
        ("never push to main on Fridays", "Push to main on Fridays.", False),
        ("make the tax lookup synchronous again, because the async path races with the capture",
         "Tax lookup goes back to synchronous: the async path raced with capture.", True),
    ],
)
def test_decisions_need_most_of_their_words(fact: str, summary: str, expected: bool) -> None:
    assert kept("decision", fact, summary) is expected
