"""Fuzzing target responses (issue 12): nothing but a ``TargetError`` naming the call reaches the caller.

Over real loopback HTTP (the scripted server of conftest.py), Hypothesis varies
the status, the Content-Encoding (honest, lying, unknown, stacked), the
Content-Type charset, the Content-Length (honest, absent, too small, too large),
chunked or not, and the body (random bytes, JSON of any shape, mutations of a
valid generate response, deep nesting), for both ``HttpTarget.generate`` (httpx)
and ``agenerate`` (aiohttp). In process, ``check_response`` gets any JSON-like
value. Bounded: 100 and 300 examples, a few seconds in all.
"""

from __future__ import annotations

import gzip
import json
import sys
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_groundeval.targets import HttpTarget, TargetError, check_response

Reply = sys.modules["groundeval_scripted_server"].Reply  # loaded by conftest.py from servers/scripted.py

GOOD = {
    "answer": "Alpha ships in May [S1].",
    "traceId": "t-1",
    "evidence": [{"marker": "S1", "document": "eval/a.json", "start": 0, "end": 10}],
    "claims": [{"text": "Alpha ships in May", "start": 0, "end": 18, "markers": ["S1"], "verdict": "supported"}],
}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@st.composite
def generate_bodies(draw) -> object:
    """A valid generate response with one field replaced, dropped or added, or any JSON value."""
    choice = draw(st.integers(0, 3))
    if choice == 0:
        return draw(json_values)
    body = json.loads(json.dumps(GOOD))
    if choice == 1:
        body[draw(st.sampled_from(["answer", "evidence", "claims", "traceId", "usage", "extra"]))] = draw(json_values)
    elif choice == 2:
        body["claims"][0][draw(st.sampled_from(["text", "start", "end", "markers", "verdict"]))] = draw(json_values)
    else:
        body["evidence"][0].pop(draw(st.sampled_from(["marker", "document", "start", "end"])))
    return body


def _encode(coding: str, data: bytes) -> bytes:
    if coding in ("gzip", "x-gzip"):
        return gzip.compress(data)
    if coding == "deflate":
        return zlib.compress(data)
    return data


@st.composite
def replies(draw) -> Reply:
    kind = draw(st.sampled_from(["json", "bytes", "deep", "text"]))
    if kind == "json":
        data = json.dumps(draw(generate_bodies()), ensure_ascii=draw(st.booleans())).encode()
    elif kind == "bytes":
        data = draw(st.binary(max_size=300))
    elif kind == "deep":
        depth = draw(st.integers(100, 3000))
        data = b'{"answer": ' + b"[" * depth + b"]" * draw(st.sampled_from([0, depth])) + b"}"
    else:
        data = draw(st.text(max_size=50)).encode("utf-8", "surrogatepass")
    claimed = draw(st.sampled_from([None, "gzip", "deflate", "x-gzip", "identity", "br", "gzip, deflate", "bogus"]))
    honest = draw(st.booleans())
    applied = claimed if honest and claimed else draw(st.sampled_from([None, "gzip", "deflate"]))
    for coding in reversed([c.strip() for c in (applied or "").split(",") if c.strip()]):
        data = _encode(coding, data)
    headers = [
        (
            "Content-Type",
            "application/json"
            + draw(st.sampled_from(["", "; charset=utf-8", "; charset=latin-1", "; charset=utf-16", "; charset=nope"])),
        )
    ]
    if claimed:
        headers.append(("Content-Encoding", claimed))
    framing = draw(st.sampled_from(["honest", "none", "short", "long", "chunked"]))
    status = draw(st.sampled_from([200, 200, 200, 201, 299, 301, 307, 400, 401, 404, 422, 500, 503]))
    if framing == "chunked":
        return Reply(status=status, headers=headers, chunks=[data[:7], data[7:]])
    length = {"honest": None, "none": "none", "short": str(max(0, len(data) - 3)), "long": str(len(data) + 50)}[framing]
    return Reply(status=status, headers=headers, body=data, length=length)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(reply=replies(), mode=st.sampled_from(["sync", "async"]))
def test_fuzzed_http_responses_raise_only_target_errors(scripted_server, call_target, reply, mode) -> None:
    scripted_server.reset()
    scripted_server.reply = reply
    target = HttpTarget(scripted_server.url, "k", timeout_s=3.0, max_response_bytes=64 * 1024)
    try:
        body = call_target(target, mode)
    except TargetError as exc:
        assert "POST /v1/generate" in str(exc)
        assert f"{scripted_server.url}/v1/generate" in str(exc)
        assert exc.call == "POST /v1/generate"
    else:
        assert 200 <= reply.status < 300
        assert check_response("generate", body) is body
    finally:
        target.close()


@settings(max_examples=300, deadline=None)
@given(
    body=generate_bodies() | json_values,
    call=st.sampled_from(["generate", "ingest", "records", "query", "compare", "info"]),
)
def test_check_response_raises_only_target_errors_on_any_json_value(body, call) -> None:
    try:
        assert check_response(call, body) is body
    except TargetError as exc:
        assert str(exc).startswith(f"{call} returned a malformed response: ")


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def _cycle() -> dict:
    body = json.loads(json.dumps(GOOD))
    body["extra"] = [body]
    return body


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (dict(GOOD, extra=_nested(5000)), "nested deeper than 128 levels"),
        (_cycle(), "field 'extra[0]' contains itself"),
        (dict(GOOD, answer="\udcff"), "field 'answer' holds a lone surrogate (U+DCFF) at character 0"),
        (dict(GOOD, answer=10**5000), "must be a string, got an integer of 16610 bits"),
        ({"records": [{"x\ud800": 1}]}, "a key of field 'records[0]' holds a lone surrogate"),
    ],
)
def test_in_process_responses_that_cannot_be_json_are_target_errors(body, expected) -> None:
    call = "query" if "records" in body else "generate"
    with pytest.raises(TargetError, match="malformed response") as info:
        check_response(call, body)
    assert expected in str(info.value)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=generate_bodies() | json_values,
    call=st.sampled_from(["generate", "ingest", "records", "query", "compare", "info"]),
    indent=st.sampled_from([None, 0, 2]),
)
def test_guided_decoding_accepts_exactly_what_json_loads_accepts(monkeypatch, body, call, indent) -> None:
    # Large responses are decoded field by field (targets/decode.py); forcing that path on
    # every response must accept the same responses, with the same value.
    from pytest_groundeval.targets import decode

    text = json.dumps(body, indent=indent)
    outcomes = []
    for few in (decode.FEW_VALUES, -1):
        monkeypatch.setattr(decode, "FEW_VALUES", few)
        try:
            outcomes.append(("ok", decode.decode_response(call, text)))
        except (ValueError, RecursionError) as exc:
            outcomes.append(("refused", isinstance(exc, decode.NotAnObject)))
    assert outcomes[0] == outcomes[1]
