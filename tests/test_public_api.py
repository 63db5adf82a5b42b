"""The curated public surface: every public ``__all__`` sorted, complete, importable, nothing
private leaking; private modules have none; the old top-level names warn; importing is fast."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
import types
import warnings

import pytest

import memorylab

TOP_LEVEL_LIMIT = 22  # "about 20": the seed's nouns and the verbs a notebook starts with


def _module_names() -> list[str]:
    found = ["memorylab"]
    for info in pkgutil.walk_packages(memorylab.__path__, "memorylab."):
        if not info.name.startswith("memorylab._data"):  # the bundled data and its generator
            found.append(info.name)
    return sorted(found)


def _is_private(name: str) -> bool:
    return any(part.startswith("_") for part in name.split(".")[1:])


# The supported import paths: the package facades and the top-level modules that are one
# concept's whole surface. Every other module is private (docs/architecture.md).
FACADES = [
    "memorylab",
    "memorylab.agent",
    "memorylab.analysis",
    "memorylab.cli",
    "memorylab.compress",
    "memorylab.config",
    "memorylab.errors",
    "memorylab.evaluate",
    "memorylab.llm",
    "memorylab.memory",
    "memorylab.privacy",
    "memorylab.report",
    "memorylab.results",
    "memorylab.tools",
    "memorylab.transcripts",
    "memorylab.widgets",
]
PUBLIC = FACADES
PRIVATE = [n for n in _module_names() if _is_private(n) and n != "memorylab.__main__"]


def test_the_walk_finds_the_house() -> None:
    assert {"memorylab.memory._store", "memorylab.memory._locking"} <= set(PRIVATE)


def test_no_public_module_outside_the_facades() -> None:
    public = [n for n in _module_names() if not _is_private(n) and n != "memorylab.__main__"]
    assert sorted(public) == FACADES


def test_the_old_module_paths_of_0_1_import_and_warn() -> None:
    """0.1's module paths import for one release; each name warns with the facade import."""
    from memorylab import _names

    for old, homes in _names.OLD_MODULES.items():
        module = importlib.import_module(old)
        facade = importlib.import_module(homes[0])
        name = sorted(facade.__all__)[0]
        with pytest.warns(DeprecationWarning, match=rf"from {homes[0]} import {name}"):
            assert getattr(module, name) is getattr(facade, name)
        with pytest.raises(AttributeError):
            _ = module.no_such_name
        with warnings.catch_warnings():  # tools that scan sys.modules (hypothesis) see no warning
            warnings.simplefilter("error")
            assert not hasattr(module, "__file__")
    with pytest.warns(DeprecationWarning, match=r"from memorylab\.analysis import memory_df"):
        from memorylab.analysis.frames import memory_df  # type: ignore[import-not-found]
    assert memory_df is memorylab.memory_df


def test_an_old_command_path_still_runs() -> None:
    """``python -m memorylab.evaluate.cli`` (0.1's command) runs the command, with a note."""
    done = subprocess.run([sys.executable, "-m", "memorylab.evaluate.cli", "--help"],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0 and "usage:" in done.stdout
    assert "is now python -m memorylab.evaluate._cli" in done.stderr


@pytest.mark.parametrize(
    "path", ["memorylab.analysis.sources", "memorylab.compress.strategy", "memorylab.validation"]
)
def test_module_paths_that_came_within_0_2_have_no_shim(path: str) -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(path)


def test_top_level_is_small() -> None:
    assert len(memorylab.__all__) <= TOP_LEVEL_LIMIT


@pytest.mark.parametrize("name", PUBLIC)
def test_every_public_module_has_an_all(name: str) -> None:
    assert isinstance(getattr(importlib.import_module(name), "__all__", None), list)


@pytest.mark.parametrize("name", PUBLIC)
def test_all_is_sorted_unique_and_exists(name: str) -> None:
    module = importlib.import_module(name)
    exported = module.__all__
    assert exported == sorted(set(exported))
    missing = [item for item in exported if not hasattr(module, item)]
    assert missing == []
    assert [item for item in exported if item.startswith("_") and item != "__version__"] == []


@pytest.mark.parametrize("name", PUBLIC)
def test_all_is_complete(name: str) -> None:
    """Every public class and function defined in a module (or a package's public names) is
    in its ``__all__``; a package exports nothing from a private module unless it says so."""
    module = importlib.import_module(name)
    exported = set(module.__all__)
    is_package = hasattr(module, "__path__")
    unlisted = []
    for attr, value in vars(module).items():
        if attr.startswith("_") or isinstance(value, types.ModuleType) or attr in exported:
            continue
        home = getattr(value, "__module__", None) or ""
        defined_here = home == name
        if (is_package and callable(value) and home.startswith("memorylab")) or (
            defined_here and (isinstance(value, type) or callable(value))
        ):
            unlisted.append(attr)
    assert unlisted == []


@pytest.mark.parametrize("name", PRIVATE)
def test_private_modules_have_no_all(name: str) -> None:
    assert not hasattr(importlib.import_module(name), "__all__")


def test_old_top_level_names_warn_and_still_work() -> None:
    from memorylab.errors import StoreError

    with pytest.warns(DeprecationWarning, match=r"from memorylab\.errors import StoreError"):
        assert memorylab.StoreError is StoreError
    with pytest.warns(DeprecationWarning, match="render_memory"):
        assert memorylab.render is memorylab.render_memory
    for name in memorylab._MOVED:  # every moved name resolves where the warning says
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            value = getattr(memorylab, name)
        assert getattr(importlib.import_module(memorylab._MOVED[name]), name) is value
    assert set(memorylab._MOVED).isdisjoint(memorylab.__all__)


def test_unknown_names_are_attribute_errors() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = memorylab.nope  # type: ignore[attr-defined]


def test_import_does_not_pull_heavy_libraries() -> None:
    code = (
        "import sys, memorylab; "
        "heavy = [m for m in ('litellm', 'pandas', 'matplotlib', 'ipywidgets', 'tiktoken', "
        "'numpy') if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
