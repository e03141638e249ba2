"""``plugin/freeze.py``: the long-lived objects leave the collector's sight once per process, garbage first."""

from __future__ import annotations

import gc
import weakref

import pytest

from pytest_groundeval.plugin import freeze
from pytest_groundeval.plugin.freeze import freeze_long_lived_objects


class _Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the collector frees it


def test_garbage_is_collected_before_the_survivors_are_frozen_and_a_second_call_does_nothing(monkeypatch):
    gc.unfreeze()  # this process may have frozen in an earlier in-process run
    monkeypatch.setattr(freeze, "_frozen", False)
    cyclic = _Node()
    dead = weakref.ref(cyclic)
    del cyclic
    kept = _Node()
    assert dead() is not None and gc.get_freeze_count() == 0
    freeze_long_lived_objects()
    assert dead() is None  # collected, not frozen
    frozen = gc.get_freeze_count()
    assert frozen > 1000  # the modules' objects, among them `kept`
    gc.collect()
    freeze_long_lived_objects()
    assert gc.get_freeze_count() == frozen
    gc.unfreeze()
    assert kept.me is kept


@pytest.mark.parametrize("collect_only", [False, True], ids=["once-its-runner-starts", "at-collect-only"])
def test_a_run_freezes(run, pytester, smoke, monkeypatch, collect_only):
    # --collect-only starts no runner: its items are frozen when collection finishes, or pytest's
    # collections at exit walk them all (100,000 items: a third of the run's CPU, benchmarks/README.md).
    gc.unfreeze()
    monkeypatch.setattr(freeze, "_frozen", False)
    pytester.makeconftest(
        "import gc, pathlib\n"
        "def pytest_sessionfinish(session):\n"
        "    pathlib.Path('frozen.txt').write_text(str(gc.get_freeze_count()))\n"
    )
    result = run(
        f"--eval-dataset={smoke}", "-k", "qa-smoke-alpha-budget", *(["--collect-only"] if collect_only else [])
    )
    gc.unfreeze()
    assert result.ret == pytest.ExitCode.OK
    assert int((pytester.path / "frozen.txt").read_text()) > 1000
