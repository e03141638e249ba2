"""Rejudging stored answers (docs/history.md): new judge verdicts without calling the target.

Stored verdicts are never destroyed. ``rejudge_run`` writes a new *judgment
set*: a copy of the run's current set in which the selected paragraphs (those
with no parseable verdict, or with ``all_paragraphs`` every one) get the judge's
new verdict. The new set becomes current only when every paragraph of it has a
parseable verdict (not NULL, not ``unparseable``); then the run's metrics and
gate are recomputed from it and stored. Otherwise it stays an ``incomplete``
attempt: the current set, the run's metrics, gate and PASS/FAIL are untouched,
and the result says how many paragraphs failed and why.

The judge is a callable, so the real LLM judge (docs/citation.md) plugs in
where the tests use a deterministic one::

    def judge(request: JudgeRequest) -> JudgeVerdict | Mapping: ...

A judge may carry ``model`` (and ``scorer_model``, ``prompt_version``), recorded
with the set; else the set records the model its first verdict names. A judge
that raises leaves the paragraph without a verdict in the new set, and is counted.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import case, func, insert, literal, select, update

from ..core.finalize import RunFlags, RunOutcomes, finalize_run
from ..core.gate import GateResult
from ..core.judging import RECORDED_VERDICTS
from . import schema
from .engine import HistoryError
from .queries import recorded_confidence, recorded_floors, recorded_prices
from .records import PARAGRAPHS_KEY, USAGE_COLUMNS, jury_judges, outcome_from_rows
from .store import HistoryStore, now_ms

WRITE_BATCH = 50
"""Judgments per commit and per ``judge_many`` call; a killed rejudge leaves its set incomplete, not current."""

RECALL = "retrievalRecall"


@dataclass(frozen=True)
class JudgeRequest:
    """What a judge sees for one paragraph."""

    run_id: str
    item_id: str
    paragraph: int
    """The paragraph's index in the answer (0-based)."""
    text: str
    """The paragraph text as stored (cut to 300 characters by the citation checks)."""
    markers: list[str]
    """Markers cited, as written inside the brackets."""
    metadata_mismatch: list[str]
    """Deterministic mismatch texts, passed to the judge as a hint (docs/citation.md)."""
    question: str | None
    answer: str | None
    sources: Any
    """The item's stored sources (marker → metadata and text), or None."""
    dataset: str | None = None
    """The run's dataset manifest path as recorded (``config.dataset.path``), to read sources from."""
    trace: Any = None
    """The item's stored compact trace (``evidence`` spans the answer cited), or None."""


@dataclass(frozen=True)
class JudgeVerdict:
    """A judge's answer for one paragraph."""

    verdict: str
    """One of ``core.judging.RECORDED_VERDICTS``."""
    rationale: str
    """Why; never empty."""
    judge_model: str
    """The model (or judge name) that decided."""
    coverage_score: float | None = None
    """Coverage score in [0, 1] when a scorer ran; None keeps the stored one."""
    judges: list[dict[str, Any]] | None = None
    """A jury's verdict: each judge's ``{"judgeModel", "verdict", "rationale", "judgeError"}`` (docs/judges.md,
    "Juries"), stored beside it; None for one judge's verdict."""
    usage: tuple[int, int, int, int] | None = None
    """The judge's tokens for the paragraph, ``(prompt, completion, replies, replies without usage)`` as
    ``core.judging.record_usage`` reads a record (docs/judges.md; a jury's: its judges' summed); None: unknown (stored as NULL)."""


Judge = Callable[[JudgeRequest], "JudgeVerdict | Mapping[str, Any]"]
"""A judge: one paragraph in, one verdict out; raises when it cannot judge.

A judge may also have ``judge_many(requests) -> list[verdict | Exception]`` (one entry
per request, in order): ``rejudge_run`` then hands it each batch at once, so an LLM
judge can ask several paragraphs concurrently."""

Progress = Callable[[int, int], None]
"""Progress callback: ``(done, total)`` after each paragraph."""

Recompute = Callable[[list[dict[str, Any]], Mapping[str, Any], Mapping[str, Any] | None], tuple[dict, dict, dict]]
"""``(outcomes, run config, stored gate) -> (metrics, gate, confidence intervals)``, each a wire dict."""


@dataclass
class RejudgeResult:
    """What ``rejudge_run`` did."""

    run_id: str
    judged: int = 0
    """Selected paragraphs that received a parseable verdict."""
    errors: int = 0
    """Selected paragraphs the judge failed on (no verdict)."""
    unparseable: int = 0
    """Selected paragraphs whose verdict is ``unparseable``."""
    candidates: int = 0
    """Paragraphs selected (missing a parseable verdict, or all)."""
    error_messages: list[str] = field(default_factory=list)
    """The first few failures, ``item#paragraph: message``."""
    set_id: int | None = None
    """The judgment set written; None when nothing was selected (no set written)."""
    paragraphs: int = 0
    """Paragraphs in the new set (selected or carried over from the current set)."""
    failed: int = 0
    """Paragraphs of the new set without a parseable verdict; 0 means complete."""
    judge_model: str | None = None
    """The judge model recorded with the new set."""
    replaced_set: int | None = None
    """The set that was current before; with ``complete``, it is kept but no longer current."""
    metrics: dict[str, Any] | None = None
    """The run's metrics: recomputed from the new set when it became current, else as stored."""
    gate: dict[str, Any] | None = None
    """The run's gate: recomputed when the new set became current, else as stored."""
    confidence: dict[str, Any] | None = None
    """The run's confidence intervals, recomputed when the new set became current (docs/statistics.md)."""

    @property
    def complete(self) -> bool:
        """True when the new set gave every paragraph a parseable verdict and became current (or nothing was asked)."""
        return self.failed == 0

    @property
    def reason(self) -> str:
        """Why the new set is incomplete, in one line; empty when it is complete."""
        if self.complete:
            return ""
        parts = []
        if self.errors:
            parts.append(f"{self.errors} judge error(s)")
        if self.unparseable:
            parts.append(f"{self.unparseable} unparseable verdict(s)")
        carried = self.failed - self.errors - self.unparseable
        if carried > 0:
            parts.append(f"{carried} carried over without a verdict")
        shown = "; ".join(self.error_messages[:3])
        return f"{self.failed} of {self.paragraphs} paragraph(s) got no parseable verdict ({', '.join(parts)})" + (
            f": {shown}" if shown else ""
        )


def _verdict(value: Any, where: str, item: str = "?", paragraph: int = 0) -> JudgeVerdict:
    if isinstance(value, Mapping):
        # The reply's fields as they came (possibly missing or of the wrong type): checked just below.
        fields: dict[str, Any] = {
            "verdict": value.get("verdict"),
            "rationale": value.get("rationale"),
            "judge_model": value.get("judgeModel", value.get("judge_model")),
            "coverage_score": value.get("coverageScore", value.get("coverage_score")),
            "judges": value.get("judges"),
        }
        value = JudgeVerdict(**fields)
    if not isinstance(value, JudgeVerdict):
        raise HistoryError(f"{where}: the judge returned {type(value).__name__}, expected a JudgeVerdict")
    if value.verdict not in RECORDED_VERDICTS:
        raise HistoryError(
            f"{where}: the judge returned verdict {value.verdict!r}; expected one of {', '.join(RECORDED_VERDICTS)}"
        )
    if not isinstance(value.rationale, str) or not value.rationale.strip():
        raise HistoryError(f"{where}: the judge returned no rationale")
    if not isinstance(value.judge_model, str) or not value.judge_model:
        raise HistoryError(f"{where}: the judge did not name its model")
    score = value.coverage_score
    if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 1):
        raise HistoryError(f"{where}: coverage score {score!r} is not a number in [0, 1]")
    judges = jury_judges(item, f"paragraph {paragraph}.judges", value.judges)
    return value if judges == value.judges else replace(value, judges=judges)


def rejudge_run(
    store: HistoryStore,
    ref: str,
    judge: Judge,
    *,
    all_paragraphs: bool = False,
    progress: Progress | None = None,
    recompute: Recompute | None = None,
) -> RejudgeResult:
    """Judge a run's stored paragraphs into a new judgment set; make it current only when complete.

    Args:
        ref: A run reference (full id, unique prefix, ``latest``, ``latest~N``).
        judge: Called once per selected paragraph, in (item, paragraph) order.
        all_paragraphs: Judge every paragraph again, not only those without a parseable verdict.
        progress: Called with ``(done, total)`` after each paragraph.
        recompute: Metrics, gate and intervals from outcomes (``Recompute``); default ``default_recompute``.

    Returns:
        Counts, the set written and, when it became current, the recomputed metrics and
        gate (else the run's stored ones). ``result.complete`` is False when some
        paragraph got no parseable verdict: the set is then kept as an incomplete
        attempt and nothing current is replaced.

    Raises:
        HistoryError: ``ref`` names no run, the run has no finish time (its metrics
            would describe part of a run) or no current judgment set, ran its items more
            than once (``--eval-repeat``: paragraphs are stored per attempt), or the judge
            returned an invalid verdict.
    """
    run_id = store.resolve_run(ref)
    runs, items, j, sets = schema.runs, schema.items, schema.judgments, schema.judgment_sets
    with store.engine.connect() as conn:
        run = conn.execute(select(runs.c.finished_ms, runs.c.config, runs.c.gate, runs.c.metrics, runs.c.dataset_path)
                           .where(runs.c.id == run_id)).one()  # fmt: skip
        if run.finished_ms is None:
            raise HistoryError(
                f"run {run_id[:12]} has no finish time (killed or still running): rejudging would store metrics "
                "for part of a run"
            )
        repeat = ((run.config or {}).get("options") or {}).get("repeat") or 1
        if repeat > 1:
            raise HistoryError(
                f"run {run_id[:12]} ran each item {repeat} times (--eval-repeat): its paragraphs are stored per "
                "attempt, and rejudging attempts is not supported; run the items again with the judge instead"
            )
        current = conn.execute(select(sets.c.id).where(sets.c.run_id == run_id, sets.c.is_current.is_(True))).scalar()
        if current is None:
            raise HistoryError(f"run {run_id[:12]} has no current judgment set (docs/history.md)")
        query = (
            select(j.c.id, j.c.item, j.c.paragraph, j.c.text, j.c.markers, j.c.metadata_mismatch, items.c.item_id,
                   items.c.question, items.c.answer, items.c.sources, items.c.trace)
            .join(items, items.c.id == j.c.item)
            .where(j.c.set_id == current)
            .order_by(j.c.item, j.c.paragraph)
        )  # fmt: skip
        if not all_paragraphs:
            query = query.where(j.c.verdict.is_(None) | (j.c.verdict == "unparseable"))
        selected = conn.execute(query).all()
    result = RejudgeResult(run_id=run_id, candidates=len(selected), replaced_set=current,
                           metrics=run.metrics, gate=run.gate)  # fmt: skip
    if not selected:
        return result
    result.judge_model = getattr(judge, "model", None)
    new_set = _open_set(store, run_id, current, judge)
    result.set_id = new_set
    pending: list[dict[str, Any]] = []
    requests = [
        JudgeRequest(
            run_id=run_id,
            item_id=row.item_id,
            paragraph=row.paragraph,
            text=row.text,
            markers=list(row.markers or []),
            metadata_mismatch=list(row.metadata_mismatch or []),
            question=row.question,
            answer=row.answer,
            sources=row.sources,
            dataset=run.dataset_path,
            trace=row.trace,
        )
        for row in selected
    ]
    many = getattr(judge, "judge_many", None)

    def answers(start: int) -> list[Any]:
        chunk = requests[start : start + WRITE_BATCH]
        if many is not None:
            return list(many(chunk))
        out: list[Any] = []
        for request in chunk:
            try:
                out.append(judge(request))
            except Exception as exc:  # noqa: BLE001 - any judge failure leaves the paragraph unjudged, counted
                out.append(exc)
        return out

    batch: list[Any] = []
    for done, row in enumerate(selected, 1):
        where = f"item {row.item_id!r} paragraph {row.paragraph}"
        if (done - 1) % WRITE_BATCH == 0:
            batch = answers(done - 1)
        raw = batch[(done - 1) % WRITE_BATCH]
        key = {"item": row.item, "paragraph": row.paragraph}
        if isinstance(raw, Exception):
            result.errors += 1
            if len(result.error_messages) < 5:
                result.error_messages.append(f"{row.item_id}#{row.paragraph}: {raw}")
            # In the new set only: the current set keeps its verdict.
            pending.append({**key, "verdict": None, "rationale": None, "judge_model": None, "judged_ms": None,
                            "keep_score": True, "coverage_score": None, "judges": None,
                            "usage": None})  # fmt: skip
        else:
            verdict = _verdict(raw, where, row.item_id, row.paragraph)
            if verdict.verdict == "unparseable":
                result.unparseable += 1
                if len(result.error_messages) < 5:
                    result.error_messages.append(f"{row.item_id}#{row.paragraph}: unparseable: {verdict.rationale}")
            else:
                result.judged += 1
            result.judge_model = result.judge_model or verdict.judge_model
            pending.append(
                {
                    **key,
                    "verdict": verdict.verdict,
                    "rationale": verdict.rationale,
                    "judge_model": verdict.judge_model,
                    "judged_ms": now_ms(),
                    "keep_score": verdict.coverage_score is None,
                    "coverage_score": verdict.coverage_score,
                    "judges": verdict.judges,
                    "usage": verdict.usage,
                }
            )
        if len(pending) >= WRITE_BATCH:
            _write(store, new_set, pending)
            pending = []
        if progress is not None:
            progress(done, len(selected))
    _write(store, new_set, pending)
    with store.engine.connect() as conn:
        failed = case((j.c.verdict.is_(None) | (j.c.verdict == "unparseable"), 1), else_=0)
        total, bad = conn.execute(
            select(func.count(), func.coalesce(func.sum(failed), 0)).where(j.c.set_id == new_set)
        ).one()
    result.paragraphs, result.failed = int(total), int(bad)
    if result.complete:
        metrics, gate, confidence = _make_current(store, run_id, new_set, result, run.config or {}, run.gate,
                                                  recompute or default_recompute)  # fmt: skip
        result.metrics, result.gate, result.confidence = metrics, gate, confidence
    else:
        with store.write() as conn:
            conn.execute(update(sets).where(sets.c.id == new_set).values(
                status=schema.SET_INCOMPLETE, paragraphs=result.paragraphs, failed=result.failed,
                reason=result.reason, judge_model=result.judge_model))  # fmt: skip
    return result


def _open_set(store: HistoryStore, run_id: str, current: int, judge: Any) -> int:
    """A new, not current, incomplete judgment set: a copy of the current set's paragraphs and verdicts."""
    sets, j = schema.judgment_sets, schema.judgments
    copied = [c.name for c in j.columns if c.name not in ("id", "set_id")]
    with store.write() as conn:
        new_set: int = conn.execute(
            insert(sets).returning(sets.c.id).values(
                run_id=run_id, origin=schema.ORIGIN_REJUDGE, judge_model=getattr(judge, "model", None),
                scorer_model=getattr(judge, "scorer_model", None),
                prompt_version=getattr(judge, "prompt_version", None),
                created_ms=now_ms(), status=schema.SET_INCOMPLETE, is_current=False, paragraphs=0, failed=0,
                reason="being judged (a rejudge that stopped here never finished)",
            )
        ).scalar_one()  # fmt: skip
        conn.execute(
            insert(j).from_select(
                ["set_id", *copied],
                select(literal(new_set), *(j.c[name] for name in copied)).where(j.c.set_id == current),
            )
        )
    return new_set


def _write(store: HistoryStore, set_id: int, pending: Sequence[dict[str, Any]]) -> None:
    if not pending:
        return
    j = schema.judgments
    with store.write() as conn:
        for entry in pending:
            # A new verdict replaces the judges of the copied one too (None: one judge's, or no verdict).
            values = {k: entry[k] for k in ("verdict", "rationale", "judge_model", "judged_ms", "judges")}
            # The new verdict's tokens replace the copied ones (NULL when unknown): never the old judge's.
            values.update(zip(USAGE_COLUMNS, entry["usage"] or (None,) * len(USAGE_COLUMNS)))
            if not entry["keep_score"]:
                values["coverage_score"] = entry["coverage_score"]
            conn.execute(
                update(j)
                .where(j.c.set_id == set_id, j.c.item == entry["item"], j.c.paragraph == entry["paragraph"])
                .values(**values)
            )


def judge_figures(paragraphs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The judge's ``extra`` figures of one citation item from its paragraph judgments.

    Returns ``citationParagraphsSupported``, ``citationParagraphsWrongSpeaker``,
    ``citationParagraphsUnparseable``, ``citationJudgeErrors`` (paragraphs with no
    verdict: counted, not supported) and ``citationCoverageScores`` (one per
    paragraph, None where unscored), as a pytest run's judge sets them (docs/citation.md).
    """
    verdicts = [p.get("verdict") for p in paragraphs]
    return {
        "citationParagraphsSupported": sum(1 for v in verdicts if v == "supported"),
        "citationParagraphsWrongSpeaker": sum(1 for v in verdicts if v == "wrong_speaker"),
        "citationParagraphsUnparseable": sum(1 for v in verdicts if v == "unparseable"),
        "citationJudgeErrors": sum(1 for v in verdicts if v is None),
        "citationCoverageScores": [p.get("coverageScore") for p in paragraphs],
    }


def default_recompute(
    outcomes: list[dict[str, Any]], config: Mapping[str, Any], stored_gate: Mapping[str, Any] | None
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Metrics, gate and confidence intervals (``core.finalize.finalize_run`` with the run's recorded
    floors, confidence level and ``gateOn``).

    Rejudging cannot change retrieval recall, and the baseline the run was gated
    against is not in the history, so the stored ``retrievalRecall`` checks (floor and
    baseline) and any ``run`` (interrupted) check are kept as they were.
    """
    recorded = config.get("dataset")
    dataset: Mapping[str, Any] = recorded if isinstance(recorded, Mapping) else {}
    level, gate_on = recorded_confidence(config, "being rejudged")
    end = finalize_run(
        RunOutcomes.of(outcomes),
        floors=recorded_floors(config, "being rejudged"),
        confidence_level=level,
        gate_on=gate_on,
        dataset_version=str(dataset.get("version", "unknown")),
        models=config.get("models") or {},
        # The flags add no check: the stored run's interrupted (``run``) check is kept below, as stored.
        flags=RunFlags(not_run_check=False),
        # The prices the run recorded (docs/gate.md, "Cost"): a rejudged set's judge tokens are priced alike.
        prices=recorded_prices(config),
    )
    metrics, fresh = end.metrics, end.gate.to_wire()
    checks = fresh["checks"]
    if stored_gate is not None:
        stored_checks = [c for c in stored_gate.get("checks", []) if isinstance(c, Mapping)]
        kept_recall = [dict(c) for c in stored_checks if c.get("metric") == RECALL]
        checks = [dict(c) for c in stored_checks if c.get("metric") == "run"]
        recall_at = None
        for check in fresh["checks"]:
            if check["metric"] == RECALL:
                recall_at = len(checks) if recall_at is None else recall_at
                continue
            checks.append(check)
        at = len([c for c in checks if c["metric"] == "run"]) if recall_at is None else recall_at
        checks[at:at] = kept_recall
    gate = GateResult.model_validate(
        {"passed": all(c["outcome"] != "FAIL" for c in checks), "checks": checks, "gateOn": gate_on}
    )
    confidence = {name: None if i is None else i.to_wire() for name, i in end.confidence.items()}
    return metrics.to_wire(), gate.to_wire(), confidence


def _make_current(
    store: HistoryStore,
    run_id: str,
    new_set: int,
    result: RejudgeResult,
    config: Mapping[str, Any],
    stored_gate: Any,
    recompute: Recompute,
) -> tuple[dict, dict, dict]:
    """Recompute the run's figures from the complete set ``new_set`` and make it current, in one transaction:
    metrics, gate and confidence intervals (at the level the run recorded)."""
    items, j, runs, sets = schema.items, schema.judgments, schema.runs, schema.judgment_sets
    with store.engine.connect() as conn:
        rows = conn.execute(select(items.c.id, items.c.kind, items.c.outcome).where(items.c.run_id == run_id)).all()
        by_item: dict[int, list[dict[str, Any]]] = {}
        for jr in conn.execute(select(j).where(j.c.set_id == new_set)).mappings():
            by_item.setdefault(jr["item"], []).append(dict(jr))
    outcomes, updates = [], []
    for row in rows:
        outcome = dict(row.outcome)
        paragraphs = by_item.get(row.id)
        if paragraphs:
            rebuilt = outcome_from_rows(outcome, paragraphs)
            figures = judge_figures(rebuilt["extra"][PARAGRAPHS_KEY])
            outcome["extra"] = {**(outcome.get("extra") or {}), **figures}
            rebuilt["extra"].update(figures)
            updates.append({"key": row.id, "outcome": outcome})
            outcomes.append(rebuilt)
        else:
            outcomes.append(outcome)
    metrics, gate, confidence = recompute(outcomes, config, stored_gate)
    with store.write() as conn:
        for entry in updates:
            conn.execute(update(items).where(items.c.id == entry["key"]).values(outcome=entry["outcome"]))
        conn.execute(
            update(runs)
            .where(runs.c.id == run_id)
            .values(metrics=metrics, gate=gate, gate_passed=bool(gate["passed"]), confidence=confidence)
        )
        # Every current set of the run first (the one this rejudge copied, or one a concurrent rejudge made
        # current since):
        # at most one set of a run is current, and a unique index says so.
        conn.execute(update(sets).where(sets.c.run_id == run_id, sets.c.is_current.is_(True)).values(is_current=False))
        conn.execute(update(sets).where(sets.c.id == new_set).values(
            is_current=True, status=schema.SET_COMPLETE, paragraphs=result.paragraphs, failed=0, reason=None,
            judge_model=result.judge_model, metrics=metrics, gate=gate, confidence=confidence))  # fmt: skip
    return metrics, gate, confidence


def tty_progress(stream: Any) -> Progress:
    """A one-line progress bar on ``stream`` (redrawn at most 10 times a second)."""
    last = [0.0]

    def show(done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - last[0] < 0.1:
            return
        last[0] = now
        width = 30
        filled = width * done // total if total else width
        stream.write(f"\rrejudge [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        if done == total:
            stream.write("\n")
        stream.flush()

    return show
