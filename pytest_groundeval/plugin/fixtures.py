"""The plugin's session fixtures: the mock provider, the target, and the item runners.

Each xdist worker gets its own mock, target and runner; the controller runs none.
Override ``groundeval_target`` in a ``conftest.py`` to test any object that
implements ``pytest_groundeval.targets.Target`` (docs/target-contract.md).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from .crash import WorkerJournal
from .record import mock_key, position_key, session_key, settings_key, spawned_key
from .xdist import queued_indices, worker_id

if TYPE_CHECKING:
    from .options import Settings

__all__ = [
    "groundeval_mock",
    "groundeval_offline_runner",
    "groundeval_runner",
    "groundeval_target",
    "stop_session",
    "upcoming_items",
]


@pytest.fixture(scope="session")
def groundeval_mock(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The deterministic OpenAI-compatible mock provider (docs/mock.md), one per xdist worker.

    Exists so that the target's model calls cost nothing and are reproducible.
    Yields a started ``pytest_groundeval.mock.ThreadedMockProvider`` whose
    ``base_url`` ends in ``/v1``, whose ``log`` lists the last provider calls
    (``mock.DEFAULT_LOG_LIMIT``) and whose ``tokens_total()`` counts every call's tokens.
    """
    from ..mock import ThreadedMockProvider

    with ThreadedMockProvider() as mock:
        request.session.stash[mock_key] = mock
        yield mock


@pytest.fixture(scope="session")
def groundeval_target(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The system under test, one per xdist worker, torn down at the end of the session.

    Resolved from the options (docs/target-contract.md): ``--eval-url`` (a running target, no mock),
    ``--eval-spawn`` (a command started per worker against the mock), or, by default,
    the embedded reference server started through the same spawn path. Override this
    fixture in a ``conftest.py`` to return any object implementing
    ``pytest_groundeval.targets.Target`` (an in-process pipeline).
    """
    from .. import targets

    settings: Settings = request.config.stash[settings_key]
    if settings.url:
        problem = None
        try:
            target = targets.connect_url(
                settings.url,
                settings.api_key,
                timeout_s=settings.timeout_s,
                max_response_bytes=settings.max_response_bytes,
            )
        except targets.TargetError as exc:
            problem = str(exc)
        if problem is not None:
            stop_session(request, problem)
        try:
            yield target
        finally:
            target.close()
        return
    mock = request.getfixturevalue("groundeval_mock")
    worker = worker_id(request.config)
    config = targets.SpawnConfig(
        command=settings.spawn or targets.reference_command(),
        setup=list(settings.setup),
        ready_timeout_s=settings.ready_timeout_s,
        timeout_s=settings.timeout_s,
        max_response_bytes=settings.max_response_bytes,
        llm_url=mock.base_url,
        embed_url=mock.base_url,
        worker_id=worker,
        base_dir=request.getfixturevalue("tmp_path_factory").mktemp("groundeval-target"),
        run_id=session_id(request.config),
    )
    spawned = targets.SpawnedTarget(config)
    problem = None
    try:
        spawned.start()
    except (targets.TargetError, ValueError) as exc:  # ValueError: a placeholder with no value
        problem = f"the target failed to start: {exc}"
    if problem is not None:
        stop_session(request, problem)
    request.session.stash[spawned_key] = spawned
    try:
        yield spawned.target
    finally:
        spawned.stop()


def stop_session(request: pytest.FixtureRequest, message: str) -> None:
    """Fail the fixture with ``message`` alone (no traceback) and stop the session after it.

    The target is unusable (down, not starting, refusing our key): one clear error,
    not the same error once per item. Raised outside any ``except`` block so that no
    exception chain is printed.
    """
    request.session.shouldfail = f"groundeval: {message.splitlines()[0]}"
    pytest.fail(message, pytrace=False)


@pytest.fixture(scope="session")
def groundeval_runner(request: pytest.FixtureRequest, groundeval_target: Any) -> Iterator[Any]:
    """Runs dataset items against ``groundeval_target`` (an ``evaluate.ItemRunner``).

    Ingests each dataset's corpus once before its first item, namespaces temporal
    labels per run and item, and dispatches up to ``--eval-concurrency`` items at
    once (``dispatch.ItemDispatcher``) while pytest reports each in order.
    """
    import inspect

    from ..core.contract import dataset_run_id
    from ..core.runner import ItemRunner
    from ..targets.protocol import TargetError, lineage
    from .collect import EvalItem
    from .dispatch import ItemDispatcher

    settings = request.config.stash[settings_key]
    mock = request.session.stash.get(mock_key, None)
    spawned = request.session.stash.get(spawned_key, None)

    def mock_tokens() -> int:
        # A running count, exact however many requests the mock's bounded log has dropped.
        return mock.tokens_total()

    session = session_id(request.config)
    keys: dict[Any, str] = {}

    def call_run_id(dataset: Any) -> str:
        # The dataset's run id in the history: derived from the session id and the node ids' manifest part.
        key = keys.get(dataset.manifest_path)
        if key is None:
            key = keys[dataset.manifest_path] = os.path.relpath(dataset.manifest_path, request.config.rootpath).replace(
                os.sep, "/"
            )
        return dataset_run_id(session, key)

    runner = ItemRunner(
        groundeval_target,
        run_id=session,
        call_run_id=call_run_id,
        # The mock's running count attributes tokens to one call only when calls do not overlap.
        mock_tokens=mock_tokens if mock is not None and settings.concurrency == 1 else None,
        # A call failed: when the spawned child has died, say how, with its log tail.
        diagnose=spawned.diagnose if spawned is not None else None,
    )
    problem = None
    try:
        runner.models = lineage(groundeval_target, settings.model_generate, settings.model_embed)
    except TargetError as exc:
        problem = f"the target refused the harness's API key: {exc}"
    if problem is not None:
        stop_session(request, problem)
    aclose = getattr(groundeval_target, "aclose", None)
    journal = WorkerJournal.for_worker(request.config)
    runner.journal = journal

    async def run(test_item: Any) -> Any:
        keys.setdefault(test_item.dataset.manifest_path, test_item.nodeid.split("::")[0])
        if journal is None:
            return await runner.run_async(test_item.eval_item, test_item.dataset)
        journal.sent(test_item.nodeid)
        try:
            return await runner.run_async(test_item.eval_item, test_item.dataset)
        finally:
            journal.done(test_item.nodeid)

    def eligible(test_item: Any) -> bool:
        if not (isinstance(test_item, EvalItem) and test_item.uses_target):
            return False
        # An item that was in flight when a worker crashed is never sent again.
        return journal is None or journal.poisoned(test_item.nodeid) is None

    runner.dispatcher = ItemDispatcher(
        run,
        concurrency=settings.concurrency,
        upcoming=lambda test_item: upcoming_items(request.session, test_item),
        eligible=eligible,
        on_close=aclose if inspect.iscoroutinefunction(aclose) else None,
    )
    try:
        yield runner
    finally:
        runner.dispatcher.close()
        if journal is not None:
            journal.close()


def session_id(config: pytest.Config) -> str:
    """The session id (the controller's, given to xdist workers); a fresh one if none was set."""
    found = config.stash.get(session_key, None)
    if found is None:
        found = config.stash[session_key] = uuid.uuid4().hex
    return found


def upcoming_items(session: pytest.Session, current: pytest.Item) -> Iterator[pytest.Item]:
    """The test items this process will run after ``current``, in order.

    A plain run runs ``session.items`` in order. An xdist worker runs only what
    the controller has queued for it: its next item and its pending queue (read
    under the queue's lock); with ``--dist worksteal`` the pending queue may be
    stolen by another worker, so only the next item, which can no longer be
    stolen, is offered.
    """
    items = session.items
    queue = queued_indices(session.config)
    if queue is None:
        position = session.stash.get(position_key, None)
        if position is None:
            position = session.stash[position_key] = {item.nodeid: i for i, item in enumerate(items)}
        start = position.get(current.nodeid)
        if start is None:
            return
        for i in range(start + 1, len(items)):
            yield items[i]
        return
    for index in queue:
        yield items[index]


@pytest.fixture(scope="session")
def groundeval_offline_runner(request: pytest.FixtureRequest) -> Any:
    """Runs items that need no target (``review`` items, docs/dataset.md): no mock, no server."""
    from ..core.runner import ItemRunner

    settings = request.config.stash[settings_key]
    runner = ItemRunner(None)
    runner.models = {
        "generate": settings.model_generate or "unknown",
        "embed": settings.model_embed or "unknown",
    }
    return runner
