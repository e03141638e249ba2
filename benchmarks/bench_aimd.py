"""The judge near a provider's rate limit (issue 22; goal: throughput within 20% of the limit, no request dropped).

Run: ``python benchmarks/bench_aimd.py [--requests 160] [--rounds 2]`` (about a minute and a half).

The mock provider (``groundeval mock``, a process of its own, real HTTP on loopback)
judges; this process's ``JudgeClient`` (the official ``openai`` SDK) asks it
``--requests`` distinct paragraphs at once (``judge_many``). The limits are set low
(a few requests in flight, each a quarter of a second) so that the limit, not the
client's CPU on a shared machine, bounds the throughput. Two limits of the mock's
fault grammar (docs/mock.md):

- ``conc``: ``conc:K,delay:D``: at most K requests in flight, each taking D ms, the rest
  HTTP 429 with no ``Retry-After``. The limit's throughput is measured, not computed:
  the same paragraphs sent by a judge whose concurrency is exactly K against
  ``delay:D`` alone (no 429 ever).
- ``rate``: ``rate:K,delay:D``: at most K requests per one-second window, the rest HTTP
  429 with the ``Retry-After`` of the next window. The limit is K requests/s.

Subjects, interleaved round by round: the judge with concurrency C > K and its AIMD
limiter (``core.limiter``), and the same judge with a limiter that never halves nor holds
(each refused request only waits its own ``Retry-After`` or backoff), for contrast.
Reported: paragraphs judged per second and its ratio to the limit (median over rounds),
the 429s received, paragraphs left unjudged (dropped), and the limiter's lowest limit.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import time

import _harness as h

from pytest_groundeval.core import contract
from pytest_groundeval.core.judging import judge_input
from pytest_groundeval.core.limiter import AimdLimiter, Slot
from pytest_groundeval.judge.client import JudgeClient

SOURCE = {"marker": "1", "metadata": {"speaker": "Anna Berg"}, "text": "Anna Berg: fibre to every home by 2030."}


class NoDecrease(AimdLimiter):
    """A fixed bound: 429s are counted, the limit never halves and nothing is held (the contrast)."""

    def _on_rate_limited(self, slot: Slot) -> None:
        self.rate_limited += 1


def payloads(n: int) -> list:
    return [judge_input(f"Anna Berg wants fibre to every home by 2030, paragraph {i} [1].", [SOURCE]) for i in range(n)]


_RUNS = [0]


def judge_all(base_url: str, limit: str | None, delay_ms: int, n: int, concurrency: int, aimd: bool) -> dict:
    """Judge ``n`` paragraphs under the fault ``limit`` (``conc:K``, ``rate:K`` or None) with ``delay_ms`` each."""
    # A spec of its own per run (the delay differs by a microsecond): the mock counts rate: windows from
    # a spec's first request, so each run starts a window of its own rather than the rest of one.
    _RUNS[0] += 1
    spec = ",".join(filter(None, [limit, f"delay:{delay_ms + _RUNS[0] / 1000:.3f}"]))

    async def run() -> dict:
        async with JudgeClient(base_url, "mock-judge", concurrency=concurrency, backoff=0.05,
                               headers={contract.FAULT_HEADER: spec}) as judge:  # fmt: skip
            if not aimd:
                judge.limiter = NoDecrease(concurrency)
            lowest = [concurrency]

            async def watch() -> None:
                while True:
                    lowest[0] = min(lowest[0], judge.limiter.limit or concurrency)
                    await asyncio.sleep(0.005)

            watcher = asyncio.create_task(watch())
            started = time.perf_counter()
            results = await judge.judge_many(payloads(n))
            elapsed = time.perf_counter() - started
            watcher.cancel()
            return {
                "rate": n / elapsed,
                "dropped": sum(1 for r in results if r.verdict is None),
                "unparseable": sum(1 for r in results if r.verdict == "unparseable"),
                "429s": judge.limiter.rate_limited,
                "lowest": lowest[0],
            }

    return asyncio.run(run())


def start_mock() -> tuple[subprocess.Popen[str], str]:
    """``groundeval mock`` on a free port, keeping no request log; its base URL."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [h.SOURCE, str(h.REPO), os.environ.get("PYTHONPATH")])),
    }
    process = subprocess.Popen(
        [h.PYTHON, "-m", "pytest_groundeval.mock", "--port", "0", "--log-limit", "0"],
        stdout=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    assert process.stdout is not None
    line = process.stdout.readline()
    return process, line.rsplit(" ", 1)[-1].strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=160)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--limit", type=int, default=4, help="K of conc:K")
    parser.add_argument("--delay", type=int, default=250, help="D ms per request")
    parser.add_argument("--rate", type=int, default=10, help="K of rate:K (requests per second)")
    parser.add_argument("--concurrency", type=int, default=16, help="C, the judge's concurrency (> K)")
    args = parser.parse_args()
    n, k, d, c = args.requests, args.limit, args.delay, args.concurrency
    rows: dict[str, list[dict]] = {}
    mock, url = start_mock()
    try:
        for _ in range(args.rounds):
            rows.setdefault("conc: the limit (concurrency K, no 429)", []).append(judge_all(url, None, d, n, k, True))
            rows.setdefault("conc: AIMD", []).append(judge_all(url, f"conc:{k}", d, n, c, aimd=True))
            rows.setdefault("conc: no AIMD", []).append(judge_all(url, f"conc:{k}", d, n, c, aimd=False))
            rows.setdefault("rate: AIMD", []).append(judge_all(url, f"rate:{args.rate}", d, n // 2, c, aimd=True))
            rows.setdefault("rate: no AIMD", []).append(judge_all(url, f"rate:{args.rate}", d, n // 2, c, aimd=False))
    finally:
        mock.terminate()
        mock.wait()
    conc_limit = statistics.median(r["rate"] for r in rows["conc: the limit (concurrency K, no 429)"])
    print(f"{n} paragraphs (rate: {n // 2}); conc:{k},delay:{d} and rate:{args.rate},delay:{d}; judge concurrency {c}")
    print(f"{'subject':40} {'judged/s':>9} {'÷ limit':>8} {'429s':>6} {'dropped':>8} {'lowest limit':>13}")
    for name, runs in rows.items():
        rate = statistics.median(r["rate"] for r in runs)
        limit = conc_limit if name.startswith("conc") else float(args.rate)
        print(
            f"{name:40} {rate:9.1f} {rate / limit:8.2f} {max(r['429s'] for r in runs):6d} "
            f"{max(r['dropped'] + r['unparseable'] for r in runs):8d} {min(r['lowest'] for r in runs):13d}"
        )


if __name__ == "__main__":
    main()
