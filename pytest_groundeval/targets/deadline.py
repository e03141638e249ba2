"""An httpx transport whose every socket operation ends by the calling request's deadline.

httpx bounds each read, write and connect on its own, never a whole request:
a target that sends one byte every few seconds, in its headers or its body,
never trips a read timeout (docs/target-contract.md, "Limits"). Here the
deadline of the call in progress (``deadline(seconds)``, a context variable,
so each thread and task has its own) caps the timeout of every socket
operation of that call, so the whole exchange, connect to last body byte,
ends by it; past it the operation raises ``httpx.ReadTimeout`` (or the
write / connect twin).

Built only on public interfaces: ``httpx.BaseTransport`` over an
``httpcore.ConnectionPool`` given a ``httpcore.NetworkBackend`` that wraps the
standard one. The transport does not read proxy settings from the environment
(neither does the async aiohttp path).
"""

from __future__ import annotations

import contextlib
import functools
import ssl
import time
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from typing import Any, cast

import httpcore
import httpx

__all__ = ["DeadlineTransport", "deadline"]

_DEADLINE: ContextVar[float | None] = ContextVar("groundeval_http_deadline", default=None)


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Every socket operation of a ``DeadlineTransport`` inside the block ends within ``seconds`` of entering it."""
    token = _DEADLINE.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _capped(timeout: float | None, expired: type[Exception]) -> float | None:
    """``timeout`` capped by the time left before the current deadline; raise ``expired`` when none is left."""
    end = _DEADLINE.get()
    if end is None:
        return timeout
    left = end - time.monotonic()
    if left <= 0:
        raise expired("the per-call deadline has passed")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _capped(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _capped(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> _Stream:
        return _Stream(self._stream.start_tls(ssl_context, server_hostname, _capped(timeout, httpcore.ConnectTimeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self._backend = httpcore.SyncBackend()

    def connect_tcp(
        self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> _Stream:  # fmt: skip
        timeout = _capped(timeout, httpcore.ConnectTimeout)
        return _Stream(self._backend.connect_tcp(host, port, timeout, local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> _Stream:
        return _Stream(
            self._backend.connect_unix_socket(path, _capped(timeout, httpcore.ConnectTimeout), socket_options)
        )

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


# httpcore error -> the httpx error httpx.Client users expect; most specific first.
_ERRORS: tuple[tuple[type[Exception], type[httpx.TransportError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.ProxyError, httpx.ProxyError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.ProtocolError, httpx.ProtocolError),
)


@contextlib.contextmanager
def _as_httpx_errors(request: httpx.Request) -> Iterator[None]:
    try:
        yield
    except httpcore.TimeoutException as exc:
        raise _mapped(exc, request) from exc
    except (httpcore.NetworkError, httpcore.ProtocolError, httpcore.ProxyError, httpcore.UnsupportedProtocol) as exc:
        raise _mapped(exc, request) from exc


def _mapped(exc: Exception, request: httpx.Request) -> Exception:
    for source, target in _ERRORS:
        if isinstance(exc, source):
            return target(str(exc) or type(exc).__name__, request=request)
    return httpx.TransportError(str(exc), request=request)  # pragma: no cover - every httpcore error is listed


class _Body(httpx.SyncByteStream):
    def __init__(self, stream: Iterable[bytes], request: httpx.Request) -> None:
        self._stream = stream
        self._request = request

    def __iter__(self) -> Iterator[bytes]:
        with _as_httpx_errors(self._request):
            yield from self._stream

    def close(self) -> None:
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()


@functools.cache
def default_ssl_context() -> ssl.SSLContext:
    """The verifying TLS context of every ``DeadlineTransport``, made once per process.

    ``httpx.create_ssl_context()`` loads the CA bundle (tens of milliseconds each time);
    an ``ssl.SSLContext`` is safe to share between connections and threads, and nothing
    here changes it after it is made.
    """
    return httpx.create_ssl_context()


class DeadlineTransport(httpx.BaseTransport):
    """An ``httpx`` transport (HTTP/1.1, keep-alive, TLS verified) bounded by ``deadline``.

    Outside a ``deadline`` block it behaves as ``httpx.HTTPTransport`` without proxies:
    each socket operation has only the request's own httpx timeouts.
    """

    def __init__(self) -> None:
        self._pool = httpcore.ConnectionPool(
            ssl_context=default_ssl_context(),
            max_connections=100,
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
            network_backend=_Backend(),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _as_httpx_errors(request):
            response = self._pool.handle_request(core_request)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            # The sync pool's responses always carry a sync stream (httpcore types it as either).
            stream=_Body(cast(Iterable[bytes], response.stream), request),
            extensions=response.extensions,
        )

    def close(self) -> None:
        self._pool.close()
