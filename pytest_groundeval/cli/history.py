"""``groundeval history list|show|compare`` (docs/history.md).

Each command takes ``--history URL`` (else ``GROUNDEVAL_HISTORY``, else the
default ``.groundeval/history.db`` in the working directory). Exit codes: 0 ok,
1 ``compare`` found a regression, 2 usage error or unusable database.
``groundeval rejudge`` is ``cli/rejudge.py``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from ..core.compare import Verdict
from ..core.floors import FloorsError
from ..core.gate import load_floors
from ..core.render import format_interval
from ..history.engine import HistoryError, url_from_sources
from ..history.queries import GROUPS, Comparison, RunDetail, RunRow, compare_runs, group_items, list_runs, show_run
from ..history.store import HistoryStore
from ..history.stored_report import write_run_html
from ._args import Parser, add_history_argument
from .compare import add_alpha_argument, check_alpha, metric_cell, metric_table, paired_lines, verdict_lines

_MAX_LISTED = 20


def _history_parser() -> Parser:
    parser = Parser(prog="groundeval history", description="List, show and compare recorded runs")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    p = sub.add_parser("list", help="Recorded runs, newest first")
    p.add_argument("--label", help="Only runs with this --eval-label")
    p.add_argument("--dataset", help="Only runs of this dataset version or path")
    p.add_argument("--limit", type=int, default=20, help="At most this many runs (default 20)")
    add_history_argument(p)
    p = sub.add_parser("show", help="One run's metrics, gate, verdicts, latency and errors")
    p.add_argument("run", help="Run id, unique id prefix, 'latest' or 'latest~N'")
    p.add_argument("--by", choices=GROUPS, help="Bad-answer rate and percentiles per tool, kind or tag")
    p.add_argument(
        "--html", metavar="OUT", help="Also write the run's HTML report, with trends over earlier runs (docs/ci.md)"
    )
    add_history_argument(p)
    p = sub.add_parser(
        "compare", help="Two runs paired on item ids; exit 1 when B drops beyond the margin, significantly"
    )
    p.add_argument("run_a", help="Reference run (e.g. main's latest)")
    p.add_argument("run_b", help="Candidate run")
    p.add_argument("--floors", help="Floors JSON to judge B by (default: the floors B recorded)")
    add_alpha_argument(p)
    add_history_argument(p)
    return parser


# --- formatting ---------------------------------------------------------------------------------


def _when(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _num(value: float | None, digits: int = 4) -> str:
    if value is None:
        return "n/a"
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.{digits}f}"


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f} ms"


def format_runs(rows: Sequence[RunRow]) -> list[str]:
    """``history list`` lines: id prefix, start (UTC), status, items, duration, dataset, label."""
    if not rows:
        return ["no runs recorded"]
    lines = [f"{'run':<12}  {'started (UTC)':<19}  {'status':<11}  {'items':>6}  {'duration':>9}  dataset  label"]
    for r in rows:
        duration = "-" if r.finished_ms is None else f"{(r.finished_ms - r.started_ms) / 1000:.1f} s"
        lines.append(
            f"{r.id[:12]:<12}  {_when(r.started_ms):<19}  {r.status:<11}  {r.items:>6}  {duration:>9}  "
            f"{r.dataset_version or '-'}  {r.label or '-'}"
        )
    return lines


def format_detail(detail: RunDetail) -> list[str]:
    """``history show`` lines."""
    r, c = detail.run, detail.config
    models = c.get("models") or {}
    current = detail.current_set
    judge = (current.judge_model if current is not None else None) or c.get("judgeModel") or "-"
    lines = [
        f"run {r.id}  label {r.label or '-'}  status {r.status}",
        f"started {_when(r.started_ms)} UTC  finished {_when(r.finished_ms)}",
        f"dataset {r.dataset_path or '-'} version {r.dataset_version or '-'}",
        # JSONB does not keep key order: generate and embed first, then any other role.
        "models "
        + " ".join(f"{k}={models[k]}" for k in sorted(models, key=lambda k: (k != "generate", k != "embed", k)))
        + f"  judge={judge} scorer={c.get('scorerModel') or '-'}",
        f"plugin {c.get('pluginVersion') or '-'}  git {c.get('gitCommit') or '-'}",
        f"items {r.items}: {detail.passed} passed, {detail.failed} failed, {len(detail.errors)} errors",
        f"latency p50 {_ms(detail.latency_ms_p50)}  p95 {_ms(detail.latency_ms_p95)}",
        "verdicts "
        + ", ".join(f"{k} {n}" for k, n in detail.verdicts.items())
        + f"; deterministic mismatches {detail.mismatched_paragraphs}",
    ]
    for js in detail.judgment_sets:
        state = "current" if js.is_current else "kept"
        reason = " ".join((js.reason or "").split())
        if len(reason) > 160:
            reason = reason[:157] + "..."
        why = f" ({reason})" if reason and js.status != "complete" else ""
        lines.append(
            f"judgment set {js.id} [{state}] {js.origin} judge {js.judge_model or '-'} "
            f"prompt {js.prompt_version or '-'} {_when(js.created_ms)} UTC: {js.status}, "
            f"{js.paragraphs - js.failed} of {js.paragraphs} paragraph(s) "
            f"with a parseable verdict{why}"
        )
    if detail.metrics is not None:
        lines.append("metrics:")
        for name, value in detail.metrics.items():
            if isinstance(value, Mapping):
                value = ", ".join(f"{k} {v}" for k, v in value.items())
                lines.append(f"  {name:<26} {value}")
            else:
                interval = (detail.confidence or {}).get(name)
                shown = f"{metric_cell(name, value)} {format_interval(name, interval)}".rstrip()
                lines.append(f"  {name:<26} {shown}")
        level = c.get("confidenceLevel")
        if detail.confidence is not None and isinstance(level, (int, float)):
            lines.append(f"intervals: {level * 100:g}% confidence (docs/statistics.md)")
    if detail.gate is not None:
        lines.append("gate:")
        for check in detail.gate.get("checks", []):
            lines.append(f"  {check.get('metric', '?'):<26} {check.get('outcome', '?'):<4}  {check.get('reason', '')}")
        lines.append(f"gate: {'PASS' if detail.gate.get('passed') else 'FAIL'}")
    for item_id, kind, error in detail.errors[:_MAX_LISTED]:
        lines.append(f"ERROR {kind}::{item_id}  {' '.join(error.split())[:200]}")
    if len(detail.errors) > _MAX_LISTED:
        lines.append(f"… and {len(detail.errors) - _MAX_LISTED} more errors")
    return lines


def format_groups(by: str, groups: Sequence[Any]) -> list[str]:
    """``history show --by`` lines: one per group, worst bad-answer rate first."""
    lines = [
        f"{by:<24} {'items':>6} {'bad':>5} {'bad rate':>8} {'errors':>6} {'lat p50':>10} {'lat p95':>10} "
        f"{'iter p50':>8} {'iter p95':>8}"
    ]
    for g in groups:
        lines.append(
            f"{g.group[:24]:<24} {g.items:>6} {g.bad:>5} {g.bad_rate:>8.3f} {g.errors:>6} "
            f"{_ms(g.latency_ms_p50):>10} {_ms(g.latency_ms_p95):>10} {_num(g.iterations_p50, 1):>8} "
            f"{_num(g.iterations_p95, 1):>8}"
        )
    return lines


def format_comparison(cmp: Comparison) -> list[str]:
    """``history compare`` lines: metrics with deltas, verdicts, flips by kind and tag, the paired tests
    (``cli.compare.paired_lines``), the verdict."""
    lines = [
        f"A {cmp.a.id[:12]}  {_when(cmp.a.started_ms)}  {cmp.a.status}  {cmp.a.label or '-'}",
        f"B {cmp.b.id[:12]}  {_when(cmp.b.started_ms)}  {cmp.b.status}  {cmp.b.label or '-'}",
    ]
    lines += metric_table([(m.name, m.a, m.b) for m in cmp.metrics])
    lines.append(
        "verdicts (A -> B): "
        + ", ".join(f"{k} {cmp.verdicts_a.get(k, 0)} -> {cmp.verdicts_b.get(k, 0)}" for k in cmp.verdicts_b)
    )
    for title, flips in (("pass -> fail", cmp.pass_to_fail), ("fail -> pass", cmp.fail_to_pass)):
        lines.append(f"{title}: {len(flips)}")
        if flips:
            lines.append("  by kind: " + ", ".join(f"{k} {n}" for k, n in cmp.flips_by("kind", flips).items()))
            lines.append("  by tag:  " + ", ".join(f"{k} {n}" for k, n in cmp.flips_by("tag", flips).items()))
            lines.extend(f"  {f.kind}::{f.item_id}" for f in flips[:_MAX_LISTED])
            if len(flips) > _MAX_LISTED:
                lines.append(f"  … and {len(flips) - _MAX_LISTED} more")
    lines += paired_lines(cmp.pairing, cmp.tests, cmp.alpha, None if cmp.pairing else "the runs share no item id")
    return lines + verdict_lines(Verdict(cmp.regressions, cmp.not_regressions))


# --- commands -------------------------------------------------------------------------------


def _open(flag: str | None) -> HistoryStore:
    return HistoryStore.open(url_from_sources(flag), create=False)


def _floors(path: str | None) -> dict[str, float] | None:
    if path is None:
        return None
    try:
        return load_floors(path)
    except FloorsError as exc:
        raise HistoryError(str(exc)) from exc


def history_main(argv: list[str]) -> int:
    """``groundeval history list|show|compare``.

    Returns:
        0 when the command printed its result; 1 when ``compare`` finds that B
        regresses (a drop beyond the margin, significant at ``--alpha``: docs/statistics.md);
        2 for a usage error, an unknown run or an
        unusable database (one line on stderr).
    """
    args = _history_parser().parse_or_status(argv, "groundeval history")
    if isinstance(args, int):
        return args
    try:
        floors = _floors(getattr(args, "floors", None))
        with _open(args.history) as store:
            if args.command == "list":
                if args.limit < 1:
                    raise HistoryError(f"--limit must be >= 1, got {args.limit}")
                lines = format_runs(list_runs(store, label=args.label, dataset=args.dataset, limit=args.limit))
                status = 0
            elif args.command == "show":
                lines = format_detail(show_run(store, args.run))
                if args.by:
                    lines += ["", *format_groups(args.by, group_items(store, args.run, args.by))]
                if args.html:
                    lines.append(f"wrote {write_run_html(store, args.run, args.html)}")
                status = 0
            else:
                problem = check_alpha(args.alpha)
                if problem is not None:
                    raise HistoryError(problem)
                cmp = compare_runs(store, args.run_a, args.run_b, floors=floors, alpha=args.alpha)
                lines = format_comparison(cmp)
                status = 1 if cmp.regressed else 0
    except HistoryError as exc:
        print(f"groundeval history {args.command}: {exc}", file=sys.stderr)
        return 2
    for line in lines:
        print(line)
    return status
