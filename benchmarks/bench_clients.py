"""HTTP client stacks for the plugin's target calls, measured side by side (issue 8; cf. httpx #3215).

Run: ``python benchmarks/bench_clients.py [--requests 3000] [--rounds 2] [--concurrency 16]`` (about a minute).

One ``instant_target.py`` process serves prepared ``POST /v1/generate``
answers (about 600 bytes of JSON each); this process is the client. Each stack
sends the same requests (a synthetic question per request, the body decoded
with ``.json()``), stacks interleaved round by round:

- httpx sync ``Client``, one request at a time (the plugin's path before issue 8);
- httpx sync ``Client`` shared by a pool of N threads;
- httpx ``AsyncClient`` with N requests in flight;
- aiohttp ``ClientSession`` with N requests in flight (and with 1, for reference).

Reported per stack: requests/s seen by the client, and the client's CPU time
per request (``time.process_time``, all threads). The CPU figure is the one to
trust on a shared 2-core machine: once a fast client saturates the one-core
server, requests/s measure the server, while CPU µs/request still measure the
client stack.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import _harness as h
import aiohttp
import httpx
from synthetic import qa_item, write_dataset

RECORDS = 500


def bodies(count: int) -> list[dict]:
    return [
        {"question": item["question"], "find": item["find"]} for item in (qa_item(n, RECORDS) for n in range(count))
    ]


def ingest(url: str, dataset: Path) -> None:
    """Send the synthetic corpus once, so generate answers carry real evidence."""
    import json

    manifest = json.loads((dataset / "manifest.json").read_text(encoding="utf-8"))
    entry = manifest["corpus"][0]
    document = {
        "name": entry["name"],
        "label": entry["label"],
        "format": entry["format"],
        "contentHash": manifest["corpusHashes"][entry["file"]],
        "content": (dataset / "corpus" / entry["file"]).read_text(encoding="utf-8"),
    }
    with httpx.Client(base_url=url, headers=HEADERS) as client:
        client.post("/v1/documents", json=document).raise_for_status()


HEADERS = {"Authorization": "Bearer k"}


def httpx_sequential(url: str, work: list[dict], concurrency: int) -> None:
    with httpx.Client(base_url=url, headers=HEADERS) as client:
        for body in work:
            response = client.post("/v1/generate", json=body)
            response.raise_for_status()
            response.json()


def httpx_threads(url: str, work: list[dict], concurrency: int) -> None:
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    with httpx.Client(base_url=url, headers=HEADERS, limits=limits) as client:

        def one(body: dict) -> None:
            response = client.post("/v1/generate", json=body)
            response.raise_for_status()
            response.json()

        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            for _ in pool.map(one, work):
                pass


async def _drain(work: list[dict], concurrency: int, one: Callable) -> None:
    queue = iter(work)

    async def worker() -> None:
        for body in queue:  # one shared iterator: each body is taken once
            await one(body)

    await asyncio.gather(*(worker() for _ in range(concurrency)))


def httpx_async(url: str, work: list[dict], concurrency: int) -> None:
    async def run() -> None:
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        async with httpx.AsyncClient(base_url=url, headers=HEADERS, limits=limits) as client:

            async def one(body: dict) -> None:
                response = await client.post("/v1/generate", json=body)
                response.raise_for_status()
                response.json()

            await _drain(work, concurrency, one)

    asyncio.run(run())


def aiohttp_concurrent(url: str, work: list[dict], concurrency: int) -> None:
    async def run() -> None:
        connector = aiohttp.TCPConnector(limit=concurrency)
        async with aiohttp.ClientSession(url, headers=HEADERS, connector=connector) as session:

            async def one(body: dict) -> None:
                async with session.post("/v1/generate", json=body) as response:
                    response.raise_for_status()
                    await response.json()

            await _drain(work, concurrency, one)

    asyncio.run(run())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000, help="requests per stack per round")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds")
    parser.add_argument("--concurrency", type=int, default=16, help="requests in flight for the concurrent stacks")
    args = parser.parse_args(argv)
    n = args.concurrency
    stacks: dict[str, tuple[Callable, int]] = {
        "httpx Client, sequential": (httpx_sequential, 1),
        f"httpx Client, {n} threads": (httpx_threads, n),
        f"httpx AsyncClient, {n} in flight": (httpx_async, n),
        f"aiohttp, {n} in flight": (aiohttp_concurrent, n),
        "aiohttp, 1 in flight": (aiohttp_concurrent, 1),
    }
    print(f"HTTP client stacks: {args.requests} generate requests each, {args.rounds} rounds; {h.machine_note()}")
    work = bodies(args.requests)
    rates: dict[str, list[float]] = {name: [] for name in stacks}
    cpu_us: dict[str, list[float]] = {name: [] for name in stacks}
    with tempfile.TemporaryDirectory(prefix="bench-clients-") as tmp, h.instant_target() as url:
        ingest(url, write_dataset(Path(tmp), 1, RECORDS).parent)
        for fn, concurrency in stacks.values():  # warm-up: imports, first connections
            fn(url, work[:50], concurrency)
        for _ in range(args.rounds):
            for name, (fn, concurrency) in stacks.items():
                cpu = time.process_time()
                started = time.perf_counter()
                fn(url, work, concurrency)
                wall = time.perf_counter() - started
                rates[name].append(len(work) / wall)
                cpu_us[name].append((time.process_time() - cpu) / len(work) * 1e6)
    base_rate = h.median(rates["httpx Client, sequential"])
    aio = f"aiohttp, {n} in flight"
    rows = [
        [
            name,
            h.spread(rates[name], "{:.0f}"),
            f"{h.median(rates[name]) / base_rate:.2f}",
            h.spread(cpu_us[name], "{:.0f}"),
            f"{h.median(cpu_us[name]) / h.median(cpu_us[aio]):.2f}",
        ]
        for name in stacks
    ]
    print(
        h.table(
            ["stack", "requests/s, median (min–max)", "vs httpx sequential", "client CPU µs/request", "CPU vs aiohttp"],
            rows,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
