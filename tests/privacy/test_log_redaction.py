"""Every text that reaches a file or a log passes the same redaction (issue 36).

Keys the rules catch (an OpenAI project key, an AWS access key, a GitHub token) are planted in
each path that wrote them verbatim: the model string of the provider's reply (``usage.jsonl``),
a strategy's settings (``compactions.jsonl`` and the compaction journal), any text of a record
(``MemoryStore.append_record``/``append_usage``), and the provider's error message (the warning
of a failed summary, the error raised after the last attempt, the gateway's ``ModelError``).
None of them is left in the files' bytes, the captured logs or stderr; the records still read.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from fakes.openai_server import FakeOpenAIServer, HTTPError
from memorylab import Agent, Conversation
from memorylab.compress import ContextCompressor, KeepRecent, Summary
from memorylab.compress._base import BaseSummarizer
from memorylab.errors import CompressionFailed, ModelAuthError
from memorylab.llm import ChatReply
from memorylab.memory import _store as store_module
from memorylab.memory._paths import agent_paths
from memorylab.memory._store import MemoryStore

OPENAI = "sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv3Wx6Yz0Ab"
AWS = "AKIAZ3MHQ4XDRW5TPLKE"
GITHUB = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
KEYS = (OPENAI, AWS, GITHUB)
PLANTED = f"Incorrect API key provided: {OPENAI}; aws {AWS}; token {GITHUB}."


def _no_key_in(*texts: str | bytes) -> None:
    for text in texts:
        data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
        found = [key for key in KEYS if key.encode() in data]
        assert found == [], f"{found} in {data[:300]!r}"


def _markers(text: str) -> list[str]:
    return [m for m in ("openai_key", "aws_access_key", "github_token") if m in text]


# -- the store: every text of a record --------------------------------------------------------


def test_every_text_of_a_record_is_redacted_numbers_and_ids_intact(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "MEMORY.md")
    store.ensure("c", datetime(2026, 5, 1, tzinfo=UTC))
    record = {
        "kind": "compaction",
        "time": "2026-05-01T10:00:00.000000+00:00",
        "agent": "Deployer",
        "archive": "history_20260501T100000Z.md",
        "replaced": "64769:1234567",
        "tokens_before": 1234,
        "latency_s": 0.25,
        "error": PLANTED,
        "summarizer_model": f"gpt-4o {OPENAI}",
        "strategy": {"name": "keep_recent", "keep_messages": 4, "label": PLANTED},
        "extra": {"notes": [PLANTED, {"deep": PLANTED}], "api_key": OPENAI, "summary_budget": 7},
    }
    store.append_record(record)
    store.append_usage({"kind": "model_call", "time": record["time"], "call": 3,
                        "model": f"openai/gpt-4o {OPENAI}", "input_tokens": 99})  # fmt: skip
    _no_key_in(store.paths.compactions.read_bytes(), store.paths.usage.read_bytes())
    (read,) = store.records()
    for field in ("kind", "time", "agent", "archive", "replaced", "tokens_before", "latency_s"):
        assert read[field] == record[field]
    assert _markers(read["error"]) == ["openai_key", "aws_access_key", "github_token"]
    assert read["summarizer_model"] == "gpt-4o [REDACTED:openai_key]"
    assert read["strategy"]["keep_messages"] == 4 and _markers(read["strategy"]["label"])
    assert _markers(read["extra"]["notes"][1]["deep"]) and read["extra"]["summary_budget"] == 7
    assert read["extra"]["api_key"].startswith("[REDACTED:")
    (usage,) = store.usage_records()
    assert usage["model"] == "openai/gpt-4o [REDACTED:openai_key]"
    assert (usage["call"], usage["input_tokens"]) == (3, 99)


# -- usage.jsonl: the model string of the provider's reply --------------------------------------


def test_the_model_string_of_the_reply_reaches_usage_jsonl_redacted(
    isolated_workspace: Path,
) -> None:
    def completion(model: str, messages: Sequence[Mapping[str, Any]], **_: Any) -> ChatReply:
        return ChatReply(content="Done.", model=f"gpt-4o-2024 {OPENAI} {AWS} {GITHUB}",
                         input_tokens=40, output_tokens=3)  # fmt: skip

    agent = Agent("Metered", model_name="gpt-4o-mini", completion=completion, max_loops=1)
    agent.run("hello")
    agent.run("again")
    paths = agent_paths("Metered")
    _no_key_in(paths.usage.read_bytes())
    usage = MemoryStore(paths.memory_md).usage_records()
    assert [r["call"] for r in usage] == [1, 2]
    assert all(_markers(r["model"]) == ["openai_key", "aws_access_key", "github_token"]
               for r in usage)  # fmt: skip


# -- compactions.jsonl and the journal: a strategy's settings ----------------------------------


@dataclass(frozen=True, slots=True)
class LabelledKeepRecent(KeepRecent):
    """A strategy with a text setting (a user's own): the record holds its settings."""

    label: str = ""


@pytest.mark.parametrize("redact", [True, False])
def test_a_strategy_setting_is_redacted_in_the_record_and_the_journal(
    isolated_workspace: Path, monkeypatch: pytest.MonkeyPatch, redact: bool
) -> None:
    journals: list[bytes] = []
    real = store_module.atomic_replace

    def spy(path: Path, data: bytes) -> None:
        if path.name.endswith(".intent.json"):
            journals.append(data)
        real(path, data)

    monkeypatch.setattr(store_module, "atomic_replace", spy)
    conversation = Conversation(agent_name="Strategist", redact=redact)
    for i in range(6):
        conversation.add("User", f"message {i}")
    strategy = LabelledKeepRecent(keep_messages=2, label=f"deploy with {PLANTED}")
    event = ContextCompressor(strategy=strategy).compress(conversation, 8000, force=True)
    assert event is not None and event.ok, event
    paths = agent_paths("Strategist")
    assert journals  # the journal was written (and removed after the commit)
    _no_key_in(paths.compactions.read_bytes(), *journals)
    (record,) = MemoryStore(paths.memory_md).records()
    assert record["strategy"]["keep_messages"] == 2
    assert _markers(record["strategy"]["label"]) == ["openai_key", "aws_access_key",
                                                     "github_token"]  # fmt: skip


# -- the warning of a failed summary, and any log line quoting a provider's error ---------------


class Refused(BaseSummarizer):
    """A summarizer whose provider refuses the key, quoting it (as some do)."""

    name = "test/refused"

    def summarize(self, messages: Any, *, max_tokens: int | None = None) -> Summary:
        raise RuntimeError(PLANTED)


def test_the_failed_summary_warning_never_prints_the_key(
    isolated_workspace: Path,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    conversation = Conversation(agent_name="Refused")
    conversation.add("User", "hello")
    conversation.add("Refused", "hi")
    conversation.add("User", "again")  # the turn in progress, kept; the exchange is summarized
    compressor = ContextCompressor(summarizer=Refused())
    events = []
    with caplog.at_level(logging.INFO, logger="memorylab"):
        for _ in range(compressor.backoff.max_attempts - 1):
            compressor._skip_checks = 0  # the next attempt now, not after the backoff
            events.append(compressor.compress(conversation, 8000, force=True))
        compressor._skip_checks = 0
        with pytest.raises(CompressionFailed) as gave_up:
            compressor.compress(conversation, 8000, force=True)
    assert "compression failed" in caplog.text
    assert all(e is not None and not e.ok and _markers(str(e.error)) for e in events)
    _no_key_in(caplog.text, str(gave_up.value), *(str(e.error) for e in events if e))
    _no_key_in(*capsys.readouterr())
    assert "[REDACTED:openai_key]" in str(gave_up.value)


def test_maybe_compress_logs_the_error_redacted(
    isolated_workspace: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError(PLANTED)

    compressor = ContextCompressor(threshold=0.1)
    monkeypatch.setattr(compressor, "compress", fail)
    monkeypatch.setattr(compressor, "should_compress", lambda agent: True)
    with caplog.at_level(logging.ERROR, logger="memorylab"):
        assert compressor.maybe_compress(object()) is None
    assert "[REDACTED:openai_key]" in caplog.text
    _no_key_in(caplog.text)


def test_a_provider_error_quoting_the_key_is_redacted_by_the_gateway(
    isolated_workspace: Path,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Through litellm and the gateway's error table: the fake provider answers 401 with a
    message quoting the key; the ModelAuthError, the failed event and the warning hold none."""
    from memorylab.compress import get_summarizer

    with FakeOpenAIServer(HTTPError(401, PLANTED)) as server:
        summarizer = get_summarizer(
            "openai/fake-model", llm_args={"api_base": server.base_url, "api_key": "x"},
            retries=0,
        )  # fmt: skip
        with pytest.raises(ModelAuthError) as refused:
            summarizer.summarize([{"role": "User", "content": "hello"}])
        conversation = Conversation(agent_name="Gateway")
        conversation.add("User", "hello")
        with caplog.at_level(logging.WARNING, logger="memorylab"):
            event = ContextCompressor(summarizer=summarizer).compress(
                conversation, 8000, force=True
            )
    assert event is not None and not event.ok
    assert "[REDACTED:openai_key]" in str(refused.value)
    _no_key_in(str(refused.value), str(event.error), caplog.text, *capsys.readouterr())
