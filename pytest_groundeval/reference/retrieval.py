"""Documents to chunks, and chunks to evidence: canonical text, hybrid ranking, prompt.

Canonical text (docs/dataset.md), against which every evidence offset is measured in
UTF-8 bytes:

- ``json``: each record ``json.dumps(r, sort_keys=True, separators=(",", ":"),
  ensure_ascii=False)``, records joined by ``\\n``; one chunk per record.
- ``text``: the text with ``\\r\\n`` and ``\\r`` turned into ``\\n``; one chunk
  per paragraph (paragraphs are separated by blank lines; a chunk's span
  excludes the surrounding whitespace).

Ranking (docs/target-contract.md): among the chunks of the tenant's current documents with the
requested label, ``score = LEXICAL_WEIGHT * bm25 / max_bm25 + SEMANTIC_WEIGHT *
max(0, cosine)``, where ``bm25`` scores the question's content tokens
(``scoring.content_tokens``) against the chunk's tokens (``scoring.tokenize``)
and ``cosine`` compares provider embeddings of question and chunk. Ties break
by document name, then chunk order. The top ``k`` chunks become evidence blocks
``[S1]``, ``[S2]``, … in rank order.
"""

from __future__ import annotations

import functools
import json
import math
import re
import struct
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.scoring import content_tokens, tokenize
from .store import ChunkRow, NewChunk

LEXICAL_WEIGHT = 0.6
"""Weight of the normalised BM25 score; the lexical side dominates because it sees exact terms."""
SEMANTIC_WEIGHT = 0.4
"""Weight of the embedding cosine (negative cosines count as 0)."""
DEFAULT_TOP_K = 4
"""Evidence blocks per answer."""
BM25_K1 = 1.2
BM25_B = 0.75

_PARAGRAPH_SEPARATOR = re.compile(r"\n[ \t]*\n\s*")


@dataclass(frozen=True)
class Span:
    """A chunk of a document's canonical text."""

    start: int
    """UTF-8 byte offset of the first byte."""
    end: int
    """UTF-8 byte offset just past the last byte."""
    text: str
    """``canonical.encode()[start:end].decode()``."""


def canonical_record(record: Any) -> str:
    """One JSON record in canonical form: sorted keys, compact separators, UTF-8 kept (docs/dataset.md)."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_document(format: str, content: Any) -> tuple[str, list[Span]]:
    """Canonical text of a document and its chunks (docs/dataset.md).

    Args:
        format: ``json`` or ``text``.
        content: for ``json`` a list of records or one object; for ``text`` a string.

    Returns:
        ``(canonical_text, spans)``; spans in document order, byte offsets into the text.

    Raises:
        ValueError: unknown format, or content of the wrong type for it.
    """
    if format == "json":
        records = content if isinstance(content, list) else [content]
        pieces = [canonical_record(r) for r in records]
        spans, offset = [], 0
        for piece in pieces:
            size = len(piece.encode("utf-8"))
            spans.append(Span(offset, offset + size, piece))
            offset += size + 1  # the "\n" joining records
        return "\n".join(pieces), spans
    if format == "text":
        if not isinstance(content, str):
            raise ValueError("text content must be a string")
        text = content.replace("\r\n", "\n").replace("\r", "\n")
        return text, paragraph_spans(text)
    raise ValueError(f"unknown format {format!r}; expected 'json' or 'text'")


def paragraph_spans(text: str) -> list[Span]:
    """Paragraphs of LF-normalised ``text`` (split on blank lines), stripped, with byte offsets."""
    spans: list[Span] = []
    char_cursor = 0
    byte_cursor = 0
    pieces: list[tuple[int, int]] = []
    last = 0
    for match in _PARAGRAPH_SEPARATOR.finditer(text):
        pieces.append((last, match.start()))
        last = match.end()
    pieces.append((last, len(text)))
    for start, end in pieces:
        piece = text[start:end]
        stripped = piece.strip()
        if not stripped:
            continue
        first = start + (len(piece) - len(piece.lstrip()))
        byte_cursor += len(text[char_cursor:first].encode("utf-8"))
        size = len(stripped.encode("utf-8"))
        spans.append(Span(byte_cursor, byte_cursor + size, stripped))
        byte_cursor += size
        char_cursor = first + len(stripped)
    return spans


def render_chunk(text: str) -> str:
    """A chunk as one prompt line: every whitespace run (newlines included) becomes one space."""
    return " ".join(text.split())


def pack_vector(vector: Sequence[float]) -> bytes:
    """float32 little-endian bytes of a vector (how embeddings are stored)."""
    return struct.pack(f"<{len(vector)}f", *vector)


def unpack_vector(blob: bytes) -> list[float]:
    """Inverse of :func:`pack_vector`."""
    return list(struct.unpack(f"<{len(blob) // 4}f", blob))


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity; 0.0 when either vector is zero or the dimensions differ."""
    if len(a) != len(b):
        return 0.0
    dot = sum(x * y for x, y in zip(a, b))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def new_chunks(spans: list[Span], vectors: list[list[float]]) -> list[NewChunk]:
    """Pair spans with their embeddings for storage."""
    return [NewChunk(s.start, s.end, s.text, render_chunk(s.text), pack_vector(v)) for s, v in zip(spans, vectors)]


@functools.lru_cache(maxsize=4096)
def _token_counts(document: str) -> Counter[str]:
    """``Counter(tokenize(document))``, cached: every query scores the candidate chunks again.

    Tokenizing the candidates was most of a query's CPU. The result is shared
    between calls, so callers must only read it.
    """
    return Counter(tokenize(document))


def bm25_scores(query: str, documents: Sequence[str]) -> list[float]:
    """BM25 of ``query``'s distinct content tokens against each document (Okapi, k1=1.2, b=0.75)."""
    terms = set(content_tokens(query))
    doc_tokens = [_token_counts(d) for d in documents]
    if not terms or not doc_tokens:
        return [0.0] * len(documents)
    count = len(doc_tokens)
    average = sum(sum(c.values()) for c in doc_tokens) / count or 1.0
    idf = {}
    for term in terms:
        df = sum(1 for c in doc_tokens if term in c)
        idf[term] = math.log(1 + (count - df + 0.5) / (df + 0.5))
    scores = []
    for counts in doc_tokens:
        length = sum(counts.values())
        score = 0.0
        for term in terms:
            tf = counts.get(term, 0)
            if tf:
                score += idf[term] * tf * (BM25_K1 + 1) / (tf + BM25_K1 * (1 - BM25_B + BM25_B * length / average))
        scores.append(score)
    return scores


@dataclass(frozen=True)
class Evidence:
    """One evidence block of an answer."""

    marker: str
    """``S1``, ``S2``, … in rank order."""
    chunk: ChunkRow
    score: float
    """The hybrid score that ranked it."""

    def to_wire(self) -> dict[str, Any]:
        """``{marker, document, start, end}`` as ``/v1/generate`` returns it (docs/target-contract.md)."""
        return {
            "marker": self.marker,
            "document": self.chunk.document_name,
            "start": self.chunk.start,
            "end": self.chunk.end,
        }


def rank_chunks(
    question: str, question_vector: Sequence[float], chunks: Sequence[ChunkRow], top_k: int = DEFAULT_TOP_K
) -> list[Evidence]:
    """Hybrid ranking (module docstring); returns the top ``top_k`` as evidence ``S1``…``Sk``."""
    lexical = bm25_scores(question, [c.text for c in chunks])
    best_lexical = max(lexical, default=0.0)
    scored = []
    for index, (chunk, lex) in enumerate(zip(chunks, lexical)):
        semantic = max(0.0, cosine(question_vector, unpack_vector(chunk.embedding)))
        normalised = lex / best_lexical if best_lexical > 0 else 0.0
        scored.append((LEXICAL_WEIGHT * normalised + SEMANTIC_WEIGHT * semantic, index, chunk))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [Evidence(f"S{rank + 1}", chunk, score) for rank, (score, _, chunk) in enumerate(scored[:top_k])]


GENERATION_INSTRUCTIONS = (
    "You answer questions using only the evidence blocks in the user message. "
    "Each block is one line that starts with its marker in square brackets. "
    "Write short factual sentences and end every sentence with the marker of each block that supports it. "
    "If the evidence does not answer the question, say so and cite nothing."
)
"""System message of the generation call."""


def generation_messages(question: str, evidence: Sequence[Evidence]) -> list[dict[str, str]]:
    """Chat messages for the generation call.

    The user message lists the evidence lines ``[S1] <chunk text on one line>``
    and ends with a line ``Question: <question>`` (the question's own line
    breaks collapsed), which is where the mock provider reads the question.
    """
    lines = ["Evidence:"] + [f"[{e.marker}] {e.chunk.rendered}" for e in evidence]
    if not evidence:
        lines.append("(no evidence found)")
    lines += ["", f"Question: {' '.join(question.split())}"]
    return [
        {"role": "system", "content": GENERATION_INSTRUCTIONS},
        {"role": "user", "content": "\n".join(lines)},
    ]
