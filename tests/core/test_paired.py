"""Two runs paired on item ids and every metric compared (core/paired.py, docs/statistics.md "Paired comparison")."""

from __future__ import annotations

import random

import pytest

from pytest_groundeval.core import paired
from pytest_groundeval.core.metrics import compute_metrics, percentile
from pytest_groundeval.core.outcome import ItemOutcome
from pytest_groundeval.core.paired import PairingError, _weighted_percentile, compare_metrics, pair_runs
from tests._support.paired_runs import qa_id, qa_items
from tests._support.sample_report import sample_outcomes


def _compare(a, b, **kwargs):
    pairing, paired_a, paired_b = pair_runs(a, b)
    return pairing, compare_metrics(paired_a, paired_b, **kwargs)


def test_items_in_one_run_are_listed_not_paired_and_flips_found():
    a = qa_items(6, lost={1})  # qa-0001 fails in A
    b = qa_items(6, lost={2}, start=0)[1:] + qa_items(2, start=10)  # no qa-0000; qa-0010, qa-0011 new
    pairing, paired_a, paired_b = pair_runs(a, b)
    assert pairing.ids == tuple(qa_id(i) for i in range(1, 6))
    assert pairing.only_in_a == ("qa-0000",) and pairing.only_in_b == ("qa-0010", "qa-0011")
    assert pairing.pass_to_fail == ("qa-0002",) and pairing.fail_to_pass == ("qa-0001",)
    assert pairing.mcnemar_p == 1.0
    assert [o.id for o in paired_a] == [o.id for o in paired_b] == list(pairing.ids)


def test_an_id_twice_in_one_run_cannot_be_paired():
    a = qa_items(3)
    with pytest.raises(PairingError, match=r"b\.json holds item 'qa-0001' twice"):
        pair_runs(a, [*a, a[1]], ("a.json", "b.json"))
    with pytest.raises(ValueError, match="paired outcomes"):
        compare_metrics(a, a[:2])


def test_each_runs_values_over_the_paired_items_are_its_metrics_over_them():
    # Every kind, errors, an evidence review, latencies and tokens: the per-run values the tests start
    # from are exactly what core.metrics gives for the same outcomes (the formulas are not copied wrong).
    a = sample_outcomes()
    b = [o.model_copy(update={"latency_ms": (o.latency_ms or 0) + 5.0}) if o.latency_ms else o for o in a]
    b[0] = b[0].model_copy(update={"evidence_found": 1, "claims_supported_true": 1, "prompt_tokens": 170})
    tests = _compare(a, b, replicates=50)[1]
    for outcomes, side in ((a, "a"), (b, "b")):
        metrics = compute_metrics(outcomes).to_wire()
        for name, test in tests.items():
            assert getattr(test, side) == pytest.approx(metrics[name]), (name, side)
    assert {"retrievalRecall", "falsehoodRejection", "latencyMsP50", "evidenceRiskScore"} <= set(tests)
    assert tests["retrievalRecall"].delta == pytest.approx(-0.5)


def test_one_flip_of_369_items_is_not_significant():
    # The README's pr-42 case: one qa item of 369 loses its evidence.
    tests = _compare(qa_items(), qa_items(lost={126}))[1]
    recall = tests["retrievalRecall"]
    assert recall.delta == pytest.approx(-2 / 738)
    assert (recall.p_value, recall.exact, recall.discordant, recall.items) == (1.0, True, 1, 369)
    assert recall.low < 0 and recall.high == 0.0  # the resamples that miss the item see no change
    assert not recall.powerless(0.05)


def test_a_planted_regression_is_significant_and_its_interval_excludes_zero():
    tests = _compare(qa_items(), qa_items(lost=set(range(0, 369, 9))))[1]  # 41 items lose their evidence
    recall = tests["retrievalRecall"]
    assert recall.p_value < 0.001 and not recall.exact and recall.discordant == 41
    assert recall.low < recall.delta < recall.high < 0
    assert tests["claimSupportPrecision"].p_value == 1.0  # unchanged figures: nothing to swap


def test_the_same_runs_give_the_same_intervals_and_p_values():
    rng = random.Random(5)
    latency_a = {i: rng.uniform(10, 60) for i in range(120)}
    latency_b = {i: v * rng.uniform(0.9, 1.4) for i, v in latency_a.items()}
    a, b = qa_items(120, latency=latency_a), qa_items(120, lost={3, 7}, latency=latency_b)
    first = _compare(a, b, replicates=300)[1]
    assert first == _compare(a, b, replicates=300)[1]
    latency = first["latencyMsP50"]
    assert not latency.exact and latency.discordant == 120 and 0 < latency.p_value <= 1
    assert latency.low <= latency.delta <= latency.high
    other_seed = _compare(a, b, replicates=300, seed=7)[1]["latencyMsP50"]
    assert (other_seed.low, other_seed.p_value) != (latency.low, latency.p_value)


def test_a_metric_only_one_run_measured_is_reported_untested():
    a = qa_items(4)
    b = [o.model_copy(update={"latency_ms": 12.0}) for o in a]
    tests = _compare(a, b)[1]
    latency = tests["latencyMsP50"]
    assert latency.p_value is None and latency.note == "run A did not measure it over the paired items"
    assert "temporalAccuracy" not in tests  # neither measured it: left out


def test_weighted_percentile_is_the_percentile_of_the_expanded_multiset():
    rng = random.Random(11)
    for _ in range(200):
        values = sorted(rng.uniform(0, 100) for _ in range(rng.randint(1, 12)))
        weights = [rng.randint(0, 3) for _ in values]
        expanded = [v for v, w in zip(values, weights) for _ in range(w)]
        for q in (0, 50, 95, 100):
            assert _weighted_percentile(values, weights, q) == pytest.approx(percentile(expanded, q))


def test_outcomes_of_errored_items_are_compared_with_the_errors_in_the_denominator():
    a = qa_items(8)
    b = [*a[:7], ItemOutcome(id=a[7].id, kind="qa", passed=False, error="timeout", evidence_expected=2)]
    recall = _compare(a, b)[1]["retrievalRecall"]
    assert recall.b == pytest.approx(14 / 16) and recall.discordant == 1


def test_a_metric_counts_and_swaps_only_the_items_that_differ_in_what_it_measures():
    # Every answer of B is shorter (one claim, not two) and one item also loses its evidence: recall
    # differs on that one item only, and its test is exact over it, whatever the claims did.
    shorter = {"claims_returned": 1, "claims_supported": 1, "claims_supported_true": 1}
    a = qa_items(40)
    b = [o.model_copy(update=shorter) for o in qa_items(40, lost={3})]
    tests = _compare(a, b)[1]
    recall = tests["retrievalRecall"]
    assert (recall.discordant, recall.exact, recall.p_value, recall.items) == (1, True, 1.0, 40)
    assert tests["claimSupportPrecision"].discordant == 40


def test_a_metric_without_a_paired_form_is_reported_untested(monkeypatch):
    monkeypatch.setattr(paired, "COMMON_RATIOS", {})  # as if tokensPerQuery were a metric of unknown shape
    a = [o.model_copy(update={"prompt_tokens": 100}) for o in qa_items(6)]
    b = [o.model_copy(update={"prompt_tokens": 130}) for o in qa_items(6)]
    tokens = _compare(a, b)[1]["tokensPerQuery"]
    assert (tokens.a, tokens.b, tokens.p_value) == (100.0, 130.0, None)
    assert tokens.note == "no paired form is known for this metric"
