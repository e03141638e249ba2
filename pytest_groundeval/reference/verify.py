"""Claim decomposition and verification against the cited evidence (docs/scoring.md, docs/target-contract.md).

Verdict rule for one claim (the claim text with its ``[S#]`` markers removed):

1. No marker, or only markers that name no evidence block of this answer →
   ``unsupported`` (an uncited claim is never supported).
2. Otherwise the cited spans' texts are the claim's only admissible source.
   The claim is ``supported`` when both hold:

   - ``scoring.claim_is_true(claim, truths)`` with the cited span texts as the
     truths (plus their concatenation when several are cited, so a claim that
     joins two cited facts can be covered): ≥ 0.6 token coverage, and every
     number and negation of the claim present in that span (docs/scoring.md guard);
   - the claim brings in **no content word** the cited spans lack. Content
     words are ``scoring.content_tokens`` (function words are stop words and
     allowed). A claim word is accounted for by a span word when they are
     equal or share a stem by a crude rule (:func:`same_word`): when both
     words have at least ``MIN_STEM_CHARS`` characters, a common prefix of at
     least ``STEM_PREFIX`` characters or of at least ``STEM_SHARE`` of the
     shorter word (inflection drift: "ships"/"shipped", "öppnade"/"öppnar");
     a shorter word only matches itself plus an inflection ending from
     ``SHORT_WORD_ENDINGS`` ("run"/"runs", "år"/"åren"), so a one-letter token
     such as the "d" of "D.C." never accounts for "designed". Numbers must
     match exactly; negations match by ``scoring.negation_key`` ("isn't" =
     "is not").

3. A claim that passes 2 but drops a negation is not supported either: the
   cited sentence that best covers the claim (most shared content words) must
   carry no negation the claim lacks ("It does not change the API" cited for
   "It changes the API" is ``contradicted``). Only that sentence counts, so a
   claim may leave out a negated *other* sentence of the same span.
4. When it is not supported and every content word it brings in is a number
   or a negation, the claim is ``contradicted`` (a swapped figure, an inserted
   "not": the span says otherwise); any other failure is ``unsupported`` (a
   one-word swap such as "rose" → "fell" or "Stockholm" → "Oslo", or too little
   coverage). ``unverifiable`` is never produced by this server.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core import contract
from ..core.contract import strip_markers
from ..core.scoring import claim_is_true, content_tokens, is_number_token, negation_key, tokenize
from .provider import ProviderError

STEM_PREFIX = 5
"""A shared prefix this long makes two words the same word for verification."""
STEM_SHARE = 0.8
"""…or a shared prefix covering this share of the shorter word."""
MIN_STEM_CHARS = 4
"""Both words need this many characters for the prefix rules; a shorter word needs an ending match.

Without it the 80 % rule lets a one-letter token (the "d" of "D.C.") account
for any word that starts with its letter ("designed").
"""
SHORT_WORD_ENDINGS = ("s", "es", "'s", "d", "ed", "ing", "er", "ar", "en", "et", "na")
"""Inflection endings (English, Swedish) by which a word of 2–3 characters may grow: "run"/"runs", "år"/"åren"."""

MARKER_RE = re.compile(contract.MARKER_IN_TEXT_PATTERN)
"""A citation marker as it appears in an answer (the project's one pattern, ``contract.MARKER_IN_TEXT_PATTERN``)."""


def same_word(claim_word: str, span_word: str) -> bool:
    """Whether a span word accounts for a claim word (docs/target-contract.md: inflection drift allowed).

    Equal words match. Numbers match only themselves; negations match by
    ``scoring.negation_key``. Otherwise, when both words have at least
    :data:`MIN_STEM_CHARS` characters, they match when their common prefix has
    :data:`STEM_PREFIX` characters or :data:`STEM_SHARE` of the shorter word
    ("shipped"/"ships"). A shorter word matches only a word that is itself
    plus one of :data:`SHORT_WORD_ENDINGS`, its last consonant doubled or not
    ("run"/"runs"/"running"); a one-letter word matches only itself.

    Args:
        claim_word: A case-folded token of the claim (``scoring.tokenize``).
        span_word: A case-folded token of the cited span.

    Returns:
        True when the span word accounts for the claim word.
    """
    if claim_word == span_word:
        return True
    if is_number_token(claim_word) or is_number_token(span_word):
        return False
    claim_negation, span_negation = negation_key(claim_word), negation_key(span_word)
    if claim_negation is not None or span_negation is not None:
        return claim_negation == span_negation
    claim_word, span_word = _unstressed(claim_word), _unstressed(span_word)
    shorter, longer = sorted((claim_word, span_word), key=len)
    if len(shorter) < MIN_STEM_CHARS:
        return _inflects(shorter, longer)
    shared = len(os.path.commonprefix((claim_word, span_word)))
    return shared >= STEM_PREFIX or shared >= STEM_SHARE * len(shorter)


_STRESS_MARKS = dict.fromkeys((0x0300, 0x0301))
"""Combining grave and acute accents: stress marks that move under inflection."""


def _unstressed(word: str) -> str:
    """``word`` without acute or grave accents, for stem comparison only.

    Spanish (and Catalan, Italian) move the written stress when a word inflects:
    "prohíbe"/"prohibidos", "está"/"estaban". Other marks are letters of their own
    and are kept: Swedish å ä ö, Spanish ñ. Equality and numbers are decided before.
    """
    if word.isascii():
        return word
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", word).translate(_STRESS_MARKS))


def _inflects(short: str, word: str) -> bool:
    """Whether ``word`` is ``short`` plus an inflection ending (a doubled last letter allowed)."""
    if len(short) < 2 or not word.startswith(short):
        return False
    ending = word[len(short) :]
    if ending in SHORT_WORD_ENDINGS:
        return True
    return ending[:1] == short[-1] and ending[1:] in SHORT_WORD_ENDINGS


def novel_content_words(claim: str, spans: Sequence[str]) -> list[str]:
    """Content words of ``claim`` that no word of ``spans`` accounts for, in order, deduplicated."""
    span_words = {tok for span in spans for tok in tokenize(span)}
    novel: list[str] = []
    for word in content_tokens(claim):
        if word in novel or word in span_words:
            continue
        if not any(same_word(word, candidate) for candidate in span_words):
            novel.append(word)
    return novel


_SENTENCE_BREAK = re.compile(r"(?<=[.!?。！？])\s+|\n+")


def best_sentence(claim: str, spans: Sequence[str]) -> str:
    """The sentence of ``spans`` sharing the most content words with ``claim`` (first on ties)."""
    claim_words = set(content_tokens(claim))
    best, best_shared = "", -1
    for span in spans:
        for sentence in _SENTENCE_BREAK.split(span):
            shared = len(claim_words & set(content_tokens(sentence)))
            if shared > best_shared:
                best, best_shared = sentence, shared
    return best


def _negations(text: str) -> set[str]:
    return {key for key in map(negation_key, tokenize(text)) if key is not None}


@dataclass(frozen=True)
class ClaimCheck:
    """The verdict on one claim and the reason, for logs and tests."""

    verdict: str
    """``supported``, ``unsupported`` or ``contradicted`` (docs/target-contract.md)."""
    reason: str
    """Plain-language why."""


def verify_claim(claim_text: str, markers: Sequence[str], evidence: Mapping[str, str]) -> ClaimCheck:
    """Judge one claim against the evidence it cites (module docstring for the rule).

    Args:
        claim_text: the claim as it appears in the answer (markers may be inside).
        markers: the markers the claim carries, e.g. ``["S1"]``.
        evidence: marker → the cited span's text (the canonical-text slice).

    Returns:
        The verdict and its reason.
    """
    cited = [m for m in dict.fromkeys(markers) if m in evidence]
    if not cited:
        why = "cites no evidence" if not markers else f"cites unknown markers {list(markers)}"
        return ClaimCheck("unsupported", f"the claim {why}")
    spans = [evidence[m] for m in cited]
    claim = strip_markers(claim_text)
    truths = spans + ([" ".join(spans)] if len(spans) > 1 else [])
    covered = claim_is_true(claim, truths)
    novel = novel_content_words(claim, spans)
    if covered and not novel:
        dropped = _negations(best_sentence(claim, spans)) - _negations(claim)
        if dropped:
            return ClaimCheck("contradicted", f"drops the negation {sorted(dropped)} of {', '.join(cited)}")
        return ClaimCheck("supported", f"covered by {', '.join(cited)}")
    if novel and all(is_number_token(w) or negation_key(w) is not None for w in novel):
        return ClaimCheck("contradicted", f"{', '.join(cited)} do not carry {novel}")
    if novel:
        return ClaimCheck("unsupported", f"words not in {', '.join(cited)}: {novel}")
    return ClaimCheck("unsupported", f"{', '.join(cited)} do not cover the claim")


# ------------------------------------------------------------------ decomposition


DECOMPOSITION_INSTRUCTIONS = (
    contract.DECOMPOSITION_PROMPT
    + " Each claim is one sentence of the draft copied exactly, including its trailing citation markers;"
    " markers lists the marker names without brackets, e.g. [\"S1\"]."
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
        if start is None:
            raise ProviderError(f"claim decomposition item {index} ({text[:60]!r}) does not occur in the draft")
        given = item.get("markers") if isinstance(item.get("markers"), list) else []
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
