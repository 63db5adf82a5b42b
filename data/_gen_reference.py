"""The reference workspace: files written byte for byte the way the reference framework writes
them (/work/shared/design/FORMAT.md, "Reference byte format"), by hand-rolled code, not by
memorylab's renderer (which adds the Format and Continues lines).

What it reproduces: naive local timestamps from ``datetime.isoformat()`` (no fraction when the
microsecond is 0), a header naming ``<agent>_id_<uuid4>_conversation`` with the id of the process
that wrote it, no lineage and no compactions.jsonl, content written with ``str()`` and stripped
(empty content skipped), unescaped markdown in content, seed messages re-written at every start,
``[Compressed Memory Summary]`` blocks first after a compaction, and archives named by the second,
opened for writing (so two compactions in the same second leave one archive: the other is lost).
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from memorylab import read_memory

SUMMARY_PREFIX = "[Compressed Memory Summary]"


class NaiveClock:
    """Naive local time, moving by a seeded step; now and then the microsecond is 0."""

    def __init__(self, start: datetime, rng: random.Random) -> None:
        self.now = start
        self.rng = rng

    def tick(self, low: float = 1.0, high: float = 45.0) -> datetime:
        previous = self.now
        self.now += timedelta(seconds=round(self.rng.uniform(low, high), 6))
        if self.rng.random() < 0.12 and self.now.replace(microsecond=0) > previous:
            self.now = self.now.replace(microsecond=0)
        return self.now

    def next_day(self, hour: int, days: int = 1) -> None:
        day = (self.now + timedelta(days=days)).replace(hour=hour, minute=0, second=0)
        self.now = day + timedelta(seconds=self.rng.randint(0, 3000))


@dataclass
class ReferenceAgent:
    """One agent's folder as the reference writes it; ``expected`` maps each file to the
    ``(role, content)`` blocks it must hold (checked by :func:`verify`)."""

    folder: Path
    name: str
    clock: NaiveClock
    rng: random.Random
    summary_role: str = "System"
    conversation: str = ""
    blocks: list[tuple[str, str]] = field(default_factory=list)
    expected: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    lost_archives: int = 0

    @property
    def memory_md(self) -> Path:
        return self.folder / "MEMORY.md"

    def _header(self, created: datetime) -> str:
        return (
            f"# Agent Memory\n\n**Conversation:** {self.conversation}\n"
            f"**Created:** {created.isoformat()}\n\n---\n\n## Interaction Log\n\n"
        )

    def _append(self, text: str) -> None:
        with self.memory_md.open("a", encoding="utf-8", newline="\n") as handle:
            handle.write(text)

    def start_process(self, seed_messages: list[tuple[str, str]]) -> None:
        """A new process: a new conversation id; the header only if MEMORY.md is missing; the
        seed messages are written again (the reference re-writes them on every construction)."""
        ident = uuid.UUID(int=self.rng.getrandbits(128), version=4)
        self.conversation = f"{self.name}_id_{ident}_conversation"
        self.folder.mkdir(parents=True, exist_ok=True)
        if not self.memory_md.exists():
            self.memory_md.write_text(self._header(self.clock.tick()), encoding="utf-8")
            self.blocks = []
        for role, content in seed_messages:
            self.add(role, content, gap=(0.001, 0.01))

    def add(self, role: str, content: object, gap: tuple[float, float] = (1.0, 45.0)) -> None:
        when = self.clock.tick(*gap)
        text = str(content).strip() if content is not None else ""
        if not text:
            return  # the reference skips empty content on disk
        self._append(f"### {role} — {when.isoformat()}\n\n{text}\n\n---\n\n")
        self.blocks.append((role, text))

    def compact(self, summary: str, gap: tuple[float, float] = (2.0, 20.0)) -> str:
        """Archive (mode "w": a name taken in the same second is overwritten), wipe, re-seed."""
        when = self.clock.tick(*gap)
        archive_dir = self.folder / "archive"
        archive_dir.mkdir(exist_ok=True)
        name = f"history_{when.strftime('%Y-%m-%d_%H-%M-%S')}.md"
        if f"archive/{name}" in self.expected:
            self.lost_archives += 1
        (archive_dir / name).write_bytes(self.memory_md.read_bytes())
        self.expected[f"archive/{name}"] = list(self.blocks)
        self.memory_md.unlink()
        content = f"{SUMMARY_PREFIX} {summary.strip()}"
        self.memory_md.write_text(
            self._header(when) + f"### {self.summary_role} — {when.isoformat()}\n\n{content}"
            "\n\n---\n\n",
            encoding="utf-8",
        )
        self.blocks = [(self.summary_role, content)]
        return name

    def verify(self) -> None:
        """Every file parses strictly and holds exactly the blocks that were written."""
        self.expected["MEMORY.md"] = list(self.blocks)
        for relative, blocks in self.expected.items():
            doc = read_memory(self.folder / relative, strict=True)
            found = [(m.role, m.content) for m in doc.messages]
            assert found == blocks, (self.folder / relative, len(found), len(blocks))
            assert doc.format_version is None and doc.continues is None


def _repr_result(rng: random.Random, ticker: str) -> dict[str, object]:
    price = round(rng.uniform(20, 900), 2)
    eps = round(rng.uniform(0.5, 25), 2)
    return {
        "ticker": ticker,
        "price": price,
        "eps_ttm": eps,
        "pe": round(price / eps, 1),
        "currency": "USD",
        "source": "yfinance",
        "stale": False,
    }


def quant_agent(folder: Path, seed: int) -> ReferenceAgent:
    """QuantAgent: equity questions, tool results written with ``str()`` (Python reprs), three
    processes, compactions including two in the same second (one archive lost)."""
    rng = random.Random(f"{seed}:quant")
    agent = ReferenceAgent(folder, "QuantAgent", NaiveClock(datetime(2026, 3, 9, 13, 5), rng), rng)
    system = [("System", "You are QuantAgent, a financial analysis assistant. Use tools.")]
    tickers = ["NVDA", "AMD", "TSLA", "AAPL", "MSFT", "ASML", "TSM", "INTC", "META", "AMZN"]
    seen: list[str] = []

    def exchange(ticker: str) -> None:
        data = _repr_result(rng, ticker)
        seen.append(f"{ticker} P/E {data['pe']}")
        path = f"/tmp/{ticker.lower()}_pe.csv"
        agent.add("Human", f"What is the P/E ratio of {ticker}? Save the result to {path}")
        agent.add("QuantAgent", f"I will run `python fetch.py --ticker {ticker}` and compute it.")
        agent.add("Tool Executor", data, gap=(0.2, 3.0))
        agent.add("Tool Executor", None, gap=(0.01, 0.2))  # a tool that returned nothing
        agent.add(
            "QuantAgent",
            f"## {ticker}\n\n| metric | value |\n|---|---|\n| price | {data['price']} |\n"
            f"| EPS (ttm) | {data['eps_ttm']} |\n| P/E | {data['pe']} |\n\n---\n\n"
            f"Saved to {path}. A P/E of {data['pe']} is "
            f"{'above' if float(str(data['pe'])) > 30 else 'below'} the sector median.",
        )
        if rng.random() < 0.4:
            agent.add(
                "Human",
                rng.choice(
                    ["Thanks.", "Same format please.\nAnd keep it short.", "   Great, next one.   "]
                ),
            )

    def summary(kind: str = "") -> str:
        recent = "; ".join(seen[-6:])
        seen.clear()
        return (
            f"{kind}The user asked for P/E ratios and saved each result to /tmp as CSV. "
            f"Results so far: {recent}. Open: compare against the sector median."
        )

    for process in range(3):
        if process:
            agent.clock.next_day(hour=rng.choice([9, 13, 14]), days=rng.choice([1, 1, 3]))
        agent.start_process(system)
        for step in range(rng.randint(9, 12)):
            exchange(tickers[(process * 5 + step) % len(tickers)])
            if step == 4 or (step == 9 and process != 1):
                agent.compact(summary())
        if process == 1:
            # The summary plus a large tool result is still above the threshold: the next loop
            # compacts again within the same second and overwrites the archive just written.
            agent.clock.now = agent.clock.now.replace(microsecond=50_000) + timedelta(seconds=1)
            agent.compact(summary(), gap=(0.001, 0.002))
            agent.add(
                "Tool Executor", {"bulk": [_repr_result(rng, t) for t in tickers]}, gap=(0.2, 0.3)
            )
            agent.compact(
                summary("Summary of the previous summary and a bulk fetch. "), gap=(0.3, 0.4)
            )
    return agent


def support_bot(folder: Path, seed: int) -> ReferenceAgent:
    """SupportBot: customer tickets with JSON tool results; an older reference version that
    writes its summaries with the role ``user``."""
    rng = random.Random(f"{seed}:support")
    agent = ReferenceAgent(
        folder,
        "SupportBot",
        NaiveClock(datetime(2026, 3, 11, 8, 30), rng),
        rng,
        summary_role="user",
    )
    issues = [
        "cannot log in after the password reset",
        "was charged twice for order {o}",
        "wants to change the delivery address of order {o}",
        "asks for an invoice for {o}",
        "reports that the app crashes on start",
        "wants to cancel the subscription",
    ]
    handled: list[str] = []
    for process in range(2):
        if process:
            agent.clock.next_day(hour=8)
        agent.start_process([])
        for step in range(rng.randint(14, 18)):
            order = rng.randint(400_000, 499_999)
            issue = rng.choice(issues).replace("{o}", str(order))
            agent.add("Human", f"Ticket #{8800 + process * 40 + step}: customer {issue}.")
            agent.add("SupportBot", f"Looking up order {order} and the customer's account.")
            agent.add(
                "Tool Executor",
                f'{{"order": {order}, "status": "{rng.choice(["shipped", "paid", "refunded"])}", '
                f'"charges": {rng.choice([1, 1, 2])}, "account_locked": '
                f"{rng.choice(['true', 'false'])}}}",
                gap=(0.3, 4.0),
            )
            agent.add(
                "SupportBot",
                f"Reply to the customer:\n\n> Hello, thank you for reaching out about order "
                f"{order}. I have checked your account and {issue.split(' ', 1)[1]} is "
                "being handled; you will hear from us within 24 hours.\n\nInternal note: "
                "escalate if not resolved by tomorrow.",
            )
            handled.append(f"#{8800 + process * 40 + step} (order {order})")
            if step % 6 == 5:
                agent.compact(
                    f"Handled tickets {', '.join(handled)}. Double charges were "
                    "refunded; locked accounts were unlocked after identity checks."
                )
                handled.clear()
    return agent


def build_reference(workspace: Path, seed: int) -> dict[str, tuple[int, int]]:
    """Write the reference workspace; returns ``{agent: (archives, lost archives)}``."""
    out: dict[str, tuple[int, int]] = {}
    for make in (quant_agent, support_bot):
        name = make.__name__
        folder = (
            workspace / "agents" / {"quant_agent": "QuantAgent", "support_bot": "SupportBot"}[name]
        )
        agent = make(folder, seed)
        agent.verify()
        archives = len(list((folder / "archive").glob("history_*.md")))
        out[agent.name] = (archives, agent.lost_archives)
    return out
