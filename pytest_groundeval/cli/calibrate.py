"""``groundeval calibrate``: a citation judge measured against a dataset's human labels (docs/citation.md, "Calibration").

Judges only the cited paragraphs that carry a human ``expectedVerdict`` (the items'
``paragraphLabels``), through the plugin's own judge client (``judge.client.JudgeClient``)
and, when given, its cache; prints agreement and Cohen's κ with the intervals a run of
the same paragraphs reports (Wilson's, and a seeded bootstrap), the confusion matrix, per-verdict precision and recall, and the judge's
token usage (``core.calibration``).

Exit codes: 0 every check passed; 1 a check failed (an interval's lower bound under its
minimum, paragraphs left unjudged or unparseable beyond what a minimum allows, or a
judge that answered nothing); 2 a usage error or an unusable dataset. The judge's key
is read from ``GROUNDEVAL_JUDGE_API_KEY`` only, as the plugin reads it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..core.calibration import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    Calibration,
    CalibrationCheck,
    calibrate,
    pairs_of,
)
from ..core.dataset import Dataset, DatasetError, load_dataset
from ..core.jury import mock_judge_model_problem
from ..core.kinds.citation import (
    CitationItem,
    MentionTimeout,
    assess_paragraphs,
    judge_citation,
    paragraph_labels,
    source_details,
    source_map,
)
from ..judge.cache import JudgeCache
from ..judge.client import JudgeClient, JudgeUsage
from ..mock import ThreadedMockProvider
from ._args import Parser

__all__ = ["API_KEY_ENV", "calibrate_main"]

API_KEY_ENV = "GROUNDEVAL_JUDGE_API_KEY"
"""The environment variable the judge's key is read from (the plugin's, docs/options.md "Keys")."""

MOCK = "mock"
MOCK_JUDGE_MODEL = "mock-judge"
PROG = "groundeval calibrate"


class _Usage(Exception):
    """A command line or dataset calibrate cannot use (exit 2)."""


def _parser() -> Parser:
    parser = Parser(prog=PROG, description="Measure a citation judge against a dataset's human labels")
    parser.add_argument(
        "--dataset", required=True, metavar="DIR", help="Dataset whose citation items carry paragraphLabels"
    )
    parser.add_argument("--judge", metavar="mock", help="mock: the mock provider's heuristic judge, started here")
    parser.add_argument(
        "--judge-url", metavar="URL", help="OpenAI-compatible base URL of the judge, e.g. https://host/v1"
    )
    parser.add_argument("--judge-model", metavar="M", help="Judge model (with --judge mock: mock-judge)")
    parser.add_argument("--judge-cache", metavar="DIR", help="Directory of the judge cache (default: no cache)")
    parser.add_argument("--judge-concurrency", metavar="N", type=int, default=4, help="Requests in flight (default 4)")
    parser.add_argument("--judge-max-tokens", metavar="N", type=int, help="Completion-token cap of each request")
    parser.add_argument(
        "--min-kappa", metavar="K", type=float, help="Fail when kappa's interval lower bound is under K"
    )
    parser.add_argument("--min-agreement", metavar="A", type=float, help="Fail when agreement's lower bound is under A")
    parser.add_argument("--confidence", metavar="C", type=float, default=DEFAULT_CONFIDENCE,
                        help=f"Confidence level of the intervals (default {DEFAULT_CONFIDENCE})")  # fmt: skip
    parser.add_argument("--resamples", metavar="N", type=int, default=DEFAULT_RESAMPLES,
                        help=f"Bootstrap resamples of kappa's interval (default {DEFAULT_RESAMPLES}, a run's)")  # fmt: skip
    parser.add_argument("--seed", metavar="S", type=int,
                        help="Seed of kappa's bootstrap draws (default: a run's, so the interval is the one a run gates on)")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="Print the figures as JSON")
    return parser


def _checked(args: argparse.Namespace) -> None:
    """Refuse option values calibrate cannot use.

    Raises:
        _Usage: naming the option and what is valid.
    """
    if args.judge is not None and args.judge.strip().lower() != MOCK:
        raise _Usage(
            f"--judge {args.judge!r}: the only value is mock; for a real judge give --judge-url and --judge-model"
        )
    if args.judge is not None and args.judge_url:
        raise _Usage("--judge and --judge-url both given: calibrate measures one judge; drop one of them")
    if args.judge is not None and args.judge_model:
        problem = mock_judge_model_problem(args.judge_model)
        if problem is not None:
            raise _Usage(f"--judge-model: {problem}")
    if args.judge is None and not args.judge_url:
        raise _Usage(
            "no judge: give --judge-url URL --judge-model M (key in GROUNDEVAL_JUDGE_API_KEY), or --judge mock"
        )
    if args.judge_url:
        if not args.judge_model:
            raise _Usage("--judge-url needs --judge-model")
        parts = urlsplit(args.judge_url)
        if parts.username is not None or parts.password is not None:
            raise _Usage("the --judge-url carries credentials: drop them and put the key in GROUNDEVAL_JUDGE_API_KEY")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise _Usage(f"--judge-url {args.judge_url!r} is not an http(s) URL with a host")
    for name, value, lowest, highest in (
        ("--min-kappa", args.min_kappa, -1.0, 1.0),
        ("--min-agreement", args.min_agreement, 0.0, 1.0),
    ):
        if value is not None and not (math.isfinite(value) and lowest <= value <= highest):
            raise _Usage(f"{name} {value!r}: expected a number in [{lowest:g}, {highest:g}]")
    if not (math.isfinite(args.confidence) and 0.0 < args.confidence < 1.0):
        raise _Usage(f"--confidence {args.confidence!r}: expected a number in (0, 1), e.g. 0.95")
    for name, count in (("--resamples", args.resamples), ("--judge-concurrency", args.judge_concurrency),
                        ("--judge-max-tokens", args.judge_max_tokens)):  # fmt: skip
        if count is not None and count < 1:
            raise _Usage(f"{name} {count!r}: expected a whole number >= 1")
    cache = Path(args.judge_cache) if args.judge_cache else None
    if cache is not None and cache.exists() and not cache.is_dir():
        raise _Usage(f"--judge-cache {args.judge_cache!r} is not a directory")


def labelled_items(dataset: Dataset) -> Iterator[CitationItem]:
    """The dataset's citation items with a recorded response and paragraph labels, in manifest order."""
    for item in dataset.items:
        if isinstance(item, CitationItem) and item.response is not None and item.paragraph_labels:
            yield item


async def judge_labelled(dataset: Dataset, judge: Any) -> tuple[list[dict[str, Any]], int]:
    """Ask ``judge`` about every labelled cited paragraph of ``dataset``, as a run does (``assess_paragraphs``).

    Returns:
        ``(records, uncited)``: the paragraph records with the judge's fields and their
        ``expectedVerdict``, in manifest order; and how many labels name a paragraph with
        no citation marker (never sent to a judge, docs/citation.md "The paragraph rule").

    Raises:
        MentionTimeout: the manifest's ``mentionPattern`` took too long on a paragraph.
    """
    regex = dataset.manifest.mention_regex
    jobs = []
    uncited = 0
    for item in labelled_items(dataset):
        assert item.response is not None  # labelled_items yields recorded answers only
        labels = paragraph_labels(item)
        outcome = judge_citation(item, answer=item.response.answer, sources=source_map(item, None), mention_regex=regex)
        records = [r for r in outcome.extra.get("citationParagraphs") or [] if r.get("index") in labels]
        uncited += len(labels) - len(records)
        jobs.append(assess_paragraphs(records, answer=item.response.answer, sources=source_details(item),
                                      judge=judge, labels=labels))  # fmt: skip
    found: list[dict[str, Any]] = []
    for records in await asyncio.gather(*jobs):
        found.extend(records)
    return found, uncited


async def _run(dataset: Dataset, url: str, model: str, key: str | None, args: argparse.Namespace) -> tuple[
    list[dict[str, Any]], int, JudgeUsage, str | None, list[str]
]:  # fmt: skip
    cache = JudgeCache(Path(args.judge_cache)) if args.judge_cache else None
    async with JudgeClient(url, model, key, concurrency=args.judge_concurrency, cache=cache,
                           max_tokens=args.judge_max_tokens) as judge:  # fmt: skip
        records, uncited = await judge_labelled(dataset, judge)
        return records, uncited, judge.usage, judge.gave_up, list(judge.notices)


def calibrate_main(argv: list[str]) -> int:
    """``groundeval calibrate --dataset D (--judge-url U --judge-model M | --judge mock) [--min-kappa K] …``.

    Returns:
        0 when every check passed, 1 when one failed, 2 for a usage error or an unusable
        dataset (module docstring).
    """
    args = _parser().parse_or_status(argv, PROG)
    if isinstance(args, int):
        return args
    try:
        _checked(args)
        try:
            dataset = load_dataset(args.dataset)
        except DatasetError as exc:
            raise _Usage(str(exc)) from None
        labelled = sum(len(item.paragraph_labels) for item in labelled_items(dataset))
        if not labelled:
            raise _Usage(f"no citation item of {args.dataset} carries paragraphLabels (a human expectedVerdict, "
                         "docs/citation.md \"Human labels\"): there is nothing to calibrate against")  # fmt: skip
    except _Usage as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    with ExitStack() as stack:
        if args.judge is not None:
            mock = stack.enter_context(ThreadedMockProvider())
            url, model, key = mock.base_url, args.judge_model or MOCK_JUDGE_MODEL, None
        else:
            url, model, key = args.judge_url.rstrip("/"), args.judge_model, os.environ.get(API_KEY_ENV) or None
        try:
            records, uncited, usage, gave_up, notices = asyncio.run(_run(dataset, url, model, key, args))
        except MentionTimeout as exc:
            print(f"{PROG}: {exc}", file=sys.stderr)
            return 2
    result = calibrate(pairs_of(records), min_agreement=args.min_agreement, min_kappa=args.min_kappa,
                       confidence=args.confidence, resamples=args.resamples, seed=args.seed)  # fmt: skip
    if gave_up:
        result.checks.append(CalibrationCheck("judge", "FAIL", gave_up))
    for notice in notices:
        print(f"warning: {notice}", file=sys.stderr)
    info = {"dataset": args.dataset, "datasetVersion": dataset.version, "judgeModel": model,
            "labels": labelled, "uncitedLabels": uncited, "usage": usage.to_wire()}  # fmt: skip
    if args.json:
        print(json.dumps({**info, **result.to_wire()}, indent=1))
    else:
        print("\n".join(text_lines(result, info)))
    return 0 if result.passed else 1


_CORNER = "human \\ judge"


def _figure(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def text_lines(result: Calibration, info: Mapping[str, Any]) -> list[str]:
    """The calibration as the terminal shows it (docs/citation.md, "Calibration")."""
    level = f"{result.confidence:.0%}"
    lines = [
        f"calibrate: judge {info['judgeModel']} on {info['dataset']} ({info['datasetVersion']}): "
        f"{result.paragraphs} labelled paragraph(s) judged"
        + (f"; {info['uncitedLabels']} label(s) on paragraphs without a citation marker, not sent" if info["uncitedLabels"] else ""),
        f"intervals: {level}, as a run's (docs/statistics.md): judgeAgreement Wilson over paragraphs, judgeKappa "
        f"percentile bootstrap over paragraphs, {result.resamples} resamples, "
        + ("a run's seed" if result.seed is None else f"seed {result.seed}"),
    ]  # fmt: skip
    for name, estimate in (("judgeAgreement", result.agreement), ("judgeKappa", result.kappa)):
        lines.append(f"{name:<16} {_figure(estimate.value):>7}  [{_figure(estimate.low)}, {_figure(estimate.high)}]")
    rows = list(result.confusion)
    columns = [label for label in dict.fromkeys(c for row in result.confusion.values() for c in row)]
    if rows:
        width = max(len(_CORNER), *(len(r) for r in rows))
        lines.append("confusion (human × judge):")
        lines.append(f"  {_CORNER:<{width}}  " + "  ".join(f"{c:>{max(len(c), 5)}}" for c in columns))
        for row in rows:
            cells = "  ".join(f"{result.confusion[row].get(c, 0):>{max(len(c), 5)}}" for c in columns)
            lines.append(f"  {row:<{width}}  {cells}")
    lines.append("per verdict (human label as truth): precision  recall  (people, judge)")
    for verdict, figures in result.per_verdict.items():
        if figures.support or figures.predicted:
            lines.append(f"  {verdict:<17} {_figure(figures.precision):>9}  {_figure(figures.recall):>6}  "
                         f"({figures.support}, {figures.predicted})")  # fmt: skip
    if result.unjudged or result.unparseable:
        lines.append(f"judge: {result.unjudged} paragraph(s) unjudged, {result.unparseable} unparseable "
                     "(counted as disagreements)")  # fmt: skip
    for model, cell in info["usage"].items():
        unknown = (
            f"; {cell['repliesWithoutUsage']} without usage: tokens unknown" if cell["repliesWithoutUsage"] else ""
        )
        lines.append(f"judge tokens {model}: prompt {cell['promptTokens']}, completion {cell['completionTokens']} "
                     f"({cell['replies']} replies{unknown})")  # fmt: skip
    for check in result.checks:
        lines.append(f"{check.metric:<16} {check.outcome:<4}  {check.reason}")
    if not result.checks:
        lines.append("no minimum given: figures measured, nothing gated (--min-kappa, --min-agreement)")
    lines.append(f"calibrate: {'PASS' if result.passed else 'FAIL'}")
    return lines
