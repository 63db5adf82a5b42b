"""The reusable fake OpenAI-compatible server (tests/fakes/openai_server.py)."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from fakes import (
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


def post(
    url: str, body: dict[str, Any], timeout: float = 60.0
) -> tuple[int, dict[str, str], bytes]:
    data = json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, headers={"Content-Type": "application/json", "Authorization": "Bearer x"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def chat(
    server: FakeOpenAIServer, text: str = "hi", **extra: Any
) -> tuple[int, dict[str, str], Any]:
    body = {"model": "fake-model", "messages": [{"role": "user", "content": text}], **extra}
    status, headers, raw = post(server.base_url + "/chat/completions", body)
    if headers.get("Content-Type") == "text/event-stream":
        return status, headers, raw.decode()
    return status, headers, json.loads(raw)


def test_text_reply_has_openai_shape_and_usage() -> None:
    with FakeOpenAIServer("hello there") as server:
        assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
        status, _, payload = chat(server, "what's up?")
        assert status == 200
        assert payload["object"] == "chat.completion"
        choice = payload["choices"][0]
        assert choice["message"] == {"role": "assistant", "content": "hello there"}
        assert choice["finish_reason"] == "stop"
        usage = payload["usage"]
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
        assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
        assert server.request_count == 1
        assert server.requests[0]["messages"][0]["content"] == "what's up?"
        assert server.request_headers[0]["authorization"] == "Bearer x"
        assert server.paths == ["/v1/chat/completions"]


def test_usage_can_be_set_and_empty_content_is_null() -> None:
    with FakeOpenAIServer(Reply(None, prompt_tokens=7, completion_tokens=0)) as server:
        _, _, payload = chat(server)
    assert payload["choices"][0]["message"]["content"] is None
    assert payload["usage"] == {"prompt_tokens": 7, "completion_tokens": 0, "total_tokens": 7}


def test_queue_then_default_then_exhausted() -> None:
    with FakeOpenAIServer(["one", "two"], default="again") as server:
        texts = [chat(server)[2]["choices"][0]["message"]["content"] for _ in range(4)]
    assert texts == ["one", "two", "again", "again"]
    with FakeOpenAIServer(["only"]) as server:
        assert chat(server)[0] == 200
        status, _, payload = chat(server)
    assert status == 500
    assert "exhausted" in payload["error"]["message"]


def test_push_extends_the_script() -> None:
    with FakeOpenAIServer("base") as server:
        server.push("pushed")
        texts = [chat(server)[2]["choices"][0]["message"]["content"] for _ in range(2)]
    assert texts == ["pushed", "base"]


def test_callable_script_sees_each_request() -> None:
    seen: list[FakeRequest] = []

    def script(request: FakeRequest) -> str:
        seen.append(request)
        return f"reply {request.index}: {request.body['messages'][-1]['content']}"

    with FakeOpenAIServer(script) as server:
        replies = [chat(server, f"q{i}")[2]["choices"][0]["message"]["content"] for i in range(3)]
    assert replies == ["reply 0: q0", "reply 1: q1", "reply 2: q2"]
    assert [r.index for r in seen] == [0, 1, 2]


def test_tool_call_reply() -> None:
    calls = [ToolCall("search", {"query": "memorylab"}, id="call_a"), ToolCall("noop", "{}")]
    with FakeOpenAIServer(ToolCallReply(calls)) as server:
        _, _, payload = chat(server)
    choice = payload["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    first, second = choice["message"]["tool_calls"]
    assert first == {
        "id": "call_a",
        "type": "function",
        "function": {"name": "search", "arguments": '{"query": "memorylab"}'},
    }
    assert second["id"] == "call_1" and second["function"]["arguments"] == "{}"


@pytest.mark.parametrize("status", [400, 401, 429, 500, 503])
def test_http_errors(status: int) -> None:
    with FakeOpenAIServer(HTTPError(status, "nope")) as server:
        got, _, payload = chat(server)
        assert server.request_count == 1
    assert got == status
    assert payload["error"]["message"] == "nope"


def test_retry_after_header() -> None:
    with FakeOpenAIServer([HTTPError(429, retry_after=2), HTTPError(429, retry_after=0.25)]) as s:
        _, first, _ = chat(s)
        _, second, _ = chat(s)
    assert first["Retry-After"] == "2"
    assert second["Retry-After"] == "0.25"


def test_delay_and_prompt_stop() -> None:
    with FakeOpenAIServer(Reply("late", delay=0.3)) as server:
        started = time.perf_counter()
        assert chat(server)[0] == 200
        assert time.perf_counter() - started >= 0.3
    # A reply an hour away: stopping the server does not wait for it. No clock: a stop that
    # waited for the reply, or a client that kept waiting for its own 600 s timeout, would still
    # be running at the 120 s joins (hang guards far past a loaded machine's slowness).
    server = FakeOpenAIServer(Reply("never", delay=3600)).start()
    url = server.base_url + "/chat/completions"
    errors: list[BaseException] = []

    def client() -> None:
        try:
            post(url, {"messages": []}, timeout=600)
        except OSError as error:  # the connection closes without an answer
            errors.append(error)

    thread = threading.Thread(target=client, daemon=True)
    thread.start()
    while server.request_count == 0:
        time.sleep(0.01)
    stopper = threading.Thread(target=server.stop, daemon=True)
    stopper.start()
    stopper.join(timeout=120)
    assert not stopper.is_alive(), "stop() waits for a delayed reply"
    thread.join(timeout=120)
    assert not thread.is_alive(), "the client still waits for an answer after stop()"
    assert len(errors) == 1


def test_streaming_events() -> None:
    with FakeOpenAIServer("streamed text") as server:
        status, headers, text = chat(server, stream=True, stream_options={"include_usage": True})
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    events = [line[len("data: ") :] for line in text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert chunks[0]["choices"][0]["delta"]["content"] == "streamed text"
    assert chunks[1]["choices"][0]["finish_reason"] == "stop"
    assert "usage" in chunks[2]


def test_counts_concurrent_requests() -> None:
    with FakeOpenAIServer(Reply("ok", delay=0.05)) as server:
        threads = [threading.Thread(target=chat, args=(server, f"q{i}")) for i in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)  # a hang guard
        assert server.request_count == 12
        contents = sorted(r["messages"][0]["content"] for r in server.requests)
    assert contents == sorted(f"q{i}" for i in range(12))


def test_other_routes_and_bad_json() -> None:
    with FakeOpenAIServer() as server:
        status, _, _ = post(f"http://127.0.0.1:{server.port}/v1/embeddings", {})
        assert status == 404
        request = urllib.request.Request(
            server.base_url + "/chat/completions", data=b"{not json", method="POST"
        )
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=60)
        assert caught.value.code == 400
        caught.value.close()
        assert server.request_count == 0
        with urllib.request.urlopen(server.base_url + "/models", timeout=60) as response:
            assert json.loads(response.read())["data"][0]["id"] == "fake-model"


def test_closed_port_refuses_connections() -> None:
    port = closed_port()
    with socket.socket() as sock, pytest.raises(ConnectionRefusedError):
        sock.connect(("127.0.0.1", port))
    assert closed_base_url().startswith("http://127.0.0.1:")


def test_not_running() -> None:
    server = FakeOpenAIServer()
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.base_url
    server.stop()  # stopping a server that never started is harmless
    with server, pytest.raises(RuntimeError, match="already running"):
        server.start()


def test_litellm_roundtrip_with_tool_calls() -> None:
    import litellm

    reply = ToolCallReply([ToolCall("get_weather", {"city": "Oslo"})], text=None)
    with FakeOpenAIServer([reply, "It is sunny."]) as server:
        first = run_off_main_thread(
            litellm.completion,
            model="openai/fake-model",
            api_base=server.base_url,
            api_key="x",
            messages=[{"role": "user", "content": "weather?"}],
            tools=[
                {
                    "type": "function",
                    "function": {
                        "name": "get_weather",
                        "parameters": {"type": "object", "properties": {"city": {}}},
                    },
                }
            ],
            max_retries=0,
            timeout=60,  # a hang guard
        )
        call = first.choices[0].message.tool_calls[0]
        assert first.choices[0].finish_reason == "tool_calls"
        assert call.function.name == "get_weather"
        assert json.loads(call.function.arguments) == {"city": "Oslo"}
        second = run_off_main_thread(
            litellm.completion,
            model="openai/fake-model",
            api_base=server.base_url,
            api_key="x",
            messages=[{"role": "user", "content": "and now?"}],
            max_retries=0,
            timeout=60,  # a hang guard
        )
        assert second.choices[0].message.content == "It is sunny."
        assert second.usage.total_tokens > 0
        assert server.requests[0]["tools"][0]["function"]["name"] == "get_weather"
        assert server.request_count == 2
