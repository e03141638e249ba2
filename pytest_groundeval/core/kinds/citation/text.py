"""Paragraph and mention text of a citation answer (docs/citation.md): the citation kind's leaf.

An answer is split into paragraphs (blank-line separated); a paragraph's markers
(``[N]``/``[S#]``) are read from its text; mentions are the matches of the dataset's
``mentionPattern`` in it, and their metadata values are compared in a normalised form.

Mention matching is bounded: each paragraph gets ``MENTION_TIMEOUT_S`` of matching
(the ``regex`` package's ``timeout``), and a pattern that runs out of it raises
``MentionTimeout`` naming the pattern, not a hung session.

This module imports none of the citation kind's other modules.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

import regex

from ...contract import MARKER_IN_TEXT_PATTERN
from ..base import JudgeError

__all__ = [
    "MARKER_RE",
    "MENTION_TIMEOUT_S",
    "MentionTimeout",
    "cited_markers",
    "mentions",
    "normalise_field",
    "paragraphs",
]

MENTION_TIMEOUT_S = 1.0
"""Seconds of ``mentionPattern`` matching allowed per paragraph before the item is an error.

Far above what a sane pattern needs on a paragraph (microseconds), far below a
CI job's patience: a catastrophically backtracking pattern is caught on its
first paragraph instead of hanging the session."""

MARKER_RE = re.compile(MARKER_IN_TEXT_PATTERN)
"""A citation marker in a paragraph; group 1 is the marker inside the brackets (``S1``, ``1``)."""

# A blank line is a line holding only whitespace; any run of them separates paragraphs.
_PARAGRAPH_BREAK_RE = re.compile(r"\n[^\S\n]*\n\s*")


class MentionTimeout(JudgeError):
    """The dataset's ``mentionPattern`` ran out of its time on a paragraph (docs/citation.md).

    Attributes:
        pattern: The pattern as written in the manifest.
        paragraph: Index of the paragraph it was matching (from 0; the message counts from 1).
        timeout_s: The budget it ran out of, in seconds.
        item_id: The item being judged, once known.
    """

    def __init__(self, pattern: str, paragraph: int, timeout_s: float, item_id: str | None = None) -> None:
        self.pattern, self.paragraph, self.timeout_s, self.item_id = pattern, paragraph, timeout_s, item_id
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f" of item {self.item_id!r}" if self.item_id is not None else ""
        return (
            f"mentionPattern {self.pattern!r} was stopped after {self.timeout_s:g} s on paragraph "
            f"{self.paragraph + 1}{where}; it most likely backtracks catastrophically (nested quantifiers such as "
            "(\\w+\\s?)+ try every way to split a line); make each repetition match one way only, "
            "e.g. (?P<speaker>\\w+(?: \\w+)*) (docs/citation.md)"
        )


def _bounded(mention_regex: regex.Pattern[str] | re.Pattern[str]) -> regex.Pattern[str]:
    # A stdlib pattern (callers' own code) cannot be bounded: run the same pattern with ``regex``.
    if isinstance(mention_regex, re.Pattern):
        flags = mention_regex.flags & ~(re.ASCII | re.UNICODE)
        flags |= regex.ASCII if mention_regex.flags & re.ASCII else 0
        return regex.compile(mention_regex.pattern, flags=flags | regex.VERSION0)
    return mention_regex


# --------------------------------------------------------------------------- paragraphs


def paragraphs(answer: str) -> list[str]:
    """Split an answer into paragraphs: text separated by one or more blank lines.

    ``\\r\\n`` and ``\\r`` count as ``\\n``; a line holding only whitespace is blank.
    Paragraphs are stripped; empty ones are not returned.

    Args:
        answer: The answer text.

    Returns:
        The paragraphs in order. Their positions in this list are the ``index``
        of ``extra.citationParagraphs``.
    """
    text = answer.replace("\r\n", "\n").replace("\r", "\n")
    return [part.strip() for part in _PARAGRAPH_BREAK_RE.split(text) if part.strip()]


def cited_markers(paragraph: str) -> list[str]:
    """Markers cited in ``paragraph``, as written inside the brackets, first occurrence order, no repeats."""
    return list(dict.fromkeys(MARKER_RE.findall(paragraph)))


def normalise_field(value: str) -> str:
    """A metadata value in the form mentions and sources are compared in (docs/citation.md).

    NFC-normalised, case-folded, runs of whitespace collapsed to one space, trimmed,
    so ``"anna  BERG"`` equals ``"Anna Berg"`` and a decomposed ``"Å"`` equals a
    composed one.
    """
    folded = unicodedata.normalize("NFC", unicodedata.normalize("NFC", value).casefold())
    return " ".join(folded.split())


# --------------------------------------------------------------------------- mentions


def mentions(
    text: str, mention_regex: regex.Pattern[str] | re.Pattern[str], *, timeout_s: float | None = None
) -> Iterable[dict[str, str]]:
    """Each match of ``mention_regex`` in ``text`` as ``{field: value}``.

    Named groups that did not take part in the match, or matched only whitespace,
    are left out; an empty match (a pattern that can match nothing) is no mention.
    A stdlib ``re`` pattern is run with the ``regex`` package, so the bound holds too.

    Args:
        text: One paragraph.
        mention_regex: The compiled ``mentionPattern``.
        timeout_s: Seconds of matching allowed over the whole of ``text`` (default ``MENTION_TIMEOUT_S``,
            read when called).

    Raises:
        MentionTimeout: matching ran out of ``timeout_s`` (paragraph index 0; ``judge_paragraph`` sets it).
    """
    bounded = _bounded(mention_regex)
    if timeout_s is None:
        timeout_s = MENTION_TIMEOUT_S
    try:
        for match in bounded.finditer(text, timeout=timeout_s):
            if not match.group(0):
                continue
            fields = {name: value for name, value in match.groupdict().items() if value and value.strip()}
            if fields:
                yield fields
    except TimeoutError:
        raise MentionTimeout(bounded.pattern, 0, timeout_s) from None
