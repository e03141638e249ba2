"""Merging the reports of a dataset's shards (``core.sharding``) into one gated run.

``merge_reports`` combines the saved reports of shards ``1..N`` of one run. It
refuses what cannot be one run — different dataset versions, model lineages,
floors, prices, confidence levels or gate-on, plugin versions or git commits, shard counts or datasets, a shard given
twice, an item in two reports, an item in the wrong shard — and accounts for
every dataset item exactly once: what no report covers is recorded in the
merged report's ``merge`` block and fails the gate with a check naming it. The
merged metrics are recomputed from all items and the gate re-applied, so they
equal those of the same run unsharded (docs/ci.md, "Sharding").

What each shard's report must record for this (the plugin writes it): ``shard``
(``index``, ``count``, ``assigned``, ``datasetItems``, ``datasetItemsDigest``)
and ``floors`` (the complete bounds its gate applied), beside the fields every
report has. No pytest import here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .finalize import RunFlags, RunOutcomes, finalize_run
from .lineage import UNKNOWN_MODELS, BaselineInfo, MergeInfo
from .report import Report, ReportError, ShardInfo, parse_report
from .sharding import ids_digest, shard_of

_IDS_SHOWN = 5


class MergeError(ValueError):
    """Reports that cannot be merged into one run; the message names the reports and what differs."""


def _ids_list(ids: Iterable[str]) -> str:
    ids = sorted(ids)
    shown = ", ".join(ids[:_IDS_SHOWN])
    return shown + (f" and {len(ids) - _IDS_SHOWN} more" if len(ids) > _IDS_SHOWN else "")


def _shard(report: Report) -> ShardInfo:
    """The shard ``report`` records: every report past ``_validated`` records one."""
    assert report.shard is not None  # _validated refused a report without one
    return report.shard


def _baseline(report: Report) -> BaselineInfo:
    """The baseline ``report`` records, once ``_recorded_baseline`` has seen that every report records one."""
    assert report.baseline is not None  # all or none record one, and the first does
    return report.baseline


def _same(reports: Sequence[tuple[str, Report]], what: str, value: Callable[[Report], object]) -> None:
    """Refuse the merge unless ``value(report)`` is the same for every report."""
    first_source, first = reports[0]
    expected = value(first)
    for source, report in reports[1:]:
        got = value(report)
        if got != expected:
            raise MergeError(f"cannot merge: {first_source} has {what} {expected!r} but {source} has {got!r}")


def _validated(
    reports: Sequence[Mapping[str, Any] | Report], sources: Sequence[str] | None
) -> list[tuple[str, Report]]:
    if not reports:
        raise MergeError("cannot merge: no reports given")
    names = list(sources) if sources is not None else [f"report {i + 1}" for i in range(len(reports))]
    if len(names) != len(reports):
        raise ValueError(f"{len(reports)} reports but {len(names)} source names")
    out = []
    for name, report in zip(names, reports):
        try:
            model = report if isinstance(report, Report) else parse_report(report, name)
        except ReportError as exc:
            raise MergeError(str(exc)) from exc
        if model.shard is None:
            raise MergeError(
                f"cannot merge: {name} records no shard; run each shard with --eval-shard K/N (docs/ci.md)"
            )
        if model.merge is not None:
            raise MergeError(f"cannot merge: {name} is itself a merged report; merge the shards' own reports")
        out.append((name, model))
    return out


def _check_compatible(reports: list[tuple[str, Report]], floors_given: bool) -> None:
    _same(reports, "dataset version", lambda r: r.dataset_version)
    _same(_lineage_witnesses(reports), "model lineage", lambda r: r.models.to_wire())
    _same(reports, "shard count", lambda r: _shard(r).count)
    _same(reports, "dataset", lambda r: (_shard(r).dataset_items, _shard(r).dataset_items_digest))
    _same(reports, "plugin version", lambda r: r.environment.plugin_version)
    _same(reports, "git commit", lambda r: r.environment.git_commit)
    _same(reports, "floors", lambda r: r.floors)
    _same(reports, "repeat (attempts per item, --eval-repeat)", lambda r: r.repeat)
    _same(reports, "confidence level", lambda r: r.confidence_level)
    _same(reports, "gate-on (what the bounds compare with)", lambda r: r.gate.gate_on)
    _same(reports, "prices", lambda r: r.prices)
    if reports[0][1].floors is None and not floors_given:
        raise MergeError(
            f"cannot merge: {reports[0][0]} records no floors, so the gate cannot be re-applied as the shards "
            "applied it; give the floors file with --floors"
        )


def _lineage_witnesses(reports: list[tuple[str, Report]]) -> list[tuple[str, Report]]:
    """The reports whose lineage says something: those that ran items or know their models.

    A shard that drew no item (more shards than items) starts no target, so it records
    ``unknown`` lineage; it measured nothing, so it neither agrees nor disagrees with the
    others (docs/ci.md, "Sharding"). With no witness at all, every report is one.
    """
    witnesses = [(source, r) for source, r in reports if r.items or r.models.to_wire() != UNKNOWN_MODELS]
    return witnesses or reports


def _check_partition(reports: list[tuple[str, Report]]) -> dict[str, str]:
    """Every item in exactly one report and in the shard that report ran; returns id -> source."""
    seen_index: dict[int, str] = {}
    owner: dict[str, str] = {}
    count = _shard(reports[0][1]).count
    for source, report in reports:
        index = _shard(report).index
        if index in seen_index:
            raise MergeError(f"cannot merge: shard {index}/{count} given twice ({seen_index[index]} and {source})")
        seen_index[index] = source
        twice = [item.id for item in report.items if item.id in owner]
        if twice:
            others = sorted({owner[item_id] for item_id in twice})
            raise MergeError(
                f"cannot merge: overlapping shards: {len(twice)} item(s) of {source} are also in "
                f"{', '.join(others)}: {_ids_list(twice)}"
            )
        misplaced = [item.id for item in report.items if shard_of(item.id, count) != index]
        if misplaced:
            raise MergeError(
                f"cannot merge: {source} is shard {index}/{count} but {len(misplaced)} of its items belong to "
                f"other shards: {_ids_list(misplaced)} (was it split with another shard function?)"
            )
        local = set()
        for item in report.items:
            if item.id in local:
                raise MergeError(f"cannot merge: {source} lists item {item.id!r} twice")
            local.add(item.id)
            owner[item.id] = source
    return owner


def _missing(
    reports: list[tuple[str, Report]], owner: Mapping[str, str], dataset_ids: Sequence[str] | None
) -> MergeInfo:
    shard = _shard(reports[0][1])
    count, total = shard.count, shard.dataset_items
    present = sorted(_shard(report).index for _, report in reports)
    missing_shards = [f"{k}/{count}" for k in range(1, count + 1) if k not in set(present)]
    if len(owner) > total:
        raise MergeError(f"cannot merge: the shards hold {len(owner)} distinct items but their dataset has {total}")
    for source, report in reports:
        if len(report.items) > _shard(report).assigned:
            raise MergeError(
                f"cannot merge: {source} holds {len(report.items)} items but its shard has {_shard(report).assigned}"
            )
    missing_ids: list[str] | None = None
    if dataset_ids is not None:
        if len(set(dataset_ids)) != total or ids_digest(dataset_ids) != shard.dataset_items_digest:
            raise MergeError(
                f"cannot merge: the dataset given ({len(set(dataset_ids))} items) is not the one the shards ran "
                f"({total} items, ids digest {shard.dataset_items_digest})"
            )
        strays = set(owner) - set(dataset_ids)
        if strays:
            raise MergeError(f"cannot merge: {len(strays)} item(s) are not in the dataset: {_ids_list(strays)}")
        missing_ids = sorted(set(dataset_ids) - set(owner))
    else:
        # Without the ids, a present shard's missing items are still known by count; and when
        # nothing is missing by count the digest proves the ids are the dataset's.
        if len(owner) == total and ids_digest(owner) != shard.dataset_items_digest:
            raise MergeError(
                f"cannot merge: the shards hold {total} items but not the dataset's ({shard.dataset_items_digest}); "
                "some item ids differ from the dataset the shards recorded"
            )
    return MergeInfo(
        shards=[f"{k}/{count}" for k in present],
        missing_shards=missing_shards,
        dataset_items=total,
        missing_items=total - len(owner),
        missing_item_ids=missing_ids,
    )


def _recorded_baseline(reports: list[tuple[str, Report]]) -> BaselineInfo | None:
    """The shards' recorded baselines as one: the same baseline, its figure over every shard's qa items."""
    first_source, first = reports[0]
    for source, report in reports[1:]:
        if (report.baseline is None) != (first.baseline is None):
            with_one, without = (source, first_source) if report.baseline is not None else (first_source, source)
            raise MergeError(
                f"cannot merge: {with_one} records a baseline but {without} does not; "
                "give groundeval merge --baseline B or --no-baseline"
            )
    if first.baseline is None:
        return None
    _same(
        reports,
        "baseline",
        lambda r: (
            _baseline(r).path, _baseline(r).dataset_version, _baseline(r).models.to_wire(),
            _baseline(r).baseline_qa_items, _baseline(r).qa_items is None,
            _baseline(r).retrieval_recall if _baseline(r).qa_items is None else None,
        ),
    )  # fmt: skip
    info = first.baseline
    if info.qa_items is None:  # every shard compared with the baseline's overall figure
        return info
    baselines = [_baseline(r) for _, r in reports]
    expected = sum(b.evidence_expected or 0 for b in baselines)
    found = sum(b.evidence_found or 0 for b in baselines)
    missing = sum(b.missing_items for b in baselines)
    return info.model_copy(
        update={
            # Every shard's qa_items is set: _same above compared "qa_items is None" with the first's.
            "qa_items": sum(b.qa_items or 0 for b in baselines),
            "missing_items": missing,
            "evidence_expected": expected,
            "evidence_found": found,
            "retrieval_recall": found / expected if expected and not missing else None,
            # Each shard tested its own slice; their p-values do not combine, and the baseline's items are not
            # at hand here: the merged check keeps the fixed margin (docs/statistics.md). A --baseline report
            # given to the merge pairs every shard's items instead.
            "recall_p_value": None,
            "paired_items": None,
            "alpha": None,
        }
    )


def merge_reports(
    reports: Sequence[Mapping[str, Any] | Report],
    *,
    sources: Sequence[str] | None = None,
    floors: Mapping[str, float] | None = None,
    baseline: Report | None = None,
    baseline_path: str | None = None,
    recorded_baseline: bool = True,
    dataset_ids: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Merge the reports of the shards of one run into one report, recomputing metrics and gate.

    Args:
        reports: The shards' reports, as decoded JSON dicts (wire keys) or ``Report``s.
        sources: A name per report for messages (its path); ``"report 1"``… by default.
        floors: Complete bounds (``core.gate.parse_floors`` output) to gate with instead of the
            ones the shards recorded.
        baseline: A baseline report to compare retrieval recall with instead of the one the
            shards recorded; its recall is taken over the qa items of every shard.
        baseline_path: ``baseline``'s file, recorded in the merged report for people.
        recorded_baseline: Without ``baseline``, use the baseline the shards recorded
            (its figures over each shard's items, summed); False: no baseline check.
        dataset_ids: Every item id of the dataset; when given, missing items are listed by id.

    Returns:
        The merged report as a wire dict (validates as ``Report``): items of every
        shard in shard order, metrics and gate from ``core.finalize.finalize_run`` over
        all of them: ``evaluate_gate``'s checks, the interrupted check when a shard was
        interrupted, and a FAIL check on ``items`` when any dataset item is missing,
        ``merge`` saying what was combined and what is missing, ``shard`` None.
        ``startedAtMs`` is the earliest shard start and ``durationMs`` the span to the
        last shard's end.

    Raises:
        MergeError: A report is invalid or records no shard, or the reports are not
            the shards of one run (see the module docstring), or some record a baseline
            and others none or another; the message names them.
    """
    validated = _validated(reports, sources)
    _check_compatible(validated, floors is not None)
    validated.sort(key=lambda pair: _shard(pair[1]).index)
    owner = _check_partition(validated)
    info = _missing(validated, owner, dataset_ids)
    first = validated[0][1]
    models = _lineage_witnesses(validated)[0][1].models
    items = [item for _, report in validated for item in report.items]
    outcomes = RunOutcomes.of(items)
    bounds = dict(floors) if floors is not None else first.floors
    interrupted = any(report.interrupted for _, report in validated)
    end = finalize_run(
        outcomes,
        floors=bounds,
        baseline=baseline if baseline is not None else _recorded_baseline(validated) if recorded_baseline else None,
        baseline_path=baseline_path,
        baseline_ids=outcomes.baseline_ids if items else None,
        dataset_version=first.dataset_version,
        models=models,
        # A shard whose items never ran was interrupted: the merged run's interrupted check covers them.
        flags=RunFlags(interrupted=interrupted, not_run_check=False, merge=info),
        confidence_level=first.confidence_level,
        gate_on=first.gate.gate_on,
        # The shards' token counts are summed from their items, then priced once (docs/gate.md, "Cost").
        prices=first.prices,
    )
    started = min(report.started_at_ms for _, report in validated)
    ended = max(report.started_at_ms + report.duration_ms for _, report in validated)
    merged = Report(
        dataset_version=first.dataset_version,
        models=models,
        started_at_ms=started,
        duration_ms=ended - started,
        metrics=end.metrics,
        confidence=end.confidence,
        confidence_level=first.confidence_level,
        gate=end.gate,
        environment=first.environment,
        interrupted=interrupted,
        items=items,
        floors=bounds,
        shard=None,
        merge=info,
        baseline=end.baseline,
        repeat=first.repeat,
        prices=first.prices,
    )
    return merged.to_wire()
