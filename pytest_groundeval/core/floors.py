"""Validating gate bounds (docs/gate.md): one layer of floors, from a floors file or a manifest's ``floors``.

A leaf of the gate: it knows the metrics (``core.metrics``) and nothing of runs,
reports or baselines, so the manifest can check its own ``floors`` with it. The
gate (``core.gate``) merges layers over the default bounds and applies them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from .metrics import GATED_COUNTS, METRIC_DIRECTIONS

RECALL_MARGIN_KEY = "retrievalRecallMargin"
"""Floors-file key for the baseline tolerance: recall must be >= baseline - margin."""


class FloorsError(ValueError):
    """A floors file or mapping is unusable; the message names the metric, the value and the file.

    Attributes:
        key: The offending metric name, when one is at fault (a manifest's error names
            the field ``floors.<key>`` with it).
    """

    key: str | None = None


def _describe(value: Any) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def _valid_names() -> str:
    return ", ".join([*METRIC_DIRECTIONS, RECALL_MARGIN_KEY])


def _check_bound(name: str, value: Any, source: str) -> float:
    direction = METRIC_DIRECTIONS.get(name)
    kind = direction.kind if direction else "margin"
    if name in GATED_COUNTS:
        expected = f"a whole number >= 0 ({name} is a count of items)"
    elif direction is None or direction.rate:
        expected = "a number in [0, 1]"
    else:
        expected = "a number >= 0"
    problem = f"'{_describe(value)}' is not a valid {kind} for {name}: expected {expected} ({source})"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise FloorsError(problem)
    if value < 0 or ((direction is None or direction.rate) and value > 1):
        raise FloorsError(problem)
    if name in GATED_COUNTS and not float(value).is_integer():
        raise FloorsError(problem)
    return float(value)


def check_floors(obj: Any, source: str = "floors") -> dict[str, float | None]:
    """Validate one layer of bounds (a floors file's or a manifest's ``floors``), without merging.

    The layer is metric wire name -> number or ``null``, with the rules of
    ``parse_floors``; ``null`` is kept (it removes a bound when layers are merged
    with ``merge_floors``).

    Args:
        obj: The decoded JSON value.
        source: Where it came from, for messages (e.g. ``"from floors.json"``).

    Returns:
        Metric name -> bound or None, in the order given.

    Raises:
        FloorsError: as ``parse_floors``; its ``key`` names the offending metric (None
            when ``obj`` is not an object).
    """
    if not isinstance(obj, Mapping):
        raise FloorsError(
            f"floors must be a JSON object mapping metric names to numbers, got {_describe(obj)} ({source})"
        )
    layer: dict[str, float | None] = {}
    for name, value in obj.items():
        try:
            if name not in METRIC_DIRECTIONS and name != RECALL_MARGIN_KEY:
                raise FloorsError(
                    f"'{name}' is not a metric with a floor or ceiling; valid names: {_valid_names()} ({source})"
                )
            if value is None:
                if name in ("errors", RECALL_MARGIN_KEY):
                    raise FloorsError(f"{name} cannot be disabled with null: it is always checked ({source})")
                layer[name] = None
                continue
            layer[name] = _check_bound(name, value, source)
        except FloorsError as exc:
            exc.key = name
            raise
    return layer
