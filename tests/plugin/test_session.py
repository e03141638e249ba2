"""The controller's plugins (docs/architecture.md): the light session, the xdist hooks, the controller.

Every session registers ``groundeval-gate`` (``plugin.session``); the xdist hooks
(``groundeval-xdist``) only when pytest-xdist is present, as pytest-randomly's
``XdistHooks``; the controller (``groundeval-controller``), which imports the core at
top level, only when the session has a dataset.
"""

from __future__ import annotations

import ast
import typing
from pathlib import Path

import pytest

from pytest_groundeval.plugin.controller import Controller
from pytest_groundeval.plugin.session import GateSession
from pytest_groundeval.plugin.state import DatasetRun
from pytest_groundeval.plugin.xdist_hooks import XdistHooks

PLUGIN = Path(__file__).resolve().parents[2] / "pytest_groundeval" / "plugin"
NO_OTHERS = ("-p", "no:benchmark", "-p", "no:hypothesispytest", "-p", "no:anyio")


def _plugins(config: pytest.Config) -> dict[str, object | None]:
    manager = config.pluginmanager
    return {name: manager.get_plugin(name) for name in ("groundeval-gate", "groundeval-xdist", "groundeval-controller")}


def test_the_xdist_hooks_are_registered_only_when_xdist_is_present(pytester):
    with_xdist = _plugins(pytester.parseconfigure(*NO_OTHERS))
    assert isinstance(with_xdist["groundeval-xdist"], XdistHooks)
    assert with_xdist["groundeval-xdist"].session is with_xdist["groundeval-gate"]
    without = _plugins(pytester.parseconfigure(*NO_OTHERS, "-p", "no:xdist"))
    assert without["groundeval-xdist"] is None
    assert isinstance(without["groundeval-gate"], GateSession)


def test_the_controller_is_registered_only_for_a_session_with_a_dataset(pytester, smoke):
    plain = _plugins(pytester.parseconfigure(*NO_OTHERS))
    assert isinstance(plain["groundeval-gate"], GateSession) and plain["groundeval-controller"] is None
    assert plain["groundeval-gate"].controller is None
    for args in ([f"--eval-dataset={smoke}"], [str(smoke)], [str(smoke / "manifest.json")]):
        plugins = _plugins(pytester.parseconfigure(*NO_OTHERS, *args))
        controller = plugins["groundeval-controller"]
        assert isinstance(controller, Controller), args
        assert plugins["groundeval-gate"].controller is controller
        assert controller.session is plugins["groundeval-gate"]


def test_a_run_without_a_dataset_never_imports_the_controller_or_pydantic(pytester):
    # A fresh process is the point: what the run imported is only visible there.
    pytester.makepyfile(
        test_plain="""
        import sys

        def test_light():
            heavy = [m for m in ("pydantic", "pytest_groundeval.plugin.controller", "pytest_groundeval.core.report")
                     if m in sys.modules]
            assert heavy == []
        """
    )
    result = pytester.runpytest_subprocess(*NO_OTHERS, "-p", "no:cacheprovider", "-n", "0")
    result.assert_outcomes(passed=1)


def test_the_session_state_is_typed():
    # Real types, resolved at run time: no Any but the manifest's raw JSON and JSON blocks.
    hints = typing.get_type_hints(DatasetRun)
    loose = sorted(name for name, hint in hints.items() if "Any" in str(hint))
    assert loose == ["_raw", "shard", "spooled_baseline"]
    assert "ItemSpool" in str(hints["kept"])
    assert "RunOutcomes" in str(hints["outcomes"]) and "ReportWriter" in str(hints["writer"])


def _function_level_package_imports(path: Path) -> list[int]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found += [i.lineno for i in ast.walk(node) if isinstance(i, ast.ImportFrom) and i.level]
    return found


@pytest.mark.parametrize(
    "name", ["controller.py", "session.py", "state.py", "summary.py", "junit.py", "xdist_hooks.py", "history.py"]
)
def test_the_controller_side_imports_at_top_level_and_stays_small(name):
    path = PLUGIN / name
    assert _function_level_package_imports(path) == []
    assert len(path.read_text(encoding="utf-8").splitlines()) < 800
