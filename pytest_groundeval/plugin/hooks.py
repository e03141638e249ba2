"""pytest hooks: options, markers, collection of manifests, and the controller's registration.

Hook glue only: fixtures live in ``plugin.fixtures``, collection in
``plugin.collect``, aggregation and the gate in ``plugin.controller``; the
evaluation itself is in ``core``. Loading this module imports no pydantic,
aiohttp or httpx (a test enforces it), and neither does a run that uses no
dataset: on the controller every session registers the light
``plugin.session.GateSession`` (and ``plugin.xdist_hooks.XdistHooks`` when
pytest-xdist is present); ``plugin.controller``, which imports the core at top
level, is imported and registered only for a session with a dataset.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..core.kinds import KIND_NAMES, unregister
from ..core.kinds.extensions import ExtensionError, entry_point_kinds, register_from
from ..core.sharding import shard_of
from . import hookspecs
from . import options as _options
from .hookspecs import is_wrapper
from .record import SESSION_WORKERINPUT, attach, session_key, settings_key
from .session import GateSession
from .target_source import conflict_key, target_conflict
from .xdist import is_worker
from .xdist_hooks import XdistHooks

if TYPE_CHECKING:
    from .options import Settings


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Add the plugin's own hooks (``plugin.hookspecs``, docs/extending.md)."""
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    _options.add_options(parser)


def register_extension_kinds(config: pytest.Config) -> list[str]:
    """Register the kinds of installed packages (``core.kinds.extensions``) and of ``pytest_groundeval_register_kinds``.

    Each is removed again when the session ends (``config.add_cleanup``), so a pytester run in
    the same process leaves the registry as it found it. An entry point names a ``Kind``
    subclass or instance, e.g. ``echo = "mypkg.kinds:EchoKind"``; a hook implementation returns
    a list or tuple of them. Errors name the source: the entry point, or the file of the
    ``conftest.py`` or plugin module whose hook returned the kind.

    Returns:
        The names registered, in order: entry points' first (sorted by name), then the hook's.

    Raises:
        pytest.UsageError: an entry point does not load, a hook returns something that is not a
            list or tuple, or a kind cannot be registered (it is no ``Kind``, its name is taken or
            malformed, its model has no fitting ``kind`` field, a metric's name clashes); then
            none of them is registered.
    """
    try:
        found = entry_point_kinds()
        found.extend(_hook_kinds(config))
        instances = register_from(found)
    except ExtensionError as exc:
        raise pytest.UsageError(str(exc)) from None
    for instance in instances:
        config.add_cleanup(functools.partial(unregister, instance.name))
    return [instance.name for instance in instances]


def _hook_kinds(config: pytest.Config) -> list[tuple[str, Any]]:
    """``(source, kind)`` for each kind the ``pytest_groundeval_register_kinds`` implementations return.

    Implementations are called in pluggy's order; a source reads
    "pytest_groundeval_register_kinds in /path/to/conftest.py".

    Raises:
        ExtensionError: an implementation returned something that is not a list or tuple.
    """
    found: list[tuple[str, Any]] = []
    for impl in reversed(config.hook.pytest_groundeval_register_kinds.get_hookimpls()):
        if is_wrapper(impl):
            continue
        where = getattr(impl.plugin, "__file__", None) or impl.plugin_name
        source = f"pytest_groundeval_register_kinds in {where}"
        kinds = impl.function(**{name: config for name in impl.argnames})
        if kinds is None:
            continue
        if not isinstance(kinds, (list, tuple)):
            raise ExtensionError(
                f"{source} returned {kinds!r}, not a list or tuple of item kinds (e.g. `return [ExactKind]`)"
            )
        found.extend((source, kind) for kind in kinds)
    return found


def pytest_configure(config: pytest.Config) -> None:
    register_extension_kinds(config)
    for kind in KIND_NAMES:
        config.addinivalue_line("markers", f"{kind}: groundeval dataset items of kind {kind}")
    config.addinivalue_line("markers", "groundeval: every groundeval dataset item")
    settings = _options.resolve_settings(config)
    config.stash[settings_key] = settings
    if settings.dataset is None and not is_worker(config):
        _refuse_options_without_a_dataset(config)
    if settings.dataset is not None:
        if config.args_source != pytest.Config.ArgsSource.ARGS:
            # `pytest --eval-dataset=D` with no paths runs the dataset's items only.
            config.args = [str(settings.dataset)]
        elif config.getoption("eval_dataset") is not None and not _args_cover(config, settings.dataset):
            # `pytest --eval-dataset=D tests/x.py`: the flag asks for the dataset too. (From ini
            # or env it is a default, and explicit paths, as an IDE passes them, win.)
            config.args = [*config.args, str(settings.dataset)]
    if is_worker(config):
        session_id = config.workerinput.get(SESSION_WORKERINPUT)  # type: ignore[attr-defined]
        if session_id:
            config.stash[session_key] = session_id
    else:
        if settings.html is not None:
            _refuse_html_of_several_datasets(config, settings)
        _register_controller(config, settings)


def _register_controller(config: pytest.Config, settings: Settings) -> None:
    """Register the controller's plugins: the session (always), the xdist hooks (when xdist is
    present) and, when the session has a dataset, the controller that gates it.

    The session and the xdist hooks are light; ``plugin.controller`` (pydantic, the core)
    is imported only for a run with a dataset (``_has_dataset``). Each is registered
    once its inputs are validated, and SIGTERM is handled from then on.

    Raises:
        pytest.UsageError: the controller refused its inputs (floors, baseline, history).
    """
    session = GateSession(config)
    controller = None
    if _has_dataset(config, settings):
        from .controller import Controller  # the one hand-off to the heavy modules

        controller = session.controller = Controller(config, settings, session)
    config.pluginmanager.register(session, "groundeval-gate")
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(XdistHooks(session), XDIST_HOOKS)
    if controller is not None:
        config.pluginmanager.register(controller, "groundeval-controller")
    session.install_sigterm()


XDIST_HOOKS = "groundeval-xdist"
"""The name ``XdistHooks`` is registered under, when pytest-xdist is present."""


def _has_dataset(config: pytest.Config, settings: Settings) -> bool:
    """Whether this session collects a dataset: ``--eval-dataset`` (or its ini/env fallback), or a
    manifest.json, or a directory holding one, among the paths (as ``pytest_collect_file`` takes them)."""
    return settings.dataset is not None or any(_is_dataset_path(config, arg) for arg in config.args)


_NEED_A_DATASET = (
    "report", "html", "markdown", "shard", "floors", "baseline", "strict", "no-gate", "history", "label", "prices",
)  # fmt: skip
"""Flags that mean nothing without a dataset: given alone, a CI job would pass measuring nothing."""


def _refuse_options_without_a_dataset(config: pytest.Config) -> None:
    """``--eval-report`` / ``--eval-html`` / ``--eval-markdown`` / ``--eval-shard`` / ``--eval-floors`` /
    ``--eval-baseline`` / ``--eval-strict`` / ``--eval-no-gate`` / ``--eval-history`` / ``--eval-label`` need a dataset.

    A dataset is ``--eval-dataset`` (or its ini/env fallback), or a manifest.json, or a
    directory holding one, among the paths (``pytest datasets/v1`` as an IDE runs it).

    Raises:
        pytest.UsageError: one of those flags was given and no dataset was.
    """
    given = [
        f"--eval-{name}" for name in _NEED_A_DATASET if config.getoption(_options._dest(name)) not in (None, False)
    ]
    if not given or any(_is_dataset_path(config, arg) for arg in config.args):
        return
    raise pytest.UsageError(
        f"{', '.join(given)} given, but no dataset: nothing would be measured or gated. Give --eval-dataset=DIR "
        "(or a dataset's manifest.json as a path), or drop the flag"
    )


def _dataset_manifests(config: pytest.Config, settings: Settings) -> set[Path]:
    """The manifests this run collects: ``--eval-dataset``'s, and each path argument that is or holds one."""
    found = {settings.dataset.resolve()} if settings.dataset is not None else set()
    for arg in config.args:
        path = Path(arg.split("::")[0])
        if not path.is_absolute():
            path = config.invocation_params.dir / path
        if path.name == "manifest.json" and path.is_file():
            found.add(path.resolve())
        elif (path / "manifest.json").is_file():
            found.add((path / "manifest.json").resolve())
    return found


def _refuse_html_of_several_datasets(config: pytest.Config, settings: Settings) -> None:
    """``--eval-html`` writes one dataset's page: refuse a run of several before anything runs.

    Raises:
        pytest.UsageError: the run collects more than one dataset (docs/ci.md).
    """
    manifests = _dataset_manifests(config, settings)
    if len(manifests) > 1:
        names = ", ".join(sorted(os.path.relpath(m, config.invocation_params.dir) for m in manifests))
        raise pytest.UsageError(
            f"--eval-html writes the page of one dataset, but this run has {len(manifests)} ({names}): run each "
            "dataset with its own --eval-html, or write --eval-report and make one page per dataset with "
            "groundeval report (docs/ci.md)"
        )


def _is_dataset_path(config: pytest.Config, arg: str) -> bool:
    path = Path(arg.split("::")[0])
    if not path.is_absolute():
        path = config.invocation_params.dir / path
    return (path.name == "manifest.json" and path.is_file()) or (path / "manifest.json").is_file()


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


def pytest_report_header(config: pytest.Config) -> str:
    """The plugin's version in pytest's header, e.g. ``groundeval: 0.1.0``."""
    from importlib import metadata

    try:
        version = metadata.version("pytest-groundeval")
    except metadata.PackageNotFoundError:
        version = "unknown"
    settings = config.stash[settings_key]
    shard = f", shard {settings.shard[0]}/{settings.shard[1]}" if settings.shard else ""
    return f"groundeval: {version}{shard}"


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """``--eval-shard K/N``: deselect the dataset items that are not in shard K (docs/ci.md, "Sharding").

    Runs in every process (each xdist worker collects and deselects alike), so the
    controller learns only the shard's items. Items other than dataset items are kept.
    """
    shard = config.stash[settings_key].shard
    if shard is None:
        return
    index, count = shard
    kept, dropped = [], []
    for item in items:
        eval_item = getattr(item, "eval_item", None)
        if eval_item is not None and shard_of(eval_item.id, count) != index:
            dropped.append(item)
        else:
            kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


# trylast: after -k, -m and shard deselection; before the controller records the items (collection_finish).
@pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")
def pytest_collection_modifyitems_targets(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Refuse a target option given with a ``groundeval_target`` fixture that replaces the plugin's
    (``plugin.target_source``): a usage error, or on an xdist worker a message the runner stops with."""
    problem = target_conflict(config.stash[settings_key], items, str(config.invocation_params.dir))
    if problem is None:
        return
    if is_worker(config):
        config.stash[conflict_key] = problem
        return
    raise pytest.UsageError(problem)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Copy an eval item's outcome onto its setup and call reports, where the controller reads it."""
    report = yield
    if getattr(item, "eval_item", None) is not None:
        attach(item, report)
    return report
