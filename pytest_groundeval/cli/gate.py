"""``groundeval gate``: re-apply the gate to a saved report, with no target (docs/gate.md)."""

from __future__ import annotations

import sys

from ..core.gate import FloorsError, GateResult, evaluate_gate, load_floors, missing_items_check
from ..core.render import format_check
from ..core.report import ReportError, read_report
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
        report = read_report(args.report)
        baseline = read_report(args.baseline) if args.baseline else None
        # Without --floors, the bounds the run recorded (docs/ci.md); defaults for older reports.
        floors = load_floors(args.floors) if args.floors else report.floors
    except (ReportError, FloorsError) as exc:
        print(f"groundeval gate: {exc}", file=sys.stderr)
        return 2
    if report.interrupted:
        print(
            f"run                        interrupted          FAIL  the run stopped before every selected "
            f"item ran ({len(report.items)} items in the report): its gate verdict is not final"
        )
        print("gate: FAIL")
        return 1
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
    return 0 if result.passed else 1
