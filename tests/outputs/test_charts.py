"""The SVG charts drawn to scale: a bar's length is its value on the axis it is drawn against."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from pytest_groundeval.outputs import charts
from pytest_groundeval.outputs.html import render_html

SVG = "{http://www.w3.org/2000/svg}"


def _rects(svg: ET.Element, cls: str) -> list[dict[str, float]]:
    return [
        {k: float(r.get(k)) for k in ("x", "y", "width")}
        for r in svg.iter(f"{SVG}rect")
        if cls in (r.get("class") or "").split()
    ]


def test_shares_are_drawn_to_scale_on_a_labelled_axis_and_a_negative_kappa_leftwards_from_zero():
    rows = [
        charts.MetricBar("retrievalRecall", 0.75, 0.5, ">=", "PASS", "0.7500"),
        charts.MetricBar("judgeAgreement", 0.2, None, ">=", "INFO", "0.2000"),
        charts.MetricBar("judgeKappa", -0.5, None, ">=", "INFO", "-0.5000", low=-1.0),
    ]
    svg = ET.fromstring(charts.metric_bars(rows))
    tracks, bars = _rects(svg, "track"), _rects(svg, "bar-pass") + _rects(svg, "bar-info")
    assert len(tracks) == len(bars) == 3
    recall, agreement, kappa = bars
    plot = tracks[0]["width"]
    assert recall["x"] == tracks[0]["x"] and recall["width"] == pytest.approx(0.75 * plot, abs=0.01)
    assert agreement["width"] == pytest.approx(0.2 * plot, abs=0.01)
    # judgeKappa on [-1, 1]: 0 is mid-track, and -0.5 reaches a quarter of the track to its left.
    zero = next(line for line in svg.iter(f"{SVG}line") if line.get("class") == "zero")
    assert float(zero.get("x1")) == pytest.approx(tracks[2]["x"] + plot / 2, abs=0.01)
    assert kappa["x"] + kappa["width"] == pytest.approx(float(zero.get("x1")), abs=0.01)
    assert kappa["width"] == pytest.approx(0.25 * plot, abs=0.01)
    ticks = [t.text for t in svg.iter(f"{SVG}text") if t.get("class") == "tick"]
    assert ticks == ["0", "0.25", "0.5", "0.75", "1", "-1", "-0.5", "0", "0.5", "1"]  # one axis per range


def _section(page: str, element_id: str) -> str:
    start = page.index(f'id="{element_id}"')
    return page[start : page.index("</table>", start)]


def test_latency_tokens_and_counts_are_figures_not_bars(v1_report):
    page = render_html(v1_report)
    chart = page[page.index('<section id="charts">') : page.index("</svg>", page.index('<section id="charts">'))]
    drawn = re.findall(r'<rect [^>]*class="bar-\w+"><title>(\w+):', chart)
    assert drawn == ["retrievalRecall", "claimSupportPrecision", "claimSupportRecall", "falsehoodRejection",
                     "temporalAccuracy"]  # fmt: skip
    rows = re.findall(r"<tr[^>]*><td>(\w+)</td><td class=\"num\">([^<]*)</td><td class=\"num\">([^<]*)</td>",
                      _section(page, "figures"))  # fmt: skip
    assert rows == [
        ("errors", "0", "&lt;= 0"),
        ("latencyMsP50", "19.2 ms", ""),
        ("latencyMsP95", "59.1 ms", ""),
        ("tokensPerQuery", "703.1 tokens", ""),
    ]
    # The histogram names the call every target answers (REST, Python or mapped), not the REST contract's path.
    assert "<h2>Latency of the target's generate calls</h2>" in page and "/v1/generate" not in page
