"""Tests for pytest_groundeval.gate (docs/gate.md): floors, baseline lineage, formatting (groundeval gate: tests/cli)."""

from __future__ import annotations

import json
import math

import pytest

from pytest_groundeval.core.finalize import RunOutcomes, finalize_run
from pytest_groundeval.core.gate import (
    DEFAULT_FLOORS,
    METRIC_DIRECTIONS,
    FloorsError,
    GateCheck,
    check_recorded_floors,
    evaluate_gate,
    load_floors,
    parse_floors,
    same_lineage,
    summarize_baseline,
)
from pytest_groundeval.core.metrics import Metrics
from pytest_groundeval.core.outcome import ItemOutcome
from pytest_groundeval.core.render import format_check
from pytest_groundeval.core.report import Report
from tests._support.gate_reports import MODELS, metrics, report
from tests._support.paired_runs import MODELS as PAIRED_MODELS
from tests._support.paired_runs import qa_items, report_of


def check_for(result, metric: str) -> GateCheck:
    (check,) = [c for c in result.checks if c.metric == metric]
    return check


# --- directions and defaults -------------------------------------------------------------------


def test_directions_cover_every_metric_field_except_counts_and_tables():
    tables = {"verdictDistribution", "judgeConfusion", "citationCatches", "judgeAgreementByModel",
              "judgeKappaByModel", "verdictDistributionByModel", "judgeTokens", "targetTokens",
              "unpricedModels"}  # fmt: skip
    # Every field (passAtK and passHatK are left out of a dump while None, so a dump does not list them).
    wire_names = (
        {field.alias for field in Metrics.model_fields.values()} - {"items", "itemsByKind", "qaClaims"} - tables
    )
    assert set(METRIC_DIRECTIONS) == wire_names
    assert METRIC_DIRECTIONS["claimSupportPrecision"].op == ">="
    assert METRIC_DIRECTIONS["latencyMsP95"].op == "<=" and not METRIC_DIRECTIONS["latencyMsP95"].rate
    assert METRIC_DIRECTIONS["errors"].op == "<="


def test_default_floors():
    assert DEFAULT_FLOORS["claimSupportPrecision"] == 0.90
    assert DEFAULT_FLOORS["claimSupportRecall"] == 0.90
    assert DEFAULT_FLOORS["falsehoodRejection"] == 0.95
    assert DEFAULT_FLOORS["temporalAccuracy"] == 1.0
    assert DEFAULT_FLOORS["errors"] == 0


# --- passing and failing each floor --------------------------------------------------------------


def test_good_metrics_pass_with_reasons():
    result = evaluate_gate(metrics(), dataset_version="v1", models=MODELS)
    assert result.passed
    assert [c.metric for c in result.checks] == [
        "retrievalRecall", "claimSupportPrecision", "claimSupportRecall", "falsehoodRejection",
        "temporalAccuracy", "errors",
    ]  # fmt: skip
    assert check_for(result, "claimSupportPrecision").reason == "0.9500 >= 0.9000"
    assert all(c.reason for c in result.checks)


@pytest.mark.parametrize(
    ("field", "value", "metric", "reason"),
    [
        ("claim_support_precision", 0.85, "claimSupportPrecision", "0.8500 < 0.9000"),
        ("claim_support_recall", 0.8999, "claimSupportRecall", "0.8999 < 0.9000"),
        ("falsehood_rejection", 0.94, "falsehoodRejection", "0.9400 < 0.9500"),
        ("temporal_accuracy", 0.9, "temporalAccuracy", "0.9000 < 1.0000"),
        ("errors", 1, "errors", "1 > 0"),
    ],
)
def test_each_default_floor_fails_for_its_metric(field, value, metric, reason):
    result = evaluate_gate(metrics(**{field: value}), dataset_version="v1", models=MODELS)
    assert not result.passed
    failed = [c for c in result.checks if c.outcome == "FAIL"]
    assert [c.metric for c in failed] == [metric]
    assert failed[0].reason == reason


def test_none_metric_is_skipped_with_note_and_does_not_fail():
    result = evaluate_gate(
        metrics(falsehood_rejection=None, temporal_accuracy=None), dataset_version="v1", models=MODELS
    )
    assert result.passed
    check = check_for(result, "falsehoodRejection")
    assert check.outcome == "SKIP"
    assert check.reason == "no items measured this metric (n/a)"


def test_errors_checked_even_when_floors_omit_it():
    result = evaluate_gate(metrics(errors=2), floors={}, dataset_version="v1", models=MODELS)
    assert not result.passed
    assert check_for(result, "errors").outcome == "FAIL"


def test_optional_ceilings_and_floor_apply_when_set():
    floors = parse_floors({"latencyMsP95": 30, "tokensPerQuery": 200, "evidenceRiskScore": 0.5}, "test")
    result = evaluate_gate(metrics(evidence_risk_score=0.4), floors=floors, dataset_version="v1", models=MODELS)
    assert check_for(result, "latencyMsP95").outcome == "FAIL"
    assert check_for(result, "latencyMsP95").reason == "40.0 ms > 30.0 ms"
    assert check_for(result, "tokensPerQuery").outcome == "PASS"
    assert check_for(result, "evidenceRiskScore").outcome == "FAIL"
    assert not result.passed


def test_null_disables_a_default_floor():
    floors = parse_floors({"temporalAccuracy": None}, "test")
    assert "temporalAccuracy" not in floors
    result = evaluate_gate(metrics(temporal_accuracy=0.5), floors=floors, dataset_version="v1", models=MODELS)
    assert result.passed
    assert "temporalAccuracy" not in [c.metric for c in result.checks]


# --- baseline and lineage -----------------------------------------------------------------------


def test_same_lineage_baseline_is_armed_and_passes_within_margin():
    baseline = report(retrieval_recall=0.93)
    result = evaluate_gate(metrics(retrieval_recall=0.91), baseline=baseline, dataset_version="v1", models=MODELS)
    check = next(c for c in result.checks if c.metric == "retrievalRecall")
    assert check.outcome == "PASS"
    assert check.bound == pytest.approx(0.91)
    assert "baseline 0.9300 - margin 0.0200" in check.reason


def test_equal_recall_at_the_margin_is_not_failed_by_float_noise():
    assert 0.14 - 0.02 > 0.12  # the float noise this guards against
    baseline = report(retrieval_recall=0.14)
    result = evaluate_gate(metrics(retrieval_recall=0.12), baseline=baseline, dataset_version="v1", models=MODELS)
    assert check_for(result, "retrievalRecall").outcome == "PASS"


def test_same_lineage_baseline_fails_when_recall_drops_beyond_margin():
    baseline = report(retrieval_recall=0.95)
    result = evaluate_gate(metrics(retrieval_recall=0.92), baseline=baseline, dataset_version="v1", models=MODELS)
    check = check_for(result, "retrievalRecall")
    assert check.outcome == "FAIL"
    assert check.reason.startswith("0.9200 < 0.9300")
    assert not result.passed


def _with_items(baseline: Report) -> Report:

    items = [
        ItemOutcome(id="qa-a", kind="qa", passed=True, evidence_expected=2, evidence_found=2),
        ItemOutcome(id="qa-b", kind="qa", passed=False, evidence_expected=2, evidence_found=0),
        ItemOutcome(id="adv-c", kind="adversarial", passed=True, falsehood_supported=False),
    ]
    return baseline.model_copy(update={"items": items})


def test_a_slice_is_compared_with_the_baselines_figure_for_the_same_items():
    baseline = _with_items(report(retrieval_recall=0.5))
    # Only qa-a ran: its baseline recall is 1.0, so 0.5 fails although the overall baseline is 0.5.
    result = evaluate_gate(
        metrics(retrieval_recall=0.5), baseline=baseline, dataset_version="v1", models=MODELS, qa_ids={"qa-a"}
    )
    check = check_for(result, "retrievalRecall")
    assert check.outcome == "FAIL" and check.bound == pytest.approx(0.98)
    assert "baseline over the 1 qa item that ran 1.0000" in check.reason
    # Both ran: the whole baseline's figure.
    both = evaluate_gate(
        metrics(retrieval_recall=0.5), baseline=baseline, dataset_version="v1", models=MODELS, qa_ids={"qa-a", "qa-b"}
    )
    assert check_for(both, "retrievalRecall").outcome == "PASS"
    assert "(baseline 0.5000 - margin" in check_for(both, "retrievalRecall").reason


def test_a_baseline_lacking_items_that_ran_is_skipped():
    baseline = _with_items(report(retrieval_recall=0.5))
    result = evaluate_gate(
        metrics(retrieval_recall=0.1), baseline=baseline, dataset_version="v1", models=MODELS, qa_ids={"qa-a", "qa-new"}
    )
    check = check_for(result, "retrievalRecall")
    assert check.outcome == "SKIP" and "lacks 1 of the 2 qa item(s) that ran" in check.reason


def test_margin_from_floors():
    baseline = report(retrieval_recall=0.95)
    floors = parse_floors({"retrievalRecallMargin": 0.05}, "test")
    result = evaluate_gate(
        metrics(retrieval_recall=0.92), floors=floors, baseline=baseline, dataset_version="v1", models=MODELS
    )
    assert check_for(result, "retrievalRecall").outcome == "PASS"


def test_cross_lineage_baseline_is_skipped_with_reason():
    baseline = report(retrieval_recall=0.99, models={"generate": "gen-b", "embed": "emb-a"})
    result = evaluate_gate(metrics(retrieval_recall=0.5), baseline=baseline, dataset_version="v1", models=MODELS)
    check = check_for(result, "retrievalRecall")
    assert check.outcome == "SKIP"
    assert check.reason == (
        "baseline model lineage generate=gen-b/embed=emb-a differs from generate=gen-a/embed=emb-a: a baseline arms "
        "recall only within its lineage; no absolute retrievalRecall floor is set, so recall is not gated "
        "(set one in floors, docs/gate.md)"
    )
    assert result.passed


def test_different_dataset_version_is_skipped():
    baseline = report(dataset_version="v0", retrieval_recall=0.99)
    result = evaluate_gate(metrics(retrieval_recall=0.5), baseline=baseline, dataset_version="v1", models=MODELS)
    assert check_for(result, "retrievalRecall").reason == "baseline is for dataset v0, this run is v1"
    assert check_for(result, "retrievalRecall").outcome == "SKIP"


def test_unknown_lineage_matches_no_baseline():
    unknown = {"generate": "unknown", "embed": "emb-a"}
    baseline = report(retrieval_recall=0.99, models=unknown)
    result = evaluate_gate(metrics(retrieval_recall=0.5), baseline=baseline, dataset_version="v1", models=unknown)
    check = check_for(result, "retrievalRecall")
    assert check.outcome == "SKIP"
    assert check.reason.startswith("model lineage unknown matches no baseline")


def test_no_baseline_is_skipped():
    result = evaluate_gate(metrics(), dataset_version="v1", models=MODELS)
    assert check_for(result, "retrievalRecall").reason == "no baseline given"


def test_baseline_without_recall_is_skipped():
    baseline = report(retrieval_recall=None)
    result = evaluate_gate(metrics(), baseline=baseline, dataset_version="v1", models=MODELS)
    assert check_for(result, "retrievalRecall").outcome == "SKIP"
    assert "baseline measured no retrievalRecall" in check_for(result, "retrievalRecall").reason


def test_absolute_recall_floor_is_a_separate_check():
    floors = parse_floors({"retrievalRecall": 0.95}, "test")
    result = evaluate_gate(metrics(retrieval_recall=0.92), floors=floors, dataset_version="v1", models=MODELS)
    recall_checks = [c for c in result.checks if c.metric == "retrievalRecall"]
    assert [c.outcome for c in recall_checks] == ["FAIL", "SKIP"]


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (MODELS, dict(MODELS), True),
        (MODELS, {"generate": "gen-a", "embed": "emb-b"}, False),
        ({"generate": "unknown", "embed": "e"}, {"generate": "unknown", "embed": "e"}, False),
        ({"generate": "g"}, {"generate": "g"}, False),
        (None, MODELS, False),
    ],
)
def test_same_lineage(a, b, expected):
    assert same_lineage(a, b) is expected


# --- floors parsing ----------------------------------------------------------------------------------


def test_parse_floors_merges_over_defaults():
    floors = parse_floors({"claimSupportPrecision": 0.8, "latencyMsP95": 250}, "test")
    assert floors["claimSupportPrecision"] == 0.8
    assert floors["latencyMsP95"] == 250.0
    assert floors["falsehoodRejection"] == 0.95
    assert floors["retrievalRecallMargin"] == 0.02


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"claimSupportPrecision": 1.5},
         "'1.5' is not a valid floor for claimSupportPrecision: expected a number in [0, 1] (from floors.json)"),
        ({"claimSupportPrecision": -0.1}, "'-0.1' is not a valid floor for claimSupportPrecision"),
        ({"claimSupportPrecision": "0.9"}, "'\"0.9\"' is not a valid floor for claimSupportPrecision"),
        ({"claimSupportPrecision": True}, "'true' is not a valid floor for claimSupportPrecision"),
        ({"claimSupportPrecision": math.nan}, "'NaN' is not a valid floor"),
        ({"latencyMsP95": math.inf}, "'Infinity' is not a valid ceiling for latencyMsP95: expected a number >= 0"),
        ({"latencyMsP95": -1}, "'-1' is not a valid ceiling for latencyMsP95: expected a number >= 0"),
        ({"errors": None}, "errors cannot be disabled with null"),
        ({"errors": 0.5}, "'0.5' is not a valid ceiling for errors: expected a whole number >= 0 (errors is a count"),
        ({"errors": -1}, "'-1' is not a valid ceiling for errors: expected a whole number >= 0"),
        ({"retrievalRecallMargin": 2}, "'2' is not a valid margin for retrievalRecallMargin"),
        ({"claimPrecision": 0.9}, "'claimPrecision' is not a metric with a floor or ceiling; valid names: "),
        ([0.9], "floors must be a JSON object"),
    ],
)  # fmt: skip
def test_parse_floors_rejects_bad_values(obj, message):
    with pytest.raises(FloorsError) as info:
        parse_floors(obj, "from floors.json")
    assert message in str(info.value)
    assert "(from floors.json)" in str(info.value)


def test_unknown_metric_message_lists_valid_names():
    with pytest.raises(FloorsError, match="claimSupportPrecision, claimSupportRecall"):
        parse_floors({"nope": 1}, "from f.json")


def test_load_floors_reads_file_and_names_it(tmp_path):
    path = tmp_path / "floors.json"
    path.write_text(json.dumps({"claimSupportRecall": 0.7}))
    assert load_floors(path)["claimSupportRecall"] == 0.7
    path.write_text('{"claimSupportRecall": 7}')
    with pytest.raises(FloorsError, match=r"\(from floors.json\)"):
        load_floors(path)
    path.write_text("{not json")
    with pytest.raises(FloorsError, match="is not valid JSON"):
        load_floors(path)
    with pytest.raises(FloorsError, match="cannot read floors file"):
        load_floors(tmp_path / "missing.json")


def test_errors_takes_a_whole_number_of_items():
    assert parse_floors({"errors": 2}, "t")["errors"] == 2.0
    assert parse_floors({"errors": 2.0}, "t")["errors"] == 2.0


def test_a_floors_file_naming_a_key_twice_is_refused_naming_the_key(tmp_path):
    # JSON itself would keep the last value: {"errors": 0, "errors": 5} would quietly allow 5 errors.
    path = tmp_path / "floors.json"
    path.write_text('{"errors": 0, "claimSupportRecall": 0.9, "errors": 5}')
    with pytest.raises(FloorsError) as info:
        load_floors(path)
    assert str(info.value) == (
        f"floors file {path}: duplicate key 'errors' (given 0 and then 5); each metric may appear once"
    )


def test_recorded_floors_are_validated_without_merging_the_defaults_back():
    run_floors = parse_floors({"temporalAccuracy": None}, "t")
    assert check_recorded_floors(run_floors, "recorded in r.json") == run_floors
    assert "temporalAccuracy" not in check_recorded_floors(run_floors, "recorded in r.json")
    with pytest.raises(FloorsError, match=r"'0.5' is not a valid ceiling for errors.*\(recorded in r.json\)"):
        check_recorded_floors({**run_floors, "errors": 0.5}, "recorded in r.json")


# --- formatting -----------------------------------------------------------------------------------


def test_format_check_one_line_with_units():
    result = evaluate_gate(
        metrics(latency_ms_p95=412.3456, falsehood_rejection=None),
        floors=parse_floors({"latencyMsP95": 400}, "t"),
        dataset_version="v1",
        models=MODELS,
    )
    latency = format_check(check_for(result, "latencyMsP95"))
    assert "\n" not in latency
    assert latency.split() == [
        "latencyMsP95",
        "412.3",
        "ms",
        "<=",
        "400.0",
        "ms",
        "FAIL",
        "412.3",
        "ms",
        ">",
        "400.0",
        "ms",
    ]
    recall = format_check(check_for(result, "falsehoodRejection"))
    assert recall.split()[:5] == ["falsehoodRejection", "n/a", ">=", "0.9500", "SKIP"]
    assert recall.endswith("no items measured this metric (n/a)")


# --- a target that returns no claims --------------------------------------------------------------


def test_a_target_that_returns_no_claims_fails_the_claim_floors():
    silent = metrics(
        claim_support_precision=None,
        claim_support_recall=None,
        qa_claims=0,
        items_by_kind={"qa": 5, "adversarial": 0, "temporal": 0, "citation": 0, "review": 0},
    )
    result = evaluate_gate(silent, dataset_version="v1", models=MODELS)
    for metric in ("claimSupportPrecision", "claimSupportRecall"):
        check = check_for(result, metric)
        assert check.outcome == "FAIL" and "returned no claims" in check.reason
    assert not result.passed
    # With no qa items at all (a -k adversarial slice), no qa item could measure it: the
    # claim floors are left out of the table, neither FAIL nor SKIP (docs/gate.md).
    sliced = metrics(
        claim_support_precision=None,
        claim_support_recall=None,
        qa_claims=0,
        items_by_kind={"qa": 0, "adversarial": 5, "temporal": 0, "citation": 0, "review": 0},
    )
    sliced_result = evaluate_gate(sliced, dataset_version="v1", models=MODELS)
    assert not [c for c in sliced_result.checks if c.metric.startswith("claimSupport")]
    assert sliced_result.passed


# --- issue 19: nothing gated, manifest floors, NOT GATED, baselines of another version -----------


CITATION_ONLY = {"qa": 0, "adversarial": 0, "temporal": 0, "citation": 4, "review": 0}


def citation_metrics(**overrides) -> Metrics:
    return Metrics(
        **{
            "citation_metadata_accuracy": 0.7,
            "evidence_risk_score": 1.0,
            "items": 4,
            "items_by_kind": CITATION_ONLY,
            **overrides,
        }
    )


def test_a_gate_that_checks_only_errors_fails_naming_what_was_measured():
    result = evaluate_gate(citation_metrics(), dataset_version="c", models=MODELS)
    assert not result.passed
    assert [c.metric for c in result.checks] == ["errors", "qualityBounds"]
    check = check_for(result, "qualityBounds")
    assert check.outcome == "FAIL"
    assert check.reason.startswith(
        "nothing gated: no quality metric was compared with a bound (only error counts); "
        "measured: citationMetadataAccuracy 0.7000, evidenceRiskScore 1.0000; arm a floor in the dataset manifest's"
    )
    assert "--eval-no-gate" in check.reason
    assert format_check(check).split()[:5] == ["qualityBounds", "0", ">=", "1", "FAIL"]


def test_a_gate_whose_every_item_errored_says_so_instead_of_asking_for_a_floor():
    errored = citation_metrics(citation_metadata_accuracy=None, evidence_risk_score=None, errors=4)
    floors = parse_floors({"citationMetadataAccuracy": 0.9})
    result = evaluate_gate(errored, floors=floors, dataset_version="c", models=MODELS)
    assert check_for(result, "errors").outcome == "FAIL" and not result.passed
    check = check_for(result, "qualityBounds")
    assert check.outcome == "FAIL" and "arm a floor" not in check.reason
    assert check.reason.startswith("nothing gated: every item errored (4 of 4), so no quality metric was measured")
    # One item measured: the usual reason, which names what was measured and how to arm a floor.
    some = evaluate_gate(citation_metrics(errors=3), dataset_version="c", models=MODELS)
    assert "arm a floor" in check_for(some, "qualityBounds").reason


def test_a_gate_whose_floors_were_all_skipped_names_them_instead_of_asking_for_a_floor():
    # Every answer cited nothing: the accuracy is n/a, its floor skipped, and the floor is there already.
    uncited = citation_metrics(citation_metadata_accuracy=None, citation_uncited_answers=4)
    floors = parse_floors({"citationMetadataAccuracy": 0.9})
    result = evaluate_gate(uncited, floors=floors, dataset_version="c", models=MODELS)
    assert check_for(result, "citationUncitedAnswers").outcome == "FAIL"  # armed by the accuracy's floor
    check = check_for(result, "qualityBounds")
    assert check.outcome == "FAIL" and "arm a floor" not in check.reason
    assert check.reason == (
        "nothing gated: the bound(s) on citationMetadataAccuracy were skipped, as no item gave it a value (n/a); "
        "the failed items' details say why"
    )


def test_error_count_ceilings_alone_arm_nothing_but_a_latency_ceiling_does():
    judged = citation_metrics(judge_errors=0, latency_ms_p95=80.0)
    only_counts = evaluate_gate(
        judged, floors=parse_floors({"judgeErrors": 2, "errors": 1}), dataset_version="c", models=MODELS
    )
    assert check_for(only_counts, "qualityBounds").outcome == "FAIL"
    ceiling = evaluate_gate(judged, floors=parse_floors({"latencyMsP95": 100}), dataset_version="c", models=MODELS)
    assert ceiling.passed and not [c for c in ceiling.checks if c.metric == "qualityBounds"]
    # A quality bound that is n/a arms nothing either.
    n_a = evaluate_gate(
        citation_metrics(evidence_risk_score=None),
        floors=parse_floors({"evidenceRiskScore": 0.5}),
        dataset_version="c",
        models=MODELS,
    )
    assert check_for(n_a, "evidenceRiskScore").outcome == "SKIP" and check_for(n_a, "qualityBounds").outcome == "FAIL"


def test_a_citation_only_gate_lists_no_qa_adversarial_or_temporal_bounds():
    result = evaluate_gate(
        citation_metrics(), floors=parse_floors({"citationMetadataAccuracy": 0.6}), dataset_version="c", models=MODELS
    )
    assert [c.metric for c in result.checks] == ["citationMetadataAccuracy", "errors"]
    assert result.passed


def test_not_gated_checks_only_the_error_counts():
    from pytest_groundeval.core.gate import verdict

    bad = metrics(claim_support_precision=0.1, falsehood_rejection=0.0)
    result = evaluate_gate(
        bad, floors=parse_floors({"latencyMsP95": 1}), dataset_version="v1", models=MODELS, gated=False
    )
    assert [c.metric for c in result.checks] == ["errors"]
    assert result.passed and not result.gated and verdict(result) == "NOT GATED"
    errored = evaluate_gate(metrics(errors=1), dataset_version="v1", models=MODELS, gated=False)
    assert not errored.passed and verdict(errored) == "FAIL (not gated: errors failed)"
    assert verdict(errored.to_wire()) == verdict(errored)
    assert verdict(evaluate_gate(metrics(), dataset_version="v1", models=MODELS)) == "PASS"


def test_manifest_floors_and_a_floors_file_merge_key_by_key():
    from pytest_groundeval.core.gate import check_floors, merge_floors

    manifest = check_floors({"citationMetadataAccuracy": 0.9, "evidenceRiskScore": 0.5, "temporalAccuracy": None})
    file = check_floors({"citationMetadataAccuracy": 0.7, "claimSupportPrecision": None})
    merged = merge_floors(manifest, file)
    assert merged["citationMetadataAccuracy"] == 0.7  # the file wins for the key it names
    assert merged["evidenceRiskScore"] == 0.5  # the manifest's other keys stay
    assert "temporalAccuracy" not in merged and "claimSupportPrecision" not in merged
    assert merged["errors"] == 0 and merged["retrievalRecallMargin"] == DEFAULT_FLOORS["retrievalRecallMargin"]
    with pytest.raises(FloorsError) as info:
        check_floors({"evidenceRiskScore": 2}, "x")
    assert info.value.key == "evidenceRiskScore"


def test_a_baseline_of_another_lineage_leaves_the_absolute_recall_floor_to_decide():
    baseline = report(retrieval_recall=0.99, models={"generate": "gen-b", "embed": "emb-a"})
    result = evaluate_gate(
        metrics(retrieval_recall=0.5),
        floors=parse_floors({"retrievalRecall": 0.8}),
        baseline=baseline,
        dataset_version="v1",
        models=MODELS,
    )
    absolute, skipped = [c for c in result.checks if c.metric == "retrievalRecall"]
    assert absolute.outcome == "FAIL" and absolute.reason == "0.5000 < 0.8000"
    assert skipped.outcome == "SKIP"
    assert skipped.reason.endswith(
        "a baseline arms recall only within its lineage; the absolute retrievalRecall floor 0.8000 applies"
    )
    assert not result.passed


# --- issue 21: the baseline recall check judged by the paired test (docs/statistics.md) ------------


def _paired_gate(baseline_items, run_items, floors=None, alpha=0.05):
    """The end of a run of ``run_items`` against a baseline report of ``baseline_items``, as the plugin ends it."""
    run = RunOutcomes.of(run_items)
    end = finalize_run(
        run,
        floors=parse_floors(floors or {}, "test"),
        baseline=report_of(baseline_items),
        baseline_ids=run.baseline_ids,
        dataset_version="v1",
        models=PAIRED_MODELS,
        alpha=alpha,
    )
    (check,) = [c for c in end.gate.checks if c.metric == "retrievalRecall"]
    return check, end


def test_one_lost_item_of_369_beyond_the_margin_is_noise_and_passes():
    check, end = _paired_gate(
        qa_items(evidence_items=160), qa_items(lost={126}, evidence_items=160), {"retrievalRecallMargin": 0.005}
    )
    assert check.outcome == "PASS" and check.value < check.bound  # beyond the margin, not significant
    assert check.reason == (
        "0.9938 < 0.9950 (baseline 1.0000 - margin 0.0050); not significant (p=1.0000) over 160 paired qa items "
        "at alpha 0.05: a drop within noise, not failed"
    )
    assert (end.baseline.recall_p_value, end.baseline.paired_items, end.baseline.alpha) == (1.0, 160, 0.05)
    assert end.gate.passed


def test_a_planted_recall_regression_is_significant_and_fails():
    check, end = _paired_gate(qa_items(), qa_items(lost=set(range(0, 369, 9))))  # 41 items lose their evidence
    assert check.outcome == "FAIL" and not end.gate.passed
    assert check.reason == (
        "0.8889 < 0.9800 (baseline 1.0000 - margin 0.0200); significant (p=0.0005) over 369 paired qa items "
        "at alpha 0.05"
    )
    # Re-gated from what the report records (groundeval gate --report): the same decision, no baseline file.
    again = evaluate_gate(end.metrics, baseline=end.baseline, dataset_version="v1", models=end.baseline.models)
    assert check_for(again, "retrievalRecall") == check
    wire = end.baseline.to_wire()
    assert (wire["recallPValue"], wire["pairedItems"], wire["alpha"]) == (1 / 2001, 369, 0.05)


def test_too_few_items_for_any_significance_keep_the_fixed_margin():
    # Four qa items (a -k slice, the smoke dataset): no change of them can reach p < 0.05.
    check, _ = _paired_gate(qa_items(4), qa_items(4, lost={0, 1, 2, 3}))
    assert check.outcome == "FAIL"
    assert check.reason.endswith(
        "not significant (p=0.1250) over 4 paired qa items; fixed margin: 4 paired qa items cannot reach alpha 0.05 "
        "(the smallest p they can give is 0.1250)"
    )
    # A level they can reach: the test decides.
    check, _ = _paired_gate(qa_items(4), qa_items(4, lost={0, 1, 2, 3}), alpha=0.2)
    assert check.outcome == "FAIL" and check.reason.endswith(
        "significant (p=0.1250) over 4 paired qa items at alpha 0.2"
    )
    check, _ = _paired_gate(qa_items(4), qa_items(4, lost={0, 1, 2}), alpha=0.2)
    assert check.outcome == "PASS" and check.reason.endswith("a drop within noise, not failed")


def test_a_baseline_that_lists_no_items_keeps_the_fixed_margin_and_says_so():
    result = evaluate_gate(metrics(retrieval_recall=0.92), baseline=report(retrieval_recall=0.95), dataset_version="v1",
                           models=MODELS)  # fmt: skip
    check = check_for(result, "retrievalRecall")
    assert check.outcome == "FAIL"
    assert check.reason == (
        "0.9200 < 0.9300 (baseline 0.9500 - margin 0.0200); fixed margin, no paired test (the baseline lists no items)"
    )
    assert "recallPValue" not in summarize_baseline(report(retrieval_recall=0.95), None).to_wire()


def test_a_recall_within_the_margin_passes_with_its_reason_unchanged():
    check, end = _paired_gate(qa_items(), qa_items(lost={5}))
    assert check.outcome == "PASS" and check.reason == "0.9973 >= 0.9800 (baseline 1.0000 - margin 0.0200)"
    assert end.baseline.recall_p_value == 1.0
