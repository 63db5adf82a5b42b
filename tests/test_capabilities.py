"""Capabilities are declared once and read as attributes (docs/architecture.md, "where a change
goes"): what the orchestrators read of a summarizer is on the ``Summarizer`` protocol, what
memorylab reads of an agent on ``AgentLike``, a counter's model on ``TokenCounter``; no module
guesses one with ``getattr(x, "<name>", default)`` or ``hasattr(x, "<name>")``. An object whose
shape is not ours is read by name only where it enters: ``FOREIGN_READERS``."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from memorylab import Agent, ContextCompressor, Conversation
from memorylab.analysis import calibration_df
from memorylab.compress import AgentLike, Summarizer, Summary, TokenCounter, as_summarizer
from memorylab.evaluate import cases_from_messages, compare_summarizers
from memorylab.llm import ChatReply

PACKAGE = Path(__file__).resolve().parent.parent / "toolkit" / "memorylab"

FOREIGN_READERS = {
    "as_summarizer": "a duck-typed summarizer enters (compress)",
    "_Declared": "as_summarizer's completion of it with the defaults",
    "as_scorer": "a duck-typed scorer enters (evaluate; its `name`, `estimate`)",
    "_DeclaredScorer": "as_scorer's completion of it",
    "_agent_call": "the reference framework's agent enters the compressor's agent calls",
    "_chat_reply": "a provider's reply (a tool call's function `name`): its shape is litellm's",
}
"""Where an object whose shape is not ours is read by name: the one place a duck-typed one
enters, and a provider's reply."""


def _members(protocol: type) -> set[str]:
    """The public names a Protocol declares (attributes, properties, methods)."""
    return {
        name
        for name in {*vars(protocol), *getattr(protocol, "__annotations__", {})}
        if not name.startswith("_")
    }


CAPABILITIES = (
    _members(Summarizer)
    | _members(AgentLike)
    | {field.name for field in dataclasses.fields(TokenCounter)}
)


def capability_guesses(source: str, names: set[str] = CAPABILITIES) -> list[str]:
    """``getattr(x, "<name>"[, default])`` and ``hasattr(x, "<name>")`` calls in ``source``
    for a declared ``name``, outside the :data:`FOREIGN_READERS`: ``"line: call"``."""
    tree = ast.parse(source)
    exempt = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and node.name in FOREIGN_READERS
        for inner in ast.walk(node)
    }
    return [
        f"{node.lineno}: {ast.unparse(node)}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and id(node) not in exempt
        and isinstance(node.func, ast.Name)
        and node.func.id in ("getattr", "hasattr")
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and node.args[1].value in names
    ]


def test_the_declared_capabilities_are_the_ones_read() -> None:
    assert {"bound", "summary_of_case", "max_tokens", "min_tokens", "local"} <= CAPABILITIES
    assert {"short_memory", "context_length", "model_name", "usage_records"} <= CAPABILITIES
    assert {"agent_name", "compaction_events", "context_compressor"} <= CAPABILITIES


def test_the_scanner_finds_a_planted_guess_and_spares_the_adapters() -> None:
    planted = (
        "def f(summarizer, agent, counter, other):\n"
        "    size = getattr(summarizer, 'min_tokens', 1)\n"
        "    if hasattr(agent, 'short_memory'):\n"
        "        return getattr(counter, 'model')\n"
        "    return getattr(other, 'unrelated', None)\n"
        "def as_summarizer(obj):\n"
        "    return getattr(obj, 'name', None)\n"
    )
    assert capability_guesses(planted) == [
        "2: getattr(summarizer, 'min_tokens', 1)",
        "3: hasattr(agent, 'short_memory')",
        "4: getattr(counter, 'model')",
    ]


def test_the_adapters_the_scan_spares_exist() -> None:
    defined = {
        node.name
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef | ast.ClassDef)
    }
    assert set(FOREIGN_READERS) <= defined


def test_no_module_guesses_a_declared_capability() -> None:
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{hit}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for hit in capability_guesses(path.read_text(encoding="utf-8"))
    ]
    assert found == []


# --------------------------------------------------------------------------- summarizers


class _Duck:
    """A summarizer that is only a name and a summarize (docs/compression.md shows one)."""

    name = "duck"

    def summarize(self, messages: Any, *, max_tokens: int | None = None) -> Summary:
        return Summary(text=str(messages[-1]["content"]), model=self.name)


MESSAGES = [
    {"role": "User", "content": "The staging database listens on port 5433."},
    {"role": "Assistant", "content": "Noted: staging uses port 5433."},
]


def test_a_duck_typed_summarizer_gets_the_declared_defaults() -> None:
    completed = as_summarizer(_Duck())
    assert isinstance(completed, Summarizer)
    assert (completed.bound, completed.max_tokens, completed.min_tokens) == (None, None, 1)
    assert completed.summary_of_case(cases_from_messages(MESSAGES)[0]) is None
    assert (completed.local, completed.model) == (False, None)


def test_what_a_duck_typed_summarizer_declares_is_kept() -> None:
    duck = _Duck()
    duck.bound, duck.max_tokens, duck.min_tokens = "ceiling", 300, 40  # type: ignore[attr-defined]
    completed = as_summarizer(duck)
    assert (completed.bound, completed.max_tokens, completed.min_tokens) == ("ceiling", 300, 40)


def test_a_duck_typed_summarizer_runs_a_comparison() -> None:
    duck = _Duck()
    duck.bound = "floor"  # type: ignore[attr-defined]
    result = compare_summarizers(
        cases_from_messages(MESSAGES), {"duck": duck, "plain": _Duck()}, ["compression"],
        progress=False, cache_dir=None,
    )  # fmt: skip
    assert set(result.summaries["summarizer"]) == {"duck", "plain"}
    assert result.bounds == {"duck": "floor"}


# --------------------------------------------------------------------------- agents and counters


def _offline_agent(name: str) -> Agent:
    def completion(*args: Any, **kwargs: Any) -> ChatReply:
        return ChatReply(content="Done: the port is 5433. " * 8, input_tokens=900)

    return Agent(
        agent_name=name, model_name="gpt-4o", context_length=1024, compression_threshold=0.5,
        summarizer_model="memorylab/extractive", completion=completion,
    )  # fmt: skip


def test_memorylabs_agent_is_agent_like_and_calibrates() -> None:
    agent = _offline_agent("Calibrated")
    for i in range(4):
        agent.run(f"step {i}: report the port")
    assert isinstance(agent, AgentLike)
    frame = calibration_df(agent)
    assert set(frame["agent"]) == {"Calibrated"} and len(frame) == 4


def test_a_reference_style_agent_still_works_with_the_compressor() -> None:
    """The reference's agent is not AgentLike (no records, no compressor, maybe no model): it
    enters the compressor's agent calls by its own shape, ``short_memory`` and
    ``context_length`` only."""
    conversation = Conversation(agent_name="Reference")
    for i in range(30):
        conversation.add("User", f"message {i}: the staging database listens on port 5433")
    agent = SimpleNamespace(short_memory=conversation, context_length=400)
    assert not isinstance(agent, AgentLike)
    compressor = ContextCompressor(threshold=0.5, summarizer_model="memorylab/extractive")
    assert compressor.usage_ratio(agent) > 0.5 and compressor.should_compress(agent)
    assert compressor.maybe_compress(agent)
    assert compressor.usage_ratio(agent) < 0.5
    assert compressor.usage_ratio(SimpleNamespace(short_memory=conversation)) == 0.0


@pytest.mark.parametrize(
    ("counter", "recorded"),
    [(TokenCounter("gpt-4o"), "gpt-4o"), (SimpleNamespace(model="gpt-4o"), None)],
)
def test_the_token_model_recorded_is_a_token_counters(counter: Any, recorded: str | None) -> None:
    """A compaction records the model of the TokenCounter that counted; a callable that only
    has a ``model`` attribute is not one (its model is not guessed)."""
    counting = counter if isinstance(counter, TokenCounter) else lambda text: len(text.split())
    if not isinstance(counter, TokenCounter):
        counting.model = counter.model  # type: ignore[attr-defined]
    conversation = Conversation(system_prompt="Be brief.", token_counter=counting)
    for i in range(12):
        conversation.add("User", f"message {i}: the staging database listens on port 5433")
    compressor = ContextCompressor(threshold=0.5, summarizer_model="memorylab/extractive")
    event = compressor.compress(conversation, 200, force=True)
    assert event is not None and event.ok
    assert event.extra.get("token_model") == recorded
