"""Names looked up at run time: registries of summarizers and scorers, and names that moved
(a module's names, and keywords and attributes that were renamed).

Private helpers of :mod:`memorylab.compress.summarizers`, :mod:`memorylab.evaluate.scorers` and
the modules that keep an old import path, keyword or attribute working for a release.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any, TypeVar

from memorylab.errors import InvalidSetting

_F = TypeVar("_F", bound=Callable[..., Any])
_T = TypeVar("_T")


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


def renamed_attribute(old: str, new: str) -> Any:
    """A class attribute ``old`` that is now ``new``: reading (and setting) it still works, with
    a ``DeprecationWarning`` that names ``new``; an old method name works too (its call gets the
    new method)."""

    def warn(owner: object) -> None:
        warnings.warn(f"{type(owner).__name__}.{old} is now .{new}", DeprecationWarning,
                      stacklevel=3)  # fmt: skip

    def get(self: object) -> Any:
        warn(self)
        return getattr(self, new)

    def set_(self: object, value: Any) -> None:
        warn(self)
        setattr(self, new, value)

    return property(get, set_, doc=f"Deprecated: use ``{new}``.")


def renamed_keyword(
    call: str,
    old: str,
    new: str,
    old_value: _T | None,
    new_value: _T | None,
    *,
    stacklevel: int = 3,
) -> _T | None:
    """The value of keyword ``new`` of ``call``, which the previous release named ``old``: an
    ``old_value`` given (not ``None``) is used, with a ``DeprecationWarning`` that names ``new``;
    both given is a ``TypeError``. ``stacklevel`` 3 points at the line that called ``call``."""
    if old_value is None:
        return new_value
    if new_value is not None:
        raise TypeError(f"{call}() got both {old}= and {new}=; give {new}= only (its new name)")
    warnings.warn(
        f"{call}({old}=...) is now {call}({new}=...): {old}= keeps working for this release only",
        DeprecationWarning,
        stacklevel=stacklevel,
    )
    return old_value
