"""What the HTML page is given of each item and of a citation run's judge, without a browser."""

from __future__ import annotations

from collections import Counter

import pytest

from pytest_groundeval.outputs.html_citation import judge_confusion, judges_against_labels
from pytest_groundeval.outputs.item_view import item_view, labelled_pair, markers_outside, paragraph_judges


@pytest.mark.parametrize(
    ("text", "markers", "outside"),
    [
        ("Kontoret öppnade 2021 [S1].", ["S1"], []),
        ("Two sources agree [S1, S2].", ["S1", "S2", "S3"], ["S3"]),
        ("Numbered [1][2] and (3) and 【4】.", ["1", "2", "3", "4"], []),
        ("Founded in 1976 [S2].", ["1"], ["1"]),  # a digit inside a year is no marker
        ("No marker at all.", ["S1"], ["S1"]),
        (None, ["S1"], ["S1"]),
    ],
)
def test_markers_outside_the_text(text, markers, outside):
    assert markers_outside(text, markers) == outside


def _hand_confusion(report) -> Counter:
    return Counter(
        (p["expectedVerdict"], p["verdict"] or "unjudged")
        for item in report["items"]
        for p in item["extra"].get("citationParagraphs", [])
        if p.get("judgeModel") and p.get("expectedVerdict")
    )


def test_the_confusion_table_is_the_runs_and_the_items_count_the_same(attribution_report):
    hand = _hand_confusion(attribution_report)
    assert hand[("wrong_speaker", "supported")] == 12 and sum(hand.values()) == 120
    from_metric = judge_confusion(attribution_report)
    attribution_report["metrics"]["judgeConfusion"] = None  # a report without the metric: counted from items
    from_items = judge_confusion(attribution_report)
    flat = {(e, label): n for e, row in from_metric.items() for label, n in row.items()}
    assert flat == dict(hand) and from_items == from_metric


def test_a_judge_without_a_verdict_is_unjudged_and_paragraphs_without_a_judge_or_label_are_not_counted():
    assert labelled_pair({"judgeModel": "j", "verdict": None, "expectedVerdict": "supported"}) == (
        "supported",
        "unjudged",
    )
    assert labelled_pair({"judgeModel": None, "verdict": None, "expectedVerdict": "supported"}) is None
    assert labelled_pair({"judgeModel": "j", "verdict": "partial", "expectedVerdict": None}) is None
    view = item_view(
        {"id": "c", "kind": "citation", "pass": False, "extra": {"citationParagraphs": [
            {"index": 0, "text": "A [1].", "markers": ["1"], "judgeModel": "j", "verdict": None,
             "judgeError": "judge timed out", "expectedVerdict": "supported"}]}}
    )  # fmt: skip
    assert view["paragraphs"][0]["verdict"] == "unjudged" and view["pairs"] == ["supported|unjudged"]
    assert view["paragraphs"][0]["rationale"] == "judge timed out" and view["paragraphs"][0]["markers"] == []


def test_each_judges_verdict_of_a_jury_is_read_from_a_list_or_a_mapping():
    listed = {
        "judges": [
            {"judgeModel": "a", "verdict": "supported", "rationale": "all there", "judgeError": None},
            {"judgeModel": "b", "verdict": None, "rationale": None, "judgeError": "HTTP 503"},
            {"verdict": "partial"},  # no model: not a column
        ]
    }
    assert paragraph_judges(listed) == [
        {"model": "a", "verdict": "supported", "rationale": "all there", "error": None},
        {"model": "b", "verdict": "unjudged", "rationale": None, "error": "HTTP 503"},
    ]
    mapped = {"judges": {"a": "partial", "b": {"verdict": "wrong_speaker", "rationale": "someone else"}}}
    assert [(j["model"], j["verdict"], j["rationale"]) for j in paragraph_judges(mapped)] == [
        ("a", "partial", None),
        ("b", "wrong_speaker", "someone else"),
    ]
    assert paragraph_judges({"verdict": "supported"}) is None  # one judge: no per-judge columns


def test_each_judge_of_a_jury_against_the_human_labels():
    items = [
        {"extra": {"citationParagraphs": [
            {"expectedVerdict": "supported", "judges": [{"judgeModel": "a", "verdict": "supported"},
                                                        {"judgeModel": "b", "verdict": "partial"}]},
            {"expectedVerdict": "partial", "judges": {"a": "supported", "b": "partial"}},
            {"expectedVerdict": None, "judges": {"a": "supported", "b": "supported"}},  # unlabelled: not counted
            {"expectedVerdict": "supported", "judges": [{"judgeModel": "a", "verdict": None}]},
        ]}}
    ]  # fmt: skip
    assert judges_against_labels(items) == {"a": (3, 1), "b": (2, 1)}
