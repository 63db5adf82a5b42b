"""The audits (calibration, costs, facts): one result type the report renders alike, and fact
survival matched by the shared rules, each summary and each fact prepared once (issue 37)."""

from __future__ import annotations

import hashlib

from memorylab.analysis import fact_survival_df
from memorylab.evaluate import fact_kept
from memorylab.transcripts import bundled_transcripts, bundled_workspace, load_transcript

# --------------------------------------------------------------------------- the matching rules

# What the matching gave before each summary and each fact were prepared once (issue 37): the
# digests of the rows below, made by the code of commit e8aa818 (each summary normalized again
# for every fact). Preparing them once must not change one match, score or evidence.
_SURVIVAL_BEFORE = (4184, "57b7dc4433485a16828446c77451efe5c0a210ac4fc5eb997c8cdd298a7c0791")
_KEPT_BEFORE = (2385, "a0167fff80a823e41d034706b9db4d42e8899b4ad8f2329e0eba9401b59fcca9")


def _digest(rows: list[str]) -> tuple[int, str]:
    return len(rows), hashlib.sha256("\n".join(rows).encode()).hexdigest()


def test_fact_survival_matches_as_before_the_summaries_were_prepared_once() -> None:
    workspace = bundled_workspace()
    planted = load_transcript(bundled_transcripts()[0])
    runs = {
        "extracted": fact_survival_df(workspace),
        "planted": fact_survival_df(workspace, planted),
    }
    rows = [
        f"{run},{r.agent},{r.fact_id},{r.generation},{r.kept},{r.score:.6f},{r.evidence}"
        for run, frame in runs.items()
        for r in frame.itertuples()
    ]
    assert _digest(rows) == _SURVIVAL_BEFORE


def test_every_category_of_planted_fact_matches_as_before() -> None:
    # the planted facts of every bundled transcript (all five categories, kept and not) against
    # stretches of 60 of its messages: the number, decision and name rules all run
    rows = []
    for path in bundled_transcripts():
        transcript = load_transcript(path)
        messages = transcript.messages
        texts = [
            "\n".join(m.content for m in messages[i : i + 60]) for i in range(0, len(messages), 60)
        ]
        for fact in transcript.facts:
            for number, text in enumerate(texts):
                found = fact_kept(fact, text)
                rows.append(
                    f"{path.name},{fact.id},{number},{found.kept},{found.score:.6f},{found.evidence}"
                )
    assert _digest(rows) == _KEPT_BEFORE
