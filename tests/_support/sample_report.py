"""One small report with an item of every kind (docs/gate.md), and writing a report's wire form after an edit."""

from __future__ import annotations

import json

from pytest_groundeval.core.evidence import EvidenceReview
from pytest_groundeval.core.gate import evaluate_gate
from pytest_groundeval.core.metrics import compute_metrics
from pytest_groundeval.core.outcome import ItemOutcome
from pytest_groundeval.core.report import Report

MODELS = {"generate": "mock-generate", "embed": "mock-embed"}
ENV = {"pluginVersion": "0.1.0", "python": "3.11.7", "platform": "Linux", "gitCommit": None}


def sample_outcomes() -> list[ItemOutcome]:
    return [
        ItemOutcome(id="qa-1", kind="qa", passed=True, trace_id="t-1", detail="ok", latency_ms=12.0,
                    prompt_tokens=100, completion_tokens=30, evidence_expected=2, evidence_found=2,
                    claims_supported=2, claims_supported_true=2, claims_true_cited=2,
                    claims_true_cited_supported=2),
        ItemOutcome(id="adv-ñ", kind="adversarial", passed=False, detail="supported \"the moon is cheese\"\nline 2",
                    falsehood_supported=True, latency_ms=8.5),
        ItemOutcome(id="tmp-1", kind="temporal", passed=False, error="target down: connection refused"),
        ItemOutcome(id="rev-1", kind="review", passed=True,
                    evidence_review=EvidenceReview(reviewed=True, risk_score=1 / 3, score=2 / 3)),
        ItemOutcome(id="cit-1", kind="citation", passed=True, extra={"citationParagraphsJudged": 2,
                                                                     "citationParagraphsMismatched": 0}),
    ]  # fmt: skip


def finish_kwargs(outcomes: list[ItemOutcome]) -> dict:
    metrics = compute_metrics(outcomes)
    return dict(
        dataset_version="v1",
        models=MODELS,
        started_at_ms=1_700_000_000_000,
        duration_ms=5000.0,
        metrics=metrics,
        gate=evaluate_gate(metrics, dataset_version="v1", models=MODELS),
        environment=ENV,
    )


def whole_report(outcomes: list[ItemOutcome]) -> Report:
    return Report(**finish_kwargs(outcomes), items=outcomes)


def failed_report_wire(tmp_path, **extra):
    """The sample report's wire dict (its gate FAILs: one item errored), with ``extra`` keys replaced."""
    wire = whole_report(sample_outcomes()).to_wire()
    wire.update(extra)
    assert wire["gate"]["passed"] is False
    return wire


def write_wire(tmp_path, wire, name="r.json"):
    """Write a wire dict as it stands (no validation) to ``tmp_path / name``; returns the path."""
    path = tmp_path / name
    path.write_text(json.dumps(wire))
    return path
