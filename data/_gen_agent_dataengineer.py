"""Sample workspace agent DataEngineer: a data engineer's agent with row-count, file and SQL tools.

The tools are real, deterministic functions; the sessions are scripted tasks."""

from __future__ import annotations

import json
import random
import zlib
from collections.abc import Callable

from _gen_workspace import AgentPlan, Call, Task, describe

_FILES = {
    "conf/pipeline.yaml": (
        "schedule: '30 2 * * *'\nsource:\n  kind: s3\n  bucket: acme-clickstream-raw\n  prefix: "
        "exports/v2/\nsink:\n  kind: postgres\n  schema: analytics_core\n  batch_rows: 250000\n"
        "checks:\n  row_count_tolerance_pct: 0.5\n  freshness_hours: 26\ndeadline_minutes: 45\n"
    ),
    "dags/clickstream_daily.py": (
        "from airflow import DAG\nfrom pipeline.tasks import extract, load, dedup, sessionize\n\n"
        "with DAG('clickstream_daily', schedule='30 2 * * *', max_active_runs=1) as dag:\n"
        "    extract() >> load() >> dedup(window_hours=48) >> sessionize()\n"
    ),
    "pipeline/transforms/dedup.py": (
        "def dedup(rows, window_hours=48):\n    seen = {}\n    for row in rows:\n        key = "
        "(row['user_id'], row['event_id'])\n        if key in seen:\n            continue\n"
        "        seen[key] = row\n        yield row\n"
    ),
}


def row_counts(table: str, day: str) -> dict[str, object]:
    """Row counts of a table for one day, in the old cron job and in the new DAG.

    Args:
        table: the table, e.g. events_daily
        day: the partition day, YYYY-MM-DD
    """
    rng = random.Random(f"rows:{table}:{day}")
    hourly = [rng.randint(8_000, 120_000) for _ in range(24)]
    old = sum(hourly)
    new = old + rng.randint(-300, 1500)
    return {
        "table": table,
        "day": day,
        "rows_old": old,
        "rows_new": new,
        "diff": new - old,
        "diff_pct": round(100 * (new - old) / old, 4),
        "hourly_new": hourly,
    }


def read_file(path: str) -> str:
    """Read a file of the pipeline repository.

    Args:
        path: path relative to the repository root
    """
    if path not in _FILES:
        raise FileNotFoundError(f"{path} does not exist; known files: {sorted(_FILES)}")
    return _FILES[path]


def run_query(sql: str, limit: int = 12) -> dict[str, object]:
    """Run a read-only SQL query on the warehouse replica.

    Args:
        sql: the query
        limit: the most rows to return
    """
    rng = random.Random(zlib.crc32(sql.encode()))
    rows = [
        [f"{hour:02d}:00", rng.randint(40_000, 900_000), rng.randint(2_000, 60_000)]
        for hour in range(min(limit, 24))
    ]
    return {
        "columns": ["hour", "events", "distinct_users"],
        "rows": rows,
        "row_count": len(rows),
        "elapsed_ms": rng.randint(40, 2500),
    }


def _data_engineer(rng: random.Random) -> list[list[Task]]:
    tables = ["events_daily", "sessions_daily", "pageviews_hourly", "users_dim"]
    days = [f"2026-04-{d:02d}" for d in range(1, 19)]

    def counts() -> Task:
        table, day = rng.choice(tables), rng.choice(days)

        def answer(results: list[str]) -> str:
            data = json.loads(results[0])
            verdict = "within" if abs(float(data["diff_pct"])) < 0.5 else "outside"
            late = (
                "The extra rows are late events the old job never picked up."
                if data["diff"] > 0
                else "The new DAG is short: check the dedup window for that day."
            )
            return (
                f"{table} on {day}: the new DAG differs from the cron job by {data['diff']:+d} "
                f"rows ({data['diff_pct']:+}%), {verdict} the 0.5% tolerance from "
                f"conf/pipeline.yaml. {late}"
            )

        return Task(
            f"Compare the row counts of {table} for {day} between the old job and the new DAG.",
            [[Call("row_counts", {"table": table, "day": day})]],
            answer,
            ["Checking both pipelines' counts."],
        )

    def two_tables() -> Task:
        day = rng.choice(days)
        calls = [Call("row_counts", {"table": t, "day": day}) for t in rng.sample(tables, 2)]

        def answer(results: list[str]) -> str:
            lines = [describe(r) for r in results]
            return (
                f"Both tables for {day}:\n- "
                + "\n- ".join(lines)
                + ("\nNo gap larger than the tolerance; nothing to backfill.")
            )

        return Task(
            f"Check two tables for {day} at once, I want to close the ticket.", [calls], answer
        )

    def config() -> Task:
        wrong = rng.choice(["config/pipeline.yml", "pipeline.yaml"])

        def answer(results: list[str]) -> str:
            return (
                "The first path was wrong; the config is conf/pipeline.yaml. It schedules the "
                "DAG at 02:30, writes 250000 rows per batch into analytics_core and sets the "
                "deadline to 45 minutes. " + describe(results[-1])
            )

        return Task(
            "What does the pipeline config say about the schedule and batch size?",
            [
                [Call("read_file", {"path": wrong})],
                [Call("read_file", {"path": "conf/pipeline.yaml"})],
            ],
            answer,
            ["Reading the config.", "Wrong path, trying conf/pipeline.yaml."],
        )

    def query() -> Task:
        day = rng.choice(days)
        sql = (
            f"select to_char(event_ts, 'HH24:00') as hour, count(*), count(distinct user_id) "
            f"from analytics_core.events_daily where event_date = '{day}' group by 1 order by 1"
        )

        def answer(results: list[str]) -> str:
            data = json.loads(results[0])
            peak = max(data["rows"], key=lambda row: row[1])
            return (
                f"Hourly volume on {day}: the peak is at {peak[0]} with {peak[1]} events from "
                f"{peak[2]} users. The query took {data['elapsed_ms']} ms on the replica."
            )

        return Task(
            f"When was the traffic peak on {day}? Use the replica.",
            [[Call("run_query", {"sql": sql})]],
            answer,
        )

    def dedup() -> Task:
        def answer(results: list[str]) -> str:
            return (
                "The dedup keys on (user_id, event_id) and skips repeats; the DAG passes "
                "window_hours=48. That matches what we decided, so the Monday spike is not "
                "from duplicates."
            )

        return Task(
            "Remind me how the dedup works and which window the DAG uses.",
            [
                [
                    Call("read_file", {"path": "pipeline/transforms/dedup.py"}),
                    Call("read_file", {"path": "dags/clickstream_daily.py"}),
                ]
            ],
            answer,
        )

    def chat() -> Task:
        text = rng.choice(
            [
                "Decision for the record: we keep Postgres for serving and use DuckDB only for "
                "backfills, because the BI tool cannot connect to DuckDB. Please remember that.",
                "FYI the nightly load must finish within 45 "
                "minutes; the dashboards refresh at 07:00.",
                "Thanks, that's all I needed for the standup. Let's continue after lunch.",
            ]
        )
        reply = rng.choice(
            [
                "Noted. I'll keep that in mind for the next changes.",
                "Understood; I'll check new changes against it.",
            ]
        )
        return Task(text, [], lambda results: reply)

    factories: list[Callable[[], Task]] = [counts, counts, two_tables, config, query, dedup, chat]
    return [[rng.choice(factories)() for _ in range(rng.randint(9, 13))] for _ in range(5)]


def plan(seed: int) -> AgentPlan:
    return AgentPlan(
        "DataEngineer",
        "You are DataEngineer, a careful data engineer. Use the tools; answer briefly.",
        [row_counts, read_file, run_query],
        _data_engineer(random.Random(f"{seed}:de")),
    )
