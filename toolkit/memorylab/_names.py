"""Names looked up at run time: registries of summarizers, strategies, loaders and scorers, the
plugins of installed packages that add to them (entry points), and names that moved (a module's
names, and keywords and attributes that were renamed).

Private helpers of the registries (:mod:`memorylab.compress._summarizers`,
:mod:`memorylab.compress._strategies`, the analysis loaders, :mod:`memorylab.evaluate._scorers`)
and of the modules that keep an old import path, keyword or attribute working for a release.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
import warnings
from collections.abc import Callable, Mapping, MutableMapping
from importlib.metadata import entry_points
from typing import Any, TypeVar

from memorylab.errors import InvalidSetting, PrerequisiteError

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


_PLUGGED_GROUPS: set[str] = set()
"""The entry-point groups whose plugins were loaded (once per process)."""
_BROKEN_PLUGINS: dict[tuple[str, str], str] = {}
"""(group, name) -> why that plugin could not be added: the error its lookup raises."""


def plugged_in(
    table: Mapping[str, _T], group: str, kind: str, add: Callable[[str, Any], object]
) -> Mapping[str, _T]:
    """``table`` with the plugins of installed packages added: the entry points of ``group``
    (``[project.entry-points."memorylab.summarizers"]`` in a package's pyproject.toml), each
    loaded and given to ``add(name, value)`` (the registry's own ``register_*``, which checks
    it), once per process: a registry calls this when a name is not in its table, and when it
    lists its names, so ``import memorylab`` imports no plugin. A name the table holds already
    (built in, or registered by the user's code) is kept. A plugin that fails to import or to
    register is skipped with a warning naming its package, and asking for its name raises
    :class:`~memorylab.errors.PrerequisiteError` with the same words: other names still work."""
    if group in _PLUGGED_GROUPS:
        return table
    _PLUGGED_GROUPS.add(group)
    for point in entry_points(group=group):
        if point.name in table:
            continue
        package = point.dist.name if point.dist is not None else "an installed package"
        try:
            add(point.name, point.load())
        except Exception as exc:  # a plugin's import may raise anything; the others must load
            why = f"{type(exc).__name__}: {exc}".splitlines()[0]
            message = (
                f"the {kind} {point.name!r} of the package {package} could not be added ({why}; "
                f"its entry point {point.value!r}, group {group!r}): fix or uninstall {package}"
            )
            _BROKEN_PLUGINS[(group, point.name)] = message
            warnings.warn(f"memorylab: {message}", UserWarning, stacklevel=2)
    return table


def plugin_lookup(
    table: Mapping[str, _T], group: str, kind: str, name: str, add: Callable[[str, Any], object]
) -> _T | None:
    """``table[name]``, else the plugin of that name (:func:`plugged_in`), else ``None``; the
    name of a plugin that could not be added raises its error."""
    found = table.get(name)
    if found is None:
        found = plugged_in(table, group, kind, add).get(name)
        if found is None and (group, name) in _BROKEN_PLUGINS:
            raise PrerequisiteError(_BROKEN_PLUGINS[(group, name)])
    return found


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


# The module paths 0.1 released behind what is now a package facade: since 0.2 the modules are
# private (the facades are the only supported import paths, docs/architecture.md). Each old path
# still imports for one release; its names are looked up in the facade, then in the module.
_OLD_MODULES = (
    "analysis.frames", "analysis.growth", "analysis.plots", "compress.baselines",
    "compress.compressor", "compress.extractive", "compress.policy", "compress.scripted",
    "compress.summarizers", "compress.tokens", "evaluate.cases", "evaluate.cli",
    "evaluate.compare", "evaluate.facts", "evaluate.plots", "evaluate.scorers", "evaluate.tables",
    "memory.conversation", "memory.display", "memory.format", "memory.paths",
    "memory.permissions", "memory.preload", "memory.records", "memory.redact",
    "memory.retention", "memory.store", "widgets.arena", "widgets.explorer", "widgets.stepper",
    "widgets.tuner",
)  # fmt: skip
OLD_MODULES: dict[str, tuple[str, ...]] = {
    **{
        f"memorylab.{old}": (f"memorylab.{package}", f"memorylab.{package}._{module}")
        for old in _OLD_MODULES
        for package, module in [old.split(".")]
    },
    "memorylab.evaluate.facts": ("memorylab.evaluate", "memorylab._facts"),
    "memorylab.compress.llm": ("memorylab.llm",),
    "memorylab.evaluate.baselines": ("memorylab.compress",),
}  # fmt: skip


def _old_module_getattr(module: str, homes: tuple[str, ...]) -> Callable[[str], Any]:
    def __getattr__(name: str) -> Any:
        for home in homes if not name.startswith("_") else ():  # never a module's own dunders
            found = importlib.import_module(home)
            public = getattr(found, "__all__", None)
            if (name in public) if public is not None else name in vars(found):
                advice = (f"import it from {home} (from {home} import {name})" if public is not
                          None else f"{name} is not public: it works for this release only")
                warnings.warn(f"{module} is private since 0.2: {advice}", DeprecationWarning,
                              stacklevel=2)  # fmt: skip
                return getattr(found, name)
        if name.startswith("_"):
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        return getattr(importlib.import_module(homes[-1]), name)  # its own moved names warn

    return __getattr__


class OldModulePaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """The import system's last resort for a module path of :data:`OLD_MODULES`: a module whose
    names warn (``DeprecationWarning``, naming the facade import) and are forwarded."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in OLD_MODULES:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        module.__getattr__ = _old_module_getattr(module.__name__, OLD_MODULES[module.__name__])  # type: ignore[method-assign]

    def get_code(self, fullname: str) -> types.CodeType:
        """What ``python -m <old path>`` runs: the module now behind it, as ``__main__``."""
        home = OLD_MODULES[fullname][-1]
        source = (
            "import runpy, sys\n"
            f"print('note: python -m {fullname} is now python -m {home}', file=sys.stderr)\n"
            f"runpy.run_module({home!r}, run_name='__main__', alter_sys=True)\n"
        )
        return compile(source, fullname, "exec")


def keep_old_module_paths() -> None:
    """Let the 0.1 module paths import (once per process)."""
    if not any(isinstance(finder, OldModulePaths) for finder in sys.meta_path):
        sys.meta_path.append(OldModulePaths())
