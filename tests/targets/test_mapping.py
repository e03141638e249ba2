"""Target maps (docs/byo.md, "Mapped targets"): checking a map file, filling its request, reading a response."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_groundeval.mock.sse import DONE_EVENT, ChunkFramer, content_pieces
from pytest_groundeval.targets.mapping import MapError, load_map, parse_map
from pytest_groundeval.targets.protocol import TargetError
from pytest_groundeval.targets.stream import assemble, events

ENV = {"RAG_KEY": "rag-secret-0123456789", "HOST": "rag.example"}

MAP = {
    "request": {
        "method": "POST",
        "url": "https://rag.example/api/ask",
        "headers": {"Authorization": "Bearer ${RAG_KEY}"},
        "body": {"input": {"text": "{question}"}},
    },
    "response": {
        "answer": "output.reply",
        "sources": "output.citations",
        "marker": "to_string(n)",
        "text": "passage",
        "metadata": {"speaker": "meta.author"},
    },
}


def with_(path: str, value: object, base: dict | None = None) -> dict:
    """A deep copy of ``base`` (default ``MAP``) with the key at dotted ``path`` set (``...`` deletes it)."""
    data = json.loads(json.dumps(base or MAP))
    *parents, last = path.split(".")
    node = data
    for key in parents:
        node = node.setdefault(key, {})
    if value is ...:
        del node[last]
    else:
        node[last] = value
    return data


# -- usage errors: the file and the key path ---------------------------------------------------------

BAD_MAPS = [
    (with_("extra", 1), "extra: unknown key; the keys here are request, response, ingest, comment"),
    (with_("request.timeout", 5), "request.timeout: unknown key"),
    (with_("response.answr", "a"), "response.answr: unknown key"),
    (with_("response.usage", {"tokens": "u"}), "response.usage.tokens: unknown key"),
    (with_("response.answer", "output.(reply"), "response.answer: 'output.(reply' is not a valid JMESPath"),
    (with_("response.answer", ""), "response.answer: expected a JMESPath expression"),
    (with_("response.metadata", {"speaker": "meta["}), "response.metadata.speaker: 'meta[' is not a valid JMESPath"),
    (with_("response.marker", "to_str(n)"), "response.marker: 'to_str(n)' calls to_str(), which JMESPath does not have"),
    (with_("response.text", "join(passage)"), "response.text: 'join(passage)' calls join() with 1 argument(s); it takes 2"),
    (with_("request.headers", {"Authorization": "Bearer ${NO_SUCH_KEY}"}),
     "request.headers.Authorization: ${NO_SUCH_KEY} is not set in the environment"),
    (with_("request.url", "https://${EMPTY}/ask"), "request.url: ${EMPTY} is set but empty"),
    (with_("request.body", {"q": "{questoin}"}), "request.body.q: {questoin} is not a field: the fields here are"),
    (with_("request.body", {"q": ["x", "{item}"]}), "request.body.q[1]: {item} is not a field"),
    (with_("response.sources", ...), "response.marker: is read per source: it needs response.sources"),
    (with_("response.answer", ...), "response: missing 'answer'"),
    (with_("request", ...), "request: missing"),
    (with_("request.method", "DELETE"), "request.method: 'DELETE' is not one of GET, POST, PUT, PATCH"),
    (with_("request.method", "GET"), "request.body: a GET request has no body"),
    (with_("request.url", "/api/ask"), "request.url: '/api/ask' is not an http(s) URL with a host"),
    (with_("request.url", "https://u:p@rag.example/"), "request.url: the URL carries credentials"),
    (with_("request.headers", {"Accept-Encoding": "br"}), "request.headers.Accept-Encoding: Accept-Encoding is set by the harness"),
    (with_("request.headers", {"X-Id": 3}), "request.headers.X-Id: a header value must be a string"),
    (with_("ingest", {"url": "https://rag.example/docs", "body": {"q": "{question}"}}), "ingest.body.q: {question} is not a field"),
    ([1, 2], "expected a JSON object with request and response"),
]  # fmt: skip


@pytest.mark.parametrize(("data", "message"), BAD_MAPS, ids=[m.split(":")[0] for _, m in BAD_MAPS])
def test_a_map_that_cannot_be_used_is_refused_naming_the_file_and_the_key(data, message):
    with pytest.raises(MapError) as info:
        parse_map(data, "maps/rag.json", {**ENV, "EMPTY": " "})
    text = str(info.value)
    assert text.startswith("target map maps/rag.json: ")
    assert message in text
    assert ENV["RAG_KEY"] not in text


def test_a_map_file_that_is_not_json_or_missing_is_refused(tmp_path):
    path = tmp_path / "map.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(MapError, match=r"target map .*map\.json: not valid JSON"):
        load_map(path)
    with pytest.raises(MapError, match="cannot be read"):
        load_map(tmp_path / "nothing.json")


def test_env_values_are_secrets_and_never_in_the_repr():
    target_map = parse_map(MAP, "rag.json", ENV)
    assert ENV["RAG_KEY"] in target_map.secrets
    assert "Bearer " + ENV["RAG_KEY"] in target_map.secrets
    assert ENV["RAG_KEY"] not in repr(target_map)
    assert ENV["RAG_KEY"] not in repr(target_map.request.render({"question": "q"}))


def test_literal_credential_headers_are_secrets_too():
    data = with_("request.headers", {"X-Api-Key": "literal-key-0123456789", "Content-Type": "application/json"})
    secrets = parse_map(data, "rag.json", ENV).secrets
    assert "literal-key-0123456789" in secrets and "application/json" not in secrets


# -- filling the request ---------------------------------------------------------------------------------


def test_fields_fill_the_request_by_the_documented_rules():
    data = with_(
        "request",
        {
            "url": "https://${HOST}/ask/{item_id}?q={question}&raw={{question}}",
            "headers": {"X-Run": "run {run_id}", "Authorization": "Bearer ${RAG_KEY}"},
            "body": {
                "text": "{question}",
                "find": "{find}",
                "label": "label: {find}",
                "json": '{"a": 1} {}',
                "ids": ["{item_id}", 3, None, True],
            },
        },
    )
    request = parse_map(data, "rag.json", ENV).request
    sent = request.render({"question": "Vad är 2 + 2?", "find": None, "item_id": "qa/1", "run_id": "r1"})
    assert sent.method == "POST" and sent.call == "POST /ask/qa%2F1"
    # {{question}} is a literal {question}, percent-encoded in a URL.
    assert sent.url == "https://rag.example/ask/qa%2F1?q=Vad%20%C3%A4r%202%20%2B%202%3F&raw=%7Bquestion%7D"
    assert sent.headers == {"X-Run": "run r1", "Authorization": f"Bearer {ENV['RAG_KEY']}"}
    assert sent.body == {
        "text": "Vad är 2 + 2?",
        "find": None,  # exactly one {field}: the value itself
        "label": "label: ",  # null inside text: ""
        "json": '{"a": 1} {}',  # braces around no single word are literal
        "ids": ["qa/1", 3, None, True],
    }


def test_a_whole_string_field_keeps_a_json_value_and_inside_text_becomes_json():
    data = {**MAP, "ingest": {"url": "https://rag.example/docs", "body": {"doc": "{content}", "note": "c={content}"}}}
    ingest = parse_map(data, "rag.json", ENV).ingest
    assert ingest is not None
    sent = ingest.render({"content": [{"a": "Å"}]})
    assert sent.body == {"doc": [{"a": "Å"}], "note": 'c=[{"a": "Å"}]'}


def test_a_field_value_with_a_line_break_is_not_sent_in_a_header():
    data = with_("request.headers", {"X-Question": "{question}"})
    request = parse_map(data, "rag.json", ENV).request
    with pytest.raises(TargetError, match="X-Question"):
        request.render({"question": "two\r\nlines"})


# -- reading a response ----------------------------------------------------------------------------------


def read(document, base=MAP):
    return parse_map(base, "rag.json", ENV).response.read(document)


API_REPLY = {
    "output": {
        "reply": "Anna Berg said so [1]. Lars Holm disagreed [2].",
        "citations": [
            {"n": 1, "passage": "Anna Berg (S): yes.", "meta": {"author": "Anna Berg", "votes": 12}},
            {"n": 2, "passage": "Lars Holm (M): no.", "meta": {}},
        ],
    }
}


def test_the_map_reads_answer_and_sources_per_source():
    response = read(API_REPLY)
    assert response == {
        "answer": API_REPLY["output"]["reply"],
        "evidence": [],
        "claims": [],
        "sources": [
            {"marker": "1", "text": "Anna Berg (S): yes.", "metadata": {"speaker": "Anna Berg"}},
            {"marker": "2", "text": "Lars Holm (M): no.", "metadata": {}},  # a null field is left out
        ],
    }


def test_markers_default_to_positions_and_numbers_become_strings():
    base = with_("response", {"answer": "a", "sources": "s", "metadata": {"votes": "v"}})
    assert read({"a": "x [1]", "s": [{"v": 7}, {"v": 2.5}]}, base)["sources"] == [
        {"marker": "1", "metadata": {"votes": "7"}},
        {"marker": "2", "metadata": {"votes": "2.5"}},
    ]
    base = with_("response.marker", "n", base)
    with pytest.raises(ValueError, match=r"response.marker 'n' for sources\[0\] gave true, not a string or an integer"):
        read({"a": "x", "s": [{"n": True}]}, base)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"output": {}}, "response.answer 'output.reply' gave null, not a string; write `EXPR || ''`"),
        ({"output": {"reply": 3}}, "response.answer 'output.reply' gave 3, not a string"),
        ({"output": {"reply": "a"}}, "response.sources 'output.citations' gave null, not a list; write `EXPR || \\`[]\\``"),
        ({"output": {"reply": "a", "citations": [{"n": 1, "passage": ["x"]}]}},
         "response.text 'passage' for sources[0] gave [\"x\"], not a string"),
        ({"output": {"reply": "a", "citations": [{"n": 1, "passage": "p", "meta": {"author": {"x": 1}}}]}},
         "response.metadata.speaker 'meta.author' for sources[0] gave"),
        ([1, 2], "response.answer 'output.reply' gave null"),
        # A mistyped field under to_string() gives the string 'null', which no answer can cite.
        ({"output": {"reply": "a [1]", "citations": [{"id": 1, "passage": "p"}]}},
         "response.marker 'to_string(n)' for sources[0] gave 'null', which no citation in an answer ([N] or [S#]) "
         "can name"),
        ({"output": {"reply": "a [a1]", "citations": [{"n": "a1", "passage": "p"}]}},
         "response.marker 'to_string(n)' for sources[0] gave 'a1', which no citation in an answer ([N] or [S#]) "
         "can name"),
        ({"output": {"reply": "a [1]", "citations": [{"n": 1, "passage": "p"}, {"n": 1, "passage": "q"}]}},
         "sources[1].marker '1' repeats the marker of sources[0]: an answer's [1] could name either"),
    ],
)  # fmt: skip
def test_a_response_the_map_cannot_read_names_the_expression(document, message):
    with pytest.raises(ValueError) as info:
        read(document)
    assert message in str(info.value)


def test_an_evaluation_error_names_the_expression():
    with pytest.raises(ValueError, match=r"response.answer 'length\(reply\)' could not be evaluated"):
        read({"reply": 5}, with_("response", {"answer": "length(reply)"}))


VERIFIED = with_(
    "response",
    {
        "answer": "reply",
        "evidence": "spans[].{marker: tag, document: doc, start: from, end: to}",
        "claims": "checks[].{text: claim, start: at[0], end: at[1], markers: cites, verdict: status}",
        "usage": {"promptTokens": "tokens.in", "completionTokens": "tokens.out"},
        "traceId": "trace",
    },
)


def test_evidence_and_claims_are_reshaped_into_the_contract_and_checked():
    reply = {
        "reply": "Fibre by 2030. [S1]",
        "spans": [{"tag": "S1", "doc": "d.txt", "from": 0, "to": 9}],
        "checks": [{"claim": "Fibre by 2030. [S1]", "at": [0, 19], "cites": ["S1"], "status": "supported"}],
        "tokens": {"in": 10, "out": None},
        "trace": 42,
    }
    response = read(reply, VERIFIED)
    assert response["evidence"] == [{"marker": "S1", "document": "d.txt", "start": 0, "end": 9}]
    assert response["claims"][0]["verdict"] == "supported"
    assert response["usage"] == {"promptTokens": 10, "completionTokens": None}
    assert response["traceId"] == "42"
    reply["checks"][0]["at"] = [0, 5]
    with pytest.raises(ValueError, match=r"claims\[0\] start/end .* \(in what the target map read: response.claims"):
        read(reply, VERIFIED)
    reply["checks"][0].update(at=[0, 19], status="fine")
    with pytest.raises(ValueError, match=r"claims\[0\]\.verdict.* \(in what the target map read: response.claims"):
        read(reply, VERIFIED)


def test_a_claim_may_cite_a_mapped_source_but_not_an_unknown_marker():
    base = with_("response", {"answer": "a", "sources": "s", "claims": "c"})
    claim = {"text": "x [1]", "start": 0, "end": 5, "markers": ["1"], "verdict": "supported"}
    assert read({"a": "x [1]", "s": [{}], "c": [claim]}, base)["claims"] == [claim]
    with pytest.raises(ValueError, match="which no evidence entry has"):
        read({"a": "x [1]", "s": [], "c": [claim]}, base)


@pytest.mark.parametrize(
    ("response", "kind", "refused"),
    [
        ({"answer": "a", "sources": "s"}, "citation", None),
        ({"answer": "a", "evidence": "e"}, "citation", None),
        ({"answer": "a"}, "citation", "citation items need the target map's response.sources (or response.evidence)"),
        ({"answer": "a", "sources": "s"}, "qa", "qa items need the target map's response.evidence and response.claims"),
        ({"answer": "a", "evidence": "e", "claims": "c"}, "qa", None),
        ({"answer": "a", "sources": "s"}, "adversarial", "adversarial items need the target map's response.claims"),
        ({"answer": "a", "claims": "c"}, "temporal", "temporal items write and query records"),
        ({"answer": "a"}, "some_extension_kind", None),
    ],
)
def test_kinds_the_map_cannot_answer_are_refused_with_the_reason(response, kind, refused):
    reason = parse_map(with_("response", response), "rag.json", ENV).cannot_run(kind)
    assert reason == refused if refused is None else refused in reason


# -- Server-Sent Events ----------------------------------------------------------------------------------


def test_sse_events_follow_the_standard_framing():
    text = ': comment\r\nevent: note\r\ndata: {"a":\r\ndata:  1}\r\n\r\ndata: x\rid: 7\r\rdata: [DONE]\n\ndata: cut'
    assert events(text) == [("note", '{"a":\n 1}'), ("message", "x"), ("message", "[DONE]")]
    assert events("retry: 5\n\n") == []  # an event without data is not dispatched


def test_a_chat_stream_is_assembled_into_a_completion():
    framer = ChunkFramer("chatcmpl-1", 1700000000, "m")
    body = b"".join(
        [framer.role_event(), *(framer.content_event(p) for p in content_pieces("Hej på dig [1].")),
         framer.stop_event(), framer.usage_event({"prompt_tokens": 3, "completion_tokens": 5}), DONE_EVENT]
    )  # fmt: skip
    document = assemble(body.decode())
    assert document["choices"] == [
        {"index": 0, "message": {"role": "assistant", "content": "Hej på dig [1]."}, "finish_reason": "stop"}
    ]
    assert document["object"] == "chat.completion" and document["id"] == "chatcmpl-1"
    assert document["usage"] == {"prompt_tokens": 3, "completion_tokens": 5}
    assert len(document["events"]) == 1 + len(content_pieces("Hej på dig [1].")) + 2


@given(st.text(), st.sampled_from(["\n", "\r\n", "\r"]))
def test_any_streamed_content_assembles_back_whole(content, newline):
    framer = ChunkFramer("c", 1, "m")
    body = b"".join([framer.role_event(), *(framer.content_event(p) for p in content_pieces(content)), DONE_EVENT])
    text = body.decode().replace("\n", newline)
    assert assemble(text)["choices"][0]["message"]["content"] == content


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"a"}}]}\n\n',
         "ended before data: [DONE] (cut short"),
        ('data: {"choices":[{"index":0,"delta":{"content":\n\ndata: [DONE]\n\n', "stream event 1 whose data is not JSON"),
        ('event: error\ndata: overloaded\n\n', "reported an error inside the stream (event 1): overloaded"),
        ('data: {"error": {"message": "rate limited"}}\n\n', "reported an error inside the stream (event 1): rate limited"),
    ],
)  # fmt: skip
def test_a_broken_stream_is_refused_saying_why(text, message):
    with pytest.raises(ValueError) as info:
        assemble(text)
    assert message in str(info.value)


def test_a_stream_of_other_events_is_read_to_its_end_without_done():
    text = 'data: {"delta": "Hej "}\n\ndata: {"delta": "då", "sources": [1]}\n\n'
    document = assemble(text)
    assert document == {"events": [{"delta": "Hej "}, {"delta": "då", "sources": [1]}]}
    base = with_("response", {"answer": "join('', events[].delta)", "sources": "events[-1].sources"})
    assert read(document, base)["answer"] == "Hej då"
