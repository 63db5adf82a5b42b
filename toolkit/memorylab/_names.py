"""Names looked up at run time: registries of summarizers and scorers, names that moved, and
results that used to be pairs.

Private helpers of :mod:`memorylab.compress.summarizers`, :mod:`memorylab.evaluate.scorers` and
the modules that keep an old import path or return type working for a release.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import Any, ClassVar, TypeVar

from memorylab.errors import InvalidSetting

_F = TypeVar("_F", bound=Callable[..., Any])


def register(
    table: MutableMapping[str, Callable[..., Any]],
    kind: str,
    name: str,
    factory: Callable[..., Any] | None,
) -> Callable[[_F], _F]:
    """Add ``factory`` to ``table`` under ``name`` (a name already taken is replaced); without
    ``factory``, a decorator that adds what it decorates."""
    if not isinstance(name, str) or not name.strip() or name != name.strip():
        raise InvalidSetting(f"a {kind} name must be a non-empty string, not {name!r}")

    def add(item: _F) -> _F:
        if not callable(item):
            raise InvalidSetting(f"the factory of {kind} {name!r} must be callable, not {item!r}")
        table[name] = item
        return item

    if factory is not None:
        add(factory)
    return add


def moved(module: str, homes: Mapping[str, str], *, stacklevel: int = 2) -> Callable[[str], Any]:
    """A module ``__getattr__`` for names that moved: ``homes`` maps each old name to the public
    module that holds it now (imported on use); using one warns (``DeprecationWarning``) with the
    import to write instead. ``stacklevel`` 3 when another ``__getattr__`` calls this one."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(
            f"{module}.{name} has moved: import it from {home} (from {home} import {name})",
            DeprecationWarning,
            stacklevel=stacklevel,
        )
        return getattr(importlib.import_module(home), name)

    return __getattr__


class FormerPair:
    """A result that earlier versions returned as a ``(first, second)`` tuple: unpacking or
    indexing it that way still works for one release, with a ``DeprecationWarning`` that names
    the attributes to use. A subclass (a frozen dataclass) sets ``_former`` to the call that
    returns it and the names of its two fields."""

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
