"""The one place that touches pytest-xdist's private internals.

To send items ahead of the one pytest is running, a worker must know which items
it will run next. xdist does not expose that, so this module reads its worker
plugin (the ``WorkerInteractor`` object registered on each worker) directly:
``nextitem_index`` (the item after the current one) and ``torun`` (the pending
queue, read under its ``lock()``). ``tests/plugin/test_xdist_internals.py``
fails loudly if a new xdist renames or reshapes them.
"""

from __future__ import annotations

from typing import Any

import pytest

interactor_key = pytest.StashKey[Any]()

INTERACTOR_CLASS = "WorkerInteractor"
"""Class name of xdist's worker-side plugin."""


def is_worker(config: pytest.Config) -> bool:
    """Whether this process is an xdist worker."""
    return hasattr(config, "workerinput")


def worker_id(config: pytest.Config) -> str:
    """The xdist worker id (``gw0``, ``gw1``, …), or ``main`` outside a worker."""
    workerinput: dict[str, Any] = getattr(config, "workerinput", {})
    workerid: str = workerinput.get("workerid", "main")
    return workerid


def interactor(config: pytest.Config) -> Any | None:
    """xdist's ``WorkerInteractor`` plugin of this worker, or None (looked up once)."""
    found = config.stash.get(interactor_key, None)
    if found is None:
        found = next((p for p in config.pluginmanager.get_plugins() if type(p).__name__ == INTERACTOR_CLASS), False)
        config.stash[interactor_key] = found
    return found or None


def queued_indices(config: pytest.Config) -> list[int] | None:
    """Indices into ``session.items`` of the items this worker will run next; None outside a worker.

    The next item and, except under ``--dist worksteal`` (whose pending queue may
    be stolen by another worker), the pending queue, read under its lock.
    """
    if not is_worker(config):
        return None
    worker = interactor(config)
    if worker is None:
        return []
    following = worker.nextitem_index
    indices = [following] if isinstance(following, int) else []
    if config.getoption("dist", "load") != "worksteal":
        with worker.torun.lock() as pending:
            indices.extend(i for i in pending if isinstance(i, int))
    return indices
