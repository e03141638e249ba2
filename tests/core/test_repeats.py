"""Repeats (docs/gate.md, "Repeats"): an item's attempts, pass@k and pass^k, and a run without repeats unchanged.

The plugin's side (``--eval-repeat``, xdist, temporal isolation, shards): tests/plugin/test_repeats.py.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from pytest_groundeval.core.evidence import EvidenceReview
from pytest_groundeval.core.gate import evaluate_gate, parse_floors
from pytest_groundeval.core.metrics import MetricsAccumulator, compute_metrics
from pytest_groundeval.core.outcome import ItemOutcome, as_attempts, outcome_of_attempts
from pytest_groundeval.core.report import Report, ReportError, parse_report
from tests._support.sample_report import finish_kwargs, sample_outcomes

MODELS = {"generate": "g", "embed": "e"}


def qa(passed: bool, found: int = 2, **kw) -> ItemOutcome:
    return ItemOutcome(id="qa-1", kind="qa", passed=passed, evidence_expected=2, evidence_found=found, **kw)


def repeated(report_items: list[ItemOutcome], repeat: int) -> dict:
    """A valid report wire dict of ``report_items`` (each with ``repeat`` attempts), gated on its own metrics."""
    return Report(**finish_kwargs(report_items), items=report_items, repeat=repeat).to_wire()


# --- one item's attempts ------------------------------------------------------------------------


def test_an_item_passes_only_when_every_attempt_passed_and_sums_its_attempts():
    review_ok = EvidenceReview(reviewed=True, risk_score=0.0, score=1.0)
    review_bad = EvidenceReview(reviewed=True, risk_score=2 / 3, score=1 / 3, passed=False)
    attempts = [
        qa(True, latency_ms=10.0, prompt_tokens=100, completion_tokens=5, evidence_review=review_ok,
           trace_id="t1", extra={"tags": ["smoke"], "question": "Q?", "answer": "first"}),
        qa(False, found=1, latency_ms=30.0, prompt_tokens=120, evidence_review=review_bad, detail="missed one",
           extra={"tags": ["smoke"], "question": "Q?", "answer": "second"}),
        qa(True, latency_ms=20.0, completion_tokens=7, extra={"tags": ["smoke"], "question": "Q?"}),
    ]  # fmt: skip
    item = outcome_of_attempts(attempts)
    assert item.passed is False and item.error is None and item.pass_rate == pytest.approx(2 / 3)
    assert item.attempts == attempts
    assert (item.evidence_expected, item.evidence_found) == (6, 5)
    assert (item.latency_ms, item.prompt_tokens, item.completion_tokens) == (60.0, 220, 12)
    assert item.evidence_review == review_bad  # the lowest-scoring attempt's
    assert item.trace_id is None and item.extra == {"tags": ["smoke"], "question": "Q?"}
    assert item.detail.splitlines() == ["2 of 3 attempts passed", "attempt 2 failed: missed one"]
    assert outcome_of_attempts(attempts[:1] * 2).passed is True


def test_an_errored_attempt_is_counted_and_makes_the_item_an_error():
    down = ItemOutcome(id="qa-1", kind="qa", passed=False, error="connection refused", evidence_expected=2)
    item = outcome_of_attempts([qa(True), down])
    assert item.error == "1 of 2 attempts could not be run; attempt 2: connection refused"
    assert item.pass_rate == 0.5 and not item.passed and not item.not_run
    metrics = compute_metrics([item])
    # The errored attempt is not dropped: it counts as an error and its evidence as not found.
    assert (metrics.errors, metrics.items, metrics.retrieval_recall) == (1, 2, 0.5)
    assert (metrics.pass_at_k, metrics.pass_hat_k) == (1.0, 0.0)


def test_an_item_that_never_ran_loses_every_attempt():
    never = ItemOutcome(id="tmp-1", kind="temporal", passed=False, error="not run: stopped", not_run=True)
    assert as_attempts(never, 1) is never
    item = as_attempts(never, 3)
    assert item.not_run and len(item.attempts or []) == 3 and item.pass_rate == 0.0
    metrics = compute_metrics([item])
    assert (metrics.errors, metrics.items, metrics.temporal_accuracy, metrics.pass_at_k) == (3, 3, 0.0, 0.0)


def test_falsehood_supported_by_any_attempt_is_supported_by_the_item():
    adv = [ItemOutcome(id="a", kind="adversarial", passed=s is False, falsehood_supported=s) for s in (False, True)]
    assert outcome_of_attempts(adv).falsehood_supported is True
    assert outcome_of_attempts(adv[:1]).falsehood_supported is False


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"passRate": 1.0}, "passRate is 1.0 but 1 of 2 attempts passed"),
        ({"pass": True, "passRate": 0.5}, "pass is true but 1 of 2 attempts passed"),
        ({"error": "boom"}, "an item errored exactly when one of its attempts errored"),
        ({"attempts": []}, "attempts is empty"),
        ({"attempts": None}, "passRate is given without attempts"),
    ],
)
def test_attempts_that_do_not_add_up_are_refused(change, message):
    wire = outcome_of_attempts([qa(True), qa(False)]).to_wire()
    wire.update(change)
    with pytest.raises(ValidationError, match=message):
        ItemOutcome.model_validate(wire)


def test_attempts_are_one_items_and_never_nested():
    item = outcome_of_attempts([qa(True), qa(True)])
    nested = item.to_wire()
    nested["attempts"][0] = item.to_wire()
    with pytest.raises(ValidationError, match=r"attempts\[0\] has attempts of its own"):
        ItemOutcome.model_validate(nested)
    other = item.to_wire()
    other["attempts"][1]["id"] = "qa-2"
    with pytest.raises(ValidationError, match=r"attempts\[1\] is qa item 'qa-2', not this qa item 'qa-1'"):
        ItemOutcome.model_validate(other)


def test_an_outcome_without_attempts_keeps_its_wire_shape():
    wire = qa(True).to_wire()
    assert "attempts" not in wire and "passRate" not in wire
    repeated_wire = outcome_of_attempts([qa(True), qa(True)]).to_wire()
    assert list(repeated_wire)[-2:] == ["attempts", "passRate"]
    assert all("attempts" not in attempt and "passRate" not in attempt for attempt in repeated_wire["attempts"])
    assert ItemOutcome.model_validate(repeated_wire).to_wire() == repeated_wire


# --- metrics over attempts ----------------------------------------------------------------------


def _runs() -> list[list[ItemOutcome]]:
    review = EvidenceReview(reviewed=True, risk_score=1 / 3, score=2 / 3)
    return [
        [qa(True, latency_ms=12.0, prompt_tokens=90), qa(False, found=0, latency_ms=40.0, prompt_tokens=110)],
        [ItemOutcome(id="adv", kind="adversarial", passed=True, falsehood_supported=False, latency_ms=8.0)] * 2,
        [ItemOutcome(id="tmp", kind="temporal", passed=True), ItemOutcome(id="tmp", kind="temporal", passed=False,
                                                                          error="timeout")],
        [ItemOutcome(id="rev", kind="review", passed=True, evidence_review=review)] * 2,
        [ItemOutcome(id="cit", kind="citation", passed=False, extra={"citationParagraphsJudged": 2,
                                                                     "citationParagraphsMismatched": 1})] * 2,
    ]  # fmt: skip


def test_every_existing_metric_is_computed_over_all_attempts():
    runs = _runs()
    items = [outcome_of_attempts(attempts) for attempts in runs]
    flat = [attempt for attempts in runs for attempt in attempts]
    over_items = compute_metrics(items).to_wire()
    # Four items pass at least once (all but citation), two every time (adversarial, review).
    assert (over_items.pop("passAtK"), over_items.pop("passHatK")) == (4 / 5, 2 / 5)
    assert over_items == compute_metrics(flat).to_wire()
    assert over_items["items"] == 10 and over_items["errors"] == 1


def test_without_repeats_the_metrics_have_no_pass_at_k_keys():
    metrics = compute_metrics(sample_outcomes()).to_wire()
    assert "passAtK" not in metrics and "passHatK" not in metrics
    assert compute_metrics(sample_outcomes()).pass_at_k is None


@settings(max_examples=60, deadline=None)
@given(
    patterns=st.lists(st.lists(st.booleans(), min_size=3, max_size=3), min_size=1, max_size=12),
    split=st.integers(min_value=0, max_value=12),
)
def test_pass_hat_k_never_exceeds_pass_at_k_and_any_split_gives_the_same_figures(patterns, split):
    items = [
        outcome_of_attempts([ItemOutcome(id=f"t{i}", kind="temporal", passed=p) for p in pattern])
        for i, pattern in enumerate(patterns)
    ]
    whole = compute_metrics(items)
    assert whole.pass_hat_k <= whole.pass_at_k
    assert whole.pass_at_k == sum(any(p) for p in patterns) / len(patterns)
    assert whole.pass_hat_k == sum(all(p) for p in patterns) / len(patterns)
    assert whole.temporal_accuracy == sum(map(sum, patterns)) / (3 * len(patterns))
    first, second = MetricsAccumulator(), MetricsAccumulator()
    for n, item in enumerate(items):
        (first if n < split else second).add(item)
    assert first.merge(second).result() == whole  # xdist workers' partial results


# --- the gate ----------------------------------------------------------------------------------


def test_a_pass_hat_k_floor_fails_a_target_that_fails_some_attempts_while_pass_at_k_passes():
    flaky = [outcome_of_attempts([qa(True), qa(False, found=1)])]
    floors = parse_floors({"passAtK": 1.0, "passHatK": 1.0, "retrievalRecall": None})
    gate = evaluate_gate(compute_metrics(flaky), floors=floors, dataset_version="v", models=MODELS)
    outcomes = {c.metric: (c.outcome, c.reason) for c in gate.checks}
    assert outcomes["passAtK"] == ("PASS", "1.0000 >= 1.0000")
    assert outcomes["passHatK"] == ("FAIL", "0.0000 < 1.0000")
    assert not gate.passed


def test_a_pass_k_floor_on_a_run_without_repeats_fails_saying_how_to_measure_it():
    floors = parse_floors({"passHatK": 0.9})
    gate = evaluate_gate(compute_metrics([qa(True)]), floors=floors, dataset_version="v", models=MODELS)
    (check,) = [c for c in gate.checks if c.metric == "passHatK"]
    assert check.outcome == "FAIL" and "--eval-repeat N (N >= 2)" in check.reason


# --- the report --------------------------------------------------------------------------------


def test_a_repeated_report_round_trips_and_records_its_repeat():
    items = [outcome_of_attempts(attempts) for attempts in _runs()]
    wire = repeated(items, 2)
    assert wire["repeat"] == 2 and wire["metrics"]["passHatK"] == 0.4
    assert parse_report(json.loads(json.dumps(wire)), "r.json").to_wire() == wire


def test_a_report_whose_items_do_not_list_repeat_attempts_is_refused():
    items = [outcome_of_attempts(attempts) for attempts in _runs()]
    wire = repeated(items, 2)
    with pytest.raises(ReportError, match=r"items\[0\]\.attempts: item 'qa-1' lists 2 attempt\(s\) but the report's "
                                          r"repeat is 3"):  # fmt: skip
        parse_report({**wire, "repeat": 3}, "r.json")
    with pytest.raises(ReportError, match=r"items\[0\]\.attempts: .* lists 2 attempt\(s\) but the report's run has"):
        parse_report({k: v for k, v in wire.items() if k != "repeat"}, "r.json")
    plain = Report(**finish_kwargs(sample_outcomes()), items=sample_outcomes()).to_wire()
    with pytest.raises(ReportError, match=r"items\[0\]\.attempts: item 'qa-1' lists no attempt\(s\)"):
        parse_report({**plain, "repeat": 2}, "r.json")


def test_a_repeated_report_without_its_pass_at_k_is_refused():
    wire = repeated([outcome_of_attempts(attempts) for attempts in _runs()], 2)
    del wire["metrics"]["passAtK"]
    with pytest.raises(ReportError, match=r"metrics\.passAtK is null but .* give 0\.8"):
        parse_report(wire, "r.json")


@pytest.mark.parametrize("name", ["citation_report", "_v1"])
def test_a_saved_report_without_repeats_reads_and_writes_back_byte_for_byte(name, request):
    """Reports written before repeats existed (tests/outputs/data) keep every byte through the model."""
    saved = request.getfixturevalue(name)  # _v1: the v1 report as the file holds it (read, not changed)
    again = parse_report(saved, name).to_wire()
    assert json.dumps(again, ensure_ascii=False) == json.dumps(saved, ensure_ascii=False)


# --- the runner: attempts in a row, each in its own namespace -------------------------------------

SEEN_ONCE = {
    "id": "tmp-seen-once",
    "kind": "temporal",
    "setup": [{"op": "create", "save": "v1", "label": "SEEN", "properties": {"n": 1}}],
    "probe": {"call": "query", "label": "SEEN"},
    "expect": {"count": 1},
}
"""A temporal item that passes only when its probe sees exactly the one record its own setup wrote."""


class RecordsTarget:
    """An in-process target holding bitemporal records by label, as a shared ``--eval-url`` target would."""

    def __init__(self) -> None:
        self.labels: dict[str, int] = {}
        self.attempts: list[int | None] = []

    def records(self, body):
        from pytest_groundeval.targets.protocol import call_attempt

        self.attempts.append(call_attempt.get())
        self.labels[body["label"]] = self.labels.get(body["label"], 0) + 1
        return {"id": f"r{sum(self.labels.values())}", "txStart": len(self.labels)}

    def query(self, body):
        return {"records": [{"properties": {"n": 1}}] * self.labels.get(body["label"], 0)}


def test_temporal_attempts_set_up_their_own_records_and_never_see_each_others(tmp_path):
    from pytest_groundeval.core.dataset import load_dataset
    from pytest_groundeval.core.runner import ItemRunner
    from tests._support.datasets import write_dataset

    dataset = load_dataset(write_dataset(tmp_path / "ds", [SEEN_ONCE]))
    target = RecordsTarget()
    runner = ItemRunner(target, run_id="run-1")
    runner.repeat = 3
    outcome = runner.run(dataset.items[0], dataset)
    assert target.attempts == [1, 2, 3]  # each attempt's calls carry its number
    assert len(target.labels) == 3 and set(target.labels.values()) == {1}  # three namespaces, one record each
    assert outcome.passed and outcome.pass_rate == 1.0 and len(outcome.attempts or []) == 3
    # The same item without repeats writes under the one namespace of (run, item), as it always did.
    runner.repeat = 1
    again = runner.run(dataset.items[0], dataset)
    assert again.attempts is None and target.attempts[-1] is None
    assert len(target.labels) == 4


def test_a_killed_repeated_run_is_recovered_with_every_attempt_of_its_unrun_items_counted(tmp_path):
    from pytest_groundeval.core.recover import recover_report
    from pytest_groundeval.core.report import ReportWriter, read_report

    path = tmp_path / "r.json"
    writer = ReportWriter(path)  # left open, as a SIGKILL leaves it: the spool stays beside the report
    writer.set_context(
        {"session": "s", "dataset": "ds/manifest.json", "manifest": str(tmp_path / "gone" / "manifest.json"),
         "datasetVersion": "v1", "models": MODELS, "startedAtMs": 1, "floors": None, "baseline": None,
         "items": {"qa-1": "qa", "tmp-1": "temporal"}, "repeat": 2}
    )  # fmt: skip
    writer.add_item(outcome_of_attempts([qa(True), qa(True)]))
    recovered = recover_report(path)
    assert (recovered.ran, recovered.not_run) == (1, 1)
    report = read_report(path)
    never = next(item for item in report.items if item.id == "tmp-1")
    assert report.repeat == 2 and never.not_run and len(never.attempts or []) == 2
    assert (report.metrics.errors, report.metrics.items, report.metrics.pass_at_k) == (2, 4, 0.5)
    assert not report.gate.passed


def test_a_judge_that_gave_up_on_any_attempt_stops_the_session():
    from types import SimpleNamespace

    from pytest_groundeval.core.runner import ItemRunner

    def cite(judge_errors: int) -> ItemOutcome:
        return ItemOutcome(id="cit", kind="citation", passed=False, extra={"citationJudgeErrors": judge_errors})

    runner = ItemRunner(None)
    runner.judge = SimpleNamespace(gave_up="the judge at http://j/v1 gave up: 3 paragraphs in a row unanswered")
    runner.note_judging(outcome_of_attempts([cite(0), cite(0)]))
    assert runner.stop_reason is None
    runner.note_judging(outcome_of_attempts([cite(0), cite(2)]))
    assert runner.stop_reason == "the judge at http://j/v1 gave up: 3 paragraphs in a row unanswered"


def test_an_item_with_attempts_is_one_cluster_of_its_confidence_intervals():
    # docs/statistics.md: attempts of one item hang together, so a rate over attempts is bootstrapped
    # over items (each its attempts' summed figures), never Wilson over attempts as if independent.
    from pytest_groundeval.core.finalize import RunOutcomes, finalize_run

    def run(items: list[ItemOutcome]):
        outcomes = RunOutcomes()
        for item in items:
            outcomes.add(item)
        return finalize_run(outcomes, dataset_version="v", models={"generate": "g", "embed": "e"})

    def named(outcome: ItemOutcome, name: str) -> ItemOutcome:
        return outcome.model_copy(update={"id": name})

    flaky = [outcome_of_attempts([named(qa(True), f"q{i}"), named(qa(False, found=1), f"q{i}")]) for i in range(6)]
    steady = [outcome_of_attempts([named(qa(True), f"s{i}"), named(qa(True), f"s{i}")]) for i in range(6)]
    repeated_run = run(flaky + steady)
    recall = repeated_run.confidence["retrievalRecall"]
    assert recall is not None and recall.method == "bootstrap"
    assert recall.low <= repeated_run.metrics.retrieval_recall <= recall.high
    # The same attempts laid flat as independent items: a different unit, so a different interval.
    attempts = [(k, attempt) for item in flaky + steady for k, attempt in enumerate(item.attempts or [])]
    flat = run([attempt.model_copy(update={"id": f"{attempt.id}-{k}"}) for k, attempt in attempts])
    flat_recall = flat.confidence["retrievalRecall"]
    assert flat.metrics.retrieval_recall == repeated_run.metrics.retrieval_recall and flat_recall is not None
    assert (flat_recall.low, flat_recall.high) != (recall.low, recall.high)


def test_a_falsehood_rejected_in_some_attempts_has_an_interval_around_its_rate_over_attempts():
    # The item says the falsehood was supported when any attempt supported it; the metric counts
    # attempts, so the interval must come from the attempts (one cluster per item), not the item.
    from pytest_groundeval.core.finalize import RunOutcomes, finalize_run

    def adversarial(i: int, supported: bool) -> ItemOutcome:
        return ItemOutcome(id=f"adv-{i}", kind="adversarial", passed=not supported, falsehood_supported=supported)

    outcomes = RunOutcomes()
    for i in range(8):
        outcomes.add(outcome_of_attempts([adversarial(i, False), adversarial(i, True)]))
    done = finalize_run(outcomes, dataset_version="v", models=MODELS)
    rejection = done.confidence["falsehoodRejection"]
    assert done.metrics.falsehood_rejection == 0.5
    assert rejection is not None and rejection.method == "bootstrap"
    assert rejection.low <= 0.5 <= rejection.high


def test_pass_at_k_and_pass_hat_k_have_wilson_intervals_over_items():
    from pytest_groundeval.core.finalize import RunOutcomes, finalize_run

    outcomes = RunOutcomes()
    for i in range(10):
        attempts = [qa(True), qa(i >= 4)]  # 10 items pass an attempt, 6 pass both
        outcomes.add(outcome_of_attempts([a.model_copy(update={"id": f"q{i}"}) for a in attempts]))
    done = finalize_run(outcomes, dataset_version="v", models=MODELS)
    at_k, hat_k = done.confidence["passAtK"], done.confidence["passHatK"]
    assert (done.metrics.pass_at_k, done.metrics.pass_hat_k) == (1.0, 0.6)
    assert at_k is not None and hat_k is not None and at_k.method == hat_k.method == "wilson"
    assert (round(hat_k.low, 4), round(hat_k.high, 4)) == (0.3127, 0.8318)  # Wilson 6/10 at 95%
