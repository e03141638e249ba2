"""The quality gate (SPEC §9): floors and ceilings on metrics, and the baseline recall check.

The gate turns ``Metrics`` into ``GateCheck``s, each PASS, FAIL or SKIP with a
plain-language reason; it passes iff no check FAILs. Bounds come from a JSON
floors file (``--eval-floors``) merged over ``DEFAULT_FLOORS``. Retrieval recall
is compared with a baseline report only when the baseline measured the same
dataset version with the same model lineage (generate and embed models).

``groundeval gate --report R [--baseline B] [--floors F]`` re-applies the gate
to a saved report with no target (``gate_main``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from ._model import WireModel
from .metrics import Metrics

if TYPE_CHECKING:
    from .report import ModelLineage, Report

Op = Literal[">=", "<="]
CheckOutcome = Literal["PASS", "FAIL", "SKIP"]


@dataclass(frozen=True)
class MetricDirection:
    """How a bound on one metric reads."""

    op: Op
    """``">="`` for a floor (higher is better), ``"<="`` for a ceiling (lower is better)."""
    rate: bool
    """True for a rate in [0, 1]; otherwise the bound is any number >= 0."""
    unit: str = ""
    """Unit shown after the value: ``"ms"``, ``"tokens"`` or empty."""

    @property
    def kind(self) -> str:
        """``"floor"`` or ``"ceiling"``, as used in messages."""
        return "floor" if self.op == ">=" else "ceiling"


METRIC_DIRECTIONS: Mapping[str, MetricDirection] = MappingProxyType(
    {
        "retrievalRecall": MetricDirection(">=", rate=True),
        "claimSupportPrecision": MetricDirection(">=", rate=True),
        "claimSupportRecall": MetricDirection(">=", rate=True),
        "falsehoodRejection": MetricDirection(">=", rate=True),
        "temporalAccuracy": MetricDirection(">=", rate=True),
        "evidenceRiskScore": MetricDirection(">=", rate=True),
        "citationMetadataAccuracy": MetricDirection(">=", rate=True),
        "citationSupportedRate": MetricDirection(">=", rate=True),
        "wrongSpeakerRate": MetricDirection("<=", rate=True),
        "coverageScoreMean": MetricDirection(">=", rate=True),
        "latencyMsP50": MetricDirection("<=", rate=False, unit="ms"),
        "latencyMsP95": MetricDirection("<=", rate=False, unit="ms"),
        "tokensPerQuery": MetricDirection("<=", rate=False, unit="tokens"),
        "errors": MetricDirection("<=", rate=False),
    }
)
"""Every gate-able metric (wire name) and whether its bound is a floor or a ceiling (SPEC §9, §11).

Rates are floors except ``wrongSpeakerRate`` (a share of mistakes); latency,
tokens and errors are ceilings. Checks are printed in this order.
"""

RECALL_MARGIN_KEY = "retrievalRecallMargin"
"""Floors-file key for the baseline tolerance: recall must be >= baseline - margin."""

DEFAULT_RECALL_MARGIN = 0.02
"""Default baseline tolerance for ``retrievalRecall`` (SPEC §9)."""

DEFAULT_FLOORS: Mapping[str, float] = MappingProxyType(
    {
        "claimSupportPrecision": 0.90,
        "claimSupportRecall": 0.90,
        "falsehoodRejection": 0.95,
        "temporalAccuracy": 1.0,
        "errors": 0,
        RECALL_MARGIN_KEY: DEFAULT_RECALL_MARGIN,
    }
)
"""Bounds applied when no floors file says otherwise (SPEC §9)."""

UNKNOWN_MODEL = "unknown"
"""Model name recorded when the lineage could not be learnt; it matches no baseline."""

_NOT_MEASURED = "no items measured this metric (n/a)"


class FloorsError(ValueError):
    """A floors file or mapping is unusable; the message names the metric, the value and the file."""


class GateCheck(WireModel):
    """One metric compared with one bound."""

    metric: str
    """The metric's wire name (``METRIC_DIRECTIONS``)."""
    value: float | None
    """The run's value; None when no item measured it."""
    bound: float | None
    """The floor or ceiling compared with; None when the check was skipped before a bound existed."""
    op: Op
    """``">="`` (floor) or ``"<="`` (ceiling)."""
    outcome: CheckOutcome
    """PASS, FAIL, or SKIP (not measured, or no comparable baseline)."""
    reason: str
    """Why, in plain language: the comparison made, or why it was skipped."""


class GateResult(WireModel):
    """Every check of a run and the verdict."""

    passed: bool
    """True iff no check FAILed (SPEC §9)."""
    checks: list[GateCheck]
    """The checks, in ``METRIC_DIRECTIONS`` order."""


# --- floors ---------------------------------------------------------------------------------


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
    expected = "a number in [0, 1]" if direction is None or direction.rate else "a number >= 0"
    problem = f"'{_describe(value)}' is not a valid {kind} for {name}: expected {expected} ({source})"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise FloorsError(problem)
    if value < 0 or ((direction is None or direction.rate) and value > 1):
        raise FloorsError(problem)
    return float(value)


def parse_floors(obj: Any, source: str = "floors") -> dict[str, float]:
    """Validate a floors mapping and merge it over ``DEFAULT_FLOORS``.

    The mapping is metric wire name -> number. Rates take a number in [0, 1];
    ceilings (latency ms, tokens, errors) a number >= 0. ``null`` disables a
    default bound (for example ``{"temporalAccuracy": null}``), except
    ``errors``, which is always checked. ``retrievalRecallMargin`` (in [0, 1],
    default 0.02) is the tolerance of the baseline recall check.

    Args:
        obj: The decoded JSON value.
        source: Where it came from, for messages (e.g. ``"from floors.json"``).

    Returns:
        Metric name -> bound, plus ``retrievalRecallMargin``.

    Raises:
        FloorsError: ``obj`` is not an object; a name is unknown (the message lists
            the valid names); a value is not a finite number, is a bool, is a rate
            outside [0, 1] or a negative ceiling; or ``errors`` is null.
    """
    if not isinstance(obj, Mapping):
        raise FloorsError(
            f"floors must be a JSON object mapping metric names to numbers, got {_describe(obj)} ({source})"
        )
    merged = dict(DEFAULT_FLOORS)
    for name, value in obj.items():
        if name not in METRIC_DIRECTIONS and name != RECALL_MARGIN_KEY:
            raise FloorsError(
                f"'{name}' is not a metric with a floor or ceiling; valid names: {_valid_names()} ({source})"
            )
        if value is None:
            if name in ("errors", RECALL_MARGIN_KEY):
                raise FloorsError(f"{name} cannot be disabled with null: it is always checked ({source})")
            merged.pop(name, None)
            continue
        merged[name] = _check_bound(name, value, source)
    return merged


def load_floors(path: str | Path) -> dict[str, float]:
    """Read a floors JSON file and merge it over ``DEFAULT_FLOORS`` (see ``parse_floors``).

    Raises:
        FloorsError: The file cannot be read, is not JSON, or holds an invalid bound.
    """
    source = f"from {Path(path).name}"
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FloorsError(f"cannot read floors file {path}: {exc}") from exc
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FloorsError(f"floors file {path} is not valid JSON: {exc}") from exc
    return parse_floors(obj, source)


# --- formatting ------------------------------------------------------------------------------


def format_value(metric: str, value: float | None) -> str:
    """A metric value as printed: rates to 4 decimals, ms and tokens to 1, counts whole, None as n/a."""
    if value is None:
        return "n/a"
    direction = METRIC_DIRECTIONS.get(metric)
    if metric in ("errors", "items"):
        return str(int(value))
    if direction is None or direction.rate:
        return f"{value:.4f}"
    return f"{value:.1f}" + (f" {direction.unit}" if direction.unit else "")


def format_check(check: GateCheck) -> str:
    """One line for the terminal summary and the CLI: metric, value, op bound, outcome, reason.

    Example: ``claimSupportPrecision      0.9412 >= 0.9000     PASS  0.9412 >= 0.9000``.
    """
    value = format_value(check.metric, check.value)
    bound = format_value(check.metric, check.bound)
    return f"{check.metric:<26} {value:>12} {check.op} {bound:<12} {check.outcome:<4}  {check.reason}"


def interrupted_check(items_ran: int) -> GateCheck:
    """The check that fails a run which stopped before every selected item ran."""
    return GateCheck(
        metric="run",
        value=None,
        bound=None,
        op="<=",
        outcome="FAIL",
        reason=f"interrupted after {items_ran} items: the metrics cover only part of the selection",
    )


def unbounded_lines(metrics: Metrics, result: GateResult) -> list[str]:
    """Lines for measured metrics that no check covers (reported, not gated), aligned with ``format_check``."""
    checked = {c.metric for c in result.checks}
    values = metrics.to_wire()
    return [
        f"{metric:<26} {format_value(metric, values[metric]):>12}    {'':<12} INFO  reported; no bound set"
        for metric in METRIC_DIRECTIONS
        if metric not in checked and values.get(metric) is not None
    ]


# --- evaluation -------------------------------------------------------------------------------


def _lineage_dict(models: Mapping[str, Any] | ModelLineage | None) -> dict[str, str]:
    if models is None:
        return {}
    if not isinstance(models, Mapping):
        models = models.model_dump()
    return {key: str(value) for key, value in models.items() if value is not None}


def _lineage_known(models: Mapping[str, str]) -> bool:
    return all(models.get(role) not in (None, "", UNKNOWN_MODEL) for role in ("generate", "embed"))


def describe_lineage(models: Mapping[str, Any] | ModelLineage | None) -> str:
    """``generate=<model>/embed=<model>``, ``unknown`` for a missing name."""
    lineage = _lineage_dict(models)
    return "/".join(f"{role}={lineage.get(role) or UNKNOWN_MODEL}" for role in ("generate", "embed"))


def same_lineage(
    a_models: Mapping[str, Any] | ModelLineage | None, b_models: Mapping[str, Any] | ModelLineage | None
) -> bool:
    """Whether two runs used the same generate and embed models, both known (SPEC §9).

    An ``unknown`` (or missing) model name matches nothing, not even another
    ``unknown``: a baseline is only comparable when we know it is.
    """
    a, b = _lineage_dict(a_models), _lineage_dict(b_models)
    if not (_lineage_known(a) and _lineage_known(b)):
        return False
    return all(a[role] == b[role] for role in ("generate", "embed"))


def _compare(metric: str, value: float | None, bound: float, op: Op, note: str = "") -> GateCheck:
    if value is None:
        return GateCheck(metric=metric, value=None, bound=bound, op=op, outcome="SKIP", reason=_NOT_MEASURED)
    ok = value >= bound if op == ">=" else value <= bound
    shown_op = op if ok else ("<" if op == ">=" else ">")
    reason = f"{format_value(metric, value)} {shown_op} {format_value(metric, bound)}{note}"
    return GateCheck(metric=metric, value=value, bound=bound, op=op, outcome="PASS" if ok else "FAIL", reason=reason)


def _skip(metric: str, value: float | None, reason: str) -> GateCheck:
    return GateCheck(metric=metric, value=value, bound=None, op=">=", outcome="SKIP", reason=reason)


def baseline_recall(baseline: Report, qa_ids: Collection[str] | None) -> tuple[float | None, str]:
    """The baseline's retrieval recall over the qa items that ran in this run, and a note.

    A slice (``-k``, a single node id) is compared with the baseline's figure for the
    same items, not with its whole-dataset figure. Without ids, or with a baseline
    that lists no items, the baseline's overall metric is used.

    Raises:
        LookupError: some qa item that ran is not in the baseline (message says how many).
    """
    if qa_ids is None or not baseline.items:
        return baseline.metrics.retrieval_recall, "baseline"
    wanted = set(qa_ids)
    expected = found = 0
    for item in baseline.items:
        if item.kind == "qa" and item.id in wanted:
            wanted.discard(item.id)
            expected += item.evidence_expected
            found += item.evidence_found
    if wanted:
        raise LookupError(f"the baseline lacks {len(wanted)} of the {len(qa_ids)} qa item(s) that ran")
    every = sum(1 for item in baseline.items if item.kind == "qa")
    ran = f"{len(qa_ids)} qa item{'s' if len(qa_ids) != 1 else ''}"
    scope = "baseline" if len(qa_ids) == every else f"baseline over the {ran} that ran"
    return (found / expected if expected else None), scope


def _baseline_recall_check(
    value: float | None,
    margin: float,
    baseline: Report | None,
    dataset_version: str,
    models: Mapping[str, str],
    qa_ids: Collection[str] | None = None,
) -> GateCheck:
    metric = "retrievalRecall"
    if value is None:
        return _skip(metric, value, _NOT_MEASURED)
    if baseline is None:
        return _skip(metric, value, "no baseline given")
    if baseline.dataset_version != dataset_version:
        reason = f"baseline is for dataset {baseline.dataset_version}, this run is {dataset_version}"
        return _skip(metric, value, reason)
    if not _lineage_known(models):
        return _skip(metric, value, f"model lineage unknown matches no baseline (this run: {describe_lineage(models)})")
    if not same_lineage(baseline.models, models):
        return _skip(
            metric,
            value,
            f"baseline model lineage {describe_lineage(baseline.models)} differs from {describe_lineage(models)}",
        )
    try:
        reference, scope = baseline_recall(baseline, qa_ids)
    except LookupError as exc:
        return _skip(metric, value, str(exc))
    if reference is None:
        return _skip(metric, value, "the baseline measured no retrievalRecall (n/a)")
    note = f" ({scope} {reference:.4f} - margin {margin:.4f})"
    # Rounded so that float noise (0.93 - 0.02 = 0.9100000000000001) cannot fail an equal recall.
    return _compare(metric, value, max(round(reference - margin, 12), 0.0), ">=", note)


_CLAIM_METRICS = frozenset({"claimSupportPrecision", "claimSupportRecall"})


def _silent_on_qa(metrics: Metrics) -> bool:
    """qa items ran (not only errored) and the target returned no claim for any of them."""
    return metrics.items_by_kind.get("qa", 0) > 0 and metrics.qa_claims == 0


def _silent_check(metric: str, bound: float, op: Op, metrics: Metrics) -> GateCheck:
    """A claim metric left unmeasured because the target answered with no claims: a FAIL, not a SKIP.

    SPEC §9 skips a floor whose metric has no items; here the items ran, and a target
    that asserts nothing must not pass as green.
    """
    qa = metrics.items_by_kind.get("qa", 0)
    return GateCheck(
        metric=metric,
        value=None,
        bound=bound,
        op=op,
        outcome="FAIL",
        reason=f"{qa} qa item(s) ran but the target returned no claims: nothing supported, nothing to measure",
    )


def evaluate_gate(
    metrics: Metrics,
    *,
    floors: Mapping[str, float | None] | None = None,
    baseline: Report | None = None,
    dataset_version: str,
    models: Mapping[str, Any] | ModelLineage,
    qa_ids: Collection[str] | None = None,
) -> GateResult:
    """Apply floors, ceilings and the baseline recall check to a run's metrics (SPEC §9).

    Args:
        metrics: The run's metrics.
        floors: The complete bounds (as returned by ``parse_floors``/``load_floors``);
            None means ``DEFAULT_FLOORS``. A metric absent (or None) here has no
            bound, except ``errors``, which is always checked (ceiling 0 unless set).
        baseline: A previous report to compare retrieval recall with, if any.
        dataset_version: This run's dataset version.
        models: This run's model lineage: ``{"generate": name, "embed": name}``.
        qa_ids: Ids of the qa items that ran; the baseline's recall is then taken over
            the same items (see ``baseline_recall``). None: the baseline's overall figure.

    Returns:
        The checks and the verdict: passed iff no check FAILed. A metric that is
        None is SKIPped with a note; the baseline check is SKIPped, saying why,
        unless dataset version and both model names match and are known.
    """
    bounds = dict(DEFAULT_FLOORS if floors is None else floors)
    margin = bounds.get(RECALL_MARGIN_KEY)
    margin = DEFAULT_RECALL_MARGIN if margin is None else margin
    values = metrics.to_wire()
    lineage = _lineage_dict(models)
    checks: list[GateCheck] = []
    for metric, direction in METRIC_DIRECTIONS.items():
        bound = bounds.get(metric)
        if metric == "errors" and bound is None:
            bound = 0
        if bound is not None:
            if values[metric] is None and metric in _CLAIM_METRICS and _silent_on_qa(metrics):
                checks.append(_silent_check(metric, float(bound), direction.op, metrics))
            else:
                checks.append(_compare(metric, values[metric], float(bound), direction.op))
        if metric == "retrievalRecall":
            checks.append(_baseline_recall_check(values[metric], margin, baseline, dataset_version, lineage, qa_ids))
    return GateResult(passed=all(c.outcome != "FAIL" for c in checks), checks=checks)


# --- CLI -------------------------------------------------------------------------------------


class _UsageError(Exception):
    pass


class _ParserExit(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _Parser(argparse.ArgumentParser):
    """An argument parser that returns to its caller instead of exiting the process.

    The sub-commands run inside ``groundeval``'s ``main`` (and in tests), which
    turn errors into exit code 2 themselves.
    """

    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(message)

    def exit(self, status: int = 0, message: str | None = None) -> None:  # type: ignore[override]
        if message:
            print(message, file=sys.stderr, end="")
        raise _ParserExit(status)


def _gate_parser() -> _Parser:
    parser = _Parser(prog="groundeval gate", description="Re-apply gate floors to a saved report")
    parser.add_argument("--report", required=True, help="Report JSON written by --eval-report")
    parser.add_argument("--baseline", help="Earlier report to compare retrieval recall with")
    parser.add_argument("--floors", help="Floors JSON (metric name -> bound); defaults when absent")
    return parser


def gate_main(argv: list[str]) -> int:
    """``groundeval gate --report R [--baseline B] [--floors F]``.

    Prints one line per check, then ``gate: PASS`` or ``gate: FAIL``.

    Returns:
        0 when the gate passes, 1 when it fails, 2 when an argument is missing or
        the report, baseline or floors file cannot be read or is invalid (one line
        on stderr).
    """
    from .report import ReportError, read_report  # report imports this module

    try:
        args = _gate_parser().parse_args(argv)
    except _ParserExit as exc:  # --help
        return exc.status
    except _UsageError as exc:
        print(f"groundeval gate: {exc}", file=sys.stderr)
        return 2
    try:
        report = read_report(args.report)
        baseline = read_report(args.baseline) if args.baseline else None
        floors = load_floors(args.floors) if args.floors else None
    except (ReportError, FloorsError) as exc:
        print(f"groundeval gate: {exc}", file=sys.stderr)
        return 2
    if report.interrupted:
        print(
            f"run                        interrupted          FAIL  the run stopped before every selected "
            f"item ran ({len(report.items)} items in the report): its gate verdict is not final"
        )
        print("gate: FAIL")
        return 1
    result = evaluate_gate(
        report.metrics,
        floors=floors,
        baseline=baseline,
        dataset_version=report.dataset_version,
        models=report.models,
        # The same rule as the plugin: the baseline's recall over the qa items this report ran.
        qa_ids={item.id for item in report.items if item.kind == "qa"} if report.items else None,
    )
    for check in result.checks:
        print(format_check(check))
    print(f"gate: {'PASS' if result.passed else 'FAIL'}")
    return 0 if result.passed else 1
