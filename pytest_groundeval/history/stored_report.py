"""A stored run as a report (docs/history.md), so ``groundeval gate --history RUN`` gates it as ``--report`` does,
and the earlier runs a run's HTML report shows trends over (docs/ci.md, "HTML report")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError
from sqlalchemy import select

from ..core.cost import price_metrics
from ..core.gate import GateResult
from ..core.kinds.extensions import unregistered_names
from ..core.metrics import compute_metrics
from ..core.report import Report
from ..outputs.write import OutputError, write_outputs
from . import schema
from .errors import HistoryError
from .queries import list_runs, recorded_confidence, recorded_prices, stored_outcomes
from .store import HistoryStore


def report_from_history(store: HistoryStore, ref: str) -> Report:
    """The ``core.report.Report`` of a stored run: its metrics, confidence intervals, gate, lineage, floors,
    baseline and items.

    A run with no finish time (killed, or still running) is ``interrupted``, and its
    metrics are computed from the items it recorded, so the gate fails it as it fails
    an interrupted report.

    Args:
        ref: A run reference (full id, unique prefix, ``latest``, ``latest~N``).

    Raises:
        HistoryError: ``ref`` names no run, or what the run stored is not a valid report.
    """
    run_id = store.resolve_run(ref)
    runs = schema.runs
    with store.engine.connect() as conn:
        run = conn.execute(select(runs).where(runs.c.id == run_id)).mappings().one()
    config: Mapping[str, Any] = run["config"] or {}
    outcomes = stored_outcomes(store, run_id)
    interrupted = run["finished_ms"] is None or bool(run["interrupted"])
    models = config.get("models") or {"generate": "unknown", "embed": "unknown"}
    if run["metrics"] is not None:
        metrics = run["metrics"]
    else:  # an unfinished run: its items' metrics, priced as the run would have priced them
        prices = recorded_prices(config)
        metrics = price_metrics(compute_metrics(outcomes), prices, models.get("generate")).to_wire()
    gate = run["gate"] if run["gate"] is not None else GateResult(passed=False, checks=[]).to_wire()
    environment = config.get("environment") or {"pluginVersion": config.get("pluginVersion") or "unknown",
                                                 "python": "unknown", "platform": "unknown",
                                                 "gitCommit": config.get("gitCommit")}  # fmt: skip
    end = run["finished_ms"] if run["finished_ms"] is not None else run["started_ms"]
    wire = {
        "datasetVersion": run["dataset_version"] or "unknown",
        "models": models,
        "startedAtMs": run["started_ms"],
        "durationMs": max(0, end - run["started_ms"]),
        "metrics": metrics,
        "confidence": run["confidence"],
        "confidenceLevel": recorded_confidence(config, run_id)[0],
        "gate": gate,
        "environment": environment,
        "interrupted": interrupted,
        "floors": config.get("floors"),
        "baseline": config.get("baseline"),
        "repeat": (config.get("options") or {}).get("repeat") or 1,
        "prices": config.get("prices"),
        "items": outcomes,
    }
    try:
        return Report.model_validate(wire)
    except ValidationError as exc:
        why = unregistered_names(exc.errors()) or exc.errors()[0]["msg"]
        raise HistoryError(f"run {run_id} in the history is not a valid report: {why}") from None


TREND_RUNS = 20
"""Earlier runs of the same dataset and lineage a run's HTML report shows trends over."""


def earlier_runs(
    store: HistoryStore,
    dataset_version: str | None,
    models: Mapping[str, Any] | None,
    until_ms: int,
    *,
    exclude: str | None = None,
) -> list[dict[str, Any]]:
    """The trend of the HTML report: earlier finished runs of one dataset version and lineage.

    Up to ``TREND_RUNS`` runs started at or before ``until_ms`` (epoch ms), ``exclude``
    (a run id) left out, oldest first (``dataset_version`` None: of any version), each ``{"id", "startedAt", "metrics"}`` as
    ``outputs.html.render_html`` takes its ``history`` (docs/ci.md, "HTML report").

    Raises:
        HistoryError: a stored run is not a valid report.
    """
    earlier = []
    for row in list_runs(store, dataset=dataset_version, limit=None):
        if row.id == exclude or row.finished_ms is None:
            continue
        past = report_from_history(store, row.id).to_wire()
        if past.get("models") == models and past.get("startedAtMs", 0) <= until_ms:
            earlier.append({"id": row.id, "startedAt": row.started_ms, "metrics": past["metrics"]})
        if len(earlier) >= TREND_RUNS:
            break
    return list(reversed(earlier))


def stored_report_at(url: str | None, ref: str) -> Report:
    """``report_from_history`` on the database ``url`` names, opened for it and closed after.

    Args:
        url: A history URL or shorthand (``urls.resolve_url``); None is the default database.
        ref: A run reference (full id, unique prefix, ``latest``, ``latest~N``).

    Raises:
        HistoryError: the database cannot be opened, ``ref`` names no run, or the run is not a valid report.
    """
    with HistoryStore.open(url, create=False) as store:
        return report_from_history(store, ref)


def trends_at(
    url: str, dataset_version: str | None, models: Mapping[str, Any] | None, until_ms: int
) -> list[dict[str, Any]]:
    """``earlier_runs`` on the database ``url`` names, opened for it and closed after.

    Raises:
        HistoryError: the database cannot be opened or a stored run is not a valid report.
    """
    with HistoryStore.open(url, create=False) as store:
        return earlier_runs(store, dataset_version, models, until_ms)


def write_run_html(store: HistoryStore, ref: str, out: str) -> str:
    """Write the HTML report of stored run ``ref`` to ``out``, with trends over earlier runs.

    The trends and the two-run comparison use up to ``TREND_RUNS`` runs before it of the
    same dataset version and model lineage, oldest first (docs/ci.md, "HTML report"); the
    comparison sets the run against the one before it, and says so when there is none.

    Raises:
        HistoryError: ``ref`` names no run, or the file cannot be written.
    """
    report = report_from_history(store, ref)
    run_id = store.resolve_run(ref)
    wire = report.to_wire()
    started = wire.get("startedAtMs", 0)
    # The page adds the run itself as "this run": the history it is given holds only the runs before it,
    # so its two-run comparison sets the run against the one before it, never against itself.
    trend = earlier_runs(store, report.dataset_version, wire.get("models"), started, exclude=run_id)
    try:
        (path,) = write_outputs(wire, html=out, history=trend)
    except OutputError as exc:
        raise HistoryError(str(exc)) from None
    return str(path)
