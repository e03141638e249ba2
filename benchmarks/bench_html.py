"""The HTML report's size and load time for datasets/v1, against a plain page of the same size.

Run: ``python benchmarks/bench_html.py REPORT.json [--rounds 5] [--chromium /usr/bin/chromium]``
(about 15 s), where REPORT is a v1 run's ``--eval-report`` (the outputs tests keep
one in ``tests/outputs/data/report-v1.json.gz``; a ``.gz`` path is read as such).

Two pages, each rendered by ``render_html`` and opened from a file:// URL in
headless chromium, ``--rounds`` times interleaved with the baseline:

1. *today*: the report as the plugin writes it now.
2. *full*: every item also carrying what the drill-down shows once outcomes
   record it (``extra.question``, ``answer``, ``claims`` with byte offsets,
   four ``evidence`` spans, ``expectedEvidence``, ``tags``), built from the v1
   manifest's own text so that the sizes are realistic.

Baseline: a page holding the same number of bytes as plain text in a
``<pre>`` — what the browser needs just to read and lay out that much. Figures:
bytes, Python render ms, and the median load-event and table-rendered times
(``performance`` marks), with the ratio to the baseline's load event. The
goals (issue 14) are <= 3 MB and under 2 s to open.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pytest_groundeval.outputs.html import render_html  # noqa: E402


def _texts(value) -> list[str]:
    return [v["text"] if isinstance(v, dict) else str(v) for v in (value or [])]


def enrich(report: dict, manifest: dict) -> dict:
    """Give every item of ``report`` the drill-down fields, from the manifest's text."""
    by_id = {item["id"]: item for item in manifest["items"]}
    for outcome in report["items"]:
        source = by_id.get(outcome["id"], {})
        truths = _texts(source.get("truths"))[:4] or [str(source.get("probe", outcome["id"]))]
        sentences = [f"{t} [S{i + 1}]" for i, t in enumerate(truths[:3])]
        answer = " ".join(sentences)
        claims, offset = [], 0
        for sentence in sentences:
            size = len(sentence.encode())
            claims.append(
                {
                    "text": sentence,
                    "start": offset,
                    "end": offset + size,
                    "markers": ["S1"],
                    "verdict": "supported",
                    "true": True,
                }
            )
            offset += size + 1
        outcome["extra"] = {
            **outcome["extra"],
            "tags": list(source.get("tags", [])),
            "question": source.get("question", ""),
            "answer": answer,
            "claims": claims,
            "evidence": [
                {"marker": f"S{i + 1}", "document": "v1/doc.txt", "start": 0, "end": len(t.encode()), "text": t}
                for i, t in enumerate(truths[:4])
            ],
            "expectedEvidence": _texts(source.get("expectedEvidence")),
        }
    return report


def measure(browser, path: Path) -> tuple[float, float | None]:
    page = browser.new_page()
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    timing = page.evaluate(
        "() => { const n = performance.getEntriesByType('navigation')[0];"
        " const m = performance.getEntriesByName('groundeval-rendered')[0];"
        " return [n.loadEventEnd, m ? m.startTime : null]; }"
    )
    page.close()
    return timing[0], timing[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    raw = Path(args.report).read_bytes()
    report = json.loads(gzip.decompress(raw) if args.report.endswith(".gz") else raw)
    manifest = json.loads((ROOT / "datasets" / "v1" / "manifest.json").read_text(encoding="utf-8"))
    pages = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in (("today", report), ("full", enrich(json.loads(json.dumps(report)), manifest))):
            start = time.perf_counter()
            html = render_html(data)
            render_ms = (time.perf_counter() - start) * 1000
            path = Path(tmp) / f"{name}.html"
            path.write_text(html, encoding="utf-8")
            size = path.stat().st_size
            plain = Path(tmp) / f"{name}-plain.html"
            plain.write_text("<!DOCTYPE html><pre>" + "x" * (size - 30) + "\n</pre>", encoding="utf-8")
            pages[name] = (path, plain, size, render_ms)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
            for path, plain, _, _ in pages.values():  # warm-up: the first page pays for the browser's start
                measure(browser, path), measure(browser, plain)
            print(
                f"{'page':<6} {'bytes':>10} {'render ms':>10} {'load ms':>8} {'table ms':>9} {'plain load ms':>14} {'ratio':>6}"
            )
            for name, (path, plain, size, render_ms) in pages.items():
                loads, tables, plains = [], [], []
                for _ in range(args.rounds):
                    load, table = measure(browser, path)
                    loads.append(load)
                    tables.append(table)
                    plains.append(measure(browser, plain)[0])
                load, table, base = statistics.median(loads), statistics.median(tables), statistics.median(plains)
                print(
                    f"{name:<6} {size:>10,} {render_ms:>10.0f} {load:>8.0f} {table:>9.0f} {base:>14.0f} {load / base:>6.2f}"
                )
            browser.close()


if __name__ == "__main__":
    main()
