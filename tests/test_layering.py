"""The import graph keeps its layers, and has no import circle.

The layers come from the package layout, not from a list kept here: every top-level module of ``ccpt`` is core,
and each subpackage declares its layer in its ``__init__.py`` (``__layer__ = "report"``); a module may declare
its own (``schemas/pipeline.py`` is the pipeline's). :data:`LAYERS` says which layers each layer may import.

The graph is read from the source with :mod:`ast`: every ``import`` statement, function-level ones and those under
``if TYPE_CHECKING:`` included, so a lazy import counts too, and so does a type named only in annotations: a module
that needs a type assembled above it is in the wrong place, even if the import never runs. Importing a submodule
initialises its parent package first, which is how packages work; that implicit step is not an edge, only the
modules an import statement names are.
"""

from __future__ import annotations

import ast
import functools
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "ccpt"

# Which layers each layer may import (its own included). Core is Inspect-free by contract: the benchmark's
# data, prompts, parsing, scoring and statistics, and the distilled judge (judging/), usable without Inspect.
LAYERS: dict[str, frozenset[str]] = {
    "core": frozenset({"core"}),
    "results": frozenset({"core", "results"}),
    "report": frozenset({"core", "results", "report"}),  # reports read results; never eval/
    "eval": frozenset({"core", "results", "eval"}),
    "pipeline": frozenset({"core", "report", "pipeline"}),
    "human": frozenset({"core", "results", "report", "pipeline", "human"}),
    "cli": frozenset({"core", "results", "report", "eval", "pipeline", "human", "cli"}),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports_of(name: str, source: str, *, package: bool = False) -> set[str]:
    """Every module name the module ``name`` (a package's ``__init__`` if ``package``) imports, function-level and
    ``if TYPE_CHECKING:`` imports included (``from a import b`` yields both ``a`` and ``a.b``)."""
    parts = name.split(".") if package else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = parts[: len(parts) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def _imports(path: Path) -> set[str]:
    return _imports_of(_module_name(path), path.read_text(encoding="utf-8"), package=path.name == "__init__.py")


def import_graph() -> dict[str, set[str]]:
    """Module name → the names it imports, for every module under src/."""
    return {_module_name(p): _imports(p) for p in SRC.rglob("*.py")}


def _own_edges(graph: Mapping[str, set[str]]) -> dict[str, set[str]]:
    """Module → the ccpt modules it imports (names that are not modules, e.g. ``ccpt.results.optional``, dropped)."""
    return {name: {m for m in imports if m in graph and m != name} for name, imports in graph.items()}


def _reachable(graph: Mapping[str, set[str]], start: str) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for name in graph[todo.pop()]:
            if name in graph and name not in seen:
                seen.add(name)
                todo.append(name)
    return seen


def _imports_package(imports: set[str], package: str) -> bool:
    return any(name == package or name.startswith(package + ".") for name in imports)


def cycles(edges: Mapping[str, set[str]]) -> list[frozenset[str]]:
    """The import circles of a graph: its strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(edges.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


# ------------------------------------------------------------------------------------------------- layers


@functools.cache
def _declared_layer(path: Path) -> str | None:
    """The ``__layer__ = "..."`` a module declares at its top level, if any."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__layer__" for t in node.targets):
            assert isinstance(node.value, ast.Constant), f"{path}: __layer__ must be a string literal"
            return str(node.value.value)
    return None


def _subpackages() -> list[Path]:
    return sorted(p.parent for p in PACKAGE.glob("*/__init__.py"))


def module_layers() -> dict[str, str]:
    """Module name → its layer: its own declaration, else its nearest package's; top-level modules are core."""
    layers: dict[str, str] = {}
    for path in sorted(SRC.rglob("*.py")):
        name = _module_name(path)
        layer = _declared_layer(path)
        directory = path.parent
        while layer is None and directory != PACKAGE:
            init = directory / "__init__.py"
            layer = _declared_layer(init) if init.is_file() else None
            directory = directory.parent
        layers[name] = layer or "core"
    return layers


def test_every_subpackage_declares_a_known_layer_and_top_level_modules_are_core() -> None:
    undeclared = [p.name for p in _subpackages() if _declared_layer(p / "__init__.py") is None]
    assert undeclared == [], f"subpackages of ccpt declaring no __layer__ in __init__.py: {undeclared}"
    unknown = {name: layer for name, layer in module_layers().items() if layer not in LAYERS}
    assert unknown == {}, f"layers not in LAYERS: {unknown}"
    top = [p for p in PACKAGE.glob("*.py")]
    assert [p.name for p in top if _declared_layer(p) not in (None, "core")] == []
    assert {module_layers()[_module_name(p)] for p in top} == {"core"}


def test_each_layer_imports_only_the_layers_it_may() -> None:
    layers, edges = module_layers(), _own_edges(import_graph())
    offenders = sorted(
        f"{name} ({layers[name]}) → {other} ({layers[other]})"
        for name, imported in edges.items()
        for other in imported
        if layers[other] not in LAYERS[layers[name]]
    )
    assert offenders == []


def test_the_layers_are_derived_from_the_layout() -> None:
    # Spot checks that the derivation reads the tree as documented (CONTRIBUTING.md, "Layout").
    layers = module_layers()
    assert layers["ccpt.spec"] == layers["ccpt.io.safe_csv"] == layers["ccpt.judging.distilled"] == "core"
    assert layers["ccpt.schemas.base"] == "core" and layers["ccpt.schemas.pipeline"] == "pipeline"
    assert layers["ccpt.report.tables"] == "report" and layers["ccpt.human.app.server"] == "human"
    assert layers["ccpt.results.usage"] == "results" and layers["ccpt.eval.sweep"] == "eval"


def test_the_graph_reader_sees_lazy_and_relative_imports() -> None:
    # The checks below are only as good as this reader: a function-level import must count.
    graph = import_graph()
    assert "ccpt.io.sources" in graph["ccpt.spreading.solver"]  # imported inside load_graph()
    assert _imports_package(graph["ccpt.results.inspect_logs"], "inspect_ai")  # imported inside read_logs()
    assert "ccpt.dataset" in graph["ccpt.results.authors"]  # imported only under `if TYPE_CHECKING:` there


def test_only_the_cli_imports_the_cli() -> None:
    graph = import_graph()
    offenders = sorted(
        name
        for name, imports in graph.items()
        if not name.startswith("ccpt.cli") and _imports_package(imports, "ccpt.cli")
    )
    assert offenders == [], f"modules outside ccpt.cli import it: {offenders}"


def test_core_modules_never_reach_inspect() -> None:
    graph, layers = import_graph(), module_layers()
    core = [name for name, layer in layers.items() if layer == "core"]
    assert "ccpt.spec" in core and "ccpt.prompts" in core
    offenders = {}
    for name in core:
        via = sorted(m for m in _reachable(graph, name) if _imports_package(graph[m], "inspect_ai"))
        if via:
            offenders[name] = via
    assert offenders == {}, f"core modules reaching inspect_ai (core module → ccpt modules importing it): {offenders}"


def test_report_imports_nothing_from_eval() -> None:
    graph = import_graph()
    offenders = {
        name: sorted(m for m in _reachable(graph, name) if m.startswith("ccpt.eval"))
        for name in graph
        if name.startswith("ccpt.report")
    }
    assert {name: via for name, via in offenders.items() if via} == {}


# ------------------------------------------------------------------------------------------------- circles


def test_no_import_circles() -> None:
    assert [sorted(c) for c in cycles(_own_edges(import_graph()))] == []


def test_the_circle_finder_finds_circles() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e", "d"}, "f": {"g"}, "g": {"f"}}
    assert sorted(sorted(c) for c in cycles(edges)) == [["a", "b", "c"], ["f", "g"]]
    # A function-level import closes a circle just as a module-level one does.
    graph = {
        "ccpt.x": _imports_of("ccpt.x", "import ccpt.y\n"),
        "ccpt.y": _imports_of("ccpt.y", "def f():\n    from ccpt import x\n"),
    }
    assert cycles(_own_edges(graph)) == [frozenset({"ccpt.x", "ccpt.y"})]
    # So does an import only for annotations: the type belongs below both modules.
    graph["ccpt.y"] = _imports_of("ccpt.y", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import ccpt.x\n")
    assert cycles(_own_edges(graph)) == [frozenset({"ccpt.x", "ccpt.y"})]


# ------------------------------------------------------------------------------------------------- import cost


def test_importing_ccpt_is_cheap_and_inspect_free() -> None:
    code = (
        "import sys, ccpt; "
        "heavy = [m for m in ('inspect_ai', 'pandas', 'matplotlib', 'click') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_the_public_api_names_exist() -> None:
    """What docs/python-api.md ("What is public") promises: every name of ``ccpt.__all__`` and of the public
    packages' ``__all__`` resolves (``ccpt.judges`` once it exists)."""
    import importlib

    import ccpt

    for module in (
        ccpt,
        *(importlib.import_module(f"ccpt.{p}") for p in ("methods", "judges") if (PACKAGE / p).is_dir()),
    ):
        missing = [name for name in module.__all__ if not hasattr(module, name)]
        assert module.__all__ and missing == [], f"{module.__name__}.__all__ names what does not exist: {missing}"


def test_inspect_internals_are_reached_from_one_guarded_module_only() -> None:
    """Inspect's private modules (``inspect_ai._*``) change between 0.3.x releases: only eval/inspect_compat.py,
    which guards each import with a fallback, may import them."""
    graph = import_graph()
    offenders = {
        name: sorted(m for m in imports if m.startswith("inspect_ai._"))
        for name, imports in graph.items()
        if name != "ccpt.eval.inspect_compat"
    }
    assert {name: mods for name, mods in offenders.items() if mods} == {}
    assert any(m.startswith("inspect_ai._") for m in graph["ccpt.eval.inspect_compat"])  # the check sees them
