"""An agent loop written for the reference framework (swarms 16.0.3), as its users write one.

It adds each turn, counts tokens, lets ``ContextCompressor`` compress when the history nears the
window, and reads ``get_str()``. ``test_drop_in.py`` runs this file unchanged under swarms and,
with only its import lines swapped, under memorylab. The summarizer is ``openai/summarizer``,
reached through ``OPENAI_API_BASE`` (a local fake server in the test).

Usage: ``python reference_agent_loop.py FOLDER`` prints one JSON object.
"""

import json
import sys
from types import SimpleNamespace

from swarms.agents.context_compressor import ContextCompressor
from swarms.structs.conversation import Conversation

WINDOW = 600


def main(folder: str) -> None:
    conversation = Conversation(
        system_prompt="You are a research assistant.",
        memory_md_path=f"{folder}/MEMORY.md",
        conversations_dir=f"{folder}/conversations",
        time_enabled=True,
        context_length=WINDOW,
    )
    agent = SimpleNamespace(
        short_memory=conversation,
        context_length=WINDOW,
        model_name="openai/summarizer",
        agent_name="Researcher",
    )
    compressor = ContextCompressor(threshold=0.5)
    summaries, peaks = [], []
    for turn in range(1, 13):
        conversation.add("User", f"Question {turn}: what did experiment {turn} measure? " + "Details. " * 12)
        peaks.append(conversation.count_history_tokens())
        summary = compressor.maybe_compress(agent)  # before the model call, as the Agent does
        if summary:
            summaries.append(summary)
        conversation.add("Researcher", f"Experiment {turn} measured a latency of {turn * 7} ms.")
    result = {
        "summaries": summaries,
        "peak_tokens": max(peaks),
        "tokens": conversation.count_history_tokens(),
        "history": conversation.get_str(),
        "last": conversation.get_final_message_content(),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1])
