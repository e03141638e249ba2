"""Running one dataset item against a target and judging it (SPEC §2, §5, §6, §8).

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
"""

from __future__ import annotations

import asyncio
import inspect
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Executor
from functools import partial
from typing import Any

from .contract import strip_markers
from .dataset import (
    AdversarialItem,
    CitationItem,
    CompareProbe,
    Dataset,
    QaItem,
    ReviewItem,
    TemporalItem,
)
from .evidence import review_answer
from .outcome import ItemOutcome
from .scoring import best_truth, claim_coverage, claim_is_true, evidence_found
from .targets import (
    Target,
    TargetError,
    TargetUnavailable,
    check_generate_response,
    namespace_label,
    substitute,
)

FALSEHOOD_OVERLAP = 0.6
"""A claim overlaps a planted falsehood when it covers this share of the claim's tokens (SPEC §2)."""

UNAVAILABLE_STREAK = 3
"""Items in a row that could not connect before the target counts as gone."""

ERROR_STREAK = 10
"""Items in a row that could not be run (any cause) before the target counts as broken."""

MAX_LISTED = 5
"""How many claims or strings a failure message lists before summarising the rest."""


class ItemError(Exception):
    """An item could not be run; ``outcome`` is the errored outcome to record."""

    def __init__(self, outcome: ItemOutcome) -> None:
        super().__init__(outcome.error)
        self.outcome = outcome


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _listed(lines: list[str]) -> list[str]:
    if len(lines) <= MAX_LISTED:
        return lines
    return lines[:MAX_LISTED] + [f"… and {len(lines) - MAX_LISTED} more"]


class ItemRunner:
    """Runs dataset items against one target, ingesting each dataset's corpus once.

    Args:
        target: the system under test (``pytest_groundeval.targets.Target``).
        run_id: identifies this run; temporal labels are namespaced with it (SPEC §6).
        mock_tokens: optional callable returning the mock provider's running total of
            prompt + completion tokens; used for ``tokensPerQuery`` when the target
            reports no ``usage`` (SPEC §9).
        diagnose: optional callable explaining a failed call (for a spawned target:
            its exit code and log tail when it has died), or None when it has nothing to add.
        executor: where a sync target's methods run (default: the loop's default executor).
            Size it to the concurrency, or calls queue behind each other.
    """

    def __init__(
        self,
        target: Target,
        *,
        run_id: str | None = None,
        mock_tokens: Callable[[], int] | None = None,
        diagnose: Callable[[TargetError], str | None] | None = None,
        executor: Executor | None = None,
    ) -> None:
        self.target = target
        self.run_id = run_id or uuid.uuid4().hex
        self._mock_tokens = mock_tokens
        self._diagnose = diagnose
        self._executor = executor
        self._ingested: dict[str, asyncio.Future] = {}
        self.models: dict = {"generate": "unknown", "embed": "unknown"}
        """The model lineage of the target, set by whoever knows it (SPEC §3)."""
        self.dispatcher: Any = None
        """The ``dispatch.ItemDispatcher`` feeding this runner, when the plugin runs it."""
        self.stop_reason: str | None = None
        """Set once the target is gone or broken for good (its process died, it refused
        ``UNAVAILABLE_STREAK`` calls in a row, or ``ERROR_STREAK`` items in a row could
        not be run); the plugin then stops the session."""
        self._unavailable_streak = 0
        self._error_streak = 0

    # -- target calls -------------------------------------------------------------

    async def _call(self, name: str, *args: Any) -> Any:
        """Call target method ``name``: its async twin ``a<name>`` if the class defines one, else in a thread."""
        async_method = getattr(type(self.target), "a" + name, None)
        if async_method is not None and inspect.iscoroutinefunction(async_method):
            return await getattr(self.target, "a" + name)(*args)
        method = getattr(self.target, name)
        return await asyncio.get_running_loop().run_in_executor(self._executor, partial(method, *args))

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
            try:
                for doc in dataset.documents.values():
                    await self._call(
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
            done.set_result(None)
        else:
            await asyncio.shield(done)

    # -- dispatch ---------------------------------------------------------------

    def run(self, item: Any, dataset: Dataset) -> ItemOutcome:
        """Blocking ``run_async`` on a fresh event loop (for scripts and tests)."""
        return asyncio.run(self.run_async(item, dataset))

    def run_offline(self, item: Any, dataset: Dataset) -> ItemOutcome:
        """Judge an item that needs no target: a ``review`` item or a citation item with a recorded answer.

        Raises:
            TypeError: the item needs a target.
        """
        if isinstance(item, ReviewItem):
            return self._run_review(item)
        if isinstance(item, CitationItem) and item.response is not None:
            return self._run_citation(item, dataset, None)
        raise TypeError(f"{item.kind} item {item.id} needs a target")

    @staticmethod
    def needs_target(item: Any) -> bool:
        """Whether running ``item`` calls the target (recorded answers do not)."""
        return not isinstance(item, ReviewItem) and not (isinstance(item, CitationItem) and item.response is not None)

    async def run_async(self, item: Any, dataset: Dataset) -> ItemOutcome:
        """Run ``item`` of ``dataset`` and return its judged outcome.

        Raises:
            ItemError: the item could not be run; carries an errored outcome.
        """
        outcome = await self._run_target_item(item, dataset)
        self._unavailable_streak = self._error_streak = 0
        return outcome

    def _note_failure(self, exc: TargetError, death: str | None) -> None:
        """Decide whether the target is gone, or broken, for good (``stop_reason``)."""
        self._error_streak += 1
        if death is not None:
            self.stop_reason = death.splitlines()[0]
        elif isinstance(exc, TargetUnavailable):
            self._unavailable_streak += 1
            if self._unavailable_streak >= UNAVAILABLE_STREAK:
                self.stop_reason = f"the target has refused {self._unavailable_streak} calls in a row: {exc}"
        if self.stop_reason is None and self._error_streak >= ERROR_STREAK:
            self.stop_reason = f"{self._error_streak} items in a row could not be run; the last: {exc}"

    async def _run_target_item(self, item: Any, dataset: Dataset) -> ItemOutcome:
        if not self.needs_target(item):
            return self.run_offline(item, dataset)
        try:
            if isinstance(item, TemporalItem):
                return await self._run_temporal(item)
            await self.ensure_ingested(dataset)
            if isinstance(item, QaItem):
                return await self._run_qa(item, dataset)
            if isinstance(item, AdversarialItem):
                return await self._run_adversarial(item, dataset)
            if isinstance(item, CitationItem):
                response, figures = await self._generate(item)
                return self._run_citation(item, dataset, response, figures)
            raise TypeError(f"unknown item type {type(item).__name__}")
        except TargetError as exc:
            reason = self._diagnose(exc) if self._diagnose else None
            message = f"{exc}\n{reason}" if reason else str(exc)
            self._note_failure(exc, reason)
            raise ItemError(errored_outcome(item, message)) from exc

    # -- generate ---------------------------------------------------------------

    async def _generate(self, item: Any) -> tuple[dict, dict]:
        """Call generate; return (response, figures) with latency and tokens."""
        before = self._mock_tokens() if self._mock_tokens else None
        start = time.perf_counter()
        response = await self._call("generate", item.question, item.find)
        latency_ms = (time.perf_counter() - start) * 1000.0
        _check_generate_shape(response)
        usage = response.get("usage") or {}
        prompt = usage.get("promptTokens")
        completion = usage.get("completionTokens")
        if prompt is None and completion is None and before is not None:
            # The target reports no usage: fall back to what the mock counted (SPEC §9).
            prompt, completion = self._mock_tokens() - before, 0
        figures = {
            "latency_ms": latency_ms,
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "trace_id": response.get("traceId"),
        }
        return response, figures

    def _spans(self, response: dict, dataset: Dataset) -> list[tuple[str, str, str]]:
        """Slice each evidence entry from canonical text: (marker, document, text)."""
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

    # -- qa ---------------------------------------------------------------------

    async def _run_qa(self, item: QaItem, dataset: Dataset) -> ItemOutcome:
        response, figures = await self._generate(item)
        spans = self._spans(response, dataset)
        missing: list[str] = []
        found = 0
        for expected in item.expected_evidence:
            if isinstance(expected, str):
                text, texts = expected, [s[2] for s in spans]
            else:
                text, texts = expected.text, [s[2] for s in spans if s[1] == expected.document]
            if evidence_found(text, texts):
                found += 1
            else:
                missing.append(text)

        supported = supported_true = true_cited = true_cited_supported = 0
        false_supported: list[str] = []
        rejected_true: list[str] = []
        for claim in response["claims"]:
            is_true = claim_is_true(strip_markers(claim["text"]), item.truths)
            is_supported = claim["verdict"] == "supported"
            if is_supported:
                supported += 1
                if is_true:
                    supported_true += 1
                else:
                    truth, cov = best_truth(strip_markers(claim["text"]), item.truths)
                    false_supported.append(
                        f"  {_short(claim['text'])!r}\n    closest truth ({cov:.2f} coverage): "
                        f"{_short(truth) if truth else '(none)'!r}"
                    )
            if is_true and claim["markers"]:
                true_cited += 1
                if is_supported:
                    true_cited_supported += 1
                else:
                    rejected_true.append(f"  {_short(claim['text'])!r} cited {claim['markers']} marked {claim['verdict']}")

        problems = []
        if missing:
            retrieved = [f"  [{m}] {d}: {_short(t, 120)!r}" for m, d, t in spans] or ["  (no evidence)"]
            problems.append(
                f"{len(missing)} of {len(item.expected_evidence)} expected evidence strings not retrieved:\n"
                + "\n".join(_listed([f"  {_short(m)!r}" for m in missing]))
                + "\nretrieved evidence:\n"
                + "\n".join(_listed(retrieved))
            )
        if false_supported:
            problems.append(
                f"{len(false_supported)} claim(s) marked supported are not true by the truths:\n"
                + "\n".join(_listed(false_supported))
            )
        if rejected_true:
            problems.append(
                f"{len(rejected_true)} true, cited claim(s) not marked supported:\n" + "\n".join(_listed(rejected_true))
            )
        review = self._review(item, response["answer"], problems)
        return ItemOutcome(
            id=item.id,
            kind="qa",
            passed=not problems,
            detail="\n".join(problems) or f"{found}/{len(item.expected_evidence)} evidence found; "
            f"{supported_true}/{supported} supported claims true",
            evidence_expected=len(item.expected_evidence),
            evidence_found=found,
            claims_returned=len(response["claims"]),
            claims_supported=supported,
            claims_supported_true=supported_true,
            claims_true_cited=true_cited,
            claims_true_cited_supported=true_cited_supported,
            evidence_review=review,
            **figures,
        )

    # -- adversarial --------------------------------------------------------------

    async def _run_adversarial(self, item: AdversarialItem, dataset: Dataset) -> ItemOutcome:
        response, figures = await self._generate(item)
        falsehood = item.falsehood
        answer = response["answer"]
        window = _falsehood_window(answer, falsehood)
        offending = []
        for claim in response["claims"]:
            if claim["verdict"] != "supported":
                continue
            overlaps_span = window is not None and claim["start"] < window[1] and claim["end"] > window[0]
            if overlaps_span or claim_coverage(strip_markers(claim["text"]), falsehood) >= FALSEHOOD_OVERLAP:
                offending.append(claim)
        problems = []
        if offending:
            problems.append(
                f"planted falsehood was marked supported:\n  falsehood: {_short(falsehood)!r}\n"
                + "\n".join(_listed([f"  supported claim {_short(c['text'])!r} cited {c['markers']}" for c in offending]))
            )
        review = self._review(item, answer, problems)
        return ItemOutcome(
            id=item.id,
            kind="adversarial",
            passed=not problems,
            detail="\n".join(problems) or "planted falsehood was not supported",
            falsehood_supported=bool(offending),
            evidence_review=review,
            **figures,
        )

    # -- temporal -----------------------------------------------------------------

    def _label(self, label: Any, item_id: str) -> Any:
        return namespace_label(label, self.run_id, item_id) if isinstance(label, str) else label

    async def _run_temporal(self, item: TemporalItem) -> ItemOutcome:
        saves: dict[str, dict] = {}
        for step in item.setup:
            body = step.model_dump(mode="json", by_alias=True, exclude={"save"})
            body["label"] = self._label(body.get("label"), item.id)
            body = substitute(body, saves)
            result = await self._call("records", body)
            if not isinstance(result, dict) or "id" not in result or "txStart" not in result:
                raise TargetError(f"records response for step {step.save!r} lacks id/txStart: {result!r}")
            saves[step.save] = result
        probe = item.probe.model_dump(mode="json", by_alias=True, exclude={"call"})
        probe["label"] = self._label(probe.get("label"), item.id)
        probe = substitute(probe, saves)
        if isinstance(item.probe, CompareProbe):
            result = await self._call("compare", probe)
            problems = _check_compare(item.expect, result)
        else:
            result = await self._call("query", probe)
            problems = _check_query(item.expect, result)
        detail = (
            "\n".join(problems)
            + f"\nprobe ({'compare' if isinstance(item.probe, CompareProbe) else 'query'}): {probe}"
            + f"\ntarget returned: {_short(repr(result), 1200)}"
            if problems
            else "probe matched"
        )
        return ItemOutcome(id=item.id, kind="temporal", passed=not problems, detail=detail)

    # -- review and citation ------------------------------------------------------

    def _review(self, item: Any, answer: str, problems: list[str]):
        """Review the item's evidence block against the answer (SPEC §8); a failed review adds a problem."""
        block = getattr(item, "evidence", None)
        if block is None:
            return None
        review = review_answer(block, answer)
        if not review.passed:
            problems.append(_review_problem(review))
        return review

    def _run_review(self, item: ReviewItem) -> ItemOutcome:
        review = review_answer(item.evidence, item.response.answer)
        return ItemOutcome(
            id=item.id,
            kind="review",
            passed=review.passed,
            detail=_review_problem(review) if not review.passed else f"evidence-risk score {review.score:.3f}",
            evidence_review=review,
        )

    def _run_citation(
        self, item: CitationItem, dataset: Dataset, response: dict | None, figures: dict | None = None
    ) -> ItemOutcome:
        from .citation import judge_citation, source_map

        answer = item.response.answer if response is None else response["answer"]
        evidence = None if response is None else response["evidence"]
        outcome = judge_citation(
            item,
            answer=answer,
            sources=source_map(item, evidence),
            mention_regex=dataset.manifest.mention_regex,
        )
        return outcome.model_copy(update=figures or {})


def errored_outcome(item: Any, error: str) -> ItemOutcome:
    """The outcome of an item that could not be run.

    A qa item keeps its expected-evidence count, so its evidence counts as not
    found instead of leaving the recall denominator (errors are never dropped).
    """
    expected = len(item.expected_evidence) if isinstance(item, QaItem) else 0
    return ItemOutcome(id=item.id, kind=item.kind, passed=False, error=error, detail=error, evidence_expected=expected)


def _review_problem(review: Any) -> str:
    lines = [f"evidence-risk score {review.score:.3f} below minScore {review.min_score:.3f}: {review.reason}"]
    for f in review.findings:
        if f.verdict != "pass":
            rewrite = f"\n    suggested rewrite: {f.suggested_rewrite!r}" if f.suggested_rewrite else ""
            lines.append(f"  {f.check} {f.claim_id}: {f.verdict} — {f.reason}{rewrite}")
    return "\n".join(lines)


def _falsehood_window(answer: str, falsehood: str) -> tuple[int, int] | None:
    """Byte span of the falsehood's first appearance in the answer, if it appears verbatim."""
    pos = answer.find(falsehood.strip())
    if pos < 0:
        return None
    start = len(answer[:pos].encode("utf-8"))
    return start, start + len(falsehood.strip().encode("utf-8"))


def _check_generate_shape(response: Any) -> None:
    """Raise TargetError naming the field when a generate response breaks SPEC §3.

    Beyond the field types: each claim's byte span must slice its text from the
    answer (citation markers and white space aside), and each marker a claim cites
    must be the marker of a returned evidence entry.
    """
    if not isinstance(response, dict):
        raise TargetError(f"generate returned {type(response).__name__}, expected a JSON object")
    try:
        check_generate_response(response)
    except ValueError as exc:
        raise TargetError(f"generate returned a malformed response: {exc}") from exc
    answer = response["answer"].encode("utf-8")
    markers = {ev["marker"] for ev in response["evidence"]}
    for i, claim in enumerate(response["claims"]):
        start, end = claim["start"], claim["end"]
        try:
            sliced = answer[start:end].decode("utf-8") if 0 <= start <= end <= len(answer) else None
        except UnicodeDecodeError:
            sliced = None
        if sliced is None or " ".join(strip_markers(sliced).split()) != " ".join(strip_markers(claim["text"]).split()):
            raise TargetError(
                f"generate returned a malformed response: claims[{i}] start/end ({start}, {end}) do not slice "
                f"its text {_short(claim['text'], 80)!r} from the answer (UTF-8 byte offsets, SPEC §3); "
                f"they slice {_short(sliced, 80) if sliced is not None else '(not a valid span)'!r}"
            )
        unknown = [m for m in claim["markers"] if m not in markers]
        if unknown:
            raise TargetError(
                f"generate returned a malformed response: claims[{i}].markers names {unknown}, "
                f"which no evidence entry has (evidence markers: {sorted(markers)})"
            )


def _check_query(expect: Any, result: Any) -> list[str]:
    if not isinstance(result, dict) or not isinstance(result.get("records"), list):
        raise TargetError(f"query response lacks a 'records' list: {_short(repr(result), 300)}")
    records = result["records"]
    problems = []
    if expect.count is not None and len(records) != expect.count:
        problems.append(f"expected {expect.count} record(s), target returned {len(records)}")
    # Each expected record must match a distinct returned record (SPEC §6): greedy is
    # not enough for overlapping subsets, so use a small bipartite matching.
    wanted = [e.properties for e in expect.records]
    have = [r.get("properties") or {} for r in records if isinstance(r, dict)]
    matched = _match_subsets(wanted, have)
    for i in range(len(wanted)):
        if i not in matched:
            problems.append(f"no distinct returned record has properties ⊇ {wanted[i]}")
    return problems


def _match_subsets(wanted: list[dict], have: list[dict]) -> dict[int, int]:
    """Maximum bipartite matching of expected property subsets to returned records."""
    fits = [[j for j, h in enumerate(have) if all(h.get(k) == v for k, v in w.items())] for w in wanted]
    owner: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for j in fits[i]:
            if j in seen:
                continue
            seen.add(j)
            if j not in owner or augment(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in range(len(wanted)):
        augment(i, set())
    return {i: j for j, i in owner.items()}


def _check_compare(expect: Any, result: Any) -> list[str]:
    if not isinstance(result, dict) or not all(isinstance(result.get(k), list) for k in ("added", "removed", "changed")):
        raise TargetError(f"compare response lacks added/removed/changed lists: {_short(repr(result), 300)}")
    problems = []
    for key in ("added", "removed", "changed"):
        want = getattr(expect, key)
        if want is not None and len(result[key]) != want:
            problems.append(f"expected {want} {key}, target returned {len(result[key])}")
    return problems


__all__ = ["ItemError", "ItemRunner", "errored_outcome"]
