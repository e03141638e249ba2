"""The HTML report: one self-contained, offline page made from a saved report (docs/ci.md).

The page needs no network: styles and the one script are inline, charts are SVG
drawn in Python (``charts``), and a content security policy (``default-src
'none'`` plus hashes of the page's own style and script) forbids every fetch and
every other script. Everything from the report is untrusted text (answers come
from the system under test): the server-side parts go through ``html.escape``;
items travel as JSON in a ``<script type="application/json">`` element whose
``<``, ``>`` and ``&`` are written as ``\\u003c``… escapes, and the page's script
puts them in the document with ``textContent`` only, never as markup.

What the page shows per item, from the report's item outcome
(``pytest_groundeval.outcome.ItemOutcome``): id, kind, outcome (pass, fail,
error), latency, tokens, ``detail`` (the reason), ``error``, ``traceId``, the
counts, ``evidenceReview``, and ``extra.citationParagraphs``. It also renders
these ``extra`` keys when an outcome carries them:

- ``extra.tags``: list of str — the item's dataset tags (filterable).
- ``extra.question``: str.
- ``extra.answer``: str — with each claim marked by its verdict.
- ``extra.claims``: list of ``{text, start, end, markers, verdict, true}``;
  ``start``/``end`` are UTF-8 byte offsets into ``answer`` as the target
  returned them (docs/target-contract.md); ``true`` is the harness's judgement.
- ``extra.evidence``: list of ``{marker, document, start, end, text}`` — the
  retrieved spans, ``text`` sliced from the canonical corpus text.
- ``extra.expectedEvidence``: list of str, or of ``{text, found}``.
- ``extra.truths``: list of str.
- ``extra.citationParagraphs[].verdict`` / ``.rationale``: the judge's verdict.

Any other ``extra`` key is shown as JSON under "other figures".
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from html import escape
from typing import Any, TypedDict

from ..core.gate import verdict as gate_verdict
from ..core.kinds import KIND_NAMES, all_kinds, get
from ..core.metrics import METRIC_DIRECTIONS
from . import charts
from ._format import metric_value, models_label, value_with_interval

TEXT_CHARS = 8_000
"""Characters kept of an answer, detail or error text in the page (the rest is cut with "…")."""
SPAN_CHARS = 2_000
"""Characters kept of one evidence span, question, claim or paragraph."""
HISTORY_RUNS = 30
"""Runs of history drawn in the trends (the most recent)."""

NO_EARLIER_RUN = "No earlier run of this dataset and model lineage to compare this run with."
"""The comparison's text when the history holds no run before this one."""

_SHOWN_EXTRA = frozenset(
    {
        "tags",
        "question",
        "answer",
        "claims",
        "evidence",
        "expectedEvidence",
        "truths",
        "citationParagraphs",
        "citationParagraphsJudged",
        "citationParagraphsMismatched",
        "citationParagraphsDropped",
        "citationParagraphsSupported",
        "citationParagraphsWrongSpeaker",
        "citationCoverageScores",
    }
)
"""``extra`` keys the page shows in its own sections; each kind adds those its counts show
(``Kind.drilldown_extra``), and any other key is shown under "other figures"."""


def _known_extra() -> frozenset[str]:
    return _SHOWN_EXTRA.union(*(kind.drilldown_extra for kind in all_kinds()))


def _kind_counts(item: Mapping[str, Any]) -> dict[str, str]:
    """What the item's kind lists under "counts" (``Kind.drilldown_counts``); none for an unknown kind."""
    kind = item.get("kind")
    if not isinstance(kind, str) or kind not in KIND_NAMES:
        return {}
    return {str(label): str(value) for label, value in get(kind).drilldown_counts(item).items()}


def _cut(value: Any, limit: int) -> str | None:
    if value is None:
        return None
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _outcome(item: Mapping[str, Any]) -> str:
    if item.get("error") is not None:
        return "error"
    return "pass" if item.get("pass") else "fail"


def _char_offset(encoded: bytes, byte_offset: Any) -> int | None:
    if isinstance(byte_offset, bool) or not isinstance(byte_offset, int) or not 0 <= byte_offset <= len(encoded):
        return None
    try:
        return len(encoded[:byte_offset].decode("utf-8"))
    except UnicodeDecodeError:  # the offset falls inside a character
        return None


def answer_segments(answer: str, claims: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    """Split an answer into ``[text, claim index or -1]`` runs, so each claim can be marked.

    A claim is placed by its UTF-8 byte offsets when they slice its text out of the
    answer (docs/target-contract.md), else at the first occurrence of its text
    after the previous claim; a claim found nowhere, or overlapping one already
    placed, is left unmarked (it is still listed under the answer).
    """
    encoded = answer.encode("utf-8")
    placed: list[tuple[int, int, int]] = []
    cursor = 0
    for index, claim in enumerate(claims):
        text = claim.get("text")
        if not isinstance(text, str) or not text:
            continue
        start, end = _char_offset(encoded, claim.get("start")), _char_offset(encoded, claim.get("end"))
        if start is None or end is None or answer[start:end] != text:
            found = answer.find(text, cursor)
            if found < 0:
                found = answer.find(text)
            if found < 0:
                continue
            start, end = found, found + len(text)
        placed.append((start, end, index))
        cursor = end
    placed.sort()
    segments: list[list[Any]] = []
    position = 0
    for start, end, index in placed:
        if start < position:
            continue
        if start > position:
            segments.append([answer[position:start], -1])
        segments.append([answer[start:end], index])
        position = end
    if position < len(answer):
        segments.append([answer[position:], -1])
    return segments


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _expected(extra: Mapping[str, Any], evidence: list[dict[str, Any]]) -> list[dict[str, Any]]:
    spans = " \n".join(span.get("text") or "" for span in evidence)
    out = []
    for entry in _list(extra.get("expectedEvidence")):
        if isinstance(entry, Mapping):
            text, found = entry.get("text"), entry.get("found")
        else:
            text, found = entry, None
        text = str(text)
        if found is None and evidence:
            found = text in spans
        out.append({"text": _cut(text, SPAN_CHARS), "found": found})
    return out


def item_view(item: Mapping[str, Any]) -> dict[str, Any]:
    """What the page's script needs of one item outcome (wire dict): texts cut, claims placed.

    Returns:
        A JSON-ready dict: ``id``, ``kind``, ``outcome``, ``tags``, ``latencyMs``,
        ``tokens``, ``detail``, ``error``, ``traceId``, ``counts`` (label -> "a/b"),
        and when present ``question``, ``segments`` (see ``answer_segments``),
        ``claims``, ``evidence``, ``expected``, ``truths``, ``paragraphs``,
        ``review`` and ``other`` (unknown ``extra`` keys). Under ``--eval-repeat`` the answer shown
        is the first attempt's that did not pass (else the first attempt's), and ``counts`` says
        how many attempts passed (docs/gate.md, "Repeats").
    """
    extra = item.get("extra") or {}
    attempts = [attempt for attempt in _list(item.get("attempts")) if isinstance(attempt, Mapping)]
    if attempts:
        shown = next((attempt for attempt in attempts if not attempt.get("pass")), attempts[0])
        extra = {**(shown.get("extra") or {}), **extra}
    prompt, completion = item.get("promptTokens"), item.get("completionTokens")
    view: dict[str, Any] = {
        "id": str(item.get("id")),
        "kind": str(item.get("kind")),
        "outcome": _outcome(item),
        "tags": [str(tag) for tag in _list(extra.get("tags"))],
        "latencyMs": item.get("latencyMs"),
        "tokens": None if prompt is None and completion is None else (prompt or 0) + (completion or 0),
        "detail": _cut(item.get("detail"), TEXT_CHARS),
        "error": _cut(item.get("error"), TEXT_CHARS),
        "traceId": item.get("traceId"),
        "counts": _kind_counts(item),
    }
    if attempts:
        view["counts"]["attempts passed"] = f"{sum(bool(a.get('pass')) for a in attempts)}/{len(attempts)}"
    if extra.get("question") is not None:
        view["question"] = _cut(extra["question"], SPAN_CHARS)
    claims = [claim for claim in _list(extra.get("claims")) if isinstance(claim, Mapping)]
    if claims:
        view["claims"] = [
            {
                "text": _cut(claim.get("text"), SPAN_CHARS),
                "verdict": str(claim.get("verdict", "")),
                "markers": [str(m) for m in _list(claim.get("markers"))],
                "true": claim.get("true"),
            }
            for claim in claims
        ]
    if isinstance(extra.get("answer"), str):
        answer = extra["answer"]
        segments = answer_segments(answer, claims)
        if len(answer) > TEXT_CHARS:  # cut after placing, so offsets stay right
            kept, total = [], 0
            for text, index in segments:
                if total >= TEXT_CHARS:
                    break
                kept.append([text[: TEXT_CHARS - total], index])
                total += len(kept[-1][0])
            segments = [*kept, ["…", -1]]
        view["segments"] = segments
    evidence = [
        {
            "marker": str(span.get("marker", "")),
            "document": str(span.get("document", "")),
            "start": span.get("start"),
            "end": span.get("end"),
            "text": _cut(span.get("text"), SPAN_CHARS),
        }
        for span in _list(extra.get("evidence"))
        if isinstance(span, Mapping)
    ]
    if evidence:
        view["evidence"] = evidence
    expected = _expected(extra, evidence)
    if expected:
        view["expected"] = expected
    if _list(extra.get("truths")):
        view["truths"] = [_cut(t, SPAN_CHARS) for t in extra["truths"]]
    paragraphs = [p for p in _list(extra.get("citationParagraphs")) if isinstance(p, Mapping)]
    if paragraphs:
        view["paragraphs"] = [
            {
                "index": p.get("index"),
                "text": _cut(p.get("text"), SPAN_CHARS),
                "markers": [str(m) for m in _list(p.get("markers"))],
                "verdict": paragraph_verdict(p),
                "rationale": _cut(p.get("rationale"), SPAN_CHARS),
                "problems": [_cut(t, SPAN_CHARS) for t in _list(p.get("metadataMismatch"))]
                + [f"missingSource: [{m}] names no source" for m in _list(p.get("missingMarkers"))],
            }
            for p in paragraphs
        ]
    review = item.get("evidenceReview")
    if isinstance(review, Mapping) and review.get("reviewed"):
        view["review"] = {
            "score": review.get("score"),
            "minScore": review.get("minScore"),
            "passed": review.get("passed"),
            "reason": _cut(review.get("reason"), SPAN_CHARS),
            "findings": [
                {k: _cut(f.get(k), SPAN_CHARS) for k in ("check", "claimId", "verdict", "reason", "suggestedRewrite")}
                for f in _list(review.get("findings"))
                if isinstance(f, Mapping)
            ],
        }
    known = _known_extra()
    other = {k: v for k, v in extra.items() if k not in known}
    if other:
        view["other"] = _cut(json.dumps(other, ensure_ascii=False, indent=1, default=str), TEXT_CHARS)
    return view


def paragraph_verdict(paragraph: Mapping[str, Any]) -> str:
    """A citation paragraph's verdict: the judge's when it ran, else the deterministic one.

    Deterministic verdicts: ``pass``, ``missingSource`` (a marker names no source),
    ``metadataMismatch`` (docs/citation.md).
    """
    if paragraph.get("verdict"):
        return str(paragraph["verdict"])
    if paragraph.get("deterministicPass", True):
        return "pass"
    return "missingSource" if paragraph.get("missingMarkers") else "metadataMismatch"


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


def _metric_rows(report: Mapping[str, Any]) -> list[charts.MetricBar]:
    metrics = report["metrics"]
    level = report.get("confidenceLevel")
    rows: list[charts.MetricBar] = []
    seen = set()
    for check in report["gate"]["checks"]:
        metric = check["metric"]
        direction = METRIC_DIRECTIONS.get(metric)
        if direction is None:
            continue
        seen.add(metric)
        rows.append(
            charts.MetricBar(
                name=metric,
                value=check.get("value"),
                bound=check.get("bound"),
                op=check.get("op", direction.op),
                outcome=str(check["outcome"]),
                rate=direction.rate,
                label=metric_value(metric, check.get("value")),
                interval=_interval(report, metric) if check.get("value") is not None else (None, None),
                level=level if isinstance(level, float) else None,
            )
        )
    for metric, direction in METRIC_DIRECTIONS.items():
        value = metrics.get(metric)
        if metric not in seen and value is not None:
            rows.append(
                charts.MetricBar(
                    metric,
                    value,
                    None,
                    direction.op,
                    "INFO",
                    direction.rate,
                    metric_value(metric, value),
                    interval=_interval(report, metric),
                    level=level if isinstance(level, float) else None,
                )
            )
    return rows


def _charts_section(report: Mapping[str, Any], items: Sequence[Mapping[str, Any]]) -> str:
    parts = ['<section id="charts"><h2>Metrics against their floors</h2>', charts.metric_bars(_metric_rows(report))]
    by_kind: dict[str, Counter[str]] = {}
    for item in items:
        by_kind.setdefault(str(item.get("kind")), Counter())[_outcome(item)] += 1
    rows = [
        (kind, [("pass", c["pass"], "bar-pass"), ("fail", c["fail"], "bar-fail"), ("error", c["error"], "bar-error")])
        for kind, c in by_kind.items()
    ]
    parts += ["<h2>Outcomes by kind</h2>", charts.stacked_bars(rows, title="Item outcomes by kind")]
    latencies = [float(i["latencyMs"]) for i in items if isinstance(i.get("latencyMs"), (int, float))]
    parts += ["<h2>Latency of <code>/v1/generate</code></h2>", charts.histogram(latencies)]
    paragraphs = [
        p
        for i in items  # any kind whose outcomes record judged paragraphs (citation's ``citationParagraphs``)
        for p in _list((i.get("extra") or {}).get("citationParagraphs"))
        if isinstance(p, Mapping)
    ]
    parts.append("<h2>Citation verdicts</h2>")
    if paragraphs:
        counts = Counter(paragraph_verdict(p) for p in paragraphs)
        bars = [(v, n, "bar-pass" if v in ("pass", "supported") else "bar-fail") for v, n in counts.most_common()]
        parts.append(charts.count_bars(bars, title=f"Verdicts of {len(paragraphs)} judged citation paragraphs"))
    else:
        parts.append('<p class="note">No citation items in this run.</p>')
    claims = Counter(
        str(c.get("verdict"))
        for i in items
        for c in _list((i.get("extra") or {}).get("claims"))
        if isinstance(c, Mapping)
    )
    if claims:
        bars = [(v, n, "bar-pass" if v == "supported" else "bar-info") for v, n in claims.most_common()]
        parts += ["<h2>Claim verdicts</h2>", charts.count_bars(bars, title="Verdicts the target gave its claims")]
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


_ITEMS_SECTION = """<section id="items"><h2>Items</h2>
<div class="filters">
<label>kind <select id="f-kind"><option value="">all</option></select></label>
<label>tag <select id="f-tag"><option value="">all</option></select></label>
<label>outcome <select id="f-outcome"><option value="">all</option><option>pass</option><option>fail</option><option>error</option></select></label>
<label>search <input id="f-search" type="search" placeholder="id, detail, question, answer"></label>
<span id="f-count" class="note"></span>
</div>
<noscript><p class="warn">The item table needs JavaScript; the gate and charts above do not.</p></noscript>
<table class="grid" id="items-table"><thead><tr>
<th data-sort="id" aria-sort="none">id</th><th data-sort="kind" aria-sort="none">kind</th>
<th data-sort="outcome" aria-sort="none">outcome</th><th data-sort="latencyMs" aria-sort="none">latency ms</th>
<th data-sort="tokens" aria-sort="none">tokens</th><th>detail</th></tr></thead><tbody></tbody></table>
<p><button id="more" type="button" hidden>show more</button></p>
</section>"""

_STYLE = """
:root{--pass:#1a7f37;--fail:#cf222e;--error:#9a6700;--skip:#6e7781;--info:#0969da;--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--bg:#fff;--track:#eef1f4}
*{box-sizing:border-box}body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);background:var(--bg);margin:0 auto;max-width:1180px;padding:16px 24px 48px}
h1{font-size:22px;margin:8px 0}h2{font-size:16px;margin:22px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
.facts{display:flex;flex-wrap:wrap;gap:4px 20px;margin:6px 0}.facts div{display:flex;gap:6px}.facts dt{color:var(--muted)}.facts dd{margin:0;font-family:ui-monospace,monospace}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;color:#fff;font-size:12px;font-weight:600}.big{font-size:15px;vertical-align:middle}
.b-pass{background:var(--pass)}.b-fail{background:var(--fail)}.b-error{background:var(--error)}.b-skip{background:var(--skip)}.b-info{background:var(--info)}
table.grid{border-collapse:collapse;width:100%}.grid th,.grid td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
.grid th[data-sort]{cursor:pointer;user-select:none}.grid th[aria-sort=ascending]::after{content:" ▲"}.grid th[aria-sort=descending]::after{content:" ▼"}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
#items-table tbody tr.row{cursor:pointer}#items-table tbody tr.row:hover{background:#f6f8fa}tr.open{background:#f6f8fa}
td.detail{max-width:520px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;color:var(--muted)}
.filters{display:flex;flex-wrap:wrap;gap:8px 16px;align-items:center;margin-bottom:8px}input[type=search]{width:260px}
.note{color:var(--muted)}.warn{color:var(--fail);font-weight:600}
svg.chart{display:block;max-width:100%;height:auto}.lbl{font-size:12px;fill:var(--fg)}.tick{font-size:11px;fill:var(--muted)}
.track{fill:var(--track)}.bar-pass{fill:var(--pass)}.bar-fail{fill:var(--fail)}.bar-error{fill:var(--error)}.bar-skip{fill:var(--skip)}.bar-info{fill:var(--info)}.bar-hist{fill:var(--info)}
.bound{stroke:var(--fg);stroke-width:2}.ci{stroke:var(--fg);stroke-width:1.5}.axis{stroke:var(--muted)}.mark{stroke-width:1.5;stroke-dasharray:4 3}.p50{stroke:var(--pass);fill:var(--pass)}.p95{stroke:var(--error);fill:var(--error)}
.o-pass{fill:var(--pass)}.o-fail{fill:var(--fail)}.o-skip{fill:var(--skip)}.o-info{fill:var(--info)}
.line{fill:none;stroke:var(--info);stroke-width:2}.pt{fill:var(--info)}.trends{display:flex;flex-wrap:wrap;gap:12px}figure.trend{margin:0;border:1px solid var(--line);border-radius:6px;padding:4px}
.panel{padding:8px 12px 14px;border-left:3px solid var(--info)}.panel h3{font-size:13px;margin:10px 0 4px;color:var(--muted);text-transform:uppercase;letter-spacing:.04em}
.panel pre,.answer{white-space:pre-wrap;word-break:break-word;font:13px/1.5 ui-monospace,monospace;background:#f6f8fa;padding:8px;border-radius:4px;margin:0}
.answer{font-family:inherit;font-size:14px}.claim{border-bottom:2px solid;padding:0 1px}
.v-supported{background:#dafbe1;border-color:var(--pass)}.v-unsupported,.v-partial{background:#fff8c5;border-color:var(--error)}
.v-contradicted,.v-wrong_speaker,.v-wrong_attribution,.v-unparseable,.v-metadataMismatch,.v-missingSource{background:#ffebe9;border-color:var(--fail)}.v-unverifiable{background:#eef1f4;border-color:var(--skip)}.v-pass{background:#dafbe1;border-color:var(--pass)}
.panel ul{margin:0;padding-left:20px}.found{color:var(--pass);font-weight:600}.missing{color:var(--fail);font-weight:600}.delta-better{color:var(--pass)}.delta-worse{color:var(--fail)}
"""

_SCRIPT = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("ge-data").textContent);
  var items = data.items, PAGE = 500;
  var state = {kind: "", tag: "", outcome: "", q: "", key: null, dir: 1, limit: PAGE};
  function $(id) { return document.getElementById(id); }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function fmt(v, digits) { return v === null || v === undefined ? "n/a" : Number(v).toFixed(digits); }
  function options(select, values) {
    values.forEach(function (v) { var o = el("option", null, v); o.value = v; select.appendChild(o); });
  }
  var kinds = [], tags = [];
  items.forEach(function (it) {
    if (kinds.indexOf(it.kind) < 0) kinds.push(it.kind);
    it.tags.forEach(function (t) { if (tags.indexOf(t) < 0) tags.push(t); });
    it.hay = [it.id, it.kind, it.outcome, it.detail, it.error, it.question, it.tags.join(" "),
      (it.segments || []).map(function (s) { return s[0]; }).join("")].join("\n").toLowerCase();
  });
  options($("f-kind"), kinds); options($("f-tag"), tags.sort());
  if (!tags.length) $("f-tag").disabled = true;

  function visible() {
    var q = state.q.toLowerCase();
    var rows = items.filter(function (it) {
      return (!state.kind || it.kind === state.kind) && (!state.outcome || it.outcome === state.outcome) &&
        (!state.tag || it.tags.indexOf(state.tag) >= 0) && (!q || it.hay.indexOf(q) >= 0);
    });
    if (state.key) {
      var k = state.key, d = state.dir;
      rows.sort(function (a, b) {
        var x = a[k], y = b[k];
        if (x === y) return 0;
        if (x === null || x === undefined) return 1;
        if (y === null || y === undefined) return -1;
        return (x < y ? -1 : 1) * d;
      });
    }
    return rows;
  }
  function section(panel, title, node) { panel.appendChild(el("h3", null, title)); panel.appendChild(node); }
  function list(entries, render) {
    var ul = el("ul");
    entries.forEach(function (e) { var li = el("li"); render(li, e); ul.appendChild(li); });
    return ul;
  }
  function detail(it) {
    var p = el("div", "panel");
    var reason = it.error ? "error: " + it.error : it.detail;
    section(p, it.outcome === "pass" ? "result" : "why it " + (it.outcome === "error" ? "errored" : "failed"), el("pre", null, reason || "(no detail)"));
    if (it.question) section(p, "question", el("pre", null, it.question));
    if (it.segments) {
      var a = el("div", "answer");
      it.segments.forEach(function (s) {
        if (s[1] < 0) { a.appendChild(document.createTextNode(s[0])); return; }
        var c = it.claims[s[1]], span = el("span", "claim v-" + c.verdict.replace(/[^A-Za-z_]/g, ""), s[0]);
        span.title = c.verdict + (c.true === true ? " (true)" : c.true === false ? " (not true)" : "");
        a.appendChild(span);
      });
      section(p, "answer (claims marked by verdict)", a);
    }
    if (it.claims) section(p, "claims", list(it.claims, function (li, c) {
      li.appendChild(el("span", "claim v-" + c.verdict.replace(/[^A-Za-z_]/g, ""), c.verdict));
      li.appendChild(document.createTextNode(" " + c.text + (c.markers.length ? "  [" + c.markers.join(", ") + "]" : "") +
        (c.true === true ? "  — true" : c.true === false ? "  — not true" : "")));
    }));
    if (it.evidence) section(p, "retrieved evidence", list(it.evidence, function (li, e) {
      li.appendChild(el("b", null, "[" + e.marker + "] "));
      li.appendChild(document.createTextNode(e.document + (e.start !== null && e.start !== undefined ? " bytes " + e.start + "–" + e.end : "") + ": "));
      li.appendChild(el("pre", null, e.text || ""));
    }));
    if (it.expected) section(p, "expected evidence", list(it.expected, function (li, e) {
      li.appendChild(el("span", e.found === true ? "found" : e.found === false ? "missing" : "note",
        e.found === true ? "found " : e.found === false ? "not retrieved " : "? "));
      li.appendChild(document.createTextNode(e.text));
    }));
    if (it.truths) section(p, "truths", list(it.truths, function (li, t) { li.textContent = t; }));
    if (it.paragraphs) section(p, "citation paragraphs", list(it.paragraphs, function (li, g) {
      li.appendChild(el("span", "claim v-" + g.verdict.replace(/[^A-Za-z_]/g, ""), g.verdict));
      li.appendChild(document.createTextNode(" ¶" + g.index + " [" + g.markers.join(", ") + "] " + g.text));
      g.problems.forEach(function (t) { li.appendChild(el("div", "missing", t)); });
      if (g.rationale) li.appendChild(el("div", "note", g.rationale));
    }));
    if (it.review) {
      var r = it.review, box = el("div");
      box.appendChild(el("div", null, "score " + fmt(r.score, 3) + " (min " + fmt(r.minScore, 3) + ") " + (r.passed ? "passed" : "failed") + ": " + r.reason));
      box.appendChild(list(r.findings, function (li, f) {
        li.textContent = f.check + " " + f.claimId + ": " + f.verdict + " — " + f.reason + (f.suggestedRewrite ? " (rewrite: " + f.suggestedRewrite + ")" : "");
      }));
      section(p, "evidence risk", box);
    }
    var figs = Object.keys(it.counts).map(function (k) { return k + " " + it.counts[k]; });
    if (it.latencyMs !== null) figs.push("latency " + fmt(it.latencyMs, 1) + " ms");
    if (it.tokens !== null) figs.push(it.tokens + " tokens");
    if (it.traceId) figs.push("traceId " + it.traceId);
    if (it.tags.length) figs.push("tags " + it.tags.join(", "));
    if (figs.length) section(p, "figures", el("div", null, figs.join(" · ")));
    if (it.other) section(p, "other figures", el("pre", null, it.other));
    return p;
  }
  function toggle(tr, it) {
    var next = tr.nextSibling;
    if (next && next.className === "panel-row") { next.parentNode.removeChild(next); tr.classList.remove("open"); return; }
    var row = el("tr", "panel-row"), td = el("td");
    td.colSpan = 6; td.appendChild(detail(it)); row.appendChild(td);
    tr.parentNode.insertBefore(row, next); tr.classList.add("open");
  }
  function render() {
    var rows = visible(), body = document.querySelector("#items-table tbody"), frag = document.createDocumentFragment();
    rows.slice(0, state.limit).forEach(function (it) {
      var tr = el("tr", "row o-" + it.outcome);
      tr.dataset.id = it.id; tr.dataset.kind = it.kind; tr.dataset.outcome = it.outcome;
      tr.appendChild(el("td", null, it.id)); tr.appendChild(el("td", null, it.kind));
      var o = el("td"); o.appendChild(el("span", "badge b-" + it.outcome, it.outcome)); tr.appendChild(o);
      tr.appendChild(el("td", "num", it.latencyMs === null ? "" : fmt(it.latencyMs, 1)));
      tr.appendChild(el("td", "num", it.tokens === null ? "" : it.tokens));
      var d = el("td", "detail", it.error || it.detail || ""); d.title = it.error || it.detail || ""; tr.appendChild(d);
      tr.addEventListener("click", function () { toggle(tr, it); });
      frag.appendChild(tr);
    });
    body.textContent = ""; body.appendChild(frag);
    $("f-count").textContent = "showing " + Math.min(rows.length, state.limit) + " of " + rows.length + " matching (" + items.length + " items)";
    $("more").hidden = rows.length <= state.limit;
  }
  function on(id, ev, key) {
    $(id).addEventListener(ev, function (e) { state[key] = e.target.value; state.limit = PAGE; render(); });
  }
  on("f-kind", "change", "kind"); on("f-tag", "change", "tag"); on("f-outcome", "change", "outcome"); on("f-search", "input", "q");
  $("more").addEventListener("click", function () { state.limit += PAGE; render(); });
  Array.prototype.forEach.call(document.querySelectorAll("#items-table th[data-sort]"), function (th) {
    th.addEventListener("click", function () {
      var key = th.dataset.sort;
      state.dir = state.key === key ? -state.dir : 1; state.key = key;
      Array.prototype.forEach.call(document.querySelectorAll("#items-table th[data-sort]"), function (h) { h.setAttribute("aria-sort", "none"); });
      th.setAttribute("aria-sort", state.dir > 0 ? "ascending" : "descending");
      render();
    });
  });
  render();

  if (data.runs && $("cmp-a")) {
    var runs = data.runs, a = $("cmp-a"), b = $("cmp-b");
    runs.forEach(function (r, i) {
      [a, b].forEach(function (s) { var o = el("option", null, r.id + " — " + r.startedAt); o.value = i; s.appendChild(o); });
    });
    a.value = Math.max(runs.length - 2, 0); b.value = runs.length - 1;
    var compare = function () {
      var ra = runs[a.value].metrics, rb = runs[b.value].metrics, body = document.querySelector("#cmp tbody");
      body.textContent = "";
      data.metricNames.forEach(function (m) {
        var x = ra[m], y = rb[m];
        if ((x === null || x === undefined) && (y === null || y === undefined)) return;
        var tr = el("tr"), delta = (typeof x === "number" && typeof y === "number") ? y - x : null;
        tr.appendChild(el("td", null, m));
        tr.appendChild(el("td", "num", typeof x === "number" ? x.toFixed(4) : "n/a"));
        tr.appendChild(el("td", "num", typeof y === "number" ? y.toFixed(4) : "n/a"));
        var better = delta === null || delta === 0 ? "" : ((delta > 0) === (data.higherIsBetter[m] === true) ? "delta-better" : "delta-worse");
        tr.appendChild(el("td", "num " + better, delta === null ? "" : (delta > 0 ? "+" : "") + delta.toFixed(4)));
        body.appendChild(tr);
      });
    };
    a.addEventListener("change", compare); b.addEventListener("change", compare); compare();
  }
  performance.mark("groundeval-rendered");
  document.body.dataset.ready = "1";
})();
"""


def render_html(
    report: Mapping[str, Any], history: Sequence[Mapping[str, Any]] | None = None, *, title: str | None = None
) -> str:
    """The report as one self-contained HTML page (docs/ci.md, "HTML report").

    Args:
        report: A report's wire dict (``--eval-report`` or ``groundeval merge`` output).
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
    items = list(report.get("items") or [])
    verdict = gate_verdict(report["gate"])
    page_title = title or f"groundeval {report.get('datasetVersion', '')} — gate {verdict}"
    data: dict[str, Any] = {"items": [item_view(item) for item in items]}
    history_html = ""
    if history is not None:
        history_html, runs = _history_section(report, history)
        data["runs"] = runs
        data["metricNames"] = list(METRIC_DIRECTIONS)
        data["higherIsBetter"] = {name: d.op == ">=" for name, d in METRIC_DIRECTIONS.items()}
    csp = (
        f"default-src 'none'; img-src data:; style-src {_csp_hash(_STYLE)}; script-src {_csp_hash(_SCRIPT)}; "
        "base-uri 'none'; form-action 'none'"
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{escape(csp)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="generator" content="pytest-groundeval">'
        f'<link rel="icon" href="data:,"><title>{escape(page_title)}</title><style>{_STYLE}</style></head><body>'
        + _header(report)
        + _gate_section(report)
        + _charts_section(report, items)
        + history_html
        + _ITEMS_SECTION
        + f'<script type="application/json" id="ge-data">{_json_island(data)}</script>'
        + f"<script>{_SCRIPT}</script></body></html>\n"
    )
