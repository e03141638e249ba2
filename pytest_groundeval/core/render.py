"""Plain-text rendering of gate checks and reports, for the terminal summary and the CLI."""

from __future__ import annotations

from typing import Any

from .gate import GateCheck, GateResult, verdict
from .metrics import METRIC_DIRECTIONS, format_table, format_value
from .report import Report
from .text import shorten

__all__ = [
    "DETAIL_CHARS",
    "citation_lines",
    "format_check",
    "format_report",
    "format_value",
    "judge_problem_lines",
    "unbounded_lines",
    "usage_lines",
]

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


def citation_lines(metrics: Any, judge_model: str | None = None) -> list[str]:
    """The judge's lines of the summary (docs/citation.md): verdicts, catches, agreement with people.

    Empty when no paragraph was sent to a judge. Example::

        citation judge mock-judge: 120 paragraph(s): supported 84, partial 0, unsupported 12, ...
        citation catches: deterministic 12, judge 36 (judge-only 24), deterministic-only 0; wrong_speaker 12: ...
        judge vs human labels (expected→judge): supported→supported 72, wrong_speaker→supported 12, ...
    """
    verdicts = metrics.verdict_distribution
    catches = metrics.citation_catches
    if not verdicts or not catches:
        return []
    named = f" {judge_model}" if judge_model else ""
    lines = [
        f"citation judge{named}: {sum(verdicts.values())} paragraph(s): "
        + ", ".join(f"{label} {count}" for label, count in verdicts.items()),
        f"citation catches: deterministic {catches['deterministicCatches']}, judge {catches['judgeCatches']} "
        f"(judge-only {catches['judgeOnlyCatches']}), deterministic-only {catches['deterministicOnlyCatches']} "
        f"(the judge said supported); wrong_speaker {catches['wrongSpeaker']}: the metadata check had caught "
        f"{catches['wrongSpeakerDeterministic']}, judge-only {catches['wrongSpeakerJudgeOnly']}",
    ]
    if metrics.judge_confusion:
        lines.append(f"judge vs human labels (expected→judge): {format_table(metrics.judge_confusion)}")
    return lines


def _unknown(count: int) -> str:
    return f"; {count} without usage: tokens unknown" if count else ""


def usage_lines(metrics: Any) -> tuple[list[str], list[str]]:
    """The summary's token lines, and its warnings about what could not be priced (docs/gate.md, "Cost").

    Returns:
        ``(lines, warnings)``. Lines: one per judge model (``judgeTokens``), a judge total when
        there are several, one for the target (``targetTokens``). Warnings: models missing
        from the prices file (``unpricedModels``), named with their tokens. Example::

            judge tokens mock-judge: prompt 427295, completion 19860 (652 replies)
            target tokens: prompt 88120, completion 9311 (120 generate calls)
            cost: not priced: judge model 'gpt-x' (447155 tokens): not in the prices file; its cost is n/a
    """
    lines = []
    judge = metrics.judge_tokens or {}
    for model, cell in judge.items():
        lines.append(f"judge tokens {model}: prompt {cell['promptTokens']}, completion {cell['completionTokens']} "
                     f"({cell['replies']} replies{_unknown(cell['repliesWithoutUsage'])})")  # fmt: skip
    if len(judge) > 1:
        total = {key: sum(cell[key] for cell in judge.values()) for key in next(iter(judge.values()))}
        lines.append(f"judge tokens, all models: prompt {total['promptTokens']}, completion "
                     f"{total['completionTokens']} ({total['replies']} replies{_unknown(total['repliesWithoutUsage'])})")  # fmt: skip
    target = metrics.target_tokens
    if target:
        lines.append(f"target tokens: prompt {target['promptTokens']}, completion {target['completionTokens']} "
                     f"({target['calls']} generate calls{_unknown(target['callsWithoutUsage'])})")  # fmt: skip
    warnings = []
    for role, models in (metrics.unpriced_models or {}).items():
        for model, tokens in models.items():
            warnings.append(f"cost: not priced: {role} model {model!r} ({tokens} tokens) is not in the prices file; "
                            f"{role}CostUsd is n/a, never 0")  # fmt: skip
    return lines, warnings


def judge_problem_lines(metrics: Any) -> list[str]:
    """The summary's lines for paragraphs the judge or the coverage scorer did not answer (docs/citation.md).

    One line each for non-zero ``judgeErrors`` (unjudged paragraphs), unparseable verdicts and
    ``scorerErrors``, whatever the gate bounds; the terminal prints them in the failure colour.
    Empty when every paragraph sent got an answer. Example::

        judge: 5 of 5 paragraph(s) left unjudged (judgeErrors): down, rate-limited or timed out
    """
    verdicts = metrics.verdict_distribution or {}
    asked = sum(verdicts.values())
    lines = []
    if metrics.judge_errors:
        lines.append(
            f"judge: {metrics.judge_errors} of {asked} paragraph(s) left unjudged (judgeErrors): "
            "down, rate-limited or timed out"
        )
    if verdicts.get("unparseable"):
        lines.append(
            f"judge: {verdicts['unparseable']} of {asked} paragraph(s) unparseable (unparseableRate "
            f"{format_value('unparseableRate', metrics.unparseable_rate)}): no reply could be read as a verdict"
        )
    if metrics.scorer_errors:
        lines.append(f"coverage scorer: {metrics.scorer_errors} paragraph(s) got no score (scorerErrors)")
    return lines


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
    lines.append(f"gate: {verdict(report.gate)}")
    for item in report.items:
        if item.errored:
            lines.append(f"ERROR {item.kind}::{item.id}  {shorten(item.error or '', DETAIL_CHARS)}")
        elif not item.passed:
            lines.append(f"FAIL  {item.kind}::{item.id}  {shorten(item.detail, DETAIL_CHARS)}")
    return lines
