"""The layout's rules, checked on the source (docs/architecture.md).

- No module outside ``pytest_groundeval/plugin`` imports pytest: the core, the
  targets, the CLI, the mock and the reference server work without it.
- The package's modules import each other without cycles (module-level imports;
  imports inside functions are deliberate laziness and do not count).
- In ``core/`` imports inside functions count too: no module imports the package's
  own modules inside a function, and no cycle runs through one (issue 20, "laziness
  by structure"). Imports only a type checker runs (``if TYPE_CHECKING:``) are not
  dependencies at run time and do not count.
- Over the whole package, no cycle runs through an import inside a function either,
  and the package's own modules are imported inside a function only by the hand-offs
  in ``FUNCTION_LEVEL_IMPORTS``: the start-up shims that keep the plugin, the CLI and
  the history writer light, each with its reason.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

# One worker runs every check, so each module is parsed once (``_parsed``).
pytestmark = pytest.mark.xdist_group("architecture")

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


@functools.cache
def _parsed(path: Path) -> ast.Module:
    """The syntax tree of ``path``, parsed once for every check of this module (the checks only read it)."""
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _package_of(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


@functools.cache
def _imports(name: str, path: Path, *, top_level_only: bool) -> frozenset[str]:
    """Absolute names of the modules ``name`` imports (``TYPE_CHECKING`` blocks excluded)."""
    tree = _parsed(path)
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
    return frozenset(found)


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
    found, nested = _scan_imports(name, path)
    return found, sorted(nested)


@functools.cache
def _scan_imports(name: str, path: Path) -> tuple[set[str], dict[int, set[str]]]:
    """``(modules imported anywhere, line -> package modules imported there inside a function)``.

    Typing-only blocks (``if TYPE_CHECKING:``) are skipped.
    """
    tree = _parsed(path)
    package = _package_of(name, path)
    found: set[str] = set()
    nested: dict[int, set[str]] = {}

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
            own = {m for m in modules if m == "pytest_groundeval" or m.startswith("pytest_groundeval.")}
            if in_function and own:
                nested[node.lineno] = own
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


# -- the whole package: function-level imports count (issue 20) ----------------------------------

FUNCTION_LEVEL_IMPORTS = {
    ("plugin.fixtures", "plugin.runners"): (
        "start-up: the plugin module is imported by every pytest run; its session fixtures hand off to the runner, "
        "the targets' HTTP stack, the judge clients and the mock (pydantic, aiohttp, httpx) only when a session "
        "asks for one (tests/test_package.py)"
    ),
    ("plugin.fixtures", "plugin.mock_fixture"): (
        "start-up: the mock provider (aiohttp's server side) is imported only by a session that needs it, never "
        "by a run against --eval-url or a target map"
    ),
    ("plugin.fixtures", "plugin.spawn_ahead"): (
        "start-up: the embedded reference server is launched before plugin.runners imports the HTTP stack, "
        "so that the two starts overlap (tests/plugin/test_spawn_ahead.py)"
    ),
    ("targets.spawn", "targets.http"): (
        "start-up: SpawnedTarget.launch imports no HTTP library, so a launch can come before the HTTP stack's "
        "imports; the HttpTarget is made at readiness (tests/targets/test_targets.py)"
    ),
    ("plugin.hooks", "plugin.controller"): (
        "start-up: the controller (pydantic, core.report) is registered only for a session with a dataset "
        "(tests/plugin/test_session.py)"
    ),
    ("plugin.hooks", "plugin.collect"): (
        "start-up: collecting a manifest loads the dataset models (pydantic); a run without a dataset never does"
    ),
    ("history.writer", "history.migrations"): (
        "start-up: the writer the plugin uses runs on the database driver alone; SQLAlchemy loads only to create "
        "or migrate the schema (tests/history/test_engine.py)"
    ),
    ("plugin.options", "targets.mapping"): (
        "start-up: a target map is checked only when --eval-target-map is given; reading its answers uses the "
        "response models (pydantic), which loading the plugin never imports (tests/test_package.py)"
    ),
    ("cli.gate", "history.stored_report"): (
        "start-up: SQLAlchemy loads only when groundeval gate reads a stored run (--run), not for --report"
    ),
    ("cli._outputs", "history.stored_report"): (
        "start-up: SQLAlchemy loads only when groundeval report/merge draw trends from --history URL"
    ),
}
"""(module, imported module) -> why that import waits for a function, package prefix left off.

Each is a hand-off to a module that imports at top level with real types; nothing
else in the package imports its own modules inside a function."""

_PREFIX = "pytest_groundeval."


def _known(module: str) -> str:
    """The deepest module of the package that importing ``module`` runs."""
    while module and module not in MODULES:
        module = module.rpartition(".")[0]
    return module


def _function_level_pairs(modules: dict[str, Path]) -> dict[tuple[str, str], list[int]]:
    pairs: dict[tuple[str, str], list[int]] = {}
    for name, path in modules.items():
        for line, imported in sorted(_scan_imports(name, path)[1].items()):
            known = {_known(m) for m in imported} - {""}
            # `from pkg import sub` names pkg and pkg.sub: the pair is the submodule's.
            for module in {m for m in known if not any(o.startswith(m + ".") for o in known)}:
                pairs.setdefault((name.removeprefix(_PREFIX), module.removeprefix(_PREFIX)), []).append(line)
    return pairs


def test_the_package_imports_itself_inside_functions_only_in_the_listed_hand_offs():
    pairs = _function_level_pairs(MODULES)
    unlisted = {pair: lines for pair, lines in pairs.items() if pair not in FUNCTION_LEVEL_IMPORTS}
    assert unlisted == {}, "import these at top level, or hand off through a listed shim"
    # A hand-off that is gone leaves the list: it stays the list of what waits, and why.
    assert sorted(set(FUNCTION_LEVEL_IMPORTS) - set(pairs)) == []


def _runtime_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    graph = {}
    for name, path in modules.items():
        targets = set()
        for module in _scan_imports(name, path)[0]:
            module = _known(module)
            # A submodule importing its own package (a parent) is not a cycle (test_no_import_cycles).
            if module and module != name and not name.startswith(module + "."):
                targets.add(module)
        graph[name] = targets
    return graph


def test_the_package_has_no_cycle_counting_imports_inside_functions():
    assert _cycles(_runtime_graph(MODULES)) == []


def test_the_package_checks_see_a_hand_off_and_a_hidden_cycle(tmp_path):
    # Two modules of the package, faked on disk: b imports a at top level, a imports b inside a function.
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("def f():\n    from pytest_groundeval.core import text\n    from . import b\n")
    b.write_text("from . import a\n")
    modules = {"pytest_groundeval.cli.a": a, "pytest_groundeval.cli.b": b}
    MODULES.update(modules)
    try:
        pairs = _function_level_pairs(modules)
        cycles = _cycles(_runtime_graph(modules))
    finally:
        for name in modules:
            del MODULES[name]
    assert pairs == {("cli.a", "core.text"): [2], ("cli.a", "cli.b"): [3]}
    assert cycles == [["pytest_groundeval.cli.a", "pytest_groundeval.cli.b", "pytest_groundeval.cli.a"]]
