"""Drawing a sample to a probe budget (issue 39): cases in a seeded order until N probes, and
the questions the loader dropped reported for the sample itself, not for the conversations its
sessions come from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memorylab.errors import InvalidSetting
from memorylab.evaluate import (
    Case,
    Probe,
    cases_from_locomo,
    cases_from_transcripts,
    dropped_questions,
    sample_cases,
)

LOCOMO = Path(__file__).parent / "data" / "locomo_sample.json"


def _locomo_file(tmp_path: Path) -> Path:
    """Three conversations of four sessions; each session has two questions of its own, one
    question spans it and the next session, one has no answer, and each conversation has one
    question without evidence."""
    samples = []
    for c in range(3):
        conversation: dict[str, object] = {"speaker_a": "Ana", "speaker_b": "Ben"}
        qa: list[dict[str, object]] = []
        for s in range(1, 5):
            conversation[f"session_{s}"] = [
                {"speaker": "Ana", "dia_id": f"D{s}:{t}", "text": f"c{c} s{s} fact {t}"}
                for t in range(1, 4)
            ]
            conversation[f"session_{s}_date_time"] = f"1:00 pm on {s} May, 2023"
            qa += [
                {"question": f"fact {t}?", "answer": f"c{c}s{s}f{t}", "evidence": [f"D{s}:{t}"],
                 "category": 4}
                for t in (1, 2)
            ]  # fmt: skip
            if s < 4:
                qa.append({"question": "both?", "answer": "x", "category": 1,
                           "evidence": [f"D{s}:3", f"D{s + 1}:3"]})  # fmt: skip
            qa.append({"question": "never?", "adversarial_answer": "no", "category": 5,
                       "evidence": [f"D{s}:1"]})  # fmt: skip
        qa.append({"question": "anywhere?", "answer": "y", "category": 3, "evidence": []})
        samples.append({"sample_id": f"conv-{c}", "conversation": conversation, "qa": qa})
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(samples))
    return path


def _dropped_by(sessions: list[Case], path: Path) -> dict[str, dict[str, int]]:
    """What the drawn sessions dropped, worked out from the file: a question without an answer
    whose evidence touches a drawn session, one whose evidence spans sessions one of which is
    drawn, and the evidence-less questions of a conversation with a session drawn."""
    from collections import Counter

    from memorylab.evaluate import LOCOMO_CATEGORIES

    drawn = {(c.metadata["sample_id"], c.metadata["sessions"][0]) for c in sessions}
    counts: dict[str, Counter[str]] = {}
    for sample in json.loads(path.read_text()):
        for item in sample["qa"]:
            where = {int(e[1:].split(":")[0]) for e in item["evidence"]}
            if "answer" not in item:
                reason = "no answer"
            elif len(where) > 1:
                reason = "spans sessions"
            elif not where:
                reason = "no evidence"
            else:
                continue
            mine = {s for s in where if (sample["sample_id"], s) in drawn}
            if mine or (not where and any(k[0] == sample["sample_id"] for k in drawn)):
                category = LOCOMO_CATEGORIES[str(item["category"])]
                counts.setdefault(reason, Counter())[category] += 1
    return {reason: dict(c) for reason, c in counts.items()}


def test_a_sample_of_sessions_reports_what_its_sessions_dropped(tmp_path: Path) -> None:
    """Before: every session case carried its whole conversation's drops, so a sample of two
    sessions reported the 8 questions each of their conversations dropped (e.g. 8 unanswered
    where the two sessions drawn dropped 2)."""
    path = _locomo_file(tmp_path)
    sessions = cases_from_locomo(path)
    assert len(sessions) == 12
    for seed in range(5):
        sample = sample_cases(sessions, 3, seed=seed)
        assert len(sample) == 2  # two probes a session
        assert dropped_questions(sample) == _dropped_by(sample, path)
    every = dropped_questions(sessions)
    assert every == {"no answer": {"adversarial": 12}, "spans sessions": {"multi-hop": 9},
                     "no evidence": {"open-domain": 3}}  # fmt: skip
    assert every == _dropped_by(sessions, path)


def test_a_question_spanning_two_drawn_sessions_is_counted_once(tmp_path: Path) -> None:
    sessions = {c.id: c for c in cases_from_locomo(_locomo_file(tmp_path))}
    both = [sessions["conv-0#s1"], sessions["conv-0#s2"]]
    assert dropped_questions(both)["spans sessions"] == {"multi-hop": 2}  # s1-s2 and s2-s3
    assert dropped_questions(both[:1])["spans sessions"] == {"multi-hop": 1}


def test_the_fixture_s_sessions_drop_their_own_questions() -> None:
    first, second = cases_from_locomo(LOCOMO)
    spanning = {"spans sessions": {"multi-hop": 1, "open-domain": 1}}
    assert dropped_questions([first]) == spanning
    assert dropped_questions([second]) == {"no answer": {"adversarial": 1}, **spanning}
    whole = cases_from_locomo(LOCOMO, split="conversation")
    assert dropped_questions(whole) == {"no answer": {"adversarial": 1}}


def test_cases_are_drawn_in_a_seeded_order_until_the_budget() -> None:
    cases = cases_from_transcripts(split="window", window=20)
    with_probes = [c for c in cases if c.probes]
    total = sum(len(c.probes) for c in with_probes)
    drawn = sample_cases(cases, 40, seed=7)
    count = sum(len(c.probes) for c in drawn)
    assert count >= 40 and count - len(drawn[-1].probes) < 40  # the last one reached it
    assert [c.id for c in drawn] == [c.id for c in sample_cases(cases, 40, seed=7)]
    assert [c.id for c in drawn] != [c.id for c in sample_cases(cases, 40, seed=8)]
    assert [c.id for c in drawn] != [c.id for c in with_probes[: len(drawn)]]  # shuffled
    bigger = sample_cases(cases, 80, seed=7)
    assert bigger[: len(drawn)] == drawn  # a larger budget draws the smaller one's cases first
    everything = sample_cases(cases, total + 1000, seed=7)
    assert sorted(c.id for c in everything) == sorted(c.id for c in with_probes)


def test_a_case_without_probes_is_not_drawn() -> None:
    empty = Case("empty", ({"content": "hello"},))
    asked = Case("asked", ({"content": "port 8443"},), probes=(Probe("q", None, "port?", "8443"),))
    assert sample_cases([empty, asked, empty], 1) == [asked]


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({"probes": 0}, "probes"),
        ({"probes": 2.5}, "probes"),
        ({"probes": True}, "probes"),
        ({"probes": 10, "seed": -1}, "seed"),
        ({"probes": 10, "seed": "7"}, "seed"),
    ],
)
def test_bad_settings_name_their_parameter(arguments: dict[str, object], named: str) -> None:
    with pytest.raises(InvalidSetting, match=f"^{named} "):
        sample_cases(cases_from_locomo(LOCOMO), **arguments)  # type: ignore[arg-type]


def test_cases_must_be_cases() -> None:
    with pytest.raises(InvalidSetting, match="cases must be Case objects"):
        sample_cases(["demo"], 10)  # type: ignore[list-item]
