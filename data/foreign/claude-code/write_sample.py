"""Write ``compacted-session.jsonl``: a Claude Code session written to its documented format
(README.md says which sources), with what no public sample found holds together: a uuid chain
with a retried branch, replies split over several lines sharing ``message.id``, thinking blocks,
tool calls and results, usage with cache read and write tokens, and two compactions (an ``auto``
one recording ``preTokens`` and ``postTokens``, a ``manual`` one recording ``preTokens`` only),
each a ``compact_boundary`` followed by its ``isCompactSummary`` user message.

And ``subagents-project/``, a project folder: a session whose two compactions keep their last
messages verbatim (one names them by ``compactMetadata.preservedSegment``, the other by
``preservedMessages.uuids``), whose usage gives each ``preTokens`` (the last reply's input,
cache and output tokens), with a subagent in each of the three places Claude Code has written
them: sidechain entries in the session's file (older versions), ``agent-<id>.jsonl`` beside it
(older versions), ``<session>/subagents/agent-<id>.jsonl`` with its ``.meta.json`` (newer).

Run as ``python write_sample.py OUT`` (standard library only; deterministic): OUT a folder gets
both, a file the session alone.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

SESSION = "5f0c3a1e-8d2b-4c6f-9a7e-2b1d4e6f8a90"
START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
PROJECT_SESSION = "7d2e9b40-1c3a-4f5e-8b6d-0a9c8e7f6d51"
PROJECT = "subagents-project"


class Writer:
    def __init__(
        self, session: str = SESSION, tag: int = 0, start: datetime = START,
        agent_id: str | None = None, sidechain: bool = False,
    ) -> None:  # fmt: skip
        self.lines: list[dict[str, object]] = []
        self.count = 0
        self.parent: str | None = None
        self.clock = start
        self.session = session
        self.tag = tag  # tells one file's uuids from another's
        self.agent_id = agent_id  # a subagent's, where its entries name it
        self.sidechain = sidechain or agent_id is not None  # a subagent's entries

    def _uuid(self) -> str:
        self.count += 1
        return f"00000000-0000-4000-{0x8000 + self.tag:04x}-{self.count:012d}"

    def _base(self, kind: str, **fields: object) -> dict[str, object]:
        self.clock += timedelta(seconds=7)
        uuid = self._uuid()
        line: dict[str, object] = {
            "parentUuid": self.parent,
            "isSidechain": self.sidechain,
            **({"agentId": self.agent_id} if self.agent_id else {}),
            "userType": "external",
            "cwd": "/home/dev/shop",
            "sessionId": self.session,
            "version": "2.0.14",
            "gitBranch": "main",
            "type": kind,
            **fields,
            "uuid": uuid,
            "timestamp": self.clock.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        }
        self.lines.append(line)
        self.parent = uuid
        return line

    def user(self, content: object, **fields: object) -> dict[str, object]:
        return self._base("user", message={"role": "user", "content": content}, **fields)

    def reply(self, blocks: list[dict[str, object]], context: int, output: int) -> None:
        """One API reply, one line per content block (as Claude Code writes them)."""
        ident = f"msg_{self.count:04d}"
        usage = {
            "input_tokens": 6,
            "cache_creation_input_tokens": context // 10,
            "cache_read_input_tokens": context - context // 10 - 6,
            "output_tokens": output,
            "service_tier": "standard",
        }
        for block in blocks:
            self._base(
                "assistant",
                message={
                    "id": ident,
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5-20250929",
                    "content": [block],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": usage,
                },
                requestId=f"req_{ident}",
            )

    def compact(
        self, trigger: str, pre: int, post: int | None, summary: str, keep: int = 0,
        listed: bool = False,
    ) -> None:  # fmt: skip
        """A compaction; ``keep``: how many of the last entries it keeps verbatim, named by
        ``preservedSegment`` (anchored on the summary), or, ``listed``, by
        ``preservedMessages`` (anchored on the boundary)."""
        meta: dict[str, object] = {"trigger": trigger, "preTokens": pre}
        if post is not None:
            meta["postTokens"] = post
        kept = [str(line["uuid"]) for line in self.lines[len(self.lines) - keep :]] if keep else []
        last, self.parent = self.parent, None
        boundary = self._base(
            "system",
            subtype="compact_boundary",
            content="Conversation compacted",
            isMeta=False,
            level="info",
            logicalParentUuid=last,
            compactMetadata=meta,
        )
        self.user(
            "This session is being continued from a previous conversation that ran out of "
            f"context. The conversation is summarized below:\n{summary}",
            isCompactSummary=True,
            isVisibleInTranscriptOnly=True,
        )
        if kept and listed:
            meta["preservedMessages"] = {"anchorUuid": boundary["uuid"], "uuids": kept}
        elif kept:
            meta["preservedSegment"] = {
                "headUuid": kept[0], "anchorUuid": self.parent, "tailUuid": kept[-1],
            }  # fmt: skip
        if kept:  # what follows hangs from the last kept message, as Claude Code writes it
            self.parent = kept[-1]


def session() -> list[dict[str, object]]:
    w = Writer()
    w.lines.append({"type": "summary", "summary": "Shop checkout refactor", "leafUuid": "x"})
    context = 14_000
    for turn in range(6):
        w.user(f"Step {turn}: refactor the checkout module, part {turn} (order totals, taxes).")
        w.reply(
            [
                {"type": "thinking", "thinking": f"Plan for part {turn}.", "signature": "sig"},
                {"type": "text", "text": f"Reading checkout part {turn}."},
                {"type": "tool_use", "id": f"toolu_{turn:03d}", "name": "Read",
                 "input": {"file_path": f"/home/dev/shop/checkout_{turn}.py"}},
            ],
            context, 120,
        )  # fmt: skip
        source = f"def total_{turn}(items):\n    return sum(i.price for i in items)\n"
        w.user([{"type": "tool_result", "tool_use_id": f"toolu_{turn:03d}",
                 "content": source * 3}])  # fmt: skip
        context += 9_000
        w.reply([{"type": "text", "text": f"Part {turn} done: totals now include taxes."}],
                context, 60)  # fmt: skip
        context += 2_000
    w.compact("auto", 160_512, 18_220, "The user is refactoring checkout: parts 0-5 done.")
    context = 19_000
    before = w.parent
    w.user("Now the invoices: what rounding do we use?")
    w.reply([{"type": "text", "text": "Banker's rounding."}], context, 40)  # abandoned: retried
    w.parent = before
    w.user("Now the invoices: which rounding mode do we use?")
    w.reply([{"type": "text", "text": "Half-up rounding, to two places (INVOICE_ROUNDING)."}],
            context + 500, 50)  # fmt: skip
    context += 3_000
    for turn in range(3):
        w.user(f"Apply the rounding to invoice step {turn}.")
        w.reply([{"type": "text", "text": f"Invoice step {turn} rounds half-up."}], context, 45)
        context += 4_000
    w.compact("manual", 31_800, None, "Checkout refactored; invoices round half-up.")
    w.user("Summarize what changed today.")
    w.reply([{"type": "text", "text": "Checkout totals include taxes; invoices round half-up."}],
            9_000, 70)  # fmt: skip
    return w.lines


def project() -> dict[str, list[dict[str, object]] | dict[str, object]]:
    """The files of ``subagents-project/`` by their path in it."""
    start = datetime(2026, 3, 3, 14, 0, tzinfo=UTC)
    w = Writer(PROJECT_SESSION, 1, start)
    w.user("Find the slow endpoints of the shop.")
    w.reply([{"type": "text", "text": "I will ask a subagent to map them."},
             {"type": "tool_use", "id": "toolu_t01", "name": "Task",
              "input": {"description": "Map endpoints", "subagent_type": "Explore",
                        "prompt": "List the shop's endpoints with their latency."}}],
            20_000, 80)  # fmt: skip
    # an older version's subagent: its entries in the session's file, marked isSidechain
    inline = Writer(PROJECT_SESSION, 2, w.clock, sidechain=True)
    inline.user("Check the cart's cache headers.")
    inline.reply([{"type": "text", "text": "The cart sends no-store."}], 6_000, 30)
    w.lines += inline.lines
    w.clock = inline.clock
    w.user([{"type": "tool_result", "tool_use_id": "toolu_t01",
             "content": "Endpoints: /orders (820 ms), /cart (95 ms)."}])  # fmt: skip
    w.reply([{"type": "text", "text": "/orders is the slow one: 820 ms."}], 52_000, 40)
    for step, context in enumerate((90_000, 130_000, 170_000)):
        w.user(f"Profile /orders, step {step}.")
        w.reply([{"type": "text", "text": f"Step {step}: the N+1 query is in totals."}],
                context, 45)  # fmt: skip
    # auto, at the last reply's count (170,000 + 45); keeps the last request and reply
    w.compact("auto", 170_045, 21_400, "Profiling /orders: an N+1 query in totals.", keep=2)
    for step, context in enumerate((30_000, 70_000, 110_000, 150_000, 165_000)):
        w.user(f"Fix /orders, step {step}.")
        w.reply([{"type": "text", "text": f"Fix step {step} applied."}], context, 45)
    w.compact("auto", 165_045, 19_800, "/orders fixed: one query for the totals.", keep=2,
              listed=True)  # fmt: skip
    w.user("Summarize the fix.")
    w.reply([{"type": "text", "text": "/orders: one query, 95 ms."}], 28_000, 25)
    # the Task call's subagent as newer versions write it, and one as older versions did
    newer = Writer(PROJECT_SESSION, 3, start + timedelta(seconds=20), agent_id="a7f3e2")
    newer.user("List the shop's endpoints with their latency.")
    newer.reply([{"type": "text", "text": "Endpoints: /orders (820 ms), /cart (95 ms)."}],
                8_000, 60)  # fmt: skip
    older = Writer(PROJECT_SESSION, 4, start + timedelta(seconds=300), agent_id="b2c4d6")
    older.user("Read the totals query.")
    older.reply([{"type": "text", "text": "It runs one query per order line."}], 7_000, 35)
    meta = {"agentType": "Explore", "description": "Map endpoints"}
    return {
        f"{PROJECT_SESSION}.jsonl": w.lines,
        f"{PROJECT_SESSION}/subagents/agent-a7f3e2.jsonl": newer.lines,
        f"{PROJECT_SESSION}/subagents/agent-a7f3e2.meta.json": meta,
        "agent-b2c4d6.jsonl": older.lines,
    }


def _write_lines(out: Path, lines: list[dict[str, object]]) -> None:
    with out.open("w", encoding="utf-8", newline="\n") as file:
        for line in lines:
            file.write(json.dumps(line, separators=(",", ":"), ensure_ascii=False) + "\n")


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent
    if not out.is_dir():
        _write_lines(out, session())
        return
    _write_lines(out / "compacted-session.jsonl", session())
    for name, content in project().items():
        path = out / PROJECT / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, list):
            _write_lines(path, content)
        else:
            path.write_text(json.dumps(content, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
