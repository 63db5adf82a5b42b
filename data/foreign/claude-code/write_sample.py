"""Write ``compacted-session.jsonl``: a Claude Code session written to its documented format
(README.md says which sources), with what no public sample found holds together: a uuid chain
with a retried branch, replies split over several lines sharing ``message.id``, thinking blocks,
tool calls and results, usage with cache read and write tokens, and two compactions (an ``auto``
one recording ``preTokens`` and ``postTokens``, a ``manual`` one recording ``preTokens`` only),
each a ``compact_boundary`` followed by its ``isCompactSummary`` user message.

Run as ``python write_sample.py OUT`` (standard library only; deterministic).
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

SESSION = "5f0c3a1e-8d2b-4c6f-9a7e-2b1d4e6f8a90"
START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


class Writer:
    def __init__(self) -> None:
        self.lines: list[dict[str, object]] = []
        self.count = 0
        self.parent: str | None = None
        self.clock = START

    def _uuid(self) -> str:
        self.count += 1
        return f"00000000-0000-4000-8000-{self.count:012d}"

    def _base(self, kind: str, **fields: object) -> dict[str, object]:
        self.clock += timedelta(seconds=7)
        uuid = self._uuid()
        line: dict[str, object] = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/home/dev/shop",
            "sessionId": SESSION,
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

    def user(self, content: object, **fields: object) -> None:
        self._base("user", message={"role": "user", "content": content}, **fields)

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

    def compact(self, trigger: str, pre: int, post: int | None, summary: str) -> None:
        meta: dict[str, object] = {"trigger": trigger, "preTokens": pre}
        if post is not None:
            meta["postTokens"] = post
        last, self.parent = self.parent, None
        self._base(
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


def main() -> None:
    out = (
        Path(sys.argv[1])
        if len(sys.argv) > 1
        else Path(__file__).with_name("compacted-session.jsonl")
    )
    if out.is_dir():
        out = out / "compacted-session.jsonl"
    with out.open("w", encoding="utf-8", newline="\n") as file:
        for line in session():
            file.write(json.dumps(line, separators=(",", ":"), ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
