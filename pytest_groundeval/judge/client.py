"""The async judge client: one verdict per cited paragraph (docs/citation.md, "Judge").

:class:`JudgeClient` talks to any OpenAI-compatible chat endpoint through the
official ``openai`` SDK (``AsyncOpenAI``). Per paragraph it

1. answers from the :class:`.cache.JudgeCache` when one is given and holds the key;
2. sends the judge prompt (:func:`.prompt.judge_messages`), with structured output
   (``response_format`` ``json_schema``) until the endpoint rejects it with a 400,
   then without;
3. parses the reply strictly (:func:`.parse.parse_verdict`); prose, an unknown
   verdict, an empty rationale, or an HTTP 200 whose body is not a chat completion
   at all (an HTML page, plain text: :func:`.parse.reply_content`) is asked again, at most ``parse_retries`` times,
   then recorded as ``unparseable``;
4. retries a 429 (waiting its ``Retry-After``, capped), a 5xx, a timeout or a
   connection failure at most ``max_retries`` times; after that the paragraph is
   *unjudged*: ``JudgeResult.verdict`` is None and ``JudgeResult.error``
   says why (counted as ``judgeErrors``, never dropped).

At most ``concurrency`` requests are in flight at once (an ``asyncio.Semaphore``).
After ``give_up_after`` paragraphs in a row are left unjudged, the judge counts as
gone: the paragraphs after them are not sent and are left unjudged at once, saying
so (still counted as ``judgeErrors``), so a judge that is down costs a run seconds,
not its retries times every paragraph. :attr:`JudgeClient.gave_up` then says why, and
the plugin stops the session on it as on a dead target (``core.runner.ItemRunner.note_judging``).

The API key goes to the SDK client and nowhere else: it is not an attribute of
:class:`JudgeClient`, not in its ``repr``, not in the cache and not in any error
text or rationale (which are scrubbed of it, ``core.secrets``, in case a server echoes it).
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..core.judging import UNPARSEABLE, JudgeInput, JudgeResult
from ..core.secrets import Scrubber
from .cache import JudgeCache, cache_key
from .parse import UnparseableReply, parse_verdict, reply_content
from .prompt import JUDGE_SCHEMA, JUDGE_SCHEMA_NAME, PROMPT_VERSION, judge_messages

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam

__all__ = ["JudgeClient", "JudgeResult", "retry_after_seconds"]

GIVE_UP_AFTER = 3
"""Paragraphs in a row left unjudged after which a ``JudgeClient`` sends no more (as the target's streak)."""

NO_KEY = "EMPTY"
"""API key sent when none is configured (vLLM and most local servers ignore it)."""


class _Unavailable(Exception):
    """The judge could not answer after the bounded retries."""


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """Seconds a 429/503 asks the client to wait: ``retry-after-ms``, else ``Retry-After`` (seconds or an HTTP date)."""
    if not headers:
        return None
    milliseconds = headers.get("retry-after-ms")
    if milliseconds:
        try:
            return max(0.0, float(milliseconds) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value.strip() else None
        if parsed is None:
            return None
        return max(0.0, parsed.timestamp() - time.time())


class JudgeClient:
    """An OpenAI-compatible chat endpoint used as a citation judge.

    Use as ``async with JudgeClient(url, model, api_key) as judge:`` and
    ``await judge.judge(payload)`` with a payload from ``core.judging.judge_input``. It is the
    HTTP implementation of the ``core.judging.Judge`` protocol the citation kind asks.

    Args:
        base_url: OpenAI-style base URL, e.g. ``http://127.0.0.1:8000/v1``.
        model: Judge model name.
        api_key: API key, or None to send :data:`NO_KEY`. Held only by the SDK client and the key scrubber, never printed.
        concurrency: Maximum requests in flight.
        max_retries: Retries of a 429, 5xx, timeout or connection failure per request.
        parse_retries: Extra requests after a reply that cannot be parsed.
        timeout: Seconds per request.
        max_retry_after: Cap, in seconds, on a server's ``Retry-After``.
        backoff: Base seconds of the exponential wait when the server names none.
        cache: A :class:`JudgeCache`, or None (the default: no cache).
        structured_output: Send ``response_format`` ``json_schema`` (dropped after a 400).
        headers: Extra request headers (e.g. the mock's fault header).
        give_up_after: Paragraphs in a row left unjudged after which no more are sent
            (None: never give up).

    Raises:
        ImportError: The ``openai`` package is not installed (``pip install 'pytest-groundeval[judge]'``).
        ValueError: A bound is negative or ``concurrency`` is below 1.
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
    ) -> None:
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("the judge needs the openai package: pip install 'pytest-groundeval[judge]'") from exc
        if concurrency < 1 or min(max_retries, parse_retries) < 0 or min(timeout, max_retry_after, backoff) < 0:
            raise ValueError("judge bounds must be non-negative and concurrency at least 1")
        self._openai = openai
        self.base_url = base_url
        self.model = model
        self.max_retries = max_retries
        self.parse_retries = parse_retries
        self.timeout = timeout
        self.max_retry_after = max_retry_after
        self.backoff = backoff
        self.cache = cache
        self.structured_output = structured_output
        self._semaphore = asyncio.Semaphore(concurrency)
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

    async def __aenter__(self) -> JudgeClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the HTTP connections."""
        await self._client.close()

    async def judge(self, payload: JudgeInput | Mapping[str, Any]) -> JudgeResult:
        """Judge one paragraph.

        Args:
            payload: The input object from ``core.judging.judge_input``.

        Returns:
            A ``core.judging.JudgeResult``; never raises for a judge that is down, slow or
            talking nonsense (those become ``error`` or ``unparseable``).
        """
        messages = judge_messages(payload)
        key = cache_key(self.model, messages, PROMPT_VERSION)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                return JudgeResult(verdict=hit[0], rationale=hit[1], model=self.model, cached=True)
        result = JudgeResult(verdict=None, rationale="", model=self.model)
        async with self._semaphore:
            if self.gone is not None:
                result.error = self.gone
                return result
            for _ in range(1 + self.parse_retries):
                try:
                    content = await self._complete(messages, result)
                except _Unavailable as exc:
                    result.error = self._scrub(str(exc))
                    self._note_unjudged(result.error)
                    return result
                except UnparseableReply as exc:  # an HTTP 200 whose body is no chat completion
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
        """Judge several paragraphs concurrently (bounded by ``concurrency``); results in input order."""
        return list(await asyncio.gather(*(self.judge(p) for p in payloads)))

    async def _complete(self, messages: list[ChatCompletionMessageParam], result: JudgeResult) -> str | None:
        """One reply's content, with the bounded transport retries.

        Raises:
            _Unavailable: No reply after the retries (or a 4xx).
            UnparseableReply: An HTTP 200 whose body is not a chat completion (HTML, plain
                text, JSON of another shape): a reply that cannot be parsed, asked again as prose is.
        """
        openai = self._openai
        last = "no attempt made"
        for attempt in range(1 + self.max_retries):
            wait: float | None = None
            extra: dict[str, Any] = {}
            if self.structured_output:
                extra["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": JUDGE_SCHEMA_NAME, "schema": JUDGE_SCHEMA, "strict": True},
                }
            result.attempts += 1
            try:
                completion = await self._client.chat.completions.create(
                    model=self.model, messages=messages, temperature=0, **extra
                )
            except openai.BadRequestError as exc:
                if self.structured_output:
                    # The endpoint does not take response_format: ask again without it (not a retry).
                    self.structured_output = False
                    return await self._complete(messages, result)
                raise _Unavailable(f"judge at {self.base_url} rejected the request: HTTP 400 {_message(exc)}") from None
            except openai.RateLimitError as exc:
                last = "HTTP 429 (rate limited)"
                wait = retry_after_seconds(exc.response.headers)
            except openai.APIStatusError as exc:
                if exc.status_code < 500:
                    raise _Unavailable(
                        f"judge at {self.base_url} answered HTTP {exc.status_code}: {_message(exc)}"
                    ) from None
                last = f"HTTP {exc.status_code}"
                wait = retry_after_seconds(exc.response.headers)
            except openai.APITimeoutError:
                last = f"no answer within {self.timeout:g} s"
            except openai.APIConnectionError as exc:
                last = f"unreachable ({type(exc.__cause__ or exc).__name__})"
            except openai.APIError as exc:
                last = f"unreadable response ({type(exc).__name__})"
            except ValueError as exc:  # a JSON content type whose body does not decode
                raise UnparseableReply(f"the HTTP 200 body is not JSON ({exc})") from None
            else:
                return reply_content(completion)
            if attempt < self.max_retries:
                delay = self.backoff * (2**attempt) if wait is None else wait
                await asyncio.sleep(min(delay, self.max_retry_after))
        raise _Unavailable(f"judge at {self.base_url}: {last}, after {1 + self.max_retries} attempt(s)")

    def _scrub(self, text: str) -> str:
        return self._scrubber.text(text)


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
