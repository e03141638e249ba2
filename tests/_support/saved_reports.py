"""Fixtures for the outputs and merge tests: real saved reports, and shard reports made from them.

``data/report-v1.json.gz`` is the report of a real run of datasets/v1 (version v1, 621
items) against the reference target and mock (``--eval-report``), and
``data/baseline-v1.json.gz`` the baseline that run compared with (datasets/v1/baseline.json
of that version); ``data/report-citation-smoke.json``
that of datasets/citation-smoke. Regenerate both after a report schema change with
the commands in ``data/README.md``.
"""

from __future__ import annotations

import copy
import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_groundeval.core.gate import DEFAULT_FLOORS, evaluate_gate, summarize_baseline
from pytest_groundeval.core.metrics import compute_metrics
from pytest_groundeval.core.report import parse_report
from pytest_groundeval.core.sharding import shard_info, shard_of

DATA = Path(__file__).resolve().parents[1] / "outputs" / "data"
REPO = Path(__file__).resolve().parents[2]
V1_BASELINE = DATA / "baseline-v1.json.gz"


def _load(name: str) -> dict[str, Any]:
    path = DATA / name
    raw = gzip.decompress(path.read_bytes()) if name.endswith(".gz") else path.read_bytes()
    report = json.loads(raw)
    parsed = parse_report(report, name)  # a stale fixture fails here, loudly, after a schema change
    # Metrics added since the run was recorded (null when not measured, e.g. a jury's) read as any reader reads them.
    report["metrics"] = parsed.metrics.to_wire()
    return report


@pytest.fixture(scope="session")
def _v1() -> dict[str, Any]:
    return _load("report-v1.json.gz")


@pytest.fixture
def v1_report(_v1: dict[str, Any]) -> dict[str, Any]:
    """The v1 run's report (wire dict), a fresh copy per test; it ran with the default floors."""
    report = copy.deepcopy(_v1)
    report["floors"] = dict(DEFAULT_FLOORS)
    return report


@pytest.fixture
def citation_report() -> dict[str, Any]:
    """The citation-smoke run's report (wire dict): four citation items, two failing."""
    return _load("report-citation-smoke.json")


@pytest.fixture(scope="session")
def v1_baseline():
    """The baseline the v1 run compared recall with, as a ``Report``."""
    return parse_report(json.loads(gzip.decompress(V1_BASELINE.read_bytes())), V1_BASELINE.name)


@pytest.fixture
def v1_baseline_path(tmp_path: Path) -> Path:
    """The v1 run's baseline as a plain JSON file, for the command-line tests."""
    path = tmp_path / "baseline-v1.json"
    path.write_bytes(gzip.decompress(V1_BASELINE.read_bytes()))
    return path


@pytest.fixture
def make_shards(v1_baseline) -> Callable[..., list[dict[str, Any]]]:
    """Split a whole run's report into the N reports its shards would have written.

    Each shard gets the items ``shard_of`` assigns it, its own metrics and gate
    (same floors, same baseline), and the ``shard`` and ``baseline`` blocks the plugin records.
    """

    def make(report: dict[str, Any], count: int, baseline=v1_baseline) -> list[dict[str, Any]]:
        ids = [item["id"] for item in report["items"]]
        shards = []
        for index in range(1, count + 1):
            items = [item for item in report["items"] if shard_of(item["id"], count) == index]
            metrics = compute_metrics(items)
            qa_ids = {item["id"] for item in items if item["kind"] == "qa"}
            recorded = summarize_baseline(baseline, qa_ids, "datasets/v1/baseline.json") if baseline else None
            gate = evaluate_gate(
                metrics,
                floors=report["floors"],
                baseline=recorded,
                dataset_version=report["datasetVersion"],
                models=report["models"],
            )
            shard = copy.deepcopy(report)
            shard.update(
                items=copy.deepcopy(items),
                metrics=metrics.to_wire(),
                gate=gate.to_wire(),
                shard=shard_info(ids, index, count),
                baseline=recorded.to_wire() if recorded else None,
                startedAtMs=report["startedAtMs"] + index * 1000,
                durationMs=report["durationMs"] / count,
            )
            shards.append(shard)
        return shards

    return make


def recount(*shards: dict) -> None:
    """Give shards whose items a test changed the metrics of those items, as a shard run writes them."""
    for shard in shards:
        shard["metrics"] = compute_metrics(shard["items"]).to_wire()
        regate(shard)


def regate(report: dict[str, Any]) -> dict[str, Any]:
    """Re-gate a report edited by a test, as the plugin would have gated it: its metrics, its recorded
    floors and baseline, plus the interrupted check (a report's gate must be its own, docs/gate.md)."""
    from pytest_groundeval.core.gate import interrupted_check
    from pytest_groundeval.core.report import BaselineInfo

    gate = evaluate_gate(
        compute_metrics(report["items"]),
        floors=report["floors"],
        baseline=BaselineInfo.model_validate(report["baseline"]) if report.get("baseline") else None,
        dataset_version=report["datasetVersion"],
        models=report["models"],
    )
    checks = [*gate.checks, interrupted_check(len(report["items"]))] if report.get("interrupted") else gate.checks
    report["gate"] = {"passed": all(c.outcome != "FAIL" for c in checks), "checks": [c.to_wire() for c in checks]}
    return report
