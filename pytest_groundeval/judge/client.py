"""The async judge client: one verdict per cited paragraph (docs/citation.md, "Judge"; docs/judges.md).

:class:`JudgeClient` talks to any OpenAI-compatible chat endpoint through the
official ``openai`` SDK (``AsyncOpenAI``). Per paragraph it

1. answers from the :class:`.cache.JudgeCache` when one is given and holds the key;
2. sends the judge prompt (:func:`.prompt.judge_messages`) with structured output
   (``response_format`` ``json_schema``), ``temperature`` 0 and, when a cap is set,
   ``max_tokens``; an endpoint that refuses one of them with HTTP 400 is asked again
   without it (``json_schema`` → ``json_object`` → none; no ``temperature``;
   ``max_completion_tokens``), and the judge remembers that for the rest of the run
   (:class:`.fallbacks.RequestShape`), saying so once in :attr:`JudgeClient.notices`;
3. reads the reply (:func:`.parse.read_verdict`: reasoning blocks and fields, fences,
   case); a reply that holds no verdict (prose, an unknown verdict, an empty
   rationale, two different answers, an HTTP 200 that is no chat completion, no
   choices, null content) is asked again, at most ``parse_retries`` times, then
   recorded as ``unparseable``, each reason kept in ``parse_failures``;
4. adapts its requests in flight to the endpoint's rate limit (:class:`core.limiter.AimdLimiter`):
   a 429 halves them and they recover one at a time; the 429 is sent again after its
   ``Retry-After`` (capped; without one, an exponential backoff), at most
   ``rate_limit_retries`` times, except a 429 saying the account has no quota left
   (``insufficient_quota``), which no wait mends;
5. retries a 5xx, a timeout or a connection failure at most ``max_retries`` times; after
   that the paragraph is *unjudged*: ``JudgeResult.verdict`` is None and
   ``JudgeResult.error`` says why (counted as ``judgeErrors``, never dropped).

At most ``concurrency`` requests are in flight at once, fewer while the endpoint rate
limits. After ``give_up_after`` paragraphs in a row are left unjudged, the judge counts
as gone: the paragraphs after them are not sent and are left unjudged at once, saying
so (still counted as ``judgeErrors``), so a judge that is down costs a run seconds,
not its retries times every paragraph. :attr:`JudgeClient.gave_up` then says why, and
the plugin stops the session on it as on a dead target (``core.runner.ItemRunner.note_judging``).

Everything a judge learns about its endpoint (fallbacks, the limiter) lives on its
``JudgeClient``: two judges never share it.

The API key goes to the SDK client and nowhere else: it is not an attribute of
:class:`JudgeClient`, not in its ``repr``, not in the cache and not in any error
text, rationale or notice (which are scrubbed of it, ``core.secrets``, in case a server echoes it).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.judging import UNPARSEABLE, JudgeInput, JudgeResult
from ..core.limiter import AimdLimiter, retry_after_seconds
from ..core.secrets import Scrubber
from .cache import JudgeCache, cache_key
from .fallbacks import RequestShape, refused_parameter
from .parse import UnparseableReply, parse_verdict, reply_content, reply_usage
from .prompt import JUDGE_SCHEMA, JUDGE_SCHEMA_NAME, PROMPT_VERSION, judge_messages

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam

__all__ = ["JudgeClient", "JudgeResult", "JudgeUsage", "retry_after_seconds"]

GIVE_UP_AFTER = 3
"""Paragraphs in a row left unjudged after which a ``JudgeClient`` sends no more (as the target's streak)."""

NO_KEY = "EMPTY"
"""API key sent when none is configured (vLLM and most local servers ignore it)."""

RATE_LIMIT_RETRIES = 8
"""How many times one request is sent again after a 429 before its paragraph is unjudged."""


class _Unavailable(Exception):
    """The judge could not answer after the bounded retries."""


@dataclass
class JudgeUsage:
    """The tokens one judge's replies reported, summed over its life (docs/judges.md, "Tokens and cost").

    Held by its :class:`JudgeClient` (``JudgeClient.usage``): each judge counts its own, so
    several judges (a jury) are summed per model. A reply without ``usage`` is counted in
    ``replies_without_usage``, never as 0 tokens. A run's figures come from the paragraph
    records (``judgeTokens``), which add up to the same counts.
    """

    model: str
    """The judge model."""
    prompt_tokens: int = 0
    """Prompt tokens of the replies that carried ``usage``."""
    completion_tokens: int = 0
    """Completion tokens of the same replies."""
    replies: int = 0
    """HTTP 200 replies received (a cache hit sends nothing and gets none)."""
    replies_without_usage: int = 0
    """Of them, replies with no ``usage``: their tokens are unknown."""

    def add(self, usage: tuple[int, int] | None) -> None:
        """Count one reply: its ``(prompt, completion)`` tokens, or None when it carried no ``usage``."""
        self.replies += 1
        if usage is None:
            self.replies_without_usage += 1
        else:
            self.prompt_tokens += usage[0]
            self.completion_tokens += usage[1]

    def to_wire(self) -> dict[str, dict[str, int]]:
        """``{model: {"promptTokens", "completionTokens", "replies", "repliesWithoutUsage"}}``, as ``judgeTokens``."""
        return {
            self.model: {
                "promptTokens": self.prompt_tokens,
                "completionTokens": self.completion_tokens,
                "replies": self.replies,
                "repliesWithoutUsage": self.replies_without_usage,
            }
        }


class JudgeClient:
    """An OpenAI-compatible chat endpoint used as a citation judge.

    Use as ``async with JudgeClient(url, model, api_key) as judge:`` and
    ``await judge.judge(payload)`` with a payload from ``core.judging.judge_input``. It is the
    HTTP implementation of the ``core.judging.Judge`` protocol the citation kind asks.

    Args:
        base_url: OpenAI-style base URL, e.g. ``http://127.0.0.1:8000/v1``.
        model: Judge model name.
        api_key: API key, or None to send :data:`NO_KEY`. Held only by the SDK client and the key scrubber, never printed.
        concurrency: Most requests in flight (fewer while the endpoint rate limits: :attr:`limiter`).
        max_retries: Retries of a 5xx, timeout or connection failure per request.
        parse_retries: Extra requests after a reply that cannot be parsed.
        timeout: Seconds per request.
        max_retry_after: Cap, in seconds, on a server's ``Retry-After``.
        backoff: Base seconds of the exponential wait when the server names none.
        cache: A :class:`JudgeCache`, or None (the default: no cache).
        structured_output: Start with ``response_format`` ``json_schema`` (False: send none).
        headers: Extra request headers (e.g. the mock's fault header).
        give_up_after: Paragraphs in a row left unjudged after which no more are sent
            (None: never give up).
        max_tokens: Completion-token cap of each request (``max_tokens``, or
            ``max_completion_tokens`` for an endpoint that refuses it); None sends none.
        rate_limit_retries: Times one request is sent again after a 429.

    Raises:
        ImportError: The ``openai`` package is not installed (``pip install 'pytest-groundeval[judge]'``).
        ValueError: A bound is negative, ``concurrency`` is below 1 or ``max_tokens`` below 1.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        *,
        concurrency: int = 4,
        max_retries: int = 2,
        parse_retries: int = 2,
        timeout: float = 60.0,
        max_retry_after: float = 30.0,
        backoff: float = 0.5,
        cache: JudgeCache | None = None,
        structured_output: bool = True,
        headers: Mapping[str, str] | None = None,
        give_up_after: int | None = GIVE_UP_AFTER,
        max_tokens: int | None = None,
        rate_limit_retries: int = RATE_LIMIT_RETRIES,
    ) -> None:
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("the judge needs the openai package: pip install 'pytest-groundeval[judge]'") from exc
        if (
            concurrency < 1
            or min(max_retries, parse_retries, rate_limit_retries) < 0
            or min(timeout, max_retry_after, backoff) < 0
            or (max_tokens is not None and max_tokens < 1)
        ):
            raise ValueError("judge bounds must be non-negative, concurrency and max_tokens at least 1")
        self._openai = openai
        self.base_url = base_url
        self.model = model
        self.max_retries = max_retries
        self.parse_retries = parse_retries
        self.rate_limit_retries = rate_limit_retries
        self.timeout = timeout
        self.max_retry_after = max_retry_after
        self.backoff = backoff
        self.cache = cache
        self.shape = RequestShape("json_schema" if structured_output else "none", max_tokens=max_tokens)
        """What this judge's requests carry, stepped down as its endpoint refuses a parameter."""
        self.limiter = AimdLimiter(concurrency)
        """This judge's requests in flight, halved on a 429 (``core.limiter``)."""
        self.notices: list[str] = []
        """One line per fallback this judge made (docs/judges.md), in order, scrubbed of the key."""
        self.usage = JudgeUsage(model)
        """The tokens this judge's replies reported so far (docs/judges.md, "Tokens and cost")."""
        self._notices_taken = 0
        self.give_up_after = give_up_after
        self._unjudged_streak = 0
        self.gone: str | None = None
        """Why no more paragraphs are sent (the judge failed ``give_up_after`` in a row), or None."""
        self.gave_up: str | None = None
        """Once ``gone``: what stops the session (docs/citation.md), naming the judge's URL, model and
        the last error; None while the judge answers."""
        # The SDK's own retries are off: this client bounds and explains them.
        self._client = openai.AsyncOpenAI(
            base_url=base_url,
            api_key=api_key or NO_KEY,
            max_retries=0,
            timeout=timeout,
            default_headers=dict(headers or {}),
        )
        self._scrubber = Scrubber([api_key])  # masks the key in errors and rationales; its repr never shows it

    def __repr__(self) -> str:
        return f"JudgeClient(base_url={self.base_url!r}, model={self.model!r})"

    @property
    def structured_output(self) -> bool:
        """Whether requests still ask for ``response_format`` ``json_schema``."""
        return self.shape.response_format == "json_schema"

    async def __aenter__(self) -> JudgeClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the HTTP connections."""
        await self._client.close()

    def pop_notices(self) -> list[str]:
        """The :attr:`notices` not handed out yet, each handed out once (the plugin's summary warns with them)."""
        fresh = self.notices[self._notices_taken :]
        self._notices_taken = len(self.notices)
        return fresh

    async def judge(self, payload: JudgeInput | Mapping[str, Any]) -> JudgeResult:
        """Judge one paragraph.

        Args:
            payload: The input object from ``core.judging.judge_input``.

        Returns:
            A ``core.judging.JudgeResult``; never raises for a judge that is down, slow,
            rate limiting or talking nonsense (those become ``error`` or ``unparseable``).
        """
        messages = judge_messages(payload)
        key = cache_key(self.model, messages, PROMPT_VERSION) if self.cache is not None else ""
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                return JudgeResult(verdict=hit[0], rationale=hit[1], model=self.model, cached=True, replies=0)
        result = JudgeResult(verdict=None, rationale="", model=self.model, replies=0)
        for _ in range(1 + self.parse_retries):
            try:
                content = await self._complete(messages, result)
            except _Gone as exc:
                result.error = str(exc)
                return result
            except _Unavailable as exc:
                result.error = self._scrub(str(exc))
                self._note_unjudged(result.error)
                return result
            except UnparseableReply as exc:  # an HTTP 200 that holds no answer: no completion, no content
                self._unjudged_streak = 0
                result.parse_failures.append(self._scrub(str(exc)))
                continue
            self._unjudged_streak = 0
            try:
                verdict, rationale = parse_verdict(content)
            except UnparseableReply as exc:
                result.parse_failures.append(self._scrub(str(exc)))
                continue
            # A judge may quote its own key back: it never reaches the report, history or cache.
            rationale = self._scrub(rationale)
            result.verdict, result.rationale = verdict, rationale
            if self.cache is not None:
                self.cache.put(key, verdict, rationale, model=self.model)
            return result
        result.verdict = UNPARSEABLE
        result.rationale = f"no parseable reply in {result.attempts} attempt(s): {result.parse_failures[-1]}"
        return result

    def _note_unjudged(self, error: str) -> None:
        self._unjudged_streak += 1
        if self.give_up_after is not None and self._unjudged_streak >= self.give_up_after and self.gone is None:
            self.gone = (
                f"not sent: the judge left {self._unjudged_streak} paragraphs in a row unjudged, "
                f"so it counts as gone; the last: {error}"
            )
            self.gave_up = (
                f"the citation judge (model {self.model!r} at {self.base_url}) gave up: "
                f"{self._unjudged_streak} paragraphs in a row left unjudged; the last: {error}"
            )

    async def judge_many(self, payloads: Sequence[JudgeInput | Mapping[str, Any]]) -> list[JudgeResult]:
        """Judge several paragraphs concurrently (bounded by the limiter); results in input order."""
        return list(await asyncio.gather(*(self.judge(p) for p in payloads)))

    async def _complete(self, messages: list[ChatCompletionMessageParam], result: JudgeResult) -> str:
        """One reply's content, with the fallbacks, the rate-limit waits and the bounded transport retries.

        Raises:
            _Gone: The judge counted as gone before this paragraph's first request was sent.
            _Unavailable: No reply after the retries, a 4xx no fallback mends, or no quota left.
            UnparseableReply: An HTTP 200 that holds no answer (HTML, plain text, JSON of another
                shape, no choices, null content): asked again as prose is.
        """
        openai = self._openai
        last = "no attempt made"
        tries = failures = rate_limited = 0
        while True:
            delay = 0.0
            async with self.limiter.slot() as slot:
                if self.gone is not None and result.attempts == 0:
                    raise _Gone(self.gone)
                # Read when the request leaves, so it carries every fallback made while it waited.
                sent = self.shape.sent()
                params = self.shape.params(JUDGE_SCHEMA_NAME, JUDGE_SCHEMA)
                result.attempts += 1
                tries += 1
                try:
                    # The SDK's public ``post`` with the body as built here: the same request and the
                    # same errors as ``chat.completions.create``, without that method's typed-parameter
                    # transform and its response model (benchmarks/README.md, "Judge CPU").
                    completion = _decoded(
                        await self._client.post(
                            "/chat/completions",
                            body={"model": self.model, "messages": messages, **params},
                            cast_to=object,
                        )
                    )
                except openai.BadRequestError as exc:
                    slot.succeeded()  # the endpoint answered: it is not overloaded
                    refused = refused_parameter(exc.body, _message(exc))
                    change = self.shape.step_down(refused, sent)
                    if change is None:
                        raise _Unavailable(
                            f"judge at {self.base_url} rejected the request: HTTP 400 {_message(exc)}"
                        ) from None
                    if change:
                        self._notice(sent, change, exc)
                    continue  # asked again without what it refused: not a retry
                except openai.RateLimitError as exc:
                    if _no_quota(exc):
                        raise _Unavailable(
                            f"judge at {self.base_url} answered HTTP 429 with no quota left: {_message(exc)} "
                            "(not retried: waiting does not restore a quota)"
                        ) from None
                    wait = retry_after_seconds(exc.response.headers)
                    slot.rate_limited(None if wait is None else min(wait, self.max_retry_after))
                    rate_limited += 1
                    last = "HTTP 429 (rate limited)"
                    if rate_limited > self.rate_limit_retries:
                        raise _Unavailable(
                            f"judge at {self.base_url}: still rate limited (HTTP 429) after "
                            f"{rate_limited} attempt(s) in a row"
                        ) from None
                    delay = self.backoff * (2 ** (rate_limited - 1)) if wait is None else wait
                except openai.APIStatusError as exc:
                    if exc.status_code < 500:
                        raise _Unavailable(
                            f"judge at {self.base_url} answered HTTP {exc.status_code}: {_message(exc)}"
                        ) from None
                    last = f"HTTP {exc.status_code}"
                    failures += 1
                    wait = retry_after_seconds(exc.response.headers)
                    delay = self.backoff * (2 ** (failures - 1)) if wait is None else wait
                except openai.APITimeoutError:
                    last = f"no answer within {self.timeout:g} s"
                    failures += 1
                    delay = self.backoff * (2 ** (failures - 1))
                except openai.APIConnectionError as exc:
                    last = f"unreachable ({type(exc.__cause__ or exc).__name__})"
                    failures += 1
                    delay = self.backoff * (2 ** (failures - 1))
                except openai.APIError as exc:
                    last = f"unreadable response ({type(exc).__name__})"
                    failures += 1
                    delay = self.backoff * (2 ** (failures - 1))
                except ValueError as exc:  # a JSON content type whose body does not decode
                    slot.succeeded()
                    self._count_reply(result, None)
                    raise UnparseableReply(f"the HTTP 200 body is not JSON ({exc})") from None
                else:
                    slot.succeeded()
                    # Counted before the content is read: an unparseable reply is billed too.
                    self._count_reply(result, reply_usage(completion))
                    return reply_content(completion)
            if failures > self.max_retries:
                raise _Unavailable(f"judge at {self.base_url}: {last}, after {tries} attempt(s)")
            await asyncio.sleep(min(delay, self.max_retry_after))

    def _count_reply(self, result: JudgeResult, usage: tuple[int, int] | None) -> None:
        """Count one HTTP 200 reply's tokens on the paragraph's result and on :attr:`usage` (None: no ``usage``)."""
        self.usage.add(usage)
        result.replies = (result.replies or 0) + 1
        if usage is None:
            result.replies_without_usage += 1
        else:
            result.prompt_tokens += usage[0]
            result.completion_tokens += usage[1]

    def _notice(self, sent: tuple[str, bool, str], change: str, exc: BaseException) -> None:
        """Say once, for this judge, what it stopped sending and why (docs/judges.md, "Fallbacks")."""
        response_format, _, token_parameter = sent
        refused = {
            "json_object": f"response_format {response_format}",
            "no response_format": f"response_format {response_format}",
            "no temperature": "temperature 0",
            "max_completion_tokens": token_parameter,
        }[change]
        sends = {
            "json_object": "asks for response_format json_object",
            "no response_format": "sends no response_format",
            "no temperature": "sends no temperature",
            "max_completion_tokens": "sends max_completion_tokens",
        }[change]
        self.notices.append(
            self._scrub(
                f"judge {self.model!r} at {self.base_url} refused {refused} (HTTP 400: {_message(exc)}); "
                f"it {sends} for the rest of the run"
            )
        )

    def _scrub(self, text: str) -> str:
        return self._scrubber.text(text)


class _Gone(Exception):
    """The judge counted as gone before the paragraph was sent; the message is ``JudgeClient.gone``."""


def _decoded(body: object) -> object:
    """A chat completion as ``post(..., cast_to=object)`` returned it: the decoded JSON body, or its text.

    The SDK decodes a JSON content type and hands any other body over as text; as
    ``chat.completions.create`` does, a text body that is a JSON object is decoded too (a proxy
    that labels JSON ``text/plain``). Anything else stays text, which ``reply_content`` refuses.
    """
    if isinstance(body, str) and body.lstrip().startswith("{"):
        try:
            decoded = json.loads(body)
        except ValueError:
            return body
        return decoded if isinstance(decoded, dict) else body
    return body


def _no_quota(exc: BaseException) -> bool:
    """Whether a 429 says the account has no quota left (OpenAI's ``insufficient_quota``), not a rate limit.

    https://platform.openai.com/docs/guides/error-codes: a 429 of type ``insufficient_quota`` (its
    ``code`` names the billing limit) is not mended by waiting, unlike ``rate_limit_exceeded``.
    """
    body = getattr(exc, "body", None)
    error = body.get("error", body) if isinstance(body, dict) else None
    return isinstance(error, dict) and "insufficient_quota" in (error.get("type"), error.get("code"))


def _message(exc: BaseException) -> str:
    """The error message an API error's JSON body carries (at most 200 characters), else the error's type name."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(message := error.get("message"), str):
            return message[:200]
        if isinstance(message := body.get("message"), str):
            return message[:200]
    return type(exc).__name__
