"""``MappedTarget``: an existing HTTP API as a ``Target``, through a target map (docs/byo.md, "Mapped targets").

The map (``targets.mapping``) says how to ask the API a question and how to read its
answer. The exchange is ``HttpTarget``'s, unchanged: the per-call deadline
(``--eval-timeout``), the response size limit (``--eval-max-response-bytes``), content
decoding, no redirects followed, the ``X-Groundeval-Run-Id`` / ``-Item-Id`` headers,
no retries, and errors that name the call, the URL, the status and the start of the
body, with every ``${VAR}`` value of the map masked. Only the reading differs: the body
is JSON of the API's own shape, or Server-Sent Events read to the end and assembled
(``targets.stream``), and the map's expressions turn it into the contract's generate
response (docs/target-contract.md). A body they cannot read is an error of that item
naming the expression.

A map describes ``generate`` and, optionally, ``ingest``; it has no ``records``,
``query`` or ``compare``, so ``cannot_run`` refuses temporal items (and qa, adversarial
or citation items when the map lacks what they read) before any call.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping

from .http import HttpTarget, ResponseParser, decode_body
from .mapping import Rendered, TargetMap
from .protocol import DEFAULT_MAX_RESPONSE_BYTES, JsonObject, TargetError, call_ids
from .stream import assemble, is_event_stream

__all__ = ["MappedTarget"]


class MappedTarget(HttpTarget):
    """A ``Target`` over an API described by a target map (docs/byo.md, "Mapped targets").

    Args:
        target_map: The checked map (``mapping.load_map``).
        timeout_s: Per-call deadline in seconds, from sending to the last body byte.
        max_response_bytes: Largest response body accepted (``--eval-max-response-bytes``).
        concurrency: Most async calls in flight (``--eval-concurrency``), halved on an HTTP 429
            and sent again as ``--eval-url``'s are (``HttpTarget``).

    ``info`` returns None (a map names no models: the lineage comes from
    ``--eval-model-generate`` / ``--eval-model-embed``). Without an ``ingest`` template
    ``ingest`` sends nothing: the API holds its own data.
    """

    def __init__(
        self,
        target_map: TargetMap,
        timeout_s: float = 60.0,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        concurrency: int | None = None,
    ) -> None:
        super().__init__(
            target_map.origin, None, timeout_s, max_response_bytes, concurrency, secrets=target_map.secrets
        )
        self.target_map = target_map

    def __repr__(self) -> str:
        return f"MappedTarget({str(self.target_map.path)!r})"

    def cannot_run(self, kind: str) -> str | None:
        """Why items of ``kind`` cannot run against this target, or None (``TargetMap.cannot_run``)."""
        return self.target_map.cannot_run(kind)

    # -- reading

    def _read(self, text: str, content_type: str | None) -> JsonObject:
        document = assemble(text) if is_event_stream(content_type) else json.loads(text)
        return self.target_map.response.read(document)

    def _generate_request(self, question: str, find: str | None) -> Rendered:
        run_id, item_id = call_ids.get()
        return self.target_map.request.render(
            {"question": question, "find": find, "item_id": item_id, "run_id": run_id}
        )

    def _ingest_request(self, document: JsonObject) -> Rendered | None:
        if self.target_map.ingest is None:
            return None
        values = {
            "name": document.get("name"),
            "label": document.get("label"),
            "format": document.get("format"),
            "content_hash": document.get("contentHash"),
            "content": document.get("content"),
            "run_id": call_ids.get()[0],
        }
        return self.target_map.ingest.render(values)

    @staticmethod
    def _decoded(
        request: Rendered, sent: tuple[int, Mapping[str, str], bytes], name: str, parse: ResponseParser
    ) -> JsonObject:
        """The response to ``request``, its status checked and its body read by ``parse`` (``http.decode_body``)."""
        status, headers, data = sent
        return decode_body(
            request.call, request.url, status, data, headers.get("content-type"), name, headers.get("location"), parse
        )

    @staticmethod
    def _written(document: JsonObject) -> JsonObject:
        """What ``ingest`` returns: the document's name as its id (the API's reply is not read)."""
        return {"documentId": str(document.get("name")), "txStart": 0}

    # -- Target protocol

    def info(self) -> JsonObject | None:
        """None: a map names no models (see the class docstring)."""
        return None

    def timed_generate(self, question: str, find: str | None) -> tuple[JsonObject, float]:
        """Ask the API ``question`` as the map says; ``(generate response, latency_ms)``.

        Raises:
            TargetError: as ``HttpTarget``'s calls, and when the map cannot read the body
                (the message names the expression and quotes the start of the body).
        """
        started = time.perf_counter()
        with self._masked():
            request = self._generate_request(question, find)
            status, headers, data = self._exchange(
                request.call, request.method, request.url, request.body, headers=request.headers
            )
            body = self._decoded(request, (status, headers, data), "generate", self._read)
        return body, (time.perf_counter() - started) * 1000.0

    async def agenerate(self, question: str, find: str | None) -> JsonObject:
        """Async ``generate``."""
        with self._masked():
            request = self._generate_request(question, find)

            async def attempt() -> JsonObject:
                status, headers, data = await self._aexchange(
                    request.call, request.method, request.url, request.body, headers=request.headers, encoded=True
                )
                self._refuse_rate_limited(request.call, request.url, status, headers, data)
                return self._decoded(request, (status, headers, data), "generate", self._read)

            return await self._rate_limited(attempt)

    def ingest(self, document: JsonObject) -> JsonObject:
        """Send one corpus document with the map's ``ingest`` template, if it has one.

        Raises:
            TargetError: the API answered a non-2xx status (or as any call fails).
        """
        with self._masked():
            request = self._ingest_request(document)
            if request is not None:
                status, headers, data = self._exchange(
                    request.call, request.method, request.url, request.body, headers=request.headers
                )
                self._decoded(request, (status, headers, data), "ingest", lambda text, _type: self._written(document))
        return self._written(document)

    async def aingest(self, document: JsonObject) -> JsonObject:
        """Async ``ingest``."""
        with self._masked():
            request = self._ingest_request(document)
            if request is not None:

                async def attempt() -> None:
                    status, headers, data = await self._aexchange(
                        request.call, request.method, request.url, request.body, headers=request.headers, encoded=True
                    )
                    self._refuse_rate_limited(request.call, request.url, status, headers, data)
                    self._decoded(
                        request, (status, headers, data), "ingest", lambda text, _type: self._written(document)
                    )

                await self._rate_limited(attempt)
        return self._written(document)

    def _no_call(self, name: str) -> TargetError:
        return TargetError(
            f"the target map {self.target_map.path.name} describes no {name} call (docs/byo.md): "
            "temporal items need a target of the REST contract",
            call=name,
        )

    def records(self, step: JsonObject) -> JsonObject:
        """Refused: a map has no records call (``TargetError``)."""
        raise self._no_call("records")

    def query(self, body: JsonObject) -> JsonObject:
        """Refused: a map has no query call (``TargetError``)."""
        raise self._no_call("query")

    def compare(self, body: JsonObject) -> JsonObject:
        """Refused: a map has no compare call (``TargetError``)."""
        raise self._no_call("compare")

    async def arecords(self, step: JsonObject) -> JsonObject:
        """Refused, as ``records``."""
        raise self._no_call("records")

    async def aquery(self, body: JsonObject) -> JsonObject:
        """Refused, as ``query``."""
        raise self._no_call("query")

    async def acompare(self, body: JsonObject) -> JsonObject:
        """Refused, as ``compare``."""
        raise self._no_call("compare")
