"""The plugin's session fixtures: the mock provider, the target, and the item runners.

Loaded with the plugin, so it imports nothing heavy: each fixture is a thin definition
that hands off to ``plugin.runners`` (the runner, the targets' HTTP stack, the judge
clients, the mock), imported at the first fixture a session asks for. A run without a
dataset asks for none (tests/test_package.py). Each xdist worker gets its own mock,
target and runner; the controller runs none. Override ``groundeval_target`` in a
``conftest.py`` to test any object that implements ``pytest_groundeval.targets.Target``
(docs/target-contract.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from ..core.runner import ItemRunner
    from ..mock import ThreadedMockProvider
    from ..targets.protocol import Target

__all__ = ["groundeval_mock", "groundeval_offline_runner", "groundeval_runner", "groundeval_target"]


@pytest.fixture(scope="session")
def groundeval_mock(request: pytest.FixtureRequest) -> Iterator[ThreadedMockProvider]:
    """The deterministic OpenAI-compatible mock provider (docs/mock.md), one per xdist worker.

    Exists so that the target's model calls cost nothing and are reproducible.
    Yields a started ``pytest_groundeval.mock.ThreadedMockProvider`` whose
    ``base_url`` ends in ``/v1``, whose ``log`` lists the last provider calls
    (``mock.DEFAULT_LOG_LIMIT``) and whose ``tokens_total()`` counts every call's tokens.
    """
    from .mock_fixture import serve_mock  # the hand-off to the heavy modules (module docstring)

    yield from serve_mock(request)


@pytest.fixture(scope="session")
def groundeval_target(request: pytest.FixtureRequest) -> Iterator[Target]:
    """The system under test, one per xdist worker, torn down at the end of the session.

    Resolved from the options (docs/target-contract.md): ``--eval-url`` (a running target, no mock),
    ``--eval-spawn`` (a command started per worker against the mock), or, by default,
    the embedded reference server started through the same spawn path. Override this
    fixture in a ``conftest.py`` to return any object implementing
    ``pytest_groundeval.targets.Target`` (an in-process pipeline).
    """
    from .spawn_ahead import launch_ahead

    # The embedded server starts now, while the HTTP stack is imported and the mock started.
    launched = launch_ahead(request)
    try:
        from .runners import serve_target

        yield from serve_target(request, launched)
    finally:
        if launched is not None and launched.spawned is not None:
            launched.spawned.stop()  # done already when serve_target adopted it; not if it failed first


@pytest.fixture(scope="session")
def groundeval_runner(request: pytest.FixtureRequest, groundeval_target: Target) -> Iterator[ItemRunner]:
    """Runs dataset items against ``groundeval_target`` (a ``core.runner.ItemRunner``).

    Ingests each dataset's corpus once before its first item, namespaces temporal
    labels per run and item, and dispatches up to ``--eval-concurrency`` items at
    once (``dispatch.ItemDispatcher``) while pytest reports each in order.
    """
    from .runners import serve_runner

    yield from serve_runner(request, groundeval_target)


@pytest.fixture(scope="session")
def groundeval_offline_runner(request: pytest.FixtureRequest) -> Iterator[ItemRunner]:
    """Runs items that need no target (``review`` items, recorded citation answers, docs/dataset.md).

    Starts no server. With a citation judge or coverage scorer (docs/citation.md) the items
    are run by a ``dispatch.ItemDispatcher`` of their own, so items sent ahead are judged
    ahead while pytest reports in order; ``--eval-judge=mock`` starts the mock provider, and
    only the mock.
    """
    from .runners import serve_offline_runner

    yield from serve_offline_runner(request)
