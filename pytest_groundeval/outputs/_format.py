"""Small text helpers shared by the HTML and Markdown outputs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.gate import describe_lineage
from ..core.metrics import format_value


def metric_value(metric: str, value: float | None) -> str:
    """A metric value as the terminal prints it (``core.metrics.format_value``): rates to 4 places, n/a for None."""
    return format_value(metric, value)


def value_with_interval(metric: str, value: float | None, confidence: Mapping[str, Any] | None) -> str:
    """A metric's value and, when the report has one for it, its confidence interval:
    ``0.9906 [0.9812, 0.9961]`` (docs/statistics.md)."""
    interval = (confidence or {}).get(metric) if value is not None else None
    shown = format_value(metric, value)
    if not isinstance(interval, Mapping):
        return shown
    return f"{shown} [{format_value(metric, interval.get('low'))}, {format_value(metric, interval.get('high'))}]"


def models_label(models: Mapping[str, Any] | None) -> str:
    """``generate=<model>/embed=<model>``, ``unknown`` for a missing name."""
    return describe_lineage(models)


def one_line(text: str, limit: int) -> str:
    """``text`` with whitespace runs collapsed, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
