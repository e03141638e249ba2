"""The item kinds, registered in one place (docs/architecture.md: adding a kind).

``KIND_MODULES`` maps each built-in kind name to the module of this package that
holds it; that module defines a ``KIND``, an instance of ``core.kinds.base.Kind``.
``register`` adds a kind at run time (an extension's, e.g. from a ``conftest.py``);
it then counts wherever kinds are listed: ``KIND_NAMES``, ``all_kinds``, the
manifest's item union, outcome validation, the history, the JUnit figures and the
HTML report. Names are available without importing anything but ``names`` (the
pytest plugin registers markers at start-up and must stay light); ``get`` and
``all_kinds`` import the modules.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from .names import BUILTIN_MODULES, KIND_NAMES, generation, names, on_change, registered
from .names import add as _add
from .names import remove as _remove

if TYPE_CHECKING:
    from ..outcome import ItemOutcome
    from .base import Kind

KIND_MODULES: Mapping[str, str] = BUILTIN_MODULES
"""Built-in kind name -> module of ``core.kinds``, in the order reports and the gate list them."""

_MODULE_NAMES = {name: f"{__name__}.{module}" for name, module in BUILTIN_MODULES.items()}

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
"""A registered kind's name: it is a manifest's ``kind`` value, a pytest marker and a node id segment."""


def get(name: str) -> Kind:
    """The kind called ``name``.

    A built-in kind is read from its module in ``sys.modules`` on every call, never
    cached here, so that code which drops and re-imports modules (pytester's
    in-process runs do) never mixes a stale kind with fresh models.

    Raises:
        KeyError: no kind has that name.
    """
    extra = registered(name)
    if extra is not None:
        return extra  # type: ignore[no-any-return]
    module = sys.modules.get(_MODULE_NAMES[name]) or importlib.import_module(_MODULE_NAMES[name])
    return module.KIND  # type: ignore[no-any-return]


def all_kinds() -> tuple[Kind, ...]:
    """Every kind, in registry order (built-in ones, then registered ones)."""
    return tuple(get(name) for name in names())


def kind_of(item: object) -> Kind:
    """The kind of a validated item (its ``kind`` field)."""
    return get(item.kind)  # type: ignore[attr-defined]


def register(kind: Kind | type[Kind]) -> Kind:
    """Add an item kind at run time; it comes after the built-in kinds and those registered before it.

    The checks run in this order, and nothing is registered when one fails: ``kind`` is a
    ``Kind``; its name is well formed and free; its model's ``kind`` field fits the name; its
    metrics take no name (snake_case field or camelCase wire name) of another kind's metric,
    of a metric every kind shares (``errors``, ``latencyMsP50``, …) or of a ``Metrics`` field
    that is no kind's metric (``items``, ``itemsByKind``, the gate's ``notRun``, …).

    Args:
        kind: A ``core.kinds.base.Kind`` subclass (instantiated without arguments) or
            instance. Its ``name`` is lower-case letters, digits and ``_``, starting with a
            letter; its ``model`` has a ``kind`` field whose only value is that name.

    Returns:
        The registered instance.

    Raises:
        ValueError: ``kind`` is no ``Kind``; the name is malformed or taken (by a built-in
            kind or a registered one); the model's ``kind`` field does not fit the name; or a
            metric's name clashes (the message names the kind, the metric and what it clashes with).
    """
    base = sys.modules.get(f"{__name__}.base")
    if not _is_kind(kind, base):
        raise ValueError(
            f"{kind!r} is not an item kind: pass a subclass or an instance of pytest_groundeval.Kind "
            "(docs/extending.md)"
        )
    instance = kind() if isinstance(kind, type) else kind
    name = getattr(instance, "name", None)
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(
            f"a kind's name must be lower-case letters, digits and '_', starting with a letter; got {name!r}"
        )
    if name in KIND_MODULES:
        raise ValueError(f"{name!r} is a built-in kind; give the extension's kind another name")
    if registered(name) is not None:
        raise ValueError(f"a kind named {name!r} is registered already (by an extension); kinds: {', '.join(names())}")
    model = getattr(instance, "model", None)
    fields = getattr(model, "model_fields", {})
    annotation = fields["kind"].annotation if "kind" in fields else None
    if getattr(annotation, "__args__", None) != (name,):
        raise ValueError(f"kind {name!r}: its model needs a field `kind: Literal[{name!r}]` (the manifest's union tag)")
    _check_metric_names(instance, base)
    _add(name, instance)
    return instance


def _is_kind(kind: object, base: object) -> bool:
    """Whether ``kind`` is a ``Kind`` subclass or instance (``base``: the loaded ``core.kinds.base``).

    Compared by class identity or, after a test re-imported the package, by qualified name.
    """
    if base is None:
        return False  # nothing defined a Kind yet
    cls = kind if isinstance(kind, type) else type(kind)
    return any(
        c is base.Kind or (c.__module__ == base.__name__ and c.__qualname__ == "Kind")  # type: ignore[attr-defined]
        for c in cls.__mro__
    )


def _check_metric_names(instance: Kind, base: object) -> None:
    """Refuse ``instance`` when one of its metrics takes a name that is taken (see ``register``).

    Raises:
        ValueError: naming the kind, the metric and what it clashes with.
    """
    taken: dict[str, str] = {}
    for field in base.RESERVED_METRIC_FIELDS:  # type: ignore[attr-defined]
        wire = field.split("_")[0] + "".join(part.capitalize() for part in field.split("_")[1:])
        taken[field] = taken[wire] = f"the Metrics field {wire!r}, which no kind's metric may take"
    for spec in base.COMMON_METRICS:  # type: ignore[attr-defined]
        taken[spec.field] = taken[spec.wire] = f"the metric {spec.wire!r} every kind shares"
    for other in all_kinds():
        for spec in other.metrics:
            taken[spec.field] = taken[spec.wire] = f"the metric {spec.wire!r} of the kind {other.name!r}"
    name = instance.name
    for spec in instance.metrics:
        for key in dict.fromkeys((spec.field, spec.wire)):
            if key in taken:
                raise ValueError(
                    f"kind {name!r}: its metric {spec.field!r} ({spec.wire}) clashes with {taken[key]}; "
                    "give it another name (docs/extending.md)"
                )
        taken[spec.field] = taken[spec.wire] = f"the metric {spec.wire!r} declared earlier by the kind {name!r} itself"


def unregister(name: str) -> None:
    """Remove a kind added with ``register`` (e.g. when the session that added it ends).

    Raises:
        ValueError: ``name`` is a built-in kind.
    """
    _remove(name)


register_kind = register
"""``register`` under the name the package exports it by (``pytest_groundeval.register_kind``)."""

unregister_kind = unregister
"""``unregister`` under the name the package exports it by (``pytest_groundeval.unregister_kind``)."""


def errored_outcome(items_by_id: Mapping[str, object] | None, kind: str, item_id: str, error: str, *,
                    not_run: bool = False) -> ItemOutcome:  # fmt: skip
    """The errored outcome of an item that produced none, counted as its kind counts an error.

    With the dataset's items (``Dataset.by_id``) the item's kind builds it, so a qa item keeps
    its expected evidence in the recall denominator; without them (the dataset no longer
    loads), or when the id names an item of another kind, a plain errored outcome. Errors are
    counted, never dropped (docs/gate.md).

    Args:
        items_by_id: Item id -> validated dataset item, or None when the dataset is not at hand.
        kind: The item's kind as its node id names it (a registered kind).
        item_id: The item id.
        error: Why it produced no outcome (also its ``detail``).
        not_run: The item never ran (it is then a ``notRun`` error).

    Raises:
        KeyError: no kind is called ``kind``.
    """
    item = items_by_id.get(item_id) if items_by_id is not None else None
    if item is not None and getattr(item, "kind", None) == kind:
        outcome = get(kind).errored(item, error)
    else:
        outcome = get(kind).errored_id(item_id, error)
    return outcome.model_copy(update={"not_run": True}) if not_run else outcome


__all__ = [
    "KIND_MODULES",
    "KIND_NAMES",
    "all_kinds",
    "errored_outcome",
    "generation",
    "get",
    "kind_of",
    "names",
    "on_change",
    "register",
    "register_kind",
    "unregister",
    "unregister_kind",
]
