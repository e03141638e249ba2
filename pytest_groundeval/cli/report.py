"""``groundeval report``: print a saved report, or recover the report of a killed run (docs/gate.md)."""

from __future__ import annotations

import sys

from ..core.recover import recover_report
from ..core.render import format_report
from ..core.report import ReportError, read_reports
from ._args import Parser, report_error_text
from ._outputs import add_output_arguments, output_collision, outputs_from_args


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def report_main(argv: list[str]) -> int:
    """``groundeval report R [--recover] [--html OUT] [--markdown OUT] [--history URL | --trends FILE]``.

    ``R``: print a saved report's metrics, gate and failed/errored items (each dataset's,
    for a session report of several); with ``--html`` or ``--markdown`` write those
    outputs instead (docs/ci.md), one ``wrote PATH`` line each; the page's trends come
    from the history database ``--history URL`` or the JSON file ``--trends FILE``. ``--recover``: a run
    killed before it finished (SIGKILL) left its items spooled beside ``R``; write them
    to ``R`` as a report marked interrupted, the collected items that never ran as
    ``notRun`` errors, gated with the floors and baseline the run recorded (docs/gate.md:
    what the gate guarantees), then print it.

    Returns:
        0 when the report was printed or written; 2 when it cannot be read, is invalid,
        an output path is the report itself or another output (nothing written),
        there is nothing to recover, an output cannot be written (one line on stderr)
        or the arguments are wrong.
    """
    parser = Parser(prog="groundeval report", description="Print a saved report's metrics and items")
    parser.add_argument("report", help="Report JSON written by --eval-report")
    parser.add_argument(
        "--recover", action="store_true", help="Rebuild the report of a killed run from the items it spooled beside R"
    )
    add_output_arguments(parser)
    args = parser.parse_or_status(argv, "groundeval report", report_error_text)
    if isinstance(args, int):
        return args
    collision = output_collision(
        [("--html", args.html), ("--markdown", args.markdown)],
        [("input report", args.report), ("--trends file", args.trends)],
    )
    if collision is not None:
        print(f"groundeval report: {collision}", file=sys.stderr)
        return 2
    try:
        if args.recover:
            recovered = recover_report(args.report)
            print(
                f"recovered {_plural(recovered.ran, 'item')} of an interrupted run into {recovered.path}; "
                f"{_plural(recovered.not_run, 'collected item')} never ran (counted as errors, notRun)"
            )
        reports = read_reports(args.report)
    except ReportError as exc:
        print(f"groundeval report: {report_error_text(exc)}", file=sys.stderr)
        return 2
    if args.html or args.markdown:
        if len(reports) > 1:
            print("groundeval report: --html/--markdown take a report of one dataset", file=sys.stderr)
            return 2
        return outputs_from_args(reports[0].to_wire(), args, "groundeval report")
    for i, report in enumerate(reports):
        if i:
            print()
        for line in format_report(report):
            print(line)
    return 0
