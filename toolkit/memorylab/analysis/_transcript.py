"""Transcripts for growth, replays and sweeps: messages as the model reads them (internal).

A message costs what :meth:`memorylab.Conversation.token_count` charges for it: its tokens in
the request the Agent sends (:func:`memorylab.memory._request.message_tokens` of the message
:func:`~memorylab.memory._request.request_message` renders, as a ``Conversation`` with its
defaults sends it: user turns stamped, the timestamp as memorylab writes it, UTC with
microseconds); a request costs :data:`~memorylab.memory._request.REPLY_TOKENS` more, counted
with the static context (``static_tokens``). Everything here counts that way, so
:func:`~memorylab.analysis.token_growth`, a replay through a real
:class:`~memorylab.Conversation` and the fast sweep agree token for token.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from memorylab.analysis._record import to_micros
from memorylab.compress._tokens import TokenCounter, get_token_counter
from memorylab.errors import InvalidSetting
from memorylab.memory import _format as fmt
from memorylab.memory._pins import PinKey
from memorylab.memory._preload import has_messages, plan_preload
from memorylab.memory._records import PRELOAD_PREFIX, SUMMARY_PREFIX, MemoryDocument, Message
from memorylab.memory._request import message_tokens, request_message

if TYPE_CHECKING:
    import pandas as pd

SYNTHETIC_START = datetime(2000, 1, 1, tzinfo=UTC)
"""Messages without a timestamp are stamped from here, one second apart (deterministic)."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MEMO_LIMIT = 500_000


class MemoCounter:
    """A :class:`TokenCounter` that remembers the texts it counted (replays count the same
    messages again and again). Same numbers as the counter it wraps.

    The memo holds at least :data:`_MEMO_LIMIT` texts, and twice the largest batch it was given:
    a report or a sweep counts one transcript several times, so a memo smaller than the
    transcript would forget it between the passes and count a million messages five times
    (memory stays proportional to the transcript)."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.model = counter.model
        self._memo: dict[str, int] = {}
        self._limit = _MEMO_LIMIT

    def __call__(self, text: str) -> int:
        memo = self._memo
        count = memo.get(text)
        if count is None:
            if len(memo) > self._limit:
                memo.clear()
            count = memo[text] = self.counter.count(text)
        return count

    count = __call__

    def count_batch(self, texts: Sequence[str], num_threads: int | None = None) -> list[int]:
        memo = self._memo
        missing = [text for text in dict.fromkeys(texts) if text not in memo]
        counted = dict(zip(missing, self.counter.count_batch(missing, num_threads), strict=True))
        # Read before the memo is cleared: a batch past the limit used to clear it and then
        # look up texts it no longer held (KeyError on a million messages).
        counts = [counted[text] if text in counted else memo[text] for text in texts]
        self._limit = max(self._limit, 2 * len(texts))
        if len(memo) + len(counted) > self._limit:
            memo.clear()
        memo.update(counted)
        return counts


_COUNTERS: dict[str | None, MemoCounter] = {}


def memo_counter(model: str | None) -> MemoCounter:
    """The shared remembering counter for ``model`` (``None``: the cl100k_base approximation)."""
    counter = _COUNTERS.get(model)
    if counter is None:
        counter = _COUNTERS[model] = MemoCounter(get_token_counter(model))
    return counter


@dataclass
class Transcript:
    """Messages in order: roles, contents, UTC timestamps (µs since the epoch) and stamps."""

    roles: list[str]
    contents: list[str]
    utc_us: np.ndarray[Any, np.dtype[np.int64]]

    def __len__(self) -> int:
        return len(self.contents)

    @property
    def stamps(self) -> list[str]:
        text = np.datetime_as_string(self.utc_us.astype("datetime64[us]"), unit="us")
        return [f"{s}+00:00" for s in text.tolist()]

    def datetimes(self) -> list[datetime]:
        return [_EPOCH + timedelta(microseconds=m) for m in self.utc_us.tolist()]

    def messages(self) -> list[dict[str, Any]]:
        """Every message as the request carries it, as counted (:func:`request_message`)."""
        return [
            request_message({"role": role, "content": content, "timestamp": stamp}, counted=True)
            for stamp, role, content in zip(self.stamps, self.roles, self.contents, strict=True)
        ]

    def tokens(self, counter: MemoCounter) -> np.ndarray[Any, np.dtype[np.int64]]:
        """Tokens of every message in the request (the module docstring)."""
        messages = self.messages()
        contents = counter.count_batch([m["content"] for m in messages])
        return np.array(
            [
                message_tokens(m, counter, content_tokens=c)
                for m, c in zip(messages, contents, strict=True)
            ],
            dtype=np.int64,
        )


def _utc_micros(frame: pd.DataFrame) -> np.ndarray[Any, np.dtype[np.int64]]:
    stamps = frame["timestamp"]
    if getattr(stamps.dt, "tz", None) is not None:
        stamps = stamps.dt.tz_convert("UTC").dt.tz_localize(None)
    values: np.ndarray[Any, Any] = np.asarray(stamps.to_numpy()).astype("datetime64[us]")
    return (values - np.datetime64(0, "us")).astype(np.int64)


def from_frame(frame: pd.DataFrame, *, drop_summaries: bool) -> Transcript:
    """A transcript from a :func:`~memorylab.analysis.memory_df` frame (one agent)."""
    missing = {"role", "content"} - set(frame.columns)
    if missing:
        raise InvalidSetting(
            f"the frame has no {sorted(missing)} column(s); give a frame from memory_df() or "
            "one with role and content columns"
        )
    for column in ("workspace", "agent"):
        if column in frame.columns and frame[column].nunique() > 1:
            names = ", ".join(map(str, frame[column].unique()[:5]))
            raise InvalidSetting(
                f"the frame holds several {column}s ({names}); replay one at a time, e.g. "
                f"df[df.{column} == {str(frame[column].iloc[0])!r}]"
            )
    if "timeline" in frame.columns:
        frame = frame.sort_values("timeline", kind="stable")
    if drop_summaries:
        frame = frame[~summary_rows(frame)]
    micros = _utc_micros(frame) if "timestamp" in frame.columns else _synthetic(len(frame))
    roles = [str(role) for role in frame["role"].tolist()]
    contents = [fmt.content_to_text(c) for c in frame["content"].tolist()]
    return Transcript(roles, contents, micros)


def summary_rows(frame: pd.DataFrame) -> Any:
    """Which rows of a frame are summaries (its ``is_summary`` column, else their prefix)."""
    if "is_summary" in frame.columns:
        return frame["is_summary"].to_numpy(dtype=bool)
    return frame["content"].astype(str).str.startswith(SUMMARY_PREFIX).to_numpy(dtype=bool)


def _synthetic(count: int) -> np.ndarray[Any, np.dtype[np.int64]]:
    start = (SYNTHETIC_START - _EPOCH) // timedelta(microseconds=1)
    return start + np.arange(count, dtype=np.int64) * 1_000_000


def positions(transcript: Transcript, times: Sequence[datetime]) -> list[int]:
    """For each time, the first message at or after it (left out: none, or the first message)."""
    micros = transcript.utc_us
    found = set()
    for when in times:
        at = np.flatnonzero(micros >= to_micros(when))
        if len(at) and 0 < int(at[0]) < len(micros):
            found.add(int(at[0]))
    return sorted(found)


def from_messages(messages: Sequence[Mapping[str, Any]]) -> Transcript:
    """A transcript from ``{"role", "content"[, "timestamp"]}`` mappings (summaries dropped)."""
    roles: list[str] = []
    contents: list[str] = []
    micros: list[int] = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping) or "role" not in message:
            raise InvalidSetting(
                f"message {index} is not a {{'role', 'content'}} mapping: {message!r:.80}"
            )
        content = fmt.content_to_text(message.get("content"))
        if content.startswith(SUMMARY_PREFIX):
            continue
        roles.append(str(message["role"]))
        contents.append(content)
        stamp = message.get("timestamp")
        if stamp is None or stamp == "":
            micros.append(int(_synthetic(index + 1)[-1]))
        else:
            micros.append(to_micros(stamp))
    return Transcript(roles, contents, np.array(micros, dtype=np.int64))


def as_transcript(
    transcript: pd.DataFrame | Sequence[Mapping[str, Any]] | Transcript,
) -> Transcript:
    """A :class:`Transcript` from a frame or a list of messages (summaries dropped); a path is
    read by the caller (:data:`memorylab.analysis._runs.TranscriptSource`)."""
    if isinstance(transcript, Transcript):
        return transcript
    if hasattr(transcript, "columns") and hasattr(transcript, "iloc"):
        return from_frame(transcript, drop_summaries=True)
    if isinstance(transcript, Sequence) and not isinstance(transcript, bytes):
        return from_messages(transcript)
    raise InvalidSetting(
        "a transcript is a DataFrame from memory_df(), a list of {'role', 'content'} dicts, or "
        f"the path of an agent folder or memory file, not {type(transcript).__name__}"
    )


def system_tokens(counter: Callable[[str], int], content: str) -> int:
    """Tokens of a ``System`` entry of ``content`` in the request (the static context, a
    summary, a preload)."""
    return message_tokens(request_message({"role": "System", "content": content}), counter)


def summary_overhead(counter: MemoCounter) -> int:
    """Tokens a summary entry costs in the request beyond its text (its message, its role and
    the ``[Compressed ...]`` prefix)."""
    return system_tokens(counter, SUMMARY_PREFIX)


def entry_tokens(frame: pd.DataFrame, model: str | None) -> np.ndarray[Any, np.dtype[np.int64]]:
    """Per row of a :func:`memory_df` frame: its tokens in the request."""
    transcript = from_frame(
        frame.drop(columns=["workspace", "agent"], errors="ignore").assign(
            timeline=np.arange(len(frame))
        ),
        drop_summaries=False,
    )
    return transcript.tokens(memo_counter(model))


# --------------------------------------------------------------------------- the preload


def memory_text(
    messages: Sequence[Message], *, name: str, created: datetime, continues: str | None
) -> str:
    """MEMORY.md as memorylab writes it, holding ``messages`` (a replay's file at a restart)."""
    doc = MemoryDocument(
        conversation_name=name,
        created=created,
        messages=tuple(messages),
        format_version=fmt.FORMAT_VERSION,
        continues=continues,
    )
    return fmt.render_memory(doc)


def preload_content(
    text: str, *, max_tokens: int | None, counter: MemoCounter, pins: Collection[PinKey] = ()
) -> str | None:
    """The preload entry a new process reads for a MEMORY.md of ``text`` (``None``: it holds no
    messages, nothing is preloaded): :func:`memorylab.memory._preload.plan_preload`, the rule
    :class:`~memorylab.Conversation` follows, within ``max_tokens``, the pinned blocks
    (``pins``) kept."""
    if not has_messages(text):
        return None
    plan = plan_preload(text, max_tokens=max_tokens, count=counter, pins=pins)
    return f"{PRELOAD_PREFIX}\n{plan.text}"
