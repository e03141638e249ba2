"""Fault injection as clients observe it (docs/mock.md): delay, 429, 500, cut, malformed, x<N>."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import openai
import pytest
from openai import OpenAI

from pytest_groundeval.core import contract
from pytest_groundeval.mock import FaultSpecError, ThreadedMockProvider, parse_fault_spec

MESSAGES = [{"role": "user", "content": "ECHO: " + " ".join(f"Word{i} is here." for i in range(12))}]


@pytest.fixture
def mock():
    """A fresh mock per test: the x<N> fault counters are per server instance."""
    with ThreadedMockProvider() as provider:
        yield provider


def fault(spec: str) -> dict[str, str]:
    return {contract.FAULT_HEADER: spec}


def sdk(mock, retries: int = 0) -> OpenAI:
    return OpenAI(base_url=mock.base_url, api_key="x", max_retries=retries)


def chat_body(**extra) -> dict:
    return {"model": "mock-generate", "messages": MESSAGES, **extra}


def test_delay_is_recorded_in_server_latency(mock):
    sdk(mock).chat.completions.create(model="mock-generate", messages=MESSAGES, extra_headers=fault("delay:120"))
    (record,) = mock.log
    assert record.fault == "delay:120" and record.status == 200
    assert record.latency_ms >= 120


@pytest.mark.parametrize("how", ["header", "model suffix"])
def test_429_carries_retry_after(mock, how):
    headers = fault("429:3") if how == "header" else {}
    model = "mock-generate" + ("" if how == "header" else contract.FAULT_MODEL_SEPARATOR + "429:3")
    with pytest.raises(openai.RateLimitError) as caught:
        sdk(mock).chat.completions.create(model=model, messages=MESSAGES, extra_headers=headers)
    assert caught.value.response.headers["Retry-After"] == "3"
    assert caught.value.body["type"] == "rate_limit_error"
    (record,) = mock.log
    assert (record.status, record.fault, record.model) == (429, "429:3", "mock-generate")


def test_500_on_chat_embeddings_and_score(mock):
    with pytest.raises(openai.InternalServerError):
        sdk(mock).chat.completions.create(model="mock-generate", messages=MESSAGES, extra_headers=fault("500"))
    with pytest.raises(openai.InternalServerError):
        sdk(mock).embeddings.create(model="mock-embed+fault=500", input="x")
    score = httpx.post(
        mock.base_url + "/score", json={"model": "s", "text_1": "a", "text_2": "a"}, headers=fault("500")
    )
    assert score.status_code == 500 and score.json()["error"]["type"] == "server_error"
    assert [(r.kind, r.status) for r in mock.log] == [("chat", 500), ("embeddings", 500), ("score", 500)]


def test_429x2_fails_twice_then_succeeds_for_a_retrying_client(mock):
    completion = sdk(mock, retries=2).chat.completions.create(
        model="mock-generate", messages=MESSAGES, extra_headers=fault("429:0.01x2")
    )
    assert completion.choices[0].message.content.startswith("Word0 is here.")
    assert [r.status for r in mock.log] == [429, 429, 200]
    # Another spec has its own counter; a client without retries sees the fault.
    with pytest.raises(openai.RateLimitError):
        sdk(mock).chat.completions.create(model="mock-generate", messages=MESSAGES, extra_headers=fault("429x1"))
    mock.reset_faults()
    with pytest.raises(openai.RateLimitError):
        sdk(mock).chat.completions.create(model="mock-generate", messages=MESSAGES, extra_headers=fault("429:0.01x2"))


def test_cut_stream_ends_without_done(mock):
    received = b""
    with pytest.raises(httpx.RemoteProtocolError):
        with httpx.stream(
            "POST", mock.base_url + "/chat/completions", json=chat_body(stream=True), headers=fault("cut")
        ) as r:
            for part in r.iter_bytes():
                received += part
    assert b"[DONE]" not in received
    events = received.split(b"\n\n")
    assert len(events) > 3  # some content arrived before the cut
    assert events[-1].startswith(b"data: {") and not events[-1].endswith(b"}")  # cut mid-event
    with pytest.raises(openai.APIConnectionError):
        list(
            sdk(mock).chat.completions.create(
                model="mock-generate", messages=MESSAGES, stream=True, extra_headers=fault("cut")
            )
        )


def test_cut_non_streamed_body(mock):
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.post(mock.base_url + "/embeddings", json={"model": "e", "input": "a b c"}, headers=fault("cut"))
    with pytest.raises(openai.APIConnectionError):
        sdk(mock).chat.completions.create(model="mock-generate", messages=MESSAGES, extra_headers=fault("cut"))
    assert [r.fault for r in mock.log] == ["cut", "cut"]


def test_malformed_stream_has_one_invalid_event_then_done(mock):
    raw = httpx.post(
        mock.base_url + "/chat/completions", json=chat_body(stream=True), headers=fault("malformed")
    ).content
    events = [e for e in raw.split(b"\n\n") if e]
    assert events[-1] == b"data: [DONE]"
    invalid = []
    for event in events[:-1]:
        try:
            json.loads(event.removeprefix(b"data: "))
        except ValueError:
            invalid.append(event)
    assert len(invalid) == 1
    with pytest.raises(json.JSONDecodeError):
        list(
            sdk(mock).chat.completions.create(
                model="mock-generate", messages=MESSAGES, stream=True, extra_headers=fault("malformed")
            )
        )


def test_malformed_non_streamed_body_is_200_invalid_json(mock):
    response = httpx.post(
        mock.base_url + "/score", json={"model": "s", "text_1": "a", "text_2": "a"}, headers=fault("malformed")
    )
    assert response.status_code == 200
    with pytest.raises(json.JSONDecodeError):
        json.loads(response.content)


def test_unknown_fault_token_is_a_400_naming_it(mock):
    response = httpx.post(mock.base_url + "/chat/completions", json=chat_body(), headers=fault("delay:5,explode"))
    assert response.status_code == 400
    assert "'explode'" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("delay:50, 429x2", dict(delay_ms=50.0, status=429, fail_count=2)),
        ("429:0.5", dict(status=429, retry_after_s=0.5, fail_count=None)),
        ("500x1,cut", dict(status=500, fail_count=1, cut=True)),
        ("malformed", dict(malformed=True, status=None)),
    ],
)
def test_parse_fault_spec(spec, expected):
    plan = parse_fault_spec(spec)
    assert {k: getattr(plan, k) for k in expected} == expected


@pytest.mark.parametrize("spec", ["404", "500:3", "429,500", "delay:-1", "cutx2"])
def test_parse_fault_spec_rejects(spec):
    with pytest.raises(FaultSpecError, match="fault spec"):
        parse_fault_spec(spec)


# Run in a child interpreter: "Task was destroyed but it is pending!" goes to the
# asyncio logger when the loop's tasks are collected, which pytest's log capture
# would swallow; the child's stderr shows exactly what a user would see.
STOP_WITH_DELAY_IN_FLIGHT = """
import gc, json, sys, threading, time, warnings
import httpx
from pytest_groundeval.core import contract
from pytest_groundeval.mock import ThreadedMockProvider

client_timeout = float(sys.argv[1])
mock = ThreadedMockProvider(shutdown_timeout=0.2)
mock.start()
outcome = []

def send():
    try:
        httpx.post(mock.base_url + "/chat/completions", timeout=client_timeout,
                   json={"messages": [{"role": "user", "content": "hi"}]},
                   headers={contract.FAULT_HEADER: "delay:5000"})
        outcome.append("answered")
    except httpx.HTTPError as exc:
        outcome.append(type(exc).__name__)

client = threading.Thread(target=send)
client.start()
while mock.task_count() < 2:  # the connection's task and the delayed handler's
    time.sleep(0.01)
if client_timeout < 1:
    client.join()  # the client gives up first: its handler outlives it
mock.stop()
client.join()
gc.collect()
print(json.dumps({"client": outcome, "statuses": [r.status for r in mock.log]}))
"""


@pytest.mark.parametrize(
    ("client_timeout", "client_sees"),
    [(0.3, "ReadTimeout"), (10.0, "RemoteProtocolError")],
    ids=["client-gave-up", "client-waiting"],
)
def test_stop_with_a_delayed_request_in_flight_leaves_nothing_pending(client_timeout, client_sees):
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", STOP_WITH_DELAY_IN_FLIGHT, str(client_timeout)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no "Task was destroyed but it is pending!", no warning
    assert json.loads(done.stdout) == {"client": [client_sees], "statuses": [499]}
