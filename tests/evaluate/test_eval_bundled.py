"""The bundled data: transcripts and sample workspaces as cases, and the committed fact-survival
tables of docs/fact-survival.md, re-run and compared."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from memorylab.errors import PrerequisiteError
from memorylab.evaluate import (
    BASELINES,
    EXISTING,
    FACT_CATEGORIES,
    cases_from_transcripts,
    cases_from_workspace,
    compare_summarizers,
    fact_survival_table,
)
from memorylab.evaluate._cli import main

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "fact-survival.md"

try:
    from memorylab.transcripts import bundled_transcripts, bundled_workspace

    bundled_transcripts()
    HAVE_DATA = True
except (ImportError, PrerequisiteError):  # the data is generated separately
    HAVE_DATA = False

needs_data = pytest.mark.skipif(not HAVE_DATA, reason="the bundled data (data/) is missing")


@needs_data
def test_bundled_transcripts_as_cases() -> None:
    whole = cases_from_transcripts()
    assert len(whole) == len(bundled_transcripts())
    sessions = cases_from_transcripts(split="session")
    assert len(sessions) > len(whole)
    assert sum(len(c.facts) for c in sessions) == sum(len(c.facts) for c in whole)
    for case in sessions:
        for fact in case.facts:
            assert fact.text in case.messages[fact.message_index]["content"]
        assert {p.fact_id for p in case.probes} <= {f.id for f in case.facts}
    assert {f.category for c in whole for f in c.facts} == set(FACT_CATEGORIES)


@needs_data
@pytest.mark.parametrize("kind", ["memorylab", "reference"])
def test_bundled_workspaces_as_cases(kind: str) -> None:
    cases = cases_from_workspace(bundled_workspace(kind))  # type: ignore[arg-type]
    assert cases and all(c.summary for c in cases)
    assert {c.metadata["reference_format"] for c in cases} == {kind == "reference"}
    result = compare_summarizers(cases[:4], [EXISTING, *BASELINES], ["compression", "fact_recall"],
                                 progress=False, cache_dir=False)  # fmt: skip
    assert not (result.frame.metric == "error").any()
    table = fact_survival_table(result).frame
    assert list(table.index) == [EXISTING, *BASELINES] and (table.facts > 0).all()


def committed_tables() -> list[tuple[str, str]]:
    text = PAGE.read_text(encoding="utf-8")
    found = re.findall(r"<!-- fact-survival: (.*?) -->\n(.*?)\n<!-- end fact-survival -->", text, re.S)
    assert found, f"no fact-survival tables in {PAGE}"
    return found


@needs_data
@pytest.mark.parametrize("options", [o for o, _ in committed_tables()] if PAGE.exists() else [])
def test_committed_fact_survival_tables_are_current(options: str, capsys: pytest.CaptureFixture[str]) -> None:
    expected = dict(committed_tables())[options]
    command = f"memorylab compare {options} --no-cache --no-progress"
    assert command in PAGE.read_text(encoding="utf-8")  # the page shows the command it ran
    assert main([*shlex.split(options), "--no-cache", "--no-progress"]) == 0
    produced = capsys.readouterr().out.strip()
    assert produced == expected.strip(), (
        f"docs/fact-survival.md is out of date; regenerate it with:\n  {command}\n\n{produced}"
    )
