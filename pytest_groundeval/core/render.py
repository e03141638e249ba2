"""Plain-text rendering of gate checks and reports, for the terminal summary and the CLI."""

from __future__ import annotations

from typing import Any

from .gate import GateCheck, GateResult
from .metrics import METRIC_DIRECTIONS, format_value
from .report import Report
from .text import shorten

__all__ = ["DETAIL_CHARS", "format_check", "format_report", "format_value", "unbounded_lines"]

DETAIL_CHARS = 200
"""Characters of an item's detail or error shown on its one line of ``format_report``."""


def format_check(check: GateCheck) -> str:
    """One line for the terminal summary and the CLI: metric, value, op bound, outcome, reason.

    Example: ``claimSupportPrecision      0.9412 >= 0.9000     PASS  0.9412 >= 0.9000``.
    """
    value = format_value(check.metric, check.value)
    bound = format_value(check.metric, check.bound)
    return f"{check.metric:<26} {value:>12} {check.op} {bound:<12} {check.outcome:<4}  {check.reason}"




def unbounded_lines(metrics: Any, result: GateResult) -> list[str]:
    """Lines for measured metrics that no check covers (reported, not gated), aligned with ``format_check``."""
    checked = {c.metric for c in result.checks}
    values = metrics.to_wire()
    return [
        f"{metric:<26} {format_value(metric, values[metric]):>12}    {'':<12} INFO  reported; no bound set"
        for metric in METRIC_DIRECTIONS
        if metric not in checked and values.get(metric) is not None
    ]


def format_report(report: Report) -> list[str]:
    """Lines describing a report: header, metrics, gate checks, then failed and errored items."""
    lines = [
        f"dataset {report.dataset_version}  models generate={report.models.generate} embed={report.models.embed}",
        f"{report.metrics.items} items in {report.duration_ms / 1000:.1f} s"
        f"  (plugin {report.environment.plugin_version}, git {report.environment.git_commit or 'n/a'})",
        "metrics:",
    ]
    for name, value in report.metrics.to_wire().items():
        if name == "itemsByKind":
            counts = ", ".join(f"{kind} {n}" for kind, n in value.items())
            lines.append(f"  {name:<26} {counts}")
        else:
            lines.append(f"  {name:<26} {format_value(name, value)}")
    lines.append("gate:")
    lines.extend(f"  {format_check(check)}" for check in report.gate.checks)
    lines.append(f"gate: {'PASS' if report.gate.passed else 'FAIL'}")
    for item in report.items:
        if item.errored:
            lines.append(f"ERROR {item.kind}::{item.id}  {shorten(item.error or '', DETAIL_CHARS)}")
        elif not item.passed:
            lines.append(f"FAIL  {item.kind}::{item.id}  {shorten(item.detail, DETAIL_CHARS)}")
    return lines
