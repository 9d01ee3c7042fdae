"""The import graph keeps its layers: nothing outside cli/ imports the CLI, and the core never reaches Inspect.

The graph is read from the source with :mod:`ast` (every ``import`` statement, function-level ones included,
so a lazy import counts too), then closed transitively over ccpt's own modules.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

# Inspect-free by contract: the benchmark's data, prompts, parsing, scoring and statistics, and the helpers
# they use. A module joins this list when it must stay usable without Inspect installed.
CORE = (
    "ccpt.activation",
    "ccpt.agreement",
    "ccpt.agreement_store",
    "ccpt.answers",
    "ccpt.data_stats",
    "ccpt.dataset",
    "ccpt.download",
    "ccpt.errors",
    "ccpt.export",
    "ccpt.graph",
    "ccpt.jsonout",
    "ccpt.outputs",
    "ccpt.prompts",
    "ccpt.protocol",
    "ccpt.rows",
    "ccpt.schemas",
    "ccpt.schemas.base",
    "ccpt.schemas.results",
    "ccpt.schemas.sheets",
    "ccpt.schemas.stores",
    "ccpt.scoring",
    "ccpt.sheets",
    "ccpt.sources",
    "ccpt.spec",
    "ccpt.stats",
    "ccpt.weights",
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node except those under ``if TYPE_CHECKING:`` (annotations only; never executed)."""
    out, todo = [], [tree]
    while todo:
        node = todo.pop()
        out.append(node)
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))
    return out


def _imports(path: Path) -> set[str]:
    """Every module name ``path`` imports at run time, function-level imports included (``from a import b``
    yields both ``a`` and ``a.b``)."""
    name = _module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def import_graph() -> dict[str, set[str]]:
    """Module name → the names it imports, for every module under src/."""
    return {_module_name(p): _imports(p) for p in SRC.rglob("*.py")}


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for name in graph[todo.pop()]:
            if name in graph and name not in seen:
                seen.add(name)
                todo.append(name)
    return seen


def _imports_package(imports: set[str], package: str) -> bool:
    return any(name == package or name.startswith(package + ".") for name in imports)


def test_the_graph_reader_sees_lazy_and_relative_imports() -> None:
    # The checks below are only as good as this reader: a function-level import must count.
    graph = import_graph()
    assert "ccpt.sources" in graph["ccpt.eval.spreading"]  # imported inside load_graph()
    assert _imports_package(graph["ccpt.results.inspect_logs"], "inspect_ai")  # imported inside from_inspect_logs()
    assert "ccpt.results" not in graph["ccpt"]  # only under `if TYPE_CHECKING:` there


def test_only_the_cli_imports_the_cli() -> None:
    graph = import_graph()
    offenders = sorted(
        name
        for name, imports in graph.items()
        if not name.startswith("ccpt.cli") and _imports_package(imports, "ccpt.cli")
    )
    assert offenders == [], f"modules outside ccpt.cli import it: {offenders}"


def test_core_modules_never_reach_inspect() -> None:
    graph = import_graph()
    missing = [name for name in CORE if name not in graph]
    assert missing == [], f"core modules listed here but not in src/: {missing}"
    offenders = {}
    for name in CORE:
        via = sorted(m for m in _reachable(graph, name) if _imports_package(graph[m], "inspect_ai"))
        if via:
            offenders[name] = via
    assert offenders == {}, f"core modules reaching inspect_ai (core module → ccpt modules importing it): {offenders}"


def test_core_modules_never_reach_the_cli_or_eval() -> None:
    graph = import_graph()
    offenders = {
        name: sorted(m for m in _reachable(graph, name) if m.startswith(("ccpt.cli", "ccpt.eval"))) for name in CORE
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_importing_ccpt_is_cheap_and_inspect_free() -> None:
    code = (
        "import sys, ccpt; "
        "heavy = [m for m in ('inspect_ai', 'pandas', 'matplotlib', 'click') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


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
