"""pytest-groundeval: gate the answer quality of grounded-answer systems in CI.

The public API is re-exported here and imported on first use (PEP 562), so that
loading the pytest plugin costs every pytest run nothing it does not use.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    # datasets (SPEC §2)
    "load_dataset": "dataset",
    "Dataset": "dataset",
    "DatasetError": "dataset",
    "hash_file": "dataset",
    # scoring (SPEC §5)
    "tokenize": "scoring",
    "claim_coverage": "scoring",
    "claim_is_true": "scoring",
    "evidence_found": "scoring",
    # outcomes, metrics, gate, report (SPEC §9)
    "ItemOutcome": "outcome",
    "Metrics": "metrics",
    "MetricsAccumulator": "metrics",
    "compute_metrics": "metrics",
    "evaluate_gate": "gate",
    "load_floors": "gate",
    "FloorsError": "gate",
    "GateResult": "gate",
    "Report": "report",
    "ReportWriter": "report",
    "read_report": "report",
    "ReportError": "report",
    # evidence risk and citations (SPEC §8, §11)
    "review_answer": "evidence",
    "EvidenceBlock": "evidence",
    "EvidenceReview": "evidence",
    "judge_citation": "citation",
    # targets and running items (SPEC §3, §6)
    "Target": "targets",
    "HttpTarget": "targets",
    "TargetError": "targets",
    "TargetUnavailable": "targets",
    "SpawnConfig": "targets",
    "SpawnedTarget": "targets",
    "ItemRunner": "evaluate",
    # the mock provider (SPEC §4)
    "MockProvider": "mock",
    "ThreadedMockProvider": "mock",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_groundeval' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
