"""Extensions' item kinds: loading the ``pytest_groundeval.kinds`` entry points and registering kinds
from a named source (docs/extending.md).

The one loader the pytest plugin (``plugin.hooks``) and the ``groundeval`` command (``cli``) share,
so both see the same installed kinds. Light: it imports no pydantic (the plugin loads it at start-up).
"""

from __future__ import annotations

from collections.abc import Iterable
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any

from . import register, unregister

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
