"""The controller's side of a run with a dataset: collect per-item outcomes, compute metrics, apply the gate.

Registered by ``plugin.hooks`` only on the controller (or a plain run), never on an
xdist worker, as pytest's junitxml does, and only when the session has a dataset
(``--eval-dataset``, or a manifest among the paths): a run without one never imports
this module. Outcomes arrive as an attribute of the items' reports (``plugin.record``);
each dataset's state is a ``plugin.state.DatasetRun``; the end of the run is
``core.finalize.finalize_run``.

Every collected item is accounted for (docs/gate.md: what the gate guarantees):

- an eval item whose report carries no outcome (a crashed worker's synthetic
  report, a fixture that failed before the item ran) is an error, counted in
  the denominators as its kind counts an error;
- an item that was collected but never reported (the run was interrupted, xdist
  ran out of worker restarts) is an error too (``notRun``), the run is marked
  interrupted and the gate fails;
- each dataset of the session (each manifest) is aggregated and gated on its
  own, with its own version, lineage and baseline; the session fails when any
  dataset's gate fails.

SIGTERM (what CI cancellation sends) is handled like Ctrl-C (``plugin.session``): the
session stops, the report is written and marked interrupted, the exit status is not 0.

At the end of the session, each dataset's gate also goes to the outputs asked
for (docs/ci.md): the HTML page (``--eval-html``), the Markdown gate table
(``--eval-markdown``, and ``$GITHUB_STEP_SUMMARY``), written by ``outputs.write``, and
a test case of its own in the JUnit XML (``--junitxml``, ``plugin.junit``), logged
before junitxml writes its file; the terminal summary is ``plugin.summary``'s. A
shard's gate (``--eval-shard K/N``, N > 1) is partial: it is reported, but only
errors, items that never ran and an interrupted run fail the session; the gate
that decides is the merged one (``groundeval merge``).
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from ..core.environment import environment_info
from ..core.finalize import RunFlags, finalize_run
from ..core.gate import FloorsError, baseline_version_problem, merge_floors, summarize_baseline
from ..core.kinds import errored_outcome, get
from ..core.kinds.base import ItemBase
from ..core.lineage import UNKNOWN, UNKNOWN_MODELS
from ..core.outcome import ItemOutcome, as_attempts
from ..core.report import FinishedReport, Report, ReportWriter, write_session
from ..core.sharding import shard_info
from ..outputs.write import shown_path, write_session_outputs
from .freeze import freeze_long_lived_objects
from .history import SessionHistory
from .hookspecs import is_wrapper
from .junit import log_gates_to_junit
from .nodeids import dataset_key, eval_node
from .options import STEP_SUMMARY_ENV, Settings, step_summary_path
from .record import GATE_ATTR, NOTICES_ATTR, OUTCOME_ATTR, RUN_ATTR, built_outcomes_key
from .session import GateSession
from .state import DatasetRun, dataset_baseline, load_baseline, load_floors_layer
from .summary import write_summary

SHARD_DECIDING = frozenset({"errors", "notRun", "run"})
"""Gate checks that fail a shard's session: errors, never-run items, an interrupted run (docs/ci.md)."""

ReportFields = dict[str, Any]
"""The keyword arguments of ``ReportWriter.finish`` for one dataset (models and JSON blocks)."""


class Controller:
    """Aggregates outcomes as reports arrive and decides the session's exit status (docs/gate.md).

    Args:
        config: The session's config.
        settings: The resolved options (``plugin.options.Settings``).
        session: The session's id, start and flags (``plugin.session.GateSession``).

    Raises:
        pytest.UsageError: the floors file or a baseline is invalid, an explicit baseline
            is of another dataset version, or the history database cannot be opened: all
            found before any item runs.
    """

    def __init__(self, config: pytest.Config, settings: Settings, session: GateSession) -> None:
        self.config = config
        self.settings = settings
        self.session = session
        self.runs: dict[str, DatasetRun] = {}
        self.other_failures = 0
        self.usage_error: str | None = None
        self.collection_errors: list[str] = []
        """Node ids of the collectors that failed (a manifest that does not load, a test file that does not import)."""
        self.written: list[Path] = []
        self.output_errors: list[str] = []
        self.step_summary: Path | None = step_summary_path(settings)
        # What each item's outcome is kept for: everything for the HTML page, the failed and
        # errored ones for a Markdown table (it lists only those).
        self.keep = "all" if settings.html else "problems" if (settings.markdown or self.step_summary) else None
        self.exit_decided = False
        self.hook_items: dict[str, list[dict[str, Any]]] = {}
        """Per dataset key, every item's wire outcome, for ``FinishedReport.items()`` without a report
        file; kept only when a ``pytest_groundeval_report`` hook is registered (``_keeps_for_hook``)."""
        self._hook_keeps: bool | None = None
        self.step_summary_error: str | None = None
        self.notices: dict[str, None] = {}
        """The judges' notices (fallbacks made, docs/judges.md), each once however many workers or
        items carried it, in arrival order: warnings in the summary."""
        # Read and validate the floors and the baselines before any item runs: against a
        # paid target, a typo found after the run wastes the whole run.
        self.floors = load_floors_layer(settings.floors)
        self.explicit_baseline = load_baseline(settings.baseline) if settings.baseline else None
        if self.explicit_baseline is not None and settings.dataset is not None:
            problem = self._baseline_version_problem(DatasetRun(key="", manifest=settings.dataset).manifest_version())
            if problem is not None:
                raise pytest.UsageError(problem)
        if settings.dataset is not None and settings.baseline is None:
            load_baseline(dataset_baseline(settings.dataset))
        self.history: SessionHistory | None = None
        if settings.history is not None:
            # Opened before any item runs: a database that cannot be opened is a usage error now.
            self.history = SessionHistory(
                settings.history,
                settings.label,
                session.session_id,
                session.started_at_ms,
                self._options(),
                confidence_level=settings.confidence,
                gate_on=settings.gate_on,
            )

    def _options(self) -> dict[str, Any]:
        """The options recorded with a run in the history (``config.options``; no secrets)."""
        s = self.settings
        return {
            "target": "map" if s.target_map else "url" if s.url else ("spawn" if s.spawn else "reference"),
            "url": s.url,
            "targetMap": str(s.target_map.path) if s.target_map else None,
            "spawn": s.spawn,
            "concurrency": s.concurrency,
            "repeat": s.repeat,
            "timeoutS": s.timeout_s,
            "strict": s.strict,
            "noGate": s.no_gate,
            "report": str(s.report) if s.report else None,
            "baseline": str(s.baseline) if s.baseline else None,
            "floorsFile": str(s.floors) if s.floors else None,
            "workers": getattr(self.config.option, "numprocesses", None),
            # The judge and scorer by URL and model; never the judge's API key (docs/citation.md).
            "judgeUrl": s.judge or s.judge_url,
            "judgeModel": s.judge_model,
            "judgeCache": s.judge_cache is not None,
            "scorerUrl": s.scorer_url,
            "scorerModel": s.scorer_model,
            # A jury's judges by URL, model and key variable, and its policy (docs/judges.md); never a key.
            **(
                {
                    "judges": [{"url": j.url, "model": j.model, "apiKeyEnv": j.api_key_env} for j in s.judges],
                    "judgePolicy": s.judge_policy,
                }
                if s.judges
                else {}
            ),
            # The prices the run's costs were computed with (docs/gate.md, "Cost"), so a rejudge prices alike.
            "prices": s.prices,
        }

    @pytest.hookimpl
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        # The item spools' temporary files go whatever ended the session (a usage error, an
        # exception writing the outputs, an interrupt): they hold every kept item's answer.
        for run in self.runs.values():
            run.kept.close()
        if self.history is not None:
            self.history.close()

    def reported(self, nodeid: str) -> bool:
        """Whether the item ``nodeid`` names already reported its outcome (``plugin.crash``)."""
        node = eval_node(nodeid)
        if node is None:
            return False
        run = self.runs.get(node[0])
        return run is not None and node[2] in run.seen

    # -- collection -----------------------------------------------------------------

    @pytest.hookimpl
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        # Under xdist a worker's collection error reaches the controller only as this report.
        if report.failed:
            self.collection_errors.append(report.nodeid)

    def _collection_stopped(self) -> bool:
        """Whether a manifest failed to load and so stops the session, as pytest stops a plain run (exit 2).

        pytest interrupts a plain run on a collection error (unless
        ``--continue-on-collection-errors``); an xdist controller only counts it as a
        failure (exit 1), so the controller stops it itself for manifests (docs/guarantees.md).
        """
        return not self.config.option.continue_on_collection_errors and any(
            dataset_key(nodeid).rsplit("/", 1)[-1] == "manifest.json" for nodeid in self.collection_errors
        )

    def _run_for(self, key: str) -> DatasetRun:
        run = self.runs.get(key)
        if run is None:
            manifest = (self.config.rootpath / key).resolve()
            run = self.runs[key] = DatasetRun(key=key, manifest=manifest)
        return run

    def _expect(self, nodeids: Iterable[str]) -> None:
        expected: dict[str, dict[str, str]] = {}  # dataset key -> its run's expected items
        for nodeid in nodeids:
            node = eval_node(nodeid)
            if node is not None:
                key, kind, item_id = node
                of_run = expected.get(key)
                if of_run is None:
                    of_run = expected[key] = self._run_for(key).expected
                of_run.setdefault(item_id, kind)
        if not self._runs_nothing():
            # Read now what the end of the session reads of each manifest (its version, floors and
            # ids): parsed here, its whole JSON is a passing peak before the run's reports and
            # outcomes exist, not one on top of them (benchmarks/README.md, "Memory per item").
            for key in expected:
                self.runs[key].read_manifest()

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self.config.pluginmanager.hasplugin("dsession"):
            # An xdist controller runs no runner: its modules are in once the session starts.
            freeze_long_lived_objects()

    # tryfirst: the items are recorded before the terminal prints "selected", so an interrupt sent
    # on seeing that line finds them expected (each then counted as an error, docs/guarantees.md).
    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if self._runs_nothing():
            # No runner starts to freeze what the run keeps: the collected items are frozen here, so that
            # pytest's collections at exit do not walk them (benchmarks/README.md, "Collection").
            freeze_long_lived_objects()
            # Nothing runs, so nothing is expected, spooled or recorded: a history run opened here
            # would stay in the history, never finished (docs/history.md).
            return
        # A plain run: session.items is the selection (after -k/-m deselection). Under
        # xdist the controller collects nothing; workers tell it what they collected.
        self._expect(item.nodeid for item in session.items)
        self._spool_collected()
        if self.history is not None:
            by_key: dict[str, list[ItemBase]] = {}
            for item in session.items:
                eval_item = getattr(item, "eval_item", None)
                node = eval_node(item.nodeid)
                if eval_item is not None and node is not None:
                    by_key.setdefault(node[0], []).append(eval_item)
            for key, items in by_key.items():
                self.history.note_items(key, items)
            self._open_history_runs()

    def _runs_nothing(self) -> bool:
        """Whether this session only collects (``--collect-only``, and ``--fixtures`` and
        ``--fixtures-per-test``, which list fixtures after collecting) or sets up fixtures
        (``--setup-only``, and ``--setup-plan``, which pytest makes a ``--setup-only`` that plans
        them): no item runs."""
        option = self.config.option
        return bool(
            option.collectonly
            or getattr(option, "setuponly", False)
            or getattr(option, "showfixtures", False)
            or getattr(option, "show_fixtures_per_test", False)
        )

    def collected(self, nodeids: Iterable[str]) -> None:
        """What an xdist worker collected (``pytest_xdist_node_collection_finished``, ``plugin.xdist_hooks``)."""
        if self._runs_nothing():
            return
        self._expect(nodeids)
        self._spool_collected()
        if self.history is not None:
            self._open_history_runs()

    def _open_history_runs(self) -> None:
        """One history run per dataset, as soon as its items are known (docs/history.md)."""
        assert self.history is not None
        for run in self.runs.values():
            self.history.open(run, self.run_floors(run))

    # -- per report ---------------------------------------------------------------

    def _add(self, run: DatasetRun, outcome: ItemOutcome, wire: dict[str, Any] | None = None) -> None:
        if outcome.id in run.seen:
            return
        run.seen.add(outcome.id)
        if wire is None:  # an outcome built here (an item that errored or never ran), serialised once
            wire = outcome.to_wire()
        self._writer(run)
        run.outcomes.add(outcome)
        if run.writer is not None:
            run.writer.add_item(outcome, wire=wire)  # the outcome's wire dict, serialised once per item
        if self.history is not None:
            self.history.add(run, wire, self.run_floors(run))
        if self.keep == "all" or (self.keep == "problems" and not outcome.passed):
            run.kept.add(wire)
        if self._keeps_for_hook():
            self.hook_items.setdefault(run.key, []).append(wire)
        if outcome.error is not None:
            run.errored += 1
            run.not_run += outcome.not_run
            run.note_error(outcome)
        elif not outcome.passed:
            run.failed += 1

    def _keeps_for_hook(self) -> bool:
        """Whether items are kept in memory for a report hook: one is registered and no report file spools them."""
        if self._hook_keeps is None:
            hooked = any(not is_wrapper(impl) for impl in self.config.hook.pytest_groundeval_report.get_hookimpls())
            self._hook_keeps = hooked and self.settings.report is None
        return self._hook_keeps

    def _writer(self, run: DatasetRun) -> ReportWriter | None:
        if run.writer is None and self.settings.report is not None:
            run.writer = ReportWriter(self.settings.report)
            run.writer.set_context(self._context(run))
        return run.writer

    def _context(self, run: DatasetRun) -> dict[str, Any]:
        """What ``groundeval report --recover`` needs to rebuild a report from the spool (docs/gate.md).

        The lineage and start, the bounds the gate applies, the baseline as the report
        records it, the manifest, and every collected item (id -> kind), so that a killed
        run's items that never ran are recovered as ``notRun`` errors; the confidence level
        and what the bounds compare with (``--eval-gate-on``).
        """
        return {
            "session": f"{self.session.started_at_ms}",
            "dataset": run.key,
            "manifest": str(run.manifest),
            "datasetVersion": run.version,
            "models": run.models,
            "startedAtMs": self.session.started_at_ms,
            "floors": self.run_floors(run),
            "baseline": self._spooled_baseline(run),
            "items": dict(run.expected),
            "repeat": self.settings.repeat,
            "confidenceLevel": self.settings.confidence,
            "gateOn": self.settings.gate_on,
            "prices": self.settings.prices,
        }

    def _spooled_baseline(self, run: DatasetRun) -> dict[str, Any] | None:
        """The baseline the gate will use, summarised over the collected items of the kinds that use it.

        At the end of the session the gate summarises the same baseline over the items
        that reported, which are the collected ones; so a recovered report records what
        the finished run would have (``Report.baseline``). None when the run has no
        baseline or it cannot be read yet (the end of the session reports that).
        """
        ids = frozenset(item_id for item_id, kind in run.expected.items() if get(kind).uses_baseline)
        if run.spooled_baseline is not None and run.spooled_baseline[0] == ids:
            return run.spooled_baseline[1]
        baseline: Report | None
        path: Path | None
        if self.settings.baseline is not None:
            path, baseline = self.settings.baseline, self.explicit_baseline
        else:
            path = dataset_baseline(run.manifest)
            try:
                baseline = load_baseline(path)
            except pytest.UsageError:
                baseline = None
        record = None
        if baseline is not None and path is not None:
            record = summarize_baseline(baseline, ids, shown_path(path)).to_wire()
        run.spooled_baseline = (ids, record)
        return record

    def _spool_collected(self) -> None:
        """Open each dataset's report spool as soon as its items are known, recording them.

        A run killed before its first item finishes is then recoverable too: every
        collected item is recovered as never run (``groundeval report --recover``).
        """
        if self.settings.report is None or self._runs_nothing():
            return
        for run in self.runs.values():
            if not run.expected:
                continue
            if run.writer is None:
                self._writer(run)
            else:
                run.writer.set_context(self._context(run))

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if getattr(report, GATE_ATTR, False):
            return
        node = eval_node(report.nodeid)
        if node is None:
            if report.failed:
                self.other_failures += 1
            return
        for notice in getattr(report, NOTICES_ATTR, None) or ():
            self.notices.setdefault(notice)
        key, kind, item_id = node
        run = self._run_for(key)
        info = getattr(report, RUN_ATTR, None)
        if info is not None:
            self._note_run(run, info)
        wire = getattr(report, OUTCOME_ATTR, None)
        if wire is not None and (report.when == "call" or report.failed):
            # Built in this process (no xdist): the object itself, not its wire dict validated again.
            built = self.config.stash.get(built_outcomes_key, {}).pop(report.nodeid, None)
            self._add(run, built if built is not None else ItemOutcome.model_validate(wire), wire)
        elif report.failed and report.when != "teardown":
            # No outcome: a crashed worker's synthetic report, or a fixture that failed
            # before the item could run. It is an error, counted, never dropped.
            lines = str(report.longrepr).strip().splitlines()
            message = (lines[-1] if lines else "item could not be run")[:500]
            self._add(run, self._errored(run, kind, item_id, message))
        elif report.failed:
            self.other_failures += 1

    @pytest.hookimpl(trylast=True, specname="pytest_runtest_logreport")
    def pytest_runtest_logreport_release(self, report: pytest.TestReport) -> None:
        """Drop the outcome from a report once every plugin saw it: pytest keeps its reports to the end of
        the session, and what the summary needs of the outcome is counted by then (issue 24, memory per item)."""
        if hasattr(report, OUTCOME_ATTR):
            delattr(report, OUTCOME_ATTR)
            self.config.stash.get(built_outcomes_key, {}).pop(report.nodeid, None)

    def _errored(self, run: DatasetRun, kind: str, item_id: str, error: str, *, not_run: bool = False) -> ItemOutcome:
        """The errored outcome of an item that produced none, as its kind counts an error.

        A qa item keeps its expected evidence in the recall denominator: the dataset is
        loaded to learn it (once, and only when some item produced no outcome). Under
        ``--eval-repeat N`` it is N errored attempts (``core.outcome.as_attempts``).
        """
        items_by_id: Mapping[str, ItemBase] | None
        try:
            items_by_id = run.dataset().by_id
        except Exception:  # noqa: BLE001 - the dataset no longer loads: the error still counts, with what is known
            items_by_id = None
        return as_attempts(errored_outcome(items_by_id, kind, item_id, error, not_run=not_run), self.settings.repeat)

    def run_floors(self, run: DatasetRun) -> dict[str, float]:
        """The complete bounds the gate applies to ``run``'s dataset (docs/gate.md): the defaults,
        then the manifest's ``floors``, then the ``--eval-floors`` file, merged key by key.

        Raises:
            pytest.UsageError: the manifest's floors are invalid (it changed after collection).
        """
        if run.floors is None:
            try:
                run.floors = merge_floors(run.manifest_floors(), self.floors)
            except FloorsError as exc:
                raise pytest.UsageError(str(exc)) from None
        return run.floors

    def _baseline_version_problem(self, dataset_version: str) -> str | None:
        """Why the explicit ``--eval-baseline`` cannot serve ``dataset_version``, or None (docs/gate.md)."""
        if self.explicit_baseline is None or dataset_version == UNKNOWN:
            return None
        assert self.settings.baseline is not None
        return baseline_version_problem(
            self.explicit_baseline.dataset_version, dataset_version, shown_path(self.settings.baseline)
        )

    def _note_run(self, run: DatasetRun, info: dict[str, Any]) -> None:
        if run.version is None:
            run.version = info.get("datasetVersion")
            run.models = info.get("models")
            if run.writer is not None:
                run.writer.set_context(self._context(run))
        elif (run.models == UNKNOWN_MODELS and info.get("models") not in (None, UNKNOWN_MODELS)) and info.get(
            "datasetVersion"
        ) == run.version:
            # A recorded answer (no target: lineage unknown) reported first; the target's items know the
            # lineage, which prices the target's tokens and arms the baseline (docs/gate.md).
            run.models = info.get("models")
            if run.writer is not None:
                run.writer.set_context(self._context(run))
        elif info.get("models") == UNKNOWN_MODELS and info.get("datasetVersion") == run.version:
            pass  # a recorded answer among the target's items: it knows no lineage, it contradicts none
        elif info.get("models") != run.models or info.get("datasetVersion") != run.version:
            run.lineage_conflict = (
                f"items report different datasets or lineages: {run.version} {run.models} "
                f"vs {info.get('datasetVersion')} {info.get('models')}"
            )

    # -- end of session -----------------------------------------------------------

    def _account_for_unreported(self, run: DatasetRun, reason: str) -> None:
        """Count every collected item of ``run`` that never reported as an error.

        An item in flight on an xdist worker that crashed is that crash (``plugin/crash.py``);
        any other is a ``notRun`` error.
        """
        journal = self.session.journal
        missing = [(item_id, kind) for item_id, kind in run.expected.items() if item_id not in run.seen]
        for item_id, kind in missing:
            crash = journal.crash_of(f"{run.key}::{kind}::{item_id}") if journal is not None else None
            if crash is not None:
                self._add(run, self._errored(run, kind, item_id, crash))
            else:
                self._add(run, self._errored(run, kind, item_id, f"not run: {reason}", not_run=True))

    @property
    def sharded(self) -> bool:
        """Whether this run is one shard of several (``--eval-shard K/N``, N > 1)."""
        return self.settings.shard is not None and self.settings.shard[1] > 1

    def gate_fails_session(self, run: DatasetRun) -> bool:
        """Whether ``run``'s gate fails the session: any FAIL, or for a shard only the checks in ``SHARD_DECIDING``."""
        assert run.gate is not None
        if not self.sharded:
            return not run.gate.passed
        return any(c.outcome == "FAIL" and c.metric in SHARD_DECIDING for c in run.gate.checks)

    def _usage_error(self, session: pytest.Session, message: str) -> None:
        self.usage_error = message
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
        self._abort_writers()

    def _abort_writers(self) -> None:
        """Close and delete every report spool and item spool: the session wrote no report (a usage error)."""
        for run in self.runs.values():
            run.kept.close()
            if run.writer is not None:
                run.writer.abort()

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        # First, so that the gate reaches junitxml's file before it is written; the exit
        # status is decided last (``pytest_sessionfinish_exit_status``).
        if self._runs_nothing():
            return
        if exitstatus == pytest.ExitCode.USAGE_ERROR:  # refused before any item ran (plugin.target_source)
            self._abort_writers()  # the spools opened at collection: no report, no file left open
            return
        if not self.runs and self.settings.dataset is not None and self.settings.report is not None:
            # Interrupted before collection finished: still write a (empty, interrupted) report.
            key = self._dataset_key(self.settings.dataset)
            if key is not None:
                self._run_for(key)
        if not self.runs:
            return
        for run in self.runs.values():
            problem = self._baseline_version_problem(run.manifest_version())
            if problem is None:
                try:
                    self.run_floors(run)
                except pytest.UsageError as exc:
                    problem = str(exc)
            if problem is not None:
                return self._usage_error(session, problem)
        interrupted = self._interrupted(session, exitstatus)
        reason = self._stop_reason(session, interrupted)
        for run in self.runs.values():
            self._account_for_unreported(run, reason)
            if run.not_run:
                interrupted = True
        for run in self.runs.values():
            if self.settings.baseline is not None:
                run.baseline_path, run.baseline = self.settings.baseline, self.explicit_baseline
            else:
                run.baseline_path = dataset_baseline(run.manifest)
                try:
                    run.baseline = load_baseline(run.baseline_path)
                except pytest.UsageError as exc:
                    return self._usage_error(session, str(exc))
            # The baseline as the recall check compares with it is recorded in the report so
            # that `groundeval gate --report` re-applies the same check (docs/gate.md).
            end = finalize_run(
                run.outcomes,
                floors=self.run_floors(run),
                baseline=run.baseline if run.baseline_path is not None else None,
                baseline_path=shown_path(run.baseline_path) if run.baseline_path is not None else None,
                baseline_ids=run.outcomes.baseline_ids,
                dataset_version=run.manifest_version(),
                models=run.lineage(),
                gated=not self.settings.no_gate,
                flags=RunFlags(interrupted=interrupted),
                alpha=self.settings.alpha,
                confidence_level=self.settings.confidence,
                gate_on=self.settings.gate_on,
                prices=self.settings.prices,
            )
            run.metrics, run.gate, run.baseline_record = end.metrics, end.gate, end.baseline
            run.confidence = end.confidence
            run.shard = self._shard_block(run)
        parts = self._parts(interrupted)
        self._call_report_hooks(parts)
        self._write_report(parts)
        self._write_outputs(parts)
        log_gates_to_junit(self.config, self.runs.values(), self.gate_fails_session, self.settings.shard)
        if self.history is not None:
            self.history.finish(self.runs.values(), self.run_floors, interrupted)
        self.exit_decided = True

    def _interrupted(self, session: pytest.Session, exitstatus: int) -> bool:
        """Whether the run stopped before every selected item ran (Ctrl-C, SIGTERM, ``-x``, a manifest error)."""
        return bool(
            exitstatus == pytest.ExitCode.INTERRUPTED
            or session.shouldstop
            or session.shouldfail
            or self.session.interrupted_by
            or self._collection_stopped()
        )

    def _stop_reason(self, session: pytest.Session, interrupted: bool) -> str:
        """Why the items that never ran did not, for their ``notRun`` errors."""
        interrupted_by, journal = self.session.interrupted_by, self.session.journal
        return (
            str(session.shouldfail or session.shouldstop or "")
            or (f"the run was stopped by {interrupted_by}" if interrupted_by else "")
            or (journal is not None and journal.stop_reason() or "")
            or ("the run was interrupted" if interrupted else "the session ended before it ran")
        )

    @pytest.hookimpl(trylast=True, specname="pytest_sessionfinish")
    def pytest_sessionfinish_exit_status(self, session: pytest.Session, exitstatus: int) -> None:
        """The session's exit status, decided last (pytest reads only ``pytest_*`` names as hooks)."""
        kept = (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR)
        if self._collection_stopped() and exitstatus not in kept and not self.usage_error:
            session.exitstatus = pytest.ExitCode.INTERRUPTED  # a manifest that does not load: 2, with or without xdist
            return
        if not self.exit_decided:
            return
        flags = self.session
        if exitstatus == pytest.ExitCode.INTERRUPTED and flags.stopped_by_groundeval and not flags.interrupted_by:
            # The harness stopped the session (under xdist that arrives as an interrupt): a
            # failed run, exit 1, as without xdist (docs/guarantees.md).
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
            return
        if exitstatus in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR):
            return
        failed = (
            any(self.gate_fails_session(run) or run.errored for run in self.runs.values())
            or self.other_failures > 0
            or bool(self.collection_errors)
            or bool(self.output_errors)
            # A history that could not be written loses the run's record: never a silent green.
            or (self.history is not None and self.history.failure is not None)
            or (self.settings.strict and any(run.failed for run in self.runs.values()))
        )
        # docs/gate.md: the gate decides; items below their own check do not fail the session.
        session.exitstatus = pytest.ExitCode.TESTS_FAILED if failed else pytest.ExitCode.OK

    def _shard_block(self, run: DatasetRun) -> dict[str, Any] | None:
        """The ``shard`` block of ``run``'s report: ``--eval-shard K/N``, or 1/1 for an unsharded run."""
        ids = run.dataset_ids()
        if ids is None:
            return None
        index, count = self.settings.shard or (1, 1)
        return shard_info(ids, index, count)

    def _dataset_key(self, manifest: Path) -> str | None:
        try:
            return os.path.relpath(manifest, self.config.rootpath).replace(os.sep, "/")
        except ValueError:
            return None

    def _parts(self, interrupted: bool) -> list[tuple[DatasetRun, ReportFields]]:
        """Per dataset, the report's header fields (``ReportWriter.finish``'s keyword arguments)."""
        environment = environment_info()
        duration_ms = int((time.perf_counter() - self.session.started) * 1000)
        parts = []
        for run in self.runs.values():
            parts.append(
                (
                    run,
                    dict(
                        dataset_version=run.manifest_version(),
                        models=run.lineage(),
                        started_at_ms=self.session.started_at_ms,
                        duration_ms=duration_ms,
                        metrics=run.metrics,
                        confidence=run.confidence,
                        confidence_level=self.settings.confidence,
                        gate=run.gate,
                        environment=environment,
                        interrupted=interrupted,
                        floors=self.run_floors(run),
                        shard=run.shard,
                        baseline=run.baseline_record,
                        repeat=self.settings.repeat,
                        prices=self.settings.prices,
                    ),
                )
            )
        return parts

    def _call_report_hooks(self, parts: list[tuple[DatasetRun, ReportFields]]) -> None:
        """Show each dataset's finished report to ``pytest_groundeval_report`` and keep what it added.

        What the hooks put in ``FinishedReport.extensions`` becomes the report's ``extensions``
        (and the outputs'). Each implementation is called on its own: one that raises is an
        output error naming its file and the exception, and what it added is left out; the
        report and the other outputs are still written. Each extension whose value is not
        JSON is left out and named in an output error; the JSON ones are kept. Either fails
        the session as an output that could not be written does (docs/extending.md).
        """
        hook = self.config.hook.pytest_groundeval_report
        impls = [impl for impl in reversed(hook.get_hookimpls()) if not is_wrapper(impl)]
        if not impls:
            return
        for run, fields in parts:
            data = Report(**fields).to_wire()
            del data["items"]
            writer = run.writer
            kept = self.hook_items.get(run.key, [])
            finished = FinishedReport(
                data=data,
                path=self.settings.report,
                item_source=writer.items if writer is not None else functools.partial(iter, kept),
            )
            arguments = {"config": self.config, "report": finished}
            for impl in impls:
                before = dict(finished.extensions)
                try:
                    impl.function(**{name: arguments[name] for name in impl.argnames})
                except Exception as exc:  # noqa: BLE001 -- any error of an extension is an output error, never a lost report
                    finished.extensions = before
                    where = inspect.getsourcefile(impl.function) or impl.plugin_name
                    self.output_errors.append(
                        f"the report of {run.manifest_version()}: pytest_groundeval_report in {where} raised "
                        f"{type(exc).__name__}: {exc}; the report was written without what it added (docs/extending.md)"
                    )
            extensions = {}
            for name, value in finished.extensions.items():
                try:
                    if not isinstance(name, str):
                        raise TypeError(f"the name is {type(name).__name__}, not str")
                    json.dumps(value, allow_nan=False)
                except (TypeError, ValueError) as exc:
                    self.output_errors.append(
                        f"the report of {run.manifest_version()}: extensions added by pytest_groundeval_report "
                        f"are not JSON: {name!r} ({exc}); it was left out, the others kept (docs/extending.md)"
                    )
                    continue
                extensions[name] = value
            if extensions:
                fields["extensions"] = extensions

    def _write_report(self, parts: list[tuple[DatasetRun, ReportFields]]) -> None:
        if self.settings.report is None:
            return
        writers = []
        for run, fields in parts:
            writer = self._writer(run)
            assert writer is not None
            writer.set_context(self._context(run))
            writers.append((writer, fields))
        write_session(self.settings.report, writers)

    def _write_outputs(self, parts: list[tuple[DatasetRun, ReportFields]]) -> None:
        """The HTML page, the Markdown table and the step summary, from the same data as the report (docs/ci.md)."""
        if self.keep is None:
            return
        reports = []
        for run, fields in parts:
            wire = Report(**fields).to_wire()
            wire["items"] = run.kept
            reports.append(wire)
        out = write_session_outputs(
            reports,
            html=self.settings.html,
            markdown=self.settings.markdown,
            step_summary=self.step_summary,
            step_summary_name=STEP_SUMMARY_ENV,
        )
        for run, _ in parts:
            run.kept.close()
        self.written += out.written
        self.output_errors += out.errors
        self.step_summary_error = out.step_summary_error

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        write_summary(terminalreporter, self)
