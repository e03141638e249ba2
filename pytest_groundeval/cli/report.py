"""``groundeval report``: print a saved report (docs/plugin.md: reports)."""

from __future__ import annotations

import sys

from ..core.render import format_report
from ..core.report import ReportError, read_report
from ._args import Parser, ParserExit, UsageError
from ._outputs import add_output_arguments, outputs_from_args


def report_main(argv: list[str]) -> int:
    """``groundeval report R [--html OUT] [--markdown OUT] [--history FILE]``.

    Prints a saved report's metrics, gate and failed/errored items; with ``--html`` or
    ``--markdown`` writes those outputs instead (docs/ci.md), one ``wrote PATH`` line each.

    Returns:
        0 when the report was printed or written; 2 when it cannot be read or is invalid,
        an output cannot be written (one line on stderr) or the arguments are wrong.
    """
    parser = Parser(prog="groundeval report", description="Print a saved report's metrics and items")
    parser.add_argument("report", help="Report JSON written by --eval-report")
    add_output_arguments(parser)
    try:
        args = parser.parse_args(argv)
    except ParserExit as exc:  # --help
        return exc.status
    except UsageError as exc:
        print(f"groundeval report: {exc}", file=sys.stderr)
        return 2
    try:
        report = read_report(args.report)
    except ReportError as exc:
        print(f"groundeval report: {exc}", file=sys.stderr)
        return 2
    if args.html or args.markdown:
        return outputs_from_args(report.to_wire(), args, "groundeval report")
    for line in format_report(report):
        print(line)
    return 0
