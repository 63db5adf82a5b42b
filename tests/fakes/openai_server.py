"""A local, OpenAI-compatible chat-completions server for offline tests and benchmarks.

``FakeOpenAIServer`` listens on ``127.0.0.1`` (a free port chosen by the OS) in a daemon thread
and answers ``POST /v1/chat/completions`` (and ``/chat/completions``) from a *script*:

- a single behavior: used for every request (``"ok"``, ``HTTPError(500)`` ...);
- a list/tuple of behaviors: consumed in order, then ``default`` for every later request (without
  a ``default`` an exhausted script answers HTTP 500 "script exhausted", which a test notices);
- a callable ``(FakeRequest) -> behavior``: decides per request (echo, count, inspect).

A behavior is a reply text (``str``), a ``Reply`` (text or ``None``, usage, delay; ``byte_delay``
sends the body one byte at a time, a server that answers at once but trickles its reply), a
``ToolCallReply`` (OpenAI ``message.tool_calls`` with ``finish_reason="tool_calls"``) or an
``HTTPError`` (status code, optional ``Retry-After`` header, delay). Streaming requests
(``"stream": true``) get server-sent events with the same content.

Usage: ``prompt_tokens`` and ``completion_tokens`` (default: about four characters a token), and,
only where given (a provider that says nothing sends none of them), OpenAI's
``prompt_tokens_details.cached_tokens`` and ``completion_tokens_details.reasoning_tokens``
(``cached_tokens``, ``reasoning_tokens``) and Anthropic's ``cache_read_input_tokens`` and
``cache_creation_input_tokens`` (the fields of those names).

Every request body (parsed JSON) is recorded in ``.requests``, thread-safely; ``.most_waiting``
is the most requests that were waiting out their delay at one time (how far a client overlapped). Delays wait on an
event that ``__exit__`` sets, so stopping the server never waits for a slow reply.

Usage with litellm::

    with FakeOpenAIServer(["first", HTTPError(429, retry_after=0), "second"]) as server:
        litellm.completion(model="openai/fake-model", api_base=server.base_url, api_key="x",
                           messages=[...], max_retries=0, timeout=5)

``GET /v1/models`` lists one model, ``model=`` (default ``fake-model``; ``models_endpoint=False``:
404, a server that does not say what it serves); ``props=`` also answers llama-server's
``GET /props`` (``{"model_path": ...}``) with that mapping.

``closed_port()`` returns a port nobody listens on (for "connection refused").

``run_off_main_thread(fn, ...)``: call a *synchronous* ``litellm.completion`` from a test through
it. On the main thread litellm's timing hook calls ``asyncio.get_event_loop()``, which creates
and installs an event loop nobody closes; a later ``asyncio.run()`` drops it and pytest (warnings
are errors) fails some unrelated test with "ResourceWarning: unclosed event loop".
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

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

_CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
_MAX_BODY = 64 * 1024 * 1024


@dataclass(frozen=True)
class Reply:
    """An assistant message. ``text=None`` answers ``content: null`` (an empty reply)."""

    text: str | None = "ok"
    delay: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str = "stop"
    byte_delay: float = 0.0
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None


@dataclass(frozen=True)
class ToolCall:
    """One OpenAI tool call; ``arguments`` may be a mapping (JSON-encoded) or a JSON string."""

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True)
class ToolCallReply:
    """An assistant message asking for tool calls (``finish_reason="tool_calls"``)."""

    calls: Sequence[ToolCall]
    text: str | None = None
    delay: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None


@dataclass(frozen=True)
class HTTPError:
    """An HTTP error answer in OpenAI's error format, e.g. ``HTTPError(429, retry_after=0)``."""

    status: int
    message: str | None = None
    retry_after: float | None = None
    delay: float = 0.0
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class FakeRequest:
    """What a callable script sees: the 0-based request index, the path and the parsed body."""

    index: int
    path: str
    body: Mapping[str, Any]
    headers: Mapping[str, str]


T = TypeVar("T")

Behavior = str | Reply | ToolCallReply | HTTPError
Script = Behavior | Iterable[Behavior] | Callable[[FakeRequest], Behavior]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
}


def closed_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago and has no listener."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def run_off_main_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` on a short-lived thread; its result or its exception."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as error:
            box["error"] = error

    thread = threading.Thread(target=target, name="fake-openai-client", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value


def closed_base_url() -> str:
    """An OpenAI-style base URL on which every connection is refused."""
    return f"http://127.0.0.1:{closed_port()}/v1"


def _rough_tokens(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


def _prompt_text(body: Mapping[str, Any]) -> str:
    parts: list[str] = []
    for message in body.get("messages") or ():
        if isinstance(message, Mapping):
            content = message.get("content")
            parts.append(content if isinstance(content, str) else json.dumps(content))
    return "\n".join(parts)


class FakeOpenAIServer:
    """A scripted OpenAI-compatible server on 127.0.0.1; use it as a context manager."""

    def __init__(
        self,
        script: Script = "ok",
        *,
        default: Behavior | None = None,
        model: str | None = None,
        props: Mapping[str, Any] | None = None,
        models_endpoint: bool = True,
    ) -> None:
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._callable: Callable[[FakeRequest], Behavior] | None = None
        self._always: Behavior | None = None
        self._queue: deque[Behavior] = deque()
        if isinstance(script, str | Reply | ToolCallReply | HTTPError):
            self._always = script
        elif callable(script):
            self._callable = script
        else:
            self._queue.extend(script)
        self.default = default
        self.model = model
        self.props = props  # llama-server's GET /props (model_path ...), served when given
        self.models_endpoint = models_endpoint  # False: GET /v1/models answers 404
        self._requests: list[dict[str, Any]] = []
        self._headers: list[dict[str, str]] = []
        self._paths: list[str] = []
        self._waiting = 0
        self.most_waiting = 0  # the most requests waiting out their delay at one time
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> FakeOpenAIServer:
        if self._httpd is not None:
            raise RuntimeError("FakeOpenAIServer is already running")
        handler = type("_BoundHandler", (_Handler,), {"fake": self})
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        httpd.daemon_threads = True
        self._httpd = httpd
        self._stopping.clear()
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        # A later fake in this process may get this port again, serving another model, and
        # memorylab asks a server what it serves once per process (memorylab.llm.served_model):
        # forget this one's answer, as llm.local_server does when its server stops (a stale
        # answer made test_several_api_bases_are_checked see "fake-model" where "qwen" was).
        from memorylab import llm

        llm._SAID.pop(self.base_url.rstrip("/"), None)
        httpd, self._httpd = self._httpd, None
        self._stopping.set()  # wake up every delayed reply
        httpd.shutdown()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- inspection --------------------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("FakeOpenAIServer is not running; use it in a `with` block")
        port: int = self._httpd.server_address[1]
        return port

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``: pass it as litellm's ``api_base``."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """A copy of every request body received so far, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def request_headers(self) -> list[dict[str, str]]:
        with self._lock:
            return list(self._headers)

    @property
    def paths(self) -> list[str]:
        with self._lock:
            return list(self._paths)

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self._requests)

    def push(self, *behaviors: Behavior) -> None:
        """Append behaviors to the queue (also turns a single-behavior script into a queue)."""
        with self._lock:
            if self._always is not None:
                self.default, self._always = self._always, None
            self._queue.extend(behaviors)

    # -- request handling (called from handler threads) ----------------------------------------
    def _record(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> Behavior:
        with self._lock:
            index = len(self._requests)
            self._requests.append(body)
            self._headers.append(headers)
            self._paths.append(path)
            if self._always is not None:
                return self._always
            if self._callable is None:
                if self._queue:
                    return self._queue.popleft()
                if self.default is not None:
                    return self.default
                return HTTPError(500, f"FakeOpenAIServer: script exhausted at request {index}")
            decide = self._callable
        return decide(FakeRequest(index=index, path=path, body=body, headers=headers))

    def _wait(self, seconds: float) -> None:
        with self._lock:
            self._waiting += 1
            self.most_waiting = max(self.most_waiting, self._waiting)
        try:
            if seconds > 0:
                self._stopping.wait(seconds)
        finally:
            with self._lock:
                self._waiting -= 1

    def _completion(
        self, body: Mapping[str, Any], behavior: Reply | ToolCallReply
    ) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": behavior.text}
        finish = "tool_calls"
        if isinstance(behavior, ToolCallReply):
            message["tool_calls"] = [
                {
                    "id": call.id or f"call_{i}",
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": call.arguments
                        if isinstance(call.arguments, str)
                        else json.dumps(dict(call.arguments)),
                    },
                }
                for i, call in enumerate(behavior.calls)
            ]
        else:
            finish = behavior.finish_reason
        prompt = behavior.prompt_tokens
        if prompt is None:
            prompt = _rough_tokens(_prompt_text(body))
        completion = behavior.completion_tokens
        if completion is None:
            completion = _rough_tokens(behavior.text or "") + 8 * len(message.get("tool_calls", ()))
        usage: dict[str, Any] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        if behavior.cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": behavior.cached_tokens}
        if behavior.reasoning_tokens is not None:
            usage["completion_tokens_details"] = {"reasoning_tokens": behavior.reasoning_tokens}
        for key in ("cache_read_input_tokens", "cache_creation_input_tokens"):
            if getattr(behavior, key) is not None:
                usage[key] = getattr(behavior, key)
        return {
            "id": f"chatcmpl-fake-{self.request_count}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model or str(body.get("model", "fake-model")),
            "choices": [
                {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
            ],
            "usage": usage,
        }


def _stream_events(completion: Mapping[str, Any], include_usage: bool) -> list[dict[str, Any]]:
    """The chat.completion.chunk events for one completion: role+content, then the finish."""
    choice = completion["choices"][0]
    message = choice["message"]
    base = {k: completion[k] for k in ("id", "created", "model")}
    base["object"] = "chat.completion.chunk"
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    if "tool_calls" in message:
        delta["tool_calls"] = [dict(call, index=i) for i, call in enumerate(message["tool_calls"])]
    events = [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]},
    ]
    if include_usage:
        events.append({**base, "choices": [], "usage": completion["usage"]})
    return events


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAIServer  # set on the per-server subclass
    server_version = "FakeOpenAI/1.0"

    def log_message(self, format: str, *args: Any) -> None:  # silence the access log
        return

    def _send_json(
        self,
        status: int,
        payload: Any,
        headers: Mapping[str, str] | None = None,
        byte_delay: float = 0.0,
    ) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if byte_delay <= 0:
            self.wfile.write(data)
            return
        self.wfile.flush()
        for index in range(len(data)):  # a trickle: one byte, then a pause
            if self.fake._stopping.is_set():
                return
            self.wfile.write(data[index : index + 1])
            self.wfile.flush()
            self.fake._wait(byte_delay)

    def do_GET(self) -> None:
        path = self.path.rstrip("/")
        if path in ("/v1/models", "/models") and self.fake.models_endpoint:
            model = self.fake.model or "fake-model"
            self._send_json(200, {"object": "list", "data": [{"id": model, "object": "model"}]})
        elif path == "/props" and self.fake.props is not None:
            self._send_json(200, dict(self.fake.props))
        else:
            self._send_json(
                404, {"error": {"message": f"no route {self.path}", "type": "not_found"}}
            )

    def do_POST(self) -> None:
        # A client that gave up (timeout) has closed the connection: nothing to answer.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._handle_post()

    def _handle_post(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(min(length, _MAX_BODY)) if length > 0 else b""
        if path not in _CHAT_PATHS:
            self._send_json(404, {"error": {"message": f"no route {path}", "type": "not_found"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError as exc:
            self._send_json(400, {"error": {"message": f"invalid JSON: {exc}", "type": "invalid"}})
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        behavior = self.fake._record(path, body, headers)
        if isinstance(behavior, str):
            behavior = Reply(behavior)
        self.fake._wait(behavior.delay)
        if self.fake._stopping.is_set():
            return
        if isinstance(behavior, HTTPError):
            self._send_error(behavior)
            return
        completion = self.fake._completion(body, behavior)
        if body.get("stream"):
            options = body.get("stream_options") or {}
            self._send_stream(_stream_events(completion, bool(options.get("include_usage"))))
        else:
            trickle = behavior.byte_delay if isinstance(behavior, Reply) else 0.0
            self._send_json(200, completion, byte_delay=trickle)

    def _send_error(self, error: HTTPError) -> None:
        headers = dict(error.headers)
        if error.retry_after is not None:
            value = error.retry_after
            headers["Retry-After"] = str(int(value)) if float(value).is_integer() else str(value)
        payload = {
            "error": {
                "message": error.message or f"fake error {error.status}",
                "type": _ERROR_TYPES.get(error.status, "server_error"),
                "param": None,
                "code": str(error.status),
            }
        }
        self._send_json(error.status, payload, headers)

    def _send_stream(self, events: list[dict[str, Any]]) -> None:
        data = b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events) + b"data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
