"""Reports built from chosen metric rates (docs/gate.md), for the gate's tests and ``groundeval gate``'s."""

from __future__ import annotations

import inspect
from fractions import Fraction

from pytest_groundeval.core.gate import evaluate_gate
from pytest_groundeval.core.metrics import Metrics, compute_metrics
from pytest_groundeval.core.outcome import ItemOutcome
from pytest_groundeval.core.report import Report

MODELS = {"generate": "gen-a", "embed": "emb-a"}


GOOD = dict(
    retrieval_recall=0.92,
    claim_support_precision=0.95,
    claim_support_recall=0.93,
    falsehood_rejection=1.0,
    temporal_accuracy=1.0,
    latency_ms_p50=12.25,
    latency_ms_p95=40.0,
    tokens_per_query=180.0,
    errors=0,
    items=10,
    items_by_kind={"qa": 6, "adversarial": 2, "temporal": 2, "citation": 0, "review": 0},
)


def metrics(**overrides) -> Metrics:
    return Metrics(**{**GOOD, **overrides})


def outcomes(
    retrieval_recall: float | None = 0.92,
    claim_support_precision: float = 0.95,
    claim_support_recall: float = 0.93,
    falsehood_rejection: float = 1.0,
    temporal_accuracy: float = 1.0,
    errors: int = 0,
) -> list[ItemOutcome]:
    """Items whose metrics (``compute_metrics``) are exactly these rates and this many errors."""

    def share(rate: float) -> Fraction:
        fraction = Fraction(rate).limit_denominator(100)
        assert float(fraction) == rate, rate
        return fraction

    precision, recall = share(claim_support_precision), share(claim_support_recall)
    evidence = share(retrieval_recall) if retrieval_recall is not None else Fraction(0)
    items = [
        ItemOutcome(
            id="qa-1", kind="qa", passed=True, latency_ms=12.25, prompt_tokens=150, completion_tokens=30,
            evidence_expected=evidence.denominator if retrieval_recall is not None else 0,
            evidence_found=evidence.numerator, claims_supported=precision.denominator,
            claims_supported_true=precision.numerator, claims_true_cited=recall.denominator,
            claims_true_cited_supported=recall.numerator,
        )
    ]  # fmt: skip
    rejected = share(falsehood_rejection)
    items += [
        ItemOutcome(id=f"adv-{i}", kind="adversarial", passed=i < rejected.numerator,
                    falsehood_supported=i >= rejected.numerator)
        for i in range(rejected.denominator)
    ]  # fmt: skip
    accurate = share(temporal_accuracy)
    items += [
        ItemOutcome(id=f"tmp-{i}", kind="temporal", passed=i < accurate.numerator) for i in range(accurate.denominator)
    ]
    items += [ItemOutcome(id=f"err-{i}", kind="qa", passed=False, error="target down") for i in range(errors)]
    return items


def report(dataset_version: str = "v1", models: dict | None = None, **metric_overrides) -> Report:
    """A report whose items give ``GOOD``'s rates, with ``metric_overrides`` (see ``outcomes``)."""
    rates = {key: value for key, value in GOOD.items() if key in inspect.signature(outcomes).parameters}
    items = outcomes(**{**rates, **metric_overrides})
    m = compute_metrics(items)
    gate = evaluate_gate(m, dataset_version=dataset_version, models=models or MODELS)
    return Report(
        dataset_version=dataset_version,
        models=models or MODELS,
        started_at_ms=1_700_000_000_000,
        duration_ms=1234.5,
        metrics=m,
        gate=gate,
        environment={"pluginVersion": "0.1.0", "python": "3.11", "platform": "linux", "gitCommit": None},
        items=items,
    )
