"""The reference target's OpenAI-compatible provider client (aiohttp): embeddings, chat, SSE.

Everything a production RAG server needs from a provider and nothing more:
``/embeddings`` in batches, ``/chat/completions`` streamed (read with
:class:`SSEDecoder`, our own Server-Sent Events reader) and non-streamed (claim
decomposition).

Failure policy (docs/target-contract.md, issue 4): every failure ends in :class:`ProviderError`
whose message names the cause, e.g. ``provider returned HTTP 500 for
/chat/completions`` or ``stream ended before [DONE]``; the server turns it into
HTTP 502. HTTP 429, HTTP 5xx and connection failures are retried with
exponential backoff (``backoff_base_s * 2**n``), a ``Retry-After`` header
replacing the backoff (capped at ``retry_after_cap_s``), at most
``max_attempts`` attempts, all inside one overall ``timeout_s`` budget per
call, so a slow provider can never hang a request. A stream that breaks or
carries malformed data is not retried: part of it may already have been billed
and a production server would surface it rather than pay twice.
"""

from __future__ import annotations

import asyncio
import base64
import email.utils
import json
import re
import struct
import time
from collections.abc import AsyncIterable, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import aiohttp

T = TypeVar("T")

_LINE_END = re.compile(rb"\r\n|\r|\n")

CHAT_PATH = "/chat/completions"
EMBEDDINGS_PATH = "/embeddings"


class ProviderError(Exception):
    """A provider call failed for good. ``str(error)`` names the cause (shown in the 502 body)."""


class _Retryable(Exception):
    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


@dataclass
class Usage:
    """Token counts as the provider reported them."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, other: Usage) -> None:
        """Add ``other``'s counts to this one."""
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens

    @classmethod
    def from_wire(cls, usage: Any) -> Usage:
        """Read an OpenAI ``usage`` object (missing or odd values count as 0)."""
        if not isinstance(usage, dict):
            return cls()
        prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
        return cls(
            prompt_tokens=prompt if isinstance(prompt, int) else 0,
            completion_tokens=completion if isinstance(completion, int) else 0,
        )


# --------------------------------------------------------------------------- SSE


@dataclass(frozen=True)
class SSEEvent:
    """One dispatched Server-Sent Event."""

    event: str
    """The ``event:`` field; ``message`` when absent."""
    data: str
    """The ``data:`` lines joined by ``\\n``."""


@dataclass
class SSEDecoder:
    """Incremental Server-Sent Events decoder (the WHATWG event-stream format).

    Feed it bytes exactly as they arrive: an event, a line or a UTF-8 character
    may be split across reads. Lines end in ``\\n``, ``\\r\\n`` or ``\\r``;
    lines starting with ``:`` are comments; an event is dispatched at a blank
    line; an event left incomplete at end of stream is discarded (a stream cut
    mid-event loses that event rather than yielding half of it).
    """

    _buffer: bytes = b""
    _data: list[str] = field(default_factory=list)
    _event: str = ""

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Add bytes; return the events they complete, in order."""
        buffer = self._buffer + chunk
        events: list[SSEEvent] = []
        position = 0
        while (match := _LINE_END.search(buffer, position)) is not None:
            if match.group() == b"\r" and match.end() == len(buffer):
                # A CR at the end of a read may be the first half of CRLF: wait for more.
                break
            event = self._process_line(buffer[position : match.start()].decode("utf-8", errors="replace"))
            position = match.end()
            if event is not None:
                events.append(event)
        self._buffer = buffer[position:]
        return events

    def close(self) -> list[SSEEvent]:
        """End of stream: a held trailing CR ends its line; returns any event that completes.

        An event still unterminated after that is never dispatched (see :meth:`unterminated_data`).
        """
        if not self._buffer.endswith(b"\r"):
            return []
        line, self._buffer = self._buffer[:-1], b""
        event = self._process_line(line.decode("utf-8", errors="replace"))
        return [] if event is None else [event]

    def unterminated_data(self) -> str:
        """The data of an event begun but never terminated by a blank line ("" if none)."""
        lines = list(self._data)
        tail = self._buffer.decode("utf-8", errors="replace")
        if tail.startswith("data:"):
            lines.append(tail[5:].removeprefix(" "))
        return "\n".join(lines)

    def _process_line(self, line: str) -> SSEEvent | None:
        if line == "":
            if not self._data:
                self._event = ""
                return None
            event = SSEEvent(event=self._event or "message", data="\n".join(self._data))
            self._data, self._event = [], ""
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        return None


@dataclass
class ChatStream:
    """Accumulates an OpenAI chat-completions stream from its SSE events."""

    parts: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    done: bool = False

    def add(self, event: SSEEvent) -> None:
        """Take one event.

        Raises:
            ProviderError: the event is an error (``event: error`` or an ``error``
                object in a 200 stream) or its data is not JSON.
        """
        if event.data.strip() == "[DONE]":
            self.done = True
            return
        try:
            chunk = json.loads(event.data)
        except ValueError:
            raise ProviderError(f"provider sent malformed JSON in the stream: {event.data[:120]!r}") from None
        if event.event == "error" or (isinstance(chunk, dict) and "error" in chunk):
            raise ProviderError(f"provider reported an error inside the stream: {_error_text(chunk)}")
        if not isinstance(chunk, dict):
            raise ProviderError(f"provider sent a stream chunk that is not a JSON object: {event.data[:120]!r}")
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") if isinstance(choice, dict) else None
            content = delta.get("content") if isinstance(delta, dict) else None
            if isinstance(content, str):
                self.parts.append(content)
        if chunk.get("usage") is not None:
            # Some providers repeat cumulative usage on every chunk: keep the last report.
            self.usage = Usage.from_wire(chunk["usage"])

    @property
    def text(self) -> str:
        """The generated text so far."""
        return "".join(self.parts)


async def read_chat_stream(chunks: AsyncIterable[bytes]) -> tuple[str, Usage]:
    """Read a whole chat-completions SSE stream.

    Args:
        chunks: the response body as it arrives, in arbitrary pieces.

    Returns:
        ``(text, usage)``.

    Raises:
        ProviderError: ``stream ended before [DONE]`` when the body ends (or the
            connection breaks) without the ``[DONE]`` sentinel; error events and
            malformed JSON as in :meth:`ChatStream.add`.
    """
    decoder, stream = SSEDecoder(), ChatStream()
    try:
        async for chunk in chunks:
            for event in decoder.feed(chunk):
                stream.add(event)
                if stream.done:
                    return stream.text, stream.usage
    except (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError, ConnectionError) as exc:
        raise ProviderError(f"stream ended before [DONE]: the connection broke mid-stream ({exc})") from None
    for event in decoder.close():
        stream.add(event)
    if stream.done or decoder.unterminated_data().strip() == "[DONE]":
        # A provider that closes right after "data: [DONE]" without the blank line still finished.
        return stream.text, stream.usage
    raise ProviderError("stream ended before [DONE]")


def _error_text(body: Any) -> str:
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or error.get("code") or error)
    return str(error if error is not None else body)[:200]


# ----------------------------------------------------------------------- client


@dataclass(frozen=True)
class ProviderSettings:
    """Where the provider is and how patient to be with it."""

    llm_url: str
    """OpenAI-style base URL ending in ``/v1`` for chat completions."""
    embed_url: str
    """OpenAI-style base URL ending in ``/v1`` for embeddings."""
    api_key: str | None = None
    """Sent as ``Authorization: Bearer``; None sends no header."""
    timeout_s: float = 30.0
    """Overall budget of one provider call, retries and waits included, in seconds."""
    max_attempts: int = 3
    """Attempts per call for retryable failures (429, 5xx, connection errors)."""
    backoff_base_s: float = 0.25
    """First retry delay; doubles per attempt when no ``Retry-After`` is given."""
    retry_after_cap_s: float = 5.0
    """Upper bound on any single wait, ``Retry-After`` included."""
    embed_batch_size: int = 64
    """Inputs per ``/embeddings`` request."""


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP date); None if absent/bad."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - (time.time() if now is None else now))


class ProviderClient:
    """Calls an OpenAI-compatible provider over one shared ``aiohttp.ClientSession``.

    Args:
        session: the app's session (created on startup, closed on cleanup).
        settings: URLs, key, timeout and retry policy.
    """

    def __init__(self, session: aiohttp.ClientSession, settings: ProviderSettings) -> None:
        self.session = session
        self.settings = settings

    async def embed(self, texts: list[str], model: str) -> tuple[list[list[float]], Usage]:
        """Embed ``texts`` in batches of ``embed_batch_size``.

        Returns:
            One vector per input, in input order, and the summed usage.

        Raises:
            ProviderError: a call failed, or the response's shape is wrong.
        """
        vectors: list[list[float]] = []
        usage = Usage()
        size = self.settings.embed_batch_size
        for offset in range(0, len(texts), size):
            batch = texts[offset : offset + size]
            payload = {"model": model, "input": batch, "encoding_format": "float"}
            body = await self._call(self.settings.embed_url, EMBEDDINGS_PATH, payload, _read_json(EMBEDDINGS_PATH))
            vectors.extend(_embedding_vectors(body, len(batch)))
            usage.add(Usage.from_wire(body.get("usage")))
        return vectors, usage

    async def chat_stream(
        self, messages: list[dict[str, str]], model: str, headers: Mapping[str, str] | None = None
    ) -> tuple[str, Usage]:
        """Streamed chat completion with ``stream_options.include_usage``. Returns ``(text, usage)``.

        ``headers`` are sent with the request besides ``Authorization`` (the reference sends the
        harness's ``X-Groundeval-Attempt`` on, docs/target-contract.md).

        Raises:
            ProviderError: HTTP failure after retries, timeout, a broken or malformed stream.
        """
        payload = {
            "model": model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
            "temperature": 0,
        }
        return await self._call(self.settings.llm_url, CHAT_PATH, payload, _read_stream, headers)

    async def chat(
        self, messages: list[dict[str, str]], model: str, response_format: dict[str, Any] | None = None
    ) -> tuple[str, Usage]:
        """Non-streamed chat completion. Returns the first choice's content and the usage.

        Raises:
            ProviderError: HTTP failure after retries, timeout, malformed body, no content.
        """
        payload: dict[str, Any] = {"model": model, "messages": messages, "temperature": 0}
        if response_format is not None:
            payload["response_format"] = response_format
        body = await self._call(self.settings.llm_url, CHAT_PATH, payload, _read_json(CHAT_PATH))
        return _completion_content(body), Usage.from_wire(body.get("usage"))

    async def _call(
        self,
        base_url: str,
        path: str,
        payload: dict[str, Any],
        read: Callable[[aiohttp.ClientResponse], Awaitable[T]],
        headers: Mapping[str, str] | None = None,
    ) -> T:
        settings = self.settings
        loop = asyncio.get_running_loop()
        deadline = loop.time() + settings.timeout_s
        url = base_url.rstrip("/") + path
        attempt = 0
        while True:
            attempt += 1
            remaining = deadline - loop.time()
            try:
                if remaining <= 0:
                    raise TimeoutError
                return await asyncio.wait_for(self._attempt(url, path, payload, read, headers), remaining)
            except (TimeoutError, asyncio.TimeoutError):
                raise ProviderError(f"provider timed out after {settings.timeout_s:g} s for {path}") from None
            except _Retryable as exc:
                delay = exc.retry_after_s
                if delay is None:
                    delay = settings.backoff_base_s * 2 ** (attempt - 1)
                delay = min(delay, settings.retry_after_cap_s)
                if attempt >= settings.max_attempts or loop.time() + delay >= deadline:
                    raise ProviderError(f"{exc} (gave up after {attempt} attempt{'s' * (attempt > 1)})") from None
                await asyncio.sleep(delay)

    async def _attempt(
        self,
        url: str,
        path: str,
        payload: dict[str, Any],
        read: Callable[[aiohttp.ClientResponse], Awaitable[T]],
        extra_headers: Mapping[str, str] | None = None,
    ) -> T:
        headers = dict(extra_headers or {})
        if self.settings.api_key:
            headers["Authorization"] = f"Bearer {self.settings.api_key}"
        try:
            async with self.session.post(url, json=payload, headers=headers) as response:
                if response.status == 429 or response.status >= 500:
                    raise _Retryable(
                        f"provider returned HTTP {response.status} for {path}",
                        parse_retry_after(response.headers.get("Retry-After")),
                    )
                if response.status >= 400:
                    text = (await response.text(errors="replace"))[:200]
                    raise ProviderError(f"provider returned HTTP {response.status} for {path}: {text}")
                return await read(response)
        except aiohttp.ClientConnectorError as exc:
            raise _Retryable(f"provider unreachable at {url}: {exc.os_error or exc}") from None
        except aiohttp.ServerDisconnectedError:
            raise _Retryable(f"provider closed the connection without answering {path}") from None
        except aiohttp.ClientError as exc:
            raise ProviderError(f"provider call to {path} failed: {exc}") from None


def _read_json(path: str) -> Callable[[aiohttp.ClientResponse], Awaitable[dict[str, Any]]]:
    async def read(response: aiohttp.ClientResponse) -> dict[str, Any]:
        raw = await response.read()
        try:
            body = json.loads(raw)
        except ValueError:
            raise ProviderError(f"provider returned malformed JSON for {path}: {raw[:120]!r}") from None
        if not isinstance(body, dict):
            raise ProviderError(f"provider returned JSON that is not an object for {path}")
        if "error" in body:
            raise ProviderError(f"provider reported an error for {path}: {_error_text(body)}")
        return body

    return read


async def _read_stream(response: aiohttp.ClientResponse) -> tuple[str, Usage]:
    if response.content_type == "application/json":
        # A provider that ignores stream=true (or reports an error as JSON) answers a plain body.
        body = await _read_json(CHAT_PATH)(response)
        return _completion_content(body), Usage.from_wire(body.get("usage"))
    return await read_chat_stream(response.content.iter_any())


def _completion_content(body: dict[str, Any]) -> str:
    try:
        content = body["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise ProviderError(
            f"provider returned a completion without choices[0].message.content for {CHAT_PATH}"
        ) from None
    if not isinstance(content, str):
        raise ProviderError(f"provider returned non-text message content for {CHAT_PATH}")
    return content


def _embedding_vectors(body: dict[str, Any], expected: int) -> list[list[float]]:
    data = body.get("data")
    if not isinstance(data, list) or len(data) != expected:
        got = len(data) if isinstance(data, list) else "no"
        raise ProviderError(f"provider returned {got} embeddings for {expected} inputs on {EMBEDDINGS_PATH}")
    ordered = sorted(data, key=lambda item: item.get("index", 0) if isinstance(item, dict) else 0)
    vectors = []
    for item in ordered:
        raw = item.get("embedding") if isinstance(item, dict) else None
        if isinstance(raw, str):
            packed = base64.b64decode(raw)
            vectors.append(list(struct.unpack(f"<{len(packed) // 4}f", packed)))
        elif isinstance(raw, list) and all(isinstance(x, (int, float)) for x in raw):
            vectors.append([float(x) for x in raw])
        else:
            raise ProviderError(f"provider returned an embedding that is not a list of numbers on {EMBEDDINGS_PATH}")
    return vectors
