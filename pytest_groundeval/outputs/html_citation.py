"""The HTML report's judge-vs-human section for citation runs (docs/ci.md, docs/citation.md).

When a run's citation paragraphs carry human labels (``expectedVerdict``) and a judge
labelled them, the page shows the confusion table of the two: one row per human label,
one column per judge label, each cell the number of labelled paragraphs with that pair,
the diagonal the agreements (``judgeAgreement`` is the diagonal's share, ``judgeKappa``
Cohen's kappa of the table). Each cell links to the items holding such a paragraph.
When a jury judged (each paragraph record carries its judges' own verdicts, docs/judges.md,
"Juries"), a second table sets each judge of the jury against the same human labels.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from html import escape
from typing import Any

from ..core.judging import JUDGE_LABELS, JUDGE_VERDICTS, UNJUDGED
from ._format import value_with_interval
from .item_view import as_list, labelled_pair, paragraph_judges
from .verdicts import tone


def _paragraphs(items: Iterable[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    """The paragraph records of the items, one item at a time (the items may be a spool on disk)."""
    for item in items:
        for p in as_list((item.get("extra") or {}).get("citationParagraphs")):
            if isinstance(p, Mapping):
                yield p


def judge_confusion(report: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """The run's judge-vs-human table ``{expectedVerdict: {judge label: count}}``, non-zero cells only.

    The report's ``judgeConfusion`` metric when it has one (the figures the gate and the
    terminal show); else counted from the items' paragraph records the same way
    (``item_view.labelled_pair``). Empty when no labelled paragraph was sent to a judge.
    """
    metric = (report.get("metrics") or {}).get("judgeConfusion")
    if isinstance(metric, Mapping):
        return {
            str(expected): {str(label): int(n) for label, n in row.items() if n}
            for expected, row in metric.items()
            if isinstance(row, Mapping)
        }
    table: dict[str, dict[str, int]] = {}
    for expected, label in filter(None, map(labelled_pair, _paragraphs(report.get("items") or []))):
        row = table.setdefault(expected, {})
        row[label] = row.get(label, 0) + 1
    return table


def judges_against_labels(items: Iterable[Mapping[str, Any]]) -> dict[str, tuple[int, int]]:
    """Per judge of a jury: ``(labelled paragraphs it was asked about, those where its label is the human one)``.

    Counted over paragraph records carrying both ``expectedVerdict`` and the jury's
    ``judges`` (``item_view.paragraph_judges``); a judge that gave no verdict disagrees.
    Judges in the order first seen.
    """
    counts: dict[str, list[int]] = {}
    for paragraph in _paragraphs(items):
        expected, judges = paragraph.get("expectedVerdict"), paragraph_judges(paragraph)
        if not isinstance(expected, str) or not judges:
            continue
        for judge in judges:
            seen = counts.setdefault(judge["model"], [0, 0])
            seen[0] += 1
            seen[1] += judge["verdict"] == expected
    return {model: (n, agreed) for model, (n, agreed) in counts.items()}


def _chip(label: str) -> str:
    hook = re.sub(r"[^A-Za-z_]", "", label)  # a class to find a verdict by, as the page's script names it
    return f'<span class="chip t-{tone(label)} v-{hook}">{escape(label)}</span>'


def _confusion_table(table: Mapping[str, Mapping[str, int]]) -> str:
    rows = [e for e in JUDGE_VERDICTS if e in table] + sorted(e for e in table if e not in JUDGE_VERDICTS)
    used = {label for row in table.values() for label in row}
    columns = [*JUDGE_VERDICTS, *(label for label in JUDGE_LABELS if label not in JUDGE_VERDICTS and label in used)]
    columns += sorted(used - set(columns))
    head = "".join(f"<th>{_chip(c)}</th>" for c in columns)
    body = []
    for expected in rows:
        cells = []
        for label in columns:
            n = table[expected].get(label, 0)
            cls = "agree" if label == expected else "disagree" if n else "empty"
            pair = escape(f"{expected}|{label}")
            shown = f'<a href="#items" data-pair="{pair}">{n}</a>' if n else "0"
            cells.append(f'<td class="num {cls}" data-pair="{pair}">{shown}</td>')
        total = sum(table[expected].values())
        body.append(f'<tr><th scope="row">{_chip(expected)}</th>{"".join(cells)}<td class="num">{total}</td></tr>')
    sums = "".join(f'<td class="num">{sum(table[e].get(c, 0) for e in rows)}</td>' for c in columns)
    grand = sum(sum(row.values()) for row in table.values())
    return (
        '<table class="grid narrow confusion" id="confusion"><thead><tr><th>human label ↓ · judge →</th>'
        f"{head}<th>total</th></tr></thead><tbody>{''.join(body)}</tbody>"
        f'<tfoot><tr><th scope="row">total</th>{sums}<td class="num">{grand}</td></tr></tfoot></table>'
    )


def _jury_table(per_judge: Mapping[str, tuple[int, int]]) -> str:
    rows = "".join(
        f'<tr><td>{escape(model)}</td><td class="num">{n}</td><td class="num">{agreed}</td>'
        f'<td class="num">{agreed / n:.4f}</td></tr>'
        for model, (n, agreed) in per_judge.items()
    )
    return (
        "<h3>Each judge of the jury against the human labels</h3>"
        '<table class="grid narrow" id="jury-agreement"><thead><tr><th>judge</th><th>labelled</th>'
        f"<th>agreed</th><th>agreement</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def judge_section(report: Mapping[str, Any]) -> str:
    """The section comparing the judge with the human labels; empty when the run has no labelled judged paragraph."""
    table = judge_confusion(report)
    if not table:
        return ""
    metrics, confidence = report.get("metrics") or {}, report.get("confidence")
    labelled = sum(sum(row.values()) for row in table.values())
    agreed = sum(row.get(expected, 0) for expected, row in table.items())
    models = Counter(
        str(p["judgeModel"]) for p in _paragraphs(report.get("items") or []) if p.get("judgeModel")
    ).most_common()
    judged_by = f" Judged by {', '.join(escape(m) for m, _ in models)}." if models else ""
    figures = [f"judgeAgreement {value_with_interval('judgeAgreement', metrics.get('judgeAgreement'), confidence)}"]
    if metrics.get("judgeKappa") is not None:
        figures.append(f"judgeKappa {value_with_interval('judgeKappa', metrics.get('judgeKappa'), confidence)}")
    unjudged = sum(row.get(UNJUDGED, 0) for row in table.values())
    note = (
        f'<p class="note" id="confusion-note">{labelled} labelled paragraphs; the judge gave the human label to '
        f"{agreed} ({escape(', '.join(figures))}).{judged_by} Rows: the human label (<code>expectedVerdict</code>); "
        "columns: the judge's. Click a number to list its items."
        + (f" {unjudged} left unjudged count as disagreements." if unjudged else "")
        + "</p>"
    )
    per_judge = judges_against_labels(report.get("items") or [])
    return (
        '<section id="judge"><h2>Judge vs human labels</h2>'
        + note
        + _confusion_table(table)
        + (_jury_table(per_judge) if per_judge else "")
        + "</section>"
    )
