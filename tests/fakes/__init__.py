"""Reusable fakes for memorylab's tests: a local OpenAI-compatible server."""

from .openai_server import (
    Behavior,
    FakeOpenAIServer,
    FakeRequest,
    HTTPError,
    Reply,
    ToolCall,
    ToolCallReply,
    closed_base_url,
    closed_port,
    run_off_main_thread,
)

__all__ = [
    "Behavior",
    "FakeOpenAIServer",
    "FakeRequest",
    "HTTPError",
    "Reply",
    "ToolCall",
    "ToolCallReply",
    "closed_base_url",
    "closed_port",
    "run_off_main_thread",
]
