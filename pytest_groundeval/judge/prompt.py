"""The judge's and the question generator's prompts, and the wire shape of their input (docs/citation.md).

Both the judge client and the mock provider import this module: the mock picks
its judge behaviour when a system message starts with :data:`JUDGE_PROMPT`, and
its question-generation behaviour when one starts with :data:`GENERATE_PROMPT`.
The user message of a judge request is :data:`JUDGE_INPUT_HEADER`, a newline,
then one JSON object (``core.judging.judge_input``), so that a model reads it easily and
the mock parses it exactly.

``PROMPT_VERSION`` is part of every judge-cache key: change it whenever the
wording or the input shape changes, so cached verdicts of the old prompt are
never reused.

The verdicts (``core.judging.JUDGE_VERDICTS``) and the input's shape
(``core.judging.judge_input``, re-exported here) are defined in ``core.judging``, which
the citation kind reads too; this module imports nothing else of the package and,
at run time, nothing beyond the standard library (the openai SDK's message type is
read by the type checker only).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..core.judging import JUDGE_VERDICTS, JudgeInput, judge_input

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam

__all__ = [
    "GENERATE_INPUT_HEADER",
    "GENERATE_PROMPT",
    "GENERATE_SCHEMA",
    "GENERATE_SCHEMA_NAME",
    "JUDGE_INPUT_HEADER",
    "JUDGE_PROMPT",
    "JUDGE_SCHEMA",
    "JUDGE_SCHEMA_NAME",
    "PROMPT_VERSION",
    "SEED_SNIPPET_CHARS",
    "generate_messages",
    "judge_input",
    "judge_messages",
    "parse_input",
]

PROMPT_VERSION = "judge-v1"
"""Version of the judge prompt and input shape; part of every cache key (docs/citation.md)."""

JUDGE_PROMPT = (
    "You are a citation judge. Decide whether one paragraph of an answer is supported by the sources it cites."
)
"""First sentence of the judge's system message; the mock's judge behaviour is selected by it."""

_JUDGE_RULES = """
You receive one JSON object with:
- "paragraph": the paragraph to judge, with its citation markers such as [1] or [S2];
- "citedSources": each source the paragraph cites: its "marker", its "metadata" (for example the speaker, the party or the entity the source is about) and its full "text";
- "otherSources": sources the same answer cites elsewhere, not in this paragraph;
- "metadataMismatch": findings of a deterministic check: a name or field mentioned in the paragraph that disagrees with the metadata of every cited source. Treat it as a strong hint, not as proof.

Give exactly one verdict:
- "supported": every statement of the paragraph is backed by the cited sources;
- "partial": some statements are backed, others are not;
- "unsupported": the cited sources do not back the paragraph;
- "wrong_speaker": the content is in a cited source, but the paragraph attributes it to the wrong person, party or entity. Check this explicitly: who says or does what in the paragraph must match who says or does it in the source and the source's metadata. A quote or position given to the wrong speaker is wrong_speaker even when the words match;
- "wrong_attribution": the content is backed by another source of the answer (one of "otherSources"), not by the source the paragraph cites.

Answer with one JSON object and nothing else: {"verdict": "<one of the five>", "rationale": "<one or two sentences naming the evidence>"}. The rationale must not be empty."""

JUDGE_INPUT_HEADER = "Judge this paragraph:"
"""First line of a judge request's user message; the JSON input follows on the next line."""

JUDGE_SCHEMA_NAME = "citation_verdict"
"""``response_format.json_schema.name`` of a judge request (structured output)."""

JUDGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": list(JUDGE_VERDICTS)},
        "rationale": {"type": "string", "minLength": 1},
    },
    "required": ["verdict", "rationale"],
    "additionalProperties": False,
}
"""JSON schema of a judge reply, sent as structured output where the endpoint supports it."""

GENERATE_PROMPT = "You write evaluation questions for a retrieval-augmented answering system."
"""First sentence of the question generator's system message; selects the mock's generation behaviour."""

_GENERATE_RULES = """
You receive one JSON object. With "strategy": "seeded" it holds a "snippet" (the start of one corpus record) and that record's "metadata": write one natural question a user might ask that this record helps answer. Make it broader than the snippet, and do not name the person or speaker the metadata names. With "strategy": "free" it holds a "topic": write one natural question about that topic. Never repeat or rephrase a question listed in "avoid".

Answer with one JSON object and nothing else: {"question": "<the question>"}."""

GENERATE_INPUT_HEADER = "Write one question:"
"""First line of a generation request's user message; the JSON input follows on the next line."""

GENERATE_SCHEMA_NAME = "generated_question"
"""``response_format.json_schema.name`` of a generation request."""

GENERATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"question": {"type": "string", "minLength": 1}},
    "required": ["question"],
    "additionalProperties": False,
}
"""JSON schema of a generation reply."""

SEED_SNIPPET_CHARS = 500
"""Characters of a corpus record shown to the generator by the seeded strategy."""


def judge_messages(payload: JudgeInput | Mapping[str, Any]) -> list[ChatCompletionMessageParam]:
    """Chat messages of a judge request for an input from ``core.judging.judge_input``.

    Two plain dicts, ``{"role": "system" | "user", "content": str}``: the system prompt, then the input.
    """
    return [
        {"role": "system", "content": JUDGE_PROMPT + "\n" + _JUDGE_RULES.strip()},
        {"role": "user", "content": JUDGE_INPUT_HEADER + "\n" + _dumps(payload)},
    ]


def generate_messages(payload: Mapping[str, Any]) -> list[ChatCompletionMessageParam]:
    """Chat messages of a question-generation request.

    Args:
        payload: ``{"strategy": "seeded", "snippet", "metadata", "avoid"}`` or
            ``{"strategy": "free", "topic", "avoid"}`` (``avoid``: recent questions).
    """
    return [
        {"role": "system", "content": GENERATE_PROMPT + "\n" + _GENERATE_RULES.strip()},
        {"role": "user", "content": GENERATE_INPUT_HEADER + "\n" + _dumps(payload)},
    ]


def parse_input(user_text: str, header: str) -> dict[str, Any] | None:
    """The JSON object after ``header`` in a user message, or None when it is not there or not an object."""
    text = user_text.lstrip()
    if not text.startswith(header):
        return None
    try:
        value = json.loads(text[len(header) :])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1, sort_keys=False)
