"""``groundeval history list|show|compare`` and ``groundeval rejudge`` (docs/history.md).

Each command takes ``--history URL`` (else ``GROUNDEVAL_HISTORY``, else the
default ``.groundeval/history.db`` in the working directory). Exit codes: 0 ok,
1 ``compare`` found a regression (or ``rejudge`` left some paragraph without a
parseable verdict: its new judgment set is kept but not made current), 2 usage
error or unusable database.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from .engine import HistoryError, url_from_sources
from .queries import GROUPS, Comparison, RunDetail, RunRow, compare_runs, group_items, list_runs, show_run
from .rejudge import Judge, rejudge_run, tty_progress
from .store import HistoryStore

JudgeFactory = Callable[[argparse.Namespace], Judge]
"""Builds the judge for ``rejudge`` from its parsed arguments (``judge_url``, ``judge_model``)."""


_MAX_LISTED = 20


class _UsageError(Exception):
    pass


class _Exit(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _Parser(argparse.ArgumentParser):
    """Returns to the caller on errors and ``--help`` instead of exiting (usage errors exit 2 in ``main``)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(message)

    def exit(self, status: int = 0, message: str | None = None) -> None:  # type: ignore[override]
        if message:
            print(message, file=sys.stderr, end="")
        raise _Exit(status)


def _history_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--history",
        metavar="URL",
        help="History database: sqlite:///path, postgresql://…, or 'sqlite' for .groundeval/history.db "
        "(default: $GROUNDEVAL_HISTORY, else .groundeval/history.db)",
    )


def _history_parser() -> _Parser:
    parser = _Parser(prog="groundeval history", description="List, show and compare recorded runs")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("list", help="Recorded runs, newest first")
    p.add_argument("--label", help="Only runs with this --eval-label")
    p.add_argument("--dataset", help="Only runs of this dataset version or path")
    p.add_argument("--limit", type=int, default=20, help="At most this many runs (default 20)")
    _history_option(p)
    p = sub.add_parser("show", help="One run's metrics, gate, verdicts, latency and errors")
    p.add_argument("run", help="Run id, unique id prefix, 'latest' or 'latest~N'")
    p.add_argument("--by", choices=GROUPS, help="Bad-answer rate and percentiles per tool, kind or tag")
    p.add_argument(
        "--html", metavar="OUT", help="Also write the run's HTML report, with trends over earlier runs (docs/ci.md)"
    )
    _history_option(p)
    p = sub.add_parser("compare", help="Two runs side by side; exit 1 when B regresses past the floors")
    p.add_argument("run_a", help="Reference run (e.g. main's latest)")
    p.add_argument("run_b", help="Candidate run")
    p.add_argument("--floors", help="Floors JSON to judge B by (default: the floors B recorded)")
    _history_option(p)
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


def _metric(name: str, value: Any) -> str:
    from ..core.gate import format_value  # the report's and the gate's number format

    if isinstance(value, bool) or not isinstance(value, (int, float, type(None))):
        return str(value)
    if isinstance(value, int) or (not _has_bound(name) and value is not None and float(value).is_integer()):
        return str(int(value))  # a count (items, errors, qaClaims)
    return format_value(name, value)


def _has_bound(name: str) -> bool:
    from ..core.gate import METRIC_DIRECTIONS

    return name in METRIC_DIRECTIONS


def _is_rate(name: str) -> bool:
    from ..core.gate import METRIC_DIRECTIONS

    direction = METRIC_DIRECTIONS.get(name)
    return direction is None or direction.rate


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
        "models " + " ".join(f"{k}={models[k]}" for k in sorted(models, key=lambda k: (k != "generate", k != "embed", k)))
        + f"  judge={judge} scorer={c.get('scorerModel') or '-'}",
        f"plugin {c.get('pluginVersion') or '-'}  git {c.get('gitCommit') or '-'}",
        f"items {r.items}: {detail.passed} passed, {detail.failed} failed, {len(detail.errors)} errors",
        f"latency p50 {_ms(detail.latency_ms_p50)}  p95 {_ms(detail.latency_ms_p95)}",
        "verdicts " + ", ".join(f"{k} {n}" for k, n in detail.verdicts.items())
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
                lines.append(f"  {name:<26} {_metric(name, value)}")
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
    """``history compare`` lines: metrics with deltas, verdicts, flips by kind and tag, the verdict."""
    lines = [
        f"A {cmp.a.id[:12]}  {_when(cmp.a.started_ms)}  {cmp.a.status}  {cmp.a.label or '-'}",
        f"B {cmp.b.id[:12]}  {_when(cmp.b.started_ms)}  {cmp.b.status}  {cmp.b.label or '-'}",
        f"{'metric':<26} {'A':>13} {'B':>13} {'B - A':>10}",
    ]
    for m in cmp.metrics:
        if m.delta is None:
            delta = ""
        elif float(m.a).is_integer() and float(m.b).is_integer() and m.name in ("errors", "items", "qaClaims"):
            delta = f"{int(m.delta):+d}"
        elif _is_rate(m.name):
            delta = f"{m.delta:+.4f}"
        else:
            delta = f"{m.delta:+.1f}"  # ms and tokens, as the values are printed
        lines.append(f"{m.name:<26} {_metric(m.name, m.a):>13} {_metric(m.name, m.b):>13} {delta:>10}")
    lines.append("verdicts (A -> B): " + ", ".join(
        f"{k} {cmp.verdicts_a.get(k, 0)} -> {cmp.verdicts_b.get(k, 0)}" for k in cmp.verdicts_b
    ))
    for title, flips in (("pass -> fail", cmp.pass_to_fail), ("fail -> pass", cmp.fail_to_pass)):
        lines.append(f"{title}: {len(flips)}")
        if flips:
            lines.append("  by kind: " + ", ".join(f"{k} {n}" for k, n in cmp.flips_by("kind", flips).items()))
            lines.append("  by tag:  " + ", ".join(f"{k} {n}" for k, n in cmp.flips_by("tag", flips).items()))
            lines.extend(f"  {f.kind}::{f.item_id}" for f in flips[:_MAX_LISTED])
            if len(flips) > _MAX_LISTED:
                lines.append(f"  … and {len(flips) - _MAX_LISTED} more")
    if cmp.only_in_a or cmp.only_in_b:
        lines.append(f"items only in A: {cmp.only_in_a}; only in B: {cmp.only_in_b}")
    for reason in cmp.regressions:
        lines.append(f"REGRESSION {reason}")
    lines.append(f"compare: {'REGRESSION' if cmp.regressed else 'OK'}")
    return lines


# --- commands -------------------------------------------------------------------------------


def _open(flag: str | None) -> HistoryStore:
    return HistoryStore.open(url_from_sources(flag))


def _floors(path: str | None) -> dict[str, float] | None:
    if path is None:
        return None
    from ..core.gate import FloorsError, load_floors

    try:
        return load_floors(path)
    except FloorsError as exc:
        raise HistoryError(str(exc)) from exc


TREND_RUNS = 20
"""Earlier runs of the same dataset and lineage a run's HTML report shows trends over."""


def earlier_runs(
    store: HistoryStore,
    dataset_version: str,
    models: Mapping[str, Any] | None,
    until_ms: int,
    *,
    exclude: str | None = None,
) -> list[dict[str, Any]]:
    """The trend of the HTML report: earlier finished runs of one dataset version and lineage.

    Up to ``TREND_RUNS`` runs started at or before ``until_ms`` (epoch ms), ``exclude``
    (a run id) left out, oldest first, each ``{"id", "startedAt", "metrics"}`` as
    ``outputs.html.render_html`` takes its ``history`` (docs/ci.md, "HTML report").

    Raises:
        HistoryError: a stored run is not a valid report.
    """
    from .reports import report_from_history

    earlier = []
    for row in list_runs(store, dataset=dataset_version, limit=None):
        if row.id == exclude or row.finished_ms is None:
            continue
        past = report_from_history(store, row.id).to_wire()
        if past.get("models") == models and past.get("startedAtMs", 0) <= until_ms:
            earlier.append({"id": row.id, "startedAt": row.started_ms, "metrics": past["metrics"]})
        if len(earlier) >= TREND_RUNS:
            break
    return list(reversed(earlier))


def write_run_html(store: HistoryStore, ref: str, out: str) -> str:
    """Write the HTML report of stored run ``ref`` to ``out``, with trends over earlier runs.

    The trends and the two-run comparison use up to ``TREND_RUNS`` runs before it of the
    same dataset version and model lineage, oldest first (docs/ci.md, "HTML report"); the
    comparison sets the run against the one before it, and says so when there is none.

    Raises:
        HistoryError: ``ref`` names no run, or the file cannot be written.
    """
    from ..outputs.write import OutputError, write_outputs
    from .reports import report_from_history

    report = report_from_history(store, ref)
    run_id = store.resolve_run(ref)
    wire = report.to_wire()
    started = wire.get("startedAtMs", 0)
    # The page adds the run itself as "this run": the history it is given holds only the runs before it,
    # so its two-run comparison sets the run against the one before it, never against itself.
    trend = earlier_runs(store, report.dataset_version, wire.get("models"), started, exclude=run_id)
    try:
        (path,) = write_outputs(wire, html=out, history=trend)
    except OutputError as exc:
        raise HistoryError(str(exc)) from None
    return str(path)


def history_main(argv: list[str]) -> int:
    """``groundeval history list|show|compare``.

    Returns:
        0 when the command printed its result; 1 when ``compare`` finds that B
        regresses past the floors; 2 for a usage error, an unknown run or an
        unusable database (one line on stderr).
    """
    try:
        args = _history_parser().parse_args(argv)
    except _Exit as exc:
        return exc.status
    except _UsageError as exc:
        print(f"groundeval history: {exc}", file=sys.stderr)
        return 2
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
                cmp = compare_runs(store, args.run_a, args.run_b, floors=floors)
                lines = format_comparison(cmp)
                status = 1 if cmp.regressed else 0
    except HistoryError as exc:
        print(f"groundeval history {args.command}: {exc}", file=sys.stderr)
        return 2
    for line in lines:
        print(line)
    return status


def _rejudge_parser() -> _Parser:
    parser = _Parser(prog="groundeval rejudge", description="Judge a recorded run's answers again, without the target")
    parser.add_argument("run", help="Run id, unique id prefix, 'latest' or 'latest~N'")
    parser.add_argument("--all", action="store_true", help="Judge every paragraph again, not only unjudged ones")
    parser.add_argument("--judge-url", help="OpenAI-compatible chat endpoint of the judge")
    parser.add_argument("--judge-model", help="Judge model name")
    _history_option(parser)
    return parser


def _llm_judge(args: argparse.Namespace) -> Judge:
    from .rejudge_judge import judge_from_args

    return judge_from_args(args)


def rejudge_main(argv: list[str], judge_factory: JudgeFactory | None = None) -> int:
    """``groundeval rejudge RUN [--all] [--judge-url U --judge-model M] [--history URL]``.

    Args:
        argv: Arguments after ``rejudge``.
        judge_factory: Builds the judge from the parsed arguments; raises ``HistoryError``
            when it cannot. The default is the LLM judge (``history.rejudge_judge.judge_from_args``):
            ``--judge-url`` and ``--judge-model`` are then required.

    Returns:
        0 when the new judgment set is complete and became current (or nothing needed
        judging); 1 when some paragraph got no parseable verdict (the set is kept as an
        incomplete attempt, nothing current replaced; stderr says how many and why);
        2 for a usage error, an unknown or unfinished run, or an unusable database.
    """
    try:
        args = _rejudge_parser().parse_args(argv)
    except _Exit as exc:
        return exc.status
    except _UsageError as exc:
        print(f"groundeval rejudge: {exc}", file=sys.stderr)
        return 2
    try:
        judge = (judge_factory or _llm_judge)(args)
        try:
            with _open(args.history) as store:
                progress = tty_progress(sys.stderr) if sys.stderr.isatty() else None
                result = rejudge_run(store, args.run, judge, all_paragraphs=args.all, progress=progress)
        finally:
            close = getattr(judge, "close", None)
            if callable(close):
                close()
    except HistoryError as exc:
        print(f"groundeval rejudge: {exc}", file=sys.stderr)
        return 2
    failed = result.errors + result.unparseable
    print(f"run {result.run_id}: {result.judged} of {result.candidates} paragraph(s) given a parseable verdict, "
          f"{failed} failed ({result.errors} judge error(s), {result.unparseable} unparseable)")  # fmt: skip
    for message in result.error_messages:
        print(f"  judge failed: {message}")
    if result.set_id is None:
        print("nothing to judge: every paragraph has a parseable verdict (--all judges them again)")
    elif result.complete:
        print(f"judgment set {result.set_id} (judge {result.judge_model or '-'}) is complete and now current; "
              f"set {result.replaced_set} is kept")  # fmt: skip
    else:
        print(
            f"groundeval rejudge: judgment set {result.set_id} is incomplete and kept as an attempt: {result.reason}; "
            f"the current set ({result.replaced_set}), the run's metrics and its gate are unchanged (docs/history.md)",
            file=sys.stderr,
        )
    if result.gate is not None:
        unchanged = "" if result.complete and result.set_id is not None else " (unchanged)"
        print(f"gate: {'PASS' if result.gate.get('passed') else 'FAIL'}{unchanged}")
    if result.metrics is not None:
        shown = {k: result.metrics.get(k) for k in ("citationSupportedRate", "wrongSpeakerRate", "coverageScoreMean")}
        print("metrics: " + json.dumps(shown))
    return 0 if result.complete else 1
