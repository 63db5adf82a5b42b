"""The reference framework's own tests of ``ContextCompressor``, ported to memorylab.

A port of ``tests/agents/test_context_compressor.py`` of kyegomez/swarms (the version of swarms
16.0.3, with the byte-size pre-check): the same tests, names, inputs and expectations. The shim
is the import swap (``swarms.agents.context_compressor`` -> ``memorylab.compress._compressor``,
``swarms.structs.conversation.Conversation`` -> ``memorylab.Conversation``,
``swarms.utils.litellm_tokenizer.count_tokens`` -> ``memorylab.compress._tokens.count_tokens``).
The stub agents are the original's. The tests that differ on purpose, and those of the
reference's internals (its private ``_summarize``, ``_history_bytes`` and tokenizer backend), are
listed with the reason in ``differences.py``.
"""

import os
from types import SimpleNamespace
from unittest.mock import MagicMock, patch

import pytest

# The shim: ``from swarms.agents.context_compressor import ...``.
from memorylab.compress._compressor import (
    COMPRESSION_SYSTEM_PROMPT,
    COMPRESSION_USER_TEMPLATE,
    ContextCompressor,
)

# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def _make_agent(
    history: str = "Turn 1\nTurn 2",
    context_length: int | None = 1000,
    model_name: str | None = "claude-sonnet-4-5",
    agent_name: str = "TestAgent",
    tokens: int = 10,
):
    """Return a minimal stub agent that ContextCompressor can introspect."""
    short_memory = MagicMock()
    short_memory.return_history_as_string.return_value = history
    short_memory.count_history_tokens.return_value = tokens
    return SimpleNamespace(
        short_memory=short_memory,
        context_length=context_length,
        model_name=model_name,
        agent_name=agent_name,
    )


def _make_completion_response(content: str = "Compressed summary."):
    """Build a minimal litellm-style response object."""
    msg = SimpleNamespace(content=content)
    choice = SimpleNamespace(message=msg)
    return SimpleNamespace(choices=[choice])


# ---------------------------------------------------------------------------
# __init__ validation
# ---------------------------------------------------------------------------


class TestInit:
    def test_default_values(self):
        cc = ContextCompressor()
        assert cc.threshold == 0.9
        assert cc.summarizer_temperature is None
        assert cc.summarizer_max_tokens == 4000
        assert cc.summarizer_model is None

    @pytest.mark.parametrize("bad", [0.0, -0.1, 1.1, -1])
    def test_invalid_threshold_raises(self, bad):
        with pytest.raises(ValueError, match="threshold must be in"):
            ContextCompressor(threshold=bad)

    def test_threshold_of_one_is_valid(self):
        assert ContextCompressor(threshold=1.0).threshold == 1.0

    def test_custom_values_stored(self):
        cc = ContextCompressor(
            threshold=0.75,
            summarizer_model="gpt-4o",
            summarizer_temperature=0.5,
            summarizer_max_tokens=2000,
        )
        assert cc.threshold == 0.75
        assert cc.summarizer_model == "gpt-4o"
        assert cc.summarizer_temperature == 0.5
        assert cc.summarizer_max_tokens == 2000


# ---------------------------------------------------------------------------
# usage_ratio
# ---------------------------------------------------------------------------


class TestUsageRatio:
    def test_returns_zero_when_context_length_is_none(self):
        assert ContextCompressor().usage_ratio(_make_agent(context_length=None)) == 0.0

    def test_returns_zero_when_context_length_is_zero(self):
        assert ContextCompressor().usage_ratio(_make_agent(context_length=0)) == 0.0

    def test_correct_ratio(self):
        agent = _make_agent(history="hello world", context_length=1000, tokens=500)
        assert ContextCompressor().usage_ratio(agent) == pytest.approx(0.5)

    def test_ratio_above_one_possible(self):
        """Allows >1.0 so should_compress still fires when over budget."""
        agent = _make_agent(history="x" * 100, context_length=10, tokens=20)
        assert ContextCompressor().usage_ratio(agent) == pytest.approx(2.0)


# ---------------------------------------------------------------------------
# should_compress
# ---------------------------------------------------------------------------


class TestShouldCompress:
    def _cc_with_ratio(self, ratio: float, threshold: float = 0.9):
        cc = ContextCompressor(threshold=threshold)
        with patch.object(cc, "usage_ratio", return_value=ratio):
            return cc.should_compress(_make_agent())

    def test_below_threshold_returns_false(self):
        assert self._cc_with_ratio(0.5) is False

    def test_at_threshold_returns_true(self):
        assert self._cc_with_ratio(0.9) is True

    def test_above_threshold_returns_true(self):
        assert self._cc_with_ratio(0.95) is True

    def test_no_loop_mode_gating(self):
        """should_compress must not inspect agent.max_loops or loop mode."""
        cc = ContextCompressor(threshold=0.5)
        agent = _make_agent()
        agent.max_loops = "auto"
        with patch.object(cc, "usage_ratio", return_value=0.8):
            result = cc.should_compress(agent)
        assert result is True


# ---------------------------------------------------------------------------
# _summarize (the reference's private summary call)
# ---------------------------------------------------------------------------


class TestSummarize:
    def test_raises_when_no_model_configured(self):
        cc = ContextCompressor()
        agent = _make_agent(model_name=None)
        with pytest.raises(ValueError, match="No summarizer_model"):
            cc._summarize(agent, "some history")

    def test_raises_when_agent_has_no_model_name_attr(self):
        cc = ContextCompressor()
        agent = SimpleNamespace(short_memory=MagicMock(), context_length=1000)
        with pytest.raises(ValueError, match="No summarizer_model"):
            cc._summarize(agent, "some history")

    def test_uses_summarizer_model_over_agent_model(self):
        cc = ContextCompressor(summarizer_model="gpt-4o")
        agent = _make_agent(model_name="claude-sonnet-4-5")
        resp = _make_completion_response("summary text")
        with patch(
            "swarms.agents.context_compressor.completion", return_value=resp
        ) as mock_comp:
            cc._summarize(agent, "history")
        mock_comp.assert_called_once()
        _, kwargs = mock_comp.call_args
        assert kwargs["model"] == "gpt-4o"

    def test_falls_back_to_agent_model_name(self):
        cc = ContextCompressor()
        agent = _make_agent(model_name="claude-sonnet-4-5")
        resp = _make_completion_response("summary")
        with patch(
            "swarms.agents.context_compressor.completion", return_value=resp
        ) as mock_comp:
            cc._summarize(agent, "history")
        _, kwargs = mock_comp.call_args
        assert kwargs["model"] == "claude-sonnet-4-5"

    def test_passes_temperature_and_max_tokens(self):
        cc = ContextCompressor(
            summarizer_model="gpt-4o", summarizer_temperature=0.3, summarizer_max_tokens=1500
        )
        agent = _make_agent()
        resp = _make_completion_response()
        with patch(
            "swarms.agents.context_compressor.completion", return_value=resp
        ) as mock_comp:
            cc._summarize(agent, "history")
        _, kwargs = mock_comp.call_args
        assert kwargs["temperature"] == 0.3
        assert kwargs["max_tokens"] == 1500

    def test_messages_structure(self):
        cc = ContextCompressor(summarizer_model="gpt-4o")
        agent = _make_agent()
        history = "turn 1\nturn 2"
        resp = _make_completion_response()
        with patch(
            "swarms.agents.context_compressor.completion", return_value=resp
        ) as mock_comp:
            cc._summarize(agent, history)
        messages = mock_comp.call_args[1]["messages"]
        assert messages[0]["role"] == "system"
        assert messages[0]["content"] == COMPRESSION_SYSTEM_PROMPT
        assert messages[1]["role"] == "user"
        assert COMPRESSION_USER_TEMPLATE.format(history=history) == messages[1]["content"]

    def test_returns_response_content_unchanged(self):
        cc = ContextCompressor(summarizer_model="gpt-4o")
        agent = _make_agent()
        expected = "My compressed summary."
        resp = _make_completion_response(expected)
        with patch("swarms.agents.context_compressor.completion", return_value=resp):
            result = cc._summarize(agent, "history")
        assert result == expected


# ---------------------------------------------------------------------------
# compress
# ---------------------------------------------------------------------------


class TestCompress:
    def test_returns_none_for_empty_history(self):
        assert ContextCompressor().compress(_make_agent(history="")) is None

    def test_returns_none_for_whitespace_history(self):
        assert ContextCompressor().compress(_make_agent(history="   \n\t  ")) is None

    def test_calls_summarize_with_full_history(self):
        cc = ContextCompressor()
        agent = _make_agent(history="turn 1\nturn 2")
        with patch.object(cc, "_summarize", return_value="summary") as mock_s:
            cc.compress(agent)
        mock_s.assert_called_once_with(agent, "turn 1\nturn 2")

    def test_calls_compact_exactly_once(self):
        cc = ContextCompressor()
        agent = _make_agent(history="turn 1")
        with patch.object(cc, "_summarize", return_value="my summary"):
            cc.compress(agent)
        agent.short_memory.compact.assert_called_once()

    def test_compact_receives_preamble_wrapped_summary(self):
        cc = ContextCompressor()
        agent = _make_agent(history="turn 1")
        raw_summary = "Compressed result."
        with patch.object(cc, "_summarize", return_value=raw_summary):
            cc.compress(agent)
        compact_call = agent.short_memory.compact.call_args
        summary_arg = compact_call[1].get("summary") or compact_call[0][0]
        assert "[Compressed Memory Summary]" in summary_arg
        assert raw_summary in summary_arg

    def test_returns_raw_summary_without_preamble(self):
        cc = ContextCompressor()
        agent = _make_agent(history="turn 1")
        raw_summary = "Short summary."
        with patch.object(cc, "_summarize", return_value=raw_summary):
            result = cc.compress(agent)
        assert result == raw_summary


# ---------------------------------------------------------------------------
# maybe_compress
# ---------------------------------------------------------------------------


class TestMaybeCompress:
    def test_returns_none_when_should_not_compress(self):
        cc = ContextCompressor()
        agent = _make_agent()
        with (
            patch.object(cc, "should_compress", return_value=False),
            patch.object(cc, "compress") as mock_c,
        ):
            result = cc.maybe_compress(agent)
        assert result is None
        mock_c.assert_not_called()

    def test_calls_compress_when_should_compress(self):
        cc = ContextCompressor()
        agent = _make_agent()
        with (
            patch.object(cc, "should_compress", return_value=True),
            patch.object(cc, "compress", return_value="summary") as mock_c,
        ):
            result = cc.maybe_compress(agent)
        mock_c.assert_called_once_with(agent)
        assert result == "summary"

    def test_returns_none_and_does_not_propagate_on_error(self):
        cc = ContextCompressor()
        agent = _make_agent()
        with (
            patch.object(cc, "should_compress", return_value=True),
            patch.object(cc, "compress", side_effect=RuntimeError("boom")),
        ):
            result = cc.maybe_compress(agent)
        assert result is None


# ---------------------------------------------------------------------------
# Integration — real Conversation + mocked _summarize
# ---------------------------------------------------------------------------


class TestIntegration:
    def test_compress_updates_memory_md_and_archives(self, tmp_path):
        """End-to-end with a real Conversation and mocked _summarize."""
        from memorylab import Conversation

        memory_path = str(tmp_path / "MEMORY.md")
        conv = Conversation(
            system_prompt="You are a helpful assistant.",
            memory_md_path=memory_path,
            conversations_dir=str(tmp_path),
            time_enabled=False,
            token_count=False,
        )
        conv.add("User", "What is 2+2?")
        conv.add("Assistant", "It is 4.")
        conv.add("User", "What about 3+3?")
        conv.add("Assistant", "That is 6.")

        cc = ContextCompressor(threshold=0.01)  # trigger immediately
        raw_summary = "Agent discussed arithmetic: 2+2=4, 3+3=6."
        agent = SimpleNamespace(
            short_memory=conv,
            context_length=10000,
            model_name="claude-sonnet-4-5",
            agent_name="IntegrationAgent",
        )
        with patch.object(cc, "_summarize", return_value=raw_summary):
            result = cc.compress(agent)

        assert result == raw_summary
        roles = [m["role"] for m in conv.conversation_history]
        assert "System" in roles
        full_text = conv.return_history_as_string()
        assert "[Compressed Memory Summary]" in full_text
        assert raw_summary in full_text
        assert "What is 2+2?" not in full_text

        assert os.path.exists(memory_path)
        with open(memory_path, encoding="utf-8") as f:
            memory_text = f.read()
        assert "[Compressed Memory Summary]" in memory_text
        assert raw_summary in memory_text
        assert "What is 2+2?" not in memory_text
        assert "It is 4." not in memory_text
        assert "What about 3+3?" not in memory_text
        assert "That is 6." not in memory_text

        archive_dir = str(tmp_path / "archive")
        assert os.path.exists(archive_dir)
        assert any(
            f.startswith("history_") and f.endswith(".md") for f in os.listdir(archive_dir)
        )


class TestShouldCompressSkipsTokenizing:
    """should_compress tokenizes nothing while the history is far from the window."""

    @staticmethod
    def _agent(contents, context_length):
        history = [
            {"role": "User", "content": text, "timestamp": "2026-10-02T12:00:00.000000"}
            for text in contents
        ]
        short_memory = MagicMock()
        short_memory.conversation_history = history
        short_memory.return_history_as_string.return_value = "\n\n".join(
            f"[{m['timestamp']}] {m['role']}: {m['content']}" for m in history
        )
        return SimpleNamespace(short_memory=short_memory, context_length=context_length)

    def test_far_below_the_limit_counts_nothing(self):
        agent = self._agent(["hello"] * 10, context_length=100_000)
        assert ContextCompressor().should_compress(agent) is False
        agent.short_memory.count_history_tokens.assert_not_called()
        agent.short_memory.return_history_as_string.assert_not_called()

    def test_near_the_limit_uses_the_exact_count(self):
        agent = self._agent(["word " * 200], context_length=1_000)
        agent.short_memory.count_history_tokens.return_value = 950
        assert ContextCompressor().should_compress(agent) is True
        agent.short_memory.count_history_tokens.assert_called_once()

    def test_byte_size_bounds_the_real_token_count(self):
        from memorylab.compress._tokens import count_tokens

        agent = self._agent(
            ["plain ascii text " * 50, "naïve café 東京 🚀 " * 50], context_length=1
        )
        text = agent.short_memory.return_history_as_string()
        assert ContextCompressor._history_bytes(
            agent.short_memory.conversation_history
        ) >= count_tokens(text)


class TestUsageRatioReusesMessageCounts:
    """Usage checks on a real Conversation tokenize only new messages."""

    CONTEXT_LENGTH = 100_000

    def _agent(self, tmp_path):
        from memorylab import Conversation

        conv = Conversation(conversations_dir=str(tmp_path), context_length=self.CONTEXT_LENGTH)
        for i in range(20):
            conv.add("User", f"message {i} " + "word " * 50)
        return SimpleNamespace(short_memory=conv, context_length=self.CONTEXT_LENGTH)

    def test_second_check_tokenizes_only_the_new_message(self, tmp_path):
        """A check after one new message tokenizes just that message."""
        from swarms.utils import llm_backend

        agent = self._agent(tmp_path)
        cc = ContextCompressor()
        cc.usage_ratio(agent)
        agent.short_memory.add("User", "the newest message")

        with patch(
            "swarms.utils.llm_backend.encode", wraps=llm_backend.backend_module().encode
        ) as encode:
            cc.usage_ratio(agent)

        encoded = [call.kwargs["text"] for call in encode.call_args_list]
        assert encoded == [agent.short_memory._format_messages()[-1]]

    def test_ratio_never_undercounts(self, tmp_path):
        """The count is at most one token per message above the exact count."""
        from memorylab.compress._tokens import count_tokens

        agent = self._agent(tmp_path)
        conv = agent.short_memory
        exact = count_tokens(conv.return_history_as_string(), conv.tokenizer_model_name)
        estimate = round(ContextCompressor().usage_ratio(agent) * self.CONTEXT_LENGTH)
        messages = len(conv.conversation_history)
        assert exact <= estimate <= exact + messages
