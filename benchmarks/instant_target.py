"""A target that answers instantly: the docs/target-contract.md REST contract with canned, valid answers.

Run: ``python benchmarks/instant_target.py --port 0 --api-key k`` prints
``listening on http://127.0.0.1:PORT`` once it accepts connections. Use it as

    pytest --eval-dataset=D --eval-url=http://127.0.0.1:PORT --eval-api-key=k
    pytest --eval-dataset=D --eval-spawn="python benchmarks/instant_target.py --port {port} --api-key {api_key}"

``--delay-ms N`` adds N ms of latency to each generate answer (awaited, so
answers overlap): a target that is slow but not busy, for concurrency runs.

It exists to measure the harness, not a target: every answer is prepared when
a document is ingested, so ``POST /v1/generate`` costs one JSON parse, one
regex search and one dict lookup. On ingest each line of the document's
canonical text (docs/dataset.md: a text file's LF-normalised text, or a json file's
records serialised with sorted keys and compact separators) that carries a key
such as ``K00042`` becomes a prepared answer: the line itself, cited ``[S1]``,
with an evidence span of the line's exact UTF-8 byte offsets and one claim
marked ``supported``. A question naming the key gets that answer, so the
synthetic datasets of ``synthetic.py`` pass item for item. A question with no
known key gets the first line of a document under its ``find`` label.

``records``, ``query`` and ``compare`` answer minimal valid shapes (records are
not stored), enough for a run to proceed, not for temporal items to pass.
Every call but ``/readyz`` needs ``Authorization: Bearer <api key>`` (401 otherwise).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import time

from aiohttp import web

KEY_PATTERN = re.compile(r"\bK\d+\b")
"""A record key in a corpus line or a question (``synthetic.record_key``)."""

_JSON = "application/json"


def canonical_text(document: dict) -> str:
    """Canonical text of an ingested document (docs/dataset.md), from its ``format`` and ``content``."""
    content = document["content"]
    if document.get("format", "json") == "text":
        return content.replace("\r\n", "\n").replace("\r", "\n")
    records = content if isinstance(content, list) else [content]
    return "\n".join(json.dumps(r, sort_keys=True, separators=(",", ":"), ensure_ascii=False) for r in records)


def prepared_answer(document: str, line: str, start: int) -> bytes:
    """The generate response citing ``line`` of ``document`` at byte offset ``start``, as JSON bytes."""
    end = start + len(line.encode("utf-8"))
    answer = f"{line} [S1]"
    body = {
        "answer": answer,
        "traceId": f"instant-{start}",
        "evidence": [{"marker": "S1", "document": document, "start": start, "end": end}],
        "claims": [
            {"text": answer, "start": 0, "end": len(answer.encode("utf-8")), "markers": ["S1"], "verdict": "supported"}
        ],
        "usage": {"promptTokens": 64, "completionTokens": 24},
    }
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


class InstantTarget:
    """The state of one server: ingested documents and the answers prepared from them.

    Args:
        api_key: The bearer key every call but ``/readyz`` must carry.
        delay_ms: Latency added to each generate answer (an awaited sleep: the
            server stays free for other requests, as a target waiting on its model is).
    """

    def __init__(self, api_key: str, delay_ms: float = 0.0) -> None:
        self.authorization = f"Bearer {api_key}"
        self.delay_s = delay_ms / 1000
        self.documents: dict[str, tuple[str, int]] = {}  # name -> (content hash, id)
        self.by_key: dict[str, bytes] = {}
        self.by_label: dict[str | None, bytes] = {}
        self.records_written = 0

    def ingest(self, document: dict) -> dict:
        """Store a document (idempotent on name and hash) and prepare its answers."""
        name = document["name"]
        known = self.documents.get(name)
        if known is not None and known[0] == document.get("contentHash"):
            return {"documentId": known[1], "txStart": _now_ms()}
        doc_id = len(self.documents) + 1
        self.documents[name] = (document.get("contentHash"), doc_id)
        offset = 0
        for line in canonical_text(document).split("\n"):
            answer = None
            for key in KEY_PATTERN.findall(line):
                answer = answer or prepared_answer(name, line, offset)
                self.by_key.setdefault(key, answer)
            if line.strip():
                first = answer or prepared_answer(name, line, offset)
                self.by_label.setdefault(document.get("label"), first)
                self.by_label.setdefault(None, first)
            offset += len(line.encode("utf-8")) + 1
        return {"documentId": doc_id, "txStart": _now_ms()}

    def answer(self, question: str, find: str | None) -> bytes | None:
        """The prepared answer for a question: its key's line, else its label's first line."""
        match = KEY_PATTERN.search(question)
        if match is not None and match.group(0) in self.by_key:
            return self.by_key[match.group(0)]
        return self.by_label.get(find) or self.by_label.get(None)

    def app(self) -> web.Application:
        """The aiohttp application serving the REST contract (docs/target-contract.md)."""
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/v1/info", self._info)
        app.router.add_post("/v1/documents", self._documents)
        app.router.add_post("/v1/generate", self._generate)
        app.router.add_post("/v1/records", self._records)
        app.router.add_post("/v1/query", self._query)
        app.router.add_post("/v1/compare", self._compare)
        return app

    # -- handlers

    def _denied(self, request: web.Request) -> web.Response | None:
        if request.headers.get("Authorization") != self.authorization:
            return web.json_response({"error": "missing or wrong API key"}, status=401)
        return None

    async def _readyz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _info(self, request: web.Request) -> web.Response:
        return self._denied(request) or web.json_response(
            {"models": {"generate": "instant-generate", "embed": "instant-embed"}}
        )

    async def _documents(self, request: web.Request) -> web.Response:
        return self._denied(request) or web.json_response(self.ingest(json.loads(await request.read())))

    async def _generate(self, request: web.Request) -> web.Response:
        denied = self._denied(request)
        if denied is not None:
            return denied
        body = json.loads(await request.read())
        answer = self.answer(body.get("question") or "", body.get("find"))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if answer is None:
            return web.json_response({"error": "no documents ingested"}, status=409)
        return web.Response(body=answer, content_type=_JSON)

    async def _records(self, request: web.Request) -> web.Response:
        denied = self._denied(request)
        if denied is not None:
            return denied
        await request.read()
        self.records_written += 1
        return web.json_response({"id": f"r{self.records_written}", "txStart": _now_ms()})

    async def _query(self, request: web.Request) -> web.Response:
        return self._denied(request) or web.json_response({"records": []})

    async def _compare(self, request: web.Request) -> web.Response:
        return self._denied(request) or web.json_response({"added": [], "removed": [], "changed": []})


def _now_ms() -> int:
    return int(time.time() * 1000)


async def serve(host: str, port: int, api_key: str, delay_ms: float = 0.0) -> None:
    """Serve until cancelled; print the bound URL on stdout once listening."""
    runner = web.AppRunner(InstantTarget(api_key, delay_ms).app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = runner.addresses[0][1]  # port 0: the kernel chose it
    print(f"listening on http://{host}:{bound}", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Serve the docs/target-contract.md REST contract with instant, canned answers"
    )
    parser.add_argument("--host", default="127.0.0.1", help="Interface to bind (loopback)")
    parser.add_argument("--port", type=int, default=0, help="Port to bind (0: any free port)")
    parser.add_argument(
        "--api-key",
        default=os.environ.get("GROUNDEVAL_API_KEY", "k"),
        help="Bearer key (default env GROUNDEVAL_API_KEY, else k)",
    )
    parser.add_argument("--delay-ms", type=float, default=0.0, help="Latency added to each generate answer, in ms")
    args = parser.parse_args(argv)
    try:
        asyncio.run(serve(args.host, args.port, args.api_key, args.delay_ms))
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
