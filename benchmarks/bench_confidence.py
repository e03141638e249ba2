"""What the confidence intervals cost at the end of a run (docs/statistics.md), against the metrics themselves.

Run: ``python benchmarks/bench_confidence.py [--items 50000] [--scored-items 5000] [--rounds 3]``
(about a minute at the defaults on a loaded 2-core machine).

In this process, over the same synthetic outcomes, interleaved round by round:

1. *metrics*: ``MetricsAccumulator.add`` of every outcome and ``result()``, what a run
   always pays at its end (the baseline);
2. *intervals*: ``IntervalAccumulator.add`` of every outcome and ``intervals()``, at the
   default 0.95 and 2,000 bootstrap replicates.

Outcomes, ``--items`` of them: qa items of 1-4 expected strings each found with
probability 0.9, 2-4 supported claims of which most are true, an evidence review on one
item in three; a tenth of the items adversarial, a tenth temporal. Their pairs take a
few dozen distinct values, so each bootstrap replicate is one multinomial draw over them.

Then ``--scored-items`` citation items with a coverage score per paragraph (continuous
scores, so nearly every item is a distinct cluster and a replicate draws one index per
item): the worst case, reported on its own.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from pytest_groundeval.core.confidence import IntervalAccumulator
from pytest_groundeval.core.evidence import EvidenceReview
from pytest_groundeval.core.metrics import MetricsAccumulator
from pytest_groundeval.core.outcome import ItemOutcome


def qa_run(items: int, seed: int = 1) -> list[ItemOutcome]:
    rng = random.Random(seed)
    outcomes = []
    for i in range(items):
        roll = rng.random()
        if roll < 0.1:
            outcomes.append(ItemOutcome(id=f"adv-{i}", kind="adversarial", passed=True,
                                        falsehood_supported=rng.random() < 0.05))  # fmt: skip
            continue
        if roll < 0.2:
            outcomes.append(ItemOutcome(id=f"tmp-{i}", kind="temporal", passed=rng.random() < 0.97))
            continue
        expected = rng.randint(1, 4)
        supported = rng.randint(2, 4)
        true = supported - (rng.random() < 0.1)
        review = None
        if i % 3 == 0:
            score = rng.choice((0.0, 1 / 3, 2 / 3, 1.0))
            review = EvidenceReview(reviewed=True, risk_score=1 - score, score=score)
        outcomes.append(
            ItemOutcome(
                id=f"qa-{i}", kind="qa", passed=True, evidence_expected=expected,
                evidence_found=sum(rng.random() < 0.9 for _ in range(expected)), claims_returned=supported,
                claims_supported=supported, claims_supported_true=true, claims_true_cited=true,
                claims_true_cited_supported=true - (rng.random() < 0.05), evidence_review=review,
            )
        )  # fmt: skip
    return outcomes


def scored_run(items: int, seed: int = 2) -> list[ItemOutcome]:
    rng = random.Random(seed)
    outcomes = []
    for i in range(items):
        paragraphs = rng.randint(1, 4)
        extra = {"citationParagraphsJudged": paragraphs, "citationScorerErrors": 0,
                 "citationCoverageScores": [rng.random() for _ in range(paragraphs)]}  # fmt: skip
        outcomes.append(ItemOutcome(id=f"cit-{i}", kind="citation", passed=True, extra=extra))
    return outcomes


def time_metrics(outcomes: list[ItemOutcome]) -> float:
    start = time.perf_counter()
    accumulator = MetricsAccumulator()
    for outcome in outcomes:
        accumulator.add(outcome)
    accumulator.result()
    return time.perf_counter() - start


def time_intervals(outcomes: list[ItemOutcome]) -> tuple[float, float]:
    """Seconds to add every outcome, and to compute every interval."""
    metrics = MetricsAccumulator()
    for outcome in outcomes:
        metrics.add(outcome)
    result = metrics.result()
    start = time.perf_counter()
    accumulator = IntervalAccumulator()
    for outcome in outcomes:
        accumulator.add(outcome)
    added = time.perf_counter()
    accumulator.intervals(result, 0.95)
    return added - start, time.perf_counter() - added


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=50_000)
    parser.add_argument("--scored-items", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    outcomes = qa_run(args.items)
    metrics_s, add_s, intervals_s = [], [], []
    for _ in range(args.rounds):
        metrics_s.append(time_metrics(outcomes))
        added, computed = time_intervals(outcomes)
        add_s.append(added)
        intervals_s.append(computed)
    base, add, compute = (statistics.median(v) for v in (metrics_s, add_s, intervals_s))
    print(f"{args.items} outcomes (qa, adversarial, temporal), medians of {args.rounds} rounds:")
    print(f"  metrics (add + result)      {base:7.2f} s  {1e6 * base / args.items:6.1f} µs/item")
    print(f"  intervals: add              {add:7.2f} s  {1e6 * add / args.items:6.1f} µs/item")
    print(f"  intervals: 2,000 replicates {compute:7.2f} s")
    print(f"  intervals / metrics         {(add + compute) / base:7.2f}x")
    scored = scored_run(args.scored_items)
    added, computed = time_intervals(scored)
    print(f"{args.scored_items} citation items with continuous coverage scores (one round):")
    print(f"  intervals: add {added:.2f} s, compute {computed:.2f} s "
          f"({1e6 * computed / args.scored_items / 2000:.3f} µs per item per replicate)")  # fmt: skip


if __name__ == "__main__":
    main()
