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
from .prompt_cache import PromptCacheServer, prompt_words

__all__ = [
    "Behavior",
    "FakeOpenAIServer",
    "FakeRequest",
    "HTTPError",
    "PromptCacheServer",
    "Reply",
    "ToolCall",
    "ToolCallReply",
    "closed_base_url",
    "closed_port",
    "prompt_words",
    "run_off_main_thread",
]
