"""Strict parsing of a judge reply (docs/citation.md, "Parsing").

A reply is accepted only as one JSON object ``{"verdict", "rationale"}`` whose
verdict is one of ``core.judging.JUDGE_VERDICTS`` and whose rationale is a non-empty
string. One Markdown code fence around the object (```` ```json … ``` ````) is
unwrapped; nothing else is guessed: prose, a JSON object inside prose, an unknown
verdict or an empty rationale raise :class:`UnparseableReply`.
"""

from __future__ import annotations

import json
import re

from ..core.judging import JUDGE_VERDICTS

__all__ = ["UnparseableReply", "reply_content", "parse_verdict", "unwrap_fence"]

_FENCE_RE = re.compile(r"^```[A-Za-z0-9_-]*[ \t]*\n(.*)\n[ \t]*```$", re.DOTALL)


class UnparseableReply(ValueError):
    """A judge reply that is not a valid verdict; the message says why (quoting at most 80 characters)."""


def unwrap_fence(text: str) -> str:
    """The body of a reply that is exactly one fenced code block, else the stripped reply."""
    stripped = text.strip()
    match = _FENCE_RE.match(stripped)
    return match.group(1).strip() if match else stripped


def reply_content(completion: object) -> str | None:
    """The message content of a chat completion as the ``openai`` SDK returned it.

    A judge endpoint may answer HTTP 200 with something that is not a chat completion:
    an HTML error page or plain text (the SDK then returns the body as a ``str``), or
    JSON of another shape. That is a reply that cannot be parsed, like prose, never
    an exception that turns the item into an error (docs/citation.md, "Parsing").

    Args:
        completion: What ``chat.completions.create`` returned.

    Returns:
        The first choice's content; None when the completion has no choices or no content
        (``parse_verdict`` then says the reply is empty).

    Raises:
        UnparseableReply: The body is text, not JSON, or JSON without a readable first choice.
    """
    if isinstance(completion, (str, bytes)):
        text = completion.decode("utf-8", "replace") if isinstance(completion, bytes) else completion
        raise UnparseableReply(f"the HTTP 200 body is not a chat completion but text: {_quote(text)}")
    choices = getattr(completion, "choices", None)
    if not choices:
        return None
    try:
        content = choices[0].message.content
    except (AttributeError, IndexError, KeyError, TypeError):
        raise UnparseableReply("the HTTP 200 body is JSON but not a chat completion (no choices[0].message)") from None
    if content is not None and not isinstance(content, str):
        raise UnparseableReply(f"the reply's content is {type(content).__name__}, not text")
    return content


def parse_verdict(text: str | None) -> tuple[str, str]:
    """Parse a judge reply into ``(verdict, rationale)``.

    Args:
        text: The message content of the judge's reply (None when the reply had none).

    Returns:
        The verdict (one of ``JUDGE_VERDICTS``) and the rationale, stripped.

    Raises:
        UnparseableReply: Empty, not a JSON object (prose), no or unknown ``verdict``,
            or an empty or non-string ``rationale``.
    """
    if text is None or not text.strip():
        raise UnparseableReply("the reply is empty")
    body = unwrap_fence(text)
    try:
        value = json.loads(body)
    except ValueError:
        raise UnparseableReply(f"the reply is not a JSON object: {_quote(body)}") from None
    if not isinstance(value, dict):
        raise UnparseableReply(f"the reply is JSON but not an object: {_quote(body)}")
    verdict = value.get("verdict")
    if verdict not in JUDGE_VERDICTS:
        raise UnparseableReply(f"unknown verdict {verdict!r}; expected one of {', '.join(JUDGE_VERDICTS)}")
    rationale = value.get("rationale")
    if not isinstance(rationale, str) or not rationale.strip():
        raise UnparseableReply(f"verdict {verdict!r} came with an empty rationale")
    return verdict, rationale.strip()


def _quote(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")
