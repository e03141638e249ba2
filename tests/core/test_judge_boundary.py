"""A judge's or scorer's result enters core through a check: junk is a counted judge error, never a crash."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pytest_groundeval.core.judging import JUDGE_VERDICTS, JudgeResult, ScoreResult
from pytest_groundeval.core.kinds.citation.assess import assess_paragraphs, with_assessment
from pytest_groundeval.core.outcome import ItemOutcome

ANSWER = "Anna said the tax rises [S1]."
SOURCES = {"S1": {"text": "Anna: the tax rises.", "metadata": {}}}
RECORD = {"index": 0, "markers": ["S1"], "text": ANSWER}


class ReturningJudge:
    model = "junk-judge"
    gave_up = None

    def __init__(self, value: Any) -> None:
        self.value = value

    async def judge(self, payload: Any) -> Any:
        return self.value

    async def close(self) -> None:
        pass


class ReturningScorer:
    gave_up = None

    def __init__(self, value: Any) -> None:
        self.value = value

    async def score(self, paragraph: str, texts: Any) -> Any:
        return self.value

    async def close(self) -> None:
        pass


def assess(judge: Any = None, scorer: Any = None) -> dict[str, Any]:
    (record,) = asyncio.run(assess_paragraphs([RECORD], answer=ANSWER, sources=SOURCES, judge=judge, scorer=scorer))
    return record


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (JudgeResult(verdict="yes-ish", rationale="x", model="m"), "returned verdict 'yes-ish', not one of supported"),
        (None, "returned NoneType None, not a JudgeResult"),
        ({"verdict": "supported"}, "returned dict {'verdict': 'supported'}, not a JudgeResult"),
        ("supported", "returned str 'supported', not a JudgeResult"),
        (JudgeResult(verdict="supported", rationale="  ", model="m"), "returned verdict 'supported' with an empty"),
        (JudgeResult(verdict=None, model="m"), "returned no verdict and no error"),
    ],
    ids=["badverdict", "none", "dict", "string", "norationale", "noerror"],
)
def test_a_judge_result_that_is_not_sound_is_an_unjudged_paragraph_naming_the_judge(value: Any, problem: str) -> None:
    record = assess(ReturningJudge(value))
    assert record["verdict"] is None
    assert record["judgeError"].startswith(f"the judge ReturningJudge (model 'junk-judge') {problem}")
    assert record["judgeModel"] in ("m", "junk-judge")
    outcome = with_assessment(
        ItemOutcome(id="a", kind="citation", passed=True, detail="ok"), [record], judged=True, scored=False
    )
    assert outcome.extra["citationJudgeErrors"] == 1


def test_the_documented_failure_form_needs_no_rationale_and_records_the_judges_model() -> None:
    record = assess(ReturningJudge(JudgeResult(verdict=None, error="backend timeout")))
    assert (record["verdict"], record["judgeError"], record["judgeModel"]) == (None, "backend timeout", "junk-judge")


def test_a_sound_verdict_passes_unchanged() -> None:
    for verdict in JUDGE_VERDICTS:
        record = assess(ReturningJudge(JudgeResult(verdict=verdict, rationale="because", model="m")))
        assert (record["verdict"], record["judgeError"], record["judgeModel"]) == (verdict, None, "m")


@pytest.mark.parametrize(
    ("value", "problem"),
    [(None, "returned NoneType None, not a ScoreResult"), (ScoreResult(score=1.5), "returned score 1.5, not a number")],
)
def test_a_scorer_result_that_is_not_sound_is_a_scorer_error(value: Any, problem: str) -> None:
    record = assess(scorer=ReturningScorer(value))
    assert record["coverageScore"] is None
    assert record["scorerError"].startswith(f"the scorer ReturningScorer {problem}")
