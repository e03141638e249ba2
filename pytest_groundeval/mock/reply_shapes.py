"""How the mock's judge writes a reply, one fault per shape real providers send (docs/mock.md, docs/judges.md).

Pure functions, no server: :func:`write_verdict` turns the mock judge's verdict and
rationale into message content, :func:`judge_body` into the whole HTTP 200 body of a
non-streamed chat completion, and :func:`refusal` decides whether a request is refused
with the HTTP 400 a provider sends for a parameter its model does not take.

Content faults (the message content only):

- ``prose`` (a sentence, no JSON), ``fenced`` (```` ```json ```` around the object),
  ``badverdict`` (verdict ``mostly_fine``), ``norationale`` (an empty rationale);
- ``think``: a ``<think>…</think>`` block, then the object (DeepSeek-R1, Qwen3 served
  without a reasoning parser); ``reasoning_tag``: the same with ``<reasoning>``;
  ``open_think``: reasoning that ends in a lone ``</think>`` (DeepSeek-R1's template
  opens the block in the prompt); ``unclosed_think``: a block that never closes
  (the token budget ran out inside it);
- ``fence_prose``: prose, a ```` ```json ```` fence, more prose; ``fence_bare``: a
  fence with no language;
- ``extra_keys``: more keys than asked (``confidence``, ``evidence``); ``titlecase``:
  the verdict as ``"Supported"``; ``twice``: the same object written twice;
  ``two_objects``: two different objects.

Envelope faults (the body around the content):

- ``reasoning_content``: the message carries ``reasoning_content`` beside ``content``
  (vLLM before 0.10, DeepSeek, LiteLLM); ``reasoning``: the field named
  ``reasoning`` (vLLM from 0.10, Ollama);
- ``azure_filters``: Azure OpenAI's ``prompt_filter_results`` and per-choice
  ``content_filter_results`` around an ordinary answer;
- ``null_content``: ``content`` null with ``finish_reason`` ``length`` and the
  reasoning cut off in ``reasoning_content``; ``refusal``: ``content`` null and a
  ``refusal`` (OpenAI structured outputs); ``empty_choices``: ``choices: []``;
- ``html200`` and ``text200``: HTTP 200 with an HTML page or plain text, no JSON;
- ``no_usage``: an ordinary answer whose body has no ``usage`` (some proxies and local
  servers): its tokens are unknown to the judge (docs/judges.md, "Tokens and cost").

Refusal faults (:data:`REFUSALS`) answer HTTP 400 in OpenAI's error object
``{"error": {"message", "type", "param", "code"}}`` when the request carries what they
name, and the normal reply otherwise: ``json_schema_400``, ``response_format_400``
(any ``response_format``), ``temperature_400`` (a temperature other than 1),
``max_tokens_400``. With ``noparam`` their ``param`` is null and only the message
names the parameter, as a proxy that rewraps errors sends it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = [
    "CONTENT_FAULTS",
    "ENVELOPE_FAULTS",
    "REFUSALS",
    "REPLY_FAULTS",
    "judge_body",
    "refusal",
    "write_verdict",
]

CONTENT_FAULTS = (
    "prose", "fenced", "badverdict", "norationale", "think", "reasoning_tag", "open_think", "unclosed_think",
    "fence_prose", "fence_bare", "extra_keys", "titlecase", "twice", "two_objects",
)  # fmt: skip
"""Reply faults that change the message content."""

ENVELOPE_FAULTS = (
    "reasoning_content", "reasoning", "azure_filters", "null_content", "refusal", "empty_choices", "html200", "text200",
    "no_usage",
)  # fmt: skip
"""Reply faults that change the body around the content (non-streamed judge replies)."""

REPLY_FAULTS = CONTENT_FAULTS + ENVELOPE_FAULTS
"""Every judge reply fault (docs/mock.md)."""

REFUSALS: dict[str, tuple[str, str, str | None]] = {
    # https://platform.openai.com/docs/guides/structured-outputs: json_schema needs a model that supports it.
    "json_schema_400": (
        "response_format", "response_format of type 'json_schema' is not supported by this model", None,
    ),
    # A server with no JSON mode at all refuses any response_format.
    "response_format_400": ("response_format", "response_format is not supported by this model", None),
    # https://learn.microsoft.com/en-us/azure/ai-foundry/openai/how-to/reasoning (and OpenAI's reasoning
    # guide): reasoning models take only the default temperature.
    "temperature_400": (
        "temperature", "Unsupported value: 'temperature' does not support 0 with this model; only the default (1)",
        "unsupported_value",
    ),
    # https://platform.openai.com/docs/api-reference/chat/create: max_tokens is not compatible with
    # o-series models, which take max_completion_tokens.
    "max_tokens_400": (
        "max_tokens", "Unsupported parameter: 'max_tokens' is not supported with this model; use "
        "'max_completion_tokens' instead", "unsupported_parameter",
    ),
}  # fmt: skip
"""Refusal fault -> (param, message, code) of its HTTP 400 body."""

_THOUGHT = "The paragraph names a speaker; I compare it with the cited source's metadata and text before answering."
_HTML = (
    "<!doctype html><html><head><title>502 Bad Gateway</title></head>"
    "<body><h1>502 Bad Gateway</h1><p>the upstream judge did not answer</p></body></html>"
)
_FILTERS = {c: {"filtered": False, "severity": "safe"} for c in ("hate", "self_harm", "sexual", "violence")}


def write_verdict(verdict: str, rationale: str, fault: str | None = None) -> str:
    """The message content of a verdict, written as the content ``fault`` names (module docstring).

    Envelope faults and None give ``{"verdict", "rationale"}`` as compact JSON.
    """
    if fault == "prose":
        return f"Having read the sources, I would say the paragraph is {verdict.replace('_', ' ')}."
    if fault == "badverdict":
        verdict = "mostly_fine"
    elif fault == "norationale":
        rationale = ""
    elif fault == "titlecase":
        verdict = verdict.capitalize()
    answer: dict[str, Any] = {"verdict": verdict, "rationale": rationale}
    if fault == "extra_keys":
        answer.update({"confidence": 0.8, "evidence": ["[1]"], "notes": None})
    body = json.dumps(answer, ensure_ascii=False)
    if fault == "fenced":
        return f"```json\n{body}\n```"
    if fault == "fence_bare":
        return f"```\n{body}\n```"
    if fault == "fence_prose":
        return f"Here is my verdict on the paragraph:\n\n```json\n{body}\n```\n\nI hope this helps."
    if fault == "think":
        return f"<think>\n{_THOUGHT}\n</think>\n\n{body}"
    if fault == "reasoning_tag":
        return f"<reasoning>{_THOUGHT}</reasoning>\n{body}"
    if fault == "open_think":
        return f"{_THOUGHT}\n</think>\n\n{body}"
    if fault == "unclosed_think":
        return f"<think>\n{_THOUGHT} Then I check each cited source in turn, starting with"
    if fault == "twice":
        return f"{body}\n{body}"
    if fault == "two_objects":
        other = "unsupported" if verdict != "unsupported" else "supported"
        second = json.dumps({"verdict": other, "rationale": "on second thought, the other way"})
        return f"{body}\n{second}"
    return body


def judge_body(
    completion_id: str, created: int, model: str, content: str, usage: Mapping[str, int], fault: str | None
) -> tuple[bytes, str]:
    """The HTTP 200 body of a non-streamed judge reply and its content type, shaped as ``fault`` names.

    Returns:
        ``(body, content_type)``: a ``chat.completion`` object (``application/json``), or for
        ``html200`` / ``text200`` a page or a sentence (``text/html`` / ``text/plain``).
    """
    if fault == "html200":
        return _HTML.encode(), "text/html"
    if fault == "text200":
        return b"Service temporarily unavailable, please try again later.", "text/plain"
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    choice: dict[str, Any] = {"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}
    body: dict[str, Any] = {
        "id": completion_id, "object": "chat.completion", "created": created, "model": model,
        "choices": [choice], "usage": dict(usage),
    }  # fmt: skip
    if fault in ("reasoning_content", "reasoning"):
        message[fault] = _THOUGHT
    elif fault == "azure_filters":
        body["prompt_filter_results"] = [{"prompt_index": 0, "content_filter_results": _FILTERS}]
        choice["content_filter_results"] = _FILTERS
    elif fault == "null_content":
        message["content"] = None
        message["reasoning_content"] = _THOUGHT + " Then I check each cited source in turn, starting with"
        choice["finish_reason"] = "length"
    elif fault == "refusal":
        message["content"] = None
        message["refusal"] = "I can't help with judging this paragraph."
    elif fault == "empty_choices":
        body["choices"] = []
    elif fault == "no_usage":
        del body["usage"]
    return json.dumps(body, ensure_ascii=False).encode(), "application/json"


def refusal(faults: tuple[str, ...], body: Mapping[str, Any], *, with_param: bool = True) -> dict[str, Any] | None:
    """The OpenAI error object of the first refusal fault in ``faults`` that the request ``body`` triggers, or None.

    Args:
        faults: Refusal faults of the request's spec (keys of :data:`REFUSALS`).
        body: The chat request.
        with_param: False (``noparam``): ``param`` null, the message alone names the parameter.
    """
    response_format = body.get("response_format")
    kind = response_format.get("type") if isinstance(response_format, Mapping) else None
    for fault in faults:
        triggered = {
            "json_schema_400": kind == "json_schema",
            "response_format_400": response_format is not None,
            "temperature_400": "temperature" in body and body["temperature"] != 1,
            "max_tokens_400": "max_tokens" in body,
        }[fault]
        if triggered:
            param, message, code = REFUSALS[fault]
            return {
                "error": {
                    "message": message,
                    "type": "invalid_request_error",
                    "param": param if with_param else None,
                    "code": code,
                }
            }
    return None
