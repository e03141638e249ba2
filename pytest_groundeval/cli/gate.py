"""``groundeval gate``: re-apply the gate to a saved report or a stored run, with no target (docs/gate.md, docs/history.md)."""

from __future__ import annotations

import sys
from argparse import Namespace

from ..core.confidence import GATE_ON, check_level
from ..core.cost import PricesError, price_metrics, read_prices
from ..core.finalize import RunFlags, RunOutcomes, finalize_run
from ..core.floors import FloorsError
from ..core.gate import baseline_version_problem, check_recorded_floors, load_floors
from ..core.lineage import BaselineInfo
from ..core.render import format_check
from ..core.report import Report, ReportError, check_metrics, read_report, read_reports
from ..core.significance import DEFAULT_ALPHA
from ..history.errors import HistoryError
from ..history.urls import is_database_url, url_from_sources
from ._args import Parser, UsageError, report_error_text
from .compare import check_alpha


def _gate_parser() -> Parser:
    parser = Parser(prog="groundeval gate", description="Re-apply gate floors to a saved report")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--report", help="Report JSON written by --eval-report")
    source.add_argument(
        "--run", metavar="RUN", help="A run stored by --eval-history: id, unique id prefix, 'latest' or 'latest~N'"
    )
    parser.add_argument(
        "--history",
        metavar="URL",
        help="History database of --run (default: $GROUNDEVAL_HISTORY, else .groundeval/history.db)",
    )
    parser.add_argument("--history-url", metavar="URL", help="Deprecated spelling of --history URL")
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
    parser.add_argument(
        "--gate-on",
        choices=GATE_ON,
        help="Compare the bounds with each metric's value (point) or its interval's end on the failing side "
        "(lower-bound), instead of what the run recorded",
    )
    parser.add_argument(
        "--confidence",
        type=float,
        metavar="LEVEL",
        help="Confidence level of the intervals, in (0, 1), instead of the run's (docs/statistics.md)",
    )
    parser.add_argument(
        "--prices",
        metavar="FILE",
        help="Prices JSON (model -> {input, output} USD per 1M tokens) to price judgeCostUsd and targetCostUsd "
        "with, instead of the prices the run recorded (docs/gate.md, Cost)",
    )
    parser.add_argument(
        "--alpha",
        type=float,
        metavar="A",
        help="Significance level of the paired recall check against a --baseline report, in (0, 1), instead of "
        f"the run's (default {DEFAULT_ALPHA}; docs/statistics.md)",
    )
    return parser


def gate_main(argv: list[str]) -> int:
    """``groundeval gate --report R | --run RUN [--history URL] [--baseline B | --no-baseline] [--floors F]
    [--gate-on point|lower-bound] [--confidence LEVEL] [--prices FILE] [--alpha A]``.

    ``--run RUN`` gates a run stored in the history database ``--history URL``
    (docs/history.md) exactly as ``--report`` gates its report: the floors, baseline and
    lineage the run recorded. The metrics of either are recomputed from its items and a
    report whose metrics disagree is refused (``core.report.check_metrics``). The old
    spellings ``--history RUN`` and ``--history-url URL`` still work, with a warning.

    Without ``--floors`` the floors the run recorded are applied (the defaults for a
    report that records none); without ``--baseline`` or ``--no-baseline``, the baseline
    the run recorded (none for a report that records none). Prints one line saying
    which floors and baseline it applied, one line per check, then ``gate: PASS`` or
    ``gate: FAIL``.

    A report listing items that never ran (``notRun``) fails on the ``notRun`` check,
    whatever its ``interrupted`` flag says.

    A gate that compares no quality metric with a bound fails (``nothing_gated_check``),
    as in the plugin; a report of an ``--eval-no-gate`` run is gated here with the
    floors it recorded.

    The confidence intervals are recomputed from the items at the run's level (or
    ``--confidence``) and printed beside each rate; with ``--gate-on lower-bound`` (or a run
    that recorded it) each floor is compared with its metric's interval's low end and each
    ceiling with its high end (docs/statistics.md).

    The costs are those the run computed with the prices it recorded; ``--prices FILE``
    prices the run's recorded tokens again (``core.cost.price_metrics``), so a run recorded
    without prices, or at old prices, can be gated on ``judgeCostUsd`` and ``targetCostUsd``
    ceilings. ``--alpha`` is the level of the paired test of the recall check against a
    ``--baseline`` report (a baseline the run recorded keeps the level it recorded).

    Returns:
        0 when the gate passes, 1 when it fails, 2 when an argument is missing,
        the report, baseline or floors file cannot be read or is invalid (a count
        below 0, a rate that is not a finite number in range, metrics its items do
        not give), or an explicit ``--baseline`` is of another dataset version (one
        line on stderr naming the file and the field).
    """
    args = _gate_parser().parse_or_status(argv, "groundeval gate", report_error_text)
    if isinstance(args, int):
        return args
    try:
        _resolve_spellings(args)
        if args.confidence is not None:
            check_level(args.confidence)
        problem = check_alpha(args.alpha) if args.alpha is not None else None
        if problem is not None:
            raise UsageError(problem)
    except (UsageError, ValueError) as exc:
        print(f"groundeval gate: {report_error_text(exc)}", file=sys.stderr)
        return 2
    if args.run is not None:
        try:
            reports = [_stored_report(args)]
        except (HistoryError, ReportError) as exc:
            print(f"groundeval gate: {report_error_text(exc)}", file=sys.stderr)
            return 2
        args.report = f"history run {args.run}"
    try:
        if args.run is None:
            reports = read_reports(args.report)
        explicit_baseline = read_report(args.baseline) if args.baseline else None
        explicit_floors = load_floors(args.floors) if args.floors else None
        args.prices_checked = read_prices(args.prices) if args.prices else None
    except (ReportError, FloorsError, PricesError) as exc:
        print(f"groundeval gate: {report_error_text(exc)}", file=sys.stderr)
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
            print(f"groundeval gate: {report_error_text(exc)}", file=sys.stderr)
            return 2
    if len(reports) > 1:
        failing = [r.dataset_version for r, ok in zip(reports, verdicts) if not ok]
        print(f"gate: {'PASS' if all(verdicts) else 'FAIL (' + ', '.join(failing) + ')'}")
    return 0 if all(verdicts) else 1


def _deprecated(old: str, new: str) -> None:
    print(f"groundeval gate: {old} is deprecated; use {new}", file=sys.stderr)


def _resolve_spellings(args: Namespace) -> None:
    """Map the deprecated spellings onto ``--run RUN`` and ``--history URL`` (docs/history.md), warning on stderr.

    ``--history`` names the history database on every command. Before, ``gate`` took
    ``--history RUN --history-url URL``: ``--history-url`` is still read as ``--history``,
    and ``--history`` given without ``--run`` or ``--report`` is still read as ``--run``
    unless its value is a database URL.

    Raises:
        UsageError: neither or both of ``--report`` and ``--run``, or ``--history``
            without ``--run``.
    """
    if args.history_url is not None:
        _deprecated("--history-url URL", "--history URL")
        if args.history is not None and args.run is None and args.report is None:
            _deprecated("--history RUN", "--run RUN")
            args.run, args.history = args.history, args.history_url
        elif args.history is not None:
            raise UsageError("--history and --history-url both name the history database; give --history URL")
        else:
            args.history = args.history_url
    elif args.history is not None and args.run is None and args.report is None:
        if is_database_url(args.history):
            raise UsageError("--history URL names the database of --run RUN; give --run RUN (e.g. --run latest)")
        _deprecated("--history RUN", "--run RUN (--history names the history database)")
        args.run, args.history = args.history, None
    if args.report is None and args.run is None:
        raise UsageError("one of the arguments --report --run is required")
    if args.history is not None and args.run is None:
        raise UsageError("--history URL names the database of --run RUN; a --report needs none")


def _stored_report(args: Namespace) -> Report:
    """The stored run ``args.run`` as a report, its metrics checked against its items.

    Raises:
        HistoryError: no such run, or the database cannot be opened.
        ReportError: the run's stored metrics are not what its items give (``check_metrics``).
    """
    # SQLAlchemy loads only when a command reads the history database.
    from ..history.stored_report import stored_report_at

    report = stored_report_at(url_from_sources(args.history), args.run)
    check_metrics(report, f"history run {args.run}")
    return report


def _gate_one(report: Report, args: Namespace, explicit_baseline: Report | None, explicit_floors: dict | None) -> bool:
    """Print one dataset's applied floors and baseline, its checks and its verdict; True when it passes.

    Raises:
        FloorsError: the floors the report recorded are invalid.
    """
    baseline: Report | BaselineInfo | None
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
    gate_on = args.gate_on or report.gate.gate_on
    level = args.confidence if args.confidence is not None else report.confidence_level
    on = f"; bounds on the {level * 100:g}% intervals' ends" if gate_on == "lower-bound" else ""
    metrics, priced = report.metrics, ""
    if args.prices_checked is not None:
        # The recorded tokens priced again: a report's metrics hold its judgeTokens and targetTokens.
        metrics = price_metrics(report.metrics, args.prices_checked, report.models.generate)
        priced = f"; prices from {args.prices}"
    print(f"applied: {floors_text}; {baseline_text}{priced}{on}")
    outcomes = RunOutcomes.counted(report.items)
    # Items that never ran fail the gate whatever the interrupted flag says (docs/gate.md); a merged
    # run with shards or items missing is not a whole run (docs/ci.md): finalize_run adds both checks.
    result = finalize_run(
        outcomes,
        metrics=metrics,
        floors=floors,
        baseline=baseline,
        dataset_version=report.dataset_version,
        models=report.models,
        # The same rule as the plugin: the baseline's recall over the items this report ran.
        baseline_ids=outcomes.baseline_ids if report.items else None,
        flags=RunFlags(merge=report.merge),
        # A baseline report given here is paired at the level the run recorded (docs/statistics.md).
        alpha=args.alpha
        if args.alpha is not None
        else report.baseline.alpha
        if report.baseline is not None and report.baseline.alpha
        else DEFAULT_ALPHA,
        confidence_level=level,
        gate_on=gate_on,
    )
    for check in result.gate.checks:
        print(format_check(check, result.confidence))
    print(f"gate: {'PASS' if result.gate.passed else 'FAIL'}")
    return result.gate.passed
