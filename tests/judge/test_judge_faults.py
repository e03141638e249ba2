"""Each judge reply shape, request refusal and rate limit of the mock, end to end (docs/judges.md, docs/mock.md).

Twice over: the official ``openai`` SDK against the mock (what a provider's reply looks
like to any client), then the plugin's ``JudgeClient`` (what the judge records).
"""

from __future__ import annotations

import asyncio

import openai
import pytest

from pytest_groundeval.core import contract
from pytest_groundeval.core.judging import UNPARSEABLE, judge_input
from pytest_groundeval.judge.client import JudgeClient
from pytest_groundeval.judge.fallbacks import refused_parameter
from pytest_groundeval.judge.parse import UnparseableReply, read_verdict
from pytest_groundeval.judge.prompt import judge_messages
from pytest_groundeval.mock import ThreadedMockProvider
from pytest_groundeval.mock.reply_shapes import ENVELOPE_FAULTS, REPLY_FAULTS

HOLM = {"marker": "2", "metadata": {"speaker": "Lars Holm"},
        "text": "Lars Holm (M): The market has already reached most towns."}  # fmt: skip
SUPPORTED = judge_input("Lars Holm (M) said the market has already reached most towns [2].", [HOLM])

# Reply fault -> what the judge records: the verdict, or UNPARSEABLE with a piece of the reason.
EXPECTED = {
    "prose": (UNPARSEABLE, "not a JSON object"),
    "fenced": ("supported", ""),
    "badverdict": (UNPARSEABLE, "unknown verdict 'mostly_fine'"),
    "norationale": (UNPARSEABLE, "empty rationale"),
    "think": ("supported", ""),
    "reasoning_tag": ("supported", ""),
    "open_think": ("supported", ""),
    "unclosed_think": (UNPARSEABLE, "ends inside its <think> reasoning block"),
    "fence_prose": ("supported", ""),
    "fence_bare": ("supported", ""),
    "extra_keys": ("supported", ""),
    "titlecase": ("supported", ""),
    "twice": ("supported", ""),
    "two_objects": (UNPARSEABLE, "2 different JSON values"),
    "reasoning_content": ("supported", ""),
    "reasoning": ("supported", ""),
    "azure_filters": ("supported", ""),
    "null_content": (UNPARSEABLE, "only reasoning came back (reasoning_content"),
    "refusal": (UNPARSEABLE, "the model refused"),
    "empty_choices": (UNPARSEABLE, "no choices"),
    "html200": (UNPARSEABLE, "not a chat completion but text: '<!doctype html>"),
    "text200": (UNPARSEABLE, "not a chat completion but text: 'Service temporarily"),
    "no_usage": ("supported", ""),
}


@pytest.fixture(scope="module")
def mock():
    """One mock for the module; tests that count requests clear its log and fault counters first."""
    with ThreadedMockProvider() as provider:
        yield provider


@pytest.fixture
def fresh(mock):
    mock.clear_log()
    mock.reset_faults()
    return mock


def judge_with(mock, model: str, payloads=(SUPPORTED,), **options):
    async def run():
        async with JudgeClient(mock.base_url, model, **options) as judge:
            return await judge.judge_many(list(payloads)), judge

    return asyncio.run(run())


def test_every_reply_fault_has_an_expected_reading():
    assert set(EXPECTED) == set(REPLY_FAULTS)


@pytest.mark.parametrize("fault", list(EXPECTED))
def test_each_reply_shape_through_the_sdk(mock, fault):
    client = openai.OpenAI(base_url=mock.base_url, api_key="x", max_retries=0)
    completion = client.chat.completions.create(
        model="mock-judge", messages=judge_messages(SUPPORTED), extra_headers={contract.FAULT_HEADER: fault}
    )
    verdict, reason = EXPECTED[fault]
    if fault in ("reasoning_content", "reasoning"):  # the SDK keeps the provider's extra field
        assert getattr(completion.choices[0].message, fault).strip()
    if fault in ("html200", "text200"):
        assert isinstance(completion, str)  # the SDK hands a non-JSON 200 body over as text
    if verdict == UNPARSEABLE:
        with pytest.raises(UnparseableReply, match=reason.replace("(", r"\(")):
            read_verdict(completion)
    else:
        assert read_verdict(completion)[0] == verdict


@pytest.mark.parametrize("fault", list(EXPECTED))
def test_each_reply_shape_through_the_judge_client(mock, fault):
    (result,), _ = judge_with(mock, f"mock-judge+fault={fault}", parse_retries=1)
    verdict, reason = EXPECTED[fault]
    assert result.verdict == verdict and result.error is None
    if verdict == UNPARSEABLE:
        assert result.attempts == 2 and all(reason in failure for failure in result.parse_failures)
        assert reason in result.rationale
    else:
        assert result.attempts == 1 and result.parse_failures == []


def test_envelope_faults_leave_other_chat_behaviours_alone(mock):
    client = openai.OpenAI(base_url=mock.base_url, api_key="x", max_retries=0)
    for fault in ENVELOPE_FAULTS:
        reply = client.chat.completions.create(
            model="mock-generate", messages=[{"role": "user", "content": "ECHO: the sky is green"}],
            extra_headers={contract.FAULT_HEADER: fault},
        )  # fmt: skip
        assert reply.choices[0].message.content == "the sky is green"


# --------------------------------------------------------------------------- refusals (HTTP 400) and fallbacks


@pytest.mark.parametrize(
    ("fault", "params", "param"),
    [
        ("json_schema_400", {"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}},
         "response_format"),
        ("response_format_400", {"response_format": {"type": "json_object"}}, "response_format"),
        ("temperature_400", {"temperature": 0}, "temperature"),
        ("max_tokens_400", {"max_tokens": 64}, "max_tokens"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("noparam", [False, True])
def test_each_refusal_through_the_sdk(mock, fault, params, param, noparam):
    client = openai.OpenAI(base_url=mock.base_url, api_key="x", max_retries=0)
    spec = fault + (",noparam" if noparam else "")
    messages = judge_messages(SUPPORTED)
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model=f"mock-judge+fault={spec}", messages=messages, **params)
    body = caught.value.body  # OpenAI's error object: message, type, param, code
    assert body["type"] == "invalid_request_error" and body["param"] == (None if noparam else param)
    assert refused_parameter(body) == param  # from param, or from the message alone
    # Without the parameter the same model answers.
    assert client.chat.completions.create(model=f"mock-judge+fault={spec}", messages=messages).choices


@pytest.mark.parametrize(
    ("spec", "options", "statuses", "sent"),
    [
        ("json_schema_400", {}, [400, 200], "json_object"),
        ("response_format_400", {}, [400, 400, 200], "none"),
        ("response_format_400,noparam", {}, [400, 400, 200], "none"),
        ("temperature_400", {}, [400, 200], "json_schema"),
        ("max_tokens_400", {"max_tokens": 256}, [400, 200], "json_schema"),
        ("max_tokens_400", {}, [200], "json_schema"),  # no cap set: nothing to refuse
    ],
)
def test_a_refused_parameter_is_dropped_once_and_remembered(fresh, spec, options, statuses, sent):
    payloads = [SUPPORTED] * 3
    results, judge = judge_with(fresh, f"mock-judge+fault={spec}", payloads, concurrency=1, **options)
    assert [r.verdict for r in results] == ["supported"] * 3 and all(r.error is None for r in results)
    # The fallback is remembered: only the first paragraph's requests were refused.
    assert [r.status for r in fresh.log] == statuses + [200, 200]
    assert judge.shape.response_format == sent
    notices = judge.pop_notices()
    assert len(notices) == len(statuses) - 1 and judge.pop_notices() == []
    assert all(n.startswith("judge 'mock-judge+fault=") and "for the rest of the run" in n for n in notices)
    if spec.startswith("temperature"):
        assert "refused temperature 0" in notices[0] and not judge.shape.temperature
    if statuses != [200] and spec.startswith("max_tokens"):
        assert "sends max_completion_tokens" in notices[0]


def test_concurrent_refusals_make_one_fallback_and_one_notice(fresh):
    results, judge = judge_with(fresh, "mock-judge+fault=json_schema_400", [SUPPORTED] * 6, concurrency=4)
    assert [r.verdict for r in results] == ["supported"] * 6
    assert judge.shape.fallbacks == ["json_object"] and len(judge.notices) == 1
    assert [r.status for r in fresh.log].count(400) == 4  # the first four were in flight together


def test_a_400_no_fallback_mends_is_a_judge_error(fresh):
    # A fault token the mock does not know: a 400 naming the model, not a parameter a judge can drop.
    (result,), judge = judge_with(fresh, "mock-judge+fault=bogus")
    assert result.verdict is None and "HTTP 400" in result.error and "unknown token 'bogus'" in result.error
    assert result.attempts == 1 and judge.shape.fallbacks == [] and judge.notices == []


def test_no_quota_is_not_retried(fresh):
    (result,), judge = judge_with(fresh, "mock-judge+fault=quota", rate_limit_retries=5)
    assert result.verdict is None and result.attempts == 1
    assert "no quota left" in result.error and "not retried" in result.error
    assert judge.limiter.rate_limited == 0


# --------------------------------------------------------------------------- rate limits (AIMD)


def test_a_concurrency_limit_halves_the_judge_and_drops_no_request(fresh):
    spec = "conc:2,delay:100"
    results, judge = judge_with(fresh, "mock-judge", [SUPPORTED] * 12, concurrency=8, backoff=0.01,
                                headers={contract.FAULT_HEADER: spec})  # fmt: skip
    assert [r.verdict for r in results] == ["supported"] * 12 and all(r.error is None for r in results)
    limiter = judge.limiter
    decreases = [c for c in limiter.changes if c.reason == "rate limited"]
    # The first 429 halves the first burst (8 sent; 8 in flight unless one already came back), and every
    # decrease halves what was in flight.
    assert decreases and decreases[0].before == 8 and decreases[0].after == decreases[0].in_flight // 2 <= 4
    assert all(c.after == max(1, min(c.before, c.in_flight) // 2) for c in decreases)
    stats = fresh.limit_stats(spec)
    assert stats["admitted"] == 12 and stats["rejected"] == limiter.rate_limited > 0
    assert stats["peak_in_flight"] == 2 and limiter.in_flight == 0


def test_a_rate_limit_with_retry_after_holds_the_judge_and_drops_no_request(fresh):
    spec = "rate:3"
    results, judge = judge_with(fresh, "mock-judge", [SUPPORTED] * 6, concurrency=6,
                                headers={contract.FAULT_HEADER: spec})  # fmt: skip
    assert [r.verdict for r in results] == ["supported"] * 6
    stats = fresh.limit_stats(spec)
    assert stats["admitted"] == 6 and stats["rejected"] == judge.limiter.rate_limited >= 1
    assert judge.limiter.decreases >= 1
    refused = [r for r in fresh.log if r.status == 429]
    assert refused and all(r.fault == spec for r in refused)
