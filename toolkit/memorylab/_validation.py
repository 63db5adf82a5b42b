"""PURE: the checks of a setting's value that every floor shares (a count, a number, a name, a
frame's columns): one implementation each, so every setting says the same thing when it is
wrong.

>>> check_int("retries", 2, 0), check_number("base", 0.5, 0.0, strict=True)
(2, 0.5)
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping
from typing import TypeVar

from memorylab.errors import InvalidSetting

LARGEST_COUNT = 2**63 - 1
"""The largest count :func:`check_int` accepts by default: the largest a frame's or an array's
integer column holds (int64); a larger one could only overflow there."""

_Frame = TypeVar("_Frame")
_Item = TypeVar("_Item")


def check_int(label: str, value: object, minimum: int, maximum: int = LARGEST_COUNT) -> int:
    """``value`` as an ``int`` if it is an integral number (not a ``bool``) from ``minimum`` to
    ``maximum`` (default :data:`LARGEST_COUNT`), else :class:`~memorylab.errors.InvalidSetting`.

    >>> check_int("k", 2**63, 1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    memorylab.errors.InvalidSetting: k must be an int >= 1 and <= 9,223,372,036,854,775,807, ...
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise InvalidSetting(f"{label} must be an int >= {minimum}, not {value!r}")
    count = int(value)
    if count > maximum:
        raise InvalidSetting(
            f"{label} must be an int >= {minimum} and <= {maximum:,}, not {value!r}"
        )
    return count


def check_number(
    label: str, value: object, minimum: float, *, strict: bool, unit: str = "", finite: bool = True
) -> float:
    """``value`` as a ``float`` if it is a real number (not a ``bool``) >= ``minimum`` (``>`` when
    ``strict``; finite unless ``finite`` is False), else :class:`~memorylab.errors.InvalidSetting`
    ("a number of ``unit``" when one is named)."""
    real = isinstance(value, numbers.Real) and not isinstance(value, bool)
    number = float(value) if real else math.nan  # type: ignore[arg-type]
    if not (number > minimum if strict else number >= minimum) or (finite and math.isinf(number)):
        kind = f"a number of {unit}" if unit else "a finite number"
        bound = f"{'>' if strict else '>='} {minimum:g}"
        raise InvalidSetting(f"{label} must be {kind} {bound}, not {value!r}")
    return number


def check_list(label: str, value: Iterable[_Item], *, of: str) -> list[_Item]:
    """``value`` as a list if it is a collection of settings (a list, a tuple, a range, any
    iterable but a text or a mapping), else :class:`~memorylab.errors.InvalidSetting` saying to
    pass a list ``of`` them (each item is checked where it is used).

    >>> check_list("thresholds", 0.5, of="thresholds")
    Traceback (most recent call last):
    ...
    memorylab.errors.InvalidSetting: thresholds must be a list of thresholds, not float: pass [0.5]
    """
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise InvalidSetting(
            f"{label} must be a list of {of}, not {type(value).__name__}: pass [{value!r}]"
        )
    return list(value)


def check_name(label: str, value: object, *, what: str) -> str:
    """``value`` if it is a ``str`` that is not blank (a model's, a summarizer's name), else
    :class:`~memorylab.errors.InvalidSetting` ("a non-empty ``what``").

    >>> check_name("model", 5, what="model name or None")
    Traceback (most recent call last):
    ...
    memorylab.errors.InvalidSetting: model must be a non-empty model name or None, not 5
    """
    if not isinstance(value, str) or not value.strip():
        raise InvalidSetting(f"{label} must be a non-empty {what}, not {value!r}")
    return value


def check_columns(label: str, frame: _Frame, needed: Iterable[str], *, made_by: str) -> _Frame:
    """``frame`` if it is a table (a pandas DataFrame: it has ``columns``) holding the columns
    ``needed``, else :class:`~memorylab.errors.InvalidSetting` saying to pass what ``made_by``
    (the function whose frame it should be) returns.

    >>> check_columns("frame", 5, ["model"], made_by="calibration_df")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    memorylab.errors.InvalidSetting: frame must be a DataFrame as calibration_df returns, not int
    """
    present = getattr(frame, "columns", None)
    if present is None or isinstance(frame, type):
        kind = type(frame).__name__
        raise InvalidSetting(f"{label} must be a DataFrame as {made_by} returns, not {kind}")
    missing = [name for name in needed if name not in present]
    if missing:
        raise InvalidSetting(
            f"{label} must be a DataFrame as {made_by} returns: it has no {missing} column(s)"
        )
    return frame
