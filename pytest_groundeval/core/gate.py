"""The quality gate (docs/gate.md): floors and ceilings on metrics, and the baseline recall check.

The gate turns ``Metrics`` into ``GateCheck``s, each PASS, FAIL or SKIP with a
plain-language reason; it passes iff no check FAILs. Bounds come from a JSON
floors file (``--eval-floors``) merged over ``DEFAULT_FLOORS``. Retrieval recall
is compared with a baseline report only when the baseline measured the same
dataset version with the same model lineage (generate and embed models).

``groundeval gate --report R [--baseline B] [--floors F]`` re-applies the gate
to a saved report with no target (``gate_main``).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ConfigDict, model_serializer

from ..targets.protocol import UNKNOWN_MODEL
from .confidence import DEFAULT_CONFIDENCE, ConfidenceInterval, GateOn
from .floors import RECALL_MARGIN_KEY, _check_bound, _describe, _valid_names, check_floors
from .floors import FloorsError as FloorsError  # re-exported: the gate's error for bad floors
from .kinds import all_kinds, get, on_change
from .kinds.base import MetricDirection  # noqa: F401  (re-exported: the gate's vocabulary)
from .kinds.qa import RETRIEVAL_RECALL as RETRIEVAL_RECALL  # re-exported
from .lineage import BaselineInfo, MergeInfo, ModelLineage
from .metrics import METRIC_DIRECTIONS, LiveNameSet, Metrics, format_value, metric_specs
from .metrics import refresh as refresh_metrics
from .outcome import ItemOutcome
from .significance import DEFAULT_ALPHA, format_p, paired_ratio_p, significance_text, smallest_p
from .wire import WireModel

if TYPE_CHECKING:
    from .report import Report  # annotations only: a baseline report is read through its fields

Op = Literal[">=", "<="]
CheckOutcome = Literal["PASS", "FAIL", "SKIP"]

DEFAULT_RECALL_MARGIN = 0.02
"""Default baseline tolerance for ``retrievalRecall`` (docs/gate.md)."""

_default_floors: dict[str, float] = {}

DEFAULT_FLOORS: Mapping[str, float] = MappingProxyType(_default_floors)
"""Bounds applied when no floors file says otherwise: each metric spec's ``default_bound`` (docs/gate.md).

A live view, like every table of this block: it follows the registry of kinds (``_refresh``), so a
kind registered at run time (``core.kinds.register``) has its metrics' default bounds applied."""

_SILENT: dict[str, Any] = {}
"""Metrics whose None, with their items run, FAILs a bound (``MetricSpec.silent``)."""

_ARMED: dict[str, tuple[tuple[str, ...], float]] = {}
"""Metrics given a bound by a bound on another metric (``MetricSpec.armed_by``, ``armed_bound``): a judge
bound arms ``judgeErrors <= 0`` and ``unparseableRate <= 0.05``."""

_USELESS: dict[str, tuple[float, str]] = {}
"""Ceiling rates that FAIL at one value even with no bound set (``MetricSpec.useless_at``): ``unparseableRate`` 1.0."""

_NOT_MEASURED = "no items measured this metric (n/a)"

_KIND_OF_METRIC: dict[str, str] = {}
"""Metric wire name -> the item kind that measures it; metrics every kind shares are absent."""

NOT_QUALITY: AbstractSet[str] = LiveNameSet()
"""Checks that count what could not be measured (items that errored or never ran, unjudged
paragraphs, an interrupted run): none of them is a quality bound (docs/gate.md: nothing gated)."""


def _refresh() -> None:
    """Rebuild the gate's tables from the metric specs of the kinds registered now (``core.kinds.on_change``)."""
    refresh_metrics()  # first: the gate reads METRIC_DIRECTIONS too
    specs = metric_specs()
    _default_floors.clear()
    _default_floors.update({spec.wire: spec.default_bound for spec in specs if spec.default_bound is not None})
    _default_floors[RECALL_MARGIN_KEY] = DEFAULT_RECALL_MARGIN
    _SILENT.clear()
    _SILENT.update({spec.wire: spec.silent for spec in specs if spec.silent is not None})
    _ARMED.clear()
    _ARMED.update({spec.wire: (spec.armed_by, spec.armed_bound) for spec in specs if spec.armed_by})
    _USELESS.clear()
    _USELESS.update(
        {spec.wire: (spec.useless_at, spec.useless_reason) for spec in specs if spec.useless_at is not None}
    )
    _KIND_OF_METRIC.clear()
    _KIND_OF_METRIC.update({spec.wire: kind.name for kind in all_kinds() for spec in kind.metrics})
    NOT_QUALITY._replace({"errors", *_ARMED, "notRun", "run", "items"})  # type: ignore[attr-defined]


_refresh()
on_change(_refresh)

NOTHING_GATED = "qualityBounds"
"""The metric name of the check that fails a run whose gate compared no quality metric with a bound."""

NOT_GATED = "NOT GATED"
"""The verdict of a run measured with ``--eval-no-gate`` whose items all ran (docs/gate.md)."""

_HOW_TO_ARM = (
    'arm a floor in the dataset manifest\'s "floors" or a floors file (--eval-floors FILE, '
    "groundeval gate --floors FILE), or measure without gating with --eval-no-gate (docs/gate.md, nothing gated)"
)


class GateCheck(WireModel):
    """One metric compared with one bound."""

    model_config = ConfigDict(allow_inf_nan=False)

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
    gated_on: Literal["low", "high"] | None = None
    """Which end of the metric's confidence interval was compared with the bound, under
    ``--eval-gate-on=lower-bound`` (``low`` for a floor, ``high`` for a ceiling); None: the
    value itself. Written only when set (docs/gate.md)."""

    @model_serializer(mode="wrap")
    def _omit_gated_on_when_none(self, handler: Any) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.gated_on is None:
            data.pop("gatedOn", None)
        return data


class GateResult(WireModel):
    """Every check of a run and the verdict."""

    passed: bool
    """True iff no check FAILed (docs/gate.md)."""
    checks: list[GateCheck]
    """The checks, in ``METRIC_DIRECTIONS`` order."""
    gated: bool = True
    """False for a run measured with ``--eval-no-gate``: only the error counts were checked,
    and the verdict reads ``NOT GATED`` (``verdict``). Written only when false, so the
    report of a gated run keeps the shape it always had."""
    gate_on: GateOn = "point"
    """What the bounds were compared with (``--eval-gate-on``): ``point``, each metric's value;
    ``lower-bound``, its confidence interval's end on the failing side. Written only when
    ``lower-bound``."""

    @model_serializer(mode="wrap")
    def _omit_gated_when_true(self, handler: Any) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.gated:
            data.pop("gated", None)
        if self.gate_on == "point":
            data.pop("gateOn", None)
        return data


def verdict(result: GateResult | Mapping[str, Any]) -> str:
    """The verdict word of a gate result (or its wire dict): ``PASS``, ``FAIL``, or ``NOT GATED``.

    A run measured without gating (``gated`` False, docs/gate.md) reads ``NOT GATED``
    when its items all ran, and ``FAIL (not gated: <checks> failed)`` naming the checks
    that still failed it (``errors``, ``notRun``, a judge whose every reply was unparseable).
    """
    if isinstance(result, Mapping):
        passed, gated = bool(result.get("passed")), result.get("gated", True) is not False
        failed = [
            str(c.get("metric"))
            for c in result.get("checks", ())
            if isinstance(c, Mapping) and c.get("outcome") == "FAIL"
        ]
    else:
        passed, gated = result.passed, result.gated
        failed = [c.metric for c in result.checks if c.outcome == "FAIL"]
    if gated:
        return "PASS" if passed else "FAIL"
    return NOT_GATED if passed else f"FAIL ({NOT_GATED.lower()}: {', '.join(failed) or 'a check'} failed)"


# --- floors ---------------------------------------------------------------------------------


def merge_floors(*layers: Mapping[str, float | None] | None) -> dict[str, float]:
    """``DEFAULT_FLOORS`` with each layer merged over it in turn, key by key (docs/gate.md).

    A later layer wins for each key it names; ``None`` removes the bound. The
    plugin merges the manifest's ``floors`` and then the ``--eval-floors`` file.

    Args:
        layers: Validated layers (``check_floors``); None is skipped.

    Returns:
        The complete bounds: metric name -> bound, plus ``retrievalRecallMargin``.
    """
    merged = dict(DEFAULT_FLOORS)
    for layer in layers:
        for name, value in (layer or {}).items():
            if value is None:
                merged.pop(name, None)
            else:
                merged[name] = value
    return merged


def parse_floors(obj: Any, source: str = "floors") -> dict[str, float]:
    """Validate a floors mapping and merge it over ``DEFAULT_FLOORS``.

    The mapping is metric wire name -> number. Rates take a number in [0, 1];
    ceilings (latency ms, tokens) a number >= 0; ``errors``, a count, a whole
    number >= 0 (``2`` or ``2.0``, not ``0.5``). ``null`` disables a
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
            outside [0, 1], a negative ceiling or a count that is not whole; or
            ``errors`` is null.
    """
    return merge_floors(check_floors(obj, source))


def check_recorded_floors(obj: Any, source: str) -> dict[str, float]:
    """Validate the complete bounds a report recorded (``Report.floors``), without merging defaults.

    A recorded mapping is already complete: a metric absent from it had no bound in
    that run (a floors file disabled it with ``null``), so defaults are not added back.

    Raises:
        FloorsError: Not an object, an unknown name, or an invalid bound (as ``parse_floors``).
    """
    if not isinstance(obj, Mapping):
        raise FloorsError(f"recorded floors must be an object, got {_describe(obj)} ({source})")
    checked = {}
    for name, value in obj.items():
        if name not in METRIC_DIRECTIONS and name != RECALL_MARGIN_KEY:
            raise FloorsError(
                f"'{name}' is not a metric with a floor or ceiling; valid names: {_valid_names()} ({source})"
            )
        checked[name] = _check_bound(name, value, source)
    return checked


def _refuse_duplicate_keys(path: str | Path) -> Any:
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        for key, value in pairs:
            if key in obj:
                raise FloorsError(
                    f"floors file {path}: duplicate key '{key}' (given {_describe(obj[key])} and then "
                    f"{_describe(value)}); each metric may appear once"
                )
            obj[key] = value
        return obj

    return hook


def read_floors_file(path: str | Path) -> dict[str, float | None]:
    """Read and validate a floors JSON file as one layer (``check_floors``), without merging defaults.

    Raises:
        FloorsError: The file cannot be read, is not JSON, names a key twice (the
            message names the key: JSON would silently keep the last value), or
            holds an invalid bound.
    """
    source = f"from {Path(path).name}"
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FloorsError(f"cannot read floors file {path}: {exc}") from exc
    try:
        obj = json.loads(text, object_pairs_hook=_refuse_duplicate_keys(path))
    except json.JSONDecodeError as exc:
        raise FloorsError(f"floors file {path} is not valid JSON: {exc}") from exc
    return check_floors(obj, source)


def load_floors(path: str | Path) -> dict[str, float]:
    """Read a floors JSON file and merge it over ``DEFAULT_FLOORS`` (see ``parse_floors``).

    Raises:
        FloorsError: as ``read_floors_file``.
    """
    return merge_floors(read_floors_file(path))


def not_run_check(not_run: int, items: int) -> GateCheck:
    """The check that fails a run in which collected items never ran (they count as errors)."""
    return GateCheck(
        metric="notRun",
        value=float(not_run),
        bound=0.0,
        op="<=",
        outcome="FAIL",
        reason=f"{not_run} of {items} collected item{'s' if items != 1 else ''} never ran (counted as errors)",
    )


def interrupted_check(items_ran: int) -> GateCheck:
    """The check that fails a run which stopped before every selected item ran."""
    return GateCheck(
        metric="run",
        value=None,
        bound=None,
        op="<=",
        outcome="FAIL",
        reason=f"interrupted after {items_ran} {'item' if items_ran == 1 else 'items'}: the metrics cover only part "
        "of the selection",
    )


_MISSING_IDS_SHOWN = 10


def missing_items_check(merge: MergeInfo) -> GateCheck:
    """The check that fails a merged run in which some dataset items were never run (docs/ci.md).

    Args:
        merge: The merged report's ``merge`` block, with ``missing_items > 0``.

    Returns:
        A FAIL check on ``items`` whose reason names the missing shards and, when
        known, up to ten missing item ids.
    """
    parts = []
    if merge.missing_shards:
        parts.append(f"shard(s) {', '.join(merge.missing_shards)} not given")
    ids = merge.missing_item_ids or []
    if ids:
        shown = ", ".join(ids[:_MISSING_IDS_SHOWN])
        more = f" and {len(ids) - _MISSING_IDS_SHOWN} more" if len(ids) > _MISSING_IDS_SHOWN else ""
        parts.append(f"missing ids: {shown}{more}")
    elif merge.missing_items:
        parts.append("ids not known (give groundeval merge the dataset with --dataset to list them)")
    return GateCheck(
        metric="items",
        value=float(merge.missing_items),
        bound=0.0,
        op="<=",
        outcome="FAIL",
        reason=f"{merge.missing_items} of {merge.dataset_items} dataset items missing from the merged shards; "
        + "; ".join(parts),
    )


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
    """Whether two runs used the same generate and embed models, both known (docs/gate.md).

    An ``unknown`` (or missing) model name matches nothing, not even another
    ``unknown``: a baseline is only comparable when we know it is.
    """
    a, b = _lineage_dict(a_models), _lineage_dict(b_models)
    if not (_lineage_known(a) and _lineage_known(b)):
        return False
    return all(a[role] == b[role] for role in ("generate", "embed"))


def _compare(
    metric: str,
    value: float | None,
    bound: float,
    op: Op,
    note: str = "",
    interval: ConfidenceInterval | None = None,
    level: float = DEFAULT_CONFIDENCE,
) -> GateCheck:
    """``value`` against ``bound``; with an ``interval`` (``--eval-gate-on=lower-bound``), its end
    on the failing side against the bound instead: the low end of a floor, the high end of a ceiling."""
    if value is None:
        return GateCheck(metric=metric, value=None, bound=bound, op=op, outcome="SKIP", reason=_NOT_MEASURED)
    end: Literal["low", "high"] | None = None
    figure = value
    if interval is not None:
        end = "low" if op == ">=" else "high"
        figure = interval.low if end == "low" else interval.high
    ok = figure >= bound if op == ">=" else figure <= bound
    shown_op = op if ok else ("<" if op == ">=" else ">")
    reason = f"{format_value(metric, figure)} {shown_op} {format_value(metric, bound)}{note}"
    if interval is not None:
        reason = (
            f"{end} end {reason} (value {format_value(metric, value)}, {level * 100:g}% interval "
            f"[{format_value(metric, interval.low)}, {format_value(metric, interval.high)}], {interval.method})"
        )
    return GateCheck(
        metric=metric, value=value, bound=bound, op=op, outcome="PASS" if ok else "FAIL", reason=reason, gated_on=end
    )


def _skip(metric: str, value: float | None, reason: str) -> GateCheck:
    return GateCheck(metric=metric, value=value, bound=None, op=">=", outcome="SKIP", reason=reason)


def recall_figures(outcome: ItemOutcome) -> tuple[int, int]:
    """``(evidence expected, evidence found)`` of one outcome as retrieval recall counts them: an errored
    item's expected evidence counts, none of it found (docs/gate.md)."""
    return outcome.evidence_expected, 0 if outcome.errored else outcome.evidence_found


def summarize_baseline(
    baseline: Report,
    qa_ids: Collection[str] | None,
    path: str | None = None,
    run_figures: Mapping[str, tuple[int, int]] | None = None,
    alpha: float = DEFAULT_ALPHA,
) -> BaselineInfo:
    """What a run takes from its baseline report, as the report records it (``Report.baseline``).

    The figure is the baseline's retrieval recall over the qa items that ran in this
    run: a slice (``-k``, a single node id) is compared with the baseline's figure for
    the same items, not with its whole-dataset figure. Without ids, or with a baseline
    that lists no items, the baseline's overall metric is used (``qa_items`` None).
    A qa item that ran but is not in the baseline is counted in ``missing_items``,
    and the figure is then None (see ``recorded_recall``). docs/gate.md.

    With this run's figures, the items are paired on ids and the recall change is tested
    (``core.significance.paired_ratio_p``, docs/statistics.md): the p-value, the paired
    items and ``alpha`` are recorded, and the check FAILs only on a drop beyond the margin
    that is significant at ``alpha``.

    Args:
        baseline: The baseline report.
        qa_ids: Ids of the qa items that ran in this run; None for the overall figure.
        path: The baseline file as the run named it, for people reading the report.
        run_figures: This run's ``recall_figures`` by item id, for the items of ``qa_ids``;
            None: no paired test (the fixed margin alone).
        alpha: The significance level recorded with the p-value.
    """
    overall = baseline.metrics.retrieval_recall
    if qa_ids is None or not baseline.items:
        return BaselineInfo(
            path=path,
            dataset_version=baseline.dataset_version,
            models=baseline.models,
            retrieval_recall=overall if isinstance(overall, float) else None,
        )
    wanted = set(qa_ids)
    expected = found = every = 0
    pairs: list[tuple[int, int, int, int]] = []
    for item in baseline.items:
        if not get(item.kind).uses_baseline:
            continue
        every += 1
        if item.id in wanted:
            wanted.discard(item.id)
            expected += item.evidence_expected
            found += item.evidence_found
            if run_figures is not None and item.id in run_figures:
                base_expected, base_found = recall_figures(item)
                run_expected, run_found = run_figures[item.id]
                pairs.append((base_found, base_expected, run_found, run_expected))
    tested = run_figures is not None and not wanted and len(pairs) == len(set(qa_ids))
    return BaselineInfo(
        path=path,
        dataset_version=baseline.dataset_version,
        models=baseline.models,
        retrieval_recall=found / expected if expected and not wanted else None,
        qa_items=len(set(qa_ids)),
        baseline_qa_items=every,
        missing_items=len(wanted),
        evidence_expected=expected,
        evidence_found=found,
        recall_p_value=paired_ratio_p(pairs)[0] if tested else None,
        paired_items=sum(1 for p in pairs if p[1] or p[3]) if tested else None,
        alpha=alpha if tested else None,
    )


def recorded_recall(info: BaselineInfo) -> tuple[float | None, str]:
    """The baseline figure the recall check compares with, and what it covers (``"baseline"`` or
    ``"baseline over the N qa items that ran"``); the figure is None when the baseline measured none.

    Raises:
        LookupError: some qa item that ran is not in the baseline (message says how many).
    """
    if info.qa_items is None:
        return info.retrieval_recall, "baseline"
    if info.missing_items:
        raise LookupError(f"the baseline lacks {info.missing_items} of the {info.qa_items} qa item(s) that ran")
    ran = f"{info.qa_items} qa item{'s' if info.qa_items != 1 else ''}"
    scope = "baseline" if info.qa_items == info.baseline_qa_items else f"baseline over the {ran} that ran"
    return info.retrieval_recall, scope


def baseline_version_problem(baseline_version: str, dataset_version: str, path: str | Path | None) -> str | None:
    """Why an explicitly given baseline cannot be compared with this dataset, or None (docs/gate.md).

    A baseline of another dataset version measured other items: given explicitly
    (``--eval-baseline``, ``groundeval gate --baseline``) it is a usage error, never a SKIP.

    Args:
        baseline_version: The baseline report's ``datasetVersion``.
        dataset_version: This run's dataset version.
        path: The baseline file as the user named it, for the message.

    Returns:
        The message (naming both versions and the file), or None when the versions match.
    """
    if baseline_version == dataset_version:
        return None
    named = f"baseline {path}" if path else "the baseline"
    return (
        f"{named} is a report of dataset {baseline_version!r}, but this run is dataset "
        f"{dataset_version!r}: a baseline is compared only with a run of the same dataset version "
        "(docs/gate.md); give a baseline of this version, or leave the option out"
    )


def _absolute_recall_note(absolute: float | None) -> str:
    if absolute is not None:
        return f"; the absolute retrievalRecall floor {absolute:.4f} applies"
    return "; no absolute retrievalRecall floor is set, so recall is not gated (set one in floors, docs/gate.md)"


def _baseline_recall_check(
    value: float | None,
    margin: float,
    baseline: BaselineInfo | None,
    dataset_version: str,
    models: Mapping[str, str],
    absolute: float | None = None,
) -> GateCheck:
    metric = RETRIEVAL_RECALL
    if value is None:
        return _skip(metric, value, _NOT_MEASURED)
    if baseline is None:
        return _skip(metric, value, "no baseline given")
    if baseline.dataset_version != dataset_version:
        reason = f"baseline is for dataset {baseline.dataset_version}, this run is {dataset_version}"
        return _skip(metric, value, reason)
    if not _lineage_known(models):
        return _skip(
            metric,
            value,
            f"model lineage unknown matches no baseline (this run: {describe_lineage(models)})"
            + _absolute_recall_note(absolute),
        )
    if not same_lineage(baseline.models, models):
        return _skip(
            metric,
            value,
            f"baseline model lineage {describe_lineage(baseline.models)} differs from {describe_lineage(models)}: "
            "a baseline arms recall only within its lineage" + _absolute_recall_note(absolute),
        )
    try:
        reference, scope = recorded_recall(baseline)
    except LookupError as exc:
        return _skip(metric, value, str(exc))
    if reference is None:
        return _skip(metric, value, "the baseline measured no retrievalRecall (n/a)")
    note = f" ({scope} {reference:.4f} - margin {margin:.4f})"
    # Rounded so that float noise (0.93 - 0.02 = 0.9100000000000001) cannot fail an equal recall.
    check = _compare(metric, value, max(round(reference - margin, 12), 0.0), ">=", note)
    return _judged_by_paired_test(check, baseline)


def _judged_by_paired_test(check: GateCheck, baseline: BaselineInfo) -> GateCheck:
    """The recall check with the paired test's word (docs/statistics.md): a drop beyond the margin FAILs
    only when significant at ``alpha``; the fixed margin alone when there is no test, or too few items.

    A recall within the margin PASSes as before, its reason unchanged (the p-value is in the record).
    """
    if check.outcome != "FAIL":
        return check
    p, alpha, paired = baseline.recall_p_value, baseline.alpha, baseline.paired_items
    if p is None or alpha is None or paired is None:
        why = "the baseline lists no items" if baseline.qa_items is None else "the baseline's items were not at hand"
        return check.model_copy(update={"reason": f"{check.reason}; fixed margin, no paired test ({why})"})
    over = f"{paired} paired qa item{'s' if paired != 1 else ''}"
    if smallest_p(paired) >= alpha:
        reason = (
            f"{check.reason}; {significance_text(p, alpha)} over {over}; fixed margin: {over} cannot reach "
            f"alpha {alpha:g} (the smallest p they can give is {format_p(smallest_p(paired))})"
        )
        return check.model_copy(update={"reason": reason})
    reason = f"{check.reason}; {significance_text(p, alpha)} over {over} at alpha {alpha:g}"
    if p >= alpha:
        return check.model_copy(update={"outcome": "PASS", "reason": f"{reason}: a drop within noise, not failed"})
    return check.model_copy(update={"reason": reason})


def _silent_check(metric: str, bound: float, op: Op, reason: str) -> GateCheck:
    """A metric left unmeasured although its items ran: a FAIL, not a SKIP (``MetricSpec.silent``).

    docs/gate.md skips a floor whose metric has no items; here the items ran, and a
    target that asserts nothing must not pass as green.
    """
    return GateCheck(metric=metric, value=None, bound=bound, op=op, outcome="FAIL", reason=reason)


def _useless_check(metric: str, value: float, op: Op, reason: str) -> GateCheck:
    """A FAIL with no bound: the metric's value says the run measured nothing (``MetricSpec.useless_at``)."""
    return GateCheck(
        metric=metric, value=value, bound=None, op=op, outcome="FAIL", reason=f"{format_value(metric, value)}: {reason}"
    )


def nothing_gated_check(metrics: Metrics, skipped: Sequence[str] = ()) -> GateCheck:
    """The check that fails a run whose gate compared no quality metric with a bound (docs/gate.md).

    Its reason names the metrics the run measured (those a bound could be set on)
    and how to arm a floor, or to measure without gating. When every item errored, no
    floor would change that: the reason says so instead (the ``errors`` check fails the run).
    When bounds were set but every one was skipped, their metrics unmeasured (``skipped``,
    wire names), the reason names them rather than asking for a floor the run already has.
    """
    if metrics.items and metrics.errors >= metrics.items:
        reason = (
            f"nothing gated: every item errored ({metrics.errors} of {metrics.items}), so no quality metric "
            "was measured; the items' errors say why (a target that did not answer, or a reply that could not be "
            "read), not a missing floor"
        )
    elif skipped:
        reason = (
            f"nothing gated: the bound(s) on {', '.join(skipped)} were skipped, as no item gave "
            f"{'it' if len(skipped) == 1 else 'them'} a value (n/a); the failed items' details say why"
        )
    else:
        values = metrics.to_wire()
        measured = [
            f"{name} {format_value(name, values[name])}"
            for name in METRIC_DIRECTIONS
            if name not in NOT_QUALITY and values.get(name) is not None
        ]
        listed = ", ".join(measured) if measured else "none"
        reason = (
            f"nothing gated: no quality metric was compared with a bound (only error counts); "
            f"measured: {listed}; {_HOW_TO_ARM}"
        )
    return GateCheck(metric=NOTHING_GATED, value=0.0, bound=1.0, op=">=", outcome="FAIL", reason=reason)


def _measurable(metric: str, metrics: Metrics, value: Any) -> bool:
    """Whether the run's kinds can measure ``metric``: a kind metric is left out of the table
    when no item of its kind ran (and so it has no value)."""
    kind = _KIND_OF_METRIC.get(metric)
    return kind is None or value is not None or bool(metrics.items_by_kind.get(kind, 0))


def evaluate_gate(
    metrics: Metrics,
    *,
    floors: Mapping[str, float | None] | None = None,
    baseline: Report | BaselineInfo | None = None,
    dataset_version: str,
    models: Mapping[str, Any] | ModelLineage,
    qa_ids: Collection[str] | None = None,
    gated: bool = True,
    run_figures: Mapping[str, tuple[int, int]] | None = None,
    alpha: float = DEFAULT_ALPHA,
    confidence: Mapping[str, ConfidenceInterval | None] | None = None,
    gate_on: GateOn = "point",
    confidence_level: float = DEFAULT_CONFIDENCE,
) -> GateResult:
    """Apply floors, ceilings and the baseline recall check to a run's metrics (docs/gate.md).

    Args:
        metrics: The run's metrics.
        floors: The complete bounds (as returned by ``parse_floors``/``load_floors``);
            None means ``DEFAULT_FLOORS``. A metric absent (or None) here has no
            bound, except ``errors``, which is always checked (ceiling 0 unless set),
            and a metric armed by another metric's bound (``MetricSpec.armed_by``:
            ``judgeErrors`` and ``scorerErrors``, ceiling 0, and ``unparseableRate``,
            ceiling 0.05, once a judge or coverage bound is set and the metric was
            measured). ``unparseableRate`` at 1.0 with no bound of its own FAILs
            whatever the floors say (``MetricSpec.useless_at``).
        baseline: A previous report to compare retrieval recall with, or what a run
            recorded of its baseline (``summarize_baseline``: ``groundeval gate``
            re-applies a saved run's baseline from that record), if any.
        dataset_version: This run's dataset version.
        models: This run's model lineage: ``{"generate": name, "embed": name}``.
        qa_ids: Ids of the qa items that ran; the baseline's recall is then taken over
            the same items (see ``summarize_baseline``). None: the baseline's overall
            figure. Ignored when ``baseline`` is already a record.
        gated: False measures without gating (``--eval-no-gate``): only the error
            counts (``NOT_QUALITY``) are checked, no quality bound and no baseline.
        run_figures: This run's ``recall_figures`` by qa item id: the baseline report's
            items are paired with them and a recall drop beyond the margin FAILs only when
            significant at ``alpha`` (docs/statistics.md). Ignored when ``baseline`` is a record
            (which carries its own p-value).
        alpha: The significance level of that test (``--eval-alpha``).
        confidence: Each rate metric's interval (``core.confidence``), used under ``lower-bound``.
        gate_on: ``"point"`` compares each bound with the metric's value; ``"lower-bound"``
            compares a floor with its interval's low end and a ceiling with its high end, for
            the metrics that have an interval (the others, and the baseline recall check, keep
            the value; docs/gate.md).
        confidence_level: The intervals' level, for the checks' reasons.

    Returns:
        The checks and the verdict: passed iff no check FAILed. A metric that is
        None is SKIPped with a note, or left out when no item of the kind that
        measures it ran; the baseline check is SKIPped, saying why, unless dataset
        version and both model names match and are known. A gated result in which
        no quality check was compared (every one SKIPped or none armed) gets the
        FAIL check ``nothing_gated_check`` (docs/gate.md: nothing gated).
    """
    if baseline is not None and not isinstance(baseline, BaselineInfo):
        baseline = summarize_baseline(baseline, qa_ids, run_figures=run_figures, alpha=alpha)
    bounds = dict(DEFAULT_FLOORS if floors is None else floors)
    margin = bounds.get(RECALL_MARGIN_KEY)
    margin = DEFAULT_RECALL_MARGIN if margin is None else margin
    # Metrics left out of the dump while None (``MetricSpec.only_when_measured``) read as None.
    values = {**dict.fromkeys(METRIC_DIRECTIONS), **metrics.to_wire()}
    lineage = _lineage_dict(models)
    checks: list[GateCheck] = []
    for metric, direction in METRIC_DIRECTIONS.items():
        if not _measurable(metric, metrics, values[metric]) or (not gated and metric not in NOT_QUALITY):
            continue
        bound = bounds.get(metric)
        note = ""
        if metric == "errors" and bound is None:
            bound = 0
        if bound is None and values[metric] is not None and metric in _ARMED:
            # A judge bound is only as good as the judge's answers: unjudged and unparseable paragraphs fail it.
            armed_by, armed_bound = _ARMED[metric]
            arming = [name for name in armed_by if gated and bounds.get(name) is not None]
            if arming:
                bound = armed_bound
                note = f" (armed by the {', '.join(arming)} bound{'s' if len(arming) > 1 else ''})"
        useless = _USELESS.get(metric)
        if bound is None and useless is not None and values[metric] is not None and values[metric] >= useless[0]:
            # Every paragraph unparseable: the judge measured nothing, bound or no bound.
            checks.append(_useless_check(metric, values[metric], direction.op, useless[1]))
        elif bound is not None:
            silent = _SILENT[metric](metrics) if values[metric] is None and metric in _SILENT else None
            if silent is not None:
                checks.append(_silent_check(metric, float(bound), direction.op, silent))
            else:
                interval = (confidence or {}).get(metric) if gate_on == "lower-bound" else None
                checks.append(
                    _compare(metric, values[metric], float(bound), direction.op, note, interval, confidence_level)
                )
        if metric == RETRIEVAL_RECALL:
            checks.append(
                _baseline_recall_check(values[metric], margin, baseline, dataset_version, lineage, bounds.get(metric))
            )
    if gated and not any(c.metric not in NOT_QUALITY and c.outcome != "SKIP" for c in checks):
        skipped = [c.metric for c in checks if c.metric not in NOT_QUALITY and c.outcome == "SKIP"]
        checks.append(nothing_gated_check(metrics, skipped))
    return GateResult(passed=all(c.outcome != "FAIL" for c in checks), checks=checks, gated=gated, gate_on=gate_on)
