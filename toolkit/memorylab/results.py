"""The one shape of a result that is more than a table: what a function made, and what it learned
making it.

Every public function of memorylab that returns more than one DataFrame (or more than a parsed
document) returns a :class:`Result`: a frozen dataclass whose fields are named. A table result
(:class:`TableResult`) has its main table in ``frame``; the other fields are what was learned
making it (problems found, calibration, ties, a run's spend), typed, in the fields themselves.
Nothing travels in ``DataFrame.attrs`` (pandas documents ``attrs`` as experimental and most
operations drop it) and nothing is returned as a bare tuple.

In a notebook a table result shows as its table followed by its :meth:`TableResult.notes`.

Earlier versions returned some of these as ``(first, second)`` tuples or as DataFrames carrying
``attrs``. For one release those uses keep working and warn (``DeprecationWarning``):
:class:`FormerPair` unpacks and indexes like the old tuple, :class:`FormerFrame` forwards what
a DataFrame had (columns, methods, indexing, ``len``, ``attrs``) to ``frame``.
"""

from __future__ import annotations

import html
import warnings
from collections.abc import Iterator
from dataclasses import fields
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    import pandas as pd


class Result:
    """Base of memorylab's results: subclasses are frozen dataclasses with named fields."""

    __slots__ = ()

    def _fields(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}  # type: ignore[arg-type]


class TableResult(Result):
    """A result whose main table is ``frame``; the other fields are what was learned making it.

    Subclasses set ``repr=False`` on their dataclass so that this class's short ``repr`` (the
    table's shape and the field names) is kept.
    """

    __slots__ = ()
    frame: pd.DataFrame

    def notes(self) -> list[str]:
        """Lines a reader should see with the table (what it does not show); none by default."""
        return []

    def __repr__(self) -> str:
        rows, columns = self.frame.shape
        others = ", ".join(name for name in self._fields() if name != "frame")
        return f"{type(self).__name__}(frame=<{rows} rows × {columns} columns>, {others})"

    def _repr_html_(self) -> str:
        notes = "".join(f"<p>{html.escape(line)}</p>" for line in self.notes())
        return str(self.frame._repr_html_()) + notes


class FormerPair:
    """A result that earlier versions returned as a ``(first, second)`` tuple: unpacking or
    indexing it that way still works for one release, with a ``DeprecationWarning`` that names
    the attributes to use. A subclass sets ``_former`` to the call that returns it and the names
    of its two fields."""

    __slots__ = ()
    _former: ClassVar[tuple[str, str, str]]

    def _as_tuple(self) -> tuple[Any, Any]:
        call, first, second = self._former
        warnings.warn(
            f"{call} returns a {type(self).__name__}: use result.{first} and result.{second} "
            f"instead of unpacking or indexing it as ({first}, {second})",
            DeprecationWarning,
            stacklevel=3,  # the caller's line that unpacks or indexes
        )
        return getattr(self, first), getattr(self, second)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._as_tuple())

    def __getitem__(self, index: int) -> Any:
        return self._as_tuple()[index]


class FormerFrame:
    """A :class:`TableResult` that earlier versions returned as a DataFrame (with what was
    learned in ``frame.attrs``): for one release, what the DataFrame had is forwarded to
    ``frame`` with a ``DeprecationWarning``, and ``attrs`` gives the result's other fields as a
    dict. A subclass sets ``_former`` to the call that returns it.

    The forwarding is invisible to type checkers, so that mypy flags the old uses.
    """

    __slots__ = ()
    _former: ClassVar[str]

    def _frame_for(self, use: str) -> Any:
        warnings.warn(
            f"{self._former} returns a {type(self).__name__}, not a DataFrame: use "
            f"result.frame{use} (and the result's fields instead of frame.attrs)",
            DeprecationWarning,
            stacklevel=3,  # the caller's line that uses it as a frame
        )
        return self.frame  # type: ignore[attr-defined]

    if not TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any:
            if name.startswith("_") or name == "frame":  # notebooks probe _repr_*_ names
                raise AttributeError(name)
            frame = self._frame_for(f".{name}")
            if name == "attrs":
                return {key: value for key, value in self._fields().items() if key != "frame"}
            return getattr(frame, name)

        def __getitem__(self, key: Any) -> Any:
            return self._frame_for("[...]")[key]

        def __len__(self) -> int:
            return len(self._frame_for(" (len)"))

        def __iter__(self) -> Iterator[Any]:
            return iter(self._frame_for(" (iteration)"))

        def __contains__(self, key: Any) -> bool:
            return key in self._frame_for(" (in)")


__all__ = [
    "FormerFrame",
    "FormerPair",
    "Result",
    "TableResult",
]
