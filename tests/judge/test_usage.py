"""The judge's tokens, from each reply's ``usage`` (docs/judges.md, "Tokens and cost")."""

from __future__ import annotations

import asyncio

import pytest

from pytest_groundeval.core.judging import JudgeResult, judge_input, record_usage
from pytest_groundeval.core.kinds.citation import paragraph_metrics
from pytest_groundeval.judge.cache import JudgeCache
from pytest_groundeval.judge.client import JudgeClient
from pytest_groundeval.judge.parse import reply_usage
from pytest_groundeval.mock import ThreadedMockProvider

SOURCE = {"marker": "1", "metadata": {}, "text": "Alpha bravo charlie delta echo."}
PAYLOADS = [judge_input(f"Alpha bravo charlie delta {word} [1].", [SOURCE]) for word in ("kilo", "lima", "mike")]


@pytest.fixture(scope="module")
def mock():
    with ThreadedMockProvider() as provider:
        yield provider


def judge_all(mock, model: str, payloads=PAYLOADS, **options):
    async def run():
        async with JudgeClient(mock.base_url, model, **options) as judge:
            return await judge.judge_many(list(payloads)), judge.usage

    mock.clear_log()
    return asyncio.run(run())


@pytest.mark.parametrize(
    ("body", "usage"),
    [
        ({"usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}}, (12, 3)),
        ({"usage": {"prompt_tokens": 0, "completion_tokens": 0}}, (0, 0)),
        ({}, None),
        ({"usage": None}, None),
        ({"usage": {"total_tokens": 15}}, None),
        ({"usage": {"prompt_tokens": -1, "completion_tokens": 3}}, None),
        ({"usage": {"prompt_tokens": True, "completion_tokens": 3}}, None),
        ({"usage": {"prompt_tokens": 1.5, "completion_tokens": 3}}, None),
        ("<html>Bad gateway</html>", None),
    ],
)
def test_reply_usage_reads_only_whole_counts(body, usage):
    assert reply_usage(body) == usage


def test_tokens_per_paragraph_are_the_mocks_counts(mock):
    results, usage = judge_all(mock, "mock-judge")
    log = [r for r in mock.log if r.kind == "judge"]
    assert [r.replies for r in results] == [1, 1, 1] and all(r.replies_without_usage == 0 for r in results)
    assert sum(r.prompt_tokens for r in results) == sum(r.prompt_tokens for r in log) > 0
    assert sum(r.completion_tokens for r in results) == sum(r.completion_tokens for r in log) > 0
    # The client's own running count (what a jury sums per model) agrees with the paragraphs'.
    assert (usage.model, usage.replies, usage.replies_without_usage) == ("mock-judge", 3, 0)
    assert usage.prompt_tokens == sum(r.prompt_tokens for r in results)
    assert usage.to_wire() == {"mock-judge": {"promptTokens": usage.prompt_tokens,
                               "completionTokens": usage.completion_tokens, "replies": 3, "repliesWithoutUsage": 0}}  # fmt: skip


def test_every_reply_counts_unparseable_ones_too(mock):
    (result,), usage = judge_all(mock, "mock-judge+fault=prose", PAYLOADS[:1], parse_retries=2)
    assert result.verdict == "unparseable" and result.attempts == result.replies == 3
    assert result.prompt_tokens == sum(r.prompt_tokens for r in mock.log if r.kind == "judge") > 0
    assert usage.replies == 3


def test_a_reply_without_usage_is_unknown_never_zero(mock):
    (result,), usage = judge_all(mock, "mock-judge+fault=no_usage", PAYLOADS[:1])
    assert result.verdict == "supported"
    assert (result.replies, result.replies_without_usage, result.prompt_tokens) == (1, 1, 0)
    assert (usage.replies, usage.replies_without_usage) == (1, 1)
    record = result.to_record()
    assert record_usage(record) == (0, 0, 1, 1)
    metrics = paragraph_metrics([{**record, "index": 0, "deterministicPass": True}], judged=True, scored=False)
    assert metrics["judge_tokens"] == {
        "mock-judge+fault=no_usage": {"promptTokens": 0, "completionTokens": 0, "replies": 1, "repliesWithoutUsage": 1}
    }


def test_a_cache_hit_sends_nothing_and_costs_nothing(mock, tmp_path):
    cache = JudgeCache(tmp_path / "cache")
    judge_all(mock, "mock-judge", cache=cache)
    results, usage = judge_all(mock, "mock-judge", cache=cache)
    assert all(r.cached and r.replies == 0 and r.prompt_tokens == 0 for r in results)
    assert usage.replies == 0 and not [r for r in mock.log if r.kind == "judge"]


def test_a_judge_that_never_answers_sent_nothing_billed(mock):
    (result,), usage = judge_all(mock, "mock-judge+fault=500", PAYLOADS[:1], max_retries=1, backoff=0)
    assert result.verdict is None and result.replies == 0 and usage.replies == 0


def test_record_usage_of_old_and_extension_records():
    assert record_usage({"judgeModel": "m", "verdict": "supported"}) is None  # written before usage was recorded
    assert record_usage(JudgeResult(verdict="supported", rationale="r", model="x").to_record()) == (0, 0, 1, 1)
    with pytest.raises(ValueError, match="judgePromptTokens must be a whole number >= 0, got -3"):
        record_usage({"judgeReplies": 1, "judgePromptTokens": -3})
    with pytest.raises(ValueError, match="exceeds judgeReplies"):
        record_usage({"judgeReplies": 1, "judgeRepliesWithoutUsage": 2})


def test_judge_tokens_per_model_and_null_for_records_without_usage():
    def record(model, replies=1, prompt=10, completion=2, without=0, **more):
        return {"index": 0, "deterministicPass": True, "judgeModel": model, "verdict": "supported", "rationale": "r",
                "judgeReplies": replies, "judgePromptTokens": prompt, "judgeCompletionTokens": completion,
                "judgeRepliesWithoutUsage": without, **more}  # fmt: skip

    records = [record("b"), record("a", 2, 30, 4), record("b", 1, 5, 1)]
    for i, r in enumerate(records):
        r["index"] = i
    tokens = paragraph_metrics(records, judged=True, scored=False)["judge_tokens"]
    assert list(tokens) == ["a", "b"]
    assert tokens["a"] == {"promptTokens": 30, "completionTokens": 4, "replies": 2, "repliesWithoutUsage": 0}
    assert tokens["b"] == {"promptTokens": 15, "completionTokens": 3, "replies": 2, "repliesWithoutUsage": 0}
    old = [{k: v for k, v in r.items() if not k.startswith("judgeR") and "Tokens" not in k} for r in records]
    assert paragraph_metrics(old, judged=True, scored=False)["judge_tokens"] is None
    # Beside records that carry usage, one that does not is a reply of unknown tokens, never 0.
    mixed = paragraph_metrics([records[0], {**old[1], "index": 1}], judged=True, scored=False)["judge_tokens"]
    assert mixed["a"] == {"promptTokens": 0, "completionTokens": 0, "replies": 1, "repliesWithoutUsage": 1}
    with pytest.raises(ValueError, match="item 'paragraphs'.*judgeCompletionTokens"):
        paragraph_metrics([record("a", completion="many")], judged=True, scored=False)


def test_a_json_reply_labelled_as_text_is_read_with_its_usage():
    # A proxy that sends the completion as text/plain: read as the SDK's create reads it (decoded), tokens counted.
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Proxy(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            said = json.dumps({"verdict": "partial", "rationale": "half of it"})
            body = json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                               "choices": [{"index": 0, "finish_reason": "stop",
                                            "message": {"role": "assistant", "content": said}}],
                               "usage": {"prompt_tokens": 40, "completion_tokens": 9}}).encode()  # fmt: skip
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    async def run():
        async with JudgeClient(f"http://127.0.0.1:{server.server_address[1]}/v1", "m") as judge:
            return await judge.judge(PAYLOADS[0])

    try:
        result = asyncio.run(run())
    finally:
        server.shutdown()
        server.server_close()
    assert (result.verdict, result.rationale) == ("partial", "half of it")
    assert (result.replies, result.prompt_tokens, result.completion_tokens) == (1, 40, 9)
