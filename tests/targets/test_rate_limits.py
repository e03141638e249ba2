"""An ``--eval-url`` target that rate limits: its calls in flight halve on a 429, none is dropped (docs/judges.md).

The target here is a real HTTP server on loopback that answers ``POST /v1/generate`` for
at most ``limit`` calls at once and HTTP 429 beyond (a concurrency limit, as a provider
behind a target sets one), counting what it admitted and refused.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from pytest_groundeval.targets import http as target_http
from pytest_groundeval.targets.http import HttpTarget
from pytest_groundeval.targets.protocol import TargetError

GOOD = {
    "answer": "Alpha ships in May [S1].",
    "evidence": [{"marker": "S1", "document": "a.txt", "start": 0, "end": 10}],
    "claims": [{"text": "Alpha ships in May", "start": 0, "end": 18, "markers": ["S1"], "verdict": "supported"}],
}


class LimitedTarget(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, limit: int | None, retry_after: str | None = None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.limit = limit  # None: always 429
        self.retry_after = retry_after
        self.lock = threading.Lock()
        self.in_flight = self.admitted = self.rejected = self.peak = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: LimitedTarget

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        server = self.server
        with server.lock:
            admitted = server.limit is not None and server.in_flight < server.limit
            if admitted:
                server.in_flight += 1
                server.admitted += 1
                server.peak = max(server.peak, server.in_flight)
            else:
                server.rejected += 1
        if not admitted:
            self._send(429, b'{"error": "too many requests"}', server.retry_after)
            return
        time.sleep(0.1)
        with server.lock:
            server.in_flight -= 1
        self._send(200, json.dumps(GOOD).encode())

    def _send(self, status: int, body: bytes, retry_after: str | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if retry_after is not None:
            self.send_header("Retry-After", retry_after)
        self.end_headers()
        self.wfile.write(body)


def serve(limit: int | None, retry_after: str | None = None) -> LimitedTarget:
    server = LimitedTarget(limit, retry_after)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch):
    monkeypatch.setattr(target_http, "RATE_LIMIT_BACKOFF_S", 0.01)


def generate_all(target: HttpTarget, n: int) -> list:
    async def run():
        try:
            return await asyncio.gather(*(target.agenerate(f"q{i}", None) for i in range(n)), return_exceptions=True)
        finally:
            await target.aclose()

    return asyncio.run(run())


@pytest.mark.parametrize("retry_after", [None, "0"])
def test_a_rate_limited_target_gets_fewer_calls_in_flight_and_every_call_answered(retry_after):
    server = serve(limit=2, retry_after=retry_after)
    try:
        target = HttpTarget(server.url, "k", concurrency=6)
        answers = generate_all(target, 10)
    finally:
        server.shutdown()
        server.server_close()
        target.close()
    assert all(isinstance(a, dict) and a["answer"] == GOOD["answer"] for a in answers)  # none dropped
    limiter = target.limiter
    decreases = [c for c in limiter.changes if c.reason == "rate limited"]
    # The first burst: 6 sent, halved to half of what was in flight (6 unless one already came back).
    assert decreases[0].before == 6 and decreases[0].after == decreases[0].in_flight // 2 <= 3
    assert all(c.after == max(1, min(c.before, c.in_flight) // 2) for c in decreases)
    assert server.admitted == 10 and server.rejected == limiter.rate_limited > 0 and server.peak <= 2


def test_a_target_that_always_rate_limits_fails_the_call_after_the_retries(monkeypatch):
    monkeypatch.setattr(target_http, "RATE_LIMIT_RETRIES", 2)
    server = serve(limit=None, retry_after="0")
    try:
        target = HttpTarget(server.url, "k-secret-1234", concurrency=2)
        (answer,) = generate_all(target, 1)
    finally:
        server.shutdown()
        server.server_close()
        target.close()
    assert isinstance(answer, TargetError) and answer.status == 429
    assert "(HTTP 429)" in str(answer) and "still rate limited after 3 attempts" in str(answer)
    assert server.rejected == 3 and "k-secret-1234" not in str(answer)


def test_the_sync_path_is_unchanged_a_429_is_an_error_at_once():
    server = serve(limit=None)
    try:
        target = HttpTarget(server.url, "k", concurrency=2)
        with pytest.raises(TargetError, match="HTTP 429"):
            target.generate("q", None)
    finally:
        server.shutdown()
        server.server_close()
        target.close()
    assert server.rejected == 1


def test_a_mapped_target_that_rate_limits_is_halved_and_every_call_answered():
    # The same limiter and resends as --eval-url (docs/byo.md, "Mapped targets"): the map here
    # reads the contract's own fields, so only the rate limiting is under test.
    from pytest_groundeval.targets.mapped import MappedTarget
    from pytest_groundeval.targets.mapping import parse_map

    server = serve(limit=2, retry_after="0")
    spec = {
        "request": {"method": "POST", "url": f"{server.url}/v1/generate", "body": {"question": "{question}"}},
        "response": {"answer": "answer", "evidence": "evidence", "claims": "claims"},
    }
    try:
        target = MappedTarget(parse_map(spec, "map.json", environ={}), concurrency=6)
        answers = generate_all(target, 10)
    finally:
        server.shutdown()
        server.server_close()
        target.close()
    assert all(isinstance(a, dict) and a["answer"] == GOOD["answer"] for a in answers)  # none dropped
    assert server.admitted == 10 and server.rejected == target.limiter.rate_limited > 0 and server.peak <= 2
    assert any(c.reason == "rate limited" and c.after < c.before for c in target.limiter.changes)
