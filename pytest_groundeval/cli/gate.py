"""``groundeval gate``: re-apply the gate to a saved report, with no target (docs/gate.md)."""

from __future__ import annotations

import sys

from ..core.gate import FloorsError, evaluate_gate, load_floors
from ..core.render import format_check
from ..core.report import Report, ReportError, read_report, read_reports
from ._args import Parser, ParserExit, UsageError


def _gate_parser() -> Parser:
    parser = Parser(prog="groundeval gate", description="Re-apply gate floors to a saved report")
    parser.add_argument("--report", required=True, help="Report JSON written by --eval-report")
    parser.add_argument("--baseline", help="Earlier report to compare retrieval recall with")
    parser.add_argument("--floors", help="Floors JSON (metric name -> bound); defaults when absent")
    return parser


def gate_main(argv: list[str]) -> int:
    """``groundeval gate --report R [--baseline B] [--floors F]``.

    Prints one line per check, then ``gate: PASS`` or ``gate: FAIL``.

    Returns:
        0 when the gate passes, 1 when it fails, 2 when an argument is missing or
        the report, baseline or floors file cannot be read or is invalid (one line
        on stderr).
    """
    try:
        args = _gate_parser().parse_args(argv)
    except ParserExit as exc:  # --help
        return exc.status
    except UsageError as exc:
        print(f"groundeval gate: {exc}", file=sys.stderr)
        return 2
    try:
        reports = read_reports(args.report)
        baseline = read_report(args.baseline) if args.baseline else None
        floors = load_floors(args.floors) if args.floors else None
    except (ReportError, FloorsError) as exc:
        print(f"groundeval gate: {exc}", file=sys.stderr)
        return 2
    verdicts = []
    for report in reports:
        if len(reports) > 1:
            print(f"== dataset {report.dataset_version}")
        verdicts.append(_gate_one(report, baseline, floors))
    if len(reports) > 1:
        failing = [r.dataset_version for r, ok in zip(reports, verdicts) if not ok]
        print(f"gate: {'PASS' if all(verdicts) else 'FAIL (' + ', '.join(failing) + ')'}")
    return 0 if all(verdicts) else 1


def _gate_one(report: Report, baseline: Report | None, floors: dict | None) -> bool:
    """Print one dataset's checks and its verdict; True when its gate passes."""
    if report.interrupted:
        print(
            f"run                        interrupted          FAIL  the run stopped before every selected "
            f"item ran ({len(report.items)} items in the report): its gate verdict is not final"
        )
        print("gate: FAIL")
        return False
    result = evaluate_gate(
        report.metrics,
        floors=floors,
        baseline=baseline,
        dataset_version=report.dataset_version,
        models=report.models,
        # The same rule as the plugin: the baseline's recall over the qa items this report ran.
        qa_ids={item.id for item in report.items if item.kind == "qa"} if report.items else None,
    )
    for check in result.checks:
        print(format_check(check))
    print(f"gate: {'PASS' if result.passed else 'FAIL'}")
    return result.passed
