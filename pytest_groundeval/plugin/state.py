"""The controller's typed state: one ``DatasetRun`` per dataset (manifest) of the session, and how its inputs load.

A run's outcomes accumulate in ``outcomes`` (``core.finalize.RunOutcomes``) and, when a
report is asked for, stream to ``writer`` (``core.report.ReportWriter``); at the end of
the session ``core.finalize.finalize_run`` fills ``metrics``, ``gate`` and
``baseline_record``. The floors file, the baselines and the manifest's own floors are
read here, each failure a ``pytest.UsageError`` naming the file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ..core.confidence import ConfidenceInterval, IntervalAccumulator, rate_specs
from ..core.dataset import Dataset, load_dataset
from ..core.finalize import RunOutcomes
from ..core.floors import FloorsError, check_floors
from ..core.gate import GateResult, read_floors_file
from ..core.lineage import UNKNOWN, UNKNOWN_MODELS, BaselineInfo
from ..core.metrics import Metrics
from ..core.outcome import ItemOutcome
from ..core.report import Report, ReportError, ReportWriter, read_report
from ..outputs.spool import ItemSpool

BASELINE_NAME = "baseline.json"
"""A dataset's own baseline report, used when ``--eval-baseline`` is not given."""


_UNREAD = object()


@dataclass
class DatasetRun:
    """Everything the controller keeps for one dataset (one manifest) of the session."""

    key: str
    """The manifest's part of the node ids, e.g. ``datasets/v1/manifest.json``."""
    manifest: Path
    """The manifest's path."""
    outcomes: RunOutcomes = field(default_factory=RunOutcomes)
    """The outcomes so far: the metrics' counters, items never run, the baseline kinds' ids."""
    writer: ReportWriter | None = None
    """The report's spool (``--eval-report``), opened once the run's items are known."""
    version: str | None = None
    """The dataset version the first item reported."""
    models: dict[str, str] | None = None
    """The model lineage the first item reported."""
    lineage_conflict: str | None = None
    """Set when items report different versions or lineages (a warning in the summary)."""
    seen: set[str] = field(default_factory=set)
    """Ids of the items that reported an outcome (each counted once)."""
    failed: int = 0
    """Items that ran and failed their own check."""
    errored: int = 0
    """Items that errored, never-run ones included."""
    not_run: int = 0
    """Items that never ran (``notRun`` errors)."""
    first_error: str | None = None
    """The error of the first item that could not be run, for the summary."""
    first_not_run: str | None = None
    """Why the first item that never ran did not (``not run: …``), for the summary."""
    error_parts: IntervalAccumulator = field(default_factory=IntervalAccumulator, repr=False)
    """The items that could not be run, folded as the intervals fold an item: which rates keep them (``misses``)."""
    expected: dict[str, str] = field(default_factory=dict)
    """Item id -> kind of every item collected for this run (after deselection)."""
    baseline_path: Path | None = None
    """The baseline file the gate compared with, when there is one."""
    baseline: Report | None = None
    """The baseline report read from ``baseline_path``."""
    baseline_record: BaselineInfo | None = None
    """The baseline as the gate used it (``core.gate.summarize_baseline``), recorded in the report."""
    metrics: Metrics | None = None
    """The run's metrics, once the session finished."""
    gate: GateResult | None = None
    """The run's gate, once the session finished."""
    confidence: dict[str, ConfidenceInterval | None] | None = None
    """Every rate metric's confidence interval, once the session finished (docs/statistics.md)."""
    kept: ItemSpool = field(default_factory=ItemSpool, repr=False)
    """Item outcomes (wire dicts) kept for the HTML page or the Markdown table, when they are written;
    on disk, not in memory (issue 24, memory per item)."""
    shard: dict[str, Any] | None = None
    """The report's ``shard`` block (``core.sharding.shard_info``)."""
    spooled_baseline: tuple[frozenset[str], dict[str, Any] | None] | None = None
    """``(baseline ids, baseline record)`` last written to the report spool's context."""
    floors: dict[str, float] | None = None
    """The complete bounds the gate applies to this dataset: defaults, the manifest's ``floors``,
    then the ``--eval-floors`` file, key by key (``Controller.run_floors``)."""
    _dataset: Dataset | None = field(default=None, repr=False)
    _raw: Any = field(default=_UNREAD, repr=False)
    """The manifest's JSON (arbitrary JSON), read once; ``_UNREAD`` until then, None when unreadable."""

    def note_error(self, outcome: ItemOutcome) -> None:
        """Keep what the summary says of an errored item: the first error, and the rates it is a miss of."""
        if outcome.not_run:
            self.first_not_run = self.first_not_run or outcome.error
            return
        self.first_error = self.first_error or outcome.error
        self.error_parts.add(outcome)

    def misses(self) -> list[str]:
        """The rate metrics (wire names, report order) whose denominators hold the items that could not
        be run, as misses: those their kinds count an errored item in (``Kind.errored``, ``rate_parts``)."""
        return [spec.wire for spec in rate_specs() if spec.field in self.error_parts.clusters]

    def dataset(self) -> Dataset:
        """The loaded dataset (for items that never produced an outcome); loaded once, on demand.

        Raises:
            DatasetError: the manifest no longer loads.
        """
        if self._dataset is None:
            self._dataset = load_dataset(self.manifest)
        return self._dataset

    def _raw_manifest(self) -> Any:
        """The manifest's JSON as this run needs it, read and parsed once (None when it cannot be read).

        Only what is read here is kept (issue 24, memory per item): its ``version`` and
        ``floors`` and, under ``ids``, the item ids, or None when the items are not a list of
        objects with ids; not the items' questions and truths.
        """
        if self._raw is _UNREAD:
            try:
                raw = json.loads(self.manifest.read_bytes())
            except (OSError, ValueError):
                raw = None
            if isinstance(raw, dict):
                try:
                    ids: list[str] | None = [str(item["id"]) for item in raw["items"]]
                except (KeyError, TypeError):
                    ids = None
                raw = {"version": raw.get("version"), "floors": raw.get("floors"), "ids": ids}
            self._raw = raw
        return self._raw

    def read_manifest(self) -> None:
        """Read and keep the manifest's version, floors and item ids now, if not read yet (never raises:
        a manifest that cannot be read is remembered as such, as ``dataset_ids`` and the rest report)."""
        self._raw_manifest()

    def dataset_ids(self) -> list[str] | None:
        """Every item id of the manifest (selected or not), read from its JSON; None when it cannot be read."""
        raw = self._raw_manifest()
        ids = raw.get("ids") if isinstance(raw, dict) else None
        return list(ids) if ids is not None else None

    def manifest_floors(self) -> dict[str, float | None] | None:
        """The manifest's own ``floors`` layer (``core.floors.check_floors``), or None.

        Raises:
            FloorsError: the manifest's floors are invalid (collection refuses such a
                manifest first, so this happens only when it changed during the run).
        """
        raw = self._raw_manifest()
        floors = raw.get("floors") if isinstance(raw, dict) else None
        if floors is None:
            return None
        return check_floors(floors, f"from the floors of {self.manifest}")

    def manifest_version(self) -> str:
        """The dataset version, from the items' reports, else from the manifest itself."""
        if self.version:
            return self.version
        try:
            return str(self._raw_manifest().get("version") or UNKNOWN)
        except AttributeError:
            return UNKNOWN

    def lineage(self) -> dict[str, str]:
        """The model lineage the items reported, ``unknown`` for both when none did."""
        return self.models or UNKNOWN_MODELS


def load_floors_layer(path: Path | None) -> dict[str, float | None] | None:
    """The floors file as one layer (``core.gate.read_floors_file``), validated; None without one.

    Raises:
        pytest.UsageError: the file is invalid (the message names it).
    """
    if path is None:
        return None
    try:
        return read_floors_file(path)
    except FloorsError as exc:
        raise pytest.UsageError(str(exc)) from None


def load_baseline(path: Path | None) -> Report | None:
    """The baseline report at ``path``, validated; None without one.

    Raises:
        pytest.UsageError: the file is not a valid report (the message names it).
    """
    if path is None:
        return None
    try:
        return read_report(path)
    except ReportError as exc:
        raise pytest.UsageError(str(exc)) from None


def dataset_baseline(manifest: Path) -> Path | None:
    """``baseline.json`` beside the dataset's manifest, when the dataset ships one.

    A dataset that commits the report of a known-good run arms the recall floor
    for everyone who runs it (docs/gate.md); ``--eval-baseline`` overrides it.
    """
    candidate = manifest.parent / BASELINE_NAME
    return candidate if candidate.is_file() else None
