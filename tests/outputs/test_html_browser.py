"""The HTML report in a real headless browser: Debian's chromium driven by Playwright.

One browser for the module; each test opens the page from a file:// URL, as a
user opening a CI artifact would. The system browser is used (``executable_path``),
never one downloaded by ``playwright install``. Set ``GROUNDEVAL_BROWSER`` to use
another chromium binary.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from pytest_groundeval.outputs.html import render_html

REPO = Path(__file__).resolve().parents[2]

# In CI (CI=true, as GitHub Actions and GitLab CI set it) a missing browser fails the
# collection instead of skipping: .ci/run installs both, and a skipped browser test proves nothing.
IN_CI = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")

try:
    import playwright.sync_api as playwright_sync
except ImportError:  # pragma: no cover - the test extra installs it
    if IN_CI:
        pytest.fail("playwright is not installed: pip install -e '.[test]'", pytrace=False)
    pytest.skip("pip install -e '.[test]' installs playwright", allow_module_level=True)

CHROMIUM = os.environ.get("GROUNDEVAL_BROWSER") or shutil.which("chromium") or "/usr/bin/chromium"
if not Path(CHROMIUM).exists():  # pragma: no cover - CI installs it (.ci/run)
    if IN_CI:
        pytest.fail(f"no chromium at {CHROMIUM}: apt-get install chromium", pytrace=False)
    pytest.skip(f"no chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)

HOSTILE_ANSWER = (
    "Kontoret öppnade 2021 [S1]. <script>window.__pwned = 1</script> "
    '<img src=x onerror="window.__pwned = 2"> Det har fyrtio anställda [S2].'
)


# One worker runs the whole module and the main job it reads (tests/conftest.py main_job).
pytestmark = pytest.mark.xdist_group("main_job")


_FREE_TABS: dict[object, list] = {}
"""Browser -> its tabs no ``Page`` holds. A report is opened by navigating a free tab: chromium spends about
half the CPU on that that it spends on a new tab (measured on the v1 page, 8 loads each way)."""


@pytest.fixture(scope="module")
def browser():
    """One headless chromium for the whole module (starting one takes most of a second)."""
    with playwright_sync.sync_playwright() as p:
        instance = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield instance
        _FREE_TABS.pop(instance, None)
        instance.close()


class Page:
    """An opened report page plus what the browser reported while it loaded; ``close`` frees its tab."""

    def __init__(self, browser, path: Path, viewport: tuple[int, int] = (1200, 900)):
        self._free = _FREE_TABS.setdefault(browser, [])
        self.page = self._free.pop() if self._free else browser.new_page()
        self.page.set_viewport_size({"width": viewport[0], "height": viewport[1]})
        self.console: list[str] = []
        self.dialogs: list[str] = []
        self.requests: list[str] = []
        self._handlers = {
            "console": lambda m: self.console.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None,
            "pageerror": lambda e: self.console.append(f"pageerror: {e}"),
            "dialog": lambda d: (self.dialogs.append(d.message), d.dismiss()),
            "request": lambda r: self.requests.append(r.url),
        }
        for event, handler in self._handlers.items():
            self.page.on(event, handler)
        self.url = path.as_uri()
        self.page.goto(self.url)
        self.page.wait_for_selector("body[data-ready='1']")

    def close(self) -> None:
        """Stop listening and hand the tab to the next ``Page`` (a fresh navigation: no state carries over)."""
        for event, handler in self._handlers.items():
            self.page.remove_listener(event, handler)
        self._free.append(self.page)

    def rows(self) -> list[dict[str, str]]:
        return self.page.eval_on_selector_all(
            "#items-table tbody tr.row",
            "rows => rows.map(r => ({id: r.dataset.id, kind: r.dataset.kind, outcome: r.dataset.outcome}))",
        )


MAX_HTML_BYTES = 3_000_000
"""The page of datasets/v1 must stay within 3 MB (docs/ci.md)."""


@pytest.fixture(scope="module")
def plugin_v1_html(main_job) -> Path:
    """The HTML page the plugin writes for a real run of datasets/v1 (``--eval-html``), as the main job does.

    The session's main job (tests/conftest.py): the real path from the items' outcomes to the page.
    """
    result, html = main_job["result"], main_job["html"]
    assert result.returncode == 0 and html.is_file(), result.stdout[-3000:] + result.stderr[-3000:]
    return html


def test_the_plugins_v1_page_is_small_loads_fast_and_shows_an_items_answer(browser, plugin_v1_html, record_property):
    size = plugin_v1_html.stat().st_size
    record_property("html_bytes", size)
    assert size <= MAX_HTML_BYTES
    page = Page(browser, plugin_v1_html)
    try:
        assert page.console == [] and page.requests == [page.url]
        assert page.page.inner_text("#verdict") == "gate PASS"
        timing = page.page.evaluate(
            "() => { const n = performance.getEntriesByType('navigation')[0];"
            " return {load: n.loadEventEnd, rendered: performance.getEntriesByName('groundeval-rendered')[0].startTime}; }"
        )
        record_property("html_load_ms", timing["load"])
        print(f"plugin's v1 page: {size / 1e6:.2f} MB, load event {timing['load']:.0f} ms")
        page.page.select_option("#f-outcome", "fail")
        failed = page.rows()
        assert failed and {r["outcome"] for r in failed} == {"fail"} and {r["kind"] for r in failed} == {"qa"}
        page.page.click("#items-table tbody tr.row[data-id=qa-halueval-0082]")  # a retrieval miss
        panel = page.page.locator(".panel")
        assert panel.locator(".answer span.claim").count() >= 1  # the answer, its claims marked
        assert "retrieved evidence" in panel.inner_text().lower() and "not retrieved" in panel.inner_text()
        page.page.select_option("#f-outcome", "")
        page.page.select_option("#f-tag", "halueval")
        assert len(page.rows()) > 0 and page.console == []
    finally:
        page.close()


@pytest.fixture
def open_report(browser, tmp_path):
    pages = []

    def open_(report, history=None) -> Page:
        path = tmp_path / f"report-{len(pages)}.html"
        path.write_text(render_html(report, history), encoding="utf-8")
        pages.append(Page(browser, path))
        return pages[-1]

    yield open_
    for page in pages:
        page.close()


@pytest.fixture
def hostile_report(v1_report):
    """The v1 report with one item carrying everything a future outcome will: question, answer with
    claims, evidence, expected evidence, tags — and markup that must stay text."""
    item = v1_report["items"][0]
    encoded = HOSTILE_ANSWER.encode()
    first, second = "Kontoret öppnade 2021 [S1].", "Det har fyrtio anställda [S2]."
    start2 = encoded.index(second.encode())
    item["pass"] = False
    item["detail"] = "</script><script>window.__pwned = 3</script> evidence missing"
    item["extra"] = {
        "tags": ["smoke", "hostile"],
        "question": "<b>När</b> öppnade kontoret?",
        "answer": HOSTILE_ANSWER,
        "claims": [
            {
                "text": first,
                "start": 0,
                "end": len(first.encode()),
                "markers": ["S1"],
                "verdict": "supported",
                "true": True,
            },
            {
                "text": second,
                "start": start2,
                "end": start2 + len(second.encode()),
                "markers": ["S2"],
                "verdict": 'unsupported" onmouseover="window.__pwned=4',
                "true": False,
            },
        ],
        "evidence": [
            {
                "marker": "S1",
                "document": "smoke/notes.txt",
                "start": 0,
                "end": 40,
                "text": "Kontoret i Göteborg öppnade i mars 2021.<svg onload=window.__pwned=5>",
            }
        ],
        "expectedEvidence": ["öppnade i mars 2021", "fyrtio anställda"],
    }
    v1_report["gate"]["checks"][0]["reason"] += " <img src=x onerror=window.__pwned=6>"
    return v1_report


def test_page_loads_offline_with_no_console_errors(open_report, v1_report, record_property):
    page = open_report(v1_report)
    assert page.console == []
    assert page.requests == [page.url]  # nothing but the file itself: no CDN, no fetch
    assert page.page.inner_text("#verdict") == "gate PASS"
    timing = page.page.evaluate(
        "() => { const n = performance.getEntriesByType('navigation')[0];"
        " return {load: n.loadEventEnd, rendered: performance.getEntriesByName('groundeval-rendered')[0].startTime}; }"
    )
    record_property("html_load_ms", timing["load"])
    record_property("html_rendered_ms", timing["rendered"])
    print(f"v1 report: load event {timing['load']:.0f} ms, table rendered at {timing['rendered']:.0f} ms")
    assert 0 < timing["rendered"] <= timing["load"]


def test_charts_render_with_a_size(open_report, v1_report):
    page = open_report(v1_report)
    boxes = page.page.eval_on_selector_all(
        "svg.chart", "els => els.map(e => { const r = e.getBoundingClientRect(); return [r.width, r.height]; })"
    )
    assert len(boxes) == 3  # metrics, outcomes by kind, latency; no citation items, so a note instead
    assert page.page.inner_text("#charts p.note") == "No citation items in this run."
    assert all(w > 100 and h > 20 for w, h in boxes), boxes
    bars = page.page.eval_on_selector_all(
        "#charts rect.bar-hist", "els => els.map(e => e.getBoundingClientRect().height)"
    )
    assert len(bars) == 30 and sum(h > 0 for h in bars) >= 10
    assert page.page.locator("#charts rect.bar-pass").count() >= 6


def test_gate_table_shows_every_check(open_report, v1_report):
    page = open_report(v1_report)
    metrics = page.page.eval_on_selector_all("#gate tbody tr td:first-child", "els => els.map(e => e.textContent)")
    assert metrics == [c["metric"] for c in v1_report["gate"]["checks"]]


def test_filtering_by_kind_and_outcome_changes_the_rows(open_report, v1_report):
    page = open_report(v1_report)
    assert len(page.rows()) == 500  # the first page of 621
    page.page.select_option("#f-kind", "adversarial")
    rows = page.rows()
    assert len(rows) == 180 and {r["kind"] for r in rows} == {"adversarial"}
    page.page.select_option("#f-kind", "")
    page.page.select_option("#f-outcome", "fail")
    assert [r["id"] for r in page.rows()] == ["qa-halueval-0082", "qa-tqa-en-0045-paraphrase"]
    page.page.click("#more", force=True) if page.page.is_visible("#more") else None
    assert "showing 2 of 2 matching" in page.page.inner_text("#f-count")


def test_search_and_sort(open_report, v1_report):
    page = open_report(v1_report)
    page.page.fill("#f-search", "paraphrase")
    expected = sorted(i["id"] for i in v1_report["items"] if "paraphrase" in (i["id"] + i["detail"]).lower())
    assert sorted(r["id"] for r in page.rows()) == expected and expected
    page.page.fill("#f-search", "")
    page.page.select_option("#f-kind", "qa")
    page.page.click("th[data-sort=latencyMs]")
    shown = page.page.eval_on_selector_all(
        "#items-table tbody tr.row td:nth-child(4)", "els => els.map(e => parseFloat(e.textContent))"
    )
    assert shown == sorted(shown) and len(shown) == 369
    page.page.click("th[data-sort=latencyMs]")
    shown = page.page.eval_on_selector_all(
        "#items-table tbody tr.row td:nth-child(4)", "els => els.map(e => parseFloat(e.textContent))"
    )
    assert shown == sorted(shown, reverse=True)


def test_untrusted_markup_stays_inert_and_visible_as_text(open_report, hostile_report):
    page = open_report(hostile_report)
    page.page.select_option("#f-tag", "hostile")
    assert [r["id"] for r in page.rows()] == [hostile_report["items"][0]["id"]]
    page.page.click("#items-table tbody tr.row")
    panel = page.page.locator(".panel")
    answer = panel.locator(".answer")
    assert "<script>window.__pwned = 1</script>" in answer.inner_text()
    assert "<b>När</b> öppnade kontoret?" in panel.inner_text()
    claims = answer.locator("span.claim")
    assert claims.all_inner_texts() == ["Kontoret öppnade 2021 [S1].", "Det har fyrtio anställda [S2]."]
    assert "v-supported" in claims.first.get_attribute("class")
    page.page.hover(".answer span.claim >> nth=1")
    assert panel.locator("script, img, svg").count() == 0  # no element made from the item's text
    assert panel.locator("b").all_inner_texts() == ["[S1] "]  # the page's own marker label only
    assert "found öppnade i mars 2021" in panel.inner_text() and "not retrieved fyrtio anställda" in panel.inner_text()
    assert page.page.locator("#gate img, body > script").count() == 2  # only the page's own two scripts
    assert page.page.evaluate("window.__pwned") is None
    assert page.dialogs == [] and page.console == []
    assert page.requests == [page.url]  # the img src=x was never fetched


def test_citation_items_and_history(open_report, citation_report):
    history = [
        {
            "id": "run-1",
            "startedAt": 1796000000000,
            "metrics": {**citation_report["metrics"], "citationMetadataAccuracy": 0.5},
        },
        {"id": "run-2", "startedAt": "2026-11-30T10:00:00Z", "metrics": citation_report["metrics"]},
    ]
    page = open_report(citation_report, history)
    assert page.console == []
    verdicts = page.page.eval_on_selector_all(
        "#charts svg rect.bar-pass, #charts svg rect.bar-fail", "els => els.length"
    )
    assert verdicts >= 3
    assert page.page.locator("#history figure.trend svg").count() >= 2
    rows = page.page.eval_on_selector_all("#cmp tbody tr", "rows => rows.map(r => r.textContent)")
    assert any(r.startswith("citationMetadataAccuracy") for r in rows)
    page.page.select_option("#cmp-a", "0")
    delta = page.page.locator("#cmp tbody tr", has_text="citationMetadataAccuracy").locator("td").nth(3)
    assert delta.inner_text() == "+0.2143" and "delta-better" in delta.get_attribute("class")
    page.page.click("#items-table tbody tr.row[data-id=cit-smoke-wrong-speaker]")
    assert "metadataMismatch: speaker 'Anna Berg'" in page.page.inner_text(".panel")


def test_failures_and_errors_come_first_and_sorting_still_works(open_report, v1_report):
    items = v1_report["items"]
    failed = [i["id"] for i in items if not i["pass"]]
    items[-1]["error"] = "the target answered HTTP 500"  # the last item in the report errors
    errored = items[-1]["id"]
    page = open_report(v1_report)
    rows = page.rows()
    assert [r["id"] for r in rows[: len(failed) + 1]] == [*failed, errored]  # report order within each outcome
    assert {r["outcome"] for r in rows[len(failed) + 1 :]} == {"pass"}
    # The section under the gate lists the same items, and a click opens the item in the table.
    listed = page.page.eval_on_selector_all("#failures tbody tr", "rows => rows.map(r => r.dataset.id)")
    assert listed == [*failed, errored]
    page.page.select_option("#f-kind", "adversarial")  # a filter that hides the item
    page.page.click(f"#failures a[data-open='{failed[1]}']")
    opened = page.page.locator("#items-table tbody tr.open")
    assert opened.get_attribute("data-id") == failed[1] and page.page.is_visible(".panel")
    assert page.page.input_value("#f-kind") == ""  # the filters were cleared to show it
    # Sorting by a column still sorts every row; by outcome, failures first again.
    page.page.click("th[data-sort=id]")
    ids = [r["id"] for r in page.rows()]
    assert ids == sorted(ids)
    page.page.click("th[data-sort=outcome]")
    outcomes = [r["outcome"] for r in page.rows()]
    assert outcomes[: len(failed) + 1] == ["fail"] * len(failed) + ["error"] and page.console == []


def _rgb(css: str) -> tuple[int, int, int]:
    r, g, b = (int(x) for x in re.findall(r"\d+", css)[:3])
    return r, g, b


def _contrast(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    """WCAG 2.1 contrast ratio of two sRGB colours (relative luminance, success criterion 1.4.3)."""

    def luminance(rgb):
        lin = [c / 255 / 12.92 if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


CLAIM_VERDICTS = ("supported", "unsupported", "contradicted", "unverifiable")


@pytest.fixture
def claims_report(v1_report):
    """The v1 report whose first item failed with one claim of each verdict; markers in the claims' text."""
    item = next(i for i in v1_report["items"] if not i["pass"])
    texts = ["Oslo is in Norway [S1].", "It has 700,000 people [S1].", "It is the oldest city [S2].", "It rains."]
    item["extra"] = {
        "answer": " ".join(texts),
        "claims": [
            {"text": text, "markers": ["S1"] if n < 2 else ["S2"] if n == 2 else ["S3"], "verdict": verdict}
            for n, (text, verdict) in enumerate(zip(texts, CLAIM_VERDICTS, strict=True))
        ],
    }
    return v1_report


def test_claim_verdicts_are_coloured_by_meaning_with_a_legend_and_readable_chips(open_report, claims_report):
    page = open_report(claims_report)
    item = next(i for i in claims_report["items"] if i.get("extra", {}).get("claims"))
    page.page.click(f"#items-table tbody tr.row[data-id='{item['id']}']")
    chips = page.page.eval_on_selector_all(
        ".panel li .chip",
        "els => els.map(e => [e.textContent, getComputedStyle(e).backgroundColor, getComputedStyle(e).color])",
    )
    assert [c[0] for c in chips] == list(CLAIM_VERDICTS)
    colour = {verdict: _rgb(bg) for verdict, bg, _ in chips}
    green, amber, red, grey = (colour[v] for v in CLAIM_VERDICTS)
    assert green[1] > green[0] and green[1] > green[2]  # supported: green
    assert amber[0] > amber[1] > amber[2] and amber[2] < 60  # unsupported: amber, not blue
    assert red[0] > 150 and red[1] < 80 and red[2] < 80  # contradicted: red, not blue
    assert max(grey) - min(grey) < 40  # unverifiable: grey
    assert all(_contrast(_rgb(fg), _rgb(bg)) >= 4.5 for _, bg, fg in chips), chips
    marked = page.page.eval_on_selector_all(
        ".panel .answer span.claim", "els => els.map(e => getComputedStyle(e).borderBottomColor)"
    )
    assert [_rgb(c) for c in marked] == [green, amber, red, grey]  # the answer's claims, the same tones
    legend = page.page.locator(".panel ul.legend li").all_inner_texts()
    assert [line.split()[0] for line in legend] == list(CLAIM_VERDICTS)
    assert "the evidence says otherwise" in legend[2]
    # The chart of claim verdicts over the run: the same colours, and a legend.
    bars = page.page.eval_on_selector_all(
        "#charts rect.bar-good, #charts rect.bar-warn, #charts rect.bar-bad, #charts rect.bar-neutral",
        "els => els.map(e => [e.querySelector('title').textContent.split(':')[0], getComputedStyle(e).fill])",
    )
    assert {verdict: _rgb(fill) for verdict, fill in bars} == colour
    assert page.page.locator("#claim-legend li").count() == 4 and page.console == []


def test_a_claims_markers_show_once(open_report, claims_report):
    page = open_report(claims_report)
    item = next(i for i in claims_report["items"] if i.get("extra", {}).get("claims"))
    page.page.click(f"#items-table tbody tr.row[data-id='{item['id']}']")
    lines = page.page.locator(".panel h3:text('claims') + ul > li").all_inner_texts()
    assert len(lines) == 4
    assert [line.count("[S1]") for line in lines[:2]] == [1, 1] and lines[2].count("[S2]") == 1
    assert lines[3].endswith("It rains. [S3]")  # a marker its text does not show is still listed


def _hand_confusion(report) -> dict[tuple[str, str], int]:
    counts: dict[tuple[str, str], int] = {}
    for item in report["items"]:
        for p in item["extra"].get("citationParagraphs", []):
            if p.get("judgeModel") and p.get("expectedVerdict"):
                key = (p["expectedVerdict"], p["verdict"] or "unjudged")
                counts[key] = counts.get(key, 0) + 1
    return counts


def _confusion_cells(page) -> dict[tuple[str, str], int]:
    cells = page.page.eval_on_selector_all(
        "#confusion tbody td[data-pair]", "els => els.map(e => [e.dataset.pair, e.textContent])"
    )
    return {tuple(pair.split("|")): int(n) for pair, n in cells if int(n)}


@pytest.mark.parametrize("source", ["metric", "items"])
def test_the_judge_vs_human_table_holds_the_hand_counts_and_lists_their_items(open_report, attribution_report, source):
    hand = _hand_confusion(attribution_report)
    if source == "items":
        attribution_report["metrics"]["judgeConfusion"] = None  # counted from the paragraph records instead
    page = open_report(attribution_report)
    assert _confusion_cells(page) == hand and hand[("wrong_speaker", "supported")] == 12
    rows = page.page.eval_on_selector_all("#confusion tbody tr", "rows => rows.map(r => r.lastChild.textContent)")
    totals = {e: sum(n for (x, _), n in hand.items() if x == e) for e, _ in hand}
    assert sorted(int(n) for n in rows) == sorted(totals.values())
    assert page.page.inner_text("#confusion tfoot td:last-child") == str(sum(hand.values()))
    assert "gave the human label to 108" in page.page.inner_text("#confusion-note")
    page.page.click("#confusion a[data-pair='wrong_speaker|supported']")
    expected = [
        i["id"]
        for i in attribution_report["items"]
        if any(
            p.get("expectedVerdict") == "wrong_speaker" and p.get("verdict") == "supported"
            for p in i["extra"]["citationParagraphs"]
        )
    ]
    assert sorted(r["id"] for r in page.rows()) == sorted(expected) and len(expected) == 12
    page.page.click("#f-pair-clear")
    assert len(page.rows()) == len(attribution_report["items"]) and page.console == []


def test_no_judge_vs_human_table_without_labelled_judged_paragraphs(open_report, citation_report):
    page = open_report(citation_report)  # citation-smoke: no judge ran
    assert page.page.locator("#judge, #confusion").count() == 0 and page.console == []


def _paragraph_rows(page) -> list[list[str]]:
    return page.page.eval_on_selector_all(
        ".panel table.paras tbody tr", "rows => rows.map(r => Array.from(r.cells, c => c.innerText.trim()))"
    )


def test_a_paragraphs_human_label_sits_beside_the_judges_verdict_and_rationale(open_report, attribution_report):
    page = open_report(attribution_report)
    page.page.click("#items-table tbody tr.row[data-id='attr-004-surname']")
    heads = page.page.locator(".panel table.paras thead th").all_inner_texts()
    assert heads == ["¶", "paragraph", "human label", "judge", "rationale"]  # one judge: no per-judge columns
    item = next(i for i in attribution_report["items"] if i["id"] == "attr-004-surname")
    rows = _paragraph_rows(page)
    assert len(rows) == len(item["extra"]["citationParagraphs"]) == 2
    for row, record in zip(rows, item["extra"]["citationParagraphs"], strict=True):
        assert row[2].split()[0] == record["expectedVerdict"] and row[3] == record["verdict"]
        assert row[4] == record["rationale"]
        assert row[1].count("[2]" if record["index"] else "[1]") == 1  # the marker once, as the text has it
    assert "differs" in rows[1][2] and "agrees" in rows[0][2]  # wrong_speaker by the human, supported by the judge


def test_a_jurys_paragraph_gets_one_column_per_judge(open_report, attribution_report):
    item = next(i for i in attribution_report["items"] if i["id"] == "attr-001-swap")
    first, second = item["extra"]["citationParagraphs"]
    for record in (first, second):
        record["judgeModel"] = "jury(majority: judge-a, judge-b)"
    first["judges"] = [
        {"judgeModel": "judge-a", "verdict": "supported", "rationale": "all in [1]", "judgeError": None},
        {"judgeModel": "judge-b", "verdict": "partial", "rationale": "the dates are not in [1]", "judgeError": None},
    ]
    second["judges"] = {"judge-a": "wrong_speaker", "judge-b": {"verdict": None, "judgeError": "HTTP 503"}}
    page = open_report(attribution_report)
    page.page.click("#items-table tbody tr.row[data-id='attr-001-swap']")
    assert page.page.locator(".panel table.paras th.juror").all_inner_texts() == ["judge-a", "judge-b"]
    rows = _paragraph_rows(page)
    assert rows[0][5:] == ["supported\nall in [1]", "partial\nthe dates are not in [1]"]
    assert rows[1][5:] == ["wrong_speaker", "unjudged\nHTTP 503"]
    assert "judge: jury(majority: judge-a, judge-b)" in page.page.inner_text(".panel").lower()
    # The section under the gate sets each judge against the human labels (both paragraphs are labelled).
    jury = page.page.eval_on_selector_all(
        "#jury-agreement tbody tr", "rows => rows.map(r => Array.from(r.cells, c => c.textContent))"
    )
    labels = [first["expectedVerdict"], second["expectedVerdict"]]
    assert labels == ["supported", "wrong_speaker"]
    assert jury == [["judge-a", "2", "2", "1.0000"], ["judge-b", "2", "0", "0.0000"]]
    # An item with one judge shows no per-judge columns.
    page.page.click("#items-table tbody tr.row[data-id='attr-006-swap']")
    assert page.page.locator(".panel").count() == 2
    assert page.page.locator(".panel table.paras th.juror").count() == 2 and page.console == []


def test_a_real_jury_runs_page_shows_each_judges_verdict_in_its_own_column(open_report, pytester):
    # The records as the plugin writes them: datasets/attribution judged by a jury of the mock's two judges
    # (a process of its own: this module's browser runs an event loop in this one).
    path = pytester.path / "jury.json"
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", f"--eval-dataset={REPO / 'datasets' / 'attribution'}", "--eval-judge=mock",
        "--eval-judge-model=mock-judge", "--eval-judge-model=mock-judge-strict", f"--eval-report={path}",
        timeout=300,
    )  # fmt: skip
    assert path.is_file(), result.stdout.str()[-2000:]
    report = json.loads(path.read_text(encoding="utf-8"))
    item = next(i for i in report["items"] if i["id"] == "attr-004-surname")
    records = item["extra"]["citationParagraphs"]
    # The shape the page reads (docs/judges.md, "Juries"): each judge's model, verdict, rationale and error.
    assert all({"judgeModel", "verdict", "rationale", "judgeError"} <= set(j) for r in records for j in r["judges"])
    page = open_report(report)
    page.page.click("#items-table tbody tr.row[data-id='attr-004-surname']")
    assert page.page.locator(".panel table.paras th.juror").all_inner_texts() == ["mock-judge", "mock-judge-strict"]
    rows = _paragraph_rows(page)
    assert len(rows) == len(records) == 2
    for row, record in zip(rows, records, strict=True):
        assert [cell.split("\n")[0] for cell in row[5:]] == [j["verdict"] for j in record["judges"]]
        assert [cell.split("\n", 1)[1] for cell in row[5:]] == [j["rationale"] for j in record["judges"]]
    assert rows[1][5].split("\n")[0] != rows[1][6].split("\n")[0]  # the two judges part on this paragraph
    # Each judge against the human labels, as the report's per-judge agreement says.
    jury = page.page.eval_on_selector_all(
        "#jury-agreement tbody tr", "rows => rows.map(r => Array.from(r.cells, c => c.textContent))"
    )
    by_model = report["metrics"]["judgeAgreementByModel"]
    assert [(row[0], float(row[3])) for row in jury] == [(model, pytest.approx(by_model[model], abs=5e-5))
                                                         for model in ("mock-judge", "mock-judge-strict")]  # fmt: skip
    assert page.console == []


_PIXELS = """async ([src, boxes]) => {
  const img = new Image(); img.src = src; await img.decode();
  const canvas = document.createElement("canvas"); canvas.width = img.width; canvas.height = img.height;
  const ctx = canvas.getContext("2d"); ctx.drawImage(img, 0, 0);
  const d = ctx.getImageData(0, 0, img.width, img.height).data;
  let inked = 0; const colours = new Set();
  for (let i = 0; i < d.length; i += 4) {
    if (d[i] < 235 || d[i + 1] < 235 || d[i + 2] < 235) inked++;
    colours.add(((d[i] >> 4) << 8) | ((d[i + 1] >> 4) << 4) | (d[i + 2] >> 4));
  }
  const mode = {};
  for (const [name, b] of Object.entries(boxes)) {
    const counts = new Map();
    for (let y = Math.ceil(b.y); y < Math.floor(b.y + b.height); y++)
      for (let x = Math.ceil(b.x); x < Math.floor(b.x + b.width); x++) {
        const i = (y * img.width + x) * 4, key = d[i] + "," + d[i + 1] + "," + d[i + 2];
        counts.set(key, (counts.get(key) || 0) + 1);
      }
    mode[name] = [...counts.entries()].sort((a, b) => b[1] - a[1])[0][0].split(",").map(Number);
  }
  return {width: img.width, height: img.height, inked: inked / (d.length / 4), colours: colours.size, mode};
}"""
"""Decodes a PNG in a blank page's canvas: its size, the share of non-white pixels, the number of
distinct colours (4 bits a channel) and the most frequent colour inside each named box."""


def _pixels(browser, png: bytes, boxes: dict[str, dict]) -> dict:
    page = browser.new_page()
    try:
        page.set_content("<!DOCTYPE html><title>pixels</title>")
        src = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
        return page.evaluate(_PIXELS, [src, boxes])
    finally:
        page.close()


SCREEN = (1280, 1024)
"""The window the screenshot is taken in: a common desktop screen."""


def test_screenshot_of_a_citation_run_shows_its_failures_and_the_judge_table_first(
    browser, tmp_path, attribution_report
):
    path = tmp_path / "citation-run.html"
    path.write_text(render_html(attribution_report), encoding="utf-8")
    page = Page(browser, path, viewport=SCREEN)
    try:
        png = page.page.screenshot()  # the window as a reader first sees it, before any scrolling
        (tmp_path / "citation-run.png").write_bytes(png)
        selectors = {
            "failures": "#failures table",
            "first failure": "#failures tbody tr:first-child .badge",
            "confusion head": "#confusion thead",
            "confusion row": "#confusion tbody tr:first-child",
            "supported": "#confusion thead .chip.v-supported",
            "wrong_speaker": "#confusion thead .chip.v-wrong_speaker",
            "unsupported": "#confusion thead .chip.v-unsupported",
        }
        boxes = {name: page.page.locator(css).first.bounding_box(timeout=2000) for name, css in selectors.items()}
        outside = [name for name, b in boxes.items() if b is None or b["y"] < 0 or b["y"] + b["height"] > SCREEN[1]]
        assert outside == [], boxes  # the failure rows and the judge table are on the first screen
        assert page.page.locator("#failures tbody tr").count() == 10
        shot = _pixels(
            browser, png, {n: boxes[n] for n in ("first failure", "supported", "wrong_speaker", "unsupported")}
        )
        assert (shot["width"], shot["height"]) == SCREEN
        assert shot["inked"] > 0.05 and shot["colours"] > 30, shot  # not a blank or single-colour page
        red, green, amber = shot["mode"]["wrong_speaker"], shot["mode"]["supported"], shot["mode"]["unsupported"]
        assert red[0] > 150 and red[1] < 90 and red[2] < 90, red  # wrong_speaker drawn red, not blue
        assert green[1] > green[0] + 40 and green[1] > green[2] + 40, green
        assert amber[0] > amber[1] > amber[2] and amber[2] < 60, amber  # unsupported amber, not blue
        assert shot["mode"]["first failure"] == red  # a fail badge and a wrong-source verdict share the red
        assert page.console == [] and page.requests == [page.url]
    finally:
        page.close()


def test_a_judges_and_a_labels_markup_stays_inert_in_the_citation_views(open_report, attribution_report):
    hostile = '<img src=x onerror="window.__pwned = 7">'
    item = next(i for i in attribution_report["items"] if i["id"] == "attr-001-swap")
    first, second = item["extra"]["citationParagraphs"]
    first["judgeModel"] = "jury" + hostile
    first["judges"] = [
        {"judgeModel": "judge-a" + hostile, "verdict": "supported", "rationale": "<script>window.__pwned = 8</script>"},
        {"judgeModel": "judge-b", "verdict": 'partial" onmouseover="window.__pwned=9', "rationale": None},
    ]
    second["rationale"] = hostile
    attribution_report["metrics"]["judgeConfusion"]["wrong_speaker" + hostile] = {"supported" + hostile: 1}
    page = open_report(attribution_report)
    assert (
        hostile in page.page.inner_text("#confusion") and "judged by" in page.page.inner_text("#confusion-note").lower()
    )
    page.page.click("#items-table tbody tr.row[data-id='attr-001-swap']")
    panel = page.page.locator(".panel")
    assert page.page.locator(".panel table.paras th.juror").all_inner_texts() == ["judge-a" + hostile, "judge-b"]
    assert "<script>window.__pwned = 8</script>" in panel.inner_text() and hostile in panel.inner_text()
    page.page.hover(".panel table.paras td.juror .chip >> nth=1")
    assert page.page.locator("#judge img, #judge script, .panel img, .panel script").count() == 0
    assert page.page.evaluate("window.__pwned") is None and page.dialogs == [] and page.console == []
    assert page.requests == [page.url]
