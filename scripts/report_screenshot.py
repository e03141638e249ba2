"""Render a saved report as HTML and screenshot it in headless chromium (docs/img/report-v1.png).

    python scripts/report_screenshot.py REPORT.json docs/img/report-v1.png [--chromium /usr/bin/chromium]

The item table is filtered to failed items and the first one opened, so the
picture shows the gate, the charts and a drill-down. Needs playwright (the
``test`` extra) and Debian's chromium; no browser is downloaded.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from pytest_groundeval.outputs.html import render_html


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report")
    parser.add_argument("out")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--width", type=int, default=1200)
    args = parser.parse_args()
    report = json.loads(Path(args.report).read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        page_path = Path(tmp) / "report.html"
        page_path.write_text(render_html(report), encoding="utf-8")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": args.width, "height": 900})
            page.goto(page_path.as_uri())
            page.wait_for_selector("body[data-ready='1']")
            page.select_option("#f-outcome", "fail")
            page.click("#items-table tbody tr.row")
            height = page.evaluate("document.documentElement.scrollHeight")
            page.screenshot(path=args.out, full_page=True, clip={"x": 0, "y": 0, "width": args.width, "height": height})
            browser.close()
    print(f"wrote {args.out} ({Path(args.out).stat().st_size} bytes)")


if __name__ == "__main__":
    main()
