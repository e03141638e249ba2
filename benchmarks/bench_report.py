"""Benchmark 6 (issue 8): what writing the report costs, for 100,000 items.

Run: ``python benchmarks/bench_report.py [--report-items 100000] [--run-items 2000] [--rounds 3]``
(about a minute); add ``--full-items N`` for whole runs with and without ``--eval-report``.

Default, per item, in one invocation:

1. *run*: ``pytest --eval-dataset=D --eval-url=URL --eval-report=R`` over
   ``--run-items`` qa items against ``instant_target.py`` (a target that answers
   at once, so the run is as short as a run can be: the harshest denominator).
   Its wall time / items is the per-item cost of a run. The report it writes
   provides the outcomes used next.
2. *report*: in this process, a ``ReportWriter`` receives ``--report-items``
   outcomes (the run's own outcomes, repeated with fresh ids) through
   ``add_item`` as ``GateSession`` hands them over (a validated ``ItemOutcome``),
   then ``finish`` writes the file. Wall time / items is the per-item cost of the
   report; tracemalloc's peak over the whole writer shows memory stays flat.

The ratio report / run per item is the report's share of a run (goal ≤ 3%).

With ``--full-items N``: whole runs of N items with and without
``--eval-report``, interleaved, and the difference of their medians relative to
the run without it. At a few thousand items the machine's noise is larger than
3%, so this is the cross-check, not the figure.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import _harness as h
from synthetic import write_dataset

from pytest_groundeval.core.metrics import Metrics
from pytest_groundeval.core.outcome import ItemOutcome
from pytest_groundeval.core.report import ReportWriter, read_report

GOAL = 0.03


def plugin_command(dataset: Path, url: str, report: Path | None) -> list[str]:
    cmd = [h.PYTHON, "-m", "pytest", *h.QUIET_PLUGINS, "-q", f"--eval-dataset={dataset}", f"--eval-url={url}"]
    cmd.append("--eval-api-key=k")
    if report is not None:
        cmd.append(f"--eval-report={report}")
    return cmd


def write_report(path: Path, templates: list[dict], count: int, header: dict) -> float:
    """Stream ``count`` outcomes through a ``ReportWriter``; return the wall seconds it took."""
    outcomes = []
    for i in range(count):
        wire = dict(templates[i % len(templates)], id=f"qa-{i:06d}")
        outcomes.append(ItemOutcome.model_validate(wire))  # what GateSession hands the writer
    started = time.perf_counter()
    with ReportWriter(path) as writer:
        for outcome in outcomes:
            writer.add_item(outcome)
        writer.finish(**header)
    return time.perf_counter() - started


def writer_peak_bytes(path: Path, templates: list[dict], count: int, header: dict) -> int:
    """tracemalloc's peak of the writer alone (outcomes made one at a time, as a run delivers them)."""
    tracemalloc.start()
    try:
        with ReportWriter(path) as writer:
            for i in range(count):
                writer.add_item(ItemOutcome.model_validate(dict(templates[i % len(templates)], id=f"qa-{i:06d}")))
            writer.finish(**header)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def header_of(report_path: Path) -> dict:
    report = read_report(report_path)
    return {
        "dataset_version": report.dataset_version,
        "models": report.models.to_wire(),
        "started_at_ms": report.started_at_ms,
        "duration_ms": report.duration_ms,
        "metrics": Metrics.model_validate(report.metrics.to_wire()),
        "gate": report.gate,
        "environment": report.environment.to_wire(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report-items", type=int, default=100_000, help="outcomes streamed into the report")
    parser.add_argument("--run-items", type=int, default=2000, help="qa items of the run measured per item")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds")
    parser.add_argument("--full-items", type=int, default=0, help="also compare whole runs of N items (0: skip)")
    args = parser.parse_args(argv)

    print(
        f"benchmark 6: report of {args.report_items} items vs a run of {args.run_items}, {args.rounds} rounds; "
        f"{h.machine_note()}"
    )
    run_s: list[float] = []
    report_s: list[float] = []
    full: dict[str, list[float]] = {"without report": [], "with report": []}
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp, h.instant_target() as url:
        work = Path(tmp)
        cwd = h.write_ini(work / "run")
        dataset = write_dataset(cwd / "dataset", args.run_items).parent
        run_report = work / "run-report.json"
        templates: list[dict] = []
        header: dict = {}
        for round_ in range(args.rounds):
            measured = h.check(
                h.run_measured(plugin_command(dataset, url, run_report), cwd=cwd, env=h.pytest_env()), "run"
            )
            run_s.append(measured.wall_s)
            if not templates:
                templates = json.loads(run_report.read_text(encoding="utf-8"))["items"]
                header = header_of(run_report)
                if not all(t["pass"] for t in templates):
                    raise RuntimeError("the run's items did not all pass; the instant target is not answering right")
            report_s.append(write_report(work / "big-report.json", templates, args.report_items, header))
            print(f"  round {round_ + 1}: run {run_s[-1]:.2f} s, report {report_s[-1]:.2f} s")
        written = read_report(work / "big-report.json")
        if len(written.items) != args.report_items:
            raise RuntimeError(f"the report holds {len(written.items)} items, expected {args.report_items}")
        size_mib = (work / "big-report.json").stat().st_size / 2**20
        peak = writer_peak_bytes(work / "peak-report.json", templates, args.report_items, header)
        if args.full_items:
            full_dataset = write_dataset(cwd / "full-dataset", args.full_items).parent
            for _ in range(args.rounds):
                for name, report in (("without report", None), ("with report", work / "full-report.json")):
                    cmd = plugin_command(full_dataset, url, report)
                    full[name].append(h.check(h.run_measured(cmd, cwd=cwd, env=h.pytest_env()), name).wall_s)

    run_per_item = h.median(run_s) / args.run_items
    report_per_item = h.median(report_s) / args.report_items
    share = report_per_item / run_per_item
    print(
        h.table(
            ["measure", "median (min–max)", "per item"],
            [
                [f"run of {args.run_items} items (wall s)", h.spread(run_s), f"{run_per_item * 1e6:.0f} µs"],
                [
                    f"report of {args.report_items} items (wall s)",
                    h.spread(report_s),
                    f"{report_per_item * 1e6:.1f} µs",
                ],
            ],
        )
    )
    print(
        f"report file: {size_mib:.1f} MiB; writer's traced peak over {args.report_items} items: {peak / 1024:.0f} KiB"
    )
    print(f"report / run per item: {share * 100:.2f}% (goal <= {GOAL * 100:.0f}%: {h.verdict(share, GOAL, True)})")
    if args.full_items:
        without, with_ = h.median(full["without report"]), h.median(full["with report"])
        print(
            f"whole runs of {args.full_items} items: without report {h.spread(full['without report'])} s, "
            f"with report {h.spread(full['with report'])} s: {(with_ - without) / without * 100:+.1f}%"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
