"""The coverage scorer: a cross-encoder's score of a paragraph against its cited sources (docs/citation.md).

:class:`CoverageScorer` calls vLLM's score API (``POST /v1/score`` or ``/score``,
``{"model", "text_1", "text_2"}``) or, with ``api="rerank"``, its rerank API
(``/v1/rerank`` or ``/rerank``, ``{"model", "query", "documents"}``). The paragraph
(citation markers removed) is the query; the cited sources' texts, joined by blank
lines and cut to ``cap`` characters (default 28,000), the document. The coverage
score is the sigmoid of the returned logit, in [0, 1]. A scorer that cannot be
reached or answers something unreadable gives ``score`` None and an ``error``
(counted as ``scorerErrors``), never a guess. After ``give_up_after`` paragraphs
in a row got no score the scorer counts as gone and later paragraphs are not sent
(still counted, with an error saying so); :attr:`CoverageScorer.gave_up` then says why,
and the plugin stops the session on it as on a dead target.

Response shapes read: ``{"data": [{"score": x}]}`` (vLLM ``/score``), a bare list
``[{"index": 0, "score": x}]`` (text-embeddings-inference style), and
``{"results": [{"relevance_score": x}]}`` (rerank).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from typing import Any, Literal

import httpx

from pytest_groundeval.core.contract import strip_markers
from pytest_groundeval.core.judging import ScoreResult

__all__ = ["DEFAULT_CAP", "CoverageScorer", "ScoreResult", "read_score", "scorer_document", "sigmoid"]

DEFAULT_CAP = 28_000
"""Characters of the concatenated source texts sent to the scorer (docs/citation.md)."""

GIVE_UP_AFTER = 3
"""Paragraphs in a row without a score after which a ``CoverageScorer`` sends no more."""

SOURCE_SEPARATOR = "\n\n"
"""What joins the cited sources' texts."""


def sigmoid(logit: float) -> float:
    """``1 / (1 + e^-logit)`` in [0, 1], without overflow for large negative logits."""
    if logit >= 0:
        return 1.0 / (1.0 + math.exp(-logit))
    z = math.exp(logit)
    return z / (1.0 + z)


def scorer_document(texts: Sequence[str], cap: int = DEFAULT_CAP) -> tuple[str, bool]:
    """The document scored against a paragraph: non-empty ``texts`` joined by blank lines, cut to ``cap`` characters.

    Returns:
        ``(document, truncated)``.
    """
    joined = SOURCE_SEPARATOR.join(t for t in texts if t and t.strip())
    return (joined[:cap], True) if len(joined) > cap else (joined, False)


def read_score(body: Any) -> float:
    """The first score of a score or rerank response, in any of the shapes of the module docstring.

    Raises:
        ValueError: No numeric score in the body.
    """
    entries: Any = None
    if isinstance(body, list):
        entries = body
    elif isinstance(body, dict):
        entries = body.get("data") if "data" in body else body.get("results")
    if isinstance(entries, list) and entries and isinstance(entries[0], dict):
        entry = min(entries, key=lambda e: e.get("index", 0) if isinstance(e.get("index", 0), int) else 0)
        value = entry.get("score", entry.get("relevance_score"))
        if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            return float(value)
    raise ValueError("no numeric score in the response")


class CoverageScorer:
    """A vLLM-compatible score (or rerank) endpoint: the HTTP ``core.judging.Scorer``.

    Args:
        url: Server root (``http://host:8000``), ``…/v1``, or the full ``…/score`` / ``…/rerank`` URL.
            From a root, ``/v1/score`` is tried first and ``/score`` after a 404 (likewise for rerank).
        model: Model name sent with each request (None sends none: vLLM serves one model).
        cap: Characters of the concatenated source texts (default 28,000).
        api: ``score`` or ``rerank``.
        timeout: Seconds per request.
        max_retries: Retries of a 429, 5xx, timeout or connection failure.
        concurrency: Maximum requests in flight.
        headers: Extra request headers.
        give_up_after: Paragraphs in a row without a score after which no more are sent
            (None: never give up).
    """

    def __init__(
        self,
        url: str,
        model: str | None = None,
        *,
        cap: int = DEFAULT_CAP,
        api: Literal["score", "rerank"] = "score",
        timeout: float = 30.0,
        max_retries: int = 1,
        concurrency: int = 4,
        headers: dict[str, str] | None = None,
        give_up_after: int | None = GIVE_UP_AFTER,
    ) -> None:
        if cap < 1:
            raise ValueError(f"the scorer cap must be at least 1 character, got {cap}")
        self.url = url.rstrip("/")
        self.model = model
        self.cap = cap
        self.api = api
        self.max_retries = max_retries
        self._semaphore = asyncio.Semaphore(concurrency)
        self._http = httpx.AsyncClient(timeout=timeout, headers=headers or {})
        self._paths = self._candidates()
        self.give_up_after = give_up_after
        self._error_streak = 0
        self.gone: str | None = None
        """Why no more paragraphs are sent (``give_up_after`` failures in a row), or None."""
        self.gave_up: str | None = None
        """Once ``gone``: what stops the session (docs/citation.md), naming the scorer's URL, model and
        the last error; None while the scorer answers."""

    def __repr__(self) -> str:
        return f"CoverageScorer(url={self.url!r}, model={self.model!r}, cap={self.cap})"

    def _candidates(self) -> list[str]:
        if self.url.endswith(("/score", "/rerank")):
            return [self.url]
        if self.url.endswith("/v1"):
            return [f"{self.url}/{self.api}"]
        return [f"{self.url}/v1/{self.api}", f"{self.url}/{self.api}"]

    async def __aenter__(self) -> CoverageScorer:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the HTTP connections."""
        await self._http.aclose()

    async def score(self, paragraph: str, texts: Sequence[str]) -> ScoreResult:
        """Score ``paragraph`` against the cited sources' ``texts``.

        Returns:
            A ``core.judging.ScoreResult``; never raises for a scorer that is down or answers nonsense.
            With no non-empty text there is nothing to score: ``score`` None, ``error`` says so.
        """
        document, truncated = scorer_document(texts, self.cap)
        if not document:
            return ScoreResult(None, error="no cited source has text to score against")
        query = strip_markers(paragraph)
        if self.api == "rerank":
            body: dict[str, Any] = {"query": query, "documents": [document]}
        else:
            body = {"text_1": query, "text_2": document}
        if self.model is not None:
            body["model"] = self.model
        async with self._semaphore:
            if self.gone is not None:
                return ScoreResult(None, truncated=truncated, error=self.gone)
            try:
                logit = await self._post(body)
            except _ScorerError as exc:
                self._error_streak += 1
                if self.give_up_after is not None and self._error_streak >= self.give_up_after and self.gone is None:
                    self.gone = (
                        f"not sent: the scorer gave no score for {self._error_streak} paragraphs in a row, "
                        f"so it counts as gone; the last: {exc}"
                    )
                    self.gave_up = (
                        f"the coverage scorer ({f'model {self.model!r} ' if self.model else ''}at {self.url}) gave up: "
                        f"{self._error_streak} paragraphs in a row got no score; the last: {exc}"
                    )
                return ScoreResult(None, truncated=truncated, error=str(exc))
        self._error_streak = 0
        return ScoreResult(sigmoid(logit), logit=logit, truncated=truncated)

    async def _post(self, body: dict[str, Any]) -> float:
        last = "no attempt made"
        for attempt in range(1 + self.max_retries):
            for index, url in enumerate(self._paths):
                try:
                    response = await self._http.post(url, json=body)
                except httpx.TimeoutException:
                    last = f"scorer at {url}: timed out"
                    break
                except httpx.HTTPError as exc:
                    last = f"scorer at {url}: unreachable ({type(exc).__name__})"
                    break
                if response.status_code == 404 and index + 1 < len(self._paths):
                    continue
                if response.status_code == 429 or response.status_code >= 500:
                    last = f"scorer at {url}: HTTP {response.status_code}"
                    break
                if response.status_code != 200:
                    raise _ScorerError(f"scorer at {url}: HTTP {response.status_code}")
                try:
                    value = read_score(response.json())
                except ValueError as exc:
                    raise _ScorerError(f"scorer at {url}: unreadable response ({exc})") from None
                self._paths = [url]  # remember the path that works
                return value
            if attempt < self.max_retries:
                await asyncio.sleep(0.2 * (2**attempt))
        raise _ScorerError(f"{last}, after {1 + self.max_retries} attempt(s)")


class _ScorerError(Exception):
    """The scorer gave no usable score."""
