"""The report's ``confidence``: an interval for every rate metric (docs/statistics.md, "Confidence intervals").

``IntervalAccumulator`` sits beside ``core.metrics.MetricsAccumulator`` in
``core.finalize.RunOutcomes`` and is fed the same outcomes. An item is one
cluster: its outcome is folded into fresh tallies of the kinds that measure it,
and each ratio metric's ``(numerator, denominator)`` for that item
(``Kind.rate_parts``; ``evidenceRiskScore``'s reviewed score and 1) is counted in a
``Counter`` keyed by the pair. Items with equal pairs are interchangeable for a
ratio of sums, so memory grows with the distinct pairs, not with the items, and
accumulators merge by adding counters: any order or partition of the outcomes
(xdist workers, shards) gives the same intervals.

``intervals`` picks each metric's method (``core.intervals``):

- ``wilson`` when every item is one trial, a pass or a fail (each pair is
  ``(0, 1)`` or ``(1, 1)``: falsehoodRejection, temporalAccuracy), or when every
  item scored the same all-or-nothing ratio (all 0 or all 1; a bootstrap would
  resample one value and return a zero-width interval), then over the items;
  judge agreement is Wilson's over labelled paragraphs (``UnitTable.success``);
- ``bootstrap`` otherwise: the seeded cluster bootstrap of the ratio of sums over
  items, or, for Cohen's kappa, the bootstrap over labelled paragraphs.

A metric that is None gets None, as does a rate whose kind declares no parts
(an extension's metric without ``rate_parts``). An interval is widened, if need
be, to hold the metric's value: a percentile bootstrap can, rarely, leave it out.

An item with several attempts (repeats) is still one cluster: ``add_item`` folds
every attempt into the item's tallies before its pairs are counted.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from .intervals import (
    BOOTSTRAP_REPLICATES,
    DEFAULT_CONFIDENCE,
    GATE_ON,
    GateOn,
    check_level,
    cluster_bootstrap,
    table_bootstrap,
    wilson,
    z_value,
)
from .kinds import all_kinds
from .kinds.base import Kind, MetricSpec, UnitTable
from .metrics import Metrics, metric_specs
from .outcome import ItemOutcome
from .wire import WireModel

__all__ = [
    "BOOTSTRAP_SEED",
    "DEFAULT_CONFIDENCE",
    "GATE_ON",
    "ConfidenceInterval",
    "GateOn",
    "IntervalAccumulator",
    "RecordedSettingError",
    "check_level",
    "compute_confidence",
    "first_difference",
    "rate_specs",
    "recorded_confidence",
    "unit_table_interval",
]

BOOTSTRAP_SEED = "groundeval-bootstrap"
"""The bootstrap's seed is this and the metric's wire name (``groundeval-bootstrap:retrievalRecall``):
fixed, so the same outcomes always give the same interval, and different for each metric."""

Method = Literal["wilson", "bootstrap"]


class ConfidenceInterval(WireModel):
    """A metric's confidence interval at the report's ``confidenceLevel`` (docs/statistics.md)."""

    model_config = ConfigDict(allow_inf_nan=False)

    low: float = Field(ge=-1.0, le=1.0)
    """Lower end."""
    high: float = Field(ge=-1.0, le=1.0)
    """Upper end, ``>= low``."""
    method: Method
    """``wilson`` (a share of independent trials) or ``bootstrap`` (seeded percentile bootstrap)."""

    @model_validator(mode="after")
    def _ordered(self) -> ConfidenceInterval:
        if self.low > self.high:
            raise ValueError(f"low {self.low} is above high {self.high}")
        return self


class RecordedSettingError(ValueError):
    """A run's recorded ``confidenceLevel`` or ``gateOn`` that is not one (``recorded_confidence``).

    Each reader words it for its own input (a report spool, a history run).
    """

    def __init__(self, key: str, value: Any, problem: str) -> None:
        super().__init__(f"{key} {value!r}: {problem}")
        self.key = key
        """``confidenceLevel`` or ``gateOn``."""
        self.value = value
        """The value recorded."""
        self.problem = problem
        """What is wrong: ``check_level``'s message, or ``not one of point, lower-bound``."""


def recorded_confidence(recorded: Mapping[str, Any] | None) -> tuple[float, GateOn]:
    """The confidence level and ``gateOn`` a run recorded: the ``confidenceLevel`` and ``gateOn`` of a
    report spool's context or of a history run's config (docs/statistics.md).

    Returns:
        ``(level, gate_on)``; a key left out (a run recorded before it was) gives its default,
        ``DEFAULT_CONFIDENCE`` and ``point``.

    Raises:
        RecordedSettingError: the level is not a number in (0, 1), or ``gateOn`` not one of ``GATE_ON``.
    """
    recorded = recorded or {}
    level = recorded.get("confidenceLevel", DEFAULT_CONFIDENCE)
    gate_on = recorded.get("gateOn", "point")
    try:
        checked = check_level(level)
    except ValueError as exc:
        raise RecordedSettingError("confidenceLevel", level, str(exc)) from exc
    if gate_on not in GATE_ON:
        raise RecordedSettingError("gateOn", gate_on, f"not one of {', '.join(GATE_ON)}")
    return checked, gate_on


def rate_specs() -> tuple[MetricSpec, ...]:
    """The metrics that are rates (a share in [0, 1], or kappa in [-1, 1]), in report order: the ones
    with an interval. Latency, tokens, counts and tables are not rates."""
    return tuple(
        spec for spec in metric_specs() if spec.type_ == "rate" and (spec.direction is None or spec.direction.rate)
    )


@dataclass(frozen=True)
class _Dispatch:
    by_kind: dict[str, Kind]
    """Kind name -> kind, for the kinds that declare ``rate_parts`` or ``unit_tables``."""
    any: tuple[Kind, ...]
    """Of them, those whose ``tally_any`` folds figures of any kind's outcome (citation)."""
    tables: tuple[Kind, ...]
    """Of them, those whose run tally gives ``unit_tables``."""


def _declares(kind: Kind, method: str) -> bool:
    return getattr(type(kind), method) is not getattr(Kind, method)


def _dispatch() -> _Dispatch:
    kinds = [kind for kind in all_kinds() if _declares(kind, "rate_parts") or _declares(kind, "unit_tables")]
    return _Dispatch(
        by_kind={kind.name: kind for kind in kinds},
        any=tuple(kind for kind in kinds if _declares(kind, "tally_any")),
        tables=tuple(kind for kind in kinds if _declares(kind, "unit_tables")),
    )


def _counter() -> Counter[tuple[Any, Any]]:
    return Counter()


@dataclass
class IntervalAccumulator:
    """Per-item ``(numerator, denominator)`` pairs of every ratio metric, counted; ``add``, ``merge``, ``intervals``.

    Memory is one counter entry per distinct pair per metric (a few dozen for a qa run of any
    size; one per item for a continuous score), plus the run tally of each kind with
    ``unit_tables`` (citation's confusion table).
    """

    clusters: dict[str, Counter[tuple[Any, Any]]] = field(default_factory=dict)
    """Metric field name -> ``(numerator, denominator)`` -> items with that pair (denominator > 0)."""
    tallies: dict[str, Any] = field(default_factory=dict)
    """Kind name -> the run's tally, for kinds with ``unit_tables``."""
    _kinds: _Dispatch = field(default_factory=_dispatch, repr=False, compare=False)
    _scratch: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """Kind name -> an item tally nothing was folded into, reused by the next item."""
    _empty: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """Kind name -> a fresh tally, to tell an untouched item tally by equality."""

    def _fresh(self, kind: Kind) -> Any:
        empty = self._empty.get(kind.name)
        if empty is None:
            empty = self._empty[kind.name] = kind.new_tally()
        return empty

    def add(self, outcome: ItemOutcome) -> None:
        """Fold one item's outcome in, as one cluster: its attempts when it has them (``--eval-repeat``).

        Raises:
            ValueError: as ``MetricsAccumulator.add`` (a figure of the wrong type); the message names the item.
        """
        if outcome.attempts is None:
            self.add_item((outcome,))
            return
        self.add_item(outcome.attempts)
        # pass@k and pass^k (docs/gate.md, "Repeats") are shares of items, one pass/fail trial
        # each (any attempt passed; every attempt passed): Wilson, as for any such share.
        for metric, hit in (
            ("pass_at_k", any(a.passed for a in outcome.attempts)),
            ("pass_hat_k", all(a.passed for a in outcome.attempts)),
        ):
            counter = self.clusters.get(metric)
            if counter is None:
                counter = self.clusters[metric] = _counter()
            counter[(int(hit), 1)] += 1

    def add_item(self, attempts: Sequence[ItemOutcome]) -> None:
        """Fold one item in as one cluster: every outcome of ``attempts`` (one per attempt) summed.

        Raises:
            ValueError: as ``add``.
        """
        if not attempts:
            return
        kinds = self._kinds
        own = kinds.by_kind.get(attempts[0].kind)
        item: list[tuple[Kind, Any]] = []
        if own is not None:
            tally = own.new_tally()
            for outcome in attempts:
                tally.items += 1
                own.tally(tally, outcome)
            item.append((own, tally))
        for kind in kinds.any:
            # The same tally as its own kind's for an outcome of that kind, as MetricsAccumulator folds it.
            if kind is own:
                tally = item[0][1]
            else:
                tally = self._scratch.pop(kind.name, None) or kind.new_tally()
                item.append((kind, tally))
            for outcome in attempts:
                kind.tally_any(tally, outcome)
        for kind, tally in item:
            touched = kind is own
            for metric, (num, den) in kind.rate_parts(tally).items():
                if den:
                    counter = self.clusters.get(metric)
                    if counter is None:
                        counter = self.clusters[metric] = _counter()
                    counter[(num, den)] += 1
                touched = touched or bool(num or den)
            if not touched and tally == self._fresh(kind):
                # Nothing of this item reached this kind's tally (most outcomes carry no citation
                # figures): it serves the next item, and a fresh citation tally costs three Counters.
                self._scratch[kind.name] = tally
            elif kind in kinds.tables:
                run = self.tallies.get(kind.name)
                if run is None:
                    run = self.tallies[kind.name] = kind.new_tally()
                run.merge(tally)
        scores = [
            outcome.evidence_review.score
            for outcome in attempts
            if outcome.evidence_review is not None and outcome.evidence_review.reviewed
        ]
        if scores:
            counter = self.clusters.get("evidence_risk_score")
            if counter is None:
                counter = self.clusters["evidence_risk_score"] = _counter()
            # fsum: correctly rounded, so the same scores always give the same key.
            counter[(math.fsum(scores), len(scores))] += 1

    def merge(self, other: IntervalAccumulator) -> IntervalAccumulator:
        """Add another accumulator's clusters and tallies into this one; returns ``self``."""
        for metric, counter in other.clusters.items():
            self.clusters.setdefault(metric, _counter()).update(counter)
        for name, tally in other.tallies.items():
            if name in self.tallies:
                self.tallies[name].merge(tally)
            else:
                self.tallies[name] = tally
        return self

    def _tables(self) -> dict[str, UnitTable]:
        tables: dict[str, UnitTable] = {}
        for kind in self._kinds.tables:
            if kind.name in self.tallies:
                tables.update(kind.unit_tables(self.tallies[kind.name]))
        return tables

    def intervals(self, metrics: Metrics, level: float) -> dict[str, ConfidenceInterval | None]:
        """Every rate metric's interval at ``level`` (wire name -> interval, None when it has none).

        Args:
            metrics: The run's metrics (the point estimates each interval is made to hold).
            level: The confidence level, in (0, 1).

        Raises:
            ValueError: ``level`` is not in (0, 1).
        """
        z_value(level)
        tables = self._tables()
        values = metrics.to_wire()
        out: dict[str, ConfidenceInterval | None] = {}
        for spec in rate_specs():
            value = values.get(spec.wire)
            found: tuple[float, float, Method] | None = None
            if value is not None and spec.field in tables:
                out[spec.wire] = unit_table_interval(tables[spec.field], value, level, spec.wire)
                continue
            if value is not None and self.clusters.get(spec.field):
                found = _cluster_interval(self.clusters[spec.field], level, spec.wire)
            out[spec.wire] = None if found is None or value is None else _holding(found, value)
        return out


def _holding(found: tuple[float, float, Method], value: float) -> ConfidenceInterval:
    low, high, method = found
    # A percentile bootstrap can, rarely, leave the value itself out: the interval holds it.
    return ConfidenceInterval(low=min(low, value), high=max(high, value), method=method)


def unit_table_interval(
    table: UnitTable,
    value: float | None,
    level: float,
    wire: str,
    *,
    replicates: int = BOOTSTRAP_REPLICATES,
    seed: str | None = None,
) -> ConfidenceInterval | None:
    """The interval of a metric figured from a table of independent units (``Kind.unit_tables``), as
    a run's ``confidence`` gives it: Wilson's over the units for a share of successes
    (``UnitTable.success``), else the seeded percentile bootstrap over the units
    (``core.intervals.table_bootstrap``), widened to hold ``value``.

    ``groundeval calibrate`` calls this with the same table, so its interval of ``judgeKappa``
    or ``judgeAgreement`` is the one a run of the same paragraphs reports and gates on under
    ``--eval-gate-on=lower-bound`` (docs/statistics.md).

    Args:
        table: The units, counted by cell, and the metric's statistic.
        value: The metric's value over the whole table; None gives None.
        level: The confidence level, in (0, 1).
        wire: The metric's wire name, part of the bootstrap's seed (``BOOTSTRAP_SEED``).
        replicates: Bootstrap replicates (a run uses ``BOOTSTRAP_REPLICATES``).
        seed: The bootstrap's seed; None for a run's, ``BOOTSTRAP_SEED`` and ``wire``.

    Raises:
        ValueError: ``level`` is not in (0, 1), or ``replicates`` is below 1.
    """
    z_value(level)
    if replicates < 1:
        raise ValueError(f"a bootstrap needs at least one replicate, got {replicates!r}")
    if value is None:
        return None
    found = _table_interval(table, level, seed or f"{BOOTSTRAP_SEED}:{wire}", replicates)
    return None if found is None else _holding(found, value)


def _cluster_interval(clusters: Mapping[tuple[Any, Any], int], level: float, wire: str) -> tuple[float, float, Method]:
    items = sum(clusters.values())
    if all(pair in ((0, 1), (1, 1)) for pair in clusters):
        return (*wilson(clusters.get((1, 1), 0), items, level), "wilson")
    if all(num == 0 for num, _ in clusters):
        return (*wilson(0, items, level), "wilson")
    if all(num == den for num, den in clusters):
        return (*wilson(items, items, level), "wilson")
    return (*cluster_bootstrap(clusters, level, f"{BOOTSTRAP_SEED}:{wire}"), "bootstrap")


def _table_interval(table: UnitTable, level: float, seed: str, replicates: int) -> tuple[float, float, Method] | None:
    units = sum(table.counts.values())
    if not units:
        return None
    if table.success is not None:
        hits = sum(count for cell, count in table.counts.items() if table.success(cell))
        return (*wilson(hits, units, level), "wilson")
    found = table_bootstrap(table.counts, table.statistic, level, seed, replicates)
    return None if found is None else (*found, "bootstrap")


def compute_confidence(
    outcomes: Iterable[ItemOutcome | Mapping[str, Any]], metrics: Metrics, level: float = DEFAULT_CONFIDENCE
) -> dict[str, ConfidenceInterval | None]:
    """The ``confidence`` of a run from its outcomes (models or wire dicts, one per item) and its metrics."""
    accumulator = IntervalAccumulator()
    for outcome in outcomes:
        accumulator.add(outcome if isinstance(outcome, ItemOutcome) else ItemOutcome.model_validate(outcome))
    return accumulator.intervals(metrics, level)


def first_difference(
    stored: Mapping[str, ConfidenceInterval | None], expected: Mapping[str, ConfidenceInterval | None]
) -> tuple[str, dict[str, Any] | None, dict[str, Any] | None] | None:
    """The first metric whose interval differs between ``stored`` and ``expected``, as
    ``(name, stored wire, expected wire)``; None when they agree.

    Ends are compared to 1e-9 (relative; both come from the same seeded computation, the
    tolerance only absorbs JSON's last digit), methods exactly; a metric in one and not the
    other differs, except one ``stored`` lacks that has no interval (a metric added after the
    report was written, which its items do not measure: ``passAtK`` in a run without repeats).
    Metrics in ``expected`` order, then those only ``stored`` has.
    """
    for name in [*expected, *(name for name in stored if name not in expected)]:
        got, want = stored.get(name), expected.get(name)
        if got is None or want is None:
            same = got is None and want is None and name in expected
        else:
            same = (
                got.method == want.method
                and math.isclose(got.low, want.low, rel_tol=1e-9, abs_tol=1e-12)
                and math.isclose(got.high, want.high, rel_tol=1e-9, abs_tol=1e-12)
            )
        if not same:
            return name, None if got is None else got.to_wire(), None if want is None else want.to_wire()
    return None
