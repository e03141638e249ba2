"""Reading a judge reply as real providers send it (docs/judges.md, "Replies"; docs/citation.md, "Parsing").

A reply is accepted when its message content holds exactly one JSON object
``{"verdict", "rationale"}`` whose verdict, compared without regard to case or
surrounding spaces, is one of ``core.judging.JUDGE_VERDICTS`` and whose rationale
is a non-empty string; other keys are ignored. Around that object the reader
accepts what providers are documented to send:

- a reasoning block before the answer: ``<think>…</think>``, ``<thinking>…</thinking>``
  or ``<reasoning>…</reasoning>`` (reasoning models such as DeepSeek-R1 or Qwen3
  served without a reasoning parser), or reasoning that ends in a lone ``</think>``
  (DeepSeek-R1's chat template opens the block in the prompt);
- reasoning in a field beside ``content`` (``reasoning_content`` or ``reasoning``,
  vLLM, DeepSeek, Ollama, LiteLLM): ignored, the content is read;
- the object inside a Markdown code fence (```` ```json ```` or a bare ```` ``` ````),
  with prose before or after the fence;
- the same object written twice.

Nothing else is guessed. Each of these raises :class:`UnparseableReply`, whose message
says why: an HTTP 200 whose body is no chat completion (an HTML page, plain text,
JSON of another shape), no choices, no content (``null``: a refusal, a content
filter, a reasoning model that ran out of tokens inside its reasoning), a reasoning
block that never closes, prose with no fenced JSON (even prose around a bare object),
two different JSON objects, an unknown verdict, an empty rationale.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ..core.judging import JUDGE_VERDICTS

__all__ = [
    "REASONING_FIELDS",
    "REASONING_TAGS",
    "UnparseableReply",
    "parse_verdict",
    "read_verdict",
    "reply_content",
    "reply_usage",
    "strip_reasoning",
    "unwrap_fence",
]

REASONING_TAGS = ("think", "thinking", "reasoning")
"""Tags of a reasoning block the reader skips before the answer (case-insensitive)."""

REASONING_FIELDS = ("reasoning_content", "reasoning")
"""Message fields beside ``content`` that carry a model's reasoning (vLLM, DeepSeek, Ollama, LiteLLM)."""

_FENCE_RE = re.compile(r"^```[A-Za-z0-9_-]*[ \t]*\n(.*)\n[ \t]*```$", re.DOTALL)
_FENCES_RE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)\n?[ \t]*```", re.DOTALL)
_OPEN_RE = re.compile(r"<(" + "|".join(REASONING_TAGS) + r")>", re.IGNORECASE)
_DECODER = json.JSONDecoder()


class UnparseableReply(ValueError):
    """A judge reply that is not a valid verdict; the message says why (quoting at most 80 characters)."""


def unwrap_fence(text: str) -> str:
    """The body of a reply that is exactly one fenced code block, else the stripped reply."""
    stripped = text.strip()
    match = _FENCE_RE.match(stripped)
    return match.group(1).strip() if match else stripped


def _field(value: object, name: str) -> Any:
    """``value[name]`` of a mapping (a recorded reply), else the attribute (the ``openai`` SDK's objects,
    whose unknown fields such as ``reasoning_content`` are attributes too); None when absent."""
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def reply_usage(completion: object) -> tuple[int, int] | None:
    """``(prompt_tokens, completion_tokens)`` of a chat completion's ``usage``, or None when it has none.

    OpenAI's chat completion object carries ``usage.prompt_tokens`` and
    ``usage.completion_tokens`` (https://platform.openai.com/docs/api-reference/chat/object);
    vLLM, Ollama's OpenAI-compatible API and LiteLLM send the same. A body with no ``usage``
    (some proxies and local servers), one whose counts are not whole numbers >= 0, or one
    with only ``total_tokens`` gives None: the reply's tokens are unknown, never 0
    (docs/judges.md, "Tokens and cost").
    """
    if isinstance(completion, (str, bytes)):
        return None
    usage = _field(completion, "usage")
    if usage is None:
        return None
    prompt, answer = _count(_field(usage, "prompt_tokens")), _count(_field(usage, "completion_tokens"))
    if prompt is None or answer is None:
        return None
    return prompt, answer


def reply_content(completion: object) -> str:
    """The message content of a chat completion, as the ``openai`` SDK returned it or as a decoded JSON body.

    A judge endpoint may answer HTTP 200 with something that holds no answer: an HTML
    error page or plain text (the SDK then returns the body as a ``str``), JSON of
    another shape, a completion with no choices, or a choice whose content is null.
    Each is a reply that cannot be parsed, like prose, never an exception that turns the
    item into an error (docs/citation.md, "Parsing").

    Args:
        completion: What ``chat.completions.create`` returned, or a decoded response body (a dict).

    Returns:
        The first choice's content (reasoning fields beside it are not read).

    Raises:
        UnparseableReply: The body is text, not JSON; JSON without ``choices``; no choice; no
            message; content that is null or not text. The message names the ``finish_reason``,
            a ``refusal`` and whether reasoning came without an answer.
    """
    if isinstance(completion, (str, bytes)):
        text = completion.decode("utf-8", "replace") if isinstance(completion, bytes) else completion
        raise UnparseableReply(f"the HTTP 200 body is not a chat completion but text: {_quote(text)}")
    choices = _field(completion, "choices")
    if choices is None:
        raise UnparseableReply("the reply is empty: the HTTP 200 body is JSON with no choices (not a chat completion)")
    if not isinstance(choices, (list, tuple)) or not choices:
        raise UnparseableReply("the reply is empty: the chat completion has no choices")
    choice = choices[0]
    message = _field(choice, "message")
    if message is None:
        finish = _field(choice, "finish_reason")
        if isinstance(finish, str):  # e.g. Azure's content filter withholding the answer
            raise UnparseableReply(f"the reply has no message (finish_reason {finish!r})")
        raise UnparseableReply("the HTTP 200 body is JSON but not a chat completion (no choices[0].message)")
    content = _field(message, "content")
    if content is None:
        raise UnparseableReply(_no_content(choice, message))
    if not isinstance(content, str):
        raise UnparseableReply(f"the reply's content is {type(content).__name__}, not text")
    if not content.strip() and _field(choice, "finish_reason") == "length":
        raise UnparseableReply(
            "the reply is empty (finish_reason 'length'): the completion budget ran out before an answer; "
            "a reasoning model may need a larger completion budget"
        )
    return content


def _no_content(choice: object, message: object) -> str:
    """Why a choice with ``content: null`` holds no answer, with what it did hold."""
    finish = _field(choice, "finish_reason")
    said = f"the reply's content is null (finish_reason {finish!r})"
    refusal = _field(message, "refusal")
    if isinstance(refusal, str) and refusal.strip():
        return f"{said}: the model refused: {_quote(refusal)}"
    for name in REASONING_FIELDS:
        reasoning = _field(message, name)
        if isinstance(reasoning, str) and reasoning.strip():
            return (
                f"{said}: only reasoning came back ({name}, {len(reasoning)} characters), no answer; "
                "a reasoning model may need a larger completion budget"
            )
    return said


def strip_reasoning(text: str) -> str:
    """``text`` without the reasoning block(s) before the answer.

    Leading ``<think>…</think>`` (or ``thinking``, ``reasoning``) blocks are removed, one
    after another; without an opening tag, everything up to a lone closing tag is
    (DeepSeek-R1's template writes ``<think>`` into the prompt, so the reply starts inside it).

    Raises:
        UnparseableReply: A reasoning block opens and never closes (the reply ended inside it).
    """
    body = text.strip()
    while (opened := _OPEN_RE.match(body)) is not None:
        tag = opened.group(1)
        close = re.search(f"</{tag}>", body, re.IGNORECASE)
        if close is None:
            raise UnparseableReply(
                f"the reply ends inside its <{tag}> reasoning block: no answer after it "
                f"(a reasoning model may need a larger completion budget)"
            )
        body = body[close.end() :].strip()
    for tag in REASONING_TAGS:
        closing = re.search(f"</{tag}>", body, re.IGNORECASE)
        if closing is not None and re.search(f"<{tag}>", body[: closing.start()], re.IGNORECASE) is None:
            body = body[closing.end() :].strip()
    return body


def _objects(text: str) -> list[Any] | None:
    """The JSON values ``text`` consists of, one after another with only whitespace between, else None."""
    values = []
    index, end = 0, len(text)
    while index < end:
        try:
            value, index = _DECODER.raw_decode(text, index)
        except ValueError:
            return None
        values.append(value)
        while index < end and text[index].isspace():
            index += 1
    return values


def _answer(body: str) -> Any:
    """The one JSON value of an answer: the whole body, or the fenced blocks of a body with prose around them.

    Raises:
        UnparseableReply: no JSON (prose), or two different JSON values.
    """
    values = _objects(body)
    if values is None:
        values = []
        for block in _FENCES_RE.findall(body):
            values.extend(_objects(block.strip()) or [])
        if not values:
            raise UnparseableReply(f"the reply is not a JSON object: {_quote(body)}")
    distinct = []
    for value in values:
        if value not in distinct:
            distinct.append(value)
    if len(distinct) > 1:
        raise UnparseableReply(
            f"the reply holds {len(distinct)} different JSON values, not one answer: "
            f"{_quote(json.dumps(distinct[0]))} and {_quote(json.dumps(distinct[1]))}"
        )
    return distinct[0]


def parse_verdict(text: str | None) -> tuple[str, str]:
    """Parse a judge reply's content into ``(verdict, rationale)`` (rules: module docstring).

    Args:
        text: The message content of the judge's reply (None when the reply had none).

    Returns:
        The verdict (one of ``JUDGE_VERDICTS``, lower case) and the rationale, stripped.

    Raises:
        UnparseableReply: Empty; a reasoning block that never closes; not a JSON object (prose,
            prose around a bare object, a JSON array); two different JSON values; no or an
            unknown ``verdict``; an empty or non-string ``rationale``.
    """
    if text is None or not text.strip():
        raise UnparseableReply("the reply is empty")
    body = strip_reasoning(text)
    if not body:
        raise UnparseableReply("the reply is empty after its reasoning block")
    value = _answer(body)
    if not isinstance(value, dict):
        raise UnparseableReply(f"the reply is JSON but not an object: {_quote(json.dumps(value))}")
    said = value.get("verdict")
    verdict = said.strip().lower() if isinstance(said, str) else said
    if verdict not in JUDGE_VERDICTS:
        raise UnparseableReply(f"unknown verdict {said!r}; expected one of {', '.join(JUDGE_VERDICTS)}")
    rationale = value.get("rationale")
    if not isinstance(rationale, str) or not rationale.strip():
        raise UnparseableReply(f"verdict {verdict!r} came with an empty rationale")
    return verdict, rationale.strip()


def read_verdict(completion: object) -> tuple[str, str]:
    """``(verdict, rationale)`` of a whole chat completion: :func:`reply_content`, then :func:`parse_verdict`.

    Raises:
        UnparseableReply: As either of them.
    """
    return parse_verdict(reply_content(completion))


def _quote(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")
