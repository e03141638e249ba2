"""Peak memory and wall time of a pytest session refusing one large malformed answer (issue 19).

Run: ``python benchmarks/bench_malformed_body.py [--size-mib 15] [--rounds 3]`` (about 30 s
on the current code; ``BENCH_REV=4e1a432 ... --size-mib 2`` measures the code before the
fix, which needs about 0.5 GB and 15 s per MiB of body).

One dataset of one qa item; three target processes (stdlib HTTP servers on
127.0.0.1, started by this script with ``--serve``) that answer ``POST /v1/generate``
with

- ``malformed``: ``{"answer": "x", "claims": [], "evidence": [[], [], …]}`` of
  ``--size-mib`` MiB (the body of issue 19: every evidence entry is a list);
- ``well-formed``: a valid answer of the same size (its ``answer`` is the long part);
- ``small``: a valid answer of a few hundred bytes, the baseline of the session itself.

Each round runs one fresh ``pytest --eval-dataset=… --eval-url=…`` session per
target, interleaved; peak RSS comes from ``os.wait4`` (``_harness.run_measured``).
Reported, as medians over the rounds:

- peak memory of the malformed session over the small one, divided by the body size
  (issue 19's goal: at most 4);
- wall time of the malformed session over the well-formed one (the refusal should
  cost no more than reading a good answer of that size).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import (
    PYTHON,
    QUIET_PLUGINS,
    check,
    machine_note,
    median,
    pytest_env,
    run_measured,
    spread,
    table,
    write_ini,
)

MIB = 1 << 20
TEXT = b"Alpha ships in May.\n"
SMALL = {
    "answer": "Alpha ships in May [S1].",
    "evidence": [{"marker": "S1", "document": "a.txt", "start": 0, "end": 19}],
    "claims": [{"text": "Alpha ships in May", "start": 0, "end": 18, "markers": ["S1"], "verdict": "supported"}],
}


def body_of(kind: str, size: int) -> bytes:
    """The generate answer of target ``kind``, ``size`` bytes long (``small``: a few hundred)."""
    if kind == "small":
        return json.dumps(SMALL).encode()
    if kind == "malformed":
        head, tail = b'{"answer": "x", "claims": [], "evidence": [', b"[]]}"
        return head + b"[], " * ((size - len(head) - len(tail)) // 4) + tail
    filler = "Alpha ships in May. " * (size // 20)
    answer = dict(SMALL, answer=SMALL["answer"] + " " + filler)
    return json.dumps(answer).encode()


def serve(kind: str, size: int) -> None:
    """Serve the target ``kind`` until killed; print its URL first."""
    generate = body_of(kind, size)
    replies = {
        "/readyz": b'{"status": "ready"}',
        "/v1/documents": b'{"documentId": "a.txt", "txStart": 1}',
        "/v1/generate": generate,
    }

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _reply(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = replies.get(self.path)
            self.send_response(200 if body is not None else 404)
            body = body if body is not None else b"{}"
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _reply

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.handle_error = lambda *args: None  # a client that stops reading early: expected
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


def write_dataset(root: Path) -> Path:
    """One qa item over one text document."""
    import xxhash

    (root / "corpus").mkdir(parents=True)
    (root / "corpus" / "a.txt").write_bytes(TEXT)
    manifest = {
        "version": "v1",
        "corpus": [{"name": "a.txt", "label": "A", "file": "a.txt", "format": "text"}],
        "corpusHashes": {"a.txt": xxhash.xxh3_64_hexdigest(TEXT)},
        "items": [{"id": "qa-alpha", "kind": "qa", "question": "When does Alpha ship?", "find": "A",
                   "expectedEvidence": ["Alpha ships in May."], "truths": ["Alpha ships in May."]}],
    }  # fmt: skip
    (root / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=float, default=15.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve", nargs=2, metavar=("KIND", "BYTES"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve[0], int(args.serve[1]))
        return
    import subprocess

    size = int(args.size_mib * MIB)
    kinds = ("small", "well-formed", "malformed")
    servers, urls = [], {}
    try:
        for kind in kinds:
            proc = subprocess.Popen([PYTHON, __file__, "--serve", kind, str(size)], stdout=subprocess.PIPE, text=True)
            servers.append(proc)
            urls[kind] = proc.stdout.readline().strip().removeprefix("listening on ")
        sizes = {kind: len(body_of(kind, size)) for kind in kinds}
        with tempfile.TemporaryDirectory(prefix="bench-malformed-") as tmp:
            root = write_ini(Path(tmp))
            dataset = write_dataset(root / "ds")
            env = pytest_env()
            figures: dict[str, list] = {kind: [] for kind in kinds}
            for _ in range(args.rounds):
                for kind in kinds:
                    cmd = [PYTHON, "-m", "pytest", *QUIET_PLUGINS, "-q", f"--eval-dataset={dataset}",
                           f"--eval-url={urls[kind]}", "--eval-api-key=bench-key-0001"]  # fmt: skip
                    measured = check(run_measured(cmd, cwd=root, env=env), kind, ok=(0, 1))
                    if kind == "malformed" and "must be an object" not in measured.output:
                        raise RuntimeError(
                            f"the malformed answer was not refused as expected:\n{measured.output[-2000:]}"
                        )
                    figures[kind].append(measured)
    finally:
        for proc in servers:
            proc.kill()
            proc.wait()
            proc.stdout.close()
    print(machine_note())
    print(
        f"body: {sizes['malformed'] / MIB:.1f} MiB malformed, {sizes['well-formed'] / MIB:.1f} MiB well-formed; {args.rounds} round(s)\n"
    )
    rows = []
    for kind in kinds:
        runs = figures[kind]
        rows.append(
            [
                kind,
                f"{sizes[kind]:,}",
                spread([m.wall_s for m in runs]),
                spread([m.max_rss_mib for m in runs], "{:.0f}"),
            ]
        )
    print(table(["target answer", "bytes", "session wall s", "session peak RSS MiB"], rows))
    base = median([m.max_rss_mib for m in figures["small"]])
    over = [(m.max_rss_mib - base) * MIB / sizes["malformed"] for m in figures["malformed"]]
    well_over = [(m.max_rss_mib - base) * MIB / sizes["well-formed"] for m in figures["well-formed"]]
    time_ratio = median([m.wall_s for m in figures["malformed"]]) / median([m.wall_s for m in figures["well-formed"]])
    print()
    print(f"peak memory over the small-answer session / body size: malformed {spread(over)} (goal <= 4), "
          f"well-formed {spread(well_over)}")  # fmt: skip
    print(f"wall time, malformed / well-formed session: {time_ratio:.2f}")


if __name__ == "__main__":
    main()
