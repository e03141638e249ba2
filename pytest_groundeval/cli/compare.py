"""``groundeval compare A.json B.json``: two saved reports paired on item ids (docs/statistics.md, "Paired comparison").

Also the text every comparison prints, shared with ``groundeval history compare``
(``cli/history.py``): the metric table, the paired section (each metric's change, its
bootstrap interval and ``significant (p=…)`` or ``not significant (p=…)``), the items
only one run holds, and the verdict. Exit codes: 0 no regression, 1 a significant
regression (or one the paired test could not judge, which the output says), 2 usage
error or unreadable input.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.compare import Candidate, ComparisonRecord, Verdict, fixed_regressions, judge
from ..core.floors import FloorsError
from ..core.gate import check_recorded_floors, describe_lineage, load_floors, merge_floors, same_lineage, verdict
from ..core.metrics import METRIC_DIRECTIONS, format_value
from ..core.paired import MetricTest, Pairing, PairingError, compare_metrics, pair_runs
from ..core.report import Report, ReportError, read_reports
from ..core.significance import DEFAULT_ALPHA, DEFAULT_CONFIDENCE, REPLICATES, SEED, significance_text
from ..core.wire import WireModel
from ._args import Parser, report_error_text

MAX_IDS = 10
"""Item ids listed per line (items only in one run, flips) before ``… and N more``."""


def _compare_parser() -> Parser:
    parser = Parser(
        prog="groundeval compare",
        description="Pair two saved reports on item ids; exit 1 when B regresses beyond the margin, significantly",
    )
    parser.add_argument("report_a", metavar="A.json", help="Reference report (e.g. main's)")
    parser.add_argument("report_b", metavar="B.json", help="Candidate report")
    add_alpha_argument(parser)
    parser.add_argument(
        "--floors", help="Floors JSON to judge B by (default: the floors B recorded, else the defaults)"
    )
    parser.add_argument("--json", action="store_true", help="Print the comparison as JSON instead of text")
    return parser


def add_alpha_argument(parser: Parser) -> None:
    """``--alpha A``: the significance level a drop must reach (``compare`` and ``history compare``)."""
    parser.add_argument(
        "--alpha",
        type=float,
        default=DEFAULT_ALPHA,
        help=f"Significance level a drop beyond the margin must reach to be a regression (default {DEFAULT_ALPHA})",
    )


def check_alpha(alpha: float) -> str | None:
    """Why ``alpha`` is not a significance level, or None."""
    if not 0.0 < alpha < 1.0:
        return f"--alpha must be a number in (0, 1), got {alpha:g}"
    return None


# --- text shared with groundeval history compare -----------------------------------------------


def _is_rate(name: str) -> bool:
    direction = METRIC_DIRECTIONS.get(name)
    return direction is None or direction.rate


def metric_cell(name: str, value: Any) -> str:
    """A metric value as a table cell: the report's and the gate's number format; counts whole."""
    if isinstance(value, bool) or not isinstance(value, (int, float, type(None))):
        return str(value)
    if isinstance(value, int) or (name not in METRIC_DIRECTIONS and value is not None and float(value).is_integer()):
        return str(int(value))  # a count (items, errors, qaClaims)
    return format_value(name, value)


def metric_table(rows: Sequence[tuple[str, Any, Any]]) -> list[str]:
    """The table of ``(metric, A's value, B's value)`` rows with B − A, as ``history compare`` prints it."""
    lines = [f"{'metric':<26} {'A':>13} {'B':>13} {'B - A':>10}"]
    for name, a, b in rows:
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b))
        if not numeric:
            delta = ""
        elif float(a).is_integer() and float(b).is_integer() and name in ("errors", "items", "qaClaims"):
            delta = f"{int(b - a):+d}"
        elif _is_rate(name):
            delta = f"{b - a:+.4f}"
        else:
            delta = f"{b - a:+.1f}"  # ms and tokens, as the values are printed
        lines.append(f"{name:<26} {metric_cell(name, a):>13} {metric_cell(name, b):>13} {delta:>10}")
    return lines


def listed_ids(ids: Sequence[str], limit: int = MAX_IDS) -> str:
    """Up to ``limit`` ids, comma-separated, then ``… and N more``."""
    shown = ", ".join(ids[:limit])
    return shown + (f" … and {len(ids) - limit} more" if len(ids) > limit else "")


def _signed(name: str, value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.4f}" if _is_rate(name) else f"{value:+.1f}"


def _method(test: MetricTest) -> str:
    differing = f"{test.discordant} differing item{'s' if test.discordant != 1 else ''}"
    return f"exact sign-flip over {differing}" if test.exact else f"{REPLICATES} random sign-flips over {differing}"


def metric_test_line(test: MetricTest, alpha: float) -> str:
    """One metric of the paired section: the change, its interval, and whether it is significant."""
    if test.p_value is None or test.delta is None:
        return f"  {test.metric:<26} not tested: {test.note or 'not measured over the paired items'}"
    interval = f"[{_signed(test.metric, test.low)}, {_signed(test.metric, test.high)}]"
    powerless = (
        f"; {test.items} paired item{'s' if test.items != 1 else ''} cannot reach alpha {alpha:g}"
        if test.powerless(alpha)
        else ""
    )
    return (
        f"  {test.metric:<26} {_signed(test.metric, test.delta):>9} {interval:<22} "
        f"{significance_text(test.p_value, alpha)}: {_method(test)}{powerless}"
    )


def paired_lines(
    pairing: Pairing | None,
    tests: Mapping[str, MetricTest] | None,
    alpha: float,
    unpaired: str | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
) -> list[str]:
    """The paired section: items only in one run, the pass/fail flips' McNemar test, each metric's test."""
    if pairing is None or tests is None:
        return [f"not paired: {unpaired or 'the runs share no items'}; drops are judged by the fixed margin alone"]
    lines = []
    for run, ids in (("A", pairing.only_in_a), ("B", pairing.only_in_b)):
        if ids:
            lines.append(f"items only in {run} (not paired): {len(ids)}: {listed_ids(ids)}")
    if not pairing.ids:
        return [*lines, "paired: no item is in both runs; drops are judged by the fixed margin alone"]
    lines.append(
        f"paired over {len(pairing.ids)} items; alpha {alpha:g}; "
        f"{confidence:.0%} paired bootstrap intervals of B - A ({REPLICATES} replicates, seed {SEED}):"
    )
    flips = len(pairing.pass_to_fail) + len(pairing.fail_to_pass)
    lines.append(
        f"  {'pass/fail':<26} {len(pairing.pass_to_fail)} pass -> fail, {len(pairing.fail_to_pass)} fail -> pass: "
        f"{significance_text(pairing.mcnemar_p, alpha)}: exact McNemar over {flips} flip{'s' if flips != 1 else ''}"
    )
    lines.extend(metric_test_line(test, alpha) for test in tests.values())
    return lines


def verdict_lines(result: Verdict) -> list[str]:
    """``REGRESSION …`` and ``not a regression: …`` lines, then ``compare: REGRESSION`` or ``compare: OK``."""
    lines = [f"REGRESSION {reason}" for reason in result.regressions]
    lines += [f"not a regression: {reason}" for reason in result.not_regressions]
    lines.append(f"compare: {'REGRESSION' if result.regressed else 'OK'}")
    return lines


# --- the command ------------------------------------------------------------------------------------


class CompareOutput(WireModel):
    """``groundeval compare --json``: one comparison per dataset both reports hold."""

    schema_version: int = 1
    """Version of this shape (docs/statistics.md)."""
    comparisons: list[ComparisonRecord]
    """One per dataset version both reports hold, in report A's order."""
    only_in_a: list[str]
    """Dataset versions only report A holds (not compared)."""
    only_in_b: list[str]
    """Dataset versions only report B holds."""
    regressed: bool
    """Whether any comparison regressed: the command exits 1."""


def _floors(args: Any, b: Report) -> dict[str, float]:
    if args.floors is not None:
        return load_floors(args.floors)
    if b.floors is not None:
        return check_recorded_floors(b.floors, f"recorded in {args.report_b}")
    return merge_floors()


def compare_reports(
    a: Report, b: Report, floors: Mapping[str, float | None], alpha: float, names: tuple[str, str] = ("A", "B")
) -> tuple[Pairing | None, dict[str, MetricTest] | None, Verdict, str | None]:
    """Pair two reports of one dataset, test every metric and judge B's drops beyond the margin.

    Returns:
        ``(pairing, tests, verdict, why unpaired)``; pairing and tests are None when a
        report lists no items (a recorded summary), and the fixed margin alone judges.

    Args:
        names: How the two reports are named in a ``PairingError`` (their files).

    Raises:
        PairingError: An item id appears twice in one report.
    """
    comparable = same_lineage(a.models, b.models)
    candidates = fixed_regressions(a.metrics.to_wire(), b.metrics.to_wire(), floors, comparable)
    if b.interrupted:
        candidates.insert(0, Candidate(None, "report B was interrupted: its metrics cover only part of the selection"))
    if not a.items or not b.items:
        which = "A" if not a.items else "B"
        why = f"report {which} lists no items (a recorded summary)"
        return None, None, judge(candidates, None, alpha=alpha, why_unpaired=why), why
    pairing, paired_a, paired_b = pair_runs(a.items, b.items, names)
    tests = compare_metrics(paired_a, paired_b) if pairing.ids else None
    unpaired = None if pairing.ids else "the reports share no item id"
    return pairing, tests, judge(candidates, tests, alpha=alpha, why_unpaired=unpaired or ""), unpaired


def _header(run: str, path: str, report: Report) -> str:
    return f"{run} {path}  dataset {report.dataset_version}  {verdict(report.gate)}  {describe_lineage(report.models)}"


def _text(path_a: str, path_b: str, a: Report, b: Report, result: tuple[Any, ...], alpha: float) -> list[str]:
    pairing, tests, outcome, unpaired = result
    wire_a, wire_b = a.metrics.to_wire(), b.metrics.to_wire()
    names = [n for n in [*METRIC_DIRECTIONS, "items"] if n in wire_a or n in wire_b]
    lines = [_header("A", path_a, a), _header("B", path_b, b)]
    if not same_lineage(a.models, b.models):
        lines.append("model lineage differs or is unknown: retrievalRecall is not compared with A's minus the margin")
    lines += metric_table([(n, wire_a.get(n), wire_b.get(n)) for n in names])
    if pairing is not None:
        kinds = {o.id: o.kind for o in b.items}
        for title, ids in (("pass -> fail", pairing.pass_to_fail), ("fail -> pass", pairing.fail_to_pass)):
            lines.append(f"{title}: {len(ids)}")
            if ids:
                lines.append(f"  {listed_ids([f'{kinds[i]}::{i}' for i in ids], 20)}")
    lines += paired_lines(pairing, tests, alpha, unpaired)
    return lines + verdict_lines(outcome)


def compare_main(argv: list[str]) -> int:
    """``groundeval compare A.json B.json [--alpha A] [--floors FILE] [--json]``.

    Pairs the two reports on item ids, dataset by dataset (session reports are matched
    by dataset version), and judges each drop of B beyond the margin by the paired test
    (``core.compare``). Without ``--floors`` the floors B recorded are used (the
    defaults when it recorded none).

    Returns:
        0 when B does not regress; 1 when it regresses (a drop beyond the margin that is
        significant at ``--alpha``, or one the paired test could not judge, as printed);
        2 for a usage error: an argument missing or invalid, a report or floors file that
        cannot be read or is invalid, an item id twice in one report, or no dataset
        version both reports hold (one line on stderr naming the file).
    """
    args = _compare_parser().parse_or_status(argv, "groundeval compare", report_error_text)
    if isinstance(args, int):
        return args
    problem = check_alpha(args.alpha)
    if problem is not None:
        print(f"groundeval compare: {problem}", file=sys.stderr)
        return 2
    try:
        reports_a, reports_b = read_reports(args.report_a), read_reports(args.report_b)
    except ReportError as exc:
        print(f"groundeval compare: {report_error_text(exc)}", file=sys.stderr)
        return 2
    by_version_b = {r.dataset_version: r for r in reports_b}
    versions_a = [r.dataset_version for r in reports_a]
    matched = [(a, by_version_b[a.dataset_version]) for a in reports_a if a.dataset_version in by_version_b]
    if not matched:
        print(
            f"groundeval compare: {args.report_a} (dataset {', '.join(versions_a)}) and {args.report_b} (dataset "
            f"{', '.join(by_version_b)}) share no dataset version: a comparison pairs two runs of one dataset",
            file=sys.stderr,
        )
        return 2
    records, lines = [], []
    for a, b in matched:
        try:
            floors = _floors(args, b)
            result = compare_reports(a, b, floors, args.alpha, (args.report_a, args.report_b))
        except (FloorsError, PairingError) as exc:
            print(f"groundeval compare: {exc}", file=sys.stderr)
            return 2
        pairing, tests, outcome, unpaired = result
        records.append(
            ComparisonRecord.of(
                dataset_version=a.dataset_version,
                pairing=pairing,
                tests=tests,
                verdict=outcome,
                alpha=args.alpha,
                confidence=DEFAULT_CONFIDENCE,
                replicates=REPLICATES,
                seed=SEED,
                unpaired=unpaired,
            )
        )
        if len(matched) > 1:
            lines.append(f"== dataset {a.dataset_version}")
        lines += _text(args.report_a, args.report_b, a, b, result, args.alpha)
    only_a = [v for v in versions_a if v not in by_version_b]
    only_b = [v for v in by_version_b if v not in versions_a]
    regressed = any(r.regressed for r in records)
    if args.json:
        output = CompareOutput(comparisons=records, only_in_a=only_a, only_in_b=only_b, regressed=regressed)
        print(json.dumps(output.to_wire(), indent=2))
        return 1 if regressed else 0
    for version, run in [(v, "A") for v in only_a] + [(v, "B") for v in only_b]:
        lines.append(f"dataset {version} only in {run}: not compared")
    if len(matched) > 1:
        lines.append(f"compare: {'REGRESSION' if regressed else 'OK'}")
    for line in lines:
        print(line)
    return 1 if regressed else 0
