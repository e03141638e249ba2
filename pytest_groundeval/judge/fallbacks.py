"""What a judge request carries, and how it steps down when an endpoint refuses a parameter (docs/judges.md).

A judge request asks for the most an endpoint may support and steps down, once per
judge and for the rest of the run, when the endpoint answers HTTP 400 naming what
it refuses:

- ``response_format``: ``json_schema`` (structured output), then ``json_object``
  (JSON mode), then none (the reply reader copes with prose around fenced JSON);
- ``temperature`` 0: sent without it (OpenAI's and Azure's reasoning models accept
  only the default);
- ``max_tokens`` (when a cap is set): sent as ``max_completion_tokens`` instead (the
  name those reasoning models take).

Which parameter a 400 refuses is read from the OpenAI error object
``{"error": {"message", "type", "param", "code"}}`` (the shape OpenAI documents at
https://platform.openai.com/docs/guides/error-codes, and that Azure OpenAI, vLLM,
Ollama and LiteLLM answer in): its ``param`` first, else the parameter its message
names. A 400 that names none of them is taken as a refusal of ``response_format``
while one is still sent (a server without structured output may say only "bad
request"); after that it is the judge's error.

One :class:`RequestShape` per judge client: each judge of a jury learns its own
endpoint. Standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["RESPONSE_FORMATS", "Refused", "RequestShape", "refused_parameter"]

RESPONSE_FORMATS = ("json_schema", "json_object", "none")
"""``response_format`` levels, in the order a judge steps down through them."""

Refused = Literal["response_format", "temperature", "max_tokens", "context_length", "other"]
"""What an HTTP 400 refuses: one of the three parameters a judge can drop; ``context_length``: the
prompt with its completion budget is too long for the model; ``other``: a parameter the error
names that a judge cannot do without. No fallback mends the last two."""

_MESSAGE_WORDS: tuple[tuple[Refused, tuple[str, ...]], ...] = (
    ("max_tokens", ("max_tokens",)),
    ("temperature", ("temperature",)),
    ("response_format", ("response_format", "json_schema", "json_object", "structured output", "json mode")),
)


def refused_parameter(body: object, message: str = "") -> Refused | None:
    """The request parameter an HTTP 400 refuses, or None when it names none of them.

    Args:
        body: The decoded error body: ``{"error": {...}}`` or the inner error object (the
            ``openai`` SDK hands over the inner one), or anything else.
        message: The error message when it is not in ``body``.

    Returns:
        ``param`` when it is one of the three (``response_format.…`` counts as
        ``response_format``), ``other`` when it names another; with no ``param``,
        ``context_length`` when the message says the request is too long for the model's
        context, else the first of the three the message names, else None.
    """
    error: Any = body.get("error", body) if isinstance(body, Mapping) else None
    if isinstance(error, Mapping):
        param = error.get("param")
        if isinstance(param, str) and param:
            name = param.split(".")[0].split("[")[0]
            if name in ("response_format", "temperature", "max_tokens"):
                return name  # type: ignore[return-value]
            return "other"
        if isinstance(error.get("message"), str):
            message = error["message"]
    said = message.lower()
    if "context length" in said or "context window" in said or "too large" in said:
        return "context_length"  # e.g. vLLM: "'max_tokens' ... is too large ... maximum context length"
    for name, words in _MESSAGE_WORDS:
        if any(word in said for word in words):
            return name
    return None


@dataclass
class RequestShape:
    """The optional parameters one judge's requests carry, stepped down as its endpoint refuses them.

    Args:
        response_format: The level to start at (``RESPONSE_FORMATS``; ``none`` sends none).
        temperature: Send ``temperature`` 0 (until refused).
        max_tokens: Completion-token cap, or None to send none.
    """

    response_format: str = "json_schema"
    """The ``response_format`` sent now: one of ``RESPONSE_FORMATS``."""
    temperature: bool = True
    """Whether ``temperature`` 0 is sent."""
    max_tokens: int | None = None
    """The completion-token cap, or None (no cap sent)."""
    token_parameter: str = "max_tokens"
    """``max_tokens``, or ``max_completion_tokens`` once the endpoint refused the first."""
    fallbacks: list[str] = field(default_factory=list)
    """What was stepped down, in order: ``json_object``, ``no response_format``, ``no temperature``,
    ``max_completion_tokens``."""

    def __post_init__(self) -> None:
        if self.response_format not in RESPONSE_FORMATS:
            raise ValueError(f"response_format must be one of {', '.join(RESPONSE_FORMATS)}")

    def params(self, schema_name: str, schema: Mapping[str, Any]) -> dict[str, Any]:
        """The optional parameters of the next request, as keyword arguments of ``chat.completions.create``."""
        params: dict[str, Any] = {}
        if self.response_format == "json_schema":
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema_name, "schema": dict(schema), "strict": True},
            }
        elif self.response_format == "json_object":
            params["response_format"] = {"type": "json_object"}
        if self.temperature:
            params["temperature"] = 0
        if self.max_tokens is not None:
            params[self.token_parameter] = self.max_tokens
        return params

    def sent(self) -> tuple[str, bool, str]:
        """What a request sent now carries, to hand back to :meth:`step_down` with its 400."""
        return self.response_format, self.temperature, self.token_parameter

    def step_down(self, refused: Refused | None, sent: tuple[str, bool, str]) -> str | None:
        """Stop sending what an endpoint refused in a request sent as ``sent``.

        Args:
            refused: What the 400 named (:func:`refused_parameter`); None: unnamed, taken as
                ``response_format`` while one is sent; ``context_length``, ``other``: nothing to drop.
            sent: :meth:`sent` of the refused request. When another request's refusal has
                already stepped that parameter down, nothing changes and the request is
                simply asked again.

        Returns:
            What is sent from now on, for a notice (``json_object``, ``no response_format``,
            ``no temperature``, ``max_completion_tokens``); ``""`` when the request should just be
            sent again (already stepped down); None when there is nothing left to drop (the
            400 is the judge's error).
        """
        response_format, temperature, token_parameter = sent
        if refused is None:
            refused = "response_format" if response_format != "none" else None
        if refused == "response_format" and response_format != "none":
            if self.response_format != response_format:
                return ""
            level = RESPONSE_FORMATS[RESPONSE_FORMATS.index(response_format) + 1]
            self.response_format = level
            return self._note("no response_format" if level == "none" else level)
        if refused == "temperature" and temperature:
            if not self.temperature:
                return ""
            self.temperature = False
            return self._note("no temperature")
        if refused == "max_tokens" and self.max_tokens is not None and token_parameter == "max_tokens":
            if self.token_parameter != "max_tokens":
                return ""
            self.token_parameter = "max_completion_tokens"
            return self._note("max_completion_tokens")
        return None

    def _note(self, what: str) -> str:
        self.fallbacks.append(what)
        return what
