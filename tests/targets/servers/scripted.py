"""A scripted HTTP server for the target tests: each request gets the reply the test set.

``ScriptedServer`` is a real stdlib HTTP server on 127.0.0.1, run in a thread by
``serve()``. A test sets ``server.reply`` (one ``Reply`` for every request) or
``server.routes`` (path -> ``Reply``), calls an ``HttpTarget`` at ``server.url``,
and reads ``server.requests`` (method, path, headers, body of each request).
Every reply is written as the ``Reply`` says — status line, headers (however
wrong), body fixed, chunked or trickled — and then the connection is closed, so
one call's leftovers never reach the next.

Loaded by path (tests/targets/conftest.py and the tests), as fake_target.py is.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    """One scripted response.

    ``headers`` are sent as given (after the status line). With ``chunks`` the body
    is sent chunked (``Transfer-Encoding: chunked`` is added), one chunk per item,
    ``pause_s`` apart; otherwise ``body`` is sent after ``Content-Length: len(body)``
    unless ``length`` overrides the number (a lie) or is ``"none"`` (no header: the
    body ends when the connection closes). ``header_pause_s`` trickles the header
    block byte by byte.
    """

    status: int = 200
    headers: list[tuple[str, str]] = field(default_factory=lambda: [("Content-Type", "application/json")])
    body: bytes = b""
    chunks: Iterable[bytes] | Callable[[], Iterable[bytes]] | None = None
    pause_s: float = 0.0
    length: int | str | None = None
    header_pause_s: float = 0.0


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ScriptedServer

    def log_message(self, *args: object) -> None:
        pass

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.server.requests.append((self.command, self.path, dict(self.headers), body))
        reply = self.server.routes.get(self.path.split("?")[0], self.server.reply)
        try:
            self._write(reply)
        except OSError:
            pass  # the client stopped reading (a limit or a deadline): expected
        self.close_connection = True

    do_GET = do_POST = _serve

    def _write(self, reply: Reply) -> None:
        head = f"HTTP/1.1 {reply.status} Scripted\r\n"
        for key, value in reply.headers:
            head += f"{key}: {value}\r\n"
        if reply.chunks is not None:
            head += "Transfer-Encoding: chunked\r\n"
        elif reply.length != "none":
            head += f"Content-Length: {len(reply.body) if reply.length is None else reply.length}\r\n"
        head += "Connection: close\r\n\r\n"
        if reply.header_pause_s:
            for byte in head.encode("latin-1"):
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(reply.header_pause_s)
        else:
            self.wfile.write(head.encode("latin-1"))
        if reply.chunks is None:
            self.wfile.write(reply.body)
            return
        chunks = reply.chunks() if callable(reply.chunks) else reply.chunks
        for chunk in chunks:
            if chunk:
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                self.wfile.flush()
            if reply.pause_s:
                time.sleep(reply.pause_s)
        self.wfile.write(b"0\r\n\r\n")


class ScriptedServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.reply = Reply()
        self.routes: dict[str, Reply] = {}
        self.requests: list[tuple[str, str, dict, bytes]] = []
        self.url = f"http://127.0.0.1:{self.server_address[1]}"

    def handle_error(self, request: object, client_address: object) -> None:
        pass

    def reset(self) -> None:
        self.reply = Reply()
        self.routes = {}
        self.requests = []


def serve() -> ScriptedServer:
    """Start a ``ScriptedServer`` in a daemon thread; the caller shuts it down."""
    server = ScriptedServer()
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server
