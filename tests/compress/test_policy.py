"""The threshold convention, the compression trigger and the failure backoff (all pure)."""

from __future__ import annotations

import dataclasses
import doctest
import math
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memorylab.compress import _policy as policy
from memorylab.compress._policy import (
    DEFAULT_THRESHOLD,
    THRESHOLD_CONVENTION,
    Backoff,
    should_compress,
    trigger_tokens,
    validate_threshold,
)
from memorylab.errors import InvalidSetting, MemorylabError

# --------------------------------------------------------------------------- the convention


@pytest.mark.parametrize(
    ("threshold", "expected"),
    [
        (0.9, 0.9),
        (1.0, 1.0),
        (0.5, 0.5),
        (1e-9, 1e-9),
        (5e-324, 5e-324),  # the smallest positive float is still a fraction
        (1, 1),
        (900, 900),
        (128_000, 128_000),
        (np.float64(0.75), 0.75),
        (np.int64(3000), 3000),
        (Fraction(9, 10), 0.9),
    ],
)
def test_valid_thresholds_are_normalised_to_builtins(threshold: object, expected: object) -> None:
    value = validate_threshold(threshold)
    assert value == expected
    assert type(value) is type(expected)


@pytest.mark.parametrize(
    "threshold",
    [
        0,
        -1,
        -900,
        0.0,
        -0.0,
        -0.5,
        1.0000001,
        1.5,
        2.0,  # a float above 1 is an error, not "2 tokens"
        900.0,
        math.nan,
        math.inf,
        -math.inf,
        True,
        False,
        np.bool_(True),
        "0.9",
        "900",
        None,
        [0.9],
        0.5j,
        Decimal("0.9"),
        np.int64(0),
        np.float64(1.5),
    ],
    ids=repr,
)
def test_invalid_thresholds_raise_with_the_convention(threshold: object) -> None:
    with pytest.raises(InvalidSetting) as caught:
        validate_threshold(threshold)
    message = str(caught.value)
    assert THRESHOLD_CONVENTION in message
    assert "threshold=" in message
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value, MemorylabError)


def test_a_large_float_message_suggests_an_int() -> None:
    with pytest.raises(InvalidSetting, match=r"pass an int"):
        validate_threshold(2.0)


def test_default_threshold() -> None:
    assert DEFAULT_THRESHOLD == 0.9
    assert validate_threshold(DEFAULT_THRESHOLD) == 0.9


# --------------------------------------------------------------------------- the trigger


@pytest.mark.parametrize(
    ("context_length", "threshold", "trigger"),
    [
        (1000, 0.9, 900),  # 0.9 * 1000 = 900, not 901 (the binary 0.9 is a hair above 9/10)
        (1001, 0.9, 901),  # 900.9 -> 901
        (100, 0.07, 7),  # the float product 0.07 * 100 is 7.000000000000001
        (100, 0.57, 57),  # ... and 0.57 * 100 is 56.99999999999999
        (128_000, 0.9, 115_200),
        (200_000, 0.8, 160_000),
        (4096, 1.0, 4096),
        (4096, 0.5, 2048),
        (3, 1 / 3, 1),
        (3, 2 / 3, 2),
        (10, 1e-9, 1),  # a tiny fraction still needs at least one token
        (1, 1.0, 1),
        (1, 0.5, 1),
        (4096, 1, 1),
        (4096, 4096, 4096),
        (8192, 3000, 3000),
    ],
)
def test_trigger_tokens_table(context_length: int, threshold: float | int, trigger: int) -> None:
    assert trigger_tokens(context_length, threshold) == trigger
    assert should_compress(trigger, context_length, threshold)
    assert not should_compress(trigger - 1, context_length, threshold)


def test_boundary_at_ninety_percent_of_a_thousand() -> None:
    assert should_compress(900, 1000, 0.9)
    assert not should_compress(899, 1000, 0.9)
    assert should_compress(900, 1000)  # 0.9 is the default
    assert should_compress(5000, 1000)  # already past the window


def test_zero_tokens_never_fire() -> None:
    assert not should_compress(0, 10, 1e-9)
    assert not should_compress(0, 1, 1)


def test_absolute_threshold_above_the_window_is_rejected() -> None:
    with pytest.raises(InvalidSetting, match="could never fire"):
        trigger_tokens(4096, 5000)
    with pytest.raises(InvalidSetting, match="could never fire"):
        should_compress(10, 4096, 4097)


@pytest.mark.parametrize("context_length", [0, -1, True, 1.5, 1000.0, "1000", None])
def test_invalid_context_length(context_length: object) -> None:
    with pytest.raises(InvalidSetting, match="context_length must be an int >= 1"):
        trigger_tokens(context_length, 0.9)  # type: ignore[arg-type]
    with pytest.raises(InvalidSetting, match="context_length"):
        should_compress(1, context_length, 0.9)  # type: ignore[arg-type]


@pytest.mark.parametrize("tokens", [-1, True, False, 1.5, 900.0, "900", None])
def test_invalid_tokens(tokens: object) -> None:
    with pytest.raises(InvalidSetting, match="tokens must be an int >= 0"):
        should_compress(tokens, 1000, 0.9)  # type: ignore[arg-type]


def test_numpy_integers_are_accepted_for_counts() -> None:
    assert should_compress(np.int64(900), np.int64(1000), 0.9)  # type: ignore[arg-type]
    assert trigger_tokens(np.int32(1000), np.int64(900)) == 900  # type: ignore[arg-type]


# --------------------------------------------------------------------------- properties

lengths = st.integers(min_value=1, max_value=10**7)
fractions = st.floats(min_value=0.0, max_value=1.0, exclude_min=True, allow_nan=False)


@st.composite
def window_and_threshold(draw: st.DrawFn) -> tuple[int, float | int]:
    length = draw(lengths)
    threshold: float | int = draw(st.one_of(fractions, st.integers(min_value=1, max_value=length)))
    return length, threshold


@given(window_and_threshold(), st.integers(0, 2 * 10**7), st.integers(0, 2 * 10**7))
def test_should_compress_is_monotone_in_tokens(
    case: tuple[int, float | int], a: int, b: int
) -> None:
    length, threshold = case
    low, high = sorted((a, b))
    if should_compress(low, length, threshold):
        assert should_compress(high, length, threshold)


@given(window_and_threshold(), st.integers(0, 2 * 10**7))
def test_should_compress_is_tokens_at_or_above_the_trigger(
    case: tuple[int, float | int], tokens: int
) -> None:
    length, threshold = case
    trigger = trigger_tokens(length, threshold)
    assert 1 <= trigger <= length
    assert should_compress(tokens, length, threshold) == (tokens >= trigger)


@given(lengths)
def test_fraction_one_fires_exactly_at_the_window(length: int) -> None:
    assert trigger_tokens(length, 1.0) == length
    assert should_compress(length, length, 1.0)
    assert not should_compress(length - 1, length, 1.0)


@given(lengths, fractions)
def test_trigger_is_the_ceiling_of_the_decimal_fraction(length: int, fraction: float) -> None:
    exact = Fraction(repr(fraction)) * length
    trigger = trigger_tokens(length, fraction)
    assert trigger >= exact
    assert trigger - 1 < exact or trigger == 1


@given(lengths, st.integers(1, 4), st.data())
def test_decimal_thresholds_are_exact(length: int, digits: int, data: st.DataObject) -> None:
    denominator = 10**digits
    numerator = data.draw(st.integers(1, denominator))
    threshold = numerator / denominator  # e.g. 0.07, 0.9, 0.333
    expected = max(1, -(-numerator * length // denominator))  # integer ceiling
    assert trigger_tokens(length, threshold) == expected


@given(st.integers(1, 10**9))
def test_absolute_thresholds_fire_at_that_count(count: int) -> None:
    assert trigger_tokens(count, count) == count
    assert trigger_tokens(10**9, count) == count


# --------------------------------------------------------------------------- backoff


def test_backoff_default_sequence_and_cap() -> None:
    backoff = Backoff()
    assert (backoff.base, backoff.factor, backoff.cap, backoff.max_attempts) == (1, 2, 64, 5)
    assert [backoff.delay(n) for n in range(10)] == [0, 1, 2, 4, 8, 16, 32, 64, 64, 64]
    assert all(type(backoff.delay(n)) is float for n in range(10))


def test_backoff_exhausted_after_max_attempts() -> None:
    backoff = Backoff(max_attempts=3)
    assert [backoff.exhausted(n) for n in range(5)] == [False, False, False, True, True]
    assert Backoff(max_attempts=1).exhausted(1)


def test_backoff_custom_parameters() -> None:
    backoff = Backoff(base=0.5, factor=3, cap=10)
    assert [backoff.delay(n) for n in range(1, 6)] == [0.5, 1.5, 4.5, 10.0, 10.0]
    constant = Backoff(base=2, factor=1, cap=2)
    assert [constant.delay(n) for n in range(1, 4)] == [2.0, 2.0, 2.0]


def test_backoff_huge_failure_counts_do_not_overflow() -> None:
    assert Backoff().delay(10**6) == 64.0
    assert Backoff(factor=1).delay(10**9) == 1.0


def test_backoff_is_frozen_and_normalised() -> None:
    backoff = Backoff(base=1, factor=2, cap=64)
    assert type(backoff.base) is float and type(backoff.cap) is float
    assert backoff == Backoff()
    assert hash(backoff) == hash(Backoff())
    with pytest.raises(dataclasses.FrozenInstanceError):
        backoff.base = 3.0  # type: ignore[misc]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"base": 0},
        {"base": -1},
        {"base": math.nan},
        {"base": math.inf},
        {"base": True},
        {"base": "1"},
        {"factor": 0.5},
        {"factor": 0},
        {"factor": math.inf},
        {"cap": 0.5},  # below base
        {"cap": math.inf},
        {"max_attempts": 0},
        {"max_attempts": -1},
        {"max_attempts": 1.5},
        {"max_attempts": True},
        {"max_attempts": None},
    ],
    ids=repr,
)
def test_backoff_rejects_bad_arguments(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidSetting, match="Backoff"):
        Backoff(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("failures", [-1, True, 1.5, "2", None])
def test_backoff_rejects_bad_failure_counts(failures: object) -> None:
    with pytest.raises(InvalidSetting, match="failures must be an int >= 0"):
        Backoff().delay(failures)  # type: ignore[arg-type]
    with pytest.raises(InvalidSetting, match="failures"):
        Backoff().exhausted(failures)  # type: ignore[arg-type]


@given(
    st.floats(1e-6, 1e3),
    st.floats(1.0, 10.0),
    st.floats(0.0, 1e4),
    st.integers(1, 500),
)
def test_backoff_is_monotone_and_capped(base: float, factor: float, extra: float, n: int) -> None:
    backoff = Backoff(base=base, factor=factor, cap=base + extra)
    assert backoff.delay(1) == base
    assert base <= backoff.delay(n) <= backoff.delay(n + 1) <= backoff.cap


# --------------------------------------------------------------------------- docs and purity


def test_policy_doctests() -> None:
    result = doctest.testmod(policy, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted >= 10


def test_policy_module_is_pure() -> None:
    for name in ("os", "sys", "time", "datetime", "pathlib", "io", "random", "tiktoken"):
        assert name not in vars(policy), name


# --------------------------------------------------------------------------- one rule, one place


def test_threshold_text_and_equality() -> None:
    from memorylab.compress._policy import same_threshold, threshold_text

    assert [threshold_text(t) for t in (0.5, 0.85, 0.875, np.float64(0.7), 3000)] == [
        "0.50",
        "0.85",
        "0.875",
        "0.70",
        "3,000 tokens",
    ]
    assert threshold_text(None) == threshold_text(math.nan) == threshold_text(True) == ""
    assert same_threshold(0.7, np.float64(0.7)) and same_threshold(3000, np.int64(3000))
    assert not same_threshold(1, 1.0)  # one token is not the whole window


def test_one_check_of_a_count_and_of_a_number() -> None:
    from memorylab import llm
    from memorylab._validation import check_int, check_number

    assert llm.check_int is check_int and check_int("n", np.int64(3), 1) == 3
    for bad in (True, 1.0, "2", 0):
        with pytest.raises(InvalidSetting, match="n must be an int >= 1, not"):
            check_int("n", bad, 1)
    with pytest.raises(InvalidSetting, match=r"Backoff\.base must be a finite number > 0, not inf"):
        Backoff(base=math.inf)
    with pytest.raises(
        InvalidSetting, match=r"RetryPolicy\.timeout must be a number of seconds > 0"
    ):
        llm.RetryPolicy(timeout=0)
    assert llm.RetryPolicy(timeout=math.inf).timeout == math.inf  # no bound: as before
    assert check_number("x", 2, 1.0, strict=False) == 2.0


def test_the_preload_bound_moved_here() -> None:
    from memorylab.compress import default_preload_max_tokens

    with pytest.warns(DeprecationWarning, match="from memorylab.compress import"):
        from memorylab.agent import default_preload_max_tokens as old_bound
    assert old_bound is default_preload_max_tokens
