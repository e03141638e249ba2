"""The LLM judge behind ``groundeval rejudge`` (docs/history.md, "Rejudging"; docs/citation.md, "Judge").

``LLMJudge`` is a ``rejudge.Judge`` over ``pytest_groundeval.judge.client.JudgeClient``:
each stored paragraph becomes the judge input of ``judge.paragraphs.judge_payload``,
with the paragraph's full text and its sources' text and metadata read from the
run's dataset (``config.dataset.path``): for a recorded answer, the item's
recorded sources; for a target's answer, the evidence spans of the stored trace
sliced from the corpus, else the item's declared sources (metadata only). A
paragraph the judge could not judge (unreachable after its retries) raises, so
``rejudge_run`` leaves it unjudged and counts it.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import HistoryError
from .rejudge import JudgeRequest, JudgeVerdict

API_KEY_ENV = "GROUNDEVAL_JUDGE_API_KEY"
"""Environment variable holding the judge endpoint's API key (never a flag: it would be in shell history)."""

CONCURRENCY = 4
"""Paragraphs asked at once."""


class LLMJudge:
    """An OpenAI-compatible judge for stored paragraphs.

    Args:
        url: The judge's OpenAI-style base URL (``…/v1``).
        model: The judge model, recorded with each judgment.
        api_key: API key, default ``$GROUNDEVAL_JUDGE_API_KEY``.
        client: A ready ``JudgeClient``-like object (tests), else one is made on the judge's loop.

    Raises:
        HistoryError: the ``openai`` package is missing.
    """

    def __init__(self, url: str, model: str, api_key: str | None = None, **client_options: Any) -> None:
        from ..judge.prompt import PROMPT_VERSION

        self.model = model
        self.prompt_version = PROMPT_VERSION
        """Recorded with the judgment set a rejudge writes."""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="groundeval-rejudge", daemon=True)
        self._thread.start()
        self._datasets: dict[str, Any] = {}

        async def make() -> Any:
            from ..judge.client import JudgeClient

            return JudgeClient(url, model, api_key or os.environ.get(API_KEY_ENV), concurrency=CONCURRENCY,
                               **client_options)  # fmt: skip

        try:
            self._client = self._run(make())
        except ImportError as exc:
            self.close()
            raise HistoryError(str(exc)) from None

    def _run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def close(self) -> None:
        """Close the client's connections and stop the loop. Safe to call twice."""
        if self._loop.is_closed():
            return
        client = getattr(self, "_client", None)
        if client is not None:
            self._run(client.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def __enter__(self) -> LLMJudge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what the judge sees -------------------------------------------------------

    def _dataset(self, path: str | None) -> Any:
        if not path:
            return None
        if path not in self._datasets:
            from ..core.dataset import load_dataset

            try:
                self._datasets[path] = load_dataset(path)
            except Exception:  # noqa: BLE001 - moved or changed: judge with what the history stored
                self._datasets[path] = None
        return self._datasets[path]

    def payload(self, request: JudgeRequest) -> dict[str, Any]:
        """The judge input of one stored paragraph (``judge.prompt.judge_input`` shape)."""
        from ..core.kinds.citation import paragraphs
        from ..judge.paragraphs import judge_payload, source_details

        dataset = self._dataset(request.dataset)
        item = dataset.by_id.get(request.item_id) if dataset is not None else None
        answer = request.answer
        if answer is None and item is not None and getattr(item, "response", None) is not None:
            answer = item.response.answer
        texts = paragraphs(answer) if answer else []
        paragraph = texts[request.paragraph] if 0 <= request.paragraph < len(texts) else request.text
        sources = _stored_sources(request.sources)
        if sources is None and item is not None:
            evidence = None
            if getattr(item, "response", None) is None:
                trace = request.trace if isinstance(request.trace, Mapping) else {}
                evidence = [e for e in trace.get("evidence") or [] if isinstance(e, Mapping)] or None
            try:
                sources = source_details(item, evidence, dataset.documents)
            except Exception:  # noqa: BLE001 - an item that changed kind since the run
                sources = None
        record = {"markers": request.markers, "metadataMismatch": request.metadata_mismatch}
        return judge_payload(record, paragraph, sources or {})

    # -- Judge ---------------------------------------------------------------------

    def _verdict(self, result: Any) -> JudgeVerdict | Exception:
        if result.verdict is None:
            return HistoryError(result.error or "the judge gave no verdict")
        return JudgeVerdict(verdict=result.verdict, rationale=result.rationale or "(no rationale)",
                            judge_model=result.model)  # fmt: skip

    def judge_many(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict | Exception]:
        """Judge several paragraphs concurrently; one verdict or exception per request, in order."""
        payloads = []
        for request in requests:
            try:
                payloads.append(self.payload(request))
            except Exception as exc:  # noqa: BLE001 - counted as a judge failure of this paragraph
                payloads.append(exc)
        wanted = [p for p in payloads if not isinstance(p, Exception)]
        results = iter(self._run(self._client.judge_many(wanted)))
        return [p if isinstance(p, Exception) else self._verdict(next(results)) for p in payloads]

    def __call__(self, request: JudgeRequest) -> JudgeVerdict:
        """Judge one paragraph; raises ``HistoryError`` when the judge could not."""
        out = self.judge_many([request])[0]
        if isinstance(out, Exception):
            raise out
        return out


def _stored_sources(value: Any) -> dict[str, dict[str, Any]] | None:
    """Stored sources in the judge's shape (marker → ``{"text", "metadata"}``), or None when there are none."""
    if not isinstance(value, Mapping) or not value:
        return None
    out = {}
    for marker, entry in value.items():
        if not isinstance(entry, Mapping):
            continue
        if "metadata" in entry or "text" in entry:
            out[str(marker)] = {"text": str(entry.get("text") or ""), "metadata": dict(entry.get("metadata") or {})}
        else:
            out[str(marker)] = {"text": "", "metadata": {k: v for k, v in entry.items() if isinstance(v, str)}}
    return out or None


def judge_from_args(args: Any) -> LLMJudge:
    """The ``rejudge`` judge factory: ``--judge-url`` and ``--judge-model`` (both needed).

    Raises:
        HistoryError: one of them is missing, or the judge cannot be built.
    """
    if not args.judge_url or not args.judge_model:
        raise HistoryError(
            "rejudge needs a judge: --judge-url URL (an OpenAI-compatible base URL ending in /v1, e.g. a running "
            "`groundeval mock`) and --judge-model NAME; the key, if any, in GROUNDEVAL_JUDGE_API_KEY"
        )
    return LLMJudge(args.judge_url, args.judge_model)
