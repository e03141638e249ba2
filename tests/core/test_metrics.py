"""Tests for pytest_groundeval.metrics (docs/gate.md, docs/citation.md)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_groundeval.core.evidence import EvidenceReview
from pytest_groundeval.core.metrics import Metrics, MetricsAccumulator, compute_metrics, percentile
from pytest_groundeval.core.outcome import ItemOutcome


def outcome(id_: str = "x", kind: str = "qa", passed: bool = True, **kw) -> ItemOutcome:
    return ItemOutcome(id=id_, kind=kind, passed=passed, **kw)


def review(score: float, reviewed: bool = True) -> EvidenceReview:
    return EvidenceReview(reviewed=reviewed, risk_score=1 - score, score=score)


# --- percentile ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        ([10.0, 20.0, 30.0, 40.0], 50, 25.0),  # rank 1.5
        ([10.0, 20.0, 30.0, 40.0], 95, 38.5),  # rank 2.85 -> 30 + 0.85 * 10
        ([7.0], 50, 7.0),
        ([7.0], 95, 7.0),
        ([1.0, 2.0, 3.0, 4.0, 5.0], 50, 3.0),
        ([1.0, 2.0, 3.0, 4.0, 5.0], 95, 4.8),  # rank 3.8
        ([1.0, 2.0, 3.0, 4.0, 5.0], 0, 1.0),
        ([1.0, 2.0, 3.0, 4.0, 5.0], 100, 5.0),
        (list(map(float, range(1, 101))), 95, 95.05),  # rank 94.05
    ],
)
def test_percentile_linear_interpolation(values, q, expected):
    assert percentile(values, q) == pytest.approx(expected)


def test_percentile_of_nothing_is_none():
    assert percentile([], 50) is None


def test_percentile_rejects_out_of_range_q():
    with pytest.raises(ValueError, match="percentile must be in"):
        percentile([1.0], 101)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0, 1e6), min_size=1, max_size=50), st.floats(0, 100))
def test_percentile_lies_between_min_and_max(values, q):
    values.sort()
    assert values[0] <= percentile(values, q) <= values[-1]


# --- empty and None -------------------------------------------------------------------


def test_no_outcomes_gives_none_not_nan_or_zero():
    metrics = compute_metrics([])
    wire = metrics.to_wire()
    for name in ("retrievalRecall", "claimSupportPrecision", "claimSupportRecall", "falsehoodRejection",
                 "temporalAccuracy", "evidenceRiskScore", "latencyMsP50", "latencyMsP95", "tokensPerQuery",
                 "citationMetadataAccuracy", "citationSupportedRate", "wrongSpeakerRate", "coverageScoreMean"):  # fmt: skip
        assert wire[name] is None, name
    assert wire["errors"] == 0 and wire["items"] == 0


def test_metric_with_zero_denominator_is_none_while_others_are_measured():
    metrics = compute_metrics([outcome(kind="temporal", passed=True)])
    assert metrics.temporal_accuracy == 1.0
    assert metrics.retrieval_recall is None
    assert metrics.falsehood_rejection is None
    # qa item with no claims marked supported: precision has nothing to measure
    metrics = compute_metrics([outcome(evidence_expected=2, evidence_found=1)])
    assert metrics.retrieval_recall == 0.5
    assert metrics.claim_support_precision is None
    assert metrics.claim_support_recall is None


# --- qa -------------------------------------------------------------------------------


def test_qa_rates_sum_over_items_not_mean_of_ratios():
    outcomes = [
        outcome("a", evidence_expected=1, evidence_found=1, claims_supported=1, claims_supported_true=1,
                claims_true_cited=1, claims_true_cited_supported=1),
        outcome("b", evidence_expected=3, evidence_found=0, claims_supported=3, claims_supported_true=1,
                claims_true_cited=4, claims_true_cited_supported=2),
    ]  # fmt: skip
    metrics = compute_metrics(outcomes)
    assert metrics.retrieval_recall == 0.25
    assert metrics.claim_support_precision == 0.5
    assert metrics.claim_support_recall == 0.6


def test_errored_qa_item_counts_its_evidence_as_not_found():
    outcomes = [
        outcome("a", evidence_expected=2, evidence_found=2),
        outcome("b", passed=False, error="target down", evidence_expected=2, evidence_found=2),
    ]
    metrics = compute_metrics(outcomes)
    assert metrics.retrieval_recall == 0.5
    assert metrics.errors == 1


def test_claims_on_non_qa_items_do_not_count():
    metrics = compute_metrics([outcome(kind="adversarial", claims_supported=5, falsehood_supported=False)])
    assert metrics.claim_support_precision is None


# --- adversarial / temporal ---------------------------------------------------------------


def test_falsehood_rejection_counts_errored_and_unknown_as_not_rejected():
    outcomes = [
        outcome("a", kind="adversarial", falsehood_supported=False),
        outcome("b", kind="adversarial", passed=False, falsehood_supported=True),
        outcome("c", kind="adversarial", passed=False, error="timeout", falsehood_supported=False),
        outcome("d", kind="adversarial", falsehood_supported=None),
    ]
    assert compute_metrics(outcomes).falsehood_rejection == 0.25


def test_temporal_accuracy_counts_errored_as_failed():
    outcomes = [
        outcome("a", kind="temporal", passed=True),
        outcome("b", kind="temporal", passed=False, error="500 from /v1/records"),
        outcome("c", kind="temporal", passed=False),
        outcome("d", kind="temporal", passed=True),
    ]
    metrics = compute_metrics(outcomes)
    assert metrics.temporal_accuracy == 0.5
    assert metrics.errors == 1
    assert metrics.items_by_kind == {"qa": 0, "adversarial": 0, "temporal": 4, "citation": 0, "review": 0}


# --- evidence risk, latency, tokens --------------------------------------------------------


def test_evidence_risk_score_is_mean_over_reviewed_only():
    outcomes = [
        outcome("a", kind="review", evidence_review=review(1.0)),
        outcome("b", kind="review", evidence_review=review(1 / 3)),
        outcome("c", kind="qa", evidence_review=review(1.0, reviewed=False)),
        outcome("d", kind="qa"),
    ]
    assert compute_metrics(outcomes).evidence_risk_score == pytest.approx(2 / 3)


def test_latency_percentiles_and_tokens_per_query():
    outcomes = [
        outcome("a", latency_ms=40.0, prompt_tokens=100, completion_tokens=20),
        outcome("b", kind="adversarial", latency_ms=10.0, prompt_tokens=50, completion_tokens=None),
        outcome("c", kind="citation", latency_ms=30.0),
        outcome("d", kind="temporal"),
        outcome("e", kind="review", latency_ms=20.0, prompt_tokens=None, completion_tokens=None),
    ]
    metrics = compute_metrics(outcomes)
    assert metrics.latency_ms_p50 == 25.0
    assert metrics.latency_ms_p95 == pytest.approx(38.5)
    assert metrics.tokens_per_query == 85.0  # (120 + 50) / 2 calls that reported tokens


def test_bad_latency_is_refused_naming_the_item():
    with pytest.raises(ValueError, match=r"item 'q7': latencyMs"):
        compute_metrics([outcome("q7", latency_ms=math.nan)])


# --- citation (docs/citation.md) ---------------------------------------------------------------------


def test_citation_metrics_from_extra():
    outcomes = [
        outcome("c1", kind="citation", extra={
            "citationParagraphsJudged": 4, "citationParagraphsMismatched": 1,
            "citationParagraphsSupported": 2, "citationParagraphsWrongSpeaker": 1,
            "citationCoverageScores": [0.5, None, 1.0]}),
        outcome("c2", kind="citation", extra={
            "citationParagraphsJudged": 6, "citationParagraphsMismatched": 0,
            "citationCoverageScores": [0.0]}),
    ]  # fmt: skip
    metrics = compute_metrics(outcomes)
    assert metrics.citation_metadata_accuracy == 0.9
    assert metrics.citation_supported_rate == 0.5  # only c1 ran a judge
    assert metrics.wrong_speaker_rate == 0.25
    assert metrics.coverage_score_mean == 0.5


def test_citation_metrics_none_without_data():
    metrics = compute_metrics([outcome("c1", kind="citation")])
    assert metrics.citation_metadata_accuracy is None
    assert metrics.citation_supported_rate is None
    assert metrics.wrong_speaker_rate is None
    assert metrics.coverage_score_mean is None


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"citationParagraphsJudged": "4"}, "citationParagraphsJudged must be a non-negative integer"),
        ({"citationParagraphsJudged": True}, "citationParagraphsJudged must be a non-negative integer"),
        ({"citationParagraphsJudged": 1, "citationParagraphsMismatched": 2}, "exceeds"),
        ({"citationCoverageScores": [1.5]}, r"citationCoverageScores\[0\] must be a number in \[0, 1\]"),
        ({"citationCoverageScores": 0.5}, "citationCoverageScores must be a list"),
    ],
)
def test_bad_citation_extra_is_refused(extra, message):
    with pytest.raises(ValueError, match=message):
        compute_metrics([outcome("cit-9", kind="citation", extra=extra)])


# --- accumulator: incremental, mergeable, wire dicts --------------------------------------------


def _mixed_outcomes() -> list[ItemOutcome]:
    return [
        outcome("q1", evidence_expected=2, evidence_found=1, claims_supported=2, claims_supported_true=2,
                claims_true_cited=2, claims_true_cited_supported=2, latency_ms=12.5, prompt_tokens=10,
                completion_tokens=5, evidence_review=review(1 / 3)),
        outcome("q2", passed=False, error="boom", evidence_expected=1),
        outcome("a1", kind="adversarial", falsehood_supported=False, latency_ms=7.0),
        outcome("t1", kind="temporal", passed=False),
        outcome("r1", kind="review", evidence_review=review(2 / 3), latency_ms=3.0),
        outcome("c1", kind="citation", extra={"citationParagraphsJudged": 3, "citationParagraphsMismatched": 1,
                                              "citationCoverageScores": [0.1, 0.7]}),
    ]  # fmt: skip


def test_merged_partitions_equal_a_single_pass():
    outcomes = _mixed_outcomes()
    whole = compute_metrics(outcomes)
    left, right = MetricsAccumulator(), MetricsAccumulator()
    for i, o in enumerate(reversed(outcomes)):
        (left if i % 2 else right).add(o)
    assert left.merge(right).result() == whole
    assert whole.items == 6 and whole.errors == 1


@settings(max_examples=50, deadline=None)
@given(st.permutations(list(range(6))), st.integers(0, 6))
def test_metrics_independent_of_order_and_split(order, split):
    outcomes = _mixed_outcomes()
    shuffled = [outcomes[i] for i in order]
    first, second = MetricsAccumulator(), MetricsAccumulator()
    for o in shuffled[:split]:
        first.add(o)
    for o in shuffled[split:]:
        second.add(o)
    assert second.merge(first).result() == compute_metrics(outcomes)


def test_compute_metrics_accepts_wire_dicts():
    outcomes = _mixed_outcomes()
    assert compute_metrics(o.to_wire() for o in outcomes) == compute_metrics(outcomes)


def test_metrics_round_trip_through_wire():
    metrics = compute_metrics(_mixed_outcomes())
    assert Metrics.model_validate(metrics.to_wire()) == metrics
    assert "latencyMsP95" in metrics.to_wire()


# --- the static face of Metrics ---------------------------------------------------------


def test_metrics_base_declares_only_real_fields_with_their_types() -> None:
    """``MetricsBase`` tells the type checker what ``Metrics`` holds; the run-time model must agree.

    The declarations sit under ``if TYPE_CHECKING:`` (they must not become fields of
    their own), so they are read from the source: each names a field of the built model,
    with the same annotation, and the base adds no field at run time.
    """
    import ast
    import inspect

    from pytest_groundeval.core import metrics as module
    from pytest_groundeval.core.metrics import MetricsBase

    assert issubclass(Metrics, MetricsBase)
    assert MetricsBase.model_fields == {}
    tree = ast.parse(inspect.getsource(MetricsBase))
    declared = {
        node.target.id: node.annotation
        for node in ast.walk(tree)
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
    }
    assert set(declared) == {
        "evidence_risk_score",
        "latency_ms_p50",
        "latency_ms_p95",
        "tokens_per_query",
        "errors",
        "items",
        "items_by_kind",
    }
    for name, annotation in declared.items():
        static = eval(ast.unparse(annotation), vars(module))
        assert static == _without_constraints(Metrics.model_fields[name].annotation), name


def _without_constraints(annotation: object) -> object:
    """``annotation`` with every ``Annotated[T, ...]`` inside it replaced by ``T``."""
    import functools
    import operator
    import typing

    if typing.get_origin(annotation) is typing.Annotated:
        return typing.get_args(annotation)[0]
    args = tuple(_without_constraints(arg) for arg in typing.get_args(annotation))
    if typing.get_origin(annotation) is typing.Union:
        return functools.reduce(operator.or_, args)
    if typing.get_origin(annotation) is dict:
        return dict[args]
    return annotation
