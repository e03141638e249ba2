"""The mock's deterministic citation judge and question generator, as pure functions (docs/mock.md).

Selected by the system message: one starting with
:data:`pytest_groundeval.judge.prompt.JUDGE_PROMPT` gets :func:`judge_reply`, one
starting with :data:`pytest_groundeval.judge.prompt.GENERATE_PROMPT` gets
:func:`generate_question`. Both read the JSON input of the last user message and
reach their answer from it alone. The judge is a heuristic, not a model:

1. a non-empty ``metadataMismatch`` hint → ``wrong_speaker``;
2. the paragraph's content words covered by the cited sources' texts below
   :data:`SUPPORTED_COVERAGE`, but at least that much by one of ``otherSources``
   (and more than by the cited ones) → ``wrong_attribution``;
3. otherwise by coverage: ≥ :data:`SUPPORTED_COVERAGE` ``supported``,
   ≥ :data:`PARTIAL_COVERAGE` ``partial``, else ``unsupported``.

A second personality, asked for as model :data:`STRICT_JUDGE_MODEL` (``mock-judge-strict``),
follows the same rules with higher thresholds (:data:`STRICT_SUPPORTED_COVERAGE`,
:data:`STRICT_PARTIAL_COVERAGE`), so two mock judges genuinely disagree on some
paragraphs: a jury of the two (docs/judges.md, "Juries") has something to vote on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_groundeval.core.contract import strip_markers
from pytest_groundeval.judge import prompt
from pytest_groundeval.mock.behaviour import last_user_text, message_text, words
from pytest_groundeval.mock.reply_shapes import REPLY_FAULTS, write_verdict

__all__ = [
    "PARTIAL_COVERAGE",
    "REPLY_FAULTS",
    "STOPWORDS",
    "STRICT_JUDGE_MODEL",
    "STRICT_PARTIAL_COVERAGE",
    "STRICT_SUPPORTED_COVERAGE",
    "SUPPORTED_COVERAGE",
    "content_words",
    "coverage",
    "generate_question",
    "is_generation",
    "is_judge",
    "judge_reply",
    "judge_verdict",
]

SUPPORTED_COVERAGE = 0.6
"""Coverage at or above which the mock judge says ``supported``."""

PARTIAL_COVERAGE = 0.3
"""Coverage at or above which (and below ``SUPPORTED_COVERAGE``) it says ``partial``."""

STRICT_JUDGE_MODEL = "mock-judge-strict"
"""The model name that asks the mock for its strict judge (every other name gets the default one)."""

STRICT_SUPPORTED_COVERAGE = 0.9
"""Coverage at or above which the strict mock judge says ``supported``."""

STRICT_PARTIAL_COVERAGE = 0.5
"""Coverage at or above which (and below ``STRICT_SUPPORTED_COVERAGE``) the strict mock judge says ``partial``."""

STOPWORDS = frozenset(
    """a an and are as at be been but by for from had has have he her his in is it its of on or she that the
    their they this to was were which who will with not also can may more most such than then there these those
    into over after before about between during""".split()
)
"""English function words left out of coverage: they match any text."""


def _system_starts(body: Mapping[str, Any], prefix: str) -> bool:
    for message in body.get("messages", ()):
        if isinstance(message, dict) and message.get("role") in ("system", "developer"):
            if message_text(message).lstrip().startswith(prefix):
                return True
    return False


def is_judge(body: Mapping[str, Any]) -> bool:
    """Whether a chat request asks for a citation verdict (system message starts with ``JUDGE_PROMPT``)."""
    return _system_starts(body, prompt.JUDGE_PROMPT)


def is_generation(body: Mapping[str, Any]) -> bool:
    """Whether a chat request asks for an evaluation question (system message starts with ``GENERATE_PROMPT``)."""
    return _system_starts(body, prompt.GENERATE_PROMPT)


def content_words(text: str) -> set[str]:
    """Distinct case-folded words of ``text`` without citation markers, stopwords or one-character words."""
    return {w for w in words(strip_markers(text)) if len(w) > 1 and w not in STOPWORDS}


def coverage(paragraph: str, texts: Sequence[str]) -> float:
    """Fraction of the paragraph's content words that occur in the union of ``texts`` (0 when it has none)."""
    wanted = content_words(paragraph)
    if not wanted:
        return 0.0
    have: set[str] = set()
    for text in texts:
        have |= content_words(text)
    return len(wanted & have) / len(wanted)


def judge_verdict(payload: Mapping[str, Any], *, strict: bool = False) -> tuple[str, str]:
    """The mock judge's ``(verdict, rationale)`` for a judge input (module docstring rules).

    Args:
        payload: The judge input (``core.judging.judge_input``).
        strict: The strict personality's thresholds (:data:`STRICT_JUDGE_MODEL`) instead of the default ones.
    """
    supported_at, partial_at = (
        (STRICT_SUPPORTED_COVERAGE, STRICT_PARTIAL_COVERAGE) if strict else (SUPPORTED_COVERAGE, PARTIAL_COVERAGE)
    )
    paragraph = str(payload.get("paragraph") or "")
    cited = [s for s in payload.get("citedSources") or [] if isinstance(s, dict)]
    others = [s for s in payload.get("otherSources") or [] if isinstance(s, dict)]
    hints = [str(h) for h in payload.get("metadataMismatch") or [] if h]
    if hints:
        return "wrong_speaker", f"the paragraph names someone the cited source is not: {hints[0]}"
    cited_markers = ", ".join(f"[{s.get('marker')}]" for s in cited) or "no known source"
    covered = coverage(paragraph, [str(s.get("text") or "") for s in cited])
    if covered < supported_at and others:
        scored = [(coverage(paragraph, [str(s.get("text") or "")]), str(s.get("marker"))) for s in others]
        best, marker = max(scored, key=lambda pair: (pair[0], [-ord(c) for c in pair[1]]))
        if best >= supported_at and best > covered:
            return (
                "wrong_attribution",
                f"{best:.0%} of the paragraph's content words are in source [{marker}], "
                f"only {covered:.0%} in the cited {cited_markers}",
            )
    share = f"{covered:.0%} of the paragraph's content words occur in {cited_markers}"
    if covered >= supported_at:
        return "supported", share
    if covered >= partial_at:
        return "partial", share
    return "unsupported", share


def judge_reply(messages: list[Any], reply_fault: str | None = None, model: str | None = None) -> str:
    """The message content the mock judge answers, honouring a reply fault.

    Args:
        messages: The chat messages; the input is the JSON after ``JUDGE_INPUT_HEADER``
            in the last user message.
        reply_fault: None, or one of :data:`REPLY_FAULTS` (``reply_shapes``): ``prose`` (a
            sentence, no JSON), ``fenced`` (the JSON in a ```` ```json ```` fence), ``badverdict``
            (verdict ``mostly_fine``), ``norationale`` (an empty rationale), ``think`` (a reasoning
            block first), …; a fault of the body around the content leaves the content as is.
        model: The request's model (without a fault suffix); :data:`STRICT_JUDGE_MODEL` gets the strict judge.

    Returns:
        ``{"verdict": …, "rationale": …}`` as compact JSON, or the faulted form. An input
        that is not there or not JSON gets ``unsupported`` with a rationale saying so.
    """
    payload = prompt.parse_input(last_user_text(messages), prompt.JUDGE_INPUT_HEADER)
    if payload is None:
        verdict, rationale = "unsupported", "the request carried no judge input the mock could read"
    else:
        verdict, rationale = judge_verdict(payload, strict=model == STRICT_JUDGE_MODEL)
    return write_verdict(verdict, rationale, reply_fault)


def generate_question(messages: list[Any], reply_fault: str | None = None) -> str:
    """The mock's question for a generation request, as ``{"question": …}`` JSON.

    - ``seeded``: ``What does the record say about <w1>, <w2> and <w3>?`` with the
      snippet's three longest content words (ties by first occurrence), leaving out
      every word of the metadata values (the named person is withheld);
    - ``free``: ``What is known about <topic>?``; when that is in ``avoid``,
      ``What is known about <topic> (aspect N)?`` with the smallest N not in ``avoid``.

    ``prose`` as ``reply_fault`` answers a sentence instead of JSON.
    """
    payload = prompt.parse_input(last_user_text(messages), prompt.GENERATE_INPUT_HEADER) or {}
    avoid = {str(q) for q in payload.get("avoid") or []}
    if payload.get("strategy") == "seeded":
        withheld: set[str] = set()
        for value in (payload.get("metadata") or {}).values():
            withheld |= set(words(str(value)))
        ordered = [w for w in dict.fromkeys(words(str(payload.get("snippet") or ""))) if w not in STOPWORDS]
        candidates = [w for w in ordered if w not in withheld and len(w) > 2 and not w.isdigit()]
        picked = sorted(candidates, key=lambda w: (-len(w), candidates.index(w)))[:3]
        if not picked:
            question = "What does this record describe?"
        elif len(picked) == 1:
            question = f"What does the record say about {picked[0]}?"
        else:
            question = f"What does the record say about {', '.join(picked[:-1])} and {picked[-1]}?"
    else:
        topic = str(payload.get("topic") or "this subject")
        question = f"What is known about {topic}?"
        n = 2
        while question in avoid:
            question = f"What is known about {topic} (aspect {n})?"
            n += 1
    if reply_fault == "prose":
        return f"Here is a question you could ask: {question}"
    return json.dumps({"question": question}, ensure_ascii=False)
