"""A small stdlib HTTP target for tests/targets/test_targets.py, spawned as a real child process.

It speaks just enough of the docs/target-contract.md REST contract to exercise the spawn
machinery and ``HttpTarget``:

- ``GET /readyz`` (no key needed); ``GET /echo`` → what the process
  received: ``{"argv", "env", "cwd", "pid"}``.
- Every ``/v1/*`` call checks ``Authorization: Bearer <key>`` (the key from
  ``--api-key``, else ``GROUNDEVAL_API_KEY``) and answers 401 otherwise.
- ``POST /v1/generate`` picks its behaviour from the question: ``ok`` (a valid
  response), ``no-claims``, ``bad-verdict``, ``bad-json``, ``not-object``,
  ``http-500``, ``slow`` (sleeps 3 s first).
- ``GET /v1/info`` → models, or 404 with ``--no-info``.
- ``GET /readyz`` answers ``--readyz-status`` (default 200).

Start-up flags for the spawn tests: ``--delay-listen S`` (sleep before binding),
``--ignore-sigterm``, ``--grandchild PIDFILE`` (start a sleeping grandchild and
write its pid), ``--mark FILE`` (append ``server`` to FILE at start-up),
``--on-sigterm FILE`` (on SIGTERM, take 0.3 s, write FILE, exit 0).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GOOD_GENERATE = {
    "answer": "Alpha ships in May [S1].",
    "traceId": "t-1",
    "evidence": [{"marker": "S1", "document": "eval/a.json", "start": 0, "end": 10}],
    "claims": [{"text": "Alpha ships in May", "start": 0, "end": 18, "markers": ["S1"], "verdict": "supported"}],
    "usage": {"promptTokens": 12, "completionTokens": 7},
}


def generate_reply(question: str) -> tuple[int, bytes]:
    """Return the (status, body) the fake sends for a generate question."""
    if question == "http-500":
        return 500, b'{"error": "internal failure in the fake"}'
    if question == "bad-json":
        return 200, b'{"answer": "trunc'
    if question == "not-object":
        return 200, b'["a", "list"]'
    body = json.loads(json.dumps(GOOD_GENERATE))
    if question == "no-claims":
        del body["claims"]
    elif question == "bad-verdict":
        body["claims"][0]["verdict"] = "probably"
    elif question == "slow":
        time.sleep(3)
    return 200, json.dumps(body).encode()


def make_handler(api_key: str, no_info: bool, readyz_status: int) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            sys.stdout.write("fake target: " + format % args + "\n")
            sys.stdout.flush()

        def reply(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def authorised(self) -> bool:
            if self.headers.get("Authorization") == f"Bearer {api_key}":
                return True
            self.reply(401, b'{"error": "missing or wrong API key"}')
            return False

        def read_json(self) -> dict:
            length = int(self.headers.get("Content-Length") or 0)
            return json.loads(self.rfile.read(length) or b"{}")

        def do_GET(self) -> None:
            if self.path == "/readyz":
                self.reply(readyz_status, b'{"ready": true}')
            elif self.path == "/echo":
                env = {k: v for k, v in os.environ.items() if k.startswith(("GROUNDEVAL_", "OPENAI_", "FAKE_"))}
                echo = {"argv": sys.argv[1:], "env": env, "cwd": os.getcwd(), "pid": os.getpid()}
                self.reply(200, json.dumps(echo).encode())
            elif self.path == "/v1/info" and self.authorised():
                if no_info:
                    self.reply(404, b'{"error": "not found"}')
                else:
                    self.reply(200, b'{"models": {"generate": "fake-gen", "embed": "fake-embed"}}')

        def do_POST(self) -> None:
            if not self.authorised():
                return
            body = self.read_json()
            if self.path == "/v1/generate":
                self.reply(*generate_reply(body.get("question", "")))
            elif self.path == "/v1/documents":
                self.reply(200, json.dumps({"documentId": "doc-" + body["name"], "txStart": 1000}).encode())
            elif self.path == "/v1/records":
                self.reply(200, json.dumps({"id": "rec-1", "txStart": 2000}).encode())
            elif self.path == "/v1/query":
                self.reply(200, json.dumps({"records": [{"id": "rec-1", "label": body.get("label")}]}).encode())
            elif self.path == "/v1/compare":
                self.reply(200, b'{"added": [], "removed": [], "changed": []}')
            else:
                self.reply(404, b'{"error": "not found"}')

    return Handler


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=int(os.environ.get("GROUNDEVAL_PORT", "0")))
    parser.add_argument("--api-key", default=os.environ.get("GROUNDEVAL_API_KEY", ""))
    parser.add_argument("--delay-listen", type=float, default=0.0)
    parser.add_argument("--ignore-sigterm", action="store_true")
    parser.add_argument("--grandchild")
    parser.add_argument("--mark")
    parser.add_argument("--no-info", action="store_true")
    parser.add_argument("--on-sigterm")
    parser.add_argument("--readyz-status", type=int, default=200)
    args, _unknown = parser.parse_known_args()

    if args.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if args.on_sigterm:

        def shut_down(signum: int, frame: object) -> None:
            time.sleep(0.3)  # a slow, orderly shutdown that SIGKILL would cut short
            with open(args.on_sigterm, "w") as done:
                done.write("clean shutdown")
            os._exit(0)

        signal.signal(signal.SIGTERM, shut_down)
    if args.mark:
        with open(args.mark, "a") as mark:
            mark.write("server\n")
    if args.grandchild:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        with open(args.grandchild, "w") as pidfile:
            pidfile.write(str(child.pid))
    if args.delay_listen:
        print(f"fake target: waiting {args.delay_listen} s before listening", flush=True)
        time.sleep(args.delay_listen)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), make_handler(args.api_key, args.no_info, args.readyz_status))
    print(f"fake target: listening on {args.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
