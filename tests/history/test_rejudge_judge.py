"""The rejudge adapter (``history.rejudge_judge``) asks any ``core.judging.Judge`` about stored paragraphs."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_groundeval.core.judging import JudgeResult
from pytest_groundeval.history.errors import HistoryError
from pytest_groundeval.history.rejudge import JudgeRequest, JudgeVerdict
from pytest_groundeval.history.rejudge_judge import RejudgeJudge

SMOKE = Path(__file__).resolve().parents[2] / "datasets" / "citation-smoke" / "manifest.json"


class ScriptedJudge:
    """A core ``Judge`` without a network: ``wrong_speaker`` when the hint says so, else unjudged."""

    model = "scripted"
    gave_up = None

    def __init__(self) -> None:
        self.payloads: list[dict] = []
        self.closed = False

    async def judge(self, payload):
        self.payloads.append(payload)
        if payload["metadataMismatch"]:
            return JudgeResult(verdict="wrong_speaker", rationale="the hint", model=self.model)
        return JudgeResult(verdict=None, rationale="", model=self.model, error="down")

    async def close(self) -> None:
        self.closed = True


def request(paragraph: int, mismatch: list[str], **fields) -> JudgeRequest:
    return JudgeRequest(run_id="r", item_id="cit-smoke-wrong-speaker", paragraph=paragraph, text="stored [2]",
                        markers=["2"], metadata_mismatch=mismatch, question=None, answer=None, sources=None,
                        dataset=str(SMOKE), **fields)  # fmt: skip


def test_a_core_judge_answers_rejudge_through_the_adapter():
    judges: list[ScriptedJudge] = []

    def make() -> ScriptedJudge:
        judges.append(ScriptedJudge())
        return judges[-1]

    with RejudgeJudge(make, prompt_version="p1") as adapter:
        assert (adapter.model, adapter.prompt_version) == ("scripted", "p1")
        verdict, failed = adapter.judge_many([request(0, ["speaker 'Anna Berg'"]), request(0, [])])
        # A judge that reports no usage (replies None): one reply of unknown tokens, never 0 (docs/judges.md).
        assert verdict == JudgeVerdict(verdict="wrong_speaker", rationale="the hint", judge_model="scripted",
                                       usage=(0, 0, 1, 1))  # fmt: skip
        assert isinstance(failed, HistoryError) and str(failed) == "down"
        with pytest.raises(HistoryError, match="down"):
            adapter(request(0, []))
    (judge,) = judges
    assert judge.closed
    # Sources and the full paragraph come from the run's dataset (the item's recorded answer).
    payload = judge.payloads[0]
    assert payload["paragraph"].startswith("Anna Berg (S) said") and payload["citedSources"][0]["marker"] == "2"
    assert payload["citedSources"][0]["metadata"]["speaker"] == "Lars Holm"


def test_a_judge_that_cannot_be_built_is_a_history_error():
    def make():
        raise ImportError("the judge needs the openai package")

    with pytest.raises(HistoryError, match="openai"):
        RejudgeJudge(make)
