"""The figures of ``groundeval calibrate`` (core/calibration.py, docs/citation.md "Calibration")."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from pytest_groundeval.core.calibration import (
    agreement,
    bootstrap_interval,
    calibrate,
    cohens,
    confusion,
    pairs_of,
    per_verdict,
)
from pytest_groundeval.core.kinds.citation import paragraph_metrics

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


def test_bootstrap_is_seeded_and_is_the_percentile_method():
    first = bootstrap_interval(PAIRS, agreement, resamples=400, seed=3)
    assert first == bootstrap_interval(PAIRS, agreement, resamples=400, seed=3)
    assert first != bootstrap_interval(PAIRS, agreement, resamples=400, seed=4)
    # One resample: both bounds are the statistic of the one sample random.Random(seed) draws.
    sample = random.Random(11).choices(PAIRS, k=len(PAIRS))
    assert bootstrap_interval(PAIRS, agreement, resamples=1, seed=11) == (agreement(sample),) * 2
    # The 5th and 95th percentiles of the replicates (90 % interval), linear interpolation.
    rng = random.Random(5)
    replicates = sorted(agreement(rng.choices(PAIRS, k=8)) for _ in range(101))
    assert bootstrap_interval(PAIRS, agreement, confidence=0.9, resamples=101, seed=5) == (
        replicates[5],
        replicates[95],
    )


def test_bootstrap_edges():
    assert bootstrap_interval([], agreement) is None
    assert bootstrap_interval([("supported", "supported")] * 5, cohens, resamples=20) == (1.0, 1.0)
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_interval(PAIRS, agreement, confidence=1.0)
    with pytest.raises(ValueError, match="resamples"):
        bootstrap_interval(PAIRS, agreement, resamples=0)


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
    assert set(wire["judgeKappa"]) == {"value", "low", "high"}
    assert wire["perVerdict"]["supported"] == {"precision": 0.75, "recall": 0.75, "support": 4, "predicted": 4}
    assert Counter(wire["judgeConfusion"]["supported"]) == Counter({"supported": 3, "partial": 1})
