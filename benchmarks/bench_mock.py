"""Benchmark: the mock provider against a bare aiohttp handler, side by side in one invocation.

Run: ``python benchmarks/bench_mock.py [--seconds 2.5] [--concurrency 16] [--rounds 2]``.

One server process (one event loop, so one core at most) hosts two apps on
two loopback ports: the *bare* app, whose handlers read the request body and
answer a fixed, prebuilt body of the same size and shape the mock would send
(for streams: the same prebuilt SSE events, one write per event), and the
*mock* (``pytest_groundeval.mock.MockProvider``). This process is the client:
aiohttp with ``--concurrency`` requests in flight, in a separate process so
that client and server do not share one interpreter on a 2-core machine.

Every request body is different (a counter in the question and in one
embedding input), so nothing that keys on the body — a response cache, say —
can make the mock look faster than the work it does per request; the bare app
gets the same varied bodies.

For each call (non-streamed chat, embeddings, streamed chat) and each app it
reports requests/s seen by the client, and the server's CPU time per request
(``time.process_time`` of the server process, read before and after). The CPU
figure is the honest one when other work shares the machine: it does not
depend on how much of a core the server got. Ratios are mock/bare: ≥ 0.6 is
the goal for JSON calls; for streams, events/s on one core = events per
request / server CPU per request, goal ≥ 20,000.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time

import aiohttp
from aiohttp import web

EVIDENCE = "\n".join(
    f"[S{i}] Block {i} says the project shipped release {i}.{i} in Göteborg on time and under budget."
    for i in range(1, 6)
)
CHAT = {
    "model": "mock-generate",
    "messages": [
        {"role": "system", "content": "Answer from the evidence only, citing [S#] markers.\n" + EVIDENCE},
        {"role": "user", "content": "Question: When did the project ship its release? (request @N@)"},
    ],
}
STREAM = {**CHAT, "stream": True, "stream_options": {"include_usage": True}}
EMBED = {
    "model": "mock-embed",
    "encoding_format": "base64",  # what the openai SDK sends by default
    "input": [
        "The project shipped release 1.1 in Göteborg.",
        "Stockholm har 3,5 miljoner invånare.",
        "東京は日本の首都です。",
        "Evidence risk is scored without a provider call, request @N@.",
    ],
}
COUNTER = b"@N@"
"""Placeholder in each body that becomes the request's sequence number."""
CALLS = {
    "chat": ("/v1/chat/completions", CHAT),
    "embeddings": ("/v1/embeddings", EMBED),
    "chat_stream": ("/v1/chat/completions", STREAM),
}


# ---- server process ---------------------------------------------------------


async def _prebuilt_bodies(mock_url: str) -> dict[str, bytes]:
    """The mock's own answers, fetched once, become the bare app's fixed bodies."""
    bodies = {}
    async with aiohttp.ClientSession() as session:
        for name, (path, payload) in CALLS.items():
            body = json.dumps(payload, separators=(",", ":")).encode().replace(COUNTER, b"0")
            async with session.post(
                mock_url + path, data=body, headers={"Content-Type": "application/json"}
            ) as response:
                bodies[name] = await response.read()
    return bodies


def _bare_app(bodies: dict[str, bytes]) -> web.Application:
    events = [e + b"\n\n" for e in bodies["chat_stream"].split(b"\n\n") if e]

    async def chat(request: web.Request) -> web.StreamResponse:
        payload = await request.read()
        if b'"stream":true' in payload:
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream; charset=utf-8"})
            await response.prepare(request)
            for event in events:
                await response.write(event)
            return response
        return web.Response(body=bodies["chat"], content_type="application/json")

    async def embeddings(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=bodies["embeddings"], content_type="application/json")

    async def cpu(request: web.Request) -> web.Response:
        return web.Response(text=repr(time.process_time()))

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_post("/v1/embeddings", embeddings)
    app.router.add_get("/cpu", cpu)
    return app


async def _serve() -> None:
    from pytest_groundeval.mock import MockProvider

    async with MockProvider() as mock:
        bodies = await _prebuilt_bodies(mock.base_url.removesuffix("/v1"))
        runner = web.AppRunner(_bare_app(bodies), access_log=None, handle_signals=False)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        bare_port = runner.addresses[0][1]
        print(json.dumps({"bare": f"http://127.0.0.1:{bare_port}", "mock": mock.root_url}), flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until the client closes stdin
        await runner.cleanup()


# ---- client -------------------------------------------------------------------


async def _load(session: aiohttp.ClientSession, url: str, payload: bytes, seconds: float, concurrency: int) -> int:
    """Send requests from ``concurrency`` workers until the deadline; return completed requests.

    ``payload`` holds :data:`COUNTER`, replaced by a fresh number per request, so
    no two bodies are the same.
    """
    deadline = time.perf_counter() + seconds
    done = 0
    sent = 0
    head, tail = payload.split(COUNTER)

    async def worker() -> None:
        nonlocal done, sent
        headers = {"Content-Type": "application/json"}
        while time.perf_counter() < deadline:
            sent += 1
            body = head + str(sent).encode() + tail
            async with session.post(url, data=body, headers=headers) as response:
                await response.read()
                if response.status != 200:
                    raise RuntimeError(f"{url} answered {response.status}")
            done += 1

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done


async def _server_cpu(session: aiohttp.ClientSession, bare_url: str) -> float:
    async with session.get(bare_url + "/cpu") as response:
        return float(await response.text())


async def _measure(urls: dict[str, str], seconds: float, concurrency: int, rounds: int) -> dict:
    results: dict = {}
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        for name, (path, payload) in CALLS.items():
            body = json.dumps(payload, separators=(",", ":")).encode()
            async with session.post(urls["mock"] + path, data=body.replace(COUNTER, b"0")) as response:
                sample = await response.read()
            events = sample.count(b"\n\n") if name == "chat_stream" else 1
            for target in ("bare", "mock"):
                await _load(session, urls[target] + path, body, 0.3, concurrency)  # warm-up
            best: dict[str, dict[str, float]] = {}
            for _ in range(rounds):
                for target in ("bare", "mock"):
                    cpu_before = await _server_cpu(session, urls["bare"])
                    started = time.perf_counter()
                    done = await _load(session, urls[target] + path, body, seconds, concurrency)
                    wall = time.perf_counter() - started
                    cpu = await _server_cpu(session, urls["bare"]) - cpu_before
                    figures = {"rps": done / wall, "cpu_us": cpu / done * 1e6}
                    if target not in best or figures["cpu_us"] < best[target]["cpu_us"]:
                        best[target] = figures
            results[name] = {"events_per_request": events, **best}
    return results


def _report(results: dict, seconds: float, concurrency: int, rounds: int) -> str:
    lines = [
        f"mock provider vs bare aiohttp handler: {seconds:g} s x {rounds} rounds per figure, "
        f"concurrency {concurrency}, client in a separate process, every request body different "
        "(best round by server CPU)",
        f"{'call':<12} {'bare req/s':>11} {'mock req/s':>11} {'ratio':>6}   {'bare CPU µs':>11} {'mock CPU µs':>11} {'ratio':>6}",
    ]
    for name, figures in results.items():
        bare, mock = figures["bare"], figures["mock"]
        lines.append(
            f"{name:<12} {bare['rps']:>11.0f} {mock['rps']:>11.0f} {mock['rps'] / bare['rps']:>6.2f}   "
            f"{bare['cpu_us']:>11.1f} {mock['cpu_us']:>11.1f} {bare['cpu_us'] / mock['cpu_us']:>6.2f}"
        )
    stream = results["chat_stream"]
    events = stream["events_per_request"]
    lines.append(
        f"SSE: {events} events per stream; client-observed events/s bare {stream['bare']['rps'] * events:,.0f}, "
        f"mock {stream['mock']['rps'] * events:,.0f}; one-core capacity (events / server CPU s) "
        f"bare {events / stream['bare']['cpu_us'] * 1e6:,.0f}, mock {events / stream['mock']['cpu_us'] * 1e6:,.0f}"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=2.5, help="Load duration per figure (default 2.5)")
    parser.add_argument("--concurrency", type=int, default=16, help="Requests in flight (default 16)")
    parser.add_argument("--rounds", type=int, default=2, help="Rounds per figure; the best is kept (default 2)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        asyncio.run(_serve())
        return 0
    server = subprocess.Popen(
        [sys.executable, __file__, "--serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        urls = json.loads(server.stdout.readline())
        results = asyncio.run(_measure(urls, args.seconds, args.concurrency, args.rounds))
    finally:
        server.stdin.close()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    print(_report(results, args.seconds, args.concurrency, args.rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
