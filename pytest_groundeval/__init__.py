"""pytest-groundeval: gate the answer quality of grounded-answer systems in CI.

The public API is re-exported here and imported on first use (PEP 562), so that
loading the pytest plugin costs every pytest run nothing it does not use.
"""

from __future__ import annotations

from ._lazy import lazy_exports

__version__ = "0.1.0"

_EXPORTS = {
    # datasets (docs/dataset.md)
    "load_dataset": "core.dataset",
    "Dataset": "core.dataset",
    "DatasetError": "core.dataset",
    "hash_file": "core.dataset",
    # scoring (docs/scoring.md)
    "tokenize": "core.scoring",
    "claim_coverage": "core.scoring",
    "claim_is_true": "core.scoring",
    "evidence_found": "core.scoring",
    # outcomes, metrics, gate, report (docs/gate.md)
    "ItemOutcome": "core.outcome",
    "Metrics": "core.metrics",
    "MetricsAccumulator": "core.metrics",
    "compute_metrics": "core.metrics",
    "evaluate_gate": "core.gate",
    "load_floors": "core.gate",
    "FloorsError": "core.gate",
    "GateResult": "core.gate",
    "Report": "core.report",
    "ReportWriter": "core.report",
    "read_report": "core.report",
    "ReportError": "core.report",
    # evidence risk and citations (docs/evidence-risk.md, docs/citation.md)
    "review_answer": "core.evidence",
    "EvidenceBlock": "core.evidence",
    "EvidenceReview": "core.evidence",
    "judge_citation": "core.kinds.citation",
    # targets and running items (docs/target-contract.md)
    "Target": "targets.protocol",
    "HttpTarget": "targets.http",
    "TargetError": "targets.protocol",
    "TargetUnavailable": "targets.protocol",
    "SpawnConfig": "targets.spawn",
    "SpawnedTarget": "targets.spawn",
    "ItemRunner": "core.runner",
    # extending: item kinds, judges, report hooks (docs/extending.md)
    "Kind": "core.kinds.base",
    "ItemBase": "core.kinds.base",
    "MetricSpec": "core.kinds.base",
    "MetricDirection": "core.kinds.base",
    "Tally": "core.kinds.base",
    "ratio": "core.kinds.base",
    "register_kind": "core.kinds",
    "unregister_kind": "core.kinds",
    "Judge": "core.judging",
    "JudgeInput": "core.judging",
    "JudgeResult": "core.judging",
    "Scorer": "core.judging",
    "ScoreResult": "core.judging",
    "FinishedReport": "core.report",
    # the mock provider (docs/mock.md)
    "MockProvider": "mock",
    "ThreadedMockProvider": "mock",
}

__all__ = ["__version__", *_EXPORTS]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals(), ("__version__",))
