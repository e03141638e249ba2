"""The mock provider through the official openai SDK and raw HTTP (docs/mock.md)."""

from __future__ import annotations

import asyncio
import json
import math

import httpx
import pytest
from openai import AsyncOpenAI, OpenAI

from pytest_groundeval.core import contract
from pytest_groundeval.mock import MockProvider, ThreadedMockProvider, count_tokens, decompose, embed_text
from pytest_groundeval.mock.sse import dumps

EVIDENCE_PROMPT = (
    "Answer from the evidence only.\n"
    "[S1] The Moon is 384.400 km from Earth\n"
    "[S2] Stockholm har 3,5 miljoner invånare. Staden ligger vid Mälaren.\n"
    "[S3] This third block is never echoed.\n"
)
MESSAGES = [
    {"role": "system", "content": EVIDENCE_PROMPT},
    {"role": "user", "content": "Question: How far is the Moon?"},
]
EXPECTED_ANSWER = (
    "The Moon is 384.400 km from Earth. [S1] Stockholm har 3,5 miljoner invånare. [S2] Staden ligger vid Mälaren. [S2]"
)


@pytest.fixture(scope="module")
def mock():
    """One threaded mock per module: the same server sync fixtures use."""
    with ThreadedMockProvider() as provider:
        yield provider


@pytest.fixture
def client(mock):
    with OpenAI(base_url=mock.base_url, api_key="x", max_retries=0) as sdk:
        yield sdk


def test_urls_point_at_the_bound_port(mock):
    assert mock.base_url == mock.root_url + "/v1"
    assert mock.root_url.startswith("http://127.0.0.1:")
    assert not mock.root_url.endswith(":0")


def test_sdk_non_streaming_generation_echoes_two_blocks_cited(mock, client):
    completion = client.chat.completions.create(model="mock-generate", messages=MESSAGES)
    assert completion.choices[0].message.content == EXPECTED_ANSWER
    assert completion.choices[0].finish_reason == "stop"
    assert completion.model == "mock-generate"
    assert completion.usage.completion_tokens > 0
    assert completion.usage.total_tokens == completion.usage.prompt_tokens + completion.usage.completion_tokens


def test_generated_answer_decomposes_with_each_marker_on_its_sentence(client):
    answer = client.chat.completions.create(model="mock-generate", messages=MESSAGES).choices[0].message.content
    claims = decompose(answer)
    assert [c["markers"] for c in claims] == [["S1"], ["S2"], ["S2"]]
    assert claims[0]["text"] == "The Moon is 384.400 km from Earth. [S1]"


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("ECHO: The Moon is made of cheese.", "The Moon is made of cheese."),
        ("Question: ECHO-CITED: The Moon is made of cheese.", "The Moon is made of cheese. [S1]"),
        ("What is the capital?", None),
    ],
)
def test_echo_questions_and_no_evidence(client, question, expected):
    messages = [{"role": "user", "content": question}]
    content = client.chat.completions.create(model="mock-generate", messages=messages).choices[0].message.content
    assert content == (expected or "I could not find evidence to answer.")


def test_sdk_decomposition_by_schema_name(client):
    draft = "Priset är 3.5 kronor. [S1] 東京は首都です。大阪は都市です[S2]。"
    completion = client.chat.completions.create(
        model="mock-decompose",
        messages=[{"role": "system", "content": "Split it."}, {"role": "user", "content": draft}],
        response_format={
            "type": "json_schema",
            "json_schema": {"name": contract.DECOMPOSITION_SCHEMA_NAME, "schema": {"type": "object"}},
        },
    )
    claims = json.loads(completion.choices[0].message.content)["claims"]
    raw = draft.encode()
    assert [raw[c["start"] : c["end"]].decode() for c in claims] == [c["text"] for c in claims]
    assert [c["text"] for c in claims] == ["Priset är 3.5 kronor. [S1]", "東京は首都です。", "大阪は都市です[S2]。"]
    assert [c["markers"] for c in claims] == [["S1"], [], ["S2"]]


def test_sdk_streaming_without_usage(client):
    stream = client.chat.completions.create(model="mock-generate", messages=MESSAGES, stream=True)
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert all(c.usage is None for c in chunks)
    content = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert content == EXPECTED_ANSWER
    assert sum(1 for c in chunks if c.choices[0].delta.content) > 5


def test_sdk_streaming_with_usage_ends_with_empty_choices(client):
    stream = client.chat.completions.create(
        model="mock-generate", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0
    assert all(c.choices for c in chunks[:-1])
    assert "".join(c.choices[0].delta.content or "" for c in chunks[:-1]) == EXPECTED_ANSWER


def test_async_sdk_streaming_and_non_streaming():
    async def run():
        async with MockProvider() as mock:
            client = AsyncOpenAI(base_url=mock.base_url, api_key="x", max_retries=0)
            whole = await client.chat.completions.create(model="mock-generate", messages=MESSAGES)
            stream = await client.chat.completions.create(
                model="mock-generate", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
            )
            pieces = [c.choices[0].delta.content or "" async for c in stream if c.choices]
            await client.close()
            return whole, "".join(pieces), mock.log

    whole, streamed, log = asyncio.run(run())
    assert whole.choices[0].message.content == streamed == EXPECTED_ANSWER
    assert [r.kind for r in log] == ["chat", "chat_stream"]
    assert log[0].completion_tokens == log[1].completion_tokens == whole.usage.completion_tokens


def test_embeddings_base64_default_equals_float(client):
    texts = ["Hej på dig, Åsa!", "東京 Tokyo", "..."]
    default = client.embeddings.create(model="mock-embed", input=texts)
    floats = client.embeddings.create(model="mock-embed", input=texts, encoding_format="float")
    for a, b, text in zip(default.data, floats.data, texts):
        assert len(a.embedding) == len(b.embedding) == 32
        assert a.embedding == b.embedding == embed_text(text)
    assert math.isclose(sum(v * v for v in default.data[0].embedding), 1.0, rel_tol=1e-6)
    assert default.data[2].embedding == [0.0] * 32
    assert default.usage.prompt_tokens == default.usage.total_tokens > 0


def test_embeddings_are_case_folded_bags_of_words():
    assert embed_text("Moon cheese") == embed_text("cheese, MOON!")
    assert embed_text("Moon cheese") != embed_text("moon chalk")


def test_embeddings_reject_token_arrays(mock):
    response = httpx.post(mock.base_url + "/embeddings", json={"model": "e", "input": [[1, 2, 3]]})
    assert response.status_code == 400
    assert "'input'" in response.json()["error"]["message"]


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/chat/completions"])
def test_same_request_twice_is_byte_identical(mock, path):
    body = {"model": "mock-generate", "messages": MESSAGES}
    first = httpx.post(mock.root_url + path, json=body)
    second = httpx.post(mock.root_url + path, json=body)
    assert first.status_code == 200
    assert first.content == second.content
    streamed = [httpx.post(mock.root_url + path, json={**body, "stream": True}).content for _ in range(2)]
    assert streamed[0] == streamed[1]
    other = httpx.post(mock.root_url + path, json={**body, "model": "other"})
    assert json.loads(other.content)["id"] != json.loads(first.content)["id"]


def test_score_in_vllm_shape(mock):
    response = httpx.post(
        mock.root_url + "/score",
        json={"model": "mock-score", "text_1": "moon far away", "text_2": ["the moon is far away", "cheese", "moon"]},
    )
    body = response.json()
    assert body["object"] == "list" and body["model"] == "mock-score"
    assert [d["index"] for d in body["data"]] == [0, 1, 2]
    assert [d["score"] for d in body["data"]] == [4.0, -4.0, pytest.approx(8 / 3 - 4)]
    assert body["usage"]["prompt_tokens"] > 0
    pairwise = httpx.post(mock.base_url + "/score", json={"model": "s", "text_1": ["a", "b"], "text_2": ["a", "c"]})
    assert [d["score"] for d in pairwise.json()["data"]] == [4.0, -4.0]
    bad = httpx.post(mock.base_url + "/score", json={"model": "s", "text_1": ["a", "b"], "text_2": ["a", "b", "c"]})
    assert bad.status_code == 400 and "text_1" in bad.json()["error"]["message"]


def test_models_listing(client):
    assert "mock-generate" in {m.id for m in client.models.list()}


def test_bad_requests_get_openai_style_400(mock):
    not_json = httpx.post(mock.base_url + "/chat/completions", content=b"{not json")
    assert not_json.status_code == 400 and "not valid JSON" in not_json.json()["error"]["message"]
    no_messages = httpx.post(mock.base_url + "/chat/completions", json={"model": "m"})
    assert no_messages.status_code == 400 and no_messages.json()["error"]["param"] == "messages"


def test_request_log_records_model_kind_tokens(mock, client):
    mock.clear_log()
    client.chat.completions.create(model="mock-generate", messages=MESSAGES)
    client.embeddings.create(model="mock-embed", input="one two three")
    client.chat.completions.create(
        model="mock-decompose",
        messages=[{"role": "system", "content": contract.DECOMPOSITION_PROMPT}, {"role": "user", "content": "A b."}],
    )
    log = mock.log
    assert [(r.kind, r.model, r.status, r.fault) for r in log] == [
        ("chat", "mock-generate", 200, None),
        ("embeddings", "mock-embed", 200, None),
        ("decompose", "mock-decompose", 200, None),
    ]
    assert log[1].prompt_tokens == 3 and log[1].completion_tokens == 0
    assert all(r.latency_ms >= 0 for r in log)
    assert mock.tokens_total() == sum(r.prompt_tokens + r.completion_tokens for r in log)
    assert mock.tokens_total("embeddings") == 3


def test_log_keeps_the_last_n_and_counts_every_request_and_token():
    inputs = [f"word{i} " * (i + 1) for i in range(5)]  # 1..5 tokens, so each request is told apart by its tokens
    with ThreadedMockProvider(log_limit=3) as small:
        for i, text in enumerate(inputs):
            response = httpx.post(small.base_url + "/embeddings", json={"model": f"m{i}", "input": text})
            assert response.status_code == 200
        assert [(r.model, r.prompt_tokens) for r in small.log] == [("m2", 3), ("m3", 4), ("m4", 5)]
        assert small.requests_total == 5
        # Exact over all five, not just the three the log still holds.
        assert small.tokens_total() == small.tokens_total("embeddings") == sum(map(count_tokens, inputs)) == 15
        assert small.tokens_total("chat") == 0
        small.clear_log()
        assert (small.log, small.requests_total, small.tokens_total()) == ([], 0, 0)
    with ThreadedMockProvider(log_limit=0) as none:
        httpx.post(none.base_url + "/embeddings", json={"input": "a b"})
        assert (none.log, none.requests_total, none.tokens_total()) == ([], 1, 2)


def test_log_limit_is_checked_and_defaults_to_a_bound():
    from pytest_groundeval.mock import DEFAULT_LOG_LIMIT

    assert MockProvider().log_limit == DEFAULT_LOG_LIMIT  # groundeval mock's default: tests/cli/test_mock.py
    assert MockProvider(log_limit=None).log_limit is None  # unbounded only when asked for
    for bad in (-1, 2.5, True):
        with pytest.raises(ValueError, match="log_limit must be a non-negative int or None"):
            MockProvider(log_limit=bad)


@pytest.mark.parametrize(
    ("model", "question"),
    [
        ("mock-generate", 'ECHO: She said "hej"\\ – line\u2028separator and\ttab.'),
        ('model "quoted" \u00e5\u2029 100%', "ECHO-CITED: 東京は日本の首都です。"),
    ],
)
def test_json_bodies_are_the_compact_json_of_their_objects(mock, model, question):
    # The bodies are formatted into prebuilt templates; they must be exactly what
    # serialising the object would give, escapes included.
    messages = [{"role": "user", "content": f"Question: {question}"}]
    raw = httpx.post(mock.base_url + "/chat/completions", json={"model": model, "messages": messages}).content
    completion = json.loads(raw)
    assert raw == dumps(completion).encode()
    assert "\u2028" not in raw.decode() and "\u2029" not in raw.decode()
    assert completion["model"] == model
    expected = question.split(":", 1)[1].strip() + (" [S1]" if question.startswith("ECHO-CITED:") else "")
    assert completion["choices"][0]["message"]["content"] == expected
    usage = completion["usage"]
    assert usage["prompt_tokens"] == count_tokens(f"Question: {question}")
    assert usage["completion_tokens"] == count_tokens(expected)
    for encoding in ("float", "base64"):
        body = {"model": model, "input": [question, "två"], "encoding_format": encoding}
        raw = httpx.post(mock.base_url + "/embeddings", json=body).content
        assert raw == dumps(json.loads(raw)).encode()


def test_lone_surrogate_in_a_request_is_a_400_not_a_crash():
    import httpx

    from pytest_groundeval.mock import ThreadedMockProvider

    body = b'{"model": "m", "messages": [{"role": "user", "content": "ECHO: broken \\ud800 text"}]}'
    with ThreadedMockProvider() as mock:
        response = httpx.post(
            f"{mock.base_url}/chat/completions", content=body, headers={"content-type": "application/json"}
        )
        assert response.status_code == 400
        assert "surrogate" in response.json()["error"]["message"]
        # An escaped pair (an emoji) is one character and fine.
        ok = httpx.post(
            f"{mock.base_url}/chat/completions",
            content=b'{"model": "m", "messages": [{"role": "user", "content": "ECHO: \\ud83d\\ude00"}]}',
            headers={"content-type": "application/json"},
        )
        assert ok.status_code == 200 and ok.json()["choices"][0]["message"]["content"] == "\U0001f600"
