"""Tests for pytest_groundeval.core.finalize (docs/gate.md): the one end-of-run path, and its leaf models.

Every path that ends a run (plugin, merge, ``groundeval gate``, rejudge, recovery, the
report's own gate check) calls ``finalize_run``; these tests pin what it adds after
``evaluate_gate`` for each flag, and where the baseline's items come from.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pytest_groundeval.core.finalize import EXTRA_CHECKS, Finalized, RunFlags, RunOutcomes, finalize_run
from pytest_groundeval.core.gate import evaluate_gate, summarize_baseline
from pytest_groundeval.core.kinds import KIND_NAMES, get
from pytest_groundeval.core.lineage import BaselineInfo, MergeInfo, ModelLineage
from pytest_groundeval.core.metrics import compute_metrics
from pytest_groundeval.core.outcome import ItemOutcome
from pytest_groundeval.core.report import Report

MODELS = {"generate": "gen-a", "embed": "emb-a"}
CORE = Path(__file__).resolve().parents[2] / "pytest_groundeval" / "core"


def _outcomes() -> list[ItemOutcome]:
    return [
        ItemOutcome(id="qa-a", kind="qa", passed=True, evidence_expected=2, evidence_found=2,
                    claims_supported=1, claims_supported_true=1, claims_true_cited=1, claims_true_cited_supported=1),
        ItemOutcome(id="qa-b", kind="qa", passed=False, error="not run: stopped", not_run=True, evidence_expected=2),
        ItemOutcome(id="adv-c", kind="adversarial", passed=True, falsehood_supported=False),
    ]  # fmt: skip


def _baseline(items: list[ItemOutcome]) -> Report:
    metrics = compute_metrics(items)
    return Report(
        dataset_version="v1",
        models=MODELS,
        started_at_ms=1,
        duration_ms=1,
        metrics=metrics,
        gate=evaluate_gate(metrics, dataset_version="v1", models=MODELS),
        environment={"pluginVersion": "0.1.0", "python": "3.11", "platform": "linux", "gitCommit": None},
        items=items,
    )


def _finalize(outcomes: RunOutcomes, **kwargs) -> Finalized:
    return finalize_run(outcomes, dataset_version="v1", models=MODELS, **kwargs)


def test_run_outcomes_count_items_never_run_and_the_baseline_kinds_ids():
    run = RunOutcomes.of(_outcomes())
    assert (run.items, run.not_run, run.baseline_ids) == (3, 1, {"qa-a", "qa-b"})
    assert run.metrics() == compute_metrics(_outcomes())
    # Wire dicts are read as outcomes.
    assert RunOutcomes.of(o.to_wire() for o in _outcomes()).baseline_ids == {"qa-a", "qa-b"}


def test_counted_outcomes_need_their_metrics_given():
    run = RunOutcomes.counted(_outcomes())
    assert (run.items, run.not_run) == (3, 1)
    with pytest.raises(ValueError, match="only counted"):
        _finalize(run)
    given = compute_metrics(_outcomes())
    assert _finalize(run, metrics=given).metrics is given


def test_without_flags_the_gate_is_evaluate_gates():
    items = [o for o in _outcomes() if not o.not_run]
    end = _finalize(RunOutcomes.of(items))
    assert end.metrics == compute_metrics(items)
    assert end.gate == evaluate_gate(end.metrics, dataset_version="v1", models=MODELS)
    assert end.baseline is None
    assert end.evaluated == end.gate.checks


def test_each_flag_adds_its_fail_check_in_order():
    merge = MergeInfo(shards=["1/2"], missing_shards=["2/2"], dataset_items=5, missing_items=2)
    end = _finalize(RunOutcomes.of(_outcomes()), flags=RunFlags(interrupted=True, merge=merge))
    extra = end.gate.checks[-3:]
    assert [c.metric for c in extra] == list(EXTRA_CHECKS) == ["notRun", "run", "items"]
    assert all(c.outcome == "FAIL" for c in extra) and not end.gate.passed
    assert extra[0].reason == "1 of 3 collected items never ran (counted as errors)"
    assert extra[1].reason == "interrupted after 2 items: the metrics cover only part of the selection"
    assert extra[2].reason.startswith("2 of 5 dataset items missing from the merged shards; shard(s) 2/2 not given")
    assert [c.metric for c in end.evaluated] == [c.metric for c in end.gate.checks[:-3]]


def test_items_that_never_ran_fail_a_run_that_was_not_interrupted():
    end = _finalize(RunOutcomes.of(_outcomes()))
    assert [c.metric for c in end.gate.checks if c.metric in EXTRA_CHECKS] == ["notRun"]
    assert not end.gate.passed


def test_a_merge_leaves_never_run_items_to_the_interrupted_check():
    # A merge counts every merged item in the interrupted check and adds no notRun check.
    end = _finalize(RunOutcomes.of(_outcomes()), flags=RunFlags(interrupted=True, not_run_check=False))
    (extra,) = [c for c in end.gate.checks if c.metric in EXTRA_CHECKS]
    assert extra.metric == "run" and extra.reason.startswith("interrupted after 3 items")


def test_a_merge_with_nothing_missing_adds_nothing():
    merge = MergeInfo(shards=["1/1"], dataset_items=2, missing_items=0)
    items = [o for o in _outcomes() if not o.not_run]
    end = _finalize(RunOutcomes.of(items), flags=RunFlags(merge=merge))
    assert not [c for c in end.gate.checks if c.metric in EXTRA_CHECKS]


def test_a_run_not_gated_stays_not_gated_with_its_flags():
    end = _finalize(RunOutcomes.of(_outcomes()), gated=False, flags=RunFlags(interrupted=True))
    assert end.gate.gated is False and not end.gate.passed
    assert [c.metric for c in end.gate.checks][-2:] == ["notRun", "run"]


def test_a_baseline_report_is_summarised_over_the_ids_given_and_recorded():
    baseline = _baseline([o for o in _outcomes() if not o.not_run] + [
        ItemOutcome(id="qa-b", kind="qa", passed=False, evidence_expected=2, evidence_found=0)])  # fmt: skip
    run = RunOutcomes.of([o for o in _outcomes() if o.id != "qa-b"])
    end = _finalize(run, baseline=baseline, baseline_path="b.json", baseline_ids=run.baseline_ids)
    # The run's figures ride along: the recall check pairs them with the baseline's (docs/statistics.md).
    assert end.baseline == summarize_baseline(baseline, {"qa-a"}, "b.json", run.baseline_figures)
    assert (end.baseline.recall_p_value, end.baseline.paired_items, end.baseline.alpha) == (1.0, 1, 0.05)
    assert (end.baseline.qa_items, end.baseline.baseline_qa_items, end.baseline.retrieval_recall) == (1, 2, 1.0)
    # None: the baseline's overall figure.
    whole = _finalize(run, baseline=baseline, baseline_path="b.json")
    assert whole.baseline.qa_items is None and whole.baseline.retrieval_recall == 0.5
    # A recorded baseline is used as it is.
    assert _finalize(run, baseline=end.baseline, baseline_ids={"other"}).baseline is end.baseline


def test_the_kinds_say_which_use_the_baseline():
    assert [name for name in KIND_NAMES if get(name).uses_baseline] == ["qa"]


def test_the_baseline_ids_come_from_the_kind_not_its_name(monkeypatch):
    # A kind that says it uses the baseline gets its ids collected and summarised.
    monkeypatch.setattr(type(get("adversarial")), "uses_baseline", True)
    monkeypatch.setattr(type(get("qa")), "uses_baseline", False)
    assert RunOutcomes.of(_outcomes()).baseline_ids == {"adv-c"}
    info = summarize_baseline(_baseline(_outcomes()), {"adv-c"})
    assert (info.qa_items, info.baseline_qa_items, info.missing_items) == (1, 1, 0)


def _function_level_package_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom) and (inner.level or "pytest_groundeval" in (inner.module or "")):
                    found.append(f"{path.name}:{inner.lineno}")
    return found


@pytest.mark.parametrize("name", ["gate.py", "report.py", "finalize.py", "recover.py", "lineage.py"])
def test_the_end_of_run_modules_import_the_package_at_top_level_only(name):
    assert _function_level_package_imports(CORE / name) == []


def test_gate_and_report_do_not_import_each_other_and_lineage_is_a_leaf():
    def runtime_imports(name: str) -> set[str]:
        tree = ast.parse((CORE / name).read_text(encoding="utf-8"))
        found = set()
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.level:
                found.add(node.module or "")
        return found

    assert "report" not in runtime_imports("gate.py")
    assert "gate" in runtime_imports("report.py")
    assert runtime_imports("lineage.py") == {"wire"}
    assert (
        BaselineInfo.__module__ == ModelLineage.__module__ == MergeInfo.__module__ == "pytest_groundeval.core.lineage"
    )


def test_the_report_module_stays_under_800_lines():
    assert len((CORE / "report.py").read_text(encoding="utf-8").splitlines()) < 800


# --- confidence intervals and --eval-gate-on (docs/statistics.md) -------------------------------------


def _recall_run(items: int = 12, short: int = 2) -> list[ItemOutcome]:
    """``items`` qa items of two expected strings, ``short`` of them finding one: recall (2n - short) / 2n."""
    return [
        ItemOutcome(id=f"qa-{i}", kind="qa", passed=i >= short, evidence_expected=2, evidence_found=1 if i < short else 2,
                    claims_supported=1, claims_supported_true=1, claims_true_cited=1, claims_true_cited_supported=1)
        for i in range(items)
    ]  # fmt: skip


def test_finalize_gives_every_rates_interval_the_same_whether_metrics_are_counted_or_given():
    items = _recall_run() + [o for o in _outcomes() if o.kind == "adversarial"]
    end = _finalize(RunOutcomes.of(items))
    recall = end.confidence["retrievalRecall"]
    assert recall is not None and recall.method == "bootstrap" and recall.low < 22 / 24 < recall.high
    assert end.confidence["falsehoodRejection"].method == "wilson"
    assert end.confidence["temporalAccuracy"] is None  # no temporal item: n/a, no interval
    counted = _finalize(RunOutcomes.counted(items), metrics=end.metrics)
    assert counted.confidence == end.confidence
    assert _finalize(RunOutcomes.of(items), confidence_level=0.8).confidence["retrievalRecall"].low > recall.low
    with pytest.raises(ValueError, match="confidence level"):
        _finalize(RunOutcomes.of(items), confidence_level=1.0)


def test_gate_on_lower_bound_fails_a_floor_that_the_value_passes():
    # Recall 22/24 = 0.9167 passes a 0.90 floor; its 95% interval over 12 items reaches well below it.
    items = _recall_run()
    floors = {"retrievalRecall": 0.90, "errors": 0}
    point = _finalize(RunOutcomes.of(items), floors=floors)
    lower = _finalize(RunOutcomes.of(items), floors=floors, gate_on="lower-bound")
    (by_point,) = [c for c in point.gate.checks if c.metric == "retrievalRecall" and c.bound == 0.9]
    (by_low,) = [c for c in lower.gate.checks if c.metric == "retrievalRecall" and c.bound == 0.9]
    interval = lower.confidence["retrievalRecall"]
    assert interval is not None and interval.low < 0.9 < 22 / 24
    assert (by_point.outcome, by_point.gated_on, point.gate.passed) == ("PASS", None, True)
    assert (by_low.outcome, by_low.gated_on, lower.gate.passed) == ("FAIL", "low", False)
    assert by_low.value == pytest.approx(22 / 24)  # the value stays the point estimate
    assert by_low.reason.startswith(f"low end {interval.low:.4f} < 0.9000 (value 0.9167, 95% interval [")
    assert lower.gate.gate_on == "lower-bound" and lower.gate.to_wire()["gateOn"] == "lower-bound"
    assert "gateOn" not in point.gate.to_wire() and "gatedOn" not in by_point.to_wire()
    # With a hundred times the items at the same recall the interval clears the floor: the same gate passes.
    assert _finalize(RunOutcomes.of(_recall_run(1200, 200)), floors=floors, gate_on="lower-bound").gate.passed


def test_gate_on_lower_bound_compares_a_ceiling_with_the_high_end_and_leaves_other_figures_on_the_value():
    items = [
        ItemOutcome(id=f"cit-{i}", kind="citation", passed=True, latency_ms=10.0,
                    extra={"citationParagraphsJudged": 2, "citationParagraphsWrongSpeaker": int(i == 0),
                           "citationParagraphsSupported": 2 - int(i == 0), "citationJudgeErrors": 0})
        for i in range(10)
    ]  # fmt: skip
    floors = {"wrongSpeakerRate": 0.10, "latencyMsP95": 50.0, "errors": 0}
    end = _finalize(RunOutcomes.of(items), floors=floors, gate_on="lower-bound")
    checks = {c.metric: c for c in end.gate.checks}
    high = end.confidence["wrongSpeakerRate"].high
    assert end.metrics.wrong_speaker_rate == 0.05 < 0.10 < high
    assert (checks["wrongSpeakerRate"].outcome, checks["wrongSpeakerRate"].gated_on) == ("FAIL", "high")
    assert checks["wrongSpeakerRate"].reason.startswith(f"high end {high:.4f} > 0.1000")
    # Latency has no interval: compared by its value, as under point.
    assert (checks["latencyMsP95"].outcome, checks["latencyMsP95"].gated_on) == ("PASS", None)
    assert _finalize(RunOutcomes.of(items), floors=floors).gate.passed
