"""The sample workspace written by memorylab's own :class:`~memorylab.Agent`.

Each agent runs several sessions (a new ``Agent`` per session, so MEMORY.md is preloaded) of
tasks. The model is a script (``completion=``): replies that call real tools (plain functions
given to ``Agent(tools=...)``, executed by the Agent), then a final answer that reads the tool
results; each reply reports the usage a provider would (:class:`ProviderUsage`), which the
Agent records in ``usage.jsonl``. Compression uses the offline ``memorylab/extractive``
summarizer with a small window, so it fires several times per agent. A step clock
(``Agent(clock=...)``) makes every timestamp, and so every archive name, the same on every run.

The three agents (DataEngineer, BugHunter, Researcher) are scripts below; what their tools know
and the words their tasks pick from are the ``[agent]`` table of their domain file.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import json
import random
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from unittest import mock

from memorylab import Agent, ContextCompressor
from memorylab.compress import _compressor as compressor_module
from memorylab.llm import ChatReply

CONTEXT_LENGTH = 2800
THRESHOLD = 0.85
SUMMARY_TOKENS = 500
MODEL = "gpt-4o-mini"


class StepClock:
    """A clock that moves forward by a seeded random step each time it is read."""

    def __init__(self, start: datetime, rng: random.Random) -> None:
        self.now = start
        self.rng = rng

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=round(self.rng.uniform(0.4, 40.0), 6))
        return self.now

    def next_day(self, hour: int) -> None:
        day = (self.now + timedelta(days=1)).replace(hour=hour, minute=0, second=0)
        self.now = day + timedelta(minutes=self.rng.randint(0, 50))


@dataclass(frozen=True)
class Call:
    """One tool call the scripted model makes."""

    tool: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class Task:
    """A user task: rounds of tool calls (each round is one model reply), then a final answer
    (``answer(tool_results) -> text``); ``preamble`` is the text of the tool-calling replies."""

    prompt: str
    rounds: Sequence[Sequence[Call]]
    answer: Callable[[list[str]], str]
    preamble: Sequence[str] = ()


@dataclass(frozen=True)
class AgentPlan:
    """An agent to run: its tools and, per session, its tasks."""

    name: str
    system_prompt: str
    tools: Sequence[Callable[..., Any]]
    sessions: Sequence[Sequence[Task]]


PROVIDER_TOKENIZER = "gpt-4"
"""Whose tokenizer stands in for the provider's count (cl100k_base): not memorylab's estimate's
(gpt-4o-mini's o200k_base), so the recorded usage drifts from the estimate as a provider's does."""
MESSAGE_OVERHEAD = 3
"""Tokens OpenAI adds per message (and once more to prime the reply)."""
CACHE_MIN, CACHE_STEP = 1024, 128
"""OpenAI's prompt cache: prefixes of 1,024 tokens and more, read in steps of 128 tokens."""


class ProviderUsage:
    """The usage a provider would report for a call, computed deterministically from what the
    Agent sends (data/README.md, "Recorded usage"):

    * ``input_tokens``: each message's content (and a reply's tool calls, as JSON) counted with
      cl100k_base, plus :data:`MESSAGE_OVERHEAD` per message and once for the reply, plus the
      tool schemas as JSON;
    * ``output_tokens``: the reply's text (or its tool calls, as JSON), counted the same way;
    * ``cached_tokens``: the longest run of leading messages (the tool schemas first) that the
      previous call of the process also sent, rounded down to a multiple of 128 tokens, when it
      is 1,024 tokens or more (else 0): OpenAI's automatic prefix caching, counted at message
      boundaries. No cache-write or reasoning tokens (OpenAI reports neither for this model).
    """

    def __init__(self) -> None:
        from memorylab.compress._tokens import get_token_counter

        self.count = get_token_counter(PROVIDER_TOKENIZER)
        self.previous: list[str] = []

    def __call__(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        reply: ChatReply,
    ) -> ChatReply:
        parts = [json.dumps(list(tools), sort_keys=True)] if tools else []
        parts += [json.dumps(dict(m), sort_keys=True, ensure_ascii=False) for m in messages]
        sizes = [self.count(parts[0])] if tools else []
        for message in messages:
            text = str(message.get("content") or "")
            if message.get("tool_calls"):
                text += json.dumps(message["tool_calls"], sort_keys=True)
            sizes.append(self.count(text) + MESSAGE_OVERHEAD)
        shared = 0
        for number, (part, old) in enumerate(zip(parts, self.previous, strict=False)):
            if part != old:
                break
            shared += sizes[number]
        self.previous = parts
        cached = shared // CACHE_STEP * CACHE_STEP if shared >= CACHE_MIN else 0
        written = json.dumps([dict(c) for c in reply.tool_calls], sort_keys=True)
        output = self.count(reply.content) + (self.count(written) if reply.tool_calls else 0)
        return dataclasses.replace(
            reply,
            input_tokens=sum(sizes) + MESSAGE_OVERHEAD,
            output_tokens=output,
            cached_tokens=cached,
        )


class ScriptedModel:
    """A ``completion=`` callable that answers from a queue of replies (no network), each with
    the usage a provider would report (:class:`ProviderUsage`).

    The tools given to the Agent are wrapped (:meth:`wrap`) so that the final answer of a task
    can read their results even when a compaction between the tool call and the answer has
    folded them into the summary. Tool call ids are numbered per session (``call_0001`` ...).
    """

    def __init__(self) -> None:
        self.queue: list[ChatReply | Callable[[], ChatReply]] = []
        self.ids = itertools.count(1)
        self.results: list[str] = []
        self.usage = ProviderUsage()

    def wrap(self, function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def tool(*args: Any, **kwargs: Any) -> Any:
            try:
                result = function(*args, **kwargs)
            except Exception as error:  # recorded as the Agent's Tool.call reports it
                self.results.append(f"Error: {function.__name__} failed: {error}")
                raise
            text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
            self.results.append(text)
            return result

        return tool

    def plan(self, task: Task) -> None:
        self.results = []
        for index, calls in enumerate(task.rounds):
            text = task.preamble[index] if index < len(task.preamble) else ""
            self.queue.append(
                ChatReply(
                    content=text,
                    tool_calls=tuple(
                        {
                            "id": f"call_{next(self.ids):04d}",
                            "name": c.tool,
                            "arguments": json.dumps(dict(c.arguments), ensure_ascii=False),
                        }
                        for c in calls
                    ),
                    model=MODEL,
                )
            )
        self.queue.append(lambda: ChatReply(content=task.answer(list(self.results)), model=MODEL))

    def __call__(
        self,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        **options: Any,
    ) -> ChatReply:
        if not self.queue:
            raise AssertionError("the scripted model ran out of replies")
        reply = self.queue.pop(0)
        return self.usage(messages, tools, reply if isinstance(reply, ChatReply) else reply())


@contextmanager
def steady_latency(rng: random.Random) -> Iterator[None]:
    """Make the compressor's measured latency (``latency_s`` in compactions.jsonl) a seeded
    value: ContextCompressor has no timer hook, so its module's ``time`` is swapped meanwhile."""
    clock = itertools.accumulate(rng.uniform(0.002, 0.09) for _ in itertools.count())

    class _Time:
        @staticmethod
        def perf_counter() -> float:
            return next(clock)

    with mock.patch.object(compressor_module, "time", _Time):
        yield


def run_agent(plan: AgentPlan, workspace: Path, clock: StepClock) -> int:
    """Run every session of ``plan`` in ``workspace``; returns the number of compactions."""
    compactions = 0
    for number, tasks in enumerate(plan.sessions):
        if number:
            clock.next_day(hour=9)
        model = ScriptedModel()
        agent = Agent(
            agent_name=plan.name,
            model_name=MODEL,
            system_prompt=plan.system_prompt,
            context_length=CONTEXT_LENGTH,
            summarizer_model="memorylab/extractive",
            workspace_dir=workspace,
            tools=[model.wrap(t) for t in plan.tools],
            completion=model,
            clock=clock,
            max_loops=1,
            # each process's id, as the reference's (agent-<32 hex>), the same on every run
            id="agent-" + hashlib.sha256(f"{plan.name}/{number}".encode()).hexdigest()[:32],
        )
        agent.context_compressor = ContextCompressor(
            threshold=THRESHOLD,
            summarizer_model="memorylab/extractive",
            summarizer_max_tokens=SUMMARY_TOKENS,
        )
        for task in tasks:
            model.plan(task)
            agent.run(task.prompt)
        assert not model.queue, f"{plan.name}: replies left over"
        compactions += sum(1 for e in agent.compaction_events if e.ok)
        failed = [e.error for e in agent.compaction_events if not e.ok]
        assert not failed, failed
        store = agent.short_memory.store
        if store is not None:
            store.close()
    return compactions


def build_workspace(
    agents: Sequence[Mapping[str, Any]], workspace: Path, start: datetime, seed: int
) -> dict[str, int]:
    """Write the workspace of the agents (the ``[agent]`` tables of the domain files, run in
    this order, a week apart); returns compactions per agent."""
    plans = [SCRIPTS[agent["name"]](agent, seed) for agent in agents]
    out: dict[str, int] = {}
    with steady_latency(random.Random(f"{seed}:latency")):
        for index, plan in enumerate(plans):
            clock = StepClock(start + timedelta(days=7 * index), random.Random(f"{seed}:{index}"))
            out[plan.name] = run_agent(plan, workspace, clock)
    for lock in workspace.glob("agents/*/.MEMORY.md.lock"):
        lock.unlink()  # a per-machine lock file, recreated on first use: not sample data
    for kept in workspace.glob("agents/*/.MEMORY.md.replaced-*"):
        # the file a compaction replaced, kept by a second name for a second for the late writes
        # of a writer that takes no lock (none here): the store's state, not sample data
        kept.unlink()
    for records in workspace.glob("agents/*/compactions.jsonl"):
        # "replaced" names the replaced file by device and inode, for the processes that had it
        # open on this machine: not sample data (and never the same twice)
        lines = [json.loads(line) for line in records.read_text(encoding="utf-8").splitlines()]
        kept = [{k: v for k, v in line.items() if k != "replaced"} for line in lines]
        records.write_text("".join(json.dumps(r) + "\n" for r in kept), encoding="utf-8")
    return out


def describe(result: str, limit: int = 3) -> str:
    """A sentence about one tool result, as a model would paraphrase it."""
    if result.startswith("Error:"):
        return f"The tool reported an error ({result[len('Error: ') :][:120]})."
    try:
        data = json.loads(result)
    except ValueError:
        first = result.strip().splitlines()[0] if result.strip() else ""
        return f"The output starts with: {first[:160]}"
    if isinstance(data, list):
        if not data:
            return "Nothing matched."
        head = data[0]
        shown = head.get("title") if isinstance(head, dict) else head
        return f"{len(data)} results; the first is {str(shown)[:160]}."
    if isinstance(data, dict):
        scalars = [(k, v) for k, v in data.items() if isinstance(v, int | float | str)][:limit]
        parts = ", ".join(f"{k} = {v}" for k, v in scalars)
        return f"Key figures: {parts}." if parts else "The result has no scalar fields."
    return f"The result is {data!r}."


def _sessions(rng: random.Random, factories: Sequence[Callable[[], Task]]) -> list[list[Task]]:
    """Five sessions of 9 to 13 tasks (a factory listed twice comes up twice as often)."""
    return [[rng.choice(factories)() for _ in range(rng.randint(9, 13))] for _ in range(5)]


# ----------------------------------------------------------------------------- DataEngineer


def data_engineer(world: Mapping[str, Any], seed: int) -> AgentPlan:
    """A data engineer's agent with row-count, file and SQL tools (the pipeline domain)."""
    files: Mapping[str, str] = world["files"]

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
        if path not in files:
            raise FileNotFoundError(f"{path} does not exist; known files: {sorted(files)}")
        return files[path]

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

    rng = random.Random(f"{seed}:de")
    tables: Sequence[str] = world["tables"]
    days: Sequence[str] = world["days"]

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
                + "\nNo gap larger than the tolerance; nothing to backfill."
            )

        return Task(
            f"Check two tables for {day} at once, I want to close the ticket.", [calls], answer
        )

    def config() -> Task:
        wrong = rng.choice(world["wrong_config_paths"])

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
        text = rng.choice(world["chat_messages"])
        reply = rng.choice(world["chat_replies"])
        return Task(text, [], lambda results: reply)

    return AgentPlan(
        world["name"],
        world["system_prompt"],
        [row_counts, read_file, run_query],
        _sessions(rng, [counts, counts, two_tables, config, query, dedup, chat]),
    )


# ----------------------------------------------------------------------------- BugHunter


def bug_hunter(world: Mapping[str, Any], seed: int) -> AgentPlan:
    """A debugging agent with log, HTTP probe and test tools (the webapp domain)."""
    log_rng = random.Random("checkout-logs")
    log = [
        f"10:{minute:02d}:{second:02d} {level} {message}"
        for minute in range(60)
        for second, level, message in [
            (
                log_rng.randint(0, 59),
                log_rng.choice(world["log_levels"]),
                log_rng.choice(world["log_messages"]),
            )
        ]
    ]

    def grep_logs(pattern: str, minutes: int = 60) -> list[str]:
        """Lines of the checkout service's log that contain ``pattern``.

        Args:
            pattern: text to look for
            minutes: how far back to look
        """
        return [line for line in log[-minutes:] if pattern.lower() in line.lower()][:20]

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

    rng = random.Random(f"{seed}:bh")
    urls: Sequence[str] = world["urls"]

    def logs() -> Task:
        pattern = rng.choice(world["patterns"])

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
        selection = rng.choice(world["test_selections"])

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
        text = rng.choice(world["chat_messages"])
        return Task(text, [], lambda results: world["chat_reply"])

    return AgentPlan(
        world["name"],
        world["system_prompt"],
        [grep_logs, http_probe, run_tests],
        _sessions(rng, [logs, logs, probe, tests, both, chat]),
    )


# ----------------------------------------------------------------------------- Researcher


def researcher(world: Mapping[str, Any], seed: int) -> AgentPlan:
    """A literature-review agent with search and notes tools (the research domain)."""
    papers: Sequence[Mapping[str, Any]] = world["papers"]
    notes: Mapping[str, str] = world["notes"]

    def search_papers(query: str, limit: int = 5) -> list[dict[str, object]]:
        """Search the review's library by words in the title or mechanism.

        Args:
            query: search words
            limit: the most results
        """
        words = set(query.lower().split())
        scored = []
        for paper in papers:
            text = f"{paper['title']} {paper['mechanism']}".lower().replace(":", "")
            score = len(words & set(text.split()))
            if score:
                scored.append((-score, paper["title"], {**paper, "score": score}))
        return [item for _, _, item in sorted(scored)[:limit]]

    def read_notes(name: str) -> str:
        """Read one of the review's note files.

        Args:
            name: the note, e.g. criteria or taxonomy
        """
        if name not in notes:
            raise KeyError(f"no note named {name!r}; notes: {sorted(notes)}")
        return notes[name]

    rng = random.Random(f"{seed}:rs")

    def search() -> Task:
        query = rng.choice(world["queries"])

        def answer(results: list[str]) -> str:
            found = json.loads(results[0])
            titles = "; ".join(f"{p['title']} ({p['venue']} {p['year']})" for p in found)
            return (
                f"{len(found)} papers for '{query}': {titles}. All of them are already in the "
                "Zotero collection agent-memory-2026."
            )

        return Task(
            f"Search the library for '{query}'.",
            [[Call("search_papers", {"query": query, "limit": 4})]],
            answer,
        )

    def read() -> Task:
        name = rng.choice(list(notes))

        def answer(results: list[str]) -> str:
            return (
                f"From the {name} notes: {results[0]} So the paper you mention fits under "
                "Type-S if it replaces old turns with a summary."
            )

        return Task(
            f"What do our {name} notes say? I need it for the methods section.",
            [[Call("read_notes", {"name": name})]],
            answer,
        )

    def compare() -> Task:
        def answer(results: list[str]) -> str:
            return (
                "The rolling-summary papers and the token-pruning papers do not measure the "
                "same thing: "
                + " ".join(describe(r) for r in results)
                + " We report token-level compression ratios for both."
            )

        return Task(
            "Compare the rolling-summary papers with the prompt compression ones.",
            [
                [
                    Call("search_papers", {"query": "rolling summary"}),
                    Call("search_papers", {"query": "compressing prompts"}),
                ]
            ],
            answer,
        )

    def missing() -> Task:
        def answer(results: list[str]) -> str:
            return (
                "There is no 'deadlines' note; " + describe(results[0]) + " The workshop "
                "limit is 9 pages plus references, per your message last week."
            )

        return Task(
            "What was our deadline note again?",
            [[Call("read_notes", {"name": "deadlines"})]],  # no such note: the call fails
            answer,
        )

    def chat() -> Task:
        text = rng.choice(world["chat_messages"])
        return Task(text, [], lambda results: world["chat_reply"])

    return AgentPlan(
        world["name"],
        world["system_prompt"],
        [search_papers, read_notes],
        _sessions(rng, [search, search, read, compare, missing, chat]),
    )


SCRIPTS: dict[str, Callable[[Mapping[str, Any], int], AgentPlan]] = {
    "DataEngineer": data_engineer,
    "BugHunter": bug_hunter,
    "Researcher": researcher,
}
"""The agent scripts, by the ``name`` of a domain file's ``[agent]`` table."""
