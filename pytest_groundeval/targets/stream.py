"""A Server-Sent Events response read to its end and assembled into one JSON document (docs/byo.md).

A mapped target's API may answer ``text/event-stream``, as an OpenAI-compatible chat
endpoint does with ``"stream": true``: ``data: {json}`` events, ended by ``data: [DONE]``.
The harness has already read the whole body within the limits and the deadline
(``targets.bodies``, ``targets.deadline``); ``assemble`` parses it as the SSE format of the
HTML standard (events end at a blank line; ``\\n``, ``\\r\\n`` and ``\\r`` line endings;
``:`` comment lines; several ``data:`` lines joined by ``\\n``; an event cut off by the
end of the body is dropped) and returns the document the map's expressions read:

* ``events``: every event's JSON value, in order, up to ``[DONE]``;
* when the events are chat completion chunks (``"object": "chat.completion.chunk"``, or
  ``choices`` holding ``delta`` objects), also the completion they add up to, as a
  non-streamed ``chat.completion``: per choice ``index`` a ``message`` whose string fields
  (``content``, ``role``, …) are the deltas' pieces joined, ``finish_reason`` the last one
  given; every other top-level key (``id``, ``model``, ``usage``, a ``citations`` list) the
  last non-null value. So ``choices[0].message.content`` reads a streamed answer as it
  reads a plain one.

A chat stream must end with ``data: [DONE]``: without it the stream was cut short and its
answer is partial. An ``event: error``, or an event whose JSON object carries ``error``,
is the API reporting a failure inside a 200 stream. Each is a ``ValueError`` naming it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..core.text import shorten

__all__ = ["DONE", "EVENT_STREAM", "assemble", "events", "is_event_stream"]

EVENT_STREAM = "text/event-stream"
"""The media type of a Server-Sent Events body."""

DONE = "[DONE]"
"""The data of the event that ends an OpenAI-style stream."""

_LINE = re.compile(r"\r\n|\r|\n")


def is_event_stream(content_type: str | None) -> bool:
    """Whether a ``Content-Type`` header names an SSE body."""
    return (content_type or "").split(";", 1)[0].strip().lower() == EVENT_STREAM


def events(text: str) -> list[tuple[str, str]]:
    """The complete events of an SSE body: ``(event type, data)``, type ``"message"`` unless ``event:`` set one.

    An event without a ``data`` field is not dispatched, as the standard says; nor is the
    last one when the body ends before its blank line (it was cut off).
    """
    out: list[tuple[str, str]] = []
    data: list[str] = []
    kind = ""
    for line in _LINE.split(text)[:-1] if text else []:
        if not line:
            if data:
                out.append((kind or "message", "\n".join(data)))
            data, kind = [], ""
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        elif name == "event":
            kind = value
    return out


def _error_of(value: Any) -> str | None:
    if isinstance(value, dict) and value.get("error") not in (None, False, ""):
        error = value["error"]
        message = error.get("message") if isinstance(error, dict) else None
        return str(message) if message else json.dumps(error, ensure_ascii=False, default=str)
    return None


def _is_chunk(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    if value.get("object") == "chat.completion.chunk":
        return True
    choices = value.get("choices")
    return isinstance(choices, list) and any(isinstance(c, dict) and isinstance(c.get("delta"), dict) for c in choices)


def _merge_chunks(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``chat.completion`` that a stream's chunks add up to (see the module's docstring)."""
    merged: dict[str, Any] = {}
    choices: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        for key, value in chunk.items():
            if key != "choices" and value is not None:
                merged[key] = value
        for position, choice in enumerate(chunk.get("choices") or []):
            if not isinstance(choice, dict):
                continue
            index = choice.get("index")
            index = index if isinstance(index, int) and not isinstance(index, bool) else position
            into = choices.setdefault(index, {"index": index, "message": {}, "finish_reason": None})
            delta = choice.get("delta")
            if isinstance(delta, dict):
                message = into["message"]
                for key, value in delta.items():
                    if isinstance(value, str) and isinstance(message.get(key), str):
                        message[key] += value
                    elif value is not None:
                        message[key] = value
            for key, value in choice.items():
                if key not in ("index", "delta") and value is not None:
                    into[key] = value
    merged["object"] = "chat.completion"
    merged["choices"] = [choices[i] for i in sorted(choices)]
    return merged


def assemble(text: str) -> dict[str, Any]:
    """The JSON document of a whole SSE body (see the module's docstring).

    Raises:
        ValueError: an event's data is not JSON; an event reports an error; a chat stream
            ends without ``data: [DONE]``. The message quotes the event.
    """
    values: list[Any] = []
    done = False
    for number, (kind, data) in enumerate(events(text), start=1):
        if data.strip() == DONE:
            done = True
            break
        if kind == "error":
            raise ValueError(f"reported an error inside the stream (event {number}): {shorten(data, 300)}")
        try:
            value = json.loads(data)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"sent stream event {number} whose data is not JSON ({exc}): {shorten(data, 120)!r}"
            ) from None
        reported = _error_of(value)
        if reported is not None:
            raise ValueError(f"reported an error inside the stream (event {number}): {shorten(reported, 300)}")
        values.append(value)
    chunks = [v for v in values if _is_chunk(v)]
    if chunks and not done:
        raise ValueError(
            f"sent a chat completion stream of {len(values)} event(s) that ended before data: {DONE} "
            "(cut short: its answer would be partial)"
        )
    document = _merge_chunks(chunks) if chunks else {}
    document["events"] = values
    return document
