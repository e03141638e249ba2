"""The end of a run, in one place (docs/gate.md): outcomes -> metrics -> gate, with the run's flags.

Every path that ends a run calls ``finalize_run``: the plugin at the end of a
session, ``groundeval merge`` over its shards, ``groundeval gate`` re-applying a
saved report, ``groundeval rejudge`` after new verdicts, ``groundeval report
--recover`` after a killed run, and ``core.report.check_gate`` when it checks a
saved gate. What they differ in is their inputs, given here explicitly:

- the outcomes, accumulated one at a time (``RunOutcomes``): the metrics'
  counters, how many items never ran (``notRun``), and the ids of the items of
  the kinds whose recall a baseline is taken over (``Kind.uses_baseline``);
- the complete floors, the baseline (a report, or what a run recorded of one),
  the dataset version and the model lineage, and whether the run is gated;
- the flags of the run (``RunFlags``): interrupted, and what a merge found missing;
- the confidence level of the intervals and what the bounds compare with (``--eval-gate-on``).

The outcomes also give every rate metric's confidence interval (``core.confidence``),
computed here from the same outcomes (docs/statistics.md), so every path reports the
same ``confidence`` for the same items.

The gate is ``core.gate.evaluate_gate`` of the metrics, then the checks a run adds
after it, always FAIL, in this order: ``notRun`` (items that never ran), ``run``
(an interrupted run), ``items`` (dataset items a merge is missing).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .confidence import DEFAULT_CONFIDENCE, ConfidenceInterval, GateOn, IntervalAccumulator
from .cost import price_metrics
from .gate import (
    GateCheck,
    GateResult,
    evaluate_gate,
    interrupted_check,
    missing_items_check,
    not_run_check,
    recall_figures,
    summarize_baseline,
)
from .kinds import get
from .lineage import BaselineInfo, MergeInfo, ModelLineage
from .metrics import Metrics, MetricsAccumulator
from .outcome import ItemOutcome
from .significance import DEFAULT_ALPHA

if TYPE_CHECKING:
    from .report import Report  # annotations only: a baseline report is read through its fields


def generate_model(models: Mapping[str, Any] | ModelLineage) -> str | None:
    """The lineage's generate model (which prices the target's tokens, docs/gate.md "Cost"), or None."""
    found = models.get("generate") if isinstance(models, Mapping) else models.generate
    return found if isinstance(found, str) else None


EXTRA_CHECKS = ("notRun", "run", "items")
"""The checks ``finalize_run`` adds after ``evaluate_gate``, in order; each only ever FAILs."""


@dataclass
class RunOutcomes:
    """A run's outcomes as the end of the run needs them, accumulated one at a time.

    ``add`` folds an outcome into the metrics' counters (``accumulator``), counts it,
    counts it again in ``not_run`` when it never ran, and records its id in
    ``baseline_ids`` (with its recall figures) when its kind's recall is compared with a
    baseline (``Kind.uses_baseline``). Memory is flat in the number of items except for those.
    """

    accumulator: MetricsAccumulator | None = field(default_factory=MetricsAccumulator)
    """The metrics' counters; None when the metrics are already known (``counted``)."""
    items: int = 0
    """Outcomes added."""
    not_run: int = 0
    """Of them, items that never ran (``ItemOutcome.not_run``, always an error)."""
    baseline_ids: set[str] = field(default_factory=set)
    """Ids of the outcomes whose kind uses the baseline (``Kind.uses_baseline``: qa)."""
    baseline_figures: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Their ``core.gate.recall_figures`` (expected, found), by id: what the baseline's items are paired
    with for the recall check's paired test (docs/statistics.md). Two integers per such item."""
    intervals: IntervalAccumulator = field(default_factory=IntervalAccumulator)
    """Each item's figures for the confidence intervals (kept even when the metrics are ``counted``)."""

    def add(self, outcome: ItemOutcome) -> None:
        """Fold one outcome in.

        Raises:
            ValueError: as ``MetricsAccumulator.add`` (a figure of the wrong type, a negative latency).
        """
        if self.accumulator is not None:
            self.accumulator.add(outcome)
        self.intervals.add(outcome)
        self.items += 1
        self.not_run += outcome.not_run
        if get(outcome.kind).uses_baseline:
            self.baseline_ids.add(outcome.id)
            self.baseline_figures[outcome.id] = recall_figures(outcome)

    @classmethod
    def of(cls, outcomes: Iterable[ItemOutcome | Mapping[str, Any]]) -> RunOutcomes:
        """Every outcome of ``outcomes`` (models or their wire dicts) added, in order."""
        run = cls()
        for outcome in outcomes:
            run.add(outcome if isinstance(outcome, ItemOutcome) else ItemOutcome.model_validate(outcome))
        return run

    @classmethod
    def counted(cls, outcomes: Iterable[ItemOutcome]) -> RunOutcomes:
        """The counts of ``outcomes`` without their metrics, for a saved report whose metrics are
        known (``finalize_run`` is then given them)."""
        run = cls(accumulator=None)
        for outcome in outcomes:
            run.add(outcome)
        return run

    def metrics(self) -> Metrics:
        """The ``Metrics`` of every outcome added.

        Raises:
            ValueError: the outcomes were only counted (``counted``).
        """
        if self.accumulator is None:
            raise ValueError("these outcomes were only counted: give finalize_run their metrics")
        return self.accumulator.result()


@dataclass(frozen=True)
class RunFlags:
    """What a run says about itself beside its outcomes; each adds a FAIL check (``EXTRA_CHECKS``)."""

    interrupted: bool = False
    """The run stopped before every selected item ran: the ``run`` check, counting the items that ran."""
    not_run_check: bool = True
    """Items that never ran add the ``notRun`` check, and the ``run`` check does not count them as run.
    False for a merge: a shard whose items never ran was interrupted, and the merged ``run`` check
    counts every merged item."""
    merge: MergeInfo | None = None
    """A merged run's ``merge`` block: dataset items it misses add the ``items`` check."""


@dataclass(frozen=True)
class Finalized:
    """What the end of a run decided."""

    metrics: Metrics
    """The run's metrics."""
    gate: GateResult
    """``evaluate_gate``'s checks, then the FAIL checks of the run's flags; ``passed`` False when any FAILs."""
    baseline: BaselineInfo | None
    """The baseline as the recall check used it, recorded in the report (``Report.baseline``); None without one."""
    confidence: dict[str, ConfidenceInterval | None] = field(default_factory=dict)
    """Every rate metric's interval at the run's confidence level (``Report.confidence``)."""

    @property
    def evaluated(self) -> list[GateCheck]:
        """The checks of ``evaluate_gate`` alone, without those the run's flags added."""
        return [check for check in self.gate.checks if check.metric not in EXTRA_CHECKS]


def finalize_run(
    outcomes: RunOutcomes,
    *,
    dataset_version: str,
    models: Mapping[str, Any] | ModelLineage,
    floors: Mapping[str, float | None] | None = None,
    baseline: Report | BaselineInfo | None = None,
    baseline_path: str | None = None,
    baseline_ids: Collection[str] | None = None,
    gated: bool = True,
    flags: RunFlags = RunFlags(),
    metrics: Metrics | None = None,
    alpha: float = DEFAULT_ALPHA,
    confidence_level: float = DEFAULT_CONFIDENCE,
    gate_on: GateOn = "point",
    prices: Mapping[str, Mapping[str, float]] | None = None,
) -> Finalized:
    """Metrics, baseline record and gate of a finished run (docs/gate.md).

    Args:
        outcomes: The run's outcomes (``RunOutcomes``).
        dataset_version: The run's dataset version.
        models: The run's model lineage, ``{"generate": name, "embed": name}``.
        floors: The complete bounds (``core.gate.parse_floors`` output, or what a report
            recorded); None for ``DEFAULT_FLOORS``.
        baseline: A baseline report, summarised over ``baseline_ids``
            (``core.gate.summarize_baseline``), or what a run recorded of its baseline,
            used as it is; None for no baseline check.
        baseline_path: The baseline file as the run named it, recorded for people
            (a baseline report only).
        baseline_ids: Ids of the items the baseline's recall is taken over; None for the
            baseline's overall figure (a baseline report only). Callers pass
            ``outcomes.baseline_ids``, or None when no item ran.
        gated: False for a run measured without gating (``--eval-no-gate``).
        flags: Interrupted, and what a merge misses (``RunFlags``).
        metrics: The metrics when already known (a saved report's, which
            ``core.report.check_metrics`` proved to be its items'); else computed from
            ``outcomes``.
        alpha: The significance level of the recall check's paired test (``--eval-alpha``):
            a baseline report that lists items is paired with ``outcomes``' figures over
            ``baseline_ids`` and a recall drop beyond the margin FAILs only when significant
            (docs/statistics.md); a recorded baseline keeps its own.
        confidence_level: The level of the intervals, in (0, 1) (``--eval-confidence``).
        gate_on: ``"point"`` compares each bound with the metric's value; ``"lower-bound"``
            with its interval's end on the failing side (``--eval-gate-on``, docs/gate.md).
        prices: The checked prices of ``--eval-prices`` (``core.cost``): computed metrics
            gain ``judgeCostUsd``, ``targetCostUsd`` and ``unpricedModels`` (the target's
            tokens at the price of ``models``' generate model); None leaves them null.

    Returns:
        ``Finalized(metrics, gate, baseline, confidence)``.

    Raises:
        ValueError: ``outcomes`` were only counted and no ``metrics`` were given, or
            ``confidence_level`` is not in (0, 1).
    """
    if metrics is None:
        metrics = price_metrics(outcomes.metrics(), prices, generate_model(models))
    confidence = outcomes.intervals.intervals(metrics, confidence_level)
    if baseline is None or isinstance(baseline, BaselineInfo):
        record = baseline
    else:
        figures = outcomes.baseline_figures if baseline_ids is not None else None
        record = summarize_baseline(baseline, baseline_ids, baseline_path, figures, alpha)
    gate = evaluate_gate(
        metrics,
        floors=floors,
        baseline=record,
        dataset_version=dataset_version,
        models=models,
        gated=gated,
        confidence=confidence,
        gate_on=gate_on,
        confidence_level=confidence_level,
    )
    not_run = outcomes.not_run if flags.not_run_check else 0
    extra: list[GateCheck] = []
    if not_run:
        extra.append(not_run_check(not_run, outcomes.items))
    if flags.interrupted:
        extra.append(interrupted_check(outcomes.items - not_run))
    if flags.merge is not None and flags.merge.missing_items:
        extra.append(missing_items_check(flags.merge))
    if extra:
        gate = gate.model_copy(update={"passed": False, "checks": [*gate.checks, *extra]})
    return Finalized(metrics=metrics, gate=gate, baseline=record, confidence=confidence)
