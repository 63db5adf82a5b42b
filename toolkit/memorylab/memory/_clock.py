"""The conversation's default clock and its fast message stamp (UTC, microseconds)."""

from __future__ import annotations

import time
from datetime import UTC, datetime


def utc_now() -> datetime:
    """The default ``Conversation.clock``: timezone-aware UTC."""
    return datetime.now(UTC)


_second_prefix: tuple[int, str] = (-1, "")


def utc_stamp() -> str:
    """``utc_now().isoformat(timespec="microseconds")``, 5x faster: the seconds part is formatted
    once per second (isoformat alone costs more than the write it stamps)."""
    global _second_prefix
    seconds, nanos = divmod(time.time_ns(), 1_000_000_000)
    cached_second, prefix = _second_prefix
    if cached_second != seconds:
        prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
        _second_prefix = (seconds, prefix)
    return f"{prefix}.{str(1_000_000 + nanos // 1000)[1:]}+00:00"  # faster than :06d
