"""The item kinds, registered in one place (docs/architecture.md: adding a kind).

``KIND_MODULES`` maps each kind name to the module of this package that holds it;
that module defines a ``KIND``, an instance of ``core.kinds.base.Kind``. Names are
available without importing anything (the pytest plugin registers markers at
start-up and must stay light); ``get`` and ``all_kinds`` import the modules.
"""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import Kind

KIND_MODULES: dict[str, str] = {
    "qa": "qa",
    "adversarial": "adversarial",
    "temporal": "temporal",
    "citation": "citation",
    "review": "review",
}
"""Kind name -> module of ``core.kinds``, in the order reports and the gate list them."""

KIND_NAMES: tuple[str, ...] = tuple(KIND_MODULES)
"""Every kind name, in registry order."""

_MODULE_NAMES = {name: f"{__name__}.{module}" for name, module in KIND_MODULES.items()}


def get(name: str) -> Kind:
    """The kind called ``name``.

    The kind is read from its module in ``sys.modules`` on every call, never cached
    here, so that code which drops and re-imports modules (pytester's in-process
    runs do) never mixes a stale kind with fresh models.

    Raises:
        KeyError: no kind has that name.
    """
    module = sys.modules.get(_MODULE_NAMES[name]) or importlib.import_module(_MODULE_NAMES[name])
    return module.KIND


def all_kinds() -> tuple[Kind, ...]:
    """Every kind, in registry order."""
    return tuple(get(name) for name in KIND_NAMES)


def kind_of(item: object) -> Kind:
    """The kind of a validated item (its ``kind`` field)."""
    return get(item.kind)  # type: ignore[attr-defined]
