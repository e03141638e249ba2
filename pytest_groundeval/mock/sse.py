"""Server-Sent Events framing of chat completion chunks (docs/mock.md).

Every event is ``data: <json>\\n\\n`` where ``<json>`` is one line: ``json.dumps``
escapes newlines and control characters, and :func:`dumps` also escapes
U+2028/U+2029, which some SSE and JavaScript parsers treat as line breaks.
Content pieces are whole code points, so no event splits a UTF-8 character.
"""

from __future__ import annotations

import json
import re
from typing import Any

DONE_EVENT = b"data: [DONE]\n\n"
"""The last event of a completed stream."""

MAX_PIECE_CHARS = 6
"""Longest content piece per event, in code points (CJK text has no spaces to split at)."""

_PIECE_RE = re.compile(r"\S*\s*")
# Built once: json.dumps with non-default options builds a new encoder per call,
# a measurable share of a small response (benchmarks/bench_mock.py).
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def dumps(value: Any) -> str:
    """Compact JSON on one line, non-ASCII kept, U+2028/U+2029 escaped."""
    text = _ENCODER.encode(value)
    if "\u2028" in text or "\u2029" in text:
        text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return text


def content_pieces(content: str) -> list[str]:
    """Split content into stream pieces: a word with its trailing whitespace, at most :data:`MAX_PIECE_CHARS` code points.

    ``"".join(content_pieces(c)) == c`` always holds.
    """
    pieces: list[str] = []
    for word in _PIECE_RE.findall(content):
        if len(word) <= MAX_PIECE_CHARS:
            if word:
                pieces.append(word)
        else:
            pieces.extend(word[i : i + MAX_PIECE_CHARS] for i in range(0, len(word), MAX_PIECE_CHARS))
    return pieces


class ChunkFramer:
    """Builds the SSE events of one streamed completion from prebuilt byte templates.

    Args:
        completion_id: The ``id`` of every chunk.
        created: The ``created`` of every chunk (seconds since the epoch).
        model: The ``model`` of every chunk.
    """

    __slots__ = ("_head", "_content_prefix", "_content_suffix")

    def __init__(self, completion_id: str, created: int, model: str) -> None:
        self._head = (
            '{"id":'
            + dumps(completion_id)
            + ',"object":"chat.completion.chunk","created":'
            + str(created)
            + ',"model":'
            + dumps(model)
            + ","
        )
        self._content_prefix = ("data: " + self._head + '"choices":[{"index":0,"delta":{"content":').encode()
        self._content_suffix = b'},"logprobs":null,"finish_reason":null}]}\n\n'

    def role_event(self) -> bytes:
        """The first event: ``delta`` carries the assistant role and empty content."""
        return self._event(
            '"choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}'
        )

    def content_event(self, piece: str) -> bytes:
        """One content event carrying ``piece``."""
        return self._content_prefix + dumps(piece).encode() + self._content_suffix

    def stop_event(self) -> bytes:
        """The event with ``finish_reason: "stop"`` and an empty delta."""
        return self._event('"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}]}')

    def usage_event(self, usage: dict[str, int]) -> bytes:
        """The ``stream_options.include_usage`` event: ``choices: []`` and ``usage``."""
        return self._event('"choices":[],"usage":' + dumps(usage) + "}")

    def malformed_event(self) -> bytes:
        """An event whose data is not valid JSON (the ``malformed`` fault)."""
        return self._event('"choices":[{"index":0,"delta":{"content":')

    def cut_fragment(self) -> bytes:
        """The first bytes of an event, never completed (the ``cut`` fault)."""
        return ("data: " + self._head).encode()

    def _event(self, rest: str) -> bytes:
        return ("data: " + self._head + rest + "\n\n").encode()
