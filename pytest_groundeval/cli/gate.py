"""``groundeval gate``: re-apply the gate to a saved report or a stored run, with no target (docs/gate.md, docs/history.md)."""

from __future__ import annotations

import sys
from typing import Any

from ..core.gate import (
    FloorsError,
    GateResult,
    baseline_version_problem,
    check_recorded_floors,
    evaluate_gate,
    load_floors,
    missing_items_check,
)
from ..core.render import format_check
from ..core.report import Report, ReportError, read_report, read_reports
from ._args import Parser, ParserExit, UsageError


def _gate_parser() -> Parser:
    parser = Parser(prog="groundeval gate", description="Re-apply gate floors to a saved report")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--report", help="Report JSON written by --eval-report")
    source.add_argument(
        "--history", metavar="RUN", help="A run stored by --eval-history: id, unique id prefix, 'latest' or 'latest~N'"
    )
    parser.add_argument(
        "--history-url",
        metavar="URL",
        help="History database of --history (default: $GROUNDEVAL_HISTORY, else .groundeval/history.db)",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--baseline", help="Earlier report to compare retrieval recall with, instead of the one the run recorded"
    )
    which.add_argument(
        "--no-baseline", action="store_true", help="No baseline recall check, even if the run recorded a baseline"
    )
    parser.add_argument(
        "--floors", help="Floors JSON (metric name -> bound) instead of the floors the run recorded (or the defaults)"
    )
    return parser


def gate_main(argv: list[str]) -> int:
    """``groundeval gate --report R | --history RUN [--baseline B | --no-baseline] [--floors F]``.

    ``--history RUN`` gates a run stored in the history (docs/history.md) exactly as
    ``--report`` gates its report: the floors, baseline and lineage the run recorded.

    Without ``--floors`` the floors the run recorded are applied (the defaults for a
    report that records none); without ``--baseline`` or ``--no-baseline``, the baseline
    the run recorded (none for a report that records none). Prints one line saying
    which floors and baseline it applied, one line per check, then ``gate: PASS`` or
    ``gate: FAIL``.

    A gate that compares no quality metric with a bound fails (``nothing_gated_check``),
    as in the plugin; a report of an ``--eval-no-gate`` run is gated here with the
    floors it recorded.

    Returns:
        0 when the gate passes, 1 when it fails, 2 when an argument is missing,
        the report, baseline or floors file cannot be read or is invalid, or an
        explicit ``--baseline`` is of another dataset version (one line on stderr).
    """
    try:
        args = _gate_parser().parse_args(argv)
    except ParserExit as exc:  # --help
        return exc.status
    except UsageError as exc:
        print(f"groundeval gate: {exc}", file=sys.stderr)
        return 2
    if args.history_url is not None and args.history is None:
        print("groundeval gate: --history-url needs --history RUN", file=sys.stderr)
        return 2
    if args.history is not None:
        from ..history.errors import HistoryError

        try:
            reports = [_stored_report(args)]
        except HistoryError as exc:
            print(f"groundeval gate: {exc}", file=sys.stderr)
            return 2
        args.report = f"history run {args.history}"
    try:
        if args.history is None:
            reports = read_reports(args.report)
        explicit_baseline = read_report(args.baseline) if args.baseline else None
        explicit_floors = load_floors(args.floors) if args.floors else None
    except (ReportError, FloorsError) as exc:
        print(f"groundeval gate: {exc}", file=sys.stderr)
        return 2
    for report in reports:
        problem = (
            baseline_version_problem(explicit_baseline.dataset_version, report.dataset_version, args.baseline)
            if explicit_baseline is not None
            else None
        )
        if problem is not None:
            print(f"groundeval gate: {problem}", file=sys.stderr)
            return 2
    verdicts = []
    for report in reports:
        if len(reports) > 1:
            print(f"== dataset {report.dataset_version}")
        try:
            verdicts.append(_gate_one(report, args, explicit_baseline, explicit_floors))
        except FloorsError as exc:
            print(f"groundeval gate: {exc}", file=sys.stderr)
            return 2
    if len(reports) > 1:
        failing = [r.dataset_version for r, ok in zip(reports, verdicts) if not ok]
        print(f"gate: {'PASS' if all(verdicts) else 'FAIL (' + ', '.join(failing) + ')'}")
    return 0 if all(verdicts) else 1


def _stored_report(args: Any) -> Report:
    """The stored run ``args.history`` as a report (raises ``HistoryError``)."""
    from ..history.reports import report_from_history
    from ..history.store import HistoryStore
    from ..history.urls import url_from_sources

    with HistoryStore.open(url_from_sources(args.history_url)) as store:
        return report_from_history(store, args.history)


def _gate_one(report: Report, args: Any, explicit_baseline: Report | None, explicit_floors: dict | None) -> bool:
    """Print one dataset's applied floors and baseline, its checks and its verdict; True when it passes.

    Raises:
        FloorsError: the floors the report recorded are invalid.
    """
    if args.no_baseline:
        baseline, baseline_text = None, "no baseline (--no-baseline)"
    elif explicit_baseline is not None:
        baseline, baseline_text = explicit_baseline, f"baseline {args.baseline}"
    elif report.baseline is not None:
        baseline = report.baseline
        baseline_text = f"baseline {report.baseline.path or '(path not recorded)'} as recorded in the report"
    else:
        baseline, baseline_text = None, "no baseline (the report records none)"
    if explicit_floors is not None:
        floors, floors_text = explicit_floors, f"floors from {args.floors}"
    elif report.floors is not None:
        floors = check_recorded_floors(report.floors, f"recorded in {args.report}")
        floors_text = "floors recorded in the report"
    else:
        floors, floors_text = None, "default floors (the report records none)"
    if report.interrupted:
        print(
            f"run                        interrupted          FAIL  the run stopped before every selected "
            f"item ran ({len(report.items)} items in the report): its gate verdict is not final"
        )
        print("gate: FAIL")
        return False
    print(f"applied: {floors_text}; {baseline_text}")
    result = evaluate_gate(
        report.metrics,
        floors=floors,
        baseline=baseline,
        dataset_version=report.dataset_version,
        models=report.models,
        # The same rule as the plugin: the baseline's recall over the qa items this report ran.
        qa_ids={item.id for item in report.items if item.kind == "qa"} if report.items else None,
    )
    if report.merge is not None and report.merge.missing_items:
        # A merged run with shards or items missing is not a whole run (docs/ci.md).
        result = GateResult(passed=False, checks=[*result.checks, missing_items_check(report.merge)])
    for check in result.checks:
        print(format_check(check))
    print(f"gate: {'PASS' if result.passed else 'FAIL'}")
    return result.passed
