"""Metrics folded part by part, as xdist workers fold them, for tests that compare with the whole."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_groundeval.core.metrics import Metrics, MetricsAccumulator
from pytest_groundeval.core.outcome import ItemOutcome


def merged_metrics(parts: Sequence[Sequence[ItemOutcome]]) -> Metrics:
    """Accumulate each part on its own, merge the accumulators in order, and return the result."""
    accumulators = []
    for part in parts:
        accumulator = MetricsAccumulator()
        for outcome in part:
            accumulator.add(outcome)
        accumulators.append(accumulator)
    merged = accumulators[0]
    for other in accumulators[1:]:
        merged.merge(other)
    return merged.result()
