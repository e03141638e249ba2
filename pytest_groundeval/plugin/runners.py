"""What the plugin's session fixtures build: the mock provider, the target, and the item runners.

``plugin.fixtures`` (loaded with the plugin) declares the fixtures; each hands off to a
generator here, imported on the first fixture a session asks for, so a run that uses none
never loads the runner, the targets' HTTP stack, the judge clients or the mock.
Each xdist worker gets its own mock, target and runner; the controller runs none.
With a citation judge or coverage scorer (docs/citation.md) each runner's dispatcher
loop also holds their clients, built on it and closed when it closes.
Override ``groundeval_target`` in a ``conftest.py`` to test any object that
implements ``pytest_groundeval.targets.Target`` (docs/target-contract.md).
"""

from __future__ import annotations

import asyncio
import inspect
import os
import shutil
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest

from ..core.contract import dataset_run_id
from ..core.dataset import Dataset
from ..core.judging import Judge, Scorer
from ..core.kinds.citation import Jury
from ..core.outcome import ItemOutcome
from ..core.runner import ItemRunner
from ..core.secrets import Scrubber
from ..judge.cache import JudgeCache
from ..judge.client import JudgeClient
from ..judge.scorer import CoverageScorer
from ..targets.http import connect_url
from ..targets.mapped import MappedTarget
from ..targets.protocol import Target, TargetError, lineage
from ..targets.spawn import SpawnedTarget
from .collect import EvalItem
from .crash import WorkerJournal
from .dispatch import ItemDispatcher
from .freeze import freeze_long_lived_objects
from .options import MOCK, Settings, step_summary_path
from .record import mock_key, position_key, session_id, settings_key, spawned_key
from .spawn_ahead import Launched, spawn_config, start_problem
from .target_source import conflict_key
from .xdist import queued_indices

__all__ = [
    "serve_offline_runner",
    "serve_runner",
    "serve_target",
    "stop_session",
    "upcoming_items",
]


def serve_target(request: pytest.FixtureRequest, launched: Launched | None = None) -> Iterator[Target]:
    """The ``groundeval_target`` fixture's body: the target the options name, torn down after the session.

    ``--eval-target-map`` reaches an existing API through its map (docs/byo.md); ``--eval-url``
    connects to a running target; otherwise ``--eval-spawn`` (or the embedded
    reference server) is started against ``groundeval_mock`` (docs/target-contract.md), or
    ``launched``, the embedded server ``spawn_ahead.launch_ahead`` started before this module was
    imported, is adopted when the mock is at the URL it was told.
    Stops the session (``stop_session``) when the target cannot be reached or started.
    """
    settings: Settings = request.config.stash[settings_key]
    if settings.target_map is not None:
        # An existing API described by a map (docs/byo.md): no mock, no readiness probe; a target
        # that is down fails its first items, then stops the session (core.runner's streaks).
        mapped = MappedTarget(
            settings.target_map,
            timeout_s=settings.timeout_s,
            max_response_bytes=settings.max_response_bytes,
            concurrency=settings.concurrency,
        )
        try:
            yield mapped
        finally:
            mapped.close()
        return
    if settings.url:
        problem = None
        try:
            assert settings.api_key is not None  # resolve_settings refuses --eval-url without a key
            target = connect_url(
                settings.url,
                settings.api_key,
                timeout_s=settings.timeout_s,
                max_response_bytes=settings.max_response_bytes,
                # Its calls in flight halve on a 429 and recover (core.limiter, docs/judges.md).
                concurrency=settings.concurrency,
            )
        except TargetError as exc:
            problem = str(exc)
        if problem is not None:
            stop_session(request, problem)
        try:
            yield target
        finally:
            target.close()
        return
    mock = request.getfixturevalue("groundeval_mock")
    if launched is not None and launched.llm_url != mock.base_url:
        # Launched ahead against a URL this mock is not at (groundeval_mock overridden, or its port
        # taken meanwhile): started again below against the right one (plugin/spawn_ahead.py).
        if launched.spawned is not None:
            launched.spawned.stop()
            # Its log holds its command line alone: the run's is the next launch's.
            shutil.rmtree(launched.spawned.data_dir, ignore_errors=True)
        launched = None
    problem = launched.problem if launched is not None else None
    spawned = launched.spawned if launched is not None else None
    try:
        if spawned is None and problem is None:
            spawned = SpawnedTarget(spawn_config(request, settings, mock.base_url))
            try:
                spawned.launch()
            except (TargetError, ValueError) as exc:  # ValueError: a placeholder with no value
                problem = start_problem(spawned, exc)
        if spawned is not None and problem is None:
            try:
                # While the child starts (its imports take most of that): the modules this run needs are
                # all in by now, and keeping the collector off them costs a full collection.
                freeze_long_lived_objects()
                spawned.wait_until_ready()
            except (TargetError, ValueError) as exc:
                problem = start_problem(spawned, exc)
    except BaseException:
        # Ctrl-C or SIGTERM while it starts: not left running until the process exits.
        if spawned is not None:
            spawned.stop()
        raise
    if problem is not None:
        stop_session(request, problem)
    assert spawned is not None  # launched ahead or here, else a problem stopped the session
    request.session.stash[spawned_key] = spawned
    try:
        yield spawned.target
    finally:
        spawned.stop()


def session_scrubber(request: pytest.FixtureRequest) -> Scrubber:
    """The keys of this session to mask in what it writes (``core.secrets``): the target's
    (``--eval-api-key``, the spawned target's fresh key, or a target map's ``${VAR}`` values
    and credential headers) and the judge's."""
    settings: Settings = request.config.stash[settings_key]
    spawned = request.session.stash.get(spawned_key, None)
    mapped = settings.target_map.secrets if settings.target_map is not None else ()
    return Scrubber(
        [settings.api_key, settings.judge_api_key, spawned.api_key if spawned is not None else None, *mapped]
        + [spec.api_key for spec in settings.judges]
    )


def stop_session(request: pytest.FixtureRequest, message: str) -> None:
    """Fail the fixture with ``message`` alone (no traceback) and stop the session after it.

    The target is unusable (down, not starting, refusing our key): one clear error,
    not the same error once per item. Raised outside any ``except`` block so that no
    exception chain is printed. The session's keys are masked in ``message``.
    """
    message = session_scrubber(request).text(message)
    request.session.shouldfail = f"groundeval: {message.splitlines()[0]}"
    pytest.fail(message, pytrace=False)


def serve_runner(request: pytest.FixtureRequest, groundeval_target: Target) -> Iterator[ItemRunner]:
    """The ``groundeval_runner`` fixture's body: an ``ItemRunner`` for ``groundeval_target`` with its dispatcher.

    Stops the session when the target refuses the harness's key or the judge cannot be set up, and on
    an xdist worker whose collection found an option's target replaced by a fixture (``target_source``).
    """
    conflict = request.config.stash.get(conflict_key, None)
    if conflict is not None:
        stop_session(request, conflict)
    settings: Settings = request.config.stash[settings_key]
    freeze_long_lived_objects()  # the modules a run needs are in by now
    # The mock counts the target's tokens only when the target talks to it (not an --eval-url target,
    # for which the mock may run as the judge alone).
    mock = request.session.stash.get(mock_key, None) if not (settings.url or settings.target_map) else None
    spawned = request.session.stash.get(spawned_key, None)
    judging_kinds = [kind for kind, on in (("judge", settings.judge), ("score", settings.scorer_url == "mock")) if on]

    def mock_tokens() -> int:
        # A running count, exact however many requests the mock's bounded log has dropped;
        # the judge's and scorer's calls to the same mock are not the target's.
        assert mock is not None  # handed to the runner only with a mock
        return mock.tokens_total() - sum(mock.tokens_total(kind) for kind in judging_kinds)

    session = session_id(request.config)
    keys: dict[Path, str] = {}
    run_ids: dict[Path, str] = {}

    def call_run_id(dataset: Dataset) -> str:
        # The dataset's run id in the history: derived from the session id and the node ids' manifest part,
        # once per dataset (a SHA-256 per item otherwise).
        run_id = run_ids.get(dataset.manifest_path)
        if run_id is not None:
            return run_id
        key = keys.get(dataset.manifest_path)
        if key is None:
            key = keys[dataset.manifest_path] = os.path.relpath(dataset.manifest_path, request.config.rootpath).replace(
                os.sep, "/"
            )
        run_id = run_ids[dataset.manifest_path] = dataset_run_id(session, key)
        return run_id

    runner = ItemRunner(
        groundeval_target,
        run_id=session,
        call_run_id=call_run_id,
        # The mock's running count attributes tokens to one call only when calls do not overlap.
        mock_tokens=mock_tokens if mock is not None and settings.concurrency == 1 else None,
        # A call failed: when the spawned child has died, say how, with its log tail.
        diagnose=spawned.diagnose if spawned is not None else None,
        scrub=session_scrubber(request),
    )
    runner.drilldown = shows_items(request.config, settings)
    runner.repeat = settings.repeat
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

    async def run(test_item: EvalItem) -> ItemOutcome:
        if test_item.dataset.manifest_path not in keys:
            keys[test_item.dataset.manifest_path] = test_item.nodeid.split("::")[0]
        if journal is None:
            return await runner.run_async(test_item.eval_item, test_item.dataset)
        journal.sent(test_item.nodeid)
        try:
            return await runner.run_async(test_item.eval_item, test_item.dataset)
        finally:
            journal.done(test_item.nodeid)

    def eligible(test_item: pytest.Item) -> bool:
        if not (isinstance(test_item, EvalItem) and test_item.uses_target):
            return False
        # An item that was in flight when a worker crashed is never sent again.
        return journal is None or journal.poisoned(test_item.nodeid) is None

    build = judging_clients(request, settings)

    async def on_close() -> None:
        await close_judging(runner)
        if inspect.iscoroutinefunction(aclose):
            await aclose()

    runner.dispatcher = ItemDispatcher(
        run,
        concurrency=settings.concurrency,
        upcoming=lambda test_item: upcoming_items(request.session, test_item),
        eligible=eligible,
        on_close=on_close,
    )
    try:
        install_judging(request, runner, build)
        yield runner
    finally:
        runner.dispatcher.close()
        if journal is not None:
            journal.close()


def judging_clients(
    request: pytest.FixtureRequest, settings: Settings
) -> Callable[[], Coroutine[Any, Any, tuple[Judge | None, Scorer | None]]] | None:
    """A coroutine function building the citation judge and coverage scorer, or None without either.

    The concrete ``core.judging.Judge`` and ``Scorer`` are wired in here: the HTTP ``JudgeClient``
    and ``CoverageScorer`` of ``pytest_groundeval.judge``, which ``core`` never imports.

    Resolves ``mock`` (``--eval-judge=mock``, ``--eval-scorer-url=mock``) to the session's mock
    provider, starting it (and nothing else) when no one has. The clients are built by the
    returned coroutine so that they live on the event loop that runs the items
    (``install_judging``). docs/citation.md. A judge or scorer from the
    ``pytest_groundeval_make_judge`` / ``_make_scorer`` hooks replaces the HTTP one (docs/extending.md).
    """
    hook = request.config.hook
    extended = any(h.get_hookimpls() for h in (hook.pytest_groundeval_make_judge, hook.pytest_groundeval_make_scorer))
    if not settings.judging and not extended:
        return None
    mock = request.getfixturevalue("groundeval_mock") if settings.uses_mock_for_judging else None
    judge_url = mock.base_url if mock is not None and settings.judge == MOCK else settings.judge_url
    scorer_url = mock.base_url if mock is not None and settings.scorer_url == MOCK else settings.scorer_url

    async def build() -> tuple[Judge | None, Scorer | None]:
        judge: Judge | None = hook.pytest_groundeval_make_judge(config=request.config)
        scorer: Scorer | None = hook.pytest_groundeval_make_scorer(config=request.config)
        check_hook_client(hook.pytest_groundeval_make_judge, judge, Judge, "judge")
        check_hook_client(hook.pytest_groundeval_make_scorer, scorer, Scorer, "score")
        cache = JudgeCache(settings.judge_cache) if settings.judge_cache is not None else None
        if judge is None and settings.judges:
            # A jury (docs/judges.md, "Juries"): one client per judge, each with its own requests in
            # flight, fallbacks and rate limiter; the cache keys each verdict by its judge's model.
            judge = Jury(
                [
                    JudgeClient(
                        mock.base_url if mock is not None and spec.url == MOCK else spec.url,
                        spec.model,
                        spec.api_key,
                        concurrency=settings.judge_concurrency,
                        cache=cache,
                        max_tokens=settings.judge_max_tokens,
                    )
                    for spec in settings.judges
                ],
                settings.judge_policy,
            )
        if judge is None and judge_url:
            judge = JudgeClient(
                judge_url,
                settings.judge_model or "",
                settings.judge_api_key,
                concurrency=settings.judge_concurrency,
                cache=cache,
                max_tokens=settings.judge_max_tokens,
            )
        if scorer is None and scorer_url:
            scorer = CoverageScorer(
                scorer_url, settings.scorer_model, cap=settings.scorer_cap, concurrency=settings.judge_concurrency
            )
        return judge, scorer

    return build


def check_hook_client(hook: Any, client: object, protocol: type, method: str) -> None:
    """Refuse what a ``pytest_groundeval_make_judge`` / ``_make_scorer`` hook returned unless it is None or a client.

    A client is an object with the protocol's attributes (``core.judging.Judge`` or ``Scorer``)
    whose ``method`` is a coroutine function (docs/extending.md).

    Raises:
        ValueError: naming the hook, the files of its implementations and what was returned
            (``install_judging`` stops the session with it).
    """
    if client is None:
        return
    if isinstance(client, protocol) and inspect.iscoroutinefunction(getattr(client, method, None)):
        return
    files = ", ".join(
        sorted({str(inspect.getsourcefile(impl.function) or impl.plugin_name) for impl in hook.get_hookimpls()})
    )
    shown = repr(client) if len(repr(client)) <= 80 else repr(client)[:77] + "..."
    raise ValueError(
        f"{hook.name} (implemented in {files}) returned {type(client).__name__} {shown}, not a "
        f"{protocol.__name__}: an object with {', '.join(sorted(protocol.__annotations__))} "
        f"and an async {method}() and close() (docs/extending.md)"
    )


def install_judging(
    request: pytest.FixtureRequest,
    runner: ItemRunner,
    build: Callable[[], Coroutine[Any, Any, tuple[Judge | None, Scorer | None]]] | None,
) -> None:
    """Build the judge and scorer on ``runner.dispatcher``'s loop and hand them to ``runner``.

    A judge that cannot be built (the ``openai`` package missing) stops the session with
    one clear error, as a target that does not start does.
    """
    if build is None:
        return
    problem = None
    try:
        runner.judge, runner.scorer = asyncio.run_coroutine_threadsafe(build(), runner.dispatcher.loop).result(30)
    except (ImportError, ValueError) as exc:
        problem = f"the citation judge could not be set up: {exc}"
    if problem is not None:
        stop_session(request, problem)


async def close_judging(runner: ItemRunner) -> None:
    """Close the judge's and the scorer's HTTP connections (on the loop they were built on)."""
    for client in (runner.judge, runner.scorer):
        if client is not None:
            await client.close()
    runner.judge = runner.scorer = None


def shows_items(config: pytest.Config, settings: Settings) -> bool:
    """Whether anything of this run shows items' answers, claims and evidence (``ItemRunner.drilldown``).

    The JSON report, the HTML page, the Markdown table or step summary, the run
    history and JUnit XML do; the terminal summary alone does not.
    """
    return bool(
        settings.report
        or settings.html
        or settings.markdown
        or step_summary_path(settings)
        or getattr(settings, "history", None)
        or config.getoption("xmlpath", None)
    )


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


def serve_offline_runner(request: pytest.FixtureRequest) -> Iterator[ItemRunner]:
    """The ``groundeval_offline_runner`` fixture's body: an ``ItemRunner`` with no target.

    With a citation judge or coverage scorer its items run on a dispatcher of their own;
    stops the session when the judge cannot be set up.
    """
    settings: Settings = request.config.stash[settings_key]
    freeze_long_lived_objects()
    runner = ItemRunner(None, scrub=session_scrubber(request))
    runner.repeat = settings.repeat
    runner.models = {
        "generate": settings.model_generate or "unknown",
        "embed": settings.model_embed or "unknown",
    }
    build = judging_clients(request, settings)
    if build is None:
        yield runner
        return
    runner.dispatcher = ItemDispatcher(
        lambda test_item: runner.run_offline_async(test_item.eval_item, test_item.dataset),
        # Recorded answers wait on nothing but the judge: keep as many in flight as it takes.
        concurrency=max(settings.concurrency, settings.judge_concurrency),
        upcoming=lambda test_item: upcoming_items(request.session, test_item),
        eligible=lambda test_item: isinstance(test_item, EvalItem) and not test_item.uses_target,
        on_close=lambda: close_judging(runner),
    )
    try:
        install_judging(request, runner, build)
        yield runner
    finally:
        runner.dispatcher.close()
