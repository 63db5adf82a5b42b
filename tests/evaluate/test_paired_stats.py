"""Statistics that rank: paired differences between a table's conditions, with intervals, and
the planner's detectable difference checked against a simulation (issue 39)."""

from __future__ import annotations

import numpy as np
import pytest

from memorylab.errors import InvalidSetting
from memorylab.evaluate import bootstrap_interval, detectable_difference, probes_needed

Z = 1.959963984540054  # the two-sided 95 % quantile


def _paired_outcomes(
    rng: np.random.Generator, probes: int, repetitions: int, difference: float, discordant: float
) -> np.ndarray:
    """Per-probe differences a - b (+1, -1, 0) of two conditions asked the same probes, whose
    discordant share is ``discordant`` and whose true difference is ``difference``."""
    ahead, behind = (discordant + difference) / 2, (discordant - difference) / 2
    draws = rng.random((repetitions, probes))
    return (draws < ahead).astype(float) - ((draws >= ahead) & (draws < ahead + behind))


def _normal_power(outcomes: np.ndarray) -> float:
    """The share of repetitions whose 95 % interval (normal approximation) is above 0."""
    mean = outcomes.mean(1)
    error = outcomes.std(1, ddof=1) / np.sqrt(outcomes.shape[1])
    return float((mean - Z * error > 0).mean())


@pytest.mark.parametrize(
    ("probes", "discordant"), [(105, 0.3), (300, 0.3), (800, 0.6), (1000, 0.05)]
)
def test_the_detectable_difference_is_detected_at_the_requested_power(
    probes: int, discordant: float
) -> None:
    difference = detectable_difference(probes, discordant=discordant)
    outcomes = _paired_outcomes(np.random.default_rng(7), probes, 6000, difference, discordant)
    # 6,000 repetitions: the empirical power's standard error is 0.005. A difference off by
    # sqrt(2) either way gives about 0.5 or 0.98, the unpaired variance at rate 0.5 0.95 (0.73
    # at 800 probes), the power's quantile left out 0.5. (With fewer than ~30 discordant probes
    # expected the normal approximation is off: 10 give 0.85.)
    assert _normal_power(outcomes) == pytest.approx(0.8, abs=0.03)
    # the tables' own test: the seeded paired bootstrap's interval excludes 0 (fewer repetitions,
    # 1,000 resamples each: standard error 0.02)
    detected = [bootstrap_interval(row, seed=index)[0] > 0
                for index, row in enumerate(outcomes[:400])]  # fmt: skip
    assert np.mean(detected) == pytest.approx(0.8, abs=0.07)


def test_the_bound_from_the_rate_is_conservative() -> None:
    """Without the discordant share, the detectable difference holds at its largest possible
    value (every probe one condition answers the other misses) and over-delivers below it."""
    probes, rate = 200, 0.3
    difference = detectable_difference(probes, rate=rate)
    assert difference == detectable_difference(probes, discordant=2 * rate)
    rng = np.random.default_rng(11)
    at_bound = _normal_power(_paired_outcomes(rng, probes, 6000, difference, 2 * rate))
    assert at_bound == pytest.approx(0.8, abs=0.03)
    assert _normal_power(_paired_outcomes(rng, probes, 6000, difference, rate)) > 0.95
    assert detectable_difference(probes, rate=0.9) == detectable_difference(probes, rate=0.1)


@pytest.mark.parametrize("discordant", [None, 0.05, 0.3, 1.0])
@pytest.mark.parametrize("difference", [0.01, 0.05, 0.2])
def test_probes_needed_inverts_the_detectable_difference(
    difference: float, discordant: float | None
) -> None:
    if discordant is not None and difference > discordant:
        return
    needed = probes_needed(difference, discordant=discordant, power=0.9)
    assert detectable_difference(needed, discordant=discordant, power=0.9) <= difference
    assert needed == 1 or difference < detectable_difference(
        needed - 1, discordant=discordant, power=0.9
    )


def test_a_five_point_difference_needs_probes_by_its_discordant_share() -> None:
    # the docs' example: a pilot's 10 % discordant probes, and the conservative bound at 50 %
    assert probes_needed(0.05, discordant=0.1) == 307
    assert probes_needed(0.05) == 3132
    # more power, more confidence or more discordance: more probes
    base = probes_needed(0.05, discordant=0.2)
    assert probes_needed(0.05, discordant=0.2, power=0.9) > base
    assert probes_needed(0.05, discordant=0.2, confidence=0.99) > base
    assert probes_needed(0.05, discordant=0.4) > base


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda: detectable_difference(0), "probes"),
        (lambda: detectable_difference(2.5), "probes"),  # type: ignore[arg-type]
        (lambda: detectable_difference(100, power=80), "power"),
        (lambda: detectable_difference(100, confidence=1.0), "confidence"),
        (lambda: detectable_difference(100, rate=0), "rate"),
        (lambda: detectable_difference(100, discordant=1.5), "discordant"),
        (lambda: probes_needed(5), "difference"),
        (lambda: probes_needed(0.3, discordant=0.2), "difference"),
        (lambda: probes_needed(0.3, rate=0.1), "rate"),
    ],
)
def test_bad_arguments_name_themselves(call: object, named: str) -> None:
    with pytest.raises(InvalidSetting, match=named):
        call()  # type: ignore[operator]
