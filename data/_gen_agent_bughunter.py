"""Sample workspace agent BugHunter: a debugging agent with log, HTTP probe and test tools.

The tools are real, deterministic functions; the sessions are scripted tasks."""

from __future__ import annotations

import json
import random
from collections.abc import Callable

from _gen_workspace import AgentPlan, Call, Task, describe

_LOG_RNG = random.Random("checkout-logs")
_LOG = [
    f"10:{m:02d}:{s:02d} {lvl} {msg}"
    for m in range(60)
    for s, lvl, msg in [
        (
            _LOG_RNG.randint(0, 59),
            _LOG_RNG.choice(["INFO", "INFO", "INFO", "WARN", "ERROR"]),
            _LOG_RNG.choice(
                [
                    "POST /checkout/submit 200",
                    "POST /checkout/submit 502 upstream prematurely closed",
                    "GET /cart 200",
                    "task orders.capture_payment succeeded",
                    "redis pool exhausted",
                    "tax lookup took 29.8 s",
                    "stripe webhook handled",
                    "worker timeout (pid 41)",
                ]
            ),
        )
    ]
]


def grep_logs(pattern: str, minutes: int = 60) -> list[str]:
    """Lines of the checkout service's log that contain ``pattern``.

    Args:
        pattern: text to look for
        minutes: how far back to look
    """
    return [line for line in _LOG[-minutes:] if pattern.lower() in line.lower()][:20]


def http_probe(url: str, times: int = 10) -> dict[str, object]:
    """Request a URL several times and report status codes and timings.

    Args:
        url: the URL
        times: how many requests
    """
    rng = random.Random(f"probe:{url}")
    timings = [round(rng.lognormvariate(-1.5, 1.0), 3) for _ in range(times)]
    statuses = [502 if t > 1.2 else 200 for t in timings]
    return {"url": url, "statuses": statuses, "seconds": timings, "errors": statuses.count(502)}


def run_tests(selection: str) -> dict[str, object]:
    """Run a selection of the test suite.

    Args:
        selection: a pytest selection, e.g. tests/checkout -k submit
    """
    rng = random.Random(f"tests:{selection}")
    failed = [
        f"tests/checkout/test_submit.py::test_double_submit[{i}]"
        for i in range(rng.choice([0, 0, 1, 2]))
    ]
    return {
        "selection": selection,
        "passed": rng.randint(12, 80),
        "failed": failed,
        "duration_s": round(rng.uniform(3, 60), 2),
    }


def _bug_hunter(rng: random.Random) -> list[list[Task]]:
    patterns = ["502", "timeout", "redis", "tax lookup", "webhook"]
    urls = ["https://staging.shop.example/checkout/health", "https://staging.shop.example/cart"]

    def logs() -> Task:
        pattern = rng.choice(patterns)

        def answer(results: list[str]) -> str:
            lines = json.loads(results[0])
            return (
                f"{len(lines)} log lines mention '{pattern}' in the last hour. "
                + (f"The latest: {lines[-1]}. " if lines else "")
                + "The 502s line up with the slow tax lookups, as suspected."
            )

        return Task(
            f"Grep the checkout logs for '{pattern}' in the last hour.",
            [[Call("grep_logs", {"pattern": pattern, "minutes": 60})]],
            answer,
        )

    def probe() -> Task:
        url = rng.choice(urls)

        def answer(results: list[str]) -> str:
            data = json.loads(results[0])
            slow = max(data["seconds"])
            return (
                f"{data['errors']} of {len(data['statuses'])} requests to {url} failed with "
                f"502; the slowest took {slow} s. The failures are exactly the requests "
                "above the upstream timeout."
            )

        return Task(
            f"Probe {url} a few times, is it still flaky?",
            [[Call("http_probe", {"url": url, "times": 12})]],
            answer,
            ["Probing the endpoint 12 times."],
        )

    def tests() -> Task:
        selection = rng.choice(
            ["tests/checkout -k submit", "tests/payments -x", "tests/e2e -k double_submit -n 4"]
        )

        def answer(results: list[str]) -> str:
            data = json.loads(results[0])
            failed = data["failed"]
            status = f"{len(failed)} failed: {', '.join(failed)}" if failed else "all green"
            return (
                f"`pytest {selection}`: {data['passed']} passed, {status} "
                f"({data['duration_s']} s). The double submit still races without the "
                "idempotency key."
            )

        return Task(
            f"Run `{selection}` and tell me what fails.",
            [[Call("run_tests", {"selection": selection})]],
            answer,
        )

    def both() -> Task:
        def answer(results: list[str]) -> str:
            return (
                "Putting both together: "
                + " ".join(describe(r) for r in results)
                + " Decision stands: add an idempotency key to the submit endpoint instead "
                "of relying on the disabled button."
            )

        return Task(
            "Check the logs for worker timeouts and probe the health endpoint, then "
            "tell me if the idempotency plan still makes sense.",
            [
                [Call("grep_logs", {"pattern": "worker timeout"})],
                [Call("http_probe", {"url": urls[0], "times": 8})],
            ],
            answer,
            ["Logs first.", "Now the endpoint."],
        )

    def chat() -> Task:
        text = rng.choice(
            [
                "Note: the real nginx config is /etc/nginx/conf.d/shop.conf; proxy_read_timeout is "
                "45s there.",
                "Ticket for all of this is SHOP-4172. Put the findings there.",
                "OK, I'm in a meeting for an hour. Keep the debug patches on staging only.",
            ]
        )
        return Task(text, [], lambda results: "Got it, noted for the rest of the hunt.")

    factories: list[Callable[[], Task]] = [logs, logs, probe, tests, both, chat]
    return [[rng.choice(factories)() for _ in range(rng.randint(9, 13))] for _ in range(5)]


def plan(seed: int) -> AgentPlan:
    return AgentPlan(
        "BugHunter",
        "You are BugHunter. You debug a web shop's checkout. Prefer evidence to guesses.",
        [grep_logs, http_probe, run_tests],
        _bug_hunter(random.Random(f"{seed}:bh")),
    )
