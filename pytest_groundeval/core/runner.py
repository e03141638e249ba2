"""Running one dataset item against a target and judging it (docs/dataset.md, docs/scoring.md, docs/evidence-risk.md).

This module is the per-item logic of the plugin, usable without pytest:
``await ItemRunner.run_async(item, dataset)`` (or the blocking ``run``) drives
the target through the ``Target`` protocol and returns an ``ItemOutcome``. An
item that cannot be run (target down, timeout, malformed response) raises
``ItemError`` carrying an errored outcome; an item that ran is judged and its
``passed`` flag and ``detail`` say why.

Target calls are awaited: a target whose class defines the coroutine methods
``aingest``, ``agenerate``, ``arecords``, ``aquery``, ``acompare`` (as
``HttpTarget`` does, over aiohttp) is awaited directly; any other ``Target`` has
its plain methods run in an executor thread, so in-process pipelines and
wrappers work unchanged and still run concurrently. Only methods the class
itself defines count, so a wrapper that overrides ``generate`` and delegates
the rest with ``__getattr__`` is never bypassed.

A target may define ``cannot_run(kind) -> str | None``: a reason makes each item of
that kind an error with that reason, before any call (``targets.mapped``).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Executor
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from ..targets.protocol import JsonObject, Target, TargetError, TargetUnavailable, call_attempt, call_ids
from ..targets.responses import check_response
from .evidence import describe_review, review_answer
from .judging import Judge, Scorer
from .kinds import kind_of
from .kinds.base import JudgeError
from .lineage import UNKNOWN_MODELS
from .outcome import ItemOutcome, outcome_of_attempts
from .secrets import Scrubber
from .text import listed, shorten  # noqa: F401  (listed: re-exported)

if TYPE_CHECKING:
    from .dataset import Dataset

UNAVAILABLE_STREAK = 3
"""Items in a row that could not connect before the target counts as gone."""

ERROR_STREAK = 10
"""Items in a row that could not be run (any cause) before the target counts as broken."""

TOOL_TRACE_KEYS = ("tool", "calls", "hits", "hitCount")
"""The ``toolTrace`` entry fields kept in ``extra.toolTrace`` (ids and counts; anything else is dropped)."""

_generated: contextvars.ContextVar[list[JsonObject] | None] = contextvars.ContextVar(
    "groundeval_generated", default=None
)
"""The generate responses of the item running in the current task (for ``extra.toolTrace``/``iterations``)."""


def agent_extra(responses: list[JsonObject]) -> dict[str, Any]:
    """``extra.toolTrace`` and ``extra.iterations`` from an item's generate responses (docs/target-contract.md).

    Tool entries keep only ``TOOL_TRACE_KEYS``, in response order; iterations are summed.
    Keys the responses do not carry are left out, so an item's ``extra`` only grows when
    the target reports a trace.
    """
    extra: dict[str, Any] = {}
    traces = [r["toolTrace"] for r in responses if r.get("toolTrace") is not None]
    if traces:
        extra["toolTrace"] = [
            {key: entry[key] for key in TOOL_TRACE_KEYS if entry.get(key) is not None}
            for trace in traces
            for entry in trace
        ]
    counts = [r["iterations"] for r in responses if r.get("iterations") is not None]
    if counts:
        extra["iterations"] = sum(counts)
    return extra


class ItemError(Exception):
    """An item could not be run.

    Attributes:
        outcome: The errored outcome to record.
        cause: The target error behind it.
        death: How the target's process died (exit status, log tail), when that explains it.
    """

    def __init__(self, outcome: ItemOutcome, cause: TargetError | None = None, death: str | None = None) -> None:
        super().__init__(outcome.error)
        self.outcome = outcome
        self.cause = cause
        self.death = death


class ItemRunner:
    """Runs dataset items against one target, ingesting each dataset's corpus once.

    Args:
        target: the system under test (``pytest_groundeval.targets.Target``); None for a runner of offline items only, which calls no target.
        run_id: identifies this run; temporal labels are namespaced with it (docs/dataset.md).
        mock_tokens: optional callable returning the mock provider's running total of
            prompt + completion tokens; used for ``tokensPerQuery`` when the target
            reports no ``usage`` (docs/gate.md).
        diagnose: optional callable explaining a failed call (for a spawned target:
            its exit code and log tail when it has died), or None when it has nothing to add.
        executor: where a sync target's methods run (default: the loop's default executor).
            Size it to the concurrency, or calls queue behind each other.
        call_run_id: ``(dataset) -> run id`` sent as ``X-Groundeval-Run-Id`` with the calls of
            that dataset's items (``protocol.call_ids``; docs/target-contract.md); default ``run_id``.
        scrub: the keys to mask (``core.secrets``) in every outcome and stop message this
            runner produces: a target may echo its key into an error body or an answer.
    """

    def __init__(
        self,
        target: Target | None,
        *,
        run_id: str | None = None,
        mock_tokens: Callable[[], int] | None = None,
        diagnose: Callable[[TargetError], str | None] | None = None,
        executor: Executor | None = None,
        call_run_id: Callable[[Dataset], str] | None = None,
        scrub: Scrubber | None = None,
    ) -> None:
        self.target = target
        self.scrub = scrub if scrub is not None else Scrubber()
        self.run_id = run_id or uuid.uuid4().hex
        self._call_run_id = call_run_id
        self._mock_tokens = mock_tokens
        self._diagnose = diagnose
        self._executor = executor
        self._ingested: dict[str, asyncio.Future[None]] = {}
        self.models: dict[str, str] = dict(UNKNOWN_MODELS)
        """The model lineage of the target, set by whoever knows it (docs/target-contract.md)."""
        self.drilldown = True
        """Whether outcomes carry the per-item view (question, answer, claims, evidence in ``extra``,
        ``core.drilldown``): the plugin turns it off when nothing would show it (no report, HTML,
        Markdown, step summary, history or JUnit XML), saving its cost on every item."""
        self.journal: Any = None
        """The xdist worker's crash journal (``plugin.crash.WorkerJournal``), when the plugin runs it."""
        self.dispatcher: Any = None
        """The ``dispatch.ItemDispatcher`` feeding this runner, when the plugin runs it."""
        self.judge: Judge | None = None
        """The citation judge (a ``core.judging.Judge``, e.g. the HTTP ``JudgeClient``), or None (docs/citation.md)."""
        self.scorer: Scorer | None = None
        """The coverage scorer (a ``core.judging.Scorer``, e.g. the HTTP ``CoverageScorer``), or None (docs/citation.md)."""
        self.repeat = 1
        """Attempts per item (``--eval-repeat N``, docs/gate.md "Repeats"). With N > 1 each item runs N
        times in a row, each attempt numbered in ``attempt`` (and sent as ``X-Groundeval-Attempt``),
        and its outcome carries the N attempts (``outcome.outcome_of_attempts``)."""
        self.stop_reason: str | None = None
        """Set once the target is gone or broken for good (its process died, it refused
        ``UNAVAILABLE_STREAK`` calls in a row, or ``ERROR_STREAK`` items in a row could
        not be run), or the citation judge or coverage scorer gave up (``note_judging``);
        the plugin then stops the session."""
        self._unavailable_streak = 0
        self._error_streak = 0

    # -- target calls -------------------------------------------------------------

    async def call(self, name: str, *args: Any) -> JsonObject:
        """Call target method ``name`` and check its response shape (docs/target-contract.md).

        Its async twin ``a<name>`` is awaited if the target's class defines one, else
        the plain method runs in an executor thread. The response is checked here,
        once, whatever the target (HTTP or in process).

        Raises:
            TargetError: the call failed, or the response breaks the contract (the
                message names the field).
        """
        async_method = getattr(type(self.target), "a" + name, None)
        if async_method is not None and inspect.iscoroutinefunction(async_method):
            response = await getattr(self.target, "a" + name)(*args)
        else:
            method = getattr(self.target, name)
            # The executor thread sees this task's context (the run and item ids of the call).
            context = contextvars.copy_context()
            response = await asyncio.get_running_loop().run_in_executor(
                self._executor, partial(context.run, method, *args)
            )
        if getattr(type(self.target), "checks_responses", False):
            # Checked where it was decoded (HttpTarget), with the URL and status. The class must
            # say so itself: a wrapper delegating with __getattr__ may alter responses.
            return cast(JsonObject, response)
        return check_response(name, response)

    # -- corpus -----------------------------------------------------------------

    async def ensure_ingested(self, dataset: Dataset) -> None:
        """Send every corpus document of ``dataset`` to the target once per runner.

        Concurrent items of the same dataset wait for the one ingest in flight.

        Raises:
            TargetError: the target refused or failed a document.
        """
        key = str(dataset.manifest_path)
        done = self._ingested.get(key)
        if done is None:
            done = self._ingested[key] = asyncio.get_running_loop().create_future()
            # The corpus belongs to the run, not to the item that happened to ingest it.
            ids = call_ids.set((call_ids.get()[0], None))
            try:
                for doc in dataset.documents.values():
                    await self.call(
                        "ingest",
                        {
                            "name": doc.name,
                            "label": doc.label,
                            "format": doc.format,
                            "contentHash": doc.content_hash,
                            "content": doc.content,
                        },
                    )
            except BaseException as exc:
                # A failed ingest is retried by the next item rather than poisoning the run.
                del self._ingested[key]
                done.set_exception(exc if isinstance(exc, Exception) else TargetError("ingest cancelled"))
                done.exception()  # mark retrieved
                raise
            finally:
                call_ids.reset(ids)
            done.set_result(None)
        elif done.done():
            done.result()  # ingested: every later item of the dataset passes here, awaiting nothing
        else:
            await asyncio.shield(done)

    # -- dispatch ---------------------------------------------------------------

    @property
    def attempt(self) -> int | None:
        """The attempt (1..N) running in the current context under ``repeat`` N > 1; None without repeats."""
        return call_attempt.get()

    def _repeated(self, attempts: list[ItemOutcome], errors: list[ItemError]) -> ItemOutcome:
        """The item's outcome from its attempts; an ``ItemError`` carrying it when an attempt errored.

        The error's cause and death are the last errored attempt's that has one, so the
        target's streaks (``note``) count the item once, as without repeats.
        """
        outcome = outcome_of_attempts(attempts)
        if not errors:
            return outcome
        cause = next((e.cause for e in reversed(errors) if e.cause is not None), None)
        death = next((e.death for e in reversed(errors) if e.death is not None), None)
        raise ItemError(outcome, cause=cause, death=death)

    def run(self, item: Any, dataset: Dataset) -> ItemOutcome:
        """Blocking ``run_async`` on a fresh event loop (for scripts and tests)."""
        return asyncio.run(self.run_async(item, dataset))

    def run_offline(self, item: Any, dataset: Dataset) -> ItemOutcome:
        """Judge an item that needs no target: a ``review`` item or a citation item with a recorded answer.

        Judging a recorded answer calls no target, so nothing bounds it but the judging
        itself: whatever it raises (a ``JudgeError`` such as a mention pattern that timed
        out, or any other exception) makes the item an error naming the item and the cause,
        never a crash of the session.

        Under ``repeat`` N > 1 the answer is judged N times (docs/gate.md, "Repeats").

        Raises:
            TypeError: the item needs a target.
            ItemError: judging failed (under repeats: for some attempt); carries the errored outcome.
        """
        kind = _offline_kind(item)
        if self.repeat == 1:
            return self._offline_once(kind, item, dataset)
        attempts: list[ItemOutcome] = []
        errors: list[ItemError] = []
        for number in range(1, self.repeat + 1):
            token = call_attempt.set(number)
            try:
                attempts.append(self._offline_once(kind, item, dataset))
            except ItemError as exc:
                attempts.append(exc.outcome)
                errors.append(exc)
            finally:
                call_attempt.reset(token)
        return self._repeated(attempts, errors)

    def _offline_once(self, kind: Any, item: Any, dataset: Dataset) -> ItemOutcome:
        try:
            return self._scrubbed(kind.run_offline(item, dataset))
        except Exception as exc:
            raise self._scrubbed_error(_offline_error(item, exc)) from exc

    async def run_offline_async(self, item: Any, dataset: Dataset) -> ItemOutcome:
        """``run_offline`` on the running event loop, with this runner's judge and scorer (docs/citation.md).

        A recorded citation answer is judged deterministically and then, when the runner
        carries a judge or a coverage scorer, its cited paragraphs are sent to them; still
        no target call. Errors as ``run_offline``.

        Under ``repeat`` N > 1 it is judged N times, the judge asked about each attempt's paragraphs.

        Raises:
            TypeError: the item needs a target.
            ItemError: judging failed (under repeats: for some attempt); carries the errored outcome.
        """
        _offline_kind(item)
        return await self._attempts(self._offline_once_async, item, dataset)

    async def _offline_once_async(self, item: Any, dataset: Dataset) -> ItemOutcome:
        kind = _offline_kind(item)
        try:
            return self._scrubbed(await kind.run_offline_async(self, item, dataset))
        except Exception as exc:
            raise self._scrubbed_error(_offline_error(item, exc)) from exc

    async def _attempts(self, once: Callable[[Any, Dataset], Any], item: Any, dataset: Dataset) -> ItemOutcome:
        """``once(item, dataset)`` awaited once, or under ``repeat`` N > 1 N times in a row, each attempt
        numbered in ``call_attempt``; the attempts' outcomes combined (``_repeated``)."""
        if self.repeat == 1:
            return cast(ItemOutcome, await once(item, dataset))
        attempts: list[ItemOutcome] = []
        errors: list[ItemError] = []
        for number in range(1, self.repeat + 1):
            token = call_attempt.set(number)
            try:
                attempts.append(await once(item, dataset))
            except ItemError as exc:
                attempts.append(exc.outcome)
                errors.append(exc)
            finally:
                call_attempt.reset(token)
        return self._repeated(attempts, errors)

    @staticmethod
    def needs_target(item: Any) -> bool:
        """Whether running ``item`` calls the target (recorded answers do not)."""
        return kind_of(item).needs_target(item)

    async def run_async(self, item: Any, dataset: Dataset) -> ItemOutcome:
        """Run ``item`` of ``dataset`` and return its judged outcome.

        Under ``repeat`` N > 1 the item runs N times in a row and its outcome carries the N
        attempts (docs/gate.md, "Repeats"); an attempt that could not be run is an errored
        attempt, and the item then raises ``ItemError`` carrying every attempt.

        Raises:
            ItemError: the item (under repeats: an attempt) could not be run; carries an errored outcome.
        """
        return await self._attempts(self._run_once, item, dataset)

    async def _run_once(self, item: Any, dataset: Dataset) -> ItemOutcome:
        try:
            return self._scrubbed(await self._run_target_item(item, dataset))
        except ItemError as exc:
            raise self._scrubbed_error(exc) from exc.__cause__

    def _scrubbed(self, outcome: ItemOutcome) -> ItemOutcome:
        """``outcome`` with the keys masked in its texts (error, detail, trace id, ``extra``)."""
        if not self.scrub:
            return outcome
        update: dict[str, Any] = {}
        for name in ("error", "detail", "trace_id"):
            value = getattr(outcome, name)
            if isinstance(value, str) and (masked := self.scrub.text(value)) is not value:
                update[name] = masked
        extra = self.scrub.value(outcome.extra)
        if extra is not outcome.extra:
            update["extra"] = extra
        return outcome.model_copy(update=update) if update else outcome

    def _scrubbed_error(self, error: ItemError) -> ItemError:
        if self.scrub:
            error.outcome = self._scrubbed(error.outcome)
            error.args = (error.outcome.error,)
            if error.death is not None:
                error.death = self.scrub.text(error.death)
        return error

    def note(self, error: ItemError | None) -> None:
        """Account for one target item's result, in the order its results are reported.

        The streaks that decide ``stop_reason`` count reported items, not calls as they
        complete: with items sent ahead, a call in flight may fail before the items
        ahead of it are reported, and the stop message must agree with the errors the
        summary counts. ``error`` is None for an item that ran.
        """
        if error is None:
            self._unavailable_streak = self._error_streak = 0
        elif error.cause is not None:
            self._note_failure(error.cause, error.death)

    def note_judging(self, outcome: ItemOutcome) -> None:
        """Stop the session when ``outcome`` lost paragraphs to a judge or scorer that gave up (docs/citation.md).

        Called for every item that ran, in the order results are reported. A citation judge
        (or coverage scorer) that left ``GIVE_UP_AFTER`` paragraphs in a row unanswered
        counts as gone, as a target that refuses calls does: the first reported item with
        unjudged (or unscored) paragraphs after that sets ``stop_reason`` to the client's
        ``gave_up`` (its URL, model and last error). That item keeps its outcome, its
        paragraphs counted in ``judgeErrors`` / ``scorerErrors``; the plugin stops the
        session there, so the items left are ``notRun`` errors and the run is interrupted.
        """
        if self.stop_reason is not None:
            return
        for client, key in ((self.judge, "citationJudgeErrors"), (self.scorer, "citationScorerErrors")):
            reason = getattr(client, "gave_up", None)
            # Under repeats each attempt keeps its own figures (``outcome_of_attempts``).
            if reason and any(attempt.extra.get(key) for attempt in outcome.attempts or [outcome]):
                self.stop_reason = reason
                return

    def _note_failure(self, exc: TargetError, death: str | None) -> None:
        """Decide whether the target is gone, or broken, for good (``stop_reason``)."""
        self._error_streak += 1
        said = self.scrub.text(str(exc))
        if death is not None:
            self.stop_reason = self.scrub.text(death.splitlines()[0])
        elif isinstance(exc, TargetUnavailable):
            self._unavailable_streak += 1
            if self._unavailable_streak >= UNAVAILABLE_STREAK:
                self.stop_reason = f"the target has refused {self._unavailable_streak} calls in a row: {said}"
        if self.stop_reason is None and self._error_streak >= ERROR_STREAK:
            self.stop_reason = f"{self._error_streak} items in a row could not be run; the last: {said}"

    async def _run_target_item(self, item: Any, dataset: Dataset) -> ItemOutcome:
        kind = kind_of(item)
        if not kind.needs_target(item):
            return await self._offline_once_async(item, dataset)
        refuse = getattr(self.target, "cannot_run", None)
        reason = refuse(item.kind) if callable(refuse) else None
        if isinstance(reason, str) and reason:
            # The target says up front it cannot answer this kind (a mapped target without the
            # response expressions the kind reads, docs/byo.md): an error of this item, no call,
            # and no streak (the target is not failing).
            raise ItemError(errored_outcome(item, reason))
        run_id = self._call_run_id(dataset) if self._call_run_id is not None else self.run_id
        ids = call_ids.set((run_id, item.id))
        responses: list[JsonObject] = []
        generated = _generated.set(responses)
        try:
            outcome = await kind.run(self, item, dataset)
            extra = agent_extra(responses)
            return outcome.model_copy(update={"extra": {**outcome.extra, **extra}}) if extra else outcome
        except JudgeError as exc:
            # The dataset's fault, not the target's: an error for this item, no streak counted.
            raise ItemError(errored_outcome(item, str(exc))) from exc
        except TargetError as exc:
            reason = self._diagnose(exc) if self._diagnose else None
            message = f"{exc}\n{reason}" if reason else str(exc)
            raise ItemError(errored_outcome(item, message), cause=exc, death=reason) from exc
        finally:
            _generated.reset(generated)
            call_ids.reset(ids)

    # -- generate ---------------------------------------------------------------

    async def generate(self, item: Any) -> tuple[JsonObject, dict[str, Any]]:
        """Call generate for ``item``; return ``(response, figures)``.

        ``figures`` holds the ``ItemOutcome`` fields ``latency_ms`` (client-side wall
        time of the call, ms), ``prompt_tokens``, ``completion_tokens`` (the target's
        ``usage``, else what the mock counted) and ``trace_id``.

        Raises:
            TargetError: the call failed or the response breaks the contract.
        """
        mock_tokens = self._mock_tokens
        before = mock_tokens() if mock_tokens else None
        start = time.perf_counter()
        response = await self.call("generate", item.question, item.find)
        latency_ms = (time.perf_counter() - start) * 1000.0
        generated = _generated.get()
        if generated is not None:
            generated.append(response)
        usage = response.get("usage") or {}
        prompt = usage.get("promptTokens")
        completion = usage.get("completionTokens")
        if prompt is None and completion is None and mock_tokens is not None and before is not None:
            # The target reports no usage: fall back to what the mock counted (docs/gate.md).
            prompt, completion = mock_tokens() - before, 0
        figures = {
            "latency_ms": latency_ms,
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "trace_id": response.get("traceId"),
        }
        return response, figures

    def spans(self, response: JsonObject, dataset: Dataset) -> list[tuple[str, str, str]]:
        """Slice each evidence entry of a generate response from canonical text.

        Returns:
            ``(marker, document name, text)`` per evidence entry, in order.

        Raises:
            TargetError: an entry names no corpus document of ``dataset``, or its
                UTF-8 byte offsets do not slice that document's canonical text.
        """
        spans = []
        for i, ev in enumerate(response["evidence"]):
            doc = dataset.documents.get(ev["document"])
            if doc is None:
                raise TargetError(
                    f"generate response evidence[{i}].document {ev['document']!r} is not a corpus "
                    f"document of this dataset (known: {sorted(dataset.documents)[:5]}…)"
                )
            try:
                text = doc.slice(ev["start"], ev["end"])
            except ValueError as exc:
                raise TargetError(f"generate response evidence[{i}]: {exc}") from exc
            spans.append((ev["marker"], ev["document"], text))
        return spans

    # -- evidence review ------------------------------------------------------------

    @staticmethod
    def review(item: Any, answer: str, problems: list[str]) -> Any:
        """Review the item's evidence block against the answer (docs/evidence-risk.md).

        Returns the ``EvidenceReview``, or None when the item has no block; a review
        that fails appends its description to ``problems``.
        """
        block = getattr(item, "evidence", None)
        if block is None:
            return None
        review = review_answer(block, answer)
        if not review.passed:
            problems.append(describe_review(review))
        return review


def _offline_kind(item: Any) -> Any:
    """The kind of an item that needs no target; ``TypeError`` for one that does."""
    kind = kind_of(item)
    if kind.needs_target(item):
        raise TypeError(f"{item.kind} item {item.id} needs a target")
    return kind


def _offline_error(item: Any, exc: Exception) -> ItemError:
    """The ``ItemError`` of a recorded answer whose judging raised ``exc`` (its message names the item)."""
    if isinstance(exc, JudgeError):
        return ItemError(errored_outcome(item, str(exc)))
    message = f"judging the recorded answer of {item.kind} item {item.id!r} raised {type(exc).__name__}: {exc}"
    return ItemError(errored_outcome(item, message))


def errored_outcome(item: Any, error: str) -> ItemOutcome:
    """The outcome of an item that could not be run (its kind's ``errored``).

    A qa item keeps its expected-evidence count, so its evidence counts as not
    found instead of leaving the recall denominator (errors are never dropped).
    """
    return kind_of(item).errored(item, error)


__all__ = ["ItemError", "ItemRunner", "agent_extra", "errored_outcome", "listed"]
