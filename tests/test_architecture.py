"""The house rules of docs/architecture.md, checked on the source: no import circles (lazy
and ``TYPE_CHECKING`` imports included), and no floor importing a floor above it."""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path

import pytest

PACKAGE_ROOT = Path(__file__).resolve().parent.parent / "toolkit"

# What each part of the package may never import (its floor and the floors above it).
_ABOVE_THE_GROUND = (  # everything but the ground floor (errors, results, validation)
    "memorylab.config",
    "memorylab.memory",
    "memorylab.llm",
    "memorylab.compress",
    "memorylab.agent",
    "memorylab.tools",
    "memorylab.transcripts",
    "memorylab.analysis",
    "memorylab.evaluate",
    "memorylab.privacy",
    "memorylab.widgets",
    "memorylab.report",
    "memorylab._console",
    "memorylab.cli",
)
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "memorylab.errors": ("memorylab.",),
    "memorylab.results": _ABOVE_THE_GROUND,
    "memorylab._validation": _ABOVE_THE_GROUND,
    "memorylab.config": ("memorylab.memory", "memorylab.compress", "memorylab.analysis"),
    "memorylab.memory": (
        "memorylab.compress",
        "memorylab.llm",
        "memorylab.agent",
        "memorylab.analysis",
        "memorylab.evaluate",
        "memorylab.widgets",
        "memorylab.privacy",
        "memorylab.report",
        "memorylab.cli",
    ),
    "memorylab.llm": (
        "memorylab.compress",
        "memorylab.agent",
        "memorylab.analysis",
        "memorylab.evaluate",
        "memorylab.widgets",
        "memorylab.privacy",
        "memorylab.report",
        "memorylab.cli",
    ),
    "memorylab.compress": (
        "memorylab.agent",
        "memorylab.analysis",
        "memorylab.evaluate",
        "memorylab.widgets",
        "memorylab.privacy",
        "memorylab.report",
        "memorylab.cli",
    ),
    "memorylab.analysis": ("memorylab.evaluate", "memorylab.widgets", "memorylab.report", "memorylab.cli"),
    "memorylab.evaluate": ("memorylab.widgets", "memorylab.report", "memorylab.cli"),
    "memorylab.privacy": (
        "memorylab.evaluate",  # the caches it cleans are declared below it (memory._holders)
        "memorylab.widgets",
        "memorylab.report",
        "memorylab.cli",
    ),
    "memorylab.widgets": ("memorylab.report", "memorylab.cli"),
    # the commands' shared plumbing: below both command modules, above nothing it serves
    "memorylab._console": (
        "memorylab.analysis",
        "memorylab.evaluate",
        "memorylab.privacy",
        "memorylab.widgets",
        "memorylab.report",
        "memorylab.cli",
    ),
}

# PURE modules: no I/O, no clock, no environment (they are tested with golden files and
# property tests). They may import only these standard-library modules and memorylab's own pure
# modules.
PURE = {
    "memorylab.memory._records",
    "memorylab.memory._format",
    "memorylab.memory._preload",
    "memorylab.memory._pins",  # a pinned block's identity: a hash, no file
    "memorylab.memory._request",  # what the model is sent, and its tokens
    "memorylab.memory._retention",
    "memorylab.memory._redact",
    "memorylab.compress._policy",
    "memorylab.compress._strategy",  # the strategies decide; the compressor carries plans out
    "memorylab.compress._summary",
    "memorylab.compress._keep_recent",
    "memorylab.compress._clear_tool_results",
    "memorylab.compress._trim",
    "memorylab.results",  # the result convention: values and a deprecation warning
    "memorylab._validation",
}
PURE_STDLIB = {
    "__future__",
    "bisect",
    "collections",
    "dataclasses",
    "datetime",
    "enum",
    "fractions",
    "functools",
    "hashlib",
    "html",
    "itertools",
    "json",
    "math",
    "numbers",
    "re",
    "string",
    "typing",
    "warnings",
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted((PACKAGE_ROOT / "memorylab").rglob("*.py"))}


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """Nodes under ``if TYPE_CHECKING:`` (annotations only: never executed)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                skipped.update(id(n) for n in ast.walk(child))
    return skipped


def _imports(name: str, path: Path, known: set[str], type_only: bool) -> set[str]:
    """Every module ``name`` imports, at its top or inside a function (a lazy import), and
    with ``type_only`` under ``if TYPE_CHECKING:`` too."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped = set() if type_only else _type_checking_nodes(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            submodules = {f"{module}.{a.name}" for a in node.names} & known
            found |= submodules  # ``from package import submodule`` needs the submodule only
            if len(submodules) < len(node.names):
                found.add(module)
    return found


@functools.cache
def _graph(type_only: bool = True) -> dict[str, set[str]]:
    """Who imports whom; ``type_only=False`` leaves out what only type checkers import."""
    modules = _modules()
    known = set(modules)
    return {name: _imports(name, path, known, type_only) for name, path in modules.items()}


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, ()):
            if target not in edges:
                continue
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in edges:
        if node not in index:
            visit(node)
    return found


def test_there_are_modules_to_check() -> None:
    graph = _graph()
    assert {"memorylab", "memorylab.memory._store", "memorylab.compress._policy"} <= set(graph)


def test_no_import_circles_lazy_and_type_checking_imports_included() -> None:
    assert _cycles(_graph()) == []


def _package(module: str) -> str:
    """The part of the house a module belongs to: its subpackage (``memorylab.analysis``), or
    itself for a top-level module (``memorylab.cli``) and the package (``memorylab``)."""
    return ".".join(module.split(".")[:2])


def _package_graph(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """Who imports whom, modules collapsed to their package (an import within one is none)."""
    collapsed: dict[str, set[str]] = {_package(module): set() for module in edges}
    for module, targets in edges.items():
        collapsed[_package(module)] |= {
            _package(t) for t in targets if t in edges and _package(t) != _package(module)
        }
    return collapsed


def test_no_package_imports_a_package_that_imports_it() -> None:
    """No circle between the parts of the house (analysis and evaluate, privacy and evaluate):
    lazy and ``TYPE_CHECKING`` imports included, so the floors can be read off the packages."""
    assert _cycles(_package_graph(_graph())) == []


def test_the_package_circle_finder_sees_a_lazy_circle_between_packages() -> None:
    edges = {
        "memorylab.analysis._lineage": {"memorylab.evaluate.facts"},
        "memorylab.evaluate.facts": set(),
        "memorylab.evaluate._cases": {"memorylab.analysis._sources"},
        "memorylab.analysis._sources": set(),
        "memorylab.cli": {"memorylab.analysis._sources"},
    }
    assert _cycles(_package_graph(edges)) == [["memorylab.analysis", "memorylab.evaluate"]]


def test_type_checking_imports_are_counted(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a.b\n")
    assert "a.b" in _imports("m", source, {"a.b"}, True)
    assert "a.b" not in _imports("m", source, {"a.b"}, False)


def test_the_circle_finder_finds_a_lazy_circle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(edges) == [["a", "b", "c"]]


@pytest.mark.parametrize("floor", sorted(FORBIDDEN))
def test_no_floor_imports_a_floor_above_it(floor: str) -> None:
    wrong = sorted(
        f"{module} imports {target}"
        for module, targets in _graph().items()
        if module == floor or module.startswith(floor + ".")
        for target in targets
        if any(target == f or target.startswith(f) for f in FORBIDDEN[floor])
        and not target.startswith(floor)
    )
    assert wrong == []


@pytest.mark.parametrize("module", sorted(PURE))
def test_pure_modules_do_no_io(module: str) -> None:
    targets = _graph(type_only=False)[module]  # annotations import nothing at run time
    wrong = sorted(
        t
        for t in targets
        if not (t in PURE or t == "memorylab.errors" or t.split(".")[0] in PURE_STDLIB)
    )
    assert wrong == []


def test_only_the_gateway_imports_litellm() -> None:
    importers = sorted(
        m for m, targets in _graph().items() if any(t.split(".")[0] == "litellm" for t in targets)
    )
    assert importers == ["memorylab.llm"]


def test_no_private_name_crosses_a_module_line() -> None:
    """A module's underscore names are its own: a name another module imports is named without
    one (the modules themselves are private behind the facades, so it stays unexported)."""
    modules = _modules()
    crossing = []
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("memorylab"):
                crossing += [
                    f"{name} imports {node.module}.{alias.name}"
                    for alias in node.names
                    if alias.name.startswith("_") and not alias.name.startswith("__")
                    and f"{node.module}.{alias.name}" not in modules  # a private module is fine
                ]
    assert crossing == []
