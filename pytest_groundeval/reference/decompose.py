"""Claim decomposition: the provider call that cuts an answer into claims, and pinning each claim to the answer.

The server asks its provider to split a draft answer into claims (``decomposition_messages``,
``DECOMPOSITION_RESPONSE_FORMAT``; the prompt starts with the contract's, docs/mock.md), then
``parse_decomposition`` locates every claim at exact UTF-8 byte offsets of the answer
(docs/target-contract.md), ready for ``verify.verify_claims``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..core import contract
from .provider import ProviderError

MARKER_RE = re.compile(contract.MARKER_IN_TEXT_PATTERN)
"""A citation marker as it appears in an answer (the project's one pattern, ``contract.MARKER_IN_TEXT_PATTERN``)."""


DECOMPOSITION_INSTRUCTIONS = (
    contract.DECOMPOSITION_PROMPT
    + " Each claim is one sentence of the draft copied exactly, including its trailing citation markers;"
    ' markers lists the marker names without brackets, e.g. ["S1"].'
)
"""System message of the decomposition call; starts with the contract's prompt (docs/mock.md)."""

DECOMPOSITION_RESPONSE_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {
        "name": contract.DECOMPOSITION_SCHEMA_NAME,
        "strict": True,
        "schema": {
            "type": "object",
            "additionalProperties": False,
            "required": ["claims"],
            "properties": {
                "claims": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["text", "start", "end", "markers"],
                        "properties": {
                            "text": {"type": "string"},
                            "start": {"type": "integer"},
                            "end": {"type": "integer"},
                            "markers": {"type": "array", "items": {"type": "string"}},
                        },
                    },
                }
            },
        },
    },
}
"""Structured-output request for providers that support it (the mock also keys on its name)."""


def decomposition_messages(draft: str) -> list[dict[str, str]]:
    """Chat messages for the decomposition call: the instructions, then the draft as the user message."""
    return [{"role": "system", "content": DECOMPOSITION_INSTRUCTIONS}, {"role": "user", "content": draft}]


@dataclass(frozen=True)
class Claim:
    """One claim located in the answer."""

    text: str
    start: int
    """UTF-8 byte offset into the answer."""
    end: int
    """Exclusive UTF-8 byte end offset."""
    markers: list[str]


def parse_decomposition(content: str, draft: str) -> list[Claim]:
    """Read the decomposer's JSON and pin every claim to exact byte offsets in ``draft``.

    A claim whose offsets do not slice its text out of the draft is searched for
    (first occurrence at or after the previous claim); its markers are the
    decomposer's plus any ``[S#]`` inside its text. A ```` ```json ```` fence
    around the JSON is tolerated.

    Raises:
        ProviderError: not JSON, wrong shape, or a claim that does not occur in the draft
            (a decomposer that paraphrases cannot be verified span by span).
    """
    body = _unfence(content)
    try:
        parsed = json.loads(body)
    except ValueError:
        raise ProviderError(f"provider returned a claim decomposition that is not JSON: {content[:120]!r}") from None
    items = parsed.get("claims") if isinstance(parsed, dict) else None
    if not isinstance(items, list):
        raise ProviderError("provider returned a claim decomposition without a 'claims' list")
    data = draft.encode("utf-8")
    claims: list[Claim] = []
    cursor = 0
    for index, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            raise ProviderError(f"claim decomposition item {index} has no 'text' string")
        text = item["text"]
        start, end = _locate(data, text, item.get("start"), item.get("end"), cursor)
        if start is None or end is None:  # _locate gives both or neither
            raise ProviderError(f"claim decomposition item {index} ({text[:60]!r}) does not occur in the draft")
        listed = item.get("markers")
        given = listed if isinstance(listed, list) else []
        markers = [str(m).strip("[]") for m in given] + MARKER_RE.findall(text)
        claims.append(Claim(text, start, end, list(dict.fromkeys(markers))))
        cursor = end
    return claims


def _locate(data: bytes, text: str, start: Any, end: Any, cursor: int) -> tuple[int, int] | tuple[None, None]:
    needle = text.encode("utf-8")
    if isinstance(start, int) and isinstance(end, int) and 0 <= start <= end and data[start:end] == needle:
        return start, end
    found = data.find(needle, cursor)
    if found < 0:
        found = data.find(needle)
    return (found, found + len(needle)) if found >= 0 and needle else (None, None)


def _unfence(content: str) -> str:
    stripped = content.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        if stripped.rstrip().endswith("```"):
            stripped = stripped.rstrip()[:-3]
    return stripped
