"""pytest-xdist's private internals that plugin/xdist.py reads: fail loudly when xdist changes them.

The plugin sends items ahead only from the worker that will run them, which it
learns from xdist's ``WorkerInteractor`` (``nextitem_index``, ``torun.lock()``).
If a new xdist renames or reshapes them, this test fails with what is missing,
instead of concurrency silently degrading.
"""

from __future__ import annotations

import pytest

CONFTEST = """
import pytest
from pytest_groundeval.plugin import xdist

def test_worker_sees_xdist_internals(request):
    config = request.config
    assert xdist.is_worker(config)
    worker = xdist.interactor(config)
    assert worker is not None, "no plugin of class " + xdist.INTERACTOR_CLASS + " on the worker"
    assert type(worker).__name__ == xdist.INTERACTOR_CLASS
    assert hasattr(worker, "nextitem_index"), "WorkerInteractor.nextitem_index is gone"
    assert hasattr(worker, "torun") and hasattr(worker.torun, "lock"), "WorkerInteractor.torun.lock() is gone"
    with worker.torun.lock() as pending:
        assert all(isinstance(i, int) for i in pending)
    indices = xdist.queued_indices(config)
    assert isinstance(indices, list) and all(isinstance(i, int) for i in indices)
    assert all(0 <= i < len(request.session.items) for i in indices)

@pytest.mark.parametrize("n", range(6))
def test_more_items_queue_behind(n):
    pass
"""


def test_xdist_internals_the_plugin_reads_are_there(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_internals=CONFTEST)
    # The worker is a new process: spare it importing Hypothesis and trio (NO_THIRD_PARTY_PLUGINS in conftest.py).
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:benchmark", "-p", "no:hypothesispytest",
                                "-p", "no:anyio", "-n", "1", "-q")  # fmt: skip
    result.assert_outcomes(passed=7)


def test_outside_a_worker_there_is_no_queue(pytester: pytest.Pytester) -> None:
    from pytest_groundeval.plugin import xdist

    config = pytester.parseconfigure("-p", "no:benchmark")  # a plain session's config, not a worker's
    assert xdist.queued_indices(config) is None
    assert xdist.worker_id(config) == "main"
