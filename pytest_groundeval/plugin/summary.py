"""The terminal summary of a run with a dataset (docs/gate.md): each dataset's gate, then the verdict.

Printed with ``write_sep`` / ``write_line`` from ``pytest_terminal_summary``
(``plugin.controller``): per dataset its lineage and counts, every check
(``core.render.format_check``, each rate with its confidence interval), the metrics no
check covers, the intervals' level, the judge's lines,
notes on items that never ran or could not be run, and its baseline; then the
report, history and output files written, and ``gate: PASS|FAIL|NOT GATED``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from ..core.confidence import DEFAULT_CONFIDENCE
from ..core.gate import NOT_GATED, verdict
from ..core.lineage import UNKNOWN
from ..core.render import citation_lines, format_check, judge_problem_lines, unbounded_lines, usage_lines
from ..core.text import shorten
from ..history.urls import describe_url
from ..outputs.write import shown_path
from .history import HISTORY_EXIT, HISTORY_FAILED
from .state import DatasetRun

if TYPE_CHECKING:
    from .controller import Controller

OUTPUT_EXIT = (
    "exit status 1: an output could not be written as asked (above), so the session fails whatever the gate says "
    "(docs/guarantees.md)"
)
"""The summary line after the gate verdict when a report, page or Markdown file was not written, or was
written without what a report extension added (``Controller.output_errors``)."""


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def write_summary(tr: pytest.TerminalReporter, controller: Controller) -> None:
    """The session's summary: a usage error found at the end, or each gated dataset and the verdict."""
    if controller.usage_error:
        tr.write_sep("=", "groundeval gate", red=True)
        tr.write_line(f"groundeval: {controller.usage_error}")
        return
    runs = [run for run in controller.runs.values() if run.gate is not None]
    if not runs:
        return
    settings = controller.settings
    for run in runs:
        _summarise(tr, run, settings.judge_model, titled=len(runs) > 1, confidence_level=settings.confidence)
    for notice in controller.notices:  # a judge's fallback, once per judge and fallback (docs/judges.md)
        tr.write_line(f"warning: {notice}", yellow=True)
    if settings.report is not None:
        tr.write_line(f"report: {shown_path(settings.report)}")
    if controller.history is not None:
        _summarise_history(tr, controller, runs)
    for path in controller.written:
        tr.write_line(f"{'html' if path == settings.html else 'markdown'}: {shown_path(path)}")
    for message in controller.output_errors:
        tr.write_line(f"groundeval: {message}", red=True)
    if controller.step_summary_error:
        tr.write_line(f"warning: {controller.step_summary_error}", yellow=True)
    gates = [run.gate for run in runs if run.gate is not None]
    passed = all(gate.passed for gate in gates)
    gated = all(gate.gated for gate in gates)
    if len(runs) > 1:
        failing = [run.manifest_version() for run, gate in zip(runs, gates) if not gate.passed]
        word = ("PASS" if gated else NOT_GATED) if passed else f"FAIL ({', '.join(failing)})"
        tr.write_line(f"gate: {word}", green=passed and gated, yellow=passed and not gated, red=not passed, bold=True)
    else:
        word = verdict(gates[0])
        tr.write_line(f"gate: {word}", green=passed and gated, yellow=passed and not gated, red=not passed, bold=True)
    if not gated:
        tr.write_line(
            "note: --eval-no-gate: metrics measured and reported, no quality bound applied; "
            "only errored items fail the run (docs/gate.md)",
            yellow=True,
        )
    if controller.history is not None and controller.history.failure is not None:
        tr.write_line(HISTORY_EXIT, red=True, bold=True)
    if controller.output_errors:
        tr.write_line(OUTPUT_EXIT, red=True, bold=True)
    if controller.sharded and settings.shard is not None:
        index, count = settings.shard
        tr.write_line(
            f"note: shard {index}/{count}: this gate covers the shard's items only; errors fail the shard, "
            "its metrics do not: groundeval merge gates the whole run (docs/ci.md)",
            yellow=True,
        )


def _summarise_history(tr: pytest.TerminalReporter, controller: Controller, runs: list[DatasetRun]) -> None:
    history = controller.history
    assert history is not None
    if history.failure is not None:
        tr.write_line(HISTORY_FAILED + history.failure, red=True)
        return
    where = describe_url(history.writer.url)
    for run in runs:
        tr.write_line(f"history: run {history.run_id(run.key)} ({run.manifest_version()}) in {where}")


def _summarise(
    tr: pytest.TerminalReporter,
    run: DatasetRun,
    judge_model: str | None,
    *,
    titled: bool,
    confidence_level: float = DEFAULT_CONFIDENCE,
) -> None:
    assert run.gate is not None and run.metrics is not None
    m = run.models or {}
    title = f"groundeval gate: {run.manifest_version()}" if titled else "groundeval gate"
    tr.write_sep("=", title, bold=True)
    items = len(run.seen)
    # Under --eval-repeat the metrics count attempts; the items failed and errored count items.
    attempts = f"{run.metrics.items} attempts; " if run.metrics.items != items else ""
    tr.write_line(
        f"dataset {run.manifest_version()}  "
        f"lineage generate={m.get('generate', UNKNOWN)} embed={m.get('embed', UNKNOWN)}  "
        f"items {items} ({attempts}failed {run.failed}, errors {run.errored})"
    )
    if run.lineage_conflict:
        tr.write_line(f"warning: {run.lineage_conflict}", yellow=True)
    for check in run.gate.checks:
        tr.write_line(format_check(check, run.confidence), red=check.outcome == "FAIL", green=check.outcome == "PASS")
    for line in unbounded_lines(run.metrics, run.gate, run.confidence):
        tr.write_line(line)
    if run.confidence is not None and any(interval is not None for interval in run.confidence.values()):
        tr.write_line(f"intervals: {confidence_level * 100:g}% confidence (docs/statistics.md)")
    if run.gate.gate_on == "lower-bound":
        tr.write_line(
            "note: --eval-gate-on=lower-bound: each floor is compared with its metric's interval's low end, "
            "each ceiling with its high end (docs/gate.md)"
        )
    for line in citation_lines(run.metrics, judge_model):
        tr.write_line(line)
    for line in judge_problem_lines(run.metrics):
        tr.write_line(line, red=True)
    tokens, unpriced = usage_lines(run.metrics)
    for line in tokens:
        tr.write_line(line)
    for line in unpriced:
        tr.write_line(line, yellow=True)
    if run.not_run:
        tr.write_line(
            f"note: {_plural(run.not_run, 'item')} of {items} never ran; they count as errors (notRun), never dropped",
            yellow=True,
        )
    if run.errored - run.not_run:
        misses = run.misses()
        kept = f"they stay in {', '.join(misses)} as misses" if misses else "they count as errors"
        tr.write_line(
            f"note: {_plural(run.errored - run.not_run, 'item')} could not be run; {kept}, never dropped", yellow=True
        )
    first = run.first_error or run.first_not_run
    if items and run.errored >= items and first:
        # A floor would change nothing (core.gate.nothing_gated_check): say what happened instead.
        tr.write_line(f"note: every item errored, so nothing was measured; the first error: {shorten(first, 500)}",
                      red=True)  # fmt: skip
    if run.baseline_path is not None:
        tr.write_line(f"baseline: {shown_path(run.baseline_path)}")
    if titled:
        tr.write_line(
            f"gate {run.manifest_version()}: {verdict(run.gate)}",
            green=run.gate.passed and run.gate.gated,
            red=not run.gate.passed,
        )
