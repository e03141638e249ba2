"""The judge behind ``groundeval rejudge`` (docs/history.md, "Rejudging"; docs/citation.md, "Judge").

``RejudgeJudge`` adapts any ``core.judging.Judge`` (the protocol the citation kind asks
during a run) to ``rejudge.Judge``, the paragraph-at-a-time judge ``rejudge_run`` calls:
each stored paragraph becomes the judge input of ``core.kinds.citation.judge_payload``,
with the paragraph's full text and its sources' text and metadata: those the run stored
with the item (a target's own sources, which no corpus holds), else read from the run's
dataset (``config.dataset.path``): for a recorded answer, the item's recorded sources;
for a target's answer, the evidence spans of the stored trace sliced from the corpus,
else the item's declared sources (metadata only). A paragraph the judge could not judge
(unreachable after its retries) raises, so ``rejudge_run`` leaves it unjudged and counts it.

``judge_from_args`` builds the default one, over the HTTP judge
(``pytest_groundeval.judge.client.JudgeClient``), or over a jury of them
(``core.kinds.citation.Jury``: ``--judge-model`` repeated, or ``--judges FILE``; docs/judges.md,
"Juries"), whose verdicts are stored with each judge's own.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, TypeVar

from ..core.dataset import Dataset, load_dataset
from ..core.judging import USAGE_RECORD_KEYS, Judge, JudgeInput, JudgeResult, record_usage
from ..core.jury import DEFAULT_POLICY, POLICIES
from ..core.kinds.citation import Jury, judge_payload, paragraphs, source_details
from ..judge.client import JudgeClient
from ..judge.judges_file import JudgesFileError, JudgeSpec, check_judge_url, load_judges
from ..judge.prompt import PROMPT_VERSION
from .errors import HistoryError
from .records import JUDGE_KEYS
from .rejudge import JudgeRequest, JudgeVerdict

__all__ = ["API_KEY_ENV", "CONCURRENCY", "RejudgeJudge", "judge_from_args", "jury_judge", "llm_judge"]

API_KEY_ENV = "GROUNDEVAL_JUDGE_API_KEY"
"""Environment variable holding the judge endpoint's API key (never a flag: it would be in shell history)."""

CONCURRENCY = 4
"""Paragraphs asked at once."""

_T = TypeVar("_T")


class RejudgeJudge:
    """A ``core.judging.Judge`` asked about stored paragraphs, as ``rejudge_run`` calls a judge.

    The judge lives on an event loop of its own, in a daemon thread, so that ``rejudge_run``
    (synchronous) can hand it a batch at a time (``judge_many``) and its paragraphs are asked
    concurrently.

    Args:
        make_judge: Builds the judge; called once, on that loop (an HTTP client binds to the loop
            it is made on).
        prompt_version: Recorded with the judgment set a rejudge writes (default: the judge
            prompt's ``PROMPT_VERSION``).

    Raises:
        HistoryError: the judge cannot be built (``make_judge`` raised ``ImportError``, e.g. the
            ``openai`` package is missing).
    """

    def __init__(self, make_judge: Callable[[], Judge], *, prompt_version: str | None = PROMPT_VERSION) -> None:
        self.prompt_version = prompt_version
        """Recorded with the judgment set a rejudge writes."""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="groundeval-rejudge", daemon=True)
        self._thread.start()
        self._datasets: dict[str, Dataset | None] = {}
        self._judge: Judge | None = None

        async def make() -> Judge:
            return make_judge()

        try:
            self._judge = self._run(make())
        except ImportError as exc:
            self.close()
            raise HistoryError(str(exc)) from None
        self.model: str = self._judge.model
        """The judge model, recorded with the judgment set."""

    def _run(self, coro: Coroutine[Any, Any, _T]) -> _T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def close(self) -> None:
        """Close the judge's connections and stop the loop. Safe to call twice."""
        if self._loop.is_closed():
            return
        if self._judge is not None:
            self._run(self._judge.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def __enter__(self) -> RejudgeJudge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what the judge sees -------------------------------------------------------

    def _dataset(self, path: str | None) -> Dataset | None:
        if not path:
            return None
        if path not in self._datasets:
            try:
                self._datasets[path] = load_dataset(path)
            except Exception:  # noqa: BLE001 - moved or changed: judge with what the history stored
                self._datasets[path] = None
        return self._datasets[path]

    def payload(self, request: JudgeRequest) -> JudgeInput:
        """The judge input of one stored paragraph (``core.judging.judge_input`` shape)."""
        dataset = self._dataset(request.dataset)
        # Any registered kind's item, read by duck typing: a citation item has a ``response`` (an item that
        # changed kind since the run is judged with what the history stored).
        item: Any = dataset.by_id.get(request.item_id) if dataset is not None else None
        answer = request.answer
        if answer is None and item is not None and getattr(item, "response", None) is not None:
            answer = item.response.answer
        texts = paragraphs(answer) if answer else []
        paragraph = texts[request.paragraph] if 0 <= request.paragraph < len(texts) else request.text
        sources = _stored_sources(request.sources)
        if sources is None and item is not None and dataset is not None:
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

    # -- rejudge.Judge -------------------------------------------------------------

    async def _judge_all(self, payloads: Sequence[JudgeInput]) -> list[JudgeResult]:
        assert self._judge is not None  # set in __init__, or it raised
        return list(await asyncio.gather(*(self._judge.judge(p) for p in payloads)))

    def _verdict(self, result: JudgeResult) -> JudgeVerdict | Exception:
        if result.verdict is None:
            return HistoryError(result.error or "the judge gave no verdict")
        judges = None
        if result.judges is not None:  # a jury's: each judge's own verdict is stored beside it
            # Each judge's verdict and its tokens (docs/judges.md), as the plugin's records carry them.
            keys = (*JUDGE_KEYS, *USAGE_RECORD_KEYS)
            judges = [{key: record.get(key) for key in keys} for record in (j.to_record() for j in result.judges)]
        return JudgeVerdict(verdict=result.verdict, rationale=result.rationale or "(no rationale)",
                            judge_model=result.model, judges=judges, usage=record_usage(result.to_record()))  # fmt: skip

    def judge_many(self, requests: Sequence[JudgeRequest]) -> list[JudgeVerdict | Exception]:
        """Judge several paragraphs concurrently; one verdict or exception per request, in order."""
        payloads: list[JudgeInput | Exception] = []
        for request in requests:
            try:
                payloads.append(self.payload(request))
            except Exception as exc:  # noqa: BLE001 - counted as a judge failure of this paragraph
                payloads.append(exc)
        wanted = [p for p in payloads if not isinstance(p, Exception)]
        results = iter(self._run(self._judge_all(wanted)))
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


def llm_judge(
    url: str, model: str, api_key: str | None = None, *, concurrency: int = CONCURRENCY, **client_options: Any
) -> RejudgeJudge:
    """A ``RejudgeJudge`` over the HTTP judge (``JudgeClient``) of an OpenAI-compatible endpoint.

    Args:
        url: The judge's OpenAI-style base URL (``…/v1``).
        model: The judge model, recorded with each judgment.
        api_key: API key, default ``$GROUNDEVAL_JUDGE_API_KEY``.
        concurrency: The judge's requests in flight at once.
        client_options: Further ``JudgeClient`` options (retries, timeout, headers).

    Raises:
        HistoryError: the ``openai`` package is missing.
    """
    key = api_key or os.environ.get(API_KEY_ENV)
    return RejudgeJudge(lambda: JudgeClient(url, model, key, concurrency=concurrency, **client_options))


def jury_judge(
    judges: Sequence[JudgeSpec], policy: str = DEFAULT_POLICY, *, concurrency: int = CONCURRENCY, **client_options: Any
) -> RejudgeJudge:
    """A ``RejudgeJudge`` over a jury (``core.kinds.citation.Jury``) of HTTP judges, one ``JudgeClient`` each.

    Args:
        judges: Two judges or more, each with its URL, model and key.
        policy: How their verdicts become one (``core.jury.POLICIES``).
        concurrency: Each judge's requests in flight at once.
        client_options: Further ``JudgeClient`` options.

    Raises:
        HistoryError: the ``openai`` package is missing.
    """
    return RejudgeJudge(
        lambda: Jury(
            [JudgeClient(j.url, j.model, j.api_key, concurrency=concurrency, **client_options) for j in judges], policy
        )
    )


NEEDS_A_JUDGE = (
    "rejudge needs a judge: --judge-url URL (an OpenAI-compatible base URL ending in /v1, e.g. a running "
    "`groundeval mock`) and --judge-model NAME (repeat it for a jury at that URL), the key, if any, in "
    'GROUNDEVAL_JUDGE_API_KEY; or --judges FILE (docs/judges.md, "Juries")'
)


def judge_from_args(args: Any) -> RejudgeJudge:
    """The ``rejudge`` judge factory: ``--judge-url`` with ``--judge-model`` (repeated: a jury), or ``--judges FILE``.

    ``--judge-policy`` and ``--judge-concurrency`` (per judge) as the plugin's ``--eval-judge-*`` options
    (docs/options.md).

    Raises:
        HistoryError: no judge, a URL without a model or a model without a URL, ``--judges`` with either,
            a judges file that cannot be used (its name, the entry and the field), a model given twice,
            an unknown policy or one without a jury, a concurrency below 1, or the judge cannot be built.
    """
    models = [str(m).strip() for m in (getattr(args, "judge_model", None) or [])]
    url, path = getattr(args, "judge_url", None), getattr(args, "judges", None)
    policy = getattr(args, "judge_policy", None)
    concurrency = getattr(args, "judge_concurrency", None)
    concurrency = CONCURRENCY if concurrency is None else concurrency
    if concurrency < 1:
        raise HistoryError(f"--judge-concurrency {concurrency}: expected a whole number >= 1")
    if path is not None and (url or models):
        raise HistoryError("--judges FILE names each judge's URL and model: drop --judge-url and --judge-model")
    if path is not None:
        try:
            judges = load_judges(path)
        except JudgesFileError as exc:
            raise HistoryError(f"--judges: {exc}") from None
    else:
        if not url or not models or not all(models):
            raise HistoryError(NEEDS_A_JUDGE)
        problem = check_judge_url(url)
        if problem is not None:
            raise HistoryError(f"--judge-url: {problem}")
        twice = sorted({m for m in models if models.count(m) > 1})
        if twice:
            raise HistoryError(f"--judge-model names {twice[0]!r} twice: each judge of a jury needs its own model")
        key = os.environ.get(API_KEY_ENV)
        judges = [JudgeSpec(url=url.rstrip("/"), model=model, api_key=key) for model in models]
    if policy is not None and policy not in POLICIES:
        raise HistoryError(f"--judge-policy {policy!r} is not a jury policy: expected one of {', '.join(POLICIES)}")
    if len(judges) == 1:
        if policy is not None:
            raise HistoryError("--judge-policy given, but one judge: a policy makes the verdicts of two or more one")
        one = judges[0]  # its key: GROUNDEVAL_JUDGE_API_KEY, or the file's apiKeyEnv (none without one)
        return RejudgeJudge(lambda: JudgeClient(one.url, one.model, one.api_key, concurrency=concurrency))
    return jury_judge(judges, policy or DEFAULT_POLICY, concurrency=concurrency)
