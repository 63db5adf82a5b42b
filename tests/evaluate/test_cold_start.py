"""A comparison as the first call of a fresh process (issue 30): litellm, which takes seconds to
import, is imported on a worker thread while the comparison's event loop keeps running."""

from __future__ import annotations

import json
import subprocess
import sys

# A fresh process: a local summarizer that ticks every 10 ms (a heartbeat of the comparison's
# event loop) runs beside a LiteLLM summarizer (a mock reply: no network) until litellm is
# imported, and reports the longest gap between its ticks. Named first, it starts before the
# model's unit, so an import inside the loop would show as one gap as long as the import.
HEARTBEAT = r"""
import asyncio, json, sys, time
from memorylab import LiteLLMSummarizer, llm
from memorylab.compress._base import BaseSummarizer, Summary
from memorylab.evaluate import Case, compare_summarizers

seen = {}

class Heartbeat(BaseSummarizer):
    name = "heartbeat"

    async def asummarize(self, messages, *, max_tokens=None):
        start = last = time.perf_counter()
        gaps = []
        while not llm.import_litellm.cache_info().currsize and last - start < 300:
            await asyncio.sleep(0.01)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now
        seen.update(import_s=last - start, ticks=len(gaps), longest=max(gaps, default=0.0))
        return Summary(text="alive", model="heartbeat")

cold = "litellm" not in sys.modules
model = LiteLLMSummarizer("openai/bench", llm_args={"mock_response": "the summary"})
result = compare_summarizers(
    [Case("c1", ({"role": "user", "content": "remember the port 8443"},))],
    {"heartbeat": Heartbeat(), "model": model}, ["compression"], cache_dir=None,
    progress=False,
)
print(json.dumps({**seen, "cold": cold, "errors": int(result.frame["error"].notna().sum()),
                  "texts": sorted(result.summaries["text"])}))
"""


def test_a_cold_comparison_keeps_its_event_loop_running_while_litellm_is_imported() -> None:
    done = subprocess.run([sys.executable, "-c", HEARTBEAT], capture_output=True, text=True,
                          timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["cold"] and seen["errors"] == 0, seen
    assert seen["texts"] == ["alive", "the summary"], seen
    # The import takes seconds; the loop ticked all along. Inside the loop it would have been
    # one gap as long as the import (ratio ~1): a quarter leaves room for a loaded machine.
    assert seen["ticks"] >= 10, seen
    assert seen["longest"] <= seen["import_s"] / 4, seen
