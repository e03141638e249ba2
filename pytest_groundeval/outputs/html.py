"""The HTML report: one self-contained, offline page made from a saved report (docs/ci.md).

The page needs no network: styles and the one script are inline, charts are SVG
drawn in Python (``charts``), and a content security policy (``default-src
'none'`` plus hashes of the page's own style and script) forbids every fetch and
every other script. Everything from the report is untrusted text (answers come
from the system under test): the server-side parts go through ``html.escape``;
items travel as JSON in a ``<script type="application/json">`` element whose
``<``, ``>`` and ``&`` are written as ``\\u003c``… escapes, and the page's script
puts them in the document with ``textContent`` only, never as markup.

What the page shows of each item is ``item_view``'s; the page's markup, style sheet and
script are ``html_assets``.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from html import escape
from typing import Any, TypedDict

from ..core.gate import verdict as gate_verdict
from ..core.metrics import METRIC_DIRECTIONS, metric_specs
from . import charts
from ._format import metric_value, models_label, one_line, value_with_interval
from .html_assets import ITEMS_SECTION, SCRIPT, STYLE
from .html_citation import judge_section
from .item_view import OUTCOME_ORDER, as_list, item_outcome, item_view, paragraph_verdict
from .verdicts import VERDICT_MEANINGS, VERDICT_TONES, legend, tone

FAILURES_SHOWN = 10
"""Failed and errored items listed under the gate (all of them are first in the item table)."""
HISTORY_RUNS = 30
"""Runs of history drawn in the trends (the most recent)."""

NO_EARLIER_RUN = "No earlier run of this dataset and model lineage to compare this run with."
"""The comparison's text when the history holds no run before this one."""


def _json_island(data: Any) -> str:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    # Inside <script>, only "</script", "<!--" and "<script" can end or change the data; escaping
    # every <, > and & (and the JS line separators) makes the content plain JSON text.
    for char, repl in (
        ("&", "\\u0026"),
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, repl)
    return text


def _csp_hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode("ascii") + "'"


def _when(ms: Any) -> str:
    if isinstance(ms, bool) or not isinstance(ms, (int, float)):
        return str(ms) if ms is not None else "unknown"
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


# --- sections ----------------------------------------------------------------------------------


def _gate_section(report: Mapping[str, Any]) -> str:
    confidence = report.get("confidence")
    rows = []
    for check in report["gate"]["checks"]:
        metric = check["metric"]
        bound = "" if check.get("bound") is None else f"{check.get('op', '')} {metric_value(metric, check['bound'])}"
        outcome = str(check["outcome"])
        rows.append(
            f'<tr class="o-{escape(outcome.lower())}"><td>{escape(metric)}</td>'
            f'<td class="num">{escape(value_with_interval(metric, check.get("value"), confidence))}</td>'
            f'<td class="num">{escape(bound)}</td><td><span class="badge b-{escape(outcome.lower())}">'
            f"{escape(outcome)}</span></td><td>{escape(str(check.get('reason', '')))}</td></tr>"
        )
    return (
        '<section id="gate"><h2>Gate</h2><table class="grid"><thead><tr><th>metric</th><th>value</th>'
        "<th>bound</th><th>outcome</th><th>reason</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></section>"
    )


class _ItemTotals:
    """What the page's sections (all but the item list) need of the items, from one pass over them.

    The items may be a spool read from disk (``outputs.spool.ItemSpool``): nothing per item
    is held but its latency (issue 24, memory per item).
    """

    def __init__(self, items: Iterable[Mapping[str, Any]]) -> None:
        self.count = 0
        self.outcomes: Counter[str] = Counter()
        self.first_bad: dict[str, list[dict[str, Any]]] = {"fail": [], "error": []}
        """The views of the first ``FAILURES_SHOWN`` failed and errored items, each in report order."""
        self.by_kind: dict[str, Counter[str]] = {}
        self.latencies: list[float] = []
        self.paragraph_verdicts: Counter[str] = Counter()
        self.claim_verdicts: Counter[str] = Counter()
        for item in items:
            outcome = item_outcome(item)
            self.count += 1
            self.outcomes[outcome] += 1
            shown = self.first_bad.get(outcome)
            if shown is not None and len(shown) < FAILURES_SHOWN:
                shown.append(item_view(item))
            self.by_kind.setdefault(str(item.get("kind")), Counter())[outcome] += 1
            latency = item.get("latencyMs")
            if isinstance(latency, (int, float)):
                self.latencies.append(float(latency))
            extra = item.get("extra") or {}
            # any kind whose outcomes record judged paragraphs (citation's ``citationParagraphs``)
            for p in as_list(extra.get("citationParagraphs")):
                if isinstance(p, Mapping):
                    self.paragraph_verdicts[paragraph_verdict(p)] += 1
            for c in as_list(extra.get("claims")):
                if isinstance(c, Mapping):
                    self.claim_verdicts[str(c.get("verdict"))] += 1


def _failures_section(totals: _ItemTotals) -> str:
    """The items that failed or errored, first ``FAILURES_SHOWN`` of them, each a link that opens it below."""
    bad = [*totals.first_bad["fail"], *totals.first_bad["error"]]
    counts, total = totals.outcomes, totals.count
    if not bad:
        return f'<section id="failures"><h2>Failures</h2><p class="note">All {total} items passed.</p></section>'
    rows = "".join(
        f'<tr data-id="{escape(view["id"])}"><td><a href="#items" data-open="{escape(view["id"])}">'
        f"{escape(view['id'])}</a></td><td>{escape(view['kind'])}</td>"
        f'<td><span class="badge b-{view["outcome"]}">{view["outcome"]}</span></td>'
        f'<td class="detail" title="{escape(view["error"] or view["detail"] or "")}">'
        f"{escape(one_line(view['error'] or view['detail'] or '', 200))}</td></tr>"
        for view in bad[:FAILURES_SHOWN]
    )
    n_bad = counts["fail"] + counts["error"]
    more = (
        f'<p class="note">and {n_bad - FAILURES_SHOWN} more, listed first under <a href="#items">Items</a>.</p>'
        if n_bad > FAILURES_SHOWN
        else ""
    )
    return (
        f'<section id="failures"><h2>Failures: {counts["fail"]} failed, {counts["error"]} errored '
        f"of {total} items</h2>"
        '<table class="grid"><thead><tr><th>id</th><th>kind</th><th>outcome</th><th>why</th></tr></thead><tbody>'
        f"{rows}</tbody></table>{more}</section>"
    )


def _interval(report: Mapping[str, Any], metric: str) -> tuple[float | None, float | None]:
    """``(low, high)`` of ``metric``'s confidence interval in the report, or ``(None, None)``."""
    interval = (report.get("confidence") or {}).get(metric)
    if not isinstance(interval, Mapping):
        return None, None
    low, high = interval.get("low"), interval.get("high")
    if isinstance(low, bool) or isinstance(high, bool):
        return None, None
    if not isinstance(low, (int, float)) or not isinstance(high, (int, float)):
        return None, None
    return float(low), float(high)


class _Figure(TypedDict):
    """A metric with a unit or no upper limit (a count, milliseconds, tokens): listed, not drawn."""

    name: str
    value: str
    bound: str
    outcome: str


def _metric_rows(report: Mapping[str, Any]) -> tuple[list[charts.MetricBar], list[_Figure]]:
    """The gate's checks, then the metrics reported without a bound (INFO): the shares as bars,
    the rest (``MetricSpec.value_range`` with no upper end) as figures."""
    metrics = report["metrics"]
    level = report.get("confidenceLevel")
    shares = {spec.wire: spec.value_range[0] for spec in metric_specs() if spec.value_range[1] == 1.0}
    entries: list[tuple[str, Any, Any, str, str]] = [
        (check["metric"], check.get("value"), check.get("bound"), check.get("op", ""), str(check["outcome"]))
        for check in report["gate"]["checks"]
        if check["metric"] in METRIC_DIRECTIONS
    ]
    seen = {metric for metric, *_ in entries}
    entries += [
        (metric, metrics.get(metric), None, direction.op, "INFO")
        for metric, direction in METRIC_DIRECTIONS.items()
        if metric not in seen and metrics.get(metric) is not None
    ]
    bars: list[charts.MetricBar] = []
    figures: list[_Figure] = []
    for metric, value, bound, op, outcome in entries:
        op = op or METRIC_DIRECTIONS[metric].op
        if metric not in shares:
            shown_bound = "" if bound is None else f"{op} {metric_value(metric, bound)}"
            shown = value_with_interval(metric, value, report.get("confidence"))
            figures.append(_Figure(name=metric, value=shown, bound=shown_bound, outcome=outcome))
            continue
        bars.append(
            charts.MetricBar(
                name=metric,
                value=value,
                bound=bound,
                op=op,
                outcome=outcome,
                label=metric_value(metric, value),
                interval=_interval(report, metric) if value is not None else (None, None),
                level=level if isinstance(level, float) else None,
                low=shares[metric],
            )
        )
    return bars, figures


def _figures_table(figures: Sequence[_Figure]) -> str:
    if not figures:
        return ""
    rows = "".join(
        f'<tr class="o-{escape(f["outcome"].lower())}"><td>{escape(f["name"])}</td>'
        f'<td class="num">{escape(f["value"])}</td><td class="num">{escape(f["bound"])}</td>'
        f'<td><span class="badge b-{escape(f["outcome"].lower())}">{escape(f["outcome"])}</span></td></tr>'
        for f in figures
    )
    return (
        '<h2>Counts and timings</h2><table class="grid narrow" id="figures"><thead><tr><th>metric</th>'
        f"<th>value</th><th>bound</th><th>outcome</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _charts_section(report: Mapping[str, Any], totals: _ItemTotals) -> str:
    shares, figures = _metric_rows(report)
    parts = [
        '<section id="charts"><h2>Rates against their floors</h2>',
        charts.metric_bars(shares),
        _figures_table(figures),
    ]
    rows = [
        (kind, [("pass", c["pass"], "bar-pass"), ("fail", c["fail"], "bar-fail"), ("error", c["error"], "bar-error")])
        for kind, c in totals.by_kind.items()
    ]
    parts += ["<h2>Outcomes by kind</h2>", charts.stacked_bars(rows, title="Item outcomes by kind")]
    # Every target kind answers generate (REST, Python, mapped): the chart names the call, not a REST path.
    parts += ["<h2>Latency of the target's generate calls</h2>", charts.histogram(totals.latencies)]
    parts.append("<h2>Citation verdicts</h2>")
    counts = totals.paragraph_verdicts
    if counts:
        bars = [(v, n, f"bar-{tone(v)}") for v, n in counts.most_common()]
        total = sum(counts.values())
        parts.append(charts.count_bars(bars, title=f"Verdicts of {total} judged citation paragraphs"))
        parts.append(legend(counts, element_id="citation-legend"))
    else:
        parts.append('<p class="note">No citation items in this run.</p>')
    claims = totals.claim_verdicts
    if claims:
        bars = [(v, n, f"bar-{tone(v)}") for v, n in claims.most_common()]
        parts += ["<h2>Claim verdicts</h2>", charts.count_bars(bars, title="Verdicts the target gave its claims")]
        parts.append(legend(claims, element_id="claim-legend"))
    parts.append("</section>")
    return "".join(parts)


class _TrendRun(TypedDict):
    """One run of the trends and the two-run comparison, as the page's script reads it (``data.runs``)."""

    id: str
    startedAt: str
    metrics: dict[str, Any]


def _history_section(report: Mapping[str, Any], history: Sequence[Mapping[str, Any]]) -> tuple[str, list[_TrendRun]]:
    runs = [
        _TrendRun(id=str(run.get("id")), startedAt=_when(run.get("startedAt")), metrics=dict(run.get("metrics") or {}))
        for run in history
    ][-(HISTORY_RUNS - 1) :]
    runs.append(_TrendRun(id="this run", startedAt=_when(report.get("startedAtMs")), metrics=dict(report["metrics"])))
    bounds = {c["metric"]: c.get("bound") for c in report["gate"]["checks"] if c.get("bound") is not None}
    labels = [run["id"] for run in runs]
    figures = []
    for metric in METRIC_DIRECTIONS:
        points = [run["metrics"].get(metric) for run in runs]
        points = [float(p) if isinstance(p, (int, float)) and not isinstance(p, bool) else None for p in points]
        if any(p is not None for p in points):
            figures.append(
                f'<figure class="trend">{charts.trend(points, name=metric, labels=labels, bound=bounds.get(metric))}</figure>'
            )
    if len(runs) > 1:
        compare = (
            '<h2>Compare two runs</h2><p><label>run A <select id="cmp-a"></select></label> '
            '<label>run B <select id="cmp-b"></select></label></p>'
            '<table class="grid" id="cmp"><thead><tr><th>metric</th><th>A</th><th>B</th><th>B − A</th></tr></thead>'
            "<tbody></tbody></table>"
        )
    else:
        compare = f'<h2>Compare two runs</h2><p id="cmp-none">{NO_EARLIER_RUN}</p>'
    html = (
        f'<section id="history"><h2>Trends over the last {len(runs)} runs</h2><div class="trends">'
        + "".join(figures)
        + "</div>"
        + compare
        + "</section>"
    )
    return html, runs


def _header(report: Mapping[str, Any]) -> str:
    passed = report["gate"]["passed"]
    env = report.get("environment") or {}
    metrics = report["metrics"]
    facts = [
        ("dataset", report.get("datasetVersion")),
        ("models", models_label(report.get("models"))),
        ("started", _when(report.get("startedAtMs"))),
        ("duration", f"{float(report.get('durationMs') or 0) / 1000:.1f} s"),
        ("items", metrics.get("items")),
        ("plugin", env.get("pluginVersion")),
        ("git", (env.get("gitCommit") or "n/a")[:12]),
    ]
    merge = report.get("merge")
    if merge:
        facts.append(("merged shards", ", ".join(merge.get("shards", []))))
        if merge.get("missingShards"):
            facts.append(("missing shards", ", ".join(merge["missingShards"])))
    verdict = gate_verdict(report["gate"])
    badge = "fail" if not passed else "pass" if report["gate"].get("gated", True) is not False else "skip"
    notes = (
        '<p class="warn">Interrupted: the metrics cover only part of the selection.</p>'
        if report.get("interrupted")
        else ""
    )
    return (
        f'<header><h1>groundeval <span id="verdict" class="badge big b-{badge}">gate {escape(verdict)}</span></h1>'
        '<dl class="facts">'
        + "".join(f"<div><dt>{escape(k)}</dt><dd>{escape(str(v))}</dd></div>" for k, v in facts)
        + f"</dl>{notes}</header>"
    )


def render_html(
    report: Mapping[str, Any], history: Sequence[Mapping[str, Any]] | None = None, *, title: str | None = None
) -> str:
    """The report as one self-contained HTML page (docs/ci.md, "HTML report").

    Args:
        report: A report's wire dict (``--eval-report`` or ``groundeval merge`` output).
            Its ``items`` may be any re-iterable of item wire dicts (a list, or an
            ``outputs.spool.ItemSpool``): the page reads them in several passes.
        history: Past runs of the same dataset and lineage, oldest first, each
            ``{"id": str, "startedAt": epoch ms or text, "metrics": {wire name: value}}``;
            when given, the page adds a trend per metric over the last
            ``HISTORY_RUNS`` runs (this run last) and a two-run comparison.
        title: The page title; ``groundeval <dataset> — gate PASS|FAIL`` by default.

    Returns:
        The HTML document. It loads nothing over the network and runs no script
        but its own (content security policy with hashes).

    Raises:
        KeyError: ``report`` lacks ``gate`` or ``metrics``.
    """
    return "".join(html_parts(report, history, title=title))


def html_parts(
    report: Mapping[str, Any], history: Sequence[Mapping[str, Any]] | None = None, *, title: str | None = None
) -> Iterator[str]:
    """``render_html``'s page as consecutive pieces of text, to be written one after the other.

    The item list goes out one item at a time, so writing the pieces to a file holds
    one item's view at a time, not the page (issue 24, memory per item). Arguments
    and errors are ``render_html``'s.
    """
    items = report.get("items") or []
    verdict = gate_verdict(report["gate"])
    page_title = title or f"groundeval {report.get('datasetVersion', '')} — gate {verdict}"
    totals = _ItemTotals(items)
    data: dict[str, Any] = {
        "outcomeOrder": OUTCOME_ORDER,
        "tones": dict(VERDICT_TONES),
        "meanings": dict(VERDICT_MEANINGS),
    }
    history_html = ""
    if history is not None:
        history_html, runs = _history_section(report, history)
        data["runs"] = runs
        data["metricNames"] = list(METRIC_DIRECTIONS)
        data["higherIsBetter"] = {name: d.op == ">=" for name, d in METRIC_DIRECTIONS.items()}
    csp = (
        f"default-src 'none'; img-src data:; style-src {_csp_hash(STYLE)}; script-src {_csp_hash(SCRIPT)}; "
        "base-uri 'none'; form-action 'none'"
    )
    yield (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{escape(csp)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="generator" content="pytest-groundeval">'
        f'<link rel="icon" href="data:,"><title>{escape(page_title)}</title><style>{STYLE}</style></head><body>'
    )
    yield _header(report) + _gate_section(report) + _failures_section(totals)
    yield judge_section(report)
    yield _charts_section(report, totals)
    yield history_html + ITEMS_SECTION
    # The data island: {"items": [views, failures first (OUTCOME_ORDER), each outcome in report order], ...}.
    yield '<script type="application/json" id="ge-data">{"items":['
    first = True
    for outcome in OUTCOME_ORDER:
        if not totals.outcomes[outcome]:
            continue
        for item in items:
            if item_outcome(item) == outcome:
                yield ("" if first else ",") + _json_island(item_view(item))
                first = False
    yield "]," + _json_island(data)[1:] + "</script>"
    yield f"<script>{SCRIPT}</script></body></html>\n"
