"""The mock provider's answers as pure functions of a request (docs/mock.md).

Nothing here touches the network: the server in :mod:`.server` parses a request,
calls one of these functions and frames the result. Keeping the behaviour pure
makes every answer reproducible and testable without a server.

Rules defined here (documented in ``docs/mock.md``):

- Token count: the number of ``\\w+`` runs plus single non-space punctuation
  characters, over every message content of a request (or every input string).
- Decomposition: sentence split with UTF-8 byte spans and trailing marker runs.
- Generation: echo of the first two ``[S<n>] `` evidence blocks, each sentence
  cited; ``ECHO:`` / ``ECHO-CITED:`` questions.
- Embeddings: 32-dim signed feature hashing of case-folded words.
- Score: a logit from word overlap.
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass
from typing import Any

import xxhash

from pytest_groundeval.core import contract

EMBEDDING_DIM = 32
"""Dimension of every mock embedding vector."""

NO_EVIDENCE_ANSWER = "I could not find evidence to answer."
"""Answer of the generation behaviour when the prompt carries no evidence block."""

ECHO_PREFIX = "ECHO:"
"""Question prefix: the remainder is returned verbatim, uncited (docs/dataset.md adversarial items)."""

ECHO_CITED_PREFIX = "ECHO-CITED:"
"""Question prefix: the remainder is returned followed by `` [S1]``."""

QUESTION_LINE_PREFIX = "Question:"
"""A line with this prefix in the last user message holds the question."""

MAX_EVIDENCE_BLOCKS = 2
"""How many evidence blocks the generation behaviour echoes."""

_FLOAT32 = struct.Struct(f"<{EMBEDDING_DIM}f")
_ZERO_EMBEDDING = _FLOAT32.pack(*[0.0] * EMBEDDING_DIM)
_TOKEN_RE = re.compile(r"\w+|[^\w\s]")
# The token rule as a character class per ASCII byte: "a" word (\w), " " space
# (\s), "." anything else. Built from the same regex classes, so the fast count
# below cannot drift from _TOKEN_RE.
_WORD_CLASS, _SPACE_CLASS, _OTHER_CLASS = "a", " ", "."
_UTF8_CLASSES = (
    bytes(
        ord(_WORD_CLASS if re.match(r"\w", chr(i)) else _SPACE_CLASS if re.match(r"\s", chr(i)) else _OTHER_CLASS)
        for i in range(128)
    )
    + _WORD_CLASS.encode() * 128
)
"""Token class of each UTF-8 byte: ASCII bytes by the regex classes; every byte of a
multi-byte character "a", right for text whose non-ASCII characters are all word characters."""
_ASCII_BYTES = bytes(range(128))
"""Deleting these from UTF-8 leaves the non-ASCII characters, still valid UTF-8."""
_WORD_RE = re.compile(r"\w+")
# An evidence *block* line of the prompt ("[S1] text"), not a citation marker.
_EVIDENCE_LINE_RE = re.compile(r"^\[S(\d+)\] (.*)$", re.MULTILINE)
# Citation markers: the project's one pattern (contract.MARKER_IN_TEXT_PATTERN, "[S1]" or "[1]").
_MARKER_RE = re.compile(contract.MARKER_IN_TEXT_PATTERN)
# A terminator, optional closing quotes/brackets, then what must follow for the
# terminator to end a sentence. ASCII terminators need whitespace, a marker or
# the end after them, so "3.5" and "384.400" never split; CJK full-width
# terminators end a sentence whatever follows, as CJK text has no spaces.
_SENTENCE_END_RE = re.compile(
    r"(?:[.!?][\"'”’»)\]]*(?=\s|" + contract.MARKER_IN_TEXT_PATTERN + r"|$)|[。！？][\"'”’」』)）]*)"
)
_MARKER_RUN_RE = re.compile(r"(?:\s*" + contract.MARKER_IN_TEXT_PATTERN + r")+")
_PARAGRAPH_BREAK_RE = re.compile(r"\n[ \t]*\n")
_TERMINATORS = ".!?。！？"
_CLOSERS = "\"'”’»)]」』）"


def count_tokens(text: str) -> int:
    """Count the mock's tokens in ``text``: ``\\w+`` runs plus single punctuation characters.

    The same rule serves every call (chat prompt and completion, embeddings,
    score), so ``usage`` figures are comparable across calls (docs/mock.md).
    The result always equals ``len(re.findall(r"\\w+|[^\\w\\s]", text))``.
    When every non-ASCII character of the text is a word character (ASCII
    text, Swedish letters; for non-ASCII characters ``\\w`` is ``isalnum``),
    it is computed on the UTF-8 bytes' token classes with C-level byte
    operations, a few times faster than that regex scan (the hot path of every
    request, ``benchmarks/bench_mock.py``); otherwise by the regex.

    Args:
        text: Any Unicode text.

    Returns:
        The token count (0 for empty or whitespace-only text).
    """
    try:
        data = text.encode()
    except UnicodeEncodeError:  # a lone surrogate (JSON allows "\\ud800"): not a word character
        return len(_TOKEN_RE.findall(text))
    if len(data) != len(text) and not data.translate(None, _ASCII_BYTES).decode().isalnum():
        # A non-ASCII space or punctuation mark (typographic quotes and dashes,
        # CJK full stops, no-break spaces): the byte classes cannot tell, the regex can.
        return len(_TOKEN_RE.findall(text))
    classes = data.translate(_UTF8_CLASSES)
    # A word run starts at a word byte that is first or follows a space or other byte.
    word_runs = classes.count(b" a") + classes.count(b".a") + classes.startswith(b"a")
    return word_runs + classes.count(b".")


def message_text(message: Any) -> str:
    """Return the text of one chat message: a string content, or its ``text`` parts joined by newlines.

    Args:
        message: An OpenAI chat message object (``{"role", "content"}``); content
            may be a string, ``None`` or a list of ``{"type": "text", "text": ...}`` parts.

    Returns:
        The message text ("" when there is none).
    """
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part["text"] for part in content if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def prompt_tokens(messages: list[Any]) -> int:
    """Token count over every message content of a chat request (see :func:`count_tokens`)."""
    # One scan over the joined contents: the newline separator adds no token.
    return count_tokens("\n".join([message_text(m) for m in messages]))


def is_decomposition(body: dict[str, Any]) -> bool:
    """Whether a chat request asks for claim decomposition (docs/mock.md).

    True when a system message starts with :data:`contract.DECOMPOSITION_PROMPT`
    or ``response_format.json_schema.name`` is :data:`contract.DECOMPOSITION_SCHEMA_NAME`.
    """
    response_format = body.get("response_format")
    if isinstance(response_format, dict):
        schema = response_format.get("json_schema")
        if isinstance(schema, dict) and schema.get("name") == contract.DECOMPOSITION_SCHEMA_NAME:
            return True
    for message in body.get("messages", ()):
        if isinstance(message, dict) and message.get("role") in ("system", "developer"):
            if message_text(message).lstrip().startswith(contract.DECOMPOSITION_PROMPT):
                return True
    return False


def last_user_text(messages: list[Any]) -> str:
    """Text of the last ``user`` message ("" when there is none)."""
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return message_text(message)
    return ""


@dataclass(frozen=True)
class Sentence:
    """One sentence of a draft, as character offsets into the draft string."""

    start: int
    """Offset of the first non-space character (characters, not bytes)."""
    end: int
    """Offset just past the sentence and its trailing marker run (characters)."""


def split_sentences(text: str) -> list[Sentence]:
    """Split ``text`` into sentences with character offsets (docs/mock.md decomposition rule).

    A sentence ends at ``.``, ``!`` or ``?`` (plus closing quotes or brackets)
    followed by whitespace, a marker (``[S1]``, ``[1]``) or the end of text —
    so a number such as ``3.5`` or ``384.400`` never splits — and at the
    full-width ``。！？`` whatever follows. A blank line also ends a sentence.
    Each sentence extends over a trailing run of markers (``record. [S1][S2]``).
    Spans exclude leading and trailing whitespace; empty pieces are dropped.

    Args:
        text: The draft.

    Returns:
        Sentences in order, as ``[start, end)`` character offsets.
    """
    ends: list[int] = []
    for match in _SENTENCE_END_RE.finditer(text):
        end = match.end()
        run = _MARKER_RUN_RE.match(text, end)
        ends.append(run.end() if run else end)
    ends.extend(m.start() for m in _PARAGRAPH_BREAK_RE.finditer(text))
    ends.append(len(text))
    sentences: list[Sentence] = []
    cursor = 0
    for end in sorted(set(ends)):
        if end <= cursor:
            continue
        piece = text[cursor:end]
        stripped = piece.strip()
        if stripped:
            start = cursor + (len(piece) - len(piece.lstrip()))
            sentences.append(Sentence(start, start + len(stripped)))
        cursor = end
    return sentences


def decompose(draft: str) -> list[dict[str, Any]]:
    """Decompose a draft into claims with exact UTF-8 byte spans (docs/mock.md).

    Args:
        draft: The draft answer.

    Returns:
        ``[{"text": str, "start": int, "end": int, "markers": [str]}]`` where
        ``start``/``end`` are UTF-8 byte offsets into ``draft`` such that
        ``draft.encode()[start:end].decode() == text``, and ``markers`` are the
        marker names inside the span without brackets (``"S1"``, ``"1"``), in
        order of appearance, without duplicates.
    """
    claims: list[dict[str, Any]] = []
    byte_pos = 0
    char_pos = 0
    for sentence in split_sentences(draft):
        byte_pos += len(draft[char_pos : sentence.start].encode())
        sentence_text = draft[sentence.start : sentence.end]
        start = byte_pos
        byte_pos += len(sentence_text.encode())
        char_pos = sentence.end
        markers = list(dict.fromkeys(_MARKER_RE.findall(sentence_text)))
        claims.append({"text": sentence_text, "start": start, "end": byte_pos, "markers": markers})
    return claims


def evidence_blocks(messages: list[Any], limit: int | None = None) -> list[tuple[str, str]]:
    """Find evidence blocks in a prompt: lines starting ``[S<n>] `` in every message, in order.

    Args:
        messages: The chat messages.
        limit: Stop after this many blocks (``None``: find all).

    Returns:
        ``[(marker, text)]`` with ``marker`` like ``"S1"`` and ``text`` the rest
        of the line, stripped; blocks with empty text are dropped.
    """
    blocks: list[tuple[str, str]] = []
    for message in messages:
        for match in _EVIDENCE_LINE_RE.finditer(message_text(message)):
            text = match.group(2).strip()
            if text:
                blocks.append((f"S{match.group(1)}", text))
                if len(blocks) == limit:
                    return blocks
    return blocks


def question_of(messages: list[Any]) -> str:
    """The question of a generation request.

    The last line starting ``Question:`` in the last user message (its remainder,
    stripped); without such a line, the whole last user message, stripped.
    """
    user_text = last_user_text(messages)
    question = None
    for line in user_text.split("\n"):
        stripped = line.strip()
        if stripped.startswith(QUESTION_LINE_PREFIX):
            question = stripped[len(QUESTION_LINE_PREFIX) :].strip()
    return user_text.strip() if question is None else question


def cite_block(marker: str, text: str) -> str:
    """Render one evidence block as cited sentences: each sentence followed by `` [marker]``.

    A block whose last sentence lacks a final full stop gets one, so the mock's
    own decomposition ends the sentence there and attaches the marker to it.
    """
    if text.rstrip(_CLOSERS)[-1:] not in _TERMINATORS:
        text += "."
    first_end = _SENTENCE_END_RE.search(text)
    if first_end is None or first_end.end() == len(text):
        # One sentence ("release 1.1 shipped." has no inner end): skip the splitter on the hot path.
        return f"{text} [{marker}]"
    parts = [text[s.start : s.end] + f" [{marker}]" for s in split_sentences(text)]
    return " ".join(parts)


def generate_answer(messages: list[Any]) -> str:
    """The generation behaviour: a perfectly grounded answer from the prompt (docs/mock.md).

    - Question starting ``ECHO-CITED:``: the remainder (stripped) followed by `` [S1]``.
    - Question starting ``ECHO:``: the remainder (stripped), uncited.
    - Otherwise the first two evidence blocks (:func:`evidence_blocks`), each
      sentence cited with its block's marker (:func:`cite_block`), joined by a space.
    - No evidence block: :data:`NO_EVIDENCE_ANSWER`.
    """
    question = question_of(messages)
    if question.startswith(ECHO_CITED_PREFIX):
        return question[len(ECHO_CITED_PREFIX) :].strip() + " [S1]"
    if question.startswith(ECHO_PREFIX):
        return question[len(ECHO_PREFIX) :].strip()
    blocks = evidence_blocks(messages, MAX_EVIDENCE_BLOCKS)
    if not blocks:
        return NO_EVIDENCE_ANSWER
    return " ".join(cite_block(marker, text) for marker, text in blocks)


def words(text: str) -> list[str]:
    """Case-folded Unicode alphanumeric words of ``text``: runs of ``[^\\W_]`` (underscore separates words)."""
    # \w+ over text with underscores blanked equals [^\W_]+, and runs faster.
    return _WORD_RE.findall(text.casefold().replace("_", " "))


def embed_text(text: str) -> list[float]:
    """The mock embedding of ``text``: 32-dim signed feature hashing, L2-normalised (docs/mock.md).

    Each case-folded alphanumeric word is hashed with ``xxh3_64`` of its UTF-8
    bytes; bucket ``h % 32`` receives +1, or -1 when bit 63 of ``h`` is set.
    The sum is L2-normalised and rounded to float32 so that the float and the
    base64 (little-endian float32) encodings carry the same values. Text with
    no word gives the all-zero vector.

    Returns:
        32 floats, each exactly representable as float32.
    """
    return list(_FLOAT32.unpack(embed_bytes(text)))


def embed_bytes(text: str) -> bytes:
    """The mock embedding of ``text`` as 32 little-endian float32 (128 bytes): :func:`embed_text`, packed.

    This is the payload of ``encoding_format: "base64"`` before base64, built
    without a detour through a float list.
    """
    counts: dict[int, float] = {}
    hash_word = xxhash.xxh3_64_intdigest
    for word in words(text):
        h = hash_word(word.encode())
        bucket = h % EMBEDDING_DIM
        counts[bucket] = counts.get(bucket, 0.0) + (-1.0 if h >> 63 else 1.0)
    norm = math.hypot(*counts.values())
    if not norm:
        return _ZERO_EMBEDDING
    # Sparse until here: a short text touches few of the 32 buckets.
    vector = [0.0] * EMBEDDING_DIM
    for bucket, value in counts.items():
        vector[bucket] = value / norm
    return _FLOAT32.pack(*vector)


def score_logit(query: str, document: str) -> float:
    """Relevance logit of ``document`` for ``query``: ``8 * overlap - 4`` (docs/mock.md, vLLM score shape).

    ``overlap`` is the fraction of ``query``'s distinct words (:func:`words`)
    that occur in ``document``; 0 when ``query`` has no word. The logit lies in
    [-4, 4]; its sigmoid is about 0.018 for no overlap and 0.982 for full overlap.
    """
    query_words = set(words(query))
    if not query_words:
        return -4.0
    overlap = len(query_words & set(words(document))) / len(query_words)
    return 8.0 * overlap - 4.0
