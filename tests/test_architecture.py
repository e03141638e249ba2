"""The layout's rules, checked on the source (docs/architecture.md).

- No module outside ``pytest_groundeval/plugin`` imports pytest: the core, the
  targets, the CLI, the mock and the reference server work without it.
- The package's modules import each other without cycles (module-level imports;
  imports inside functions are deliberate laziness and do not count).
- In ``core/`` imports inside functions count too: no module imports the package's
  own modules inside a function, and no cycle runs through one (issue 20, "laziness
  by structure"). Imports only a type checker runs (``if TYPE_CHECKING:``) are not
  dependencies at run time and do not count.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_groundeval"


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _package_of(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _imports(name: str, path: Path, *, top_level_only: bool) -> set[str]:
    """Absolute names of the modules ``name`` imports (``TYPE_CHECKING`` blocks excluded)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = _package_of(name, path)
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            # `from . import x` imports the submodule x when there is one.
            found.update(f"{module}.{alias.name}" for alias in node.names if f"{module}.{alias.name}" in MODULES)
    return found


def test_only_the_plugin_imports_pytest():
    offenders = []
    for name, path in MODULES.items():
        if name.startswith("pytest_groundeval.plugin"):
            continue
        imported = _imports(name, path, top_level_only=False)
        if any(module == "pytest" or module.startswith(("pytest.", "_pytest")) for module in imported):
            offenders.append(name)
    assert offenders == []


def test_the_checks_see_a_pytest_import(tmp_path):
    # The scan above must be able to fail: it finds pytest in a module that imports it.
    module = tmp_path / "m.py"
    module.write_text("def f():\n    import pytest\n")
    assert "pytest" in _imports("m", module, top_level_only=False)


def _graph() -> dict[str, set[str]]:
    graph = {}
    for name, path in MODULES.items():
        targets = set()
        for module in _imports(name, path, top_level_only=True):
            # Importing a.b.c runs a and a.b first: depend on the deepest module we know.
            while module and module not in MODULES:
                module = module.rpartition(".")[0]
            if module and module != name:
                targets.add(module)
        graph[name] = targets
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    cycles, state = [], {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                cycles.append(stack[stack.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    return cycles


def test_no_import_cycles():
    # A package's __init__ that re-exports its submodules is not a cycle with them: the
    # submodules' imports of their own package go to the package, which is the parent.
    graph = _graph()
    for name in graph:
        graph[name] = {t for t in graph[name] if not name.startswith(t + ".")}
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]


MAX_MODULE_LINES = 800


def test_no_module_is_over_800_lines():
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in MODULES.items()}
    assert {name: n for name, n in sizes.items() if n > MAX_MODULE_LINES} == {}


# -- core: function-level imports count (issue 20) ------------------------------------------------


def _runtime_imports(name: str, path: Path) -> tuple[set[str], list[int]]:
    """``(modules imported anywhere, lines of function-level imports of the package)``; typing-only blocks skipped."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = _package_of(name, path)
    found: set[str] = set()
    nested: list[int] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child, in_function)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if isinstance(node, ast.Import):
                modules = {alias.name for alias in node.names}
            elif node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
                modules = {module} | {f"{module}.{a.name}" for a in node.names if f"{module}.{a.name}" in MODULES}
            else:
                module = node.module or ""
                modules = {module} | {f"{module}.{a.name}" for a in node.names if f"{module}.{a.name}" in MODULES}
            found.update(modules)
            if in_function and any(m == "pytest_groundeval" or m.startswith("pytest_groundeval.") for m in modules):
                nested.append(node.lineno)
            return
        inside = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for child in ast.iter_child_nodes(node):
            visit(child, inside)

    visit(tree, False)
    return found, nested


def _core_modules() -> dict[str, Path]:
    return {n: p for n, p in MODULES.items() if n.startswith("pytest_groundeval.core")}


def test_core_imports_none_of_the_package_inside_a_function():
    offenders = {name: lines for name, path in _core_modules().items() if (lines := _runtime_imports(name, path)[1])}
    assert offenders == {}


def test_core_has_no_cycle_counting_imports_inside_functions():
    core = _core_modules()
    graph = {}
    for name, path in core.items():
        targets = set()
        for module in _runtime_imports(name, path)[0]:
            while module and module not in MODULES:
                module = module.rpartition(".")[0]
            if module in core and module != name and not name.startswith(module + "."):
                targets.add(module)
        graph[name] = targets
    assert _cycles(graph) == []


def test_the_core_checks_see_an_import_inside_a_function(tmp_path):
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pytest_groundeval.core import text\n"
        "def f():\n    from pytest_groundeval.core import wire\n"
    )
    found, nested = _runtime_imports("m", module)
    assert "pytest_groundeval.core.wire" in found and "pytest_groundeval.core.text" not in found and nested == [5]
