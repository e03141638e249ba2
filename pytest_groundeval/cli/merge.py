"""``groundeval merge``: combine the reports of a sharded run into one report and gate it (docs/ci.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..core.floors import FloorsError
from ..core.gate import baseline_version_problem, load_floors
from ..core.render import format_check
from ..core.report import ReportError, read_report
from ..core.shard_merge import MergeError, merge_reports
from ..outputs.write import OutputError, write_text_atomic
from ._args import Parser, report_error_text
from ._outputs import add_output_arguments, output_collision, outputs_from_args, trends_from_args


def _dataset_ids(path: str) -> list[str]:
    """Every item id of the dataset at ``path`` (a directory holding ``manifest.json``, or the manifest).

    Raises:
        OutputError: The manifest cannot be read or has no ``items[].id``.
    """
    manifest = Path(path)
    if manifest.is_dir():
        manifest = manifest / "manifest.json"
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
        ids = [item["id"] for item in data["items"]]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise OutputError(f"{manifest}: cannot read dataset: {exc}") from exc
    except (KeyError, TypeError) as exc:
        raise OutputError(f"{manifest}: not a dataset manifest (items[].id expected)") from exc
    return [str(item_id) for item_id in ids]


def _merge_parser() -> Parser:
    parser = Parser(
        prog="groundeval merge", description="Merge the reports of a sharded run into one report and gate it"
    )
    parser.add_argument("reports", nargs="+", metavar="REPORT", help="One report per shard (--eval-shard K/N)")
    parser.add_argument("-o", "--output", required=True, metavar="OUT", help="Where to write the merged report")
    parser.add_argument("--floors", help="Floors JSON to gate with instead of the floors the shards recorded")
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--baseline", help="Baseline report for the retrieval recall check, instead of the one the shards recorded"
    )
    which.add_argument(
        "--no-baseline", action="store_true", help="No baseline recall check, even if the shards recorded a baseline"
    )
    parser.add_argument("--dataset", help="The dataset directory or manifest, to list missing items by id")
    add_output_arguments(parser)
    return parser


def merge_main(argv: list[str]) -> int:
    """``groundeval merge R1 … Rn -o R [--floors F] [--baseline B | --no-baseline] [--dataset D] [outputs]``.

    Outputs: ``[--html OUT] [--markdown OUT] [--history URL | --trends FILE]`` (``cli._outputs``).

    Writes the merged report (see ``core.shard_merge.merge_reports``), prints one line per
    gate check and ``gate: PASS`` or ``gate: FAIL``.

    Returns:
        0 when the merged gate passes, 1 when it fails (missing shards or items fail
        it), 2 when the reports cannot be merged or read, an output path (``-o``,
        ``--html``, ``--markdown``) is an input or another output, an explicit
        ``--baseline`` is of another dataset version, or an argument is wrong
        (one line on stderr, nothing written).
    """
    prog = "groundeval merge"
    args = _merge_parser().parse_or_status(argv, prog)
    if isinstance(args, int):
        return args
    collision = output_collision(
        [("-o", args.output), ("--html", args.html), ("--markdown", args.markdown)],
        [*(("input report", path) for path in args.reports), ("--baseline report", args.baseline),
         ("--floors file", args.floors), ("--trends file", args.trends)],
    )  # fmt: skip
    if collision is not None:
        print(f"{prog}: {collision}", file=sys.stderr)
        return 2
    try:
        reports = [read_report(path) for path in args.reports]  # checked once; merge_reports takes them as read
        floors = load_floors(args.floors) if args.floors else None
        baseline = read_report(args.baseline) if args.baseline else None
        problem = (
            baseline_version_problem(baseline.dataset_version, reports[0].dataset_version, args.baseline)
            if baseline is not None
            else None
        )
        if problem is not None:
            raise OutputError(problem)
        dataset_ids = _dataset_ids(args.dataset) if args.dataset else None
        merged = merge_reports(
            reports,
            sources=args.reports,
            floors=floors,
            baseline=baseline,
            baseline_path=args.baseline,
            recorded_baseline=not args.no_baseline,
            dataset_ids=dataset_ids,
        )
        # The page's trends are read first: a bad trends file or database writes nothing at all.
        trends = trends_from_args(merged, args, prog)
        write_text_atomic(args.output, json.dumps(merged, ensure_ascii=False, allow_nan=False))
    except (ReportError, FloorsError, MergeError, OutputError) as exc:
        print(f"{prog}: {report_error_text(exc)}", file=sys.stderr)
        return 2
    written = read_report(args.output)
    gate = written.gate
    for check in gate.checks:
        print(format_check(check, written.confidence))
    print(f"merged {len(args.reports)} report(s) into {args.output}")
    status = outputs_from_args(merged, args, prog, trends=trends)
    if status:
        return status
    print(f"gate: {'PASS' if gate.passed else 'FAIL'}")
    return 0 if gate.passed else 1
