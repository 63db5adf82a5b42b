"""``CompactionStepper``: step through a scripted agent run, one message at a time (teaching).

Each step adds the next message of a script to a real :class:`~memorylab.Conversation` (in a
temporary workspace, written through to a real MEMORY.md) and then lets a real
:class:`~memorylab.ContextCompressor` check it, as the :class:`~memorylab.Agent` does before
every model call. The view shows the history the model reads, the MEMORY.md file as it is on
disk, a token bar against the threshold, and the archive that appears when compaction fires.
The stepper computes nothing itself: every number comes from the conversation and compressor.
"""

from __future__ import annotations

import html
import os
import shutil
import tempfile
import weakref
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memorylab.compress._base import Summarizer
from memorylab.compress._policy import Threshold
from memorylab.errors import InvalidSetting
from memorylab.memory._display import event_text, messages_html
from memorylab.memory._records import CompactionEvent
from memorylab.widgets._common import View, import_widgets, status_html

_DEMO_LINES = (
    "User: Set up the nightly ETL for the sales warehouse. The source database is on port 5433 "
    "and the output goes to /srv/etl/out/sales.parquet.",
    "Agent: Understood. I will read the schema first, then write the extract step. Plan: 1) "
    "inspect tables, 2) extract, 3) transform, 4) load, 5) schedule.",
    "Tool Executor: tables: orders (2.4M rows), customers (180k rows), refunds (31k rows); "
    "orders.created_at is a timestamp without time zone.",
    "Agent: The orders table has no time zone, so I will read created_at as UTC. Decision: "
    "extract incrementally by created_at, one day per run.",
    "User: Good. Keep refunds in a separate file, we audit them monthly. And never drop rows with "
    "a null customer_id; flag them instead.",
    "Agent: Noted: refunds go to /srv/etl/out/refunds.parquet, and rows with a null customer_id "
    "get flagged with customer_missing = true.",
    "Tool Executor: ran: python -m etl.extract --since 2026-01-04 --table orders -> 6,912 rows in "
    "2.1 s; 14 rows with customer_id NULL.",
    "Agent: Extract works: 6,912 orders for one day, 14 of them flagged. Next I will write the "
    "transform that joins customers and converts currencies.",
    "User: Use the ECB reference rates for currency conversion, cached in "
    "/srv/etl/cache/ecb_rates.csv. Amounts must end up in EUR.",
    "Agent: The transform now joins customers, converts every amount to EUR with the cached ECB "
    "rates and keeps the original currency in amount_src_ccy.",
    "Tool Executor: ran: pytest tests/test_transform.py -q -> 12 passed in 0.84 s",
    "Agent: All 12 transform tests pass. Loading next: the warehouse table is sales.fact_orders, "
    "written with an upsert on order_id.",
    "User: Schedule it at 02:30 UTC and send failures to #data-alerts. Retries: at most 3, five "
    "minutes apart.",
    "Agent: Scheduled: cron '30 2 * * *' (UTC), 3 retries, 5 minutes apart, failures posted to "
    "#data-alerts. The ETL is ready for a first nightly run.",
    "Tool Executor: nightly run 2026-01-05 02:30 UTC: extract 7,104 rows, transform ok, load ok "
    "(upserted 7,104), total 41 s.",
    "User: Great. What was the source port again, and where do the refunds go?",
    "Agent: The source database is on port 5433, and refunds are written to "
    "/srv/etl/out/refunds.parquet.",
)
DEMO_SCRIPT: tuple[Mapping[str, str], ...] = tuple(
    dict(zip(("role", "content"), line.split(": ", 1), strict=True)) for line in _DEMO_LINES
)
"""The default script: an ETL task whose facts (a port, paths, a schedule) must survive."""

_START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


class _Clock:
    """A deterministic clock: one minute per message, so files and archive names are stable."""

    def __init__(self) -> None:
        self.now = _START

    def __call__(self) -> datetime:
        return self.now


def _bar_html(tokens: int, trigger: int, context_length: int, fired: bool) -> str:
    scale = max(context_length, tokens, 1)
    used = 100.0 * tokens / scale
    mark = 100.0 * trigger / scale
    color = "#cf222e" if tokens >= trigger else "#bf8700" if tokens >= 0.8 * trigger else "#2da44e"
    note = " — compaction fired" if fired else ""
    return (
        '<div style="font-family:system-ui,sans-serif;font-size:12px;color:#1f2328">'
        f"<b>{tokens:,}</b> tokens in context · threshold {trigger:,} · window "
        f"{context_length:,}{html.escape(note)}"
        '<div style="position:relative;height:18px;background:#eaeef2;border-radius:4px;'
        'margin-top:3px;overflow:hidden">'
        f'<div class="mlab-bar" style="width:{used:.1f}%;height:100%;background:{color}"></div>'
        f'<div style="position:absolute;top:0;left:{mark:.1f}%;width:2px;height:100%;'
        'background:#1f2328"></div></div></div>'
    )


def _pre(text: str, height: str = "340px") -> str:
    return (
        f'<pre style="white-space:pre-wrap;word-break:break-word;max-height:{height};'
        "overflow:auto;font-size:11px;line-height:1.35;background:#f6f8fa;border:1px solid "
        f'#d0d7de;border-radius:6px;padding:6px;margin:0">{html.escape(text)}</pre>'
    )


class CompactionStepper(View):
    """Step through ``script`` (default :data:`DEMO_SCRIPT`) and watch compaction happen.

    ``context_length`` and ``threshold`` are small by default so compaction fires a few times in
    the demo script. ``summarizer`` defaults to the offline extractive summarizer with a budget
    of ``summary_tokens``. ``workspace`` defaults to a fresh temporary folder (removed by
    :meth:`close` or when the stepper is garbage collected).

    State for code and tests: :attr:`position` (messages added), :attr:`conversation`,
    :attr:`compressor`, :attr:`events` (successful compactions), :attr:`last_event`,
    :attr:`tokens`, :attr:`trigger`, :attr:`memory_text` (MEMORY.md as on disk) and
    :attr:`archives` (archive file names, oldest first).
    """

    def __init__(
        self,
        script: Sequence[Mapping[str, Any]] | None = None,
        *,
        context_length: int = 600,
        threshold: Threshold = 0.7,
        summarizer: Summarizer | None = None,
        summary_tokens: int = 200,
        model: str | None = None,
        workspace: str | os.PathLike[str] | None = None,
        agent_name: str = "stepper",
    ) -> None:
        widgets = import_widgets()
        self.script = [dict(m) for m in (DEMO_SCRIPT if script is None else script)]
        if not self.script:
            raise InvalidSetting("the script needs at least one message")
        self.context_length = context_length
        self.threshold = threshold
        self.summary_tokens = summary_tokens
        self.model = model
        self.agent_name = agent_name
        self._summarizer = summarizer
        self._cleanup: weakref.finalize[Any, Any] | None = None
        if workspace is None:
            folder = tempfile.mkdtemp(prefix="memorylab-stepper-")
            self._cleanup = weakref.finalize(self, shutil.rmtree, folder, ignore_errors=True)
            self.workspace = Path(folder)
        else:
            self.workspace = Path(workspace)

        self.next_button = widgets.Button(description="Next message", icon="step-forward")
        self.run_button = widgets.Button(description="Run to compaction", icon="forward")
        self.reset_button = widgets.Button(description="Reset", icon="refresh")
        self.next_button.on_click(lambda _: self.step())
        self.run_button.on_click(lambda _: self.run_to_compaction())
        self.reset_button.on_click(lambda _: self.reset())
        self.progress = widgets.IntProgress(
            min=0, max=len(self.script), description="messages", bar_style="info"
        )
        self.bar = widgets.HTML()
        self.history_view = widgets.HTML()
        self.memory_view = widgets.HTML()
        self.archive_view = widgets.HTML()
        self.event_view = widgets.HTML()
        self.status = widgets.HTML()
        left = widgets.VBox(
            [widgets.HTML("<b>History the model reads</b>"), self.history_view],
            layout=widgets.Layout(width="50%"),
        )
        right = widgets.VBox(
            [
                widgets.HTML("<b>MEMORY.md on disk</b>"),
                self.memory_view,
                widgets.HTML("<b>archive/</b>"),
                self.archive_view,
            ],
            layout=widgets.Layout(width="50%"),
        )
        super().__init__(
            [
                widgets.HBox([self.next_button, self.run_button, self.reset_button]),
                self.progress,
                self.bar,
                self.status,
                widgets.HBox([left, right]),
                widgets.HTML("<b>Compactions</b>"),
                self.event_view,
            ]
        )
        self.reset()

    # -- driving --------------------------------------------------------------------------------

    def reset(self) -> None:
        """Start again from an empty memory (the agent folder is removed)."""
        from memorylab.compress._compressor import ContextCompressor
        from memorylab.compress._extractive import ExtractiveSummarizer
        from memorylab.compress._tokens import get_token_counter
        from memorylab.memory._conversation import Conversation

        shutil.rmtree(self.workspace / "agents" / self.agent_name, ignore_errors=True)
        self._clock = _Clock()
        self.conversation = Conversation(
            agent_name=self.agent_name,
            workspace_dir=self.workspace,
            token_counter=get_token_counter(self.model),
            clock=self._clock,
            preload=False,
        )
        summarizer = self._summarizer or ExtractiveSummarizer(
            max_tokens=self.summary_tokens, model=self.model
        )
        self.compressor = ContextCompressor(
            self.threshold, summarizer=summarizer, summarizer_max_tokens=self.summary_tokens
        )
        self.position = 0
        self.last_event: CompactionEvent | None = None
        self._refresh()

    @property
    def done(self) -> bool:
        return self.position >= len(self.script)

    @property
    def events(self) -> list[CompactionEvent]:
        """The successful compactions so far."""
        return [event for event in self.compressor.events if event.ok]

    @property
    def trigger(self) -> int:
        return self.compressor.trigger_tokens(self.context_length)

    @property
    def tokens(self) -> int:
        return self.conversation.token_count()

    @property
    def memory_path(self) -> Path:
        path = self.conversation.memory_md_path
        assert path is not None
        return path

    @property
    def memory_text(self) -> str:
        return self.memory_path.read_text(encoding="utf-8")

    @property
    def archives(self) -> list[str]:
        folder = self.memory_path.parent / "archive"
        return sorted(p.name for p in folder.glob("*.md")) if folder.is_dir() else []

    def step(self) -> CompactionEvent | None:
        """Add the next message, then check compression; returns the compaction, if one ran."""
        if self.done:
            return None
        message = self.script[self.position]
        self._clock.now = _START + timedelta(minutes=self.position)
        self.conversation.add(str(message["role"]), message.get("content"))
        self.position += 1
        self._clock.now += timedelta(seconds=30)
        event = self.last_event = self.compressor.compress(self.conversation, self.context_length)
        self._refresh()
        return event

    def run_to_compaction(self) -> CompactionEvent | None:
        """Step until a compaction fires (or the script ends)."""
        while not self.done:
            event = self.step()
            if event is not None and event.ok:
                return event
        return None

    # -- showing --------------------------------------------------------------------------------

    def _refresh(self) -> None:
        fired = self.last_event is not None and self.last_event.ok
        self.progress.value = self.position
        self.bar.value = _bar_html(self.tokens, self.trigger, self.context_length, fired)
        self.history_view.value = messages_html(self.conversation.conversation_history, limit=30)
        self.memory_view.value = _pre(self.memory_text)
        archives = self.archives
        if archives:
            newest = archives[-1]
            items = "".join(
                f"<li><code>{html.escape(name)}</code>"
                f"{' ← new' if fired and name == newest else ''}</li>"
                for name in archives
            )
            self.archive_view.value = f'<ul style="margin:0;font-size:12px">{items}</ul>'
        else:
            self.archive_view.value = status_html("(empty: nothing compacted yet)")
        log = "\n\n".join(event_text(event) for event in self.events)
        self.event_view.value = _pre(log, "200px") if log else status_html("(none yet)")
        if self.done:
            note = f"the script is over: {len(self.events)} compaction(s). Reset to start again."
        elif fired:
            assert self.last_event is not None
            note = (
                f"compaction: {self.last_event.messages_archived} messages archived to "
                f"archive/{self.last_event.archive}; MEMORY.md now starts with the summary."
            )
        else:
            note = f"message {self.position} of {len(self.script)}"
        self._report(None, note)
        self.next_button.disabled = self.run_button.disabled = self.done

    def __repr__(self) -> str:
        return (
            f"CompactionStepper(message {self.position} of {len(self.script)}, "
            f"{len(self.events)} compaction(s), {self.tokens:,} of {self.trigger:,} tokens)"
        )

    def close(self) -> None:
        """Close the widgets and remove the temporary workspace (if the stepper made it)."""
        super().close()
        # Also run by ipywidgets' __del__, so on a stepper whose construction failed too.
        conversation = getattr(self, "conversation", None)
        if conversation is not None:
            conversation.memory_md_path = None
        cleanup = getattr(self, "_cleanup", None)
        if cleanup is not None:
            cleanup()
