"""Targets: the system under test, reached over REST or in process (SPEC §3).

Four ways to get a target exist (SPEC §3); this module holds the machinery for
all of them, usable without pytest:

- ``Target``: the protocol every target satisfies (the REST contract as Python
  methods taking and returning wire-shaped dicts). Users with an in-process
  pipeline implement it directly (SPEC §3 option 4).
- ``HttpTarget``: ``Target`` over HTTP, with response-shape validation and
  client-side latency (``timed_generate``).
- ``SpawnConfig`` / ``SpawnedTarget``: start a server as a child process in a
  fresh data dir on a free loopback port, with a fresh API key, and tear it
  down (SPEC §3 options 1 and 2). ``reference_command`` is the spawn command of
  the embedded reference server (SPEC §7).
- ``connect_url``: an ``HttpTarget`` for an already running server, checked once
  (SPEC §3 option 3).
- ``substitute`` / ``namespace_label``: the temporal-item rewriting of SPEC §6.

Errors: ``TargetError`` when an operation cannot be completed, its subclass
``TargetUnavailable`` when the target cannot be reached at all (so a caller can
stop after the first one instead of waiting out one timeout per item), and its
subclass ``SpawnError`` when a spawned target fails to set up, start or stay up.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol, runtime_checkable

import aiohttp
import httpx

from .contract import TEMPORAL_LABEL_SEPARATOR, VERDICTS

__all__ = [
    "MOCK_LLM_API_KEY",
    "HttpTarget",
    "SpawnConfig",
    "SpawnError",
    "SpawnedTarget",
    "Target",
    "TargetError",
    "TargetUnavailable",
    "connect_url",
    "describe_exit",
    "namespace_label",
    "reference_command",
    "substitute",
]

BODY_EXCERPT_CHARS = 500
"""Longest response-body excerpt quoted in a ``TargetError`` message."""

MOCK_LLM_API_KEY = "groundeval-mock"
"""``OPENAI_API_KEY`` given to a spawned child routed to the mock provider (the mock ignores it)."""

LOG_TAIL_LINES = 30
"""Lines of the child's log quoted in a ``SpawnError``."""

URL_CONNECT_TIMEOUT_S = 5.0
"""Connect timeout of ``connect_url``'s single readiness check."""

_PLACEHOLDERS = ("port", "data_dir", "llm_url", "embed_url", "api_key")
"""Placeholder names substituted in spawn and setup commands (SPEC §3)."""


# --------------------------------------------------------------------------- errors


class TargetError(Exception):
    """A target operation could not be completed.

    Raised for a non-2xx status, a body that is not a JSON object, a response
    missing a required field or carrying a wrong type, a read timeout, or a
    dropped connection. The message names the call, the URL, the status (when
    one was received) and an excerpt of the body (at most 500 characters).

    Attributes:
        call: The operation, e.g. ``"POST /v1/generate"``.
        url: The full URL requested.
        status: The HTTP status received, or None when no response arrived.
        body_excerpt: At most 500 characters of the response body ("" if none).
    """

    def __init__(
        self,
        message: str,
        *,
        call: str = "",
        url: str = "",
        status: int | None = None,
        body_excerpt: str = "",
    ) -> None:
        super().__init__(message)
        self.call = call
        self.url = url
        self.status = status
        self.body_excerpt = body_excerpt


class TargetUnavailable(TargetError):
    """The target cannot be reached: connection refused, DNS failure or connect timeout.

    Every later call would fail the same way, so callers should stop calling
    the target after the first one (SPEC §3).
    """


class SpawnError(TargetUnavailable):
    """A spawned target failed: a setup command failed, or the child exited or never became ready.

    The message shows the command, the exit code (or that it is still running
    but not ready after N s) and the last lines of the child's log.

    Attributes:
        command: The command as run (placeholders substituted).
        exit_code: The child's exit code (negative: killed by that signal), or
            None when it is still running.
        log_tail: The last lines of the log (or of the setup command's output).
    """

    def __init__(
        self, message: str, *, command: str, exit_code: int | None, log_tail: str
    ) -> None:
        super().__init__(message, call="spawn", url="")
        self.command = command
        self.exit_code = exit_code
        self.log_tail = log_tail


# --------------------------------------------------------------------------- protocol


@runtime_checkable
class Target(Protocol):
    """The system under test: the REST contract of SPEC §3 as Python methods.

    Every argument and return value is a plain dict in wire shape (camelCase
    keys, JSON built-ins). ``HttpTarget`` implements it over HTTP; a user with an
    in-process pipeline implements it directly and returns it from an override
    of the ``groundeval_target`` fixture (SPEC §3 option 4). Methods raise
    ``TargetError`` (or ``TargetUnavailable``) when an operation cannot be
    completed.
    """

    def info(self) -> dict | None:
        """Return the model lineage, or None when the target does not say.

        Returns:
            ``{"models": {"generate": str, "embed": str}}`` (``GET /v1/info``), or
            None when unsupported (HTTP 404).
        """
        ...

    def ingest(self, document: dict) -> dict:
        """Store one corpus document (``POST /v1/documents``); idempotent on name and hash.

        Args:
            document: ``{"name": str, "label": str, "format": "json" | "text",
                "contentHash": str, "content": list | dict | str}`` — ``content``
                is the JSON records or the text.

        Returns:
            ``{"documentId": str | int, "txStart": int}`` (ms since the epoch).
            The same name and hash again returns the same ``documentId``.
        """
        ...

    def generate(self, question: str, find: str | None) -> dict:
        """Answer a question from the stored corpus (``POST /v1/generate``).

        Args:
            question: The question text.
            find: The corpus label to restrict retrieval to, or None for all.

        Returns:
            ``{"answer": str, "traceId": str, "evidence": [{"marker": "S1",
            "document": name, "start": int, "end": int}], "claims": [{"text": str,
            "start": int, "end": int, "markers": ["S1"], "verdict": str}],
            "usage": {"promptTokens": int, "completionTokens": int}}``. Claim
            offsets are UTF-8 byte offsets into ``answer``; evidence offsets into
            the document's canonical text (SPEC §2); ``verdict`` is one of
            ``contract.VERDICTS``.
        """
        ...

    def records(self, step: dict) -> dict:
        """Write one bitemporal record change (``POST /v1/records``, SPEC §6).

        Args:
            step: ``{"op": "create" | "update" | "delete", "target": id | None,
                "label": str, "properties": dict, "validTime": {"start": str,
                "end": str | None}}`` (valid times RFC 3339).

        Returns:
            ``{"id": str | int, "txStart": int}`` (ms since the epoch).
        """
        ...

    def query(self, body: dict) -> dict:
        """Read records as of a transaction and valid time (``POST /v1/query``).

        Args:
            body: ``{"label": str, "target": id | None, "asOfTx": int | None,
                "asOfValid": str | None}``.

        Returns:
            ``{"records": [{"id", "label", "properties", "validTime", "txStart",
            "txEnd"}]}``.
        """
        ...

    def compare(self, body: dict) -> dict:
        """Diff records between two transaction times (``POST /v1/compare``).

        Args:
            body: ``{"target": id | None, "label": str, "fromTx": int, "toTx": int}``.

        Returns:
            ``{"added": [record], "removed": [record], "changed": [{"id",
            "before", "after"}]}``.
        """
        ...

    def close(self) -> None:
        """Release the target's resources (connections, files)."""
        ...


# --------------------------------------------------------------------------- validation


def _excerpt(text: str) -> str:
    if len(text) <= BODY_EXCERPT_CHARS:
        return text
    return text[: BODY_EXCERPT_CHARS - 1] + "…"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _require(body: Mapping, key: str, path: str, kind: str) -> Any:
    """Return ``body[key]`` after checking its kind; raise ValueError naming ``path`` otherwise."""
    where = f"{path}.{key}" if path else key
    if key not in body:
        raise ValueError(f"missing required field {where!r}")
    value = body[key]
    checks = {
        "str": isinstance(value, str),
        "int": _is_int(value),
        "list": isinstance(value, list),
        "object": isinstance(value, dict),
        "id": isinstance(value, str) or _is_int(value),
    }
    if not checks[kind]:
        raise ValueError(f"field {where!r} must be {_KIND_NAMES[kind]}, got {value!r:.80}")
    return value


_KIND_NAMES = {
    "str": "a string",
    "int": "an integer",
    "list": "a list",
    "object": "an object",
    "id": "a string or an integer",
}


def check_generate_response(body: dict) -> None:
    """Check a generate response against SPEC §3; raise ValueError naming the first bad field.

    Used by ``HttpTarget`` and, for in-process ``Target`` objects, by the item runner.
    """
    _require(body, "answer", "", "str")
    for i, item in enumerate(_require(body, "evidence", "", "list")):
        where = f"evidence[{i}]"
        if not isinstance(item, dict):
            raise ValueError(f"field {where!r} must be an object, got {item!r:.80}")
        _require(item, "marker", where, "str")
        _require(item, "document", where, "str")
        _require(item, "start", where, "int")
        _require(item, "end", where, "int")
    for i, claim in enumerate(_require(body, "claims", "", "list")):
        where = f"claims[{i}]"
        if not isinstance(claim, dict):
            raise ValueError(f"field {where!r} must be an object, got {claim!r:.80}")
        _require(claim, "text", where, "str")
        _require(claim, "start", where, "int")
        _require(claim, "end", where, "int")
        markers = _require(claim, "markers", where, "list")
        if not all(isinstance(m, str) for m in markers):
            raise ValueError(f"field '{where}.markers' must be a list of strings, got {markers!r:.80}")
        verdict = _require(claim, "verdict", where, "str")
        if verdict not in VERDICTS:
            raise ValueError(
                f"field '{where}.verdict' is {verdict!r}: expected one of {', '.join(VERDICTS)}"
            )
    trace_id = body.get("traceId")
    if trace_id is not None and not isinstance(trace_id, str):
        raise ValueError(f"field 'traceId' must be a string, got {trace_id!r:.80}")
    usage = body.get("usage")
    if usage is not None:
        if not isinstance(usage, dict):
            raise ValueError(f"field 'usage' must be an object, got {usage!r:.80}")
        for key in ("promptTokens", "completionTokens"):
            if usage.get(key) is not None:
                _require(usage, key, "usage", "int")


def _check_info(body: dict) -> None:
    models = _require(body, "models", "", "object")
    for key in ("generate", "embed"):
        if models.get(key) is not None:
            _require(models, key, "models", "str")


def _check_written(id_key: str) -> Any:
    def check(body: dict) -> None:
        _require(body, id_key, "", "id")
        _require(body, "txStart", "", "int")

    return check


def _check_query(body: dict) -> None:
    for i, record in enumerate(_require(body, "records", "", "list")):
        if not isinstance(record, dict):
            raise ValueError(f"field 'records[{i}]' must be an object, got {record!r:.80}")


def _check_compare(body: dict) -> None:
    for key in ("added", "removed", "changed"):
        _require(body, key, "", "list")


# --------------------------------------------------------------------------- HTTP target


def _decode_body(call: str, url: str, status: int, text: str, check: Any) -> dict:
    """Return the JSON object of a 2xx response after ``check``; raise ``TargetError`` otherwise.

    Shared by the sync (httpx) and async (aiohttp) paths, so both fail with the same words.
    """
    excerpt = _excerpt(text)

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
    """A ``Target`` reached over HTTP (SPEC §3 REST contract).

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

    def _call(self, method: str, path: str, body: dict | None, check: Any) -> dict:
        response = self._send(method, path, body)
        return self._decode(f"{method} {path}", response, check)

    # -- Target protocol

    def info(self) -> dict | None:
        """``GET /v1/info``: the model lineage, or None on HTTP 404 (see ``Target.info``).

        Raises:
            TargetError: any other non-2xx status or a malformed body.
        """
        response = self._send("GET", "/v1/info")
        if response.status_code == 404:
            return None
        return self._decode("GET /v1/info", response, _check_info)

    def ingest(self, document: dict) -> dict:
        """``POST /v1/documents`` (see ``Target.ingest``).

        Raises:
            TargetError: non-2xx, malformed JSON, or no ``documentId`` / integer ``txStart``.
        """
        return self._call("POST", "/v1/documents", document, _check_written("documentId"))

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
        response = self._send("POST", "/v1/generate", {"question": question, "find": find})
        latency_ms = (time.perf_counter() - started) * 1000.0
        return self._decode("POST /v1/generate", response, check_generate_response), latency_ms

    def records(self, step: dict) -> dict:
        """``POST /v1/records`` (see ``Target.records``).

        Raises:
            TargetError: non-2xx, malformed JSON, or no ``id`` / integer ``txStart``.
        """
        return self._call("POST", "/v1/records", step, _check_written("id"))

    def query(self, body: dict) -> dict:
        """``POST /v1/query`` (see ``Target.query``).

        Raises:
            TargetError: non-2xx, malformed JSON, or no ``records`` list.
        """
        return self._call("POST", "/v1/query", body, _check_query)

    def compare(self, body: dict) -> dict:
        """``POST /v1/compare`` (see ``Target.compare``).

        Raises:
            TargetError: non-2xx, malformed JSON, or ``added`` / ``removed`` / ``changed`` not lists.
        """
        return self._call("POST", "/v1/compare", body, _check_compare)

    def close(self) -> None:
        """Close the connection pools (the async one must be closed with ``aclose`` on its loop)."""
        self._client.close()

    # -- the same calls, async (aiohttp), for concurrent dispatch (issue 8)

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

    async def _acall(self, method: str, path: str, body: dict | None, check: Any) -> dict:
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
        return _decode_body(call, url, status, text, check)

    async def aingest(self, document: dict) -> dict:
        """Async ``ingest``."""
        return await self._acall("POST", "/v1/documents", document, _check_written("documentId"))

    async def agenerate(self, question: str, find: str | None) -> dict:
        """Async ``generate``."""
        return await self._acall("POST", "/v1/generate", {"question": question, "find": find}, check_generate_response)

    async def arecords(self, step: dict) -> dict:
        """Async ``records``."""
        return await self._acall("POST", "/v1/records", step, _check_written("id"))

    async def aquery(self, body: dict) -> dict:
        """Async ``query``."""
        return await self._acall("POST", "/v1/query", body, _check_query)

    async def acompare(self, body: dict) -> dict:
        """Async ``compare``."""
        return await self._acall("POST", "/v1/compare", body, _check_compare)

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
        """Poll ``GET /readyz`` until it answers 200 (SPEC §3).

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
    """Return an ``HttpTarget`` for an already running server, checked once (SPEC §3 option 3).

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


# --------------------------------------------------------------------------- spawning


def reference_command() -> str:
    """Return the spawn command of the embedded reference server (SPEC §3 option 1, §7).

    The command carries ``{port}`` and ``{data_dir}`` placeholders; the server
    reads the provider URLs and the bootstrap key from the ``GROUNDEVAL_*``
    environment the spawn machinery sets.
    """
    return f"{shlex.quote(sys.executable)} -m pytest_groundeval.reference --port {{port}} --data-dir {{data_dir}}"


@dataclass
class SpawnConfig:
    """How to spawn a target (SPEC §3 option 2).

    ``command`` and every ``setup`` command (and every ``env`` value) may use the
    placeholders ``{port}``, ``{data_dir}``, ``{llm_url}``, ``{embed_url}`` and
    ``{api_key}``; only those exact names are replaced (values are inserted
    verbatim, not shell-quoted), so other braces in a shell command survive.
    """

    command: str
    """Shell command that starts the target server; it must listen on ``{port}``."""
    setup: list[str] = field(default_factory=list)
    """Shell commands run in order before ``command``; a non-zero exit stops the spawn."""
    ready_timeout_s: float = 60.0
    """Seconds to wait for ``GET /readyz`` to answer 200."""
    env: dict[str, str] = field(default_factory=dict)
    """Extra environment for setup and the child, over ``os.environ`` (the ``GROUNDEVAL_*`` values win)."""
    llm_url: str | None = None
    """OpenAI-style chat base URL ending in ``/v1`` (the mock's); also ``OPENAI_BASE_URL``."""
    embed_url: str | None = None
    """OpenAI-style embeddings base URL ending in ``/v1``."""
    workdir: str | Path | None = None
    """Working directory of setup and the child; None: the current one."""
    worker_id: str = "master"
    """xdist worker id (``gw0``…) or ``master``; part of the data dir's name."""
    base_dir: str | Path | None = None
    """Where the data dir is created (e.g. from ``tmp_path_factory``); None: the system temp dir."""
    llm_api_key: str | None = MOCK_LLM_API_KEY
    """``OPENAI_API_KEY`` for the child; None leaves the inherited value alone."""
    timeout_s: float = 60.0
    """Per-call timeout of the resulting ``HttpTarget``, in seconds."""
    setup_timeout_s: float = 600.0
    """Seconds one setup command may run before it is killed and the spawn fails."""
    terminate_grace_s: float = 5.0
    """Seconds between SIGTERM and SIGKILL at teardown."""


def describe_exit(returncode: int) -> str:
    """Return ``"exit code N"``, or ``"killed by SIGNAME (exit code -N)"`` for a signal death."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by {name} (exit code {returncode})"
    return f"exit code {returncode}"


def _free_loopback_port() -> int:
    # Another process may take the port between close and the child's bind;
    # the child then fails to start and the SpawnError shows its log.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _tail(text: str, n: int) -> str:
    return "\n".join(text.splitlines()[-n:])


def _indent(text: str) -> str:
    return "\n".join(f"    {line}" for line in text.splitlines()) or "    (empty)"


def _kill_group(process: subprocess.Popen, sig: int) -> None:
    """Send ``sig`` to the child's whole process group (the child leads its own session)."""
    if os.name == "posix":
        try:
            os.killpg(process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
    elif process.poll() is None:
        # Without process groups (Windows) only the child itself can be signalled.
        if sig == signal.SIGTERM:
            process.terminate()
        else:
            process.kill()


_WATCHDOG = """
import os, signal, sys, time
pgid, grace = int(sys.argv[1]), float(sys.argv[2])
sys.stdin.buffer.read()  # returns when the harness closes the pipe, or dies

def alive():
    try:
        os.killpg(pgid, 0)
        return True
    except OSError:
        return False

if alive():
    try:
        os.killpg(pgid, signal.SIGTERM)
    except OSError:
        pass
    deadline = time.monotonic() + grace
    while alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
"""
"""Ends a spawned target's process group when the harness goes away without tearing down.

pytest killed by SIGTERM or SIGKILL (a cancelled CI job, a crashed xdist worker)
runs no fixture teardown, and the target, in a session of its own, would live on
as an orphan. The watchdog holds the read end of a pipe whose write end only the
harness holds; when the harness exits, however it exits, the read returns and the
watchdog terminates the group as ``stop`` would."""


def _start_watchdog(pgid: int, grace_s: float) -> subprocess.Popen | None:
    if os.name != "posix":
        return None
    return subprocess.Popen(
        [sys.executable, "-c", _WATCHDOG, str(pgid), str(grace_s)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _stop_watchdog(watchdog: subprocess.Popen | None) -> None:
    """Release the watchdog after a normal teardown (the group is already gone)."""
    if watchdog is None:
        return
    try:
        watchdog.stdin.close()
        watchdog.wait(timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        watchdog.kill()
        watchdog.wait()


def _new_group_kwargs() -> dict[str, Any]:
    if os.name == "posix":
        return {"start_new_session": True}
    return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}  # type: ignore[attr-defined]


class SpawnedTarget:
    """A target server run as a child process for one session (SPEC §3 options 1 and 2).

    On ``start`` (or entering the ``with`` block): makes a fresh data dir named
    after the worker id, picks a free loopback port, makes a fresh random API
    key, substitutes the placeholders, runs the setup commands in order, starts
    the command in its own process group with stdout and stderr going to
    ``<data_dir>/target.log``, and waits for ``GET /readyz`` to answer 200.
    The child's environment is ``os.environ`` plus ``config.env`` plus
    ``GROUNDEVAL_PORT``, ``GROUNDEVAL_DATA_DIR``, ``GROUNDEVAL_LLM_URL``,
    ``GROUNDEVAL_EMBED_URL``, ``GROUNDEVAL_API_KEY``, ``OPENAI_BASE_URL`` (the
    LLM URL) and ``OPENAI_API_KEY`` (``config.llm_api_key``). The data dir is
    kept after teardown so the log can be read.

    On ``stop`` (or leaving the block), always: SIGTERM to the process group,
    up to ``terminate_grace_s`` for every process in it to exit, SIGKILL to
    what is left (so a stray grandchild never outlives the session), close the
    log.

    Attributes:
        target: The ``HttpTarget`` for the child, using the fresh key.
        base_url: ``http://127.0.0.1:<port>``.
        api_key: The fresh key (also in ``{api_key}`` and ``GROUNDEVAL_API_KEY``).
        port: The loopback port.
        data_dir: The fresh data directory.
        log_path: ``<data_dir>/target.log``: setup output, then the child's output.
        process: The child ``Popen`` (None before ``start``).
        command: The command as run, placeholders substituted.

    Raises (from ``start``):
        SpawnError: a setup command failed or timed out, or the child exited or
            was not ready within ``ready_timeout_s``.
        ValueError: a command uses ``{llm_url}`` / ``{embed_url}`` and the
            config has no value for it.
    """

    def __init__(self, config: SpawnConfig) -> None:
        self.config = config
        self.port: int = 0
        self.api_key: str = ""
        self.base_url: str = ""
        self.data_dir: Path = Path()
        self.log_path: Path = Path()
        self.command: str = ""
        self.process: subprocess.Popen | None = None
        self._target: HttpTarget | None = None
        self._log: IO[bytes] | None = None
        self._watchdog: subprocess.Popen | None = None

    def __enter__(self) -> SpawnedTarget:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def target(self) -> HttpTarget:
        """The ``HttpTarget`` for the running child."""
        if self._target is None:
            raise RuntimeError("SpawnedTarget.target used before start()")
        return self._target

    # -- start

    def start(self) -> SpawnedTarget:
        """Set up, start and wait for the child; see the class docstring. Returns self."""
        if self.process is not None:
            raise RuntimeError("SpawnedTarget.start() called twice")
        config = self.config
        worker = re.sub(r"[^A-Za-z0-9_-]", "_", config.worker_id) or "master"
        base_dir = str(config.base_dir) if config.base_dir is not None else None
        self.data_dir = Path(tempfile.mkdtemp(prefix=f"groundeval-{worker}-", dir=base_dir))
        self.log_path = self.data_dir / "target.log"
        self.port = _free_loopback_port()
        # A prefix keeps the key from starting with "-", which argument parsers read as a flag.
        self.api_key = f"ge_{secrets.token_urlsafe(24)}"
        self.base_url = f"http://127.0.0.1:{self.port}"
        values = self._placeholder_values()
        self.command = self._fill(config.command, values)
        setup = [self._fill(cmd, values) for cmd in config.setup]
        env = self._child_env(values)
        self._log = open(self.log_path, "wb")
        try:
            for cmd in setup:
                self._run_setup(cmd, env)
            self._log.write(f"$ {self.command}\n".encode())
            self._log.flush()
            self.process = subprocess.Popen(
                self.command,
                shell=True,
                cwd=config.workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                **_new_group_kwargs(),
            )
            self._watchdog = _start_watchdog(self.process.pid, config.terminate_grace_s)
            self._target = HttpTarget(self.base_url, self.api_key, timeout_s=config.timeout_s)
            try:
                self._target.wait_ready(config.ready_timeout_s, process=self.process)
            except TargetUnavailable as exc:
                raise self._spawn_error(f"the target did not become ready: {exc}") from exc
        except BaseException:
            self.stop()
            raise
        return self

    def _placeholder_values(self) -> dict[str, str | None]:
        return {
            "port": str(self.port),
            "data_dir": str(self.data_dir),
            "llm_url": self.config.llm_url,
            "embed_url": self.config.embed_url,
            "api_key": self.api_key,
        }

    @staticmethod
    def _fill(command: str, values: Mapping[str, str | None]) -> str:
        for name in _PLACEHOLDERS:
            token = "{" + name + "}"
            if token not in command:
                continue
            value = values[name]
            if value is None:
                raise ValueError(
                    f"the command {command!r} uses {token} but no value is configured for it"
                )
            command = command.replace(token, value)
        return command

    def _child_env(self, values: Mapping[str, str | None]) -> dict[str, str]:
        env = dict(os.environ)
        env.update({key: self._fill(value, values) for key, value in self.config.env.items()})
        harness = {
            "GROUNDEVAL_PORT": values["port"],
            "GROUNDEVAL_DATA_DIR": values["data_dir"],
            "GROUNDEVAL_LLM_URL": values["llm_url"],
            "GROUNDEVAL_EMBED_URL": values["embed_url"],
            "GROUNDEVAL_API_KEY": values["api_key"],
            "OPENAI_BASE_URL": values["llm_url"],
        }
        if values["llm_url"] is not None and self.config.llm_api_key is not None:
            harness["OPENAI_API_KEY"] = self.config.llm_api_key
        env.update({key: value for key, value in harness.items() if value is not None})
        return env

    def _run_setup(self, cmd: str, env: dict[str, str]) -> None:
        """Run one setup command to completion; its output goes to the log and, on failure, the error."""
        assert self._log is not None
        proc = subprocess.Popen(
            cmd,
            shell=True,
            cwd=self.config.workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            **_new_group_kwargs(),
        )
        try:
            output, _ = proc.communicate(timeout=self.config.setup_timeout_s)
            outcome = describe_exit(proc.returncode)
        except subprocess.TimeoutExpired:
            _kill_group(proc, getattr(signal, "SIGKILL", signal.SIGTERM))
            output, _ = proc.communicate()
            outcome = f"timed out after {self.config.setup_timeout_s:g} s"
        self._log.write(f"$ {cmd}\n".encode() + output)
        self._log.flush()
        if proc.returncode != 0 or outcome.startswith("timed out"):
            tail = _tail(output.decode("utf-8", "replace"), LOG_TAIL_LINES)
            raise SpawnError(
                f"setup command failed ({outcome})\n  command: {cmd}\n"
                f"  output (last {LOG_TAIL_LINES} lines):\n{_indent(tail)}",
                command=cmd,
                exit_code=proc.returncode,
                log_tail=tail,
            )

    # -- state

    def is_alive(self) -> bool:
        """True while the child process is running."""
        return self.process is not None and self.process.poll() is None

    def log_tail(self, n: int = LOG_TAIL_LINES) -> str:
        """Return the last ``n`` lines of the log ("" when there is no log yet)."""
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except (OSError, ValueError):
            return ""
        return _tail(text, n)

    def ensure_alive(self) -> None:
        """Raise ``SpawnError`` (exit code and log tail) if the child has exited.

        Meant for a caller that just got ``TargetUnavailable`` mid-session: the
        child's death explains it better than a refused connection.
        """
        if self.process is not None and self.process.poll() is not None:
            raise self._spawn_error("the target process died")

    def _spawn_error(self, reason: str) -> SpawnError:
        assert self.process is not None
        code = self.process.poll()
        status = (
            describe_exit(code)
            if code is not None
            else f"still running, not ready after {self.config.ready_timeout_s:g} s"
        )
        if self._log is not None:
            self._log.flush()
        tail = self.log_tail(LOG_TAIL_LINES)
        return SpawnError(
            f"{reason}\n  command: {self.command}\n  status: {status}\n"
            f"  log {self.log_path} (last {LOG_TAIL_LINES} lines):\n{_indent(tail)}",
            command=self.command,
            exit_code=code,
            log_tail=tail,
        )

    # -- teardown

    def stop(self) -> None:
        """Terminate the child's process group, kill what remains, close the client and log.

        SIGTERM goes to the whole group; the group then has ``terminate_grace_s``
        to exit (all of it, since ``sh -c`` may have left the server as the
        shell's child) before SIGKILL ends every process left in it. Safe to
        call more than once and after a failed ``start``.
        """
        try:
            if self.process is not None:
                _terminate_group(self.process, self.config.terminate_grace_s)
        finally:
            _stop_watchdog(self._watchdog)
            self._watchdog = None
            if self._target is not None:
                self._target.close()
            if self._log is not None:
                self._log.close()
                self._log = None


def _terminate_group(process: subprocess.Popen, grace_s: float) -> None:
    """SIGTERM the child's group, wait up to ``grace_s`` for it to empty, SIGKILL the rest, reap."""
    if os.name != "posix":
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                process.kill()
        process.wait()
        return
    _kill_group(process, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        process.poll()
        if not _group_alive(process.pid):
            break
        time.sleep(0.05)
    _kill_group(process, signal.SIGKILL)
    process.wait()


def _group_alive(pgid: int) -> bool:
    """True while any process of group ``pgid`` is running (zombies count as gone).

    Zombies must not count: in containers whose init does not reap, an exited
    grandchild stays a zombie in the group forever.
    """
    if not os.path.isdir("/proc/self"):
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    with os.scandir("/proc") as entries:
        pids = [entry.name for entry in entries if entry.name.isdigit()]
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # After the command name: state, ppid, pgrp, ...
        if int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False


# --------------------------------------------------------------------------- temporal items (SPEC §6)

_SAVE_REF = re.compile(r"^\$(tx|id):(.*)$", re.DOTALL)
_OFFSET = re.compile(r"^(.+)([+-])(\d+)$", re.DOTALL)


def substitute(value: Any, saves: Mapping[str, Mapping[str, Any]]) -> Any:
    """Replace ``$tx:`` / ``$id:`` references to saved setup steps (SPEC §6).

    Strings of the form ``$tx:<save>`` become the saved step's ``txStart`` (an
    int, ms since the epoch), ``$tx:<save>+N`` / ``$tx:<save>-N`` that plus or
    minus N ms, and ``$id:<save>`` the saved step's ``id``. Dicts (values only)
    and lists are walked recursively; other values are returned unchanged. A
    save name that itself ends in ``-N`` / ``+N`` is matched whole first.

    Args:
        value: A probe or step, or any part of one.
        saves: Save name → the ``POST /v1/records`` response captured under
            it, ``{"id": ..., "txStart": int}``.

    Returns:
        A new value with every reference replaced (the input is not modified).

    Raises:
        ValueError: a reference names an unknown save, an offset is malformed,
            or the saved response lacks ``id`` / ``txStart``.
    """
    if isinstance(value, dict):
        return {key: substitute(item, saves) for key, item in value.items()}
    if isinstance(value, list):
        return [substitute(item, saves) for item in value]
    if not isinstance(value, str):
        return value
    match = _SAVE_REF.match(value)
    if match is None:
        return value
    kind, ref = match.groups()
    if kind == "id":
        return _saved(saves, ref, "id", value)
    if ref in saves:
        name, offset = ref, 0
    else:
        offset_match = _OFFSET.match(ref)
        if offset_match is None:
            raise ValueError(f"{value!r} refers to an unknown save {ref!r} (known: {_known(saves)})")
        name, sign, digits = offset_match.groups()
        offset = int(digits) if sign == "+" else -int(digits)
    tx_start = _saved(saves, name, "txStart", value)
    if not _is_int(tx_start):
        raise ValueError(f"{value!r}: save {name!r} has a txStart that is not an integer: {tx_start!r}")
    return tx_start + offset


def _known(saves: Mapping[str, Any]) -> str:
    return ", ".join(repr(name) for name in saves) or "none"


def _saved(saves: Mapping[str, Mapping[str, Any]], name: str, key: str, ref: str) -> Any:
    if name not in saves:
        raise ValueError(f"{ref!r} refers to an unknown save {name!r} (known: {_known(saves)})")
    if key not in saves[name]:
        raise ValueError(f"{ref!r}: the response saved as {name!r} has no {key!r}")
    return saves[name][key]


def namespace_label(label: str, run_id: str, item_id: str) -> str:
    """Return ``label`` with the per-run, per-item namespace suffix of SPEC §6.

    The suffix is ``contract.TEMPORAL_LABEL_SEPARATOR`` (``"__ge_"``) followed by
    the first 12 hex digits of BLAKE2b over ``run_id`` and ``item_id``, so each
    temporal item of each run sees only its own records, also under xdist and
    against a shared url target. The suffix holds only letters, digits and
    ``_``. The same (label, run, item) always gives the same result, so setup
    and probe labels agree.

    Example: ``namespace_label("TASK", "run-1", "tmp-update")`` →
    ``"TASK__ge_<12 hex digits>"``.
    """
    digest = hashlib.blake2b(f"{run_id}\x00{item_id}".encode(), digest_size=6).hexdigest()
    return f"{label}{TEMPORAL_LABEL_SEPARATOR}{digest}"
