"""Benchmark (issue 15): a small request's latency while a 50 KB-chunk answer is being verified.

Run: ``python benchmarks/bench_verify_latency.py [--rounds 3] [--small 20] [--kb 50]`` (about 1 minute).

The reference server (``python -m pytest_groundeval.reference``) runs as a
subprocess against the mock provider (another subprocess), once per side and
round, sides interleaved round by round:

- ``process``: claims verified in the server's process pool (the default);
- ``thread``: in a thread pool of the same size (off the loop, but the GIL is shared);
- ``inline``: on the event loop (how the server worked before issue 15).

Two documents are ingested: a small note (label ``SMALL``, three short
paragraphs) and one ``--kb`` KB paragraph of distinct sentences (label
``LARGE``). The mock echoes the evidence it is given with every sentence
cited, so a question to ``LARGE`` gives an answer of one claim per sentence
of the 50 KB chunk (hundreds), each verified against that chunk.

Per side: ``--small`` small requests one after another while idle, then one
large request with small requests issued one after another for as long as it
is in flight. The server logs when it starts and ends verifying an answer
(``<trace> verifying N claims`` / ``verified``); the small requests sent
inside the large answer's verification window are the ones judged.
Reported: the idle median, and the median and the worst small latency
during verification, as ratios to the idle median of the same side and round
(goal: ≤ 2× idle; the median, the 90th percentile and the worst are shown), and for context the worst small latency during the
whole large request (its provider calls share the one mock process, whose
loop is busy streaming and decomposing 50 KB for a moment). The absolute figures depend on the
machine and its load; the ratios compare within one invocation.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _harness as h
import aiohttp

KINDS = ("process", "thread", "inline")
API_KEY = "bench-key"


def large_paragraph(kb: int) -> str:
    """Distinct sentences (no two alike, numbers included) up to ``kb`` KB, as one paragraph."""
    sentences, size, n = [], 0, 0
    while size < kb * 1000:
        sentence = (
            f"Depot {n} in the {('northern', 'eastern', 'southern', 'western')[n % 4]} district stores "
            f"{n * 7 + 3} crates of spare parts for the regional rail line."
        )
        sentences.append(sentence)
        size += len(sentence) + 1
        n += 1
    return " ".join(sentences)


SMALL_NOTE = (
    "The harbour office opens at seven on weekdays.\n\n"
    "The ferry to the island leaves every forty minutes in summer.\n\n"
    "Tickets are sold at the kiosk next to the harbour office.\n"
)


def start_mock() -> tuple[subprocess.Popen, str]:
    """The mock provider as a subprocess; returns it and its base URL."""
    proc = subprocess.Popen(
        [h.PYTHON, "-m", "pytest_groundeval.mock", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
        env=h.pytest_env(),
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    match = re.search(r"(http://\S+/v1)", line)
    if not match:
        proc.kill()
        raise SystemExit(f"mock did not start: {line!r}")
    return proc, match.group(1)


def start_reference(kind: str, mock_url: str, data_dir: Path) -> tuple[subprocess.Popen, str]:
    """The reference server with ``--verify-executor kind``, its log in ``data_dir/server.log``; waits for its port file."""
    env = h.pytest_env(GROUNDEVAL_API_KEY=API_KEY)
    proc = subprocess.Popen(
        [
            h.PYTHON,
            "-m",
            "pytest_groundeval.reference",
            "--port",
            "0",
            "--data-dir",
            str(data_dir),
            "--llm-url",
            mock_url,
            "--verify-executor",
            kind,
            "--log-level",
            "INFO",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(data_dir / "server.log").open("wb"),
    )
    port_file = data_dir / "reference.port"
    deadline = time.monotonic() + 30
    while not port_file.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"reference server ({kind}) did not start")
        time.sleep(0.05)
    return proc, f"http://127.0.0.1:{port_file.read_text().strip()}"


async def post(session: aiohttp.ClientSession, url: str, path: str, body: dict) -> dict:
    async with session.post(url + path, json=body, headers={"Authorization": f"Bearer {API_KEY}"}) as response:
        payload = await response.json()
        if response.status != 200:
            raise SystemExit(f"{path}: {response.status} {payload}")
        return payload


_LOG_LINE = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) INFO \S+: (tr_\w+) (verifying|verified) (\d+) claims"
)


def verification_window(log: Path, trace_id: str) -> tuple[float, float]:
    """Wall-clock start and end (epoch seconds, ms resolution) of one answer's verification, from the server log.

    ``app.post_generate`` logs "<trace> verifying N claims" and "<trace> verified N claims in X ms".
    """
    found: dict[str, float] = {}
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        match = _LOG_LINE.match(line)
        if match and match.group(3) == trace_id:
            stamp = time.mktime(time.strptime(match.group(1), "%Y-%m-%d %H:%M:%S")) + int(match.group(2)) / 1000
            found[match.group(4)] = stamp
    if set(found) != {"verifying", "verified"}:
        raise SystemExit(f"{log}: no verification lines for {trace_id}")
    return found["verifying"], found["verified"]


async def measure(url: str, small: int, kb: int, log: Path) -> dict[str, float]:
    """Idle and loaded small-request latencies (ms) against one running server."""
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300)) as session:
        deadline = time.monotonic() + 30
        while True:
            try:
                async with session.get(url + "/readyz") as response:
                    if response.status == 200:
                        break
            except aiohttp.ClientError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("reference server not ready")
            await asyncio.sleep(0.05)
        for label, content in (("SMALL", SMALL_NOTE), ("LARGE", large_paragraph(kb))):
            await post(
                session,
                url,
                "/v1/documents",
                {"name": f"{label}.txt", "label": label, "format": "text", "contentHash": label, "content": content},
            )
        small_body = {"question": "When does the harbour office open?", "find": "SMALL"}
        large_body = {"question": "Which depot stores the most crates?", "find": "LARGE"}

        async def timed_small() -> tuple[float, float, float]:
            """(wall-clock start, wall-clock end, latency in ms) of one small request."""
            wall, start = time.time(), time.perf_counter()
            answer = await post(session, url, "/v1/generate", small_body)
            assert answer["claims"], answer
            latency = (time.perf_counter() - start) * 1000
            return wall, wall + latency / 1000, latency

        for _ in range(3):  # warm: connections, the pool's workers, the server's caches
            await timed_small()
        idle = [(await timed_small())[2] for _ in range(small)]

        start = time.perf_counter()
        large = asyncio.ensure_future(post(session, url, "/v1/generate", large_body))
        loaded: list[tuple[float, float, float]] = []
        while not large.done():
            loaded.append(await timed_small())
        answer = large.result()
        large_ms = (time.perf_counter() - start) * 1000
        begin, end = verification_window(log, answer["traceId"])
        # Small requests sent while the large answer was being verified (log stamps have 1 ms resolution).
        # One already in flight when verification began measures the provider phase before it (the mock
        # streaming and decomposing 50 KB): it counts in "worst during the whole large answer" only.
        # Verified on the loop, no request can be sent in the window: the one it blocked is the figure then.
        during = [ms for s, e, ms in loaded if begin <= s <= end + 0.001] or [
            ms for s, e, ms in loaded if e > begin and s < end + 0.001
        ]
        supported = sum(c["verdict"] == "supported" for c in answer["claims"])
        if os.environ.get("BENCH_VERBOSE"):
            slowest = sorted(((ms, s - begin) for s, e, ms in loaded if e > begin and s < end + 0.001), reverse=True)[
                :5
            ]
            print(
                "  slowest overlapping verification (ms, sent s after it began):",
                ", ".join(f"{ms:.1f} @ {offset:+.3f}" for ms, offset in slowest),
            )
        return {
            "idle": statistics.median(idle),
            "verify_median": statistics.median(during) if during else float("nan"),
            "verify_max": max(during) if during else float("nan"),
            "verify_p90": statistics.quantiles(during, n=10)[-1]
            if len(during) >= 10
            else max(during, default=float("nan")),
            "verify_n": len(during),
            "verify_ms": (end - begin) * 1000,
            "all_max": max(ms for _, _, ms in loaded) if loaded else float("nan"),
            "large_ms": large_ms,
            "large_claims": len(answer["claims"]),
            "large_supported": supported,
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--small", type=int, default=20, help="Idle small requests per side and round")
    parser.add_argument("--kb", type=int, default=50, help="Size of the large chunk in KB")
    args = parser.parse_args(argv)
    print(h.machine_note())
    mock, mock_url = start_mock()
    results: dict[str, list[dict[str, float]]] = {kind: [] for kind in KINDS}
    try:
        for round_number in range(1, args.rounds + 1):
            for kind in KINDS:
                with tempfile.TemporaryDirectory(prefix=f"bench-verify-{kind}-") as tmp:
                    server, url = start_reference(kind, mock_url, Path(tmp))
                    try:
                        figures = asyncio.run(measure(url, args.small, args.kb, Path(tmp) / "server.log"))
                    finally:
                        server.terminate()
                        server.wait(timeout=30)
                results[kind].append(figures)
                print(
                    f"round {round_number} {kind:8s} idle {figures['idle']:6.1f} ms | during verification "
                    f"({figures['verify_ms']:.0f} ms): median {figures['verify_median']:7.1f} ms "
                    f"({figures['verify_median'] / figures['idle']:5.2f}x), worst {figures['verify_max']:7.1f} ms "
                    f"({figures['verify_max'] / figures['idle']:5.2f}x), {figures['verify_n']} requests | worst during "
                    f"the whole large answer {figures['all_max']:.1f} ms | large: {figures['large_claims']} claims "
                    f"({figures['large_supported']} supported) in {figures['large_ms']:.0f} ms",
                    flush=True,
                )
    finally:
        mock.terminate()
        mock.wait(timeout=30)
    print()
    print(
        "| verification | idle median | during verification: median (ratio) | p90 (ratio) | worst (ratio) "
        "| small requests | verifying the large answer | worst during the whole large answer |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for kind in KINDS:
        rows = results[kind]

        def mid(key: str, rows=rows) -> float:
            return statistics.median(r[key] for r in rows)

        def ratio(key: str, rows=rows) -> float:
            return statistics.median(r[key] / r["idle"] for r in rows)

        print(
            f"| {kind} | {mid('idle'):.1f} ms | {mid('verify_median'):.1f} ms ({ratio('verify_median'):.2f}x) | "
            f"{mid('verify_p90'):.1f} ms ({ratio('verify_p90'):.2f}x) | "
            f"{mid('verify_max'):.1f} ms ({ratio('verify_max'):.2f}x) | {mid('verify_n'):.0f} | "
            f"{rows[0]['large_claims']} claims, {mid('verify_ms'):.0f} ms | {mid('all_max'):.1f} ms |"
        )
    print("\n(medians over rounds; a ratio is a round's figure over that round's idle median; goal: <= 2x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
