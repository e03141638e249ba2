"""``ItemOutcome.to_wire``: the hand-built dict of a common outcome is pydantic's dump, key for key.

The common outcome (no attempts, no evidence review, JSON built-ins only) is built without
pydantic (issue 24, CPU per item); every other one goes through pydantic's dump.
"""

from __future__ import annotations

import enum
import json
from typing import Any

import pytest

from pytest_groundeval.core.outcome import ItemOutcome, outcome_of_attempts
from pytest_groundeval.core.wire import WireModel
from tests._support.sample_report import sample_outcomes


class _Shade(enum.IntEnum):
    DARK = 1


class _Name(str):
    pass


QA_EXTRA: dict[str, Any] = {
    "question": "What does record K00000 say?",
    "answer": "Record K00000 says ñ. [S1]",
    "claims": [
        {
            "text": "Record K00000 says ñ. [S1]",
            "start": 0,
            "end": 26,
            "markers": ["S1"],
            "verdict": "supported",
            "true": True,
        }
    ],
    "evidence": [{"marker": "S1", "document": "facts.txt", "start": 0, "end": 20, "text": "Record K00000 says ñ."}],
    "expectedEvidence": [{"text": "Record K00000 says ñ.", "found": True}],
    "tags": [],
    "score": 0.25,
    "nothing": None,
    "big": 2**70,
}


def _qa(**kw: Any) -> ItemOutcome:
    fields: dict[str, Any] = dict(
        id="qa-1", kind="qa", passed=True, trace_id="t", detail="ok", latency_ms=6.4473, prompt_tokens=64,
        completion_tokens=24, evidence_expected=1, evidence_found=1, claims_returned=1, claims_supported=1,
        claims_supported_true=1, claims_true_cited=1, claims_true_cited_supported=1, extra=QA_EXTRA,
    )  # fmt: skip
    fields.update(kw)
    return ItemOutcome(**fields)


def _unusual() -> list[ItemOutcome]:
    """Outcomes whose dump pydantic converts (or that carry what the hand-built path leaves to it)."""
    return [
        _qa(extra={"pair": (1, 2)}),
        _qa(extra={"nested": [{"x": float("inf")}]}),
        _qa(extra={"nan": float("nan")}),
        _qa(extra={"keys": {1: "one"}}),
        _qa(extra={"shade": _Shade.DARK}),
        _qa(extra={"name": _Name("n")}),
        _qa(extra={"raw": b"bytes"}),
        _qa(extra={"set": {"a"}}),
        _qa(latency_ms=float("inf")),
        _qa(id=_Name("qa-1")),
        outcome_of_attempts([_qa(), _qa(passed=False)]),
    ]


@pytest.mark.parametrize(
    "outcome",
    [_qa(), _qa(extra={}), _qa(error="target down", passed=False), *sample_outcomes(), *_unusual()],
)
def test_to_wire_is_pydantics_dump(outcome: ItemOutcome) -> None:
    expected = outcome.model_dump(mode="json", by_alias=True)
    wire = outcome.to_wire()
    assert wire == expected
    assert list(wire) == list(expected)
    assert json.dumps(wire) == json.dumps(expected)  # the same keys in the same order, nested too


def test_a_common_outcome_is_dumped_without_pydantic(monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _qa().model_dump(mode="json", by_alias=True)

    def refuse(self: WireModel, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("dumped through pydantic")

    monkeypatch.setattr(WireModel, "to_wire", refuse)
    monkeypatch.setattr(ItemOutcome, "model_dump", refuse)
    assert json.dumps(_qa().to_wire()) == json.dumps(expected)


def test_the_wire_dict_shares_no_container_with_the_outcome() -> None:
    outcome = _qa()
    wire = outcome.to_wire()
    wire["extra"]["claims"][0]["markers"].append("S2")
    wire["extra"]["tags"].append("x")
    assert outcome.extra["claims"][0]["markers"] == ["S1"]
    assert outcome.extra["tags"] == []
