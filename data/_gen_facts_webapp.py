"""Planted facts of the checkout bug hunt: what is said, by whom, the probe question
and its answer (values drawn from a seeded ``random.Random``)."""

from __future__ import annotations

import random

from _gen_common import FactSpec


def facts(rng: random.Random) -> list[FactSpec]:
    rate = rng.choice(["3.8", "2.6", "4.4"])
    read = rng.choice([45, 75, 20])
    workers = rng.choice([6, 10, 12])
    p99 = rng.choice([2400, 3100, 1900])
    pool = rng.choice([64, 96, 48])
    ttl = rng.choice([25, 40, 90])
    mem = rng.choice([768, 1536, 1280])
    orders = rng.choice([137, 212, 89])
    retries = rng.choice([7, 9, 11])
    ticket = rng.choice(["SHOP-4172", "SHOP-3958", "SHOP-4409"])
    reporter = rng.choice(["Lena Hoffmann", "Ravi Subramanian", "Chloe Martin"])
    reviewer = rng.choice(["Tomasz Wierzbicki", "Aiko Tanaka", "Diego Ferreira"])
    release = rng.choice(["2.14.3", "2.15.1"])
    F = FactSpec
    return [
        F(
            "number",
            "assistant",
            f"{rate}% of checkout requests",
            f"Over the last 24 hours the 502s hit {rate}% of checkout requests, and almost none of "
            "the other pages.",
            "What share of checkout requests failed with a 502?",
            f"{rate}%",
            f"If the fix works, the {rate}% of checkout requests that fail should drop to zero.",
        ),
        F(
            "number",
            "tool",
            f"proxy_read_timeout {read}s",
            f"    proxy_read_timeout {read}s;",
            "What is nginx's proxy_read_timeout?",
            f"{read}s",
        ),
        F(
            "number",
            "user",
            f"{workers} gunicorn workers per pod",
            f"For the record: production runs {workers} "
            "gunicorn workers per pod, staging only two.",
            "How many gunicorn workers run per production pod?",
            f"{workers} gunicorn workers",
            f"With {workers} gunicorn workers per pod, three slow payments already hurt.",
        ),
        F(
            "number",
            "tool",
            f"p99={p99}ms",
            f"summary: checkout_submit p50=180ms p99={p99}ms max=30012ms",
            "What was the p99 latency of checkout submit?",
            f"{p99}ms",
        ),
        F(
            "number",
            "assistant",
            f"pool of {pool} connections",
            f"The Redis client is configured with a pool of {pool} connections per process.",
            "How large is the Redis connection pool per process?",
            f"{pool} connections",
        ),
        F(
            "number",
            "user",
            f"session TTL of {ttl} minutes",
            f"Product insists on a session TTL of {ttl} minutes, so don't shorten it as a fix.",
            "What session TTL does product insist on?",
            f"{ttl} minutes",
        ),
        F(
            "number",
            "assistant",
            f"{mem} MiB memory limit",
            f"Each checkout pod has a {mem} MiB memory limit, and we are at about 60% of it.",
            "What memory limit does each checkout pod have?",
            f"{mem} MiB",
            f"More workers would not fit in the {mem} MiB memory limit anyway.",
        ),
        F(
            "number",
            "user",
            f"{orders} duplicate orders",
            f"Finance counted {orders} duplicate orders since the start of the month, all refunded "
            "by hand.",
            "How many duplicate orders did finance count this month?",
            f"{orders} duplicate orders",
        ),
        F(
            "number",
            "assistant",
            f"up to {retries} times",
            f"Stripe retries a failed webhook up to {retries} times over three days, so a handler "
            "that is not idempotent will run more than once.",
            "How many times does Stripe retry a failed webhook (in this setup)?",
            f"{retries} times",
        ),
        F(
            "path",
            "user",
            "/etc/nginx/conf.d/shop.conf",
            "The real nginx config is /etc/nginx/conf.d/shop.conf, "
            "the one in the repo is outdated.",
            "Which file holds the real nginx config?",
            "/etc/nginx/conf.d/shop.conf",
            "I compared it with /etc/nginx/conf.d/shop.conf and they differ in two places.",
        ),
        F(
            "path",
            "assistant",
            "shop/checkout/views.py",
            "The submit handler is SubmitOrderView in shop/checkout/views.py.",
            "In which file is the submit handler?",
            "shop/checkout/views.py",
        ),
        F(
            "path",
            "assistant",
            "shop/payments/stripe_client.py",
            "All calls to the payment provider go through shop/payments/stripe_client.py.",
            "Which module makes the calls to the payment provider?",
            "shop/payments/stripe_client.py",
            "The timeout fix belongs in shop/payments/stripe_client.py, not in the view.",
        ),
        F(
            "path",
            "user",
            "frontend/src/pages/Checkout.tsx",
            "The button logic is in frontend/src/pages/Checkout.tsx if you want to check it.",
            "Which frontend file has the checkout button logic?",
            "frontend/src/pages/Checkout.tsx",
        ),
        F(
            "path",
            "tool",
            "/var/log/nginx/shop_error.log",
            "==> /var/log/nginx/shop_error.log <==",
            "Which nginx error log was read?",
            "/var/log/nginx/shop_error.log",
        ),
        F(
            "path",
            "assistant",
            "deploy/k8s/checkout-deployment.yaml",
            "Worker count and memory come from deploy/k8s/checkout-deployment.yaml.",
            "Which file sets the worker count and memory of the checkout pods?",
            "deploy/k8s/checkout-deployment.yaml",
        ),
        F(
            "path",
            "assistant",
            "tests/e2e/test_checkout_flow.py",
            "I added the double-submit case to tests/e2e/test_checkout_flow.py.",
            "Which test file got the double-submit case?",
            "tests/e2e/test_checkout_flow.py",
            "CI now runs tests/e2e/test_checkout_flow.py on every merge request.",
        ),
        F(
            "path",
            "user",
            "shop/settings/production.py",
            "Timeouts for outgoing calls are set in shop/settings/production.py, look there first.",
            "Where are the timeouts for outgoing calls set?",
            "shop/settings/production.py",
        ),
        F(
            "path",
            "assistant",
            "scripts/replay_webhooks.py",
            "To reprocess missed events I wrote scripts/replay_webhooks.py; it is read-only by "
            "default.",
            "Which script reprocesses missed webhook events?",
            "scripts/replay_webhooks.py",
        ),
        F(
            "command",
            "assistant",
            "kubectl -n shop logs deploy/checkout --since=2h | grep 'upstream prematurely closed'",
            "To count them yourself:\n```bash\nkubectl -n shop logs deploy/checkout --since=2h | "
            "grep 'upstream prematurely closed'\n```",
            "Which command counts the upstream errors?",
            "kubectl -n shop logs deploy/checkout --since=2h | grep 'upstream prematurely closed'",
        ),
        F(
            "command",
            "user",
            "pytest tests/e2e -k double_submit -n 4",
            "Run it with `pytest tests/e2e -k double_submit -n 4`, it only shows up in parallel.",
            "How should the double-submit test be run?",
            "pytest tests/e2e -k double_submit -n 4",
        ),
        F(
            "command",
            "assistant",
            "redis-cli -h cache-01 INFO clients",
            "To see the connection count live: `redis-cli -h cache-01 INFO clients`.",
            "Which command shows the Redis connection count?",
            "redis-cli -h cache-01 INFO clients",
            "Keep `redis-cli -h cache-01 INFO clients` open in a terminal during the test.",
        ),
        F(
            "command",
            "assistant",
            "git bisect start v2.13.0 v2.12.4",
            "The bug appeared between two releases, so:\n```bash\ngit bisect start v2.13.0 "
            "v2.12.4\n```",
            "Which command started the bisect?",
            "git bisect start v2.13.0 v2.12.4",
        ),
        F(
            "command",
            "user",
            "locust -f load/checkout.py --users 200 --spawn-rate 20 --run-time 10m",
            "The load test QA uses is `locust -f load/checkout.py --users 200 --spawn-rate 20 "
            "--run-time 10m`.",
            "Which load test command does QA use?",
            "locust -f load/checkout.py --users 200 --spawn-rate 20 --run-time 10m",
            "Rerun `locust -f load/checkout.py --users 200 --spawn-rate 20 --run-time 10m` after "
            "the deploy.",
        ),
        F(
            "command",
            "assistant",
            "python manage.py migrate payments 0042",
            "The idempotency key needs a migration: `python manage.py migrate payments 0042`.",
            "Which migration command adds the idempotency key?",
            "python manage.py migrate payments 0042",
        ),
        F(
            "command",
            "assistant",
            "npm run build -- --profile",
            "For the frontend timing I built with `npm run build -- --profile`.",
            "How was the frontend built for profiling?",
            "npm run build -- --profile",
        ),
        F(
            "command",
            "assistant",
            "curl -sS -o /dev/null -w '%{http_code} %{time_total}\\n' "
            "https://staging.shop.example/checkout/health",
            "A quick probe from outside:\n```bash\ncurl -sS -o /dev/null -w '%{http_code} "
            "%{time_total}\\n' https://staging.shop.example/checkout/health\n```",
            "Which command probes the checkout health endpoint from outside?",
            "curl -sS -o /dev/null -w '%{http_code} %{time_total}\\n' "
            "https://staging.shop.example/checkout/health",
        ),
        F(
            "command",
            "user",
            "celery -A shop inspect active",
            "When it hangs, run `celery -A shop inspect active` and paste me the output.",
            "Which command lists the active Celery tasks?",
            "celery -A shop inspect active",
        ),
        F(
            "name",
            "user",
            ticket,
            f"Everything about this goes into the ticket {ticket}, please.",
            "Which ticket tracks the checkout bug?",
            ticket,
            f"I linked the load test results in {ticket}.",
        ),
        F(
            "name",
            "assistant",
            "checkout_async_tax",
            "The async tax lookup is behind the flag checkout_async_tax.",
            "Which flag controls the async tax lookup?",
            "checkout_async_tax",
        ),
        F(
            "name",
            "assistant",
            "payments-high",
            "Captures run on the Celery queue payments-high, separate from emails.",
            "On which Celery queue do captures run?",
            "payments-high",
        ),
        F(
            "name",
            "user",
            reporter,
            f"The first report came from {reporter} in support, she has the customer's details.",
            "Who in support sent the first report?",
            reporter,
        ),
        F(
            "name",
            "user",
            reviewer,
            f"{reviewer} will review the fix, he knows the payments code best.",
            "Who will review the fix?",
            reviewer,
            f"I asked {reviewer} to look at the migration as well.",
        ),
        F(
            "name",
            "assistant",
            "CHECKOUT-3F9",
            "Sentry groups all of them under the issue CHECKOUT-3F9.",
            "Under which Sentry issue are the errors grouped?",
            "CHECKOUT-3F9",
        ),
        F(
            "name",
            "assistant",
            "cart:v3:",
            "Carts are stored in Redis under the key prefix cart:v3: with the session id.",
            "What is the Redis key prefix for carts?",
            "cart:v3:",
        ),
        F(
            "name",
            "user",
            "PAYMENT_WEBHOOK_SECRET",
            "The webhook signature is checked with PAYMENT_WEBHOOK_SECRET, which is different on "
            "staging.",
            "Which setting holds the webhook signing secret?",
            "PAYMENT_WEBHOOK_SECRET",
        ),
        F(
            "name",
            "assistant",
            f"release {release}",
            f"The fix will ship in release {release}, planned for Thursday.",
            "In which release will the fix ship?",
            release,
            f"Changelog entry drafted for release {release}.",
        ),
        F(
            "decision",
            "user",
            "make the tax lookup synchronous again, because the async path races with the capture",
            "Decision: we make the tax lookup synchronous again, because the async path races with "
            "the capture.",
            "Will the tax lookup be synchronous or asynchronous?",
            "synchronous",
            "As decided, we make the tax lookup synchronous again, because the async path races "
            "with the capture.",
        ),
        F(
            "decision",
            "assistant",
            "add an idempotency key to the submit endpoint "
            "instead of relying on the disabled button",
            "We agreed to add an idempotency key to the submit endpoint instead of relying on the "
            "disabled button.",
            "How will double submits be prevented on the server?",
            "idempotency key",
        ),
        F(
            "decision",
            "user",
            "raise the gunicorn timeout on staging only",
            "Let's raise the gunicorn timeout on staging only, production stays as it is until we "
            "understand the slow path.",
            "Where will the gunicorn timeout be raised?",
            "staging only",
        ),
        F(
            "decision",
            "assistant",
            "keep Redis as the session store",
            "We keep Redis as the session store; moving sessions to Postgres would add latency "
            "to every request.",
            "Which session store will be kept?",
            "Redis",
            "Since we keep Redis as the session store, the pool size matters.",
        ),
        F(
            "decision",
            "user",
            "ship the fix behind a flag and ramp it to a tenth of traffic",
            "We ship the fix behind a flag and ramp it to a tenth of traffic first.",
            "How will the fix be rolled out?",
            "behind a flag",
        ),
        F(
            "decision",
            "assistant",
            "use Sentry breadcrumbs instead of more log lines",
            "Decided: we use Sentry breadcrumbs instead of more log lines, the logs are noisy "
            "enough.",
            "What will be used instead of more log lines?",
            "Sentry breadcrumbs",
        ),
        F(
            "decision",
            "user",
            "write the regression test in Playwright",
            "We write the regression test in Playwright, because the bug needs real browser "
            "retries.",
            "With which tool will the regression test be written?",
            "Playwright",
        ),
        F(
            "decision",
            "assistant",
            "postpone the nginx upgrade to the next sprint",
            "We postpone the nginx upgrade to the next sprint, so only one thing changes at a "
            "time.",
            "When will the nginx upgrade happen?",
            "next sprint",
            "Note that we postpone the nginx upgrade to the next sprint, so leave the config.",
        ),
        F(
            "decision",
            "user",
            "retry webhooks with exponential backoff",
            "We retry webhooks with exponential backoff instead of a fixed delay.",
            "How will webhooks be retried?",
            "exponential backoff",
        ),
    ]
