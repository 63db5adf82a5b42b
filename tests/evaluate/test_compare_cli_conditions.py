"""``memorylab compare`` asks the research question: strategies (with their settings) and recall
as conditions, on a benchmark file or the bundled transcripts, sampled to a probe budget,
spread over servers (issue 39)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fakes import FakeOpenAIServer
from memorylab.evaluate import PEER_STRATEGIES
from memorylab.evaluate._cli import main

LOCOMO = Path(__file__).parent / "data" / "locomo_sample.json"
QUIET = ["--no-cache", "--no-progress"]
SMALL_WINDOW = ["--memory-window", "256", "--threshold", "0.5"]
"""A window the LoCoMo fixture's conversation (about 500 tokens) overflows: several
compactions."""


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main([*argv, *QUIET])
    out = capsys.readouterr()
    return code, out.out, out.err


def rows(table: str) -> dict[str, list[str]]:
    """A markdown table's cells by row label."""
    first = table.split("\n\n")[0]  # notes and paired differences follow it
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in first.splitlines()
             if line.startswith("| ") and not line.startswith("| strategy ")]  # fmt: skip
    return {row[0]: row[1:] for row in cells}


def test_strategies_with_settings_and_presets_on_a_benchmark_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run([str(LOCOMO), "--split", "conversation", "--strategy", "summary",
                          "--strategy", "trim:keep_fraction=0.5", "--strategy",
                          "Letta: keep 30 %", *SMALL_WINDOW, "--scorer", "probe_qa"], capsys)  # fmt: skip
    assert code == 0, err
    table = rows(out)
    assert list(table) == ["summary()", "trim(keep_fraction=0.5)", "Letta: keep 30 %",
                           "memorylab/full (ceiling)", "memorylab/none (floor)"]  # fmt: skip
    header = out.splitlines()[0]
    assert header.startswith("| strategy | probe_qa.exact | facts after 1 |"), header
    assert "compactions" in header and "tokens read" in header
    summary = table["summary()"]
    assert summary[0].endswith("]") and "[" in summary[0]  # an interval
    compactions = header.strip("|").split("|").index(" compactions ") - 1
    assert int(table["trim(keep_fraction=0.5)"][compactions]) > 0  # the window was overflowed
    assert "x 5 strategies" in err
    differences = out.split("Paired differences")[1]  # under the table
    assert "| probe_qa.exact | memorylab/full − memorylab/none | +" in differences
    assert "| facts after 1 | " in differences


def test_strategies_on_the_bundled_transcripts(capsys: pytest.CaptureFixture[str]) -> None:
    """No source: the bundled transcripts, run through a strategy without a model."""
    code, out, err = run(["--split", "session", "--strategy", "trim", "--memory-window",
                          "2048", "--scorer", "probe_qa"], capsys)  # fmt: skip
    assert code == 0, err
    assert list(rows(out)) == ["trim(keep_fraction=0.5)", "memorylab/full (ceiling)",
                               "memorylab/none (floor)"]  # fmt: skip
    assert "18 cases x 3 strategies" in err


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--strategy", "nope"], ["unknown strategy 'nope'", "keep_recent", "'Letta: keep 30 %'"]),
        (["--strategy", "keep_recent:keep=3"], ["no setting keep", "keep_messages"]),
        (["--strategy", "keep_recent:keep_fraction=lots"], ["keep_fraction", "'lots'"]),
        (["--strategy", "keep_recent:20"], ["key=value", "keep_recent:keep_messages=20"]),
        (["--strategy", "trim", "--strategy", "trim:keep_fraction=0.5"], ["given twice"]),
        (["--memory-window", "4096"], ["--memory-window", "give --strategy"]),
        (["--threshold", "0.7"], ["--threshold", "give --strategy"]),
        (["--strategy", "trim", "--threshold", "lots"], ["--threshold 'lots' is not a number"]),
        (["--strategy", "trim", "--threshold", "9000"], ["--threshold 9000 with --memory-window 8192"]),
        (["--strategy", "trim", "--dask", "local"], ["leave --dask out"]),
        (["--strategy", "trim", "-s", "memorylab/extractive", "-s", "memorylab/truncate"],
         ["-s names the one summarizer"]),
        (["--seed", "3"], ["--seed", "--probes"]),
        (["--reader", "local"], ["needs --local-model"]),
    ],
)  # fmt: skip
def test_bad_conditions_are_one_line_and_exit_2(
    argv: list[str], says: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run([str(tmp_path / "missing.jsonl"), *argv], capsys)  # refused first
    assert code == 2, err
    assert out == "" and err.startswith("memorylab: ") and err.count("\n") == 1, err
    for part in says:
        assert part in err


def test_every_preset_is_a_strategy_spec() -> None:
    from memorylab.evaluate._cli import strategy_specs

    chosen = strategy_specs([*PEER_STRATEGIES, "fact_ledger:keep_messages=20,ledger_tokens=300"])
    assert list(chosen)[:-1] == list(PEER_STRATEGIES)
    ledger = chosen.popitem()[1]
    assert (ledger.name, ledger.keep_messages, ledger.ledger_tokens) == ("fact_ledger", 20, 300)


def test_split_conversation_is_whole(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/evaluation.md's LoCoMo command says ``--split conversation``: the same cases as
    ``whole``, and the help says so."""
    results = []
    for split in ("conversation", "whole"):
        code, out, err = run([str(LOCOMO), "--split", split, "-s", "memorylab/full",
                              "--scorer", "probe_qa"], capsys)  # fmt: skip
        assert code == 0, err
        results.append(out)
    assert results[0] == results[1]
    assert main(["--help"]) == 0
    assert "its other name conversation" in " ".join(capsys.readouterr().out.split())


def test_dask_without_distributed_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if the extra were not installed
    code, out, err = run([str(LOCOMO), "--dask", "local", "-s", "memorylab/full"], capsys)
    assert code == 1 and out == "" and err.startswith("memorylab: --dask needs")
    assert "memorylab[dask]" in err and err.count("\n") == 1


def test_a_reader_whose_name_has_a_dot(capsys: pytest.CaptureFixture[str]) -> None:
    """``--reader openai/qwen2.5:1.5b`` (Ollama's names) is a column of its own, not a refused
    scorer name."""
    with FakeOpenAIServer("Ines Duarte") as server:
        code, out, err = run([str(LOCOMO), "--split", "session", "-s", "memorylab/full",
                              "--reader", "openai/qwen2.5:1.5b", "--api-base", server.base_url,
                              "--scorer", "probe_qa"], capsys)  # fmt: skip
        assert code == 0, err
        assert server.request_count > 0
    assert "probe_qa[openai/qwen2_5:1_5b].exact" in out.splitlines()[0]


def test_paired_differences_under_every_table(capsys: pytest.CaptureFixture[str]) -> None:
    base = [str(LOCOMO), "--split", "session", "-s", "memorylab/full", "-s", "memorylab/none",
            "-s", "memorylab/extractive", "--scorer", "probe_qa", "--scorer", "fact_recall"]  # fmt: skip
    for table, column in (("summary", "probe_qa.exact"), ("probes", "overall (n=9)"),
                          ("fact-survival", "overall")):  # fmt: skip
        code, out, err = run([*base, "--table", table], capsys)
        assert code == 0, err
        table_text, _, differences = out.partition("\nPaired differences")
        assert "\n|---|" in table_text
        assert f"| {column} | memorylab/full − memorylab/none | +" in differences, out


def test_the_plan_line_is_printed_without_a_progress_bar(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--no-progress`` hides the bar, not the plan (summarizers and strategies alike)."""
    with FakeOpenAIServer("Ines Duarte") as server:
        reader = ["--reader", "openai/reader", "--api-base", server.base_url, "--scorer",
                  "probe_qa"]  # fmt: skip
        for conditions in (["-s", "memorylab/full"], ["--strategy", "trim", *SMALL_WINDOW]):
            code, _, err = run([str(LOCOMO), *conditions, *reader], capsys)  # --no-progress
            assert code == 0, err
            plans = [line for line in err.splitlines() if line.startswith("plan: ")]
            assert len(plans) == 1 and "model requests" in plans[0], err


def test_recall_conditions(capsys: pytest.CaptureFixture[str]) -> None:
    """``--recall K`` adds ``<memory> + recall K`` for every memory, and its difference from the
    memory is among the pairs shown."""
    code, out, err = run([str(LOCOMO), "--split", "session", "-s", "memorylab/none", "-s",
                          "memorylab/extractive", "--recall", "2", "--scorer", "probe_qa"],
                         capsys)  # fmt: skip
    assert code == 0, err
    table = rows(out.replace("| summarizer ", "| strategy "))
    assert list(table) == ["memorylab/none (floor)", "memorylab/extractive",
                           "memorylab/none + recall 2", "memorylab/extractive + recall 2"]  # fmt: skip
    assert table["memorylab/none (floor)"][0].startswith("0%")
    assert not table["memorylab/none + recall 2"][0].startswith("0%")  # recall alone answers
    assert "| probe_qa.exact | memorylab/none + recall 2 − memorylab/none | +" in out


def test_a_sample_to_a_probe_budget(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``--probes N --seed S``: cases in a seeded order until N probes; the same seed, the same
    sample."""
    import pandas as pd

    samples = []
    for seed in ("1", "1", "2"):
        csv = tmp_path / f"seed{seed}.csv"
        code, _, err = run(["--split", "session", "-s", "memorylab/full", "--scorer", "probe_qa",
                            "--probes", "12", "--seed", seed, "--csv", str(csv)], capsys)  # fmt: skip
        assert code == 0, err
        frame = pd.read_csv(csv)
        probes = frame[(frame.scorer == "probe_qa") & (frame.metric == "exact")]["n"].sum()
        assert 12 <= probes < 12 + 9  # the last case drawn holds at most 8 probes
        samples.append(sorted(set(frame["case"])))
    assert samples[0] == samples[1] != samples[2]


def test_several_servers_share_one_model(capsys: pytest.CaptureFixture[str]) -> None:
    """``--api-base`` twice: the reader's requests spread over both servers."""
    with FakeOpenAIServer("Ines Duarte") as one, FakeOpenAIServer("Ines Duarte") as two:
        code, out, err = run([str(LOCOMO), "--split", "session", "-s", "memorylab/full", "-s",
                              "memorylab/extractive", "--reader", "openai/reader", "--api-base",
                              one.base_url, "--api-base", two.base_url, "--scorer", "probe_qa"],
                             capsys)  # fmt: skip
        assert code == 0, err
        assert one.request_count > 0 and two.request_count > 0
    assert "probe_qa[openai/reader].exact" in out.splitlines()[0]


def test_a_dask_cluster_gives_the_same_table(capsys: pytest.CaptureFixture[str]) -> None:
    """``--dask local``: the jobs on a cluster of this machine, the table the same."""
    pytest.importorskip("distributed", reason="the dask extra is not installed")
    with FakeOpenAIServer("Ines Duarte") as server:
        argv = [str(LOCOMO), "--split", "session", "-s", "memorylab/full", "-s",
                "memorylab/extractive", "--reader", "openai/reader", "--api-base",
                server.base_url, "--scorer", "probe_qa"]  # fmt: skip
        tables = []
        for dask in ([], ["--dask", "local"]):
            code, out, err = run([*argv, *dask], capsys)
            assert code == 0, err
            tables.append(out)
    assert tables[0] == tables[1]
    assert "probe_qa[openai/reader].exact" in tables[1]


def test_a_strategys_failed_compactions_are_summed_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A strategy that cannot compact a window (keep_recent keeping more than the window holds)
    failed at every attempt, and the command printed a warning for each (42 lines on 30
    probes); the runs record them, and one line sums them per strategy."""
    code, _, err = run(["--split", "window", "--window", "16", "--probes", "10", "--strategy",
                        "keep_recent:keep_messages=6", "--memory-window", "768",
                        "--scorer", "probe_qa"], capsys)  # fmt: skip
    assert code == 0
    assert "compression failed (" not in err
    [note] = [line for line in err.splitlines() if "failed in the strategies' runs" in line]
    assert note.endswith("keep_recent(keep_messages=6) 9")


def test_an_api_base_that_is_no_address_is_refused_before_any_work(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, _, err = run(["--reader", "openai/x", "--api-base", "notaurl"], capsys)
    assert code == 2
    assert err.strip() == ("memorylab: --api-base 'notaurl' is not a server's address: give its "
                           "URL, such as http://127.0.0.1:8080/v1")  # fmt: skip


def test_a_reader_whose_every_probe_failed_exits_1_with_its_first_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Before, a reader whose server refused every call left an empty column (hidden among the
    --csv columns) and the command exited 0."""
    from fakes import HTTPError

    with FakeOpenAIServer(HTTPError(401)) as server:
        code, _, err = run([str(LOCOMO), "--split", "session", "-s", "memorylab/full",
                            "--reader", "openai/x", "--api-base", server.base_url], capsys)  # fmt: skip
    assert code == 1
    [line] = [x for x in err.splitlines() if "every probe" in x]
    assert line.startswith("memorylab: every probe of probe_qa[openai/x] failed; the first error: "
                           "ModelAuthError")  # fmt: skip
