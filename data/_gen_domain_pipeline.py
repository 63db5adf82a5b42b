"""Transcript domain: migrating a clickstream ETL from cron + CSV to Airflow + Parquet."""

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
from _gen_facts_pipeline import facts

SLOTS = {
    "component": [
        "the loader",
        "the sessionize step",
        "the dedup job",
        "the export sensor",
        "the S3 sink",
        "the schema registry client",
        "the backfill script",
        "the dbt staging models",
        "the warehouse COPY step",
        "the late-event merger",
        "the row-count check",
    ],
    "symptom": [
        "is slower than yesterday",
        "fails on the Monday partitions",
        "writes duplicate rows",
        "times out right after the upstream export",
        "drops the utm columns",
        "uses far more memory than expected",
        "produces empty files for some hours",
        "logs a flood of schema warnings",
        "retries forever when the warehouse is busy",
    ],
    "table": [
        "events_raw",
        "events_daily",
        "sessions_daily",
        "users_dim",
        "campaigns_dim",
        "pageviews_hourly",
    ],
    "column": [
        "user_id",
        "event_id",
        "event_ts",
        "session_id",
        "utm_source",
        "device_type",
        "country_code",
        "page_path",
        "referrer",
    ],
    "day": ["Monday", "Tuesday", "the 14th", "last Friday", "the first of the month", "Sunday"],
    "file": [
        "pipeline/load.py",
        "pipeline/schema.py",
        "pipeline/io/s3.py",
        "models/staging.sql",
        "pipeline/merge_late.py",
        "conf/local.yaml",
        "pipeline/checks.py",
    ],
    "person": ["the analysts", "the BI team", "marketing", "the ops team", "finance"],
}

_LOG_LINES = [
    "Task {id} succeeded in {f}s",
    "Loaded {n} rows into staging",
    "Sensor poke: export not ready",
    "Partition written: {n} rows, {n} files",
    "Schema check passed for {n} columns",
    "Retrying COPY after lock wait ({f}s)",
    "Deduplicated {n} rows",
    "Late events merged: {n}",
    "Heartbeat ok",
    "Uploading part {n} of multipart upload {id}",
    "Query returned {n} rows",
]

TOOL_OUTPUTS = [
    (
        [
            "tail -n 200 logs/loader.log",
            "airflow tasks logs clickstream_daily load",
            "journalctl -u airflow-worker --since '1 hour ago'",
        ],
        log_output(
            [("INFO", 12), ("DEBUG", 5), ("WARN", 2), ("ERROR", 1)],
            ["scheduler", "loader", "dedup", "sink", "sensor", "worker-1", "worker-2"],
            _LOG_LINES,
        ),
    ),
    (
        [
            "python scripts/row_counts.py --compare old new",
            "python -m pipeline.check --since yesterday",
        ],
        json_rows(
            [
                ("partition", choice(["2026-02-1" + str(i) for i in range(10)])),
                ("rows_old", number(100_000, 2_000_000)),
                ("rows_new", number(100_000, 2_000_000)),
                ("diff_pct", decimal(-2.0, 2.0, 3)),
            ]
        ),
    ),
    (
        [
            "airflow tasks states-for-dag-run clickstream_daily latest --output json",
            "python -m pipeline.status --json",
        ],
        json_events(
            {
                "task_id": choice(["extract", "load", "dedup", "sessionize", "export", "check"]),
                "state": choice(["success", "success", "success", "failed", "up_for_retry"]),
                "try_number": number(1, 3),
                "duration_s": decimal(2, 900, 1),
                "run_id": hexid(40),
            }
        ),
    ),
    (
        ["pytest -q tests/", "pytest tests/test_load.py tests/test_merge.py -v", "make test"],
        pytest_report(
            [
                "tests/test_load.py::test_roundtrip",
                "tests/test_schema.py::test_evolution",
                "tests/test_merge.py::test_late_events",
                "tests/test_io.py::test_retry",
                "tests/test_checks.py::test_row_counts",
            ]
        ),
    ),
]

VOCAB = Vocab(
    slots=SLOTS,
    openings=[
        "Good morning! Let's continue the migration. Yesterday we got {component} working; today "
        "I'd like to look at {component} and then the row counts in {table}.",
        "Hi again. Quick status from my side: the overnight "
        "run finished, but {component} {symptom}. "
        "Can we start there?",
        "Morning. I have about three hours today, so let's be focused: {component} first, then "
        "whatever is left from the list.",
        "Back at it. Before anything else, can you remind me where we stopped with {component}?",
    ],
    closings=[
        "That's it for today, thanks. Please write down where we stopped so we can pick it up "
        "next time.",
        "I need to leave for a meeting. Can you give me a short recap of what changed today?",
        "Let's stop here. Summarize the open items, I'll paste them into the ticket.",
    ],
    recaps=[
        "Recap: we looked at {component} and {component}. The row counts in {table} match the old "
        "job now. Open: {component} still {symptom}, and the tests for {file} need a second pass.",
        "Where we stopped:\n- {component}: fixed and deployed to staging\n- {table}: counts "
        "verified for {day}\n- next: {component}, which {symptom}\nNothing is running in the "
        "background.",
        "Summary of today: small fixes in {file} and {file}, one config change, no production "
        "deploy yet. Next session should start with {component}.",
    ],
    tasks=[
        "Can you check why {component} {symptom}? I "
        "noticed it this morning when looking at {table}.",
        "Next step: port {component} to the new layout. Keep the old behaviour for {column} "
        "exactly as it is, {person} depend on it.",
        "Please write a quick test for {component} that covers the case where {column} is null.",
        "I'd like a comparison of the row counts in {table} between the old cron job and the new "
        "DAG for {day}.",
        "Could you profile {component}? It {symptom} and I want to know whether it's IO or CPU.",
        "Look at the last run of {component} and summarize what happened, I only have a few "
        "minutes before a meeting.",
        "Let's clean up {file}: there is a lot of dead code from the CSV days. Don't change "
        "behaviour, just remove what's unused.",
        "Is {column} ever empty in {table}? {person} think it is, I think it isn't.",
        "Can you add logging to {component}? When it {symptom} we currently have no idea why.",
    ],
    plans=[
        "Sure. Plan:\n1. Read the last run log of {component}.\n2. Compare the row counts in "
        "{table} against the previous day.\n3. Check whether {column} changed type upstream.\n"
        "I'll start with the log.",
        "Okay. I'll first reproduce it on a small sample, then look at {component} itself. If the "
        "sample is clean, the problem is probably in the upstream export.",
        "Makes sense. I'll look at {file} first, since that's where {component} is configured, "
        "then run the checks.",
        "On it. I'll keep the change minimal and show you the diff before anything is deployed.",
    ],
    narrations=[
        "Running `{command}` to see what the last run left behind.",
        "Let me check with `{command}` first, before changing anything.",
        "Checking the current state of {component}: `{command}`",
        "Running `{command}` to compare the result with the old job.",
    ],
    findings=[
        "Found it: {component} reads {column} as a string since the upstream change, so the join "
        "against {table} silently drops rows. I've patched the cast in {file} and the counts now "
        "match within 0.1%.",
        "The run itself is fine; the slowness comes from the COPY into {table}, which waits on a "
        "lock held by the vacuum job. Nothing to fix in {component}; I'd move the vacuum instead.",
        "Nothing alarming in the output. {component} did what it should; the gap you saw in "
        "{table} is the partition for {day}, which simply hasn't landed yet.",
        "Two problems: a retry loop without backoff in {file}, and a missing index on {column}. "
        "The first explains the noise in the logs, the second the slowness.",
        "The test passes locally and on CI. I also added a case for an empty {column}, which "
        "used to raise a KeyError deep inside {component}.",
        "The numbers line up: old job and new DAG differ by a handful of rows in {table}, all of "
        "them late events that the old job never picked up.",
    ],
    followups=[
        "Why didn't the old job have this problem? It ran for years.",
        "Is that safe to deploy on a Friday? I'm off on Monday.",
        "How sure are you about that? I'd rather not touch {table} twice.",
        "Ok. And what happens with {column} in that case, is it kept?",
        "Can you put that in the ticket so {person} can see it?",
    ],
    answers=[
        "The old job read everything as text and never joined on {column}, so it couldn't fail "
        "this way; it just produced slightly wrong numbers instead.",
        "It's a small, reversible change. I'd still deploy it in the morning so someone is around "
        "if {component} misbehaves.",
        "Fairly sure: I checked three days of partitions, not just {day}. If you want, I can run "
        "the comparison for the whole month before we touch {table}.",
        "Done, the ticket now has the query, the before/after counts and a link to the diff.",
    ],
    explain_requests=[
        "Can you explain how idempotent reloads would work for {table}? I want to understand it "
        "before we commit to the design.",
        "Write me a short design note on late-arriving events, something I can share with "
        "{person}.",
        "Explain the trade-offs of the backfill strategy in plain words, please.",
    ],
    paragraphs=[
        "An idempotent reload means that running the same day twice leaves the warehouse in the "
        "same state as running it once. The simplest way to get there is to write each partition "
        "to a staging location first and swap it in atomically, instead of appending rows to the "
        "live table. Deletes and inserts then happen in one transaction per partition.",
        "Late-arriving events are the main source of drift between the old and the new numbers. "
        "The mobile clients buffer events while offline and send them when they reconnect, "
        "sometimes days later. Any design has to say what happens to those events: merged into "
        "the old partition, or counted on the day they arrived.",
        "Backfills are where most pipelines get into trouble. A backfill competes with the "
        "regular schedule for the same warehouse slots, and if both write to {table} at the same "
        "time, the results depend on which one commits last. Running backfills in their own pool "
        "with a concurrency of one avoids that.",
        "Schema evolution deserves its own step. Upstream adds columns without telling anyone, and "
        "the CSV loader maps columns by position, so a new column in the middle shifts everything "
        "after it. A schema registry, or at least a check that fails loudly, turns a silent "
        "corruption into a visible failure.",
        "For testing, the most useful thing is a small fixture of real events with the ugly "
        "cases in it: duplicate ids, null {column}, timestamps in the future, unicode in page "
        "paths. Unit tests on synthetic data rarely catch what production throws at us.",
        "Cost mostly follows the number of times we read the raw data. Reading it once per day "
        "and deriving everything from a compact intermediate table is far cheaper than letting "
        "each model scan the raw layer on its own.",
        "Monitoring should answer one question in the morning: did yesterday's data arrive "
        "complete and on time? Row counts per partition compared with the same weekday last week, "
        "plus a freshness check on {table}, cover most of it.",
        "On the orchestration side, the important property is that every task can be retried "
        "safely. Tasks that append, send emails or call external APIs need special care, because "
        "a retry after a partial failure will repeat their side effects.",
        "Documentation does not need to be long. A page per table with its grain, its keys, "
        "where it comes from and who uses it answers most of the questions {person} ask us.",
        "Finally, the cut-over itself: run old and new side by side for two weeks, compare the "
        "outputs every morning, and only switch the dashboards once the differences are "
        "explained. Keep the old job runnable for another month in case we need to roll back.",
        "About {component} specifically: it was written when the data was a tenth of today's "
        "size, so it loads everything into memory before writing. Streaming the rows in chunks "
        "keeps memory flat and makes the run time proportional to the input.",
        "The dedup logic should be the same in the daily run and in backfills. Today they differ "
        "slightly, which is why a backfilled day never matches the original run exactly.",
    ],
    user_chatter=[
        "Thanks, that's exactly what I needed. Give me a second to read through it.",
        "Ok, makes sense. I'm going to grab a coffee, back in ten minutes or so.",
        "Great, let's keep going with the next item on the list then.",
        "Hmm, I'm not fully convinced, but let's try it and see what the numbers say.",
        "Sorry, I got pulled into a call. Where were we? Let's continue.",
        "Nice. This is already much better than what we had last week.",
        "Alright. I'll trust you on this one, go ahead and change it.",
    ],
    assistant_chatter=[
        "No problem, take your time. I'll wait for your go-ahead before touching anything else.",
        "Sounds good. I'll keep the changes small so they're easy to review.",
        "Understood. Tell me when you're ready and I'll continue from there.",
        "Sure, let's continue. I'll start with the item we postponed last time.",
        "Good morning! I have the notes from last time; ready when you are.",
    ],
    pastes=[
        "Here's the traceback from last night:\n```\nTraceback (most recent call last):\n  File "
        '"{file}", line 212, in load_partition\n    rows = list(reader)\n  File "{file}", line '
        '88, in __next__\n    raise SchemaError(f"unexpected column {column}")\n'
        "pipeline.errors.SchemaError: unexpected column at position 14\n```\nAny idea?",
        "This is the config on staging right now:\n```yaml\nschedule: '0 2 * * *'\nsource:\n  "
        "kind: s3\n  prefix: exports/clickstream/\nsink:\n  kind: postgres\n  table: {table}\n  "
        "batch: auto\nchecks:\n  row_count: true\n  freshness_hours: 26\n```\nDoes it look right?",
        "Output of the old cron job for comparison:\n```\n[cron] start load {day}\n[cron] read "
        "41 files\n[cron] wrote {table}\n[cron] done\n```\nIt's not very chatty, is it.",
    ],
    reviews=[
        "The traceback says the loader met a column it didn't expect. Upstream added a column "
        "in the middle of the export, and {file} maps columns by position. Mapping by header "
        "name fixes this one and the next ten like it.",
        "Mostly right. I'd lower the freshness check a bit and name the sink table explicitly per "
        "environment, so staging can never write into the production {table} by accident.",
        "Not chatty at all, and that's part of the problem: when it fails we only know that it "
        "failed. The new DAG logs per task, with row counts, so we can compare day over day.",
    ],
    tool_outputs=TOOL_OUTPUTS,
)


DOMAIN = Domain(
    name="pipeline-migration",
    prefix="pl",
    seed=20260302,
    description=(
        "A data engineer and an assistant migrate a clickstream ETL from cron jobs and CSV files "
        "to Airflow and Parquet, over several working sessions: tasks, tool output (logs, query "
        "results, test runs), design notes and small talk."
    ),
    start=datetime(2026, 3, 2, tzinfo=UTC),
    sessions=(6, 6),
    messages_per_session=(150, 190),
    vocab=VOCAB,
    facts=facts,
)
