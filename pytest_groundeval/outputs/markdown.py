"""The gate as a Markdown table, for a CI job summary (``GITHUB_STEP_SUMMARY``) or a PR comment.

Works on a report's wire dict (``pytest_groundeval.core.report``); every cell is
escaped so that an item's text cannot break the table or inject HTML into the
rendered summary (docs/ci.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.gate import verdict as gate_verdict
from ._format import metric_value, models_label, one_line, value_with_interval
from .item_view import item_outcome

MAX_ITEMS_LISTED = 10
"""Failed or errored items listed under the table; the rest are counted."""

_CELL_CHARS = 200


def cell(text: Any) -> str:
    """Text made safe for one Markdown table cell: one line, pipes, HTML and backticks escaped."""
    flat = one_line(str(text), _CELL_CHARS)
    # Characters Markdown reads as markup: escaped first, so the entities below stay intact.
    for char in ("\\", "*", "_", "[", "]", "#", "~"):
        flat = flat.replace(char, "\\" + char)
    for char, entity in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("|", "&#124;"), ("`", "&#96;")):
        flat = flat.replace(char, entity)
    return flat


_OUTCOME_MARK = {"PASS": "✅ PASS", "FAIL": "❌ FAIL", "SKIP": "⏭️ SKIP"}


def render_markdown(report: Mapping[str, Any], *, title: str = "groundeval") -> str:
    """The report's gate as Markdown: a heading with the verdict, one table row per check, the failures.

    Args:
        report: A report's wire dict (as read from ``--eval-report`` or ``groundeval merge``).
        title: Heading prefix (useful when one job summary holds several datasets).

    Returns:
        Markdown ending in a newline: ``### <title> gate: PASS|FAIL — dataset …``, a
        table ``| check | value | bound | outcome | reason |`` (a value with its confidence
        interval when the report has one), the measured metrics no check covers, and up to ``MAX_ITEMS_LISTED`` failed or errored
        items with their one-line detail.

    Raises:
        KeyError: ``report`` lacks ``gate``, ``metrics`` or ``datasetVersion``.
    """
    gate = report["gate"]
    metrics = report["metrics"]
    verdict = gate_verdict(gate)
    items = report.get("items") or []
    # One pass, keeping only the items listed (the items may be a spool on disk, ``outputs.spool``).
    listed: dict[str, list[Mapping[str, Any]]] = {"error": [], "fail": []}
    counts = {"error": 0, "fail": 0, "pass": 0}
    for item in items:
        outcome = item_outcome(item)
        counts[outcome] += 1
        if outcome != "pass" and len(listed[outcome]) < MAX_ITEMS_LISTED:
            listed[outcome].append(item)
    lines = [
        f"### {cell(title)} gate: {('✅' if gate.get('gated', True) is not False else '➖') if gate['passed'] else '❌'} {verdict} — dataset {cell(report['datasetVersion'])}",
        "",
        f"{metrics.get('items', sum(counts.values()))} items ({counts['fail']} failed, {counts['error']} errors), "
        f"models {cell(models_label(report.get('models')))}"
        + (" — **interrupted: the metrics cover only part of the selection**" if report.get("interrupted") else ""),
        "",
    ]
    merge = report.get("merge")
    if merge:
        shards = ", ".join(merge.get("shards", []))
        missing = merge.get("missingShards") or []
        lines += [
            f"Merged from shards {cell(shards)}"
            + (f"; **missing shards: {cell(', '.join(missing))}**" if missing else "")
            + (f"; **{merge.get('missingItems')} dataset items missing**" if merge.get("missingItems") else ""),
            "",
        ]
    lines += ["| check | value | bound | outcome | reason |", "|---|---:|---:|---|---|"]
    checked = set()
    for check in gate["checks"]:
        checked.add(check["metric"])
        op = check.get("op", "")
        shown_op = {">=": "≥", "<=": "≤"}.get(op, op)
        bound = "" if check.get("bound") is None else f"{shown_op} {metric_value(check['metric'], check['bound'])}"
        value = value_with_interval(check["metric"], check.get("value"), report.get("confidence"))
        lines.append(
            f"| {cell(check['metric'])} | {cell(value)} | {cell(bound)} "
            f"| {_OUTCOME_MARK.get(check['outcome'], cell(check['outcome']))} | {cell(check.get('reason', ''))} |"
        )
    info = [
        (name, value)
        for name, value in metrics.items()
        if name not in checked and name not in ("items", "itemsByKind", "qaClaims") and value is not None
    ]
    if info:
        lines += ["", "Reported, not gated: " + ", ".join(f"{cell(n)} {cell(metric_value(n, v))}" for n, v in info)]
    problems = listed["error"] + listed["fail"]
    if problems:
        lines += ["", "| item | kind | outcome | detail |", "|---|---|---|---|"]
        for item in problems[:MAX_ITEMS_LISTED]:
            is_error = item.get("error") is not None
            text = item.get("error") if is_error else item.get("detail", "")
            lines.append(
                f"| {cell(item['id'])} | {cell(item.get('kind', ''))} | {'error' if is_error else 'fail'} | {cell(text)} |"
            )
        if counts["error"] + counts["fail"] > MAX_ITEMS_LISTED:
            lines.append(
                f"\n… and {counts['error'] + counts['fail'] - MAX_ITEMS_LISTED} more failed or errored items "
                "(see the HTML report)"
            )
    return "\n".join(lines) + "\n"
