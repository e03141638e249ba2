"""``HttpTarget``: a ``Target`` reached over HTTP, and ``connect_url`` (docs/target-contract.md).

Every call is listed once in ``_ROUTES``; the blocking methods go through one
keep-alive ``httpx.Client`` and their async twins (``aingest``, ``agenerate``,
…, used for concurrent dispatch) through one aiohttp session per event loop.
Both read a body through ``targets.bodies`` (size limit, bounded decompression),
decode it with ``decode_body`` and check it with the one model check of
``targets.responses`` (``targets.decode``, which stops at the first value of the
wrong shape), so both fail with the same words. The API key is masked in every
error message (``core.secrets``). Each call has one
overall deadline, ``timeout_s`` from sending to the last body byte; redirects
are never followed (docs/target-contract.md, "Limits").

The async calls (the plugin's) go through the target's ``core.limiter.AimdLimiter``,
as the judge's requests do: an HTTP 429 halves the calls in flight, they recover one
at a time, and the refused call is sent again after its ``Retry-After`` (capped at
``MAX_RETRY_AFTER_S``; without one, an exponential backoff), at most
``RATE_LIMIT_RETRIES`` times, before it is a ``TargetError`` (docs/judges.md, "Rate limits").
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

import aiohttp
import httpx
import yarl

from ..core.limiter import AimdLimiter, retry_after_seconds
from ..core.secrets import Scrubber
from ..core.text import shorten
from .bodies import ACCEPT_ENCODING, BodyError, BodyReader, decode_text, describe_size
from .deadline import DeadlineTransport, deadline
from .decode import NotAnObject, decode_response
from .protocol import (
    DEFAULT_MAX_RESPONSE_BYTES,
    JsonObject,
    TargetError,
    TargetUnavailable,
    call_headers,
    describe_exit,
)
from .responses import MAX_JSON_DEPTH

__all__ = ["BODY_EXCERPT_CHARS", "HttpTarget", "ResponseParser", "URL_CONNECT_TIMEOUT_S", "connect_url", "decode_body"]

BODY_EXCERPT_CHARS = 500
"""Longest response-body excerpt quoted in a ``TargetError`` message."""

URL_CONNECT_TIMEOUT_S = 5.0
"""Connect timeout of ``connect_url``'s single readiness check."""

RATE_LIMIT_RETRIES = 8
"""Times an async call refused with HTTP 429 is sent again before it fails."""

MAX_RETRY_AFTER_S = 30.0
"""Longest wait, in seconds, for a 429's ``Retry-After`` before the call is sent again."""

RATE_LIMIT_BACKOFF_S = 0.5
"""First wait, in seconds, after a 429 that names none (doubled after each)."""

READY_POLL_MIN_S = 0.5
"""Shortest time ``HttpTarget.wait_ready`` gives one ``GET /readyz`` poll to answer, in seconds,
even at its deadline: a poll of a few hundredths of a second times out on a loaded machine."""

_ROUTES: dict[str, tuple[str, str]] = {
    "info": ("GET", "/v1/info"),
    "ingest": ("POST", "/v1/documents"),
    "generate": ("POST", "/v1/generate"),
    "records": ("POST", "/v1/records"),
    "query": ("POST", "/v1/query"),
    "compare": ("POST", "/v1/compare"),
}
"""Target method -> (HTTP method, path) of the REST contract."""


def _excerpt(data: bytes | str) -> str:
    text = data if isinstance(data, str) else data[: BODY_EXCERPT_CHARS * 4].decode("utf-8", "replace")
    return shorten(text, BODY_EXCERPT_CHARS, collapse=False)


def _fail(call: str, url: str, status: int | None, what: str, data: bytes | str = b"") -> TargetError:
    """The ``TargetError`` of a response that cannot be used: call, URL, status, what was wrong, body excerpt."""
    excerpt = _excerpt(data)
    where = f" (HTTP {status})" if status is not None else ""
    return TargetError(
        f"{call} {url} {what}{where}; body: {excerpt!r}", call=call, url=url, status=status, body_excerpt=excerpt
    )


ResponseParser = Callable[[str, str | None], JsonObject]
"""``(body text, Content-Type) -> checked response``; raises ``ValueError`` (``json.JSONDecodeError`` and
``decode.NotAnObject`` included) or ``RecursionError`` for a body it cannot use (``targets.mapped``)."""


def decode_body(
    call: str,
    url: str,
    status: int,
    data: bytes,
    content_type: str | None,
    name: str,
    location: str | None = None,
    parse: ResponseParser | None = None,
) -> JsonObject:
    """Return the JSON object of a 2xx response to target method ``name``, checked; raise ``TargetError`` otherwise.

    ``data`` is the whole body, content coding undone (``bodies.BodyReader``); it is
    decoded strictly in its declared charset (default UTF-8), then parsed and checked
    by ``decode.decode_response``, which stops at the first value of the wrong shape,
    or by ``parse`` when given (a mapped target reads a body of its own shape).
    Shared by the sync (httpx) and async (aiohttp) paths, so both fail with the same words.
    """
    if 300 <= status < 400:
        target = f" to {location!r}" if location else ""
        raise _fail(
            call, url, status,
            f"returned a redirect{target}, which the harness does not follow "
            f"(docs/target-contract.md): give it the final address",
            data,
        )  # fmt: skip
    if not 200 <= status < 300:
        hint = " — the API key was rejected" if status == 401 else ""
        raise _fail(call, url, status, f"returned an error status{hint}", data)
    try:
        text = decode_text(data, content_type)
    except BodyError as exc:
        raise _fail(call, url, status, str(exc), data) from None
    try:
        return decode_response(name, text) if parse is None else parse(text, content_type)
    except RecursionError:
        raise _fail(
            call, url, status, f"returned JSON nested too deep to parse (the limit is {MAX_JSON_DEPTH} levels)", text
        ) from None
    except json.JSONDecodeError as exc:
        raise _fail(call, url, status, f"returned a body that is not valid JSON ({exc})", text) from None
    except NotAnObject as exc:
        raise _fail(call, url, status, f"returned JSON that is not an object ({exc})", text) from None
    except ValueError as exc:
        raise _fail(call, url, status, f"returned a malformed response: {exc}", text) from None


_T = TypeVar("_T")


class _RateLimited(TargetError):
    """An HTTP 429 from the target; ``retry_after``: the seconds it asked to wait, or None."""

    def __init__(self, message: str, *, retry_after: float | None, **fields: Any) -> None:
        super().__init__(message, **fields)
        self.retry_after = retry_after


class _Exchange:
    """What one call has received so far, for the message of an error mid-way."""

    def __init__(self, call: str, url: str, seconds: float) -> None:
        self.call = call
        self.url = url
        self.seconds = seconds
        self.status: int | None = None
        self.reader: BodyReader | None = None

    def timed_out(self, exc: BaseException) -> TargetError:
        """The deadline passed: say what had arrived by then."""
        if self.status is None:
            return TargetError(
                f"{self.call} {self.url}: no response within {self.seconds:g} s ({type(exc).__name__})",
                call=self.call,
                url=self.url,
            )
        received = describe_size(self.reader.received) if self.reader is not None else "none"
        return TargetError(
            f"{self.call} {self.url}: the response did not complete within {self.seconds:g} s, the per-call "
            f"timeout (--eval-timeout): HTTP {self.status} and {received} of body received",
            call=self.call,
            url=self.url,
            status=self.status,
            body_excerpt=_excerpt(self.reader.head()) if self.reader is not None else "",
        )

    def body_error(self, exc: BodyError) -> TargetError:
        return _fail(self.call, self.url, self.status, str(exc), exc.head)

    def read_with(self, content_encoding: str | None, content_length: str | None, limit: int) -> BodyReader:
        try:
            self.reader = BodyReader(content_encoding, limit, content_length)
        except BodyError as exc:
            raise self.body_error(exc) from None
        return self.reader


class HttpTarget:
    """A ``Target`` reached over HTTP (docs/target-contract.md REST contract).

    One keep-alive ``httpx.Client`` per target; every request carries
    ``Authorization: Bearer <api_key>``, and a call made for a run's item also
    ``X-Groundeval-Run-Id`` and ``X-Groundeval-Item-Id`` (``protocol.call_ids``), and of a repeated item
    ``X-Groundeval-Attempt`` (``protocol.call_attempt``). Responses are checked for the fields
    the harness reads; a violation raises ``TargetError`` naming the field.

    Args:
        base_url: The target's root URL, e.g. ``http://127.0.0.1:8123`` (a path
            prefix is kept: ``https://host/api`` → ``https://host/api/v1/...``).
        api_key: The bearer key sent with every call; None sends no ``Authorization``
            header (a mapped target sends the headers of its map, ``targets.mapped``).
        timeout_s: Per-call deadline in seconds, from sending the request to the
            last byte of the response (connect is capped at 10 s so an
            unreachable host fails fast).
        max_response_bytes: Largest response body accepted, counted as received and
            as decompressed (``--eval-max-response-bytes``, default 16 MiB).
        concurrency: Most async calls in flight (``--eval-concurrency``); None bounds none
            until the target first answers HTTP 429 (:attr:`limiter`).
        secrets: Further texts to mask in every error, as the API key is (a mapped
            target's ``${VAR}`` values and credential headers).

    Redirects are never followed: a 3xx is a ``TargetError`` naming its ``Location``.
    The API key is masked in every ``TargetError`` it raises (``core.secrets``): a target
    may quote the request's ``Authorization`` header in an error body.
    """

    checks_responses = True
    """Responses are checked as they are decoded (``targets.responses``), with the URL and status."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        timeout_s: float = 60.0,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        concurrency: int | None = None,
        *,
        secrets: Iterable[str] = (),
    ) -> None:
        if max_response_bytes < 1:
            raise ValueError(f"max_response_bytes must be at least 1, got {max_response_bytes!r}")
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self.max_response_bytes = max_response_bytes
        self._headers = {"Accept-Encoding": ACCEPT_ENCODING}
        if api_key is not None:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._scrubber = Scrubber([api_key, *secrets])
        self._client = httpx.Client(
            base_url=self.base_url,
            headers=self._headers,
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)),
            transport=DeadlineTransport(),
            follow_redirects=False,
        )
        self._asession: aiohttp.ClientSession | None = None
        self._asession_loop: asyncio.AbstractEventLoop | None = None
        self.limiter = AimdLimiter(concurrency)
        """The async calls in flight, halved on a 429 (``core.limiter``); this target's own."""

    def __repr__(self) -> str:
        return f"HttpTarget({self.base_url!r})"

    def __enter__(self) -> HttpTarget:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transport

    @contextmanager
    def _masked(self) -> Iterator[None]:
        """Mask the API key in the message and body excerpt of a ``TargetError`` raised inside."""
        try:
            yield
        except TargetError as exc:
            if self._scrubber:
                exc.args = (self._scrubber.text(str(exc)),)
                exc.body_excerpt = self._scrubber.text(exc.body_excerpt)
            raise

    def _send(
        self, method: str, path: str, body: JsonObject | None = None, *, timeout: float | None = None, read: bool = True
    ) -> tuple[int, httpx.Headers, bytes]:
        """Send one request and read its body within the limits; return ``(status, headers, body)``.

        The whole exchange ends within ``timeout`` (default ``timeout_s``) seconds.
        ``read=False`` skips the body (``ready`` needs only the status).

        Raises:
            TargetUnavailable: nothing could connect.
            TargetError: the deadline passed, the connection failed mid-way, or the body
                broke a limit (its size, its content coding).
        """
        return self._exchange(f"{method} {path}", method, f"{self.base_url}{path}", body, timeout=timeout, read=read)

    def _exchange(
        self,
        call: str,
        method: str,
        url: str,
        body: Any = None,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        read: bool = True,
    ) -> tuple[int, httpx.Headers, bytes]:
        """``_send`` to any absolute ``url``: ``body`` (None: none) sent as JSON, ``headers`` added
        to the target's own and the run and item ids; ``call`` names it in errors (``"POST /v1/generate"``)."""
        seconds = self.timeout_s if timeout is None else timeout
        exchange = _Exchange(call, url, seconds)
        kwargs: dict[str, Any] = {}
        if body is not None:
            kwargs["json"] = body
        if timeout is not None:
            kwargs["timeout"] = httpx.Timeout(timeout, connect=min(timeout, 10.0))
        sent_headers = {**(headers or {}), **call_headers()}
        if sent_headers:
            kwargs["headers"] = sent_headers
        try:
            with deadline(seconds):
                request = self._client.build_request(method, url, **kwargs)
                response = self._client.send(request, stream=True)
                try:
                    exchange.status = response.status_code
                    data = b""
                    if read:
                        reader = exchange.read_with(
                            response.headers.get("content-encoding"),
                            response.headers.get("content-length"),
                            self.max_response_bytes,
                        )
                        for chunk in response.iter_raw():
                            reader.feed(chunk)
                        data = reader.finish()
                finally:
                    response.close()
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            # ConnectError also covers DNS failures: nothing was sent, the host is not there.
            raise TargetUnavailable(
                f"{call} {url}: cannot connect to the target ({type(exc).__name__}: {exc})",
                call=call,
                url=url,
            ) from exc
        except httpx.TimeoutException as exc:
            raise exchange.timed_out(exc) from exc
        except httpx.HTTPError as exc:
            raise TargetError(
                f"{call} {url}: request failed ({type(exc).__name__}: {exc})",
                call=call,
                url=url,
                status=exchange.status,
            ) from exc
        except BodyError as exc:
            raise exchange.body_error(exc) from None
        return response.status_code, response.headers, data

    def _decode(self, call: str, sent: tuple[int, httpx.Headers, bytes], name: str) -> JsonObject:
        """Return the JSON object body of a 2xx response to method ``name``, checked; raise ``TargetError`` otherwise."""
        status, headers, data = sent
        path = call.split(" ", 1)[1]
        return decode_body(
            call, f"{self.base_url}{path}", status, data, headers.get("content-type"), name, headers.get("location")
        )

    def _call(self, name: str, body: JsonObject | None) -> JsonObject:
        method, path = _ROUTES[name]
        with self._masked():
            return self._decode(f"{method} {path}", self._send(method, path, body), name)

    async def _acall(self, name: str, body: JsonObject | None) -> JsonObject:
        with self._masked():
            return await self._rate_limited(lambda: self._acall_unmasked(name, body))

    async def _rate_limited(self, attempt: Callable[[], Awaitable[_T]]) -> _T:
        """``attempt()`` in a slot of :attr:`limiter`, sent again after each HTTP 429 (``_RateLimited``).

        A 429 halves the calls in flight and waits its ``Retry-After`` (capped at
        ``MAX_RETRY_AFTER_S``), else an exponential backoff; after ``RATE_LIMIT_RETRIES``
        resends the 429 is raised, saying how many attempts were refused.

        Raises:
            TargetError: what ``attempt`` raised (``_RateLimited`` when still refused).
        """
        refused = 0
        while True:
            async with self.limiter.slot() as slot:
                try:
                    answer = await attempt()
                except _RateLimited as exc:
                    refused += 1
                    wait = None if exc.retry_after is None else min(exc.retry_after, MAX_RETRY_AFTER_S)
                    slot.rate_limited(wait)
                    if refused > RATE_LIMIT_RETRIES:
                        exc.args = (f"{exc} (still rate limited after {refused} attempts)",)
                        raise
                except TargetError as exc:
                    if exc.status is not None and exc.status < 500:
                        slot.succeeded()  # it answered: not overloaded
                    raise
                else:
                    slot.succeeded()
                    return answer
            backoff = RATE_LIMIT_BACKOFF_S * 2 ** (refused - 1)
            await asyncio.sleep(min(backoff if wait is None else wait, MAX_RETRY_AFTER_S))

    @staticmethod
    def _refuse_rate_limited(call: str, url: str, status: int, headers: Mapping[str, str], data: bytes) -> None:
        """Raise ``_RateLimited`` for an HTTP 429, with its ``Retry-After``; nothing for any other status."""
        if status == 429:
            refused = _fail(call, url, 429, "returned an error status", data)
            raise _RateLimited(
                str(refused), call=call, url=url, status=429, body_excerpt=refused.body_excerpt,
                retry_after=retry_after_seconds(headers),
            )  # fmt: skip

    async def _acall_unmasked(self, name: str, body: JsonObject | None) -> JsonObject:
        method, path = _ROUTES[name]
        call = f"{method} {path}"
        url = f"{self.base_url}{path}"
        status, headers, data = await self._aexchange(call, method, url, body)
        self._refuse_rate_limited(call, url, status, headers, data)
        return decode_body(call, url, status, data, headers.get("Content-Type"), name, headers.get("Location"))

    async def _aexchange(
        self,
        call: str,
        method: str,
        url: str,
        body: Any = None,
        *,
        headers: Mapping[str, str] | None = None,
        encoded: bool = False,
    ) -> tuple[int, Mapping[str, str], bytes]:
        """Async ``_exchange``: send one request and read its body within the limits; ``(status, headers, body)``.

        ``encoded``: ``url`` is already percent-encoded and is sent as it is (aiohttp would
        otherwise decode an escape such as ``%2F`` in a query, as httpx does not).

        Raises:
            TargetUnavailable: nothing could connect.
            TargetError: the deadline passed, the connection failed mid-way, or the body broke a limit.
        """
        exchange = _Exchange(call, url, self.timeout_s)
        sent_headers = {**(headers or {}), **call_headers()}
        # aiohttp's total timeout spans connect to the last body byte: the per-call deadline.
        try:
            async with self._session().request(
                method,
                yarl.URL(url, encoded=True) if encoded else url,
                json=body,
                allow_redirects=False,
                headers=sent_headers or None,
            ) as response:
                exchange.status = response.status
                try:
                    reader = exchange.read_with(
                        response.headers.get("Content-Encoding"),
                        response.headers.get("Content-Length"),
                        self.max_response_bytes,
                    )
                    async for chunk in response.content.iter_any():
                        reader.feed(chunk)
                    data = reader.finish()
                except BaseException:
                    response.close()  # the rest of the body is not wanted: do not reuse the connection
                    raise
                received = response.headers
        except (aiohttp.ClientConnectorError, aiohttp.ServerDisconnectedError) as exc:
            if exchange.status is not None:
                raise TargetError(
                    f"{call} {url}: request failed ({type(exc).__name__}: {exc})",
                    call=call, url=url, status=exchange.status,
                ) from exc  # fmt: skip
            raise TargetUnavailable(
                f"{call} {url}: cannot connect to the target ({type(exc).__name__}: {exc})", call=call, url=url
            ) from exc
        except asyncio.TimeoutError as exc:
            raise exchange.timed_out(exc) from exc
        except aiohttp.ClientError as exc:
            raise TargetError(
                f"{call} {url}: request failed ({type(exc).__name__}: {exc})",
                call=call,
                url=url,
                status=exchange.status,
            ) from exc
        except BodyError as exc:
            raise exchange.body_error(exc) from None
        assert exchange.status is not None  # set as soon as the response arrived
        return exchange.status, received, data

    # -- Target protocol: each call once in _ROUTES, sync (httpx) and async (aiohttp)

    def info(self) -> JsonObject | None:
        """``GET /v1/info``: the model lineage, or None on HTTP 404 (see ``Target.info``).

        Raises:
            TargetError: any other non-2xx status or a malformed body.
        """
        with self._masked():
            sent = self._send("GET", "/v1/info")
            if sent[0] == 404:
                return None
            return self._decode("GET /v1/info", sent, "info")

    def ingest(self, document: JsonObject) -> JsonObject:
        """``POST /v1/documents`` (see ``Target.ingest``).

        Raises:
            TargetError: non-2xx, malformed JSON, or no ``documentId`` / integer ``txStart``.
        """
        return self._call("ingest", document)

    def generate(self, question: str, find: str | None) -> JsonObject:
        """``POST /v1/generate`` (see ``Target.generate``).

        Raises:
            TargetError: non-2xx, malformed JSON, or a response missing or
                mistyping a field the harness reads (named in the message).
        """
        return self.timed_generate(question, find)[0]

    def timed_generate(self, question: str, find: str | None) -> tuple[JsonObject, float]:
        """``POST /v1/generate`` with its client-side wall time.

        Returns:
            ``(body, latency_ms)``: the validated generate response and the time
            from sending the request to having read the whole response, in ms.

        Raises:
            TargetError: as ``generate``.
        """
        started = time.perf_counter()
        body = self._call("generate", {"question": question, "find": find})
        return body, (time.perf_counter() - started) * 1000.0

    def records(self, step: JsonObject) -> JsonObject:
        """``POST /v1/records`` (see ``Target.records``).

        Raises:
            TargetError: non-2xx, malformed JSON, or no ``id`` / integer ``txStart``.
        """
        return self._call("records", step)

    def query(self, body: JsonObject) -> JsonObject:
        """``POST /v1/query`` (see ``Target.query``).

        Raises:
            TargetError: non-2xx, malformed JSON, or no ``records`` list.
        """
        return self._call("query", body)

    def compare(self, body: JsonObject) -> JsonObject:
        """``POST /v1/compare`` (see ``Target.compare``).

        Raises:
            TargetError: non-2xx, malformed JSON, or ``added`` / ``removed`` / ``changed`` not lists.
        """
        return self._call("compare", body)

    def close(self) -> None:
        """Close the connection pools (the async one must be closed with ``aclose`` on its loop)."""
        self._client.close()

    async def aingest(self, document: JsonObject) -> JsonObject:
        """Async ``ingest``."""
        return await self._acall("ingest", document)

    async def agenerate(self, question: str, find: str | None) -> JsonObject:
        """Async ``generate``."""
        return await self._acall("generate", {"question": question, "find": find})

    async def arecords(self, step: JsonObject) -> JsonObject:
        """Async ``records``."""
        return await self._acall("records", step)

    async def aquery(self, body: JsonObject) -> JsonObject:
        """Async ``query``."""
        return await self._acall("query", body)

    async def acompare(self, body: JsonObject) -> JsonObject:
        """Async ``compare``."""
        return await self._acall("compare", body)

    def _session(self) -> aiohttp.ClientSession:
        """The aiohttp session of the running event loop, created on first use."""
        loop = asyncio.get_running_loop()
        if self._asession is None or self._asession_loop is not loop or self._asession.closed:
            self._asession = aiohttp.ClientSession(
                headers=self._headers,
                timeout=aiohttp.ClientTimeout(total=self.timeout_s, connect=min(self.timeout_s, 10.0)),
                connector=aiohttp.TCPConnector(limit=0),
                auto_decompress=False,  # bodies.BodyReader inflates, within the limit
            )
            self._asession_loop = loop
        return self._asession

    async def aclose(self) -> None:
        """Close the aiohttp session, on the loop that created it."""
        if self._asession is not None and not self._asession.closed:
            await self._asession.close()

    # -- readiness

    def ready(self, timeout_s: float = URL_CONNECT_TIMEOUT_S) -> int:
        """Send one ``GET /readyz`` and return its status code.

        Raises:
            TargetUnavailable: the target cannot be reached.
            TargetError: no response within ``timeout_s``.
        """
        with self._masked():
            return self._send("GET", "/readyz", timeout=timeout_s, read=False)[0]

    def wait_ready(
        self,
        timeout_s: float,
        poll_interval_s: float = 0.1,
        process: subprocess.Popen[bytes] | None = None,
        *,
        since: float | None = None,
    ) -> None:
        """Poll ``GET /readyz`` until it answers 200 (docs/target-contract.md).

        Args:
            timeout_s: Give up after this many seconds, counted from ``since``.
            poll_interval_s: Pause between polls, in seconds.
            process: The child serving the target, if any; when it exits the
                wait stops at once.
            since: When the wait's budget started (``time.monotonic()``): when the child
                was started, for a caller that did other work since (``SpawnedTarget``).
                Now when None. One poll is made even when the budget is spent already.

        Each poll may take up to 2 s, and at least ``READY_POLL_MIN_S`` even when
        less time is left: the last poll may end that much after ``timeout_s``,
        rather than be too short for a loaded machine to answer in.

        Raises:
            TargetUnavailable: ``process`` exited (the message gives its exit
                code), or no 200 within ``timeout_s`` (the message gives the
                last status or connection error seen; a poll that only timed out
                does not hide the status an earlier poll received).
        """
        deadline = (time.monotonic() if since is None else since) + timeout_s
        last = "no attempt"
        answered = False  # some poll received a status or a connection error
        polled = False  # one poll is made however late the wait starts: a target ready by then is ready
        while True:
            if process is not None and process.poll() is not None:
                raise TargetUnavailable(
                    f"the target process exited ({describe_exit(process.returncode)}) before GET /readyz answered 200",
                    call="GET /readyz",
                    url=f"{self.base_url}/readyz",
                )
            remaining = deadline - time.monotonic()
            if remaining <= 0 and polled:
                raise TargetUnavailable(
                    f"GET {self.base_url}/readyz did not answer 200 within {timeout_s:g} s (last: {last})",
                    call="GET /readyz",
                    url=f"{self.base_url}/readyz",
                )
            polled = True
            try:
                status = self.ready(timeout_s=min(2.0, max(READY_POLL_MIN_S, remaining)))
            except TargetError as exc:
                timed_out = isinstance(exc.__cause__, httpx.TimeoutException)
                # No answer in time says less than what an earlier poll received: keep that.
                if not (timed_out and answered):
                    last = str(exc)
                    answered = not timed_out
            else:
                if status == 200:
                    return
                last = f"HTTP {status}"
                answered = True
            time.sleep(max(0.0, min(poll_interval_s, deadline - time.monotonic())))


def connect_url(
    url: str,
    api_key: str,
    timeout_s: float = 60.0,
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    concurrency: int | None = None,
) -> HttpTarget:
    """Return an ``HttpTarget`` for an already running server, checked once (docs/target-contract.md option 3).

    Sends one ``GET /readyz`` with a 5 s timeout; no polling, since a remote
    target that is down should fail the session with one clear message.

    Args:
        url: The target's root URL.
        api_key: The bearer key.
        timeout_s: Per-call deadline for later calls, in seconds.
        max_response_bytes: Largest response body accepted (see ``HttpTarget``).
        concurrency: Most async calls in flight, halved on a 429 (see ``HttpTarget``).

    Raises:
        TargetUnavailable: the server cannot be reached or ``/readyz`` is not 200.
    """
    target = HttpTarget(
        url, api_key, timeout_s=timeout_s, max_response_bytes=max_response_bytes, concurrency=concurrency
    )
    try:
        status = target.ready(timeout_s=URL_CONNECT_TIMEOUT_S)
    except TargetError as exc:
        target.close()
        raise TargetUnavailable(f"the target at {url} is unavailable: {exc}", call="GET /readyz", url=exc.url) from exc
    if status != 200:
        target.close()
        raise TargetUnavailable(
            f"the target at {url} is not ready: GET /readyz returned HTTP {status}",
            call="GET /readyz",
            url=f"{target.base_url}/readyz",
            status=status,
        )
    return target
