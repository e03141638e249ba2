"""Reading a target's response body within limits (docs/target-contract.md, "Limits").

``BodyReader`` takes the body's bytes as they arrive off the wire (after
chunked transfer decoding, before content decoding), undoes its
``Content-Encoding`` (``gzip``, ``deflate``, stacked in any order) itself, and
counts both what arrived and what it inflated to: either passing the limit
raises ``BodyError`` at once, so a compressed bomb or an endless body never
holds more than the limit plus one piece (``PIECE_BYTES``) in memory.
``decode_text`` turns the bytes into text strictly and says where they stop
being valid. Both HTTP paths (httpx and aiohttp) read bodies through here, so
they fail in the same words.

This module imports no HTTP library.
"""

from __future__ import annotations

import codecs
import zlib
from collections.abc import Iterable, Iterator

__all__ = ["ACCEPT_ENCODING", "PIECE_BYTES", "BodyError", "BodyReader", "decode_text", "describe_size"]

ACCEPT_ENCODING = "gzip, deflate"
"""The ``Accept-Encoding`` the harness sends: the content codings ``BodyReader`` undoes."""

PIECE_BYTES = 64 * 1024
"""Most bytes one inflate step may produce before the count is checked."""

_GZIP_MAGIC = b"\x1f\x8b"


class BodyError(Exception):
    """A response body cannot be accepted; the message says why, in the words of a ``TargetError``.

    Attributes:
        head: The first bytes of the (decoded) body read so far, for the error's excerpt.
    """

    def __init__(self, message: str, head: bytes = b"") -> None:
        super().__init__(message)
        self.head = head


def describe_size(n: int) -> str:
    """``n`` bytes in words: ``"512 bytes"``, ``"16 MiB (16,777,216 bytes)"``."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            amount = n / size
            text = f"{amount:.0f}" if amount == int(amount) else f"{amount:.1f}"
            return f"{text} {unit} ({n:,} bytes)"
    return f"{n} byte" + ("" if n == 1 else "s")


class _Inflater:
    """Undoes one gzip or deflate coding, yielding pieces of at most ``PIECE_BYTES``."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        self._gzip = coding in ("gzip", "x-gzip")
        self._zlib = self._new()
        self._started = False
        self._trailer = b""
        self._ignore_rest = False

    def _new(self, raw_deflate: bool = False) -> zlib._Decompress:
        if self._gzip:
            return zlib.decompressobj(16 + zlib.MAX_WBITS)
        return zlib.decompressobj(-zlib.MAX_WBITS if raw_deflate else zlib.MAX_WBITS)

    def feed(self, data: bytes) -> Iterator[bytes]:
        while data and not self._ignore_rest:
            if self._zlib.eof:
                # A gzip body may be several members one after the other (as `cat a.gz b.gz`);
                # anything else after the end of the stream is ignored.
                self._trailer += data
                if len(self._trailer) < 2:
                    return
                if not (self._gzip and self._trailer.startswith(_GZIP_MAGIC)):
                    self._ignore_rest = True
                    return
                data, self._trailer = self._trailer, b""
                self._zlib = self._new()
            elif not self._started and not self._gzip:
                # "deflate" should be zlib-wrapped (RFC 9110), but some servers send raw deflate.
                try:
                    zlib.decompressobj(zlib.MAX_WBITS).decompress(data[:2])
                except zlib.error:
                    self._zlib = self._new(raw_deflate=True)
            self._started = True
            try:
                while True:
                    out = self._zlib.decompress(data, PIECE_BYTES)
                    data = self._zlib.unconsumed_tail
                    if out:
                        yield out
                    if self._zlib.eof:
                        data = self._zlib.unused_data
                        break
                    if not data and len(out) < PIECE_BYTES:
                        return
            except zlib.error as exc:
                raise BodyError(f"returned a body that is not valid {self.coding} ({exc})") from None

    def finish(self) -> None:
        if self._started and not self._zlib.eof:
            raise BodyError(f"returned a {self.coding} body that ends before its compressed stream does (truncated)")


def _through(inflater: _Inflater, pieces: Iterable[bytes]) -> Iterator[bytes]:
    for piece in pieces:
        yield from inflater.feed(piece)


class BodyReader:
    """Collects one response body, undoing its content coding, within ``limit`` bytes.

    Args:
        content_encoding: The response's ``Content-Encoding`` header (None or "" for none);
            a list such as ``"deflate, gzip"`` is undone last coding first.
        limit: Most bytes accepted, counted both as received and as decoded.
        content_length: The ``Content-Length`` the response declares, if any: one above
            the limit is refused before any byte is read.

    Raises (from the constructor, ``feed`` and ``finish``):
        BodyError: a coding other than gzip / deflate / identity; a declared, received
            or decoded size above ``limit``; a corrupt or truncated compressed stream.
    """

    def __init__(self, content_encoding: str | None, limit: int, content_length: str | None = None) -> None:
        self.limit = limit
        self.received = 0
        """Bytes received so far (as sent, before content decoding)."""
        self.size = 0
        """Bytes of decoded body so far."""
        self._parts: list[bytes] = []
        codings = [c.strip().lower() for c in (content_encoding or "").split(",")]
        codings = [c for c in codings if c and c != "identity"]
        unknown = [c for c in codings if c not in ("gzip", "x-gzip", "deflate")]
        if unknown:
            raise BodyError(
                f"returned a body in Content-Encoding {unknown[0]!r}, which the harness did not ask for "
                f"(it sends Accept-Encoding: {ACCEPT_ENCODING})"
            )
        self._inflaters = [_Inflater(c) for c in reversed(codings)]
        self.coding = ", ".join(codings)
        declared = (content_length or "").strip()
        if declared.isdigit() and int(declared) > limit:
            raise BodyError(
                f"declares a body of {describe_size(int(declared))} (Content-Length), over the limit of "
                f"{describe_size(limit)} (--eval-max-response-bytes)"
            )

    def feed(self, data: bytes) -> None:
        """Take the next bytes of the body as received; raise ``BodyError`` past the limit."""
        self.received += len(data)
        if self.received > self.limit:
            raise self._too_large(f"{describe_size(self.received)} received before the harness stopped reading")
        pieces: Iterable[bytes] = (data,)
        for inflater in self._inflaters:
            pieces = _through(inflater, pieces)
        for piece in pieces:
            self.size += len(piece)
            if self.size > self.limit:
                raise self._too_large(
                    f"{describe_size(self.received)} of {self.coding} received inflated to "
                    f"{describe_size(self.size)} before the harness stopped reading"
                )
            self._parts.append(piece)

    def finish(self) -> bytes:
        """The whole decoded body; raise ``BodyError`` if a compressed stream was cut short."""
        for inflater in self._inflaters:
            inflater.finish()
        data = b"".join(self._parts)
        self._parts = [data]  # the pieces are not kept beside the whole (a 16 MiB body is held once)
        return data

    def head(self, n: int = 2048) -> bytes:
        """The first ``n`` decoded bytes read so far."""
        out = b""
        for part in self._parts:
            out += part[: n - len(out)]
            if len(out) >= n:
                break
        return out

    def _too_large(self, what: str) -> BodyError:
        return BodyError(
            f"returned a body over the limit of {describe_size(self.limit)} (--eval-max-response-bytes): {what}",
            head=self.head(),
        )


def charset_of(content_type: str | None) -> str:
    """The ``charset`` parameter of a ``Content-Type`` header, else ``"utf-8"`` (JSON's encoding)."""
    for param in (content_type or "").split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip().strip("\"'"):
            return value.strip().strip("\"'")
    return "utf-8"


def decode_text(body: bytes, content_type: str | None) -> str:
    """Decode a body strictly in its declared charset (default UTF-8).

    Raises:
        BodyError: the charset is unknown to Python, or the bytes are not valid in it
            (the message gives the byte offset and the bytes there).
    """
    charset = charset_of(content_type)
    try:
        codecs.lookup(charset)
    except LookupError:
        raise BodyError(f"returned a body in charset {charset!r}, which is not a known text encoding") from None
    try:
        return body.decode(charset)
    except UnicodeDecodeError as exc:
        raise BodyError(
            f"returned a body that is not valid {charset} text: byte offset {exc.start} "
            f"({body[exc.start : exc.start + 4]!r}…: {exc.reason})"
        ) from None
