"""PURE: how many probes a paired comparison needs, before the run.

Two conditions (two memories, a memory with and without recall) are asked the same probes and
each probe is answered right or wrong by each. Their difference in share of probes answered
is the mean of the per-probe differences (+1, -1 or 0), so only the *discordant* probes — one
condition right, the other wrong — carry it (McNemar): with a discordant share ``ψ`` and a
true difference ``d`` the per-probe difference has variance ``ψ - d²``. The tables' paired
bootstrap (:func:`~memorylab.evaluate.summary_table`'s ``differences``) reports a difference
when its interval excludes 0, which is, in the normal approximation, when ``d̂`` exceeds
``z(confidence) · sqrt((ψ - d²) / n)``; it does so with probability ``power`` when

    d = (z_a + z_b) · sqrt((ψ - d²) / n),  i.e.  d = (z_a + z_b) · sqrt(ψ / (n + (z_a + z_b)²))

with ``z_a`` the two-sided quantile of ``confidence`` and ``z_b`` the quantile of ``power``.

The discordant share is what a pilot run measures (the share of probes two conditions answer
differently). Without it, it is bounded from ``rate``, the share of probes the two conditions
answer on average: at most ``2 · min(rate, 1 - rate)`` of the probes can be discordant (every
probe one condition answers, the other misses). That bound is conservative — conditions that
read the same history agree on most probes, so the difference a run detects is usually
smaller — and the figures say so.
"""

from __future__ import annotations

import math
from statistics import NormalDist

from memorylab._validation import check_int, check_number
from memorylab.errors import InvalidSetting


def _share(label: str, value: object, *, closed: bool = False) -> float:
    """``value`` as a share: above 0, below 1 (at most 1 when ``closed``)."""
    number = check_number(label, value, 0.0, strict=True)
    if number > 1 or (number == 1 and not closed):
        raise InvalidSetting(
            f"{label} must be a share {'<=' if closed else '<'} 1 (0.8 for 80 %), not {value!r}"
        )
    return number


def _z(power: object, confidence: object) -> float:
    """``z_a + z_b``: the two-sided quantile of ``confidence`` plus the quantile of ``power``."""
    normal = NormalDist()
    tail = 1 - _share("confidence", confidence)
    return normal.inv_cdf(1 - tail / 2) + normal.inv_cdf(_share("power", power))


def _discordant(rate: object, discordant: object) -> float:
    """The discordant share given, else its bound from ``rate``: ``2 · min(rate, 1 - rate)``."""
    if discordant is not None:
        return _share("discordant", discordant, closed=True)
    answered = _share("rate", rate)
    return 2 * min(answered, 1 - answered)


def detectable_difference(
    probes: int,
    *,
    power: float = 0.8,
    confidence: float = 0.95,
    rate: float = 0.5,
    discordant: float | None = None,
) -> float:
    """The smallest difference in share of probes answered (0.05: 5 points) between two
    conditions asked the same ``probes`` probes that a paired comparison detects — its
    ``confidence`` interval excludes 0 — with probability ``power``.

    ``discordant``: the share of probes the two conditions answer differently (one right, the
    other wrong), as a pilot run measures it; without it, its upper bound
    ``2 · min(rate, 1 - rate)`` for conditions answering ``rate`` of the probes, which makes the
    figure conservative (module docstring).

    >>> round(detectable_difference(105, rate=0.5), 3)  # every probe may be discordant
    0.264
    >>> round(detectable_difference(105, discordant=0.1), 3)  # 1 probe in 10 answered differently
    0.083
    """
    count = check_int("probes", probes, 1)
    z = _z(power, confidence)
    return z * math.sqrt(_discordant(rate, discordant) / (count + z * z))


def probes_needed(
    difference: float,
    *,
    power: float = 0.8,
    confidence: float = 0.95,
    rate: float = 0.5,
    discordant: float | None = None,
) -> int:
    """The number of probes (asked of both conditions) a paired comparison needs to detect a
    ``difference`` in share of probes answered (0.05: 5 points) with probability ``power`` at
    ``confidence``: the inverse of :func:`detectable_difference` (the least ``probes`` whose
    detectable difference is at most ``difference``), with the same ``rate`` and
    ``discordant``.

    >>> probes_needed(0.05, discordant=0.1)  # 1 probe in 10 answered differently
    307
    """
    wanted = _share("difference", difference)
    z = _z(power, confidence)
    share = _discordant(rate, discordant)
    if wanted > share:
        given = f"discordant={share:g}" if discordant is not None else f"rate={rate!r}"
        raise InvalidSetting(
            f"difference={difference!r} is larger than the share of probes two conditions can "
            f"answer differently ({share:g}, from {given}): a difference cannot exceed it; "
            "ask for a smaller difference or give the discordant share measured"
        )
    # d = z·sqrt(ψ/(n + z²))  <=>  n = z²·(ψ - d²)/d²; the least whole n that reaches d
    return max(1, math.ceil(z * z * (share - wanted * wanted) / (wanted * wanted) - 1e-9))
