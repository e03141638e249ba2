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


def test_a_run_freezes_once_its_runner_starts(run, pytester, smoke, monkeypatch):
    gc.unfreeze()
    monkeypatch.setattr(freeze, "_frozen", False)
    pytester.makeconftest(
        "import gc, pathlib\n"
        "def pytest_sessionfinish(session):\n"
        "    pathlib.Path('frozen.txt').write_text(str(gc.get_freeze_count()))\n"
    )
    result = run(f"--eval-dataset={smoke}", "-k", "qa-smoke-alpha-budget")
    gc.unfreeze()
    assert result.ret == pytest.ExitCode.OK
    assert int((pytester.path / "frozen.txt").read_text()) > 1000
