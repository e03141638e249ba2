"""Reading the history (docs/history.md): list runs, show one, group its items, compare two.

Every function takes a ``HistoryStore`` and returns plain dataclasses; the
``groundeval history`` command (``cli.py``) formats them. Run arguments are
references (full id, unique prefix, ``latest``, ``latest~N``) resolved with
``HistoryStore.resolve_run``.

The *bad-answer rate* of a group is the share of its items with an
``unsupported`` or ``wrong_speaker`` judgment or a failed check (an item that
did not pass, errored items included: errors stay in every denominator).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from sqlalchemy import func, select

from ..core.compare import Candidate, fixed_regressions, judge, numeric_metrics
from ..core.confidence import GateOn, RecordedSettingError
from ..core.confidence import recorded_confidence as shared_recorded_confidence
from ..core.cost import PricesError, check_prices
from ..core.floors import FloorsError
from ..core.gate import DEFAULT_FLOORS, parse_floors, same_lineage
from ..core.judging import RECORDED_VERDICTS, UNJUDGED, JudgeVerdict
from ..core.metrics import METRIC_DIRECTIONS, percentile
from ..core.outcome import ItemOutcome
from ..core.paired import MetricTest, Pairing, PairingError, compare_metrics, pair_runs
from ..core.significance import DEFAULT_ALPHA
from . import schema
from .engine import HistoryError
from .records import outcome_from_rows
from .store import HistoryStore, current_set_id

GroupBy = Literal["tool", "kind", "tag"]
"""What ``group_items`` groups by."""

GROUPS: tuple[GroupBy, ...] = ("tool", "kind", "tag")
NO_TOOL = "(no tool)"
"""The group of items whose target reported no tool call."""
UNTAGGED = "(untagged)"
"""The group of items without tags."""
BAD_VERDICTS: tuple[JudgeVerdict, ...] = ("unsupported", "wrong_speaker")
"""Judge verdicts that make an answer bad in the group analysis (docs/history.md)."""


@dataclass
class RunRow:
    """One run as listed: identity, label, dataset, times, size and gate."""

    id: str
    label: str | None
    dataset_path: str | None
    dataset_version: str | None
    started_ms: int
    finished_ms: int | None
    interrupted: bool | None
    gate_passed: bool | None
    items: int
    gated: bool = True
    """False for a run measured without gating (``--eval-no-gate``: its gate records ``"gated": false``)."""

    @property
    def status(self) -> str:
        """``PASS``/``FAIL`` for a gated run, ``NOT GATED`` for a passing run measured with
        ``--eval-no-gate``, ``unfinished`` with no finish time, ``interrupted``, ``no gate``."""
        if self.finished_ms is None:
            return "unfinished"
        if self.interrupted:
            return "interrupted"
        if self.gate_passed is None:
            return "no gate"
        if self.gate_passed and not self.gated:
            return "NOT GATED"
        return "PASS" if self.gate_passed else "FAIL"


@dataclass
class JudgmentSetRow:
    """One judgment set of a run (docs/history.md, "Judgment sets")."""

    id: int
    origin: str
    """``run`` (recorded by the run) or ``rejudge``."""
    judge_model: str | None
    scorer_model: str | None
    prompt_version: str | None
    created_ms: int
    status: str
    """``complete`` (every paragraph has a parseable verdict) or ``incomplete``."""
    is_current: bool
    paragraphs: int
    failed: int
    """Paragraphs without a parseable verdict."""
    reason: str | None
    """Why the set is incomplete."""


def judgment_sets(store: HistoryStore, run_id: str) -> list[JudgmentSetRow]:
    """A run's judgment sets, oldest first."""
    sets = schema.judgment_sets
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(sets.c.id, sets.c.origin, sets.c.judge_model, sets.c.scorer_model, sets.c.prompt_version,
                   sets.c.created_ms, sets.c.status, sets.c.is_current, sets.c.paragraphs, sets.c.failed,
                   sets.c.reason)
            .where(sets.c.run_id == run_id)
            .order_by(sets.c.id)
        ).all()  # fmt: skip
    return [JudgmentSetRow(*row[:7], bool(row.is_current), *row[8:]) for row in rows]


@dataclass
class RunDetail:
    """One run's figures (``history show``)."""

    run: RunRow
    config: dict[str, Any]
    metrics: dict[str, Any] | None
    gate: dict[str, Any] | None
    passed: int
    failed: int
    errors: list[tuple[str, str, str]]
    """``(item id, kind, error)`` of every item that could not be run."""
    verdicts: dict[str, int]
    """Judge verdict → paragraphs, every verdict present (0 when none) plus ``unjudged``."""
    mismatched_paragraphs: int
    """Paragraphs failing a deterministic check (metadata mismatch or unknown marker)."""
    latency_ms_p50: float | None
    latency_ms_p95: float | None
    judgment_sets: list[JudgmentSetRow] = field(default_factory=list)
    """Every judgment set of the run, oldest first; verdicts and figures are the current one's."""
    confidence: dict[str, Any] | None = None
    """The run's confidence intervals (``Report.confidence`` wire JSON); None for a run recorded before them."""

    @property
    def current_set(self) -> JudgmentSetRow | None:
        """The current judgment set (its judge model is the one the verdicts and metrics come from)."""
        return next((s for s in self.judgment_sets if s.is_current), None)


@dataclass
class GroupRow:
    """One group of ``group_items``: its size, bad answers and percentiles."""

    group: str
    items: int
    bad: int
    errors: int
    latency_ms_p50: float | None
    latency_ms_p95: float | None
    iterations_p50: float | None
    iterations_p95: float | None

    @property
    def bad_rate(self) -> float:
        """``bad / items`` (a group always has at least one item)."""
        return self.bad / self.items


@dataclass
class MetricDelta:
    """One metric of two runs: A's value, B's, and B − A (None when either is missing)."""

    name: str
    a: float | None
    b: float | None

    @property
    def delta(self) -> float | None:
        """B − A, or None."""
        return None if self.a is None or self.b is None else self.b - self.a


@dataclass
class Flip:
    """An item whose pass/fail changed between run A and run B."""

    item_id: str
    kind: str
    tags: list[str]


@dataclass
class Comparison:
    """``history compare A B``: metrics side by side, verdicts, flips, the paired tests and the regression verdict
    (docs/statistics.md, "Paired comparison")."""

    a: RunRow
    b: RunRow
    metrics: list[MetricDelta]
    verdicts_a: dict[str, int]
    verdicts_b: dict[str, int]
    pass_to_fail: list[Flip]
    fail_to_pass: list[Flip]
    only_in_a: int
    only_in_b: int
    regressions: list[str] = field(default_factory=list)
    """Plain-language reasons B regresses: drops beyond the margin that are significant (or that the paired
    test could not judge, as each reason says); empty when it does not."""
    not_regressions: list[str] = field(default_factory=list)
    """Drops beyond the margin the paired test did not find significant."""
    pairing: Pairing | None = None
    """The runs' items paired on ids: the ids only one run holds, the flips."""
    tests: dict[str, MetricTest] | None = None
    """Each metric compared over the paired items (``core.paired.compare_metrics``); None when nothing was paired."""
    alpha: float = DEFAULT_ALPHA
    """The significance level the drops were judged at."""

    @property
    def regressed(self) -> bool:
        """True when B regresses (``history compare`` exits 1)."""
        return bool(self.regressions)

    def flips_by(self, what: Literal["kind", "tag"], flips: Iterable[Flip]) -> dict[str, int]:
        """Flip counts per kind or per tag (an item counts once per tag; untagged items under ``(untagged)``)."""
        counts: Counter[str] = Counter()
        for flip in flips:
            if what == "kind":
                counts[flip.kind] += 1
            else:
                counts.update(flip.tags or [UNTAGGED])
        return dict(sorted(counts.items()))


# --- list and show ----------------------------------------------------------------------------


def _run_rows(store: HistoryStore, where: Any = None, limit: int | None = None) -> list[RunRow]:
    runs, items = schema.runs, schema.items
    counts = select(items.c.run_id, func.count().label("n")).group_by(items.c.run_id).subquery()
    query = (
        select(
            runs.c.id,
            runs.c.label,
            runs.c.dataset_path,
            runs.c.dataset_version,
            runs.c.started_ms,
            runs.c.finished_ms,
            runs.c.interrupted,
            runs.c.gate_passed,
            func.coalesce(counts.c.n, 0),
            runs.c.gate,
        )
        .outerjoin(counts, counts.c.run_id == runs.c.id)
        .order_by(runs.c.started_ms.desc(), runs.c.id.desc())
    )
    if where is not None:
        query = query.where(*where)
    if limit is not None:
        query = query.limit(limit)
    with store.engine.connect() as conn:
        return [
            RunRow(
                run_id,
                label,
                path,
                version,
                started,
                finished,
                interrupted,
                passed,
                n,
                gated=not (isinstance(gate, dict) and gate.get("gated") is False),
            )
            for run_id, label, path, version, started, finished, interrupted, passed, n, gate in conn.execute(query)
        ]


def list_runs(
    store: HistoryStore, *, label: str | None = None, dataset: str | None = None, limit: int | None = 20
) -> list[RunRow]:
    """Runs, newest first.

    Args:
        label: Only runs with exactly this label.
        dataset: Only runs whose dataset version or dataset path equals this.
        limit: At most this many (None: all).
    """
    runs = schema.runs
    where = []
    if label is not None:
        where.append(runs.c.label == label)
    if dataset is not None:
        where.append((runs.c.dataset_version == dataset) | (runs.c.dataset_path == dataset))
    return _run_rows(store, where or None, limit)


def _run_row(store: HistoryStore, run_id: str) -> RunRow:
    rows = _run_rows(store, [schema.runs.c.id == run_id])
    if not rows:
        raise HistoryError(f"run {run_id} is not in the history")
    return rows[0]


def verdict_counts(store: HistoryStore, run_id: str) -> dict[str, int]:
    """Paragraphs per judge verdict in a run's current judgment set: every verdict of ``RECORDED_VERDICTS`` (0 when
    absent) and ``unjudged``."""
    j = schema.judgments
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(j.c.verdict, func.count()).where(j.c.set_id == current_set_id(run_id)).group_by(j.c.verdict)
        ).all()
    counts = dict.fromkeys([*RECORDED_VERDICTS, UNJUDGED], 0)
    for verdict, n in rows:
        counts[verdict or UNJUDGED] = counts.get(verdict or UNJUDGED, 0) + n
    return counts


def show_run(store: HistoryStore, ref: str) -> RunDetail:
    """One run's label, config, metrics, gate, pass/fail counts, errors, verdicts and latency percentiles.

    Latency percentiles are computed from the stored items (linear interpolation,
    as the metrics do), so an unfinished run has them too.

    Raises:
        HistoryError: ``ref`` names no run or is ambiguous.
    """
    run_id = store.resolve_run(ref)
    runs, items, j = schema.runs, schema.items, schema.judgments
    with store.engine.connect() as conn:
        config, metrics, gate, confidence = conn.execute(
            select(runs.c.config, runs.c.metrics, runs.c.gate, runs.c.confidence).where(runs.c.id == run_id)
        ).one()
        rows = conn.execute(
            select(items.c.item_id, items.c.kind, items.c.passed, items.c.error, items.c.latency_ms)
            .where(items.c.run_id == run_id)
            .order_by(items.c.id)
        ).all()
        mismatched = conn.execute(
            select(func.count()).where(j.c.set_id == current_set_id(run_id), j.c.deterministic_pass.is_(False))
        ).scalar()
    latencies = sorted(r.latency_ms for r in rows if r.latency_ms is not None)
    return RunDetail(
        run=_run_row(store, run_id),
        config=config,
        metrics=metrics,
        gate=gate,
        passed=sum(1 for r in rows if r.passed),
        failed=sum(1 for r in rows if not r.passed and r.error is None),
        errors=[(r.item_id, r.kind, r.error) for r in rows if r.error is not None],
        verdicts=verdict_counts(store, run_id),
        mismatched_paragraphs=int(mismatched or 0),
        latency_ms_p50=percentile(latencies, 50),
        latency_ms_p95=percentile(latencies, 95),
        judgment_sets=judgment_sets(store, run_id),
        confidence=confidence,
    )


# --- group-by analysis ------------------------------------------------------------------------


def bad_item_keys(store: HistoryStore, run_id: str) -> set[int]:
    """Row keys of the run's items with an ``unsupported`` or ``wrong_speaker`` judgment in its current set."""
    j = schema.judgments
    with store.engine.connect() as conn:
        return set(
            conn.execute(
                select(j.c.item).where(j.c.set_id == current_set_id(run_id), j.c.verdict.in_(BAD_VERDICTS)).distinct()
            ).scalars()
        )


def group_items(store: HistoryStore, ref: str, by: GroupBy) -> list[GroupRow]:
    """Items of a run grouped by tool, kind or tag, worst bad-answer rate first.

    An item is in every group of a tool it called (counted once per tool) or tag it
    carries; items with no tool trace form ``(no tool)``, untagged items ``(untagged)``.
    Percentiles use linear interpolation between ranks over the group's items that
    have the figure (None when none has).

    Raises:
        HistoryError: ``by`` is not tool/kind/tag, or ``ref`` names no run.
    """
    if by not in GROUPS:
        raise HistoryError(f"cannot group by {by!r}: expected one of {', '.join(GROUPS)}")
    run_id = store.resolve_run(ref)
    items = schema.items
    bad = bad_item_keys(store, run_id)
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(
                items.c.id, items.c.kind, items.c.passed, items.c.error, items.c.latency_ms, items.c.iterations
            ).where(items.c.run_id == run_id)
        ).all()
        membership: dict[int, list[str]] = defaultdict(list)
        if by == "tag":
            t = schema.item_tags
            for key, tag in conn.execute(select(t.c.item, t.c.tag).where(t.c.run_id == run_id)):
                membership[key].append(tag)
        elif by == "tool":
            tc = schema.tool_calls
            for key, tool in conn.execute(select(tc.c.item, tc.c.tool).where(tc.c.run_id == run_id).distinct()):
                membership[key].append(tool)
    groups: dict[str, list[Any]] = defaultdict(list)
    for row in rows:
        if by == "kind":
            names = [row.kind]
        else:
            names = membership.get(row.id) or [NO_TOOL if by == "tool" else UNTAGGED]
        for name in names:
            groups[name].append(row)
    result = []
    for name, members in groups.items():
        latencies = sorted(m.latency_ms for m in members if m.latency_ms is not None)
        iterations = sorted(float(m.iterations) for m in members if m.iterations is not None)
        result.append(
            GroupRow(
                group=name,
                items=len(members),
                bad=sum(1 for m in members if not m.passed or m.id in bad),
                errors=sum(1 for m in members if m.error is not None),
                latency_ms_p50=percentile(latencies, 50),
                latency_ms_p95=percentile(latencies, 95),
                iterations_p50=percentile(iterations, 50),
                iterations_p95=percentile(iterations, 95),
            )
        )
    return sorted(result, key=lambda g: (-g.bad_rate, -g.items, g.group))


# --- compare ----------------------------------------------------------------------------------


def stored_outcomes(store: HistoryStore, run_id: str) -> list[dict[str, Any]]:
    """The item outcomes (wire dicts) a run recorded, in recording order, the paragraphs of its current
    judgment set put back."""
    items, j = schema.items, schema.judgments
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(items.c.id, items.c.outcome).where(items.c.run_id == run_id).order_by(items.c.id)
        ).all()
        by_item: dict[int, list[dict[str, Any]]] = {}
        for row in conn.execute(select(j).where(j.c.set_id == current_set_id(run_id))).mappings():
            by_item.setdefault(row["item"], []).append(dict(row))
    return [outcome_from_rows(dict(row.outcome), by_item.get(row.id, [])) for row in rows]


def _pass_map(store: HistoryStore, run_id: str) -> dict[str, tuple[bool, str, list[str]]]:
    items = schema.items
    with store.engine.connect() as conn:
        rows = conn.execute(
            select(items.c.item_id, items.c.passed, items.c.kind, items.c.tags).where(items.c.run_id == run_id)
        ).all()
    return {r.item_id: (bool(r.passed), r.kind, list(r.tags or [])) for r in rows}


def _metric_order() -> list[str]:
    return [*METRIC_DIRECTIONS, "items"]


def _run_flags(b: RunRow) -> list[Candidate]:
    if b.finished_ms is None:
        return [Candidate(None, f"run B {b.id[:12]} has no finish time: it was killed or is still running")]
    if b.interrupted:
        return [Candidate(None, f"run B {b.id[:12]} was interrupted: its metrics cover only part of the selection")]
    return []


def regressions(
    a: RunRow,
    b: RunRow,
    a_metrics: Mapping[str, Any] | None,
    b_metrics: Mapping[str, Any] | None,
    floors: Mapping[str, float | None],
    a_config: Mapping[str, Any] | None = None,
    b_config: Mapping[str, Any] | None = None,
) -> list[str]:
    """Run B's drops beyond the margin relative to run A, by the fixed rule alone (docs/history.md, "compare").

    ``compare_runs`` then judges each by the paired test (``core.compare.judge``). B is flagged when:

    * it has no finish time, or was interrupted: its figures cover part of a run;
    * a bounded metric of B fails its floor or ceiling while A's met it, was not
      measured, or was better (equal failures are the floors' business, not a regression);
    * with the same dataset version and model lineage, B's ``retrievalRecall`` is below
      A's minus ``retrievalRecallMargin`` (A acts as the baseline, as in the gate).

    Args:
        floors: Complete bounds (``gate.parse_floors`` output), metric → bound.
    """
    flags = _run_flags(b)
    if flags:
        return [flag.reason for flag in flags]
    return [c.reason for c in fixed_regressions(a_metrics, b_metrics, floors, _comparable(a, b, a_config, b_config))]


def _comparable(a: RunRow, b: RunRow, a_config: Mapping[str, Any] | None, b_config: Mapping[str, Any] | None) -> bool:
    return (
        a.dataset_version == b.dataset_version
        and a_config is not None
        and b_config is not None
        and same_lineage(a_config.get("models"), b_config.get("models"))
    )


def recorded_floors(config: Mapping[str, Any] | None, run_id: str) -> dict[str, float]:
    """The complete floors a run recorded (``config.floors``), checked; the default floors when it recorded none.

    Recorded floors are the bounds the gate applied (defaults merged in, disabled ones
    absent), so they are used as they are, not merged over the defaults again.

    Raises:
        HistoryError: A recorded bound is invalid (unknown metric, value out of range).
    """
    recorded = (config or {}).get("floors")
    if not isinstance(recorded, Mapping):
        return dict(DEFAULT_FLOORS)
    try:
        parse_floors(recorded, f"floors recorded by run {run_id[:12]}")
    except FloorsError as exc:
        raise HistoryError(str(exc)) from exc
    return {name: float(value) for name, value in recorded.items() if value is not None}


def _outcomes(store: HistoryStore, run_id: str) -> list[ItemOutcome]:
    try:
        return [ItemOutcome.model_validate(o) for o in stored_outcomes(store, run_id)]
    except ValueError as exc:
        raise HistoryError(f"run {run_id[:12]} holds an item that is not a valid outcome: {exc}") from None


def recorded_confidence(config: Mapping[str, Any] | None, run_id: str) -> tuple[float, GateOn]:
    """The confidence level and ``gateOn`` a run recorded (``config.confidenceLevel``, ``config.gateOn``);
    the defaults (0.95, ``point``) for a run recorded before they were (``core.confidence.recorded_confidence``).

    Raises:
        HistoryError: A recorded value is not a level in (0, 1) or not one of ``GATE_ON``.
    """
    try:
        return shared_recorded_confidence(config)
    except RecordedSettingError as exc:
        separator = "," if exc.key == "gateOn" else ":"
        raise HistoryError(f"run {run_id[:12]} recorded {exc.key} {exc.value!r}{separator} {exc.problem}") from exc


def recorded_prices(config: Mapping[str, Any]) -> dict[str, dict[str, float]] | None:
    """The prices a stored run recorded (``config.prices``), checked; None when it recorded none.

    Raises:
        HistoryError: the recorded prices are invalid (naming the model and field).
    """
    prices = config.get("prices")
    if prices is None:
        return None
    try:
        return check_prices(prices, "the run's recorded prices")
    except PricesError as exc:
        raise HistoryError(str(exc)) from None


def compare_runs(
    store: HistoryStore,
    ref_a: str,
    ref_b: str,
    *,
    floors: Mapping[str, float | None] | None = None,
    alpha: float = DEFAULT_ALPHA,
) -> Comparison:
    """Compare run B with run A (A is the reference, e.g. main; B the candidate).

    The runs' items are paired on ids and each metric compared over the paired items
    (``core.paired``); a drop beyond the margin (``regressions``) is a regression only
    when it is significant at ``alpha`` (``core.compare.judge``).

    Args:
        floors: Bounds to judge B's regression by; default: the floors B's config
            recorded (``config.floors``), else the default floors.
        alpha: The significance level a drop must reach.

    Raises:
        HistoryError: A reference names no run or is ambiguous; recorded floors are invalid;
            a stored item is not a valid outcome, or a run holds an item id twice.
    """
    id_a, id_b = store.resolve_run(ref_a), store.resolve_run(ref_b)
    a, b = _run_row(store, id_a), _run_row(store, id_b)
    runs = schema.runs
    with store.engine.connect() as conn:
        stored = {
            r.id: r
            for r in conn.execute(select(runs.c.id, runs.c.config, runs.c.metrics).where(runs.c.id.in_([id_a, id_b])))
        }
    a_metrics, b_metrics = stored[id_a].metrics, stored[id_b].metrics
    if floors is None:
        floors = recorded_floors(stored[id_b].config, id_b)
    av, bv = numeric_metrics(a_metrics), numeric_metrics(b_metrics)
    order = _metric_order()
    names = [n for n in order if n in av or n in bv] + sorted((set(av) | set(bv)) - set(order))
    pass_a, pass_b = _pass_map(store, id_a), _pass_map(store, id_b)
    p2f, f2p = [], []
    for item_id in sorted(set(pass_a) & set(pass_b)):
        was, now = pass_a[item_id][0], pass_b[item_id][0]
        _, kind, tags = pass_b[item_id]
        if was and not now:
            p2f.append(Flip(item_id, kind, tags))
        elif now and not was:
            f2p.append(Flip(item_id, kind, tags))
    try:
        pairing, paired_a, paired_b = pair_runs(
            _outcomes(store, id_a), _outcomes(store, id_b), (f"run A {id_a[:12]}", f"run B {id_b[:12]}")
        )
    except PairingError as exc:
        raise HistoryError(str(exc)) from None
    tests = compare_metrics(paired_a, paired_b) if pairing.ids else None
    comparable = _comparable(a, b, stored[id_a].config, stored[id_b].config)
    candidates = _run_flags(b) + fixed_regressions(a_metrics, b_metrics, floors, comparable)
    verdict = judge(candidates, tests, alpha=alpha, why_unpaired="the runs share no item id")
    return Comparison(
        a=a,
        b=b,
        metrics=[MetricDelta(n, av.get(n), bv.get(n)) for n in names],
        verdicts_a=verdict_counts(store, id_a),
        verdicts_b=verdict_counts(store, id_b),
        pass_to_fail=p2f,
        fail_to_pass=f2p,
        only_in_a=len(set(pass_a) - set(pass_b)),
        only_in_b=len(set(pass_b) - set(pass_a)),
        regressions=verdict.regressions,
        not_regressions=verdict.not_regressions,
        pairing=pairing,
        tests=tests,
        alpha=alpha,
    )
