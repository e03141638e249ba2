"""Which item kinds exist, by name: the registry's state (docs/architecture.md: adding a kind).

A leaf: it imports nothing of the package (nor pydantic), so the pytest plugin can
list the kinds at start-up and the history can check a record's kind without
loading a model. ``core.kinds`` builds the typed registry (``get``, ``all_kinds``,
``register``) on it.

The built-in kinds are modules of ``core.kinds`` (``BUILTIN_MODULES``); a kind
registered at run time (``core.kinds.register``) comes after them. Everything that
lists kinds reads them here when it needs them, so a registered kind is seen by the
manifest's item union, outcome validation, the history and the outputs alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload

BUILTIN_MODULES: dict[str, str] = {
    "qa": "qa",
    "adversarial": "adversarial",
    "temporal": "temporal",
    "citation": "citation",
    "review": "review",
}
"""Built-in kind name -> module of ``core.kinds``, in the order reports and the gate list them."""

_extra: dict[str, Any] = {}
"""Kinds registered at run time: name -> ``Kind`` instance, in registration order."""

_listeners: dict[str, Callable[[], None]] = {}
"""Called after the set of kinds changes, keyed by their qualified name (a re-imported module replaces its own)."""

_generation = [0]
"""Bumped on every change, so a cache built from the kinds knows it is stale."""


def names() -> tuple[str, ...]:
    """Every kind name: the built-in ones in registry order, then registered ones in registration order."""
    return (*BUILTIN_MODULES, *_extra)


def generation() -> int:
    """A number that changes whenever a kind is registered or removed."""
    return _generation[0]


def registered(name: str) -> Any | None:
    """The kind registered at run time under ``name``, or None (built-in kinds are not held here)."""
    return _extra.get(name)


def add(name: str, kind: Any) -> None:
    """Hold ``kind`` under ``name`` and tell the listeners (``core.kinds.register`` checks it first).

    When a listener fails (it cannot rebuild what it derives from the kinds), ``kind`` is
    removed again, the listeners are told, and the error is raised: nothing stays half-added.

    Raises:
        ValueError: a kind of that name exists already.
    """
    if name in BUILTIN_MODULES or name in _extra:
        raise ValueError(f"a kind named {name!r} is registered already; kinds: {', '.join(names())}")
    _extra[name] = kind
    try:
        _changed()
    except BaseException:
        del _extra[name]
        _changed()
        raise


def remove(name: str) -> None:
    """Forget the kind registered at run time under ``name``; nothing happens when there is none.

    Raises:
        ValueError: ``name`` is a built-in kind, which cannot be removed.
    """
    if name in BUILTIN_MODULES:
        raise ValueError(f"{name!r} is a built-in kind and cannot be removed")
    if _extra.pop(name, None) is not None:
        _changed()


def on_change(listener: Callable[[], None]) -> None:
    """Call ``listener()`` after each change of the kinds (a module rebuilding what it derives from them)."""
    _listeners[f"{listener.__module__}.{listener.__qualname__}"] = listener


def _changed() -> None:
    _generation[0] += 1
    for listener in list(_listeners.values()):
        listener()


class KindNames(Sequence[str]):
    """A read-only, live view of every kind name (``names()``): it follows registrations."""

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...
    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        return names()[index]

    def __len__(self) -> int:
        return len(BUILTIN_MODULES) + len(_extra)

    def __iter__(self) -> Iterator[str]:
        return iter(names())

    def __contains__(self, value: object) -> bool:
        # Any JSON value may be asked about (a record's kind), hashable or not.
        return isinstance(value, str) and (value in BUILTIN_MODULES or value in _extra)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and tuple(other) == names()

    def __repr__(self) -> str:
        return repr(names())


KIND_NAMES: Sequence[str] = KindNames()
"""Every kind name, in registry order; a live view (``names()`` gives a snapshot tuple)."""
