"""Two runs of the same items for the paired comparison's tests (docs/statistics.md, "Paired comparison").

``qa_items(n, lost=...)`` is a run of ``n`` qa items that find both expected evidence strings,
except the ``lost`` ones, which find none and fail: one run per side, the change planted by
the ids lost. ``report_of`` turns outcomes into a ``Report`` gated with the given floors, as a
finished run writes it, and ``write_report_json`` saves one where a command reads it.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from pathlib import Path

from pytest_groundeval.core.gate import evaluate_gate, parse_floors
from pytest_groundeval.core.metrics import compute_metrics
from pytest_groundeval.core.outcome import ItemOutcome
from pytest_groundeval.core.report import Report

MODELS = {"generate": "mock-generate", "embed": "mock-embed"}
ENV = {"pluginVersion": "0.1.0", "python": "3.11.7", "platform": "Linux", "gitCommit": None}
README_ITEMS = 369
"""The qa items of datasets/v1, as in the README's pr-42 example: one of them flips."""
README_EVIDENCE = 160
"""Of them, the items with expected evidence (one string each in this model of it)."""


def qa_id(i: int) -> str:
    return f"qa-{i:04d}"


def qa_items(
    n: int = README_ITEMS,
    *,
    lost: Collection[int] = (),
    latency: Mapping[int, float] | None = None,
    start: int = 0,
    evidence_items: int | None = None,
) -> list[ItemOutcome]:
    """``n`` qa outcomes ``qa-<start>…``; the indices in ``lost`` find none of their evidence strings.

    Each item expects 2 strings; with ``evidence_items``, only the items below that index expect
    one string each and the others none (as in datasets/v1, where 160 of 369 qa items do).
    """
    out = []
    for i in range(start, start + n):
        expected = 2 if evidence_items is None else int(i < evidence_items)
        found = 0 if i in lost else expected
        out.append(
            ItemOutcome(
                id=qa_id(i),
                kind="qa",
                passed=i not in lost,
                detail="ok" if i not in lost else f"0 of {expected} expected evidence strings retrieved",
                evidence_expected=expected,
                evidence_found=found,
                claims_returned=2,
                claims_supported=2,
                claims_supported_true=2,
                claims_true_cited=2,
                claims_true_cited_supported=2,
                latency_ms=None if latency is None else latency[i],
            )
        )
    return out


def report_of(
    outcomes: list[ItemOutcome],
    *,
    floors: Mapping[str, float | None] | None = None,
    version: str = "v1",
    models: Mapping[str, str] = MODELS,
    with_items: bool = True,
) -> Report:
    """The report a finished run of ``outcomes`` writes: metrics, gate with ``floors`` (merged over the defaults)."""
    bounds = parse_floors(dict(floors or {}), "test floors")
    metrics = compute_metrics(outcomes)
    gate = evaluate_gate(metrics, floors=bounds, dataset_version=version, models=dict(models))
    return Report(
        dataset_version=version,
        models=dict(models),
        started_at_ms=1_700_000_000_000,
        duration_ms=1000.0,
        metrics=metrics,
        gate=gate,
        environment=ENV,
        floors=bounds,
        items=outcomes if with_items else [],
    )


def write_report_json(path: Path, report: Report) -> Path:
    """``report`` as its wire JSON at ``path``; returns the path."""
    path.write_text(json.dumps(report.to_wire()), encoding="utf-8")
    return path
