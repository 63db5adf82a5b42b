"""Write a LangChain deepagents run, offline, for memorylab's deepagents loader to read.

Run with the Python of a venv where deepagents 0.7.32 is installed (no network, no key)::

    /tmp/memorylab-deepagents-0.7.32/bin/python generate.py OUT [--turns 30] [--transcript PATH]

It runs ``deepagents.create_deep_agent`` with its own middleware stack (the default
``SummarizationMiddleware`` included, as ``create_summarization_middleware`` configures it for a
model whose profile gives ``max_input_tokens``: trigger at 0.85 of it, keep 0.10) on a fake chat
model (a ``GenericFakeChatModel`` that replays the assistant turns and tool calls of a bundled
memorylab transcript, and answers the middleware's summary prompt with a summary of the messages
it is given). The model's profile gives a small context window, so the summarization fires several
times over the first ``--turns`` user turns. It writes to OUT:

- ``checkpoints.sqlite``: the checkpointer's own database, where langgraph-checkpoint-sqlite is
  installed in that venv (``pip install langgraph-checkpoint-sqlite==3.1.2``): the run goes
  through its ``SqliteSaver`` (tables ``checkpoints`` and ``writes``, each blob serialized by
  langgraph's ``JsonPlusSerializer``), as a user's persistent checkpointer keeps it. Without it,
  the run goes through langgraph's ``InMemorySaver`` and no database is written.
- ``thread.json``: the same run's checkpoints, read back from the saver (either one) through the
  public ``get_state_history`` and written as JSON: the thread's messages (``messages_to_dict``),
  each checkpoint's time, step and message count, and each ``_summarization_event`` the state
  held (cutoff index, created-at index, the summary message, the offload path).
- ``backend/conversation_history/session_<hex>.md``: the history the middleware offloaded at each
  summary, written by deepagents' ``FilesystemBackend`` (rooted at ``OUT/backend``).
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from deepagents import create_deep_agent
from deepagents.backends import FilesystemBackend
from deepagents.middleware.summarization import compute_summarization_defaults
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    message_to_dict,
    messages_to_dict,
)
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

try:  # the persistent checkpointer a user runs with; optional (the docstring)
    from langgraph.checkpoint.sqlite import SqliteSaver
except ImportError:
    SqliteSaver = None

HERE = Path(__file__).resolve().parent
TRANSCRIPT = HERE.parents[1] / "transcripts" / "checkout-bug-hunt.jsonl"
MAX_INPUT_TOKENS = 6_000
"""The fake model's context window: deepagents' own system prompt and tool schemas take about
6,000 tokens of it, so the trigger (0.85) leaves a few thousand for the conversation."""
MODEL_NAME = "fake-transcript-replay"

# The outputs the transcript's tool calls returned, handed back in order by the `shell` tool.
_TOOL_OUTPUTS: list[str] = []


@tool
def shell(command: str) -> str:
    """Run a shell command in the project and return its output."""
    return _TOOL_OUTPUTS.pop(0) if _TOOL_OUTPUTS else "(no output)"


class TranscriptModel(GenericFakeChatModel):
    """The fake model: the next scripted reply, or a summary when the middleware asks for one
    (its prompt holds the messages to summarize between ``<messages>`` tags)."""

    summaries: int = 0

    def bind_tools(self, tools: Any, **kwargs: Any) -> TranscriptModel:
        return self  # the replies are scripted: the tools are not needed to choose them

    def _generate(self, messages: list[BaseMessage], stop: Any = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        prompt = messages[-1].text if messages else ""
        if "<messages>" in prompt:
            self.summaries += 1
            reply = AIMessage(content=summarize(prompt, self.summaries))
        else:
            reply = next(self.messages)
            assert isinstance(reply, AIMessage)
            reply = reply.model_copy()
        # What a provider reports: the input and output tokens of this call (here approximated
        # the way the middleware counts, chars / 4, since the model is a fake).
        given = count_tokens_approximately(messages)
        made = count_tokens_approximately([reply])
        reply.usage_metadata = {"input_tokens": given, "output_tokens": made,
                                "total_tokens": given + made}
        reply.response_metadata = {"model_name": MODEL_NAME}
        return ChatResult(generations=[ChatGeneration(message=reply)])


def summarize(prompt: str, number: int) -> str:
    """A summary of the messages in the prompt: each user request's first sentence (what a
    summarizer keeps of a conversation, deterministically)."""
    body = prompt.split("<messages>", 1)[1].rsplit("</messages>", 1)[0]
    asks = re.findall(r"<message type=\"human\">\s*(.*?)\s*</message>", body, re.S)
    firsts = [re.split(r"(?<=[.?!])\s", ask.strip(), maxsplit=1)[0] for ask in asks
              if not ask.startswith("You are in the middle")]
    lines = [f"- The user asked: {first}" for first in firsts]
    return f"Summary {number} of the conversation so far.\n" + "\n".join(lines or ["- (nothing)"])


def scripted_turns(path: Path, turns: int) -> tuple[list[str], list[AIMessage], list[str]]:
    """The first ``turns`` user messages of a transcript, the model's replies that answer them
    (an assistant message followed by a tool result becomes a ``shell`` tool call), and the tool
    outputs in order."""
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    messages = [line for line in lines if line.get("type") == "message"]
    users: list[str] = []
    replies: list[AIMessage] = []
    outputs: list[str] = []
    pending: list[str] = []  # assistant text not yet sent

    def close_turn() -> None:
        if users:
            replies.append(AIMessage(content="\n\n".join(pending) or "Done."))
        pending.clear()

    for index, message in enumerate(messages):
        role, content = message["role"], message["content"]
        if role == "user":
            if len(users) == turns:
                break
            close_turn()
            users.append(content)
        elif not users:
            continue
        elif role == "assistant":
            pending.append(content)
        elif role == "tool":
            command = re.search(r"`([^`]+)`", pending[-1] if pending else "")
            call_id = f"call_{index}"
            replies.append(AIMessage(
                content="\n\n".join(pending),
                tool_calls=[{"name": "shell", "id": call_id, "type": "tool_call",
                             "args": {"command": command.group(1) if command else "true"}}],
            ))
            pending.clear()
            outputs.append(content)
    close_turn()
    return users, replies, outputs


def checkpoints(agent: Any, config: dict[str, Any]) -> tuple[list[dict[str, Any]], list[Any]]:
    """Each checkpoint the saver holds for the thread, oldest first, and each distinct
    summarization event the state held."""
    rows: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    for snapshot in reversed(list(agent.get_state_history(config))):
        event = snapshot.values.get("_summarization_event")
        number = None
        if event is not None:
            stored = {
                "cutoff_index": event["cutoff_index"],
                "created_at_index": event.get("created_at_index"),
                "file_path": event["file_path"],
                "summary_message": message_to_dict(event["summary_message"]),
            }
            if not events or events[-1] != stored:
                events.append(stored)
            number = len(events) - 1
        rows.append({
            "checkpoint_id": snapshot.config["configurable"]["checkpoint_id"],
            "created_at": snapshot.created_at,
            "step": snapshot.metadata.get("step") if snapshot.metadata else None,
            "source": snapshot.metadata.get("source") if snapshot.metadata else None,
            "messages": len(snapshot.values.get("messages", [])),
            "summarization_event": number,
            "session_id": snapshot.values.get("_summarization_session_id"),
        })
    return rows, events


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--transcript", type=Path, default=TRANSCRIPT)
    args = parser.parse_args()
    users, replies, outputs = scripted_turns(args.transcript, args.turns)
    _TOOL_OUTPUTS[:] = outputs
    model = TranscriptModel(messages=iter(replies), profile={"max_input_tokens": MAX_INPUT_TOKENS})
    backend = FilesystemBackend(root_dir=args.out / "backend", virtual_mode=True)
    args.out.mkdir(parents=True, exist_ok=True)
    database = args.out / "checkpoints.sqlite"
    database.unlink(missing_ok=True)
    if SqliteSaver is not None:
        # check_same_thread=False: langgraph runs the graph's steps on a thread pool.
        connection = sqlite3.connect(database, check_same_thread=False)
        saver: Any = SqliteSaver(connection)
        version = metadata.version("langgraph-checkpoint-sqlite")
        saver_name = (f"langgraph-checkpoint-sqlite {version} SqliteSaver (checkpoints.sqlite); "
                      "its state history written as JSON")
    else:
        connection = None
        saver = InMemorySaver()
        saver_name = ("langgraph InMemorySaver, its state history written as JSON "
                      "(langgraph-checkpoint-sqlite is not installed)")
    agent = create_deep_agent(model=model, tools=[shell], backend=backend, checkpointer=saver)
    thread = "memorylab-deepagents-sample"
    config: dict[str, Any] = {"configurable": {"thread_id": thread}, "recursion_limit": 200}
    for text in users:
        agent.invoke({"messages": [HumanMessage(content=text)]}, config)
    state = agent.get_state(config)
    rows, events = checkpoints(agent, config)
    defaults = compute_summarization_defaults(model)
    packages = ["deepagents", "langchain", "langchain-core", "langgraph", "langgraph-checkpoint"]
    if SqliteSaver is not None:
        packages.append("langgraph-checkpoint-sqlite")
    thread_file: dict[str, Any] = {
        "deepagents_thread": 1,
        "written_by": {
            "generator": "data/foreign/deepagents/generate.py",
            "packages": {name: metadata.version(name) for name in packages},
            "checkpointer": saver_name,
            "transcript": args.transcript.name,
            "turns": len(users),
        },
        "thread_id": thread,
        "model": {"name": MODEL_NAME, "profile": model.profile},
        "summarization": {"trigger": defaults["trigger"], "keep": defaults["keep"],
                          "token_counter": "count_tokens_approximately"},
        "summaries_made": model.summaries,
        "checkpoints": rows,
        "summarization_events": events,
        "messages": messages_to_dict(state.values["messages"]),
    }
    (args.out / "thread.json").write_text(json.dumps(thread_file, indent=1) + "\n",
                                          encoding="utf-8")
    if connection is not None:
        connection.close()
    print(f"{len(users)} turns, {len(state.values['messages'])} messages, "
          f"{model.summaries} summaries, {len(events)} events -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
