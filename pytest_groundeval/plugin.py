"""pytest hooks for pytest-groundeval: options, collection, fixtures, aggregation and the gate.

Hook glue only: the dataset (``dataset``), per-item judging (``evaluate``),
targets (``targets``), metrics, gate and report live in their own modules.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from . import options as _options
from .contract import USER_PROPERTY
from .session import KINDS, RUN_PROPERTY

if TYPE_CHECKING:
    from .outcome import ItemOutcome

DYING_GRACE_S = 2.0
"""How long a spawned target that refused a connection gets to finish exiting, so that its
exit status and log tail can explain the failure."""

settings_key = pytest.StashKey["_options.Settings"]()
mock_key = pytest.StashKey[Any]()
spawned_key = pytest.StashKey[Any]()
position_key = pytest.StashKey[dict]()
interactor_key = pytest.StashKey[Any]()
run_key = pytest.StashKey[dict]()


# -- options ---------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    _options.add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    for kind in KINDS:
        config.addinivalue_line("markers", f"{kind}: groundeval dataset items of kind {kind}")
    config.addinivalue_line("markers", "groundeval: every groundeval dataset item")
    settings = _options.resolve_settings(config)
    config.stash[settings_key] = settings
    if settings.dataset is not None:
        if config.args_source != pytest.Config.ArgsSource.ARGS:
            # `pytest --eval-dataset=D` with no paths runs the dataset's items only.
            config.args = [str(settings.dataset)]
        elif config.getoption("eval_dataset") is not None and not _args_cover(config, settings.dataset):
            # `pytest --eval-dataset=D tests/x.py`: the flag asks for the dataset too. (From ini
            # or env it is a default, and explicit paths, as an IDE passes them, win.)
            config.args = [*config.args, str(settings.dataset)]
    if not hasattr(config, "workerinput"):
        from .session import GateSession

        config.pluginmanager.register(GateSession(config, settings), "groundeval-gate")


def _args_cover(config: pytest.Config, manifest: Path) -> bool:
    """Whether some path argument is the manifest, or a directory holding it."""
    for arg in config.args:
        path = Path(arg.split("::")[0])
        if not path.is_absolute():
            path = config.invocation_params.dir / path
        path = path.resolve()
        if manifest == path or manifest.is_relative_to(path):
            return True
    return False


# -- collection -------------------------------------------------------------------


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.name != "manifest.json":
        return None
    settings = parent.config.stash[settings_key]
    session = parent.session
    wanted = (
        (settings.dataset is not None and file_path == settings.dataset)
        or session.isinitpath(file_path)
        or session.isinitpath(file_path.parent)
    )
    if not wanted:
        return None
    from .collect import ManifestFile

    if not file_path.is_relative_to(parent.config.rootpath):
        # pytest gives a file outside the rootdir an empty node id when it is an initial
        # path; the dataset's items must keep `<path>/manifest.json::<kind>::<id>` ids.
        nodeid = os.path.relpath(file_path, parent.config.rootpath).replace(os.sep, "/")
        return ManifestFile.from_parent(parent, path=file_path, nodeid=nodeid)
    return ManifestFile.from_parent(parent, path=file_path)


# -- fixtures -----------------------------------------------------------------------


@pytest.fixture(scope="session")
def groundeval_mock(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The deterministic OpenAI-compatible mock provider (SPEC §4), one per xdist worker.

    Exists so that the target's model calls cost nothing and are reproducible.
    Yields a started ``pytest_groundeval.mock.ThreadedMockProvider`` whose
    ``base_url`` ends in ``/v1`` and whose ``log`` lists every provider call.
    """
    from .mock import ThreadedMockProvider

    with ThreadedMockProvider() as mock:
        request.session.stash[mock_key] = mock
        yield mock


@pytest.fixture(scope="session")
def groundeval_target(request: pytest.FixtureRequest) -> Iterator[Any]:
    """The system under test, one per xdist worker, torn down at the end of the session.

    Resolved from the options (SPEC §3): ``--eval-url`` (a running target, no mock),
    ``--eval-spawn`` (a command started per worker against the mock), or, by default,
    the embedded reference server started through the same spawn path. Override this
    fixture in a ``conftest.py`` to return any object implementing
    ``pytest_groundeval.targets.Target`` (an in-process pipeline).
    """
    from . import targets

    settings: _options.Settings = request.config.stash[settings_key]
    if settings.url:
        problem = None
        try:
            target = targets.connect_url(settings.url, settings.api_key, timeout_s=settings.timeout_s)
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
    worker = getattr(request.config, "workerinput", {}).get("workerid", "main")
    config = targets.SpawnConfig(
        command=settings.spawn or targets.reference_command(),
        setup=list(settings.setup),
        ready_timeout_s=settings.ready_timeout_s,
        timeout_s=settings.timeout_s,
        llm_url=mock.base_url,
        embed_url=mock.base_url,
        worker_id=worker,
        base_dir=request.getfixturevalue("tmp_path_factory").mktemp("groundeval-target"),
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


def _lineage(target: Any, settings: _options.Settings) -> dict:
    """The model lineage (SPEC §3): ``/v1/info``, else the options, else ``unknown``.

    Raises:
        TargetError: the target refused the harness's key (HTTP 401).
    """
    from .targets import TargetError

    info = None
    try:
        info = target.info()
    except TargetError as exc:
        if exc.status == 401:
            raise
    except Exception:  # /v1/info is optional (SPEC §3); its absence means "fall back"
        info = None
    models = (info or {}).get("models") or {}
    return {
        "generate": models.get("generate") or settings.model_generate or "unknown",
        "embed": models.get("embed") or settings.model_embed or "unknown",
    }


@pytest.fixture(scope="session")
def groundeval_runner(request: pytest.FixtureRequest, groundeval_target: Any) -> Iterator[Any]:
    """Runs dataset items against ``groundeval_target`` (an ``evaluate.ItemRunner``).

    Ingests each dataset's corpus once before its first item, namespaces temporal
    labels per run and item, and dispatches up to ``--eval-concurrency`` items at
    once (``dispatch.ItemDispatcher``) while pytest reports each in order.
    """
    import inspect

    from . import targets
    from .collect import EvalItem
    from .dispatch import ItemDispatcher
    from .evaluate import ItemRunner

    settings = request.config.stash[settings_key]
    mock = request.session.stash.get(mock_key, None)
    spawned = request.session.stash.get(spawned_key, None)

    def diagnose(error: Exception) -> str | None:
        # A call failed: when the spawned child has died, say how, with its log tail. A
        # refused connection may come from a child that closed its port on its way out:
        # give it a moment to finish exiting before asking.
        if isinstance(error, targets.TargetUnavailable):
            try:
                spawned.process.wait(timeout=DYING_GRACE_S)
            except subprocess.TimeoutExpired:
                pass
        try:
            spawned.ensure_alive()
        except targets.SpawnError as exc:
            return str(exc)
        return None

    def mock_tokens() -> int:
        return sum(r.prompt_tokens + r.completion_tokens for r in mock.log)

    runner = ItemRunner(
        groundeval_target,
        run_id=uuid.uuid4().hex,
        # The mock's running count attributes tokens to one call only when calls do not overlap.
        mock_tokens=mock_tokens if mock is not None and settings.concurrency == 1 else None,
        diagnose=diagnose if spawned is not None else None,
    )
    problem = None
    try:
        runner.models = _lineage(groundeval_target, settings)
    except targets.TargetError as exc:
        problem = f"the target refused the harness's API key: {exc}"
    if problem is not None:
        stop_session(request, problem)
    aclose = getattr(groundeval_target, "aclose", None)
    runner.dispatcher = ItemDispatcher(
        lambda test_item: runner.run_async(test_item.eval_item, test_item.dataset),
        concurrency=settings.concurrency,
        upcoming=lambda test_item: upcoming_items(request.session, test_item),
        eligible=lambda test_item: isinstance(test_item, EvalItem) and test_item.uses_target,
        on_close=aclose if inspect.iscoroutinefunction(aclose) else None,
    )
    try:
        yield runner
    finally:
        runner.dispatcher.close()


def upcoming_items(session: pytest.Session, current: pytest.Item) -> Iterator[pytest.Item]:
    """The test items this process will run after ``current``, in order.

    A plain run runs ``session.items`` in order. An xdist worker runs only what
    the controller has queued for it: its next item and its pending queue (read
    under the queue's lock); with ``--dist worksteal`` the pending queue may be
    stolen by another worker, so only the next item, which can no longer be
    stolen, is offered.
    """
    items = session.items
    queue = _xdist_queue(session.config)
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


def _xdist_queue(config: pytest.Config) -> list[int] | None:
    """Indices of the items an xdist worker will run next; None outside a worker."""
    if not hasattr(config, "workerinput"):
        return None
    interactor = config.stash.get(interactor_key, None)
    if interactor is None:
        interactor = next(
            (p for p in config.pluginmanager.get_plugins() if type(p).__name__ == "WorkerInteractor"), False
        )
        config.stash[interactor_key] = interactor
    if not interactor:
        return []
    following = interactor.nextitem_index
    indices = [following] if isinstance(following, int) else []
    if config.getoption("dist", "load") != "worksteal":
        with interactor.torun.lock() as pending:
            indices.extend(i for i in pending if isinstance(i, int))
    return indices


@pytest.fixture(scope="session")
def groundeval_offline_runner(request: pytest.FixtureRequest) -> Any:
    """Runs items that need no target (``review`` items, SPEC §2): no mock, no server."""
    from .evaluate import ItemRunner

    settings = request.config.stash[settings_key]
    runner = ItemRunner(None)
    runner.models = {
        "generate": settings.model_generate or "unknown",
        "embed": settings.model_embed or "unknown",
    }
    return runner


def record_run(item: pytest.Item, dataset_version: str, models: dict) -> None:
    """Attach the run's dataset version and lineage to the item's report (for the controller)."""
    item.user_properties.append((RUN_PROPERTY, {"datasetVersion": dataset_version, "models": dict(models)}))


def record_outcome(item: pytest.Item, outcome: "ItemOutcome") -> None:
    """Attach the outcome as JSON built-ins, so it survives xdist (STYLE: aggregating under xdist)."""
    item.user_properties.append((USER_PROPERTY, outcome.to_wire()))

