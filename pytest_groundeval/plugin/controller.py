"""The controller's side of a run: collect per-item outcomes, compute metrics, apply the gate.

Registered only on the controller (or a plain run), never on an xdist worker,
as pytest's junitxml does (STYLE: aggregating under xdist). Outcomes arrive in
``report.user_properties``; an eval item whose report carries no outcome (a
crashed worker's synthetic report) is counted as an error, never dropped.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..core.kinds import KIND_NAMES
from .record import RUN_PROPERTY, USER_PROPERTY

if TYPE_CHECKING:
    from ..core.outcome import ItemOutcome

BASELINE_NAME = "baseline.json"
"""A dataset's own baseline report, used when ``--eval-baseline`` is not given."""


def eval_node_kind(nodeid: str) -> tuple[str, str] | None:
    """``(kind, item_id)`` when ``nodeid`` names a dataset item (``…manifest.json::kind::id``)."""
    parts = nodeid.split("::")
    if len(parts) == 3 and parts[0].endswith("manifest.json") and parts[1] in KIND_NAMES:
        return parts[1], parts[2]
    return None


def _shown(path: Path) -> str:
    """A path as the user would type it: relative to the current directory when under it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


class GateSession:
    """Aggregates outcomes as reports arrive and decides the session's exit status (docs/gate.md)."""

    def __init__(self, config: pytest.Config, settings: Any) -> None:
        self.config = config
        self.settings = settings
        self.accumulator = None
        self.writer = None
        self.started_at_ms = int(time.time() * 1000)
        self.started = time.perf_counter()
        self.dataset_version: str | None = None
        self.models: dict | None = None
        self.lineage_conflict: str | None = None
        self.seen: set[str] = set()
        self.qa_ids: set[str] = set()
        self.failed_items = 0
        self.errored_items = 0
        self.other_failures = 0
        self.gate = None
        self.metrics = None
        self.floors_error: str | None = None
        self.manifest: Path | None = None
        self.baseline_path: Path | None = settings.baseline or self._dataset_baseline()
        # Read and validate the floors and the baseline before any item runs: against a
        # paid target, a typo found after the run wastes the whole run.
        self.floors = self._load_floors()
        self.baseline = self._load_baseline()

    # -- per report ---------------------------------------------------------------

    def _add(self, outcome: "ItemOutcome") -> None:
        if outcome.id in self.seen:
            return
        self.seen.add(outcome.id)
        if outcome.kind == "qa":
            self.qa_ids.add(outcome.id)
        if self.accumulator is None:
            # Imported on the first eval outcome, so runs without datasets pay nothing.
            from ..core.metrics import MetricsAccumulator

            self.accumulator = MetricsAccumulator()
            if self.settings.report is not None:
                from ..core.report import ReportWriter

                self.writer = ReportWriter(self.settings.report)
        self.accumulator.add(outcome)
        if self.writer is not None:
            self.writer.add_item(outcome)
        if outcome.error is not None:
            self.errored_items += 1
        elif not outcome.passed:
            self.failed_items += 1

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        node = eval_node_kind(report.nodeid)
        if node is None:
            if report.failed:
                self.other_failures += 1
            return
        if self.manifest is None:
            self.manifest = self.config.rootpath / report.nodeid.split("::")[0]
        props = dict(report.user_properties)
        run = props.get(RUN_PROPERTY)
        if run is not None:
            self._note_run(run)
        from ..core.outcome import ItemOutcome  # only once eval items report: runs without them stay light

        wire = props.get(USER_PROPERTY)
        if wire is not None and (report.when == "call" or report.failed):
            self._add(ItemOutcome.model_validate(wire))
        elif report.failed and report.when != "teardown":
            # No outcome: a crashed worker's synthetic report, or a fixture that failed
            # before the item could run. It is an error, counted, never dropped.
            kind, item_id = node
            message = str(report.longrepr).strip().splitlines()
            self._add(
                ItemOutcome(
                    id=item_id,
                    kind=kind,
                    passed=False,
                    error=(message[-1] if message else "item could not be run")[:500],
                )
            )
        elif report.failed:
            self.other_failures += 1

    def _load_floors(self) -> Any:
        """The floors file, validated; None without one.

        Raises:
            pytest.UsageError: the file is invalid (the message names it).
        """
        if self.settings.floors is None:
            return None
        from ..core.gate import FloorsError, load_floors

        try:
            return load_floors(self.settings.floors)
        except FloorsError as exc:
            raise pytest.UsageError(str(exc)) from None

    def _load_baseline(self) -> Any:
        """The baseline report at ``baseline_path``, validated; None without one.

        Raises:
            pytest.UsageError: the file is not a valid report (the message names it).
        """
        if self.baseline_path is None:
            return None
        from ..core.report import ReportError, read_report

        try:
            return read_report(self.baseline_path)
        except ReportError as exc:
            raise pytest.UsageError(str(exc)) from None

    def _dataset_baseline(self) -> Path | None:
        """``baseline.json`` beside the dataset's manifest, when the dataset ships one.

        A dataset that commits the report of a known-good run arms the recall floor
        for everyone who runs it (docs/gate.md); ``--eval-baseline`` overrides it.
        """
        manifest = self.settings.dataset or self.manifest
        if manifest is None:
            return None
        candidate = manifest.parent / BASELINE_NAME
        return candidate if candidate.is_file() else None

    def _note_run(self, run: dict) -> None:
        if self.dataset_version is None:
            self.dataset_version = run.get("datasetVersion")
            self.models = run.get("models")
        elif run.get("models") != self.models or run.get("datasetVersion") != self.dataset_version:
            self.lineage_conflict = (
                f"items report different datasets or lineages: {self.dataset_version} {self.models} "
                f"vs {run.get('datasetVersion')} {run.get('models')}"
            )

    # -- end of session -----------------------------------------------------------

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if not self.seen:
            return
        from ..core.gate import DEFAULT_FLOORS, evaluate_gate, summarize_baseline

        self.metrics = self.accumulator.result()
        models = self.models or {"generate": "unknown", "embed": "unknown"}
        if self.baseline_path is None:
            # An IDE-style run (a manifest path, no --eval-dataset): the dataset is known only now.
            self.baseline_path = self._dataset_baseline()
            try:
                self.baseline = self._load_baseline()
            except pytest.UsageError as exc:
                self.floors_error = str(exc)
                session.exitstatus = pytest.ExitCode.USAGE_ERROR
                if self.writer is not None:
                    self.writer.abort()
                return
        # What the recall check compares with, recorded in the report so that
        # `groundeval gate --report` re-applies the same check (docs/gate.md).
        baseline = (
            summarize_baseline(self.baseline, self.qa_ids, _shown(self.baseline_path))
            if self.baseline is not None and self.baseline_path is not None
            else None
        )
        floors = dict(DEFAULT_FLOORS) if self.floors is None else self.floors
        self.gate = evaluate_gate(
            self.metrics,
            floors=floors,
            baseline=baseline,
            dataset_version=self.dataset_version or "unknown",
            models=models,
            qa_ids=self.qa_ids,
        )
        interrupted = bool(
            exitstatus == pytest.ExitCode.INTERRUPTED or session.shouldstop or session.shouldfail
        )
        if interrupted:
            from ..core.gate import interrupted_check

            self.gate = self.gate.model_copy(
                update={"passed": False, "checks": [*self.gate.checks, interrupted_check(len(self.seen))]}
            )
        if self.writer is not None:
            from ..core.report import environment_info

            self.writer.finish(
                dataset_version=self.dataset_version or "unknown",
                models=models,
                started_at_ms=self.started_at_ms,
                duration_ms=int((time.perf_counter() - self.started) * 1000),
                metrics=self.metrics,
                gate=self.gate,
                environment=environment_info(),
                interrupted=interrupted,
                floors=floors,
                baseline=baseline,
            )
        if exitstatus in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR):
            return
        failed = (
            not self.gate.passed
            or self.errored_items > 0
            or self.other_failures > 0
            or (self.settings.strict and self.failed_items > 0)
        )
        # docs/gate.md: the gate decides; items below their own check do not fail the session.
        session.exitstatus = pytest.ExitCode.TESTS_FAILED if failed else pytest.ExitCode.OK

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.floors_error:
            terminalreporter.write_sep("=", "groundeval gate", red=True)
            terminalreporter.write_line(f"groundeval: {self.floors_error}")
            return
        if self.gate is None:
            return
        from ..core.render import format_check, unbounded_lines

        tr = terminalreporter
        m = self.models or {}
        tr.write_sep("=", "groundeval gate", bold=True)
        tr.write_line(
            f"dataset {self.dataset_version or 'unknown'}  "
            f"lineage generate={m.get('generate', 'unknown')} embed={m.get('embed', 'unknown')}  "
            f"items {len(self.seen)} (failed {self.failed_items}, errors {self.errored_items})"
        )
        if self.lineage_conflict:
            tr.write_line(f"warning: {self.lineage_conflict}", yellow=True)
        for check in self.gate.checks:
            tr.write_line(format_check(check), red=check.outcome == "FAIL", green=check.outcome == "PASS")
        for line in unbounded_lines(self.metrics, self.gate):
            tr.write_line(line)
        if self.errored_items:
            tr.write_line(
                f"note: {self.errored_items} item(s) could not be run; they stay in the metrics' denominators "
                "as misses (recall, falsehoodRejection, temporalAccuracy), never dropped",
                yellow=True,
            )
        if self.baseline_path is not None:
            tr.write_line(f"baseline: {_shown(self.baseline_path)}")
        if self.settings.report is not None:
            tr.write_line(f"report: {_shown(self.settings.report)}")
        if self.gate.passed:
            tr.write_line("gate: PASS", green=True, bold=True)
        else:
            tr.write_line("gate: FAIL", red=True, bold=True)
