"""The controller's run history (docs/history.md): one history run per dataset of the session.

Used only when ``--eval-history`` is given. ``SessionHistory`` opens the
database before any item runs (a database that cannot be opened is a usage
error, found before a paid target is called), records each outcome as the
controller aggregates it, in batches (``history.writer.RunRecorder``), and
finishes each run at the end of the session with its metrics, gate and the
interrupted flag. A killed session keeps every batch committed before the kill
and its runs have no finish time.

An item record is the outcome's wire dict plus, when the outcome does not
carry them itself (``extra.question``, ``extra.answer``), what the dataset
says about the item: its tags, its question and, for a recorded citation
answer, that answer. The evidence and claims the outcome carries
(``extra.evidence``, ``extra.claims``) become the compact trace. Under xdist
the dataset is loaded once on the controller for this; in a plain run the
collected items are used as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pytest

from ..core.confidence import DEFAULT_CONFIDENCE
from ..core.contract import dataset_run_id
from ..core.environment import environment_info
from ..core.kinds.base import ItemBase
from ..history.errors import HistoryError
from ..history.records import compact_trace
from ..history.writer import HistoryWriter, RunRecorder
from .state import DatasetRun

HISTORY_FAILED = "history: recording failed, the history of this run is incomplete: "
"""Prefix of the summary line when a batch could not be written (the gate's checks are unaffected)."""

HISTORY_EXIT = (
    "exit status 1: the run could not be recorded in the history, so the session fails whatever the gate says "
    "(docs/guarantees.md)"
)
"""The summary line after the gate verdict when the history could not be written: why the session exits 1."""


def item_context(item: ItemBase) -> dict[str, Any]:
    """What the dataset says about one item for its history row: ``tags``, ``question``, recorded ``answer``."""
    context: dict[str, Any] = {"tags": list(getattr(item, "tags", None) or [])}
    question = getattr(item, "question", None)
    if isinstance(question, str):
        context["question"] = question
    response = getattr(item, "response", None)
    answer = getattr(response, "answer", None)
    if isinstance(answer, str):
        context["answer"] = answer
    return context


class SessionHistory:
    """Writes one session's runs to a history database (docs/history.md).

    Args:
        url: The canonical history URL (``Settings.history``).
        label: ``--eval-label``, or None.
        session_id: The session id; each dataset's run id is ``dataset_run_id(session_id, key)``.
        started_ms: When the session started (epoch ms), the start of every run.
        options: The run's options as recorded in ``config.options``.
        confidence_level: The intervals' level, recorded as ``config.confidenceLevel``.
        gate_on: What the bounds compare with, recorded as ``config.gateOn``.

    Raises:
        pytest.UsageError: the database cannot be opened (unreachable, psycopg missing,
            a newer schema); the message names it with its password masked.
    """

    def __init__(
        self,
        url: str,
        label: str | None,
        session_id: str,
        started_ms: int,
        options: Mapping[str, Any],
        confidence_level: float = DEFAULT_CONFIDENCE,
        gate_on: str = "point",
    ) -> None:
        try:
            self.writer = HistoryWriter.open(url)
        except HistoryError as exc:
            raise pytest.UsageError(f"--eval-history: {exc}") from None
        self.label = label
        self.session_id = session_id
        self.started_ms = started_ms
        self.options = dict(options)
        self.confidence_level = confidence_level
        self.gate_on = gate_on
        self.recorders: dict[str, RunRecorder] = {}
        """Dataset key -> its ``RunRecorder``."""
        self.contexts: dict[str, dict[str, dict[str, Any]]] = {}
        """Dataset key -> item id -> ``item_context``."""
        self.failure: str | None = None
        self._environment: dict[str, Any] | None = None

    def run_id(self, key: str) -> str:
        """The history run id of the dataset whose node ids start with ``key``."""
        return dataset_run_id(self.session_id, key)

    def note_items(self, key: str, items: Iterable[ItemBase]) -> None:
        """Remember the context of collected dataset items (a plain run: no dataset load needed)."""
        self.contexts.setdefault(key, {}).update((item.id, item_context(item)) for item in items)

    def _contexts(self, run: DatasetRun) -> dict[str, dict[str, Any]]:
        found = self.contexts.get(run.key)
        if found is None:
            try:
                found = {item.id: item_context(item) for item in run.dataset().items}
            except Exception:  # noqa: BLE001 - the dataset no longer loads: the outcomes are still recorded
                found = {}
            self.contexts[run.key] = found
        return found

    def _config(self, run: DatasetRun, floors: Mapping[str, Any] | None) -> dict[str, Any]:
        if self._environment is None:
            self._environment = environment_info()
        env = self._environment
        return {
            "session": self.session_id,
            "dataset": {"path": str(run.manifest), "key": run.key, "version": run.manifest_version()},
            "models": dict(run.models or {"generate": "unknown", "embed": "unknown"}),
            "judgeModel": self.options.get("judgeModel"),
            "scorerModel": self.options.get("scorerModel"),
            "gitCommit": env.get("gitCommit"),
            "pluginVersion": env.get("pluginVersion"),
            "environment": env,
            "floors": None if floors is None else dict(floors),
            "prices": self.options.get("prices"),
            "options": self.options,
            "confidenceLevel": self.confidence_level,
            "gateOn": self.gate_on,
        }

    def _recorder(self, run: DatasetRun, floors: Mapping[str, Any] | None) -> RunRecorder:
        recorder = self.recorders.get(run.key)
        if recorder is None:
            recorder = self.recorders[run.key] = RunRecorder(
                self.writer, self._config(run, floors), label=self.label, run_id=self.run_id(run.key),
                started_ms=self.started_ms,
            )  # fmt: skip
        return recorder

    def open(self, run: DatasetRun, floors: Mapping[str, Any] | None) -> None:
        """Record the start of ``run``'s history run (once); never raises (see ``add``)."""
        if self.failure is None:
            try:
                self._recorder(run, floors)
            except Exception as exc:  # noqa: BLE001 - reported in the summary
                self.failure = f"{type(exc).__name__}: {exc}"

    def add(self, run: DatasetRun, wire: Mapping[str, Any], floors: Mapping[str, Any] | None) -> None:
        """Record one outcome (its wire dict) of ``run``; never raises.

        A failure (the database went away, a record it refuses) stops the recording
        and is kept in ``failure`` for the summary.
        """
        if self.failure is not None:
            return
        record = dict(wire)
        extra = wire.get("extra") or {}
        # Each item is recorded once (the controller drops repeats): its context is let go now.
        context = self._contexts(run).pop(wire["id"], None)
        if context:
            for key, value in context.items():
                if key not in extra:
                    record[key] = value
        if "trace" not in extra and ("evidence" in extra or "claims" in extra):
            record["trace"] = compact_trace(extra)
        try:
            self._recorder(run, floors).add(record)
        except Exception as exc:  # noqa: BLE001 - reported in the summary, never a crash of the run
            self.failure = f"{type(exc).__name__}: {exc}"

    def finish(
        self, runs: Iterable[DatasetRun], floors_of: Callable[[DatasetRun], Mapping[str, Any] | None], interrupted: bool
    ) -> None:
        """Record each run's end: metrics, gate, interrupted, and what the session learnt (lineage, baseline).

        A dataset whose items never reported still gets its run (with no items), recorded
        with ``floors_of(run)``, the bounds of its own dataset.
        """
        for run in runs:
            if self.failure is not None:
                break
            try:
                recorder = self._recorder(run, floors_of(run))
                recorder.finish(
                    metrics=run.metrics.to_wire() if run.metrics is not None else None,
                    gate=run.gate.to_wire() if run.gate is not None else None,
                    interrupted=interrupted,
                    confidence=(
                        {name: None if i is None else i.to_wire() for name, i in run.confidence.items()}
                        if run.confidence is not None
                        else None
                    ),
                    config_update={
                        "models": dict(run.models or {"generate": "unknown", "embed": "unknown"}),
                        "dataset": {"path": str(run.manifest), "key": run.key, "version": run.manifest_version()},
                        "baseline": run.baseline_record.to_wire() if run.baseline_record is not None else None,
                    },
                )
            except Exception as exc:  # noqa: BLE001 - reported in the summary
                self.failure = self.failure or f"{type(exc).__name__}: {exc}"

    def close(self) -> None:
        """Stop every writer thread (committing what was added) and close the connection."""
        for recorder in self.recorders.values():
            try:
                recorder.close()
            except Exception:  # noqa: BLE001 - closing after a failure
                pass
        self.writer.close()
