"""The reference target's aiohttp application: routes, auth, errors, the answer pipeline.

Routes (docs/target-contract.md; ``docs/target-contract.md`` is the full contract):
``GET /readyz`` (no auth), and with ``Authorization: Bearer <key>`` (docs/target-contract.md:
a wrong or missing key is 401): ``GET /v1/info``, ``POST /v1/documents``,
``/v1/generate``, ``/v1/records``, ``/v1/query``, ``/v1/compare``.

Claim verification (``verify.verify_claims``: tokenising and aligning every
claim against its cited spans, pure-Python work that holds the GIL) runs in a
process pool of ``os.cpu_count()`` workers, one task per answer, so a large
answer being verified does not stall the event loop and every other request
with it (``benchmarks/bench_verify_latency.py``). The pool starts when it is
first worth its start-up (``verify_answer``): a short session of small answers
verifies them on the loop and never starts it.

Errors are JSON ``{"error": {"code", "message", "field"}}``: 400
``invalid_json``, 401 ``unauthorized``, 404 ``not_found``, 405
``method_not_allowed``, 422 ``validation_error``, 502 ``provider_error``, 500
``internal_error``.

``serve`` runs the application until SIGTERM/SIGINT and writes the bound port to
``<data-dir>/reference.port`` (``groundeval reference``, ``cli/reference.py``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import gc
import logging
import multiprocessing
import os
import signal
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
from aiohttp import web
from pydantic import BaseModel, ValidationError

from ..core import strict_json
from ..core.contract import ATTEMPT_HEADER, ITEM_ID_HEADER, RUN_ID_HEADER
from . import bitemporal, store
from .decompose import DECOMPOSITION_RESPONSE_FORMAT, decomposition_messages, parse_decomposition
from .models import CompareRequest, DocumentRequest, GenerateRequest, QueryRequest, RecordRequest
from .pool import pool_worker_init
from .provider import ProviderClient, ProviderError, ProviderSettings, Usage
from .retrieval import DEFAULT_TOP_K, canonical_document, generation_messages, new_chunks, rank_chunks
from .verify import ClaimCheck, verify_claims

log = logging.getLogger("pytest_groundeval.reference")

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class ReferenceConfig:
    """Everything the server needs to run (see ``cli`` for the flags and env variables)."""

    data_dir: Path
    """Holds ``reference.sqlite3`` (and ``reference.port`` once listening)."""
    llm_url: str
    """Provider base URL for chat completions (ends in ``/v1``)."""
    embed_url: str
    """Provider base URL for embeddings (ends in ``/v1``)."""
    model_generate: str = "mock-generate"
    """Chat model for generation and decomposition."""
    model_embed: str = "mock-embed"
    """Embedding model."""
    provider_api_key: str | None = None
    """Key sent to the provider."""
    bootstrap_api_key: str | None = None
    """Key accepted at start-up for the bootstrap tenant (``GROUNDEVAL_API_KEY``, docs/target-contract.md)."""
    provider_timeout_s: float = 30.0
    """Overall budget of one provider call, retries included."""
    provider_attempts: int = 3
    """Attempts per provider call for retryable failures."""
    top_k: int = DEFAULT_TOP_K
    """Evidence blocks per answer."""
    host: str = "127.0.0.1"
    """Interface to bind (loopback by default)."""
    port: int = 0
    """Port to bind; 0 picks a free one."""
    log_level: str = "INFO"
    """Python logging level name for the server log."""
    verify_executor: str = "process"
    """Where claims are verified: ``process`` (a process pool, the default), ``thread`` (a thread
    pool: off the loop, but the GIL still makes the loop wait) or ``inline`` (on the event loop,
    as before; for comparison in ``benchmarks/bench_verify_latency.py``). See :data:`VERIFY_EXECUTORS`."""
    verify_workers: int | None = None
    """Workers of the verification pool; None: ``os.cpu_count()``."""


@dataclass
class ServerState:
    """Per-app resources, created on startup and released on cleanup."""

    config: ReferenceConfig
    store: store.AsyncStore | None = None
    provider: ProviderClient | None = None
    ready: bool = False
    session: aiohttp.ClientSession | None = field(default=None, repr=False)
    verifier: concurrent.futures.Executor | None = field(default=None, repr=False)
    """The verification pool, made when first needed (``_start_pool``); None before that and for ``inline``."""
    warming: asyncio.Future[None] | None = field(default=None, repr=False)
    """The pool's start (``_warm`` on a thread), once ``verify_answer`` has asked for it."""
    inline_verify_s: float = 0.0
    """CPU seconds the loop has spent verifying small answers itself while the pool was not started."""


STATE = web.AppKey("state", ServerState)

VERIFY_EXECUTORS = ("process", "thread", "inline")
"""Values of ``ReferenceConfig.verify_executor``."""

SMALL_ANSWER_CHARS = 4_000
"""An answer whose claims and cited spans hold at most this many characters in all is small:
verifying it (about 1 ms per claim) costs the loop about what handing it to a pool worker does."""

INLINE_VERIFY_BUDGET_S = 0.5
"""CPU seconds of small answers the loop verifies itself before it starts the pool: about what
starting the pool costs (a forkserver importing the verifier, a resource tracker, the workers)."""


class ApiError(Exception):
    """An error answered as JSON ``{"error": {"code", "message", "field"}}`` with ``status``."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.field = status, code, message, field


def error_response(status: int, code: str, message: str, field: str | None = None) -> web.Response:
    """The JSON error body every failure uses."""
    return web.json_response({"error": {"code": code, "message": message, "field": field}}, status=status)


@web.middleware
async def call_log_middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Log every call with the harness's run and item ids, so the log joins back to the run history.

    One line per request: ``POST /v1/generate run=<X-Groundeval-Run-Id> item=<X-Groundeval-Item-Id>
    status=<code>`` (``-`` for a header the request did not carry; docs/target-contract.md).
    Readiness polls (``/readyz``) are not logged.
    """
    response = await handler(request)
    if request.path != "/readyz":
        log.info(
            "%s %s run=%s item=%s status=%s",
            request.method,
            request.path,
            request.headers.get(RUN_ID_HEADER, "-"),
            request.headers.get(ITEM_ID_HEADER, "-"),
            response.status,
        )
    return response


@web.middleware
async def error_middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Turn every failure into the JSON error shape; log unexpected ones."""
    try:
        return await handler(request)
    except ApiError as exc:
        return error_response(exc.status, exc.code, exc.message, exc.field)
    except ProviderError as exc:
        log.warning("provider error on %s: %s", request.path, exc)
        return error_response(502, "provider_error", str(exc))
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status, "http_error")
        return error_response(exc.status, code, f"{request.method} {request.path}: {exc.reason}")
    except Exception:
        log.exception("internal error on %s", request.path)
        return error_response(
            500, "internal_error", f"internal error while handling {request.path}; see the server log"
        )


# ------------------------------------------------------------------ helpers


def _state(request: web.Request) -> ServerState:
    return request.app[STATE]


def _store(request: web.Request) -> store.AsyncStore:
    state = _state(request)
    assert state.store is not None
    return state.store


def _provider(request: web.Request) -> ProviderClient:
    state = _state(request)
    assert state.provider is not None
    return state.provider


async def authenticate(request: web.Request) -> str:
    """The tenant of the request's bearer key.

    Raises:
        ApiError: 401 when the header is missing, not ``Bearer``, or the key is unknown.
    """
    header = request.headers.get("Authorization", "")
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise ApiError(401, "unauthorized", "missing API key: send 'Authorization: Bearer <key>'")
    tenant = await _store(request).run(store.tenant_for_key, key.strip())
    if tenant is None:
        raise ApiError(401, "unauthorized", "invalid API key")
    return tenant


def _field_path(loc: tuple[Any, ...]) -> str | None:
    parts = [str(p) for p in loc if p not in ("function-after", "function-before")]
    return ".".join(parts) or None


def parse_json_body(raw: bytes) -> Any:
    """Decode a request body; whatever a client sends is a 400 or a 422, never a 500.

    Refused as 422 ``validation_error`` naming the field (``strict_json``, the rules a
    manifest follows too): ``NaN``/``Infinity``, a number that overflows a float, an
    integer outside ±(2**53 − 1), a lone surrogate (it cannot be stored or answered
    as UTF-8), nesting too deep to decode.

    Raises:
        ApiError: 400 ``invalid_json`` when the body is not UTF-8 JSON; 422 as above.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError(
            400, "invalid_json", f"request body is not valid UTF-8 at byte {exc.start}: {exc.reason}"
        ) from None
    try:
        data = strict_json.NUMBERS_ONLY.decode(text)
    except strict_json.Refused as exc:
        raise _refused(text, str(exc)) from None
    except RecursionError:
        raise ApiError(422, "validation_error", "request body nests too deeply to decode") from None
    except ValueError as exc:
        raise ApiError(400, "invalid_json", f"request body is not valid JSON: {exc}") from None
    if "\\u" in text and strict_json.SURROGATE_ESCAPE.search(text):
        problem = strict_json.first_problem(text, len(text) - len(text.lstrip(" \t\r\n")), duplicates=False)
        if problem is not None:
            raise _refused(text, problem.what, problem)
    return data


def _refused(text: str, what: str, problem: strict_json.Problem | None = None) -> ApiError:
    if problem is None:
        problem = strict_json.first_problem(text, len(text) - len(text.lstrip(" \t\r\n")), duplicates=False)
    path = _field_path(problem.path) if problem is not None else None
    what = problem.what if problem is not None else what
    return ApiError(422, "validation_error", f"{path}: {what}" if path else what, path)


async def read_body(request: web.Request, model: type[M]) -> M:
    """Parse and validate the JSON body.

    Raises:
        ApiError: 400 ``invalid_json`` when the body is not JSON; 422
            ``validation_error`` naming the first bad field (all errors in ``details``),
            also for values JSON tools disagree on (``parse_json_body``).
    """
    data = parse_json_body(await request.read())
    if not isinstance(data, dict):
        raise ApiError(422, "validation_error", "request body must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        first = errors[0]
        path = _field_path(tuple(first["loc"]))
        message = first["msg"].removeprefix("Value error, ")
        raise ApiError(422, "validation_error", f"{path}: {message}" if path else message, path) from None


# ----------------------------------------------------------------- handlers


async def readyz(request: web.Request) -> web.Response:
    """``GET /readyz``: 200 once the database is open and migrated, else 503."""
    if not _state(request).ready:
        return error_response(503, "not_ready", "starting up")
    return web.json_response({"status": "ready"})


async def info(request: web.Request) -> web.Response:
    """``GET /v1/info``: the model lineage ``{"models": {"generate", "embed"}}``.

    Needs a valid key like every ``/v1`` call (docs/target-contract.md); 401 otherwise.
    """
    await authenticate(request)
    config = _state(request).config
    return web.json_response({"models": {"generate": config.model_generate, "embed": config.model_embed}})


async def post_document(request: web.Request) -> web.Response:
    """``POST /v1/documents``: ingest (idempotent on tenant, name, contentHash)."""
    tenant = await authenticate(request)
    body = await read_body(request, DocumentRequest)
    db = _store(request)
    # Idempotent: the same (name, contentHash) again returns the stored id and tx time
    # (and makes that version current again if a newer one had replaced it).
    existing = await db.run(store.activate_document, tenant, body.name, body.content_hash)
    if existing is None:
        canonical, spans = canonical_document(body.format, body.content)
        config = _state(request).config
        vectors, _ = await _provider(request).embed([s.text for s in spans], config.model_embed)
        existing = await db.run(
            store.insert_document,
            tenant,
            name=body.name,
            label=body.label,
            format=body.format,
            content_hash=body.content_hash,
            canonical=canonical,
            chunks=new_chunks(spans, vectors),
        )
    document_id, tx_start = existing
    return web.json_response({"documentId": document_id, "txStart": tx_start})


async def post_generate(request: web.Request) -> web.Response:
    """``POST /v1/generate``: retrieve, generate (streamed), decompose, verify."""
    tenant = await authenticate(request)
    body = await read_body(request, GenerateRequest)
    config = _state(request).config
    provider = _provider(request)
    usage = Usage()
    trace_id = "tr_" + uuid.uuid4().hex

    vectors, embed_usage = await provider.embed([body.question], config.model_embed)
    usage.add(embed_usage)
    chunks = await _store(request).run(store.current_chunks, tenant, body.find)
    evidence = rank_chunks(body.question, vectors[0], chunks, config.top_k)

    # The attempt number goes on to the provider: the mock's seeded noise draws from it (docs/mock.md).
    attempt = request.headers.get(ATTEMPT_HEADER)
    answer, generate_usage = await provider.chat_stream(
        generation_messages(body.question, evidence),
        config.model_generate,
        {ATTEMPT_HEADER: attempt} if attempt is not None else None,
    )
    usage.add(generate_usage)

    claims = []
    if answer.strip():
        content, decompose_usage = await provider.chat(
            decomposition_messages(answer), config.model_generate, DECOMPOSITION_RESPONSE_FORMAT
        )
        usage.add(decompose_usage)
        claims = parse_decomposition(content, answer)

    spans = {e.marker: e.chunk.text for e in evidence}
    started = time.perf_counter()
    log.info("%s verifying %d claims against %d evidence blocks", trace_id, len(claims), len(spans))
    checks = await verify_answer(_state(request), [(c.text, c.markers) for c in claims], spans)
    log.info("%s verified %d claims in %.1f ms", trace_id, len(claims), (time.perf_counter() - started) * 1000)
    claim_bodies = []
    for claim, check in zip(claims, checks):
        log.info("%s claim %r: %s (%s)", trace_id, claim.text, check.verdict, check.reason)
        claim_bodies.append(
            {
                "text": claim.text,
                "start": claim.start,
                "end": claim.end,
                "markers": claim.markers,
                "verdict": check.verdict,
            }
        )
    return web.json_response(
        {
            "answer": answer,
            "traceId": trace_id,
            "evidence": [e.to_wire() for e in evidence],
            "claims": claim_bodies,
            "usage": {"promptTokens": usage.prompt_tokens, "completionTokens": usage.completion_tokens},
        }
    )


async def post_record(request: web.Request) -> web.Response:
    """``POST /v1/records``: create, update or delete a bitemporal record."""
    tenant = await authenticate(request)
    body = await read_body(request, RecordRequest)
    try:
        record_id, tx_start = await _store(request).run(
            bitemporal.write_record,
            tenant,
            op=body.op,
            target=body.target,
            label=body.label,
            properties=body.properties,
            valid=None if body.valid_time is None else body.valid_time.interval(),
        )
    except bitemporal.RecordNotFound as exc:
        raise ApiError(404, "not_found", str(exc), "target") from None
    return web.json_response({"id": record_id, "txStart": tx_start})


async def post_query(request: web.Request) -> web.Response:
    """``POST /v1/query``: records visible as of (asOfTx, asOfValid), both defaulting to now."""
    tenant = await authenticate(request)
    body = await read_body(request, QueryRequest)
    now = store.now_ms()
    records = await _store(request).run(
        bitemporal.query_records,
        tenant,
        label=body.label,
        target=body.target,
        as_of_tx=body.as_of_tx,
        as_of_valid_ms=body.as_of_valid_ms(now),
    )
    return web.json_response({"records": records})


async def post_compare(request: web.Request) -> web.Response:
    """``POST /v1/compare``: added, removed and changed records between two tx times."""
    tenant = await authenticate(request)
    body = await read_body(request, CompareRequest)
    result = await _store(request).run(
        bitemporal.compare_records,
        tenant,
        label=body.label,
        target=body.target,
        from_tx=body.from_tx,
        to_tx=body.to_tx,
    )
    return web.json_response(result)


# ------------------------------------------------------------ verification


def verify_workers(config: ReferenceConfig) -> int:
    """Size of the verification pool: ``config.verify_workers``, else ``os.cpu_count()`` (at least 1)."""
    return max(1, config.verify_workers or os.cpu_count() or 1)


def new_verifier(config: ReferenceConfig) -> concurrent.futures.Executor | None:
    """The executor ``config.verify_executor`` names (None for ``inline``).

    The process pool forks its workers from a ``forkserver`` that has already
    imported the verifier, so a worker starts in milliseconds and inherits
    none of the server's threads, sockets or SQLite handles (``spawn`` where
    there is no forkserver). Workers run at a lower priority
    (``pool.lower_priority``) so that the loop gets the core first, and end
    when the server process ends, however it ends (``pool.exit_with``).

    Raises:
        ValueError: an unknown ``verify_executor``.
    """
    kind = config.verify_executor
    if kind == "inline":
        return None
    if kind == "thread":
        return concurrent.futures.ThreadPoolExecutor(verify_workers(config), thread_name_prefix="verify")
    if kind != "process":
        raise ValueError(f"verify_executor must be one of {', '.join(VERIFY_EXECUTORS)}, got {kind!r}")
    context: multiprocessing.context.BaseContext
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([verify_claims.__module__])
    else:  # pragma: no cover - Windows
        context = multiprocessing.get_context("spawn")
    return concurrent.futures.ProcessPoolExecutor(
        verify_workers(config), mp_context=context, initializer=pool_worker_init, initargs=(os.getpid(),)
    )


def _is_small(claims: list[tuple[str, list[str]]], evidence: dict[str, str]) -> bool:
    """True when the answer's claims and cited spans hold at most :data:`SMALL_ANSWER_CHARS` characters."""
    size = sum(len(text) for text, _ in claims)
    cited = {marker for _, markers in claims for marker in markers}
    size += sum(len(evidence[marker]) for marker in cited if marker in evidence)
    return size <= SMALL_ANSWER_CHARS


def _start_pool(state: ServerState) -> None:
    """Make the pool (``new_verifier``) and start its workers on a thread (``_warm``), once.

    ``_resources`` waits for the start at cleanup. Even an idle process pool is not free: it
    starts multiprocessing's resource tracker (a Python process) when it is made.
    """
    if state.verifier is None:
        state.verifier = new_verifier(state.config)
    if state.warming is None and state.verifier is not None:
        loop = asyncio.get_running_loop()
        state.warming = loop.run_in_executor(None, _warm, state.verifier, verify_workers(state.config))


async def verify_answer(
    state: ServerState, claims: list[tuple[str, list[str]]], evidence: dict[str, str]
) -> list[ClaimCheck]:
    """Verify one answer's claims (``verify.verify_claims``) on the state's pool, as one task.

    One task per answer: a large answer occupies one worker and leaves the
    others to small requests. A pool whose worker died (``BrokenProcessPool``)
    is replaced once and the task retried; a second failure propagates (500).

    The pool starts when first worth it: until its workers are up, a small answer
    (``_is_small``) is verified on the loop, which costs about what the hand-off
    would; once the loop has spent :data:`INLINE_VERIFY_BUDGET_S` of CPU that way,
    or a large answer arrives, the workers are started on a thread (submitting
    to a pool still starting waits for its forkserver, so that is done off the
    loop too). From then on every answer goes to the pool, as before. The
    verdicts are the same wherever an answer is verified.
    """
    if not claims or (state.verifier is None and state.config.verify_executor == "inline"):
        return verify_claims(claims, evidence)
    loop = asyncio.get_running_loop()
    warm = state.warming is not None and state.warming.done()
    if not warm and _is_small(claims, evidence):
        started = time.thread_time()
        checks = verify_claims(claims, evidence)
        state.inline_verify_s += time.thread_time() - started
        if state.inline_verify_s >= INLINE_VERIFY_BUDGET_S:
            _start_pool(state)
        return checks
    try:
        if not warm:
            _start_pool(state)
            assert state.verifier is not None  # made by _start_pool: not inline
            submitted = await loop.run_in_executor(None, state.verifier.submit, verify_claims, claims, evidence)
            return await asyncio.wrap_future(submitted)
        return await loop.run_in_executor(state.verifier, verify_claims, claims, evidence)
    except BrokenProcessPool:
        log.warning("the verification pool lost a worker; starting a new pool")
        broken, state.verifier = state.verifier, new_verifier(state.config)
        if broken is not None:
            broken.shutdown(wait=False, cancel_futures=True)
        return await loop.run_in_executor(state.verifier, verify_claims, claims, evidence)


def _warm(verifier: concurrent.futures.Executor, workers: int) -> None:
    """Start the pool's workers, one warm-up task each (fire and forget; failures are logged, never raised).

    Starting the forkserver and its workers blocks the caller for a few
    hundred milliseconds, so the server calls this on a thread, not the loop (``_start_pool``).
    """

    def logged(future: concurrent.futures.Future[Any]) -> None:
        if not future.cancelled() and future.exception() is not None:
            log.warning("verification pool warm-up failed: %s", future.exception())

    try:
        for _ in range(workers):
            verifier.submit(verify_claims, [], {}).add_done_callback(logged)
    except Exception as exc:  # noqa: BLE001 - a pool already shut down or broken: the first answer finds out and says so
        log.warning("verification pool warm-up failed: %s", exc)


# --------------------------------------------------------------------- app


def create_app(config: ReferenceConfig) -> web.Application:
    """Build the application; resources open on startup and close on cleanup.

    On startup: the database is opened and migrated, the bootstrap key (if any)
    registered, and one ``aiohttp.ClientSession`` created for the provider.
    """
    app = web.Application(middlewares=[call_log_middleware, error_middleware], client_max_size=64 * 1024 * 1024)
    app[STATE] = ServerState(config)
    app.cleanup_ctx.append(_resources)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/v1/info", info)
    app.router.add_post("/v1/documents", post_document)
    app.router.add_post("/v1/generate", post_generate)
    app.router.add_post("/v1/records", post_record)
    app.router.add_post("/v1/query", post_query)
    app.router.add_post("/v1/compare", post_compare)
    return app


async def _resources(app: web.Application) -> AsyncIterator[None]:
    state = app[STATE]
    config = state.config
    state.store = store.AsyncStore(config.data_dir)
    await state.store.open()
    if config.bootstrap_api_key:
        await state.store.run(store.add_key, store.BOOTSTRAP_TENANT, config.bootstrap_api_key)
    # The provider timeout is enforced per call (ProviderSettings.timeout_s), not per session.
    state.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None))
    state.provider = ProviderClient(
        state.session,
        ProviderSettings(
            llm_url=config.llm_url,
            embed_url=config.embed_url,
            api_key=config.provider_api_key,
            timeout_s=config.provider_timeout_s,
            max_attempts=config.provider_attempts,
        ),
    )
    # The pool is made when verify_answer first needs it (a short session never makes it).
    if config.verify_executor not in VERIFY_EXECUTORS:
        raise ValueError(
            f"verify_executor must be one of {', '.join(VERIFY_EXECUTORS)}, got {config.verify_executor!r}"
        )
    loop = asyncio.get_running_loop()
    state.ready = True
    try:
        yield
    finally:
        state.ready = False
        await state.session.close()
        await state.store.close()
        if state.warming is not None:
            await state.warming  # never raises (_warm logs); the pool is not shut down under it
        if state.verifier is not None:
            shutdown = functools.partial(state.verifier.shutdown, wait=True, cancel_futures=True)
            await loop.run_in_executor(None, shutdown)


PORT_FILE_NAME = "reference.port"
"""File in the data dir that receives the bound port once the server listens."""


async def serve(config: ReferenceConfig) -> None:
    """Run the server until SIGTERM/SIGINT; write the bound port to the data dir.

    Once listening, the objects alive (the imported modules, the application) are frozen out of
    the garbage collector's sight (``gc.freeze``): later collections, and the interpreter's at exit,
    no longer walk them.
    """
    runner = web.AppRunner(create_app(config), access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, config.host, config.port)
        await site.start()
        port = runner.addresses[0][1]
        # Every module the server needs is in: keep the collector off them. Without this the
        # interpreter's collections at exit walked them all, about 0.15 s between SIGTERM and the
        # exit on a 2-core VM, which a harness tearing the server down waits out
        # (benchmarks/README.md, "Start-up, fourth pass"). No collection first (~30 ms before
        # readiness): the garbage there is, a few import-time cycles, stays until the exit.
        gc.freeze()
        _write_port_file(config.data_dir, port)
        print(f"groundeval reference: listening on http://{config.host}:{port}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            try:
                loop.add_signal_handler(signum, stop.set)
            except (NotImplementedError, RuntimeError):  # pragma: no cover - Windows
                pass
        await stop.wait()
    finally:
        await runner.cleanup()


def _write_port_file(data_dir: Path, port: int) -> None:
    # Written atomically so a poller never reads a half-written number.
    temporary = data_dir / (PORT_FILE_NAME + ".tmp")
    temporary.write_text(f"{port}\n", encoding="utf-8")
    os.replace(temporary, data_dir / PORT_FILE_NAME)
