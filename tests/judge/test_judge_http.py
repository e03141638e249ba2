"""The judge client and coverage scorer through real HTTP against the mock (docs/citation.md, docs/mock.md)."""

from __future__ import annotations

import asyncio
import math
import socket
import time

import httpx
import pytest

from pytest_groundeval.core.judging import UNPARSEABLE, judge_input
from pytest_groundeval.core.kinds.citation import paragraph_metrics
from pytest_groundeval.judge.cache import JudgeCache
from pytest_groundeval.judge.client import JudgeClient
from pytest_groundeval.judge.prompt import JUDGE_PROMPT, judge_messages
from pytest_groundeval.judge.scorer import CoverageScorer, read_score, scorer_document, sigmoid
from pytest_groundeval.mock import ThreadedMockProvider

HOLM = {"marker": "2", "metadata": {"speaker": "Lars Holm", "party": "M"},
        "text": "Lars Holm (M): The market has already reached most towns. Subsidies should go only where no operator will build."}  # fmt: skip
BERG = {"marker": "1", "metadata": {"speaker": "Anna Berg", "party": "S"},
        "text": "Anna Berg (S): Every municipality should have fibre to ninety percent of households by 2030."}  # fmt: skip

SUPPORTED = judge_input("Lars Holm (M) said the market has already reached most towns [2].", [HOLM])
PARTIAL = judge_input(
    "Lars Holm (M) said the market reached most towns, and that rural fibre is fully funded by taxes [2].", [HOLM]
)
UNSUPPORTED = judge_input("Drought insurance premiums tripled for coastal farmers [2].", [HOLM])
WRONG_SPEAKER = judge_input(
    "Anna Berg (S) said the market has already reached most towns [2].",
    [HOLM],
    [BERG],
    ["speaker 'Anna Berg', party 'S' (cited [2]) but source [2] has speaker 'Lars Holm', party 'M'"],
)
WRONG_ATTRIBUTION = judge_input(
    "Every municipality should have fibre to ninety percent of households by 2030 [2].", [HOLM], [BERG]
)


@pytest.fixture(scope="module")
def mock():
    """One mock provider for the module; tests that count requests clear its log first."""
    with ThreadedMockProvider() as provider:
        yield provider


def judge_once(url: str, model: str, payload: dict, **options) -> object:
    async def run():
        async with JudgeClient(url, model, options.pop("api_key", None), **options) as judge:
            return await judge.judge(payload)

    return asyncio.run(run())


@pytest.mark.parametrize(
    ("payload", "verdict"),
    [(SUPPORTED, "supported"), (PARTIAL, "partial"), (UNSUPPORTED, "unsupported"),
     (WRONG_SPEAKER, "wrong_speaker"), (WRONG_ATTRIBUTION, "wrong_attribution")],
)  # fmt: skip
def test_every_verdict_through_the_sdk(mock, payload, verdict):
    result = judge_once(mock.base_url, "mock-judge", payload)
    assert (result.verdict, result.error, result.attempts) == (verdict, None, 1)
    assert result.rationale.strip()


def test_wrong_attribution_names_the_source_the_content_is_in(mock):
    result = judge_once(mock.base_url, "mock-judge", WRONG_ATTRIBUTION)
    assert "[1]" in result.rationale and "[2]" in result.rationale


def test_judge_request_carries_the_prompt_full_sources_and_the_hint():
    system, user = judge_messages(WRONG_SPEAKER)
    assert system["content"].startswith(JUDGE_PROMPT) and "wrong_speaker" in system["content"]
    assert "speaker" in system["content"].split("wrong_speaker", 1)[1][:400]
    assert HOLM["text"] in user["content"] and "Lars Holm" in user["content"]
    assert "source [2] has speaker 'Lars Holm'" in user["content"]


def test_fenced_json_is_unwrapped(mock):
    result = judge_once(mock.base_url, "mock-judge+fault=fenced", SUPPORTED)
    assert (result.verdict, result.attempts, result.parse_failures) == ("supported", 1, [])


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("prose", "not a JSON object"),
        ("badverdict", "unknown verdict 'mostly_fine'"),
        ("norationale", "empty rationale"),
    ],
)
def test_parse_failures_are_retried_then_unparseable(mock, fault, reason):
    result = judge_once(mock.base_url, f"mock-judge+fault={fault}", SUPPORTED, parse_retries=2)
    assert result.verdict == UNPARSEABLE and result.attempts == 3
    assert len(result.parse_failures) == 3 and all(reason in f for f in result.parse_failures)
    assert reason in result.rationale


def test_one_bad_reply_then_a_good_one_is_a_verdict(mock):
    mock.reset_faults()
    result = judge_once(mock.base_url, "mock-judge+fault=badverdictx1", SUPPORTED)
    assert (result.verdict, result.attempts, len(result.parse_failures)) == ("supported", 2, 1)


def test_prose_for_every_paragraph_cannot_pass_a_supported_floor(mock):
    async def run():
        async with JudgeClient(mock.base_url, "mock-judge+fault=prose", parse_retries=1) as judge:
            return await judge.judge_many([SUPPORTED] * 6)

    records = [{"deterministicPass": True, "metadataMismatch": [], **r.to_record()} for r in asyncio.run(run())]
    figures = paragraph_metrics(records, judged=True, scored=False)
    assert figures["unparseable_rate"] == 1.0
    assert figures["citation_supported_rate"] == 0.0  # not None: the paragraphs stay in the denominator
    assert not figures["citation_supported_rate"] >= 0.01


HTML_PAGE = b"<!doctype html><html><body><h1>502 Bad Gateway</h1><p>upstream judge offline</p></body></html>"


@pytest.mark.parametrize(
    ("content_type", "body", "reason"),
    [
        ("text/html; charset=utf-8", HTML_PAGE, "not a chat completion but text: '<!doctype html>"),
        ("text/plain", b"Service temporarily unavailable, try later", "not a chat completion but text: 'Service"),
        ("application/json", b"<html>not json</html>", "the HTTP 200 body is not JSON"),
        ("application/json", b'{"status": "ok"}', "the reply is empty"),
    ],
    ids=["html", "plain-text", "json-type-html-body", "json-not-a-completion"],
)  # fmt: skip
def test_a_200_that_is_no_chat_completion_is_unparseable_not_an_exception(plain_endpoint, content_type, body, reason):
    url = plain_endpoint(content_type, body)

    async def run():
        async with JudgeClient(url, "judge", parse_retries=1) as judge:
            return await judge.judge_many([SUPPORTED, PARTIAL]), judge.gone

    results, gone = asyncio.run(run())
    assert [r.verdict for r in results] == [UNPARSEABLE, UNPARSEABLE] and gone is None
    assert all(r.error is None and r.attempts == 2 and len(r.parse_failures) == 2 for r in results)
    assert all(reason in f for r in results for f in r.parse_failures) and reason in results[0].rationale
    assert plain_endpoint.requests == 4  # asked again, as prose is, never more
    records = [{"deterministicPass": True, **r.to_record()} for r in results]
    figures = paragraph_metrics(records, judged=True, scored=False)
    assert figures["unparseable_rate"] == 1.0 and figures["judge_errors"] == 0


def test_judge_down_is_unjudged_with_an_error():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = judge_once(f"http://127.0.0.1:{port}/v1", "judge", SUPPORTED, max_retries=1, backoff=0.01)
    assert result.verdict is None and result.attempts == 2
    assert "unreachable" in result.error and "after 2 attempt(s)" in result.error
    records = [{"deterministicPass": True, **result.to_record()}]
    figures = paragraph_metrics(records, judged=True, scored=False)
    assert figures["judge_errors"] == 1 and figures["citation_supported_rate"] == 0.0


def test_a_judge_and_a_scorer_down_in_a_row_are_given_up_on(mock):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    async def run():
        async with JudgeClient(f"http://127.0.0.1:{port}/v1", "judge", concurrency=1, max_retries=0,
                               give_up_after=2) as judge:  # fmt: skip
            judged = [await judge.judge(SUPPORTED) for _ in range(4)]
        async with CoverageScorer(f"http://127.0.0.1:{port}", concurrency=1, max_retries=0, give_up_after=2) as scorer:
            scored = [await scorer.score("a", ["a"]) for _ in range(4)]
        # A score between failures resets the streak: two failures, a score, two failures, a score.
        async with CoverageScorer(mock.root_url, concurrency=1, max_retries=0, give_up_after=3,
                                  headers={"X-Groundeval-Fault": "delay:1,500x2"}) as flaky:  # fmt: skip
            fine = [await flaky.score("a", ["a"]) for _ in range(3)]
            flaky._http.headers["X-Groundeval-Fault"] = "delay:2,500x2"
            fine += [await flaky.score("a", ["a"]) for _ in range(3)]
        return judged, scored, fine

    judged, scored, fine = asyncio.run(run())
    assert [r.attempts for r in judged] == [1, 1, 0, 0] and all(r.verdict is None for r in judged)
    assert all(r.error.startswith("not sent: the judge left 2 paragraphs in a row unjudged") for r in judged[2:])
    assert "unreachable" in judged[3].error  # the last real error is kept
    assert all(r.score is None for r in scored) and scored[3].error.startswith("not sent: the scorer gave no score")
    assert [r.score is not None for r in fine] == [False, False, True, False, False, True]


def test_429_waits_for_retry_after_then_succeeds(mock):
    mock.reset_faults()
    mock.clear_log()
    started = time.monotonic()
    result = judge_once(mock.base_url, "mock-judge+fault=429:0.3x1", SUPPORTED, backoff=0.0)
    assert time.monotonic() - started >= 0.3
    assert result.verdict == "supported" and result.attempts == 2
    assert [r.status for r in mock.log] == [429, 200]


def test_500_beyond_the_retries_is_a_judge_error(mock):
    mock.clear_log()
    result = judge_once(mock.base_url, "mock-judge+fault=500", SUPPORTED, max_retries=2, backoff=0.0)
    assert result.verdict is None and "HTTP 500" in result.error
    assert [r.status for r in mock.log] == [500, 500, 500]


def test_timeout_is_a_judge_error(mock):
    mock.clear_log()
    result = judge_once(mock.base_url, "mock-judge+fault=delay:400", SUPPORTED, max_retries=0, timeout=0.1)
    assert result.verdict is None and "no answer within 0.1 s" in result.error
    # The mock finishes the abandoned request later; wait for it, so it lands in no later test's log.
    deadline = time.monotonic() + 5.0
    while not mock.log and time.monotonic() < deadline:
        time.sleep(0.02)
    assert [r.fault for r in mock.log] == ["delay:400"]


def test_the_key_is_in_no_repr_and_no_error(mock):
    key = "sk-very-secret-key-123"

    async def run():
        async with JudgeClient(mock.base_url, "mock-judge+fault=500", key, max_retries=0) as judge:
            return repr(judge), vars(judge), await judge.judge(SUPPORTED)

    text, attributes, result = asyncio.run(run())
    assert key not in text and key not in repr(result) and key not in str(result.to_record())
    assert all(value != key for value in attributes.values())


def test_a_rationale_quoting_the_key_is_stored_without_it(tmp_path):
    # A judge written here: every reply is a valid verdict whose rationale quotes the request's
    # Authorization header (issue 19). The key reaches neither the result nor the cache.
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Echo(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            said = json.dumps(
                {"verdict": "supported", "rationale": f"I was called with {self.headers['Authorization']}"}
            )
            body = json.dumps(
                {
                    "id": "c",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "m",
                    "choices": [
                        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": said}}
                    ],
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    key = "sk-judge-secret-9d2e71"
    try:
        result = judge_once(
            f"http://127.0.0.1:{server.server_address[1]}/v1",
            "m",
            SUPPORTED,
            api_key=key,
            cache=JudgeCache(tmp_path / "cache"),
        )
    finally:
        server.shutdown()
        server.server_close()
    assert result.verdict == "supported" and result.rationale == "I was called with Bearer ***"
    assert key not in str(result.to_record())
    cached = [p.read_text() for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert cached and not any(key in text for text in cached)


def test_cache_hit_makes_a_rerun_free(mock, tmp_path):
    cache = JudgeCache(tmp_path / ".groundeval" / "judge-cache")
    payloads = [SUPPORTED, WRONG_SPEAKER, WRONG_ATTRIBUTION]

    async def run(model: str):
        async with JudgeClient(mock.base_url, model, cache=cache) as judge:
            return await judge.judge_many(payloads)

    mock.clear_log()
    first = asyncio.run(run("mock-judge"))
    assert len(mock.log) == 3 and not any(r.cached for r in first)
    mock.clear_log()
    second = asyncio.run(run("mock-judge"))
    assert mock.log == [] and all(r.cached for r in second)
    assert [r.verdict for r in second] == [r.verdict for r in first]
    asyncio.run(run("another-judge"))  # the model is part of the key
    assert len(mock.log) == 3
    assert "sk-" not in "".join(p.read_text() for p in cache.directory.rglob("*.json"))


def test_a_jury_of_two_mock_judges_over_http_keeps_each_judge_its_limiter_and_its_cache_keys(mock, tmp_path):
    from pytest_groundeval.core.kinds.citation import Jury

    cache = JudgeCache(tmp_path / "cache")
    payloads = [SUPPORTED, PARTIAL, WRONG_SPEAKER]

    async def run():
        # Each judge its own client: its own requests in flight (3 and 1) and its own fallbacks.
        judges = [
            JudgeClient(mock.base_url, "mock-judge+fault=delay:20", cache=cache, concurrency=3),
            JudgeClient(mock.base_url, "mock-judge-strict+fault=delay:20", cache=cache, concurrency=1),
        ]
        jury = Jury(judges, "majority")
        try:
            return await asyncio.gather(*(jury.judge(p) for p in payloads)), [j.limiter for j in judges]
        finally:
            await jury.close()

    mock.clear_log()
    results, limiters = asyncio.run(run())
    # The strict mock judge wants more of the paragraph in its sources: the two disagree on two paragraphs,
    # and a tie goes to the worse verdict.
    assert [[j.verdict for j in r.judges] for r in results] == [
        ["supported", "partial"], ["partial", "unsupported"], ["wrong_speaker", "wrong_speaker"]]  # fmt: skip
    assert [r.verdict for r in results] == ["partial", "unsupported", "wrong_speaker"]
    assert results[0].model == "jury(majority: mock-judge+fault=delay:20, mock-judge-strict+fault=delay:20)"
    asked = sorted(record.model for record in mock.log if record.kind == "judge")
    assert asked == ["mock-judge"] * 3 + ["mock-judge-strict"] * 3
    assert limiters[0] is not limiters[1] and limiters[1].peak_in_flight == 1 and limiters[0].peak_in_flight <= 3
    # The cache keys each verdict by its judge's model: six entries, and a re-run asks neither judge.
    assert len(list(cache.directory.rglob("*.json"))) == 6
    mock.clear_log()
    again, _ = asyncio.run(run())
    assert mock.log == [] and all(r.cached for r in again) and [r.verdict for r in again] == [
        r.verdict for r in results]  # fmt: skip


def test_unparseable_is_not_cached(mock, tmp_path):
    cache = JudgeCache(tmp_path)
    judge_once(mock.base_url, "mock-judge+fault=prose", SUPPORTED, cache=cache, parse_retries=0)
    assert list(tmp_path.rglob("*.json")) == []


def test_concurrency_is_bounded(mock):
    async def run():
        async with JudgeClient(mock.base_url, "mock-judge+fault=delay:100", concurrency=2) as judge:
            started = time.monotonic()
            await judge.judge_many([SUPPORTED] * 4)
            return time.monotonic() - started

    assert asyncio.run(run()) >= 0.2  # four 100 ms requests, two at a time


# --------------------------------------------------------------------------- scorer


def score_once(url: str, paragraph: str, texts: list[str], **options):
    async def run():
        async with CoverageScorer(url, **options) as scorer:
            return await scorer.score(paragraph, texts)

    return asyncio.run(run())


@pytest.mark.parametrize("suffix", ["", "/v1", "/score", "/v1/score"])
def test_scorer_paths_and_sigmoid(mock, suffix):
    result = score_once(mock.root_url + suffix, "market reached most towns [2]", [HOLM["text"]])
    assert result.logit == 4.0 and result.error is None
    assert result.score == pytest.approx(1 / (1 + math.exp(-4.0)))


def test_scorer_reads_the_list_shape_and_rerank(mock):
    listed = score_once(mock.root_url, "fibre households", [BERG["text"]], headers={"X-Groundeval-Score-Shape": "list"})
    rerank = score_once(mock.root_url, "fibre households", [BERG["text"]], api="rerank")
    assert listed.logit == rerank.logit == 4.0


def test_scorer_cap_truncates_the_concatenated_sources(mock):
    long_text = "filler " * 10_000 + "moonbase"
    capped = score_once(mock.root_url, "moonbase", [long_text])
    assert capped.truncated and capped.logit == -4.0  # the only matching word lies beyond 28,000 characters
    full = score_once(mock.root_url, "moonbase", [long_text], cap=len(long_text))
    assert not full.truncated and full.logit == 4.0
    assert scorer_document(["ab", "cd"], cap=3) == ("ab\n", True)


def test_scorer_down_is_none_never_a_guess():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = score_once(f"http://127.0.0.1:{port}", "anything", ["text"], max_retries=0)
    assert result.score is None and "unreachable" in result.error
    records = [{**result.to_record()}, {"coverageScore": 0.5, "scorerError": None}]
    figures = paragraph_metrics(records, judged=False, scored=True)
    assert figures["scorer_errors"] == 1 and figures["coverage_score_mean"] == 0.5


def test_scorer_500_is_an_error(mock):
    result = score_once(mock.root_url, "a", ["a"], headers={"X-Groundeval-Fault": "500"}, max_retries=0)
    assert result.score is None and "HTTP 500" in result.error


def test_sigmoid_bounds_and_read_score_shapes():
    assert sigmoid(0.0) == 0.5 and sigmoid(-1000.0) == 0.0 and sigmoid(1000.0) == 1.0
    assert read_score({"data": [{"index": 0, "score": 1.5}]}) == 1.5
    assert read_score([{"index": 0, "score": -2}]) == -2.0
    assert read_score({"results": [{"index": 0, "relevance_score": 0.25}]}) == 0.25
    with pytest.raises(ValueError):
        read_score({"data": []})


def test_mock_score_route_without_v1_answers_the_same(mock):
    a = httpx.post(mock.root_url + "/score", json={"text_1": "a b", "text_2": "a"}).json()
    b = httpx.post(mock.base_url + "/score", json={"text_1": "a b", "text_2": "a"}).json()
    assert a["data"] == b["data"] == [{"index": 0, "object": "score", "score": 0.0}]


def test_assess_paragraphs_on_the_smoke_dataset(mock):
    from pathlib import Path

    from pytest_groundeval.core.dataset import load_dataset
    from pytest_groundeval.core.kinds.citation import assess_paragraphs, judge_citation, source_details, source_map

    dataset = load_dataset(Path(__file__).resolve().parents[2] / "datasets" / "citation-smoke")
    item = dataset.by_id["cit-smoke-wrong-speaker"]
    outcome = judge_citation(item, answer=item.response.answer, sources=source_map(item),
                             mention_regex=dataset.manifest.mention_regex)  # fmt: skip

    async def run():
        async with JudgeClient(mock.base_url, "mock-judge") as judge, CoverageScorer(mock.root_url) as scorer:
            return await assess_paragraphs(outcome.extra["citationParagraphs"], answer=item.response.answer,
                                           sources=source_details(item), judge=judge, scorer=scorer)  # fmt: skip

    (record,) = asyncio.run(run())
    assert record["verdict"] == "wrong_speaker" and record["metadataMismatch"] and record["judgeModel"] == "mock-judge"
    assert record["coverageScore"] is None and "no cited source has text" in record["scorerError"]
    assert paragraph_metrics([record], judged=True, scored=True)["citation_catches"]["wrongSpeakerDeterministic"] == 1
