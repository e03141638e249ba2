"""Raw SSE framing of streamed completions, and clients that hang up mid-stream (docs/mock.md)."""

from __future__ import annotations

import asyncio
import json
import logging

import aiohttp
import httpx
import pytest

from pytest_groundeval.mock import MockProvider, ThreadedMockProvider
from pytest_groundeval.mock.sse import content_pieces
from tests._support.waiting import wait_for

TRICKY = 'ECHO: Line one\nline two\u2028sep\u2029para "quoted" 東京は日本の首都です。Åsa bor i Växjö.'


@pytest.fixture(scope="module")
def mock():
    with ThreadedMockProvider() as provider:
        yield provider


def raw_stream(mock, include_usage: bool) -> bytes:
    body = {"model": "mock-generate", "stream": True, "messages": [{"role": "user", "content": TRICKY}]}
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    received = b""
    with httpx.stream("POST", mock.base_url + "/chat/completions", json=body) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        for part in response.iter_raw():
            received += part
    return received


@pytest.mark.parametrize("include_usage", [False, True])
def test_every_event_is_one_json_data_line(mock, include_usage):
    received = raw_stream(mock, include_usage)
    assert received.endswith(b"\n\n")
    events = received.split(b"\n\n")[:-1]
    assert events[-1] == b"data: [DONE]"
    chunks = []
    for event in events[:-1]:
        text = event.decode("utf-8")  # strict: an event never splits a UTF-8 character
        assert text.startswith("data: ") and "\n" not in text and "\r" not in text
        assert "\u2028" not in text and "\u2029" not in text
        chunks.append(json.loads(text.removeprefix("data: ")))
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    content = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert content == TRICKY.removeprefix("ECHO: ")
    stop = [c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"] == "stop"]
    assert len(stop) == 1
    if include_usage:
        assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] > 0
        assert chunks[-2] is stop[0]
    else:
        assert chunks[-1] is stop[0]
        assert all("usage" not in c for c in chunks)
    assert b"\\u2028" in received and b"\\n" in received


def test_content_pieces_rejoin_and_stay_short():
    text = "東京は日本の首都です。 a  bb\n" + "x" * 20
    pieces = content_pieces(text)
    assert "".join(pieces) == text
    assert all(0 < len(p) <= 6 for p in pieces)


def _aiohttp_errors(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith(("aiohttp", "asyncio"))]


LONG_ECHO = "ECHO: " + "word " * 120_000  # ~23 MB of events: far more than loopback socket buffers hold


def test_client_hanging_up_mid_stream_leaves_no_errors_or_tasks(caplog):
    caplog.set_level(logging.DEBUG)
    with ThreadedMockProvider() as mock:
        baseline = mock.task_count()
        body = {"model": "mock-generate", "stream": True, "messages": [{"role": "user", "content": LONG_ECHO}]}
        with httpx.Client() as client:
            with client.stream("POST", mock.base_url + "/chat/completions", json=body) as response:
                first = next(response.iter_raw())
        assert first.startswith(b"data: ")
        wait_for(lambda: len(mock.log) == 1, "the hung-up request to be logged")
        assert mock.log[0].status == 499
        wait_for(lambda: mock.task_count() <= baseline, "the handler task to finish")
        again = httpx.post(
            mock.base_url + "/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "ECHO: still here."}]},
        )
        assert again.json()["choices"][0]["message"]["content"] == "still here."
    assert _aiohttp_errors(caplog) == []


def test_async_client_hang_up_with_aiohttp(caplog):
    caplog.set_level(logging.DEBUG)

    async def run() -> tuple[int, int, list]:
        async with MockProvider() as mock:
            baseline = len(asyncio.all_tasks())
            body = {"model": "mock-generate", "stream": True, "messages": [{"role": "user", "content": LONG_ECHO}]}
            async with aiohttp.ClientSession() as session:
                async with session.post(mock.base_url + "/chat/completions", json=body) as response:
                    await response.content.readline()
                    response.close()  # drop the connection, not return it to the pool
            for _ in range(1000):
                if mock.log and len(asyncio.all_tasks()) <= baseline:
                    break
                await asyncio.sleep(0.01)
            return baseline, len(asyncio.all_tasks()), mock.log

    baseline, after, log = asyncio.run(run())
    assert after <= baseline
    assert [r.status for r in log] == [499]
    assert _aiohttp_errors(caplog) == []
