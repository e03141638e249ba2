"""Confidence intervals in the outputs (docs/ci.md, docs/statistics.md): the HTML gate table and the
whisker on each rate's bar, the Markdown value cell; a report without intervals shows none."""

from __future__ import annotations

import re

import pytest

from pytest_groundeval.core.report import parse_report, refinalize
from pytest_groundeval.outputs import charts
from pytest_groundeval.outputs.html import render_html
from pytest_groundeval.outputs.markdown import render_markdown


@pytest.fixture
def v1_with_intervals(v1_report):
    """The v1 run's report with the intervals its items give, as a run writes them now."""
    end = refinalize(parse_report(v1_report, "v1"), "v1")
    v1_report["confidence"] = {name: i and i.to_wire() for name, i in end.confidence.items()}
    v1_report["confidenceLevel"] = 0.95
    parse_report(v1_report, "v1 with intervals")  # what a reader checks
    return v1_report


def test_the_markdown_value_cell_carries_the_interval(v1_with_intervals, v1_report):
    text = render_markdown(v1_with_intervals)
    assert "| claimSupportPrecision | 1.0000 \\[0.9847, 1.0000\\] | ≥ 0.9000 | ✅ PASS |" in text
    assert "| errors | 0 | ≤ 0 | ✅ PASS | 0 &lt;= 0 |" in text  # a count has none
    del v1_report["confidence"]
    assert "| claimSupportPrecision | 1.0000 | ≥ 0.9000 |" in render_markdown(v1_report)


def test_the_html_page_draws_each_interval_on_its_bar(v1_with_intervals, v1_report):
    page = render_html(v1_with_intervals)
    whiskers = re.findall(r'<g class="ci"><title>([^<]+)</title>', page)
    assert "claimSupportPrecision: 95% confidence interval [0.9847, 1.0000]" in whiskers
    assert len(whiskers) == sum(1 for i in v1_with_intervals["confidence"].values() if i is not None)
    assert '<td class="num">0.9938 [0.9655, 0.9989]</td>' in page  # retrievalRecall in the gate table
    assert ">1.0000 [0.9847, 1.0000]  PASS<" in page  # the bar's label
    del v1_report["confidence"]
    plain = render_html(v1_report)
    assert 'class="ci"' not in plain.split("</style>", 1)[1]


def test_a_whisker_spans_its_interval_on_the_bars_scale():
    row = charts.MetricBar("retrievalRecall", 0.75, 0.9, ">=", "FAIL", "0.7500", interval=(0.5, 0.875), level=0.9)
    svg = charts.metric_bars([row], width=900)
    left, plot = 190, 900 - 190 - 270  # the margins of a chart with intervals
    x1, x2 = left + plot * 0.5, left + plot * 0.875
    assert f'<line x1="{x1:g}" y1="19" x2="{x2:g}" y2="19" class="ci"/>' in svg
    assert "retrievalRecall: 90% confidence interval [0.5000, 0.8750]" in svg
    assert "0.7500 [0.5000, 0.8750]  FAIL" in svg
    assert 'class="ci"' not in charts.metric_bars([charts.MetricBar("errors", 0, 0, "<=", "PASS", "0")])
