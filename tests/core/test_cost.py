"""Prices and costs (core/cost.py, docs/gate.md "Cost"): the prices file, the figures, the gate and the report."""

from __future__ import annotations

import json

import pytest

from pytest_groundeval.core.cost import PricesError, check_prices, price_metrics, read_prices
from pytest_groundeval.core.finalize import RunOutcomes, finalize_run
from pytest_groundeval.core.metrics import compute_metrics
from pytest_groundeval.core.outcome import ItemOutcome
from pytest_groundeval.core.report import ReportError, parse_report
from pytest_groundeval.core.shard_merge import MergeError, merge_reports
from pytest_groundeval.core.sharding import shard_info, shard_of

PRICES = {"judge-m": {"input": 3.0, "output": 15.0}, "gen-m": {"input": 0.5, "output": 1.5}}
MODELS = {"generate": "gen-m", "embed": "emb-m"}


def citation(item_id: str, *paragraphs: tuple) -> ItemOutcome:
    """A recorded citation answer whose paragraphs were judged: ``(model, prompt, completion, replies, without)``."""
    records = [
        {"index": i, "text": "P [1].", "markers": ["1"], "metadataMismatch": [], "missingMarkers": [],
         "deterministicPass": True, "verdict": "supported", "rationale": "r", "judgeModel": model,
         "judgeReplies": replies, "judgePromptTokens": prompt, "judgeCompletionTokens": completion,
         "judgeRepliesWithoutUsage": without}
        for i, (model, prompt, completion, replies, without) in enumerate(paragraphs)
    ]  # fmt: skip
    extra = {"citationParagraphsJudged": len(records), "citationParagraphsMismatched": 0,
             "citationParagraphsSupported": len(records), "citationParagraphsWrongSpeaker": 0,
             "citationParagraphsUnparseable": 0, "citationJudgeErrors": 0, "citationParagraphs": records}  # fmt: skip
    return ItemOutcome(id=item_id, kind="citation", passed=True, extra=extra)


def qa(item_id: str, prompt: int | None, completion: int | None) -> ItemOutcome:
    return ItemOutcome(id=item_id, kind="qa", passed=True, latency_ms=10.0, prompt_tokens=prompt,
                       completion_tokens=completion)  # fmt: skip


ITEMS = [citation("c1", ("judge-m", 1000, 100, 1, 0), ("judge-m", 500, 40, 2, 0)), qa("q1", 300, 60), qa("q2", 200, 40)]


def priced(items, prices=PRICES, generate="gen-m"):
    return price_metrics(compute_metrics(items), prices, generate)


def test_costs_are_tokens_times_prices_per_million():
    metrics = priced(ITEMS)
    assert metrics.judge_tokens == {"judge-m": {"promptTokens": 1500, "completionTokens": 140, "replies": 3,
                                                "repliesWithoutUsage": 0}}  # fmt: skip
    assert metrics.target_tokens == {"promptTokens": 500, "completionTokens": 100, "calls": 2, "callsWithoutUsage": 0}
    assert metrics.judge_cost_usd == (1500 * 3.0 + 140 * 15.0) / 1_000_000
    assert metrics.target_cost_usd == (500 * 0.5 + 100 * 1.5) / 1_000_000
    assert metrics.unpriced_models == {}
    unpriced = compute_metrics(ITEMS)
    assert (unpriced.judge_cost_usd, unpriced.target_cost_usd, unpriced.unpriced_models) == (None, None, None)
    assert price_metrics(unpriced, None, "gen-m") is unpriced


def test_a_model_missing_or_tokens_unknown_give_no_cost_never_zero():
    metrics = priced(ITEMS, {"gen-m": PRICES["gen-m"]})
    assert metrics.judge_cost_usd is None and metrics.unpriced_models == {"judge": {"judge-m": 1640}}
    assert metrics.target_cost_usd is not None
    unknown = priced([citation("c", ("judge-m", 10, 1, 2, 1)), qa("q", None, None)])
    assert unknown.judge_cost_usd is None and unknown.target_cost_usd is None and unknown.unpriced_models == {}
    assert unknown.target_tokens["callsWithoutUsage"] == 1
    lineage = priced(ITEMS, generate="unknown")
    assert lineage.target_cost_usd is None and lineage.unpriced_models == {"target": {"unknown": 600}}


def gate_of(metrics, floors):
    return finalize_run(RunOutcomes(), metrics=metrics, floors=floors, dataset_version="v", models=MODELS).gate


def check(gate, metric):
    (found,) = [c for c in gate.checks if c.metric == metric]
    return found


@pytest.mark.parametrize(
    ("prices", "items", "reason"),
    [
        (None, ITEMS, "no prices: give --eval-prices FILE"),
        ({"gen-m": PRICES["gen-m"]}, ITEMS, "judge model 'judge-m' (1640 token(s)) not in the prices file"),
        (PRICES, [citation("c", ("judge-m", 10, 1, 2, 1))], "1 judge reply(ies) reported no usage"),
        (PRICES, [qa("q", 10, 1)] + [ItemOutcome(id="c", kind="citation", passed=True,
                                                 extra={"citationParagraphsJudged": 1})],
         "1 citation item(s) ran but no judge was asked"),
    ],
)  # fmt: skip
def test_a_ceiling_on_a_null_judge_cost_fails_saying_why(prices, items, reason):
    gate = gate_of(priced(items, prices), {"judgeCostUsd": 1.0, "errors": 0})
    found = check(gate, "judgeCostUsd")
    assert found.outcome == "FAIL" and reason in found.reason and not gate.passed


def test_target_cost_reasons_and_nothing_to_price():
    gate = gate_of(priced(ITEMS, generate="unknown"), {"targetCostUsd": 1.0, "errors": 0})
    assert "the target's generate model is unknown" in check(gate, "targetCostUsd").reason
    gate = gate_of(priced([qa("q", None, None)]), {"targetCostUsd": 1.0, "errors": 0})
    assert "1 generate call(s) reported no usage" in check(gate, "targetCostUsd").reason
    # No generate call and no judge: nothing to price, so the ceiling is skipped as n/a (not a FAIL).
    offline = priced([ItemOutcome(id="r", kind="review", passed=True)])
    gate = gate_of(offline, {"targetCostUsd": 1.0, "judgeCostUsd": 1.0, "errors": 0})
    assert check(gate, "targetCostUsd").outcome == check(gate, "judgeCostUsd").outcome == "SKIP"


def test_a_cost_above_its_ceiling_fails():
    metrics = priced(ITEMS)  # judge: 1500 × $3 + 140 × $15 = 6600 µ$; target: 500 × $0.5 + 100 × $1.5 = 400 µ$
    judge = check(gate_of(metrics, {"judgeCostUsd": 0.0065, "errors": 0}), "judgeCostUsd")
    assert judge.outcome == "FAIL" and judge.reason == "0.006600 USD > 0.006500 USD"
    assert check(gate_of(metrics, {"judgeCostUsd": 0.0066, "errors": 0}), "judgeCostUsd").outcome == "PASS"
    assert check(gate_of(metrics, {"targetCostUsd": 0.0004, "errors": 0}), "targetCostUsd").outcome == "PASS"
    assert check(gate_of(metrics, {"targetCostUsd": 0.0003, "errors": 0}), "targetCostUsd").outcome == "FAIL"


def report_of(items, prices=PRICES):
    end = finalize_run(RunOutcomes.of(items), dataset_version="v", models=MODELS, prices=prices,
                       floors={"errors": 0, "judgeCostUsd": 1.0})  # fmt: skip
    return {"schemaVersion": 1, "datasetVersion": "v", "models": MODELS, "startedAtMs": 0, "durationMs": 0,
            "metrics": end.metrics.to_wire(), "gate": end.gate.to_wire(),
            "environment": {"pluginVersion": "x", "python": "3", "platform": "p", "gitCommit": None},
            "floors": {"errors": 0, "judgeCostUsd": 1.0}, "prices": prices,
            "items": [i.to_wire() for i in items]}  # fmt: skip


def test_a_report_records_its_prices_and_readers_recompute_the_costs():
    report = report_of(ITEMS)
    assert parse_report(json.loads(json.dumps(report)), "r").prices == PRICES
    edited = json.loads(json.dumps(report))
    edited["metrics"]["judgeCostUsd"] = 0.0001
    with pytest.raises(ReportError, match="metrics.judgeCostUsd is 0.0001 but the report's 3 item"):
        parse_report(edited, "r")
    cheaper = json.loads(json.dumps(report))
    cheaper["prices"]["judge-m"]["input"] = 0.0
    with pytest.raises(ReportError, match="metrics.judgeCostUsd"):
        parse_report(cheaper, "r")
    bad = json.loads(json.dumps(report))
    bad["prices"]["judge-m"] = {"input": -1, "output": 1}
    with pytest.raises(ReportError, match="field 'input' is -1"):
        parse_report(bad, "r")
    without = report_of(ITEMS, None)
    assert "prices" not in parse_report(without, "r").to_wire()


def test_a_report_written_before_target_tokens_existed_reads_it_as_null():
    report = report_of(ITEMS, None)
    del report["metrics"]["targetTokens"]
    assert parse_report(report, "old").metrics.target_tokens is None
    # A report that holds the key must hold its items' figure.
    wrong = report_of(ITEMS, None)
    wrong["metrics"]["targetTokens"]["calls"] = 7
    with pytest.raises(ReportError, match="metrics.targetTokens"):
        parse_report(wrong, "r")


def test_merge_sums_then_prices_and_refuses_shards_priced_differently():
    items = [*ITEMS, qa("q3", 70, 7), citation("c2", ("judge-m", 90, 9, 1, 0))]
    whole = report_of(items)
    ids = [i.id for i in items]

    def shards(second_prices):
        out = []
        for index, prices in ((1, PRICES), (2, second_prices)):
            shard = report_of([i for i in items if shard_of(i.id, 2) == index], prices)
            shard["shard"] = shard_info(ids, index, 2)
            out.append(shard)
        assert all(s["items"] for s in out)
        return out

    merged = merge_reports(shards(PRICES))
    for key in ("judgeTokens", "targetTokens", "judgeCostUsd", "targetCostUsd", "unpricedModels"):
        assert merged["metrics"][key] == whole["metrics"][key], key
    assert merged["prices"] == PRICES and merged["metrics"]["judgeCostUsd"] > 0
    with pytest.raises(MergeError, match="has prices"):
        merge_reports(shards({**PRICES, "gen-m": {"input": 9.0, "output": 9.0}}))


@pytest.mark.parametrize(
    ("obj", "message", "model", "field"),
    [
        ({"m": {"input": 1, "output": "2"}}, "model 'm': field 'output' is \"2\"", "m", "output"),
        ({"m": {"output": 2}}, "model 'm': field 'input' is missing", "m", "input"),
        ({"": {"input": 1, "output": 2}}, "a model name must be a non-empty string", "", None),
        ({"m": {"input": float("inf"), "output": 2}}, "field 'input' is Infinity", "m", "input"),
    ],
)
def test_check_prices_names_the_model_and_the_field(obj, message, model, field):
    with pytest.raises(PricesError, match=None) as info:
        check_prices(obj, "prices file p.json")
    assert str(info.value).startswith("prices file p.json") and message in str(info.value)
    assert (info.value.model, info.value.field) == (model, field)


def test_read_prices(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(PRICES), encoding="utf-8")
    assert read_prices(path) == PRICES
    with pytest.raises(PricesError, match=f"cannot read prices file {tmp_path / 'nope.json'}"):
        read_prices(tmp_path / "nope.json")


def test_a_killed_runs_spool_is_recovered_with_its_prices(tmp_path):
    from pytest_groundeval.core.recover import recover_report
    from pytest_groundeval.core.report import ReportWriter, read_report

    path = tmp_path / "r.json"
    writer = ReportWriter(path)
    writer.set_context({"session": "1", "dataset": "d", "manifest": str(tmp_path / "gone.json"),
                        "datasetVersion": "v", "models": MODELS, "startedAtMs": 0, "floors": {"errors": 0},
                        "baseline": None, "items": {i.id: i.kind for i in ITEMS}, "prices": PRICES})  # fmt: skip
    for item in ITEMS:
        writer.add_item(item)
    writer._items.close()  # killed here: the spool stays, no report  # type: ignore[union-attr]
    recover_report(path)
    report = read_report(path)
    assert report.prices == PRICES and report.interrupted
    assert report.metrics.judge_cost_usd == priced(ITEMS).judge_cost_usd > 0
    assert report.metrics.target_cost_usd == priced(ITEMS).target_cost_usd
