"""The run report (docs/gate.md): a versioned JSON file, written atomically and streamed.

``ReportWriter`` keeps memory flat for any number of items: each item's JSON
goes to a temporary file beside the target as soon as it is added, and
``finish`` writes header, items and trailer into a second temporary file that
replaces the target in one ``os.replace``. Readers never see a partial report.

``read_report`` validates a saved report with the ``Report`` model and refuses
unknown schema versions; ``core.render.format_report`` prints one (``groundeval report R``).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from pydantic import ConfigDict, Field, ValidationError, model_serializer

from .confidence import DEFAULT_CONFIDENCE, ConfidenceInterval, first_difference
from .cost import Prices, PricesError, check_prices, price_metrics
from .environment import Environment, environment_info
from .finalize import EXTRA_CHECKS, Finalized, RunFlags, RunOutcomes, finalize_run
from .gate import RETRIEVAL_RECALL, FloorsError, GateResult, check_recorded_floors
from .kinds import on_change
from .lineage import BaselineInfo, MergeInfo, ModelLineage
from .metrics import Metrics, compute_metrics
from .metrics import refresh as refresh_metrics
from .outcome import ItemOutcome
from .wire import WireModel

CONTEXT_KEY = "groundevalContext"
"""Key of a spool line that carries the run's context rather than an item."""

_CONTEXT_PREFIX = '{"' + CONTEXT_KEY + '"'

SCHEMA_VERSION = 1
"""The report schema this plugin writes and reads."""

_MAX_ERRORS_SHOWN = 5


class ReportError(ValueError):
    """A report file is unreadable or invalid; the message names the file and what is wrong."""


class ShardInfo(WireModel):
    """Which part of the dataset a sharded run ran (docs/ci.md, "Sharding").

    The plugin records it for every run (an unsharded run is shard 1 of 1) so that
    ``groundeval merge`` can prove every dataset item was run exactly once.
    """

    index: int = Field(ge=1)
    """This shard's number K of ``--eval-shard K/N``, 1-based."""
    count: int = Field(ge=1)
    """N, the number of shards the dataset was split into."""
    assigned: int = Field(ge=0)
    """Dataset items whose id hashes to this shard (``core.sharding.shard_of``), selected or not."""
    dataset_items: int = Field(ge=0)
    """Items in the whole dataset, every shard together."""
    dataset_items_digest: str
    """``core.sharding.ids_digest`` of every item id of the dataset (xxh3_64 hex of the sorted ids)."""


class Report(WireModel):
    """A saved run (docs/gate.md), versioned by ``schema_version``.

    Every figure is validated: counts are whole numbers >= 0, rates finite and in
    range (``Metrics``), no number is NaN or infinite. ``parse_report`` also checks
    the metrics against the items (``check_metrics``).
    """

    model_config = ConfigDict(allow_inf_nan=False)

    schema_version: int = SCHEMA_VERSION
    """Report schema version; this plugin reads and writes 1."""
    dataset_version: str
    """The manifest's dataset version."""
    models: ModelLineage
    """Model lineage (generate, embed); a baseline is comparable only with the same lineage."""
    started_at_ms: int
    """Session start, Unix epoch milliseconds."""
    duration_ms: float = Field(ge=0)
    """Session wall time in milliseconds."""
    metrics: Metrics
    """The run's metrics."""
    confidence: dict[str, ConfidenceInterval | None] | None = None
    """Every rate metric's confidence interval at ``confidence_level`` (docs/statistics.md): wire name
    -> ``{low, high, method}``, null for a metric that is null. Computed from ``items`` wherever the
    metrics are (``core.confidence``); None in reports written before it was recorded."""
    confidence_level: float = Field(DEFAULT_CONFIDENCE, gt=0.0, lt=1.0)
    """The intervals' confidence level (``--eval-confidence``), in (0, 1)."""
    gate: GateResult
    """Every gate check and the verdict."""
    environment: Environment
    """Plugin version, Python, platform and git commit."""
    interrupted: bool = False
    """True when the run stopped before every selected item ran (Ctrl-C, ``-x``, a
    stopped session): its metrics cover only part of the selection and its gate
    verdict is not final (``groundeval gate`` fails such a report)."""
    floors: dict[str, float] | None = None
    """The complete bounds the gate applied (``core.gate.parse_floors`` output, margin included;
    a metric absent had no bound); None in reports written before it was recorded.
    ``groundeval gate --report R`` applies them unless given ``--floors``."""
    shard: ShardInfo | None = None
    """The part of the dataset this run covered; None in reports written before it was recorded."""
    merge: MergeInfo | None = None
    """Set on a report written by ``groundeval merge``."""
    baseline: BaselineInfo | None = None
    """The baseline the run compared retrieval recall with; None when it had none, and in
    reports written before it was recorded (``groundeval gate`` then has no baseline unless
    given ``--baseline``)."""
    repeat: int = Field(default=1, ge=1)
    """Attempts per item (``--eval-repeat N``, docs/gate.md "Repeats"): with N > 1 every item lists
    N ``attempts``. Written only when N > 1, so a run without repeats keeps the shape it always had."""
    prices: dict[str, dict[str, float]] | None = None
    """The prices the run's costs were computed with (``--eval-prices``, docs/gate.md "Cost"): model ->
    ``{"input", "output"}`` US dollars per 1M tokens; None without prices (every cost null), and in
    reports written before it was recorded. Readers recompute the costs with them."""
    extensions: dict[str, Any] | None = None
    """What extensions added to the report (docs/extending.md): extension name -> any JSON value,
    set by a ``pytest_groundeval_report`` hook. Kept by every reader, checked by none; written only
    when an extension added something, so other reports keep the shape they always had."""
    items: list[ItemOutcome] = Field(default_factory=list)
    """Per-item outcomes, in the order they finished."""

    @model_serializer(mode="wrap")
    def _omit_extensions_when_none(self, handler: Any) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.extensions is None:
            data.pop("extensions", None)
        if self.repeat == 1:
            data.pop("repeat", None)
        if self.confidence is None and self.confidence_level == DEFAULT_CONFIDENCE:
            # A report written before intervals were recorded keeps the shape it had.
            data.pop("confidence", None)
            data.pop("confidenceLevel", None)
        if self.prices is None:  # a run without prices keeps the shape reports always had
            data.pop("prices", None)
        return data


def _rebuild_report() -> None:
    """Rebuild ``Report``'s validator after the registry of kinds changed (``Metrics`` gained or lost fields)."""
    refresh_metrics()
    Report.model_rebuild(force=True)


on_change(_rebuild_report)


# --- reading ---------------------------------------------------------------------------------


def _loc(loc: tuple[int | str, ...]) -> str:
    """A validation error's location as a JSON path: ``items[3].evidenceFound``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "<root>"


def validation_summary(exc: ValidationError) -> str:
    """A pydantic error as one line: up to five problems with their JSON paths, and how many more."""
    problems = [f"{_loc(e['loc'])}: {e['msg']}" for e in exc.errors()[:_MAX_ERRORS_SHOWN]]
    more = exc.error_count() - len(problems)
    return "; ".join(problems) + (f"; and {more} more" if more > 0 else "")


def _same_figure(stored: Any, recomputed: Any) -> bool:
    if isinstance(stored, float) or isinstance(recomputed, float):
        if stored is None or recomputed is None:
            return False
        # Both come from the same exact computation; the tolerance only absorbs JSON's last digit.
        return math.isclose(stored, recomputed, rel_tol=1e-9, abs_tol=1e-12)
    return bool(stored == recomputed)


ADDED_METRICS = frozenset({"target_tokens", "citation_uncited_answers"})
"""Metrics (field names) added after reports were first written that older reports' items give a value: a
report without the key (e.g. a dataset's committed baseline) is not refused for it (``check_metrics``)."""


def recomputed_metrics(report: Report) -> Metrics:
    """The metrics of ``report``'s items (``core.metrics.compute_metrics``), priced with its recorded
    ``prices`` at its lineage's generate model (``core.cost.price_metrics``).

    Raises:
        ValueError: the items cannot be aggregated, or the recorded prices are invalid.
    """
    prices = check_prices(report.prices, "the report's prices") if report.prices is not None else None
    return price_metrics(compute_metrics(report.items), prices, report.models.generate)


def check_metrics(report: Report, source: str) -> None:
    """Refuse a report whose metrics are not the metrics of its items (docs/gate.md).

    A report lists every item it aggregated (``items``), so its metrics are recomputed
    from them with ``core.metrics.compute_metrics``, the function the run and
    ``groundeval merge`` use, and compared field by field: ``items`` first (a report
    whose items were removed, ``"items": []`` under metrics counting some, is refused
    on it), then every metric in ``Metrics`` order. Rates are compared to 1e-9
    (relative), counts and tables exactly. A report of no items must hold the metrics
    of no items.

    Raises:
        ReportError: The first field that disagrees, as ``metrics.<field>``, with the
            stored and the recomputed value; the message starts with ``source``.
    """
    try:
        recomputed = recomputed_metrics(report).to_wire()
    except PricesError as exc:
        raise ReportError(f"{source}: prices: {exc}") from exc
    except ValueError as exc:
        raise ReportError(f"{source}: the items cannot be aggregated: {exc}") from exc
    stored = report.metrics.to_wire()
    known = type(report.metrics).model_fields
    unrecorded = {
        known[name].alias or name for name in ADDED_METRICS - report.metrics.model_fields_set if name in known
    }
    # Every key of either: a metric left out of the stored dump while it is measured is a disagreement too.
    for key in ["items", *(k for k in {**stored, **recomputed} if k != "items" and k not in unrecorded)]:
        if not _same_figure(stored.get(key), recomputed.get(key)):
            raise ReportError(
                f"{source}: metrics.{key} is {json.dumps(stored.get(key))} but the report's "
                f"{len(report.items)} item(s) give {json.dumps(recomputed.get(key))}: the metrics are not "
                "this report's (edited by hand?); groundeval re-gates only metrics it can recompute (docs/gate.md)"
            )


def check_attempts(report: Report, source: str) -> None:
    """Refuse a report whose items do not each list ``repeat`` attempts (none without repeats).

    Raises:
        ReportError: naming ``items[i].attempts``, the item, its count and the report's ``repeat``.
    """
    for i, item in enumerate(report.items):
        if item.attempts is None and report.repeat == 1:
            continue
        count = "no" if item.attempts is None else len(item.attempts)
        if item.attempts is None or len(item.attempts) != report.repeat:
            expected = f"repeat is {report.repeat}" if report.repeat > 1 else "run has no repeat (repeat 1)"
            raise ReportError(
                f"{source}: items[{i}].attempts: item {item.id!r} lists {count} attempt(s) but the report's "
                f"{expected}: every item lists one attempt per repeat, or none without repeats (docs/gate.md, Repeats)"
            )


def parse_report(obj: Any, source: str) -> Report:
    """Validate a decoded report, and its metrics against its items (``check_metrics``).

    Raises:
        ReportError: Not an object, missing or unknown ``schemaVersion``, a field
            that does not match the schema (up to five, with their JSON paths: a
            negative count, a rate that is not a finite number in its range, ``true``
            where a number belongs), or metrics its items do not give.
    """
    if not isinstance(obj, dict):
        raise ReportError(f"{source}: a report must be a JSON object, got {type(obj).__name__}")
    version = obj.get("schemaVersion", obj.get("schema_version"))
    if version is None:
        raise ReportError(f"{source}: missing schemaVersion (is this a groundeval report?)")
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise ReportError(f"{source}: unknown schemaVersion {version!r}; this plugin reads {SCHEMA_VERSION}")
    try:
        report = Report.model_validate(obj)
    except ValidationError as exc:
        summary = validation_summary(exc)
        raise ReportError(f"{source}: does not match report schema v{SCHEMA_VERSION}: {summary}") from exc
    first: dict[str, int] = {}
    for i, item in enumerate(report.items):
        if item.id in first:
            raise ReportError(
                f"{source}: items[{i}].id {item.id!r} is also items[{first[item.id]}].id: a report lists "
                "each item once (docs/gate.md)"
            )
        first[item.id] = i
    check_attempts(report, source)
    check_metrics(report, source)
    refinalized = refinalize(report, source)
    check_confidence(report, source, refinalized.confidence)
    check_gate(report, source, refinalized)
    return report


def _check_key(check: Any) -> tuple[str, str, Any]:
    return (check.metric, check.outcome, check.bound)


def refinalize(report: Report, source: str) -> Finalized:
    """``core.finalize.finalize_run`` of a report's own items, metrics, recorded floors, baseline,
    confidence level and ``gateOn``: the gate and the confidence intervals the report should hold.

    Raises:
        ReportError: the recorded floors are invalid (naming ``floors``).
    """
    try:
        floors = check_recorded_floors(report.floors, f"{source}: floors") if report.floors is not None else None
    except FloorsError as exc:
        raise ReportError(f"{source}: floors: {exc}") from exc
    return finalize_run(
        RunOutcomes.counted(report.items),
        metrics=report.metrics,
        floors=floors,
        baseline=report.baseline,
        dataset_version=report.dataset_version,
        models=report.models,
        gated=report.gate.gated,
        flags=RunFlags(interrupted=report.interrupted, merge=report.merge),
        confidence_level=report.confidence_level,
        gate_on=report.gate.gate_on,
    )


def _expected_gate(report: Report, result: Finalized) -> tuple[bool, list[tuple[str, str, Any]], set[str]]:
    """The gate a report's own metrics, recorded floors and recorded baseline give (docs/gate.md); ``result`` is ``refinalize``'s.

    ``core.gate.evaluate_gate`` of the metrics with the recorded ``floors`` (the default
    floors when none are recorded), the recorded ``baseline`` and the recorded ``gated``,
    then the checks a run adds: ``notRun`` when an item never ran, ``run`` when the run
    was interrupted, ``items`` when a merged run misses dataset items.

    Returns:
        ``(passed, [(metric, outcome, bound) of evaluate_gate's checks], extra metrics required)``.
    """
    evaluated = result.evaluated
    required = {check.metric for check in result.gate.checks if check.metric in EXTRA_CHECKS}
    if report.interrupted:
        # An interrupted run's items that never ran are its interruption: ``notRun`` may be there, need not.
        required.discard("notRun")
    passed = all(check.outcome != "FAIL" for check in evaluated) and not required
    return passed, [_check_key(c) for c in evaluated], required


def _without_last(keys: list[Any], metric: str, name: Any) -> tuple[list[Any], Any]:
    """``keys`` without its last entry whose ``name(entry)`` is ``metric``, and that entry (None when none)."""
    for n in range(len(keys) - 1, -1, -1):
        if name(keys[n]) == metric:
            return keys[:n] + keys[n + 1 :], keys[n]
    return keys, None


def check_confidence(report: Report, source: str, recomputed: dict[str, ConfidenceInterval | None]) -> None:
    """Refuse a report whose ``confidence`` is not what its items give (docs/statistics.md).

    ``recomputed`` is ``refinalize(report).confidence``: the intervals of the report's items at
    its ``confidenceLevel``, by the seeded computation the run used. A report without
    ``confidence`` (written before it was recorded) is not checked.

    Raises:
        ReportError: the first metric whose stored interval differs (ends to 1e-9, method
            exactly), naming ``confidence.<metric>``; the message starts with ``source``.
    """
    if report.confidence is None:
        return
    found = first_difference(report.confidence, recomputed)
    if found is not None:
        name, got, want = found
        raise ReportError(
            f"{source}: confidence.{name} is {json.dumps(got)} but the report's {len(report.items)} item(s) "
            f"give {json.dumps(want)} at confidenceLevel {report.confidence_level}: the intervals are not this "
            "report's (edited by hand?); docs/statistics.md"
        )


def check_gate(report: Report, source: str, refinalized: Finalized) -> None:
    """Refuse a report whose stored gate is not what its own metrics, floors and baseline give.

    The gate is re-evaluated (``_expected_gate`` of ``refinalized``, which is
    ``refinalize(report, source)``) and compared with the stored one: each
    check's metric, outcome and bound in order, then ``gate.passed``. The checks a run
    adds after evaluation (``notRun``, ``run``, ``items``) must FAIL, and those the report
    calls for must be there: ``run`` for an interrupted report, ``items`` for a merged one
    missing items, ``notRun`` for a report listing items that never ran (docs/gate.md).
    A recorded baseline figure must be the one its evidence counts give.

    Raises:
        ReportError: naming ``gate.checks[i]``, ``gate.passed`` or ``baseline.retrievalRecall``
            with the stored and the expected value; the message starts with ``source``.
    """
    info = report.baseline
    if info is not None and info.evidence_expected and info.evidence_found is not None and not info.missing_items:
        figure = info.evidence_found / info.evidence_expected
        if info.retrieval_recall is None or not _same_figure(info.retrieval_recall, figure):
            raise ReportError(
                f"{source}: baseline.retrievalRecall is {json.dumps(info.retrieval_recall)} but the recorded "
                f"evidence counts give {figure!r} ({info.evidence_found}/{info.evidence_expected}): the baseline "
                "record was edited by hand? (docs/gate.md)"
            )
    passed, expected, required = _expected_gate(report, refinalized)
    stored = [(i, c) for i, c in enumerate(report.gate.checks) if c.metric not in EXTRA_CHECKS]
    unrecorded = None
    if report.baseline is None and sum(k[0] == RETRIEVAL_RECALL for k in expected):
        # A report written before the baseline was recorded: its baseline recall check (the last
        # retrievalRecall check) cannot be recomputed; it is taken as stored, and counts if it FAILed.
        expected, _ = _without_last(expected, RETRIEVAL_RECALL, lambda key: key[0])
        if sum(c.metric == RETRIEVAL_RECALL for _, c in stored) == sum(k[0] == RETRIEVAL_RECALL for k in expected) + 1:
            stored, unrecorded = _without_last(stored, RETRIEVAL_RECALL, lambda pair: pair[1].metric)

        passed = not required and all(k[1] != "FAIL" for k in expected)
        if unrecorded is not None and unrecorded[1].outcome == "FAIL":
            passed = False
    hint = "the gate is not the one this report's metrics, floors and baseline give (edited by hand?); docs/gate.md"
    names, stored_names = [key[0] for key in expected], [check.metric for _, check in stored]
    if names != stored_names:
        pairs = enumerate(zip(names, stored_names))
        n = next((n for n, (name, other) in pairs if name != other), min(len(names), len(stored_names)))
        where = f"gate.checks[{stored[n][0]}]" if n < len(stored) else "gate.checks"
        raise ReportError(
            f"{source}: {where}: the stored gate checks {', '.join(stored_names) or 'nothing'} but the report's "
            f"metrics with its recorded floors and baseline give checks on {', '.join(names) or 'nothing'}: {hint}"
        )
    for key, (i, check) in zip(expected, stored):
        if not (check.outcome == key[1] and _same_figure(check.bound, key[2])):
            raise ReportError(
                f"{source}: gate.checks[{i}] is {check.metric} {check.outcome} (bound {check.bound}) but "
                f"should be {key[0]} {key[1]} (bound {key[2]}): {hint}"
            )
    present = set()
    for i, check in enumerate(report.gate.checks):
        if check.metric in EXTRA_CHECKS:
            if check.outcome != "FAIL":
                raise ReportError(
                    f"{source}: gate.checks[{i}] ({check.metric}) is {check.outcome}, but it only ever FAILs: {hint}"
                )
            present.add(check.metric)
    for metric in EXTRA_CHECKS:
        if metric in required and metric not in present:
            raise ReportError(f"{source}: gate.checks lacks the FAIL check on {metric}: {hint}")
    passed = passed and not present
    if report.gate.passed != passed:
        raise ReportError(
            f"{source}: gate.passed is {json.dumps(report.gate.passed)} but should be {json.dumps(passed)}: {hint}"
        )


def read_report(path: str | Path) -> Report:
    """Read and validate a report file.

    Raises:
        ReportError: The file cannot be read, is not JSON (line and column given),
            or is not a valid report; the message starts with the path.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportError(f"{path}: cannot read report: {exc}") from exc
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}: not valid JSON: {exc}") from exc
    return parse_report(obj, str(path))


# --- writing ---------------------------------------------------------------------------------


def _temp_file(target: Path, suffix: str) -> IO[str]:
    # Same directory as the target so that os.replace is a rename on one filesystem.
    return tempfile.NamedTemporaryFile(
        mode="w", encoding="utf-8", dir=target.parent, prefix=f".{target.name}.", suffix=suffix, delete=False
    )


def _commit(tmp: IO[str], target: Path) -> None:
    tmp.flush()
    os.fsync(tmp.fileno())
    # mkstemp creates 0600 files; a report is an artifact others read (CI uploaders,
    # teammates), so give it the mode an ordinary open() would: 0666 less the umask.
    umask = os.umask(0)
    os.umask(umask)
    os.fchmod(tmp.fileno(), 0o666 & ~umask)
    tmp.close()
    os.replace(tmp.name, target)


def _remove(tmp: IO[str] | None) -> None:
    if tmp is None:
        return
    tmp.close()
    try:
        os.unlink(tmp.name)
    except FileNotFoundError:
        pass


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, allow_nan=False)


def write_report(path: str | Path, report: Report) -> Path:
    """Write a whole report atomically (temporary file in the same directory, then ``os.replace``).

    Returns:
        The target path.
    """
    target = Path(path)
    tmp = _temp_file(target, ".tmp")
    try:
        tmp.write(_dumps(report.to_wire()))
        _commit(tmp, target)
    except BaseException:
        _remove(tmp)
        raise
    return target


class ReportWriter:
    """Stream a report to ``path`` with memory flat in the number of items.

    Usage::

        with ReportWriter(path) as writer:
            for outcome in outcomes:
                writer.add_item(outcome)
            writer.finish(dataset_version=..., models=..., started_at_ms=...,
                          duration_ms=..., metrics=..., gate=...)

    Leaving the ``with`` block without ``finish`` (or calling ``abort``) removes
    the temporary files and leaves any existing file at ``path`` untouched.
    Temporary files are named ``.<report name>.*.tmp`` beside the target.
    """

    def __init__(self, path: str | Path) -> None:
        """Open the items spool next to ``path`` (whose directory must exist).

        Raises:
            OSError: The directory does not exist or is not writable.
        """
        self.path = Path(path)
        self.count = 0
        self._items: IO[str] | None = _temp_file(self.path, ".items.tmp")

    def set_context(self, context: dict[str, Any]) -> None:
        """Record what a recovery needs (dataset, version, lineage, start, floors) in the spool.

        Written as one ``{"groundevalContext": ...}`` line; the last one wins. If the run is
        killed (SIGKILL) before ``finish``, ``core.recover.recover_report`` rebuilds a report from the
        spool's context and items.
        """
        if self._items is None:
            raise RuntimeError(f"report writer for {self.path} is closed")
        self._items.write(_dumps({CONTEXT_KEY: context}) + "\n")
        self._items.flush()

    def add_item(self, outcome: ItemOutcome | dict[str, Any], *, wire: dict[str, Any] | None = None) -> None:
        """Append one item's outcome (a model or its wire dict) to the spool file.

        ``wire``: the outcome's ``to_wire()``, when the caller has it already (written as given).

        Raises:
            RuntimeError: The writer was already finished or aborted.
        """
        if self._items is None:
            raise RuntimeError(f"report writer for {self.path} is closed")
        if wire is None:
            model = outcome if isinstance(outcome, ItemOutcome) else ItemOutcome.model_validate(outcome)
            wire = model.to_wire()
        # One item per line: JSON strings escape newlines, so lines are items.
        self._items.write(_dumps(wire) + "\n")
        # Flushed per item so that nothing accumulates in the process (a few µs each).
        self._items.flush()
        self.count += 1

    def finish(
        self,
        *,
        dataset_version: str,
        models: ModelLineage | dict[str, str],
        started_at_ms: int,
        duration_ms: float,
        metrics: Metrics,
        gate: GateResult,
        environment: Environment | dict[str, Any] | None = None,
        interrupted: bool = False,
        floors: dict[str, float] | None = None,
        shard: ShardInfo | dict[str, Any] | None = None,
        baseline: BaselineInfo | dict[str, Any] | None = None,
        extensions: dict[str, Any] | None = None,
        repeat: int = 1,
        confidence: dict[str, Any] | None = None,
        confidence_level: float = DEFAULT_CONFIDENCE,
        prices: Prices | None = None,
    ) -> Path:
        """Write the report (header, every added item, trailer) and move it into place atomically.

        Args:
            dataset_version: The manifest's dataset version.
            models: ``{"generate": name, "embed": name}``.
            started_at_ms: Session start, Unix epoch ms.
            duration_ms: Session wall time, ms.
            metrics: The run's metrics.
            gate: The gate result.
            environment: Defaults to ``environment_info()``.
            interrupted: The run stopped before every selected item ran.
            floors: The complete bounds the gate applied (``Report.floors``).
            shard: The part of the dataset this run covered (``Report.shard``).
            baseline: The baseline recall check's input (``core.gate.summarize_baseline``).
            extensions: What extensions added (``Report.extensions``, docs/extending.md), or None.
            repeat: Attempts per item (``Report.repeat``).
            confidence: Every rate metric's interval (``Report.confidence``), or None.
            confidence_level: The intervals' level (``Report.confidenceLevel``).
            prices: The prices the costs were computed with (``Report.prices``), or None.

        Returns:
            The report path.

        Raises:
            RuntimeError: Already finished or aborted.
            pydantic.ValidationError: A header field is invalid (nothing is written).
        """
        if self._items is None:
            raise RuntimeError(f"report writer for {self.path} is closed")
        # model_validate, not Report(...): the header's parts may come as models or as their wire dicts.
        header = Report.model_validate(
            {
                "dataset_version": dataset_version,
                "models": models,
                "started_at_ms": started_at_ms,
                "duration_ms": duration_ms,
                "metrics": metrics,
                "gate": gate,
                "environment": environment if environment is not None else environment_info(),
                "interrupted": interrupted,
                "floors": floors,
                "shard": shard,
                "baseline": baseline,
                "extensions": extensions,
                "repeat": repeat,
                "confidence": confidence,
                "confidence_level": confidence_level,
                "prices": prices,
            }
        ).to_wire()
        del header["items"]
        out = _temp_file(self.path, ".tmp")
        try:
            self._write(out, header)
            out.write("\n")
            _commit(out, self.path)
        except BaseException:
            _remove(out)
            raise
        self.abort()
        return self.path

    def _write(self, out: IO[str], header: dict[str, Any]) -> None:
        assert self._items is not None
        self._items.flush()
        head = _dumps(header)
        out.write(head[:-1] + ', "items": [')
        with open(self._items.name, encoding="utf-8") as spool:
            first = True
            for line in spool:
                if line.startswith(_CONTEXT_PREFIX):
                    continue
                out.write(("\n" if first else ",\n") + line.rstrip("\n"))
                first = False
        out.write("\n]}")

    def items(self) -> Iterator[dict[str, Any]]:
        """The outcomes added so far, as wire dicts, read back from the spool in the order they were added.

        Raises:
            RuntimeError: The writer was already finished or aborted.
        """
        if self._items is None:
            raise RuntimeError(f"report writer for {self.path} is closed")
        self._items.flush()
        with open(self._items.name, encoding="utf-8") as spool:
            for line in spool:
                if not line.startswith(_CONTEXT_PREFIX):
                    yield json.loads(line)

    def header(self, **fields: Any) -> dict[str, Any]:
        """The report's header as wire JSON (``finish``'s arguments), without ``items``.

        Raises:
            pydantic.ValidationError: A field is invalid.
        """
        fields.setdefault("environment", environment_info())
        header = Report(**fields).to_wire()
        del header["items"]
        return header

    def abort(self) -> None:
        """Remove the spool file; the target path is left as it was. Safe to call twice."""
        _remove(self._items)
        self._items = None

    def __enter__(self) -> ReportWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.abort()


@dataclass
class FinishedReport:
    """One dataset's finished report as a ``pytest_groundeval_report`` hook sees it (docs/extending.md).

    Attributes:
        data: The report as it will be written, without ``items`` (wire JSON: ``datasetVersion``,
            ``metrics``, ``gate``, ...). Read it; changing it changes nothing.
        path: The file the report is written to (``--eval-report``), or None when none is.
        extensions: Fill it to add to the report: extension name -> JSON value (dicts, lists,
            strings, finite numbers, booleans, None). Written as the report's ``extensions``
            object when not empty; every reader keeps it and checks nothing in it.
    """

    data: dict[str, Any]
    path: Path | None = None
    extensions: dict[str, Any] = field(default_factory=dict)
    item_source: Callable[[], Iterator[dict[str, Any]]] | None = field(default=None, repr=False)
    """Reads the items back (``ReportWriter.items``, or the outcomes kept for the hooks); None gives none."""

    def items(self) -> Iterator[dict[str, Any]]:
        """The report's item outcomes (wire dicts), in the order they finished.

        Streamed from the report's spool when a report file is written; without one (``path``
        None) the plugin keeps the outcomes in memory for the hooks, and only then.
        """
        return self.item_source() if self.item_source is not None else iter(())


def write_session(path: str | Path, parts: list[tuple[ReportWriter, dict[str, Any]]]) -> Path:
    """Write the report of a session: one dataset's report, or several in one file.

    With one dataset the file is that dataset's report, exactly as ``ReportWriter.finish``
    writes it. With several (docs/gate.md: several datasets in one session) the file is
    ``{"schemaVersion": 1, "datasets": [report, ...]}``, one complete report per dataset,
    in the order the datasets first reported; ``read_reports`` reads either form.

    Args:
        path: The report path.
        parts: Per dataset, its writer (holding the items) and the keyword arguments of
            ``ReportWriter.finish``.

    Returns:
        The path. Every writer is closed (its spool removed) afterwards.
    """
    target = Path(path)
    if len(parts) == 1:
        writer, fields = parts[0]
        return writer.finish(**fields)
    out = _temp_file(target, ".tmp")
    try:
        out.write(f'{{"schemaVersion": {SCHEMA_VERSION:d}, "datasets": [')
        for i, (writer, fields) in enumerate(parts):
            out.write("\n" if i == 0 else ",\n")
            writer._write(out, writer.header(**fields))
        out.write("\n]}\n")
        _commit(out, target)
    except BaseException:
        _remove(out)
        raise
    finally:
        for writer, _ in parts:
            writer.abort()
    return target


def read_reports(path: str | Path) -> list[Report]:
    """Every dataset's report in a report file: one for a single-dataset file, else each of ``datasets``.

    Raises:
        ReportError: as ``read_report``, naming the file (and the dataset's index).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
        obj = json.loads(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportError(f"cannot read report {path}: {exc}") from exc
    except ValueError as exc:
        raise ReportError(f"{path} is not valid JSON: {exc}") from exc
    if isinstance(obj, dict) and "datasets" in obj and "datasetVersion" not in obj:
        datasets = obj.get("datasets")
        if obj.get("schemaVersion") != SCHEMA_VERSION or not isinstance(datasets, list) or not datasets:
            raise ReportError(f"{path}: a session report needs schemaVersion {SCHEMA_VERSION} and a list of datasets")
        return [parse_report(d, f"{path} datasets[{i}]") for i, d in enumerate(datasets)]
    return [parse_report(obj, str(path))]
