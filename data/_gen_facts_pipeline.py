"""Planted facts of the clickstream ETL migration: what is said, by whom, the probe question
and its answer (values drawn from a seeded ``random.Random``)."""

from __future__ import annotations

import random

from _gen_common import FactSpec


def facts(rng: random.Random) -> list[FactSpec]:
    n = rng.choice([38, 42, 47, 52])
    volume = rng.choice(["41.7", "38.2", "44.9"])
    days = rng.choice([455, 400, 540])
    rss = rng.choice(["11.5", "13.25", "9.75"])
    batch = rng.choice(["250,000", "125,000", "400,000"])
    p95 = rng.choice([180, 240, 350])
    window = rng.choice([36, 48, 72])
    group = rng.choice([128, 256, 64])
    budget = rng.choice(["1,850", "2,300", "1,400"])
    first, last = rng.choice(["2026-02-01", "2026-02-08"]), rng.choice(["2026-02-14", "2026-02-21"])
    replay = rng.choice(["2026-02-03", "2026-02-11", "2026-02-19"])
    table = rng.choice(["events_sessionized_v3", "events_sessionized_v4"])
    bucket = rng.choice(["acme-raw-events-eu", "acme-clickstream-raw"])
    oncall = rng.choice(["Priya Raman", "Jonas Lindqvist", "Amara Okafor"])
    owner = rng.choice(["Marcus Oyelaran", "Elena Petrova", "Sanjay Mehta"])
    channel = rng.choice(["#data-platform-alerts", "#etl-alerts"])
    at = rng.choice(["02:30 UTC", "03:15 UTC"])
    F = FactSpec
    return [
        F(
            "number",
            "user",
            f"{n} minutes",
            f"Hard constraint from the analytics team: the nightly load has to finish within {n} "
            "minutes, otherwise the 07:00 dashboards show yesterday's numbers.",
            "Within how many minutes must the nightly load finish?",
            f"{n} minutes",
            f"Last night's run stayed inside the {n} minutes budget, with some margin.",
        ),
        F(
            "number",
            "assistant",
            f"{volume} million events per day",
            "From the last 30 days of exports, the raw "
            f"volume averages {volume} million events per "
            "day, with Mondays about a fifth above that.",
            "How many events per day does the raw layer receive on average?",
            f"{volume} million",
        ),
        F(
            "number",
            "user",
            f"raw events for {days} days",
            f"Legal confirmed the retention for the raw bucket: we keep raw events for {days} days "
            "and then delete them, no exceptions.",
            "For how many days are raw events kept?",
            f"{days} days",
            f"The lifecycle rule I drafted keeps raw events for {days} days, as legal asked.",
        ),
        F(
            "number",
            "tool",
            f"peak RSS {rss} GiB",
            f"WARN  [worker-3] peak RSS {rss} GiB while "
            "sorting partition 2026-02-17 (limit 16 GiB)",
            "What peak memory did worker-3 reach while sorting?",
            f"{rss} GiB",
        ),
        F(
            "number",
            "assistant",
            f"{batch} rows per batch",
            f"I set the loader to commit {batch} rows per batch; smaller batches made the COPY "
            "overhead dominate.",
            "How many rows does the loader commit per batch?",
            batch,
        ),
        F(
            "number",
            "user",
            f"p95 under {p95} ms",
            f"For the serving tables the target is p95 under {p95} ms for the dashboard queries; "
            "anything slower and the BI team complains.",
            "What p95 latency target do the dashboard queries have?",
            f"{p95} ms",
        ),
        F(
            "number",
            "assistant",
            f"{window}-hour dedup window",
            f"The dedup job keeps a {window}-hour dedup window keyed on the event id, which covers "
            "every late resend we saw in February.",
            "How long is the dedup window?",
            f"{window}-hour",
            f"With the {window}-hour dedup window the Monday spike disappears.",
        ),
        F(
            "number",
            "assistant",
            f"row groups of {group} MB",
            f"The benchmark favoured row groups of {group} MB: bigger groups hurt predicate "
            "pushdown, smaller ones blew up the footers.",
            "What Parquet row group size was chosen?",
            f"{group} MB",
        ),
        F(
            "number",
            "user",
            f"${budget} per month",
            f"Budget-wise, finance approved ${budget} per month for the new pipeline, storage and "
            "compute together.",
            "What monthly budget did finance approve?",
            f"${budget}",
            f"Are we still under the ${budget} per month that finance approved?",
        ),
        F(
            "path",
            "assistant",
            "/etc/clickstream/pipeline.yaml",
            "The connection settings and the schedule now live in /etc/clickstream/pipeline.yaml, "
            "so nothing is hard-coded in the DAG anymore.",
            "Which file holds the pipeline's connection settings and schedule?",
            "/etc/clickstream/pipeline.yaml",
            "Did you also update /etc/clickstream/pipeline.yaml on the staging box?",
        ),
        F(
            "path",
            "assistant",
            "dags/clickstream_daily.py",
            "The DAG itself is defined in dags/clickstream_daily.py, one task per step.",
            "In which file is the DAG defined?",
            "dags/clickstream_daily.py",
        ),
        F(
            "path",
            "user",
            "sql/transforms/sessionize.sql",
            "The sessionization query everyone copies is in sql/transforms/sessionize.sql, please "
            "start from that one.",
            "Which file holds the sessionization query?",
            "sql/transforms/sessionize.sql",
        ),
        F(
            "path",
            "tool",
            "/var/log/airflow/scheduler/latest/clickstream_daily.log",
            "log file: /var/log/airflow/scheduler/latest/clickstream_daily.log",
            "Which log file did the scheduler write for the DAG?",
            "/var/log/airflow/scheduler/latest/clickstream_daily.log",
        ),
        F(
            "path",
            "assistant",
            "tests/fixtures/events_sample_2k.jsonl",
            "I saved a fixture of real events with the ugly cases at "
            "tests/fixtures/events_sample_2k.jsonl.",
            "Where is the fixture of real events saved?",
            "tests/fixtures/events_sample_2k.jsonl",
            "The new test reads tests/fixtures/events_sample_2k.jsonl too.",
        ),
        F(
            "path",
            "user",
            "/opt/pipeline/secrets/warehouse.env",
            "Credentials are in /opt/pipeline/secrets/warehouse.env on the worker, never in git.",
            "Where are the warehouse credentials stored on the worker?",
            "/opt/pipeline/secrets/warehouse.env",
        ),
        F(
            "path",
            "assistant",
            "docs/runbooks/backfill.md",
            "I wrote the backfill procedure down in docs/runbooks/backfill.md.",
            "Where is the backfill procedure documented?",
            "docs/runbooks/backfill.md",
            "Link docs/runbooks/backfill.md in the on-call handbook, please.",
        ),
        F(
            "path",
            "user",
            "~/.dbt/profiles.yml",
            "My dbt connection is configured in ~/.dbt/profiles.yml, target prod points at the "
            "replica.",
            "Where is the dbt connection configured?",
            "~/.dbt/profiles.yml",
        ),
        F(
            "path",
            "assistant",
            "pipeline/transforms/dedup.py",
            "The dedup logic now lives in a single module, pipeline/transforms/dedup.py, used by "
            "both the daily run and backfills.",
            "Which module holds the dedup logic?",
            "pipeline/transforms/dedup.py",
        ),
        F(
            "command",
            "assistant",
            f"airflow dags backfill clickstream_daily -s {first} -e {last}",
            f"To rerun the gap:\n```bash\nairflow dags backfill clickstream_daily -s {first} -e "
            f"{last}\n```",
            "Which command reruns the gap in the DAG?",
            f"airflow dags backfill clickstream_daily -s {first} -e {last}",
        ),
        F(
            "command",
            "assistant",
            "dbt run --select sessionize+ --target prod",
            "Then rebuild the downstream models with `dbt run --select sessionize+ --target prod`.",
            "Which dbt command rebuilds sessionize and its downstream models in prod?",
            "dbt run --select sessionize+ --target prod",
            "After the merge, run `dbt run --select sessionize+ --target prod` once more.",
        ),
        F(
            "command",
            "user",
            "pytest tests/test_dedup.py -k window -x",
            "Before you push, run `pytest tests/test_dedup.py -k window -x`, that's the one that "
            "broke last time.",
            "Which test command should be run before pushing?",
            "pytest tests/test_dedup.py -k window -x",
        ),
        F(
            "command",
            "assistant",
            "aws s3 sync s3://acme-exports-staging/clickstream/ ./raw --exclude '*.tmp'",
            "I pulled a copy of the exports with\n```bash\naws s3 sync "
            "s3://acme-exports-staging/clickstream/ ./raw --exclude '*.tmp'\n```",
            "Which command copied the exports locally?",
            "aws s3 sync s3://acme-exports-staging/clickstream/ ./raw --exclude '*.tmp'",
        ),
        F(
            "command",
            "assistant",
            'duckdb warehouse.duckdb -c "SUMMARIZE events_daily"',
            'Quick profile of the table: `duckdb warehouse.duckdb -c "SUMMARIZE events_daily"`.',
            "Which command profiled the events_daily table in DuckDB?",
            'duckdb warehouse.duckdb -c "SUMMARIZE events_daily"',
        ),
        F(
            "command",
            "user",
            "make lint typecheck",
            "CI runs `make lint typecheck` on every push, so please run it locally first.",
            "What does CI run on every push?",
            "make lint typecheck",
        ),
        F(
            "command",
            "assistant",
            "docker compose -f deploy/compose.airflow.yml up -d scheduler",
            "The scheduler is restarted with\n```bash\ndocker "
            "compose -f deploy/compose.airflow.yml "
            "up -d scheduler\n```",
            "How is the scheduler restarted?",
            "docker compose -f deploy/compose.airflow.yml up -d scheduler",
            "If it hangs again: `docker compose -f deploy/compose.airflow.yml up -d scheduler`.",
        ),
        F(
            "command",
            "user",
            "psql -h warehouse-01 -c 'VACUUM ANALYZE sessions_daily'",
            "After big loads the DBA wants `psql -h warehouse-01 -c 'VACUUM ANALYZE "
            "sessions_daily'`.",
            "What does the DBA want run after big loads?",
            "psql -h warehouse-01 -c 'VACUUM ANALYZE sessions_daily'",
        ),
        F(
            "command",
            "assistant",
            f"python -m pipeline.replay --date {replay} --dry-run",
            f"A dry run of one day: `python -m pipeline.replay --date {replay} --dry-run`.",
            "Which command dry-runs the replay of one day?",
            f"python -m pipeline.replay --date {replay} --dry-run",
        ),
        F(
            "name",
            "assistant",
            table,
            f"The new serving table is called {table}; the old one stays read-only until the "
            "cut-over.",
            "What is the new serving table called?",
            table,
            f"Dashboards should point at {table} from Monday on.",
        ),
        F(
            "name",
            "user",
            bucket,
            f"Raw events land in the bucket {bucket}, in the EU region.",
            "Which bucket do raw events land in?",
            bucket,
        ),
        F(
            "name",
            "assistant",
            "svc-etl-loader",
            "The DAG authenticates as the service account svc-etl-loader, which only has write "
            "access to staging schemas.",
            "Which service account does the DAG use?",
            "svc-etl-loader",
        ),
        F(
            "name",
            "user",
            oncall,
            f"If the load fails at night, page {oncall}, the data platform on-call this month.",
            "Who is the data platform on-call this month?",
            oncall,
            f"I'll let {oncall} know about the new alert before the weekend.",
        ),
        F(
            "name",
            "user",
            channel,
            f"Alerts should go to {channel}, not to the general channel.",
            "Which Slack channel should alerts go to?",
            channel,
        ),
        F(
            "name",
            "assistant",
            "analytics_core",
            "All curated tables go into the schema analytics_core.",
            "Which schema holds the curated tables?",
            "analytics_core",
        ),
        F(
            "name",
            "assistant",
            "ENABLE_LATE_EVENT_MERGE",
            "The merge is behind the flag ENABLE_LATE_EVENT_MERGE, off by default.",
            "Which flag turns on the late-event merge?",
            "ENABLE_LATE_EVENT_MERGE",
            "Staging now runs with ENABLE_LATE_EVENT_MERGE switched on.",
        ),
        F(
            "name",
            "assistant",
            "warehouse_writers",
            "Writes to the warehouse go through the Airflow pool warehouse_writers with two slots.",
            "Which Airflow pool limits warehouse writes?",
            "warehouse_writers",
        ),
        F(
            "name",
            "user",
            owner,
            f"The marketing dashboards are owned by {owner}; anything that changes their numbers "
            "needs a heads-up to them.",
            "Who owns the marketing dashboards?",
            owner,
        ),
        F(
            "decision",
            "user",
            "store the curated layer as Parquet instead "
            "of CSV, because schema drift keeps breaking "
            "the CSV loaders",
            "Okay, decision made: we store the curated layer as Parquet instead of CSV, because "
            "schema drift keeps breaking the CSV loaders.",
            "Which file format was chosen for the curated layer?",
            "Parquet",
            "Reminder for the review: we agreed to store the curated layer as Parquet instead of "
            "CSV, because schema drift keeps breaking the CSV loaders.",
        ),
        F(
            "decision",
            "assistant",
            "partition events_daily by event_date rather than by ingestion time",
            "My recommendation, and you agreed: partition "
            "events_daily by event_date rather than by "
            "ingestion time, since every dashboard filters on the event day.",
            "By which column is events_daily partitioned?",
            "event_date",
        ),
        F(
            "decision",
            "user",
            "keep Postgres for serving and use DuckDB only for backfills",
            "Let's keep Postgres for serving and use DuckDB "
            "only for backfills, because the BI tool "
            "cannot connect to DuckDB.",
            "Which engine is used only for backfills?",
            "DuckDB",
        ),
        F(
            "decision",
            "assistant",
            "send events older than 72 hours to a quarantine table instead of merging them",
            "We settled on this: send events older than 72 hours to a quarantine table instead of "
            "merging them, and review the quarantine weekly.",
            "What happens to events older than 72 hours?",
            "quarantine table",
            "As decided, we send events older than 72 hours to a quarantine table instead of "
            "merging them.",
        ),
        F(
            "decision",
            "user",
            "go with Airflow rather than Dagster",
            "We go with Airflow rather than Dagster, because the ops team already runs Airflow for "
            "billing and I don't want two schedulers.",
            "Which orchestrator was chosen over Dagster?",
            "Airflow",
        ),
        F(
            "decision",
            "assistant",
            "deduplicate on (user_id, event_id) and not on the payload hash",
            "Decision for the dedup: deduplicate on (user_id, event_id) and not on the payload "
            "hash, because the mobile SDK resends events with new timestamps.",
            "On which key are events deduplicated?",
            "(user_id, event_id)",
        ),
        F(
            "decision",
            "user",
            "do the sessionization in dbt instead of pandas",
            "I'd rather do the sessionization in dbt instead of pandas, so the analysts can review "
            "the SQL themselves.",
            "Where is sessionization done instead of pandas?",
            "dbt",
        ),
        F(
            "decision",
            "assistant",
            f"schedule the DAG at {at}",
            f"We'll schedule the DAG at {at}, because the upstream export lands around 02:10.",
            "At what time is the DAG scheduled?",
            at,
            f"Remember that we schedule the DAG at {at} now, not at midnight.",
        ),
        F(
            "decision",
            "user",
            "compress the Parquet files with zstd",
            "Fine, compress the Parquet files with zstd, since it came out a fifth smaller than "
            "snappy in your test.",
            "Which compression codec was chosen for Parquet?",
            "zstd",
        ),
    ]
