"""How often ``groundeval compare`` cries wolf, and how often it catches a planted regression (issue 21).

    python benchmarks/sim_compare.py [--pairs 200] [--noise 0.1] [--planted 0.1] [--calibration 12]
        [--alpha 0.05] [--replicates 500] [--cache DIR] [--dataset datasets/v1]

Not a test: a simulation over seeded pairs of runs of ``datasets/v1`` against the reference
target and the mock with seeded noise (docs/mock.md, "Noise"). It prints a Markdown table:
each decision rule's false-alarm rate (null pairs) and power (planted pairs), each with a
Wilson 95% interval.

**The runs** come from ``sim_noise.py``'s ``resample`` mode: ``K + 1`` real plugin runs
(noise off, then ``K`` runs with every generation noised, ``P = 1``, seeds 0 … K - 1) are
made once and cached in ``--cache`` (a later invocation with the same ``K`` reuses them);
every simulated run is then assembled from them (``sim_noise.assembled``): item ``i`` of
the run with seed ``s`` is noised when the mock's own draw ``noise_for(P, s, "item:" + id)``
says so, and then takes its outcome from one calibration run.

**Pair ``j``** (``j = 0 … pairs - 1``) has run A with seed ``2j`` and run B with seed ``2j + 1``,
both at noise ``P``:

- *null pair*: ``(A, B)``, two runs of the same noisy configuration; any flag is a false alarm;
- *planted pair*: ``(A, B')``, where ``B'`` is ``B`` with a planted regression that loses
  evidence on ``round(--planted × qa items)`` more qa items (10%: 37 of v1's 369). An item
  *loses evidence* in an outcome when more of its true, cited claims are not marked
  supported than without noise (``claimsTrueCited − claimsTrueCitedSupported`` above the
  noise-free run's): what the mock's ``drop`` does to an answer (its sentences now cite a
  block that does not state them). Its *drop pool* is its calibration outcomes that lose
  evidence: real outcomes of the mock's drop, scored by the plugin. Among the qa items
  with a non-empty pool that do not already lose evidence in ``B``, the first 37 by
  ``SHA-256("planted\\0<2j + 1>\\0<id>")`` each take one outcome of their pool; metrics and
  gate are recomputed. Items with an empty pool are never planted: the mock's drop cannot
  make them lose evidence (e.g. an answer without a citation), or none of the ``K``
  calibration runs happened to draw a drop for them.

**The rules**, each applied to every pair:

- ``compare``: what ``groundeval compare A.json B.json --alpha α`` decides with the floors B
  recorded (the defaults): a drop beyond the margin (``core.compare.fixed_regressions``)
  **and** significant by the paired test (``core.paired.compare_metrics``, judged by
  ``core.compare.judge``), the very functions the command calls; only the bootstrap
  replicates (``--replicates``, which also sets the Monte Carlo sign-flip draws) are
  lowered from 2000 to fit the time budget. The bootstrap intervals play no part in the
  decision; the sign-flip p-values' resolution is ``1 / (replicates + 1)``.
- ``compare, every drop a candidate``: the same with the floors file ``STRICT_FLOORS`` (every
  quality rate floored at 1, ``retrievalRecallMargin`` 0): any drop of a quality rate is a
  candidate, so the paired test alone decides (``groundeval compare --floors``).
- ``fixed margin (gate)``: the fixed rule alone, no significance (docs/gate.md): a floor B
  fails that A met, or ``retrievalRecall`` below A's minus the margin (0.02).
- ``fixed margin 0.02 on recall and claim figures``: the above, or ``claimSupportRecall`` or
  ``claimSupportPrecision`` below A's minus the same margin, no significance.

Everything is seeded: the same arguments give the same table.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
for entry in (str(REPO), str(BENCH_DIR)):
    if entry not in sys.path:
        sys.path.insert(0, entry)

import sim_noise  # noqa: E402

from pytest_groundeval.core.compare import fixed_regressions, judge  # noqa: E402
from pytest_groundeval.core.gate import check_recorded_floors, merge_floors, parse_floors, same_lineage  # noqa: E402
from pytest_groundeval.core.outcome import ItemOutcome  # noqa: E402
from pytest_groundeval.core.paired import compare_metrics, pair_runs  # noqa: E402
from pytest_groundeval.core.report import Report, read_report, write_report  # noqa: E402
from pytest_groundeval.mock import NoiseSettings  # noqa: E402
from pytest_groundeval.mock.noise import NO_NOISE  # noqa: E402

STRICT_FLOORS = {
    "retrievalRecall": 1.0,
    "claimSupportPrecision": 1.0,
    "claimSupportRecall": 1.0,
    "falsehoodRejection": 1.0,
    "temporalAccuracy": 1.0,
    "retrievalRecallMargin": 0.0,
}
"""A floors file under which every drop of a quality rate is a candidate: the paired test alone decides."""

SHOWN = ("claim_support_recall", "retrieval_recall", "claim_support_precision")
"""Metrics (attribute names) whose mean, min and max over the simulated runs are printed with the table."""

DEFAULT_CACHE = Path(tempfile.gettempdir()) / "groundeval-sim-compare"
"""Where the calibration runs are kept between invocations (outside the repository)."""

CLAIM_FIGURES = ("claimSupportRecall", "claimSupportPrecision")
"""The claim figures the widened fixed margin also holds to A's minus the margin."""


def calibrate(cache: Path, runs: int, dataset: Path) -> tuple[Report, list[Report]]:
    """The noise-free run and ``runs`` calibration runs (``P = 1``, seeds 0 … runs - 1), real, cached in ``cache``.

    A run already in ``cache`` (``base.json``, ``calibration-<k>.json``) is read, not re-run.
    """
    cache.mkdir(parents=True, exist_ok=True)
    wanted = [("base", NO_NOISE)] + [(f"calibration-{k}", NoiseSettings(1.0, k)) for k in range(runs)]
    missing = [(name, noise) for name, noise in wanted if not (cache / f"{name}.json").is_file()]
    if missing:
        with (
            tempfile.TemporaryDirectory(prefix="sim-compare-") as tmp,
            sim_noise.reference_target(Path(tmp)) as (
                mock,
                target,
            ),
        ):
            for name, noise in missing:
                t0 = time.perf_counter()
                run = sim_noise.real_run(mock, target, dataset, noise, Path(tmp) / f"{name}.json")
                write_report(cache / f"{name}.json", sim_noise.trimmed(run))
                print(f"sim_compare: real run {name} ({noise}): {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    reports = [read_report(cache / f"{name}.json") for name, _ in wanted]
    return reports[0], reports[1:]


def lost(outcome: ItemOutcome) -> int:
    """True, cited claims of ``outcome`` not marked supported (0 for an item without claim counts)."""
    return (outcome.claims_true_cited or 0) - (outcome.claims_true_cited_supported or 0)


def drop_pools(base: Report, calibration: list[Report]) -> dict[str, list[ItemOutcome]]:
    """For each qa item, its calibration outcomes that lose evidence against ``base`` (module docstring)."""
    plain = {item.id: item for item in base.items if item.kind == "qa"}
    pools: dict[str, list[ItemOutcome]] = {}
    for run in calibration:
        for item in run.items:
            if item.id in plain and lost(item) > lost(plain[item.id]):
                pools.setdefault(item.id, []).append(item)
    return pools


def planted(
    run: Report, base: Report, pools: Mapping[str, list[ItemOutcome]], share: float, seed: int
) -> tuple[Report, int]:
    """``run`` with a planted loss of evidence on ``round(share * qa items)`` more qa items; and that count.

    The candidates are the qa items with a drop pool that do not already lose evidence in
    ``run``; they are ranked by ``SHA-256("planted\\0<seed>\\0<id>")`` and the first ones take the
    outcome ``pool[pick mod len(pool)]``, ``pick`` read from the same digest (fewer when fewer
    candidates remain).
    """
    plain = {item.id: item for item in base.items}
    wanted = round(share * sum(1 for item in base.items if item.kind == "qa"))
    ranked = sorted(
        (_digest(seed, item.id), item.id)
        for item in run.items
        if pools.get(item.id) and lost(item) <= lost(plain[item.id])
    )
    chosen = {item_id: digest for digest, item_id in ranked[:wanted]}
    items = []
    for item in run.items:
        digest = chosen.get(item.id)
        if digest is None:
            items.append(item)
        else:
            pool = pools[item.id]
            items.append(pool[int.from_bytes(digest[8:12], "big") % len(pool)])
    return sim_noise.refinalized(base, items), len(chosen)


def _digest(seed: int, item_id: str) -> bytes:
    return hashlib.sha256(f"planted\0{seed}\0{item_id}".encode()).digest()


def decisions(a: Report, b: Report, alpha: float, replicates: int, margin: float | None = None) -> dict[str, bool]:
    """Each rule's flag on the pair ``(a, b)`` (module docstring, "The rules")."""
    floors = check_recorded_floors(b.floors, "recorded in B") if b.floors is not None else merge_floors()
    strict = parse_floors(STRICT_FLOORS, "STRICT_FLOORS")
    comparable = same_lineage(a.models, b.models)
    wire_a, wire_b = a.metrics.to_wire(), b.metrics.to_wire()
    candidates = fixed_regressions(wire_a, wire_b, floors, comparable)
    strict_candidates = fixed_regressions(wire_a, wire_b, strict, comparable)
    _, paired_a, paired_b = pair_runs(a.items, b.items)
    tests = compare_metrics(paired_a, paired_b, replicates=replicates)
    width = floors.get("retrievalRecallMargin") if margin is None else margin
    width = 0.02 if width is None else width
    widened = bool(candidates) or any(
        isinstance(wire_a.get(name), float)
        and isinstance(wire_b.get(name), float)
        and wire_b[name] < round(wire_a[name] - width, 12)
        for name in CLAIM_FIGURES
    )
    return {
        "compare": judge(candidates, tests, alpha=alpha).regressed,
        "compare, every drop a candidate": judge(strict_candidates, tests, alpha=alpha).regressed,
        "fixed margin (gate)": bool(candidates),
        f"fixed margin {width:g} on recall and claim figures": widened,
    }


def wilson(successes: int, trials: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (Wilson 1927), ``z`` = 1.96 for 95%.

    ``(p + z²/2n ± z·sqrt(p(1−p)/n + z²/4n²)) / (1 + z²/n)``; ``(0, 1)`` when ``trials`` is 0.
    """
    if trials == 0:
        return 0.0, 1.0
    p = successes / trials
    z2 = z * z
    centre = p + z2 / (2 * trials)
    spread = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials))
    denominator = 1 + z2 / trials
    return max(0.0, (centre - spread) / denominator), min(1.0, (centre + spread) / denominator)


def rate_cell(flags: int, pairs: int) -> str:
    """``0.0450 (9/200) [0.0239, 0.0834]``: a rate, its counts and its Wilson 95% interval."""
    low, high = wilson(flags, pairs)
    return f"{flags / pairs:.4f} ({flags}/{pairs}) [{low:.4f}, {high:.4f}]"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=200, help="Null pairs, and as many planted pairs (default 200)")
    parser.add_argument("--noise", type=float, default=0.1, help="Noise P of every run (default 0.1)")
    parser.add_argument(
        "--planted", type=float, default=0.1, help="Share of the qa items that lose evidence beyond B's (default 0.1)"
    )
    parser.add_argument("--calibration", type=int, default=12, metavar="K", help="P = 1 real runs (default 12)")
    parser.add_argument("--alpha", type=float, default=0.05, help="Significance level (default 0.05)")
    parser.add_argument("--replicates", type=int, default=500, help="Bootstrap replicates and sign-flip draws")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help=f"Calibration runs (default {DEFAULT_CACHE})")
    parser.add_argument("--dataset", type=Path, default=REPO / "datasets" / "v1", help="Dataset directory")
    args = parser.parse_args(argv)
    NoiseSettings(args.noise, 0)
    NoiseSettings(args.planted, 0)
    started = time.perf_counter()
    base, calibration = calibrate(args.cache, args.calibration, args.dataset.resolve())
    calibrated = time.perf_counter()
    pools = drop_pools(base, calibration)
    qa = sum(1 for item in base.items if item.kind == "qa")
    rules: list[str] = []
    false_alarms: dict[str, int] = {}
    caught: dict[str, int] = {}
    planted_counts: list[int] = []
    figures: dict[str, dict[str, list[float]]] = {}
    for j in range(args.pairs):
        a = sim_noise.assembled(base, calibration, args.noise, 2 * j)
        b = sim_noise.assembled(base, calibration, args.noise, 2 * j + 1)
        b_planted, count = planted(b, base, pools, args.planted, 2 * j + 1)
        planted_counts.append(count)
        for name, run in (("A", a), ("B", b), ("B'", b_planted)):
            for metric in SHOWN:
                figures.setdefault(metric, {}).setdefault(name, []).append(getattr(run.metrics, metric) or 0.0)
        for flags, (x, y) in ((false_alarms, (a, b)), (caught, (a, b_planted))):
            for rule, flagged in decisions(x, y, args.alpha, args.replicates).items():
                if rule not in rules:
                    rules.append(rule)
                flags[rule] = flags.get(rule, 0) + int(flagged)
        if (j + 1) % 20 == 0:
            print(f"sim_compare: {j + 1} pairs, {time.perf_counter() - calibrated:.0f} s", file=sys.stderr)
    mean_planted = sum(planted_counts) / len(planted_counts)
    print(
        f"{args.pairs} null pairs and {args.pairs} planted pairs of datasets/v1 runs ({len(base.items)} items, "
        f"{qa} qa); noise P = {args.noise:g}; alpha = {args.alpha:g}; resampled from {args.calibration} real P = 1 "
        f"calibration runs and a noise-free one; {args.replicates} bootstrap replicates and sign-flip draws.\n"
        f"Planted regression: {mean_planted:.1f} qa items per planted run on average (min {min(planted_counts)}, "
        f"max {max(planted_counts)}; {mean_planted / qa:.1%} of the {qa} qa items) that do not lose evidence in B "
        f"lose it in B', each taking a calibration outcome in which the mock's drop made it lose evidence "
        f"({len(pools)} qa items have such an outcome).\n"
    )
    for metric, runs in figures.items():
        shown = "; ".join(
            f"{name} mean {sum(values) / len(values):.4f} [{min(values):.4f}, {max(values):.4f}]"
            for name, values in runs.items()
        )
        print(f"{metric}: without noise {getattr(base.metrics, metric):.4f}; {shown} (min, max in brackets)")
    print()
    print("| rule | false-alarm rate (null pairs) [Wilson 95%] | power (planted pairs) [Wilson 95%] |")
    print("|---|---|---|")
    for rule in rules:
        print(f"| {rule} | {rate_cell(false_alarms[rule], args.pairs)} | {rate_cell(caught[rule], args.pairs)} |")
    print(
        f"\nsim_compare: calibration {calibrated - started:.0f} s, {2 * args.pairs} comparisons "
        f"{time.perf_counter() - calibrated:.0f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
