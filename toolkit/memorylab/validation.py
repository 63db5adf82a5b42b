"""PURE: the checks of a setting's value that every floor shares (a count, a number).

One implementation each, so that every setting says the same thing when it is wrong:

>>> check_int("retries", 2, 0), check_number("base", 0.5, 0.0, strict=True)
(2, 0.5)
>>> check_int("retries", True, 0)
Traceback (most recent call last):
...
memorylab.errors.InvalidSetting: retries must be an int >= 0, not True
"""

from __future__ import annotations

import math
import numbers

from memorylab.errors import InvalidSetting

__all__ = ["check_int", "check_number"]


def check_int(label: str, value: object, minimum: int) -> int:
    """``value`` as an ``int`` if it is an integral number (not a ``bool``) >= ``minimum``, else
    :class:`~memorylab.errors.InvalidSetting`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise InvalidSetting(f"{label} must be an int >= {minimum}, not {value!r}")
    return int(value)


def check_number(
    label: str,
    value: object,
    minimum: float,
    *,
    strict: bool,
    unit: str | None = None,
    finite: bool = True,
) -> float:
    """``value`` as a ``float`` if it is a real number (not a ``bool``) >= ``minimum`` (``>``
    when ``strict``; finite unless ``finite`` is False), else
    :class:`~memorylab.errors.InvalidSetting` ("a number of ``unit``" when one is named)."""
    number = math.nan
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        number = float(value)
    if (
        math.isnan(number)
        or (finite and math.isinf(number))
        or number < minimum
        or (strict and number == minimum)
    ):
        kind = f"a number of {unit}" if unit else "a finite number"
        bound = f"> {minimum:g}" if strict else f">= {minimum:g}"
        raise InvalidSetting(f"{label} must be {kind} {bound}, not {value!r}")
    return number
