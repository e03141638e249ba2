"""The figures of ``groundeval calibrate`` (core/calibration.py, docs/citation.md "Calibration")."""

from __future__ import annotations

from collections import Counter

import pytest

from pytest_groundeval.core.calibration import (
    agreement,
    calibrate,
    cohens,
    confusion,
    pairs_of,
    per_verdict,
)
from pytest_groundeval.core.confidence import compute_confidence
from pytest_groundeval.core.intervals import BOOTSTRAP_REPLICATES, wilson
from pytest_groundeval.core.kinds.citation import paragraph_metrics, with_assessment
from pytest_groundeval.core.metrics import compute_metrics
from pytest_groundeval.core.outcome import ItemOutcome

# Eight paragraphs, human label first: computed by hand below.
PAIRS = [
    ("supported", "supported"),
    ("supported", "supported"),
    ("supported", "partial"),
    ("unsupported", "unsupported"),
    ("unsupported", "supported"),
    ("partial", "partial"),
    ("partial", "unsupported"),
    ("supported", "supported"),
]


def test_confusion_precision_recall_and_kappa_by_hand():
    assert confusion(PAIRS) == {
        "supported": {"supported": 3, "partial": 1},
        "partial": {"partial": 1, "unsupported": 1},
        "unsupported": {"supported": 1, "unsupported": 1},
    }
    assert agreement(PAIRS) == 5 / 8
    # p_o = 5/8; rows 4, 2, 2 and columns 4, 2, 2: p_e = (16 + 4 + 4) / 64 = 3/8; κ = (5/8 - 3/8) / (5/8) = 0.4.
    assert cohens(PAIRS) == pytest.approx(0.4, abs=1e-12)
    figures = per_verdict(PAIRS)
    assert (figures["supported"].precision, figures["supported"].recall) == (3 / 4, 3 / 4)
    assert (figures["supported"].support, figures["supported"].predicted) == (4, 4)
    assert (figures["partial"].precision, figures["partial"].recall) == (1 / 2, 1 / 2)
    assert (figures["unsupported"].precision, figures["unsupported"].recall) == (1 / 2, 1 / 2)
    assert figures["wrong_speaker"].precision is None and figures["wrong_speaker"].recall is None


def test_unjudged_and_unparseable_lower_recall_and_have_no_row():
    pairs = [("supported", "supported"), ("supported", "unjudged"), ("partial", "unparseable")]
    figures = per_verdict(pairs)
    assert figures["supported"].recall == 1 / 2 and figures["supported"].precision == 1.0
    assert figures["partial"].recall == 0.0 and figures["partial"].precision is None
    assert set(figures) == {"supported", "partial", "unsupported", "wrong_speaker", "wrong_attribution"}
    assert confusion(pairs) == {"supported": {"supported": 1, "unjudged": 1}, "partial": {"unparseable": 1}}


def test_the_point_figures_are_the_runs_judge_agreement_and_kappa():
    records = [
        {
            "index": i,
            "deterministicPass": True,
            "judgeModel": "m",
            "verdict": got,
            "rationale": "r",
            "expectedVerdict": human,
        }
        for i, (human, got) in enumerate(PAIRS)
    ]
    run = paragraph_metrics(records, judged=True, scored=False)
    result = calibrate(pairs_of(records), resamples=50)
    assert result.agreement.value == run["judge_agreement"]
    assert result.kappa.value == run["judge_kappa"]
    assert result.confusion == run["judge_confusion"]


def test_pairs_skip_paragraphs_without_a_label_or_a_judge():
    records = [
        {"judgeModel": "m", "verdict": "supported", "expectedVerdict": "supported"},
        {"judgeModel": "m", "verdict": None, "expectedVerdict": "partial"},
        {"judgeModel": "m", "verdict": "supported", "expectedVerdict": None},
        {"judgeModel": None, "verdict": None, "expectedVerdict": "supported"},
    ]
    assert pairs_of(records) == [("supported", "supported"), ("partial", "unjudged")]


def _run_intervals(pairs):
    """A run's confidence of the same labelled paragraphs, as the plugin computes it (docs/statistics.md)."""
    records = [{"index": i, "deterministicPass": True, "judgeModel": "m", "verdict": None if got == "unjudged" else got,
                "rationale": "r", "expectedVerdict": human} for i, (human, got) in enumerate(pairs)]  # fmt: skip
    outcome = ItemOutcome(id="c", kind="citation", passed=True, detail="",
                          extra={"citationParagraphsJudged": len(records), "citationParagraphsMismatched": 0})  # fmt: skip
    outcome = with_assessment(outcome, records, judged=True, scored=False)
    return compute_confidence([outcome], compute_metrics([outcome]))


def test_the_intervals_are_the_runs_over_the_same_paragraphs():
    pairs = PAIRS * 5
    result, run = calibrate(pairs), _run_intervals(pairs)
    for estimate, name in ((result.agreement, "judgeAgreement"), (result.kappa, "judgeKappa")):
        interval = run[name]
        assert interval is not None
        # Byte for byte: the same tables, the same method, the same seed (one bootstrap in the package).
        assert (estimate.low, estimate.high, estimate.method) == (interval.low, interval.high, interval.method), name
    assert result.agreement.method == "wilson" and result.kappa.method == "bootstrap"
    # Wilson's interval of 25 agreeing of 40 paragraphs.
    assert (result.agreement.low, result.agreement.high) == pytest.approx(wilson(25, 40, 0.95))
    assert result.resamples == BOOTSTRAP_REPLICATES and result.seed is None


def test_other_draws_are_seeded_and_change_only_kappa():
    first = calibrate(PAIRS, resamples=400, seed=3)
    assert first == calibrate(PAIRS, resamples=400, seed=3)
    other = calibrate(PAIRS, resamples=400, seed=4)
    assert other.kappa != first.kappa and other.agreement == first.agreement  # Wilson's: no draws
    assert first.kappa.low <= first.kappa.value <= first.kappa.high


def test_interval_edges():
    empty = calibrate([])
    assert (empty.agreement.value, empty.agreement.low, empty.kappa.low, empty.kappa.method) == (None,) * 4
    same = calibrate([("supported", "supported")] * 5, resamples=20)
    assert (same.kappa.low, same.kappa.high) == (1.0, 1.0)
    with pytest.raises(ValueError, match="confidence"):
        calibrate(PAIRS, confidence=1.0)
    with pytest.raises(ValueError, match="resamples"):
        calibrate(PAIRS, resamples=0)


def test_a_minimum_gates_the_lower_bound_not_the_point():
    result = calibrate(PAIRS, min_kappa=0.3, min_agreement=0.5, resamples=500)
    assert result.kappa.value == pytest.approx(0.4) and result.agreement.value == 5 / 8
    assert result.kappa.low < 0.3 and result.agreement.low < 0.5  # eight paragraphs: wide intervals
    outcomes = {check.metric: check.outcome for check in result.checks}
    assert outcomes == {
        "judgeAgreement": "FAIL",
        "judgeKappa": "FAIL",
        "judgeErrors": "PASS",
        "unparseableRate": "PASS",
    }
    assert not result.passed
    only_kappa = calibrate(PAIRS, min_kappa=0.3, min_agreement=0.0, resamples=500)
    assert [c.metric for c in only_kappa.checks if c.outcome == "FAIL"] == ["judgeKappa"]
    assert "lower bound" in only_kappa.checks[1].reason
    assert calibrate(PAIRS * 40, min_kappa=0.3, min_agreement=0.5, resamples=500).passed  # 320 paragraphs: narrow


def test_no_minimum_passes_unless_the_judge_answered_nothing():
    assert calibrate(PAIRS, resamples=10).passed and calibrate(PAIRS, resamples=10).checks == []
    down = calibrate([("supported", "unjudged"), ("partial", "unparseable")], resamples=10)
    assert not down.passed and down.checks[0].metric == "judge"
    armed = calibrate([*PAIRS, ("supported", "unjudged")], min_agreement=0.0, resamples=10)
    assert [c.metric for c in armed.checks if c.outcome == "FAIL"] == ["judgeErrors"]


def test_labels_are_checked():
    with pytest.raises(ValueError, match="human label 'unjudged'"):
        calibrate([("unjudged", "supported")])
    with pytest.raises(ValueError, match="judge label 'maybe'"):
        calibrate([("supported", "maybe")])


def test_to_wire_is_json_ready():
    wire = calibrate(PAIRS, resamples=10).to_wire()
    assert wire["paragraphs"] == 8 and wire["passed"] is True
    assert set(wire["judgeKappa"]) == {"value", "low", "high", "method"}
    assert wire["perVerdict"]["supported"] == {"precision": 0.75, "recall": 0.75, "support": 4, "predicted": 4}
    assert Counter(wire["judgeConfusion"]["supported"]) == Counter({"supported": 3, "partial": 1})
