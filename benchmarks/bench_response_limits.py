"""Peak memory and wall time of ``HttpTarget`` against hostile responses (issue 12, point 7).

Run: ``python benchmarks/bench_response_limits.py [--timeout 5]`` (about a minute).

This process serves four hostile ``POST /v1/generate`` answers from a stdlib
HTTP server on 127.0.0.1:

- ``gzip-bomb``: 1 MB of gzip that inflates to 1 GiB of zeros
  (``Content-Encoding: gzip``, an honest ``Content-Length``);
- ``endless``: a chunked body that never ends, sent as fast as the socket takes it;
- ``slow-loris``: a chunked body of one byte every 0.5 s, never ending;
- ``ok``: a small valid answer, for the baseline.

Each case runs in a fresh client process (``HttpTarget.generate`` for the sync
httpx path, ``agenerate`` for the async aiohttp path, per-call timeout
``--timeout`` s), which reports its peak RSS (``resource.getrusage``, ``ru_maxrss``)
before and after the call, the call's wall time and how it ended. A client that
has not finished 30 s after it started is killed and reported as such, with its
peak RSS read from /proc (``VmHWM``) and the ``ok`` client's baseline. The
figure that matters is the growth of peak RSS over the client's own baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OK = json.dumps(
    {
        "answer": "Alpha ships in May [S1].",
        "evidence": [{"marker": "S1", "document": "a.json", "start": 0, "end": 10}],
        "claims": [{"text": "Alpha ships in May", "start": 0, "end": 18, "markers": ["S1"], "verdict": "supported"}],
    }
).encode()
KILL_AFTER_S = 30.0


def gzip_bomb(size: int = 1 << 30) -> bytes:
    """``size`` zero bytes, gzip-compressed at level 9 (about size / 1030 bytes)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1 << 20)
    parts = [compressor.compress(block) for _ in range(size // len(block))]
    parts.append(compressor.flush())
    return b"".join(parts)


def make_handler(bomb: bytes) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            case = self.path.rsplit("/", 1)[-1]
            if self.path.startswith("/ok/"):
                self._fixed(OK)
            elif self.path.startswith("/gzip-bomb/"):
                self._fixed(bomb, {"Content-Encoding": "gzip"})
            elif self.path.startswith("/endless/"):
                self._chunked(b"[" * 65536, 0.0)
            elif self.path.startswith("/slow-loris/"):
                self._chunked(b" ", 0.5)
            else:
                self.send_error(404, case)

        def _fixed(self, body: bytes, headers: dict | None = None) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            try:
                self.wfile.write(body)
            except OSError:
                pass

        def _chunked(self, piece: bytes, pause_s: float) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            chunk = f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
            try:
                while True:
                    self.wfile.write(chunk)
                    if pause_s:
                        self.wfile.flush()
                        time.sleep(pause_s)
            except OSError:
                self.close_connection = True

    return Handler


CLIENT = r"""
import asyncio, json, resource, sys, time
from pytest_groundeval.targets import HttpTarget
base, mode, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
target = HttpTarget(base, "k", timeout_s=timeout)
def rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
async def agen():
    try:
        return await target.agenerate("q", None)
    finally:
        await target.aclose()
before = rss_mb()
started = time.monotonic()
try:
    target.generate("q", None) if mode == "sync" else asyncio.run(agen())
    outcome = "returned"
except Exception as exc:
    outcome = f"{type(exc).__name__}: {str(exc)[:160]}"
print(json.dumps({"before_mb": before, "peak_mb": rss_mb(), "seconds": time.monotonic() - started, "outcome": outcome}))
"""


BASELINE_MB = float("nan")
"""The ``ok`` case's RSS before its call: the baseline of a client killed before it could report."""


def high_water_mb(pid: int) -> float:
    """Peak RSS of a running process (``VmHWM`` in /proc), in MB; NaN where /proc is missing."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def run_client(url: str, mode: str, timeout: float) -> dict:
    # An inherited PYTHONPATH comes first, so another checkout can be measured (e.g. the one before a change).
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(ROOT)])))
    proc = subprocess.Popen(
        [sys.executable, "-c", CLIENT, url, mode, str(timeout)], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        out, _ = proc.communicate(timeout=KILL_AFTER_S)
    except subprocess.TimeoutExpired:
        peak = high_water_mb(proc.pid)
        proc.kill()
        proc.communicate()
        return {"before_mb": BASELINE_MB, "peak_mb": peak, "seconds": KILL_AFTER_S, "outcome": "killed: still running"}
    return json.loads(out)


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that stops reading resets the connection: expected here


def main() -> None:
    global BASELINE_MB
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=5.0, help="per-call timeout of the client, s")
    args = parser.parse_args()
    bomb = gzip_bomb()
    server = _QuietServer(("127.0.0.1", 0), make_handler(bomb))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    print(f"gzip bomb: {len(bomb):,} bytes -> {1 << 30:,} bytes; per-call timeout {args.timeout:g} s")
    print(f"{'case':<11} {'path':<5} {'RSS before':>10} {'peak RSS':>9} {'growth':>8} {'time':>7}  outcome")
    for case in ("ok", "gzip-bomb", "endless", "slow-loris"):
        for mode in ("sync", "async"):
            r = run_client(f"{base}/{case}", mode, args.timeout)
            if case == "ok":
                BASELINE_MB = r["before_mb"]
            growth = r["peak_mb"] - r["before_mb"]
            print(
                f"{case:<11} {mode:<5} {r['before_mb']:>8.0f}MB {r['peak_mb']:>7.0f}MB {growth:>6.0f}MB "
                f"{r['seconds']:>6.1f}s  {r['outcome']}"
            )
    server.shutdown()


if __name__ == "__main__":
    main()
