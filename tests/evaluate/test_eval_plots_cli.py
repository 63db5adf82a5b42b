"""Plot helpers (Axes in, Axes out, no plt.show) and the `compare` command."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from test_eval_cases import write_transcript

from fakes import FakeOpenAIServer
from memorylab import Conversation
from memorylab.errors import InvalidSetting
from memorylab.evaluate import (
    BASELINES,
    BOUNDS,
    Case,
    Fact,
    compare_summarizers,
    plot_cost_quality,
    plot_latency,
    plot_quality,
)
from memorylab.evaluate._cli import add_compare_arguments, main
from memorylab.evaluate._engine import ComparisonResult
from memorylab.evaluate._plots import pareto_front

HISTORY = (
    {"role": "user", "content": "Config at /srv/api/config.yaml; run `make deploy` later."},
    {"role": "assistant", "content": "Staging listens on port 8443."},
)
FACTS = (Fact("f1", "path", "/srv/api/config.yaml", 0), Fact("f2", "number", "port 8443", 1),
         Fact("f3", "command", "make deploy", 0))  # fmt: skip


@pytest.fixture(scope="module")
def results() -> ComparisonResult:
    cases = [Case(f"c{i}", HISTORY, FACTS) for i in range(3)]
    return compare_summarizers(cases, list(BASELINES), max_tokens=40, progress=False,
                               cache_dir=False)  # fmt: skip


def test_plots_return_axes_and_draw_on_given_axes(results: ComparisonResult) -> None:
    ax = plot_quality(results)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["number", "path", "command", "overall"]
    assert len(ax.patches) == 3 * 4
    plt.close(ax.figure)
    figure, axes = plt.subplots(1, 2)
    assert plot_cost_quality(results, ax=axes[0]) is axes[0]
    assert plot_latency(results, ax=axes[1]) is axes[1]
    assert axes[0].get_xlabel().startswith("cost.usd")
    plt.close(figure)
    with pytest.raises(InvalidSetting):
        plot_quality(results, scorer="judge")
    with pytest.raises(InvalidSetting):
        plot_cost_quality(results, quality="judge.overall")
    with pytest.raises(InvalidSetting):
        plot_latency(results.frame[results.frame.scorer != "latency"])


def test_pareto_front() -> None:
    nan = float("nan")
    points = [("a", 1.0, 0.9), ("b", 0.0, 0.5), ("c", 0.0, 0.4), ("d", 2.0, 0.9), ("e", nan, 1.0)]
    assert [p[0] for p in pareto_front(points)] == ["b", "a"]


def test_command_on_a_transcript_writes_csv_and_png(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    transcript = write_transcript(
        tmp_path / "t.jsonl",
        [[("user", "Config at /srv/api/config.yaml."), ("assistant", "Port 8443 it is.")]],
        [("f1", "path", "/srv/api/config.yaml", 0), ("f2", "number", "Port 8443", 1)],
        [("p1", "f2", "Which port?", "8443")],
    )
    code = main([str(transcript), "--no-progress", "--csv", str(tmp_path / "s.csv"),
                 "--png", str(tmp_path / "p.png"), "--table", "fact-survival"])  # fmt: skip
    assert code == 0
    out = capsys.readouterr()
    assert out.out.startswith("| summarizer | number | path |")
    assert "| memorylab/extractive | 100% [100%, 100%] | 100% [100%, 100%] |" in out.out
    assert "| memorylab/truncate | 100% [100%, 100%] ≈ |" in out.out
    assert "| memorylab/none (floor) | 0% [0%, 0%] |" in out.out
    assert "1 cases x 5 summarizers" in out.err
    df = pd.read_csv(tmp_path / "s.csv")
    assert set(df.summarizer) == {*BOUNDS, *BASELINES}
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


def test_command_on_a_workspace_uses_the_existing_summaries(isolated_workspace: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    conv = Conversation(agent_name="Ops")
    conv.add("User", "Config at /srv/api/config.yaml.")
    conv.compact("Config: /srv/api/config.yaml")
    assert main([str(isolated_workspace), "--no-progress", "--scorer", "fact_recall"]) == 0
    out = capsys.readouterr().out
    assert "memorylab/existing" in out and "fact_recall.path" in out


def test_command_with_a_model_behind_a_local_server(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    transcript = write_transcript(tmp_path / "t.jsonl", [[("user", "Port 8443.")]],
                                  [("f1", "number", "Port 8443", 0)], [])  # fmt: skip
    with FakeOpenAIServer("Port 8443; verdict {\"faithfulness\": 5, \"coverage\": 5, \"usefulness\": 5}") as server:
        code = main([str(transcript), "-s", "openai/fake", "--api-base", server.base_url,
                     "--judge", "openai/judge", "--scorer", "fact_recall", "--cache-dir",
                     str(tmp_path / "cache"), "--no-progress"])  # fmt: skip
        assert code == 0 and server.request_count == 2
    out = capsys.readouterr().out
    assert "judge.overall" in out and "| openai/fake |" in out


def test_command_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "missing.jsonl"), "--no-progress"]) == 5  # no such source
    assert "does not exist" in capsys.readouterr().err
    assert main(["-s", "memorylab/nope", str(tmp_path / "missing"), "--no-progress"]) == 2  # an unknown summarizer name is refused first


def test_arguments_for_the_main_cli() -> None:
    parser = add_compare_arguments(argparse.ArgumentParser())
    args = parser.parse_args(["x.jsonl", "-s", "a", "-s", "b", "--max-cost", "0.5"])
    assert args.summarizers == ["a", "b"] and args.max_cost == 0.5 and callable(args.handler)


def test_the_local_model_s_window_is_context_length(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--context-length N`` is the local model's window (its server's and its summarizer's)."""
    import contextlib
    from collections.abc import Iterator

    import memorylab.llm
    from memorylab.compress import _litellm_summarizer as litellm_summarizer

    transcript = write_transcript(tmp_path / "t.jsonl", [[("user", "Port 8443.")]],
                                  [("f1", "number", "Port 8443", 0)], [])  # fmt: skip
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    windows: list[tuple[str, int | None]] = []
    with FakeOpenAIServer("Port 8443.") as server:

        @contextlib.contextmanager
        def local_server(path: Path, *, context_length: int, **_: object) -> Iterator[str]:
            windows.append(("server", context_length))
            yield server.base_url

        class Summarizer(litellm_summarizer.LiteLLMSummarizer):
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                windows.append(("summarizer", self.context_length))

        monkeypatch.setattr(memorylab.llm, "local_server", local_server)
        monkeypatch.setattr(litellm_summarizer, "LiteLLMSummarizer", Summarizer)
        code = main([str(transcript), "--local-model", str(model), "--context-length", "1000", "-s", "local",
                     "--max-tokens", "100", "--scorer", "fact_recall", "--no-cache",
                     "--no-progress"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 0, err
    assert windows == [("server", 1000), ("summarizer", 1000)]
    assert "deprecated" not in err
