"""Fixtures for the plugin's tests: one shared reference target, and ``run`` for pytester runs.

Most plugin tests are about the harness (collection, aggregation, the gate, exit
codes), not about starting a server. They run pytest in process
(``pytester.runpytest``) against one reference server that this module spawns
once, against one mock, and hands to every run as an ``--eval-url`` target. A
test that is about spawning passes ``spawn=True`` (the run starts its own
mock and reference server, still in process), and a test that is about the
process itself (a crash, a signal, a real CLI) passes ``subprocess=True``.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests._support.pytest_args import NO_THIRD_PARTY_PLUGINS as _NO_THIRD_PARTY_PLUGINS

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "datasets" / "smoke"


@pytest.fixture(scope="session")
def shared_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A reference server spawned once for the whole test session, with its own mock."""
    from pytest_groundeval.mock import ThreadedMockProvider
    from pytest_groundeval.targets import SpawnConfig, SpawnedTarget, reference_command

    with ThreadedMockProvider() as mock:
        config = SpawnConfig(
            command=reference_command(),
            llm_url=mock.base_url,
            embed_url=mock.base_url,
            base_dir=tmp_path_factory.mktemp("shared-target"),
        )
        with SpawnedTarget(config) as spawned:
            yield spawned


@pytest.fixture
def smoke(pytester: pytest.Pytester) -> Path:
    """A copy of datasets/smoke inside the pytester directory."""
    target = pytester.path / "smoke"
    shutil.copytree(SMOKE, target)
    return target


_TARGET_FLAGS = ("--eval-spawn", "--eval-url")

NO_THIRD_PARTY_PLUGINS = _NO_THIRD_PARTY_PLUGINS  # tests/_support/pytest_args.py says why


@pytest.fixture
def run(pytester: pytest.Pytester, request: pytest.FixtureRequest) -> Callable[..., pytest.RunResult]:
    """``run(*args, spawn=False, subprocess=False, cache=False)``: one pytest run in the pytester directory.

    By default in process, against ``shared_target`` (unless ``args`` name their own
    target, or the selection needs none). ``spawn=True`` lets the run start its own
    mock and reference server; ``subprocess=True`` runs pytest in a child process;
    ``cache=True`` keeps pytest's cache provider (for ``--lf``).
    """

    def run(*args: str, spawn: bool = False, subprocess: bool = False, cache: bool = False) -> pytest.RunResult:
        cache_args = NO_THIRD_PARTY_PLUGINS + (() if cache else ("-p", "no:cacheprovider"))
        if subprocess:
            return pytester.runpytest_subprocess(*cache_args, *args, timeout=300)
        extra = [] if spawn else _shared_target_args(args, lambda: request.getfixturevalue("shared_target"))
        return pytester.runpytest(*cache_args, *extra, *args)

    return run


def _shared_target_args(args: Sequence[str], target: Callable[[], Any]) -> list[str]:
    """``--eval-url`` and ``--eval-api-key`` of ``target()`` (the shared target), unless ``args`` name a target."""
    if any(a.startswith(_TARGET_FLAGS) for a in args):
        return []
    shared = target()
    return [f"--eval-url={shared.base_url}", f"--eval-api-key={shared.api_key}"]


# -- runs shared by several tests ----------------------------------------------------------------


class _SharedRunRequest:
    """The parts of a fixture request ``pytest.Pytester`` uses, for a run that ``run_once`` shares.

    Pytester names its directory after ``function.__name__`` and hands its clean-up (``sys.modules``
    and ``sys.path`` put back, hook recorders closed) to ``addfinalizer``. Here the clean-up runs as
    soon as the shared run is over, not when the session ends: a module that tests import between
    the run and the end of the session would otherwise be dropped then (tests/conftest.py says why
    a module imported twice breaks things).
    """

    def __init__(self, request: pytest.FixtureRequest, name: str) -> None:
        self._request = request
        self.function = SimpleNamespace(__name__=name)
        self.finalizers: list[Callable[[], object]] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self._request, name)

    def addfinalizer(self, finalizer: Callable[[], object]) -> None:
        self.finalizers.append(finalizer)


@dataclass(frozen=True)
class SharedRun:
    """One in-process pytest run that several tests assert on: its result and its directory."""

    result: pytest.RunResult
    path: Path
    """The run's own directory: its copy of the smoke dataset (``smoke``) and whatever it wrote."""


@pytest.fixture(scope="session")
def run_once(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, shared_target: object
) -> Callable[..., SharedRun]:
    """``run_once(name, *args) -> SharedRun``: one run per ``name``, shared for the session.

    The run is what ``run(*args)`` would do (in process, against ``shared_target`` unless ``args``
    name a target), in a directory of its own holding a copy of the smoke dataset as ``smoke``;
    ``{path}`` in ``args`` stands for that directory. The first test to ask runs it; later ones
    get the same ``SharedRun`` for assertions of their own (asking with other ``args`` is an error).
    An ``-n 2`` run costs two worker processes: tests sharing one carry the same
    ``xdist_group`` mark, so that under xdist one worker runs it, once.
    """
    done: dict[str, tuple[tuple[str, ...], SharedRun]] = {}

    def run_once(name: str, *args: str) -> SharedRun:
        if name in done:
            asked, shared = done[name]
            assert asked == args, f"the shared run {name!r} was asked for with other arguments"
            return shared
        shim = _SharedRunRequest(request, name)
        try:
            with pytest.MonkeyPatch.context() as monkeypatch:
                pytester = pytest.Pytester(shim, tmp_path_factory, monkeypatch, _ispytest=True)
                shutil.copytree(SMOKE, pytester.path / "smoke")
                argv = [a.replace("{path}", str(pytester.path)) for a in args]
                target = _shared_target_args(argv, lambda: shared_target)
                result = pytester.runpytest(*NO_THIRD_PARTY_PLUGINS, "-p", "no:cacheprovider", *target, *argv)
        finally:
            for finalizer in reversed(shim.finalizers):
                finalizer()
        done[name] = (args, SharedRun(result, pytester.path))
        return done[name][1]

    return run_once


@pytest.fixture(scope="session")
def down_target_run(run_once: Callable[..., SharedRun]) -> Callable[..., SharedRun]:
    """``down_target_run(*extra) -> SharedRun``: the smoke dataset's qa items against a target that is down.

    ``--eval-url=http://127.0.0.1:9`` (nothing listens there), ``-k qa``, then ``extra`` (``-n 2``
    or nothing). test_plugin.py and test_never_green.py assert different things of the same two
    runs; their tests carry the xdist group ``down_target``.
    """

    def down(*extra: str) -> SharedRun:
        args = ("--eval-dataset={path}/smoke", "--eval-url=http://127.0.0.1:9", "--eval-api-key=k", "-k", "qa", *extra)
        return run_once("down-target" + "".join(extra).replace(" ", ""), *args)

    return down


@pytest.fixture(scope="session")
def smoke_n2_run(run_once: Callable[..., SharedRun]) -> SharedRun:
    """The smoke dataset under ``-n 2`` against ``shared_target``, writing ``report.json`` and a history.

    The history is ``h.db`` in the run's directory (SQLite), the run labelled ``xdist``. One run
    for test_plugin.py's modes and test_history.py's rows under xdist (xdist group ``smoke_n2``).
    """
    return run_once(
        "smoke-n2",
        "--eval-dataset={path}/smoke",
        "--eval-report={path}/report.json",
        "--eval-history=sqlite:///{path}/h.db",
        "--eval-label=xdist",
        "-n",
        "2",
    )


@pytest.fixture(scope="module")
def _module_runs() -> dict[object, object]:
    """What ``shared_run`` made in this module, by key."""
    return {}


@pytest.fixture
def shared_run(_module_runs: dict[object, object]) -> Callable[[object, Callable[[], object]], object]:
    """``shared_run(key, make)``: what ``make()`` returned the first time a test of this module asked for ``key``.

    The module-scoped sibling of ``run_once``: the run is made by a test (with its own fixtures and
    files), not by the fixture, so it can be any run a test can set up.

    For an expensive run (each worker of an ``-n 2`` run is a new process, a few seconds of
    CPU) that several tests assert different things about: each test keeps its own
    assertions, and the run is made once, by the first test that asks, with that test's
    ``run`` and ``pytester`` (its files stay in that test's directory, which pytest keeps
    until the session ends). ``make`` returns what the tests read: the ``RunResult``, the
    report's JSON, the paths it wrote. Under xdist, the tests sharing a key carry one
    ``xdist_group`` mark, so that one worker makes the run (tests/conftest.py ``main_job``).
    """

    def shared_run(key: object, make: Callable[[], object]) -> object:
        if key not in _module_runs:
            _module_runs[key] = make()
        return _module_runs[key]

    return shared_run
