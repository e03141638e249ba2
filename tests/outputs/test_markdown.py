"""The Markdown gate table (for GITHUB_STEP_SUMMARY) from real saved reports."""

from __future__ import annotations

from pytest_groundeval.outputs.markdown import MAX_ITEMS_LISTED, cell, render_markdown


def _table_rows(text: str, header: str) -> list[str]:
    lines = text.splitlines()
    start = lines.index(header) + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows


def test_v1_gate_table_has_one_row_per_check(v1_report):
    text = render_markdown(v1_report)
    assert text.startswith("### groundeval gate: ✅ PASS — dataset v1\n")
    rows = _table_rows(text, "| check | value | bound | outcome | reason |")
    assert [row.split(" | ")[0].lstrip("| ") for row in rows] == [c["metric"] for c in v1_report["gate"]["checks"]]
    assert "| claimSupportPrecision | 1.0000 | ≥ 0.9000 | ✅ PASS | 1.0000 &gt;= 0.9000 |" in rows
    assert "621 items (2 failed, 0 errors), models generate=mock-generate/embed=mock-embed" in text
    assert "Reported, not gated: latencyMsP50 19.2 ms, latencyMsP95 59.1 ms" in text


def test_failed_items_are_listed(v1_report):
    text = render_markdown(v1_report)
    rows = _table_rows(text, "| item | kind | outcome | detail |")
    assert [row.split(" | ")[0] for row in rows] == ["| qa-halueval-0082", "| qa-tqa-en-0045-paraphrase"]


def test_a_failing_gate_says_fail(citation_report):
    citation_report["gate"]["passed"] = False
    citation_report["gate"]["checks"][-1].update(value=2, outcome="FAIL", reason="2 > 0")
    text = render_markdown(citation_report)
    assert text.startswith("### groundeval gate: ❌ FAIL")
    assert "| errors | 2 | ≤ 0 | ❌ FAIL | 2 &gt; 0 |" in text


def test_cells_cannot_break_the_table_or_inject_html(v1_report):
    v1_report["items"][0].update({"pass": False, "detail": "a | b\n<script>alert(1)</script> `code` [link](http://x)"})
    text = render_markdown(v1_report)
    row = next(line for line in text.splitlines() if line.startswith(f"| {v1_report['items'][0]['id']} |"))
    assert row.count(" | ") == 3  # still four cells
    assert "<script>" not in text and "&lt;script&gt;" in row
    assert "&#124;" in row and "&#96;code&#96;" in row and "\\[link\\]" in row


def test_cell_escapes():
    assert cell("x|y\n<z>") == "x&#124;y &lt;z&gt;"
    assert cell("a" * 500).endswith("…") and len(cell("a" * 500)) == 200


def test_many_failures_are_counted_not_all_listed(v1_report):
    for item in v1_report["items"][:30]:
        item["pass"] = False
    text = render_markdown(v1_report)
    rows = _table_rows(text, "| item | kind | outcome | detail |")
    assert len(rows) == MAX_ITEMS_LISTED
    assert "… and 22 more failed or errored items" in text


def test_a_merged_report_names_missing_shards(v1_report):
    v1_report["merge"] = {"shards": ["1/3", "3/3"], "missingShards": ["2/3"], "datasetItems": 621, "missingItems": 210}
    text = render_markdown(v1_report)
    assert "Merged from shards 1/3, 3/3; **missing shards: 2/3**; **210 dataset items missing**" in text
