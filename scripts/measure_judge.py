"""Measure a citation judge against a dataset's paragraph labels (docs/citation.md).

Runs the deterministic citation checks on every recorded citation item of a dataset,
asks the judge (and optionally a coverage scorer) about every cited paragraph, and
prints the citation metrics: judge agreement and Cohen's κ against ``expectedVerdict``,
the confusion matrix, the verdict distribution and the deterministic vs judge-only split.

Usage::

    # the mock provider's deterministic judge (started here, on loopback)
    python scripts/measure_judge.py --dataset datasets/attribution --mock
    # any OpenAI-compatible endpoint; the key is read from GROUNDEVAL_JUDGE_API_KEY
    GROUNDEVAL_JUDGE_API_KEY=... python scripts/measure_judge.py --dataset datasets/expertqa-citations \\
        --judge-url https://api.example.com/v1 --judge-model some-model [--scorer-url http://127.0.0.1:8000]

``--json`` prints the metrics as JSON instead of the table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pytest_groundeval.core.dataset import load_dataset  # noqa: E402
from pytest_groundeval.core.kinds.citation import (  # noqa: E402
    METRICS,
    CitationItem,
    assess_paragraphs,
    judge_citation,
    paragraph_labels,
    paragraph_metrics,
    source_details,
    source_map,
)
from pytest_groundeval.judge.cache import JudgeCache  # noqa: E402
from pytest_groundeval.judge.client import JudgeClient  # noqa: E402
from pytest_groundeval.judge.scorer import CoverageScorer  # noqa: E402


async def measure(
    dataset_dir: str,
    judge_url: str,
    judge_model: str,
    api_key: str | None,
    scorer_url: str | None,
    concurrency: int,
    cache_dir: str | None,
) -> tuple[list[dict], int]:
    """Paragraph records of every recorded citation item, and the number of items."""
    dataset = load_dataset(dataset_dir)
    regex = dataset.manifest.mention_regex
    items = [i for i in dataset.items if isinstance(i, CitationItem) and i.response is not None]
    cache = JudgeCache(cache_dir) if cache_dir else None
    scorer = CoverageScorer(scorer_url, concurrency=concurrency) if scorer_url else None
    records: list[dict] = []
    async with JudgeClient(judge_url, judge_model, api_key, concurrency=concurrency, cache=cache) as judge:
        jobs = []
        for item in items:
            outcome = judge_citation(item, answer=item.response.answer, sources=source_map(item), mention_regex=regex)
            jobs.append(
                assess_paragraphs(
                    outcome.extra["citationParagraphs"],
                    answer=item.response.answer,
                    sources=source_details(item),
                    judge=judge,
                    scorer=scorer,
                    labels=paragraph_labels(item),
                )
            )
        for result in await asyncio.gather(*jobs):
            records.extend(result)
    if scorer is not None:
        await scorer.close()
    return records, len(items)


def figures_of(records: list[dict], scored: bool) -> dict:
    """The citation metrics of the records as a run's report names them (camelCase), computed by the citation
    kind itself (``core.kinds.citation.paragraph_metrics``), plus the paragraphs asked and labelled."""
    values = paragraph_metrics(records, judged=True, scored=scored)
    figures = {spec.wire: values[spec.field] for spec in METRICS}
    figures["citationParagraphsAsked"] = sum((figures["verdictDistribution"] or {}).values())
    figures["judgeLabelled"] = sum(sum(row.values()) for row in (figures["judgeConfusion"] or {}).values())
    return figures


def table(figures: dict, items: int, seconds: float) -> str:
    """The figures as Markdown."""

    def pct(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.3f}"

    lines = [
        f"items {items}, paragraphs {figures['citationParagraphsAsked']}, labelled {figures['judgeLabelled']}, "
        f"{seconds:.2f} s",
        "",
        "| metric | value |",
        "|---|---|",
    ]
    for key in (
        "judgeAgreement",
        "judgeKappa",
        "citationMetadataAccuracy",
        "citationSupportedRate",
        "wrongSpeakerRate",
        "unparseableRate",
        "coverageScoreMean",
    ):
        lines.append(f"| {key} | {pct(figures[key])} |")
    lines += [f"| judgeErrors | {figures['judgeErrors']} |", f"| scorerErrors | {figures['scorerErrors']} |", ""]
    lines += ["| verdict | paragraphs |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in (figures["verdictDistribution"] or {}).items()]
    lines += ["", "| catches | paragraphs |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in (figures["citationCatches"] or {}).items()]
    confusion = figures["judgeConfusion"] or {}
    columns = sorted({c for row in confusion.values() for c in row})
    lines += ["", "| expected \\ judge | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    for expected in sorted(confusion):
        row = confusion[expected]
        lines.append(f"| {expected} | " + " | ".join(str(row.get(c, 0)) for c in columns) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Command line (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--mock", action="store_true", help="Judge with the mock provider's deterministic judge")
    parser.add_argument("--judge-url")
    parser.add_argument("--judge-model", default="mock-judge")
    parser.add_argument("--scorer-url")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--cache-dir", help="Judge cache directory (off by default)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    api_key = os.environ.get("GROUNDEVAL_JUDGE_API_KEY")
    started = time.perf_counter()
    if args.mock:
        from pytest_groundeval.mock import ThreadedMockProvider

        with ThreadedMockProvider() as mock:
            scorer = args.scorer_url or mock.root_url
            scored = True
            records, items = asyncio.run(
                measure(args.dataset, mock.base_url, "mock-judge", None, scorer, args.concurrency, args.cache_dir)
            )
    elif args.judge_url:
        scored = args.scorer_url is not None
        records, items = asyncio.run(
            measure(
                args.dataset,
                args.judge_url,
                args.judge_model,
                api_key,
                args.scorer_url,
                args.concurrency,
                args.cache_dir,
            )
        )
    else:
        parser.error("give --mock or --judge-url")
    figures = figures_of(records, scored)
    seconds = time.perf_counter() - started
    print(json.dumps(figures, indent=1) if args.json else table(figures, items, seconds), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
