"""PURE: the checks of a setting's value that every floor shares (a count, a number): one
implementation each, so every setting says the same thing when it is wrong.

>>> check_int("retries", 2, 0), check_number("base", 0.5, 0.0, strict=True)
(2, 0.5)
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
