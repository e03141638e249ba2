"""Pure parts of the judge: parser, metrics, κ, the mock's judge and fault grammar (docs/citation.md, docs/mock.md)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_groundeval.core.judging import JUDGE_VERDICTS, judge_input
from pytest_groundeval.core.kinds.citation import paragraph_metrics
from pytest_groundeval.judge.parse import UnparseableReply, parse_verdict
from pytest_groundeval.judge.prompt import judge_messages
from pytest_groundeval.mock import citation_judge as mock_judge
from pytest_groundeval.mock.faults import FaultCounter, FaultSpecError, parse_fault_spec


@pytest.mark.parametrize(
    "reply",
    ['{"verdict": "partial", "rationale": "half of it"}', '```json\n{"verdict": "partial", "rationale": "half of it"}\n```',
     '  ```\n{"verdict":"partial","rationale":" half of it "}\n```  ',
     '{"verdict": " Partial ", "rationale": "half of it"}'],
)  # fmt: skip
def test_parser_accepts_json_and_one_fence(reply):
    assert parse_verdict(reply) == ("partial", "half of it")


@pytest.mark.parametrize(
    ("reply", "reason"),
    [(None, "empty"), ("", "empty"), ("It is supported.", "not a JSON object"),
     ('Sure: {"verdict": "supported", "rationale": "x"}', "not a JSON object"), ("[1, 2]", "not an object"),
     ('{"verdict": "supports", "rationale": "x"}', "unknown verdict"), ('{"rationale": "x"}', "unknown verdict"),
     ('{"verdict": "supported", "rationale": "  "}', "empty rationale"), ('{"verdict": "supported"}', "empty rationale")],
)  # fmt: skip
def test_parser_rejects(reply, reason):
    with pytest.raises(UnparseableReply, match=reason):
        parse_verdict(reply)


@given(st.text(max_size=200))
def test_parser_never_accepts_what_is_not_a_verdict(text):
    try:
        verdict, rationale = parse_verdict(text)
    except UnparseableReply:
        return
    assert verdict in JUDGE_VERDICTS and rationale


def rec(verdict, expected=None, *, det=True, mismatch=(), model="j", score=None, scorer_error=None):
    return {"verdict": verdict, "expectedVerdict": expected, "deterministicPass": det, "metadataMismatch": list(mismatch),
            "judgeModel": model, "coverageScore": score, "scorerError": scorer_error}  # fmt: skip


def judged(records):
    """The citation kind's metrics of paragraph records a judge was asked about (the one implementation)."""
    return paragraph_metrics(records, judged=True, scored=False)


def test_rates_keep_errors_and_unparseable_in_the_denominator():
    records = [rec("supported"), rec("unparseable"), rec(None), rec("wrong_speaker", det=False, mismatch=["x"])]
    figures = judged(records)
    assert figures["citation_supported_rate"] == 0.25
    assert figures["unparseable_rate"] == 0.25 and figures["wrong_speaker_rate"] == 0.25
    assert figures["judge_errors"] == 1
    assert figures["citation_metadata_accuracy"] == 0.75
    assert figures["verdict_distribution"]["unjudged"] == 1
    # No judge: its rates are n/a, and so is judgeErrors (null without a judge, docs/citation.md), never 0.
    no_judge = paragraph_metrics([rec(None, model=None)], judged=False, scored=False)
    assert no_judge["citation_supported_rate"] is None and no_judge["judge_errors"] is None
    assert judged([])["citation_metadata_accuracy"] is None


def test_agreement_kappa_and_confusion():
    records = [rec("supported", "supported"), rec("supported", "supported"), rec("partial", "unsupported"),
               rec("unsupported", "unsupported"), rec(None, "supported"), rec("supported")]  # fmt: skip
    figures = judged(records)
    assert figures["judge_agreement"] == 0.6
    assert figures["judge_confusion"] == {
        "supported": {"supported": 2, "unjudged": 1}, "unsupported": {"partial": 1, "unsupported": 1}}  # fmt: skip
    # p_o = 0.6; p_e = (3*2 + 2*1) / 25 = 0.32; κ = 0.28 / 0.68
    assert figures["judge_kappa"] == pytest.approx(0.28 / 0.68)
    assert judged([rec("supported", "supported")])["judge_kappa"] == 1.0
    assert judged([])["judge_kappa"] is None and judged([])["judge_agreement"] is None


def test_catch_split_separates_deterministic_from_judge_only():
    records = [rec("wrong_speaker", det=False, mismatch=["m"]), rec("wrong_speaker"), rec("wrong_attribution"),
               rec("supported", det=False), rec("unparseable")]  # fmt: skip
    assert judged(records)["citation_catches"] == {
        "wrongSpeaker": 2, "wrongSpeakerDeterministic": 1, "wrongSpeakerJudgeOnly": 1, "deterministicCatches": 2,
        "judgeCatches": 3, "judgeOnlyCatches": 2, "deterministicOnlyCatches": 1}  # fmt: skip


def test_coverage_mean_is_over_scored_paragraphs_only():
    records = [rec("supported", score=0.2), rec("supported", score=0.6), rec("supported", scorer_error="down")]
    figures = paragraph_metrics(records, judged=True, scored=True)
    assert figures["coverage_score_mean"] == pytest.approx(0.4) and figures["scorer_errors"] == 1
    assert paragraph_metrics([rec("supported")], judged=True, scored=True)["coverage_score_mean"] is None


def test_mock_judge_rules_from_the_input_alone():
    source = {"marker": "1", "metadata": {"speaker": "A B"}, "text": "alpha beta gamma delta"}
    other = {"marker": "2", "metadata": {}, "text": "omega sigma lambda kappa"}
    assert mock_judge.judge_verdict(judge_input("alpha beta gamma delta [1]", [source]))[0] == "supported"
    assert mock_judge.judge_verdict(judge_input("alpha beta omega zeta [1]", [source]))[0] == "partial"
    assert mock_judge.judge_verdict(judge_input("zeta eta theta iota [1]", [source]))[0] == "unsupported"
    assert (
        mock_judge.judge_verdict(judge_input("omega sigma lambda kappa [1]", [source], [other]))[0]
        == "wrong_attribution"
    )
    assert (
        mock_judge.judge_verdict(judge_input("alpha beta [1]", [source], [], ["speaker 'C D'"]))[0] == "wrong_speaker"
    )
    assert mock_judge.is_judge({"messages": judge_messages(judge_input("x", []))})


def test_the_strict_mock_judge_wants_more_coverage_for_each_verdict():
    source = {"marker": "1", "metadata": {}, "text": "alpha beta gamma delta epsilon zeta eta theta iota kappa"}
    other = {"marker": "2", "metadata": {}, "text": "omega sigma lambda mu nu"}

    def both(paragraph: str, others=()) -> tuple[str, str]:
        payload = judge_input(paragraph, [source], list(others))
        return mock_judge.judge_verdict(payload)[0], mock_judge.judge_verdict(payload, strict=True)[0]

    # coverage 1.0, 0.8, 0.5, 0.4, 0.2: supported at 0.6 / 0.9, partial at 0.3 / 0.5
    assert both("alpha beta gamma delta epsilon [1]") == ("supported", "supported")
    assert both("alpha beta gamma delta omega [1]") == ("supported", "partial")
    assert both("alpha beta omega sigma [1]") == ("partial", "partial")
    assert both("alpha beta omega sigma lambda [1]") == ("partial", "unsupported")
    assert both("alpha omega sigma lambda mu [1]") == ("unsupported", "unsupported")
    # wrong_attribution needs another source at the judge's own supported level: 0.8 is not enough when strict.
    assert both("omega sigma lambda mu zeta [1]", [other]) == ("wrong_attribution", "unsupported")
    assert both("alpha beta [1]", []) == ("supported", "supported")
    messages = judge_messages(judge_input("alpha beta gamma delta omega [1]", [source]))
    assert json.loads(mock_judge.judge_reply(messages, model="mock-judge-strict"))["verdict"] == "partial"
    assert json.loads(mock_judge.judge_reply(messages, model="mock-judge"))["verdict"] == "supported"


def test_reply_fault_grammar_and_counter():
    plan = parse_fault_spec("delay:5,proseX1".lower())
    assert (plan.reply, plan.reply_count, plan.delay_ms) == ("prose", 1, 5.0)
    counter = FaultCounter()
    assert [counter.reply_fires(plan) for _ in range(3)] == ["prose", None, None]
    assert parse_fault_spec("fenced").reply == "fenced" and counter.reply_fires(parse_fault_spec("fenced")) == "fenced"
    with pytest.raises(FaultSpecError, match="more than one reply fault"):
        parse_fault_spec("prose,fenced")


def test_the_judge_package_imports_no_pytest():
    # The judge is a library the plugin will call (docs/citation.md); like core/, it must stand without pytest.
    modules = ["prompt", "parse", "cache", "client", "scorer", "generate"]
    code = (
        "import sys; "
        + "; ".join(f"import pytest_groundeval.judge.{m}" for m in modules)
        + "; print(sorted(m for m in ('pytest', '_pytest', 'openai') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize(
    ("body", "refused"),
    [
        # OpenAI's error object (https://platform.openai.com/docs/guides/error-codes), param named.
        ({"error": {"message": "x", "type": "invalid_request_error", "param": "temperature", "code": "unsupported_value"}},
         "temperature"),
        ({"message": "x", "type": "invalid_request_error", "param": "response_format.json_schema", "code": None},
         "response_format"),
        ({"message": "Unsupported parameter: 'max_tokens' is not supported with this model.", "param": None},
         "max_tokens"),
        ({"error": {"message": "'messages' must not be empty", "param": "messages"}}, "other"),
        # vLLM: a prompt too long for the completion budget names max_tokens but refuses no parameter.
        ({"message": "'max_tokens' or 'max_completion_tokens' is too large: 4096. This model's maximum context "
                     "length is 8192 tokens", "type": "BadRequestError", "param": None, "code": 400},
         "context_length"),
        ({"error": {"message": "litellm.BadRequestError: json_schema response format is not supported"}},
         "response_format"),
        ({"error": {"message": "bad request"}}, None),
        ("not json", None),
    ],
)  # fmt: skip
def test_which_parameter_a_400_refuses(body, refused):
    from pytest_groundeval.judge.fallbacks import refused_parameter

    assert refused_parameter(body) == refused


def test_request_shape_steps_down_in_order_and_only_once():
    from pytest_groundeval.judge.fallbacks import RequestShape

    shape = RequestShape(max_tokens=100)
    first = shape.sent()
    assert shape.params("n", {})["response_format"]["type"] == "json_schema"
    assert shape.step_down("response_format", first) == "json_object"
    assert shape.step_down("response_format", first) == ""  # a request sent before the change: just resend
    assert shape.step_down(None, shape.sent()) == "no response_format"  # unnamed: taken as response_format
    assert shape.step_down(None, shape.sent()) is None  # nothing left to drop
    assert shape.step_down("max_tokens", shape.sent()) == "max_completion_tokens"
    assert shape.step_down("temperature", shape.sent()) == "no temperature"
    assert shape.step_down("context_length", shape.sent()) is None
    assert shape.params("n", {}) == {"max_completion_tokens": 100}
    assert shape.fallbacks == ["json_object", "no response_format", "max_completion_tokens", "no temperature"]
