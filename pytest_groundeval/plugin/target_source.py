"""A run has exactly one target (docs/plugin.md, "Targets"): the options' or a ``groundeval_target`` fixture of the user's.

The target is the reference server (nothing given), ``--eval-spawn`` (with ``--eval-setup``),
``--eval-url``, ``--eval-target-map``, or a ``groundeval_target`` fixture in a ``conftest.py``
(a Python target, the one ``groundeval init`` writes). Two options together are refused by
``plugin.options``. A fixture of that name replaces the plugin's, and with it the target an
option names, which would then be ignored without a word: ``target_conflict`` finds that,
once collection knows which items call a target. A fixture that takes ``groundeval_target``
as an argument wraps the plugin's target (the option's) and is no second target.

It reads which fixture definitions an item sees through ``Function._fixtureinfo`` (pytest's
private attribute, also read by ``plugin.collect``); tests/plugin/test_target_source.py fails
when that changes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .options import Settings

__all__ = ["TARGET_FIXTURE", "conflict_key", "given_targets", "replacing_fixture", "target_conflict"]

TARGET_FIXTURE = "groundeval_target"
"""The fixture whose value is the run's target (``plugin.fixtures``)."""

_PLUGIN_FIXTURES = "pytest_groundeval.plugin.fixtures"
"""The module of the plugin's own ``groundeval_target``."""

conflict_key = pytest.StashKey[str]()
"""On an xdist worker, the conflict its collection found: a worker cannot stop the session while it
collects (xdist counts that as a crash), so the runner fixture stops it with this message
(``plugin.runners.serve_runner``) before any item calls a target."""

TWO_TARGETS = (
    "{given} and the groundeval_target fixture in {where} both give this run its target: exactly one "
    'applies (docs/plugin.md, "Targets"), and the fixture would silently replace the target {option} '
    "names. Drop {option} (from flags, ini or GROUNDEVAL_* env) to test the fixture's target, or delete the "
    "fixture (or make it take groundeval_target as an argument, to wrap that target)"
)
"""The usage error of an option naming a target while a fixture replaces the plugin's."""


def given_targets(settings: Settings) -> list[tuple[str, str]]:
    """The options that name this run's target, as ``(option, how the error names it)``, in option order.

    The map is named by its file; a URL or a command is not quoted (either may hold a key).
    """
    given = []
    if settings.target_map is not None:
        given.append(("--eval-target-map", f"--eval-target-map {settings.target_map.path}"))
    if settings.spawn:
        given.append(("--eval-spawn", "--eval-spawn"))
    if settings.setup:
        given.append(("--eval-setup", "--eval-setup"))
    if settings.url:
        given.append(("--eval-url", "--eval-url"))
    return given


def _is_plugins(fixturedef: Any) -> bool:
    func = getattr(fixturedef, "func", None)
    return getattr(func, "__module__", None) == _PLUGIN_FIXTURES and getattr(func, "__name__", None) == TARGET_FIXTURE


def replacing_fixture(chain: Sequence[Any]) -> Any | None:
    """The definition that replaces the plugin's ``groundeval_target``, or None when the plugin's applies.

    Args:
        chain: The ``pytest.FixtureDef`` objects of ``groundeval_target`` an item sees, from the
            most general (the plugin's) to the one that applies (pytest's own order).

    Returns:
        The first definition, walking from the one that applies towards the plugin's, that does
        not take ``groundeval_target`` as an argument (so it does not reach the plugin's), or None
        when the walk reaches the plugin's (directly, or through fixtures that wrap it).
    """
    for fixturedef in reversed(chain):
        if _is_plugins(fixturedef):
            return None
        if TARGET_FIXTURE not in fixturedef.argnames:
            return fixturedef
    return None


def _where(fixturedef: Any, start: str) -> str:
    code = getattr(getattr(fixturedef, "func", None), "__code__", None)
    if code is None:
        return "a plugin"
    path = code.co_filename
    relative = os.path.relpath(path, start)
    return path if relative.startswith(os.pardir) else relative


def target_conflict(settings: Settings, items: Iterable[pytest.Item], start: str) -> str | None:
    """The usage error when an option names a target and a fixture replaces the plugin's, else None.

    Only items that call the target count (``EvalItem.uses_target``): recorded answers start no
    target, so a fixture beside them replaces nothing that would run.

    Args:
        settings: The run's options.
        items: The collected items, after deselection.
        start: The directory paths in the message are relative to (pytest's invocation directory).

    Returns:
        ``TWO_TARGETS`` naming the first option given and the fixture's file.
    """
    given = given_targets(settings)
    if not given:
        return None
    seen: set[int] = set()
    for item in items:
        info = getattr(item, "_fixtureinfo", None) if getattr(item, "uses_target", False) else None
        if info is None or id(info) in seen:  # items of one kind group share one fixture closure
            continue
        seen.add(id(info))
        fixturedef = replacing_fixture(info.name2fixturedefs.get(TARGET_FIXTURE, ()))
        if fixturedef is not None:
            option, named = given[0]
            return TWO_TARGETS.format(given=named, where=_where(fixturedef, start), option=option)
    return None
