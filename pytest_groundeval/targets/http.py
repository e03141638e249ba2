"""``HttpTarget``: a ``Target`` reached over HTTP, and ``connect_url`` (docs/target-contract.md).

Every call is listed once in ``_ROUTES``; the blocking methods go through one
keep-alive ``httpx.Client`` and their async twins (``aingest``, ``agenerate``,
…, used for concurrent dispatch) through one aiohttp session per event loop.
Both decode a response with ``_decode_body`` and check it with the one model
check of ``targets.responses``, so both fail with the same words.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
from typing import Any

import aiohttp
import httpx

from ..core.text import shorten
from .protocol import TargetError, TargetUnavailable, describe_exit
from .responses import CALLS

__all__ = ["BODY_EXCERPT_CHARS", "HttpTarget", "URL_CONNECT_TIMEOUT_S", "connect_url"]

BODY_EXCERPT_CHARS = 500
"""Longest response-body excerpt quoted in a ``TargetError`` message."""

URL_CONNECT_TIMEOUT_S = 5.0
"""Connect timeout of ``connect_url``'s single readiness check."""

_ROUTES: dict[str, tuple[str, str]] = {
    "info": ("GET", "/v1/info"),
    "ingest": ("POST", "/v1/documents"),
    "generate": ("POST", "/v1/generate"),
    "records": ("POST", "/v1/records"),
    "query": ("POST", "/v1/query"),
    "compare": ("POST", "/v1/compare"),
}
"""Target method -> (HTTP method, path) of the REST contract."""


def _decode_body(call: str, url: str, status: int, text: str, check: Any) -> dict:
    """Return the JSON object of a 2xx response after ``check``; raise ``TargetError`` otherwise.

    Shared by the sync (httpx) and async (aiohttp) paths, so both fail with the same words.
    """
    excerpt = shorten(text, BODY_EXCERPT_CHARS, collapse=False)

    def fail(what: str) -> TargetError:
        return TargetError(
            f"{call} {url} {what} (HTTP {status}); body: {excerpt!r}",
            call=call,
            url=url,
            status=status,
            body_excerpt=excerpt,
        )

    if not 200 <= status < 300:
        hint = " — the API key was rejected" if status == 401 else ""
        raise fail(f"returned an error status{hint}")
    try:
        body = json.loads(text)
    except ValueError as exc:
        raise fail(f"returned a body that is not valid JSON ({exc})") from exc
    if not isinstance(body, dict):
        raise fail(f"returned JSON that is not an object (a {type(body).__name__})")
    try:
        check(body)
    except ValueError as exc:
        raise fail(f"returned a malformed response: {exc}") from exc
    return body


class HttpTarget:
    """A ``Target`` reached over HTTP (docs/target-contract.md REST contract).

    One keep-alive ``httpx.Client`` per target; every request carries
    ``Authorization: Bearer <api_key>``. Responses are checked for the fields
    the harness reads; a violation raises ``TargetError`` naming the field.

    Args:
        base_url: The target's root URL, e.g. ``http://127.0.0.1:8123`` (a path
            prefix is kept: ``https://host/api`` → ``https://host/api/v1/...``).
        api_key: The bearer key sent with every call.
        timeout_s: Per-call timeout in seconds (connect is capped at 10 s so an
            unreachable host fails fast).
    """

    checks_responses = True
    """Responses are checked as they are decoded (``targets.responses``), with the URL and status."""

    def __init__(self, base_url: str, api_key: str, timeout_s: float = 60.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self._headers = {"Authorization": f"Bearer {api_key}"}
        self._client = httpx.Client(
            base_url=self.base_url,
            headers=self._headers,
            timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)),
        )
        self._asession: aiohttp.ClientSession | None = None
        self._asession_loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        return f"HttpTarget({self.base_url!r})"

    def __enter__(self) -> HttpTarget:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transport

    def _send(
        self, method: str, path: str, body: dict | None = None, *, timeout: float | None = None
    ) -> httpx.Response:
        """Send one request; map transport failures to ``TargetUnavailable`` / ``TargetError``."""
        call = f"{method} {path}"
        url = f"{self.base_url}{path}"
        kwargs: dict[str, Any] = {}
        if body is not None:
            kwargs["json"] = body
        if timeout is not None:
            kwargs["timeout"] = timeout
        try:
            return self._client.request(method, path, **kwargs)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            # ConnectError also covers DNS failures: nothing was sent, the host is not there.
            raise TargetUnavailable(
                f"{call} {url}: cannot connect to the target ({type(exc).__name__}: {exc})",
                call=call,
                url=url,
            ) from exc
        except httpx.TimeoutException as exc:
            raise TargetError(
                f"{call} {url}: no response within {self.timeout_s:g} s ({type(exc).__name__})",
                call=call,
                url=url,
            ) from exc
        except httpx.HTTPError as exc:
            raise TargetError(
                f"{call} {url}: request failed ({type(exc).__name__}: {exc})", call=call, url=url
            ) from exc

    def _decode(self, call: str, response: httpx.Response, check: Any) -> dict:
        """Return the JSON object body of a 2xx response after ``check``; raise ``TargetError`` otherwise."""
        return _decode_body(call, str(response.request.url), response.status_code, response.text, check)

    def _call(self, name: str, body: dict | None) -> dict:
        method, path = _ROUTES[name]
        response = self._send(method, path, body)
        return self._decode(f"{method} {path}", response, CALLS[name])

    async def _acall(self, name: str, body: dict | None) -> dict:
        method, path = _ROUTES[name]
        call = f"{method} {path}"
        url = f"{self.base_url}{path}"
        try:
            async with self._session().request(method, url, json=body) as response:
                text = await response.text()
                status = response.status
        except (aiohttp.ClientConnectorError, aiohttp.ServerDisconnectedError) as exc:
            raise TargetUnavailable(
                f"{call} {url}: cannot connect to the target ({type(exc).__name__}: {exc})", call=call, url=url
            ) from exc
        except asyncio.TimeoutError as exc:
            raise TargetError(f"{call} {url}: no response within {self.timeout_s:g} s", call=call, url=url) from exc
        except aiohttp.ClientError as exc:
            raise TargetError(f"{call} {url}: request failed ({type(exc).__name__}: {exc})", call=call, url=url) from exc
        return _decode_body(call, url, status, text, CALLS[name])

    # -- Target protocol: each call once in _ROUTES, sync (httpx) and async (aiohttp)

    def info(self) -> dict | None:
        """``GET /v1/info``: the model lineage, or None on HTTP 404 (see ``Target.info``).

        Raises:
            TargetError: any other non-2xx status or a malformed body.
        """
        response = self._send("GET", "/v1/info")
        if response.status_code == 404:
            return None
        return self._decode("GET /v1/info", response, CALLS["info"])

    def ingest(self, document: dict) -> dict:
        """``POST /v1/documents`` (see ``Target.ingest``).

        Raises:
            TargetError: non-2xx, malformed JSON, or no ``documentId`` / integer ``txStart``.
        """
        return self._call("ingest", document)

    def generate(self, question: str, find: str | None) -> dict:
        """``POST /v1/generate`` (see ``Target.generate``).

        Raises:
            TargetError: non-2xx, malformed JSON, or a response missing or
                mistyping a field the harness reads (named in the message).
        """
        return self.timed_generate(question, find)[0]

    def timed_generate(self, question: str, find: str | None) -> tuple[dict, float]:
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

    def records(self, step: dict) -> dict:
        """``POST /v1/records`` (see ``Target.records``).

        Raises:
            TargetError: non-2xx, malformed JSON, or no ``id`` / integer ``txStart``.
        """
        return self._call("records", step)

    def query(self, body: dict) -> dict:
        """``POST /v1/query`` (see ``Target.query``).

        Raises:
            TargetError: non-2xx, malformed JSON, or no ``records`` list.
        """
        return self._call("query", body)

    def compare(self, body: dict) -> dict:
        """``POST /v1/compare`` (see ``Target.compare``).

        Raises:
            TargetError: non-2xx, malformed JSON, or ``added`` / ``removed`` / ``changed`` not lists.
        """
        return self._call("compare", body)

    def close(self) -> None:
        """Close the connection pools (the async one must be closed with ``aclose`` on its loop)."""
        self._client.close()

    async def aingest(self, document: dict) -> dict:
        """Async ``ingest``."""
        return await self._acall("ingest", document)

    async def agenerate(self, question: str, find: str | None) -> dict:
        """Async ``generate``."""
        return await self._acall("generate", {"question": question, "find": find})

    async def arecords(self, step: dict) -> dict:
        """Async ``records``."""
        return await self._acall("records", step)

    async def aquery(self, body: dict) -> dict:
        """Async ``query``."""
        return await self._acall("query", body)

    async def acompare(self, body: dict) -> dict:
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
        return self._send("GET", "/readyz", timeout=timeout_s).status_code

    def wait_ready(
        self,
        timeout_s: float,
        poll_interval_s: float = 0.1,
        process: subprocess.Popen | None = None,
    ) -> None:
        """Poll ``GET /readyz`` until it answers 200 (docs/target-contract.md).

        Args:
            timeout_s: Give up after this many seconds.
            poll_interval_s: Pause between polls, in seconds.
            process: The child serving the target, if any; when it exits the
                wait stops at once.

        Raises:
            TargetUnavailable: ``process`` exited (the message gives its exit
                code), or no 200 within ``timeout_s`` (the message gives the
                last status or connection error seen).
        """
        deadline = time.monotonic() + timeout_s
        last = "no attempt"
        while True:
            if process is not None and process.poll() is not None:
                raise TargetUnavailable(
                    f"the target process exited ({describe_exit(process.returncode)}) "
                    f"before GET /readyz answered 200",
                    call="GET /readyz",
                    url=f"{self.base_url}/readyz",
                )
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TargetUnavailable(
                    f"GET {self.base_url}/readyz did not answer 200 within {timeout_s:g} s "
                    f"(last: {last})",
                    call="GET /readyz",
                    url=f"{self.base_url}/readyz",
                )
            try:
                status = self.ready(timeout_s=max(0.05, min(2.0, remaining)))
            except TargetError as exc:
                last = str(exc)
            else:
                if status == 200:
                    return
                last = f"HTTP {status}"
            time.sleep(max(0.0, min(poll_interval_s, deadline - time.monotonic())))


def connect_url(url: str, api_key: str, timeout_s: float = 60.0) -> HttpTarget:
    """Return an ``HttpTarget`` for an already running server, checked once (docs/target-contract.md option 3).

    Sends one ``GET /readyz`` with a 5 s timeout; no polling, since a remote
    target that is down should fail the session with one clear message.

    Args:
        url: The target's root URL.
        api_key: The bearer key.
        timeout_s: Per-call timeout for later calls, in seconds.

    Raises:
        TargetUnavailable: the server cannot be reached or ``/readyz`` is not 200.
    """
    target = HttpTarget(url, api_key, timeout_s=timeout_s)
    try:
        status = target.ready(timeout_s=URL_CONNECT_TIMEOUT_S)
    except TargetError as exc:
        target.close()
        raise TargetUnavailable(
            f"the target at {url} is unavailable: {exc}", call="GET /readyz", url=exc.url
        ) from exc
    if status != 200:
        target.close()
        raise TargetUnavailable(
            f"the target at {url} is not ready: GET /readyz returned HTTP {status}",
            call="GET /readyz",
            url=f"{target.base_url}/readyz",
            status=status,
        )
    return target


