"""The item kinds, registered in one place (docs/architecture.md: adding a kind).

``KIND_MODULES`` maps each kind name to the module of this package that holds it;
that module defines a ``KIND``, an instance of ``core.kinds.base.Kind``. Names are
available without importing anything (the pytest plugin registers markers at
start-up and must stay light); ``get`` and ``all_kinds`` import the modules.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..outcome import ItemOutcome
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


def errored_outcome(items_by_id: Mapping[str, object] | None, kind: str, item_id: str, error: str, *,
                    not_run: bool = False) -> ItemOutcome:  # fmt: skip
    """The errored outcome of an item that produced none, counted as its kind counts an error.

    With the dataset's items (``Dataset.by_id``) the item's kind builds it, so a qa item keeps
    its expected evidence in the recall denominator; without them (the dataset no longer
    loads), or when the id names an item of another kind, a plain errored outcome. Errors are
    counted, never dropped (docs/gate.md).

    Args:
        items_by_id: Item id -> validated dataset item, or None when the dataset is not at hand.
        kind: The item's kind as its node id names it.
        item_id: The item id.
        error: Why it produced no outcome (also its ``detail``).
        not_run: The item never ran (it is then a ``notRun`` error).
    """
    from ..outcome import ItemOutcome

    item = items_by_id.get(item_id) if items_by_id is not None else None
    if item is not None and getattr(item, "kind", None) == kind:
        outcome = get(kind).errored(item, error)
    else:
        outcome = ItemOutcome(id=item_id, kind=kind, passed=False, error=error, detail=error)
    return outcome.model_copy(update={"not_run": True}) if not_run else outcome
