"""``MappedTarget`` over real loopback HTTP (docs/byo.md, "Mapped targets").

On both paths (``generate`` over httpx, ``agenerate`` over aiohttp): the shipped
OpenAI chat maps against the mock provider, streamed and not; and, against the
scripted server of conftest.py, the limits, deadline, ids, masking and errors it
shares with ``--eval-url`` (``HttpTarget``), and a body the map cannot read.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from pytest_groundeval.core.dataset import load_dataset
from pytest_groundeval.core.runner import ItemError, ItemRunner
from pytest_groundeval.mock import ThreadedMockProvider
from pytest_groundeval.targets import TargetError
from pytest_groundeval.targets.mapped import MappedTarget
from pytest_groundeval.targets.mapping import load_map, parse_map
from pytest_groundeval.targets.protocol import call_ids
from tests._support.datasets import TEMPORAL, write_dataset

Reply = sys.modules["groundeval_scripted_server"].Reply  # loaded by conftest.py from servers/scripted.py

DOCS_MAPS = Path(__file__).resolve().parents[2] / "docs" / "maps"
MODES = ("sync", "async")
KEY = "rag-secret-key-0123456789"
QUESTION = "[S1] The Moon is 384.400 km from Earth\nQuestion: How far away is the Moon?"


def run_generate(target: MappedTarget, mode: str, question: str = "q", ids=(None, None)):
    """``target.generate`` (sync, httpx) or ``agenerate`` (async, aiohttp) with the given call ids; closes ``target``."""
    token = call_ids.set(ids)
    try:
        if mode == "sync":
            return target.generate(question, None)

        async def run():
            try:
                return await target.agenerate(question, None)
            finally:
                await target.aclose()

        return asyncio.run(run())
    finally:
        call_ids.reset(token)
        target.close()


# -- the OpenAI chat maps (docs/maps/) against the mock provider ----------------------------------------


@pytest.fixture(scope="module")
def mock():
    with ThreadedMockProvider() as provider:
        yield provider


def chat_target(mock, name: str, tmp_path: Path, model: str = "mock-generate") -> MappedTarget:
    data = json.loads((DOCS_MAPS / name).read_text(encoding="utf-8"))
    data["request"]["url"] = f"{mock.base_url}/chat/completions"
    data["request"]["body"]["model"] = model
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return MappedTarget(load_map(path, {"OPENAI_API_KEY": KEY}), timeout_s=10)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("name", "kind"), [("openai-chat.json", "chat"), ("openai-chat-stream.json", "chat_stream")])
def test_the_chat_maps_read_the_mock_answer_streamed_or_not(mock, tmp_path, mode, name, kind):
    mock.clear_log()
    response = run_generate(chat_target(mock, name, tmp_path), mode, QUESTION)
    assert response["answer"] == "The Moon is 384.400 km from Earth. [S1]"  # the mock's answer (docs/mock.md)
    assert response["traceId"].startswith("chatcmpl-")
    assert response["usage"]["completionTokens"] == 13 and response["usage"]["promptTokens"] > 0
    assert response["evidence"] == [] and response["claims"] == [] and "sources" not in response
    assert [record.kind for record in mock.log] == [kind]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("fault", "said"),
    [("malformed", "whose data is not JSON"), ("cut", "")],
)
def test_a_broken_stream_is_an_error_not_a_partial_answer(mock, tmp_path, mode, fault, said):
    target = chat_target(mock, "openai-chat-stream.json", tmp_path, model=f"mock-generate+fault={fault}")
    with pytest.raises(TargetError) as info:
        run_generate(target, mode, QUESTION)
    message = str(info.value)
    assert "POST /v1/chat/completions" in message and said in message
    assert KEY not in message


# -- what it shares with --eval-url, against the scripted server ------------------------------------------

MAP = {
    "request": {
        "url": "{base}/api/ask?item={item_id}",
        "headers": {"Authorization": "Bearer ${RAG_KEY}", "X-Tenant": "eval"},
        "body": {"input": {"text": "{question}"}},
    },
    "response": {"answer": "output.reply", "sources": "output.citations", "text": "passage"},
}
REPLY = {"output": {"reply": "Yes [1].", "citations": [{"passage": "It is so."}]}}


def scripted_target(scripted, timeout_s: float = 10.0, max_response_bytes: int = 1 << 20, **changes) -> MappedTarget:
    data = json.loads(json.dumps(MAP).replace("{base}", scripted.url))
    data.update(changes)
    return MappedTarget(parse_map(data, "rag.json", {"RAG_KEY": KEY}), timeout_s, max_response_bytes)


@pytest.mark.parametrize("mode", MODES)
def test_the_request_carries_the_map_headers_and_the_run_and_item_ids(scripted, mode):
    scripted.reply = Reply(body=json.dumps(REPLY).encode())
    response = run_generate(scripted_target(scripted), mode, "Är det så?", ids=("run-1", "item/1"))
    assert response["sources"] == [{"marker": "1", "text": "It is so."}]
    ((method, path, headers, body),) = scripted.requests
    assert method == "POST" and path == "/api/ask?item=item%2F1"
    assert json.loads(body) == {"input": {"text": "Är det så?"}}
    headers = {k.lower(): v for k, v in headers.items()}
    assert headers["authorization"] == f"Bearer {KEY}" and headers["x-tenant"] == "eval"
    assert headers["x-groundeval-run-id"] == "run-1" and headers["x-groundeval-item-id"] == "item/1"
    assert headers["accept-encoding"] == "gzip, deflate"


@pytest.mark.parametrize("mode", MODES)
def test_a_body_the_map_cannot_read_is_an_error_naming_the_expression_and_the_body(scripted, mode):
    scripted.reply = Reply(body=b'{"output": {"text": "an answer under another key"}}')
    with pytest.raises(TargetError) as info:
        run_generate(scripted_target(scripted), mode)
    message = str(info.value)
    assert message.startswith(f"POST /api/ask {scripted.url}/api/ask?item= returned a malformed response: ")
    assert "the target map's response.answer 'output.reply' gave null, not a string" in message
    assert '(HTTP 200); body: \'{"output": {"text": "an answer under another key"}}\'' in message
    assert info.value.status == 200 and info.value.call == "POST /api/ask"


@pytest.mark.parametrize("mode", MODES)
def test_a_non_json_body_is_named_as_such(scripted, mode):
    scripted.reply = Reply(body=b"<html>502 Bad Gateway</html>", headers=[("Content-Type", "text/html")])
    with pytest.raises(TargetError, match=r"returned a body that is not valid JSON .*body: '<html>502 Bad Gateway"):
        run_generate(scripted_target(scripted), mode)


@pytest.mark.parametrize("mode", MODES)
def test_the_secret_is_masked_in_an_error_that_echoes_it(scripted, mode):
    scripted.reply = Reply(status=500, body=f'{{"error": "bad header Authorization: Bearer {KEY}"}}'.encode())
    with pytest.raises(TargetError) as info:
        run_generate(scripted_target(scripted), mode)
    assert KEY not in str(info.value) and KEY[:12] not in info.value.body_excerpt
    assert "returned an error status (HTTP 500)" in str(info.value) and "Authorization: ***" in str(info.value)


@pytest.mark.parametrize("mode", MODES)
def test_the_response_size_limit_holds(scripted, mode):
    scripted.reply = Reply(body=json.dumps({"output": {"reply": "x" * 5000, "citations": []}}).encode())
    with pytest.raises(TargetError, match=r"declares a body of .* over the limit of 4 KiB .*--eval-max-response-bytes"):
        run_generate(scripted_target(scripted, max_response_bytes=4096), mode)


@pytest.mark.parametrize("mode", MODES)
def test_the_deadline_holds_for_a_trickled_stream(scripted, mode):
    # An SSE body that never ends: one comment line every 0.1 s; the call ends by its 0.5 s deadline.
    scripted.reply = Reply(
        headers=[("Content-Type", "text/event-stream")], chunks=lambda: iter(lambda: b": ping\n", None), pause_s=0.1
    )
    with pytest.raises(TargetError, match=r"the response did not complete within 0.5 s, the per-call timeout"):
        run_generate(scripted_target(scripted, timeout_s=0.5), mode)


@pytest.mark.parametrize("mode", MODES)
def test_redirects_are_not_followed(scripted, mode):
    scripted.reply = Reply(status=307, headers=[("Location", "https://elsewhere.example/ask")])
    with pytest.raises(TargetError, match="returned a redirect to 'https://elsewhere.example/ask'"):
        run_generate(scripted_target(scripted), mode)
    assert len(scripted.requests) == 1


def test_ingest_sends_the_corpus_only_with_an_ingest_template(scripted):
    document = {"name": "eval/a.json", "label": "NOTE", "format": "json", "contentHash": "h1", "content": [{"a": 1}]}
    with scripted_target(scripted) as target:
        assert target.ingest(document) == {"documentId": "eval/a.json", "txStart": 0}
    assert scripted.requests == []
    template = {"url": f"{scripted.url}/docs/{{name}}", "body": {"doc": "{content}", "hash": "{content_hash}"}}
    with scripted_target(scripted, ingest=template) as target:
        scripted.reply = Reply(status=204, headers=[])
        target.ingest(document)
        ((method, path, _, body),) = scripted.requests
        assert (method, path, json.loads(body)) == ("POST", "/docs/eval%2Fa.json", {"doc": [{"a": 1}], "hash": "h1"})
        scripted.reply = Reply(status=400, body=b'{"error": "no"}')
        with pytest.raises(TargetError, match=r"POST /docs/eval%2Fa.json .* returned an error status \(HTTP 400\)"):
            target.ingest(document)


def test_a_kind_the_map_cannot_answer_is_an_item_error_before_any_call(scripted, tmp_path):
    dataset = load_dataset(write_dataset(tmp_path / "ds", [TEMPORAL]))
    with scripted_target(scripted) as target:
        with pytest.raises(ItemError) as info:
            ItemRunner(target).run(dataset.items[0], dataset)
        assert "temporal items write and query records" in info.value.outcome.error
        assert info.value.cause is None  # not counted toward the "target is broken" stop
        assert scripted.requests == []
        with pytest.raises(TargetError, match="describes no records call"):
            target.records({})
