"""Recovering the report of a run killed before it finished (docs/gate.md): ``groundeval report --recover``.

A run streams its items into a spool beside the report path (``core.report.ReportWriter``),
with a context line (``CONTEXT_KEY``) saying what a recovery needs: the dataset, its
version and lineage, the start, the floors and the baseline the gate applies, the
confidence level and ``gateOn``, and every collected item. ``recover_report`` rebuilds the report from the spools of the latest
session: the items that never ran count as ``notRun`` errors, and the gate is the run's
(``core.finalize.finalize_run``), marked interrupted, so it fails.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ValidationError

from .confidence import GateOn, RecordedSettingError, recorded_confidence
from .cost import Prices, PricesError, check_prices
from .dataset import load_dataset
from .environment import environment_info
from .finalize import RunFlags, RunOutcomes, finalize_run
from .floors import FloorsError
from .gate import check_recorded_floors
from .kinds import KIND_NAMES, errored_outcome
from .lineage import UNKNOWN, UNKNOWN_MODELS, BaselineInfo
from .outcome import ItemOutcome, as_attempts
from .report import CONTEXT_KEY, ReportError, ReportWriter, validation_summary, write_session


def spools_beside(path: str | Path) -> list[Path]:
    """The item spools a killed run left beside report ``path`` (``.<name>.*.items.tmp``), oldest first."""
    target = Path(path)
    found = list(target.parent.glob(f".{target.name}.*.items.tmp"))
    return sorted(found, key=lambda p: p.stat().st_mtime)


class Recovered(NamedTuple):
    """What ``recover_report`` wrote."""

    path: Path
    """The report written."""
    ran: int
    """Items whose outcome the spools held."""
    not_run: int
    """Collected items that never ran, recovered as ``notRun`` errors."""


NOT_RUN_KILLED = "not run: the run was killed before this item ran (recovered by groundeval report --recover)"
"""The error of an item a killed run collected but never ran."""


def recover_report(path: str | Path) -> Recovered:
    """Rebuild the report of a run killed before it finished (SIGKILL) from its spools.

    Reads every spool of the latest session beside ``path`` (complete lines only: a
    line cut by the kill is dropped). Each collected item the spool's context lists but
    no outcome line holds never ran: it is recovered as a ``notRun`` error, counted as
    its kind counts an error (the dataset is read from the recorded manifest when it
    still loads). Metrics are computed from all of them and the gate applied with the
    floors and the baseline the run recorded in the spool, plus the ``notRun`` and
    interrupted checks, so the gate fails; the report is written at ``path`` marked
    ``interrupted``, recording those floors and that baseline (docs/gate.md). The spools
    are removed once the report is written.

    Returns:
        ``Recovered(path, items that ran, items that never ran)``.

    Raises:
        ReportError: no spool beside ``path``; a spool has no context, or its recorded
            items, floors or baseline are invalid (the message names the spool).
    """
    target = Path(path)
    spools = spools_beside(target)
    if not spools:
        raise ReportError(f"nothing to recover: no spool (.{target.name}.*.items.tmp) beside {target}")
    by_session: dict[str, list[tuple[Path, dict[str, Any], list[ItemOutcome]]]] = {}
    for spool in spools:
        context, items = _read_spool(spool)
        by_session.setdefault(str(context.get("session")), []).append((spool, context, items))
    latest = max(by_session.values(), key=lambda parts: max(p.stat().st_mtime for p, _, _ in parts))
    parts = []
    ran = not_run = 0
    environment = environment_info()
    for spool, context, items in latest:
        floors, baseline = _recorded_gate(spool, context)
        repeat = _recorded_repeat(spool, context)
        level, gate_on = _recorded_confidence(spool, context)
        counts = RunOutcomes()
        writer = ReportWriter(target)
        never_ran = _never_ran(spool, context, {outcome.id for outcome in items})
        for outcome in items + [as_attempts(outcome, repeat) for outcome in never_ran]:
            counts.add(outcome)
            writer.add_item(outcome)
        ran += counts.items - counts.not_run
        not_run += counts.not_run
        models = context.get("models") or dict(UNKNOWN_MODELS)
        version = context.get("datasetVersion") or UNKNOWN
        prices = _recorded_prices(spool, context)
        end = finalize_run(
            counts,
            floors=floors,
            baseline=baseline,
            dataset_version=version,
            models=models,
            flags=RunFlags(interrupted=True),
            confidence_level=level,
            gate_on=gate_on,
            prices=prices,
        )
        parts.append(
            (
                writer,
                dict(
                    dataset_version=version,
                    models=models,
                    started_at_ms=int(context.get("startedAtMs") or 0),
                    duration_ms=0,
                    metrics=end.metrics,
                    confidence=end.confidence,
                    confidence_level=level,
                    gate=end.gate,
                    environment=environment,
                    interrupted=True,
                    floors=floors,
                    baseline=end.baseline,
                    repeat=repeat,
                    prices=prices,
                ),
            )
        )
    write_session(target, parts)
    for spool, _, _ in latest:
        spool.unlink(missing_ok=True)
    return Recovered(target, ran, not_run)


def _recorded_prices(spool: Path, context: dict[str, Any]) -> Prices | None:
    """The prices a spool's context records (docs/gate.md, "Cost"), or None."""
    prices = context.get("prices")
    try:
        return check_prices(prices, f"the prices recorded in {spool}") if prices is not None else None
    except PricesError as exc:
        raise ReportError(f"{spool}: the run's prices are invalid: {exc}") from exc


def _recorded_gate(spool: Path, context: dict[str, Any]) -> tuple[dict[str, float] | None, BaselineInfo | None]:
    """The floors and the baseline a spool's context records (None for what it does not record)."""
    floors = context.get("floors")
    try:
        floors = check_recorded_floors(floors, f"recorded in {spool}") if floors is not None else None
    except FloorsError as exc:
        raise ReportError(f"{spool}: the run's floors are invalid: {exc}") from exc
    baseline = context.get("baseline")
    try:
        baseline = BaselineInfo.model_validate(baseline) if baseline is not None else None
    except ValidationError as exc:
        raise ReportError(f"{spool}: the run's baseline is invalid: {validation_summary(exc)}") from exc
    return floors, baseline


def _recorded_repeat(spool: Path, context: dict[str, Any]) -> int:
    """The attempts per item a spool's context records (``--eval-repeat``); 1 when it records none."""
    repeat = context.get("repeat", 1)
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ReportError(f"{spool}: the run's repeat must be a whole number >= 1, got {repeat!r}")
    return repeat


def _recorded_confidence(spool: Path, context: dict[str, Any]) -> tuple[float, GateOn]:
    """The confidence level and ``gateOn`` a spool's context records (``core.confidence.recorded_confidence``);
    the defaults for a spool written before they were recorded.

    Raises:
        ReportError: a recorded value is not a level in (0, 1) or not one of ``GATE_ON``.
    """
    try:
        return recorded_confidence(context)
    except RecordedSettingError as exc:
        if exc.key == "gateOn":
            raise ReportError(f"{spool}: the run's gateOn {exc.value!r} is {exc.problem}") from exc
        raise ReportError(f"{spool}: the run's confidenceLevel is invalid: {exc.problem}") from exc


def _never_ran(spool: Path, context: dict[str, Any], ran: set[str]) -> list[ItemOutcome]:
    """A ``notRun`` error for each item the context lists as collected and no outcome line holds."""
    collected = context.get("items") or {}
    if not isinstance(collected, dict):
        raise ReportError(f"{spool}: the run's collected items must be an object of item id -> kind")
    missing = [(item_id, kind) for item_id, kind in collected.items() if item_id not in ran]
    for item_id, kind in missing:
        if kind not in KIND_NAMES:
            raise ReportError(f"{spool}: collected item {item_id!r} has unknown kind {kind!r}")
    if not missing:
        return []
    items_by_id: Mapping[str, object] | None
    try:
        items_by_id = load_dataset(context["manifest"]).by_id
    except Exception:  # noqa: BLE001 - the dataset moved or changed: the items still count, as plain errors
        items_by_id = None
    return [errored_outcome(items_by_id, kind, item_id, NOT_RUN_KILLED, not_run=True) for item_id, kind in missing]


def _read_spool(spool: Path) -> tuple[dict[str, Any], list[ItemOutcome]]:
    context: dict[str, Any] | None = None
    items: list[ItemOutcome] = []
    with open(spool, encoding="utf-8") as handle:
        for line in handle:
            if not line.endswith("\n"):
                break  # the last line was cut by the kill
            try:
                obj = json.loads(line)
            except ValueError:
                break
            if isinstance(obj, dict) and CONTEXT_KEY in obj:
                context = obj[CONTEXT_KEY]
            else:
                try:
                    items.append(ItemOutcome.model_validate(obj))
                except ValidationError as exc:
                    raise ReportError(f"{spool}: an item does not match the outcome schema: {exc}") from exc
    if context is None:
        raise ReportError(f"{spool}: no run context in the spool; it cannot be recovered")
    return context, items
