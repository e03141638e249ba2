"""Plain-text rendering of gate checks and reports, for the terminal summary and the CLI."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .confidence import ConfidenceInterval
from .gate import GateCheck, GateResult, verdict
from .metrics import METRIC_DIRECTIONS, format_table, format_value
from .report import Report
from .text import shorten

__all__ = [
    "DETAIL_CHARS",
    "citation_lines",
    "format_check",
    "format_interval",
    "format_report",
    "format_value",
    "judge_problem_lines",
    "jury_lines",
    "unbounded_lines",
    "usage_lines",
]

DETAIL_CHARS = 200
"""Characters of an item's detail or error shown on its one line of ``format_report``."""


VALUE_WIDTH = 12
"""Characters of the value column of ``format_check``, right-aligned."""

INTERVAL_WIDTH = 17
"""Characters ``format_interval`` adds to a value: `` [0.9812, 0.9961]``; the value column of a summary
with intervals is ``VALUE_WIDTH + INTERVAL_WIDTH`` wide, so every line's operator stays aligned."""


def format_interval(metric: str, interval: ConfidenceInterval | Mapping[str, Any] | None) -> str:
    """A confidence interval as printed after its metric's value: ``[0.9812, 0.9961]``; empty for none."""
    if interval is None:
        return ""
    if isinstance(interval, Mapping):
        interval = ConfidenceInterval.model_validate(interval)
    return f"[{format_value(metric, interval.low)}, {format_value(metric, interval.high)}]"


def _value(metric: str, value: Any, confidence: Mapping[str, Any] | None) -> str:
    """The value column: the value, right-aligned; given ``confidence``, with the metric's interval after it
    (``0.9906 [0.9812, 0.9961]``) in a column wide enough for one."""
    shown = format_value(metric, value)
    if confidence is None:
        return f"{shown:>{VALUE_WIDTH}}"
    interval = format_interval(metric, confidence.get(metric)) if value is not None else ""
    return f"{shown + (' ' + interval if interval else ''):>{VALUE_WIDTH + INTERVAL_WIDTH}}"


def format_check(check: GateCheck, confidence: Mapping[str, Any] | None = None) -> str:
    """One line for the terminal summary and the CLI: metric, value, op bound, outcome, reason.

    Example: ``claimSupportPrecision      0.9412 >= 0.9000     PASS  0.9412 >= 0.9000``. Given the
    run's ``confidence`` (``Report.confidence``), a rate's value is followed by its interval and the
    value column is wider: ``retrievalRecall   0.9906 [0.9812, 0.9961] >= 0.9000 ...`` (docs/statistics.md).
    """
    bound = format_value(check.metric, check.bound)
    value = _value(check.metric, check.value, confidence)
    return f"{check.metric:<26} {value} {check.op} {bound:<12} {check.outcome:<4}  {check.reason}"


def unbounded_lines(metrics: Any, result: GateResult, confidence: Mapping[str, Any] | None = None) -> list[str]:
    """Lines for measured metrics that no check covers (reported, not gated), aligned with ``format_check``
    (given the same ``confidence``)."""
    checked = {c.metric for c in result.checks}
    values = metrics.to_wire()
    return [
        f"{metric:<26} {_value(metric, values[metric], confidence)}    {'':<12} INFO  reported; no bound set"
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
    return lines + jury_lines(metrics)


def jury_lines(metrics: Any) -> list[str]:
    """A jury's lines of the summary (docs/judges.md, "Juries"): each judge's verdicts and which judge
    disagrees with the human labels most (the lowest kappa); ``judgeAlpha`` has its own line among the
    metrics. Empty without a jury. Example::

        jury judge mock-judge: supported 1, partial 1, unsupported 1, wrong_speaker 1, wrong_attribution 1
        jury judge mock-judge-strict: partial 1, unsupported 2, wrong_speaker 1, wrong_attribution 1
        judge vs human labels by judge (kappa): mock-judge 0.7500, mock-judge-strict 0.3182; most in disagreement
        with the humans: mock-judge-strict (kappa 0.3182)
    """
    by_model = metrics.verdict_distribution_by_model
    if not by_model:
        return []
    lines = [f"jury judge {model}: {format_table(counts)}" for model, counts in by_model.items()]
    kappas = metrics.judge_kappa_by_model
    if kappas:
        line = f"judge vs human labels by judge (kappa): {format_table(kappas)}"
        measured = [(kappa, model) for model, kappa in kappas.items() if kappa is not None]
        if measured:
            kappa, model = min(measured, key=lambda pair: pair[0])
            line += f"; most in disagreement with the humans: {model} (kappa {kappa:.4f})"
        lines.append(line)
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
            target tokens: unknown (5 generate calls, none reported usage)
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
    if target and target["calls"] and target["callsWithoutUsage"] == target["calls"]:
        # No call reported usage: "prompt 0" would read as a measured zero (docs/gate.md, "Cost").
        lines.append(f"target tokens: unknown ({target['calls']} generate calls, none reported usage)")
    elif target:
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
    for model, counts in (metrics.verdict_distribution_by_model or {}).items():
        missed = [f"{counts[label]} {what}" for label, what in (("unjudged", "left unjudged"),
                  ("unparseable", "unparseable")) if counts.get(label)]  # fmt: skip
        if missed:
            lines.append(
                f"jury judge {model}: {' and '.join(missed)} of {sum(counts.values())} paragraph(s): no vote in the "
                "jury's verdict, counted as its disagreements with the human labels"
            )
    if metrics.scorer_errors:
        lines.append(f"coverage scorer: {metrics.scorer_errors} paragraph(s) got no score (scorerErrors)")
    return lines


def format_report(report: Report) -> list[str]:
    """Lines describing a report: header, metrics, gate checks, then failed and errored items."""
    lines = [
        f"dataset {report.dataset_version}  models generate={report.models.generate} embed={report.models.embed}",
        (
            f"{len(report.items)} items × {report.repeat} attempts"
            if report.repeat > 1
            else f"{report.metrics.items} items"
        )
        + f" in {report.duration_ms / 1000:.1f} s"
        f"  (plugin {report.environment.plugin_version}, git {report.environment.git_commit or 'n/a'})",
        "metrics:",
    ]
    confidence = report.confidence or {}
    for name, value in report.metrics.to_wire().items():
        if name == "itemsByKind":
            counts = ", ".join(f"{kind} {n}" for kind, n in value.items())
            lines.append(f"  {name:<26} {counts}")
        else:
            shown = f"{format_value(name, value)} {format_interval(name, confidence.get(name))}".rstrip()
            lines.append(f"  {name:<26} {shown}")
    if report.confidence is not None:
        lines.append(f"intervals: {report.confidence_level * 100:g}% confidence (docs/statistics.md)")
    lines.append("gate:" if report.gate.gate_on == "point" else "gate (on the intervals' ends, --eval-gate-on):")
    lines.extend(f"  {format_check(check, report.confidence)}" for check in report.gate.checks)
    lines.append(f"gate: {verdict(report.gate)}")
    for item in report.items:
        if item.errored:
            lines.append(f"ERROR {item.kind}::{item.id}  {shorten(item.error or '', DETAIL_CHARS)}")
        elif not item.passed:
            lines.append(f"FAIL  {item.kind}::{item.id}  {shorten(item.detail, DETAIL_CHARS)}")
    return lines
