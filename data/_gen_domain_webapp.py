"""Transcript domain: hunting an intermittent 502 in a web shop's checkout."""

from __future__ import annotations

from datetime import UTC, datetime

from _gen_common import (
    Domain,
    Vocab,
    choice,
    decimal,
    hexid,
    json_events,
    json_rows,
    log_output,
    number,
    pytest_report,
)
from _gen_facts_webapp import facts

SLOTS = {
    "component": [
        "the checkout view",
        "the payment client",
        "the cart service",
        "the tax lookup",
        "the order submit endpoint",
        "the webhook handler",
        "the session middleware",
        "the Celery worker",
        "the nginx upstream",
        "the React checkout page",
    ],
    "symptom": [
        "returns a 502 every few hundred requests",
        "hangs for exactly thirty seconds",
        "creates the order twice",
        "loses the cart after login",
        "logs a timeout but still charges the card",
        "only fails behind the load balancer",
        "is slow on the first request after a deploy",
        "drops the coupon code",
    ],
    "file": [
        "shop/checkout/forms.py",
        "shop/cart/models.py",
        "shop/orders/tasks.py",
        "frontend/src/api/client.ts",
        "shop/middleware.py",
        "shop/tax/client.py",
    ],
    "env": ["staging", "production", "the load-test cluster", "my laptop"],
    "browser": ["Safari on iOS", "Chrome on Android", "Firefox", "the embedded webview"],
    "person": ["support", "the product manager", "QA", "the payments team", "ops"],
}

_LOG_LINES = [
    "upstream prematurely closed connection while reading response header from upstream",
    "POST /checkout/submit 200 {n} ms",
    "GET /cart 200 {n} ms",
    "POST /checkout/submit 502 {n} ms",
    "worker pid {n} booted",
    "task orders.capture_payment[{id}] succeeded in {f} s",
    "task orders.capture_payment[{id}] retry: timeout",
    "redis pool: {n} in use",
    "stripe webhook evt_{id} handled",
    "slow query ({f} s): SELECT ... FROM orders_order",
]

TOOL_OUTPUTS = [
    (
        [
            "kubectl -n shop logs deploy/checkout --since=30m",
            "tail -n 300 /var/log/nginx/access.log",
            "stern checkout --since 15m",
        ],
        log_output(
            [("INFO", 14), ("WARN", 3), ("ERROR", 2)],
            ["nginx", "gunicorn", "celery", "django", "redis"],
            _LOG_LINES,
        ),
    ),
    (
        [
            "psql shop -c 'select id, status, total, created_at from orders_order order by id desc "
            "limit 20'",
            "python manage.py shell -c 'print_recent_orders()'",
        ],
        json_rows(
            [
                ("order_id", number(880_000, 990_000)),
                ("status", choice(["paid", "paid", "pending", "failed", "duplicate"])),
                ("total_eur", decimal(5, 480)),
                ("attempts", number(1, 3)),
            ]
        ),
    ),
    (
        [
            "curl -s https://staging.shop.example/debug/requests?status=502",
            "sentry-cli events list --project checkout --max-rows 20",
        ],
        json_events(
            {
                "request_id": hexid(48),
                "path": choice(["/checkout/submit", "/checkout", "/cart", "/api/tax"]),
                "status": choice([200, 200, 200, 502, 504]),
                "upstream_ms": number(4, 31_000),
                "worker": choice(["web-1", "web-2", "web-3"]),
            }
        ),
    ),
    (
        ["pytest tests/checkout -q", "pytest tests/payments -x -q", "npm test -- --watchAll=false"],
        pytest_report(
            [
                "tests/checkout/test_views.py::test_submit",
                "tests/checkout/test_cart.py::test_merge",
                "tests/payments/test_capture.py::test_retry",
                "tests/payments/test_webhooks.py::test_signature",
            ]
        ),
    ),
]

VOCAB = Vocab(
    slots=SLOTS,
    openings=[
        "Morning. The 502s are back on {env} since last night. Let's pick up the hunt where we "
        "left it: {component}.",
        "Hi! Good news and bad news: the hotfix helped, but {component} still {symptom}.",
        "Let's continue with the checkout bug. I collected a few more reports from {person} "
        "overnight, all with {browser}.",
        "Back on the checkout issue. Can you remind me what we ruled out so far?",
    ],
    closings=[
        "I'm done for today. Write down what we know and what we still suspect, please.",
        "Let's wrap up. What would you try first tomorrow morning?",
        "Stopping here. Please summarize the state for the ticket.",
    ],
    recaps=[
        "State of the hunt: ruled out {component} and the database. Still suspect {component}, "
        "which {symptom} under load. Next: reproduce on {env} with more workers.",
        "Summary:\n- reproduced on {env}: yes, about once per few hundred requests\n- ruled out: "
        "{component}\n- suspect: {component}\n- next step: add timing logs in {file}",
        "We changed nothing in production today; two debug patches are on {env} only. Tomorrow: "
        "look at {component} first.",
    ],
    tasks=[
        "Can you look at {component}? {person} says it {symptom}, mostly with {browser}.",
        "Please reproduce the failure on {env}. I want to see it with my own eyes before we "
        "change anything.",
        "Check the logs around the last 502 and tell me what happened right before it.",
        "Add timing logs to {component}, I want to know where the thirty seconds go.",
        "Can you write a test that submits the checkout twice in a row, like an impatient user?",
        "Look at {file} and tell me whether anything there could block a worker.",
        "Compare the 502 rate on {env} before and after the last deploy.",
        "Go through the recent orders and find the ones that were created twice.",
    ],
    plans=[
        "Okay. I'll pull the logs for the last hour on {env}, find a 502, and trace that request "
        "through nginx, gunicorn and the app.",
        "Plan:\n1. reproduce with a small load test\n2. look at {component} timings\n3. check "
        "the worker pool\nStarting with the logs.",
        "Sure. I'll start from {file}, since {component} goes through it, and then check the "
        "worker settings.",
        "I'll keep it read-only for now: logs and queries, no changes on {env}.",
    ],
    narrations=[
        "Pulling the logs first: `{command}`",
        "Let me look at the recent data with `{command}` before guessing.",
        "Running `{command}` to see whether {component} shows up.",
        "Checking with `{command}`; this should tell us more about the failure.",
    ],
    findings=[
        "The 502 happens when a worker takes longer than the upstream timeout: nginx gives up, "
        "but the worker keeps going and finishes the payment. That explains orders that were "
        "paid although the customer saw an error.",
        "Interesting: every failing request went through the same worker, and that worker was "
        "waiting on {component} for almost the whole time.",
        "Nothing suspicious in {file}. The blocking call is elsewhere; the timings point at "
        "{component}.",
        "The duplicate orders all have two submits less than a second apart, from {browser}. "
        "The button is disabled in JavaScript, but the browser retried the POST on its own.",
        "The test reproduces it: two concurrent submits create two orders about one time in "
        "five. So it is a race, not just a slow request.",
        "The 502 rate dropped after the deploy, but not to zero. Whatever we fixed was one of "
        "two causes.",
    ],
    followups=[
        "How does that explain the duplicates though? I don't see the connection yet.",
        "Can we prove it, or is it a theory for now? I need something for {person}.",
        "Would more workers help, or would that just hide the problem?",
        "Ok. Is there a quick mitigation we can ship today while we keep digging?",
    ],
    answers=[
        "When nginx gives up, the browser shows an error and the user clicks again; the first "
        "request is still running, so both finish and we get two orders.",
        "It's a theory backed by timings; the load test on {env} will prove or disprove it. I'd "
        "not tell {person} more than 'we have a lead' yet.",
        "More workers would make it rarer but not go away, and it would cost memory. I'd fix "
        "the race itself.",
        "Yes: make the submit idempotent on the server. That fixes the duplicates even if the "
        "502s continue for a while.",
    ],
    explain_requests=[
        "Explain to me how a request travels from the browser to the payment provider in our "
        "setup. I want the whole path.",
        "Write a short note on why the duplicates happen, for {person}.",
        "Can you explain the difference between the nginx timeout and the gunicorn timeout?",
    ],
    paragraphs=[
        "A checkout request first reaches the load balancer, which forwards it to nginx on one "
        "of the web nodes. nginx proxies it to gunicorn over a local socket, and gunicorn hands "
        "it to a synchronous Django worker. The worker holds that request until the response is "
        "complete, including any call to the payment provider.",
        "When the payment provider is slow, the worker is blocked. With a small number of "
        "workers per node, a few slow payments are enough to make new requests queue up in "
        "nginx. If they wait longer than the proxy timeout, nginx answers 502 to the browser "
        "while the worker continues as if nothing happened.",
        "The duplicates follow from that: the customer sees an error, presses the button again, "
        "and a second order is created while the first is still being captured. The frontend "
        "guard does not help when the browser or a proxy retries the POST itself.",
        "The nginx timeout limits how long nginx waits for an answer from gunicorn. The gunicorn "
        "timeout limits how long a worker may be silent before the master kills it. If the "
        "first is shorter than the second, nginx gives up while the worker is still alive.",
        "Celery only helps if the slow part really moves out of the request. Today the tax "
        "lookup runs in the request and the capture in a task, which means the order can be "
        "half done when the request fails.",
        "For debugging, the most valuable thing is a request id that flows through every layer: "
        "nginx access log, Django log, Celery task and the payment provider's metadata. With it, "
        "one grep gives the whole story of a failing checkout.",
        "Load tests are only useful if they look like real traffic. Our users tend to press the "
        "button twice, open the checkout in two tabs, and come back after the session expired. "
        "A test that only sends clean single requests will never find this bug.",
        "Session handling is a second suspect. The session middleware writes to Redis on every "
        "request, and under load the connection pool can run dry, which adds waiting time "
        "exactly in the requests that are already slow.",
        "Whatever the fix, it should be measurable: the 502 rate per hour and the number of "
        "duplicate orders per day are the two numbers I'd watch on a dashboard during the "
        "rollout.",
        "Rolling back is cheap here: the changes are in configuration and one view. I'd still "
        "ship them one at a time, so that we know which one made the difference.",
    ],
    user_chatter=[
        "Thanks. Give me a minute, I need to answer {person} first.",
        "Ugh, this bug. Ok, let's keep going, I'm getting a coffee first.",
        "Good, that's progress. Let's continue with the next suspect.",
        "Fine by me. Go ahead, but keep {env} usable for QA please.",
        "Sorry for the delay, standup ran long. Where were we with this?",
    ],
    assistant_chatter=[
        "Sure, take your time. Nothing is running on {env} right now.",
        "Sounds good. I'll keep the debug changes on {env} only.",
        "Ready when you are. I have the list of suspects from last time.",
        "Understood. I'll wait for your go before changing anything else.",
    ],
    pastes=[
        "Here's what support forwarded:\n```\nCustomer: I clicked 'Pay now', got an error page, "
        "clicked again and now I was charged twice. Order numbers 931142 and 931143.\nBrowser: "
        "{browser}\n```\nSame pattern as the others?",
        "This is the nginx config on {env}:\n```nginx\nupstream shop {\n    server unix:/run/"
        "gunicorn.sock fail_timeout=0;\n}\nserver {\n    location / {\n        proxy_pass "
        "http://shop;\n        proxy_set_header X-Request-ID $request_id;\n    }\n}\n```",
        'Stack trace from Sentry:\n```\nTimeoutError: timed out\n  File "{file}", line 77, in '
        'lookup\n    response = session.get(url, timeout=None)\n  File "requests/sessions.py", '
        "line 602, in get\n```\nThat timeout=None looks wrong to me.",
    ],
    reviews=[
        "Yes, same pattern: an error page, a second click, two orders a second apart. That's the "
        "race between the timed-out request and the retry.",
        "The config has no explicit proxy timeout, so nginx uses its default, and the request id "
        "is passed on, which is good: we can follow a request into the app logs.",
        "It is wrong: timeout=None means the call can wait forever, and it holds a worker the "
        "whole time. That alone can explain the thirty-second hangs.",
    ],
    tool_outputs=TOOL_OUTPUTS,
)


DOMAIN = Domain(
    name="checkout-bug-hunt",
    prefix="wb",
    seed=20260316,
    description=(
        "A developer and an assistant chase an intermittent 502 and duplicate orders in a web "
        "shop's checkout (nginx, gunicorn, Django, Celery, Redis, React) across several "
        "sessions: reproductions, logs, queries, test runs, theories and fixes."
    ),
    start=datetime(2026, 3, 16, tzinfo=UTC),
    sessions=(5, 5),
    messages_per_session=(130, 170),
    vocab=VOCAB,
    facts=facts,
)
