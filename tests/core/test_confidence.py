"""Tests for pytest_groundeval.core.confidence (docs/statistics.md): which metrics get an interval and
by which method, each item one cluster, intervals holding their metric and narrowing with more items,
and the same intervals for any order or partition of the outcomes."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from pytest_groundeval.core.confidence import (
    IntervalAccumulator,
    check_level,
    compute_confidence,
    rate_specs,
)
from pytest_groundeval.core.evidence import EvidenceReview
from pytest_groundeval.core.kinds import all_kinds
from pytest_groundeval.core.kinds.base import ratio
from pytest_groundeval.core.metrics import compute_metrics
from pytest_groundeval.core.outcome import ItemOutcome

LABELS = ("supported", "partial", "unsupported", "wrong_speaker")


def qa(
    i: int, expected: int, found: int, *, supported: int = 2, true: int = 2, rejected: int = 0, error: bool = False
) -> ItemOutcome:
    return ItemOutcome(
        id=f"qa-{i}", kind="qa", passed=found == expected and true == supported and not error,
        error="target down" if error else None, evidence_expected=expected, evidence_found=0 if error else found,
        claims_returned=supported + rejected, claims_supported=supported, claims_supported_true=true,
        claims_true_cited=true + rejected, claims_true_cited_supported=true,
    )  # fmt: skip


def adversarial(i: int, rejected: bool) -> ItemOutcome:
    return ItemOutcome(id=f"adv-{i}", kind="adversarial", passed=rejected, falsehood_supported=not rejected)


def temporal(i: int, passed: bool) -> ItemOutcome:
    return ItemOutcome(id=f"tmp-{i}", kind="temporal", passed=passed)


def reviewed(outcome: ItemOutcome, score: float) -> ItemOutcome:
    review = EvidenceReview(reviewed=True, risk_score=1 - score, score=score)
    return outcome.model_copy(update={"evidence_review": review})


def citation(i: int, rng: random.Random) -> ItemOutcome:
    """A judged and scored citation item of 1-4 paragraphs with human labels."""
    records = []
    for _ in range(rng.randint(1, 4)):
        expected = rng.choice(LABELS[:2])
        verdict = expected if rng.random() < 0.8 else rng.choice(LABELS)
        # A jury of two: "j" gave the jury's verdict, "k" mostly agrees (judgeAlpha, docs/judges.md).
        second = verdict if rng.random() < 0.7 else rng.choice(LABELS)
        judges = [{"judgeModel": "j", "verdict": verdict}, {"judgeModel": "k", "verdict": second}]
        records.append({"judgeModel": "jury(majority: j, k)", "verdict": verdict, "expectedVerdict": expected,
                        "deterministicPass": rng.random() < 0.9, "judges": judges})  # fmt: skip
    verdicts = [r["verdict"] for r in records]
    extra = {
        "citationParagraphs": records,
        "citationParagraphsJudged": len(records),
        "citationParagraphsMismatched": sum(not r["deterministicPass"] for r in records),
        "citationParagraphsSupported": verdicts.count("supported"),
        "citationParagraphsWrongSpeaker": verdicts.count("wrong_speaker"),
        "citationParagraphsUnparseable": 0,
        "citationJudgeErrors": 0,
        "citationScorerErrors": 0,
        "citationCoverageScores": [round(rng.random(), 3) for _ in records],
    }
    return ItemOutcome(id=f"cit-{i}", kind="citation", passed=True, extra=extra)


def mixed_run(copies: int = 1, seed: int = 11) -> list[ItemOutcome]:
    """Every kind, every rate measured: qa (some errored), adversarial, temporal, citation, evidence reviews."""
    rng = random.Random(seed)
    outcomes = []
    for c in range(copies):
        for i in range(30):
            n = c * 100 + i
            expected = rng.randint(1, 4)
            outcome = qa(n, expected, sum(rng.random() < 0.85 for _ in range(expected)), supported=3,
                         true=rng.choice((2, 3, 3)), rejected=rng.choice((0, 0, 1)), error=i == 7)  # fmt: skip
            outcomes.append(reviewed(outcome, rng.choice((0.0, 1 / 3, 2 / 3, 1.0))) if i % 3 == 0 else outcome)
            outcomes.append(adversarial(n, rng.random() < 0.9))
            outcomes.append(temporal(n, rng.random() < 0.8))
            outcomes.append(citation(n, rng))
    return outcomes


def test_every_rate_metric_has_an_interval_holding_its_value():
    outcomes = mixed_run()
    metrics = compute_metrics(outcomes)
    confidence = compute_confidence(outcomes, metrics)
    values = metrics.to_wire()
    assert list(confidence) == [spec.wire for spec in rate_specs()]
    assert not {"latencyMsP50", "latencyMsP95", "tokensPerQuery", "errors", "qaClaims"} & set(confidence)
    for name, interval in confidence.items():
        if name in ("passAtK", "passHatK"):  # measured only under --eval-repeat (tests/core/test_repeats.py)
            assert interval is None and values.get(name) is None, name
            continue
        assert interval is not None, name
        assert interval.low <= values[name] <= interval.high, name
        assert interval.low < interval.high, name


def test_the_method_follows_the_data():
    outcomes = mixed_run()
    confidence = compute_confidence(outcomes, compute_metrics(outcomes))
    method = {name: interval.method for name, interval in confidence.items() if interval is not None}
    # One trial per item, or per labelled paragraph: Wilson's interval.
    for name in ("falsehoodRejection", "temporalAccuracy", "judgeAgreement"):
        assert method[name] == "wilson", name
    # A ratio of sums over items, a mean score, kappa: the bootstrap.
    for name in ("retrievalRecall", "claimSupportPrecision", "claimSupportRecall", "evidenceRiskScore",
                 "citationSupportedRate", "coverageScoreMean", "judgeKappa", "judgeAlpha"):  # fmt: skip
        assert method[name] == "bootstrap", name


def test_wilson_intervals_are_the_items_counts():
    outcomes = [adversarial(i, i < 8) for i in range(10)]
    interval = compute_confidence(outcomes, compute_metrics(outcomes))["falsehoodRejection"]
    assert interval is not None and interval.method == "wilson"
    assert (interval.low, interval.high) == (pytest.approx(0.4902, abs=5e-5), pytest.approx(0.9433, abs=5e-5))


def test_all_or_nothing_items_of_one_value_get_wilson_over_items():
    # Every item found all of its 1-3 strings: a bootstrap would resample one value and say [1, 1].
    perfect = [qa(i, 1 + i % 3, 1 + i % 3) for i in range(10)]
    interval = compute_confidence(perfect, compute_metrics(perfect))["retrievalRecall"]
    assert interval is not None and interval.method == "wilson"
    assert (interval.low, interval.high) == (pytest.approx(0.7225, abs=5e-5), 1.0)


def test_null_metrics_have_no_interval():
    outcomes = [adversarial(i, True) for i in range(3)]
    confidence = compute_confidence(outcomes, compute_metrics(outcomes))
    assert confidence["falsehoodRejection"] is not None
    assert confidence["retrievalRecall"] is None and confidence["judgeKappa"] is None
    assert confidence["judgeAlpha"] is None
    assert compute_confidence([], compute_metrics([])) == dict.fromkeys(confidence)


def test_each_item_is_one_cluster_whose_pairs_give_the_metric():
    outcomes = mixed_run()
    accumulator = IntervalAccumulator()
    for outcome in outcomes:
        accumulator.add(outcome)
    values = compute_metrics(outcomes).to_wire()
    by_field = {spec.field: spec.wire for spec in rate_specs()}
    # Agreement, kappa and a jury's alpha come from the citation tally's tables; pass@k and pass^k only
    # under repeats.
    tables = {"judge_agreement", "judge_kappa", "judge_alpha"}
    assert set(accumulator.clusters) == set(by_field) - tables - {"pass_at_k", "pass_hat_k"}
    for field, clusters in accumulator.clusters.items():
        num = sum(n * c for (n, _), c in clusters.items())
        den = sum(d * c for (_, d), c in clusters.items())
        assert float(Fraction(num) / den) == pytest.approx(values[by_field[field]], rel=1e-12), field
    # The errored qa item keeps its expected strings, as not found.
    assert accumulator.clusters["retrieval_recall"][(0, 2)] >= 1 or any(
        n == 0 for n, _ in accumulator.clusters["retrieval_recall"]
    )


def test_a_kinds_rate_parts_divide_to_its_results():
    outcomes = mixed_run()
    for kind in all_kinds():
        tally = kind.new_tally()
        for outcome in outcomes:
            if outcome.kind == kind.name:
                tally.items += 1
                kind.tally(tally, outcome)
            kind.tally_any(tally, outcome)
        results = kind.results(tally)
        for field, (num, den) in kind.rate_parts(tally).items():
            assert ratio(num, den) == results[field], (kind.name, field)
        for field, table in kind.unit_tables(tally).items():
            assert table.statistic(table.counts) == pytest.approx(results[field], rel=1e-12), (kind.name, field)


def test_intervals_narrow_with_more_items():
    small, large = mixed_run(1), mixed_run(8)
    narrow = compute_confidence(large, compute_metrics(large))
    for name, interval in compute_confidence(small, compute_metrics(small)).items():
        if name in ("passAtK", "passHatK"):  # measured only under --eval-repeat (tests/core/test_repeats.py)
            continue
        assert interval is not None and narrow[name] is not None
        assert narrow[name].high - narrow[name].low < interval.high - interval.low, name


def test_any_order_or_partition_of_the_outcomes_gives_the_same_bytes():
    outcomes = mixed_run(2)
    metrics = compute_metrics(outcomes)
    whole = compute_confidence(outcomes, metrics)
    shuffled = list(outcomes)
    random.Random(3).shuffle(shuffled)
    parts = [IntervalAccumulator() for _ in range(3)]
    for i, outcome in enumerate(shuffled):
        parts[i % 3].add(outcome)
    merged = parts[2].merge(parts[0]).merge(parts[1])
    dump = {name: None if i is None else i.to_wire() for name, i in whole.items()}
    assert repr({n: None if i is None else i.to_wire() for n, i in merged.intervals(metrics, 0.95).items()}) == repr(
        dump
    )
    assert compute_confidence([o.to_wire() for o in outcomes], metrics) == whole


def test_an_items_attempts_are_one_cluster():
    # Two attempts of each adversarial item: the item counts (k, 2) once, so the interval is a
    # cluster bootstrap over the 20 items, not Wilson over 40 trials.
    accumulator = IntervalAccumulator()
    attempts = [[adversarial(i, True), adversarial(i, i % 4 != 0)] for i in range(20)]
    for pair in attempts:
        accumulator.add_item(pair)
    assert dict(accumulator.clusters["falsehood_rejection"]) == {(2, 2): 15, (1, 2): 5}
    metrics = compute_metrics([o for pair in attempts for o in pair])
    interval = accumulator.intervals(metrics, 0.95)["falsehoodRejection"]
    assert interval is not None and interval.method == "bootstrap"
    assert interval.low <= metrics.falsehood_rejection <= interval.high


def test_the_level_is_checked():
    assert check_level(0.9) == 0.9
    for bad in (0, 1, 1.5, -0.1, True, "0.9", float("nan")):
        with pytest.raises(ValueError, match="strictly between 0 and 1"):
            check_level(bad)
    outcomes = mixed_run()
    with pytest.raises(ValueError):
        compute_confidence(outcomes, compute_metrics(outcomes), level=1.0)
    higher = compute_confidence(outcomes, compute_metrics(outcomes), level=0.99)["retrievalRecall"]
    lower = compute_confidence(outcomes, compute_metrics(outcomes), level=0.80)["retrievalRecall"]
    assert higher is not None and lower is not None and higher.low < lower.low < lower.high < higher.high


def test_a_report_written_before_a_metric_existed_needs_no_interval_for_it():
    # report-attribution.json.gz was written before passAtK existed: its confidence lacks the key,
    # and its items (no repeats) give none, so the two agree; an interval it lacks for a measured rate differs.
    from pytest_groundeval.core.confidence import first_difference

    outcomes = mixed_run()
    expected = compute_confidence(outcomes, compute_metrics(outcomes))
    stored = {name: interval for name, interval in expected.items() if name not in ("passAtK", "passHatK")}
    assert first_difference(stored, expected) is None
    del stored["retrievalRecall"]
    assert first_difference(stored, expected) is not None and first_difference(stored, expected)[0] == "retrievalRecall"
