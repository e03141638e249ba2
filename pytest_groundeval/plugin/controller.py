"""The controller's side of a run: collect per-item outcomes, compute metrics, apply the gate.

Registered only on the controller (or a plain run), never on an xdist worker,
as pytest's junitxml does. Outcomes arrive as an attribute of the items' reports
(``plugin.record``).

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

SIGTERM (what CI cancellation sends) is handled like Ctrl-C: the session stops,
the report is written and marked interrupted, the exit status is not 0.

At the end of the session, each dataset's gate also goes to the outputs asked
for (docs/ci.md): the HTML page (``--eval-html``), the Markdown gate table
(``--eval-markdown``, and ``$GITHUB_STEP_SUMMARY``), and a test case of its own
in the JUnit XML (``--junitxml``), logged before junitxml writes its file. A
shard's gate (``--eval-shard K/N``, N > 1) is partial: it is reported, but only
errors, items that never ran and an interrupted run fail the session; the gate
that decides is the merged one (``groundeval merge``).
"""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..core.kinds import KIND_NAMES
from .options import STEP_SUMMARY_ENV, step_summary_path
from .record import GATE_ATTR, OUTCOME_ATTR, RUN_ATTR, SESSION_WORKERINPUT, session_key

if TYPE_CHECKING:
    from ..core.outcome import ItemOutcome

BASELINE_NAME = "baseline.json"
"""A dataset's own baseline report, used when ``--eval-baseline`` is not given."""

UNKNOWN = "unknown"

_UNREAD = object()

"""The file GitHub Actions shows as the job summary; the Markdown gate table is appended to it."""

SHARD_DECIDING = frozenset({"errors", "notRun", "run"})
"""Gate checks that fail a shard's session: errors, never-run items, an interrupted run (docs/ci.md)."""


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


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


@dataclass
class DatasetRun:
    """Everything the controller keeps for one dataset (one manifest) of the session."""

    key: str
    """The manifest's part of the node ids, e.g. ``datasets/v1/manifest.json``."""
    manifest: Path
    """The manifest's path."""
    outcomes: Any = None
    """The outcomes so far (``core.finalize.RunOutcomes``), from the first eval outcome on."""
    writer: Any = None
    version: str | None = None
    models: dict | None = None
    lineage_conflict: str | None = None
    seen: set[str] = field(default_factory=set)
    failed: int = 0
    errored: int = 0
    not_run: int = 0
    expected: dict[str, str] = field(default_factory=dict)
    """Item id -> kind of every item collected for this run (after deselection)."""
    baseline_path: Path | None = None
    baseline: Any = None
    baseline_record: Any = None
    """The baseline as the gate used it (``core.gate.summarize_baseline``), recorded in the report."""
    metrics: Any = None
    gate: Any = None
    kept: list[dict] = field(default_factory=list)
    """Item outcomes (wire dicts) kept for the HTML page or the Markdown table, when they are written."""
    shard: dict | None = None
    """The report's ``shard`` block (``outputs.merge.shard_info``)."""
    spooled_baseline: tuple[frozenset, dict | None] | None = None
    """``(qa ids, baseline record)`` last written to the report spool's context."""
    floors: dict | None = None
    """The complete bounds the gate applies to this dataset: defaults, the manifest's ``floors``,
    then the ``--eval-floors`` file, key by key (``GateSession.run_floors``)."""
    _dataset: Any = None
    _raw: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._raw = _UNREAD

    def dataset(self) -> Any:
        """The loaded dataset (for items that never produced an outcome); loaded once, on demand."""
        if self._dataset is None:
            from ..core.dataset import load_dataset

            self._dataset = load_dataset(self.manifest)
        return self._dataset

    def _raw_manifest(self) -> Any:
        """The manifest's JSON, read and parsed once (None when it cannot be read)."""
        if self._raw is _UNREAD:
            try:
                self._raw = json.loads(self.manifest.read_bytes())
            except (OSError, ValueError):
                self._raw = None
        return self._raw

    def dataset_ids(self) -> list[str] | None:
        """Every item id of the manifest (selected or not), read from its JSON; None when it cannot be read."""
        try:
            return [str(item["id"]) for item in self._raw_manifest()["items"]]
        except (KeyError, TypeError):
            return None

    def manifest_floors(self) -> dict | None:
        """The manifest's own ``floors`` layer (``core.gate.check_floors``), or None.

        Raises:
            FloorsError: the manifest's floors are invalid (collection refuses such a
                manifest first, so this happens only when it changed during the run).
        """
        raw = self._raw_manifest()
        floors = raw.get("floors") if isinstance(raw, dict) else None
        if floors is None:
            return None
        from ..core.gate import check_floors

        return check_floors(floors, f"from the floors of {self.manifest}")

    def manifest_version(self) -> str:
        """The dataset version, from the items' reports, else from the manifest itself."""
        if self.version:
            return self.version
        try:
            return str(self._raw_manifest().get("version") or UNKNOWN)
        except AttributeError:
            return UNKNOWN


class GateSession:
    """Aggregates outcomes as reports arrive and decides the session's exit status (docs/gate.md)."""

    def __init__(self, config: pytest.Config, settings: Any) -> None:
        self.config = config
        self.settings = settings
        self.started_at_ms = int(time.time() * 1000)
        self.started = time.perf_counter()
        self.runs: dict[str, DatasetRun] = {}
        self.other_failures = 0
        self.usage_error: str | None = None
        self.interrupted_by: str | None = None
        self.finishing = False
        """True once the run loop is over (set by ``pytest_runtestloop``)."""
        self.stopped_by_groundeval = False
        """True when the session stopped because the harness stopped it (target down or gone),
        not because the user or CI interrupted it; such a run exits 1, not 2."""
        self.journal: Any = None
        self.collection_errors: list[str] = []
        """Node ids of the collectors that failed (a manifest that does not load, a test file that does not import)."""
        self.session_id = uuid.uuid4().hex
        """The session id: sent to the target (``GROUNDEVAL_RUN_ID``), the root of each dataset's run id."""
        config.stash[session_key] = self.session_id
        self.written: list[Path] = []
        self.output_errors: list[str] = []
        self.step_summary: Path | None = step_summary_path(settings)
        # What each item's outcome is kept for: everything for the HTML page, the failed and
        # errored ones for a Markdown table (it lists only those).
        self.keep = "all" if settings.html else "problems" if (settings.markdown or self.step_summary) else None
        self.exit_decided = False
        self.step_summary_error: str | None = None
        # Read and validate the floors and the baselines before any item runs: against a
        # paid target, a typo found after the run wastes the whole run.
        self.floors = self._load_floors()
        self.explicit_baseline = self._load_baseline(settings.baseline) if settings.baseline else None
        if self.explicit_baseline is not None and settings.dataset is not None:
            problem = self._baseline_version_problem(DatasetRun(key="", manifest=settings.dataset).manifest_version())
            if problem is not None:
                raise pytest.UsageError(problem)
        if settings.dataset is not None and settings.baseline is None:
            self._load_baseline(self._dataset_baseline(settings.dataset))
        self.history: Any = None
        if settings.history is not None:
            # Opened before any item runs: a database that cannot be opened is a usage error now.
            from .history import SessionHistory

            self.history = SessionHistory(
                settings.history, settings.label, self.session_id, self.started_at_ms, self._options()
            )
        self._previous_sigterm: Any = None
        self._install_sigterm()

    def _options(self) -> dict:
        """The options recorded with a run in the history (``config.options``; no secrets)."""
        s = self.settings
        return {
            "target": "url" if s.url else ("spawn" if s.spawn else "reference"),
            "url": s.url,
            "spawn": s.spawn,
            "concurrency": s.concurrency,
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
        }

    # -- SIGTERM ------------------------------------------------------------------

    def _install_sigterm(self) -> None:
        """Turn SIGTERM into KeyboardInterrupt, as pytest does SIGINT, unless someone else handles it."""
        try:
            if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
                return
            self._previous_sigterm = signal.signal(signal.SIGTERM, self._on_sigterm)
        except ValueError:  # not the main thread (pytest run from a thread): leave signals alone
            self._previous_sigterm = None

    def _on_sigterm(self, signum: int, frame: Any) -> None:
        # Once: a second SIGTERM ends the process the default way.
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if self.finishing:
            # Every selected item has run: the session is writing its report and tearing
            # down. Let it finish; an interrupt here would only cut the report short.
            return
        self.interrupted_by = "SIGTERM"
        raise KeyboardInterrupt("SIGTERM")

    # -- crashed xdist workers (plugin/crash.py) ----------------------------------------

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        if self.journal is None:
            from .crash import ControllerJournal

            factory = getattr(self.config, "_tmp_path_factory", None)  # pytest's tmp_path_factory
            self.journal = ControllerJournal(factory.getbasetemp() if factory is not None else None)
        from .crash import WORKERINPUT_KEY

        node.workerinput[WORKERINPUT_KEY] = str(self.journal.directory)
        # The session id: each worker's target calls carry it (docs/target-contract.md).
        node.workerinput[SESSION_WORKERINPUT] = self.session_id

    def _reported(self, nodeid: str) -> bool:
        node = eval_node_kind(nodeid)
        run = self.runs.get(nodeid.split("::")[0])
        return node is not None and run is not None and node[1] in run.seen

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        # Before xdist hands the dead worker's pending items to others: poison its in-flight ones.
        if error is not None and self.journal is not None:
            self.journal.worker_died(node.gateway.id, self._reported)

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: Any, sched: Any) -> None:
        if self.journal is None or eval_node_kind(crashitem) is None:
            return None
        worker = report.node.gateway.id
        in_flight = self.journal.in_flight.get(worker, [])
        if crashitem in in_flight:
            from .crash import crash_message

            report.longrepr = crash_message(worker, in_flight)
        elif crashitem in self.journal.done.get(worker, ()) and crashitem not in self.journal.rerun:
            # Its call had finished: not the culprit. Run it again, once, to report its real result.
            self.journal.rerun.add(crashitem)
            try:
                sched.mark_test_pending(crashitem)
            except NotImplementedError:  # a scheduler that cannot (--dist loadscope)
                report.longrepr = (
                    f"worker {worker} crashed after this item's target call had finished, but before its "
                    "result was reported; the result went with the worker"
                )
            else:
                report.outcome = "rerun"
        return None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Any:
        try:
            return (yield)
        finally:
            self.finishing = True

    @pytest.hookimpl
    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        # Under xdist a worker's session.shouldfail reaches the controller as an interrupt
        # whose message is that reason; the harness's own stops start with "groundeval:".
        if str(excinfo.value).startswith("groundeval:"):
            self.stopped_by_groundeval = True

    @pytest.hookimpl
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.journal is not None:
            self.journal.cleanup()
        if self.history is not None:
            self.history.close()
        if self._previous_sigterm is not None:
            try:
                if signal.getsignal(signal.SIGTERM) == self._on_sigterm:
                    signal.signal(signal.SIGTERM, self._previous_sigterm)
            except ValueError:
                pass

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
            nodeid.split("::")[0].rsplit("/", 1)[-1] == "manifest.json" for nodeid in self.collection_errors
        )

    def _run_for(self, key: str) -> DatasetRun:
        run = self.runs.get(key)
        if run is None:
            manifest = (self.config.rootpath / key).resolve()
            run = self.runs[key] = DatasetRun(key=key, manifest=manifest)
        return run

    def _expect(self, nodeids: Any) -> None:
        for nodeid in nodeids:
            node = eval_node_kind(nodeid)
            if node is not None:
                self._run_for(nodeid.split("::")[0]).expected.setdefault(node[1], node[0])

    @pytest.hookimpl
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # A plain run: session.items is the selection (after -k/-m deselection). Under
        # xdist the controller collects nothing; workers tell it what they collected.
        self._expect(item.nodeid for item in session.items)
        self._spool_collected()
        if self.history is not None:
            by_key: dict[str, list] = {}
            for item in session.items:
                eval_item = getattr(item, "eval_item", None)
                if eval_item is not None and eval_node_kind(item.nodeid) is not None:
                    by_key.setdefault(item.nodeid.split("::")[0], []).append(eval_item)
            for key, items in by_key.items():
                self.history.note_items(key, items)
            self._open_history_runs()

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self._expect(ids)
        self._spool_collected()
        if self.history is not None:
            self._open_history_runs()

    def _open_history_runs(self) -> None:
        """One history run per dataset, as soon as its items are known (docs/history.md)."""
        for run in self.runs.values():
            self.history.open(run, self.run_floors(run))

    # -- per report ---------------------------------------------------------------

    def _add(self, run: DatasetRun, outcome: ItemOutcome, wire: dict | None = None) -> None:
        if outcome.id in run.seen:
            return
        run.seen.add(outcome.id)
        if run.outcomes is None:
            # Imported on the first eval outcome, so runs without datasets pay nothing.
            from ..core.finalize import RunOutcomes

            run.outcomes = RunOutcomes()
        self._writer(run)
        run.outcomes.add(outcome)
        if run.writer is not None:
            run.writer.add_item(outcome)
        if self.history is not None:
            self.history.add(run, wire if wire is not None else outcome.to_wire(), self.run_floors(run))
        if self.keep == "all" or (self.keep == "problems" and not outcome.passed):
            run.kept.append(outcome.to_wire())
        if outcome.error is not None:
            run.errored += 1
            run.not_run += outcome.not_run
        elif not outcome.passed:
            run.failed += 1

    def _writer(self, run: DatasetRun) -> Any:
        if run.writer is None and self.settings.report is not None:
            from ..core.report import ReportWriter

            run.writer = ReportWriter(self.settings.report)
            run.writer.set_context(self._context(run))
        return run.writer

    def _context(self, run: DatasetRun) -> dict:
        """What ``groundeval report --recover`` needs to rebuild a report from the spool (docs/gate.md).

        The lineage and start, the bounds the gate applies, the baseline as the report
        records it, the manifest, and every collected item (id -> kind), so that a killed
        run's items that never ran are recovered as ``notRun`` errors.
        """
        return {
            "session": f"{self.started_at_ms}",
            "dataset": run.key,
            "manifest": str(run.manifest),
            "datasetVersion": run.version,
            "models": run.models,
            "startedAtMs": self.started_at_ms,
            "floors": self.run_floors(run),
            "baseline": self._spooled_baseline(run),
            "items": dict(run.expected),
        }

    def _spooled_baseline(self, run: DatasetRun) -> dict | None:
        """The baseline the gate will use, summarised over the collected qa items (``Report.baseline``).

        At the end of the session the gate summarises the same baseline over the qa items
        that reported, which are the collected ones; so a recovered report records what the
        finished run would have. None when the run has no baseline or it cannot be read
        yet (the end of the session reports that).
        """
        from ..core.kinds import get

        qa_ids = frozenset(item_id for item_id, kind in run.expected.items() if get(kind).uses_baseline)
        if run.spooled_baseline is not None and run.spooled_baseline[0] == qa_ids:
            return run.spooled_baseline[1]
        from ..core.gate import summarize_baseline

        if self.settings.baseline is not None:
            path, baseline = self.settings.baseline, self.explicit_baseline
        else:
            path = self._dataset_baseline(run.manifest)
            try:
                baseline = self._load_baseline(path)
            except pytest.UsageError:
                baseline = None
        record = summarize_baseline(baseline, qa_ids, _shown(path)).to_wire() if baseline is not None else None
        run.spooled_baseline = (qa_ids, record)
        return record

    def _spool_collected(self) -> None:
        """Open each dataset's report spool as soon as its items are known, recording them.

        A run killed before its first item finishes is then recoverable too: every
        collected item is recovered as never run (``groundeval report --recover``).
        """
        option = self.config.option
        if self.settings.report is None or option.collectonly or getattr(option, "setupplan", False):
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
        node = eval_node_kind(report.nodeid)
        if node is None:
            if report.failed:
                self.other_failures += 1
            return
        run = self._run_for(report.nodeid.split("::")[0])
        info = getattr(report, RUN_ATTR, None)
        if info is not None:
            self._note_run(run, info)
        from ..core.outcome import ItemOutcome  # only once eval items report: runs without them stay light

        wire = getattr(report, OUTCOME_ATTR, None)
        if wire is not None and (report.when == "call" or report.failed):
            self._add(run, ItemOutcome.model_validate(wire), wire)
        elif report.failed and report.when != "teardown":
            # No outcome: a crashed worker's synthetic report, or a fixture that failed
            # before the item could run. It is an error, counted, never dropped.
            kind, item_id = node
            message = str(report.longrepr).strip().splitlines()
            self._add(run, self._errored(run, kind, item_id, (message[-1] if message else "item could not be run")[:500]))
        elif report.failed:
            self.other_failures += 1

    def _errored(self, run: DatasetRun, kind: str, item_id: str, error: str, *, not_run: bool = False) -> ItemOutcome:
        """The errored outcome of an item that produced none, as its kind counts an error.

        A qa item keeps its expected evidence in the recall denominator: the dataset is
        loaded to learn it (once, and only when some item produced no outcome).
        """
        from ..core.kinds import errored_outcome

        try:
            items_by_id = run.dataset().by_id
        except Exception:  # the dataset no longer loads: the error still counts, with what is known
            items_by_id = None
        return errored_outcome(items_by_id, kind, item_id, error, not_run=not_run)

    def run_floors(self, run: DatasetRun) -> dict:
        """The complete bounds the gate applies to ``run``'s dataset (docs/gate.md): the defaults,
        then the manifest's ``floors``, then the ``--eval-floors`` file, merged key by key.

        Raises:
            pytest.UsageError: the manifest's floors are invalid (it changed after collection).
        """
        if run.floors is None:
            from ..core.gate import FloorsError, merge_floors

            try:
                run.floors = merge_floors(run.manifest_floors(), self.floors)
            except FloorsError as exc:
                raise pytest.UsageError(str(exc)) from None
        return run.floors

    def _load_floors(self) -> Any:
        """The floors file as one layer (``core.gate.read_floors_file``), validated; None without one.

        Raises:
            pytest.UsageError: the file is invalid (the message names it).
        """
        if self.settings.floors is None:
            return None
        from ..core.gate import FloorsError, read_floors_file

        try:
            return read_floors_file(self.settings.floors)
        except FloorsError as exc:
            raise pytest.UsageError(str(exc)) from None

    def _baseline_version_problem(self, dataset_version: str) -> str | None:
        """Why the explicit ``--eval-baseline`` cannot serve ``dataset_version``, or None (docs/gate.md)."""
        from ..core.gate import baseline_version_problem

        if self.explicit_baseline is None or dataset_version == UNKNOWN:
            return None
        return baseline_version_problem(
            self.explicit_baseline.dataset_version, dataset_version, _shown(self.settings.baseline)
        )

    @staticmethod
    def _load_baseline(path: Path | None) -> Any:
        """The baseline report at ``path``, validated; None without one.

        Raises:
            pytest.UsageError: the file is not a valid report (the message names it).
        """
        if path is None:
            return None
        from ..core.report import ReportError, read_report

        try:
            return read_report(path)
        except ReportError as exc:
            raise pytest.UsageError(str(exc)) from None

    @staticmethod
    def _dataset_baseline(manifest: Path) -> Path | None:
        """``baseline.json`` beside the dataset's manifest, when the dataset ships one.

        A dataset that commits the report of a known-good run arms the recall floor
        for everyone who runs it (docs/gate.md); ``--eval-baseline`` overrides it.
        """
        candidate = manifest.parent / BASELINE_NAME
        return candidate if candidate.is_file() else None

    def _note_run(self, run: DatasetRun, info: dict) -> None:
        if run.version is None:
            run.version = info.get("datasetVersion")
            run.models = info.get("models")
            if run.writer is not None:
                run.writer.set_context(self._context(run))
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
        missing = [(item_id, kind) for item_id, kind in run.expected.items() if item_id not in run.seen]
        for item_id, kind in missing:
            crash = self.journal.crash_of(f"{run.key}::{kind}::{item_id}") if self.journal is not None else None
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
        if not self.sharded:
            return not run.gate.passed
        return any(c.outcome == "FAIL" and c.metric in SHARD_DECIDING for c in run.gate.checks)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        # First, so that the gate reaches junitxml's file before it is written; the exit
        # status is decided last (``pytest_sessionfinish_exit_status``).
        if self.config.option.collectonly or getattr(self.config.option, "setupplan", False):
            return
        if not self.runs and self.settings.dataset is not None and self.settings.report is not None:
            # Interrupted before collection finished: still write a (empty, interrupted) report.
            key = self._dataset_key(self.settings.dataset)
            if key is not None:
                self._run_for(key)
        if not self.runs:
            return
        from ..core.finalize import RunFlags, RunOutcomes, finalize_run

        for run in self.runs.values():
            problem = self._baseline_version_problem(run.manifest_version())
            if problem is None:
                try:
                    self.run_floors(run)
                except pytest.UsageError as exc:
                    problem = str(exc)
            if problem is not None:
                self.usage_error = problem
                session.exitstatus = pytest.ExitCode.USAGE_ERROR
                self._abort_writers()
                return
        interrupted = bool(
            exitstatus == pytest.ExitCode.INTERRUPTED
            or session.shouldstop
            or session.shouldfail
            or self.interrupted_by
            or self._collection_stopped()
        )
        reason = (
            str(session.shouldfail or session.shouldstop or "")
            or (f"the run was stopped by {self.interrupted_by}" if self.interrupted_by else "")
            or (self.journal is not None and self.journal.stop_reason() or "")
            or ("the run was interrupted" if interrupted else "the session ended before it ran")
        )
        for run in self.runs.values():
            self._account_for_unreported(run, reason)
            if run.not_run:
                interrupted = True
        for run in self.runs.values():
            if run.outcomes is None:
                run.outcomes = RunOutcomes()
            if self.settings.baseline is not None:
                run.baseline_path, run.baseline = self.settings.baseline, self.explicit_baseline
            else:
                run.baseline_path = self._dataset_baseline(run.manifest)
                try:
                    run.baseline = self._load_baseline(run.baseline_path)
                except pytest.UsageError as exc:
                    self.usage_error = str(exc)
                    session.exitstatus = pytest.ExitCode.USAGE_ERROR
                    self._abort_writers()
                    return
            # The baseline as the recall check compares with it is recorded in the report so
            # that `groundeval gate --report` re-applies the same check (docs/gate.md).
            end = finalize_run(
                run.outcomes,
                floors=self.run_floors(run),
                baseline=run.baseline if run.baseline_path is not None else None,
                baseline_path=_shown(run.baseline_path) if run.baseline_path is not None else None,
                baseline_ids=run.outcomes.baseline_ids,
                dataset_version=run.manifest_version(),
                models=run.models or {"generate": UNKNOWN, "embed": UNKNOWN},
                gated=not self.settings.no_gate,
                flags=RunFlags(interrupted=interrupted),
            )
            run.metrics, run.gate, run.baseline_record = end.metrics, end.gate, end.baseline
            run.shard = self._shard_block(run)
        parts = self._parts(interrupted)
        self._write_report(parts)
        self._write_outputs(parts)
        self._log_gates_to_junit()
        if self.history is not None:
            self.history.finish(self.runs.values(), self.run_floors, interrupted)
        self.exit_decided = True

    @pytest.hookimpl(trylast=True, specname="pytest_sessionfinish")
    def pytest_sessionfinish_exit_status(self, session: pytest.Session, exitstatus: int) -> None:
        """The session's exit status, decided last (pytest reads only ``pytest_*`` names as hooks)."""
        kept = (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR)
        if self._collection_stopped() and exitstatus not in kept and not self.usage_error:
            session.exitstatus = pytest.ExitCode.INTERRUPTED  # a manifest that does not load: 2, with or without xdist
            return
        if not self.exit_decided:
            return
        if exitstatus == pytest.ExitCode.INTERRUPTED and self.stopped_by_groundeval and not self.interrupted_by:
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

    def _shard_block(self, run: DatasetRun) -> dict | None:
        """The ``shard`` block of ``run``'s report: ``--eval-shard K/N``, or 1/1 for an unsharded run."""
        ids = run.dataset_ids()
        if ids is None:
            return None
        from ..outputs.merge import shard_info

        index, count = self.settings.shard or (1, 1)
        return shard_info(ids, index, count)

    def _dataset_key(self, manifest: Path) -> str | None:
        import os

        try:
            return os.path.relpath(manifest, self.config.rootpath).replace(os.sep, "/")
        except ValueError:
            return None

    def _abort_writers(self) -> None:
        for run in self.runs.values():
            if run.writer is not None:
                run.writer.abort()

    def _parts(self, interrupted: bool) -> list[tuple[DatasetRun, dict]]:
        """Per dataset, the report's header fields (``ReportWriter.finish``'s keyword arguments)."""
        from ..core.report import environment_info

        environment = environment_info()
        duration_ms = int((time.perf_counter() - self.started) * 1000)
        parts = []
        for run in self.runs.values():
            parts.append(
                (
                    run,
                    dict(
                        dataset_version=run.manifest_version(),
                        models=run.models or {"generate": UNKNOWN, "embed": UNKNOWN},
                        started_at_ms=self.started_at_ms,
                        duration_ms=duration_ms,
                        metrics=run.metrics,
                        gate=run.gate,
                        environment=environment,
                        interrupted=interrupted,
                        floors=self.run_floors(run),
                        shard=run.shard,
                        baseline=run.baseline_record,
                    ),
                )
            )
        return parts

    def _write_report(self, parts: list[tuple[DatasetRun, dict]]) -> None:
        if self.settings.report is None:
            return
        from ..core.report import write_session

        writers = []
        for run, fields in parts:
            writer = self._writer(run)
            writer.set_context(self._context(run))
            writers.append((writer, fields))
        write_session(self.settings.report, writers)

    def _write_outputs(self, parts: list[tuple[DatasetRun, dict]]) -> None:
        """The HTML page, the Markdown table and the step summary, from the same data as the report (docs/ci.md)."""
        if self.keep is None:
            return
        from ..core.report import Report
        from ..outputs.markdown import render_markdown
        from ..outputs.write import OutputError, write_text_atomic

        reports = []
        for run, fields in parts:
            wire = Report(**fields).to_wire()
            wire["items"] = run.kept
            reports.append(wire)
        titled = len(reports) > 1
        markdown = "\n".join(
            render_markdown(r, title=f"groundeval {r['datasetVersion']}" if titled else "groundeval") for r in reports
        )
        if self.settings.html is not None:
            if titled:  # refused before the run when the paths showed it (hooks.py); never a page of one of them
                self.output_errors.append(
                    f"--eval-html: this run gated {len(reports)} datasets and a page shows one; nothing written"
                )
            else:
                from ..outputs.html import render_html

                self._write(write_text_atomic, self.settings.html, lambda: render_html(reports[0]), OutputError)
        if self.settings.markdown is not None:
            self._write(write_text_atomic, self.settings.markdown, lambda: markdown, OutputError)
        if self.step_summary is not None:
            try:
                with open(self.step_summary, "a", encoding="utf-8") as out:
                    out.write(markdown + "\n")
            except OSError as exc:  # the job summary is a courtesy: a warning, not a failed gate
                self.step_summary_error = f"{STEP_SUMMARY_ENV} ({self.step_summary}): cannot append: {exc}"

    def _write(self, write: Any, path: Path, text: Any, error: type[Exception]) -> None:
        try:
            self.written.append(write(path, text()))
        except (error, OSError) as exc:
            self.output_errors.append(f"cannot write {_shown(path)}: {exc}")

    def _log_gates_to_junit(self) -> None:
        """Each dataset's gate as a test case ``<manifest>::gate`` of the JUnit XML (``--junitxml``).

        Given to pytest's junitxml plugin alone, as the reports of a test's call and
        teardown, before it writes its file: the terminal's counts and ``--lf`` are
        not changed by it. The case fails when the gate fails the session; a run
        measured with ``--eval-no-gate``, and a shard's partial gate that fails only on
        its metrics, are skipped cases saying so.
        """
        from _pytest.junitxml import xml_key

        xml = self.config.stash.get(xml_key, None)
        if xml is None:
            return
        from ..core.gate import verdict
        from ..core.render import format_check

        for run in self.runs.values():
            if run.gate is None:
                continue
            nodeid = f"{run.key}::gate"
            lines = [format_check(check) for check in run.gate.checks]
            props: list[tuple[str, object]] = [
                ("datasetVersion", run.manifest_version()),
                ("models", f"generate={(run.models or {}).get('generate', UNKNOWN)} embed={(run.models or {}).get('embed', UNKNOWN)}"),
                ("gate", verdict(run.gate)),
                ("items", len(run.seen)),
                ("failed", run.failed),
                ("errors", run.errored),
            ]
            if run.shard is not None:
                props.append(("shard", f"{run.shard['index']}/{run.shard['count']}"))
            props += [(f"check.{c.metric}", f"{c.outcome} {c.reason}") for c in run.gate.checks]
            longrepr: Any = None
            if self.gate_fails_session(run):
                outcome = "failed"
                longrepr = f"gate FAIL for dataset {run.manifest_version()}\n" + "\n".join(lines)
            elif not run.gate.gated:
                # Measured without gating: the case neither passes nor fails (docs/gate.md, --eval-no-gate).
                outcome = "skipped"
                longrepr = (run.key, None, "not gated (--eval-no-gate): metrics measured and reported, no bound applied")
            elif not run.gate.passed:
                outcome = "skipped"
                index, count = self.settings.shard or (1, 1)
                longrepr = (
                    run.key,
                    None,
                    f"partial gate of shard {index}/{count} FAIL; the merged gate decides (groundeval merge)",
                )
            else:
                outcome = "passed"
            for when, result, text in (("call", outcome, longrepr), ("teardown", "passed", None)):
                report = pytest.TestReport(
                    nodeid=nodeid,
                    location=(run.key, None, f"{run.key}::gate"),
                    keywords={},
                    outcome=result,
                    longrepr=text,
                    when=when,
                    sections=[("Captured stdout call", "\n".join(lines) + "\n")] if when == "call" else [],
                    duration=0.0,
                    user_properties=props if when == "teardown" else [],
                )
                setattr(report, GATE_ATTR, True)
                xml.pytest_runtest_logreport(report)

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        tr = terminalreporter
        if self.usage_error:
            tr.write_sep("=", "groundeval gate", red=True)
            tr.write_line(f"groundeval: {self.usage_error}")
            return
        runs = [run for run in self.runs.values() if run.gate is not None]
        if not runs:
            return
        from ..core.render import format_check, unbounded_lines

        for run in runs:
            self._summarise(tr, run, format_check, unbounded_lines, titled=len(runs) > 1)
        if self.settings.report is not None:
            tr.write_line(f"report: {_shown(self.settings.report)}")
        if self.history is not None:
            self._summarise_history(tr, runs)
        for path in self.written:
            tr.write_line(f"{'html' if path == self.settings.html else 'markdown'}: {_shown(path)}")
        for message in self.output_errors:
            tr.write_line(f"groundeval: {message}", red=True)
        if self.step_summary_error:
            tr.write_line(f"warning: {self.step_summary_error}", yellow=True)
        from ..core.gate import NOT_GATED, verdict

        passed = all(run.gate.passed for run in runs)
        gated = all(run.gate.gated for run in runs)
        if len(runs) > 1:
            failing = [run.manifest_version() for run in runs if not run.gate.passed]
            word = ("PASS" if gated else NOT_GATED) if passed else f"FAIL ({', '.join(failing)})"
            tr.write_line(f"gate: {word}", green=passed and gated, yellow=passed and not gated, red=not passed, bold=True)
        else:
            word = verdict(runs[0].gate)
            tr.write_line(f"gate: {word}", green=passed and gated, yellow=passed and not gated, red=not passed, bold=True)
        if not gated:
            tr.write_line(
                "note: --eval-no-gate: metrics measured and reported, no quality bound applied; "
                "only errored items fail the run (docs/gate.md)",
                yellow=True,
            )
        if self.history is not None and self.history.failure is not None:
            from .history import HISTORY_EXIT

            tr.write_line(HISTORY_EXIT, red=True, bold=True)
        if self.sharded:
            index, count = self.settings.shard
            tr.write_line(
                f"note: shard {index}/{count}: this gate covers the shard's items only; errors fail the shard, "
                "its metrics do not: groundeval merge gates the whole run (docs/ci.md)",
                yellow=True,
            )

    def _summarise_history(self, tr: Any, runs: list[DatasetRun]) -> None:
        from ..history.urls import describe_url

        history = self.history
        if history.failure is not None:
            from .history import HISTORY_FAILED

            tr.write_line(HISTORY_FAILED + history.failure, red=True)
            return
        where = describe_url(history.writer.url)
        for run in runs:
            tr.write_line(f"history: run {history.run_id(run.key)} ({run.manifest_version()}) in {where}")

    def _summarise(self, tr: Any, run: DatasetRun, format_check: Any, unbounded_lines: Any, *, titled: bool) -> None:
        m = run.models or {}
        title = f"groundeval gate: {run.manifest_version()}" if titled else "groundeval gate"
        tr.write_sep("=", title, bold=True)
        items = len(run.seen)
        tr.write_line(
            f"dataset {run.manifest_version()}  "
            f"lineage generate={m.get('generate', UNKNOWN)} embed={m.get('embed', UNKNOWN)}  "
            f"items {items} (failed {run.failed}, errors {run.errored})"
        )
        if run.lineage_conflict:
            tr.write_line(f"warning: {run.lineage_conflict}", yellow=True)
        for check in run.gate.checks:
            tr.write_line(format_check(check), red=check.outcome == "FAIL", green=check.outcome == "PASS")
        for line in unbounded_lines(run.metrics, run.gate):
            tr.write_line(line)
        from ..core.render import citation_lines, judge_problem_lines

        for line in citation_lines(run.metrics, self.settings.judge_model):
            tr.write_line(line)
        for line in judge_problem_lines(run.metrics):
            tr.write_line(line, red=True)
        if run.not_run:
            tr.write_line(
                f"note: {_plural(run.not_run, 'item')} of {items} never ran; "
                "they count as errors (notRun), never dropped",
                yellow=True,
            )
        if run.errored - run.not_run:
            tr.write_line(
                f"note: {_plural(run.errored - run.not_run, 'item')} could not be run; they stay in the metrics' "
                "denominators as misses (recall, falsehoodRejection, temporalAccuracy), never dropped",
                yellow=True,
            )
        if run.baseline_path is not None:
            tr.write_line(f"baseline: {_shown(run.baseline_path)}")
        if titled:
            from ..core.gate import verdict

            tr.write_line(f"gate {run.manifest_version()}: {verdict(run.gate)}",
                          green=run.gate.passed and run.gate.gated, red=not run.gate.passed)
