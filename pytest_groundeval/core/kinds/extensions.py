"""Extensions' item kinds: loading the ``pytest_groundeval.kinds`` entry points and registering kinds
from a named source (docs/extending.md).

The one loader the pytest plugin (``plugin.hooks``) and the ``groundeval`` command (``cli``) share,
so both see the same installed kinds. Light: it imports no pydantic (the plugin loads it at start-up).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from . import KIND_NAMES, register, unregister

if TYPE_CHECKING:
    from .base import Kind

KINDS_ENTRY_POINTS = "pytest_groundeval.kinds"
"""The entry-point group through which an installed package adds item kinds (docs/extending.md)."""


class ExtensionError(ValueError):
    """An extension's kind cannot be loaded or registered; the message names its source."""


def entry_point_kinds() -> list[tuple[str, Any]]:
    """The kinds installed packages declare (``KINDS_ENTRY_POINTS``), loaded, sorted by entry-point name.

    An entry point names a ``Kind`` subclass or instance, e.g. ``echo = "mypkg.kinds:EchoKind"``.

    Returns:
        ``(source, kind)`` pairs; ``source`` reads "entry point NAME = VALUE (pytest_groundeval.kinds)".

    Raises:
        ExtensionError: an entry point does not load (its import fails).
    """
    found: list[tuple[str, Any]] = []
    for point in sorted(entry_points(group=KINDS_ENTRY_POINTS), key=lambda p: p.name):
        source = f"entry point {point.name} = {point.value} ({KINDS_ENTRY_POINTS})"
        try:
            found.append((source, point.load()))
        except Exception as exc:  # noqa: BLE001 - any import failure of a third-party package
            raise ExtensionError(f"cannot load the item kind of {source}: {type(exc).__name__}: {exc}") from None
    return found


def register_from(found: Iterable[tuple[str, Any]]) -> list[Kind]:
    """Register each ``(source, kind)`` in order (``core.kinds.register``); all of them or none.

    Returns:
        The registered instances, in order.

    Raises:
        ExtensionError: a kind cannot be registered; the message names it and its source, and the
            kinds registered by this call before it are removed again.
    """
    done: list[Kind] = []
    try:
        for source, kind in found:
            try:
                done.append(register(kind))
            except (ValueError, TypeError) as exc:
                what = kind.name if isinstance(getattr(kind, "name", None), str) else kind
                raise ExtensionError(f"cannot register the item kind {what!r} from {source}: {exc}") from None
    except BaseException:
        for instance in reversed(done):
            unregister(instance.name)
        raise
    return done


UNREGISTERED_HINT = (
    "an extension's kind or metric? the groundeval command loads kinds from the pytest_groundeval.kinds entry points "
    "only, not from conftest.py files; docs/extending.md"
)
"""Why a kind or metric a report names may be unknown to the ``groundeval`` command."""


def unregistered_names(errors: Iterable[Mapping[str, Any]]) -> str | None:
    """What a report names that no registered kind defines, from its validation errors; None if nothing.

    Args:
        errors: pydantic's error dicts (``ValidationError.errors()``) of a report or outcome.

    Returns:
        One sentence, e.g. "item kind 'exact' is not registered (…)" or "item kind 'exact' and
        metric 'exactMatchRate' are not registered (…)", each name once; None when no error is
        an unknown kind (an item's ``kind``) or an unknown metric (an extra key of ``metrics``).
    """
    kinds: dict[str, None] = {}
    metrics: dict[str, None] = {}
    for error in errors:
        loc = tuple(error.get("loc", ()))
        value = error.get("input")
        if loc and loc[-1] == "kind" and isinstance(value, str) and value not in KIND_NAMES:
            kinds[f"item kind {value!r}"] = None
        elif len(loc) == 2 and loc[0] == "metrics" and error.get("type") == "extra_forbidden":
            metrics[f"metric {loc[1]!r}"] = None
    names = [*kinds, *metrics]
    if not names:
        return None
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return f"{listed} {'is' if len(names) == 1 else 'are'} not registered ({UNREGISTERED_HINT})"
