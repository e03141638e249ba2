"""Sharding and merging shard reports (``core.shard_merge``) on the real v1 report: the merged run gates like the whole run.

``groundeval merge`` itself: tests/cli/test_merge.py.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from pytest_groundeval.core.confidence import compute_confidence
from pytest_groundeval.core.gate import summarize_baseline
from pytest_groundeval.core.metrics import Metrics
from pytest_groundeval.core.report import parse_report
from pytest_groundeval.core.shard_merge import MergeError, merge_reports
from pytest_groundeval.core.sharding import shard_of
from tests._support.saved_reports import recount, regate


def test_shards_of_v1_are_balanced(v1_report):
    counts = Counter(shard_of(item["id"], 3) for item in v1_report["items"])
    assert sorted(counts) == [1, 2, 3]
    # 621 items: each shard within 10 % of 207 (the split is fixed, so this is deterministic).
    assert all(abs(n - 207) <= 21 for n in counts.values()), counts


def test_three_shards_merge_to_the_unsharded_metrics_and_gate(v1_report, make_shards, v1_baseline):
    shards = make_shards(v1_report, 3)
    assert [len(s["items"]) for s in shards] != [len(v1_report["items"])] * 3
    merged = merge_reports(shards, baseline=v1_baseline)
    assert merged["metrics"] == v1_report["metrics"]
    assert merged["gate"] == v1_report["gate"]
    # The intervals too, byte for byte: the unsharded run's, from all 621 items (docs/statistics.md).
    whole = compute_confidence(v1_report["items"], Metrics.model_validate(v1_report["metrics"]))
    assert json.dumps(merged["confidence"]) == json.dumps({k: i and i.to_wire() for k, i in whole.items()})
    assert merged["confidence"]["claimSupportRecall"]["method"] == "bootstrap"
    assert sorted(i["id"] for i in merged["items"]) == sorted(i["id"] for i in v1_report["items"])
    assert merged["merge"] == {
        "shards": ["1/3", "2/3", "3/3"],
        "missingShards": [],
        "datasetItems": 621,
        "missingItems": 0,
        "missingItemIds": None,
    }
    parse_report(merged, "merged")  # a valid report that groundeval gate can read


def test_without_baseline_the_merge_applies_the_one_the_shards_recorded(v1_report, make_shards, v1_baseline):
    shards = make_shards(v1_report, 3)
    merged = merge_reports(shards)
    assert merged["gate"] == v1_report["gate"] == merge_reports(shards, baseline=v1_baseline)["gate"]
    qa_ids = {item["id"] for item in v1_report["items"] if item["kind"] == "qa"}
    whole = summarize_baseline(v1_baseline, qa_ids, "datasets/v1/baseline.json").to_wire()
    assert merged["baseline"] == whole  # the shards' figures summed are the figure over every item


def test_shards_whose_recall_fell_fail_the_merged_gate_against_their_recorded_baseline(v1_report, make_shards):
    # The merge must not lose what made each shard fail (the issue 12 scenario, sharded).
    for item in v1_report["items"]:
        if item["kind"] == "qa":
            item["evidenceFound"] = 0
    merged = merge_reports(make_shards(v1_report, 3))
    recall = [c for c in merged["gate"]["checks"] if c["metric"] == "retrievalRecall" and "baseline" in c["reason"]]
    assert [c["outcome"] for c in recall] == ["FAIL"] and not merged["gate"]["passed"]
    unarmed = merge_reports(make_shards(v1_report, 3), recorded_baseline=False)
    recall = [c for c in unarmed["gate"]["checks"] if c["metric"] == "retrievalRecall" and "baseline" in c["reason"]]
    assert recall[0]["outcome"] == "SKIP" and unarmed["baseline"] is None


def test_shards_that_record_different_baselines_are_refused(v1_report, make_shards):
    one, two, three = make_shards(v1_report, 3)
    two["baseline"] = None
    regate(two)
    with pytest.raises(MergeError, match="records a baseline but report 2 does not; give groundeval merge --baseline"):
        merge_reports([one, two, three])
    two["baseline"] = {**one["baseline"], "path": "other/baseline.json"}
    regate(two)
    with pytest.raises(MergeError, match="cannot merge: report 1 has baseline"):
        merge_reports([one, two, three])


def test_merge_is_order_independent(v1_report, make_shards, v1_baseline):
    shards = make_shards(v1_report, 4)
    forward = merge_reports(shards, baseline=v1_baseline)
    backward = merge_reports(list(reversed(shards)), baseline=v1_baseline)
    assert forward == backward


def test_a_missing_shard_fails_the_gate_and_says_which(v1_report, make_shards, v1_baseline):
    one, _, three = make_shards(v1_report, 3)
    merged = merge_reports([one, three], baseline=v1_baseline)
    assert merged["gate"]["passed"] is False
    check = merged["gate"]["checks"][-1]
    assert check["metric"] == "items" and check["outcome"] == "FAIL"
    missing = 621 - len(one["items"]) - len(three["items"])
    assert check["reason"].startswith(f"{missing} of 621 dataset items missing")
    assert "shard(s) 2/3 not given" in check["reason"]
    assert merged["merge"]["missingShards"] == ["2/3"] and merged["merge"]["missingItems"] == missing


def test_missing_items_are_listed_by_id_with_the_dataset(v1_report, make_shards, v1_baseline):
    one, two, three = make_shards(v1_report, 3)
    dropped = two["items"].pop(0)["id"]  # e.g. a shard run with -k
    recount(two)
    ids = [item["id"] for item in v1_report["items"]]
    merged = merge_reports([one, two, three], baseline=v1_baseline, dataset_ids=ids)
    assert merged["merge"]["missingItemIds"] == [dropped]
    assert merged["gate"]["passed"] is False
    assert f"missing ids: {dropped}" in merged["gate"]["checks"][-1]["reason"]
    without = merge_reports([one, two, three], baseline=v1_baseline)
    assert "ids not known" in without["gate"]["checks"][-1]["reason"]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("datasetVersion", "v2", "dataset version"),
        ("models", {"generate": "other-model", "embed": "mock-embed"}, "model lineage"),
        ("floors", {"errors": 0.0, "claimSupportPrecision": 0.5, "retrievalRecallMargin": 0.02}, "floors"),
        ("confidenceLevel", 0.9, "confidence level"),
    ],
)
def test_merge_refuses_shards_of_different_runs(v1_report, make_shards, field, value, message):
    shards = make_shards(v1_report, 3)
    shards[1][field] = value
    regate(shards[1])
    with pytest.raises(MergeError, match=f"report 1 has {message} .* but report 2 has"):
        merge_reports(shards)


def test_merge_refuses_a_shard_given_twice(v1_report, make_shards):
    one, two, _ = make_shards(v1_report, 3)
    with pytest.raises(MergeError, match=r"shard 2/3 given twice \(b.json and c.json\)"):
        merge_reports([one, two, two], sources=["a.json", "b.json", "c.json"])


def test_merge_refuses_overlapping_shards(v1_report, make_shards):
    one, two, three = make_shards(v1_report, 3)
    stolen = one["items"][0]
    three["items"].append(stolen)
    recount(three)
    with pytest.raises(MergeError, match=f"overlapping shards: 1 item.*{stolen['id']}"):
        merge_reports([one, two, three])


def test_merge_refuses_an_item_in_the_wrong_shard(v1_report, make_shards):
    one, two, three = make_shards(v1_report, 3)
    three["items"].append(one["items"].pop())
    recount(one, three)
    with pytest.raises(MergeError, match="is shard 3/3 but 1 of its items belong to other shards"):
        merge_reports([one, two, three])


def test_merge_refuses_different_shard_counts_and_unsharded_reports(v1_report, make_shards):
    one, two, _ = make_shards(v1_report, 3)
    other = make_shards(v1_report, 2)[1]
    with pytest.raises(MergeError, match="shard count"):
        merge_reports([one, two, other])
    with pytest.raises(MergeError, match="records no shard; run each shard with --eval-shard K/N"):
        merge_reports([v1_report])


def test_merge_refuses_a_dataset_that_is_not_the_shards(v1_report, make_shards):
    shards = make_shards(v1_report, 2)
    with pytest.raises(MergeError, match="the dataset given .* is not the one the shards ran"):
        merge_reports(shards, dataset_ids=["qa-1", "qa-2"])


def test_merge_refuses_shards_without_floors_unless_given(v1_report, make_shards):
    shards = make_shards(v1_report, 2)
    for shard in shards:
        shard["floors"] = None
    with pytest.raises(MergeError, match="records no floors.*give the floors file with --floors"):
        merge_reports(shards)
    merged = merge_reports(shards, floors={"errors": 0.0, "retrievalRecallMargin": 0.02})
    assert [c["metric"] for c in merged["gate"]["checks"]] == ["retrievalRecall", "errors"]


def test_an_interrupted_shard_makes_the_merged_run_interrupted(v1_report, make_shards, v1_baseline):
    shards = make_shards(v1_report, 3)
    shards[0]["interrupted"] = True
    regate(shards[0])
    merged = merge_reports(shards, baseline=v1_baseline)
    assert merged["interrupted"] is True and merged["gate"]["passed"] is False
    assert any(c["metric"] == "run" and c["outcome"] == "FAIL" for c in merged["gate"]["checks"])


# --- importing the outputs -------------------------------------------------------------------


def test_outputs_import_no_pytest():
    import subprocess
    import sys

    code = (
        "import sys, pytest_groundeval.outputs, pytest_groundeval.outputs.write, pytest_groundeval.cli.merge; "
        "print('pytest' in sys.modules or '_pytest' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_a_shard_that_drew_no_item_does_not_vote_on_the_lineage(v1_report, make_shards):
    # Five items over ten shards (groundeval init's dataset with --eval-shard K/10): the empty shards start
    # no target, so they record the lineage "unknown" (found by a new-user trial: the merge refused them).
    few = {**v1_report, "items": v1_report["items"][:5]}
    shards = make_shards(few, 10, baseline=None)
    empty = [shard for shard in shards if not shard["items"]]
    assert empty and len(empty) < 10
    for shard in empty:
        shard["models"] = {"generate": "unknown", "embed": "unknown"}
    merged = merge_reports(shards)
    assert merged["models"] == v1_report["models"] != empty[0]["models"]
    assert merged["merge"]["missingItems"] == 0 and len(merged["items"]) == 5
    empty[0]["models"] = {"generate": "another-model", "embed": "unknown"}  # an empty shard that knows: compared
    with pytest.raises(MergeError, match="model lineage"):
        merge_reports(shards)
