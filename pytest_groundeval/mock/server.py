"""The aiohttp server of the mock provider and its start-up API (docs/mock.md).

:class:`MockProvider` runs the server on the caller's event loop;
``threaded.ThreadedMockProvider`` runs the same server in its own thread and loop,
for synchronous fixtures. Both keep a request log (:class:`RequestRecord`) of the
last ``log_limit`` requests in arrival order, running counts of every request and
its tokens, and a per-instance fault counter for ``x<N>`` faults.

The handler path is benchmarked (``benchmarks/bench_mock.py``): it parses with
plain ``json``, builds responses from dicts or prebuilt byte templates, and
keeps validation to what a client can get wrong.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import xxhash
from aiohttp import web

from pytest_groundeval.core import contract
from pytest_groundeval.mock import behaviour, reply_shapes
from pytest_groundeval.mock import citation_judge as judge_behaviour
from pytest_groundeval.mock.faults import FaultCounter, FaultPlan, FaultSpecError, parse_fault_spec, split_model
from pytest_groundeval.mock.noise import NO_NOISE, NoiseSettings, noised_answer, parse_attempt
from pytest_groundeval.mock.sse import DONE_EVENT, ChunkFramer, content_pieces, dumps

CREATED = 1_700_000_000
"""The fixed ``created`` timestamp of every response (seconds since the epoch), for reproducibility."""

MOCK_MODELS = (
    "mock-generate",
    "mock-decompose",
    "mock-embed",
    "mock-score",
    "mock-judge",
    "mock-judge-strict",
    "mock-questions",
)
"""Model ids listed by ``GET /v1/models``; any model name is accepted and echoed."""

DEFAULT_MODEL = "mock"
"""Model reported when a request names none."""

DEFAULT_LOG_LIMIT = 10_000
"""Requests the log keeps by default, the most recent (~330 bytes each: a few MB at most, docs/mock.md)."""

CLIENT_CLOSED_STATUS = 499
"""Status recorded (never sent) when the client went away mid-response, as nginx logs it."""

SCORE_SHAPE_HEADER = "X-Groundeval-Score-Shape"
"""Request header: ``list`` makes ``/score`` answer a bare list ``[{"index", "score"}]`` (docs/mock.md)."""

_JSON_CT = "application/json"
_SSE_HEADERS = {"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"}
_ERROR_TYPES = {400: "invalid_request_error", 429: "rate_limit_error", 500: "server_error"}
_NO_QUOTA = "You exceeded your current quota (injected by fault {spec!r}): check the plan and billing details"


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One request the mock answered, as kept in the request log (docs/mock.md)."""

    path: str
    """Request path, e.g. ``/v1/chat/completions``."""
    kind: str
    """``chat``, ``chat_stream``, ``decompose``, ``judge``, ``questions``, ``embeddings``, ``score``, ``rerank`` or ``models``."""
    model: str
    """Model name from the request, without any ``+fault=`` suffix."""
    prompt_tokens: int
    """Prompt tokens by the mock's rule (:func:`behaviour.count_tokens`)."""
    completion_tokens: int
    """Completion tokens by the same rule (0 for embeddings, score and errors)."""
    latency_ms: float
    """Server-side milliseconds from reading the request to the end of the response (or the fault)."""
    status: int
    """HTTP status sent; 499 when the client disconnected before the response ended."""
    fault: str | None
    """The fault spec the request carried, or ``None``."""
    noise: str | None = None
    """What seeded noise changed in a generation (``drop S1->S2``, ``number 1844->1849``), or ``None``."""


class _BadRequest(Exception):
    """A request a client got wrong; becomes a 400 with an OpenAI-style error body."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


def error_body(
    status: int, message: str, param: str | None = None, *, kind: str | None = None, code: str | None = None
) -> bytes:
    """OpenAI-style error body: ``{"error": {"message", "type", "param", "code"}}``; ``kind`` overrides the type."""
    error_type = kind or _ERROR_TYPES.get(status, "api_error")
    return dumps({"error": {"message": message, "type": error_type, "param": param, "code": code}}).encode()


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _parse_json(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise _BadRequest(f"request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise _BadRequest("request body must be a JSON object")
    if _SURROGATE_ESCAPE.search(raw):
        # JSON may escape a lone surrogate ("\ud800"), which no UTF-8 reply can carry;
        # escaped pairs (emoji) decode to one character and pass.
        try:
            json.dumps(body, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise _BadRequest("request body contains a lone UTF-16 surrogate escape (\\ud800-\\udfff)") from None
    return body


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


class _Call:
    """Bookkeeping of one request: what goes into its :class:`RequestRecord`.

    The log keeps finished calls and makes records only when it is read, which
    keeps a frozen dataclass construction off every request's path.
    """

    __slots__ = (
        "path", "kind", "model", "prompt_tokens", "completion_tokens", "status", "fault", "started", "seq",
        "latency_ms", "noise",
    )  # fmt: skip

    def __init__(self, path: str, kind: str, seq: int) -> None:
        self.path = path
        self.kind = kind
        self.model = DEFAULT_MODEL
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.status = 200
        self.fault: str | None = None
        self.started = time.perf_counter()
        self.seq = seq
        self.latency_ms = 0.0
        self.noise: str | None = None

    def finish(self) -> None:
        self.latency_ms = (time.perf_counter() - self.started) * 1000.0

    def record(self) -> RequestRecord:
        return RequestRecord(
            self.path,
            self.kind,
            self.model,
            self.prompt_tokens,
            self.completion_tokens,
            self.latency_ms,
            self.status,
            self.fault,
            self.noise,
        )


class MockProvider:
    """The deterministic OpenAI-compatible mock provider, served by aiohttp on the running loop.

    Use as ``async with MockProvider() as mock:``; ``mock.base_url`` is the
    OpenAI-style base URL (``http://127.0.0.1:PORT/v1``).

    Args:
        host: Interface to bind (loopback by default).
        port: Port to bind; 0 picks a free one.
        shutdown_timeout: Seconds :meth:`stop` waits for in-flight requests before cancelling them.
        log_limit: How many finished requests :attr:`log` keeps, the most recent; older ones
            are dropped but still counted by :attr:`requests_total` and :meth:`tokens_total`.
            0 keeps none; ``None`` keeps every one (memory grows ~330 bytes per request).
        noise: Seeded noise on generations (docs/mock.md, "Noise"); off by default. The
            attribute :attr:`noise` may be replaced while serving: later requests use the new one.

    Raises:
        ValueError: ``log_limit`` is negative or not an int.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        shutdown_timeout: float = 1.0,
        log_limit: int | None = DEFAULT_LOG_LIMIT,
        noise: NoiseSettings = NO_NOISE,
    ) -> None:
        if log_limit is not None and (not isinstance(log_limit, int) or isinstance(log_limit, bool) or log_limit < 0):
            raise ValueError(f"log_limit must be a non-negative int or None, not {log_limit!r}")
        self.host = host
        self.port = port
        self.log_limit = log_limit
        self.noise = noise
        self._shutdown_timeout = shutdown_timeout
        self._runner: web.AppRunner | None = None
        self._records: deque[_Call] = deque(maxlen=log_limit)  # the last finished calls, in finishing order
        self._requests_total = 0
        self._tokens: dict[str, int] = {}  # kind -> prompt + completion tokens of every finished call
        self._seq = 0
        self._lock = threading.Lock()
        self._faults = FaultCounter()
        # Handler tasks in flight: aiohttp's shutdown only waits for (and never
        # cancels) a handler whose client hung up, so stop() ends them itself.
        self._in_flight: set[asyncio.Task[Any]] = set()

    # ---- lifecycle -------------------------------------------------------

    def build_app(self) -> web.Application:
        """The aiohttp application with every mock route (also usable with ``aiohttp.test_utils``)."""
        app = web.Application()
        for prefix in ("", "/v1"):
            app.router.add_post(prefix + "/chat/completions", self._chat)
            app.router.add_post(prefix + "/embeddings", self._embeddings)
            app.router.add_post(prefix + "/score", self._score)
            app.router.add_post(prefix + "/rerank", self._rerank)
            app.router.add_get(prefix + "/models", self._models)
        return app

    async def start(self) -> None:
        """Bind and start serving; sets :attr:`port` to the bound port.

        Raises:
            RuntimeError: Already started.
            OSError: The address cannot be bound.
        """
        if self._runner is not None:
            raise RuntimeError("MockProvider already started")
        runner = web.AppRunner(
            self.build_app(), access_log=None, handle_signals=False, shutdown_timeout=self._shutdown_timeout
        )
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.host, self.port)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self.port = runner.addresses[0][1]

    async def stop(self) -> None:
        """Stop serving. Idempotent.

        The listening socket closes first; requests in flight then get up to
        ``shutdown_timeout`` seconds to finish, and those still running (a
        ``delay:`` fault, whether or not its client is still there) are
        cancelled and awaited, and logged with status 499. When this returns
        no handler task is left pending in the loop.
        """
        runner, self._runner = self._runner, None
        if runner is None:
            return
        for site in list(runner.sites):
            await site.stop()
        await asyncio.sleep(0)  # let requests accepted just now reach their handler
        await self._end_in_flight(self._shutdown_timeout)
        await runner.cleanup()
        await self._end_in_flight(0)  # a handler that started while the connections closed

    async def _end_in_flight(self, timeout: float) -> None:
        """Wait up to ``timeout`` s for in-flight requests, then cancel and await the rest."""
        tasks = [task for task in self._in_flight if not task.done()]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=timeout)
            for task in pending:
                task.cancel()
            # Awaited, not just cancelled: a task destroyed while pending makes asyncio
            # print "Task was destroyed but it is pending!" when its loop closes.
            await asyncio.gather(*pending, return_exceptions=True)
        self._in_flight.clear()
        await asyncio.sleep(0)  # let each connection task see its handler's end

    async def __aenter__(self) -> MockProvider:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    # ---- what the session reads -------------------------------------------

    @property
    def root_url(self) -> str:
        """``http://HOST:PORT`` of the running server."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def base_url(self) -> str:
        """OpenAI-style base URL ``http://HOST:PORT/v1`` (docs/target-contract.md ``{llm_url}``)."""
        return self.root_url + "/v1"

    @property
    def log(self) -> list[RequestRecord]:
        """A copy of the request log, in arrival order (requests still in flight are not in it).

        At most ``log_limit`` records: the requests that finished last.
        """
        with self._lock:
            calls = sorted(self._records, key=lambda call: call.seq)
        return [call.record() for call in calls]

    @property
    def requests_total(self) -> int:
        """Finished requests since start or the last :meth:`clear_log`, including those the log dropped."""
        with self._lock:
            return self._requests_total

    def clear_log(self) -> None:
        """Empty the request log and zero :attr:`requests_total` and :meth:`tokens_total`.

        Fault counters are kept; see :meth:`reset_faults`.
        """
        with self._lock:
            self._records.clear()
            self._requests_total = 0
            self._tokens.clear()

    def reset_faults(self) -> None:
        """Forget the ``x<N>`` fault counters, so those faults fire again, and the ``conc:``/``rate:`` counts."""
        self._faults.reset()

    def limit_stats(self, spec: str) -> dict[str, int]:
        """Requests with the ``conc:``/``rate:`` fault ``spec`` admitted and refused (429), and the most in
        flight at once: ``{"admitted", "rejected", "peak_in_flight"}`` (docs/mock.md)."""
        return self._faults.limit_stats(spec)

    def tokens_total(self, kind: str | None = None) -> int:
        """Prompt plus completion tokens of every finished request, optionally only of one ``kind``.

        A running count since start or the last :meth:`clear_log`: exact whatever the log dropped.
        """
        with self._lock:
            return sum(self._tokens.values()) if kind is None else self._tokens.get(kind, 0)

    # ---- request plumbing -------------------------------------------------

    def _begin(self, request: web.Request, kind: str) -> _Call:
        with self._lock:
            self._seq += 1
            seq = self._seq
        return _Call(request.path, kind, seq)

    def _finish(self, call: _Call) -> None:
        call.finish()
        with self._lock:
            self._records.append(call)
            self._requests_total += 1
            self._tokens[call.kind] = self._tokens.get(call.kind, 0) + call.prompt_tokens + call.completion_tokens

    def _fault_plan(self, request: web.Request, body: dict[str, Any], call: _Call) -> FaultPlan | None:
        """Read the model name and fault spec of a request into ``call``; parse the spec."""
        model = body.get("model", DEFAULT_MODEL)
        if not isinstance(model, str):
            raise _BadRequest("'model' must be a string", "model")
        model, suffix_spec = split_model(model)
        call.model = model
        spec = request.headers.get(contract.FAULT_HEADER) or suffix_spec
        if not spec:
            return None
        call.fault = spec.strip()
        try:
            return parse_fault_spec(spec)
        except FaultSpecError as exc:
            raise _BadRequest(str(exc), "model" if suffix_spec and spec is suffix_spec else None) from None

    async def _pre_fault(self, plan: FaultPlan | None) -> web.Response | None:
        """Apply the delay, then return the 429/500 response when that fault fires."""
        if plan is None:
            return None
        if plan.delay_ms:
            await asyncio.sleep(plan.delay_ms / 1000.0)
        if not self._faults.status_fires(plan):
            return None
        if plan.quota:
            # OpenAI's error codes guide: a 429 of type insufficient_quota, which waiting does not mend.
            message = _NO_QUOTA.format(spec=plan.spec)
            body = error_body(429, message, kind="insufficient_quota", code="insufficient_quota")
            return web.Response(status=429, body=body, content_type=_JSON_CT)
        if plan.status == 429:
            seconds = plan.retry_after_s
            headers = {
                "Retry-After": str(int(seconds)) if seconds == int(seconds) else repr(seconds),
                "retry-after-ms": str(int(seconds * 1000)),
            }
            return web.Response(
                status=429,
                body=error_body(429, f"Rate limit injected by fault {plan.spec!r}"),
                content_type=_JSON_CT,
                headers=headers,
            )
        return web.Response(
            status=500, body=error_body(500, f"Server error injected by fault {plan.spec!r}"), content_type=_JSON_CT
        )

    def _over_limit(self, plan: FaultPlan, wait: float | None) -> web.Response:
        """The 429 of a request over its ``conc:``/``rate:`` limit; a ``rate:`` one names the next window."""
        limit = f"conc:{plan.concurrency}" if plan.concurrency is not None else f"rate:{plan.rate}"
        headers = {}
        if wait is not None:
            headers = {"Retry-After": str(max(1, round(wait))), "retry-after-ms": str(max(1, int(wait * 1000)))}
        body = error_body(
            429, f"Rate limit ({limit}) reached, injected by fault {plan.spec!r}", code="rate_limit_exceeded"
        )
        return web.Response(status=429, body=body, content_type=_JSON_CT, headers=headers)

    async def _serve(
        self,
        request: web.Request,
        kind: str,
        respond: Callable[[web.Request, dict[str, Any], _Call, FaultPlan | None], Awaitable[web.StreamResponse]],
    ) -> web.StreamResponse:
        """Shared frame of the POST handlers: parse, faults, respond, record — whatever happens."""
        call = self._begin(request, kind)
        handler_task = asyncio.current_task()
        assert handler_task is not None  # aiohttp runs every handler in a task
        self._in_flight.add(handler_task)
        admitted: FaultPlan | None = None  # a conc: request to count out when it ends
        try:
            try:
                body = _parse_json(await request.read())
                plan = self._fault_plan(request, body, call)
            except _BadRequest as exc:
                call.status = 400
                return web.Response(status=400, body=error_body(400, str(exc), exc.param), content_type=_JSON_CT)
            if plan is not None:
                entered, wait = self._faults.admit(plan)
                if not entered:
                    call.status = 429
                    return self._over_limit(plan, wait)
                admitted = plan if plan.concurrency is not None else None
            faulted = await self._pre_fault(plan)
            if faulted is not None:
                call.status = faulted.status
                return faulted
            try:
                response = await respond(request, body, call, plan)
            except _BadRequest as exc:
                call.status = 400
                call.prompt_tokens = call.completion_tokens = 0
                return web.Response(status=400, body=error_body(400, str(exc), exc.param), content_type=_JSON_CT)
            call.status = response.status if call.status == 200 else call.status
            return response
        except asyncio.CancelledError:
            call.status = CLIENT_CLOSED_STATUS
            raise
        except Exception:
            call.status = 500  # aiohttp answers 500 and logs the bug
            raise
        finally:
            if admitted is not None:
                self._faults.leave(admitted)
            self._in_flight.discard(handler_task)
            self._finish(call)

    async def _send_json(
        self, request: web.Request, payload: bytes, call: _Call, plan: FaultPlan | None, content_type: str = _JSON_CT
    ) -> web.StreamResponse:
        """Send a JSON body (or another ``content_type``), honouring the ``malformed`` and ``cut`` faults."""
        if plan is not None and plan.malformed:
            payload = payload[: len(payload) // 2]
        if plan is None or not plan.cut:
            return web.Response(body=payload, content_type=content_type)
        response = web.StreamResponse(headers={"Content-Type": content_type})
        response.content_length = len(payload)
        try:
            await response.prepare(request)
            await response.write(payload[: len(payload) // 2])
        except ConnectionError:
            call.status = CLIENT_CLOSED_STATUS
        _close_transport(request)
        return response

    # ---- chat completions --------------------------------------------------

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, "chat", self._respond_chat)

    async def _respond_chat(
        self, request: web.Request, body: dict[str, Any], call: _Call, plan: FaultPlan | None
    ) -> web.StreamResponse:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise _BadRequest("'messages' must be a non-empty list of chat messages", "messages")
        stream = body.get("stream") is True
        refused = reply_shapes.refusal(plan.refusals, body, with_param=plan.refusal_param) if plan else None
        if refused is not None:
            call.status = 400
            return web.Response(status=400, body=dumps(refused).encode(), content_type=_JSON_CT)
        shape: str | None = None  # a judge reply's envelope fault
        decomposing = behaviour.is_decomposition(body)
        if decomposing:
            call.kind = "decompose"
            draft = behaviour.last_user_text(messages)
            content = dumps({"claims": behaviour.decompose(draft)})
        elif judge_behaviour.is_judge(body):
            call.kind = "judge"
            reply = self._faults.reply_fires(plan) if plan is not None else None
            content = judge_behaviour.judge_reply(messages, reply, call.model)
            shape = reply if reply in reply_shapes.ENVELOPE_FAULTS else None
        elif judge_behaviour.is_generation(body):
            call.kind = "questions"
            reply = self._faults.reply_fires(plan) if plan is not None else None
            content = judge_behaviour.generate_question(messages, reply)
        else:
            call.kind = "chat_stream" if stream else "chat"
            content = behaviour.generate_answer(messages)
            noise = self.noise
            if noise.probability:
                try:
                    attempt = parse_attempt(request.headers.get(contract.ATTEMPT_HEADER))
                except ValueError as exc:
                    raise _BadRequest(str(exc)) from None
                content, applied = noised_answer(messages, content, noise, attempt)
                call.noise = applied.describe() if applied is not None else None
        call.prompt_tokens = behaviour.prompt_tokens(messages)
        call.completion_tokens = behaviour.count_tokens(content)
        completion_id = "chatcmpl-" + xxhash.xxh3_64_hexdigest(await request.read())
        if stream:
            options = body.get("stream_options")
            include_usage = isinstance(options, dict) and options.get("include_usage") is True
            usage = _usage(call.prompt_tokens, call.completion_tokens) if include_usage else None
            framer = ChunkFramer(completion_id, CREATED, call.model)
            return await self._stream_chat(request, framer, content, usage, call, plan)
        if shape is not None:
            usage = _usage(call.prompt_tokens, call.completion_tokens)
            payload, content_type = reply_shapes.judge_body(completion_id, CREATED, call.model, content, usage, shape)
            return await self._send_json(request, payload, call, plan, content_type)
        return await self._send_json(request, _completion_body(completion_id, call, content), call, plan)

    async def _stream_chat(
        self,
        request: web.Request,
        framer: ChunkFramer,
        content: str,
        usage: dict[str, int] | None,
        call: _Call,
        plan: FaultPlan | None,
    ) -> web.StreamResponse:
        """Stream ``content`` as SSE chunk events; see :mod:`.sse` for the framing."""
        content_events = [framer.content_event(piece) for piece in content_pieces(content)]
        half = (len(content_events) + 1) // 2
        cut = plan is not None and plan.cut
        if plan is not None and plan.malformed:
            content_events.insert(half, framer.malformed_event())
        events = [framer.role_event()]
        if cut:
            events += content_events[:half]
            events.append(framer.cut_fragment())
        else:
            events += content_events
            events.append(framer.stop_event())
            if usage is not None:
                events.append(framer.usage_event(usage))
            events.append(DONE_EVENT)
        response = web.StreamResponse(headers=_SSE_HEADERS)
        try:
            await response.prepare(request)
            for event in events:
                await response.write(event)
        except ConnectionError:
            # The client went away mid-stream: normal for streaming clients, not an error.
            call.status = CLIENT_CLOSED_STATUS
            return response
        if cut:
            _close_transport(request)
        return response

    # ---- embeddings -------------------------------------------------------

    async def _embeddings(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, "embeddings", self._respond_embeddings)

    async def _respond_embeddings(
        self, request: web.Request, body: dict[str, Any], call: _Call, plan: FaultPlan | None
    ) -> web.StreamResponse:
        texts = _embedding_inputs(body.get("input"))
        encoding = body.get("encoding_format", "float")
        if encoding not in ("float", "base64"):
            raise _BadRequest(f'\'encoding_format\' must be "float" or "base64", got {encoding!r}', "encoding_format")
        # Per text, not joined: one CJK input then leaves the others on the fast count.
        call.prompt_tokens = sum(map(behaviour.count_tokens, texts))
        if encoding == "base64":
            # Base64 text needs no JSON escaping: each item is formatted straight into the body.
            items = [
                f'{{"object":"embedding","index":{index},"embedding":"'
                f'{base64.b64encode(behaviour.embed_bytes(text)).decode("ascii")}"}}'
                for index, text in enumerate(texts)
            ]
        else:
            items = [
                f'{{"object":"embedding","index":{index},"embedding":{dumps(behaviour.embed_text(text))}}}'
                for index, text in enumerate(texts)
            ]
        data = ",".join(items)
        tokens = call.prompt_tokens
        payload = (
            f'{{"object":"list","data":[{data}],"model":{dumps(call.model)},'
            f'"usage":{{"prompt_tokens":{tokens},"total_tokens":{tokens}}}}}'
        ).encode()
        return await self._send_json(request, payload, call, plan)

    # ---- score ------------------------------------------------------------

    async def _score(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, "score", self._respond_score)

    async def _respond_score(
        self, request: web.Request, body: dict[str, Any], call: _Call, plan: FaultPlan | None
    ) -> web.StreamResponse:
        pairs = _score_pairs(body.get("text_1"), body.get("text_2"))
        call.prompt_tokens = sum(behaviour.count_tokens(a) + behaviour.count_tokens(b) for a, b in pairs)
        if request.headers.get(SCORE_SHAPE_HEADER, "").strip().lower() == "list":
            # The bare-list shape of text-embeddings-inference style servers.
            listed = [{"index": i, "score": behaviour.score_logit(a, b)} for i, (a, b) in enumerate(pairs)]
            return await self._send_json(request, dumps(listed).encode(), call, plan)
        payload = dumps(
            {
                "id": "score-" + xxhash.xxh3_64_hexdigest(await request.read()),
                "object": "list",
                "created": CREATED,
                "model": call.model,
                "data": [
                    {"index": i, "object": "score", "score": behaviour.score_logit(a, b)}
                    for i, (a, b) in enumerate(pairs)
                ],
                "usage": _usage(call.prompt_tokens, 0),
            }
        ).encode()
        return await self._send_json(request, payload, call, plan)

    # ---- rerank -----------------------------------------------------------

    async def _rerank(self, request: web.Request) -> web.StreamResponse:
        return await self._serve(request, "rerank", self._respond_rerank)

    async def _respond_rerank(
        self, request: web.Request, body: dict[str, Any], call: _Call, plan: FaultPlan | None
    ) -> web.StreamResponse:
        query = body.get("query")
        if not isinstance(query, str):
            raise _BadRequest("'query' must be a string", "query")
        documents = _score_texts(body.get("documents"), "documents")
        call.prompt_tokens = behaviour.count_tokens(query) + sum(map(behaviour.count_tokens, documents))
        results: list[dict[str, Any]] = [
            {"index": i, "document": {"text": d}, "relevance_score": behaviour.score_logit(query, d)}
            for i, d in enumerate(documents)
        ]
        results.sort(key=lambda r: -r["relevance_score"])
        payload = dumps(
            {
                "id": "rerank-" + xxhash.xxh3_64_hexdigest(await request.read()),
                "model": call.model,
                "results": results,
                "usage": {"total_tokens": call.prompt_tokens},
            }
        ).encode()
        return await self._send_json(request, payload, call, plan)

    # ---- models -----------------------------------------------------------

    async def _models(self, request: web.Request) -> web.StreamResponse:
        call = self._begin(request, "models")
        try:
            data = [{"id": m, "object": "model", "created": CREATED, "owned_by": "groundeval"} for m in MOCK_MODELS]
            return web.Response(body=dumps({"object": "list", "data": data}).encode(), content_type=_JSON_CT)
        finally:
            self._finish(call)


_COMPLETION_BODY = (
    '{"id":%s,"object":"chat.completion","created":' + str(CREATED) + ',"model":%s,'
    '"choices":[{"index":0,"message":{"role":"assistant","content":%s,"refusal":null},'
    '"logprobs":null,"finish_reason":"stop"}],'
    '"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}'
)


def _completion_body(completion_id: str, call: _Call, content: str) -> bytes:
    """The non-streamed ``chat.completion`` object, formatted into a prebuilt template.

    The same bytes ``dumps`` of the object would give, without building and
    walking the nested dicts on every request.
    """
    prompt, completion = call.prompt_tokens, call.completion_tokens
    return (
        _COMPLETION_BODY
        % (dumps(completion_id), dumps(call.model), dumps(content), prompt, completion, prompt + completion)
    ).encode()


def _close_transport(request: web.Request) -> None:
    """Close the connection after what was written is flushed (the ``cut`` fault)."""
    transport = request.transport
    if transport is not None:
        transport.close()


def _embedding_inputs(value: Any) -> list[str]:
    """``input`` of an embeddings request as a list of strings.

    Raises:
        _BadRequest: Not a string or a non-empty list of strings (token-id arrays are not supported).
    """
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return value
    raise _BadRequest(
        "'input' must be a string or a non-empty list of strings (token-id arrays are not supported by the mock)",
        "input",
    )


def _score_texts(value: Any, field: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return value
    raise _BadRequest(f"'{field}' must be a string or a non-empty list of strings", field)


def _score_pairs(text_1: Any, text_2: Any) -> list[tuple[str, str]]:
    """Pair ``text_1`` with ``text_2`` as vLLM does: one side of length 1 is broadcast, else zip equal lengths.

    Raises:
        _BadRequest: A side is missing or malformed, or the lengths differ and neither is 1.
    """
    queries = _score_texts(text_1, "text_1")
    documents = _score_texts(text_2, "text_2")
    if len(queries) == 1:
        return [(queries[0], d) for d in documents]
    if len(documents) == 1:
        return [(q, documents[0]) for q in queries]
    if len(queries) != len(documents):
        raise _BadRequest(
            f"'text_1' ({len(queries)} texts) and 'text_2' ({len(documents)} texts) must have equal lengths "
            "or one of them a single text",
            "text_2",
        )
    return list(zip(queries, documents))
